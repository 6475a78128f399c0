"""The model bundle: a directory with ``model.onnx``, ``vocabulary.json`` and ``manifest.json``, checked as a unit.

A bundle of the ECML'19 bitmap CNN (kind ``ecml19-cnn``) has no vocabulary: it lists ``model.onnx`` only, and its
manifest says instead how formulas are rendered (``renderer``: pixels per em, bitmap size, the pinned MathJax and
resvg versions), because the model is only valid on the pixels it was trained on.

The manifest says what the files are (checksums), what the model takes and gives (inputs, opset, embedding
dimension, similarity), and where it came from (eqsearch version, training config, data summary). This module owns
its schema on both sides: `make_manifest` and `write_manifest` build and write it (the exporter in
``export/bundle.py`` calls them), and `read_manifest` verifies all of it before anything runs, refusing a bundle that
does not match with a message that says why; `REQUIRED_KEYS` is the one list both sides follow (a composite's
``parts``: `engine.model.composite`, which reads and writes them).
This module reads JSON and hashes files only: no onnxruntime, no torch.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eqsearch.engine.checksums import sha256_file
from eqsearch.engine.errors import EqsearchError

if TYPE_CHECKING:
    from eqsearch.engine.model.vocabulary import Vocabulary

BUNDLE_FORMAT = "eqsearch-model-bundle"
BUNDLE_VERSION = 1
MANIFEST_NAME = "manifest.json"
MODEL_NAME = "model.onnx"
VOCABULARY_NAME = "vocabulary.json"

#: Encoder kinds this eqsearch can run, and the ONNX inputs each one takes (engine.graph conventions).
GRAPH_INPUTS = ("tag", "attr", "char", "pos", "edge_index", "graph", "graph_sizes")
BITMAP_INPUTS = ("bitmaps",)
#: The structure-bag encoder (`engine.model.structure_bag`): hashed structural terms of a batch of formulas.
STRUCTURE_BAG_INPUTS = ("ids", "weights", "graph", "graph_sizes")
#: A composite (`engine.model.composite`) runs no model of its own: its parts, bundles of the kinds above, do.
ENCODER_KINDS = {
    "kdd20-gcn": GRAPH_INPUTS,
    "ecml19-cnn": BITMAP_INPUTS,
    "structure-bag": STRUCTURE_BAG_INPUTS,
    "composite": (),
}
#: Similarities a bundle may declare: the model's training similarity (inner product of soft-normalised
#: vectors, KDD'20 eq. 1-3) or cosine. Names follow Elasticsearch's dense_vector ``similarity`` values.
SIMILARITIES = ("max_inner_product", "cosine")
#: The files a graph-network manifest lists (with path and SHA-256), besides itself.
BUNDLE_FILES = (MODEL_NAME, VOCABULARY_NAME)
#: The files each encoder kind's manifest lists.
KIND_FILES = {"kdd20-gcn": BUNDLE_FILES, "ecml19-cnn": (MODEL_NAME,), "structure-bag": (MODEL_NAME,), "composite": ()}
#: Keys every graph-network manifest has, with their JSON types: `make_manifest` writes them, `read_manifest` refuses
#: a manifest without one. Anything else in a manifest is provenance (training config, data summary, evaluation,
#: parity). Other kinds: `KIND_KEYS`.
REQUIRED_KEYS: dict[str, type] = {
    "format": str,
    "format_version": int,
    "encoder": str,
    "inputs": list,
    "output": str,
    "opset": int,
    "embedding_dim": int,
    "similarity": str,
    "vocabulary_sizes": dict,
    "files": dict,
}
#: The keys each encoder kind's manifest must have: the bitmap CNN has no vocabulary but a ``renderer``.
KIND_KEYS: dict[str, dict[str, type]] = {
    "kdd20-gcn": REQUIRED_KEYS,
    "ecml19-cnn": {**{k: v for k, v in REQUIRED_KEYS.items() if k != "vocabulary_sizes"}, "renderer": dict},
    "structure-bag": {**{k: v for k, v in REQUIRED_KEYS.items() if k != "vocabulary_sizes"}, "features": dict},
    "composite": {**{k: v for k, v in REQUIRED_KEYS.items() if k != "vocabulary_sizes"}, "parts": list},
}
#: What a ``renderer`` entry gives: the render settings the model was trained with.
RENDERER_KEYS = ("em_px", "height", "width", "mathjax", "resvg")
_KEY_TYPES = {key: kind for keys in KIND_KEYS.values() for key, kind in keys.items()}


class BundleError(EqsearchError):
    """A model bundle is missing, incomplete, corrupted or made for another eqsearch."""


def default_bundle_path() -> Path:
    """The graph network shipped with eqsearch (a ``kdd20-gcn`` bundle, first trained by
    ``training/configs/default.toml``): the ``graph`` part of the search bundle, with the node-states sidecar of the
    MaxSim rerank; training and the node exports start from it."""
    return Path(__file__).resolve().parent / "default-bundle"


def search_bundle_path() -> Path:
    """The encoder that ingest and search load when none is named: the composite (`engine.model.composite`) of the
    graph network (`default_bundle_path`) and the structure-bag student (``structure-bundle``)."""
    return Path(__file__).resolve().parent / "search-bundle"


def shipped_bundle_path(name: str) -> Path:
    """A bundle shipped inside eqsearch, by its directory name under ``engine/model`` (``default-bundle``,
    ``bitmap-bundle``).

    Raises:
        BundleError: no shipped bundle has that name.
    """
    root = Path(__file__).resolve().parent
    path = root / name
    if "/" in name or name.startswith(".") or not (path / MANIFEST_NAME).is_file():
        shipped = sorted(p.parent.name for p in root.glob(f"*/{MANIFEST_NAME}"))
        raise BundleError(f"no shipped model bundle is called {name!r} (shipped: {', '.join(shipped)})")
    return path


@dataclass(frozen=True)
class BundleManifest:
    """The checked contents of ``manifest.json``.

    Attributes:
        path: the bundle directory.
        encoder: encoder kind (a key of ``ENCODER_KINDS``).
        embedding_dim: width of the vectors the model returns.
        similarity: how vectors are compared (one of ``SIMILARITIES``).
        opset: ONNX opset of ``model.onnx``.
        inputs: ONNX input names, in order.
        output: ONNX output name.
        vocabulary_sizes: ``{"tags", "attributes", "characters"}`` slot counts the model was trained with (empty for
            a kind without a vocabulary, ``ecml19-cnn``).
        eqsearch_version: the version that wrote the bundle.
        raw: the whole manifest (training config, data summary, evaluation, ...).
    """

    path: Path
    encoder: str
    embedding_dim: int
    similarity: str
    opset: int
    inputs: tuple[str, ...]
    output: str
    vocabulary_sizes: dict[str, int]
    eqsearch_version: str
    raw: dict[str, Any]

    @property
    def model_path(self) -> Path:
        return self.path / self.raw["files"][MODEL_NAME]["path"]

    @property
    def vocabulary_path(self) -> Path:
        return self.path / self.raw["files"][VOCABULARY_NAME]["path"]

    @property
    def identity(self) -> str:
        """What makes the bundle's vectors: ``<encoder kind>:<first 16 hex of model.onnx's SHA-256>``; a composite's,
        the first 16 hex of the SHA-256 of its parts' identities and weights, in order. Vectors of two identities are
        not comparable, whatever their width (an index records the identity it was filled with)."""
        if self.encoder == "composite":
            parts = "\n".join(f"{p['name']}={p['identity']}*{p['weight']!r}" for p in self.raw["parts"])
            return f"composite:{hashlib.sha256(parts.encode('utf-8')).hexdigest()[:16]}"
        return f"{self.encoder}:{self.raw['files'][MODEL_NAME]['sha256'][:16]}"


class ManifestEncoder:
    """What every bundle encoder says of itself, read from its manifest (the `Encoder` protocol's attributes), so
    that each encoder class only keeps the manifest."""

    manifest: BundleManifest

    @property
    def kind(self) -> str:
        return self.manifest.encoder

    @property
    def dim(self) -> int:
        return self.manifest.embedding_dim

    @property
    def similarity(self) -> str:
        return self.manifest.similarity

    @property
    def identity(self) -> str:
        return self.manifest.identity


def vocabulary_sizes(vocabulary: Vocabulary) -> dict[str, int]:
    """The slot counts of a vocabulary as a manifest records them (``tags``, ``attributes``, ``characters``)."""
    return {"tags": vocabulary.n_tags, "attributes": vocabulary.n_attrs, "characters": vocabulary.n_chars}


def make_manifest(
    bundle: str | Path,
    *,
    encoder: str,
    embedding_dim: int,
    similarity: str,
    opset: int,
    output: str,
    vocabulary: Vocabulary | None,
    eqsearch_version: str,
    provenance: Mapping[str, Any] | None = None,
    renderer: Mapping[str, Any] | None = None,
    features: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest of a bundle directory that already holds ``model.onnx`` and ``vocabulary.json``.

    The files are hashed here; the inputs are those of the encoder kind. Write it with `write_manifest` and check it
    with `read_manifest`.

    Args:
        bundle: the bundle directory.
        encoder: encoder kind (a key of ``ENCODER_KINDS``).
        embedding_dim: width of the vectors the model returns.
        similarity: how vectors are to be compared (one of ``SIMILARITIES``).
        opset: ONNX opset of ``model.onnx``.
        output: ONNX output name.
        vocabulary: the vocabulary saved as ``vocabulary.json`` (None for a kind without one, ``ecml19-cnn``).
        eqsearch_version: the eqsearch version writing the bundle.
        provenance: further top-level entries (``model_config``, ``exported_with``, ``training``, ``data``,
            ``evaluation``, ...); they may not replace a key of the schema.
        renderer: for ``ecml19-cnn``, the render settings (``RENDERER_KEYS``).
        features: for ``structure-bag``, how terms become inputs (`engine.model.structure_bag.StructureFeatures`).

    Returns:
        The manifest as a JSON-ready dict.

    Raises:
        BundleError: unknown encoder kind, a provenance key that is a schema key, or a listed file is missing.
    """
    path = Path(bundle)
    if encoder not in ENCODER_KINDS:
        raise BundleError(f"encoder kind '{encoder}' is unknown to this eqsearch (known: {', '.join(ENCODER_KINDS)})")
    needs_vocabulary = "vocabulary_sizes" in KIND_KEYS[encoder]
    if needs_vocabulary and vocabulary is None:
        raise BundleError(f"a '{encoder}' bundle needs a vocabulary")
    if "renderer" in KIND_KEYS[encoder] and (renderer is None or set(RENDERER_KEYS) - set(renderer)):
        raise BundleError(f"a '{encoder}' bundle needs renderer settings with {', '.join(RENDERER_KEYS)}")
    manifest: dict[str, Any] = {
        "format": BUNDLE_FORMAT,
        "format_version": BUNDLE_VERSION,
        "encoder": encoder,
        "eqsearch_version": eqsearch_version,
        "opset": opset,
        "inputs": list(ENCODER_KINDS[encoder]),
        "output": output,
        "embedding_dim": embedding_dim,
        "similarity": similarity,
        "files": {},
    }
    if needs_vocabulary and vocabulary is not None:
        manifest["vocabulary_sizes"] = vocabulary_sizes(vocabulary)
        manifest["vocabulary_version"] = vocabulary.to_json()["version"]
    if "renderer" in KIND_KEYS[encoder] and renderer is not None:
        manifest["renderer"] = dict(renderer)
    if "features" in KIND_KEYS[encoder]:
        if features is None:
            raise BundleError(f"a '{encoder}' bundle needs its features")
        manifest["features"] = dict(features)
    for name in KIND_FILES[encoder]:
        file_path = path / name
        if not file_path.is_file():
            raise BundleError(f"{path}: no {name} to list in the manifest")
        manifest["files"][name] = {"path": name, "sha256": sha256_file(file_path), "bytes": file_path.stat().st_size}
    clashes = sorted(set(provenance or {}) & set(manifest))
    if clashes:
        raise BundleError(f"provenance entries {clashes} would replace keys of the manifest schema")
    manifest.update(provenance or {})
    return manifest


def write_manifest(bundle: str | Path, manifest: Mapping[str, Any]) -> Path:
    """Write ``manifest.json`` into the bundle directory (sorted keys, fixed indentation); returns its path."""
    path = Path(bundle) / MANIFEST_NAME
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def _require(manifest: dict[str, Any], key: str, where: Path) -> Any:
    kind = _KEY_TYPES[key]
    if key not in manifest:
        raise BundleError(f"{where}: the manifest has no '{key}'", hint="re-export the bundle with 'eqsearch export'")
    value = manifest[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise BundleError(f"{where}: manifest '{key}' should be {kind}, got {value!r}")
    return value


def _major_minor(version: str) -> tuple[str, str] | None:
    parts = version.split("+")[0].split(".")
    return (parts[0], parts[1]) if len(parts) >= 2 and parts[0].isdigit() else None


def read_manifest(
    bundle: str | Path, *, verify_checksums: bool = True, eqsearch_version: str | None = None
) -> BundleManifest:
    """Read and check a bundle's manifest and files.

    Args:
        bundle: the bundle directory.
        verify_checksums: hash every listed file and compare with the manifest.
        eqsearch_version: the running eqsearch version; a bundle from another major.minor is refused
            (None: ``eqsearch.__version__``; a source tree that was never installed skips the check).

    Raises:
        BundleError: saying which check failed, on what, and what to do.
    """
    path = Path(bundle)
    manifest_path = path / MANIFEST_NAME
    if not path.is_dir():
        raise BundleError(f"model bundle not found: {path} is not a directory", hint="pass a bundle directory")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleError(
            f"{path} has no {MANIFEST_NAME}: not a model bundle", hint="export one with 'eqsearch export'"
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise BundleError(f"{manifest_path} is not valid JSON: {error}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{manifest_path} is not an eqsearch model bundle manifest (format != '{BUNDLE_FORMAT}')")
    version = manifest.get("format_version")
    if version != BUNDLE_VERSION:
        raise BundleError(
            f"{path}: bundle format version {version!r}, this eqsearch reads version {BUNDLE_VERSION}",
            hint="use the eqsearch version that wrote the bundle, or re-export it with this one",
        )
    encoder = _require(manifest, "encoder", path)
    if encoder not in ENCODER_KINDS:
        raise BundleError(
            f"{path}: encoder kind '{encoder}' is unknown to this eqsearch (known: {', '.join(ENCODER_KINDS)})"
        )
    inputs = tuple(_require(manifest, "inputs", path))
    if inputs != ENCODER_KINDS[encoder]:
        raise BundleError(
            f"{path}: a '{encoder}' model must take inputs {ENCODER_KINDS[encoder]}, the manifest says {inputs}"
        )
    similarity = _require(manifest, "similarity", path)
    if similarity not in SIMILARITIES:
        raise BundleError(f"{path}: similarity '{similarity}' is not one of {SIMILARITIES}")
    dim = _require(manifest, "embedding_dim", path)
    if dim < 1:
        raise BundleError(f"{path}: embedding_dim must be positive, got {dim}")
    files = _require(manifest, "files", path)
    for name in KIND_FILES[encoder]:
        entry = files.get(name)
        if not isinstance(entry, dict) or "path" not in entry or "sha256" not in entry:
            raise BundleError(f"{path}: the manifest lists no '{name}' with path and sha256")
        file_path = path / entry["path"]
        if not file_path.is_file():
            raise BundleError(
                f"{path}: the manifest lists {entry['path']}, which is missing", hint="copy the whole bundle directory"
            )
        if verify_checksums:
            actual = sha256_file(file_path)
            if actual != entry["sha256"]:
                raise BundleError(
                    f"{file_path}: checksum mismatch (manifest {entry['sha256'][:12]}…, file {actual[:12]}…): "
                    "the file was changed or damaged after export",
                    hint="re-export the bundle or restore the original files",
                )
    sizes: dict[str, Any] = {}
    if "vocabulary_sizes" in KIND_KEYS[encoder]:
        sizes = _require(manifest, "vocabulary_sizes", path)
        if set(sizes) != {"tags", "attributes", "characters"}:
            raise BundleError(
                f"{path}: vocabulary_sizes must give tags, attributes and characters, got {sorted(sizes)}"
            )
    if "renderer" in KIND_KEYS[encoder]:
        missing = set(RENDERER_KEYS) - set(_require(manifest, "renderer", path))
        if missing:
            raise BundleError(f"{path}: the manifest's renderer lacks {sorted(missing)}", hint="re-export the bundle")
    if "features" in KIND_KEYS[encoder]:
        _require(manifest, "features", path)
    if "parts" in KIND_KEYS[encoder]:
        from eqsearch.engine.model.composite import composite_parts

        parts = composite_parts(_require(manifest, "parts", path), path)
        if sum(part.dim for part in parts) != manifest.get("embedding_dim"):
            raise BundleError(f"{path}: the parts' widths add up to {sum(p.dim for p in parts)}, not embedding_dim")
    written_by = str(manifest.get("eqsearch_version", ""))
    if eqsearch_version is None:
        from eqsearch import __version__ as eqsearch_version
    ours, theirs = _major_minor(eqsearch_version), _major_minor(written_by)
    if ours and theirs and ours != theirs:
        raise BundleError(
            f"{path}: the bundle was written by eqsearch {written_by}, this is eqsearch {eqsearch_version} "
            "(major.minor differ, so featurization may differ)",
            hint="re-export the bundle with this eqsearch version, or install the one that wrote it",
        )
    return BundleManifest(
        path=path,
        encoder=encoder,
        embedding_dim=dim,
        similarity=similarity,
        opset=int(_require(manifest, "opset", path)),
        inputs=inputs,
        output=str(_require(manifest, "output", path)),
        vocabulary_sizes={k: int(v) for k, v in sizes.items()},
        eqsearch_version=written_by,
        raw=manifest,
    )


def load_bundle_vocabulary(manifest: BundleManifest) -> Vocabulary:
    """The bundle's `Vocabulary`, checked against the sizes the manifest declares.

    Raises:
        BundleError: the vocabulary does not load or its sizes differ from the manifest's.
    """
    from eqsearch.engine.model.vocabulary import Vocabulary, VocabularyError

    try:
        vocab = Vocabulary.load(manifest.vocabulary_path)
    except VocabularyError as error:
        raise BundleError(f"{manifest.path}: {error.message}", hint=error.hint) from None
    actual = vocabulary_sizes(vocab)
    if actual != manifest.vocabulary_sizes:
        raise BundleError(
            f"{manifest.path}: the vocabulary has sizes {actual}, "
            f"the manifest (and model) expect {manifest.vocabulary_sizes}",
            hint="the vocabulary.json does not belong to this model; re-export the bundle",
        )
    return vocab
