"""`qnn-lower-to-linalg` (L2 -> L3): `qint` primitives -> upstream `linalg` / `arith` / `tensor`.

After this pass a module holds only `func`, `arith`, `linalg` and `tensor`
ops on plain signless integer tensors, so MLIR's own `mlir-opt` accepts it
and the TVM bridge translates it.  What rewrites into what:

| L2 op | L3 |
|---|---|
| qint.conv2d | tensor.pad (with the input zero point) -> linalg.conv_2d_nhwc_fhwc on the stored integers (int8 x int8 -> i32 / i16 / i64) -> linalg.generic subtracting `input_zp * sum(w[o])` when the weights are a constant with zero point 0 (adding `bias - input_zp * sum(w[o])` when the result's one reader is a qint.bias_add of a constant bias: that bias_add is then this generic); int8 constant weights with a zero point (ONNX's asymmetric uint8 weights) -> the same convolution, a second one of a filter of ones (the window sums) and one generic `acc - (input_zp * sum(w[o]) - input_zp * weight_zp * N) - weight_zp * sums` (`_weight_zp_expanded`); otherwise one linalg.generic with the zero points in its body |
| qint.depthwise_conv2d | tensor.pad -> linalg.generic (channel multiplier M as a separate loop, reshaped back to C*M) |
| qint.fully_connected / batch_matmul | linalg.generic reductions (zero points in the body) |
| qint.bias_add, add, sub, mul, maximum, minimum, divide_round | elementwise linalg.generic (broadcasting through the indexing maps; divide_round `away` by constant divisors up to 2^14, an average pool's counts, as an exact multiplication, `division_magic`) |
| qint.rescale, qint.rescale -> qint.add / sub -> qint.rescale (TFLite's ADD / SUB; intermediate values read once, parameters one value for all channels), with the rescale (of any parameters) before an input rescale when only it reads it (a convolution's requantization before a residual add) | one elementwise linalg.generic of the two inputs (and that rescale's per-channel constants): the bodies one after the other |
| qint.rescale | elementwise linalg.generic whose body is the integer recipe of its `mode` in arith (float modes: the product clamped before any float add, so no fused multiply-add can merge two roundings) (64-bit multiply, rounding add, arithmetic shift, clamp, truncate; per-channel parameters as 1-D constant operands) |
| qint.table | elementwise linalg.generic reading the table with tensor.extract |
| qint.pool_sum / pool_max | tensor.pad -> linalg.generic with window loops (a constant window-shaped operand gives their extents, as linalg's named pooling ops do) |
| qint.reduce_sum / max / min | linalg.fill + reduction linalg.generic (+ tensor.expand_shape for keep_dims) |
| qint.scaled_add | elementwise linalg.generic: `(wrap32(bias + a * Ma + b * Mb) >> shift) + zp`, clamp (XNNPACK's add) |
| qint.softmax | max, the row sum of the exp table's entries (computed at compile time from the reference, read inside the reduction), fixed-point reciprocal in arith, final rescale; float-table modes: max, f32 exp table read with tensor.extract, the row sum added in order (one generic per 32 row elements, each read through a constant-index map: a TVM reduction could reorder the float adds; rows above 1024 are refused), `1 / (sum * s_out)`, rounding |

Every rounding step is spelled out in arith exactly as the reference
(`qdialect.reference`) computes it, so L3 equals L2 bit for bit; anything the
pass cannot express exactly is refused (every such op named at once).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import (
    AffineMapAttr,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerType,
    ModuleOp,
    TensorType,
    f32,
    f64,
)
from xdsl.dialects.linalg.ops import Conv2DNhwc_FhwcOp, TransposeOp
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
)
from xdsl.utils.exceptions import PassFailedException

from qdialect import cyclic_gc
from qdialect.dialects import qint
from qdialect.reference import activations as act
from qdialect.reference.rescale import multiply_by_quantized_multiplier, multiply_single_rounding
from transforms.emit import Unsupported, int_tensor
from transforms.fast_ir import op_types, rewrite_once
# the L3 building blocks (Lowering, Scalar, amap, dim, identity, ... are also read from here)
from transforms.linalg_build import (
    I32,
    I64,
    INT32_MAX,
    Lowering,
    Scalar,
    _region_op,
    amap,
    axis_map,
    broadcast_map,
    dim,
    identity,
    reduce,
    signed_max,
    signed_min,
)


# ----- accumulating ops ------------------------------------------------------------------------


_INT_DTYPES = {8: np.dtype(np.int8), 16: np.dtype(np.int16), 32: np.dtype(np.int32), 64: np.dtype(np.int64)}


def _constant_values(value: SSAValue) -> np.ndarray | None:
    """The values of a dense `arith.constant`, else None: for the callers to read, not write.

    An integer tensor of 8, 16, 32 or 64 bits is a read-only view of the attribute's bytes (as
    the interpreter decodes it, without its copy and its numpy product of the shape: a
    convolution's weights and bias are read here); anything else is decoded by the
    interpreter's own handler."""
    owner = value.owner
    if not isinstance(owner, arith.ConstantOp) or not isinstance(attr := owner.value, DenseIntOrFPElementsAttr):
        return None
    t = attr.type
    el = t.element_type
    dtype = _INT_DTYPES.get(el.width.data) if isinstance(el, IntegerType) else None
    if dtype is not None:
        shape = t.get_shape()
        raw = np.frombuffer(attr.data.data, dtype=dtype)
        n = math.prod(shape)
        if raw.size == n:
            return raw.reshape(shape)
        if raw.size == 1:  # a splat
            return np.broadcast_to(raw, shape)
    from qdialect.interpreter import _arith_constant

    return _arith_constant(None, owner, [])


def _conv_nhwc_fhwc(operands: Sequence[SSAValue], strides: tuple[int, int], dilations: tuple[int, int]) -> Operation:
    """linalg.conv_2d_nhwc_fhwc ins(input, filter) outs(init)."""
    def build(x, w, init):
        return Conv2DNhwc_FhwcOp([x, w], [init], [init.type],
                                 strides=DenseIntOrFPElementsAttr.from_list(TensorType(I64, [2]), list(strides)),
                                 dilations=DenseIntOrFPElementsAttr.from_list(TensorType(I64, [2]), list(dilations)))

    return _region_op(("conv_2d_nhwc_fhwc", tuple(strides), tuple(dilations)), build, operands)


def _corrected(e: Lowering, op: Operation, acc: SSAValue, correction: np.ndarray) -> SSAValue:
    """`acc - correction` (int64, per output channel: the last axis) wrapped to the width of
    `op`'s result, the accumulator of a product with the input zero point taken out of the
    reduction.

    When that result's one use is a `qint.bias_add` of a constant bias, of the same type (what
    the decomposition makes of a convolution or fully connected layer with a bias), the
    generic is `acc + (bias - correction)` instead, the constant wrapped to that width: both
    forms wrap modulo 2^width, so every sum is the same, with one generic fewer.  The
    bias_add is then replaced by it (`Lowering.replaces`, done by `LowerQIntOp`)."""
    out_t = op.results[0].type
    acc_w = qint.int_width(op.results[0])
    rank = len(out_t.get_shape())
    use = op.results[0].first_use
    user = use.operation if use is not None and use._next_use is None else None
    if type(user) is qint.BiasAddOp and use.index == 0 and user.results[0].type == out_t:
        bias = _constant_values(user.operands[1])
        if bias is not None and bias.shape == correction.shape:
            total = bias.astype(np.int64) - correction
            if acc_w < 64:
                half = 1 << (acc_w - 1)
                total = (total + half) % (1 << acc_w) - half
            value = lower_bias_add(e, user, (acc, e.constant(total, acc_w)))
            e.replaces.append((user, value))
            return value
    return e.generic([acc, e.constant(correction, 64)], [identity(rank), axis_map(rank, rank - 1)], out_t,
                     identity(rank), lambda s, a, c, _o: s.trunc(s.sub(s.ext(a), c), acc_w),
                     key=("correction", acc_w))


def lower_conv2d(e: Lowering, op: qint.Conv2DOp) -> SSAValue:
    x, w = op.operands
    out_t = op.results[0].type
    acc_w = qint.int_width(op.results[0])
    izp, wzp = op.attr("input_zp", 0), op.attr("weight_zp", 0)
    (sh, sw), (dh, dw), (pt, pb, pl, pr) = op.window()
    x_bits = qint.int_width(x)
    if not signed_min(x_bits) <= izp <= signed_max(x_bits):
        raise Unsupported(f"input zero point {izp} does not fit the i{x_bits} input")
    xp = e.pad(x, [0, pt, pl, 0], [0, pb, pr, 0], izp)
    weights = _constant_values(w)
    if wzp == 0 and weights is not None and qint.int_width(w) <= acc_w:
        init = e.filled(out_t, 0)
        acc = e.add(_conv_nhwc_fhwc([xp, w, init], (sh, sw), (dh, dw)))
        if izp == 0:
            return acc
        return _corrected(e, op, acc, izp * weights.astype(np.int64).reshape(weights.shape[0], -1).sum(axis=1))
    if (wzp != 0 and weights is not None and acc_w == 32 and x_bits == 8 and qint.int_width(w) == 8
            and os.environ.get(WEIGHT_ZP_ENV) != "0"):
        return _weight_zp_expanded(e, op, xp, w, weights, izp, wzp, (sh, sw), (dh, dw))
    # general form: zero points inside the reduction body
    maps = [amap(7, [dim(0), dim(1) * sh + dim(4) * dh, dim(2) * sw + dim(5) * dw, dim(6)]),
            amap(7, [dim(3), dim(4), dim(5), dim(6)])]

    def body(s, a, b, acc):
        av = s.sub(s.ext(a, acc_w), s.const(izp, acc.type))
        bv = s.sub(s.ext(b, acc_w), s.const(wzp, acc.type))
        return s.emit(arith.AddiOp(acc, s.emit(arith.MuliOp(av, bv))))

    return e.generic([xp, w], maps, out_t, amap(7, [dim(0), dim(1), dim(2), dim(3)]), body,
                     iterators=["parallel"] * 4 + ["reduction"] * 3, init=0)


