"""The document shape, without a node: ids, the paper document and the equation documents of an extracted paper
(field by field and in order: Elasticsearch keeps a source as it was sent), the year, and vectors replaced."""

from __future__ import annotations

from eqsearch.engine.index import (
    FORWARD_INDEX_FIELD,
    SIZE_FIELD,
    SPANS_FIELD,
    STRUCTURE_FIELD,
    VECTOR_FIELD,
    equation_id,
    inline_id,
    inline_indexable,
    paper_documents,
    paper_fields,
    paper_key,
    paper_year,
    stored_equation_ids,
    with_structure,
    with_vector,
)
from eqsearch.engine.index.forward_index import forward_index_value
from eqsearch.engine.index.mappings import span_term
from eqsearch.engine.model import formula_structure
from eqsearch.ingest.records import Equation, InlineFormula, Issue, Paper, Section


def small_paper(**changes: object) -> Paper:
    """A paper of two sections: a front matter without equations, and "Main" with one converted equation and one
    KaTeX refused."""
    paper = Paper(
        id="2401.00001",
        source="papers.jsonl:1",
        kind="jsonl",
        version=2,
        title="On sums",
        abstract=None,
        authors=["A. Author", "B. Author"],
        metadata={"categories": "math.CO math.NT", "published": "Mon, 1 Jan 2024 00:00:00 GMT", "abstract": "Sums."},
        citations=["2301.00002", "2301.00003", "2301.00002"],
    )
    for name, value in changes.items():
        setattr(paper, name, value)
    converted = Equation(
        number=0,
        latex="x^2 + y^2",
        environment="equation",
        section=1,
        offset=120,
        context_before="Let",
        context_after="hold.",
        status="ok",
        mathml="<math><msup><mi>x</mi><mn>2</mn></msup></math>",
    )
    refused = Equation(
        number=1, latex=r"\frac{1}{", environment="align*", section=1, offset=200, status="failed", reason="parse-error"
    )
    paper.sections = [
        Section(index=0, level=0, kind="front", title=""),
        Section(index=1, level=2, kind="section", title="Main", equations=[converted, refused]),
    ]
    return paper


SHARED = {
    "paper_id": "2401.00001",
    "paper_key": "2401.00001v2",
    "title": "On sums",
    "abstract": "Sums.",
    "authors": ["A. Author", "B. Author"],
    "categories": ["math.CO", "math.NT"],
    "year": 2024,
    "citations_out": ["2301.00002", "2301.00003"],
    "source_version": 2,
    "source": "papers.jsonl:1",
    "job_id": "job-1",
}
#: What each equation carries of its paper: the fields that filter it, never its title, abstract or citations.
OWN = {k: v for k, v in SHARED.items() if k not in ("title", "abstract", "authors", "citations_out", "source")}


def test_ids_are_the_paper_key_and_the_equation_number():
    assert paper_key("2401.00001", 2) == "2401.00001v2"
    assert paper_key("latex/heat", None) == "latex/heat"
    assert equation_id("2401.00001v2", 7) == "2401.00001v2:7"
    assert paper_key("2401.00001", 2) == small_paper().key  # the same key as ingest's records
    assert stored_equation_ids("2401.00001", {"paper_key": "2401.00001v2", "equation_count": 2}) == [
        "2401.00001v2:0",
        "2401.00001v2:1",
    ]
    assert stored_equation_ids("latex/heat", {"equation_count": 1}) == ["latex/heat:0"]
    assert stored_equation_ids("latex/empty", {}) == []


