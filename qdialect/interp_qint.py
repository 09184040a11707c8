"""Interpreter handlers for the L2 `qint` ops (numpy, whole arrays per op).

Registered into `qdialect.interpreter._HANDLERS` on import (the interpreter
imports this module itself).  Every rounding step calls the numpy reference
(`qdialect.reference`), so L2 computes the same integers as L1 by
construction of its parameters, not by a second copy of the rounding code.
"""

from __future__ import annotations

import numpy as np

from qdialect.dialects import qint
from qdialect.interpreter import Interpreter, handles
from qdialect.reference import activations as act
from qdialect.reference.linear import _mbqm64
from qdialect.reference.pooling import _divide_rounded
from qdialect.reference.rescale import (
    multiply_by_quantized_multiplier,
    multiply_single_rounding,
    round_half_away,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)


def wrap(x: np.ndarray, bits: int) -> np.ndarray:
    """Two's-complement wrap of int64 values to `bits` (64: unchanged)."""
    x = np.asarray(x, dtype=np.int64)
    if bits >= 64:
        return x
    half = np.int64(1) << (bits - 1)
    return ((x + half) & ((np.int64(1) << bits) - 1)) - half


def _out(op, value: np.ndarray, i: int = 0) -> np.ndarray:
    """Wrap exact int64 values to the result width and cast to its container."""
    res = op.results[i]
    return wrap(value, qint.int_width(res)).astype(Interpreter._dtype(res))


def _as_int64(x: np.ndarray, unsigned: bool = False) -> np.ndarray:
    x = np.asarray(x)
    if unsigned:
        x = x.view(np.dtype(f"uint{x.dtype.itemsize * 8}"))
    return x.astype(np.int64)


def _channel_param(values, op: qint.RescaleOp, rank: int, dtype) -> np.ndarray:
    arr = np.asarray(values, dtype=dtype)
    if arr.size == 1:
        return arr.reshape(())
    shape = [1] * rank
    shape[op.rescale_axis()] = arr.size
    return arr.reshape(shape)


# ----- accumulating ops ------------------------------------------------------------------------


def _padded_centered(x, op, zp_name="input_zp"):
    xc = _as_int64(x) - op.attr(zp_name, 0)
    pt, pb, pl, pr = op.attr("padding", [0, 0, 0, 0])
    return np.pad(xc, ((0, 0), (pt, pb), (pl, pr), (0, 0)))


@handles(qint.Conv2DOp)
def _conv2d(it, op, args):
    x, w = args
    xp = _padded_centered(x, op)
    wc = _as_int64(w) - op.attr("weight_zp", 0)
    (sh, sw), (dh, dw), _ = op.window()
    n, oh, ow, oc = qint.shape_of(op.results[0])
    _, fh, fw, _ = wc.shape
    acc = np.zeros((n, oh, ow, oc), dtype=np.int64)
    for ky in range(fh):
        for kx in range(fw):
            patch = xp[:, ky * dh : ky * dh + sh * (oh - 1) + 1 : sh, kx * dw : kx * dw + sw * (ow - 1) + 1 : sw, :]
            acc += np.tensordot(patch, wc[:, ky, kx, :], axes=([3], [1]))
    return _out(op, acc)


@handles(qint.DepthwiseConv2DOp)
def _depthwise(it, op, args):
    x, w = args
    wc = _as_int64(w) - op.attr("weight_zp", 0)
    mult = wc.shape[3] // x.shape[3]
    xp = np.repeat(_padded_centered(x, op), mult, axis=3)
    (sh, sw), (dh, dw), _ = op.window()
    n, oh, ow, oc = qint.shape_of(op.results[0])
    acc = np.zeros((n, oh, ow, oc), dtype=np.int64)
    for ky in range(wc.shape[1]):
        for kx in range(wc.shape[2]):
            patch = xp[:, ky * dh : ky * dh + sh * (oh - 1) + 1 : sh, kx * dw : kx * dw + sw * (ow - 1) + 1 : sw, :]
            acc += patch * wc[0, ky, kx, :]
    return _out(op, acc)


@handles(qint.FullyConnectedOp)
def _fully_connected(it, op, args):
    x, w = args
    xc = _as_int64(x) - op.attr("input_zp", 0)
    wc = _as_int64(w) - op.attr("weight_zp", 0)
    return _out(op, xc @ wc.T)


@handles(qint.BatchMatmulOp)
def _batch_matmul(it, op, args):
    a = _as_int64(args[0]) - op.attr("lhs_zp", 0)
    b = _as_int64(args[1]) - op.attr("rhs_zp", 0)
    return _out(op, np.matmul(a, b))


@handles(qint.BiasAddOp)
def _bias_add(it, op, args):
    width = qint.int_width(op.results[0])
    return _out(op, _as_int64(args[0]) + wrap(_as_int64(args[1]), width))


