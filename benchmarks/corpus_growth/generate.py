"""The generator's run: real papers JSONL in, a collection of distinct formulas with their papers out, in the same
format (ingest/FORMAT.md), so that `eqsearch ingest run` indexes it with the production writers.

The collection grows in rounds over the input papers. Round 0 is the real papers themselves, each formula kept once
(its first occurrence; later repeats are dropped). Each later round writes one new paper per real paper, with the
real paper's sections, metadata and macros, in a notation of its own (`variants.paper_notation`): every formula
renamed by it, some constants changed, some right-hand sides exchanged with another paper of the same field, the
contexts with some sentences drawn from other real contexts of the field. A formula whose MathML (attributes aside)
was already written is tried twice more with other changes, then dropped, so no two equations are alike. Papers and
equations are read and written one paper at a time; only the 64-bit hashes of the formulas written stay in memory
(about 70 bytes each). Each paper draws from its own generator, seeded by the seed, the round and its position, so
the same inputs and seed give the same bytes. The output is written to ``OUT.partial`` and renamed when complete.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.index.documents import inline_indexable
from eqsearch.ingest.records import FORMAT_VERSION, read_papers

from corpus_growth.pools import SENTENCE_END, Pools, converted_formulas, field_of, learn_pools, load_areas
from corpus_growth.symbols import hidden_symbols
from corpus_growth.variants import (
    RANK_WINDOW,
    exchange_fraction_part,
    exchange_right_hand_side,
    formula_hash,
    paper_notation,
    rank_letters,
    vary,
    window_for_round,
)

#: Tries per formula before it is dropped as one the generator cannot make distinct.
TRIES = 3
#: Notations kept for the formulas that must try again (windows twice as wide: a second chance must differ more).
SPARE_NOTATIONS = 64


@dataclass(frozen=True)
class GrowthConfig:
    """One run of the generator.

    Args:
        inputs: papers JSONL files written by ``eqsearch ingest extract`` (plain or ``.gz``).
        out: the collection to write (papers JSONL); ``OUT.stats.json`` gets the run's figures.
        equations: how many equation documents (displays and indexed inline formulas) to write.
        seed: the seed of every random choice.
        areas: JSON files of paper id -> field, for papers without arXiv metadata
            (``benchmarks/realpapers*_counts.json``).
        originals: whether the real papers themselves (round 0) are part of the collection.
        exchange_share: the share of formulas whose right-hand side is exchanged (where one can be).
        constant_share: the chance each constant of a formula is changed.
        context_share: the chance a context or an abstract gets one sentence drawn from its field.
        max_rounds: the most rounds over the inputs.
    """

    inputs: tuple[Path, ...]
    out: Path
    equations: int
    seed: int = 0
    areas: tuple[Path, ...] = ()
    originals: bool = True
    exchange_share: float = 0.25
    constant_share: float = 0.5
    context_share: float = 0.5
    max_rounds: int = 1000


@dataclass
class GrowthReport:
    """What a run wrote and how fast."""

    equations: int = 0
    displays: int = 0
    inline: int = 0
    papers: int = 0
    rounds: int = 0
    real_papers: int = 0
    real_formulas: int = 0
    original_equations: int = 0
    renamed: int = 0
    constants_changed: int = 0
    exchanged: int = 0
    retried: int = 0
    dropped_duplicates: int = 0
    dropped_not_indexable: int = 0
    pass_seconds: float = 0.0
    seconds: float = 0.0
    equations_per_s: float = 0.0
    per_round: list[int] = field(default_factory=list)


def check_inputs(inputs: tuple[Path, ...], areas: tuple[Path, ...] = ()) -> None:
    """Refuse a missing file, or one whose first line is not a paper of papers JSONL, naming it and what to do."""
    for path in areas:
        if not path.is_file():
            raise EqsearchError(f"{path}: no such file", hint="--areas takes JSON files of paper id -> field")
    for path in inputs:
        if not path.is_file():
            raise EqsearchError(
                f"{path}: no such file", hint="give papers JSONL files written by eqsearch ingest extract"
            )
        first = next(read_papers(path), None)
        if first is None or not isinstance(first, dict) or "sections" not in first or "id" not in first:
            raise EqsearchError(
                f"{path}: not papers JSONL (its first line has no 'id' and 'sections')",
                hint="see ingest/FORMAT.md; eqsearch ingest extract SRC --out DIR writes DIR/papers.jsonl",
            )


def _with_sentence(text: str, pool: list[str], rng: random.Random, keep: int | None) -> str:
    """``text`` with one of its sentences replaced by a sentence of ``pool``, never the one at index ``keep`` (-1:
    the last sentence before a formula, 0: the first after it, which lead to and from it; None: any)."""
    parts = SENTENCE_END.split(text)
    if not pool or len(parts) < 2:
        return text
    kept = None if keep is None else keep % len(parts)
    parts[rng.choice([i for i in range(len(parts)) if i != kept])] = rng.choice(pool)
    return " ".join(parts)


def _further_macros(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The user macros of a paper's further documents (a supplement's own): they hide letters too."""
    return [m for document in record.get("documents") or [] for m in document.get("macros") or []]