#: set QDIALECT_WEIGHT_ZP_EXPANDED=0 to keep an int8 convolution with a weight zero point as
#: one generic with the zero points in its body
WEIGHT_ZP_ENV = "QDIALECT_WEIGHT_ZP_EXPANDED"


def _weight_zp_expanded(e: Lowering, op, xp, w, weights: np.ndarray, izp: int, wzp: int, strides, dilations):
    """An int8 x int8 -> i32 convolution whose constant weights have a zero point (ONNX's
    asymmetric uint8 weights, shifted to int8: w - wzp does not fit 8 bits) as the
    convolution of the stored integers and its corrections, each exact modulo 2^32 as the
    i32 sum is: sum((x - izp)(w - wzp)) = conv(x, w) - izp sum(w)[o] - wzp window_sum(x)
    + izp wzp N, N = KH KW C, the window sums a convolution of the padded input with a
    filter of ones (one output channel).  The main convolution is then a linalg
    convolution on int8 (the dot-product kernels take it), not a generic with the zero
    points in its body (TVM's own schedule: ONNX ResNeXt u8u8 ran at x4.9 of ORT)."""
    out_t = op.results[0].type
    n, oh, ow, _ = out_t.get_shape()
    k, kh, kw, c = weights.shape
    acc = e.add(_conv_nhwc_fhwc([xp, w, e.filled(out_t, 0)], strides, dilations))
    sums_t = TensorType(out_t.element_type, [n, oh, ow, 1])
    ones = e.constant(np.ones((1, kh, kw, c), np.int64), 8)
    sums = e.add(_conv_nhwc_fhwc([xp, ones, e.filled(sums_t, 0)], strides, dilations))
    per_channel = izp * weights.astype(np.int64).reshape(k, -1).sum(axis=1) - izp * wzp * kh * kw * c
    return e.generic([acc, sums, e.constant(per_channel, 64)],
                     [identity(4), amap(4, [dim(0), dim(1), dim(2), 0]), axis_map(4, 3)], out_t, identity(4),
                     lambda s, a, sv, cv, _o: s.trunc(s.sub(s.sub(s.ext(a), cv), s.mul(s.ext(sv), s.const(wzp))), 32),
                     key=("weight_zp", wzp))


def _zp_product(izp: int, wzp: int, acc_w: int):
    def body(s, a, b, acc):
        av = s.ext(a, acc_w)
        if izp:
            av = s.sub(av, s.const(izp, acc.type))
        bv = s.ext(b, acc_w)
        if wzp:
            bv = s.sub(bv, s.const(wzp, acc.type))
        return s.emit(arith.AddiOp(acc, s.emit(arith.MuliOp(av, bv))))

    return body


def lower_depthwise(e: Lowering, op: qint.DepthwiseConv2DOp) -> SSAValue:
    x, w = op.operands
    n, h, wd, c = qint.shape_of(x)
    _, kh, kw, oc = qint.shape_of(w)
    mult = oc // c
    out_shape = qint.shape_of(op.results[0])
    acc_w = qint.int_width(op.results[0])
    izp, wzp = op.attr("input_zp", 0), op.attr("weight_zp", 0)
    (sh, sw), (dh, dw), (pt, pb, pl, pr) = op.window()
    x_bits = qint.int_width(x)
    if not signed_min(x_bits) <= izp <= signed_max(x_bits):
        raise Unsupported(f"input zero point {izp} does not fit the i{x_bits} input")
    xp = e.pad(x, [0, pt, pl, 0], [0, pb, pr, 0], izp)
    body = _zp_product(izp, wzp, acc_w)
    weights = _constant_values(w)
    # as for conv2d: sum(x * w) - izp * sum(w) (mod 2^acc_w, exactly sum((x - izp) * w)), the
    # correction a per-channel constant, so the inner loop has no subtraction
    correct = mult == 1 and izp != 0 and wzp == 0 and weights is not None and qint.int_width(w) <= acc_w
    bias = 0
    if correct:
        body = _zp_product(0, 0, acc_w)
    if (mult == 1 and wzp == 0 and weights is not None and x_bits == 8 and qint.int_width(w) == 8
            and acc_w == 32):
        # int8 x int8: sum((x + 128) * w) - (izp + 128) * sum(w).  x + 128 = x xor 0x80 read
        # as unsigned is a zero-extended byte, so a vector compiler can multiply with a 16-bit
        # multiply-add (x86 vpmaddwd: 1 uop) instead of a 32-bit multiply (vpmulld: 2 uops,
        # 10 cycles) -- LLVM does when one factor has its upper 17 bits known zero
        correct, bias = True, 128

        def body(s, a, b, acc):
            xu = s.ext(s._bin(arith.XOrIOp, a, s.const(-128, a.type)), acc_w, unsigned=True)
            return s.emit(arith.AddiOp(acc, s.emit(arith.MuliOp(xu, s.ext(b, acc_w)))))
    if mult == 1:
        # loops (n, y, x, c, ky, kx), the (1, KH, KW, C) weights read in place: the result
        # is the NHWC output itself, so the rescale that follows fuses with it in TVM
        maps = [amap(6, [dim(0), dim(1) * sh + dim(4) * dh, dim(2) * sw + dim(5) * dw, dim(3)]),
                amap(6, [AffineExpr.constant(0), dim(4), dim(5), dim(3)])]
        out_t = op.results[0].type
        acc = e.generic([xp, w], maps, out_t, amap(6, [dim(i) for i in range(4)]), body,
                        iterators=["parallel"] * 4 + ["reduction"] * 2, init=0)
        if not correct:
            return acc
        return _corrected(e, op, acc, (izp + bias) * weights.astype(np.int64).reshape(-1, c).sum(axis=0))
    # loops (n, y, x, c, m, ky, kx)
    w4 = e.reshape(w, (kh, kw, c, mult))
    maps = [amap(7, [dim(0), dim(1) * sh + dim(5) * dh, dim(2) * sw + dim(6) * dw, dim(3)]),
            amap(7, [dim(5), dim(6), dim(3), dim(4)])]
    t5 = int_tensor([*out_shape[:3], c, mult], acc_w)
    acc = e.generic([xp, w4], maps, t5, amap(7, [dim(i) for i in range(5)]), body,
                    iterators=["parallel"] * 5 + ["reduction"] * 2, init=0)
    return e.reshape(acc, out_shape)


def lower_fully_connected(e: Lowering, op: qint.FullyConnectedOp) -> SSAValue:
    x, w = op.operands
    acc_w = qint.int_width(op.results[0])
    weights = _constant_values(w)
    izp, wzp = op.attr("input_zp", 0), op.attr("weight_zp", 0)
    if wzp == 0 and weights is not None and qint.int_width(w) <= acc_w and len(qint.shape_of(x)) == 2:
        # a 1x1 convolution over a 1 x N image of I channels: the same named op as conv2d
        # (and the same fast kernels downstream), the input zero point as a per-output constant
        n, i = qint.shape_of(x)
        o = weights.shape[0]
        x4 = e.reshape(x, (1, 1, n, i))
        w4 = e.constant(weights.reshape(o, 1, 1, i), qint.int_width(w))
        out4 = int_tensor([1, 1, n, o], acc_w)
        conv = e.add(_conv_nhwc_fhwc([x4, w4, e.filled(out4, 0)], (1, 1), (1, 1)))
        acc = e.reshape(conv, (n, o))
        if izp == 0:
            return acc
        return _corrected(e, op, acc, izp * weights.astype(np.int64).sum(axis=1))
    maps = [amap(3, [dim(0), dim(2)]), amap(3, [dim(1), dim(2)])]
    return e.generic([x, w], maps, op.results[0].type, amap(3, [dim(0), dim(1)]),
                     _zp_product(op.attr("input_zp", 0), op.attr("weight_zp", 0), acc_w),
                     iterators=["parallel", "parallel", "reduction"], init=0)


def _swapped_source(value: SSAValue) -> SSAValue | None:
    """x, when `value` is linalg.transpose(x) swapping the last two dimensions only."""
    t = value.owner
    if not isinstance(t, TransposeOp):
        return None
    perm = list(t.permutation.get_values())
    r = len(perm)
    return t.inputs[0] if r >= 2 and perm == [*range(r - 2), r - 1, r - 2] else None


def lower_batch_matmul(e: Lowering, op: qint.BatchMatmulOp) -> SSAValue:
    """One reduction generic; an operand that is a transpose of the last two dimensions (a
    TFLite adj_x / adj_y) is read in place through the generic's map (the transpose is erased
    when nothing else reads it)."""
    a, b = op.operands
    out_shape = qint.shape_of(op.results[0])
    acc_w = qint.int_width(op.results[0])
    r = len(out_shape)
    n = r + 1  # output loops + k
    batch = list(out_shape[:-2])

    def operand_map(shape, last_two):
        lead = shape[:-2]
        res = []
        for j, s in enumerate(lead):
            d = len(batch) - len(lead) + j
            res.append(0 if s == 1 and batch[d] != 1 else dim(d))
        return amap(n, res + last_two)

    inputs, maps = [], []
    for v, last_two in ((a, [dim(r - 2), dim(r)]), (b, [dim(r), dim(r - 1)])):
        source = _swapped_source(v)
        if source is not None:
            e.dead.append(v.owner)
            v, last_two = source, last_two[::-1]
        inputs.append(v)
        maps.append(operand_map(qint.shape_of(v), last_two))
    return e.generic(inputs, maps, op.results[0].type, amap(n, [dim(i) for i in range(r)]),
                     _zp_product(op.attr("lhs_zp", 0), op.attr("rhs_zp", 0), acc_w),
                     iterators=["parallel"] * r + ["reduction"], init=0)


def lower_bias_add(e: Lowering, op: qint.BiasAddOp, operands: Sequence[SSAValue] | None = None) -> SSAValue:
    """The elementwise add of `op`, on its operands or on the given (accumulator, bias)."""
    acc, bias = operands or op.operands
    w = qint.int_width(op.results[0])
    return e.elementwise([acc, bias], op.results[0].type,
                         lambda s, a, b, _o: s.emit(arith.AddiOp(a, s.ext(b, w))), key=("bias_add", w))


