"""The ECML'19 bitmap CNN at run time: MathML -> rendered bitmap (MathJax + resvg in Node) -> onnxruntime -> vector.

The loader of bundles of kind ``ecml19-cnn`` (registered in `engine.model.encoder.ENCODER_LOADERS`). The bundle's
manifest says how its formulas were rendered (pixels per em, bitmap size, MathJax and resvg versions): the encoder
renders with exactly those settings and refuses a renderer whose pinned versions differ, because the CNN is only
valid on the pixels it was trained on. No torch.

A formula that does not render (malformed MathML, a timeout, nothing drawn) has no vector: `BitmapEncoder.encode`
raises `BitmapRenderError` naming it (as the graph encoder raises `MathMLError`), so that an ingest job encodes that
batch one by one and counts the formula under ``encode:BitmapRenderError``; `BitmapEncoder.encode_rendered` gives
zero rows and a mask instead, for callers that want every row.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.model.bitmap_render import (
    BitmapRenderer,
    RenderConfig,
    RendererNotInstalledError,
    RenderResult,
    pinned_versions,
)
from eqsearch.engine.model.bundle import BundleError, BundleManifest, ManifestEncoder

__all__ = ["BitmapEncoder", "BitmapRenderError"]


class BitmapRenderError(EqsearchError):
    """A formula could not be rendered, so the bitmap encoder has no vector for it."""


class BitmapEncoder(ManifestEncoder):
    """The bitmap CNN of an ``ecml19-cnn`` bundle, run by onnxruntime on bitmaps from `BitmapRenderer`.

    Args:
        manifest: a checked manifest (see `engine.model.bundle.read_manifest`).
        batch_size: bitmaps per onnxruntime call.
        prefer_gpu: use the CUDA provider when onnxruntime-gpu is installed (where ``provider`` is not given).
        provider: the execution provider setting (`engine.model.encoder.ONNX_PROVIDERS`).
        render_timeout_s: time limit for rendering one formula.
        node: the Node.js executable.

    Raises:
        BundleError: the ONNX model does not load or does not match the manifest, or the installed renderer is not
            the one the bundle was trained with.
    """

    def __init__(
        self,
        manifest: BundleManifest,
        *,
        batch_size: int = 64,
        prefer_gpu: bool = True,
        provider: str | None = None,
        render_timeout_s: float = 5.0,
        node: str = "node",
    ) -> None:
        from eqsearch.engine.model.encoder import open_bundle_session

        self.manifest = manifest
        self.batch_size = batch_size
        settings = manifest.raw["renderer"]
        self.render_config = RenderConfig(
            em_px=int(settings["em_px"]),
            height=int(settings["height"]),
            width=int(settings["width"]),
            timeout_s=render_timeout_s,
            node=node,
        )
        self._check_renderer(settings)
        self.renderer = BitmapRenderer(self.render_config)
        self._lock = threading.Lock()  # one Node process: searches from several threads take turns
        self._retry: dict[str, RenderResult] = {}  # the renderings of the last batch that failed
        self.session = open_bundle_session(manifest, prefer_gpu=prefer_gpu, provider=provider)

    def _check_renderer(self, settings: dict[str, Any]) -> None:
        try:
            ours = pinned_versions(self.render_config.renderer_dir)
        except RendererNotInstalledError as error:
            raise BundleError(error.message, hint="the bitmap renderer is not part of this install") from None
        theirs = {"mathjax": settings.get("mathjax"), "resvg": settings.get("resvg")}
        if ours != theirs:
            raise BundleError(
                f"{self.manifest.path}: the bundle was trained on bitmaps of {theirs}, this eqsearch renders with "
                f"{ours}",
                hint="re-export the bundle with this eqsearch ('eqsearch export bitmap-cnn')",
            )

    @property
    def failures(self) -> dict[str, int]:
        """Formulas that did not render since the encoder was made, by reason."""
        return dict(self.renderer.failures)

    def close(self) -> None:
        """Stop the renderer's Node process (it restarts on the next formula)."""
        self.renderer.close()

    def run_bitmaps(self, bitmaps: np.ndarray) -> np.ndarray:
        """The vectors of rendered bitmaps. Shapes: ``[n, height, width]`` uint8 -> ``[n, dim]`` float32."""
        out = [
            self.session.run(
                [self.manifest.output], {"bitmaps": np.ascontiguousarray(bitmaps[i : i + self.batch_size])}
            )[0]
            for i in range(0, len(bitmaps), self.batch_size)
        ]
        return np.concatenate(out).astype(np.float32) if out else np.zeros((0, self.dim), dtype=np.float32)

    def encode_rendered(self, mathml: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Vectors of the formulas that render, zero rows for the others.

        Shapes: returns ``([len(mathml), dim] float32, [len(mathml)] bool: rendered)``.
        """
        with self._lock:
            bitmaps, ok = self.renderer.render_batch(mathml)
        vectors = np.zeros((len(mathml), self.dim), dtype=np.float32)
        if ok.any():
            vectors[ok] = self.run_bitmaps(bitmaps[ok])
        return vectors, ok

    def encode(self, mathml: Sequence[str]) -> np.ndarray:
        """Vectors of MathML formulas, in order.

        Raises:
            BitmapRenderError: naming the index (in ``mathml``) of the first formula that did not render, and why.
        """
        with self._lock:
            todo = [m for m in mathml if m not in self._retry]
            if todo:  # a new batch: the retries of the last one are over
                self._retry = {}
            rendered = dict(zip(todo, self.renderer.render_many(todo), strict=True))
            results = [rendered[m] if m in rendered else self._retry[m] for m in mathml]
            failed = next((i for i, r in enumerate(results) if r.bitmap is None), None)
            if failed is not None:
                # the caller (an ingest job) retries the batch one formula at a time: keep what was rendered, so
                # that nothing is rendered (or counted as failed) twice
                self._retry = dict(zip(mathml, results, strict=True))
        if failed is not None:
            result = results[failed]
            raise BitmapRenderError(f"formula {failed} did not render ({result.reason}): {result.message}")
        if not results:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.run_bitmaps(np.stack([r.bitmap for r in results if r.bitmap is not None]))
