"""Macros a preamble makes with TeX's own machinery: names built with ``\\csname``, definitions made in loops.

Preambles define families of macros at once: ``\\@for\\i:=\\lst\\do{\\expandafter\\MakeLie\\i}`` with
``\\def\\MakeLie#1{\\expandafter\\def\\csname Lie#1\\endcsname{\\mathfrak{#1}}}`` makes ``\\LieB``, ``\\LieG``...;
``\\foreach \\x in {A,...,Z}{\\expandafter\\xdef\\csname c\\x\\endcsname{\\noexpand\\mathcal{\\x}}}`` makes ``\\cA``
to ``\\cZ``; a preamble's own iterator in TeX's ``\\csname``/``\\next`` idiom (``\\applytolist{calc}QWERTY;``) does
the same. `unrolled_loops` writes out what such loops run, one body per item, and `named_definitions` turns a
definition of a ``\\csname``-built name into the plain definition (``\\def\\LieB{...}``), so that the document's
macro reader (`eqsearch.ingest.macros`) reads both like any other definition. ``\\newif\\ifthesis`` makes a switch:
`newif_switches` gives it the value the preamble sets (``\\thesistrue``).
"""

from __future__ import annotations

import re

from eqsearch.engine.latex.macros import MacroDef
from eqsearch.engine.latex.scan import read_argument, skip_space

__all__ = ["CSNAME_DEFINITION", "applied_lists", "named_definitions", "newif_switches", "unrolled_loops"]

_DEFINERS = (
    r"(?:(?:re|provide)?newcommand\*?|[gex]?def|let|DeclareMathOperator\*?|(?:New|Renew|Provide)DocumentCommand)"
)
#: ``\expandafter\def\csname NAME\endcsname`` (NAME may still hold a parameter: ``Lie#1``).
CSNAME_DEFINITION = re.compile(r"\\expandafter\s*\\(" + _DEFINERS + r")\s*\\csname\s*([^{}]*?)\s*\\endcsname")
# \@for\i:=\lst\do{..}, \@for\i:={a,b}\do{..}; pgffor's \foreach \x in {a,b}{..} (or \foreach \x in {..} \do{..})
_FOR = re.compile(r"\\@for\s*(\\[A-Za-z@]+)\s*:=\s*")
_FOREACH = re.compile(r"\\foreach\s*(\\[A-Za-z@]+)\s*in\s*")
_DO = re.compile(r"\s*\\do(?![A-Za-z@])\s*")
_RANGE = re.compile(r"\A([A-Za-z0-9])\s*,\s*\.\.\.\s*,\s*([A-Za-z0-9])\Z")
_LIMIT = 200  # items of one loop written out at most


def named_definitions(text: str) -> str:
    """``text`` with each ``\\expandafter\\def\\csname NAME\\endcsname`` whose NAME is letters written
    ``\\def\\NAME`` (``\\newcommand{\\NAME}`` for the LaTeX definers), and ``\\noexpand`` dropped: what TeX defines."""

    def plain(m: re.Match[str]) -> str:
        name = m.group(2).strip()
        if not re.fullmatch(r"[A-Za-z@]+", name):
            return "\\relax "  # a name still made of a variable: nothing TeX would define here
        definer = m.group(1)
        if re.fullmatch(r"[gex]?def|let", definer):
            return f"\\{definer}\\{name}"
        return f"\\{definer}{{\\{name}}}"

    out = CSNAME_DEFINITION.sub(plain, text)
    return out.replace("\\noexpand", "") if "\\noexpand" in out else out


