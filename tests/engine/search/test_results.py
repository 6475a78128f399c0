"""Hits and pages built from fused candidates, without a node: what matched, snippets, pages and paper groups."""

from __future__ import annotations

from eqsearch.engine.search.fusion import Fused
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.results import ABSTRACT_SNIPPET, equation_hit, group_hits, select_page


def fused(doc_id: str, score: float, *lists: str) -> Fused:
    return Fused(doc_id, score, {name: score for name in lists}, {name: 1 for name in lists})


def raw(eq_id: str, paper_id: str, **source) -> dict:
    return {"_id": eq_id, "_source": {"eq_id": eq_id, "paper_id": paper_id, **source}}


def paper(paper_id: str, **source) -> dict:
    return {"_id": paper_id, "_source": source}


def test_a_hit_says_what_matched_it_and_carries_its_papers_fields():
    document = raw("p1:0", "p1", latex="x^2", year=2020, categories=["math.PR"], context="c")
    document["highlight"] = {"context": ["<em>c</em>"]}
    its_paper = paper("p1", title="T", authors=["A", "B"], abstract="An abstract.")
    its_paper["highlight"] = {"title": ["<em>T</em>"]}
    both = equation_hit(fused("p1:0", 0.5, "formula", "words"), document, (), its_paper)
    assert both.matched == "both" and both.formula_score == 0.5 and both.text_score == 0.5
    assert both.title == "T" and both.authors == ("A", "B") and both.abstract == "An abstract."
    assert both.categories == ("math.PR",) and both.year == 2020  # the equation's own (it is filtered by them)
    assert both.highlights == {"title": ["<em>T</em>"], "context": ["<em>c</em>"]} and both.mathml is None
    assert equation_hit(fused("p1:0", 0.5, "formula"), document).matched == "formula"
    text = equation_hit(fused("p1:0", 0.5, "words"), document)
    assert text.matched == "text" and text.formula_score is None
    assert text.title == "" and text.authors == ()  # its paper not found: the hit shows its id
    assert text.status == "ok"  # how its LaTeX converted: a document without one is an older writer's, converted
    diagram = equation_hit(
        fused("p1:1", 0.5, "words"), raw("p1:1", "p1", latex=r"\xymatrix{A \ar[r] & B}", status="diagram")
    )
    assert diagram.status == "diagram" and diagram.mathml is None


def test_a_long_abstract_is_cut_at_a_word_boundary():
    words = "word " * 100
    hit = equation_hit(fused("p1:0", 1.0, "words"), raw("p1:0", "p1"), (), paper("p1", abstract=words))
    assert hit.abstract.endswith(" ...") and len(hit.abstract) <= ABSTRACT_SNIPPET + 4
    assert not hit.abstract[: -len(" ...")].endswith(" ")


RANKING = [fused(f"p{p}:{n}", 1.0 - 0.1 * i, "formula") for i, (p, n) in enumerate([(1, 0), (2, 0), (1, 1), (3, 0)])]
PAPER_OF = {item.doc_id: item.doc_id.split(":")[0] for item in RANKING}


def test_select_page_per_equation_slices_the_ranking():
    items, total = select_page(RANKING, PAPER_OF, HybridQuery(size=3), text_total=0)
    assert [item.doc_id for item in items] == ["p1:0", "p2:0", "p1:1"] and total == 4
    items, total = select_page(RANKING, PAPER_OF, HybridQuery(size=3, page=2), text_total=9)
    assert [item.doc_id for item in items] == ["p3:0"] and total == 9  # BM25 counted more hits than were fused
    assert select_page(RANKING, PAPER_OF, HybridQuery(size=3, page=3), text_total=0) == ([], 4)


def test_select_page_grouped_slices_papers_in_order_of_their_best_equation():
    items, total = select_page(RANKING, PAPER_OF, HybridQuery(size=2, group_by_paper=True), text_total=50)
    assert [item.doc_id for item in items] == ["p1:0", "p1:1", "p2:0"] and total == 3  # papers, not equations
    items, _ = select_page(RANKING, PAPER_OF, HybridQuery(size=2, page=2, group_by_paper=True), text_total=0)
    assert [item.doc_id for item in items] == ["p3:0"]


def test_group_hits_keeps_the_order_of_each_papers_best_hit():
    hits = [
        equation_hit(
            item, raw(item.doc_id, PAPER_OF[item.doc_id]), (), paper(PAPER_OF[item.doc_id], title=PAPER_OF[item.doc_id])
        )
        for item in RANKING
    ]
    groups = group_hits(hits)
    assert [group.paper_id for group in groups] == ["p1", "p2", "p3"]
    assert [hit.eq_id for hit in groups[0].equations] == ["p1:0", "p1:1"]
    assert groups[0].score == hits[0].score and groups[0].title == "p1"
    assert group_hits([]) == []


def test_a_hit_whose_paper_the_words_found_says_text_among_its_channels():
    item = Fused("p1:0", 0.9, {"formula": 0.9, "paper": 3.0}, {"formula": 1})
    hit = equation_hit(item, raw("p1:0", "p1"), ("structure",))
    assert hit.channels == ("structure", "text") and hit.matched == "both"
    assert equation_hit(fused("p1:0", 0.9, "formula"), raw("p1:0", "p1"), ("structure",)).channels == ("structure",)
