"""Epilogues fused into the VNNI convolution: the elementwise chain that follows it.

After lowering, an int8 convolution is `linalg.conv_2d_nhwc_fhwc` (i32 sums) followed
by elementwise `linalg.generic`s: the input zero-point correction, the bias, the
requantization (multiply, shift, zero point, clamp, i8) and sometimes a residual
add, then often a `tensor.pad` for the next depthwise convolution.  Run as separate
kernels, every one of them reads and writes a whole tensor (the i32 sums are 4
bytes per element); fused into the convolution, they run on the accumulators
while those are still in registers, and the int8 result (padded in place) is the
only thing written.

`collect` follows the convolution's result through generics that can be fused:

- all loops parallel, the identity output map, the convolution's shape;
- the chain value read once, at the identity map, and used by nothing else;
- every other input a scalar constant, a constant per-output-channel vector
  (map `(d0, d1, d2, d3) -> (d3)`), or a tensor of the output's shape read at the
  identity map (a residual; it must be computed before the convolution is);
- a body of scalar arith / linalg.index ops (no table reads);

and then, optionally, one `tensor.pad` of the height and width by a constant.  A
fully connected layer's sums (a 1x1 convolution of a 1 x B image, [1, 1, B, K])
collapsed to [B, K] continue the same way over 2-D generics: element (b, k) is
(0, 0, b, k), and the kernel's [1, 1, B, K] result is reshaped back (a free view).

Leading steps that only add a per-channel constant modulo 2^32 (`x + c`, `x - c`
in i32, or `trunci(extsi(x) +/- c)`: the zero-point correction and the bias) are
folded into the accumulator's initial value, exactly, because the i32 sums wrap.
The rest is evaluated by the same scalar rules as every other generic
(tvm_bridge/translate.py), so the semantics cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerType, TensorType, i32
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr

from qdialect.dialects.quant import is_subclass
from tvm_bridge.common import (
    TranslationError,
    dtype_of,
    eval_scalar_op,
    inputs_outputs,
    int_values,
    operand_segment,
    scalar_constant,
    shape_of,
)


@dataclass
class Param:
    """An extra kernel input of the epilogue: a per-channel vector ('channel', shape [K])
    or a tensor of the output's shape ('full')."""

    kind: str
    dtype: str  # the buffer's dtype
    value: object  # numpy array (a constant) or a relax expression
    widen_to: str | None = None  # loaded and cast to this dtype (constants stored narrower)
    shape: tuple = ()  # the buffer's shape


