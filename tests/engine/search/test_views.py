"""The paper and equation views on a real node: a paper with its sections, equations and citations both ways; an
equation's stored document without its vectors; absent ids."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.es


def ids(results) -> list[str]:
    return [hit.eq_id for hit in results.hits]


def test_get_paper_with_sections_and_citations(service):
    paper = service.get_paper("2101.00001")
    assert paper is not None
    assert [s["title"] for s in paper["sections"]] == ["Rest energy"]
    assert [eq["latex"] for eq in paper["sections"][0]["equations"]] == ["E = mc^2", "E^2 = (pc)^2 + (mc^2)^2"]
    assert {c["paper_id"] for c in paper["cited_by"]} == {"1905.00002", "2203.00004"}
    citing = service.get_paper("2203.00004")
    assert citing["citations_out"] == [
        {"paper_id": "2101.00001", "indexed": True, "title": "Mass-energy equivalence in special relativity"},
        {"paper_id": "1703.00003", "indexed": True, "title": "Gaussian integrals and the normal distribution"},
    ]
    assert service.get_paper("0000.00000") is None
    equation = service.get_equation("2101.00001:0")
    assert equation["latex"] == "E = mc^2" and "vector" not in equation
    assert service.get_equation("nope") is None
