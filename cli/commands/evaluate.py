"""`eqsearch evaluate held-out|labelled|keywords|trec|formulas|hybrid`: the encoder's and the search's figures.

Imports nothing heavy at module level. `held-out` needs torch (extra `train`); `labelled`, `keywords` and `trec` run
on the runtime install (ONNX bundle, KaTeX, numpy) through `eqsearch.evaluation`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from eqsearch.commands.train import need_torch
from eqsearch.engine.errors import EqsearchError


def _graph_encoder(bundle: str | None) -> Any:
    """The bundle's encoder, which must be a graph encoder: the evaluations featurize once for it and for the bag of
    words (None: the shipped graph network, the search bundle's ``graph`` part)."""
    from eqsearch.engine.model.bundle import default_bundle_path
    from eqsearch.engine.model.encoder import GraphEncoder, load_encoder, onnx_provider_setting

    encoder = load_encoder(
        bundle if bundle is not None else default_bundle_path(), provider=onnx_provider_setting(os.environ)
    )
    if not isinstance(encoder, GraphEncoder):
        raise EqsearchError(
            f"the bundle {bundle or 'shipped with eqsearch'} holds a '{encoder.kind}' encoder; these evaluations "
            "need a graph encoder (kdd20-gcn)"
        )
    return encoder


def _held_out_data_for_bundle(args: argparse.Namespace) -> tuple[Any, Any]:
    """The ONNX encoder of a bundle and the held-out split and triplets its training config draws from a corpus."""
    from eqsearch.training.config import config_field_names, load_train_config
    from eqsearch.training.loop import prepare_data

    encoder = _graph_encoder(args.bundle)
    recorded = encoder.manifest.raw.get("training")
    if not isinstance(recorded, dict):
        raise EqsearchError(
            f"the bundle {args.bundle} records no training config: its held-out split cannot be rebuilt",
            hint="evaluate the training checkpoint instead (--checkpoint)",
        )
    known = set(config_field_names())
    values = {k: v for k, v in recorded.items() if k in known}
    # The bundle's own vocabulary, so that the featurization is the one its ONNX model was exported with.
    values.update(corpus=args.corpus, run_dir=args.run_dir, vocabulary=str(encoder.manifest.vocabulary_path))
    data = prepare_data(load_train_config(None, values))
    recorded_data = encoder.manifest.raw.get("data") or {}
    expected = recorded_data.get("test")
    if isinstance(expected, dict):
        found = {k: data.corpus_summary["test"].get(k) for k in ("papers", "sections", "equations")}
        wanted = {k: expected.get(k) for k in found}
        if found != wanted:
            print(
                f"warning: this corpus gives a held-out split of {found}, the bundle was evaluated on {wanted}: "
                "the corpus file differs from the one it was trained on, so these figures are not the manifest's",
                file=sys.stderr,
            )
        elif data.corpus_summary["eval_triplet_sources"] != recorded_data.get("eval_triplet_sources"):
            # Same held-out split, other triplets: the sampler indexes papers in file order, so the same corpus
            # written in another order (a parallel extraction) gives another draw with the same seed.
            print(
                "note: the held-out split matches the bundle's evaluation but the triplets do not (the corpus lists "
                "its papers in another order?): these figures are another draw from the same papers",
                file=sys.stderr,
            )
    return encoder, data


def _run_evaluate_held_out(args: argparse.Namespace) -> int:
    if (args.bundle is None) != (args.corpus is None):
        args.parser.error("--bundle and --corpus go together (a checkpoint's config names its corpus)")
    if args.resamples < 1 or not 0.0 < args.delta < 1.0:
        args.parser.error(f"need --resamples >= 1 and 0 < --delta < 1, got {args.resamples} and {args.delta}")
    need_torch()
    from eqsearch.training.evaluate import evaluate_held_out, held_out_report

    bootstrap = {"delta": args.delta, "resamples": args.resamples, "bootstrap_seed": args.bootstrap_seed}
    if args.checkpoint is not None:
        from eqsearch.training.config import TrainConfig
        from eqsearch.training.loop import load_encoder, prepare_data

        model, state = load_encoder(args.checkpoint)
        data = prepare_data(TrainConfig(**state["config"]))
        report = evaluate_held_out(model, data.test, data.eval_triplets, **bootstrap)
    else:
        encoder, data = _held_out_data_for_bundle(args)
        vocab = data.vocabulary
        embeddings = encoder.encode_graphs(data.test.graphs)
        report = held_out_report(
            embeddings, data.test, data.eval_triplets, (vocab.n_tags, vocab.n_attrs, vocab.n_chars), **bootstrap
        )
    print(report.describe())
    print(f"by positive source: {json.dumps(report.by_source)}")
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_dict(), indent=1) + "\n")
    return 0


