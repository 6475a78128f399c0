"""One KaTeX worker spoken to over its pipes (`engine.latex.worker`): the real Node process, no converter around it."""

from __future__ import annotations

import collections
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from eqsearch.engine.latex.install import DEFAULT_KATEX_DIR, KatexNotInstalledError, check_installed
from eqsearch.engine.latex.macros import MacroDef, build_katex_macros
from eqsearch.engine.latex.worker import ConversionJob, KatexWorker, KatexWorkerError

_OPTIONS = {"max_expand": 1000, "unknown_macro_retries": 8, "start_timeout_s": 30.0}


@pytest.fixture
def worker() -> Iterator[KatexWorker]:
    try:
        check_installed()
    except KatexNotInstalledError as error:
        pytest.skip(str(error))
    started = KatexWorker("node", DEFAULT_KATEX_DIR, **_OPTIONS)
    yield started
    started.close()


def _answers(worker: KatexWorker, count: int, timeout: float = 30.0) -> list[tuple[ConversionJob, dict]]:
    got: list[tuple[ConversionJob, dict]] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        worker.read_available()
        got.extend(worker.answers())
    return got


def test_answers_come_back_in_order_with_their_jobs(worker):
    assert worker.version and worker.alive()
    jobs = collections.deque(ConversionJob(i, latex, None) for i, latex in enumerate(["x^2", "\\frac{a}{b}", "y"]))
    worker.send(jobs, max_in_flight=64)
    assert not jobs and len(worker.unanswered()) == 3
    answers = _answers(worker, 3)
    assert [job.index for job, _ in answers] == [0, 1, 2]
    assert "<mfrac>" in str(answers[1][1]) and worker.unanswered() == []


def test_a_documents_macros_are_sent_once_and_pipelining_is_bounded(worker):
    macros = build_katex_macros([MacroDef("\\R", "\\mathbb{R}")])
    jobs = collections.deque(ConversionJob(i, "x \\in \\R", macros) for i in range(4))
    worker.send(jobs, max_in_flight=2)
    assert len(jobs) == 2 and len(worker.unanswered()) == 2  # two in flight at most
    assert list(worker.defined_macros) == [macros.key]
    _answers(worker, 2)
    worker.send(jobs, max_in_flight=2)
    answers = _answers(worker, 2)
    assert len(answers) == 2 and all("double-struck" in str(answer) for _, answer in answers)


def test_a_missing_worker_script_is_a_clear_error(worker, tmp_path: Path):
    with pytest.raises(KatexWorkerError, match="did not start"):
        KatexWorker("node", tmp_path, **{**_OPTIONS, "start_timeout_s": 10.0})
