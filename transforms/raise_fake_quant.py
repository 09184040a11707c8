"""`qnn-raise` (L0 -> L1): fake quantization becomes canonical qnn ops.

The fake-quant region `quant.dcast -> nn.<op> -> quant.qcast` means "the
quantized <op> from these types to that type"; it becomes qnn.<op> with
those types.  So do the other spellings frontends emit:

| L0 spelling                                                 | becomes                       |
| ----------------------------------------------------------- | ----------------------------- |
| dcast -> nn.<op> (float) -> qcast                           | qnn.<op>                      |
| nn.<op> {act_min, act_max} (real fused clamp)               | act_min/act_max (storage)     |
| nn.relu / nn.clip / nn.maximum(x, splat) after a float op   | the op's fused clamp          |
| dcast -> nn.relu / nn.clip -> qcast                         | qnn.clamp (folded into the producer when it can) |
| qcast(dcast(x))                                             | qnn.requantize(x), or x       |
| nn.cast(q -> int) -> nn.avg_pool2d -> nn.cast(int -> q)     | qnn.avg_pool2d                |
| nn.cast(q -> int) -> nn.mean -> scast/cast -> qnn.requantize| qnn.mean                      |
| nn.pad / reshape / transpose / slice / max_pool2d / maximum / minimum / concatenation / relu / clip on quantized tensors (they "need nothing") | the qnn op |
| quant.qcast(nn.constant)                                    | qnn.constant (quantized at compile time, TFLite rounding) |

Conv / depthwise / fully connected without a bias get a zero i32 bias; a
float constant bias is quantized to i32 with scale input_scale *
weight_scale[c], as TFLite's converter does.  `qnn.<knob>` hints on an nn
op become the qnn op's knobs; a region may end in `qnn.quantize {rounding =
P}` instead of quant.qcast, and P becomes the op's rounding knob.  Operands of ops whose qnn form needs equal
parameters in and out (pools, max/min, data movement) are requantized to
the result's parameters when they differ.

Raising interprets a float region as the integer op it stands for, so the
raised module computes what TFLite's kernels compute, not the float
simulation (`qnn-lower-to-float` then `qnn-raise` gives back the same
integers as the original L1).  Every region left in float is reported as a
remark saying why (on stderr, and in the `RaiseReport` that
`raise_fake_quant` returns).
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import VerifyException

from qdialect import cyclic_gc
from qdialect.dialects import nn, qnn
from qdialect.dialects.qnn import FLOAT, make_attr
from qdialect.dialects.quant import (
    DequantizeCastOp,
    QuantizeCastOp,
    StorageCastOp,
    UniformQuantizedType,
    quantized_element_type,
)
from qdialect.reference.elementwise import dequantize, quantize, relu_bounds, round_half_away_f32
from transforms.canonicalize import (
    CLAMPING_OPS,
    FoldClampIntoProducer,
    clamp_attrs,
    single_use,
)
from transforms.lower_to_float import QNN_TO_NN

NN_TO_QNN: dict[type[nn.NnOp], type[qnn.QnnOp]] = {v: k for k, v in QNN_TO_NN.items()}
NN_TO_QNN[nn.ReluOp] = qnn.ClampOp

SAME_PARAMS = (
    qnn.AvgPool2DOp,
    qnn.MaxPool2DOp,
    qnn.MaximumOp,
    qnn.MinimumOp,
    qnn.ReduceMaxOp,
    qnn.ReduceMinOp,
    qnn.PadOp,
    qnn.ReshapeOp,
    qnn.TransposeOp,
    qnn.SliceOp,
)
"""qnn ops whose operands must have the result's parameters."""

QUANTIZED_DOMAIN = (
    nn.MaxPool2DOp,
    nn.MaximumOp,
    nn.MinimumOp,
    nn.ReduceMaxOp,
    nn.ReduceMinOp,
    nn.ConcatenationOp,
    nn.PadOp,
    nn.ReshapeOp,
    nn.TransposeOp,
    nn.SliceOp,
    nn.ReluOp,
    nn.ClipOp,
)
"""nn ops that may run on quantized tensors directly (the spellings that "need nothing")."""

