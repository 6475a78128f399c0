"""Training data of the structure-bag encoder: the corpus's formulas, deduplicated and split by document, as terms.

`corpus_formulas` reads a papers JSONL (ingest/FORMAT.md): every display and inline formula with MathML, once per
distinct MathML, each held out or not with its document (a hash of the split seed and the paper id, as
`training.dataset.split_papers` does, so that no held-out document's formula is trained on; a formula shared by
several documents belongs to the first that has it). `write_formula_file` stores them as gzipped JSON lines, the
compressed file a GPU run carries. `term_data` turns formulas into `TermData`: for each one the 64-bit digests of its
terms (`engine.model.structure_bag`: BM25 tokens and sub-expression hashes) with their counts, from which both the
model's inputs (hash slots) and the teacher's BM25 weights (`training.structure_teacher`) are made. `augmented_view`
makes a structure-preserving variant of a formula: its letters renamed consistently, the terms of a sum and the two
sides of an equation commuted. `markup_terms` (an experiment, ``term_data(markup=True)``) adds terms the structural
channel does not have, read from the MathML tree itself as the KDD'20 graph network reads it: every element's tag
(with its text at a leaf), each parent-child pair and each pair of adjacent siblings; the runtime encoder does not
compute them yet, so a model trained with them is scored offline only.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from eqsearch.engine.model.layout import LayoutNode, parse_layout
from eqsearch.engine.model.structure import structure_of_layout
from eqsearch.engine.model.structure_bag import StructureFeatures, structure_terms, term_digest


@dataclass(frozen=True)
class FormulaRecord:
    """One distinct formula of the corpus: its document, whether that document is held out, its MathML."""

    doc: str
    held_out: bool
    mathml: str


def held_out_document(paper_id: str, test_fraction: float, seed: int) -> bool:
    """Whether a document goes to the held-out side: a hash of ``(seed, paper id)`` below ``test_fraction``."""
    digest = hashlib.sha256(f"{seed}:{paper_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < test_fraction


def _formulas_of(record: dict, inline: bool) -> Iterator[str]:
    for section in record.get("sections") or []:
        entries = list(section.get("equations") or [])
        if inline:
            entries += list(section.get("inline") or [])
        for entry in entries:
            mathml = entry.get("mathml") if isinstance(entry, dict) else None
            if mathml:
                yield mathml


def corpus_formulas(
    papers: str | Path, *, inline: bool = True, test_fraction: float = 0.2, seed: int = 0
) -> list[FormulaRecord]:
    """The distinct formulas (by MathML) of a papers JSONL (plain or ``.gz``), in file order, with their split."""
    path = Path(papers)
    opener = gzip.open if path.suffix == ".gz" else open
    seen: set[bytes] = set()
    out: list[FormulaRecord] = []
    with opener(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            record = json.loads(line)
            doc = str(record.get("id") or record.get("paper_id") or "")
            held = held_out_document(doc, test_fraction, seed)
            for mathml in _formulas_of(record, inline):
                key = hashlib.blake2b(mathml.encode("utf-8"), digest_size=16).digest()
                if key not in seen:
                    seen.add(key)
                    out.append(FormulaRecord(doc, held, mathml))
    return out


def write_formula_file(records: Iterable[FormulaRecord], path: str | Path) -> int:
    """Gzipped JSON lines ``{"doc", "held_out", "mathml"}``; returns the number written."""
    n = 0
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as out:
        for r in records:
            out.write(json.dumps({"doc": r.doc, "held_out": r.held_out, "mathml": r.mathml}) + "\n")
            n += 1
    return n


def read_formula_file(path: str | Path) -> list[FormulaRecord]:
    """Read `write_formula_file`'s output."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [FormulaRecord(d["doc"], bool(d["held_out"]), d["mathml"]) for d in map(json.loads, lines)]


# ---- augmentation -------------------------------------------------------------------------------------------------

_LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [chr(c) for c in range(ord("A"), ord("Z") + 1)]
_LETTERS += list("αβγδεζηθικλμνξπρστυφχψω")


def _all_nodes(baseline: list[LayoutNode]) -> Iterator[LayoutNode]:
    for node in baseline:
        yield node
        for attached in node.children.values():
            yield from _all_nodes(attached)


def _commute(baseline: list[LayoutNode], rng: random.Random) -> list[LayoutNode]:
    """Swap the sides of one ``=`` and shuffle the ``+``-separated terms of each side (a - b + c = c + a - b)."""
    sides: list[list[LayoutNode]] = [[]]
    for node in baseline:
        if node.label == "O:=" and not node.children:
            sides.append([])
        else:
            sides[-1].append(node)
    if len(sides) == 2 and rng.random() < 0.5:
        sides.reverse()
    out: list[LayoutNode] = []
    for k, side in enumerate(sides):
        terms: list[list[LayoutNode]] = [[]]
        for node in side:
            if node.label == "O:+" and not node.children:
                terms.append([])
            else:
                terms[-1].append(node)
        if len(terms) > 1 and all(terms):
            rng.shuffle(terms)
        for j, term in enumerate(terms):
            if j:
                out.append(LayoutNode("O:+"))
            out.extend(term)
        if k < len(sides) - 1:
            out.append(LayoutNode("O:="))
    return out


