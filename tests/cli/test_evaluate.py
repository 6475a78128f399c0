"""`eqsearch evaluate labelled | trec | held-out` on the command line; the first two without torch."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from eqsearch.engine.search.rankers import DEFAULT_RANKER
from eqsearch.evaluation.labelled_set import FORMAT_LINE
from eqsearch.main import main

SET = (
    f"{FORMAT_LINE}\ncategory\tlatex\tnote\n"
    "euler\te^{i\\pi} + 1 = 0\n"
    "euler\te^{ix} = \\cos x + i \\sin x\n"
    "euler\t\\frac{e^{i\\pi}}{\tbroken\n"
    "variance\t\\operatorname{Var}(X) = \\mathbb{E}[X^2] - \\mathbb{E}[X]^2\n"
    "variance\t\\sigma^2 = \\frac{1}{N} \\sum_i (x_i - \\mu)^2\n"
)


def test_labelled_then_trec_run_end_to_end_without_torch(tmp_path: Path) -> None:
    labelled = tmp_path / "set.tsv"
    labelled.write_text(SET, encoding="utf-8")
    trec, figures = tmp_path / "trec", tmp_path / "labelled.json"
    code = (
        "import sys\n"
        "from eqsearch.main import main\n"
        f"rc = main(['evaluate', 'labelled', {str(labelled)!r}, '--write-trec', {str(trec)!r}, "
        f"'--json', {str(figures)!r}, '--per-category'])\n"
        f"rc += main(['evaluate', 'trec', '--qrels', {str(trec / 'qrels.txt')!r}, "
        f"'--run', {str(trec / 'run-model.txt')!r}, '--run', {str(trec / 'run-bag-of-words.txt')!r}, "
        f"'--topics', {str(trec / 'topics.tsv')!r}, '--json', {str(tmp_path / 'trec.json')!r}])\n"
        "print('torch imported:', 'torch' in sys.modules)\n"
        "sys.exit(rc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "5 equations in 2 categories; 4 evaluated, 1 failed to convert" in text
    assert "not evaluated: euler-3 (line 5): parse-error" in text
    assert "| model, as served (cosine) |" in text and "| bag of words (§6.3), cosine |" in text
    assert "| euler | 2 |" in text  # --per-category
    assert "4 judged topics (relevant: grade >= 2; first 1000 results; unjudged results removed)" in text
    assert text.strip().endswith("torch imported: False")
    report = json.loads(figures.read_text())
    assert report["failures"][0]["id"] == "euler-3" and report["evaluated"] == 4
    runs = json.loads((tmp_path / "trec.json").read_text())
    assert runs[str(trec / "run-model.txt")]["means"]["map_prime"] == pytest.approx(report["figures"]["model"]["map"])
    # two runs: the second is compared with the first, topic by topic
    assert f"Against {trec / 'run-model.txt'}, topic by topic" in text
    bow, model = runs[str(trec / "run-bag-of-words.txt")], runs[str(trec / "run-model.txt")]
    compared = runs["comparisons"][str(trec / "run-bag-of-words.txt")]["map_prime"]
    assert compared["difference"] == pytest.approx(bow["means"]["map_prime"] - model["means"]["map_prime"])
    assert compared["better"] + compared["worse"] + compared["tied"] == 4


@pytest.mark.es
def test_labelled_with_a_ranker_scores_the_search_engine_too(es_client, tmp_path: Path, capsys) -> None:
    labelled = tmp_path / "set.tsv"
    labelled.write_text(SET, encoding="utf-8")
    figures = tmp_path / "labelled.json"
    assert main(["evaluate", "labelled", str(labelled), "--ranker", "default", "--quiet", "--json", str(figures)]) == 0
    out = capsys.readouterr().out
    assert f"| search engine, ranker {DEFAULT_RANKER} |" in out
    report = json.loads(figures.read_text())
    assert set(report["figures"]) == {
        "model",
        "model_cosine",
        "bag_of_words",
        "latex_tfidf",
        f"search:{DEFAULT_RANKER}",
    }
    with pytest.raises(SystemExit):
        main(["evaluate", "labelled", str(labelled), "--ranker", "nonesuch"])
    assert "unknown ranker 'nonesuch'" in capsys.readouterr().err


def test_bad_flag_combinations_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["evaluate", "held-out", "--bundle", "engine/model/default-bundle"])
    assert exit_info.value.code == 2
    assert "--bundle and --corpus go together" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["evaluate", "held-out", "--checkpoint", "x.pt", "--bundle", "b"])
    assert "not allowed with argument" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["evaluate", "trec", "--qrels", "q", "--run", "r", "--depth", "0"])
    assert "--depth must be positive" in capsys.readouterr().err


def test_missing_files_are_errors_that_say_which(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", "labelled", str(tmp_path / "none.tsv")]) == 1
    assert "cannot read the labelled set" in capsys.readouterr().err
    assert main(["evaluate", "trec", "--qrels", str(tmp_path / "q.txt"), "--run", str(tmp_path / "r.txt")]) == 1
    assert "cannot read the qrels file" in capsys.readouterr().err


def test_held_out_of_a_bundle_rebuilds_its_split_and_reports_the_bootstrap(
    papers_jsonl: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from eqsearch.engine.model.bundle import default_bundle_path

    bundle = tmp_path / "bundle"
    shutil.copytree(default_bundle_path(), bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    # the shipped training config, on a budget the 12 fixture papers can feed
    manifest["training"].update(test_fraction=0.3, train_triplets=16, eval_triplets=60)
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    out = tmp_path / "held-out.json"
    args = ["evaluate", "held-out", "--bundle", str(bundle), "--corpus", str(papers_jsonl)]
    assert main([*args, "--run-dir", str(tmp_path / "run"), "--resamples", "50", "--json", str(out)]) == 0
    printed = capsys.readouterr()
    assert "warning: this corpus gives a held-out split of" in printed.err  # not the corpus the bundle trained on
    assert "model - bag of words:" in printed.out and "(B=50," in printed.out
    report = json.loads(out.read_text())
    assert report["model"]["triplets"] == 60
    difference = report["model_minus_bag_of_words"]
    assert difference["difference"] == pytest.approx(report["model"]["score"] - report["bag_of_words"]["score"])
    assert difference["low"] <= difference["difference"] <= difference["high"]


def test_node_vectors_go_with_a_maxsim_ranker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = [tmp_path / name for name in ("c.tsv", "t.tsv", "q.txt")]
    for path in files:
        path.write_text("", encoding="utf-8")
    args = ["evaluate", "formulas", "--collection", str(files[0]), "--topics", str(files[1]), "--qrels", str(files[2])]
    with pytest.raises(SystemExit) as stopped:
        main([*args, "--node-vectors", "--ranker", "structure+embedding+rerank"])
    assert stopped.value.code == 2
    assert "--node-vectors goes with a MaxSim ranker" in capsys.readouterr().err
