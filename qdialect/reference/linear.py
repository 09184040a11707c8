"""Reference semantics of the accumulating qnn ops: conv2d, depthwise_conv2d,
transpose_conv2d, fully_connected, batch_matmul.

Real-number meaning (all of them): dequantize the operands, run the float op,
add the bias (whose implied scale is in_s * w_s[c]), quantize to the output
parameters and clamp to [act_min, act_max].  The integer recipe:

    acc[c] = sum((x - x_zp) * (w - w_zp)) (+ bias[c])      accumulator `acc`
    out    = clamp(rescale(acc, in_s * w_s[c] / out_s) + out_zp, act_min, act_max)

Knobs (keyword-only on every op):

- `rounding` - how `rescale` is done:
  - "tflite": TFLite's reference kernels (BUILTIN_REF) bit for bit.  conv,
    depthwise and transpose_conv: QuantizeMultiplier of the double
    in_s*w_s[c]/out_s and MultiplyByQuantizedMultiplier (double rounding; for
    int64 accumulators TFLite's 64-bit variant with a 16-bit multiplier and
    one rounding).  fully_connected: the reference kernel requantizes in
    double, `round(double(acc) * (double(in_s)*w_s/out_s))`, ties away from
    zero (LiteRT changed this in 2025; older TFLite used the integer
    multiplier).  batch_matmul: integer multiplier from the float32 product
    in_s*w_s, then double rounding.
  - "single" / "half_up": one rounding of the Q31 multiplier, ties toward
    +inf (TFLITE_SINGLE_ROUNDING / TOSA SINGLE_ROUND / TVM UPWARD).  For an
    int64 accumulator "single" is TFLite's 64-bit formula (the same in both
    TFLite builds), "half_up" the exact one.
  - "half_even": `rint(float32(acc) * float32(real))`, ties to even.
  - "litert": LiteRT's default interpreter.  8-bit conv / depthwise /
    transpose_conv / fully_connected / batch_matmul run on XNNPACK:
    `scale = float32(float32(in_s * w_s[c]) / out_s)` (float32 arithmetic),
    `rint(float32(acc) * scale)`.  16-bit activations fall back to TFLite's
    reference code, so "litert" equals "tflite" there.
  Scales are taken as float32 (how a .tflite file stores them) before any
  ratio is formed, in float32 or double exactly where the kernel does.
- `bias_mode`: "accumulator" (default) adds the bias to the accumulator;
  "output" requantizes it on its own with the same multiplier and rounding
  (`rescale(bias, in_s*w_s[c]/out_s)`) and adds it after the accumulator's
  requantization, before the output zero point and the clamp.
- `acc`: accumulator width "i16" | "i32" | "i64"; None (default) = what
  TFLite uses: "i64" when the bias array is int64 (16x8 models) or when
  there is no bias and the activations are 16-bit, else "i32".  `acc_overflow`: "wrap" (default, two's complement) or "saturate"
  (the running sum saturates after every product, in the kernel's loop order,
  and again when the bias is added).
- `act_min` / `act_max`: clamp bounds in the output storage domain (fused
  activation); default the output storage range.

Layouts are TFLite's: NHWC activations, conv weights OHWI, depthwise weights
1HW(C*multiplier), transpose_conv weights OHWI (O = output channels),
fully_connected weights [out, in].  Padding is explicit
((top, bottom), (left, right)), or "SAME" / "VALID" resolved with
`tflite_padding` (TFLite's rule).
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from ..qparams import QParams, ROUNDING_PROFILES, storage_bounds
from .rescale import (
    multiply_by_quantized_multiplier,
    multiply_single_rounding,
    quantize_multiplier,
    quantize_multiplier_for,
    round_half_away,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)

__all__ = [
    "tflite_padding",
    "conv_output_size",
    "conv2d",
    "depthwise_conv2d",
    "transpose_conv2d",
    "fully_connected",
    "batch_matmul",
    "observe_accumulators",
]

_ACC_BITS = {"i16": 16, "i32": 32, "i64": 64}

MAX_SCRATCH_ELEMENTS = 1 << 26
"""Largest intermediate buffer (elements) a reference op allocates beyond its operands and result."""


# ---------------------------------------------------------------------------
# padding
# ---------------------------------------------------------------------------


def conv_output_size(in_size: int, filter_size: int, stride: int, dilation: int, padding: str) -> int:
    """TFLite ComputeOutSize for "SAME" / "VALID"."""
    eff = (filter_size - 1) * dilation + 1
    if padding.upper() == "SAME":
        return (in_size + stride - 1) // stride
    if padding.upper() == "VALID":
        return (in_size + stride - eff) // stride
    raise ValueError(f"padding must be SAME or VALID, got {padding!r}")


def tflite_padding(
    in_size: int, filter_size: int, stride: int, dilation: int, padding: str
) -> tuple[int, int]:
    """TFLite's (before, after) padding of one spatial dimension.

    `total = max((out - 1) * stride + effective_filter - in, 0)`, `before =
    total // 2`, `after = total - before` (the odd pixel goes after), where
    `out` is ComputeOutSize for the mode.  For TRANSPOSE_CONV pass the
    *output* size as `in_size` (that is how the kernel calls it).
    """
    out = conv_output_size(in_size, filter_size, stride, dilation, padding)
    eff = (filter_size - 1) * dilation + 1
    total = max((out - 1) * stride + eff - in_size, 0)
    return total // 2, total - total // 2


# ---------------------------------------------------------------------------
# shared helpers (also used by pooling.py)
# ---------------------------------------------------------------------------


def _check_knobs(rounding: str, bias_mode: str = "accumulator", acc: str | None = "i32",
                 acc_overflow: str = "wrap") -> None:
    if rounding not in ROUNDING_PROFILES:
        raise ValueError(f"unknown rounding profile {rounding!r}; expected one of {ROUNDING_PROFILES}")
    if bias_mode not in ("accumulator", "output"):
        raise ValueError(f"bias_mode must be 'accumulator' or 'output', got {bias_mode!r}")
    if acc is not None and acc not in _ACC_BITS:
        raise ValueError(f"acc must be one of {tuple(_ACC_BITS)}, got {acc!r}")
    if acc_overflow not in ("wrap", "saturate"):
        raise ValueError(f"acc_overflow must be 'wrap' or 'saturate', got {acc_overflow!r}")


def _f32(q: QParams) -> np.ndarray:
    """Scale(s) as float32, how TFLite stores them."""
    return np.asarray(q.scale, dtype=np.float32)


def _type_bounds(q: QParams) -> tuple[int, int]:
    return storage_bounds(q.bits, q.signed)


def _finish(v: np.ndarray, out_q: QParams, act_min, act_max) -> np.ndarray:
    """Clamp to the activation bounds (intersected with the storage range and
    the container type) and cast to the output container dtype."""
    lo = out_q.storage_min if act_min is None else max(int(act_min), out_q.storage_min)
    hi = out_q.storage_max if act_max is None else min(int(act_max), out_q.storage_max)
    tlo, thi = _type_bounds(out_q)
    return np.clip(v, max(lo, tlo), min(hi, thi)).astype(out_q.dtype)


def _wrap(x: np.ndarray, bits: int) -> np.ndarray:
    if bits >= 64:
        return x
    half = 1 << (bits - 1)
    mask = (1 << bits) - 1
    return ((x + half) & mask) - half


_ACC_OBSERVER: contextvars.ContextVar[Callable | None] = contextvars.ContextVar("acc_observer", default=None)


@contextlib.contextmanager
def observe_accumulators(callback: Callable) -> Iterator[None]:
    """Call `callback(exact=, terms=, bias=, acc=, acc_overflow=)` from every
    accumulating op run inside the block, before it accumulates (for overflow
    checks: `exact()` is the exact int64 sum of the products, `terms()` the
    products in the kernel's loop order, `bias` the bias added to the
    accumulator or None, `acc` the resolved width "i16" | "i32" | "i64")."""
    token = _ACC_OBSERVER.set(callback)
    try:
        yield
    finally:
        _ACC_OBSERVER.reset(token)


def _accumulate(
    exact: Callable[[], np.ndarray],
    terms: Callable[[], Iterable[np.ndarray]],
    bias: np.ndarray | None,
    acc: str,
    acc_overflow: str,
) -> np.ndarray:
    """The accumulator after summing the products (and the bias, if given).

    exact(): the exact int64 sum of all products; terms(): the products one
    (broadcast) array at a time in the kernel's loop order (only used for
    saturation).  Wrapping is order-independent, saturation is not.
    """
    observer = _ACC_OBSERVER.get()
    if observer is not None:
        observer(exact=exact, terms=terms, bias=bias, acc=acc, acc_overflow=acc_overflow)
    bits = _ACC_BITS[acc]
    if acc_overflow == "wrap" or bits == 64:
        total = exact()
        if bias is not None:
            total = total + bias
        return _wrap(total, bits)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    total = None
    for t in terms():
        total = t.copy() if total is None else total + t
        np.clip(total, lo, hi, out=total)
    if total is None:
        total = np.zeros_like(exact())
    if bias is not None:
        total = np.clip(total + bias, lo, hi)
    return total


def _wrap_int32(x):
    return _wrap(np.asarray(x, dtype=np.int64), 32)


_qmult = quantize_multiplier_for
_srdhm = saturating_rounding_doubling_high_mul
_rdbpot = rounding_divide_by_pot
_mbqm32 = multiply_by_quantized_multiplier
_single_exact = multiply_single_rounding


def _mbqm64(x, m, shift):
    """TFLite MultiplyByQuantizedMultiplier(int64 x): the multiplier reduced to
    16 bits, one rounding (ties up); result truncated to int32."""
    x = np.asarray(x, dtype=np.int64)
    m = np.asarray(m, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    rm = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, np.int64(0x7FFF))
    ts = 15 - shift
    res = (x * rm + (np.int64(1) << (ts - 1))) >> ts
    return _wrap_int32(res)


def _round_away(v: np.ndarray) -> np.ndarray:
    return round_half_away(v).astype(np.int64)


def _rescale(
    values: np.ndarray,
    *,
    rounding: str,
    real_double: np.ndarray,
    real_int: np.ndarray | None = None,
    xnn_scale: np.ndarray | None = None,
    float_ref: bool = False,
    wide: bool = False,
) -> np.ndarray:
    """Apply the output multiplier to accumulator values (channel-last broadcast).

    real_double: in_s*w_s/out_s in double (for "half_even" and the double
    float-requant of the FC reference kernel); real_int: the real that
    QuantizeMultiplier sees (default real_double); xnn_scale: XNNPACK's
    float32 scale ("litert"); float_ref: the op's "tflite" path is the FC
    reference kernel's double requantization; wide: int64 accumulator.
    """
    values = np.asarray(values, dtype=np.int64)
    real_int = real_double if real_int is None else real_int
    if rounding == "litert":
        if xnn_scale is None:  # op not taken by XNNPACK: reference kernel
            rounding = "tflite"
        else:
            return np.rint(values.astype(np.float32) * np.float32(xnn_scale).astype(np.float32)).astype(np.int64)
    if rounding == "tflite":
        if float_ref:
            return _round_away(values.astype(np.float64) * np.asarray(real_double, np.float64))
        m, s = quantize_multiplier(real_int)
        return _mbqm64(values, m, s) if wide else _mbqm32(values, m, s)
    if rounding == "single":
        m, s = _qmult(real_int, rounding)
        return _mbqm64(values, m, s) if wide else _single_exact(values, m, s)
    if rounding == "half_up":
        m, s = _qmult(real_int, rounding)
        return _single_exact(values, m, s)
    if rounding == "half_even":
        return np.rint(
            values.astype(np.float32) * np.asarray(real_double, np.float64).astype(np.float32)
        ).astype(np.int64)
    raise ValueError(f"unknown rounding profile {rounding!r}")


def _default_acc(acc: str | None, bias, x_q: QParams | None = None) -> str:
    """TFLite's accumulator: int64 for an int64 bias, int32 for an int32 bias;
    without a bias, int64 for 16-bit activations (the 16x8 kernels' default
    bias type) and int32 otherwise."""
    if acc is not None:
        return acc
    if bias is not None:
        return "i64" if np.asarray(bias).dtype == np.int64 else "i32"
    return "i64" if (x_q is not None and x_q.bits > 8) else "i32"


def _centered(x: np.ndarray, q: QParams, axis: int | None = None) -> np.ndarray:
    """x - zero_point as int64 (per-axis zero points along `axis`)."""
    x = np.asarray(x).astype(np.int64)
    zp = np.asarray(q.zero_point, dtype=np.int64)
    if q.per_axis:
        ax = q.axis if axis is None else axis
        shape = [1] * x.ndim
        shape[ax] = zp.shape[0]
        zp = zp.reshape(shape)
    return x - zp


def _channel_scales(w_q: QParams, n: int) -> np.ndarray:
    s = _f32(w_q)
    if s.ndim == 0 or s.shape[0] == 1:
        return np.full(n, s.reshape(-1)[0], dtype=np.float32)
    if s.shape[0] != n:
        raise ValueError(f"weight has {s.shape[0]} scales for {n} output channels")
    return s


def _conv_reals(x_q: QParams, w_scales32: np.ndarray, out_q: QParams, *, float_product: bool):
    """(real_double, real_int, xnn_scale) per output channel."""
    in_s = _f32(x_q).reshape(())
    out_s = _f32(out_q).reshape(())
    real_double = np.float64(in_s) * w_scales32.astype(np.float64) / np.float64(out_s)
    if float_product:
        real_int = (in_s * w_scales32).astype(np.float32).astype(np.float64) / np.float64(out_s)
    else:
        real_int = real_double
    xnn = ((in_s * w_scales32).astype(np.float32) / out_s).astype(np.float32)
    return real_double, real_int, xnn


def _requant_and_finish(
    acc_values: np.ndarray,
    bias: np.ndarray | None,
    *,
    bias_mode: str,
    rounding: str,
    reals: tuple,
    out_q: QParams,
    act_min,
    act_max,
    float_ref: bool = False,
    wide: bool = False,
    xnn: bool = True,
) -> np.ndarray:
    real_double, real_int, xnn_scale = reals
    kw = dict(rounding=rounding, real_double=real_double, real_int=real_int,
              xnn_scale=xnn_scale if xnn else None, float_ref=float_ref, wide=wide)
    out = _rescale(acc_values, **kw)
    if bias is not None and bias_mode == "output":
        out = out + _rescale(np.asarray(bias, dtype=np.int64), **kw)
    out = out + int(out_q.zero_point)
    return _finish(out, out_q, act_min, act_max)


def _pair(v, name: str) -> tuple[int, int]:
    if isinstance(v, (int, np.integer)):
        return int(v), int(v)
    v = tuple(int(a) for a in v)
    if len(v) != 2:
        raise ValueError(f"{name} must be an int or a pair, got {v}")
    return v


def _padding(padding, sizes=None, filters=None, strides=(1, 1), dilations=(1, 1)):
    """Explicit ((top, bottom), (left, right)) pads; "SAME" / "VALID" are
    resolved with `tflite_padding` over `sizes` (H, W) and `filters`."""
    if padding is None:
        return (0, 0), (0, 0)
    if isinstance(padding, str):
        return tuple(
            tflite_padding(int(sizes[i]), int(filters[i]), int(strides[i]), int(dilations[i]), padding)
            for i in range(2)
        )
    (pt, pb), (pl, pr) = padding
    return (int(pt), int(pb)), (int(pl), int(pr))


def _xnn_takes(x_q: QParams) -> bool:
    """XNNPACK takes the 8-bit (int8 / uint8) variants of the linear ops."""
    return x_q.bits == 8


def _bias_array(bias, n: int) -> np.ndarray | None:
    if bias is None:
        return None
    b = np.asarray(bias).astype(np.int64).reshape(-1)
    if b.shape[0] != n:
        raise ValueError(f"bias has {b.shape[0]} elements for {n} output channels")
    return b


# ---------------------------------------------------------------------------
# conv2d
# ---------------------------------------------------------------------------


def conv2d(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None = None,
    *,
    x_q: QParams,
    w_q: QParams,
    out_q: QParams,
    strides: Sequence[int] | int = (1, 1),
    padding=((0, 0), (0, 0)),
    dilations: Sequence[int] | int = (1, 1),
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
    bias_mode: str = "accumulator",
    acc: str | None = None,
    acc_overflow: str = "wrap",
) -> np.ndarray:
    """Quantized 2-D convolution, NHWC input, OHWI weights, optional groups.

    Real numbers: `y[n,oy,ox,o] = sum_{ky,kx,i} X[n, oy*sh - pt + ky*dh,
    ox*sw - pl + kx*dw, g*Ci + i] * W[o,ky,kx,i] + B[o]` (out-of-image taps
    contribute 0, i.e. the input is padded with its zero point), quantized
    with out_q.  Groups = input channels / weight input channels.

    Mirrors TFLite reference_integer_ops::ConvPerChannel (int8, and int16
    activations with int32/int64 bias), reference_ops::Conv for uint8 with a
    weight zero point (per-tensor multiplier from the float32 product
    in_s*w_s), and XNNPACK's convolution under "litert".
    """
    acc = _default_acc(acc, bias, x_q)
    _check_knobs(rounding, bias_mode, acc, acc_overflow)
    sh, sw = _pair(strides, "strides")
    dh, dw = _pair(dilations, "dilations")
    xc = _centered(x, x_q)
    wc = _centered(w, w_q, axis=0)
    n, h, wd, c = xc.shape
    oc, fh, fw, ci = wc.shape
    (pt, pb), (pl, pr) = _padding(padding, (h, wd), (fh, fw), (sh, sw), (dh, dw))
    if c % ci:
        raise ValueError(f"input channels {c} not a multiple of weight input channels {ci}")
    groups = c // ci
    if oc % groups:
        raise ValueError(f"output channels {oc} not divisible by groups {groups}")
    ocg = oc // groups
    oh = (h + pt + pb - ((fh - 1) * dh + 1)) // sh + 1
    ow = (wd + pl + pr - ((fw - 1) * dw + 1)) // sw + 1
    if oh <= 0 or ow <= 0:
        raise ValueError("convolution output would be empty")
    xp = np.pad(xc, ((0, 0), (pt, max(pb, 0)), (pl, max(pr, 0)), (0, 0)))
    wg = wc.reshape(groups, ocg, fh, fw, ci)

    def patch(ky, kx):
        y0, x0 = ky * dh, kx * dw
        p = xp[:, y0 : y0 + sh * (oh - 1) + 1 : sh, x0 : x0 + sw * (ow - 1) + 1 : sw, :]
        return p.reshape(n, oh, ow, groups, ci)

    def exact():
        total = np.zeros((n, oh, ow, groups, ocg), dtype=np.int64)
        for ky in range(fh):
            for kx in range(fw):
                total += np.einsum("nhwgi,goi->nhwgo", patch(ky, kx), wg[:, :, ky, kx, :])
        return total.reshape(n, oh, ow, oc)

    def terms():
        for ky in range(fh):
            for kx in range(fw):
                p = patch(ky, kx)
                for i in range(ci):
                    t = p[..., i][..., None] * wg[None, None, None, :, :, ky, kx, i]
                    yield t.reshape(n, oh, ow, oc)

    b = _bias_array(bias, oc)
    accv = _accumulate(exact, terms, b if bias_mode == "accumulator" else None, acc, acc_overflow)
    ws = _channel_scales(w_q, oc)
    legacy_u8 = (not x_q.signed) and x_q.bits == 8 and not w_q.per_axis
    reals = _conv_reals(x_q, ws, out_q, float_product=legacy_u8)
    return _requant_and_finish(
        accv, b, bias_mode=bias_mode, rounding=rounding, reals=reals, out_q=out_q,
        act_min=act_min, act_max=act_max, wide=(acc == "i64"), xnn=_xnn_takes(x_q),
    )


# ---------------------------------------------------------------------------
# depthwise_conv2d
# ---------------------------------------------------------------------------


def depthwise_conv2d(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None = None,
    *,
    x_q: QParams,
    w_q: QParams,
    out_q: QParams,
    depth_multiplier: int | None = None,
    strides: Sequence[int] | int = (1, 1),
    padding=((0, 0), (0, 0)),
    dilations: Sequence[int] | int = (1, 1),
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
    bias_mode: str = "accumulator",
    acc: str | None = None,
    acc_overflow: str = "wrap",
) -> np.ndarray:
    """Quantized depthwise 2-D convolution; weights [1, fh, fw, C*multiplier].

    Real numbers: output channel `o = c*multiplier + m` is input channel c
    convolved with W[0, :, :, o] (zero-point padding), plus B[o].  Per-axis
    weight scales are along the last axis (axis 3).  Mirrors TFLite
    reference_integer_ops::DepthwiseConvPerChannel (int8; int16 with int64
    bias) and XNNPACK's depthwise convolution under "litert".
    """
    acc = _default_acc(acc, bias, x_q)
    _check_knobs(rounding, bias_mode, acc, acc_overflow)
    sh, sw = _pair(strides, "strides")
    dh, dw = _pair(dilations, "dilations")
    xc = _centered(x, x_q)
    wc = _centered(w, w_q, axis=3)
    n, h, wd, c = xc.shape
    _, fh, fw, oc = wc.shape
    (pt, pb), (pl, pr) = _padding(padding, (h, wd), (fh, fw), (sh, sw), (dh, dw))
    mult = oc // c if depth_multiplier is None else int(depth_multiplier)
    if c * mult != oc:
        raise ValueError(f"weight channels {oc} != input channels {c} * multiplier {mult}")
    oh = (h + pt + pb - ((fh - 1) * dh + 1)) // sh + 1
    ow = (wd + pl + pr - ((fw - 1) * dw + 1)) // sw + 1
    if oh <= 0 or ow <= 0:
        raise ValueError("convolution output would be empty")
    xe = np.repeat(xc, mult, axis=3)
    xp = np.pad(xe, ((0, 0), (pt, pb), (pl, pr), (0, 0)))

    def terms():
        for ky in range(fh):
            for kx in range(fw):
                y0, x0 = ky * dh, kx * dw
                p = xp[:, y0 : y0 + sh * (oh - 1) + 1 : sh, x0 : x0 + sw * (ow - 1) + 1 : sw, :]
                yield p * wc[0, ky, kx, :]

    def exact():
        total = np.zeros((n, oh, ow, oc), dtype=np.int64)
        for t in terms():
            total += t
        return total

    b = _bias_array(bias, oc)
    accv = _accumulate(exact, terms, b if bias_mode == "accumulator" else None, acc, acc_overflow)
    ws = _channel_scales(w_q, oc)
    reals = _conv_reals(x_q, ws, out_q, float_product=False)
    return _requant_and_finish(
        accv, b, bias_mode=bias_mode, rounding=rounding, reals=reals, out_q=out_q,
        act_min=act_min, act_max=act_max, wide=(acc == "i64"), xnn=_xnn_takes(x_q),
    )


# ---------------------------------------------------------------------------
# transpose_conv2d
# ---------------------------------------------------------------------------


def transpose_conv2d(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None = None,
    *,
    x_q: QParams,
    w_q: QParams,
    out_q: QParams,
    output_shape: Sequence[int],
    strides: Sequence[int] | int = (1, 1),
    padding=((0, 0), (0, 0)),
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
    bias_mode: str = "accumulator",
    acc: str | None = None,
    acc_overflow: str = "wrap",
) -> np.ndarray:
    """Quantized transposed convolution (TFLite TRANSPOSE_CONV); weights OHWI
    with O = output channels.

    Real numbers: every input pixel (iy, ix) scatters `X[n,iy,ix,i] *
    W[o,ky,kx,i]` to output (iy*sh - pt + ky, ix*sw - pl + kx) when that lies
    inside `output_shape` (NHWC); plus B[o].  Only the leading pads (pt, pl)
    matter; TFLite's come from `tflite_padding(out_size, f, stride, 1, mode)`
    (`padding="SAME"/"VALID"` computes them).  For "litert" a string padding
    also decides whether XNNPACK takes the op (it refuses SAME with kernel <
    stride and VALID with kernel > output); with explicit pads, all-zero pads
    are taken as VALID, others as SAME.
    Mirrors reference_integer_ops::TransposeConv (int8; int16 with int64
    bias) and XNNPACK's deconvolution under "litert".
    """
    acc = _default_acc(acc, bias, x_q)
    _check_knobs(rounding, bias_mode, acc, acc_overflow)
    sh, sw = _pair(strides, "strides")
    xc = _centered(x, x_q)
    wc = _centered(w, w_q, axis=0)
    n, h, wd, c = xc.shape
    oc, fh, fw, ci = wc.shape
    if ci != c:
        raise ValueError(f"weight input channels {ci} != input channels {c}")
    on, oh, ow, occ = (int(v) for v in output_shape)
    (pt, pb), (pl, pr) = _padding(padding, (oh, ow), (fh, fw), (sh, sw))
    # XNNPACK's delegate refuses SAME with kernel < stride and VALID with
    # kernel > output; TFLite's own kernel (= reference numerics) runs then.
    if isinstance(padding, str):
        if padding.upper() == "SAME":
            xnn = fh >= sh and fw >= sw
        else:
            xnn = fh <= oh and fw <= ow
    else:
        all_zero = pt == pb == pl == pr == 0
        xnn = (fh <= oh and fw <= ow) if all_zero else (fh >= sh and fw >= sw)
    if on != n or occ != oc:
        raise ValueError(f"output_shape {tuple(output_shape)} inconsistent with input/weights")
    bh = max((h - 1) * sh + fh, pt + oh)
    bw = max((wd - 1) * sw + fw, pl + ow)
    if n * bh * bw * oc > MAX_SCRATCH_ELEMENTS:  # huge strides cropped by huge padding
        raise ValueError(f"the uncropped output {n}x{bh}x{bw}x{oc} has {n * bh * bw * oc} elements, "
                         f"more than the reference's scratch limit of {MAX_SCRATCH_ELEMENTS}")

    def place(contrib, ky, kx, buf):
        buf[:, ky : ky + sh * (h - 1) + 1 : sh, kx : kx + sw * (wd - 1) + 1 : sw, :] += contrib

    def crop(buf):
        return buf[:, pt : pt + oh, pl : pl + ow, :]

    def exact():
        buf = np.zeros((n, bh, bw, oc), dtype=np.int64)
        for ky in range(fh):
            for kx in range(fw):
                place(np.tensordot(xc, wc[:, ky, kx, :], axes=([3], [1])), ky, kx, buf)
        return crop(buf)

    def terms():
        for ky in range(fh):
            for kx in range(fw):
                for i in range(c):
                    buf = np.zeros((n, bh, bw, oc), dtype=np.int64)
                    place(xc[..., i][..., None] * wc[:, ky, kx, i], ky, kx, buf)
                    yield crop(buf)

    b = _bias_array(bias, oc)
    accv = _accumulate(exact, terms, b if bias_mode == "accumulator" else None, acc, acc_overflow)
    ws = _channel_scales(w_q, oc)
    reals = _conv_reals(x_q, ws, out_q, float_product=False)
    return _requant_and_finish(
        accv, b, bias_mode=bias_mode, rounding=rounding, reals=reals, out_q=out_q,
        act_min=act_min, act_max=act_max, wide=(acc == "i64"), xnn=_xnn_takes(x_q) and xnn,
    )


# ---------------------------------------------------------------------------
# fully_connected
# ---------------------------------------------------------------------------


def fully_connected(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None = None,
    *,
    x_q: QParams,
    w_q: QParams,
    out_q: QParams,
    keep_num_dims: bool = False,
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
    bias_mode: str = "accumulator",
    acc: str | None = None,
    acc_overflow: str = "wrap",
) -> np.ndarray:
    """Quantized fully connected layer; weights [out, in].

    Real numbers: `y[b, o] = sum_k X[b, k] * W[o, k] + B[o]`, where the input
    is viewed as [prod(shape) / in, in].  Output shape: `x.shape[:-1] +
    (out,)` if keep_num_dims else `(prod / in, out)`.

    "tflite" mirrors the current TFLite reference kernel
    (reference_integer_ops::FullyConnected / FullyConnectedPerChannel with
    scales): `round(double(acc) * (double(in_s) * w_s / out_s))`, ties away
    from zero.  The integer-multiplier profiles ("single", "half_up") use the
    multiplier TFLite's optimized kernel uses: per-tensor from the float32
    product in_s*w_s (GetQuantizedConvolutionMultipler), per-channel double.
    "litert": XNNPACK fully connected (8-bit).
    """
    acc = _default_acc(acc, bias, x_q)
    _check_knobs(rounding, bias_mode, acc, acc_overflow)
    wc = _centered(w, w_q, axis=0)
    o, k = wc.shape
    x = np.asarray(x)
    if x.size % k:
        raise ValueError(f"input size {x.size} not a multiple of weight depth {k}")
    xc = _centered(x, x_q).reshape(-1, k)
    batch = xc.shape[0]

    def exact():
        return xc @ wc.T

    def terms():
        for j in range(k):
            yield xc[:, j : j + 1] * wc[:, j][None, :]

    b = _bias_array(bias, o)
    accv = _accumulate(exact, terms, b if bias_mode == "accumulator" else None, acc, acc_overflow)
    ws = _channel_scales(w_q, o)
    per_tensor = not (w_q.per_axis and np.asarray(w_q.scale).size > 1)
    reals = _conv_reals(x_q, ws, out_q, float_product=per_tensor)
    out = _requant_and_finish(
        accv, b, bias_mode=bias_mode, rounding=rounding, reals=reals, out_q=out_q,
        act_min=act_min, act_max=act_max, float_ref=True, wide=(acc == "i64"),
        xnn=_xnn_takes(x_q),
    )
    if keep_num_dims:
        return out.reshape(tuple(x.shape[:-1]) + (o,))
    return out.reshape(batch, o)


# ---------------------------------------------------------------------------
# batch_matmul
# ---------------------------------------------------------------------------


def batch_matmul(
    lhs: np.ndarray,
    rhs: np.ndarray,
    *,
    lhs_q: QParams,
    rhs_q: QParams,
    out_q: QParams,
    adj_x: bool = False,
    adj_y: bool = False,
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
    acc: str | None = None,
    acc_overflow: str = "wrap",
) -> np.ndarray:
    """Quantized batched matrix product with numpy-style batch broadcasting.

    Real numbers: `Y[..., i, j] = sum_k L'[..., i, k] * R'[..., k, j]` where
    L' / R' are lhs / rhs with their last two axes swapped when adj_x / adj_y.
    Both operands per-tensor, zero points allowed.  Mirrors TFLite
    reference_ops::BatchMatMul (int8: int32 accumulator; int16: int64) with a
    multiplier from the float32 product lhs_s*rhs_s (double rounding), and
    under "litert" XNNPACK's batch matrix multiply for int8 when the rhs zero
    point is 0 (the delegate refuses others; TFLite's optimized kernel then
    computes the reference numbers).
    """
    if acc is None:
        acc = "i64" if lhs_q.bits > 8 else "i32"
    _check_knobs(rounding, "accumulator", acc, acc_overflow)
    if lhs_q.per_axis or rhs_q.per_axis:
        raise ValueError("batch_matmul supports per-tensor quantization only")
    a = _centered(lhs, lhs_q)
    bm = _centered(rhs, rhs_q)
    if adj_x:
        a = np.swapaxes(a, -1, -2)
    if adj_y:
        bm = np.swapaxes(bm, -1, -2)
    if a.shape[-1] != bm.shape[-2]:
        raise ValueError(f"contraction sizes differ: {a.shape} @ {bm.shape}")
    kdim = a.shape[-1]

    def exact():
        return np.matmul(a, bm)

    def terms():
        for j in range(kdim):
            yield a[..., :, j : j + 1] * bm[..., j : j + 1, :]

    accv = _accumulate(exact, terms, None, acc, acc_overflow)
    reals = _conv_reals(lhs_q, _f32(rhs_q).reshape(1), out_q, float_product=True)
    # XNNPACK takes int8 BATCH_MATMUL only with a zero rhs zero point; else
    # TFLite's optimized kernel runs, which matches the reference numerics.
    xnn = _xnn_takes(lhs_q) and int(rhs_q.zero_point) == 0
    return _requant_and_finish(
        accv, None, bias_mode="accumulator", rounding=rounding, reals=reals, out_q=out_q,
        act_min=act_min, act_max=act_max, wide=(acc == "i64"), xnn=xnn,
    )
