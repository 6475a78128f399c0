"""Bundle manifests: every mismatch is refused with a message that says why, and what the exporter's path
(`make_manifest` + `write_manifest`) writes is what `read_manifest` accepts. No torch, no onnxruntime."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eqsearch.engine.checksums import sha256_file
from eqsearch.engine.model.bundle import (
    GRAPH_INPUTS,
    REQUIRED_KEYS,
    BundleError,
    load_bundle_vocabulary,
    make_manifest,
    read_manifest,
    write_manifest,
)
from eqsearch.engine.model.vocabulary import build_vocabulary


def _bundle(tmp_path: Path, **changes) -> Path:
    path = tmp_path / "bundle"
    path.mkdir()
    (path / "model.onnx").write_bytes(b"onnx bytes")
    (path / "vocabulary.json").write_text("{}")
    manifest = {
        "format": "eqsearch-model-bundle",
        "format_version": 1,
        "encoder": "kdd20-gcn",
        "eqsearch_version": "0.1.0",
        "opset": 18,
        "inputs": ["tag", "attr", "char", "pos", "edge_index", "graph", "graph_sizes"],
        "output": "embedding",
        "embedding_dim": 64,
        "similarity": "max_inner_product",
        "vocabulary_sizes": {"tags": 32, "attributes": 32, "characters": 192},
        "files": {
            name: {"path": name, "sha256": sha256_file(path / name)} for name in ("model.onnx", "vocabulary.json")
        },
    }
    manifest.update(changes)
    (path / "manifest.json").write_text(json.dumps(manifest))
    return path


def test_a_good_manifest_reads(tmp_path: Path) -> None:
    manifest = read_manifest(_bundle(tmp_path), eqsearch_version="0.1.3")
    assert manifest.embedding_dim == 64 and manifest.model_path.name == "model.onnx"
    # the identity names the model by its checksum: what an index records and a search compares
    assert manifest.identity == "kdd20-gcn:" + sha256_file(tmp_path / "bundle" / "model.onnx")[:16]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"format": "something-else"}, "not an eqsearch model bundle"),
        ({"format_version": 2}, "format version 2"),
        ({"encoder": "bitmap-cnn"}, "encoder kind 'bitmap-cnn' is unknown"),
        ({"inputs": ["tag"]}, "must take inputs"),
        ({"similarity": "l2"}, "similarity 'l2'"),
        ({"embedding_dim": 0}, "embedding_dim must be positive"),
        ({"eqsearch_version": "0.2.0"}, "written by eqsearch 0.2.0"),
        ({"vocabulary_sizes": {"tags": 32}}, "vocabulary_sizes"),
    ],
)
def test_mismatches_are_refused_with_a_reason(tmp_path: Path, changes: dict, message: str) -> None:
    with pytest.raises(BundleError, match=message):
        read_manifest(_bundle(tmp_path, **changes), eqsearch_version="0.1.0")


def test_missing_and_changed_files(tmp_path: Path) -> None:
    path = _bundle(tmp_path)
    (path / "model.onnx").write_bytes(b"other bytes")
    with pytest.raises(BundleError, match="checksum mismatch"):
        read_manifest(path, eqsearch_version="0.1.0")
    (path / "model.onnx").unlink()
    with pytest.raises(BundleError, match="missing"):
        read_manifest(path, eqsearch_version="0.1.0")
    with pytest.raises(BundleError, match="not a directory"):
        read_manifest(tmp_path / "nowhere")
    (path / "manifest.json").unlink()
    with pytest.raises(BundleError, match=r"no manifest\.json"):
        read_manifest(path)


def _written(tmp_path: Path, **provenance) -> Path:
    """A bundle whose manifest comes from `make_manifest` + `write_manifest`, the exporter's path."""
    path = tmp_path / "written"
    path.mkdir(parents=True)
    (path / "model.onnx").write_bytes(b"onnx bytes")
    vocabulary = build_vocabulary(['<math><mi mathvariant="bold">x</mi><mo>+</mo><mn>2</mn></math>'], n_tags=8)
    vocabulary.save(path / "vocabulary.json")
    manifest = make_manifest(
        path,
        encoder="kdd20-gcn",
        embedding_dim=16,
        similarity="cosine",
        opset=18,
        output="embedding",
        vocabulary=vocabulary,
        eqsearch_version="0.1.0",
        provenance={"training": {"steps": 3}, **provenance},
    )
    write_manifest(path, manifest)
    return path


def test_a_manifest_made_by_the_writer_path_is_accepted(tmp_path: Path) -> None:
    path = _written(tmp_path)
    manifest = read_manifest(path, eqsearch_version="0.1.0")
    assert manifest.encoder == "kdd20-gcn" and manifest.embedding_dim == 16 and manifest.opset == 18
    assert manifest.similarity == "cosine" and manifest.inputs == GRAPH_INPUTS
    assert manifest.vocabulary_sizes == {"tags": 8, "attributes": 32, "characters": 192}
    assert manifest.raw["training"] == {"steps": 3} and set(REQUIRED_KEYS) <= set(manifest.raw)
    assert manifest.raw["files"]["model.onnx"]["bytes"] == len(b"onnx bytes")
    assert load_bundle_vocabulary(manifest).n_tags == 8
    written = (path / "manifest.json").read_text(encoding="utf-8")
    assert written == json.dumps(json.loads(written), indent=1, sort_keys=True) + "\n"  # canonical text


@pytest.mark.parametrize("key", sorted(REQUIRED_KEYS))
def test_a_manifest_missing_a_required_key_is_refused(tmp_path: Path, key: str) -> None:
    path = _written(tmp_path)
    manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    del manifest[key]
    write_manifest(path, manifest)
    with pytest.raises(BundleError) as caught:
        read_manifest(path, eqsearch_version="0.1.0")
    assert key in str(caught.value) or key.replace("_", " ") in str(caught.value)


def test_the_writer_path_refuses_what_the_schema_does_not_allow(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match=r"would replace keys of the manifest schema"):
        _written(tmp_path / "a", files={})
    path = _written(tmp_path / "b")
    (path / "model.onnx").unlink()
    vocabulary = build_vocabulary(["<math><mi>x</mi></math>"])
    with pytest.raises(BundleError, match=r"no model\.onnx"):
        make_manifest(
            path,
            encoder="kdd20-gcn",
            embedding_dim=16,
            similarity="cosine",
            opset=18,
            output="embedding",
            vocabulary=vocabulary,
            eqsearch_version="0.1.0",
        )
    with pytest.raises(BundleError, match="encoder kind 'bitmap-cnn' is unknown"):
        make_manifest(
            path,
            encoder="bitmap-cnn",
            embedding_dim=16,
            similarity="cosine",
            opset=18,
            output="embedding",
            vocabulary=vocabulary,
            eqsearch_version="0.1.0",
        )
