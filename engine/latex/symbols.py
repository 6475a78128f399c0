"""Symbol commands of LaTeX packages KaTeX lacks -> Unicode characters with their TeX math class.

Papers use symbols from packages KaTeX does not implement (stmaryrd, txfonts, wasysym, mathabx, MnSymbol, esint...),
and every new paper brings new ones. Rather than a hand-made table, this reads Günter Milde's ``unimathsymbols.txt``
(Unicode character -> LaTeX command, unicode-math command, TeX math class, packages, alias commands), as shipped in the
pinned PyPI package ``latex2mathml`` (see pyproject.toml; the file is read, the package's code is never imported).
Each command becomes a KaTeX macro body with its class, ``\\multimapinv`` -> ``\\mathrel{⟜}``, so the formula
converts with the right spacing.

The table is only a last resort: the KaTeX worker (``katex/worker.js``) uses an entry when KaTeX itself reports the
command undefined, so KaTeX's own commands, a document's definitions and `engine.latex.packages` always win (the
converter withholds the names a document defines through TeX internals, see `engine.latex.macros.KatexMacros`).
"""

from __future__ import annotations

import functools
import importlib.metadata
import re

__all__ = ["SYMBOL_SOURCE", "symbol_table"]

#: Where the table comes from: the pinned package and the file inside it.
SYMBOL_SOURCE = ("latex2mathml", "unimathsymbols.txt")

# the file's TeX math category (field 6) -> the KaTeX class command; accents, radicals, over/under braces and spaces
# take arguments or are not symbols, and are left out
_CLASSES = {
    "mathrel": "\\mathrel",
    "mathbin": "\\mathbin",
    "mathop": "\\mathop",
    "mathord": "\\mathord",
    "mathalpha": "\\mathord",
    "mathfence": "\\mathord",
    "mathopen": "\\mathopen",
    "mathclose": "\\mathclose",
    "mathpunct": "\\mathpunct",
}
_COMMAND = re.compile(r"\\[A-Za-z]+")
# an alias in the comments field: "= \mappedfrom (kpfonts)"
_ALIAS = re.compile(r"(?:^|,)\s*=\s*(\\[A-Za-z]+)(?![A-Za-z{])")
# characters TeX gives a meaning of their own: never a macro body
_SPECIAL = set("#$%&\\^_{}~")
# a letter's LaTeX spelling in one of KaTeX's alphabets (\mathbb{A}, \mathbf{\alpha}) or a letter command (\alpha)
_LETTER = re.compile(r"\\(?:math(?:bb|bf|it|rm|sf|tt|cal|frak|scr)\{\\?[A-Za-z]+\}|[A-Za-z]+)")


def parse_symbol_table(text: str) -> dict[str, str]:
    """Read ``unimathsymbols.txt``: command name -> KaTeX macro body (``\\mathrel{⟜}``).

    Args:
        text: the file's text: ``#`` comment lines, then records of 8 fields separated by ``^`` (code point,
            character, LaTeX command, unicode-math command, Unicode math class, TeX math category, packages,
            comments with ``= \\alias (package)`` entries).

    Returns:
        Every command, alias and unicode-math name of a one-character symbol with a TeX math class; a letter's other
        names (unicode-math's ``\\BbbR``, ``\\mitalpha``) map to its LaTeX spelling (``\\mathbb{R}``, ``\\alpha``)
        instead. A name given to several characters keeps the first record where no package uses it otherwise (a
        ``-package`` requirement), else the first record.
    """
    chosen: dict[str, tuple[bool, str]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        fields = line.split("^")
        if len(fields) < 8:
            continue
        char, latex, unimath, category, requirements, comments = fields[1], *fields[2:4], *fields[5:8]
        command_class = _CLASSES.get(category.strip())
        if command_class is None or len(char) != 1 or char in _SPECIAL or char.isspace():
            continue
        conflicted = any(word.startswith("-") for word in requirements.split())
        latex, unimath = latex.strip(), unimath.strip()
        names = [name for name in (latex, unimath) if _COMMAND.fullmatch(name)]
        names += _ALIAS.findall(comments)
        body = f"{command_class}{{{char}}}"
        for name in names:
            # a letter (unicode-math's \BbbR, \mitalpha) as LaTeX spells it, so it reads as the usual \mathbb{R}
            spelled = category.strip() == "mathalpha" and name != latex and _LETTER.fullmatch(latex) is not None
            previous = chosen.get(name)
            if previous is None or (previous[0] and not conflicted):
                chosen[name] = (conflicted, latex if spelled else body)
    return {name: body for name, (_, body) in chosen.items()}


@functools.cache
def symbol_table() -> dict[str, str]:
    """The table from the pinned ``latex2mathml`` package, read once per process (see `parse_symbol_table`).

    Raises:
        FileNotFoundError: the package is not installed (it is a dependency in pyproject.toml).
    """
    package, name = SYMBOL_SOURCE
    missing = f"the symbol table {name} of the Python package {package} is missing: run 'pip install -e .'"
    try:  # located through the package's metadata: its code is never imported
        path = importlib.metadata.distribution(package).locate_file(f"{package}/{name}")
    except importlib.metadata.PackageNotFoundError as error:
        raise FileNotFoundError(missing) from error
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise FileNotFoundError(f"{missing} ({error})") from error
    return parse_symbol_table(text)
