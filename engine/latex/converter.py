"""LaTeX -> Presentation MathML with KaTeX in long-lived Node worker processes.

::

    with KatexConverter(KatexConfig(workers=2)) as converter:
        results = converter.convert_many([(body, "align*"), (body2, "equation")], macros=document_macros)

Each equation goes through: the length limit -> `engine.latex.preprocess` (comments, labels, references,
environment bodies -> ``aligned``/``gathered``/``array``) -> expansion of the macros KaTeX cannot take
(`engine.latex.macros`) -> a KaTeX worker, with the document's other macros as KaTeX's ``macros`` option,
``output: 'mathml'``, ``displayMode: true``, ``throwOnError: true``, ``strict: 'ignore'``. An undefined control
sequence is retried with that name defined as ``\\text{name}`` and the result marked ``approximate``.

Workers are Node processes (``engine/latex/katex/worker.js``) speaking JSON lines over pipes, started on first use and
pipelined (several requests in flight per worker, bounded so that no pipe can fill up). Python enforces the
per-equation time limit: a worker that takes too long is killed and restarted, the equation it was on is recorded
as failed with reason ``timeout`` (``worker-crash`` if the worker died), and the others are sent again.

A converter is not meant to be shared by threads: calls are serialised by a lock.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import selectors
import shutil
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.latex.macros import MacroDef, MacroExpansionError, MacroTable, build_macro_table, expand_macros
from eqsearch.engine.latex.preprocess import preprocess_latex

__all__ = [
    "DEFAULT_KATEX_DIR",
    "REASONS",
    "ConversionResult",
    "KatexConfig",
    "KatexConverter",
    "KatexNotInstalledError",
    "KatexWorkerError",
    "ensure_katex_installed",
    "installed_katex_version",
]

DEFAULT_KATEX_DIR = Path(__file__).resolve().parent / "katex"
INSTALL_COMMAND = "eqsearch setup katex"

Status = Literal["ok", "approximate", "failed"]

#: Reasons a `ConversionResult` can carry (stable codes for statistics and the output format).
REASONS = (
    "empty",  # nothing left to convert after pre-processing
    "too-long",  # longer than KatexConfig.max_length
    "parse-error",  # KaTeX could not parse it
    "undefined-macro",  # unknown control sequences (approximate: rendered as text; failed: too many)
    "undefined-environment",  # \begin{name} that KaTeX does not know
    "too-many-expansions",  # a macro that expands forever (KaTeX's maxExpand or ours)
    "too-deep",  # nesting deeper than KaTeX's recursion allows (Node's call stack)
    "timeout",  # the worker took longer than KatexConfig.timeout_s and was restarted
    "worker-crash",  # the worker died while converting it
    "internal-error",  # KaTeX raised something other than a parse error
)


@dataclass(frozen=True)
class ConversionResult:
    """The outcome of converting one equation.

    Attributes:
        mathml: the ``<math>`` element (no ``<semantics>``/``<annotation>``), or None when failed.
        status: ``ok``; ``approximate`` (converted, but unknown macros were rendered as their names); ``failed``.
        reason: a short stable code from `REASONS` when not ``ok``, else None.
        message: a human sentence with offset and snippet when not ``ok``, else None.
    """

    mathml: str | None
    status: Status
    reason: str | None = None
    message: str | None = None

    @property
    def converted(self) -> bool:
        return self.mathml is not None


@dataclass(frozen=True)
class KatexConfig:
    """How the KaTeX workers run.

    Args:
        workers: Node processes converting in parallel (default 1).
        timeout_s: time limit per equation, in seconds (default 5).
        max_length: longest equation accepted, in characters, after pre-processing (default 20,000).
        node: the Node.js executable, a name looked up on PATH or a path (default ``node``).
        katex_dir: the folder holding ``worker.js``, ``package.json`` and ``node_modules`` (default: the one
            shipped in ``eqsearch/engine/katex``).
        max_expand: KaTeX's ``maxExpand``, also the limit of the expansion done in Python (default 1000).
        unknown_macro_retries: how many unknown control sequences per equation are rendered as text before the
            equation fails (default 8; 0 turns the fallback off).
        start_timeout_s: how long a worker may take to start (default 30).
        max_in_flight: requests pipelined per worker (default 64).
    """

    workers: int = 1
    timeout_s: float = 5.0
    max_length: int = 20_000
    node: str = "node"
    katex_dir: Path = DEFAULT_KATEX_DIR
    max_expand: int = 1000
    unknown_macro_retries: int = 8
    start_timeout_s: float = 30.0
    max_in_flight: int = 64

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"KatexConfig.workers must be at least 1, got {self.workers}")
        if self.timeout_s <= 0 or self.start_timeout_s <= 0:
            raise ValueError("KatexConfig timeouts must be positive")
        if self.max_length < 1 or self.max_expand < 1 or self.max_in_flight < 1:
            raise ValueError("KatexConfig.max_length, max_expand and max_in_flight must be positive")
        object.__setattr__(self, "katex_dir", Path(self.katex_dir))


class KatexNotInstalledError(EqsearchError):
    """Node.js or the KaTeX npm package is missing."""


class KatexWorkerError(EqsearchError):
    """A KaTeX worker could not be started."""


# --------------------------------------------------------------------------------------------------------------
# Installation


def _pinned_katex_version(katex_dir: Path) -> str:
    package = json.loads((katex_dir / "package.json").read_text(encoding="utf-8"))
    return str(package["dependencies"]["katex"])


def installed_katex_version(katex_dir: Path = DEFAULT_KATEX_DIR) -> str | None:
    """The version of KaTeX in ``katex_dir/node_modules``, or None when it is not installed."""
    try:
        package = json.loads((katex_dir / "node_modules" / "katex" / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return str(package.get("version"))


def _resolve_node(node: str) -> str:
    path = shutil.which(node)
    if path is None:
        raise KatexNotInstalledError(
            f"Node.js was not found (looked for {node!r}); LaTeX conversion runs KaTeX in Node",
            hint="install Node.js 18 or newer (e.g. 'apt-get install nodejs npm'), then run 'eqsearch setup katex'",
        )
    return path


def _check_installed(config: KatexConfig) -> str:
    node = _resolve_node(config.node)
    installed = installed_katex_version(config.katex_dir)
    pinned = _pinned_katex_version(config.katex_dir)
    if installed is None:
        raise KatexNotInstalledError(
            f"KaTeX is not installed in {config.katex_dir}",
            hint=f"run '{INSTALL_COMMAND}' (or 'npm ci' in {config.katex_dir})",
        )
    if installed != pinned:
        raise KatexNotInstalledError(
            f"KaTeX {installed} is installed in {config.katex_dir} but eqsearch pins {pinned}",
            hint=f"run '{INSTALL_COMMAND} --force'",
        )
    return node


def ensure_katex_installed(
    katex_dir: Path = DEFAULT_KATEX_DIR, *, npm: str = "npm", force: bool = False, quiet: bool = True
) -> str:
    """Install the pinned KaTeX with ``npm ci`` (reproducible from the committed lockfile) unless it is there.

    Args:
        katex_dir: the folder with ``package.json`` and ``package-lock.json``.
        npm: the npm executable.
        force: reinstall even when the pinned version is present.
        quiet: hide npm's output unless it fails.

    Returns:
        The installed KaTeX version.

    Raises:
        KatexNotInstalledError: npm is missing or ``npm ci`` failed.
    """
    katex_dir = Path(katex_dir)
    pinned = _pinned_katex_version(katex_dir)
    if not force and installed_katex_version(katex_dir) == pinned:
        return pinned
    npm_path = shutil.which(npm)
    if npm_path is None:
        raise KatexNotInstalledError(
            f"npm was not found (looked for {npm!r}); it installs KaTeX",
            hint="install Node.js 18 or newer with npm (e.g. 'apt-get install nodejs npm')",
        )
    command = [npm_path, "ci", "--omit=dev", "--no-audit", "--no-fund", "--ignore-scripts"]
    completed = subprocess.run(
        command, cwd=katex_dir, capture_output=quiet, text=True, check=False, stdin=subprocess.DEVNULL
    )
    if completed.returncode != 0:
        output = ((completed.stderr or "") + (completed.stdout or "")).strip()[-2000:] if quiet else ""
        raise KatexNotInstalledError(
            f"'npm ci' failed in {katex_dir} (exit code {completed.returncode})" + (f":\n{output}" if output else ""),
            hint="check the network access to the npm registry, then run 'eqsearch setup katex' again",
        )
    installed = installed_katex_version(katex_dir)
    if installed != pinned:
        raise KatexNotInstalledError(f"'npm ci' finished but KaTeX {pinned} is not in {katex_dir / 'node_modules'}")
    return installed


# --------------------------------------------------------------------------------------------------------------
# Workers


@dataclass
class _Job:
    index: int
    latex: str
    table: MacroTable | None


class _Worker:
    """One Node process and the requests it has been sent (answered in order)."""

    def __init__(self, node: str, config: KatexConfig) -> None:
        options = {
            "maxExpand": config.max_expand,
            "unknownMacroRetries": config.unknown_macro_retries,
            "macroTables": _MACRO_TABLES,
        }
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 -- lives as long as the worker; closed in kill/close
        self.process = subprocess.Popen(
            [node, str(config.katex_dir / "worker.js"), json.dumps(options)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            cwd=config.katex_dir,
            bufsize=0,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin_fd = self.process.stdin.fileno()
        self.stdout_fd = self.process.stdout.fileno()
        self.buffer = b""
        self.in_flight: collections.deque[tuple[int, _Job, int]] = collections.deque()  # (id, job, bytes)
        self.in_flight_bytes = 0
        self.head_started = 0.0
        self.tables: collections.OrderedDict[str, None] = collections.OrderedDict()
        self.version = ""
        self._wait_ready(config.start_timeout_s)

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._read(remaining):
                message = self.stderr_text()
                self.kill()
                raise KatexWorkerError(
                    "the KaTeX worker did not start" + (f": {message}" if message else f" within {timeout:.0f} s"),
                    hint=f"run '{INSTALL_COMMAND} --force' to reinstall KaTeX",
                )
        line, self.buffer = self.buffer.split(b"\n", 1)
        self.version = str(json.loads(line).get("katex", ""))

    def _read(self, timeout: float) -> bool:
        """Read what is available within timeout; False on EOF or nothing."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.stdout_fd, selectors.EVENT_READ)
            if not selector.select(timeout):
                return False
        chunk = os.read(self.stdout_fd, 1 << 16)
        self.buffer += chunk
        return bool(chunk)

    def stderr_text(self) -> str:
        with contextlib.suppress(OSError, ValueError):
            self.stderr.seek(0)
            return self.stderr.read()[-1500:].decode("utf-8", "replace").strip()
        return ""

    def alive(self) -> bool:
        return self.process.poll() is None

    def can_take(self, size: int, limit: int) -> bool:
        if not self.in_flight:
            return True
        return len(self.in_flight) < limit and self.in_flight_bytes + size <= _PIPE_BUDGET

    def send(self, payload: bytes) -> None:
        view = memoryview(payload)
        while view:
            written = os.write(self.stdin_fd, view)
            view = view[written:]

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        self._close_files()

    def read_available(self) -> bool:
        """Append what the worker has written to the buffer; False at end of file (the worker died)."""
        try:
            chunk = os.read(self.stdout_fd, 1 << 20)
        except OSError:
            return False
        self.buffer += chunk
        return bool(chunk)

    def drain(self) -> None:
        """Read everything a dead worker left in its pipe."""
        while self.read_available():
            pass

    def close(self, timeout: float = 2.0) -> None:
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()  # the worker exits at the end of its input
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        self._close_files()

    def _close_files(self) -> None:
        for stream in (self.process.stdin, self.process.stdout, self.stderr):
            with contextlib.suppress(OSError, ValueError):
                if stream is not None:
                    stream.close()


