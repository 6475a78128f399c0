"""The 64-d student of the composite (engine/model/student64-bundle): onnxruntime gives the vectors torch gave at its
export, and its query head weighs queries as the rankers ask."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from eqsearch.engine.model.bundle import read_manifest
from eqsearch.engine.model.encoder import load_encoder

BUNDLE = Path(__file__).resolve().parents[3] / "engine" / "model" / "student64-bundle"
RECORDED = json.loads((Path(__file__).parent / "student64_parity.json").read_text())


def test_the_bundle_is_a_checked_64d_structure_bag_with_a_graph_head() -> None:
    manifest = read_manifest(BUNDLE)
    assert (manifest.encoder, manifest.embedding_dim, manifest.similarity) == ("structure-bag", 64, "cosine")
    assert manifest.raw["query_heads"]["parts"] == ["structure", "graph"]
    assert manifest.raw["parity"]["max_abs_diff"] <= 1e-4


def test_onnxruntime_gives_the_vectors_torch_gave_at_export() -> None:
    encoder = load_encoder(BUNDLE, provider="cpu")
    assert encoder.identity == RECORDED["identity"]
    served = encoder.encode(RECORDED["mathml"])
    np.testing.assert_allclose(served, np.array(RECORDED["vectors"]), atol=1e-5)  # the last one: no terms at all


def test_the_graph_head_gives_the_recorded_query_vectors_and_mixes_linearly() -> None:
    encoder = load_encoder(BUNDLE, provider="cpu")
    vectors = np.array(RECORDED["vectors"], dtype=np.float32)
    graph = np.stack([encoder.weigh_query(v, {"graph": 1.0, "structure": 0.0}) for v in vectors])
    np.testing.assert_allclose(graph, np.array(RECORDED["graph_queries"]), atol=1e-5)
    mixed = encoder.weigh_query(vectors[0], {"graph": 0.3, "structure": 0.7})
    np.testing.assert_allclose(mixed, 0.7 * vectors[0] + 0.3 * graph[0], atol=1e-6)
