"""Interpreter handlers for the `nn` dialect (float ops of layer L0).

Loaded by `qdialect.interpreter`, registering into its `_HANDLERS`.  Float
tensors travel as float32 arrays; arithmetic is done in float64 on those
values and rounded to float32 once per op (the real-number result of the
op on float32 inputs, as a fake-quantization simulation wants it).  Integer
and quantized tensors travel as their storage containers; the ops that take
them (max/min/pools/movement, the cast spellings) work on the stored values
as the `nn` docstring says.  Everything is vectorised: loops run over kernel
taps, never over elements.
"""

from __future__ import annotations

import math

import numpy as np

from qdialect.dialects import nn
from qdialect.dialects.quant import UniformQuantizedType
from qdialect.interpreter import Interpreter, _HANDLERS, _shape, handles
from qdialect.reference.elementwise import relu_bounds, round_half_away_f32
from qdialect.reference.pooling import _divide_rounded


def _el(value):
    return nn.element_of(value.type)


def _quantized(value) -> UniformQuantizedType | None:
    el = _el(value)
    return el if isinstance(el, UniformQuantizedType) else None


def _finish(op: nn.NnOp, v: np.ndarray) -> np.ndarray:
    """Apply the fused real clamp and give the result's container dtype and shape."""
    lo, hi = op.act_bounds() if "act_min" in op.ATTRS else (None, None)
    if lo is not None or hi is not None:
        v = np.clip(v, -np.inf if lo is None else lo, np.inf if hi is None else hi)
    return _to_result(op, v)


def _to_result(op, v: np.ndarray) -> np.ndarray:
    dtype = Interpreter._dtype(op.results[0])
    v = np.asarray(v)
    if dtype.kind in "iu" and v.dtype.kind == "f":
        v = np.round(v)
    return v.astype(dtype).reshape(_shape(op.results[0]))


def _f64(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


# ----- constants and casts -------------------------------------------------------------------


@handles(nn.ConstantOp)
def _constant(it, op, args):
    return op.array().astype(Interpreter._dtype(op.results[0]))


def _saturate(v: np.ndarray, lo: int, hi: int) -> np.ndarray:
    return np.clip(v, lo, hi)


@handles(nn.CastOp)
def _cast(it, op, args):
    x = np.asarray(args[0])
    dst = _el(op.result)
    dtype = Interpreter._dtype(op.result)
    if isinstance(dst, UniformQuantizedType):
        lo, hi = dst.storage_range()
        return _saturate(x.astype(np.int64), lo, hi).astype(dtype)
    if nn.is_bool(dst):  # i1 is a boolean: x != 0 (TFLite CAST; NaN is true)
        return (x != 0).astype(dtype)
    if nn.is_integer(dst):
        w = dst.width.data
        lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
        if x.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                t = np.trunc(_f64(x))
            t = np.where(np.isnan(t), hi, t)  # NaN saturates high, as TFLite's CAST does
            return _saturate(t, lo, hi).astype(np.int64).astype(dtype)
        return _saturate(x.astype(np.int64), lo, hi).astype(dtype)
    return x.astype(np.float64).astype(dtype)


# ----- convolutions and matmuls ------------------------------------------------------------


def _taps(x: np.ndarray, op, kh: int, kw: int, fill=0.0):
    """Yield (ky, kx, window) with window = padded input rows/cols seen by tap (ky, kx), [N, OH, OW, C]."""
    sh, sw = op.attr("strides", [1, 1])
    dh, dw = op.attr("dilations", [1, 1]) if "dilations" in op.ATTRS else (1, 1)
    pt, pb, pl, pr = op.attr("padding", [0, 0, 0, 0])
    _, oh, ow, _ = _shape(op.result)
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=fill)
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * dh, kx * dw
            yield ky, kx, xp[:, y0 : y0 + sh * (oh - 1) + 1 : sh, x0 : x0 + sw * (ow - 1) + 1 : sw, :]


@handles(nn.Conv2DOp)
def _conv2d(it, op, args):
    x, w = _f64(args[0]), _f64(args[1])
    o, kh, kw, _ = w.shape
    acc = 0.0
    for ky, kx, win in _taps(x, op, kh, kw):
        acc = acc + np.einsum("nhwc,oc->nhwo", win, w[:, ky, kx, :])
    if len(args) == 3:
        acc = acc + _f64(args[2])
    return _finish(op, acc)


@handles(nn.DepthwiseConv2DOp)
def _depthwise_conv2d(it, op, args):
    x, w = _f64(args[0]), _f64(args[1])
    _, kh, kw, oc = w.shape
    mult = oc // x.shape[3]
    x = np.repeat(x, mult, axis=3)  # output channel c*mult + j reads input channel c
    acc = 0.0
    for ky, kx, win in _taps(x, op, kh, kw):
        acc = acc + win * w[0, ky, kx, :]
    if len(args) == 3:
        acc = acc + _f64(args[2])
    return _finish(op, acc)