# ----- rescale ---------------------------------------------------------------------------------


def lower_rescale(e: Lowering, op: qint.RescaleOp) -> SSAValue:
    inputs, maps, body, key = _rescale_plan(e, op)
    return e.generic(inputs, maps, op.results[0].type, identity(len(op.results[0].type.get_shape())), body,
                     key=key)


def _rescale_plan(e: Lowering, op: qint.RescaleOp) -> tuple[list, list, Callable[..., SSAValue], tuple]:
    """(inputs, their maps, body, body key) of the generic a rescale lowers to; `e` gets the
    per-channel constants among the inputs (none when every parameter is one value for
    all channels: then the body reads only its first argument, the value rescaled)."""
    x = op.operands[0]
    out_t = op.results[0].type
    shape = list(out_t.get_shape())
    rank = len(shape)
    axis = op.rescale_axis() if rank else 0
    out_w = qint.int_width(op.results[0])
    in_w = qint.int_width(x)
    mode = op.mode
    unsigned = op.attr("input_unsigned", False)
    izp, ozp, ls = op.attr("input_zp", 0), op.attr("output_zp", 0), op.attr("left_shift", 0)
    lo, hi = op.bounds()
    inputs, maps = [x], [identity(rank)]
    params: list = []  # per parameter: ("value", literal) or ("operand", index into the body's args)

    def channel(values, width: int = 64):
        value, m = e.channel_constant(values, axis, rank, width)
        if m is None:
            params.append(("value", value))
        else:
            params.append(("operand", len(inputs)))
            inputs.append(value)
            maps.append(m)

    if mode == "double_round":
        # per-channel values as Python ints (i64 array attributes: the numpy int64 arithmetic
        # this replaces never wrapped either); numpy on a handful of values costs more
        m = op.attr("multiplier")
        sft = op.attr("shift")
        # per-channel multipliers as i32 (extended in the body): the i64 product of
        # two sign-extended i32 values is one vpmuldq, of an i64 operand a vpmullq
        # (3 uops, 15 cycles latency on AVX-512)
        in_i32 = all(-(1 << 31) <= v < (1 << 31) for v in m)
        left = [v if v > 0 else 0 for v in sft]
        right = [-v if v < 0 else 0 for v in sft]
        never_min = all(v != -(1 << 31) for v in m)
        # the one-shift form (see the body): the result and clamp(r, lo - zp, hi - zp)
        # in 32-bit lanes (twice as many per SIMD register as i64)
        narrow = (out_w <= 32 and in_w <= 32 and max(right) <= 31 and never_min
                  and all(-(1 << 31) <= b <= (1 << 31) - 1 for b in (lo - ozp, hi - ozp)))
        # the left shifts fold into the final shift when x - input_zp shifted by them
        # cannot wrap at 32 bits (ADD's inputs: int8 << 20)
        if unsigned:
            x_lo, x_hi = -izp, (1 << in_w) - 1 - izp
        else:
            x_lo, x_hi = -(1 << (in_w - 1)) - izp, (1 << (in_w - 1)) - 1 - izp
        entry = e.bounds.get(id(op))
        bound = entry[1] if entry is not None and entry[0] is op else None
        if bound is not None:  # (|x| <= bound: a MEAN's sum minus count * zp no longer reaches 2^31)
            x_lo, x_hi = max(x_lo, -bound - izp), min(x_hi, bound - izp)
        shift_in = ls + left[0]
        fold_left = (narrow and len(set(left)) == 1 and shift_in <= 30
                     and -(1 << 31) <= x_lo << shift_in and x_hi << shift_in < 1 << 31)
        # the sign form (see the body): an input that cannot reach 2^30 and every exponent
        # and multiplier such that the rounding's sign test is the input's own sign
        sign_form = (narrow and fold_left and not unsigned and shift_in == 0 and in_w == 32
                     and min(right) >= 1 and max(right) <= 30  # (the high half stays in int32)
                     and all((1 << 30) < v < (1 << 31) for v in m)
                     and bound is not None and bound + abs(izp) < (1 << 30)
                     and os.environ.get(SIGN_FORM_ENV) != "0")
        # a multiplier of exactly 2^30 for every channel and one exponent: no product at all
        pow2_form = (narrow and fold_left and not unsigned and shift_in == 0 and in_w == 32
                     and set(m) == {1 << 30} and len(set(right)) == 1
                     and bound is not None and bound + abs(izp) + (1 << right[0]) + 2 < (1 << 31)
                     and os.environ.get(SIGN_FORM_ENV) != "0")
        # the output zero point added before the final shift (as zp * 2^shift, exact: a whole
        # multiple of the divisor), where the sum stays in int32: the clamp is then to the
        # output's own range, which a saturating narrow (`vpmovsdb`) does by itself
        zp_in = False
        if pow2_form:
            folded = 0
            sign_form = False
            e_ = right[0]
            zp_in = bound + abs(izp) + (1 << e_) + 3 + (abs(ozp) << (1 + e_)) < (1 << 31)
        elif sign_form:
            folded = 0
            reach = bound + abs(izp)
            high = ((2 * reach * max(m) + (1 << 31) + (1 << (31 + max(right)))) >> 32) + 2
            zp_in = high + (abs(ozp) << max(right)) < (1 << 31)
            channel(m, 32)
            channel([(1 << 31) + (1 << (31 + r)) + ((ozp << (32 + r)) if zp_in else 0) for r in right])
            channel(right, 32)
        elif narrow:
            channel(m, 32 if in_i32 else 64)
            if not fold_left:
                shift_in = 0
                channel(left)
            folded = shift_in
            base = 1 << (30 - shift_in)
            pos = [base + (1 << (30 - shift_in + r)) if r > 0 else base for r in right]
            channel(pos)
            channel([p - (1 << (31 - shift_in)) if r > 0 else p for p, r in zip(pos, right)])
            # a total shift of 32 or more is the high 32 bits of the sum (no 64-bit
            # shift: AVX2 has no arithmetic one, LLVM emulates it in 5-6 instructions)
            # then a 32-bit shift by the rest: floor(floor(u / 2^32) / 2^(S-32)) = floor(u / 2^S)
            total = [31 - shift_in + r for r in right]
            hi_form = min(total) >= 32
            split = _split32_plan(m, pos, [p - (1 << (31 - shift_in)) if r > 0 else p for p, r in zip(pos, right)],
                                  total, 30 - shift_in, x_lo, x_hi, in_w) if fold_left else None
            if hi_form:
                channel([t - 32 for t in total], 32)
            else:
                channel(total)
        else:
            fold_left = False
            channel(m, 32 if in_i32 else 64)
            channel(left)
            channel(right)
    elif mode in ("single_round", "wide_round"):
        m = np.asarray(op.attr("multiplier"), np.int64)
        sft = np.asarray(op.attr("shift"), np.int64)
        if mode == "single_round":
            total = 31 - sft
        else:
            m = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, np.int64(0x7FFF))
            total = 15 - sft
        if (total > 62).any() or (total < 1).any():
            raise Unsupported(f"{mode} shift {int(sft.min())}..{int(sft.max())} needs more than 64 bits")
        channel(m)
        channel(total)
        channel(np.int64(1) << (total - 1))
    elif mode in ("float_even", "float_away"):
        ftype, fdtype = (f32, np.float32) if mode == "float_even" else (f64, np.float64)
        scale = np.asarray(op.attr("scale"), np.float64).astype(fdtype)
        if len(set(scale.tolist())) == 1:
            params.append(("value", float(scale[0])))
        else:
            t = TensorType(ftype, [scale.size])
            params.append(("operand", len(inputs)))
            inputs.append(e.add(arith.ConstantOp(
                DenseIntOrFPElementsAttr(t, BytesAttr(np.ascontiguousarray(scale).tobytes())), t)))
            maps.append(amap(rank, [dim(axis)]))

    offset = None
    if "offset" in op.attributes:
        offset = float(np.float32(op.attr("offset")[0]))
    if mode != "double_round":
        never_min = narrow = fold_left = sign_form = pow2_form = zp_in = False
    if not narrow or sign_form or pow2_form:
        folded = 0
        hi_form = False
        split = None

    def body(s: Scalar, *args):
        def p(k):
            kind, v = params[k]
            return args[v] if kind == "operand" else v

        v = s.ext(args[0], 64, unsigned)
        if izp:
            v = s.sub(v, izp)
        if pow2_form:
            # M = 2^30 (TFLite ADD's output rescale when the output's scale is the larger
            # input's): with t = 2^30 d the double rounding below is
            #   floor((2^30 d + 2^30 + 2^(30+e) - [d <= -2] * 2^31) / 2^(31+e))
            #   = (d + 1 + 2^e - 2 [d <= -2]) >> (1 + e)   (e >= 1; (d + 1) >> 1 for e = 0)
            # in 32 bits (the bound keeps d + 1 + 2^e inside int32); [d <= -2] = -((d + 1) >> 31)
            # (+ zp * 2^(1+e) inside the shift with `zp_in`)
            e_ = right[0]
            d = s.trunc(v, 32)
            zp_term = (ozp << (1 + e_)) if zp_in else 0
            if e_ == 0:
                x32 = s.shr(s.add(d, 1 + zp_term), 1)
            else:
                neg = s.shr(s.add(d, 1), 31)
                x32 = s.shr(s.add(s.add(d, 1 + (1 << e_) + zp_term), s.add(neg, neg)), 1 + e_)
            return _clamped(s, x32, lo, hi, 0 if zp_in else ozp, out_w)
        if sign_form:
            # With t = d*M, d = x - zp, the double rounding above is
            #   floor((t + 2^30 + 2^(30+e) - [t < -2^30] * 2^31) / 2^(31+e)).
            # Every M lies in (2^30, 2^31), so t < -2^30 exactly when d < 0 (d <= -1 gives
            # t <= -M < -2^30): the select on the 64-bit product is the input's sign,
            # [d < 0] = -(d >> 31) in 32 bits.  Doubling numerator and denominator,
            #   floor((2t + 2^31 + 2^(31+e) - [d < 0] * 2^32) / 2^(32+e))
            #   = (floor((2d*M + 2^31 + 2^(31+e)) / 2^32) + (d >> 31)) >> e
            # (the subtracted term is a whole multiple of 2^32), all but the product in
            # 32-bit lanes: |d| < 2^30 (the accumulator's bound) so 2d fits i32, and the
            # high half of the 64-bit sum is one vpmuldq pair, one add, one gather.
            # ((2d) >> 31 is d's sign too: the doubled value is the only one read twice)
            d = s.trunc(v, 32)
            d2 = s.add(d, d)
            mult = p(0) if isinstance(p(0), int) else s.ext(p(0), 64)
            u = s.add(s.mul(s.ext(d2, 64), mult), p(1))
            x32 = s.shr(s.add(s.trunc(s.shr(u, 32), 32), s.shr(d2, 31)), p(2))
            return _clamped(s, x32, lo, hi, 0 if zp_in else ozp, out_w)
        if mode == "double_round" and narrow:
            # With a the shifted value (x - zp) << L wrapped to int32 and t = a*M
            # (M in [0, 2^31)): SRDHM(a, M) = floor((t + 2^30) / 2^31) (see Scalar.srdhm)
            # and RoundingDivideByPOT(q, e) = floor((q + 2^(e-1) - [q < 0]) / 2^e) for
            # e >= 1 (q itself for e = 0).  Nested floors of divisions by positive integers
            # compose, floor((floor(u / m) + c) / n) = floor((u + c*m) / (m*n)), and q < 0
            # exactly when t < -2^30, so the double rounding is one add and one shift:
            #   (t + 2^30 + 2^(30+e) - [t < -2^30] * 2^31) >> (31 + e)
            # with the two constants precomputed per channel (both 2^30 when e = 0).
            # When a = (x - zp) * 2^L does not wrap (L <= 30), t = 2^L * t' with
            # t' = (x - zp) * M and the same division is
            #   (t' + 2^(30-L) + 2^(30-L+e) - [t' < -2^(30-L)] * 2^(31-L)) >> (31 - L + e):
            # the left shift disappears and both factors of the product stay 32-bit.
            # |t'| < 2^(62-L) and the constants are below 2^(30-L) + 2^(61-L): it fits i64.
            if split is not None:
                # all in 32-bit lanes (`_split32_plan`): d * M + c = d*Mh * 2^S + (d*Ml + c)
                mh, ml, d_neg, c_pos, c_neg, sh = split
                d = s.ext(args[0], 32, unsigned)
                if izp:
                    d = s.sub(d, izp)
                c = c_pos if c_pos == c_neg else s.select(s.cmp("sle", d, d_neg), s.const(c_neg, I32), s.const(c_pos, I32))
                x32 = s.add(s.mul(d, mh), s.shr(s.add(s.mul(d, ml), c), sh))
                r = s.min(s.max(x32, lo - ozp), hi - ozp)
                if ozp:
                    r = s.add(r, ozp)
                return s.trunc(r, out_w)
            if fold_left:
                a, k = v, 1
            else:
                if ls:
                    v = s.shl(v, ls)
                a = s.wrap(v, max(32, in_w))
                left_ = p(1)
                if not (isinstance(left_, int) and left_ == 0):
                    a = s.wrap(s.shl(a, left_), 32)
                k = 2
            mult = p(0) if isinstance(p(0), int) else s.ext(p(0), 64)
            pos, neg = p(k), p(k + 1)
            shift = None if hi_form else p(k + 2)
            if (isinstance(mult, int) and mult > 0 and mult & (mult - 1) == 0 and isinstance(pos, int)
                    and pos == neg and isinstance(shift, int) and mult.bit_length() - 1 >= shift
                    and 0 <= pos < 1 << shift):
                # a multiplier 2^m with m >= the shift (ADD's input of the larger scale: 2^30):
                # floor((a * 2^m + c) / 2^shift) = a * 2^(m - shift) exactly when 0 <= c < 2^shift,
                # and a * 2^(m - shift) is smaller than the product, which fits (see above)
                r = s.min(s.max(s.trunc(s.shl(a, mult.bit_length() - 1 - shift), 32), lo - ozp), hi - ozp)
                if ozp:
                    r = s.add(r, ozp)
                return s.trunc(r, out_w)
            if a.type.width.data == 64 and 16 < s.fits(a) <= 32 and a not in s.extended:
                # an i64 value known to fit 32 bits (a sum of rescaled int8 inputs) made the
                # sign extension of its i32 truncation, which the Scalar's folds would drop:
                # the product is then extsi(i32) * extsi(i32), which tvm_bridge/epilogue.py
                # computes in pairs of 32-bit lanes (one vpmuldq per 8) instead of vpmullq
                a = s.make((arith.ExtSIOp, 64), lambda x: arith.ExtSIOp(x, I64),
                           s.make((arith.TruncIOp, 32), lambda x: arith.TruncIOp(x, I32), a))
            t = s.mul(a, mult)
            if not (isinstance(pos, int) and pos == neg):
                pos = s.select(s.cmp("slt", t, -(1 << (30 - folded))), neg, pos)
            u = s.add(t, pos)
            if hi_form:
                x32, rest = s.trunc(s.shr(u, 32), 32), p(k + 2)
                if not (isinstance(rest, int) and rest == 0):
                    x32 = s.shr(x32, rest)
            else:
                x32 = s.trunc(s.shr(u, p(k + 2)), 32)
            r = s.min(s.max(x32, lo - ozp), hi - ozp)
            if ozp:
                r = s.add(r, ozp)
            return s.trunc(r, out_w)
        if ls:
            v = s.shl(v, ls)
        v = s.wrap(v, max(32, in_w))
        if mode == "double_round":
            left_ = p(1)
            shifted = v if isinstance(left_, int) and left_ == 0 else s.wrap(s.shl(v, left_), 32)
            mult = p(0) if isinstance(p(0), int) else s.ext(p(0), 64)
            r = s.rdbpot(s.srdhm(shifted, mult, b_never_min=never_min), p(2))
        elif mode == "single_round":
            r = s.shr(s.add(s.mul(v, p(0)), p(2)), p(1))
        elif mode == "wide_round":
            r = s.wrap(s.shr(s.add(s.mul(v, p(0)), p(2)), p(1)), 32)
        elif mode in ("float_even", "float_away"):
            ft = f32 if mode == "float_even" else f64
            f = p(0)
            f = s.const(f, ft) if isinstance(f, float) else f
            magic = mode == "float_even" and max(abs(lo - ozp), abs(hi - ozp)) <= (1 << 21)
            # an i32 value converts to the same float from i32 as from i64 (one rounding of
            # the same integer); the 32-bit conversion is the cheap one
            xf = s.trunc(v, 32) if magic and max(32, in_w) == 32 else v
            y = s.emit(arith.MulfOp(s.emit(arith.SIToFPOp(xf, ft)), f))
            if magic and offset is None:
                # clamp(rint(y) + zp, lo, hi) == rint(clamp(y, lo - zp, hi - zp)) + zp (rint is
                # monotone and keeps integers).  For |y| <= 2^21, y + 1.5 * 2^23 lies in
                # [2^23, 2^24), where float32's spacing is 1: the add itself rounds y to the
                # nearest integer, ties to even, and the sum's bits minus those of 1.5 * 2^23
                # are that integer (XNNPACK's "magic bias"); subtracting 0x4B400000 - zp adds
                # the zero point in the same step.  Bits, not a float subtract,
                # because compilers fold (y + c) - c to y.
                y = s.emit(arith.MinimumfOp(s.emit(arith.MaximumfOp(y, s.const(float(lo - ozp), ft))),
                                            s.const(float(hi - ozp), ft)))
                bits = s.emit(arith.BitcastOp(s.emit(arith.AddfOp(y, s.const(12582912.0, ft))), I32))
                return s.trunc(s.sub(bits, s.const(0x4B400000 - ozp, I32)), out_w)  # rint(y) + zp
            y = s.fclamp(y, float(1 << 62))
            if offset is not None:
                # the clamp above keeps the product a separate float32 rounding (no fused multiply-add)
                y = s.fclamp(s.emit(arith.AddfOp(y, s.const(offset, ft))), float(1 << 62))
            r = s.round_half_even(y) if mode == "float_even" else s.round_half_away(y)
        else:
            r = v
        if ozp:
            r = s.add(r, ozp)
        return s.trunc(s.clamp(r, lo, hi), out_w)

    # everything `body` reads (floats by their bits: 0.0 and -0.0 are different literals)
    key = ("rescale", mode, unsigned, izp, ls, in_w, out_w, ozp, lo, hi, narrow, fold_left, folded, hi_form, never_min, sign_form, pow2_form, zp_in, _literal_key(offset),
           tuple((kind, _literal_key(v)) for kind, v in params), split)
    return inputs, maps, body, key


