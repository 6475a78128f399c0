"""Equation encoders: MathML in, float32 vectors out. The runtime side of the model bundle; never imports torch.

`Encoder` is the protocol every encoder follows, so that other models (the ECML'19 bitmap CNN, node-level
multi-vector encoders) can be added beside the KDD'20 graph network: register a loader in `ENCODER_LOADERS` under
the manifest's ``encoder`` kind, and `load_encoder` picks it.

Which onnxruntime execution provider runs a bundle is a setting (`ONNX_PROVIDERS`: ``cpu``, ``cuda``, ``auto``),
read at the edge from ``EQSEARCH_ONNX_PROVIDER`` (`onnx_provider_setting`) and passed to `load_encoder` as
``provider``: ``cuda`` asked of an onnxruntime without a working CUDA provider is an error that says so, never a
silent fall back to the CPU.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
from eqsearch.engine.model.bundle import (
    BundleError,
    BundleManifest,
    ManifestEncoder,
    load_bundle_vocabulary,
    read_manifest,
    search_bundle_path,
)
from eqsearch.engine.model.graph import GraphArrays, concatenate_graphs

if TYPE_CHECKING:
    import onnxruntime as ort


@runtime_checkable
class Encoder(Protocol):
    """Anything that turns equations into fixed-width vectors.

    Attributes:
        kind: the encoder kind (the bundle manifest's ``encoder``).
        dim: the vector width.
        similarity: how vectors are compared (``max_inner_product`` or ``cosine``).
        identity: what makes the vectors (kind + model checksum): an equations index records the identity that
            filled it, and vectors of another identity are never mixed into it or compared with it.
    """

    kind: str
    dim: int
    similarity: str
    identity: str

    def encode(self, mathml: Sequence[str]) -> np.ndarray:
        """Vectors of the equations, in order. Shapes: returns ``[len(mathml), dim]`` float32."""
        ...


#: The settings of the execution provider: ``cpu`` (onnxruntime's CPU provider alone), ``cuda`` (the CUDA provider,
#: an error where onnxruntime has none), ``auto`` (CUDA where onnxruntime-gpu offers it, else the CPU).
ONNX_PROVIDERS = ("cpu", "cuda", "auto")
#: The variable the edges (CLI, web app) read the setting from (`onnx_provider_setting`).
PROVIDER_VARIABLE = "EQSEARCH_ONNX_PROVIDER"
_CUDA = "CUDAExecutionProvider"
_CUDA_HINT = (
    "install onnxruntime-gpu in place of onnxruntime (pip uninstall onnxruntime; pip install onnxruntime-gpu) on a "
    f"machine with an NVIDIA GPU, CUDA 12 and cuDNN 9, or set {PROVIDER_VARIABLE}=cpu"
)


def onnx_provider_setting(environ: Mapping[str, str], default: str = "cpu") -> str:
    """The execution provider an edge's environment asks for (``EQSEARCH_ONNX_PROVIDER``, case and spaces ignored;
    unset or empty: ``default``). Library code never reads ``os.environ``: the edge passes it here.

    Raises:
        BundleError: a value that is not one of `ONNX_PROVIDERS`.
    """
    value = (environ.get(PROVIDER_VARIABLE) or default).strip().lower()
    if value not in ONNX_PROVIDERS:
        raise BundleError(
            f"{PROVIDER_VARIABLE}={environ.get(PROVIDER_VARIABLE)!r} is not an execution provider",
            hint=f"use one of {', '.join(ONNX_PROVIDERS)}",
        )
    return value


def available_providers(prefer_gpu: bool = True, provider: str | None = None) -> list[str]:
    """onnxruntime execution providers to use, CPU last. ``provider`` (`ONNX_PROVIDERS`) decides where given;
    otherwise ``prefer_gpu`` means ``auto`` and its absence ``cpu``.

    Raises:
        BundleError: ``provider`` is unknown, or is ``cuda`` and this onnxruntime has no CUDA provider.
    """
    import onnxruntime as ort

    setting = provider if provider is not None else ("auto" if prefer_gpu else "cpu")
    if setting not in ONNX_PROVIDERS:
        raise BundleError(f"unknown execution provider {setting!r}", hint=f"use one of {', '.join(ONNX_PROVIDERS)}")
    have = ort.get_available_providers()
    if setting == "cuda" and _CUDA not in have:
        raise BundleError(
            f"the CUDA execution provider was asked for ({PROVIDER_VARIABLE}=cuda), but onnxruntime "
            f"{ort.__version__} offers only {', '.join(have)}",
            hint=_CUDA_HINT,
        )
    chosen = [_CUDA] if setting != "cpu" and _CUDA in have else []
    return [*chosen, "CPUExecutionProvider"]


def open_bundle_session(
    manifest: BundleManifest, *, prefer_gpu: bool = True, provider: str | None = None
) -> ort.InferenceSession:
    """An onnxruntime session on a bundle's model, checked against the manifest's inputs and output.

    One intra-op thread: the graph network's sums over neighbours and its pooling are ``ScatterND(reduction="add")``
    on duplicate indices (a parent's many children, every node of an equation), and onnxruntime's CPU kernel splits
    that work across intra-op threads without serialising the duplicates: with 2 threads, a 963-node equation's
    vector varied by up to 2.5 (max abs) from run to run; with 1 thread it is bit-identical and matches torch.
    Throughput comes from batching (and from several encoder processes where needed); the CPU is shared with
    Elasticsearch.

    Args:
        manifest: a checked manifest (see `read_manifest`).
        prefer_gpu: use the CUDA provider when onnxruntime-gpu is installed (where ``provider`` is not given).
        provider: the execution provider setting (`ONNX_PROVIDERS`; None: as ``prefer_gpu`` says).

    Raises:
        BundleError: the model does not load, its inputs or output are not those of the manifest, or ``cuda`` was
            asked for and the session cannot run on it (no CUDA provider, or its libraries missing).
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    providers = available_providers(prefer_gpu, provider)
    try:
        session = ort.InferenceSession(str(manifest.model_path), sess_options=options, providers=providers)
    except Exception as error:  # onnxruntime raises its own exception types
        raise BundleError(
            f"{manifest.model_path}: onnxruntime cannot load the model ({str(error).splitlines()[0]})",
            hint=f"the bundle declares opset {manifest.opset}; check that this onnxruntime supports it",
        ) from None
    if provider == "cuda" and _CUDA not in session.get_providers():  # onnxruntime falls back without CUDA's libraries
        raise BundleError(
            f"{manifest.model_path}: the CUDA execution provider did not start (the session runs on "
            f"{', '.join(session.get_providers())}); onnxruntime logs which CUDA or cuDNN library it lacks",
            hint=_CUDA_HINT,
        )
    names = tuple(i.name for i in session.get_inputs())
    if names != manifest.inputs:
        raise BundleError(f"{manifest.model_path}: the model takes inputs {names}, the manifest says {manifest.inputs}")
    outputs = session.get_outputs()
    if len(outputs) != 1 or outputs[0].name != manifest.output or outputs[0].shape[-1] != manifest.embedding_dim:
        raise BundleError(
            f"{manifest.model_path}: the model's output {[(o.name, o.shape) for o in outputs]} is not "
            f"'{manifest.output}' of width {manifest.embedding_dim} as the manifest says"
        )
    return session


class GraphEncoder(ManifestEncoder):
    """The KDD'20 graph network of a model bundle, run by onnxruntime.

    MathML goes through the bundle's vocabulary (`engine.model.featurize`), batches of graphs through the ONNX model.

    Args:
        manifest: a checked manifest (see `read_manifest`).
        batch_size: equations per onnxruntime call.
        prefer_gpu: use the CUDA provider when onnxruntime-gpu is installed (where ``provider`` is not given).
        provider: the execution provider setting (`ONNX_PROVIDERS`).

    Raises:
        BundleError: the ONNX model does not load or does not match the manifest, or CUDA is asked for and absent.
    """

    def __init__(
        self,
        manifest: BundleManifest,
        *,
        batch_size: int = 256,
        prefer_gpu: bool = True,
        provider: str | None = None,
    ) -> None:
        self.manifest = manifest
        self.batch_size = batch_size
        self.vocabulary = load_bundle_vocabulary(manifest)
        self.session = open_bundle_session(manifest, prefer_gpu=prefer_gpu, provider=provider)

    @property
    def providers(self) -> list[str]:
        return self.session.get_providers()

    def run_batch(self, batch: GraphArrays) -> np.ndarray:
        """One onnxruntime call on a batch of graphs. Shapes: returns ``[batch.num_graphs, dim]`` float32."""
        if batch.num_graphs == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        feeds = {
            "tag": batch.tag,
            "attr": batch.attr,
            "char": batch.char,
            "pos": batch.pos,
            "edge_index": batch.edge_index,
            "graph": batch.graph,
            "graph_sizes": np.bincount(batch.graph, minlength=batch.num_graphs).astype(np.int64),
        }
        (vectors,) = self.session.run([self.manifest.output], feeds)
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def encode_graphs(self, graphs: Sequence[GraphArrays]) -> np.ndarray:
        """Vectors of featurized equations. Shapes: returns ``[len(graphs), dim]`` float32."""
        out = [
            self.run_batch(concatenate_graphs(graphs[i : i + self.batch_size]))
            for i in range(0, len(graphs), self.batch_size)
        ]
        return np.concatenate(out) if out else np.zeros((0, self.dim), dtype=np.float32)

    def featurize(self, mathml: Sequence[str]) -> GraphArrays:
        """One batch of MathML -> graph arrays with the bundle's vocabulary.

        Raises:
            MathMLError: naming the index of the first malformed equation.
        """
        from eqsearch.engine.model.featurize import featurize_many

        return featurize_many(mathml, self.vocabulary)

    def encode(self, mathml: Sequence[str]) -> np.ndarray:
        """Vectors of MathML equations, in order.

        Raises:
            MathMLError: naming the index (in ``mathml``) of the first malformed equation.
        """
        from eqsearch.engine.model.featurize import MathMLError

        out = []
        for start in range(0, len(mathml), self.batch_size):
            try:
                batch = self.featurize(mathml[start : start + self.batch_size])
            except MathMLError as error:
                raise MathMLError(f"{error.message} (batch starting at input {start})", hint=error.hint) from None
            out.append(self.run_batch(batch))
        return np.concatenate(out) if out else np.zeros((0, self.dim), dtype=np.float32)


def _bitmap_encoder(manifest: BundleManifest, **options: Any) -> Encoder:
    """The ECML'19 bitmap CNN (`engine.model.bitmap_encoder`), imported only when such a bundle is loaded."""
    from eqsearch.engine.model.bitmap_encoder import BitmapEncoder

    return BitmapEncoder(manifest, **options)


def _structure_bag_encoder(manifest: BundleManifest, **options: Any) -> Encoder:
    """The structure-bag encoder (`engine.model.structure_bag`): hashed structural terms, a learned projection."""
    from eqsearch.engine.model.structure_bag import StructureBagEncoder

    return StructureBagEncoder(manifest, **options)


def _composite_encoder(manifest: BundleManifest, **options: Any) -> Encoder:
    """Other bundles' vectors side by side, weighted (`engine.model.composite`)."""
    from eqsearch.engine.model.composite import CompositeEncoder

    return CompositeEncoder(manifest, **options)


#: encoder kind -> loader(manifest, **options). Add new encoders here.
ENCODER_LOADERS: dict[str, Callable[..., Encoder]] = {
    "kdd20-gcn": GraphEncoder,
    "ecml19-cnn": _bitmap_encoder,
    "structure-bag": _structure_bag_encoder,
    "composite": _composite_encoder,
}


def load_encoder(bundle: str | Path | None = None, **options: Any) -> Encoder:
    """Load and check a model bundle and return its encoder.

    Args:
        bundle: the bundle directory (None: the search bundle shipped with eqsearch, `search_bundle_path`).
        **options: passed to the encoder (``batch_size``; ``provider``, an `ONNX_PROVIDERS` setting, or the older
            ``prefer_gpu``).

    Raises:
        BundleError: the bundle is missing, corrupted, or does not match this eqsearch (the message says which).
    """
    path = Path(bundle) if bundle is not None else search_bundle_path()
    manifest = read_manifest(path)
    loader = ENCODER_LOADERS.get(manifest.encoder)
    if loader is None:  # read_manifest knows the kind but no loader is registered
        raise BundleError(f"{path}: no encoder is registered for kind '{manifest.encoder}'")
    return loader(manifest, **options)
