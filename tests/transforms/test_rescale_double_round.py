"""qint.rescale `double_round` (TFLite's MultiplyByQuantizedMultiplier) in its one-shift form.

The lowering computes RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(a, M), e)
as (a*M + c) >> (31 + e) with a per-channel constant c chosen by the sign of the
SRDHM result.  These tests compare that L3 (on the reference interpreter and
through TVM) with a line-by-line Python transcription of TFLite's reference code
(tensorflow/lite/kernels/internal/common.h and gemmlowp's fixedpoint.h: the
64-bit product, the sign-dependent nudge, C's truncating division, and the
mask/threshold RoundingDivideByPOT), on random int32 accumulators over the whole
range, on exact ties of both roundings, at the sign boundary of the SRDHM
result, and at the int32 extremes, for right shifts 0..31 and left shifts.
"""

from __future__ import annotations

import numpy as np
import pytest

from qdialect.interpreter import run_module
from transforms.lower_to_linalg import QnnLowerToLinalgPass

from .helpers import apply, op_names, parse

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def _c_div(n: int, d: int) -> int:
    """C's integer division: truncates toward zero."""
    q = abs(n) // abs(d)
    return q if (n >= 0) == (d > 0) else -q


def _srdhm(a: int, b: int) -> int:
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return _c_div(ab + nudge, 1 << 31)


def _rdbpot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def _wrap32(v: int) -> int:
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


def _tflite(x: int, m: int, shift: int) -> int:
    left, right = max(shift, 0), max(-shift, 0)
    return _rdbpot(_srdhm(_wrap32(x * (1 << left)), m), right)


CASES = [
    # (multipliers, shifts, zp, clamp (lo, hi) or None, output type,
    #  input type, input zero point, left_shift attribute)
    ((1 << 30, 1 << 30, 1 << 30, 1 << 30), (-1, -2, -7, 0), -3, None, "i8", "i32", 0, 0),
    ((1 << 30, INT32_MAX, 1518500250, 1073741825), (-31, -30, -12, -5), 5, None, "i8", "i32", 0, 0),
    ((1340029796,) * 4, (-9,) * 4, -128, None, "i8", "i32", 0, 0),   # per-tensor: literals in the body
    ((1 << 30, 1992864825, 1 << 30, 1257966797), (2, 1, -20, -3), 0, (-128, 6), "i8", "i32", 0, 0),
    ((1 << 30, 1610612736, 1 << 30, 1 << 30), (-15, -16, -1, 0), 7, None, "i16", "i32", 0, 0),
    ((1 << 30, 1 << 30, 1 << 30, 1 << 30), (-1, -2, -7, 0), 0, None, "i32", "i32", 0, 0),
    # ADD's input rescale: (x - zp) << 20, int8 (the left shift folds into the final shift)
    ((1 << 30, 1992864825, 1 << 30, 1257966797), (-1, -3, -20, -20), 0, None, "i32", "i8", -5, 20),
    ((1340029796,) * 4, (-18,) * 4, -3, None, "i8", "i8", 7, 20),
    # ... per tensor at full precision: the 32-bit form (`_split32_plan`, d*Mh + (d*Ml + c) >> S)
    ((1795261357,) * 4, (-1,) * 4, 0, None, "i32", "i8", -5, 20),
    ((1795262416,) * 4, (-1,) * 4, 0, None, "i32", "i8", -5, 20),  # M mod 2^12 where the sign's nudge shows at d = -1
    ((1331439820,) * 4, (0,) * 4, 0, None, "i32", "i8", 127, 20),
    ((1193046471,) * 4, (-4,) * 4, 0, None, "i32", "i8", -128, 20),
    ((1 << 30, 1 << 30, 1 << 30, 1 << 30), (-1, -9, -16, 0), 2, None, "i16", "i16", 0, 15),
    ((1 << 30, 1 << 30, 1 << 30, 1 << 30), (1, 1, 1, 1), 0, None, "i32", "i8", -5, 20),  # left 21 in all
    # the larger-scale input of ADD: multiplier 2^30, shift 0 -- (x - zp) << 19, no multiply
    ((1 << 30,) * 4, (0,) * 4, 0, None, "i32", "i8", 7, 20),
    ((1 << 30,) * 4, (0,) * 4, 0, None, "i32", "i8", -128, 20),
    ((1 << 30,) * 4, (0,) * 4, 0, None, "i32", "i16", 0, 15),
    # (x + 3) << 16 can wrap at 32 bits for int16 x: no fold
    ((1 << 30, 1 << 30, 1518500250, 1 << 30), (-1, -9, -16, -30), 0, None, "i32", "i16", -3, 16),
]

_RANGE = {"i8": (-128, 127), "i16": (-32768, 32767), "i32": (INT32_MIN, INT32_MAX)}