class _Grower:
    def __init__(self, config: GrowthConfig, pools: Pools, report: GrowthReport) -> None:
        self.config, self.pools, self.report = config, pools, report
        self.ranked = rank_letters(pools.letters)
        self.seen: set[int] = set()
        self.ids_round, self.ids = -1, set[str]()  # the paper ids the current round has written
        # the notations a formula tries when its paper's made a duplicate: made once (seeded), drawn from after
        spare = random.Random(f"{config.seed}:spare notations")
        self.spare_notations = [paper_notation(self.ranked, spare, 2 * RANK_WINDOW) for _ in range(SPARE_NOTATIONS)]
        self.areas = load_areas(config.areas)

    def paper(self, record: dict[str, Any], round_no: int, position: int, budget: int) -> dict[str, Any] | None:
        config, report = self.config, self.report
        rng = random.Random(f"{config.seed}:{round_no}:{position}")
        paper_field = field_of(record, self.areas)
        pool = self.pools.sentences.get(paper_field, [])
        macros = {
            str(m.get("name", "")).lstrip("\\"): (int(m.get("nargs") or 0), m.get("default"), str(m.get("body") or ""))
            for m in [*(record.get("macros") or []), *_further_macros(record)]
        }
        notation = paper_notation(self.ranked, rng, window_for_round(round_no)) if round_no else {}
        paper_id = self._unique_id(f"g{round_no}/{record['id']}" if round_no else str(record["id"]), round_no)
        version = record.get("version") if not round_no else None
        key = paper_id if version is None else f"{paper_id}v{version}"
        sections, displays, inline = [], 0, 0
        for section in record.get("sections") or []:
            out_section = {k: v for k, v in section.items() if k not in ("equations", "inline")}
            out_section["equations"], out_section["inline"] = [], []
            sections.append(out_section)
            for is_inline, formula in converted_formulas({"sections": [section]}):
                if displays + inline >= budget:
                    break
                made = self.formula(formula, is_inline, round_no, notation, rng, paper_field, macros)
                if made is None:
                    continue
                latex, mathml = made
                context = {}
                for side, keep in (("context_before", -1), ("context_after", 0)):
                    text = formula.get(side) or ""
                    if round_no and rng.random() < config.context_share:
                        text = _with_sentence(text, pool, rng, keep)
                    context[side] = text
                number = inline if is_inline else displays
                out = {
                    **formula,
                    "id": f"{key}:i{number}" if is_inline else f"{key}:{number}",
                    "number": number,
                    "latex": latex,
                    "mathml": mathml,
                    **context,
                }
                if is_inline:
                    out["length"] = len(latex) + 2
                    out_section["inline"].append(out)
                    inline += 1
                else:
                    out["length"] = len(latex)
                    out_section["equations"].append(out)
                    displays += 1
        if not displays + inline:
            return None
        abstract = record.get("abstract")
        if round_no and abstract and rng.random() < config.context_share:
            abstract = _with_sentence(abstract, pool, rng, None)
        report.displays += displays
        report.inline += inline
        report.equations += displays + inline
        report.papers += 1
        return {
            "format_version": FORMAT_VERSION,
            "id": paper_id,
            "version": version,
            "key": key,
            "source": f"scale_corpus:round{round_no}:{record.get('source') or record['id']}",
            "kind": record.get("kind") or "jsonl",
            "main_file": record.get("main_file"),
            "title": record.get("title"),
            "abstract": abstract,
            "authors": record.get("authors") or [],
            "metadata": record.get("metadata"),
            "macros": record.get("macros") or [],
            "citations": record.get("citations") or [],
            "bibliography_entries": record.get("bibliography_entries") or 0,
            "references": record.get("references") or [],
            "links": record.get("links") or [],
            "status": "ok",
            "error": None,
            "warnings": [],
            "timings": {},
            "documents": record.get("documents") or [],
            "sections": sections,
        }

    def _unique_id(self, paper_id: str, round_no: int) -> str:
        """``paper_id``, or with ``~2``, ``~3``.. when the round already has it: inputs may hold a paper twice (two
        real-paper sets share 7 papers), and a paper id, like its equations', must be written once."""
        if round_no != self.ids_round:
            self.ids_round, self.ids = round_no, set()
        unique, n = paper_id, 1
        while unique in self.ids:
            n += 1
            unique = f"{paper_id}~{n}"
        self.ids.add(unique)
        return unique

    def formula(
        self,
        formula: dict[str, Any],
        is_inline: bool,
        round_no: int,
        notation: dict[str, str],
        rng: random.Random,
        paper_field: str,
        macros: dict[str, tuple[int, str | None, str]],
    ) -> tuple[str, str] | None:
        config, report = self.config, self.report
        macro_names = frozenset(macros)
        for attempt in range(TRIES if round_no else 1):
            latex, mathml = formula["latex"], formula["mathml"]
            exchanged = False
            if round_no and rng.random() < config.exchange_share * (1 + attempt):
                swapped = self._exchange(latex, mathml, is_inline, paper_field, macro_names, rng)
                if swapped is not None:
                    (latex, mathml), exchanged = swapped, True
            if round_no:
                if attempt:
                    notation = rng.choice(self.spare_notations)
                hidden = hidden_symbols(latex, macros)
                variant = vary(latex, mathml, notation, rng, config.constant_share if attempt == 0 else 1.0, hidden)
                latex, mathml = variant.latex, variant.mathml
            digest = formula_hash(mathml)
            if digest in self.seen:
                continue
            # renaming and new constants keep the symbols' count; an exchange may not
            if is_inline and (exchanged or not round_no) and not inline_indexable(latex):
                report.dropped_not_indexable += 1
                return None
            self.seen.add(digest)
            if round_no:
                report.renamed += variant.renamed > 0
                report.constants_changed += variant.constants > 0
                report.exchanged += exchanged
                report.retried += attempt > 0
            else:
                report.original_equations += 1
            return latex, mathml
        report.dropped_duplicates += 1
        return None

    def _exchange(
        self,
        latex: str,
        mathml: str,
        is_inline: bool,
        paper_field: str,
        macro_names: frozenset[str],
        rng: random.Random,
    ) -> tuple[str, str] | None:
        """A right-hand side or a fraction's part from another formula of the field, whichever the formula has (a
        coin decides when it has both)."""
        right_sides = self.pools.donors.get((paper_field, is_inline))
        parts = self.pools.fraction_parts.get(paper_field)
        ways = []
        if right_sides:
            ways.append(lambda: exchange_right_hand_side(latex, mathml, rng.choice(right_sides), macro_names))
        if parts:
            ways.append(lambda: exchange_fraction_part(latex, mathml, rng.choice(parts), macro_names, rng))
        if len(ways) == 2 and rng.random() < 0.5:
            ways.reverse()
        for way in ways:
            swapped = way()
            if swapped is not None:
                return swapped
        return None