@dataclass
class Epilogue:
    """What `collect` found: the fused ops, the value they end in and how to compute it."""

    result: SSAValue
    ops: list[Operation] = field(default_factory=list)
    steps: list[tuple[linalg.GenericOp, SSAValue]] = field(default_factory=list)  # (generic, chain input)
    init: np.ndarray | None = None  # int32 [K], added to the accumulator (folded additive steps)
    pad: tuple[list[int], list[int], int | float] | None = None  # (low, high, value) on NHWC
    # a fully connected layer's [1, 1, B, K] sums collapsed to [B, K] before the chain: the
    # result's shape (the kernel writes [1, 1, B, K], reshaped back for free)
    collapsed: list[int] | None = None
    out_dtype: str = "int32"
    params: list[Param] = field(default_factory=list)
    # per step: the body argument -> ("chain",) | ("param", i) | ("scalar", value)
    bindings: list[dict] = field(default_factory=list)

    def key(self, tr) -> tuple:
        """Everything the kernel's text depends on besides the convolution's shapes: two
        epilogues with equal keys build the same PrimFunc (their constants are arguments)."""
        def step_key(g, binding):
            body = g.body.block
            numbering = {id(arg): ("arg", i) for i, arg in enumerate(body.args)}  # see Translator.op_key
            args = []
            for arg in body.args:
                b = binding.get(arg, ("unused",))
                if b[0] == "inline":
                    b = ("inline", step_key(b[1], b[2]))
                elif b[0] == "param":
                    p = self.params[b[1]]
                    b = ("param", b[1], p.kind, p.dtype, p.widen_to, p.shape)
                elif b[0] == "scalar":
                    b = ("scalar", repr(b[1]), tr.token(arg.type))
                args.append(b)
            ops = []
            op_key = tr.op_key
            bop, i = body.first_op, 0
            while bop is not None:
                ops.append(op_key(bop, numbering))
                for j, r in enumerate(bop.results):
                    numbering[id(r)] = ("result", i, j)
                bop, i = bop._next_op, i + 1
            return tuple(args), tuple(ops)

        return (tuple(step_key(g, b) for (g, _), b in zip(self.steps, self.bindings)),
                self.pad and (tuple(self.pad[0]), tuple(self.pad[1]), self.pad[2]), self.out_dtype,
                tuple((p.kind, p.dtype, p.widen_to, p.shape) for p in self.params),
                self.collapsed and tuple(self.collapsed))

    def expr(self, acc, y, x, k, buffers, lane, lanes: int):
        """(temps, value): the epilogue as TIR of the accumulator value `acc` at output
        position (y, x, channel k), `buffers` being the kernel's buffers for `params`,
        inside a loop vectorized over `lane` (`lanes` wide).

        `temps` are (local buffer of `lanes` values, PrimExpr) assignments, in order,
        for every value used more than once (a rescale reads its high product three
        times; as one expression tree, five chained steps would copy it hundreds of
        times).  They are buffers, not `LetStmt`s: TVM 0.27's VectorizeLoop keeps a
        let-bound value scalar inside a vectorized loop (every lane gets the last one)."""
        temps: list = []
        value = acc
        for (g, _), binding in zip(self.steps, self.bindings):
            value = self._eval(g, binding, value, (y, x, k), buffers, (temps, lane, lanes))
        return temps, value

    def _eval(self, g, binding: dict, chain, pos, buffers, temps):
        from tvm import tirx

        y, x, k = pos
        body = g.regions[0].block
        values: dict = {}
        for arg in body.args:
            b = binding.get(arg)
            if b is None:
                continue
            if b[0] == "chain":
                values[arg] = chain
            elif b[0] == "scalar":
                values[arg] = tirx.const(b[1], dtype_of(arg.type))
            elif b[0] == "inline":  # an elementwise producer evaluated in place
                values[arg] = self._eval(b[1], b[2], None, pos, buffers, temps)
            else:
                p = self.params[b[1]]
                buf = buffers[b[1]]
                load = buf[k] if p.kind == "channel" else buf[0, y, x, k] if len(p.shape) == 4 else buf[x, k]
                values[arg] = tirx.Cast(p.widen_to, load) if p.widen_to else load
        dims = [0, y, x, k] if len(shape_of(inputs_outputs(g)[1][0]._type)) == 4 else [x, k]
        for bop in body.ops:
            if is_subclass(type(bop), linalg.YieldOp):
                return values[bop._operands[0]]
            eval_scalar_op(bop, values, dims)
            r = bop.results[0]
            e = values[r]
            if hasattr(e, "asobject"):  # a lazy `==` / `!=` (tvm's EqualOp, NotEqualOp)
                e = values[r] = e.asobject()
            if r.first_use is not None and r.first_use._next_use is not None and str(e.ty) != "bool" and not isinstance(e, (tirx.IntImm, tirx.FloatImm)):
                assigned, lane, lanes = temps
                buf = tirx.decl_buffer((lanes,), str(e.ty), name=f"TMP{len(assigned)}", scope="local",
                                      layout=None)  # as TVMScript declares it in the kernel
                assigned.append((buf, e))
                values[r] = buf[lane]
        raise TranslationError("linalg.generic body without linalg.yield")