def _rankings(args: argparse.Namespace) -> list[Any]:
    """The rankings named by ``--ranker`` (a parser error for an unknown one)."""
    from eqsearch.engine.search.rankers import DEFAULT_RANKER, get_ranker

    names = [DEFAULT_RANKER if name == "default" else name for name in args.ranker]
    try:
        return [get_ranker(name) for name in dict.fromkeys(names)]
    except ValueError as error:
        args.parser.error(str(error))


def _with_search_rows(encoded: Any, encoder: Any, converter: Any, rankings: list[Any], *, quiet: bool) -> Any:
    """The labelled set with one ``search:<ranker>`` representation per ranking, searched on the configured cluster
    (a ranking with an encoder bundle of its own ingests and searches with that bundle's encoder)."""
    from eqsearch.engine.es import EsConfig, LocalNode, LocalNodeConfig, connect
    from eqsearch.evaluation.formulas import ranking_encoder
    from eqsearch.evaluation.labelled import search_similarity, with_search
    from tqdm import tqdm

    config = EsConfig.from_env()
    if config.url is None:  # the managed local node: started when it is not running
        LocalNode(LocalNodeConfig.from_env()).start()
    client, _ = connect(config)
    for ranking in rankings:
        bar = None if quiet else tqdm(total=len(encoded.equations), unit="query", desc=ranking.name, file=sys.stderr)
        try:
            on_query = None if bar is None else (lambda _, bar=bar: bar.update(1))
            searcher = encoder if ranking.bundle is None else ranking_encoder(ranking)
            similarity = search_similarity(encoded, client, searcher, converter, ranking, on_query=on_query)
        finally:
            if bar is not None:
                bar.close()
        encoded = with_search(encoded, ranking.name, similarity)
    return encoded


def _run_evaluate_labelled(args: argparse.Namespace) -> int:
    from eqsearch.engine.latex.converter import KatexConverter
    from eqsearch.evaluation.labelled import encode_labelled_set, labelled_report, write_trec_files
    from eqsearch.evaluation.labelled_set import DEFAULT_LABELLED_SET, read_labelled_set

    if args.depth < 1:
        args.parser.error(f"--depth must be positive, got {args.depth}")
    rankings = _rankings(args)
    if args.bundle is not None:
        from eqsearch.evaluation.formulas import ranking_bundle

        for ranking in rankings:  # --bundle is the model rows' graph bundle; a ranker's own bundle wins nowhere else
            if ranking.bundle is not None:
                try:
                    ranking_bundle(ranking, args.bundle)
                except EqsearchError as error:
                    args.parser.error(error.message)
    path = Path(args.file) if args.file else DEFAULT_LABELLED_SET
    equations = read_labelled_set(path)
    from eqsearch.engine.model.encoder import load_encoder, onnx_provider_setting

    encoder = load_encoder(
        args.bundle, provider=onnx_provider_setting(os.environ)
    )  # any kind: a graph encoder's graphs are featurized once, for it and the bag
    with KatexConverter() as converter:
        encoded = encode_labelled_set(equations, encoder, converter)
        if rankings:
            encoded = _with_search_rows(encoded, encoder, converter, rankings, quiet=args.quiet)
    report = labelled_report(encoded, equations, path, encoder.manifest.path)
    print(
        f"{report.source}: {report.equations} equations in {report.categories} categories; {report.evaluated} "
        f"evaluated, {len(report.failures)} failed to convert, {len(report.approximate)} converted approximately"
    )
    for failure in report.failures:
        print(f"  not evaluated: {failure.id} (line {failure.line}): {failure.reason}: {failure.message}")
    if report.approximate:
        print(f"  approximate (evaluated): {', '.join(report.approximate)}")
    print(f"bundle: {report.bundle} ({encoder.kind}, {encoder.dim}-d, {encoder.similarity})")
    print(report.table())
    if args.per_category:
        print()
        print(report.category_table())
    if args.write_trec:
        for written in write_trec_files(encoded, args.write_trec, depth=args.depth):
            print(f"wrote {written}")
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_dict(), indent=1) + "\n")
    return 0


