"""qnn-overflow-check: the accumulator bound is sound and exact.

The oracle does not share code with the pass.  The accumulator of an op with
constant weights is an affine function of its input, `acc = J (x - zp) +
bias`; J is read off the interpreter (one-hot inputs, the exact sums observed
through `observe_accumulators`), and the extremes over the input's storage
range follow element by element: `bias + sum_j max(a J_ej, b J_ej)` with
`[a, b]` the centered input range.  The pass must report exactly those
extremes; the input that reaches the worst element (each input at the end of
its range that its coefficient's sign asks for) must raise
AccumulatorOverflow on the interpreter with `check_overflow` exactly when the
pass says the op can overflow, and no input (the extreme ones, random ones)
may overflow when it says the op fits.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from qdialect.builder import GraphBuilder
from qdialect.dialects import qnn
from qdialect.dialects.quant import UniformQuantizedType as Q
from qdialect.diagnostics import parse_module
from qdialect.interpreter import AccumulatorOverflow, run_module
from qdialect.reference.linear import observe_accumulators
from tests.fuzz.harness import run_main
from transforms.opt import QdOptMain
from transforms.opt import main as qd_opt
from transforms.overflow_check import ACC_RANGES, accumulator_bounds

from xdsl.dialects.builtin import TensorType


def _storage_values(rng, q: Q, shape, magnitude=None):
    lo, hi = q.storage_range()
    if magnitude is not None:
        lo, hi = max(lo, -magnitude), min(hi, magnitude)
    return np.array([rng.randint(lo, hi) for _ in range(int(np.prod(shape)))], dtype=np.int64).reshape(shape)


def _random_case(seed: int):
    """One accumulating op with constant weights and bias on a free input; (module, x shape, x type)."""
    rng = random.Random(seed)
    kind = ["conv2d", "depthwise", "transpose", "fc", "matmul_rhs", "matmul_lhs"][seed % 6]
    wide = rng.random() < 0.25  # 16-bit activations and weights against an i32 accumulator
    storage = "i16" if wide else rng.choice(["i8", "i8", "u8"])
    lo, hi = Q.per_tensor(1.0, 0, storage=storage).storage_range()
    x_q = Q.per_tensor(0.5, rng.choice([lo, hi, 0 if lo <= 0 else lo, rng.randint(lo, hi)]), storage=storage)
    w_storage = "i16" if wide else "i8"
    mag = rng.choice([1, 3, 20, 127, 32767 if wide else 127])
    out_q = Q.per_tensor(0.25, 0)
    knobs = {"acc": "i32" if wide else rng.choice(["i16", "i16", "i32"])}
    if rng.random() < 0.3:
        knobs["acc_overflow"] = "saturate"
    if kind not in ("matmul_rhs", "matmul_lhs") and rng.random() < 0.2:
        knobs["bias"] = "output"
    g = GraphBuilder()
    bias_mag = rng.choice([0, 100, 1 << 14, 1 << 20])
    if kind in ("conv2d", "depthwise", "transpose"):
        n, h, wd, c = 1, rng.randint(1, 5), rng.randint(1, 5), rng.randint(1, 3)
        kh, kw = rng.randint(1, 3), rng.randint(1, 3)
        x = g.input([n, h, wd, c], x_q)
        strides = (rng.randint(1, 3), rng.randint(1, 3))
        if kind == "conv2d":
            o = rng.randint(1, 3)
            wq = Q.per_axis([0.1] * o, 0, axis=0, storage=w_storage, storage_min=-mag if mag < 127 else None)
            w = g.constant(_storage_values(rng, wq, (o, kh, kw, c), mag), wq)
            b = g.bias(_storage_values(rng, Q.per_tensor(1.0, 0, storage="i32"), (o,), bias_mag), x, w)
            dil = (rng.randint(1, 2), rng.randint(1, 2))
            pad = rng.choice(["SAME", "VALID"]) if (h >= (kh - 1) * dil[0] + 1 and wd >= (kw - 1) * dil[1] + 1) else "SAME"
            y = g.conv2d(x, w, b, out_q, strides=strides, dilations=dil, padding=pad, **knobs)
        elif kind == "depthwise":
            mult = rng.randint(1, 2)
            wq = Q.per_axis([0.1] * (c * mult), 0, axis=3, storage=w_storage)
            w = g.constant(_storage_values(rng, wq, (1, kh, kw, c * mult), mag), wq)
            b = g.bias(_storage_values(rng, Q.per_tensor(1.0, 0, storage="i32"), (c * mult,), bias_mag), x, w)
            pad = rng.choice(["SAME", "VALID"]) if (h >= kh and wd >= kw) else "SAME"
            y = g.depthwise_conv2d(x, w, b, out_q, strides=strides, padding=pad, **knobs)
        else:
            o = rng.randint(1, 3)
            wq = Q.per_tensor(0.1, 0, storage=w_storage)
            w = g.constant(_storage_values(rng, wq, (o, kh, kw, c), mag), wq)
            b = g.bias(_storage_values(rng, Q.per_tensor(1.0, 0, storage="i32"), (o,), bias_mag), x, w)
            pt, pl = rng.randint(0, kh - 1), rng.randint(0, kw - 1)
            pb, pr = rng.randint(0, kh - 1), rng.randint(0, kw - 1)
            oh, ow = (h - 1) * strides[0] + kh - pt - pb, (wd - 1) * strides[1] + kw - pl - pr
            if oh <= 0 or ow <= 0:
                pt = pb = pl = pr = 0
                oh, ow = (h - 1) * strides[0] + kh, (wd - 1) * strides[1] + kw
            y = g.op(qnn.TransposeConv2DOp, [x, w, b], [TensorType(out_q, [n, oh, ow, o])],
                     strides=list(strides), padding=[pt, pb, pl, pr], **knobs)[0]
        shape = [n, h, wd, c]
    elif kind == "fc":
        rows, k, o = rng.randint(1, 3), rng.randint(1, 12), rng.randint(1, 4)
        x = g.input([rows, k], x_q)
        wq = Q.per_axis([0.1] * o, 0, axis=0, storage=w_storage) if rng.random() < 0.5 else Q.per_tensor(0.1, 0, storage=w_storage)
        w = g.constant(_storage_values(rng, wq, (o, k), mag), wq)
        b = g.bias(_storage_values(rng, Q.per_tensor(1.0, 0, storage="i32"), (o,), bias_mag), x, w)
        y = g.fully_connected(x, w, b, out_q, **knobs)
        shape = [rows, k]
    else:
        knobs.pop("bias", None)
        m, k, nn = rng.randint(1, 3), rng.randint(1, 10), rng.randint(1, 3)
        # a constant operand with a zero point: the pass must center it
        c_q = Q.per_tensor(0.1, rng.choice([0, 0, 5, -7]), storage="i8") if not wide else Q.per_tensor(0.1, 0, storage="i16")
        adj_x, adj_y = rng.random() < 0.3, rng.random() < 0.3
        if kind == "matmul_rhs":
            shape = [2, k, m] if adj_x else [2, m, k]
            x = g.input(shape, x_q)
            rhs = g.constant(_storage_values(rng, c_q, (nn, k) if adj_y else (k, nn), mag), c_q)
            operands = [x, rhs]
        else:
            shape = [k, nn] if adj_y else [nn, k]  # x is the rhs: [k, nn] (adj_y: [nn, k])
            shape = [nn, k] if adj_y else [k, nn]
            lhs = g.constant(_storage_values(rng, c_q, (2, k, m) if adj_x else (2, m, k), mag), c_q)
            x = g.input(shape, x_q)
            operands = [lhs, x]
        y = g.op(qnn.BatchMatmulOp, operands, [TensorType(out_q, [2, m, nn])], adj_x=adj_x, adj_y=adj_y,
                 **knobs)[0]
    g.output(y)
    return g.build(), shape, x_q


def _exact_accumulator(module, x):
    """The exact accumulator (sum of products plus the bias it adds), as int64, observed in the reference."""
    seen = []

    def observe(*, exact, terms, bias, acc, acc_overflow):
        total = np.asarray(exact(), dtype=np.int64)
        if bias is not None:
            total = total + np.asarray(bias, dtype=np.int64)
        seen.append(total.reshape(-1))

    with observe_accumulators(observe), np.errstate(all="ignore"):
        run_module(module, [x])
    (total,) = seen
    return total


def _oracle(module, shape, x_q):
    lo, hi = x_q.storage_range()
    zp = int(x_q.zero_point_array())
    base_x = np.full(shape, zp, dtype=np.int64)
    base = _exact_accumulator(module, base_x)
    step = 1 if zp < hi else -1
    columns = []
    for j in range(base_x.size):
        x = base_x.copy().reshape(-1)
        x[j] += step
        columns.append((_exact_accumulator(module, x.reshape(shape)) - base) * step)
    J = np.stack(columns, axis=1) if columns else np.zeros((base.size, 0), np.int64)
    a, b = lo - zp, hi - zp
    top = np.maximum(a * J, b * J).sum(axis=1)
    bottom = np.minimum(a * J, b * J).sum(axis=1)
    return J, base, top, bottom


def _witness(J_row, x_q, shape, high: bool):
    lo, hi = x_q.storage_range()
    zp = int(x_q.zero_point_array())
    up, down = (hi, lo) if high else (lo, hi)
    x = np.where(J_row > 0, up, np.where(J_row < 0, down, zp))
    return x.reshape(shape)


def _overflows(module, x) -> bool:
    try:
        with np.errstate(all="ignore"):
            run_module(module, [x], check_overflow=True)
    except AccumulatorOverflow:
        return True
    return False


@pytest.mark.parametrize("seed", range(60))
def test_bound_is_exact_and_the_interpreter_agrees(seed):
    module, shape, x_q = _random_case(seed)
    (bound,) = accumulator_bounds(module)
    assert bound.exact
    J, base, top, bottom = _oracle(module, shape, x_q)
    # exact: the reported range is the one the inputs reach
    assert bound.hi == int((base + top).max())
    assert bound.lo == int((base + bottom).min())
    assert bound.partial_hi == max(int(top.max()), 0) and bound.partial_lo == min(int(bottom.min()), 0)
    acc_lo, acc_hi = ACC_RANGES[bound.acc]
    e_hi, e_lo = int(np.argmax(base + top)), int(np.argmin(base + bottom))
    x_high = _witness(J[e_hi], x_q, shape, True)
    x_low = _witness(J[e_lo], x_q, shape, False)
    if bound.can_overflow:
        if bound.hi > acc_hi:
            assert _overflows(module, x_high), bound.remark()
        if bound.lo < acc_lo:
            assert _overflows(module, x_low), bound.remark()
        if bound.partial_overflows:  # the full sum before the bias is the last running sum
            e = int(np.argmax(top)) if bound.partial_hi > acc_hi else int(np.argmin(bottom))
            assert _overflows(module, _witness(J[e], x_q, shape, bound.partial_hi > acc_hi)), bound.remark()
    else:
        rng = np.random.default_rng(seed)
        lo, hi = x_q.storage_range()
        inputs = [x_high, x_low] + [rng.integers(lo, hi + 1, size=shape) for _ in range(5)]
        inputs += [_witness(J[e], x_q, shape, s) for e in range(J.shape[0]) for s in (True, False)][:40]
        for x in inputs:
            assert not _overflows(module, x), bound.remark()


def test_random_cases_cover_both_verdicts():
    verdicts = {accumulator_bounds(_random_case(seed)[0])[0].can_overflow for seed in range(60)}
    assert verdicts == {True, False}


def test_weights_that_are_inputs_use_the_storage_ranges():
    """K * max |x - zp| * max |w - w_zp| + bias, reached by a corner input."""
    g = GraphBuilder()
    x_q = Q.per_tensor(0.5, -100)  # x - zp in [-28, 227]
    w_q = Q.per_axis([0.1, 0.1], [0, 3], axis=0, storage="i8")  # w - zp in [-128, 127] and [-131, 124]
    x = g.input([1, 3, 3, 2], x_q)
    w = g.input([2, 2, 2, 2], w_q)
    b = g.bias(np.array([5, -7]), x, w)
    y = g.conv2d(x, w, b, Q.per_tensor(1.0, 0), acc="i16")
    g.output(y)
    m = g.build()
    (bound,) = accumulator_bounds(m)
    taps = 2 * 2 * 2
    assert bound.hi == taps * 227 * 127 + 5 and bound.hi_at == "output channel 0"
    assert bound.lo == taps * 227 * -131 - 7 and bound.lo_at == "output channel 1"
    assert bound.can_overflow and bound.exact
    x_top = np.full((1, 3, 3, 2), 127, np.int8)
    w_top = np.full((2, 2, 2, 2), 127, np.int8)
    with pytest.raises(AccumulatorOverflow, match=r"exact value 230637 is outside \[-32768, 32767\]"):
        run_module(m, [x_top, w_top], check_overflow=True)


def test_batch_matmul_of_two_inputs():
    g = GraphBuilder()
    a_q, b_q = Q.per_tensor(0.5, 10), Q.per_tensor(0.5, -3)
    a = g.input([2, 4], a_q)
    b = g.input([4, 3], b_q)
    y = g.op(qnn.BatchMatmulOp, [a, b], [TensorType(Q.per_tensor(1.0, 0), [2, 3])], acc="i16")[0]
    g.output(y)
    (bound,) = accumulator_bounds(g.build())
    # a - 10 in [-138, 117], b + 3 in [-125, 130]: corners -138 * -125 = 17250 and -138 * 130 = -17940
    assert (bound.lo, bound.hi) == (4 * -17940, 4 * 17250)
    assert bound.can_overflow and bound.hi_at == "every element"


def test_no_elements_no_overflow():
    g = GraphBuilder()
    x = g.input([0, 4], Q.per_tensor(0.5, 0))
    wq = Q.per_tensor(0.5, 0)
    w = g.constant(np.full((2, 4), 127), wq)
    y = g.fully_connected(x, w, g.bias(np.array([1 << 30, 0]), x, w), Q.per_tensor(1.0, 0), acc="i16")
    g.output(y)
    (bound,) = accumulator_bounds(g.build())
    assert bound.elements == 0 and not bound.can_overflow
    assert bound.remark().endswith("has no accumulator elements")


def test_zoo_models_fit_their_i32_accumulators():
    from pathlib import Path

    from qdialect.importer.tflite import import_tflite

    zoo = Path(__file__).resolve().parents[1] / "models" / "zoo"
    for name in ("cnn_small", "ds_cnn_kws", "mobilenetv2_tiny", "mlp_act"):
        bounds = accumulator_bounds(import_tflite((zoo / f"{name}.tflite").read_bytes(), name=name))
        assert bounds and all(not b.can_overflow and b.exact for b in bounds), name
        # int8 models have far more than 2^8 headroom; i16 accumulators would not do
        assert min(b.headroom_bits for b in bounds) >= 8


def test_qd_opt_remarks_and_fail_option(tmp_path):
    text = """func.func @main(%x: tensor<1x4x!quant.uniform<i8:f32, 5.000000e-01:-128>>) -> tensor<1x2x!quant.uniform<i8:f32, 2.500000e-01>> {
  %w = qnn.constant dense<"0x7F7F7F7F01010101"> : tensor<2x4x!quant.uniform<i8:f32, 5.000000e-01>>
  %b = arith.constant dense<[0, 100]> : tensor<2xi32>
  %y = qnn.fully_connected %x, %w, %b {acc = "i16"} : (tensor<1x4x!quant.uniform<i8:f32, 5.000000e-01:-128>>, tensor<2x4x!quant.uniform<i8:f32, 5.000000e-01>>, tensor<2xi32>) -> tensor<1x2x!quant.uniform<i8:f32, 2.500000e-01>>
  func.return %y : tensor<1x2x!quant.uniform<i8:f32, 2.500000e-01>>
}"""
    cap = run_main(qd_opt, ["-p", "qnn-overflow-check"], text.encode())
    assert cap.rc == 0
    assert cap.stderr.strip() == (
        "remark: qnn-overflow-check: qnn.fully_connected %y in @main can overflow its i16 accumulator: "
        "sums reach [0, 129540] (high end at output channel 0); i16 holds [-32768, 32767]")
    assert "qnn.fully_connected" in cap.stdout  # the IR passes through unchanged
    cap = run_main(qd_opt, ["-p", "qnn-overflow-check{fail=true}"], text.encode())
    assert cap.rc == 2 and len(cap.stderr.strip().splitlines()) == 1
    assert cap.stderr.startswith("stdin:4:3: error: qnn-overflow-check: qnn.fully_connected %y in @main can overflow")
    # the same op with an i32 accumulator: silent, or one "fits" remark with verbose
    ok = text.replace('{acc = "i16"}', "")
    assert run_main(qd_opt, ["-p", "qnn-overflow-check"], ok.encode()).stderr == ""
    cap = run_main(qd_opt, ["-p", "qnn-overflow-check{verbose=true}"], ok.encode())
    assert cap.stderr.strip().endswith("fits its i32 accumulator: sums in [0, 129540], 14 bits to spare")
    # and the interpreter agrees: x = 127 (x - zp = 255) reaches 4 * 255 * 127 = 129540 on channel 0
    m = parse_module(QdOptMain(args=[]).ctx, text)
    with pytest.raises(AccumulatorOverflow, match=r"element \[0, 0\]: exact value 129540"):
        run_module(m, [np.full((1, 4), 127, np.int8)], check_overflow=True)


def test_saturating_running_sums_can_overflow_when_the_final_sum_fits():
    """acc_overflow = saturate: 2 taps of 127 on x - zp in [0, 255] run up to 64770 before the
    bias (-32003) brings the sum back to [-32003, 32767]; wrapping would be harmless."""
    g = GraphBuilder()
    x = g.input([1, 2], Q.per_tensor(0.5, -128))
    wq = Q.per_tensor(0.5, 0)
    w = g.constant(np.array([[127, 127]]), wq)
    y = g.fully_connected(x, w, g.bias(np.array([-32003]), x, w), Q.per_tensor(1.0, 0),
                          acc="i16", acc_overflow="saturate")
    g.output(y)
    m = g.build()
    (bound,) = accumulator_bounds(m)
    assert (bound.lo, bound.hi, bound.partial_lo, bound.partial_hi) == (-32003, 32767, 0, 64770)
    assert bound.partial_overflows and not bound.final_overflows
    assert "running sums reach [0, 64770] before the bias (acc_overflow = saturate)" in bound.remark()
    x_top = np.full((1, 2), 127, np.int8)
    with pytest.raises(AccumulatorOverflow, match="a partial sum overflows i16") as info:
        run_module(m, [x_top], check_overflow=True)
    assert info.value.value == 255 * 127 * 2
    wrap = parse_module(QdOptMain(args=[]).ctx, str(m).replace('acc_overflow = "saturate"', 'acc_overflow = "wrap"'))
    (bound,) = accumulator_bounds(wrap)
    assert not bound.can_overflow
    run_module(wrap, [x_top], check_overflow=True)  # 64770 - 32003 = 32767 fits
