"""The stale-equation pruner on a real node: re-ingested papers lose the equations their new version no longer has
(resumably, after a job died among the deletes), and two jobs on the same paper never delete each other's."""

from __future__ import annotations

import os
import socket

import pytest
from eqsearch.ingest.jobs import IngestJob, IngestJobConfig, MigrationAwareWriter
from hashing_encoder import HashingEncoder

pytestmark = pytest.mark.es


def test_reingesting_changed_papers_deletes_their_stale_equations(es_client, index_name, papers):
    ids_of, eqs = papers.ids_of, papers.EQS_PER_PAPER
    config = IngestJobConfig(sources=(str(papers.write_all()),), index_prefix=index_name)
    assert IngestJob(es_client, HashingEncoder(), config).run().counts["equations_stale_deleted"] == 0
    changed = papers.write(
        "changed.jsonl",
        [
            papers.record(0, version=2, equations=3),  # a new arXiv version with fewer equations: every v1 id goes
            papers.record(1, equations=2),  # the same version, edited: v1:2..4 go
            papers.record(2, version=2, equations=7),  # more equations
            papers.record(4, version=2, failed=True),  # extraction failed: the v1 equations stay
            papers.record(5, version=2, bad_title=True),  # Elasticsearch refuses its documents: v1 stays
            papers.record(6, version=2, equations=4),  # two versions in one job: the later one wins,
            papers.record(6, version=3, equations=2),  # and the earlier one's equations go too
        ],
    )
    config = IngestJobConfig(sources=(str(changed),), index_prefix=index_name, batch_equations=50)
    report = IngestJob(es_client, HashingEncoder(), config).run()

    assert report.state == "finished"
    assert report.counts["equations_stale_deleted"] == 5 + 3 + 5 + (5 + 4)
    assert report.counts["documents_failed"] == 1 + eqs  # paper 5's paper and equation documents
    assert report.counts["papers_failed"] == 1
    expected = set().union(*(ids_of(p, 1, eqs) for p in range(papers.N_PAPERS) if p not in (0, 1, 2, 6)))
    expected |= ids_of(0, 2, 3) | ids_of(1, 1, 2) | ids_of(2, 2, 7) | ids_of(6, 3, 2)
    ids = papers.equation_ids(es_client, index_name)
    assert len(ids) == len(set(ids)) and set(ids) == expected
    index = f"{index_name}-papers"
    assert es_client.get(index=index, id="2401.00000")["_source"]["paper_key"] == "2401.00000v2"
    assert es_client.get(index=index, id="2401.00006")["_source"]["equation_count"] == 2
    assert es_client.get(index=index, id="2401.00005")["_source"]["paper_key"] == "2401.00005v1"
    record = es_client.get(index=f"{index_name}-jobs", id=report.job_id)["_source"]
    assert record["counts"]["equations_stale_deleted"] == report.counts["equations_stale_deleted"]

    again = IngestJob(es_client, HashingEncoder(), IngestJobConfig(**{**config.__dict__, "restart": True})).run()
    # the same end state; only paper 6's two versions replace each other again on the way (2 then 4 ids)
    assert again.counts["equations_stale_deleted"] == 2 + 4
    assert set(papers.equation_ids(es_client, index_name)) == expected


def test_two_jobs_on_the_same_paper_never_delete_each_others_equations(es_client, index_name, monkeypatch, papers):
    ids_of, eqs = papers.ids_of, papers.EQS_PER_PAPER

    def run(name: str, records: list[dict], **options) -> object:
        source = papers.write(f"{name}.jsonl", records)
        config = IngestJobConfig(sources=(str(source),), index_prefix=index_name, job_id=name, **options)
        return IngestJob(es_client, HashingEncoder(), config).run()

    run("a", [papers.record(p) for p in range(3)])
    # Job b wrote paper 0's version 2 (pruning version 1) and is still running: its record says so, its process lives.
    run("b", [papers.record(0, version=2, equations=3)])
    jobs = f"{index_name}-jobs"
    es_client.update(index=jobs, id="b", doc={"state": "running", "pid": os.getpid(), "host": socket.gethostname()})
    es_client.indices.refresh(index=jobs)
    c = run("c", [papers.record(0, version=3, equations=2)])
    assert c.counts["equations_stale_kept"] == 3 and c.counts["equations_stale_deleted"] == 0
    assert set(papers.equation_ids(es_client, index_name)) >= ids_of(0, 2, 3) | ids_of(0, 3, 2)  # b's equations stand
    assert "another job was ingesting the same papers" in es_client.get(index=jobs, id="c")["_source"]["message"]
    # Once b has ended, ingesting the paper again removes what is left of the older version.
    es_client.update(index=jobs, id="b", doc={"state": "finished"})
    es_client.indices.refresh(index=jobs)
    again = run("c", [papers.record(0, version=3, equations=2)], restart=True)
    assert again.counts["equations_stale_deleted"] == 3 and again.counts["equations_stale_kept"] == 0
    assert {i for i in papers.equation_ids(es_client, index_name) if i.startswith("2401.00000")} == ids_of(0, 3, 2)

    # Job d writes paper 1's version 2; before it prunes, another job ("e") writes paper 1's document: d leaves the
    # paper to e and deletes none of its equations.
    real_bulk = MigrationAwareWriter.bulk

    def bulk_then_overtaken(self, actions, **kwargs):
        report = real_bulk(self, actions, **kwargs)
        if self.job_id == "d" and any(a["_index"].endswith("-papers") for a in actions):
            es_client.update(index=f"{index_name}-papers", id="2401.00001", doc={"job_id": "e"})
        return report

    monkeypatch.setattr(MigrationAwareWriter, "bulk", bulk_then_overtaken)
    d = run("d", [papers.record(1, version=2, equations=2)])
    assert d.counts["equations_stale_kept"] == eqs and d.counts["equations_stale_deleted"] == 0
    assert set(papers.equation_ids(es_client, index_name)) >= ids_of(1, 1, eqs) | ids_of(1, 2, 2)


