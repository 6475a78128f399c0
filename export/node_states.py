"""The node-states sidecar of a model bundle: the bundle's ONNX graph cut at its node states, written with ``onnx``.

The sidecar is derived from ``model.onnx`` itself, not exported again from torch, so that it holds the very weights
the bundle's formula vectors come from (and can be made for a bundle whose checkpoint is gone). The cut: the
pooling's ``ScatterND`` (its indices come from the ``graph`` input) sums the node states into the equation's row;
its ``updates`` are the node states, the output of the last graph convolution. The sidecar keeps the subgraph that
computes them from ``tag, attr, char, pos, edge_index`` and adds, per node, the bundle's projection (``Gemm`` with
its weight and bias) and soft-normalisation division (the final ``Div`` by its constant scale), so that the mean of
an equation's ``node_vectors`` is the bundle's ``embedding``. `write_node_sidecar` checks exactly that with
onnxruntime before it writes the manifest (`engine.model.nodes.make_node_manifest`); ``model.onnx`` and
``manifest.json`` are never touched, so the bundle keeps its identity.
"""

from __future__ import annotations

import platform
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.model.bundle import MODEL_NAME, read_manifest
from eqsearch.engine.model.graph import GraphArrays, concatenate_graphs
from eqsearch.engine.model.nodes import (
    NODE_INPUTS,
    NODE_MANIFEST_NAME,
    NODE_MODEL_NAME,
    NODE_OUTPUTS,
    make_node_manifest,
)
from onnx import helper

__all__ = ["NODE_PARITY_TOLERANCE", "cut_node_model", "node_parity", "random_graphs", "write_node_sidecar"]

#: Largest allowed difference between the mean of an equation's node vectors and the bundle's embedding.
NODE_PARITY_TOLERANCE = 1e-5


def _producers(graph: onnx.GraphProto) -> dict[str, onnx.NodeProto]:
    return {output: node for node in graph.node for output in node.output}


def _find_cut(graph: onnx.GraphProto) -> tuple[str, onnx.NodeProto, onnx.NodeProto]:
    """The node-states tensor, the projection ``Gemm`` and the soft-normalisation ``Div`` of a KDD'20 graph."""
    produced_by = _producers(graph)
    output = graph.output[0].name
    div = produced_by.get(output)
    gemm = produced_by.get(div.input[0]) if div is not None and div.op_type == "Div" else None
    pooled = produced_by.get(gemm.input[0]) if gemm is not None and gemm.op_type == "Gemm" else None
    scatter = produced_by.get(pooled.input[0]) if pooled is not None and pooled.op_type == "Div" else None
    if scatter is None or scatter.op_type != "ScatterND" or len(scatter.input) != 3:
        raise EqsearchError(
            "the bundle's ONNX graph does not end in mean pooling (ScatterND, Div), projection (Gemm) and "
            "soft normalisation (Div): it is not a KDD'20 network this exporter can cut",
        )
    return scatter.input[2], gemm, div


def cut_node_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """The sidecar model: inputs `NODE_INPUTS`, outputs ``node_states`` ``[N, hidden]`` and ``node_vectors``
    ``[N, embedding_dim]`` (each node projected and scaled as the pooled mean is).

    Raises:
        EqsearchError: the graph is not the KDD'20 network's.
    """
    states, gemm, div = _find_cut(model.graph)
    with tempfile.TemporaryDirectory() as tmp:  # the extractor works on files
        whole, part = Path(tmp) / "whole.onnx", Path(tmp) / "part.onnx"
        onnx.save(model, str(whole))
        onnx.utils.extract_model(str(whole), str(part), list(NODE_INPUTS), [states], check_model=False)
        cut = onnx.load(str(part))
    initializers = {init.name: init for init in model.graph.initializer}
    have = {init.name for init in cut.graph.initializer}
    for name in (*gemm.input[1:], div.input[1]):
        if name not in have:
            cut.graph.initializer.append(initializers[name])
    graph = cut.graph
    graph.node.append(helper.make_node("Identity", [states], ["node_states"], name="node_states"))
    projected = "node_projection"
    graph.node.append(
        helper.make_node("Gemm", ["node_states", *gemm.input[1:]], [projected], name=projected, **_attributes(gemm))
    )
    graph.node.append(helper.make_node("Div", [projected, div.input[1]], ["node_vectors"], name="node_vectors"))
    hidden = int(next(i for i in model.graph.initializer if i.name == gemm.input[1]).dims[1])
    width = int(next(i for i in model.graph.initializer if i.name == gemm.input[1]).dims[0])
    del graph.output[:]
    graph.output.extend(
        [
            helper.make_tensor_value_info("node_states", onnx.TensorProto.FLOAT, ["nodes", hidden]),
            helper.make_tensor_value_info("node_vectors", onnx.TensorProto.FLOAT, ["nodes", width]),
        ]
    )
    graph.name = "kdd20-node-states"
    onnx.checker.check_model(cut)
    return cut


