"""Where a formula's identifiers, numbers and top-level ``=`` sit, in its LaTeX and in its KaTeX MathML, so that a
variant can change both texts by one mapping without running KaTeX again.

The two texts are read apart and trusted only where they agree: a letter (or Greek letter, or number) may be changed
in a formula only when it occurs as many times in the LaTeX's math positions as in the MathML's plain ``<mi>``
(``<mn>``) elements. A user macro that hides a letter (``\\newcommand{\\x}{x_0}``), a letter in a unit or a colour
name, a word typed in math italic (``L_{included}``: three or more single-letter ``<mi>`` side by side in the MathML)
all break that count, and the letter is left alone. The check is by count, not by position: KaTeX keeps the source
order of a formula's symbols except in scripts (``x^a_b`` gives ``msubsup`` with the subscript first), and a
renaming is the same whatever the order.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from eqsearch.engine.latex.scan import group_end, read_argument, read_optional, skip_space

#: Lowercase Greek as KaTeX writes it (a plain ``<mi>``): command name -> character.
GREEK_LOWER = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ϵ", "varepsilon": "ε", "zeta": "ζ",
    "eta": "η", "theta": "θ", "vartheta": "ϑ", "iota": "ι", "kappa": "κ", "varkappa": "ϰ", "lambda": "λ",
    "mu": "μ", "nu": "ν", "xi": "ξ", "pi": "π", "varpi": "ϖ", "rho": "ρ", "varrho": "ϱ", "sigma": "σ",
    "varsigma": "ς", "tau": "τ", "upsilon": "υ", "phi": "ϕ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω",
}  # fmt: skip
#: Capital Greek as KaTeX writes it (``<mi mathvariant="normal">``).
GREEK_UPPER = {
    "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π", "Sigma": "Σ",
    "Upsilon": "Υ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
}  # fmt: skip
GREEK = {**GREEK_LOWER, **GREEK_UPPER}
GREEK_UPPER_CHARS = frozenset(GREEK_UPPER.values())
GREEK_LOWER_CHARS = frozenset(GREEK_LOWER.values())
GREEK_NAMES = {char: name for name, char in GREEK.items()}

#: Commands whose next arguments are not math identifiers (text, names, fonts, labels, sizes, colours, units):
#: command -> how many arguments to pass over. A font command's letter is another symbol (``\mathbf{x}`` is not
#: ``x``), which KaTeX marks with ``mathvariant``, so both sides leave it.
_ONE_ARGUMENT = """
    text textrm textit textbf textsf texttt textup textnormal textsc emph mbox hbox fbox operatorname
    operatornamewithlimits mathrm mathbf mathit mathsf mathtt mathcal mathbb mathfrak mathscr mathbfit boldsymbol bm
    pmb mathop label tag ref eqref cite begin end color hspace vspace phantom hphantom vphantom url unit si ce raisebox
    textcolor mathnormal Bbb
"""
_TWO_ARGUMENTS = "SI href rule colorbox fcolorbox"
SKIPPED_ARGUMENTS = {**dict.fromkeys(_ONE_ARGUMENT.split(), 1), **dict.fromkeys(_TWO_ARGUMENTS.split(), 2)}
#: Font switches: the letters after one, to the end of its group, are another symbol (``{\cal A}``, ``{\rm DMF}``).
FONT_SWITCHES = frozenset({"cal", "rm", "bf", "it", "sf", "tt", "mit", "frak", "boldmath", "em", "sc", "sl"})
#: Of those, the commands whose arguments never become identifiers (text, labels, references, names, sizes, colours,
#: units); the others' (fonts, operator names, phantoms) may, and their letters are left alone in the formula.
_NO_IDENTIFIERS_TEXT = """
    text textrm textit textbf textsf texttt textup textnormal textsc emph mbox hbox fbox label tag ref eqref cite begin
    end color hspace vspace url href rule unit si SI ce raisebox textcolor colorbox fcolorbox
