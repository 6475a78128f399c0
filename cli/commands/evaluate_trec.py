"""`eqsearch evaluate trec`: TREC runs scored with ARQMath's measures, and runs compared topic by topic
(`eqsearch.evaluation.trec`).

Kept apart from `evaluate.py`, which registers it; imports nothing heavy at module level.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any


def _run_evaluate_trec(args: argparse.Namespace) -> int:
    from eqsearch.evaluation.trec import MEASURES, evaluate_run, read_qrels, read_run, read_topics

    if args.depth < 1:
        args.parser.error(f"--depth must be positive, got {args.depth}")
    if args.resamples < 1:
        args.parser.error(f"--resamples must be positive, got {args.resamples}")
    qrels = read_qrels(args.qrels)
    topics = read_topics(args.topics) if args.topics else None
    reports = {str(path): evaluate_run(read_run(path), qrels, topics, args.threshold, args.depth) for path in args.run}
    first = next(iter(reports.values()))
    print(
        f"{len(first.topics)} judged topics (relevant: grade >= {args.threshold:g}; first {args.depth} results; "
        "unjudged results removed)"
    )
    if first.unjudged_topics:
        print(f"  skipped, no judgements: {len(first.unjudged_topics)} topics of {args.topics}")
    print("| run | nDCG′ | MAP′ | P′@10 | bpref | judged share |")
    print("|---|---|---|---|---|---|")
    for path, report in reports.items():
        cells = " | ".join(f"{report.means[m]:.4f}" for m in MEASURES)
        print(f"| {path} | {cells} | {report.judged_share:.3f} |")
        if report.missing_topics:
            print(f"  {path}: no results for {len(report.missing_topics)} judged topics (they score 0)")
        if report.extra_topics:
            print(f"  {path}: {len(report.extra_topics)} topics not evaluated (not judged or not in the topics file)")
    comparisons = _compare_trec_runs(reports, args.resamples) if len(reports) > 1 else {}
    if args.per_topic:
        for path, report in reports.items():
            print(f"\n{path}")
            for topic, values in report.per_topic.items():
                print(f"{topic}\t" + "\t".join(f"{m}={values[m]:.4f}" for m in MEASURES))
    if args.json:
        payload: dict[str, Any] = {path: report.to_dict() for path, report in reports.items()}
        if comparisons:
            payload["comparisons"] = {
                path: {measure: asdict(c) for measure, c in compared.items()} for path, compared in comparisons.items()
            }
        Path(args.json).write_text(json.dumps(payload, indent=1) + "\n")
    return 0


def _compare_trec_runs(reports: dict[str, Any], resamples: int) -> dict[str, Any]:
    """Every run after the first against the first, topic by topic, printed as a table; the comparisons."""
    from eqsearch.evaluation.trec import compare_runs

    names = {"ndcg_prime": "nDCG′", "map_prime": "MAP′", "p_prime_10": "P′@10", "bpref": "bpref"}
    baseline_path, baseline = next(iter(reports.items()))
    comparisons = {
        path: compare_runs(baseline, report, resamples=resamples) for path, report in list(reports.items())[1:]
    }
    print(
        f"\nAgainst {baseline_path}, topic by topic (Δ = mean difference; 95% interval of a bootstrap over the "
        f"{len(baseline.topics)} topics, {resamples:,} resamples; * = the interval leaves out 0):"
    )
    print("| run | measure | Δ | 95% interval | topics better / worse / tied |")
    print("|---|---|---|---|---|")
    for path, compared in comparisons.items():
        for measure, c in compared.items():
            mark = " *" if c.certain else ""
            print(
                f"| {path} | {names[measure]} | {c.difference:+.4f}{mark} | [{c.low:+.4f}, {c.high:+.4f}] | "
                f"{c.better} / {c.worse} / {c.tied} |"
            )
    return comparisons


def register_trec(kinds: argparse._SubParsersAction) -> None:
    """Add ``trec`` to the ``eqsearch evaluate`` kinds."""
    trec = kinds.add_parser(
        "trec",
        help="nDCG′, MAP′, P′@10 and bpref of TREC runs (ARQMath conventions)",
        description="Score TREC runs against qrels as ARQMath does: unjudged results removed (the primes), "
        "relevant = grade >= 2 for the binary measures, first 1000 results. With two runs or more, each is also "
        "compared with the first topic by topic: the mean difference of each measure, a 95% bootstrap interval over "
        "the topics and how many topics went up or down, so that a ranking change is judged beyond the luck of the "
        "topics. Conventions: eqsearch/evaluation/trec.py.",
    )
    trec.add_argument("--qrels", required=True, help="TREC qrels: topic iteration docid grade")
    trec.add_argument(
        "--run", required=True, action="append", help="TREC run: topic Q0 docid rank score tag (repeatable)"
    )
    trec.add_argument("--topics", help="evaluate only these topics (ARQMath topics XML, or one id per line)")
    trec.add_argument("--threshold", type=float, default=2.0, help="grade from which a result is relevant (2)")
    trec.add_argument("--depth", type=int, default=1000, help="results per topic considered (1000)")
    trec.add_argument("--per-topic", action="store_true", help="also print every topic's measures")
    trec.add_argument(
        "--resamples",
        type=int,
        default=10_000,
        help="bootstrap resamples of the topics when comparing runs (10000): with two runs or more, each is compared "
        "with the first topic by topic",
    )
    trec.add_argument("--json", help="also write the figures (and the comparisons) to this JSON file")
    trec.set_defaults(handler=_run_evaluate_trec, parser=trec)
