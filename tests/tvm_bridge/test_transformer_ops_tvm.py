"""The transformer encoders' elementwise operators on TVM: GELU (exact and approximate), EXP,
RSQRT, SQRT, ABS, NEG as table gathers, and the layer norm's float island (NEG as
DEQUANTIZE, x * -1.0, QUANTIZE), element for element with LiteRT.

One-operator TFLite models over every stored input (all 256 int8 values, all 65536 int16
ones; RSQRT / SQRT from the zero point up: below it LiteRT fails the invoke), lowered to L3,
compiled and run; expected values from LiteRT's reference kernels (`tflite`) and its default
interpreter (`litert`).
"""

from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

from tests.tflite_writer import OpSpec, TensorSpec, build_model, build_single_op_model, run_tflite  # noqa: E402
from tests.tvm_bridge.helpers import lowered_tflite  # noqa: E402

#: (op, options, int8 (in scale, in zp, out scale, out zp), int16 (in scale, out scale))
UNARY = [
    ("GELU", {"approximate": False}, (0.02, -3, 0.1, 5), (1e-4, 5e-4)),
    ("GELU", {"approximate": True}, (0.05, 0, 0.05, 0), (2.5e-4, 2.5e-4)),
    ("EXP", None, (0.0031, 7, 0.0007, -20), (1.55e-5, 3.5e-6)),
    ("RSQRT", None, (0.02, -3, 0.1, 5), (2.5e-4, 2.5e-4)),
    ("SQRT", None, (0.1, 20, 0.02, -128), (5e-4, 1e-4)),
    ("ABS", None, (1.7, -100, 0.9, 3), (8.5e-3, 4.5e-3)),
    ("NEG", None, (0.05, 0, 0.05, 0), (8.5e-3, 8.5e-3)),
]


def _every_value(dtype: str, at_least: int | None = None) -> np.ndarray:
    info = np.iinfo(np.dtype(dtype))
    return np.arange(info.min if at_least is None else at_least, int(info.max) + 1).astype(dtype)


def _mismatches(model: bytes, inputs: list[np.ndarray], rounding: str, tmp_path) -> tuple[int, int]:
    from tvm_bridge.compile import compile_module

    (ours,) = compile_module(lowered_tflite(model, rounding, tmp_path)())(*inputs)
    (theirs,) = run_tflite(model, inputs, reference=rounding == "tflite")
    ours = ours.view(theirs.dtype).reshape(theirs.shape)
    return int(np.count_nonzero(ours.astype(np.int64) != theirs.astype(np.int64))), theirs.size


@pytest.mark.parametrize("rounding", ["tflite", "litert"])
@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("op,options,p8,p16", UNARY,
                         ids=[f"{o}{'_approx' if (p or {}).get('approximate') else ''}" for o, p, _, _ in UNARY])
def test_unary_op_on_every_stored_input(op, options, p8, p16, dtype, rounding, tmp_path):
    s_in, z_in, s_out, z_out = p8 if dtype == "int8" else (p16[0], 0, p16[1], 0)
    xs = _every_value(dtype, z_in if op in ("RSQRT", "SQRT") else None)
    model = build_single_op_model(op, [TensorSpec((xs.size,), dtype, s_in, z_in)],
                                  [TensorSpec((xs.size,), dtype, s_out, z_out)], options)
    differ, compared = _mismatches(model, [xs], rounding, tmp_path)
    assert compared == xs.size and differ == 0, f"{op} {dtype}: {differ} of {compared} differ ({rounding})"


@pytest.mark.parametrize("rounding", ["tflite", "litert"])
def test_float_island_neg_of_a_layer_norm(rounding, tmp_path):
    """TensorFlow's converter writes an int8 layer norm's `-mean` as DEQUANTIZE, NEG in float,
    QUANTIZE (XNNPACK takes the three under `litert`); the island lowers to float32 arith."""
    tensors = [TensorSpec((1, 49, 1), "int8", 0.0024, -128, name="x"), TensorSpec((1, 49, 1), "float32", name="f"),
               TensorSpec((1, 49, 1), "float32", name="neg"), TensorSpec((1, 49, 1), "int8", 0.0024, 127, name="y")]
    ops = [OpSpec("DEQUANTIZE", [0], [1]), OpSpec("NEG", [1], [2]), OpSpec("QUANTIZE", [2], [3])]
    model = build_model(ops, tensors, inputs=[0], outputs=[3])
    xs = np.resize(_every_value("int8"), (1, 49, 1)).astype(np.int8)
    differ, compared = _mismatches(model, [xs], rounding, tmp_path)
    assert compared == 49 and differ == 0, f"{differ} of {compared} differ ({rounding})"
