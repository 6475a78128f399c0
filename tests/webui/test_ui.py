"""The search, equation and paper pages (`webui/ui.py`): the empty search page without a backend, the math font
served, pagination, inline formulas in the pages, and the equation and paper pages over the real indexed corpus."""

from __future__ import annotations

import pytest

from .conftest import DETERMINANT, dead_app


def test_the_search_page_without_a_query_needs_no_backend():
    page = dead_app().test_client().get("/")
    assert page.status_code == 200
    assert b'id="latex"' in page.data and b"Try" in page.data


def test_the_math_font_is_served_when_installed(tmp_path):
    font = tmp_path / "math.otf"
    font.write_bytes(b"OTTO" + b"\0" * 60)
    served = dead_app(MATH_FONT=str(font)).test_client().get("/fonts/math.otf")
    assert served.status_code == 200 and served.mimetype == "font/otf" and served.data.startswith(b"OTTO")
    missing = dead_app(MATH_FONT=str(tmp_path / "none.otf")).test_client().get("/fonts/math.otf")
    assert missing.status_code == 404
    css = dead_app().test_client().get("/static/eqsearch.css").get_data(as_text=True)
    assert "@font-face" in css and "../fonts/math.otf" in css


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