@handles(nn.FullyConnectedOp)
def _fully_connected(it, op, args):
    x, w = _f64(args[0]), _f64(args[1])
    y = x.reshape(-1, w.shape[1]) @ w.T
    if len(args) == 3:
        y = y + _f64(args[2])
    return _finish(op, y)


@handles(nn.BatchMatmulOp)
def _batch_matmul(it, op, args):
    a, b = _f64(args[0]), _f64(args[1])
    if op.attr("adj_x", False):
        a = np.swapaxes(a, -1, -2)
    if op.attr("adj_y", False):
        b = np.swapaxes(b, -1, -2)
    return _finish(op, np.matmul(a, b))


# ----- elementwise ---------------------------------------------------------------------------


def _arith(fn):
    """Float: float64 then one rounding; integers: int64 then two's-complement wrap to the
    result's width (TFLite's int32 ADD / SUB / MUL)."""

    def handler(it, op, args):
        el = _el(op.result)
        if nn.is_integer(el):
            w = el.width.data
            v = fn(np.asarray(args[0], np.int64), np.asarray(args[1], np.int64))
            v = (v + (1 << (w - 1))) % (1 << w) - (1 << (w - 1))
            return _to_result(op, v)
        return _finish(op, fn(_f64(args[0]), _f64(args[1])))

    return handler


_HANDLERS[nn.AddOp] = _arith(np.add)
_HANDLERS[nn.SubOp] = _arith(np.subtract)
_HANDLERS[nn.MulOp] = _arith(np.multiply)
_HANDLERS[nn.SquaredDifferenceOp] = _arith(lambda a, b: (a - b) ** 2)


@handles(nn.DivOp)
def _div(it, op, args):
    """IEEE division (TFLite float DIV): the float64 quotient of two float32 values rounds to
    the correctly rounded float32 one; x / 0 is +-inf, 0 / 0 NaN."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return _finish(op, _f64(args[0]) / _f64(args[1]))


def _order(fn):
    """max/min: on floats, integers and stored values of one quantized type alike."""

    def handler(it, op, args):
        return _finish(op, fn(args[0], args[1]))

    return handler


_HANDLERS[nn.MaximumOp] = _order(np.maximum)
_HANDLERS[nn.MinimumOp] = _order(np.minimum)


# ----- booleans and selection (masks) ---------------------------------------------------------

_PREDICATES = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
               "gt": np.greater, "ge": np.greater_equal}


@handles(nn.CompareOp)
def _compare(it, op, args):
    return _to_result(op, _PREDICATES[op.attr("predicate")](args[0], args[1]))


_HANDLERS[nn.LogicalAndOp] = lambda it, op, args: _to_result(op, (args[0] != 0) & (args[1] != 0))
_HANDLERS[nn.LogicalOrOp] = lambda it, op, args: _to_result(op, (args[0] != 0) | (args[1] != 0))
_HANDLERS[nn.LogicalNotOp] = lambda it, op, args: _to_result(op, args[0] == 0)


@handles(nn.SelectOp)
def _select(it, op, args):
    """Values copied (stored values of quantized tensors), numpy broadcasting."""
    return _to_result(op, np.where(args[0] != 0, args[1], args[2]))


def _clip_bounds(op, lo, hi):
    """Real bounds -> bounds in the operand's domain (storage domain for quantized tensors)."""
    q = _quantized(op.operands[0])
    if q is None:
        return lo, hi
    slo, shi = relu_bounds(lo, hi, q.qparams())
    return slo, shi


@handles(nn.ReluOp)
def _relu(it, op, args):
    lo, _ = _clip_bounds(op, 0.0, None)
    return _to_result(op, np.maximum(args[0], lo))


@handles(nn.ClipOp)
def _clip(it, op, args):
    lo, hi = _clip_bounds(op, op.attr("min"), op.attr("max"))
    v = args[0]
    if lo is not None:
        v = np.maximum(v, lo)
    if hi is not None:
        v = np.minimum(v, hi)
    return _to_result(op, v)


def _unary(fn):
    def handler(it, op, args):
        return _to_result(op, fn(op, _f64(args[0])))

    return handler


def _softmax(op, x):
    z = op.attr("beta", 1.0) * (x - x.max(axis=-1, keepdims=True))
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _log_softmax(op, x):
    z = x - x.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


_HANDLERS[nn.LogisticOp] = _unary(lambda op, x: 1.0 / (1.0 + np.exp(-x)))
_HANDLERS[nn.TanhOp] = _unary(lambda op, x: np.tanh(x))
_HANDLERS[nn.SoftmaxOp] = _unary(_softmax)
_HANDLERS[nn.LogSoftmaxOp] = _unary(_log_softmax)
_HANDLERS[nn.HardSwishOp] = _unary(lambda op, x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0)
_HANDLERS[nn.LeakyReluOp] = _unary(lambda op, x: np.where(x >= 0, x, op.attr("alpha") * x))
_HANDLERS[nn.EluOp] = _unary(lambda op, x: np.where(x >= 0, x, np.expm1(np.minimum(x, 0.0))))


