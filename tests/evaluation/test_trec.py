"""TREC files and ARQMath's measures on a hand-computed collection."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from eqsearch.evaluation.trec import (
    MEASURES,
    TrecFormatError,
    TrecReport,
    compare_runs,
    evaluate_run,
    ordered,
    read_qrels,
    read_run,
    read_topics,
    write_qrels,
    write_run,
)

QRELS = """\
# grades 0-3 as ARQMath
T1 0 a 3
T1 0 b 0
T1 0 c 2
T1 0 d 1
T2 0 x 0
T3 0 y 2
"""
# The rank column says a before b; trec_eval ignores it and breaks the 0.8 tie by docid, descending: b, a.
RUN = """\
T1 Q0 u 1 0.9 r
T1 Q0 a 2 0.8 r
T1 Q0 b 3 0.8 r
T1 Q0 d 4 0.5 r
T1 Q0 c 5 0.1 r
T2 Q0 x 1 1.0 r
T9 Q0 z 1 1.0 r
"""


@pytest.fixture
def collection(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run.txt").write_text(RUN)
    return tmp_path / "qrels.txt", tmp_path / "run.txt"


def test_readers_follow_trec_eval(collection: tuple[Path, Path]) -> None:
    qrels_path, run_path = collection
    assert read_qrels(qrels_path)["T1"] == {"a": 3.0, "b": 0.0, "c": 2.0, "d": 1.0}
    assert read_run(run_path) == {"T1": ["u", "b", "a", "d", "c"], "T2": ["x"], "T9": ["z"]}


def test_arqmath_measures_by_hand(collection: tuple[Path, Path]) -> None:
    qrels_path, run_path = collection
    report = evaluate_run(read_run(run_path), read_qrels(qrels_path))
    # T1 after removing the unjudged u: b(0) a(3) d(1) c(2); relevant (grade >= 2): a, c.
    t1 = report.per_topic["T1"]
    dcg = 3 / math.log2(3) + 1 / math.log2(4) + 2 / math.log2(5)
    idcg = 3 + 2 / math.log2(3) + 1 / math.log2(4)
    assert t1["ndcg_prime"] == pytest.approx(dcg / idcg)
    assert t1["map_prime"] == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert t1["p_prime_10"] == pytest.approx(2 / 10)
    assert t1["bpref"] == pytest.approx(((1 - 1 / 2) + (1 - 2 / 2)) / 2)  # b above a; b and d above c
    # T2 has no relevant document, T3 is judged but not in the run: both score 0 and count in the means.
    assert report.per_topic["T2"] == report.per_topic["T3"] == dict.fromkeys(t1, 0.0)
    assert report.topics == ("T1", "T2", "T3")
    assert report.means["map_prime"] == pytest.approx(0.5 / 3)
    assert report.means["ndcg_prime"] == pytest.approx(dcg / idcg / 3)
    assert (report.missing_topics, report.extra_topics) == (("T3",), ("T9",))
    assert report.judged_share == pytest.approx(5 / 6)  # u is the one unjudged result of T1-T3


def test_depth_cuts_before_unjudged_results_are_removed(collection: tuple[Path, Path]) -> None:
    qrels_path, run_path = collection
    report = evaluate_run(read_run(run_path), read_qrels(qrels_path), topics=["T1"], depth=2)
    assert report.per_topic["T1"]["map_prime"] == 0.0  # first two: u (unjudged), b (not relevant)
    assert report.per_topic["T1"]["ndcg_prime"] == 0.0


def test_topics_file_restricts_and_reports_unjudged_topics(collection: tuple[Path, Path], tmp_path: Path) -> None:
    qrels_path, run_path = collection
    xml = tmp_path / "topics.xml"
    xml.write_text(
        '<?xml version="1.0"?>\n<Topics>\n<Topic number="T1"><Formula_Id>q</Formula_Id></Topic>\n'
        '<Topic number="T4"></Topic>\n</Topics>\n'
    )
    tsv = tmp_path / "topics.tsv"
    tsv.write_text("# topic\tlatex\nT1\tx^2\n\nT4\ty\n")
    assert read_topics(xml) == read_topics(tsv) == ["T1", "T4"]
    report = evaluate_run(read_run(run_path), read_qrels(qrels_path), read_topics(xml))
    assert report.topics == ("T1",) and report.unjudged_topics == ("T4",)
    assert report.extra_topics == ("T2", "T9")
    assert report.means["p_prime_10"] == pytest.approx(0.2)


def test_relevance_threshold_is_a_parameter(collection: tuple[Path, Path]) -> None:
    qrels_path, run_path = collection
    report = evaluate_run(read_run(run_path), read_qrels(qrels_path), topics=["T1"], threshold=1)
    # relevant now a, d, c in prime order b a d c: AP = (1/2 + 2/3 + 3/4) / 3
    assert report.per_topic["T1"]["map_prime"] == pytest.approx((1 / 2 + 2 / 3 + 3 / 4) / 3)


def test_written_run_reads_back_in_the_same_order(tmp_path: Path) -> None:
    results = [("e-2", 0.5), ("e-10", 0.5), ("e-1", 1 / 3), ("e-3", 0.9)]
    assert ordered(results) == ["e-3", "e-2", "e-10", "e-1"]
    write_run(tmp_path / "run.txt", {"q": results}, tag="model")
    lines = (tmp_path / "run.txt").read_text().splitlines()
    assert lines[0] == "q Q0 e-3 1 0.9 model" and lines[3] == f"q Q0 e-1 4 {1 / 3!r} model"
    assert read_run(tmp_path / "run.txt") == {"q": ["e-3", "e-2", "e-10", "e-1"]}
    write_qrels(tmp_path / "qrels.txt", {"q": {"e-2": 3.0, "e-1": 0.0}})
    assert (tmp_path / "qrels.txt").read_text() == "q 0 e-2 3\nq 0 e-1 0\n"
    with pytest.raises(ValueError, match="no whitespace"):
        write_run(tmp_path / "bad.txt", {"q": [("a b", 1.0)]}, tag="model")


@pytest.mark.parametrize(
    ("kind", "text", "message"),
    [
        ("qrels", "T1 0 a\n", r"qrels.txt:1: a qrels line has 4 fields"),
        ("qrels", "T1 0 a 3\nT1 0 a high\n", r"qrels.txt:2: the grade 'high' is not a number"),
        ("qrels", "T1 0 a 3\nT1 0 a 1\n", r"qrels.txt:2: a is judged 3 and 1 for topic T1"),
        ("run", "T1 Q0 a 1 0.5\n", r"run.txt:1: a run line has 6 fields"),
        ("run", "T1 Q0 a 1 nan r\n", r"run.txt:1: the score 'nan' is not finite"),
        ("run", "T1 Q0 a 1 0.5 r\nT1 Q0 a 2 0.4 r\n", r"run.txt:2: a is retrieved twice for topic T1"),
        ("topics", "# nothing\n", r"lists no topic"),
        ("topics", "T1\nT1\n", r"topic T1 is listed twice"),
    ],
)
def test_malformed_files_name_the_line(tmp_path: Path, kind: str, text: str, message: str) -> None:
    path = tmp_path / f"{kind}.txt"
    path.write_text(text)
    reader = {"qrels": read_qrels, "run": read_run, "topics": read_topics}[kind]
    with pytest.raises(TrecFormatError, match=message):
        reader(path)


def test_nothing_to_evaluate_is_an_error() -> None:
    with pytest.raises(TrecFormatError, match="none of the topics file's topics has a judgement"):
        evaluate_run({"T1": ["a"]}, {"T1": {"a": 3.0}}, topics=["T7"])


def _report(per_topic_map: dict[str, float]) -> TrecReport:
    per_topic = {t: {m: value for m in MEASURES} for t, value in per_topic_map.items()}
    means = {m: sum(per_topic_map.values()) / len(per_topic_map) for m in MEASURES}
    return TrecReport(means=means, per_topic=per_topic, topics=tuple(per_topic_map))


def test_a_run_compared_topic_by_topic_with_a_bootstrap_interval() -> None:
    baseline = _report({"T1": 0.5, "T2": 0.5, "T3": 0.5, "T4": 0.5})
    mixed = _report({"T1": 0.9, "T2": 0.1, "T3": 0.5, "T4": 0.7})  # +0.4, -0.4, 0, +0.2: mean +0.05
    compared = compare_runs(baseline, mixed, resamples=2_000)["map_prime"]
    assert compared.difference == pytest.approx(0.05)
    assert (compared.better, compared.worse, compared.tied) == (2, 1, 1)
    assert compared.low < 0 < compared.high and not compared.certain  # one topic's loss can outweigh the gains
    # the interval is one of the resampled means: within the smallest and largest topic difference
    assert -0.4 <= compared.low <= compared.difference <= compared.high <= 0.4

    better_everywhere = _report({"T1": 0.6, "T2": 0.7, "T3": 0.55, "T4": 0.8})
    sure = compare_runs(baseline, better_everywhere, resamples=2_000)["ndcg_prime"]
    assert sure.certain and sure.low >= 0.05 and (sure.better, sure.worse) == (4, 0)

    same = compare_runs(baseline, baseline)["p_prime_10"]
    assert (same.difference, same.low, same.high, same.tied, same.certain) == (0.0, 0.0, 0.0, 4, False)
    assert compare_runs(baseline, mixed, seed=3) == compare_runs(baseline, mixed, seed=3)  # reproducible


def test_runs_of_other_topics_are_not_compared() -> None:
    with pytest.raises(ValueError, match="different topics"):
        compare_runs(_report({"T1": 0.5}), _report({"T2": 0.5}))
    with pytest.raises(ValueError, match="resamples"):
        compare_runs(_report({"T1": 0.5}), _report({"T1": 0.5}), resamples=0)