# ----- rescale ---------------------------------------------------------------------------------


def rescale_values(op: qint.RescaleOp, x: np.ndarray) -> np.ndarray:
    """The int64 result of `qint.rescale` before truncation (after the clamp)."""
    v = _as_int64(x, op.attr("input_unsigned", False)) - op.attr("input_zp", 0)
    width = max(32, qint.int_width(op.operands[0]))
    v = wrap(v << op.attr("left_shift", 0), width)
    mode = op.mode
    rank = v.ndim
    if mode in ("double_round", "single_round", "wide_round"):
        m = _channel_param(op.attr("multiplier"), op, rank, np.int64)
        s = _channel_param(op.attr("shift"), op, rank, np.int64)
        if mode == "double_round":
            r = multiply_by_quantized_multiplier(v, m, s)
        elif mode == "single_round":
            r = multiply_single_rounding(v, m, s)
        else:
            r = _mbqm64(v, m, s)
    elif mode == "float_even" and "offset" in op.attributes:
        # XNNPACK's reduce: float32 product, float32 offset (zero points folded in), ties to even
        f = np.float32(op.attr("scale")[0])
        y = v.astype(np.float32) * f + np.float32(op.attr("offset")[0])
        r = np.rint(np.clip(y, -float(1 << 62), float(1 << 62))).astype(np.int64)
    elif mode == "float_even":
        f = _channel_param(op.attr("scale"), op, rank, np.float64).astype(np.float32)
        r = np.rint(v.astype(np.float32) * f).astype(np.int64)
    elif mode == "float_away":
        f = _channel_param(op.attr("scale"), op, rank, np.float64)
        r = round_half_away(v.astype(np.float64) * f).astype(np.int64)
    else:
        r = v
    lo, hi = op.bounds()
    return np.clip(np.asarray(r, dtype=np.int64) + op.attr("output_zp", 0), lo, hi)


@handles(qint.RescaleOp)
def _rescale(it, op, args):
    return _out(op, rescale_values(op, args[0]))


# ----- elementwise -----------------------------------------------------------------------------


def _binary(fn):
    def handler(it, op, args):
        a = _as_int64(args[0]) - op.attr("lhs_zp", 0)
        b = _as_int64(args[1]) - op.attr("rhs_zp", 0)
        return _out(op, fn(a, b))

    return handler


for _cls, _fn in [
    (qint.AddOp, np.add),
    (qint.SubOp, np.subtract),
    (qint.MulOp, np.multiply),
    (qint.MaximumOp, np.maximum),
    (qint.MinimumOp, np.minimum),
]:
    handles(_cls)(_binary(_fn))


@handles(qint.ScaledAddOp)
def _scaled_add(it, op, args):
    unsigned = op.attr("unsigned", False)
    a, b = np.broadcast_arrays(_as_int64(args[0], unsigned), _as_int64(args[1], unsigned))
    acc = wrap(op.attr("bias") + a * op.attr("lhs_multiplier") + b * op.attr("rhs_multiplier"), 32)
    lo, hi = op.bounds()
    return _out(op, np.clip((acc >> op.attr("shift")) + op.attr("output_zp", 0), lo, hi))


@handles(qint.TableOp)
def _table(it, op, args):
    x, table = args
    width = qint.int_width(op.operands[0])
    if op.attr("unsigned", False):
        index = _as_int64(x, unsigned=True)
    else:
        index = _as_int64(x) + (1 << (width - 1))
    return np.asarray(table)[index]


# ----- pools and reductions --------------------------------------------------------------------


def _windows(x: np.ndarray, op, fill: int):
    kh, kw = op.attr("kernel")
    sh, sw = op.attr("strides", [1, 1])
    pt, pb, pl, pr = op.attr("padding", [0, 0, 0, 0])
    _, oh, ow, _ = qint.shape_of(op.results[0])
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=fill)
    for ky in range(kh):
        for kx in range(kw):
            yield xp[:, ky : ky + sh * (oh - 1) + 1 : sh, kx : kx + sw * (ow - 1) + 1 : sw, :]


@handles(qint.PoolSumOp)
def _pool_sum(it, op, args):
    return _out(op, sum(_windows(_as_int64(args[0]), op, 0)))


@handles(qint.PoolMaxOp)
def _pool_max(it, op, args):
    lowest = np.iinfo(np.int64).min
    best = None
    for v in _windows(_as_int64(args[0]), op, lowest):
        best = v if best is None else np.maximum(best, v)
    return _out(op, best)


_DIVIDE_PROFILE = {"away": "tflite", "half_up": "half_up", "half_even": "half_even"}


@handles(qint.DivideRoundOp)
def _divide_round(it, op, args):
    x = _as_int64(args[0])
    d = np.broadcast_to(_as_int64(args[1]), x.shape)
    return _out(op, _divide_rounded(x, d, _DIVIDE_PROFILE[op.attr("rounding", "away")]))


