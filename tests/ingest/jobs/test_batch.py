"""One batch of an ingest job's writes: the refusals that stop the job before its checkpoints. (Each paper's
actions and the counts of what became of them, on a real node: test_job.py.)"""

from __future__ import annotations

import pytest
from eqsearch.engine.index import BulkFailure
from eqsearch.ingest.jobs import IngestJobError
from eqsearch.ingest.jobs.batch import stop_on_passing_refusals


def test_a_refusal_that_passes_stops_the_job_before_its_checkpoints():
    mapping_error = BulkFailure("a:0", "x-equations-v2", 400, "document_parsing_exception", "bad field")
    stop_on_passing_refusals([mapping_error])  # about the document itself: counted, checkpointed, not retried
    full = BulkFailure(
        "a:1", "x-equations-v2", 429, "cluster_block_exception",
        "index [x-equations-v2] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, "
        "index has read-only-allow-delete block]",
    )  # fmt: skip
    with pytest.raises(IngestJobError, match="flood-stage watermark and x-equations-v2 is read-only") as raised:
        stop_on_passing_refusals([mapping_error, full])
    assert "free disk space" in (raised.value.hint or "")
    busy = BulkFailure("a:2", "x-equations-v2", 429, "es_rejected_execution_exception", "queue full")
    with pytest.raises(IngestJobError, match="refused 1 documents for a reason that passes"):
        stop_on_passing_refusals([busy])
