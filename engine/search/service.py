"""Hybrid search: runs a `HybridQuery` against one deployment's indices, fuses the ranked lists, builds the page.

A query's formula goes LaTeX -> MathML (`KatexConverter`), then into the channels of the service's `FormulaRanking`
(`engine.search.rankers`): its structural terms (`engine.model.structure`; from the LaTeX when KaTeX refuses it) to
BM25 on the equations' structure, and its vector (`Encoder`) to kNN; its keywords go to BM25 on the text. The ranked
lists run as one ``_msearch`` that returns ranked ids only and are fused here (`engine.search.fusion`): the formula
channels by a normalised linear blend into the formula side, which is fused with the keywords by reciprocal rank
fusion or a linear blend weighted by `HybridQuery.formula_weight`. A ranker with a ``context`` weight also embeds
the keywords with the text encoder (`engine.model.text`) and searches the equations' context vectors by kNN: that
list is blended with the keywords' BM25 into the keyword side the same way. So it works on any licence and on the
minimal distribution; a second request fetches the page's equations with highlights. The request bodies come from
`engine.search.query`, the hits and pages from `engine.search.results`; this module holds what needs the client: the
requests, the index's ``_meta`` and the cache of converted and encoded query formulas.

LaTeX that does not parse never fails the search: `SearchResults.latex_error` carries the converter's message, the
structural channel still searches the terms read from the LaTeX itself, and keyword results still come back.

A formula with variables (``?a^2 + ?b^2 = ?c^2``, `engine.model.patterns`) is a pattern: its structural terms leave
the variables out, the structural list reaches `SearchService.pattern_candidates` deep, and the formula lists keep
only the candidates the pattern matches by unification on their layout trees (fetched as MathML in one request):
a variable query asks for that shape, as zbMATH's does, so a near miss is not shown as a hit. Every hit of a formula
query then says which elements of its MathML matched (`EquationHit.formula_highlight`): the pattern's match and
its variables' bindings, or, without variables, the largest sub-expression it shares with the query.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from elasticsearch import ApiError, Elasticsearch, NotFoundError
from elasticsearch import ConnectionError as EsConnectionError
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.index.mappings import RERANK_FIELDS_SINCE, STRUCTURE_FIELD, VECTOR_FIELD, alias_name
from eqsearch.engine.model.patterns import (
    FormulaHighlight,
    QueryPattern,
    SharedSubexpressions,
    mark_variables,
    match_pattern,
    pattern_highlight,
    pattern_structure,
    read_query_variables,
    variables_as_letters,
)
from eqsearch.engine.model.structure import (
    QUERY_SPAN_KINDS,
    FormulaStructure,
    LayoutNode,
    layout_nodes,
    parse_layout,
    parse_layout_latex,
    structure_of_layout,
)
from eqsearch.engine.search.fusion import Fused, linear_fusion, reciprocal_rank_fusion
from eqsearch.engine.search.maxsim import NodeVectorCache, maxsim_rerank, maxsim_scores
from eqsearch.engine.search.query import (
    MAX_RESULT_WINDOW,
    SOURCE_EXCLUDES,
    HybridQuery,
    candidate_window,
    knn_body,
    page_body,
    ranking_searches,
    structure_rescore_window,
)
from eqsearch.engine.search.rankers import DEFAULT_RANKER, FormulaRanking, get_ranker
from eqsearch.engine.search.results import (
    EquationHit,
    PaperGroup,
    SearchResults,
    equation_hit,
    group_hits,
    select_page,
)
from eqsearch.engine.search.termstats import TermStatistics, rarest_terms

if TYPE_CHECKING:
    from eqsearch.engine.latex.converter import ConversionResult
    from eqsearch.engine.model.encoder import Encoder
    from eqsearch.engine.model.nodes import NodeEncoder
    from eqsearch.engine.model.text import TextEncoder

__all__ = ["META_SECONDS", "EquationNotFoundError", "SearchError", "SearchService"]

#: How long the equations index's ``_meta`` (similarity, encoder) is trusted before it is read again.
META_SECONDS = 30.0


class SearchError(EqsearchError):
    """Elasticsearch refused a search or did not answer."""

    exit_code = 9


class EquationNotFoundError(EqsearchError):
    """No equation has the id asked for (or it has no vector)."""

    exit_code = 4


# Only what the client reads comes back: less for the node to serialise and for the client to parse.
_RANKING_RESPONSE_FIELDS = [
    "responses.status",  # keeps every response in the array: a filtered-out empty one would shift the others
    "responses.hits.hits._score",
    "responses.hits.hits.fields",
    "responses.hits.total.value",
    "responses._shards.failed",
    "responses._shards.total",
    "responses.error",
]
_PAGE_RESPONSE_FIELDS = ["hits.hits._id", "hits.hits._source", "hits.hits.highlight"]
#: What the pattern match reads of each candidate.
_PATTERN_SOURCE = ["eq_id", "mathml", "latex"]


@dataclass(frozen=True)
class _QueryFormula:
    """A query formula made ready once (and cached): its conversion, vector, structural terms, layout tree
    (variables marked; what hits are matched against) and variables."""

    result: ConversionResult
    vector: np.ndarray | None
    structure: FormulaStructure | None
    layout: list[LayoutNode]
    pattern: QueryPattern
    shared: SharedSubexpressions | None  # the query's sub-expressions, for hits' highlights (no variables only)
    nodes: np.ndarray | None = None  # the query's node vectors, for the MaxSim rerank (`engine.search.maxsim`)


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
        group_oversample: when grouping, how many equations to fetch per requested group.
        candidate_depth: the least number of candidates each list (kNN, BM25) contributes to fusion, whatever the
            page, so that consecutive pages (the first five, at 10 a page) are slices of one ranking. 50 rather
            than 100 cost 13% less CPU per hybrid query and moved 0.1% of first-page hits (benchmarks/search.md).
        formula_cache_size: how many converted and encoded query formulas to keep (least recently used dropped
            first; 0 keeps none). The next page of a search, or a formula many people look up, then costs neither
            KaTeX nor the encoder. Conversion failures are not kept.
        ranking: how the formula side is ranked (default: the registered `DEFAULT_RANKER`).
        pattern_candidates: how deep the structural list of a query with variables reaches: the candidates its
            pattern is matched against (with the kNN list's), fetched and unified client-side.
        text_encoder: embeds keywords for the context channel (`engine.model.text`); None loads the shipped one
            when the ranking gives the context a weight.
        node_encoder: the node vectors of the MaxSim rerank (`engine.model.nodes`); None loads the sidecar of the
            encoder's bundle when the ranking has a MaxSim window.
        node_cache_size: how many candidates' node vectors to keep (computed from their MathML at rerank time).
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
        group_oversample: int = 5,
        candidate_depth: int = 50,
        formula_cache_size: int = 1024,
        ranking: FormulaRanking | None = None,
        pattern_candidates: int = 300,
        text_encoder: TextEncoder | None = None,
        node_encoder: NodeEncoder | None = None,
        node_cache_size: int = 8192,
    ) -> None:
        self.client = client
        self.encoder = encoder
        self.converter = converter
        self.equations_alias = alias_name(index_prefix, "equations")
        self.papers_alias = alias_name(index_prefix, "papers")
        self.num_candidates_factor = num_candidates_factor
        self.rrf_k = rrf_k
        self.group_oversample = group_oversample
        self.candidate_depth = candidate_depth
        self.formula_cache_size = formula_cache_size
        self.ranking = ranking or get_ranker(DEFAULT_RANKER)
        self.pattern_candidates = pattern_candidates
        self.text_encoder = text_encoder
        if self.text_encoder is None and self.ranking.context > 0:
            from eqsearch.engine.model.text import load_text_encoder

            self.text_encoder = load_text_encoder()
        self.node_encoder = node_encoder
        if self.node_encoder is None and self.ranking.maxsim_window > 0:
            from eqsearch.engine.model.nodes import load_node_encoder

            bundle = getattr(getattr(encoder, "manifest", None), "path", None)
            self.node_encoder = load_node_encoder(bundle, output=self.ranking.maxsim_nodes)
        self.node_vectors = NodeVectorCache(self._candidate_nodes, node_cache_size)
        self._meta: dict[str, Any] | None = None
        self._meta_read = 0.0
        self._formulas: OrderedDict[str, _QueryFormula] = OrderedDict()
        self._formulas_lock = threading.Lock()  # web servers search from several threads
        self.term_statistics = TermStatistics(client.termvectors, STRUCTURE_FIELD)

    # -- public ------------------------------------------------------------------------------------------------
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
        latex_error = None
        vector = None
        structure = None
        formula = None
        if query.has_formula:
            formula = self._formula(read_query_variables(query.latex or ""))
            result, vector, structure = formula.result, formula.vector, formula.structure
            if result.mathml is None:
                latex_error = result.message or f"the LaTeX could not be converted ({result.reason})"
            elif result.status == "approximate" and result.message:
                warnings.append(f"the formula was converted approximately: {result.message}")
            if vector is not None and self.ranking.embedding and (mismatch := self._encoder_mismatch()) is not None:
                warnings.append(mismatch)
                vector = None
        window, capped = candidate_window(
            query, candidate_depth=self.candidate_depth, group_oversample=self.group_oversample
        )
        if capped:
            warnings.append(f"results are limited to the first {MAX_RESULT_WINDOW} candidates per list")
        pattern = formula is not None and formula.pattern.has_variables
        context_vector = self._context_vector(query, warnings)
        window = max(window, self.ranking.maxsim_window)  # lists as deep as the MaxSim window, which they fill
        depth = max(window, self.pattern_candidates) if pattern else window
        first_stage = (
            self._first_stage(structure, structure_rescore_window(self.ranking, depth))
            if query.formula_weight > 0
            else None
        )
        searches = ranking_searches(
            query,
            vector,
            window=window,
            num_candidates_factor=self.num_candidates_factor,
            structure=structure,
            ranking=self.ranking,
            structure_window=depth if pattern else None,
            context_vector=context_vector,
            first_stage=first_stage,
            rerank_fields=self._rerank_fields(structure, query, warnings),
        )
        if not searches:
            return self._results([], [], 0, query, latex_error, warnings, began)
        lists, paper_of, text_total, missing = self._ranked_lists(searches)
        if missing:
            warnings.append(
                f"partial results: {missing} shard searches did not answer (a node of the cluster is down or "
                "recovering); some equations may be missing"
            )
        if pattern and formula is not None:
            lists = self._pattern_matches(lists, formula.layout)
            if not any(lists.get(name) for name in ("structure", "formula")):
                warnings.append(
                    f"no formula among the {self.pattern_candidates} nearest candidates matches the pattern "
                    f"{query.latex}; try fewer symbols around the variables"
                )
        channels = _channels_of(lists)
        lists = self._formula_side(lists)
        if formula is not None and formula.nodes is not None:
            lists = self._maxsim_rerank(lists, formula.nodes)
        if query.fusion == "rrf":
            w = query.formula_weight
            fused = reciprocal_rank_fusion(lists, k=self.rrf_k, weights={"formula": 2 * w, "text": 2 * (1 - w)})
        else:
            fused = linear_fusion(lists, {"formula": query.formula_weight, "text": 1 - query.formula_weight})
        page_items, total = select_page(fused, paper_of, query, text_total)
        documents = self._fetch_page(
            [item.doc_id for item in page_items], query.keywords if query.has_keywords else None
        )
        hits = [
            equation_hit(item, documents[item.doc_id], channels.get(item.doc_id, ()))
            for item in page_items
            if item.doc_id in documents  # deleted between the two requests: dropped, not an error
        ]
        if formula is not None and query.highlight:
            hits = [replace(hit, formula_highlight=_highlight(formula, hit.mathml)) for hit in hits]
        groups = group_hits(hits) if query.group_by_paper else []
        return self._results(hits, groups, total, query, latex_error, warnings, began)

    def _formula_side(self, lists: dict[str, list[tuple[str, float]]]) -> dict[str, list[tuple[str, float]]]:
        """The structural and kNN lists blended into one ``formula`` list (a min-max normalised linear blend
        weighted by the ranking), and the keywords' BM25 and context lists into one ``text`` list the same way; a
        lone list of a side is taken as it is."""
        sides = {
            "formula": {"structure": self.ranking.structure, "formula": self.ranking.embedding},
            "text": {"text": 1.0 - self.ranking.context, "context": self.ranking.context},
        }
        out: dict[str, list[tuple[str, float]]] = {}
        for side, weights in sides.items():
            present = {name: lists[name] for name in weights if name in lists}
            if len(present) == 1:
                out[side] = next(iter(present.values()))
            elif present:
                out[side] = [(item.doc_id, item.score) for item in linear_fusion(present, weights)]
        return out

    def _rerank_fields(self, structure: FormulaStructure | None, query: HybridQuery, warnings: list[str]) -> bool:
        """Whether the index holds what the structural rerank needs (mapping version 5: the equations' sizes, spans
        with renamed variables). On an index made before, the rerank matches spans with the letters kept and weighs
        them by the query's size, and a warning says how an administrator upgrades it."""
        if not (self.ranking.rerank_window and structure is not None and query.formula_weight > 0):
            return False
        version = self._mapping_meta().get("mapping_version")
        if version is None or version >= RERANK_FIELDS_SINCE:
            return version is not None
        warnings.append(
            f"the structural rerank matches sub-expressions by their letters and weighs them by the query's size "
            f"only: the index (mapping version {version}) predates renamed variables and the equations' sizes; an "
            "administrator migrates it with 'eqsearch index migrate equations'"
        )
        return False

    def _first_stage(self, structure: FormulaStructure | None, window: int) -> list[str] | None:
        """The query's rarest structural terms, which the structural list matches first, when the ranking has a
        first stage and the query more terms than it takes (`engine.search.termstats`), enough of them to fill the
        structural list's ``window``; None: all terms."""
        share = self.ranking.first_stage_share
        if not share or structure is None or not structure.tokens:
            return None
        frequencies = self.term_statistics.frequencies(self.equations_alias, structure.tokens)
        if frequencies is None:
            return None
        return rarest_terms(structure.tokens, frequencies, max_share=share, min_matches=window)

    def _maxsim_rerank(
        self, lists: dict[str, list[tuple[str, float]]], query_nodes: np.ndarray
    ) -> dict[str, list[tuple[str, float]]]:
        """The formula side's top ``maxsim_window`` reranked by MaxSim of the query's node vectors against theirs
        (`engine.search.maxsim`); the candidates' node vectors come from their MathML, through the cache."""
        ranking = lists.get("formula")
        if not ranking or self.ranking.maxsim_window <= 0:
            return lists
        window = [eq_id for eq_id, _ in ranking[: self.ranking.maxsim_window]]
        nodes = self.node_vectors.get(window)
        scores = maxsim_scores(
            query_nodes,
            [nodes.get(eq_id, np.zeros((0, 1))) for eq_id in window],
            symmetric=self.ranking.maxsim_symmetric,
        )
        maxsim = {eq_id: float(score) for eq_id, score in zip(window, scores, strict=True)}
        reranked = maxsim_rerank(ranking, maxsim, window=len(window), weight=self.ranking.maxsim_weight)
        return {**lists, "formula": reranked}

    def _candidate_nodes(self, eq_ids: list[str]) -> dict[str, np.ndarray]:
        """The node vectors of stored equations, from their MathML fetched in one request (those without MathML,
        or whose MathML does not featurize, are left out)."""
        from eqsearch.engine.model.featurize import MathMLError

        if self.node_encoder is None:
            return {}
        response = self._call(
            self.client.search,
            index=self.equations_alias,
            body={
                "query": {"terms": {"eq_id": eq_ids}},
                "size": len(eq_ids),
                "_source": {"includes": ["eq_id", "mathml"]},
                "track_total_hits": False,
            },
            filter_path=["hits.hits._source"],
        )
        sources = [hit["_source"] for hit in (response.get("hits") or {}).get("hits") or ()]
        found = [(s["eq_id"], s["mathml"]) for s in sources if s.get("mathml")]
        try:
            vectors = self.node_encoder.encode([mathml for _, mathml in found])
        except MathMLError:  # one bad document: encode the others one by one
            vectors = []
            for _, mathml in found:
                try:
                    vectors.extend(self.node_encoder.encode([mathml]))
                except MathMLError:
                    vectors.append(np.zeros((0, self.node_encoder.dim), dtype=np.float32))
        return {eq_id: v for (eq_id, _), v in zip(found, vectors, strict=True) if len(v)}

    def _context_vector(self, query: HybridQuery, warnings: list[str]) -> np.ndarray | None:
        """The keywords' text embedding for the context channel, or None when the query or the ranking has no use
        for it, or the index holds another text encoder's vectors (then a warning says so)."""
        if not (self.ranking.context > 0 and query.has_keywords and query.formula_weight < 1):
            return None
        if self.text_encoder is None:
            return None
        recorded = self._mapping_meta().get("text_encoder")
        if recorded is not None and recorded != self.text_encoder.identity:
            warnings.append(
                f"the context channel is off: the index holds context vectors of {recorded}, but this server embeds "
                f"text with {self.text_encoder.identity}; an administrator migrates the index with 'eqsearch index "
                "migrate equations' (keyword search still works)"
            )
            return None
        vector = self.text_encoder.encode([query.keywords or ""])[0]
        return vector if vector.any() else None

    def _pattern_matches(
        self, lists: dict[str, list[tuple[str, float]]], pattern: list[LayoutNode]
    ) -> dict[str, list[tuple[str, float]]]:
        """The ranked lists with the formula lists cut to the candidates the pattern matches (their order kept).

        The candidates (both formula lists) are read in one request, their MathML (or LaTeX) only, and unified
        with the pattern (`match_pattern`, bounded per candidate). The request keeps only those whose structural
        terms hold every symbol the pattern names (no other can match), so that the client parses fewer.
        """
        pool = list(dict.fromkeys(eq_id for name in ("structure", "formula") for eq_id, _ in lists.get(name, ())))
        if not pool:
            return lists
        symbols = sorted({node.label for node in layout_nodes(pattern) if node.variable is None})
        response = self._call(
            self.client.search,
            index=self.equations_alias,
            body={
                "query": {
                    "bool": {
                        "filter": [
                            {"terms": {"eq_id": pool}},
                            {
                                "bool": {  # a document without structural terms (an old index) is parsed anyway
                                    "should": [
                                        {"bool": {"filter": [{"term": {STRUCTURE_FIELD: s}} for s in symbols]}},
                                        {"bool": {"must_not": [{"exists": {"field": STRUCTURE_FIELD}}]}},
                                    ],
                                    "minimum_should_match": 1,
                                }
                            },
                        ]
                    }
                },
                "size": len(pool),
                "_source": {"includes": _PATTERN_SOURCE},
                "track_total_hits": False,
            },
            filter_path=["hits.hits._source"],
        )
        matched = set()
        for hit in (response.get("hits") or {}).get("hits") or ():
            source = hit["_source"]
            if match_pattern(pattern, _layout(source.get("mathml"), source.get("latex"))) is not None:
                matched.add(source["eq_id"])
        return {
            name: [(eq_id, score) for eq_id, score in ranking if eq_id in matched]
            if name in ("structure", "formula")
            else ranking
            for name, ranking in lists.items()
        }

    def _fetch_page(self, eq_ids: list[str], keywords: str | None) -> dict[str, dict[str, Any]]:
        """Sources (vector excluded) and, with keywords, highlights of the page's equations, in one request; by
        ``eq_id``."""
        if not eq_ids:
            return {}
        response = self._call(
            self.client.search,
            index=self.equations_alias,
            body=page_body(eq_ids, keywords),
            filter_path=_PAGE_RESPONSE_FIELDS,
        )
        hits = (response.get("hits") or {}).get("hits") or []
        return {hit["_source"]["eq_id"]: hit for hit in hits}

    def more_like_equation(self, eq_id: str, size: int = 10) -> SearchResults:
        """Equations nearest to a stored equation's vector, the equation itself excluded.

        Args:
            eq_id: the equation's document id.
            size: how many neighbours (1..100).

        Returns:
            The neighbours, best first (all matched by ``formula``).

        Raises:
            EquationNotFoundError: no equation has that id, or it has no vector.
            SearchError: Elasticsearch refused the search or is unreachable.
        """
        began = time.perf_counter()
        query = HybridQuery(size=size)
        response = self._call(
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
        body = knn_body(
            np.asarray(vector, dtype=np.float32),
            size,
            [],
            num_candidates_factor=self.num_candidates_factor,
            exclude=[eq_id],
        )
        hits_raw = self._call(self.client.search, index=self.equations_alias, body=body)["hits"]["hits"]
        hits = [
            equation_hit(Fused(raw["_id"], score, {"formula": score}, {"formula": rank}), raw)
            for rank, (raw, score) in enumerate(((raw, float(raw["_score"] or 0.0)) for raw in hits_raw), start=1)
        ]
        return self._results(hits, [], len(hits), query, None, [], began)

    def get_equation(self, eq_id: str) -> dict[str, Any] | None:
        """The stored equation document (vector excluded), or None when absent."""
        try:
            response = self.client.get(index=self.equations_alias, id=eq_id, source_excludes=SOURCE_EXCLUDES)
        except NotFoundError:
            return None
        return response["_source"]

    def get_paper(self, paper_id: str) -> dict[str, Any] | None:
        """A paper with its equations by section and its citations.

        Returns:
            The paper document plus ``sections`` (list of ``{"index", "title", "equations": [...]}`` in document
            order, equations without vectors), ``citations_out`` (``[{"paper_id", "indexed", "title"}]``) and
            ``cited_by`` (``[{"paper_id", "title"}]`` of indexed papers that cite it); None when no paper has that id.
        """
        try:
            paper = dict(self.client.get(index=self.papers_alias, id=paper_id)["_source"])
        except NotFoundError:
            return None
        equations = self._call(
            self.client.search,
            index=self.equations_alias,
            # the displays: a paper's inline formulas (thousands in a long one) are counted, not listed
            query={"bool": {"filter": [{"term": {"paper_id": paper_id}}], "must_not": [{"term": {"inline": True}}]}},
            sort=[{"number": "asc"}],
            size=10_000,
            source_excludes=SOURCE_EXCLUDES,
        )["hits"]["hits"]
        outline = {s.get("index"): s for s in paper.get("sections") or []}
        sections: dict[int, dict[str, Any]] = {}
        for hit in equations:
            eq = hit["_source"]
            index = int(eq.get("section") or 0)
            title = (outline.get(index) or {}).get("title") or eq.get("section_title") or ""
            sections.setdefault(index, {"index": index, "title": title, "equations": []})["equations"].append(eq)
        paper["sections"] = [sections[i] for i in sorted(sections)]
        cited = list(dict.fromkeys(paper.get("citations_out") or []))
        indexed: dict[str, str] = {}
        if cited:
            docs = self._call(self.client.mget, index=self.papers_alias, ids=cited, source_includes=["title"])["docs"]
            indexed = {d["_id"]: d["_source"].get("title") or "" for d in docs if d.get("found")}
        paper["citations_out"] = [{"paper_id": c, "indexed": c in indexed, "title": indexed.get(c)} for c in cited]
        citing = self._call(
            self.client.search,
            index=self.papers_alias,
            query={"term": {"citations_out": paper_id}},
            size=1000,
            source_includes=["paper_id", "title"],
        )["hits"]["hits"]
        paper["cited_by"] = [{"paper_id": h["_id"], "title": h["_source"].get("title") or ""} for h in citing]
        return paper

    def render(self, latex: str) -> ConversionResult:
        """LaTeX -> MathML with the service's converter (for previews); never raises on bad LaTeX."""
        return self.converter.convert(latex, "equation", ())

    def analyzer(self) -> str:
        """The text analyzer of the equations index (``english`` or ``standard``)."""
        return str(self._mapping_meta().get("analyzer", "standard"))

    # -- private -----------------------------------------------------------------------------------------------
    def _mapping_meta(self) -> dict[str, Any]:
        """The equations index's ``_meta``, re-read every `META_SECONDS`: a migration may move the alias."""
        now = time.monotonic()
        if self._meta is None or now - self._meta_read > META_SECONDS:
            try:
                mappings = self.client.indices.get_mapping(index=self.equations_alias)
            except NotFoundError:
                return {}
            meta = next(iter(mappings.values()))["mappings"].get("_meta", {})
            if self._meta is not None and meta != self._meta:
                with self._formulas_lock:  # cached vectors were normalised for the index before
                    self._formulas.clear()
                self.node_vectors.clear()
            self._meta, self._meta_read = meta, now
        return self._meta

    def _encoder_mismatch(self) -> str | None:
        """Why this service's vectors cannot be compared with the index's, or None when they can.

        An index records the encoder that filled it; one made before identities were recorded is trusted.
        """
        recorded = self._mapping_meta().get("encoder")
        identity = getattr(self.encoder, "identity", None)
        if recorded is None or identity is None or recorded == identity:
            return None
        return (
            f"the formula embedding is off: the index holds vectors of the model {recorded}, but this server encodes "
            f"formulas with {identity}; an administrator re-embeds the index with 'eqsearch index migrate "
            "equations --reencode' (keyword search still works)"
        )

    def _formula(self, pattern: QueryPattern) -> _QueryFormula:
        """The conversion of a query's LaTeX, its vector (None when it did not convert, or the ranking has no
        embedding), its structure (from the LaTeX when it did not convert; None when the ranking has no structure)
        and its layout tree, from the cache if there.

        A formula with variables converts with placeholders (`QueryPattern.katex_latex`); its structure leaves the
        variables out, and its vector is that of the formula with each variable read as a letter."""
        latex = pattern.latex
        with self._formulas_lock:
            cached = self._formulas.get(latex)
            if cached is not None:
                self._formulas.move_to_end(latex)
                return cached
        result = self.render(pattern.katex_latex)
        # the structure of the same layout tree that `formula_structure` reads (MathML, else the LaTeX)
        layout = mark_variables(_layout(result.mathml, pattern.fallback_latex), pattern)
        structure = None
        if self.ranking.structure:
            structure = (
                pattern_structure(layout)
                if pattern.has_variables
                else structure_of_layout(layout, span_kinds=QUERY_SPAN_KINDS)
            )
        shared = None if pattern.has_variables else SharedSubexpressions(layout)
        if result.mathml is None:
            return _QueryFormula(result, None, structure, layout, pattern, shared)
        vector = self._encode(variables_as_letters(result.mathml, pattern)) if self.ranking.embedding else None
        if vector is not None:
            vector.flags.writeable = False  # shared by every search of this formula
        nodes = None
        if self.node_encoder is not None and self.ranking.maxsim_window > 0:
            nodes = self.node_encoder.encode([variables_as_letters(result.mathml, pattern)])[0]
            nodes.flags.writeable = False
        formula = _QueryFormula(result, vector, structure, layout, pattern, shared, nodes)
        if self.formula_cache_size > 0:
            with self._formulas_lock:
                self._formulas[latex] = formula
                while len(self._formulas) > self.formula_cache_size:
                    self._formulas.popitem(last=False)
        return formula

    def _encode(self, mathml: str) -> np.ndarray:
        vector = np.asarray(self.encoder.encode([mathml])[0], dtype=np.float32)
        if self._mapping_meta().get("similarity") in ("cosine", "dot_product"):
            norm = float(np.linalg.norm(vector))
            vector = vector / norm if norm > 0 else vector
        return vector

    def _ranked_lists(
        self, searches: list[tuple[str, dict[str, Any]]]
    ) -> tuple[dict[str, list[tuple[str, float]]], dict[str, str], int, int]:
        """Runs the ranking searches as one ``_msearch``.

        Returns:
            list name -> ranked ``(eq_id, score)``; eq_id -> paper_id; the text list's total (0 without one); how
            many shard searches failed (a cluster that lost a node answers from the shards it still has).
        """
        lines: list[dict[str, Any]] = []
        for _, body in searches:
            lines.extend([{"index": self.equations_alias}, body])
        responses = self._call(self.client.msearch, searches=lines, filter_path=_RANKING_RESPONSE_FIELDS)
        lists: dict[str, list[tuple[str, float]]] = {}
        paper_of: dict[str, str] = {}
        text_total = 0
        missing = 0
        for (name, _), response in zip(searches, responses["responses"], strict=True):
            if "error" in response:
                raise _search_failed(name, response["error"])
            missing += int((response.get("_shards") or {}).get("failed") or 0)
            found = response.get("hits") or {}
            ranking = []
            for hit in found.get("hits") or ():
                fields = hit["fields"]
                eq_id = fields["eq_id"][0]
                ranking.append((eq_id, float(hit["_score"] or 0.0)))
                paper_of[eq_id] = (fields.get("paper_id") or [""])[0]
            lists[name] = ranking
            if name == "text":
                text_total = int((found.get("total") or {}).get("value", len(ranking)))
        return lists, paper_of, text_total, missing

    def _call(self, method: Any, **kwargs: Any) -> Any:
        try:
            return method(**kwargs)
        except NotFoundError as error:
            raise SearchError(
                f"the index is missing: {error.message}", hint="create it with 'eqsearch index create' or ingest"
            ) from error
        except (ApiError, EsConnectionError) as error:
            raise SearchError(f"Elasticsearch refused the search: {error}") from error

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


def _layout(mathml: str | None, latex: str | None, *, positions: bool = False) -> list[LayoutNode]:
    """A formula's layout tree as `formula_structure` reads it: from the MathML, else from the LaTeX."""
    if mathml:
        try:
            return parse_layout(mathml, positions=positions)
        except ValueError:
            pass
    return parse_layout_latex(latex or "")


def _highlight(formula: _QueryFormula, mathml: str | None) -> FormulaHighlight | None:
    """Which elements of a hit's MathML match the query formula: the pattern's match, or the largest shared
    sub-expression; None without MathML (the references point into it) or a match."""
    if not mathml or not formula.layout:
        return None
    try:
        layout = parse_layout(mathml, positions=True)
    except ValueError:
        return None
    if formula.pattern.has_variables:
        match = match_pattern(formula.layout, layout)
        return pattern_highlight(match) if match is not None else None
    return formula.shared.highlight(layout) if formula.shared is not None else None


#: The channel each ranked list stands for, as hits report it.
_CHANNEL_OF_LIST = {"structure": "structure", "formula": "embedding", "text": "text", "context": "context"}


def _search_failed(name: str, error: Any) -> SearchError:
    """The error of one ranking search of the ``_msearch``, with the shards' own reasons rather than Elasticsearch's
    summary ("all shards failed"), and what to do when the query itself was too large."""
    if not isinstance(error, dict):
        return SearchError(f"the {name} search failed: {error}")
    if _error_types(error) & {"too_many_clauses", "too_many_nested_clauses"}:
        return SearchError(
            f"the {name} search failed: the formula is too long to search (its query has more clauses than "
            "Elasticsearch's indices.query.bool.max_clause_count)",
            hint="search a part of the formula, or give the node more heap (the limit grows with it)",
        )
    reasons = [
        cause["reason"] for cause in error.get("root_cause") or () if isinstance(cause, dict) and cause.get("reason")
    ]
    return SearchError(f"the {name} search failed: {'; '.join(reasons) or error.get('reason') or error}")


def _error_types(error: Any) -> set[str]:
    """Every ``type`` in an Elasticsearch error and its causes, however deep."""
    if isinstance(error, dict):
        own = {error["type"]} if isinstance(error.get("type"), str) else set()
        return own.union(*(_error_types(value) for value in error.values()))
    if isinstance(error, list):
        return set().union(*(_error_types(value) for value in error))
    return set()


def _channels_of(lists: dict[str, list[tuple[str, float]]]) -> dict[str, tuple[str, ...]]:
    """eq_id -> the channels whose lists found it (``structure``, ``embedding``, ``text``, ``context``), in that
    order."""
    found: dict[str, list[str]] = {}
    for name in _CHANNEL_OF_LIST:
        for eq_id, _ in lists.get(name, ()):
            found.setdefault(eq_id, []).append(_CHANNEL_OF_LIST[name])
    return {eq_id: tuple(names) for eq_id, names in found.items()}