# A worker never has more unread request bytes than this in its stdin pipe (Linux pipes hold 64 KiB), so a
# write from Python never blocks while the worker is blocked writing answers Python has not read yet.
_PIPE_BUDGET = 48 * 1024
_MACRO_TABLES = 32


def _kill_all(workers: list[_Worker | None]) -> None:  # at garbage collection or exit, if close() was not called
    for worker in workers:
        if worker is not None:
            worker.kill()


class KatexConverter:
    """Converts LaTeX display math to MathML with a pool of KaTeX workers (see module docstring).

    Args:
        config: worker count, limits and paths (`KatexConfig`); defaults when None.

    Use as a context manager, or call `close` when done. Workers start on the first conversion.
    """

    def __init__(self, config: KatexConfig | None = None) -> None:
        self.config = config or KatexConfig()
        self._workers: list[_Worker | None] = [None] * self.config.workers
        self._node: str | None = None
        self._lock = threading.Lock()
        self._next_id = 0
        self._tables: collections.OrderedDict[tuple[MacroDef, ...], MacroTable] = collections.OrderedDict()
        self._finalizer = weakref.finalize(self, _kill_all, self._workers)
        self.restarts = 0

    def __enter__(self) -> KatexConverter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def katex_version(self) -> str | None:
        """The KaTeX version the running workers report (None before the first conversion)."""
        return next((w.version for w in self._workers if w is not None), None)

    def worker_pids(self) -> list[int]:
        """Process ids of the running workers (for monitoring)."""
        return [w.process.pid for w in self._workers if w is not None and w.alive()]

    def close(self) -> None:
        """Stop the workers; the converter can be used again afterwards (workers restart on demand)."""
        with self._lock:
            for i, worker in enumerate(self._workers):
                if worker is not None:
                    worker.close()
                    self._workers[i] = None

    def convert(
        self, latex: str, environment: str = "equation", macros: Sequence[MacroDef] | None = None
    ) -> ConversionResult:
        """Convert one equation; see `convert_many`."""
        return self.convert_many([(latex, environment)], macros=macros)[0]

    def convert_many(
        self, equations: Iterable[tuple[str, str]], macros: Sequence[MacroDef] | None = None
    ) -> list[ConversionResult]:
        """Convert the display equations of one document.

        Args:
            equations: ``(latex_body, environment_name)`` pairs: the text between the delimiters and the
                environment (``equation``, ``align*``, ``eqnarray``, ``$$``, ``\\[``, ...).
            macros: the document's user macros (`engine.latex.macros.MacroDef`), in definition order.

        Returns:
            One `ConversionResult` per equation, in order. Failures are results, never exceptions.

        Raises:
            KatexNotInstalledError: Node.js or KaTeX is missing (says which command installs it).
            KatexWorkerError: a worker cannot start at all.
        """
        items = list(equations)
        results: list[ConversionResult | None] = [None] * len(items)
        table = self._macro_table(tuple(macros or ()))
        jobs: collections.deque[_Job] = collections.deque()
        max_length = self.config.max_length
        for index, (latex, environment) in enumerate(items):
            if len(latex) > max_length:
                results[index] = _failed(
                    "too-long",
                    f"the equation has {len(latex):,} characters; the limit is {max_length:,}: {_snippet(latex, 0)}",
                )
                continue
            try:
                text = preprocess_latex(latex, environment or "equation")
                text = expand_macros(text, table, max_expansions=self.config.max_expand, max_length=max_length)
            except MacroExpansionError as error:
                results[index] = _failed("too-many-expansions", error.message)
                continue
            if not text.strip():
                results[index] = _failed("empty", f"nothing to convert in {environment or 'equation'}: {latex[:60]!r}")
            elif len(text) > max_length:
                results[index] = _failed(
                    "too-long",
                    f"the equation has {len(text):,} characters after macro "
                    f"expansion; the limit is {max_length:,}: {_snippet(text, 0)}",
                )
            else:
                jobs.append(_Job(index, text, table if table.katex else None))
        if jobs:
            with self._lock:
                self._run(jobs, results)
        return [r if r is not None else _failed("internal-error", "no answer from the worker") for r in results]

    def _macro_table(self, macros: tuple[MacroDef, ...]) -> MacroTable:
        table = self._tables.get(macros)
        if table is None:
            table = build_macro_table(macros)
            self._tables[macros] = table
            while len(self._tables) > 16:
                self._tables.popitem(last=False)
        return table

    # The scheduler: one thread, all workers' stdout in one selector, requests pipelined per worker.
    def _run(self, jobs: collections.deque[_Job], results: list[ConversionResult | None]) -> None:
        if self._node is None:
            self._node = _check_installed(self.config)
        timeout = self.config.timeout_s
        selector = selectors.DefaultSelector()
        for slot, worker in enumerate(self._workers):
            if worker is not None:
                selector.register(worker.stdout_fd, selectors.EVENT_READ, slot)
        try:
            while jobs or any(w is not None and w.in_flight for w in self._workers):
                for slot in range(len(self._workers)):
                    worker = self._workers[slot]
                    if worker is not None and not worker.alive():
                        self._crashed(slot, results, jobs, selector)
                        worker = None
                    if worker is None:
                        if not jobs:
                            continue
                        worker = self._start(slot)
                        selector.register(worker.stdout_fd, selectors.EVENT_READ, slot)
                    self._feed(worker, jobs)
                deadlines = [w.head_started + timeout for w in self._workers if w is not None and w.in_flight]
                if not deadlines:
                    continue
                for key, _ in selector.select(max(0.0, min(deadlines) - time.monotonic())):
                    worker = self._workers[key.data]
                    if worker is None:
                        continue
                    if worker.read_available():
                        self._collect(worker, results)
                    else:
                        self._crashed(key.data, results, jobs, selector)
                now = time.monotonic()
                for slot, worker in enumerate(self._workers):
                    if worker is not None and worker.in_flight and now - worker.head_started > timeout:
                        head = worker.in_flight.popleft()[1]
                        results[head.index] = _failed(
                            "timeout",
                            f"KaTeX took longer than {timeout:g} s; the worker was restarted: "
                            + _snippet(head.latex, 0),
                        )
                        self._retire(slot, jobs, selector)
        finally:
            selector.close()

    def _crashed(
        self,
        slot: int,
        results: list[ConversionResult | None],
        jobs: collections.deque[_Job],
        selector: selectors.BaseSelector,
    ) -> None:
        """A worker died: keep the answers it sent, blame the equation it was on, send the rest again."""
        worker = self._workers[slot]
        assert worker is not None
        worker.drain()
        self._collect(worker, results)
        if worker.in_flight:
            head = worker.in_flight.popleft()[1]
            detail = [line for line in worker.stderr_text().splitlines() if line.strip() and "Node.js v" not in line]
            results[head.index] = _failed(
                "worker-crash",
                "the KaTeX worker died while converting this equation"
                + (f" ({detail[-1].strip()[:200]})" if detail else "")
                + f": {_snippet(head.latex, 0)}",
            )
        self._retire(slot, jobs, selector)

    def _retire(self, slot: int, jobs: collections.deque[_Job], selector: selectors.BaseSelector) -> None:
        """Kill a worker and put its unanswered requests back at the front of the queue, in order."""
        worker = self._workers[slot]
        assert worker is not None
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(worker.stdout_fd)
        for _, job, _ in reversed(worker.in_flight):
            jobs.appendleft(job)
        worker.kill()
        self._workers[slot] = None
        self.restarts += 1

    def _start(self, slot: int) -> _Worker:
        assert self._node is not None
        worker = _Worker(self._node, self.config)
        self._workers[slot] = worker
        return worker

    def _feed(self, worker: _Worker, jobs: collections.deque[_Job]) -> None:
        """Send queued equations while the worker's window allows, in one write."""
        limit = self.config.max_in_flight
        batch: list[bytes] = []
        while jobs:
            job = jobs[0]
            table = job.table
            define = table is not None and table.key not in worker.tables
            payload = _json_line({"define": table.key, "macros": table.katex}) if define else b""  # type: ignore[union-attr]
            request_id = self._next_id + 1
            payload += _json_line({"id": request_id, "latex": job.latex, "macros": table.key if table else None})
            if not worker.can_take(len(payload), limit):
                break
            self._next_id = request_id
            jobs.popleft()
            if define:
                worker.tables[table.key] = None  # type: ignore[union-attr]
                while len(worker.tables) > _MACRO_TABLES:
                    worker.tables.popitem(last=False)
            if not worker.in_flight:
                worker.head_started = time.monotonic()
            worker.in_flight.append((request_id, job, len(payload)))
            worker.in_flight_bytes += len(payload)
            batch.append(payload)
        if batch:
            try:
                worker.send(b"".join(batch))
            except OSError:  # the worker is gone: take this batch back; the main loop restarts the worker
                for _ in batch:
                    _, job, size = worker.in_flight.pop()
                    worker.in_flight_bytes -= size
                    jobs.appendleft(job)

    @staticmethod
    def _collect(worker: _Worker, results: list[ConversionResult | None]) -> None:
        while b"\n" in worker.buffer:
            line, worker.buffer = worker.buffer.split(b"\n", 1)
            answer = json.loads(line)
            request_id, job, size = worker.in_flight.popleft()
            worker.in_flight_bytes -= size
            worker.head_started = time.monotonic()
            if answer.get("id") != request_id:  # cannot happen: answers come in order
                raise KatexWorkerError(f"KaTeX worker answered request {answer.get('id')} instead of {request_id}")
            results[job.index] = _result(answer, job.latex)


