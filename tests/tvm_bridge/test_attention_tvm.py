"""Attention on TVM: batch matmul of two activations, long softmax rows, layer-norm pieces.

TFLite models built here (one BATCH_MATMUL / SOFTMAX / SQUARED_DIFFERENCE / MEAN, and the
attention block of `attention_block.py`), lowered to L3, compiled with TVM and compared
element for element with LiteRT: its reference kernels (BUILTIN_REF) under the `tflite`
profile, its default interpreter (XNNPACK where it takes the op) under `litert`.  Inputs
are seeded and span each input's whole storage range.
"""

from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

from tests.tflite_writer import TensorSpec, build_single_op_model, delegate_partitions, run_tflite  # noqa: E402
from tests.tvm_bridge.attention_block import attention_block, sample  # noqa: E402
from tests.tvm_bridge.helpers import lowered_tflite  # noqa: E402

PROFILES = ["tflite", "litert"]


def _mismatches(model: bytes, inputs: list[list[np.ndarray]], rounding: str, tmp_path) -> tuple[int, int]:
    """(differing elements, compared elements) of our TVM build against LiteRT over the samples."""
    from tvm_bridge.compile import compile_module

    compiled = compile_module(lowered_tflite(model, rounding, tmp_path)())
    differ = compared = 0
    for sample_inputs in inputs:
        (ours,) = compiled(*sample_inputs)
        (theirs,) = run_tflite(model, sample_inputs, reference=rounding == "tflite")
        ours = ours.view(theirs.dtype).reshape(theirs.shape)
        differ += int(np.count_nonzero(ours.astype(np.int64) != theirs.astype(np.int64)))
        compared += theirs.size
    return differ, compared


def _ints(rng, shape, storage: str) -> np.ndarray:
    info = np.iinfo(storage)
    return rng.integers(info.min, info.max + 1, shape).astype(storage)


BMM_CASES = [
    # (lhs shape, rhs shape, adj_x, adj_y, storage, lhs zp, rhs zp)
    ((1, 4, 16, 32), (1, 4, 32, 24), False, False, "int8", -3, 0),   # heads as a batch dim
    ((2, 4, 16, 32), (4, 24, 32), False, True, "int8", 11, 7),       # Q @ K^T, rhs with fewer dims
    ((3, 8, 5), (8, 6), True, False, "int8", -128, -5),              # adj_x, a 2-D rhs broadcast
    ((2, 1, 8, 5), (1, 3, 6, 8), True, True, "int8", 0, 0),          # both adjoint, both broadcast
    ((1, 2, 64, 16), (1, 2, 16, 64), False, False, "int8", 127, 0),  # rows of 64 (scores)
    ((1, 4, 16, 32), (1, 4, 32, 16), False, False, "int16", 0, 0),
    ((2, 16, 8), (2, 12, 16), True, True, "int16", 0, 0),
]


@pytest.mark.parametrize("rounding", PROFILES)
@pytest.mark.parametrize("case", BMM_CASES, ids=lambda c: f"{c[4]}-{'x'.join(map(str, c[0]))}-adj{int(c[2])}{int(c[3])}")
def test_batch_matmul_of_two_activations(case, rounding, tmp_path):
    lhs, rhs, adj_x, adj_y, storage, lzp, rzp = case
    m = lhs[-1] if adj_x else lhs[-2]
    n = rhs[-2] if adj_y else rhs[-1]
    out_shape = tuple(np.broadcast_shapes(lhs[:-2], rhs[:-2])) + (m, n)
    scales = (3e-4, 2e-4, 2e-3) if storage == "int16" else (0.05, 0.03, 0.6)
    model = build_single_op_model(
        "BATCH_MATMUL", [TensorSpec(lhs, storage, scales[0], lzp), TensorSpec(rhs, storage, scales[1], rzp)],
        [TensorSpec(out_shape, storage, scales[2], 0 if storage == "int16" else 5)],
        {"adj_x": adj_x, "adj_y": adj_y})
    rng = np.random.default_rng(sum(lhs) + 7 * sum(rhs))
    inputs = [[_ints(rng, lhs, storage), _ints(rng, rhs, storage)] for _ in range(2)]
    differ, compared = _mismatches(model, inputs, rounding, tmp_path)
    assert compared == 2 * int(np.prod(out_shape))
    assert differ == 0, f"{differ} of {compared} elements differ from LiteRT ({rounding})"


