"""eqsearch: semantic search for mathematics.

The top-level package holds only the version and the one console script (`eqsearch`, with its commands in
`eqsearch.commands`); the work lives in `eqsearch.engine`, `eqsearch.ingest`, `eqsearch.evaluation`,
`eqsearch.training`, `eqsearch.export` and `eqsearch.webui` (ARCHITECTURE.md).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("eqsearch")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