_IDENTITY = {4: "(d0, d1, d2, d3) -> (d0, d1, d2, d3)", 2: "(d0, d1) -> (d0, d1)"}
_I32 = i32  # (builtin's object, which the lowering's types usually are: see _same)
_CHANNEL = {4: "(d0, d1, d2, d3) -> (d3)", 2: "(d0, d1) -> (d1)"}


_MAP_TEXT: dict[int, tuple] = {}


def _map_text(m) -> str:
    """The affine map's text, printed once per attribute object (printing costs ~10 us)."""
    hit = _MAP_TEXT.get(id(m))
    if hit is None or hit[0] is not m:
        if len(_MAP_TEXT) > 4096:
            _MAP_TEXT.clear()
        hit = _MAP_TEXT[id(m)] = (m, str(m.data))  # the attribute is kept, so its id stays its own
    return hit[1]


def _one_use(v: SSAValue) -> bool:
    """`len(list(v.uses)) == 1`, from the use list's links (no iterator objects)."""
    first = v.first_use
    return first is not None and first._next_use is None


def _constant_of(tr, v: SSAValue):
    """The numpy value of a dense arith.constant tensor, else None."""
    dense = tr.dense(v)
    return None if dense is None else dense.array()


def _scalar_of(tr, v: SSAValue):
    owner = v.owner
    if is_subclass(type(owner), arith.ConstantOp) and \
            not is_subclass(type(owner.properties["value"]), DenseIntOrFPElementsAttr):
        return scalar_constant(owner)[0]
    c = tr.env.get(v)
    return c[0] if isinstance(c, tuple) else None


_ALL_PARALLEL: dict[int, tuple] = {}


def _all_parallel(iterator_types) -> bool:
    """Every iterator parallel; answered once per attribute object (as `_map_text`)."""
    hit = _ALL_PARALLEL.get(id(iterator_types))
    if hit is None or hit[0] is not iterator_types:
        if len(_ALL_PARALLEL) > 4096:
            _ALL_PARALLEL.clear()
        hit = _ALL_PARALLEL[id(iterator_types)] = (
            iterator_types, all("parallel" in str(it.data) for it in iterator_types.data))
    return hit[1]


def _elementwise(g: Operation, shape: list[int]) -> bool:
    """All loops parallel, identity output map of `shape`, the output's old value unread,
    a body of scalar ops only (no table reads)."""
    if not is_subclass(type(g), linalg.GenericOp):
        return False
    # (the properties and the region read directly: xDSL's accessors for them are Python calls)
    properties = g.properties
    outputs = inputs_outputs(g)[1]
    if len(outputs) != 1 or not _all_parallel(properties["iterator_types"]):
        return False
    if _map_text(properties["indexing_maps"].data[-1]) != _IDENTITY[len(shape)] or \
            list(shape_of(outputs[0]._type)) != shape:
        return False
    body = g.regions[0].block
    if body.args[-1].first_use is not None:
        return False
    bop = body.first_op
    while bop is not None:  # (the op's own fields: its `operands` and `type` are wrappers)
        if bop.regions:
            return False
        for o in bop._operands:
            t = type(o._type)
            if t is not IntegerType and is_subclass(t, TensorType):  # (an integer, the usual one: no call)
                return False
        bop = bop._next_op
    return True


# numpy's reductions cost a few us a call: a constant this small is read as a list instead
_SMALL = 64


def _splat(const: np.ndarray):
    """The value every element of `const` has (a Python scalar), else None."""
    if not const.size:
        return None
    if const.size <= _SMALL:
        values = const.ravel().tolist()
        first = values[0]
        return first if all(v == first for v in values) else None
    first = const.flat[0]
    return first.item() if (const == first).all() else None


def _fits_int32(value: np.ndarray) -> bool:
    if value.size <= _SMALL:
        values = value.ravel().tolist()
        return min(values) >= -(1 << 31) and max(values) < (1 << 31)
    return bool(value.min() >= -(1 << 31) and value.max() < (1 << 31))


