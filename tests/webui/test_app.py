from __future__ import annotations

import logging
import subprocess
import sys
import uuid
from dataclasses import replace

import pytest
from eqsearch.engine.es.config import EsConfig
from eqsearch.webui import create_app

from .conftest import ADMIN_TOKEN, CORPUS, csrf_of, login, make_app

DEAD = replace(EsConfig(), url="http://127.0.0.1:1")
BEARER = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


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


def dead_app(**extra):
    return create_app({"ES_CONFIG": DEAD, "TESTING": True, "ADMIN_TOKEN": ADMIN_TOKEN, **extra})


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


def test_the_search_page_without_a_query_needs_no_backend():
    page = dead_app().test_client().get("/")
    assert page.status_code == 200
    assert b'id="latex"' in page.data and b"Try" in page.data


def test_bad_parameters_are_400_with_the_reason():
    client = dead_app().test_client()
    response = client.get("/api/search?q=x&w=3")
    assert response.status_code == 400
    assert response.get_json()["error"]["code"] == "invalid_request"
    assert "'w'" in response.get_json()["error"]["message"]
    assert client.get("/?q=x&from=2020&to=2010").status_code == 400
    assert client.get("/api/nothing-here").get_json()["error"]["code"] == "not_found"


def test_render_gives_mathml_or_a_message():
    client = dead_app().test_client()
    good = client.get("/api/render", query_string={"latex": r"\frac{a}{b}"}).get_json()
    assert good["ok"] and "<mfrac>" in good["mathml"]
    bad = client.post("/api/render", json={"latex": r"\frac{a"}).get_json()
    assert bad["ok"] is False and "offset" in bad["message"]
    hostile = client.get("/api/render", query_string={"latex": r"\text{<script>alert(1)</script>}"}).get_json()
    assert "<script" not in hostile["mathml"] and "&lt;script&gt;" in hostile["mathml"]


def test_admin_refuses_without_credentials():
    client = dead_app().test_client()
    for method, path in [("GET", "/api/jobs"), ("POST", "/api/jobs"), ("POST", "/api/jobs/x/resume")]:
        response = client.open(path, method=method, json={"path": "/tmp"})
        assert response.status_code == 401, path
        assert response.get_json()["error"]["code"] == "unauthorized"
    wrong = client.get("/api/jobs", headers={"Authorization": "Bearer not-the-token"})
    assert wrong.status_code == 401
    page = client.get("/admin/")
    assert page.status_code == 302 and "/admin/login" in page.headers["Location"]
    assert client.post("/admin/indices", data={"kind": "papers"}).status_code == 302  # to the login, nothing done


def test_admin_is_off_without_a_token():
    client = create_app({"ES_CONFIG": DEAD, "TESTING": True}).test_client()
    assert client.get("/admin/login").status_code == 403
    assert client.get("/api/jobs", headers={"Authorization": "Bearer anything"}).status_code == 403


def test_login_needs_the_csrf_token_and_the_right_token(caplog):
    client = dead_app().test_client()
    assert client.post("/admin/login", data={"token": ADMIN_TOKEN}).status_code == 403
    client.get("/admin/login")
    with caplog.at_level(logging.DEBUG):
        refused = client.post("/admin/login", data={"token": "wrong-token-123", "csrf_token": csrf_of(client)})
    assert refused.status_code == 401 and b"not the admin token" in refused.data
    assert "wrong-token-123" not in caplog.text
    before = csrf_of(client)
    login(client)
    assert csrf_of(client) != before  # a fresh token after login


def test_no_secret_in_config_pages_or_repr(monkeypatch):
    monkeypatch.setenv("EQSEARCH_ADMIN_TOKEN", ADMIN_TOKEN)
    monkeypatch.setenv("EQSEARCH_ES_PASSWORD", "es-password-123")
    from_env = create_app()
    assert ADMIN_TOKEN not in repr(from_env.config) and "es-password-123" not in repr(from_env.config)
    assert from_env.extensions["eqsearch.config"].admin_token == ADMIN_TOKEN
    app = dead_app(SECRET_KEY="s3cret-key-for-sessions")
    assert ADMIN_TOKEN not in repr(app.config)
    config = app.extensions["eqsearch.config"]
    assert ADMIN_TOKEN not in repr(config) and "s3cret" not in repr(config)
    client = app.test_client()
    login(client)
    assert ADMIN_TOKEN.encode() not in client.get("/").data


def test_admin_login_attempts_are_limited_per_client_and_window():
    app = dead_app(LOGIN_ATTEMPTS=3, LOGIN_WINDOW_S=60)
    now = [1000.0]
    app.extensions["eqsearch.login_limiter"].clock = lambda: now[0]
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = "203.0.113.7"
    client.get("/admin/login")
    for _ in range(3):
        wrong = client.post("/admin/login", data={"token": "wrong-token-123", "csrf_token": csrf_of(client)})
        assert wrong.status_code == 401
    # the fourth try within the window is refused, even with the right token, before the token is looked at
    refused = client.post("/admin/login", data={"token": ADMIN_TOKEN, "csrf_token": csrf_of(client)})
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "60"
    assert b"Too many login attempts" in refused.data
    as_json = client.post(
        "/admin/login",
        data={"token": ADMIN_TOKEN, "csrf_token": csrf_of(client)},
        headers={"Accept": "application/json"},
    )
    assert as_json.status_code == 429 and as_json.get_json()["error"]["code"] == "too_many_attempts"
    # another client is not held back by this one's tries
    other = app.test_client()
    other.environ_base["REMOTE_ADDR"] = "198.51.100.2"
    login(other)
    # once the first tries leave the window, the client may try again
    now[0] += 61
    login(client)


