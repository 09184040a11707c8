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

import math
import threading
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import arith, func, tensor
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineConstantExpr, AffineDimExpr

from qdialect import cyclic_gc
from qdialect.dialects.quant import is_subclass


class TranslationError(Exception):
    """An L3 construct the bridge cannot translate; the message names the op."""


_DTYPES: dict[int, tuple] = {}  # id(type) -> (type, dtype string): see dtype_of


def dtype_of(t) -> str:
    """Relax/TIR dtype string of an MLIR element (or tensor) type.

    Remembered per type object (by identity, the object kept alive with its entry: an
    xDSL attribute's hash rehashes its whole tree, and the isinstance checks go through
    ABCMeta); the translation asks it about ten thousand times per hundred blocks, of a
    few types."""
    hit = _DTYPES.get(id(t))
    if hit is not None and hit[0] is t:
        return hit[1]
    d = _dtype_of(t)
    if len(_DTYPES) >= 4096:  # bounded across the models of a long-lived process
        _DTYPES.clear()
    _DTYPES[id(t)] = (t, d)
    return d


_SHAPES: dict[int, tuple] = {}  # id(tensor type) -> (type, shape): see shape_of
_VALUES: dict[int, tuple] = {}  # id(dense attribute) -> (attribute, values): see int_values


def shape_of(t: TensorType) -> tuple[int, ...]:
    """`t.get_shape()`, remembered per type object as `dtype_of` is (xDSL builds the tuple
    from the dimension attributes on every call; the types are frozen)."""
    hit = _SHAPES.get(id(t))
    if hit is not None and hit[0] is t:
        return hit[1]
    shape = t.get_shape()
    if len(_SHAPES) >= 4096:
        _SHAPES.clear()
    _SHAPES[id(t)] = (t, shape)
    return shape


def int_values(attr) -> tuple:
    """`tuple(attr.get_values())` of a dense array or small dense elements attribute
    (strides, pads, slice bounds, operand segment sizes), remembered per attribute object
    (xDSL unpacks the bytes on every call; the attributes are frozen)."""
    hit = _VALUES.get(id(attr))
    if hit is not None and hit[0] is attr:
        return hit[1]
    values = tuple(attr.get_values())
    if len(_VALUES) >= 4096:
        _VALUES.clear()
    _VALUES[id(attr)] = (attr, values)
    return values


_SEGMENT_INDEX: dict[tuple[type, str], int] = {}  # (op class, operand name) -> its segment


def operand_segment(op: Operation, name: str) -> tuple:
    """The operands of `op`'s operand definition `name` (`op.<name>`, as a tuple), for an op
    with `operandSegmentSizes`: the sizes decoded once per attribute (`int_values`) instead
    of by xDSL's accessor on every access."""
    cls = type(op)
    index = _SEGMENT_INDEX.get((cls, name))
    if index is None:
        names = [n for n, _ in cls.get_irdl_definition().operands]
        index = _SEGMENT_INDEX[(cls, name)] = names.index(name)
    sizes = int_values(op.properties["operandSegmentSizes"])
    start = sum(sizes[:index])
    return tuple(op._operands)[start:start + sizes[index]]


def inputs_outputs(op: Operation) -> tuple[tuple, tuple]:
    """`(op.inputs, op.outputs)` of a linalg op, as tuples (see `operand_segment`)."""
    sizes = op.properties.get("operandSegmentSizes")
    if sizes is None:
        return tuple(op.inputs), tuple(op.outputs)
    n_in, n_out = int_values(sizes)
    operands = tuple(op._operands)
    return operands[:n_in], operands[n_in:n_in + n_out]


def _dtype_of(t) -> str:
    if isinstance(t, TensorType):
        t = t.element_type
    if isinstance(t, IntegerType):
        w = t.width.data
        if 1 < w < 8:
            return "int8"  # sub-byte integers (int4 weights) live sign-extended in int8
        return "bool" if w == 1 else f"int{w}"
    if isinstance(t, IndexType):
        return "int64"
    if isinstance(t, Float32Type):
        return "float32"
    if isinstance(t, Float64Type):
        return "float64"
    if isinstance(t, Float16Type):
        return "float16"
    raise TranslationError(f"element type {t} has no TVM dtype")


