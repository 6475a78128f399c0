"""Allow-list sanitisers for the two kinds of markup the pages insert unescaped: MathML and search highlights.

The MathML sanitiser rebuilds its output from a parsed tree, keeping only listed elements and attributes: anything
else (a ``<script>``, an ``href``, an ``on*`` handler, a ``style``, a comment, a processing instruction) is dropped,
and every piece of text is escaped on the way out. A highlight is plain text with the highlighter's ``<em>`` marks:
it is escaped whole and only those marks become ``<mark>``, so stored text such as ``$a<b$`` can at worst appear as
visible, inert text.

The one attribute a formula gains here is ``class="eqsearch-match"`` (`MATCH_CLASS`), set by the sanitiser itself on
the elements a search says matched the query (pre-order element indices, `engine.model.highlights.FormulaHighlight`);
a ``class`` in the input is dropped like any attribute outside the list. A ``mathvariant`` that MathML Core does not
draw (``\\mathbb{R}``'s ``double-struck``) is written as the styled Unicode letters instead (`mathvariants`), and
spacing, accents and primes are set as TeX sets them (`typeset`).
"""

from __future__ import annotations

import re
from collections.abc import Collection

from eqsearch.webui.mathvariants import STYLES, styled
from eqsearch.webui.typeset import typeset_like_tex
from lxml import etree
from markupsafe import Markup, escape

MATHML_NS = "http://www.w3.org/1998/Math/MathML"
#: The class the sanitiser puts on matched elements (styled in ``static/eqsearch.css``).
MATCH_CLASS = "eqsearch-match"

#: Presentation MathML elements a formula may use (no ``maction``, ``mglyph``, ``annotation-xml``: they can carry
#: links, images or foreign markup).
MATHML_ELEMENTS = frozenset(
    {
        "math", "semantics", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msub", "msup", "msubsup",
        "mfrac", "msqrt", "mroot", "mstyle", "merror", "mpadded", "mphantom", "mfenced", "menclose", "mover",
        "munder", "munderover", "mtable", "mtr", "mtd", "mlabeledtr", "mmultiscripts", "mprescripts", "none",
    }
)  # fmt: skip

#: Elements removed with everything inside them (their text is never shown).
DROPPED_WITH_CONTENT = frozenset({"annotation", "annotation-xml", "script", "style"})

#: Attributes kept, on any allowed element; values must also match `_SAFE_VALUE`.
MATHML_ATTRIBUTES = frozenset(
    {
        "display", "mathvariant", "stretchy", "fence", "separator", "lspace", "rspace", "accent", "accentunder",
        "minsize", "maxsize", "movablelimits", "symmetric", "largeop", "width", "height", "depth", "voffset",
        "columnalign", "rowalign", "columnspacing", "rowspacing", "columnlines", "rowlines", "frame",
        "framespacing", "scriptlevel", "displaystyle", "linethickness", "notation", "mathcolor", "mathbackground",
        "mathsize", "open", "close", "separators", "align", "equalrows", "equalcolumns", "form", "columnspan",
        "rowspan", "bevelled", "numalign", "denomalign",
    }
)  # fmt: skip

# Lengths, numbers, keywords, colours: no parentheses, colons, quotes or backslashes (no url(), no javascript:).
_SAFE_VALUE = re.compile(r"^[A-Za-z0-9#.%+\- ]{0,200}$")
# The math content of a formula: at most this many elements (KaTeX output of a page-long equation is ~5,000).
MAX_ELEMENTS = 20_000

#: Token elements whose ``mathvariant`` is written as styled Unicode letters (`eqsearch.webui.mathvariants`).
_STYLED_ELEMENTS = frozenset({"mi", "mn"})

_PARSER = etree.XMLParser(
    resolve_entities=False, no_network=True, remove_comments=True, remove_pis=True, strip_cdata=True, huge_tree=False
)


def _local(tag: object) -> str | None:
    if not isinstance(tag, str):  # comments, processing instructions, entities
        return None
    return etree.QName(tag).localname


