"""Numerical edge cases: scales near the float limits, the QuantizeMultiplier 2^31
fix-up, shifts beyond 31, zero-size and rank-0 tensors, all-saturating inputs,
per-axis quantization with a single channel.

Expected values come from LiteRT's reference kernels (one-operator models
written by `tests/tflite_writer.py`, run with BUILTIN_REF) and, where the
arithmetic is short, from a hand calculation written out next to the
assertion; never from qdialect's own output.  Each model goes through the
TFLite importer and the numpy interpreter (`ours`).
"""

from __future__ import annotations

import numpy as np
import pytest

from qdialect.dialects.quant import quantized_element_type
from qdialect.importer import import_tflite
from qdialect.interpreter import run_module
from qdialect.reference.rescale import (
    multiply_by_quantized_multiplier,
    multiply_single_rounding,
    quantize_multiplier,
    quantize_multiplier_for,
)
from tests.fuzz.harness import run_main
from tests.tflite_writer import TensorSpec as T
from tests.tflite_writer import build_single_op_model, run_tflite
from transforms.opt import main as qd_opt

VALID = {"padding": "VALID", "stride_w": 1, "stride_h": 1}
RNG = np.random.default_rng(20261123)
X8 = RNG.integers(-128, 128, (1, 4, 4, 2)).astype(np.int8)


def ours(model: bytes, inputs) -> list[np.ndarray]:
    return run_module(import_tflite(model, name="edge"), inputs)


def litert(model: bytes, inputs) -> list[np.ndarray]:
    return run_tflite(model, inputs, reference=True)


def both(model: bytes, inputs) -> np.ndarray:
    """Our output, after checking it equals LiteRT's (values, shape and dtype)."""
    (mine,) = ours(model, inputs)
    (ref,) = litert(model, inputs)
    assert mine.shape == ref.shape and mine.dtype == ref.dtype
    np.testing.assert_array_equal(mine, ref)
    return mine


# ----- scales near the float limits ---------------------------------------------------------------


def test_add_with_subnormal_scales():
    """Both inputs and the output at scale 1.4e-45 (the smallest float32).  By hand:
    twice_max = 2s, M_i = s / 2s = 0.5 -> (2^30, 0), M_out = 2s / (2^20 s) = 2^-19 ->
    (2^30, -18); each (x - zp) << 20 halves exactly, the sum is ((x1-3) + (x2+5)) << 19
    and comes back exactly: out = clamp(x1 + x2 + 2 + 1)."""
    s = 1.4e-45
    model = build_single_op_model("ADD", [T((1, 4, 4, 2), "int8", s, 3), T((1, 4, 4, 2), "int8", s, -5)],
                                  [T((1, 4, 4, 2), "int8", s, 1)])
    x2 = X8[:, ::-1].copy()
    out = both(model, [X8, x2])
    np.testing.assert_array_equal(out, np.clip(X8.astype(int) + x2 + 3, -128, 127))


def test_conv_with_an_input_scale_near_float_max():
    """Input scale 3e38 against weight scales 1e-30 / 2e-30: the products in_s * w_s[c]
    (3e8, 6e8, the bias scales) and the multipliers in_s * w_s[c] / out_s are formed in
    double, so nothing overflows; LiteRT's reference kernel is the oracle."""
    w = RNG.integers(-127, 128, (2, 1, 1, 2)).astype(np.int8)
    model = build_single_op_model(
        "CONV_2D",
        [T((1, 4, 4, 2), "int8", 3e38, 0), T((2, 1, 1, 2), "int8", [1e-30, 2e-30], [0, 0], 0, w),
         T((2,), "int32", [3e8, 6e8], [0, 0], 0, np.array([5, -5], np.int32))],
        [T((1, 4, 4, 2), "int8", 3e38 * 1e-30 * 4, 7)], VALID)
    both(model, [X8])


