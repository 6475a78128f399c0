"""Writing a model bundle (model.onnx + vocabulary.json + manifest.json) and proving it matches torch.

The manifest is built and written by `engine.model.bundle` (`make_manifest`, `write_manifest`), the module that
reads it back, so the writer here and the runtime's reader share one schema. The steps every bundle writer takes
(`bundle_destination`, `staged_bundle`, `write_export_manifest`, `ExportParity.record`) serve the bitmap CNN's writer
(`export.bitmap`) too.
"""

from __future__ import annotations

import platform
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.model.bundle import (
    MODEL_NAME,
    VOCABULARY_NAME,
    make_manifest,
    read_manifest,
    vocabulary_sizes,
    write_manifest,
)
from eqsearch.engine.model.graph import GraphArrays, concatenate_graphs
from eqsearch.engine.model.vocabulary import Vocabulary
from eqsearch.export.onnx_export import DEFAULT_OPSET, OUTPUT_NAME, export_onnx
from eqsearch.training.evaluate import embed_graphs
from eqsearch.training.model import FormulaEncoder

PARITY_TOLERANCE = 1e-4


@dataclass(frozen=True)
class ExportParity:
    """Largest absolute difference between torch's and onnxruntime's vectors for the same inputs: what a parity
    check found, whatever it compared (`ParityReport`: equations; `export.bitmap.BitmapParityReport`: bitmaps)."""

    max_abs_diff: float
    tolerance: float

    @property
    def ok(self) -> bool:
        return self.max_abs_diff <= self.tolerance

    @property
    def checked(self) -> tuple[str, int]:
        """What was compared, and how many: ``("equations", 44)``."""
        raise NotImplementedError

    def record(self, bundle: Path, manifest: dict[str, Any]) -> None:
        """Write the figures into the staged bundle's manifest (``parity``).

        Raises:
            EqsearchError: the difference is over the tolerance: the export is not faithful.
        """
        unit, count = self.checked
        if not self.ok:
            raise EqsearchError(
                f"torch and onnxruntime disagree by {self.max_abs_diff:.2e} (> {self.tolerance}) on "
                f"{count} {unit}: the export is not faithful"
            )
        manifest["parity"] = {"max_abs_diff": self.max_abs_diff, unit: count}
        write_manifest(bundle, manifest)


@dataclass(frozen=True)
class ParityReport(ExportParity):
    """The parity check of a graph network's bundle over featurized equations, in ``batches`` onnxruntime calls."""

    equations: int
    batches: int

    @property
    def checked(self) -> tuple[str, int]:
        return "equations", self.equations


def check_parity(
    model: FormulaEncoder,
    bundle: Path,
    graphs: Sequence[GraphArrays],
    batch_sizes: Sequence[int] = (1, 7, 64),
    tolerance: float = PARITY_TOLERANCE,
) -> ParityReport:
    """Encode the same featurized equations with torch (eval mode) and with the bundle through onnxruntime.

    Batches of several sizes are compared, so a dynamic dimension that silently specialised would show.
    """
    from eqsearch.engine.model.encoder import GraphEncoder

    encoder = GraphEncoder(read_manifest(bundle), prefer_gpu=False)
    worst = 0.0
    batches = 0
    model = model.to("cpu").eval()
    for size in batch_sizes:
        for start in range(0, len(graphs), size):
            chunk = list(graphs[start : start + size])
            ours = embed_graphs(model, chunk, batch_size=len(chunk))
            theirs = encoder.run_batch(concatenate_graphs(chunk))
            worst = max(worst, float(np.abs(ours - theirs).max()) if len(chunk) else 0.0)
            batches += 1
    return ParityReport(max_abs_diff=worst, tolerance=tolerance, equations=len(graphs), batches=batches)


def bundle_destination(out_dir: Path, overwrite: bool) -> Path:
    """``out_dir`` as a path, checked to be free (or to be replaced).

    Raises:
        EqsearchError: ``out_dir`` exists without ``overwrite``.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and not overwrite:
        raise EqsearchError(f"{out_dir} already exists", hint="pass --overwrite to replace it")
    return out_dir


@contextmanager
def staged_bundle(out_dir: Path) -> Iterator[Path]:
    """A directory beside ``out_dir`` to assemble a bundle in: when the block ends without error it replaces
    ``out_dir``; when it raises, nothing is left behind."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir.parent, prefix=".bundle-") as tmp:
        staging = Path(tmp) / "bundle"
        staging.mkdir()
        yield staging
        if out_dir.exists():
            shutil.rmtree(out_dir)
        shutil.move(str(staging), str(out_dir))


