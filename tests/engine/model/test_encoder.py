"""The runtime encoder: no torch in the process, the shipped bundles load and encode MathML to float32 [n, dim] (the
search bundle, a composite, 128-d; its graph network 64-d)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from eqsearch.engine.model.bundle import default_bundle_path

SHIPPED = (default_bundle_path() / "manifest.json").is_file()
needs_bundle = pytest.mark.skipif(not SHIPPED, reason="no default bundle in engine/model/default-bundle yet")

BAYES = (
    "<math><mrow><mi>P</mi><mo>(</mo><mi>a</mi><mo>|</mo><mi>b</mi><mo>)</mo><mo>=</mo><mfrac><mrow><mi>P</mi>"
    "<mo>(</mo><mi>b</mi><mo>|</mo><mi>a</mi><mo>)</mo><mi>P</mi><mo>(</mo><mi>a</mi><mo>)</mo></mrow><mrow>"
    "<mi>P</mi><mo>(</mo><mi>b</mi><mo>)</mo></mrow></mfrac></mrow></math>"
)


def test_encoder_module_never_imports_torch() -> None:
    code = "import sys, eqsearch.engine.model.encoder, eqsearch.engine.model.bundle; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@needs_bundle
def test_shipped_bundle_encodes_without_torch() -> None:
    code = (
        "import sys, numpy as np\n"
        "from eqsearch.engine.model.encoder import load_encoder, Encoder\n"
        "from eqsearch.engine.model.bundle import default_bundle_path\n"
        "for enc in (load_encoder(), load_encoder(default_bundle_path())):\n"
        f"    v = enc.encode([{BAYES!r}, '<math><mi>x</mi></math>'])\n"
        "    assert isinstance(enc, Encoder) and v.dtype == np.float32 and v.shape == (2, enc.dim), v.shape\n"
        "    print(enc.kind, enc.dim)\n"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["composite", "128", "kdd20-gcn", "64", "False"]


@needs_bundle
def test_batches_and_single_calls_agree() -> None:
    from eqsearch.engine.model.encoder import load_encoder

    enc = load_encoder(batch_size=2)
    items = [BAYES, "<math><mi>x</mi></math>", "<math><mrow><mi>a</mi><mo>+</mo><mi>b</mi></mrow></math>"]
    together = enc.encode(items)
    alone = np.concatenate([enc.encode([m]) for m in items])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    assert enc.encode([]).shape == (0, enc.dim)


@needs_bundle
def test_bad_mathml_names_the_item() -> None:
    from eqsearch.engine.model.encoder import load_encoder
    from eqsearch.engine.model.featurize import MathMLError

    with pytest.raises(MathMLError, match="equation 1"):
        load_encoder().encode([BAYES, "<math><mi>x</mi>"])


@needs_bundle
def test_a_wide_equation_gets_the_same_vector_every_time() -> None:
    """The model's neighbour sums are scatter-adds on duplicate indices; onnxruntime's multi-threaded CPU kernel
    races on them (a 963-node equation varied by up to 2.5 between runs with 2 threads). The encoder runs one
    intra-op thread: the vector must be identical across sessions, after small equations or not."""
    from eqsearch.engine.model.encoder import load_encoder

    terms = "".join(f"<mi>x</mi><mo>+</mo><msub><mi>y</mi><mn>{i}</mn></msub><mo>−</mo>" for i in range(120))
    large = f"<math><mrow>{terms}<mi>z</mi></mrow></math>"
    warmed = load_encoder(batch_size=4)
    warmed.encode(["<math><mi>x</mi></math>", BAYES, "<math><mn>1</mn></math>"])
    after_small = warmed.encode([large])
    for _ in range(3):
        np.testing.assert_array_equal(load_encoder(batch_size=4).encode([large]), after_small)
