"""The text encoder of the ``context`` channel: the words around an equation (and a query's keywords) -> one vector.

A static-embedding sentence encoder (WordLlama ``l2_supercat``, Miller 2024: the token embeddings of a large language
model distilled into a plain lookup table, trained so that their mean is a sentence embedding), run here with numpy
and the ``tokenizers`` package: a token's row of the table, the mean over the text's tokens, the first `dim`
columns (the table is trained Matryoshka-style, so a prefix of the columns is itself an embedding), normalised.
No torch, no network: the weights and the tokenizer are files inside the pinned ``wordllama`` wheel, found on disk
without importing that package (whose loader can download from a model hub and configures logging on import).

What is used is pinned by a manifest shipped beside this module (``text-encoder.json``: the package and version,
each file's path inside it and its SHA-256, the width, the similarity); `load_text_encoder` checks every checksum
before it reads a byte of the model, so a different wheel is refused rather than silently embedding otherwise, and a
parity test holds the vectors of fixed sentences. The equations index records `TextEncoder.identity` in its
``_meta`` (``text_encoder``) as it does the formula encoder's, so that a search never compares vectors of two models.

The channel follows SSEmb (Li and Chen, ARQMath-3): an equation's context embedded by a sentence encoder, searched
by kNN and fused with the structural ranking. Measurements and the choice of model and width:
``docs/decisions/context-channel.md``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from eqsearch.engine.checksums import sha256_file
from eqsearch.engine.errors import EqsearchError

__all__ = [
    "TEXT_MANIFEST_PATH",
    "TextEncoder",
    "TextEncoderError",
    "TextManifest",
    "load_text_encoder",
    "read_text_manifest",
]

TEXT_MANIFEST_PATH = Path(__file__).with_name("text-encoder.json")
TEXT_MANIFEST_FORMAT = 1


class TextEncoderError(EqsearchError):
    """The text encoder's package is missing, or its files are not the ones the manifest pins."""

    exit_code = 6


@dataclass(frozen=True)
class TextManifest:
    """What `text-encoder.json` pins.

    Args:
        package: the distribution that ships the model's files (``wordllama``).
        version: its pinned version.
        weights: the safetensors file, relative to the package's directory.
        weights_sha256: its SHA-256.
        tensor: the embedding table's name in that file.
        tokenizer: the tokenizer's JSON file, relative to the package's directory.
        tokenizer_sha256: its SHA-256.
        dim: the width used: the first ``dim`` columns of the table (a Matryoshka prefix).
        similarity: how the index compares the vectors (``cosine``; they are unit length).
    """

    package: str
    version: str
    weights: str
    weights_sha256: str
    tensor: str
    tokenizer: str
    tokenizer_sha256: str
    dim: int
    similarity: str

    @property
    def identity(self) -> str:
        """Package, version, weights checksum and width: what an index records of the vectors it holds."""
        return f"{self.package}-{self.version}:{Path(self.weights).stem}@{self.weights_sha256[:12]}:d{self.dim}"


def read_text_manifest(path: str | Path = TEXT_MANIFEST_PATH) -> TextManifest:
    """The manifest at ``path`` (default: the one shipped with eqsearch).

    Raises:
        TextEncoderError: the file is missing, not JSON, of another format, or lacks a field.
    """
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise TextEncoderError(f"cannot read the text encoder's manifest {path}: {error}") from error
    if raw.get("format") != TEXT_MANIFEST_FORMAT:
        raise TextEncoderError(f"{path} has manifest format {raw.get('format')!r}, this eqsearch reads 1")
    try:
        return TextManifest(**{key: raw[key] for key in TextManifest.__dataclass_fields__})
    except (KeyError, TypeError) as error:
        raise TextEncoderError(f"{path} lacks the field {error}") from error