def _reduce(fn):
    def handler(it, op, args):
        axes = tuple(op.reduced_axes())
        return _out(op, fn(_as_int64(args[0]), axis=axes, keepdims=op.attr("keep_dims", False)))

    return handler


handles(qint.ReduceSumOp)(_reduce(np.sum))
handles(qint.ReduceMaxOp)(_reduce(np.max))
handles(qint.ReduceMinOp)(_reduce(np.min))


# ----- softmax recipe ----------------------------------------------------------------------------


def softmax8(x: np.ndarray, m: int, s: int, diff_min: int, out_bits: int, single: bool) -> np.ndarray:
    """reference_ops::Softmax (8-bit) from its integer parameters, int64 result."""
    rounding = "single" if single else "tflite"
    xi = _as_int64(x)
    diff = xi - xi.max(axis=-1, keepdims=True)
    valid = diff >= diff_min
    rescaled = act._mbqm_gt1(np.where(valid, diff, 0), m, s, rounding)
    exps = act.exp_on_negative_values(rescaled, act._SCALED_DIFF_INTEGER_BITS)
    contrib = np.where(valid, act._rescale(exps, 0, act._ACCUM_INTEGER_BITS), 0)
    total = wrap(contrib.sum(axis=-1, keepdims=True), 32)
    recip, nbou = act.get_reciprocal(total, act._ACCUM_INTEGER_BITS)
    unsat = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(recip, exps), nbou + 31 - out_bits)
    lo, hi = qint.signed_range(out_bits)
    return np.where(valid, np.clip(unsat + lo, lo, hi), lo)


def softmax16_luts() -> tuple[np.ndarray, np.ndarray]:
    """TFLite's two 513-entry int16 LUTs: exp on [-10, 0] and 1/(1+x) on [0, 1]."""
    rng = 65535
    exp_lut = act.int16_lut(np.exp, 10.0 / rng, 32767, 2.0 / rng, 0)
    recip_lut = act.int16_lut(lambda v: 1.0 / (1.0 + v), 1.0 / rng, -32768, 2.0 / rng, 0)
    return exp_lut, recip_lut


def softmax16(x: np.ndarray, m: int, s: int, single: bool) -> np.ndarray:
    """reference_ops::SoftmaxInt16 from its integer parameters, int64 result."""
    exp_lut, recip_lut = softmax16_luts()
    xi = _as_int64(x)
    d = xi - xi.max(axis=-1, keepdims=True)
    scaled = multiply_single_rounding(d, m, s) if single else multiply_by_quantized_multiplier(d, m, s)
    exps = act.int16_lut_lookup(np.clip(scaled + 32767, -32768, 32767), exp_lut)
    total = exps.sum(axis=-1, keepdims=True)
    h = act._clz32(total)
    shifted = ((total << (h - 1)) + (1 << 13)) >> 14
    recip = act.int16_lut_lookup(np.clip(shifted - ((1 << 15) + (1 << 16)), -32768, 32767), recip_lut)
    right = 31 - h
    return np.clip((exps * recip + (np.int64(1) << (right - 1))) >> right, 0, 32767)


def softmax_float_table(op: qint.SoftmaxOp, x: np.ndarray) -> np.ndarray:
    """optimized_ops::Softmax (8-bit, float exp table) through the reference, int64 result."""
    from qdialect.qparams import QParams

    out_w = qint.int_width(op.results[0])
    x_q = QParams.make(op.attr("input_scale")[0], 0, storage="i8")
    if op.attr("mode") == "ort_float":
        from qdialect.reference.onnxruntime_kernels import qlinear_softmax

        storage = "u8" if op.attr("output_unsigned", False) else "i8"
        out_q = QParams.make(op.attr("output_scale")[0], op.attr("output_zp", 0), storage=storage)
        return qlinear_softmax(x, x_q=x_q, out_q=out_q, axis=-1).astype(np.int64)
    out_q = QParams.make(op.attr("output_scale")[0], op.attr("output_zp", 0), storage=f"i{out_w}")
    tie_even = op.attr("mode") == "float_even"
    return act._softmax_8bit_float_table(x, x_q, out_q, op.attr("beta")[0], tie_even=tie_even).astype(np.int64)


@handles(qint.SoftmaxOp)
def _softmax(it, op, args):
    if op.float_table:
        return _out(op, softmax_float_table(op, args[0]))
    m, s = op.attr("input_multiplier"), op.attr("input_shift")
    single = op.attr("mode", "double_round") == "single_round"
    if qint.int_width(op.operands[0]) == 8:
        out = softmax8(args[0], m, s, op.attr("diff_min"), qint.int_width(op.results[0]), single)
    else:
        out = softmax16(args[0], m, s, single)
    return _out(op, out)
