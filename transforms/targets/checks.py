"""The words target tables are written in: small, named constraints on one qnn op.

A `Check` is data: the remark `kind` it reports under, a `text` saying what
the constraint is (it becomes a cell of the target's table in the docs), and
a `test(op)` that returns None when the op satisfies it, or a one-line
message naming the operand and the offending value:

    stride(1, 3)            -> "stride 4x4 is outside [1, 3]"
    weights_zero_point(0)   -> "operand 1 (weights) zero point 3 at channel 2 is not 0"

The constructors below cover what accelerator documentation talks about:
storage types, per-axis or per-tensor quantization, zero points, the
rounding profile and accumulator knobs, fused activations, kernel sizes,
strides, dilations, shapes and broadcasting, and op attributes.  Values
come from the op's types and attributes only — a qnn op carries everything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import Operation, SSAValue

from qdialect.dialects import qnn
from qdialect.dialects.qnn import QnnOp, qtype, shape_of
from qdialect.dialects.quant import UniformQuantizedType
from qdialect.reference.rescale import round_half_away

KINDS = (
    "op",  # the target has no row for this op
    "storage",  # storage type of an activation (input or result)
    "per-axis",  # a per-axis quantized tensor where the target needs per-tensor
    "zero-point",  # a zero point the kernels cannot take
    "quantization",  # scales / zero points that must match across operands
    "weights",  # weight tensor: storage, constness, magnitude
    "bias",  # bias tensor: storage, range
    "rounding",  # the op's rounding profile
    "knob",  # accumulator width, overflow and bias placement
    "activation",  # fused activation (clamp bounds)
    "kernel",  # kernel / window size
    "stride",
    "dilation",
    "shape",  # rank, batch, dimension sizes, depth multiplier
    "broadcast",
    "attribute",  # other attributes (beta, paddings, axes, perm, ...)
)
"""Every kind of reason an op stays on the host, in the order docs list them."""


@dataclass(frozen=True)
class Check:
    """One constraint of a target row: `test(op)` is None when it holds, else the reason."""

    kind: str
    text: str
    test: Callable[[Operation], str | None]

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"check kind '{self.kind}' is not one of {', '.join(KINDS)}")

    def __call__(self, op: Operation) -> str | None:
        return self.test(op)


# ----- reading an op -------------------------------------------------------------------

WEIGHTED = (qnn.Conv2DOp, qnn.DepthwiseConv2DOp, qnn.TransposeConv2DOp, qnn.FullyConnectedOp)
"""Ops whose operand 1 is a weight tensor and operand 2 a bias."""


def operand_label(op: Operation, i: int) -> str:
    return op.operand_name(i) if isinstance(op, QnnOp) else f"operand {i}"


def activations(op: Operation) -> list[tuple[str, SSAValue]]:
    """The activation tensors of `op` (data inputs and results), labelled for messages.

    Weights and biases are not activations; neither are integer index operands.
    """
    data = [0] if isinstance(op, WEIGHTED) else range(len(op.operands))
    out = [(operand_label(op, i), op.operands[i]) for i in data if qtype(op.operands[i]) is not None]
    for k, r in enumerate(op.results):
        out.append(("result" if len(op.results) == 1 else f"result {k}", r))
    return out


def inputs(op: Operation) -> list[tuple[str, SSAValue]]:
    return [(label, v) for label, v in activations(op) if not label.startswith("result")]


def storage_of(value: SSAValue) -> str:
    """`i8`, `u8`, `i16`, ... for a quantized value; the element type otherwise."""
    q = qtype(value)
    if q is not None:
        return q.storage
    t = value.type
    el = t.element_type if isinstance(t, TensorType) else t
    if isinstance(el, IntegerType):
        return f"i{el.width.data}"
    return str(el)


def one_of(allowed: Sequence[str]) -> str:
    """`i8`, `i8 or i16`, `one of i8, u8, i16`."""
    if len(allowed) <= 2:
        return " or ".join(allowed)
    return "one of " + ", ".join(allowed)


def _fmt_range(lo, hi) -> str:
    return f"[{lo}, {hi}]"


def _pair(values) -> str:
    return "x".join(str(v) for v in values)


#: the ops that make a constant tensor (never offloaded on their own; they travel with their users)
CONSTANT_OPS = ("qnn.constant", "arith.constant", "nn.constant")


def is_constant_op(op: Operation) -> bool:
    return op.name in CONSTANT_OPS


def is_constant(value: SSAValue) -> bool:
    """The value is made by a constant op."""
    owner = value.owner
    return isinstance(owner, Operation) and is_constant_op(owner)


def constant_array(value: SSAValue) -> np.ndarray | None:
    owner = value.owner
    if isinstance(owner, qnn.ConstantOp):
        return owner.array()
    return None


def _spatial_kernel(op: Operation) -> tuple[int, int] | None:
    """Kernel (height, width): from the weights (OHWI / 1HWC) or a pool's `kernel`."""
    if isinstance(op, (qnn.Conv2DOp, qnn.DepthwiseConv2DOp, qnn.TransposeConv2DOp)):
        s = shape_of(op.operands[1])
        return int(s[1]), int(s[2])
    if isinstance(op, (qnn.AvgPool2DOp, qnn.MaxPool2DOp)):
        kh, kw = op.attr("kernel")
        return int(kh), int(kw)
    return None


