"""LaTeX -> Presentation MathML with KaTeX in long-lived Node worker processes.

::

    with KatexConverter(KatexConfig(workers=2)) as converter:
        results = converter.convert_many([(body, "align*"), (body2, "equation")], macros=document_macros)

Each equation goes through: the length limit -> `engine.latex.preprocess` (comments, labels, references,
environment bodies -> ``aligned``/``gathered``/``array``) -> expansion of the macros KaTeX cannot take
(`engine.latex.macros`) -> a KaTeX worker (`engine.latex.worker`), with the document's other macros as KaTeX's
``macros`` option, ``output: 'mathml'``, ``displayMode: true``, ``throwOnError: true``, ``strict: 'ignore'``. An
undefined control sequence is retried with that name defined as ``\\text{name}`` and the result marked
``approximate``. A diagram (tikz-cd, TikZ, xymatrix) is not sent: it comes back with status ``diagram``.

Workers start on first use and take several requests at a time. Python enforces the per-equation time limit: a
worker that takes too long is killed and restarted, the equation it was on is recorded as failed with reason
``timeout`` (``worker-crash`` if the worker died), and the others are sent again.

A converter is not meant to be shared by threads: calls are serialised by a lock.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import selectors
import threading
import time
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from eqsearch.engine.latex.diagrams import REPLACED_KINDS, diagram_kind, replace_diagrams
from eqsearch.engine.latex.install import DEFAULT_KATEX_DIR, check_installed
from eqsearch.engine.latex.katexnames import katex_commands, katex_macro_uses
from eqsearch.engine.latex.lengths import katex_lengths
from eqsearch.engine.latex.macros import (
    KatexMacros,
    MacroDef,
    MacroExpansionError,
    brace_scripted_macros,
    build_katex_macros,
    expand_macros,
)
from eqsearch.engine.latex.outcome import survival
from eqsearch.engine.latex.packagenv import chemistry_in_text, inline_code
from eqsearch.engine.latex.plaintex import change_case, tex_switches
from eqsearch.engine.latex.preprocess import preprocess_latex
from eqsearch.engine.latex.textmode import (
    displays_in_text_boxes,
    dollars_in_math,
    resolve_ensuremath,
    sized_delimiters_in_text,
    units_in_text,
)
from eqsearch.engine.latex.worker import ConversionJob, KatexWorker

__all__ = ["REASONS", "ConversionResult", "KatexConfig", "KatexConverter"]

Status = Literal["ok", "approximate", "failed", "diagram"]

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
    "diagram",  # a commutative diagram or picture (tikz-cd, TikZ, xymatrix): status "diagram", not a failure
    "diagram-placeholder",  # approximate: a diagram a macro draws inside the formula is shown as "[diagram]"
)


@dataclass(frozen=True)
class ConversionResult:
    """The outcome of converting one equation.

    Attributes:
        mathml: the ``<math>`` element (no ``<semantics>``/``<annotation>``), or None when failed.
        status: ``ok``; ``approximate`` (converted, but unknown macros were rendered as their names); ``failed``;
            ``diagram`` (a commutative diagram or picture KaTeX cannot draw: kept as LaTeX, no MathML).
        reason: a short stable code from `REASONS` when not ``ok``, else None.
        message: a human sentence with offset and snippet when not ``ok``, else None.
    """

    mathml: str | None
    status: Status
    reason: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class KatexConfig:
    """How the KaTeX workers run.

    Args:
        workers: Node processes converting in parallel (default 1).
        timeout_s: time limit per equation, in seconds (default 5).
        max_length: longest equation accepted, in characters, after pre-processing (default 20,000).
        node: the Node.js executable, a name looked up on PATH or a path (default ``node``).
        katex_dir: the folder holding ``worker.js``, ``package.json`` and ``node_modules`` (default: the one
            shipped in ``eqsearch/engine/latex/katex``).
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