def test_mul_whose_scale_product_is_near_float_max():
    """in1_s * in2_s = 1e19 * 1e19 = 1e38 (float32), / out_s 3e38: a multiplier of 1/3."""
    model = build_single_op_model("MUL", [T((1, 4, 4, 2), "int8", 1e19, 0), T((1, 4, 4, 2), "int8", 1e19, 0)],
                                  [T((1, 4, 4, 2), "int8", 3e38, 0)])
    out = both(model, [X8, X8])
    # by hand at one element: 100 * 100 / 3 = 3333.3 -> saturates; 3 * 3 / 3 = 3
    (small,) = ours(model, [np.full((1, 4, 4, 2), 3, np.int8)] * 2)
    assert set(np.unique(small)) == {3} and out.dtype == np.int8


@pytest.mark.parametrize("scale, expected", [
    # d = 3e38 * q is +-inf or huge: sigmoid 1 -> round(256) - 128 = 128 -> 127; 0 -> -128; q = 0: 0.5 -> 0
    (3e38, lambda x: np.where(x > 0, 127, np.where(x < 0, -128, 0))),
    # d = 1.4e-45 * q: sigmoid(d) = 0.5 in float -> 128 - 128 = 0 for every q
    (1.4e-45, lambda x: np.zeros_like(x)),
])
def test_logistic_table_at_extreme_input_scales(scale, expected):
    model = build_single_op_model("LOGISTIC", [T((1, 4, 4, 2), "int8", scale, 0)],
                                  [T((1, 4, 4, 2), "int8", 1 / 256, -128)])
    x = X8.copy()
    x.flat[:3] = [0, 1, -1]
    np.testing.assert_array_equal(both(model, [x]), expected(x.astype(int)))


def test_quant_type_scale_limits():
    def check(scale: str, expressed: str = "f32") -> str:
        text = f"func.func @f(%a: tensor<4x!quant.uniform<i8:{expressed}, {scale}:-3>>) {{ func.return }}"
        cap = run_main(qd_opt, [], text.encode())
        return cap.stdout if cap.rc == 0 else cap.stderr.strip()

    assert "!quant.uniform<i8:f32, 3.4028234663852886E+38:-3>" in check("3.4028234663852886e+38")
    assert "!quant.uniform<i8:f32, 1.4012984643248171E-45:-3>" in check("1.401298464324817e-45")
    # (the accepted forms and the ranges are mlir-opt 22's: same text, same bounds)
    f32_range = "out of expressed type range [1.401298e-45, 3.402823e+38] of f32"
    assert check("3.5e38").endswith(f" error: quant.uniform: scale 3.500000e+38 {f32_range}")
    # 7e-46 is below the smallest subnormal (MLIR compares the double, before any rounding)
    assert check("7.0e-46").endswith(f" error: quant.uniform: scale 7.000000e-46 {f32_range}")
    assert check("0.0").endswith(f" error: quant.uniform: scale 0.000000e+00 {f32_range}")
    assert "!quant.uniform<i8:f16, 6.550400e+04:-3>" in check("65504.0", "f16")
    assert check("70000.0", "f16").endswith(
        " error: quant.uniform: scale 7.000000e+04 out of expressed type range [5.960464e-08, 6.550400e+04] of f16")


# ----- the 2^31 fix-up and shifts beyond 31 -----------------------------------------------------------


def test_quantize_multiplier_fix_up_and_flush_by_hand():
    # frexp(1 - 2^-32) = (1 - 2^-32, 0); q * 2^31 = 2^31 - 0.5 rounds (half away) to 2^31:
    # the fix-up halves it and bumps the shift: (2^30, 1)
    assert [int(v) for v in quantize_multiplier(1 - 2.0**-32)] == [1 << 30, 1]
    assert [int(v) for v in quantize_multiplier(2.0**-5 * (1 - 2.0**-32))] == [1 << 30, -4]
    # 2^-32 = 0.5 * 2^-31: shift -31 is kept; 2^-33 has shift -32 < -31: flushed to (0, 0)
    assert [int(v) for v in quantize_multiplier(2.0**-32)] == [1 << 30, -31]
    assert [int(v) for v in quantize_multiplier(2.0**-33)] == [0, 0]
    # 2^40 = 0.5 * 2^41: the double-rounding build keeps shift 41; the single-rounding
    # build (TFLITE_SINGLE_ROUNDING) saturates it to shift 30 with M = 2^31 - 1
    assert [int(v) for v in quantize_multiplier_for(2.0**40, "tflite")] == [1 << 30, 41]
    assert [int(v) for v in quantize_multiplier_for(2.0**40, "single")] == [(1 << 31) - 1, 30]


