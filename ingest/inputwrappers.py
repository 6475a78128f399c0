"""Commands that input a file for their user: ``\\newcommand{\\chap}[1]{\\include{#1}}`` in the document, or a thesis
class's ``\\includechapter{x}`` whose body is ``\\include{\\chaptersdir/#1/#1}`` (adsphd.cls).

The include graph (`eqsearch.ingest.toplevel`) and the expansion (`eqsearch.ingest.includes`) read such a command's
uses as inputs. A wrapper is found in the document's own files and in the class and package files the source ships
(``.cls``, ``.sty``): TeX reads those too, and a class that defines how chapters are input leaves nothing for a reader
of the ``.tex`` files alone to follow. What the input names is the body's argument with the use's arguments put in
for ``#1``..``#9`` and parameterless text macros (``\\def\\chaptersdir{chapters}``) expanded; a wrapper whose body
calls another wrapper (``\\includeabstract{#1}`` -> ``\\IncludeUnnumberedChapterIfExists{#1}{..}``) inputs what that
one would.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from eqsearch.engine.latex.scan import read_argument

__all__ = ["InputWrapper", "expand_text_macros", "input_wrappers", "text_macros", "wrapper_target"]

# \newcommand{\x}[2], \renewcommand*\x[1], \def\x#1#2 (the body follows)
_DEFINITION = re.compile(
    r"\\(?:(?:re|provide)?newcommand\*?\s*\{?\s*\\(?P<name>[A-Za-z@]+)\s*\}?\s*(?:\[\s*(?P<count>[1-9])\s*\])?"
    r"|[gex]?def\s*\\(?P<dname>[A-Za-z@]+)\s*(?P<params>(?:#[1-9])*))\s*(?=\{)"
)
_INPUT = re.compile(r"\\(?:input|include|subfile)\s*\{")
_TEXT_MACRO = re.compile(r"\\(?:(?:re)?newcommand\*?\s*\{?\s*\\([A-Za-z@]+)\s*\}?|[gex]?def\s*\\([A-Za-z@]+))\s*\{")
_PARAMETER = re.compile(r"#([1-9])")
_CONTROL_WORD = re.compile(r"\\([A-Za-z@]+)")


@dataclass(frozen=True)
class InputWrapper:
    """A command that inputs a file.

    Attributes:
        name: the command's name, without backslash.
        arguments: how many mandatory arguments a use reads.
        target: the file it inputs, ``#1``..``#9`` standing for the use's arguments (``chapters/#1/#1``).
    """

    name: str
    arguments: int
    target: str


def input_wrappers(texts: Iterable[str]) -> tuple[InputWrapper, ...]:
    """The input wrappers that ``texts`` (a document's files, its class and packages; comments removed) define.

    A command is one when its body inputs a file named with one of its parameters, directly or through another
    wrapper; names are kept in the order met, the first definition of each.
    """
    texts = list(texts)
    names = text_macros(texts)
    definitions: dict[str, tuple[int, str]] = {}
    for text in texts:
        for m in _DEFINITION.finditer(text):
            name = m.group("name") or m.group("dname")
            count = int(m.group("count") or 0) if m.group("name") else len(m.group("params") or "") // 2
            body = read_argument(text, m.end())
            if count and body is not None and "#" in body[0]:
                definitions.setdefault(name, (count, body[0]))
    found: dict[str, InputWrapper] = {}
    for _ in range(3):  # a wrapper calling a wrapper calling \include: a chain of three at most
        for name, (count, body) in definitions.items():
            if name not in found:
                target = _body_target(body, found, names)
                if target is not None:
                    found[name] = InputWrapper(name, count, target)
    return tuple(found.values())


def wrapper_target(wrapper: InputWrapper, arguments: list[str]) -> str:
    """The file a use of ``wrapper`` with these arguments inputs."""
    return _PARAMETER.sub(
        lambda m: arguments[int(m.group(1)) - 1] if int(m.group(1)) <= len(arguments) else "", wrapper.target
    )


def _body_target(body: str, known: dict[str, InputWrapper], names: dict[str, str]) -> str | None:
    for m in _INPUT.finditer(body):
        argument = read_argument(body, m.end() - 1)
        if argument is not None and "#" in argument[0]:
            return expand_text_macros(argument[0], names)
    for m in _CONTROL_WORD.finditer(body):
        wrapper = known.get(m.group(1))
        if wrapper is None:
            continue
        args: list[str] = []
        pos = m.end()
        for _ in range(wrapper.arguments):
            argument = read_argument(body, pos)
            if argument is None:
                break
            args.append(argument[0])
            pos = argument[1]
        if len(args) == wrapper.arguments:
            target = wrapper_target(wrapper, args)
            if "#" in target:
                return target
    return None


def text_macros(texts: list[str]) -> dict[str, str]:
    """Parameterless macros whose body is plain text (``\\def\\chaptersdir{chapters}``), for names in a target."""
    macros: dict[str, str] = {}
    for text in texts:
        for m in _TEXT_MACRO.finditer(text):
            body = read_argument(text, m.end() - 1)
            name = m.group(1) or m.group(2)
            if body is not None and not re.search(r"[\\#{}]", body[0]) and name not in macros:
                macros[name] = body[0].strip()
    return macros


def expand_text_macros(target: str, names: dict[str, str]) -> str:
    """``target`` with the text macros of ``names`` (name -> text) written out (``\\PATH/ch1`` -> ``./ch1``)."""
    return _CONTROL_WORD.sub(lambda m: names.get(m.group(1), m.group()), target).replace("{}", "")