def _run_evaluate_keywords(args: argparse.Namespace) -> int:
    from functools import partial

    from eqsearch.engine.latex.converter import KatexConverter
    from eqsearch.engine.model.featurize import featurize_mathml
    from eqsearch.evaluation.keywords import (
        DEFAULT_QUERY_SET,
        build_collection,
        keyword_study,
        read_keyword_queries,
    )
    from eqsearch.ingest.records import read_papers
    from tqdm import tqdm

    if args.depth < 1:
        args.parser.error(f"--depth must be positive, got {args.depth}")
    if not Path(args.corpus).is_file():
        args.parser.error(f"--corpus {args.corpus}: no such file (a papers JSONL from 'eqsearch ingest extract')")
    path = Path(args.queries) if args.queries else DEFAULT_QUERY_SET
    queries = read_keyword_queries(path)
    encoder = _graph_encoder(args.bundle)
    with tqdm(desc="reading the corpus", unit="eq", disable=args.quiet) as bar:
        collection = build_collection(
            read_papers(Path(args.corpus)),
            partial(featurize_mathml, vocab=encoder.vocabulary),
            progress=lambda n: bar.update(n - bar.n),
        )
    with KatexConverter() as converter:
        report = keyword_study(queries, collection, encoder, converter, depth=args.depth)
    skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(report.skipped.items())) or "none"
    print(
        f"{path}: {report.queries} queries, {report.evaluated} searched; {report.collection:,} equations of "
        f"{args.corpus} searched (left out: {skipped})"
    )
    for failure in report.failures:
        print(f"  not searched: {failure.id} (line {failure.line}): {failure.reason}: {failure.message}")
    print(f"bundle: {encoder.manifest.path} ({encoder.kind}, {encoder.dim}-d, {encoder.similarity})")
    print(report.table())
    if args.per_query:
        print()
        print(report.query_table())
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_dict(), indent=1) + "\n")
    return 0


