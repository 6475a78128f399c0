"""Where documents come from: discovery of sources on disk, and loading one of them into a Paper.

Discovery runs in the parent process and only lists (it yields small picklable `DocumentTask` records); the
reading, unpacking and extraction happen in `load_paper`, inside a worker.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import tarfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from eqsearch.engine.latex.scan import strip_comments, strip_sweave
from eqsearch.ingest.archive import unpack_source
from eqsearch.ingest.citations import arxiv_id_from_filename
from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.docstrings import extract_docstring_paper
from eqsearch.ingest.errors import ArchiveLimitError, DocumentTooLargeError, IngestError, SourceNotFoundError
from eqsearch.ingest.extract import extract_latex_paper
from eqsearch.ingest.files import FolderFiles, MemoryFiles, decode_text, is_tex_name, normalize_member
from eqsearch.ingest.htmlmath import DISPLAY_MARKERS, HTML_SUFFIXES, extract_html_paper, page_document_id, parse_html
from eqsearch.ingest.records import Paper
from eqsearch.ingest.toplevel import IncludeGraph, TexFacts, tex_facts

if TYPE_CHECKING:
    from lxml import etree

KINDS = ("auto", "arxiv", "latex", "docstrings", "papers", "html")
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".gz", ".zip")
_DOCUMENT_OR_INPUT = re.compile(
    rb"\\(?:begin\s*\{document\}|document(?:class|style)|input|include|subfile|import|subimport)"
)


@dataclass(frozen=True)
class DocumentTask:
    """One document to extract, as discovery found it.

    Attributes:
        kind: ``archive`` (one source file), ``bulk`` (a member of an arXiv bulk tar), ``folder`` (one paper's
            folder), ``tex`` (one LaTeX file and its siblings), ``tree`` (a main file inside a LaTeX tree),
            ``python`` (a module, on disk or inside a wheel), ``paper`` (one line of a papers JSONL), ``html`` (a
            page of an HTML documentation tree with display math), ``empty`` (a source in which discovery found no
            document: it is recorded as failed, with reason ``no_document``).
        path: the file or folder.
        source: how the document is named in records and resumes (unique per document).
        paper_id: the id the paper gets.
        version: the arXiv source version, when the name carries one.
        member: the member name inside ``path`` (bulk tar, wheel), the main file (tree), or the page (html; ``path``
            is then the documentation's root folder).
        offset: byte offset of the member's data (bulk tar) or of the line (papers JSONL).
        size: byte size of the member's data or line.
        arxiv: whether the name is an arXiv id (the paper's kind is then ``arxiv``, else ``latex``).
        folder: for an archive holding several independent papers, the folder of this one (``paperA/``).
    """

    kind: str
    path: str
    source: str
    paper_id: str
    version: int | None = None
    member: str | None = None
    offset: int = 0
    size: int = 0
    arxiv: bool = False
    folder: str | None = None


def discover(paths: list[str], kind: str = "auto", max_tree_files: int = 200_000) -> Iterator[DocumentTask]:
    """List the documents under command-line sources.

    Args:
        paths: files, folders, or ``py:PACKAGE`` for an installed Python package's docstrings.
        kind: ``auto`` guesses from names and contents; the others force how folders are read.
        max_tree_files: stop walking a LaTeX tree after this many files.

    Raises:
        SourceNotFoundError: a path does not exist or a ``py:`` package is not installed.
    """
    for raw in paths:
        if raw.startswith("py:"):
            yield from _python_package(raw[3:])
            continue
        path = Path(raw)
        if not path.exists():
            raise SourceNotFoundError(f"{raw} does not exist", hint="give a file, a folder or py:PACKAGE")
        found = False
        for task in _folder(path, kind, max_tree_files) if path.is_dir() else _file(path, kind):
            found = True
            yield task
        if not found:  # a source with no document in it is a failed document with its reason, never nothing
            yield DocumentTask("empty", str(path), str(path), path.name)


def _python_package(name: str) -> Iterator[DocumentTask]:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise SourceNotFoundError(f"Python package {name!r} is not installed", hint=f"pip install {name}")
    locations = list(spec.submodule_search_locations or [])
    if not locations:
        yield _python_task(Path(spec.origin), name)
        return
    root = Path(locations[0])
    yield from _python_folder(root, name)


def _python_folder(root: Path, package: str) -> Iterator[DocumentTask]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d.isidentifier())
        for filename in sorted(filenames):
            if filename.endswith(".py"):
                rel = Path(dirpath, filename).relative_to(root).with_suffix("")
                parts = [p for p in rel.parts if p != "__init__"]
                yield _python_task(Path(dirpath, filename), ".".join([package, *parts]))


def _python_task(path: Path, module: str) -> DocumentTask:
    return DocumentTask("python", str(path), str(path), f"py:{module}")


def _module_from_member(member: str) -> str:
    parts = [p for p in member[:-3].split("/") if p != "__init__"]
    return ".".join(parts)


def _file(path: Path, kind: str) -> Iterator[DocumentTask]:
    name = path.name
    if kind == "papers" or name.endswith(".jsonl"):
        yield from _papers_jsonl(path)
    elif name.endswith(".py"):
        yield _python_task(path, path.stem)
    elif name.endswith(".whl") or (kind == "docstrings" and name.endswith(".zip")):
        with zipfile.ZipFile(path) as wheel:
            for member in sorted(wheel.namelist()):
                if member.endswith(".py") and ".data/" not in member:
                    module = _module_from_member(member)
                    yield DocumentTask("python", str(path), f"{path}!{member}", f"py:{module}", member=member)
    elif name.lower().endswith(HTML_SUFFIXES):
        root = path.parent
        yield DocumentTask("html", str(root), str(path), page_document_id(root.name, name), member=name)
    elif is_tex_name(name):
        paper_id, version, arxiv = _paper_id(name, path.stem)
        yield DocumentTask("tex", str(path), str(path), paper_id, version, member=name, arxiv=arxiv)
    elif name.endswith(".tar") and _is_bulk_tar(path):
        yield from _bulk_members(path)
    else:
        paper_id, version, arxiv = _paper_id(name, _strip_archive_suffix(name))
        folders = [] if arxiv else _independent_papers(path)
        if not folders:
            yield DocumentTask("archive", str(path), str(path), paper_id, version, arxiv=arxiv)
        for folder in folders:
            source = f"{path}!{folder}"
            yield DocumentTask("archive", str(path), source, f"{paper_id}/{folder.rstrip('/')}", folder=folder)


_PEEK_BYTES = 64 * 1024 * 1024


def _independent_papers(path: Path) -> list[str]:
    """The folders of an archive that holds several independent papers, else ``[]``.

    An arXiv source is one paper whatever it holds (arXiv compiles its top-level files into one PDF). Another
    archive is one paper too, unless its LaTeX files all sit in two or more top-level folders and none at its root
    (``proceedings.tar.gz`` with ``paperA/main.tex`` and ``paperB/main.tex``): then each folder is a paper.
    The archive is listed once here with the same limits as extraction; one that cannot be read is left to the
    worker, which records why.
    """
    try:
        if path.stat().st_size > _PEEK_BYTES:
            return []
        unpacked = unpack_source(path.read_bytes(), path.name, ExtractConfig())
    except (OSError, IngestError):
        return []
    tex = [name for name in unpacked.files if is_tex_name(name)]
    if not tex or any("/" not in name for name in tex):
        return []
    folders = sorted({name.split("/", 1)[0] + "/" for name in tex})
    return folders if len(folders) >= 2 else []


def _paper_id(name: str, fallback: str) -> tuple[str, int | None, bool]:
    found = arxiv_id_from_filename(name)
    return (*found, True) if found is not None else (fallback, None, False)


def _strip_archive_suffix(name: str) -> str:
    for suffix in _ARCHIVE_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _is_bulk_tar(path: Path) -> bool:
    """An arXiv bulk tar holds one ``.gz`` (or ``.pdf``) per paper and no LaTeX files of its own."""
    try:
        with tarfile.open(path, "r:") as tar:
            names = [m.name for _, m in zip(range(50), tar, strict=False)]
    except tarfile.TarError:
        return False
    files = [n for n in names if not n.endswith("/")]
    return bool(files) and all(n.endswith((".gz", ".pdf")) for n in files) and any(n.endswith(".gz") for n in files)


def _bulk_members(path: Path) -> Iterator[DocumentTask]:
    with tarfile.open(path, "r:") as tar:
        for member in tar:
            if not member.isreg():
                continue
            paper_id, version, arxiv = _paper_id(member.name, _strip_archive_suffix(member.name.rsplit("/", 1)[-1]))
            yield DocumentTask(
                "bulk",
                str(path),
                f"{path}!{member.name}",
                paper_id,
                version,
                member=member.name,
                offset=member.offset_data,
                size=member.size,
                arxiv=arxiv,
            )


def _papers_jsonl(path: Path) -> Iterator[DocumentTask]:
    offset = 0
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                m = re.search(rb'"id"\s*:\s*"([^"]*)"', line)
                paper_id = m.group(1).decode("utf-8", "replace") if m else f"{path.stem}:{number}"
                yield DocumentTask("paper", str(path), f"{path}:{number}", paper_id, offset=offset, size=len(line))
            offset += len(line)


def _folder(path: Path, kind: str, max_tree_files: int) -> Iterator[DocumentTask]:
    if kind == "docstrings" or (kind == "auto" and (path / "__init__.py").is_file()):
        yield from _python_folder(path, path.name)
        return
    if kind == "arxiv" or (kind == "auto" and _is_paper_folder(path)):
        paper_id, version, arxiv = _paper_id(path.name, path.name)
        yield DocumentTask("folder", str(path), str(path), paper_id, version, arxiv=arxiv)
        return
    # A folder of sources: archives and per-paper folders are documents; loose LaTeX is a tree of main files.
    tree_dirs: list[Path] = []
    for entry in sorted(path.iterdir()):
        if entry.is_dir():
            if _is_paper_folder(entry):
                paper_id, version, arxiv = _paper_id(entry.name, entry.name)
                yield DocumentTask("folder", str(entry), str(entry), paper_id, version, arxiv=arxiv)
            else:
                tree_dirs.append(entry)
        elif entry.name.endswith(_ARCHIVE_SUFFIXES) or entry.name.endswith(".jsonl") or entry.name.endswith(".whl"):
            yield from _file(entry, kind)
    yield from _tree(path, max_tree_files, top_level_only=True)
    for sub in tree_dirs:
        yield from _tree_relative(path, sub, max_tree_files)


def _is_paper_folder(path: Path) -> bool:
    if (path / "00README.XXX").exists() or (path / "00README.json").exists():
        return True
    return arxiv_id_from_filename(path.name) is not None


def _tree(root: Path, max_files: int, top_level_only: bool = False) -> Iterator[DocumentTask]:
    yield from _tree_relative(root, root, max_files, top_level_only)


def _tree_relative(root: Path, start: Path, max_files: int, top_level_only: bool = False) -> Iterator[DocumentTask]:
    """Main files of a LaTeX tree (the documents of its include graph: `eqsearch.ingest.toplevel.IncludeGraph`),
    then the HTML pages of the tree that may hold display math."""
    facts: dict[str, TexFacts] = {}
    pages: list[str] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(start):
        dirnames.sort()
        if top_level_only:
            dirnames[:] = []
        for filename in sorted(filenames):
            seen += 1
            if seen > max_files:
                break
            if filename.lower().endswith(HTML_SUFFIXES):
                page = _html_page(root, Path(dirpath, filename))
                if page is not None:
                    pages.append(page)
                continue
            if not is_tex_name(filename):
                continue
            full = Path(dirpath, filename)
            rel = full.relative_to(root).as_posix()
            facts[rel] = _tree_facts(full, rel)
    label = root.name
    stems: set[str] = set()
    # Sweave vignettes: X.Rnw first, so that the X.tex woven from it (shipped beside it) is not a second X
    for rel in sorted(IncludeGraph(facts).documents(), key=lambda r: (not r.lower().endswith(".rnw"), r)):
        stem = rel.rsplit(".", 1)[0]
        if stem in stems:
            continue  # a second main file with the same id (X.tex and X.latex)
        stems.add(stem)
        yield DocumentTask("tree", str(root), f"{root}/{rel}", f"{label}/{stem}", member=rel)
    for rel in pages:
        yield DocumentTask("html", str(root), f"{root}/{rel}", page_document_id(label, rel), member=rel)


def _tree_facts(full: Path, rel: str) -> TexFacts:
    """The include-graph facts of one file of a tree; a file that names no document command nor input is read no
    further than its bytes (most files of a documentation tree)."""
    empty = TexFacts(rel, False, False, None, (), 0, 0)
    try:
        if full.stat().st_size > 16 * 1024 * 1024:
            return empty
        data = full.read_bytes()
    except OSError:
        return empty
    if not _DOCUMENT_OR_INPUT.search(data):
        return empty
    text, _ = decode_text(data)
    if text is None:
        return empty
    if rel.lower().endswith(".rnw"):
        text = strip_sweave(text)
    return tex_facts(rel, strip_comments(text))


def _html_page(root: Path, full: Path) -> str | None:
    """The root-relative path of an HTML page that may hold display math, else None (not worth a worker)."""
    rel = full.relative_to(root).as_posix()
    if any(part.startswith("_") for part in rel.split("/")[:-1]) or full.name.endswith("_source.html"):
        return None  # Sphinx's _sources/_modules/_static copies and Doxygen's source listings: code, not prose
    try:
        if full.is_symlink() or full.stat().st_size > 16 * 1024 * 1024:
            return None
        data = full.read_bytes()
    except OSError:
        return None
    return rel if DISPLAY_MARKERS.search(data) else None


def load_paper(task: DocumentTask, config: ExtractConfig, deadline: float | None = None) -> Paper:
    """Read and extract one document (runs inside a worker).

    Raises:
        IngestError: the document cannot be read or extracted; its ``reason`` goes into the statistics.
    """
    started = time.perf_counter()
    if task.kind == "paper":
        with open(task.path, "rb") as handle:
            handle.seek(task.offset)
            line = handle.read(task.size)
        try:
            paper = Paper.from_json(json.loads(line))
        except (ValueError, KeyError, TypeError) as error:
            raise IngestError(f"{task.source}: not a paper record ({error})", reason="bad_paper_json") from None
        paper.source = task.source  # where it was read now: what resumes match on
        return paper
    if task.kind == "python":
        if task.member is not None:
            with zipfile.ZipFile(task.path) as wheel:
                data = wheel.read(task.member)
        else:
            data = Path(task.path).read_bytes()
        text, _ = decode_text(data)
        if text is None:
            raise IngestError(f"{task.source} is binary", reason="binary_file")
        return extract_docstring_paper(text, module=task.paper_id[3:], origin=task.source, config=config)
    if task.kind == "html":
        paper = _load_html(task, config)
        paper.timings["read_extract"] = time.perf_counter() - started
        return paper
    if task.kind == "empty":
        raise IngestError(
            f"{task.source}: no document found (no LaTeX file with \\begin{{document}} nor any other file that "
            "eqsearch reads: archive, wheel, papers JSONL, HTML page with display math)",
            reason="no_document",
        )
    main_file = None
    warnings = []
    if task.kind in ("archive", "bulk"):
        if task.member is not None and task.member.endswith(".pdf"):
            raise IngestError(f"{task.source}: arXiv has only a PDF for this paper, no LaTeX", reason="pdf_only")
        size = task.size if task.kind == "bulk" else os.path.getsize(task.path)
        if size > config.max_archive_bytes:
            raise ArchiveLimitError(f"{task.source}: {size:,} bytes, over the limit {config.max_archive_bytes:,}")
        with open(task.path, "rb") as handle:
            handle.seek(task.offset)
            data = handle.read(size)
        unpacked = unpack_source(data, task.member or Path(task.path).name, config)
        members = unpacked.files
        if task.folder is not None:  # one of several independent papers in the archive
            members = {name[len(task.folder) :]: data for name, data in members.items() if name.startswith(task.folder)}
        files: FolderFiles | MemoryFiles = MemoryFiles(members)
        warnings = unpacked.issues
        if not members:
            raise IngestError(f"{task.source}: the archive holds no usable file", reason="empty_source")
    elif task.kind == "folder":
        files = FolderFiles(Path(task.path), config.max_file_bytes)
    elif task.kind == "tex":
        files = FolderFiles(Path(task.path).parent, config.max_file_bytes, names=[Path(task.path).name])
        main_file = Path(task.path).name
    elif task.kind == "tree":
        files = FolderFiles(Path(task.path), config.max_file_bytes, names=[task.member or ""])
        main_file = task.member
    else:
        raise IngestError(f"unknown task kind {task.kind!r}", reason="internal_error")
    paper = extract_latex_paper(
        files,
        paper_id=task.paper_id,
        source=task.source,
        kind="arxiv" if task.arxiv else "latex",
        config=config,
        deadline=deadline,
        main_file=main_file,
        version=task.version,
    )
    paper.warnings[:0] = warnings
    paper.timings["read_extract"] = time.perf_counter() - started
    return paper


# Parsed pages of other documents, per worker process: SageMath's ~580 citing pages all link into one 540 kB
# bibliography page, parsed once per worker instead of once per citing page.
_PARSED_PAGES: dict[tuple[str, str], etree._Element | None] = {}
_PARSED_PAGES_LIMIT = 32
_SCRIPTS: dict[tuple[str, str], bytes | None] = {}  # MathJax configuration scripts, shared by a manual's pages


def _load_html(task: DocumentTask, config: ExtractConfig) -> Paper:
    root = Path(task.path)
    page = task.member or ""
    data = _read_in_root(root, page, config.max_file_bytes)
    if data is None:
        raise SourceNotFoundError(f"{task.source} cannot be read (missing, or a link out of {root})")

    def read_page(rel: str) -> etree._Element | None:
        key = (str(root), rel)
        if key not in _PARSED_PAGES:
            if len(_PARSED_PAGES) >= _PARSED_PAGES_LIMIT:
                _PARSED_PAGES.clear()
            try:
                other = _read_in_root(root, rel, config.max_file_bytes)
                _PARSED_PAGES[key] = parse_html(other, rel) if other is not None else None
            except IngestError:  # a linked page that is too large or not HTML just resolves no entry
                _PARSED_PAGES[key] = None
        return _PARSED_PAGES[key]

    def read_file(rel: str) -> bytes | None:
        key = (str(root), rel)
        if key not in _SCRIPTS:
            if len(_SCRIPTS) >= _PARSED_PAGES_LIMIT:
                _SCRIPTS.clear()
            try:
                _SCRIPTS[key] = _read_in_root(root, rel, 1024 * 1024)
            except IngestError:
                _SCRIPTS[key] = None
        return _SCRIPTS[key]

    return extract_html_paper(
        data,
        paper_id=task.paper_id,
        origin=task.source,
        config=config,
        page=page,
        label=root.name,
        read_page=read_page,
        read_file=read_file,
    )


def _read_in_root(root: Path, rel: str, max_bytes: int) -> bytes | None:
    """A file under ``root`` by relative path; None when missing or (through links) outside it.

    Raises:
        DocumentTooLargeError: the file is larger than ``max_bytes``.
    """
    norm = normalize_member(rel)
    if norm is None:
        return None
    base = root.resolve()
    path = (base / norm).resolve()
    if not path.is_relative_to(base) or not path.is_file():
        return None
    size = path.stat().st_size
    if size > max_bytes:
        raise DocumentTooLargeError(f"{root / norm}: {size:,} bytes, over the limit {max_bytes:,}")
    return path.read_bytes()
