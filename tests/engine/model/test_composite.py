"""The composite encoder kind: the shipped search bundle is its parts' vectors side by side, weighed; a query may weigh
the parts anew; a part that changed, or a manifest that does not add up, is refused."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from eqsearch.engine.model.bundle import (
    BundleError,
    default_bundle_path,
    read_manifest,
    search_bundle_path,
    write_manifest,
)
from eqsearch.engine.model.composite import CompositeEncoder, make_composite_manifest
from eqsearch.engine.model.encoder import load_encoder

STRUCTURE = default_bundle_path().parent / "structure-bundle"
FORMULAS = [
    "<math><mrow><msup><mi>x</mi><mn>2</mn></msup><mo>+</mo><msup><mi>y</mi><mn>2</mn></msup></mrow></math>",
    "<math><mrow><mi>E</mi><mo>=</mo><mi>m</mi><msup><mi>c</mi><mn>2</mn></msup></mrow></math>",
    "<math><mfrac><mn>1</mn><mi>n</mi></mfrac></math>",
]


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_the_shipped_search_bundle_is_the_network_and_the_structure_bag_side_by_side() -> None:
    encoder = load_encoder()
    assert isinstance(encoder, CompositeEncoder)
    assert encoder.part_names == ("graph", "structure") and encoder.dim == 128 and encoder.similarity == "cosine"
    graph, structure = load_encoder(default_bundle_path()), load_encoder(STRUCTURE)
    assert [p.identity for p in encoder.parts] == [graph.identity, structure.identity]
    vectors = encoder.encode(FORMULAS)
    weights = [p.weight for p in encoder.parts]
    expected = np.hstack(
        [np.sqrt(weights[0]) * _unit(graph.encode(FORMULAS)), np.sqrt(weights[1]) * _unit(structure.encode(FORMULAS))]
    )
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)  # unit: the parts' weights add to 1


def test_stored_cosines_are_the_weighted_parts_and_a_query_may_weigh_them_anew() -> None:
    encoder = load_encoder()
    vectors = encoder.encode(FORMULAS)
    graph, structure = (_unit(e.encode(FORMULAS)) for e in (encoder.encoders[0], encoder.encoders[1]))
    cos_graph, cos_structure = graph @ graph.T, structure @ structure.T
    np.testing.assert_allclose(vectors @ vectors.T, 0.5 * cos_graph + 0.5 * cos_structure, atol=1e-5)
    query = encoder.weigh_query(vectors[0], {"graph": 0.3, "structure": 0.7})
    np.testing.assert_allclose(vectors @ query, 0.3 * cos_graph[0] + 0.7 * cos_structure[0], atol=1e-5)
    network_only = encoder.weigh_query(vectors[0], {"structure": 0.0})  # a part not named keeps its stored weight
    assert not network_only[64:].any()
    np.testing.assert_allclose(vectors @ network_only, 0.5 * cos_graph[0], atol=1e-5)
    with pytest.raises(ValueError, match="no part"):
        encoder.weigh_query(vectors[0], {"bitmap": 1.0})
    with pytest.raises(ValueError, match="not all zero"):
        encoder.weigh_query(vectors[0], {"graph": 0.0, "structure": 0.0})


def _composite_beside_copies(tmp_path: Path) -> Path:
    for source, name in ((default_bundle_path(), "graph"), (STRUCTURE, "structure")):
        shutil.copytree(source, tmp_path / name)
    out = tmp_path / "composite"
    out.mkdir()
    manifest = make_composite_manifest(
        out, [("graph", "../graph", 0.25), ("structure", "../structure", 0.75)], eqsearch_version="0.1.0"
    )
    write_manifest(out, manifest)
    return out


def test_a_changed_part_or_a_manifest_that_does_not_add_up_is_refused(tmp_path: Path) -> None:
    out = _composite_beside_copies(tmp_path)
    checked = read_manifest(out)
    assert checked.embedding_dim == 128 and checked.identity.startswith("composite:")
    assert checked.identity != read_manifest(search_bundle_path()).identity  # other weights: other vectors
    assert load_encoder(out).encode(FORMULAS[:1]).shape == (1, 128)
    manifest = json.loads((out / "manifest.json").read_text())
    for change, message in (
        (lambda m: m["parts"][0].update(weight=0.5), "add up to"),
        (lambda m: m["parts"][0].update(path="/abs/graph"), "relative"),
        (lambda m: m["parts"][1].update(name="graph"), "distinct names"),
        (lambda m: m["parts"][0].pop("dim"), "exactly name, path, identity, dim and weight"),
        (lambda m: m.update(embedding_dim=64), "not embedding_dim"),
    ):
        broken = json.loads(json.dumps(manifest))
        change(broken)
        (out / "manifest.json").write_text(json.dumps(broken))
        with pytest.raises(BundleError, match=message):
            read_manifest(out)
    (out / "manifest.json").write_text(json.dumps(manifest))
    shutil.copy(search_bundle_path() / "manifest.json", tmp_path / "structure" / "manifest.json")  # another bundle
    with pytest.raises(BundleError):
        load_encoder(out)
    with pytest.raises(BundleError, match="cannot be a composite"):
        make_composite_manifest(tmp_path, [("x", "composite", 1.0)], eqsearch_version="0.1.0")


def test_export_composite_writes_a_bundle_that_loads(tmp_path: Path) -> None:
    out = tmp_path / "search"
    run = [sys.executable, "-m", "eqsearch", "export", "composite", "--out", str(out)]
    parts = ["--part", f"graph={default_bundle_path()}:0.5", "--part", f"structure={STRUCTURE}:0.5"]
    done = subprocess.run(run + parts, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert read_manifest(out).identity == read_manifest(search_bundle_path()).identity  # the shipped one, again
    bad = subprocess.run([*run, "--part", "graph"], capture_output=True, text=True)
    assert bad.returncode == 2 and "NAME=BUNDLE_DIR:WEIGHT" in bad.stderr
    elsewhere = tmp_path / "nothing"
    missing = [sys.executable, "-m", "eqsearch", "export", "composite", "--out", str(elsewhere), "--part", "g=/no:1"]
    refused = subprocess.run(missing, capture_output=True, text=True)
    assert refused.returncode != 0 and "/no is not a directory" in refused.stderr and not elsewhere.exists()


def test_maxsim_node_vectors_come_from_the_composites_graph_network() -> None:
    from eqsearch.engine.model.nodes import load_node_encoder, node_encoder_for

    nodes = node_encoder_for(load_encoder(), "node_states@p64")
    assert nodes.identity == load_node_encoder(default_bundle_path(), output="node_states@p64").identity
    assert nodes.identity.startswith(read_manifest(default_bundle_path()).identity + "/")


def test_the_shipped_search_bundle_gives_the_vectors_recorded_when_it_was_made() -> None:
    """Indices hold these vectors: a change in featurization, hashing or onnxruntime that moves them would make
    every index's kNN compare the incomparable, so it has to show here (and the bundle's identity change with it)."""
    recorded = json.loads((Path(__file__).parent / "composite_parity.json").read_text())
    encoder = load_encoder()
    assert encoder.identity == recorded["identity"]
    np.testing.assert_allclose(encoder.encode(recorded["mathml"]), np.array(recorded["vectors"]), atol=1e-5)
