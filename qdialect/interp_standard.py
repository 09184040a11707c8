"""Interpreter handlers for the upstream ops of layer L3: arith, linalg, tensor.

Registered into `qdialect.interpreter._HANDLERS` on import.  Everything is
whole-array numpy:

- `arith` ops work on arrays (a scalar is a 0-d array); integer values live
  in the numpy container of their width, so wrapping is numpy's, and the
  signless ops that read bits as unsigned (`extui`, `shrui`, `cmpi ult`, ...)
  view them as unsigned.
- `linalg.generic` is evaluated from its indexing maps: each operand becomes a
  strided numpy view over the iteration space (an affine map with constant
  non-negative coefficients is a stride pattern), the body's ops run on those
  arrays, reductions are numpy reductions (`a * b` summed is an `einsum` of the
  two operands' views, never a materialised iteration space).  Values captured
  from outside the body must be constants (tables read with `tensor.extract`).
- Named linalg ops and tensor ops map to the numpy operation they denote.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided
from xdsl.dialects import arith, tensor
from xdsl.dialects import math as math_dialect
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    TensorType,
)
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineConstantExpr, AffineDimExpr
from xdsl.traits import ConstantLike

from qdialect.interpreter import InterpreterError, handles

# ----- types -----------------------------------------------------------------------------------


def element_dtype(t) -> np.dtype:
    """numpy dtype of an MLIR element (or shaped) type."""
    if isinstance(t, TensorType):
        t = t.element_type
    if isinstance(t, IntegerType):
        w = t.width.data
        if w == 1:
            return np.dtype(np.bool_)
        return np.dtype(f"int{8 if w <= 8 else 16 if w <= 16 else 32 if w <= 32 else 64}")
    if isinstance(t, IndexType):
        return np.dtype(np.int64)
    if isinstance(t, Float32Type):
        return np.dtype(np.float32)
    if isinstance(t, Float64Type):
        return np.dtype(np.float64)
    if isinstance(t, Float16Type):
        return np.dtype(np.float16)
    raise InterpreterError(f"element type {t} is not supported by the interpreter")


def _unsigned(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype == np.bool_:
        return a
    return a.view(np.dtype(f"uint{a.dtype.itemsize * 8}"))


def _result(op: Operation, value, i: int = 0) -> np.ndarray:
    return np.asarray(value).astype(element_dtype(op.results[i].type), copy=False)


# ----- arith -----------------------------------------------------------------------------------


def _same(fn):
    def handler(it, op, args):
        with np.errstate(all="ignore"):
            return _result(op, fn(*args))

    return handler


def _trunc_div(a, b):
    a = np.asarray(a).astype(np.int64)
    b = np.asarray(b).astype(np.int64)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def _trunc_rem(a, b):
    a64 = np.asarray(a).astype(np.int64)
    return a64 - _trunc_div(a, b) * np.asarray(b).astype(np.int64)


def _shift_amount(b):
    return np.asarray(b).astype(np.int64)


for _cls, _fn in [
    (arith.AddiOp, np.add),
    (arith.SubiOp, np.subtract),
    (arith.MuliOp, np.multiply),
    (arith.AndIOp, np.bitwise_and),
    (arith.OrIOp, np.bitwise_or),
    (arith.XOrIOp, np.bitwise_xor),
    (arith.MaxSIOp, np.maximum),
    (arith.MinSIOp, np.minimum),
    (arith.DivSIOp, _trunc_div),
    (arith.RemSIOp, _trunc_rem),
    (arith.FloorDivSIOp, lambda a, b: np.floor_divide(a, b)),
    (arith.AddfOp, np.add),
    (arith.SubfOp, np.subtract),
    (arith.MulfOp, np.multiply),
    (arith.DivfOp, np.divide),
    (arith.MaximumfOp, np.maximum),
    (arith.MinimumfOp, np.minimum),
    (arith.MaxnumfOp, np.fmax),
    (arith.MinnumfOp, np.fmin),
    (arith.NegfOp, np.negative),
]:
    handles(_cls)(_same(_fn))


@handles(arith.ShLIOp)
def _shli(it, op, args):
    a, b = args
    with np.errstate(all="ignore"):
        return _result(op, np.left_shift(_unsigned(a), _shift_amount(b).astype(_unsigned(a).dtype)).view(a.dtype))


@handles(arith.ShRSIOp)
def _shrsi(it, op, args):
    a, b = args
    return _result(op, np.right_shift(a, _shift_amount(b).astype(a.dtype)))


@handles(arith.ShRUIOp)
def _shrui(it, op, args):
    a, b = args
    ua = _unsigned(a)
    return _result(op, np.right_shift(ua, _shift_amount(b).astype(ua.dtype)).view(np.asarray(a).dtype))


def _unsigned_binary(fn):
    def handler(it, op, args):
        a, b = args
        return _result(op, fn(_unsigned(a), _unsigned(b)).view(np.asarray(a).dtype))

    return handler


handles(arith.MaxUIOp)(_unsigned_binary(np.maximum))
handles(arith.MinUIOp)(_unsigned_binary(np.minimum))
handles(arith.DivUIOp)(_unsigned_binary(np.floor_divide))
handles(arith.RemUIOp)(_unsigned_binary(np.remainder))

_CMPI = {
    0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal, 4: np.greater, 5: np.greater_equal,
}


@handles(arith.CmpiOp)
def _cmpi(it, op, args):
    a, b = args
    p = op.predicate.value.data
    if p <= 5:
        return _CMPI[p](a, b)
    return {6: np.less, 7: np.less_equal, 8: np.greater, 9: np.greater_equal}[p](_unsigned(a), _unsigned(b))


@handles(arith.CmpfOp)
def _cmpf(it, op, args):
    a, b = args
    p = op.predicate.value.data
    unordered = np.isnan(a) | np.isnan(b)
    base = {
        1: np.equal, 2: np.greater, 3: np.greater_equal, 4: np.less, 5: np.less_equal, 6: np.not_equal,
        8: np.equal, 9: np.greater, 10: np.greater_equal, 11: np.less, 12: np.less_equal, 13: np.not_equal,
    }
    if p == 0:
        return np.zeros(np.broadcast(a, b).shape, dtype=np.bool_)
    if p == 15:
        return np.ones(np.broadcast(a, b).shape, dtype=np.bool_)
    if p == 7:
        return ~unordered
    if p == 14:
        return unordered
    with np.errstate(invalid="ignore"):
        r = base[p](a, b)
    return (r & ~unordered) if p <= 6 else (r | unordered)


@handles(arith.SelectOp)
def _select(it, op, args):
    return _result(op, np.where(*args))


def _convert(fn=lambda a: a):
    def handler(it, op, args):
        with np.errstate(all="ignore"):
            return _result(op, fn(np.asarray(args[0])))

    return handler


handles(arith.ExtSIOp, arith.TruncIOp, arith.SIToFPOp, arith.ExtFOp, arith.TruncFOp, arith.IndexCastOp)(_convert())
handles(arith.ExtUIOp, arith.UIToFPOp)(_convert(_unsigned))


@handles(arith.FPToSIOp)
def _fptosi(it, op, args):
    with np.errstate(all="ignore"):
        return _result(op, np.trunc(np.asarray(args[0])).astype(np.int64))


@handles(math_dialect.FmaOp)
def _fma(it, op, args):
    """float32 fused multiply-add, one rounding (ORT's float kernels' FMA approximations)."""
    from qdialect.reference.onnxruntime_kernels import _fma_f32

    if element_dtype(op.results[0].type) != np.float32:
        raise InterpreterError("math.fma: only float32")
    return _result(op, _fma_f32(*args))


@handles(math_dialect.CountLeadingZerosOp)
def _ctlz(it, op, args):
    """Leading zero bits of the integer read as unsigned (its width for 0)."""
    a = np.asarray(args[0])
    width = op.results[0].type.width.data
    u = _unsigned(a).astype(np.uint64) & np.uint64((1 << width) - 1)
    # bit length by float64's exponent is exact below 2^53; above it, count in two halves
    hi, lo = (u >> np.uint64(32)).astype(np.int64), (u & np.uint64(0xFFFFFFFF)).astype(np.int64)
    length = np.where(hi > 0, 32 + _bit_length32(hi), _bit_length32(lo))
    return _result(op, (width - length).astype(a.dtype))


def _bit_length32(v: np.ndarray) -> np.ndarray:
    """Bit lengths of non-negative int64 values below 2^32 (0 for 0)."""
    _, exponent = np.frexp(v.astype(np.float64))
    return np.where(v > 0, exponent, 0).astype(np.int64)


@handles(arith.BitcastOp)
def _bitcast(it, op, args):
    return np.asarray(args[0]).view(element_dtype(op.results[0].type))


# ----- constants captured by regions -------------------------------------------------------------


def _captured(it, value: SSAValue) -> np.ndarray:
    """The value of a constant defined outside a region (tables, pad values)."""
    owner = value.owner
    if not isinstance(owner, Operation) or owner.operands or not owner.has_trait(ConstantLike):
        raise InterpreterError(f"a region reads {value.owner.name if isinstance(owner, Operation) else 'an argument'} "
                               "defined outside it; only constants may be captured")
    cache = it.__dict__.setdefault("_captured_constants", {})
    key = id(owner)
    if key not in cache:
        cache[key] = (owner, it.eval(owner, [])[value.index])
    return cache[key][1]


def _run_ops(it, ops: Sequence[Operation], env: dict, special=None) -> None:
    """Evaluate `ops` in order into `env` (values from outside: captured constants)."""
    for op in ops:
        if special is not None and special(op, env):
            continue
        args = [env[v] if v in env else _captured(it, v) for v in op.operands]
        results = it.eval(op, args)
        for r, v in zip(op.results, results):
            env[r] = v


# ----- affine maps as strides --------------------------------------------------------------------


def _linear(expr) -> tuple[dict[int, int], int]:
    """An affine expression as ({dim: coefficient}, constant); ValueError if not linear."""
    if isinstance(expr, AffineDimExpr):
        return {expr.position: 1}, 0
    if isinstance(expr, AffineConstantExpr):
        return {}, expr.value
    if isinstance(expr, AffineBinaryOpExpr):
        lc, lk = _linear(expr.lhs)
        rc, rk = _linear(expr.rhs)
        if expr.kind == AffineBinaryOpKind.Add:
            out = dict(lc)
            for d, c in rc.items():
                out[d] = out.get(d, 0) + c
            return out, lk + rk
        if expr.kind == AffineBinaryOpKind.Mul:
            if not lc:
                return {d: lk * c for d, c in rc.items()}, lk * rk
            if not rc:
                return {d: rk * c for d, c in lc.items()}, lk * rk
    raise ValueError(f"affine expression {expr} is not a linear combination of dims")


def strided_view(array: np.ndarray, exprs, dims: Sequence[int], extents: Sequence[int]) -> np.ndarray:
    """A view of `array` indexed by loop dims `dims`: view[i_dims] = array[exprs(i)]."""
    array = np.ascontiguousarray(array)
    strides = [0] * len(dims)
    position = {d: k for k, d in enumerate(dims)}
    offset = 0
    for axis, expr in enumerate(exprs):
        coeffs, const = _linear(expr)
        top = const + sum(c * (extents[d] - 1) for d, c in coeffs.items())
        if const < 0 or any(c < 0 for c in coeffs.values()) or top >= array.shape[axis]:
            raise InterpreterError(f"linalg: indexing map reads outside dimension {axis} of {list(array.shape)}")
        offset += const * array.strides[axis]
        for d, c in coeffs.items():
            strides[position[d]] += c * array.strides[axis]
    flat = array.reshape(-1)
    base = flat[offset // array.itemsize:] if array.size else flat
    return as_strided(base, shape=[extents[d] for d in dims], strides=strides, writeable=False)


def _map_dims(m) -> list[int]:
    seen: list[int] = []
    for e in m.results:
        for d in _linear(e)[0]:
            if d not in seen:
                seen.append(d)
    return sorted(seen)


# ----- linalg.generic ----------------------------------------------------------------------------

_REDUCERS = {
    arith.AddiOp: (np.add.reduce, np.add),
    arith.AddfOp: (np.add.reduce, np.add),
    arith.MaxSIOp: (np.maximum.reduce, np.maximum),
    arith.MinSIOp: (np.minimum.reduce, np.minimum),
    arith.MaximumfOp: (np.maximum.reduce, np.maximum),
    arith.MinimumfOp: (np.minimum.reduce, np.minimum),
}


class _Generic:
    """One evaluation of a linalg.generic on numpy operands."""

    def __init__(self, it, op: linalg.GenericOp, args: list[np.ndarray]):
        self.it, self.op = it, op
        self.maps = [m.data for m in op.indexing_maps.data]
        self.iters = ["reduction" in str(t.data) for t in op.iterator_types.data]
        self.n_in = len(op.inputs)
        self.args = [np.asarray(a) for a in args]
        self.block: Block = op.body.block
        n = len(self.iters)
        self.extents: list[int | None] = [None] * n
        for a, m in zip(self.args, self.maps):
            for axis, e in enumerate(m.results):
                if isinstance(e, AffineDimExpr) and self.extents[e.position] is None:
                    self.extents[e.position] = a.shape[axis]
        if any(e is None for e in self.extents):
            raise InterpreterError("linalg.generic: a loop extent cannot be derived from the operand shapes")
        self.all_dims = list(range(n))
        self.deps = self._dependencies()

    # which block arguments (and linalg.index) each body value depends on
    def _dependencies(self) -> dict[SSAValue, frozenset]:
        deps: dict[SSAValue, frozenset] = {}
        for k, arg in enumerate(self.block.args):
            deps[arg] = frozenset([k])
        for bop in self.block.ops:
            d = frozenset(["index"]) if isinstance(bop, linalg.IndexOp) else frozenset()
            for v in bop.operands:
                d = d | deps.get(v, frozenset())
            for r in bop.results:
                deps[r] = d
        return deps

    def _slice(self, targets: Sequence[SSAValue]) -> list[Operation]:
        """Body ops needed for `targets`, in block order."""
        needed: set[int] = set()
        stack = [t for t in targets]
        while stack:
            v = stack.pop()
            owner = v.owner
            if isinstance(owner, Operation) and owner.parent_block() is self.block and id(owner) not in needed:
                needed.add(id(owner))
                stack.extend(owner.operands)
        return [o for o in self.block.ops if id(o) in needed and not isinstance(o, linalg.YieldOp)]

    def _index_special(self, dims: Sequence[int]):
        def special(bop, env):
            if isinstance(bop, linalg.IndexOp):
                d = bop.dim.value.data
                shape = [1] * len(dims)
                shape[dims.index(d)] = self.extents[d]
                env[bop.results[0]] = np.arange(self.extents[d], dtype=np.int64).reshape(shape)
                return True
            return False

        return special

    def evaluate(self, targets, bindings: dict, dims: Sequence[int]) -> list[np.ndarray]:
        env = dict(bindings)
        with np.errstate(all="ignore"):
            _run_ops(self.it, self._slice(targets), env, self._index_special(dims))
        return [env[t] if t in env else _captured(self.it, t) for t in targets]

    def view(self, k: int, dims: Sequence[int], array: np.ndarray | None = None) -> np.ndarray:
        a = self.args[k] if array is None else array
        return strided_view(a, self.maps[k].results, dims, self.extents)

    def run(self) -> list[np.ndarray]:
        yield_op = self.block.last_op
        outs = []
        for j, y in enumerate(yield_op.operands):
            out_k = self.n_in + j
            out_dims = [e.position for e in self.maps[out_k].results]
            if not any(self.iters):
                outs.append(self._parallel(y, out_dims))
            else:
                outs.append(self._reduction(y, out_k, out_dims))
        return [_result(self.op, o, j) for j, o in enumerate(outs)]

    def _full_bindings(self, needed: frozenset) -> dict:
        dims = self.all_dims
        return {self.block.args[k]: self.view(k, dims) for k in needed if isinstance(k, int)}

    def _parallel(self, y: SSAValue, out_dims: list[int]) -> np.ndarray:
        value = self.evaluate([y], self._full_bindings(self.deps.get(y, frozenset())), self.all_dims)[0]
        value = np.broadcast_to(value, [self.extents[d] for d in self.all_dims])
        return np.transpose(value, out_dims)

    def _single_input(self, v: SSAValue) -> int | None:
        ks = [k for k in self.deps.get(v, frozenset()) if k != "index"]
        if "index" in self.deps.get(v, frozenset()) or len(ks) != 1 or ks[0] >= self.n_in:
            return None
        return ks[0]

    def _elementwise_on(self, v: SSAValue, k: int) -> np.ndarray:
        """v computed on input k's own array (elementwise body ops only)."""
        return np.asarray(self.evaluate([v], {self.block.args[k]: self.args[k]}, [])[0])

    def _fma_chain(self, fma: Operation, out_k: int, out_dims: list[int]) -> np.ndarray:
        """`acc = fma(a, b, acc)` over the reduction loops in their order (row-major), one
        float32 rounding per step (ONNX Runtime's MLAS accumulators)."""
        from qdialect.reference.onnxruntime_kernels import _fma_f32

        a_v, b_v = fma.operands[0], fma.operands[1]
        if any(out_k in self.deps.get(v, frozenset()) for v in (a_v, b_v)):
            raise InterpreterError("linalg.generic: a math.fma chain's factors must not read the accumulator")
        needed = self.deps.get(a_v, frozenset()) | self.deps.get(b_v, frozenset())
        a, b = self.evaluate([a_v, b_v], self._full_bindings(needed), self.all_dims)
        full = [self.extents[d] for d in self.all_dims]
        par = [d for d in self.all_dims if d in out_dims]
        red = [d for d in self.all_dims if d not in out_dims]
        order = [self.all_dims.index(d) for d in par + red]
        n_red = math.prod(self.extents[d] for d in red)
        a = np.transpose(np.broadcast_to(np.asarray(a, np.float32), full), order).reshape(
            [self.extents[d] for d in par] + [n_red])
        b = np.transpose(np.broadcast_to(np.asarray(b, np.float32), full), order).reshape(
            [self.extents[d] for d in par] + [n_red])
        init = np.asarray(self.args[out_k])
        acc = np.transpose(init, [out_dims.index(d) for d in par]).astype(np.float32)
        for r in range(n_red):
            acc = _fma_f32(a[..., r], b[..., r], acc)
        return np.transpose(acc, [par.index(d) for d in out_dims])

    def _reduction(self, y: SSAValue, out_k: int, out_dims: list[int]) -> np.ndarray:
        out_arg = self.block.args[out_k]
        combiner = y.owner
        if isinstance(combiner, Operation) and combiner.name == "math.fma" and combiner.operands[2] is out_arg:
            return self._fma_chain(combiner, out_k, out_dims)
        if not isinstance(combiner, Operation) or type(combiner) not in _REDUCERS or out_arg not in combiner.operands:
            raise InterpreterError("linalg.generic: a reduction must yield combine(accumulator, value)")
        term = [v for v in combiner.operands if v is not out_arg]
        if len(term) != 1 or out_k in self.deps.get(term[0], frozenset()):
            raise InterpreterError("linalg.generic: the reduced value must not read the accumulator")
        term = term[0]
        reduce_fn, combine_fn = _REDUCERS[type(combiner)]
        init = np.asarray(self.args[out_k])
        letters = string.ascii_letters
        out_sub = "".join(letters[d] for d in out_dims)
        reduced = None
        t_owner = term.owner
        if (
            isinstance(combiner, arith.AddiOp)
            and isinstance(t_owner, arith.MuliOp)
            and (ka := self._single_input(t_owner.operands[0])) is not None
            and (kb := self._single_input(t_owner.operands[1])) is not None
            and ka != kb
        ):
            # sum of products of two operands: einsum over their strided views
            parts, subs = [], []
            for v, k in ((t_owner.operands[0], ka), (t_owner.operands[1], kb)):
                dims = _map_dims(self.maps[k])
                arr = self._elementwise_on(v, k).astype(np.int64)
                parts.append(self.view(k, dims, np.broadcast_to(arr, self.args[k].shape)))
                subs.append("".join(letters[d] for d in dims))
            reduced = np.einsum(f"{subs[0]},{subs[1]}->{out_sub}", *parts)
        elif (k := self._single_input(term)) is not None:
            dims = _map_dims(self.maps[k])
            arr = np.broadcast_to(self._elementwise_on(term, k), self.args[k].shape)
            v = self.view(k, dims, arr)
            if isinstance(combiner, arith.AddiOp):
                v = v.astype(np.int64)
            axes = tuple(i for i, d in enumerate(dims) if d not in out_dims)
            r = reduce_fn(v, axis=axes) if axes else np.asarray(v)
            kept = [d for d in dims if d in out_dims]
            shape = [self.extents[d] if d in kept else 1 for d in out_dims]
            order = [kept.index(d) for d in out_dims if d in kept]
            reduced = np.broadcast_to(np.transpose(r, order).reshape(shape), [self.extents[d] for d in out_dims])
        if reduced is None:
            value = self.evaluate([term], self._full_bindings(self.deps.get(term, frozenset())), self.all_dims)[0]
            value = np.broadcast_to(value, [self.extents[d] for d in self.all_dims])
            if isinstance(combiner, arith.AddiOp):
                value = value.astype(np.int64)
            axes = tuple(d for d in self.all_dims if d not in out_dims)
            r = reduce_fn(value, axis=axes)
            kept = [d for d in self.all_dims if d in out_dims]
            reduced = np.transpose(r, [kept.index(d) for d in out_dims])
        with np.errstate(all="ignore"):
            return combine_fn(init, np.asarray(reduced).astype(init.dtype))