class Crash(Exception):
    """Stands for a kill at one point of the job (the documents and records written so far stay, as after kill -9)."""


@pytest.mark.parametrize("point", ["before the deletes", "after the deletes"])
def test_a_job_that_dies_while_deleting_stale_equations_resumes_exactly(
    es_client, index_name, monkeypatch, point, papers
):
    config = IngestJobConfig(sources=(str(papers.write_all()),), index_prefix=index_name)
    IngestJob(es_client, HashingEncoder(), config).run()
    changed = papers.write("changed.jsonl", [papers.record(p, version=2, equations=3) for p in range(6)])
    config = IngestJobConfig(sources=(str(changed),), index_prefix=index_name, job_id="prune", batch_equations=8)
    real_bulk = MigrationAwareWriter.bulk
    deletes_seen = []

    def dying_bulk(self, actions, **kwargs):
        if actions and actions[0].get("_op_type") == "delete" and actions[0]["_index"].endswith("-equations"):
            deletes_seen.append(len(actions))
            if len(deletes_seen) == 2:  # the second flush's deletes: the first flush is checkpointed
                if point == "after the deletes":
                    real_bulk(self, actions, **kwargs)
                raise Crash(point)
        return real_bulk(self, actions, **kwargs)

    monkeypatch.setattr(MigrationAwareWriter, "bulk", dying_bulk)
    with pytest.raises(Crash):
        IngestJob(es_client, HashingEncoder(), config).run()
    monkeypatch.undo()

    report = IngestJob(es_client, HashingEncoder(), config).run()
    assert report.state == "finished" and 0 < report.resumed_from < 6
    assert report.counts["equations_stale_deleted"] == 6 * papers.EQS_PER_PAPER
    assert report.counts["equations_indexed"] == 6 * 3
    expected = set().union(
        *(papers.ids_of(p, 1, papers.EQS_PER_PAPER) for p in range(6, papers.N_PAPERS)),
        *(papers.ids_of(p, 2, 3) for p in range(6)),
    )
    ids = papers.equation_ids(es_client, index_name)
    assert len(ids) == len(set(ids)) and set(ids) == expected
    es_client.indices.refresh(index=f"{index_name}-jobs")
    records = es_client.search(index=f"{index_name}-jobs", query={"term": {"job_id": "prune"}}, size=100)["hits"]
    assert sorted(h["_source"]["record"] for h in records["hits"]) == ["checkpoint"] * 6 + ["job"]


def test_reingesting_deletes_stale_inline_documents_and_no_inline_deletes_them_all(es_client, index_name, papers):
    from eqsearch.ingest.config import ExtractConfig

    first = [r"a + b = c", r"\sum_{i=1}^n x_i", r"f(x) = y"]
    source = papers.write("v1.jsonl", [papers.record(0, inline=first), papers.record(1, inline=first)])
    IngestJob(es_client, HashingEncoder(), IngestJobConfig(sources=(str(source),), index_prefix=index_name)).run()
    inline_ids = {i for i in papers.equation_ids(es_client, index_name) if ":i" in i}
    assert len(inline_ids) == 6

    # paper 0 edited: its last inline formula is now a lone symbol (left out); paper 1 gets a new version
    changed = papers.write(
        "v2.jsonl",
        [papers.record(0, inline=[*first[:2], "y"]), papers.record(1, version=2, inline=first[:1])],
    )
    config = IngestJobConfig(sources=(str(changed),), index_prefix=index_name)
    report = IngestJob(es_client, HashingEncoder(), config).run()
    assert report.counts["equations_stale_deleted"] == 1 + (papers.EQS_PER_PAPER + 3)
    ids = papers.equation_ids(es_client, index_name)
    assert {i for i in ids if ":i" in i} == {"2401.00000v1:i0", "2401.00000v1:i1", "2401.00001v2:i0"}
    assert len(ids) == len(set(ids))

    # the same papers again, display equations only: no inline document is left
    displays_only = IngestJobConfig(
        sources=(str(changed),), index_prefix=index_name, extract=ExtractConfig(inline=False)
    )
    report = IngestJob(es_client, HashingEncoder(), IngestJobConfig(**{**displays_only.__dict__, "job_id": "d"})).run()
    assert report.counts["inline"] == 0 and report.counts["equations_stale_deleted"] == 3
    ids = papers.equation_ids(es_client, index_name)
    assert not [i for i in ids if ":i" in i] and len(ids) == 2 * papers.EQS_PER_PAPER
    paper = es_client.get(index=f"{index_name}-papers", id="2401.00000")["_source"]
    assert (paper["inline_count"], paper["inline_numbers"]) == (0, [])
