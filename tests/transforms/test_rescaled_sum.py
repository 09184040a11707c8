"""TFLite's ADD / SUB at L2 (rescale, rescale, add or sub, rescale) lowered to one generic.

`qnn-lower-to-linalg` writes the four ops as one linalg.generic whose body is their
four bodies one after the other.  These tests run the L2 module on the reference
interpreter (the qint ops, computed by `qdialect.reference`) and the L3 module (the
arith ops of the one body) on random inputs over the whole storage range plus the
extremes, for every rounding mode that has an integer body, with broadcasting, zero
points, left shifts and clamps, and through TVM for a few of them: zero differing
elements.  The double_round cases are also checked against the line-by-line
transcription of TFLite's reference in test_rescale_double_round (the zoo tests check
whole models' ADDs against LiteRT).  The cases that must stay apart (an intermediate value read twice, a
per-channel parameter) are lowered op by op, with the same values.
"""

from __future__ import annotations

import numpy as np
import pytest

from qdialect.interpreter import run_module
from transforms.lower_to_linalg import QnnLowerToLinalgPass

from .helpers import apply, parse

_RANGE = {"i8": (-128, 127), "i16": (-32768, 32767)}


def _rescale(value: str, in_t: str, out_t: str, mode: str, m, s, **attrs) -> str:
    params = (f'multiplier = array<i64: {", ".join(map(str, m))}>, shift = array<i64: {", ".join(map(str, s))}>'
              if mode != "float_even" else f'scale = array<f64: {", ".join(map(repr, m))}>')
    extra = "".join(f", {k} = {v} : i64" for k, v in attrs.items())
    return f'qint.rescale {value} {{mode = "{mode}", {params}{extra}}} : ({in_t}) -> ({out_t})'


def _module(case) -> str:
    shape_x, shape_y, shape_out, st, op, (ma, sa, zx), (mb, sb, zy), (mr, sr, zo, lo, hi), mode, ls = case
    t = lambda shape, el: f"tensor<{'x'.join(map(str, shape))}x{el}>"  # noqa: E731
    xt, yt, ot = t(shape_x, st), t(shape_y, st), t(shape_out, st)
    xi, yi, oi = t(shape_x, "i32"), t(shape_y, "i32"), t(shape_out, "i32")
    mode_in = "double_round" if mode == "float_even" else mode
    return f"""
func.func @main(%x: {xt}, %y: {yt}) -> {ot} {{
  %a = {_rescale("%x", xt, xi, mode_in, [ma], [sa], input_zp=zx, left_shift=ls)}
  %b = {_rescale("%y", yt, yi, mode_in, [mb], [sb], input_zp=zy, left_shift=ls)}
  %s = qint.{op} %a, %b : ({xi}, {yi}) -> {oi}
  %r = {_rescale("%s", oi, ot, mode, [mr], [sr], output_zp=zo, clamp_min=lo, clamp_max=hi)}
  func.return %r : {ot}
}}
"""


CASES = [
    # (x shape, y shape, out shape, storage, add|sub, x (multiplier, shift, zp), y (...),
    #  out (multiplier, shift, zp, clamp lo, hi), output mode, left shift)
    ((4, 8), (4, 8), (4, 8), "i8", "add", (1 << 30, 0, -3), (1 << 30, 0, -3),
     (1 << 30, -18, -3, -128, 127), "double_round", 20),  # the benchmark's residual add
    ((4, 8), (8,), (4, 8), "i8", "sub", (1 << 30, 0, 7), (1374389504, -1, -128),
     (1518500250, -17, 2, -100, 120), "double_round", 20),
    ((2, 1, 8), (2, 6, 1), (2, 6, 8), "i8", "add", (1992864825, -2, 0), (1 << 30, 0, 127),
     (1257966797, -19, -128, -128, 6), "double_round", 20),  # both broadcast, relu6-like clamp
    ((3, 16), (3, 16), (3, 16), "i16", "add", (1 << 30, 0, 0), (1610612736, -1, 0),
     (1 << 30, -14, 0, -32768, 32767), "double_round", 15),  # 16-bit ADD: left shift 15
    ((4, 8), (4, 8), (4, 8), "i8", "sub", (1 << 30, 0, 1), (1 << 30, 0, -1),
     (1340029796, -20, 0, -128, 127), "single_round", 20),
    ((4, 8), (4, 8), (4, 8), "i8", "add", (1 << 30, 0, 1), (1073741825, -3, -1),
     (0.000123, 0, 3, -128, 127), "float_even", 20),  # a float output rescale after integer inputs
]


