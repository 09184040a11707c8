"""qint.rescale `float_even` (XNNPACK's requantization) in its magic-bias form.

For outputs whose clamp range is far below 2^21 the lowering computes
rint(float32(x) * scale) + zp as: clamp the product to [lo - zp, hi - zp], add
1.5 * 2^23 in float32, and subtract the bits of 1.5 * 2^23 - zp from the sum's
bits.  These tests compare that L3 (on the reference interpreter and through
TVM) with numpy's own float32 product and `np.rint` (ties to even), on random
accumulators over the whole int32 range, on products that are exact ties, and
at both clamp bounds.
"""

from __future__ import annotations

import numpy as np
import pytest

from qdialect.interpreter import run_module
from transforms.lower_to_linalg import QnnLowerToLinalgPass

from .helpers import apply, op_names, parse

CASES = [
    # (scales, zp, clamp (lo, hi) or None, output type)
    ((0.5, 0.25, 0.75, 1.5), -3, None, "i8"),
    ((0.0037, 0.00012, 1.0 / 3.0, 2.0 ** -20), 17, (-128, 6), "i8"),
    ((0.5, 0.125, 3.0, 0.01), 0, None, "i16"),
]


def _module(scales, zp, clamp, out_t):
    scale_text = ", ".join(repr(float(s)) for s in scales)
    extra = f", clamp_min = {clamp[0]} : i64, clamp_max = {clamp[1]} : i64" if clamp else ""
    return f"""
func.func @main(%x: tensor<64x{len(scales)}xi32>) -> tensor<64x{len(scales)}x{out_t}> {{
  %0 = qint.rescale %x {{mode = "float_even", scale = array<f64: {scale_text}>, output_zp = {zp} : i64{extra}}} : (tensor<64x{len(scales)}xi32>) -> tensor<64x{len(scales)}x{out_t}>
  func.return %0 : tensor<64x{len(scales)}x{out_t}>
}}
"""


def _inputs(scales, seed):
    rng = np.random.default_rng(seed)
    c = len(scales)
    x = rng.integers(-(1 << 31), 1 << 31, (64, c), dtype=np.int64)
    x[:16] = rng.integers(-600, 600, (16, c))          # around the clamp bounds
    x[16:24] = 2 * rng.integers(-200, 200, (8, c)) + 1  # odd: x * 0.5 is a tie
    x[24] = -(1 << 31)
    x[25] = (1 << 31) - 1
    x[26] = 0
    return x.astype(np.int32)


def _expected(x, scales, zp, clamp, out_t):
    bits = int(out_t[1:])
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if clamp:
        lo, hi = max(lo, clamp[0]), min(hi, clamp[1])
    y = x.astype(np.float32) * np.asarray(scales, np.float64).astype(np.float32)  # IEEE float32 product
    r = np.rint(y).astype(np.float64) + zp
    return np.clip(r, lo, hi).astype(f"int{bits}")


@pytest.mark.parametrize("case", CASES)
def test_magic_bias_rescale_matches_numpy_rint(case):
    scales, zp, clamp, out_t = case
    l3 = apply(parse(_module(scales, zp, clamp, out_t)), QnnLowerToLinalgPass())
    assert "arith.bitcast" in op_names(l3) and "arith.fptosi" not in op_names(l3)
    for seed in range(4):
        x = _inputs(scales, seed)
        got = run_module(l3, [x])[0]
        want = _expected(x, scales, zp, clamp, out_t)
        assert int(np.count_nonzero(got != want)) == 0, (seed, np.argwhere(got != want)[:5])


def test_magic_bias_rescale_through_tvm():
    from tvm_bridge.compile import compile_module

    for scales, zp, clamp, out_t in CASES:
        l3 = apply(parse(_module(scales, zp, clamp, out_t)), QnnLowerToLinalgPass())
        model = compile_module(l3)
        for seed in range(2):
            x = _inputs(scales, seed)
            got = model(x)[0]
            want = _expected(x, scales, zp, clamp, out_t)
            assert int(np.count_nonzero(got != want)) == 0, (scales, seed)