def _kill_all(workers: list[KatexWorker | None]) -> None:  # at garbage collection or exit, if close() was not called
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
        self._workers: list[KatexWorker | None] = [None] * self.config.workers
        self._node: str | None = None
        self._lock = threading.Lock()
        self._macros: collections.OrderedDict[tuple[MacroDef, ...], KatexMacros] = collections.OrderedDict()
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
        katex_macros = self._katex_macros(tuple(macros or ()))
        jobs: collections.deque[ConversionJob] = collections.deque()
        placeholders: dict[int, list[str]] = {}
        max_length = self.config.max_length
        for index, (latex, environment) in enumerate(items):
            diagram = diagram_kind(latex)  # before the length: a long TikZ drawing is a diagram, not too long
            if diagram is not None:
                results[index] = ConversionResult(
                    None, "diagram", "diagram", f"a {diagram} diagram: kept as LaTeX, KaTeX does not draw diagrams"
                )
                continue
            if len(latex) > max_length:
                drawn = [p.kind for p in replace_diagrams(latex)[1] if not p.symbol]
                results[index] = (
                    _picture(drawn, len(drawn))  # TikZ drawings with math around them, together over the limit
                    if drawn
                    else _failed(
                        "too-long",
                        f"the equation has {len(latex):,} characters; the limit is {max_length:,}: "
                        f"{_snippet(latex, 0)}",
                    )
                )
                continue
            try:
                # units before \qty's expansion; the document's own names keep their definitions
                text = units_in_text(preprocess_latex(latex, environment or "equation", katex_macros.own))
                text = brace_scripted_macros(text, katex_macros)
                text = expand_macros(text, katex_macros, max_expansions=self.config.max_expand, max_length=max_length)
                text = inline_code(resolve_ensuremath(chemistry_in_text(change_case(text))))
                text = displays_in_text_boxes(units_in_text(sized_delimiters_in_text(katex_lengths(text))))
                if "$" in text:  # a $..$ written in math mode: text, as TeX leaves math for it
                    text = dollars_in_math(text)
                if "\\iftrue" in text or "\\iffalse" in text:  # a document's \newif switches, once expanded
                    text = tex_switches(text)
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
            elif (drawn := diagram_kind(text)) is not None and drawn not in REPLACED_KINDS:
                results[index] = _picture([drawn], 1)  # a macro that draws a whole diagram (dynkin, feynmf)
            else:
                text, pictures = replace_diagrams(text)
                drawn = [p.kind for p in pictures if not p.symbol]
                if drawn:  # a picture of its own, math around it or not: the display is a diagram
                    results[index] = _picture(drawn, len(pictures))
                    continue
                if pictures:
                    placeholders[index] = [p.kind for p in pictures]
                jobs.append(
                    ConversionJob(index, text, katex_macros if katex_macros.katex or katex_macros.withheld else None)
                )
        if jobs:
            with self._lock:
                self._run(jobs, results)
        for index, kinds in placeholders.items():
            result = results[index]
            if result is not None and result.mathml is not None:
                unknown = _unknown_names(result)
                results[index] = ConversionResult(
                    result.mathml,
                    "approximate",
                    "diagram-placeholder",
                    f"{_count(len(kinds), 'symbol')} drawn as a picture ({', '.join(dict.fromkeys(kinds))}) shown "
                    f"as [diagram]"
                    + (f"; unknown macros rendered as text: {', '.join(unknown)}" if unknown else "")
                    + f"; {survival(result.mathml, unknown, len(kinds))}",
                )
        return [r if r is not None else _failed("internal-error", "no answer from the worker") for r in results]

    def _katex_macros(self, macros: tuple[MacroDef, ...]) -> KatexMacros:
        katex_macros = self._macros.get(macros)
        if katex_macros is None:
            # what TeX reads and KaTeX refuses in a macro's body too, which KaTeX expands itself
            adapted = tuple(
                dataclasses.replace(m, body=sized_delimiters_in_text(katex_lengths(m.body))) for m in macros
            )
            katex_dir = self.config.katex_dir
            katex_macros = build_katex_macros(adapted, katex_commands(katex_dir), katex_macro_uses(katex_dir))
            self._macros[macros] = katex_macros
            while len(self._macros) > 16:
                self._macros.popitem(last=False)
        return katex_macros

    # The scheduler: one thread, all workers' stdout in one selector, requests pipelined per worker.
    def _run(self, jobs: collections.deque[ConversionJob], results: list[ConversionResult | None]) -> None:
        if self._node is None:
            self._node = check_installed(self.config.node, self.config.katex_dir)
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
                    worker.send(jobs, self.config.max_in_flight)
                deadlines = [w.head_started + timeout for w in self._workers if w is not None and w.in_flight]
                if not deadlines:
                    continue
                for key, _ in selector.select(max(0.0, min(deadlines) - time.monotonic())):
                    worker = self._workers[key.data]
                    if worker is None:
                        continue
                    if worker.read_available():
                        _collect(worker, results)
                    else:
                        self._crashed(key.data, results, jobs, selector)
                now = time.monotonic()
                for slot, worker in enumerate(self._workers):
                    if worker is not None and worker.in_flight and now - worker.head_started > timeout:
                        head = worker.take_head()
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
        jobs: collections.deque[ConversionJob],
        selector: selectors.BaseSelector,
    ) -> None:
        """A worker died: keep the answers it sent, blame the equation it was on, send the rest again."""
        worker = self._workers[slot]
        assert worker is not None
        worker.drain()
        _collect(worker, results)
        if worker.in_flight:
            head = worker.take_head()
            detail = [line for line in worker.stderr_text().splitlines() if line.strip() and "Node.js v" not in line]
            results[head.index] = _failed(
                "worker-crash",
                "the KaTeX worker died while converting this equation"
                + (f" ({detail[-1].strip()[:200]})" if detail else "")
                + f": {_snippet(head.latex, 0)}",
            )
        self._retire(slot, jobs, selector)

    def _retire(self, slot: int, jobs: collections.deque[ConversionJob], selector: selectors.BaseSelector) -> None:
        """Kill a worker and put its unanswered requests back at the front of the queue, in order."""
        worker = self._workers[slot]
        assert worker is not None
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(worker.stdout_fd)
        jobs.extendleft(reversed(worker.unanswered()))
        worker.kill()
        self._workers[slot] = None
        self.restarts += 1

    def _start(self, slot: int) -> KatexWorker:
        assert self._node is not None
        config = self.config
        worker = KatexWorker(
            self._node,
            config.katex_dir,
            max_expand=config.max_expand,
            unknown_macro_retries=config.unknown_macro_retries,
            start_timeout_s=config.start_timeout_s,
        )
        self._workers[slot] = worker
        return worker


