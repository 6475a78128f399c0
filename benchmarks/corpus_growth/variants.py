"""A formula's variants: its identifiers renamed, its constants changed, its right-hand side exchanged with another
formula's of the same field, each change made to the LaTeX and to the KaTeX MathML by one mapping (`symbols`).

Renaming follows a paper's notation (`Notation`): one mapping per generated paper, so that a letter is renamed alike
in all of the paper's formulas, as an author writing in other letters would. A letter is only swapped with letters of
about the same frequency in the real formulas (a window of the letters ranked by frequency), so that the
collection's term frequencies keep their shape: a rare letter does not become common (4 letters wide, one wider every
8 rounds, since a formula of one letter has only as many names as its window). Latin stays Latin, lowercase
stays lowercase, Greek stays Greek; ``d``, ``e``, ``i``, ``l``, ``o``, ``I``, ``O`` and ``π`` are never renamed or
made (differentials, constants, look-alikes). A renaming that would make two symbols of a formula one is undone
for the letters involved.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from corpus_growth.symbols import (
    GREEK_LOWER,
    GREEK_NAMES,
    GREEK_UPPER,
    Place,
    agreeing,
    latex_fractions,
    latex_symbols,
    mathml_fractions,
    mathml_symbols,
    replace_places,
    same_symbols,
    top_level_children,
)

#: The letters renamed, each set among its own kind.
LETTER_KINDS = (
    tuple("abcfghjkmnpqrstuvwxyz"),
    tuple("ABCDEFGHJKLMNPQRSTUVWXYZ"),
    tuple(GREEK_LOWER[n] for n in GREEK_LOWER if not n.startswith("var") and n != "pi"),
    tuple(GREEK_UPPER[n] for n in GREEK_UPPER if n != "Pi"),
)
#: Letters are swapped within windows of this many neighbours in frequency rank (in the first rounds; see
#: `window_for_round`).
RANK_WINDOW = 4
#: Every this many rounds the windows grow by one letter: a formula with one letter has only as many names as its
#: window, so later rounds need wider ones to stay distinct (at round 32, 8 letters).
ROUNDS_PER_WIDER_WINDOW = 8


def window_for_round(round_no: int) -> int:
    """The rank window of a round's notations: `RANK_WINDOW`, one letter wider every `ROUNDS_PER_WIDER_WINDOW`."""
    return RANK_WINDOW + max(round_no - 1, 0) // ROUNDS_PER_WIDER_WINDOW


#: Numbers a variant never changes: the structure of a formula hangs on them.
KEPT_NUMBERS = frozenset({"0", "1"})
_ATTRIBUTE = re.compile(r'\s+[A-Za-z:-]+="[^"]*"')
_EQUALS = "<mo>=</mo>"


def formula_hash(mathml: str) -> int:
    """The identity of a formula for distinctness: a 64-bit hash of its MathML without attributes (fences, sizes and
    spacing attributes do not make another formula)."""
    normalised = _ATTRIBUTE.sub("", mathml)
    return int.from_bytes(hashlib.blake2b(normalised.encode("utf-8"), digest_size=8).digest(), "big")


def rank_letters(counts: Mapping[str, int]) -> tuple[tuple[str, ...], ...]:
    """Each letter kind of `LETTER_KINDS` ordered from the most to the least frequent in ``counts`` (ties by the
    kind's order)."""
    return tuple(tuple(sorted(kind, key=lambda ch: (-counts.get(ch, 0), kind.index(ch)))) for kind in LETTER_KINDS)


def paper_notation(
    ranked: tuple[tuple[str, ...], ...], rng: random.Random, window_size: int = RANK_WINDOW
) -> dict[str, str]:
    """A paper's renaming: each letter to another of about its frequency (a shuffle within windows of
    ``window_size`` neighbours in rank, the windows shifted at random), a bijection on every letter kind."""
    mapping: dict[str, str] = {}
    for kind in ranked:
        shift = rng.randrange(window_size)
        cuts = [0, *range(shift or window_size, len(kind), window_size), len(kind)]
        for start, end in itertools.pairwise(cuts):
            window = list(kind[start:end])
            shuffled = window[:]
            rng.shuffle(shuffled)
            mapping.update(zip(window, shuffled, strict=True))
    return mapping