def grow(config: GrowthConfig, progress: Callable[[int], None] | None = None) -> GrowthReport:
    """Write the collection `GrowthConfig` asks for; see the module docstring.

    Args:
        config: the run.
        progress: called with the number of equations written after each paper.

    Returns:
        The run's figures (also written to ``OUT.stats.json``).

    Raises:
        EqsearchError: an input is missing or not papers JSONL, or the inputs hold no formula with MathML.
    """
    check_inputs(config.inputs, config.areas)
    started = time.perf_counter()
    pools = learn_pools(list(config.inputs), load_areas(config.areas), config.seed)
    report = GrowthReport(real_papers=pools.papers, real_formulas=pools.formulas)
    report.pass_seconds = round(time.perf_counter() - started, 2)
    if not pools.formulas:
        raise EqsearchError(
            "the inputs hold no converted formula (status ok or approximate, with MathML)",
            hint="run eqsearch ingest extract without --no-convert",
        )
    grower = _Grower(config, pools, report)
    partial = config.out.with_name(config.out.name + ".partial")
    config.out.parent.mkdir(parents=True, exist_ok=True)
    done = False
    try:
        with partial.open("w", encoding="utf-8") as handle:
            for round_no in range(0 if config.originals else 1, config.max_rounds + 1):
                before = report.equations
                position = 0
                for path in config.inputs:
                    for record in read_papers(path):
                        position += 1
                        if report.equations >= config.equations or record.get("status", "ok") != "ok":
                            continue
                        record.pop("_line", None)
                        paper = grower.paper(record, round_no, position, config.equations - report.equations)
                        if paper is not None:
                            handle.write(json.dumps(paper, ensure_ascii=False) + "\n")
                            if progress is not None:
                                progress(report.equations)
                report.rounds += 1
                report.per_round.append(report.equations - before)
                if report.equations >= config.equations or report.equations == before:
                    break
        os.replace(partial, config.out)
        done = True
    finally:
        if not done:
            partial.unlink(missing_ok=True)
    report.seconds = round(time.perf_counter() - started, 2)
    report.equations_per_s = round(report.equations / max(report.seconds, 1e-9), 1)
    stats = config.out.with_name(config.out.name + ".stats.json")
    stats.write_text(json.dumps({"config": _config_json(config), **asdict(report)}, indent=1) + "\n")
    if report.equations < config.equations:
        print(
            f"warning: the inputs gave {report.equations:,} distinct equations, fewer than {config.equations:,}",
            file=sys.stderr,
        )
    return report


def _config_json(config: GrowthConfig) -> dict[str, Any]:
    out = asdict(config)
    out["inputs"] = [str(p) for p in config.inputs]
    out["out"], out["areas"] = str(config.out), [str(p) for p in config.areas]
    return out
