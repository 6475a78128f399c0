"""What the generator learns from the real papers in one pass before it writes anything: each paper's field, the
letters' frequencies, and per field a bounded sample of right-hand sides to exchange and of sentences to draw
contexts from.

Samples are reservoirs (Vitter's algorithm R) of fixed size with a seeded generator, so the pass holds a few
megabytes whatever the input, and the same inputs and seed give the same samples.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqsearch.ingest.records import read_papers

from corpus_growth.symbols import mathml_symbols
from corpus_growth.variants import FractionPart, RightHandSide, fraction_parts, right_hand_side

#: Statuses whose formulas have MathML and are indexed (only ``ok`` ones give parts to other formulas).
CONVERTED = frozenset({"ok", "approximate"})
DONORS_PER_FIELD = 400
SENTENCES_PER_FIELD = 3000
#: Where a sentence ends: after ``.``, ``!`` or ``?`` and before a capital, a ``[`` (``[math]``) or a ``$``.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\[$])")


def field_of(record: dict[str, Any], areas: dict[str, str]) -> str:
    """A paper's field, the unit within which right-hand sides and sentences are exchanged: the archive of its first
    arXiv category (``math.CO`` -> ``math``), else its area in ``areas`` (by id), else where it comes from (its kind
    and the first part of its id: ``html:sagemath-doc``, ``docstring:scipy``)."""
    categories = (record.get("metadata") or {}).get("categories") or []
    if isinstance(categories, str):
        categories = categories.split()
    if categories:
        return str(categories[0]).split(".")[0]
    paper_id = str(record.get("id", ""))
    if paper_id in areas:
        return areas[paper_id].split(".")[0]
    head = paper_id[3:].split(".")[0] if paper_id.startswith("py:") else paper_id.split("/")[0]
    return f"{record.get('kind') or 'jsonl'}:{head}"


def load_areas(paths: tuple[Path, ...] | list[Path]) -> dict[str, str]:
    """Paper id -> area from set files that list papers with an ``area`` (``benchmarks/realpapers*_counts.json``:
    ``{"papers": {"<id>": {"area": "math.CO", ...}}}``) or plain ``{"<id>": "<area>"}`` objects; a later file wins."""
    out = {}
    for path in paths:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        papers = data.get("papers", data) if isinstance(data, dict) else {}
        for paper_id, value in papers.items():
            area = value.get("area") if isinstance(value, dict) else value
            if isinstance(area, str) and area:
                out[str(paper_id)] = area
    return out


def sentences(text: str) -> list[str]:
    """The sentences of a context or an abstract (split after ``.``, ``!``, ``?`` before a capital, a ``[`` or a
    ``$``), stripped, of 20 to 400 characters."""
    return [s.strip() for s in SENTENCE_END.split(text or "") if 20 <= len(s.strip()) <= 400]


def converted_formulas(record: dict[str, Any]) -> Iterator[tuple[bool, dict[str, Any]]]:
    """``(inline, formula)`` for each formula of a paper record that has MathML: the displays, then the inline
    formulas, section by section."""
    for section in record.get("sections") or []:
        for equation in section.get("equations") or []:
            if equation.get("mathml") and equation.get("status", "ok") in CONVERTED:
                yield False, equation
        for formula in section.get("inline") or []:
            if formula.get("mathml") and formula.get("status", "ok") in CONVERTED:
                yield True, formula


class _Reservoir:
    def __init__(self, size: int, rng: random.Random) -> None:
        self.size, self.rng, self.seen, self.items = size, rng, 0, []

    def offer(self, item: Any) -> None:
        self.seen += 1
        if len(self.items) < self.size:
            self.items.append(item)
        else:
            slot = self.rng.randrange(self.seen)
            if slot < self.size:
                self.items[slot] = item


@dataclass
class Pools:
    """What the first pass learnt (see the module docstring).

    Attributes:
        letters: how often each identifier character occurs in the real formulas' MathML.
        donors: ``(field, inline)`` -> right-hand sides to exchange.
        fraction_parts: field -> numerators and denominators to exchange.
        sentences: field -> sentences of real contexts and abstracts.
        papers: real papers read; formulas: their formulas with MathML.
    """

    letters: Counter[str] = field(default_factory=Counter)
    donors: dict[tuple[str, bool], list[RightHandSide]] = field(default_factory=dict)
    fraction_parts: dict[str, list[FractionPart]] = field(default_factory=dict)
    sentences: dict[str, list[str]] = field(default_factory=dict)
    papers: int = 0
    formulas: int = 0


def learn_pools(inputs: list[Path], areas: dict[str, str], seed: int) -> Pools:
    """Read every input paper once and learn the `Pools` (seeded: the same inputs and seed give the same pools)."""
    rng = random.Random(f"{seed}:pools")
    donors: dict[tuple[str, bool], _Reservoir] = {}
    texts: dict[str, _Reservoir] = {}
    parts: dict[str, _Reservoir] = {}
    pools = Pools()
    for path in inputs:
        for record in read_papers(path):
            if record.get("status", "ok") != "ok":
                continue
            pools.papers += 1
            paper_field = field_of(record, areas)
            macro_names = frozenset(str(m.get("name", "")).lstrip("\\") for m in record.get("macros") or [])
            reservoir = texts.setdefault(paper_field, _Reservoir(SENTENCES_PER_FIELD, rng))
            for sentence in sentences(record.get("abstract") or ""):
                reservoir.offer(sentence)
            for inline, formula in converted_formulas(record):
                pools.formulas += 1
                pools.letters.update(p.text for p in mathml_symbols(formula["mathml"]).letters)
                for side in ("context_before", "context_after"):
                    for sentence in sentences(formula.get(side) or ""):
                        reservoir.offer(sentence)
                if formula.get("status", "ok") != "ok":
                    continue  # an approximate formula's MathML stands for unknown macros, as its own paper has them
                rhs = right_hand_side(formula["latex"], formula["mathml"], macro_names)
                if rhs is not None and len(rhs.latex) <= 600:
                    donors.setdefault((paper_field, inline), _Reservoir(DONORS_PER_FIELD, rng)).offer(rhs)
                for part in fraction_parts(formula["latex"], formula["mathml"], macro_names):
                    if len(part.latex) <= 300:
                        parts.setdefault(paper_field, _Reservoir(DONORS_PER_FIELD, rng)).offer(part)
    pools.donors = {key: r.items for key, r in donors.items()}
    pools.sentences = {key: r.items for key, r in texts.items()}
    pools.fraction_parts = {key: r.items for key, r in parts.items()}
    return pools