"""
_NO_IDENTIFIERS = frozenset(_NO_IDENTIFIERS_TEXT.split())
#: Environments whose first argument after ``\begin{...}`` is a column specification, not math.
COLUMN_SPEC_ENVIRONMENTS = frozenset({"array", "subarray", "tabular", "alignedat", "alignat", "alignat*", "darray"})

_LATEX_TOKEN = re.compile(r"\\(?:[A-Za-z]+|.)|[A-Za-z]|\d+(?:\.\d+)?|\.\d+|\S", re.S)
_MI = re.compile(r'<mi(?: mathvariant="normal")?>([^<])</mi>')
_ANY_MI = re.compile(r"<mi(?: [^>]*)?>([^<]*)</mi>")
_MN = re.compile(r"<mn>([^<]+)</mn>")
_TAG = re.compile(r"<(/?)([A-Za-z]+)\b[^>]*?(/?)>")
_LATIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


@dataclass(frozen=True)
class Place:
    """One symbol of a formula's text: what it is (a letter or Greek character, or a number's text) and where."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class LatexSymbols:
    """The symbols of a formula's LaTeX in math positions, and its top-level ``=`` signs.

    Attributes:
        letters: Latin letters and Greek commands (as their characters), in source order.
        numbers: digit runs (``2``, ``0.25``, ``.5``).
        equals: offsets of the ``=`` signs outside every group, ``\\left..\\right`` pair and environment.
        aligned: whether the formula has ``&`` or ``\\\\`` outside every group (a multi-line display).
        commands: the control words used (without backslash).
        elsewhere: letters and numbers also written where a font or a box makes them (``\\mathrm{\\Gamma}``,
            ``\\operatorname{f}``, ``{\\rm d}``): KaTeX may write them as plain identifiers too, so a variant leaves
            them alone.
    """

    letters: tuple[Place, ...]
    numbers: tuple[Place, ...]
    equals: tuple[int, ...]
    aligned: bool
    commands: frozenset[str]
    elsewhere: frozenset[str] = frozenset()


def _skip_command_arguments(latex: str, pos: int, count: int) -> int:
    pos = skip_space(latex, pos)
    if pos < len(latex) and latex[pos] == "*":
        pos += 1
    pos = skip_space(latex, pos)
    if pos < len(latex) and latex[pos] == "[":
        close = latex.find("]", pos)
        pos = close + 1 if close > 0 else pos
    for _ in range(count):
        argument = read_argument(latex, pos)
        if argument is None:
            break
        pos = argument[1]
    return pos


@functools.lru_cache(maxsize=4096)
def latex_symbols(latex: str) -> LatexSymbols:
    """Read the symbols of one formula's LaTeX (a display's body or an inline formula), see `LatexSymbols`."""
    letters: list[Place] = []
    numbers: list[Place] = []
    equals: list[int] = []
    commands: set[str] = set()
    elsewhere: set[str] = set()
    aligned = False
    depth = 0  # braces, \left..\right and \begin..\end together
    switched: int | None = None  # the depth of the group a font switch holds, while it lasts
    pos, n = 0, len(latex)
    while pos < n:
        m = _LATEX_TOKEN.search(latex, pos)
        if m is None:
            break
        token, pos = m.group(), m.end()
        if switched is not None and depth < switched:
            switched = None
        if token.startswith("\\"):
            name = token[1:]
            if name.isalpha():
                commands.add(name)
            if name in FONT_SWITCHES:
                switched = depth
            elif switched is not None and name in GREEK:
                elsewhere.add(GREEK[name])
            elif name in GREEK:
                letters.append(Place(GREEK[name], m.start(), m.end()))
            elif name in ("left", "right"):
                depth += 1 if name == "left" else -1
            elif name == "\\" and depth == 0:
                aligned = True
            elif name in ("begin", "end"):
                environment = read_argument(latex, pos)
                depth += 1 if name == "begin" else -1
                pos = _skip_command_arguments(latex, pos, 1)
                if name == "begin" and environment and environment[0].strip() in COLUMN_SPEC_ENVIRONMENTS:
                    pos = _skip_command_arguments(latex, pos, 1)
            elif name in SKIPPED_ARGUMENTS:
                end = _skip_command_arguments(latex, pos, SKIPPED_ARGUMENTS[name])
                if name not in _NO_IDENTIFIERS:
                    inside = latex_symbols(latex[pos:end])
                    elsewhere.update(p.text for p in (*inside.letters, *inside.numbers))
                    elsewhere.update(inside.elsewhere)
                pos = end
        elif token in _LATIN:
            if switched is None:
                letters.append(Place(token, m.start(), m.end()))
            else:
                elsewhere.add(token)
        elif token[0].isdigit() or (token[0] == "." and len(token) > 1):
            if switched is None:
                numbers.append(Place(token, m.start(), m.end()))
            else:
                elsewhere.add(token)
        elif token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
        elif token == "=" and depth == 0:
            equals.append(m.start())
        elif token == "&" and depth == 0:
            aligned = True
    return LatexSymbols(
        tuple(letters), tuple(numbers), tuple(equals), aligned, frozenset(commands), frozenset(elsewhere)
    )


