"""The structure-bag encoder -> a ``structure-bag`` model bundle (``model.onnx`` + ``manifest.json``), checked
against torch.

The term table is stored in float16 (half the bundle's size: 65,536 x 64 slots are 8 MB instead of 16) and widened to
float32 after the lookup; everything else is float32. The torch module that is exported (`ExportedStructureBag`)
computes exactly what the ONNX model does, so the parity check compares like with like; how far the float16 table
moves the vectors from the trained float32 model is recorded beside it (``parity.float16_max_abs_diff``). The
manifest's ``features`` say how the runtime (`engine.model.structure_bag`) must hash a formula's terms; a model with a
query head (`training.structure_model.QueryHead`) also gets ``query-heads.npy``: its ``structure`` part the identity
(the stored cosine), its ``graph`` part the learned matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from eqsearch.engine.checksums import sha256_file
from eqsearch.engine.model.bundle import MODEL_NAME, STRUCTURE_BAG_INPUTS, read_manifest, write_manifest
from eqsearch.engine.model.structure_bag import (
    KIND,
    QUERY_HEADS_NAME,
    StructureFeatures,
    TermBatch,
    featurize_structure_bag,
)
from eqsearch.export.bundle import (
    PARITY_TOLERANCE,
    ExportParity,
    bundle_destination,
    staged_bundle,
    write_export_manifest,
)
from eqsearch.export.onnx_export import save_dynamo_onnx
from eqsearch.training.structure_model import StructureBagModel
from torch import Tensor, nn

DEFAULT_OPSET = 18


class ExportedStructureBag(nn.Module):
    """The graph that is exported: the model's layers with its term table in float16, sums by ``index_add``."""

    def __init__(self, model: StructureBagModel) -> None:
        super().__init__()
        self.register_buffer("table", model.table.weight.detach().to("cpu", torch.float16).clone())
        self.model = model

    def forward(self, ids: Tensor, weights: Tensor, graph: Tensor, graph_sizes: Tensor) -> Tensor:
        rows = self.table.index_select(0, ids).to(torch.float32) * weights.unsqueeze(1)
        count = graph_sizes.shape[0]
        sums = rows.new_zeros((count, rows.shape[1])).index_add(0, graph, rows)
        total = weights.new_zeros((count,)).index_add(0, graph, weights)
        return self.model.head(sums / torch.sqrt(total.clamp(min=1.0)).unsqueeze(1))


@dataclass(frozen=True)
class StructureBagParity(ExportParity):
    """The parity check of a structure-bag bundle over formulas."""

    equations: int
    float16_max_abs_diff: float

    @property
    def checked(self) -> tuple[str, int]:
        return "equations", self.equations


def _example() -> dict[str, Tensor]:
    sizes = torch.tensor([3, 5, 4], dtype=torch.int64)
    n = int(sizes.sum())
    return {
        "ids": torch.arange(n, dtype=torch.int64) * 7,
        "weights": torch.ones(n, dtype=torch.float32),
        "graph": torch.repeat_interleave(torch.arange(3, dtype=torch.int64), sizes),
        "graph_sizes": sizes,
    }


def export_structure_bag_onnx(model: StructureBagModel, path: Path, opset: int = DEFAULT_OPSET) -> Path:
    """Write the encoder as ONNX with dynamic numbers of terms and formulas; returns ``path``."""
    model = model.to("cpu").eval()
    terms = torch.export.Dim("terms", min=2)
    graphs = torch.export.Dim("graphs", min=1)
    dynamic = {"ids": {0: terms}, "weights": {0: terms}, "graph": {0: terms}, "graph_sizes": {0: graphs}}
    return save_dynamo_onnx(
        ExportedStructureBag(model).eval(),
        (),
        path,
        kwargs=_example(),
        dynamic_shapes=dynamic,
        opset=opset,
        input_names=STRUCTURE_BAG_INPUTS,
    )


def _feeds(batch: TermBatch) -> dict[str, np.ndarray]:
    return {"ids": batch.ids, "weights": batch.weights, "graph": batch.graph, "graph_sizes": batch.graph_sizes}


