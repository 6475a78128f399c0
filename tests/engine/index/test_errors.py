"""The errors of index operations (`engine/index/errors.py`): what they declare (their exit code, their message and
hint, a migration's failure being an index operation's), and that the package exports them."""

from __future__ import annotations

import eqsearch.engine.index as index_package
import pytest
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.index.errors import IndexOperationError, MigrationError


def test_an_index_operation_error_carries_its_hint_and_exit_code():
    error = IndexOperationError("index 'eqsearch-equations-v3' is live", hint="swap the alias first")
    assert isinstance(error, EqsearchError) and error.exit_code == 8
    assert error.message == "index 'eqsearch-equations-v3' is live" and error.hint == "swap the alias first"
    assert str(error) == "index 'eqsearch-equations-v3' is live\n  hint: swap the alias first"
    assert IndexOperationError("no such kind", exit_code=2).exit_code == 2


def test_a_migration_error_is_an_index_operation_error_with_its_exit_code():
    with pytest.raises(IndexOperationError) as caught:
        raise MigrationError("the copy stopped at 12 of 30 documents")
    assert isinstance(caught.value, MigrationError) and caught.value.exit_code == 8 and caught.value.hint is None
    assert str(caught.value) == "the copy stopped at 12 of 30 documents"


def test_the_package_exports_both():
    assert index_package.IndexOperationError is IndexOperationError
    assert index_package.MigrationError is MigrationError
    assert {"IndexOperationError", "MigrationError"} <= set(index_package.__all__)