@dataclass(frozen=True)
class MathmlSymbols:
    """The symbols of a KaTeX ``<math>`` element.

    Attributes:
        letters: single-character identifiers that a renaming may change: plain ``<mi>`` (and capital Greek's
            ``mathvariant="normal"``), less those in a word (three or more single Latin letters side by side).
        present: every identifier character of the formula, in any font, outside words (a new name must avoid them).
        numbers: the ``<mn>`` elements, with their text.
    """

    letters: tuple[Place, ...]
    present: frozenset[str]
    numbers: tuple[Place, ...]


def _identifiers(mathml: str) -> list[Place]:
    """The single-letter identifiers a LaTeX letter or Greek command gives: a plain ``<mi>`` holding a Latin or a
    Greek letter, or an upright capital Greek; an upright Latin letter (``\\mathrm{d}``) is another symbol."""
    out = []
    for m in _MI.finditer(mathml):
        text = m.group(1)
        normal = m.group(0).startswith('<mi mathvariant="normal">')
        if (normal and text in GREEK_UPPER_CHARS) or (not normal and (text in _LATIN or text in GREEK_LOWER_CHARS)):
            out.append(Place(text, m.start(1), m.end(1)))
    return out


@functools.lru_cache(maxsize=4096)
def mathml_symbols(mathml: str) -> MathmlSymbols:
    """Read the symbols of one KaTeX ``<math>`` element, see `MathmlSymbols`."""
    found = _identifiers(mathml)
    in_word: set[int] = set()
    run: list[int] = []
    for i, place in enumerate(found):
        plain_latin = place.text in _LATIN
        adjacent = bool(run) and found[run[-1]].end + len("</mi><mi>") == place.start
        if plain_latin and adjacent:
            run.append(i)
        else:
            if len(run) >= 3:
                in_word.update(run)
            run = [i] if plain_latin else []
    if len(run) >= 3:
        in_word.update(run)
    letters = tuple(place for i, place in enumerate(found) if i not in in_word)
    words = {found[i].start for i in in_word}
    present = frozenset(
        ch for m in _ANY_MI.finditer(mathml) if m.start(1) not in words for ch in m.group(1) if len(m.group(1)) == 1
    )
    numbers = tuple(Place(m.group(1), m.start(1), m.end(1)) for m in _MN.finditer(mathml))
    return MathmlSymbols(letters, present, numbers)


_PARAMETER = re.compile(r"#+\d")
_CONTROL_WORD = re.compile(r"\\([A-Za-z]+)")


def hidden_symbols(latex: str, macros: Mapping[str, tuple[int, str | None, str]]) -> frozenset[str]:
    """The letters and numbers a formula's user macros may hide or show out of math: those of the bodies of the
    macros it uses (and of the macros those use), and those of the arguments it gives them (a label, a name, math:
    which, only the body knows). A variant leaves them alone, since the LaTeX and the MathML cannot be matched there.

    Args:
        latex: the formula's LaTeX.
        macros: the paper's user macros, name (without backslash) -> ``(arguments, default of an optional first
            argument or None, body)``.
    """
    used = latex_symbols(latex).commands & macros.keys()
    if not used:
        return frozenset()
    hidden: set[str] = set()
    todo, seen = list(used), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        body = latex_symbols(_PARAMETER.sub(" ", macros[name][2]))
        hidden.update(p.text for p in (*body.letters, *body.numbers))
        hidden.update(body.elsewhere)
        todo.extend(body.commands & macros.keys())
    for m in _CONTROL_WORD.finditer(latex):
        if m.group(1) not in used:
            continue
        nargs, default, _ = macros[m.group(1)]
        pos = m.end()
        # a group right after a macro that takes none is the argument of its body's last command (\bb = \boldsymbol)
        count = nargs or (1 if latex.startswith("{", skip_space(latex, pos)) else 0)
        for i in range(count):
            if i == 0 and default is not None:
                optional, pos = read_optional(latex, pos)
                argument = None if optional is None else (optional, pos)
            else:
                argument = read_argument(latex, pos)
            if argument is None:
                break
            symbols = latex_symbols(argument[0])
            hidden.update(p.text for p in (*symbols.letters, *symbols.numbers))
            hidden.update(symbols.elsewhere)
            pos = argument[1]
    return frozenset(hidden)


