"""`qnn-decompose` (L1 -> L2): fused quantized ops -> integer primitives + one rescale.

Every `qnn` op becomes `qint` ops on plain signless integer tensors (stored
integers), and the function signatures become integer tensors too: an input
`tensor<1x8x!quant.uniform<i8:f32, 0.5:3>>` is `tensor<1x8xi8>` at L2 (u8
storage travels as i8 bits).  While the pass runs, `quant.scast` bridges
rewritten and not-yet-rewritten ops; when every op is rewritten the casts cancel
and the signature is converted.  What rewrites into what:

| L1 op | L2 |
|---|---|
| qnn.conv2d / depthwise_conv2d / fully_connected | qint.conv2d / depthwise_conv2d / fully_connected (zero points explicit, accumulator of the `acc` width) -> qint.bias_add -> qint.rescale (per-channel multiplier) |
| ... with `bias = "output"` | rescale(acc) and rescale(bias) to i64, qint.bias_add, qint.rescale mode none (zero point, clamp) |
| qnn.batch_matmul | linalg.transpose for adj_x / adj_y -> qint.batch_matmul (both zero points, i32; i64 for 16-bit) -> qint.rescale (multiplier of f32(a_s * b_s) / out_s; `litert`, int8 with rhs zero point 0: XNNPACK's float32 scale) |
| qnn.squared_difference (int8) | qint.rescale (`<< 7`, s_i / 2max) x2 -> qint.sub -> qint.mul (the square, i32) -> qint.rescale |
| qnn.add / sub | qint.rescale (left_shift 20 / 15, per-input multiplier) x2 -> qint.add / sub (i32) -> qint.rescale; `litert` where XNNPACK takes the scales: one qint.scaled_add (XNNPACK's single-rounding fused add) |
| qnn.mul | qint.mul (zero points, i32) -> qint.rescale |
| qnn.requantize / clamp | qint.rescale |
| qnn.maximum / minimum | qint.maximum / minimum (+ clamp) |
| qnn.logistic / tanh / elu / hard_swish / leaky_relu / gelu / exp / rsqrt / sqrt / abs / neg (<= 16-bit input) | qint.table: the L1 op evaluated on every stored value at compile time |
| an elementwise graph of those, requantize / clamp and same-shape add / sub / mul / maximum / minimum / squared_difference reached from one 8-bit tensor (EfficientNet's swish `mul(x, logistic(x))`, `x * x`) | one qint.table over that tensor: the graph evaluated op by op on its 256 stored values (`transforms/byte_tables.py`, before the op-by-op rewrites) |
| qnn.avg_pool2d | qint.pool_sum -> qint.divide_round by the in-bounds counts -> clamp |
| qnn.max_pool2d | qint.pool_max (+ clamp) |
| qnn.mean / sum | qint.reduce_sum (i32) -> qint.rescale (input_zp = zp * N; mean's adjusted multiplier); 8-bit `litert`: rescale float_even with XNNPACK's float32 scale and zero-point offset |
| qnn.reduce_max / reduce_min | qint.reduce_max / reduce_min |
| qnn.gather_nd | one generic over the result: tensor.extract of params at the (clamped) indices and linalg.index (L3 directly) |
| qnn.arg_max / arg_min | the extreme (a reduction), then a min-reduction of `x == extreme ? linalg.index : type max` (L3 directly; the first index, as TFLite) |
| qnn.softmax | qint.softmax (TFLite's recipe with its integer parameters; 8-bit `litert` / `half_even`: the optimized kernel's float exp table recipe, mode float_away / float_even) |
| qnn.reshape / transpose / pad / slice / split / concatenation / tile / mirror_pad | tensor.collapse_shape / expand_shape, linalg.transpose, tensor.pad, tensor.extract_slice, tensor.concat (tile: one per repeated dimension; mirror_pad: the mirrored slices reversed by a linalg.generic and concatenated; same stored integers) |
| qnn.constant | arith.constant dense<"0x..."> of the storage integer type |

The knobs shape the result: `rounding` picks the rescale mode (`tflite`:
double_round, or float_away for fully_connected whose reference kernel
requantizes in double; `single` / `half_up`: single_round; `half_even`:
float_even; `litert`: float_even with XNNPACK's float32 scale where LiteRT
takes the op, else as `tflite` -- where LiteRT's fallback, TFLite's optimized
8-bit ADD / MUL / Requantize, could differ from the reference by element
position, the pass asks the reference on every stored value and refuses the
op unless they agree), `acc` the accumulator width, `bias` where the
bias is added.  Multipliers come from `qdialect.reference` (QuantizeMultiplier
on the same reals the reference kernels form), so L2 equals L1 bit for bit.

Anything the pass cannot express exactly is refused, every such op named at
once; nothing is approximated.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, tensor
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.builtin import (
    ModuleOp,
    TensorType,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.utils.exceptions import PassFailedException

from qdialect import cyclic_gc
from qdialect.dialects import qint, qnn
from qdialect.io_types import mark_unsigned_edges
from transforms.call_signatures import ConvertCallToStorage
from transforms.fast_ir import all_ops, create_op, dense_attr, rewrite_greedy
from qdialect.dialects.quant import (
    StorageCastOp,
    UniformQuantizedType,
    is_subclass,
    quantized_element_type,
)
from qdialect.qparams import QParams
from qdialect.reference import activations as act
from qdialect.reference import elementwise as ew
from qdialect.reference import linear, pooling
from qdialect.reference.rescale import quantize_multiplier, quantize_multiplier_scalar
from transforms.decompositions import DECOMPOSITIONS, load_extensions
# the shared building blocks (also read from here by the decompositions of other modules)
from transforms.emit import (  # noqa: F401 - dense_constant: re-exported
    Emitter,
    Unsupported,
    dense_constant,
    int_tensor,
    pad_op,
    scalar_constant,
    storage_type,
)
from transforms.linalg_build import Lowering, amap, broadcast_map, dim, identity, reduce, signed_max


def qp(value: SSAValue) -> QParams:
    q = quantized_element_type(value.type)
    if q is None:
        raise Unsupported(f"operand type {value.type} is not quantized")
    return q.qparams()


def width_of(q: QParams) -> int:
    return q.bits


_CLAMPS: dict[tuple, tuple[int, int]] = {}


def clamp_bounds(finish, out_q: QParams, act_min, act_max) -> tuple[int, int]:
    """The clamp a reference `_finish` applies: act bounds within storage and type range.

    Remembered per `out_q` object (a QParams is compared and hashed by identity, and a
    type's is made once: `UniformQuantizedType.qparams`), as numpy on two values costs
    more than the rest of a rescale's parameters."""
    key = (finish, out_q, act_min, act_max)
    hit = _CLAMPS.get(key)
    if hit is None:
        lo, hi = finish(np.array([-(1 << 62), 1 << 62], dtype=np.int64), out_q, act_min, act_max)
        hit = (int(lo), int(hi))
        if len(_CLAMPS) > 4096:  # bounded across the models of a long-lived process
            _CLAMPS.clear()
        _CLAMPS[key] = hit  # (the key keeps out_q alive)
    return hit


def full_range(out_q: QParams) -> tuple[int, int]:
    return ew.type_bounds(out_q)


def _signed(*qs: QParams, what: str):
    for q in qs:
        if not q.signed:
            raise Unsupported(f"{what} with unsigned storage {q.storage}")


def _per_tensor(q: QParams, what: str):
    if q.per_axis:
        raise Unsupported(f"{what} with per-axis parameters")


# ----- rescale parameters, as the reference forms them --------------------------------------------


def integer_spec(real, rounding: str, *, wide: bool = False) -> dict:
    """(multiplier, shift) rescale of `real` (a scalar or one per channel) for an integer
    profile: quantize_multiplier (tflite) or linear._qmult, value by value in Python ints
    (numpy's calls cost more than the arithmetic on a few values)."""
    if rounding not in ("tflite", "single", "half_up"):
        raise Unsupported(f"rounding '{rounding}' here")
    reals = [float(real)] if isinstance(real, float) else np.asarray(real, dtype=np.float64).reshape(-1).tolist()
    pairs = [quantize_multiplier_scalar(r, rounding) for r in reals]
    if rounding == "tflite":
        mode = "wide_round" if wide else "double_round"
    else:
        if wide and rounding == "half_up":
            raise Unsupported("rounding 'half_up' with a 64-bit accumulator")
        mode = "wide_round" if wide else "single_round"
    if any(m < 0 for m, _ in pairs):
        raise Unsupported("a negative multiplier")
    return {"mode": mode, "multiplier": [m for m, _ in pairs], "shift": [s for _, s in pairs]}


def float_spec(scale, mode: str = "float_even") -> dict:
    arr = np.atleast_1d(np.asarray(scale, dtype=np.float64))
    if mode == "float_even":
        arr = arr.astype(np.float32).astype(np.float64)
    return {"mode": mode, "scale": arr.tolist()}


def accumulator_spec(rounding: str, reals, *, float_ref=False, wide=False, xnn=True) -> dict:
    """The rescale of linear._rescale for the accumulating ops (same branches)."""
    real_double, real_int, xnn_scale = reals
    if rounding == "litert":
        if xnn:
            return float_spec(np.asarray(xnn_scale, dtype=np.float32))
        rounding = "tflite"
    if rounding == "tflite":
        if float_ref:
            return float_spec(real_double, "float_away")
        return integer_spec(real_int, "tflite", wide=wide)
    if rounding in ("single", "half_up"):
        return integer_spec(real_int, rounding, wide=wide)
    if rounding == "half_even":
        return float_spec(real_double)
    raise Unsupported(f"rounding '{rounding}'")


def knobs(op: qnn.QnnOp) -> dict:
    """The knobs the L1 interpreter uses for this op (absent acc: TFLite's width)."""
    return _interpreter().knobs(op)


@functools.cache
def _interpreter():
    """An interpreter without a module or rounding override (`knobs` only reads those),
    made once instead of per op."""
    from qdialect.interpreter import Interpreter

    return Interpreter(None)


# ----- accumulating ops ------------------------------------------------------------------------


def _weight_zero_point(w_q: QParams) -> int:
    zps = set(np.asarray(w_q.zero_point).reshape(-1).tolist())  # (np.unique sorts: slower on a few)
    if len(zps) != 1:
        raise Unsupported("per-channel weight zero points that differ")
    return zps.pop()


def _bias_width(bias: SSAValue) -> int:
    t = bias.type
    q = quantized_element_type(t)
    return q.storage_width.data if q is not None else t.element_type.width.data


def _accumulating(e: Emitter, op, acc_value_fn, *, channels: int, reals, float_ref: bool, xnn: bool,
                  bias: SSAValue | None, x_q: QParams, out_q: QParams) -> SSAValue:
    k = knobs(op)
    bias_dtype = np.int64 if bias is not None and _bias_width(bias) == 64 else np.int32
    acc = linear._default_acc(k["acc"], None if bias is None else np.zeros(0, bias_dtype), x_q)
    if k["acc_overflow"] == "saturate" and acc != "i64":
        raise Unsupported("acc_overflow = 'saturate' (the sum saturates in loop order)")
    acc_width = linear._ACC_BITS[acc]
    wide = acc == "i64"
    spec = accumulator_spec(k["rounding"], reals, float_ref=float_ref, wide=wide, xnn=xnn)
    if spec["mode"] == "single_round" and acc_width > 32:
        raise Unsupported("single rounding of a 64-bit accumulator")
    accv = acc_value_fn(acc_width)
    b = e.storage(bias) if bias is not None else None
    bounds = clamp_bounds(linear._finish, out_q, k["act_min"], k["act_max"])
    zp_out = int(out_q.zero_point)
    if b is not None and k["bias_mode"] == "accumulator":
        accv = e.qint(qint.BiasAddOp, [accv, b], accv.type)
    if b is None or k["bias_mode"] == "accumulator":
        return e.rescale(accv, out_q.bits, spec, output_zp=zp_out, bounds=bounds)
    # bias = output: requantize the bias on its own and add it after the accumulator's rescale
    r_acc = e.rescale(accv, 64, spec)
    r_bias = e.rescale(b, 64, spec)
    total = e.qint(qint.BiasAddOp, [r_acc, r_bias], r_acc.type)
    return e.rescale(total, out_q.bits, {"mode": "none"}, output_zp=zp_out, bounds=bounds)


def decompose_conv2d(e: Emitter, op: qnn.Conv2DOp) -> SSAValue:
    xv, wv, bv = op.operands
    x_q, w_q, out_q = qp(xv), qp(wv), qp(op.results[0])
    _signed(x_q, w_q, what="qnn.conv2d")
    oc, _, _, ci = qint.shape_of(wv)
    if qint.shape_of(xv)[3] != ci:
        raise Unsupported("grouped convolution")
    x, w = e.storage(xv), e.storage(wv)
    attrs = dict(input_zp=int(x_q.zero_point), weight_zp=_weight_zero_point(w_q),
                 strides=op.attr("strides", [1, 1]), dilations=op.attr("dilations", [1, 1]),
                 padding=op.attr("padding", [0, 0, 0, 0]))
    shape = qint.shape_of(op.results[0])
    reals = linear._conv_reals(x_q, linear._channel_scales(w_q, oc), out_q, float_product=False)
    return _accumulating(
        e, op, lambda width: e.qint(qint.Conv2DOp, [x, w], int_tensor(shape, width), **attrs),
        channels=oc, reals=reals, float_ref=False, xnn=linear._xnn_takes(x_q), bias=bv, x_q=x_q, out_q=out_q)


def decompose_depthwise(e: Emitter, op: qnn.DepthwiseConv2DOp) -> SSAValue:
    xv, wv, bv = op.operands
    x_q, w_q, out_q = qp(xv), qp(wv), qp(op.results[0])
    _signed(x_q, w_q, what="qnn.depthwise_conv2d")
    oc = qint.shape_of(wv)[3]
    x, w = e.storage(xv), e.storage(wv)
    attrs = dict(input_zp=int(x_q.zero_point), weight_zp=_weight_zero_point(w_q),
                 strides=op.attr("strides", [1, 1]), dilations=op.attr("dilations", [1, 1]),
                 padding=op.attr("padding", [0, 0, 0, 0]))
    shape = qint.shape_of(op.results[0])
    reals = linear._conv_reals(x_q, linear._channel_scales(w_q, oc), out_q, float_product=False)
    return _accumulating(
        e, op, lambda width: e.qint(qint.DepthwiseConv2DOp, [x, w], int_tensor(shape, width), **attrs),
        channels=oc, reals=reals, float_ref=False, xnn=linear._xnn_takes(x_q), bias=bv, x_q=x_q, out_q=out_q)


def decompose_fully_connected(e: Emitter, op: qnn.FullyConnectedOp) -> SSAValue:
    xv, wv, bv = op.operands
    x_q, w_q, out_q = qp(xv), qp(wv), qp(op.results[0])
    _signed(x_q, w_q, what="qnn.fully_connected")
    o, k = qint.shape_of(wv)
    rows = math.prod(qint.shape_of(xv)) // k
    x = e.reshape(e.storage(xv), (rows, k))
    w = e.storage(wv)
    per_tensor = not (w_q.per_axis and np.asarray(w_q.scale).size > 1)
    reals = linear._conv_reals(x_q, linear._channel_scales(w_q, o), out_q, float_product=per_tensor)
    attrs = dict(input_zp=int(x_q.zero_point), weight_zp=_weight_zero_point(w_q))
    out = _accumulating(
        e, op, lambda width: e.qint(qint.FullyConnectedOp, [x, w], int_tensor((rows, o), width), **attrs),
        channels=o, reals=reals, float_ref=True, xnn=linear._xnn_takes(x_q), bias=bv, x_q=x_q, out_q=out_q)
    return e.reshape(out, qint.shape_of(op.results[0]))


def _swap_last_two(e: Emitter, x: SSAValue) -> SSAValue:
    """x with its last two dimensions swapped (linalg.transpose: `qnn-lower-to-linalg` reads a
    batch matmul's transposed operand through its indexing map instead)."""
    shape = qint.shape_of(x)
    r = len(shape)
    t = int_tensor([*shape[:-2], shape[-1], shape[-2]], qint.int_width(x))
    init = e.add(tensor.EmptyOp([], t))
    return e.add(linalg.TransposeOp(x, init, qnn.ints_attr([*range(r - 2), r - 1, r - 2]), t))


def decompose_batch_matmul(e: Emitter, op: qnn.BatchMatmulOp) -> SSAValue:
    """reference_ops::BatchMatMul: exact sums of (a - a_zp) (b - b_zp) (int32; int64 for 16-bit
    operands), the multiplier of float32(a_s * b_s) / out_s; `litert`: XNNPACK's float32 scale
    for int8 with a zero rhs zero point (the delegate refuses others)."""
    a_v, b_v = op.operands
    a_q, b_q, out_q = qp(a_v), qp(b_v), qp(op.results[0])
    _signed(a_q, b_q, out_q, what="qnn.batch_matmul")
    _per_tensor(a_q, "qnn.batch_matmul")
    _per_tensor(b_q, "qnn.batch_matmul")
    if max(a_q.bits, b_q.bits) > 16:
        raise Unsupported(f"qnn.batch_matmul on {a_q.storage} x {b_q.storage} (TFLite's kernels take 8 and 16 bits)")
    a, b = e.storage(a_v), e.storage(b_v)
    if op.attr("adj_x", False):
        a = _swap_last_two(e, a)
    if op.attr("adj_y", False):
        b = _swap_last_two(e, b)
    shape = qint.shape_of(op.results[0])
    reals = linear._conv_reals(a_q, linear._f32(b_q).reshape(1), out_q, float_product=True)
    attrs = dict(lhs_zp=int(a_q.zero_point), rhs_zp=int(b_q.zero_point))
    xnn = linear._xnn_takes(a_q) and int(b_q.zero_point) == 0
    return _accumulating(
        e, op, lambda width: e.qint(qint.BatchMatmulOp, [a, b], int_tensor(shape, width), **attrs),
        channels=1, reals=reals, float_ref=False, xnn=xnn, bias=None, x_q=a_q, out_q=out_q)


# ----- elementwise -----------------------------------------------------------------------------


def decompose_add_sub(e: Emitter, op) -> SSAValue:
    subtract = isinstance(op, qnn.SubOp)
    a_v, b_v = op.operands
    x1_q, x2_q, out_q = qp(a_v), qp(b_v), qp(op.results[0])
    for q in (x1_q, x2_q, out_q):
        _per_tensor(q, op.name)
    _signed(x1_q, x2_q, what=op.name)
    k = knobs(op)
    rounding = k["rounding"]
    if rounding == "litert":
        if ew._xnnpack_add_takes(x1_q, x2_q, out_q):
            return _xnnpack_add(e, op, subtract, x1_q, x2_q, out_q, k)
        if not subtract and ew._same_8bit_storage(x1_q, x2_q, out_q):
            _require_fallback_exact(ew.add, op, x1_q, x2_q, out_q, k)
        rounding = "tflite"
    if rounding == "half_even":
        raise Unsupported(f"{op.name} with rounding 'half_even' (one float sum of both inputs)")
    s1, s2, so = ew.scale32(x1_q), ew.scale32(x2_q), ew.scale32(out_q)
    left_shift = 15 if out_q.bits == 16 else 20
    twice_max = 2.0 * float(max(s1, s2))
    real_out = twice_max / float(np.float32(np.float32(1 << left_shift) * so))
    a, b = e.storage(a_v), e.storage(b_v)
    sa = e.rescale(a, 32, integer_spec(float(s1) / twice_max, rounding), input_zp=ew.zp(x1_q), left_shift=left_shift)
    sb = e.rescale(b, 32, integer_spec(float(s2) / twice_max, rounding), input_zp=ew.zp(x2_q), left_shift=left_shift)
    raw = e.qint(qint.SubOp if subtract else qint.AddOp, [sa, sb], int_tensor(qint.shape_of(op.results[0]), 32))
    bounds = clamp_bounds(ew._finish, out_q, k["act_min"], k["act_max"])
    return e.rescale(raw, out_q.bits, integer_spec(real_out, rounding), output_zp=ew.zp(out_q), bounds=bounds)


def decompose_squared_difference(e: Emitter, op: qnn.SquaredDifferenceOp) -> SSAValue:
    """TFLite's int8 SQUARED_DIFFERENCE: both inputs `<< 7` rescaled by s_i / (2 max(s1, s2)),
    the difference squared in int32, rescaled by (2 max)^2 / (2^14 s_out).  XNNPACK does not
    take it: `litert` is `tflite`."""
    a_v, b_v = op.operands
    x1_q, x2_q, out_q = qp(a_v), qp(b_v), qp(op.results[0])
    for q in (x1_q, x2_q, out_q):
        _per_tensor(q, op.name)
    _signed(x1_q, x2_q, out_q, what=op.name)
    if x1_q.bits != 8 or x2_q.bits != 8:
        raise Unsupported(f"{op.name} on {x1_q.storage} (LiteRT's kernel takes int8 only)")
    k = knobs(op)
    rounding = "tflite" if k["rounding"] == "litert" else k["rounding"]
    if rounding == "half_even":
        raise Unsupported(f"{op.name} with rounding 'half_even' (one float product of both inputs)")
    s1, s2, so = ew.scale32(x1_q), ew.scale32(x2_q), ew.scale32(out_q)
    twice_max = 2.0 * float(max(s1, s2))
    real_out = (twice_max * twice_max) / float(np.float32(np.float32(1 << 14) * so))
    a, b = e.storage(a_v), e.storage(b_v)
    sa = e.rescale(a, 32, integer_spec(float(s1) / twice_max, rounding), input_zp=ew.zp(x1_q), left_shift=7)
    sb = e.rescale(b, 32, integer_spec(float(s2) / twice_max, rounding), input_zp=ew.zp(x2_q), left_shift=7)
    shape = qint.shape_of(op.results[0])
    raw = e.qint(qint.SubOp, [sa, sb], int_tensor(shape, 32))
    square = e.qint(qint.MulOp, [raw, raw], int_tensor(shape, 32))
    bounds = clamp_bounds(ew._finish, out_q, k["act_min"], k["act_max"])
    return e.rescale(square, out_q.bits, integer_spec(real_out, rounding), output_zp=ew.zp(out_q), bounds=bounds)


def _xnnpack_add(e: Emitter, op, subtract: bool, x1_q: QParams, x2_q: QParams, out_q: QParams, k) -> SSAValue:
    """XNNPACK's qs8/qu8 add (LiteRT's default ADD / SUB), parameters as
    elementwise._add_sub_xnnpack forms them: one qint.scaled_add."""
    so = ew.scale32(out_q)
    ra = np.float32(ew.scale32(x1_q) / so)
    rb = np.float32(ew.scale32(x2_q) / so)
    exponent = int(np.array(max(ra, rb), np.float32).view(np.uint32) >> 23) - 127
    shift = 20 - exponent
    if not 1 <= shift <= 31:
        raise Unsupported(f"{op.name} with rounding 'litert': XNNPACK shift {shift} outside [1, 31]")
    ma, mb = (int(np.rint(np.float64(r) * (1 << shift))) for r in (ra, rb))
    if subtract:
        mb = -mb
    bias = int(ew.wrap_int32((1 << (shift - 1)) - ma * ew.zp(x1_q) - mb * ew.zp(x2_q)))
    bounds = clamp_bounds(ew._finish, out_q, k["act_min"], k["act_max"])
    attrs = dict(lhs_multiplier=ma, rhs_multiplier=mb, bias=bias, shift=shift, output_zp=ew.zp(out_q),
                 clamp_min=bounds[0], clamp_max=bounds[1])
    if not x1_q.signed:
        attrs["unsigned"] = True
    a, b = e.storage(op.operands[0]), e.storage(op.operands[1])
    return e.qint(qint.ScaledAddOp, [a, b], int_tensor(qint.shape_of(op.results[0]), out_q.bits), **attrs)


def _require_fallback_exact(fn, op, x1_q: QParams, x2_q: QParams, out_q: QParams, k) -> None:
    """LiteRT runs TFLite's optimized 8-bit ADD / MUL when XNNPACK declines the
    scales: vector blocks whose numbers can differ from the scalar (reference)
    arithmetic depending on the element position.  Lowered as `tflite` only
    when the reference says the two agree on every pair of stored values, in
    both vector kernels (elementwise and scalar-broadcast); else refused."""
    lo1, hi1 = ew.type_bounds(x1_q)
    lo2, hi2 = ew.type_bounds(x2_q)
    a = np.arange(lo1, hi1 + 1, dtype=np.int64).astype(x1_q.dtype)
    b = np.arange(lo2, hi2 + 1, dtype=np.int64).astype(x2_q.dtype)
    kw = dict(x1_q=x1_q, x2_q=x2_q, out_q=out_q, act_min=k["act_min"], act_max=k["act_max"])
    grids = [(np.repeat(a, b.size), np.tile(b, a.size)),  # elementwise kernel
             (a.reshape(-1, 1), b.reshape(1, -1))]  # scalar-broadcast kernel
    for x1, x2 in grids:
        fast = np.asarray(fn(x1, x2, rounding="litert", **kw))
        ref = np.asarray(fn(x1, x2, rounding="tflite", **kw))
        if not np.array_equal(fast, ref):
            raise Unsupported(f"{op.name} with rounding 'litert' where XNNPACK declines the scales "
                              "(TFLite's optimized 8-bit kernel: element-position-dependent vector blocks)")


def decompose_mul(e: Emitter, op: qnn.MulOp) -> SSAValue:
    a_v, b_v = op.operands
    x1_q, x2_q, out_q = qp(a_v), qp(b_v), qp(op.results[0])
    for q in (x1_q, x2_q, out_q):
        _per_tensor(q, op.name)
    _signed(x1_q, x2_q, what=op.name)
    k = knobs(op)
    rounding = k["rounding"]
    real = np.float32(np.float32(ew.scale32(x1_q) * ew.scale32(x2_q)) / ew.scale32(out_q))
    if rounding == "litert":
        if ew._xnnpack_mul_takes(x1_q, x2_q, out_q):
            rounding = "half_even"
        else:
            if ew._same_8bit_storage(x1_q, x2_q, out_q):
                _require_fallback_exact(ew.mul, op, x1_q, x2_q, out_q, k)
            rounding = "tflite"
    spec = float_spec(real) if rounding == "half_even" else integer_spec(float(real), rounding)
    prod = e.qint(qint.MulOp, [e.storage(a_v), e.storage(b_v)], int_tensor(qint.shape_of(op.results[0]), 32),
                  lhs_zp=ew.zp(x1_q), rhs_zp=ew.zp(x2_q))
    bounds = clamp_bounds(ew._finish, out_q, k["act_min"], k["act_max"])
    return e.rescale(prod, out_q.bits, spec, output_zp=ew.zp(out_q), bounds=bounds)


def decompose_div(e: Emitter, op: qnn.DivOp) -> SSAValue:
    """TFLite DivElementwise (int8, uint8, int16; the reference's `div`) in one broadcasting
    generic: the divisor's GetReciprocal (Q0.31 reciprocal and its exponent) read from two
    tables over its stored values, CountLeadingSignBits of the dividend from clz32, then
    `RDBPOT_x86(SRDHM(SRDHM(a << h, r), M), h + e - shift) + out_zp`, clamped.  A divisor at
    its zero point (LiteRT fails the invoke) reads the entry of 1."""

    a_v, b_v = op.operands
    x1_q, x2_q, out_q = qp(a_v), qp(b_v), qp(op.results[0])
    for q in (x1_q, x2_q, out_q):
        _per_tensor(q, op.name)
    k = knobs(op)
    if k["rounding"] not in ("tflite", "litert"):
        raise Unsupported(f"rounding '{k['rounding']}' (only LiteRT's DIV kernel is lowered)")
    real = float(np.float32(ew.scale32(x1_q) / np.float32(ew.scale32(x2_q) * ew.scale32(out_q))))
    m, shift = ew.qmult(real, "tflite")
    lo2, hi2 = ew.type_bounds(x2_q)
    divisors = np.abs(np.arange(lo2, hi2 + 1, dtype=np.int64) - ew.zp(x2_q))
    recip, recip_shift = act.get_reciprocal(np.maximum(divisors, 1), 31)
    recip_table = e.constant(np.asarray(recip, np.int64), 32)
    shift_table = e.constant(np.asarray(recip_shift, np.int64), 8)
    lo, hi = clamp_bounds(ew._finish, out_q, k["act_min"], k["act_max"])
    out_t = int_tensor(qint.shape_of(op.results[0]), out_q.bits)
    shape = list(out_t.get_shape())
    x1, x2 = e.storage(a_v), e.storage(b_v)

    def body(s, q1, q2, _out):
        # uint8 storage read back from its low byte
        q1, q2 = [s.ext(q) if x.signed else s.band(s.ext(q), 0xFF) for q, x in ((q1, x1_q), (q2, x2_q))]
        negative = s.cmp("slt", q2, ew.zp(x2_q))
        a = s.sub(q1, ew.zp(x1_q))
        a = s.select(negative, s.sub(0, a), a)
        r = s.lookup(recip_table, s.sub(q2, lo2))
        r_shift = s.lookup(shift_table, s.sub(q2, lo2))
        # CountLeadingSignBits of |a| < 2^17: clz32(a) - 1, or clz32(2|a| - 1) when negative
        h = s.select(s.cmp("slt", a, 0), s.clz32(s.sub(s.mul(s.sub(0, a), 2), 1)), s.sub(s.clz32(a), 1))
        u = s.srdhm(s.srdhm(s.shl(a, h), r, b_never_min=True), int(m), b_never_min=True)
        exponent = s.max(s.sub(s.add(r_shift, h), int(shift)), 0)
        # gemmlowp RoundingDivideByPOT as compiled for x86: from 32 on, (u >> (e & 31)) + [u >= 0]
        wide = s.cmp("sge", exponent, 32)
        ordinary = s.rdbpot(u, s.select(wide, 0, exponent))
        odd = s.add(s.shr(u, s.band(exponent, 31)), s.bool_to_int(s.cmp("sge", u, 0)))
        v = s.add(s.select(wide, odd, ordinary), ew.zp(out_q))
        return s.trunc(s.clamp(v, lo, hi), out_q.bits)

    low = Lowering()
    maps = [broadcast_map(qint.shape_of(x), shape) for x in (x1, x2)]
    out = low.generic([x1, x2], maps, out_t, identity(len(shape)), body)
    e.ops.extend(low.ops)
    return out


def _clamp_if_needed(e: Emitter, v: SSAValue, out_q: QParams, bounds) -> SSAValue:
    if tuple(bounds) == tuple(full_range(out_q)):
        return v
    return e.rescale(v, out_q.bits, {"mode": "none"}, bounds=bounds)


def decompose_extremum(e: Emitter, op) -> SSAValue:
    a_v, b_v = op.operands
    out_q = qp(op.results[0])
    _signed(qp(a_v), qp(b_v), out_q, what=op.name)
    cls = qint.MaximumOp if isinstance(op, qnn.MaximumOp) else qint.MinimumOp
    v = e.qint(cls, [e.storage(a_v), e.storage(b_v)], int_tensor(qint.shape_of(op.results[0]), out_q.bits))
    k = knobs(op)
    return _clamp_if_needed(e, v, out_q, clamp_bounds(ew._finish, out_q, k["act_min"], k["act_max"]))


def decompose_requantize(e: Emitter, op) -> SSAValue:
    """qnn.requantize (reference requantize) and qnn.clamp (reference clamp)."""
    x_v = op.operands[0]
    x_q, out_q = qp(x_v), qp(op.results[0])
    _per_tensor(x_q, op.name)
    k = knobs(op)
    rounding = k["rounding"]
    d_unsigned = not x_q.signed
    bounds = clamp_bounds(ew._finish, out_q, k["act_min"], k["act_max"])
    x = e.storage(x_v)
    axis = None
    if isinstance(op, qnn.ClampOp):
        _per_tensor(out_q, op.name)
        real = np.float32(ew.scale32(x_q) / ew.scale32(out_q))
        if rounding == "litert":
            rounding = "tflite"
        spec = float_spec(real) if rounding == "half_even" else integer_spec(float(real), rounding)
    else:
        if rounding == "litert" and not out_q.per_axis and ew._xnnpack_cvt_takes(x_q, out_q):
            # XNNPACK qs8-vcvt: ((x - z_in) * m + 128) >> 8, i.e. single rounding with shift 23
            ratio = np.float32(ew.scale32(x_q) / ew.scale32(out_q))
            m = int(np.rint(np.float32(256.0) * ratio))
            spec = {"mode": "single_round", "multiplier": [m], "shift": [23]}
        elif (rounding == "litert" and not out_q.per_axis and x_q.bits == 8 and out_q.bits == 8
              and not _requantize_blocks_exact(x_q, out_q, k)):
            raise Unsupported("qnn.requantize with rounding 'litert' between 8-bit types (NEON blocks of 16 "
                              "that differ from the scalar tail)")
        else:
            if rounding == "litert":
                rounding = "tflite"
            s_out = np.asarray(out_q.scale, np.float32).astype(np.float64)
            if rounding == "half_even":
                spec = float_spec((np.float64(ew.scale32(x_q)) / s_out).astype(np.float32))
            else:
                spec = integer_spec(np.float64(ew.scale32(x_q)) / s_out, rounding)
        if out_q.per_axis:
            axis = out_q.axis
            zps = np.unique(out_q.zero_point)
            if zps.size != 1:
                raise Unsupported("qnn.requantize to per-axis zero points that differ")
    out_zp = int(np.asarray(out_q.zero_point).reshape(-1)[0])
    return e.rescale(x, out_q.bits, spec, input_zp=ew.zp(x_q), output_zp=out_zp, bounds=bounds,
                     input_unsigned=d_unsigned, axis=axis)


def _requantize_blocks_exact(x_q: QParams, out_q: QParams, k) -> bool:
    """LiteRT's 8-bit Requantize outside XNNPACK (optimized_ops: NEON blocks of
    16, scalar tail) equals the reference arithmetic on every stored value?
    Then it is lowered as `tflite`.  Asked of the reference on all 256 values,
    once in vector blocks and once in the tail."""
    lo, hi = ew.type_bounds(x_q)
    values = np.arange(lo, hi + 1, dtype=np.int64).astype(x_q.dtype)
    kw = dict(x_q=x_q, out_q=out_q, act_min=k["act_min"], act_max=k["act_max"])
    for x in (values, values[:1]):  # 256 values: all in blocks; one value: the tail
        if not np.array_equal(ew.requantize(x, rounding="litert", **kw), ew.requantize(x, rounding="tflite", **kw)):
            return False
    return True


def decompose_table(e: Emitter, op) -> SSAValue:
    """A unary op on <= 16-bit input: the L1 op evaluated on every stored value."""
    from qdialect.interpreter import Interpreter

    x_v = op.operands[0]
    x_q, out_q = qp(x_v), qp(op.results[0])
    _per_tensor(x_q, op.name)
    if x_q.bits > 16:
        raise Unsupported(f"{op.name} on {x_q.storage} input (tables need <= 16 bits)")
    lo, hi = ew.type_bounds(x_q)
    values = np.arange(lo, hi + 1, dtype=np.int64).astype(x_q.dtype)
    if isinstance(op, (qnn.RsqrtOp, qnn.SqrtOp)) and ew.zp(x_q) > lo:
        # defined on non-negative reals only (LiteRT fails the invoke below the zero point, and so
        # does the interpreter): the stored values below it read the zero point's entry
        valid = np.asarray(Interpreter(None).eval(op, [values[ew.zp(x_q) - lo:]])[0]).astype(np.int64).reshape(-1)
        table = np.concatenate([np.full(ew.zp(x_q) - lo, valid[0], np.int64), valid])
    else:
        table = np.asarray(Interpreter(None).eval(op, [values])[0]).astype(np.int64).reshape(-1)
    if table.shape != values.shape:
        raise Unsupported(f"{op.name}: its reference is not elementwise")
    tv = e.constant(table, out_q.bits)
    attrs = {} if x_q.signed else {"unsigned": True}
    return e.qint(qint.TableOp, [e.storage(x_v), tv], int_tensor(qint.shape_of(op.results[0]), out_q.bits), **attrs)


# ----- pools and reductions ----------------------------------------------------------------------


def _requantize_spec(in_q: QParams, out_q: QParams, rounding: str) -> dict | None:
    """pooling._requantize_values as a rescale spec (None: identical parameters)."""
    if pooling._same_params(in_q, out_q):
        return None
    real = np.float64(linear._f32(in_q)) / np.float64(linear._f32(out_q))
    r = "tflite" if rounding == "litert" else rounding
    return accumulator_spec(r, (real, real, None), xnn=False)


def _pool_counts(op, shape) -> np.ndarray:
    """In-bounds window positions per output pixel, shape [1, OH, OW, 1]."""
    _, h, w, _ = shape
    kh, kw = op.attr("kernel")
    sh, sw = op.attr("strides", [1, 1])
    pt, pb, pl, pr = op.attr("padding", [0, 0, 0, 0])
    oh = (h + pt + pb - kh) // sh + 1
    ow = (w + pl + pr - kw) // sw + 1
    ys = np.arange(oh) * sh - pt
    xs = np.arange(ow) * sw - pl
    ny = np.minimum(ys + kh, h) - np.maximum(ys, 0)
    nx = np.minimum(xs + kw, w) - np.maximum(xs, 0)
    return (ny[:, None] * nx[None, :]).reshape(1, oh, ow, 1)


def decompose_pool(e: Emitter, op) -> SSAValue:
    x_v = op.operands[0]
    x_q, out_q = qp(x_v), qp(op.results[0])
    _signed(x_q, what=op.name)
    _per_tensor(x_q, op.name)
    k = knobs(op)
    x = e.storage(x_v)
    shape = qint.shape_of(op.results[0])
    attrs = dict(kernel=op.attr("kernel"), strides=op.attr("strides", [1, 1]), padding=op.attr("padding", [0, 0, 0, 0]))
    if isinstance(op, qnn.AvgPool2DOp):
        counts = _pool_counts(op, qint.shape_of(x_v))
        if np.any(counts <= 0):
            raise Unsupported("a pooling window that lies entirely in the padding")
        total = e.qint(qint.PoolSumOp, [x], int_tensor(shape, 32), **attrs)
        divide = {"half_up": "half_up", "half_even": "half_even"}.get(k["rounding"], "away")
        v = e.qint(qint.DivideRoundOp, [total, e.constant(counts, 32)], int_tensor(shape, 32), rounding=divide)
    else:
        v = e.qint(qint.PoolMaxOp, [x], int_tensor(shape, x_q.bits), **attrs)
    bounds = clamp_bounds(linear._finish, out_q, k["act_min"], k["act_max"])
    spec = _requantize_spec(x_q, out_q, k["rounding"])
    if spec is None and qint.int_width(v) == out_q.bits:
        return _clamp_if_needed(e, v, out_q, bounds)
    if spec is None:
        return e.rescale(v, out_q.bits, {"mode": "none"}, bounds=bounds)
    return e.rescale(v, out_q.bits, spec, input_zp=int(x_q.zero_point), output_zp=int(out_q.zero_point), bounds=bounds)


def decompose_mean_sum(e: Emitter, op) -> SSAValue:
    """reduce.h QuantizedMeanOrSum: int32 sum, zp * N subtracted, (adjusted) multiplier."""
    x_v = op.operands[0]
    x_q, out_q = qp(x_v), qp(op.results[0])
    _signed(x_q, out_q, what=op.name)
    _per_tensor(x_q, op.name)
    k = knobs(op)
    rounding = k["rounding"]
    shape = qint.shape_of(x_v)
    axes = sorted({a % len(shape) for a in op.attr("axes")})
    count = math.prod(shape[a] for a in axes) if axes else 1
    if count == 0:
        raise Unsupported(f"{op.name} over an empty axis")
    if rounding == "litert" and x_q.bits == 8:
        # XNNPACK's reduce, as pooling._mean_or_sum: float32 scale (times 1/N for MEAN), the
        # zero points folded into a float32 offset, ties to even
        in_s, out_s = linear._f32(x_q).reshape(()), linear._f32(out_q).reshape(())
        scale = np.float32(in_s / out_s)
        if not isinstance(op, qnn.SumOp):
            scale = np.float32(scale * np.float32(np.float32(1.0) / np.float32(count)))
        yzp = np.float32(np.float32(int(out_q.zero_point))
                         - np.float32(np.float32(count) * np.float32(int(x_q.zero_point))) * scale)
        if count >= (1 << 23):
            raise Unsupported(f"{op.name} with rounding 'litert' over {count} elements (i32 sum)")
        total = e.qint(qint.ReduceSumOp, [e.storage(x_v)], int_tensor(qint.shape_of(op.results[0]), 32),
                       axes=op.attr("axes"), keep_dims=op.attr("keep_dims", False))
        lo, hi = ew.type_bounds(out_q)
        alo, ahi = clamp_bounds(linear._finish, out_q, k["act_min"], k["act_max"])
        spec = {"mode": "float_even", "scale": [float(scale)], "offset": [float(yzp)]}
        return e.rescale(total, out_q.bits, spec, bounds=(max(lo, alo), min(hi, ahi)))
    if rounding == "litert":
        rounding = "tflite"
    compute_sum = isinstance(op, qnn.SumOp)
    real = np.float64(linear._f32(x_q).reshape(())) / np.float64(linear._f32(out_q).reshape(()))
    if rounding == "half_even":
        spec = float_spec(real if compute_sum else real / count)
    else:
        m, s = (linear._qmult(real, rounding) if rounding != "tflite" else quantize_multiplier(real))
        m, s = int(m), int(s)
        if not compute_sum:  # as pooling._mean_or_sum: the multiplier absorbs 1/N with a left shift k
            kk = min(count.bit_length() - 1, 32, 31 + s)
            m = int(np.int32(np.int64((m << kk) // count)))
            s = s - kk
        mode = "double_round" if rounding == "tflite" else "single_round"
        spec = {"mode": mode, "multiplier": [m], "shift": [s]}
    total = e.qint(qint.ReduceSumOp, [e.storage(x_v)], int_tensor(qint.shape_of(op.results[0]), 32),
                   axes=op.attr("axes"), keep_dims=op.attr("keep_dims", False))
    bounds = clamp_bounds(linear._finish, out_q, k["act_min"], k["act_max"])
    return e.rescale(total, out_q.bits, spec, input_zp=int(x_q.zero_point) * count,
                     output_zp=int(out_q.zero_point), bounds=bounds)


def decompose_reduce_extreme(e: Emitter, op) -> SSAValue:
    x_v = op.operands[0]
    x_q, out_q = qp(x_v), qp(op.results[0])
    _signed(x_q, what=op.name)
    k = knobs(op)
    cls = qint.ReduceMaxOp if isinstance(op, qnn.ReduceMaxOp) else qint.ReduceMinOp
    v = e.qint(cls, [e.storage(x_v)], int_tensor(qint.shape_of(op.results[0]), x_q.bits),
               axes=op.attr("axes"), keep_dims=op.attr("keep_dims", False))
    bounds = clamp_bounds(linear._finish, out_q, k["act_min"], k["act_max"])
    spec = _requantize_spec(x_q, out_q, k["rounding"])
    if spec is None:
        return _clamp_if_needed(e, v, out_q, bounds)
    return e.rescale(v, out_q.bits, spec, input_zp=int(x_q.zero_point), output_zp=int(out_q.zero_point), bounds=bounds)


def decompose_softmax(e: Emitter, op: qnn.SoftmaxOp) -> SSAValue:
    x_v = op.operands[0]
    x_q, out_q = qp(x_v), qp(op.results[0])
    _signed(x_q, out_q, what="qnn.softmax")
    rounding = knobs(op)["rounding"]
    beta = op.attr("beta", 1.0)
    shape = qint.shape_of(op.results[0])
    if x_q.bits == 16:
        if rounding == "litert":
            rounding = "tflite"
        if rounding not in ("tflite", "single", "half_up"):
            raise Unsupported(f"int16 qnn.softmax with rounding '{rounding}'")
        if shape[-1] > 65536:
            raise Unsupported("int16 qnn.softmax over rows longer than 65536")
        real = float(np.float32(ew.scale32(x_q) * np.float32(beta))) / (10.0 / 65535.0)
        m, s = ew.qmult(real, rounding)
        attrs = dict(input_multiplier=int(m), input_shift=int(s))
    elif x_q.bits == 8 and rounding in ("litert", "half_even"):
        # optimized_ops::Softmax: float exp table, sequential float32 sum (activations._softmax_8bit_float_table)
        attrs = dict(mode="float_away" if rounding == "litert" else "float_even",
                     input_scale=[float(ew.scale32(x_q))], beta=[float(np.float32(beta))],
                     output_scale=[float(ew.scale32(out_q))], output_zp=ew.zp(out_q))
        return e.qint(qint.SoftmaxOp, [e.storage(x_v)], int_tensor(shape, out_q.bits), **attrs)
    elif x_q.bits == 8:
        m, s, diff_min = act.softmax_params(beta, x_q, rounding)
        attrs = dict(input_multiplier=int(m), input_shift=int(s), diff_min=int(diff_min))
    else:
        raise Unsupported(f"qnn.softmax on {x_q.storage}")
    if rounding in ("single", "half_up"):
        attrs["mode"] = "single_round"
    return e.qint(qint.SoftmaxOp, [e.storage(x_v)], int_tensor(shape, out_q.bits), **attrs)


# ----- data movement -----------------------------------------------------------------------------


def decompose_reshape(e: Emitter, op) -> SSAValue:
    return e.reshape(e.storage(op.operands[0]), qint.shape_of(op.results[0]))


def decompose_transpose(e: Emitter, op: qnn.TransposeOp) -> SSAValue:
    x = e.storage(op.operands[0])
    t = storage_type(op.results[0].type)
    init = e.add(tensor.EmptyOp([], t))
    perm = qnn.ints_attr(op.attr("perm"))
    return e.add(linalg.TransposeOp(x, init, perm, t))


def decompose_tile(e: Emitter, op) -> SSAValue:
    """TFLite TILE (and BROADCAST_TO): the stored integers concatenated `multiples[d]` times
    along each dimension d (tensor.concat, one per repeated dimension)."""
    v = e.storage(op.operands[0])
    multiples = [int(m) for m in op.attr("multiples")]
    if 0 in multiples:
        raise Unsupported(f"qnn.tile with multiples {multiples} (an empty result)")
    shape = list(qint.shape_of(v))
    for axis, m in enumerate(multiples):
        if m > 1:
            shape[axis] *= m
            v = e.add(tensor.ConcatOp([v] * m, axis, int_tensor(shape, qint.int_width(v))))
    return v


def decompose_arg_extreme(e: Emitter, op) -> SSAValue:
    """TFLite ARG_MAX / ARG_MIN (the first index of the extreme stored value along `axis`): the
    extreme by a reduction, then the smallest index holding it (a min-reduction over
    `x == extreme ? index : type max`, the index from linalg.index)."""
    from xdsl.dialects.builtin import IndexType


    x_v = op.operands[0]
    x_q = qp(x_v)
    _signed(x_q, what=op.name)
    x = e.storage(x_v)
    shape = list(qint.shape_of(x))
    rank = len(shape)
    axis = op.attr("axis") % rank
    if shape[axis] == 0:
        raise Unsupported(f"{op.name} over an empty axis")
    out_t = op.results[0].type
    out_w = out_t.element_type.width.data
    low = Lowering()
    extreme = reduce(low, x, [axis], x_q.bits, "max" if isinstance(op, qnn.ArgMaxOp) else "min")
    kept = [i for i in range(rank) if i != axis]
    order = kept + [axis]
    x_map = amap(rank, [dim(order.index(i)) for i in range(rank)])
    row = amap(rank, [dim(k) for k in range(rank - 1)])

    def body(s, a, m, acc):
        index = s.emit(arith.IndexCastOp(s.emit(linalg.IndexOp(rank - 1)), acc.type))
        first = s.emit(arith.SelectOp(s.emit(arith.CmpiOp(a, m, "eq")), index, s.const(signed_max(out_w), acc.type)))
        return s.emit(arith.MinSIOp(acc, first))

    out = low.generic([x, extreme], [x_map, row], out_t, row, body,
                      iterators=["parallel"] * (rank - 1) + ["reduction"], init=signed_max(out_w))
    e.ops.extend(low.ops)
    return out


def decompose_gather_nd(e: Emitter, op) -> SSAValue:
    """TFLite GATHER_ND: one generic over the result reading `params` with tensor.extract at
    (indices[i..., 0], ..., indices[i..., k-1], j...), the j from linalg.index.  An index outside
    its dimension (LiteRT fails the invoke) is clamped into it, so nothing is read out of bounds."""
    from xdsl.dialects.builtin import IndexType


    params = e.storage(op.operands[0])
    indices = op.operands[1]
    ps, ishape = list(qint.shape_of(params)), list(qint.shape_of(indices))
    out_t = storage_type(op.results[0].type)
    out_shape = list(out_t.get_shape())
    k, lead = ishape[-1], len(ishape) - 1
    if min(ps, default=1) == 0 or min(out_shape, default=1) == 0:
        raise Unsupported(f"{op.name} of an empty tensor")
    rank = len(out_shape)
    maps = [amap(rank, [dim(i) for i in range(lead)] + [c]) for c in range(k)]

    def body(s, *args):
        coords = [s.emit(arith.IndexCastOp(s.clamp(s.ext(a), 0, ps[c] - 1), IndexType()))
                  for c, a in enumerate(args[:k])]
        coords += [s.emit(linalg.IndexOp(lead + j)) for j in range(len(ps) - k)]
        return s.emit(tensor.ExtractOp(params, coords, params.type.element_type))

    low = Lowering()
    out = low.generic([indices] * k, maps, out_t, identity(rank), body)
    e.ops.extend(low.ops)
    return out


def decompose_gather(e: Emitter, op) -> SSAValue:
    """TFLite GATHER: one generic over the result reading `params` with tensor.extract at
    (n..., o..., indices[n..., i...], r...) for result coordinates (o (its first `batch_dims`
    the batch n), i, r); the index from the indices read at (n, i).  An index outside its
    dimension (LiteRT fails the invoke) is clamped into it, so nothing is read out of bounds."""
    from xdsl.dialects.builtin import IndexType


    params = e.storage(op.operands[0])
    indices = op.operands[1]
    ps, ishape = list(qint.shape_of(params)), list(qint.shape_of(indices))
    axis = op.attr("axis", 0) % len(ps)
    b = op.attr("batch_dims", 0)
    b += len(ishape) if b < 0 else 0
    out_t = storage_type(op.results[0].type)
    out_shape = list(out_t.get_shape())
    if min(ps, default=1) == 0 or min(out_shape, default=1) == 0:
        raise Unsupported(f"{op.name} of an empty tensor")
    rank, n_idx = len(out_shape), len(ishape) - b
    index_map = amap(rank, [dim(i) for i in range(b)] + [dim(axis + i) for i in range(n_idx)])

    def body(s, index, _out):
        coords = [s.emit(linalg.IndexOp(d)) for d in range(axis)]
        coords.append(s.emit(arith.IndexCastOp(s.clamp(s.ext(index), 0, ps[axis] - 1), IndexType())))
        coords += [s.emit(linalg.IndexOp(axis + n_idx + j)) for j in range(len(ps) - axis - 1)]
        return s.emit(tensor.ExtractOp(params, coords, params.type.element_type))

    low = Lowering()
    out = low.generic([indices], [index_map], out_t, identity(rank), body)
    e.ops.extend(low.ops)
    return out


def _reversed(e: Emitter, x: SSAValue, axis: int) -> SSAValue:
    """x with dimension `axis` reversed: a linalg.generic reading (..., n - 1 - d, ...)."""

    shape = list(qint.shape_of(x))
    rank = len(shape)
    source = amap(rank, [dim(i) if i != axis else dim(i) * -1 + (shape[i] - 1) for i in range(rank)])
    low = Lowering()
    out = low.generic([x], [source], x.type, identity(rank), lambda s, a, _o: a)
    e.ops.extend(low.ops)
    return out


def decompose_mirror_pad(e: Emitter, op) -> SSAValue:
    """TFLite MIRROR_PAD: per padded dimension, the mirrored slices (`reflect` leaves the edge
    element out, `symmetric` repeats it) reversed and concatenated around the input."""
    v = e.storage(op.operands[0])
    pads = [int(p) for p in op.attr("paddings")]
    offset = 1 if op.attr("mode") == "reflect" else 0
    for axis in range(len(pads) // 2):
        before, after = pads[2 * axis], pads[2 * axis + 1]
        if not before and not after:
            continue
        shape = list(qint.shape_of(v))
        n = shape[axis]
        el = v.type.element_type

        def part(start: int, size: int) -> SSAValue:
            begin = [start if i == axis else 0 for i in range(len(shape))]
            sizes = [size if i == axis else d for i, d in enumerate(shape)]
            sl = e.add(tensor.ExtractSliceOp(v, begin, sizes, [1] * len(shape), TensorType(el, sizes)))
            return _reversed(e, sl, axis) if size > 1 else sl

        parts = ([part(offset, before)] if before else []) + [v] + ([part(n - offset - after, after)] if after else [])
        shape[axis] = n + before + after
        v = e.add(tensor.ConcatOp(parts, axis, int_tensor(shape, qint.int_width(v))))
    return v


def decompose_pad(e: Emitter, op: qnn.PadOp) -> SSAValue:
    x_q = qp(op.operands[0])
    x = e.storage(op.operands[0])
    p = op.attr("paddings")
    value = op.attr("pad_value", int(x_q.zero_point))
    if not x_q.signed and value > ew.type_bounds(x_q)[1] // 2:
        value -= 1 << x_q.bits  # the bits of an unsigned value, as a signless constant
    c = e.add(scalar_constant(value, x_q.bits))
    return e.add(pad_op(x, p[0::2], p[1::2], c, storage_type(op.results[0].type)))


def decompose_slice(e: Emitter, op: qnn.SliceOp) -> SSAValue:
    x = e.storage(op.operands[0])
    begin, end = op.attr("begin"), op.attr("end")
    strides = op.attr("strides", [1] * len(begin))
    if any(s <= 0 for s in strides):
        raise Unsupported("qnn.slice with a negative stride")
    sizes = [max(0, len(range(b, en, s))) for b, en, s in zip(begin, end, strides)]
    el = x.type.element_type
    sl = e.add(tensor.ExtractSliceOp(x, begin, sizes, strides, TensorType(el, sizes)))
    return e.reshape(sl, qint.shape_of(op.results[0]))


def decompose_split(e: Emitter, op: qnn.SplitOp) -> list[SSAValue]:
    x = e.storage(op.operands[0])
    shape = qint.shape_of(op.operands[0])
    axis = op.attr("axis") % len(shape)
    outs, start = [], 0
    for r in op.results:
        rs = qint.shape_of(r)
        begin = [0] * len(shape)
        begin[axis] = start
        start += rs[axis]
        outs.append(e.add(tensor.ExtractSliceOp(x, begin, list(rs), [1] * len(shape), storage_type(r.type))))
    return outs


def decompose_concat(e: Emitter, op: qnn.ConcatenationOp) -> SSAValue:
    out_q = qp(op.results[0])
    for v in op.operands:
        if not pooling._same_params(qp(v), out_q) or qp(v).storage != out_q.storage:
            raise Unsupported("qnn.concatenation of inputs with different parameters (float rescale)")
    xs = [e.storage(v) for v in op.operands]
    rank = len(qint.shape_of(op.results[0]))
    t = storage_type(op.results[0].type)
    v = xs[0] if len(xs) == 1 else e.add(tensor.ConcatOp(xs, op.attr("axis") % rank, t))
    k = knobs(op)
    return _clamp_if_needed(e, v, out_q, clamp_bounds(linear._finish, out_q, k["act_min"], k["act_max"]))


def decompose_constant(e: Emitter, op: qnn.ConstantOp) -> SSAValue:
    t = op.results[0].type
    q = quantized_element_type(t)
    width = q.storage_width.data if q is not None else t.element_type.width.data
    if is_subclass(type(t), TensorType):
        # the stored bytes already are those of the signless container when both dtypes
        # have the same size (astype between such integer dtypes keeps the bits):
        # e.constant(op.array(), width) without the arrays
        shape = t.get_shape()
        data = op.attributes["value"].data.data
        dtype = op.element_dtype()
        if (dtype.kind in "iu" and dtype.itemsize * 8 == max(8, width)
                and min(shape, default=0) >= 0 and len(data) == math.prod(shape) * dtype.itemsize):
            result = int_tensor(shape, width)
            return e.add(create_op(arith.ConstantOp, (), (result,), {"value": dense_attr(result, data)}, {}))
    return e.constant(op.array(), width)


def decompose_onnx_only(e: Emitter, op) -> SSAValue:
    """An op only the ONNX profiles give arithmetic (transforms.decompose_onnx lowers it there)."""
    raise Unsupported(f"rounding '{op.attr('rounding', 'tflite')}' ({op.name} has arithmetic only in the "
                      "onnxruntime / onnx profiles)")


DECOMPOSITIONS.update({
    qnn.HardSigmoidOp: decompose_onnx_only,
    qnn.ConstantOp: decompose_constant,
    qnn.Conv2DOp: decompose_conv2d,
    qnn.DepthwiseConv2DOp: decompose_depthwise,
    qnn.FullyConnectedOp: decompose_fully_connected,
    qnn.BatchMatmulOp: decompose_batch_matmul,
    qnn.AddOp: decompose_add_sub,
    qnn.SubOp: decompose_add_sub,
    qnn.MulOp: decompose_mul,
    qnn.DivOp: decompose_div,
    qnn.SquaredDifferenceOp: decompose_squared_difference,
    qnn.MaximumOp: decompose_extremum,
    qnn.MinimumOp: decompose_extremum,
    qnn.RequantizeOp: decompose_requantize,
    qnn.ClampOp: decompose_requantize,
    qnn.LogisticOp: decompose_table,
    qnn.TanhOp: decompose_table,
    qnn.EluOp: decompose_table,
    qnn.HardSwishOp: decompose_table,
    qnn.LeakyReluOp: decompose_table,
    qnn.GeluOp: decompose_table,
    qnn.ExpOp: decompose_table,
    qnn.RsqrtOp: decompose_table,
    qnn.SqrtOp: decompose_table,
    qnn.AbsOp: decompose_table,
    qnn.NegOp: decompose_table,
    qnn.AvgPool2DOp: decompose_pool,
    qnn.MaxPool2DOp: decompose_pool,
    qnn.MeanOp: decompose_mean_sum,
    qnn.SumOp: decompose_mean_sum,
    qnn.ReduceMaxOp: decompose_reduce_extreme,
    qnn.ReduceMinOp: decompose_reduce_extreme,
    qnn.SoftmaxOp: decompose_softmax,
    qnn.ReshapeOp: decompose_reshape,
    qnn.TransposeOp: decompose_transpose,
    qnn.PadOp: decompose_pad,
    qnn.SliceOp: decompose_slice,
    qnn.SplitOp: decompose_split,
    qnn.ConcatenationOp: decompose_concat,
    qnn.TileOp: decompose_tile,
    qnn.MirrorPadOp: decompose_mirror_pad,
    qnn.ArgMaxOp: decompose_arg_extreme,
    qnn.GatherNdOp: decompose_gather_nd,
    qnn.GatherOp: decompose_gather,
    qnn.ArgMinOp: decompose_arg_extreme,
})


# ----- patterns and the pass ---------------------------------------------------------------------


@dataclass
class DecomposeQnnOp(RewritePattern):
    """Any qnn op with a decomposition: its L2 ops, stored integers bridged by quant.scast."""

    failures: list[str]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        fn = DECOMPOSITIONS.get(type(op))
        if is_subclass(type(op), qnn.QnnOp):
            from transforms import decompose_onnx

            if decompose_onnx.takes(op):
                fn = decompose_onnx.decompose
        if fn is None:
            return
        e = Emitter()
        try:
            out = fn(e, op)
        except Unsupported as err:
            self.failures.append(f"{op.name}: {err}")
            return
        outs = out if isinstance(out, list) else [out]
        results = [e.quantized(v, r.type) for v, r in zip(outs, op.results)]
        rewriter.replace(op, e.ops, results)


class FoldStorageCastPair(RewritePattern):
    """quant.scast(quant.scast(x)) back to x's type -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: StorageCastOp, rewriter: PatternRewriter, /):
        if (x := _cast_pair_source(op)) is not None:
            rewriter.replace(op, [], [x])


def _cast_pair_source(op: StorageCastOp) -> SSAValue | None:
    """x, if `op` is quant.scast(quant.scast(x)) back to x's type.  Read from the ops' own
    fields (`input` and `result` are IRDL accessors: a call each, and the pass asks this of
    every cast it visits, twice)."""
    (value,) = op._operands
    src = value.owner
    if is_subclass(type(src), StorageCastOp):
        (x,) = src._operands
        (result,) = op.results
        if x.type is result.type or x.type == result.type:
            return x
    return None


def convert_signature(fn: func.FuncOp, rewriter: PatternRewriter | None = None) -> None:
    """Quantized arguments and results of `fn` -> their storage integer types (a public
    function's unsigned ones marked `qnn.element_type = uiN`: `qdialect.io_types`)."""
    from xdsl.rewriter import Rewriter

    if fn.is_declaration:
        return
    mark_unsigned_edges(fn)
    for arg in list(fn.body.block.args):
        if quantized_element_type(arg.type) is None:
            continue
        new = Rewriter.replace_value_with_new_type(arg, storage_type(arg.type))
        for use in list(new.uses):
            user = use.operation
            if isinstance(user, StorageCastOp) and user.result.type == new.type:
                user.result.replace_all_uses_with(new)
                user.detach()
                user.erase()
    ret = fn.get_return_op()
    if ret is not None:
        for i, v in enumerate(list(ret.operands)):
            if quantized_element_type(v.type) is None:
                continue
            owner = v.owner
            if isinstance(owner, StorageCastOp):
                ret.operands[i] = owner.input
                if not list(owner.result.uses):
                    owner.detach()
                    owner.erase()
            else:
                cast = StorageCastOp(v, storage_type(v.type))
                ret.parent_block().insert_op_before(cast, ret)
                ret.operands[i] = cast.result
    fn.update_function_type()


def remaining_quantized(module: ModuleOp) -> list[str]:
    """The names of the ops (but quant.scast) with a quantized operand or result, in no
    particular order.  Each type object asked about once (by identity: the types stay alive
    in the module meanwhile), the ops listed without `walk`'s generators (fast_ir.all_ops):
    a scan of the whole lowered module."""
    quantized: dict[int, bool] = {}

    def is_quantized(t) -> bool:
        q = quantized.get(id(t))
        if q is None:
            q = quantized[id(t)] = quantized_element_type(t) is not None
        return q

    names = []
    for op in all_ops(module):
        if is_subclass(type(op), StorageCastOp) or op is module:
            continue
        for v in (*op.results, *op._operands):  # (a loop: two generators per op cost more)
            if is_quantized(v.type):
                names.append(op.name)
                break
    return names


@dataclass(frozen=True)
class QnnDecomposePass(ModulePass):
    """L1 -> L2: every qnn op into qint integer primitives; signatures to storage integers.

    See the module docstring for the table of rewrites.  Fails (naming every
    op at once) if some op cannot be expressed exactly.
    """

    name = "qnn-decompose"

    @cyclic_gc.paused()
    def apply(self, ctx: Context, op: ModuleOp) -> None:
        load_extensions()  # the decompositions other modules register (transforms/decompositions.py)
        from transforms.byte_tables import fold_byte_tables

        fold_byte_tables(op)  # elementwise graphs of one byte tensor: one table each

        failures: list[str] = []
        # = PatternRewriteWalker(GreedyRewritePatternApplier([DecomposeQnnOp(failures),
        #       FoldStorageCastPair(), ConvertCallToStorage()]), apply_recursively=True).rewrite_module(op)
        decompose, calls = DecomposeQnnOp(failures), ConvertCallToStorage()
        failed: set[int] = set()  # id()s of the ops refused (they stay in the module, unchanged)

        from transforms import decompose_onnx

        def decomposable(o: Operation) -> bool:
            return type(o) in DECOMPOSITIONS or (is_subclass(type(o), qnn.QnnOp) and decompose_onnx.takes(o))

        def match(o: Operation, rewriter) -> None:
            # the applier's patterns in order; each acts on its own op classes only
            if decomposable(o):
                n = len(failures)
                decompose.match_and_rewrite(o, rewriter)
                if len(failures) > n:
                    failed.add(id(o))
            elif is_subclass(type(o), StorageCastOp):
                # fold.match_and_rewrite(o, rewriter), without its decorator's class check
                if (x := _cast_pair_source(o)) is not None:
                    rewriter.replace(o, [], [x])
            elif is_subclass(type(o), func.CallOp):
                calls.match_and_rewrite(o, rewriter)

        def may_match(o: Operation) -> bool:
            if decomposable(o):
                return id(o) not in failed  # a refused op is refused again
            if is_subclass(type(o), StorageCastOp):
                return _cast_pair_source(o) is not None
            if is_subclass(type(o), func.CallOp):
                return any(quantized_element_type(v.type) is not None for v in (*o.arguments, *o.res))
            return False

        rewrite_greedy(op.body, match, may_match)
        if failures:
            # name every op at once: the refused ones and those with no decomposition at all
            missing = sorted({o.name for o in op.walk() if o.dialect_name() == "qnn" and not decomposable(o)})
            raise PassFailedException("qnn-decompose cannot lower: " + "; ".join(
                [*dict.fromkeys(failures), *(f"{name} (no decomposition)" for name in missing)]))
        for fn in all_ops(op):  # (not in walk order: each function's signature is its own)
            if is_subclass(type(fn), func.FuncOp):
                convert_signature(fn)
        left = remaining_quantized(op)
        if left:
            raise PassFailedException(
                "qnn-decompose cannot lower: " + ", ".join(sorted(set(left))) + " (no decomposition)"
            )
