"""The context channel's text encoder: the manifest pins the installed files, the vectors of fixed sentences stay
what they were (an upgrade of the pinned package that changes the model fails here), our numpy pooling equals the
package's own inference, and loading it touches neither torch nor the network's libraries."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from eqsearch.engine.model.text import (
    TEXT_MANIFEST_PATH,
    TextEncoderError,
    load_text_encoder,
    read_text_manifest,
)

PARITY = json.loads((Path(__file__).with_name("text_parity.json")).read_text(encoding="utf-8"))


def test_the_manifest_pins_the_installed_package_and_its_files():
    manifest = read_text_manifest()
    encoder = load_text_encoder()  # checks the version and both checksums before reading
    assert encoder.identity == manifest.identity == PARITY["identity"]
    assert encoder.dim == manifest.dim
    assert manifest.similarity == "cosine"


def test_fixed_sentences_keep_their_stored_vectors():
    vectors = load_text_encoder().encode(PARITY["sentences"])
    np.testing.assert_allclose(vectors, np.asarray(PARITY["vectors"], dtype=np.float32), atol=PARITY["tolerance"])


def test_pooling_equals_the_packages_own_inference():
    wordllama = pytest.importorskip("wordllama")
    from tokenizers import Tokenizer

    manifest = read_text_manifest()
    directory = Path(wordllama.__file__).parent
    encoder = load_text_encoder()
    reference = wordllama.WordLlamaInference(
        encoder.table, Tokenizer.from_file(str(directory / manifest.tokenizer))
    )  # padded batches, masked mean: the package's way
    texts = [*PARITY["sentences"], "a much longer context " * 40, "x"]
    np.testing.assert_allclose(encoder.encode(texts), reference.embed(texts, norm=True), atol=1e-6)


def test_vectors_are_unit_length_and_blank_text_gets_zeros():
    vectors = load_text_encoder().encode(["heat conduction", "", "   ", "temperature diffusion"])
    assert vectors.dtype == np.float32 and vectors.shape == (4, load_text_encoder().dim)
    np.testing.assert_allclose(np.linalg.norm(vectors[[0, 3]], axis=1), 1.0, atol=1e-5)
    assert not vectors[1].any() and not vectors[2].any()
    assert load_text_encoder().encode([]).shape == (0, load_text_encoder().dim)


def test_related_words_are_nearer_than_unrelated_ones():
    a, b, c = load_text_encoder().encode(
        ["the bell curve of a normal distribution", "Gaussian probability density", "finite element mesh refinement"]
    )
    assert float(a @ b) > float(a @ c) + 0.1


def test_a_file_of_another_model_is_refused(tmp_path):
    raw = json.loads(TEXT_MANIFEST_PATH.read_text(encoding="utf-8"))
    raw["weights_sha256"] = "0" * 64
    manifest = tmp_path / "text-encoder.json"
    manifest.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(TextEncoderError, match="another model's file"):
        load_text_encoder(manifest)


def test_another_pinned_version_is_refused_with_a_hint(tmp_path):
    raw = json.loads(TEXT_MANIFEST_PATH.read_text(encoding="utf-8"))
    raw["version"] = "0.0.1"
    manifest = tmp_path / "text-encoder.json"
    manifest.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(TextEncoderError) as error:
        load_text_encoder(manifest)
    assert "pins 0.0.1" in error.value.message and "pip install" in (error.value.hint or "")


def test_loading_and_encoding_import_neither_torch_nor_the_packages_downloader():
    code = (
        "import sys; from eqsearch.engine.model.text import load_text_encoder; "
        "load_text_encoder().encode(['a test']); "
        "print(sorted(m for m in ('torch', 'wordllama', 'requests', 'huggingface_hub') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
