"""Benchmark: ingest throughput, the vector-mapping decision, and hybrid query latency on the local node.

Run from the repository root against a running node (``eqsearch es start``); every index it makes starts with
``--prefix`` (default ``eqbench``) and ``cleanup`` deletes them::

    .venv/bin/python benchmarks/search.py ingest --sources py:sympy py:mpmath   # end-to-end ingest eq/s
    .venv/bin/python benchmarks/search.py decide --n 100000                    # similarity / index type / grouping
    .venv/bin/python benchmarks/search.py latency --n 100000 --clients 8       # p50/p95/p99, size, memory
    .venv/bin/python benchmarks/search.py replay --n 100000 --clients 8        # the same, Elasticsearch alone
    .venv/bin/python benchmarks/search.py structure-cost --n 1000000           # the structural list's parts
    .venv/bin/python benchmarks/search.py cleanup

Data: real equations, extracted from installed packages' docstrings by the real ingest job (KaTeX conversion
included). Large corpora replicate them with perturbed vectors (Gaussian noise, 0.15 of the vector's norm) and
copied text, which is what the issue allows; say so when quoting the figures. Vectors come from the model bundle
when one is installed, else from the hashing stand-in of the tests (feature hashing of MathML tokens, rescaled
to norms in (0.5, 1) so that inner product and cosine differ as they do for the KDD'20 model's soft-normalised
vectors). Each command prints one JSON object per measurement.
"""

# The commands live in modules beside this one, one concept each: search_ingest (ingest, index-cost), search_vectors
# (decide, recall), search_latency (latency, web, replay), search_profile (profile, structure-cost); their shared
# parts in search_load (corpus, indices, queries), search_service (client, encoder, service under test) and
# search_measure (what is measured and printed).

from __future__ import annotations

import argparse
import tempfile

from search_ingest import cmd_index_cost, cmd_ingest
from search_latency import cmd_latency, cmd_replay, cmd_web
from search_measure import emit
from search_profile import cmd_profile, cmd_structure_cost
from search_service import add_service_arguments, client_from_env
from search_vectors import cmd_decide, cmd_recall


