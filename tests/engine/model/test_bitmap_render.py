"""The bitmap renderer in a real Node process: real formulas become 32 x 333 ink, broken input a counted failure."""

from __future__ import annotations

import numpy as np
import pytest
from eqsearch.engine.model.bitmap_render import (
    BITMAP_HEIGHT,
    BITMAP_WIDTH,
    BitmapRenderer,
    RenderConfig,
    center_crop,
    pinned_versions,
)

QUADRATIC = (
    "<math><mi>x</mi><mo>=</mo><mfrac><mrow><mo>−</mo><mi>b</mi><mo>±</mo><msqrt><mrow><msup><mi>b</mi><mn>2</mn>"
    "</msup><mo>−</mo><mn>4</mn><mi>a</mi><mi>c</mi></mrow></msqrt></mrow><mrow><mn>2</mn><mi>a</mi></mrow></mfrac>"
    "</math>"
)
# KaTeX's MathML as the ingest stores it (display block, mrow around everything)
EULER = (
    '<math xmlns="http://www.w3.org/1998/Math/MathML" display="block"><mrow><msup><mi>e</mi><mrow><mi>i</mi>'
    "<mi>π</mi></mrow></msup><mo>+</mo><mn>1</mn><mo>=</mo><mn>0</mn></mrow></math>"
)


@pytest.fixture(scope="module")
def renderer():
    with BitmapRenderer() as r:
        yield r


def test_center_crop_keeps_the_middle_and_pads_with_paper() -> None:
    wide = np.arange(5 * 400, dtype=np.int64).reshape(5, 400) % 251 + 1
    out = center_crop(wide.astype(np.uint8), 32, 333)
    assert out.shape == (32, 333)
    assert (out[:13] == 0).all() and (out[18:] == 0).all()  # 5 rows centred in 32
    assert (out[13:18] == wide[:, 33:366]).all()  # the middle 333 of 400 columns
    tall = np.ones((40, 10), dtype=np.uint8)
    assert center_crop(tall, 32, 333)[:, 161:171].all() and center_crop(tall, 32, 333).sum() == 320


def test_real_formulas_render_to_the_papers_crop(renderer: BitmapRenderer) -> None:
    results = renderer.render_many([QUADRATIC, EULER, "<math><mi>x</mi></math>"])
    assert [r.reason for r in results] == [None, None, None]
    for result in results:
        assert result.bitmap is not None and result.bitmap.shape == (BITMAP_HEIGHT, BITMAP_WIDTH)
        assert result.bitmap.dtype == np.uint8 and result.bitmap.max() > 200  # black ink somewhere
    quadratic, euler, x = (r.bitmap for r in results)
    assert (quadratic > 0).sum() > (euler > 0).sum() > (x > 0).sum() > 10  # more symbols, more ink
    assert results[0].size[1] > results[2].size[1]  # wider before cropping
    columns = np.flatnonzero(x.any(axis=0))
    assert abs((columns[0] + columns[-1]) / 2 - BITMAP_WIDTH / 2) < 3  # centred
    assert renderer.versions == pinned_versions() and renderer.rendered >= 3


def test_rendering_is_deterministic(renderer: BitmapRenderer) -> None:
    first, second = renderer.render_many([QUADRATIC, QUADRATIC])
    assert first.bitmap is not None and np.array_equal(first.bitmap, second.bitmap)


def test_broken_mathml_is_a_counted_failure_and_the_renderer_goes_on(renderer: BitmapRenderer) -> None:
    before = dict(renderer.failures)
    broken = ["<math><mi>x</mi><mfoo>", "not xml at all <<", "", "   ", "<math><mi>x</mi></math><math/>"]
    results = renderer.render_many([*broken, EULER])
    reasons = [r.reason for r in results]
    assert reasons[:2] == ["mathml-error", "mathml-error"] and reasons[2:4] == ["empty", "empty"]
    assert reasons[4] == "mathml-error" and reasons[5] is None and results[5].bitmap is not None
    assert all(r.bitmap is None and r.message for r in results[:5])
    assert renderer.failures["mathml-error"] - before.get("mathml-error", 0) == 3
    assert renderer.failures["empty"] - before.get("empty", 0) == 2
    bitmaps, ok = renderer.render_batch(["<mfoo/>", EULER])
    assert ok.tolist() == [False, True] and not bitmaps[0].any() and bitmaps[1].any()


def test_a_formula_over_the_time_limit_fails_and_the_renderer_restarts() -> None:
    with BitmapRenderer(RenderConfig(timeout_s=1e-9)) as slow:
        result = slow.render(EULER)
        assert result.reason == "timeout" and "restarted" in (result.message or "")
        assert slow.restarts == 1 and slow.failures == {"timeout": 1}
    with BitmapRenderer(RenderConfig(max_length=50)) as short:
        assert short.render(QUADRATIC).reason == "too-long"


def test_a_killed_renderer_is_restarted_for_the_next_formula(renderer: BitmapRenderer) -> None:
    assert renderer.render(EULER).bitmap is not None
    assert renderer._process is not None
    renderer._process.kill()
    renderer._process.wait()
    assert renderer.render(EULER).bitmap is not None  # a fresh process
