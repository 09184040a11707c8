"""L3 (func / arith / linalg / tensor on plain integers) -> TVM Relax IRModule.

The translation is structural:

- `func.func` arguments become Relax parameters; `func.return` the output.
- Dense `arith.constant`s become `relax.const` numpy arrays (never element lists).
- Every `linalg.generic` becomes a TE computation built from its indexing maps
  and its body (parallel dims index the output; reduction dims become
  `te.reduce_axis` and the body's accumulate op becomes `te.sum` / `te.max` /
  `te.min`), emitted with `BlockBuilder.emit_te` so TVM can fuse elementwise
  chains.
- Named ops map to Relax ops TVM schedules well: `linalg.matmul` ->
  `relax.op.matmul`, `linalg.conv_2d_nhwc_fhwc` -> `relax.op.nn.conv2d`
  (NHWC/HWIO, int32 accumulation) or, with a `dot` flavor and constant int8
  weights, the dot-product kernel of tvm_bridge/vnni.py (AVX-512 VNNI or
  `vpmaddwd`, with the elementwise
  chain after it fused in, tvm_bridge/epilogue.py), `linalg.transpose` -> `permute_dims`,
  `linalg.fill` -> `full`; tensor reshapes, slices, pads and concats map to
  their Relax ops.
- `arith` ops applied to whole tensors become elementwise TE computations.

Anything else raises `TranslationError` naming the op.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects import arith, func, tensor
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr

from qdialect import cyclic_gc
from qdialect.dialects.quant import is_subclass
from tvm_bridge.common import (  # noqa: F401 - re-exported: the bridge's public helpers
    TranslationError,
    dtype_of,
    shape_of,
    int_values,
    operand_segment,
    inputs_outputs,
    dense_to_numpy,
    tensor_constant,
    call_tir,
    aligned_empty,
    scalar_constant,
    scalar_rules,
    affine_to_tir,
    BOUND_NODES,
    SharedValues,
    eval_scalar_op,
    _Init,
    _init_value,
    _add_init,
    _scalar_key,
    _arenas,
)


# ----- the translator ------------------------------------------------------------------------


class _Dense:
    """A dense `arith.constant`, made a numpy array and a relax constant only when asked:
    convolution weights (packed by the VNNI kernel) and the per-channel parameters of a
    fused epilogue are read as numpy arrays and never need their own relax constant."""

    __slots__ = ("attr", "_array", "_expr")

    def __init__(self, attr: DenseIntOrFPElementsAttr):
        self.attr, self._array, self._expr = attr, None, None

    def array(self) -> np.ndarray:
        if self._array is None:
            self._array = dense_to_numpy(self.attr)
        return self._array

    def expr(self):
        if self._expr is None:
            self._expr = tensor_constant(self.array())
        return self._expr


class _Pad:
    """A tensor.pad by a constant, emitted (a TE kernel) only when an op needs the padded
    tensor itself: a dot-product convolution reads `source` and stages the pad with its
    input instead (tvm_bridge/vnni.py), which saves a pass over the activations."""

    __slots__ = ("source", "low", "high", "value", "_emit", "_expr")

    def __init__(self, source, low: list[int], high: list[int], value, emit):
        self.source, self.low, self.high, self.value, self._emit, self._expr = source, low, high, value, emit, None

    def expr(self):
        if self._expr is None:
            self._expr = self._emit()
        return self._expr

    def spatial(self):
        """((top, left), (bottom, right), value) when only H and W of an NHWC tensor are
        padded, by an integer; else None."""
        if len(self.low) != 4 or self.low[0] or self.high[0] or self.low[3] or self.high[3] or \
                min(self.low + self.high) < 0 or not isinstance(self.value, int):
            return None
        return (self.low[1], self.low[2]), (self.high[1], self.high[2]), self.value


def _functions(module: ModuleOp) -> list[func.FuncOp]:
    """The functions of `module` and of the modules nested in it, in order (their bodies,
    thousands of ops in a large model, are not walked)."""
    found: list[func.FuncOp] = []
    for op in module.ops:
        if isinstance(op, func.FuncOp):
            found.append(op)
        elif isinstance(op, ModuleOp):
            found.extend(_functions(op))
    return found


class Translator:
    """Translates one function of an L3 module into a Relax function `main`."""

    def __init__(self, module: ModuleOp):
        self.module = module
        # structural key of a TE computation -> (GlobalVar of its PrimFunc, output type):
        # repeated layers build and lower their TE once and call the same PrimFunc
        self.prim_funcs: dict[tuple, tuple] = {}
        # ops whose results an earlier op's kernel already computes (tvm_bridge/epilogue.py)
        self.fused: set[int] = set()  # their id()s (an IRDL op's hash is a Python call)
        # VNNI kernels of this translation by structure (tvm_bridge/vnni.py; keys use `token`)
        self.vnni_kernels: dict[tuple, object] = {}
        # dense constants by SSA value (see `dense`)
        self._dense: dict[int, _Dense] = {}  # by id(): SSAValue's own hash is a Python call
        # attribute interning for those keys (see `token`)
        self._token_of_id: dict[int, int] = {}
        self._token_of_attr: dict = {}
        self._tokened: list = []
        # op_key of scalar constants: id(value attribute) -> (attribute, key but the result type)
        self._scalar_keys: dict[int, tuple] = {}

    def token(self, attr) -> int:
        """A small int standing for `attr` in PrimFunc keys: equal attributes, equal tokens.

        xDSL attributes are frozen dataclasses that rehash their whole tree on every
        `hash()` (an ArrayAttr of affine maps: hundreds of calls); each attribute object
        is hashed here once, then found by identity (kept alive so no id is reused)."""
        t = self._token_of_id.get(id(attr))
        if t is None:
            t = self._token_of_attr.setdefault(attr, len(self._token_of_attr))
            self._token_of_id[id(attr)] = t
            self._tokened.append(attr)
        return t

    def dense(self, value: SSAValue) -> _Dense | None:
        """The dense `arith.constant` `value` is, else None (also for a constant not
        translated yet: a fused epilogue looks ahead of the translation)."""
        d = self._dense.get(id(value))
        if d is None:
            owner = value.owner
            if not is_subclass(type(owner), arith.ConstantOp):
                return None
            attr = owner.properties["value"]
            if not is_subclass(type(attr), DenseIntOrFPElementsAttr):
                return None
            d = self._dense[id(value)] = _Dense(attr)
        return d

    def op_key(self, op: Operation, numbering: dict) -> tuple:
        """Structural key of one op: class, operands (by `numbering`, which maps the `id` of
        an SSA value to its position: SSAValue's own hash is a Python call; else by
        identity), result types, properties and attributes; a scalar constant by its value."""
        token = self.token
        cls = type(op)
        properties, attributes = op.properties, op.attributes
        if is_subclass(cls, arith.ConstantOp):
            value = properties.get("value")
            # by the value attribute's identity (copies of a body share theirs): a third of
            # the ops keyed are scalar constants
            hit = self._scalar_keys.get(id(value))
            if hit is None:
                if isinstance(value, DenseIntOrFPElementsAttr):
                    hit = (value, None)
                else:
                    c, dt = scalar_constant(op)
                    hit = (value, (arith.ConstantOp, _scalar_key(c), dt))
                self._scalar_keys[id(value)] = hit  # the attribute kept alive: no id reused
            if hit[1] is not None:
                (result,) = op.results
                t = self._token_of_id.get(id(result._type))  # (`token`'s lookup, inlined as below)
                return (*hit[1], t if t is not None else token(result._type))
        get = numbering.get
        # `token`, its lookup by identity inlined (a body op has a few attributes); one flat
        # list (the sections end in None, which no operand, token or name is) built by plain
        # loops: a comprehension is a call of its own, and this runs for every body op
        known = self._token_of_id.get
        key = [cls]
        for v in op._operands:
            k = get(id(v))
            key.append(k if k is not None else ("outside", id(v)))
        key.append(None)
        for r in op.results:
            t = known(id(r._type))
            key.append(t if t is not None else token(r._type))
        key.append(None)
        for named in (properties, attributes):
            if named:
                for k in (sorted(named) if len(named) > 1 else named):
                    a = named[k]
                    t = known(id(a))
                    key.append(k)
                    key.append(t if t is not None else token(a))
            key.append(None)
        return tuple(key)

    def entry(self, name: str | None) -> func.FuncOp:
        from qdialect.entry import EntryError, entry_function

        try:
            return entry_function(self.module, name, functions=_functions(self.module))
        except EntryError as e:
            raise TranslationError(str(e)) from None

    def translate(self, entry: str | None = None):
        from tvm import relax

        f = self.entry(entry)
        self.bb = relax.BlockBuilder()
        self.functions = {g.sym_name.data: g for g in _functions(self.module)}
        self.global_vars: dict[str, object] = {}
        self.n_results: dict[str, int] = {}
        # Callees first (post-order over func.call), each as its own Relax function.
        order: list[str] = []
        self._collect_callees(f.sym_name.data, order, set(), [])
        for name in order:
            self._function(self.functions[name], name if name != f.sym_name.data else "main")
        mod = self.bb.get()
        return mod, self.n_results["main"]

    def _collect_callees(self, name: str, order: list[str], seen: set[str], stack: list[str]):
        if name in seen:
            return
        if name in stack:
            raise TranslationError(f"recursive call to @{name} cannot be compiled")
        if name not in self.functions:
            raise TranslationError(f"func.call to unknown function @{name}")
        stack.append(name)
        # only a function's top-level ops are translated (and so only their calls): no need
        # to walk into the bodies of its linalg ops
        # (the ops by their links and classes: xDSL's op iterator and an isinstance through
        # ABCMeta cost more than the rest of this loop, which sees every op of the model)
        for block in self.functions[name].body.blocks:
            op = block._first_op
            while op is not None:
                if is_subclass(type(op), func.CallOp):
                    self._collect_callees(op.callee.root_reference.data, order, seen, stack)
                op = op._next_op
        stack.pop()
        seen.add(name)
        order.append(name)

    def _function(self, f: func.FuncOp, relax_name: str):
        from tvm import relax

        bb = self.bb
        block = f.body.block
        params = []
        for i, arg in enumerate(block.args):
            t = arg.type
            if not isinstance(t, TensorType):
                raise TranslationError(f"@{f.sym_name.data} argument {i} type {t} is not a ranked tensor")
            params.append(relax.Var(f"input_{i}", relax.TensorType(list(t.get_shape()), dtype_of(t))))
        self.env = dict(zip(block.args, params))
        with bb.function(relax_name, params, private=relax_name != "main"):
            with bb.dataflow():
                outputs = None
                op = block._first_op  # (see _collect_callees)
                while op is not None:
                    if is_subclass(type(op), func.ReturnOp):
                        outputs = [self.tensor(v) for v in op.operands]
                        break
                    following = op._next_op  # (read first, as xDSL's iterator does)
                    self.visit(op)
                    op = following
                if outputs is None:
                    raise TranslationError(f"@{f.sym_name.data} has no func.return")
                out = bb.emit_output(outputs[0] if len(outputs) == 1 else relax.Tuple(outputs))
            gv = bb.emit_func_output(out)
        self.global_vars[f.sym_name.data] = bb.get().get_global_var(relax_name)
        self.n_results[relax_name] = len(outputs)

    # -- values --
    def tensor(self, value: SSAValue):
        v = self.env[value]
        if isinstance(v, _Init):
            if v.tensor_expr is None:
                from tvm import relax

                fill = 0 if v.value is None else v.value
                v.tensor_expr = self.bb.emit(
                    relax.op.full(v.shape, relax.const(fill, v.dtype), v.dtype)
                )
            return v.tensor_expr
        if isinstance(v, (_Dense, _Pad)):
            return v.expr()
        if isinstance(v, tuple):  # scalar constant
            raise TranslationError(f"scalar {value} used where a tensor is needed")
        return v

    def visit(self, op: Operation):
        if id(op) in self.fused:  # already computed inside an earlier op's kernel (a VNNI epilogue)
            return
        handler = _OP_HANDLERS.get(type(op))
        if handler is None:
            if type(op) in scalar_rules():
                return self.elementwise_arith(op)
            raise TranslationError(f"the TVM bridge cannot translate {op.name}")
        handler(self, op)

    def emit_te(self, key: tuple, fte: Callable, *tensors):
        """`BlockBuilder.emit_te(fte, *tensors)`, but a computation whose structural `key`
        was seen before calls the PrimFunc built then instead of building a new one.

        `key` must determine the PrimFunc completely: every shape, dtype, attribute and
        constant `fte` reads (the relax tensors are only its arguments)."""
        hit = self.prim_funcs.get(key)
        if hit is None:
            call = self.bb.call_te(fte, *tensors)
            self.prim_funcs[key] = (call.args[0], list(call.ty_args))
            return self.bb.emit(call)
        gvar, out_type = hit
        return self.bb.emit(call_tir(gvar, list(tensors), out_type))

    # -- elementwise arith on whole tensors --
    def elementwise_arith(self, op: Operation):
        from tvm import te

        if not isinstance(op.results[0].type, TensorType):
            if isinstance(op, arith.ConstantOp):
                self.env[op.results[0]] = scalar_constant(op)
                return
            raise TranslationError(f"{op.name} on scalars outside a linalg body is not supported")
        rule = scalar_rules()[type(op)]
        shape = list(op.results[0].type.get_shape())
        ins = [self.tensor(v) for v in op.operands]

        def fte(*tensors):
            return te.compute(shape, lambda *i: rule(op, [t(*i) for t in tensors]), name=op.name.replace(".", "_"))

        key = ("arith", self.op_key(op, {id(v): ("operand", i) for i, v in enumerate(op.operands)}),
               tuple(self.token(v.type) for v in op.operands))
        self.env[op.results[0]] = self.emit_te(key, fte, *ins)


_OP_HANDLERS: dict[type, Callable] = {}


def handles(*classes):
    def register(fn):
        for cls in classes:
            _OP_HANDLERS[cls] = fn
        return fn

    return register


@handles(func.CallOp)
def _call(tr: Translator, op: func.CallOp):
    from tvm import relax

    name = op.callee.root_reference.data
    call = tr.bb.emit(relax.Call(tr.global_vars[name], [tr.tensor(v) for v in op.operands]))
    if len(op.results) == 1:
        tr.env[op.results[0]] = call
    else:
        for i, r in enumerate(op.results):
            tr.env[r] = tr.bb.emit(relax.TupleGetItem(call, i))


@handles(arith.ConstantOp)
def _constant(tr: Translator, op: arith.ConstantOp):
    (result,) = op.results
    if is_subclass(type(op.properties["value"]), DenseIntOrFPElementsAttr):
        tr.env[result] = tr.dense(result)
    else:
        tr.env[result] = scalar_constant(op)


@handles(tensor.EmptyOp)
def _empty(tr: Translator, op):
    (result,) = op.results
    t = result._type
    tr.env[result] = _Init(list(shape_of(t)), dtype_of(t))


@handles(linalg.FillOp)
def _fill(tr: Translator, op):
    value = tr.env[inputs_outputs(op)[0][0]]
    if not isinstance(value, tuple):
        raise TranslationError("linalg.fill with a non-constant value is not supported")
    (result,) = op.results
    t = result._type
    tr.env[result] = _Init(list(shape_of(t)), dtype_of(t), value[0])


def _splat(tr: Translator, value: SSAValue):
    """The one value (a Python int or float) of every element of `value` when it is a dense
    constant with all elements equal (an average pool's window sizes without padding, ...):
    read as a scalar, it lets LLVM fold what it is used in (a division by 4 into shifts);
    else None."""
    dense = tr.dense(value)
    if dense is None:
        return None
    arr = dense.array()
    if arr.size == 0 or arr.size > 1 << 16 or not (arr == arr.flat[0]).all():
        return None
    return arr.flat[0].item()


@handles(linalg.GenericOp)
def _generic(tr: Translator, op: linalg.GenericOp):
    from tvm import te, tirx

    flavor = getattr(tr, "dot", None)
    if flavor is not None:  # a registered kernel (tvm_bridge/kernels.py): batch matmul, depthwise
        from tvm_bridge import kernels

        if kernels.emit_generic(tr, op, flavor):
            return

    op_inputs, op_outputs = list(op.inputs), list(op.outputs)  # (each a segment lookup)
    if len(op_outputs) != 1:
        raise TranslationError("linalg.generic with several outputs is not supported")
    indexing_maps, iterator_types = op.indexing_maps, op.iterator_types
    maps = [m.data for m in indexing_maps.data]
    iters = [str(it.data) for it in iterator_types.data]
    n_loops = len(iters)
    operands = op_inputs + op_outputs
    extents: list[int | None] = [None] * n_loops
    for v, m in zip(operands, maps):
        if isinstance(v.type, TensorType):
            for r, e in enumerate(m.results):
                if isinstance(e, AffineDimExpr) and extents[e.position] is None:
                    extents[e.position] = v.type.get_shape()[r]
    if any(e is None for e in extents):
        raise TranslationError("linalg.generic: a loop has no extent derivable from an operand")
    out_map = maps[-1]
    out_type = op_outputs[0].type
    out_shape = list(out_type.get_shape())
    out_dtype = dtype_of(out_type)
    red_dims = [d for d, it in enumerate(iters) if "reduction" in it]
    for r, e in enumerate(out_map.results):
        if not isinstance(e, AffineDimExpr) or "reduction" in iters[e.position]:
            raise TranslationError("linalg.generic: output map must be a permutation of parallel dims")

    body = op.body.block
    if red_dims and _is_fma_chain(body) or SharedValues.needed(body):
        return _loop_generic(tr, op, maps, iters, extents)
    tensor_inputs = []
    input_kinds = []  # ("tensor", k) or ("scalar", value)
    for v in op_inputs:
        if isinstance(v.type, TensorType):
            splat = _splat(tr, v)
            if splat is not None:  # every element the same constant: read as that scalar
                input_kinds.append(("scalar", (splat, dtype_of(v.type))))
                continue
            input_kinds.append(("tensor", len(tensor_inputs)))
            tensor_inputs.append(tr.tensor(v))
        else:
            c = tr.env.get(v)
            if not isinstance(c, tuple):
                raise TranslationError("linalg.generic: non-constant scalar input")
            input_kinds.append(("scalar", c))
    # One pass over the body: the tensors it reads from outside (tables via tensor.extract,
    # which travel as extra TE inputs) and the structural key of every op (SSA values as
    # positions, constants by value: everything fcompute reads).
    captured: list[SSAValue] = []
    numbering: dict[int, tuple] = {id(arg): ("arg", i) for i, arg in enumerate(body.args)}  # see op_key
    body_key = []
    for k, bop in enumerate(body.ops):
        for v in bop._operands:
            if id(v) not in numbering and isinstance(v.type, TensorType):
                numbering[id(v)] = ("captured", len(captured))
                captured.append(v)
        body_key.append(tr.op_key(bop, numbering))
        for i, r in enumerate(bop.results):
            numbering[id(r)] = ("result", k, i)
    captured_at = {v: len(tensor_inputs) + k for k, v in enumerate(captured)}
    tensor_inputs.extend(tr.tensor(v) for v in captured)
    init_tensor, init_const = _init_value(tr, op_outputs[0])
    out_arg = body.args[-1]
    yield_op = body.last_op
    rules = scalar_rules()

    # The reduction combiner: yield(combine(out_arg, rhs)).
    combiner = None
    if red_dims:
        yielded = yield_op.operands[0].owner
        if not isinstance(yielded, Operation) or out_arg not in yielded.operands or len(list(out_arg.uses)) != 1:
            raise TranslationError("linalg.generic: reduction body must yield combine(accumulator, value)")
        combiner = yielded
        if not isinstance(combiner, (arith.AddiOp, arith.AddfOp, arith.MaxSIOp, arith.MaximumfOp,
                                     arith.MinSIOp, arith.MinimumfOp)):
            raise TranslationError(f"linalg.generic: reduction combiner {combiner.name} is not supported")
    # a reduction whose init is the combiner's identity is the bare TE reduction; any other
    # init is combined in a second, elementwise stage (TE reductions must be top level)
    separate_init = combiner is not None and (init_tensor is not None or not _is_identity(combiner, init_const, out_dtype))
    n_in = len(tensor_inputs)
    if init_tensor is not None and combiner is None:
        tensor_inputs.append(init_tensor)

    def fcompute(*tensors):
        def body_fn(*out_idx):
            dims = [None] * n_loops
            for r, e in enumerate(out_map.results):
                dims[e.position] = out_idx[r]
            raxes = [te.reduce_axis((0, extents[d]), name=f"r{d}") for d in red_dims]
            for d, ax in zip(red_dims, raxes):
                dims[d] = ax
            values: dict[SSAValue, object] = {}
            for k, ((kind, ref), arg, m) in enumerate(zip(input_kinds, body.args, maps)):
                if kind == "tensor":
                    values[arg] = tensors[ref](*[affine_to_tir(e, dims) for e in m.results])
                else:
                    values[arg] = tirx.const(ref[0], dtype_of(arg.type))
            if combiner is None:
                values[out_arg] = (
                    tensors[n_in](*out_idx) if init_tensor is not None else tirx.const(init_const, out_dtype)
                )
            for bop in body.ops:
                if bop is yield_op:
                    break
                if bop is combiner:
                    continue
                if isinstance(bop, tensor.ExtractOp) and bop.tensor in captured_at:
                    table = tensors[captured_at[bop.tensor]]
                    values[bop.results[0]] = table(*[values[i] for i in bop.indices])
                    continue
                eval_scalar_op(bop, values, dims, rules)
            if combiner is None:
                return values[yield_op.operands[0]]
            other = [v for v in combiner.operands if v is not out_arg][0]
            rhs = values[other]
            if isinstance(combiner, (arith.AddiOp, arith.AddfOp)):
                return te.sum(rhs, axis=raxes)
            if isinstance(combiner, (arith.MaxSIOp, arith.MaximumfOp)):
                return te.max(rhs, axis=raxes)
            return te.min(rhs, axis=raxes)

        return te.compute(out_shape, body_fn, name="generic")

    token = tr.token
    key = ("generic", tuple([token(m) for m in indexing_maps.data]), token(iterator_types),
           tuple([token(v.type) for v in operands]), tuple([token(v.type) for v in captured]),
           tuple((kind, _scalar_key(ref[0]), ref[1]) if kind == "scalar" else (kind, ref) for kind, ref in input_kinds),
           init_tensor is not None, _scalar_key(init_const), tuple(body_key))
    result = tr.emit_te(key, fcompute, *tensor_inputs)
    if separate_init:
        from tvm import relax

        init = init_tensor if init_tensor is not None else relax.const(init_const, out_dtype)
        combine = {arith.AddiOp: relax.op.add, arith.AddfOp: relax.op.add, arith.MaxSIOp: relax.op.maximum,
                   arith.MaximumfOp: relax.op.maximum, arith.MinSIOp: relax.op.minimum,
                   arith.MinimumfOp: relax.op.minimum}[type(combiner)]
        result = tr.bb.emit(combine(result, init))
    tr.env[op.results[0]] = result


def _is_fma_chain(body) -> bool:
    """A reduction body yielding `math.fma(a, b, acc)` (acc the output argument, read once)."""
    y = body.last_op.operands[0].owner
    acc = body.args[-1]
    return (isinstance(y, Operation) and y.name == "math.fma" and y.operands[2] is acc
            and len(list(acc.uses)) == 1)


def _loop_generic(tr: Translator, op: linalg.GenericOp, maps, iters, extents):
    """A linalg.generic written as a TIR PrimFunc node by node, loops and one store, instead of
    a TE compute: for a reduction whose body is a fused multiply-add chain, `acc = fma(a, b,
    acc)` (a float sum in the order of its reduction loops, MLAS's SGEMM accumulators, which
    a TE reduction, commutative and free to be reordered or split, does not promise), and for
    a body whose big values are read several times (`SharedValues`: each computed once into
    a one-value local buffer, where a TE expression would repeat it).  The output's loops
    (the last one innermost, inside the reduction loops, so each output element still sees
    its terms in order while LLVM can vectorize across that loop), the init stored first
    where there is a reduction, then the body evaluated whole (its combiner reading the
    output) per step."""
    import tvm
    from tvm import relax, s_tir, tirx
    from tvm.target.codegen import llvm_lookup_intrinsic_id

    op_inputs, op_outputs = list(op.inputs), list(op.outputs)
    body = op.body.block
    out_map = maps[-1]
    out_type = op_outputs[0].type
    out_shape = list(out_type.get_shape())
    out_dtype = dtype_of(out_type)
    red_dims = [d for d, it in enumerate(iters) if "reduction" in it]
    if red_dims and _is_fma_chain(body) and out_dtype != "float32":
        raise TranslationError("linalg.generic: a math.fma chain must accumulate float32")
    if red_dims:
        yielded = body.last_op.operands[0].owner
        if not isinstance(yielded, Operation) or body.args[-1] not in yielded.operands:
            raise TranslationError("linalg.generic: reduction body must yield combine(accumulator, value)")
    args, bufs, arg_of = [], [], {}
    for k, v in enumerate(op_inputs):
        if not isinstance(v.type, TensorType):
            c = tr.env.get(v)
            if not isinstance(c, tuple):
                raise TranslationError("linalg.generic: non-constant scalar input")
            arg_of[k] = ("scalar", c)
            continue
        # a constant (weights) whose axis along the innermost loop is not its last: a copy
        # with that axis last, so that the loop reads it contiguously (LLVM vectorizes it:
        # ORT's float 1x1 convolutions, OIHW weights along the output channels)
        array = _constant_array(tr, v)
        perm = _inner_last(maps[k], out_map, array)
        if perm is not None:
            array = np.ascontiguousarray(array.transpose(perm))
            b = tirx.decl_buffer(list(array.shape), dtype_of(v.type), name=f"I{k}", scope="global", layout=None)
            bufs.append(b)
            args.append(tensor_constant(array))
            arg_of[k] = ("buffer", b, perm)
            continue
        b = tirx.decl_buffer(list(v.type.get_shape()), dtype_of(v.type), name=f"I{k}", scope="global", layout=None)
        bufs.append(b)
        args.append(tr.tensor(v))
        arg_of[k] = ("buffer", b)
    tables = {}  # tensors the body reads by tensor.extract
    for bop in body.ops:
        if isinstance(bop, tensor.ExtractOp) and bop.tensor not in tables:
            if not isinstance(bop.tensor.type, TensorType):
                raise TranslationError("linalg.generic: tensor.extract of a non-tensor")
            b = tirx.decl_buffer(list(bop.tensor.type.get_shape()), dtype_of(bop.tensor.type),
                                 name=f"T{len(tables)}", scope="global", layout=None)
            bufs.append(b)
            args.append(tr.tensor(bop.tensor))
            tables[bop.tensor] = b
    init_tensor, init_const = _init_value(tr, op_outputs[0])
    init_buf = None
    if init_tensor is not None:
        init_buf = tirx.decl_buffer(out_shape, out_dtype, name="INIT", scope="global", layout=None)
        bufs.append(init_buf)
        args.append(init_tensor)
    Y = tirx.decl_buffer(out_shape, out_dtype, name="Y", scope="global", layout=None)
    n_loops = len(iters)
    loop_vars = [tirx.Var(f"d{d}", "int32") for d in range(n_loops)]
    out_idx = [loop_vars[e.position] for e in out_map.results]
    rules = scalar_rules()
    fma_id = llvm_lookup_intrinsic_id("llvm.fma")
    init_value = tirx.BufferLoad(init_buf, out_idx) if init_buf is not None else tirx.const(init_const, out_dtype)
    def inputs_at(lv) -> dict:
        """The body's input arguments (not the output's) read at loop variables `lv`."""
        vals = {}
        for k, (arg, m) in enumerate(zip(body.args, maps)):
            if k == len(op_inputs):
                continue
            kind, ref = arg_of[k][:2]
            if kind == "buffer":
                index = [affine_to_tir(e, lv) for e in m.results]
                if len(arg_of[k]) == 3:  # (the copy with its axes permuted)
                    index = [index[i] for i in arg_of[k][2]]
                vals[arg] = tirx.BufferLoad(ref, index)
            else:
                vals[arg] = tirx.const(ref[0], dtype_of(arg.type))
        return vals

    values = inputs_at(loop_vars)
    # the output: the running value in a reduction, else its init
    values[body.args[len(op_inputs)]] = tirx.BufferLoad(Y, out_idx) if red_dims else init_value
    yield_op = body.last_op
    shared = _evaluate_body(body, values, loop_vars, rules, fma_id, tables)
    update = shared.wrap(tirx.BufferStore(Y, values[yield_op.operands[0]], out_idx))
    inner = out_map.results[-1].position if out_map.results else None
    outer = [e.position for e in out_map.results[:-1]]
    tile = None
    if red_dims and _is_fma_chain(body) and not tables and outer:
        # (the vector width of the target's dot-product flavor: 16 lanes with AVX-512, 8 otherwise)
        lanes = tr.dot.max_lanes if getattr(tr, "dot", None) is not None else 8
        tile = _chain_tile(extents[outer[-1]], extents[inner], iters[outer[-1]], iters[inner], lanes)
    tiled = None if tile is None else _tiled_chain(body, inputs_at, loop_vars, out_map, red_dims, extents, tile, Y,
                                                   init_buf, init_const, out_dtype, rules, fma_id)
    if tiled is not None:
        for d in reversed(outer[:-1]):
            tiled = tirx.For(loop_vars[d], tirx.IntImm("int32", 0), tirx.IntImm("int32", extents[d]),
                             tirx.ForKind.SERIAL, tiled)
        tr.env[op.results[0]] = _finish_loop_generic(tr, tiled, bufs, args, Y, out_shape, out_dtype, "fma_chain")
        return

    def loop(d, stmt):
        return tirx.For(loop_vars[d], tirx.IntImm("int32", 0), tirx.IntImm("int32", extents[d]),
                        tirx.ForKind.SERIAL, stmt)

    def inner_loop(stmt):
        return stmt if inner is None else loop(inner, stmt)

    stmt = inner_loop(update)
    if red_dims:
        for d in reversed(red_dims):
            stmt = loop(d, stmt)
        stmt = tirx.SeqStmt([inner_loop(tirx.BufferStore(Y, init_value, out_idx)), stmt])
    for d in reversed(outer):
        stmt = loop(d, stmt)
    if shared.temps:
        stmt = tirx.SeqStmt(shared.allocations() + [stmt])
    tr.env[op.results[0]] = _finish_loop_generic(tr, stmt, bufs, args, Y, out_shape, out_dtype,
                                                 "fma_chain" if red_dims and _is_fma_chain(body) else "loops")


def _finish_loop_generic(tr: Translator, stmt, bufs, args, Y, out_shape, out_dtype: str, name: str):
    """The call (bound in the module) of `_loop_generic`'s loops `stmt` over buffers `bufs`
    writing Y, made a PrimFunc added to the module, on `args`."""
    import tvm
    from tvm import relax, s_tir, tirx

    # in a root block: Relax's RewriteDataflowReshape reads the root block of a kernel of one
    # tensor argument, asking whether it is a reshape
    stmt = s_tir.SBlockRealize([], True, s_tir.SBlock([], [], [], "root", stmt))
    # op_pattern 8 (kOpaque): FuseOps leaves the call alone (FuseTIR cannot merge loops without blocks)
    attrs = tvm.ir.make_node("ir.DictAttrs", **{"tirx.noalias": True, "tirx.is_scheduled": True, "s_tir": True,
                                                 "op_pattern": 8})
    prim_func = tirx.PrimFunc([*bufs, Y], stmt, ret_type=tvm.ir.TupleType([]), attrs=attrs)
    gvar = tr.bb.add_func(prim_func, name)
    return tr.bb.emit(call_tir(gvar, args, relax.TensorType(out_shape, out_dtype)))


#: the float lanes of accumulators a tiled FMA chain holds: 24 of the 32 zmm registers with
#: AVX-512 (the weights' vector and the broadcast activation need a few), 12 of the 16 ymm
#: ones otherwise; and the lanes its channels come in whole multiples of
CHAIN_MAX_LANES = {16: 24 * 16, 8: 12 * 8}
CHAIN_LANES = 16
#: set QDIALECT_CHAIN_TILES=0 to keep every FMA chain one output pixel at a time
CHAIN_TILES_ENV = "QDIALECT_CHAIN_TILES"


def _chain_tile(pixels: int, channels: int, pixel_iter: str, channel_iter: str, vector_lanes: int) -> int | None:
    """The pixels P of a register tile of an FMA chain (`_tiled_chain`) whose last two output
    dimensions are `pixels` (the tiled one) and `channels` (the vector), on a target whose
    float vectors have `vector_lanes` lanes: the largest divisor of `pixels`, at least 2 and
    at most 12, whose P x channels sums fit CHAIN_MAX_LANES; None where none fits, or where
    channels is no multiple of CHAIN_LANES (MobileNetV2's 72 channels, 4.5 vectors a pixel:
    LLVM split the tile's sums into lanes, 4.4 -> 55 us a call)."""
    import os

    if os.environ.get(CHAIN_TILES_ENV) == "0" or "parallel" not in pixel_iter or "parallel" not in channel_iter:
        return None
    if channels % CHAIN_LANES:
        return None
    budget = CHAIN_MAX_LANES[16 if vector_lanes >= 16 else 8]
    fits = [p for p in range(2, min(pixels, 12) + 1) if pixels % p == 0 and p * channels <= budget]
    return max(fits) if fits else None


def _evaluate_body(body, values: dict, loop_vars, rules, fma_id, tables: dict) -> SharedValues:
    """`_loop_generic`'s body ops up to its yield evaluated into `values` (TIR expressions of
    its arguments, read at `loop_vars`; `tables` the buffers of the tensors it reads by
    tensor.extract): `math.fma` as `llvm.fma`, the rest by the scalar rules; the values read
    several times and big, each computed once (the SharedValues returned, to allocate and
    store)."""
    from tvm import tirx

    shared = SharedValues(body, BOUND_NODES)
    for bop in body.ops:
        if bop is body.last_op:
            break
        if bop.name == "math.fma":
            a, b, c = (values[v] for v in bop.operands)
            values[bop.results[0]] = tirx.call_llvm_pure_intrin(str(a.ty), fma_id, a, b, c)
        elif isinstance(bop, tensor.ExtractOp):
            values[bop.results[0]] = tirx.BufferLoad(tables[bop.tensor], [values[i] for i in bop.indices])
        else:
            eval_scalar_op(bop, values, loop_vars, rules)
        shared.bind(bop, values)
    return shared


def _tiled_chain(body, chain_at, loop_vars, out_map, red_dims, extents, P: int, Y, init_buf, init_const,
                 out_dtype: str, rules, fma_id):
    """The loops of an FMA chain over a register tile: P pixels of the last parallel output
    dimension before the channels x all its channels, the running sums in a local buffer ACC
    (P x channels, float32; on the stack and in registers, tvm_bridge/lowering.py) instead of
    in Y, read and written at every step of the reduction.  Each sum still sees its terms in
    the order of the reduction loops, so every element is the one-pixel loop's (MLAS's
    SGEMM order); the steps of the P pixels are independent FMAs instead of one chain whose
    every step waits for a store to Y and its reload (ResNeXt's 16-bit grouped 3x3 layer of
    16 channels at 28x28: 23 G FMA a second).  Returns the statement for the loops from the
    tiled dimension in (the outer ones are the caller's), or None where a value the body
    computes once (`SharedValues`) reads a channel."""
    from tvm import tirx

    outer = [e.position for e in out_map.results[:-1]]
    tdim, inner = outer[-1], out_map.results[-1].position
    channels = extents[inner]
    xo, pv = tirx.Var("xo", "int32"), tirx.Var("p", "int32")
    ACC = tirx.decl_buffer((P, channels), "float32", name="ACC", scope="local", layout=None)
    lv = list(loop_vars)
    lv[tdim] = xo * P + pv
    out_idx = [lv[e.position] for e in out_map.results]
    o = loop_vars[inner]

    def vector_loop(stmt):
        return tirx.For(o, tirx.IntImm("int32", 0), tirx.IntImm("int32", channels), tirx.ForKind.VECTORIZED, stmt)

    def per_pixel(stmt):
        return tirx.For(pv, tirx.IntImm("int32", 0), tirx.IntImm("int32", P), tirx.ForKind.UNROLLED, stmt)

    init = tirx.BufferLoad(init_buf, out_idx) if init_buf is not None else tirx.const(init_const, out_dtype)
    values = chain_at(lv)
    values[body.args[-1]] = tirx.BufferLoad(ACC, [pv, o])
    yield_op = body.last_op
    shared = _evaluate_body(body, values, lv, rules, fma_id, {})
    # the values computed once (the dequantized activation) are a pixel's, stored before its
    # vector of channels: none may read a channel
    if any(_reads_var(e, o) for _, e in shared.temps):
        return None
    step = per_pixel(shared.wrap(vector_loop(tirx.BufferStore(ACC, values[yield_op.operands[0]], [pv, o]))))
    for d in reversed(red_dims):
        step = tirx.For(loop_vars[d], tirx.IntImm("int32", 0), tirx.IntImm("int32", extents[d]),
                        tirx.ForKind.SERIAL, step)
    tile = tirx.SeqStmt([
        per_pixel(vector_loop(tirx.BufferStore(ACC, init, [pv, o]))),
        step,
        per_pixel(vector_loop(tirx.BufferStore(Y, tirx.BufferLoad(ACC, [pv, o]), out_idx)))])
    return tirx.SeqStmt(shared.allocations() + [tirx.AllocBuffer(ACC), tirx.For(
        xo, tirx.IntImm("int32", 0), tirx.IntImm("int32", extents[tdim] // P), tirx.ForKind.SERIAL, tile)])


def _reads_var(expr, var) -> bool:
    """Whether TIR expression `expr` reads variable `var`."""
    import tvm_ffi
    from tvm import tirx

    found = [False]

    def visit(node):
        if node.same_as(var):
            found[0] = True
        return node

    tvm_ffi.structural_map(expr, (tirx.Var, visit))
    return found[0]


def _constant_array(tr: Translator, value: SSAValue):
    """The numpy array of `value` where it is a dense constant (or a reshape of one), else None."""
    dense = tr.dense(value)
    if dense is not None:
        return dense.array()
    owner = value.owner
    if isinstance(owner, Operation) and owner.name in ("tensor.expand_shape", "tensor.collapse_shape"):
        source = tr.dense(owner.operands[0])
        if source is not None:
            return source.array().reshape(value.type.get_shape())
    return None


def _inner_last(m, out_map, array) -> list | None:
    """The axis order putting last the axis of constant `array` (read through map `m`) that
    the loop kernel's innermost loop (the output's last dimension, `out_map`) indexes, where
    that axis is not last already and has more than one element; else None."""
    if array is None or array.ndim < 2 or not out_map.results:
        return None
    inner = out_map.results[-1].position
    axes = [r for r, e in enumerate(m.results) if isinstance(e, AffineDimExpr) and e.position == inner]
    if len(axes) != 1 or axes[0] == array.ndim - 1 or array.shape[axes[0]] < 2:
        return None
    return [r for r in range(array.ndim) if r != axes[0]] + [axes[0]]


def _is_identity(combiner: Operation, value, dtype: str) -> bool:
    """Whether `value` is the identity of the reduction `combiner` on `dtype`."""
    if isinstance(combiner, (arith.AddiOp, arith.AddfOp)):
        return value == 0
    if dtype.startswith("int"):
        bits = int(dtype[3:])
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        return value == (lo if isinstance(combiner, arith.MaxSIOp) else hi)
    return value == (-float("inf") if isinstance(combiner, arith.MaximumfOp) else float("inf"))


@handles(linalg.MatmulOp)
def _matmul(tr: Translator, op):
    from tvm import relax

    out_dtype = dtype_of(op.results[0].type)
    a, b = (relax.op.astype(tr.tensor(v), out_dtype) for v in op.inputs)
    _record_generic(tr, "matmul", op)
    _add_init(tr, op, tr.bb.emit(relax.op.matmul(a, b, out_dtype=out_dtype)))


def _record_generic(tr: Translator, kind: str, op) -> None:
    """Note in `tr.choices` that TVM's own schedule (no registered kernel) took `op`."""
    if getattr(tr, "choices", None) is not None:
        from tvm_bridge import kernels

        kernels.record(tr, kind, "generic", None, op)


@handles(linalg.Conv2DNhwc_FhwcOp)
def _conv_nhwc_fhwc(tr: Translator, op):
    from tvm import relax

    out_dtype = dtype_of(op.results[0].type)
    properties = op.properties
    strides = list(int_values(properties["strides"])) if properties.get("strides") is not None else [1, 1]
    dilations = list(int_values(properties["dilations"])) if properties.get("dilations") is not None else [1, 1]
    (x_value, w_value), outputs = inputs_outputs(op)
    flavor = getattr(tr, "dot", None)
    if flavor is not None:
        from tvm_bridge import kernels

        def source():
            # an input padded by a constant: the kernel stages the pad with its input
            padded = tr.env.get(x_value)
            in_pad = padded.spatial() if isinstance(padded, _Pad) else None
            return (padded.source if in_pad is not None else tr.tensor(x_value)), in_pad

        if kernels.emit_conv(tr, op, x_value, w_value, outputs[0], strides, dilations, flavor, source):
            return
    _record_generic(tr, "conv2d", op)
    x = tr.tensor(x_value)
    w = tr.tensor(w_value)
    if dtype_of(x_value.type) != dtype_of(w_value.type):
        # mixed widths (16x8): widen both; same-width int8 operands stay int8 with an int32
        # accumulator (linalg's sign-extending semantics), which TVM compiles 2-3x faster
        x, w = relax.op.astype(x, out_dtype), relax.op.astype(w, out_dtype)
    # HWIO: output channels contiguous, so the schedule's SIMD loop over output
    # channels reads weight vectors (a constant transpose is folded at build time)
    w = relax.op.permute_dims(w, [1, 2, 3, 0])
    conv = relax.op.nn.conv2d(x, w, strides=strides, dilation=dilations, data_layout="NHWC",
                              kernel_layout="HWIO", out_dtype=out_dtype)
    _add_init(tr, op, tr.bb.emit(conv))


@handles(linalg.TransposeOp)
def _transpose(tr: Translator, op):
    from tvm import relax

    perm = list(op.permutation.get_values())
    tr.env[op.results[0]] = tr.bb.emit(relax.op.permute_dims(tr.tensor(op.inputs[0]), perm))


def _reshape(tr: Translator, op):
    from tvm import relax

    shape = list(op.results[0].type.get_shape())
    tr.env[op.results[0]] = tr.bb.emit(relax.op.reshape(tr.tensor(op.operands[0]), shape))


for _name in ("CollapseShapeOp", "ExpandShapeOp", "ReshapeOp"):
    if hasattr(tensor, _name):
        _OP_HANDLERS[getattr(tensor, _name)] = _reshape


def _static(what: str, op) -> list[int]:
    """The static values of `op`'s property `what` (static_low, static_offsets, ...); an op
    with dynamic ones (their operand segment, named `what` without its "static_") is refused."""
    vals = list(int_values(op.properties[what]))
    dynamic = what.split("_", 1)[1]
    if any(v < -(1 << 62) for v in vals) or operand_segment(op, dynamic):
        raise TranslationError(f"{op.name} with dynamic {dynamic} is not supported")
    return vals


@handles(tensor.ExtractSliceOp)
def _extract_slice(tr: Translator, op):
    from tvm import relax

    offsets = _static("static_offsets", op)
    sizes = _static("static_sizes", op)
    strides = _static("static_strides", op)
    axes = list(range(len(offsets)))
    ends = [o + (n - 1) * s + 1 for o, n, s in zip(offsets, sizes, strides)]
    sliced = tr.bb.emit(relax.op.strided_slice(tr.tensor(op.source), axes, offsets, ends, strides))
    shape = list(op.results[0].type.get_shape())
    if shape != sizes:  # rank-reducing slice
        sliced = tr.bb.emit(relax.op.reshape(sliced, shape))
    tr.env[op.results[0]] = sliced


@handles(tensor.InsertSliceOp)
def _insert_slice(tr: Translator, op):
    from tvm import te, tirx

    offsets = _static("static_offsets", op)
    sizes = _static("static_sizes", op)
    strides = _static("static_strides", op)
    shape = list(op.results[0].type.get_shape())
    src_shape = list(op.source.type.get_shape())
    if src_shape != sizes:
        raise TranslationError("rank-reducing tensor.insert_slice is not supported")

    def fte(src, dst):
        def body(*i):
            inside = None
            src_idx = []
            for d, (o, n, st) in enumerate(zip(offsets, sizes, strides)):
                rel = i[d] - o
                cond = tirx.all(rel >= 0, rel < n * st, tirx.floormod(rel, st) == 0)
                inside = cond if inside is None else tirx.all(inside, cond)
                src_idx.append(tirx.floordiv(rel, st))
            clamped = [tirx.max(tirx.min(v, n - 1), 0) for v, n in zip(src_idx, sizes)]
            return tirx.Select(inside, src(*clamped), dst(*i))

        return te.compute(shape, body, name="insert_slice")

    key = ("insert_slice", op.source.type, op.dest.type, tuple(offsets), tuple(sizes), tuple(strides))
    tr.env[op.results[0]] = tr.emit_te(key, fte, tr.tensor(op.source), tr.tensor(op.dest))


@handles(tensor.ConcatOp)
def _concat(tr: Translator, op):
    from tvm import relax

    axis = op.dim.value.data
    tr.env[op.results[0]] = tr.bb.emit(relax.op.concat([tr.tensor(v) for v in op.inputs], axis=axis))


@handles(tensor.PadOp)
def _pad(tr: Translator, op):
    low = _static("static_low", op)
    high = _static("static_high", op)
    yielded = op.regions[0].block.last_op._operands[0]
    owner = yielded.owner
    if isinstance(owner, arith.ConstantOp):
        pad_value = scalar_constant(owner)[0]
    elif yielded in tr.env and isinstance(tr.env[yielded], tuple):
        pad_value = tr.env[yielded][0]
    else:
        raise TranslationError("tensor.pad with a non-constant padding value is not supported")
    result = op.results[0]
    source_value = op._operands[0]  # `source`, the first operand definition (a single one)
    shape = list(shape_of(result._type))
    src_shape = list(shape_of(source_value._type))
    dtype = dtype_of(result._type)

    def fte(src):
        from tvm import te, tirx

        def body(*i):
            inside = None
            for d in range(len(shape)):
                cond = tirx.all(i[d] >= low[d], i[d] < low[d] + src_shape[d])
                inside = cond if inside is None else tirx.all(inside, cond)
            idx = [tirx.max(tirx.min(i[d] - low[d], src_shape[d] - 1), 0) for d in range(len(shape))]
            # if_then_else, as topi.nn.pad: TVM's simplifier drops the clamp under the condition, and a
            # Select evaluates both sides, so a vectorized consumer the pad is inlined into (a
            # strided_slice) loads past the end of its source unconditionally, and the pad rows came
            # out as garbage (tests/tvm_bridge/test_onnx_float_tvm.py::test_conv_then_depthwise_padded_bottom_row)
            return tirx.if_then_else(inside, src(*idx), tirx.const(pad_value, dtype))

        return te.compute(shape, body, name="pad")

    key = ("pad", source_value._type, result._type, tuple(low), tuple(high), _scalar_key(pad_value))
    source = tr.tensor(source_value)
    tr.env[result] = _Pad(source, low, high, pad_value, lambda: tr.emit_te(key, fte, source))


def _named_elementwise(combine):
    def handler(tr: Translator, op):
        from tvm import te

        shape = list(op.results[0].type.get_shape())
        ins = [tr.tensor(v) for v in op.inputs]

        def fte(*tensors):
            return te.compute(shape, lambda *i: combine(*[t(*i) for t in tensors]), name=op.name.replace(".", "_"))

        key = ("named", type(op), tuple(v.type for v in op.inputs), op.results[0].type)
        tr.env[op.results[0]] = tr.emit_te(key, fte, *ins)

    return handler


def _register_named_elementwise():
    from tvm import tirx

    for name, combine in [
        ("AddOp", lambda a, b: a + b),
        ("SubOp", lambda a, b: a - b),
        ("MulOp", lambda a, b: a * b),
        ("MaxOp", lambda a, b: tirx.max(a, b)),
        ("MinOp", lambda a, b: tirx.min(a, b)),
        ("CopyOp", lambda a: a),
    ]:
        if hasattr(linalg, name):
            _OP_HANDLERS[getattr(linalg, name)] = _named_elementwise(combine)


@cyclic_gc.paused()
def translate(module: ModuleOp, entry: str | None = None, dot=None, choices: list | None = None):
    """(tvm IRModule with Relax `main`, number of outputs).

    `dot` (a `tvm_bridge.vnni.Flavor`, or None for the generic path): int8 convolutions
    with constant weights use the dot-product kernel of tvm_bridge/vnni.py on that
    instruction (only for a target that has it: compile_module picks
    `kernels.target_flavor(target)`); the registry tvm_bridge/kernels.py says which kernel
    takes which op.  `choices`, if given, receives one (op kind, kernel, instruction
    family) per convolution, matmul and registered-kernel op, in translation order."""
    if linalg.AddOp not in _OP_HANDLERS:
        _register_named_elementwise()
    tr = Translator(module)
    tr.dot = dot
    tr.choices = choices
    _arenas.current = None  # this module's constants share buffers with no other's
    try:
        return tr.translate(entry)
    finally:
        _arenas.current = None


def tvm_constant_type():
    import tvm

    return tvm.ir.expr.Constant
