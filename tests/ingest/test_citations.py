from eqsearch.ingest.citations import (
    arxiv_id_from_filename,
    bib_files,
    citations_from_bib,
    cited_keys,
    find_arxiv_ids,
    split_bibitems,
)


def test_new_and_old_style_ids_normalised_and_deduplicated():
    text = (
        "arXiv:1901.00001v2; https://arxiv.org/abs/1502.12345v1 arxiv.org/pdf/0801.1234v3.pdf "
        "10.48550/arXiv.2101.00002 hep-th/9901001v3 math.AG/0101001 cond-mat/0511234 "
        "again arXiv:1901.00001 and HEP-TH/9901001"
    )
    assert find_arxiv_ids(text) == [
        "1901.00001",
        "1502.12345",
        "0801.1234",
        "2101.00002",
        "hep-th/9901001",
        "math/0101001",
        "cond-mat/0511234",
    ]


def test_numbers_that_are_not_ids():
    # month 34, 4 digits after 2015, 5 digits before 2015, an old id from 2012, a decimal
    assert find_arxiv_ids("pp. 1234.5678, 1601.1234, 1201.12345, astro-ph/1201001, 3.1415.92653") == []


def test_ids_from_file_names():
    assert arxiv_id_from_filename("1901/1901.00001.gz") == ("1901.00001", None)
    assert arxiv_id_from_filename("0704.0001v2.tar.gz") == ("0704.0001", 2)
    assert arxiv_id_from_filename("9901/hep-th9901001.gz") == ("hep-th/9901001", None)
    assert arxiv_id_from_filename("notes.tex") is None


def test_bibitems_and_biblatex_entries():
    body = r"\begin{thebibliography}{9}\bibitem{a} X, arXiv:1901.00001. \bibitem[B]{b} Y\end{thebibliography}"
    assert len(split_bibitems(body)) == 2
    bbl = r"\entry{a}{article}{}\field{eprint}{1905.01234}\endentry\entry{b}{book}{}\endentry"
    assert len(split_bibitems(bbl)) == 2


def test_bib_entries_filtered_by_cited_keys():
    bib = """@string{x = "y"}
@article{alpha, eprint = {2101.12345}, archivePrefix = {arXiv}}
@misc{beta, eprint = "hep-ph/0101234v2"}
@article{unused, eprint = {1811.99999}}
"""
    keys = cited_keys(r"\cite{alpha} \citep[p.~3]{beta,gamma}")
    assert keys == {"alpha", "beta", "gamma"}
    assert citations_from_bib([bib], keys) == (["2101.12345", "hep-ph/0101234"], 2)
    assert citations_from_bib([bib], {"*"})[1] == 3
    assert bib_files(r"\bibliography{refs,more}\addbibresource{x.bib}") == ["refs.bib", "more.bib", "x.bib"]
