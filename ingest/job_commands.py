"""`eqsearch ingest run SRC...`: a resumable ingest job into Elasticsearch (see `eqsearch.ingest.job`)."""

from __future__ import annotations

import argparse
import json
import sys

RUN_DESCRIPTION = """\
Extract -> convert (KaTeX) -> encode (the model bundle) -> bulk index into Elasticsearch, streaming. Document ids
are deterministic, so running twice never duplicates. The job's record (state, progress, counts, errors by reason)
lives in the PREFIX-jobs index with one checkpoint per finished paper: re-running the same command after a crash
or kill -9 resumes where it stopped (--job names a job explicitly; --restart starts it again). A paper indexed
again (a new version, an edited source) loses the equations its new version no longer has. Indices are created
on first use; during the load they run with refresh off and no replicas, restored afterwards. During an
'eqsearch index migrate' the job pauses its writes and carries on into the new index.
"""


def register_run(ingest_subparsers: argparse._SubParsersAction) -> None:
    """Add `run` (and `jobs`) to the `ingest` command group."""
    run = ingest_subparsers.add_parser(
        "run",
        help="ingest sources into Elasticsearch (resumable job)",
        description=RUN_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("sources", nargs="+", metavar="SRC", help="what 'eqsearch ingest extract' reads")
    run.add_argument("--job", help="job id (default: derived from the sources)")
    run.add_argument("--restart", action="store_true", help="forget the job's checkpoints and start again")
    run.add_argument(
        "--kind", choices=("auto", "arxiv", "latex", "docstrings", "papers", "html"), default="auto",
        help="how to read folders (see 'eqsearch ingest extract --help')",
    )  # fmt: skip
    run.add_argument("--workers", type=int, default=0, help="extraction processes (0 = in this process)")
    run.add_argument("--batch", type=int, default=500, metavar="N", help="equations per bulk flush (500)")
    run.add_argument("--bundle", help="model bundle directory (default: the installed one)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(handler=_run)

    jobs = ingest_subparsers.add_parser("jobs", help="recent ingest jobs and their state")
    jobs.add_argument("--json", action="store_true", help="print JSON")
    jobs.set_defaults(handler=_jobs)


def _run(args: argparse.Namespace) -> int:
    from eqsearch.engine.config import EsConfig
    from eqsearch.engine.encoder import load_encoder
    from eqsearch.engine.es_client import connect
    from eqsearch.ingest.job import IngestJob, IngestJobConfig, JobProgress
    from tqdm import tqdm

    config = EsConfig.from_env()
    client, _ = connect(config)
    encoder = load_encoder(args.bundle)
    job_config = IngestJobConfig(
        sources=tuple(args.sources),
        index_prefix=config.index_prefix,
        job_id=args.job,
        kind=args.kind,
        workers=args.workers,
        batch_equations=args.batch,
        restart=args.restart,
    )
    bar = None if args.quiet else tqdm(unit="paper", desc=f"job {job_config.effective_job_id}", file=sys.stderr)

    def progress(state: JobProgress) -> None:
        if bar is not None:
            bar.total = state.papers_total
            bar.update(state.papers_done - bar.n)
            bar.set_postfix(
                eqs=state.counts.get("equations_indexed", 0), failed=state.counts.get("documents_failed", 0)
            )

    try:
        report = IngestJob(client, encoder, job_config, on_progress=progress).run()
    finally:
        if bar is not None:
            bar.close()
    counts = report.counts
    print(f"job {report.job_id} {report.state}: {counts['papers']:,} papers, {counts['equations_indexed']:,} of "
          f"{counts['equations']:,} equations indexed ({counts['equations_with_vector']:,} with a vector), "
          f"{counts['documents_failed']:,} documents failed, {report.equations_per_second:.0f} eq/s"
          + (f", {counts['equations_stale_deleted']:,} equations of earlier versions deleted"
             if counts.get("equations_stale_deleted") else "")
          + (f", {counts['equations_stale_kept']:,} kept because another job was ingesting the same papers "
             "(ingest them again once it has finished)" if counts.get("equations_stale_kept") else "")
          + (f", resumed after {report.resumed_from:,} papers" if report.resumed_from else ""))  # fmt: skip
    for reason, count in sorted(report.errors_by_reason.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {count:>8,}  {reason}")
    for failure in report.failures[:5]:
        print(f"  failed: {failure.doc_id}: {failure.error_type}: {failure.reason[:160]}")
    return 0 if counts["documents_failed"] == 0 else 4


def _jobs(args: argparse.Namespace) -> int:
    from eqsearch.engine.config import EsConfig
    from eqsearch.engine.es_client import connect
    from eqsearch.ingest.job import job_records

    config = EsConfig.from_env()
    client, _ = connect(config)
    records = job_records(client, config.index_prefix)
    if args.json:
        print(json.dumps(records, indent=2))
        return 0
    for record in records:
        progress = record.get("progress") or {}
        counts = record.get("counts") or {}
        print(f"{record['job_id']:28} {record.get('state', '?'):11} {progress.get('papers_done', 0):>7,}/"
              f"{progress.get('papers_total', 0):<7,} papers {counts.get('equations_indexed', 0):>9,} eqs  "
              f"{record.get('updated_at', '')}")  # fmt: skip
    return 0
