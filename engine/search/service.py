"""Hybrid search: optional LaTeX + optional keywords + filters, fused client-side, hits per equation or per paper.

A query's formula goes LaTeX -> MathML (`KatexConverter`) -> vector (`Encoder`) -> kNN on the equations index, with
the filters as pre-filters inside ``knn.filter``; its keywords go to BM25 (`multi_match` over title, abstract and
context). Both run as one ``_msearch`` that returns ranked ids only, and are fused here (`engine.search.fusion`:
reciprocal rank fusion, or a normalised linear blend weighted by `HybridQuery.formula_weight`), so it works on any
licence and on the minimal distribution; a second request fetches the page's equations with highlights. Every hit
says what matched it (the formula, the text, or both) from the lists it was found in.

LaTeX that does not parse never fails the search: `SearchResults.latex_error` carries the converter's message and,
when keywords were given, the keyword results still come back.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from elasticsearch import ApiError, Elasticsearch, NotFoundError
from elasticsearch import ConnectionError as EsConnectionError
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.index.mappings import VECTOR_FIELD, alias_name
from eqsearch.engine.search.fusion import Fused, linear_fusion, reciprocal_rank_fusion

if TYPE_CHECKING:
    from eqsearch.engine.latex.converter import ConversionResult
    from eqsearch.engine.model.encoder import Encoder

Fusion = Literal["rrf", "linear"]
Matched = Literal["formula", "text", "both"]

MAX_PAGE_SIZE = 100
#: How long the equations index's ``_meta`` (similarity, encoder) is trusted before it is read again.
META_SECONDS = 30.0
MAX_RESULT_WINDOW = 1000


@dataclass(frozen=True)
class HybridQuery:
    """What a researcher asked for.

    Args:
        latex: a formula in LaTeX (None or blank: keywords only).
        keywords: free text matched against paper titles, abstracts and equation context (None: formula only).
        categories: arXiv categories to keep (any of them); empty keeps all.
        year_from: first publication year to keep (inclusive).
        year_to: last publication year to keep (inclusive).
        paper_id: keep only this paper's equations.
        formula_weight: the formula <-> keywords balance in [0, 1]: 1 ranks by the formula only, 0 by the keywords
            only. Used as the linear blend weight, and to weight the two rankings in reciprocal rank fusion.
        fusion: ``rrf`` (reciprocal rank fusion, robust to score scales) or ``linear`` (min-max normalised scores
            blended by `formula_weight`).
        page: 1-based result page.
        size: hits (or paper groups) per page, 1..100.
        group_by_paper: return one group per paper holding its matching equations, paginated by group.

    Raises:
        ValueError: a field is out of range (weight outside [0, 1], page < 1, size outside 1..100, years reversed).
    """

    latex: str | None = None
    keywords: str | None = None
    categories: tuple[str, ...] = ()
    year_from: int | None = None
    year_to: int | None = None
    paper_id: str | None = None
    formula_weight: float = 0.5
    fusion: Fusion = "rrf"
    page: int = 1
    size: int = 10
    group_by_paper: bool = False

    def __post_init__(self) -> None:
        if not 0.0 <= self.formula_weight <= 1.0:
            raise ValueError(f"formula_weight must lie in [0, 1], got {self.formula_weight}")
        if self.fusion not in ("rrf", "linear"):
            raise ValueError(f"fusion must be 'rrf' or 'linear', got {self.fusion!r}")
        if self.page < 1:
            raise ValueError(f"page must be 1 or more, got {self.page}")
        if not 1 <= self.size <= MAX_PAGE_SIZE:
            raise ValueError(f"size must lie in 1..{MAX_PAGE_SIZE}, got {self.size}")
        if self.year_from is not None and self.year_to is not None and self.year_from > self.year_to:
            raise ValueError(f"year_from ({self.year_from}) is after year_to ({self.year_to})")
        if isinstance(self.categories, str):
            raise ValueError("categories must be a tuple of category names, not one string")

    @property
    def has_formula(self) -> bool:
        return bool(self.latex and self.latex.strip())

    @property
    def has_keywords(self) -> bool:
        return bool(self.keywords and self.keywords.strip())


@dataclass(frozen=True)
class EquationHit:
    """One equation in the results, with its paper's fields.

    Args:
        eq_id: the equation's document id (paper key + equation number).
        paper_id: the paper's id (arXiv id without version, or the source's id).
        latex: the equation's LaTeX as written in the paper.
        mathml: its Presentation MathML (None when conversion failed).
        section_title: the title of the section it sits in.
        context: plain text around it (before + after).
        score: the fused score (higher is better; comparable within one result set only).
        matched: what found it: ``formula`` (kNN), ``text`` (BM25) or ``both``.
        highlights: field -> highlighted fragments (``<em>`` marks the matched terms).
        title: the paper's title.
        authors: the paper's authors.
        year: the paper's publication year.
        categories: the paper's arXiv categories.
        abstract: the start of the paper's abstract (a snippet, not the whole text).
        formula_score: the raw kNN score when the formula matched.
        text_score: the raw BM25 score when the text matched.
    """

    eq_id: str
    paper_id: str
    latex: str
    mathml: str | None
    section_title: str
    context: str
    score: float
    matched: Matched
    highlights: dict[str, list[str]] = field(default_factory=dict)
    title: str = ""
    authors: tuple[str, ...] = ()
    year: int | None = None
    categories: tuple[str, ...] = ()
    abstract: str = ""
    formula_score: float | None = None
    text_score: float | None = None


@dataclass(frozen=True)
class PaperGroup:
    """One paper and its matching equations (best first); the group's score is its best equation's.

    Args:
        paper_id: the paper's id.
        title: its title.
        authors: its authors.
        year: its publication year.
        categories: its arXiv categories.
        abstract: the start of its abstract.
        score: the best fused score among its equations.
        equations: its matching equations, best first.
    """

    paper_id: str
    title: str
    authors: tuple[str, ...]
    year: int | None
    categories: tuple[str, ...]
    abstract: str
    score: float
    equations: list[EquationHit]


@dataclass(frozen=True)
class SearchResults:
    """One page of results.

    Args:
        hits: the page's equations, best first (when grouped: the groups' equations, flattened in group order).
        groups: the page's paper groups, best first (empty unless the query asked for grouping).
        total: how many equations (or, grouped, papers) matched, as far as the fused candidate lists reach.
        page: the 1-based page returned.
        size: the page size asked for.
        latex_error: the converter's message when the LaTeX did not parse (the keyword results still come back).
        warnings: anything else the user should know (e.g. the result window was capped).
        took_ms: wall time of the search in milliseconds, conversion and encoding included.
        analyzer: the text analyzer of the index searched (``english`` or ``standard``).
    """

    hits: list[EquationHit]
    groups: list[PaperGroup]
    total: int
    page: int
    size: int
    latex_error: str | None = None
    warnings: list[str] = field(default_factory=list)
    took_ms: float = 0.0
    analyzer: str = "standard"


class SearchError(EqsearchError):
    """Elasticsearch refused a search or did not answer."""

    exit_code = 9


class EquationNotFoundError(EqsearchError):
    """No equation has the id asked for (or it has no vector)."""

    exit_code = 4


#: BM25 fields and their boosts: a word in a title says more about the paper than one in an equation's context.
TEXT_FIELDS = ("title^2", "abstract", "section_title^1.5", "context")
HIGHLIGHT_FIELDS = ("title", "abstract", "section_title", "context")
ABSTRACT_SNIPPET = 300
#: BM25 hits counted exactly for `SearchResults.total`: no page past the result window can be asked for, so a count
#: beyond it tells nothing, and while hits must be counted Lucene cannot skip the ones that cannot reach the top k.
#: (No measurable effect on the replicated benchmark corpus, whose ~185 copies of each text tie at the top score so
#: that nothing can be skipped anyway; see benchmarks/search.md.)
TEXT_COUNT_LIMIT = MAX_RESULT_WINDOW
_SOURCE_EXCLUDES = [VECTOR_FIELD]
_RANKING_FIELDS = ("eq_id", "paper_id")
# Only what the client reads comes back: less for the node to serialise and for the client to parse.
_RANKING_RESPONSE_FIELDS = [
    "responses.status",  # keeps every response in the array: a filtered-out empty one would shift the others
    "responses.hits.hits._score",
    "responses.hits.hits.fields",
    "responses.hits.total.value",
    "responses.error",
]
_PAGE_RESPONSE_FIELDS = ["hits.hits._id", "hits.hits._source", "hits.hits.highlight"]


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
        self._meta: dict[str, Any] | None = None
        self._meta_read = 0.0
        self._formulas: OrderedDict[str, tuple[ConversionResult, np.ndarray]] = OrderedDict()
        self._formulas_lock = threading.Lock()  # web servers search from several threads

    # -- public ------------------------------------------------------------------------------------------------
    def search(self, query: HybridQuery) -> SearchResults:
        """Run a hybrid query.

        Args:
            query: the query.

        Returns:
            One page of results; `SearchResults.latex_error` is set when the LaTeX did not parse.

        Raises:
            SearchError: Elasticsearch refused the search or is unreachable.
        """
        began = time.perf_counter()
        warnings: list[str] = []
        latex_error = None
        vector = None
        if query.has_formula:
            result, vector = self._formula(query.latex or "")
            if result.mathml is None:
                latex_error = result.message or f"the LaTeX could not be converted ({result.reason})"
            elif result.status == "approximate" and result.message:
                warnings.append(f"the formula was converted approximately: {result.message}")
            if vector is not None and (mismatch := self._encoder_mismatch()) is not None:
                warnings.append(mismatch)
                vector = None
        # the candidate depth does not shrink with the page: every page is a slice of the same fused list
        window = max(
            self.candidate_depth, query.page * query.size * (self.group_oversample if query.group_by_paper else 1)
        )
        if window > MAX_RESULT_WINDOW:
            warnings.append(f"results are limited to the first {MAX_RESULT_WINDOW} candidates per list")
            window = MAX_RESULT_WINDOW
        filters = self._filters(query)
        searches: list[tuple[str, dict[str, Any]]] = []
        if vector is not None and query.formula_weight > 0:
            searches.append(("formula", self._ranking_only(self._knn_body(vector, window, filters))))
        if query.has_keywords and query.formula_weight < 1:
            searches.append(("text", self._ranking_only(self._text_body(query.keywords or "", window, filters))))
        if not searches:
            return self._results([], [], 0, query, latex_error, warnings, began)
        lists, paper_of, text_total = self._ranked_lists(searches)
        if query.fusion == "rrf":
            w = query.formula_weight
            fused = reciprocal_rank_fusion(lists, k=self.rrf_k, weights={"formula": 2 * w, "text": 2 * (1 - w)})
        else:
            fused = linear_fusion(lists, {"formula": query.formula_weight, "text": 1 - query.formula_weight})
        start = (query.page - 1) * query.size
        if query.group_by_paper:
            papers: dict[str, list[Fused]] = {}
            for item in fused:
                papers.setdefault(paper_of.get(item.doc_id, ""), []).append(item)
            page_items = [item for members in list(papers.values())[start : start + query.size] for item in members]
            total = len(papers)
        else:
            page_items = fused[start : start + query.size]
            total = max(len(fused), text_total)
        documents = self._fetch_page(
            [item.doc_id for item in page_items], query.keywords if query.has_keywords else None
        )
        hits = [
            self._hit(item, documents[item.doc_id])
            for item in page_items
            if item.doc_id in documents  # deleted between the two requests: dropped, not an error
        ]
        groups = group_hits(hits) if query.group_by_paper else []
        return self._results(hits, groups, total, query, latex_error, warnings, began)

    def _fetch_page(self, eq_ids: list[str], keywords: str | None) -> dict[str, dict[str, Any]]:
        """Sources (vector excluded) and, with keywords, highlights of the page's equations, in one request; by
        ``eq_id``."""
        if not eq_ids:
            return {}
        body: dict[str, Any] = {
            "query": {"terms": {"eq_id": eq_ids}},
            "size": len(eq_ids),
            "_source": {"excludes": _SOURCE_EXCLUDES},
            "track_total_hits": False,
        }
        if keywords:
            text = self._text_body(keywords, len(eq_ids), [])
            body["highlight"] = {**text["highlight"], "highlight_query": text["query"]["bool"]["must"][0]}
        response = self._call(
            self.client.search, index=self.equations_alias, body=body, filter_path=_PAGE_RESPONSE_FIELDS
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
        body = self._knn_body(np.asarray(vector, dtype=np.float32), size, [], exclude=[eq_id])
        hits_raw = self._call(self.client.search, index=self.equations_alias, body=body)["hits"]["hits"]
        hits = [
            self._hit(Fused(raw["_id"], score, {"formula": score}, {"formula": rank}), raw)
            for rank, (raw, score) in enumerate(((raw, float(raw["_score"] or 0.0)) for raw in hits_raw), start=1)
        ]
        return self._results(hits, [], len(hits), query, None, [], began)

    def get_equation(self, eq_id: str) -> dict[str, Any] | None:
        """The stored equation document (vector excluded), or None when absent."""
        try:
            response = self.client.get(index=self.equations_alias, id=eq_id, source_excludes=_SOURCE_EXCLUDES)
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
            query={"term": {"paper_id": paper_id}},
            sort=[{"number": "asc"}],
            size=10_000,
            source_excludes=_SOURCE_EXCLUDES,
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
            f"formula search is off: the index holds vectors of the model {recorded}, but this server encodes "
            f"formulas with {identity}; an administrator re-embeds the index with 'eqsearch index migrate "
            "equations --reencode' (keyword search still works)"
        )

    def _formula(self, latex: str) -> tuple[ConversionResult, np.ndarray | None]:
        """The conversion of a query's LaTeX and its vector (None when it did not convert), from the cache if there."""
        with self._formulas_lock:
            cached = self._formulas.get(latex)
            if cached is not None:
                self._formulas.move_to_end(latex)
                return cached
        result = self.render(latex)
        if result.mathml is None:
            return result, None
        vector = self._encode(result.mathml)
        vector.flags.writeable = False  # shared by every search of this formula
        if self.formula_cache_size > 0:
            with self._formulas_lock:
                self._formulas[latex] = (result, vector)
                while len(self._formulas) > self.formula_cache_size:
                    self._formulas.popitem(last=False)
        return result, vector

    def _encode(self, mathml: str) -> np.ndarray:
        vector = np.asarray(self.encoder.encode([mathml])[0], dtype=np.float32)
        if self._mapping_meta().get("similarity") in ("cosine", "dot_product"):
            norm = float(np.linalg.norm(vector))
            vector = vector / norm if norm > 0 else vector
        return vector

    @staticmethod
    def _filters(query: HybridQuery) -> list[dict[str, Any]]:
        filters: list[dict[str, Any]] = []
        if query.categories:
            filters.append({"terms": {"categories": list(query.categories)}})
        if query.year_from is not None or query.year_to is not None:
            bounds = {}
            if query.year_from is not None:
                bounds["gte"] = query.year_from
            if query.year_to is not None:
                bounds["lte"] = query.year_to
            filters.append({"range": {"year": bounds}})
        if query.paper_id:
            filters.append({"term": {"paper_id": query.paper_id}})
        return filters

    def _knn_body(
        self, vector: np.ndarray, k: int, filters: list[dict[str, Any]], exclude: Sequence[str] = ()
    ) -> dict[str, Any]:
        pre_filter: dict[str, Any] = {"bool": {"filter": list(filters)}}
        if exclude:
            pre_filter["bool"]["must_not"] = [{"ids": {"values": list(exclude)}}]
        knn: dict[str, Any] = {
            "field": VECTOR_FIELD,
            "query_vector": [float(x) for x in vector],
            "k": k,
            "num_candidates": min(10_000, max(100, k * self.num_candidates_factor)),
        }
        if filters or exclude:
            knn["filter"] = pre_filter  # inside knn: a pre-filter, so k hits come back when k exist
        # a knn query, not the top-level knn section: the same per-shard search, without the extra DFS round that the
        # top-level section takes (about 0.3 ms of the node's CPU per search here, see benchmarks/search.md)
        return {"query": {"knn": knn}, "size": k, "_source": {"excludes": _SOURCE_EXCLUDES}, "track_total_hits": False}

    @staticmethod
    def _ranking_only(body: dict[str, Any]) -> dict[str, Any]:
        """The same search returning scores and the ``eq_id`` and ``paper_id`` doc values only.

        Fusion ranks up to `candidate_depth` candidates per list but a page shows a handful, so the lists read no
        stored field at all (``stored_fields: _none_``; not even ``_id``): stored fields are compressed in blocks
        shared with the large ``_source`` (MathML), and decompressing one per candidate was most of the lists' cost
        (see benchmarks/search.md). ``eq_id`` equals ``_id`` for every writer, and doc values are cheap to read.
        """
        light = {key: value for key, value in body.items() if key not in ("highlight", "_source")}
        return {**light, "stored_fields": "_none_", "docvalue_fields": list(_RANKING_FIELDS)}

    @staticmethod
    def _text_body(keywords: str, size: int, filters: list[dict[str, Any]]) -> dict[str, Any]:
        match = {"multi_match": {"query": keywords, "fields": list(TEXT_FIELDS), "type": "best_fields"}}
        return {
            "query": {"bool": {"must": [match], "filter": filters}},
            "size": size,
            "_source": {"excludes": _SOURCE_EXCLUDES},
            "highlight": {
                "fields": {name: {"number_of_fragments": 2, "fragment_size": 150} for name in HIGHLIGHT_FIELDS},
                "require_field_match": True,
            },
            "track_total_hits": TEXT_COUNT_LIMIT,
        }

    def _ranked_lists(
        self, searches: list[tuple[str, dict[str, Any]]]
    ) -> tuple[dict[str, list[tuple[str, float]]], dict[str, str], int]:
        """Runs the ranking searches as one ``_msearch``.

        Returns:
            list name -> ranked ``(eq_id, score)``; eq_id -> paper_id; the text list's total (0 without one).
        """
        lines: list[dict[str, Any]] = []
        for _, body in searches:
            lines.extend([{"index": self.equations_alias}, body])
        responses = self._call(self.client.msearch, searches=lines, filter_path=_RANKING_RESPONSE_FIELDS)
        lists: dict[str, list[tuple[str, float]]] = {}
        paper_of: dict[str, str] = {}
        text_total = 0
        for (name, _), response in zip(searches, responses["responses"], strict=True):
            if "error" in response:
                error = response["error"]
                reason = error.get("reason") if isinstance(error, dict) else error
                raise SearchError(f"the {name} search failed: {reason}")
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
        return lists, paper_of, text_total

    def _call(self, method: Any, **kwargs: Any) -> Any:
        try:
            return method(**kwargs)
        except NotFoundError as error:
            raise SearchError(
                f"the index is missing: {error.message}", hint="create it with 'eqsearch index create' or ingest"
            ) from error
        except (ApiError, EsConnectionError) as error:
            raise SearchError(f"Elasticsearch refused the search: {error}") from error

    @staticmethod
    def _hit(item: Fused, raw: dict[str, Any]) -> EquationHit:
        source = raw.get("_source") or {}
        named = set(item.sources)  # the lists it was found in: kNN (formula), BM25 (text) or both
        matched: Matched = "both" if {"formula", "text"} <= named else ("formula" if "formula" in named else "text")
        abstract = source.get("abstract") or ""
        if len(abstract) > ABSTRACT_SNIPPET:
            abstract = abstract[:ABSTRACT_SNIPPET].rsplit(" ", 1)[0] + " ..."
        return EquationHit(
            eq_id=raw["_id"],
            paper_id=source.get("paper_id") or "",
            latex=source.get("latex") or "",
            mathml=source.get("mathml"),
            section_title=source.get("section_title") or "",
            context=source.get("context") or "",
            score=item.score,
            matched=matched,
            highlights={k: list(v) for k, v in (raw.get("highlight") or {}).items()},
            title=source.get("title") or "",
            authors=tuple(source.get("authors") or ()),
            year=source.get("year"),
            categories=tuple(source.get("categories") or ()),
            abstract=abstract,
            formula_score=item.sources.get("formula"),
            text_score=item.sources.get("text"),
        )

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


def group_hits(hits: Sequence[EquationHit]) -> list[PaperGroup]:
    """Hits grouped per paper, groups in the order of their best hit, hits in their order within each group."""
    groups: dict[str, list[EquationHit]] = {}
    for hit in hits:
        groups.setdefault(hit.paper_id, []).append(hit)
    out = []
    for paper_id, members in groups.items():
        first = members[0]
        out.append(
            PaperGroup(
                paper_id=paper_id,
                title=first.title,
                authors=first.authors,
                year=first.year,
                categories=first.categories,
                abstract=first.abstract,
                score=first.score,
                equations=members,
            )
        )
    return out


__all__ = [
    "EquationHit",
    "EquationNotFoundError",
    "HybridQuery",
    "PaperGroup",
    "SearchError",
    "SearchResults",
    "SearchService",
    "group_hits",
]