WEIGHTED = (nn.Conv2DOp, nn.DepthwiseConv2DOp, nn.FullyConnectedOp)


@dataclass
class RaiseReport:
    """What qnn-raise did: regions raised per kind, and a remark per region left in float."""

    raised: Counter = field(default_factory=Counter)
    folded: Counter = field(default_factory=Counter)
    remarks: list[str] = field(default_factory=list)
    reasons: dict[int, str] = field(default_factory=dict)

    def why(self, op: Operation, reason: str) -> None:
        self.reasons[id(op)] = reason

    @property
    def regions_raised(self) -> int:
        return sum(self.raised.values())

    @property
    def regions_left(self) -> int:
        return len(self.remarks)


# ----- reading the float graph -----------------------------------------------------------------


def dequantized_source(value: SSAValue) -> SSAValue | None:
    """The quantized value `value` is the quant.dcast of."""
    owner = value.owner
    return owner.input if isinstance(owner, DequantizeCastOp) else None


def real_splat(value: SSAValue) -> float | None:
    """The real value of a constant whose elements are all equal (float, dequantized or quantized)."""
    owner = value.owner
    if isinstance(owner, DequantizeCastOp):
        inner = owner.input.owner
        if not isinstance(inner, qnn.ConstantOp) or qnn.qtype(owner.input).is_per_axis:
            return None
        arr = np.asarray(dequantize(inner.array(), x_q=qnn.qtype(owner.input).qparams()))
    elif isinstance(owner, nn.ConstantOp):
        arr = owner.array()
    elif isinstance(owner, qnn.ConstantOp) and qnn.qtype(value) is not None and not qnn.qtype(value).is_per_axis:
        arr = np.asarray(dequantize(owner.array(), x_q=qnn.qtype(value).qparams()))
    else:
        return None
    if arr.size == 0 or not np.all(arr == arr.reshape(-1)[0]):
        return None
    return float(arr.reshape(-1)[0])


def stored_source(value: SSAValue) -> SSAValue | None:
    """The quantized value whose stored integers `value` holds (through nn.cast / quant.scast)."""
    owner = value.owner
    if isinstance(owner, nn.CastOp | StorageCastOp):
        inner = owner.operands[0]
        if quantized_element_type(inner.type) is not None:
            return inner
        return stored_source(inner) if nn.is_integer(nn.element_of(inner.type)) else None
    return None


def stored_sink(value: SSAValue) -> tuple[Operation, SSAValue] | None:
    """The single cast chain that reinterprets the integers of `value` as a quantized type: (last op, its result)."""
    if not single_use(value):
        return None
    user = next(iter(value.uses)).operation
    if not isinstance(user, nn.CastOp | StorageCastOp):
        return None
    result = user.results[0]
    if quantized_element_type(result.type) is not None:
        return user, result
    if nn.is_integer(nn.element_of(result.type)):
        return stored_sink(result)
    return None


def union_bounds(inner: tuple[float | None, float | None], outer: tuple[float | None, float | None]):
    """Real bounds of clip(clip(v, inner), outer) (None: unbounded)."""
    a, b = (-np.inf if inner[0] is None else inner[0]), (np.inf if inner[1] is None else inner[1])
    c, d = (-np.inf if outer[0] is None else outer[0]), (np.inf if outer[1] is None else outer[1])
    lo, hi = min(max(a, c), d), max(min(b, d), c)
    return (None if lo == -np.inf else float(lo)), (None if hi == np.inf else float(hi))


def clip_bounds(op: nn.NnOp) -> tuple[float | None, float | None]:
    if isinstance(op, nn.ReluOp):
        return 0.0, None
    return op.attr("min"), op.attr("max")


def stored_clamp(q: UniformQuantizedType, lo: float | None, hi: float | None) -> dict:
    """Real clamp bounds -> act_min / act_max in q's storage domain (TFLite's relu rounding)."""
    slo, shi = relu_bounds(lo, hi, q.qparams())
    return clamp_attrs(q, slo, shi)


def stored_pad_value(q: UniformQuantizedType, value: float) -> int:
    qp = q.qparams()
    lo, hi = q.storage_range()
    stored = int(qp.zero_point) + int(round_half_away_f32(np.float32(np.float32(value) / np.float32(float(qp.scale)))))
    return min(max(stored, lo), hi)


