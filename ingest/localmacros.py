"""The commands a source's own class and package files define: the ``.sty`` files its preamble loads (packages they
load first) and the class file its ``\\documentclass`` names, when the source ships them.

TeX reads them before the document, so their commands are the document's too; a copy of a package the converter
covers (``physics.sty``) is the package, not the author's, and is not read, and a class's commands stand only where
nothing else defines the name (`class_commands`).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import replace

from eqsearch.engine.latex.macros import MacroDef
from eqsearch.engine.latex.packages import KNOWN_PACKAGES, LOADED_PACKAGE_MACROS
from eqsearch.engine.latex.scan import strip_comments
from eqsearch.ingest.files import SourceFiles, decode_text
from eqsearch.ingest.macros import extract_macros

__all__ = ["class_commands", "local_packages"]

_LETTERS = re.compile(r"\\[A-Za-z]+")
_CONTROL_WORD = re.compile(r"\\[A-Za-z@]+")
_DOCUMENTCLASS = re.compile(r"\\document(?:class|style)\s*(?:\[[^\]]*\])?\s*\{([^{}]*)\}")
_USEPACKAGE = re.compile(r"\\(?:usepackage|RequirePackage)\s*(?:\[[^\]]*\])?\s*\{([^{}]*)\}")
_PACKAGE_DEPTH = 4  # local packages loading local packages


def local_packages(files: SourceFiles, preamble: str, main_dir: str) -> list[str]:
    """The texts of the ``.sty`` files of the source that the preamble loads, packages they load first; a copy of a
    package KaTeX or the converter's package table covers (``physics.sty``) is the package, not the author's
    macros, and is not read. A package loaded by a path of the author's machine (``\\usepackage{/home/me/defs}``)
    is the source's file of that name."""
    texts: list[str] = []
    seen: set[str] = set()

    def load(text: str, depth: int) -> None:
        for m in _USEPACKAGE.finditer(text):
            for name in m.group(1).split(","):
                path = posixpath.normpath(posixpath.join(main_dir, name.strip() + ".sty")) if name.strip() else ""
                if not path or path in seen or name.strip() in KNOWN_PACKAGES:
                    continue
                seen.add(path)
                data = files.read(path)
                if data is None and "/" in name:  # a path of the author's machine: \usepackage{/home/me/defs}
                    found = _by_name(files, posixpath.basename(name.strip()) + ".sty")
                    data = None if found is None or found in seen else files.read(found)
                    seen.add(found or path)
                if data is None:
                    continue
                decoded, _ = decode_text(data)
                if decoded is not None:
                    package = strip_comments(decoded)
                    if depth < _PACKAGE_DEPTH:
                        load(package, depth + 1)
                    texts.append(package)

    load(preamble, 0)
    return texts


def class_commands(files: SourceFiles, preamble: str, main_dir: str) -> list[MacroDef]:
    """The commands the document's class defines, read from the class file the source ships (a journal's
    ``siamltex.cls`` with its ``\\diag``): each stands only where KaTeX, the package table and the document define
    nothing (source ``class``, read as a ``\\providecommand``), since a class also redefines much of LaTeX. Only
    commands named with letters are read, with the ``@``-commands they use: a class's ``\\\\`` or ``\\}``, its
    ``\\arraystretch`` and its ``\\newif`` switches serve its own layout."""
    m = _DOCUMENTCLASS.search(preamble)
    if m is None or not m.group(1).strip():
        return []
    base = posixpath.basename(m.group(1).strip()) + ".cls"
    path = posixpath.normpath(posixpath.join(main_dir, base))
    data = files.read(path)
    if data is None:
        found = _by_name(files, base)
        data = None if found is None else files.read(found)
    decoded = None if data is None else decode_text(data)[0]
    if decoded is None:
        return []
    commands = {c.name: c for c in extract_macros(strip_comments(decoded)).definitions() if c.source != "newif"}
    # its commands named with letters (its \\ or \} and its \arraystretch serve its own layout), and the @-commands
    # they use
    kept = [name for name in commands if _LETTERS.fullmatch(name) and not name.endswith("stretch")]
    for name in kept:
        kept.extend(u for u in _CONTROL_WORD.findall(commands[name].body) if u in commands and u not in kept)
    return [replace(commands[name], source="class") for name in commands if name in kept]


def _by_name(files: SourceFiles, base: str) -> str | None:
    """The file of the source named ``base`` (the shallowest), or None."""
    matches = [n for n in files.names() if n == base or n.endswith("/" + base)]
    return min(matches, key=lambda n: (n.count("/"), n)) if matches else None


def loaded_package_commands(preamble: str) -> list[MacroDef]:
    """The commands of the packages ``preamble`` loads that stand in only for such documents
    (`engine.latex.packages.LOADED_PACKAGE_MACROS`: commath's ``\\od``, diffcoeff's ``\\diff``)."""
    names = {name.strip() for m in _USEPACKAGE.finditer(preamble) for name in m.group(1).split(",")}
    return [
        macro
        for package in sorted(names & LOADED_PACKAGE_MACROS.keys())
        for macro in LOADED_PACKAGE_MACROS[package].values()
    ]