def _run_evaluate_formulas(args: argparse.Namespace) -> int:
    from eqsearch.engine.search.rankers import DEFAULT_RANKER, RANKERS, get_ranker

    if args.list_rankers:
        width = max(len(name) for name in RANKERS)
        for name, ranker in RANKERS.items():
            mark = " (default)" if name == DEFAULT_RANKER else ""
            print(f"{name:<{width}}  {ranker.description}{mark}")
        return 0
    missing = [flag for flag in ("collection", "topics", "qrels") if getattr(args, flag) is None]
    if missing:
        args.parser.error("need " + ", ".join(f"--{flag}" for flag in missing) + " (or --list-rankers)")
    if not 1 <= args.depth <= 1000:
        args.parser.error(f"--depth must lie in 1..1000 (the result window), got {args.depth}")
    try:
        ranking = get_ranker(args.ranker or DEFAULT_RANKER)
    except ValueError as error:
        args.parser.error(str(error))
    if args.node_vectors and not ranking.maxsim_window:
        args.parser.error(f"--node-vectors goes with a MaxSim ranker; {ranking.name} has no MaxSim rerank")
    if args.node_vectors and args.no_node_vectors:
        args.parser.error("--node-vectors and --no-node-vectors contradict each other")
    # a ranker whose MaxSim runs only in the node is measured as it is meant to run: with node vectors
    node_vectors = args.node_vectors or (ranking.maxsim_in_node and not args.no_node_vectors)

    from eqsearch.engine.es import EsConfig, LocalNode, LocalNodeConfig, connect
    from eqsearch.engine.latex import KatexConverter
    from eqsearch.evaluation.formulas import evaluate_formulas, ranking_encoder
    from eqsearch.evaluation.trec import read_qrels, write_run
    from tqdm import tqdm

    qrels = read_qrels(args.qrels)
    encoder = ranking_encoder(ranking, args.bundle)  # a ranker with a bundle of its own is measured with it
    config = EsConfig.from_env()
    if config.url is None:  # the managed local node, as `make run` uses it: started when it is not running
        LocalNode(LocalNodeConfig.from_env()).start()
    client, _ = connect(config)
    ingest_bar = None if args.quiet else tqdm(unit="formula", desc="ingest", file=sys.stderr)
    topic_bar = None

    def ingested(state: Any) -> None:
        if ingest_bar is not None:
            ingest_bar.total = state.papers_total
            ingest_bar.update(state.papers_done - ingest_bar.n)

    def searched(topic: str) -> None:
        nonlocal topic_bar
        if args.quiet:
            return
        if topic_bar is None:
            if ingest_bar is not None:
                ingest_bar.close()
            topic_bar = tqdm(unit="topic", desc="search", file=sys.stderr)
        topic_bar.update(1)

    try:
        with KatexConverter() as converter:
            evaluation = evaluate_formulas(
                client,
                encoder,
                converter,
                args.collection,
                args.topics,
                qrels,
                ranking=ranking,
                depth=args.depth,
                keep=args.keep,
                on_ingest=ingested,
                on_topic=searched,
                node_vectors=node_vectors,
            )
    finally:
        for bar in (ingest_bar, topic_bar):
            if bar is not None:
                bar.close()
    summary = evaluation.to_json()
    counts = evaluation.ingest["counts"]
    print(
        f"ranker {ranking.name}: {summary['topics']} topics, {evaluation.collection_size:,} formulas "
        f"({counts.get('equations_with_vector', 0):,} with a vector"
        + (f", {counts.get('equations_with_node_vectors', 0):,} with node vectors" if node_vectors else "")
        + f"; ingest {evaluation.ingest_seconds:.0f} s), "
        f"depth {args.depth}, median {summary['query_ms_median']:.0f} ms per topic"
    )
    for reason, count in sorted(evaluation.ingest["errors_by_reason"].items(), key=lambda kv: -kv[1]):
        print(f"  {count:>7,}  {reason} (still indexed: found by the structure of their LaTeX)")
    print(
        f"nDCG′ {summary['ndcg']:.4f}  MAP′ {summary['map']:.4f}  P′@10 {summary['p10']:.4f}  "
        f"bpref {summary['bpref']:.4f}"
    )
    if args.per_topic:
        for topic, values in summary["per_topic"].items():
            print(f"  {topic}\tnDCG′={values['ndcg']:.4f}\tMAP′={values['map']:.4f}\tP′@10={values['p10']:.4f}")
    if args.run:
        write_run(args.run, evaluation.run, tag=f"eqsearch-{ranking.name}")
        print(f"run written to {args.run}")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"figures written to {args.json}")
    if args.keep:
        print(
            f"indices kept under the prefix {evaluation.index_prefix} (EQSEARCH_INDEX_PREFIX={evaluation.index_prefix})"
        )
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``evaluate`` and its kinds to the `eqsearch` CLI."""
    evaluate = subparsers.add_parser(
        "evaluate",
        help="evaluate an encoder: held-out ranking score, a labelled equation set, or TREC runs",
        description="Evaluate the formula encoder (KDD'20 §5-6) against the bag-of-words baseline, or score TREC "
        "runs with ARQMath's measures.",
    )
    kinds = evaluate.add_subparsers(dest="evaluation", metavar="KIND", required=True)
    held_out = kinds.add_parser(
        "held-out",
        help="ranking score on the held-out papers' triplets (needs eqsearch[train])",
        description="Ranking score (KDD'20 eq. 3) of the model and of the bag-of-words baseline on the held-out "
        "triplets, with the eq. 9 / Theorem 5.1 bounds on each and a paper-clustered bootstrap interval of the "
        "difference model - bag of words. Give a training checkpoint, or a bundle and the corpus it was trained on.",
    )
    source = held_out.add_mutually_exclusive_group(required=True)
    source.add_argument("--checkpoint", type=Path, help="a training checkpoint (its config names the corpus)")
    source.add_argument("--bundle", help="a model bundle whose manifest records its training config (needs --corpus)")
    held_out.add_argument("--corpus", help="with --bundle: the papers JSONL the bundle was trained on")
    held_out.add_argument(
        "--run-dir",
        default="runs/evaluate-held-out",
        help="with --bundle: where the featurized corpus is cached (default runs/evaluate-held-out)",
    )
    held_out.add_argument("--delta", type=float, default=0.05, help="1 - confidence of bounds and interval (0.05)")
    held_out.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples of the papers (2000)")
    held_out.add_argument("--bootstrap-seed", type=int, default=0, help="seed of the bootstrap (0)")
    held_out.add_argument("--json", help="also write the figures to this JSON file")
    held_out.set_defaults(handler=_run_evaluate_held_out, parser=held_out)

    labelled = kinds.add_parser(
        "labelled",
        help="1-NN accuracy, ranking score and retrieval figures on a labelled equation set",
        description="Convert a labelled equation set with KaTeX, encode it with a bundle's ONNX encoder and report "
        "1-NN leave-one-out accuracy and ranking score (KDD'20 §6.1), P@5, MAP and uMAP of the leave-one-out "
        "rankings, for the model and the bag-of-words baseline. Runs without torch. With --ranker, also the search "
        "engine itself: the set is ingested into temporary indices (starting the local node when no cluster is "
        "configured) and every equation is searched as a formula-only query with that ranking, as the UI does.",
    )
    labelled.add_argument(
        "file", nargs="?", help="labelled set (format: eqsearch/evaluation/labelled.py; default: the shipped set)"
    )
    labelled.add_argument("--bundle", help="model bundle directory (default: the installed one)")
    labelled.add_argument("--per-category", action="store_true", help="also print the 1-NN accuracy per category")
    labelled.add_argument(
        "--ranker",
        action="append",
        default=[],
        metavar="NAME",
        help="also score the search engine with this formula ranking ('default': production's; repeatable; "
        "'eqsearch evaluate formulas --list-rankers' lists them)",
    )
    labelled.add_argument(
        "--write-trec",
        metavar="DIR",
        help="also write topics.tsv, qrels.txt and one leave-one-out run per representation to DIR",
    )
    labelled.add_argument("--depth", type=int, default=1000, help="results per topic in the written runs (1000)")
    labelled.add_argument("--json", help="also write the figures to this JSON file")
    labelled.add_argument("--quiet", action="store_true", help="no progress bars")
    labelled.set_defaults(handler=_run_evaluate_labelled, parser=labelled)

    keywords = kinds.add_parser(
        "keywords",
        help="the search-engine study of KDD'20 §6.3: formula queries over a corpus, judged by keywords",
        description="Search every display equation of a papers JSONL with each query of a keyword query set, for "
        "the model and the bag-of-words baseline; a result is relevant when one of the query's keywords occurs "
        "around it (paper title, section title, context). Reports P@10, P@100, P@1000 and uMAP (the paper's "
        "Table 3). Runs without torch. Format and heuristic: eqsearch/evaluation/keywords.py.",
    )
    keywords.add_argument(
        "queries", nargs="?", help="keyword query set (default: the shipped set, evaluation/data/keyword-queries.tsv)"
    )
    keywords.add_argument("--corpus", required=True, help="papers JSONL (.gz too) whose equations are searched")
    keywords.add_argument("--bundle", help="model bundle directory (default: the installed one)")
    keywords.add_argument("--depth", type=int, default=1000, help="results per query (1000, the paper's)")
    keywords.add_argument("--per-query", action="store_true", help="also print P@100 per query (Table 4)")
    keywords.add_argument("--quiet", action="store_true", help="no progress bar")
    keywords.add_argument("--json", help="also write the figures to this JSON file")
    keywords.set_defaults(handler=_run_evaluate_keywords, parser=keywords)

    from eqsearch.commands.evaluate_trec import register_trec

    register_trec(kinds)

    formulas = kinds.add_parser(
        "formulas",
        help="formula retrieval end to end: ingest a collection, search its topics, score with ARQMath's measures",
        description="Ingest a formula collection into temporary indices through the production ingest job (one "
        "document per formula, found by its id), search each topic as a formula-only query through the production "
        "search service (what the UI and the API do), and print nDCG′, MAP′, P′@10 and bpref (ARQMath's prime "
        "measures). Uses the configured cluster, or the managed local node (started when needed). Files: "
        "COLLECTION and TOPICS are 'visual_id<TAB>latex' / 'topic<TAB>latex' lines under that header row; QRELS "
        "is TREC qrels.",
    )
    formulas.add_argument("--collection", type=Path, help="the formulas: a 'visual_id<TAB>latex' TSV")
    formulas.add_argument("--topics", type=Path, help="the queries: a 'topic<TAB>latex' TSV")
    formulas.add_argument("--qrels", type=Path, help="TREC qrels: topic iteration visual_id grade")
    formulas.add_argument("--ranker", default=None, help="a registered formula ranking (default: production's)")
    formulas.add_argument("--list-rankers", action="store_true", help="list the registered rankers and exit")
    formulas.add_argument("--run", type=Path, help="write the TREC run to this file")
    formulas.add_argument("--json", type=Path, help="write the figures (ndcg, map, p10, per topic...) to this file")
    formulas.add_argument("--depth", type=int, default=1000, help="results per topic, at most 1000 (1000)")
    formulas.add_argument("--keep", action="store_true", help="keep the temporary indices (default: deleted)")
    formulas.add_argument("--bundle", help="model bundle directory (default: the installed one)")
    formulas.add_argument(
        "--node-vectors",
        action="store_true",
        help="with a MaxSim ranker: the ingest stores each formula's node vectors (as 'ingest run --node-vectors'), "
        "so that MaxSim is scored inside the node where every node has eqsearch's plugin (large: ~1.5 KB a formula "
        "for the 64-d projections, ~12 KB for the 512-d states); on for a ranker whose MaxSim runs in the node only "
        "(structure+embedding+rerank+maxsim-in-node)",
    )
    formulas.add_argument(
        "--no-node-vectors", action="store_true",
        help="ingest without node vectors: a ranker whose MaxSim runs in the node only then goes without it (as a "
        "deployment that stores none, or a cluster without eqsearch's plugin)",
    )  # fmt: skip
    formulas.add_argument("--per-topic", action="store_true", help="also print every topic's measures")
    formulas.add_argument("--quiet", action="store_true", help="no progress bars")
    formulas.set_defaults(handler=_run_evaluate_formulas, parser=formulas)

    from eqsearch.commands.evaluate_hybrid import register_hybrid

    register_hybrid(kinds)
