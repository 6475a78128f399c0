"""Which files of a LaTeX source are documents: decided by the include graph, not by what a file holds.

A file that another file inputs (``\\input``, ``\\include``, ``\\subfile``, ``\\import``, ``\\includestandalone``,
or a user command wrapping one of them) is never a top-level document, whatever it holds: a preamble kept in its own
file with the ``\\documentclass``, a ``subfiles`` chapter with a class of its own, a ``standalone`` figure. The
top-level documents are the files no other file inputs whose text, with everything they input, has a
``\\begin{document}``; a ``standalone`` picture is one only when nothing else is. The same facts serve an archive
(`eqsearch.ingest.includes.find_documents`) and a LaTeX tree on disk (`eqsearch.ingest.sources`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from eqsearch.ingest.files import normalize_member
from eqsearch.ingest.inputwrappers import InputWrapper, wrapper_target

__all__ = ["IncludeGraph", "TexFacts", "candidates", "include_pattern", "input_use", "tex_facts"]

_DOCUMENTCLASS = re.compile(r"\\document(?:class|style)\b\s*(?:\[[^\]]*\])?\s*\{\s*([^{}\s]*)\s*\}?")
_BEGIN_DOCUMENT = re.compile(r"\\begin\s*\{document\}")
# \include{{./Sections/intro}}: a second pair of braces around the name, which LaTeX reads through (only a pair: in
# \frac{\input{norm.tex}}{x} the brace after the name closes the fraction's numerator)
_INCLUDE_SOURCE = (
    r"\\(?P<cmd>input|include|subfile|subfileinclude)\s*\{(?P<twice>\{)?(?P<file>[^{}]*)(?(twice)\})\}"
    r"|\\input\s+(?P<bare>[^\s{}\\%]+)"
    r"|\\(?P<icmd>import|subimport|inputfrom|subinputfrom|includefrom|subincludefrom)\*?\s*"
    r"\{(?P<dir>[^{}]*)\}\s*\{(?P<ifile>[^{}]*)\}"
)
# \includestandalone[options]{file} draws a standalone file's body where it stands: an input for the graph
_STANDALONE_INPUT = re.compile(r"\\includestandalone\s*(?:\[[^\]]*\])?\s*\{(?P<file>[^{}]*)\}")
_INPUT_SUFFIXES = (".tex", ".bbl", ".ltx", ".Rnw", ".rnw", ".txt", ".tikz", ".pstex_t", ".sty", ".def")


def include_pattern(wrappers: Iterable[InputWrapper] = ()) -> re.Pattern[str]:
    """The pattern of an input: the standard commands, and a use of each input wrapper of ``wrappers``
    (`eqsearch.ingest.inputwrappers`). Groups: ``cmd``/``file``, ``bare``, ``icmd``/``dir``/``ifile``, and, for the
    wrappers of ``k`` arguments, ``wcmdk``/``wargsk``; `input_use` reads a match."""
    by_count: dict[int, list[str]] = {}
    for wrapper in wrappers:
        by_count.setdefault(wrapper.arguments, []).append(re.escape(wrapper.name))
    parts = [_INCLUDE_SOURCE]
    for k, names in sorted(by_count.items()):
        parts.append(rf"\\(?P<wcmd{k}>{'|'.join(names)})(?![A-Za-z@])(?P<wargs{k}>(?:\s*\{{[^{{}}]*\}}){{{k}}})")
    return re.compile("|".join(parts))


_BRACED = re.compile(r"\{([^{}]*)\}")


def input_use(m: re.Match[str], wrappers: Mapping[str, InputWrapper]) -> tuple[str, str, bool]:
    """``(command, target, by_wrapper)`` of a match of `include_pattern`: the command's name, the file it names
    (stripped) and whether a wrapper (by its name in ``wrappers``) made the input."""
    for key, value in m.groupdict().items():
        if key.startswith("wcmd") and value:
            arguments = _BRACED.findall(m.group("wargs" + key[4:]))
            return value, wrapper_target(wrappers[value], arguments).strip(), True
    command = m.group("cmd") or m.group("icmd") or "input"
    return command, (m.group("file") or m.group("bare") or m.group("ifile") or "").strip(), False


@dataclass(frozen=True)
class TexFacts:
    """What the include graph needs to know of one LaTeX file (read without comments).

    Attributes:
        name: the file's path in the source (``/``-separated).
        has_class: it holds a ``\\documentclass`` (or ``\\documentstyle``).
        has_begin: it holds a ``\\begin{document}``.
        document_class: the class it names (``article``, ``standalone``, ``subfiles``), or None.
        inputs: where each input may be found, in order of preference (``(("sec.tex", "sec"), ...)``).
        structure: inputs plus section headings (the main text has most).
        size: its length in characters.
    """

    name: str
    has_class: bool
    has_begin: bool
    document_class: str | None
    inputs: tuple[tuple[str, ...], ...]
    structure: int
    size: int


def tex_facts(name: str, text: str, wrappers: Iterable[InputWrapper] = (), main_dir: str = "") -> TexFacts:
    """The facts of one file from its text (comments already removed).

    Args:
        name: the file's path in the source.
        text: its text without comments.
        wrappers: the source's input wrappers (`eqsearch.ingest.inputwrappers.input_wrappers`).
        main_dir: the folder ``\\import`` resolves against.
    """
    wrappers = {w.name: w for w in wrappers}
    pattern = include_pattern(wrappers.values())
    klass = _DOCUMENTCLASS.search(text)
    base = posixpath.dirname(name)
    inputs: list[tuple[str, ...]] = []
    for m in pattern.finditer(text):
        _, target, _ = input_use(m, wrappers)
        if not target or "#" in target:
            continue  # \input{#1}: an input wrapper's definition, not an input
        folder = base
        if m.group("icmd") in ("import", "inputfrom", "includefrom"):
            folder = posixpath.join(main_dir, m.group("dir").strip())
        elif m.group("icmd"):
            folder = posixpath.join(base, m.group("dir").strip())
        inputs.append(tuple(dict.fromkeys([*candidates(folder, target), *candidates("", target)])))
    for m in _STANDALONE_INPUT.finditer(text):
        target = m.group("file").strip()
        if target and "#" not in target:
            inputs.append(tuple(dict.fromkeys([*candidates(base, target), *candidates("", target)])))
    return TexFacts(
        name=name,
        has_class=klass is not None,
        has_begin=_BEGIN_DOCUMENT.search(text) is not None,
        document_class=klass.group(1) if klass is not None and klass.group(1) else None,
        inputs=tuple(inputs),
        structure=len(inputs) + text.count("\\section"),
        size=len(text),
    )


def candidates(base: str, target: str) -> list[str]:
    """The paths an input of ``target`` from folder ``base`` may name (``sec`` is ``sec.tex`` first)."""
    target = target.strip().strip('"')
    if not target:
        return []
    joined = normalize_member(posixpath.join(base, target))
    if joined is None:
        return []
    out = [joined]
    if not posixpath.splitext(joined)[1] or not joined.endswith((".tex", ".bbl", ".ltx", ".Rnw", ".rnw")):
        out.insert(0, joined + ".tex")
    return out


class IncludeGraph:
    """The files of a source and which of them each inputs.

    Args:
        facts: every LaTeX file of the source by name.
    """

    def __init__(self, facts: Mapping[str, TexFacts]) -> None:
        self.facts = facts
        self.edges: dict[str, list[str]] = {}
        for name, fact in facts.items():
            targets = (next((c for c in options if c in facts and c != name), None) for options in fact.inputs)
            self.edges[name] = [target for target in targets if target is not None]
        self.included = {target for targets in self.edges.values() for target in targets}

    def reach(self, root: str) -> list[str]:
        """``root`` and every file it inputs, at any depth."""
        seen = {root}
        stack = [root]
        while stack:
            for target in self.edges[stack.pop()]:
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        return sorted(seen)

    def documents(self) -> list[str]:
        """The top-level documents, in name order.

        A root is a file no other file inputs; it is a document when it, or a file it inputs (at any depth), has a
        ``\\begin{document}``. Roots whose class is ``standalone`` (pictures compiled on their own and included as
        graphics) are documents only when there is no other. When every file with a ``\\begin{document}`` is input
        by another (two files that input each other), those files are the documents.
        """
        facts = self.facts
        roots = [name for name in sorted(facts) if name not in self.included]
        documents = [root for root in roots if any(facts[n].has_begin for n in self.reach(root))]
        pictures = [root for root in documents if facts[root].document_class == "standalone"]
        if len(pictures) < len(documents):
            documents = [root for root in documents if root not in pictures]
        if not documents:
            documents = [name for name in sorted(facts) if facts[name].has_begin]
        return documents

    def summary(self, root: str) -> tuple[bool, bool, int]:
        """``(has_class, has_begin, structure)`` of ``root`` with everything it inputs."""
        files = [self.facts[n] for n in self.reach(root)]
        return any(f.has_class for f in files), any(f.has_begin for f in files), sum(f.structure for f in files)


def is_input_name(name: str) -> bool:
    """Whether a file of this name may be read as an input (a ``.tex``, ``.bbl``, a name without suffix, ...)."""
    return name.endswith(_INPUT_SUFFIXES) or "." not in posixpath.basename(name)
