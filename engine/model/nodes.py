"""Node-level vectors of the KDD'20 graph network: one vector per MathML node, for multi-vector (MaxSim) reranking.

Amador and Zanibbi (ICTIR'25) score a candidate formula ColBERT-style: every query node is matched with its most
similar candidate node and the similarities are summed. The shipped network already computes one state per node
before it pools them into the formula vector, so the node vectors here come from the same weights: a *sidecar*
model, ``node-states.onnx``, beside the bundle's ``model.onnx``, is the bundle's graph cut at the node states (the
output of the last graph convolution, ``node_states``, 512-d) plus the bundle's own projection and soft-normalisation
scale applied to each node (``node_vectors``, 64-d): the mean of an equation's ``node_vectors`` is its formula vector.

A node output may also go through a fixed linear *projection* listed in the sidecar's manifest (``projections``:
``node_states@p64`` is each node state scaled to unit length times a 512 x 64 matrix, ``node-projection-p64.npy``,
fitted on node states of the training corpus by ``eqsearch export node-projection``): 8x fewer bytes to store and
dimensions to compare for the MaxSim rerank (``docs/decisions/maxsim-node-vectors.md``).

The sidecar never changes the bundle: ``model.onnx`` and ``manifest.json`` are untouched, so the bundle's identity
(and every index that records it) stays. The sidecar has a small manifest of its own, ``node-states.json``, that
names the bundle model it was cut from (the SHA-256 of ``model.onnx``) and its own checksum; `load_node_encoder`
refuses a sidecar of another model or a changed file. ``eqsearch export node-states`` (``export/node_states.py``)
writes both; this module owns the manifest's schema (`make_node_manifest`) as `engine.model.bundle` owns the bundle's.
onnxruntime only: no torch, no onnx.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from eqsearch.engine.checksums import sha256_file
from eqsearch.engine.model.bundle import (
    MODEL_NAME,
    BundleError,
    BundleManifest,
    default_bundle_path,
    load_bundle_vocabulary,
    read_manifest,
)
from eqsearch.engine.model.graph import GraphArrays

__all__ = [
    "NODE_INPUTS",
    "NODE_MANIFEST_NAME",
    "NODE_MODEL_NAME",
    "NODE_OUTPUTS",
    "NodeEncoder",
    "NodeManifest",
    "check_node_output",
    "load_node_encoder",
    "make_node_manifest",
    "node_encoder_for",
    "node_output_of",
    "projection_entry",
    "read_node_manifest",
    "split_nodes",
]

NODE_MODEL_NAME = "node-states.onnx"
NODE_MANIFEST_NAME = "node-states.json"
NODE_FORMAT = "eqsearch-node-states"
NODE_FORMAT_VERSION = 1
#: The sidecar's inputs (the bundle's, less the pooling's ``graph`` and ``graph_sizes``) and outputs.
NODE_INPUTS = ("tag", "attr", "char", "pos", "edge_index")
#: ``node_states``: the last graph convolution's output; ``node_vectors``: each node projected and scaled as the
#: formula vector is (their mean per equation is the bundle's embedding).
NODE_OUTPUTS = ("node_states", "node_vectors")
#: How a projected output is named: ``<output>@<projection key>`` (``node_states@p64``).
PROJECTED = "@"


def check_node_output(spec: str) -> str:
    """``spec`` when it names an output (`NODE_OUTPUTS`), or one through a projection (``node_states@p64``).

    Raises:
        ValueError: anything else.
    """
    base, _, key = spec.partition(PROJECTED)
    if base not in NODE_OUTPUTS or (PROJECTED in spec and not key.isidentifier()):
        raise ValueError(f"node output {spec!r} is not one of {', '.join(NODE_OUTPUTS)} (or one @KEY, projected)")
    return spec


def node_output_of(identity: str) -> str:
    """The output (``node_states``, ``node_states@p64``) of a `NodeEncoder.identity`, as `load_node_encoder` takes it.

    Raises:
        ValueError: not the identity of a node output.
    """
    return check_node_output(identity.rsplit("/", 1)[-1].split(":", 1)[0])


def projection_entry(bundle: str | Path, key: str, *, output: str, provenance: dict[str, Any]) -> dict[str, Any]:
    """The manifest entry of projection ``key`` (``node-projection-<key>.npy`` already written in ``bundle``): the
    output it projects, its width, file and checksum, and where it was fitted (``provenance``)."""
    path = Path(bundle) / f"node-projection-{key}.npy"
    matrix = np.load(path, allow_pickle=False)
    return {
        "output": output,
        "dims": int(matrix.shape[1]),
        "path": path.name,
        "sha256": sha256_file(path),
        **provenance,
    }


@dataclass(frozen=True)
class NodeManifest:
    """The checked contents of ``node-states.json``.

    Attributes:
        path: the sidecar model's path.
        source_sha256: SHA-256 of the bundle's ``model.onnx`` the sidecar was cut from.
        dims: output name -> width (``node_states``: hidden width, ``node_vectors``: embedding width).
        raw: the whole manifest.
    """

    path: Path
    source_sha256: str
    dims: dict[str, int]
    raw: dict[str, Any]


def make_node_manifest(
    bundle: str | Path, *, dims: dict[str, int], opset: int, provenance: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The manifest of a bundle directory's sidecar (``node-states.onnx`` already written there).

    Args:
        bundle: the bundle directory.
        dims: output name -> width, for every name of `NODE_OUTPUTS`.
        opset: the sidecar's ONNX opset.
        provenance: further entries (what wrote it, the parity it was checked to).

    Raises:
        BundleError: the sidecar or the bundle's model is missing, or ``dims`` does not name every output.
    """
    path = Path(bundle)
    for name in (NODE_MODEL_NAME, MODEL_NAME):
        if not (path / name).is_file():
            raise BundleError(f"{path}: no {name} to list in the node-states manifest")
    if set(dims) != set(NODE_OUTPUTS):
        raise BundleError(f"the node-states manifest needs the widths of {NODE_OUTPUTS}, got {sorted(dims)}")
    model = path / NODE_MODEL_NAME
    return {
        "format": NODE_FORMAT,
        "format_version": NODE_FORMAT_VERSION,
        "inputs": list(NODE_INPUTS),
        "outputs": {name: dims[name] for name in NODE_OUTPUTS},
        "opset": opset,
        "source": {"path": MODEL_NAME, "sha256": sha256_file(path / MODEL_NAME)},
        "file": {"path": NODE_MODEL_NAME, "sha256": sha256_file(model), "bytes": model.stat().st_size},
        **(provenance or {}),
    }