def _is_padded(op: Operation) -> bool:
    return isinstance(op, QnnOp) and "padding" in op.ATTRS and any(op.attr("padding", [0, 0, 0, 0]))


# ----- storage and quantization --------------------------------------------------------------


def storage(*allowed: str) -> Check:
    """Every activation (data input and result) is stored as one of `allowed`."""

    def test(op):
        for label, v in activations(op):
            s = storage_of(v)
            if s not in allowed:
                return f"{label} storage {s} is not {one_of(allowed)}"
        return None

    return Check("storage", f"activations {', '.join(allowed)}", test)


def input_storage(*allowed: str) -> Check:
    """Data inputs (not the result) are stored as one of `allowed`."""

    def test(op):
        for label, v in inputs(op):
            s = storage_of(v)
            if s not in allowed:
                return f"{label} storage {s} is not {one_of(allowed)}"
        return None

    return Check("storage", f"input {', '.join(allowed)}", test)


def same_storage() -> Check:
    """Inputs and result share one storage type (Vela: "IFM and OFM data types must match")."""

    def test(op):
        acts = activations(op)
        if not acts:
            return None
        ref_label, ref = acts[-1]
        for label, v in acts[:-1]:
            if storage_of(v) != storage_of(ref):
                return f"{label} storage {storage_of(v)} differs from {ref_label} storage {storage_of(ref)}"
        return None

    return Check("storage", "inputs and result share one storage type", test)


def per_tensor(note: str = "") -> Check:
    """No operand or result is per-axis quantized."""

    def test(op):
        values = [(operand_label(op, i), v) for i, v in enumerate(op.operands)]
        values += [("result", r) for r in op.results]
        for label, v in values:
            q = qtype(v)
            if q is not None and q.is_per_axis and q.storage not in ("i32", "i64"):
                return f"{label} is per-axis quantized (axis {q.axis}){'; ' + note if note else ''}"
        return None

    return Check("per-axis", "per-tensor quantization only", test)


def weights_per_tensor(note: str = "") -> Check:
    """The weights (operand 1) are per-tensor quantized."""

    def test(op):
        q = qtype(op.operands[1])
        if q is not None and q.is_per_axis:
            return f"{operand_label(op, 1)} is per-axis quantized (axis {q.axis}){'; ' + note if note else ''}"
        return None

    return Check("per-axis", "per-tensor weights", test)


def zero_point(value: int, when_storage: Sequence[str] = ("i16",)) -> Check:
    """Activations stored as one of `when_storage` have zero point `value`."""

    def test(op):
        for label, v in activations(op):
            q = qtype(v)
            if q is None or q.storage not in when_storage:
                continue
            zps = np.unique(q.zero_point_array())
            bad = [int(z) for z in zps if int(z) != value]
            if bad:
                return f"{label} zero point {bad[0]} is not {value} ({q.storage} kernels take no offset)"
        return None

    return Check("zero-point", f"{'/'.join(when_storage)} zero point {value}", test)


def same_params_as_result() -> Check:
    """Every data input has the result's scale and zero point (the kernel only copies)."""

    def test(op):
        out = qtype(op.results[0])
        for label, v in inputs(op):
            q = qtype(v)
            if q is None or out is None:
                continue
            if (q.scale_array().tolist(), q.zero_point_array().tolist()) != (
                out.scale_array().tolist(),
                out.zero_point_array().tolist(),
            ):
                return (
                    f"{label} scale {float(q.scale_array().reshape(-1)[0])!r} zero point "
                    f"{int(q.zero_point_array().reshape(-1)[0])} differs from the result's "
                    f"{float(out.scale_array().reshape(-1)[0])!r}:{int(out.zero_point_array().reshape(-1)[0])}"
                )
        return None

    return Check("quantization", "inputs share the result's scale and zero point", test)


# ----- weights and bias ----------------------------------------------------------------------


def weights_constant() -> Check:
    def test(op):
        if not is_constant(op.operands[1]):
            return f"{operand_label(op, 1)} is not a constant"
        return None

    return Check("weights", "constant weights", test)


def weights_storage(*allowed: str) -> Check:
    def test(op):
        s = storage_of(op.operands[1])
        if s not in allowed:
            return f"{operand_label(op, 1)} storage {s} is not {one_of(allowed)}"
        return None

    return Check("weights", f"weights {', '.join(allowed)}", test)


def weights_zero_point(value: int = 0) -> Check:
    def test(op):
        q = qtype(op.operands[1])
        if q is None:
            return None
        zps = q.zero_point_array().reshape(-1)
        for c, z in enumerate(zps):
            if int(z) != value:
                where = f" at channel {c}" if q.is_per_axis else ""
                return f"{operand_label(op, 1)} zero point {int(z)}{where} is not {value}"
        return None

    return Check("zero-point", f"weights zero point {value}", test)


