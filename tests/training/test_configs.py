"""Every shipped training config loads into a valid `TrainConfig` (a typo in a key fails here, not hours later)."""

from __future__ import annotations

from pathlib import Path

import pytest
from eqsearch.training.config import load_train_config

CONFIGS = sorted((Path(__file__).parents[2] / "training" / "configs").glob("*.toml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[f"{p.stem}.toml" for p in CONFIGS])
def test_the_shipped_config_loads(path: Path) -> None:
    config = load_train_config(path)
    assert config.max_steps and config.embedding_dim == 64


def test_the_contrastive_config_differs_from_the_paper_where_it_says() -> None:
    config = load_train_config(Path(__file__).parents[2] / "training" / "configs" / "contrastive.toml")
    assert (config.loss, config.self_share, config.inline) == ("infonce", 0.5, True)