class TextEncoder:
    """Texts -> unit vectors, by the mean of static token embeddings (see the module docstring).

    Args:
        table: the token embedding table, already cut to its first ``dim`` columns.
        tokenizer: a ``tokenizers.Tokenizer``.
        identity: the manifest's `TextManifest.identity`.
        similarity: the index similarity the vectors are meant for.
    """

    def __init__(self, table: np.ndarray, tokenizer: Any, identity: str, similarity: str = "cosine") -> None:
        self.table = np.ascontiguousarray(table, dtype=np.float32)
        self.tokenizer = tokenizer
        self.identity = identity
        self.similarity = similarity

    @property
    def dim(self) -> int:
        """The vectors' width."""
        return int(self.table.shape[1])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """The texts' embeddings.

        Args:
            texts: any strings; a blank one gets a row of zeros.

        Returns:
            float32 ``[len(texts), dim]``, each row of unit length (or all zeros).
        """
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        # unpadded: a long context must not make every row of the batch as long (a paper's batch is hundreds)
        # a blank text would still be a token (the tokenizer's space): it has nothing to say
        encodings = self.tokenizer.encode_batch([t if t.strip() else "" for t in texts], add_special_tokens=False)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        rows = np.flatnonzero(lengths)
        if rows.size == 0:
            return out
        ids = np.fromiter((i for e in encodings for i in e.ids), dtype=np.int64, count=int(lengths.sum()))
        np.clip(ids, 0, self.table.shape[0] - 1, out=ids)
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[rows]
        sums = np.add.reduceat(self.table[ids], starts, axis=0, dtype=np.float32)
        means = sums / lengths[rows, None].astype(np.float32)
        norms = np.linalg.norm(means, axis=1, keepdims=True)
        out[rows] = np.divide(means, norms, out=np.zeros_like(means), where=norms > 0)
        return out


def _package_dir(manifest: TextManifest) -> Path:
    """The installed package's directory, found without importing it; its version checked against the pin."""
    hint = f"pip install '{manifest.package}=={manifest.version}' (a dependency of eqsearch: pip install -e .)"
    spec = importlib.util.find_spec(manifest.package)
    if spec is None or not spec.submodule_search_locations:
        raise TextEncoderError(f"the text encoder's package '{manifest.package}' is not installed", hint=hint)
    try:
        installed = importlib.metadata.version(manifest.package)
    except importlib.metadata.PackageNotFoundError:
        installed = None
    if installed != manifest.version:
        raise TextEncoderError(
            f"'{manifest.package}' {installed} is installed, but the text encoder's manifest pins {manifest.version}",
            hint=hint,
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _checked(directory: Path, relative: str, expected: str) -> Path:
    path = directory / relative
    if not path.is_file():
        raise TextEncoderError(f"the text encoder's file {path} is missing", hint="reinstall the pinned package")
    actual = sha256_file(path)
    if actual != expected:
        raise TextEncoderError(
            f"{path} has SHA-256 {actual[:12]}..., the manifest expects {expected[:12]}...: another model's file",
            hint="reinstall the pinned package (pip install --force-reinstall), or update the manifest and the "
            "parity vectors together and migrate the equations index",
        )
    return path


def _read_safetensors(path: Path, name: str, columns: int) -> np.ndarray:
    """One tensor of a safetensors file (an 8-byte little-endian header size, a JSON header, raw little-endian
    data), its first ``columns`` columns; numpy only."""
    dtypes = {"F32": "<f4", "F16": "<f2", "BF16": None}
    with path.open("rb") as handle:
        (size,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(size))
        entry = header.get(name)
        if entry is None or dtypes.get(entry["dtype"]) is None:
            raise TextEncoderError(f"{path} has no {name!r} tensor of a float type this reader knows")
        begin, end = entry["data_offsets"]
        handle.seek(8 + size + begin)
        data = np.frombuffer(handle.read(end - begin), dtype=dtypes[entry["dtype"]]).reshape(entry["shape"])
    if columns > data.shape[1]:
        raise TextEncoderError(f"the manifest asks for {columns} columns, {path} has {data.shape[1]}")
    return np.array(data[:, :columns], dtype=np.float32)


@functools.lru_cache(maxsize=4)
def load_text_encoder(manifest_path: str | Path = TEXT_MANIFEST_PATH) -> TextEncoder:
    """The text encoder the manifest pins, its files checked first; loaded once per process (about 16 MB).

    Args:
        manifest_path: the manifest (default: the one shipped with eqsearch).

    Returns:
        The encoder.

    Raises:
        TextEncoderError: the package is missing or of another version, or a file's checksum differs.
    """
    manifest = read_text_manifest(manifest_path)
    directory = _package_dir(manifest)
    weights = _checked(directory, manifest.weights, manifest.weights_sha256)
    tokenizer_file = _checked(directory, manifest.tokenizer, manifest.tokenizer_sha256)
    from tokenizers import Tokenizer  # a dependency of the pinned package; a local file, never a hub download

    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    table = _read_safetensors(weights, manifest.tensor, manifest.dim)
    return TextEncoder(table, tokenizer, manifest.identity, manifest.similarity)