def weights_abs_sum(limit: int) -> Check:
    """Per output channel, sum |w - zero_point| <= limit (Vela's accumulator saturation bound)."""

    def test(op):
        w = constant_array(op.operands[1])
        q = qtype(op.operands[1])
        if w is None or q is None:
            return None
        axis = q.axis if q.is_per_axis else (3 if isinstance(op, qnn.DepthwiseConv2DOp) else 0)
        zp = q.zero_point_array()
        centred = w.astype(np.int64) - (zp.reshape(q.qparams().broadcast_shape(w.ndim)) if q.is_per_axis else int(zp))
        other = tuple(d for d in range(w.ndim) if d != axis)
        sums = np.abs(centred).sum(axis=other)
        worst = int(np.argmax(sums))
        if int(sums[worst]) > limit:
            return f"sum of abs(weights) {int(sums[worst])} in output channel {worst} exceeds {limit}"
        return None

    return Check("weights", f"sum of abs(weights) per output channel <= {limit}", test)


def bias_storage(allowed: Sequence[str] | dict[str, Sequence[str]]) -> Check:
    """The bias (operand 2) storage: one list for every input type, or a list per input type."""

    def test(op):
        x = storage_of(op.operands[0])
        b = storage_of(op.operands[2])
        ok = allowed.get(x, ()) if isinstance(allowed, dict) else allowed
        if b not in ok:
            return f"{operand_label(op, 2)} storage {b} is not {one_of(ok) or 'supported'} for {x} inputs"
        return None

    if isinstance(allowed, dict):
        text = "; ".join(f"{k}: bias {'/'.join(v)}" for k, v in allowed.items())
    else:
        text = f"bias {'/'.join(allowed)}"
    return Check("bias", text, test)


def bias_bits(bits: int) -> Check:
    """Constant bias values fit in `bits` bits (two's complement)."""

    def test(op):
        b = constant_array(op.operands[2])
        if b is None or not b.size:
            return None
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        worst = b.astype(np.int64)
        bad = worst[(worst < lo) | (worst > hi)]
        if bad.size:
            return f"{operand_label(op, 2)} value {int(bad[0])} does not fit in {bits} bits"
        return None

    return Check("bias", f"bias fits {bits} bits", test)


# ----- knobs -------------------------------------------------------------------------------


def rounding(*allowed: str) -> Check:
    def test(op):
        if isinstance(op, QnnOp) and "rounding" in op.ATTRS:
            r = op.attr("rounding", "tflite")
            if r not in allowed:
                return f"rounding {r} is not {one_of(allowed)}"
        return None

    return Check("rounding", f"rounding={'|'.join(allowed)}", test)


def tflite_accumulator() -> Check:
    """bias in the accumulator, the accumulator width TFLite uses (i32; i64 for 16-bit), wrapping."""

    def test(op):
        if not isinstance(op, QnnOp):
            return None
        if "bias" in op.ATTRS and op.attr("bias", "accumulator") != "accumulator":
            return f"bias mode '{op.attr('bias')}' (added after requantization) is not 'accumulator'"
        if "acc" in op.ATTRS and op.attr("acc") is not None:
            wide = storage_of(op.operands[0]) in ("i16", "u16") or (
                len(op.operands) > 2 and storage_of(op.operands[2]) == "i64"
            )
            expected = "i64" if wide else "i32"
            if op.attr("acc") != expected:
                return f"accumulator {op.attr('acc')} is not the {expected} the kernels use"
        if "acc_overflow" in op.ATTRS and op.attr("acc_overflow", "wrap") != "wrap":
            return f"accumulator overflow '{op.attr('acc_overflow')}' is not 'wrap'"
        return None

    return Check("knob", "bias in accumulator, TFLite accumulator width", test)


# ----- fused activation ----------------------------------------------------------------------

_ACTIVATION_REAL = {
    "relu": (0.0, None),
    "relu6": (0.0, 6.0),
    "relu_n1_to_1": (-1.0, 1.0),
}


def activation_bounds(name: str, out: UniformQuantizedType) -> tuple[int, int]:
    """Clamp bounds TFLite computes for a fused activation (CalculateActivationRangeQuantized)."""
    lo, hi = out.storage_range()
    if name == "none":
        return lo, hi
    scale = np.float32(float(out.scale_array().reshape(-1)[0]))
    zp = int(out.zero_point_array().reshape(-1)[0])

    def quantize(f: float) -> int:
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            v = float(np.float32(f) / scale)
        v = min(max(v, -(2.0**40)), 2.0**40)
        return zp + int(round_half_away(v))

    low, high = _ACTIVATION_REAL[name]
    return max(lo, quantize(low)), hi if high is None else min(hi, quantize(high))


def activation(*allowed: str) -> Check:
    """The clamp bounds are those of one of the fused activations in `allowed` (or none)."""

    def test(op):
        if not (isinstance(op, QnnOp) and "act_min" in op.ATTRS) or not op.results:
            return None
        out = qtype(op.results[0])
        if out is None or out.is_per_axis:
            return None
        bounds = op.clamp_bounds()
        if any(activation_bounds(name, out) == bounds for name in allowed):
            return None
        return f"clamp [{bounds[0]}, {bounds[1]}] matches no fused activation ({', '.join(allowed)})"

    return Check("activation", f"fused activation {', '.join(allowed)}", test)


