"""schedule.folded_cast drops the extension of a truncation that cannot wrap (schedule.interval
proves the value within the narrow type), and only that: a chain of requantizations in one
elementwise kernel no longer nests i64(i32(...)) once per step (NASNetMobile's translation took
258 s in TVM's canonical simplifier, 8 s after).  The bounds are checked against values
computed by numpy over every input, and a model of such chains against LiteRT."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")


def _load(dtype):
    from tvm import te

    return te.placeholder((4,), dtype)[0]


def test_interval_contains_every_value():
    """Each expression's bounds hold every value it takes over all int8 inputs (x, y)."""
    from tvm import tirx

    from tvm_bridge.schedule import interval

    x8, y8 = _load("int8"), _load("int8")
    x, y = tirx.Cast("int64", x8), tirx.Cast("int64", y8)
    cases = {
        "x*y+5": (x * y + 5, lambda a, b: a * b + 5),
        "(x-y)<<20 >>3": (((x - y) << 20) >> 3, lambda a, b: ((a - b) << 20) >> 3),
        "min(max(x*7,y),40)": (tirx.Min(tirx.Max(x * 7, y), tirx.IntImm("int64", 40)),
                               lambda a, b: min(max(a * 7, b), 40)),
        "select(x<y, x*x, -y)": (tirx.Select(x < y, x * x, 0 - y), lambda a, b: a * a if a < b else -b),
    }
    grid = list(itertools.product(range(-128, 128, 5), range(-128, 128, 7))) + [(-128, -128), (127, -128), (127, 127)]
    for name, (expr, f) in cases.items():
        lo, hi = interval(expr)
        values = [f(a, b) for a, b in grid]
        assert lo <= min(values) and max(values) <= hi, name


def test_a_truncation_that_may_wrap_keeps_its_casts():
    """i32(e) of an i64 e beyond int32 wraps: its extension back to i64 is not e, and the
    bounds of the truncation are int32's whole range."""
    from tvm import tirx

    from tvm_bridge.schedule import folded_cast, interval

    big = tirx.Cast("int64", _load("int32")) * 3  # beyond int32
    small = tirx.Cast("int64", _load("int8")) * 3 + 7  # within it
    wrapped = folded_cast("int32", big)
    assert interval(wrapped) == (-(1 << 31), (1 << 31) - 1)
    kept = folded_cast("int64", wrapped)
    assert isinstance(kept, tirx.Cast) and isinstance(kept.value, tirx.Cast)
    assert folded_cast("int64", folded_cast("int32", small)).same_as(small)
    # a truncation inside: (i32(big) as i64) * 1 is not within int32 by its operand's claim
    assert interval(tirx.Cast("int64", wrapped) + 0) == (-(1 << 31), (1 << 31) - 1)


@pytest.mark.parametrize("rounding", ["tflite", "litert"])
def test_eleven_channel_convolutions_and_add_equal_litert(rounding, tmp_path):
    """NASNet's shape of the problem: two convolutions of 11 output channels (no dot-product
    kernel: K is not a multiple of 8) whose requantizations and the ADD after them are one
    elementwise kernel; bit-exact against LiteRT (reference kernels / XNNPACK)."""
    from tests.tflite_writer import TensorSpec, build_model, run_tflite
    from tests.tvm_bridge.helpers import lowered_tflite
    from tvm_bridge import compile_module

    rng = np.random.default_rng(11)
    c, k = 8, 11
    tensors = [TensorSpec((1, 6, 6, c), "int8", scale=0.05, zero_point=-2)]
    ops = []
    for j in range(2):
        ws = [float(v) for v in rng.uniform(0.003, 0.02, k)]
        tensors += [TensorSpec((k, 1, 1, c), "int8", scale=ws, zero_point=[0] * k,
                               data=rng.integers(-127, 128, (k, 1, 1, c)).astype(np.int8)),
                    TensorSpec((k,), "int32", scale=[0.05 * s for s in ws], zero_point=[0] * k,
                               data=rng.integers(-2000, 2000, k).astype(np.int32)),
                    TensorSpec((1, 6, 6, k), "int8", scale=0.04 + 0.03 * j, zero_point=5 - 9 * j)]
        base = 1 + 3 * j
        ops.append(("CONV_2D", [0, base, base + 1], [base + 2],
                    {"padding": "SAME", "stride_w": 1, "stride_h": 1, "fused_activation_function": "NONE"}))
    tensors.append(TensorSpec((1, 6, 6, k), "int8", scale=0.09, zero_point=-7))
    ops.append(("ADD", [3, 6], [7], {"fused_activation_function": "RELU"}))
    model = build_model(ops, tensors, [0], [7])
    built = compile_module(lowered_tflite(model, rounding, tmp_path)())
    for _ in range(3):
        x = rng.integers(-128, 128, (1, 6, 6, c)).astype(np.int8)
        (want,) = run_tflite(model, [x], reference=rounding == "tflite")
        assert int(np.count_nonzero(built(x)[0] != want)) == 0
