"""The structure of a formula as search terms: its symbol layout tree (`engine.model.layout`, read from MathML or,
when KaTeX could not convert it, from the LaTeX) turned into tokens for BM25 and into hashed sub-expressions for the
rerank.

Two representations come out of it, both made by `formula_structure` for the index and for the query alike:

- ``tokens``: every symbol, and every pair of symbols joined by a path of at most `MAX_PATH` relations, with the
  path (``V:x|N:2|sup``: x has the superscript 2); pairs are also emitted with variables and numbers generalised
  (``V:*|N:*|sup``) so that the same shape in other letters still matches. BM25 over these is the structural
  channel.
- ``spans``: hashes of every contiguous run of a baseline with everything attached to it, of the lengths in
  `SPAN_LENGTHS` (1 to 6 symbols, then a ladder up to 64), each with its size in symbols, in two kinds
  (`SPAN_KINDS`): ``r``, exact up to a consistent renaming of the variables (each run's letters renamed in order of
  first appearance, so ``x^2 + y^2`` = ``a^2 + b^2`` but not ``a^2 + a^2``: the same expression in another field's
  letters), and ``g``, generalised (every letter and number alike). The largest span of each kind a candidate shares
  with the query, relative to the larger of the two formulas, is the finer structural match used to rerank the top
  candidates. Queries also make ``e`` spans, exact with the letters kept, which indices made before structure
  version 2 hold instead of ``r``.


A query may hold variables (``?a``, `engine.model.patterns`): their nodes are marked (`LayoutNode.variable`), and
`structure_of_layout` is then told to leave out every term that touches one (a variable stands for any run of
symbols, so no symbol, pair or span through it is known).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from eqsearch.engine.model.layout import (
    CanonicalText,
    LayoutNode,
    generalised_label,
    layout_baselines,
    layout_nodes,
    parse_layout,
    parse_layout_latex,
)

#: Bump when the tokens or spans change: recorded in the equations index, whose documents then need recomputing.
#: Version 2: ``r`` spans (letters renamed) in place of ``e`` (letters kept). Version 3: spans of up to 64 symbols
#: (`SPAN_LENGTHS`), not 6.
STRUCTURE_VERSION = 3
#: The span kinds an equation document holds: ``r`` exact up to renamed variables, ``g`` generalised.
SPAN_KINDS = ("r", "g")
#: The span kinds a query makes: those, and ``e`` (letters kept) for indices made before structure version 2.
QUERY_SPAN_KINDS = ("e", "r", "g")
#: Longest relation path between the two symbols of a pair token.
MAX_PATH = 3
#: The lengths (baseline symbols) of the runs hashed as spans: every run of 1 to 6 (all that version 2 had), then a
#: ladder that grows by half at most (8, 12, ... 64), so that a long shared run is credited at two thirds of its length
#: or more, for far fewer spans than every length up to 64 (version 3; why, with its figures:
#: ``docs/decisions/structural-rerank.md``).
SPAN_LENGTHS = (1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64)


@dataclass(frozen=True)
class FormulaStructure:
    """The search terms of one formula.

    Attributes:
        tokens: BM25 terms (symbols and symbol pairs with their relation path), in tree order, repeats kept.
        spans: ``hash -> size`` of the formula's sub-expressions (exact ``e…`` and generalised ``g…``).
        size: symbols in the layout tree (0 for an empty formula).
    """

    tokens: tuple[str, ...]
    spans: dict[str, int]
    size: int

    @property
    def text(self) -> str:
        """The tokens as one whitespace-separated string, the form the index and the query take."""
        return " ".join(self.tokens)


# --- tokens and spans ---------------------------------------------------------------------------------------------


#: Tells `structure_of_layout` which nodes (query variables) no term may touch.
Skip = Callable[[LayoutNode], bool]


def _pairs(baseline: list[LayoutNode], max_path: int, skip: Skip | None = None) -> Iterator[tuple[str, str, str]]:
    """``(from, to, path)`` for every symbol reachable in at most ``max_path`` steps (next, or into a relation);
    with ``skip``, no path starts at, reaches or passes through a skipped node."""
    for line in layout_baselines(baseline):
        for start, node in enumerate(line):
            if skip is not None and skip(node):
                continue
            frontier = [("", line, start)]
            for _ in range(max_path):
                reached = []
                for path, at_line, at in frontier:
                    steps = [("n", at_line, at + 1)] if at + 1 < len(at_line) else []
                    steps += [(rel, attached, 0) for rel, attached in at_line[at].children.items() if attached]
                    for relation, next_line, index in steps:
                        if skip is not None and skip(next_line[index]):
                            continue
                        step_path = f"{path}.{relation}" if path else relation
                        yield node.label, next_line[index].label, step_path
                        reached.append((step_path, next_line, index))
                frontier = reached


def _touches(node: LayoutNode, skip: Skip) -> bool:
    return any(skip(n) for n in layout_nodes([node]))


_VARIABLE = re.compile(r"V:[^ {},]+")


def renamed_variables(text: str) -> str:
    """A canonical text with its letters renamed in order of first appearance (``V:y ... V:x ... V:y`` ->
    ``V:#0 ... V:#1 ... V:#0``): equal for the same expression written with other letters, consistently."""
    names: dict[str, str] = {}
    return _VARIABLE.sub(lambda found: names.setdefault(found.group(0), f"V:#{len(names)}"), text)


def _spans(
    baseline: list[LayoutNode],
    lengths: Sequence[int],
    skip: Skip | None = None,
    kinds: Sequence[str] = SPAN_KINDS,
) -> dict[str, int]:
    # Every formula of the index passes here (hundreds of spans each): each node's canonical strings and size, and
    # each distinct text's digest, are made once per formula; a run's text grows by one symbol at a time.
    spans: dict[str, int] = {}
    text_of = {False: CanonicalText(False), True: CanonicalText(True)}
    size_of: dict[int, int] = {}
    digest_of: dict[str, str] = {}
    kinds_of = {False: [kind for kind in ("e", "r") if kind in kinds], True: [kind for kind in ("g",) if kind in kinds]}
    hashed_lengths = frozenset(lengths)
    longest = max(lengths, default=0)

    def size(node: LayoutNode) -> int:
        found = size_of.get(id(node))
        if found is None:
            found = size_of[id(node)] = 1 + sum(size(n) for line in node.children.values() for n in line)
        return found

    for line in layout_baselines(baseline):
        sizes = [size(n) for n in line]
        blocked = [skip is not None and _touches(n, skip) for n in line]
        for general in (False, True):
            if not kinds_of[general]:
                continue
            texts = [text_of[general](n) for n in line]
            for start in range(len(line)):
                total, text = 0, ""
                for end in range(start, min(len(line), start + longest)):
                    if blocked[end]:
                        break
                    total += sizes[end]
                    text = f"{text} {texts[end]}" if text else texts[end]
                    if end - start + 1 not in hashed_lengths:
                        continue
                    for kind in kinds_of[general]:
                        hashed = renamed_variables(text) if kind == "r" else text
                        digest = digest_of.get(hashed)
                        if digest is None:
                            digest = digest_of[hashed] = hashlib.blake2b(
                                hashed.encode("utf-8"), digest_size=8
                            ).hexdigest()
                        key = kind + digest
                        if total > spans.get(key, 0):
                            spans[key] = total
    return spans


def structure_of_layout(
    baseline: list[LayoutNode],
    max_path: int = MAX_PATH,
    span_lengths: Sequence[int] = SPAN_LENGTHS,
    *,
    skip: Skip | None = None,
    span_kinds: Sequence[str] = SPAN_KINDS,
) -> FormulaStructure:
    """Tokens and spans of a symbol layout tree (see the module docstring).

    Args:
        baseline: the tree's main baseline.
        max_path: longest relation path of a pair token.
        span_lengths: the lengths, in baseline symbols, of the runs hashed as spans.
        skip: nodes no token or span may touch (a query's variables); their own symbols are left out, and the size
            counts the others only. None (the index, and queries without variables): every node counts.
        span_kinds: which kinds of spans (`SPAN_KINDS` for a document, `QUERY_SPAN_KINDS` for a query).
    """
    tokens = [node.label for node in layout_nodes(baseline) if skip is None or not skip(node)]
    size = len(tokens)
    for source, target, path in _pairs(baseline, max_path, skip):
        tokens.append(f"{source}|{target}|{path}")
        general = (generalised_label(source), generalised_label(target))
        if general != (source, target):
            tokens.append(f"{general[0]}|{general[1]}|{path}")
    return FormulaStructure(tuple(tokens), _spans(baseline, span_lengths, skip, span_kinds), size)


def formula_structure(mathml: str | bytes | None, latex: str | None = None) -> FormulaStructure:
    """The structure of a formula from its MathML, or from its LaTeX when there is no (well-formed) MathML.

    The one function that makes the structural terms, for the index and for the query alike.
    """
    if mathml:
        try:
            return _structure_of_mathml(mathml.decode("utf-8") if isinstance(mathml, bytes) else mathml)
        except ValueError:
            pass
    return structure_of_layout(parse_layout_latex(latex or ""))


@functools.lru_cache(maxsize=512)
def _structure_of_mathml(mathml: str) -> FormulaStructure:
    """`formula_structure` of well-formed MathML, remembered for the last 512 formulas (~15 MB for formulas of the
    ARQMath collection's size): the ingest asks for each formula's structure twice, paper by paper, for the search
    bundle's structure-bag half and then for its structural terms (~1 ms each). Callers never change a structure (its
    ``spans`` are read only). Figures: ``docs/decisions/structure-cache.md``."""
    return structure_of_layout(parse_layout(mathml))