def _items(text: str, pos: int, preamble: str) -> tuple[list[str], int] | None:
    """The items of a loop's list at ``pos`` (a braced list, or a macro holding one) and where the list ends."""
    arg = read_argument(text, pos)
    if arg is None:
        return None
    listed, end = arg
    listed = listed.strip()
    if re.fullmatch(r"\\[A-Za-z@]+", listed):  # a macro holding the list: its (last) definition before the loop
        name = re.escape(listed)
        found = None
        for d in re.finditer(
            r"\\(?:[gex]?def\s*" + name + r"|(?:re)?newcommand\*?\s*\{?\s*" + name + r"\s*\}?)\s*(?=\{)", preamble
        ):
            body = read_argument(preamble, d.end())
            if body is not None:
                found = body[0]
        if found is None:
            return None
        listed = found.strip()
    span = _RANGE.match(listed)
    if span is not None:  # pgffor's A,...,Z
        first, last = ord(span.group(1)), ord(span.group(2))
        items = [chr(c) for c in range(first, last + 1)] if first <= last else []
    else:
        items = [item.strip() for item in listed.split(",") if item.strip()]
    return items[:_LIMIT], end


def unrolled_loops(text: str) -> str:
    """What the ``\\@for`` and ``\\foreach`` loops of ``text`` run, written out: each body once per item, the loop
    variable replaced by the item (``\\expandafter\\MakeLie\\i`` -> ``\\MakeLie{B}``), ``\\csname`` names made plain;
    and the uses of a preamble's own list iterator (`applied_lists`). Empty when ``text`` has no loop."""
    made: list[str] = applied_lists(text)
    if "\\@for" not in text and "\\foreach" not in text:
        return named_definitions("\n".join(made)) if made else ""
    for pattern in (_FOR, _FOREACH):
        for m in pattern.finditer(text):
            found = _items(text, skip_space(text, m.end()), text[: m.start()])
            if found is None:
                continue
            items, end = found
            do = _DO.match(text, end)
            body = read_argument(text, do.end() if do else skip_space(text, end))
            if body is None:
                continue
            variable = re.escape(m.group(1)) + r"(?![A-Za-z@])"
            for item in items:
                once = re.sub(
                    r"\\expandafter\s*(\\[A-Za-z@]+)\s*" + variable,
                    lambda c, item=item: f"{c.group(1)}{{{item}}}",
                    body[0],
                )
                made.append(re.sub(variable, lambda _, item=item: item, once))
    return named_definitions("\n".join(made))


# \def\applytolist#1{\expandafter\def\csname multi#1\endcsname##1{..\ifx\multiack\semicolon..
#   \csname #1\endcsname{##1}..}}: a one-parameter macro that calls the macro named by its argument on each item
# after it, up to a terminator
_ITERATOR = re.compile(
    r"\\(?:[gex]?def\s*\\([A-Za-z@]+)\s*#1|(?:re)?newcommand\*?\s*\{?\s*\\([A-Za-z@]+)\s*\}?\s*\[1\])\s*(?=\{)"
)
_APPLIES_ARGUMENT = re.compile(r"\\csname\s*#1\s*\\endcsname\s*\{?\s*##1")
_TERMINATOR_TEST = re.compile(r"\\ifx\s*\\[A-Za-z@]+\s*\\([A-Za-z@]+)")


def applied_lists(text: str) -> list[str]:
    """The calls a preamble's own list iterator makes, written out: with ``\\def\\applytolist#1{..}`` iterating in
    TeX's ``\\csname``/``\\next`` idiom (its body calls ``\\csname #1\\endcsname{##1}`` and compares each item with
    a terminator, ``\\ifx\\item\\semicolon`` where ``\\def\\semicolon{;}``), ``\\applytolist{calc}QW;`` is
    ``\\calc{Q}`` and ``\\calc{W}`` (items: single tokens or brace groups, up to the terminator)."""
    if "\\csname" not in text:
        return []
    made: list[str] = []
    for m in _ITERATOR.finditer(text):
        body = read_argument(text, m.end())
        if body is None or not _APPLIES_ARGUMENT.search(body[0]):
            continue
        test = _TERMINATOR_TEST.search(body[0])
        terminator = ";"
        if test is not None:
            value = re.search(r"\\def\s*\\" + re.escape(test.group(1)) + r"\s*\{(.)\}", text)
            terminator = value.group(1) if value else terminator
        name = re.escape(m.group(1) or m.group(2))
        for use in re.finditer(r"\\" + name + r"(?![A-Za-z@])\s*(?=\{)", text):
            if use.start() < body[1] and use.start() >= m.start():
                continue  # the definition itself
            applied = read_argument(text, use.end())
            if applied is None or not re.fullmatch(r"\s*[A-Za-z@]+\s*", applied[0]):
                continue
            pos, items = applied[1], []
            while pos < len(text) and len(items) < _LIMIT:
                pos = skip_space(text, pos)
                if text.startswith(terminator, pos) or pos >= len(text):
                    break
                group = read_argument(text, pos) if text.startswith("{", pos) else None
                if group is not None:
                    items.append(group[0])
                    pos = group[1]
                elif text[pos] == "\\":
                    break  # a command, not an item: the list ended without its terminator
                else:
                    items.append(text[pos])
                    pos += 1
            made += [f"\\{applied[0].strip()}{{{item}}}" for item in items]
    return made


