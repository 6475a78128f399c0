"""Ingest jobs: sources -> extract -> convert -> encode -> bulk index into Elasticsearch, resumable.

A job streams papers through `eqsearch.ingest.pipeline.process_task` (extraction + LaTeX -> MathML), encodes the
converted equations, and sends one document per equation (and one per paper) in bulk batches. Ids are
deterministic (paper key = paper id + source version, then the equation number), so running a job twice, or
resuming one, overwrites documents instead of duplicating them.

The job's record lives in the jobs index: a job document (state, progress, counts, errors by reason, first
per-document failures) and one checkpoint document per finished paper, written only after Elasticsearch has
acknowledged that paper's documents. A job killed at any point (``kill -9`` included) resumes by skipping exactly
the checkpointed papers; papers in flight are indexed again (same ids), and the totals are the sum of the
checkpoints, so nothing is lost and nothing counted twice.

A paper indexed again (a new arXiv version, an edited source) may now have fewer or other equations. Once a paper's
new documents are acknowledged, the job looks up every equation document with its ``paper_id`` (a point in time with
``search_after``: the minimal distribution has no ``_delete_by_query``) and deletes those its new version no longer
has (count ``equations_stale_deleted``), before the paper's checkpoint. A crash before the deletes leaves the
paper's old equations next to the new ones until the resumed job does them; never a paper without equations. A paper
whose own document Elasticsearch refused keeps its old equations, as its old paper document stands. The ids about to
be deleted are recorded first (a ``pruning`` record, which the checkpoint then replaces), so a job killed among the
deletes still counts them when it resumes. Two jobs ingesting the same paper at once never delete each other's
equations: a job keeps (count ``equations_stale_kept``, and its record says so) the equations another running job
wrote, and prunes nothing of a paper whose paper document another job has written since; ingesting that paper again
afterwards removes what is left of the older version. With refresh off during the load, a paper's new version and
its deletions become searchable at the same refresh, so searches see one version of it (after a crash, or once a
migration has moved an index mid-job, both can show until the paper's deletes are done and refreshed).

While loading, the equations and papers indices run with ``refresh_interval: -1`` and no replicas; the previous
settings (recorded in the job document, so that a resumed job restores the right ones) come back when the job
ends, whether it finished, failed or was interrupted.

A migration (`eqsearch.engine.index.admin.IndexAdmin.migrate`) may run during a job: before each write the job looks
for the migration's lock and waits while it stands (its record says so in ``message``), and a write that the
migration's write block refused is sent again once the alias has moved. The new index keeps its normal refresh
interval for the rest of the job rather than getting the loading settings again: the migration refreshed the
frozen copy, so a paper caught between its writes and its deletes by the block shows both versions until its
deletes land and the next refresh (a second), not until the job's end. The recorded settings are restored on the
new index when the job ends.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import re
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from elasticsearch import ApiError, Elasticsearch, NotFoundError
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.es.local_node import pid_alive
from eqsearch.engine.index.admin import (
    BulkFailure,
    BulkReport,
    IndexAdmin,
    bulk_index,
    bulk_loading_settings,
    current_load_settings,
    is_write_block,
    is_write_block_error,
    probe_text_analyzer,
    retrying,
)
from eqsearch.engine.index.mappings import VECTOR_FIELD, IndexOptions
from eqsearch.engine.model.encoder import Encoder
from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.pipeline import WorkerPool, process_task
from eqsearch.ingest.records import STATUS_APPROXIMATE, STATUS_OK, Paper
from eqsearch.ingest.sources import DocumentTask, discover

STATE_RUNNING = "running"
STATE_FINISHED = "finished"
STATE_FAILED = "failed"
STATE_INTERRUPTED = "interrupted"

COUNT_NAMES = (
    "papers",
    "papers_failed",
    "equations",
    "equations_indexed",
    "equations_with_vector",
    "equations_unconverted",
    "equations_unencoded",
    "documents_failed",
    "equations_stale_deleted",
    "equations_stale_kept",
)

#: Times one write is sent again after a write block (each time after a migration ended, or the block was gone).
BLOCKED_ROUNDS = 10

Batch = list[tuple[str, Paper, list[dict[str, Any]], Counter[str], Counter[str]]]


class IngestJobError(EqsearchError):
    """An ingest job cannot start or cannot go on."""

    exit_code = 10


@dataclass(frozen=True)
class IngestJobConfig:
    """What an ingest job does.

    Args:
        sources: the SRC paths (anything `eqsearch.ingest.sources.discover` reads).
        index_prefix: the deployment's index prefix.
        job_id: the job's id; by default derived from the sources, so re-running the same command resumes it.
        kind: how to read folders (``auto``, ``arxiv``, ``latex``, ``docstrings``, ``papers``).
        extract: extraction limits (its ``convert`` must stay on: equations need MathML to be encoded).
        workers: extraction processes (0 = in this process, with the given converter).
        batch_equations: equations per bulk flush (a checkpoint follows each flush).
        max_retries: retries of 429 items and of failed bulk requests (exponential backoff).
        initial_backoff: seconds before the first retry.
        failures_kept: per-document failures kept in the job document (all are counted).
        restart: forget the job's checkpoints and start again (documents are overwritten, never duplicated).
        migration_poll_s: seconds between looks at a migration's lock while the job waits for it.
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

    def __post_init__(self) -> None:
        if not self.sources:
            raise ValueError("an ingest job needs at least one source")
        if self.batch_equations < 1:
            raise ValueError(f"batch_equations must be positive, got {self.batch_equations}")
        if self.job_id is not None and not re.fullmatch(r"[A-Za-z0-9._-]{1,100}", self.job_id):
            raise ValueError(f"job ids are letters, digits, '.', '_' and '-', got {self.job_id!r}")

    @property
    def effective_job_id(self) -> str:
        if self.job_id:
            return self.job_id
        names = sorted(str(Path(s).resolve()) if not s.startswith("py:") else s for s in self.sources)
        return "ingest-" + hashlib.sha1("\n".join(names).encode()).hexdigest()[:12]


