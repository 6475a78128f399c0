"""Deleting the equations a paper's new version no longer has, without deleting another job's.

A paper indexed again (a new arXiv version, an edited source) may now have fewer or other equations. Once a
paper's new documents are acknowledged, the pruner looks up every equation document with its ``paper_id`` (a point
in time with ``search_after``: the minimal distribution has no ``_delete_by_query``) and deletes those its new
version no longer has (count ``equations_stale_deleted``), before the paper's checkpoint. A crash before the deletes
leaves the paper's old equations next to the new ones until the resumed job does them; never a paper without
equations. A paper whose own document Elasticsearch refused keeps its old equations, as its old paper document
stands. The ids about to be deleted are recorded first (a pruning record, which the checkpoint then replaces), so a
job killed among the deletes still counts them when it resumes.

Two jobs ingesting the same paper at once never delete each other's equations: a job keeps (count
``equations_stale_kept``, and its record says so) the equations of another job that is running (its record says
so and, on this machine, its process is alive), and prunes nothing of a paper whose paper document another job has
written since; ingesting that paper again afterwards removes what is left of the older version.
"""

from __future__ import annotations

import os
import socket
from collections import Counter
from dataclasses import dataclass
from typing import Any

from elasticsearch import Elasticsearch
from eqsearch.engine.es import pid_alive
from eqsearch.engine.index import BulkFailure, IndexAdmin, retrying
from eqsearch.ingest.jobs.store import JobStore
from eqsearch.ingest.jobs.writer import MigrationAwareWriter
from eqsearch.ingest.records import Paper


@dataclass
class PaperWrites:
    """One paper's part of a flush.

    Args:
        source: the task's source (what its checkpoint records).
        paper: the extracted paper.
        actions: its bulk actions, its paper document first; empty when there is nothing to write.
        counts: its counts (see `COUNT_NAMES`), completed once its writes are acknowledged.
        errors: its errors by reason.
    """

    source: str
    paper: Paper
    actions: list[dict[str, Any]]
    counts: Counter[str]
    errors: Counter[str]


@dataclass
class PruneResult:
    """What pruning one flush did, by position of the paper in the flush.

    Args:
        stale: the ids of the equation documents found stale (and deleted, but for ``refused``).
        kept: how many stale documents were kept because another job may be writing that paper now.
        refused: the deletes Elasticsearch refused.
    """

    stale: dict[int, list[str]]
    kept: dict[int, int]
    refused: dict[int, list[BulkFailure]]


class StalePruner:
    """Finds and deletes the stale equations of the papers of each flush of one job.

    Args:
        client: a connected client.
        admin: the deployment's indices.
        store: the job's records (pruning records, other jobs' records).
        writer: the job's writer.
    """

    def __init__(self, client: Elasticsearch, admin: IndexAdmin, store: JobStore, writer: MigrationAwareWriter) -> None:
        self.client = client
        self.admin = admin
        self.store = store
        self.writer = writer
        self.job_id = store.job_id
        #: a run of this job ran before: it may have left pruning records
        self.resumed = False
        #: paper ids written by this run (their documents may be unrefreshed)
        self.written_papers: set[str] = set()

    def prune(self, batch: list[PaperWrites], failed_by_paper: dict[int, list[BulkFailure]]) -> PruneResult:
        """Delete the stale equations of the flushed papers whose documents were acknowledged.

        Args:
            batch: the flush, in order.
            failed_by_paper: position -> the documents of that paper Elasticsearch refused.
        """
        stale, kept = self.stale_equations(batch, failed_by_paper)
        refused = self.delete_stale(batch, stale)
        self.written_papers.update(item.paper.id for item in batch if item.actions)
        return PruneResult(stale, kept, refused)

    def stale_equations(
        self, batch: list[PaperWrites], failed_by_paper: dict[int, list[BulkFailure]]
    ) -> tuple[dict[int, list[str]], dict[int, int]]:
        """Batch position -> ids of that paper's equation documents which its new version no longer has; and batch
        position -> how many such documents are kept because another job may be writing that paper now."""
        prunable: dict[str, int] = {}
        for position, item in enumerate(batch):
            refused = {f.doc_id for f in failed_by_paper.get(position, [])}
            # the paper document is the index's idea of the paper: while the old one stands, so do its equations
            if item.actions and item.actions[0]["_id"] not in refused:
                prunable[item.paper.id] = position
        if not prunable:
            return {}, {}
        equations = self.admin.alias("equations")
        if not prunable.keys().isdisjoint(self.written_papers):
            # an earlier flush of this run wrote one of these papers, with refresh off: make it searchable first
            retrying(self.client).indices.refresh(index=equations)
        keep = {action["_id"] for position in prunable.values() for action in batch[position].actions[1:]}
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
            superseded = self.papers_written_by_others(sorted({paper_id for _, paper_id, _ in candidates}))
            others = self.other_running_jobs()
            for doc_id, paper_id, job_id in candidates:
                if paper_id in superseded or job_id in others:
                    kept[prunable[paper_id]] += 1
                else:
                    stale.setdefault(prunable[paper_id], set()).add(doc_id)
        if self.resumed:  # a killed run may have deleted some already: its pruning records name them
            by_source = {batch[position].source: position for position in prunable.values()}
            for source, ids in self.store.recorded_prunings(list(by_source)).items():
                stale.setdefault(by_source[source], set()).update(set(ids) - keep)
        return {position: sorted(ids) for position, ids in stale.items() if ids}, dict(kept)

    def papers_written_by_others(self, paper_ids: list[str]) -> set[str]:
        """The papers among ``paper_ids`` whose paper document another job has written since this one (a real-time
        read: no refresh needed)."""
        docs = retrying(self.client).mget(index=self.admin.alias("papers"), ids=paper_ids, source=["job_id"])["docs"]
        return {
            doc["_id"] for doc in docs if doc.get("found") and (doc.get("_source") or {}).get("job_id") != self.job_id
        }

    def other_running_jobs(self) -> set[str]:
        """Ids of the deployment's other jobs that are running: their record says so and, on this machine, their
        process is alive (a job on another machine is trusted; one in this process is another thread's)."""
        running = set()
        for record in self.store.other_running_records():
            pid = int(record.get("pid") or 0)
            if record.get("host") != socket.gethostname() or pid == os.getpid() or (pid > 0 and pid_alive(pid)):
                running.add(str(record.get("job_id")))
        return running

    def delete_stale(self, batch: list[PaperWrites], stale: dict[int, list[str]]) -> dict[int, list[BulkFailure]]:
        """Delete the stale equation documents; batch position -> the deletes Elasticsearch refused."""
        if not stale:
            return {}
        # Recorded before the deletes (and replaced by the checkpoint after them): a run killed among them still
        # counts them when it resumes, though the documents are gone by then.
        self.writer.bulk(
            [
                self.store.pruning_action(batch[position].source, batch[position].paper.key, ids)
                for position, ids in stale.items()
            ]
        )
        owner = {doc_id: position for position, ids in stale.items() for doc_id in ids}
        equations = self.admin.alias("equations")
        report = self.writer.bulk([{"_op_type": "delete", "_index": equations, "_id": doc_id} for doc_id in owner])
        refused: dict[int, list[BulkFailure]] = {}
        for failure in report.failures:
            if failure.status != 404:  # 404: already gone (a killed run of this job deleted it)
                refused.setdefault(owner.get(failure.doc_id, -1), []).append(failure)
        return refused