def agreeing(latex_places: tuple[Place, ...], mathml_places: tuple[Place, ...]) -> set[str]:
    """The symbols that occur as many times in the LaTeX as in the MathML: the only ones a variant may change."""
    left, right = Counter(p.text for p in latex_places), Counter(p.text for p in mathml_places)
    return {text for text, count in left.items() if right.get(text) == count}


def replace_places(text: str, places: tuple[Place, ...], new_text: dict[str, str]) -> str:
    """``text`` with each place whose symbol is a key of ``new_text`` replaced by its value (places in order)."""
    parts: list[str] = []
    last = 0
    for place in places:
        if place.text in new_text:
            parts.append(text[last : place.start])
            parts.append(new_text[place.text])
            last = place.end
    parts.append(text[last:])
    return "".join(parts)


def top_level_children(mathml: str) -> list[tuple[int, int]] | None:
    """``(start, end)`` of each child of the formula's one top ``<mrow>``, or None when ``<math>`` holds anything
    else (a table, several elements, a lone symbol)."""
    tags = list(_TAG.finditer(mathml))
    if len(tags) < 4 or tags[0].group(2) != "math" or tags[1].group(2) != "mrow" or tags[1].group(1):
        return None
    depth = 0
    children: list[tuple[int, int]] = []
    start = -1
    for m in tags[2:]:
        closing, self_closing = bool(m.group(1)), bool(m.group(3))
        if closing:
            depth -= 1
            if depth == 0:
                children.append((start, m.end()))
            elif depth < 0:  # the top mrow closes: only </math> may follow
                rest = mathml[m.end() :]
                return children if rest == "</math>" else None
        elif self_closing:
            if depth == 0:
                children.append((m.start(), m.end()))
        else:
            if depth == 0:
                start = m.start()
            depth += 1
    return None


_FRACTION = re.compile(r"\\[dt]?frac(?![A-Za-z])")


def latex_fractions(latex: str) -> list[tuple[tuple[int, int], tuple[int, int]]] | None:
    """``(numerator, denominator)`` spans (inside their braces) of each ``\\frac``, ``\\dfrac`` and ``\\tfrac`` in
    source order; None when one of them has an argument that is not a brace group (``\\frac12``)."""
    out = []
    for m in _FRACTION.finditer(latex):
        spans = []
        pos = m.end()
        for _ in range(2):
            pos = skip_space(latex, pos)
            end = group_end(latex, pos)
            if end is None:
                return None
            spans.append((pos + 1, end - 1))
            pos = end
        out.append((spans[0], spans[1]))
    return out


def mathml_fractions(mathml: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """``(numerator, denominator)`` element spans of each plain ``<mfrac>`` (not a binomial's, which has a
    ``linethickness``) in document order."""
    fractions: list[list] = []
    stack: list[list] = []  # [is a plain mfrac, its children, start]
    for m in _TAG.finditer(mathml):
        closing, self_closing = bool(m.group(1)), bool(m.group(3))
        if closing:
            entry = stack.pop()
            if stack and stack[-1][0]:
                stack[-1][1].append((entry[2], m.end()))
        elif self_closing:
            if stack and stack[-1][0]:
                stack[-1][1].append((m.start(), m.end()))
        else:
            entry = [m.group(0) == "<mfrac>", [], m.start()]
            if entry[0]:
                fractions.append(entry)
            stack.append(entry)
    return [(entry[1][0], entry[1][1]) for entry in fractions if len(entry[1]) == 2]


def same_symbols(latex: str, mathml: str) -> bool:
    """Whether a piece of LaTeX and a piece of MathML hold the same letters and numbers, as many times each (the
    letters of words and of other fonts included on both sides)."""
    in_latex = latex_symbols(latex)
    left = Counter(p.text for p in (*in_latex.letters, *in_latex.numbers))
    right = Counter(p.text for p in _identifiers(mathml)) + Counter(m.group(1) for m in _MN.finditer(mathml))
    return left == right
