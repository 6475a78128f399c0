"""``eqsearch search`` at the edge: the ONNX execution provider comes from ``EQSEARCH_ONNX_PROVIDER``, and a value
that names none, or CUDA on an onnxruntime without it, stops the command with a message that says what to do (this
machine has no GPU: the CPU stays the default)."""

from __future__ import annotations

import pytest
from eqsearch.main import main


@pytest.mark.parametrize(
    ("value", "says"),
    [("gpu", "is not an execution provider"), ("cuda", "onnxruntime-gpu")],
)
def test_an_unusable_provider_is_refused_with_what_to_do(monkeypatch, capsys, value: str, says: str) -> None:
    pytest.importorskip("onnxruntime")
    import onnxruntime

    if value == "cuda" and "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this onnxruntime has the CUDA provider")
    monkeypatch.setenv("EQSEARCH_ONNX_PROVIDER", value)
    code = main(["search", "x^2"])
    assert code != 0
    assert says in capsys.readouterr().err
