"""qd-quantize output through the TVM path of qd-run, bit-exact with the interpreter.

Integer I/O (int8, mixed i8/i16), the default float edges (quant.qcast /
quant.dcast, lowered by transforms/float_edges.py) and the README strategy
(with cnn_small's softmax) and int4 weights must be bit-exact.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

from tests.quantize.conftest import ZOO
from transforms.quantizer.cli import main as qd_quantize

pytestmark = pytest.mark.skipif(importlib.util.find_spec("transforms.pipelines") is None,
                                reason="lowering pipeline (transforms.pipelines) not built yet")

README_STRATEGY = '''
from transforms.quantizer.strategy import Int8


class Conv2Int16(Int8):
    """TFLite's int8 scheme, but the second convolution's output is int16."""

    name = "int8+conv2-int16"

    def activation_bits(self, layer):
        return 16 if "conv2" in layer.name else 8

    def activation_symmetric(self, layer):
        return self.activation_bits(layer) == 16
'''

TVM_TIMEOUT = 120
"""Seconds one qd-run --backend tvm may take; qnn.softmax compiles for minutes with the current bridge
(cnn_small: more than 15 minutes in all), which is reported as an xfail, not waited for."""


def qd_run_tvm(model, inputs, outputs, timeout: float) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "tvm_bridge.run_cli", str(model), "--backend", "tvm", "--input", str(inputs),
            "--output", str(outputs)]
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def _ctx():
    from transforms.opt import QdOptMain

    return QdOptMain(args=[]).ctx


def interp_vs_tvm(module_path, tmp_path, inputs=None, known_gap: bool = True, timeout: float = TVM_TIMEOUT):
    """qd-run --backend tvm on `inputs` (an npz of stacked samples; default: two seeded random samples
    of the module's argument types) against the interpreter run in process: 0 differing elements.
    known_gap: a TVM failure is an xfail naming it."""
    from qdialect.diagnostics import parse_module
    from qdialect.interpreter import Interpreter, run_module

    from transforms.pipelines import lower_to_l3

    module = parse_module(_ctx(), module_path.read_text(), str(module_path))
    args = module.ops.first.body.block.args
    try:  # what qd-run's TVM path does first, in process: a gap shows here without compiling anything
        lower_to_l3(module.clone())
    except Exception as e:
        if not known_gap:
            raise
        pytest.xfail(f"the lowering does not take this qd-quantize output yet: {' '.join(str(e).split())[:300]}")
    if inputs is None:
        rng = np.random.default_rng(0)
        arrays = {}
        for k, a in enumerate(args):
            dtype = Interpreter._dtype(a)
            info = np.iinfo(dtype) if dtype.kind in "iu" else None
            shape = (2, *a.type.get_shape())
            arrays[f"input_{k}"] = (rng.integers(info.min, info.max + 1, shape) if info is not None
                                    else rng.normal(0, 1, shape)).astype(dtype)
        inputs = tmp_path / "in.npz"
        np.savez(inputs, **arrays)
    stacked_inputs = np.load(inputs)
    samples = [[stacked_inputs[f"input_{k}"][i] for k in range(len(args))] for i in range(len(stacked_inputs["input_0"]))]
    expected = [run_module(module, sample) for sample in samples]
    try:
        p = qd_run_tvm(module_path, inputs, tmp_path / "tvm.npz", timeout)
    except subprocess.TimeoutExpired:
        if not known_gap:
            raise
        pytest.xfail(f"qd-run --backend tvm did not finish in {timeout} s")
    if p.returncode != 0:
        lines = p.stderr.strip().splitlines() or ["(no message)"]
        last = next((ln for ln in reversed(lines) if "error" in ln.lower()), lines[-1])
        if known_gap:
            pytest.xfail(f"the TVM path does not take this qd-quantize output yet: {last[:300]}")
        raise AssertionError(p.stderr)
    got = np.load(tmp_path / "tvm.npz")
    assert sorted(got.files) == [f"output_{k}" for k in range(len(expected[0]))]
    for k in range(len(expected[0])):
        want = np.stack([e[k] for e in expected])
        assert got[f"output_{k}"].dtype == want.dtype and got[f"output_{k}"].shape == want.shape
        assert int(np.count_nonzero(got[f"output_{k}"] != want)) == 0, f"output_{k}: interpreter and TVM differ"


def quantize(tmp_path, name: str, *extra) -> str:
    out = tmp_path / f"{name}.mlir"
    assert qd_quantize([str(ZOO / f"{name}_float.tflite"), "--calibration", str(ZOO / f"{name}_calib.npz"),
                        "-o", str(out), "--quiet", *extra]) == 0
    return out


def heldout(tmp_path, name: str, n: int = 2):
    inputs = tmp_path / "in.npz"
    np.savez(inputs, input_0=np.load(ZOO / f"{name}_heldout.npz")["input_0"][:n])
    return inputs


@pytest.mark.parametrize("scheme, known_gap", [("int8", False), ("int4-weights", False)])
def test_int_io_bit_exact_on_tvm(scheme, known_gap, tmp_path):
    """mlp_act quantized with --int-io: the TVM build computes the interpreter's integers (int4 weight
    constants travel sign-extended in int8)."""
    interp_vs_tvm(quantize(tmp_path, "mlp_act", "--int-io", "--scheme", scheme), tmp_path, known_gap=known_gap)


def test_float_edges_on_tvm(tmp_path):
    """The default output (float I/O, quant.qcast / quant.dcast at the edges) on TVM."""
    interp_vs_tvm(quantize(tmp_path, "mlp_act"), tmp_path, heldout(tmp_path, "mlp_act"), known_gap=False)


def test_mixed_widths_on_tvm(tmp_path):
    strategy = tmp_path / "fc3_int16.py"
    strategy.write_text(README_STRATEGY.replace("conv2", "fc3"))
    out = quantize(tmp_path, "mlp_act", "--int-io", "--scheme", f"{strategy}:Conv2Int16")
    assert "i16:f32" in out.read_text()
    interp_vs_tvm(out, tmp_path, known_gap=False)


def test_readme_user_strategy_bit_exact_on_tvm(tmp_path):
    strategy = tmp_path / "my_strategy.py"
    strategy.write_text(README_STRATEGY)
    out = quantize(tmp_path, "cnn_small", "--scheme", f"{strategy}:Conv2Int16")
    assert "i16:f32" in out.read_text()
    interp_vs_tvm(out, tmp_path, heldout(tmp_path, "cnn_small"), known_gap=False, timeout=600)


def test_readme_user_strategy_without_softmax_bit_exact_on_tvm(tmp_path):
    """The README strategy on cnn_small minus its final softmax (whose fixed-point lowering takes TVM
    minutes to compile today), integer I/O: the int8 convs, the int16 conv2 / avg pool / reshape and the
    16-bit-input fully connected layer compute the interpreter's integers on TVM."""
    from xdsl.dialects import func

    from qdialect.dialects import nn
    from qdialect.dialects.quant import quantized_element_type
    from qdialect.importer.cli import module_text
    from qdialect.reference.elementwise import quantize as quantize_array
    from tests.quantize.conftest import data, float_module
    from transforms.quantizer.flow import quantize_float_module
    from transforms.quantizer.strategy import load_strategy

    module = float_module("cnn_small").clone()
    ret = next(op for op in module.walk() if isinstance(op, func.ReturnOp))
    softmax = ret.operands[0].owner
    assert isinstance(softmax, nn.SoftmaxOp)
    ret.operands = [softmax.operands[0]]
    f = module.ops.first
    f.function_type = func.FunctionType.from_lists([a.type for a in f.body.block.args], [softmax.operands[0].type])
    softmax.parent.erase_op(softmax)
    strategy_file = tmp_path / "my_strategy.py"
    strategy_file.write_text(README_STRATEGY)
    result = quantize_float_module(module, data("cnn_small", "calib")[:8],  # bit-exactness needs no more
                                   load_strategy(f"{strategy_file}:Conv2Int16"), int_io=True)
    text = module_text(result.module)
    assert "i16:f32" in text and "tensor<16xi64>" not in text and "xi64>" in text  # fc1 reads i16 with an i64 bias
    out = tmp_path / "mixed.mlir"
    out.write_text(text)
    q = quantized_element_type(result.module.ops.first.body.block.args[0].type).qparams()
    inputs = tmp_path / "in.npz"
    np.savez(inputs, input_0=np.stack([quantize_array(s[0], out_q=q) for s in data("cnn_small", "heldout")[:2]]))
    interp_vs_tvm(out, tmp_path, inputs, known_gap=False)