def write_export_manifest(
    staging: Path,
    *,
    encoder: str,
    model_config: dict[str, Any],
    embedding_dim: int,
    opset: int,
    similarity: str,
    vocabulary: Vocabulary | None,
    training: dict[str, Any],
    data_summary: dict[str, Any] | None,
    evaluation: dict[str, Any] | None,
    renderer: dict[str, Any] | None = None,
    features: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the manifest of a freshly exported bundle (`engine.model.bundle.make_manifest`) with what made it: the
    model's config, the torch, opset and Python versions, the training run, its data and its held-out figures; then
    read it back, which checks it.

    Returns:
        The manifest written.

    Raises:
        BundleError: the manifest does not check (`engine.model.bundle.read_manifest`).
    """
    from eqsearch import __version__

    manifest = make_manifest(
        staging,
        encoder=encoder,
        embedding_dim=embedding_dim,
        similarity=similarity,
        opset=opset,
        output=OUTPUT_NAME,
        vocabulary=vocabulary,
        eqsearch_version=__version__,
        renderer=renderer,
        features=features,
        provenance={
            "model_config": model_config,
            "exported_with": {
                "torch": torch.__version__.split("+")[0],
                "onnx_opset": opset,
                "python": platform.python_version(),
            },
            "training": training,
            "data": data_summary or {},
            "evaluation": evaluation or {},
        },
    )
    write_manifest(staging, manifest)
    read_manifest(staging)
    return manifest


def _portable(training_config: dict[str, Any]) -> dict[str, Any]:
    if not training_config.get("corpus"):
        return dict(training_config)
    return {**training_config, "corpus": Path(str(training_config["corpus"])).name}


def write_bundle(
    model: FormulaEncoder,
    vocabulary: Vocabulary,
    out_dir: Path,
    *,
    training_config: dict[str, Any] | None = None,
    data_summary: dict[str, Any] | None = None,
    evaluation: dict[str, Any] | None = None,
    parity_graphs: Sequence[GraphArrays] = (),
    opset: int = DEFAULT_OPSET,
    similarity: str = "cosine",
    overwrite: bool = False,
) -> Path:
    """Export the model and write a complete, checked bundle directory.

    The bundle is assembled in a temporary directory, checked (manifest, checksums and, given ``parity_graphs``,
    torch/onnxruntime parity within 1e-4), and only then moved into place.

    Args:
        model: the trained encoder.
        vocabulary: the vocabulary it was trained with.
        out_dir: the bundle directory to create.
        training_config: recorded in the manifest; its ``corpus`` path is reduced to the file name (a path on the
            training machine means nothing elsewhere; the data summary says what the corpus held).
        data_summary: recorded in the manifest.
        evaluation: held-out figures recorded in the manifest.
        parity_graphs: featurized equations for the parity check (none: skipped).
        opset: ONNX opset.
        similarity: how the vectors are to be compared when searching. The model trains on inner products of
            soft-normalised vectors, but cosine ranks better on every evaluation of the shipped model (held-out
            ranking 91.4 vs 91.3, labelled-set MAP 34.3 vs 33.2, §6.3 study P@10 0.29 vs 0.13: the inner product
            lets a few long vectors crowd the top of every list; benchmarks/encoder.md), and it is cheaper to search
            (docs/decisions/equation-index-layout.md). ``max_inner_product`` stays available.
        overwrite: replace an existing ``out_dir``.

    Raises:
        EqsearchError: ``out_dir`` exists without ``overwrite``, or the parity check fails.
    """
    out_dir = bundle_destination(out_dir, overwrite)
    config = model.config
    sizes = vocabulary_sizes(vocabulary)
    if (config.n_tags, config.n_attrs, config.n_chars) != (vocabulary.n_tags, vocabulary.n_attrs, vocabulary.n_chars):
        raise EqsearchError(f"the model was built for vocabulary sizes {config.to_dict()}, the vocabulary has {sizes}")
    with staged_bundle(out_dir) as staging:
        export_onnx(model, staging / MODEL_NAME, opset=opset)
        vocabulary.save(staging / VOCABULARY_NAME)
        manifest = write_export_manifest(
            staging,
            encoder="kdd20-gcn",
            model_config=config.to_dict(),
            embedding_dim=config.embedding_dim,
            opset=opset,
            similarity=similarity,
            vocabulary=vocabulary,
            training=_portable(training_config or {}),
            data_summary=data_summary,
            evaluation=evaluation,
        )
        if parity_graphs:
            check_parity(model, staging, parity_graphs).record(staging, manifest)
    return out_dir
