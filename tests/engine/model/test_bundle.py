"""Bundle manifest checks: every mismatch is refused with a message that says why. No torch, no onnxruntime."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eqsearch.engine.checksums import sha256_file
from eqsearch.engine.model.bundle import BundleError, read_manifest


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
