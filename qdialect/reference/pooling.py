"""Reference semantics of the pooling and reduction qnn ops: avg_pool2d,
max_pool2d, mean, sum, reduce_max, reduce_min.

Layouts are TFLite's (NHWC for the pools).  Padding is explicit
((top, bottom), (left, right)) or "SAME" / "VALID" (TFLite's rule, see
`linear.tflite_padding`).  Inputs are stored integers, outputs come back in
the output QParams' container dtype.  `act_min` / `act_max` are clamp bounds
in the output storage domain (fused activation; default the storage range).

Rounding profiles (`rounding`):

- "tflite": TFLite's reference kernels (BUILTIN_REF) bit for bit.
- "litert": LiteRT's default interpreter.  int8 / uint8 MEAN and SUM run on
  XNNPACK (float32 scale, ties to even, see `mean`); AVERAGE_POOL_2D is not
  taken by XNNPACK and TFLite's optimized kernel computes the reference
  numbers; max / min pools and reductions are exact everywhere.
- "single" / "half_up": one rounding of the Q31 multiplier, ties toward +inf.
- "half_even": float32 scale, ties to even.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..qparams import QParams
from .linear import (
    _check_knobs,
    _f32,
    _finish,
    _mbqm32,
    _pair,
    _padding,
    _qmult,
    _rescale,
    _single_exact,
    _wrap,
)
from .rescale import quantize_multiplier

__all__ = ["avg_pool2d", "max_pool2d", "mean", "sum", "reduce_max", "reduce_min", "arg_max", "arg_min"]


def _same_params(a: QParams, b: QParams) -> bool:
    return (
        np.array_equal(_f32(a), _f32(b))
        and np.array_equal(np.asarray(a.zero_point), np.asarray(b.zero_point))
    )


def _requantize_values(v: np.ndarray, in_q: QParams, out_q: QParams, rounding: str) -> np.ndarray:
    """Stored values in in_q's domain -> out_q's domain (before the clamp):
    `rescale(v - in_zp, in_s / out_s) + out_zp` with the profile's rounding
    ("tflite"/"litert": QuantizeMultiplier of the double ratio, double
    rounding).  Identity when the parameters are equal."""
    if _same_params(in_q, out_q):
        return v
    real = np.float64(_f32(in_q)) / np.float64(_f32(out_q))
    r = "tflite" if rounding == "litert" else rounding
    return _rescale(v - int(in_q.zero_point), rounding=r, real_double=real) + int(out_q.zero_point)


MAX_SCRATCH_ELEMENTS = 1 << 26
"""Largest padded input (elements) the pooling reference builds."""


def _windows(x: np.ndarray, filt, strides, padding, fill):
    """Yield (window_values, valid_mask) per filter tap over the padded input:
    arrays of shape [N, OH, OW, C]."""
    n, h, w, c = x.shape
    fh, fw = filt
    sh, sw = strides
    (pt, pb), (pl, pr) = _padding(padding, (h, w), (fh, fw), (sh, sw))
    oh = (h + pt + pb - fh) // sh + 1
    ow = (w + pl + pr - fw) // sw + 1
    if oh <= 0 or ow <= 0:
        raise ValueError("pooling output would be empty")
    padded = n * (h + pt + max(pb, 0)) * (w + pl + max(pr, 0)) * c
    if padded > MAX_SCRATCH_ELEMENTS:  # a huge window padded to match
        raise ValueError(f"the padded input has {padded} elements, more than the reference's scratch limit "
                         f"of {MAX_SCRATCH_ELEMENTS}")
    xp = np.pad(x, ((0, 0), (pt, max(pb, 0)), (pl, max(pr, 0)), (0, 0)), constant_values=fill)
    valid = np.pad(
        np.ones((1, h, w, 1), dtype=bool), ((0, 0), (pt, max(pb, 0)), (pl, max(pr, 0)), (0, 0))
    )
    # only taps that reach an input row / column for some output position contribute
    for ky in range(max(0, pt - sh * (oh - 1)), min(fh, pt + h)):
        for kx in range(max(0, pl - sw * (ow - 1)), min(fw, pl + w)):
            sl = (slice(None), slice(ky, ky + sh * (oh - 1) + 1, sh), slice(kx, kx + sw * (ow - 1) + 1, sw))
            yield xp[sl], valid[sl]


def _divide_rounded(acc: np.ndarray, n: np.ndarray, rounding: str) -> np.ndarray:
    """acc / n rounded: TFLite's `acc > 0 ? (acc + n/2) / n : (acc - n/2) / n`
    with truncating division for "tflite" / "litert" / "single"; ties toward
    +inf for "half_up"; ties to even for "half_even"."""
    acc = np.asarray(acc, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    if rounding in ("tflite", "litert", "single"):
        mag = (np.abs(acc) + n // 2) // n
        return np.where(acc > 0, mag, -mag)
    if rounding == "half_up":
        return (2 * acc + n) // (2 * n)
    if rounding == "half_even":
        q, r = np.divmod(acc, n)
        twice = 2 * r
        return q + ((twice > n) | ((twice == n) & (q % 2 == 1))).astype(np.int64)
    raise ValueError(f"unknown rounding profile {rounding!r}")


def avg_pool2d(
    x: np.ndarray,
    *,
    x_q: QParams,
    out_q: QParams,
    filter_size: Sequence[int] | int,
    strides: Sequence[int] | int = (1, 1),
    padding="VALID",
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
) -> np.ndarray:
    """Quantized 2-D average pooling (NHWC).

    Real numbers: the mean of the in-bounds inputs of each window (padding
    is excluded from the count), quantized with out_q.  Mirrors TFLite
    reference_integer_ops::AveragePool (int8 / int16; uint8 reference_ops):
    sum the stored values over the in-bounds positions, n = their count,
    `acc > 0 ? (acc + n/2) / n : (acc - n/2) / n` (truncating division,
    ties away from zero), clamp.  TFLite requires x_q == out_q and ignores
    the output parameters; when they differ here the average is requantized
    afterwards (`rescale(avg - in_zp, in_s/out_s) + out_zp`).
    "litert": same numbers (XNNPACK does not take quantized AVERAGE_POOL_2D;
    TFLite's optimized kernel rounds the same way).
    """
    _check_knobs(rounding)
    x = np.asarray(x)
    xi = x.astype(np.int64)
    n, h, w, c = xi.shape
    filt = _pair(filter_size, "filter_size")
    st = _pair(strides, "strides")
    acc = None
    cnt = None
    for vals, valid in _windows(xi, filt, st, padding, 0):
        acc = vals.copy() if acc is None else acc + vals
        cnt = valid.astype(np.int64) if cnt is None else cnt + valid
    if np.any(cnt == 0):
        raise ValueError("a pooling window lies entirely in the padding")
    avg = _divide_rounded(acc, np.broadcast_to(cnt, acc.shape), rounding)
    return _finish(_requantize_values(avg, x_q, out_q, rounding), out_q, act_min, act_max)


def max_pool2d(
    x: np.ndarray,
    *,
    x_q: QParams,
    out_q: QParams,
    filter_size: Sequence[int] | int,
    strides: Sequence[int] | int = (1, 1),
    padding="VALID",
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
) -> np.ndarray:
    """Quantized 2-D max pooling (NHWC): the maximum stored value over the
    in-bounds positions of each window, clamped to [act_min, act_max].
    Mirrors reference_integer_ops::MaxPool; exact on every backend.  When
    x_q != out_q (TFLite requires equality) the maximum is requantized."""
    _check_knobs(rounding)
    xi = np.asarray(x).astype(np.int64)
    lowest = np.iinfo(np.int64).min
    best = None
    for vals, valid in _windows(xi, _pair(filter_size, "filter_size"), _pair(strides, "strides"), padding, lowest):
        v = np.where(valid, vals, lowest)
        best = v if best is None else np.maximum(best, v)
    if np.any(best == lowest):
        raise ValueError("a pooling window lies entirely in the padding")
    return _finish(_requantize_values(best, x_q, out_q, rounding), out_q, act_min, act_max)


def _axes(x: np.ndarray, axes) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(x.ndim))
    if isinstance(axes, (int, np.integer)):
        axes = [axes]
    out = []
    for a in axes:
        a = int(a)
        if not -x.ndim <= a < x.ndim:
            raise ValueError(f"axis {a} out of range for rank {x.ndim}")
        a %= max(x.ndim, 1)
        if a not in out:
            out.append(a)
    return tuple(sorted(out))


def _mean_or_sum(x, x_q, out_q, axes, keep_dims, act_min, act_max, rounding, compute_sum):
    _check_knobs(rounding)
    x = np.asarray(x)
    ax = _axes(x, axes)
    count = int(np.prod([x.shape[a] for a in ax], dtype=np.int64)) if ax else 1
    raw_sum = x.astype(np.int64).sum(axis=ax, keepdims=bool(keep_dims))
    in_zp = int(x_q.zero_point)
    out_zp = int(out_q.zero_point)
    in_s, out_s = _f32(x_q).reshape(()), _f32(out_q).reshape(())
    if count == 0:
        return _finish(np.zeros(raw_sum.shape, np.int64) + out_zp, out_q, act_min, act_max)
    if rounding == "litert" and x_q.bits == 8:
        # XNNPACK reduce (qs8/qu8 rsum + int32 -> q8 convert), all float32:
        # scale = (in_s / out_s) * (1 / N) for MEAN; y_zp' = out_zp - N*in_zp*scale;
        # out = nearbyint(float(sum) * scale + y_zp'), saturated.
        scale = np.float32(in_s / out_s)
        if not compute_sum:
            scale = np.float32(scale * np.float32(np.float32(1.0) / np.float32(count)))
        yzp = np.float32(np.float32(out_zp) - np.float32(np.float32(count) * np.float32(in_zp)) * scale)
        v = np.rint(raw_sum.astype(np.float32) * scale + yzp)
        lo, hi = np.iinfo(out_q.dtype).min, np.iinfo(out_q.dtype).max
        return _finish(np.clip(v, lo, hi).astype(np.int64), out_q, act_min, act_max)
    if rounding == "litert":
        rounding = "tflite"  # 16-bit: LiteRT runs the reference code
    # reduce.h QuantizedMeanOrSum: int32 temp sum, multiplier of in_s/out_s
    # (double), for MEAN adjusted by 1/N with a left shift k.
    shifted = _wrap(_wrap(raw_sum, 32) - in_zp * count, 32)
    real = np.float64(in_s) / np.float64(out_s)
    if rounding == "half_even":
        f = real if compute_sum else real / count
        v = np.rint(shifted.astype(np.float32) * np.float32(f)).astype(np.int64)
    else:
        m, s = (_qmult(real, rounding) if rounding != "tflite" else quantize_multiplier(real))
        m, s = int(m), int(s)
        if not compute_sum:
            k = min(count.bit_length() - 1, 32, 31 + s)
            m = int(np.int32(np.int64((m << k) // count)))  # static_cast<int32_t>
            s = s - k
        if rounding == "tflite":
            v = _mbqm32(shifted, m, s)
        else:
            v = _single_exact(shifted, m, s)
    tlo, thi = np.iinfo(out_q.dtype).min, np.iinfo(out_q.dtype).max
    return _finish(np.clip(v + out_zp, tlo, thi), out_q, act_min, act_max)


def mean(
    x: np.ndarray,
    *,
    x_q: QParams,
    out_q: QParams,
    axes: Sequence[int] | int | None = None,
    keep_dims: bool = False,
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
) -> np.ndarray:
    """Quantized mean over `axes` (None = all; negative allowed; duplicates
    ignored), keeping reduced axes as size 1 when keep_dims.

    Real numbers: mean of the dequantized inputs, quantized with out_q.
    "tflite" mirrors reduce.h QuantizedMeanOrSum: `(M, s) =
    QuantizeMultiplier(double(in_s) / out_s)`, `k = min(floor(log2 N), 32,
    31 + s)`, `M' = int32((int64(M) << k) / N)`, `out = MBQM(sum(x) - in_zp*N,
    M', s - k) + out_zp` (int32 sum), clamped to the type.  "litert" (8-bit)
    mirrors XNNPACK: `scale = float32(in_s/out_s) * float32(1/N)`,
    `nearbyint(float(sum) * scale + (out_zp - N*in_zp*scale))` in float32.
    """
    return _mean_or_sum(x, x_q, out_q, axes, keep_dims, act_min, act_max, rounding, False)


def sum(  # noqa: A001 - the op's name
    x: np.ndarray,
    *,
    x_q: QParams,
    out_q: QParams,
    axes: Sequence[int] | int | None = None,
    keep_dims: bool = False,
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
) -> np.ndarray:
    """Quantized sum over `axes`: `MBQM(sum(x) - in_zp*N, M, s) + out_zp` with
    `(M, s) = QuantizeMultiplier(double(in_s) / out_s)` (reduce.h
    QuantizedMeanOrSum with compute_sum).  Note: LiteRT 2.3's BUILTIN_REF
    SUM reads int8 tensors as uint8 (a LiteRT bug); this function computes
    what the kernel computes on correctly typed data, which is what
    BUILTIN_REF gives for uint8.  "litert" (8-bit): XNNPACK, as `mean` with
    scale float32(in_s/out_s)."""
    return _mean_or_sum(x, x_q, out_q, axes, keep_dims, act_min, act_max, rounding, True)


def _reduce_extreme(x, x_q, out_q, axes, keep_dims, act_min, act_max, rounding, fn):
    _check_knobs(rounding)
    x = np.asarray(x)
    ax = _axes(x, axes)
    v = fn(x.astype(np.int64), axis=ax, keepdims=bool(keep_dims))
    return _finish(_requantize_values(v, x_q, out_q, rounding), out_q, act_min, act_max)


def reduce_max(
    x: np.ndarray,
    *,
    x_q: QParams,
    out_q: QParams,
    axes: Sequence[int] | int | None = None,
    keep_dims: bool = False,
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
) -> np.ndarray:
    """Maximum of the stored values over `axes` (TFLite REDUCE_MAX moves
    stored integers; in and out share parameters - if they differ here the
    result is requantized)."""
    return _reduce_extreme(x, x_q, out_q, axes, keep_dims, act_min, act_max, rounding, np.max)


def reduce_min(
    x: np.ndarray,
    *,
    x_q: QParams,
    out_q: QParams,
    axes: Sequence[int] | int | None = None,
    keep_dims: bool = False,
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
) -> np.ndarray:
    """Minimum of the stored values over `axes` (see reduce_max)."""
    return _reduce_extreme(x, x_q, out_q, axes, keep_dims, act_min, act_max, rounding, np.min)


def arg_max(x: np.ndarray, *, axis: int, output_dtype=np.int32, x_q: QParams | None = None, **_) -> np.ndarray:
    """TFLite ARG_MAX on stored integers: the first index of the largest value along `axis`
    (the scale is positive, so stored order is real order; the kernel's `std::greater`
    keeps the first of equal maxima).  An empty axis is an error, as in LiteRT."""
    return _arg_extreme(np.asarray(x), axis, output_dtype, np.argmax)


def arg_min(x: np.ndarray, *, axis: int, output_dtype=np.int32, x_q: QParams | None = None, **_) -> np.ndarray:
    """TFLite ARG_MIN: the first index of the smallest stored value along `axis`."""
    return _arg_extreme(np.asarray(x), axis, output_dtype, np.argmin)


def _arg_extreme(x: np.ndarray, axis: int, output_dtype, fn) -> np.ndarray:
    if x.ndim == 0:
        raise ValueError("arg_max / arg_min needs an input of rank >= 1")
    ax = int(axis) % x.ndim
    if x.shape[ax] == 0:
        raise ValueError(f"cannot take arg_max / arg_min over the empty axis {ax}")
    return fn(x.astype(np.int64), axis=ax).astype(output_dtype)
