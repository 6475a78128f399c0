"""Hybrid search: runs a `HybridQuery` against one deployment's indices and builds the page, step by step.

`SearchService.search` reads as its steps:

1. **prepare** the query's formula (`query_formula`: KaTeX, the structural terms, the vector, cached);
2. **plan** the search once (`plan`: which ranked lists, how deep, the structural list's first stage, what runs inside
   the node, whether and where MaxSim reranks), from the query, the ranking and what the cluster and the index offer
   (`plugin`: the one plugin version this engine speaks; `plan.IndexMeta`: the index's encoders and mapping
   version);
3. run the **ranked lists** as one ``_msearch`` of ranked ids (`query`, `structure_query`: the bodies the plan asks
   for; `requests`), the structural list's rare terms first where the client chooses them
   (`structure_query.TermStatistics`); keep the candidates a pattern with variables matches (`pattern_filter`). A
   node that refuses the plugin's requests turns the plugin off, and the search is planned and sent again without it:
   the only fallback;
4. **fuse**: blend each side's lists, rerank the formula side by MaxSim where the plan says (`maxsim`), fuse the two
   sides (`fusion`);
5. cut the **page** (`results`), fetch its equations with highlights (`requests`) and mark what of each formula
   matched (`query_formula.formula_highlight`).

Elasticsearch's errors become `SearchError`s in `errors`; the paper and equation views are `views`. LaTeX that does
not parse never fails the search: `SearchResults.latex_error` carries the converter's message, the structural list
still searches the terms read from the LaTeX itself, and keyword results still come back.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from elasticsearch import Elasticsearch
from eqsearch.engine.index.mappings import (
    FORWARD_INDEX_FIELD,
    NODE_VECTORS_FIELD,
    STRUCTURE_FIELD,
    VECTOR_FIELD,
    alias_name,
)
from eqsearch.engine.index.vectors import query_vector
from eqsearch.engine.model.patterns import read_query_variables
from eqsearch.engine.search.errors import EquationNotFoundError, SearchError, call
from eqsearch.engine.search.fusion import (
    Fused,
    blend_sides,
    evidence_fusion,
    linear_fusion,
    paper_evidence,
    reciprocal_rank_fusion,
    words_side,
)
from eqsearch.engine.search.maxsim import MaxSimStage, scored_by_node
from eqsearch.engine.search.pattern_filter import pattern_matches
from eqsearch.engine.search.plan import META_SECONDS, IndexMeta, Offer, PlanSettings, QueryPlan, make_plan
from eqsearch.engine.search.plugin import PluginUse
from eqsearch.engine.search.query import FORMULA_LISTS, HybridQuery, ListInputs, knn_body, list_requests, words_filters
from eqsearch.engine.search.query_formula import QueryFormula, QueryFormulas, formula_highlight, weigh_parts
from eqsearch.engine.search.rankers import DEFAULT_RANKER, FormulaRanking, get_ranker
from eqsearch.engine.search.requests import (
    RankedLists,
    fetch_page_with_papers,
    fetch_papers,
    name_placeholders,
    ranked_lists,
)
from eqsearch.engine.search.results import EquationHit, PaperGroup, SearchResults, equation_hit, group_hits, select_page
from eqsearch.engine.search.structure_query import TermStatistics, rarest_terms
from eqsearch.engine.search.views import equation_view, paper_view

if TYPE_CHECKING:
    from eqsearch.engine.latex.converter import ConversionResult
    from eqsearch.engine.model.encoder import Encoder
    from eqsearch.engine.model.nodes import NodeEncoder
    from eqsearch.engine.model.text import TextEncoder

__all__ = ["META_SECONDS", "EquationNotFoundError", "SearchError", "SearchService"]

#: The channel each ranked list of equations stands for, as hits report it (an equation that stands for a paper
#: found by its words alone reports ``text``, from its fused scores).
CHANNEL_OF_LIST = {"structure": "structure", "embedding": "embedding", "text": "text", "context": "context"}


class SearchService:
    """The hybrid search API over one eqsearch deployment (an index prefix on one cluster).

    Args:
        client: a connected Elasticsearch client (`engine.es.client.connect`).
        encoder: turns MathML into vectors (`engine.model.encoder.load_encoder`); its ``dim`` must match the index.
        converter: turns LaTeX into MathML (`engine.latex.converter.KatexConverter`); anything with
            ``convert(latex, environment, macros) -> ConversionResult``.
        index_prefix: the deployment's prefix; searches go to the ``<prefix>-equations`` and ``<prefix>-papers``
            aliases.
        num_candidates_factor: kNN ``num_candidates`` = this times k (more = better recall, slower), at least 100 and
            at most 10,000. With the default depth, 300: formula recall@10 against exact search is set by
            ``num_candidates``, not by k (0.885 at 1M with 300 for k=50 as for k=100; 0.865 with 150).
        rrf_k: the rank constant of reciprocal rank fusion.
        candidate_depth: how many candidates each ranked list contributes to fusion, whatever the page, its size or
            the grouping, so that every page is a slice of one ranking; a page past it comes back empty with a
            warning. 100, the largest page (what the exact paging costs: docs/decisions/query-path.md).
        paper_share: the paper's share of the words' evidence in the evidence fusion (`evidence_fusion`) when a
            formula ranks the equations; the rest is the equation's own text.
        words_paper_share: the same when the words are alone: then they must also choose the paper's equations, so
            the equation's own text weighs more (docs/decisions/evidence-fusion.md).
        formula_cache_size: how many prepared query formulas to keep (`QueryFormulas`; 0 keeps none).
        ranking: how the formula side is ranked (default: the registered `DEFAULT_RANKER`).
        pattern_candidates: how deep the structural list of a query with variables reaches: the candidates its
            pattern is matched against (with the embedding list's), fetched and unified client-side.
        text_encoder: embeds keywords for the context channel (`engine.model.text`); None loads the shipped one
            when the ranking gives the context a weight.
        node_encoder: the node vectors of the MaxSim rerank (`engine.model.nodes`); None loads the sidecar of the
            encoder's bundle when the ranking has a MaxSim window.
        node_cache_size: how many candidates' node vectors to keep (computed from their MathML at rerank time).
        plugin: use eqsearch's Elasticsearch plugin (`engine.search.plugin`: the structural rerank inside the node,
            the same ranking): None when every node of the cluster has it (asked at the first search), False never.
    """

    def __init__(
        self,
        client: Elasticsearch,
        encoder: Encoder,
        converter: Any,
        *,
        index_prefix: str = "eqsearch",
        num_candidates_factor: int = 6,
        rrf_k: int = 60,
        candidate_depth: int = 100,
        paper_share: float = 0.75,
        words_paper_share: float = 0.25,
        formula_cache_size: int = 1024,
        ranking: FormulaRanking | None = None,
        pattern_candidates: int = 300,
        text_encoder: TextEncoder | None = None,
        node_encoder: NodeEncoder | None = None,
        node_cache_size: int = 8192,
        plugin: bool | None = None,
    ) -> None:
        self.client = client
        self.encoder = encoder
        self.converter = converter
        self.equations_alias = alias_name(index_prefix, "equations")
        self.papers_alias = alias_name(index_prefix, "papers")
        self.num_candidates_factor = num_candidates_factor
        self.rrf_k = rrf_k
        self.paper_share = paper_share
        self.words_paper_share = words_paper_share
        self.candidate_depth = candidate_depth
        self.ranking = ranking or get_ranker(DEFAULT_RANKER)
        self.pattern_candidates = pattern_candidates
        self.text_encoder = text_encoder
        if self.text_encoder is None and self.ranking.context > 0:
            from eqsearch.engine.model.text import load_text_encoder

            self.text_encoder = load_text_encoder()
        self.node_encoder = node_encoder
        if self.node_encoder is None and self.ranking.maxsim_window > 0:
            from eqsearch.engine.model.bundle import BundleError
            from eqsearch.engine.model.nodes import node_encoder_for

            try:
                self.node_encoder = node_encoder_for(encoder, self.ranking.maxsim_nodes)
            except BundleError:
                if not self.ranking.maxsim_in_node:
                    raise
                self.node_encoder = None  # a bundle without the node-states sidecar: an in-node MaxSim goes without
        self.meta = IndexMeta(client, self.equations_alias, on_change=self._index_changed)
        self.formulas = QueryFormulas(
            converter,
            encoder,
            self.ranking,
            node_encoder=self.node_encoder,
            similarity=self.meta.similarity,
            size=formula_cache_size,
        )
        self.term_statistics = TermStatistics(client.termvectors, STRUCTURE_FIELD)
        self.plugin = PluginUse(client, plugin)
        self.maxsim = MaxSimStage(client, self.equations_alias, self.node_encoder, node_cache_size)
        #: A benchmark's or a test's variant of every plan (a side-by-side of two ways to run the same search); None.
        self.plan_variant: Callable[[QueryPlan], QueryPlan] | None = None
        self.settings = PlanSettings(
            candidate_depth, pattern_candidates, num_candidates_factor, bool(self.text_encoder)
        )

    # -- the search --------------------------------------------------------------------------------------------
    def search(self, query: HybridQuery) -> SearchResults:
        """Run a hybrid query.

        Args:
            query: the query.

        Returns:
            One page of results; `SearchResults.latex_error` is set when the LaTeX did not parse.

        Raises:
            SearchError: Elasticsearch refused the search or is unreachable.
            QueryVariableError: the formula has a malformed query variable (``?1``, ``??``, ``\\text{?a}``).
        """
        began = time.perf_counter()
        formula = self._prepare(query)
        plan = self._plan(query, formula)
        plan, found = self._ranked_lists(query, formula, plan)
        if found is None:
            return self._results([], [], 0, query, formula, list(plan.warnings), began)
        fused = self._fuse(query, self._sides(found, formula, plan), found)
        page_items, total = select_page(fused, found.paper_of, query, found.text_total)
        hits = self._page_hits(page_items, query, formula, plan, found)
        groups = group_hits(hits) if query.group_by_paper else []
        return self._results(hits, groups, total, query, formula, found.warnings, began)

    def plan(self, query: HybridQuery) -> QueryPlan:
        """What a search of ``query`` would do now (`engine.search.plan.QueryPlan`), without running it."""
        return self._plan(query, self._prepare(query))

    def requests(self, query: HybridQuery) -> list[tuple[str, dict[str, Any]]]:
        """The ranked lists' requests a search of ``query`` would send now, as ``(name, body)``; nothing is sent."""
        formula = self._prepare(query)
        plan = self._plan(query, formula)
        return list_requests(query, plan, self._list_inputs(query, formula, plan))

    def _prepare(self, query: HybridQuery) -> QueryFormula | None:
        """The query's formula, converted, encoded and read (cached); None without a formula."""
        if not query.has_formula:
            return None
        return self.formulas.get(read_query_variables(query.latex or ""))

    def _plan(self, query: HybridQuery, formula: QueryFormula | None) -> QueryPlan:
        """The search's plan (`engine.search.plan.make_plan`) from what the cluster and the index offer now."""
        plan = make_plan(query, formula, self.ranking, self._offer(), self.settings)
        return plan if self.plan_variant is None else self.plan_variant(plan)

    def _offer(self) -> Offer:
        """What the cluster and the index offer (each answer cached: the plugin once, the mappings once per index,
        the ``_meta`` every `META_SECONDS`)."""
        plugin = self.plugin.active
        rerank_fields, rerank_warning = self.meta.rerank_fields()
        node_identity = getattr(self.node_encoder, "identity", None)
        return Offer(
            plugin=plugin,
            forward_index=plugin and self.plugin.maps(self.equations_alias, FORWARD_INDEX_FIELD),
            node_vectors=plugin
            and self.node_encoder is not None
            and self.plugin.maps(self.equations_alias, NODE_VECTORS_FIELD)
            and self.meta.read().get("node_vectors") == node_identity,
            rerank_fields=rerank_fields,
            encoder_mismatch=self.meta.encoder_mismatch(getattr(self.encoder, "identity", None)),
            text_encoder_mismatch=None
            if self.text_encoder is None
            else self.meta.text_encoder_mismatch(self.text_encoder.identity),
            rerank_warning=rerank_warning,
            short_spans=self.meta.short_spans(),
        )

    def _ranked_lists(
        self, query: HybridQuery, formula: QueryFormula | None, plan: QueryPlan
    ) -> tuple[QueryPlan, RankedLists | None]:
        """The plan's ranked lists, sent as one ``_msearch`` (None: the plan has none), the formula lists then cut
        to a pattern's matches, with the plan they followed. Where a node refuses the plugin's requests, the plugin is
        off from then on, and the search is planned and sent again without it (the one fallback)."""
        searches = list_requests(query, plan, self._list_inputs(query, formula, plan))
        if not searches:
            return plan, None
        warnings = list(plan.warnings)
        try:
            found = ranked_lists(self.client, self.equations_alias, searches, self.papers_alias)
        except SearchError as error:
            if not self.plugin.refused(error):
                raise
            warnings.append(self.plugin.support.note)
            plan = self._plan(query, formula)
            searches = list_requests(query, plan, self._list_inputs(query, formula, plan))
            found = ranked_lists(self.client, self.equations_alias, searches, self.papers_alias)
        if plan.maxsim is not None and plan.maxsim.in_lists:  # which hits the node scored, before the pattern filter
            found.maxsim_scored = scored_by_node(found.lists, found.maxsim, plan.maxsim.list_window)
        if found.missing_shards:
            warnings.append(
                f"partial results: {found.missing_shards} shard searches did not answer (a node of the cluster is "
                "down or recovering); some equations may be missing"
            )
        if formula is not None and formula.pattern.has_variables:
            found.lists = pattern_matches(self.client, self.equations_alias, found.lists, formula.layout)
            if not any(found.lists.get(name) for name in FORMULA_LISTS):
                warnings.append(
                    f"no formula among the {self.pattern_candidates} nearest candidates matches the pattern "
                    f"{query.latex}; try fewer symbols around the variables"
                )
        if "papers" in plan.lists:
            contexts = found.lists.pop("paper_contexts", [])
            found.papers, representatives = paper_evidence(found.papers, contexts, found.paper_of, found.lists)
            found.paper_of.update(representatives)
            found.representatives = list(representatives)
        found.warnings = warnings
        return plan, found

    def _list_inputs(self, query: HybridQuery, formula: QueryFormula | None, plan: QueryPlan) -> ListInputs:
        """What the plan's lists search with: the formula's structure, vector and node vectors, the keywords' context
        vector, and the rare terms of a first stage the client chooses (one cached ``_termvectors`` request)."""
        if formula is None:
            return ListInputs(context_vector=self._context_vector(query, plan))
        rare_terms = None
        if plan.structure is not None and plan.structure.first_stage == "rare-terms":
            rare_terms = self._rare_terms(formula, plan.structure.rerank_window)
        return ListInputs(
            structure=formula.structure,
            vector=formula.vector,
            context_vector=self._context_vector(query, plan),
            rare_terms=rare_terms,
            query_nodes=formula.nodes,
        )

    def _sides(
        self, found: RankedLists, formula: QueryFormula | None, plan: QueryPlan
    ) -> dict[str, list[tuple[str, float]]]:
        """The ``formula`` side (structure and embedding lists, blended by the ranking's weights, then reranked by
        MaxSim where the plan says) and the ``words`` side (the words' BM25 and the context lists)."""
        sides = blend_sides(
            found.lists,
            {
                "formula": {"structure": self.ranking.structure, "embedding": self.ranking.embedding},
                "words": {"text": 1.0 - self.ranking.context, "context": self.ranking.context},
            },
        )
        if plan.maxsim is not None and formula is not None and formula.nodes is not None and sides.get("formula"):
            sides["formula"] = self.maxsim.rerank(sides["formula"], formula.nodes, plan.maxsim, found)
        return sides

    def _fuse(self, query: HybridQuery, sides: dict[str, list[tuple[str, float]]], found: RankedLists) -> list[Fused]:
        """The two sides fused, weighted by the query's balance: by the evidence fusion (the words' paper-level and
        equation-level evidence re-weighing the formula's candidates), reciprocal rank fusion or a linear blend."""
        w = query.formula_weight
        paper_share = self.paper_share if sides.get("formula") else self.words_paper_share
        if query.fusion == "evidence":
            return evidence_fusion(
                sides.get("formula", []),
                sides.get("words", []),
                found.papers,
                found.paper_of,
                weight=w if sides.get("formula") else 0.0,
                paper_share=paper_share,
                representatives=found.representatives,
            )
        if found.papers:  # the words side as the evidence fusion weighs it: its papers' words and its own
            sides["words"] = list(
                words_side(sides.get("words", []), found.papers, found.paper_of, found.representatives, paper_share)
            )
        if query.fusion == "rrf":
            return reciprocal_rank_fusion(sides, k=self.rrf_k, weights={"formula": 2 * w, "words": 2 * (1 - w)})
        return linear_fusion(sides, {"formula": w, "words": 1 - w})

    def _page_hits(
        self,
        page_items: list[Fused],
        query: HybridQuery,
        formula: QueryFormula | None,
        plan: QueryPlan,
        found: RankedLists,
    ) -> list[EquationHit]:
        """The page's equations fetched (with highlights of the keywords), each with its paper's fields, and, for a
        formula query, marked with what of each formula matched it; a paper found by its words alone shows with one
        of its equations (`engine.search.requests.name_placeholders`)."""
        keywords = query.keywords if query.has_keywords else None
        filters, es, paper_of = words_filters(query, plan), self.client, found.paper_of
        page_items = name_placeholders(es, self.equations_alias, page_items, keywords, filters, paper_of)
        eq_ids, channels = [item.doc_id for item in page_items], channels_of(found.lists)
        documents, papers = fetch_page_with_papers(
            es, self.equations_alias, self.papers_alias, eq_ids, keywords, paper_of
        )
        hits = [  # an equation deleted between the two requests is dropped, not an error
            equation_hit(
                item, doc, channels.get(item.doc_id, ()), papers.get(str(doc["_source"].get("paper_id") or ""))
            )
            for item in page_items
            if (doc := documents.get(item.doc_id)) is not None
        ]
        if formula is not None and query.highlight:
            hits = [replace(hit, formula_highlight=formula_highlight(formula, hit.mathml)) for hit in hits]
        return hits

    def _rare_terms(self, formula: QueryFormula, window: int) -> list[str] | None:
        """The query's rarest structural terms, which the ``rare-terms`` first stage matches
        (`engine.search.structure_query`), enough of them to fill the structural list's rerank ``window``; None: all."""
        structure = formula.structure
        if structure is None or not structure.tokens:
            return None
        frequencies = self.term_statistics.frequencies(self.equations_alias, structure.tokens)
        if frequencies is None:
            return None
        return rarest_terms(structure.tokens, frequencies, max_share=self.ranking.first_stage_share, min_matches=window)

    def _context_vector(self, query: HybridQuery, plan: QueryPlan) -> np.ndarray | None:
        """The keywords' text embedding for the context list, where the plan runs it (None: an empty embedding)."""
        if "context" not in plan.lists or self.text_encoder is None:
            return None
        vector = self.text_encoder.encode([query.keywords or ""])[0]
        return vector if vector.any() else None

    def _index_changed(self) -> None:
        """The alias moved to an index with other ``_meta``: vectors prepared for the old one are dropped."""
        self.formulas.clear()
        self.maxsim.vectors.clear()
        self.plugin.forget_indices()

    # -- the other views ---------------------------------------------------------------------------------------
    def more_like_equation(self, eq_id: str, size: int = 10) -> SearchResults:
        """Equations nearest to a stored equation's vector, the equation itself excluded.

        Args:
            eq_id: the equation's document id.
            size: how many neighbours (1..100).

        Returns:
            The neighbours, best first (all found by the embedding).

        Raises:
            EquationNotFoundError: no equation has that id, or it has no vector.
            SearchError: Elasticsearch refused the search or is unreachable.
        """
        began = time.perf_counter()
        query = HybridQuery(size=size)
        response = call(
            self.client.search,
            index=self.equations_alias,
            body={
                "query": {"ids": {"values": [eq_id]}},
                "_source": {"exclude_vectors": False, "includes": [VECTOR_FIELD]},
            },
        )
        found = response["hits"]["hits"]
        vector = found[0]["_source"].get(VECTOR_FIELD) if found else None
        if vector is None:
            why = "no equation has that id" if not found else "it has no vector (its LaTeX did not convert)"
            raise EquationNotFoundError(f"cannot find equations like {eq_id!r}: {why}")
        if self.meta.encoder_mismatch(getattr(self.encoder, "identity", None)) is None:  # weighed as kNN alone ranks
            vector = weigh_parts(self.encoder, vector, get_ranker("embedding").embedding_parts)
        vector = query_vector(np.asarray(vector, dtype=np.float32), self.meta.similarity())
        body = knn_body(vector, size, [], num_candidates_factor=self.num_candidates_factor, exclude=[eq_id])
        hits_raw = call(self.client.search, index=self.equations_alias, body=body)["hits"]["hits"]
        paper_of = [str(raw["_source"].get("paper_id") or "") for raw in hits_raw]
        papers = fetch_papers(self.client, self.papers_alias, paper_of, None)
        hits = [
            equation_hit(Fused(raw["_id"], score, {"formula": score}, {"formula": rank}), raw, ("embedding",), paper)
            for rank, (raw, score, paper) in enumerate(
                (
                    (raw, float(raw["_score"] or 0.0), papers.get(pid))
                    for raw, pid in zip(hits_raw, paper_of, strict=True)
                ),
                start=1,
            )
        ]
        return self._results(hits, [], len(hits), query, None, [], began)

    def get_equation(self, eq_id: str) -> dict[str, Any] | None:
        """The stored equation document (vectors excluded) with its paper's title and authors, or None when absent."""
        return equation_view(self.client, self.equations_alias, self.papers_alias, eq_id)

    def get_paper(self, paper_id: str) -> dict[str, Any] | None:
        """A paper with its equations by section and its citations (`engine.search.views.paper_view`)."""
        return paper_view(self.client, self.papers_alias, self.equations_alias, paper_id)

    def to_mathml(self, latex: str) -> ConversionResult:
        """LaTeX -> MathML with the service's converter (for previews); never raises on bad LaTeX."""
        return self.converter.convert(latex, "equation", ())

    def analyzer(self) -> str:
        """The text analyzer of the equations index (``english`` or ``standard``)."""
        return self.meta.analyzer()

    def _results(
        self,
        hits: list[EquationHit],
        groups: list[PaperGroup],
        total: int,
        query: HybridQuery,
        formula: QueryFormula | None,
        warnings: list[str],
        began: float,
    ) -> SearchResults:
        """The page as the caller reads it, with the formula's conversion error and the search's warnings."""
        return SearchResults(
            hits=hits,
            groups=groups,
            total=total,
            page=query.page,
            size=query.size,
            latex_error=formula.latex_error if formula is not None else None,
            warnings=warnings,
            took_ms=(time.perf_counter() - began) * 1000.0,
            analyzer=self.analyzer(),
        )


def channels_of(lists: dict[str, list[tuple[str, float]]]) -> dict[str, tuple[str, ...]]:
    """eq_id -> the channels whose lists found it (``structure``, ``embedding``, ``text``, ``context``), in that
    order."""
    found: dict[str, list[str]] = {}
    for name, channel in CHANNEL_OF_LIST.items():
        for eq_id, _ in lists.get(name, ()):
            channels = found.setdefault(eq_id, [])
            if channel not in channels:
                channels.append(channel)
    return {eq_id: tuple(names) for eq_id, names in found.items()}
