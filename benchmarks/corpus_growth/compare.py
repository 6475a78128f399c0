"""The generated collection's term and size distributions beside the real papers': does it look like real formulas
to the index?

Per equation: its structural terms and its size in symbols, made by the project's own code (the index's
`engine.model.structure` on the layout tree of the MathML), its sub-expression spans (on every tenth equation: they
cost most), its context's length. Per paper: its equations. Over the collection: the distinct terms as it grows
(Heaps' law, V = K n^beta, beta fitted between the first checkpoint and the last) and the document frequencies of the
terms (Zipf's law, df ~ rank^-s, s fitted on ranks 10 to 10,000) with the share of terms seen in one equation only.
The real collection is the inputs' distinct formulas (each once, as the generator's round 0 writes them).
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from eqsearch.engine.model.layout import parse_layout
from eqsearch.engine.model.structure import SPAN_LENGTHS, structure_of_layout
from eqsearch.ingest.records import read_papers

from corpus_growth.pools import converted_formulas
from corpus_growth.variants import formula_hash

#: The ids of the papers the generator made (round 1 on): ``g<round>/<real id>``.
VARIANT_ID = re.compile(r"g\d+/")
#: Spans are counted on one equation in this many.
SPAN_EVERY = 10


def collection_equations(paths: list[Path], limit: int | None, *, variants_only: bool = False) -> Iterator[Any]:
    """``(paper number, formula)`` for the first ``limit`` distinct formulas with MathML of the papers in ``paths``,
    in file order (``variants_only``: only the generated papers ``g<round>/...``)."""
    seen: set[int] = set()
    count = 0
    paper_number = 0
    for path in paths:
        for record in read_papers(path):
            if variants_only and not VARIANT_ID.match(str(record.get("id", ""))):
                continue
            paper_number += 1
            for _, formula in converted_formulas(record):
                digest = formula_hash(formula["mathml"])
                if digest in seen:
                    continue
                seen.add(digest)
                yield paper_number, formula
                count += 1
                if limit is not None and count >= limit:
                    return


def _summary(values: list[float]) -> dict[str, float]:
    array = np.asarray(values, dtype=float)
    if not len(array):
        return {"mean": 0.0, "median": 0.0, "p90": 0.0}
    return {
        "mean": round(float(array.mean()), 1),
        "median": round(float(np.median(array)), 1),
        "p90": round(float(np.percentile(array, 90)), 1),
    }


def distributions(equations: Iterator[Any], label: str = "", *, quiet: bool = True) -> dict[str, Any]:
    """The figures of one collection (see the module docstring) from its ``(paper number, formula)`` pairs; unless
    ``quiet``, a progress line on stderr every 50,000 equations."""
    terms, sizes, spans, contexts = [], [], [], []
    per_paper: Counter[int] = Counter()
    document_frequency: Counter[str] = Counter()
    heaps: list[tuple[int, int]] = []
    checkpoint = 1000
    n = 0
    for paper_number, formula in equations:
        try:
            layout = parse_layout(formula["mathml"])
        except ValueError:
            continue
        with_spans = n % SPAN_EVERY == 0
        structure = structure_of_layout(layout, span_lengths=SPAN_LENGTHS if with_spans else ())
        n += 1
        terms.append(len(structure.tokens))
        sizes.append(structure.size)
        if with_spans:
            spans.append(len(structure.spans))
        contexts.append(len(formula.get("context_before") or "") + len(formula.get("context_after") or ""))
        per_paper[paper_number] += 1
        document_frequency.update(set(structure.tokens))
        if not quiet and n % 50_000 == 0:
            print(f"{label}: {n:,} equations measured", file=sys.stderr, flush=True)
        if n == checkpoint:
            heaps.append((n, len(document_frequency)))
            checkpoint = checkpoint * 2
    if n and (not heaps or heaps[-1][0] != n):
        heaps.append((n, len(document_frequency)))
    return {
        "equations": n,
        "papers": len(per_paper),
        "terms_per_equation": _summary(terms),
        "size_symbols": _summary(sizes),
        "spans_per_equation": _summary(spans),
        "context_chars": _summary(contexts),
        "equations_per_paper": _summary(list(per_paper.values())),
        "distinct_terms": len(document_frequency),
        "heaps": heaps,
        "heaps_beta": _heaps_beta(heaps),
        "zipf_s": _zipf_slope(document_frequency),
        "df1_share": round(sum(df == 1 for df in document_frequency.values()) / max(len(document_frequency), 1), 3),
        "top_df_share": round(max(document_frequency.values(), default=0) / max(n, 1), 3),
    }


def _heaps_beta(points: list[tuple[int, int]]) -> float | None:
    if len(points) < 2:
        return None
    (n0, v0), (n1, v1) = points[0], points[-1]
    return round(math.log(v1 / v0) / math.log(n1 / n0), 3)


def _zipf_slope(document_frequency: Counter[str]) -> float | None:
    ranked = np.sort(np.fromiter(document_frequency.values(), dtype=float))[::-1]
    ranks = np.arange(1, len(ranked) + 1, dtype=float)
    window = (ranks >= 10) & (ranks <= 10_000)
    if window.sum() < 10:
        return None
    slope = np.polyfit(np.log(ranks[window]), np.log(ranked[window]), 1)[0]
    return round(float(-slope), 3)


def compare_collections(
    real: list[Path], generated: Path, sizes: list[int], *, variants_only: bool = False, quiet: bool = True
) -> dict[str, Any]:
    """The figures of the real collection (all its distinct formulas) and of the generated one at each size.

    Args:
        real: the real papers JSONL.
        generated: the generated collection.
        sizes: how many of the generated collection's first equations to measure, each.
        variants_only: measure only the generated papers, not the real papers of its round 0.
    """
    out: dict[str, Any] = {"real": distributions(collection_equations(real, None))}
    for size in sizes:
        out[f"generated {size:,}"] = distributions(collection_equations([generated], size, variants_only=variants_only))
    return out


_ROWS = (
    ("equations", lambda f: f"{f['equations']:,}"),
    ("papers", lambda f: f"{f['papers']:,}"),
    ("structural terms per equation, mean / median / p90", lambda f: _three(f["terms_per_equation"])),
    ("formula size in symbols, mean / median / p90", lambda f: _three(f["size_symbols"])),
    ("spans per equation (1 in 10), mean / median / p90", lambda f: _three(f["spans_per_equation"])),
    ("equations per paper, mean / median / p90", lambda f: _three(f["equations_per_paper"])),
    ("context characters, mean / median / p90", lambda f: _three(f["context_chars"])),
    ("distinct terms", lambda f: f"{f['distinct_terms']:,}"),
    ("Heaps beta (distinct terms ~ n^beta)", lambda f: str(f["heaps_beta"])),
    ("Zipf s of term df (ranks 10-10k)", lambda f: str(f["zipf_s"])),
    ("terms in one equation only", lambda f: f"{f['df1_share']:.1%}"),
    ("most common term's df / equations", lambda f: f"{f['top_df_share']:.1%}"),
)


def _three(summary: dict[str, float]) -> str:
    return f"{summary['mean']:g} / {summary['median']:g} / {summary['p90']:g}"


def format_table(figures: dict[str, Any]) -> str:
    """The figures as a Markdown table, one column per collection."""
    names = list(figures)
    lines = ["| | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for label, cell in _ROWS:
        lines.append(f"| {label} | " + " | ".join(cell(figures[name]) for name in names) + " |")
    heaps = {name: dict(figures[name]["heaps"]) for name in names}
    for n in sorted({n for points in heaps.values() for n in points}):
        if n >= 8000:
            row = " | ".join(f"{heaps[name][n]:,}" if n in heaps[name] else "" for name in names)
            lines.append(f"| distinct terms at {n:,} equations | {row} |")
    return "\n".join(lines)
