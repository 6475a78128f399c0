"""Ingest jobs on a real node: exact counts, no duplicates, resume after ``kill -9``, per-document bulk failures,
bulk-loading settings restored, cited-by counts, and a new model never mixed with the old. (Stale equations of
re-ingested papers: test_pruner.py; migrations while a job runs: test_writer.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from eqsearch.engine.index import IndexAdmin, IndexOptions, current_load_settings, reencode_vectors
from eqsearch.engine.index.mappings import DERIVED_FIELDS, STRUCTURE_FIELD
from eqsearch.ingest.jobs import IngestJob, IngestJobConfig, IngestJobError
from hashing_encoder import HashingEncoder

pytestmark = pytest.mark.es

TESTS = Path(__file__).resolve().parents[2]


def test_job_indexes_everything_once_and_twice_changes_nothing(es_client, index_name, papers):
    source = papers.write_all()
    config = IngestJobConfig(sources=(str(source),), index_prefix=index_name, batch_equations=20)
    report = IngestJob(es_client, HashingEncoder(), config).run()
    total = papers.N_PAPERS * papers.EQS_PER_PAPER
    assert report.state == "finished"
    assert report.counts["papers"] == papers.N_PAPERS
    assert report.counts["equations"] == total
    assert report.counts["equations_indexed"] == total
    assert report.counts["equations_with_vector"] == total - 1
    assert report.counts["equations_unconverted"] == 1
    assert report.counts["documents_failed"] == 0
    assert sum(v for k, v in report.errors_by_reason.items() if k.startswith("convert:")) == 1
    ids = papers.equation_ids(es_client, index_name)
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
    assert record["progress"] == {"papers_done": papers.N_PAPERS, "papers_total": papers.N_PAPERS}

    again = IngestJob(es_client, HashingEncoder(), config).run()  # a finished job: nothing left to do
    assert again.counts == report.counts and again.resumed_from == papers.N_PAPERS
    restarted = IngestJob(es_client, HashingEncoder(), IngestJobConfig(**{**config.__dict__, "restart": True})).run()
    assert restarted.counts == report.counts and restarted.resumed_from == 0
    assert papers.equation_ids(es_client, index_name) == ids


def test_bulk_partial_failures_are_reported_per_document(es_client, index_name, papers):
    source = papers.write_all(bad_title_paper=7)
    config = IngestJobConfig(sources=(str(source),), index_prefix=index_name, batch_equations=50)
    report = IngestJob(es_client, HashingEncoder(), config).run()
    assert report.state == "finished"
    failed_ids = sorted(f.doc_id for f in report.failures)
    assert failed_ids == ["2401.00007", *[f"2401.00007v1:{k}" for k in range(papers.EQS_PER_PAPER)]]
    assert {f.status for f in report.failures} == {400}
    assert all("title" in f.reason for f in report.failures)
    assert report.counts["documents_failed"] == papers.EQS_PER_PAPER + 1
    assert report.counts["equations_indexed"] == (papers.N_PAPERS - 1) * papers.EQS_PER_PAPER
    assert len(papers.equation_ids(es_client, index_name)) == (papers.N_PAPERS - 1) * papers.EQS_PER_PAPER
    (reason,) = [k for k in report.errors_by_reason if k.startswith("index:")]
    assert report.errors_by_reason[reason] == papers.EQS_PER_PAPER + 1
    record = es_client.get(index=f"{index_name}-jobs", id=report.job_id)["_source"]
    assert sorted(f["doc_id"] for f in record["failures"]) == failed_ids


RUNNER = """
import importlib.util, sys, time
from eqsearch.engine.es.config import EsConfig
from eqsearch.engine.es.client import connect
from eqsearch.ingest.jobs import IngestJob, IngestJobConfig

spec = importlib.util.spec_from_file_location("_hashing_encoder", sys.argv[3])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
inner = module.HashingEncoder()

class SlowEncoder:
    kind, dim, similarity, identity = inner.kind, inner.dim, inner.similarity, inner.identity
    calls = 0
    def encode(self, mathml):  # one call per paper
        SlowEncoder.calls += 1
        # slow enough that the kill lands mid-job, anywhere from paper 6 on; and never past paper 20, so that a
        # test process slowed down by a busy machine cannot see the job finish before it kills it
        time.sleep(0.25 if SlowEncoder.calls <= 20 else 3600)
        return inner.encode(mathml)