def _bind(tr, g: Operation, chain: SSAValue | None, shape: list[int], params: list[Param],
          inlined: list[Operation], depth: int = 0):
    """How each input of elementwise generic `g` reaches the kernel (see `Epilogue._eval`),
    appending its run-time inputs to `params` and inlined producers to `inlined`; None if
    some input cannot."""
    maps = [_map_text(m) for m in g.properties["indexing_maps"].data]  # (see _elementwise)
    body = g.regions[0].block
    inputs = inputs_outputs(g)[0]
    if chain is not None and inputs.count(chain) != 1:
        return None
    binding: dict = {}
    for v, m, arg in zip(inputs, maps, body.args):
        if chain is not None and v is chain:
            if m != _IDENTITY[len(shape)]:
                return None
            binding[arg] = ("chain",)
            continue
        t = v._type
        if not isinstance(t, TensorType):
            c = _scalar_of(tr, v)
            if c is None:
                return None
            binding[arg] = ("scalar", c)
            continue
        const = _constant_of(tr, v)
        if const is not None and (splat := _splat(const)) is not None:
            binding[arg] = ("scalar", splat)  # a splat: its value inline
            continue
        if m == _CHANNEL[len(shape)] and const is not None and const.shape == (shape[-1],):
            kind, value = "channel", const
        elif m == _IDENTITY[len(shape)] and list(shape_of(t)) == shape:
            if const is not None:
                kind, value = "full", const
            elif v in tr.env and not isinstance(tr.env[v], tuple):
                kind, value = "full", tr.tensor(v)
            elif depth < 2 and _one_use(v) and _elementwise(v.owner, shape):
                # computed after the convolution by an elementwise generic of available
                # tensors (the other input of a residual add, rescaled): evaluate it here
                sub = _bind(tr, v.owner, None, shape, params, inlined, depth + 1)
                if sub is None:
                    return None
                inlined.append(v.owner)
                binding[arg] = ("inline", v.owner, sub)
                continue
            else:
                return None
        else:
            return None
        dtype = dtype_of(t)
        widen = None
        if isinstance(value, np.ndarray) and dtype == "int64" and value.size and _fits_int32(value):
            value, dtype, widen = value.astype(np.int32), "int32", "int64"  # sext(i32) x sext(i32)
        binding[arg] = ("param", len(params))
        params.append(Param(kind, dtype, value, widen, (shape[-1],) if kind == "channel" else tuple(shape)))
    return binding


def _additive(g: linalg.GenericOp, binding: dict, epi: Epilogue):
    """The per-channel int32 vector this step adds (mod 2^32) if it is `x + c`, `x - c`
    (i32) or `trunci(extsi(x) +/- c)` with c a scalar or per-channel constant; else None."""
    body = g.regions[0].block
    ops = []
    bop = body._first_op
    while bop is not None and len(ops) < 4:  # (a longer body is not additive: not listed whole)
        if not is_subclass(type(bop), linalg.YieldOp):
            ops.append(bop)
        bop = bop._next_op
    if len(ops) not in (1, 3):
        return None
    chain = next(a for a in body.args if binding.get(a) == ("chain",))
    i32 = _I32
    # (`is` first: comparing types equal is a Python call, and the IR's i32 is usually builtin's)
    if not _same(chain._type, i32) or not _same(g.results[0]._type.element_type, i32):
        return None

    def const_of(arg):
        b = binding.get(arg)
        if b is None:
            return None
        if b[0] == "scalar":
            return np.int64(b[1])
        if b[0] == "param" and epi.params[b[1]].kind == "channel" and isinstance(epi.params[b[1]].value, np.ndarray):
            return epi.params[b[1]].value.astype(np.int64)
        return None

    # (the classes by `is_subclass`, the operands by the ops' own fields: isinstance on an op
    # class goes through ABCMeta, and `operands` is a Python view)
    kinds = [type(o) for o in ops]
    if len(ops) == 1 and (is_subclass(kinds[0], arith.AddiOp) or is_subclass(kinds[0], arith.SubiOp)):
        a, b = ops[0]._operands
        if is_subclass(kinds[0], arith.AddiOp) and b is chain:
            a, b = b, a
        if a is chain and (c := const_of(b)) is not None:
            return c if is_subclass(kinds[0], arith.AddiOp) else -c
        return None
    if len(ops) == 3 and is_subclass(kinds[0], arith.ExtSIOp) and ops[0]._operands[0] is chain and \
            (is_subclass(kinds[1], arith.AddiOp) or is_subclass(kinds[1], arith.SubiOp)) and \
            is_subclass(kinds[2], arith.TruncIOp) and ops[2]._operands[0] is ops[1].results[0] and \
            body.last_op._operands[0] is ops[2].results[0]:
        a, b = ops[1]._operands
        wide = ops[0].results[0]
        if is_subclass(kinds[1], arith.AddiOp) and b is wide:
            a, b = b, a
        if a is wide and (c := const_of(b)) is not None:
            return c if is_subclass(kinds[1], arith.AddiOp) else -c
    return None