@handles(linalg.GenericOp)
def _generic(it, op, args):
    return _Generic(it, op, args).run()


@handles(linalg.YieldOp)
def _yield(it, op, args):
    raise InterpreterError("linalg.yield outside a linalg.generic body")


# ----- named linalg ops --------------------------------------------------------------------------


def _ints(attr) -> list[int]:
    if isinstance(attr, DenseArrayBase):
        return list(attr.get_values())
    if isinstance(attr, DenseIntOrFPElementsAttr):
        return [int(v) for v in attr.get_values()]
    return [int(v) for v in attr]


@handles(linalg.FillOp)
def _fill(it, op, args):
    value, init = args
    return np.full(np.shape(init), value, dtype=element_dtype(op.results[0].type))


@handles(linalg.CopyOp)
def _copy(it, op, args):
    return _result(op, np.broadcast_to(args[0], np.shape(args[1])))


@handles(linalg.TransposeOp)
def _transpose(it, op, args):
    return np.ascontiguousarray(np.transpose(args[0], _ints(op.permutation)))


@handles(linalg.BroadcastOp)
def _broadcast(it, op, args):
    x, init = args
    dims = _ints(op.dimensions)
    shape = list(np.shape(init))
    expanded = np.expand_dims(x, tuple(dims))
    return _result(op, np.broadcast_to(expanded, shape))


