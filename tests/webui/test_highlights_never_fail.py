"""No search answers a 500 for what stored text holds: hostile and ordinary contexts, and 1,000 generated ones.

Contexts that quote math (``$a<b$``), markup, entities, unbalanced highlight tags and odd characters go through the
real ingest job (KaTeX, the real node), then through the API and the search page with keywords that match every one
of them, so each context comes back as a highlight and passes the sanitiser. Once, such a context raised
"Invalid tag name" in lxml and turned the search into HTTP 500.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from pathlib import Path

import pytest

from .conftest import drop_prefix, make_app

pytestmark = [pytest.mark.es, pytest.mark.slow]

#: Contexts that broke or could break a highlighter's output, each with the word the searches look for.
HOSTILE_CONTEXTS = [
    "univalent universes where $a<b$ and $c>d$ hold",
    "univalent $x<y_1$ & level $p<q>r$ funext",
    "univalent <b$ </$> < <1> <!-- comment --> ]]> <![CDATA[x]]>",
    "univalent &amp; &#x3c; &lt;script&gt; &nbsp; &",
    "univalent </em> stray <em>open <em>twice</em>",
    "univalent <script>window.__xss='context'</script> <img src=x onerror=alert(1)>",
    'univalent <a href="javascript:alert(1)">link</a> <svg onload=alert(2)>',
    "univalent \u202eoverride\u202c \u200bzero width \ufeff BOM \U0001d465 math italic x",
    "univalent " + "w" * 400 + " a very long word",
    "univalent \\begin{equation} a<b \\end{equation} and \\[ x<y \\]",
]
_PIECES = ["<", ">", "&", "$", "</em>", "<em>", "<b", "/>", '"', "'", "\\", "{", "}", "&lt;", "<mark>", "é", "∑", "\t"]
_WORDS = ["univalent", "level", "polymorphism", "funext", "gradient", "kernel", "x", "a", "b", "the", "of"]


def generated_contexts(count: int, seed: int = 20261127) -> list[str]:
    """``count`` contexts mixing words with markup-like pieces, each holding the searched word."""
    rng = random.Random(seed)
    contexts = []
    for _ in range(count):
        parts = ["univalent"]
        for _ in range(rng.randint(3, 25)):
            parts.append(rng.choice(_PIECES) if rng.random() < 0.4 else rng.choice(_WORDS))
        rng.shuffle(parts)
        contexts.append(" ".join(parts) if rng.random() < 0.5 else "".join(parts))
    return contexts


def write_papers(path: Path, contexts: list[str], per_paper: int = 25) -> int:
    """Papers whose display equations carry ``contexts`` (``per_paper`` each); returns how many papers."""
    papers = 0
    with path.open("w", encoding="utf-8") as out:
        for start in range(0, len(contexts), per_paper):
            chunk = contexts[start : start + per_paper]
            equations = [
                {"latex": f"x_{{{i}}} + y^{{{start % 7 + 2}}}", "context_before": text, "context_after": "funext"}
                for i, text in enumerate(chunk)
            ]
            record = {
                "id": f"9999.{papers:05d}",
                "title": f"univalent paper {papers} <b>bold</b> $a<b$",
                "abstract": "level polymorphism & <i>funext</i>",
                "authors": ["A <b>Author</b>"],
                "sections": [{"title": "univalent <section> & $x<y$", "equations": equations}],
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            papers += 1
    return papers


@pytest.fixture(scope="module")
def hostile_app(es_config, es_client, tmp_path_factory):
    """An app over papers whose 1,010 equation contexts are hostile or generated."""
    prefix = f"eqsearch-test-hl-{uuid.uuid4().hex[:8]}"
    path = tmp_path_factory.mktemp("hostile") / "papers.jsonl"
    contexts = HOSTILE_CONTEXTS + generated_contexts(1000)
    papers = write_papers(path, contexts)
    app = make_app(es_config, prefix)
    services = app.extensions["eqsearch.services"]
    try:
        job = services.start_job(str(path), wait=True)
        assert job["state"] == "finished", job
        assert job["counts"]["equations"] == len(contexts), job
        assert es_client.count(index=f"{prefix}-papers")["count"] == papers
        yield app
    finally:
        services.close()
        drop_prefix(es_client, prefix)


_MARKUP = re.compile(r"<[^>]*>")


def assert_only_marks(fragment: str) -> None:
    assert set(_MARKUP.findall(fragment)) <= {"<mark>", "</mark>"}, fragment


@pytest.mark.parametrize(
    "query",
    [
        {"q": "univalent"},
        {"q": "univalent universes funext level polymorphism"},
        {"q": "univalent", "latex": "x_{1} + y^2"},
        {"q": "univalent funext", "highlight": "false"},
        {"q": "univalent", "inline": "exclude", "fusion": "rrf"},
    ],
)
def test_every_context_comes_back_highlighted_through_the_api_without_an_error(hostile_app, query):
    client = hostile_app.test_client()
    seen: set[str] = set()
    for page in range(1, 11):  # the depth a search ranks: 100 results, 10 pages of 10... or 1 page of 100
        response = client.get("/api/search", query_string={**query, "size": 100, "page": page})
        assert response.status_code == 200, response.get_data(as_text=True)[:500]
        body = response.get_json()
        for hit in body["hits"]:
            seen.add(hit["eq_id"])
            for fragments in hit["highlights"].values():
                for fragment in fragments:
                    assert_only_marks(fragment)
        if len(body["hits"]) < 100:
            break
    assert len(seen) >= 100


def test_every_generated_context_passes_the_api_by_paper(hostile_app):
    """Each paper's 25 contexts at once (a paper filter), so that all 1,010 are highlighted and sanitised."""
    client = hostile_app.test_client()
    highlighted = 0
    for number in range(41):
        response = client.get(
            "/api/search", query_string={"q": "univalent funext", "paper": f"9999.{number:05d}", "size": 100}
        )
        assert response.status_code == 200, response.get_data(as_text=True)[:500]
        for hit in response.get_json()["hits"]:
            for fragment in hit["highlights"].get("context", []):
                assert_only_marks(fragment)
                highlighted += 1
    assert highlighted >= 1000


def test_the_search_page_shows_hostile_contexts_as_text(hostile_app):
    client = hostile_app.test_client()
    for query in ({"q": "univalent universes funext level polymorphism"}, {"q": "univalent", "latex": "x_{1}"}):
        for page in (1, 2, 3):
            response = client.get("/", query_string={**query, "page": page})
            assert response.status_code == 200, response.get_data(as_text=True)[:500]
            html = response.get_data(as_text=True)
            for bad in ("<script>window.__xss", "<img src=x", "<svg onload", 'href="javascript:'):
                assert bad not in html, bad
