"""Where a hit comes from, read off its ids (`eqsearch.webui.provenance`)."""

from __future__ import annotations

from eqsearch.webui.provenance import Provenance, provenance, source_version


def test_arxiv_papers_link_to_their_version():
    assert provenance("2002.00002", "3") == Provenance("arXiv", "2002.00002v3", "https://arxiv.org/abs/2002.00002v3")
    assert provenance("math/0101001").url == "https://arxiv.org/abs/math/0101001"
    assert provenance("math.AG/0101001").collection == "arXiv"


def test_manual_pages_and_modules_name_their_collection_without_a_link():
    page = provenance("python-statsmodels-doc/examples/notebooks/generated/ols")
    assert page == Provenance("python-statsmodels-doc", "examples/notebooks/generated/ols", None)
    assert provenance("py:scipy.stats._continuous_distns") == Provenance(
        "Python docstrings", "scipy.stats._continuous_distns"
    )
    assert provenance("lonely") == Provenance("documents", "lonely")


def test_the_source_version_comes_from_the_equation_id():
    assert source_version("2002.00002", "2002.00002v3:4") == "3"
    assert source_version("2002.00002", "2002.00002:i12") is None
    assert source_version("sagemath-doc/a/b", "sagemath-doc/a/b:0") is None
    assert source_version("x", None) is None