def _matmul_inputs(op, args, zero_points=(0, 0)):
    out_dtype = element_dtype(op.results[0].type)
    a = np.asarray(args[0]).astype(np.int64 if out_dtype.kind in "iu" else out_dtype)
    b = np.asarray(args[1]).astype(a.dtype)
    return a - zero_points[0], b - zero_points[1], out_dtype


@handles(linalg.MatmulOp)
def _matmul(it, op, args):
    a, b, dtype = _matmul_inputs(op, args)
    init = args[-1]
    with np.errstate(all="ignore"):
        return (a @ b + init.astype(a.dtype)).astype(dtype)


@handles(linalg.QuantizedMatmulOp)
def _quantized_matmul(it, op, args):
    azp, bzp = int(np.asarray(args[2])), int(np.asarray(args[3]))
    a, b, dtype = _matmul_inputs(op, args, (azp, bzp))
    with np.errstate(all="ignore"):
        return (a @ b + np.asarray(args[-1]).astype(np.int64)).astype(dtype)


@handles(linalg.Conv2DNhwc_FhwcOp)
def _conv_nhwc_fhwc(it, op, args):
    x, w, init = args
    strides = _ints(op.strides) if getattr(op, "strides", None) is not None else [1, 1]
    dilations = _ints(op.dilations) if getattr(op, "dilations", None) is not None else [1, 1]
    n, oh, ow, f = np.shape(init)
    _, kh, kw, c = np.shape(w)
    dtype = element_dtype(op.results[0].type)
    xs = np.ascontiguousarray(np.asarray(x).astype(np.int64))
    s = xs.strides
    view = as_strided(xs, shape=(n, oh, ow, kh, kw, c),
                      strides=(s[0], s[1] * strides[0], s[2] * strides[1], s[1] * dilations[0], s[2] * dilations[1], s[3]),
                      writeable=False)
    acc = np.einsum("nhwyxc,fyxc->nhwf", view, np.asarray(w).astype(np.int64))
    with np.errstate(all="ignore"):
        return (acc + np.asarray(init).astype(np.int64)).astype(dtype)