_PARAM_TOKEN = re.compile(r"#(\d)|(\\[A-Za-z@]+|\\.|[^\s#])")
_CLOSING = {"[": "]", "(": ")", "<": ">"}


def delimited_spec(params: str, body: str) -> tuple[str, str] | None:
    """A ``\\def`` with TeX-delimited parameters as an xparse argument specification and the body renumbered, or
    None where its parameter text has no such reading.

    ``\\def\\foo[#1]#2`` reads like ``r[] m``; ``\\def\\DIfF^#1`` (a token that must come first) like ``t^ m`` (the
    token is then optional); ``\\def\\beas#1\\eeas`` like ``u{\\eeas}``; ``\\def\\meet/`` (the name used as ``\\meet/``)
    like ``t/``.
    """
    tokens = [(m.group(1), m.group(2)) for m in _PARAM_TOKEN.finditer(params)]
    spec: list[str] = []
    numbers: dict[str, int] = {}
    expected = 1
    i = 0
    while i < len(tokens):
        number, literal = tokens[i]
        if literal is not None:
            closing = _CLOSING.get(literal)
            if closing and i + 2 < len(tokens) and tokens[i + 1][0] and tokens[i + 2][1] == closing:
                if int(tokens[i + 1][0]) != expected:
                    return None
                spec.append(f"r{literal}{closing}")
                numbers[tokens[i + 1][0]] = len(spec)
                expected += 1
                i += 3
                continue
            if literal not in "{}" and ((i + 1 < len(tokens) and tokens[i + 1][0]) or not numbers):
                # the token TeX requires (before a parameter, or a name's own ending: \def\meet/{\wedge} used as
                # \meet/), read as an optional one
                spec.append(f"t{literal}")
                i += 1
                continue
            return None
        if int(number) != expected:
            return None
        expected += 1
        following = tokens[i + 1][1] if i + 1 < len(tokens) else None
        if following is None or following in "{}":
            spec.append("m")
            i += 1
        else:
            spec.append(f"u{{{following}}}")
            i += 2
        numbers[number] = len(spec)
    if not spec or len(spec) > 9:
        return None
    renumbered = re.sub(r"(?<!#)#([1-9])", lambda p: f"#{numbers.get(p.group(1), p.group(1))}", body)
    return " ".join(spec), renumbered


_NEWIF = re.compile(r"\\newif\s*\\if([A-Za-z@]+)")


def newif_switches(text: str) -> list[MacroDef]:
    """A document's ``\\newif\\ifNAME`` switches as macros for ``\\iftrue`` or ``\\iffalse``: the last
    ``\\NAMEtrue``/``\\NAMEfalse`` of the text decides (a new switch is false)."""
    if "\\newif" not in text:
        return []
    made = []
    for m in _NEWIF.finditer(text):
        name = m.group(1)
        settings = re.findall(r"\\" + re.escape(name) + r"(true|false)(?![A-Za-z@])", text[m.end() :])
        value = settings[-1] if settings else "false"
        made.append(MacroDef(f"\\if{name}", f"\\if{value}", 0, None, "newif"))
    return made
