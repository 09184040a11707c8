"""`qnn-lower-to-float` (L1 -> L0): every qnn op becomes fake quantization.

    %y = qnn.conv2d %x, %w, %b {act_min = -128, act_max = 127, ...} : (!qx, !qw, !qb) -> !qy

becomes

    %xf = quant.dcast %x : !qx to f32        (one dcast per quantized value, shared)
    %wf = quant.dcast %w : !qw to f32        (weights stay quantized constants)
    %bf = quant.dcast %b : !qb to f32
    %yf = nn.conv2d %xf, %wf, %bf {...} : f32 tensors
    %y  = quant.qcast %yf : f32 to !qy

so the module keeps every quantization parameter in its types and computes
in float: a simulation of the integer model, not bit-exact with it (TFLite
rounds inside the kernels; here the only roundings are quant.qcast's, half
away from zero, or -- for an op whose `rounding` knob is not `tflite` --
those of a `qnn.quantize {rounding = ...}` in the qcast's place, which
quantizes with that profile).  The pieces the float op cannot say travel
as attributes:

- a fused clamp narrower than the result's container type becomes the real
  clamp `act_min`/`act_max` = `scale * (bound - zero_point)` on the nn op
  (only for ops whose integer kernel applies the clamp, see
  `canonicalize.CLAMPING_OPS`);
- knobs (`rounding`, `bias`, `acc`, `acc_overflow`) become `qnn.<knob>` hints;
- qnn.pad's stored `pad_value` becomes the real value it stands for;
- qnn.clamp becomes nn.clip with real bounds; qnn.requantize becomes
  dcast -> qcast (with an nn.clip marked `qnn.requantize` if it clamps);
- an integer (not quantized) bias constant (i32, or i64 whose values fit
  32 bits) is retyped as quantized i32 with the scales input_scale *
  weight_scale[c], so it can be dequantized.

qnn.constant, qnn.quantize, qnn.dequantize and ops without an nn
counterpart (transpose_conv2d, prelu, split, gather, resizes,
space_to_depth, depth_to_space) stay as they are.  `qnn-raise` turns the
result back into the same qnn ops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, UnitAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from qdialect.dialects import nn, qnn
from qdialect.dialects.quant import (
    DequantizeCastOp,
    QuantizeCastOp,
    UniformQuantizedType,
    quantized_element_type,
    with_element_type,
)
from qdialect.qparams import storage_bounds
from transforms.canonicalize import CLAMPING_OPS

QNN_TO_NN: dict[type[qnn.QnnOp], type[nn.NnOp]] = {
    qnn.Conv2DOp: nn.Conv2DOp,
    qnn.DepthwiseConv2DOp: nn.DepthwiseConv2DOp,
    qnn.FullyConnectedOp: nn.FullyConnectedOp,
    qnn.BatchMatmulOp: nn.BatchMatmulOp,
    qnn.AddOp: nn.AddOp,
    qnn.SubOp: nn.SubOp,
    qnn.MulOp: nn.MulOp,
    qnn.SquaredDifferenceOp: nn.SquaredDifferenceOp,
    qnn.MaximumOp: nn.MaximumOp,
    qnn.MinimumOp: nn.MinimumOp,
    qnn.LogisticOp: nn.LogisticOp,
    qnn.TanhOp: nn.TanhOp,
    qnn.SoftmaxOp: nn.SoftmaxOp,
    qnn.LogSoftmaxOp: nn.LogSoftmaxOp,
    qnn.HardSwishOp: nn.HardSwishOp,
    qnn.LeakyReluOp: nn.LeakyReluOp,
    qnn.EluOp: nn.EluOp,
    qnn.AvgPool2DOp: nn.AvgPool2DOp,
    qnn.MaxPool2DOp: nn.MaxPool2DOp,
    qnn.MeanOp: nn.MeanOp,
    qnn.SumOp: nn.SumOp,
    qnn.ReduceMaxOp: nn.ReduceMaxOp,
    qnn.ReduceMinOp: nn.ReduceMinOp,
    qnn.ConcatenationOp: nn.ConcatenationOp,
    qnn.PadOp: nn.PadOp,
    qnn.ReshapeOp: nn.ReshapeOp,
    qnn.TransposeOp: nn.TransposeOp,
    qnn.SliceOp: nn.SliceOp,
    qnn.ClampOp: nn.ClipOp,
}
"""qnn op -> its float counterpart (qnn.requantize has none: it is dcast -> qcast)."""

KNOBS = ("rounding", "bias", "acc", "acc_overflow")
WEIGHTED = (qnn.Conv2DOp, qnn.DepthwiseConv2DOp, qnn.FullyConnectedOp)


def float_type(t):
    """The float tensor type a quantized tensor type dequantizes to."""
    return with_element_type(t, quantized_element_type(t).expressed_type)


def real_bound(q: UniformQuantizedType, stored: int) -> float:
    """The real number a stored value of per-tensor type `q` stands for."""
    return float(q.scale_array()) * (stored - int(q.zero_point_array()))


def real_clamp(op: qnn.QnnOp) -> tuple[float | None, float | None]:
    """op's clamp as real bounds, None where it does not cut the result's container range."""
    q = op.out_q()
    lo, hi = op.clamp_bounds()
    tlo, thi = storage_bounds(q.storage_width.data, q.signed)
    return (real_bound(q, lo) if lo > tlo else None), (real_bound(q, hi) if hi < thi else None)


def _dcast_of_argument(op: Operation) -> bool:
    return isinstance(op, DequantizeCastOp) and isinstance(op.input.owner, Block)


def dequantized(value: SSAValue, rewriter: PatternRewriter) -> SSAValue:
    """A quant.dcast of `value`, reusing one that already exists (placed right after the definition)."""
    ftype = float_type(value.type)
    for use in value.uses:
        if isinstance(use.operation, DequantizeCastOp) and use.operation.result.type == ftype:
            return use.operation.result
    cast = DequantizeCastOp(value, ftype)
    owner = value.owner
    if isinstance(owner, Block):  # after the dcasts of earlier arguments, in argument order
        first = next((o for o in owner.ops if not _dcast_of_argument(o)), None)
        where = InsertPoint.before(first) if first is not None else InsertPoint.at_end(owner)
    else:
        where = InsertPoint.after(owner)
    rewriter.insert(cast, where)
    return cast.result


def _integer_bias(op: qnn.QnnOp, rewriter: PatternRewriter) -> SSAValue | None:
    """An integer bias constant retyped as quantized i32 with scales input_scale * weight_scale[c]
    (None if it is not a constant or does not fit 32 bits)."""
    bias = op.operands[2]
    owner = bias.owner
    if isinstance(owner, qnn.ConstantOp):
        values = owner.array()
    elif isinstance(owner, arith.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr):
        values = np.asarray(owner.value.get_values(), dtype=np.int64).reshape(bias.type.get_shape())
    else:
        return None
    if values.size and (values.min() < -(2**31) or values.max() > 2**31 - 1):
        return None  # quantized types stop at 32 bits
    w = op.in_q(1)
    scales = float(op.in_q(0).scale_array()) * np.broadcast_to(w.scale_array(), values.shape)
    qt = UniformQuantizedType.per_axis(scales, 0, axis=0, storage="i32")
    const = qnn.ConstantOp.from_array(values, qt)
    rewriter.insert(const, InsertPoint.before(op))
    return const.result


def nn_attributes(op: qnn.QnnOp, target: type[nn.NnOp]) -> dict:
    """The float op's attributes: shared ones by name, clamp as real bounds, knobs as hints."""
    clamp = {}
    if type(op) in CLAMPING_OPS and "act_min" in target.ATTRS:
        clamp = dict(zip(("act_min", "act_max"), real_clamp(op)))
    attrs: dict = {}
    for name, value in op.attributes.items():  # in the qnn op's order
        if name in KNOBS:
            attrs[f"qnn.{name}"] = value
        elif name in clamp:
            attrs[name] = clamp.pop(name)
        elif name == "pad_value" and isinstance(op, qnn.PadOp):
            attrs["pad_value"] = real_bound(op.in_q(0), op.attr("pad_value"))
        elif name in target.ATTRS:
            attrs[name] = value
    attrs.update(clamp)  # a narrowed storage range clamps without attributes
    return attrs