# ----- windows ----------------------------------------------------------------------------------


def stride(lo: int, hi: int, whole_input_window: bool = False) -> Check:
    """Strides in [lo, hi]; with `whole_input_window`, an unpadded window as large as the
    input (one output position, stride irrelevant) passes whatever its stride."""

    def test(op):
        s = op.attr("strides", [1, 1])
        if all(lo <= v <= hi for v in s):
            return None
        if whole_input_window and not _is_padded(op):
            k = _spatial_kernel(op)
            if k is not None and tuple(shape_of(op.operands[0])[1:3]) == k:
                return None
        return f"stride {_pair(s)} is outside {_fmt_range(lo, hi)}"

    extra = " (or one window over the whole input)" if whole_input_window else ""
    return Check("stride", f"stride {_fmt_range(lo, hi)}{extra}", test)


def dilation(lo: int, hi: int) -> Check:
    def test(op):
        d = op.attr("dilations", [1, 1])
        if not all(lo <= v <= hi for v in d):
            return f"dilation {_pair(d)} is outside {_fmt_range(lo, hi)}"
        return None

    return Check("dilation", f"dilation {_fmt_range(lo, hi)}", test)


def kernel(
    height: tuple[int, int] | None = None,
    width: tuple[int, int] | None = None,
    area: tuple[int, int] | None = None,
    dilated: bool = False,
    padding: str | None = None,
) -> Check:
    """Kernel size limits; `dilated` measures the dilated extent; `padding` = "same"/"valid"
    applies the limit only to padded / unpadded windows."""

    def test(op):
        if padding == "same" and not _is_padded(op):
            return None
        if padding == "valid" and _is_padded(op):
            return None
        k = _spatial_kernel(op)
        if k is None:
            return None
        kh, kw = k
        if dilated:
            dh, dw = op.attr("dilations", [1, 1])
            kh, kw = (kh - 1) * dh + 1, (kw - 1) * dw + 1
        what = f"{'dilated ' if dilated else ''}kernel {kh}x{kw}"
        where = f" with {padding} padding" if padding else ""
        if height and not height[0] <= kh <= height[1]:
            return f"{what} height {kh} is outside {_fmt_range(*height)}{where}"
        if width and not width[0] <= kw <= width[1]:
            return f"{what} width {kw} is outside {_fmt_range(*width)}{where}"
        if area and not area[0] <= kh * kw <= area[1]:
            return f"{what} area {kh * kw} is outside {_fmt_range(*area)}{where}"
        return None

    parts = []
    if height:
        parts.append(f"height {_fmt_range(*height)}")
    if width:
        parts.append(f"width {_fmt_range(*width)}")
    if area:
        parts.append(f"area {_fmt_range(*area)}")
    text = f"{'dilated ' if dilated else ''}kernel {', '.join(parts)}{f' ({padding} padding)' if padding else ''}"
    return Check("kernel", text, test)


# ----- shapes ------------------------------------------------------------------------------------


def max_rank(rank: int) -> Check:
    def test(op):
        for label, v in activations(op):
            s = shape_of(v)
            if len(s) > rank:
                return f"{label} rank {len(s)} is above {rank}"
        return None

    return Check("shape", f"rank <= {rank}", test)


def dims(lo: int, hi: int) -> Check:
    def test(op):
        for label, v in activations(op):
            s = shape_of(v)
            if any(not lo <= d <= hi for d in s):
                return f"{label} shape {list(s)} has a dimension outside {_fmt_range(lo, hi)}"
        return None

    return Check("shape", f"dimensions {_fmt_range(lo, hi)}", test)


def batch(n: int = 1) -> Check:
    """4-D data inputs have batch `n`."""

    def test(op):
        for label, v in inputs(op):
            s = shape_of(v)
            if len(s) == 4 and s[0] != n:
                return f"{label} batch {s[0]} is not {n}"
        return None

    return Check("shape", f"batch {n}", test)


def result_rank(rank: int) -> Check:
    def test(op):
        s = shape_of(op.results[0])
        if len(s) != rank:
            return f"result rank {len(s)} is not {rank}"
        return None

    return Check("shape", f"result rank {rank}", test)


def rank_in(*ranks: int) -> Check:
    def test(op):
        s = shape_of(op.operands[0])
        if len(s) not in ranks:
            return f"{operand_label(op, 0)} rank {len(s)} is not {' or '.join(map(str, ranks))}"
        return None

    return Check("shape", f"input rank {'/'.join(map(str, ranks))}", test)


def depth_multiplier_one_channel() -> Check:
    """Depthwise with multiplier > 1 needs 1 input channel (Vela)."""

    def test(op):
        c = shape_of(op.operands[0])[3]
        oc = shape_of(op.operands[1])[3]
        m = oc // c if c else 0
        if m > 1 and c != 1:
            return f"depth multiplier {m} needs 1 input channel, got {c}"
        return None

    return Check("shape", "depth multiplier 1, or 1 input channel", test)