def _inputs(case, seed):
    lo, hi = _RANGE[case[3]]
    rng = np.random.default_rng(seed)
    out = []
    for shape in case[:2]:
        v = rng.integers(lo, hi + 1, shape, dtype=np.int64).reshape(-1)
        v[:4] = [lo, hi, 0, -1][: v.size]
        out.append(v.reshape(shape).astype(f"int{case[3][1:]}"))
    return out


def _transcribed(case, x, y) -> np.ndarray | None:
    """The sum computed by the line-by-line transcription of TFLite's reference
    (MultiplyByQuantizedMultiplier, test_rescale_double_round) for the double_round
    cases: an oracle that shares no code with the interpreter or the lowering."""
    from .test_rescale_double_round import _tflite, _wrap32

    _, _, shape, st, op, (ma, sa, zx), (mb, sb, zy), (mr, sr, zo, lo, hi), mode, ls = case
    if mode != "double_round":
        return None
    bits = int(st[1:])
    lo, hi = max(lo, -(1 << (bits - 1))), min(hi, (1 << (bits - 1)) - 1)
    xs, ys = np.broadcast_to(x, shape).astype(np.int64), np.broadcast_to(y, shape).astype(np.int64)
    out = np.empty(shape, np.int64)
    for i in np.ndindex(*shape):
        va = _tflite(_wrap32((int(xs[i]) - zx) << ls), ma, sa)
        vb = _tflite(_wrap32((int(ys[i]) - zy) << ls), mb, sb)
        out[i] = min(max(_tflite(_wrap32(va + vb if op == "add" else va - vb), mr, sr) + zo, lo), hi)
    return out


def _generics(module) -> int:
    return sum(1 for op in module.walk() if op.name == "linalg.generic")


@pytest.mark.parametrize("case", CASES)
def test_one_generic_with_the_values_of_the_four_ops(case):
    l2 = parse(_module(case))
    l3 = apply(l2, QnnLowerToLinalgPass())
    assert _generics(l3) == 1
    for seed in range(4):
        x, y = _inputs(case, seed)
        want = run_module(l2, [x, y])[0]
        got = run_module(l3, [x, y])[0]
        assert got.dtype == want.dtype
        assert int(np.count_nonzero(got != want)) == 0, (seed, np.argwhere(got != want)[:5])
        transcribed = _transcribed(case, x, y)
        if transcribed is not None:
            assert int(np.count_nonzero(got != transcribed)) == 0, (seed, np.argwhere(got != transcribed)[:5])


def test_one_generic_through_tvm():
    from tvm_bridge.compile import compile_module

    for case in CASES[:3]:
        l2 = parse(_module(case))
        model = compile_module(apply(l2, QnnLowerToLinalgPass()))
        for seed in range(2):
            x, y = _inputs(case, seed)
            want = run_module(l2, [x, y])[0]
            assert int(np.count_nonzero(model(x, y)[0] != want)) == 0, (case, seed)


def test_sums_whose_values_are_read_elsewhere_stay_apart():
    # the rescaled x returned as well; the sum of a second pair rescaled per channel
    text = _module(CASES[0]).replace("func.return %r : tensor<4x8xi8>", "func.return %r, %a : tensor<4x8xi8>, tensor<4x8xi32>") \
        .replace("-> tensor<4x8xi8> {", "-> (tensor<4x8xi8>, tensor<4x8xi32>) {")
    l2 = parse(text)
    l3 = apply(l2, QnnLowerToLinalgPass())
    assert _generics(l3) == 4
    x, y = _inputs(CASES[0], 0)
    for want, got in zip(run_module(l2, [x, y]), run_module(l3, [x, y])):
        assert int(np.count_nonzero(got != want)) == 0
    per_channel = _module(CASES[0]).replace(
        "multiplier = array<i64: 1073741824>, shift = array<i64: -18>",
        "multiplier = array<i64: 1073741824, 1073741824, 1073741824, 1073741824, 1073741824, 1073741824, "
        "1073741824, 1518500250>, shift = array<i64: -18, -18, -18, -18, -18, -18, -18, -17>")
    assert per_channel != _module(CASES[0])
    l2 = parse(per_channel)
    l3 = apply(l2, QnnLowerToLinalgPass())
    assert _generics(l3) == 4
    assert int(np.count_nonzero(run_module(l3, [x, y])[0] != run_module(l2, [x, y])[0])) == 0


