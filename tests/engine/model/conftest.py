"""What the model tests share: KaTeX for the tests that need a formula's real MathML, and the text of the MathML
elements a highlight or a layout node points at."""

from __future__ import annotations

import pytest
from eqsearch.engine.latex import KatexConverter
from lxml import etree


@pytest.fixture(scope="module")
def katex():
    with KatexConverter() as converter:
        yield converter


def elements_text(mathml: str, nodes: tuple[int, ...]) -> str:
    elements = [e for e in etree.fromstring(mathml.encode()).iter() if isinstance(e.tag, str)]
    return "".join(elements[i].text or "" for i in nodes)