def test_shift_minus_31_rounds_twice_by_hand():
    """x = 2^31 - 1 times 2^-32 = 0.49999999977: double rounding gives 1, single rounding 0.
    Double: SRDHM(2^31 - 1, 2^30) = ((2^31 - 1) 2^30 + 2^30) / 2^31 = 2^30; RDBPOT(2^30, 31):
    mask 2^31 - 1, remainder 2^30 > threshold 2^30 - 1 -> 0 + 1 = 1.
    Single: ((2^31 - 1) 2^30 + 2^61) >> 62 = (2^62 - 2^30) >> 62 = 0."""
    x = (1 << 31) - 1
    assert int(multiply_by_quantized_multiplier(x, 1 << 30, -31)) == 1
    assert int(multiply_single_rounding(x, 1 << 30, -31)) == 0
    # 2^31 - 512: SRDHM = 2^30 - 256 <= threshold: 0 under both
    assert int(multiply_by_quantized_multiplier(x - 511, 1 << 30, -31)) == 0
    # single rounding at the saturated shift 30, M = 2^31 - 1: (1 * (2^31 - 1) + 1) >> 1 = 2^30
    assert int(multiply_single_rounding(1, (1 << 31) - 1, 30)) == 1 << 30


def test_conv_whose_multiplier_needs_the_fix_up():
    """in_s = 1 + 2^-16, w_s = 1 - 2^-16, out_s = 1: the double real multiplier is
    1 - 2^-32, QuantizeMultiplier gives (2^30, 1) only through the fix-up, and
    MBQM(acc, 2^30, 1) = trunc((acc 2^31 + nudge) / 2^31) = acc exactly.  By hand:
    channel 0 weights [1, 0], bias 3 -> x[..., 0] + 3; channel 1 weights [0, -1],
    bias -3 -> -x[..., 1] - 3; zero point 0, clamped to int8."""
    a, b = 1 + 2.0**-16, 1 - 2.0**-16
    w = np.array([[[[1, 0]]], [[[0, -1]]]], np.int8)
    model = build_single_op_model(
        "CONV_2D",
        [T((1, 4, 4, 2), "int8", a, 0), T((2, 1, 1, 2), "int8", [b, b], [0, 0], 0, w),
         T((2,), "int32", [a * b, a * b], [0, 0], 0, np.array([3, -3], np.int32))],
        [T((1, 4, 4, 2), "int8", 1.0, 0)], VALID)
    x = X8.astype(int)
    expected = np.clip(np.stack([x[..., 0] + 3, -x[..., 1] - 3], axis=-1), -128, 127)
    np.testing.assert_array_equal(both(model, [X8]), expected)


def test_conv_with_shift_minus_31_and_a_saturated_bias():
    """in_s = w_s = 2^-16, out_s = 1: multiplier 2^-32 (shift -31, not flushed); zero
    weights, so acc = bias: 2^31 - 1 -> 1 and 2^31 - 512 -> 0 (the double rounding of
    test_shift_minus_31_rounds_twice_by_hand), plus zero point 0."""
    s = 2.0**-16
    model = build_single_op_model(
        "CONV_2D",
        [T((1, 1, 1, 1), "int8", s, 0), T((2, 1, 1, 1), "int8", [s, s], [0, 0], 0, np.zeros((2, 1, 1, 1), np.int8)),
         T((2,), "int32", [s * s, s * s], [0, 0], 0, np.array([2**31 - 1, 2**31 - 512], np.int32))],
        [T((1, 1, 1, 2), "int8", 1.0, 0)], VALID)
    np.testing.assert_array_equal(both(model, [np.array([[[[77]]]], np.int8)]), [[[[1, 0]]]])


