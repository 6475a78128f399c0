"""eqsearch.ingest.jobs: resumable ingest jobs into Elasticsearch.

`job` (the pipeline: discover -> extract/convert -> encode -> write), `batch` (one batch's writes paper by paper:
the bulk actions made from each paper, the counts of what became of them, the refusals that stop the job), `store`
(the job's records in the jobs index: job document, checkpoints, pruning records), `pruner` (deleting the equations
a paper's new version no longer has), `writer` (bulk writes that wait out a migration) and `runner` (the threads in
which the web app runs jobs and migrations). The names callers use are re-exported here.
"""

from eqsearch.ingest.jobs.errors import IngestJobError
from eqsearch.ingest.jobs.job import IngestJob, IngestJobConfig
from eqsearch.ingest.jobs.pruner import PaperWrites, PruneResult, StalePruner
from eqsearch.ingest.jobs.runner import AlreadyRunningError, JobRunner
from eqsearch.ingest.jobs.store import (
    COUNT_NAMES,
    STATE_FAILED,
    STATE_FINISHED,
    STATE_INTERRUPTED,
    STATE_RUNNING,
    JobProgress,
    JobReport,
    JobStore,
    JobTally,
    job_record,
    job_records,
)
from eqsearch.ingest.jobs.writer import BLOCKED_ROUNDS, MigrationAwareWriter

__all__ = [
    "BLOCKED_ROUNDS",
    "COUNT_NAMES",
    "STATE_FAILED",
    "STATE_FINISHED",
    "STATE_INTERRUPTED",
    "STATE_RUNNING",
    "AlreadyRunningError",
    "IngestJob",
    "IngestJobConfig",
    "IngestJobError",
    "JobProgress",
    "JobReport",
    "JobRunner",
    "JobStore",
    "JobTally",
    "MigrationAwareWriter",
    "PaperWrites",
    "PruneResult",
    "StalePruner",
    "job_record",
    "job_records",
]
