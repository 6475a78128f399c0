"""A document's user macros: ``\\newcommand`` and friends, ``\\def``, ``\\let``, ``\\DeclareMathOperator``.

Extraction collects them into `DocumentMacros` (with the display shortcuts and environment aliases the math scanner
needs, and the definitions it had to drop); a paper carries them as `engine.latex.macros.MacroDef`, which the
converter makes ready for KaTeX.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from eqsearch.engine.latex.macros import MacroDef
from eqsearch.engine.latex.scan import read_argument, read_optional
from eqsearch.ingest.records import Issue

_DEFINER = re.compile(
    r"\\(?:(?P<cmd>newcommand|renewcommand|providecommand)(?P<cstar>\*?)"
    r"|(?P<def>[gex]?def)"
    r"|(?P<let>let)"
    r"|(?P<op>DeclareMathOperator)(?P<ostar>\*?)"
    r"|(?P<env>newenvironment|renewenvironment))(?![A-Za-z@])"
)
_NAME = re.compile(r"\\(?:[A-Za-z@]+|[^A-Za-z@\s])\Z")
_CS = re.compile(r"\\[A-Za-z@]+")
_DEF_PARAMS = re.compile(r"(?:#\d)*\Z")
_DEF_NAME = re.compile(r"\s*(\\(?:[A-Za-z@]+|.))")
_LET = re.compile(r"\s*(\\(?:[A-Za-z@]+|.))\s*=?\s*(\\(?:[A-Za-z@]+|.)|[^\s\\])")
# A macro that only opens or closes a display (``\def\be{\begin{equation}}``) is a shortcut the math scanner
# must see through; it is expanded in the text instead of being passed to the converter.
_ENV_SHORTCUT = re.compile(r"\s*(?:\\(?:begin|end)\s*\{[A-Za-z*]+\}|\\\[|\\\]|\$\$)\s*(?:\\label\s*\{[^{}]*\})?\s*\Z")
_BEGIN_DISPLAY = re.compile(r"\s*\\begin\s*\{([A-Za-z*]+)\}")


@dataclass
class DocumentMacros:
    """The macro definitions collected from one document, in definition order, with what could not be kept.

    Attributes:
        macros: name -> definition, ready for the converter.
        shortcuts: 0-argument macros that only open/close a display, name -> replacement text.
        environment_aliases: ``\\newenvironment{eqn}{\\begin{equation}}{\\end{equation}}`` -> ``{"eqn": "equation"}``.
        issues: definitions dropped (delimited ``\\def`` parameters, recursion), as recorded warnings.
    """

    macros: dict[str, MacroDef] = field(default_factory=dict)
    shortcuts: dict[str, str] = field(default_factory=dict)
    environment_aliases: dict[str, str] = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)

    def definitions(self) -> list[MacroDef]:
        return list(self.macros.values())


def extract_macros(text: str, table: DocumentMacros | None = None) -> DocumentMacros:
    """Collect the macro definitions of ``text`` (comments already removed).

    Later definitions replace earlier ones, except ``\\providecommand`` which only defines what is missing.
    ``\\let\\a\\b`` copies ``\\b``'s definition when ``\\b`` is a user macro, else aliases the built-in.
    Recursive definitions (``\\def\\a{\\a x}`` or a cycle through several macros) are removed with a warning,
    since no converter can expand them.

    Args:
        text: LaTeX source (a preamble, a whole document, or a local ``.sty``).
        table: the definitions to extend (e.g. those of a package file the document loads), else new ones.

    Returns:
        ``table``, or the new definitions.
    """
    table = table if table is not None else DocumentMacros()
    pos = 0
    while True:
        m = _DEFINER.search(text, pos)
        if m is None:
            break
        pos = m.end()
        try:
            end = _read_definition(text, m, table)
        except _SkipDefinition as skip:
            if skip.issue is not None:
                table.issues.append(skip.issue)
            continue
        pos = max(pos, end)
    _drop_recursive(table)
    return table


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
    while (m := _DEFINER.search(text, scan)) is not None:
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
    _drop_recursive(table)
    return "".join(kept)


def _read_definition(text: str, m: re.Match[str], table: DocumentMacros) -> int:
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
        kind = m.group("cmd")
        if kind == "providecommand" and name in table.macros:
            return end
        _store(table, MacroDef(name=name, body=body, nargs=nargs, default=default, source=kind))
        return end
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
        if not _DEF_PARAMS.match(params) or any(
            params[i + 1] != str(k + 1) for k, i in enumerate(range(0, len(params), 2))
        ):
            raise _SkipDefinition(
                Issue("delimited_macro", f"\\def{name}{params}{{...}} uses delimited parameters, which are not kept")
            )
        _store(table, MacroDef(name=name, body=body, nargs=len(params) // 2, source="def"))
        return end
    if m.group("let"):
        lm = _LET.match(text, pos)
        if lm is None:
            raise _SkipDefinition()
        name, target = lm.group(1), lm.group(2)
        if name == target:
            return lm.end()
        existing = table.macros.get(target)
        if existing is not None:
            _store(table, MacroDef(name, existing.body, existing.nargs, existing.default, source="let"))
        else:
            _store(table, MacroDef(name=name, body=target, nargs=0, source="let"))
        return lm.end()
    if m.group("op"):
        name, pos = _name_at(text, pos)
        body_arg = read_argument(text, pos)
        if body_arg is None:
            raise _SkipDefinition(Issue("malformed_macro", f"\\DeclareMathOperator{{{name}}} has no body"))
        star = m.group("ostar")
        op = "\\operatorname*" if star else "\\operatorname"
        _store(table, MacroDef(name=name, body=f"{op}{{{body_arg[0]}}}", source=f"DeclareMathOperator{star}"))
        return body_arg[1]
    # \newenvironment{name}[n][default]{begin}{end}: only displays matter here
    env_arg = read_argument(text, pos)
    if env_arg is None:
        raise _SkipDefinition()
    env_name, pos = env_arg
    _, pos = read_optional(text, pos)
    _, pos = read_optional(text, pos)
    begin_arg = read_argument(text, pos)
    if begin_arg is None:
        raise _SkipDefinition()
    end_arg = read_argument(text, begin_arg[1])
    inner = _BEGIN_DISPLAY.match(begin_arg[0])
    if inner is not None:
        table.environment_aliases[env_name.strip()] = inner.group(1)
    return begin_arg[1] if end_arg is None else end_arg[1]


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
    if macro.nargs == 0 and _ENV_SHORTCUT.match(macro.body):
        table.shortcuts[macro.name] = macro.body
        table.macros.pop(macro.name, None)
        return
    table.shortcuts.pop(macro.name, None)
    table.macros.pop(macro.name, None)  # re-insert so that the order is the order of (re)definition
    table.macros[macro.name] = macro


def _drop_recursive(table: DocumentMacros) -> None:
    names = table.macros
    graph = {name: {cs for cs in _CS.findall(m.body) if cs in names} for name, m in names.items()}
    cyclic = _nodes_on_cycles(graph)
    # On a cycle through a \let alias of a built-in (\let\oldsqrt\sqrt, then \renewcommand{\sqrt}{..\oldsqrt..}),
    # dropping the redefinition leaves the alias pointing at the built-in, which is what TeX meant.
    keep = {name for name in cyclic if names[name].source == "let"}
    drop = cyclic - keep if cyclic - keep else cyclic
    aliased = {m.body for name, m in names.items() if name in keep}
    for name in [n for n in names if n in drop]:
        if name in aliased:
            message = f"{name} is redefined through a \\let alias of its old meaning; dropped (the built-in stays)"
        else:
            message = f"{name} expands to itself (directly or through other macros); dropped"
        table.issues.append(Issue("recursive_macro", message))
        del table.macros[name]


def _nodes_on_cycles(graph: dict[str, set[str]]) -> set[str]:
    """Tarjan's strongly connected components, iteratively; returns the nodes on some cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result: set[str] = set()
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    result.update(component)
    return result


def expand_shortcuts(text: str, shortcuts: dict[str, str]) -> str:
    """Replace display shortcuts (``\\be`` -> ``\\begin{equation}``) so the math scanner sees the environments."""
    if not shortcuts:
        return text
    pattern = re.compile(
        "(" + "|".join(re.escape(n) for n in sorted(shortcuts, key=len, reverse=True)) + r")(?![A-Za-z@])"
    )
    return pattern.sub(lambda m: shortcuts[m.group(1)], text)


__all__ = ["DocumentMacros", "expand_shortcuts", "extract_macros", "take_definitions"]