def _attributes(node: onnx.NodeProto) -> dict[str, object]:
    return {attribute.name: helper.get_attribute_value(attribute) for attribute in node.attribute}


def random_graphs(sizes: dict[str, int], count: int = 64, seed: int = 0) -> list[GraphArrays]:
    """Seeded random trees (1 to 80 nodes) over a vocabulary's slots, for parity checks without a corpus.

    Args:
        sizes: the bundle's ``vocabulary_sizes`` (``tags``, ``attributes``, ``characters``).
        count: how many equations.
        seed: the generator's seed.
    """
    rng = np.random.default_rng(seed)
    graphs = []
    for n in rng.integers(1, 81, count):
        n = int(n)
        parent = np.array([rng.integers(0, i) for i in range(1, n)], dtype=np.int64)
        graphs.append(
            GraphArrays(
                tag=rng.integers(0, sizes["tags"], n),
                attr=rng.integers(0, sizes["attributes"] + 1, n),
                char=rng.integers(0, sizes["characters"] + 1, n),
                pos=rng.integers(0, 6, n),
                edge_index=np.stack([parent, np.arange(1, n, dtype=np.int64)]).reshape(2, n - 1),
                graph=np.zeros(n, dtype=np.int64),
                num_graphs=1,
            )
        )
    return graphs


def node_parity(bundle: str | Path, graphs: Sequence[GraphArrays], sidecar: str | Path | None = None) -> float:
    """Largest absolute difference between the mean of each equation's node vectors (sidecar) and its embedding
    (the bundle's model), both through onnxruntime, over one batch of ``graphs``."""
    import onnxruntime as ort
    from eqsearch.engine.model.encoder import GraphEncoder
    from eqsearch.engine.model.nodes import split_nodes

    manifest = read_manifest(bundle)
    batch = concatenate_graphs(list(graphs))
    formula = GraphEncoder(manifest, prefer_gpu=False).run_batch(batch)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(
        str(sidecar or Path(bundle) / NODE_MODEL_NAME), sess_options=options, providers=["CPUExecutionProvider"]
    )
    (vectors,) = session.run(["node_vectors"], {name: getattr(batch, name) for name in NODE_INPUTS})
    means = np.stack([rows.mean(axis=0) for rows in split_nodes(vectors, batch.graph, batch.num_graphs)])
    return float(np.abs(means - formula).max())


def write_node_sidecar(
    bundle: str | Path, parity_graphs: Sequence[GraphArrays], *, tolerance: float = NODE_PARITY_TOLERANCE
) -> Path:
    """Cut the bundle's model at its node states and write ``node-states.onnx`` and ``node-states.json`` beside it.

    Args:
        bundle: the bundle directory (its manifest and checksums are checked first; neither is changed).
        parity_graphs: featurized equations on which the mean of the node vectors must equal the embedding.
        tolerance: the largest difference allowed.

    Returns:
        The sidecar manifest's path.

    Raises:
        BundleError: the bundle does not check out.
        EqsearchError: the graph cannot be cut, or the parity check fails (nothing is written then).
    """
    import json

    import onnxruntime
    from eqsearch import __version__

    path = Path(bundle)
    manifest = read_manifest(path)
    if not parity_graphs:
        raise EqsearchError("the node-states sidecar needs equations for its parity check")
    model = onnx.load(str(path / MODEL_NAME))
    cut = cut_node_model(model)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".node-states-") as tmp:
        staged = Path(tmp) / NODE_MODEL_NAME
        onnx.save(cut, str(staged))
        worst = node_parity(path, parity_graphs, sidecar=staged)
        if not worst <= tolerance:
            raise EqsearchError(
                f"the sidecar's mean node vector differs from the bundle's embedding by {worst:.2e} (> {tolerance}): "
                "the cut is not faithful; nothing was written"
            )
        staged.replace(path / NODE_MODEL_NAME)
    outputs = {o.name: int(o.type.tensor_type.shape.dim[1].dim_value) for o in cut.graph.output}
    node_manifest = make_node_manifest(
        path,
        dims={name: outputs[name] for name in NODE_OUTPUTS},
        opset=manifest.opset,
        provenance={
            "eqsearch_version": __version__,
            "written_with": {
                "onnx": onnx.__version__,
                "onnxruntime": onnxruntime.__version__,
                "python": platform.python_version(),
            },
            "parity": {"max_abs_diff": worst, "equations": len(parity_graphs), "tolerance": tolerance},
        },
    )
    out = path / NODE_MANIFEST_NAME
    out.write_text(json.dumps(node_manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return out
