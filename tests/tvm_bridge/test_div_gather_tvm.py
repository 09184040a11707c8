"""Quantized DIV and GATHER on TVM, element for element with LiteRT (its reference kernels
and its default interpreter): DIV int8 / int16 (TFLite's DivElementwise: GetReciprocal,
CountLeadingSignBits, SRDHM), GATHER of int8 / int16 params at constant and run-time indices
(with and without batch dimensions)."""

from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

from tests.tflite_writer import OpSpec, TensorSpec, build_model, run_tflite  # noqa: E402
from tests.tvm_bridge.helpers import lowered_tflite  # noqa: E402


def _one_op(op, inputs, outputs, options=None, version=1) -> bytes:
    tensors = list(inputs) + list(outputs)
    outs = [len(inputs) + k for k in range(len(outputs))]
    return build_model([OpSpec(op, list(range(len(inputs))), outs, options, version)], tensors,
                       [k for k, t in enumerate(inputs) if t.data is None], outs)


def _run_both(model, inputs, rounding, tmp_path):
    from tvm_bridge.compile import compile_module

    (ours,) = compile_module(lowered_tflite(model, rounding, tmp_path)())(*inputs)
    (theirs,) = run_tflite(model, inputs, reference=rounding == "tflite")
    return ours, theirs


def _random(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


@pytest.mark.parametrize("rounding", ["tflite", "litert"])
@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("case", ["constant", "runtime", "batch_dims"])
def test_gather_through_tvm(case, dtype, rounding, tmp_path):
    z = -3 if dtype == "int8" else 0
    rng = np.random.default_rng(len(case))

    def q(shape):
        return TensorSpec(shape, dtype, 0.05, z)

    if case == "constant":
        idx = np.array([[3, 0], [4, 4], [1, 2]], np.int32)
        model = _one_op("GATHER", [q((2, 5, 3)), TensorSpec(idx.shape, "int32", data=idx)], [q((2, 3, 2, 3))],
                        {"axis": 1})
        inputs = [_random(rng, dtype, (2, 5, 3))]
    elif case == "runtime":
        model = _one_op("GATHER", [q((7, 4)), TensorSpec((2, 5), "int32")], [q((2, 5, 4))], {"axis": 0})
        inputs = [_random(rng, dtype, (7, 4)), rng.integers(0, 7, (2, 5)).astype(np.int32)]
    else:
        model = _one_op("GATHER", [q((2, 3, 5, 4)), TensorSpec((2, 3), "int32")], [q((2, 3, 3, 4))],
                        {"axis": 2, "batch_dims": 1})
        inputs = [_random(rng, dtype, (2, 3, 5, 4)), rng.integers(0, 5, (2, 3)).astype(np.int32)]
    ours, theirs = _run_both(model, inputs, rounding, tmp_path)
    assert ours.shape == theirs.shape
    assert int(np.count_nonzero(ours.view(theirs.dtype) != theirs)) == 0


def _div_model(dtype, shapes, scales, zps, activation="NONE"):
    (s1, s2, so), (z1, z2, zo) = scales, zps
    ins = [TensorSpec(shapes[0], dtype, s1, z1), TensorSpec(shapes[1], dtype, s2, z2)]
    return _one_op("DIV", ins, [TensorSpec(shapes[2], dtype, so, zo)], {"fused_activation_function": activation})


def _divisors(rng, dtype, shape, zero_point):
    """Stored divisors anywhere in the type's range but never at the zero point (a real 0)."""
    b = _random(rng, dtype, shape).astype(np.int64)
    b[b == zero_point] += 1 if zero_point < np.iinfo(dtype).max else -1
    return b.astype(dtype)


DIV_CASES = {
    # (shapes x1, x2, out), (scales), (zero points), fused activation
    "same_shape": (((2, 3, 16), (2, 3, 16), (2, 3, 16)), (0.05, 0.02, 0.1), (-3, 5, 2), "NONE"),
    "broadcast": (((2, 1, 16), (1, 5, 1), (2, 5, 16)), (0.1, 0.03, 0.2), (7, -2, -1), "RELU"),
    # a small quotient scale: RoundingDivideByPOT's exponent passes 32 (x86's shift by e & 31)
    "wide_exponent": (((4, 16), (4, 16), (4, 16)), (0.001, 1.0, 10.0), (0, 3, 0), "NONE"),
    "large_quotient": (((4, 16), (1, 16), (4, 16)), (2.0, 0.001, 0.5), (1, 0, -4), "RELU6"),
}


@pytest.mark.parametrize("rounding", ["tflite", "litert"])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16"])
@pytest.mark.parametrize("case", list(DIV_CASES))
def test_div_through_tvm(case, dtype, rounding, tmp_path):
    shapes, scales, zps, activation = DIV_CASES[case]
    if dtype == "int16":
        zps = (0, 0, 0)
    elif dtype == "uint8":
        zps = tuple(z + 128 for z in zps)
    model = _div_model(dtype, shapes, scales, zps, activation)
    rng = np.random.default_rng(len(case) + len(dtype))
    inputs = [_random(rng, dtype, shapes[0]), _divisors(rng, dtype, shapes[1], zps[1])]
    ours, theirs = _run_both(model, inputs, rounding, tmp_path)
    assert ours.shape == theirs.shape
    assert int(np.count_nonzero(ours.view(theirs.dtype) != theirs)) == 0
