"""The top-level documents of a source (main text first, then a supplement or appendix compiled on its own), and the
text each makes with ``\\input``/``\\include``/``\\subfile``/``\\import`` and user commands that wrap them; a file name
or folder written with a text macro of the main file (``\\def\\PATH{.}``, ``\\import{\\PATH/ch1/}{ch1}``) is read with
it written out."""

from __future__ import annotations

import posixpath
import re
import time
from dataclasses import dataclass, field

from eqsearch.engine.latex.scan import (
    document_body,
    strip_comments,
    strip_sweave,
    verbatim_environments,
)
from eqsearch.ingest.errors import DocumentTooLargeError, NoMainFileError, TimeBudgetError
from eqsearch.ingest.files import SourceFiles, decode_text, is_tex_name, normalize_member
from eqsearch.ingest.inputwrappers import InputWrapper, expand_text_macros, input_wrappers, text_macros
from eqsearch.ingest.records import Issue
from eqsearch.ingest.toplevel import IncludeGraph, candidates, include_pattern, input_use, is_input_name, tex_facts

_DOCUMENTCLASS = re.compile(r"\\document(?:class|style)\b")
_BEGIN_DOCUMENT = re.compile(r"\\begin\s*\{document\}")
_END_DOCUMENT = re.compile(r"\\end\s*\{document\}")
_PREFERRED_NAMES = ("main.tex", "ms.tex", "paper.tex", "article.tex", "manuscript.tex", "root.tex")


@dataclass
class ExpandedDocument:
    """A document with its inputs expanded.

    Attributes:
        text: the whole text, comments and verbatim removed, inputs expanded.
        issues: missing inputs, loops, too-deep nesting, undecodable files.
    """

    text: str
    issues: list[Issue] = field(default_factory=list)


def read_tex(files: SourceFiles, name: str, verbatim: frozenset[str], issues: list[Issue]) -> str | None:
    """One source file as TeX reads it (decoded, Sweave chunks and comments removed); None if binary/missing."""
    data = files.read(name)
    if data is None:
        return None
    text, encoding = decode_text(data)
    if text is None:
        issues.append(Issue("binary_file", f"{name} is binary, not LaTeX; skipped"))
        return None
    if encoding != "utf-8":
        issues.append(Issue("non_utf8", f"{name} is not UTF-8; decoded as {encoding}"))
    if name.lower().endswith(".rnw"):
        text = strip_sweave(text)
    return strip_comments(text, verbatim)


def find_main_file(files: SourceFiles, preferred_stem: str | None = None) -> str:
    """Pick the main file of a source: the first of `find_documents`.

    Raises:
        NoMainFileError: no LaTeX file at all.
    """
    return find_documents(files, preferred_stem)[0]


def find_documents(files: SourceFiles, preferred_stem: str | None = None) -> list[str]:
    """The top-level documents of a source, main document first.

    arXiv compiles every top-level file of a submission (or those its ``00README`` declares ``toplevel``) and
    assembles the results into the paper's one PDF, so a manuscript and a supplement compiled on their own are both
    the paper. The main document is the ``toplevelfile`` first named in ``00README.XXX`` / ``00README.json``;
    else the documents are decided by the include graph (`eqsearch.ingest.toplevel.IncludeGraph`): a file another
    inputs is never one, whatever it holds (a preamble file with the ``\\documentclass``, a ``subfiles`` chapter),
    and a file is one when it or what it inputs has a ``\\begin{document}``. The main one among them: with a class
    and a ``\\begin{document}`` (with its inputs), a conventional name (``main.tex``, ``ms.tex``, the paper id),
    the shallowest, the one with most inputs and sections, the largest. With no document at all, a lone ``.tex``
    fragment (the largest) is read. The other documents follow in name order (arXiv assembles in name order; the
    main text comes first here so that its equation numbers do not move when a supplement is added).

    Raises:
        NoMainFileError: no LaTeX file at all.
    """
    names = files.names()
    declared = _readme_toplevels(files, names)
    if declared:
        return [declared[0], *sorted(set(declared[1:]) - {declared[0]})]
    tex_names = [n for n in names if is_tex_name(n)]
    if not tex_names:
        raise NoMainFileError(
            f"no .tex file among {len(names)} files ({', '.join(names[:5])}{'...' if len(names) > 5 else ''})"
        )
    texts: dict[str, str] = {}
    for name in tex_names:
        text = read_tex(files, name, verbatim_environments(""), [])
        if text is not None:
            texts[name] = text
    if not texts:
        raise NoMainFileError("every .tex file is binary or unreadable")
    wrappers = input_wrappers([*texts.values(), *_class_texts(files)])
    graph = IncludeGraph({name: tex_facts(name, text, wrappers) for name, text in texts.items()})
    documents = graph.documents() or [max(texts, key=lambda n: (len(texts[n]), [-ord(c) for c in n]))]

    def rank(name: str) -> tuple[object, ...]:
        has_class, has_begin, structure = graph.summary(name)
        stem = posixpath.splitext(posixpath.basename(name))[0]
        preferred = posixpath.basename(name) in _PREFERRED_NAMES or (
            preferred_stem is not None and stem == preferred_stem
        )
        return (int(has_class and has_begin), int(preferred), -name.count("/"), structure, len(texts[name]))

    main = max(documents, key=lambda name: (rank(name), [-ord(c) for c in name]))
    return [main, *sorted(set(documents) - {main})]


