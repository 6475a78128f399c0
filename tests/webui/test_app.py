"""The app factory (`webui/app.py`) end to end: health, a dead backend, searches over a real indexed corpus through the
API and the pages (what matched each hit and which channels found it, LaTeX errors, filters, inline formulas),
hostile content, patterns, the balance, and an app that never loads torch. (The pages themselves: test_ui.py; the
services behind them: test_services.py.)"""

from __future__ import annotations

import subprocess
import sys

import pytest
from eqsearch.webui import create_app

from .conftest import DEAD, DETERMINANT, dead_app


@pytest.mark.es
def test_healthz_reports_the_real_cluster(es_config):
    client = create_app({"ES_CONFIG": es_config, "TESTING": True}).test_client()
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.get_json()["status"] == "ok"
    assert response.get_json()["elasticsearch"].startswith("9.")


def test_healthz_says_when_elasticsearch_is_down():
    client = create_app({"ES_CONFIG": DEAD, "TESTING": True}).test_client()
    response = client.get("/healthz")
    assert response.status_code == 503
    assert "not reachable" in response.get_json()["elasticsearch"]


# -- without Elasticsearch ---------------------------------------------------------------------------------------


def test_a_dead_backend_gives_503_not_a_traceback():
    client = dead_app().test_client()
    api = client.get("/api/search?q=gradient")
    assert api.status_code == 503
    assert api.get_json() == {
        "error": {
            "code": "backend_unavailable",
            "message": "The search backend is not answering; try again in a minute.",
        }
    }
    page = client.get("/?q=gradient")
    assert page.status_code == 503
    assert b"Search is unavailable" in page.data
    assert b"Traceback" not in page.data and b"127.0.0.1:1" not in page.data


@pytest.mark.es
def test_formula_search_finds_the_sum_of_squares(client):
    response = client.get("/api/search", query_string={"latex": r"\sum_{i=1}^n x_i^2", "group": "1"})
    body = response.get_json()
    assert response.status_code == 200, body
    assert body["groups"][0]["paper_id"] == "2002.00002"
    assert body["groups"][0]["equations"][0]["matched"] == "formula"


@pytest.mark.es
def test_each_hit_says_what_matched_it(client):
    def matched(**params):
        return {h["eq_id"]: h["matched"] for h in client.get("/api/search", query_string=params).get_json()["hits"]}

    assert set(matched(q="iteration").values()) == {"text"}
    assert set(matched(latex=r"e^{i\pi} + 1 = 0").values()) == {"formula"}
    assert matched(latex=r"x_{k+1} = x_k - \eta \nabla f(x_k)", q="iteration")["2001.00001:0"] == "both"


@pytest.mark.es
def test_each_hit_says_which_channels_found_it(client):
    def channels(**params):
        hits = client.get("/api/search", query_string=params).get_json()["hits"]
        return {h["eq_id"]: tuple(h["channels"]) for h in hits}

    assert set(channels(q="iteration").values()) == {("text",)}
    found = channels(latex=r"x_{k+1} = x_k - \eta \nabla f(x_k)", q="iteration")
    assert found["2001.00001:0"] == ("structure", "embedding", "text")  # the formula itself, and its words
    assert all(set(names) <= {"structure", "embedding", "text"} for names in found.values())
    page = client.get("/", query_string={"latex": r"e^{i\pi} + 1 = 0"}).get_data(as_text=True)
    assert "structure + embedding" in page  # the page says it too


@pytest.mark.es
def test_the_same_formula_in_other_spacing_ranks_first(client):
    body = client.get("/api/search", query_string={"latex": r"e^{i \pi}+1=0"}).get_json()
    assert body["hits"][0]["eq_id"] == "2003.00003:0"


@pytest.mark.es
def test_a_latex_error_keeps_the_keyword_results(client):
    body = client.get("/api/search", query_string={"latex": r"\frac{x", "q": "Cauchy"}).get_json()
    assert body["latex_error"] and "offset" in body["latex_error"]
    assert "2002.00002" in {h["paper_id"] for h in body["hits"] if "text" in h["channels"]}
    # the structural channel still searches what the broken LaTeX says; nothing comes from the embedding
    assert all(set(h["channels"]) <= {"structure", "text"} for h in body["hits"])
    page = client.get("/", query_string={"latex": r"\frac{x", "q": "Cauchy"})
    assert b"could not be read" in page.data and b"Sums of squares" in page.data


@pytest.mark.es
def test_filters_and_the_empty_state(client):
    body = client.get("/api/search", query_string={"q": "sums inequality gradient", "cat": "math.CA", "from": "2019"})
    assert {h["paper_id"] for h in body.get_json()["hits"]} <= {"2003.00003"}
    page = client.get("/", query_string={"q": "zebra giraffe"})
    assert page.status_code == 200 and b"No results" in page.data
    filtered = client.get("/", query_string={"q": "gradient", "cat": "hep-th", "from": "1990", "to": "1991"})
    assert b'href="?q=gradient">the same search without filters' in filtered.data


