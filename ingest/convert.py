"""The conversion stage: each extracted equation's LaTeX -> MathML through `eqsearch.engine.latex.converter`.

The converter belongs to the engine (KaTeX in long-lived Node workers); this stage only feeds it one paper at a
time with that paper's macros and writes the results back onto the equations.
"""

from __future__ import annotations

import time
from typing import Any

from eqsearch.engine.errors import EqsearchError
from eqsearch.ingest.records import STATUS_EXTRACTED, Paper

_WITH_ARGUMENT = frozenset({"alignat", "alignat*", "xalignat", "xalignat*", "xxalignat", "xxalignat*"})


class ConverterUnavailableError(EqsearchError):
    """The MathML converter cannot be started (module missing, Node or KaTeX not installed)."""

    exit_code = 3


def open_converter() -> Any:
    """Start a `KatexConverter` (entered; close it with ``__exit__``).

    Raises:
        ConverterUnavailableError: `eqsearch.engine.latex.converter` is missing or fails to start.
    """
    try:
        from eqsearch.engine.latex.converter import KatexConverter
    except ImportError as error:
        raise ConverterUnavailableError(
            f"the LaTeX -> MathML converter is not available ({error})",
            hint="run with --no-convert to extract only",
        ) from None
    converter = KatexConverter()
    converter.__enter__()
    return converter


def converter_input(latex: str, environment: str, args: list[str]) -> tuple[str, str]:
    """What the converter gets for one equation: ``alignat``'s column count leads the body as ``{2}``."""
    if args and environment in _WITH_ARGUMENT:
        return "{" + args[0] + "}" + latex, environment
    return latex, environment


def convert_paper(paper: Paper, converter: Any) -> int:
    """Convert every equation of ``paper`` still in status ``extracted``; failures are recorded per equation.

    Returns:
        The number of equations sent to the converter.
    """
    todo = [eq for eq in paper.equations() if eq.status == STATUS_EXTRACTED]
    if not todo:
        return 0
    started = time.perf_counter()
    results = converter.convert_many(
        [converter_input(eq.latex, eq.environment, eq.environment_args) for eq in todo], macros=paper.macros
    )
    for equation, result in zip(todo, results, strict=True):
        equation.mathml = result.mathml
        equation.status = result.status
        equation.reason = result.reason
        equation.message = result.message
    paper.timings["convert"] = time.perf_counter() - started
    return len(todo)
