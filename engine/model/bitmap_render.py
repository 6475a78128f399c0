"""MathML -> grayscale bitmaps for the ECML'19 bitmap CNN: MathJax's SVG rasterised by resvg, in one Node process.

Pfahler, Schill & Morik (ECML-PKDD 2019) embed formulas from their rendered images: a 333x32 crop of the centre of
each rendering. Our equations are stored as KaTeX MathML, so the renderer takes MathML: ``mathjax/render.js`` runs
MathJax 3 (npm ``mathjax-full``, pinned) to draw the formula as SVG paths (no fonts needed) and ``@resvg/resvg-js``
(pinned, prebuilt binaries from npm) to rasterise it; Python crops or pads the ink to ``height x width`` around the
image's centre, as the paper does.

One request is in flight at a time, so the per-formula time limit is exact: a renderer that takes longer is killed
and restarted and that formula fails with ``timeout``; one that dies fails the formula it was on with
``renderer-crash``. Malformed MathML fails with ``mathml-error``, nothing to draw with ``empty`` or ``blank``.
Failures are results (`RenderResult` with ``bitmap=None``), counted in `BitmapRenderer.failures`, never exceptions.

The Node-worker driver of ``engine/latex/worker.py`` is not reused: ``engine/model`` may not import ``engine/latex``
(the layering in ARCHITECTURE.md), and this one needs no macros, pipelining or worker pool.
"""

from __future__ import annotations

import base64
import binascii
import collections
import contextlib
import json
import os
import selectors
import shutil
import subprocess
import tempfile
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from eqsearch.engine.errors import EqsearchError

__all__ = [
    "BITMAP_HEIGHT",
    "BITMAP_WIDTH",
    "DEFAULT_RENDERER_DIR",
    "BitmapRenderer",
    "RenderConfig",
    "RenderResult",
    "RendererNotInstalledError",
    "center_crop",
    "pinned_versions",
]

#: The paper's input size: the centre 333 x 32 pixels of each rendering.
BITMAP_HEIGHT = 32
BITMAP_WIDTH = 333
DEFAULT_RENDERER_DIR = Path(__file__).resolve().parent / "mathjax"
INSTALL_HINT = "run 'make setup' (or 'npm ci' in {dir})"
#: Reasons a failed `RenderResult` can carry.
REASONS = ("empty", "too-long", "mathml-error", "render-error", "blank", "timeout", "renderer-crash")


class RendererNotInstalledError(EqsearchError):
    """Node.js or the pinned MathJax/resvg npm packages are missing."""


@dataclass(frozen=True)
class RenderConfig:
    """How formulas are rendered.

    Args:
        em_px: pixels per em (default 16: a fraction with a square root fills about 26 of the 32 rows).
        height: bitmap rows (default 32, the paper's).
        width: bitmap columns (default 333, the paper's).
        timeout_s: time limit per formula in seconds (default 5).
        start_timeout_s: how long the Node process may take to say it is ready (default 30).
        max_length: longest MathML accepted, in characters (default 200,000).
        node: the Node.js executable (default ``node``).
        renderer_dir: the folder holding ``render.js`` and ``node_modules`` (default: ``engine/model/mathjax``).
    """

    em_px: int = 16
    height: int = BITMAP_HEIGHT
    width: int = BITMAP_WIDTH
    timeout_s: float = 5.0
    start_timeout_s: float = 30.0
    max_length: int = 200_000
    node: str = "node"
    renderer_dir: Path = DEFAULT_RENDERER_DIR

    def __post_init__(self) -> None:
        if min(self.em_px, self.height, self.width, self.max_length) < 1:
            raise ValueError("RenderConfig sizes must be positive")
        if self.timeout_s <= 0 or self.start_timeout_s <= 0:
            raise ValueError("RenderConfig timeouts must be positive")
        object.__setattr__(self, "renderer_dir", Path(self.renderer_dir))

    def identity(self) -> dict[str, int]:
        """What decides the pixels, for a bundle's manifest (a model must be fed the bitmaps it was trained on)."""
        return {"em_px": self.em_px, "height": self.height, "width": self.width}


@dataclass(frozen=True)
class RenderResult:
    """One formula's bitmap, or why there is none.

    Attributes:
        bitmap: ``[height, width]`` uint8 ink (0 = paper, 255 = full ink), or None when failed.
        reason: a code from ``REASONS`` when failed, else None.
        message: a sentence saying what went wrong, else None.
        size: the full rendering's ``(height, width)`` in pixels before cropping (``(0, 0)`` when failed).
    """

    bitmap: np.ndarray | None
    reason: str | None = None
    message: str | None = None
    size: tuple[int, int] = (0, 0)


