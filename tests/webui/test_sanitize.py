"""MathML and highlights sanitised (`webui/sanitize.py`): KaTeX's output kept in substance, text escaped, hostile
markup dropped, anything else or a huge formula giving nothing, highlights keeping only the highlighter's marks, the
matched elements' one class, and an inline formula set inline. (Styled letters: test_mathvariants.py.)"""

from __future__ import annotations

import html
import random
import re

import pytest
from eqsearch.webui.sanitize import sanitize_highlight, sanitize_mathml
from lxml import etree

M = 'xmlns="http://www.w3.org/1998/Math/MathML"'


def test_katex_output_passes_unchanged_in_substance():
    mathml = (
        f'<math {M} display="block"><mrow><mfrac><mi>a</mi><mi>b</mi></mfrac><mo stretchy="false">)</mo></mrow></math>'
    )
    assert sanitize_mathml(mathml) == mathml


def test_text_stays_escaped():
    mathml = f"<math {M}><mtext>&lt;script&gt;alert(1)&lt;/script&gt;</mtext></math>"
    out = sanitize_mathml(mathml)
    assert "<script" not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out


@pytest.mark.parametrize(
    "inner",
    [
        '<mi onclick="alert(1)">y</mi>',
        '<mi href="javascript:alert(1)">y</mi>',
        '<mi style="background:url(javascript:alert(1))">y</mi>',
        '<mi xlink:href="javascript:alert(1)" xmlns:xlink="http://www.w3.org/1999/xlink">y</mi>',
        '<mi mathcolor="red;background:url(x)">y</mi>',
        '<maction actiontype="statusline"><mi>y</mi><mtext>js</mtext></maction>',
        '<mtext><img xmlns="http://www.w3.org/1999/xhtml" src="x" onerror="alert(1)"/>y</mtext>',
        '<script xmlns="http://www.w3.org/1999/xhtml">alert(1)</script><mi>y</mi>',
        '<semantics><mi>y</mi><annotation-xml encoding="text/html"><b>alert(1)</b></annotation-xml></semantics>',
        "<!-- <script>alert(1)</script> --><mi>y</mi>",
        '<?xml-stylesheet href="evil.xsl"?><mi>y</mi>',
    ],
)
def test_hostile_markup_is_dropped(inner):
    out = sanitize_mathml(f"<math {M}>{inner}</math>")
    assert out.startswith("<math")
    for bad in ("onclick", "onerror", "href", "style", "javascript", "<script", "<img", "maction", "alert(1)</"):
        assert bad not in out, (bad, out)
    assert "y" in "".join(etree.fromstring(str(out)).itertext())


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        None,
        "not xml <",
        "<div>no math</div>",
        '<!DOCTYPE math [<!ENTITY x SYSTEM "file:///etc/passwd">]><math>&x;</math>',
    ],
)
def test_anything_else_gives_nothing(garbage):
    assert sanitize_mathml(garbage) == ""


def test_huge_formula_gives_nothing():
    assert sanitize_mathml(f"<math {M}>" + "<mi>x</mi>" * 25_000 + "</math>") == ""


def test_highlight_keeps_only_the_highlighters_marks():
    fragment = 'a <em>gradient</em> &lt;img&gt; <script>alert(2)</script><b onclick="x">b</b>'
    out = sanitize_highlight(fragment)
    assert out == (
        "a <mark>gradient</mark> &amp;lt;img&amp;gt; &lt;script&gt;alert(2)&lt;/script&gt;"
        "&lt;b onclick=&#34;x&#34;&gt;b&lt;/b&gt;"
    )


def test_highlight_of_raw_hostile_text_is_inert():
    out = sanitize_highlight('<img src=x onerror="alert(1)"><em>x</em><a href="javascript:alert(1)">y</a>')
    assert out.startswith("&lt;img src=x onerror=") and "<mark>x</mark>" in out
    assert "<img" not in out and "<a " not in out


@pytest.mark.parametrize(
    ("fragment", "expected"),
    [
        # Stored text quoting math: once parsed as HTML, these raised "Invalid tag name" (HTTP 500 on a search).
        ("if $a<b$ then <em>univalent</em>", "if $a&lt;b$ then <mark>univalent</mark>"),
        ("$x<y_1$ & <em>level</em> $p<q>r$", "$x&lt;y_1$ &amp; <mark>level</mark> $p&lt;q&gt;r$"),
        ("<1> <b$ </$> <", "&lt;1&gt; &lt;b$ &lt;/$&gt; &lt;"),
        ("&amp; &#x3c; &lt;", "&amp;amp; &amp;#x3c; &amp;lt;"),
        # Unbalanced marks: a stray closing tag is dropped, an open one is closed, nesting collapses.
        ("</em>a <em>b <em>c</em> d", "a <mark>b c</mark> d"),
        ("<em>open", "<mark>open</mark>"),
        ("<EM>upper</EM>", "&lt;EM&gt;upper&lt;/EM&gt;"),
    ],
)
def test_highlight_of_text_that_looks_like_markup_is_text(fragment, expected):
    assert sanitize_highlight(fragment) == expected


_ALPHABET = "ab $<>/&;#=\"'{}emark\\^_\x00\u00e9\u2211\ud7ff\U0001d465\n\t"


def _random_fragment(rng: random.Random) -> str:
    pieces = []
    for _ in range(rng.randint(0, 30)):
        roll = rng.random()
        if roll < 0.15:
            pieces.append(rng.choice(["<em>", "</em>", "<mark>", "<script>", "</b>", "<b$", "<!--", "]]>"]))
        else:
            pieces.append("".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 6))))
    return "".join(pieces)


def test_highlight_fuzz_never_raises_and_only_marks_are_markup():
    """10,000 random fragments: no exception, the output parses as HTML with no element but <mark>, never nested,
    and its text is the input's text with the highlighter's tags removed."""
    rng = random.Random(20261127)
    for _ in range(10_000):
        fragment = _random_fragment(rng)
        out = str(sanitize_highlight(fragment))
        tags = re.findall(r"<[^>]*>", out)
        assert set(tags) <= {"<mark>", "</mark>"}, (fragment, out)
        depth = 0
        for tag in tags:
            depth += 1 if tag == "<mark>" else -1
            assert depth in (0, 1), (fragment, out)
        assert depth == 0, (fragment, out)
        text = html.unescape(re.sub(r"</?mark>", "", out))
        assert text == re.sub(r"</?em>", "", fragment), (fragment, out)


def test_matched_elements_get_the_one_class_and_nothing_else_passes():
    mathml = (
        f'<math {M}><mrow class="evil"><msup><mi>x</mi><mn>2</mn></msup><!-- c --><mo>+</mo><mi>y</mi></mrow></math>'
    )
    # pre-order elements: 0 math, 1 mrow, 2 msup, 3 mi x, 4 mn 2, 5 mo +, 6 mi y
    out = str(sanitize_mathml(mathml, [3, 4, 6]))
    root = etree.fromstring(out.encode())
    marked = [e.text for e in root.iter() if e.get("class")]
    assert marked == ["x", "2", "y"]
    assert {e.get("class") for e in root.iter() if e.get("class")} == {"eqsearch-match"}
    assert "evil" not in out  # a class in the input is dropped like any attribute outside the list
    assert "class" not in str(sanitize_mathml(mathml))


def test_an_inline_formula_is_set_inline():
    out = str(sanitize_mathml('<math display="block"><mi>x</mi></math>', inline=True))
    assert 'display="inline"' in out and "block" not in out
