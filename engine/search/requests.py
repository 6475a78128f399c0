"""The search's requests to Elasticsearch: functions of a client, an index and a body (`engine.search.query`).

`ranked_lists` sends every ranked list of a query as one ``_msearch`` that returns ranked ids only (the papers list
to the papers index, the others to the equations index), `name_placeholders` names each paper found by its words
alone by one of its equations (`representatives`), `fetch_page_with_papers` brings the page's equations with
highlights (`fetch_page`) and their papers' fields (`fetch_papers`), `fetch_sources`
a few fields of given equations (what the pattern filter and the MaxSim rerank read of their candidates). Only what
the client reads comes back (``filter_path``): less for the node to serialise and for the client to parse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from elasticsearch import Elasticsearch
from eqsearch.engine.search.errors import call, list_failed
from eqsearch.engine.search.fusion import Fused, placeholder_paper
from eqsearch.engine.search.plugin import MAXSIM_HIT_FIELD
from eqsearch.engine.search.query import page_body, papers_page_body, representatives_body

__all__ = [
    "RankedLists",
    "fetch_page",
    "fetch_page_and_papers",
    "fetch_page_with_papers",
    "fetch_papers",
    "fetch_sources",
    "name_placeholders",
    "ranked_lists",
    "representatives",
]

_RANKING_RESPONSE_FIELDS = [
    "responses.status",  # keeps every response in the array: a filtered-out empty one would shift the others
    "responses.hits.hits._score",
    "responses.hits.hits.fields",
    "responses.hits.total.value",
    "responses._shards.failed",
    "responses._shards.total",
    "responses.error",
]
_PAGE_RESPONSE_FIELDS = ["hits.hits._id", "hits.hits._source", "hits.hits.highlight"]


@dataclass
class RankedLists:
    """What the ranking searches found.

    Args:
        lists: list name (``structure``, ``embedding``, ``text``, ``context``) -> ranked ``(eq_id, score)``.
        papers: the papers list: ranked ``(paper_id, score)`` (the words in the papers' titles and abstracts; the
            service then ranks them by the words anywhere in them, `engine.search.fusion.paper_evidence`).
        representatives: the candidates that stand for those papers (an equation, or a placeholder).
        paper_of: eq_id -> paper_id of every candidate whose list fetched it (a formula-only search that does not
            group by paper fetches none for its formula lists: `engine.search.query.needs_papers`).
        text_total: how many equations the words matched (the text list's hit count, counted up to
            `engine.search.query.TEXT_COUNT_LIMIT`; 0 without keywords).
        missing_shards: how many shard searches failed (a cluster that lost a node answers from the shards it
            still has).
        maxsim: eq_id -> MaxSim score, of the hits that brought one (the plugin's search extension,
            `engine.search.plugin.maxsim_ext`, sent with the formula lists; empty otherwise).
        maxsim_scored: the eq_ids the node scored for MaxSim (with or without node vectors): each formula list's top
            hits of the plan's list window, and any hit that brought a score (the window never cuts a tie).
        warnings: what the user reads about the search so far (the plan's, a partial answer, a pattern no candidate
            matched).
    """

    lists: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    papers: list[tuple[str, float]] = field(default_factory=list)
    representatives: list[str] = field(default_factory=list)
    paper_of: dict[str, str] = field(default_factory=dict)
    text_total: int = 0
    missing_shards: int = 0
    maxsim: dict[str, float] = field(default_factory=dict)
    maxsim_scored: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)


def ranked_lists(
    client: Elasticsearch, index: str, searches: Sequence[tuple[str, dict[str, Any]]], papers_index: str = ""
) -> RankedLists:
    """Runs the ranking searches (``(list name, body)``, bodies made `ranking_only`) as one ``_msearch``: the
    ``papers`` list in ``papers_index``, the others in ``index``.

    Raises:
        SearchError: a search failed (with its shards' reasons), or Elasticsearch refused or did not answer.
    """
    lines: list[dict[str, Any]] = []
    for name, body in searches:
        # a deployment without its papers index (one half-made by hand) still ranks by its equations
        header = {"index": papers_index, "ignore_unavailable": True} if name == "papers" else {"index": index}
        lines.extend([header, body])
    responses = call(client.msearch, searches=lines, filter_path=_RANKING_RESPONSE_FIELDS)
    found = RankedLists()
    for (name, _), response in zip(searches, responses["responses"], strict=True):
        if "error" in response:
            raise list_failed(name, response["error"])
        found.missing_shards += int((response.get("_shards") or {}).get("failed") or 0)
        hits = response.get("hits") or {}
        if name == "papers":
            found.papers = [
                (hit["fields"]["paper_id"][0], float(hit["_score"] or 0.0)) for hit in hits.get("hits") or ()
            ]
            continue
        ranking = []
        for hit in hits.get("hits") or ():
            fields = hit["fields"]
            eq_id = fields["eq_id"][0]
            ranking.append((eq_id, float(hit["_score"] or 0.0)))
            if "paper_id" in fields:
                found.paper_of[eq_id] = fields["paper_id"][0]
            if MAXSIM_HIT_FIELD in fields:
                found.maxsim[eq_id] = float(fields[MAXSIM_HIT_FIELD][0])
        found.lists[name] = ranking
        if name == "text":
            found.text_total = int((hits.get("total") or {}).get("value", len(ranking)))
    return found


def fetch_page(client: Elasticsearch, index: str, eq_ids: Sequence[str], keywords: str | None) -> dict[str, Any]:
    """Sources (vectors excluded) and, with keywords, highlights of the page's equations, in one request; by
    ``eq_id`` (an equation deleted since the ranking is simply absent)."""
    if not eq_ids:
        return {}
    response = call(client.search, index=index, body=page_body(eq_ids, keywords), filter_path=_PAGE_RESPONSE_FIELDS)
    hits = (response.get("hits") or {}).get("hits") or []
    return {hit["_source"]["eq_id"]: hit for hit in hits}


def representatives(
    client: Elasticsearch, index: str, paper_ids: Sequence[str], keywords: str | None, filters: list[dict[str, Any]]
) -> dict[str, str]:
    """paper_id -> one of its equations that ``filters`` keep (`engine.search.query.representatives_body`), in one
    request; a paper with none is absent."""
    if not paper_ids:
        return {}
    body = representatives_body(paper_ids, keywords, filters)
    response = call(client.search, index=index, body=body, filter_path=["hits.hits.fields"])
    out = {}
    for hit in (response.get("hits") or {}).get("hits") or ():
        fields = hit["fields"]
        out[fields["paper_id"][0]] = fields["eq_id"][0]
    return out


def fetch_papers(
    client: Elasticsearch, index: str, paper_ids: Sequence[str], keywords: str | None
) -> dict[str, dict[str, Any]]:
    """The page's papers (`engine.search.query.PAPER_PAGE_FIELDS`) and, with keywords, the highlights of their
    titles and abstracts, in one request; by paper id (a paper deleted since is absent)."""
    if not paper_ids:
        return {}
    response = call(
        client.search,
        index=index,
        body=papers_page_body(sorted(set(paper_ids)), keywords),
        filter_path=_PAGE_RESPONSE_FIELDS,
        ignore_unavailable=True,  # no papers index: the hits show their paper ids
    )
    return {hit["_id"]: hit for hit in (response.get("hits") or {}).get("hits") or ()}


def fetch_page_and_papers(
    client: Elasticsearch,
    index: str,
    papers_index: str,
    eq_ids: Sequence[str],
    paper_ids: Sequence[str],
    keywords: str | None,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """`fetch_page` and `fetch_papers` in one ``_msearch``, where the page's papers are known before its equations
    are fetched (every candidate's paper was read with the ranking): one round trip instead of two."""
    if not eq_ids:
        return {}, {}
    lines = [
        {"index": index},
        page_body(eq_ids, keywords),
        {"index": papers_index, "ignore_unavailable": True},
        papers_page_body(sorted(set(paper_ids)), keywords),
    ]
    responses = call(
        client.msearch,
        searches=lines,
        # the status keeps each response in the array, an empty one too
        filter_path=["responses.status", "responses.error", *(f"responses.{f}" for f in _PAGE_RESPONSE_FIELDS)],
    )["responses"]
    for name, response in zip(("page", "papers"), responses, strict=True):
        if "error" in response:
            raise list_failed(name, response["error"])
    documents = {hit["_source"]["eq_id"]: hit for hit in (responses[0].get("hits") or {}).get("hits") or ()}
    papers = {hit["_id"]: hit for hit in (responses[1].get("hits") or {}).get("hits") or ()}
    return documents, papers


def fetch_page_with_papers(
    client: Elasticsearch,
    index: str,
    papers_index: str,
    eq_ids: Sequence[str],
    keywords: str | None,
    paper_of: Mapping[str, str],
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The page's equations (`fetch_page`) and their papers (`fetch_papers`): in one request where ``paper_of``
    knows every equation's paper (the ranking read them), else the papers after the equations."""
    if all(eq_id in paper_of for eq_id in eq_ids):
        paper_ids = [paper_of[eq_id] for eq_id in eq_ids]
        return fetch_page_and_papers(client, index, papers_index, eq_ids, paper_ids, keywords)
    documents = fetch_page(client, index, eq_ids, keywords)
    papers = fetch_papers(
        client, papers_index, [str(doc["_source"].get("paper_id") or "") for doc in documents.values()], keywords
    )
    return documents, papers


def name_placeholders(
    client: Elasticsearch,
    index: str,
    page_items: Sequence[Fused],
    keywords: str | None,
    filters: list[dict[str, Any]],
    paper_of: dict[str, str],
) -> list[Fused]:
    """The page's items, each placeholder (`engine.search.fusion.paper_placeholder`) replaced by an equation of its
    paper that ``filters`` keep (`representatives`; a paper without one is left out, the equation's paper recorded
    in ``paper_of``)."""
    wanted = [paper for item in page_items if (paper := placeholder_paper(item.doc_id)) is not None]
    if not wanted:
        return list(page_items)
    named = representatives(client, index, wanted, keywords, filters)
    out = []
    for item in page_items:
        paper = placeholder_paper(item.doc_id)
        if paper is None:
            out.append(item)
        elif paper in named:
            paper_of[named[paper]] = paper
            out.append(replace(item, doc_id=named[paper]))
    return out


def fetch_sources(
    client: Elasticsearch, index: str, query: dict[str, Any], size: int, fields: Sequence[str]
) -> list[dict[str, Any]]:
    """The ``fields`` of the sources of up to ``size`` equations matching ``query``, in one request."""
    response = call(
        client.search,
        index=index,
        body={"query": query, "size": size, "_source": {"includes": list(fields)}, "track_total_hits": False},
        filter_path=["hits.hits._source"],
    )
    return [hit["_source"] for hit in (response.get("hits") or {}).get("hits") or ()]