def test_litert_runs_int8_batch_matmul_on_xnnpack_only_with_a_zero_rhs_zero_point():
    """What the `litert` cases above rely on: XNNPACK takes the rhs zp 0 case (float requantization)."""
    def model(rzp):
        return build_single_op_model(
            "BATCH_MATMUL", [TensorSpec((1, 4, 8), "int8", 0.05, -3), TensorSpec((1, 8, 4), "int8", 0.03, rzp)],
            [TensorSpec((1, 4, 4), "int8", 0.6, 5)], {"adj_x": False, "adj_y": False})

    assert delegate_partitions(model(0)) == 1
    assert delegate_partitions(model(7)) == 0


SOFTMAX_CASES = [("int8", 64, 0.1), ("int8", 512, 0.05), ("int16", 128, 5e-4), ("int16", 512, 2e-4)]


@pytest.mark.parametrize("rounding", PROFILES)
@pytest.mark.parametrize("storage,columns,scale", SOFTMAX_CASES)
def test_softmax_on_long_rows(storage, columns, scale, rounding, tmp_path):
    """int8 (gemmlowp fixed point; LiteRT's default: a float exp table) and int16 (TFLite's LUTs)."""
    wide = storage == "int16"
    shape = (1, 2, 4, columns)
    model = build_single_op_model(
        "SOFTMAX", [TensorSpec(shape, storage, scale, 0 if wide else 3)],
        [TensorSpec(shape, storage, 1 / 32768 if wide else 1 / 256, 0 if wide else -128)], {"beta": 1.0})
    rng = np.random.default_rng(columns)
    differ, compared = _mismatches(model, [[_ints(rng, shape, storage)] for _ in range(2)], rounding, tmp_path)
    assert compared == 2 * int(np.prod(shape)) and differ == 0, f"{differ} of {compared} differ ({rounding})"


@pytest.mark.parametrize("rounding", PROFILES)
def test_squared_difference_int8(rounding, tmp_path):
    """A row minus its (broadcast) mean, squared: the layer norm's variance term."""
    model = build_single_op_model(
        "SQUARED_DIFFERENCE", [TensorSpec((1, 16, 64), "int8", 0.04, -7), TensorSpec((1, 16, 1), "int8", 0.02, 3)],
        [TensorSpec((1, 16, 64), "int8", 0.09, -128)])
    rng = np.random.default_rng(5)
    inputs = [[_ints(rng, (1, 16, 64), "int8"), _ints(rng, (1, 16, 1), "int8")] for _ in range(3)]
    differ, compared = _mismatches(model, inputs, rounding, tmp_path)
    assert compared == 3 * 16 * 64 and differ == 0, f"{differ} of {compared} differ ({rounding})"


@pytest.mark.parametrize("rounding", PROFILES)
@pytest.mark.parametrize("storage", ["int8", "int16"])
def test_mean_over_the_last_axis(storage, rounding, tmp_path):
    wide = storage == "int16"
    model = build_single_op_model(
        "MEAN", [TensorSpec((1, 32, 96), storage, 3e-4 if wide else 0.05, 0 if wide else -9),
                 TensorSpec((1,), "int32", data=np.array([-1], np.int32))],
        [TensorSpec((1, 32, 1), storage, 2e-4 if wide else 0.01, 0 if wide else 4)], {"keep_dims": True})
    rng = np.random.default_rng(9)
    differ, compared = _mismatches(model, [[_ints(rng, (1, 32, 96), storage)] for _ in range(2)], rounding, tmp_path)
    assert compared == 2 * 32 and differ == 0, f"{differ} of {compared} differ ({rounding})"


@pytest.mark.parametrize("rounding", PROFILES)
@pytest.mark.parametrize("storage", ["int8", "int16"])
def test_attention_block_bit_exact(storage, rounding, tmp_path):
    """Q/K/V projections, heads, Q @ K^T, softmax over rows of 64, P @ V, merge, output
    projection, residual and the layer norm's pieces: one TVM build, LiteRT's numbers."""
    model = attention_block(seq=64, dim=64, heads=4, storage=storage, layer_norm=True)
    differ, compared = _mismatches(model, [[sample((1, 64, 64), storage, s)] for s in range(2)], rounding,
                                   tmp_path)
    assert compared == 2 * 64 * 64 and differ == 0, f"{differ} of {compared} differ ({rounding})"


def test_attention_block_profiles_differ_in_litert():
    """The two profiles are two different targets on this block (XNNPACK's float requantization
    of the projections and of P @ V), so the `litert` runs above test something of their own."""
    model = attention_block(seq=64, dim=64, heads=4, storage="int8", layer_norm=True)
    x = sample((1, 64, 64), "int8", 0)
    (ref,) = run_tflite(model, [x], reference=True)
    (xnn,) = run_tflite(model, [x], reference=False)
    assert int(np.count_nonzero(ref != xnn)) > 0