def one_input_matches_result() -> Check:
    def test(op):
        out = tuple(shape_of(op.results[0]))
        if not any(tuple(shape_of(v)) == out for _, v in inputs(op)):
            return f"no input has the result shape {list(out)}"
        return None

    return Check("broadcast", "one input has the result shape", test)


def broadcast_ones_only() -> Check:
    """Trailing-aligned dimensions match, or one of them is 1 (Vela's broadcast rule)."""

    def test(op):
        shapes = [shape_of(v) for _, v in inputs(op)]
        if len(shapes) != 2:
            return None
        a, b = shapes
        n = min(len(a), len(b))
        for i in range(1, n + 1):
            x, y = a[-i], b[-i]
            if x != y and 1 not in (x, y):
                return f"operand shapes {list(a)} and {list(b)} differ in a dimension that is not 1"
        return None

    return Check("broadcast", "broadcast only along dimensions of 1", test)


def no_broadcast() -> Check:
    def test(op):
        out = list(shape_of(op.results[0]))
        for label, v in inputs(op):
            if list(shape_of(v)) != out:
                return f"{label} shape {list(shape_of(v))} is broadcast to {out}; the kernels take equal shapes"
        return None

    return Check("broadcast", "no broadcasting", test)


# ----- attributes ------------------------------------------------------------------------------


def attribute(name: str, default, predicate: Callable[[object], bool], text: str) -> Check:
    """A named attribute (or its default) satisfies `predicate`; `text` says how, e.g. ">= 0"."""

    def test(op):
        value = op.attr(name, default)
        if not predicate(value):
            return f"{name} {value} is not {text}"
        return None

    return Check("attribute", f"{name} {text}", test)


def pad_value_is_zero_point() -> Check:
    def test(op):
        if "pad_value" not in op.attributes:
            return None
        zp = int(qtype(op.operands[0]).zero_point_array().reshape(-1)[0])
        if op.attr("pad_value") != zp:
            return f"pad_value {op.attr('pad_value')} is not the zero point {zp}"
        return None

    return Check("attribute", "pads with the zero point", test)


def pads_height_width_only() -> Check:
    """Only the H and W dimensions of a 3-D (HWC) or 4-D (NHWC) tensor are padded."""

    def test(op):
        p = op.attr("paddings")
        rank = len(p) // 2
        spatial = {rank - 3, rank - 2}
        for d in range(rank):
            if d not in spatial and (p[2 * d] or p[2 * d + 1]):
                return f"paddings pad dimension {d}; only height and width may be padded"
        return None

    return Check("attribute", "pads height and width only", test)


def reduce_axes_height_width() -> Check:
    def test(op):
        rank = len(shape_of(op.operands[0]))
        axes = sorted({a % rank for a in op.attr("axes")})
        allowed = {0, 1} if rank in (2, 3) else {1, 2}
        if not set(axes) <= allowed:
            return f"axes {axes} are not the height and width axes {sorted(allowed)}"
        return None

    return Check("attribute", "reduces height and/or width", test)


def reduced_size(by_storage: dict[str, int]) -> Check:
    def test(op):
        s = shape_of(op.operands[0])
        rank = len(s)
        axes = sorted({a % rank for a in op.attr("axes")})
        n = int(np.prod([s[a] for a in axes]))
        limit = by_storage.get(storage_of(op.operands[0]))
        if limit is not None and n > limit:
            return f"{n} reduced elements exceed {limit} for {storage_of(op.operands[0])}"
        return None

    text = ", ".join(f"{k} <= {v}" for k, v in by_storage.items())
    return Check("shape", f"reduced elements {text}", test)


def transpose_swaps_supported() -> Check:
    """Vela's transposes: WxC->CxW, HxWxC->WxHxC (and with a leading 1)."""

    def test(op):
        s = list(shape_of(op.operands[0]))
        p = list(op.attr("perm"))
        ok = len(s) == 2
        if len(s) == 3:
            ok = p[:2] == [1, 0] or (s[0] == 1 and p[1:] == [2, 1]) or (s[1] == 1 and p[0] == 2 and p[2] == 0)
        if len(s) == 4:
            ok = (p[0] == 0 and p[1] == 2 and p[2] == 1) or (s[1] == 1 and p[0] == 0 and p[2:] == [3, 2]) or (
                s[2] == 1 and p[0] == 0 and p[1] == 3 and p[3] == 1
            )
        if not ok:
            return f"perm {p} of shape {s} is not a height/width or width/channel swap"
        return None

    return Check("attribute", "swaps H/W or W/C only", test)


# ----- Vela 5.2 (Ethos-U) ---------------------------------------------------------------------


def _shape4(value: SSAValue) -> tuple[int, int, int, int]:
    """A shape as Vela's Shape4D sees it: leading 1s up to rank 4, extra leading dims folded into N."""
    s = [int(d) for d in shape_of(value)]
    if len(s) < 4:
        s = [1] * (4 - len(s)) + s
    if len(s) > 4:
        s = [int(np.prod(s[:-3]))] + s[-3:]
    return tuple(s)  # type: ignore[return-value]