client, _ = connect(EsConfig.from_env())
config = IngestJobConfig(sources=(sys.argv[1],), index_prefix=sys.argv[2], job_id="killed", batch_equations=10)
IngestJob(client, SlowEncoder(), config).run()
"""


@pytest.mark.slow
def test_kill_9_then_resume_loses_nothing_and_duplicates_nothing(es_client, index_name, tmp_path, papers):
    source = papers.write_all()
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
        assert process.poll() is None, "the job process ended before it could be killed"
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGKILL
    killed = es_client.get(index=f"{index_name}-jobs", id="killed")["_source"]
    assert killed["state"] == "running"  # nobody could record the end
    assert 6 <= killed["progress"]["papers_done"] < papers.N_PAPERS
    # the killed run left the bulk-loading settings on; the resumed run must put the recorded ones back
    assert es_client.indices.get_settings(index=f"{index_name}-equations", flat_settings=True)
    partial = len(papers.equation_ids(es_client, index_name))
    assert 0 < partial < papers.N_PAPERS * papers.EQS_PER_PAPER

    config = IngestJobConfig(sources=(str(source),), index_prefix=index_name, job_id="killed", batch_equations=10)
    report = IngestJob(es_client, HashingEncoder(), config).run()
    total = papers.N_PAPERS * papers.EQS_PER_PAPER
    assert report.state == "finished"
    assert report.resumed_from >= 6
    assert report.counts["papers"] == papers.N_PAPERS
    assert report.counts["equations"] == total
    assert report.counts["equations_indexed"] == total
    assert report.counts["equations_with_vector"] == total - 1
    ids = papers.equation_ids(es_client, index_name)
    assert len(ids) == total == len(set(ids))
    assert report.failures == []
    es_client.indices.refresh(index=f"{index_name}-papers")
    assert es_client.count(index=f"{index_name}-papers")["count"] == papers.N_PAPERS
    assert current_load_settings(es_client, f"{index_name}-equations")["refresh_interval"] is None
    es_client.indices.refresh(index=f"{index_name}-jobs")
    checkpoints = es_client.count(index=f"{index_name}-jobs", query={"term": {"record": "checkpoint"}})["count"]
    assert checkpoints == papers.N_PAPERS


def test_a_new_model_never_mixes_with_the_old_until_the_index_is_reencoded(es_client, index_name, papers):
    """Upgrade the model bundle: the job refuses to add the new model's vectors to the old model's index, searches
    turn the formula embedding off (keywords and the structural channel still answer), `migrate --reencode` swaps in
    the new vectors, and then both the job and formula search go on."""
    from eqsearch.engine.latex.converter import KatexConverter
    from eqsearch.engine.search.service import HybridQuery, SearchService

    old = HashingEncoder()
    new = HashingEncoder()
    new.identity = "hashing-test:2"
    plain_encode = new.encode
    new.encode = lambda mathml: -plain_encode(mathml)  # another model: other vectors, same shape
    source = papers.write("papers.jsonl", [papers.record(p) for p in range(4)])
    config = IngestJobConfig(sources=(str(source),), index_prefix=index_name, batch_equations=50)
    assert IngestJob(es_client, old, config).run().state == "finished"
    admin = IndexAdmin(es_client, index_name)
    assert admin.options_of("equations").encoder == "hashing-test:1"

    with pytest.raises(IngestJobError, match=r"(?s)hashing-test:1 .* hashing-test:2 .*--reencode"):
        IngestJob(es_client, new, config).run()
    query = HybridQuery(latex=r"x_{1}^{2} + \frac{a_2}{b_1} = 2 + 1", keywords="sums")
    with KatexConverter() as converter:
        stale = SearchService(es_client, new, converter, index_prefix=index_name).search(query)
        assert any("formula embedding is off" in w and "--reencode" in w for w in stale.warnings)
        # keywords and the structural channel still answer; the old model's vectors are never compared with the new
        assert stale.hits and all("embedding" not in h.channels for h in stale.hits)
        assert {"structure", "text"} <= {c for h in stale.hits for c in h.channels}

        report = admin.migrate(
            "equations",
            IndexOptions(dims=new.dim, similarity=new.similarity, encoder=new.identity),
            rewrite=reencode_vectors(new),
            batch_size=7,  # pages that do not divide the 20 equations
        )
        assert report.copied == report.source_count == report.target_count == 20
        assert admin.options_of("equations").encoder == "hashing-test:2"
        stored = es_client.get(
            index=f"{index_name}-equations", id="2401.00001v1:2", source_includes=["vector", "mathml"]
        )["_source"]
        assert stored["vector"] == pytest.approx(new.encode([stored["mathml"]])[0].tolist(), abs=1e-6)
        unconverted = es_client.get(index=f"{index_name}-equations", id="2401.00003v1:4")["_source"]
        assert "vector" not in unconverted  # no MathML: no vector, before as after

        service = SearchService(es_client, new, converter, index_prefix=index_name)
        fresh = service.search(query)
        assert not any("formula embedding is off" in w for w in fresh.warnings)
        assert "both" in {h.matched for h in fresh.hits}
        assert "embedding" in {c for h in fresh.hits for c in h.channels}
        formula_only = service.search(HybridQuery(latex=query.latex))
        assert formula_only.hits[0].eq_id == "2401.00001v1:2"  # the same formula, found by the new vectors
        assert formula_only.hits[0].channels == ("structure", "embedding")
    assert IngestJob(es_client, new, config).run().state == "finished"


@pytest.mark.es
def test_diagrams_are_indexed_as_latex_and_counted_apart_from_failures(es_client, index_name, papers):
    record = papers.record(0, equations=1)
    record["sections"][1]["equations"].append({"latex": r"\begin{tikzcd} A \arrow[r, \"f\"] & B \end{tikzcd}"})
    source = papers.write("papers.jsonl", [record])
    config = IngestJobConfig(sources=(str(source),), index_prefix=index_name)
    report = IngestJob(es_client, HashingEncoder(), config).run()
    assert report.state == "finished"
    assert report.counts["equations_diagrams"] == 1 and report.counts["equations_unconverted"] == 0
    assert not any(reason.startswith("convert:") for reason in report.errors_by_reason)
    stored = es_client.get(index=f"{index_name}-equations", id="2401.00000v1:1")["_source"]
    assert stored["status"] == "diagram" and "tikzcd" in stored["latex"] and stored["mathml"] is None


INLINE = ["x", r"a + b = c", r"\sum_{i=1}^n x_i", "N_e"]  # a lone symbol and two symbols are left out


def test_inline_formulas_get_documents_of_their_own(es_client, index_name, papers):
    source = papers.write("inline.jsonl", [papers.record(p, inline=INLINE if p == 1 else None) for p in range(3)])
    config = IngestJobConfig(sources=(str(source),), index_prefix=index_name)
    report = IngestJob(es_client, HashingEncoder(), config).run()
    assert report.state == "finished"
    assert {name: report.counts[name] for name in report.counts if name.startswith("inline")} == {
        "inline": 4,
        "inline_indexed": 2,
        "inline_with_vector": 2,
        "inline_skipped": 2,
        "inline_unconverted": 0,
    }
    assert report.counts["equations_indexed"] == 3 * papers.EQS_PER_PAPER  # displays are counted apart
    ids = papers.equation_ids(es_client, index_name)
    assert [i for i in ids if ":i" in i] == ["2401.00001v1:i1", "2401.00001v1:i2"]
    summed = es_client.get(index=f"{index_name}-equations", id="2401.00001v1:i1")["_source"]
    assert summed["inline"] is True and summed["latex"] == "a + b = c" and summed["mathml"].startswith("<math")
    # the paper's recount stays with the paper; the equation's derived fields are indexed but not in its source
    assert "cited_by_count" not in summed and not set(DERIVED_FIELDS) & set(summed)
    found = es_client.search(index=f"{index_name}-equations", query={"term": {STRUCTURE_FIELD: "V:a"}}, size=50)
    assert "2401.00001v1:i1" in {hit["_id"] for hit in found["hits"]["hits"]}
    display = es_client.get(index=f"{index_name}-equations", id="2401.00001v1:0")["_source"]
    assert display["inline"] is False
    paper = es_client.get(index=f"{index_name}-papers", id="2401.00001")["_source"]
    assert (paper["inline_count"], paper["inline_numbers"]) == (2, [1, 2])
    record = es_client.get(index=f"{index_name}-jobs", id=report.job_id)["_source"]
    assert record["options"]["inline"] is True

    restarted = IngestJob(es_client, HashingEncoder(), IngestJobConfig(**{**config.__dict__, "restart": True})).run()
    assert restarted.counts == report.counts
    assert papers.equation_ids(es_client, index_name) == ids  # the same ids: nothing duplicated


def test_a_job_refuses_indices_of_an_older_mapping_until_they_are_migrated(es_client, index_name, papers):
    source = papers.write("one.jsonl", [papers.record(0, inline=INLINE)])
    config = IngestJobConfig(sources=(str(source),), index_prefix=index_name)
    IngestJob(es_client, HashingEncoder(), config).run()
    admin = IndexAdmin(es_client, index_name)
    equations = f"{index_name}-equations"
    # a display written before inline formulas were indexed: no "inline" field
    old = es_client.get(index=equations, id="2401.00000v1:0")["_source"]
    es_client.index(index=equations, id="2401.00000v1:0", document={k: v for k, v in old.items() if k != "inline"})
    for kind, older in (("equations", 2), ("papers", 1)):  # as an eqsearch before inline formulas left them
        current = admin.current(kind)
        meta = es_client.indices.get_mapping(index=current)[current]["mappings"]["_meta"]
        es_client.indices.put_mapping(index=current, meta={**meta, "mapping_version": older})
    again = IngestJobConfig(**{**config.__dict__, "restart": True})
    with pytest.raises(IngestJobError, match="equations mapping of version 2") as refused:
        IngestJob(es_client, HashingEncoder(), again).run()
    assert "eqsearch index migrate equations" in (refused.value.hint or "")
    admin.migrate("equations")
    with pytest.raises(IngestJobError, match="papers mapping of version 1"):
        IngestJob(es_client, HashingEncoder(), again).run()
    admin.migrate("papers")
    assert es_client.get(index=equations, id="2401.00000v1:0")["_source"]["inline"] is False  # the migration set it
    assert es_client.get(index=equations, id="2401.00000v1:i1")["_source"]["inline"] is True
    assert IngestJob(es_client, HashingEncoder(), again).run().state == "finished"


def test_pages_an_older_extractor_read_are_extracted_again_and_their_stale_documents_pruned(
    es_client, index_name, monkeypatch
):
    from eqsearch.ingest import htmlmath
    from eqsearch.ingest.jobs import store
    from eqsearch.ingest.records import Equation

    def older_extraction(paper, walk, text, starts, config):
        """No inline formulas, and one thing taken for a display (as imgmath's inline images were)."""
        paper.sections[0].equations.append(Equation(len(paper.equations()), "a + b = c", "\\[", 0, 0))

    pages = TESTS / "ingest" / "fixtures" / "html_inline"
    config = IngestJobConfig(sources=(str(pages),), index_prefix=index_name)
    with monkeypatch.context() as patch:
        patch.setattr(htmlmath, "_inline_formulas", older_extraction)
        patch.setattr(store, "EXTRACTOR_VERSIONS", {})
        old = IngestJob(es_client, HashingEncoder(), config).run()
    assert old.state == "finished" and old.counts["inline"] == 0
    old_ids = _equation_ids(es_client, index_name)
    assert not [i for i in old_ids if ":i" in i] and "html_inline/sphinx:2" in old_ids
    # checkpoints as a job wrote them before they recorded their extractor's version
    es_client.indices.refresh(index=f"{index_name}-jobs")
    hits = es_client.search(index=f"{index_name}-jobs", query={"term": {"record": "checkpoint"}}, size=100)["hits"]
    assert len(hits["hits"]) == 4
    for hit in hits["hits"]:
        es_client.index(index=f"{index_name}-jobs", id=hit["_id"], document=dict(hit["_source"], options=None))

    upgraded = IngestJob(es_client, HashingEncoder(), config).run()  # the same job, finished: `make run` again
    assert upgraded.state == "finished" and upgraded.resumed_from == 0  # every page extracted again
    assert upgraded.counts["papers"] == 4 and upgraded.counts["equations_stale_deleted"] == 4
    inline = {name: upgraded.counts[name] for name in ("inline", "inline_indexed", "inline_skipped")}
    assert inline == {"inline": 19, "inline_indexed": 17, "inline_skipped": 2}  # $u$ and $x$: one symbol
    assert upgraded.counts["inline_unconverted"] == 0  # the pages' macros (\dx, \RR) reach KaTeX
    ids = _equation_ids(es_client, index_name)
    assert "html_inline/sphinx:2" not in ids and "html_inline/sphinx:i3" in ids
    summed = es_client.get(index=f"{index_name}-equations", id="html_inline/sphinx:i3")["_source"]
    assert summed["inline"] is True and summed["mathml"].startswith("<math")

    again = IngestJob(es_client, HashingEncoder(), config).run()  # now current: nothing left to do
    assert again.resumed_from == 4 and again.counts == upgraded.counts
    restarted = IngestJob(es_client, HashingEncoder(), IngestJobConfig(**{**config.__dict__, "restart": True})).run()
    assert _equation_ids(es_client, index_name) == ids  # the same documents as a fresh run's
    assert restarted.counts == {**upgraded.counts, "equations_stale_deleted": 0}


def _equation_ids(es_client, prefix: str) -> list[str]:
    es_client.indices.refresh(index=f"{prefix}-equations")
    hits = es_client.search(index=f"{prefix}-equations", size=1000, source=False, sort=[{"eq_id": "asc"}])
    return [hit["_id"] for hit in hits["hits"]["hits"]]


def test_context_vectors_are_an_option_that_a_deployment_keeps_once_chosen(es_client, index_name, papers):
    source = papers.write_all()
    alias = f"{index_name}-equations"

    def with_context() -> int:
        es_client.indices.refresh(index=alias)
        return es_client.count(index=alias, query={"exists": {"field": "context_vector"}})["count"]

    config = IngestJobConfig(sources=(str(source),), index_prefix=index_name, batch_equations=20)
    assert IngestJob(es_client, HashingEncoder(), config).run().state == "finished"
    assert with_context() == 0  # off by default
    chosen = IngestJobConfig(**{**config.__dict__, "restart": True, "context_vectors": True})
    report = IngestJob(es_client, HashingEncoder(), chosen).run()
    assert with_context() == report.counts["equations_indexed"] > 0
    meta = next(iter(es_client.indices.get_mapping(index=alias).values()))["mappings"]["_meta"]
    assert meta["text_encoder"].startswith("wordllama")
    # a later job without the option still fills them (its restart rewrites every document whole): the index holds
    # them, so it stays whole
    later = IngestJob(es_client, HashingEncoder(), IngestJobConfig(**{**config.__dict__, "restart": True}))
    assert later.text_encoder is None
    later.run()
    assert later.text_encoder is not None and with_context() == report.counts["equations_indexed"]


def test_a_paper_that_lost_its_displays_is_a_warning_in_the_job_record(es_client, index_name, tmp_path):
    (tmp_path / "lost").mkdir()
    (tmp_path / "lost" / "main.tex").write_bytes(
        rb"\documentclass{article}\def\bea{\begin{eqnarray}}\def\eea{\end{eqnarray}}\begin{document}Words.\end{document}"
    )
    # an appendix no document inputs holds four displays
    (tmp_path / "lost" / "appendix.tex").write_bytes(
        rb"\bea a &=& b \eea \begin{align*} c \end{align*} \[ e \] $$ f $$"
    )
    config = IngestJobConfig(sources=(str(tmp_path / "lost"),), index_prefix=index_name, kind="arxiv")
    report = IngestJob(es_client, HashingEncoder(), config).run()  # extracted and converted with real KaTeX
    assert report.state == "finished" and report.counts["papers"] == 1
    assert (report.counts["papers_displays_missing"], report.counts["displays_missing"]) == (1, 4)
    assert report.errors_by_reason == {"warning:no_displays_found": 1}
    assert len(report.warnings) == 1 and report.warnings[0].startswith("lost: no display equation was extracted")
    record = es_client.get(index=f"{index_name}-jobs", id=report.job_id)["_source"]
    assert record["counts"]["displays_missing"] == 4
    assert record["errors_by_reason"] == {"warning:no_displays_found": 1}
    # a resumed job's totals come from the checkpoints: the warning is counted once, not lost
    again = IngestJob(es_client, HashingEncoder(), config).run()
    assert again.counts == report.counts and again.errors_by_reason == report.errors_by_reason