def _safe_renaming(mapping: Mapping[str, str], renamable: set[str], present: Iterable[str]) -> dict[str, str]:
    """The part of ``mapping`` that keeps a formula's symbols apart: a letter is renamed only if its new name is not
    a symbol that stays (repeated until nothing changes, since undoing one renaming makes its letter stay)."""
    chosen = {ch: mapping[ch] for ch in renamable if ch in mapping and mapping[ch] != ch}
    present = set(present)
    while True:
        staying = present - set(chosen)
        clash = [ch for ch, new in chosen.items() if new in staying]
        if not clash:
            return chosen
        for ch in clash:
            del chosen[ch]


def _new_number(text: str, rng: random.Random, taken: set[str]) -> str | None:
    """Another constant of the same shape (digits before and after the point, a leading zero kept), not in
    ``taken``; None when ten tries find none."""
    for _ in range(10):
        out = []
        for i, ch in enumerate(text):
            if not ch.isdigit():
                out.append(ch)
            elif i == 0 and ch != "0" and len(text) > 1 and text[1].isdigit():
                out.append(str(rng.randint(1, 9)))
            elif i == 0 and ch not in "01":
                out.append(str(rng.randint(2, 9)))
            else:
                out.append(str(rng.randint(0, 9)))
        new = "".join(out)
        if new != text and new not in taken and new not in KEPT_NUMBERS:
            return new
    return None


@dataclass(frozen=True)
class RightHandSide:
    """A formula's right-hand side, ready to be given to another formula of its field: the LaTeX after its one
    top-level ``=``, the MathML elements after its ``<mo>=</mo>``, and the commands its LaTeX uses."""

    latex: str
    mathml: str
    commands: frozenset[str]


def split_equation(latex: str, mathml: str) -> tuple[int, int] | None:
    """Where a one-line ``left = right`` formula splits: the offset of its ``=`` in the LaTeX and the MathML offset
    just past its ``<mo>=</mo>``; None unless both texts have exactly one top-level ``=``."""
    symbols = latex_symbols(latex)
    if len(symbols.equals) != 1 or symbols.aligned:
        return None
    children = top_level_children(mathml)
    if not children:
        return None
    equals = [end for start, end in children if mathml[start:end] == _EQUALS]
    if len(equals) != 1 or equals[0] == children[-1][1]:
        return None
    return symbols.equals[0], equals[0]


def right_hand_side(latex: str, mathml: str, macro_names: frozenset[str]) -> RightHandSide | None:
    """The formula's right-hand side, if it has one that can travel: no user macro (``macro_names``, without
    backslash) and no label or tag in it."""
    split = split_equation(latex, mathml)
    if split is None:
        return None
    rhs_latex = latex[split[0] + 1 :].strip()
    commands = latex_symbols(rhs_latex).commands
    if not rhs_latex or commands & macro_names or {"label", "tag", "nonumber", "notag"} & commands:
        return None
    rhs_mathml = mathml[split[1] : -len("</mrow></math>")]
    return RightHandSide(rhs_latex, rhs_mathml, commands)


def exchange_right_hand_side(
    latex: str, mathml: str, donor: RightHandSide, macro_names: frozenset[str]
) -> tuple[str, str] | None:
    """The formula with its right-hand side replaced by ``donor``'s; None when it has no single top-level ``=`` or
    when its paper defines a command the donor uses (which would then mean something else)."""
    if donor.commands & macro_names:
        return None
    split = split_equation(latex, mathml)
    if split is None:
        return None
    new_latex = latex[: split[0] + 1] + " " + donor.latex
    new_mathml = mathml[: split[1]] + donor.mathml + "</mrow></math>"
    return new_latex, new_mathml


#: A fraction's numerator or denominator travels the same way: its LaTeX (inside the braces), its MathML element.
FractionPart = RightHandSide
_NOT_TRAVELLING = frozenset({"label", "tag", "nonumber", "notag"})


