"""The transformer zoo's movement operators on TVM: TILE, BROADCAST_TO (a reshape and a
tile) and MIRROR_PAD (reflect and symmetric), int8 and int16, element for element with
LiteRT (its reference kernels and its default interpreter; stored integers copied, so both
give the same numbers)."""

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


def _const(values):
    arr = np.asarray(values, np.int32)
    return TensorSpec(arr.shape, "int32", data=arr)


def _cases(dtype):
    z = -3 if dtype == "int8" else 0

    def q(shape):
        return TensorSpec(shape, dtype, 0.05, z)

    return {
        "tile": (_one_op("TILE", [q((2, 1, 3)), _const([2, 4, 1])], [q((4, 4, 3))]), (2, 1, 3)),
        "broadcast_to": (_one_op("BROADCAST_TO", [q((1, 3)), _const([2, 4, 3])], [q((2, 4, 3))], version=2), (1, 3)),
        "mirror_pad_reflect": (_one_op("MIRROR_PAD", [q((2, 4, 3)), _const([[0, 0], [2, 1], [1, 2]])], [q((2, 7, 6))],
                                       {"mode": "REFLECT"}), (2, 4, 3)),
        "mirror_pad_symmetric": (_one_op("MIRROR_PAD", [q((2, 4, 3)), _const([[1, 0], [4, 0], [3, 3]])],
                                         [q((3, 8, 9))], {"mode": "SYMMETRIC"}), (2, 4, 3)),
    }


@pytest.mark.parametrize("rounding", ["tflite", "litert"])
@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("case", ["tile", "broadcast_to", "mirror_pad_reflect", "mirror_pad_symmetric"])
def test_movement_op_through_tvm(case, dtype, rounding, tmp_path):
    from tvm_bridge.compile import compile_module

    model, shape = _cases(dtype)[case]
    info = np.iinfo(dtype)
    x = np.random.default_rng(len(case)).integers(info.min, info.max + 1, shape).astype(dtype)
    (ours,) = compile_module(lowered_tflite(model, rounding, tmp_path)())(x)
    (theirs,) = run_tflite(model, [x], reference=rounding == "tflite")
    assert ours.shape == theirs.shape
    assert int(np.count_nonzero(ours.view(theirs.dtype) != theirs)) == 0


@pytest.mark.parametrize("rounding", ["tflite", "litert"])
@pytest.mark.parametrize("op,axis,out", [("ARG_MAX", 1, "int32"), ("ARG_MAX", -1, "int64"), ("ARG_MIN", 0, "int32"),
                                         ("ARG_MIN", 2, "int64")])
def test_arg_extreme_through_tvm(op, axis, out, rounding, tmp_path):
    """The first index of the largest / smallest stored value (ties drawn on purpose: values
    from a small range)."""
    from tvm_bridge.compile import compile_module

    shape = (3, 7, 5)
    out_shape = tuple(d for i, d in enumerate(shape) if i != axis % 3)
    options = {"output_type": "INT64" if out == "int64" else "INT32"}
    model = _one_op(op, [TensorSpec(shape, "int8", 0.05, -3), _const([axis])], [TensorSpec(out_shape, out)], options)
    x = np.random.default_rng(axis + 5).integers(-4, 4, shape).astype(np.int8)
    (ours,) = compile_module(lowered_tflite(model, rounding, tmp_path)())(x)
    (theirs,) = run_tflite(model, [x], reference=rounding == "tflite")
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert int(np.count_nonzero(ours != theirs)) == 0


@pytest.mark.parametrize("rounding", ["tflite", "litert"])
@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("runtime", [False, True], ids=["constant_indices", "runtime_indices"])
def test_gather_nd_through_tvm(runtime, dtype, rounding, tmp_path):
    from tvm_bridge.compile import compile_module

    idx = np.array([[[0, 1], [1, 3]], [[1, 0], [0, 2]], [[1, 1], [0, 0]]], np.int32)
    z = -3 if dtype == "int8" else 0
    indices = TensorSpec(idx.shape, "int32") if runtime else _const(idx)
    model = _one_op("GATHER_ND", [TensorSpec((2, 4, 5), dtype, 0.05, z), indices], [TensorSpec((3, 2, 5), dtype, 0.05, z)])
    info = np.iinfo(dtype)
    x = np.random.default_rng(3).integers(info.min, info.max + 1, (2, 4, 5)).astype(dtype)
    inputs = [x, idx] if runtime else [x]
    (ours,) = compile_module(lowered_tflite(model, rounding, tmp_path)())(*inputs)
    (theirs,) = run_tflite(model, inputs, reference=rounding == "tflite")
    assert ours.shape == theirs.shape
    assert int(np.count_nonzero(ours.view(theirs.dtype) != theirs)) == 0
