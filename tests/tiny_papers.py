"""Tiny hand-written papers (MathML as KaTeX writes it) and random trees, for the training and evaluation tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from eqsearch.engine.model.graph import GraphArrays

_M = '<math xmlns="http://www.w3.org/1998/Math/MathML"><semantics><mrow>{}</mrow></semantics></math>'


def mathml(*tokens: str) -> str:
    """A flat <mrow> of token elements, e.g. mathml("mi:x", "mo:=", "mn:1")."""
    parts = []
    for token in tokens:
        tag, text = token.split(":", 1)
        parts.append(f"<{tag}>{text}</{tag}>")
    return _M.format("".join(parts))


BAYES = _M.format(
    "<mi>P</mi><mo>(</mo><mi>a</mi><mo>|</mo><mi>b</mi><mo>)</mo><mo>=</mo>"
    "<mfrac><mrow><mi>P</mi><mo>(</mo><mi>a</mi><mo>,</mo><mi>b</mi><mo>)</mo></mrow>"
    "<mrow><mi>P</mi><mo>(</mo><mi>b</mi><mo>)</mo></mrow></mfrac>"
)


def papers() -> list[dict]:
    """Twelve papers with sections and one citation; enough for a split and triplets."""
    out = []
    letters = "abcdefghijkl"
    for p in range(12):
        sections = []
        for s in range(2):
            eqs = []
            for e in range(3):
                a, b = letters[(p + e) % 12], letters[(p + s + e + 3) % 12]
                eqs.append({"mathml": mathml(f"mi:{a}", "mo:+", f"mi:{b}", "mo:=", f"mn:{p}{s}{e}")})
            eqs.append({"mathml": BAYES})
            sections.append({"title": f"S{s}", "equations": eqs})
        sections[0]["equations"].append({"mathml": None, "status": "failed"})
        out.append({"id": f"paper-{p}", "citations": [f"paper-{(p + 1) % 12}"], "sections": sections})
    return out


def write_papers(path: Path) -> Path:
    path.write_text("".join(json.dumps(p) + "\n" for p in papers()))
    return path


def random_graph(n: int, rng: np.random.Generator, n_tags: int = 8, n_attrs: int = 4, n_chars: int = 16) -> GraphArrays:
    """A random tree of n nodes with valid feature indices."""
    parent = np.array([rng.integers(0, i) for i in range(1, n)], dtype=np.int64)
    edge_index = np.ascontiguousarray(np.stack([parent, np.arange(1, n, dtype=np.int64)])).reshape(2, n - 1)
    pos = np.zeros(n, dtype=np.int64)
    for child, par in zip(range(1, n), parent, strict=True):
        pos[child] = int((parent[: child - 1] == par).sum())
    return GraphArrays(
        tag=rng.integers(0, n_tags, n),
        attr=rng.integers(0, n_attrs + 1, n),
        char=rng.integers(0, n_chars + 1, n),
        pos=pos,
        edge_index=edge_index,
        graph=np.zeros(n, dtype=np.int64),
        num_graphs=1,
    )