@dataclass
class JobProgress:
    """Handed to the progress callback after every flush."""

    job_id: str
    papers_done: int
    papers_total: int
    counts: dict[str, int]
    resumed_from: int


@dataclass
class JobReport:
    """The outcome of `IngestJob.run`.

    Args:
        job_id: the job's id.
        state: ``finished``, ``failed`` or ``interrupted``.
        counts: totals over the whole job (resumed runs included): see `COUNT_NAMES`.
        errors_by_reason: ``stage:reason`` -> count (``extract:...``, ``convert:...``, ``encode:...``,
            ``index:<error type>``).
        failures: the first per-document bulk failures.
        papers_total: papers the sources hold.
        resumed_from: papers already done when this run started.
        seconds: wall time of this run.
    """

    job_id: str
    state: str
    counts: dict[str, int]
    errors_by_reason: dict[str, int]
    failures: list[BulkFailure]
    papers_total: int
    resumed_from: int
    seconds: float

    @property
    def equations_per_second(self) -> float:
        return self.counts.get("equations_indexed", 0) / self.seconds if self.seconds > 0 else 0.0


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def paper_year(paper: Paper) -> int | None:
    """Publication year: arXiv metadata's first version date, else its ``year``, else a new-style arXiv id."""
    meta = paper.metadata or {}
    for key in ("published", "update_date"):
        value = meta.get(key)
        if isinstance(value, str):
            found = re.search(r"\b(19|20)\d\d\b", value)
            if found:
                return int(found.group(0))
    if isinstance(meta.get("year"), int | str) and str(meta["year"]).isdigit():
        return int(meta["year"])
    found = re.fullmatch(r"(\d\d)(\d\d)\.\d{4,5}", paper.id)
    if found and 1 <= int(found.group(2)) <= 12:
        return 2000 + int(found.group(1))
    return None


