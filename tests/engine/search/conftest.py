"""The search service's tests on a real node share one small hand-built corpus (`corpus`: four papers, their
equations through the real KaTeX converter, `HashingEncoder` vectors) and a service over it (`service`)."""

from __future__ import annotations

import pytest
from eqsearch.engine.index.admin import IndexAdmin
from eqsearch.engine.index.bulk import bulk_index
from eqsearch.engine.index.mappings import PAPER_ONLY_FIELDS, IndexOptions
from eqsearch.engine.search.service import SearchService
from hashing_encoder import HashingEncoder

PAPERS = [
    {
        "paper_id": "2101.00001",
        "title": "Mass-energy equivalence in special relativity",
        "abstract": "We revisit the rest energy of a massive body.",
        "categories": ["physics.gen-ph"],
        "year": 2021,
        "citations_out": [],
        "sections": [(1, "Rest energy", ["E = mc^2", "E^2 = (pc)^2 + (mc^2)^2"])],
        "context": "the famous relation between energy and mass",
    },
    {
        "paper_id": "1905.00002",
        "title": "The quantum harmonic oscillator",
        "abstract": "Ladder operators and the spectrum of the oscillator.",
        "categories": ["quant-ph"],
        "year": 2019,
        "citations_out": ["2101.00001"],
        "sections": [
            (1, "Hamiltonian", [r"H = \frac{p^2}{2m} + \frac{1}{2} m \omega^2 x^2"]),
            (2, "Spectrum", [r"E_n = \hbar \omega \left(n + \frac{1}{2}\right)"]),
        ],
        "context": "the energy levels of a particle in a quadratic potential",
    },
    {
        "paper_id": "1703.00003",
        "title": "Gaussian integrals and the normal distribution",
        "abstract": "A short note on the Gaussian integral.",
        "categories": ["math.PR"],
        "year": 2017,
        "citations_out": [],
        "sections": [
            (1, "The integral", [r"\int_{-\infty}^{\infty} e^{-x^2} \, dx = \sqrt{\pi}"]),
            (2, "Density", [r"f(x) = \frac{1}{\sqrt{2\pi}} e^{-x^2/2}"]),
        ],
        "context": "the density of a standard normal random variable",
    },
    {
        "paper_id": "2203.00004",
        "title": "Pythagorean triples",
        "abstract": "Integer solutions of the Pythagorean equation.",
        "categories": ["math.NT"],
        "year": 2022,
        "citations_out": ["2101.00001", "1703.00003"],
        "sections": [(1, "Triples", ["a^2 + b^2 = c^2", "x^2 + y^2 = z^2"])],
        "context": "right triangles with integer sides",
    },
]


@pytest.fixture(scope="module")
def converter():
    from eqsearch.engine.latex.converter import KatexConverter

    with KatexConverter() as katex:
        yield katex


@pytest.fixture
def corpus(es_client, index_name, converter) -> str:
    """The four papers indexed under a fresh prefix; returns the prefix."""
    encoder = HashingEncoder()
    admin = IndexAdmin(es_client, index_name)
    admin.ensure(IndexOptions(dims=encoder.dim, similarity=encoder.similarity))
    actions = []
    for paper in PAPERS:
        shared = {k: paper[k] for k in ("paper_id", "title", "abstract", "categories", "year", "citations_out")}
        number = 0
        equations = []
        for section, title, latexes in paper["sections"]:
            for latex in latexes:
                mathml = converter.convert(latex).mathml
                assert mathml is not None, latex
                equations.append(
                    {
                        **{k: v for k, v in shared.items() if k not in PAPER_ONLY_FIELDS},
                        "eq_id": f"{paper['paper_id']}:{number}",
                        "paper_key": paper["paper_id"],
                        "number": number,
                        "latex": latex,
                        "mathml": mathml,
                        "section": section,
                        "section_title": title,
                        "context": paper["context"],
                        "vector": encoder.encode([mathml])[0].tolist(),
                    }
                )
                number += 1
        actions += [{"_index": f"{index_name}-equations", "_id": eq["eq_id"], "_source": eq} for eq in equations]
        outline = [{"index": s, "title": t} for s, t, _ in paper["sections"]]
        actions.append(
            {
                "_index": f"{index_name}-papers",
                "_id": paper["paper_id"],
                "_source": {**shared, "paper_key": paper["paper_id"], "equation_count": number, "sections": outline},
            }
        )
    report = bulk_index(es_client, actions, refresh="wait_for")
    assert report.failed == 0, report.failures
    return index_name


@pytest.fixture
def service(es_client, corpus, converter) -> SearchService:
    return SearchService(es_client, HashingEncoder(), converter, index_prefix=corpus)