def per_axis_only_on(weighted: bool = True, note: str = "") -> Check:
    """Per-axis quantization only on the weights, bias and result of a weighted op (else nowhere)."""

    def test(op):
        values = [(operand_label(op, i), v) for i, v in enumerate(op.operands)]
        values += [("result", r) for r in op.results]
        for i, (label, v) in enumerate(values):
            q = qtype(v)
            if q is None or not q.is_per_axis:
                continue
            if weighted and isinstance(op, WEIGHTED) and label != operand_label(op, 0):
                continue
            return f"{label} is per-axis quantized (axis {q.axis}){'; ' + note if note else ''}"
        return None

    return Check("per-axis", "per-axis quantization only on weights / bias" if weighted else "per-tensor only", test)


def unsigned_zero_points() -> Check:
    """u8 / u16 zero points are non-negative, i32 ones 0 (Vela U55/U65 generic rule)."""

    def test(op):
        for label, v in activations(op):
            q = qtype(v)
            if q is None:
                continue
            for z in np.unique(q.zero_point_array()):
                if q.storage == "i32" and int(z) != 0:
                    return f"{label} zero point {int(z)} is not 0 for i32"
                if q.storage.startswith("u") and int(z) < 0:
                    return f"{label} zero point {int(z)} is negative for {q.storage}"
        return None

    return Check("zero-point", "u8 zero points >= 0, i32 zero points 0", test)


def u85_zero_points() -> Check:
    """Ethos-U85: input zero points in the 8-bit range (0 for i16 / i32, 0 or 32768 for u16);
    result zero points in [-128, 127] signed, [0, 255] or 32768 unsigned."""

    def test(op):
        for label, v in activations(op):
            q = qtype(v)
            if q is None:
                continue
            result = label.startswith("result")
            for z in (int(z) for z in np.unique(q.zero_point_array())):
                s = q.storage
                if result:
                    ok = (-128 <= z <= 127) if s.startswith("i") else (0 <= z <= 255 or z == 32768)
                elif s == "i8":
                    ok = -128 <= z <= 127
                elif s == "u8":
                    ok = 0 <= z <= 255
                elif s == "u16":
                    ok = z in (0, 32768)
                else:
                    ok = z == 0
                if not ok:
                    return f"{label} zero point {z} is outside what the U85 takes for {s}"
        return None

    return Check("zero-point", "input zero points 8-bit range (0 for i16/i32), result zero points 8-bit range", test)


def stride_over_3_valid_only() -> Check:
    """Strides above 3 only without padding and dilation (Vela: 'Stride>3 is only supported IF
    (dilation = 1 AND padding = VALID)')."""

    def test(op):
        s = op.attr("strides", [1, 1])
        if all(1 <= v <= 3 for v in s):
            return None
        if _is_padded(op):
            return f"stride {_pair(s)} is above 3 with padding"
        if any(d != 1 for d in op.attr("dilations", [1, 1]) or [1, 1]):
            return f"stride {_pair(s)} is above 3 with dilation {_pair(op.attr('dilations'))}"
        return None

    return Check("stride", "stride > 3 only unpadded and undilated", test)


def int64_bias_below(limit: int) -> Check:
    """An i64 bias stays below `limit` in magnitude (Vela: 'Int64 bias must be smaller than ...')."""

    def test(op):
        if storage_of(op.operands[2]) != "i64":
            return None
        b = constant_array(op.operands[2])
        if b is None or not b.size:
            return None
        worst = int(np.abs(b.astype(np.int64)).max())
        if worst >= limit:
            return f"{operand_label(op, 2)} value {worst} is not smaller than {limit}"
        return None

    return Check("bias", f"i64 bias < {limit}", test)


def bias_constant() -> Check:
    def test(op):
        if len(op.operands) > 2 and not is_constant(op.operands[2]):
            return f"{operand_label(op, 2)} is not a constant"
        return None

    return Check("bias", "constant bias", test)


def weights_abs_sum_by_input(limits: dict[str, int]) -> Check:
    """`weights_abs_sum` with the limit chosen by the input's storage width (8 or 16 bit)."""
    inner = {k: weights_abs_sum(v) for k, v in limits.items()}

    def test(op):
        width = "16" if storage_of(op.operands[0]) in ("i16", "u16") else "8"
        check = inner.get(width)
        return check(op) if check is not None else None

    text = ", ".join(f"{k}-bit input <= {v}" for k, v in limits.items())
    return Check("weights", f"sum of abs(weights) per output channel: {text}", test)