def paper_fields(paper: Paper, job_id: str) -> dict[str, Any]:
    """The paper fields shared by the paper document and each of its equation documents."""
    meta = paper.metadata or {}
    categories = meta.get("categories") or []
    if isinstance(categories, str):
        categories = categories.split()
    return {
        "paper_id": paper.id,
        "paper_key": paper.key,
        "title": paper.title or meta.get("title") or "",
        "abstract": paper.abstract or meta.get("abstract") or "",
        "authors": list(paper.authors),
        "categories": list(categories),
        "year": paper_year(paper),
        "citations_out": list(dict.fromkeys(paper.citations)),
        "source_version": paper.version,
        "source": paper.source,
        "job_id": job_id,
    }


def equation_id(paper: Paper, number: int) -> str:
    """The deterministic id of a paper's equation: ``<paper id>[v<version>]:<number>``."""
    return f"{paper.key}:{number}"


class IngestJob:
    """One resumable ingest job.

    Args:
        client: a connected client.
        encoder: MathML -> vectors (its ``dim`` and ``similarity`` shape a new equations index).
        config: what to ingest and how.
        converter: the LaTeX -> MathML converter used when ``config.workers`` is 0 (each worker process opens its
            own otherwise); None opens a `KatexConverter` for the run.
        on_progress: called after every flush.
    """

    def __init__(
        self,
        client: Elasticsearch,
        encoder: Encoder,
        config: IngestJobConfig,
        *,
        converter: Any | None = None,
        on_progress: Callable[[JobProgress], None] | None = None,
    ) -> None:
        self.client = client
        self.encoder = encoder
        self.config = config
        self.converter = converter
        self.on_progress = on_progress
        self.job_id = config.effective_job_id
        self.admin = IndexAdmin(client, config.index_prefix)
        self.jobs_alias = self.admin.alias("jobs")
        self.counts: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.failures: list[BulkFailure] = []
        self.papers_done = 0
        self.papers_total = 0
        self._resumed = False  # a run of this job ran before: it may have left pruning records
        self._written_papers: set[str] = set()  # paper ids written by this run (their documents may be unrefreshed)

    # -- the job record ------------------------------------------------------------------------------------------
    def _job_doc(self) -> dict[str, Any] | None:
        try:
            return self.client.get(index=self.jobs_alias, id=self.job_id)["_source"]
        except NotFoundError:
            return None

    def _write_job(self, **fields: Any) -> None:
        body = {
            "record": "job",
            "job_id": self.job_id,
            "updated_at": _now(),
            "progress": {"papers_done": self.papers_done, "papers_total": self.papers_total},
            "counts": {name: int(self.counts.get(name, 0)) for name in COUNT_NAMES},
            "errors_by_reason": dict(self.errors),
            "failures": [f.to_json() for f in self.failures[: self.config.failures_kept]],
            **fields,
        }
        for _ in range(BLOCKED_ROUNDS):
            try:
                retrying(self.client).update(index=self.jobs_alias, id=self.job_id, doc=body, doc_as_upsert=True)
                return
            except ApiError as error:
                if not is_write_block_error(error) or (not self._await_migration() and self._blocked()):
                    raise
        retrying(self.client).update(index=self.jobs_alias, id=self.job_id, doc=body, doc_as_upsert=True)

    def _note(self, message: str | None) -> None:
        """Set the job document's message; best effort (the jobs index itself may be the one being migrated)."""
        with contextlib.suppress(Exception):
            self.client.update(index=self.jobs_alias, id=self.job_id, doc={"message": message, "updated_at": _now()})

    def _checkpoint_id(self, source: str) -> str:
        return f"{self.job_id}/{hashlib.sha1(source.encode()).hexdigest()}"

    def checkpoints(self) -> Iterator[dict[str, Any]]:
        """Every checkpoint document of this job."""
        self.client.indices.refresh(index=self.jobs_alias)
        query = {"bool": {"filter": [{"term": {"record": "checkpoint"}}, {"term": {"job_id": self.job_id}}]}}
        for _, source in self._scan(self.jobs_alias, query, "source"):
            yield source

    def _scan(self, index: str, query: dict[str, Any], sort_field: str) -> Iterator[tuple[str, dict[str, Any]]]:
        search_after = None
        while True:
            kwargs: dict[str, Any] = {"search_after": search_after} if search_after else {}
            sort = [{sort_field: "asc"}]
            hits = self.client.search(index=index, query=query, size=1000, sort=sort, **kwargs)["hits"]
            if not hits["hits"]:
                return
            for hit in hits["hits"]:
                yield hit["_id"], hit["_source"]
            search_after = hits["hits"][-1]["sort"]

    def _forget_checkpoints(self) -> None:
        records = {"terms": {"record": ["checkpoint", "pruning"]}}
        query = {"bool": {"filter": [records, {"term": {"job_id": self.job_id}}]}}
        self.client.indices.refresh(index=self.jobs_alias)
        ids = [doc_id for doc_id, _ in self._scan(self.jobs_alias, query, "source")]
        self._bulk([{"_op_type": "delete", "_index": self.jobs_alias, "_id": i} for i in ids])

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
        options = IndexOptions(
            dims=self.encoder.dim,
            similarity=self.encoder.similarity,
            analyzer=probe_text_analyzer(self.client),
            encoder=self.encoder.identity,
        )
        indices = self.admin.ensure(options)
        self._check_encoder_fits(indices["equations"])
        previous = self._job_doc()
        if self.config.restart and previous is not None:
            self._forget_checkpoints()
            previous = None
        self._resumed = previous is not None
        # The stale-equation lookups search: documents a killed run left unrefreshed must be visible to them.
        retrying(self.client).indices.refresh(index=self.admin.alias("equations"))
        done: set[str] = set()
        if previous is not None:
            for checkpoint in self.checkpoints():
                done.add(checkpoint["source"])
                self.counts.update(checkpoint.get("counts") or {})
                self.errors.update(checkpoint.get("errors_by_reason") or {})
                self.failures.extend(BulkFailure(**f) for f in checkpoint.get("failures") or [])
        # Through the aliases, not the concrete indices: a migration during the job moves them.
        restore = (previous or {}).get("options", {}).get("restore_settings") or {
            kind: current_load_settings(self.client, self.admin.alias(kind)) for kind in ("equations", "papers")
        }
        tasks = list(discover(list(self.config.sources), self.config.kind))
        self.papers_total = len(tasks)
        self.papers_done = resumed_from = len(done)
        todo = [task for task in tasks if task.source not in done]
        self._write_job(
            state=STATE_RUNNING,
            sources=list(self.config.sources),
            created_at=(previous or {}).get("created_at") or _now(),
            pid=os.getpid(),
            host=socket.gethostname(),
            options={"restore_settings": restore, "batch_equations": self.config.batch_equations},
            message=None,
            finished_at=None,
        )
        state, message = STATE_FAILED, None
        try:
            with contextlib.ExitStack() as stack:
                for kind in ("equations", "papers"):
                    alias = self.admin.alias(kind)
                    stack.enter_context(bulk_loading_settings(self.client, alias, restore_to=restore[kind]))
                self._ingest(todo)
            self._refresh_cited_by()
            state = STATE_FINISHED
            if self.counts["equations_stale_kept"]:
                message = (
                    f"{self.counts['equations_stale_kept']} equations of earlier versions were kept because another "
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
                self._write_job(state=state, message=message, finished_at=_now())
        return JobReport(
            job_id=self.job_id,
            state=state,
            counts={name: int(self.counts.get(name, 0)) for name in COUNT_NAMES},
            errors_by_reason=dict(self.errors),
            failures=list(self.failures),
            papers_total=self.papers_total,
            resumed_from=resumed_from,
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
        batch: Batch = []
        pending = 0
        for source, paper in self._papers(tasks):
            if any(queued.id == paper.id for _, queued, _, _, _ in batch):
                # one version of a paper per flush: the later one's stale lookup must see the earlier one's ids
                self._flush(batch)
                batch, pending = [], 0
            actions, counts, errors = self.paper_actions(paper)
            batch.append((source, paper, actions, counts, errors))
            pending += len(actions)
            if pending >= self.config.batch_equations:
                self._flush(batch)
                batch, pending = [], 0
        if batch:
            self._flush(batch)

    def paper_actions(self, paper: Paper) -> tuple[list[dict[str, Any]], Counter[str], Counter[str]]:
        """Bulk actions for one paper (its paper document first), with its counts and errors by reason."""
        counts: Counter[str] = Counter(papers=1)
        errors: Counter[str] = Counter()
        if paper.status == "failed" or paper.error is not None:
            counts["papers_failed"] += 1
            errors[f"extract:{paper.error.reason if paper.error else 'failed'}"] += 1
            if not paper.sections:
                return [], counts, errors
        shared = paper_fields(paper, self.job_id)
        now = _now()
        equations = paper.equations()
        vectors = self._encode(equations, errors)
        outline = {s.index: s for s in paper.sections}
        actions = [
            {
                "_index": self.admin.alias("papers"),
                "_id": paper.id,
                "_source": {
                    **shared,
                    "kind": paper.kind,
                    "status": paper.status,
                    "equation_count": len(equations),
                    "indexed_at": now,
                    "sections": [
                        {"index": s.index, "level": s.level, "title": s.title, "equations": len(s.equations)}
                        for s in paper.sections
                    ],
                },
            }
        ]
        for eq in equations:
            counts["equations"] += 1
            converted = eq.status in (STATUS_OK, STATUS_APPROXIMATE) and eq.mathml is not None
            if not converted:
                counts["equations_unconverted"] += 1
                errors[f"convert:{eq.reason or eq.status}"] += 1
            source: dict[str, Any] = {
                **shared,
                "eq_id": equation_id(paper, eq.number),
                "number": eq.number,
                "latex": eq.latex,
                "mathml": eq.mathml,
                "environment": eq.environment,
                "status": eq.status,
                "reason": eq.reason,
                "section": eq.section,
                "section_title": outline[eq.section].title if eq.section in outline else "",
                "context": " ".join(part for part in (eq.context_before, eq.context_after) if part),
                "indexed_at": now,
            }
            vector = vectors.get(eq.number)
            if vector is not None:
                source[VECTOR_FIELD] = vector
            actions.append({"_index": self.admin.alias("equations"), "_id": source["eq_id"], "_source": source})
        return actions, counts, errors

    def _encode(self, equations: Sequence[Any], errors: Counter[str]) -> dict[int, list[float]]:
        todo = [eq for eq in equations if eq.status in (STATUS_OK, STATUS_APPROXIMATE) and eq.mathml]
        if not todo:
            return {}
        try:
            matrix = np.asarray(self.encoder.encode([eq.mathml for eq in todo]), dtype=np.float32)
            rows = dict(zip((eq.number for eq in todo), matrix, strict=True))
        except Exception:  # one bad equation must not cost its paper: encode one by one to find it
            rows = {}
            for eq in todo:
                try:
                    rows[eq.number] = np.asarray(self.encoder.encode([eq.mathml])[0], dtype=np.float32)
                except Exception as error:
                    errors[f"encode:{type(error).__name__}"] += 1
        out = {}
        for number, row in rows.items():
            if not np.all(np.isfinite(row)):
                errors["encode:non-finite"] += 1
                continue
            out[number] = [float(x) for x in row]
        return out

    def _flush(self, batch: Batch) -> None:
        self._await_migration()
        owner: dict[str, int] = {}
        for position, (_, _, actions, _, _) in enumerate(batch):
            for action in actions:
                owner[action["_id"]] = position
        report = self._bulk(
            [action for _, _, actions, _, _ in batch for action in actions],
            chunk_size=max(self.config.batch_equations, 100),
        )
        failed_by_paper: dict[int, list[BulkFailure]] = {}
        for failure in report.failures:
            failed_by_paper.setdefault(owner.get(failure.doc_id, -1), []).append(failure)
        stale, kept = self._stale_equations(batch, failed_by_paper)
        prune_failed = self._delete_stale(batch, stale)
        checkpoints = []
        for position, (source, paper, actions, counts, errors) in enumerate(batch):
            failures = failed_by_paper.get(position, [])
            failed_ids = {f.doc_id for f in failures}
            for action in actions[1:]:
                if action["_id"] not in failed_ids:
                    counts["equations_indexed"] += 1
                    if VECTOR_FIELD in action["_source"]:
                        counts["equations_with_vector"] += 1
            counts["equations_unencoded"] += sum(
                1 for a in actions[1:] if a["_source"]["mathml"] and VECTOR_FIELD not in a["_source"]
            )
            not_deleted = prune_failed.get(position, [])
            if position in stale:
                counts["equations_stale_deleted"] += len(stale[position]) - len(not_deleted)
            if kept.get(position):
                counts["equations_stale_kept"] += kept[position]
            counts["documents_failed"] += len(failures) + len(not_deleted)
            for failure in failures:
                errors[f"index:{failure.error_type}"] += 1
            for failure in not_deleted:
                errors[f"prune:{failure.error_type}"] += 1
            failures = failures + not_deleted
            self.counts.update(counts)
            self.errors.update(errors)
            self.failures.extend(failures)
            if actions:
                self._written_papers.add(paper.id)
            checkpoints.append(
                {
                    "_index": self.jobs_alias,
                    "_id": self._checkpoint_id(source),
                    "_source": {
                        "record": "checkpoint",
                        "job_id": self.job_id,
                        "source": source,
                        "paper_key": paper.key,
                        "updated_at": _now(),
                        "counts": dict(counts),
                        "errors_by_reason": dict(errors),
                        "failures": [f.to_json() for f in failures[: self.config.failures_kept]],
                    },
                }
            )
        # only now, with the papers' documents acknowledged and their stale ones deleted, do their checkpoints exist
        self._bulk(checkpoints)
        self.papers_done += len(batch)
        self._write_job(state=STATE_RUNNING)
        if self.on_progress is not None:
            self.on_progress(
                JobProgress(self.job_id, self.papers_done, self.papers_total, dict(self.counts), self.papers_done)
            )

    def _stale_equations(
        self, batch: Batch, failed_by_paper: dict[int, list[BulkFailure]]
    ) -> tuple[dict[int, list[str]], dict[int, int]]:
        """Batch position -> ids of that paper's equation documents which its new version no longer has; and batch
        position -> how many such documents are kept because another job may be writing that paper now."""
        prunable: dict[str, int] = {}
        for position, (_, paper, actions, _, _) in enumerate(batch):
            refused = {f.doc_id for f in failed_by_paper.get(position, [])}
            # the paper document is the index's idea of the paper: while the old one stands, so do its equations
            if actions and actions[0]["_id"] not in refused:
                prunable[paper.id] = position
        if not prunable:
            return {}, {}
        equations = self.admin.alias("equations")
        if not prunable.keys().isdisjoint(self._written_papers):
            # an earlier flush of this run wrote one of these papers, with refresh off: make it searchable first
            retrying(self.client).indices.refresh(index=equations)
        keep = {action["_id"] for position in prunable.values() for action in batch[position][2][1:]}
        query = {"terms": {"paper_id": list(prunable)}}
        candidates = [
            (doc_id, source.get("paper_id", ""), source.get("job_id"))
            for doc_id, source in self.admin.scan(equations, query=query, source=["paper_id", "job_id"])
            if source.get("paper_id", "") in prunable and doc_id not in keep
        ]
        stale: dict[int, set[str]] = {}
        kept: Counter[int] = Counter()
        if candidates:  # only then (a paper indexed before): the lookups below cost two requests per flush
            # Another job may be ingesting some of these papers right now: its equations are not this job's to
            # delete, and a paper whose document it wrote after this job's is its to prune.
            superseded = self._papers_written_by_others(sorted({paper_id for _, paper_id, _ in candidates}))
            others = self._other_running_jobs()
            for doc_id, paper_id, job_id in candidates:
                if paper_id in superseded or job_id in others:
                    kept[prunable[paper_id]] += 1
                else:
                    stale.setdefault(prunable[paper_id], set()).add(doc_id)
        if self._resumed:  # a killed run may have deleted some already: its pruning records name them
            by_source = {batch[position][0]: position for position in prunable.values()}
            ids = [self._checkpoint_id(source) for source in by_source]
            for doc in self.client.mget(index=self.jobs_alias, ids=ids)["docs"]:
                record = doc.get("_source") if doc.get("found") else None
                if record and record.get("record") == "pruning" and record.get("source") in by_source:
                    recorded = set((record.get("options") or {}).get("stale_ids") or ()) - keep
                    stale.setdefault(by_source[record["source"]], set()).update(recorded)
        return {position: sorted(ids) for position, ids in stale.items() if ids}, dict(kept)

    def _papers_written_by_others(self, paper_ids: list[str]) -> set[str]:
        """The papers among ``paper_ids`` whose paper document another job has written since this one (a real-time
        read: no refresh needed)."""
        docs = retrying(self.client).mget(index=self.admin.alias("papers"), ids=paper_ids, source=["job_id"])["docs"]
        return {
            doc["_id"] for doc in docs if doc.get("found") and (doc.get("_source") or {}).get("job_id") != self.job_id
        }

    def _other_running_jobs(self) -> set[str]:
        """Ids of the deployment's other jobs that are running: their record says so and, on this machine, their
        process is alive (a job on another machine is trusted; one in this process is another thread's)."""
        query = {
            "bool": {
                "filter": [{"term": {"record": "job"}}, {"term": {"state": STATE_RUNNING}}],
                "must_not": [{"term": {"job_id": self.job_id}}],
            }
        }
        try:
            hits = retrying(self.client).search(
                index=self.jobs_alias, query=query, size=1000, source=["job_id", "pid", "host"]
            )
        except NotFoundError:
            return set()
        running = set()
        for hit in hits["hits"]["hits"]:
            record = hit["_source"]
            pid = int(record.get("pid") or 0)
            if record.get("host") != socket.gethostname() or pid == os.getpid() or (pid > 0 and pid_alive(pid)):
                running.add(str(record.get("job_id")))
        return running

    def _delete_stale(self, batch: Batch, stale: dict[int, list[str]]) -> dict[int, list[BulkFailure]]:
        """Delete the stale equation documents; batch position -> the deletes Elasticsearch refused."""
        if not stale:
            return {}
        # Recorded before the deletes (and replaced by the checkpoint after them): a run killed among them still
        # counts them when it resumes, though the documents are gone by then.
        records = []
        for position, ids in stale.items():
            source, paper = batch[position][0], batch[position][1]
            body = {
                "record": "pruning",
                "job_id": self.job_id,
                "source": source,
                "paper_key": paper.key,
                "updated_at": _now(),
                "options": {"stale_ids": ids},
            }
            records.append({"_index": self.jobs_alias, "_id": self._checkpoint_id(source), "_source": body})
        self._bulk(records)
        owner = {doc_id: position for position, ids in stale.items() for doc_id in ids}
        equations = self.admin.alias("equations")
        report = self._bulk([{"_op_type": "delete", "_index": equations, "_id": doc_id} for doc_id in owner])
        refused: dict[int, list[BulkFailure]] = {}
        for failure in report.failures:
            if failure.status != 404:  # 404: already gone (a killed run of this job deleted it)
                refused.setdefault(owner.get(failure.doc_id, -1), []).append(failure)
        return refused

    # -- living with a migration ---------------------------------------------------------------------------------
    def _bulk(self, actions: list[dict[str, Any]], **kwargs: Any) -> BulkReport:
        """`bulk_index`, sending again what a migration's write block refused once the migration is over."""
        kwargs = {"max_retries": self.config.max_retries, "initial_backoff": self.config.initial_backoff, **kwargs}
        report = bulk_index(self.client, actions, **kwargs)
        for _ in range(BLOCKED_ROUNDS):
            blocked = {(f.op, f.doc_id) for f in report.failures if is_write_block(f)}
            if not blocked or (not self._await_migration() and self._blocked()):
                break  # a block no migration holds (a full disk, an admin) is reported like any refusal
            again = bulk_index(
                self.client, [a for a in actions if (a.get("_op_type", "index"), a["_id"]) in blocked], **kwargs
            )
            kept = [f for f in report.failures if (f.op, f.doc_id) not in blocked]
            report = BulkReport(ok=report.ok + again.ok, failures=kept + again.failures)
        return report

    def _blocked(self) -> bool:
        """Whether an index the job writes to is still write-blocked."""
        return self.admin.write_blocked(",".join(self.admin.alias(kind) for kind in ("equations", "papers", "jobs")))

    def _await_migration(self) -> bool:
        """Wait while a migration holds its lock.

        Returns:
            Whether there was a migration to wait for.

        Raises:
            IngestJobError: the migration's process died (on this machine), leaving its lock and its write block.
        """
        waited = False
        while True:
            lock = self.admin.migration_lock()
            if lock is None or self.admin.migration_finished(lock):
                break
            if lock.holder_alive() is False:
                raise IngestJobError(
                    f"{lock.describe()} stopped without finishing; {lock.source} stays write-blocked",
                    hint=f"run 'eqsearch index migrate {lock.kind}' (it cleans up and migrates again), then resume "
                    f"job {self.job_id}",
                )
            if not waited:
                self._note(f"waiting for {lock.describe()}")
            waited = True
            time.sleep(self.config.migration_poll_s)
        if waited:
            self._note(None)
        return waited

    def _refresh_cited_by(self) -> None:
        """Set ``cited_by_count`` on every indexed paper (and its equations) whose count changed."""
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
        query = {"match_all": {}}
        for doc_id, source in self._scan(papers, query, "paper_id"):
            count = cited.get(doc_id, 0)
            if int(source.get("cited_by_count") or 0) == count and "cited_by_count" in source:
                continue
            actions.append({"_op_type": "update", "_index": papers, "_id": doc_id, "doc": {"cited_by_count": count}})
            key = source.get("paper_key") or doc_id
            for number in range(int(source.get("equation_count") or 0)):
                actions.append(
                    {
                        "_op_type": "update",
                        "_index": self.admin.alias("equations"),
                        "_id": f"{key}:{number}",
                        "doc": {"cited_by_count": count},
                    }
                )
        if actions:
            report = self._bulk(actions)
            # an equation that failed to index cannot be updated: that is already counted, not a new error
            self.errors.update(f"cited-by:{f.error_type}" for f in report.failures if f.status != 404)


def job_records(client: Elasticsearch, prefix: str = "eqsearch", size: int = 50) -> list[dict[str, Any]]:
    """The most recent job documents of a deployment, newest first (empty when there is no jobs index)."""
    try:
        response = client.search(
            index=f"{prefix}-jobs",
            query={"term": {"record": "job"}},
            sort=[{"updated_at": "desc"}],
            size=size,
            source_excludes=["failures"],
        )
    except NotFoundError:
        return []
    return [hit["_source"] for hit in response["hits"]["hits"]]
