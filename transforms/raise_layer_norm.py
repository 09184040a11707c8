"""`qnn-raise-layer-norm`: layer normalization chains -> one `qnn.layer_norm`; and back.

Recognises the chains importers leave for a layer normalization over the last axis
and outlines each into one `qnn.layer_norm` whose body is the chain itself (its
constants cloned in), so the op's integers are the chain's by construction:

- `tflite` (Keras LayerNormalization, TFLite int8):
  `m = mean(x)`, `v = mean(squared_difference(x, m))`, `r = rsqrt(v + eps)`, `g = r * gamma`,
  `out = x * g + (quantize(-dequantize(m)) * g + beta)` (the NEG is a float island);
- `tflite_hand` (`d = x - mean(x); d * (rsqrt(mean(d * d) + eps) * gamma) [+ beta]`, the
  spelling of 16x8 encoders);
- `onnx`: `quantize(nn.layer_norm(dequantize(x), gamma, beta))` (ONNX LayerNormalization, run
  in float by ONNX Runtime);
- `onnx_hand`: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta as
  `quantize_static` leaves them (float `nn` ops and integer `qnn` ops between casts).

A chain is raised only when every intermediate value is read inside the chain (the
output excepted), both means and the variance reduce the same single last axis with
kept dimensions, the subtraction reads the mean of the same input, and epsilon, gamma
and beta are constants.  Anything else is left as it is.

`qnn-expand-layer-norm` inlines every `qnn.layer_norm` body in place of the op: the
chain exactly as it was, which is what the lowering pipeline does before
`qnn-decompose` (`transforms.pipelines.l3_passes`), so lowered results are unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import ConstantLike

from qdialect.dialects import nn, qnn
from qdialect.dialects.qnn import LayerNormOp, YieldOp, qtype, shape_of


# ----- matching helpers ------------------------------------------------------------------


def _users(value: SSAValue) -> list[Operation]:
    return [u.operation for u in value.uses]


def _only_user(value: SSAValue) -> Operation | None:
    users = _users(value)
    return users[0] if len(users) == 1 else None


def _producer(value: SSAValue) -> Operation | None:
    owner = value.owner
    return owner if isinstance(owner, Operation) else None


def _is_constant(value: SSAValue) -> bool:
    op = _producer(value)
    return op is not None and op.has_trait(ConstantLike)


def _other(op: Operation, value: SSAValue) -> SSAValue | None:
    """The other operand of a binary op one of whose operands is `value`."""
    a, b = op.operands
    return b if a == value else a if b == value else None


def _last_axis_mean(op: Operation | None, cls: type) -> int | None:
    """The axis of a mean over exactly the last axis with kept dimensions, else None."""
    if not isinstance(op, cls) or len(op.operands) != 1:
        return None
    rank = len(shape_of(op.operands[0]))
    axes = op.attr("axes") or ()
    if rank == 0 or len(axes) != 1 or axes[0] % rank != rank - 1 or not op.attr("keep_dims", False):
        return None
    return rank - 1


def _constant_value(value: SSAValue) -> np.ndarray:
    """The real value of a constant (a quantized constant dequantized in float64)."""
    op = _producer(value)
    q = qtype(value)
    arr = op.array()
    if q is None:
        return np.asarray(arr, dtype=np.float64)
    p = q.qparams()
    return p.scale * (arr.astype(np.float64) - p.zero_point)


def _per_channel_constant(value: SSAValue, channels: int) -> bool:
    """A constant that varies along the normalized (last) axis only: gamma or beta."""
    if not _is_constant(value):
        return False
    shape = shape_of(value)
    return (not shape or shape[-1] in (1, channels)) and all(d == 1 for d in shape[:-1])


def _scalar_constant(value: SSAValue) -> bool:
    return _is_constant(value) and int(np.prod(shape_of(value))) == 1


@dataclass
class _Chain:
    """A matched chain: its input, its output, its ops (in any order) and what the op records."""

    input: SSAValue
    output: SSAValue
    ops: list[Operation]
    axis: int
    epsilon: float
    spelling: str


# ----- the four spellings ------------------------------------------------------------------


def _tflite(mean: Operation) -> _Chain | None:
    """Keras LayerNormalization in TFLite int8, anchored at the first MEAN."""
    axis = _last_axis_mean(mean, qnn.MeanOp)
    if axis is None:
        return None
    x, m = mean.operands[0], mean.results[0]
    users = _users(m)
    if len(users) != 2:
        return None
    dq = next((u for u in users if isinstance(u, qnn.DequantizeOp)), None)
    sd = next((u for u in users if isinstance(u, qnn.SquaredDifferenceOp)), None)
    if dq is None or sd is None or _other(sd, m) != x:
        return None
    neg = _only_user(dq.results[0])
    if not isinstance(neg, nn.MulOp) or not _scalar_constant(c := _other(neg, dq.results[0])):
        return None
    if float(_constant_value(c).reshape(-1)[0]) != -1.0:
        return None
    nq = _only_user(neg.results[0])
    if not isinstance(nq, qnn.QuantizeOp):
        return None
    head = _variance_to_gamma(sd, axis, x)
    if head is None:
        return None
    ops, eps, g = head
    gu = _users(g.results[0])
    if len(gu) != 2:
        return None
    p1 = next((u for u in gu if isinstance(u, qnn.MulOp) and _other(u, g.results[0]) == nq.results[0]), None)
    p2 = next((u for u in gu if isinstance(u, qnn.MulOp) and _other(u, g.results[0]) == x), None)
    if p1 is None or p2 is None or p1 is p2:
        return None
    b1 = _only_user(p1.results[0])
    if not isinstance(b1, qnn.AddOp) or not _per_channel_constant(_other(b1, p1.results[0]), shape_of(x)[-1]):
        return None
    out = _only_user(b1.results[0])
    if not isinstance(out, qnn.AddOp) or _other(out, b1.results[0]) != p2.results[0]:
        return None
    ops = [mean, dq, neg, nq, sd, *ops, p1, b1, p2, out]
    return _Chain(x, out.results[0], ops, axis, eps, "tflite")


def _variance_to_gamma(square: Operation, axis: int, x: SSAValue):
    """From the squared deviation: mean, + eps, rsqrt, * gamma.  Returns (ops, eps, gamma mul)."""
    m2 = _only_user(square.results[0]) if square is not None else None
    if _last_axis_mean(m2, qnn.MeanOp) != axis:
        return None
    add = _only_user(m2.results[0])
    if not isinstance(add, qnn.AddOp) or not _scalar_constant(e := _other(add, m2.results[0])):
        return None
    rsqrt = _only_user(add.results[0])
    if not isinstance(rsqrt, qnn.RsqrtOp):
        return None
    g = next(iter(_users(rsqrt.results[0])), None) if len(_users(rsqrt.results[0])) == 1 else None
    if not isinstance(g, qnn.MulOp) or not _per_channel_constant(_other(g, rsqrt.results[0]), shape_of(x)[-1]):
        return None
    return [m2, add, rsqrt, g], float(_constant_value(e).reshape(-1)[0]), g


def _tflite_hand(mean: Operation) -> _Chain | None:
    """`d = x - mean(x); d * (rsqrt(mean(d * d) + eps) * gamma) [+ beta]`, anchored at the first MEAN."""
    axis = _last_axis_mean(mean, qnn.MeanOp)
    if axis is None:
        return None
    x, m = mean.operands[0], mean.results[0]
    sub = _only_user(m)
    if not isinstance(sub, qnn.SubOp) or tuple(sub.operands) != (x, m):
        return None
    d = sub.results[0]
    du = _users(d)
    if len(du) != 3:  # d * d reads d twice, then d * g
        return None
    square = next((u for u in du if isinstance(u, qnn.MulOp) and tuple(u.operands) == (d, d)), None)
    head = _variance_to_gamma(square, axis, x)
    if head is None:
        return None
    ops, eps, g = head
    p = _only_user(g.results[0])
    if not isinstance(p, qnn.MulOp) or _other(p, g.results[0]) != d or p is square:
        return None
    ops = [mean, sub, square, *ops, p]
    out = p
    beta = _only_user(p.results[0])
    if isinstance(beta, qnn.AddOp) and _per_channel_constant(_other(beta, p.results[0]), shape_of(x)[-1]):
        ops.append(beta)
        out = beta
    return _Chain(x, out.results[0], ops, axis, eps, "tflite_hand")


def _onnx(ln: Operation) -> _Chain | None:
    """`quantize(nn.layer_norm(dequantize(x), gamma, beta))` over the last axis."""
    if not isinstance(ln, nn.LayerNormOp):
        return None
    dq = _producer(ln.operands[0])
    if not isinstance(dq, qnn.DequantizeOp) or _only_user(dq.results[0]) is not ln:
        return None
    rank = len(shape_of(ln.operands[0]))
    if rank == 0 or ln.attr("axis") % rank != rank - 1:
        return None
    if not all(_is_constant(v) for v in ln.operands[1:]):
        return None
    q = _only_user(ln.results[0])
    if not isinstance(q, qnn.QuantizeOp):
        return None
    return _Chain(dq.operands[0], q.results[0], [dq, ln, q], rank - 1, float(ln.attr("epsilon")), "onnx")


def _onnx_hand(mean: Operation) -> _Chain | None:
    """ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta as imported from a
    QDQ model: float ops on dequantized values, eps / gamma / beta in the integer ops between."""
    axis = _last_axis_mean(mean, nn.MeanOp)
    if axis is None:
        return None
    dq1 = _producer(mean.operands[0])
    if not isinstance(dq1, qnn.DequantizeOp):
        return None
    x, m = dq1.operands[0], mean.results[0]
    sub = _only_user(m)
    if not isinstance(sub, nn.SubOp) or sub.operands[1] != m:
        return None
    dq2 = _producer(sub.operands[0])
    if not isinstance(dq2, qnn.DequantizeOp) or dq2.operands[0] != x:
        return None
    deq = [dq1] if dq2 is dq1 else [dq1, dq2]
    if any(len(_users(q.results[0])) != (2 if dq2 is dq1 else 1) for q in deq):
        return None
    d = sub.results[0]
    du = _users(d)
    square = next((u for u in du if isinstance(u, nn.MulOp) and tuple(u.operands) == (d, d)), None)
    div = next((u for u in du if isinstance(u, nn.DivOp) and u.operands[0] == d), None)
    if square is None or div is None or len(du) != 3:
        return None
    m2 = _only_user(square.results[0])
    if _last_axis_mean(m2, nn.MeanOp) != axis:
        return None
    q1 = _only_user(m2.results[0])
    add = _only_user(q1.results[0]) if isinstance(q1, qnn.QuantizeOp) else None
    if not isinstance(add, qnn.AddOp) or not _scalar_constant(e := _other(add, q1.results[0])):
        return None
    dq3 = _only_user(add.results[0])
    sqrt = _only_user(dq3.results[0]) if isinstance(dq3, qnn.DequantizeOp) else None
    if not isinstance(sqrt, nn.SqrtOp) or _only_user(sqrt.results[0]) is not div or div.operands[1] != sqrt.results[0]:
        return None
    q2 = _only_user(div.results[0])
    g = _only_user(q2.results[0]) if isinstance(q2, qnn.QuantizeOp) else None
    channels = shape_of(d)[-1]
    if not isinstance(g, qnn.MulOp) or not _per_channel_constant(_other(g, q2.results[0]), channels):
        return None
    beta = _only_user(g.results[0])
    if not isinstance(beta, qnn.AddOp) or not _per_channel_constant(_other(beta, g.results[0]), channels):
        return None
    ops = [*deq, mean, sub, square, m2, q1, add, dq3, sqrt, div, q2, g, beta]
    return _Chain(x, beta.results[0], ops, axis, float(_constant_value(e).reshape(-1)[0]), "onnx_hand")


MATCHERS = (_tflite, _tflite_hand, _onnx, _onnx_hand)


# ----- outlining ------------------------------------------------------------------------------


def _closed(chain: _Chain) -> bool:
    """Every value the chain computes but its output is read inside the chain only, and the chain
    reads nothing from outside but its input and constants; input and output are quantized tensors
    of one shape."""
    members = set(chain.ops)
    if len(members) != len(chain.ops):
        return False
    for op in chain.ops:
        for r in op.results:
            if r != chain.output and any(u.operation not in members for u in r.uses):
                return False
        for v in op.operands:
            if v != chain.input and _producer(v) not in members and not _is_constant(v):
                return False
    return (qtype(chain.input) is not None and qtype(chain.output) is not None
            and shape_of(chain.input) == shape_of(chain.output))


def outline(chain: _Chain) -> LayerNormOp:
    """Replace the chain by one `qnn.layer_norm` whose body is a copy of it; returns the new op."""
    block = chain.output.owner.parent_block()
    position = {op: i for i, op in enumerate(block.ops)}
    ops = sorted(chain.ops, key=position.__getitem__)
    body = Block(arg_types=[chain.input.type])
    mapping: dict[SSAValue, SSAValue] = {chain.input: body.args[0]}
    for op in ops:
        for v in op.operands:
            if v not in mapping:  # a constant: cloned into the body (isolated from above)
                const = _producer(v).clone()
                body.add_op(const)
                mapping[v] = const.results[0]
        copy = op.clone(value_mapper=mapping)
        body.add_op(copy)
    body.add_op(YieldOp(mapping[chain.output]))
    new = LayerNormOp(chain.input, chain.output.type, chain.axis, chain.epsilon, chain.spelling, Region(body))
    block.insert_op_before(new, chain.output.owner)
    chain.output.replace_all_uses_with(new.output)
    constants = {_producer(v) for op in ops for v in op.operands if _is_constant(v)}
    for op in reversed(ops):
        block.erase_op(op)
    for const in constants:
        if all(not r.uses for r in const.results):
            const.parent_block().erase_op(const)
    return new


def _top_level_ops(module: ModuleOp) -> Iterable[Operation]:
    for f in module.ops:
        if isinstance(f, func.FuncOp) and f.body.blocks:
            for block in f.body.blocks:
                yield from list(block.ops)


def raise_layer_norms(module: ModuleOp) -> list[LayerNormOp]:
    """Raise every layer normalization chain of the module's functions; returns the new ops."""
    raised = []
    for op in _top_level_ops(module):
        if op.parent is None:  # erased with an earlier chain
            continue
        for match in MATCHERS:
            chain = match(op)
            if chain is not None and _closed(chain):
                raised.append(outline(chain))
                break
    return raised