def dynamic_weights_matmul(limit: int = 2**16) -> Check:
    """A matmul, or a fully connected with run-time weights: int8 input, result depth and reduced
    axis <= `limit` (Vela's 'IF Matmul or (FC with dynamic weights)' rules)."""

    def test(op):
        if isinstance(op, qnn.FullyConnectedOp) and is_constant(op.operands[1]):
            return None
        s = storage_of(op.operands[0])
        if s != "i8":
            return f"{operand_label(op, 0)} storage {s} is not i8 (matmul / run-time weights)"
        depth = int(shape_of(op.results[0])[-1])
        if depth > limit:
            return f"result depth {depth} exceeds {limit} (matmul / run-time weights)"
        if isinstance(op, qnn.BatchMatmulOp):
            a = shape_of(op.operands[0])
            k = int(a[-2] if op.attr("adj_x", False) else a[-1])
        else:
            k = int(shape_of(op.operands[0])[-1])
        if k > limit:
            return f"reduced axis {k} exceeds {limit} (matmul / run-time weights)"
        return None

    return Check("shape", f"matmul: i8 input, depth and reduced axis <= {limit}", test)


def params_match_result() -> Check:
    """Both inputs have the result's scale and zero point (Vela MAXIMUM / MINIMUM)."""
    inner = same_params_as_result()
    return Check("quantization", "inputs share the result's scale and zero point", inner.test)


def hw_product_at_most(limit: int) -> Check:
    """Input height x width (Vela's NHWC view) <= `limit` (SOFTMAX; Vela's report says "less
    than 65536", Vela 5.2 takes exactly 65536 and refuses 65537)."""

    def test(op):
        _, h, w, _ = _shape4(op.operands[0])
        if h * w > limit:
            return f"input height x width {h}x{w} = {h * w} is above {limit}"
        return None

    return Check("shape", f"input height x width <= {limit}", test)


def same_shape_as_result() -> Check:
    def test(op):
        a, b = list(shape_of(op.operands[0])), list(shape_of(op.results[0]))
        if a != b:
            return f"input shape {a} differs from the result shape {b}"
        return None

    return Check("shape", "input and result shapes match", test)


def mean_vela() -> Check:
    """Vela's MEAN rules: batch 1, no reduced axis of 4096 or more, depth reduced only if one
    of H, W, C is 1, and at most 2^24 (i8) / 2^23 (u8) / 2^16 (i16) reduced elements."""
    limits = {"i8": 2**24, "u8": 2**23, "i16": 2**16}

    def test(op):
        s = list(shape_of(op.operands[0]))
        rank = len(s)
        axes = sorted({a % rank for a in op.attr("axes")})
        n, h, w, c = _shape4(op.operands[0])
        if n != 1:
            return f"batch {n} is not 1"
        for a in axes:
            if s[a] >= 4096:
                return f"reduced axis {a} of size {s[a]} is not below 4096"
        if rank - 1 in axes and 1 not in (h, w, c):
            return f"reduces the depth axis of shape {s} (H, W and C all above 1)"
        count = int(np.prod([s[a] for a in axes]))
        limit = limits.get(storage_of(op.operands[0]))
        if limit is not None and count > limit:
            return f"{count} reduced elements exceed {limit} for {storage_of(op.operands[0])}"
        return None

    return Check("shape", "batch 1, reduced axes < 4096, depth only if H, W or C is 1, reduced elements i8 2^24 / u8 2^23 / i16 2^16", test)


def slice_strides_vela() -> Check:
    """Strides positive, and above 1 only over height or width (Vela STRIDED_SLICE)."""

    def test(op):
        st = list(op.attr("strides"))
        rank = len(st)
        for a, v in enumerate(st):
            if v < 1:
                return f"stride {v} on axis {a} is not positive"
            if v > 1 and a not in (rank - 3, rank - 2):
                return f"stride {v} on axis {a}, which is not height or width"
        return None

    return Check("stride", "strides positive, > 1 only over height / width", test)


def transpose_vela_u55() -> Check:
    """Vela U55/U65 TRANSPOSE (8/16-bit): the permutation's shape limits."""

    def test(op):
        s = [int(d) for d in shape_of(op.operands[0])]
        p = list(op.attr("perm"))
        rank = len(s)
        if rank > 8:
            return f"rank {rank} is above 8"
        if storage_of(op.operands[0]) in ("i32", "u32"):
            return "32-bit transposes are left to the CPU here"
        if p == list(range(rank)):
            return None
        outer = p[: rank - 3] == list(range(rank - 3)) and all(d == 1 for d in s[: rank - 3])
        if rank >= 3 and outer:
            if all(d <= 2**16 for d in s[-3:]):
                return None
            return f"shape {s} has an H/W/C above 2^16"
        if rank < 3:
            return None if all(d <= 2**16 for d in s) else f"shape {s} has a dimension above 2^16"
        from itertools import combinations

        for combo in combinations(range(rank), rank - 2):
            prod = int(np.prod([s[i] for i in combo]))
            if prod > 2**16:
                return f"perm {p} of shape {s}: product of axes {list(combo)} is {prod}, above 2^16"
        return None

    return Check("attribute", "perm of H/W/C within 2^16 per axis, else products of N-2 axes <= 2^16", test)


