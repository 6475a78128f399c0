"""A document's user macros (`MacroDef`, as extraction finds them), made ready for KaTeX (`KatexMacros`).

Most macros go to KaTeX's ``macros`` option unchanged (user definitions take precedence over KaTeX's own, so
``\\newcommand{\\R}{...}`` works where prepending the preamble fails). The kinds KaTeX cannot take as a plain
string are expanded here, in the equation text, before KaTeX sees it:

- macros with an optional first argument (``\\newcommand{\\x}[2][0]{...}``): KaTeX has no optional arguments;
- macros that declare arguments their body does not use (``\\newcommand{\\ignore}[1]{}``, ``#2`` without ``#1``):
  KaTeX counts the arguments from the ``#n`` in the body, so it would leave the extra argument in the output;
- xparse commands (``\\NewDocumentCommand{\\x}{s o m}{...}``): their arguments are read by type and their
  ``\\IfBooleanTF``, ``\\IfNoValueTF``, ``\\IfValueTF`` decided on the arguments given (`engine.latex.xparse`);
- mathtools' paired delimiters (``\\DeclarePairedDelimiter{\\abs}{\\lvert}{\\rvert}``): ``\\abs{x}`` gives the plain
  delimiters, ``\\abs*{x}`` ``\\left``/``\\right``, ``\\abs[\\big]{x}`` ``\\bigl``/``\\bigr``; in the body of an ``X``
  declaration ``\\delimsize`` becomes the size (``\\middle`` for the starred form).

``\\DeclareMathOperator{\\Tr}{Tr}`` becomes ``\\operatorname{Tr}`` (``*``: ``\\operatorname*``), and every body goes
through `engine.latex.preprocess.clean_latex` (``\\ensuremath``, ``\\mbox``, ``\\mathbbm`` are common in them).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.latex.aliases import ALIAS_SOURCES, PRIMITIVE, resolve_aliases
from eqsearch.engine.latex.brackets import rewrite_brackets
from eqsearch.engine.latex.idioms import rewrite_idioms
from eqsearch.engine.latex.paired import LOCAL_DEFINITION, delimsize, local_definitions
from eqsearch.engine.latex.plaintex import box_shifts, overlays
from eqsearch.engine.latex.preprocess import clean_latex, register_spacing
from eqsearch.engine.latex.scan import CONTROL_SEQUENCE, read_arguments, read_optional
from eqsearch.engine.latex.xparse import parse_argument_spec, read_spec_arguments, resolve_conditionals

__all__ = [
    "KatexMacros",
    "MacroDef",
    "MacroExpansionError",
    "build_katex_macros",
    "expand_macros",
    "read_macro_arguments",
]


@dataclass(frozen=True)
class MacroDef:
    """One user macro from a document's preamble or body.

    Args:
        name: the control sequence with its backslash, e.g. ``"\\R"``.
        body: the replacement text with ``#1``..``#9`` placeholders.
        nargs: number of arguments, optional one included (0-9).
        default: the default of an optional first argument (``\\newcommand{\\x}[2][0]{...}``), else None.
        source: which command defined it: "newcommand", "renewcommand", "providecommand", "DeclareRobustCommand",
            "def", "let", "DeclareMathOperator", "DeclareMathOperator*", "NewDocumentCommand" (and the other xparse
            definers), "DeclarePairedDelimiter", "DeclarePairedDelimiterX", "package" (a macro of a LaTeX package
            that KaTeX lacks, from eqsearch's table).
        spec: the xparse argument types, space separated (``"s o m"``, ``"O{1} m"``), when the macro has them.
        delimiters: the left and right delimiters of a paired delimiter (``("\\lvert", "\\rvert")``).
    """

    name: str
    body: str
    nargs: int = 0
    default: str | None = None
    source: str = "newcommand"
    spec: str | None = None
    delimiters: tuple[str, str] | None = None

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "name": self.name,
            "body": self.body,
            "nargs": self.nargs,
            "default": self.default,
            "source": self.source,
        }
        if self.spec is not None:
            data["spec"] = self.spec
        if self.delimiters is not None:
            data["delimiters"] = list(self.delimiters)
        return data

    @classmethod
    def from_json(cls, data: dict[str, object]) -> MacroDef:
        delimiters = data.get("delimiters")
        return cls(
            name=str(data["name"]),
            body=str(data["body"]),
            nargs=int(data.get("nargs", 0)),  # type: ignore[arg-type]
            default=None if data.get("default") is None else str(data["default"]),
            source=str(data.get("source", "newcommand")),
            spec=None if data.get("spec") is None else str(data["spec"]),
            delimiters=None if not isinstance(delimiters, list | tuple) else (str(delimiters[0]), str(delimiters[1])),
        )


_NAME = re.compile(r"\\(?:[A-Za-z@]+|[^A-Za-z@\s])")
_PARAMETER_NUMBER = re.compile(r"#([1-9])")
_INTERNALS = re.compile(
    r"\\[A-Za-z]*@[A-Za-z@]*|\\(?:csname|expandafter|futurelet|afterassignment|aftergroup|ifnum|ifdim|ifx|ifcase"
    r"|ifcat|ifcsname|ifdefined|noexpand|unexpanded|romannumeral|numexpr|dimexpr|ExplSyntaxOn|setbox|wd|ht|dp)(?![A-Za-z@])"
)
# a body the converter rewrites after expansion (a picture, an xy-pic arrow, minted's or listings' inline code, a
# change of case: \abbrev{SNR} = \textsc{\MakeLowercase{#1}} inside a \DeclareMathOperator, which KaTeX lacks)
_DRAWS = re.compile(
    r"\\begin\s*\{(?:tikzcd|tikzpicture|xy|psmatrix)\}"
    r"|\\(?:tikz|xymatrix|mintinline|lstinline|includegraphics|tikzfig|ctikzfig|iltikzfig"
    r"|MakeLowercase|MakeUppercase|lowercase|uppercase)(?![A-Za-z@])"
)
# \ifmmode A\else B\fi in a macro body: a formula is in math mode, so A
_IFMMODE = re.compile(r"\\ifmmode(?![A-Za-z@])(.*?)(?:\\else(?![A-Za-z@]).*?)?\\fi(?![A-Za-z@])", re.DOTALL)
# \ifx<token><token> A \else B \fi in a macro body (an "is the argument empty / a tie?" test): B, or nothing
_IFX = re.compile(
    r"\\ifx(?![A-Za-z@])\s*(?:#\d|\\[A-Za-z@]+|\S)\s*(?:#\d|\\[A-Za-z@]+|\S)"
    r"(?:(?!\\if|\\fi(?![A-Za-z@])).)*?(?:\\else(?![A-Za-z@])((?:(?!\\if|\\fi(?![A-Za-z@])).)*?))?\\fi(?![A-Za-z@])",
    re.DOTALL,
)
_PARAMETER = re.compile(r"#(#|[1-9])")
# a size command written between a paired delimiter's name and its argument (physics: \abs\Big{x})
_BARE_SIZE = re.compile(r"\s*(\\[Bb]igg?)(?![A-Za-z@])\s*(?=\{)")


class MacroExpansionError(EqsearchError):
    """Expanding a document's macros did not terminate within the limits (a self-recursive macro)."""


@dataclass(frozen=True)
class KatexMacros:
    """The macros of one document made ready for KaTeX: split between KaTeX and the expansion done here.

    Attributes:
        katex: name -> body for KaTeX's ``macros`` option.
        expanded: name -> definition of the macros `expand_macros` replaces in the text.
        withheld: names the document defines through TeX internals that no converter can expand: they stay
            unknown (rendered as their names), never replaced by `engine.latex.symbols`' table.
        key: a digest of ``katex`` and ``withheld``, naming these macros inside the KaTeX workers.
        own: the names the document defines itself (not the package table's): `engine.latex.preprocess.clean_latex`
            leaves them to their definitions instead of reading them as a package's command (a thesis's
            ``\\newcommand{\\condition}{\\kappa}`` is no breqn ``\\condition{..}``).
    """

    katex: dict[str, str] = field(default_factory=dict)
    expanded: dict[str, MacroDef] = field(default_factory=dict)
    key: str = ""
    withheld: tuple[str, ...] = ()
    own: frozenset[str] = frozenset()


def _uses_every_parameter(body: str, nargs: int) -> bool:
    """Whether the body uses ``#1`` .. ``#nargs`` (KaTeX infers the argument count from them; a gap breaks it)."""
    used = {int(m.group(1)) for m in _PARAMETER.finditer(body) if m.group(1) != "#"}
    return used >= set(range(1, nargs + 1))


#: Definers that define only a name nothing defines yet; ``class``: a command of the document's class read from the
#: class file the source ships, which stands only where KaTeX, the package table and the document define nothing;
#: ``DeclareSIUnit``: siunitx's unit, which exists only inside a unit argument (``\\DeclareSIUnit\\bar{bar}`` must not
#: replace the accent of ``\\bar{N}``).
PROVIDE_SOURCES = frozenset(
    {
        "providecommand",
        "providerobustcmd",
        "ProvideDocumentCommand",
        "ProvideExpandableDocumentCommand",
        "class",
        "DeclareSIUnit",
    }
)


def build_katex_macros(
    macros: Sequence[MacroDef], builtins: frozenset[str] = frozenset(), katex_uses: frozenset[str] = frozenset()
) -> KatexMacros:
    """Split and normalise a document's macros (later definitions of a name win, as in LaTeX).

    Args:
        macros: the document's macros, in definition order.
        builtins: the commands KaTeX implements itself (`engine.latex.katexnames.katex_commands`): a
            ``\\providecommand`` of one of them, or of a command of the package table, defines nothing.
        katex_uses: the commands KaTeX's own macros use (`engine.latex.katexnames.katex_macro_uses`): a document's
            definition of one (``\\renewcommand{\\char}{\\text{char}}``) is expanded here, never given to KaTeX,
            whose ``\\neq`` would otherwise run it (and loop).

    Returns:
        The split; macros whose name is not a control sequence are left out, and so are macros whose body uses
        TeX internals (``\\@``-commands, ``\\csname``, ``\\expandafter``, ``\\ifnum``...), which no converter can
        expand. The commands of `engine.latex.packages.PACKAGE_MACROS` that the document does not define come first,
        as a fallback (a package's own definition, shipped with a paper, is replaced by the table's). Aliases
        (``\\let``) and circles through the table are resolved by `engine.latex.aliases.resolve_aliases`.
    """
    from eqsearch.engine.latex.packages import PACKAGE_MACROS

    latest: dict[str, MacroDef] = {}
    for macro in macros:
        name = macro.name.strip()
        if not _NAME.fullmatch(name):
            continue
        if macro.source in PROVIDE_SOURCES and (name in latest or name in PACKAGE_MACROS or name in builtins):
            continue
        latest.pop(name, None)  # a redefinition counts from where it is made
        latest[name] = macro if name == macro.name else replace(macro, name=name)
    # an alias (\RenewCommandCopy\qty\SI) means the command it copies, whose package rule still applies
    own_names = frozenset(n for n, m in latest.items() if m.source != "package" and m.source not in ALIAS_SOURCES)
    fallback = [macro for name, macro in PACKAGE_MACROS.items() if name not in latest]
    resolved = resolve_aliases([*fallback, *latest.values()], PACKAGE_MACROS)
    # a package's own @-commands (\\t@lde of a thesis's .sty, which its \\omegat uses) are macros like any other
    own = _own_at_commands(latest)
    katex: dict[str, str] = {}
    expanded: dict[str, MacroDef] = {}
    plain: dict[str, MacroDef] = {}
    dropped: set[str] = set()
    for macro in resolved:
        name = macro.name
        if "\\ifx" in macro.body:  # \ifx#1\empty A\else B\fi: the general case, B, is what a formula means
            macro = replace(macro, body=_IFX.sub(lambda m: m.group(1) or "", macro.body))
        macro = rewrite_idioms(macro)  # \@ifnextchar, \futurelet, spacing tests, \Xint (engine.latex.idioms)
        if macro.delimiters is not None and macro.nargs == 1 and _uses_internals(macro.body, own):
            # a paired delimiter whose body plays TeX group tricks (an active \given bar): the argument between them
            macro = replace(macro, body="#1")
        if _uses_internals(macro.body, own):
            # TeX internals (a package's \@-commands, \csname, \expandafter): no converter can expand them; the
            # package table's version (if any) stands in, else the name comes out as text
            if name in PACKAGE_MACROS:
                macro = PACKAGE_MACROS[name]
            else:
                katex.pop(name, None)
                expanded.pop(name, None)
                dropped.add(name)
                continue
        body = rewrite_brackets(register_spacing(clean_latex(_IFMMODE.sub(r"\1", macro.body), own_names)))
        if "\\raise" in body or "\\lower" in body:  # \lower4pt\hbox{$\sim$} in a \lsim
            body = box_shifts(body)
        if "\\ooalign" in body:  # \ooalign{$\sum$\cr$\int$\cr}: a sum with an integral over it
            body = overlays(body)
        if body.strip() == name and not macro.nargs:
            # cleaned into its own name (\renewcommand{\text}{\mbox}, \mbox being KaTeX's \text): the built-in stays
            katex.pop(name, None)
            expanded.pop(name, None)
            continue
        if macro.source.startswith("DeclareMathOperator") and not body.lstrip().startswith("\\operatorname"):
            star = "*" if macro.source.endswith("*") else ""
            body = f"\\operatorname{star}{{{body}}}"
        katex.pop(name, None)
        expanded.pop(name, None)
        nargs = max(0, min(9, macro.nargs))
        if (
            _DRAWS.search(body)
            or PRIMITIVE in body
            or macro.source == "newif"
            or (name in katex_uses and macro.source != "package")
        ):
            # a diagram, a built-in by its own name, a \newif switch (\iftrue): expanded here
            expanded[name] = MacroDef(name, body, nargs, macro.default, macro.source, macro.spec, macro.delimiters)
        elif macro.spec is not None or macro.delimiters is not None or LOCAL_DEFINITION.search(body):
            pair = macro.delimiters
            delimiters = None if pair is None else (clean_latex(pair[0]), clean_latex(pair[1]))
            expanded[name] = MacroDef(name, body, nargs, macro.default, macro.source, macro.spec, delimiters)
        elif nargs and (macro.default is not None or not _uses_every_parameter(body, nargs) or "\\ifthenelse" in body):
            expanded[name] = MacroDef(name, body, nargs, macro.default, macro.source)
        else:
            katex[name] = body
            plain[name] = MacroDef(name, body, nargs, None, macro.source)
    # A macro KaTeX would get whose body uses one expanded here is expanded here too (KaTeX would not know it).
    changed = bool(expanded)
    while changed:
        changed = False
        for name in [n for n in katex if _uses_any(katex[n], expanded)]:
            expanded[name] = plain[name]
            del katex[name]
            changed = True
    withheld = tuple(sorted(dropped - katex.keys() - expanded.keys()))
    signed: object = katex if not withheld else [katex, withheld]
    digest = hashlib.sha256(json.dumps(signed, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
    return KatexMacros(katex=katex, expanded=expanded, key=digest[:24], withheld=withheld, own=own_names)


def _replacement(macro: MacroDef, latex: str, end: int) -> tuple[str, int]:
    """The text one use of ``macro`` at ``end`` (just past its name) expands to, and where the use ends."""
    if macro.delimiters is not None:
        return _paired_delimiter(macro, latex, end)
    if macro.spec is not None:
        args, end = read_spec_arguments(parse_argument_spec(macro.spec), latex, end)
        return local_definitions(resolve_conditionals(_substitute(macro.body, args))), end
    args, end = read_macro_arguments(macro, latex, end)
    replaced = local_definitions(_substitute(macro.body, args))
    return (resolve_conditionals(replaced) if "\\ifthenelse" in replaced else replaced), end


def read_macro_arguments(macro: MacroDef, latex: str, end: int) -> tuple[list[str], int]:
    """The arguments of one use of a ``\\newcommand``-style macro whose name ends at ``end``: the optional first one
    (its default when absent), then mandatory ones up to ``macro.nargs`` in all; and where the use ends."""
    args: list[str] = []
    if macro.default is not None:
        optional, end = read_optional(latex, end)
        args.append(macro.default if optional is None else optional)
    more, end = read_arguments(latex, end, macro.nargs - len(args))
    return args + more, end


def _paired_delimiter(macro: MacroDef, latex: str, end: int) -> tuple[str, int]:
    assert macro.delimiters is not None
    left, right = macro.delimiters
    star = end < len(latex) and latex[end] == "*"
    if star:
        end += 1
    size, end = (None, end) if star else read_optional(latex, end)
    if not star and size is None and (bare := _BARE_SIZE.match(latex, end)):  # physics' \abs\bigg{x}
        size, end = bare.group(1), bare.end()
    args, end = read_arguments(latex, end, max(1, macro.nargs))
    size = (size or "").strip()
    inner = delimsize(local_definitions(_substitute(macro.body, args)), "\\middle" if star else size)
    if star:
        return f"\\left{left} {inner} \\right{right}", end
    if size:
        return f"\\mathopen{{{size}l{left}}} {inner} \\mathclose{{{size}r{right}}}", end
    return f"\\mathopen{{{left}}} {inner} \\mathclose{{{right}}}", end


def _own_at_commands(latest: dict[str, MacroDef]) -> set[str]:
    """The ``@``-commands the document's files define that a converter can expand: their bodies use no TeX internal
    but other such commands (a package's ``\\@IEEEeqnarrayboxcr``, a ``\\let`` of an internal, is not one)."""
    # a definition made inside another's body (keyval's \\define@key{..}{mask}{\\def\\iArgs@mask{#1}}) is state set
    # while TeX runs, its parameter the outer one's: not a command of its own
    own = {
        name
        for name, macro in latest.items()
        if "@" in name and all(int(k) <= macro.nargs for k in _PARAMETER_NUMBER.findall(macro.body))
    }
    changed = True
    while changed:
        changed = False
        for name in sorted(own):
            if _uses_internals(rewrite_idioms(latest[name]).body, own):
                own.discard(name)
                changed = True
    return own


def _uses_internals(body: str, own: set[str]) -> bool:
    """Whether ``body`` uses TeX internals, the document's own ``@``-commands apart."""
    return any(m.group() not in own for m in _INTERNALS.finditer(body))


def _uses_any(body: str, names: dict[str, MacroDef]) -> bool:
    return "\\" in body and any(m.group(0) in names for m in CONTROL_SEQUENCE.finditer(body))


def _substitute(body: str, args: list[str]) -> str:
    def parameter(m: re.Match[str]) -> str:
        token = m.group(1)
        if token == "#":
            return "#"
        index = int(token) - 1
        arg = args[index] if index < len(args) else ""
        # tokens, not characters: \lambda#2 with x is \lambda then x, never \lambdax
        if arg[:1].isalpha() and _ENDS_IN_WORD.search(body, 0, m.start()):
            return " " + arg
        return arg

    return _PARAMETER.sub(parameter, body)


_SCRIPTED_NAME = re.compile(r"(?<!\\)([_^])\s*(\\[A-Za-z@]+)")
# a body KaTeX cannot take as a script's first token: it opens with spacing (\mkern-1.5mu\mathsf{T})
_LEADING_SPACE = re.compile(r"\s*\\(?:mkern|mskip|kern|hskip|hspace|,|!|:|;|quad|qquad)(?![A-Za-z@])")


def brace_scripted_macros(latex: str, macros: KatexMacros) -> str:
    """``x^\\T`` -> ``x^{\\T}`` for a document macro without arguments whose body opens with spacing: TeX takes such a
    superscript whole (its error recovery braces ``\\mkern-1.5mu\\mathsf{T}``), KaTeX stops at the spacing."""
    if "^\\" not in latex and "_\\" not in latex and not re.search(r"[_^]\s+\\", latex):
        return latex

    def brace(m: re.Match[str]) -> str:
        name = m.group(2)
        body = macros.katex.get(name)
        if body is None and name in macros.expanded and macros.expanded[name].nargs == 0:
            body = macros.expanded[name].body
        if body is None or "#" in body or not _LEADING_SPACE.match(body):
            return m.group(0)  # \def\mr{\mathrm} used as _\mr{3D} must stay as it is
        return f"{m.group(1)}{{{name}}}"

    return _SCRIPTED_NAME.sub(brace, latex)


_ENDS_IN_WORD = re.compile(r"(?<!\\)(?:\\\\)*\\[A-Za-z@]+\Z")
_ASSIGNERS = frozenset({"\\let", "\\global"})
#: ``\let\a=\b`` (``\global`` before it, the ``=`` and a space after it optional), as a macro's body runs it
_LET = re.compile(r"(?:\\global\s*)?\\let\s*(\\[A-Za-z@]+)\s*=?\s?(\\[A-Za-z@]+)")


def _lets_expanded(let: re.Match[str], expanded: dict[str, MacroDef]) -> bool:
    """Whether a ``\\let`` in the text copies to or from a macro expanded here (else KaTeX runs it)."""
    return let.group(1) in expanded or let.group(2) in expanded


def _assign(let: re.Match[str], expanded: dict[str, MacroDef]) -> dict[str, MacroDef]:
    """The macros expanded here after the ``\\let`` (lhs2tex's ``\\hsforall`` switches ``\\hsdot`` so): the
    target means what the source means, a macro of this document, else the source's own name (for KaTeX)."""
    target, source = let.group(1), let.group(2)
    meaning = expanded.get(source)
    return {**expanded, target: replace(meaning, name=target) if meaning else MacroDef(target, source)}


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
        while m is not None and (m.group(0) not in expanded or latex[m.start() - 1 : m.start()] == PRIMITIVE):
            if m.group(0) in _ASSIGNERS and (let := _LET.match(latex, m.start())) and _lets_expanded(let, expanded):
                break
            m = CONTROL_SEQUENCE.search(latex, m.end())
        if m is None:
            return latex.replace(PRIMITIVE, "") if PRIMITIVE in latex else latex
        if m.group(0) in _ASSIGNERS:  # \global\let\hsdot=\hsperiodonce run by a macro: done here, in order
            expanded = _assign(let, expanded)  # type: ignore[has-type]  # set in the loop above
            latex = latex[: m.start()] + latex[let.end() :]  # type: ignore[has-type]
            position = m.start()
            continue
        macro = expanded[m.group(0)]
        replacement, end = _replacement(macro, latex, m.end())
        expansions += 1
        if expansions > max_expansions or len(latex) - (end - m.start()) + len(replacement) > max_length:
            raise MacroExpansionError(
                f"expanding {m.group(0)} did not terminate after {expansions - 1} expansions "
                f"(a macro that uses itself?) at offset {m.start()}: {latex[m.start() : m.start() + 40]!r}"
            )
        # TeX substitutes tokens, not characters: "\cap\gr{W}" must not become "\capW", nor a body ending in
        # "\otimes" run into the letter after the use
        if replacement[:1].isalpha() and _ENDS_IN_WORD.search(latex, 0, m.start()):
            replacement = " " + replacement
        if latex[end : end + 1].isalpha() and _ENDS_IN_WORD.search(replacement):
            replacement += " "
        latex = latex[: m.start()] + replacement + latex[end:]
        position = m.start()
