"""Training the ECML'19 bitmap CNN: render once into a cache, train on the KDD'20 triplets, evaluate held out."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from eqsearch.training.bitmap import BitmapTrainConfig, load_bitmap_checkpoint, render_corpus, train_bitmap_cnn
from eqsearch.training.bitmap_model import BitmapCNN, swapped_triplet_loss


def test_the_swapped_triplet_loss_takes_the_harder_of_the_two_negatives() -> None:
    a = torch.tensor([[1.0, 0.0]])
    p = torch.tensor([[0.0, 1.0]])
    n = torch.tensor([[0.6, 0.8]])  # closer to p (0.8) than to a (0.6)
    assert swapped_triplet_loss(a, p, n).item() == pytest.approx(1.0 - 0.0 + 0.8)
    assert swapped_triplet_loss(a, p, n, squared=True).item() == pytest.approx(1.8**2)
    assert swapped_triplet_loss(a, a, -a).item() == 0.0


def test_the_cnn_maps_bitmaps_to_unit_vectors() -> None:
    model = BitmapCNN().eval()
    bitmaps = torch.zeros((3, 32, 333), dtype=torch.uint8)
    bitmaps[1, 10:20, 100:150] = 255
    bitmaps[2, 5:25, 10:300:7] = 128
    with torch.no_grad():
        vectors = model(bitmaps)
    assert vectors.shape == (3, 64)
    assert torch.allclose(vectors.norm(dim=1), torch.ones(3), atol=1e-3)


def test_a_short_run_renders_once_trains_and_evaluates(papers_jsonl: Path, tmp_path: Path) -> None:
    config = BitmapTrainConfig(
        corpus=str(papers_jsonl), run_dir=str(tmp_path / "run"), steps=3, batch_size=4, eval_triplets=40,
        test_fraction=0.5,
    )  # fmt: skip
    result = train_bitmap_cnn(config, log=lambda _: None)
    run = tmp_path / "run"
    assert (run / "bitmaps.npz").is_file() and (run / "bitmap-checkpoint.pt").is_file()
    evaluation = json.loads((run / "evaluation.json").read_text())
    assert 0.0 <= evaluation["model"]["score"] <= 1.0 and evaluation["steps"] == 3
    assert "bag_of_words" in evaluation and result.data_summary["all"]["render_failures"] == {}
    cached = render_corpus(config, log=lambda _: None)  # from the cache this time: no rendering
    assert cached.render_seconds == 0.0 and cached.bitmaps.shape[1:] == (32, 333)
    assert len(cached.bitmaps) == len(cached.corpus.graphs) and cached.bitmaps.any(axis=(1, 2)).all()
    model, state = load_bitmap_checkpoint(run / "bitmap-checkpoint.pt")
    with torch.no_grad():
        again = model(torch.from_numpy(result.test_bitmaps[:4])).numpy()
        direct = result.model.eval()(torch.from_numpy(result.test_bitmaps[:4])).numpy()
    assert np.allclose(again, direct, atol=1e-6) and state["training"]["parameters"] == 45_632
