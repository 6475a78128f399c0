"""The UI in real headless Chromium, against the app on a loopback port and a real Elasticsearch node.

Screenshots land in artifacts/screenshots/ (git-ignored): look at them after a run.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import replace

import pytest
from eqsearch.engine.es.config import EsConfig
from eqsearch.webui import create_app
from playwright.sync_api import expect

from .conftest import ADMIN_TOKEN, CORPUS, LiveServer, drop_prefix, make_app, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.es, pytest.mark.slow]

# Set by any hostile payload that manages to run; every page starts with it undefined.
XSS_PROBE = (
    "Object.defineProperty(window, '__xss', {set(v) { window.__xssRan = String(v); }, get() { return undefined; }});"
)


def assert_no_script_ran(page) -> None:
    assert page.evaluate("window.__xssRan === undefined"), page.evaluate("window.__xssRan")
    assert page.dialogs == [], page.dialogs


def test_type_a_formula_and_see_results(live_server, page):
    page.goto(live_server.url + "/")
    screenshot(page, "01-search-empty")
    page.fill("#latex", r"\sum_{i=1}^n x_i^2")
    page.wait_for_selector("#latex-preview[data-state=ok] math")
    assert page.locator("#latex-preview munderover").count() == 1
    screenshot(page, "02-search-preview")
    page.click("button.primary")
    page.wait_for_selector(".paper-group")
    first = page.locator(".paper-group").first
    assert "Sums of squares" in first.locator("h2").inner_text()
    assert first.locator(".badge").first.inner_text() == "structure + embedding"  # the channels that found it
    assert "latex=%5Csum_%7Bi%3D1%7D%5En+x_i%5E2" in page.url and "w=" not in page.url
    screenshot(page, "03-search-results-formula")

    # The same search shared as a URL, with keywords and the balance moved: the state comes back from the URL.
    page.goto(page.url + "&q=gradient&w=0.3")
    assert page.input_value("#keywords") == "gradient"
    assert page.input_value("#balance") == "0.3"
    page.wait_for_selector(".paper-group mark")
    screenshot(page, "04-search-results-hybrid")

    page.fill("#latex", r"\frac{x")
    page.wait_for_selector("#latex-preview-error:not([hidden])")
    assert "offset" in page.inner_text("#latex-preview-error")
    page.click("button.primary")
    page.wait_for_selector(".notice.latex-error")
    assert page.locator(".paper-group").count() >= 1  # keyword results still shown
    screenshot(page, "05-search-latex-error")


def test_a_query_with_variables_shows_its_matches_with_the_matched_parts_marked(live_server, page):
    page.goto(live_server.url + "/")
    page.fill("#latex", r"\sum_{?i=1}^{?n} ?a_{?i}^2")
    page.click("button.primary")
    page.wait_for_selector(".paper-group")
    groups = page.locator(".paper-group")
    assert groups.count() == 1 and "Sums of squares" in groups.first.locator("h2").inner_text()
    hits = groups.first.locator(".hit")
    assert hits.count() == 2  # only the formulas the pattern matches
    first = hits.first
    marked = first.locator("math .eqsearch-match")
    assert marked.count() >= 5  # the sum, its limits and x_i^2
    assert "x" in [marked.nth(i).text_content() for i in range(marked.count())]  # MathML: no inner_text
    color = marked.first.evaluate("e => getComputedStyle(e).color")
    assert color == "rgb(105, 65, 198)", color  # styled by eqsearch.css
    assert first.locator(".bindings").inner_text().split() == ["?i", "=", "i", "?n", "=", "n", "?a", "=", "x"]
    screenshot(page, "05b-search-variables")

    page.fill("#latex", "?1x + y")
    page.click("button.primary")
    page.wait_for_selector(".notice.error")
    assert "starts with a digit" in page.inner_text(".notice.error")
    assert page.input_value("#latex") == "?1x + y"  # the form keeps what was typed
    screenshot(page, "05c-search-variable-error")


def test_open_an_equation_and_a_paper(live_server, page):
    page.goto(live_server.url + "/?latex=e%5E%7Bi%5Cpi%7D+%2B+1+%3D+0")
    page.locator(".paper-group .eq-link").first.click()
    page.wait_for_selector(".equation-page")
    assert page.locator(".display math").count() == 1
    assert "e^{i\\pi} + 1 = 0" in page.inner_text(".latex-source")
    assert page.locator("#similar .hit").count() >= 1
    neighbours = page.locator("#similar .hit .meta .collection")  # each neighbour says where it comes from
    assert neighbours.count() == page.locator("#similar .hit").count() and neighbours.first.inner_text() == "arXiv"
    screenshot(page, "06-equation")
    page.click(".crumbs a")
    page.wait_for_selector(".paper-page")
    assert page.inner_text("h1") == "Euler's identity in signal processing"
    assert page.locator(".paper-equations math").count() == 2
    page.click(".citations a[href='/papers/2002.00002']")
    page.wait_for_selector(".paper-page[data-paper='2002.00002']")
    assert "Euler's identity in signal processing" in page.inner_text(".citations")  # cited by
    screenshot(page, "07-paper")


@pytest.fixture
def page_without_csp(browser):
    """A page that ignores the Content-Security-Policy: the sanitiser alone must keep hostile markup inert."""
    context = browser.new_context(viewport={"width": 1200, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.dialogs = []

    def on_dialog(dialog) -> None:
        page.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.add_init_script(XSS_PROBE)
    yield page
    context.close()


def test_the_probe_sees_a_script_that_runs(live_server, page_without_csp):
    page = page_without_csp
    page.goto(live_server.url + "/")
    page.evaluate("() => { const s = document.createElement('script'); s.textContent = \"window.__xss = 'seen'\"; "
                  "document.body.append(s); }")  # fmt: skip
    assert page.evaluate("window.__xssRan") == "seen"


def test_hostile_payloads_never_run(live_server, page_without_csp):
    page = page_without_csp
    page.goto(live_server.url + "/papers/2004.66666")
    assert "<script>" in page.inner_text("h1")  # shown as text
    for formula in page.locator(".paper-equations math").all():
        formula.hover()  # mouseover handlers, were any left
    screenshot(page, "08-hostile-paper")
    assert_no_script_ran(page)
    for href in [a.get_attribute("href") for a in page.locator(".paper-equations .eq-link").all()]:
        page.goto(live_server.url + href)
        page.locator(".display").click()
        assert_no_script_ran(page)
    screenshot(page, "09-hostile-equation")
    page.goto(live_server.url + "/?q=hostile+gradient&latex=y%5E2")
    page.wait_for_selector(".paper-group")
    for formula in page.locator(".hit math").all():
        formula.hover()
    screenshot(page, "10-hostile-results")
    assert_no_script_ran(page)
    page.fill("#latex", r"\text{<img src=x onerror=alert(1)><script>alert(2)</script>} \href{javascript:alert(3)}{x}")
    expect(page.locator("#latex-preview")).to_contain_text("<img src=x")  # shown as text, not an element
    page.locator("#latex-preview").click()
    screenshot(page, "11-hostile-preview")
    assert_no_script_ran(page)


@pytest.fixture
def admin_server(es_config, es_client):
    """A live app with indices of its own (the admin tests change them)."""
    prefix = f"eqsearch-test-web-{uuid.uuid4().hex[:8]}"
    app = make_app(es_config, prefix)
    server = LiveServer(app)
    yield server, app
    server.stop()
    app.extensions["eqsearch.services"].close()
    drop_prefix(es_client, prefix)


def admin_login(page, url: str) -> None:
    page.goto(url + "/admin/")
    page.wait_for_selector("#token")
    page.fill("#token", ADMIN_TOKEN)
    page.click("button.primary")
    page.wait_for_selector("h1:has-text('Indices')")


def test_start_an_ingest_job_watch_it_and_migrate(admin_server, page):
    server, _ = admin_server
    admin_login(page, server.url)
    screenshot(page, "12-admin-no-indices")
    page.click("nav >> text=Ingest jobs")
    page.fill("#path", str(CORPUS / "papers.jsonl"))
    page.click("button.primary")
    page.wait_for_selector("#job")
    page.wait_for_selector("#job[data-state=finished]", timeout=60_000)
    assert page.inner_text("[data-count=papers]") == "4"
    assert page.inner_text("[data-count=equations_unconverted]") == "1"
    assert "convert:" in page.inner_text("#job-errors")
    assert page.inner_text("#job-progress-text") == "4 / 4 papers"
    screenshot(page, "13-job-finished")

    page.click("nav >> text=Indices")
    row = page.locator("tr", has=page.locator("td a", has_text=re.compile(r"-equations-v1$")))
    assert row.locator(".docs").inner_text() == "13"  # 12 displays and one inline formula
    screenshot(page, "14-admin-indices")
    row.locator("td a").first.click()
    page.wait_for_selector("pre.mapping")
    assert '"dense_vector"' in page.inner_text("pre.mapping")
    screenshot(page, "14b-admin-index-mapping")
    page.go_back()
    row.locator("a.button", has_text="migrate").click()
    page.wait_for_selector("#confirm-migrate")
    screenshot(page, "15-admin-migrate-confirm")
    page.check("input[name=confirm]")
    page.click("#confirm-migrate")
    page.wait_for_selector(".flash.ok")
    assert "Migration of equations started" in page.inner_text(".flash.ok")
    # the page follows the copy (it reloads itself while the lock stands) until the outcome shows
    finished = page.wait_for_selector("#last-migrations tr[data-kind=equations][data-state=finished]", timeout=60_000)
    assert "13 documents copied" in finished.inner_text()
    assert page.locator("#migration-in-progress").count() == 0
    live = page.locator("tr", has=page.locator("td a", has_text=re.compile(r"-equations-v2$")))
    assert live.locator(".alias").count() == 1 and live.locator(".docs").inner_text() == "13"
    screenshot(page, "16-admin-migrated")


def test_a_dead_backend_shows_a_503_page(page):
    app = create_app({"ES_CONFIG": replace(EsConfig(), url="http://127.0.0.1:1"), "TESTING": True})
    server = LiveServer(app)
    try:
        response = page.goto(server.url + "/?q=gradient")
        assert response.status == 503
        assert page.inner_text("h1") == "Search is unavailable"
        screenshot(page, "17-backend-down")
    finally:
        server.stop()


# -- rendering, provenance, cards and errors on the showcase corpus (conftest.showcase_server) ----------------------

#: Geometry of the first hat accent over a letter and of the first fence before a fraction, in ems of the formula.
MEASURE_MATH = """() => {
  const em = parseFloat(getComputedStyle(document.querySelector('math')).fontSize);
  const box = e => e.getBoundingClientRect();
  const out = {};
  const mover = [...document.querySelectorAll('mover[accent=true]')].find(m => m.children[0].localName === 'mi');
  if (mover) {
    const b = box(mover.children[0]), a = box(mover.children[1]);
    out.accent = {gap: (b.top - a.bottom) / em, offset: Math.abs((a.left + a.right) - (b.left + b.right)) / 2 / em,
                  width: a.width / em, base: b.width / em};
  }
  const fence = [...document.querySelectorAll('mo[fence=true]')].find(mo => mo.nextElementSibling
      && mo.nextElementSibling.localName === 'mfrac');
  if (fence) out.fence = {height: box(fence).height / em, fraction: box(fence.nextElementSibling).height / em};
  const letter = [...document.querySelectorAll('mi')].find(mi => mi.textContent === 'x');
  if (letter) out.line = box(letter).height / em;
  const name = [...document.querySelectorAll('mi')].find(mi => ['var', 'log', 'exp'].includes(mi.textContent));
  if (name) out.name = {style: getComputedStyle(name).fontStyle, transform: getComputedStyle(name).textTransform};
  return out;
}"""


def math_font_status(page) -> list[str]:
    page.evaluate("document.fonts.ready.then(() => true)")
    return page.evaluate("[...document.fonts].filter(f => f.family.includes('eqsearch math')).map(f => f.status)")


def test_formulas_render_like_a_textbook(showcase_server, page):
    page.goto(showcase_server.url + "/papers/python-statsmodels-doc/regression")
    assert math_font_status(page) == ["loaded"]  # Latin Modern Math, served by the app
    regression = page.evaluate(MEASURE_MATH)
    # the hat of \hat{y} sits on its letter: touching it, centred on it, no wider than a letter and a half
    assert -0.1 <= regression["accent"]["gap"] <= 0.1, regression
    assert regression["accent"]["offset"] <= 0.15, regression
    assert regression["accent"]["width"] <= 1.5 * regression["accent"]["base"] + 0.1, regression
    assert regression["name"] == {"style": "normal", "transform": "none"}, regression  # var, upright
    screenshot(page, "10-formulas-regression")
    page.goto(showcase_server.url + "/papers/python-sklearn-doc/modules/gaussian_process")
    assert math_font_status(page) == ["loaded"]
    kernel = page.evaluate(MEASURE_MATH)
    # \left( ... \frac ... \right) stretches around the fraction: far taller than one line of letters
    assert kernel["fence"]["height"] >= max(1.5 * kernel["line"], 0.9 * kernel["fence"]["fraction"]), kernel
    screenshot(page, "11-formulas-gaussian-process")
    for paper, name in [("2105.01234", "12-formulas-bayes"), ("py:scipy.stats", "13-formulas-scipy-stats")]:
        page.goto(f"{showcase_server.url}/papers/{paper}")
        assert math_font_status(page) == ["loaded"]
        screenshot(page, name)


def search(page, server, **params) -> None:
    from urllib.parse import urlencode

    page.goto(f"{server.url}/?{urlencode(params)}")
    page.wait_for_selector(".paper-group")
    math_font_status(page)


def test_every_card_says_where_it_comes_from(showcase_server, page):
    search(page, showcase_server, latex=r"P(A|B)=\frac{P(B|A)P(A)}{P(B)}")
    screenshot(page, "14-query-bayes")
    first = page.locator(".paper-group").first
    assert "Bayesian updating" in first.locator("h2").inner_text()
    assert first.locator(".source .collection").inner_text() == "arXiv"
    link = first.locator(".source a.origin")
    assert link.inner_text() == "2105.01234v2" and link.get_attribute("href") == "https://arxiv.org/abs/2105.01234v2"
    assert "2021" in first.locator(".source").inner_text()
    cards = page.locator(".paper-group")
    for i in range(cards.count()):
        assert cards.nth(i).locator(".source .collection").inner_text().strip(), i
    collections = {cards.nth(i).locator(".source .collection").inner_text() for i in range(cards.count())}
    assert {"arXiv", "python-statsmodels-doc", "Python docstrings"} <= collections, collections
    page.click(".paper-group >> nth=0 >> h2 a")
    assert page.locator("a.original").get_attribute("href") == "https://arxiv.org/abs/2105.01234v2"


def test_cards_show_their_best_equations_and_leave_out_words_only_inline_formulas(showcase_server, page):
    search(page, showcase_server, latex=r"\sum_{i=1}^n (y_i - \hat{y}_i)^2", q="least squares regression")
    screenshot(page, "15-query-least-squares")
    card = page.locator(".paper-group[data-paper='python-statsmodels-doc/regression']")
    assert card.locator(".hit").count() == 3
    more = card.locator("a.more")
    assert re.fullmatch(r"\d+ more from this paper", more.inner_text()), more.inner_text()
    for i in range(card.locator(".hit").count()):  # no inline formula that only the words found
        hit = card.locator(".hit").nth(i)
        channels = hit.get_attribute("data-channels").split()
        assert "inline" not in hit.inner_text() or {"structure", "embedding"} & set(channels)
    summary = page.locator(".summary").inner_text()
    shown = page.locator(".hit").count()
    assert f"{shown} of their" in summary and "matching equations shown" in summary, summary
    hidden = int(more.inner_text().split()[0])
    more.click()
    page.wait_for_selector(".paper-group")
    assert "paper=python-statsmodels-doc" in page.url
    assert page.locator(".paper-group").count() == 1 and page.locator(".hit").count() >= 3 + hidden

    # words alone: the inline formulas they found (h_{ii}, X_{\sim k}) stay off the card, counted in its link
    for params in ({"q": "least squares regression"}, {"latex": r"\sum_i (y_i - \hat{y}_i)^2", "q": "regression"}):
        expected = words_only_inline(page, showcase_server, params, "python-statsmodels-doc/regression")
        search(page, showcase_server, **params)
        card = page.locator(".paper-group[data-paper='python-statsmodels-doc/regression']")
        inline_channels = card.locator(".hit").evaluate_all(
            "hits => hits.filter(h => h.querySelector('.badge.inline')).map(h => h.dataset.channels)"
        )
        for channels in inline_channels:  # an inline formula on the card was found by a formula channel
            assert {"structure", "embedding"} & set(channels.split()), channels
        link = card.locator("a.words-only")
        if not expected:  # the engine returned none: no link to them
            assert link.count() == 0, params
            continue
        plural = "" if expected == 1 else "s"
        assert link.inner_text() == f"{expected} inline formula{plural} matched by words only", params
        link.click()
        page.wait_for_selector(".paper-group")
        assert page.locator(".hit .badge.inline").count() >= 1  # asked for: shown


def words_only_inline(page, server, params: dict, paper_id: str) -> int:
    """How many inline formulas of `paper_id` the API says only the words found, for the search page's query."""
    from urllib.parse import urlencode

    page.goto(f"{server.url}/api/search?{urlencode({**params, 'group': '1', 'size': '10'})}")
    groups = page.evaluate("JSON.parse(document.body.innerText)")["groups"]
    found = next((group["equations"] for group in groups if group["paper_id"] == paper_id), [])
    return sum(1 for h in found if h["inline"] and not {"structure", "embedding"} & set(h["channels"]))


