"""The query plan: what one search will do, decided once, before any request is built.

`make_plan` decides it from the query, its prepared formula, the ranking and what the cluster and the index offer
(`Offer`): which ranked lists run and how deep, how the structural list starts (its first stage) and whether its
rerank and BM25 run inside the node, whether MaxSim reranks the formula side and where its scores come from, and the
warnings the user reads about what the index cannot do. The request builders (`engine.search.query.list_requests`,
`engine.search.structure_query`) read the plan and nothing else about the cluster; the service's later steps read
it too, so that one search is one set of decisions. `make_plan` is a pure function: every decision can be checked
without a node.

What the equations index says about itself (its mapping's ``_meta``: the mapping version it was made with, the
formula and text encoders that filled it, the vector similarity, the analyzer) is read by `IndexMeta`, rarely (every
`META_SECONDS`, since a migration may move the alias at any time; the callers' caches of what was computed for the old
index are dropped when it changed), and is part of what the plan is decided from.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from elasticsearch import Elasticsearch, NotFoundError
from eqsearch.engine.index.mappings import RERANK_FIELDS_SINCE, SHORT_SPANS_SINCE
from eqsearch.engine.model.structure import SPAN_KINDS
from eqsearch.engine.search.query import RANKING_FIELDS, HybridQuery, candidate_window, needs_papers
from eqsearch.engine.search.structure_query import RareRule

if TYPE_CHECKING:
    from eqsearch.engine.search.query_formula import QueryFormula
    from eqsearch.engine.search.rankers import FormulaRanking

__all__ = [
    "FIRST_STAGES",
    "META_SECONDS",
    "FirstStage",
    "IndexMeta",
    "MaxSimPlan",
    "Offer",
    "PlanSettings",
    "QueryPlan",
    "StructureList",
    "make_plan",
    "structure_rerank_window",
]

FirstStage = Literal["all-terms", "rare-terms", "shard"]
#: How the structural list first matches the equations (docs/decisions/structural-first-stage.md):
#: ``all-terms``, every structural term of the query; ``rare-terms``, only its rare terms, which the client picks from
#: their document frequencies (`engine.search.structure_query`), the other terms' BM25 then added on the rerank window;
#: ``shard``, the same rule applied by the shard itself on its own frequencies (the plugin's ``eqsearch_terms`` query,
#: scored term at a time, then its ``eqsearch_bm25`` rescorer from the forward index): no ``_termvectors`` request.
FIRST_STAGES: tuple[FirstStage, ...] = ("all-terms", "rare-terms", "shard")
#: How deep each list's hits bring their MaxSim scores, as a multiple of the MaxSim window: the fused window mostly
#: comes from the lists' tops, and a candidate below every list's scored top is asked of the rescorer (exact either
#: way; ``docs/decisions/maxsim-placement.md``).
LIST_WINDOW_FACTOR = 1.5


@dataclass(frozen=True)
class Offer:
    """What the cluster and the index offer a search (the service asks; its answers are cached).

    Args:
        plugin: every node has the plugin version this engine ships (`engine.search.plugin`).
        forward_index: the index stores the equations' forward index (`engine.index.forward_index`).
        node_vectors: the index stores the node vectors of the service's node encoder (its ``_meta`` names it).
        rerank_fields: the index holds what the structural rerank needs (the equations' sizes, spans with renamed
            variables: mapping version 5); ``rerank_warning`` says how to upgrade an index without them.
        encoder_mismatch: why the index's formula vectors cannot be compared with the service's (None: they can).
        text_encoder_mismatch: the same for the context vectors.
        rerank_warning: see ``rerank_fields``.
        short_spans: the index writes its spans short (mapping version `SHORT_SPANS_SINCE`).
    """

    plugin: bool = False
    forward_index: bool = False
    node_vectors: bool = False
    rerank_fields: bool = True
    encoder_mismatch: str | None = None
    text_encoder_mismatch: str | None = None
    rerank_warning: str | None = None
    short_spans: bool = True


@dataclass(frozen=True)
class PlanSettings:
    """The service's settings a plan reads.

    Args:
        candidate_depth: how many candidates each list contributes to fusion (`candidate_window`).
        pattern_candidates: how deep the structural list of a query with variables reaches.
        num_candidates_factor: kNN ``num_candidates`` per hit asked (`engine.search.query.num_candidates`).
        context_encoder: the service has a text encoder for the context list.
    """

    candidate_depth: int = 100
    pattern_candidates: int = 300
    num_candidates_factor: int = 6
    context_encoder: bool = False


@dataclass(frozen=True)
class StructureList:
    """The structural list's request: how deep, how it starts, its rerank, and what of it runs inside the node.

    Args:
        depth: how many equations it returns.
        rerank_window: the top candidates rescored by the sub-expressions they share with the query (0: none).
        rerank_weight: the weight of that match.
        candidate_sizes: weigh a shared sub-expression by the larger of the query's and the candidate's size.
        span_kinds: the kinds of sub-expressions matched (an index older than renamed variables: ``("e", "g")``).
        short_spans: the index writes its spans short (`engine.index.mappings.span_term`; older: 16 hex digits).
        first_stage: how it first matches (`FirstStage`).
        first_stage_share: the share of the equations a rare term is in at most.
        native: the plugin's rescorers score the rerank (and, with ``forward_index``, the window's BM25).
        forward_index: the window's BM25 comes from the equations' forward index (``native`` only).
        top: with the ``shard`` first stage, the shard matches its best ``top`` hits alone, scored term at a time
            (0: Lucene's own scoring; the same hits and scores).
    """

    depth: int
    rerank_window: int = 0
    rerank_weight: float = 0.0
    candidate_sizes: bool = False
    span_kinds: tuple[str, ...] = SPAN_KINDS
    short_spans: bool = True
    first_stage: FirstStage = "all-terms"
    first_stage_share: float = 0.0
    native: bool = False
    forward_index: bool = False
    top: int = 0

    @property
    def rare_rule(self) -> RareRule | None:
        """The rule the shard applies with the ``shard`` first stage (None otherwise)."""
        if self.first_stage != "shard":
            return None
        return RareRule(self.first_stage_share, self.rerank_window)


@dataclass(frozen=True)
class MaxSimPlan:
    """The MaxSim rerank of the formula side (`engine.search.maxsim`).

    Args:
        window: the formula side's top candidates reranked.
        weight: MaxSim's share of the reranked score.
        symmetric: average both directions of the match.
        in_lists: the formula lists bring their top ``list_window`` hits' scores, computed inside the node from stored
            node vectors (a candidate below asked of the rescorer); False: the service computes them from the
            candidates' MathML.
        list_window: how deep each formula list's hits bring their scores.
    """

    window: int
    weight: float
    symmetric: bool
    in_lists: bool
    list_window: int


@dataclass(frozen=True)
class QueryPlan:
    """What one search does (`make_plan`).

    Args:
        depth: how many candidates each list contributes to fusion.
        past_depth: the page asked for starts past them (it comes back empty, with a warning).
        lists: the ranked lists to run, in order: ``structure``, ``embedding``, ``text``, ``paper_contexts``,
            ``context``, ``papers``.
        structure: the structural list's request (None: no structural list).
        maxsim: the MaxSim rerank (None: none).
        num_candidates_factor: the kNN lists' ``num_candidates`` per hit.
        formula_fields: the doc values the formula lists return per hit (``paper_id`` only when the fusion reads it).
        words_displays_only: the words alone rank display equations (a query without a formula side that did not ask
            for inline formulas).
        warnings: what the user reads about this search (an approximate conversion, a page past the depth, what
            the index cannot do).
    """

    depth: int
    past_depth: bool = False
    lists: tuple[str, ...] = ()
    structure: StructureList | None = None
    maxsim: MaxSimPlan | None = None
    num_candidates_factor: int = 6
    formula_fields: tuple[str, ...] = RANKING_FIELDS
    words_displays_only: bool = False
    warnings: tuple[str, ...] = ()


def structure_rerank_window(ranking: FormulaRanking, depth: int) -> int:
    """How many structural candidates the rerank covers: the ranking's rerank window, or the list's ``depth`` when
    that is deeper, so that a deep evaluation reranks what it reads (0: the ranking has no rerank)."""
    return max(ranking.rerank_window, depth) if ranking.rerank_window else 0


def make_plan(
    query: HybridQuery,
    formula: QueryFormula | None,
    ranking: FormulaRanking,
    offer: Offer,
    settings: PlanSettings,
) -> QueryPlan:
    """The plan of one search (see the module's docstring).

    Args:
        query: the query.
        formula: its prepared formula (None: keywords only).
        ranking: the service's formula ranking.
        offer: what the cluster and the index offer.
        settings: the service's settings.
    """
    warnings = [formula.approximation] if formula is not None and formula.approximation else []
    depth, past = candidate_window(query, candidate_depth=settings.candidate_depth)
    if past:
        warnings.append(
            f"a search ranks its best {depth} equations; page {query.page} starts past them (refine the "
            "query, or add keywords or filters, to see others)"
        )
    maxsim = _maxsim(query, formula, ranking, offer)
    if maxsim is not None:
        depth = max(depth, maxsim.window)  # the lists fill the MaxSim window
    formula_side = query.formula_weight > 0
    embedding = formula_side and formula is not None and formula.vector is not None and ranking.embedding > 0
    if formula is not None and formula.vector is not None and ranking.embedding and offer.encoder_mismatch:
        warnings.append(offer.encoder_mismatch)
        embedding = False
    words = query.has_keywords and query.formula_weight < 1
    context = words and ranking.context > 0 and settings.context_encoder
    if context and offer.text_encoder_mismatch:
        warnings.append(offer.text_encoder_mismatch)
        context = False
    structure = None
    if formula_side and formula is not None and formula.structure is not None and ranking.structure > 0:
        rerank_fields = bool(ranking.rerank_window) and offer.rerank_fields
        if ranking.rerank_window and offer.rerank_warning:
            warnings.append(offer.rerank_warning)
        if formula.structure.tokens:
            pattern = formula.pattern.has_variables
            structure = _structure_list(
                ranking, offer, max(depth, settings.pattern_candidates) if pattern else depth, rerank_fields
            )
    lists = [
        name
        for name, runs in (
            ("structure", structure is not None),
            ("embedding", embedding),
            ("text", words and ranking.context < 1),
            ("paper_contexts", words),
            ("context", context),
            ("papers", words),
        )
        if runs
    ]
    return QueryPlan(
        depth=depth,
        past_depth=past,
        lists=tuple(lists),
        structure=structure,
        maxsim=maxsim,
        num_candidates_factor=settings.num_candidates_factor,
        formula_fields=RANKING_FIELDS if needs_papers(query) else RANKING_FIELDS[:1],
        words_displays_only=not (query.has_formula and formula_side) and query.inline == "include",
        warnings=tuple(warnings),
    )


def _structure_list(ranking: FormulaRanking, offer: Offer, depth: int, rerank_fields: bool) -> StructureList:
    """The structural list of ``depth`` equations: the ranking's rerank and first stage, inside the node where the
    plugin (and, for the window's BM25 and the shard's first stage, the forward index) is there."""
    rerank_window = structure_rerank_window(ranking, depth)
    forward_index = offer.plugin and offer.forward_index
    first_stage: FirstStage = "all-terms"
    if ranking.first_stage_share:
        first_stage = "shard" if forward_index else "rare-terms"
    return StructureList(
        depth=depth,
        rerank_window=rerank_window,
        rerank_weight=ranking.rerank_weight,
        candidate_sizes=rerank_fields and ranking.rerank_symmetric,
        span_kinds=SPAN_KINDS if rerank_fields else ("e", "g"),
        short_spans=offer.short_spans,
        first_stage=first_stage,
        first_stage_share=ranking.first_stage_share,
        native=offer.plugin,
        forward_index=forward_index,
        top=max(depth, rerank_window) if first_stage == "shard" else 0,
    )


def _maxsim(
    query: HybridQuery, formula: QueryFormula | None, ranking: FormulaRanking, offer: Offer
) -> MaxSimPlan | None:
    """The MaxSim rerank where the ranking has one and the query formula its node vectors: not for a query with
    keywords where the ranking keeps MaxSim to formula-only searches, and, for a ranking whose MaxSim runs only inside
    the node, only where the index stores the node vectors."""
    if formula is None or formula.nodes is None or ranking.maxsim_window <= 0:
        return None
    if ranking.maxsim_formula_only and query.has_keywords:
        return None
    if ranking.maxsim_in_node and not offer.node_vectors:
        return None
    return MaxSimPlan(
        window=ranking.maxsim_window,
        weight=ranking.maxsim_weight,
        symmetric=ranking.maxsim_symmetric,
        in_lists=offer.node_vectors,
        list_window=math.ceil(ranking.maxsim_window * LIST_WINDOW_FACTOR),
    )


#: How long the equations index's ``_meta`` (similarity, encoder) is trusted before it is read again.
META_SECONDS = 30.0


class IndexMeta:
    """The ``_meta`` of one alias's index, cached for `META_SECONDS`.

    Args:
        client: a connected Elasticsearch client.
        alias: the equations alias.
        on_change: called when a re-read finds different ``_meta`` (the alias moved): caches of vectors
            normalised for the old index are dropped there.
    """

    def __init__(self, client: Elasticsearch, alias: str, on_change: Callable[[], None] = lambda: None) -> None:
        self.client = client
        self.alias = alias
        self.on_change = on_change
        self._meta: dict[str, Any] | None = None
        self._read_at = 0.0

    def read(self) -> dict[str, Any]:
        """The index's ``_meta`` (empty when the index is missing)."""
        now = time.monotonic()
        if self._meta is None or now - self._read_at > META_SECONDS:
            try:
                mappings = self.client.indices.get_mapping(index=self.alias)
            except NotFoundError:
                return {}
            meta = next(iter(mappings.values()))["mappings"].get("_meta", {})
            if self._meta is not None and meta != self._meta:
                self.on_change()
            self._meta, self._read_at = meta, now
        return self._meta

    def analyzer(self) -> str:
        """The text analyzer of the index (``english`` or ``standard``)."""
        return str(self.read().get("analyzer", "standard"))

    def similarity(self) -> str:
        """How the index compares formula vectors (``cosine``, ``dot_product``, ``max_inner_product``): a query
        vector is normalised for the first two and rounded to int8 for cosine (`engine.index.vectors`)."""
        return str(self.read().get("similarity") or "max_inner_product")

    def encoder_mismatch(self, identity: str | None) -> str | None:
        """Why a formula encoder of this ``identity`` cannot be compared with the index's vectors, or None when it
        can (an index made before identities were recorded is trusted)."""
        recorded = self.read().get("encoder")
        if recorded is None or identity is None or recorded == identity:
            return None
        return (
            f"the formula embedding is off: the index holds vectors of the model {recorded}, but this server encodes "
            f"formulas with {identity}; an administrator re-embeds the index with 'eqsearch index migrate "
            "equations --reencode' (keyword search still works)"
        )

    def text_encoder_mismatch(self, identity: str) -> str | None:
        """Why keywords embedded by a text encoder of this ``identity`` cannot search the index's context vectors,
        or None when they can."""
        recorded = self.read().get("text_encoder")
        if recorded is None or recorded == identity:
            return None
        return (
            f"the context channel is off: the index holds context vectors of {recorded}, but this server embeds "
            f"text with {identity}; an administrator migrates the index with 'eqsearch index migrate equations' "
            "(keyword search still works)"
        )

    def short_spans(self) -> bool:
        """Whether the index writes its spans short (`engine.index.mappings.span_term`: mapping version
        `SHORT_SPANS_SINCE` on; a missing index reads as the current mapping)."""
        version = self.read().get("mapping_version")
        return version is None or version >= SHORT_SPANS_SINCE

    def rerank_fields(self) -> tuple[bool, str | None]:
        """Whether the index holds what the structural rerank needs (mapping version `RERANK_FIELDS_SINCE`: the
        equations' sizes, spans with renamed variables), and, for an older index, a warning that says how an
        administrator upgrades it."""
        version = self.read().get("mapping_version")
        if version is None:
            return False, None
        if version >= RERANK_FIELDS_SINCE:
            return True, None
        return False, (
            f"the structural rerank matches sub-expressions by their letters and weighs them by the query's size "
            f"only: the index (mapping version {version}) predates renamed variables and the equations' sizes; an "
            "administrator migrates it with 'eqsearch index migrate equations'"
        )
