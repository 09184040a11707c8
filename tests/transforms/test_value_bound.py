"""The bounds `qnn-lower-to-linalg` takes from a rescale's producers (`value_bound`) and the
double rounding's sign and 2^30 forms they allow, on the reference interpreter.

The bounds are checked against hand-computed numbers; the forms against
tests/transforms/test_rescale_double_round.py's line-by-line transcription of TFLite's
MultiplyByQuantizedMultiplier, on every accumulator a convolution with one-hot weights and
a bias reaches (x + bias for every int8 x: ties of both roundings of either sign, the sign
boundary, the bound's ends)."""

from __future__ import annotations

import numpy as np
import pytest

from qdialect.interpreter import run_module
from transforms.lower_to_linalg import QnnLowerToLinalgPass, value_bound

from .helpers import apply, parse
from .test_rescale_double_round import _tflite


def _first(module, name: str):
    return next(op for op in module.walk() if op.name == name)


def test_bounds_by_hand():
    """conv2d: per output channel sum |w - wzp| * max |x - izp| (+ |bias|), int8 input read
    as int8 or uint8 (izp -3: max(|-128 + 3|, |255 + 3|) = 258); filter 0 = [1, -2, 3, 0],
    filter 1 = [-4, 5, -6, 7]: 6 * 258 + 100 = 1648 and 22 * 258 + 9 = 5685.  The rescale
    of that (M = 2^30, shift -3, zp 2): 5685 * 2^30 >> 34 = 355, + 2 + |zp| 2 = 359 (within
    its int8 clamp's 128 -> 128).  add of two int8 values minus zero points 5 and -7:
    max |x - 5| + max |y + 7| = 250 + 262 = 512 (uint8 reading: 255 + 7 = 262)."""
    module = parse("""
func.func @main(%x: tensor<1x2x2x4xi8>, %a: tensor<4xi8>, %b: tensor<4xi8>) -> (tensor<1x2x2x2xi8>, tensor<4xi32>) {
  %w = arith.constant dense<[[[[1, -2, 3, 0]]], [[[-4, 5, -6, 7]]]]> : tensor<2x1x1x4xi8>
  %bias = arith.constant dense<[100, -9]> : tensor<2xi32>
  %acc = qint.conv2d %x, %w {input_zp = -3 : i64, weight_zp = 0 : i64, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x2x2x4xi8>, tensor<2x1x1x4xi8>) -> tensor<1x2x2x2xi32>
  %s = qint.bias_add %acc, %bias : (tensor<1x2x2x2xi32>, tensor<2xi32>) -> tensor<1x2x2x2xi32>
  %r = qint.rescale %s {mode = "double_round", multiplier = array<i64: 1073741824>, shift = array<i64: -3>, output_zp = 2 : i64} : (tensor<1x2x2x2xi32>) -> tensor<1x2x2x2xi8>
  %sum = qint.add %a, %b {lhs_zp = 5 : i64, rhs_zp = -7 : i64} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi32>
  func.return %r, %sum : tensor<1x2x2x2xi8>, tensor<4xi32>
}
""")
    conv, bias_add, rescale, add = (_first(module, n) for n in ("qint.conv2d", "qint.bias_add", "qint.rescale", "qint.add"))
    assert value_bound(conv.results[0]) == 22 * 258
    assert value_bound(bias_add.results[0]) == 22 * 258 + 9
    assert value_bound(rescale.results[0]) == 128
    assert value_bound(add.results[0]) == 512
    assert value_bound(module.body.block.first_op.args[0]) is None  # an argument: nothing known


def test_sum_bounds_by_hand():
    """Sums of `count` terms: reduce_sum over 4 x 4 int8 values 16 * 255 = 4080 (uint8 reading);
    pool_sum of 3 x 3 windows 9 * 255 = 2295; batch_matmul over K = 5 with zero points 3 and
    -2: 5 * max(|-128 - 3|, |255 - 3|) * max(|-128 + 2|, |255 + 2|) = 5 * 252 * 257 = 323820.
    A MEAN's rescale of the reduce_sum (input_zp = 16 * zp) then takes the sign form: the
    bound, not the i32 storage, decides whether x - input_zp stays inside int32."""
    module = parse("""
func.func @main(%x: tensor<1x4x4x8xi8>, %a: tensor<1x2x5xi8>, %b: tensor<1x5x3xi8>) -> (tensor<1x1x1x8xi8>, tensor<1x2x2x8xi32>, tensor<1x2x3xi32>) {
  %s = qint.reduce_sum %x {axes = array<i64: 1, 2>, keep_dims = true} : (tensor<1x4x4x8xi8>) -> tensor<1x1x1x8xi32>
  %m = qint.rescale %s {mode = "double_round", multiplier = array<i64: 1518500250>, shift = array<i64: -4>, input_zp = -2048 : i64, output_zp = -128 : i64} : (tensor<1x1x1x8xi32>) -> tensor<1x1x1x8xi8>
  %p = qint.pool_sum %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x4x4x8xi8>) -> tensor<1x2x2x8xi32>
  %q = qint.batch_matmul %a, %b {lhs_zp = 3 : i64, rhs_zp = -2 : i64} : (tensor<1x2x5xi8>, tensor<1x5x3xi8>) -> tensor<1x2x3xi32>
  func.return %m, %p, %q : tensor<1x1x1x8xi8>, tensor<1x2x2x8xi32>, tensor<1x2x3xi32>
}
""")
    reduce, pool, matmul = (_first(module, n) for n in ("qint.reduce_sum", "qint.pool_sum", "qint.batch_matmul"))
    assert value_bound(reduce.results[0]) == 4080
    assert value_bound(pool.results[0]) == 2295
    assert value_bound(matmul.results[0]) == 323820
    lowered = apply(module, QnnLowerToLinalgPass())
    assert _sign_ops(lowered) == 1
    x = np.arange(-128, 128, dtype=np.int8).reshape(2, 4, 4, 8)[:1]
    got = run_module(lowered, [x, np.zeros((1, 2, 5), np.int8), np.zeros((1, 5, 3), np.int8)])[0]
    sums = x.astype(np.int64).sum(axis=(1, 2)).reshape(-1)
    want = [max(-128, min(127, _tflite(int(v) + 2048, 1518500250, -4) - 128)) for v in sums]
    assert got.reshape(-1).tolist() == want


