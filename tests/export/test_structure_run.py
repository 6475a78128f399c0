"""`export.structure_run`'s evaluation hook: with ``--save-evals`` each evaluation saves the model it scored."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import torch
from eqsearch.export import structure_run
from eqsearch.training.structure_model import StructureBagConfig, StructureBagModel


@pytest.mark.parametrize("save", [True, False])
def test_each_evaluation_saves_the_model_it_scored_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, save: bool
) -> None:
    monkeypatch.setattr(structure_run, "head_figures", lambda *a: {"dev": {"ndcg_prime": 0.5}})
    args = argparse.Namespace(out=tmp_path, save_evals=save, eval_every=500, alone_head_share=0.3)
    evaluate = structure_run.evaluator(None, None, args, "full")
    model = StructureBagModel(StructureBagConfig(buckets=64, width=8, hidden=8, embedding_dim=4))
    assert evaluate(model) == {"dev": {"ndcg_prime": 0.5}}
    with torch.no_grad():
        model.table.weight.add_(1.0)
    evaluate(model)
    saved = sorted(p.name for p in (tmp_path / "checkpoints").glob("*.pt")) if save else []
    assert saved == (["full-step-1000.pt", "full-step-500.pt"] if save else [])
    if save:
        last = structure_run.load_state(tmp_path / "checkpoints" / "full-step-1000.pt")
        assert torch.allclose(last.table.weight, model.table.weight, atol=1e-2)