def check_structure_bag_parity(
    model: StructureBagModel,
    bundle: Path,
    mathml: Sequence[str],
    features: StructureFeatures,
    batch_sizes: tuple[int, ...] = (1, 7, 64),
) -> StructureBagParity:
    """Encode the same formulas with torch and with the bundle's ONNX model through onnxruntime (one intra-op
    thread, as served), in batches of several sizes; also how far the float16 table moves them from float32."""
    import onnxruntime as ort

    manifest = read_manifest(bundle)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(manifest.model_path), sess_options=options, providers=["CPUExecutionProvider"])
    model = model.to("cpu").eval()
    exported = ExportedStructureBag(model).eval()
    worst = half = 0.0
    with torch.no_grad():
        for size in batch_sizes:
            for start in range(0, len(mathml), size):
                batch = featurize_structure_bag(mathml[start : start + size], features)
                inputs = {k: torch.from_numpy(v) for k, v in _feeds(batch).items()}
                ours = exported(**inputs).numpy()
                full = model(**inputs).numpy()
                (theirs,) = session.run([manifest.output], _feeds(batch))
                worst = max(worst, float(np.abs(ours - theirs).max()))
                half = max(half, float(np.abs(full - theirs).max()))
    return StructureBagParity(
        max_abs_diff=worst, tolerance=PARITY_TOLERANCE, equations=len(mathml), float16_max_abs_diff=half
    )


#: The parts a model's query head serves (`engine.model.structure_bag`): the stored cosine and the learned matrix.
HEAD_PARTS = ("structure", "graph")


def write_query_heads(model: StructureBagModel, bundle: Path, manifest: dict[str, Any]) -> None:
    """Write a model's query head as ``query-heads.npy`` (``HEAD_PARTS``: the identity, then its matrix) and its
    manifest entry; nothing for a model without one."""
    if model.query_head is None:
        return
    dim = model.config.embedding_dim
    matrix = model.query_head.matrix.detach().to("cpu", torch.float32).numpy()
    np.save(bundle / QUERY_HEADS_NAME, np.stack([np.eye(dim, dtype=np.float32), matrix]))
    manifest["query_heads"] = {
        "parts": list(HEAD_PARTS),
        "path": QUERY_HEADS_NAME,
        "sha256": sha256_file(bundle / QUERY_HEADS_NAME),
    }
    write_manifest(bundle, manifest)


def write_structure_bag_bundle(
    model: StructureBagModel,
    out_dir: Path,
    *,
    features: StructureFeatures,
    training: dict[str, Any] | None = None,
    data_summary: dict[str, Any] | None = None,
    evaluation: dict[str, Any] | None = None,
    parity_mathml: Sequence[str] = (),
    opset: int = DEFAULT_OPSET,
    overwrite: bool = False,
) -> Path:
    """Export the encoder and write a complete, checked ``structure-bag`` bundle directory (cosine similarity: the
    vectors are unit length). Assembled in a temporary directory, checked (manifest, checksums and, given
    ``parity_mathml``, torch vs onnxruntime within 1e-4), then moved into place.

    Raises:
        EqsearchError: ``out_dir`` exists without ``overwrite``, or the parity check fails.
    """
    out_dir = bundle_destination(out_dir, overwrite)
    if model.config.buckets != features.buckets:
        raise ValueError(f"the model has {model.config.buckets} slots, the features {features.buckets}")
    with staged_bundle(out_dir) as staging:
        export_structure_bag_onnx(model, staging / MODEL_NAME, opset=opset)
        manifest = write_export_manifest(
            staging,
            encoder=KIND,
            model_config=model.config.to_dict(),
            embedding_dim=model.config.embedding_dim,
            opset=opset,
            similarity="cosine",
            vocabulary=None,
            training=training or {},
            data_summary=data_summary,
            evaluation=evaluation,
            features=features.to_json(),
        )
        write_query_heads(model, staging, manifest)
        if parity_mathml:
            parity = check_structure_bag_parity(model, staging, parity_mathml, features)
            manifest.setdefault("parity_float16", {})["max_abs_diff"] = parity.float16_max_abs_diff
            parity.record(staging, manifest)
    return out_dir
