"""eqsearch's Elasticsearch plugin as the search sees it: is it on every node, and the requests it is sent.

With the plugin (``es-plugin/``, installed by ``eqsearch es start``), the structural rerank is one
``eqsearch_structure`` rescorer: the query's sub-expressions as a list of span hashes and sizes, scored inside the
node against each candidate's spans and size, where without it the same scores take a ``function_score`` over a
``dis_max`` of one ``constant_score`` term clause per span (`engine.search.structure_query.structure_body`). The
plugin computes exactly those scores (``tests/es_plugin/`` compares them on a real node), so the ranking is the
same either way.

The plugin's other requests give the same scores as the plain requests they replace:

- ``eqsearch_bm25`` (`bm25_rescore`) scores the structural list's BM25 over a rescore window from the equations'
  forward index (`engine.index.forward_index`), where the plain request adds a ``bool`` of ``term`` clauses that walk
  posting lists: the shard's own term statistics, used where the index maps the field.
- ``eqsearch_terms`` (`terms_query`) matches the structural list's first stage: the query's terms once each with their
  counts, to the same Lucene query as the ``bool`` of ``term`` clauses. With a `RareRule` the shard chooses the rare
  terms itself from its own frequencies, so that the client sends no ``_termvectors`` request first; the BM25 rescorer
  with the same rule (``except_rare``) adds the other terms' BM25 to the window. With ``top``
  (`PluginUse.term_at_a_time`) the shard scores it term at a time: it reads each rare term's postings once into an
  accumulator and keeps its best ``top`` hits, the same hits and scores as Lucene's document-at-a-time MaxScore, which
  the many clauses of a long formula keep from skipping anything; a search's filters go with it, so that its top hits
  are the filtered search's.
- ``eqsearch_maxsim`` scores the MaxSim rerank from the node vectors an index stores: as a rescorer, in a request of
  its own (`maxsim_body`), or as a search extension in the fetch phase of the ranked lists themselves (`maxsim_ext`):
  each returned hit of the structural and the kNN lists brings its MaxSim score in its ``fields``
  (`MAXSIM_HIT_FIELD`), the same score as the rescorer's, so the rerank needs no second request
  (`PluginUse.maxsim_in_lists`). The ``eqsearch_maxsim_window`` rescore (`maxsim_window_rescore`), last in each
  list's rescores, limits that scoring to each list's top hits (`engine.search.maxsim.list_window`), the candidates
  the fused window mostly holds. Scoring every returned hit costs more than the rescorer's second request, so the
  lists bring the scores by default only where the window rescore is there too (otherwise on request).

A request is sent only where every node's plugin has it (the plugin version that first has each is its ``*_SINCE``
constant; `PluginSupport` says which of them every node has); elsewhere the plain request, or the rescorer's second
request, gives the same ranking. Why each request, with its figures: ``docs/decisions/structural-first-stage.md``,
``docs/decisions/forward-index.md``, ``docs/decisions/maxsim-placement.md``.

A cluster may lack the plugin (a hosted cluster, another version, a node added later): `detect_plugin` asks
``_nodes/plugins`` once, and the engine uses the plugin only when every node has a compatible version of it; otherwise
it sends the plain requests, and `PluginSupport.note` says why in one line (``eqsearch es check``, the admin page).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eqsearch.engine.index.mappings import (
    FORWARD_INDEX_FIELD,
    NODE_VECTORS_FIELD,
    SIZE_FIELD,
    SPANS_FIELD,
    STRUCTURE_FIELD,
)
from eqsearch.engine.search.termstats import RareRule

__all__ = [
    "BM25_RESCORER",
    "MAXSIM_HIT_FIELD",
    "PLUGIN_MAJOR",
    "PLUGIN_NAME",
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
#: The plugin versions whose requests this engine speaks (``es-plugin/VERSION``'s major).
PLUGIN_MAJOR = 1
#: The rescorer's name in a search body's ``rescore``.
STRUCTURE_RESCORER = "eqsearch_structure"
#: The MaxSim rescorer over stored node vectors, the plugin version that first has it, and the score it gives a
#: candidate without any.
MAXSIM_RESCORER = "eqsearch_maxsim"
MAXSIM_SINCE = (1, 1)
MAXSIM_MISSING = -2.0
#: The search extension that puts each returned hit's MaxSim score in its fields, the plugin version that first has it,
#: and that field.
MAXSIM_FETCH_SINCE = (1, 4)
MAXSIM_HIT_FIELD = "eqsearch_maxsim"
#: The rescore that limits the extension's scoring to a list's top hits, and the plugin version that first has it.
MAXSIM_WINDOW_RESCORER = "eqsearch_maxsim_window"
MAXSIM_WINDOW_SINCE = (1, 5)
#: The BM25 rescorer over the forward index, and the plugin version that first has it.
BM25_RESCORER = "eqsearch_bm25"
BM25_SINCE = (1, 2)
#: The first-stage query whose shard chooses the rare terms, and the plugin version that first has it.
TERMS_QUERY = "eqsearch_terms"
TERMS_SINCE = (1, 3)
#: The plugin version whose first-stage query answers with its top hits, scored term at a time (``top``).
TERMS_TOP_SINCE = (1, 6)


@dataclass(frozen=True)
class PluginSupport:
    """Whether the searches may use the plugin, and one line that says so.

    Args:
        available: every node has a compatible version of the plugin.
        nodes: the cluster's nodes (0: unknown).
        with_plugin: how many of them have a compatible version.
        note: one line for ``eqsearch es check`` and the admin page.
        maxsim: every node's plugin also has the MaxSim rescorer (`MAXSIM_SINCE`).
        bm25: every node's plugin also has the forward-index BM25 rescorer (`BM25_SINCE`).
        terms: every node's plugin also has the first-stage query and the rescorer's rare-term rule (`TERMS_SINCE`).
        maxsim_fetch: every node's plugin also has the MaxSim search extension of the fetch phase
            (`MAXSIM_FETCH_SINCE`).
        maxsim_window: every node's plugin also has the rescore that limits it to a list's top hits
            (`MAXSIM_WINDOW_SINCE`).
        terms_top: every node's plugin also scores the first-stage query term at a time (`TERMS_TOP_SINCE`).
    """

    available: bool
    nodes: int
    with_plugin: int
    note: str
    maxsim: bool = False
    bm25: bool = False
    terms: bool = False
    maxsim_fetch: bool = False
    maxsim_window: bool = False
    terms_top: bool = False


def plugin_support(nodes_info: dict[str, Any]) -> PluginSupport:
    """What a ``GET _nodes/plugins`` answer says about the plugin (a pure function of the answer).

    A mixed cluster (some nodes with it, some without, or another major version) uses the plain requests: a search
    whose shards land on a node without the rescorer would fail there.
    """
    nodes = nodes_info.get("nodes") or {}
    compatible = 0
    with_maxsim = 0
    with_bm25 = 0
    with_terms = 0
    with_maxsim_fetch = 0
    with_maxsim_window = 0
    with_terms_top = 0
    versions: set[str] = set()
    for node in nodes.values():
        for plugin in node.get("plugins") or []:
            if plugin.get("name") != PLUGIN_NAME:
                continue
            version = str(plugin.get("version", ""))
            versions.add(version)
            if version.split(".")[0] == str(PLUGIN_MAJOR):
                compatible += 1
                with_maxsim += _version_tuple(version) >= MAXSIM_SINCE
                with_bm25 += _version_tuple(version) >= BM25_SINCE
                with_terms += _version_tuple(version) >= TERMS_SINCE
                with_maxsim_fetch += _version_tuple(version) >= MAXSIM_FETCH_SINCE
                with_maxsim_window += _version_tuple(version) >= MAXSIM_WINDOW_SINCE
                with_terms_top += _version_tuple(version) >= TERMS_TOP_SINCE
    total = len(nodes)
    if total and compatible == total:
        return PluginSupport(
            True,
            total,
            compatible,
            f"eqsearch plugin {', '.join(sorted(versions))} on every node: native rerank",
            maxsim=with_maxsim == total,
            bm25=with_bm25 == total,
            terms=with_terms == total,
            maxsim_fetch=with_maxsim_fetch == total,
            maxsim_window=with_maxsim_window == total,
            terms_top=with_terms_top == total,
        )
    if compatible or versions:
        return PluginSupport(
            False,
            total,
            compatible,
            f"mixed cluster: {compatible} of {total} nodes have a compatible eqsearch plugin "
            f"(versions seen: {', '.join(sorted(versions)) or 'none'}); searches use the plain requests",
        )
    return PluginSupport(
        False,
        total,
        0,
        "no eqsearch plugin on this cluster: searches use the plain requests "
        "(a managed node gets it when 'eqsearch es start' starts it; see es-plugin/)",
    )


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for part in version.split(".")[:2]:
        parts.append(int(part) if part.isdigit() else 0)
    return tuple(parts)


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
    """Whether a search service sends the plugin's requests: asked of the cluster once, at the first search.

    A search that a node refuses because it does not know the rescorer (a node without the plugin joined since) turns
    the plugin off for this service (`refused`): the service then sends that search again with the plain requests.

    Args:
        client: the cluster's client.
        wanted: None: use the plugin when every node has it (`detect_plugin`); False: never; True: always (the
            caller knows every node has it).
        forward_index: whether the window's BM25 may come from the forward index where the plugin and the index
            allow it (`forward_index`); False keeps the plain BM25 rescore (a benchmark's side-by-side).
        shard_rare_terms: whether the shard may choose the first stage's rare terms where the plugin and the index
            allow it (`shard_rare_terms`); False keeps the client's choice from ``_termvectors`` (a side-by-side).
        maxsim_in_lists: whether the ranked lists may bring the MaxSim scores where the plugin and the index allow
            it (`maxsim_in_lists`); None (the default): where every node also has the window rescore
            (`MAXSIM_WINDOW_SINCE`), which limits the scoring to each list's top hits (as cheap as the rescorer's
            second request on 9k equations, cheaper at 1M: ``docs/decisions/maxsim-placement.md``); True: with the
            search extension alone too (`MAXSIM_FETCH_SINCE`: every returned hit scored, costlier); False: never (the
            second request).
        term_at_a_time: whether the first stage may be scored term at a time where the shard chooses the rare
            terms and every node's plugin has it (`TERMS_TOP_SINCE`, `term_at_a_time`); False keeps Lucene's
            MaxScore (a side-by-side).
    """

    def __init__(
        self,
        client: Any,
        wanted: bool | None = None,
        *,
        forward_index: bool = True,
        shard_rare_terms: bool = True,
        maxsim_in_lists: bool | None = None,
        term_at_a_time: bool = True,
    ) -> None:
        self.client = client
        self.wanted = wanted
        self.use_forward_index = forward_index
        self.use_shard_rare_terms = shard_rare_terms
        self.use_maxsim_in_lists = maxsim_in_lists
        self.use_term_at_a_time = term_at_a_time
        self._support: PluginSupport | None = None
        self._mapped: dict[tuple[str, str], bool] = {}

    def stored_node_vectors(self, alias: str) -> bool:
        """Whether the MaxSim rerank can run in the node on ``alias``: every node has the MaxSim rescorer and the
        index maps `NODE_VECTORS_FIELD` (asked once per alias; `forget_indices` asks again)."""
        return self.active and self.support.maxsim and self._maps(alias, NODE_VECTORS_FIELD)

    def maxsim_in_lists(self, alias: str) -> bool:
        """Whether the ranked lists can bring their hits' MaxSim scores on ``alias`` (`maxsim_ext`): the MaxSim rerank
        can run in the node there (`stored_node_vectors`), every node has the search extension
        (`MAXSIM_FETCH_SINCE`), and the service asks for it (by default where every node has the window rescore too,
        `MAXSIM_WINDOW_SINCE`)."""
        wanted = self.support.maxsim_window if self.use_maxsim_in_lists is None else self.use_maxsim_in_lists
        return wanted and self.stored_node_vectors(alias) and self.support.maxsim_fetch

    def forward_index(self, alias: str) -> bool:
        """Whether the structural list's window BM25 can come from the forward index on ``alias``: every node has
        the BM25 rescorer and the index maps `FORWARD_INDEX_FIELD` (asked once per alias)."""
        return self.use_forward_index and self.active and self.support.bm25 and self._maps(alias, FORWARD_INDEX_FIELD)

    def shard_rare_terms(self, alias: str) -> bool:
        """Whether the structural list's first stage can send its rare-term rule to the shard on ``alias``: every
        node has the ``eqsearch_terms`` query (`TERMS_SINCE`) and the window's BM25 comes from the forward index
        (`forward_index`), whose rescorer then adds the other terms."""
        return self.use_shard_rare_terms and self.forward_index(alias) and self.support.terms

    def term_at_a_time(self, alias: str) -> bool:
        """Whether the shard-chosen first stage (`shard_rare_terms`) may answer with its top hits scored term at a
        time (``top`` of ``eqsearch_terms``, `TERMS_TOP_SINCE`): the same hits and scores as Lucene's MaxScore, for
        less CPU on long formulas (``docs/decisions/structural-first-stage.md``)."""
        return self.use_term_at_a_time and self.shard_rare_terms(alias) and self.support.terms_top

    def _maps(self, alias: str, field: str) -> bool:
        """Whether every index behind ``alias`` maps ``field`` (False when the cluster cannot say)."""
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
        """Ask again which indices hold node vectors and forward indices (an alias moved to another index)."""
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
        """Whether ``error`` is a node refusing the plugin's rescorer while it was in use; if so, the plugin is off
        from now on (the caller sends the search again)."""
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
    terms the shard finds rare by that rule (`engine.search.termstats.rarest_terms`'s, on the shard's frequencies).
    With ``top`` (`TERMS_TOP_SINCE`), the shard scores it term at a time and matches its best ``top`` hits alone, with
    the same scores, of the documents ``filters`` (filter clauses) let through: valid where the search reads no
    deeper than ``top`` and filters by no more than ``filters``."""
    body: dict[str, Any] = {
        "terms": list(counts),
        "boosts": [float(count) for count in counts.values()],
        "field": STRUCTURE_FIELD,
    }
    if rare is not None:
        body["rare"] = rare.request()
    if top:
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
    """A search body's ``ext`` that asks the plugin (`MAXSIM_FETCH_SINCE`) for each returned hit's MaxSim score against
    the query's node vectors, in the hit's ``fields`` under `MAXSIM_HIT_FIELD` (absent for a hit without stored
    vectors); the search's own scores and order are untouched. The same scores as `maxsim_body`'s, to the last bit
    (one code).

    Shapes:
        query_nodes: ``[nodes, width]``.
    """
    return {MAXSIM_RESCORER: _maxsim_request(query_nodes, symmetric)}


def maxsim_window_rescore(window: int) -> dict[str, Any]:
    """The rescore, last in a ranked list's rescores, that limits `maxsim_ext`'s scoring to the list's top ``window``
    hits on each shard (`MAXSIM_WINDOW_SINCE`): the hits' scores and order are untouched."""
    return {"window_size": window, MAXSIM_WINDOW_RESCORER: {}}