def test_conv_whose_multiplier_is_flushed():
    """1e-20 * 1e-20 / 1.0 = 1e-40: shift -132 < -31, so (M, shift) = (0, 0) and every
    output is the zero point 7, whatever the input and bias."""
    w = RNG.integers(-127, 128, (2, 1, 1, 2)).astype(np.int8)
    model = build_single_op_model(
        "CONV_2D",
        [T((1, 4, 4, 2), "int8", 1e-20, 0), T((2, 1, 1, 2), "int8", [1e-20, 1e-20], [0, 0], 0, w),
         T((2,), "int32", [1e-40, 1e-40], [0, 0], 0, np.array([5, -5], np.int32))],
        [T((1, 4, 4, 2), "int8", 1.0, 7)], VALID)
    np.testing.assert_array_equal(both(model, [X8]), np.full((1, 4, 4, 2), 7))


# ----- zero-size and rank-0 tensors --------------------------------------------------------------------


def test_add_of_rank_0_tensors():
    """x1 = 100 (s 0.5, zp 3), x2 = -100 (s 0.25, zp -5), out s 0.5 zp 1.  By hand:
    twice_max 1.0, M1 0.5 -> (2^30, 0), M2 0.25 -> (2^30, -1), M_out 2^-19 -> (2^30, -18);
    97 << 20 -> SRDHM 50855936; -95 << 20 -> SRDHM -49807360 -> RDBPOT(, 1) -24903680;
    sum 25952256 -> SRDHM 12976128 -> RDBPOT(, 18) = 49 rem 131072 > 131071 -> 50; + 1 = 51."""
    model = build_single_op_model("ADD", [T((), "int8", 0.5, 3), T((), "int8", 0.25, -5)], [T((), "int8", 0.5, 1)])
    out = both(model, [np.array(100, np.int8), np.array(-100, np.int8)])
    assert out.shape == () and int(out) == 51


def test_logistic_of_a_rank_0_tensor():
    """q = 37, s = 0.1: sigmoid(3.7) = 0.97587; * 256 = 249.82 -> 250; - 128 = 122."""
    model = build_single_op_model("LOGISTIC", [T((), "int8", 0.1, 0)], [T((), "int8", 1 / 256, -128)])
    assert int(both(model, [np.array(37, np.int8)])) == 122


def test_zero_size_add_and_fully_connected():
    model = build_single_op_model("ADD", [T((0, 3), "int8", 0.5, 3), T((0, 3), "int8", 0.25, -5)],
                                  [T((0, 3), "int8", 0.5, 1)])
    out = both(model, [np.zeros((0, 3), np.int8), np.zeros((0, 3), np.int8)])
    assert out.shape == (0, 3) and out.dtype == np.int8
    w = RNG.integers(-127, 128, (3, 8)).astype(np.int8)
    model = build_single_op_model(
        "FULLY_CONNECTED",
        [T((0, 8), "int8", 0.5, 0), T((3, 8), "int8", 0.5, 0, 0, w), T((3,), "int32", 0.25, 0, 0, np.zeros(3, np.int32))],
        [T((0, 3), "int8", 1.0, 0)])
    assert both(model, [np.zeros((0, 8), np.int8)]).shape == (0, 3)


# ----- all-saturating inputs ------------------------------------------------------------------------------


def test_add_saturates_at_both_ends():
    """127 + 127 at scale 1 is 254, / 0.01 = 25400 -> 127; -128 + -128 -> -25600 -> -128."""
    model = build_single_op_model("ADD", [T((1, 4, 4, 2), "int8", 1.0, 0), T((1, 4, 4, 2), "int8", 1.0, 0)],
                                  [T((1, 4, 4, 2), "int8", 0.01, 0)])
    hi, lo = np.full((1, 4, 4, 2), 127, np.int8), np.full((1, 4, 4, 2), -128, np.int8)
    np.testing.assert_array_equal(both(model, [hi, hi]), hi)
    np.testing.assert_array_equal(both(model, [lo, lo]), lo)


