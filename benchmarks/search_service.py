"""The system under test of the search benchmark: the client of the configured node, the encoder (the model bundle,
or the tests' hashing stand-in) and the `SearchService` version with its command-line settings.

Kept apart so that every ``benchmarks/search.py`` command and its client processes build them the same way.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

import numpy as np
from eqsearch.engine.es.client import connect
from eqsearch.engine.es.config import EsConfig
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.service import SearchService
from search_measure import emit

ROOT = Path(__file__).resolve().parent.parent


def load_encoder_or_standin(bundle: str | None = None, quiet: bool = False) -> Any:
    """The encoder of ``bundle`` (a model bundle directory; ``"standin"`` for the stand-in; None: the installed
    bundle, else the tests' hashing encoder with soft-normalised norms).

    Query vectors must come from the model that encoded the indexed equations (the base ingest's), so a bundle
    that was asked for and does not load is an error, never a silent switch to the stand-in.
    """
    if bundle != "standin":
        try:
            from eqsearch.engine.model.encoder import load_encoder

            return load_encoder(bundle)
        except Exception as error:
            if bundle is not None:
                raise
            if not quiet:
                emit(note="no model bundle, using the hashing stand-in", error=str(error)[:200])
    spec = importlib.util.spec_from_file_location("_hashing_encoder", ROOT / "tests/hashing_encoder.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    hashing = module.HashingEncoder()

    class SoftNormHashing:
        kind, dim, similarity, identity = "hashing-standin", hashing.dim, "max_inner_product", "hashing-standin:1"

        def encode(self, mathml: list[str]) -> np.ndarray:
            unit = hashing.encode(mathml)
            sizes = np.array([len(hashing._features(m)) for m in mathml], dtype=np.float32)
            return unit * (sizes / (1.0 + sizes))[:, None] ** 0.5 * (0.5 + 0.5 * (sizes > 3))[:, None]

    return SoftNormHashing()


def encoder_identity(encoder: Any) -> dict[str, str]:
    """Which model made the query vectors: the bundle directory and the first digits of its ONNX file's sha256."""
    manifest = getattr(encoder, "manifest", None)
    if manifest is None:
        return {"encoder": str(getattr(encoder, "kind", "?"))}
    sha = ((manifest.raw.get("files") or {}).get("model.onnx") or {}).get("sha256", "")
    return {"encoder": manifest.encoder, "bundle": str(manifest.path), "model_sha256": sha[:12]}


def bundle_spec(encoder: Any) -> str:
    """What a client process loads to get the same encoder as this one."""
    manifest = getattr(encoder, "manifest", None)
    return str(manifest.path) if manifest is not None else "standin"


def client_from_env():
    client, info = connect(EsConfig.from_env())
    return client.options(request_timeout=300), info


def service_classes(args: argparse.Namespace) -> tuple[Any, Any]:
    """`SearchService` and `HybridQuery`, from engine/search/service.py or from ``--service-file`` (another version
    of it, e.g. ``git show REV:engine/search/service.py > old.py``, to compare two versions back to back on the same
    index)."""
    if not getattr(args, "service_file", None):
        return SearchService, HybridQuery
    spec = importlib.util.spec_from_file_location("_service_under_test", args.service_file)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["_service_under_test"] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.SearchService, module.HybridQuery


def service_options(args: argparse.Namespace, service_class: Any = SearchService) -> dict[str, Any]:
    """`SearchService` settings given on the command line (the service's defaults otherwise)."""
    names = ("candidate_depth", "num_candidates_factor")
    options = {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
    if getattr(args, "ranker", None) and "ranking" in inspect.signature(service_class).parameters:
        from eqsearch.engine.search.rankers import get_ranker

        options["ranking"] = get_ranker(args.ranker)
    if "formula_cache_size" in inspect.signature(service_class).parameters:
        # off unless asked for: every kind reuses the same formulas in the same client, so a cache would serve the
        # hybrid queries the vectors the formula queries left (cached figures are measured apart, see profile)
        options["formula_cache_size"] = getattr(args, "formula_cache_size", 0)
    return options


def printable(options: dict[str, Any]) -> dict[str, Any]:
    """Service options as JSON can show them (a ranking by its name)."""
    return {key: getattr(value, "name", value) for key, value in options.items()}


def add_service_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--service-file", help="engine/search/service.py of another version, to compare (see profile)")
    parser.add_argument("--candidate-depth", type=int, help="SearchService candidate_depth (its default)")
    parser.add_argument("--num-candidates-factor", type=int, help="SearchService num_candidates_factor")
    parser.add_argument("--formula-cache-size", type=int, default=0, help="SearchService formula_cache_size (0)")
    parser.add_argument("--ranker", help="the formula ranking (eqsearch evaluate formulas --list-rankers; default: "
                        "production's)")  # fmt: skip