def _conv_rescale(bias, ms, shifts, zp: int) -> str:
    k = len(bias)
    return f"""
func.func @main(%x: tensor<1x16x16x1xi8>) -> tensor<1x16x16x{k}xi8> {{
  %w = arith.constant dense<1> : tensor<{k}x1x1x1xi8>
  %bias = arith.constant dense<[{", ".join(map(str, bias))}]> : tensor<{k}xi32>
  %acc = qint.conv2d %x, %w {{input_zp = 0 : i64, weight_zp = 0 : i64, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>}} : (tensor<1x16x16x1xi8>, tensor<{k}x1x1x1xi8>) -> tensor<1x16x16x{k}xi32>
  %s = qint.bias_add %acc, %bias : (tensor<1x16x16x{k}xi32>, tensor<{k}xi32>) -> tensor<1x16x16x{k}xi32>
  %r = qint.rescale %s {{mode = "double_round", multiplier = array<i64: {", ".join(map(str, ms))}>, shift = array<i64: {", ".join(map(str, shifts))}>, output_zp = {zp} : i64}} : (tensor<1x16x16x{k}xi32>) -> tensor<1x16x16x{k}xi8>
  func.return %r : tensor<1x16x16x{k}xi8>
}}
"""


def _sign_ops(module) -> int:
    """`x >> 31` in 32 bits: the forms' sign test."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import i32

    return sum(1 for op in module.walk() if isinstance(op, arith.ShRSIOp) and op.result.type == i32
               and isinstance(c := op.rhs.owner, arith.ConstantOp) and c.value.value.data == 31)


def _wide_products(module) -> int:
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import i64

    return sum(1 for op in module.walk() if isinstance(op, arith.MuliOp) and op.result.type == i64)


@pytest.mark.parametrize("form, ms, shifts, zp", [
    # sign form: M in (2^30, 2^31), right shifts 1..30; the zero point inside the shift
    ("sign", (1073741825, 2147483647, 1518500250, 1992864825), (-1, -2, -13, -30), -5),
    ("sign", (1340029796,) * 4, (-1,) * 4, 127),
    # M = 2^30, one shift: no product
    ("pow2", (1 << 30,) * 4, (-1,) * 4, -128),
    ("pow2", (1 << 30,) * 4, (-7,) * 4, 3),
    ("pow2", (1 << 30,) * 4, (0,) * 4, 0),
    # a right shift of 31 (the high half could leave int32) and a mixed 2^30: the select form
    ("select", (1073741825, 2147483647, 1518500250, 1992864825), (-1, -2, -13, -31), 0),
    ("select", (1 << 30, 2147483647, 1518500250, 1992864825), (-1, -2, -13, -3), 0),
])
def test_forms_match_tflite_transcription(form, ms, shifts, zp):
    rng = np.random.default_rng(len(form) - sum(shifts))
    # biases: around 0, at ties of RoundingDivideByPOT (q = k 2^e + 2^(e-1)), near +-2^30
    bias = []
    for m, s in zip(ms, shifts):
        e = -s
        k = int(rng.integers(-3000, 3000))
        tie = ((k << e) + ((1 << (e - 1)) if e else 0)) * (1 << 31) // m if e < 20 else 0
        bias.append(int(np.clip(tie, -(1 << 30) + 300, (1 << 30) - 300)))
    bias[0] = 0
    module = apply(parse(_conv_rescale(bias, ms, shifts, zp)), QnnLowerToLinalgPass())
    assert (_sign_ops(module) > 0) == (form == "sign" or (form == "pow2" and shifts[0] != 0))  # ((d + 1) >> 1: no sign)
    assert (_wide_products(module) > 0) == (form != "pow2")
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 16, 16, 1)
    got = run_module(module, [x])[0]
    for c, (m, s, b) in enumerate(zip(ms, shifts, bias)):
        want = [max(-128, min(127, _tflite(int(v) + b, m, s) + zp)) for v in x.reshape(-1)]
        assert got[..., c].reshape(-1).tolist() == want, (form, c)
