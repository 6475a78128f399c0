"""The node-states sidecar cut from an exported bundle agrees with torch (node states and their projection) and with
the bundle's own model (mean node vector = embedding); ``eqsearch export node-states`` writes it and leaves the
bundle's files and identity as they were."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.model.bundle import read_manifest
from eqsearch.engine.model.featurize import featurize_mathml
from eqsearch.engine.model.graph import concatenate_graphs
from eqsearch.engine.model.nodes import NODE_MANIFEST_NAME, NODE_MODEL_NAME, load_node_encoder
from eqsearch.engine.model.vocabulary import build_vocabulary
from eqsearch.export.bundle import write_bundle
from eqsearch.export.node_states import node_parity, random_graphs, write_node_sidecar
from eqsearch.main import main
from eqsearch.training.batching import graph_tensors
from eqsearch.training.model import FormulaEncoder, ModelConfig

pytestmark = pytest.mark.slow  # one ONNX export (~5 s)

MATHML = [
    "<math><mrow><mi>x</mi><mo>=</mo><mfrac><mn>1</mn><mi>y</mi></mfrac></mrow></math>",
    "<math><mrow><msup><mi>e</mi><mrow><mi>i</mi><mi>π</mi></mrow></msup><mo>+</mo><mn>1</mn></mrow></math>",
    "<math><mi>z</mi></math>",
]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    vocab = build_vocabulary(MATHML, n_tags=8, n_attrs=4, n_chars=16)
    model = FormulaEncoder(ModelConfig(n_tags=8, n_attrs=4, n_chars=16, hidden_dim=16, embedding_dim=8))
    graphs = random_graphs({"tags": 8, "attributes": 4, "characters": 16}, count=40, seed=1)
    model.train()
    with torch.no_grad():  # batch-norm and soft-norm statistics away from their initial values
        for _ in range(5):
            model(**graph_tensors(concatenate_graphs(graphs)))
    model.eval()
    out = write_bundle(model, vocab, tmp_path_factory.mktemp("bundle") / "b", parity_graphs=graphs)
    return model, vocab, out, graphs


def test_the_sidecar_agrees_with_torch_and_with_the_bundle(bundle):
    model, vocab, out, graphs = bundle
    before = {name: (out / name).read_bytes() for name in ("model.onnx", "manifest.json", "vocabulary.json")}
    identity = read_manifest(out).identity
    write_node_sidecar(out, graphs)
    assert {name: (out / name).read_bytes() for name in before} == before and read_manifest(out).identity == identity
    featurized = [featurize_mathml(m, vocab) for m in MATHML] + graphs
    assert node_parity(out, featurized) <= 1e-5
    batch = concatenate_graphs(featurized)
    with torch.no_grad():
        tensors = graph_tensors(batch)
        states = model.node_states(**{k: tensors[k] for k in ("tag", "attr", "char", "pos", "edge_index")})
        vectors = model.soft_norm(model.projection(states))  # eval mode: every row by the running scale
    ours_states = np.concatenate(load_node_encoder(out, output="node_states").run_batch(batch))
    ours_vectors = np.concatenate(load_node_encoder(out).run_batch(batch))
    np.testing.assert_allclose(ours_states, states.numpy(), atol=1e-4)
    np.testing.assert_allclose(ours_vectors, vectors.numpy(), atol=1e-4)
    manifest = json.loads((out / NODE_MANIFEST_NAME).read_text())
    assert manifest["outputs"] == {"node_states": 16, "node_vectors": 8} and manifest["parity"]["equations"] == 40


def test_the_command_writes_the_sidecar_of_a_bundle(bundle, tmp_path, capsys):
    _, _, out, _ = bundle
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    for name in (NODE_MODEL_NAME, NODE_MANIFEST_NAME):
        (copy / name).unlink(missing_ok=True)
    assert main(["export", "node-states", "--bundle", str(copy)]) == 0
    assert "node-states sidecar written" in capsys.readouterr().out
    assert load_node_encoder(copy).dim == 8


def test_a_graph_that_is_not_the_kdd20_network_is_refused(tmp_path):
    import onnx
    from eqsearch.export.node_states import cut_node_model
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "other",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    with pytest.raises(EqsearchError, match="not a KDD'20 network"):
        cut_node_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    assert onnx is not None