def _clamped(s: Scalar, x32: SSAValue, lo: int, hi: int, zp: int, width: int) -> SSAValue:
    """clamp(x32 + zp, lo, hi) truncated to `width` bits, as min(max(x32, lo - zp), hi - zp) + zp."""
    r = s.min(s.max(x32, lo - zp), hi - zp)
    if zp:
        r = s.add(r, zp)
    return s.trunc(r, width)


def _split32_plan(mult, pos, neg, total, k: int, x_lo: int, x_hi: int, in_w: int):
    """The folded double rounding floor((d*M + c) / 2^S), c = neg when d*M < -2^k else pos,
    in 32-bit lanes, or None where it does not fit or the parameters differ per channel.

    With M = Mh * 2^S + Ml (0 <= Ml < 2^S), d*M + c = (d*Mh) * 2^S + (d*Ml + c), and for an
    integer A, floor((A * 2^S + B) / 2^S) = A + floor(B / 2^S): the result is
    d*Mh + ((d*Ml + c) >> S) with no 64-bit product, when d*Mh and d*Ml + c fit int32;
    d*M < -2^k (M > 0) is d <= -floor(2^k / M) - 1.  A small input (ADD's int8 inputs:
    |d| <= 255, S = 12) is the case: two vpmulld on 16 lanes instead of vpmuldq pairs on
    8 (the `tflite` profile's residual blocks).  The plan is checked on every d the input
    can hold (inputs of at most 16 bits) against the 64-bit formula before it is taken:
    (Mh, Ml, the last d taking `neg`, pos, neg, min(S, 31)) or None."""
    if in_w > 16 or len(set(mult)) != 1 or len(set(pos)) != 1 or len(set(neg)) != 1 or len(set(total)) != 1:
        return None
    m, c_pos, c_neg, sh = int(mult[0]), int(pos[0]), int(neg[0]), int(total[0])
    if m <= 0 or sh < 1 or m & (m - 1) == 0:  # (a power of two: one shift, in the body)
        return None
    mh, ml = m >> sh, m & ((1 << sh) - 1)
    d_neg = -((1 << k) // m) - 1
    d = np.arange(x_lo, x_hi + 1, dtype=np.int64)
    want = (d * m + np.where(d * m < -(1 << k), c_neg, c_pos)) >> sh
    a = d * mh
    b = d * ml + np.where(d <= d_neg, c_neg, c_pos)
    sh32 = min(sh, 31)
    got = a + (b >> sh32)
    fits = lambda v: bool(((v >= -(1 << 31)) & (v < (1 << 31))).all())  # noqa: E731
    if not (fits(a) and fits(b) and fits(got) and np.array_equal(got, want)
            and -(1 << 31) <= c_pos < 1 << 31 and -(1 << 31) <= c_neg < 1 << 31):
        return None
    return mh, ml, d_neg, c_pos, c_neg, sh32


def _literal_key(value):
    """A Python literal in a body cache key: ints as themselves (bools apart), floats by their exact bits."""
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, (bool, np.bool_)):
        return ("bool", bool(value))
    return value if value is None else ("int", int(value))


