"""A benchmark collection of millions of distinct formulas grown from real papers (issue 41, benchmarks/scale.md "A
five-million-formula collection").

::

    python benchmarks/scale_corpus.py generate PAPERS.jsonl... --out /tmp/scale/5m.jsonl --equations 5000000 [--seed 0]
    python benchmarks/scale_corpus.py compare --real PAPERS.jsonl... --generated /tmp/scale/5m.jsonl --sizes 50000
    python benchmarks/scale_corpus.py check /tmp/scale/5m.jsonl --sample 2000
    eqsearch ingest run /tmp/scale/5m.jsonl        # indexed by the production writers

``generate`` reads papers JSONL written by ``eqsearch ingest extract`` (the ``make run`` corpus, the real-paper sets)
and writes papers JSONL of the same format: the real papers, then papers whose formulas are realistic variants of
theirs (`corpus_growth.generate`). ``compare`` sets the term and size distributions of the generated collection
beside the real one's (`corpus_growth.compare`); ``check`` converts a sample of generated LaTeX with the project's
KaTeX converter and counts how often its structure is the generated MathML's. Nothing is downloaded, and nothing is
read but the files named.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

EPILOG = """
what a variant is (each change made to the LaTeX and to the KaTeX MathML by one mapping, KaTeX not run again):
  renamed           by its paper's notation: Latin to Latin, Greek to Greek, among letters of like frequency; only
                    letters the LaTeX and the MathML hold alike (a macro's hidden letter, a word: left alone)
  constants         changed with chance --constants (never 0 or 1)
  exchanged         with chance --exchange, a right-hand side or a fraction's part of another formula of its field
                    (arXiv category archive, else --areas, else the source: html:sagemath-doc, docstring:scipy)
  contexts          a sentence drawn from real contexts and abstracts of the field, with chance --contexts
  distinct          no two equations with the same MathML (attributes aside); a duplicate is tried twice more,
                    then dropped

how long: ~0.4-0.5 ms of one core per equation (5M: ~30-45 min, ~8 GB) plus one pass over the inputs
  (~1 min for 240k formulas); benchmarks/scale.md, "A five-million-formula collection".

what is written:
  OUT               papers JSONL (ingest/FORMAT.md): round 0 = the input papers, each formula once (unless
                    --no-originals), then rounds of variant papers "g<round>/<id>" until --equations is reached
  OUT.stats.json    the run's figures: equations, papers, rounds, what was changed, time
  OUT.partial       the file being written; renamed to OUT only when complete (an interrupted run leaves nothing)

examples:
  make inputs:      eqsearch ingest extract $(eqsearch ingest fetch-corpus --cache ~/.cache/eqsearch/corpus \\
                        --set sagemath --set sphinx --set gretl) --out /tmp/demo
                    python benchmarks/hybrid_papers.py --mirrors /work/.mirror --out /tmp/hyb && \\
                        eqsearch ingest extract /tmp/hyb/hybrid-dev/* --out /tmp/hybx
  grow 5M:          python benchmarks/scale_corpus.py generate /tmp/demo/papers.jsonl /tmp/hybx/papers.jsonl \\
                        --areas benchmarks/realpapers3_counts.json --out /tmp/scale/5m.jsonl --equations 5000000
"""


def _sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(part.replace("_", "")) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of numbers: {text!r}") from None
    if not sizes or sizes[0] < 1:
        raise argparse.ArgumentTypeError("sizes must be positive numbers, e.g. 10000,50000")
    return sizes


def _share(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"a share between 0 and 1, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scale_corpus.py",
        description=__doc__.split("::")[0].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    generate = commands.add_parser(
        "generate",
        help="grow a collection of distinct formulas from real papers JSONL",
        description="Grow a collection of distinct formulas with their papers from real papers JSONL; the same "
        "inputs (in the same order) and seed give the same bytes.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    generate.add_argument("inputs", nargs="+", type=Path, metavar="PAPERS.jsonl", help="papers JSONL (.jsonl[.gz])")
    generate.add_argument("--out", type=Path, required=True, help="the collection to write (papers JSONL)")
    generate.add_argument(
        "--equations", type=int, required=True, help="equation documents to write (displays + indexed inline)"
    )
    generate.add_argument("--seed", type=int, default=0, help="seed of every random choice (default 0)")
    generate.add_argument(
        "--areas",
        type=Path,
        nargs="+",
        default=[],
        help="JSON files of paper id -> field, for papers without arXiv metadata (benchmarks/realpapers3_counts.json) "
        "(default: a paper's field is its arXiv category's archive, else its kind and source name)",
    )
    generate.add_argument(
        "--no-originals", action="store_true", help="write only variant papers, not the real papers themselves"
    )
    generate.add_argument(
        "--exchange",
        type=_share,
        default=0.25,
        help="share of formulas given another right-hand side or fraction part (0.25)",
    )
    generate.add_argument("--constants", type=_share, default=0.5, help="chance each constant is changed (0.5)")
    generate.add_argument(
        "--contexts", type=_share, default=0.5, help="chance a context gets a sentence of its field (0.5)"
    )
    generate.add_argument("--max-rounds", type=int, default=1000, help="most rounds over the inputs (1000)")
    generate.add_argument("--quiet", action="store_true", help="no progress bar")

    compare = commands.add_parser(
        "compare",
        help="term and size distributions of a generated collection beside the real one's",
        description="Structural terms per equation, formula size, distinct-term growth (Heaps), term document "
        "frequencies (Zipf), equations per paper and context length, for the real papers and for the first N "
        "equations of the generated collection at each size.",
    )
    compare.add_argument("--real", nargs="+", type=Path, required=True, help="the real papers JSONL")
    compare.add_argument("--generated", type=Path, required=True, help="the generated collection")
    compare.add_argument(
        "--sizes", type=_sizes, default=[50_000, 200_000], help="sizes of the generated (50000,200000)"
    )
    compare.add_argument("--variants-only", action="store_true", help="leave the generated round 0 (real papers) out")
    compare.add_argument("--json", type=Path, help="also write the figures as JSON here")
    compare.add_argument("--quiet", action="store_true", help="no progress lines")

    check = commands.add_parser(
        "check",
        help="convert a sample of generated LaTeX with KaTeX and compare with the generated MathML",
        description="Convert a seeded sample of the generated formulas' LaTeX with the project's converter "
        "(engine/latex, KaTeX in Node workers, with each paper's macros) and count how many give the structural terms "
        "of the generated MathML; also measures the converter's throughput on them.",
    )
    check.add_argument("collection", type=Path, help="a generated collection")
    check.add_argument("--sample", type=int, default=2000, help="formulas to convert (2000)")
    check.add_argument("--seed", type=int, default=0, help="seed of the sample (0)")
    check.add_argument("--workers", type=int, default=1, help="KaTeX worker processes (1)")
    check.add_argument("--show", type=int, default=5, help="disagreements to print (5)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from eqsearch.engine.errors import EqsearchError

    try:
        if args.command == "generate":
            return _generate(args, parser)
        if args.command == "compare":
            from corpus_growth.compare import compare_collections, format_table

            figures = compare_collections(
                args.real, args.generated, args.sizes, variants_only=args.variants_only, quiet=args.quiet
            )
            print(format_table(figures))
            if args.json:
                import json

                args.json.write_text(json.dumps(figures, indent=1) + "\n")
            return 0
        from corpus_growth.check import check_sample

        return check_sample(args.collection, args.sample, args.seed, args.workers, args.show)
    except EqsearchError as error:
        print(f"error: {error.message}" + (f"\nhint: {error.hint}" if error.hint else ""), file=sys.stderr)
        return error.exit_code


def _generate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.equations < 1:
        parser.error("--equations must be at least 1")
    if args.out.resolve() in {path.resolve() for path in args.inputs}:
        parser.error("--out must not be one of the inputs")
    from corpus_growth.generate import GrowthConfig, check_inputs, grow
    from tqdm import tqdm

    config = GrowthConfig(
        inputs=tuple(args.inputs),
        out=args.out,
        equations=args.equations,
        seed=args.seed,
        areas=tuple(args.areas),
        originals=not args.no_originals,
        exchange_share=args.exchange,
        constant_share=args.constants,
        context_share=args.contexts,
        max_rounds=args.max_rounds,
    )
    check_inputs(config.inputs, config.areas)  # before any output: a bad input is the only line printed
    bars: list[tqdm] = []

    def progress(written: int) -> None:
        if not bars:  # made after the first pass, so that the pass's line stands alone
            bars.append(tqdm(total=args.equations, unit="eq", unit_scale=True, disable=args.quiet, file=sys.stderr))
        bars[0].update(written - bars[0].n)

    # a terminated run unwinds like an interrupted one: the partial file is removed, OUT never half-written
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not args.quiet:
        print("learning fields, letters and samples from the inputs (one pass over them)...", file=sys.stderr)
    try:
        report = grow(config, progress)
    finally:
        for bar in bars:
            bar.close()
    print(
        f"{report.equations:,} equations ({report.displays:,} displays, {report.inline:,} inline) in "
        f"{report.papers:,} papers, {report.rounds} rounds, {report.seconds:.1f} s ({report.equations_per_s:,.0f} "
        f"equations/s, first pass {report.pass_seconds:.1f} s); real: {report.real_formulas:,} formulas, "
        f"{report.original_equations:,} distinct written; variants renamed {report.renamed:,}, constants changed "
        f"{report.constants_changed:,}, right-hand side exchanged {report.exchanged:,}; dropped as duplicates "
        f"{report.dropped_duplicates:,} -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
