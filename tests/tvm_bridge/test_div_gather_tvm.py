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