def center_crop(ink: np.ndarray, height: int = BITMAP_HEIGHT, width: int = BITMAP_WIDTH) -> np.ndarray:
    """The centre ``height x width`` of an image, padded with paper (zeros) where the image is smaller.

    Shapes: ``[h, w]`` -> ``[height, width]``, same dtype.
    """
    out = np.zeros((height, width), dtype=ink.dtype)
    h, w = ink.shape
    src_r, dst_r = _span(h, height)
    src_c, dst_c = _span(w, width)
    out[dst_r, dst_c] = ink[src_r, src_c]
    return out


def _span(have: int, want: int) -> tuple[slice, slice]:
    """Source and destination slices that centre ``have`` pixels in ``want``."""
    if have >= want:
        start = (have - want) // 2
        return slice(start, start + want), slice(0, want)
    start = (want - have) // 2
    return slice(0, have), slice(start, start + have)


def pinned_versions(renderer_dir: Path = DEFAULT_RENDERER_DIR) -> dict[str, str]:
    """The MathJax and resvg versions ``renderer_dir/package.json`` pins (``{"mathjax": ..., "resvg": ...}``): a
    bundle records them, because other versions may draw other pixels.

    Raises:
        RendererNotInstalledError: the folder has no readable package.json.
    """
    try:
        pinned = json.loads((renderer_dir / "package.json").read_text(encoding="utf-8"))["dependencies"]
        return {"mathjax": str(pinned["mathjax-full"]), "resvg": str(pinned["@resvg/resvg-js"])}
    except (OSError, ValueError, KeyError):
        raise RendererNotInstalledError(
            f"{renderer_dir} is not eqsearch's renderer folder (no package.json pinning mathjax-full and resvg)"
        ) from None


def check_renderer_installed(node: str = "node", renderer_dir: Path = DEFAULT_RENDERER_DIR) -> str:
    """The Node.js executable's path, after checking that ``renderer_dir`` holds the pinned packages.

    Raises:
        RendererNotInstalledError: Node.js is missing, or an npm package is missing or not the pinned version.
    """
    path = shutil.which(node)
    if path is None:
        raise RendererNotInstalledError(
            f"Node.js was not found (looked for {node!r}); the bitmap encoder renders formulas with MathJax in Node",
            hint="install Node.js 18 or newer (e.g. 'apt-get install nodejs npm'), then "
            + INSTALL_HINT.format(dir=renderer_dir),
        )
    try:
        pinned = json.loads((renderer_dir / "package.json").read_text(encoding="utf-8"))["dependencies"]
    except (OSError, ValueError, KeyError):
        raise RendererNotInstalledError(f"{renderer_dir} is not eqsearch's renderer folder (no package.json)") from None
    for package, version in pinned.items():
        try:
            installed = json.loads(
                (renderer_dir / "node_modules" / package / "package.json").read_text(encoding="utf-8")
            )["version"]
        except (OSError, ValueError, KeyError):
            installed = None
        if installed != version:
            found = "is not installed" if installed is None else f"{installed} is installed"
            raise RendererNotInstalledError(
                f"{package} {found} in {renderer_dir}, eqsearch pins {version}",
                hint=INSTALL_HINT.format(dir=renderer_dir),
            )
    return path


def _kill(process: subprocess.Popen[bytes] | None) -> None:  # at garbage collection, if close() was not called
    if process is not None:
        with contextlib.suppress(OSError):
            process.kill()