def _copy_math(
    source: etree._Element,
    parent: etree._Element | None,
    budget: list[int],
    marked: frozenset[etree._Element] = frozenset(),
) -> etree._Element | None:
    """Copy `source` under `parent` keeping only allowed elements and attributes; unknown elements are unwrapped;
    copies of the ``marked`` source elements get the `MATCH_CLASS`."""
    name = _local(source.tag)
    if name is None or name in DROPPED_WITH_CONTENT:
        return None
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError("formula too large")
    if name in MATHML_ELEMENTS:
        element = etree.Element(f"{{{MATHML_NS}}}{name}", nsmap={None: MATHML_NS}) if parent is None else None
        if element is None:
            element = etree.SubElement(parent, f"{{{MATHML_NS}}}{name}")
        for key, value in source.attrib.items():
            attribute = _local(key)
            if attribute in MATHML_ATTRIBUTES and _SAFE_VALUE.match(value):
                element.set(attribute, value)
        if source in marked:
            element.set("class", MATCH_CLASS)
        element.text = source.text
        variant = element.get("mathvariant")
        if name in _STYLED_ELEMENTS and variant in STYLES and not len(source):
            element.text = styled(source.text or "", variant)  # MathML Core draws no mathvariant but normal
            del element.attrib["mathvariant"]
        for child in source:
            _copy_math(child, element, budget, marked)
            if child.tail and len(element):
                element[-1].tail = (element[-1].tail or "") + child.tail
            elif child.tail:
                element.text = (element.text or "") + child.tail
        return element
    # An element outside the list (an HTML <a>, an <maction>, an <img>): keep its text as an <mtext>, nothing else.
    if parent is not None:
        text = "".join(source.itertext())
        if text.strip():
            etree.SubElement(parent, f"{{{MATHML_NS}}}mtext").text = text
    return None


def sanitize_mathml(mathml: str | None, marked: Collection[int] = (), *, inline: bool = False) -> Markup:
    """A formula's MathML reduced to the allow-list, safe to insert into a page.

    Args:
        mathml: a ``<math>`` element as KaTeX writes it (or anything else: it is parsed, never trusted).
        marked: pre-order indices of the input's elements (``<math>`` = 0, elements only, as
            `engine.model.layout.mathml_elements` counts them) to mark with ``class="eqsearch-match"``.
        inline: set in the running text (``display="inline"``), as a context's formulas are.

    Returns:
        The cleaned ``<math>`` markup; empty markup when the input is empty, is not well-formed, has no ``<math>``
        root, declares a DOCTYPE, or is larger than `MAX_ELEMENTS` elements.
    """
    if not mathml:
        return Markup("")
    try:
        root = etree.fromstring(mathml.encode("utf-8"), _PARSER)
    except (etree.XMLSyntaxError, ValueError):
        return Markup("")
    if _local(root.tag) != "math" or root.getroottree().docinfo.doctype:  # KaTeX never writes a DOCTYPE
        return Markup("")
    chosen = frozenset()
    if marked:
        wanted = {int(index) for index in marked}
        elements = (element for element in root.iter() if isinstance(element.tag, str))  # pre-order, as numbered
        chosen = frozenset(e for i, e in enumerate(elements) if i in wanted)
    try:
        clean = _copy_math(root, None, [MAX_ELEMENTS], chosen)
    except ValueError:
        return Markup("")
    if clean is None:
        return Markup("")
    clean.tail = None
    typeset_like_tex(clean)
    if inline:
        clean.set("display", "inline")
    return Markup(etree.tostring(clean, encoding="unicode", method="xml"))


#: The tags Elasticsearch's highlighter puts around matched terms (its defaults, which `engine.search.query` keeps).
_HIGHLIGHT_TAG = re.compile(r"<(/?)em>")


def sanitize_highlight(fragment: str | None) -> Markup:
    """A search highlight (text with ``<em>`` around matched terms) as escaped text with ``<mark>`` around them.

    The fragment is never parsed as markup: the stored text it quotes may hold anything (``$a<b$``, ``&``, a stray
    ``<script>``), and all of it is shown as text. Only the highlighter's own ``<em>``/``</em>`` become ``<mark>``
    and ``</mark>``, balanced (a closing tag with none open is dropped, one left open is closed at the end).

    Args:
        fragment: one highlight fragment from Elasticsearch (or any text).

    Returns:
        Markup holding only escaped text and balanced ``<mark>`` elements.
    """
    if not fragment:
        return Markup("")
    parts: list[str] = []
    open_mark = False
    position = 0
    for tag in _HIGHLIGHT_TAG.finditer(fragment):
        parts.append(str(escape(fragment[position : tag.start()])))
        position = tag.end()
        closing = bool(tag.group(1))
        if closing and open_mark:
            parts.append("</mark>")
        elif not closing and not open_mark:
            parts.append("<mark>")
        open_mark = not closing
    parts.append(str(escape(fragment[position:])))
    if open_mark:
        parts.append("</mark>")
    return Markup("".join(parts))
