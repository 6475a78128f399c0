"""Combined formula + keyword search measured on known-item queries, through the production search service.

Each query names one display equation of one real paper (its target) and says it as a researcher would: the
formula retyped with renamed variables or in an equivalent form, plus a few words paraphrasing the text around it
(`data/hybrid-dev.tsv`). Each is searched three ways, as the UI and the API would: the formula alone, the words
alone, and both (the default balance). The figures are MRR@10 and recall@10 at two levels: the equation (the first
hit that is the target, or the same LaTeX elsewhere in the same paper) and the paper (the target's paper among the
distinct papers of the ranking, in order of their best hit). Rows are split by paper into ``dev`` and ``heldout``:
the held-out third is reported apart and never used to choose anything.

The papers (and the distractors beside them, e.g. the `make run` documentation corpus) are ingested by the real
ingest job into an index prefix of the caller's (`ingest_sources`), so repeated evaluations reuse one index.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.search import HybridQuery, SearchService
from eqsearch.evaluation.tsv import read_versioned_tsv

__all__ = [
    "DEFAULT_HYBRID_QUERIES",
    "MODES",
    "HybridEvaluation",
    "HybridQueryError",
    "HybridQueryRow",
    "evaluate_hybrid",
    "normalise_latex",
    "read_hybrid_queries",
    "resolve_targets",
]

FORMAT_LINE = "# eqsearch hybrid known-item queries, version 1"
HEADER = ("id", "split", "lead", "paper", "target", "latex", "keywords")
DEFAULT_HYBRID_QUERIES = Path(__file__).resolve().parent / "data" / "hybrid-dev.tsv"
#: The ways each query is searched: its formula alone, its words alone, both.
MODES = ("formula", "keywords", "both")
SPLITS = ("dev", "heldout")
LEADS = ("formula", "keywords", "balanced")
#: The cut-off of the measures (MRR@10, R@10) and how many hits are read to rank the papers.
CUTOFF = 10
PAPER_DEPTH = 100


class HybridQueryError(EqsearchError):
    """The query file cannot be read, or a target cannot be found in the index."""

    exit_code = 2


@dataclass(frozen=True)
class HybridQueryRow:
    """One known-item query (a row of the query file)."""

    id: str
    split: str
    lead: str
    paper: str
    target: str
    latex: str
    keywords: str

    def query(self, mode: str, **options: Any) -> HybridQuery:
        """The search of one mode (`MODES`), with other `HybridQuery` fields from ``options``."""
        return HybridQuery(
            latex=self.latex if mode in ("formula", "both") else None,
            keywords=self.keywords if mode in ("keywords", "both") else None,
            **options,
        )


def read_hybrid_queries(path: str | Path = DEFAULT_HYBRID_QUERIES) -> list[HybridQueryRow]:
    """The rows of a query file (format in `data/hybrid-dev.tsv`'s comments).

    Raises:
        HybridQueryError: unreadable, another format, a bad row, a duplicate id.
    """
    rows = read_versioned_tsv(
        Path(path), format_line=FORMAT_LINE, header=HEADER, what="the hybrid queries", error=HybridQueryError
    )
    out: list[HybridQueryRow] = []
    seen: set[str] = set()
    for number, fields in rows:
        if len(fields) != len(HEADER):
            raise HybridQueryError(f"{path}:{number}: every row needs all {len(HEADER)} columns")
        row = HybridQueryRow(*fields)
        problem = (
            f"duplicate id {row.id!r}"
            if row.id in seen
            else f"split must be one of {SPLITS}, got {row.split!r}"
            if row.split not in SPLITS
            else f"lead must be one of {LEADS}, got {row.lead!r}"
            if row.lead not in LEADS
            else "the query needs a formula and keywords"
            if not (row.latex and row.keywords)
            else None
        )
        if problem:
            raise HybridQueryError(f"{path}:{number}: {problem}")
        seen.add(row.id)
        out.append(row)
    return out


_LABEL = re.compile(r"\\(?:label|tag)\*?\{[^{}]*\}|\\(?:nonumber|notag)\b")


def normalise_latex(latex: str) -> str:
    """LaTeX compared as written: labels, tags and ``\\nonumber`` dropped, spaces and final punctuation removed."""
    return re.sub(r"\s+", "", _LABEL.sub("", latex)).rstrip(".,;")


def resolve_targets(client: Elasticsearch, equations: str, rows: Sequence[HybridQueryRow]) -> dict[str, set[str]]:
    """Query id -> the ids of the equations that are its target: the display equations of its paper written as the
    target (an equation repeated in a paper and its supplement counts wherever it is found).

    Raises:
        HybridQueryError: a paper is not indexed, or holds no equation written as a target.
    """
    by_paper: dict[str, dict[str, set[str]]] = {}
    for paper in sorted({row.paper for row in rows}):
        response = client.search(
            index=equations,
            query={"bool": {"filter": [{"term": {"paper_id": paper}}], "must_not": [{"term": {"inline": True}}]}},
            size=10_000,
            source_includes=["eq_id", "latex"],
        )
        written: dict[str, set[str]] = {}
        for hit in response["hits"]["hits"]:
            written.setdefault(normalise_latex(hit["_source"].get("latex") or ""), set()).add(hit["_id"])
        if not written:
            raise HybridQueryError(f"the paper {paper!r} of the hybrid queries is not indexed under {equations}")
        by_paper[paper] = written
    targets: dict[str, set[str]] = {}
    missing = []
    for row in rows:
        found = by_paper[row.paper].get(normalise_latex(row.target))
        if found:
            targets[row.id] = found
        else:
            missing.append(row.id)
    if missing:
        raise HybridQueryError(
            f"{len(missing)} targets are not among their paper's indexed equations: {', '.join(missing[:10])}",
            hint="the extractor reads the paper differently than when the queries were written: check the row",
        )
    return targets


@dataclass
class HybridEvaluation:
    """Ranks and figures of one evaluation.

    Attributes:
        ranks: query id -> mode -> {"equation": rank or None, "paper": rank or None} (1-based, within `CUTOFF`).
        rows: the queries evaluated.
        query_ms: wall time of every search, in milliseconds.
    """

    ranks: dict[str, dict[str, dict[str, int | None]]] = field(default_factory=dict)
    rows: list[HybridQueryRow] = field(default_factory=list)
    query_ms: list[float] = field(default_factory=list)

    def figures(self, rows: Iterable[HybridQueryRow] | None = None) -> dict[str, dict[str, float]]:
        """mode -> {"equation_mrr", "equation_r10", "paper_mrr", "paper_r10", "queries"} over ``rows`` (all)."""
        chosen = list(self.rows if rows is None else rows)
        out: dict[str, dict[str, float]] = {}
        for mode in MODES:
            values: dict[str, float] = {"queries": float(len(chosen))}
            for level in ("equation", "paper"):
                found = [self.ranks[row.id][mode][level] for row in chosen]
                values[f"{level}_mrr"] = sum(1.0 / r for r in found if r) / len(chosen) if chosen else 0.0
                values[f"{level}_r10"] = sum(1 for r in found if r) / len(chosen) if chosen else 0.0
            out[mode] = values
        return out

    def moved(self, rows: Iterable[HybridQueryRow] | None = None) -> dict[str, int]:
        """How many targets rise, fall or stay at equation level when the words join the formula."""
        counts = {"rise": 0, "fall": 0, "same": 0}
        for row in self.rows if rows is None else rows:
            alone = self.ranks[row.id]["formula"]["equation"] or CUTOFF + 1
            both = self.ranks[row.id]["both"]["equation"] or CUTOFF + 1
            counts["rise" if both < alone else "fall" if both > alone else "same"] += 1
        return counts

    def to_json(self) -> dict[str, Any]:
        """Every figure by split and by lead, with the per-query ranks."""
        parts: dict[str, Any] = {"all": self.figures()}
        for split in SPLITS:
            parts[split] = self.figures(r for r in self.rows if r.split == split)
            parts[f"{split}_moved"] = self.moved(r for r in self.rows if r.split == split)
            for lead in LEADS:
                parts[f"{split}_{lead}"] = self.figures(r for r in self.rows if r.split == split and r.lead == lead)
        parts["query_ms_median"] = statistics.median(self.query_ms) if self.query_ms else 0.0
        parts["ranks"] = self.ranks
        return parts


def evaluate_hybrid(
    service: SearchService,
    rows: Sequence[HybridQueryRow],
    targets: dict[str, set[str]],
    *,
    options: dict[str, Any] | None = None,
    on_query: Callable[[str], None] | None = None,
) -> HybridEvaluation:
    """Search every query in every mode and record where its target equation and paper rank.

    Args:
        service: the search service over the indexed papers and distractors.
        rows: the queries.
        targets: query id -> its target equation ids (`resolve_targets`).
        options: other `HybridQuery` fields for every search (e.g. ``formula_weight``, ``fusion``).
        on_query: called with each query id once its modes are searched.
    """
    evaluation = HybridEvaluation(rows=list(rows))
    for row in rows:
        evaluation.ranks[row.id] = {}
        for mode in MODES:
            began = time.perf_counter()
            results = service.search(row.query(mode, size=PAPER_DEPTH, **(options or {})))
            evaluation.query_ms.append((time.perf_counter() - began) * 1000.0)
            equation = next(
                (rank for rank, hit in enumerate(results.hits[:CUTOFF], 1) if hit.eq_id in targets[row.id]), None
            )
            papers = list(dict.fromkeys(hit.paper_id for hit in results.hits))[:CUTOFF]
            paper = papers.index(row.paper) + 1 if row.paper in papers else None
            evaluation.ranks[row.id][mode] = {"equation": equation, "paper": paper}
        if on_query is not None:
            on_query(row.id)
    return evaluation