# ----- elementwise -----------------------------------------------------------------------------


def _binary_body(fn, lzp: int, rzp: int, w: int) -> Callable[..., SSAValue]:
    """The body of a qint binary op: `fn` on the operands minus their zero points, in i64,
    truncated to the result's width `w`."""
    def body(s, a, b, _o=None):
        av, bv = s.ext(a), s.ext(b)
        if lzp:
            av = s.sub(av, lzp)
        if rzp:
            bv = s.sub(bv, rzp)
        return s.trunc(fn(s, av, bv), w)

    return body


def _binary(fn):
    def lower(e: Lowering, op) -> SSAValue:
        w = qint.int_width(op.results[0])
        lzp, rzp = op.attr("lhs_zp", 0), op.attr("rhs_zp", 0)
        return e.elementwise(list(op.operands), op.results[0].type, _binary_body(fn, lzp, rzp, w),
                             key=("binary", fn, _literal_key(lzp), _literal_key(rzp), w))

    return lower


_ADD, _SUB = (lambda s, a, b: s.add(a, b)), (lambda s, a, b: s.sub(a, b))
_SUMS = {qint.AddOp: _ADD, qint.SubOp: _SUB}


def _single_user(value: SSAValue) -> Operation | None:
    use = value.first_use
    return use.operation if use is not None and use._next_use is None else None


def _uniform_rescale(op) -> bool:
    """A qint.rescale whose parameters are one value for all channels: its body reads them as
    literals, and no per-channel constant (see `_rescale_plan`)."""
    if type(op) is not qint.RescaleOp:
        return False
    mode = op.mode
    if mode in ("float_even", "float_away"):
        return len(set(op.attr("scale"))) == 1
    if mode in ("double_round", "single_round", "wide_round"):
        return len(set(op.attr("multiplier"))) == 1 and len(set(op.attr("shift"))) == 1
    return True


def _rescaled_sum(a: Operation) -> tuple | None:
    """(ha, ra, hb, rb, r) when `a` is a qint.add / qint.sub without zero points of two
    rescales `ra`, `rb` it alone reads, itself read only by the rescale `r`, all three with
    one value per parameter: TFLite's ADD / SUB (each input rescaled to a common scale,
    summed, rescaled to the output's).  `ha` (`hb`) is the rescale, of any parameters, that
    `ra` (`rb`) alone reads when `ra` is not broadcast and `ha` does not read an add / sub
    (a convolution's requantization before a residual add), else None.  `r` read by another
    add / sub would make it a possible `ra` of another sum: then none, so that the sums
    never share an op."""
    if a.attr("lhs_zp", 0) or a.attr("rhs_zp", 0):
        return None
    r = _single_user(a.results[0])
    if not _uniform_rescale(r) or r.results[0].first_use is None or type(_single_user(r.results[0])) in _SUMS:
        return None  # (an `r` read by nothing is erased as dead before it is lowered: no sum then)
    ra, rb = a.operands[0].owner, a.operands[1].owner
    if ra is rb or not (_uniform_rescale(ra) and _uniform_rescale(rb)):
        return None
    if _single_user(ra.results[0]) is not a or _single_user(rb.results[0]) is not a:
        return None
    shape = qint.shape_of(r.results[0])

    def head(rescale):
        h = rescale.operands[0].owner
        if (type(h) is qint.RescaleOp and _single_user(h.results[0]) is rescale
                and type(h.operands[0].owner) not in _SUMS and qint.shape_of(rescale.results[0]) == shape):
            return h
        return None

    return head(ra), ra, head(rb), rb, r


def _sum_of(op: Operation, seen: dict) -> tuple | None:
    """(ha, ra, hb, rb, a, r) of the rescaled sum (`_rescaled_sum`) `op` is one of the ops
    of; `seen` remembers each sum's answer (id(a) -> (a, group)) for its other ops."""
    if type(op) in _SUMS:
        candidates = (op,)
    else:  # a rescale: ra / rb (read by the sum), ha / hb (read by one of those) or r
        user = _single_user(op.results[0])
        after = _single_user(user.results[0]) if type(user) is qint.RescaleOp else None
        candidates = (user, after, op.operands[0].owner)
    for a in candidates:
        if type(a) not in _SUMS:
            continue
        hit = seen.get(id(a))
        if hit is None:
            hit = seen[id(a)] = (a, _rescaled_sum(a))  # (a kept alive: its id stays its own)
        if hit[1] is not None:
            ha, ra, hb, rb, r = hit[1]
            if op is a or op is ra or op is rb or op is r or op is ha or op is hb:
                return ha, ra, hb, rb, a, r
    return None


def lower_rescaled_sum(e: Lowering, ha: qint.RescaleOp | None, ra: qint.RescaleOp, hb: qint.RescaleOp | None,
                       rb: qint.RescaleOp, a: Operation, r: qint.RescaleOp) -> SSAValue:
    """r(ra(ha(x)) +/- rb(hb(y))) (`ha`, `hb` where there are: see `_rescaled_sum`) as one
    elementwise generic of x, y and the per-channel constants of `ha` and `hb`: the bodies
    of the rescales and of the sum one after the other in one body, each step the scalar
    function its own generic would apply (so every value is the same), without the
    intermediate tensors, generics and their bodies' conversions at the boundaries."""
    uniform = [_rescale_plan(e, op) for op in (ra, rb, r)]
    if any(len(inputs) != 1 for inputs, _, _, _ in uniform):
        raise AssertionError("a rescale with one value per parameter read a per-channel constant")
    (_, _, body_a, key_a), (_, _, body_b, key_b), (_, _, body_r, key_r) = uniform
    out_t = r.results[0].type
    shape = list(out_t.get_shape())
    inputs, maps, sides = [], [], []
    for h, rescale, body in ((ha, ra, body_a), (hb, rb, body_b)):
        if h is None:
            x = rescale.operands[0]
            inputs.append(x)
            maps.append(broadcast_map(qint.shape_of(x), shape))
            sides.append((body, None, 0, None))
        else:  # the head's value and constants, read with its maps (its loops are the sum's)
            h_inputs, h_maps, h_body, h_key = _rescale_plan(e, h)
            inputs.extend(h_inputs)
            maps.extend(h_maps)
            sides.append((body, h_body, len(h_inputs) - 1, h_key))
    fn = _SUMS[type(a)]
    w = qint.int_width(a.results[0])
    add = _binary_body(fn, 0, 0, w)

    def body(s, *args):
        values, i = [], 0
        for side_body, h_body, n_params, _ in sides:
            v = args[i]
            if h_body is not None:
                v = h_body(s, v, *args[i + 1:i + 1 + n_params])
            values.append(side_body(s, v))
            i += 1 + n_params
        return body_r(s, add(s, *values))

    key = ("rescaled_sum", tuple(side[2:] for side in sides), key_a, key_b, fn, w, key_r)
    return e.generic(inputs, maps, out_t, identity(len(shape)), body, key=key)


def lower_scaled_add(e: Lowering, op: qint.ScaledAddOp) -> SSAValue:
    """XNNPACK's fused add: `(wrap32(bias + a * Ma + b * Mb) >> shift) + zp`, clamped."""
    unsigned = op.attr("unsigned", False)
    ma, mb, bias, shift = (op.attr(n) for n in ("lhs_multiplier", "rhs_multiplier", "bias", "shift"))
    ozp = op.attr("output_zp", 0)
    lo, hi = op.bounds()
    w = qint.int_width(op.results[0])

    # Where no sum can leave int32 (int8 inputs: 255 |Ma| + 255 |Mb| + |bias|, with the zero
    # point added before the shift as zp * 2^shift) the wrap is a no-op: all in 32-bit lanes,
    # twice as many per register, and the clamp to the output type's range is a saturating
    # narrow; else in i64 with the wrap, as XNNPACK's int32 arithmetic does
    reach = [(1 << qint.int_width(v)) - 1 if unsigned else 1 << (qint.int_width(v) - 1) for v in op.operands]
    narrow = reach[0] * abs(ma) + reach[1] * abs(mb) + abs(bias) + (abs(ozp) << shift) < (1 << 31)

    def body(s, a, b, _o):
        if narrow:
            acc = s.add(s.add(s.mul(s.ext(a, 32, unsigned), ma), s.mul(s.ext(b, 32, unsigned), mb)),
                        bias + (ozp << shift))
            return s.trunc(s.clamp(s.shr(acc, shift), lo, hi), w)
        acc = s.add(s.add(s.mul(s.ext(a, 64, unsigned), ma), s.mul(s.ext(b, 64, unsigned), mb)), bias)
        r = s.add(s.shr(s.wrap(acc, 32), shift), ozp)
        return s.trunc(s.clamp(r, lo, hi), w)

    key = ("scaled_add", unsigned, *(_literal_key(v) for v in (ma, mb, bias, shift, ozp, lo, hi)), w, narrow)
    return e.elementwise(list(op.operands), op.results[0].type, body, key=key)


