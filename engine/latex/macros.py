"""A document's user macros (`MacroDef`, as extraction finds them), made ready for KaTeX (`KatexMacros`).

Most macros go to KaTeX's ``macros`` option unchanged (user definitions take precedence over KaTeX's own, so
``\\newcommand{\\R}{...}`` works where prepending the preamble fails). Two kinds KaTeX cannot take as a plain
string are expanded here, in the equation text, before KaTeX sees it:

- macros with an optional first argument (``\\newcommand{\\x}[2][0]{...}``): KaTeX has no optional arguments;
- macros that declare more arguments than their body uses (``\\newcommand{\\ignore}[1]{}``): KaTeX counts the
  arguments from the ``#n`` in the body, so it would leave the extra argument in the output.

``\\DeclareMathOperator{\\Tr}{Tr}`` becomes ``\\operatorname{Tr}`` (``*``: ``\\operatorname*``), and every body goes
through `engine.latex.preprocess.clean_latex` (``\\ensuremath``, ``\\mbox``, ``\\mathbbm`` are common in them).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.latex.preprocess import clean_latex
from eqsearch.engine.latex.scan import CONTROL_SEQUENCE, read_argument, read_optional

__all__ = ["KatexMacros", "MacroDef", "MacroExpansionError", "build_katex_macros", "expand_macros"]


@dataclass(frozen=True)
class MacroDef:
    """One user macro from a document's preamble or body.

    Args:
        name: the control sequence with its backslash, e.g. ``"\\R"``.
        body: the replacement text with ``#1``..``#9`` placeholders.
        nargs: number of arguments, optional one included (0-9).
        default: the default of an optional first argument (``\\newcommand{\\x}[2][0]{...}``), else None.
        source: which command defined it: "newcommand", "renewcommand", "providecommand", "def", "let",
            "DeclareMathOperator", "DeclareMathOperator*".
    """

    name: str
    body: str
    nargs: int = 0
    default: str | None = None
    source: str = "newcommand"

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "body": self.body,
            "nargs": self.nargs,
            "default": self.default,
            "source": self.source,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> MacroDef:
        return cls(
            name=str(data["name"]),
            body=str(data["body"]),
            nargs=int(data.get("nargs", 0)),  # type: ignore[arg-type]
            default=None if data.get("default") is None else str(data["default"]),
            source=str(data.get("source", "newcommand")),
        )


_NAME = re.compile(r"\\(?:[A-Za-z@]+|[^A-Za-z@\s])")
_PARAMETER = re.compile(r"#(#|[1-9])")


class MacroExpansionError(EqsearchError):
    """Expanding a document's macros did not terminate within the limits (a self-recursive macro)."""


@dataclass(frozen=True)
class KatexMacros:
    """The macros of one document made ready for KaTeX: split between KaTeX and the expansion done here.

    Attributes:
        katex: name -> body for KaTeX's ``macros`` option.
        expanded: name -> definition of the macros `expand_macros` replaces in the text.
        key: a digest of ``katex``, naming these macros inside the KaTeX workers.
    """

    katex: dict[str, str] = field(default_factory=dict)
    expanded: dict[str, MacroDef] = field(default_factory=dict)
    key: str = ""


def _highest_parameter(body: str) -> int:
    return max((int(m.group(1)) for m in _PARAMETER.finditer(body) if m.group(1) != "#"), default=0)


def build_katex_macros(macros: Sequence[MacroDef]) -> KatexMacros:
    """Split and normalise a document's macros (later definitions of a name win, as in LaTeX).

    Args:
        macros: the document's macros, in definition order.

    Returns:
        The split; macros whose name is not a control sequence are left out.
    """
    katex: dict[str, str] = {}
    expanded: dict[str, MacroDef] = {}
    for macro in macros:
        name = macro.name.strip()
        if not _NAME.fullmatch(name):
            continue
        body = clean_latex(macro.body)
        if macro.source.startswith("DeclareMathOperator") and not body.lstrip().startswith("\\operatorname"):
            star = "*" if macro.source.endswith("*") else ""
            body = f"\\operatorname{star}{{{body}}}"
        katex.pop(name, None)
        expanded.pop(name, None)
        nargs = max(0, min(9, macro.nargs))
        if nargs and (macro.default is not None or _highest_parameter(body) < nargs):
            expanded[name] = MacroDef(name, body, nargs, macro.default, macro.source)
        else:
            katex[name] = body
    digest = hashlib.sha256(json.dumps(katex, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
    return KatexMacros(katex=katex, expanded=expanded, key=digest[:24])


def _substitute(body: str, args: list[str]) -> str:
    def parameter(m: re.Match[str]) -> str:
        token = m.group(1)
        if token == "#":
            return "#"
        index = int(token) - 1
        return args[index] if index < len(args) else ""

    return _PARAMETER.sub(parameter, body)


def expand_macros(latex: str, macros: KatexMacros, *, max_expansions: int = 1000, max_length: int = 100_000) -> str:
    """Replace the uses of ``macros.expanded`` in an equation by their bodies, arguments substituted.

    Args:
        latex: the equation text.
        macros: from `build_katex_macros`.
        max_expansions: how many replacements at most (KaTeX's ``maxExpand`` default is 1000 too).
        max_length: the longest text the expansion may produce.

    Returns:
        The text with those macros expanded (nested uses included).

    Raises:
        MacroExpansionError: more than ``max_expansions`` replacements or a text longer than ``max_length``.
    """
    expanded = macros.expanded
    if not expanded or "\\" not in latex:
        return latex
    expansions = 0
    position = 0
    while True:
        m = CONTROL_SEQUENCE.search(latex, position)
        while m is not None and m.group(0) not in expanded:
            m = CONTROL_SEQUENCE.search(latex, m.end())
        if m is None:
            return latex
        macro = expanded[m.group(0)]
        end = m.end()
        args: list[str] = []
        if macro.default is not None:
            optional, end = read_optional(latex, end)
            args.append(macro.default if optional is None else optional)
        while len(args) < macro.nargs:
            arg = read_argument(latex, end)
            if arg is None:
                break
            args.append(arg[0])
            end = arg[1]
        expansions += 1
        replacement = _substitute(macro.body, args)
        if expansions > max_expansions or len(latex) - (end - m.start()) + len(replacement) > max_length:
            raise MacroExpansionError(
                f"expanding {m.group(0)} did not terminate after {expansions - 1} expansions "
                f"(a macro that uses itself?) at offset {m.start()}: {latex[m.start() : m.start() + 40]!r}"
            )
        latex = latex[: m.start()] + replacement + latex[end:]
        position = m.start()