def _collect(worker: KatexWorker, results: list[ConversionResult | None]) -> None:
    for job, answer in worker.answers():
        results[job.index] = _result(answer, job.latex)


def _snippet(latex: str, position: int | None, width: int = 30) -> str:
    if position is None:
        position = 0
    start = max(0, position - width)
    text = " ".join(latex[start : position + width].split())
    return "'" + ("..." if start else "") + text + ("..." if position + width < len(latex) else "") + "'"


def _unknown_names(result: ConversionResult) -> list[str]:
    if result.reason != "undefined-macro" or not result.message or not result.message.startswith(_UNKNOWN):
        return []
    return result.message[len(_UNKNOWN) :].split(";")[0].split(", ")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _picture(drawn: list[str], count: int) -> ConversionResult:
    kinds = ", ".join(dict.fromkeys(drawn))
    return ConversionResult(
        None,
        "diagram",
        "diagram",
        f"{_count(count, 'picture')} ({kinds}) set as a formula: kept as LaTeX, KaTeX does not draw pictures",
    )


def _failed(reason: str, message: str) -> ConversionResult:
    return ConversionResult(mathml=None, status="failed", reason=reason, message=message)


_UNKNOWN = "unknown macros rendered as text: "


def _result(answer: dict[str, Any], latex: str) -> ConversionResult:
    unknown = answer.get("unknown") or []
    if "mathml" in answer:
        if unknown:
            names = ", ".join(unknown)
            return ConversionResult(
                answer["mathml"],
                "approximate",
                "undefined-macro",
                f"{_UNKNOWN}{names}; {survival(answer['mathml'], unknown)}",
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
