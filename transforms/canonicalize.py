"""`qnn-canonicalize` (L1 -> L1): fewer ops, same integers.

Every rewrite keeps the interpreter's output identical, bit for bit, under
the op's own rounding knob *and* under every profile the interpreter can
force (`run_module(..., rounding=P)`).  Where exactness rests on a chain of
stored-value maps (requantize, clamp) it is not argued but checked: both
sides are evaluated by the interpreter's own handlers on every value of the
input's storage container (8- and 16-bit types), under every profile, and
the rewrite happens only if they agree everywhere.

Patterns:

- `DropIdentityRequantize`: qnn.requantize / qnn.clamp whose operand and
  result types are equal and whose clamp is the whole storage range -> its
  operand.
- `FoldClampIntoProducer`: a clamp (qnn.clamp, or qnn.requantize between
  types of equal scale and zero point, with a narrower [act_min, act_max] or
  a narrower storage range) of a single-use op whose kernel ends with its
  own clamp (`CLAMPING_OPS`: conv, matmul, add, pools, mean, ...) -> the
  producer with the intersected bounds (and the narrower result type: the
  kernel's arithmetic does not depend on the storage range).  This is how
  relu / relu6 / clamp fold into the producer.
- `MaxMinWithConstant`: qnn.maximum / qnn.minimum of a tensor and a splat
  constant of the same type (relu spelled as max with the zero point) ->
  qnn.clamp, which then folds into the producer.
- `FoldRequantizeChain`: requantize/clamp of a single-use requantize/clamp
  -> one requantize (or clamp) when the composition is exactly one (checked
  as above); a requantize of a different scale after a conv is *not* folded
  into the conv: that changes the rounding (one rescale instead of two), so
  TFLite would not compute it.
- `PushThroughMovement`: requantize/clamp after a single-use reshape,
  transpose, slice, pad or max_pool2d moves before it (these commute with
  any monotone per-element map of the stored values; pad's value is mapped
  too) when that lets it fold by one of the patterns above, possibly after
  moving through more reshapes, transposes, slices and pads.
- `FoldRequantizeOfConstant`: requantize/clamp of a qnn.constant -> a new
  constant (the same under every profile), and unused constants are erased.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType
from xdsl.ir import Attribute, Block, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from qdialect import cyclic_gc
from qdialect.dialects import qnn
from qdialect.dialects.quant import UniformQuantizedType
from qdialect.interpreter import Interpreter
from qdialect.qparams import ROUNDING_PROFILES, storage_bounds

CLAMPING_OPS: tuple[type[qnn.QnnOp], ...] = (
    qnn.Conv2DOp,
    qnn.DepthwiseConv2DOp,
    qnn.TransposeConv2DOp,
    qnn.FullyConnectedOp,
    qnn.BatchMatmulOp,
    qnn.AddOp,
    qnn.SubOp,
    qnn.MulOp,
    qnn.SquaredDifferenceOp,
    qnn.MaximumOp,
    qnn.MinimumOp,
    qnn.RequantizeOp,
    qnn.ClampOp,
    qnn.AvgPool2DOp,
    qnn.MaxPool2DOp,
    qnn.MeanOp,
    qnn.SumOp,
    qnn.ReduceMaxOp,
    qnn.ReduceMinOp,
    qnn.ConcatenationOp,
)
"""Ops whose kernel ends with `clamp(result, act_min, act_max)` in the output's
storage domain, so a later clamp of their result can be folded in.  (The
activation ops -- logistic, tanh, softmax, hard_swish, leaky_relu, ... --
accept act_min/act_max as attributes but their kernels do not clamp.)"""

MOVEMENT_OPS = (qnn.ReshapeOp, qnn.TransposeOp, qnn.SliceOp, qnn.PadOp, qnn.MaxPool2DOp)
"""Ops that commute with a monotone map of stored values (same parameters in and out);
the first four do no arithmetic at all."""

UNARY_MAPS = (qnn.RequantizeOp, qnn.ClampOp)
PROFILES = (None, *ROUNDING_PROFILES)
"""None: the op's own rounding knob; then every profile the interpreter can force."""


# ----- facts about ops and values ------------------------------------------------------------


