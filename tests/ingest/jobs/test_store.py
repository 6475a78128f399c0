"""The job store: the tally, the checkpoint and pruning records it writes (their ids and fields), and the job
records of a deployment that has none yet."""

from __future__ import annotations

import hashlib

import pytest
from eqsearch.engine.index import BulkFailure
from eqsearch.ingest.jobs import COUNT_NAMES, JobStore, JobTally, job_record, job_records
from eqsearch.ingest.jobs.store import extractor_version

FAILURE = BulkFailure("2401.00001v1:0", "x-equations-v1", 400, "mapper_parsing_exception", "bad title")


def store(failures_kept: int = 100) -> JobStore:
    return JobStore(client=None, jobs_alias="x-jobs", job_id="job-1", writer=None, failures_kept=failures_kept)  # type: ignore[arg-type]


def test_the_tally_adds_papers_and_records_every_count():
    tally = JobTally()
    tally.add({"papers": 1, "equations": 3}, {"convert:parse-error": 1}, [FAILURE])
    tally.add({"papers": 1, "equations_stale_deleted": 2}, {}, [])
    record = tally.count_record()
    assert list(record) == list(COUNT_NAMES)
    assert record["papers"] == 2 and record["equations"] == 3 and record["equations_stale_deleted"] == 2
    assert record["documents_failed"] == 0
    assert tally.errors == {"convert:parse-error": 1} and tally.failures == [FAILURE]


def test_checkpoints_and_pruning_records_share_the_id_of_their_source():
    jobs = store(failures_kept=1)
    digest = hashlib.sha1(b"papers.jsonl:1").hexdigest()
    assert jobs.checkpoint_id("papers.jsonl:1") == f"job-1/{digest}"
    checkpoint = jobs.checkpoint_action("papers.jsonl:1", "2401.00001v1", {"papers": 1}, {}, [FAILURE, FAILURE])
    assert checkpoint["_index"] == "x-jobs" and checkpoint["_id"] == f"job-1/{digest}"
    body = checkpoint["_source"]
    assert body.pop("updated_at")
    assert body == {
        "record": "checkpoint",
        "job_id": "job-1",
        "source": "papers.jsonl:1",
        "paper_key": "2401.00001v1",
        "counts": {"papers": 1},
        "errors_by_reason": {},
        "failures": [FAILURE.to_json()],  # the first `failures_kept`
        "options": {"extractor": 1},  # a source the job did not discover: the first version
    }
    jobs.extractor_versions = {"page.html": extractor_version("html")}
    assert jobs.checkpoint_action("page.html", "d/page", {}, {}, [])["_source"]["options"] == {"extractor": 2}
    assert extractor_version("archive") == extractor_version("paper") == 1
    pruning = jobs.pruning_action("papers.jsonl:1", "2401.00001v2", ["2401.00001v1:4"])
    assert pruning["_id"] == checkpoint["_id"]  # the checkpoint replaces it once the deletes are done
    assert pruning["_source"]["record"] == "pruning"
    assert pruning["_source"]["options"] == {"stale_ids": ["2401.00001v1:4"]}
    assert BulkFailure(**FAILURE.to_json()) == FAILURE  # how a resumed job reads them back


@pytest.mark.es
def test_a_deployment_without_a_jobs_index_has_no_job_records(es_client, index_name):
    assert job_records(es_client, index_name) == []
    assert job_record(es_client, index_name, "ingest-0123") is None


@pytest.mark.es
def test_a_job_written_a_moment_ago_is_listed(es_client, index_name):
    from eqsearch.engine.index import IndexAdmin, IndexOptions

    IndexAdmin(es_client, index_name).ensure(IndexOptions())
    es_client.index(
        index=f"{index_name}-jobs", id="job-9", document={"record": "job", "job_id": "job-9"}, refresh=False
    )
    assert [record["job_id"] for record in job_records(es_client, index_name)] == ["job-9"]