def cmd_cleanup(args: argparse.Namespace) -> None:
    client, _ = client_from_env()
    names = list(client.indices.get(index=f"{args.prefix}-*", ignore_unavailable=True))
    for name in names:
        client.indices.delete(index=name)
    emit(measure="cleanup", deleted=names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prefix", default="eqbench", help="index prefix of everything this makes (eqbench)")
    parser.add_argument(
        "--bundle",
        help="model bundle to encode with (default: the installed one; 'standin': the hashing stand-in); it must be "
        "the one the base ingest used, or query vectors and indexed vectors come from different models",
    )
    parser.add_argument(
        "--base",
        action="append",
        metavar="PREFIX",
        help="a deployment whose equations are (part of) the base to replicate (repeatable; default: PREFIX-base, "
        "made by 'ingest'); duplicates dropped",
    )
    parser.add_argument("--base-url", help="the cluster holding the --base deployments (default: the configured one)")
    commands = parser.add_subparsers(dest="command", required=True)
    ingest = commands.add_parser("ingest", help="end-to-end ingest of real sources; equations/s")
    ingest.add_argument("--sources", nargs="+", default=["py:sympy"])
    ingest.add_argument(
        "--workers", type=int, default=0, help="extraction processes (0: in the job's process, one KaTeX worker)"
    )
    ingest.add_argument("--ratio", action="store_true", help="then the encoder alone on the same equations and cores")
    ingest.add_argument("--encoder-processes", type=int, default=2, help="encoder processes for --ratio (2: the cores)")
    ingest.add_argument("--profile", action="store_true", help="where the job's time goes (cProfile, by stage)")
    ingest.set_defaults(handler=cmd_ingest)
    web = commands.add_parser("web", help="queries/s of the web tier (gunicorn) beside the service in-process")
    web.add_argument("--n", type=int, default=1_000_000, help="which kept latency index (1000000)")
    web.add_argument("--clients", type=int, default=8)
    web.add_argument("--queries", type=int, default=400, help="distinct queries per kind (400)")
    web.add_argument("--kinds", nargs="+", default=["formula", "hybrid"], choices=("formula", "hybrid"))
    web.add_argument("--port", type=int, default=5077)
    web.add_argument("--workers", type=int, help="gunicorn workers (default: serve's, one per core)")
    web.set_defaults(handler=cmd_web)
    index_cost = commands.add_parser("index-cost", help="node CPU per indexed equation document, by field")
    index_cost.add_argument("--limit", type=int, default=20_000, help="documents of the base to load (20000)")
    index_cost.add_argument("--repeats", type=int, default=2)
    index_cost.set_defaults(handler=cmd_index_cost)
    decide = commands.add_parser("decide", help="recall/latency/size of the vector mapping variants")
    decide.add_argument("--n", type=int, default=100_000)
    decide.add_argument("--queries", type=int, default=200)
    decide.add_argument("--k", type=int, default=10)
    decide.add_argument("--num-candidates", type=int, default=100)
    decide.add_argument("--grouping", action="store_true", help="also collapse vs nested")
    decide.add_argument("--keep", action="store_true")
    decide.set_defaults(handler=cmd_decide)
    latency = commands.add_parser("latency", help="query latency with concurrent clients")
    latency.add_argument("--n", type=int, nargs="+", default=[100_000])
    latency.add_argument("--clients", type=int, default=8)
    latency.add_argument("--clients-list", type=int, nargs="+", metavar="C", help="several client counts in a row")
    latency.add_argument("--client-mode", choices=("processes", "threads"), default="processes")
    latency.add_argument("--kinds", nargs="+", choices=("formula", "keyword", "hybrid", "hybrid-grouped"))
    latency.add_argument("--queries", type=int, default=800, help="distinct queries per kind (800)")
    latency.add_argument("--rebuild", action="store_true")
    latency.add_argument("--keep", action="store_true")
    add_service_arguments(latency)
    latency.set_defaults(handler=cmd_latency)
    profile = commands.add_parser("profile", help="CPU per query by request kind (Python vs Elasticsearch)")
    profile.add_argument("--n", type=int, default=1_000_000, help="which kept latency index (1000000)")
    profile.add_argument("--queries", type=int, default=200, help="distinct queries per stage (200)")
    profile.add_argument("--repeats", type=int, default=3)
    profile.add_argument("--cprofile", type=int, default=0, metavar="TOP", help="cProfile the hybrid stage, top N")
    profile.add_argument("--es-profile", type=int, default=0, metavar="Q", help="ES profile API over Q queries")
    profile.add_argument("--stages", nargs="+", help="only the stages whose names start with these")
    add_service_arguments(profile)
    profile.set_defaults(handler=cmd_profile)
    replay = commands.add_parser(
        "replay", help="Elasticsearch's share of the latency: recorded requests replayed by bare HTTP clients"
    )
    replay.add_argument("--n", type=int, default=1_000_000, help="which kept latency index (1000000)")
    replay.add_argument("--clients", type=int, default=8)
    replay.add_argument("--queries", type=int, default=800, help="distinct queries per kind (800)")
    replay.add_argument(
        "--kinds", nargs="+", default=["hybrid"], choices=("formula", "keyword", "hybrid", "hybrid-grouped")
    )
    replay.add_argument(
        "--ranking-only",
        action="store_true",
        help="replay only each query's first request (the ranked lists), not the page fetch: what the ranking costs",
    )
    add_service_arguments(replay)
    replay.set_defaults(handler=cmd_replay)
    structure_cost = commands.add_parser(
        "structure-cost",
        help="node CPU of the structural list by part (first stage, each rescore), replayed from hybrid queries",
    )
    structure_cost.add_argument("--n", type=int, default=1_000_000, help="which kept latency index (1000000)")
    structure_cost.add_argument("--queries", type=int, default=200, help="distinct hybrid queries (200)")
    structure_cost.add_argument("--repeats", type=int, default=3, help="rounds over every variant (3)")
    add_service_arguments(structure_cost)
    structure_cost.set_defaults(handler=cmd_structure_cost)
    recall = commands.add_parser("recall", help="recall@10 of formula search vs exact kNN, per candidate depth")
    recall.add_argument("--n", type=int, default=1_000_000, help="which kept latency index (1000000)")
    recall.add_argument("--queries", type=int, default=200)
    recall.add_argument("--depths", type=int, nargs="+", default=[100, 50])
    recall.add_argument("--factors", type=int, nargs="+", default=[3])
    recall.set_defaults(handler=cmd_recall)
    cleanup = commands.add_parser("cleanup", help="delete every index of --prefix")
    cleanup.set_defaults(handler=cmd_cleanup)
    args = parser.parse_args()
    args.handler(args)


if __name__ == "__main__":
    tempfile.tempdir = tempfile.gettempdir()
    main()