def _module(ms, shifts, zp, clamp, out_t, in_t, izp, ls):
    extra = f", clamp_min = {clamp[0]} : i64, clamp_max = {clamp[1]} : i64" if clamp else ""
    if izp:
        extra += f", input_zp = {izp} : i64"
    if ls:
        extra += f", left_shift = {ls} : i64"
    c = len(ms)
    return f"""
func.func @main(%x: tensor<96x{c}x{in_t}>) -> tensor<96x{c}x{out_t}> {{
  %0 = qint.rescale %x {{mode = "double_round", multiplier = array<i64: {", ".join(map(str, ms))}>, shift = array<i64: {", ".join(map(str, shifts))}>, output_zp = {zp} : i64{extra}}} : (tensor<96x{c}x{in_t}>) -> tensor<96x{c}x{out_t}>
  func.return %0 : tensor<96x{c}x{out_t}>
}}
"""


def _inputs(case, seed):
    ms, shifts, _, _, _, in_t, izp, ls = case
    lo, hi = _RANGE[in_t]
    rng = np.random.default_rng(seed)
    c = len(ms)
    x = rng.integers(lo, hi + 1, (96, c), dtype=np.int64)
    x[:16] = rng.integers(max(lo, -5000), min(hi, 5000) + 1, (16, c))
    x[24], x[25], x[26], x[27], x[28] = lo, hi, 0, 1, -1
    for j, (m, s) in enumerate(zip(ms, shifts)):
        e = max(-s, 0)
        # a*M around -2^30, where the SRDHM result turns negative (a = (x - zp) << ls)
        a0 = -((1 << 30) // m >> ls) + izp if m else 0
        x[29:35, j] = [a0 - 2, a0 - 1, a0, a0 + 1, a0 + 2, -2]
        if m == 1 << 30 and s <= 0 and ls == 0:
            # SRDHM(a, 2^30) = floor((a + 1) / 2): a = 2 * (k * 2^e +- 2^(e-1)) is an exact
            # tie of RoundingDivideByPOT, of either sign
            k = rng.integers(-(1 << 10), 1 << 10, 30)
            half = (1 << (e - 1)) if e else 0
            ties = 2 * ((k << e) + np.where(k % 2 == 0, half, -half))
            x[35:65, j] = ties
            x[65:80, j] = ties[:15] - 1  # odd: SRDHM's own tie
    return np.clip(x, lo, hi).astype(f"int{in_t[1:]}")


def _expected(x, case):
    ms, shifts, zp, clamp, out_t, _, izp, ls = case
    bits = int(out_t[1:])
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if clamp:
        lo, hi = max(lo, clamp[0]), min(hi, clamp[1])
    out = np.empty(x.shape, np.int64)
    for (i, j), v in np.ndenumerate(x):
        a = _wrap32((int(v) - izp) * (1 << ls))
        out[i, j] = min(max(_tflite(a, ms[j], shifts[j]) + zp, lo), hi)
    return out.astype(f"int{bits}")


def test_reference_transcription_sanity():
    # gemmlowp's documented values: SRDHM(2^30, 2^30) = 2^29, RDBPOT(-5, 1) = -3 (half away)
    assert _srdhm(1 << 30, 1 << 30) == 1 << 29
    assert _rdbpot(-5, 1) == -3 and _rdbpot(5, 1) == 3 and _rdbpot(-3, 1) == -2
    assert _srdhm(INT32_MIN, INT32_MIN) == INT32_MAX


@pytest.mark.parametrize("case", CASES)
def test_one_shift_rescale_matches_tflite_reference(case):
    l3 = apply(parse(_module(*case)), QnnLowerToLinalgPass())
    names = op_names(l3)
    # one rounding step: no RoundingDivideByPOT remainder mask left in the body
    assert "arith.andi" not in names, names
    # the left shift folds away where (x - zp) << L cannot wrap
    in_t, izp, ls = case[5:]
    lo, hi = _RANGE[in_t]
    left = ls + max(case[1][0], 0)
    if in_t != "i32" and -(1 << 31) <= (lo - izp) << left and (hi - izp) << left < 1 << 31:
        if len(set(case[0])) == 1 and case[0][0] == 1 << 30 and len(set(case[1])) == 1 and case[1][0] >= 0:
            # and with the multiplier 2^30 and no right shift, (a * 2^30 + 2^(30-L)) >> (31-L)
            # is a << (L - 1): one shift, no multiply
            shifts = [op for op in l3.walk() if op.name == "arith.shli"]
            assert len(shifts) == 1 and "arith.muli" not in names, names
        else:
            assert "arith.shli" not in names, names
    for seed in range(3):
        x = _inputs(case, seed)
        got = run_module(l3, [x])[0]
        want = _expected(x, case)
        assert int(np.count_nonzero(got != want)) == 0, (seed, np.argwhere(got != want)[:5])


def test_one_shift_rescale_through_tvm():
    from tvm_bridge.compile import compile_module

    for case in CASES:
        l3 = apply(parse(_module(*case)), QnnLowerToLinalgPass())
        model = compile_module(l3)
        for seed in range(2):
            x = _inputs(case, seed)
            got = model(x)[0]
            want = _expected(x, case)
            assert int(np.count_nonzero(got != want)) == 0, (case, seed)
