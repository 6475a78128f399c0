"""The ECML'19 bitmap CNN -> an ``ecml19-cnn`` model bundle (``model.onnx`` + ``manifest.json``), checked against torch.

The bundle has no vocabulary; its manifest records the render settings the model was trained with (``renderer``),
which the runtime loader (`engine.model.bitmap_encoder`) renders with. The manifest is built by
`engine.model.bundle.make_manifest` (through `export.bundle.write_export_manifest`), the schema the loader reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.model.bitmap_render import RenderConfig
from eqsearch.engine.model.bundle import BITMAP_INPUTS, MODEL_NAME, read_manifest
from eqsearch.export.bundle import (
    PARITY_TOLERANCE,
    ExportParity,
    bundle_destination,
    staged_bundle,
    write_export_manifest,
)
from eqsearch.export.onnx_export import save_dynamo_onnx
from eqsearch.training.bitmap_model import BitmapCNN

BITMAP_KIND = "ecml19-cnn"
DEFAULT_OPSET = 18


@dataclass(frozen=True)
class BitmapParityReport(ExportParity):
    """The parity check of a bitmap CNN's bundle over rendered bitmaps."""

    bitmaps: int

    @property
    def checked(self) -> tuple[str, int]:
        return "bitmaps", self.bitmaps


def export_bitmap_onnx(model: BitmapCNN, path: Path, opset: int = DEFAULT_OPSET) -> Path:
    """Write the CNN (eval mode) as ONNX: input ``bitmaps`` ``[n, height, width]`` uint8, output ``embedding``
    ``[n, d]`` float32, with a dynamic batch dimension.

    Returns:
        ``path``.
    """
    was_training = model.training
    model = model.to("cpu").eval()
    config = model.config
    example = torch.zeros((3, config.height, config.width), dtype=torch.uint8)
    example[:, 10:20, 100:200] = 255
    batch = torch.export.Dim("batch", min=1)
    path = save_dynamo_onnx(
        model, (example,), path, dynamic_shapes=({0: batch},), opset=opset, input_names=BITMAP_INPUTS
    )
    model.train(was_training)
    return path


def check_bitmap_parity(
    model: BitmapCNN, bundle: Path, bitmaps: np.ndarray, batch_sizes: tuple[int, ...] = (1, 7, 64)
) -> BitmapParityReport:
    """Encode the same bitmaps with torch (eval mode) and with the bundle's ONNX model through onnxruntime, in
    batches of several sizes (a dynamic dimension that silently specialised would show).

    Shapes:
        bitmaps: ``[n, height, width]`` uint8.
    """
    import onnxruntime as ort

    manifest = read_manifest(bundle)
    session = ort.InferenceSession(str(manifest.model_path), providers=["CPUExecutionProvider"])
    model = model.to("cpu").eval()
    worst = 0.0
    with torch.no_grad():
        for size in batch_sizes:
            for start in range(0, len(bitmaps), size):
                chunk = np.ascontiguousarray(bitmaps[start : start + size])
                ours = model(torch.from_numpy(chunk)).numpy()
                (theirs,) = session.run([manifest.output], {BITMAP_INPUTS[0]: chunk})
                worst = max(worst, float(np.abs(ours - theirs).max()))
    return BitmapParityReport(max_abs_diff=worst, tolerance=PARITY_TOLERANCE, bitmaps=len(bitmaps))


def write_bitmap_bundle(
    model: BitmapCNN,
    out_dir: Path,
    *,
    render_config: RenderConfig,
    renderer_versions: dict[str, str],
    training: dict[str, Any] | None = None,
    data_summary: dict[str, Any] | None = None,
    evaluation: dict[str, Any] | None = None,
    parity_bitmaps: np.ndarray | None = None,
    opset: int = DEFAULT_OPSET,
    similarity: str = "cosine",
    overwrite: bool = False,
) -> Path:
    """Export the CNN and write a complete, checked ``ecml19-cnn`` bundle directory.

    Assembled in a temporary directory, checked (manifest, checksums and, given ``parity_bitmaps``, torch vs
    onnxruntime within 1e-4), then moved into place.

    Args:
        model: the trained CNN.
        out_dir: the bundle directory to create.
        render_config: the render settings the model was trained with.
        renderer_versions: ``{"mathjax": ..., "resvg": ...}``, the pinned npm versions that rendered the training
            bitmaps.
        training: the run's config and costs, recorded in the manifest (its corpus path reduced to the file name).
        data_summary: what the corpus held, recorded in the manifest.
        evaluation: held-out figures, recorded in the manifest.
        parity_bitmaps: ``[n, height, width]`` uint8 bitmaps for the parity check (None: skipped).
        opset: ONNX opset.
        similarity: how searches compare the vectors (the vectors are unit length: cosine = inner product).
        overwrite: replace an existing ``out_dir``.

    Raises:
        EqsearchError: ``out_dir`` exists without ``overwrite``, or the parity check fails.
    """
    out_dir = bundle_destination(out_dir, overwrite)
    config = model.config
    if (config.height, config.width) != (render_config.height, render_config.width):
        raise EqsearchError(
            f"the model takes {config.height}x{config.width} bitmaps, the renderer makes "
            f"{render_config.height}x{render_config.width}"
        )
    training = dict(training or {})
    if isinstance(training.get("config"), dict) and training["config"].get("corpus"):
        training["config"] = {**training["config"], "corpus": Path(str(training["config"]["corpus"])).name}
        training["config"].pop("run_dir", None)
    with staged_bundle(out_dir) as staging:
        export_bitmap_onnx(model, staging / MODEL_NAME, opset=opset)
        manifest = write_export_manifest(
            staging,
            encoder=BITMAP_KIND,
            model_config=config.to_dict(),
            embedding_dim=config.embedding_dim,
            opset=opset,
            similarity=similarity,
            vocabulary=None,
            training=training,
            data_summary=data_summary,
            evaluation=evaluation,
            renderer={**render_config.identity(), **renderer_versions},
        )
        if parity_bitmaps is not None and len(parity_bitmaps):
            check_bitmap_parity(model, staging, parity_bitmaps).record(staging, manifest)
    return out_dir
