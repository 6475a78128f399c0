"""The main file of a source, and the document it makes with ``\\input``/``\\include``/``\\subfile``/``\\import``."""

from __future__ import annotations

import posixpath
import re
import time
from dataclasses import dataclass, field

from eqsearch.engine.latex.scan import document_body, strip_comments, strip_sweave, verbatim_environments
from eqsearch.ingest.errors import DocumentTooLargeError, NoMainFileError, TimeBudgetError
from eqsearch.ingest.files import SourceFiles, decode_text, is_tex_name, normalize_member
from eqsearch.ingest.records import Issue

_DOCUMENTCLASS = re.compile(r"\\document(?:class|style)\b")
_BEGIN_DOCUMENT = re.compile(r"\\begin\s*\{document\}")
_INCLUDE = re.compile(
    r"\\(?P<cmd>input|include|subfile|subfileinclude)\s*\{(?P<file>[^{}]*)\}"
    r"|\\input\s+(?P<bare>[^\s{}\\%]+)"
    r"|\\(?P<icmd>import|subimport|inputfrom|subinputfrom|includefrom|subincludefrom)\*?\s*"
    r"\{(?P<dir>[^{}]*)\}\s*\{(?P<ifile>[^{}]*)\}"
)
_INPUT_SUFFIXES = (".tex", ".bbl", ".ltx", ".Rnw", ".rnw", ".txt", ".tikz", ".pstex_t")
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
    """Pick the main file of a source.

    Order of preference: the ``toplevelfile`` named in arXiv's ``00README.XXX`` / ``00README.json``; files with
    both ``\\documentclass`` and ``\\begin{document}`` outside comments that no other candidate includes; among
    those a conventional name (``main.tex``, ``ms.tex``, the paper id), then the one with most inputs and
    sections, then the largest; then any file with ``\\begin{document}``; then a lone ``.tex`` fragment.

    Raises:
        NoMainFileError: no LaTeX file at all.
    """
    names = files.names()
    readme = _readme_toplevel(files, names)
    if readme is not None:
        return readme
    tex_names = [n for n in names if is_tex_name(n)]
    if not tex_names:
        raise NoMainFileError(
            f"no .tex file among {len(names)} files ({', '.join(names[:5])}{'...' if len(names) > 5 else ''})"
        )
    scored: list[tuple[tuple[int, ...], str]] = []
    included: set[str] = set()
    for name in tex_names:
        text = read_tex(files, name, verbatim_environments(""), [])
        if text is None:
            continue
        has_class = bool(_DOCUMENTCLASS.search(text))
        has_begin = bool(_BEGIN_DOCUMENT.search(text))
        base = posixpath.dirname(name)
        for m in _INCLUDE.finditer(text):
            target = m.group("file") or m.group("bare") or m.group("ifile")
            for candidate in _candidates(posixpath.join(base, (m.group("dir") or "").strip()), target.strip()):
                included.add(candidate)
        stem = posixpath.splitext(posixpath.basename(name))[0]
        preferred = posixpath.basename(name) in _PREFERRED_NAMES or (
            preferred_stem is not None and stem == preferred_stem
        )
        structure = len(_INCLUDE.findall(text)) + text.count("\\section")
        depth = -name.count("/")
        scored.append(
            ((int(has_class and has_begin), int(has_begin), 0, int(preferred), depth, structure, len(text)), name)
        )
    if not scored:
        raise NoMainFileError("every .tex file is binary or unreadable")
    scored = [((s[0], s[1], int(name not in included), *s[3:]), name) for s, name in scored]
    scored.sort(key=lambda item: (item[0], [-ord(c) for c in item[1]]), reverse=True)
    return scored[0][1]


def _readme_toplevel(files: SourceFiles, names: list[str]) -> str | None:
    if "00README.json" in names:
        import json

        try:
            data = json.loads(files.read("00README.json") or b"{}")
            for entry in data.get("sources", []):
                if entry.get("usage") == "toplevel" and entry.get("filename") in names:
                    return str(entry["filename"])
        except (ValueError, AttributeError):
            pass
    if "00README.XXX" in names:
        text, _ = decode_text(files.read("00README.XXX") or b"")
        for line in (text or "").splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[1] == "toplevelfile" and parts[0] in names:
                return parts[0]
    return None


def _candidates(base: str, target: str) -> list[str]:
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
    (a ``subfiles`` child) is dropped. A file that includes itself, directly or not, is recorded as
    ``include_loop`` and not expanded again; nesting deeper than ``max_depth`` as ``include_too_deep``.

    Raises:
        DocumentTooLargeError: the expanded text exceeds ``max_chars``.
        TimeBudgetError: ``deadline`` (a ``time.monotonic()`` value) passed.
    """
    issues: list[Issue] = []
    raw_main = files.read(main_file) or b""
    verbatim = verbatim_environments(decode_text(raw_main)[0] or "")
    total = [0]

    def expand(name: str, base: str, stack: tuple[str, ...], is_child: bool) -> str:
        if deadline is not None and time.monotonic() > deadline:
            raise TimeBudgetError(f"time budget exceeded while reading {name}")
        text = read_tex(files, name, verbatim, issues)
        if text is None:
            return ""
        if is_child and _BEGIN_DOCUMENT.search(text):
            text = document_body(text)[1]
        total[0] += len(text)
        if total[0] > max_chars:
            raise DocumentTooLargeError(
                f"the document is over {max_chars:,} characters with its inputs expanded (at {name})",
                hint="raise the limit (--max-document-chars) if this is a legitimate document",
            )
        parts: list[str] = []
        pos = 0
        for m in _INCLUDE.finditer(text):
            parts.append(text[pos : m.start()])
            pos = m.end()
            command = m.group("cmd") or m.group("icmd") or "input"
            target = (m.group("file") or m.group("bare") or m.group("ifile") or "").strip()
            if command in ("import", "inputfrom", "includefrom"):
                child_base = (
                    normalize_member(posixpath.join(posixpath.dirname(main_file), m.group("dir").strip())) or ""
                )
            elif command in ("subimport", "subinputfrom", "subincludefrom"):
                child_base = normalize_member(posixpath.join(base, m.group("dir").strip())) or ""
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
        parts.append(text[pos:])
        return "".join(parts)

    text = expand(main_file, posixpath.dirname(main_file), (main_file,), False)
    return ExpandedDocument(text, issues)


def _resolve(files: SourceFiles, base: str, target: str, current_dir: str) -> str | None:
    for folder in dict.fromkeys((base, current_dir, "")):
        for candidate in _candidates(folder, target):
            readable = candidate.endswith(_INPUT_SUFFIXES) or "." not in posixpath.basename(candidate)
            if readable and files.read(candidate) is not None:
                return candidate
    return None
