"""`qnn-overflow-check`: where can an accumulator leave the width its op declares?

    qd-opt model.mlir -p qnn-overflow-check                  # remarks on stderr, IR unchanged
    qd-opt model.mlir -p 'qnn-overflow-check{verbose=true}'  # also the ops that fit
    qd-opt model.mlir -p 'qnn-overflow-check{fail=true}'     # the first one is an error (exit 2)

For every accumulating op (qnn.conv2d, depthwise_conv2d, transpose_conv2d,
fully_connected, batch_matmul) the pass bounds the accumulator

    acc = sum_k (x_k - x_zp) * (w_k - w_zp) (+ bias)

from the types: every input lies in its storage range, so each product lies
between the corners of [x_lo - x_zp, x_hi - x_zp] x [w_lo - w_zp, w_hi - w_zp],
the classic `K * max|x - zp| * max|w| + |bias|`.  When the weights (or a
batch_matmul operand) are constants the pass uses them: per output channel,
the largest sum is `(x_hi - zp) * sum(w > 0) + (x_lo - zp) * sum(w < 0)`
over the taps, the smallest the other way round, and a constant bias adds its
own value for that channel.  Taps that fall into the padding (or, for
transpose_conv2d, that no input pixel reaches at a given stride phase)
contribute nothing, so the pass takes the maximum over the distinct sets of
taps that the output positions really see.  The bound is then *exact*: some
input inside the storage range makes the accumulator reach it (inputs are
free, each output element's taps read distinct input elements), so "can
overflow" means a real input overflows, and "fits" means none does.

`acc_overflow = "saturate"` accumulators saturate every running sum, so the
partial sums before the bias must fit too; they stay inside
[`sum` of the negative products, `sum` of the positive ones], a bound that the
full sum reaches.  `bias = "output"` keeps the bias out of the accumulator.
The width is the op's `acc` knob, or what TFLite uses when it is absent (i64
for an i64 bias or 16-bit activations, else i32).

Each op that can overflow gets one remark on stderr:

    remark: qnn-overflow-check: qnn.conv2d %y in @main can overflow its i16 accumulator: sums reach [-32385, 64786] (high end at output channel 1); i16 holds [-32768, 32767]

From Python, `accumulator_bounds(module)` returns an `AccumulatorBound` per
op (range, where it is reached, `can_overflow`, `headroom_bits`).
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerType, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.utils.exceptions import PassFailedException

from qdialect.dialects import qnn
from qdialect.dialects.quant import quantized_element_type

ACC_RANGES = {
    "i16": (-(1 << 15), (1 << 15) - 1),
    "i32": (-(1 << 31), (1 << 31) - 1),
    "i64": (-(1 << 63), (1 << 63) - 1),
}

ACCUMULATING_OPS = (
    qnn.Conv2DOp,
    qnn.DepthwiseConv2DOp,
    qnn.TransposeConv2DOp,
    qnn.FullyConnectedOp,
    qnn.BatchMatmulOp,
)

MAX_MASK_CELLS = 1 << 22
"""Output positions x taps beyond which one spatial axis is bounded with every tap (sound, not exact)."""


@dataclass(frozen=True)
class AccumulatorBound:
    """The range an op's accumulator can take, over all inputs inside their storage ranges.

    `lo`/`hi`: the accumulator after the bias (when the bias goes into it);
    `partial_lo`/`partial_hi`: running sums before the bias (they matter for
    `acc_overflow = "saturate"`); `lo_at`/`hi_at`: where each end is reached
    ("output channel 3"); `exact`: some input reaches both ends (False when the
    pass had to over-approximate); `elements`: accumulator elements (0: none
    to overflow).
    """

    op: Operation
    function: str
    value: str
    acc: str
    acc_overflow: str
    lo: int
    hi: int
    partial_lo: int
    partial_hi: int
    lo_at: str
    hi_at: str
    exact: bool
    elements: int

    @property
    def bounds(self) -> tuple[int, int]:
        return ACC_RANGES[self.acc]

    @property
    def final_overflows(self) -> bool:
        lo, hi = self.bounds
        return self.elements > 0 and (self.lo < lo or self.hi > hi)

    @property
    def partial_overflows(self) -> bool:
        lo, hi = self.bounds
        return (self.elements > 0 and self.acc_overflow == "saturate" and self.acc != "i64"
                and (self.partial_lo < lo or self.partial_hi > hi))

    @property
    def can_overflow(self) -> bool:
        return self.final_overflows or self.partial_overflows

    @property
    def headroom_bits(self) -> int:
        """Bits the accumulator has to spare (negative: bits it lacks)."""
        need = max(abs(self.lo), abs(self.hi))
        if self.acc_overflow == "saturate":
            need = max(need, abs(self.partial_lo), abs(self.partial_hi))
        return (int(self.acc[1:]) - 1) - need.bit_length()

    def remark(self) -> str:
        lo, hi = self.bounds
        head = f"remark: qnn-overflow-check: {self.op.name} {self.value} in @{self.function}"
        if not self.elements:
            return f"{head} has no accumulator elements"
        if self.final_overflows:
            ends = []
            if self.hi > hi:
                ends.append(f"high end at {self.hi_at}")
            if self.lo < lo:
                ends.append(f"low end at {self.lo_at}")
            return (f"{head} can overflow its {self.acc} accumulator: sums reach [{self.lo}, {self.hi}] "
                    f"({', '.join(ends)}); {self.acc} holds [{lo}, {hi}]")
        if self.partial_overflows:
            return (f"{head} can overflow its {self.acc} accumulator: running sums reach "
                    f"[{self.partial_lo}, {self.partial_hi}] before the bias (acc_overflow = saturate); "
                    f"{self.acc} holds [{lo}, {hi}]")
        return (f"{head} fits its {self.acc} accumulator: sums in [{self.lo}, {self.hi}], "
                f"{self.headroom_bits} bit{'' if self.headroom_bits == 1 else 's'} to spare")


# ----- constants and ranges ----------------------------------------------------------------------


def constant_array(value: SSAValue) -> np.ndarray | None:
    """The stored integers of a qnn.constant / integer arith.constant operand, else None."""
    owner = value.owner
    if isinstance(owner, qnn.ConstantOp):
        return owner.array().astype(np.int64)
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr):
        t = owner.value.type
        el = t.element_type
        if not isinstance(el, IntegerType) or el.width.data not in (8, 16, 32, 64):
            return None
        raw = np.frombuffer(owner.value.data.data, dtype=np.dtype(f"<i{el.width.data // 8}"))
        shape = tuple(t.get_shape())
        n = int(np.prod(shape, dtype=object)) if shape else 1
        if raw.size == 1 and n != 1:
            raw = np.broadcast_to(raw, (n,))
        if raw.size != n:
            return None
        return raw.astype(np.int64).reshape(shape)
    return None


def value_range(value: SSAValue) -> tuple[int, int]:
    """Storage range of a quantized value, or the range of its integer element type."""
    q = quantized_element_type(value.type)
    if q is not None:
        return q.storage_range()
    t = value.type
    el = t.element_type if isinstance(t, TensorType) else t
    if isinstance(el, IntegerType):
        w = el.width.data
        return -(1 << (w - 1)), (1 << (w - 1)) - 1
    raise ValueError(f"{value.type} is neither quantized nor integer")


def _zero_points(value: SSAValue, channels: int) -> list[int]:
    q = quantized_element_type(value.type)
    zp = q.zero_point_array().reshape(-1).tolist()
    return zp * channels if len(zp) == 1 else zp


def _centered(value: SSAValue, axis: int) -> np.ndarray | None:
    """A constant weight operand minus its (per-axis) zero points, int64; None if not constant."""
    arr = constant_array(value)
    if arr is None:
        return None
    q = quantized_element_type(value.type)
    zp = q.zero_point_array()
    if zp.ndim:
        shape = [1] * arr.ndim
        shape[axis] = -1
        zp = zp.reshape(shape)
    return arr - zp


# ----- which taps an output position sees ----------------------------------------------------------


def _unique_masks(m: np.ndarray) -> list[np.ndarray]:
    if m.shape[0] == 0:
        return []
    return list(np.unique(m, axis=0))


def conv_tap_masks(out_size: int, in_size: int, k: int, stride: int, dilation: int,
                   pad_before: int) -> list[np.ndarray] | None:
    """Distinct sets of in-bounds taps over the output positions of one axis (None: not computed)."""
    if out_size <= 0 or k <= 0:
        return []
    if stride < 1 or dilation < 1 or out_size * k > MAX_MASK_CELLS:
        return None
    pos = np.arange(out_size, dtype=np.int64)[:, None] * stride - pad_before + np.arange(k)[None, :] * dilation
    return _unique_masks((pos >= 0) & (pos < in_size))


def transpose_tap_masks(out_size: int, in_size: int, k: int, stride: int,
                        pad_before: int) -> list[np.ndarray] | None:
    """Distinct sets of taps that reach an output position of a transposed convolution."""
    if out_size <= 0 or k <= 0:
        return []
    if stride < 1 or out_size * k > MAX_MASK_CELLS:
        return None
    t = np.arange(out_size, dtype=np.int64)[:, None] + pad_before - np.arange(k)[None, :]
    return _unique_masks((t % stride == 0) & (t >= 0) & (t // stride < in_size))


# ----- the bound ------------------------------------------------------------------------------------


def _ranges_products(a: int, b: int, wl: int, wh: int) -> tuple[int, int]:
    corners = (a * wl, a * wh, b * wl, b * wh)
    return min(corners), max(corners)


@dataclass
class _Sums:
    """Per channel: smallest / largest accumulator before the bias, and running-sum bounds."""

    lo: list[int]
    hi: list[int]
    plo: list[int]
    phi: list[int]
    exact: bool = True


def _constant_sums(wc: np.ndarray, a: int, b: int, ymasks, xmasks) -> _Sums:
    """wc: centered constant weights [channels, kh, kw, taps]; x - zp in [a, b]."""
    channels = wc.shape[0]
    exact = ymasks is not None and xmasks is not None
    ymasks = [np.ones(wc.shape[1], bool)] if ymasks is None else ymasks
    xmasks = [np.ones(wc.shape[2], bool)] if xmasks is None else xmasks
    pos = np.where(wc > 0, wc, 0).sum(axis=3)
    neg = np.where(wc < 0, wc, 0).sum(axis=3)
    ap, bp = min(a, 0), max(b, 0)
    lo = [None] * channels
    hi = [None] * channels
    plo = [0] * channels
    phi = [0] * channels
    for my in ymasks:
        for mx in xmasks:
            p = pos[:, my][:, :, mx].reshape(channels, -1).sum(axis=1).tolist()
            n = neg[:, my][:, :, mx].reshape(channels, -1).sum(axis=1).tolist()
            for c in range(channels):
                h, l_ = b * p[c] + a * n[c], a * p[c] + b * n[c]
                if hi[c] is None or h > hi[c]:
                    hi[c] = h
                if lo[c] is None or l_ < lo[c]:
                    lo[c] = l_
                phi[c] = max(phi[c], bp * p[c] + ap * n[c])
                plo[c] = min(plo[c], ap * p[c] + bp * n[c])
    if not ymasks or not xmasks:  # no output position at all
        lo = [0] * channels
        hi = [0] * channels
    return _Sums(lo, hi, plo, phi, exact)


def _range_sums(channels: int, a: int, b: int, wranges: list[tuple[int, int]], taps: int,
                exact: bool) -> _Sums:
    lo, hi, plo, phi = [], [], [], []
    for c in range(channels):
        tmin, tmax = _ranges_products(a, b, *wranges[c])
        lo.append(taps * tmin)
        hi.append(taps * tmax)
        pmin, pmax = _ranges_products(min(a, 0), max(b, 0), *wranges[c])
        plo.append(taps * min(pmin, 0))
        phi.append(taps * max(pmax, 0))
    return _Sums(lo, hi, plo, phi, exact)


def _max_taps(masks, k: int) -> tuple[int, bool]:
    if masks is None:
        return k, False
    return max((int(m.sum()) for m in masks), default=0), True


def _default_acc(op: Operation) -> str:
    if isinstance(op, qnn.BatchMatmulOp):
        q = quantized_element_type(op.operands[0].type)
        return "i64" if q.storage_width.data > 8 else "i32"
    bias = op.operands[2].type
    el = bias.element_type if isinstance(bias, TensorType) else bias
    q = quantized_element_type(bias)
    width = q.storage_width.data if q is not None else el.width.data if isinstance(el, IntegerType) else 32
    return "i64" if width > 32 else "i32"


def _elements(value: SSAValue) -> int:
    t = value.type
    shape = t.get_shape() if isinstance(t, TensorType) else ()
    n = 1
    for d in shape:
        n *= max(int(d), 0)
    return n


def _weighted_sums(op: Operation) -> tuple[_Sums, str]:
    """Per-channel sums of a conv / depthwise / transpose_conv / fully_connected, and the channel word."""
    x, w = op.operands[0], op.operands[1]
    xq = quantized_element_type(x.type)
    xlo, xhi = xq.storage_range()
    xzp = int(xq.zero_point_array().reshape(-1)[0])
    a, b = xlo - xzp, xhi - xzp
    xs = x.type.get_shape()
    ws = w.type.get_shape()
    if isinstance(op, qnn.FullyConnectedOp):
        o, k = ws
        ymasks = xmasks = [np.ones(1, bool)]
        kh = kw = 1
        taps_axis, channel_axis, channels, taps = 0, 0, o, k
    else:
        pt, _pb, pl, _pr = op.attr("padding", [0, 0, 0, 0])
        sh, sw = op.attr("strides", [1, 1])
        oh, ow = op.results[0].type.get_shape()[1:3]
        if isinstance(op, qnn.DepthwiseConv2DOp):
            _, kh, kw, channels = ws
            channel_axis, taps = 3, 1
        else:
            channels, kh, kw, taps = ws
            channel_axis = 0
        if isinstance(op, qnn.TransposeConv2DOp):
            ymasks = transpose_tap_masks(oh, xs[1], kh, sh, pt)
            xmasks = transpose_tap_masks(ow, xs[2], kw, sw, pl)
        else:
            dh, dw = op.attr("dilations", [1, 1])
            ymasks = conv_tap_masks(oh, xs[1], kh, sh, dh, pt)
            xmasks = conv_tap_masks(ow, xs[2], kw, sw, dw, pl)
    wc = _centered(w, channel_axis)
    if wc is not None:
        if isinstance(op, qnn.FullyConnectedOp):
            wc = wc.reshape(channels, 1, 1, taps)
        elif isinstance(op, qnn.DepthwiseConv2DOp):
            wc = np.transpose(wc, (3, 1, 2, 0))  # [1, kh, kw, oc] -> [oc, kh, kw, 1]
        return _constant_sums(wc, a, b, ymasks, xmasks), "output channel"
    wlo, whi = value_range(w)
    wranges = [(wlo - z, whi - z) for z in _zero_points(w, channels)]
    ty, ey = _max_taps(ymasks, kh)
    tx, ex = _max_taps(xmasks, kw)
    return _range_sums(channels, a, b, wranges, ty * tx * taps, ey and ex), "output channel"


def _matmul_sums(op: qnn.BatchMatmulOp) -> tuple[_Sums, str]:
    lhs, rhs = op.operands
    lq, rq = quantized_element_type(lhs.type), quantized_element_type(rhs.type)
    (llo, lhi), (rlo, rhi) = lq.storage_range(), rq.storage_range()
    lzp, rzp = int(lq.zero_point_array()), int(rq.zero_point_array())
    ls, rs = lhs.type.get_shape(), rhs.type.get_shape()
    k = ls[-2] if op.attr("adj_x", False) else ls[-1]
    r = _centered(rhs, 0)
    if r is not None:  # columns of a constant rhs: [..., k, n]
        if op.attr("adj_y", False):
            r = np.swapaxes(r, -1, -2)
        cols = np.swapaxes(r, -1, -2).reshape(-1, 1, 1, k)
        return _constant_sums(cols, llo - lzp, lhi - lzp, [np.ones(1, bool)], [np.ones(1, bool)]), "rhs column"
    left = _centered(lhs, 0)
    if left is not None:  # rows of a constant lhs: [..., m, k]
        if op.attr("adj_x", False):
            left = np.swapaxes(left, -1, -2)
        rows = left.reshape(-1, 1, 1, k)
        return _constant_sums(rows, rlo - rzp, rhi - rzp, [np.ones(1, bool)], [np.ones(1, bool)]), "lhs row"
    # x @ x reads one element twice: the corners are a bound, not always reached
    return _range_sums(1, llo - lzp, lhi - lzp, [(rlo - rzp, rhi - rzp)], k, lhs is not rhs), "every element"


def _bias_ranges(op: Operation, channels: int) -> list[tuple[int, int]]:
    if isinstance(op, qnn.BatchMatmulOp) or op.attr("bias", "accumulator") != "accumulator":
        return [(0, 0)] * channels
    b = constant_array(op.operands[2])
    if b is not None and b.size == channels:
        return [(v, v) for v in b.reshape(-1).tolist()]
    lo, hi = value_range(op.operands[2])
    return [(lo, hi)] * channels


def bound_of(op: Operation, function: str = "?", value: str = "%?") -> AccumulatorBound:
    """The accumulator range of one accumulating qnn op (see the module docstring)."""
    if isinstance(op, qnn.BatchMatmulOp):
        sums, word = _matmul_sums(op)
    else:
        sums, word = _weighted_sums(op)
    channels = len(sums.hi)
    biases = _bias_ranges(op, channels) if channels else []
    finals_hi = [sums.hi[c] + biases[c][1] for c in range(channels)]
    finals_lo = [sums.lo[c] + biases[c][0] for c in range(channels)]
    acc = op.attr("acc", None) or _default_acc(op)
    elements = _elements(op.results[0]) if channels else 0

    def where(c: int) -> str:
        if word == "every element":
            return word
        if word == "rhs column" and len(op.operands[1].type.get_shape()) > 2:
            n = op.operands[1].type.get_shape()
            cols = n[-2] if op.attr("adj_y", False) else n[-1]
            return f"rhs column {c % cols} of batch {c // cols}"
        return f"{word} {c}"

    hi_c = int(np.argmax(finals_hi)) if channels else 0
    lo_c = int(np.argmin(finals_lo)) if channels else 0
    return AccumulatorBound(
        op=op, function=function, value=value, acc=acc,
        acc_overflow=op.attr("acc_overflow", "wrap"),
        lo=finals_lo[lo_c] if channels else 0, hi=finals_hi[hi_c] if channels else 0,
        partial_lo=min(sums.plo, default=0), partial_hi=max(sums.phi, default=0),
        lo_at=where(lo_c), hi_at=where(hi_c), exact=sums.exact, elements=elements,
    )


def _value_names(fn: func.FuncOp) -> dict[SSAValue, str]:
    """The SSA names the printer gives `fn`'s values (what the user sees in the text)."""
    printer = Printer(stream=io.StringIO())
    printer.print_op(fn)
    return dict(printer._ssa_values)  # noqa: SLF001 - the printer's own numbering


def accumulator_bounds(module: ModuleOp) -> list[AccumulatorBound]:
    """An AccumulatorBound per accumulating op of every function, in program order."""
    out = []
    for fn in module.walk():
        if not isinstance(fn, func.FuncOp):
            continue
        ops = [op for op in fn.walk() if isinstance(op, ACCUMULATING_OPS)]
        if not ops:
            continue
        names = _value_names(fn)
        for op in ops:
            out.append(bound_of(op, fn.sym_name.data, "%" + names.get(op.results[0], "?")))
    return out


@dataclass(frozen=True)
class QnnOverflowCheckPass(ModulePass):
    """Report (on stderr) every accumulator that can leave its `acc` width; the IR is unchanged.

    verbose: also report the ops whose accumulators fit; fail: make the first
    accumulator that can overflow an error.
    """

    name = "qnn-overflow-check"

    verbose: bool = False
    fail: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for bound in accumulator_bounds(op):
            if bound.can_overflow and self.fail:
                raise PassFailedException(bound.remark().removeprefix("remark: "))
            if bound.can_overflow or self.verbose:
                print(bound.remark(), file=sys.stderr)