class BitmapRenderer:
    """Renders MathML to fixed-size grayscale bitmaps in a long-lived Node process (see the module docstring).

    Args:
        config: sizes, time limits and paths (`RenderConfig`); defaults when None.

    Use as a context manager, or call `close` when done. The process starts on the first formula.
    Not meant to be shared by threads.
    """

    def __init__(self, config: RenderConfig | None = None) -> None:
        self.config = config or RenderConfig()
        self.failures: collections.Counter[str] = collections.Counter()
        self.rendered = 0
        self.restarts = 0
        self.versions: dict[str, str] = {}
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: tempfile._TemporaryFileWrapper[bytes] | None = None
        self._buffer = b""
        self._next_id = 0
        self._finalizer: weakref.finalize | None = None

    def __enter__(self) -> BitmapRenderer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the Node process (it restarts on the next formula)."""
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            assert process.stdin is not None
            process.stdin.close()
        try:
            process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        self._close_files(process)

    def render(self, mathml: str) -> RenderResult:
        """One formula; see `render_many`."""
        return self.render_many([mathml])[0]

    def render_many(self, mathml: Sequence[str]) -> list[RenderResult]:
        """Render formulas, in order.

        Returns:
            One `RenderResult` per formula; failures are results (and counted in ``failures``), never exceptions.

        Raises:
            RendererNotInstalledError: Node.js or the npm packages are missing.
            EqsearchError: the Node process cannot start at all.
        """
        results = []
        for text in mathml:
            result = self._render_one(text)
            if result.bitmap is None:
                self.failures[result.reason or "render-error"] += 1
            else:
                self.rendered += 1
            results.append(result)
        return results

    def render_batch(self, mathml: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Render formulas into one array, failures as blank bitmaps.

        Shapes: returns ``([n, height, width] uint8, [n] bool: rendered)``.
        """
        config = self.config
        out = np.zeros((len(mathml), config.height, config.width), dtype=np.uint8)
        ok = np.zeros(len(mathml), dtype=bool)
        for i, result in enumerate(self.render_many(mathml)):
            if result.bitmap is not None:
                out[i] = result.bitmap
                ok[i] = True
        return out, ok

    def _render_one(self, mathml: str) -> RenderResult:
        if not mathml or not mathml.strip():
            return RenderResult(None, "empty", "no MathML to render")
        if len(mathml) > self.config.max_length:
            return RenderResult(
                None, "too-long", f"the MathML has {len(mathml):,} characters; the limit is {self.config.max_length:,}"
            )
        if self._process is None or self._process.poll() is not None:
            self._start()
        self._next_id += 1
        request = json.dumps({"id": self._next_id, "mathml": mathml}, ensure_ascii=True).encode("ascii") + b"\n"
        try:
            self._write(request)
            line = self._read_line(self.config.timeout_s)
        except OSError:
            line = None
        if line is None:
            crashed = self._process is None or self._process.poll() is not None
            detail = self._stderr_tail()
            self._restart()
            if crashed:
                return RenderResult(
                    None, "renderer-crash", "the renderer died on this formula" + (f" ({detail})" if detail else "")
                )
            return RenderResult(
                None, "timeout", f"rendering took longer than {self.config.timeout_s:g} s; the renderer was restarted"
            )
        answer = json.loads(line)
        if answer.get("id") != self._next_id:  # cannot happen: one request in flight
            self._restart()
            return RenderResult(None, "render-error", f"the renderer answered request {answer.get('id')}")
        if "error" in answer:
            error = answer["error"]
            return RenderResult(None, str(error.get("kind", "render-error")), str(error.get("message", ""))[:300])
        try:
            height, width = int(answer["height"]), int(answer["width"])
            ink = np.frombuffer(base64.b64decode(answer["ink"]), dtype=np.uint8).reshape(height, width)
        except (KeyError, ValueError, binascii.Error):
            return RenderResult(None, "render-error", "the renderer's answer has no readable pixels")
        if not ink.any():
            return RenderResult(None, "blank", "the formula draws nothing", (height, width))
        return RenderResult(center_crop(ink, self.config.height, self.config.width), size=(height, width))

    def _start(self) -> None:
        config = self.config
        node = check_renderer_installed(config.node, config.renderer_dir)
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 -- lives as long as the process
        self._process = subprocess.Popen(
            [node, str(config.renderer_dir / "render.js"), json.dumps({"em": config.em_px})],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=config.renderer_dir,
            bufsize=0,
        )
        if self._finalizer is not None:
            self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _kill, self._process)
        self._buffer = b""
        line = self._read_line(config.start_timeout_s)
        if line is None:
            detail = self._stderr_tail()
            self._kill_process()
            raise RendererNotInstalledError(
                "the bitmap renderer did not start"
                + (f": {detail}" if detail else f" within {config.start_timeout_s:g} s"),
                hint=INSTALL_HINT.format(dir=config.renderer_dir),
            )
        ready = json.loads(line)
        self.versions = {"mathjax": str(ready.get("mathjax", "")), "resvg": str(ready.get("resvg", ""))}

    def _restart(self) -> None:
        self._kill_process()
        self.restarts += 1

    def _kill_process(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            with contextlib.suppress(OSError):
                process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
            self._close_files(process)

    def _close_files(self, process: subprocess.Popen[bytes]) -> None:
        for stream in (process.stdin, process.stdout, self._stderr):
            with contextlib.suppress(OSError, ValueError):
                if stream is not None:
                    stream.close()
        self._stderr = None

    def _write(self, payload: bytes) -> None:
        assert self._process is not None and self._process.stdin is not None
        view = memoryview(payload)
        fd = self._process.stdin.fileno()
        while view:
            view = view[os.write(fd, view) :]

    def _read_line(self, timeout: float) -> bytes | None:
        """The next line the process writes, or None on timeout or end of file."""
        assert self._process is not None and self._process.stdout is not None
        fd = self._process.stdout.fileno()
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    return None
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return None
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def _stderr_tail(self) -> str:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            assert self._stderr is not None
            self._stderr.seek(0)
            lines = [
                line
                for line in self._stderr.read()[-1500:].decode("utf-8", "replace").splitlines()
                if line.strip() and "Node.js v" not in line
            ]
            return lines[-1].strip()[:200] if lines else ""
        return ""