def transpose_conv_vela(u85: bool = False) -> Check:
    """TRANSPOSE_CONV: result = input * stride (same padding) or input * stride + kernel - stride
    (valid); U55/U65 strides 1x1, 2x2, 2x1 / 1x2 only with a height / width of 1."""

    def test(op):
        sh, sw = op.attr("strides", [1, 1])
        _, ih, iw, _ = _shape4(op.operands[0])
        _, oh, ow, _ = _shape4(op.results[0])
        _, kh, kw, _ = [int(d) for d in shape_of(op.operands[1])]
        if not u85:
            ok = (sh, sw) in ((1, 1), (2, 2)) or (
                (sh, sw) == (1, 2) and ih == 1 and kh == 1) or ((sh, sw) == (2, 1) and iw == 1 and kw == 1)
            if not ok:
                return f"stride {sh}x{sw} is not 1x1, 2x2 (or 2x1 / 1x2 over a dimension of 1)"
        same = (oh, ow) == (ih * sh, iw * sw)
        valid = (oh, ow) == (ih * sh + max(kh - sh, 0), iw * sw + max(kw - sw, 0))
        if not (same or valid):
            return f"result {oh}x{ow} is neither input x stride nor input x stride + kernel - stride"
        return None

    return Check("shape", "result = input x stride (+ kernel - stride)" + ("" if u85 else "; stride 1x1, 2x2, 2x1, 1x2"), test)


def resize_vela(nearest: bool, u85: bool = False) -> Check:
    """Vela's RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR scale-factor rules."""

    def test(op):
        _, ih, iw, _ = _shape4(op.operands[0])
        _, oh, ow, _ = _shape4(op.results[0])
        align = bool(op.attr("align_corners", False))
        half = bool(op.attr("half_pixel_centers", False))
        if u85:
            if align and half:
                return "align_corners and half_pixel_centers together"
            cap = 2048 if align else 1024
            for i, o in ((ih, oh), (iw, ow)):
                f = (o - 1) / (i - 1) if align and i > 1 else o / i
                if f > cap:
                    return f"scale factor {f:g} is above {cap}"
                if not nearest and o > i and (f != int(f) or int(f) & (int(f) - 1)):
                    return f"scale factor {f:g} is not a power of two"
            return None
        if (ih == iw == 1) or (ih, iw) == (oh, ow):
            return None

        def factor(i, o):
            return (o - 1) / (i - 1) if align and i > 1 else o / i

        fh, fw = factor(ih, oh), factor(iw, ow)
        if fh != fw:
            if not ((oh == 1 and fh == 1) or (ow == 1 and fw == 1) or (oh == 1 and ih == 1) or (ow == 1 and iw == 1)):
                return f"scale factors {fh:g} (height) and {fw:g} (width) differ"
            f = fw if fh == 1 else fh
        else:
            f = fh
        allowed = (2,) if (half and not nearest) else (2, 4, 8)
        if f not in allowed:
            return f"scale factor {f:g} is not {' / '.join(f'{a}x' for a in allowed)}"
        return None

    return Check("shape", "scale factor 2x/4x/8x, equal in height and width", test)


def arg_max_vela() -> Check:
    def test(op):
        rank = len(shape_of(op.operands[0]))
        if op.attr("axis") % rank != rank - 1:
            return f"axis {op.attr('axis')} is not the depth axis"
        depth = int(shape_of(op.operands[0])[-1])
        if depth > 127:
            return f"input depth {depth} is above 127"
        return None

    return Check("attribute", "along depth, depth <= 127", test)


def gather_axis_is_batch_dims() -> Check:
    def test(op):
        axis, bd = op.attr("axis", 0), op.attr("batch_dims", 0)
        rank = len(shape_of(op.operands[0]))
        if axis % rank != bd:
            return f"axis {axis} is not batch_dims {bd}"
        return None

    return Check("attribute", "axis == batch_dims", test)


def scales_below(limit: float, spelled: str | None = None) -> Check:
    """Every quantized operand's and result's scale (as float32) is below `limit`: Vela 5.2
    leaves ops with a tensor scale of 2^32 or more to the CPU (found by probing; undocumented)."""

    def test(op):
        values = [(operand_label(op, i), v) for i, v in enumerate(op.operands)]
        values += [("result" if len(op.results) == 1 else f"result {k}", r) for k, r in enumerate(op.results)]
        for label, v in values:
            q = qtype(v)
            if q is None:
                continue
            s = float(np.max(q.scale_array().astype(np.float32)))
            if s >= limit:
                return f"{label} scale {s:.6g} is not below {limit:.6g}"
        return None

    return Check("quantization", f"tensor scales < {spelled or f'{limit:g}'}", test)


def plain_storage(*allowed: str) -> Check:
    """Every operand and result of an `nn` op (plain, unquantized tensors) has one of the
    element types `allowed` (`i1` for bool): floats stay on the host."""

    def test(op):
        values = [(operand_label(op, i), v) for i, v in enumerate(op.operands)]
        values += [("result", r) for r in op.results]
        for label, v in values:
            s = storage_of(v)
            if s not in allowed:
                return f"{label} element type {s} is not {one_of(allowed)}"
        return None

    return Check("storage", f"element types {', '.join(allowed)}", test)
