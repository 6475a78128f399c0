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


def test_a_papers_counts_name_every_status_of_its_displays():
    from collections import Counter

    from eqsearch.ingest.jobs.batch import paper_actions
    from eqsearch.ingest.records import Equation, Paper, Section

    class Zeros:
        similarity = "max_inner_product"

        def encode(self, mathml: list[str]) -> list[list[float]]:
            return [[0.0] * 128 for _ in mathml]

    math = '<math xmlns="http://www.w3.org/1998/Math/MathML"><mi>x</mi></math>'

    def equation(number: int, status: str, reason: str | None = None, mathml: str | None = None) -> Equation:
        return Equation(number, "x", "equation", 0, 0, status=status, reason=reason, mathml=mathml)

    equations = [
        equation(1, "ok", mathml=math),
        equation(2, "approximate", "undefined-macro", math),
        equation(3, "diagram", "diagram"),
        equation(4, "failed", "parse-error"),
    ]
    front = Section(0, 0, "front", "", None, 0, equations)
    paper = Paper(id="p", source="p", kind="arxiv", title="T", sections=[front])
    _, counts, errors = paper_actions(
        paper, encoder=Zeros(), text_encoder=None, inline=False, job_id="j", papers_index="pi",
        equations_index="ei", warnings=[],
    )  # fmt: skip
    assert {k: counts[k] for k in counts if k.startswith("equations")} == {
        "equations": 4, "equations_ok": 1, "equations_approximate": 1, "equations_diagrams": 1,
        "equations_unconverted": 1,
    }  # fmt: skip
    assert errors == Counter({"convert:parse-error": 1})
    # compared by cosine, a vector of zeros has no direction: not stored, and said
    Zeros.similarity = "cosine"
    actions, _, errors = paper_actions(
        paper, encoder=Zeros(), text_encoder=None, inline=False, job_id="j", papers_index="pi",
        equations_index="ei", warnings=[],
    )  # fmt: skip
    assert errors == Counter({"convert:parse-error": 1, "encode:zero-vector": 2})
    assert not any("vector" in action["_source"] for action in actions[1:])