def _readme_toplevels(files: SourceFiles, names: list[str]) -> list[str]:
    """The top-level files ``00README.json`` (usage ``toplevel``) or ``00README.XXX`` (``toplevelfile``) declare."""
    found: list[str] = []
    if "00README.json" in names:
        import json

        try:
            data = json.loads(files.read("00README.json") or b"{}")
            for entry in data.get("sources", []):
                if entry.get("usage") == "toplevel" and entry.get("filename") in names:
                    found.append(str(entry["filename"]))
        except (ValueError, AttributeError):
            pass
    if not found and "00README.XXX" in names:
        text, _ = decode_text(files.read("00README.XXX") or b"")
        for line in (text or "").splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[1] == "toplevelfile" and parts[0] in names:
                found.append(parts[0])
    return list(dict.fromkeys(found))


def expand_document(
    files: SourceFiles,
    main_file: str,
    *,
    max_depth: int,
    max_chars: int,
    deadline: float | None = None,
) -> ExpandedDocument:
    """Read the main file and splice in every file it inputs, recursively.

    ``\\input`` and ``\\include`` resolve against the main file's folder (then the including file's), ``\\import``
    and ``\\subimport`` change the folder for what the imported file inputs, an included file's own preamble
    (a ``subfiles`` child) is dropped. A user command that wraps an input (``\\newcommand{\\chap}[1]{\\include{#1}}``)
    inputs its argument too, and so does one the class or a package of the source defines (a thesis class's
    ``\\includechapter``): when there is one, the document is read again with it. A file that includes
    itself, directly or not, is recorded as ``include_loop`` and not expanded again; nesting deeper than
    ``max_depth`` as ``include_too_deep``.

    Raises:
        DocumentTooLargeError: the expanded text exceeds ``max_chars``.
        TimeBudgetError: ``deadline`` (a ``time.monotonic()`` value) passed.
    """
    document = _expand(files, main_file, (), max_depth=max_depth, max_chars=max_chars, deadline=deadline)
    wrappers = include_wrappers(document.text, _class_texts(files))
    if wrappers:
        document = _expand(files, main_file, wrappers, max_depth=max_depth, max_chars=max_chars, deadline=deadline)
    return document


def include_wrappers(text: str, class_texts: list[str] | tuple[str, ...] = ()) -> tuple[InputWrapper, ...]:
    """The input wrappers (`eqsearch.ingest.inputwrappers`) that ``text`` and the class and package files of its
    source (``class_texts``) define."""
    return input_wrappers([text, *class_texts])


def _class_texts(files: SourceFiles) -> list[str]:
    """The class and package files a source ships (``.cls``, ``.sty``), comments removed: commands they define may
    input files."""
    texts: list[str] = []
    for name in files.names():
        if name.lower().endswith((".cls", ".sty")):
            text = read_tex(files, name, verbatim_environments(""), [])
            if text is not None and ("\\input" in text or "\\include" in text or "\\subfile" in text):
                texts.append(text)
    return texts


