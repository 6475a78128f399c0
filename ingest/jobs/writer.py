"""The ingest job's writes, made to live with a migration (`eqsearch.engine.index.migration`).

Before each write the writer looks for the migration's lock and waits while it stands (the job's record says so in
its ``message``); a write that the migration's write block refused anyway (the writer looked just before the lock
was taken) is sent again once the alias has moved, so it lands in the new index. A block that no migration holds (a
full disk, an administrator's) is not waited out: its refusals are reported like any other. A migration whose
process died on this machine leaves its lock and its block: the writer stops with an error that says how to clean
up, rather than waiting forever.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from elasticsearch import ApiError, Elasticsearch
from eqsearch.engine.index import BulkReport, IndexAdmin, bulk_index, is_write_block, is_write_block_error
from eqsearch.ingest.jobs.errors import IngestJobError

#: Times one write is sent again after a write block (each time after a migration ended, or the block was gone).
BLOCKED_ROUNDS = 10

T = TypeVar("T")


class MigrationAwareWriter:
    """Bulk and single writes of one ingest job that pause during a migration and carry on into the new index.

    Args:
        client: a connected client.
        admin: the deployment's indices.
        job_id: the job (named in the error when a dead migration blocks it).
        max_retries: retries of 429 items and of failed bulk requests (exponential backoff).
        initial_backoff: seconds before the first retry.
        poll_s: seconds between looks at a migration's lock while waiting for it.
        on_wait: called with a sentence when the writer starts waiting for a migration, and with None when it is
            over (the job shows it in its record).
    """

    def __init__(
        self,
        client: Elasticsearch,
        admin: IndexAdmin,
        *,
        job_id: str,
        max_retries: int = 5,
        initial_backoff: float = 1.0,
        poll_s: float = 1.0,
        on_wait: Callable[[str | None], None] | None = None,
    ) -> None:
        self.client = client
        self.admin = admin
        self.job_id = job_id
        self.max_retries = max_retries
        self.initial_backoff = initial_backoff
        self.poll_s = poll_s
        self.on_wait = on_wait

    def bulk(self, actions: list[dict[str, Any]], **kwargs: Any) -> BulkReport:
        """`bulk_index`, sending again what a migration's write block refused once the migration is over.

        Args:
            actions: the bulk actions (a list: the refused ones are picked out of it again).
            **kwargs: more `bulk_index` arguments (``chunk_size``, ...).

        Returns:
            Counts and the per-document failures left after the last round.
        """
        kwargs = {"max_retries": self.max_retries, "initial_backoff": self.initial_backoff, **kwargs}
        report = bulk_index(self.client, actions, **kwargs)
        for _ in range(BLOCKED_ROUNDS):
            blocked = {(f.op, f.doc_id) for f in report.failures if is_write_block(f)}
            if not blocked or (not self.await_migration() and self.blocked()):
                break  # a block no migration holds (a full disk, an admin) is reported like any refusal
            again = bulk_index(
                self.client, [a for a in actions if (a.get("_op_type", "index"), a["_id"]) in blocked], **kwargs
            )
            kept = [f for f in report.failures if (f.op, f.doc_id) not in blocked]
            report = BulkReport(ok=report.ok + again.ok, failures=kept + again.failures)
        return report

    def send(self, request: Callable[[], T]) -> T:
        """Run one write request, again after a migration's write block refused it.

        Raises:
            elasticsearch.ApiError: any other refusal, or a block that no migration holds.
        """
        for _ in range(BLOCKED_ROUNDS):
            try:
                return request()
            except ApiError as error:
                if not is_write_block_error(error) or (not self.await_migration() and self.blocked()):
                    raise
        return request()

    def blocked(self) -> bool:
        """Whether an index the job writes to is still write-blocked."""
        return self.admin.write_blocked(",".join(self.admin.alias(kind) for kind in ("equations", "papers", "jobs")))

    def await_migration(self) -> bool:
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
            if not waited and self.on_wait is not None:
                self.on_wait(f"waiting for {lock.describe()}")
            waited = True
            time.sleep(self.poll_s)
        if waited and self.on_wait is not None:
            self.on_wait(None)
        return waited