def single_use(value: SSAValue) -> bool:
    return value.has_one_use()


def per_tensor(value: SSAValue) -> UniformQuantizedType | None:
    q = qnn.qtype(value)
    return q if q is not None and not q.is_per_axis else None


def container_range(q: UniformQuantizedType) -> tuple[int, int]:
    return storage_bounds(q.storage_width.data, q.signed)


def all_stored_values(q: UniformQuantizedType | None) -> np.ndarray | None:
    """Every value of q's storage container (8 and 16 bits, per-tensor), else None."""
    if q is None or q.is_per_axis or q.storage_width.data > 16:
        return None
    lo, hi = container_range(q)
    return np.arange(lo, hi + 1, dtype=np.int64).astype(q.qparams().dtype)


def compose_clamps(outer: tuple[int, int], inner: tuple[int, int]) -> tuple[int, int]:
    """Bounds of clamp(clamp(v, inner), outer) as one clamp (also when the ranges are disjoint)."""
    a, b = inner
    c, d = outer
    return min(max(a, c), d), max(min(b, d), c)


def clamp_attrs(q: UniformQuantizedType, lo: int, hi: int) -> dict[str, int | None]:
    """act_min / act_max attributes for bounds [lo, hi], omitted where they are the storage range."""
    smin, smax = q.storage_range()
    return {"act_min": lo if lo != smin else None, "act_max": hi if hi != smax else None}


def set_clamp(op: qnn.QnnOp, lo: int, hi: int) -> None:
    for name, value in clamp_attrs(op.out_q(), lo, hi).items():
        if value is None:
            op.attributes.pop(name, None)
        else:
            op.attributes[name] = IntegerAttr(value, 64)


def evaluate(op: qnn.QnnOp, values: np.ndarray, rounding: str | None) -> np.ndarray:
    """The interpreter's result of a one-operand op on `values` (any shape)."""
    return Interpreter(None, rounding).eval(op, [values])[0].astype(np.int64)


def probe(cls: type[qnn.QnnOp], in_type: Attribute, out_type: Attribute, attrs: dict) -> qnn.QnnOp:
    """A detached op on a fresh block argument, for evaluation only."""
    return cls([Block(arg_types=[in_type]).args[0]], [out_type], attrs)


def same_everywhere(first: Sequence[qnn.QnnOp], second: Sequence[qnn.QnnOp], values: np.ndarray) -> bool:
    """Do the op chains `first` and `second` give equal integers on `values` under every profile?"""
    for rounding in PROFILES:
        a = b = values
        for op in first:
            a = evaluate(op, a, rounding)
        for op in second:
            b = evaluate(op, b, rounding)
        if not np.array_equal(a, b):
            return False
    return True


def same_grid(a: Attribute, b: Attribute) -> bool:
    """Tensor types with the same shape, storage type, scale and zero point (storage ranges may differ)."""
    if not (isinstance(a, TensorType) and isinstance(b, TensorType)) or a.get_shape() != b.get_shape():
        return False
    qa, qb = a.element_type, b.element_type
    if not (isinstance(qa, UniformQuantizedType) and isinstance(qb, UniformQuantizedType)):
        return False
    return (qa.storage, qa.expressed_type, qa.scales, qa.zero_points, qa.quantized_dimension) == (
        qb.storage, qb.expressed_type, qb.scales, qb.zero_points, qb.quantized_dimension
    )


def is_pure_clamp(op: qnn.QnnOp) -> bool:
    """requantize/clamp between per-tensor types on the same grid (the result's storage range may be
    narrower) whose rescale is the identity: only its clamp is left."""
    if not isinstance(op, UNARY_MAPS) or not same_grid(op.operands[0].type, op.results[0].type):
        return False
    q = per_tensor(op.operands[0])
    values = all_stored_values(q)
    if values is None:
        return False
    lo, hi = op.clamp_bounds()
    tlo, thi = container_range(q)
    expected = np.clip(values.astype(np.int64), max(lo, tlo), min(hi, thi))
    return all(np.array_equal(evaluate(op, values, r), expected) for r in PROFILES)


