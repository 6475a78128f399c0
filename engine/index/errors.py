"""The errors of index operations, in a module of their own so that `admin` and `migration` share them without
importing each other at load time."""

from __future__ import annotations

from eqsearch.engine.errors import EqsearchError


class IndexOperationError(EqsearchError):
    """An index operation cannot be done as asked."""

    exit_code = 8


class MigrationError(IndexOperationError):
    """A migration stopped before the alias swap; the old index still serves."""
