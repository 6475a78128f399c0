"""An extraction run: documents through parallel workers (each with a time budget), papers to JSONL, statistics.

Each worker is a process of its own with a pipe to the parent; a document over its budget gets its worker
killed and replaced, and is recorded as failed with reason ``timeout``. Every finished paper is written and
flushed at once, so a crash or a Ctrl-C keeps what was done and ``--resume`` carries on from there.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from eqsearch.engine.errors import EqsearchError
from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.displaycheck import NO_DISPLAYS_FOUND
from eqsearch.ingest.errors import IngestError
from eqsearch.ingest.metadata import apply_metadata
from eqsearch.ingest.records import STATUS_APPROXIMATE, STATUS_DIAGRAM, STATUS_EXTRACTED, STATUS_FAILED, Issue, Paper
from eqsearch.ingest.sources import DocumentTask, load_paper

PAPERS_FILE = "papers.jsonl"
STATS_FILE = "stats.json"


def failed_paper(task: DocumentTask, reason: str, message: str) -> Paper:
    """The record of a document that could not be extracted at all."""
    return Paper(
        id=task.paper_id,
        source=task.source,
        kind="arxiv" if task.arxiv else "latex",
        version=task.version,
        status="failed",
        error=Issue(reason, message),
    )


def process_task(task: DocumentTask, config: ExtractConfig, converter: Any | None) -> Paper:
    """Extract (and convert, when a converter is given) one document; never raises for a bad document.

    Raises:
        ConverterUnavailableError: the converter cannot run at all (Node.js or KaTeX missing): no document could
            be converted, so the run stops instead of recording the same failure on each.
    """
    deadline = time.monotonic() + config.time_budget_s
    started = time.perf_counter()
    try:
        paper = load_paper(task, config, deadline)
    except IngestError as error:
        return failed_paper(task, error.reason, str(error))
    except RecursionError:
        return failed_paper(task, "too_deeply_nested", f"{task.source}: nesting too deep to parse")
    except MemoryError:
        return failed_paper(task, "out_of_memory", f"{task.source}: ran out of memory")
    except Exception as error:  # a bug must cost one document, not the run: recorded with its type
        return failed_paper(task, "internal_error", f"{task.source}: {type(error).__name__}: {error}")
    paper.timings["read_extract"] = time.perf_counter() - started
    if converter is not None:
        from eqsearch.ingest.convert import ConverterUnavailableError, convert_paper

        try:
            convert_paper(paper, converter, inline=config.inline)
        except ConverterUnavailableError:
            raise  # Node.js or KaTeX missing: no document can be converted, the run must stop
        except Exception as error:  # the converter's own failure: the equations stay extracted
            paper.warn("conversion_error", f"{type(error).__name__}: {error}")
    return paper


def _worker_main(conn: Connection, config: ExtractConfig) -> None:
    converter = None
    try:
        if config.convert:
            from eqsearch.ingest.convert import open_converter

            converter = open_converter(config.katex_dir)
        conn.send(_READY)  # the parent starts a document's clock only now: spawning and imports are not its time
        while True:
            task = conn.recv()
            if task is None:
                break
            conn.send(process_task(task, config, converter))
    except (EOFError, KeyboardInterrupt):
        pass
    finally:
        if converter is not None:
            with suppress(Exception):
                converter.__exit__(None, None, None)


_READY = "ready"
STARTUP_LIMIT_S = 300.0  # a worker that has not imported and opened its converter by then is stuck


class WorkerStartError(EqsearchError):
    """A worker process died or hung before it could take a document (no document's fault)."""


@dataclass
class _Worker:
    process: Any
    conn: Connection
    spawned: float
    ready: bool = False
    task: DocumentTask | None = None
    started: float = 0.0


class WorkerPool:
    """Processes that extract documents, each document under a hard time limit.

    Args:
        workers: number of processes (>= 1).
        config: passed to every worker.

    Raises:
        ConverterUnavailableError: ``config.convert`` is on and Node.js or KaTeX is missing.
    """

    def __init__(self, workers: int, config: ExtractConfig) -> None:
        if config.convert:  # the workers convert: a missing Node.js or KaTeX stops here, in the parent
            from eqsearch.ingest.convert import open_converter

            open_converter(config.katex_dir).__exit__(None, None, None)
        self.config = config
        self._context = multiprocessing.get_context("spawn")
        self._workers = [self._start() for _ in range(workers)]
        self.hard_limit = config.time_budget_s * 1.1 + 5.0

    def _start(self) -> _Worker:
        parent, child = self._context.Pipe()
        process = self._context.Process(target=_worker_main, args=(child, self.config), daemon=True)
        process.start()
        child.close()
        return _Worker(process, parent, spawned=time.monotonic())

    def _replace(self, worker: _Worker) -> None:
        with suppress(Exception):
            worker.process.kill()
        worker.process.join(5)
        worker.conn.close()
        self._workers[self._workers.index(worker)] = self._start()

    def map(self, tasks: Iterable[DocumentTask]) -> Iterator[Paper]:
        """Papers for ``tasks``, in completion order; a killed or crashed worker yields a failed paper.

        A document's time starts when a worker that has finished starting takes it, so a slow spawn (a loaded
        machine, a cold import) is never charged to the document.

        Raises:
            WorkerStartError: a worker died or hung while starting.
        """
        pending = iter(tasks)
        exhausted = False
        while True:
            for worker in self._workers:
                if worker.ready and worker.task is None and not exhausted:
                    task = next(pending, None)
                    if task is None:
                        exhausted = True
                        break
                    worker.task, worker.started = task, time.monotonic()
                    worker.conn.send(task)
            busy = [w for w in self._workers if w.task is not None]
            starting = [] if exhausted else [w for w in self._workers if not w.ready]
            if not busy and not starting:
                return
            deadlines = [w.started + self.hard_limit for w in busy] + [w.spawned + STARTUP_LIMIT_S for w in starting]
            ready = wait([w.conn for w in busy + starting], timeout=max(0.0, min(deadlines) - time.monotonic()))
            for worker in starting:
                if worker.conn in ready:
                    self._take_ready(worker)
                elif time.monotonic() - worker.spawned > STARTUP_LIMIT_S:
                    raise WorkerStartError(
                        f"an extraction worker did not start within {STARTUP_LIMIT_S:g} s",
                        hint="check that Node.js and KaTeX start here, or run with --workers 0 to see the error",
                    )
            for worker in busy:
                assert worker.task is not None
                if worker.conn in ready:
                    try:
                        paper = worker.conn.recv()
                    except (EOFError, OSError):
                        paper = failed_paper(
                            worker.task, "worker_crashed", f"{worker.task.source}: the worker process died"
                        )
                        self._replace(worker)
                    worker.task = None
                    yield paper
                elif time.monotonic() - worker.started > self.hard_limit:
                    task = worker.task
                    self._replace(worker)
                    yield failed_paper(
                        task, "timeout", f"{task.source}: over the time budget of {self.config.time_budget_s:g} s"
                    )

    @staticmethod
    def _take_ready(worker: _Worker) -> None:
        try:
            message = worker.conn.recv()
        except (EOFError, OSError):
            raise WorkerStartError(
                "an extraction worker died while starting",
                hint="run with --workers 0 to see its error in this process",
            ) from None
        worker.ready = message == _READY

    def close(self) -> None:
        for worker in self._workers:
            with suppress(Exception):
                worker.conn.send(None)
        for worker in self._workers:
            worker.process.join(10)
            if worker.process.is_alive():
                worker.process.kill()
            worker.conn.close()


@dataclass
class RunStats:
    """Figures of one run (written as stats.json and printed by the CLI)."""

    documents: int = 0
    documents_ok: int = 0
    documents_failed: Counter[str] = field(default_factory=Counter)
    warnings: Counter[str] = field(default_factory=Counter)
    equations_found: int = 0
    equations_status: Counter[str] = field(default_factory=Counter)
    equations_failed: Counter[str] = field(default_factory=Counter)
    equations_approximate: Counter[str] = field(default_factory=Counter)
    equations_converted: int = 0
    equations_diagrams: int = 0
    inline_formulas: int = 0
    inline_converted: int = 0
    citations: int = 0
    stage_seconds: Counter[str] = field(default_factory=Counter)
    wall_seconds: float = 0.0
    workers: int = 0
    # papers that came out with no display while their source holds some: each named, never only counted
    displays_missing: list[dict[str, Any]] = field(default_factory=list)

    def add(self, paper: Paper) -> None:
        self.documents += 1
        if paper.status == "failed" and paper.error is not None:
            self.documents_failed[paper.error.reason] += 1
        else:
            self.documents_ok += 1
        self.warnings.update(w.reason for w in paper.warnings)
        for warning in paper.warnings:
            if warning.reason == NO_DISPLAYS_FOUND:
                self.displays_missing.append(
                    {"paper": paper.id, "source": paper.source, "displays": warning.count, "message": warning.message}
                )
        self.citations += len(paper.citations)
        for formula in paper.inline_formulas():
            self.inline_formulas += 1
            self.inline_converted += formula.mathml is not None
        for equation in paper.equations():
            self.equations_found += 1
            self.equations_status[equation.status] += 1
            if equation.status != STATUS_EXTRACTED and equation.mathml is not None:
                self.equations_converted += 1
            if equation.status == STATUS_FAILED:
                self.equations_failed[equation.reason or "unknown"] += 1
            elif equation.status == STATUS_APPROXIMATE:
                self.equations_approximate[equation.reason or "unknown"] += 1
            elif equation.status == STATUS_DIAGRAM:
                self.equations_diagrams += 1
        for stage, seconds in paper.timings.items():
            self.stage_seconds[stage] += seconds

    def to_json(self) -> dict[str, Any]:
        def rate(count: int, seconds: float) -> float | None:
            return round(count / seconds, 2) if seconds > 0 else None

        extract_s = self.stage_seconds.get("read_extract", 0.0)
        convert_s = self.stage_seconds.get("convert", 0.0)
        converted_total = sum(
            v for k, v in self.equations_status.items() if k not in (STATUS_EXTRACTED, STATUS_DIAGRAM)
        )
        return {
            "documents": self.documents,
            "documents_ok": self.documents_ok,
            "documents_failed": dict(self.documents_failed.most_common()),
            "warnings": dict(self.warnings.most_common()),
            "displays_missing": {
                "papers": len(self.displays_missing),
                "displays": sum(item["displays"] or 0 for item in self.displays_missing),
                "by_paper": self.displays_missing,
            },
            "equations_found": self.equations_found,
            "equations_status": dict(self.equations_status.most_common()),
            "equations_failed": dict(self.equations_failed.most_common()),
            "equations_approximate": dict(self.equations_approximate.most_common()),
            "equations_converted": self.equations_converted,
            "equations_diagrams": self.equations_diagrams,
            "inline_formulas": self.inline_formulas,
            "inline_converted": self.inline_converted,
            "conversion_success_rate": None
            if converted_total == 0
            else round(
                (self.equations_status.get("ok", 0) + self.equations_status.get("approximate", 0)) / converted_total, 4
            ),
            "citations": self.citations,
            "workers": self.workers,
            "wall_seconds": round(self.wall_seconds, 3),
            "stages": {
                "read_extract": {
                    "seconds": round(extract_s, 3),
                    "documents_per_s": rate(self.documents, extract_s),
                    "equations_per_s": rate(self.equations_found, extract_s),
                },
                "convert": {
                    "seconds": round(convert_s, 3),
                    "equations_per_s": rate(converted_total, convert_s),
                },
                "overall_wall": {
                    "documents_per_s": rate(self.documents, self.wall_seconds),
                    "equations_per_s": rate(self.equations_found, self.wall_seconds),
                },
            },
        }


def completed_sources(out_dir: Path) -> set[str]:
    """The ``source`` of every paper already in ``out_dir``'s papers file (for resuming)."""
    path = out_dir / PAPERS_FILE
    done: set[str] = set()
    if not path.exists():
        return done
    with path.open("rb") as handle:
        for line in handle:
            try:
                done.add(json.loads(line)["source"])
            except (ValueError, KeyError, TypeError):
                continue  # a line cut by a crash: that document runs again
    return done


def run_extraction(
    tasks: Iterable[DocumentTask],
    out_dir: Path,
    config: ExtractConfig,
    *,
    workers: int = 1,
    metadata: dict[str, dict[str, Any]] | None = None,
    on_paper: Callable[[Paper], None] | None = None,
) -> RunStats:
    """Extract documents into ``out_dir/papers.jsonl`` (appending) and ``out_dir/stats.json``.

    Args:
        tasks: the documents (see `eqsearch.ingest.sources.discover`).
        out_dir: output folder (created).
        config: limits and whether to convert.
        workers: worker processes; 0 runs in this process (no hard kill, only the cooperative time checks).
        metadata: arXiv metadata by id, joined onto papers.
        on_paper: called after each paper is written (progress bars).

    Returns:
        The run's statistics (also written to stats.json, even when the run is interrupted).

    Raises:
        ConverterUnavailableError: conversion is on and Node.js or KaTeX is missing (before any document is read).
    """
    if config.convert:  # a missing Node.js or KaTeX stops the run here, not once per document
        from eqsearch.ingest.convert import open_converter

        open_converter(config.katex_dir).__exit__(None, None, None)
    out_dir.mkdir(parents=True, exist_ok=True)
    stats = RunStats(workers=workers)
    started = time.perf_counter()
    pool = WorkerPool(workers, config) if workers > 0 else None
    converter = None
    try:
        if pool is None and config.convert:
            from eqsearch.ingest.convert import open_converter

            converter = open_converter(config.katex_dir)
        papers = pool.map(tasks) if pool is not None else (process_task(t, config, converter) for t in tasks)
        with (out_dir / PAPERS_FILE).open("a", encoding="utf-8") as out:
            for paper in papers:
                if metadata and paper.id in metadata:
                    apply_metadata(paper, metadata[paper.id])
                out.write(json.dumps(paper.to_json(), ensure_ascii=False) + "\n")
                out.flush()
                stats.add(paper)
                if on_paper is not None:
                    on_paper(paper)
    finally:
        if pool is not None:
            pool.close()
        if converter is not None:
            with suppress(Exception):
                converter.__exit__(None, None, None)
        stats.wall_seconds = time.perf_counter() - started
        (out_dir / STATS_FILE).write_text(json.dumps(stats.to_json(), indent=2) + "\n", encoding="utf-8")
    return stats
