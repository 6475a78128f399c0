"""The bitmap CNN's ONNX export: torch and onnxruntime give the same vectors for the same rendered bitmaps (1e-4),
and the runtime loader serves the exported bundle."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # the export side needs the `train` extra; skipped only where torch is absent

from eqsearch.engine.model import load_encoder, read_manifest  # noqa: E402
from eqsearch.engine.model.bitmap_render import BitmapRenderer, RenderConfig, pinned_versions  # noqa: E402
from eqsearch.export.bitmap import check_bitmap_parity, write_bitmap_bundle  # noqa: E402
from eqsearch.training.bitmap_model import BitmapCNN, BitmapCNNConfig, CellMaxPool  # noqa: E402

pytestmark = pytest.mark.slow  # one ONNX export (~10 s)

FORMULAS = [
    "<math><mi>x</mi><mo>=</mo><mfrac><mrow><mo>−</mo><mi>b</mi><mo>±</mo><msqrt><mrow><msup><mi>b</mi><mn>2</mn>"
    "</msup><mo>−</mo><mn>4</mn><mi>a</mi><mi>c</mi></mrow></msqrt></mrow><mrow><mn>2</mn><mi>a</mi></mrow></mfrac>"
    "</math>",
    "<math><msup><mi>e</mi><mrow><mi>i</mi><mi>π</mi></mrow></msup><mo>+</mo><mn>1</mn><mo>=</mo><mn>0</mn></math>",
    "<math><munderover><mo>∑</mo><mrow><mi>k</mi><mo>=</mo><mn>0</mn></mrow><mi>n</mi></munderover>"
    "<msup><mi>k</mi><mn>2</mn></msup></math>",
    "<math><mi>sin</mi><mi>x</mi></math>",
]


def test_cell_max_pool_is_adaptive_max_pooling() -> None:
    x = torch.randn(2, 3, 4, 41)
    for rows, columns in ((1, 13), (2, 8)):
        expected = torch.nn.AdaptiveMaxPool2d((rows, columns))(x)
        assert torch.equal(CellMaxPool(rows, columns)(x), expected)


def test_the_models_have_the_papers_parameter_counts() -> None:
    small = BitmapCNN(BitmapCNNConfig("small"))
    large = BitmapCNN(BitmapCNNConfig("large"))
    counts = [sum(p.numel() for p in model.parameters()) for model in (small, large)]
    # ECML'19 §4.1: 45,504 and 255,040; plus 128 of a batch norm over the 64 outputs in each
    assert counts == [45_504 + 128, 255_040 + 128]


def test_export_parity_on_rendered_bitmaps_and_the_loader_serves_the_bundle(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = BitmapCNN()
    with torch.no_grad():  # running statistics that are not the identity, so the export must carry them
        model.head[1].running_mean.uniform_(-0.1, 0.1)
        model.head[1].running_var.uniform_(0.5, 2.0)
    model.eval()
    with BitmapRenderer() as renderer:
        bitmaps, ok = renderer.render_batch(FORMULAS)
    assert ok.all()
    bundle = write_bitmap_bundle(
        model,
        tmp_path / "bundle",
        render_config=RenderConfig(),
        renderer_versions=pinned_versions(),
        training={"config": {"corpus": "/somewhere/papers.jsonl", "run_dir": "/tmp/run"}},
        parity_bitmaps=bitmaps,
    )
    manifest = read_manifest(bundle)
    assert manifest.encoder == "ecml19-cnn" and manifest.raw["parity"]["bitmaps"] == len(FORMULAS)
    assert manifest.raw["parity"]["max_abs_diff"] <= 1e-4
    assert manifest.raw["training"]["config"] == {"corpus": "papers.jsonl"}  # no paths of the training machine
    assert (bundle / "model.onnx").stat().st_size < 2_000_000
    report = check_bitmap_parity(model, bundle, np.concatenate([bitmaps] * 3), batch_sizes=(1, 5, 12))
    assert report.ok and report.bitmaps == 12
    with torch.no_grad():
        expected = model(torch.from_numpy(bitmaps)).numpy()
    encoder = load_encoder(bundle)  # the runtime path: MathML -> renderer -> onnxruntime
    assert np.abs(encoder.encode(FORMULAS) - expected).max() <= 1e-4
    encoder.close()
    assert json.loads((bundle / "manifest.json").read_text())["renderer"]["em_px"] == 16


def test_the_export_command_writes_a_bundle_from_a_trained_run(papers_jsonl: Path, tmp_path: Path, capsys) -> None:
    from eqsearch.main import main
    from eqsearch.training.bitmap import BitmapTrainConfig, train_bitmap_cnn

    run = tmp_path / "run"
    config = BitmapTrainConfig(
        corpus=str(papers_jsonl), run_dir=str(run), steps=2, batch_size=4, eval_triplets=20, test_fraction=0.5
    )
    train_bitmap_cnn(config, log=lambda _: None)
    out = tmp_path / "bundle"
    assert main(["export", "bitmap-cnn", "--checkpoint", str(run / "bitmap-checkpoint.pt"), "--out", str(out)]) == 0
    assert "ecml19-cnn bundle written" in capsys.readouterr().out
    manifest = read_manifest(out)
    assert manifest.encoder == "ecml19-cnn" and manifest.raw["evaluation"]["steps"] == 2
    assert manifest.raw["training"]["config"]["corpus"] == "papers.jsonl" and manifest.raw["parity"]["bitmaps"] > 0
    with pytest.raises(SystemExit) as caught:  # neither --corpus nor --checkpoint: a parser error
        main(["export", "bitmap-cnn", "--out", str(out)])
    assert caught.value.code == 2 and "give --corpus" in capsys.readouterr().err
