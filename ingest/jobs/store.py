"""An ingest job's records in the jobs index: the job document, its per-paper checkpoints and pruning records.

The job document (``record: job``, id = job id) holds state, progress, counts, errors by reason and the first
per-document failures. A checkpoint (``record: checkpoint``, id = ``<job id>/<sha1 of the source>``) is written
once Elasticsearch has acknowledged a paper's documents, with that paper's counts, so that a resumed job skips
exactly the checkpointed papers and its totals are the sum of its checkpoints: nothing lost, nothing counted twice.
A checkpoint also records the version of the extraction that read its source (`extractor_version`): a source
checkpointed by an older one is not done, so that a finished job run again (``make run`` on a deployment indexed
before HTML pages had their inline formulas) extracts it again; its documents are overwritten (same ids), the pruner
deletes those the new extraction no longer has, and its new checkpoint replaces the old one (same id).
A pruning record takes a checkpoint's id before the stale equations of a paper are deleted, naming them, and the
checkpoint replaces it afterwards (see `pruner`). Writes go through the job's `MigrationAwareWriter`, so that they
wait out a migration of the jobs index too.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from elasticsearch import AuthorizationException, Elasticsearch, NotFoundError
from eqsearch.engine.index import BulkFailure, alias_name, retrying
from eqsearch.ingest import htmlmath
from eqsearch.ingest.jobs.writer import MigrationAwareWriter

STATE_RUNNING = "running"
STATE_FINISHED = "finished"
STATE_FAILED = "failed"
STATE_INTERRUPTED = "interrupted"

#: The counts a job records and reports (all of them, zero or not).
COUNT_NAMES = (
    "papers",
    "papers_failed",
    "equations",
    "equations_ok",
    "equations_approximate",
    "equations_indexed",
    "equations_with_vector",
    "equations_with_node_vectors",
    "equations_unconverted",
    "equations_diagrams",
    "equations_unencoded",
    "documents_failed",
    "equations_stale_deleted",
    "equations_stale_kept",
    "inline",
    "inline_indexed",
    "inline_with_vector",
    "inline_skipped",
    "inline_unconverted",
    "papers_displays_missing",
    "displays_missing",
)


#: The extraction version of each kind of source (`eqsearch.ingest.sources.DocumentTask.kind`) that has had more
#: than one; the others, and checkpoints that record none (written before versions were), are version 1.
EXTRACTOR_VERSIONS: dict[str, int] = {"html": htmlmath.EXTRACTOR_VERSION}


def extractor_version(kind: str) -> int:
    """The current version of the extraction of sources of ``kind`` (``html``, ``archive``, ``paper``, ...)."""
    return EXTRACTOR_VERSIONS.get(kind, 1)


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
        warnings: one line per paper of this run whose source holds displays that none came out of
            (``warning:no_displays_found`` in ``errors_by_reason``, ``displays_missing`` in ``counts``).
    """

    job_id: str
    state: str
    counts: dict[str, int]
    errors_by_reason: dict[str, int]
    failures: list[BulkFailure]
    papers_total: int
    resumed_from: int
    seconds: float
    warnings: list[str] = field(default_factory=list)

    @property
    def equations_per_second(self) -> float:
        """Equations indexed per second of this run."""
        return self.counts.get("equations_indexed", 0) / self.seconds if self.seconds > 0 else 0.0


@dataclass
class JobTally:
    """A job's running totals, as its record and its report give them."""

    counts: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    failures: list[BulkFailure] = field(default_factory=list)
    papers_done: int = 0
    papers_total: int = 0

    def add(self, counts: Mapping[str, int], errors: Mapping[str, int], failures: Sequence[BulkFailure]) -> None:
        """Add one paper's counts, errors by reason and failures."""
        self.counts.update(counts)
        self.errors.update(errors)
        self.failures.extend(failures)

    def count_record(self) -> dict[str, int]:
        """Every count of `COUNT_NAMES`, zeros included."""
        return {name: int(self.counts.get(name, 0)) for name in COUNT_NAMES}


