"""Elementwise graphs of one byte tensor folded into one table (a step of `qnn-decompose`).

EfficientNet's swish is `qnn.mul(x, qnn.logistic(x))`: a table look-up and then a
multiplication requantized in 64 bits, per element.  But every element of the result is a
function of one stored byte, the element of `x` at the same place: there are 256 of them.
So the whole graph is evaluated once, at compile time, on each stored value of `x` (the L1
interpreter, op by op: the semantics the decompositions reproduce bit for bit) and becomes
one `qint.table` over `x`, which the TVM bridge then looks up in vectors
(`tvm_bridge/lut.py`).  Ops inside the graph that nothing else reads die with it.

What folds: a graph of

- unary ops that decompose to tables themselves (logistic, tanh, elu, hard_swish,
  leaky_relu, gelu, exp, rsqrt, sqrt, abs, neg) and requantize / clamp,
- binary elementwise ops (add, sub, mul, maximum, minimum, squared_difference) whose two
  operands have the result's shape (no broadcast),

all per-tensor, all reached from one tensor `x` of at most 8 bits, with two ops or more
in it (or one binary op of `x` with itself, `x * x`); its root is an op whose result
something outside the graph reads.  Each op must decompose as written (an op the decomposition
refuses, such as a `litert` MUL whose fallback kernel depends on element position, is left
to refuse as before).  The ONNX profiles' ops fold the same way (their decomposition is
`transforms.decompose_onnx`'s, their arithmetic the interpreter's ONNX Runtime recipes): a QDQ
SiLU is one 256-entry table instead of a sigmoid table and a 65536-entry table of two bytes.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import Rewriter

from qdialect.dialects import qint, qnn
from qdialect.dialects.quant import quantized_element_type
from transforms.emit import Emitter, int_tensor

UNARY = (qnn.LogisticOp, qnn.TanhOp, qnn.EluOp, qnn.HardSwishOp, qnn.LeakyReluOp, qnn.GeluOp,
         qnn.ExpOp, qnn.RsqrtOp, qnn.SqrtOp, qnn.AbsOp, qnn.NegOp, qnn.RequantizeOp, qnn.ClampOp)
BINARY = (qnn.AddOp, qnn.SubOp, qnn.MulOp, qnn.MaximumOp, qnn.MinimumOp, qnn.SquaredDifferenceOp)


def _per_tensor_q(value: SSAValue):
    """The value's QParams if it is quantized per tensor, else None."""
    q = quantized_element_type(value.type)
    if q is None:
        return None
    try:
        params = q.qparams()
    except Exception:  # noqa: BLE001 - invalid parameters: the decomposition names them
        return None
    return None if params.per_axis or np.ndim(params.scale) else params


def _shape(value: SSAValue):
    return tuple(qint.shape_of(value))


def _candidate(op: Operation) -> bool:
    """An op of the kinds that fold, per tensor, without broadcast, with its own L1 arithmetic."""
    if not isinstance(op, UNARY + BINARY) or len(op.results) != 1:
        return False
    shape = _shape(op.results[0])
    values = [*op.operands, op.results[0]]
    return all(_per_tensor_q(v) is not None and _shape(v) == shape for v in values)


def _source(value: SSAValue) -> bool:
    """A tensor a table can be indexed by: stored integers of at most 8 bits, per tensor."""
    q = _per_tensor_q(value)
    return q is not None and q.bits <= 8


def _decomposes(op: Operation) -> bool:
    """Whether `op`'s decomposition accepts it as written (tried on a scratch emitter whose
    ops are dropped again)."""
    from transforms import decompose_onnx
    from transforms.decompositions import DECOMPOSITIONS

    fn = decompose_onnx.decompose if decompose_onnx.takes(op) else DECOMPOSITIONS.get(type(op))
    if fn is None:
        return False
    e = Emitter()
    try:
        fn(e, op)
        ok = True
    except Exception:  # noqa: BLE001 - refused (Unsupported) or bad input: the op-by-op walk reports it
        ok = False
    for made in reversed(e.ops):  # (never inserted: only their uses of op's operands to undo)
        made.drop_all_references()
    return ok


def _table(x: SSAValue, graph: list[Operation], root: Operation) -> np.ndarray | None:
    """The root's stored value for each stored value of `x`, the graph evaluated op by op
    (None if some op's reference refuses a value)."""
    from qdialect.interpreter import Interpreter
    from qdialect.reference import elementwise as ew

    x_q = quantized_element_type(x.type).qparams()
    lo, hi = ew.type_bounds(x_q)
    values = np.arange(lo, hi + 1, dtype=np.int64).astype(x_q.dtype)
    env = {x: values}
    it = Interpreter(None)
    try:
        for op in graph:
            env[op.results[0]] = np.asarray(it.eval(op, [env[v] for v in op.operands])[0])
    except Exception:  # noqa: BLE001 - a value the reference refuses: not folded, decomposed op by op
        return None
    out = env[root.results[0]]
    return out.astype(np.int64).reshape(-1) if out.size == values.size else None


def fold_byte_tables(module: ModuleOp) -> int:
    """Fold every such graph of `module` into one qint.table (bridged by quant.scast, as the
    decompositions emit); returns how many.  Ops left without readers are erased by the
    decomposition's walk."""
    graphs: dict[SSAValue, tuple[SSAValue, list[Operation]]] = {}  # value -> (x, its graph)
    roots: list[tuple[Operation, SSAValue, list[Operation]]] = []
    for op in module.walk():
        if not _candidate(op):
            continue
        xs, graph = set(), []
        for v in op.operands:
            if v in graphs:
                x, g = graphs[v]
                xs.add(x)
                graph.extend(o for o in g if o not in graph)
            elif _source(v):
                xs.add(v)
            else:
                xs.add(None)
        if len(xs) != 1 or None in xs:
            continue
        (x,) = xs
        graph.append(op)
        graphs[op.results[0]] = (x, graph)
    def in_graph_of(use, x) -> bool:
        res = use.operation.results
        return bool(res) and res[0] in graphs and graphs[res[0]][0] is x

    for value, (x, graph) in graphs.items():
        single_binary = len(graph) == 1 and isinstance(graph[0], BINARY)  # (x * x: one op, no table yet)
        if len(graph) < 2 and not single_binary:
            continue
        if any(not in_graph_of(use, x) for use in value.uses):  # read outside its graph: a root
            roots.append((value.owner, x, graph))
    plans = []
    for root, x, graph in roots:  # (every table before any replacement: graphs share ops)
        if not all(_decomposes(op) for op in graph):
            continue
        table = _table(x, graph, root)
        if table is not None:
            plans.append((root, x, table))
    for root, x, table in plans:
        x_q = quantized_element_type(x.type).qparams()
        out_q = quantized_element_type(root.results[0].type).qparams()
        e = Emitter()
        tv = e.constant(table, out_q.bits)
        attrs = {} if x_q.signed else {"unsigned": True}
        stored = e.qint(qint.TableOp, [e.storage(x), tv], int_tensor(_shape(root.results[0]), out_q.bits), **attrs)
        result = e.quantized(stored, root.results[0].type)
        Rewriter.replace_op(root, e.ops, [result])
    return len(plans)
