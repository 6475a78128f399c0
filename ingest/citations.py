"""arXiv identifiers in bibliographies: ``\\bibitem`` text, ``.bbl`` files, ``.bib`` entries, URLs.

Identifiers are normalised to the form arXiv and its metadata snapshot use: ``YYMM.NNNNN`` for new-style ids and
``archive/YYMMNNN`` for old-style ones (the subject class of ``math.AG/0101001`` is not part of the id, so it
becomes ``math/0101001``); versions (``v2``) are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

OLD_ARCHIVES = [
    "acc-phys",
    "adap-org",
    "alg-geom",
    "ao-sci",
    "astro-ph",
    "atom-ph",
    "bayes-an",
    "chao-dyn",
    "chem-ph",
    "cmp-lg",
    "comp-gas",
    "cond-mat",
    "cs",
    "dg-ga",
    "funct-an",
    "gr-qc",
    "hep-ex",
    "hep-lat",
    "hep-ph",
    "hep-th",
    "math",
    "math-ph",
    "mtrl-th",
    "nlin",
    "nucl-ex",
    "nucl-th",
    "patt-sol",
    "physics",
    "plasm-ph",
    "q-alg",
    "q-bio",
    "quant-ph",
    "solv-int",
    "supr-con",
]

_NEW_ID = re.compile(r"(?<![\d])(?<!\d\.)(\d{2})(\d{2})\.(\d{4,5})(?:v\d+)?(?![\d])")
_OLD_ID = re.compile(
    r"(?<![A-Za-z\-])("
    + "|".join(re.escape(a) for a in sorted(OLD_ARCHIVES, key=len, reverse=True))
    + r")(?:\.[A-Za-z\-]{2,10})?/\s?(\d{2})(\d{2})(\d{3})(?:v\d+)?(?!\d)",
    re.IGNORECASE,
)
# Old-style ids as file names in arXiv's bulk tars: hep-th9901001.gz
_OLD_FILE_ID = re.compile(
    r"^(" + "|".join(re.escape(a) for a in sorted(OLD_ARCHIVES, key=len, reverse=True)) + r")(\d{7})(?:v(\d+))?$"
)
_NEW_FILE_ID = re.compile(r"^(\d{4}\.\d{4,5})(?:v(\d+))?$")


def _valid_new(yy: str, mm: str, number: str) -> bool:
    month = int(mm)
    if not 1 <= month <= 12:
        return False
    yymm = int(yy + mm)
    # 4-digit numbers from April 2007 to December 2014, 5-digit numbers from January 2015 on
    return 704 <= yymm <= 1412 if len(number) == 4 else yymm >= 1501


def _valid_old(yy: str, mm: str) -> bool:
    return 1 <= int(mm) <= 12 and (int(yy) >= 91 or int(yy) <= 7)


def find_arxiv_ids(text: str) -> list[str]:
    """Every arXiv id in ``text``, normalised, versions dropped, in order of first appearance, no duplicates."""
    found: list[tuple[int, str]] = []
    for m in _NEW_ID.finditer(text):
        if _valid_new(m.group(1), m.group(2), m.group(3)):
            found.append((m.start(), f"{m.group(1)}{m.group(2)}.{m.group(3)}"))
    for m in _OLD_ID.finditer(text):
        if _valid_old(m.group(2), m.group(3)):
            found.append((m.start(), f"{m.group(1).lower()}/{m.group(2)}{m.group(3)}{m.group(4)}"))
    found.sort()
    return _unique(i for _, i in found)


def normalize_arxiv_id(text: str) -> str | None:
    """The normalised id if ``text`` is (or contains exactly at its start) an arXiv id, else None."""
    ids = find_arxiv_ids(text.strip())
    return ids[0] if ids else None


def arxiv_id_from_filename(name: str) -> tuple[str, int | None] | None:
    """``1901.00001v2.tar.gz`` -> ``("1901.00001", 2)``; ``hep-th9901001.gz`` -> ``("hep-th/9901001", None)``."""
    stem = name.rsplit("/", 1)[-1]
    for ext in (".tar.gz", ".tgz", ".tar", ".gz", ".tex", ".zip", ".pdf"):
        if stem.endswith(ext):
            stem = stem[: -len(ext)]
            break
    m = _NEW_FILE_ID.match(stem)
    if m and _valid_new(stem[:2], stem[2:4], stem.split(".")[1].split("v")[0]):
        return m.group(1), None if m.group(2) is None else int(m.group(2))
    m = _OLD_FILE_ID.match(stem)
    if m:
        return f"{m.group(1)}/{m.group(2)}", None if m.group(3) is None else int(m.group(3))
    return None


def _unique(ids: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for i in ids:
        seen.setdefault(i, None)
    return list(seen)


_THEBIBLIOGRAPHY = re.compile(r"\\begin\s*\{thebibliography\}(.*?)(?:\\end\s*\{thebibliography\}|\Z)", re.DOTALL)
_BIBITEM = re.compile(r"\\bibitem\b|\\entry\s*\{")
_CITE_KEYS = re.compile(r"\\(?:no)?cite[a-zA-Z]*\*?\s*(?:\[[^\]]*\]\s*)*\{([^{}]*)\}")
_BIB_ENTRY = re.compile(r"@\s*([A-Za-z]+)\s*[{(]\s*([^,\s]+)\s*,")
_BIB_FILES = re.compile(
    r"\\(?:bibliography|addbibresource|addglobalbib|nobibliography)\s*(?:\[[^\]]*\])?\s*\{([^{}]*)\}"
)


def split_bibitems(text: str) -> list[str]:
    """The entries of ``thebibliography`` environments (``\\bibitem``) or of a biblatex ``.bbl`` (``\\entry``)."""
    entries: list[str] = []
    for env in _THEBIBLIOGRAPHY.finditer(text):
        entries.extend(_split_on(env.group(1)))
    if not entries and "\\entry" in text:  # biblatex .bbl
        entries = _split_on(text)
    return entries


def _split_on(text: str) -> list[str]:
    starts = [m.start() for m in _BIBITEM.finditer(text)]
    if not starts:
        return []
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]


def cited_keys(text: str) -> set[str]:
    """Keys of every ``\\cite``-like command (``*`` for ``\\nocite{*}``)."""
    return {k.strip() for m in _CITE_KEYS.finditer(text) for k in m.group(1).split(",") if k.strip()}


def bib_files(text: str) -> list[str]:
    """The ``.bib`` files a document names (``\\bibliography{a,b}``, ``\\addbibresource{c.bib}``)."""
    names: list[str] = []
    for m in _BIB_FILES.finditer(text):
        for name in m.group(1).split(","):
            name = name.strip()
            if name:
                names.append(name if name.endswith(".bib") else name + ".bib")
    return names


def split_bib_entries(text: str) -> dict[str, str]:
    """A ``.bib`` file's entries, key -> entry text (``@string``/``@comment``/``@preamble`` skipped)."""
    entries: dict[str, str] = {}
    matches = list(_BIB_ENTRY.finditer(text))
    if not matches:
        return entries
    for m, nxt in zip(matches, [*matches[1:], None], strict=True):
        if m.group(1).lower() in ("string", "comment", "preamble"):
            continue
        entries.setdefault(m.group(2), text[m.start() : nxt.start() if nxt else len(text)])
    return entries


def citations_from_bib(bib_texts: Iterable[str], keys: set[str]) -> tuple[list[str], int]:
    """arXiv ids of the cited entries of some ``.bib`` files (all of them with ``\\nocite{*}``).

    Returns:
        ``(ids, number_of_cited_entries)``.
    """
    everything = "*" in keys
    ids: list[str] = []
    count = 0
    for text in bib_texts:
        for key, entry in split_bib_entries(text).items():
            if everything or key in keys:
                count += 1
                ids.extend(find_arxiv_ids(entry))
    return _unique(ids), count


def citations_from_entries(entries: Iterable[str]) -> list[str]:
    """arXiv ids of bibliography entries, deduplicated in order."""
    return _unique(i for entry in entries for i in find_arxiv_ids(entry))