def test_the_paper_and_equation_documents_of_a_paper():
    paper_document, equation_documents = paper_documents(
        small_paper(), job_id="job-1", indexed_at="2026-01-02T03:04:05.678+00:00", vectors={0: [0.5, -0.5]}
    )
    assert paper_document == {
        **SHARED,
        "kind": "jsonl",
        "status": "ok",
        "equation_count": 2,
        "inline_count": 0,
        "inline_numbers": [],
        "indexed_at": "2026-01-02T03:04:05.678+00:00",
        "sections": [
            {"index": 0, "level": 0, "title": "", "equations": 0, "inline": 0},
            {"index": 1, "level": 2, "title": "Main", "equations": 2, "inline": 0},
        ],
    }
    paper_fields_in_order = ["kind", "status", "equation_count", "inline_count", "inline_numbers", "indexed_at"]
    assert list(paper_document) == [*SHARED, *paper_fields_in_order, "sections"]
    converted, refused = equation_documents
    assert converted == {
        **OWN,
        "eq_id": "2401.00001v2:0",
        "number": 0,
        "inline": False,
        "latex": "x^2 + y^2",
        "mathml": "<math><msup><mi>x</mi><mn>2</mn></msup></math>",
        "environment": "equation",
        "status": "ok",
        "reason": None,
        "section": 1,
        "section_title": "Main",
        "context": "Let hold.",
        # the structure of the MathML: x with the superscript 2, also as "a variable with a number above"
        STRUCTURE_FIELD: "V:x N:2 V:x|N:2|sup V:*|N:*|sup",
        SPANS_FIELD: sorted(
            span_term(s) for s in formula_structure("<math><msup><mi>x</mi><mn>2</mn></msup></math>").spans
        ),
        SIZE_FIELD: 2,  # symbols: x and 2
        FORWARD_INDEX_FIELD: forward_index_value(["V:x", "N:2", "V:x|N:2|sup", "V:*|N:*|sup"]),
        "indexed_at": "2026-01-02T03:04:05.678+00:00",
        VECTOR_FIELD: [0.5, -0.5],
    }
    equation_fields = ["eq_id", "number", "inline", "latex", "mathml", "environment", "status", "reason", "section"]
    equation_fields += ["section_title", "context", STRUCTURE_FIELD, SPANS_FIELD, SIZE_FIELD, FORWARD_INDEX_FIELD]
    equation_fields += ["indexed_at"]
    assert list(converted) == [*OWN, *equation_fields, VECTOR_FIELD]
    assert refused == {
        **OWN,
        "eq_id": "2401.00001v2:1",
        "number": 1,
        "inline": False,
        "latex": r"\frac{1}{",
        "mathml": None,
        "environment": "align*",
        "status": "failed",
        "reason": "parse-error",
        "section": 1,
        "section_title": "Main",
        "context": "",
        # KaTeX refused it: the structure is read from the LaTeX itself
        STRUCTURE_FIELD: "S:frac N:1 S:frac|N:1|num S:frac|N:*|num",
        SPANS_FIELD: sorted(span_term(s) for s in formula_structure(None, r"\frac{1}{").spans),
        SIZE_FIELD: 2,
        FORWARD_INDEX_FIELD: forward_index_value(["S:frac", "N:1", "S:frac|N:1|num", "S:frac|N:*|num"]),
        "indexed_at": "2026-01-02T03:04:05.678+00:00",
    }  # no vector: found by its structure and text only
    assert list(refused) == [*OWN, *equation_fields]


def test_with_structure_makes_the_structural_fields_anew_from_the_stored_formula():
    stored = {"eq_id": "a:0", "latex": "x^2", "mathml": "<math><msup><mi>x</mi><mn>2</mn></msup></math>"}
    assert with_structure(stored)[STRUCTURE_FIELD] == "V:x N:2 V:x|N:2|sup V:*|N:*|sup"
    assert with_structure({**stored, STRUCTURE_FIELD: "old"})[STRUCTURE_FIELD] != "old"
    assert with_structure(stored)[SIZE_FIELD] == 2  # a document written before sizes gets one
    # and one written before the forward index gets its terms, counted (mapping version 7)
    assert with_structure(stored)[FORWARD_INDEX_FIELD] == forward_index_value(
        ["V:x", "N:2", "V:x|N:2|sup", "V:*|N:*|sup"]
    )
    assert with_structure({"eq_id": "b:0", "latex": "y_1", "mathml": None})[STRUCTURE_FIELD] == (
        "V:y N:1 V:y|N:1|sub V:*|N:*|sub"
    )


def test_paper_fields_fall_back_on_metadata_and_keep_a_paper_without_a_version_unversioned():
    paper = small_paper(version=None, title=None, abstract="Own abstract.", metadata={"title": "From metadata"})
    assert paper_fields(paper, "job-2") == {
        **SHARED,
        "paper_key": "2401.00001",
        "title": "From metadata",
        "abstract": "Own abstract.",
        "categories": [],
        "year": 2024,  # from the new-style arXiv id
        "source_version": None,
        "job_id": "job-2",
    }


def test_paper_year_reads_metadata_then_the_arxiv_id():
    def year(paper_id: str = "latex/heat", **metadata: object) -> int | None:
        return paper_year(small_paper(id=paper_id, metadata=metadata))

    assert year(published="Tue, 3 Mar 1998 10:00:00 GMT", update_date="2001-05-01") == 1998
    assert year(update_date="2001-05-01") == 2001
    assert year(year="1987") == 1987 and year(year=1987) == 1987
    assert year("2113.00001") is None  # month 13: not an arXiv id
    assert year("1905.12345") == 2019
    assert year() is None


def test_a_failed_paper_with_sections_still_gets_its_documents():
    paper = small_paper(status="failed", error=Issue("timeout", "over the time budget"))
    paper_document, equation_documents = paper_documents(paper, job_id="j", indexed_at="t", vectors={})
    assert paper_document["status"] == "failed" and len(equation_documents) == 2
    assert all(VECTOR_FIELD not in document for document in equation_documents)


