"""Training the ECML'19 bitmap CNN on the contextual signal: formulas of the same section or paper are similar.

The data are the KDD'20 model's: the same papers JSONL, the same corpus filters (`training.dataset.build_corpus`
with the default bundle's vocabulary, so that exactly the equations the graph network trains on are kept, less
those that do not render), the same split by paper and the same triplet sampler (`training.triplets`). Every
equation is rendered once (`engine.model.bitmap_render`) into a numpy cache in the run directory, so that steps
never render.

The optimisation follows the paper (§4.3): Adam, minibatches of 100 triplets sampled afresh for every step, the
swapped triplet loss with margin 1 (eq. 3). Where it deviates, because 2 CPU cores afford a few hundred steps where
the paper took 30 epochs of 600k equations: the plain hinge instead of the squared one and a batch norm before the
output normalisation (with both of the paper's choices the vectors collapsed onto one direction within 40 steps:
`bitmap_model.swapped_triplet_loss`), and Adam at 1e-3 divided by 10 once, after two thirds of the run (the paper:
2.5e-4, divided by 10 every 10 of 30 epochs). The held-out evaluation is KDD'20's
(`training.evaluate.held_out_report`: ranking score of triplets from held-out papers, beside the bag-of-words
baseline), so the figure is comparable with the graph network's on the same triplets.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.model.bitmap_render import BitmapRenderer, RenderConfig
from eqsearch.engine.model.graph import GraphArrays
from eqsearch.training.bitmap_model import BitmapCNN, BitmapCNNConfig, swapped_triplet_loss
from eqsearch.training.dataset import Corpus, build_corpus, corpus_file, load_corpus, save_corpus, split_papers
from eqsearch.training.triplets import Triplets, TripletSampler

CHECKPOINT_NAME = "bitmap-checkpoint.pt"


@dataclass(frozen=True)
class BitmapTrainConfig:
    """A training run of the bitmap CNN (the paper's values in brackets where they differ).

    Args:
        corpus: the papers JSONL written by ingest (``ingest/FORMAT.md``).
        run_dir: where the bitmap cache, the checkpoint and the evaluation go.
        architecture: ``small`` or ``large`` (`BitmapCNNConfig`).
        steps: optimizer steps [30 epochs of the paper's 600k equations; 360 take about 26 min on one busy core].
        batch_size: triplets per step [100].
        learning_rate: Adam's initial learning rate [2.5e-4], divided by 10 after two thirds of ``steps`` [every
            third].
        margin: Δ of the triplet loss [1].
        squared: square the hinge [True].
        test_fraction: share of papers held out (KDD'20's split, `training.dataset.split_papers`).
        split_seed: seed of the paper split.
        eval_triplets: triplets sampled from the held-out papers.
        seed: seed of initialisation and sampling.
        threads: torch intra-op threads (0 = torch's default).
        min_nodes, max_nodes: the KDD'20 corpus filters (equations of fewer or more layout-tree nodes are skipped).
        em_px: pixels per em of the rendering (`RenderConfig`).
    """

    corpus: str = ""
    run_dir: str = "runs/bitmap"
    architecture: str = "small"
    steps: int = 360
    batch_size: int = 100
    learning_rate: float = 1e-3
    margin: float = 1.0
    squared: bool = False
    test_fraction: float = 0.2
    split_seed: int = 0
    eval_triplets: int = 10_000
    seed: int = 0
    threads: int = 1
    min_nodes: int = 2
    max_nodes: int = 512
    em_px: int = 16

    def render_config(self) -> RenderConfig:
        return RenderConfig(em_px=self.em_px)


@dataclass
class BitmapCorpus:
    """A corpus (papers, sections, citations) with one rendered bitmap per equation.

    Attributes:
        corpus: papers and their equation graphs (the graphs feed the bag-of-words baseline and the size filter).
        bitmaps: ``[len(corpus.graphs), height, width]`` uint8 ink.
        render_failures: equations dropped because they did not render, by reason.
        render_seconds: wall time of rendering (0 when read from the cache).
    """

    corpus: Corpus
    bitmaps: np.ndarray
    render_failures: dict[str, int]
    render_seconds: float


def render_corpus(config: BitmapTrainConfig, log: Callable[[str], None] = print) -> BitmapCorpus:
    """The corpus of the papers JSONL with every equation rendered, cached in ``run_dir`` (``bitmaps.npz``).

    Raises:
        EqsearchError: the corpus file is missing.
    """
    from eqsearch.engine.model.bundle import default_bundle_path, load_bundle_vocabulary, read_manifest
    from eqsearch.engine.model.featurize import featurize_mathml
    from eqsearch.ingest.records import read_papers

    corpus_path = corpus_file(config.corpus)
    run_dir = Path(config.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    render = config.render_config()
    stamp = {
        "corpus": str(corpus_path.resolve()),
        "size": corpus_path.stat().st_size,
        "mtime": corpus_path.stat().st_mtime,
        "nodes": [config.min_nodes, config.max_nodes],
        "render": render.identity(),
    }
    cache, stamp_path, corpus_cache = run_dir / "bitmaps.npz", run_dir / "bitmaps.stamp.json", run_dir / "corpus.npz"
    if cache.is_file() and corpus_cache.is_file() and stamp_path.is_file():
        saved = json.loads(stamp_path.read_text())
        if saved.get("stamp") == stamp:
            log(f"bitmaps from cache {cache}")
            return BitmapCorpus(load_corpus(corpus_cache), np.load(cache)["bitmaps"], saved["failures"], 0.0)
    vocabulary = load_bundle_vocabulary(read_manifest(default_bundle_path()))
    bitmap_of: dict[int, np.ndarray] = {}
    started = time.perf_counter()
    with BitmapRenderer(render) as renderer:

        def featurize(mathml: str) -> GraphArrays:
            result = renderer.render(mathml)  # a formula that does not render is skipped like one that does not parse
            if result.bitmap is None:
                raise ValueError(result.reason)
            graph = featurize_mathml(mathml, vocab=vocabulary)
            bitmap_of[id(graph)] = result.bitmap
            return graph

        corpus = build_corpus(
            read_papers(corpus_path), featurize, min_nodes=config.min_nodes, max_nodes=config.max_nodes
        )
        failures = dict(renderer.failures)
    seconds = time.perf_counter() - started
    bitmaps = np.stack([bitmap_of[id(g)] for g in corpus.graphs]) if corpus.graphs else np.zeros((0, 32, 333))
    log(f"rendered {len(corpus.graphs)} equations in {seconds:.0f} s; failures {failures}")
    save_corpus(corpus, corpus_cache)
    np.savez_compressed(cache, bitmaps=bitmaps.astype(np.uint8))
    stamp_path.write_text(json.dumps({"stamp": stamp, "failures": failures, "render_seconds": seconds}))
    return BitmapCorpus(corpus, bitmaps.astype(np.uint8), failures, seconds)


def _split_bitmaps(data: BitmapCorpus, config: BitmapTrainConfig) -> tuple[Corpus, np.ndarray, Corpus, np.ndarray]:
    """KDD'20's split by paper, with the bitmaps renumbered like the sub-corpora's equations."""
    corpus = data.corpus
    train, test = split_papers(corpus, config.test_fraction, config.split_seed)
    test_ids = {p.id for p in test.papers}
    order: dict[bool, list[int]] = {False: [], True: []}
    for paper in corpus.papers:  # `Corpus.subset` keeps paper order and numbers equations in that order
        order[paper.id in test_ids].extend(paper.equations)
    return train, data.bitmaps[order[False]], test, data.bitmaps[order[True]]


@torch.no_grad()
def embed_bitmaps(model: BitmapCNN, bitmaps: np.ndarray, batch_size: int = 256) -> np.ndarray:
    """Vectors of bitmaps with the model in eval mode. Shapes: ``[n, h, w]`` uint8 -> ``[n, d]`` float32."""
    was_training = model.training
    model.eval()
    out = [model(torch.from_numpy(bitmaps[i : i + batch_size])).numpy() for i in range(0, len(bitmaps), batch_size)]
    model.train(was_training)
    return np.concatenate(out) if out else np.zeros((0, model.config.embedding_dim), dtype=np.float32)


@dataclass
class BitmapTrainResult:
    """A trained model, its held-out evaluation and what the run cost."""

    model: BitmapCNN
    evaluation: dict[str, Any]
    data_summary: dict[str, Any]
    training: dict[str, Any]
    test_bitmaps: np.ndarray


def train_bitmap_cnn(config: BitmapTrainConfig, log: Callable[[str], None] = print) -> BitmapTrainResult:
    """Render (or read the cache), train and evaluate; writes ``bitmap-checkpoint.pt`` and ``evaluation.json`` into
    ``run_dir``.

    Raises:
        EqsearchError: the corpus is missing or too small for a split.
    """
    from eqsearch.training.evaluate import held_out_report

    if config.threads:
        torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    data = render_corpus(config, log)
    train, train_bitmaps, test, test_bitmaps = _split_bitmaps(data, config)
    if len(train.papers) < 2 or len(test.papers) < 2:
        raise EqsearchError(f"the corpus {config.corpus} has too few papers with equations for a split")
    sampler = TripletSampler(train)
    rng = np.random.default_rng(config.seed)
    model = BitmapCNN(BitmapCNNConfig(config.architecture))
    optimizer = torch.optim.Adam(model.parameters(), lr=config.learning_rate)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[max(1, 2 * config.steps // 3)], gamma=0.1)
    started = time.perf_counter()
    losses: list[float] = []
    model.train()
    for step in range(config.steps):
        rows = [sampler.sample_one(rng)[:3] for _ in range(config.batch_size)]
        index = np.asarray(rows, dtype=np.int64).T.reshape(-1)  # anchors, then positives, then negatives
        vectors = model(torch.from_numpy(train_bitmaps[index]))
        a, p, n = vectors.split(config.batch_size)
        loss = swapped_triplet_loss(a, p, n, config.margin, squared=config.squared)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(float(loss.detach()))
        if (step + 1) % 25 == 0 or step + 1 == config.steps:
            elapsed = time.perf_counter() - started
            log(f"step {step + 1}/{config.steps} loss {np.mean(losses[-25:]):.4f} ({elapsed:.0f} s)")
    train_seconds = time.perf_counter() - started
    eval_triplets = TripletSampler(test).sample(config.eval_triplets, seed=config.seed + 1)
    report = held_out_report(
        embed_bitmaps(model, test_bitmaps), test, eval_triplets, _vocabulary_sizes(), resamples=2000
    )
    evaluation = {**report.to_dict(), "steps": config.steps, "train_seconds": round(train_seconds, 1)}
    summary = {
        "corpus_file": Path(config.corpus).name,
        "all": {**data.corpus.summary(), "render_failures": data.render_failures},
        "train": {k: v for k, v in train.summary().items() if k != "skipped"},
        "test": {k: v for k, v in test.summary().items() if k != "skipped"},
        "eval_triplet_sources": eval_triplets.source_fractions(),
    }
    training = {
        "config": asdict(config),
        "model_config": model.config.to_dict(),
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_seconds": round(train_seconds, 1),
        "final_loss": float(np.mean(losses[-25:])) if losses else None,
        "render_seconds": round(data.render_seconds, 1),
    }
    run_dir = Path(config.run_dir)
    torch.save(
        {"model": model.state_dict(), "model_config": model.config.to_dict(), "training": training, "data": summary},
        run_dir / CHECKPOINT_NAME,
    )
    np.save(run_dir / "parity-bitmaps.npy", test_bitmaps[:256])
    (run_dir / "evaluation.json").write_text(json.dumps(evaluation, indent=1))
    log(report.describe())
    return BitmapTrainResult(model, evaluation, summary, training, test_bitmaps)


def held_out_triplets(config: BitmapTrainConfig) -> tuple[Corpus, Triplets]:
    """The held-out papers and the evaluation triplets of a run (the same ones `train_bitmap_cnn` scores)."""
    data = render_corpus(config, log=lambda _: None)
    _, _, test, _ = _split_bitmaps(data, config)
    return test, TripletSampler(test).sample(config.eval_triplets, seed=config.seed + 1)


def load_bitmap_checkpoint(path: str | Path) -> tuple[BitmapCNN, dict[str, Any]]:
    """The model of a checkpoint (eval mode) and the checkpoint's provenance."""
    state = torch.load(Path(path), map_location="cpu", weights_only=False)
    model = BitmapCNN(BitmapCNNConfig(**state["model_config"]))
    model.load_state_dict(state["model"])
    model.eval()
    return model, state


def _vocabulary_sizes() -> tuple[int, int, int]:
    """The default bundle's vocabulary sizes: the bag-of-words baseline counts the same graph features."""
    from eqsearch.engine.model.bundle import default_bundle_path, read_manifest

    sizes = read_manifest(default_bundle_path(), verify_checksums=False).vocabulary_sizes
    return sizes["tags"], sizes["attributes"], sizes["characters"]
