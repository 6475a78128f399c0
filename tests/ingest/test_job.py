"""Ingest jobs on a real node: exact counts, no duplicates, resume after ``kill -9``, per-document bulk failures,
bulk-loading settings restored.

Sources are papers JSONL files (the ingest format's minimal input form); LaTeX goes through the real KaTeX
converter; vectors come from the tests' `HashingEncoder` (an honest stand-in for the trained model).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from eqsearch.engine.indices import current_load_settings
from eqsearch.ingest.job import IngestJob, IngestJobConfig

pytestmark = pytest.mark.es

TESTS = Path(__file__).resolve().parent.parent
N_PAPERS = 24
EQS_PER_PAPER = 5


def hashing_encoder():
    spec = importlib.util.spec_from_file_location("_hashing_encoder", TESTS / "hashing_encoder.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.HashingEncoder()


def write_papers(path: Path, *, bad_title_paper: int | None = None) -> Path:
    """N_PAPERS papers of EQS_PER_PAPER equations; paper 3's last equation does not parse."""
    with path.open("w", encoding="utf-8") as out:
        for p in range(N_PAPERS):
            equations = [
                {
                    "latex": f"x_{{{p}}}^{{{k}}} + \\frac{{a_{k}}}{{b_{p}}} = {k}",
                    "context_before": f"lemma {k} of paper {p}",
                }
                for k in range(EQS_PER_PAPER)
            ]
            if p == 3:
                equations[-1]["latex"] = r"\frac{1}{"
            paper = {
                "id": f"2401.{p:05d}",
                "version": 1,
                "title": {"not": "a string"} if p == bad_title_paper else f"On the sums of paper {p}",
                "abstract": "We study sums.",
                "authors": ["A. Author"],
                "metadata": {"categories": ["math.CO"], "published": "Mon, 1 Jan 2024 00:00:00 GMT"},
                "citations": [f"2401.{(p + 1) % N_PAPERS:05d}"],
                "sections": [{"title": "Intro", "equations": []}, {"title": "Main", "equations": equations}],
            }
            out.write(json.dumps(paper) + "\n")
    return path


def equation_ids(es_client, prefix: str) -> list[str]:
    es_client.indices.refresh(index=f"{prefix}-equations")
    hits = es_client.search(index=f"{prefix}-equations", size=1000, source=["eq_id"], sort=[{"eq_id": "asc"}])
    return [hit["_id"] for hit in hits["hits"]["hits"]]


def test_job_indexes_everything_once_and_twice_changes_nothing(es_client, index_name, tmp_path):
    source = write_papers(tmp_path / "papers.jsonl")
    config = IngestJobConfig(sources=(str(source),), index_prefix=index_name, batch_equations=20)
    report = IngestJob(es_client, hashing_encoder(), config).run()
    total = N_PAPERS * EQS_PER_PAPER
    assert report.state == "finished"
    assert report.counts["papers"] == N_PAPERS
    assert report.counts["equations"] == total
    assert report.counts["equations_indexed"] == total
    assert report.counts["equations_with_vector"] == total - 1
    assert report.counts["equations_unconverted"] == 1
    assert report.counts["documents_failed"] == 0
    assert sum(v for k, v in report.errors_by_reason.items() if k.startswith("convert:")) == 1
    ids = equation_ids(es_client, index_name)
    assert len(ids) == total == len(set(ids))
    assert ids[0] == "2401.00000v1:0"
    # bulk-loading settings are back
    settings = current_load_settings(es_client, f"{index_name}-equations")
    assert settings["refresh_interval"] is None
    # cited-by counts: each paper is cited by exactly one other
    paper = es_client.get(index=f"{index_name}-papers", id="2401.00005")["_source"]
    assert paper["cited_by_count"] == 1
    record = es_client.get(index=f"{index_name}-jobs", id=report.job_id)["_source"]
    assert record["state"] == "finished"
    assert record["counts"]["equations_indexed"] == total
    assert record["progress"] == {"papers_done": N_PAPERS, "papers_total": N_PAPERS}

    again = IngestJob(es_client, hashing_encoder(), config).run()  # a finished job: nothing left to do
    assert again.counts == report.counts and again.resumed_from == N_PAPERS
    restarted = IngestJob(es_client, hashing_encoder(), IngestJobConfig(**{**config.__dict__, "restart": True})).run()
    assert restarted.counts == report.counts and restarted.resumed_from == 0
    assert equation_ids(es_client, index_name) == ids


