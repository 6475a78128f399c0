"""LaTeX -> Presentation MathML: the TeX scanner, clean-up for KaTeX, a document's macros, KaTeX in Node workers.

``from eqsearch.engine.latex import KatexConverter, KatexConfig``. Importing the package needs nothing beyond the
standard library (no numpy, lxml or Elasticsearch client); Node workers start on a converter's first conversion.
"""

from eqsearch.engine.latex.converter import REASONS, ConversionResult, KatexConfig, KatexConverter
from eqsearch.engine.latex.install import (
    DEFAULT_KATEX_DIR,
    KatexNotInstalledError,
    ensure_katex_installed,
    installed_katex_version,
)
from eqsearch.engine.latex.macros import MacroDef, MacroExpansionError
from eqsearch.engine.latex.preprocess import preprocess_latex
from eqsearch.engine.latex.worker import KatexWorkerError

__all__ = [
    "DEFAULT_KATEX_DIR",
    "REASONS",
    "ConversionResult",
    "KatexConfig",
    "KatexConverter",
    "KatexNotInstalledError",
    "KatexWorkerError",
    "MacroDef",
    "MacroExpansionError",
    "ensure_katex_installed",
    "installed_katex_version",
    "preprocess_latex",
]
