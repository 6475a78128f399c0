"""The keyword query set of the §6.3 search-engine study: its file, its conversion with the real KaTeX, the collection
read from papers, exact figures on a corpus whose relevance does not depend on the ranking, and the command."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from eqsearch.engine.latex.converter import KatexConverter
from eqsearch.engine.model.bundle import default_bundle_path
from eqsearch.engine.model.encoder import load_encoder
from eqsearch.engine.model.featurize import featurize_mathml
from eqsearch.evaluation.keywords import (
    DEFAULT_QUERY_SET,
    FORMAT_LINE,
    KeywordQueryError,
    build_collection,
    keyword_study,
    read_keyword_queries,
    top_results,
)

HEADER = f"{FORMAT_LINE}\nid\tlatex\tkeywords\tnote\n"


def _paper(pid: str, title: str, equations: list[tuple[str, str]]) -> dict:
    """A papers-JSONL record with one section holding (latex, context) equations, converted with the real KaTeX."""
    with KatexConverter() as converter:
        results = converter.convert_many([(latex, "equation") for latex, _ in equations])
    return {
        "id": pid,
        "title": title,
        "sections": [
            {
                "index": 0,
                "title": "",
                "equations": [
                    {"id": f"{pid}:{n}", "number": n, "display": True, "mathml": r.mathml, "context_before": ctx}
                    for n, ((_, ctx), r) in enumerate(zip(equations, results, strict=True))
                ],
            }
        ],
    }


def test_shipped_set_reads_and_converts_entirely_with_katex() -> None:
    queries = read_keyword_queries()
    assert len(queries) == 42 and len({q.id for q in queries}) == 42
    assert all(q.keywords for q in queries)
    assert queries[0].id == "normal-density" and queries[0].keywords == ("normal", "gaussian")
    with KatexConverter() as converter:
        results = converter.convert_many([(q.latex, "equation") for q in queries])
    assert [(q.id, r.status) for q, r in zip(queries, results, strict=True) if r.status != "ok"] == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id\tlatex\tkeywords\n", "expected '# eqsearch keyword query set, format version 1'"),
        (f"{FORMAT_LINE}\nid\tlatex\n", ":2: expected the header"),
        (HEADER + "Bayes Law\tx\tbayes\n", ":3: the id 'Bayes Law' is not a slug"),
        (HEADER + "bayes\t \tbayes\n", ":3: the LaTeX field is empty"),
        (HEADER + "bayes\tx\t | \n", ":3: no keyword"),
        (HEADER + "bayes\tx\n", ":3: expected id<TAB>latex<TAB>keywords"),
        (HEADER + "bayes\tx\tb\nbayes\ty\tb\n", ":4: the id 'bayes' is already used on line 3"),
        (HEADER, "no query"),
    ],
)
def test_reader_rejects_malformed_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "q.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(KeywordQueryError, match=message):
        read_keyword_queries(path)


def test_top_results_best_first_ties_by_index() -> None:
    scores = np.array([0.5, 0.9, 0.5, 0.1, 0.9])
    assert top_results(scores, 3).tolist() == [1, 4, 0]
    assert top_results(scores, 10).tolist() == [1, 4, 0, 2, 3]


def test_study_figures_on_a_corpus_where_every_ranking_scores_the_same(tmp_path: Path) -> None:
    """Two of four equations lie in text holding a keyword: P@k = 2/k whatever the order, for every representation;
    the inline and unconverted equations are counted, not searched."""
    papers = [
        _paper("a", "Distributions", [("x^2 + y^2", "the normal law"), ("\\frac{1}{1+e^{-t}}", "a logistic curve")]),
        _paper("b", "Gaussian processes", [("\\int_0^1 f", "an integral")]),
        _paper("c", "Trees", [("a_n = a_{n-1} + 1", "a recursion")]),
    ]
    papers[2]["sections"][0]["equations"].append({"id": "c:9", "display": False, "mathml": "<math/>"})
    papers[2]["sections"][0]["equations"].append({"id": "c:10", "display": True, "mathml": None})
    encoder = load_encoder(default_bundle_path())  # the graph network: the study featurizes for it
    collection = build_collection(papers, partial(featurize_mathml, vocab=encoder.vocabulary))
    assert collection.ids == ["a:0", "a:1", "b:0", "c:0"]
    assert collection.skipped == {"inline": 1, "no_mathml": 1}
    assert "Gaussian processes" in collection.texts[2] and "the normal law" in collection.texts[0]
    queries_file = tmp_path / "q.tsv"
    queries_file.write_text(HEADER + "gauss\te^{-x^2/2}\tnormal|gaussian\tthe bell curve\n", encoding="utf-8")
    with KatexConverter() as converter:
        report = keyword_study(read_keyword_queries(queries_file), collection, encoder, converter)
    assert report.evaluated == 1 and report.collection == 4
    for figures in report.figures.values():
        assert (figures.p_at_10, figures.p_at_100, figures.p_at_1000) == pytest.approx((0.2, 0.02, 0.002))
        assert 5 / 6 - 1e-9 <= figures.umap <= 2.0  # two relevant results: 1 + 1 at best, 1/3 + 2/4 at worst
    assert set(report.per_query) == {"gauss"}


def test_command_end_to_end_without_torch(tmp_path: Path) -> None:
    corpus = tmp_path / "papers.jsonl.gz"
    papers = [_paper("p", "Poisson processes", [("e^{-\\lambda} \\lambda^k / k!", "counts"), ("x+1", "")])]
    corpus.write_bytes(gzip.compress("".join(json.dumps(p) + "\n" for p in papers).encode()))
    queries = tmp_path / "q.tsv"
    queries.write_text(HEADER + "poisson\t\\frac{\\mu^n e^{-\\mu}}{n!}\tpoisson\nbroken\t\\frac{1}{\tx\n")
    out_json = tmp_path / "study.json"
    code = (
        "import sys\n"
        "from eqsearch.main import main\n"
        f"rc = main(['evaluate', 'keywords', {str(queries)!r}, '--corpus', {str(corpus)!r}, '--per-query', "
        f"'--quiet', '--json', {str(out_json)!r}])\n"
        "print('torch imported:', 'torch' in sys.modules)\n"
        "sys.exit(rc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "2 queries, 1 searched; 2 equations of" in out.stdout
    assert "not searched: broken (line 4): parse-error" in out.stdout
    assert "| representation | P@10 | P@100 | P@1000 | uMAP |" in out.stdout and "| poisson |" in out.stdout
    assert out.stdout.strip().endswith("torch imported: False")
    report = json.loads(out_json.read_text())
    assert report["figures"]["bag_of_words"]["p_at_10"] == pytest.approx(0.2)


def test_the_shipped_set_is_the_default(tmp_path: Path) -> None:
    assert DEFAULT_QUERY_SET.is_file()
    assert read_keyword_queries(DEFAULT_QUERY_SET)[-1].id == "bayes"