def _json_line(obj: object) -> bytes:
    # ASCII escapes keep lone surrogates (text decoded with surrogateescape) from breaking the UTF-8 encoding
    return json.dumps(obj, ensure_ascii=True).encode("ascii") + b"\n"


def _snippet(latex: str, position: int | None, width: int = 30) -> str:
    if position is None:
        position = 0
    start = max(0, position - width)
    text = " ".join(latex[start : position + width].split())
    return "'" + ("..." if start else "") + text + ("..." if position + width < len(latex) else "") + "'"


def _failed(reason: str, message: str) -> ConversionResult:
    return ConversionResult(mathml=None, status="failed", reason=reason, message=message)


def _result(answer: dict, latex: str) -> ConversionResult:
    unknown = answer.get("unknown") or []
    if "mathml" in answer:
        if unknown:
            names = ", ".join(unknown)
            return ConversionResult(
                answer["mathml"], "approximate", "undefined-macro", f"unknown macros rendered as text: {names}"
            )
        return ConversionResult(answer["mathml"], "ok")
    error = answer.get("error") or {}
    kind = str(error.get("kind") or "internal-error")
    position = error.get("position")
    where = f" at offset {position} of the text given to KaTeX" if isinstance(position, int) else ""
    message = f"{error.get('message', 'KaTeX error')}{where}: {_snippet(latex, position)}"
    if unknown:
        message += f" (also rendered as text: {', '.join(unknown)})"
    return _failed(kind, message)