def _expand(
    files: SourceFiles,
    main_file: str,
    wrappers: tuple[InputWrapper, ...],
    *,
    max_depth: int,
    max_chars: int,
    deadline: float | None,
) -> ExpandedDocument:
    issues: list[Issue] = []
    raw_main = files.read(main_file) or b""
    verbatim = verbatim_environments(decode_text(raw_main)[0] or "")
    total = [0]
    pattern = include_pattern(wrappers)
    by_name = {w.name: w for w in wrappers}
    has_class = [False]  # whether the text read so far holds the document's \documentclass
    # the main file's text macros (\def\PATH{.}), for a file name or folder written with one (\import{\PATH/ch1/}{ch1})
    names: list[dict[str, str]] = []

    def expand(name: str, base: str, stack: tuple[str, ...], is_child: bool) -> str:
        if deadline is not None and time.monotonic() > deadline:
            raise TimeBudgetError(f"time budget exceeded while reading {name}")
        text = read_tex(files, name, verbatim, issues)
        if text is None:
            return ""
        if is_child and _is_standalone(text):
            if has_class[0]:
                text = document_body(text)[1]  # a subfiles child: its own preamble is not the document's
            else:  # the document's preamble kept in a file of its own: it is the document's, up to its end
                end = _END_DOCUMENT.search(text)
                text = text if end is None else text[: end.start()]
        total[0] += len(text)
        if total[0] > max_chars:
            raise DocumentTooLargeError(
                f"the document is over {max_chars:,} characters with its inputs expanded (at {name})",
                hint="raise the limit (--max-document-chars) if this is a legitimate document",
            )
        parts: list[str] = []
        pos = 0
        for m in pattern.finditer(text):
            command, target, by_wrapper = input_use(m, by_name)
            if by_wrapper and _defines(text, m.start()):
                continue  # the wrapper's own definition, not a use
            if "#" in target:
                continue  # \\input{#1} in a macro body: an input wrapper's definition, left as it is
            if not has_class[0] and _DOCUMENTCLASS.search(text, pos, m.start()):
                has_class[0] = True
            parts.append(text[pos : m.start()])
            pos = m.end()
            folder = (m.group("dir") or "").strip() if command not in ("input", "include", "subfile") else ""
            if "\\" in target or "\\" in folder:
                if not names:
                    names.append(text_macros([decode_text(raw_main)[0] or "", text]))
                target, folder = expand_text_macros(target, names[0]), expand_text_macros(folder, names[0])
            if command in ("import", "inputfrom", "includefrom"):
                child_base = normalize_member(posixpath.join(posixpath.dirname(main_file), folder)) or ""
            elif command in ("subimport", "subinputfrom", "subincludefrom"):
                child_base = normalize_member(posixpath.join(base, folder)) or ""
            else:
                child_base = base
            found = _resolve(files, child_base, target, posixpath.dirname(name))
            if found is None:
                if target.endswith((".bbl", ".sty", ".cls", ".aux", ".toc")) or not target:
                    continue
                issues.append(Issue("include_missing", f"\\{command}{{{target}}} in {name}: no such file"))
                continue
            if found in stack:
                chain = " -> ".join([*stack[stack.index(found) :], found])
                issues.append(Issue("include_loop", f"\\{command}{{{target}}} in {name} closes a loop: {chain}"))
                continue
            if len(stack) > max_depth:
                issues.append(
                    Issue("include_too_deep", f"\\{command}{{{target}}} in {name} is nested deeper than {max_depth}")
                )
                continue
            parts.append("\n" + expand(found, child_base, (*stack, found), True) + "\n")
        if not has_class[0] and _DOCUMENTCLASS.search(text, pos):
            has_class[0] = True
        parts.append(text[pos:])
        return "".join(parts)

    text = expand(main_file, posixpath.dirname(main_file), (main_file,), False)
    return ExpandedDocument(text, issues)


def _is_standalone(text: str) -> bool:
    """A file with its own ``\\documentclass`` before its ``\\begin{document}`` (a ``\\begin{document}`` inside a
    macro definition, with no class, is not one)."""
    begin = _BEGIN_DOCUMENT.search(text)
    klass = _DOCUMENTCLASS.search(text, 0, begin.start()) if begin is not None else None
    return klass is not None


_DEFINER_BEFORE = re.compile(r"\\(?:(?:re|provide)?newcommand\*?\s*\{?|[gex]?def|let)\s*\Z")


def _defines(text: str, start: int) -> bool:
    """Whether the control sequence at ``start`` is the name being defined (``\\newcommand{\\x}``, ``\\def\\x``)."""
    return _DEFINER_BEFORE.search(text, max(0, start - 20), start) is not None


def _resolve(files: SourceFiles, base: str, target: str, current_dir: str) -> str | None:
    for folder in dict.fromkeys((base, current_dir, "")):
        for candidate in candidates(folder, target):
            if is_input_name(candidate) and files.read(candidate) is not None:
                return candidate
    return None
