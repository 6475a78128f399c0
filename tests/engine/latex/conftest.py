"""The real KaTeX converter the tests of this folder share: one Node worker per test module.

Without Node.js and the pinned KaTeX (`eqsearch setup katex`) the tests that use it are skipped, except on CI
(CI=true) where that is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from eqsearch.engine.latex.converter import KatexConfig, KatexConverter
from eqsearch.engine.latex.install import KatexNotInstalledError, check_installed

ON_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


@pytest.fixture(scope="module")
def converter() -> Iterator[KatexConverter]:
    try:
        check_installed()
    except KatexNotInstalledError as error:
        if ON_CI:
            pytest.fail(f"KaTeX is required on CI: {error}", pytrace=False)
        pytest.skip(str(error))
    with KatexConverter(KatexConfig(workers=1)) as conv:
        yield conv
