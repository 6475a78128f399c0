"""ONNX export with dynamic shapes, the bundle writer, and torch/onnxruntime parity within 1e-4."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from eqsearch.engine.model.bundle import BundleError, read_manifest
from eqsearch.engine.model.featurize import featurize_mathml
from eqsearch.engine.model.graph import GraphArrays, concatenate_graphs
from eqsearch.engine.model.vocabulary import build_vocabulary
from eqsearch.export.bundle import check_parity, write_bundle
from eqsearch.training.batching import graph_tensors
from eqsearch.training.model import FormulaEncoder, ModelConfig

pytestmark = pytest.mark.slow  # one ONNX export (~5 s)

MATHML = [
    "<math><mrow><mi>x</mi><mo>=</mo><mfrac><mn>1</mn><mi>y</mi></mfrac></mrow></math>",
    '<math><mrow><mi mathvariant="bold">v</mi><mo>+</mo><msup><mi>e</mi>'
    "<mrow><mi>i</mi><mi>π</mi></mrow></msup></mrow></math>",
    "<math><mi>sin</mi></math>",
    "<math><mi>z</mi></math>",
]


def _tree(n: int, rng: np.random.Generator, vocab) -> GraphArrays:
    parent = np.array([rng.integers(0, i) for i in range(1, n)], dtype=np.int64)
    return GraphArrays(
        tag=rng.integers(0, vocab.n_tags, n),
        attr=rng.integers(0, vocab.n_attrs + 1, n),
        char=rng.integers(0, vocab.n_chars + 1, n),
        pos=rng.integers(0, 6, n),
        edge_index=np.stack([parent, np.arange(1, n, dtype=np.int64)]).reshape(2, n - 1),
        graph=np.zeros(n, dtype=np.int64),
        num_graphs=1,
    )


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    vocab = build_vocabulary(MATHML, n_tags=8, n_attrs=4, n_chars=16)
    model = FormulaEncoder(ModelConfig(n_tags=8, n_attrs=4, n_chars=16, hidden_dim=16, embedding_dim=8))
    rng = np.random.default_rng(0)
    graphs = [_tree(int(n), rng, vocab) for n in rng.integers(1, 30, 40)]
    model.train()
    with torch.no_grad():  # move batch-norm and soft-norm running statistics away from their initial values
        for _ in range(5):
            model(**graph_tensors(concatenate_graphs(graphs)))
    model.eval()
    out = tmp_path_factory.mktemp("bundle") / "b"
    write_bundle(
        model,
        vocab,
        out,
        training_config={"x": 1, "corpus": "/home/someone/corpus/papers.jsonl.gz"},
        data_summary={"papers": 0},
        parity_graphs=graphs,
    )
    return model, vocab, out, graphs


def test_bundle_manifest(trained) -> None:
    _, _, out, _ = trained
    manifest = read_manifest(out)
    assert manifest.embedding_dim == 8 and manifest.encoder == "kdd20-gcn" and manifest.opset == 18
    raw = manifest.raw
    assert raw["parity"]["max_abs_diff"] <= 1e-4
    assert raw["training"] == {"x": 1, "corpus": "papers.jsonl.gz"} and raw["data"] == {"papers": 0}
    assert set(raw["files"]) == {"model.onnx", "vocabulary.json"}


def test_parity_on_featurized_mathml_and_random_batches(trained) -> None:
    model, vocab, out, graphs = trained
    featurized = [featurize_mathml(m, vocab) for m in MATHML]  # includes one-node equations (no edges at all)
    report = check_parity(model, out, featurized + graphs, batch_sizes=(1, 2, 5, 44))
    assert report.ok, report


def test_existing_bundle_is_not_overwritten(trained) -> None:
    from eqsearch.engine.errors import EqsearchError

    model, vocab, out, _ = trained
    with pytest.raises(EqsearchError, match="already exists"):
        write_bundle(model, vocab, out)


def test_tampered_model_is_refused(trained, tmp_path: Path) -> None:
    import shutil

    _, _, out, _ = trained
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    with (copy / "model.onnx").open("ab") as handle:
        handle.write(b"\\0")
    with pytest.raises(BundleError, match="checksum mismatch"):
        read_manifest(copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["format_version"] = 99
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match="format version 99"):
        read_manifest(copy)