def read_node_manifest(bundle: BundleManifest, *, verify_checksums: bool = True) -> NodeManifest:
    """Read and check the sidecar of a (checked) bundle.

    Raises:
        BundleError: no sidecar, a manifest of another format, a sidecar cut from another model, or a checksum
            that does not match (the hint says how to write it anew).
    """
    where = bundle.path / NODE_MANIFEST_NAME
    regenerate = f"write it with 'eqsearch export node-states --bundle {bundle.path}'"
    try:
        raw = json.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleError(f"{bundle.path} has no node-states sidecar ({NODE_MANIFEST_NAME})", hint=regenerate) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise BundleError(f"{where} is not valid JSON: {error}", hint=regenerate) from None
    if (
        not isinstance(raw, dict)
        or raw.get("format") != NODE_FORMAT
        or raw.get("format_version") != NODE_FORMAT_VERSION
    ):
        raise BundleError(f"{where} is not a node-states manifest of version {NODE_FORMAT_VERSION}", hint=regenerate)
    if tuple(raw.get("inputs") or ()) != NODE_INPUTS or set(raw.get("outputs") or ()) != set(NODE_OUTPUTS):
        raise BundleError(f"{where}: inputs and outputs are not {NODE_INPUTS} -> {NODE_OUTPUTS}", hint=regenerate)
    source = str((raw.get("source") or {}).get("sha256", ""))
    if source != bundle.raw["files"][MODEL_NAME]["sha256"]:
        raise BundleError(
            f"{where}: the sidecar was cut from model {source[:16] or '?'}, the bundle's model is "
            f"{bundle.identity}: its node vectors would not belong to the bundle's formula vectors",
            hint=regenerate,
        )
    model = bundle.path / str((raw.get("file") or {}).get("path", NODE_MODEL_NAME))
    if not model.is_file():
        raise BundleError(f"{where} lists {model.name}, which is missing", hint=regenerate)
    if verify_checksums and sha256_file(model) != (raw.get("file") or {}).get("sha256"):
        raise BundleError(f"{model}: checksum mismatch with {NODE_MANIFEST_NAME}", hint=regenerate)
    return NodeManifest(model, source, {k: int(v) for k, v in raw["outputs"].items()}, raw)


def split_nodes(values: np.ndarray, graph: np.ndarray, num_graphs: int) -> list[np.ndarray]:
    """Rows of a batch's node values, one array per equation (``graph`` is non-decreasing).

    Shapes:
        values: ``[N, D]``; graph: ``[N]``; returns ``num_graphs`` arrays ``[n_i, D]``.
    """
    bounds = np.cumsum(np.bincount(graph, minlength=num_graphs))[:-1]
    return np.split(values, bounds)