def test_search_by_post_with_a_json_body_is_checked_like_the_query_string():
    client = dead_app().test_client()
    unknown = client.post("/api/search", json={"latex": "x^2", "colour": "red"})
    assert unknown.status_code == 400 and "unknown parameter 'colour'" in unknown.get_json()["error"]["message"]
    not_object = client.post("/api/search", json=["x^2"])
    assert not_object.status_code == 400 and "JSON object" in not_object.get_json()["error"]["message"]
    nested = client.post("/api/search", json={"latex": {"a": 1}})
    assert nested.status_code == 400 and "'latex' must be a string" in nested.get_json()["error"]["message"]
    too_long = client.post("/api/search", json={"latex": "x+" * 2500})
    assert too_long.status_code == 400 and "the limit is 4,000" in too_long.get_json()["error"]["message"]
    too_large = client.post("/api/search", json={"latex": "x" * 70_000})
    assert too_large.status_code == 413 and too_large.get_json()["error"]["code"] == "request_entity_too_large"


def test_the_math_font_is_served_when_installed(tmp_path):
    font = tmp_path / "math.otf"
    font.write_bytes(b"OTTO" + b"\0" * 60)
    served = dead_app(MATH_FONT=str(font)).test_client().get("/fonts/math.otf")
    assert served.status_code == 200 and served.mimetype == "font/otf" and served.data.startswith(b"OTTO")
    missing = dead_app(MATH_FONT=str(tmp_path / "none.otf")).test_client().get("/fonts/math.otf")
    assert missing.status_code == 404
    css = dead_app().test_client().get("/static/eqsearch.css").get_data(as_text=True)
    assert "@font-face" in css and "../fonts/math.otf" in css


def test_login_redirects_only_within_the_site():
    client = dead_app().test_client()
    client.get("/admin/login")
    response = client.post(
        "/admin/login", data={"token": ADMIN_TOKEN, "csrf_token": csrf_of(client), "next": "//evil.example/x"}
    )
    assert response.headers["Location"] == "/admin/"


def test_security_headers():
    response = dead_app().test_client().get("/")
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_openapi_document_lists_the_api():
    document = dead_app().test_client().get("/api/openapi.json").get_json()
    assert document["openapi"].startswith("3.1")
    for path in ("/api/search", "/api/equations/{eq_id}", "/api/papers/{paper_id}", "/api/render", "/api/jobs"):
        assert path in document["paths"]


@pytest.mark.parametrize("method", ["TRACE", "PUT", "DELETE", "PATCH"])
def test_an_undeclared_method_is_a_405_with_allow(method):
    response = dead_app().test_client().open("/api/search", method=method)
    assert response.status_code == 405 and response.get_json()["error"]["code"] == "method_not_allowed"
    assert set(response.headers["Allow"].split(", ")) == {"GET", "HEAD", "OPTIONS", "POST"}


def test_render_needs_its_parameter():
    client = dead_app().test_client()  # refused before KaTeX: no converter needed
    missing = client.get("/api/render")
    assert missing.status_code == 400 and missing.get_json()["error"]["code"] == "invalid_request"
    assert "?latex=" in missing.get_json()["error"]["message"]
    no_body = client.post("/api/render")
    assert no_body.status_code == 400 and "JSON object" in no_body.get_json()["error"]["message"]
    assert client.get("/api/render", query_string={"latex": " "}).get_json()["status"] == "empty"


def test_an_api_job_path_is_checked_before_anything_runs(tmp_path):
    client = dead_app(INGEST_ROOT=str(tmp_path)).test_client()

    def start(body):
        response = client.post("/api/jobs", json=body, headers=BEARER)
        return response.status_code, response.get_json()["error"]["code"]

    assert start({"path": "relative/path"}) == (400, "invalid_request")
    assert start({"path": " /leading/space"}) == (400, "invalid_request")  # the API takes the path as it is
    assert start({"path": "/a\x00b"}) == (400, "invalid_request")
    assert start({"path": str(tmp_path), "restart": "yes"}) == (400, "invalid_request")
    assert start({"path": "/etc"}) == (403, "path_forbidden")
    assert start({"path": str(tmp_path / "missing")}) == (422, "path_not_found")
    assert start({"path": str(tmp_path / ("x" * 5000))}) == (422, "path_not_found")  # too long for a file name


