"""Stored documents as the pages show them: one equation, and a paper with its equations and citations.

Reads only (no ranking): the equation view joins its paper's title and authors (the papers index holds them), the
paper view lists its display equations by section in document order (inline
formulas, thousands in a long paper, are counted by the paper page, not listed), the papers it cites (saying which
are indexed) and the indexed papers that cite it.
"""

from __future__ import annotations

import contextlib
from typing import Any

from elasticsearch import Elasticsearch, NotFoundError
from eqsearch.engine.search.errors import call
from eqsearch.engine.search.query import SOURCE_EXCLUDES

__all__ = ["equation_view", "paper_view"]


#: What the equation view shows of its paper beside the equation's own fields.
EQUATION_PAPER_FIELDS = ("title", "authors", "source")


def equation_view(client: Elasticsearch, equations: str, papers: str, eq_id: str) -> dict[str, Any] | None:
    """The stored equation document (vectors excluded) with its paper's `EQUATION_PAPER_FIELDS` (empty when the
    paper is gone), or None when absent."""
    try:
        equation = dict(client.get(index=equations, id=eq_id, source_excludes=SOURCE_EXCLUDES)["_source"])
    except NotFoundError:
        return None
    paper: dict[str, Any] = {}
    if equation.get("paper_id"):
        with contextlib.suppress(NotFoundError):
            found = client.get(index=papers, id=equation["paper_id"], source_includes=EQUATION_PAPER_FIELDS)
            paper = dict(found["_source"])
    return {**{name: paper.get(name) for name in EQUATION_PAPER_FIELDS}, **equation}


def paper_view(client: Elasticsearch, papers: str, equations: str, paper_id: str) -> dict[str, Any] | None:
    """A paper with its equations by section and its citations.

    Returns:
        The paper document plus ``sections`` (list of ``{"index", "title", "equations": [...]}`` in document
        order, equations without vectors), ``citations_out`` (``[{"paper_id", "indexed", "title"}]``) and
        ``cited_by`` (``[{"paper_id", "title"}]`` of indexed papers that cite it); None when no paper has that id.
    """
    try:
        paper = dict(client.get(index=papers, id=paper_id)["_source"])
    except NotFoundError:
        return None
    found = call(
        client.search,
        index=equations,
        query={"bool": {"filter": [{"term": {"paper_id": paper_id}}], "must_not": [{"term": {"inline": True}}]}},
        sort=[{"number": "asc"}],
        size=10_000,
        source_excludes=SOURCE_EXCLUDES,
    )["hits"]["hits"]
    outline = {s.get("index"): s for s in paper.get("sections") or []}
    sections: dict[int, dict[str, Any]] = {}
    for hit in found:
        eq = hit["_source"]
        index = int(eq.get("section") or 0)
        title = (outline.get(index) or {}).get("title") or eq.get("section_title") or ""
        sections.setdefault(index, {"index": index, "title": title, "equations": []})["equations"].append(eq)
    paper["sections"] = [sections[i] for i in sorted(sections)]
    cited = list(dict.fromkeys(paper.get("citations_out") or []))
    indexed: dict[str, str] = {}
    if cited:
        docs = call(client.mget, index=papers, ids=cited, source_includes=["title"])["docs"]
        indexed = {d["_id"]: d["_source"].get("title") or "" for d in docs if d.get("found")}
    paper["citations_out"] = [{"paper_id": c, "indexed": c in indexed, "title": indexed.get(c)} for c in cited]
    citing = call(
        client.search,
        index=papers,
        query={"term": {"citations_out": paper_id}},
        size=1000,
        source_includes=["paper_id", "title"],
    )["hits"]["hits"]
    paper["cited_by"] = [{"paper_id": h["_id"], "title": h["_source"].get("title") or ""} for h in citing]
    return paper
