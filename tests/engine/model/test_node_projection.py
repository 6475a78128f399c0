"""The shipped fixed projection of the node states (``node_states@p64``, listed in ``node-states.json``): the MaxSim
rows are the unit node states times its matrix, its identity names it, and a changed or missing projection is
refused; ``eqsearch export node-projection`` (`export.node_projection`) fits and lists one."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from eqsearch.engine.model.bundle import BundleError, default_bundle_path
from eqsearch.engine.model.nodes import (
    NODE_MANIFEST_NAME,
    check_node_output,
    load_node_encoder,
    node_output_of,
)

MATHML = [
    "<math><mrow><msup><mi>a</mi><mn>2</mn></msup><mo>+</mo><msup><mi>b</mi><mn>2</mn></msup><mo>=</mo>"
    "<msup><mi>c</mi><mn>2</mn></msup></mrow></math>",
    "<math><mfrac><mi>x</mi><mrow><mi>y</mi><mo>+</mo><mn>1</mn></mrow></mfrac></math>",
]


def test_projected_rows_are_the_unit_states_times_the_shipped_matrix():
    states = load_node_encoder(None, output="node_states")
    projected = load_node_encoder(None, output="node_states@p64")
    matrix = np.load(default_bundle_path() / "node-projection-p64.npy")
    assert projected.dim == 64 and matrix.shape == (512, 64)
    for rows, out in zip(states.encode(MATHML), projected.encode(MATHML), strict=True):
        unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        np.testing.assert_allclose(out, unit @ matrix, atol=1e-5)
    manifest = json.loads((default_bundle_path() / NODE_MANIFEST_NAME).read_text())
    entry = manifest["projections"]["p64"]
    assert projected.identity == f"{states.identity}@p64:{entry['sha256'][:12]}"
    assert entry["fitted_on"]["papers"] == "real-latex/papers.jsonl"  # the training corpus, never ARQMath
    assert node_output_of(projected.identity) == "node_states@p64" and node_output_of(states.identity) == "node_states"


def test_bad_outputs_and_changed_projections_are_refused(tmp_path):
    for bad in ("node_state", "node_states@", "node_states@p-64", "edges@p64"):
        with pytest.raises(ValueError, match="is not one of node_states, node_vectors"):
            check_node_output(bad)
    with pytest.raises(BundleError, match="no projection 'p32' of node_states"):
        load_node_encoder(None, output="node_states@p32")
    bundle = tmp_path / "bundle"
    shutil.copytree(default_bundle_path(), bundle)
    matrix = np.load(bundle / "node-projection-p64.npy")
    np.save(bundle / "node-projection-p64.npy", matrix * 2)
    with pytest.raises(BundleError, match="checksum differs") as refused:
        load_node_encoder(bundle, output="node_states@p64")
    assert "eqsearch export node-projection" in (refused.value.hint or "")


def test_a_fitted_projection_is_written_listed_and_loaded(tmp_path):
    from eqsearch.export.node_projection import fit_node_projection, write_node_projection

    bundle = tmp_path / "bundle"
    shutil.copytree(default_bundle_path(), bundle)
    matrix, kept = fit_node_projection(bundle, MATHML, 4)
    assert matrix.shape == (512, 4) and np.allclose(matrix.T @ matrix, np.eye(4), atol=1e-5)  # orthonormal
    assert kept["nodes"] == sum(len(v) for v in load_node_encoder(bundle, output="node_states").encode(MATHML))
    write_node_projection(bundle, "p4", matrix, output="node_states", provenance={"fitted_on": {"test": True}})
    encoder = load_node_encoder(bundle, output="node_states@p4")
    assert encoder.dim == 4 and encoder.encode(MATHML[:1])[0].shape[1] == 4
    assert load_node_encoder(bundle, output="node_states@p64").dim == 64  # the others stay listed
    with pytest.raises(Exception, match="cannot fit a 600-d projection"):
        fit_node_projection(bundle, MATHML, 600)