def test_a_sum_whose_result_is_read_by_nothing_still_lowers():
    # the last rescale is dead (erased before its turn): the other three are lowered one by one
    text = _module(CASES[0]).replace("func.return %r : tensor<4x8xi8>", "func.return %x : tensor<4x8xi8>")
    l3 = apply(parse(text), QnnLowerToLinalgPass())
    assert not [op.name for op in l3.walk() if op.name.startswith("qint.")]
    x, y = _inputs(CASES[0], 0)
    assert int(np.count_nonzero(run_module(l3, [x, y])[0] != x)) == 0


def _headed_module(per_channel: bool, both: bool, broadcast: bool = False) -> str:
    """x, and an i32 accumulator requantized per channel (the head) then rescaled for the sum:
    a convolution's requantization before a residual add, as decomposed."""
    c = 8
    shape_y = (4, 1) if broadcast else (4, c)
    m = [1686695680, 2028166144, 1243114368, 1829223552, 1452867968, 1335042560, 1323162496, 1725326976]
    sh = [-7, -9, -7, -9, -7, -7, -7, -7]
    if not per_channel:
        m, sh = m[:1] * c, sh[:1] * c
    if broadcast:
        m, sh = m[:1], sh[:1]
    head = lambda v, t: _rescale(v, f"tensor<{t}xi32>", f"tensor<{t}xi8>", "double_round", m, sh,  # noqa: E731
                                 output_zp=-3, clamp_min=-3, clamp_max=117)
    tx, ty = "4x8", "x".join(map(str, shape_y))
    x_side = (f"%hx = {head('%x', tx)}\n  %a = " + _rescale("%hx", f"tensor<{tx}xi8>", f"tensor<{tx}xi32>",
              "double_round", [1 << 30], [0], input_zp=-3, left_shift=20)) if both else (
        "%a = " + _rescale("%x", f"tensor<{tx}xi8>", f"tensor<{tx}xi32>", "double_round", [1 << 30], [0],
                           input_zp=-3, left_shift=20))
    x_t = "i32" if both else "i8"
    return f"""
func.func @main(%x: tensor<{tx}x{x_t}>, %y: tensor<{ty}xi32>) -> tensor<4x8xi8> {{
  %h = {head('%y', ty)}
  %b = {_rescale("%h", f"tensor<{ty}xi8>", f"tensor<{ty}xi32>", "double_round", [1 << 30], [0], input_zp=-3, left_shift=20)}
  {x_side}
  %s = qint.add %a, %b : (tensor<{tx}xi32>, tensor<{ty}xi32>) -> tensor<4x8xi32>
  %r = {_rescale("%s", "tensor<4x8xi32>", "tensor<4x8xi8>", "double_round", [1 << 30], [-18], output_zp=-3)}
  func.return %r : tensor<4x8xi8>
}}
"""


@pytest.mark.parametrize("per_channel, both, broadcast, generics", [
    (True, False, False, 1),   # the residual add after a convolution: one generic
    (False, False, False, 1),
    (True, True, False, 1),    # both inputs requantized accumulators
    (False, False, True, 2),   # a broadcast side keeps its head apart
])
def test_a_requantization_before_the_sum_joins_it(per_channel, both, broadcast, generics):
    l2 = parse(_headed_module(per_channel, both, broadcast))
    l3 = apply(l2, QnnLowerToLinalgPass())
    assert _generics(l3) == generics
    rng = np.random.default_rng(7)
    shape_y = (4, 1) if broadcast else (4, 8)
    for _ in range(4):
        x = (rng.integers(-(1 << 20), 1 << 20, (4, 8)).astype(np.int32) if both
             else rng.integers(-128, 128, (4, 8)).astype(np.int8))
        y = rng.integers(-(1 << 20), 1 << 20, shape_y).astype(np.int32)
        y.reshape(-1)[:2] = [-(1 << 31), (1 << 31) - 1]
        want = run_module(l2, [x, y])[0]
        got = run_module(l3, [x, y])[0]
        assert int(np.count_nonzero(got != want)) == 0


def test_a_requantization_before_the_sum_through_tvm():
    from tvm_bridge.compile import compile_module

    l2 = parse(_headed_module(True, False))
    model = compile_module(apply(l2, QnnLowerToLinalgPass()))
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (4, 8)).astype(np.int8)
    y = rng.integers(-(1 << 20), 1 << 20, (4, 8)).astype(np.int32)
    assert int(np.count_nonzero(model(x, y)[0] != run_module(l2, [x, y])[0])) == 0
