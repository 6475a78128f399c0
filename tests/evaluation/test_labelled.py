"""The labelled equation set: its file, its conversion with the real KaTeX, the figures on hand-built similarities,
and the shipped bundle end to end (TREC files included)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from eqsearch.engine.index.vectors import query_vector, stored_vector
from eqsearch.engine.latex.converter import KatexConverter
from eqsearch.evaluation.labelled import (
    encode_labelled_set,
    labelled_report,
    leave_one_out_run,
    retrieval_figures,
    same_category_qrels,
    write_trec_files,
)
from eqsearch.evaluation.labelled_set import (
    DEFAULT_LABELLED_SET,
    FORMAT_LINE,
    LabelledEquation,
    LabelledSetError,
    read_labelled_set,
)
from eqsearch.evaluation.metrics import cosine_matrix
from eqsearch.evaluation.trec import evaluate_run, read_qrels, read_run, read_topics

HEADER = f"{FORMAT_LINE}\n# a comment\ncategory\tlatex\tnote\n"


def _write(path: Path, body: str) -> Path:
    path.write_text(HEADER + body, encoding="utf-8")
    return path


def test_shipped_set_reads_with_ids_per_category() -> None:
    equations = read_labelled_set()
    categories = {e.category for e in equations}
    assert len(equations) == 156 and len(categories) == 22
    assert all(sum(e.category == c for e in equations) >= 6 for c in categories)
    assert len({e.id for e in equations}) == len(equations)
    assert equations[0].id == "bayes-1" and equations[2].note.startswith("astrophysics")


def test_shipped_set_converts_entirely_with_katex() -> None:
    equations = read_labelled_set(DEFAULT_LABELLED_SET)
    with KatexConverter() as converter:
        results = converter.convert_many([(e.latex, "equation") for e in equations])
    not_ok = [(e.id, r.status, r.message) for e, r in zip(equations, results, strict=True) if r.status != "ok"]
    assert not_ok == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("category\tlatex\nbayes\tx\n", "expected '# eqsearch labelled equation set, format version 1'"),
        (f"{FORMAT_LINE}\ncat\tlatex\n", r":2: expected the header"),
        (HEADER + "Bayes Law\tx\n", r":4: the category 'Bayes Law' is not a slug"),
        (HEADER + "bayes\t \tnote\n", r":4: the LaTeX field is empty"),
        (HEADER + "bayes\tx\ty\tz\n", r":4: expected category<TAB>latex\[<TAB>note\], got 4"),
        (HEADER + "bayes\tx\nvariance\ty\nbayes\tx\n", r":6: repeats line 4"),
        (HEADER + "bayes\tx\nbayes\ty\n", "the figures need at least two categories"),
    ],
)
def test_reader_rejects_malformed_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "set.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LabelledSetError, match=message):
        read_labelled_set(path)


def test_retrieval_figures_by_hand() -> None:
    # 0, 1 in category a; 2, 3 in b. Leave-one-out rankings: 0 -> 1 2 3, 1 -> 2 0 3, 2 -> 1 0 3, 3 -> 2 1 0.
    sim = np.array(
        [
            [1.0, 0.9, 0.5, 0.1],
            [0.9, 1.0, 0.95, 0.2],
            [0.5, 0.95, 1.0, 0.3],
            [0.1, 0.2, 0.3, 1.0],
        ]
    )
    ids, labels = ["a-1", "a-2", "b-1", "b-2"], ["a", "a", "b", "b"]
    run = leave_one_out_run(sim, ids)
    assert [doc for doc, _ in run["a-2"]] == ["b-1", "a-1", "b-2"]
    assert same_category_qrels(ids, labels)["b-1"] == {"a-1": 0.0, "a-2": 0.0, "b-2": 3.0}
    f = retrieval_figures(sim, ids, labels)
    assert f.accuracy == pytest.approx(2 / 4)  # 0 and 3 find their partner first
    assert f.ranking == pytest.approx((2 + 1 + 0 + 2) / 8)  # wins over the 2 negatives of each anchor
    assert f.p_at_5 == pytest.approx(1 / 5)  # one relevant result per topic, within the first five
    assert f.map == pytest.approx((1 + 1 / 2 + 1 / 3 + 1) / 4)
    assert f.umap == pytest.approx(f.map)  # one relevant per topic: uAP = AP


def test_shipped_bundle_on_a_small_set_reports_failures_and_writes_trec_files(tmp_path: Path) -> None:
    from eqsearch.engine.model.encoder import load_encoder
    from eqsearch.engine.search import get_ranker

    path = _write(
        tmp_path / "set.tsv",
        "euler\te^{i\\pi} + 1 = 0\n"
        "euler\te^{ix} = \\cos x + i \\sin x\n"
        "euler\t\\frac{e^{i\\pi}}{\tbroken: an unclosed group\n"
        "variance\t\\operatorname{Var}(X) = \\mathbb{E}[X^2] - \\mathbb{E}[X]^2\n"
        "variance\t\\sigma^2 = \\frac{1}{N} \\sum_i (x_i - \\mu)^2\n"
        "variance\t\\mysterymacro{X} = \\sigma^2\tunknown macro: approximate\n",
    )
    equations = read_labelled_set(path)
    encoder = load_encoder()
    with KatexConverter() as converter:
        encoded = encode_labelled_set(equations, encoder, converter)
    report = labelled_report(encoded, equations, path, encoder.manifest.path)
    assert (report.equations, report.categories, report.evaluated) == (6, 2, 5)
    assert [(f.id, f.line, f.reason) for f in report.failures] == [("euler-3", 6, "parse-error")]
    assert report.approximate == ("variance-3",)
    assert set(report.figures) == {"model", "model_cosine", "bag_of_words", "latex_tfidf"}
    assert report.per_category["euler"]["equations"] == 2.0
    vectors = encoder.encode(_mathml(encoded.equations))  # the runtime path, MathML in
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    # the shipped composite serves kNN alone with its parts weighed as the embedding ranker weighs them
    weights = dict(get_ranker("embedding").embedding_parts)
    weighed = np.stack([encoder.weigh_query(v, weights) for v in vectors])
    exact = (weighed / np.linalg.norm(weighed, axis=1, keepdims=True)) @ unit.T
    # compared by cosine, both sides rounded to int8 as the index stores and queries them
    queries = np.stack([query_vector(q, "cosine") for q in weighed]).astype(np.float64)
    stored = np.array([stored_vector(v, "cosine") for v in vectors], dtype=np.float64)
    served = cosine_matrix(queries, stored)
    np.testing.assert_allclose(encoded.similarity["model"], served, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(served, exact, atol=0.02)  # the rounding moves a cosine by little
    assert not np.allclose(served, unit @ unit.T, atol=0.02)  # not the stored vectors' cosine
    np.testing.assert_allclose(encoded.similarity["model_cosine"], unit @ unit.T, rtol=1e-5, atol=1e-6)

    written = write_trec_files(encoded, tmp_path / "trec")
    assert [p.name for p in written] == [
        "topics.tsv",
        "qrels.txt",
        "run-model.txt",
        "run-model-cosine.txt",
        "run-bag-of-words.txt",
        "run-latex-tfidf.txt",
    ]
    qrels = read_qrels(tmp_path / "trec" / "qrels.txt")
    topics = read_topics(tmp_path / "trec" / "topics.tsv")
    assert topics == ["euler-1", "euler-2", "variance-1", "variance-2", "variance-3"]
    for name in ("model", "model_cosine", "bag_of_words", "latex_tfidf"):
        trec = evaluate_run(read_run(tmp_path / "trec" / f"run-{name.replace('_', '-')}.txt"), qrels, topics)
        assert trec.judged_share == 1.0
        assert trec.means["map_prime"] == pytest.approx(report.figures[name].map)


@pytest.mark.es
def test_the_search_engine_is_scored_on_the_set_through_the_production_path(es_client, index_name, tmp_path) -> None:
    from eqsearch.engine.index import IndexAdmin
    from eqsearch.engine.model.encoder import load_encoder
    from eqsearch.engine.search import get_ranker
    from eqsearch.evaluation.labelled import search_similarity, with_search

    path = _write(
        tmp_path / "set.tsv",
        "pythagoras\ta^2 + b^2 = c^2\n"
        "pythagoras\tx^{2} + y^{2} = z^{2}\n"
        "pythagoras\t|AB|^2 = |AC|^2 + |BC|^2\n"
        "geometric\t\\sum_{k=0}^{n} q^k = \\frac{1 - q^{n+1}}{1 - q}\n"
        "geometric\t\\sum_{i=0}^{m} r^i = \\frac{r^{m+1} - 1}{r - 1}\n"
        "geometric\t1 + x + x^2 + \\dots + x^n = \\frac{1 - x^{n+1}}{1 - x}\n",
    )
    equations = read_labelled_set(path)
    encoder = load_encoder()
    with KatexConverter() as converter:
        encoded = encode_labelled_set(equations, encoder, converter)
        for name in ("embedding", "structure"):
            ranking = get_ranker(name)
            similarity = search_similarity(encoded, es_client, encoder, converter, ranking, index_prefix=index_name)
            encoded = with_search(encoded, name, similarity)
    report = labelled_report(encoded, equations, path, encoder.manifest.path)
    assert list(report.figures) == [
        "model",
        "model_cosine",
        "bag_of_words",
        "latex_tfidf",
        "search:embedding",
        "search:structure",
    ]
    # The engine's kNN over the ingested vectors ranks as the offline encoder does: the same figures.
    assert report.figures["search:embedding"] == report.figures["model"]
    similarity = encoded.similarity["search:structure"]
    assert np.all(np.diag(similarity) == 0)  # an equation is never its own neighbour
    assert report.figures["search:structure"].accuracy == 1.0  # each one's best other is of its category
    assert "| search engine, ranker structure | 100.0 |" in report.table()
    assert IndexAdmin(es_client, index_name).list() == []  # the temporary indices are gone


def _mathml(equations: tuple[LabelledEquation, ...]) -> list[str]:
    with KatexConverter() as converter:
        return [r.mathml for r in converter.convert_many([(e.latex, "equation") for e in equations])]
