"""HTML documentation pages (Sphinx, Doxygen, MathJax) as documents: displays, sections, context, citations, safety."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.fetch_corpus import HtmlManual, _fetch_manual
from eqsearch.ingest.htmlmath import citation_entries, extract_html_paper, parse_html
from eqsearch.ingest.pipeline import process_task
from eqsearch.ingest.records import Paper
from eqsearch.ingest.sources import discover, load_paper
from source_archives import FIXTURES

DOCS = FIXTURES / "html_docs"
CONFIG = ExtractConfig(convert=False)


def _papers() -> dict[str, object]:
    return {task.paper_id: load_paper(task, CONFIG) for task in discover([str(DOCS)])}


def test_discovery_lists_pages_with_display_math_only():
    tasks = list(discover([str(DOCS)]))
    assert {t.kind for t in tasks} == {"html"}
    # no page without displays (other.html, refs/index.html), nothing under _sources, no index pages
    assert sorted(t.paper_id for t in tasks) == [
        "html_docs/doxygen/step_1",
        "html_docs/guide/stats",
        "html_docs/mathjax",
    ]
    assert {t.source for t in tasks} == {str(DOCS / t.member) for t in tasks}
    single = list(discover([str(DOCS / "guide" / "stats.html")]))
    assert [(t.kind, t.paper_id, t.member) for t in single] == [("html", "guide/stats", "stats.html")]


def test_sphinx_page_displays_sections_context_and_citations():
    paper = _papers()["html_docs/guide/stats"]
    assert paper.kind == "html" and paper.title == "Variance estimators"
    sections = [(s.level, s.kind, s.title, s.parent) for s in paper.sections]
    assert sections == [
        (0, "front", "Variance estimators", None),
        (2, "section", "Unbiased variance", None),
        (3, "class", "stats.Welford", 1),
        (4, "method", "stats.Welford.update", 2),
        (2, "section", "References", None),
    ]
    equations = [(e.section, e.environment, e.latex, e.labels) for e in paper.equations()]
    assert equations == [
        (0, "\\[", "\\bar x = \\frac{1}{n} \\sum_{i=1}^n x_i", ["mean"]),  # equation number and permalink dropped
        (1, "eqnarray*", "s^2 & = & \\frac{1}{n-1} \\sum_{i=1}^n (x_i - \\bar x)^2", []),  # nowrap, entities decoded
        (1, "\\[", "\\sigma^2 = E[(X - \\mu)^2]", []),  # imgmath: the image's alt text
        (3, "\\[", "\\bar x_k = \\bar x_{k-1} + \\frac{x_k - \\bar x_{k-1}}{k}", []),
    ]  # <pre> and highlighted code with $$ and \[ are not math
    first = paper.equations()[0]
    assert first.context_before == "The sample $x_1, \\dots, x_n$ has the mean"
    assert first.context_after == "as in [Smith2001] and [Ke1991]."
    assert paper.equations()[3].context_after == "in one pass."
    # own bibliography (1 entry) + the shared bibliography entry it links to; arXiv ids from both, URLs included
    assert paper.citations == ["1501.00123", "math/0110077"]
    assert paper.bibliography_entries == 2
    assert paper.references == ["html_docs/refs/index#ke1991"]
    # links from the text to other pages; not the table of contents, the sidebar, index pages or permalinks
    assert paper.links == ["html_docs/guide/other"]


def test_doxygen_page_title_formulas_and_code():
    paper = _papers()["html_docs/doxygen/step_1"]
    assert paper.title == "The step-1 tutorial program"
    assert [(s.level, s.title) for s in paper.sections] == [(0, "The step-1 tutorial program"), (2, "Introduction"),
                                                            (4, "Details")]  # fmt: skip
    assert [(e.environment, e.latex) for e in paper.equations()] == [
        ("align*", "(\\nabla u, \\nabla v) = (f, v) \\qquad \\forall v \\in H^1_0,"),
        ("\\[", "\\|u - u_h\\| \\le C h^2 + \\jump{u_h}"),
    ]  # the display that only defines a macro is no equation
    # macros defined inside math anywhere on the page (Doxygen puts them above the contents) hold for the page
    assert [(m.name, m.body, m.nargs) for m in paper.macros] == [
        ("\\jump", "[\\![ #1 ]\\!]", 1),
        ("\\vec", "\\boldsymbol", 0),
    ]
    assert paper.equations()[0].context_before == "We solve the Poisson equation $-\\Delta u = f$ with the weak form"
    assert paper.equations()[1].context_after == "as shown in step-2."
    assert paper.links == ["html_docs/doxygen/step_2"]


def test_mathjax_scripts_and_delimiters_in_text():
    paper = _papers()["html_docs/mathjax"]
    assert [(e.environment, e.latex, e.section) for e in paper.equations()] == [
        ("$$", "e^{i\\pi} + 1 = 0", 0),
        ("\\[", "a^2 + b^2 = c^2", 0),
        ("\\[", "\\int_0^1 x\\,dx = \\frac{1}{2}", 1),
        ("\\[", "\\ZZ \\subset \\RR, \\quad \\GF{4}", 1),
    ]
    assert paper.equations()[2].context_before == "A script holds $x$ inline and"
    # MathJax configuration: an inline MathJax 3 config, and MathJax 2's local config file named in the query of
    # MathJax.js (resolved against its config/ folder); the remote script is not fetched
    macros = [(m.name, m.body, m.nargs, m.source) for m in paper.macros]
    assert macros == [
        ("\\RR", "\\mathbb{R}", 0, "mathjax"),
        ("\\ZZ", "\\Bold{Z}", 0, "mathjax"),
        ("\\GF", "\\Bold{F}_{#1}", 1, "mathjax"),
        ("\\Bold", "\\mathbf{#1}", 1, "mathjax"),
    ]


def test_converted_end_to_end():
    from eqsearch.ingest.convert import ConverterUnavailableError, open_converter

    try:
        converter = open_converter()
    except ConverterUnavailableError as error:
        pytest.skip(f"KaTeX not available: {error}")
    try:
        task = next(t for t in discover([str(DOCS)]) if t.paper_id.endswith("guide/stats"))
        paper = process_task(task, ExtractConfig(), converter)
        others = {t.paper_id: process_task(t, ExtractConfig(), converter) for t in discover([str(DOCS)])}
    finally:
        converter.__exit__(None, None, None)
    assert [e.status for e in paper.equations()] == ["ok"] * 4
    assert all(e.mathml.startswith("<math") for e in paper.equations())
    # the page's macros reach the converter: \ZZ, \GF (MathJax config) and \jump (defined in math) are expanded
    for paper_id in ("html_docs/mathjax", "html_docs/doxygen/step_1"):
        assert {e.status for e in others[paper_id].equations()} == {"ok"}


def test_hostile_pages_are_inert(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    root = tmp_path / "docs"
    root.mkdir()
    page = (
        f'<!DOCTYPE html [<!ENTITY xxe SYSTEM "file://{secret}">]>'
        '<html><body><div role="main"><h1>T</h1><p>&xxe; before</p><div class="math">\\[a\\]</div>'
        '<p><a href="../secret.txt#x">up</a> <a href="/etc/passwd#y">abs</a> <a href="../../x.html#z">out</a>'
        '<a href="javascript:alert(1)">js</a><a href="http://[bad">broken url</a></p></div></body></html>'
    )
    asked: list[str] = []

    def read_page(rel):
        asked.append(rel)
        return None

    paper = extract_html_paper(
        page.encode(), paper_id="docs/p", origin="p.html", config=CONFIG, page="p.html", label="docs",
        read_page=read_page,
    )  # fmt: skip
    dumped = str(paper.to_json())
    assert "TOPSECRET" not in dumped
    assert asked == []  # nothing outside the root is ever asked for
    assert paper.links == [] and [e.latex for e in paper.equations()] == ["a"]

    # a page that links out of the documentation folder through a symlink is neither listed nor read
    (root / "inside.html").write_text('<div class="math">\\[b\\]</div><a href="leak.html#k">k</a>')
    outside = tmp_path / "outside.html"
    outside.write_text('<div class="citation" id="k">arXiv:1501.00001</div><div class="math">\\[c\\]</div>')
    os.symlink(outside, root / "leak.html")
    tasks = list(discover([str(root)]))
    assert [t.member for t in tasks] == ["inside.html"]
    paper = load_paper(tasks[0], CONFIG)
    assert paper.citations == [] and paper.references == []


def test_bad_pages_fail_with_reasons(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "empty.html").write_bytes(b"")
    (root / "big.html").write_bytes(b'<div class="math">\\[a\\]</div>' + b" " * 2000)
    (root / "deep.html").write_bytes(b"<div>" * 100_000 + b'<div class="math">\\[a\\]</div>')
    (root / "binary.html").write_bytes(b"\\[\x00\xff\xfe" * 100)
    tasks = {t.member: t for t in discover([str(root)])}
    assert sorted(tasks) == ["big.html", "binary.html", "deep.html"]  # the empty page has no display marker
    empty = next(discover([str(root / "empty.html")]))  # named on the command line: read anyway

    def run(task, **limits):
        return process_task(task, ExtractConfig(convert=False, **limits), None)

    assert run(empty).error.reason == "empty_source"
    assert run(tasks["big.html"], max_file_bytes=1000).error.reason == "document_too_large"
    deep = run(tasks["deep.html"])  # libxml2 caps the nesting; the page still yields a record
    assert deep.status == "ok" or deep.error.reason in ("too_deeply_nested", "empty_source")
    binary = run(tasks["binary.html"])
    assert binary.status == "ok" or binary.error.reason == "empty_source"


def test_citation_entries_both_docutils_markups():
    root = parse_html((DOCS / "refs" / "index.html").read_bytes(), "refs/index.html")
    entries = citation_entries(root)
    assert set(entries) == {"ke1991", "old2000"}
    assert "arxiv.org/abs/math/0110077v1" in entries["ke1991"]
    assert "1005.3759" in entries["old2000"]


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb")
def test_fetch_manual_keeps_the_documentation_folder_less_exclusions(tmp_path):
    package = tmp_path / "pkg"
    docs = package / "usr/share/doc/python-demo-doc/html"
    (docs / "generated").mkdir(parents=True)
    (docs / "tutorial").mkdir()
    (docs / "tutorial" / "a.html").write_text('<div class="math">\\[a\\]</div>')
    (docs / "generated" / "api.html").write_text('<div class="math">\\[b\\]</div>')
    (docs / "_formulas.tex").write_text("\\documentclass{article}\\begin{document}$$a$$\\end{document}")
    (docs / "changelog.gz").write_bytes(b"not a paper")
    (package / "DEBIAN").mkdir()
    (package / "DEBIAN" / "control").write_text(
        "Package: python-demo-doc\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@example.org>\nDescription: d\n"
    )
    cache = tmp_path / "cache"
    (cache / "debs").mkdir(parents=True)
    subprocess.run(
        ["dpkg-deb", "--build", str(package), str(cache / "debs" / "python-demo-doc_1.0_all.deb")],
        check=True,
        capture_output=True,
    )
    lines: list[str] = []
    target = _fetch_manual(HtmlManual("python-demo-doc", exclude=("generated",)), cache, lines.append)
    assert target == cache / "html" / "python-demo-doc"
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*.html")) == ["tutorial/a.html"]
    assert not (cache / "html" / "python-demo-doc.partial").exists()
    assert [t.paper_id for t in discover([str(target)])] == ["python-demo-doc/tutorial/a"]
    assert _fetch_manual(HtmlManual("python-demo-doc"), cache, lines.append) == target  # reused


# -- inline math -------------------------------------------------------------------------------------------------
INLINE_DOCS = FIXTURES / "html_inline"
INLINE_CONFIG = ExtractConfig(convert=False, context_chars=60)


def _inline_papers() -> dict[str, Paper]:
    return {task.paper_id: load_paper(task, INLINE_CONFIG) for task in discover([str(INLINE_DOCS)])}


def _inline(paper: Paper) -> list[tuple[int, int, str, str]]:
    return [(s.index, f.number, f.delimiter, f.latex) for s in paper.sections for f in s.inline]


def test_sphinx_inline_spans_and_images_in_page_order_not_code_nor_headings():
    paper = _inline_papers()["html_inline/sphinx"]
    assert _inline(paper) == [
        (0, 0, "\\(", "p \\ge 1"),
        (0, 1, "\\(", "x"),
        (0, 2, "\\(", "\\|x\\|_\\infty = \\max_i |x_i|"),
        (0, 3, "\\(", "0 < \\|x\\|_2 \\le \\sqrt{n}\\, \\|x\\|_\\infty"),  # &lt; decoded
        (0, 4, "\\(", "x \\ne 0"),
        (0, 5, "\\(", "a + b = c"),  # markup nested in the span: its text
        (0, 6, "\\(", "e^{i\\theta} = \\cos\\theta + i\\sin\\theta"),  # imgmath's inline image
        (1, 7, "\\(", "\\|x\\|_p"),  # in the API description's section
        (1, 8, "\\(", "p = 1, 2, \\infty"),
    ]  # not the heading's \(\mathbb{R}^n\), nor \( in <code> and in a highlighted <pre>
    # the displays stay the displays: the imgmath image inside <div class="math"> is one, none is counted twice
    assert [e.latex for e in paper.equations()] == [
        "\\|x\\|_p = \\Big(\\sum_i |x_i|^p\\Big)^{1/p}",
        "\\int_0^1 f(t)\\,dt",
    ]
    third = paper.sections[0].inline[3]
    assert third.context_before == "of $x$ is [math] so that $\\|x\\|_\\infty = \\max_i |x_i|$ and"
    assert third.context_after == "when $x \\ne 0$ & finite. Markup inside a span is its text:"
    assert paper.sections[0].inline[1].context_before == ""  # one symbol: not indexed, no context
    # offset and length locate "$latex$" in the page's plain text, the text contexts are cut from
    assert third.length == len(third.latex) + 2
    record = paper.to_json()["sections"][0]["inline"][3]
    assert record["id"] == "html_inline/sphinx:i3" and record["display"] is False and record["status"] == "extracted"


def test_doxygen_inline_images_mathjax_and_macro_definitions():
    paper = _inline_papers()["html_inline/doxygen"]
    assert _inline(paper) == [
        (1, 0, "$", "E(u) = \\frac12 \\int_\\Omega |\\nabla u|^2 \\dx"),  # formulaInl's alt, its $...$ removed
        (1, 1, "$", "u"),
        (1, 2, "\\(", "-\\Delta u = f"),
        (1, 3, "\\(", "a < b + c"),
        (1, 4, "$", "|x| > 0"),
    ]  # the \( that only defines \dx is no formula, the one in the code fragment's comment is code
    assert [(m.name, m.body) for m in paper.macros] == [("\\dx", "\\,\\mathrm{d}x")]
    assert [e.latex for e in paper.equations()] == ["a(u,v) = (\\nabla u, \\nabla v)"]
    assert paper.sections[1].inline[3].context_before == "MathJax writes $-\\Delta u = f$ as well: [math] Entities:"


def test_dollars_are_math_only_where_the_mathjax_configuration_says_so():
    papers = _inline_papers()
    on, off = papers["html_inline/dollars"], papers["html_inline/nodollars"]
    # on: SageMath's way, inlineMath [['$','$'], ...] in a configuration file MathJax.js loads; \$ is a dollar
    assert _inline(on) == [
        (0, 0, "$", "a^2 + b^2 = c^2"),
        (0, 1, "\\(", "x \\in \\RR^n"),  # <script type="math/tex">
        (0, 2, "\\(", "f(x) = y"),
    ]  # not $HOME $PATH in <code>
    assert on.sections[0].inline[0].context_after.startswith("is math, \\$5 is money and so are \\$3 and \\$4; [math]")
    assert [(m.name, m.body) for m in on.macros] == [("\\RR", "{\\mathbb{R}}")]
    # off: the same text without that configuration: $ is text, \( still math
    assert _inline(off) == [(0, 0, "\\(", "x \\in \\RR^n"), (0, 1, "\\(", "f(x) = y")]
    assert (
        [e.latex for e in on.equations()]
        == [e.latex for e in off.equations()]
        == ["\\sum_{k=1}^n k = \\frac{n(n+1)}{2}"]
    )


def test_inline_extraction_is_deterministic():
    data = (INLINE_DOCS / "sphinx.html").read_bytes()
    first, second = (
        extract_html_paper(data, paper_id="d/sphinx", origin="sphinx.html", config=CONFIG, page="sphinx.html")
        for _ in range(2)
    )
    assert first.to_json() == second.to_json()
    assert [f.number for f in first.inline_formulas()] == list(range(9))