def test_a_malformed_query_variable_is_a_400_saying_where():
    client = dead_app().test_client()  # refused before any search: no backend needed
    response = client.get("/api/search", query_string={"latex": "?a^2 + ?1b"})
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert error["code"] == "invalid_request" and "'?1b' at character 8" in error["message"]
    page = client.get("/", query_string={"latex": r"\text{?a}"})
    assert page.status_code == 400
    assert b'class="notice error"' in page.data and b"inside text" in page.data
    document = client.get("/api/openapi.json").get_json()
    assert "?a^2 + ?b^2 = ?c^2" in document["paths"]["/api/search"]["get"]["parameters"][0]["description"]
    assert "bindings" in document["components"]["schemas"]["FormulaHighlight"]["properties"]


def test_a_short_admin_token_is_refused():
    with pytest.raises(ValueError, match="too short"):
        create_app({"ES_CONFIG": DEAD, "TESTING": True, "ADMIN_TOKEN": "short"})


# -- against the real node and the ingested corpus -------------------------------------------------------------


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
def test_pagination_keeps_the_query_in_the_url(client):
    page = client.get("/", query_string={"q": "gradient sums identity", "size": "1"})
    assert b'rel="next"' in page.data
    assert b"q=gradient+sums+identity" in page.data and b"page=2" in page.data


@pytest.mark.es
def test_equation_and_paper_pages(client):
    page = client.get("/equations/2002.00002:2")
    assert page.status_code == 200
    assert b"E = mc^2" in page.data and b"<math" in page.data and b"Mass-energy" in page.data
    paper = client.get("/papers/2003.00003")
    assert paper.status_code == 200
    assert b'href="/papers/2002.00002"' in paper.data  # cited and indexed: linked
    assert b'class="not-indexed"' in paper.data  # cited, not indexed
    cited = client.get("/api/papers/2002.00002").get_json()
    assert {c["paper_id"] for c in cited["cited_by"]} == {"2001.00001", "2003.00003"}
    assert client.get("/papers/0000.00000").status_code == 404
    assert client.get("/api/equations/nope:0").get_json()["error"]["code"] == "not_found"


DETERMINANT = r"\det(AB) = \det(A)\det(B)"  # stated only inline in 2003.00003; its "$\omega$" is too small to index


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
def test_inline_formulas_in_the_pages(client):
    page = client.get("/", query_string={"latex": DETERMINANT}).get_data(as_text=True)
    assert '<span class="badge inline"' in page and '<select id="inline" name="inline">' in page
    assert page.count('<span class="badge inline"') == 1  # the display hits carry no badge
    only = client.get("/", query_string={"latex": DETERMINANT, "inline": "only"}).get_data(as_text=True)
    assert '<option value="only" selected>' in only and '<details class="filters" open>' in only
    equation = client.get("/equations/2003.00003:i1")
    # numbered from 1 in document order (\\omega, not indexed, is the first)
    assert equation.status_code == 200 and b"inline formula 2" in equation.data and b"multiplicative" in equation.data
    paper = client.get("/papers/2003.00003").get_data(as_text=True)
    assert "1 inline formula of the running text is indexed too" in paper
    assert "2003.00003:i1" not in paper  # the paper page lists its displays; inline formulas are counted
    api = client.get("/api/papers/2003.00003").get_json()
    assert api["inline_count"] == 1 and len([e for s in api["sections"] for e in s["equations"]]) == 3


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
def test_without_a_model_bundle_formulas_degrade_to_keywords(es_config, indexed_app, tmp_path):
    # The same indices as the other tests, served by an app whose model bundle is missing.
    prefix = indexed_app.extensions["eqsearch.services"].prefix
    app = make_app(es_config, prefix, MODEL_BUNDLE=str(tmp_path / "no-bundle"), ENCODER=None)
    try:
        client = app.test_client()
        body = client.get("/api/search", query_string={"latex": "E = mc^2", "q": "Cauchy"}).get_json()
        assert body["warnings"][0].startswith("Formula search is unavailable")
        assert {h["paper_id"] for h in body["hits"]} == {"2002.00002"}
        assert {h["matched"] for h in body["hits"]} == {"text"}
        refused = client.post("/api/jobs", json={"path": str(CORPUS / "latex")}, headers=BEARER)
        assert refused.status_code == 400 and "encoder" in refused.get_json()["error"]["message"]
    finally:
        app.extensions["eqsearch.services"].close()


@pytest.mark.es
def test_an_empty_deployment_says_nothing_is_indexed(es_config):
    app = make_app(es_config, f"eqsearch-test-web-{uuid.uuid4().hex[:8]}")
    page = app.test_client().get("/?q=wave")
    assert page.status_code == 503 and b"Nothing is indexed yet" in page.data
    app.extensions["eqsearch.services"].close()


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
def test_post_and_get_searches_answer_alike(client):
    params = {"latex": r"\sum_{i=1}^n x_i^2", "q": "squares", "cat": "math.CA"}
    got = client.get("/api/search", query_string=params).get_json()
    posted = client.post("/api/search", json={**params, "cat": ["math.CA"]}).get_json()
    assert [h["eq_id"] for h in posted["hits"]] == [h["eq_id"] for h in got["hits"]] and got["hits"]


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
