"""The conversion stage: each extracted equation's LaTeX -> MathML through `eqsearch.engine.latex.converter`.

The converter belongs to the engine (KaTeX in long-lived Node workers); this stage only feeds it one paper at a
time with that paper's macros and writes the results back onto the equations, and onto the inline formulas that get
indexed (`eqsearch.engine.index.inline_indexable`), sent in the same batch as their document's displays.

Inline formulas are converted as displays are (KaTeX's display mode), not in text style: a query is converted in
display mode, and text style gives ``\\sum_{i=1}^n`` and ``\\lim_{x\\to 0}`` as ``msubsup``/``msub`` where display
mode gives ``munderover``/``munder``, which the encoder (it reads the element names) would see as other formulas.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.index.documents import inline_indexable
from eqsearch.ingest.records import STATUS_EXTRACTED, Equation, InlineFormula, Paper

_WITH_ARGUMENT = frozenset({"alignat", "alignat*", "xalignat", "xalignat*", "xxalignat", "xxalignat*"})


class ConverterUnavailableError(EqsearchError):
    """The MathML converter cannot be started (module missing, Node or KaTeX not installed)."""

    exit_code = 3


def open_converter(katex_dir: str | None = None) -> Any:
    """Start a `KatexConverter` (entered; close it with ``__exit__``), after checking that Node.js and the pinned
    KaTeX are there, so that a run stops at once instead of recording every document as unconverted.

    Args:
        katex_dir: the folder holding KaTeX (``worker.js``, ``package.json``, ``node_modules``); None for the one
            installed with eqsearch.

    Raises:
        ConverterUnavailableError: `eqsearch.engine.latex.converter` is missing, or Node.js or KaTeX is not
            installed (the message says which command installs it).
    """
    try:
        from eqsearch.engine.latex.converter import KatexConfig, KatexConverter
        from eqsearch.engine.latex.install import KatexNotInstalledError, check_installed
    except ImportError as error:
        raise ConverterUnavailableError(
            f"the LaTeX -> MathML converter is not available ({error})",
            hint="run with --no-convert to extract only",
        ) from None
    config = KatexConfig() if katex_dir is None else KatexConfig(katex_dir=Path(katex_dir))
    try:
        check_installed(config.node, config.katex_dir)
    except KatexNotInstalledError as error:
        raise ConverterUnavailableError(
            error.message, hint=f"{error.hint}; or run with --no-convert to extract only"
        ) from None
    converter = KatexConverter(config)
    converter.__enter__()
    return converter


def converter_input(latex: str, environment: str, args: list[str]) -> tuple[str, str]:
    """What the converter gets for one equation: ``alignat``'s column count leads the body as ``{2}``."""
    if args and environment in _WITH_ARGUMENT:
        return "{" + args[0] + "}" + latex, environment
    return latex, environment


def convert_paper(paper: Paper, converter: Any, *, inline: bool = True) -> int:
    """Convert every equation of ``paper`` still in status ``extracted``, and every indexable inline formula (unless
    ``inline`` is off), each with the macros of its document; failures are recorded per formula.

    Returns:
        The number of equations and inline formulas sent to the converter.
    """
    by_document: dict[int, list[Equation | InlineFormula]] = {}
    for section in paper.sections:
        for eq in section.equations:
            if eq.status == STATUS_EXTRACTED:
                by_document.setdefault(section.document, []).append(eq)
        if inline:
            for formula in section.inline:
                if formula.status == STATUS_EXTRACTED and inline_indexable(formula.latex):
                    by_document.setdefault(section.document, []).append(formula)
    if not by_document:
        return 0
    started = time.perf_counter()
    for document, todo in by_document.items():
        results = converter.convert_many(
            [
                converter_input(eq.latex, eq.environment, eq.environment_args)
                if isinstance(eq, Equation)
                else (eq.latex, "math")
                for eq in todo
            ],
            macros=paper.macros_of(document),
        )
        for equation, result in zip(todo, results, strict=True):
            equation.mathml = result.mathml
            equation.status = result.status
            equation.reason = result.reason
            equation.message = result.message
    paper.timings["convert"] = time.perf_counter() - started
    return sum(len(todo) for todo in by_document.values())
