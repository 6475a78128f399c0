"""Ingest jobs: sources -> extract -> convert -> encode -> bulk index into Elasticsearch, resumable.

`IngestJob` is the pipeline: it discovers the sources' papers, streams them through
`eqsearch.ingest.pipeline.process_task` (extraction + LaTeX -> MathML, in this process or in worker processes),
encodes the converted equations, and sends one document per equation and one per paper
(`eqsearch.engine.index.documents`) in bulk batches (`batch`: each paper's actions, and the counts of what became of
them). Ids are deterministic, so running a job twice, or resuming one, overwrites documents instead of duplicating
them. After each flush the pruner deletes the equations that papers' new versions no longer have (`pruner`), and the
store checkpoints the flushed papers (`store`): a job killed at any point (``kill -9`` included) resumes by skipping
exactly the checkpointed papers; papers in flight are indexed again (same ids), and the totals are the sum of the
checkpoints. With refresh off during the load, a paper's new version and its deletions become searchable at the same
refresh, so searches see one version of it (after a crash, or once a migration has moved an index mid-job, both can
show until the paper's deletes are done and refreshed).

While loading, the equations and papers indices run with ``refresh_interval: -1`` and no replicas; the previous
settings (recorded in the job document, so that a resumed job restores the right ones) come back when the job
ends, whether it finished, failed or was interrupted.

A migration may run during a job: every write goes through the `writer`, which waits while the migration's lock
stands and sends again what its write block refused. The new index keeps its normal refresh interval for the rest
of the job rather than getting the loading settings again: the migration refreshed the frozen copy, so a paper
caught between its writes and its deletes by the block shows both versions until its deletes land and the next
refresh (a second), not until the job's end. The recorded settings are restored on the new index when the job ends.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import os
import re
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch
from eqsearch.engine.index import (
    MAPPING_VERSIONS,
    IndexAdmin,
    bulk_loading_settings,
    current_load_settings,
    retrying,
)
from eqsearch.engine.model import Encoder, NodeEncoder, TextEncoder, load_text_encoder
from eqsearch.engine.model.nodes import check_node_output, node_encoder_for
from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.jobs.batch import count_written, paper_actions, write_batch
from eqsearch.ingest.jobs.errors import IngestJobError
from eqsearch.ingest.jobs.node_vectors import settle_node_vectors
from eqsearch.ingest.jobs.pruner import PaperWrites, StalePruner
from eqsearch.ingest.jobs.store import (
    STATE_FAILED,
    STATE_FINISHED,
    STATE_INTERRUPTED,
    STATE_RUNNING,
    JobProgress,
    JobReport,
    JobStore,
    JobTally,
    extractor_version,
    now,
    sorted_scan,
)
from eqsearch.ingest.jobs.writer import MigrationAwareWriter
from eqsearch.ingest.pipeline import WorkerPool, process_task
from eqsearch.ingest.records import Paper
from eqsearch.ingest.sources import DocumentTask, discover


@dataclass(frozen=True)
class IngestJobConfig:
    """What an ingest job does.

    Args:
        sources: the SRC paths (anything `eqsearch.ingest.sources.discover` reads).
        index_prefix: the deployment's index prefix.
        job_id: the job's id; by default derived from the sources, so re-running the same command resumes it.
        kind: how to read folders (``auto``, ``arxiv``, ``latex``, ``docstrings``, ``papers``).
        extract: extraction limits (its ``convert`` must stay on: equations need MathML to be encoded); its
            ``inline`` says whether the inline formulas get documents (off: ``--no-inline``, displays only).
        workers: extraction processes (0 = in this process, with the given converter).
        batch_equations: equations per bulk flush (a checkpoint follows each flush).
        max_retries: retries of 429 items and of failed bulk requests (exponential backoff).
        initial_backoff: seconds before the first retry.
        failures_kept: per-document failures kept in the job document (all are counted).
        restart: forget the job's checkpoints and start again (documents are overwritten, never duplicated).
        migration_poll_s: seconds between looks at a migration's lock while the job waits for it.
        shards: primary shards of an equations index the job creates (None: one per data node); an existing index
            keeps its own.
        replicas: replicas of the indices the job creates (None: one when the cluster has a second data node).
        context_vectors: embed each equation's context with the text encoder (the context channel's
            ``context_vector``, an option: +~1.5 ms of CPU and ~1 KB per equation, `docs/decisions/context-channel.md`).
            Off, a job still fills them into an index that holds them already (its ``_meta`` records a text
            encoder), so that a deployment that chose the channel keeps it whole.
        node_vectors: store each formula's node vectors for the MaxSim rerank (`NODE_VECTORS_FIELD`, int8 rows; the
            bundle's node-states sidecar output named here: ``node_states@p64``, the 512-d states' fixed 64-d
            projection the MaxSim ranker uses (~1.5 KB an equation), ``node_states`` (512-d, ~12 KB) or
            ``node_vectors`` (64-d); None: not asked). Large, so an option; as with context vectors, a job writes them
            anyway into an index that holds them (its ``_meta`` names the node encoder), so that it stays whole.
    """

    sources: tuple[str, ...]
    index_prefix: str = "eqsearch"
    job_id: str | None = None
    kind: str = "auto"
    extract: ExtractConfig = field(default_factory=ExtractConfig)
    workers: int = 0
    batch_equations: int = 500
    max_retries: int = 5
    initial_backoff: float = 1.0
    failures_kept: int = 100
    restart: bool = False
    migration_poll_s: float = 1.0
    shards: int | None = None
    replicas: int | None = None
    context_vectors: bool = False
    node_vectors: str | None = None

    def __post_init__(self) -> None:
        if not self.sources:
            raise ValueError("an ingest job needs at least one source")
        if self.node_vectors is not None:
            check_node_output(self.node_vectors)
        if self.batch_equations < 1:
            raise ValueError(f"batch_equations must be positive, got {self.batch_equations}")
        if self.job_id is not None and not re.fullmatch(r"[A-Za-z0-9._-]{1,100}", self.job_id):
            raise ValueError(f"job ids are letters, digits, '.', '_' and '-', got {self.job_id!r}")

    @property
    def effective_job_id(self) -> str:
        """The job's id: the given one, else one derived from the sources."""
        if self.job_id:
            return self.job_id
        names = sorted(str(Path(s).resolve()) if not s.startswith("py:") else s for s in self.sources)
        return "ingest-" + hashlib.sha1("\n".join(names).encode()).hexdigest()[:12]


