"""A fixed projection of a bundle's node states for the MaxSim rerank: fewer dimensions to store and compare.

MaxSim's cost in the node is candidates x query nodes x candidate nodes x dimensions, and its stored node vectors
take 5 + nodes x dimensions bytes an equation: the KDD'20 network's node states are 512-d. A linear map to 64 keeps
their ranking at an eighth of the bytes (the development figures of MaxSim over the states and over their 64-d
projection are within a topic of each other: ``docs/decisions/maxsim-node-vectors.md``). The map is fitted here, on
node states of formulas of a *training* corpus (a papers JSONL, never an evaluation collection): the top right
singular vectors of their unit rows, uncentred, which keep their inner products best in the least-squares sense. It
is written beside the sidecar as ``node-projection-<key>.npy`` and listed, with its checksum and where it was fitted,
in ``node-states.json`` (`engine.model.nodes.projection_entry`), where `engine.model.nodes.NodeEncoder` reads it
(``output="node_states@p64"``). numpy only.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.model.bundle import read_manifest
from eqsearch.engine.model.nodes import NODE_MANIFEST_NAME, load_node_encoder, projection_entry

__all__ = ["corpus_mathml", "fit_node_projection", "write_node_projection"]


def corpus_mathml(papers: str | Path, count: int, seed: int) -> list[str]:
    """``count`` distinct display formulas with MathML, drawn at random (``seed``) from a papers JSONL."""
    seen: set[str] = set()
    with Path(papers).open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            for section in json.loads(line).get("sections") or ():
                for equation in section.get("equations") or ():
                    if equation.get("mathml"):
                        seen.add(equation["mathml"])
    pool = sorted(seen)
    random.Random(seed).shuffle(pool)
    return pool[:count]


def fit_node_projection(
    bundle: str | Path | None, mathml: list[str], dims: int, *, output: str = "node_states"
) -> tuple[np.ndarray, dict[str, Any]]:
    """The ``[width, dims]`` projection of the bundle's ``output`` fitted on the nodes of ``mathml`` (their unit
    rows' top right singular vectors), and what it kept (nodes, the share of the rows' energy).

    Raises:
        EqsearchError: fewer nodes than ``dims``.
    """
    encoder = load_node_encoder(bundle, output=output)
    rows = np.concatenate([v for v in encoder.encode(mathml) if len(v)]) if mathml else np.zeros((0, encoder.dim))
    if len(rows) < dims or not 0 < dims < encoder.dim:
        raise EqsearchError(f"cannot fit a {dims}-d projection of {encoder.dim}-d states on {len(rows)} nodes")
    rows = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    _, singular, vt = np.linalg.svd(rows.astype(np.float64), full_matrices=False)
    energy = float(np.sum(singular[:dims] ** 2) / np.sum(singular**2))
    return vt[:dims].T.astype(np.float32), {"nodes": len(rows), "energy_kept": round(energy, 4)}


def write_node_projection(
    bundle: str | Path, key: str, matrix: np.ndarray, *, output: str, provenance: dict[str, Any]
) -> Path:
    """Write ``node-projection-<key>.npy`` beside the bundle's sidecar and list it in ``node-states.json``.

    Raises:
        BundleError: the bundle or its sidecar does not check out.
        EqsearchError: ``key`` is not a plain name.
    """
    if not key.isidentifier():
        raise EqsearchError(f"a projection key is a plain name such as p64, got {key!r}")
    path = Path(bundle)
    read_manifest(path)
    np.save(path / f"node-projection-{key}.npy", np.ascontiguousarray(matrix, dtype=np.float32), allow_pickle=False)
    where = path / NODE_MANIFEST_NAME
    raw = json.loads(where.read_text(encoding="utf-8"))
    raw.setdefault("projections", {})[key] = projection_entry(path, key, output=output, provenance=provenance)
    where.write_text(json.dumps(raw, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return where