_NUMPY_DTYPES = {"bool": np.dtype(np.bool_)}  # dtype string -> numpy dtype
_CONTAINERS: dict[int, np.dtype] = {}  # integer width -> numpy dtype of its stored bytes


def numpy_dtype(t) -> np.dtype:
    d = dtype_of(t)
    hit = _NUMPY_DTYPES.get(d)
    if hit is None:
        hit = _NUMPY_DTYPES[d] = np.dtype(d)
    return hit


def dense_to_numpy(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    t = attr.type
    el = t.element_type
    shape = shape_of(t)
    n = math.prod(shape)  # np.prod's conversions cost more than the product of a few ints
    if is_subclass(type(el), IntegerType):
        w = el.width.data
        container = _CONTAINERS.get(w)
        if container is None:  # the bytes' element: i1 and sub-byte integers are stored as bytes
            container = _CONTAINERS[w] = np.dtype(f"int{max(8, w)}" if w > 1 else "int8")
        raw = np.frombuffer(attr.data.data, dtype=container).astype(numpy_dtype(el))
    else:
        raw = np.frombuffer(attr.data.data, dtype=numpy_dtype(el))
    if raw.size == 1 and n != 1:
        raw = np.broadcast_to(raw, (n,))
    return np.ascontiguousarray(raw.reshape(shape))


def tensor_constant(array: np.ndarray):
    """`relax.const` of a numpy array with its own dtype (TVM's default makes a float64
    array float32).

    The values are copied into a 64-byte aligned numpy buffer (the alignment TVM's kernels
    assume of their arguments) that TVM takes over through DLPack: `relax.const` of the
    numpy array itself builds an empty TVM tensor and copies into it, about 6x the time,
    and a model has several constants per convolution.  The constant node is made by
    `relax.const`'s own registered constructor: `relax.const` around it checks and
    converts its argument for 7 of its 9 us.  (Both functions are looked up once: the
    imports of a package's modules inside a function cost a Python call each time.)"""
    global _make_tensor_const, _from_dlpack
    if array.dtype == np.bool_ or array.size == 0:
        from tvm import relax

        return relax.const(array, "bool" if array.dtype == np.bool_ else str(array.dtype))
    buf = _arena_empty(array.shape, array.dtype)
    buf[...] = array
    if _make_tensor_const is None:
        import tvm
        import tvm_ffi

        _make_tensor_const, _from_dlpack = tvm.get_global_func("relax.MakeTensorConst"), tvm_ffi.from_dlpack
    return _make_tensor_const(_from_dlpack(buf), None, None)


_make_tensor_const = _from_dlpack = None


def call_tir(gvar, args: list, out_type):
    """`relax.call_tir(gvar, args, out_type)` for `args` that are relax expressions already
    (the translation's tensors and constants): the same Call node, made by the registered
    constructors that function reaches after passing every argument through
    `convert_to_expr` (which returns an expression as it is, for about 2 us an argument:
    three quarters of the call's cost with a convolution's six)."""
    global _call_tir, _tuple
    if _call_tir is None:
        import tvm

        _call_tir, _tuple = tvm.get_global_func("relax.op.call_tir"), tvm.get_global_func("ir.Tuple")
    return _call_tir(gvar, _tuple(args, None), out_type if isinstance(out_type, list) else [out_type])


_call_tir = _tuple = None
_ARENA_BYTES = 1 << 18
_arenas = threading.local()


def _arena_empty(shape, dtype: np.dtype) -> np.ndarray:
    """`aligned_empty` for a small constant, carved out of a 256 KiB buffer: a buffer of its
    own costs a constant about 15 us (numpy's allocation and its address read through
    ctypes), a slice of a shared one about 1.  A buffer lives as long as any constant in
    it, so each translation starts buffers of its own (`translate`; each thread its own
    too), and a constant over 16 KiB (a layer's weights) gets a buffer of its own."""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > _ARENA_BYTES // 16:
        return aligned_empty(shape, dtype)
    arena = getattr(_arenas, "current", None)
    if arena is not None:
        raw, address, offset = arena
        start = offset + (-(address + offset) % 64)
        if start + nbytes <= len(raw):
            _arenas.current = (raw, address, start + nbytes)
            return np.ndarray(shape, dtype, raw, start)  # (one call: a slice's view reshaped is three)
    raw = np.empty(_ARENA_BYTES, np.uint8)
    address = raw.ctypes.data
    start = -address % 64
    _arenas.current = (raw, address, start + nbytes)
    return np.ndarray(shape, dtype, raw, start)


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialized numpy array whose data starts on a 64-byte boundary (TVM's
    allocation alignment, which its kernels may assume of their arguments)."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    raw = np.empty(nbytes + 64, np.uint8)
    offset = (-raw.ctypes.data) % 64
    return raw[offset:offset + nbytes].view(dtype).reshape(shape)


def scalar_constant(op: arith.ConstantOp):
    value = op.properties["value"]
    if isinstance(value, IntegerAttr):
        return int(value.value.data), dtype_of(value.type)
    if isinstance(value, FloatAttr):
        return float(value.value.data), dtype_of(value.type)
    raise TranslationError(f"arith.constant {value} is not a scalar")


# ----- scalar arith -> TIR ---------------------------------------------------------------


def _scalar_rules():
    from tvm import tirx
    from tvm.target.codegen import llvm_lookup_intrinsic_id
    from xdsl.dialects import math as math_dialect

    def cast(dtype):
        return lambda op, a: tirx.Cast(dtype, a[0])

    def unsigned_ext(op, a):
        src = dtype_of(op.operands[0].type)
        dst = dtype_of(op.results[0].type)
        width = op.operands[0].type.width.data
        if 1 < width < 8:
            return tirx.bitwise_and(tirx.Cast(dst, a[0]), tirx.const((1 << width) - 1, dst))
        return tirx.Cast(dst, tirx.Cast(src.replace("int", "uint"), a[0]))

    def cmp(op, a):
        pred = op.predicate.value.data
        x, y = a
        return {
            0: lambda: x == y, 1: lambda: x != y, 2: lambda: x < y, 3: lambda: x <= y,
            4: lambda: x > y, 5: lambda: x >= y,
        }[pred]() if pred <= 5 else _unsigned_cmp(pred, x, y, op)

    def _unsigned_cmp(pred, x, y, op):
        u = dtype_of(op.operands[0].type).replace("int", "uint")
        ux, uy = tirx.Cast(u, x), tirx.Cast(u, y)
        return {6: ux < uy, 7: ux <= uy, 8: ux > uy, 9: ux >= uy}[pred]

    def cmpf(op, a):
        pred = op.predicate.value.data
        x, y = a
        table = {1: x == y, 2: x > y, 3: x >= y, 4: x < y, 5: x <= y, 6: x != y,
                 8: x == y, 9: x > y, 10: x >= y, 11: x < y, 12: x <= y, 13: x != y}
        if pred in (7, 14):  # ord / uno: neither / either operand is NaN
            either = tirx.Or(tirx.isnan(x), tirx.isnan(y))
            return tirx.Not(either) if pred == 7 else either
        if pred not in table:
            raise TranslationError(f"arith.cmpf predicate {pred} is not supported")
        return table[pred]

    def result_cast(op, a):
        return tirx.Cast(dtype_of(op.results[0].type), a[0])

    def wrapping(fn):
        """i32 add/sub/mul as MLIR defines them, wrapping modulo 2^32.  TVM's LLVM
        codegen emits signed integer arithmetic of 32 bits or more with `nsw`
        (overflow is undefined), which lets LLVM widen sext(a + b) into
        sext(a) + sext(b): besides being wrong when the sum does wrap, that loses the
        fact that the value is a sign-extended i32, and the requantization's i64
        product becomes a vpmullq (3 uops) instead of a vpmuldq.  The same arithmetic
        in int64 truncated to int32 is exact (no i64 overflow from i32 operands), and
        LLVM narrows it back to one 32-bit instruction without `nsw`.  (Not uint32
        arithmetic under `reinterpret`: one fused VNNI epilogue computed 431 of 1600
        elements wrong that way, in TVM 0.27.)"""
        def rule(op, a):
            t = op.results[0].type
            if isinstance(t, IntegerType) and t.width.data == 32:
                return tirx.Cast("int32", fn(*(tirx.Cast("int64", x) for x in a)))
            return fn(*a)

        return rule

    return {
        arith.AddiOp: wrapping(lambda x, y: x + y),
        arith.SubiOp: wrapping(lambda x, y: x - y),
        arith.MuliOp: wrapping(lambda x, y: x * y),
        arith.DivSIOp: lambda op, a: tirx.truncdiv(a[0], a[1]),
        arith.RemSIOp: lambda op, a: tirx.truncmod(a[0], a[1]),
        arith.FloorDivSIOp: lambda op, a: tirx.floordiv(a[0], a[1]),
        arith.ShRSIOp: lambda op, a: tirx.shift_right(a[0], a[1]),
        arith.ShLIOp: lambda op, a: tirx.shift_left(a[0], a[1]),
        arith.AndIOp: lambda op, a: tirx.bitwise_and(a[0], a[1]),
        arith.OrIOp: lambda op, a: tirx.bitwise_or(a[0], a[1]),
        arith.XOrIOp: lambda op, a: tirx.bitwise_xor(a[0], a[1]),
        arith.MaxSIOp: lambda op, a: tirx.max(a[0], a[1]),
        arith.MinSIOp: lambda op, a: tirx.min(a[0], a[1]),
        arith.ExtSIOp: result_cast,
        arith.ExtUIOp: unsigned_ext,
        arith.TruncIOp: result_cast,
        arith.SIToFPOp: result_cast,
        arith.FPToSIOp: result_cast,
        arith.ExtFOp: result_cast,
        arith.TruncFOp: result_cast,
        arith.IndexCastOp: result_cast,
        arith.CmpiOp: cmp,
        arith.CmpfOp: cmpf,
        arith.SelectOp: lambda op, a: tirx.Select(a[0], a[1], a[2]),
        arith.BitcastOp: lambda op, a: tirx.reinterpret(dtype_of(op.results[0].type), a[0]),
        arith.AddfOp: lambda op, a: a[0] + a[1],
        arith.SubfOp: lambda op, a: a[0] - a[1],
        arith.MulfOp: lambda op, a: a[0] * a[1],
        arith.DivfOp: lambda op, a: a[0] / a[1],
        arith.MaximumfOp: lambda op, a: tirx.max(a[0], a[1]),
        arith.MinimumfOp: lambda op, a: tirx.min(a[0], a[1]),
        arith.NegfOp: lambda op, a: -a[0],
        # one rounding (ORT's float kernels' FMA approximations, e.g. MLAS's exp)
        math_dialect.FmaOp: lambda op, a: tirx.call_llvm_pure_intrin(
            dtype_of(op.results[0].type), llvm_lookup_intrinsic_id("llvm.fma"), a[0], a[1], a[2]),
    }


_RULES: dict | None = None


_UNSIGNED_OPS = ("arith.shrui", "arith.divui", "arith.remui", "arith.uitofp", "arith.ceildivui")


def sub_byte_rule(rule: Callable) -> Callable:
    """Wrap a scalar rule so that an integer result narrower than 8 bits (held in int8)
    wraps at its own width, as MLIR's iN arithmetic does."""

    def wrapped(op, a):
        # (classes by `is_subclass`, values by their own fields: this runs for every op of
        # every body translated, and isinstance on xDSL's classes goes through ABCMeta)
        res = op.results[0]._type
        if is_subclass(type(res), IntegerType) and 1 < res.width.data < 8:
            from tvm import tirx

            if op.name in _UNSIGNED_OPS:
                raise TranslationError(f"{op.name} on i{res.width.data} is not supported")
            k = 8 - res.width.data
            v = rule(op, a)
            return tirx.shift_right(tirx.shift_left(v, tirx.const(k, "int8")), tirx.const(k, "int8"))
        for v in op._operands:
            t = v._type
            if is_subclass(type(t), TensorType):
                t = t.element_type
            if is_subclass(type(t), IntegerType) and 1 < t.width.data < 8 and (
                    op.name in _UNSIGNED_OPS or (isinstance(op, arith.CmpiOp) and op.predicate.value.data > 5)):
                raise TranslationError(f"{op.name} reading i{t.width.data} as unsigned is not supported")
        return rule(op, a)

    return wrapped


def scalar_rules() -> dict[type, Callable]:
    global _RULES
    if _RULES is None:
        _RULES = {k: sub_byte_rule(v) for k, v in _scalar_rules().items() if k is not None}
    return _RULES


def affine_to_tir(expr, dims: Sequence):
    from tvm import tirx

    if isinstance(expr, AffineDimExpr):
        return dims[expr.position]
    if isinstance(expr, AffineConstantExpr):
        return tirx.const(expr.value, "int64") if False else expr.value
    if isinstance(expr, AffineBinaryOpExpr):
        lhs, rhs = affine_to_tir(expr.lhs, dims), affine_to_tir(expr.rhs, dims)
        kind = expr.kind
        if kind == AffineBinaryOpKind.Add:
            return lhs + rhs
        if kind == AffineBinaryOpKind.Mul:
            return lhs * rhs
        if kind == AffineBinaryOpKind.FloorDiv:
            return tirx.floordiv(lhs, rhs)
        if kind == AffineBinaryOpKind.Mod:
            return tirx.floormod(lhs, rhs)
        if kind == AffineBinaryOpKind.CeilDiv:
            return tirx.floordiv(lhs + rhs - 1, rhs)
    raise TranslationError(f"affine expression {expr} is not supported")


# ----- the translator ------------------------------------------------------------------------


class _Init:
    """An output init that is not a real tensor: `tensor.empty` or a `linalg.fill` value."""

    def __init__(self, shape, dtype, value=None, tensor_expr=None):
        self.shape, self.dtype, self.value, self.tensor_expr = shape, dtype, value, tensor_expr


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
        funcs = _functions(self.module)
        if name is not None:
            match = [f for f in funcs if f.sym_name.data == name]
            if not match:
                raise TranslationError(f"no function @{name}")
            return match[0]
        for f in funcs:
            if f.sym_name.data == "main":
                return f
        if len(funcs) == 1:
            return funcs[0]
        raise TranslationError("no @main and not exactly one function")

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


def _init_value(tr: Translator, value: SSAValue):
    """(relax tensor or None, constant or None) for an output init operand."""
    v = tr.env[value]
    if isinstance(v, _Init):
        return None, (0 if v.value is None else v.value)
    return tr.tensor(value), None


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
    if flavor is not None:  # an int8 batch matmul of two activations: tvm_bridge/batch_matmul.py
        from tvm_bridge import batch_matmul

        geometry = batch_matmul.match(tr, op)
        if geometry is not None and batch_matmul.applicable(geometry, flavor):
            batch_matmul.emit(tr, op, geometry, flavor)
            return
    if flavor is not None and flavor.name != "vnni":  # vpmaddwd machines: tvm_bridge/depthwise.py
        from tvm_bridge import depthwise
        from tvm_bridge.vnni import NotApplicable

        geometry = depthwise.match(tr, op)
        if geometry is not None:
            try:
                depthwise.emit(tr, op, geometry, flavor)
                return
            except NotApplicable:  # sums that could leave int32 (nothing emitted)
                pass

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
    if red_dims and _is_fma_chain(body):
        return _sequential_generic(tr, op, maps, iters, extents)
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


def _sequential_generic(tr: Translator, op: linalg.GenericOp, maps, iters, extents):
    """A reduction whose body is a fused multiply-add chain, `acc = fma(a, b, acc)`: a float
    sum in the order of its reduction loops (MLAS's SGEMM accumulators), which a TE
    reduction (commutative, free to be reordered or split) does not promise.  Written as a
    TIR PrimFunc node by node: the output's loops (the last one innermost, inside the
    reduction loops, so each output element still sees its terms in order while LLVM can
    vectorize across that loop), the init stored first, then one `llvm.fma` per step."""
    import tvm
    from tvm import relax, tirx
    from tvm.target.codegen import llvm_lookup_intrinsic_id

    op_inputs, op_outputs = list(op.inputs), list(op.outputs)
    body = op.body.block
    out_map = maps[-1]
    out_type = op_outputs[0].type
    out_shape = list(out_type.get_shape())
    out_dtype = dtype_of(out_type)
    if out_dtype != "float32":
        raise TranslationError("linalg.generic: a math.fma chain must accumulate float32")
    for bop in body.ops:
        if isinstance(bop, tensor.ExtractOp):
            raise TranslationError("linalg.generic: a math.fma chain cannot read captured tensors")
    red_dims = [d for d, it in enumerate(iters) if "reduction" in it]
    args, bufs, arg_of = [], [], {}
    for k, v in enumerate(op_inputs):
        if not isinstance(v.type, TensorType):
            c = tr.env.get(v)
            if not isinstance(c, tuple):
                raise TranslationError("linalg.generic: non-constant scalar input")
            arg_of[k] = ("scalar", c)
            continue
        b = tirx.decl_buffer(list(v.type.get_shape()), dtype_of(v.type), name=f"I{k}", scope="global", layout=None)
        bufs.append(b)
        args.append(tr.tensor(v))
        arg_of[k] = ("buffer", b)
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
    values: dict = {}
    for k, (arg, m) in enumerate(zip(body.args, maps)):
        if k == len(op_inputs):
            values[arg] = tirx.BufferLoad(Y, out_idx)
            continue
        kind, ref = arg_of[k]
        if kind == "buffer":
            values[arg] = tirx.BufferLoad(ref, [affine_to_tir(e, loop_vars) for e in m.results])
        else:
            values[arg] = tirx.const(ref[0], dtype_of(arg.type))
    yield_op = body.last_op
    for bop in body.ops:
        if bop is yield_op:
            break
        if bop.name == "math.fma":
            a, b, c = (values[v] for v in bop.operands)
            values[bop.results[0]] = tirx.call_llvm_pure_intrin(out_dtype, fma_id, a, b, c)
            continue
        eval_scalar_op(bop, values, loop_vars, rules)
    update = tirx.BufferStore(Y, values[yield_op.operands[0]], out_idx)
    init_value = tirx.BufferLoad(init_buf, out_idx) if init_buf is not None else tirx.const(init_const, out_dtype)
    inner = out_map.results[-1].position
    outer = [e.position for e in out_map.results[:-1]]

    def loop(d, stmt):
        return tirx.For(loop_vars[d], tirx.IntImm("int32", 0), tirx.IntImm("int32", extents[d]),
                        tirx.ForKind.SERIAL, stmt)

    red = loop(inner, update)
    for d in reversed(red_dims):
        red = loop(d, red)
    stmt = tirx.SeqStmt([loop(inner, tirx.BufferStore(Y, init_value, out_idx)), red])
    for d in reversed(outer):
        stmt = loop(d, stmt)
    # op_pattern 8 (kOpaque): FuseOps leaves the call alone (FuseTIR cannot merge a block-less PrimFunc)
    attrs = tvm.ir.make_node("ir.DictAttrs", **{"tirx.noalias": True, "tirx.is_scheduled": True, "s_tir": True,
                                                 "op_pattern": 8})
    prim_func = tirx.PrimFunc([*bufs, Y], stmt, ret_type=tvm.ir.TupleType([]), attrs=attrs)
    gvar = tr.bb.add_func(prim_func, "fma_chain")
    tr.env[op.results[0]] = tr.bb.emit(call_tir(gvar, args, relax.TensorType(out_shape, out_dtype)))


def eval_scalar_op(bop: Operation, values: dict, dims: Sequence, rules: dict | None = None) -> None:
    """Evaluate one scalar op of a linalg.generic body as TIR: `values` maps SSA values to
    PrimExprs (the op's result is added), `dims` are the loop indices (for linalg.index)."""
    cls = type(bop)  # (see sub_byte_rule)
    if is_subclass(cls, arith.ConstantOp):
        from tvm import tirx

        c, dt = scalar_constant(bop)
        values[bop.results[0]] = tirx.const(c, dt)
        return
    if is_subclass(cls, linalg.IndexOp):
        from tvm import tirx

        values[bop.results[0]] = tirx.Cast("int64", dims[bop.dim.value.data])
        return
    rule = (rules or scalar_rules()).get(cls)
    if rule is None:
        raise TranslationError(f"linalg.generic body op {bop.name} is not supported")
    values[bop.results[0]] = rule(bop, [values[v] for v in bop._operands])


def _scalar_key(value):
    """A constant in a PrimFunc cache key: floats by their exact bits, so 0.0 and -0.0 differ."""
    return value.hex() if isinstance(value, float) else value


def _is_identity(combiner: Operation, value, dtype: str) -> bool:
    """Whether `value` is the identity of the reduction `combiner` on `dtype`."""
    if isinstance(combiner, (arith.AddiOp, arith.AddfOp)):
        return value == 0
    if dtype.startswith("int"):
        bits = int(dtype[3:])
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        return value == (lo if isinstance(combiner, arith.MaxSIOp) else hi)
    return value == (-float("inf") if isinstance(combiner, arith.MaximumfOp) else float("inf"))


def _add_init(tr: Translator, op, result):
    from tvm import relax

    init_tensor, init_const = _init_value(tr, op.outputs[0])
    if init_tensor is not None:
        result = tr.bb.emit(relax.op.add(result, init_tensor))
    elif init_const:
        result = tr.bb.emit(relax.op.add(result, relax.const(init_const, dtype_of(op.results[0].type))))
    tr.env[op.results[0]] = result


@handles(linalg.MatmulOp)
def _matmul(tr: Translator, op):
    from tvm import relax

    out_dtype = dtype_of(op.results[0].type)
    a, b = (relax.op.astype(tr.tensor(v), out_dtype) for v in op.inputs)
    _add_init(tr, op, tr.bb.emit(relax.op.matmul(a, b, out_dtype=out_dtype)))


def _dot_conv(tr: Translator, op, out, x, x_shape, weights, strides, dilations, flavor, in_pad=None):
    """The convolution `op` (its output init `out`) as a dot-product kernel
    (tvm_bridge/vnni.py) of `flavor`, with the elementwise chain after it fused in when it
    can be (and `x` padded to `x_shape` by the kernel with `in_pad`, if given)."""
    from tvm_bridge import epilogue, vnni

    def bare():
        return vnni.emit_conv2d(tr.bb, x, x_shape, weights, strides, dilations, kernels=tr.vnni_kernels,
                                flavor=flavor, in_pad=in_pad)

    init_tensor, init_const = _init_value(tr, out)
    if init_tensor is not None:  # sums added to a tensor: no epilogue fusion
        _add_init(tr, op, bare())
        return
    epi = epilogue.collect(tr, op)
    try:
        result = vnni.emit_conv2d(tr.bb, x, x_shape, weights, strides, dilations, epi, init_const,
                                  epi.key(tr), tr.vnni_kernels, flavor, in_pad)
    except vnni.NotApplicable:
        raise
    except Exception:  # noqa: BLE001 - an epilogue the kernel cannot take (nothing was
        # emitted yet): the bare convolution, and the chain translated op by op, which
        # names an op it cannot translate itself
        _add_init(tr, op, bare())
        return
    if epi.collapsed is not None:  # a fully connected layer's [1, 1, B, K] -> [B, K]
        from tvm import relax

        result = tr.bb.emit(relax.op.reshape(result, epi.collapsed))
    tr.env[epi.result] = result
    tr.fused.update(map(id, epi.ops))


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
        from tvm_bridge import vnni

        dense = tr.dense(w_value)
        weights = dense.array() if dense is not None else None
        x_shape = list(shape_of(x_value._type))
        if vnni.applicable(x_shape, weights, dtype_of(x_value._type), dtype_of(w_value._type), out_dtype, flavor):
            # an input padded by a constant: the kernel stages the pad with its input
            padded = tr.env.get(x_value)
            in_pad = padded.spatial() if isinstance(padded, _Pad) else None
            x = padded.source if in_pad is not None else tr.tensor(x_value)
            try:
                _dot_conv(tr, op, outputs[0], x, x_shape, weights, strides, dilations, flavor, in_pad)
                return
            except vnni.NotApplicable:  # sums that could leave int32 (nothing emitted)
                pass
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
def translate(module: ModuleOp, entry: str | None = None, dot=None):
    """(tvm IRModule with Relax `main`, number of outputs).

    `dot` (a `tvm_bridge.vnni.Flavor`, or None for the generic path): int8 convolutions
    with constant weights use the dot-product kernel of tvm_bridge/vnni.py on that
    instruction (only for a target that has it: compile_module picks
    `vnni.target_flavor(target)`)."""
    if linalg.AddOp not in _OP_HANDLERS:
        _register_named_elementwise()
    tr = Translator(module)
    tr.dot = dot
    _arenas.current = None  # this module's constants share buffers with no other's
    try:
        return tr.translate(entry)
    finally:
        _arenas.current = None


def tvm_constant_type():
    import tvm

    return tvm.ir.expr.Constant
