"""Whether generated LaTeX and generated MathML still say the same thing: a seeded sample of a generated
collection's variant formulas converted again by the project's converter (`engine.latex`, KaTeX in Node workers,
each with its paper's macros), and the structural terms of KaTeX's MathML compared with those of the generated
MathML (as multisets: the index sees nothing else). Also measures the converter's throughput, the cost the generator
avoids by transforming the MathML it already has.
"""

from __future__ import annotations

import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from eqsearch.engine.latex.converter import KatexConverter
from eqsearch.engine.model.structure import formula_structure
from eqsearch.ingest.convert import converter_input
from eqsearch.ingest.records import Paper, read_papers

from corpus_growth.compare import VARIANT_ID


def _sample(collection: Path, size: int, seed: int) -> list[tuple[dict[str, Any], int, Any]]:
    """A reservoir sample of ``(paper record, section document, formula)`` over the variant formulas."""
    rng = random.Random(f"{seed}:check")
    sample: list[tuple[dict[str, Any], int, Any]] = []
    seen = 0
    for record in read_papers(collection):
        if not VARIANT_ID.match(str(record.get("id", ""))):
            continue
        paper = Paper.from_json(record)
        for section in paper.sections:
            for formula in [*section.equations, *section.inline]:
                seen += 1
                item = (record, section.document, formula)
                if len(sample) < size:
                    sample.append(item)
                elif (slot := rng.randrange(seen)) < size:
                    sample[slot] = item
    return sample


def _whole_papers(collection: Path, size: int) -> list[tuple[Paper, int, list[Any]]]:
    """``(paper, document, formulas)`` batches of the first variant papers, whole, until ``size`` formulas: what an
    ingest sends the converter (one batch per document of a paper)."""
    batches: list[tuple[Paper, int, list[Any]]] = []
    count = 0
    for record in read_papers(collection):
        if count >= size:
            break
        if not VARIANT_ID.match(str(record.get("id", ""))):
            continue
        paper = Paper.from_json(record)
        by_document: dict[int, list[Any]] = {}
        for section in paper.sections:
            by_document.setdefault(section.document, []).extend([*section.equations, *section.inline])
        for document, formulas in by_document.items():
            batches.append((paper, document, formulas))
            count += len(formulas)
    return batches


def _job(formula: Any) -> tuple[str, str]:
    """What the ingest sends the converter for a display (`converter_input`) or an inline formula."""
    if hasattr(formula, "environment"):
        return converter_input(formula.latex, formula.environment, formula.environment_args)
    return formula.latex, "math"


def _terms(mathml: str | None) -> Counter[str]:
    return Counter(formula_structure(mathml).tokens) if mathml else Counter()


def check_sample(collection: Path, size: int, seed: int, workers: int, show: int) -> int:
    """Convert the sample and print how many agree; exit status 1 when fewer than 95% do.

    Returns:
        The exit status.
    """
    from eqsearch.engine.latex.converter import KatexConfig

    sample = _sample(collection, size, seed)
    if not sample:
        print(f"{collection}: no generated (g<round>/...) paper in it", file=sys.stderr)
        return 1
    batches: dict[tuple[str, int], list[tuple[dict[str, Any], Any]]] = {}
    for record, document, formula in sample:
        batches.setdefault((record["id"], document), []).append((record, formula))
    outcome: Counter[str] = Counter()
    shown = 0
    started = time.perf_counter()
    with KatexConverter(KatexConfig(workers=workers)) as converter:
        for (_, document), items in batches.items():
            paper = Paper.from_json(items[0][0])
            jobs = [_job(formula) for _, formula in items]
            results = converter.convert_many(jobs, macros=paper.macros_of(document))
            for (record, formula), result in zip(items, results, strict=True):
                if result.mathml is None:
                    outcome["not converted"] += 1
                    verdict = f"not converted ({result.reason})"
                elif _terms(result.mathml) == _terms(formula.mathml):
                    outcome["same terms"] += 1
                    continue
                else:
                    outcome["other terms"] += 1
                    verdict = "other terms"
                if shown < show:
                    shown += 1
                    print(f"{verdict}: {record['id']} {formula.latex[:160]!r}")
        seconds = time.perf_counter() - started
        whole_batches = _whole_papers(collection, size)
        started = time.perf_counter()
        for paper, document, formulas in whole_batches:
            converter.convert_many([_job(f) for f in formulas], macros=paper.macros_of(document))
        whole = sum(len(formulas) for _, _, formulas in whole_batches)
        whole_seconds = time.perf_counter() - started
    agree = outcome["same terms"] / len(sample)
    print(
        f"{len(sample):,} generated formulas converted again with KaTeX in {seconds:.1f} s "
        f"({len(sample) / seconds:,.0f} formulas/s, {workers} worker(s), batched by paper): "
        + ", ".join(f"{name} {count:,}" for name, count in outcome.most_common())
        + f"; agreement {agree:.1%}; whole papers (as an ingest sends them): {whole:,} formulas in "
        f"{whole_seconds:.1f} s ({whole / whole_seconds:,.0f} formulas/s)"
    )
    return 0 if agree >= 0.95 else 1