def fused_map(first: qnn.QnnOp, second: qnn.QnnOp) -> qnn.QnnOp | None:
    """One requantize/clamp equal to `second` after `first` (both per-tensor stored-value maps), or None."""
    q_in, q_out = per_tensor(first.operands[0]), per_tensor(second.results[0])
    values = all_stored_values(q_in)
    if values is None or q_out is None or per_tensor(first.results[0]) is None:
        return None
    composite = evaluate(second, evaluate(first, values, None), None)
    lo, hi = int(composite.min()), int(composite.max())
    out_type = TensorType(q_out, [len(values)])
    in_type = TensorType(q_in, [len(values)])
    knobs = {k: v for k, v in second.attributes.items() if k == "rounding"}
    for cls in dict.fromkeys([type(second), qnn.RequantizeOp, qnn.ClampOp]):
        for clamp in ({}, clamp_attrs(q_out, lo, hi)):  # without a clamp if it needs none
            candidate = probe(cls, in_type, out_type, {**knobs, **clamp})
            if same_everywhere([first, second], [candidate], values):
                return candidate
    return None


def rebuild(op: qnn.QnnOp, operands: Sequence[SSAValue], result_type: Attribute, attrs=None) -> qnn.QnnOp:
    """An op like `op` on new operands with a new result type (and optionally new attributes)."""
    return type(op)(list(operands), [result_type], dict(op.attributes if attrs is None else attrs))


# ----- patterns ------------------------------------------------------------------------------------


class DropIdentityRequantize(RewritePattern):
    """requantize/clamp between equal types with no narrower clamp -> its operand."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: qnn.RequantizeOp | qnn.ClampOp, rewriter: PatternRewriter, /):
        q = per_tensor(op.results[0])
        if q is None or op.operands[0].type != op.results[0].type:
            return
        if op.clamp_bounds() != q.storage_range() or not is_pure_clamp(op):
            return
        rewriter.replace(op, [], [op.operands[0]])


class FoldClampIntoProducer(RewritePattern):
    """clamp(op(...)) -> op(...) with the intersected [act_min, act_max] (op in CLAMPING_OPS, single use)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: qnn.RequantizeOp | qnn.ClampOp, rewriter: PatternRewriter, /):
        source = op.operands[0]
        producer = source.owner
        if not isinstance(producer, CLAMPING_OPS) or not single_use(source) or len(producer.results) != 1:
            return
        if not is_pure_clamp(op):
            return
        lo, hi = compose_clamps(op.clamp_bounds(), producer.clamp_bounds())
        if op.results[0].type == source.type:
            set_clamp(producer, lo, hi)
            rewriter.notify_op_modified(producer)
            rewriter.replace(op, [], [source])
            return
        narrowed = rebuild(producer, producer.operands, op.results[0].type)  # a narrower storage range
        set_clamp(narrowed, lo, hi)
        rewriter.replace(op, narrowed)
        rewriter.erase(producer)


class MaxMinWithConstant(RewritePattern):
    """maximum(x, splat c) -> clamp(x) {act_min = c}; minimum(x, splat c) -> clamp(x) {act_max = c}."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: qnn.MaximumOp | qnn.MinimumOp, rewriter: PatternRewriter, /):
        result = op.results[0]
        for x, c in (op.operands, reversed(op.operands)):
            value = splat_value(c)
            if value is None or x.type != result.type:
                continue
            tlo, thi = container_range(op.out_q())
            bound = (value, thi) if isinstance(op, qnn.MaximumOp) else (tlo, value)
            lo, hi = compose_clamps(op.clamp_bounds(), bound)
            clamp = qnn.ClampOp([x], [result.type], clamp_attrs(op.out_q(), lo, hi))
            rewriter.replace(op, [clamp])
            return


def splat_value(value: SSAValue) -> int | None:
    """The stored value of a qnn.constant whose elements are all equal."""
    owner = value.owner
    if not isinstance(owner, qnn.ConstantOp):
        return None
    arr = owner.array()
    if arr.size == 0 or not np.all(arr == arr.reshape(-1)[0]):
        return None
    return int(arr.reshape(-1)[0])


class FoldRequantizeChain(RewritePattern):
    """requantize/clamp(requantize/clamp(x)) -> one requantize or clamp of x, when exactly equal."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: qnn.RequantizeOp | qnn.ClampOp, rewriter: PatternRewriter, /):
        inner = op.operands[0].owner
        if not isinstance(inner, UNARY_MAPS) or not single_use(op.operands[0]):
            return
        fused = fused_map(inner, op)
        if fused is None:
            return
        rewriter.replace(op, rebuild(fused, [inner.operands[0]], op.results[0].type))
        rewriter.erase(inner)