class IngestJob:
    """One resumable ingest job.

    Args:
        client: a connected client.
        encoder: MathML -> vectors (its ``dim`` and ``similarity`` shape a new equations index).
        config: what to ingest and how.
        converter: the LaTeX -> MathML converter used when ``config.workers`` is 0 (each worker process opens its
            own otherwise); None opens a `KatexConverter` for the run.
        on_progress: called after every flush.
        text_encoder: embeds the equations' context (`engine.model.text`); None loads the shipped one when
            ``config.context_vectors`` is on.
        node_encoder: the node vectors of the MaxSim rerank (`engine.model.nodes`); None loads the sidecar of
            ``encoder``'s bundle when ``config.node_vectors`` names an output or the index holds node vectors.
    """

    def __init__(
        self,
        client: Elasticsearch,
        encoder: Encoder,
        config: IngestJobConfig,
        *,
        converter: Any | None = None,
        on_progress: Callable[[JobProgress], None] | None = None,
        text_encoder: TextEncoder | None = None,
        node_encoder: NodeEncoder | None = None,
    ) -> None:
        self.client = client
        self.encoder = encoder
        self.text_encoder = (text_encoder or load_text_encoder()) if config.context_vectors else None
        self.node_encoder = node_encoder
        if self.node_encoder is None and config.node_vectors is not None:
            self.node_encoder = self._load_node_encoder(config.node_vectors)
        self.config = config
        self.converter = converter
        self.on_progress = on_progress
        self.job_id = config.effective_job_id
        self.admin = IndexAdmin(client, config.index_prefix, shards=config.shards, replicas=config.replicas)
        self.tally = JobTally()
        self.warnings: list[str] = []  # the papers of this run that lost their displays, for the summary
        self.writer = MigrationAwareWriter(
            client,
            self.admin,
            job_id=self.job_id,
            max_retries=config.max_retries,
            initial_backoff=config.initial_backoff,
            poll_s=config.migration_poll_s,
            on_wait=lambda message: self.store.note(message),
        )
        self.store = JobStore(client, self.admin.alias("jobs"), self.job_id, self.writer, config.failures_kept)
        self.pruner = StalePruner(client, self.admin, self.store, self.writer)

    def _check_encoder_fits(self, index: str) -> None:
        """Refuse to put this encoder's vectors beside another model's: kNN would compare the incomparable.

        An index records the identity that filled it (`IndexOptions.encoder`); one made before identities were
        recorded is accepted when width and similarity agree, since nothing else about its vectors is known.
        """
        existing = self.admin.options_of("equations")
        if existing is None:
            return
        mine = (self.encoder.identity, self.encoder.dim, self.encoder.similarity)
        theirs = (existing.encoder or self.encoder.identity, existing.dims, existing.similarity)
        if mine != theirs:
            raise IngestJobError(
                f"{index} holds vectors of {theirs[0]} ({theirs[1]}-d, {theirs[2]}), but this job's encoder is "
                f"{mine[0]} ({mine[1]}-d, {mine[2]}): vectors of two models cannot be searched together",
                hint="re-embed the index with this bundle first ('eqsearch index migrate equations --reencode', "
                "searches keep answering), or run the job with the bundle that filled it (--bundle)",
            )

    def _settle_text_encoder(self, index: str) -> None:
        """Follow the index's choice of context vectors (its ``_meta`` names the text encoder that filled them): an
        index that holds them gets them from this job too; a job that brings them to an index without records its
        encoder there, so that later jobs and migrations keep them; another encoder's vectors are refused."""
        mapping = self.client.indices.get_mapping(index=index)
        meta = next(iter(mapping.values()))["mappings"].get("_meta", {})
        recorded = meta.get("text_encoder")
        if self.text_encoder is None:
            if recorded is not None:
                self.text_encoder = load_text_encoder()
            else:
                return
        if recorded is None:
            # a mapping update replaces the whole _meta
            identity = {"text_encoder": self.text_encoder.identity, "context_dims": self.text_encoder.dim}
            self.client.indices.put_mapping(index=index, meta={**meta, **identity})
        elif recorded != self.text_encoder.identity:
            raise IngestJobError(
                f"{index} holds context vectors of {recorded}, but this job's text encoder is "
                f"{self.text_encoder.identity}: the context channel would compare the incomparable",
                hint="migrate the index first ('eqsearch index migrate equations' re-embeds every context)",
            )

    def _load_node_encoder(self, output: str) -> NodeEncoder:
        """The node encoder of this job's bundle (its ``node-states.onnx`` sidecar), ``output`` of it."""
        return node_encoder_for(self.encoder, output)

    def _check_mapping_current(self) -> None:
        """Refuse to write documents an older equations or papers mapping would reject (their mappings are strict)."""
        for kind in ("equations", "papers"):
            described = self.admin.describe(kind)
            if described.get("stale") and (described.get("mapping_version") or 0) < MAPPING_VERSIONS[kind]:
                raise IngestJobError(
                    f"{described.get('index')} has the {kind} mapping of version {described.get('mapping_version')}, "
                    f"older than this eqsearch's ({MAPPING_VERSIONS[kind]}): it has no field for what this version "
                    "writes (the formulas' structure, the inline formulas)",
                    hint=f"move the index to the current mapping first ('eqsearch index migrate {kind}'; searches "
                    "keep answering meanwhile), then run the job again",
                )

    # -- run -----------------------------------------------------------------------------------------------------
    def run(self) -> JobReport:
        """Run (or resume) the job to its end.

        Returns:
            The job's report (also in the jobs index).

        Raises:
            IngestJobError: the indices do not fit the encoder.
            elasticsearch.ApiError, elasticsearch.ConnectionError: the cluster kept refusing after the retries
                (the job is recorded as failed and resumes from its last checkpoint).
        """
        began = time.perf_counter()
        options = self.admin.default_options(
            dims=self.encoder.dim, similarity=self.encoder.similarity, encoder=self.encoder.identity
        )
        if self.text_encoder is not None:
            options = replace(options, context_dims=self.text_encoder.dim, text_encoder=self.text_encoder.identity)
        if self.node_encoder is not None:
            options = replace(options, node_vectors=self.node_encoder.identity, node_dims=self.node_encoder.dim)
        indices = self.admin.ensure(options)
        self._check_encoder_fits(indices["equations"])
        self._settle_text_encoder(indices["equations"])
        self.node_encoder = settle_node_vectors(
            self.client, indices["equations"], self.node_encoder, self._load_node_encoder
        )
        self._check_mapping_current()
        previous = self.store.read()
        if self.config.restart and previous is not None:
            self.store.forget_checkpoints()
            previous = None
        self.pruner.resumed = previous is not None
        # The stale-equation lookups search: documents a killed run left unrefreshed must be visible to them.
        retrying(self.client).indices.refresh(index=self.admin.alias("equations"))
        tasks = list(discover(list(self.config.sources), self.config.kind))
        # a source an older extractor read (its checkpoint says which) is not done: it is extracted again
        self.store.extractor_versions = {task.source: extractor_version(task.kind) for task in tasks}
        done = self.store.load_checkpoints(self.tally) if previous is not None else set()
        # Through the aliases, not the concrete indices: a migration during the job moves them.
        restore = (previous or {}).get("options", {}).get("restore_settings") or {
            kind: current_load_settings(self.client, self.admin.alias(kind)) for kind in ("equations", "papers")
        }
        self.tally.papers_total = len(tasks)
        self.tally.papers_done = resumed_from = len(done)
        todo = [task for task in tasks if task.source not in done]
        self.store.write(
            self.tally,
            state=STATE_RUNNING,
            sources=list(self.config.sources),
            created_at=(previous or {}).get("created_at") or now(),
            pid=os.getpid(),
            host=socket.gethostname(),
            options={
                "restore_settings": restore,
                "batch_equations": self.config.batch_equations,
                "inline": self.config.extract.inline,
                "node_vectors": self.node_encoder.identity if self.node_encoder is not None else None,
            },
            message=None,
            finished_at=None,
        )
        state, message = STATE_FAILED, None
        try:
            with contextlib.ExitStack() as stack:
                for kind in ("equations", "papers"):
                    alias = self.admin.alias(kind)
                    # replicas kept: searches read these indices while they load, and must survive a node's loss
                    stack.enter_context(bulk_loading_settings(self.client, alias, restore_to=restore[kind]))
                self._ingest(todo)
            self._refresh_cited_by()
            state = STATE_FINISHED
            kept = self.tally.counts["equations_stale_kept"]
            if kept:
                message = (
                    f"{kept} equations of earlier versions were kept because another "
                    "job was ingesting the same papers; ingest those papers again once it has finished to remove them"
                )
        except KeyboardInterrupt:
            state, message = STATE_INTERRUPTED, "interrupted by the user"
            raise
        except BaseException as error:
            message = f"{type(error).__name__}: {error}"
            raise
        finally:
            with contextlib.suppress(Exception):
                self.store.write(self.tally, state=state, message=message, finished_at=now())
        return JobReport(
            job_id=self.job_id,
            state=state,
            counts=self.tally.count_record(),
            errors_by_reason=dict(self.tally.errors),
            failures=list(self.tally.failures),
            papers_total=self.tally.papers_total,
            resumed_from=resumed_from,
            warnings=list(self.warnings),
            seconds=time.perf_counter() - began,
        )

    def _papers(self, tasks: Sequence[DocumentTask]) -> Iterator[tuple[str, Paper]]:
        """``(task source, paper)`` pairs; the task's source (not the paper's) is what checkpoints record."""
        if self.config.workers > 0:
            pending = {task.source: task for task in tasks}
            pool = WorkerPool(self.config.workers, self.config.extract)
            try:
                for paper in pool.map(tasks):
                    source = paper.source if paper.source in pending else None
                    if source is None:  # papers JSONL records carry their own source: match by id
                        source = next((s for s, t in pending.items() if t.paper_id == paper.id), paper.source)
                    pending.pop(source, None)
                    yield source, paper
            finally:
                pool.close()
            return
        converter = self.converter
        opened = None
        if converter is None and self.config.extract.convert:
            from eqsearch.ingest.convert import open_converter

            converter = opened = open_converter()
        try:
            for task in tasks:
                yield task.source, process_task(task, self.config.extract, converter)
        finally:
            if opened is not None:
                opened.__exit__(None, None, None)

    def _ingest(self, tasks: Sequence[DocumentTask]) -> None:
        """Extract, encode and write the papers, in batches of about `batch_equations` documents.

        A batch is written (bulk, stale-equation pruning, checkpoints: `_flush`) by a writer thread while this one
        extracts and encodes the next: Elasticsearch indexes on another core meanwhile instead of both waiting for
        each other. One write is in flight at a time and they end in order, so checkpoints follow each other as
        before; a write that fails stops the job at the next batch, with that batch unwritten and unrecorded.
        """
        batch: list[PaperWrites] = []
        pending = 0
        with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="eqsearch-writer") as writer:
            in_flight: concurrent.futures.Future[None] | None = None

            def write(papers: list[PaperWrites]) -> None:
                nonlocal in_flight
                if in_flight is not None:
                    in_flight.result()  # the previous batch is written (its error, if any, is raised here)
                in_flight = writer.submit(self._flush, papers)

            try:
                for source, paper in self._papers(tasks):
                    if any(queued.paper.id == paper.id for queued in batch):
                        # one version of a paper per flush: the later one's stale lookup must see the earlier one's
                        write(batch)
                        batch, pending = [], 0
                    actions, counts, errors = paper_actions(
                        paper,
                        encoder=self.encoder,
                        text_encoder=self.text_encoder,
                        node_encoder=self.node_encoder,
                        inline=self.config.extract.inline,
                        job_id=self.job_id,
                        papers_index=self.admin.alias("papers"),
                        equations_index=self.admin.alias("equations"),
                        warnings=self.warnings,
                    )
                    batch.append(PaperWrites(source, paper, actions, counts, errors))
                    pending += len(actions)
                    if pending >= self.config.batch_equations:
                        write(batch)
                        batch, pending = [], 0
                if batch:
                    write(batch)
                if in_flight is not None:
                    in_flight.result()
            except BaseException:
                # the batch being written still ends (and records its checkpoints) before the error goes on
                if in_flight is not None:
                    with contextlib.suppress(Exception):
                        in_flight.result()
                raise

    def _flush(self, batch: list[PaperWrites]) -> None:
        self.writer.await_migration()
        failed_by_paper = write_batch(self.writer, batch, chunk_size=max(self.config.batch_equations, 100))
        pruned = self.pruner.prune(batch, failed_by_paper)
        checkpoints = []
        for position, item in enumerate(batch):
            failures = count_written(item, failed_by_paper.get(position, []), pruned, position)
            self.tally.add(item.counts, item.errors, failures)
            checkpoints.append(
                self.store.checkpoint_action(item.source, item.paper.key, item.counts, item.errors, failures)
            )
        # only now, with the papers' documents acknowledged and their stale ones deleted, do their checkpoints exist
        self.writer.bulk(checkpoints)
        self.tally.papers_done += len(batch)
        self.store.write(self.tally, state=STATE_RUNNING)
        if self.on_progress is not None:
            self.on_progress(
                JobProgress(
                    self.job_id,
                    self.tally.papers_done,
                    self.tally.papers_total,
                    dict(self.tally.counts),
                    self.tally.papers_done,
                )
            )

    def _refresh_cited_by(self) -> None:
        """Set ``cited_by_count`` on every indexed paper whose count changed (a paper's field: its equations are never
        updated in place, since their derived fields are not in their source, `DERIVED_FIELDS`)."""
        papers = self.admin.alias("papers")
        self.client.indices.refresh(index=papers)
        cited: Counter[str] = Counter()
        after = None
        while True:
            composite: dict[str, Any] = {"size": 1000, "sources": [{"id": {"terms": {"field": "citations_out"}}}]}
            if after:
                composite["after"] = after
            response = self.client.search(index=papers, size=0, aggs={"cited": {"composite": composite}})
            agg = response["aggregations"]["cited"]
            for bucket in agg["buckets"]:
                cited[bucket["key"]["id"]] = int(bucket["doc_count"])
            after = agg.get("after_key")
            if not agg["buckets"] or after is None:
                break
        actions = []
        for doc_id, source in sorted_scan(self.client, papers, {"match_all": {}}, "paper_id"):
            count = cited.get(doc_id, 0)
            if int(source.get("cited_by_count") or 0) == count and "cited_by_count" in source:
                continue
            actions.append({"_op_type": "update", "_index": papers, "_id": doc_id, "doc": {"cited_by_count": count}})
        if actions:
            report = self.writer.bulk(actions)
            # an equation that failed to index cannot be updated: that is already counted, not a new error
            self.tally.errors.update(f"cited-by:{f.error_type}" for f in report.failures if f.status != 404)