def quantizer(value: SSAValue, result_type, op: qnn.QnnOp) -> Operation:
    """quant.qcast (TFLite's rounding), or qnn.quantize with the op's rounding knob when it has another."""
    rounding = op.attr("rounding", "tflite") if "rounding" in op.ATTRS else "tflite"
    if rounding == "tflite":
        return QuantizeCastOp(value, result_type)
    return qnn.QuantizeOp([value], [result_type], {"rounding": rounding})


class LowerQnnOp(RewritePattern):
    """qnn.<op> -> dcast operands, nn.<op>, qcast to the result type."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: qnn.QnnOp, rewriter: PatternRewriter, /):
        target = QNN_TO_NN.get(type(op))
        if target is None or len(op.results) != 1:
            return
        if any(qnn.qtype(v) is not None and qnn.qtype(v).is_per_axis for v in op.results):
            return
        operands = list(op.operands)
        if isinstance(op, WEIGHTED) and qnn.qtype(operands[2]) is None:
            retyped = _integer_bias(op, rewriter)
            if retyped is None:
                return
            operands[2] = retyped
        floats = [dequantized(v, rewriter) for v in operands]
        attrs = nn_attributes(op, target)
        if isinstance(op, qnn.ClampOp):
            attrs = {k: v for k, v in attrs.items() if k.startswith("qnn.")}
            attrs["min"], attrs["max"] = real_clamp(op)
        result = op.results[0]
        compute = target(floats, float_type(result.type), attrs)
        back = quantizer(compute.result, result.type, op)
        rewriter.replace(op, [compute, back], [back.results[0]])


class LowerRequantize(RewritePattern):
    """qnn.requantize -> dcast -> qcast (an nn.clip marked `qnn.requantize` in between if it clamps)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: qnn.RequantizeOp, rewriter: PatternRewriter, /):
        result = op.results[0]
        if qnn.qtype(result).is_per_axis or qnn.qtype(op.operands[0]).is_per_axis:
            return
        value = dequantized(op.operands[0], rewriter)
        new_ops: list[Operation] = []
        lo, hi = real_clamp(op)
        if lo is not None or hi is not None:
            knobs = {f"qnn.{k}": v for k, v in op.attributes.items() if k in KNOBS}
            clip = nn.ClipOp([value], value.type, {"min": lo, "max": hi, "qnn.requantize": UnitAttr(), **knobs})
            new_ops.append(clip)
            value = clip.result
        back = quantizer(value, result.type, op)
        rewriter.replace(op, [*new_ops, back], [back.results[0]])


@dataclass(frozen=True)
class QnnLowerToFloatPass(ModulePass):
    """Rewrites qnn ops into quant.dcast -> nn float op -> quant.qcast (see the module docstring)."""

    name = "qnn-lower-to-float"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from transforms.raise_layer_norm import expand_layer_norms

        expand_layer_norms(op)  # a qnn.layer_norm means the chain in its body
        PatternRewriteWalker(
            GreedyRewritePatternApplier([LowerRequantize(), LowerQnnOp()]),
            apply_recursively=False,
        ).rewrite_module(op)