def qnn_attributes(op: nn.NnOp, target: type[qnn.QnnOp], out: UniformQuantizedType, in_q=None) -> dict:
    """The qnn op's attributes: shared ones by name, real clamp -> storage clamp, hints -> knobs."""
    clamp: dict = {}
    if isinstance(op, nn.ReluOp | nn.ClipOp):
        clamp = stored_clamp(out, *clip_bounds(op))
    elif target in CLAMPING_OPS and "act_min" in op.ATTRS and op.act_bounds() != (None, None):
        clamp = stored_clamp(out, *op.act_bounds())
    renamed = {"min": "act_min", "max": "act_max"} if isinstance(op, nn.ClipOp) else {}
    attrs: dict = {}
    for name, value in op.attributes.items():  # in the nn op's order
        name = renamed.get(name, name)
        if name in clamp:
            attrs[name] = clamp.pop(name)
        elif name in nn.HINTS and name[4:] in target.ATTRS:
            attrs[name[4:]] = value
        elif name == "pad_value" and isinstance(op, nn.PadOp):
            stored = stored_pad_value(in_q or out, op.attr("pad_value"))
            if stored != int((in_q or out).zero_point_array()):
                attrs["pad_value"] = stored
        elif name in target.ATTRS and name not in ("act_min", "act_max"):
            attrs[name] = value
    attrs.update(clamp)
    return attrs


# ----- building qnn ops -------------------------------------------------------------------------


def _bias_scales(x: SSAValue, w: SSAValue, channels: int) -> np.ndarray:
    return float(qnn.qtype(x).scale_array()) * np.broadcast_to(qnn.qtype(w).scale_array(), (channels,))


def _bias_constant(values: np.ndarray, scales: np.ndarray) -> qnn.ConstantOp:
    qt = UniformQuantizedType.per_axis(scales, 0, axis=0, storage="i32")
    return qnn.ConstantOp.from_array(values.astype(np.int32), qt)


def weighted_operands(op: nn.NnOp, sources: list[SSAValue | None]) -> tuple[list, list[Operation]] | str:
    """qnn operands (input, weights, bias) of a conv / fully connected region, plus new bias constants."""
    x, w = sources[0], sources[1]
    if x is None or w is None:
        return f"{op.operand_name(0 if x is None else 1)} is not dequantized from a quantized value"
    channels = qnn.shape_of(w)[0] if isinstance(op, nn.Conv2DOp | nn.FullyConnectedOp) else qnn.shape_of(w)[3]
    if len(op.operands) == 2:
        const = _bias_constant(np.zeros(channels, np.int64), _bias_scales(x, w, channels))
        return [x, w, const.results[0]], [const]
    if sources[2] is not None:
        return [x, w, sources[2]], []
    bias = op.operands[2].owner
    if isinstance(bias, nn.ConstantOp):
        scales = _bias_scales(x, w, channels)
        real = bias.array().astype(np.float64)
        stored = np.sign(real / scales) * np.floor(np.abs(real / scales) + 0.5)
        if np.any(np.abs(stored) > 2**31 - 1):
            return "operand 2 (bias) does not fit i32 at scale input_scale * weight_scale"
        const = _bias_constant(stored.astype(np.int64), scales)
        return [x, w, const.results[0]], [const]
    return "operand 2 (bias) is neither dequantized nor a float constant"


def build(
    op: nn.NnOp, operands: list[SSAValue], result_type, extra: list[Operation], rounding: str = "tflite"
) -> tuple[list[Operation], qnn.QnnOp] | str:
    """The qnn op for nn `op` (plus the ops it needs before it), verified; or why not."""
    target = NN_TO_QNN.get(type(op))
    if target is None:
        return f"{op.name} has no qnn counterpart"
    out = quantized_element_type(result_type)
    in_q = quantized_element_type(operands[0].type) if operands else None
    new_ops = list(extra)
    if target in SAME_PARAMS:
        fixed = []
        for v in operands:
            q = quantized_element_type(v.type)
            if q is not None and q != out:
                if q.is_per_axis:
                    return f"operand of per-axis type {q} would need a requantize to {out}"
                req = qnn.RequantizeOp([v], [TensorType(out, qnn.shape_of(v))])
                new_ops.append(req)
                v = req.results[0]
            fixed.append(v)
        operands = fixed
        in_q = out
    if isinstance(op, nn.ClipOp) and "qnn.requantize" in op.attributes:
        target = qnn.RequantizeOp
    attrs = qnn_attributes(op, target, out, in_q)
    if rounding != "tflite" and "rounding" in target.ATTRS and "rounding" not in attrs:
        attrs["rounding"] = rounding  # quantized with that profile: the op's knob
    new = target(operands, [result_type], attrs)
    try:
        new.verify()
    except VerifyException as e:
        for o in [new, *new_ops]:
            o.drop_all_references()
        return f"the qnn op would not verify: {e}"
    return new_ops, new


