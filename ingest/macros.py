"""A document's user macros: ``\\newcommand`` and friends, ``\\def``, ``\\let`` (and letltxmacro's and LaTeX's copies,
``\\LetLtxMacro``, ``\\NewCommandCopy``), ``\\DeclareMathOperator``, xparse's ``\\NewDocumentCommand`` family,
``\\DeclareRobustCommand``, mathtools' ``\\DeclarePairedDelimiter`` family.

Extraction collects them into `DocumentMacros` (with the environment aliases the math scanner needs, where the
definitions are, and the definitions it had to drop); a paper carries them as `engine.latex.macros.MacroDef`, which
the converter makes ready for KaTeX. Macros whose body opens or closes a display (``\\def\\be{\\begin{equation}}``)
are expanded in the text instead (`eqsearch.ingest.displaymacros`). The definers, and a document's own names for
them, are found by `eqsearch.ingest.definers`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from eqsearch.engine.latex.aliases import ALIAS_SOURCES
from eqsearch.engine.latex.arrays import split_top_level
from eqsearch.engine.latex.macros import PROVIDE_SOURCES, MacroDef
from eqsearch.engine.latex.paired import xpp_definition
from eqsearch.engine.latex.scan import read_argument, read_optional
from eqsearch.engine.latex.xparse import format_argument_spec, parse_argument_spec
from eqsearch.ingest.definermacros import definer_macro_uses
from eqsearch.ingest.definers import DEFINER, definer_aliases, definer_pattern
from eqsearch.ingest.macrocycles import drop_recursive
from eqsearch.ingest.macroloops import delimited_spec, newif_switches, unrolled_loops
from eqsearch.ingest.mathfonts import declared_alphabets, font_switches
from eqsearch.ingest.records import Issue

# hyperref's \pdfstringdefDisableCommands{\def\varepsilon{\textepsilon}}: meanings for PDF bookmarks only
_PDF_ONLY = re.compile(r"\\pdfstringdefDisableCommands\s*\{(?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*\}")
_NAME = re.compile(r"\\(?:[A-Za-z@]+|[^A-Za-z@\s])\Z")
_DEF_PARAMS = re.compile(r"(?:#\d)*\Z")
_DELIMITED_ONE = re.compile(r"#1\s*(\\[A-Za-z@]+)\s*\Z")  # \def\beas#1\eeas{...}: one argument up to a command
_DEF_NAME = re.compile(r"\s*(\\(?:[A-Za-z@]+|.))")
_LET = re.compile(r"\s*(\\(?:[A-Za-z@]+|.))\s*=?\s*(\\(?:[A-Za-z@]+|.)|[^\s\\])")
_BEGIN_DISPLAY = re.compile(r"\s*\\begin\s*\{([A-Za-z*]+)\}")
_MATH_BODY = re.compile(r"\\begin\s*\{(?:array|aligned|gathered|matrix|[pbBvV]matrix|cases|split|alignedat)\}")
_RAW_BEGIN = re.compile(r"\s*\\([A-Za-z]+\*?)(?![A-Za-z@])")  # \newenvironment{eqn}{\equation}{\endequation}


@dataclass
class DocumentMacros:
    """The macro definitions collected from one document, in definition order, with what could not be kept.

    Attributes:
        macros: name -> definition, ready for the converter.
        display: macros whose body opens or closes a display (``\\be`` -> ``\\begin{equation}``, or a whole display
            with arguments); they are expanded in the text before math is searched, and not passed on.
        environment_aliases: ``\\newenvironment{eqn}{\\begin{equation}}{\\end{equation}}`` -> ``{"eqn": "equation"}``.
        environments: other environments without arguments whose code opens math structure
            (``\\newenvironment{grammar}{\\begin{array}{lcl}}{\\end{array}}``) -> their begin and end code, replaced
            inside displays (KaTeX has no ``\\newenvironment``).
        spans: ``(start, end)`` of every definition read, in the text it was read from.
        issues: definitions dropped (delimited ``\\def`` parameters, recursion), as recorded warnings.
        history: the definitions the last `extract_macros` read from its text, with their offsets there, in text
            order (a name redefined in a document's body: `eqsearch.ingest.macroversions`).
    """

    macros: dict[str, MacroDef] = field(default_factory=dict)
    display: dict[str, MacroDef] = field(default_factory=dict)
    environment_aliases: dict[str, str] = field(default_factory=dict)
    environments: dict[str, tuple[str, str]] = field(default_factory=dict)
    spans: list[tuple[int, int]] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    history: list[tuple[int, MacroDef]] = field(default_factory=list)

    def definitions(self) -> list[MacroDef]:
        return list(self.macros.values())


def extract_macros(text: str, table: DocumentMacros | None = None) -> DocumentMacros:
    """Collect the macro definitions of ``text`` (comments already removed).

    Later definitions replace earlier ones, except ``\\providecommand`` which only defines what is missing.
    ``\\let\\a\\b`` copies ``\\b``'s definition when ``\\b`` is a user macro, else aliases the built-in.
    Recursive definitions (``\\def\\a{\\a x}`` or a cycle through several macros) are removed with a warning,
    since no converter can expand them. Macros that open or close a display move to ``table.display``.

    Args:
        text: LaTeX source (a preamble, a whole document, or a local ``.sty``).
        table: the definitions to extend (e.g. those of a package file the document loads), else new ones.

    Returns:
        ``table``, or the new definitions.
    """
    from eqsearch.ingest.displaymacros import split_display_macros

    table = table if table is not None else DocumentMacros()
    text = _PDF_ONLY.sub(lambda m: " " * len(m.group(0)), text) if "\\pdfstringdef" in text else text
    aliases = definer_aliases(text)
    definer = definer_pattern(aliases) if aliases else DEFINER
    table.history = []
    table.spans = _read_definitions(text, table, definer, aliases, table.history)
    # \DeclareMathAlphabet{\mathpzc}{OT1}{pzc}{m}{it}; fontspec's \newfontfamily\cyrillicfont{..}
    for alphabet in [*declared_alphabets(text), *font_switches(text)]:
        if alphabet.name not in table.macros:
            _store(table, alphabet)
    for switch in newif_switches(text):  # \newif\ifthesis, then \thesistrue: \ifthesis is \iftrue
        _store(table, switch)
    loops = unrolled_loops(text)  # what \@for / \foreach loops define (after the definitions they use)
    if loops:
        _read_definitions(loops, table, definer, aliases)
    made = definer_macro_uses(f"{text}\n{loops}" if loops else text, table)
    if made:
        _read_definitions(made, table, definer, aliases)
    drop_recursive(table)
    split_display_macros(table)
    return table


def _read_definitions(
    text: str,
    table: DocumentMacros,
    definer: re.Pattern[str],
    aliases: dict[str, str],
    history: list[tuple[int, MacroDef]] | None = None,
) -> list[tuple[int, int]]:
    """Record every definition of ``text`` into ``table``; their spans (and, into ``history``, each definition
    stored with its offset)."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while True:
        m = definer.search(text, pos)
        if m is None:
            break
        pos = m.end()
        last = next(reversed(table.macros.values()), None)
        try:
            end = _read_definition(text, m, table, aliases)
            stored = next(reversed(table.macros.values()), None)
            if history is not None and stored is not None and stored is not last:
                history.append((m.start(), stored))
        except _SkipDefinition as skip:
            if skip.issue is not None:
                table.issues.append(skip.issue)
            continue
        spans.append((m.start(), max(end, m.end())))
        pos = max(pos, end)
    return spans


def expand_environments(latex: str, environments: dict[str, tuple[str, str]]) -> str:
    """``latex`` with the document's math environments (`DocumentMacros.environments`) replaced by their code."""
    if not environments or "\\begin" not in latex:
        return latex
    names = "|".join(re.escape(n) for n in environments)
    pattern = re.compile(r"\\(begin|end)\s*\{(" + names + r")\}")
    return pattern.sub(lambda m: environments[m.group(2)][0 if m.group(1) == "begin" else 1], latex)


class _SkipDefinition(Exception):
    def __init__(self, issue: Issue | None = None) -> None:
        super().__init__()
        self.issue = issue


def _name_at(text: str, pos: int) -> tuple[str, int]:
    arg = read_argument(text, pos)
    if arg is None:
        raise _SkipDefinition()
    name = arg[0].strip()
    if not _NAME.match(name):
        raise _SkipDefinition()
    return name, arg[1]


def take_definitions(text: str, table: DocumentMacros) -> str:
    """Record the macro definitions made inside math into ``table``; return the math without them.

    MathJax pages define macros inside formulas (deal.II's ``\\(\\newcommand{\\jump}[1]{...}\\)``, a Sphinx
    ``math`` block of ``\\renewcommand``s) and the definitions hold for the whole page, as a preamble's would.
    """
    kept: list[str] = []
    pos = scan = 0
    while (m := DEFINER.search(text, scan)) is not None:
        try:
            end = _read_definition(text, m, table)
        except _SkipDefinition as skip:
            if skip.issue is not None:
                table.issues.append(skip.issue)
            scan = m.end()
            continue
        kept.append(text[pos : m.start()])
        pos = scan = max(end, m.end())
    kept.append(text[pos:])
    drop_recursive(table)
    return "".join(kept)


def _read_definition(text: str, m: re.Match[str], table: DocumentMacros, aliases: dict[str, str] | None = None) -> int:
    pos = m.end()
    if m.group("cmd"):
        name, pos = _name_at(text, pos)
        nargs_text, pos = read_optional(text, pos)
        default, pos = read_optional(text, pos)
        body_arg = read_argument(text, pos)
        if body_arg is None:
            raise _SkipDefinition(Issue("malformed_macro", f"\\{m.group('cmd')}{{{name}}} has no body"))
        body, end = body_arg
        nargs = _parse_nargs(nargs_text, name)
        kind = (aliases or {}).get(m.group("cmd"), m.group("cmd"))
        spec = None
        if kind.endswith("commandx"):
            kind = kind[:-1]
            spec, default = _xargs_spec(default, nargs), None
        if kind in PROVIDE_SOURCES and (name in table.macros or name in table.display):
            return end
        _store(table, MacroDef(name=name, body=body, nargs=nargs, default=default, source=kind, spec=spec))
        return end
    if m.group("xparse"):
        return _read_xparse(text, pos, m.group("xparse"), table)
    if m.group("unit"):  # siunitx's \DeclareSIUnit[options]\amphour{Ah}: what the unit prints
        _, pos = read_optional(text, pos)
        name, pos = _name_at(text, pos)
        symbol = read_argument(text, pos)
        if symbol is None:
            raise _SkipDefinition(Issue("malformed_macro", f"\\DeclareSIUnit{{{name}}} has no symbol"))
        _store(table, MacroDef(name=name, body=symbol[0].strip(), source="DeclareSIUnit"))
        return symbol[1]
    if m.group("paired"):
        return _read_paired(text, pos, m.group("px"), table)
    if m.group("kw"):  # algorithm2e's \SetKwFunction{Name}{text}: \Name prints the text
        name_arg = read_argument(text, pos)
        text_arg = None if name_arg is None else read_argument(text, name_arg[1])
        if text_arg is None or not re.fullmatch(r"\\?[A-Za-z]+", name_arg[0].strip()):
            raise _SkipDefinition()
        name = "\\" + name_arg[0].strip().lstrip("\\")
        _store(table, MacroDef(name=name, body=f"\\text{{{text_arg[0]}}}", source="newcommand"))
        return text_arg[1]
    if m.group("def"):
        name_m = _DEF_NAME.match(text, pos)
        if name_m is None:
            raise _SkipDefinition()
        name = name_m.group(1)
        brace = text.find("{", name_m.end())
        if brace < 0:
            raise _SkipDefinition()
        params = text[name_m.end() : brace].strip()
        body_arg = read_argument(text, brace)
        if body_arg is None:
            raise _SkipDefinition(Issue("malformed_macro", f"\\def{name} has an unbalanced body"))
        body, end = body_arg
        delimited = _DELIMITED_ONE.match(params)
        if delimited is not None and _opens_display(body):
            _store(table, MacroDef(name, body, 1, source="def", spec=f"u{{{delimited.group(1)}}}"))
            return end
        if not _DEF_PARAMS.match(params) or any(
            params[i + 1] != str(k + 1) for k, i in enumerate(range(0, len(params), 2))
        ):
            read = delimited_spec(params, body)  # \def\foo[#1]#2{..} -> "r[] m", \def\d^#1{..} -> "t^ m"
            if read is not None and "@" not in name:
                spec, renumbered = read
                _store(table, MacroDef(name, renumbered, len(spec.split()), source="def", spec=spec))
                return end
            raise _SkipDefinition(
                Issue("delimited_macro", f"\\def{name}{params}{{...}} uses delimited parameters, which are not kept")
            )
        _store(table, MacroDef(name=name, body=body, nargs=len(params) // 2, source="def"))
        return end
    if m.group("let") or m.group("copy"):
        if m.group("let"):
            lm = _LET.match(text, pos)
            if lm is None:
                raise _SkipDefinition()
            name, target, end = lm.group(1), lm.group(2), lm.end()
        else:  # \LetLtxMacro{\new}{\old}, \NewCommandCopy\new\old
            name, pos = _name_at(text, pos)
            target, end = _name_at(text, pos)
        if name == target:
            return end
        _store(table, _copy(name, target, table.macros.get(target), "let" if m.group("let") else m.group("copy")))
        return end
    if m.group("op"):
        name, pos = _name_at(text, pos)
        body_arg = read_argument(text, pos)
        if body_arg is None:
            raise _SkipDefinition(Issue("malformed_macro", f"\\DeclareMathOperator{{{name}}} has no body"))
        star = m.group("ostar")
        op = "\\operatorname*" if star else "\\operatorname"
        _store(table, MacroDef(name=name, body=f"{op}{{{body_arg[0]}}}", source=f"DeclareMathOperator{star}"))
        return body_arg[1]
    # \newenvironment{name}[n][default]{begin}{end} (xparse: {name}{spec}{begin}{end}): only displays matter here
    env_arg = read_argument(text, pos)
    if env_arg is None:
        raise _SkipDefinition()
    env_name, pos = env_arg
    if m.group("env").endswith("DocumentEnvironment"):
        spec_arg = read_argument(text, pos)
        pos = pos if spec_arg is None else spec_arg[1]
        nargs_text = None if spec_arg is None or not spec_arg[0].strip() else "spec"
    else:
        nargs_text, pos = read_optional(text, pos)
        _, pos = read_optional(text, pos)
    begin_arg = read_argument(text, pos)
    if begin_arg is None:
        raise _SkipDefinition()
    end_arg = read_argument(text, begin_arg[1])
    inner = _BEGIN_DISPLAY.match(begin_arg[0]) or _RAW_BEGIN.match(begin_arg[0])
    name = env_name.strip()
    if inner is not None and _is_display_name(inner.group(1)):
        table.environment_aliases[name] = inner.group(1)
    elif end_arg is not None and begin_arg[0].strip() == "\\[" and "\\]" in end_arg[0]:
        # {\[}{..\]}: a display of its own (algorithm2e's algomathdisplay renewed so), whatever the end code adds
        table.environment_aliases[name] = "displaymath"
    elif (
        end_arg is not None
        and nargs_text is None
        and _MATH_BODY.search(begin_arg[0])
        and "#" not in begin_arg[0] + end_arg[0]
    ):
        # an environment without arguments that opens math structure (\begin{array}{lrll}): used inside displays
        table.environments[name] = (begin_arg[0], end_arg[0])
    return begin_arg[1] if end_arg is None else end_arg[1]


def _copy(name: str, target: str, existing: MacroDef | None, source: str) -> MacroDef:
    """What ``\\let<name><target>`` (or a copy command) defines: a copy of a document macro's definition as it is now
    (arguments, argument types and delimiters included), else an alias of the command of KaTeX or of a package that
    ``target`` names (``engine.latex.aliases`` resolves it against the package table)."""
    if existing is None:
        return MacroDef(name=name, body=target, nargs=0, source=source)
    if existing.source in ALIAS_SOURCES:
        return replace(existing, name=name)  # a copy of an alias is the same alias
    if existing.source in PROVIDE_SOURCES:  # the copy is a definition of its own, not a \providecommand
        return replace(existing, name=name, source="newcommand")
    return replace(existing, name=name)


def _read_xparse(text: str, pos: int, command: str, table: DocumentMacros) -> int:
    """``\\NewDocumentCommand{\\name}{spec}{body}`` (and Renew/Provide/Declare, Expandable)."""
    name, pos = _name_at(text, pos)
    spec_arg = read_argument(text, pos)
    body_arg = None if spec_arg is None else read_argument(text, spec_arg[1])
    if spec_arg is None or body_arg is None:
        raise _SkipDefinition(Issue("malformed_macro", f"\\{command}{{{name}}} has no argument types or no body"))
    spec = parse_argument_spec(spec_arg[0])
    if len(spec) > 9:
        raise _SkipDefinition(Issue("malformed_macro", f"{name} declares {len(spec)} arguments (0-9 allowed)"))
    if command.startswith("Provide") and (name in table.macros or name in table.display):
        return body_arg[1]
    _store(table, MacroDef(name, body_arg[0], len(spec), source=command, spec=format_argument_spec(spec)))
    return body_arg[1]


def _read_paired(text: str, pos: int, variant: str, table: DocumentMacros) -> int:
    """``\\DeclarePairedDelimiter{\\abs}{\\lvert}{\\rvert}``; ``X``: ``{\\inner}[2]{\\langle}{\\rangle}{#1,#2}``;
    ``XPP``: ``{\\trunc}[2]{pre}{\\lVert}{\\rVert}{post}{#2}``, kept as an xparse-style macro (star, size, then its
    arguments) with its pre and post code."""
    name, pos = _name_at(text, pos)
    extended = bool(variant)
    nargs = 1
    if extended:
        nargs_text, pos = read_optional(text, pos)
        nargs = _parse_nargs(nargs_text, name) if nargs_text is not None else 0
    if variant == "XPP":
        parts: list[str] = []
        for _ in range(5):  # pre, left, right, post, body
            arg = read_argument(text, pos)
            if arg is None:
                raise _SkipDefinition(Issue("malformed_macro", f"\\DeclarePairedDelimiterXPP{{{name}}} is incomplete"))
            parts.append(arg[0])
            pos = arg[1]
        body, spec = xpp_definition(parts, nargs)  # as \name*[size]{...}: star and size first, then the arguments
        _store(table, MacroDef(name, body, nargs + 2, source="DeclarePairedDelimiterXPP", spec=spec))
        return pos
    left = read_argument(text, pos)
    right = None if left is None else read_argument(text, left[1])
    if left is None or right is None:
        raise _SkipDefinition(Issue("malformed_macro", f"\\DeclarePairedDelimiter{{{name}}} has no delimiters"))
    body, end = "#1", right[1]
    if extended:
        body_arg = read_argument(text, end)
        if body_arg is None:
            raise _SkipDefinition(Issue("malformed_macro", f"\\DeclarePairedDelimiterX{{{name}}} has no body"))
        body, end = body_arg
    source = "DeclarePairedDelimiterX" if extended else "DeclarePairedDelimiter"
    _store(table, MacroDef(name=name, body=body, nargs=nargs, source=source, delimiters=(left[0], right[0])))
    return end


def _xargs_spec(keys: str | None, nargs: int) -> str | None:
    """xargs' optional arguments (``[1=i, 2=0]``: each position with its default) as an xparse specification
    (``O{i} O{0}``), the other positions mandatory; None where there are none."""
    defaults: dict[int, str] = {}
    for item in split_top_level(keys or "", ","):
        key, _, value = item.partition("=")
        if key.strip().isdigit():
            value = value.strip()
            defaults[int(key)] = value[1:-1] if value.startswith("{") and value.endswith("}") else value
    if not defaults:
        return None
    return " ".join(f"O{{{defaults[k]}}}" if k in defaults else "m" for k in range(1, nargs + 1))


def _parse_nargs(nargs_text: str | None, name: str) -> int:
    if nargs_text is None:
        return 0
    try:
        nargs = int(nargs_text.strip())
    except ValueError:
        raise _SkipDefinition(Issue("malformed_macro", f"{name} has a bad argument count [{nargs_text}]")) from None
    if not 0 <= nargs <= 9:
        raise _SkipDefinition(Issue("malformed_macro", f"{name} declares {nargs} arguments (0-9 allowed)"))
    return nargs


def _store(table: DocumentMacros, macro: MacroDef) -> None:
    table.display.pop(macro.name, None)
    table.macros.pop(macro.name, None)  # re-insert so that the order is the order of (re)definition
    table.macros[macro.name] = macro


def _opens_display(body: str) -> bool:
    from eqsearch.ingest.displaymacros import has_display_delimiter

    return has_display_delimiter(body)


def _is_display_name(name: str) -> bool:
    from eqsearch.ingest.mathenv import DISPLAY_ENVIRONMENTS

    return name.rstrip("*") in DISPLAY_ENVIRONMENTS


__all__ = ["DocumentMacros", "expand_environments", "extract_macros", "take_definitions"]
