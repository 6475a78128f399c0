"""arXiv metadata in the JSON-lines format of the public arXiv metadata snapshot, joined to papers by id."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from eqsearch.ingest.citations import normalize_arxiv_id
from eqsearch.ingest.errors import SourceNotFoundError
from eqsearch.ingest.records import Paper

_SPACES = re.compile(r"\s+")


def _clean(value: Any) -> Any:
    return _SPACES.sub(" ", value).strip() if isinstance(value, str) else value


def parse_metadata_record(raw: dict[str, Any]) -> dict[str, Any]:
    """One snapshot line -> the metadata kept on a paper (id normalised, whitespace collapsed, lists split).

    Fields: ``id, title, abstract, authors, authors_parsed, categories (list), versions [{version, created}],
    update_date, doi, journal_ref, published`` (``created`` of v1).
    """
    versions = [{"version": v.get("version"), "created": v.get("created")} for v in raw.get("versions") or []]
    categories = raw.get("categories") or ""
    return {
        "id": normalize_arxiv_id(str(raw["id"])) or str(raw["id"]),
        "title": _clean(raw.get("title")),
        "abstract": _clean(raw.get("abstract")),
        "authors": _clean(raw.get("authors")),
        "authors_parsed": raw.get("authors_parsed"),
        "categories": categories.split() if isinstance(categories, str) else list(categories),
        "versions": versions,
        "update_date": raw.get("update_date"),
        "doi": raw.get("doi"),
        "journal_ref": _clean(raw.get("journal-ref")),
        "published": versions[0]["created"] if versions else None,
    }


def load_metadata(path: Path, wanted: Iterable[str] | None = None) -> tuple[dict[str, dict[str, Any]], int]:
    """Read a metadata snapshot, keeping only the ids in ``wanted`` (all when None).

    Returns:
        ``(id -> metadata, number of malformed lines skipped)``.

    Raises:
        SourceNotFoundError: the file does not exist.
    """
    if not path.is_file():
        raise SourceNotFoundError(f"metadata file {path} does not exist")
    keep = None if wanted is None else set(wanted)
    out: dict[str, dict[str, Any]] = {}
    bad = 0
    with path.open("rb") as handle:
        for line in handle:
            if not line.strip():
                continue
            if keep is not None:
                # cheap pre-filter before parsing: the id sits at the start of every snapshot line
                head = line[:80].decode("utf-8", "replace")
                m = re.search(r'"id"\s*:\s*"([^"]+)"', head)
                if m and (normalize_arxiv_id(m.group(1)) or m.group(1)) not in keep:
                    continue
            try:
                record = parse_metadata_record(json.loads(line))
            except (ValueError, KeyError, TypeError, AttributeError):
                bad += 1
                continue
            if keep is None or record["id"] in keep:
                out[record["id"]] = record
    return out, bad


def apply_metadata(paper: Paper, metadata: dict[str, Any]) -> None:
    """Attach snapshot metadata; its title, abstract and authors replace what the source gave."""
    paper.metadata = metadata
    if metadata.get("title"):
        paper.title = metadata["title"]
    if metadata.get("abstract"):
        paper.abstract = metadata["abstract"]
    if metadata.get("authors_parsed"):
        paper.authors = [" ".join(p for p in (a[1], a[0]) if p).strip() for a in metadata["authors_parsed"] if a]
    elif metadata.get("authors"):
        paper.authors = [a.strip() for a in re.split(r",| and ", metadata["authors"]) if a.strip()]
