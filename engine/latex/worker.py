"""One KaTeX worker: a Node process running ``katex/worker.js``, spoken to in JSON lines over its pipes.

The wire protocol lives here: a document's KaTeX macros are sent once per worker under their key, then each
equation as a request naming that key; answers come back one line each, in request order. Requests are pipelined
(several in flight) but bounded so that no pipe can fill up: Python never blocks writing to a worker that is itself
blocked writing answers Python has not read yet. Which worker gets what, time limits and restarts are
`engine.latex.converter`'s.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import selectors
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.latex.install import INSTALL_COMMAND
from eqsearch.engine.latex.macros import KatexMacros
from eqsearch.engine.latex.symbols import symbol_table

__all__ = ["ConversionJob", "KatexWorker", "KatexWorkerError"]

# A worker never has more unread request bytes than this in its stdin pipe (Linux pipes hold 64 KiB), so a
# write from Python never blocks while the worker is blocked writing answers Python has not read yet.
_PIPE_BUDGET = 48 * 1024
#: Documents' macros a worker keeps (worker.js evicts the oldest, as `KatexWorker` assumes).
_MACRO_SETS = 32


class KatexWorkerError(EqsearchError):
    """A KaTeX worker could not be started."""


@dataclass
class ConversionJob:
    """One equation for a worker: its position in the caller's batch, the text KaTeX gets, the document's macros."""

    index: int
    latex: str
    macros: KatexMacros | None


class KatexWorker:
    """One Node process and the requests it has been sent (answered in order).

    Args:
        node: the Node.js executable.
        katex_dir: the folder holding ``worker.js`` and ``node_modules``.
        max_expand: KaTeX's ``maxExpand``.
        unknown_macro_retries: unknown control sequences rendered as text before an equation fails.
        start_timeout_s: how long the process may take to say it is ready.

    Raises:
        KatexWorkerError: the process did not start or did not say it is ready in time.
    """

    def __init__(
        self, node: str, katex_dir: Path, *, max_expand: int, unknown_macro_retries: int, start_timeout_s: float
    ) -> None:
        options = {"maxExpand": max_expand, "unknownMacroRetries": unknown_macro_retries, "macroTables": _MACRO_SETS}
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 -- lives as long as the worker; closed in kill/close
        self.process = subprocess.Popen(
            [node, str(katex_dir / "worker.js"), json.dumps(options)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            cwd=katex_dir,
            bufsize=0,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin_fd = self.process.stdin.fileno()
        self.stdout_fd = self.process.stdout.fileno()
        self.buffer = b""
        #: Requests sent and not answered yet, oldest first: (request id, job, bytes sent).
        self.in_flight: collections.deque[tuple[int, ConversionJob, int]] = collections.deque()
        self.in_flight_bytes = 0
        #: When the oldest request in flight started to be the one the worker is on (``time.monotonic()``).
        self.head_started = 0.0
        self.defined_macros: collections.OrderedDict[str, None] = collections.OrderedDict()  # keys, oldest first
        self.version = ""
        self._last_id = 0
        self._wait_ready(start_timeout_s)
        try:  # the symbol fallback table, once (the worker reads it before any request; nothing comes back)
            self._write(_json_line({"symbols": symbol_table()}))
        except OSError as error:
            message = self.stderr_text()
            self.kill()
            raise KatexWorkerError(f"the KaTeX worker did not take the symbol table: {message or error}") from error

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
        """The end of what the process wrote to stderr (why it died), or ``""``."""
        with contextlib.suppress(OSError, ValueError):
            self.stderr.seek(0)
            return self.stderr.read()[-1500:].decode("utf-8", "replace").strip()
        return ""

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, jobs: collections.deque[ConversionJob], max_in_flight: int) -> None:
        """Send queued equations, taken from the front of ``jobs``, while the pipelining bounds allow, in one write.

        A document's macros go first when this worker does not hold them yet. When the worker is gone the
        equations go back to the front of ``jobs`` (the caller sees the dead worker and restarts it).
        """
        batch: list[bytes] = []
        while jobs:
            job = jobs[0]
            macros = job.macros
            define = macros is not None and macros.key not in self.defined_macros
            payload = (
                _json_line({"define": macros.key, "macros": macros.katex, "withheld": list(macros.withheld)})  # type: ignore[union-attr]
                if define
                else b""
            )
            request_id = self._last_id + 1
            payload += _json_line({"id": request_id, "latex": job.latex, "macros": macros.key if macros else None})
            if self.in_flight and (
                len(self.in_flight) >= max_in_flight or self.in_flight_bytes + len(payload) > _PIPE_BUDGET
            ):
                break
            self._last_id = request_id
            jobs.popleft()
            if define:
                self.defined_macros[macros.key] = None  # type: ignore[union-attr]
                while len(self.defined_macros) > _MACRO_SETS:
                    self.defined_macros.popitem(last=False)
            if not self.in_flight:
                self.head_started = time.monotonic()
            self.in_flight.append((request_id, job, len(payload)))
            self.in_flight_bytes += len(payload)
            batch.append(payload)
        if batch:
            try:
                self._write(b"".join(batch))
            except OSError:  # the worker is gone: take this batch back
                for _ in batch:
                    _, job, size = self.in_flight.pop()
                    self.in_flight_bytes -= size
                    jobs.appendleft(job)

    def _write(self, payload: bytes) -> None:
        view = memoryview(payload)
        while view:
            written = os.write(self.stdin_fd, view)
            view = view[written:]

    def read_available(self) -> bool:
        """Append what the worker has written to the buffer; False at end of file (the worker died)."""
        try:
            chunk = os.read(self.stdout_fd, 1 << 20)
        except OSError:
            return False
        self.buffer += chunk
        return bool(chunk)

    def answers(self) -> Iterator[tuple[ConversionJob, dict[str, Any]]]:
        """The complete answers read so far, each with its job, in order.

        Raises:
            KatexWorkerError: an answer is not for the oldest request in flight (the protocol was broken).
        """
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            answer = json.loads(line)
            request_id, job, size = self.in_flight.popleft()
            self.in_flight_bytes -= size
            self.head_started = time.monotonic()
            if answer.get("id") != request_id:  # cannot happen: answers come in order
                raise KatexWorkerError(f"KaTeX worker answered request {answer.get('id')} instead of {request_id}")
            yield job, answer

    def take_head(self) -> ConversionJob:
        """Remove and return the request the worker is on (it timed out, or the worker died on it)."""
        return self.in_flight.popleft()[1]

    def unanswered(self) -> list[ConversionJob]:
        """The jobs sent and not answered, oldest first."""
        return [job for _, job, _ in self.in_flight]

    def drain(self) -> None:
        """Read everything a dead worker left in its pipe."""
        while self.read_available():
            pass

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        self._close_files()

    def close(self, timeout: float = 2.0) -> None:
        """Let the worker finish (it exits at the end of its input); kill it after ``timeout`` seconds."""
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()
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


def _json_line(obj: object) -> bytes:
    # ASCII escapes keep lone surrogates (text decoded with surrogateescape) from breaking the UTF-8 encoding
    return json.dumps(obj, ensure_ascii=True).encode("ascii") + b"\n"
