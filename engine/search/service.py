"""Hybrid search: runs a `HybridQuery` against one deployment's indices and builds the page, step by step.

`SearchService.search` reads as its steps, each in a module of its own:

1. prepare the query's formula (`query_formula`: KaTeX, the structural terms, the vector, cached);
2. check what the index allows (`index_meta`: its mapping version, the encoder that filled it);
3. build the ranked lists' request bodies (`query`: structural BM25 with its rerank, kNN on the embedding, BM25 on
   the words, kNN on the context vectors) and send them as one ``_msearch`` of ranked ids (`requests`);
4. keep the candidates a pattern with variables matches (`pattern_filter`);
5. blend each side's lists and fuse the sides (`fusion`), with the optional MaxSim rerank of the formula side
   (`maxsim`; where the index stores node vectors and every node's plugin has the MaxSim window rescore, its scores
   come with the formula lists of step 3);
6. cut the page (`results.select_page`), fetch its equations with highlights (`requests`) and mark what of each
   formula matched (`highlight`).

Elasticsearch's errors become `SearchError`s in `errors`; the paper and equation views are `views`. LaTeX that does
not parse never fails the search: `SearchResults.latex_error` carries the converter's message, the structural list
still searches the terms read from the LaTeX itself, and keyword results still come back.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from elasticsearch import Elasticsearch
from eqsearch.engine.index.mappings import STRUCTURE_FIELD, VECTOR_FIELD, alias_name
from eqsearch.engine.model.patterns import read_query_variables
from eqsearch.engine.model.structure import FormulaStructure
from eqsearch.engine.search.errors import EquationNotFoundError, SearchError, call
from eqsearch.engine.search.fusion import Fused, blend_sides, evidence_fusion, linear_fusion, reciprocal_rank_fusion
from eqsearch.engine.search.highlight import formula_highlight
from eqsearch.engine.search.index_meta import META_SECONDS, IndexMeta
from eqsearch.engine.search.maxsim import Brought, MaxSimStage
from eqsearch.engine.search.pattern_filter import FORMULA_LISTS, pattern_matches
from eqsearch.engine.search.plugin import PluginUse
from eqsearch.engine.search.query import (
    HybridQuery,
    candidate_window,
    knn_body,
    ranking_searches,
    structure_rerank_window,
)
from eqsearch.engine.search.query_formula import QueryFormula, QueryFormulas, weigh_parts
from eqsearch.engine.search.rankers import DEFAULT_RANKER, FormulaRanking, get_ranker
from eqsearch.engine.search.requests import RankedLists, fetch_page, ranked_lists
from eqsearch.engine.search.results import EquationHit, PaperGroup, SearchResults, equation_hit, group_hits, select_page
from eqsearch.engine.search.termstats import RareRule, TermStatistics, rarest_terms
from eqsearch.engine.search.views import equation_view, paper_view

if TYPE_CHECKING:
    from eqsearch.engine.latex.converter import ConversionResult
    from eqsearch.engine.model.encoder import Encoder
    from eqsearch.engine.model.nodes import NodeEncoder
    from eqsearch.engine.model.structure_bag import StructureBagEncoder
    from eqsearch.engine.model.text import TextEncoder

__all__ = ["META_SECONDS", "EquationNotFoundError", "SearchError", "SearchService"]

#: The channel each ranked list stands for, as hits report it (a paper's best equation for the words, from the
#: ``papers`` list, was found by the words' BM25 as the ``text`` list's are).
CHANNEL_OF_LIST = {
    "structure": "structure",
    "embedding": "embedding",
    "text": "text",
    "papers": "text",
    "context": "context",
}


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
        structure_encoder: the structure-bag encoder of a ranking's structural kNN first stage
            (`FormulaRanking.structure_knn`); used on an index filled by the same bundle (its ``_meta``), else the
            structural list starts from the rare terms.
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
        structure_encoder: StructureBagEncoder | None = None,
    ) -> None:
        self.client = client
        self.structure_encoder = structure_encoder if ranking is not None and ranking.structure_knn else None
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
            normalise=self.meta.normalises_vectors,
            size=formula_cache_size,
            structure_encoder=self.structure_encoder,
        )
        self.term_statistics = TermStatistics(client.termvectors, STRUCTURE_FIELD)
        self.plugin = PluginUse(client, plugin)
        self.maxsim = MaxSimStage(
            client, self.equations_alias, self.ranking, self.plugin, self.meta, self.node_encoder, node_cache_size
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
        warnings: list[str] = []
        formula = self.formulas.get(read_query_variables(query.latex or "")) if query.has_formula else None
        latex_error = formula.latex_error if formula is not None else None
        if formula is not None and formula.approximation:
            warnings.append(formula.approximation)
        list_depth, past = candidate_window(query, candidate_depth=self.candidate_depth)
        if past:
            warnings.append(
                f"a search ranks its best {list_depth} equations; page {query.page} starts past them (refine the "
                "query, or add keywords or filters, to see others)"
            )
        maxsim = formula is not None and formula.nodes is not None and self.maxsim.runs(query)
        if maxsim:
            list_depth = max(list_depth, self.ranking.maxsim_window)  # the lists fill the MaxSim window
        searches = self._searches(query, formula, list_depth, warnings)
        maxsim_window = self.maxsim.ask_in_lists(searches, formula.nodes) if maxsim else None
        if not searches:
            return self._results([], [], 0, query, latex_error, warnings, began)
        try:
            found = ranked_lists(self.client, self.equations_alias, searches)
        except SearchError as error:
            if not self.plugin.refused(error):
                raise
            warnings.append(self.plugin.support.note)
            found = ranked_lists(self.client, self.equations_alias, self._searches(query, formula, list_depth, []))
            maxsim_window = None
        # the MaxSim scores the lists brought, and which hits they scored (before the pattern filter)
        brought = None if maxsim_window is None else self.maxsim.brought(found.lists, found.maxsim, maxsim_window)
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
        fused = self._fuse(query, self._sides(found, formula.nodes if maxsim else None, brought), found)
        page_items, total = select_page(fused, found.paper_of, query, found.text_total)
        hits = self._page_hits(page_items, query, formula, channels_of(found.lists))
        groups = group_hits(hits) if query.group_by_paper else []
        return self._results(hits, groups, total, query, latex_error, warnings, began)

    def _searches(
        self, query: HybridQuery, formula: QueryFormula | None, list_depth: int, warnings: list[str]
    ) -> list[tuple[str, dict[str, Any]]]:
        """The ranked lists' request bodies, after checking what the index allows (its encoder, its mapping
        version); a list the index cannot serve is left out with a warning."""
        vector = formula.vector if formula is not None else None
        structure = formula.structure if formula is not None else None
        if vector is not None and self.ranking.embedding:
            mismatch = self.meta.encoder_mismatch(getattr(self.encoder, "identity", None))
            if mismatch is not None:
                warnings.append(mismatch)
                vector = None
        pattern = formula is not None and formula.pattern.has_variables
        structure_depth = max(list_depth, self.pattern_candidates) if pattern else list_depth
        structure_vector = self._structure_vector(formula) if query.formula_weight > 0 else None
        rerank_window = structure_rerank_window(self.ranking, structure_depth)
        forward_index = self.plugin.forward_index(self.equations_alias)
        rare_rule = None  # where the shard can choose the rare terms, no _termvectors first
        if (
            structure_vector is None
            and self.ranking.first_stage_share
            and self.plugin.shard_rare_terms(self.equations_alias)
        ):
            rare_rule = RareRule(self.ranking.first_stage_share, rerank_window)
        first_stage = (
            self._first_stage(
                structure,
                rerank_window,
                self.ranking.structure_knn_rare if structure_vector is not None else self.ranking.first_stage_share,
            )
            if query.formula_weight > 0 and rare_rule is None
            else None
        )
        return ranking_searches(
            query,
            vector,
            window=list_depth,
            num_candidates_factor=self.num_candidates_factor,
            structure=structure,
            ranking=self.ranking,
            structure_window=structure_depth if pattern else None,
            context_vector=self._context_vector(query, warnings),
            first_stage=first_stage,
            rerank_fields=self._rerank_fields(structure, query, warnings),
            plugin=self.plugin.active,
            structure_vector=structure_vector,
            forward_index=forward_index,
            rare_rule=rare_rule,
            term_at_a_time=rare_rule is not None and self.plugin.term_at_a_time(self.equations_alias),
        )

    def _structure_vector(self, formula: QueryFormula | None) -> np.ndarray | None:
        """The query's structure-bag vector when the structural list may start from kNN on the index's: the
        ranking has that first stage and the index's vectors come from the same bundle (its ``_meta``)."""
        if formula is None or formula.structure_vector is None or self.structure_encoder is None:
            return None
        return formula.structure_vector if self.meta.structure_encoder() == self.structure_encoder.identity else None

    def _sides(
        self, found: RankedLists, query_nodes: np.ndarray | None, brought: Brought | None = None
    ) -> dict[str, list[tuple[str, float]]]:
        """The ``formula`` side (structure and embedding lists, blended by the ranking's weights, then reranked by
        MaxSim against the query formula's ``query_nodes``, None where MaxSim does not run: from the scores the lists
        ``brought``, where they did) and the ``text`` side (the words' BM25 and the context lists)."""
        sides = blend_sides(
            found.lists,
            {
                "formula": {"structure": self.ranking.structure, "embedding": self.ranking.embedding},
                "text": {"text": 1.0 - self.ranking.context, "context": self.ranking.context},
            },
        )
        if query_nodes is not None and sides.get("formula"):
            sides["formula"] = self.maxsim.rerank(sides["formula"], query_nodes, brought)
        return sides

    def _fuse(self, query: HybridQuery, sides: dict[str, list[tuple[str, float]]], found: RankedLists) -> list[Fused]:
        """The two sides fused, weighted by the query's balance: by the evidence fusion (the words' paper-level and
        equation-level evidence re-weighing the formula's candidates), reciprocal rank fusion or a linear blend."""
        w = query.formula_weight
        if query.fusion == "evidence":
            return evidence_fusion(
                sides.get("formula", []),
                sides.get("text", []),
                found.lists.get("papers", []),
                found.paper_of,
                weight=w if sides.get("formula") else 0.0,
                paper_share=self.paper_share if sides.get("formula") else self.words_paper_share,
            )
        if query.fusion == "rrf":
            return reciprocal_rank_fusion(sides, k=self.rrf_k, weights={"formula": 2 * w, "text": 2 * (1 - w)})
        return linear_fusion(sides, {"formula": w, "text": 1 - w})

    def _page_hits(
        self,
        page_items: list[Fused],
        query: HybridQuery,
        formula: QueryFormula | None,
        channels: dict[str, tuple[str, ...]],
    ) -> list[EquationHit]:
        """The page's equations fetched (with highlights of the keywords) and, for a formula query, marked with
        what of each formula matched it."""
        documents = fetch_page(
            self.client,
            self.equations_alias,
            [item.doc_id for item in page_items],
            query.keywords if query.has_keywords else None,
        )
        hits = [
            equation_hit(item, documents[item.doc_id], channels.get(item.doc_id, ()))
            for item in page_items
            if item.doc_id in documents  # deleted between the two requests: dropped, not an error
        ]
        if formula is not None and query.highlight:
            hits = [replace(hit, formula_highlight=formula_highlight(formula, hit.mathml)) for hit in hits]
        return hits

    def _rerank_fields(self, structure: FormulaStructure | None, query: HybridQuery, warnings: list[str]) -> bool:
        """Whether the index holds what the structural rerank needs (mapping version 5: the equations' sizes, spans
        with renamed variables). On an index made before, the rerank matches spans with the letters kept and weighs
        them by the query's size, and a warning says how an administrator upgrades it."""
        if not (self.ranking.rerank_window and structure is not None and query.formula_weight > 0):
            return False
        present, warning = self.meta.rerank_fields()
        if warning is not None:
            warnings.append(warning)
        return present

    def _first_stage(
        self, structure: FormulaStructure | None, window: int, share: float | None = None
    ) -> list[str] | None:
        """The query's rarest structural terms, which the structural list matches first, when the ranking has a
        first stage and the query more terms than it takes (`engine.search.termstats`), enough of them to fill the
        structural list's rerank ``window``; None: all terms. ``share``: the ranking's ``first_stage_share`` unless
        given (the rare terms joined to a kNN first stage, `FormulaRanking.structure_knn_rare`); 0: none."""
        share = self.ranking.first_stage_share if share is None else share
        if not share or structure is None or not structure.tokens:
            return None
        frequencies = self.term_statistics.frequencies(self.equations_alias, structure.tokens)
        if frequencies is None:
            return None
        return rarest_terms(structure.tokens, frequencies, max_share=share, min_matches=window)

    def _context_vector(self, query: HybridQuery, warnings: list[str]) -> np.ndarray | None:
        """The keywords' text embedding for the context channel, or None when the query or the ranking has no use
        for it, or the index holds another text encoder's vectors (then a warning says so)."""
        if not (self.ranking.context > 0 and query.has_keywords and query.formula_weight < 1):
            return None
        if self.text_encoder is None:
            return None
        mismatch = self.meta.text_encoder_mismatch(self.text_encoder.identity)
        if mismatch is not None:
            warnings.append(mismatch)
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
        body = knn_body(
            np.asarray(vector, dtype=np.float32),
            size,
            [],
            num_candidates_factor=self.num_candidates_factor,
            exclude=[eq_id],
        )
        hits_raw = call(self.client.search, index=self.equations_alias, body=body)["hits"]["hits"]
        hits = [
            equation_hit(Fused(raw["_id"], score, {"formula": score}, {"formula": rank}), raw, ("embedding",))
            for rank, (raw, score) in enumerate(((raw, float(raw["_score"] or 0.0)) for raw in hits_raw), start=1)
        ]
        return self._results(hits, [], len(hits), query, None, [], began)

    def get_equation(self, eq_id: str) -> dict[str, Any] | None:
        """The stored equation document (vectors excluded), or None when absent."""
        return equation_view(self.client, self.equations_alias, eq_id)

    def get_paper(self, paper_id: str) -> dict[str, Any] | None:
        """A paper with its equations by section and its citations (`engine.search.views.paper_view`)."""
        return paper_view(self.client, self.papers_alias, self.equations_alias, paper_id)

    def render(self, latex: str) -> ConversionResult:
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
        latex_error: str | None,
        warnings: list[str],
        began: float,
    ) -> SearchResults:
        return SearchResults(
            hits=hits,
            groups=groups,
            total=total,
            page=query.page,
            size=query.size,
            latex_error=latex_error,
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
