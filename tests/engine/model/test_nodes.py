"""The node-states sidecar of the shipped bundle: loads without torch, agrees with the bundle's formula vectors (the
mean of an equation's node vectors is its embedding), and is refused when it is not the bundle's."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from eqsearch.engine.model.bundle import BundleError, default_bundle_path, read_manifest
from eqsearch.engine.model.nodes import NODE_MANIFEST_NAME, NODE_MODEL_NAME, load_node_encoder

SHIPPED = (default_bundle_path() / NODE_MANIFEST_NAME).is_file()
needs_sidecar = pytest.mark.skipif(not SHIPPED, reason="no node-states sidecar in the default bundle")

MATHML = [
    "<math><mrow><mi>P</mi><mo>(</mo><mi>a</mi><mo>|</mo><mi>b</mi><mo>)</mo><mo>=</mo><mfrac><mrow><mi>P</mi>"
    "<mo>(</mo><mi>b</mi><mo>|</mo><mi>a</mi><mo>)</mo><mi>P</mi><mo>(</mo><mi>a</mi><mo>)</mo></mrow><mrow>"
    "<mi>P</mi><mo>(</mo><mi>b</mi><mo>)</mo></mrow></mfrac></mrow></math>",
    "<math><mi>x</mi></math>",  # two nodes, one edge
    "<math><mrow><msup><mi>a</mi><mn>2</mn></msup><mo>+</mo><msup><mi>b</mi><mn>2</mn></msup><mo>=</mo>"
    "<msup><mi>c</mi><mn>2</mn></msup></mrow></math>",
]


def test_the_node_module_never_imports_torch_or_onnx():
    code = (
        "import sys\nfrom eqsearch.engine.model.nodes import load_node_encoder\n"
        + ("load_node_encoder().encode(['<math><mi>x</mi></math>'])\n" if SHIPPED else "")
        + "print('torch' in sys.modules, 'onnx' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


@needs_sidecar
def test_the_mean_of_the_node_vectors_is_the_bundles_formula_vector():
    from eqsearch.engine.model.bundle import default_bundle_path
    from eqsearch.engine.model.encoder import load_encoder

    formula = load_encoder(default_bundle_path(), batch_size=2).encode(MATHML)  # the graph network's own vector
    nodes = load_node_encoder(batch_size=2).encode(MATHML)
    states = load_node_encoder(output="node_states").encode(MATHML)
    assert [len(n) for n in nodes] == [len(s) for s in states] and len(nodes[1]) == 2  # <math> and <mi>
    assert nodes[0].shape[1] == 64 and states[0].shape[1] == 512 and nodes[0].dtype == np.float32
    np.testing.assert_allclose(np.stack([n.mean(axis=0) for n in nodes]), formula, atol=1e-5)
    # the projection of the mean state, scaled, is the same vector: node_vectors are the states projected
    manifest = json.loads((default_bundle_path() / NODE_MANIFEST_NAME).read_text())
    assert manifest["source"]["sha256"] == read_manifest(default_bundle_path()).raw["files"]["model.onnx"]["sha256"]
    assert manifest["parity"]["max_abs_diff"] <= 1e-5


@needs_sidecar
def test_a_changed_sidecar_or_one_of_another_model_is_refused(tmp_path: Path):
    copy = tmp_path / "bundle"
    shutil.copytree(default_bundle_path(), copy)
    with (copy / NODE_MODEL_NAME).open("ab") as handle:
        handle.write(b"\0")
    with pytest.raises(BundleError, match="checksum mismatch"):
        load_node_encoder(copy)
    shutil.copy(default_bundle_path() / NODE_MODEL_NAME, copy / NODE_MODEL_NAME)
    manifest = json.loads((copy / NODE_MANIFEST_NAME).read_text())
    manifest["source"]["sha256"] = "0" * 64
    (copy / NODE_MANIFEST_NAME).write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match="cut from model 0000000000000000"):
        load_node_encoder(copy)
    (copy / NODE_MANIFEST_NAME).unlink()
    with pytest.raises(BundleError, match="no node-states sidecar") as error:
        load_node_encoder(copy)
    assert "eqsearch export node-states" in (error.value.hint or "")
    with pytest.raises(BundleError, match="not one of"):
        load_node_encoder(output="edges")