def test_bulk_partial_failures_are_reported_per_document(es_client, index_name, tmp_path):
    source = write_papers(tmp_path / "papers.jsonl", bad_title_paper=7)
    config = IngestJobConfig(sources=(str(source),), index_prefix=index_name, batch_equations=50)
    report = IngestJob(es_client, hashing_encoder(), config).run()
    assert report.state == "finished"
    failed_ids = sorted(f.doc_id for f in report.failures)
    assert failed_ids == ["2401.00007", *[f"2401.00007v1:{k}" for k in range(EQS_PER_PAPER)]]
    assert {f.status for f in report.failures} == {400}
    assert all("title" in f.reason for f in report.failures)
    assert report.counts["documents_failed"] == EQS_PER_PAPER + 1
    assert report.counts["equations_indexed"] == (N_PAPERS - 1) * EQS_PER_PAPER
    assert len(equation_ids(es_client, index_name)) == (N_PAPERS - 1) * EQS_PER_PAPER
    (reason,) = [k for k in report.errors_by_reason if k.startswith("index:")]
    assert report.errors_by_reason[reason] == EQS_PER_PAPER + 1
    record = es_client.get(index=f"{index_name}-jobs", id=report.job_id)["_source"]
    assert sorted(f["doc_id"] for f in record["failures"]) == failed_ids


RUNNER = """
import importlib.util, sys, time
from eqsearch.engine.config import EsConfig
from eqsearch.engine.es_client import connect
from eqsearch.ingest.job import IngestJob, IngestJobConfig

spec = importlib.util.spec_from_file_location("_hashing_encoder", sys.argv[3])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
inner = module.HashingEncoder()

class SlowEncoder:
    kind, dim, similarity = inner.kind, inner.dim, inner.similarity
    def encode(self, mathml):
        time.sleep(0.25)  # slow enough that the kill lands mid-job
        return inner.encode(mathml)

client, _ = connect(EsConfig.from_env())
config = IngestJobConfig(sources=(sys.argv[1],), index_prefix=sys.argv[2], job_id="killed", batch_equations=10)
IngestJob(client, SlowEncoder(), config).run()
"""


@pytest.mark.slow
def test_kill_9_then_resume_loses_nothing_and_duplicates_nothing(es_client, index_name, tmp_path):
    source = write_papers(tmp_path / "papers.jsonl")
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER)
    process = subprocess.Popen(
        [sys.executable, str(runner), str(source), index_name, str(TESTS / "hashing_encoder.py")],
        env=os.environ.copy(),
    )
    try:
        deadline = time.monotonic() + 120
        done = 0
        while time.monotonic() < deadline and process.poll() is None:
            try:
                record = es_client.get(index=f"{index_name}-jobs", id="killed")["_source"]
                done = record["progress"]["papers_done"]
            except Exception:
                done = 0
            if done >= 6:
                break
            time.sleep(0.1)
        assert process.poll() is None, "the job finished before it could be killed"
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGKILL
    killed = es_client.get(index=f"{index_name}-jobs", id="killed")["_source"]
    assert killed["state"] == "running"  # nobody could record the end
    assert 6 <= killed["progress"]["papers_done"] < N_PAPERS
    # the killed run left the bulk-loading settings on; the resumed run must put the recorded ones back
    assert es_client.indices.get_settings(index=f"{index_name}-equations", flat_settings=True)
    partial = len(equation_ids(es_client, index_name))
    assert 0 < partial < N_PAPERS * EQS_PER_PAPER

    config = IngestJobConfig(sources=(str(source),), index_prefix=index_name, job_id="killed", batch_equations=10)
    report = IngestJob(es_client, hashing_encoder(), config).run()
    total = N_PAPERS * EQS_PER_PAPER
    assert report.state == "finished"
    assert report.resumed_from >= 6
    assert report.counts["papers"] == N_PAPERS
    assert report.counts["equations"] == total
    assert report.counts["equations_indexed"] == total
    assert report.counts["equations_with_vector"] == total - 1
    ids = equation_ids(es_client, index_name)
    assert len(ids) == total == len(set(ids))
    assert report.failures == []
    es_client.indices.refresh(index=f"{index_name}-papers")
    papers = es_client.count(index=f"{index_name}-papers")["count"]
    assert papers == N_PAPERS
    assert current_load_settings(es_client, f"{index_name}-equations")["refresh_interval"] is None
    es_client.indices.refresh(index=f"{index_name}-jobs")
    checkpoints = es_client.count(index=f"{index_name}-jobs", query={"term": {"record": "checkpoint"}})["count"]
    assert checkpoints == N_PAPERS