def now() -> str:
    """The current UTC time in ISO 8601, to the millisecond (the form of every time in the jobs index)."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def sorted_scan(
    client: Elasticsearch, index: str, query: Mapping[str, Any], sort_field: str
) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(id, source)`` of every document ``query`` matches, in ``sort_field`` order (``search_after`` pages)."""
    search_after = None
    while True:
        kwargs: dict[str, Any] = {"search_after": search_after} if search_after else {}
        sort = [{sort_field: "asc"}]
        hits = client.search(index=index, query=query, size=1000, sort=sort, **kwargs)["hits"]
        if not hits["hits"]:
            return
        for hit in hits["hits"]:
            yield hit["_id"], hit["_source"]
        search_after = hits["hits"][-1]["sort"]


class JobStore:
    """One job's records in the jobs index.

    Args:
        client: a connected client.
        jobs_alias: the deployment's jobs alias.
        job_id: the job's id.
        writer: the job's writer (its writes wait out a migration).
        failures_kept: per-document failures kept in a record (all are counted).

    Attributes:
        extractor_versions: source -> the extraction version (`extractor_version`) of the job's sources, set once
            they are discovered: what checkpoints record, and what a checkpoint must record to count as done.
    """

    def __init__(
        self, client: Elasticsearch, jobs_alias: str, job_id: str, writer: MigrationAwareWriter, failures_kept: int
    ) -> None:
        self.client = client
        self.jobs_alias = jobs_alias
        self.job_id = job_id
        self.writer = writer
        self.failures_kept = failures_kept
        self.extractor_versions: dict[str, int] = {}

    # -- the job document ----------------------------------------------------------------------------------------
    def read(self) -> dict[str, Any] | None:
        """The job's document, or None when the job never ran."""
        try:
            return self.client.get(index=self.jobs_alias, id=self.job_id)["_source"]
        except NotFoundError:
            return None

    def write(self, tally: JobTally, **fields: Any) -> None:
        """Write the job's document: the tally's progress, counts, errors and first failures, and ``fields``."""
        body = {
            "record": "job",
            "job_id": self.job_id,
            "updated_at": now(),
            "progress": {"papers_done": tally.papers_done, "papers_total": tally.papers_total},
            "counts": tally.count_record(),
            "errors_by_reason": dict(tally.errors),
            "failures": [f.to_json() for f in tally.failures[: self.failures_kept]],
            **fields,
        }
        self.writer.send(
            lambda: retrying(self.client).update(index=self.jobs_alias, id=self.job_id, doc=body, doc_as_upsert=True)
        )

    def note(self, message: str | None) -> None:
        """Set the job document's message; best effort (the jobs index itself may be the one being migrated)."""
        with contextlib.suppress(Exception):
            self.client.update(index=self.jobs_alias, id=self.job_id, doc={"message": message, "updated_at": now()})

    def other_running_records(self) -> list[dict[str, Any]]:
        """``job_id``, ``pid`` and ``host`` of the deployment's other jobs whose record says they are running."""
        query = {
            "bool": {
                "filter": [{"term": {"record": "job"}}, {"term": {"state": STATE_RUNNING}}],
                "must_not": [{"term": {"job_id": self.job_id}}],
            }
        }
        try:
            # a job that has just finished (in this process, say) must not read as running: its last record
            # write is not searchable until the jobs index is refreshed
            client = retrying(self.client)
            client.indices.refresh(index=self.jobs_alias)
            hits = client.search(index=self.jobs_alias, query=query, size=1000, source=["job_id", "pid", "host"])
        except NotFoundError:
            return []
        return [hit["_source"] for hit in hits["hits"]["hits"]]

    # -- checkpoints and pruning records -------------------------------------------------------------------------
    def checkpoint_id(self, source: str) -> str:
        """The id of the checkpoint (and, before it, of the pruning record) of one source."""
        return f"{self.job_id}/{hashlib.sha1(source.encode()).hexdigest()}"

    def checkpoints(self) -> Iterator[dict[str, Any]]:
        """Every checkpoint document of this job."""
        self.client.indices.refresh(index=self.jobs_alias)
        query = {"bool": {"filter": [{"term": {"record": "checkpoint"}}, {"term": {"job_id": self.job_id}}]}}
        for _, source in sorted_scan(self.client, self.jobs_alias, query, "source"):
            yield source

    def load_checkpoints(self, tally: JobTally) -> set[str]:
        """Add every current checkpoint's counts to ``tally``; returns the sources they cover (done). A checkpoint
        of an older extraction of its source (`extractor_versions`) is neither: its source is extracted again."""
        done: set[str] = set()
        for checkpoint in self.checkpoints():
            recorded = int((checkpoint.get("options") or {}).get("extractor") or 1)
            if recorded < self.extractor_versions.get(checkpoint["source"], 1):
                continue
            done.add(checkpoint["source"])
            tally.add(
                checkpoint.get("counts") or {},
                checkpoint.get("errors_by_reason") or {},
                [BulkFailure(**f) for f in checkpoint.get("failures") or []],
            )
        return done

    def forget_checkpoints(self) -> None:
        """Delete the job's checkpoints and pruning records (a restart)."""
        records = {"terms": {"record": ["checkpoint", "pruning"]}}
        query = {"bool": {"filter": [records, {"term": {"job_id": self.job_id}}]}}
        self.client.indices.refresh(index=self.jobs_alias)
        ids = [doc_id for doc_id, _ in sorted_scan(self.client, self.jobs_alias, query, "source")]
        self.writer.bulk([{"_op_type": "delete", "_index": self.jobs_alias, "_id": i} for i in ids])

    def checkpoint_action(
        self,
        source: str,
        paper_key: str,
        counts: Mapping[str, int],
        errors: Mapping[str, int],
        failures: Sequence[BulkFailure],
    ) -> dict[str, Any]:
        """The bulk action that checkpoints one source (its paper's documents acknowledged, its stale ones gone)."""
        return {
            "_index": self.jobs_alias,
            "_id": self.checkpoint_id(source),
            "_source": {
                "record": "checkpoint",
                "job_id": self.job_id,
                "source": source,
                "paper_key": paper_key,
                "updated_at": now(),
                "counts": dict(counts),
                "errors_by_reason": dict(errors),
                "failures": [f.to_json() for f in failures[: self.failures_kept]],
                "options": {"extractor": self.extractor_versions.get(source, 1)},
            },
        }

    def pruning_action(self, source: str, paper_key: str, stale_ids: list[str]) -> dict[str, Any]:
        """The bulk action that records the stale equation ids of one source before they are deleted."""
        body = {
            "record": "pruning",
            "job_id": self.job_id,
            "source": source,
            "paper_key": paper_key,
            "updated_at": now(),
            "options": {"stale_ids": stale_ids},
        }
        return {"_index": self.jobs_alias, "_id": self.checkpoint_id(source), "_source": body}

    def recorded_prunings(self, sources: Sequence[str]) -> dict[str, list[str]]:
        """Source -> the stale ids its pruning record names, for the sources a killed run was pruning."""
        ids = [self.checkpoint_id(source) for source in sources]
        wanted = set(sources)
        out: dict[str, list[str]] = {}
        for doc in self.client.mget(index=self.jobs_alias, ids=ids)["docs"]:
            record = doc.get("_source") if doc.get("found") else None
            if record and record.get("record") == "pruning" and record.get("source") in wanted:
                out[record["source"]] = list((record.get("options") or {}).get("stale_ids") or ())
        return out


def job_record(client: Elasticsearch, prefix: str, job_id: str) -> dict[str, Any] | None:
    """The job document of ``job_id`` (None when there is none, or no jobs index)."""
    try:
        record = client.get(index=alias_name(prefix, "jobs"), id=job_id)["_source"]
    except NotFoundError:
        return None
    return record if record.get("record") == "job" else None


def job_records(client: Elasticsearch, prefix: str = "eqsearch", size: int = 50) -> list[dict[str, Any]]:
    """The most recent job documents of a deployment, newest first (empty when there is no jobs index); a job
    written a moment ago is among them (the small jobs index is refreshed first: a search sees only refreshed
    documents)."""
    try:
        with contextlib.suppress(AuthorizationException):  # an account without the right lists what it sees
            client.indices.refresh(index=alias_name(prefix, "jobs"))
        response = client.search(
            index=alias_name(prefix, "jobs"),
            query={"term": {"record": "job"}},
            sort=[{"updated_at": "desc"}],
            size=size,
            source_excludes=["failures"],
        )
    except NotFoundError:
        return []
    return [hit["_source"] for hit in response["hits"]["hits"]]
