"""eqsearch's Elasticsearch plugin as the search sees it: the one version this engine speaks, and its requests.

The engine ships one plugin (``es-plugin/``, version `PLUGIN_VERSION`, installed by ``eqsearch es start``, the local
cluster and the Docker image) and speaks to that version only. Where every node has it, a search sends its requests;
anywhere else (a hosted cluster, another version, a node added without it) the plain requests, which rank the same
(``tests/es_plugin/`` compares them on real nodes). There is no third path: `detect_plugin` asks ``_nodes/plugins``
once, and `PluginUse.refused` turns the plugin off for good when a node refuses one of its requests.

Its requests, each giving the scores of the plain request it replaces:

- ``eqsearch_structure`` (`structure_rescore`): the structural rerank from a list of span hashes, where the plain
  request sends a ``function_score`` over one ``constant_score`` term clause per span;
- ``eqsearch_terms`` (`terms_query`) and ``eqsearch_bm25`` (`bm25_rescore`): the structural list's first stage with
  its rare terms chosen in the shard and scored term at a time, then the other terms' BM25 on the rerank window from
  the equations' forward index (`engine.index.forward_index`), where the client would first ask ``_termvectors``;
- ``eqsearch_maxsim``: the MaxSim rerank's scores from stored node vectors, brought by the ranked lists themselves
  (`maxsim_ext` with the `maxsim_window_rescore`) or, for a few candidates below their windows, by the rescorer
  (`maxsim_body`).

Why each: ``docs/decisions/structural-first-stage.md``, ``docs/decisions/forward-index.md``,
``docs/decisions/maxsim-placement.md``, ``docs/decisions/one-plugin-contract.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from eqsearch.engine.index.mappings import (
    FORWARD_INDEX_FIELD,
    NODE_VECTORS_FIELD,
    SIZE_FIELD,
    SPANS_FIELD,
    STRUCTURE_FIELD,
)

if TYPE_CHECKING:
    from eqsearch.engine.search.structure_query import RareRule

__all__ = [
    "BM25_RESCORER",
    "MAXSIM_HIT_FIELD",
    "PLUGIN_NAME",
    "PLUGIN_VERSION",
    "STRUCTURE_RESCORER",
    "TERMS_QUERY",
    "PluginSupport",
    "PluginUse",
    "bm25_rescore",
    "detect_plugin",
    "maxsim_body",
    "maxsim_ext",
    "maxsim_window_rescore",
    "plugin_support",
    "structure_rescore",
    "terms_query",
]

#: The plugin's name on the nodes (``es-plugin/plugin-descriptor.properties``).
PLUGIN_NAME = "eqsearch"
#: The plugin version this engine ships and speaks (``es-plugin/VERSION``; a test keeps them equal).
PLUGIN_VERSION = "2.1.0"
#: The rescorer's name in a search body's ``rescore``.
STRUCTURE_RESCORER = "eqsearch_structure"
#: The MaxSim rescorer over stored node vectors, and the score it gives a candidate without any.
MAXSIM_RESCORER = "eqsearch_maxsim"
MAXSIM_MISSING = -2.0
#: The field of a hit's fields where the MaxSim search extension puts its score.
MAXSIM_HIT_FIELD = "eqsearch_maxsim"
#: The rescore that limits the extension's scoring to a list's top hits.
MAXSIM_WINDOW_RESCORER = "eqsearch_maxsim_window"
#: The BM25 rescorer over the forward index.
BM25_RESCORER = "eqsearch_bm25"
#: The first-stage query whose shard chooses the rare terms.
TERMS_QUERY = "eqsearch_terms"


@dataclass(frozen=True)
class PluginSupport:
    """Whether the searches may use the plugin, and one line that says so.

    Args:
        available: every node has the plugin, in the version this engine ships (`PLUGIN_VERSION`).
        nodes: the cluster's nodes (0: unknown).
        with_plugin: how many of them have that version.
        note: one line for ``eqsearch es check`` and the admin page.
    """

    available: bool
    nodes: int
    with_plugin: int
    note: str


def plugin_support(nodes_info: dict[str, Any]) -> PluginSupport:
    """What a ``GET _nodes/plugins`` answer says about the plugin (a pure function of the answer).

    A cluster where any node lacks `PLUGIN_VERSION` (another version, or none) uses the plain requests: a search whose
    shards land on such a node would fail there, or be read in another form.
    """
    nodes = nodes_info.get("nodes") or {}
    shipped = 0
    versions: set[str] = set()
    for node in nodes.values():
        for plugin in node.get("plugins") or []:
            if plugin.get("name") == PLUGIN_NAME:
                version = str(plugin.get("version", ""))
                versions.add(version)
                shipped += version == PLUGIN_VERSION
    total = len(nodes)
    if total and shipped == total:
        return PluginSupport(True, total, shipped, f"eqsearch plugin {PLUGIN_VERSION} on every node: native rerank")
    if versions:
        return PluginSupport(
            False,
            total,
            shipped,
            f"{shipped} of {total} nodes have the eqsearch plugin {PLUGIN_VERSION} this engine speaks (versions "
            f"seen: {', '.join(sorted(versions))}); searches use the plain requests (reinstall the plugin of this "
            "release: 'eqsearch es start' does it for a managed node)",
        )
    return PluginSupport(
        False,
        total,
        0,
        "no eqsearch plugin on this cluster: searches use the plain requests "
        "(a managed node gets it when 'eqsearch es start' starts it; see es-plugin/)",
    )


def detect_plugin(client: Any) -> PluginSupport:
    """Ask the cluster (``_nodes/plugins``) whether every node has the plugin.

    A cluster that does not answer that request (a hosted cluster without the ``monitor`` privilege) counts as one
    without the plugin, and the note says so.
    """
    from elasticsearch import ApiError, TransportError

    try:
        # the node's name keeps a node without any plugin in the answer
        answer = client.nodes.info(
            metric="plugins", filter_path="nodes.*.name,nodes.*.plugins.name,nodes.*.plugins.version"
        )
    except (ApiError, TransportError) as error:
        return PluginSupport(
            False, 0, 0, f"could not list the cluster's plugins ({error}): searches use the plain requests"
        )
    body = answer.body if hasattr(answer, "body") else answer
    return plugin_support(body)


class PluginUse:
    """Whether a search service sends the plugin's requests: asked of the cluster once, at the first search, with which
    fields the index behind an alias maps (asked once per alias).

    A search that a node refuses because it does not know one of the plugin's requests (a node without the plugin
    joined since) turns the plugin off for this service (`refused`): the service then plans the search again without it.

    Args:
        client: the cluster's client.
        wanted: None: use the plugin when every node has it (`detect_plugin`); False: never; True: always (the
            caller knows every node has it).
    """

    def __init__(self, client: Any, wanted: bool | None = None) -> None:
        self.client = client
        self.wanted = wanted
        self._support: PluginSupport | None = None
        self._mapped: dict[tuple[str, str], bool] = {}

    def maps(self, alias: str, field: str) -> bool:
        """Whether every index behind ``alias`` maps ``field`` (False when the cluster cannot say; asked once per
        alias and field, `forget_indices` asks again)."""
        if (alias, field) not in self._mapped:
            from elasticsearch import ApiError, TransportError

            try:
                found = self.client.indices.get_field_mapping(index=alias, fields=field)
                body = found.body if hasattr(found, "body") else found
                self._mapped[(alias, field)] = bool(body) and all(index.get("mappings") for index in body.values())
            except (ApiError, TransportError):
                self._mapped[(alias, field)] = False
        return self._mapped[(alias, field)]

    def forget_indices(self) -> None:
        """Ask again which fields the indices map (an alias moved to another index)."""
        self._mapped.clear()

    @property
    def support(self) -> PluginSupport:
        """What the cluster said (asked now if it was not yet)."""
        if self._support is None:
            if self.wanted is None:
                self._support = detect_plugin(self.client)
            else:
                state = "on" if self.wanted else "off"
                self._support = PluginSupport(bool(self.wanted), 0, 0, f"the eqsearch plugin is turned {state}")
        return self._support

    @property
    def active(self) -> bool:
        """Whether the searches use the plugin now."""
        return self.support.available

    def refused(self, error: Exception) -> bool:
        """Whether ``error`` is a node refusing one of the plugin's requests while it was in use; if so, the plugin is
        off from now on (the caller plans and sends the search again)."""
        if not self.active or not any(
            name in str(error)
            for name in (STRUCTURE_RESCORER, MAXSIM_RESCORER, MAXSIM_WINDOW_RESCORER, BM25_RESCORER, TERMS_QUERY)
        ):
            return False
        self._support = PluginSupport(
            False, 0, 0, f"a node refused the eqsearch plugin's rescorer ({error}); searches use the plain requests"
        )
        return True


def structure_rescore(
    spans: Sequence[tuple[str, int]],
    *,
    query_size: int,
    weight: float,
    window: int,
    candidate_sizes: bool,
) -> dict[str, Any]:
    """The ``rescore`` entry of the plugin's structural rerank.

    Args:
        spans: the query's sub-expressions to match, as (hash, size in symbols), each hash led by its kind letter;
            the rescorer credits each candidate with the largest of each kind it holds (the same selection the
            plain request's ``dis_max`` clauses hold, `engine.search.query`).
        query_size: the query's size in symbols (at least 1).
        weight: the weight of the match (``FormulaRanking.rerank_weight``).
        window: candidates rescored.
        candidate_sizes: weigh a shared sub-expression by the larger of the query's and the candidate's size.
    """
    ordered = sorted(spans)
    return {
        "window_size": window,
        STRUCTURE_RESCORER: {
            "spans": [span for span, _ in ordered],
            "sizes": [size for _, size in ordered],
            "query_size": query_size,
            "weight": weight,
            "candidate_sizes": candidate_sizes,
            "spans_field": SPANS_FIELD,
            "size_field": SIZE_FIELD,
        },
    }


def bm25_rescore(
    counts: Mapping[str, int], *, window: int, replace: bool, except_rare: RareRule | None = None
) -> dict[str, Any]:
    """The ``rescore`` entry that gives the window's candidates the BM25 of the structural terms ``counts`` (term ->
    its count in the query, the boost of its ``term`` clause) inside the node, from their forward index: added to
    their scores, or with ``replace`` in their place. The same scores as a query rescore of those ``term`` clauses
    with ``score_mode: total`` and query weights 1 and 1 (0 and 1 with ``replace``). With ``except_rare``, of those
    of the terms that the rule does not find rare in the shard (those a `terms_query` with that rule matched): then
    in the query's order, as the query has them, since the rule breaks its ties by that order."""
    ordered = list(counts.items()) if except_rare is not None else sorted(counts.items())
    body: dict[str, Any] = {
        "terms": [term for term, _ in ordered],
        "boosts": [float(count) for _, count in ordered],
        "mode": "replace" if replace else "add",
        "field": STRUCTURE_FIELD,
        "forward_field": FORWARD_INDEX_FIELD,
    }
    if except_rare is not None:
        body["except_rare"] = except_rare.request()
    return {"window_size": window, BM25_RESCORER: body}