class NodeEncoder:
    """The bundle's node vectors (or node states), run by onnxruntime from the sidecar.

    Args:
        bundle: a checked bundle manifest (`read_manifest`).
        output: ``node_vectors`` (64-d, the default) or ``node_states`` (512-d), or one of them through a projection
            the sidecar's manifest lists (``node_states@p64``: unit rows times its matrix).
        batch_size: equations per onnxruntime call.

    Attributes:
        identity: ``<bundle identity>/<output>`` (a projection's with the start of its checksum): node vectors of two
            identities are never compared.

    Raises:
        BundleError: the sidecar (or the projection) is missing, does not belong to the bundle, or does not load.
    """

    def __init__(self, bundle: BundleManifest, *, output: str = "node_vectors", batch_size: int = 256) -> None:
        import onnxruntime as ort

        try:
            check_node_output(output)
        except ValueError as error:
            raise BundleError(str(error)) from None
        self.bundle = bundle
        self.manifest = read_node_manifest(bundle)
        self.output = output
        self.base_output, _, key = output.partition(PROJECTED)
        self.projection = self._projection(key) if key else None
        self.dim = self.manifest.dims[self.base_output] if self.projection is None else self.projection.shape[1]
        self.identity = f"{bundle.identity}/{output}"
        if key:
            self.identity += ":" + str(self.manifest.raw["projections"][key]["sha256"])[:12]
        self.batch_size = batch_size
        self.vocabulary = load_bundle_vocabulary(bundle)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # scatter-adds on duplicate indices: see GraphEncoder
        options.inter_op_num_threads = 1
        try:
            self.session = ort.InferenceSession(
                str(self.manifest.path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as error:  # onnxruntime raises its own exception types
            raise BundleError(f"{self.manifest.path}: onnxruntime cannot load the sidecar ({error})") from None

    def _projection(self, key: str) -> np.ndarray:
        """The matrix of projection ``key``, checked against the sidecar's manifest."""
        entry = (self.manifest.raw.get("projections") or {}).get(key)
        hint = f"fit it with 'eqsearch export node-projection --bundle {self.bundle.path} --key {key}'"
        if not isinstance(entry, dict) or entry.get("output") != self.base_output:
            raise BundleError(f"{self.bundle.path}: no projection {key!r} of {self.base_output} listed", hint=hint)
        path = self.bundle.path / str(entry.get("path", ""))
        if not path.is_file() or sha256_file(path) != entry.get("sha256"):
            raise BundleError(f"{path}: missing, or its checksum differs from {NODE_MANIFEST_NAME}'s", hint=hint)
        matrix = np.load(path, allow_pickle=False)
        if matrix.shape != (self.manifest.dims[self.base_output], int(entry.get("dims", -1))):
            raise BundleError(f"{path}: a {matrix.shape} matrix does not project {self.base_output}", hint=hint)
        return np.ascontiguousarray(matrix, dtype=np.float32)

    def run_batch(self, batch: GraphArrays) -> list[np.ndarray]:
        """One onnxruntime call. Shapes: returns ``batch.num_graphs`` float32 arrays ``[n_i, dim]``."""
        if batch.num_graphs == 0:
            return []
        feeds = {name: getattr(batch, name) for name in NODE_INPUTS}
        (values,) = self.session.run([self.base_output], feeds)
        values = np.ascontiguousarray(values, dtype=np.float32)
        if self.projection is not None:
            values = values / np.maximum(np.linalg.norm(values, axis=1, keepdims=True), 1e-12) @ self.projection
        return split_nodes(values, batch.graph, batch.num_graphs)

    def encode(self, mathml: Sequence[str]) -> list[np.ndarray]:
        """The node vectors of MathML equations, in order (nodes in the featurizer's order).

        Raises:
            MathMLError: naming the index of the first malformed equation of a batch.
        """
        from eqsearch.engine.model.featurize import featurize_many

        out: list[np.ndarray] = []
        for start in range(0, len(mathml), self.batch_size):
            out.extend(self.run_batch(featurize_many(mathml[start : start + self.batch_size], self.vocabulary)))
        return out


def load_node_encoder(bundle: str | Path | None = None, **options: Any) -> NodeEncoder:
    """The node encoder of a bundle's sidecar (None: the shipped bundle).

    Args:
        bundle: the bundle directory.
        **options: ``output`` (``node_vectors``, ``node_states``, ``node_states@p64``), ``batch_size``.

    Raises:
        BundleError: the bundle or its sidecar is missing, changed, or not of the same model.
    """
    return NodeEncoder(read_manifest(Path(bundle) if bundle is not None else default_bundle_path()), **options)


def node_encoder_for(encoder: Any, output: str) -> NodeEncoder:
    """The node encoder (``output`` of its sidecar) of the bundle a formula encoder was loaded from: a composite's
    graph network part's (`engine.model.composite`); the shipped network's for an encoder without a bundle manifest
    (a test's hashing encoder)."""
    for part in getattr(encoder, "encoders", ()):
        manifest = getattr(part, "manifest", None)
        if manifest is not None and manifest.encoder == "kdd20-gcn":
            return load_node_encoder(manifest.path, output=output)
    return load_node_encoder(getattr(getattr(encoder, "manifest", None), "path", None), output=output)