def augmented_view(mathml: str, rng: random.Random) -> list[LayoutNode]:
    """A structure-preserving variant of a formula's layout tree: letters renamed one to one (each letter to another,
    consistently), operands of the top baseline's sums and equation commuted."""
    baseline = parse_layout(mathml)
    letters = sorted({n.label[2:] for n in _all_nodes(baseline) if n.label.startswith("V:")})
    if letters:
        targets = rng.sample(_LETTERS, k=min(len(letters), len(_LETTERS)))
        mapping = dict(zip(letters, targets, strict=False))
        for node in _all_nodes(baseline):
            if node.label.startswith("V:") and node.label[2:] in mapping:
                node.label = "V:" + mapping[node.label[2:]]
    return _commute(baseline, rng)


# ---- terms --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TermData:
    """The terms of N formulas in CSR form.

    Attributes:
        offsets: ``[N + 1]`` int64; formula i's terms are ``offsets[i]:offsets[i + 1]``.
        digest: ``[T]`` uint64, `engine.model.structure_bag.term_digest` of each term.
        count: ``[T]`` float32, how often the term occurs in the formula.
        token: ``[T]`` bool, a BM25 token (True) or a sub-expression hash (False).
        size: ``[T]`` float32, a sub-expression's size in symbols (0 for a token), for the teacher's span match.
    """

    offsets: np.ndarray
    digest: np.ndarray
    count: np.ndarray
    token: np.ndarray
    size: np.ndarray

    def __len__(self) -> int:
        return int(self.offsets.shape[0] - 1)

    def rows(self) -> np.ndarray:
        """For each term, its formula. Shapes: ``[T]`` int64."""
        return np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.offsets))

    def save(self, path: str | Path) -> None:
        np.savez(path, offsets=self.offsets, digest=self.digest, count=self.count, token=self.token, size=self.size)

    @classmethod
    def load(cls, path: str | Path) -> TermData:
        with np.load(path) as data:
            return cls(data["offsets"], data["digest"], data["count"], data["token"], data["size"])


def _markup_label(element: ET.Element) -> str:
    tag = element.tag.rsplit("}", 1)[-1]
    text = (element.text or "").strip()
    return f"{tag}:{text}" if text and not len(element) else tag


def markup_terms(mathml: str) -> Counter[str]:
    """Terms of a formula's MathML tree (module docstring): ``u`` + each element's label (its tag, and its text at a
    leaf), ``p`` + parent and child labels, ``c`` + two adjacent siblings' labels; the ``semantics``/``annotation``
    wrapper's LaTeX is left out. A formula whose MathML does not parse has none."""
    try:
        root = ET.fromstring(mathml)
    except ET.ParseError:
        return Counter()
    terms: Counter[str] = Counter()
    stack = [root]
    while stack:
        node = stack.pop()
        children = [c for c in node if not c.tag.endswith("annotation")]
        label = _markup_label(node)
        terms["u" + label] += 1
        for k, child in enumerate(children):
            child_label = _markup_label(child)
            terms[f"p{label}>{child_label}"] += 1
            if k:
                terms[f"c{_markup_label(children[k - 1])}|{child_label}"] += 1
            stack.append(child)
    return terms


def _terms_of(
    item: tuple[str, int | None, bool, bool],
) -> tuple[list[int], list[float], list[bool], list[float]]:
    mathml, view_seed, spans, markup = item
    try:
        baseline = parse_layout(mathml) if view_seed is None else augmented_view(mathml, random.Random(view_seed))
        structure = structure_of_layout(baseline)
    except ValueError:
        return [], [], [], []
    terms = structure_terms(structure, spans)
    if markup:
        if view_seed is not None:
            raise ValueError("markup terms are read from the MathML: a view has none (train without views)")
        terms.update({"m" + term: count for term, count in markup_terms(mathml).items()})
    return (
        [term_digest(t) for t in terms],
        [float(c) for c in terms.values()],
        [t.startswith("t") for t in terms],
        [float(structure.spans[t[1:]]) if t.startswith("s") else 0.0 for t in terms],
    )


def term_data(
    mathml: Sequence[str],
    features: StructureFeatures,
    *,
    view_seed: int | None = None,
    workers: int = 1,
    markup: bool = False,
) -> TermData:
    """The terms of formulas (of their augmented views when ``view_seed`` is given: formula i uses seed
    ``view_seed + i``; with ``markup``, also `markup_terms`, not BM25 tokens), computed in ``workers`` processes."""
    items = [(m, None if view_seed is None else view_seed + i, features.spans, markup) for i, m in enumerate(mathml)]
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(_terms_of, items, chunksize=256))
    else:
        results = [_terms_of(item) for item in items]
    sizes = np.array([len(r[0]) for r in results], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    return TermData(
        offsets=offsets,
        digest=np.array([d for r in results for d in r[0]], dtype=np.uint64),
        count=np.array([c for r in results for c in r[1]], dtype=np.float32),
        token=np.array([t for r in results for t in r[2]], dtype=bool),
        size=np.array([z for r in results for z in r[3]], dtype=np.float32),
    )


def term_slots(digest: np.ndarray, features: StructureFeatures) -> np.ndarray:
    """The table slots of term digests, as `engine.model.structure_bag.hash_term` gives them.

    Shapes: returns ``[T, hashes]``.
    """
    parts = [
        ((digest >> np.uint64(32 * i)) & np.uint64(0xFFFFFFFF)) % np.uint64(features.buckets)
        for i in range(features.hashes)
    ]
    return np.stack(parts, axis=1).astype(np.int64)