# ----- tensor ------------------------------------------------------------------------------------


@handles(tensor.EmptyOp)
def _empty(it, op, args):
    t = op.results[0].type
    return np.zeros(t.get_shape(), dtype=element_dtype(t))


@handles(tensor.CollapseShapeOp, tensor.ExpandShapeOp, tensor.ReshapeOp, tensor.CastOp)
def _reshape(it, op, args):
    return np.reshape(args[0], op.results[0].type.get_shape())


@handles(tensor.ConcatOp)
def _concat(it, op, args):
    return np.concatenate(args, axis=op.dim.value.data)


def _static(op, name: str) -> list[int]:
    values = list(getattr(op, f"static_{name}").get_values())
    if any(v < -(1 << 62) for v in values) or list(getattr(op, name)):
        raise InterpreterError(f"{op.name}: dynamic {name} are not supported")
    return values


@handles(tensor.ExtractSliceOp)
def _extract_slice(it, op, args):
    offsets, sizes, strides = (_static(op, k) for k in ("offsets", "sizes", "strides"))
    index = tuple(slice(o, o + (s - 1) * st + 1, st) for o, s, st in zip(offsets, sizes, strides))
    return np.ascontiguousarray(np.asarray(args[0])[index]).reshape(op.results[0].type.get_shape())