# ----- patterns -----------------------------------------------------------------------------------


QUANTIZERS = (QuantizeCastOp, qnn.QuantizeOp)
"""What ends a fake-quant region: quant.qcast, or qnn.quantize when it rounds with another profile."""


def quantizer_rounding(op: Operation) -> str:
    return op.attr("rounding", "tflite") if isinstance(op, qnn.QuantizeOp) else "tflite"


class ReportingPattern(RewritePattern):
    def __init__(self, report: RaiseReport):
        self.report = report


class MaxMinWithSplatToClip(ReportingPattern):
    """nn.maximum(x, splat c) -> nn.clip(x) {min = c}; nn.minimum -> {max = c} (relu as max with the zero point)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.MaximumOp | nn.MinimumOp, rewriter: PatternRewriter, /):
        for x, c in (op.operands, reversed(op.operands)):
            value = real_splat(c)
            if value is None or qnn.shape_of(x) != qnn.shape_of(op.result) or x.type != op.result.type:
                continue
            bound = (value, None) if isinstance(op, nn.MaximumOp) else (None, value)
            lo, hi = union_bounds(bound, op.act_bounds())
            rewriter.replace(op, nn.ClipOp([x], op.result.type, {"min": lo, "max": hi}))
            self.report.folded[f"{op.name} with a constant -> nn.clip"] += 1
            return


class FoldFloatActivation(ReportingPattern):
    """nn.relu / nn.clip of a single-use float op with a fused clamp -> that op's act_min / act_max."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ReluOp | nn.ClipOp, rewriter: PatternRewriter, /):
        x = op.operands[0]
        producer = x.owner
        if not isinstance(producer, nn.NnOp) or "act_min" not in producer.ATTRS or not single_use(x):
            return
        if not nn.is_float(nn.element_of(x.type)):
            return
        lo, hi = union_bounds(producer.act_bounds(), clip_bounds(op))
        for name, value in (("act_min", lo), ("act_max", hi)):
            producer.attributes.pop(name, None)
            if value is not None:
                producer.attributes[name] = make_attr(FLOAT, value)
        rewriter.notify_op_modified(producer)
        rewriter.replace(op, [], [x])
        self.report.folded[f"{op.name} -> fused clamp of {producer.name}"] += 1


