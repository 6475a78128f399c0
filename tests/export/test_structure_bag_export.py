"""A structure-bag bundle: exported from torch, torch vs onnxruntime parity, served by onnxruntime without torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from eqsearch.engine.model.bundle import read_manifest
from eqsearch.engine.model.structure_bag import StructureFeatures, featurize_structure_bag
from eqsearch.export.structure_bag import check_structure_bag_parity, write_structure_bag_bundle
from eqsearch.training.structure_model import StructureBagConfig, StructureBagModel

FORMULAS = [
    "<math><msup><mi>x</mi><mn>2</mn></msup><mo>+</mo><msup><mi>y</mi><mn>2</mn></msup></math>",
    "<math><mi>x</mi></math>",
    "<math><mfrac><mrow><mi>a</mi><mo>+</mo><mi>b</mi></mrow><mn>2</mn></mfrac><mo>≥</mo><msqrt><mi>a</mi>"
    "<mi>b</mi></msqrt></math>",
    "<math><munderover><mo>∑</mo><mrow><mi>i</mi><mo>=</mo><mn>1</mn></mrow><mi>n</mi></munderover><msub><mi>x</mi>"
    "<mi>i</mi></msub></math>",
] * 5


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, StructureBagModel]:
    torch.manual_seed(0)
    features = StructureFeatures(buckets=1 << 12)
    model = StructureBagModel(StructureBagConfig(buckets=1 << 12, width=16, hidden=32, embedding_dim=8))
    out = tmp_path_factory.mktemp("sb") / "bundle"
    write_structure_bag_bundle(model, out, features=features, parity_mathml=FORMULAS, training={"steps": 0})
    return out, model


def test_the_bundle_checks_and_records_parity(bundle: tuple[Path, StructureBagModel]) -> None:
    path, _ = bundle
    manifest = read_manifest(path)
    assert manifest.encoder == "structure-bag" and manifest.similarity == "cosine" and manifest.embedding_dim == 8
    raw = json.loads((path / "manifest.json").read_text())
    assert raw["parity"]["max_abs_diff"] <= 1e-4 and raw["parity"]["equations"] == len(FORMULAS)
    assert raw["features"]["buckets"] == 1 << 12


def test_onnxruntime_matches_torch_in_batches_of_every_size(bundle: tuple[Path, StructureBagModel]) -> None:
    path, model = bundle
    report = check_structure_bag_parity(model, path, FORMULAS, StructureFeatures(buckets=1 << 12), (1, 3, 20))
    assert report.ok, report
    assert report.float16_max_abs_diff < 1e-2  # the float16 table moves the vectors a little, not more


def test_the_loader_serves_it_without_torch(bundle: tuple[Path, StructureBagModel]) -> None:
    path, model = bundle
    code = (
        "import sys, json, numpy as np\n"
        "from eqsearch.engine.model.encoder import load_encoder\n"
        f"enc = load_encoder({str(path)!r})\n"
        f"v = enc.encode({FORMULAS[:4]!r})\n"
        "print(json.dumps({'torch': 'torch' in sys.modules, 'kind': enc.kind, 'v': v.tolist()}))"
    )
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert out["torch"] is False and out["kind"] == "structure-bag"
    served = np.asarray(out["v"], dtype=np.float32)
    np.testing.assert_allclose(np.linalg.norm(served, axis=1), 1.0, atol=1e-5)
    batch = featurize_structure_bag(FORMULAS[:4], StructureFeatures(buckets=1 << 12))
    with torch.no_grad():
        ours = model(*(torch.from_numpy(getattr(batch, k)) for k in ("ids", "weights", "graph", "graph_sizes")))
    np.testing.assert_allclose(served, ours.numpy(), atol=5e-3)  # float16 table vs float32 weights


@pytest.fixture(scope="module")
def headed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, StructureBagModel]:
    torch.manual_seed(1)
    features = StructureFeatures(buckets=1 << 12)
    config = StructureBagConfig(buckets=1 << 12, width=16, hidden=32, embedding_dim=8, query_head=True)
    model = StructureBagModel(config)
    with torch.no_grad():
        model.query_head.matrix.copy_(torch.randn(8, 8))
    out = tmp_path_factory.mktemp("sbh") / "bundle"
    write_structure_bag_bundle(model, out, features=features, parity_mathml=FORMULAS, training={"steps": 0})
    return out, model


def test_a_query_head_ships_beside_the_model_and_weighs_queries_as_rankers_ask(
    headed: tuple[Path, StructureBagModel],
) -> None:
    from eqsearch.engine.model.encoder import load_encoder

    path, model = headed
    raw = json.loads((path / "manifest.json").read_text())
    assert raw["query_heads"]["parts"] == ["structure", "graph"] and raw["parity"]["max_abs_diff"] <= 1e-4
    encoder = load_encoder(path)
    assert encoder.part_names == ("structure", "graph")
    (v,) = encoder.encode(FORMULAS[:1])
    matrix = model.query_head.matrix.detach().numpy()
    np.testing.assert_allclose(encoder.weigh_query(v, {"graph": 1.0, "structure": 0.0}), matrix @ v, rtol=1e-5)
    mixed = encoder.weigh_query(v, {"graph": 0.3, "structure": 0.7})
    np.testing.assert_allclose(mixed, 0.7 * v + 0.3 * matrix @ v, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="no query head"):
        encoder.weigh_query(v, {"context": 1.0})
    # the heads change queries only: the bundle's identity (what an index records) is its model's
    assert encoder.identity == f"structure-bag:{raw['files']['model.onnx']['sha256'][:16]}"


def test_a_changed_query_head_file_is_refused(headed: tuple[Path, StructureBagModel], tmp_path: Path) -> None:
    import shutil

    from eqsearch.engine.model.bundle import BundleError
    from eqsearch.engine.model.encoder import load_encoder

    path, _ = headed
    copy = tmp_path / "bundle"
    shutil.copytree(path, copy)
    np.save(copy / "query-heads.npy", np.zeros((2, 8, 8), dtype=np.float32))
    with pytest.raises(BundleError, match="query heads were changed"):
        load_encoder(copy)