@handles(tensor.InsertSliceOp)
def _insert_slice(it, op, args):
    offsets, sizes, strides = (_static(op, k) for k in ("offsets", "sizes", "strides"))
    dest = np.array(args[1], copy=True)
    index = tuple(slice(o, o + (s - 1) * st + 1, st) for o, s, st in zip(offsets, sizes, strides))
    dest[index] = np.reshape(args[0], dest[index].shape)
    return dest


@handles(tensor.ExtractOp)
def _extract(it, op, args):
    table, *indices = args
    return np.asarray(table)[tuple(np.asarray(i).astype(np.int64) for i in indices)]


@handles(tensor.SplatOp)
def _splat(it, op, args):
    t = op.results[0].type
    return np.full(t.get_shape(), args[0], dtype=element_dtype(t))


@handles(tensor.PadOp)
def _pad(it, op, args):
    if list(op.low) or list(op.high):
        raise InterpreterError("tensor.pad: dynamic padding is not supported")
    low, high = list(op.static_low.get_values()), list(op.static_high.get_values())
    padded = [d + lo + hi for d, lo, hi in zip(np.shape(args[0]), low, high)]
    if len(low) != np.ndim(args[0]) or len(high) != np.ndim(args[0]) or padded != list(op.results[0].type.get_shape()):
        raise InterpreterError(f"tensor.pad: low {low} and high {high} padding of {list(np.shape(args[0]))} "
                               f"do not give the result shape {list(op.results[0].type.get_shape())}")
    block = op.region.block
    yielded = block.last_op.operands[0]
    if isinstance(yielded, BlockArgument) and yielded.block is block:
        raise InterpreterError("tensor.pad: the padding value must not depend on the position")
    env: dict = {}
    _run_ops(it, [o for o in block.ops if o is not block.last_op], env)
    value = env[yielded] if yielded in env else _captured(it, yielded)
    return np.pad(np.asarray(args[0]), list(zip(low, high)), constant_values=np.asarray(value).item())

