"""The execution provider is a setting: CPU unless asked, CUDA only where onnxruntime has it, with a clear error."""

from __future__ import annotations

import onnxruntime as ort
import pytest
from eqsearch.engine.model.bundle import BundleError, default_bundle_path
from eqsearch.engine.model.encoder import (
    PROVIDER_VARIABLE,
    available_providers,
    load_encoder,
    onnx_provider_setting,
)

HAS_CUDA = "CUDAExecutionProvider" in ort.get_available_providers()


def test_the_setting_is_read_from_the_edges_environment_and_checked() -> None:
    assert onnx_provider_setting({}) == "cpu"
    assert onnx_provider_setting({PROVIDER_VARIABLE: " CUDA "}) == "cuda"
    assert onnx_provider_setting({PROVIDER_VARIABLE: ""}, default="auto") == "auto"
    with pytest.raises(BundleError, match="not an execution provider") as error:
        onnx_provider_setting({PROVIDER_VARIABLE: "tpu"})
    assert "cpu, cuda, auto" in (error.value.hint or "")


def test_cpu_and_auto_run_on_the_cpu_where_there_is_no_cuda() -> None:
    assert available_providers(provider="cpu") == ["CPUExecutionProvider"]
    assert available_providers(prefer_gpu=False) == ["CPUExecutionProvider"]
    if not HAS_CUDA:
        assert available_providers(provider="auto") == ["CPUExecutionProvider"]
    encoder = load_encoder(default_bundle_path(), provider="cpu")
    assert encoder.session.get_providers() == ["CPUExecutionProvider"]


@pytest.mark.skipif(HAS_CUDA, reason="this onnxruntime has the CUDA provider")
def test_cuda_asked_of_an_onnxruntime_without_it_says_what_to_install() -> None:
    with pytest.raises(BundleError, match="CUDA execution provider was asked for") as error:
        load_encoder(default_bundle_path(), provider="cuda")
    assert "onnxruntime-gpu" in (error.value.hint or "")
    assert ort.__version__ in error.value.message