class RaiseRegion(ReportingPattern):
    """quant.dcast operands -> nn.<op> -> quant.qcast users -> qnn.<op>."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.NnOp, rewriter: PatternRewriter, /):
        if isinstance(op, nn.CastOp) or not nn.is_float(nn.element_of(op.result.type)):
            return
        users = [use.operation for use in op.result.uses]
        if not users:
            return
        if not all(isinstance(u, QUANTIZERS) for u in users):
            other = next(u for u in users if not isinstance(u, QUANTIZERS))
            return self.report.why(op, f"its result is used in float by {other.name}, not only by quant.qcast")
        types = {u.results[0].type for u in users}
        if len(types) != 1:
            return self.report.why(op, f"its result is quantized to {len(types)} different types")
        roundings = {quantizer_rounding(u) for u in users}
        if len(roundings) != 1:
            return self.report.why(op, "its result is quantized with different roundings")
        sources = [dequantized_source(v) for v in op.operands]
        extra: list[Operation] = []
        if isinstance(op, WEIGHTED):
            got = weighted_operands(op, sources)
            if isinstance(got, str):
                return self.report.why(op, got)
            operands, extra = got
        else:
            missing = [i for i, s in enumerate(sources) if s is None]
            if missing:
                return self.report.why(
                    op, f"{op.operand_name(missing[0])} is a float value not produced by quant.dcast"
                )
            operands = sources
        built = build(op, operands, types.pop(), extra, roundings.pop())
        if isinstance(built, str):
            return self.report.why(op, built)
        new_ops, new = built
        rewriter.insert([*new_ops, new], InsertPoint.before(op))
        for u in users:
            rewriter.replace(u, [], [new.results[0]])
        rewriter.erase(op)
        self.report.raised[op.name] += 1


class RaiseQuantizedOp(ReportingPattern):
    """nn.<op> on quantized tensors (pad, reshape, max_pool2d, max, min, relu, clip, ...) -> qnn.<op>."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.NnOp, rewriter: PatternRewriter, /):
        if not isinstance(op, QUANTIZED_DOMAIN) or quantized_element_type(op.result.type) is None:
            return
        built = build(op, list(op.operands), op.result.type, [])
        if isinstance(built, str):
            return self.report.why(op, built)
        new_ops, new = built
        rewriter.replace(op, [*new_ops, new])
        self.report.raised[f"{op.name} (quantized)"] += 1


