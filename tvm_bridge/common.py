"""Shared pieces of the TVM bridge: the error it raises, MLIR types as TVM dtypes, constants
as aligned TVM tensors, `call_tir`, and the scalar arith -> TIR rules of a linalg body.

The translation (tvm_bridge/translate.py) and the kernels (tvm_bridge/vnni.py,
depthwise.py, batch_matmul.py, epilogue.py) all import from here and never from each
other's callers: the kernels do not import the translation, the translation reaches
the kernels through the registry (tvm_bridge/kernels.py).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import arith
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
    TensorType,
)
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineConstantExpr, AffineDimExpr

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
    from tvm_bridge.schedule import folded_cast  # (TVM-only; one fold for translation and pass)
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
        return folded_cast(dtype_of(op.results[0].type), a[0])

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
                return folded_cast("int32", fn(*(folded_cast("int64", x) for x in a)))
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
        # LLVM's ctlz, defined at 0 (the operand's width)
        math_dialect.CountLeadingZerosOp: lambda op, a: tirx.clz(a[0]),
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


# ----- output inits ----------------------------------------------------------------------


class _Init:
    """An output init that is not a real tensor: `tensor.empty` or a `linalg.fill` value."""

    def __init__(self, shape, dtype, value=None, tensor_expr=None):
        self.shape, self.dtype, self.value, self.tensor_expr = shape, dtype, value, tensor_expr


def _init_value(tr, value: SSAValue):
    """(relax tensor or None, constant or None) for an output init operand."""
    v = tr.env[value]
    if isinstance(v, _Init):
        return None, (0 if v.value is None else v.value)
    return tr.tensor(value), None


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


#: a body value read more than once whose expression (counting repeated operands each time
#: they appear) holds more nodes than this makes translate.py write the generic as loops
#: (`SharedValues.needed`)
SHARED_NODES = 256

#: ... and once a body is written as loops for that, each value read more than once that
#: holds more nodes than this is computed once: a value of a few hundred nodes of nested
#: selects still cost TVM's simplifier and code generator seconds (a chain of 30 selects:
#: 18.8 s to build with 256, 0.1 s with 4)
BOUND_NODES = 4


class SharedValues:
    """The values of a linalg.generic body that are read more than once and are big, each
    computed once into a local buffer of one value (translate.py's `_loop_generic`) instead
    of repeated in the expression tree.  TVM's passes walk a PrimExpr as a tree, so a chain
    whose every step reads the previous one several times grows as a power of its length: an
    ONNX MobileNetV2 of 16-bit activations (ORT's float depthwise convolution, nine taps,
    each sum clamped to the finite floats, which reads it four times) held 846 KB of
    TVMScript a kernel and spent 45 s in each StmtSimplify.  Small values (at most
    SHARED_NODES nodes: a requantization's) stay inline.  (Not `tirx.Let` nor `tirx.Bind`:
    StmtSimplify substitutes every integer binding back into its uses, and TVM's simplifier
    stops on "conflicts with memorization" where a loop's passes copy a Let.  LLVM keeps a
    one-value buffer in a register.)"""

    def __init__(self, body, limit: int = SHARED_NODES):
        self.limit = limit
        self.temps: list = []
        self.sizes: dict = {}
        self.reads: dict = {}
        for bop in body.ops:
            for v in bop._operands:
                self.reads[v] = self.reads.get(v, 0) + 1

    def _size(self, bop: Operation) -> int:
        return 1 + sum(self.sizes.get(v, 1) for v in bop._operands)

    def _shared(self, r, size: int) -> bool:
        return self.reads.get(r, 0) > 1 and size > self.limit

    @staticmethod
    def needed(body) -> bool:
        """Whether some value of `body` is to be computed once (`bind`)."""
        shared = SharedValues(body)
        for bop in body.ops:
            size = shared._size(bop)
            for r in bop.results:
                if shared._shared(r, size):
                    return True
                shared.sizes[r] = size
        return False

    def bind(self, bop: Operation, values: dict) -> None:
        """After `bop` is evaluated into `values`: its result computed into a buffer of its
        own, and read from it, where it is read more than once and is big."""
        from tvm import tirx

        size = self._size(bop)
        for r in bop.results:
            e = values.get(r)
            if e is None or not self._shared(r, size):
                self.sizes[r] = size
                continue
            if hasattr(e, "asobject"):  # a lazy `==` / `!=` (tvm's EqualOp, NotEqualOp)
                e = e.asobject()
            buf = tirx.decl_buffer((1,), str(e.ty), name=f"S{len(self.temps)}", scope="local", layout=None)
            self.temps.append((buf, e))
            values[r], self.sizes[r] = tirx.BufferLoad(buf, [tirx.IntImm("int32", 0)]), 1

    def allocations(self) -> list:
        """The statements allocating the buffers (before the loops)."""
        from tvm import tirx

        return [tirx.AllocBuffer(buf) for buf, _ in self.temps]

    def wrap(self, stmt):
        """`stmt` after the stores of the values computed once, in order."""
        from tvm import tirx

        if not self.temps:
            return stmt
        zero = tirx.IntImm("int32", 0)
        return tirx.SeqStmt([tirx.BufferStore(buf, e, [zero]) for buf, e in self.temps] + [stmt])


def _scalar_key(value):
    """A constant in a PrimFunc cache key: floats by their exact bits, so 0.0 and -0.0 differ."""
    return value.hex() if isinstance(value, float) else value


def _add_init(tr, op, result):
    """Bind `op`'s result to `result` plus its output init (a tensor, or a nonzero constant)."""
    from tvm import relax

    init_tensor, init_const = _init_value(tr, op.outputs[0])
    if init_tensor is not None:
        result = tr.bb.emit(relax.op.add(result, init_tensor))
    elif init_const:
        result = tr.bb.emit(relax.op.add(result, relax.const(init_const, dtype_of(op.results[0].type))))
    tr.env[op.results[0]] = result
