"""qd-quantize output through the TVM path of qd-run, bit-exact with the interpreter.

Runs when the lowering pipeline (`transforms.pipelines`) exists.  Until the
pipeline takes everything qd-quantize writes (quant.qcast / quant.dcast at the
float edges, mixed i8/i16 layers), the failure is reported as an xfail that
names qd-run's diagnostic, never skipped silently.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

from tests.quantize.conftest import ZOO
from transforms.quantize_cli import main as qd_quantize

pytestmark = pytest.mark.skipif(importlib.util.find_spec("transforms.pipelines") is None,
                                reason="lowering pipeline (transforms.pipelines) not built yet")

README_STRATEGY = '''
from transforms.strategy import Int8


class Conv2Int16(Int8):
    """TFLite's int8 scheme, but the second convolution's output is int16."""

    name = "int8+conv2-int16"

    def activation_bits(self, layer):
        return 16 if "conv2" in layer.name else 8

    def activation_symmetric(self, layer):
        return self.activation_bits(layer) == 16
'''

TVM_TIMEOUT = 900


def qd_run(model, backend: str, inputs, outputs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tvm_bridge.run_cli", str(model), "--backend", backend, "--input", str(inputs),
         "--output", str(outputs)],
        capture_output=True, text=True, timeout=TVM_TIMEOUT,
    )


def interp_vs_tvm(module_path, tmp_path):
    inputs = tmp_path / "in.npz"
    np.savez(inputs, input_0=np.load(ZOO / "cnn_small_heldout.npz")["input_0"][:2])
    p = qd_run(module_path, "interp", inputs, tmp_path / "interp.npz")
    assert p.returncode == 0, p.stderr
    try:
        p = qd_run(module_path, "tvm", inputs, tmp_path / "tvm.npz")
    except subprocess.TimeoutExpired:
        pytest.xfail(f"qd-run --backend tvm did not finish in {TVM_TIMEOUT} s")
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
        pytest.xfail(f"the TVM path does not take qd-quantize's output yet: {last}")
    a, b = np.load(tmp_path / "interp.npz"), np.load(tmp_path / "tvm.npz")
    assert a.files == b.files
    for k in a.files:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape
        assert int(np.count_nonzero(a[k] != b[k])) == 0, f"{k}: interpreter and TVM differ"


def test_int8_output_bit_exact_on_tvm(tmp_path):
    out = tmp_path / "q.mlir"
    assert qd_quantize([str(ZOO / "cnn_small_float.tflite"), "--calibration", str(ZOO / "cnn_small_calib.npz"),
                        "-o", str(out), "--quiet"]) == 0
    interp_vs_tvm(out, tmp_path)


def test_readme_user_strategy_bit_exact_on_tvm(tmp_path):
    strategy = tmp_path / "my_strategy.py"
    strategy.write_text(README_STRATEGY)
    out = tmp_path / "mixed.mlir"
    assert qd_quantize([str(ZOO / "cnn_small_float.tflite"), "--calibration", str(ZOO / "cnn_small_calib.npz"),
                        "--scheme", f"{strategy}:Conv2Int16", "-o", str(out), "--quiet"]) == 0
    assert "i16:f32" in out.read_text()
    interp_vs_tvm(out, tmp_path)