@pytest.mark.es
def test_inline_formulas_are_searchable_and_the_filter_chooses_them(client):
    def hits(**params):
        response = client.get("/api/search", query_string={"latex": DETERMINANT, **params})
        assert response.status_code == 200, response.get_json()
        return response.get_json()["hits"]

    found = hits()  # include, the default: an inline-only statement of a result is found
    assert found[0]["eq_id"] == "2003.00003:i1" and found[0]["inline"] is True
    assert found[0]["context"].startswith("The determinant is multiplicative,")
    assert all(h["inline"] is False for h in found[1:])
    assert found[0]["eq_id"] not in {h["eq_id"] for h in hits(inline="exclude")}
    assert not any(h["inline"] for h in hits(inline="exclude"))
    assert [h["eq_id"] for h in hits(inline="only")] == ["2003.00003:i1"]
    assert "2003.00003:i0" not in {h["eq_id"] for h in hits(q="frequency radians")}  # a lone symbol: not indexed
    bad = client.get("/api/search", query_string={"latex": DETERMINANT, "inline": "some"})
    assert (
        bad.status_code == 400
        and "'inline' must be one of include, exclude, only" in bad.get_json()["error"]["message"]
    )
    document = dead_app().test_client().get("/api/openapi.json").get_json()
    parameters = {p["name"]: p for p in document["paths"]["/api/search"]["get"]["parameters"]}
    assert parameters["inline"]["schema"]["enum"] == ["include", "exclude", "only"]
    assert document["components"]["schemas"]["EquationHit"]["properties"]["inline"]["type"] == "boolean"


@pytest.mark.es
def test_hostile_content_is_inert_in_html_and_json(client):
    paper = client.get("/papers/2004.66666").data
    for bad in (b"<script>window", b"<img src=x", b"<svg", b"onclick=", b"javascript:", b"<maction"):
        assert bad not in paper, bad
    # In JSON, only `mathml` and `highlights` hold markup (the other fields are plain text for clients to escape).
    body = client.get("/api/search", query_string={"q": "hostile gradient", "latex": "y^2"}).get_json()
    markup = str([(h["mathml"], h["highlights"]) for h in body["hits"] if h["paper_id"] == "2004.66666"])
    assert "2004.66666" in str(body) and "&lt;img" in markup
    for bad in ("<img", "<script", "onclick", "javascript:"):
        assert bad not in markup, bad


def test_the_web_app_never_loads_torch():
    code = (
        "import sys; from eqsearch.webui import create_app; import eqsearch.commands.serve, eqsearch.ingest.jobs.job; "
        "create_app({'TESTING': True}); assert 'torch' not in sys.modules, 'torch was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.es
def test_a_query_with_variables_returns_the_matches_with_their_parts_marked(client):
    body = client.get("/api/search", query_string={"latex": r"\sum_{?i=1}^{?n} ?a_{?i}^2"}).get_json()
    hits = {hit["eq_id"]: hit for hit in body["hits"]}
    # the two sums of squares; not f(x) = sum_i (a_i^T x - b_i)^2, whose square is not of a subscripted symbol
    assert set(hits) == {"2002.00002:0", "2002.00002:1"}
    first = hits["2002.00002:0"]["formula_highlight"]
    assert first["kind"] == "pattern"
    assert {name: b["text"] for name, b in first["bindings"].items()} == {"?i": "i", "?n": "n", "?a": "x"}
    assert set(first["bindings"]["?a"]["nodes"]) < set(first["nodes"])
    assert hits["2002.00002:0"]["mathml"].count('class="eqsearch-match"') == len(first["nodes"])
    plain = client.get("/api/search", query_string={"latex": "E = mc^2"}).get_json()["hits"][0]
    assert plain["formula_highlight"]["kind"] == "shared" and plain["formula_highlight"]["bindings"] == {}
    keywords = client.get("/api/search", query_string={"q": "iteration"}).get_json()["hits"][0]
    assert keywords["formula_highlight"] is None and "eqsearch-match" not in (keywords["mathml"] or "")
    unmarked = client.get("/api/search", query_string={"latex": "E = mc^2", "highlight": "false"}).get_json()
    assert unmarked["hits"][0]["eq_id"] == plain["eq_id"] and unmarked["hits"][0]["formula_highlight"] is None
    assert "eqsearch-match" not in (unmarked["hits"][0]["mathml"] or "")
    patterned = client.get("/api/search", query_string={"latex": r"\sum_{?i=1}^{?n} ?a_{?i}^2", "highlight": "0"})
    assert {hit["eq_id"] for hit in patterned.get_json()["hits"]} == set(hits)  # the pattern still decides


@pytest.mark.es
def test_the_balance_means_formula_only_and_words_only_at_its_ends(client):
    def channels(w):
        params = {"latex": r"x_{k+1} = x_k - \eta \nabla f(x_k)", "q": "iteration gradient", "w": w}
        hits = client.get("/api/search", query_string=params).get_json()["hits"]
        assert hits
        return {name for hit in hits for name in hit["channels"]}

    assert "text" not in channels("1") and "context" not in channels("1")
    assert channels("0") <= {"text", "context"}
    assert {"structure", "text"} <= channels("0.5")


@pytest.mark.es
def test_cards_say_where_each_paper_comes_from_and_count_honestly(client):
    page = client.get("/", query_string={"q": "gradient descent"}).get_data(as_text=True)
    assert '<span class="collection" title="collection">arXiv</span>' in page
    assert 'href="https://arxiv.org/abs/2001.00001' in page
    assert "papers matched" in page and "matching equations shown" in page
    paper = client.get("/papers/2001.00001").get_data(as_text=True)
    assert 'class="original" href="https://arxiv.org/abs/2001.00001' in paper
    body = client.get("/api/search", query_string={"q": "gradient descent", "group": "1"}).get_json()
    source = body["groups"][0]["source"]
    assert source["collection"] == "arXiv" and source["url"].startswith("https://arxiv.org/abs/")
    assert all(hit["source"]["collection"] == "arXiv" for group in body["groups"] for hit in group["equations"])
