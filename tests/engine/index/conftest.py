"""Fixtures of the index tests: equation documents to load (plain dicts, enough for the mappings)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest


def _docs(alias: str, n: int) -> Iterator[dict[str, Any]]:
    rng = np.random.default_rng(5)
    for i in range(n):
        yield {
            "_index": alias,
            "_id": f"p{i // 10}:{i % 10}",
            "_source": {
                "eq_id": f"p{i // 10}:{i % 10}",
                "paper_id": f"p{i // 10}",
                "number": i % 10,
                "context": f"lemma {i} about sums" if i % 2 else f"theorem {i} on products",
                "vector": rng.normal(size=64).round(5).tolist(),
            },
        }


@pytest.fixture
def equation_docs() -> Callable[[str, int], Iterator[dict[str, Any]]]:
    """``equation_docs(alias, n)``: bulk actions of ``n`` equations of ten per paper, 64-d vectors (the same each
    time: a fixed seed), half of them with "lemma" in their context."""
    return _docs
