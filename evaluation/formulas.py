"""Formula retrieval measured end to end, through the production path: ARQMath-style topics against a collection.

The collection (``visual_id<TAB>latex`` per line under a header) becomes a papers JSONL with one paper per formula
(the paper id is the formula's id), which the real ingest job (`eqsearch.ingest.jobs.IngestJob`) converts with
KaTeX, encodes and indexes into indices of their own on the configured cluster. Each topic (``topic<TAB>latex``) is
then searched as a formula-only query by the real `SearchService` (what the UI and the API do for a formula without
keywords), page after page down to the asked depth; the hits' paper ids form the TREC run, scored with ARQMath's
prime measures (`eqsearch.evaluation.trec`). The indices are deleted afterwards unless asked to keep them.

A ranking that names an encoder bundle of its own (`FormulaRanking.bundle`, e.g. the ECML'19 bitmap CNN's) is
ingested and searched with that bundle's encoder (`ranking_encoder`); `evaluate_formulas` refuses another one.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.index import IndexAdmin
from eqsearch.engine.search import MAX_PAGE_SIZE, MAX_RESULT_WINDOW, FormulaRanking, HybridQuery, SearchService
from eqsearch.evaluation.trec import Qrels, TrecReport, evaluate_run
from eqsearch.evaluation.tsv import read_lines
from eqsearch.ingest.jobs import IngestJob, IngestJobConfig, JobProgress, JobReport

__all__ = [
    "FormulaEvaluation",
    "FormulaFileError",
    "IndexedCollection",
    "evaluate_formulas",
    "formula_ranking",
    "indexed_collection",
    "ranking_bundle",
    "ranking_encoder",
    "read_formula_file",
]


def ranking_bundle(ranking: FormulaRanking, bundle: str | Path | None = None) -> Path | None:
    """The bundle directory a ranking is evaluated with: the shipped bundle it names, else ``bundle`` (None: the
    default bundle).

    Raises:
        EqsearchError: ``bundle`` is given and is not the ranking's own bundle.
    """
    from eqsearch.engine.model import shipped_bundle_path

    if ranking.bundle is None:
        return Path(bundle) if bundle is not None else None
    own = shipped_bundle_path(ranking.bundle)
    if bundle is not None and Path(bundle).resolve() != own.resolve():
        raise EqsearchError(
            f"the ranker {ranking.name!r} searches the vectors of its own bundle ({ranking.bundle}, {own}), "
            f"not those of {bundle}",
            hint=f"drop --bundle, or give --bundle {own}",
        )
    return own


def ranking_encoder(ranking: FormulaRanking, bundle: str | Path | None = None, **options: Any) -> Any:
    """The encoder a ranking is evaluated with (`ranking_bundle`), loaded by `engine.model.load_encoder`.

    Raises:
        EqsearchError: ``bundle`` contradicts the ranking's bundle, or the bundle does not load.
    """
    from eqsearch.engine.model import load_encoder

    return load_encoder(ranking_bundle(ranking, bundle), **options)


def _check_ranking_encoder(ranking: FormulaRanking, encoder: Any) -> None:
    """Refuse an encoder that is not the one the ranking's own bundle holds (its vectors would be another model's)."""
    if ranking.bundle is None:
        return
    from eqsearch.engine.model import read_manifest, shipped_bundle_path

    wanted = read_manifest(shipped_bundle_path(ranking.bundle)).identity
    if getattr(encoder, "identity", None) != wanted:
        raise EqsearchError(
            f"the ranker {ranking.name!r} needs the encoder of {ranking.bundle} ({wanted}), "
            f"got {getattr(encoder, 'identity', encoder)}",
            hint="load it with eqsearch.evaluation.formulas.ranking_encoder(ranking)",
        )


class FormulaFileError(EqsearchError):
    """A collection or topics file that is not ``id<TAB>latex`` lines under a header row."""


def read_formula_file(path: str | Path, id_column: str) -> list[tuple[str, str]]:
    """The ``(id, latex)`` rows of a collection (``visual_id``) or topics (``topic``) file.

    The first line is the header, ``<id_column><TAB>latex``; every other non-blank line is an id, a tab, and the
    LaTeX (which may itself hold tabs). Ids must be unique.

    Raises:
        FormulaFileError: a missing file, a wrong header, a line without a tab, an empty or repeated id.
    """
    path = Path(path)
    lines = read_lines(path, "the formula file", FormulaFileError)
    expected = f"{id_column}\tlatex"
    if not lines or lines[0].strip("\ufeff").rstrip("\r") != expected:
        found = lines[0][:60] if lines else "an empty file"
        raise FormulaFileError(f"{path}: the first line must be the header {expected!r}, found {found!r}")
    rows: list[tuple[str, str]] = []
    seen: set[str] = set()
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        if "\t" not in line:
            raise FormulaFileError(f"{path}:{number}: expected '{id_column}<TAB>latex', found no tab")
        identifier, latex = line.split("\t", 1)
        identifier = identifier.strip()
        if not identifier:
            raise FormulaFileError(f"{path}:{number}: the {id_column} is empty")
        if identifier in seen:
            raise FormulaFileError(f"{path}:{number}: {id_column} {identifier!r} appears twice")
        seen.add(identifier)
        rows.append((identifier, latex.rstrip("\r")))
    if not rows:
        raise FormulaFileError(f"{path} holds a header and no formula")
    return rows


def _papers(rows: Sequence[tuple[str, str]], origin: str) -> Iterator[dict[str, Any]]:
    """One papers-JSONL record per formula: the paper's id is the formula's id, its one equation the formula."""
    for line, (identifier, latex) in enumerate(rows, start=2):
        yield {
            "format_version": 1,
            "id": identifier,
            "kind": "formula",
            "source": f"{origin}:{line}",
            "sections": [{"equations": [{"latex": latex, "environment": "equation"}]}],
        }


@dataclass(frozen=True)
class FormulaEvaluation:
    """What one evaluation measured.

    Attributes:
        ranker: the formula ranking searched with.
        report: the ARQMath measures (means and per topic).
        run: topic -> ``(formula id, score)``, best first (what the TREC run file holds).
        collection_size: formulas in the collection.
        ingest: the ingest job's counts and its errors by reason (formulas KaTeX refused are still indexed, found
            by their structure read from the LaTeX).
        ingest_seconds: wall time of the ingest job.
        query_ms: per topic, wall milliseconds of its searches (all pages).
        index_prefix: the indices' prefix (kept only with ``keep``).
        kept: whether the indices were kept.
    """

    ranker: FormulaRanking
    report: TrecReport
    run: dict[str, list[tuple[str, float]]]
    collection_size: int
    ingest: dict[str, Any]
    ingest_seconds: float
    query_ms: dict[str, float] = field(default_factory=dict)
    index_prefix: str = ""
    kept: bool = False

    def to_json(self) -> dict[str, Any]:
        """The JSON summary: ``ndcg``, ``map``, ``p10``, ``bpref``, ``topics`` (how many), ``per_topic`` and the
        rest of what was measured."""
        means = self.report.means
        return {
            "ranker": self.ranker.name,
            "ranker_config": {k: v for k, v in asdict(self.ranker).items() if k not in ("name", "description")},
            "ndcg": means["ndcg_prime"],
            "map": means["map_prime"],
            "p10": means["p_prime_10"],
            "bpref": means["bpref"],
            "topics": len(self.report.topics),
            "per_topic": {
                topic: {
                    "ndcg": values["ndcg_prime"],
                    "map": values["map_prime"],
                    "p10": values["p_prime_10"],
                    "bpref": values["bpref"],
                    "query_ms": self.query_ms.get(topic),
                }
                for topic, values in self.report.per_topic.items()
            },
            "judged_share": self.report.judged_share,
            "depth": self.report.depth,
            "collection_size": self.collection_size,
            "ingest": self.ingest,
            "ingest_seconds": self.ingest_seconds,
            "query_ms_median": statistics.median(self.query_ms.values()) if self.query_ms else None,
            "index_prefix": self.index_prefix if self.kept else None,
        }


def evaluate_formulas(
    client: Elasticsearch,
    encoder: Any,
    converter: Any,
    collection: str | Path,
    topics: str | Path,
    qrels: Qrels,
    *,
    ranking: FormulaRanking,
    depth: int = MAX_RESULT_WINDOW,
    index_prefix: str | None = None,
    keep: bool = False,
    on_ingest: Callable[[JobProgress], None] | None = None,
    on_topic: Callable[[str], None] | None = None,
    node_vectors: bool = False,
) -> FormulaEvaluation:
    """Ingest a formula collection into fresh indices, search every topic, score the run.

    Args:
        client: the cluster (`engine.es.connect`).
        encoder: the model bundle's encoder (`engine.model.load_encoder`).
        converter: the KaTeX converter, for the ingest job and the queries.
        collection: the collection file (``visual_id<TAB>latex``).
        topics: the topics file (``topic<TAB>latex``).
        qrels: the judgements (`evaluation.trec.read_qrels`).
        ranking: the formula ranking to search with (`engine.search.rankers`).
        depth: results per topic, at most `MAX_RESULT_WINDOW`.
        index_prefix: the indices' prefix (default: a new ``eqsearch-eval-<random>``).
        keep: keep the indices afterwards (default: deleted, also when something fails).
        on_ingest: called with the ingest job's progress.
        on_topic: called with each topic id once it is searched.
        node_vectors: the ingest job stores the ranking's node vectors (``maxsim_nodes``), so that its MaxSim rerank
            is scored inside the node where every node has eqsearch's plugin (as a deployment's ``ingest run
            --node-vectors`` does).

    Raises:
        FormulaFileError: a malformed collection or topics file.
        ValueError: a depth outside 1..`MAX_RESULT_WINDOW`.
        EqsearchError: the ingest job or a search failed (the indices are deleted unless ``keep``), or ``ranking``
            names a bundle of its own and ``encoder`` is not its encoder.
    """
    if not 1 <= depth <= MAX_RESULT_WINDOW:
        raise ValueError(f"depth must lie in 1..{MAX_RESULT_WINDOW}, got {depth}")
    _check_ranking_encoder(ranking, encoder)
    formulas = read_formula_file(collection, "visual_id")
    queries = read_formula_file(topics, "topic")
    with indexed_collection(
        client,
        encoder,
        converter,
        formulas,
        str(collection),
        index_prefix=index_prefix,
        keep=keep,
        on_ingest=on_ingest,
        node_vectors=ranking.maxsim_nodes if node_vectors else None,
    ) as indexed:
        service = indexed.service(encoder, converter, ranking=ranking, depth=depth)
        run: dict[str, list[tuple[str, float]]] = {}
        query_ms: dict[str, float] = {}
        for topic, latex in queries:
            began = time.perf_counter()
            run[topic] = formula_ranking(service, latex, depth)
            query_ms[topic] = (time.perf_counter() - began) * 1000.0
            if on_topic is not None:
                on_topic(topic)
        report = evaluate_run(
            {topic: [doc for doc, _ in ranked] for topic, ranked in run.items()},
            qrels,
            topics=[topic for topic, _ in queries],
            depth=depth,
        )
    return FormulaEvaluation(
        ranker=ranking,
        report=report,
        run=run,
        collection_size=len(formulas),
        ingest={"counts": indexed.job.counts, "errors_by_reason": indexed.job.errors_by_reason},
        ingest_seconds=indexed.ingest_seconds,
        query_ms=query_ms,
        index_prefix=indexed.prefix,
        kept=keep,
    )


@dataclass(frozen=True)
class IndexedCollection:
    """A formula collection ingested into indices of its own (`indexed_collection`).

    Attributes:
        client: the cluster.
        prefix: the indices' prefix.
        job: the ingest job's report.
        ingest_seconds: wall time of the ingest job.
    """

    client: Elasticsearch
    prefix: str
    job: JobReport
    ingest_seconds: float

    def service(self, encoder: Any, converter: Any, *, ranking: FormulaRanking, depth: int) -> SearchService:
        """The production search service over these indices, with ``ranking``, ranking ``depth`` candidates."""
        return SearchService(
            self.client, encoder, converter, index_prefix=self.prefix, candidate_depth=depth, ranking=ranking
        )


@contextlib.contextmanager
def indexed_collection(
    client: Elasticsearch,
    encoder: Any,
    converter: Any,
    formulas: Sequence[tuple[str, str]],
    origin: str,
    *,
    index_prefix: str | None = None,
    keep: bool = False,
    on_ingest: Callable[[JobProgress], None] | None = None,
    node_vectors: str | None = None,
) -> Iterator[IndexedCollection]:
    """Ingest ``(id, latex)`` formulas through the real ingest job into fresh indices (one paper per formula, its id
    the formula's), and delete the indices when the block ends unless ``keep`` (also when something failed).

    Args:
        client: the cluster.
        encoder: the model bundle's encoder.
        converter: the KaTeX converter of the ingest job.
        formulas: ``(id, latex)`` pairs.
        origin: where they come from (the papers' ``source`` says it, with the line).
        index_prefix: the indices' prefix (default: a new ``eqsearch-eval-<random>``).
        keep: keep the indices afterwards.
        on_ingest: called with the ingest job's progress.
        node_vectors: the node-states sidecar output the job stores per formula (`IngestJobConfig.node_vectors`).

    Raises:
        EqsearchError: the ingest job did not finish.
    """
    prefix = index_prefix or f"eqsearch-eval-{uuid.uuid4().hex[:8]}"
    admin = IndexAdmin(client, prefix)
    try:
        with tempfile.TemporaryDirectory(prefix="eqsearch-eval-") as work:
            papers = Path(work) / "collection.jsonl"
            with papers.open("w", encoding="utf-8") as out:
                for record in _papers(formulas, origin):
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
            config = IngestJobConfig(
                sources=(str(papers),), index_prefix=prefix, kind="papers", node_vectors=node_vectors
            )
            began = time.perf_counter()
            job = IngestJob(client, encoder, config, converter=converter, on_progress=on_ingest).run()
            ingest_seconds = time.perf_counter() - began
        if job.state != "finished":
            raise EqsearchError(f"the ingest job of the collection ended {job.state}: {job.errors_by_reason}")
        client.indices.refresh(index=admin.alias("equations"))
        yield IndexedCollection(client, prefix, job, ingest_seconds)
    finally:
        if not keep:
            _delete_indices(admin)


def formula_ranking(service: SearchService, latex: str, depth: int) -> list[tuple[str, float]]:
    """The formula ids a formula-only search ranks, best first, paged through as a user would, down to ``depth``."""
    ranked: list[tuple[str, float]] = []
    seen: set[str] = set()
    page = 1
    while len(ranked) < depth:
        size = min(MAX_PAGE_SIZE, depth)
        results = service.search(HybridQuery(latex=latex, page=page, size=size))
        for hit in results.hits:
            if hit.paper_id not in seen:
                seen.add(hit.paper_id)
                ranked.append((hit.paper_id, hit.score))
        if len(results.hits) < size:
            break
        page += 1
    return ranked[:depth]


def _delete_indices(admin: IndexAdmin) -> None:
    """Every index of the evaluation's prefix (what exists of them: a failed run may have made only some)."""
    for info in admin.list():
        admin.delete(info.name, force=True)