def lower_table(e: Lowering, op: qint.TableOp) -> SSAValue:
    x, table = op.operands
    w = qint.int_width(x)
    unsigned = op.attr("unsigned", False)
    out_t = op.results[0].type

    def body(s, a, _o):
        idx = s.ext(a, 64, unsigned)
        if not unsigned:
            idx = s.add(idx, 1 << (w - 1))
        return s.trunc(s.lookup(table, idx), qint.int_width(op.results[0]))

    return e.elementwise([x], out_t, body)


#: the largest divisor `lower_divide_round` divides by multiplying (its products stay below 2^63)
_MAGIC_MAX_DIVISOR = 1 << 14


def division_magic(d: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """(S, m_hi, m_lo) with floor(n / d) == (n m_hi + ((n m_lo) >> 16)) >> (S - 16) for every
    integer 0 <= n < 2^32 and divisor 1 <= d <= 2^14 (elementwise; all products below 2^63).

    m = ceil(2^S / d) with S = 32 + ceil(log2 max d): m d = 2^S + e with 0 <= e < d, so
    n m / 2^S = n / d + n e / (d 2^S), and n e < 2^32 d <= 2^S keeps the excess below
    1 / d: the floor is floor(n / d).  m is split at bit 16 (m_hi < 2^(16 + 14), m_lo < 2^16)
    and the floor of n m / 2^S taken in two steps, which is exact for powers of two."""
    d = np.asarray(d, np.int64)
    shift = 32 + int(int(d.max()) - 1).bit_length()
    m = -(-(np.int64(1) << shift) // d)
    return shift, m >> 16, m & 0xFFFF


def lower_divide_round(e: Lowering, op: qint.DivideRoundOp) -> SSAValue:
    rounding = op.attr("rounding", "away")
    w = qint.int_width(op.results[0])
    divisor = _constant_values(op.operands[1])
    # (the magic numbers are exact for |x| + d / 2 < 2^32: a dividend of at most 32 bits)
    if rounding == "away" and divisor is not None and divisor.size and qint.int_width(op.operands[0]) <= 32 and \
            1 <= int(divisor.min()) and int(divisor.max()) <= _MAGIC_MAX_DIVISOR:
        return _divide_round_by_constants(e, op, np.asarray(divisor, np.int64), w)

    def body(s, a, b, _o):
        x, d = s.ext(a), s.ext(b)
        if rounding == "away":
            mag = s.divsi(s.add(s.select(s.cmp("slt", x, 0), s.sub(0, x), x), s.divsi(d, 2)), d)
            r = s.select(s.cmp("sgt", x, 0), mag, s.sub(0, mag))
        elif rounding == "half_up":
            r = s.floordiv(s.add(s.mul(x, 2), d), s.mul(d, 2))
        else:
            q = s.floordiv(x, d)
            twice = s.mul(s.sub(x, s.mul(q, d)), 2)
            odd = s.cmp("ne", s.band(q, 1), 0)
            up = s.emit(arith.OrIOp(s.cmp("sgt", twice, d), s.emit(arith.AndIOp(s.cmp("eq", twice, d), odd))))
            r = s.add(q, s.bool_to_int(up))
        return s.trunc(r, w)

    return e.elementwise(list(op.operands), op.results[0].type, body, key=("divide_round", rounding, w))


def _divide_round_by_constants(e: Lowering, op: qint.DivideRoundOp, d: np.ndarray, w: int) -> SSAValue:
    """divide_round `away` by constant divisors d (an average pool's in-bounds counts) as a
    multiplication (`division_magic`): sign(x) floor((|x| + d / 2) / d), |x| + d / 2 < 2^32
    for an i32 x.  A 64-bit integer division has no vector instruction; InceptionV3's 3x3
    'SAME' average pools spent 40 us a call in it at 4x4x768 (TVM, Zen 5).  The constants
    are operands broadcast like d, or literals where all divisors are one value."""
    shift, m_hi, m_lo = division_magic(d)
    x = op.operands[0]
    consts = []
    for values in (d // 2, m_hi, m_lo):
        if len(np.unique(values)) == 1:
            consts.append(int(values.flat[0]))
        else:
            consts.append(e.constant(np.ascontiguousarray(values), 64))
    tensors = [c for c in consts if not isinstance(c, int)]

    def body(s, a, *args):
        it = iter(args[:-1])
        half, hi, lo = (c if isinstance(c, int) else next(it) for c in consts)
        v = s.ext(a)
        n = s.add(s.select(s.cmp("slt", v, 0), s.sub(0, v), v), half)
        product = s.mul(n, hi) if isinstance(lo, int) and lo == 0 else s.add(s.mul(n, hi), s.shr(s.mul(n, lo), 16))
        mag = s.shr(product, shift - 16)
        return s.trunc(s.select(s.cmp("sgt", v, 0), mag, s.sub(0, mag)), w)

    return e.elementwise([x, *tensors], op.results[0].type, body,
                         key=("divide_round_magic", shift, w, tuple(c if isinstance(c, int) else None for c in consts)))


# ----- pools and reductions --------------------------------------------------------------------


def _pool(e: Lowering, op, combine: str) -> SSAValue:
    x = op.operands[0]
    kh, kw = op.attr("kernel")
    sh, sw = op.attr("strides", [1, 1])
    pt, pb, pl, pr = op.attr("padding", [0, 0, 0, 0])
    in_w = qint.int_width(x)
    out_w = qint.int_width(op.results[0])
    fill = 0 if combine == "sum" else signed_min(in_w)
    xp = e.pad(x, [0, pt, pl, 0], [0, pb, pr, 0], fill)
    window = e.constant(np.zeros((kh, kw), np.int8), 8)
    maps = [amap(6, [dim(0), dim(1) * sh + dim(4), dim(2) * sw + dim(5), dim(3)]), amap(6, [dim(4), dim(5)])]

    def body(s, a, _w, acc):
        v = s.ext(a, out_w)
        return s.emit((arith.AddiOp if combine == "sum" else arith.MaxSIOp)(acc, v))

    return e.generic([xp, window], maps, op.results[0].type, amap(6, [dim(i) for i in range(4)]), body,
                     iterators=["parallel"] * 4 + ["reduction"] * 2,
                     init=0 if combine == "sum" else signed_min(out_w), key=("pool", combine, out_w))


def _reduce_op(combine: str):
    def lower(e: Lowering, op) -> SSAValue:
        return reduce(e, op.operands[0], op.attr("axes"), qint.int_width(op.results[0]), combine,
                      op.attr("keep_dims", False))

    return lower


# ----- softmax -----------------------------------------------------------------------------------


def _row_map(rank: int) -> AffineMapAttr:
    return amap(rank, [dim(i) for i in range(rank - 1)])


def _row_sum(e: Lowering, x: SSAValue, mx: SSAValue, width: int, term) -> SSAValue:
    """sum over the last axis of `term(s, x, max of its row)` (an i`width` value; a table read),
    as one reduction generic: the terms are never written out."""
    shape = list(qint.shape_of(x))
    rank = len(shape)
    return e.generic([x, mx], [identity(rank), _row_map(rank)], int_tensor(shape[:-1], width), _row_map(rank),
                     lambda s, a, b, acc: s.emit(arith.AddiOp(acc, term(s, a, b))),
                     iterators=["parallel"] * (rank - 1) + ["reduction"], init=0)


def lower_softmax(e: Lowering, op: qint.SoftmaxOp) -> SSAValue:
    x = op.operands[0]
    shape = list(qint.shape_of(x))
    rank = len(shape)
    if rank == 0:
        raise Unsupported("softmax of a rank-0 tensor")
    in_w = qint.int_width(x)
    out_w = qint.int_width(op.results[0])
    m, sft = op.attr("input_multiplier"), op.attr("input_shift")
    single = op.attr("mode", "double_round") == "single_round"
    if op.float_table:
        return lower_softmax_float(e, op)
    mx = reduce(e, x, [rank - 1], in_w, "max")
    diffs = -np.arange(1 << in_w, dtype=np.int64)  # table index k holds diff = -k
    ident, row = identity(rank), _row_map(rank)
    out_t = op.results[0].type
    if in_w == 8:
        diff_min = op.attr("diff_min")
        rounding = "single" if single else "tflite"
        valid = diffs >= diff_min
        rescaled = act._mbqm_gt1(np.where(valid, diffs, 0), m, sft, rounding)
        exps = act.exp_on_negative_values(rescaled, act._SCALED_DIFF_INTEGER_BITS)
        contrib = np.where(valid, act._rescale(exps, 0, act._ACCUM_INTEGER_BITS), 0)
        exp_table = e.constant(exps, 32)
        contrib_table = e.constant(contrib, 32)

        def diff_index(s, a, b):
            return s.sub(s.ext(b), s.ext(a))  # max - x = -diff >= 0

        total = _row_sum(e, x, mx, 32, lambda s, a, b: s.trunc(s.lookup(contrib_table, diff_index(s, a, b)), 32))

        recip = reciprocal(e, total)
        lo, hi = signed_min(out_w), signed_max(out_w)

        # the final shift per row (num_bits_over_unit + 31 - out_bits) in a stage of its own:
        # in one body with the rest it makes TVM's arithmetic analyzer crawl
        rows = identity(rank - 1)
        exponent = e.generic([total], [rows], int_tensor(shape[:-1], 32), rows,
                             lambda s, t, _o: s.trunc(s.sub(act._ACCUM_INTEGER_BITS + 31 - out_w,
                                                            s.clz32(s.ext(t))), 32))

        def final(s, a, b, ex, rcp, _o):
            k = diff_index(s, a, b)
            value = s.rdbpot(s.srdhm(s.ext(rcp), s.lookup(exp_table, k)), s.ext(ex))
            value = s.clamp(s.add(value, lo), lo, hi)
            return s.trunc(s.select(s.cmp("sle", k, -diff_min), value, lo), out_w)

        return e.generic([x, mx, exponent, recip], [ident, row, row, row], out_t, ident, final)
    # 16-bit: TFLite's LUT recipe
    from qdialect.interp_qint import softmax16_luts

    exp_lut, recip_lut = softmax16_luts()
    scaled = multiply_single_rounding(diffs, m, sft) if single else multiply_by_quantized_multiplier(diffs, m, sft)
    exps = act.int16_lut_lookup(np.clip(scaled + 32767, -32768, 32767), exp_lut)
    exp_table = e.constant(exps, 32)
    recips = act.int16_lut_lookup(np.arange(-32768, 32768, dtype=np.int64), recip_lut)
    recip_table = e.constant(recips, 32)

    def exp_of(s, a, b):
        return s.lookup(exp_table, s.sub(s.ext(b), s.ext(a)))

    total = _row_sum(e, x, mx, 64, lambda s, a, b: s.ext(s.trunc(exp_of(s, a, b), 32), 64))

    def final16(s, a, b, t, _o):
        ex = exp_of(s, a, b)
        h = s.clz32(t)
        shifted = s.shr(s.add(s.shl(t, s.sub(h, 1)), 1 << 13), 14)
        index = s.clamp(s.sub(shifted, (1 << 15) + (1 << 16)), -32768, 32767)
        rcp = s.lookup(recip_table, s.add(index, 32768))
        right = s.sub(31, h)
        value = s.shr(s.add(s.mul(ex, rcp), s.shl(1, s.sub(right, 1))), right)
        return s.trunc(s.clamp(value, 0, 32767), out_w)

    return e.generic([x, mx, total], [ident, row, row], out_t, ident, final16)


SOFTMAX_MAX_ROW = 1024  # the float row sum is spelled out element by element
_SUM_CHUNK = 32  # row elements added per linalg.generic (long bodies compile slowly in TVM)


def lower_softmax_float(e: Lowering, op: qint.SoftmaxOp) -> SSAValue:
    """optimized_ops::Softmax (8-bit, LiteRT's default path), as
    activations._softmax_8bit_float_table computes it: a float32 exp table
    indexed by `max - x`, the row sum added sequentially in float32 (spelled out
    element by element through constant-index maps, since a reduction may be
    reordered by TVM), `1 / (sum * s_out)`, product rounded, + zero point."""
    x = op.operands[0]
    shape = list(qint.shape_of(x))
    rank = len(shape)
    length = shape[-1]
    if length > SOFTMAX_MAX_ROW:
        raise Unsupported(f"float-table softmax over rows of {length} > {SOFTMAX_MAX_ROW} elements "
                          "(the sequential float sum is spelled out element by element)")
    if length == 0:
        raise Unsupported("softmax over an empty row")
    out_w = qint.int_width(op.results[0])
    ort = op.attr("mode") == "ort_float"
    if ort:  # QLinearSoftmax's table, indexed by d = max - x (its index x - max + 255 = 255 - d)
        xs = float(np.float32(op.attr("input_scale")[0]))
        bs = max(0.0, float(np.log(float(np.finfo(np.float32).max) / length)) - 5.0) / xs
        table = np.exp((bs - np.arange(256, dtype=np.float64)) * xs).astype(np.float32)
    else:
        scale = np.float32(-np.float32(op.attr("input_scale")[0]) * np.float32(op.attr("beta")[0]))
        table = act.expf((scale * np.arange(256, dtype=np.float32)).astype(np.float32)).astype(np.float32)
    tt = TensorType(f32, [256])
    table_v = e.add(arith.ConstantOp(DenseIntOrFPElementsAttr(tt, BytesAttr(np.ascontiguousarray(table).tobytes())), tt))
    out_scale = float(np.float32(op.attr("output_scale")[0]))
    ozp = op.attr("output_zp", 0)
    tie_even = op.attr("mode") == "float_even"
    mx = reduce(e, x, [rank - 1], 8, "max")
    ident, row = identity(rank), _row_map(rank)

    def exp_of(s, a, b):
        i = s.emit(arith.IndexCastOp(s.sub(s.ext(b), s.ext(a)), IndexType()))
        return s.emit(tensor.ExtractOp(table_v, [i], f32))

    exps = e.generic([x, mx], [ident, row], TensorType(f32, shape), ident, lambda s, a, b, _o: exp_of(s, a, b))
    rows = shape[:-1]
    row_t = TensorType(f32, rows)
    n = rank - 1
    total = None
    for start in range(0, length, _SUM_CHUNK):
        cols = list(range(start, min(start + _SUM_CHUNK, length)))
        inputs = ([total] if total is not None else []) + [exps] * len(cols)
        maps = ([identity(n)] if total is not None else []) + [amap(n, [dim(i) for i in range(n)] + [c]) for c in cols]

        def add_in_order(s, *args):
            vals = args[:-1]
            acc = vals[0]
            for v in vals[1:]:
                acc = s.emit(arith.AddfOp(acc, v))
            return acc

        total = e.generic(inputs, maps, row_t, identity(n), add_in_order)
    lo, hi = signed_min(out_w), signed_max(out_w)
    if ort:
        if op.attr("output_unsigned", False):
            lo, hi = 0, (1 << out_w) - 1
        ys = float(np.floor(np.float32(1.0) / np.float32(out_scale)))

        def final_ort(s, ex, tot, _o):
            num = s.emit(arith.MulfOp(ex, s.const(ys, f32)))  # (up to ~1e37: the table is scaled near FLT_MAX / D)
            r = s.round_half_even(s.fclamp(s.emit(arith.DivfOp(num, tot)), float(1 << 62)))
            return s.trunc(s.clamp(s.add(r, ozp), lo, hi), out_w)

        return e.generic([exps, total], [ident, row], op.results[0].type, ident, final_ort)
    inv = e.generic([total], [identity(n)], row_t, identity(n),
                    lambda s, t, _o: s.emit(arith.DivfOp(s.const(1.0, f32), s.emit(arith.MulfOp(t, s.const(out_scale, f32))))))

    def final(s, ex, iv, _o):
        # the clamp (no-op here) keeps the product one float32 rounding: no fused multiply-add below
        prob = s.fclamp(s.emit(arith.MulfOp(ex, iv)), float(1 << 62))
        r = s.round_half_even(prob) if tie_even else s.round_half_away(prob)
        return s.trunc(s.clamp(s.add(r, ozp), lo, hi), out_w)

    return e.generic([exps, inv], [ident, row], op.results[0].type, ident, final)


def reciprocal(e: Lowering, total: SSAValue) -> SSAValue:
    """TFLite GetReciprocal's Q0.31 reciprocal of each i32 `total` (gemmlowp
    one_over_one_plus_x_for_x_in_0_1 on the normalised value), as i32.

    One linalg.generic per Newton-Raphson step: in a single body the reused
    values make expression trees that TVM's arithmetic analyzer cannot digest.
    """
    shape = list(qint.shape_of(total))
    ident = identity(len(shape))
    t32 = int_tensor(shape, 32)

    def step(inputs, body):
        return e.generic(inputs, [ident] * len(inputs), t32, ident,
                         lambda s, *args: s.trunc(body(s, *[s.ext(a) for a in args[:-1]]), 32))

    def half_denominator(s, t):
        shifted = s.wrap(s.sub(s.shl(s.band(t, 0xFFFFFFFF), s.clz32(t)), 1 << 31), 32)
        total = s.add(shifted, INT32_MAX)  # rounding half sum with INT32_MAX
        return s.divsi(s.add(total, s.select(s.cmp("sge", total, 0), 1, -1)), 2)

    hd = step([total], half_denominator)
    x = step([hd], lambda s, h: s.wrap(s.add(_fx_const(48.0 / 17.0, 2), s.srdhm(h, _fx_const(-32.0 / 17.0, 2))), 32))

    def newton(s, h, x):
        one_minus = s.wrap(s.sub(1 << 29, s.srdhm(h, x)), 32)
        return s.wrap(s.add(x, s.sat_shift_left(s.srdhm(x, one_minus), 2)), 32)

    for _ in range(3):
        x = step([hd, x], newton)
    return step([x], lambda s, v: s.sat_shift_left(v, 1))


def _fx_const(value: float, integer_bits: int = 0) -> int:
    return act._fx_const(value, integer_bits)


# ----- the pass ----------------------------------------------------------------------------------

LOWERINGS: dict[type, Callable[[Lowering, Operation], SSAValue]] = {
    qint.Conv2DOp: lower_conv2d,
    qint.DepthwiseConv2DOp: lower_depthwise,
    qint.FullyConnectedOp: lower_fully_connected,
    qint.BatchMatmulOp: lower_batch_matmul,
    qint.BiasAddOp: lower_bias_add,
    qint.RescaleOp: lower_rescale,
    qint.AddOp: _binary(_ADD),
    qint.SubOp: _binary(_SUB),
    qint.MulOp: _binary(lambda s, a, b: s.mul(a, b)),
    qint.ScaledAddOp: lower_scaled_add,
    qint.MaximumOp: _binary(lambda s, a, b: s.max(a, b)),
    qint.MinimumOp: _binary(lambda s, a, b: s.min(a, b)),
    qint.TableOp: lower_table,
    qint.DivideRoundOp: lower_divide_round,
    qint.PoolSumOp: lambda e, op: _pool(e, op, "sum"),
    qint.PoolMaxOp: lambda e, op: _pool(e, op, "max"),
    qint.ReduceSumOp: _reduce_op("sum"),
    qint.ReduceMaxOp: _reduce_op("max"),
    qint.ReduceMinOp: _reduce_op("min"),
    qint.SoftmaxOp: lower_softmax,
}


_SUM_OPS = (qint.AddOp, qint.SubOp, qint.RescaleOp)


#: "0": the `tflite` double rounding keeps its select on the 64-bit product even where the
#: sign form applies (`_rescale_plan`), for A/B measurements; it changes the L3, so the
#: compiled-model cache keys the two apart by themselves
SIGN_FORM_ENV = "QDIALECT_SIGN_FORM"


def _storage_reach(v: SSAValue, zp: int = 0) -> int:
    """max |x - zp| over the values an integer of `v`'s width holds, read as signed or as
    unsigned, whichever is farther from `zp`."""
    bits = qint.int_width(v)
    return max(abs(-(1 << (bits - 1)) - zp), abs((1 << bits) - 1 - zp))


def value_bound(v: SSAValue, memo: dict | None = None) -> int | None:
    """A bound on |x| for every value x an L2 integer value `v` can take, where its producers
    tell one (else None):

    - a convolution's, depthwise convolution's or fully connected layer's sums over constant
      weights, then maybe a constant bias: per output channel sum |w - weight_zp| * max
      |in - input_zp| (+ |bias|), the largest over the channels;
    - a `double_round` rescale: |SRDHM(a, M)| <= |a| M / 2^31 + 1 and RoundingDivideByPOT
      adds at most 1, so |a| M_max / 2^(31 + e_min) + 2 plus |output_zp|, with a = (x -
      input_zp) << left shifts (x bounded as an input of its width where nothing bounds it
      better), and never beyond the clamp;
    - qint.add / sub / mul of two bounded values (minus their zero points);
    - the sums of reduce_sum, pool_sum and batch_matmul: the count of terms times each
      term's bound (a matmul's: the product of its operands' reaches from their zero points).
    """
    memo = {} if memo is None else memo
    key = id(v)
    if key in memo:
        return memo[key]
    memo[key] = None  # (no cycles in SSA; a guard all the same)
    op = v.owner
    bound = None
    if isinstance(op, qint.BiasAddOp):
        bias = _constant_values(op.operands[1])
        if bias is not None:
            per = _channel_sums_bound(op.operands[0].owner)
            if per is not None and per.shape == bias.shape:
                bound = int((per + np.abs(bias.astype(np.int64))).max())
            elif (acc := value_bound(op.operands[0], memo)) is not None:
                bound = acc + int(np.abs(bias.astype(np.int64)).max(initial=0))
    elif isinstance(op, (qint.Conv2DOp, qint.DepthwiseConv2DOp, qint.FullyConnectedOp)):
        per = _channel_sums_bound(op)
        bound = None if per is None else int(per.max(initial=0))
    elif isinstance(op, qint.RescaleOp) and op.mode == "double_round":
        x = op.operands[0]
        izp = op.attr("input_zp", 0)
        inner = value_bound(x, memo)
        a = _storage_reach(x, izp) if inner is None else inner + abs(izp)
        a = min(a, _storage_reach(x, izp))
        m, sft = op.attr("multiplier"), op.attr("shift")
        left = op.attr("left_shift", 0) + max(0, max(sft))
        e_min = max(0, -max(sft))
        scaled = ((a << left) * max(abs(v) for v in m) >> (31 + e_min)) + 2 + abs(op.attr("output_zp", 0))
        lo, hi = op.bounds()
        bound = min(scaled, max(abs(lo), abs(hi)))
    elif isinstance(op, (qint.ReduceSumOp, qint.PoolSumOp, qint.BatchMatmulOp)):
        # sums of `count` terms, each bounded by its operand's storage (or bound) and zero points
        x = op.operands[0]
        shape = qint.shape_of(x)
        if isinstance(op, qint.ReduceSumOp):
            count = math.prod(shape[a] for a in op.reduced_axes())
            term = _term_reach(x, 0, memo)
        elif isinstance(op, qint.PoolSumOp):
            kh, kw = (op.attr("kernel") or [0, 0])[:2]
            count, term = kh * kw, _term_reach(x, 0, memo)
        else:
            count = shape[-1]
            term = _term_reach(x, op.attr("lhs_zp", 0), memo) * _term_reach(op.operands[1], op.attr("rhs_zp", 0), memo)
        bound = count * term
        if bound >= 1 << (qint.int_width(op.results[0]) - 1):  # (it wraps at its width)
            bound = None
    elif isinstance(op, (qint.AddOp, qint.SubOp, qint.MulOp)):
        parts = []
        for operand, zp in zip(op.operands, (op.attr("lhs_zp", 0), op.attr("rhs_zp", 0))):
            parts.append(_term_reach(operand, zp, memo))
        bound = parts[0] * parts[1] if isinstance(op, qint.MulOp) else parts[0] + parts[1]
        bound = min(bound, 1 << (qint.int_width(op.results[0]) - 1))  # (it wraps at its width)
        if bound == 1 << (qint.int_width(op.results[0]) - 1):
            bound = None
    memo[key] = bound
    return bound


def _term_reach(v: SSAValue, zp: int, memo: dict) -> int:
    """max |x - zp| over the values `v` can take: its bound where one is known, never more
    than its storage allows."""
    b = value_bound(v, memo)
    reach = _storage_reach(v, zp)
    return reach if b is None else min(b + abs(zp), reach)


def _channel_sums_bound(op) -> np.ndarray | None:
    """Per output channel, a bound on |sums| of a convolution / depthwise convolution / fully
    connected layer `op` over constant weights, else None."""
    if not isinstance(op, (qint.Conv2DOp, qint.DepthwiseConv2DOp, qint.FullyConnectedOp)):
        return None
    w = _constant_values(op.operands[1])
    x = op.operands[0]
    if w is None or w.size == 0 or qint.int_width(x) > 16:
        return None
    reach = _storage_reach(x, op.attr("input_zp", 0))
    mag = np.abs(w.astype(np.int64) - op.attr("weight_zp", 0))
    if isinstance(op, qint.DepthwiseConv2DOp):
        per = mag.reshape(-1, mag.shape[-1]).sum(axis=0)
    else:
        per = mag.reshape(mag.shape[0], -1).sum(axis=1)
    return per * reach


@dataclass
class LowerQIntOp(RewritePattern):
    failures: list[str]
    bodies: dict = field(default_factory=dict)  # Lowering.generic's body cache, for one pass run
    # id(op) -> (op, value): ops an earlier lowering computed along with its own (Lowering.replaces)
    done: dict = field(default_factory=dict)
    sums: dict = field(default_factory=dict)  # _sum_of's memory, for one pass run
    # id(rescale) -> (rescale, value_bound of its input), taken before the walk replaces the producers
    bounds: dict = field(default_factory=dict)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if self.done and (hit := self.done.pop(id(op), None)) is not None:
            operands = list(op.operands)
            rewriter.replace(op, [], [hit[1]])
            for value in operands:  # a constant only the op read (a folded bias)
                if value.first_use is None and isinstance(const := value.owner, arith.ConstantOp):
                    const.detach()
                    const.erase()
            return
        if type(op) in _SUM_OPS and (group := _sum_of(op, self.sums)) is not None:
            if op is group[5]:  # the sum's last op: all of them as one generic, where the last one was
                self._lower_sum(group, rewriter)
            return
        fn = LOWERINGS.get(type(op))
        if fn is None:
            return
        e = Lowering(self.bodies, self.bounds)
        try:
            out = fn(e, op)
        except Unsupported as err:
            self.failures.append(f"{op.name}: {err}")
            return
        rewriter.replace(op, e.ops, [out])
        for earlier in e.dead:
            if not any(res.uses for res in earlier.results):
                init = [v.owner for v in earlier.operands if isinstance(v.owner, tensor.EmptyOp)]
                earlier.detach()
                earlier.erase()
                for empty in init:
                    if not empty.results[0].uses:
                        empty.detach()
                        empty.erase()
        for later, value in e.replaces:
            self.done[id(later)] = (later, value)  # (the entry keeps `later` alive: its id stays its own)

    def _lower_sum(self, group: tuple, rewriter) -> None:
        ha, ra, hb, rb, a, r = group
        e = Lowering(self.bodies, self.bounds)
        try:
            out = lower_rescaled_sum(e, *group)
        except Unsupported as err:
            self.failures.append(f"{r.name}: {err}")
            return
        rewriter.replace(r, e.ops, [out])
        for op in (a, ra, rb, ha, hb):  # read by nothing now (each after its reader)
            if op is not None:
                op.detach()
                op.erase()


@dataclass(frozen=True)
class QnnLowerToLinalgPass(ModulePass):
    """L2 -> L3: every qint op into linalg/arith/tensor on integer tensors (see the module docstring)."""

    name = "qnn-lower-to-linalg"

    @cyclic_gc.paused()
    def apply(self, ctx: Context, op: ModuleOp) -> None:
        failures: list[str] = []
        # = PatternRewriteWalker(GreedyRewritePatternApplier([LowerQIntOp(failures)]),
        #                        apply_recursively=False).rewrite_module(op)
        bounds, memo = {}, {}
        for o in op.walk():
            if isinstance(o, qint.RescaleOp) and o.mode == "double_round":
                b = value_bound(o.operands[0], memo)
                if b is not None:
                    bounds[id(o)] = (o, b)  # (the op kept: its id stays its own while the walk erases)
        rewrite_once(op.body, LowerQIntOp(failures, bounds=bounds))
        if failures:
            raise PassFailedException("qnn-lower-to-linalg cannot lower: " + "; ".join(dict.fromkeys(failures)))
        left = sorted(o.name for o in op_types(op)
                      if o.dialect_name() not in ("builtin", "func", "arith", "linalg", "tensor")
                      and o.name not in ("math.fma", "math.ctlz"))  # ORT's float kernels' fused
        # multiply-add chains; count leading zeros (TFLite's reciprocals and softmax)
        if left:
            raise PassFailedException("qnn-lower-to-linalg cannot lower: " + ", ".join(left)
                                      + " (not an upstream func/arith/linalg/tensor/math.fma/math.ctlz op)")
