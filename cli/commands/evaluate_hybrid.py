"""`eqsearch evaluate hybrid`: combined formula + keyword search on known-item queries (`eqsearch.evaluation.hybrid`).

Kept apart from `evaluate.py`, which registers it; imports nothing heavy at module level.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from eqsearch.engine.errors import EqsearchError


def _ingest(client: Any, encoder: Any, converter: Any, sources: list[str], kind: str, prefix: str, quiet: bool) -> None:
    """The sources through the production ingest job (resumed when an earlier run already did them)."""
    from eqsearch.ingest.jobs import IngestJob, IngestJobConfig
    from tqdm import tqdm

    bar = None if quiet else tqdm(unit="doc", desc=f"ingest ({kind})", file=sys.stderr)

    def progress(state: Any) -> None:
        if bar is not None:
            bar.total = state.papers_total
            bar.update(state.papers_done - bar.n)

    try:
        config = IngestJobConfig(sources=tuple(sources), index_prefix=prefix, kind=kind)
        report = IngestJob(client, encoder, config, converter=converter, on_progress=progress).run()
    finally:
        if bar is not None:
            bar.close()
    if report.state != "finished":
        raise EqsearchError(f"the ingest job of the {kind} sources ended {report.state}: {report.errors_by_reason}")


def _line(name: str, figures: dict[str, float]) -> str:
    return (
        f"  {name:<9} equation MRR@10 {figures['equation_mrr']:.3f}  R@10 {figures['equation_r10']:.3f}   "
        f"paper MRR@10 {figures['paper_mrr']:.3f}  R@10 {figures['paper_r10']:.3f}"
    )


def _run(args: argparse.Namespace) -> int:
    from eqsearch.engine.es import EsConfig, LocalNode, LocalNodeConfig, connect
    from eqsearch.engine.latex import KatexConverter
    from eqsearch.engine.model.encoder import load_encoder, onnx_provider_setting
    from eqsearch.engine.search import SearchService
    from eqsearch.engine.search.rankers import DEFAULT_RANKER, get_ranker
    from eqsearch.evaluation.hybrid import MODES, evaluate_hybrid, read_hybrid_queries, resolve_targets
    from tqdm import tqdm

    if not 0.0 <= args.weight <= 1.0:
        args.parser.error(f"--weight must lie in [0, 1], got {args.weight}")
    try:
        ranking = get_ranker(args.ranker or DEFAULT_RANKER)
    except ValueError as error:
        args.parser.error(str(error))
    rows = read_hybrid_queries(args.queries) if args.queries else read_hybrid_queries()
    if args.split != "all":
        rows = [row for row in rows if row.split == args.split]
    config = EsConfig.from_env()
    if config.url is None:
        LocalNode(LocalNodeConfig.from_env()).start()
    client, _ = connect(config)
    encoder = load_encoder(args.bundle, provider=onnx_provider_setting(os.environ))
    with KatexConverter() as converter:
        if args.papers:
            _ingest(client, encoder, converter, args.papers, "arxiv", args.prefix, args.quiet)
        if args.distractors:
            _ingest(client, encoder, converter, args.distractors, "auto", args.prefix, args.quiet)
        service = SearchService(client, encoder, converter, index_prefix=args.prefix, ranking=ranking)
        client.indices.refresh(index=service.equations_alias)
        targets = resolve_targets(client, service.equations_alias, rows)
        bar = None if args.quiet else tqdm(total=len(rows), unit="query", desc="search", file=sys.stderr)
        options = {"formula_weight": args.weight, "fusion": args.fusion}
        try:
            evaluation = evaluate_hybrid(
                service, rows, targets, options=options, on_query=(lambda _: bar.update(1)) if bar else None
            )
        finally:
            if bar is not None:
                bar.close()
    summary = evaluation.to_json()
    print(
        f"ranker {ranking.name}, balance {args.weight}, fusion {args.fusion}: {len(rows)} queries under the prefix "
        f"{args.prefix}; median {summary['query_ms_median']:.0f} ms per search"
    )
    for part in ("dev", "heldout"):
        if summary[part]["formula"]["queries"]:
            moved = summary[f"{part}_moved"]
            print(
                f"{part} ({int(summary[part]['formula']['queries'])} queries; with words the target rises "
                f"{moved['rise']}, falls {moved['fall']}, stays {moved['same']}):"
            )
            for mode in MODES:
                print(_line(mode, summary[part][mode]))
    if args.per_lead:
        for part in ("dev", "heldout"):
            for lead in ("formula", "keywords", "balanced"):
                figures = summary[f"{part}_{lead}"]
                if figures["both"]["queries"]:
                    print(f"{part}, {lead}-led ({int(figures['both']['queries'])}):")
                    for mode in MODES:
                        print(_line(mode, figures[mode]))
    if args.json:
        record = {"ranker": ranking.name, "weight": args.weight, "fusion": args.fusion, **summary}
        Path(args.json).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"figures written to {args.json}")
    return 0


def register_hybrid(kinds: argparse._SubParsersAction) -> None:
    """Add ``hybrid`` to `eqsearch evaluate`'s kinds."""
    hybrid = kinds.add_parser(
        "hybrid",
        help="combined formula + keyword search on known-item queries over real papers",
        description="Search each known-item query (a display equation of a real paper, said as a formula retyped "
        "with other letters plus a few words) three ways through the production search service: the formula "
        "alone, the words alone and both; print MRR@10 and R@10 at equation and paper level, for the dev rows and "
        "the held-out rows apart. The papers (--papers, read as arXiv sources) and distractors (--distractors, "
        "e.g. the documentation corpus 'make run' indexes) are ingested under --prefix by the production ingest "
        "job; a second run with the same prefix resumes instead of redoing it (leave both out to reuse the index "
        "as it is). Example: eqsearch evaluate hybrid --prefix hybdev --papers PAPERS/* --distractors "
        "$(eqsearch ingest fetch-corpus --set sagemath --set sphinx --set gretl)",
    )
    hybrid.add_argument("--queries", type=Path, default=None, help="the query file (default: the shipped dev set)")
    hybrid.add_argument("--prefix", required=True, help="the index prefix of the papers and distractors")
    hybrid.add_argument("--papers", nargs="*", default=[], help="the real papers' sources (arXiv folders/tarballs)")
    hybrid.add_argument("--distractors", nargs="*", default=[], help="other sources indexed beside them")
    hybrid.add_argument("--split", choices=("all", "dev", "heldout"), default="all", help="which rows (all)")
    hybrid.add_argument("--ranker", default=None, help="a registered formula ranking (default: production's)")
    hybrid.add_argument("--weight", type=float, default=0.5, help="the formula/keywords balance (0.5, the UI's)")
    hybrid.add_argument(
        "--fusion", choices=("evidence", "rrf", "linear"), default="evidence", help="how the sides fuse (evidence)"
    )
    hybrid.add_argument("--bundle", help="model bundle directory (default: the installed one)")
    hybrid.add_argument("--per-lead", action="store_true", help="also print the figures by what leads the query")
    hybrid.add_argument("--json", type=Path, help="write every figure and each query's ranks to this file")
    hybrid.add_argument("--quiet", action="store_true", help="no progress bars")
    hybrid.set_defaults(handler=_run, parser=hybrid)
