"""The shipped KDD'20 network fine-tuned on the structural teacher: its weights read back from the bundle's ONNX give
the bundle's vectors, a few steps on a tiny set keep the loss finite and move the vectors (the anchor holds them
nearer the original), and the tuned network exports as a bundle of the same kind that passes the parity check."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from eqsearch.engine.model import load_encoder
from eqsearch.engine.model.bundle import default_bundle_path, read_manifest, shipped_bundle_path
from eqsearch.engine.model.structure_bag import StructureFeatures
from eqsearch.export.bundle import write_bundle
from eqsearch.training.gcn_distill import (
    GcnTuneConfig,
    average_states,
    cosine_figures,
    embed_all,
    featurize_all,
    model_from_bundle,
    tune,
)
from eqsearch.training.structure_distill import prepare


def _mi(x: str) -> str:
    return f"<mi>{x}</mi>"


def _sum(*letters: str, power: str = "2") -> str:
    return "<math>" + "<mo>+</mo>".join(f"<msup>{_mi(x)}<mn>{power}</mn></msup>" for x in letters) + "</math>"


FORMULAS = [_sum("x", "y"), _sum("a", "b"), _sum("x", "y", "z"), _sum("x", "y", power="3")]
FORMULAS += [f"<math>{_mi('f')}<mo>(</mo>{_mi(x)}<mo>)</mo><mo>=</mo><mn>{k}</mn></math>" for x in "xyz" for k in "12"]
FORMULAS += [f"<math><mfrac>{_mi(a)}{_mi(b)}</mfrac></math>" for a, b in ("ab", "xy", "pq", "uv")]


DOCUMENTS = [f"paper-{k // 3}" for k in range(len(FORMULAS))]


def _tuned(anchor_weight: float, steps: int = 6, **options: float) -> tuple[np.ndarray, np.ndarray, dict]:
    torch.set_num_threads(1)
    model, vocabulary = model_from_bundle(default_bundle_path())
    graphs, failed = featurize_all(FORMULAS, vocabulary)
    assert failed == 0
    original = embed_all(model, graphs)
    data = prepare(FORMULAS, StructureFeatures(), vectors=original, views=False, documents=DOCUMENTS)
    config = GcnTuneConfig(
        steps=steps,
        seeds=3,
        per_seed=4,
        pool=8,
        learning_rate=1e-3,
        warmup_steps=1,
        anchor_weight=anchor_weight,
        **options,  # type: ignore[arg-type]
    )
    history = tune(config, model, graphs, data, log=lambda _: None)  # type: ignore[arg-type]
    return original, embed_all(model, graphs), {"history": history, "model": model, "graphs": graphs}


def test_the_weights_read_from_the_bundle_give_the_bundles_vectors() -> None:
    model, vocabulary = model_from_bundle(default_bundle_path())
    graphs, failed = featurize_all([*FORMULAS, "", "<math><mi>x</mi"], vocabulary)
    assert failed == 2 and graphs[-1] is None and graphs[-2] is None
    ours = embed_all(model, graphs)
    assert not ours[-2:].any()  # no graph: a zero row, never ranked
    theirs = load_encoder(default_bundle_path()).encode(FORMULAS)
    np.testing.assert_allclose(ours[: len(FORMULAS)], theirs, atol=1e-5)


def test_a_bundle_of_another_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="not the graph network"):
        model_from_bundle(shipped_bundle_path("bitmap-bundle"))


def test_a_few_steps_keep_the_loss_finite_and_move_the_vectors_less_with_a_stronger_anchor(tmp_path: Path) -> None:
    original, free, run = _tuned(anchor_weight=0.0)
    losses = run["history"]["loss"]
    assert run["history"]["steps"] == 6
    assert all(np.isfinite([r["loss"], r["distill"], r["anchor"]]).all() for r in losses)

    def cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)

    assert cos(original, free).mean() < 0.999  # the vectors changed
    _, held, _ = _tuned(anchor_weight=100.0)
    assert cos(original, held).mean() > cos(original, free).mean()

    # the tuned network exports as a kdd20-gcn bundle whose onnxruntime vectors match torch's
    bundle = write_bundle(
        run["model"],
        model_from_bundle(default_bundle_path())[1],
        tmp_path / "bundle",
        training_config={"objective": "test"},
        parity_graphs=run["graphs"],
    )
    manifest = read_manifest(bundle)
    assert manifest.encoder == "kdd20-gcn" and manifest.raw["parity"]["equations"] == len(FORMULAS)
    np.testing.assert_allclose(load_encoder(bundle).encode(FORMULAS), free, atol=1e-4)


def test_a_soup_is_the_mean_of_the_runs_weights_and_other_networks_are_refused(tmp_path: Path) -> None:
    _, _, first = _tuned(anchor_weight=0.0, steps=3)
    _, _, second = _tuned(anchor_weight=0.0, steps=3, seed=1, same_document=1, context_weight=0.5)
    paths = []
    for k, run in enumerate((first, second)):
        paths.append(tmp_path / f"state-{k}.pt")
        torch.save(run["model"].state_dict(), paths[-1])
    soup = average_states(paths)
    a, b = first["model"].state_dict(), second["model"].state_dict()
    weight = "layers.0.lin.weight" if "layers.0.lin.weight" in a else next(n for n, v in a.items() if v.ndim == 2)
    assert not torch.equal(a[weight], b[weight])  # other batches (seed, contextual neighbours): other weights
    torch.testing.assert_close(soup[weight], (a[weight] + b[weight]) / 2)
    model, _ = model_from_bundle(default_bundle_path())
    model.load_state_dict(soup)  # the soup is a network of the same shape
    torch.save({"other": torch.zeros(2)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not the same network"):
        average_states([paths[0], tmp_path / "other.pt"])
    with pytest.raises(ValueError, match="no states"):
        average_states([])


def test_the_contextual_signal_needs_the_documents() -> None:
    model, vocabulary = model_from_bundle(default_bundle_path())
    graphs, _ = featurize_all(FORMULAS, vocabulary)
    data = prepare(FORMULAS, StructureFeatures(), vectors=embed_all(model, graphs), views=False)
    config = GcnTuneConfig(steps=1, seeds=2, per_seed=2, pool=4, context_weight=0.5)
    with pytest.raises(ValueError, match="documents"):
        tune(config, model, graphs, data, log=lambda _: None)  # type: ignore[arg-type]


def test_cosine_figures_rank_by_cosine_and_leave_out_zero_rows() -> None:
    collection = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [0.7, 0.7]], dtype=np.float32)
    topics = np.array([[1.0, 0.1]], dtype=np.float32)
    qrels = {"T": {"a": 3.0, "c": 3.0}}
    figures = cosine_figures(collection, topics, ["a", "b", "c", "d"], ["T"], qrels)
    # a is first; c (relevant) has no vector and is never ranked: one of two relevant found at rank 1
    assert figures["map_prime"] == pytest.approx(0.5)