def terms_query(
    counts: Mapping[str, int],
    rare: RareRule | None = None,
    top: int = 0,
    filters: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The plugin's query of the structural terms ``counts`` (term -> its count, in the query's order): the BM25 of
    a ``bool`` of one ``term`` clause per term, its count as boost, as the same Lucene query; with ``rare``, of the
    terms the shard finds rare by that rule (`engine.search.structure_query.rarest_terms`'s, on the shard's
    frequencies). With ``top``, the shard scores it term at a time and matches its best ``top`` hits alone, with
    the same scores, of the documents ``filters`` (filter clauses) let through: valid where the search reads no
    deeper than ``top`` and filters by no more than ``filters``."""
    body: dict[str, Any] = {
        "terms": list(counts),
        "boosts": [float(count) for count in counts.values()],
        "field": STRUCTURE_FIELD,
    }
    if rare is not None:
        body["rare"] = rare.request()
    if top:  # the shard scores it term at a time and matches its best ``top`` hits alone
        body["top"] = top
        if filters:
            body["filter"] = {"bool": {"filter": list(filters)}}
    return {TERMS_QUERY: body}


def _maxsim_request(query_nodes: Any, symmetric: bool) -> dict[str, Any]:
    """The MaxSim request the rescorer and the search extension share: the query's vectors as base64 float32,
    little-endian, row by row."""
    import base64

    import numpy as np

    nodes = np.ascontiguousarray(query_nodes, dtype="<f4")
    return {
        "query_vectors": base64.b64encode(nodes.tobytes()).decode("ascii"),
        "dims": int(nodes.shape[1]),
        "symmetric": symmetric,
        "field": NODE_VECTORS_FIELD,
    }


def maxsim_body(eq_ids: Sequence[str], query_nodes: Any, *, symmetric: bool) -> dict[str, Any]:
    """The search that scores the equations ``eq_ids`` by MaxSim of the query's node vectors against their stored
    ones, inside the node (the ``eqsearch_maxsim`` rescorer); a candidate without stored vectors scores
    `MAXSIM_MISSING`.

    Shapes:
        query_nodes: ``[nodes, width]``.
    """
    return {
        "query": {"ids": {"values": list(eq_ids)}},
        "size": len(eq_ids),
        "rescore": {"window_size": len(eq_ids), MAXSIM_RESCORER: _maxsim_request(query_nodes, symmetric)},
        "stored_fields": "_none_",
        "docvalue_fields": ["eq_id"],
        "track_total_hits": False,
    }


def maxsim_ext(query_nodes: Any, *, symmetric: bool) -> dict[str, Any]:
    """A search body's ``ext`` that asks the plugin for each returned hit's MaxSim score against
    the query's node vectors, in the hit's ``fields`` under `MAXSIM_HIT_FIELD` (absent for a hit without stored
    vectors); the search's own scores and order are untouched. The same scores as `maxsim_body`'s, to the last bit
    (one code).

    Shapes:
        query_nodes: ``[nodes, width]``.
    """
    return {MAXSIM_RESCORER: _maxsim_request(query_nodes, symmetric)}


def maxsim_window_rescore(window: int) -> dict[str, Any]:
    """The rescore, last in a ranked list's rescores, that limits `maxsim_ext`'s scoring to the list's top ``window``
    hits on each shard: the hits' scores and order are untouched."""
    return {"window_size": window, MAXSIM_WINDOW_RESCORER: {}}