class RaiseCastAvgPoolCast(ReportingPattern):
    """nn.cast(q -> int) -> nn.avg_pool2d -> nn.cast(int -> q) -> qnn.avg_pool2d (bit-exact)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.AvgPool2DOp, rewriter: PatternRewriter, /):
        if not nn.is_integer(nn.element_of(op.result.type)):
            return
        source = stored_source(op.operands[0])
        sink = stored_sink(op.result)
        if source is None or sink is None:
            return self.report.why(op, "integer average pool without a cast from and back to a quantized type")
        last, result = sink
        if quantized_element_type(result.type) != quantized_element_type(source.type):
            return self.report.why(
                op, f"the pooled integers are cast to {quantized_element_type(result.type)}, "
                f"not back to the input's {quantized_element_type(source.type)}"
            )
        attrs = {k: v for k, v in op.attributes.items() if k in qnn.AvgPool2DOp.ATTRS}
        new = qnn.AvgPool2DOp([source], [result.type], attrs)
        _replace_chain(rewriter, op, last, new)
        self.report.raised["nn.cast -> nn.avg_pool2d -> nn.cast"] += 1


class RaiseCastMeanRequantize(ReportingPattern):
    """nn.cast(q -> int) -> nn.mean -> cast(int -> q with q's scale and zero point) [-> qnn.requantize] -> qnn.mean."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.MeanOp, rewriter: PatternRewriter, /):
        if not nn.is_integer(nn.element_of(op.result.type)):
            return
        source = stored_source(op.operands[0])
        sink = stored_sink(op.result)
        if source is None or sink is None:
            return self.report.why(op, "integer mean without a cast from and back to a quantized type")
        last, result = sink
        q_in, q_mid = quantized_element_type(source.type), quantized_element_type(result.type)
        if q_in.is_per_axis or q_mid.is_per_axis or (
            q_in.scale_array().tolist(), q_in.zero_point_array().tolist()
        ) != (q_mid.scale_array().tolist(), q_mid.zero_point_array().tolist()):
            return self.report.why(op, f"the mean's integers are read as {q_mid}, not with the input's scale and zero point")
        attrs = {k: v for k, v in op.attributes.items() if k in ("axes", "keep_dims")}
        requant = next(iter(result.uses)).operation if single_use(result) else None
        if isinstance(requant, qnn.RequantizeOp):
            attrs.update({k: v for k, v in requant.attributes.items() if k in qnn.MeanOp.ATTRS})
            new = qnn.MeanOp([source], [requant.results[0].type], attrs)
            _replace_chain(rewriter, op, requant, new)
        elif q_mid == q_in:
            new = qnn.MeanOp([source], [result.type], attrs)
            _replace_chain(rewriter, op, last, new)
        else:
            return self.report.why(op, f"the mean's integers are widened to {q_mid} and not requantized")
        self.report.raised["nn.cast -> nn.mean -> qnn.requantize"] += 1


def _replace_chain(rewriter: PatternRewriter, first: Operation, last: Operation, new: Operation) -> None:
    """Replace the single-use chain first .. last by `new` (inserted before `last`)."""
    chain = [last]
    while chain[-1] is not first:
        chain.append(chain[-1].operands[0].owner)
    rewriter.replace(last, new)
    for dead in chain[1:]:
        rewriter.erase(dead)


class RaiseQcastOfDcast(ReportingPattern):
    """quant.qcast(quant.dcast(x)) -> x (same type) or qnn.requantize(x) (qnn.quantize: with its rounding)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: QuantizeCastOp | qnn.QuantizeOp, rewriter: PatternRewriter, /):
        source = dequantized_source(op.operands[0])
        if source is None:
            return
        result = op.results[0]
        if source.type == result.type:
            rewriter.replace(op, [], [source])
            self.report.raised["quant.qcast(quant.dcast) identity"] += 1
            return
        if quantized_element_type(source.type).is_per_axis:
            return self.report.why(op, "a per-axis value requantized through float")
        rounding = quantizer_rounding(op)
        attrs = {"rounding": rounding} if rounding != "tflite" else {}
        rewriter.replace(op, qnn.RequantizeOp([source], [result.type], attrs))
        self.report.raised["quant.qcast(quant.dcast) -> qnn.requantize"] += 1


class QuantizeConstant(ReportingPattern):
    """quant.qcast(nn.constant) -> qnn.constant, quantized now with TFLite's rounding."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: QuantizeCastOp, rewriter: PatternRewriter, /):
        const = op.input.owner
        if not isinstance(const, nn.ConstantOp):
            return
        q = quantized_element_type(op.result.type)
        stored = quantize(const.array().astype(np.float32), out_q=q.qparams())
        lo, hi = q.storage_range()
        rewriter.replace(op, qnn.ConstantOp.from_array(np.clip(stored, lo, hi), q))
        self.report.folded["quant.qcast(nn.constant) -> qnn.constant"] += 1


class EraseDeadCasts(RewritePattern):
    """Unused quant.dcast, nn.cast and nn.constant (left behind by raising) are erased."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: DequantizeCastOp | nn.CastOp | nn.ConstantOp, rewriter: PatternRewriter, /):
        if not op.results[0].uses:
            rewriter.erase(op)


# ----- driver -------------------------------------------------------------------------------------


def raise_fake_quant(module: ModuleOp, report: RaiseReport | None = None) -> RaiseReport:
    """Raise every fake-quant region of `module` in place; return what was raised and what was left."""
    report = report or RaiseReport()
    PatternRewriteWalker(
        GreedyRewritePatternApplier(
            [
                MaxMinWithSplatToClip(report),
                FoldFloatActivation(report),
                QuantizeConstant(report),
                RaiseQcastOfDcast(report),
                RaiseCastAvgPoolCast(report),
                RaiseCastMeanRequantize(report),
                RaiseQuantizedOp(report),
                RaiseRegion(report),
                FoldClampIntoProducer(),
                EraseDeadCasts(),
            ]
        ),
    ).rewrite_module(module)
    for f in module.walk():
        if not isinstance(f, func.FuncOp):
            continue
        for index, op in enumerate(f.body.walk()):
            if isinstance(op, nn.NnOp) and not isinstance(op, nn.CastOp):
                reason = report.reasons.get(id(op), "no raise pattern matches it")
                hint = op.results[0].name_hint
                where = f"%{hint}" if hint else f"op #{index}"
                report.remarks.append(f"@{f.sym_name.data}: {op.name} ({where}) left in float: {reason}")
    return report


@dataclass(frozen=True)
class QnnRaisePass(ModulePass):
    """Raises fake quantization (dcast -> nn op -> qcast, and the frontends' other spellings) to qnn ops.

    Regions it cannot raise stay in float and are reported as remarks on
    stderr (`remarks=false` silences them).
    """

    name = "qnn-raise"

    remarks: bool = True

    @cyclic_gc.paused()
    def apply(self, ctx: Context, op: ModuleOp) -> None:
        report = raise_fake_quant(op)
        if self.remarks:
            for remark in report.remarks:
                print(f"remark: qnn-raise: {remark}", file=sys.stderr)