def test_with_vector_replaces_or_removes_the_vector():
    document = {"eq_id": "p:0", VECTOR_FIELD: [1.0], "mathml": "<math/>"}
    assert with_vector(document, [2.0]) == {"eq_id": "p:0", "mathml": "<math/>", VECTOR_FIELD: [2.0]}
    assert with_vector(document, None) == {"eq_id": "p:0", "mathml": "<math/>"}
    assert document[VECTOR_FIELD] == [1.0]  # the original is left as it was


def with_inline(paper: Paper) -> Paper:
    """``paper`` with three inline formulas in "Main": a lone symbol (left out), a formula of three symbols that
    converted, and one KaTeX refused (indexed all the same, by its LaTeX's structure and its context)."""
    paper.sections[1].inline = [
        InlineFormula(number=0, latex="x", offset=130, length=3),
        InlineFormula(
            number=1,
            latex="a+b",
            offset=140,
            length=5,
            context_before="where",
            context_after="is the sum",
            status="ok",
            mathml="<math><mi>a</mi><mo>+</mo><mi>b</mi></math>",
        ),
        InlineFormula(number=2, latex=r"\frac{a}{b", offset=160, length=11, delimiter="\\(", status="failed"),
    ]
    return paper


def test_inline_ids_and_the_skip_rule():
    assert inline_id("2401.00001v2", 7) == "2401.00001v2:i7"
    assert inline_id("2401.00001v2", 7) != equation_id("2401.00001v2", 7)  # displays and inline never collide
    # a lone symbol, a value, or two symbols name something; three symbols or more may state something
    assert not any(inline_indexable(latex) for latex in ("x", "n", "1", r"\alpha", "N_e", "r^2", r"\mathbb{R}^n"))
    assert all(inline_indexable(latex) for latex in ("a+b", "K=4", r"e^{i\pi}", r"\sum_{i=1}^n x_i", "f(x)"))


def test_inline_formulas_get_documents_of_their_own_marked_inline():
    paper_document, documents = paper_documents(
        with_inline(small_paper()), job_id="job-1", indexed_at="t", vectors={}, inline_vectors={1: [1.0, 0.0]}
    )
    assert paper_document["inline_count"] == 2 and paper_document["inline_numbers"] == [1, 2]
    assert paper_document["sections"][1] == {"index": 1, "level": 2, "title": "Main", "equations": 2, "inline": 2}
    assert [(d["eq_id"], d["inline"]) for d in documents] == [
        ("2401.00001v2:0", False),
        ("2401.00001v2:1", False),
        ("2401.00001v2:i1", True),
        ("2401.00001v2:i2", True),
    ]
    summed = documents[2]
    assert summed == {
        **OWN,
        "eq_id": "2401.00001v2:i1",
        "number": 1,
        "inline": True,
        "latex": "a+b",
        "mathml": "<math><mi>a</mi><mo>+</mo><mi>b</mi></math>",
        "environment": "$",
        "status": "ok",
        "reason": None,
        "section": 1,
        "section_title": "Main",
        "context": "where is the sum",
        STRUCTURE_FIELD: formula_structure("<math><mi>a</mi><mo>+</mo><mi>b</mi></math>").text,
        SPANS_FIELD: sorted(
            span_term(s) for s in formula_structure("<math><mi>a</mi><mo>+</mo><mi>b</mi></math>").spans
        ),
        SIZE_FIELD: 3,
        FORWARD_INDEX_FIELD: forward_index_value(
            formula_structure("<math><mi>a</mi><mo>+</mo><mi>b</mi></math>").tokens
        ),
        "indexed_at": "t",
        VECTOR_FIELD: [1.0, 0.0],
    }
    assert documents[3]["environment"] == "\\(" and VECTOR_FIELD not in documents[3]
    assert documents[3][STRUCTURE_FIELD] == formula_structure(None, r"\frac{a}{b").text
    # every writer enumerates the same ids from the stored paper document: displays, then the indexed inline ones
    assert stored_equation_ids(paper_document["paper_id"], paper_document) == [d["eq_id"] for d in documents]


def test_inline_documents_can_be_turned_off_and_are_deterministic():
    paper = with_inline(small_paper())
    off, documents = paper_documents(paper, job_id="j", indexed_at="t", vectors={}, inline=False)
    assert off["inline_count"] == 0 and off["inline_numbers"] == [] and len(documents) == 2
    assert stored_equation_ids(off["paper_id"], off) == ["2401.00001v2:0", "2401.00001v2:1"]
    first = paper_documents(paper, job_id="j", indexed_at="t", vectors={})
    again = paper_documents(with_inline(small_paper()), job_id="j", indexed_at="t", vectors={})
    assert first == again


def test_with_structure_marks_documents_written_before_inline_formulas_as_displays():
    stored = {"eq_id": "a:0", "latex": "x^2", "mathml": None}
    assert with_structure(stored)["inline"] is False
    assert with_structure({**stored, "eq_id": "a:i0", "inline": True})["inline"] is True