def matched_fractions(latex: str, mathml: str) -> list[tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]]:
    """The fractions found in both texts, as ``(LaTeX spans, MathML spans)`` of their two parts: the k-th ``\\frac``
    of the LaTeX is the k-th ``<mfrac>`` of the MathML when both have as many, and a pair is kept only when each part
    holds the same letters and numbers on both sides (scripts can reorder fractions: ``x^{\\frac..}_{\\frac..}``)."""
    in_latex, in_mathml = latex_fractions(latex), mathml_fractions(mathml)
    if not in_latex or len(in_latex) != len(in_mathml):
        return []
    return [
        (ls, ms)
        for ls, ms in zip(in_latex, in_mathml, strict=True)
        if all(same_symbols(latex[a:b], mathml[c:d]) for (a, b), (c, d) in zip(ls, ms, strict=True))
    ]


def fraction_parts(latex: str, mathml: str, macro_names: frozenset[str]) -> list[FractionPart]:
    """The numerators and denominators of the formula's matched fractions that can travel (no user macro, label or
    line break in them)."""
    out = []
    for spans_latex, spans_mathml in matched_fractions(latex, mathml):
        for (a, b), (c, d) in zip(spans_latex, spans_mathml, strict=True):
            part = latex[a:b].strip()
            commands = latex_symbols(part).commands
            if part and not commands & macro_names and not commands & _NOT_TRAVELLING and "\\\\" not in part:
                out.append(FractionPart(part, mathml[c:d], commands))
    return out


def exchange_fraction_part(
    latex: str, mathml: str, donor: FractionPart, macro_names: frozenset[str], rng: random.Random
) -> tuple[str, str] | None:
    """The formula with one part of one of its fractions (chosen by ``rng``) replaced by ``donor``; None when it has
    no matched fraction or its paper defines a command the donor uses."""
    if donor.commands & macro_names:
        return None
    fractions = matched_fractions(latex, mathml)
    if not fractions:
        return None
    spans_latex, spans_mathml = rng.choice(fractions)
    which = rng.randrange(2)
    (a, b), (c, d) = spans_latex[which], spans_mathml[which]
    return latex[:a] + donor.latex + latex[b:], mathml[:c] + donor.mathml + mathml[d:]


@dataclass(frozen=True)
class Variant:
    """A changed formula and what was changed in it."""

    latex: str
    mathml: str
    renamed: int
    constants: int


def vary(
    latex: str,
    mathml: str,
    notation: Mapping[str, str],
    rng: random.Random,
    constant_share: float,
    hidden: frozenset[str] = frozenset(),
) -> Variant:
    """Rename the formula's letters by ``notation`` and change each of its constants with probability
    ``constant_share``, in the LaTeX and the MathML alike; only the symbols both texts agree on are touched, never
    those in ``hidden`` (what its user macros may hide, `symbols.hidden_symbols`)."""
    in_latex, in_mathml = latex_symbols(latex), mathml_symbols(mathml)
    hidden = hidden | in_latex.elsewhere
    renamable = agreeing(in_latex.letters, in_mathml.letters) - hidden
    renaming = _safe_renaming(notation, renamable, in_mathml.present | {p.text for p in in_latex.letters})
    numbers = {p.text for p in in_mathml.numbers} | {p.text for p in in_latex.numbers}
    changed: dict[str, str] = {}
    for value in sorted(agreeing(in_latex.numbers, in_mathml.numbers) - KEPT_NUMBERS - hidden):
        if rng.random() < constant_share:
            new = _new_number(value, rng, numbers | set(changed.values()))
            if new is not None:
                changed[value] = new
    # a Greek command is followed by what followed the old one: a space or a non-letter, so it ends there too
    latex_new = {ch: "\\" + GREEK_NAMES[new] if ch in GREEK_NAMES else new for ch, new in renaming.items()}
    latex_places = _merged(in_latex.letters, in_latex.numbers)
    mathml_places = _merged(in_mathml.letters, in_mathml.numbers)
    new_latex = replace_places(latex, latex_places, {**latex_new, **changed})
    new_mathml = replace_places(mathml, mathml_places, {**renaming, **changed})
    return Variant(new_latex, new_mathml, len(renaming), len(changed))


def _merged(letters: tuple[Place, ...], numbers: tuple[Place, ...]) -> tuple[Place, ...]:
    return tuple(sorted((*letters, *numbers), key=lambda p: p.start))
