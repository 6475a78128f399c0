"""torch -> ONNX for the KDD'20 encoder, with dynamic numbers of nodes, edges and equations."""

from __future__ import annotations

import io
import warnings
from collections.abc import Sequence
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np
import torch
from eqsearch.engine.model.bundle import GRAPH_INPUTS
from eqsearch.engine.model.graph import GraphArrays, concatenate_graphs
from eqsearch.training.batching import graph_tensors
from eqsearch.training.model import FormulaEncoder

DEFAULT_OPSET = 18
OUTPUT_NAME = "embedding"


def example_batch() -> GraphArrays:
    """A small batch (3 equations of different sizes) to trace the model; sizes differ so no dimension specialises."""
    graphs = []
    for n in (2, 5, 4):
        parent = np.array([0, *range(n - 2)], dtype=np.int64)[: n - 1]
        edge_index = np.stack([parent, np.arange(1, n, dtype=np.int64)])
        graphs.append(
            GraphArrays(
                tag=np.arange(n, dtype=np.int64) % 3,
                attr=np.zeros(n, dtype=np.int64),
                char=np.arange(n, dtype=np.int64) % 2,
                pos=np.zeros(n, dtype=np.int64),
                edge_index=np.ascontiguousarray(edge_index),
                graph=np.zeros(n, dtype=np.int64),
                num_graphs=1,
            )
        )
    return concatenate_graphs(graphs)


def save_dynamo_onnx(
    model: torch.nn.Module,
    args: tuple[Any, ...],
    path: Path,
    *,
    kwargs: dict[str, Any] | None = None,
    dynamic_shapes: Any,
    opset: int,
    input_names: Sequence[str],
) -> Path:
    """Export a model with the dynamo-based exporter (``torch.export``) and save it as one self-contained ``.onnx``
    file whose single output is ``embedding``. The exporter's warnings and progress prints are silenced.

    Args:
        model: the module, already on CPU and in eval mode.
        args: positional example inputs to trace with.
        path: the ``.onnx`` file to write (its folder is created).
        kwargs: keyword example inputs to trace with.
        dynamic_shapes: the dynamic dimensions of the inputs (``torch.export.Dim``), in input order.
        opset: ONNX opset version.
        input_names: the ONNX names of the inputs, in order.

    Returns:
        ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings(), redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            model,
            args,
            kwargs=kwargs,
            dynamo=True,
            dynamic_shapes=dynamic_shapes,
            opset_version=opset,
            input_names=list(input_names),
            output_names=[OUTPUT_NAME],
            external_data=False,
            verbose=False,
        )
        program.save(str(path), external_data=False)
    return path


def export_onnx(model: FormulaEncoder, path: Path, opset: int = DEFAULT_OPSET) -> Path:
    """Write the encoder (eval mode: running batch-norm and norm statistics) as ONNX.

    Inputs are the `engine.model.graph` arrays plus ``graph_sizes`` (nodes per equation); the node, edge and equation
    counts are dynamic dimensions. Uses the dynamo-based exporter (``torch.export``); neighbourhood sums become
    ``ScatterND(reduction="add")``.

    Args:
        model: the trained encoder (moved to CPU and put in eval mode for the export, then restored).
        path: the ``.onnx`` file to write.
        opset: ONNX opset version.

    Returns:
        ``path``.
    """
    was_training = model.training
    device = next(model.parameters()).device
    model = model.to("cpu").eval()
    inputs = graph_tensors(example_batch())
    nodes = torch.export.Dim("nodes", min=2)
    edges = torch.export.Dim("edges", min=1)
    graphs = torch.export.Dim("graphs", min=1)
    # in input order: the exporter pairs these with the inputs by position when it names the ONNX axes
    axes = {"edge_index": {1: edges}, "graph_sizes": {0: graphs}}
    dynamic = {name: axes.get(name, {0: nodes}) for name in GRAPH_INPUTS}
    path = save_dynamo_onnx(
        model, (), path, kwargs=inputs, dynamic_shapes=dynamic, opset=opset, input_names=GRAPH_INPUTS
    )
    model.to(device).train(was_training)
    return path