def folds_below(op: qnn.QnnOp, value: SSAValue) -> bool:
    """Would `op`, moved down to `value` through single-use movement ops, fold into what produces it?"""
    while single_use(value) and isinstance(value.owner, MOVEMENT_OPS[:4]):
        value = value.owner.operands[0]
    producer = value.owner
    if not single_use(value):
        return False
    if isinstance(producer, CLAMPING_OPS) and is_pure_clamp(op):
        return True
    return isinstance(producer, UNARY_MAPS) and fused_map(producer, op) is not None


class PushThroughMovement(RewritePattern):
    """requantize/clamp(move(x)) -> move(requantize/clamp(x)) when the moved op then folds."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: qnn.RequantizeOp | qnn.ClampOp, rewriter: PatternRewriter, /):
        move = op.operands[0].owner
        if not isinstance(move, MOVEMENT_OPS) or not single_use(op.operands[0]):
            return
        if per_tensor(op.results[0]) is None or per_tensor(op.operands[0]) is None:
            return
        if isinstance(move, qnn.MaxPool2DOp) and move.clamp_bounds() != move.out_q().storage_range():
            return
        source = move.operands[0]
        if not folds_below(op, source):
            return
        q_out = op.out_q()
        moved = rebuild(op, [source], TensorType(q_out, qnn.shape_of(source)))
        attrs = dict(move.attributes)
        if isinstance(move, qnn.PadOp):
            old = move.attr("pad_value", int(move.in_q(0).zero_point_array()))
            new = int(evaluate(op, np.array([old], dtype=move.in_q(0).qparams().dtype), None)[0])
            for rounding in PROFILES[1:]:
                if int(evaluate(op, np.array([old], dtype=move.in_q(0).qparams().dtype), rounding)[0]) != new:
                    return
            attrs.pop("pad_value", None)
            if new != int(q_out.zero_point_array()):
                attrs["pad_value"] = IntegerAttr(new, 64)
        if isinstance(move, qnn.MaxPool2DOp):
            attrs.pop("act_min", None)
            attrs.pop("act_max", None)
        new_move = rebuild(move, [moved.results[0]], TensorType(q_out, qnn.shape_of(move.results[0])), attrs)
        rewriter.replace(op, [moved, new_move])
        rewriter.erase(move)


class FoldRequantizeOfConstant(RewritePattern):
    """requantize/clamp of a qnn.constant -> the constant it computes (the same under every profile)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: qnn.RequantizeOp | qnn.ClampOp, rewriter: PatternRewriter, /):
        const = op.operands[0].owner
        if not isinstance(const, qnn.ConstantOp) or per_tensor(op.operands[0]) is None:
            return
        results = [evaluate(op, const.array(), r) for r in PROFILES]
        if any(not np.array_equal(results[0], r) for r in results[1:]):
            return
        q = qnn.qtype(op.results[0])
        rewriter.replace(op, qnn.ConstantOp.from_array(results[0].reshape(qnn.shape_of(op.results[0])), q))


class EraseUnusedConstant(RewritePattern):
    """A qnn.constant nobody uses is erased."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: qnn.ConstantOp, rewriter: PatternRewriter, /):
        if not op.results[0].uses:
            rewriter.erase(op)


CANONICALIZATION_PATTERNS = (
    DropIdentityRequantize,
    FoldRequantizeOfConstant,
    FoldClampIntoProducer,
    MaxMinWithConstant,
    FoldRequantizeChain,
    PushThroughMovement,
    EraseUnusedConstant,
)


@dataclass(frozen=True)
class QnnCanonicalizePass(ModulePass):
    """Folds requantize and clamp ops into their neighbours where that is bit-exact (see the module docstring)."""

    name = "qnn-canonicalize"

    @cyclic_gc.paused()
    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([cls() for cls in CANONICALIZATION_PATTERNS]),
        ).rewrite_module(op)