def _gelu(op, x):
    if op.attr("approximate", False):
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * np.vectorize(math.erfc, otypes=[np.float64])(-x / math.sqrt(2.0))


_HANDLERS[nn.GeluOp] = _unary(_gelu)
_HANDLERS[nn.RsqrtOp] = _unary(lambda op, x: 1.0 / np.sqrt(x))


# ----- pools and reductions --------------------------------------------------------------------


def _integer(value) -> bool:
    return not nn.is_float(_el(value))


@handles(nn.AvgPool2DOp)
def _avg_pool2d(it, op, args):
    x = args[0]
    kh, kw = op.attr("kernel")
    ones = np.ones((1, *x.shape[1:3], 1))
    if _integer(op.operands[0]):
        acc = cnt = 0
        for _, _, win in _taps(x.astype(np.int64), op, kh, kw, 0):
            acc = acc + win
        for _, _, win in _taps(ones.astype(np.int64), op, kh, kw, 0):
            cnt = cnt + win
        return _finish(op, _divide_rounded(acc, np.broadcast_to(cnt, acc.shape), "tflite"))
    acc = cnt = 0.0
    for _, _, win in _taps(_f64(x), op, kh, kw, 0.0):
        acc = acc + win
    for _, _, win in _taps(ones, op, kh, kw, 0.0):
        cnt = cnt + win
    return _finish(op, acc / cnt)


@handles(nn.MaxPool2DOp)
def _max_pool2d(it, op, args):
    x = args[0]
    kh, kw = op.attr("kernel")
    floating = x.dtype.kind == "f"
    fill = -np.inf if floating else np.iinfo(x.dtype).min
    best = None
    for _, _, win in _taps(x.astype(np.float64) if floating else x, op, kh, kw, fill):
        best = win if best is None else np.maximum(best, win)
    return _finish(op, best)


def _axes(op, x) -> tuple[int, ...]:
    return tuple(sorted({a % x.ndim for a in op.attr("axes")}))


def _reduce(kind):
    def handler(it, op, args):
        x = args[0]
        axes = _axes(op, x)
        keep = op.attr("keep_dims", False)
        if kind in ("max", "min"):
            v = (np.max if kind == "max" else np.min)(x, axis=axes, keepdims=keep)
        elif _integer(op.operands[0]):
            s = np.sum(x.astype(np.int64), axis=axes, keepdims=keep)
            count = int(np.prod([x.shape[a] for a in axes]))
            v = s if kind == "sum" else _divide_rounded(s, np.int64(count), "tflite")
        else:
            v = (np.sum if kind == "sum" else np.mean)(_f64(x), axis=axes, keepdims=keep)
        return _finish(op, v)

    return handler


_HANDLERS[nn.MeanOp] = _reduce("mean")
_HANDLERS[nn.SumOp] = _reduce("sum")
_HANDLERS[nn.ReduceMaxOp] = _reduce("max")
_HANDLERS[nn.ReduceMinOp] = _reduce("min")


# ----- data movement -------------------------------------------------------------------------------


@handles(nn.ConcatenationOp)
def _concatenation(it, op, args):
    axis = op.attr("axis") % args[0].ndim
    return _finish(op, np.concatenate(args, axis=axis))


@handles(nn.PadOp)
def _pad(it, op, args):
    p = op.attr("paddings")
    value = op.attr("pad_value", 0.0)
    q = _quantized(op.operands[0])
    if q is not None:
        qp = q.qparams()
        lo, hi = q.storage_range()
        stored = int(qp.zero_point) + int(round_half_away_f32(np.float32(np.float32(value) / np.float32(float(qp.scale)))))
        value = min(max(stored, lo), hi)
    elif _integer(op.operands[0]):
        value = int(round_half_away_f32(value))
    pairs = [(p[2 * i], p[2 * i + 1]) for i in range(args[0].ndim)]
    return _to_result(op, np.pad(args[0], pairs, constant_values=value))


@handles(nn.ReshapeOp)
def _reshape(it, op, args):
    return _to_result(op, args[0])


@handles(nn.TransposeOp)
def _transpose(it, op, args):
    return _to_result(op, np.transpose(args[0], op.attr("perm")))


@handles(nn.SliceOp)
def _slice(it, op, args):
    v = args[0]
    strides = op.attr("strides", [1] * v.ndim)
    for axis, (b, e, s) in enumerate(zip(op.attr("begin"), op.attr("end"), strides)):
        v = np.take(v, np.arange(b, e, s), axis=axis)
    return _to_result(op, v)