def test_contexts_draw_their_math(showcase_server, page):
    search(page, showcase_server, q="Gaussian process kernel")
    screenshot(page, "16-query-gaussian-process")
    contexts = page.locator(".context")
    assert contexts.count() >= 1
    texts = [contexts.nth(i).inner_text() for i in range(contexts.count())]
    assert not any("$" in text for text in texts), texts
    assert page.locator(".context math").count() >= 1
    search(page, showcase_server, latex=r"P(B) = \sum_i P(B|A_i) P(A_i)")
    context = page.locator(".hit[data-eq='2105.01234v2:1'] .context")
    assert context.locator("math").count() >= 1  # A_1, \dots, A_k
    assert context.locator(".display-marker").count() == 1 and "[math]" not in context.inner_text()


def test_api_errors_are_json_for_long_formulas_by_get_and_post(showcase_server, page):
    # (a URL over the server's request-line limit: gunicorn's answer in JSON is tested in tests/cli/test_serve.py)
    page.goto(showcase_server.url + "/")
    answers = page.evaluate(
        """async () => {
      const rows = n => '\\\\begin{pmatrix}' + Array.from({length: n}, (_, i) => `${i} & ${i + 1}`).join(' \\\\\\\\ ')
                        + '\\\\end{pmatrix}';
      const post = body => fetch('/api/search', {method: 'POST', headers: {'Content-Type': 'application/json'},
                                                 body: JSON.stringify(body)});
      const out = {};
      for (const [name, request] of [
          ['get', fetch('/api/search?latex=' + encodeURIComponent(rows(1000)))],
          ['post', post({latex: rows(2000)})], ['body', post({latex: rows(5000)})],
          ['ok', post({latex: 'P(A|B)=\\\\frac{P(B|A)P(A)}{P(B)}', q: 'posterior'})]]) {
        const response = await request;
        out[name] = [response.status, response.headers.get('content-type'), await response.json()];
      }
      return out;
    }"""
    )
    for name, status, code in [("get", 400, "invalid_request"), ("post", 400, "invalid_request"),
                               ("body", 413, "request_entity_too_large")]:  # fmt: skip
        got, kind, body = answers[name]
        assert (got, kind, body["error"]["code"]) == (status, "application/json", code), (name, answers[name])
    assert "the limit is 4,000" in answers["post"][2]["error"]["message"]
    assert answers["ok"][0] == 200 and answers["ok"][2]["hits"][0]["paper_id"] == "2105.01234"