def test_mul_saturates():
    """-128 * 127 = -16256 at scale 1, / 0.5 = -32512, - 10 -> -128."""
    model = build_single_op_model("MUL", [T((1, 4, 4, 2), "int8", 1.0, 0), T((1, 4, 4, 2), "int8", 1.0, 0)],
                                  [T((1, 4, 4, 2), "int8", 0.5, -10)])
    out = both(model, [np.full((1, 4, 4, 2), -128, np.int8), np.full((1, 4, 4, 2), 127, np.int8)])
    np.testing.assert_array_equal(out, np.full((1, 4, 4, 2), -128))


def test_conv_saturates_at_the_fused_relu6_bound():
    """x - zp = 255 on every tap, weights 127: every accumulator is >= 255 * 127 * 8 (a
    corner's 2x2 window of 2 channels), far past relu6's bound zp + round(6 / 0.05) =
    -100 + 120 = 20, which every output takes."""
    model = build_single_op_model(
        "CONV_2D",
        [T((1, 4, 4, 2), "int8", 1.0, -128), T((2, 3, 3, 2), "int8", [1.0, 1.0], [0, 0], 0, np.full((2, 3, 3, 2), 127, np.int8)),
         T((2,), "int32", [1.0, 1.0], [0, 0], 0, np.zeros(2, np.int32))],
        [T((1, 4, 4, 2), "int8", 0.05, -100)],
        {"padding": "SAME", "stride_w": 1, "stride_h": 1, "fused_activation_function": "RELU6"})
    np.testing.assert_array_equal(both(model, [np.full((1, 4, 4, 2), 127, np.int8)]), np.full((1, 4, 4, 2), 20))


# ----- per-axis with a single channel ------------------------------------------------------------------------


def _single_channel_weights(module):
    """The weights' type; a per-axis list of one entry may come in as per-tensor (TFLite's
    kernels treat a one-entry scale list as per-tensor too), but scale and zero point stay."""
    consts = [op for op in module.walk() if op.name == "qnn.constant"]
    q = quantized_element_type(consts[0].results[0].type)
    assert q.scale_array().reshape(-1).tolist() == [float(np.float32(0.02))]
    assert q.zero_point_array().reshape(-1).tolist() == [0]
    return q


def test_conv_with_one_per_axis_channel():
    w = RNG.integers(-127, 128, (1, 3, 3, 2)).astype(np.int8)
    model = build_single_op_model(
        "CONV_2D",
        [T((1, 4, 4, 2), "int8", 0.05, -3), T((1, 3, 3, 2), "int8", [0.02], [0], 0, w),
         T((1,), "int32", [0.001], [0], 0, np.array([17], np.int32))],
        [T((1, 4, 4, 1), "int8", 0.1, 2)], {"padding": "SAME", "stride_w": 1, "stride_h": 1})
    both(model, [X8])
    _single_channel_weights(import_tflite(model, name="edge"))


def test_depthwise_with_one_per_axis_channel():
    w = RNG.integers(-127, 128, (1, 3, 3, 1)).astype(np.int8)
    x = RNG.integers(-128, 128, (1, 4, 4, 1)).astype(np.int8)
    model = build_single_op_model(
        "DEPTHWISE_CONV_2D",
        [T((1, 4, 4, 1), "int8", 0.05, -3), T((1, 3, 3, 1), "int8", [0.02], [0], 3, w),
         T((1,), "int32", [0.001], [0], 0, np.array([17], np.int32))],
        [T((1, 4, 4, 1), "int8", 0.1, 2)],
        {"padding": "SAME", "stride_w": 1, "stride_h": 1, "depth_multiplier": 1})
    both(model, [x])
    _single_channel_weights(import_tflite(model, name="edge"))


def test_fully_connected_with_one_per_axis_channel():
    w = RNG.integers(-127, 128, (1, 8)).astype(np.int8)
    model = build_single_op_model(
        "FULLY_CONNECTED",
        [T((2, 8), "int8", 0.05, -3), T((1, 8), "int8", [0.02], [0], 0, w),
         T((1,), "int32", [0.001], [0], 0, np.array([17], np.int32))],
        [T((2, 1), "int8", 0.1, 2)])
    both(model, [RNG.integers(-128, 128, (2, 8)).astype(np.int8)])
