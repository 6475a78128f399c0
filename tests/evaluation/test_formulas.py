"""`eqsearch evaluate formulas`: the end-to-end formula evaluation through the real ingest job and search service,
on a real node with real KaTeX; and the formula search finding Bayes' rule written in another field's notation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eqsearch.engine.index import IndexAdmin
from eqsearch.engine.latex import KatexConverter
from eqsearch.engine.model import load_encoder
from eqsearch.engine.search import HybridQuery, SearchService, get_ranker
from eqsearch.evaluation.formulas import FormulaFileError, evaluate_formulas, read_formula_file
from eqsearch.evaluation.trec import read_qrels
from eqsearch.ingest.jobs import IngestJob, IngestJobConfig
from eqsearch.main import main
from formula_collection import BROKEN, DETERMINANT, EULER, FORMULAS, LIMIT, numbered, write_formula_files
from hashing_encoder import HashingEncoder

# formula 8 is broken LaTeX, as real input is: KaTeX refuses it
COLLECTION = numbered(*FORMULAS, EULER, BROKEN, LIMIT, DETERMINANT)
TOPICS = {
    "T.1": r"\frac{x^2 + x + c}{x^2 + 2x + c}",
    "T.2": r"\sum_{k=0}^{n}\binom{n}{k}k",
    "T.3": r"(1+\frac{1}{n})^n",
}
QRELS = [("T.1", "1", 3), ("T.1", "2", 3), ("T.1", "6", 0), ("T.2", "3", 2), ("T.2", "4", 3), ("T.2", "7", 0)]
QRELS += [("T.3", "8", 3), ("T.3", "9", 2), ("T.3", "10", 0)]


def _files(tmp_path: Path) -> tuple[Path, Path, Path]:
    return write_formula_files(tmp_path, COLLECTION, TOPICS, QRELS)


def test_formula_files_need_their_header_and_one_id_per_line(tmp_path):
    good = tmp_path / "c.tsv"
    good.write_text("visual_id\tlatex\n1\tx^2\t(a tab inside)\n\n2\ty\n")
    assert read_formula_file(good, "visual_id") == [("1", "x^2\t(a tab inside)"), ("2", "y")]
    cases = {
        "topic\tlatex\n1\tx\n": "the first line must be the header 'visual_id\\\\tlatex'",
        "visual_id\tlatex\n1 x\n": r"c.tsv:2: expected 'visual_id<TAB>latex', found no tab",
        "visual_id\tlatex\n1\tx\n1\ty\n": "visual_id '1' appears twice",
        "visual_id\tlatex\n\tx\n": "the visual_id is empty",
        "visual_id\tlatex\n": "holds a header and no formula",
        "": "found 'an empty file'",
    }
    for text, message in cases.items():
        good.write_text(text)
        with pytest.raises(FormulaFileError, match=message):
            read_formula_file(good, "visual_id")
    with pytest.raises(FormulaFileError, match="cannot read"):
        read_formula_file(tmp_path / "missing.tsv", "visual_id")


@pytest.mark.es
def test_every_topic_is_searched_through_the_production_path_and_scored(es_client, index_name, tmp_path):
    collection, topics, qrels_path = _files(tmp_path)
    with KatexConverter() as converter:
        evaluation = evaluate_formulas(
            es_client,
            HashingEncoder(),
            converter,
            collection,
            topics,
            read_qrels(qrels_path),
            ranking=get_ranker("structure+embedding+rerank"),
            depth=100,
            index_prefix=index_name,
        )
    summary = evaluation.to_json()
    assert summary["topics"] == 3 and summary["collection_size"] == 10
    # every setting of the ranker is recorded beside its figures (the first stage, MaxSim, the bundle included)
    assert summary["ranker_config"]["first_stage_share"] == 0.05 and summary["ranker_config"]["maxsim_window"] == 0
    assert evaluation.ingest["errors_by_reason"] == {"convert:parse-error": 1}  # formula 8 ...
    assert evaluation.run["T.3"][0][0] in {"8", "9"}  # ... is still found, by the structure of its LaTeX
    assert {doc for doc, _ in evaluation.run["T.3"][:2]} == {"8", "9"}
    assert [doc for doc, _ in evaluation.run["T.1"][:2]] in (["1", "2"], ["2", "1"])
    assert {doc for doc, _ in evaluation.run["T.2"][:2]} == {"3", "4"}  # \binom = a fraction in parentheses
    assert summary["ndcg"] > 0.9 and summary["p10"] == pytest.approx(0.2)  # both relevant ones first, 10 a page
    assert set(summary["per_topic"]) == set(TOPICS)
    assert IndexAdmin(es_client, index_name).list() == []  # the temporary indices are gone


@pytest.mark.es
def test_the_command_writes_the_run_and_the_figures(tmp_path, capsys):
    collection, topics, qrels = _files(tmp_path)
    args = ["evaluate", "formulas", "--collection", str(collection), "--topics", str(topics), "--qrels", str(qrels)]
    out = tmp_path / "out"
    code = main([*args, "--ranker", "structure", "--depth", "50", "--run", f"{out}.run", "--json", f"{out}.json"])
    assert code == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "ranker structure: 3 topics, 10 formulas (9 with a vector" in printed and "nDCG′ 0.9" in printed
    assert "1  convert:parse-error (still indexed" in printed
    figures = json.loads(Path(f"{out}.json").read_text())
    assert {"ndcg", "map", "p10", "topics", "per_topic"} <= set(figures) and figures["ranker"] == "structure"
    lines = Path(f"{out}.run").read_text().splitlines()
    assert lines[0].split()[:4] == ["T.1", "Q0", lines[0].split()[2], "1"] and lines[0].endswith("eqsearch-structure")


def test_the_command_lists_its_rankers_and_says_what_is_missing(capsys):
    assert main(["evaluate", "formulas", "--list-rankers"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert any(line.startswith("embedding ") for line in listed)
    assert sum("(default)" in line for line in listed) == 1
    with pytest.raises(SystemExit):
        main(["evaluate", "formulas", "--topics", "t.tsv"])
    assert "need --collection, --qrels (or --list-rankers)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["evaluate", "formulas", "--collection", "c", "--topics", "t", "--qrels", "q", "--ranker", "bm25"])
    assert "unknown ranker 'bm25'" in capsys.readouterr().err


# Bayes' rule as scikit-learn's naive Bayes page states it (class y, features x_1..x_n), among formulas that share
# its symbols or its shape; the query writes it as a probability textbook does.
BAYES_CORPUS = {
    "sklearn/naive_bayes": r"P(y \mid x_1, \dots, x_n) = \frac{P(y) P(x_1, \dots, x_n \mid y)}{P(x_1, \dots, x_n)}",
    "stats/total": r"P(B) = \sum_{i} P(B \mid A_i) P(A_i)",
    "stats/independent": r"P(A \cap B) = P(A) P(B)",
    "stats/conditional": r"P(A \mid B) = \frac{P(A \cap B)}{P(B)}",
    "calc/quotient": r"\left(\frac{f}{g}\right)' = \frac{f' g - f g'}{g^2}",
    "calc/frac": r"\frac{a}{b} + \frac{c}{d} = \frac{ad + bc}{bd}",
    "ml/softmax": r"p(y = k \mid x) = \frac{e^{w_k^T x}}{\sum_j e^{w_j^T x}}",
    "misc/k": r"k + 1",
    "misc/gauss": r"\sum_{k=1}^{n} k = \frac{n(n+1)}{2}",
    "physics/boltzmann": r"P(E) = \frac{e^{-E / k T}}{Z}",
    "misc/binomial": r"P(X = k) = \binom{n}{k} p^k (1 - p)^{n - k}",
    "misc/variance": r"\operatorname{Var}(X) = E[X^2] - E[X]^2",
    "misc/expectation": r"E[X] = \sum_x x \, P(X = x)",
    "misc/gaussian": r"p(x) = \frac{1}{\sqrt{2 \pi \sigma^2}} e^{-\frac{(x - \mu)^2}{2 \sigma^2}}",
    "misc/entropy": r"H(X) = -\sum_i p(x_i) \log p(x_i)",
    "misc/kl": r"D_{KL}(P \| Q) = \sum_x P(x) \log \frac{P(x)}{Q(x)}",
    "misc/ratio": r"\frac{a + b}{c + d}",
    "misc/derivative": r"\frac{d}{dx} \left( \frac{u}{v} \right) = \frac{u' v - u v'}{v^2}",
    "misc/geometric": r"\sum_{k=0}^{\infty} r^k = \frac{1}{1 - r}",
    "misc/euler": r"e^{i \pi} + 1 = 0",
}


@pytest.mark.es
def test_bayes_rule_is_found_in_another_fields_notation(es_client, index_name, tmp_path):
    papers = tmp_path / "papers.jsonl"
    papers.write_text(
        "".join(
            json.dumps({"id": key, "sections": [{"equations": [{"latex": latex}]}]}) + "\n"
            for key, latex in BAYES_CORPUS.items()
        )
    )
    encoder = load_encoder()  # the shipped model bundle, as production serves it
    config = IngestJobConfig(sources=(str(papers),), index_prefix=index_name)
    with KatexConverter() as converter:
        assert IngestJob(es_client, encoder, config, converter=converter).run().state == "finished"
        es_client.indices.refresh(index=f"{index_name}-equations")
        service = SearchService(es_client, encoder, converter, index_prefix=index_name)
        results = service.search(HybridQuery(latex=r"P(A|B)=\frac{P(B|A)P(A)}{P(B)}"))
    ranked = [hit.paper_id for hit in results.hits]
    # 6th of 20 here: only formulas built of probabilities P(.) rank above it (the identities written with A and B
    # themselves, the KL divergence and the Boltzmann factor P(E); the first shipped network put the Boltzmann
    # factor below it); every formula of another kind ranks below. Not yet first: exact symbols weigh more than the
    # shape (benchmarks/formula_search.md).
    position = ranked.index("sklearn/naive_bayes")
    assert position < 6, ranked
    assert all("P(" in BAYES_CORPUS[key] for key in ranked[:position]), ranked
    assert "structure" in results.hits[ranked.index("sklearn/naive_bayes")].channels