def _same(a, b) -> bool:
    """`a == b` for attributes, `is` first."""
    return a is b or a == b


def collect(tr, conv: Operation) -> Epilogue:
    """The fusable elementwise chain (and pad) after `conv`'s result; see the module doc."""
    value = conv.results[0]
    shape = list(shape_of(value._type))
    epi = Epilogue(result=value)
    init = np.zeros(shape[3], np.int64)
    folding = True
    while True:
        if not _one_use(value):
            break
        user = value.first_use.operation
        n_params = len(epi.params)
        inlined: list[Operation] = []
        binding = (_bind(tr, user, value, shape, epi.params, inlined)
                   if _elementwise(user, shape) and dtype_of(user.results[0]._type) != "bool" else None)
        if binding is None:
            del epi.params[n_params:]
        else:
            epi.ops.extend(inlined)
            add = _additive(user, binding, epi) if folding else None
            if add is not None:
                init = init + add
                del epi.params[n_params:]  # folded: the constant is not read at run time
            else:
                folding = False
                epi.steps.append((user, value))
                epi.bindings.append(binding)
            epi.ops.append(user)
            value = user.results[0]
            continue
        if is_subclass(type(user), tensor.CollapseShapeOp) and not epi.ops and len(shape) == 4 and shape[:2] == [1, 1] \
                and list(shape_of(user.results[0]._type)) == shape[2:]:
            # [1, 1, B, K] -> [B, K] keeps the row-major order: element (b, k) is (0, 0, b, k)
            epi.collapsed = shape = shape[2:]
            epi.ops.append(user)
            value = user.results[0]
            continue
        if len(shape) == 4 and is_subclass(type(user), tensor.PadOp) and (pad := _pad_of(tr, user)) is not None:
            epi.pad = pad
            epi.ops.append(user)
            value = user.results[0]
        break
    epi.result = value
    epi.out_dtype = dtype_of(value.type)
    epi.init = ((init + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)
    return epi


def _pad_of(tr, op: tensor.PadOp):
    """(low, high, value) of a pad of only the height and width by a constant, else None."""
    try:
        low = [int(v) for v in int_values(op.properties["static_low"])]
        high = [int(v) for v in int_values(op.properties["static_high"])]
    except Exception:  # noqa: BLE001 - dynamic
        return None
    if len(low) != 4 or low[0] or low[3] or high[0] or high[3] or min(low + high) < 0 or \
            operand_segment(op, "low") or operand_segment(op, "high"):
        return None
    yielded = op.regions[0].block.last_op._operands[0]
    c = _scalar_of(tr, yielded)
    if c is None:
        return None
    return low, high, c


__all__ = ["Epilogue", "Param", "collect", "TranslationError"]
