"""`eqsearch ablate`: the Table-1-shaped study writes its table per variant, reuses finished runs, and the shipped
training config names no machine-specific path."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from eqsearch.training.ablation import RESULT_FILE, run_ablations, slug
from eqsearch.training.config import TrainConfig, load_train_config

REPO = Path(__file__).resolve().parents[2]


def _config(papers: Path, run_dir: Path) -> TrainConfig:
    return TrainConfig(
        corpus=str(papers),
        run_dir=str(run_dir),
        test_fraction=0.3,
        hidden_dim=8,
        embedding_dim=4,
        train_triplets=16,
        eval_triplets=20,
        batch_size=8,
        epochs=1,
        learning_rate=1e-2,
        threads=1,
        log_every=1,
        checkpoint_every=2,
    )


def test_ablation_writes_table_and_reuses_finished_variants(papers_jsonl: Path, tmp_path: Path) -> None:
    config = _config(papers_jsonl, tmp_path / "abl")
    out = tmp_path / "table.md"
    lines: list[str] = []
    table = run_ablations(config, out, ("Full Model", "No Masking"), log=lines.append)
    assert out.read_text() == table
    assert "| Full Model |" in table and "| No Masking |" in table and "| Bag of words (§6.3) |" in table
    assert "| No Augmentation | not run |" in table
    assert "Theorem 5.1" in table and "Budget per variant: 2 steps of 8 triplets" in table
    assert Path(f"{config.run_dir}-{slug('No Masking')}", RESULT_FILE).is_file()
    lines.clear()
    assert run_ablations(config, out, ("No Masking",), log=lines.append).count("not run") == 3
    assert any(line.startswith("ablation: reusing") for line in lines)


def test_ablation_rejects_unknown_variant(papers_jsonl: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown ablation variants"):
        run_ablations(_config(papers_jsonl, tmp_path / "abl"), tmp_path / "t.md", ("No Dropout",))


def test_default_config_names_no_machine_path() -> None:
    path = REPO / "training" / "configs" / "default.toml"
    values = tomllib.loads(path.read_text())
    assert "corpus" not in values, "the corpus is passed on the command line (make bundle)"
    assert not any(isinstance(v, str) and v.startswith(("/", "~")) for v in values.values())
    config = load_train_config(path)
    assert (config.hidden_dim, config.embedding_dim, config.batch_size, config.loss) == (512, 64, 128, "histogram")