def has_layer_norm(root: Operation) -> bool:
    """Whether `root` holds a `qnn.layer_norm`."""
    return any(isinstance(op, LayerNormOp) for op in root.walk())


def _constant_key(op: Operation):
    """What makes two constants the same value (None: not a one-result constant)."""
    if not op.has_trait(ConstantLike) or len(op.results) != 1 or op.regions:
        return None
    try:
        return op.name, op.results[0].type, tuple(op.attributes.items())
    except TypeError:  # an unhashable attribute
        return None


def expand_layer_norms(root: Operation) -> int:
    """Inline every `qnn.layer_norm` body in place of the op (the chain it was raised from);
    returns how many were expanded.  A body constant equal to one already defined before the
    op is not copied again (raising cloned it out of a constant several chains shared)."""
    count = 0
    for op in list(root.walk()):
        if not isinstance(op, LayerNormOp):
            continue
        block = op.body.block
        mapping: dict[SSAValue, SSAValue] = {block.args[0]: op.input}
        parent = op.parent_block()
        earlier: dict = {}
        for o in parent.ops:
            if o is op:
                break
            key = _constant_key(o)
            if key is not None:
                earlier.setdefault(key, o.results[0])
        for inner in block.ops:
            if isinstance(inner, YieldOp):
                op.output.replace_all_uses_with(mapping[inner.value])
                break
            key = _constant_key(inner)
            if key is not None and key in earlier:
                mapping[inner.results[0]] = earlier[key]
                continue
            copy = inner.clone(value_mapper=mapping)
            parent.insert_op_before(copy, op)
        parent.erase_op(op)
        count += 1
    return count


@dataclass(frozen=True)
class QnnRaiseLayerNormPass(ModulePass):
    """`qnn-raise-layer-norm`: every recognised layer normalization chain -> one `qnn.layer_norm`."""

    name = "qnn-raise-layer-norm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise_layer_norms(op)


@dataclass(frozen=True)
class QnnExpandLayerNormPass(ModulePass):
    """`qnn-expand-layer-norm`: every `qnn.layer_norm` -> the chain in its body, inlined."""

    name = "qnn-expand-layer-norm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        expand_layer_norms(op)
