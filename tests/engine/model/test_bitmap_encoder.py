"""The ``ecml19-cnn`` bundle kind: its manifest schema beside the graph network's, and its torch-free loader."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from eqsearch.engine.checksums import sha256_file
from eqsearch.engine.model import (
    BundleError,
    default_bundle_path,
    load_encoder,
    make_manifest,
    read_manifest,
    shipped_bundle_path,
    write_manifest,
)
from eqsearch.engine.model.bitmap_encoder import BitmapEncoder, BitmapRenderError
from eqsearch.engine.model.bitmap_render import pinned_versions
from eqsearch.engine.model.vocabulary import build_vocabulary

BITMAP_BUNDLE = default_bundle_path().parent / "bitmap-bundle"
needs_bundle = pytest.mark.skipif(
    not (BITMAP_BUNDLE / "manifest.json").is_file(), reason="no engine/model/bitmap-bundle yet"
)
RENDERER = {"em_px": 16, "height": 32, "width": 333, **pinned_versions()}
FORMULAS = [
    "<math><mi>x</mi><mo>=</mo><mfrac><mn>1</mn><mi>y</mi></mfrac></math>",
    "<math><msup><mi>e</mi><mrow><mi>i</mi><mi>π</mi></mrow></msup><mo>+</mo><mn>1</mn><mo>=</mo><mn>0</mn></math>",
    "<math><mi>sin</mi><mi>x</mi></math>",
]


def _fake_bitmap_bundle(path: Path, **changes) -> Path:
    path.mkdir(parents=True)
    (path / "model.onnx").write_bytes(b"onnx bytes")
    options = {"encoder": "ecml19-cnn", "vocabulary": None, "renderer": RENDERER, **changes}
    manifest = make_manifest(
        path, embedding_dim=64, similarity="cosine", opset=18, output="embedding", eqsearch_version="0.1.0", **options
    )
    write_manifest(path, manifest)
    return path


def test_a_bitmap_manifest_lists_the_model_and_the_renderer_and_no_vocabulary(tmp_path: Path) -> None:
    manifest = read_manifest(_fake_bitmap_bundle(tmp_path / "b"), eqsearch_version="0.1.0")
    assert manifest.encoder == "ecml19-cnn" and manifest.inputs == ("bitmaps",) and manifest.vocabulary_sizes == {}
    assert set(manifest.raw["files"]) == {"model.onnx"} and manifest.raw["renderer"] == RENDERER
    assert manifest.identity == "ecml19-cnn:" + sha256_file(tmp_path / "b" / "model.onnx")[:16]


def test_the_schema_refuses_a_bitmap_bundle_without_render_settings(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="needs renderer settings"):
        _fake_bitmap_bundle(tmp_path / "a", renderer=None)
    path = _fake_bitmap_bundle(tmp_path / "b")
    raw = json.loads((path / "manifest.json").read_text())
    del raw["renderer"]["em_px"]
    write_manifest(path, raw)
    with pytest.raises(BundleError, match=r"renderer lacks \['em_px'\]"):
        read_manifest(path, eqsearch_version="0.1.0")
    del raw["renderer"]
    write_manifest(path, raw)
    with pytest.raises(BundleError, match="has no 'renderer'"):
        read_manifest(path, eqsearch_version="0.1.0")


def test_a_graph_bundle_still_needs_its_vocabulary(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="needs a vocabulary"):
        _fake_bitmap_bundle(tmp_path / "a", encoder="kdd20-gcn", renderer=None)
    path = tmp_path / "g"
    path.mkdir()
    (path / "model.onnx").write_bytes(b"onnx bytes")
    vocabulary = build_vocabulary(["<math><mi>x</mi></math>"])
    vocabulary.save(path / "vocabulary.json")
    manifest = make_manifest(
        path, encoder="kdd20-gcn", embedding_dim=16, similarity="cosine", opset=18, output="embedding",
        vocabulary=vocabulary, eqsearch_version="0.1.0",
    )  # fmt: skip
    assert "renderer" not in manifest and set(manifest["files"]) == {"model.onnx", "vocabulary.json"}


def test_the_default_bundle_reads_as_before() -> None:
    manifest = read_manifest(default_bundle_path())
    assert manifest.encoder == "kdd20-gcn" and set(manifest.vocabulary_sizes) == {"tags", "attributes", "characters"}
    assert manifest.identity == "kdd20-gcn:" + sha256_file(default_bundle_path() / "model.onnx")[:16]
    assert shipped_bundle_path("default-bundle") == default_bundle_path()
    with pytest.raises(BundleError, match="no shipped model bundle is called 'nope'"):
        shipped_bundle_path("nope")


def test_the_bitmap_loader_never_imports_torch() -> None:
    code = "import sys, eqsearch.engine.model.bitmap_encoder; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@needs_bundle
def test_the_shipped_bitmap_bundle_encodes_formulas() -> None:
    encoder = load_encoder(BITMAP_BUNDLE)
    assert isinstance(encoder, BitmapEncoder) and encoder.kind == "ecml19-cnn" and encoder.dim == 64
    assert encoder.identity == read_manifest(BITMAP_BUNDLE).identity and encoder.similarity == "cosine"
    vectors = encoder.encode(FORMULAS)
    assert vectors.shape == (3, 64) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)  # the CNN's output is unit length
    assert np.array_equal(encoder.encode(FORMULAS[:1])[0], vectors[0])  # batch-independent
    with pytest.raises(BitmapRenderError, match=r"formula 1 did not render \(mathml-error\)"):
        encoder.encode([FORMULAS[0], "<math><mfoo/></math>"])
    rows, ok = encoder.encode_rendered(["<oops", FORMULAS[2]])
    assert ok.tolist() == [False, True] and not rows[0].any() and np.allclose(rows[1], vectors[2], atol=1e-6)
    assert encoder.failures == {"mathml-error": 2}
    encoder.close()


@needs_bundle
def test_a_bundle_trained_on_other_renderer_versions_is_refused(tmp_path: Path) -> None:
    copy = shutil.copytree(BITMAP_BUNDLE, tmp_path / "bundle")
    raw = json.loads((copy / "manifest.json").read_text())
    raw["renderer"]["mathjax"] = "3.0.0"
    write_manifest(copy, raw)
    with pytest.raises(BundleError, match="trained on bitmaps of"):
        load_encoder(copy)
