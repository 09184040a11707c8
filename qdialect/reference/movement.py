"""Reference semantics of the data-movement qnn ops: pad, reshape, transpose,
slice, strided_slice, split, squeeze, gather, resize_bilinear,
resize_nearest_neighbor, space_to_depth, depth_to_space, concatenation.

Most of these move stored integers without arithmetic: they all go through
one mechanism, `move(x, fn, x_q=..., out_q=...)`, which applies an index
transformation `fn` to the stored array and, only when the input and output
parameters differ (TFLite requires them equal), requantizes the moved values
(`rescale(v - in_zp, in_s / out_s) + out_zp`, QuantizeMultiplier + double
rounding under "tflite").  resize_bilinear interpolates with TFLite's
fixed-point formula; concatenation rescales inputs whose parameters differ
from the output's as TFLite's ConcatenationWithScaling does (float32).

Layouts are TFLite's (NHWC for resize and space/depth shuffles).  Results
come back in the output QParams' container dtype.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..qparams import QParams
from .linear import _check_knobs, _f32, _finish
from .pooling import _requantize_values, _same_params

__all__ = [
    "move",
    "pad",
    "reshape",
    "transpose",
    "slice",
    "strided_slice",
    "strided_slice_effective",
    "split",
    "squeeze",
    "gather",
    "resize_bilinear",
    "resize_nearest_neighbor",
    "space_to_depth",
    "depth_to_space",
    "concatenation",
    "tile",
    "mirror_pad",
    "gather_nd",
]


def move(
    x: np.ndarray,
    fn: Callable[[np.ndarray], np.ndarray],
    *,
    x_q: QParams,
    out_q: QParams,
    rounding: str = "tflite",
) -> np.ndarray:
    """The generic "same values, new positions" op: `fn` rearranges the stored
    integers (as int64); the result is requantized only if x_q != out_q,
    then cast to the output container dtype."""
    _check_knobs(rounding)
    v = fn(np.asarray(x).astype(np.int64))
    if _same_params(x_q, out_q):
        return v.astype(out_q.dtype)
    return _finish(_requantize_values(v, x_q, out_q, rounding), out_q, None, None)


# ---------------------------------------------------------------------------
# shape-only ops
# ---------------------------------------------------------------------------


def reshape(x, *, x_q: QParams, out_q: QParams, new_shape: Sequence[int], rounding: str = "tflite"):
    """Same values in row-major order, new shape (one -1 allowed)."""
    return move(x, lambda v: v.reshape(tuple(int(d) for d in new_shape)), x_q=x_q, out_q=out_q, rounding=rounding)


def squeeze(x, *, x_q: QParams, out_q: QParams, axes: Sequence[int] | None = None, rounding: str = "tflite"):
    """Drop size-1 axes: the listed ones (negative allowed), or all if none
    are listed (TFLite SQUEEZE with empty squeeze_dims)."""
    def fn(v):
        if not axes:
            return v.reshape(tuple(d for d in v.shape if d != 1))
        ax = sorted({int(a) % v.ndim for a in axes})
        for a in ax:
            if v.shape[a] != 1:
                raise ValueError(f"cannot squeeze axis {a} of size {v.shape[a]}")
        return v.reshape(tuple(d for i, d in enumerate(v.shape) if i not in ax))

    return move(x, fn, x_q=x_q, out_q=out_q, rounding=rounding)


def transpose(x, *, x_q: QParams, out_q: QParams, perm: Sequence[int], rounding: str = "tflite"):
    """output.shape[i] = input.shape[perm[i]] (TFLite TRANSPOSE)."""
    return move(x, lambda v: np.transpose(v, tuple(int(p) for p in perm)), x_q=x_q, out_q=out_q, rounding=rounding)


def slice(  # noqa: A001 - the op's name
    x, *, x_q: QParams, out_q: QParams, begin: Sequence[int], size: Sequence[int], rounding: str = "tflite"
):
    """TFLite SLICE: `x[begin[i] : begin[i] + size[i]]` per axis; size -1 means
    to the end of the axis."""
    def fn(v):
        idx = []
        for d, (b, s) in enumerate(zip(begin, size)):
            b, s = int(b), int(s)
            end = v.shape[d] if s == -1 else b + s
            if not (0 <= b <= end <= v.shape[d]):
                raise ValueError(f"slice begin {b} size {s} out of range for axis {d} of size {v.shape[d]}")
            idx.append(np.s_[b:end])
        return v[tuple(idx)]

    return move(x, fn, x_q=x_q, out_q=out_q, rounding=rounding)


def _clamp(v, lo, hi):
    return max(lo, min(v, hi))


def strided_slice_indices(shape, begin, end, strides, begin_mask=0, end_mask=0, shrink_axis_mask=0, offset=False):
    """Per axis: (indices, shrink) following TFLite's strided_slice logic
    (StridedSliceStartForAxis / StridedSliceEndForAxis)."""
    out = []
    rank = len(shape)
    given = len(begin)
    begin = list(begin) + [0] * (rank - given)
    end = list(end) + [0] * (rank - given)
    strides = list(strides) + [1] * (rank - given)
    full = ((1 << rank) - 1) & ~((1 << given) - 1)  # missing trailing axes: full range
    begin_mask |= full
    end_mask |= full
    for axis in range(rank):
        n = int(shape[axis])
        stride = int(strides[axis])
        if stride == 0:
            raise ValueError("strided_slice stride must not be 0")
        bm = begin_mask & (1 << axis)
        em = end_mask & (1 << axis)
        shrink = bool(shrink_axis_mask & (1 << axis))
        start = int(begin[axis])
        if start < 0:
            start += n
        start = _clamp(start, 0, n) if stride > 0 else _clamp(start, -1, n - 1)
        if bm:
            start = 0 if stride > 0 else n - 1
        if shrink:
            stop = start if start >= n else start + 1
            out.append((np.arange(start, stop, dtype=np.int64), True))
            continue
        stop = int(end[axis])
        if offset:
            stop += start
        if stop < 0:
            stop += n
        stop = _clamp(stop, 0, n) if stride > 0 else _clamp(stop, -1, n - 1)
        if em:
            stop = n if stride > 0 else -1
        out.append((np.arange(start, stop, stride, dtype=np.int64), False))
    return out


def strided_slice_effective(shape, begin, end, strides, begin_mask=0, end_mask=0, shrink_axis_mask=0,
                            ellipsis_mask=0, new_axis_mask=0):
    """Fold TFLite's ellipsis and new_axis masks into a plain strided slice
    (BuildStridedSliceParams in TFLite's strided_slice.cc).

    Returns (effective_shape, begin, end, strides, begin_mask, end_mask,
    shrink_axis_mask, new_axes) over the effective axes (new_axes: the bit
    mask of the effective axes that are new): every new axis is a size-1
    axis of the input taken whole (its begin/end ignored, never shrunk), the
    ellipsis covers as many whole input axes as the spec leaves unnamed (a new
    axis flagged at the ellipsis' own position has no effect), and the
    remaining spec entries apply to the axes after it; input axes after the
    spec are taken whole.  The caller reshapes the input to effective_shape,
    slices, and drops shrunk axes."""
    shape = [int(d) for d in shape]
    count = len(begin)
    for name, mask in (("ellipsis_mask", ellipsis_mask), ("new_axis_mask", new_axis_mask)):
        if mask < 0 or mask >> count:
            # TFLite would read begin/end/strides past their end
            raise ValueError(f"strided_slice: {name} {mask} marks entries beyond the {count} begin/end entries")
    num_add = sum(1 for i in range(count)
                  if not ellipsis_mask & (1 << i) and new_axis_mask & (1 << i))
    dims = len(shape) + num_add
    eff_ellipsis = eff_new = 0
    ellipsis_start, expanded = dims, 0
    i = 0
    while i < dims:
        if ellipsis_mask & (1 << i):
            ellipsis_start = i
            stop = max(i + 1, min(i + 1 + num_add + len(shape) - count, dims))
            expanded = stop - ellipsis_start - 1
            while i < stop:
                eff_ellipsis |= 1 << i
                i += 1
            continue
        if new_axis_mask & (1 << (i - expanded)):
            eff_new |= 1 << i
        i += 1
    eff_shape, b_out, e_out, s_out = [], [], [], []
    bm = em = sm = 0
    added_ellipsis = added_axes = 0
    for i in range(dims):
        bit = 1 << i
        if not eff_new & bit and i - added_axes >= len(shape):
            # TFLite's ellipsis always takes at least one axis; a spec that
            # leaves it none makes the kernel read past the input's shape
            raise ValueError(
                f"strided_slice: the spec names more axes than the rank-{len(shape)} input has "
                "(an ellipsis must cover at least one axis)"
            )
        if eff_ellipsis & bit:
            added_ellipsis = max(0, i - ellipsis_start)
            bm, em = bm | bit, em | bit
            b_out.append(0), e_out.append(0), s_out.append(1)
            eff_shape.append(shape[i - added_axes])
        elif eff_new & bit:
            b_out.append(0), e_out.append(1), s_out.append(1)
            eff_shape.append(1)
            added_axes += 1
        elif i >= count + expanded:
            bm, em = bm | bit, em | bit
            b_out.append(0), e_out.append(0), s_out.append(1)
            eff_shape.append(shape[i - added_axes])
        else:
            k = i - added_ellipsis
            b_out.append(int(begin[k])), e_out.append(int(end[k])), s_out.append(int(strides[k]))
            bm |= bit if begin_mask & (1 << k) else 0
            em |= bit if end_mask & (1 << k) else 0
            sm |= bit if shrink_axis_mask & (1 << k) else 0
            eff_shape.append(shape[i - added_axes])
    return eff_shape, b_out, e_out, s_out, bm, em, sm, eff_new


def _xnnpack_slice(shape, begin, end, begin_mask, end_mask, offset):
    """XNNPACK static slice as LiteRT's delegate drives it (stride-1
    STRIDED_SLICE without shrink): an end <= 0 counts from the end of the
    axis, so an unmasked end of 0 means "to the end" (TFLite: empty)."""
    def doz(a, b):
        return a - b if a > b else 0

    idx = []
    for i, n in enumerate(shape):
        b = 0 if begin_mask & (1 << i) else int(begin[i])
        e = 0 if end_mask & (1 << i) else (int(end[i]) + b if offset else int(end[i]))
        off = doz(n, -b) if b < 0 else b
        size = doz(doz(n, -e), off) if e <= 0 else doz(e, off)
        off = max(min(off, n), 0)
        size = max(min(size, doz(n, off)), 0)
        idx.append(np.s_[off : off + size])
    return tuple(idx)


def strided_slice(
    x,
    *,
    x_q: QParams,
    out_q: QParams,
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int] | None = None,
    begin_mask: int = 0,
    end_mask: int = 0,
    shrink_axis_mask: int = 0,
    offset: bool = False,
    ellipsis_mask: int = 0,
    new_axis_mask: int = 0,
    rounding: str = "tflite",
):
    """TFLite STRIDED_SLICE: per axis,
    negative begin/end wrap once, are clamped to [0, n] (stride > 0) or
    [-1, n-1] (stride < 0), masked bounds take the full range, and
    shrink_axis keeps the single element at begin and drops the axis.
    `offset` (TFLite option): end is relative to begin.  Missing trailing
    axes take their full range.  "litert": 8-bit stride-1 slices without
    shrink run on XNNPACK, where an unmasked end of 0 means the end of the
    axis (see _xnnpack_slice); everything else as "tflite".

    `ellipsis_mask` / `new_axis_mask` are folded into a plain slice of the
    input viewed with the new size-1 axes (`strided_slice_effective`);
    XNNPACK declines them, so "litert" is "tflite" there.  TFLite sizes the
    output of such a slice with `offset` inconsistently, so the two are not
    accepted together."""
    strides = [1] * len(begin) if strides is None else strides
    if ellipsis_mask or new_axis_mask:
        if offset:
            raise ValueError("strided_slice: offset together with ellipsis/new_axis masks")
        if bin(int(ellipsis_mask)).count("1") > 1:
            raise ValueError("strided_slice: at most one ellipsis")
        eff = strided_slice_effective(np.shape(x), begin, end, strides, begin_mask, end_mask,
                                      shrink_axis_mask, ellipsis_mask, new_axis_mask)
        shape, begin, end, strides, begin_mask, end_mask, shrink_axis_mask, _ = eff
        x = np.asarray(x).reshape(shape)
        rounding_xnn = False
    else:
        rounding_xnn = rounding == "litert"
    xnn = (
        rounding_xnn and x_q.bits == 8 and shrink_axis_mask == 0
        and all(int(s) == 1 for s in strides) and len(begin) == np.ndim(x) <= 6
    )

    def fn(v):
        if xnn:
            return v[_xnnpack_slice(v.shape, begin, end, begin_mask, end_mask, offset)]
        per_axis = strided_slice_indices(v.shape, begin, end, strides, begin_mask, end_mask,
                                         shrink_axis_mask, offset)
        r = v
        for axis, (idx, _) in enumerate(per_axis):
            r = np.take(r, idx, axis=axis)
        keep = tuple(d for axis, (idx, shrink) in enumerate(per_axis) for d in [r.shape[axis]] if not shrink)
        return r.reshape(keep)

    return move(x, fn, x_q=x_q, out_q=out_q, rounding=rounding)


def split(
    x, *, x_q: QParams, out_q: QParams | Sequence[QParams], axis: int, num_splits: int, rounding: str = "tflite"
) -> list[np.ndarray]:
    """TFLite SPLIT: `num_splits` equal parts along `axis` (negative allowed).
    out_q: one QParams for all outputs or one per output."""
    x = np.asarray(x)
    ax = int(axis) % x.ndim
    if x.shape[ax] % num_splits:
        raise ValueError(f"axis {ax} of size {x.shape[ax]} is not divisible into {num_splits} parts")
    outs_q = list(out_q) if isinstance(out_q, (list, tuple)) else [out_q] * num_splits
    parts = np.split(np.arange(x.shape[ax]), num_splits)
    return [
        move(x, lambda v, p=p: np.take(v, p, axis=ax), x_q=x_q, out_q=q, rounding=rounding)
        for p, q in zip(parts, outs_q)
    ]


def gather(
    x, indices, *, x_q: QParams, out_q: QParams, axis: int = 0, batch_dims: int = 0, rounding: str = "tflite"
):
    """TFLite GATHER: `output = take(x, indices, axis)` per batch.

    The first `batch_dims` dimensions (negative: counted from the indices'
    rank, as TFLite does) are shared by `x` and `indices`; for batch index n,
    `out[n, o, i, r] = x[n, o, indices[n, i], r]`, shape
    x.shape[:axis] + indices.shape[batch_dims:] + x.shape[axis+1:].  Indices
    must be in range (TFLite reports an error otherwise)."""
    idx = np.asarray(indices).astype(np.int64)
    x = np.asarray(x)
    ax = int(axis) % x.ndim
    b = int(batch_dims) + (idx.ndim if batch_dims < 0 else 0)
    if not 0 <= b <= min(ax, idx.ndim):
        raise ValueError(f"gather batch_dims {batch_dims} must be in [0, {min(ax, idx.ndim)}]")
    if x.shape[:b] != idx.shape[:b]:
        raise ValueError(f"gather batch dims differ: {x.shape[:b]} vs indices {idx.shape[:b]}")
    if idx.size and (idx.min() < 0 or idx.max() >= x.shape[ax]):
        raise ValueError(f"gather index out of range for axis {ax} of size {x.shape[ax]}")
    out_shape = x.shape[:ax] + idx.shape[b:] + x.shape[ax + 1 :]

    def fn(v):
        batch = int(np.prod(v.shape[:b], dtype=np.int64))
        outer = int(np.prod(v.shape[b:ax], dtype=np.int64))
        inner = int(np.prod(v.shape[ax + 1 :], dtype=np.int64))
        vr = v.reshape(batch, outer, v.shape[ax], inner)
        ir = idx.reshape(batch, int(np.prod(idx.shape[b:], dtype=np.int64)))
        r = vr[np.arange(batch)[:, None, None], np.arange(outer)[None, :, None], ir[:, None, :]]
        return r.reshape(out_shape)

    return move(x, fn, x_q=x_q, out_q=out_q, rounding=rounding)


def space_to_depth(x, *, x_q: QParams, out_q: QParams, block_size: int, rounding: str = "tflite"):
    """NHWC: output[b, h, w, (by*bs + bx)*C + c] = input[b, h*bs + by, w*bs + bx, c]."""
    bs = int(block_size)

    def fn(v):
        n, h, w, c = v.shape
        if h % bs or w % bs:
            raise ValueError(f"height {h} / width {w} not divisible by block size {bs}")
        return v.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5).reshape(n, h // bs, w // bs, bs * bs * c)

    return move(x, fn, x_q=x_q, out_q=out_q, rounding=rounding)


def depth_to_space(x, *, x_q: QParams, out_q: QParams, block_size: int, rounding: str = "tflite"):
    """NHWC, DCR order: output[b, h*bs + by, w*bs + bx, c] = input[b, h, w, (by*bs + bx)*C' + c]."""
    bs = int(block_size)

    def fn(v):
        n, h, w, c = v.shape
        if c % (bs * bs):
            raise ValueError(f"depth {c} not divisible by block size squared {bs * bs}")
        co = c // (bs * bs)
        return v.reshape(n, h, w, bs, bs, co).transpose(0, 1, 3, 2, 4, 5).reshape(n, h * bs, w * bs, co)

    return move(x, fn, x_q=x_q, out_q=out_q, rounding=rounding)


# ---------------------------------------------------------------------------
# pad
# ---------------------------------------------------------------------------


def pad(
    x,
    *,
    x_q: QParams,
    out_q: QParams,
    paddings: Sequence[Sequence[int]],
    constant: int | None = None,
    rounding: str = "tflite",
):
    """TFLite PAD / PADV2: `paddings[i] = (before, after)` per axis (>= 0).
    The pad value is the stored integer `constant` in x_q's domain (PADV2's
    constant_values operand), by default x_q's zero point (PAD: real 0)."""
    pads = [(int(a), int(b)) for a, b in paddings]
    value = int(x_q.zero_point) if constant is None else int(constant)

    def fn(v):
        if len(pads) != v.ndim:
            raise ValueError(f"{len(pads)} paddings for rank {v.ndim}")
        if any(a < 0 or b < 0 for a, b in pads):
            raise ValueError("paddings must be non-negative")
        return np.pad(v, pads, constant_values=value)

    return move(x, fn, x_q=x_q, out_q=out_q, rounding=rounding)


# ---------------------------------------------------------------------------
# resizes
# ---------------------------------------------------------------------------


def _cdiv(a, b):
    """C integer division (truncation toward zero)."""
    a = np.asarray(a, dtype=np.int64)
    q = np.abs(a) // b
    return np.where(a < 0, -q, q)


def _bilinear_coords_q10(out_size, in_size, align_corners, half_pixel):
    """TFLite ComputeInterpolationValuesInteger along one axis: (scaled Q10
    position, lower index, upper index) for every output coordinate."""
    if align_corners and out_size > 1:
        scale_10 = ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale_10 = ((1 << 10) * in_size + out_size // 2) // out_size
    v = np.arange(out_size, dtype=np.int64)
    if half_pixel:
        pos = v * scale_10 + scale_10 // 2 - (1 << 9)
    else:
        pos = v * scale_10
    lo = np.maximum(_cdiv(pos, 1 << 10), 0)
    hi = np.minimum(_cdiv(pos + (1 << 10) - 1, 1 << 10), in_size - 1)
    return pos, lo, hi


def _bilinear_tflite_integer(v, oh, ow, align_corners, half_pixel, single_rounding):
    n, h, w, c = v.shape
    py, y0, y1 = _bilinear_coords_q10(oh, h, align_corners, half_pixel)
    px, x0, x1 = _bilinear_coords_q10(ow, w, align_corners, half_pixel)
    dy = (py - (1 << 10) * y0)[None, :, None, None]
    dx = (px - (1 << 10) * x0)[None, None, :, None]
    one = 1 << 10

    def at(ys, xs):
        return v[:, ys][:, :, xs]

    total = (
        at(y0, x0) * (one - dy) * (one - dx)
        + at(y1, x0) * dy * (one - dx)
        + at(y0, x1) * (one - dy) * dx
        + at(y1, x1) * dy * dx
    )
    if single_rounding:
        return (total + (1 << 19)) >> 20
    rnd = np.where(total > 0, 1 << 19, -(1 << 19))
    return _cdiv(total + rnd, 1 << 20)


def _bilinear_tflite_float(v, oh, ow, align_corners, half_pixel):
    """reference_ops::ResizeBilinear<uint8_t>: float32 weights, + 0.5, truncation."""
    n, h, w, c = v.shape
    f = np.float32

    def coords(out_size, in_size):
        scale = f(in_size) / f(out_size)
        if align_corners and out_size > 1:
            scale = f(in_size - 1) / f(out_size - 1)
        val = np.arange(out_size).astype(np.float32)
        if half_pixel:
            pos = (val + f(0.5)) * scale - f(0.5)
        else:
            pos = val * scale
        lo = np.maximum(np.floor(pos).astype(np.int64), 0)
        hi = np.minimum(np.ceil(pos).astype(np.int64), in_size - 1)
        return pos.astype(np.float32), lo, hi

    iy, y0, y1 = coords(oh, h)
    ix, x0, x1 = coords(ow, w)
    dy = (iy - y0.astype(np.float32)).astype(np.float32)[None, :, None, None]
    dx = (ix - x0.astype(np.float32)).astype(np.float32)[None, None, :, None]
    one = f(1)

    def at(ys, xs):
        return v[:, ys][:, :, xs].astype(np.float32)

    t = at(y0, x0) * (one - dy) * (one - dx)
    t = t + at(y1, x0) * dy * (one - dx)
    t = t + at(y0, x1) * (one - dy) * dx
    t = t + at(y1, x1) * dy * dx
    t = t + f(0.5)
    return np.trunc(t).astype(np.int64)


def _bilinear_xnnpack(v, oh, ow, align_corners, half_pixel):
    """XNNPACK resize-bilinear (s8/u8 ibilinear): float32 source positions,
    11-bit weights lrintf(alpha * 2048), `(vt << 11 + (vb - vt) * ay + 2^21) >> 22`."""
    n, h, w, c = v.shape
    f = np.float32
    legacy = not half_pixel and not align_corners

    def coords(out_size, in_size):
        adj = 1 if (align_corners and out_size != 1) else 0
        scale = f(f(in_size - adj) / f(out_size - adj))
        val = np.arange(out_size).astype(np.float32)
        in_max = f(in_size - 1)
        if legacy or align_corners:
            pos = np.minimum((val * scale).astype(np.float32), in_max)
        else:
            off = f(f(f(0.5) * scale) - f(0.5))
            pos = ((val * scale).astype(np.float32) + off).astype(np.float32)
            pos = np.minimum(np.maximum(pos, f(0)), in_max)
        lo = pos.astype(np.int64)
        hi = np.minimum(lo + 1, in_size - 1)
        alpha = (pos - lo.astype(np.float32)).astype(np.float32)
        wq = np.rint((alpha * f(2048)).astype(np.float32)).astype(np.int64)
        return lo, hi, wq

    y0, y1, ay = coords(oh, h)
    x0, x1, ax = coords(ow, w)
    ax = ax[None, None, :, None]
    ay = ay[None, :, None, None]

    def at(ys, xs):
        return v[:, ys][:, :, xs]

    tl, tr, bl, br = at(y0, x0), at(y0, x1), at(y1, x0), at(y1, x1)
    vt = (tl << 11) + (tr - tl) * ax
    vb = (bl << 11) + (br - bl) * ax
    acc = (vt << 11) + (vb - vt) * ay
    return (acc + (1 << 21)) >> 22


def resize_bilinear(
    x,
    *,
    x_q: QParams,
    out_q: QParams,
    size: Sequence[int],
    align_corners: bool = False,
    half_pixel_centers: bool = False,
    rounding: str = "tflite",
):
    """Bilinear resize of NHWC `x` to `size` = (out_h, out_w).

    "tflite": int8 / int16 mirror reference_ops::ResizeBilinearInteger (Q10
    source positions `((1<<10)*in + out/2) / out` steps, half-pixel offset
    `scale/2 - 512`, bounds by truncating division, Q20 sum of the four
    weighted corners rounded half away from zero); uint8 mirrors the float
    reference_ops::ResizeBilinear (float32 weights, + 0.5, truncation).
    "single": the Q20 sum rounded half up (TFLITE_SINGLE_ROUNDING build).
    "litert": 8-bit runs on XNNPACK (11-bit weights, see _bilinear_xnnpack);
    16-bit falls back to the reference code.
    """
    _check_knobs(rounding)
    if align_corners and half_pixel_centers:
        raise ValueError("align_corners and half_pixel_centers are exclusive")
    oh, ow = (int(s) for s in size)
    if oh <= 0 or ow <= 0:
        raise ValueError(f"invalid output size {tuple(size)}")

    def fn(v):
        if rounding == "litert" and x_q.bits == 8:
            return _bilinear_xnnpack(v, oh, ow, align_corners, half_pixel_centers)
        if x_q.bits == 8 and not x_q.signed and rounding in ("tflite", "litert"):
            return _bilinear_tflite_float(v, oh, ow, align_corners, half_pixel_centers)
        single = rounding in ("single", "half_up")
        return _bilinear_tflite_integer(v, oh, ow, align_corners, half_pixel_centers, single)

    return move(x, fn, x_q=x_q, out_q=out_q, rounding="tflite" if rounding == "litert" else rounding)


def _nearest_index(out_size, in_size, align_corners, half_pixel):
    """reference_ops::GetNearestNeighbor over all output coordinates (float32)."""
    f = np.float32
    if align_corners and out_size > 1:
        scale = f(in_size - 1) / f(out_size - 1)
    else:
        scale = f(in_size) / f(out_size)
    off = f(0.5) if half_pixel else f(0.0)
    pos = ((np.arange(out_size).astype(np.float32) + off) * scale).astype(np.float32)
    if align_corners:
        t = np.trunc(pos)
        idx = (t + (np.abs(pos - t) >= 0.5) * np.sign(pos)).astype(np.int64)  # roundf
    else:
        idx = np.floor(pos).astype(np.int64)
    idx = np.minimum(idx, in_size - 1)
    if half_pixel:
        idx = np.maximum(idx, 0)
    return idx


def resize_nearest_neighbor(
    x,
    *,
    x_q: QParams,
    out_q: QParams,
    size: Sequence[int],
    align_corners: bool = False,
    half_pixel_centers: bool = False,
    rounding: str = "tflite",
):
    """Nearest-neighbour resize of NHWC `x` to `size` = (out_h, out_w).

    "tflite": reference_ops::ResizeNearestNeighbor: `min(floor((o + off) *
    scale), in - 1)` in float32 (roundf with align_corners; off = 0.5 and a
    lower clamp at 0 with half_pixel_centers).  "litert" (8-bit, neither
    flag): TFLite's optimized kernel, `min((o * ((in << 16) / out + 1)) >> 16,
    in - 1)` (XNNPACK does not take the op).
    """
    _check_knobs(rounding)
    oh, ow = (int(s) for s in size)

    def fn(v):
        n, h, w, c = v.shape
        if rounding == "litert" and x_q.bits == 8 and not (align_corners or half_pixel_centers):
            hs = (h << 16) // oh + 1
            ws = (w << 16) // ow + 1
            iy = np.minimum((np.arange(oh, dtype=np.int64) * hs) >> 16, h - 1)
            ix = np.minimum((np.arange(ow, dtype=np.int64) * ws) >> 16, w - 1)
        else:
            iy = _nearest_index(oh, h, align_corners, half_pixel_centers)
            ix = _nearest_index(ow, w, align_corners, half_pixel_centers)
        return v[:, iy][:, :, ix]

    return move(x, fn, x_q=x_q, out_q=out_q, rounding="tflite" if rounding == "litert" else rounding)


# ---------------------------------------------------------------------------
# concatenation
# ---------------------------------------------------------------------------


def concatenation(
    xs: Sequence[np.ndarray],
    *,
    xs_q: Sequence[QParams],
    out_q: QParams,
    axis: int,
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
) -> np.ndarray:
    """Concatenate along `axis` (negative allowed).

    Inputs whose parameters equal the output's are copied; the others are
    rescaled as TFLite's ConcatenationWithScaling does (uint8 reference and
    optimized kernels; TFLite refuses int8 inputs with differing
    parameters): `scale = float32(in_s * (1 / out_s))`, `bias = -in_zp *
    scale`, `out = roundf(x * scale + bias) + out_zp` in float32, clamped to
    the type.  "half_even" rounds that float value ties-to-even instead.
    """
    _check_knobs(rounding)
    if len(xs) != len(xs_q):
        raise ValueError("one QParams per input is required")
    parts = []
    f = np.float32
    inv = f(f(1.0) / _f32(out_q).reshape(()))
    tlo, thi = np.iinfo(out_q.dtype).min, np.iinfo(out_q.dtype).max
    for x, q in zip(xs, xs_q):
        v = np.asarray(x).astype(np.int64)
        if not _same_params(q, out_q):
            scale = f(_f32(q).reshape(()) * inv)
            bias = f(f(-int(q.zero_point)) * scale)
            t = (v.astype(np.float32) * scale).astype(np.float32) + bias
            if rounding == "half_even":
                r = np.rint(t)
            else:
                tt = np.trunc(t)
                r = tt + (np.abs(t - tt) >= 0.5) * np.sign(t)
            v = np.clip(r.astype(np.int64) + int(out_q.zero_point), tlo, thi)
        parts.append(v)
    ax = int(axis) % parts[0].ndim
    return _finish(np.concatenate(parts, axis=ax), out_q, act_min, act_max)


# ---------------------------------------------------------------------------
# transformer-encoder movement: tile, mirror_pad, gather_nd
# ---------------------------------------------------------------------------


def tile(x, *, x_q: QParams, out_q: QParams, multiples: Sequence[int], rounding: str = "tflite"):
    """TFLite TILE: the input repeated `multiples[d]` times along each dimension d (stored
    integers copied; TFLite's kernel does not rescale).  BROADCAST_TO imports as a reshape to
    the target rank and this op."""
    m = [int(k) for k in multiples]
    if len(m) != np.ndim(x) or min(m, default=1) < 0:
        raise ValueError(f"tile multiples {m} must be one non-negative integer per dimension of {list(np.shape(x))}")
    return move(x, lambda v: np.tile(v, m), x_q=x_q, out_q=out_q, rounding=rounding)


MIRROR_PAD_MODES = {"reflect": 1, "symmetric": 0}
"""MIRROR_PAD mode -> TFLite's offset: REFLECT does not repeat the edge, SYMMETRIC does."""


def mirror_pad(x, *, x_q: QParams, out_q: QParams, paddings, mode: str = "reflect", rounding: str = "tflite"):
    """TFLite MIRROR_PAD: `paddings` [(before, after)] per dimension, each at most the size
    minus the mode's offset (REFLECT 1, SYMMETRIC 0; LiteRT refuses more); stored integers
    copied as numpy's `reflect` / `symmetric` padding."""
    if mode not in MIRROR_PAD_MODES:
        raise ValueError(f"mirror_pad mode {mode!r} is not one of {', '.join(MIRROR_PAD_MODES)}")
    pads = [(int(a), int(b)) for a, b in paddings]
    shape = np.shape(x)
    if len(pads) != len(shape):
        raise ValueError(f"mirror_pad paddings {pads} must have one pair per dimension of {list(shape)}")
    for d, ((a, b), n) in enumerate(zip(pads, shape)):
        if min(a, b) < 0 or max(a, b) > n - MIRROR_PAD_MODES[mode]:
            raise ValueError(f"mirror_pad paddings {[a, b]} of dimension {d} (size {n}) must be in "
                             f"[0, {n - MIRROR_PAD_MODES[mode]}] in {mode} mode")
    return move(x, lambda v: np.pad(v, pads, mode=mode), x_q=x_q, out_q=out_q, rounding=rounding)


def gather_nd(params, indices, *, x_q: QParams, out_q: QParams, rounding: str = "tflite"):
    """TFLite GATHER_ND: `out[i...] = params[indices[i..., :]]`, shape
    indices.shape[:-1] + params.shape[indices.shape[-1]:] (stored integers copied).  An index
    outside its dimension (negative included) is an error, as LiteRT's invoke fails."""
    idx = np.asarray(indices).astype(np.int64)
    p = np.asarray(params)
    if idx.ndim < 1:
        raise ValueError("gather_nd indices must have rank >= 1")
    nd = idx.shape[-1]
    if nd > p.ndim:
        raise ValueError(f"gather_nd indices address {nd} dimensions of a rank-{p.ndim} params")
    flat = idx.reshape(-1, nd)
    for j in range(nd):
        col = flat[:, j]
        if col.size and (col.min() < 0 or col.max() >= p.shape[j]):
            bad = int(col[(col < 0) | (col >= p.shape[j])][0])
            raise ValueError(f"gather_nd index {bad} is out of range for dimension {j} of size {p.shape[j]} "
                             "(LiteRT's invoke fails)")
    out_shape = idx.shape[:-1] + p.shape[nd:]

    def fn(v):
        return v[tuple(flat[:, j] for j in range(nd))].reshape(out_shape)

    return move(p, fn, x_q=x_q, out_q=out_q, rounding=rounding)
