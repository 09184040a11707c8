"""Quantized ONNX model -> canonical qnn module (L1).

    from qdialect.importer.onnx import import_onnx
    module = import_onnx(open("model.onnx", "rb").read())

Both spellings of a quantized ONNX model end in the same L1 as a TFLite model:

- **QOperator** nodes (`QLinearConv`, `QLinearMatMul`, `com.microsoft`
  `QGemm`, `QLinearAdd`, `QLinearMul`, `QLinearSigmoid`, `QLinearLeakyRelu`,
  `QLinearAveragePool`, `QLinearGlobalAveragePool`, `QLinearConcat`,
  `QLinearSoftmax`) map to one qnn op each.
- **QDQ** groups `DequantizeLinear -> float op -> QuantizeLinear` (a "node
  unit", as ONNX Runtime calls it) map to the same qnn op as the QOperator
  node that spells the same computation; a `Relu` / `Clip` between the op and
  its `QuantizeLinear` becomes the op's clamp bounds.

Numerics: every op that rescales gets the rounding knob of what ONNX Runtime
runs for it.  `onnxruntime` (the default profile) follows ORT's own choice op
by op: a group that ORT's QDQ transformer fuses into an integer kernel (and
every QOperator node) gets `rounding = "onnxruntime"`; a group ORT leaves as
`DequantizeLinear -> float op -> QuantizeLinear` gets `rounding = "onnx"`,
the ONNX specification's float meaning (dequantize, compute in float32,
`QuantizeLinear` with ties to even and saturation), and a remark says which
and why.  `profile="onnx"` gives every QDQ group the float meaning (what ORT
computes with all graph optimizations disabled); QOperator nodes keep their
kernels, which is what they mean in both.  Which groups ORT fuses is
`qdialect.importer.onnx_fusion`.

Layout: ONNX is NCHW with OIHW weights, the canonical ops are NHWC.  The
importer tracks, per value, whether its physical layout is NHWC; convolutions
and pools take NHWC, layout-agnostic ops (elementwise, activations, concat /
softmax / reduce / pad / slice with their axes remapped) keep their input's
layout, and only ops that depend on the logical element order (Reshape,
Flatten, Transpose, MatMul on 4-D values, graph outputs) see the NCHW order
again, through one `qnn.transpose` (or a `qnn.reshape` where the transpose
moves only dimensions of size 1).  Weights are transposed at import.  So a
convnet has one transpose at each 4-D input and output, and none between ops.

Errors are `OnnxImportError` (a ValueError) with a message that names the
node, its op type and what is wrong; all unsupported operators are listed at
once.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    Float32Type,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from qdialect.dialects import nn, qnn
from qdialect.dialects.quant import UniformQuantizedType
from qdialect.diagnostics import verify_module

__all__ = ["OnnxImportError", "import_onnx", "import_onnx_file", "SUPPORTED_OPERATORS", "ONNX_PROFILES",
           "OPSET_RANGE"]

ONNX_PROFILES = ("onnxruntime", "onnx")
OPSET_RANGE = (10, 23)
"""Default-domain opsets the importer reads (QuantizeLinear exists from 10; per-axis from 13)."""
MAX_ELEMENTS = 2**31 - 1
MAX_RANK = 8


class OnnxImportError(ValueError):
    """A model qd-import cannot bring in; the message says why, for people.  One line: control
    characters (a tensor name may hold a newline) are escaped, and a message that quotes a huge
    attribute list is shortened in the middle."""

    def __init__(self, message="", *args):
        if isinstance(message, str):
            message = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in message)
            if len(message) > 1000:
                message = f"{message[:700]} ... {message[-200:]}"
        super().__init__(message, *args)


class _Unsupported(Exception):
    """A supported operator used in a way qnn cannot express (collected, reported at once)."""


_STORAGE = {
    "UINT8": "u8", "INT8": "i8", "UINT16": "u16", "INT16": "i16", "INT32": "i32",
}
_NP_STORAGE = {np.dtype(np.uint8): "u8", np.dtype(np.int8): "i8", np.dtype(np.uint16): "u16",
               np.dtype(np.int16): "i16", np.dtype(np.int32): "i32"}


# ======================================================================================
# Values
# ======================================================================================


@dataclass
class Act:
    """A run-time tensor.  `nhwc`: a logically NCHW 4-D tensor stored NHWC."""

    value: SSAValue
    nhwc: bool = False

    @property
    def qtype(self) -> UniformQuantizedType | None:
        return qnn.qtype(self.value)

    @property
    def logical_shape(self) -> tuple[int, ...]:
        s = qnn.shape_of(self.value)
        return (s[0], s[3], s[1], s[2]) if self.nhwc else tuple(s)


@dataclass
class Const:
    """A tensor known at import (initializer, Constant node, folded shape arithmetic)."""

    array: np.ndarray


@dataclass
class Deq:
    """The output of a DequantizeLinear, not materialized: `src` (an Act of quantized
    type, or a Const of stored integers) read with `qtype`."""

    src: Act | Const
    qtype: UniformQuantizedType


# ======================================================================================
# Reading the protobuf
# ======================================================================================


def _onnx():
    try:
        import onnx  # noqa: PLC0415 - optional dependency, imported when an .onnx file is read
    except ImportError:
        raise OnnxImportError("reading .onnx files needs the onnx package (pip install 'qdialect[onnx]')") from None
    return onnx


@dataclass
class _Node:
    index: int
    name: str
    op_type: str
    domain: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict

    def label(self) -> str:
        name = f" '{self.name}'" if self.name else ""
        return f"node {self.index}{name} ({self.op_type})"


@dataclass
class _Graph:
    name: str
    nodes: list[_Node]
    inputs: list[tuple[str, str, list]]  # name, elem type name, dims (int or str)
    outputs: list[str]
    initializers: dict[str, np.ndarray]
    opset: int
    ms_opset: int | None
    consumers: dict[str, list[int]] = field(default_factory=dict)


_ATTR_TYPES = {
    **{k: 2 for k in ("axis", "group", "keepdims", "transA", "transB", "count_include_pad", "ceil_mode", "block_size",
                      "output_dtype", "saturate", "allowzero", "channels_last", "storage_order", "start", "end",
                      "noop_with_empty_axes", "value_int")},
    **{k: 7 for k in ("pads", "strides", "dilations", "kernel_shape", "perm", "axes", "split", "value_ints")},
    **{k: 1 for k in ("alpha", "beta", "min", "max", "value_float")},
    **{k: 3 for k in ("auto_pad", "mode", "coordinate_transformation_mode", "nearest_mode")},
    "value_floats": 6, "value": 4,
}
"""The AttributeProto type (INT 2, INTS 7, FLOAT 1, FLOATS 6, STRING 3, TENSOR 4) of every attribute the
importer reads, the same for every operator that has it: another type is refused while reading."""


def _attr_value(onnx, a):
    A = onnx.AttributeProto
    if a.type == A.INT:
        return int(a.i)
    if a.type == A.FLOAT:
        return float(np.float32(a.f))
    if a.type == A.STRING:
        return a.s.decode("utf-8", "replace")
    if a.type == A.INTS:
        return [int(v) for v in a.ints]
    if a.type == A.FLOATS:
        return [float(np.float32(v)) for v in a.floats]
    if a.type == A.STRINGS:
        return [s.decode("utf-8", "replace") for s in a.strings]
    if a.type == A.TENSOR:
        return ("tensor", a.t)
    return ("unsupported", A.AttributeType.Name(a.type))


def _tensor_array(onnx, t, what: str) -> np.ndarray:
    """A TensorProto's contents, its size checked against the data before anything is allocated."""
    from onnx import numpy_helper

    TP = onnx.TensorProto
    if t.data_location == TP.EXTERNAL or len(t.external_data):
        raise OnnxImportError(f"{what} '{t.name}' keeps its data in an external file; "
                              "qd-import reads self-contained .onnx files")
    dims = [int(d) for d in t.dims]
    if len(dims) > MAX_RANK or any(d < 0 for d in dims):
        raise OnnxImportError(f"{what} '{t.name}' has invalid dimensions {dims}")
    count = math.prod(dims)
    if count > MAX_ELEMENTS:
        raise OnnxImportError(f"{what} '{t.name}' claims {count} elements")
    type_name = TP.DataType.Name(t.data_type) if t.data_type in TP.DataType.values() else str(t.data_type)
    try:
        np_type = onnx.helper.tensor_dtype_to_np_dtype(t.data_type)
    except (KeyError, ValueError, TypeError):
        raise OnnxImportError(f"{what} '{t.name}' has data type {type_name}, which qd-import cannot read") from None
    if t.HasField("raw_data") if hasattr(t, "HasField") else t.raw_data:
        itemsize = np.dtype(np_type).itemsize if t.data_type not in (TP.INT4, TP.UINT4) else 1
        need = count * itemsize if t.data_type not in (TP.INT4, TP.UINT4) else (count + 1) // 2
        if len(t.raw_data) != need:
            raise OnnxImportError(f"{what} '{t.name}' holds {len(t.raw_data)} bytes, "
                                  f"but {type_name.lower()}{dims} needs {need}")
    else:
        held = max(len(t.float_data), len(t.int32_data), len(t.int64_data), len(t.double_data),
                   len(t.uint64_data), len(t.string_data))
        if held != count:
            raise OnnxImportError(f"{what} '{t.name}' holds {held} values, but {dims} needs {count}")
    try:
        return np.array(numpy_helper.to_array(t))
    except Exception as e:  # noqa: BLE001 - a malformed tensor is bad input
        raise OnnxImportError(f"{what} '{t.name}' cannot be read: {e}") from None


def _elem_name(onnx, elem_type: int) -> str:
    TP = onnx.TensorProto
    return TP.DataType.Name(elem_type) if elem_type in TP.DataType.values() else f"type {elem_type}"


def _read(data: bytes) -> _Graph:
    onnx = _onnx()
    from google.protobuf.message import DecodeError

    if not data:
        raise OnnxImportError("the file is empty, not an ONNX model")
    try:
        model = onnx.ModelProto()
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise OnnxImportError(f"not an ONNX model, or a truncated one (protobuf: {e})") from None
    if not model.HasField("graph") or (not model.graph.node and not model.graph.output):
        raise OnnxImportError("not an ONNX model, or a truncated one (it has no graph)")
    opset, ms_opset = None, None
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            opset = int(imp.version)
        elif imp.domain == "com.microsoft":
            ms_opset = int(imp.version)
    if opset is None:
        raise OnnxImportError("the model imports no default-domain (ai.onnx) opset")
    lo, hi = OPSET_RANGE
    if not lo <= opset <= hi:
        raise OnnxImportError(f"opset {opset} is outside the supported range {lo}..{hi}")
    g = model.graph
    inits = {}
    for t in g.initializer:
        inits[t.name] = _tensor_array(onnx, t, "initializer")
    if len(g.sparse_initializer):
        raise OnnxImportError("the model has sparse initializers, which qd-import cannot read")
    inputs = []
    for vi in g.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is None:
            raise OnnxImportError(f"graph input '{vi.name}' is not a tensor")
        dims = []
        if tt.HasField("shape"):
            for d in tt.shape.dim:
                dims.append(int(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?"))
        else:
            raise OnnxImportError(f"graph input '{vi.name}' has no shape")
        inputs.append((vi.name, _elem_name(onnx, tt.elem_type), dims))
    nodes = []
    for k, n in enumerate(g.node):
        for what, v in (("name", n.name), ("op_type", n.op_type), ("domain", n.domain),
                        *(("an input name", i) for i in n.input), *(("an output name", o) for o in n.output),
                        *(("an attribute name", a.name) for a in n.attribute)):
            if not isinstance(v, str):  # protobuf hands out bytes for a string field that is not UTF-8
                raise OnnxImportError(f"node {k}: {what} is not UTF-8 text ({bytes(v)[:40]!r})")
        attrs = {a.name: _attr_value(onnx, a) for a in n.attribute}
        node = _Node(k, n.name, n.op_type, n.domain or "", list(n.input), list(n.output), attrs)
        if n.op_type in _HANDLERS:
            for a in n.attribute:
                want = _ATTR_TYPES.get(a.name)
                if want is not None and a.type != want:
                    A = onnx.AttributeProto.AttributeType
                    have = A.Name(a.type) if a.type in A.values() else str(a.type)
                    raise OnnxImportError(f"{node.label()}: attribute '{a.name}' is {have}, "
                                          f"but {n.op_type} takes {A.Name(want)}")
        nodes.append(node)
    for what, names in (("graph input", [vi.name for vi in g.input]), ("graph output", [o.name for o in g.output]),
                        ("initializer", [t.name for t in g.initializer])):
        for v in names:
            if not isinstance(v, str):
                raise OnnxImportError(f"a {what} name is not UTF-8 text ({bytes(v)[:40]!r})")
    graph = _Graph(g.name, nodes, inputs, [o.name for o in g.output], inits, opset, ms_opset)
    for n in nodes:
        for i in n.inputs:
            if i:
                graph.consumers.setdefault(i, []).append(n.index)
    for o in graph.outputs:
        graph.consumers.setdefault(o, []).append(-1)  # -1: the graph's output
    return graph


# ======================================================================================
# Handlers
# ======================================================================================

_HANDLERS: dict[str, object] = {}
_QDQ_OPS: set[str] = set()  # float ops that form a quantized unit between DQ and Q


def _handles(*names, qdq: bool = False):
    def register(fn):
        for n in names:
            _HANDLERS[n] = fn
            if qdq:
                _QDQ_OPS.add(n)
        return fn

    return register


def _qtype(scale: np.ndarray, zp: np.ndarray | None, storage: str, axis: int | None, shape, where) -> UniformQuantizedType:
    """A quantized type from ONNX scale / zero-point arrays (checked)."""
    scale = np.asarray(scale)
    if scale.dtype != np.float32:
        raise where.bad(f"scale has type {scale.dtype}; ONNX scales are float32")
    s = scale.astype(np.float64).reshape(-1)
    if zp is None:
        z = np.zeros(s.shape, np.int64)
    else:
        zp = np.asarray(zp)
        if _NP_STORAGE.get(zp.dtype) != storage:
            raise where.bad(f"zero point has type {zp.dtype}, but the quantized tensor is {storage}")
        z = zp.astype(np.int64).reshape(-1)
    if z.size != s.size:
        raise where.bad(f"{s.size} scales but {z.size} zero points")
    if s.size == 0:
        raise where.bad("empty scale")
    for v in s.tolist():
        if not (math.isfinite(v) and v > 0):
            raise where.bad(f"scale {v} must be finite and > 0")
    if s.size > 1 or (axis is not None and scale.ndim == 1):
        rank = len(shape)
        if axis is None:
            axis = 1
        if not -rank <= axis < rank:
            raise where.bad(f"per-axis quantization on axis {axis} of a rank-{rank} tensor")
        axis %= rank
        if shape[axis] != s.size:
            raise where.bad(f"{s.size} per-axis scales on axis {axis} of shape {list(shape)}")
        if s.size == 1:
            return UniformQuantizedType.per_tensor(float(s[0]), int(z[0]), storage=storage)
        try:
            return UniformQuantizedType.per_axis(s, z, axis=axis, storage=storage)
        except VerifyException as e:
            raise where.bad(str(e)) from None
    try:
        qt = UniformQuantizedType.per_tensor(float(s[0]), int(z[0]), storage=storage)
        problems = qt.problems()
    except VerifyException as e:
        problems = [str(e)]
    if problems:
        raise where.bad(f"quantization: {problems[0]}")
    return qt


class _Importer:
    def __init__(self, g: _Graph, batch: int, profile: str):
        self.g = g
        self.batch = batch
        self.profile = profile
        self.block = Block()
        self.env: dict[str, Act | Const | Deq] = {}
        self.node: _Node | None = None
        self.done: set[int] = set()
        self.unsupported: list[tuple[str, str | None]] = []
        self.remarks: list[str] = []
        from qdialect.importer import onnx_fusion

        self.fusion = onnx_fusion

    # ----- diagnostics -------------------------------------------------------------------

    def bad(self, message: str) -> OnnxImportError:
        return OnnxImportError(f"{self.node.label()}: {message}" if self.node else message)

    def remark(self, message: str) -> None:
        self.remarks.append(f"{self.node.label()}: {message}" if self.node else message)

    # ----- values ------------------------------------------------------------------------

    def get(self, name: str, role: str):
        if not name:
            raise self.bad(f"{role} is missing")
        if name in self.env:
            return self.env[name]
        if name in self.g.initializers:
            c = Const(self.g.initializers[name])
            self.env[name] = c
            return c
        raise self.bad(f"{role} '{name}' is read before any node produces it")

    def input(self, node: _Node, k: int, role: str, optional: bool = False):
        if k >= len(node.inputs) or not node.inputs[k]:
            if optional:
                return None
            raise self.bad(f"{role} (input {k}) is missing")
        return self.get(node.inputs[k], role)

    def const(self, v, role: str) -> np.ndarray:
        if isinstance(v, Const):
            return v.array
        raise self.bad(f"{role} must be a constant (it is computed at run time)")

    def ints(self, v, role: str) -> list[int]:
        a = self.const(v, role)
        if a.dtype.kind not in "iu":
            raise self.bad(f"{role} must be integers, got {a.dtype}")
        return [int(x) for x in a.reshape(-1)]

    def add(self, op):
        try:
            op.verify()
        except VerifyException as e:
            lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
            raise self.bad(lines[0] if lines else "verification failed") from None
        self.block.add_op(op)
        return op

    def emit(self, cls, operands, result_type, attrs=None) -> SSAValue:
        attrs = dict(attrs or {})
        if cls in _FLOAT_TWIN and not isinstance(result_type.element_type, UniformQuantizedType):
            # data movement in float: the nn op, computed as ONNX Runtime's float kernels compute it
            cls = _FLOAT_TWIN[cls]
            attrs = {k: v for k, v in attrs.items() if k in cls.ATTRS}
            if cls is nn.PadOp:
                attrs["pad_value"] = 0.0
            attrs["qnn.rounding"] = "onnx"
            try:
                return self.add(cls(list(operands), result_type, attrs)).results[0]
            except VerifyException as e:
                raise self.bad(str(e).strip().splitlines()[0]) from None
        try:
            op = cls(list(operands), [result_type], attrs)
        except VerifyException as e:
            raise self.bad(str(e).strip().splitlines()[0]) from None
        return self.add(op).results[0]

    def float_value(self, v, role: str, like: "Act | None" = None) -> "Act":
        """A float operand: a dequantized tensor (qnn.dequantize), a float tensor, or a constant
        (laid out like `like`)."""
        if isinstance(v, Deq) and isinstance(v.src, Act):
            a = self.retyped(v.src, v.qtype)
            shape = list(qnn.shape_of(a.value))
            return Act(self.emit(qnn.DequantizeOp, [a.value], TensorType(Float32Type(), shape)), a.nhwc)
        if isinstance(v, Act) and v.qtype is None:
            return v
        if isinstance(v, (Const, Deq)):
            if isinstance(v, Deq):
                from qdialect.reference import onnxruntime_kernels as ort

                arr = ort.dequantize_linear(v.src.array, x_q=v.qtype.qparams())
            else:
                arr = np.asarray(v.array)
                if arr.dtype != np.float32:
                    raise self.bad(f"{role} is a {arr.dtype} constant; a float operand is float32")
            nhwc = like is not None and like.nhwc
            if nhwc:
                if arr.ndim < 4:
                    arr = arr.reshape((1,) * (4 - arr.ndim) + arr.shape)
                arr = arr.transpose(0, 2, 3, 1)
            arr = np.ascontiguousarray(arr, np.float32)
            c = nn.ConstantOp(arr, TensorType(Float32Type(), list(arr.shape)))
            return Act(self.add(c).results[0], nhwc)
        raise self.bad(f"{role} is quantized where a float operand is expected")

    def qconst(self, arr: np.ndarray, qt: UniformQuantizedType) -> SSAValue:
        try:
            op = qnn.ConstantOp.from_array(arr, qt)
        except VerifyException as e:
            raise self.bad(str(e)) from None
        return self.add(op).results[0]

    # ----- layout --------------------------------------------------------------------------

    def transpose(self, v: SSAValue, perm) -> SSAValue:
        shape = qnn.shape_of(v)
        out_shape = [shape[p] for p in perm]
        el = v.type.element_type
        moved = [shape[p] for p in perm if shape[p] != 1]
        kept = [d for d in shape if d != 1]
        if moved == kept and [p for p in perm if shape[p] != 1] == sorted(p for p in perm if shape[p] != 1):
            # only size-1 dimensions move: the same elements in the same order
            return self.emit(qnn.ReshapeOp, [v], TensorType(el, out_shape))
        return self.emit(qnn.TransposeOp, [v], TensorType(el, out_shape), {"perm": list(perm)})

    def nhwc(self, a: Act, role: str = "input") -> SSAValue:
        """`a` as an NHWC value (a logically NCHW 4-D tensor)."""
        if len(qnn.shape_of(a.value)) != 4:
            raise self.bad(f"{role} must have rank 4 (NCHW), got shape {list(a.logical_shape)}")
        if a.nhwc:
            return a.value
        return self.transpose(a.value, (0, 2, 3, 1))

    def logical(self, a: Act) -> SSAValue:
        """`a` in ONNX's own element order."""
        if not a.nhwc:
            return a.value
        return self.transpose(a.value, (0, 3, 1, 2))

    # ----- quantized operands --------------------------------------------------------------------

    def qact(self, v, role: str) -> Act:
        """A quantized run-time operand (a DequantizeLinear output in QDQ, the tensor in QOperator)."""
        if isinstance(v, Deq) and isinstance(v.src, Act):
            return self.retyped(v.src, v.qtype)
        if isinstance(v, Act) and v.qtype is not None:
            return v
        if isinstance(v, (Const, Deq)):
            raise _Unsupported(f"a constant {role}")
        raise self.bad(f"{role} is a float tensor that no DequantizeLinear produces; "
                       "qd-import imports quantized operators on quantized tensors")

    def retyped(self, a: Act, qt: UniformQuantizedType) -> Act:
        """`a` read with the parameters `qt` a consumer declares (same stored integers)."""
        if a.qtype == qt:
            return a
        have = a.qtype
        if have is None or have.storage != qt.storage:
            raise self.bad(f"reads a {have.storage if have else 'float'} tensor as {qt.storage}")
        from qdialect.dialects.quant import StorageCastOp

        shape = list(qnn.shape_of(a.value))
        storage = IntegerType(int(qt.storage[1:]))
        raw = self.add(StorageCastOp(a.value, TensorType(storage, shape))).results[0]
        back = self.add(StorageCastOp(raw, TensorType(qt, shape))).results[0]
        return Act(back, a.nhwc)

    def qweights(self, v, role: str) -> tuple[np.ndarray, UniformQuantizedType]:
        """Stored integers and type of a constant quantized operand."""
        if isinstance(v, Deq) and isinstance(v.src, Const):
            return v.src.array, v.qtype
        raise _Unsupported(f"{role} computed at run time") if isinstance(v, (Act, Deq)) else self.bad(
            f"{role} is a float constant; qd-import needs quantized weights")

    def params(self, node: _Node, k_scale: int, k_zp: int, storage_of, shape, role: str, axis=None):
        scale = self.const(self.input(node, k_scale, f"{role} scale"), f"{role} scale")
        zpv = self.input(node, k_zp, f"{role} zero point", optional=True)
        zp = self.const(zpv, f"{role} zero point") if zpv is not None else None
        storage = storage_of if isinstance(storage_of, str) else _NP_STORAGE.get(np.dtype(storage_of))
        if storage is None:
            raise self.bad(f"{role} has type {storage_of}, not a quantized integer type")
        return _qtype(scale, zp, storage, axis, shape, self)

    # ----- rounding -----------------------------------------------------------------------

    def rounding_for(self, fused: bool | str) -> str:
        """The knob of an op that ORT runs fused (an integer kernel) or not (float)."""
        if fused is True:
            return "onnxruntime"
        return "onnx"

    # ----- driving -----------------------------------------------------------------------

    def run(self):
        g = self.g
        for k, (name, elem, dims) in enumerate(g.inputs):
            shape = []
            for d, s in enumerate(dims):
                if isinstance(s, str):
                    if d != 0:
                        raise OnnxImportError(f"graph input '{name}' has a dynamic dimension {d} ('{s}'); "
                                              "only a dynamic batch (dimension 0) can be fixed at import")
                    s = self.batch
                if s < 0:
                    raise OnnxImportError(f"graph input '{name}' has a negative dimension {s}")
                shape.append(s)
            if math.prod(shape) > MAX_ELEMENTS:
                raise OnnxImportError(f"graph input '{name}' claims shape {shape}")
            if elem == "FLOAT":
                t = TensorType(Float32Type(), shape)
            elif elem in ("UINT8", "INT8", "INT16", "UINT16"):
                # integer input: quantized with the parameters of the node that reads it
                t = TensorType(self.input_qtype(name, _STORAGE[elem]), shape)
            else:
                raise OnnxImportError(f"graph input '{name}' has element type {elem}; "
                                      "qd-import takes float32 or integer inputs")
            arg = self.block.insert_arg(t, k)
            self.env[name] = Act(arg)
        for node in g.nodes:
            if node.index in self.done:
                continue
            self.node = node
            try:
                self.dispatch(node)
            except _Unsupported as e:
                self.unsupported.append((node.op_type, str(e)))
                for o in node.outputs:
                    self.env[o] = _POISON
        self.node = None
        if self.unsupported:
            raise OnnxImportError(_format_unsupported(self.unsupported))
        results, names = [], []
        for name in g.outputs:
            v = self.env.get(name)
            if v is None and name in g.initializers:
                raise OnnxImportError(f"graph output '{name}' is a constant; qd-import needs computed outputs")
            if v is None:
                raise OnnxImportError(f"graph output '{name}' is not produced by any node")
            results.append(self.materialize(v, name))
            names.append(name)
        return results, [n for n, _, _ in g.inputs], names

    # (scale input, zero-point input) of each quantized operand, by the index of the operand
    _PARAMS_OF = {
        "DequantizeLinear": {0: (1, 2)}, "QLinearConv": {0: (1, 2)}, "QLinearMatMul": {0: (1, 2), 3: (4, 5)},
        "QGemm": {0: (1, 2)}, "QLinearAdd": {0: (1, 2), 3: (4, 5)}, "QLinearMul": {0: (1, 2), 3: (4, 5)},
        "QLinearSigmoid": {0: (1, 2)}, "QLinearLeakyRelu": {0: (1, 2)}, "QLinearSoftmax": {0: (1, 2)},
        "QLinearAveragePool": {0: (1, 2)}, "QLinearGlobalAveragePool": {0: (1, 2)},
    }

    def input_qtype(self, name: str, storage: str) -> UniformQuantizedType:
        """The quantization of an integer graph input: the parameters its first quantized reader gives
        it (other readers that give other parameters reinterpret the same integers)."""
        for c in self.g.consumers.get(name, []):
            if c < 0:
                continue
            node = self.g.nodes[c]
            saved, self.node = self.node, node
            try:
                slots = dict(self._PARAMS_OF.get(node.op_type, {}))
                if node.op_type == "QLinearConcat":
                    slots = {k: (k + 1, k + 2) for k in range(2, len(node.inputs), 3)}
                for k, (ks, kz) in slots.items():
                    if k < len(node.inputs) and node.inputs[k] == name:
                        return self.params(node, ks, kz, storage, (), "input")
            finally:
                self.node = saved
        raise OnnxImportError(f"graph input '{name}' is {storage[0] == 'u' and 'u' or ''}int{storage[1:]} but no "
                              "quantized operator (DequantizeLinear, QLinear*) reads it: its scale is unknown")

    def materialize(self, v, name: str) -> SSAValue:
        """A graph output as the model declares it (ONNX order, float for a DequantizeLinear)."""
        if isinstance(v, Deq):
            if not isinstance(v.src, Act):
                raise OnnxImportError(f"graph output '{name}' is a constant")
            a = self.retyped(v.src, v.qtype)
            x = self.logical(a)
            return self.emit(qnn.DequantizeOp, [x], TensorType(Float32Type(), list(qnn.shape_of(x))))
        if isinstance(v, Act):
            x = self.logical(v)
            return x  # a quantized output keeps its type (its stored integers are the model's)
        raise OnnxImportError(f"graph output '{name}' is a constant")

    def dispatch(self, node: _Node):
        g = self.g
        for k, i in enumerate(node.inputs):
            if i and self.env.get(i) is _POISON:
                for o in node.outputs:  # downstream of an unsupported node: nothing more to report
                    self.env[o] = _POISON
                return
        if node.domain not in ("", "ai.onnx", "com.microsoft"):
            raise _Unsupported(f"domain '{node.domain}'")
        handler = _HANDLERS.get(node.op_type)
        if handler is None:
            raise _Unsupported(None)
        first = self.env.get(node.inputs[0]) if node.inputs and node.inputs[0] else None
        if node.op_type in _INTEGER_OPS and isinstance(first, Act) and first.qtype is not None:
            outs = handler(self, node)  # data movement on integers (QOperator models)
            for name, v in zip(node.outputs, outs):
                self.env[name] = v
            return
        if node.op_type in _INTEGER_OPS and isinstance(first, Act) and first.qtype is None:
            outs = handler(self, node)  # data movement in float
            for name, v in zip(node.outputs, outs):
                self.env[name] = v
            return
        quantized_inputs = all(not (isinstance(self.env.get(i), Act) and self.env[i].qtype is None)
                               for i in node.inputs if i)
        if node.op_type in _FLOAT_BINARY and any(
                isinstance(v := self.env.get(i) or (Const(g.initializers[i]) if i in g.initializers else None), Const)
                and v.array.dtype.kind == "f" for i in node.inputs if i):
            quantized_inputs = False  # a float constant operand: the op in float, then QuantizeLinear
        unit = self.unit(node) if node.op_type in _QDQ_OPS and quantized_inputs else None
        if unit is None and node.op_type in _INTEGER_OPS and isinstance(first, Deq) and isinstance(first.src, Act):
            # float data movement on dequantized values, read by float ops or the graph's output:
            # the same values as moving the integers (monotonic dequantization), still dequantized
            self.env[node.inputs[0]] = self.retyped(first.src, first.qtype)
            try:
                outs = handler(self, node)
            finally:
                self.env[node.inputs[0]] = first
            for name, v in zip(node.outputs, outs):
                self.env[name] = Deq(v, v.qtype)
            return
        if node.op_type in _QDQ_OPS:
            if unit is None:
                if all(isinstance(self.env.get(i) or g.initializers.get(i) is not None and Const(g.initializers[i]), Const)
                       for i in node.inputs if i):
                    _fold_node(self, node)
                    return
                float_handler = _FLOAT_HANDLERS.get(node.op_type)
                if float_handler is None:
                    raise _Unsupported("in float (no QuantizeLinear after it)")
                self.remark("stays in float (its result is not quantized), as in ONNX Runtime")
                outs = float_handler(self, node)
                for name, v in zip(node.outputs, outs):
                    self.env[name] = v
                return
            acts, out_qs, q_nodes = unit
            fused = self.fusion.fused(self, node, out_qs)
            rounding = self.rounding_for(fused) if self.profile == "onnxruntime" else "onnx"
            if rounding == "onnx" and self.profile == "onnxruntime" and isinstance(fused, str):
                self.remark(f"ONNX Runtime runs it in float ({fused}): rounding = onnx")
            outs = handler(self, node, out_qs, rounding, acts)
            for qn, out in zip(q_nodes, outs):
                for q in qn:
                    self.done.add(q.index)
                    self.env[q.outputs[0]] = out
            return
        outs = handler(self, node)
        if outs is not None:
            for name, v in zip(node.outputs, outs):
                self.env[name] = v

    def unit(self, node: _Node):
        """For a float op between DequantizeLinear and QuantizeLinear: (activation clamp nodes,
        output types, the QuantizeLinear nodes per output), or None if it is not one."""
        g = self.g
        out_qs, q_nodes, acts = [], [], []
        for o in node.outputs:
            cons = g.consumers.get(o, [])
            chain = []
            while len(cons) == 1 and cons[0] >= 0 and g.nodes[cons[0]].op_type in ("Relu", "Clip") \
                    and node.op_type in _ACTIVATION_FUSERS:
                chain.append(g.nodes[cons[0]])
                cons = g.consumers.get(g.nodes[cons[0]].outputs[0], [])
            if not cons or any(c < 0 or g.nodes[c].op_type != "QuantizeLinear" for c in cons):
                return None
            qs = [g.nodes[c] for c in cons]
            types = [self.q_output_type(q) for q in qs]
            if any(t != types[0] for t in types):
                return None
            out_qs.append(types[0])
            q_nodes.append(qs)
            acts.append(chain)
        for chain in acts:
            for n in chain:
                self.done.add(n.index)
        return acts, out_qs, q_nodes

    def q_output_type(self, q: _Node) -> UniformQuantizedType:
        saved, self.node = self.node, q
        try:
            scale = self.const(self.input(q, 1, "y_scale"), "y_scale")
            zpv = self.input(q, 2, "y_zero_point", optional=True)
            zp = self.const(zpv, "y_zero_point") if zpv is not None else None
            storage = _NP_STORAGE.get(zp.dtype) if zp is not None else "u8"
            if zp is not None and storage is None:
                raise self.bad(f"y_zero_point has type {zp.dtype}, not a quantized integer type")
            if "output_dtype" in q.attrs and q.attrs["output_dtype"]:
                raise _Unsupported("output_dtype attribute")
            if np.asarray(scale).size != 1:
                raise _Unsupported("per-axis QuantizeLinear of an activation")
            qt = _qtype(scale, zp, storage, None, (), self)
            return self.as_uint8(qt) if self.s8_to_u8(q.outputs[0]) else qt
        finally:
            self.node = saved

    def s8_to_u8(self, name: str) -> bool:
        """Whether ONNX Runtime's default session (on x86) runs the int8 tensor `name`, the output of a
        QuantizeLinear, as uint8 with zero point + 128 (`QDQS8ToU8Transformer`): where the
        QuantizeLinear feeds exactly one DequantizeLinear that feeds one node (or the graph output)."""
        if self.profile != "onnxruntime":
            return False
        g = self.g
        cons = g.consumers.get(name, [])
        if len(cons) != 1 or cons[0] < 0 or g.nodes[cons[0]].op_type != "DequantizeLinear":
            return False
        dq = g.nodes[cons[0]]
        if len(g.consumers.get(dq.outputs[0], [])) != 1:
            return False
        zp_names = [n.inputs[2] if len(n.inputs) > 2 else "" for n in (dq,)]
        return all(z in g.initializers and g.initializers[z].dtype == np.int8 and g.initializers[z].size == 1
                   for z in zp_names)

    @staticmethod
    def as_uint8(qt: UniformQuantizedType) -> UniformQuantizedType:
        return UniformQuantizedType.per_tensor(float(qt.scale_array().reshape(-1)[0]),
                                               int(qt.zero_point_array().reshape(-1)[0]) + 128, storage="u8")


class _Poison:
    pass


_POISON = _Poison()
_INTEGER_OPS = {"MaxPool", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Pad", "Slice", "Split",
                "Resize", "Gather"}
_ACTIVATION_FUSERS = {"Conv", "Gemm", "MatMul", "Add", "Mul", "Sub", "AveragePool", "GlobalAveragePool",
                      "ConvTranspose"}


def _format_unsupported(items: list[tuple[str, str | None]]) -> str:
    counts = Counter(items)
    parts = []
    for (name, why), n in sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        parts.append(f"{name}{f' ({why})' if why else ''} x{n}")
    return "unsupported operators: " + ", ".join(parts)


# ======================================================================================
# Shape helpers
# ======================================================================================


def _pads_2d(imp: _Importer, node: _Node, in_hw, k_hw, strides, dilations) -> list[int]:
    """ONNX pads / auto_pad -> [top, bottom, left, right]."""
    auto = node.attrs.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        p = node.attrs.get("pads", [0, 0, 0, 0])
        if len(p) != 4:
            raise imp.bad(f"pads {p} must have 4 entries for a 2-D window")
        if any(v < 0 for v in p):
            raise _Unsupported("negative pads")
        return [p[0], p[2], p[1], p[3]]
    if auto == "VALID":
        return [0, 0, 0, 0]
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        out = []
        for size, k, s, d in zip(in_hw, k_hw, strides, dilations):
            eff = (k - 1) * d + 1
            o = (size + s - 1) // s
            total = max((o - 1) * s + eff - size, 0)
            small, big = total // 2, total - total // 2
            out += [small, big] if auto == "SAME_UPPER" else [big, small]
        return out
    raise imp.bad(f"auto_pad '{auto}' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER")


def _positive(imp, what, values) -> list[int]:
    for v in values:
        if v < 1:
            raise imp.bad(f"{what} {list(values)} must be >= 1")
    return list(values)


def _axis(imp, axis: int, rank: int, role: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise imp.bad(f"{role} {axis} is out of range for rank {rank}")
    return axis % rank


_TO_PHYSICAL = (0, 3, 1, 2)
"""Logical NCHW axis -> physical NHWC axis."""


def _phys_axis(a: Act, axis: int) -> int:
    return _TO_PHYSICAL[axis] if a.nhwc else axis


# ======================================================================================
# Quantize / Dequantize
# ======================================================================================


@_handles("QuantizeLinear")
def _quantize_linear(imp: _Importer, node: _Node):
    x = imp.input(node, 0, "x")
    if isinstance(x, Const):  # a float weight quantized in the graph (AddQDQPairToWeight): at import
        from qdialect.reference import onnxruntime_kernels as ort

        arr = np.asarray(x.array)
        if arr.dtype != np.float32:
            raise imp.bad(f"x has type {arr.dtype}; QuantizeLinear takes float32")
        zpv = imp.input(node, 2, "y_zero_point", optional=True)
        storage = imp.const(zpv, "y_zero_point").dtype if zpv is not None else np.dtype(np.uint8)
        scale = np.asarray(imp.const(imp.input(node, 1, "y_scale"), "y_scale"))
        per_axis = scale.ndim == 1 and scale.size > 1
        qt = imp.params(node, 1, 2, storage, arr.shape, "y", axis=node.attrs.get("axis", 1) if per_axis else None)
        return [Const(ort.quantize_linear(arr, out_q=qt.qparams()))]
    qt = imp.q_output_type(node)
    if isinstance(x, Deq):
        if not isinstance(x.src, Act):
            from qdialect.reference import onnxruntime_kernels as ort

            real = ort.dequantize_linear(x.src.array, x_q=x.qtype.qparams())
            return [Const(ort.quantize_linear(real, out_q=qt.qparams()))]
        a = imp.retyped(x.src, x.qtype)
        if a.qtype == qt:
            return [a]
        fused = imp.fusion.requantize_fused(imp, node, x.qtype, qt)
        rounding = imp.rounding_for(fused) if imp.profile == "onnxruntime" else "onnx"
        shape = list(qnn.shape_of(a.value))
        return [Act(imp.emit(qnn.RequantizeOp, [a.value], TensorType(qt, shape), {"rounding": rounding}), a.nhwc)]
    if isinstance(x, Act) and x.qtype is None:
        el = x.value.type.element_type
        if not isinstance(el, Float32Type):
            raise imp.bad(f"x is {el}; QuantizeLinear takes float32")
        shape = list(qnn.shape_of(x.value))
        return [Act(imp.emit(qnn.QuantizeOp, [x.value], TensorType(qt, shape), {"rounding": "onnx"}), x.nhwc)]
    raise imp.bad("x is already quantized (QuantizeLinear of a quantized tensor)")


@_handles("DequantizeLinear")
def _dequantize_linear(imp: _Importer, node: _Node):
    x = imp.input(node, 0, "x")
    axis = node.attrs.get("axis", 1)
    if "block_size" in node.attrs and node.attrs["block_size"]:
        raise _Unsupported("blocked quantization")
    if isinstance(x, Const):
        arr = x.array
        storage = _NP_STORAGE.get(arr.dtype)
        if storage is None:
            raise imp.bad(f"x has type {arr.dtype}, not a quantized integer type")
        scale = imp.const(imp.input(node, 1, "x_scale"), "x_scale")
        per_axis = np.asarray(scale).ndim == 1 and np.asarray(scale).size > 1
        qt = imp.params(node, 1, 2, storage, arr.shape, "x", axis=axis if per_axis else None)
        return [Deq(x, qt)]
    if isinstance(x, Act):
        el = x.value.type.element_type
        if x.qtype is not None:
            storage = x.qtype.storage
        elif isinstance(el, IntegerType):
            storage = None
        else:
            raise imp.bad("x is a float tensor; DequantizeLinear takes integers")
        scale = imp.const(imp.input(node, 1, "x_scale"), "x_scale")
        if np.asarray(scale).size != 1:
            raise _Unsupported("per-axis DequantizeLinear of an activation")
        if storage is None:
            # an integer graph input: it becomes quantized here
            zpv = imp.input(node, 2, "x_zero_point", optional=True)
            zp = imp.const(zpv, "x_zero_point") if zpv is not None else None
            storage = _NP_STORAGE.get(zp.dtype) if zp is not None else "u8"
            width = el.width.data
            if storage is None or int(storage[1:]) != width:
                raise imp.bad(f"x is i{width} but its zero point is {zp.dtype if zp is not None else 'absent'}")
            qt = _qtype(scale, zp, storage, None, (), imp)
            return [Deq(_integer_input_as_quantized(imp, x, qt), qt)]
        if storage == "u8" and imp.s8_to_u8(node.inputs[0]):
            return [Deq(x, imp.as_uint8(imp.params(node, 1, 2, "i8", (), "x")))]
        qt = imp.params(node, 1, 2, storage, (), "x")
        return [Deq(x, qt)]
    raise imp.bad("x is already dequantized (DequantizeLinear of a DequantizeLinear output)")


def _integer_input_as_quantized(imp: _Importer, x: Act, qt: UniformQuantizedType) -> Act:
    from qdialect.dialects.quant import StorageCastOp

    shape = list(qnn.shape_of(x.value))
    return Act(imp.add(StorageCastOp(x.value, TensorType(qt, shape))).results[0], x.nhwc)


# ======================================================================================
# Weighted ops
# ======================================================================================


def _bias_const(imp: _Importer, bias: np.ndarray | None, x_q, w_q, channels: int,
                bias_scales: np.ndarray | None = None) -> SSAValue:
    """The int32 bias as a qnn.constant of scale input_scale * weight_scale[c]; a QDQ model's own bias
    scales (its DequantizeLinear's, which ORT's float path multiplies by) when they agree with that
    product to 1e-5 (quantize_static forms it in float64 and rounds once)."""
    in_s = np.float32(float(x_q.scale_array()))
    w_s = np.broadcast_to(w_q.scale_array().astype(np.float32), (channels,))
    expected = (in_s * w_s).astype(np.float32).astype(np.float64)
    if not np.all(np.isfinite(expected) & (expected > 0)):
        raise imp.bad("input scale * weight scale is not a positive float32 (bias scale underflows)")
    if bias_scales is not None:
        own = np.broadcast_to(np.asarray(bias_scales, np.float64).reshape(-1), (channels,))
        if np.all(np.abs(own - expected) <= 1e-5 * expected):
            expected = own.astype(np.float64)
    if w_q.is_per_axis and channels > 1:
        qt = UniformQuantizedType.per_axis(expected, 0, axis=0, storage="i32")
    else:
        qt = UniformQuantizedType.per_tensor(float(expected[0]), 0, storage="i32")
    if bias is None:
        bias = np.zeros(channels, np.int32)
    bias = np.asarray(bias)
    if bias.dtype != np.int32:
        raise imp.bad(f"bias has type {bias.dtype}; a quantized bias is int32")
    if bias.shape != (channels,):
        raise imp.bad(f"bias shape {list(bias.shape)} must be [{channels}]")
    return imp.qconst(bias, qt)


def _out_bounds(imp: _Importer, chain: list[_Node], out_q: UniformQuantizedType) -> dict:
    """Relu / Clip between an op and its QuantizeLinear: clamp bounds in the output's storage
    domain (quantizing is monotonic, so clamping the integers is the same as clamping the reals)."""
    if not chain:
        return {}
    from qdialect.reference import onnxruntime_kernels as ort

    lo_r, hi_r = -np.inf, np.inf
    for n in chain:
        if n.op_type == "Relu":
            lo_r = max(lo_r, 0.0)
        else:  # Clip: attributes (opset < 11) or inputs
            saved, imp.node = imp.node, n
            try:
                if imp.g.opset < 11:
                    a, b = n.attrs.get("min", -np.inf), n.attrs.get("max", np.inf)
                else:
                    av = imp.input(n, 1, "min", optional=True)
                    bv = imp.input(n, 2, "max", optional=True)
                    a = float(imp.const(av, "min").reshape(-1)[0]) if av is not None else -np.inf
                    b = float(imp.const(bv, "max").reshape(-1)[0]) if bv is not None else np.inf
            finally:
                imp.node = saved
            lo_r, hi_r = max(lo_r, a), min(hi_r, b)
    q = out_q.qparams()
    lo, hi = out_q.storage_range()
    amin = lo if lo_r == -np.inf else int(ort.quantize_linear(np.array([lo_r], np.float32), out_q=q)[0])
    amax = hi if hi_r == np.inf else int(ort.quantize_linear(np.array([hi_r], np.float32), out_q=q)[0])
    attrs = {}
    if amin > lo:
        attrs["act_min"] = amin
    if amax < hi:
        attrs["act_max"] = amax
    if amin > amax:
        raise imp.bad(f"Clip bounds [{lo_r}, {hi_r}] are empty")
    return attrs


def conv(imp: _Importer, x: Act, w: np.ndarray, w_q: UniformQuantizedType, bias, out_q, node: _Node,
         rounding: str, clamp: dict, bias_scales: np.ndarray | None = None) -> Act:
    """ONNX Conv (NCHW, OIHW weights, groups) as qnn.conv2d / depthwise_conv2d (or per-group convs)."""
    xv = imp.nhwc(x)
    n, h, wd, c = qnn.shape_of(xv)
    if w.ndim != 4:
        raise _Unsupported(f"{w.ndim - 2}-D convolution")
    m, cg, kh, kw = w.shape
    group = int(node.attrs.get("group", 1))
    if group < 1 or c % group or m % group or cg * group != c:
        raise imp.bad(f"group {group} does not fit input channels {c}, weights {list(w.shape)}")
    ks = node.attrs.get("kernel_shape")
    if ks is not None and list(ks) != [kh, kw]:
        raise imp.bad(f"kernel_shape {ks} does not match weights {list(w.shape)}")
    strides = _positive(imp, "strides", node.attrs.get("strides", [1, 1]))
    dil = _positive(imp, "dilations", node.attrs.get("dilations", [1, 1]))
    if len(strides) != 2 or len(dil) != 2:
        raise imp.bad("strides and dilations must have 2 entries")
    pads = _pads_2d(imp, node, (h, wd), (kh, kw), strides, dil)
    if w_q.is_per_axis and w_q.axis != 0:
        raise imp.bad(f"weights are quantized along axis {w_q.axis}; Conv's per-channel axis is 0")
    oh = (h + pads[0] + pads[1] - ((kh - 1) * dil[0] + 1)) // strides[0] + 1
    ow = (wd + pads[2] + pads[3] - ((kw - 1) * dil[1] + 1)) // strides[1] + 1
    if oh < 1 or ow < 1:
        raise imp.bad(f"the window does not fit the input ({h}x{wd}, kernel {kh}x{kw}, pads {pads})")
    attrs = dict(strides=strides, dilations=dil, padding=pads, rounding=rounding, **clamp)
    rtype = TensorType(out_q, [n, oh, ow, m])
    if group == 1:
        wv = imp.qconst(np.ascontiguousarray(w.transpose(0, 2, 3, 1)), w_q)
        b = _bias_const(imp, bias, x.qtype if x.nhwc else qnn.qtype(xv), w_q, m, bias_scales)
        return Act(imp.emit(qnn.Conv2DOp, [xv, wv, b], rtype, attrs), True)
    if cg == 1:  # depthwise, channel multiplier m / c
        wq_dw = w_q
        if w_q.is_per_axis:
            wq_dw = UniformQuantizedType.per_axis(w_q.scale_array(), w_q.zero_point_array(), axis=3,
                                                  storage=w_q.storage)
        wv = imp.qconst(np.ascontiguousarray(w.transpose(1, 2, 3, 0)), wq_dw)
        b = _bias_const(imp, bias, qnn.qtype(xv), w_q, m, bias_scales)
        return Act(imp.emit(qnn.DepthwiseConv2DOp, [xv, wv, b], rtype, attrs), True)
    # grouped: one convolution per group on its slice of channels, concatenated
    mg = m // group
    outs = []
    x_q = qnn.qtype(xv)
    for k in range(group):
        xs = imp.emit(qnn.SliceOp, [xv], TensorType(x_q, [n, h, wd, cg]),
                      {"begin": [0, 0, 0, k * cg], "end": [n, h, wd, (k + 1) * cg], "strides": [1, 1, 1, 1]})
        wk = w[k * mg:(k + 1) * mg]
        if w_q.is_per_axis:
            wqk = UniformQuantizedType.per_axis(w_q.scale_array()[k * mg:(k + 1) * mg],
                                                w_q.zero_point_array()[k * mg:(k + 1) * mg], axis=0,
                                                storage=w_q.storage) if mg > 1 else UniformQuantizedType.per_tensor(
                float(w_q.scale_array()[k * mg]), int(w_q.zero_point_array()[k * mg]), storage=w_q.storage)
        else:
            wqk = w_q
        wv = imp.qconst(np.ascontiguousarray(wk.transpose(0, 2, 3, 1)), wqk)
        group_scales = None
        if bias_scales is not None and np.asarray(bias_scales).size == m:
            group_scales = np.asarray(bias_scales).reshape(-1)[k * mg:(k + 1) * mg]
        b = _bias_const(imp, None if bias is None else np.asarray(bias)[k * mg:(k + 1) * mg], x_q, wqk, mg,
                        group_scales)
        outs.append(imp.emit(qnn.Conv2DOp, [xs, wv, b], TensorType(out_q, [n, oh, ow, mg]), attrs))
    return Act(imp.emit(qnn.ConcatenationOp, outs, rtype, {"axis": 3}), True)


def matmul_const(imp: _Importer, x: Act, w_kn: np.ndarray, w_q: UniformQuantizedType, bias, out_q,
                 rounding: str, clamp: dict, bias_scales: np.ndarray | None = None) -> Act:
    """x [.., K] @ W [K, N] (+ bias) with constant W: qnn.fully_connected, weights [N, K]."""
    xv = imp.logical(x)
    xs = qnn.shape_of(xv)
    if w_kn.ndim != 2:
        raise _Unsupported(f"MatMul with a rank-{w_kn.ndim} constant")
    k, nout = w_kn.shape
    if not xs or xs[-1] != k:
        raise imp.bad(f"input shape {list(xs)} does not match weights [{k}, {nout}]")
    if w_q.is_per_axis:
        if w_q.axis != 1:
            raise imp.bad(f"weights are quantized along axis {w_q.axis}; per-column (axis 1) is supported")
        wq_t = UniformQuantizedType.per_axis(w_q.scale_array(), w_q.zero_point_array(), axis=0, storage=w_q.storage)
    else:
        wq_t = w_q
    wv = imp.qconst(np.ascontiguousarray(w_kn.T), wq_t)
    b = _bias_const(imp, bias, x.qtype, wq_t, nout, bias_scales)
    attrs = dict(rounding=rounding, **clamp)
    if len(xs) != 2:
        attrs["keep_num_dims"] = True
    if "keep_num_dims" in attrs and "keep_num_dims" not in qnn.FullyConnectedOp.ATTRS:
        flat = imp.emit(qnn.ReshapeOp, [xv], TensorType(x.qtype, [math.prod(xs[:-1]), k]))
        y = imp.emit(qnn.FullyConnectedOp, [flat, wv, b], TensorType(out_q, [math.prod(xs[:-1]), nout]),
                     {kk: vv for kk, vv in attrs.items() if kk != "keep_num_dims"})
        return Act(imp.emit(qnn.ReshapeOp, [y], TensorType(out_q, [*xs[:-1], nout])))
    return Act(imp.emit(qnn.FullyConnectedOp, [xv, wv, b], TensorType(out_q, [*xs[:-1], nout]), attrs))


def matmul_acts(imp: _Importer, a: Act, b: Act, out_q, rounding: str, clamp: dict) -> Act:
    av, bv = imp.logical(a), imp.logical(b)
    sa, sb = qnn.shape_of(av), qnn.shape_of(bv)
    if len(sa) < 2 or len(sb) < 2:
        raise _Unsupported("MatMul of a 1-D operand")
    batch = _broadcast(imp, sa[:-2], sb[:-2])
    return Act(imp.emit(qnn.BatchMatmulOp, [av, bv], TensorType(out_q, [*batch, sa[-2], sb[-1]]),
                        dict(rounding=rounding, **clamp)))


@_handles("Conv", qdq=True)
def _conv(imp: _Importer, node: _Node, out_qs, rounding, acts):
    x = imp.qact(imp.input(node, 0, "X"), "X")
    w, w_q = imp.qweights(imp.input(node, 1, "W"), "W")
    bv = imp.input(node, 2, "B", optional=True)
    bias = bias_scales = None
    if bv is not None:
        bias, b_q = imp.qweights(bv, "B")
        bias_scales = b_q.scale_array()
    return [conv(imp, x, w, w_q, bias, out_qs[0], node, rounding, _out_bounds(imp, acts[0], out_qs[0]),
                 bias_scales)]


@_handles("QLinearConv")
def _qlinear_conv(imp: _Importer, node: _Node):
    xa = imp.input(node, 0, "x")
    if not isinstance(xa, Act) or xa.qtype is None:
        raise imp.bad("x must be a quantized run-time tensor")
    x_q = imp.params(node, 1, 2, xa.qtype.storage, (), "x")
    x = imp.retyped(xa, x_q)
    w = imp.const(imp.input(node, 3, "w"), "w")
    w_q = imp.params(node, 4, 5, w.dtype, w.shape, "w", axis=0)
    y_q = imp.params(node, 6, 7, _zp_storage(imp, node, 7, xa.qtype.storage), (), "y")
    bv = imp.input(node, 8, "B", optional=True)
    bias = imp.const(bv, "B") if bv is not None else None
    return [conv(imp, x, w, w_q, bias, y_q, node, "onnxruntime", {})]


def _zp_storage(imp, node, k, default):
    """The storage of a QLinear* node's output: its zero point's type (uint8 or int8)."""
    zpv = imp.input(node, k, "zero point", optional=True)
    if zpv is None:
        return default
    dtype = imp.const(zpv, "output zero point").dtype
    if dtype not in (np.dtype(np.uint8), np.dtype(np.int8)):
        raise imp.bad(f"output zero point has type {dtype}; {node.op_type} writes uint8 or int8")
    return dtype


@_handles("Gemm", qdq=True)
def _gemm(imp: _Importer, node: _Node, out_qs, rounding, acts):
    a = imp.input(node, 0, "A")
    x = imp.qact(a, "A")
    if node.attrs.get("transA", 0):
        raise _Unsupported("transA = 1")
    if node.attrs.get("alpha", 1.0) != 1.0 or node.attrs.get("beta", 1.0) != 1.0:
        raise _Unsupported("alpha or beta other than 1")
    w, w_q = imp.qweights(imp.input(node, 1, "B"), "B")
    if node.attrs.get("transB", 0):
        w = w.T
        if w_q.is_per_axis:
            w_q = UniformQuantizedType.per_axis(w_q.scale_array(), w_q.zero_point_array(),
                                                axis=1 - w_q.axis, storage=w_q.storage)
    cv = imp.input(node, 2, "C", optional=True)
    bias = bias_scales = None
    if cv is not None:
        bias, c_q = imp.qweights(cv, "C")
        bias, bias_scales = np.asarray(bias).reshape(-1), c_q.scale_array()
    return [matmul_const(imp, x, w, w_q, bias, out_qs[0], rounding, _out_bounds(imp, acts[0], out_qs[0]),
                         bias_scales)]


@_handles("MatMul", qdq=True)
def _matmul(imp: _Importer, node: _Node, out_qs, rounding, acts):
    a = imp.qact(imp.input(node, 0, "A"), "A")
    bv = imp.input(node, 1, "B")
    clamp = _out_bounds(imp, acts[0], out_qs[0])
    if isinstance(bv, Deq) and isinstance(bv.src, Const):
        w, w_q = imp.qweights(bv, "B")
        return [matmul_const(imp, a, w, w_q, None, out_qs[0], rounding, clamp)]
    b = imp.qact(bv, "B")
    return [matmul_acts(imp, a, b, out_qs[0], rounding, clamp)]


@_handles("QLinearMatMul")
def _qlinear_matmul(imp: _Importer, node: _Node):
    av = imp.input(node, 0, "a")
    if not isinstance(av, Act) or av.qtype is None:
        raise imp.bad("a must be a quantized run-time tensor")
    a = imp.retyped(av, imp.params(node, 1, 2, av.qtype.storage, (), "a"))
    bv = imp.input(node, 3, "b")
    y_q = imp.params(node, 6, 7, _zp_storage(imp, node, 7, av.qtype.storage), (), "y")
    if isinstance(bv, Const):
        w = bv.array
        w_q = imp.params(node, 4, 5, w.dtype, w.shape, "b", axis=1)
        return [matmul_const(imp, a, w, w_q, None, y_q, "onnxruntime", {})]
    b = imp.retyped(imp.qact(bv, "b"), imp.params(node, 4, 5, bv.qtype.storage, (), "b"))
    return [matmul_acts(imp, a, b, y_q, "onnxruntime", {})]


@_handles("QGemm")
def _qgemm(imp: _Importer, node: _Node):
    av = imp.input(node, 0, "A")
    if not isinstance(av, Act) or av.qtype is None:
        raise imp.bad("A must be a quantized run-time tensor")
    if node.attrs.get("transA", 0):
        raise _Unsupported("transA = 1")
    if node.attrs.get("alpha", 1.0) != 1.0:
        raise _Unsupported("alpha other than 1")
    a = imp.retyped(av, imp.params(node, 1, 2, av.qtype.storage, (), "A"))
    w = imp.const(imp.input(node, 3, "B"), "B")
    trans_b = node.attrs.get("transB", 0)
    w_q = imp.params(node, 4, 5, w.dtype, w.shape, "B", axis=0 if trans_b else 1)
    if trans_b:
        w = w.T
        if w_q.is_per_axis:
            w_q = UniformQuantizedType.per_axis(w_q.scale_array(), w_q.zero_point_array(), axis=1,
                                                storage=w_q.storage)
    cv = imp.input(node, 6, "C", optional=True)
    bias = imp.const(cv, "C").reshape(-1) if cv is not None else None
    if len(node.inputs) < 8 or not node.inputs[7]:
        raise _Unsupported("float output (no y_scale)")
    y_q = imp.params(node, 7, 8, _zp_storage(imp, node, 8, av.qtype.storage), (), "y")
    return [matmul_const(imp, a, w, w_q, bias, y_q, "onnxruntime", {})]


# ======================================================================================
# Elementwise
# ======================================================================================


def _broadcast_pair(imp: _Importer, a: Act, b: Act) -> tuple[SSAValue, SSAValue, bool]:
    """Both operands in one layout (NHWC when either is), ranks aligned as numpy broadcasts."""
    if a.nhwc == b.nhwc:
        return a.value, b.value, a.nhwc
    # one is NHWC: bring the other there (expanding a lower-rank operand to rank 4 first)
    out = []
    for v in (a, b):
        if v.nhwc:
            out.append(v.value)
            continue
        s = qnn.shape_of(v.value)
        val = v.value
        if len(s) < 4:
            full = [1] * (4 - len(s)) + list(s)
            val = imp.emit(qnn.ReshapeOp, [val], TensorType(val.type.element_type, full))
        out.append(imp.transpose(val, (0, 2, 3, 1)))
    return out[0], out[1], True


def _broadcast(imp: _Importer, a, b) -> list[int]:
    try:
        return qnn.broadcast_shape(a, b)
    except ValueError:
        raise imp.bad(f"operand shapes {list(a)} and {list(b)} do not broadcast") from None


def _const_operand(imp: _Importer, v, other: Act, role: str) -> Act:
    """A constant operand of a binary op (a DequantizeLinear of an initializer) as a qnn.constant,
    laid out like the other operand."""
    arr, qt = imp.qweights(v, role)
    if qt.is_per_axis:
        raise _Unsupported(f"per-axis {role}")
    if other.nhwc:
        arr = np.asarray(arr)
        if arr.ndim == 4:
            arr = arr.transpose(0, 2, 3, 1)
        elif arr.ndim in (1, 2, 3) and arr.size > 1:
            full = arr.reshape((1,) * (4 - arr.ndim) + arr.shape)
            arr = full.transpose(0, 2, 3, 1)
    return Act(imp.qconst(np.ascontiguousarray(arr), qt), other.nhwc)


def binary(imp: _Importer, cls, a: Act, b: Act, out_q, rounding: str, clamp: dict) -> Act:
    av, bv, nhwc = _broadcast_pair(imp, a, b)
    shape = _broadcast(imp, qnn.shape_of(av), qnn.shape_of(bv))
    return Act(imp.emit(cls, [av, bv], TensorType(out_q, shape), dict(rounding=rounding, **clamp)), nhwc)


_BINARY = {"Add": qnn.AddOp, "Sub": qnn.SubOp, "Mul": qnn.MulOp}


@_handles("Add", "Sub", "Mul", qdq=True)
def _binary_qdq(imp: _Importer, node: _Node, out_qs, rounding, acts):
    va, vb = imp.input(node, 0, "A"), imp.input(node, 1, "B")
    a_const = isinstance(va, Deq) and isinstance(va.src, Const)
    b_const = isinstance(vb, Deq) and isinstance(vb.src, Const)
    if a_const and b_const:
        raise _Unsupported("two constant operands")
    a = imp.qact(va, "A") if not a_const else None
    b = imp.qact(vb, "B") if not b_const else None
    if a is None:
        a = _const_operand(imp, va, b, "A")
    if b is None:
        b = _const_operand(imp, vb, a, "B")
    return [binary(imp, _BINARY[node.op_type], a, b, out_qs[0], rounding, _out_bounds(imp, acts[0], out_qs[0]))]


def _qlinear_operand(imp: _Importer, node: _Node, k: int, role: str, other: Act | None) -> Act:
    v = imp.input(node, k, role)
    if isinstance(v, Const):
        qt = imp.params(node, k + 1, k + 2, v.array.dtype, v.array.shape, role)
        return _const_operand(imp, Deq(v, qt), other, role) if other is not None else None
    if not isinstance(v, Act) or v.qtype is None:
        raise imp.bad(f"{role} must be a quantized tensor")
    return imp.retyped(v, imp.params(node, k + 1, k + 2, v.qtype.storage, (), role))


@_handles("QLinearAdd", "QLinearMul")
def _qlinear_binary(imp: _Importer, node: _Node):
    va, vb = imp.input(node, 0, "A"), imp.input(node, 3, "B")
    if isinstance(va, Const) and isinstance(vb, Const):
        raise _Unsupported("two constant operands")
    a = _qlinear_operand(imp, node, 0, "A", None) if not isinstance(va, Const) else None
    b = _qlinear_operand(imp, node, 3, "B", None) if not isinstance(vb, Const) else None
    if a is None:
        a = _qlinear_operand(imp, node, 0, "A", b)
    if b is None:
        b = _qlinear_operand(imp, node, 3, "B", a)
    storage = a.qtype.storage
    y_q = imp.params(node, 6, 7, _zp_storage(imp, node, 7, storage), (), "C")
    cls = qnn.AddOp if node.op_type == "QLinearAdd" else qnn.MulOp
    return [binary(imp, cls, a, b, y_q, "onnxruntime", {})]


# ======================================================================================
# Activations
# ======================================================================================


def unary(imp: _Importer, cls, x: Act, out_q, attrs: dict) -> Act:
    shape = list(qnn.shape_of(x.value))
    return Act(imp.emit(cls, [x.value], TensorType(out_q, shape), attrs), x.nhwc)


_UNARY = {"Sigmoid": qnn.LogisticOp, "Tanh": qnn.TanhOp, "HardSwish": qnn.HardSwishOp,
          "HardSigmoid": qnn.HardSigmoidOp}


@_handles(*_UNARY, qdq=True)
def _unary_qdq(imp: _Importer, node: _Node, out_qs, rounding, acts):
    x = imp.qact(imp.input(node, 0, "X"), "X")
    attrs = {"rounding": rounding}
    if node.op_type == "HardSigmoid":
        attrs["alpha"] = float(np.float32(node.attrs.get("alpha", 0.2)))
        attrs["beta"] = float(np.float32(node.attrs.get("beta", 0.5)))
    return [unary(imp, _UNARY[node.op_type], x, out_qs[0], attrs)]


@_handles("LeakyRelu", qdq=True)
def _leaky_relu(imp: _Importer, node: _Node, out_qs, rounding, acts):
    x = imp.qact(imp.input(node, 0, "X"), "X")
    alpha = float(np.float32(node.attrs.get("alpha", 0.01)))
    return [unary(imp, qnn.LeakyReluOp, x, out_qs[0], {"rounding": rounding, "alpha": alpha})]


@_handles("Relu", "Clip", qdq=True)
def _relu_clip(imp: _Importer, node: _Node, out_qs, rounding, acts):
    x = imp.qact(imp.input(node, 0, "X"), "X")
    clamp = _out_bounds(imp, [node] + acts[0], out_qs[0])
    out_q = out_qs[0]
    if x.qtype != out_q:
        y = unary(imp, qnn.RequantizeOp, x, out_q, {"rounding": rounding})
        x = y
    if not clamp:
        return [x]
    lo, hi = out_q.storage_range()
    return [unary(imp, qnn.ClampOp, x, out_q, {"act_min": clamp.get("act_min", lo),
                                               "act_max": clamp.get("act_max", hi)})]


@_handles("QLinearSigmoid", "QLinearLeakyRelu")
def _qlinear_unary(imp: _Importer, node: _Node):
    xv = imp.input(node, 0, "X")
    if not isinstance(xv, Act) or xv.qtype is None:
        raise imp.bad("X must be a quantized tensor")
    x = imp.retyped(xv, imp.params(node, 1, 2, xv.qtype.storage, (), "X"))
    y_q = imp.params(node, 3, 4, _zp_storage(imp, node, 4, xv.qtype.storage), (), "Y")
    if node.op_type == "QLinearSigmoid":
        return [unary(imp, qnn.LogisticOp, x, y_q, {"rounding": "onnxruntime"})]
    alpha = float(np.float32(node.attrs.get("alpha", 0.01)))
    return [unary(imp, qnn.LeakyReluOp, x, y_q, {"rounding": "onnxruntime", "alpha": alpha})]


@_handles("Softmax", qdq=True)
def _softmax(imp: _Importer, node: _Node, out_qs, rounding, acts):
    x = imp.qact(imp.input(node, 0, "input"), "input")
    return [softmax(imp, node, x, out_qs[0], rounding)]


def softmax(imp: _Importer, node: _Node, x: Act, out_q, rounding: str) -> Act:
    shape = x.logical_shape
    rank = len(shape)
    axis = _axis(imp, node.attrs.get("axis", -1 if imp.g.opset >= 13 else 1), rank)
    if imp.g.opset < 13 and axis != rank - 1:
        raise _Unsupported("opset < 13 softmax over a flattened tail")
    xv = x.value
    nhwc = x.nhwc
    if _phys_axis(x, axis) != rank - 1:
        xv, nhwc = imp.logical(x), False
        if axis != rank - 1:
            raise _Unsupported(f"softmax over axis {axis} of rank {rank}")
    return Act(imp.emit(qnn.SoftmaxOp, [xv], TensorType(out_q, list(qnn.shape_of(xv))),
                        {"beta": 1.0, "rounding": rounding}), nhwc)


@_handles("QLinearSoftmax")
def _qlinear_softmax(imp: _Importer, node: _Node):
    xv = imp.input(node, 0, "X")
    if not isinstance(xv, Act) or xv.qtype is None:
        raise imp.bad("X must be a quantized tensor")
    x = imp.retyped(xv, imp.params(node, 1, 2, xv.qtype.storage, (), "X"))
    y_q = imp.params(node, 3, 4, _zp_storage(imp, node, 4, xv.qtype.storage), (), "Y")
    return [softmax(imp, node, x, y_q, "onnxruntime")]


# ======================================================================================
# Pooling and reductions
# ======================================================================================


def _pool(imp: _Importer, node: _Node, x: Act, out_q, rounding: str, kind: str, clamp: dict) -> Act:
    xv = imp.nhwc(x)
    n, h, w, c = qnn.shape_of(xv)
    if kind == "global":
        kernel, strides, pads = [h, w], [1, 1], [0, 0, 0, 0]
    else:
        kernel = node.attrs.get("kernel_shape")
        if kernel is None or len(kernel) != 2:
            raise _Unsupported("a pooling window that is not 2-D")
        kernel = _positive(imp, "kernel_shape", kernel)
        strides = _positive(imp, "strides", node.attrs.get("strides", [1, 1]))
        if len(strides) != 2:
            raise imp.bad(f"strides {strides} must have 2 entries for a 2-D window")
        dil = node.attrs.get("dilations", [1, 1])
        if list(dil) != [1, 1]:
            raise _Unsupported("dilated pooling")
        if node.attrs.get("ceil_mode", 0):
            raise _Unsupported("ceil_mode = 1")
        pads = _pads_2d(imp, node, (h, w), kernel, strides, (1, 1))
    oh = (h + pads[0] + pads[1] - kernel[0]) // strides[0] + 1
    ow = (w + pads[2] + pads[3] - kernel[1]) // strides[1] + 1
    attrs = dict(kernel=kernel, strides=strides, padding=pads, **clamp)
    if kind == "max":
        if node.attrs.get("storage_order", 0):
            raise _Unsupported("storage_order = 1")
        if len(node.outputs) > 1 and node.outputs[1]:
            raise _Unsupported("the Indices output")
        y = imp.emit(qnn.MaxPool2DOp, [xv], TensorType(xv.type.element_type, [n, oh, ow, c]), attrs)
        if out_q is not None and qnn.qtype(xv) != out_q:
            y = imp.emit(qnn.RequantizeOp, [y], TensorType(out_q, [n, oh, ow, c]), {"rounding": rounding})
        return Act(y, True)
    if kind == "global":
        y = imp.emit(qnn.MeanOp, [xv], TensorType(out_q, [n, 1, 1, c]),
                     {"axes": [1, 2], "keep_dims": True, "rounding": rounding, **clamp})
        return Act(y, True)
    if node.attrs.get("count_include_pad", 0) and any(pads):
        # padded taps count: pad with the zero point (real 0), then average whole windows
        x_q = qnn.qtype(xv)
        padded = [n, h + pads[0] + pads[1], w + pads[2] + pads[3], c]
        xv = imp.emit(qnn.PadOp, [xv], TensorType(x_q, padded),
                      {"paddings": [0, 0, pads[0], pads[1], pads[2], pads[3], 0, 0],
                       "pad_value": int(x_q.zero_point_array().reshape(-1)[0])})
        attrs["padding"] = [0, 0, 0, 0]
    attrs["rounding"] = rounding
    y = imp.emit(qnn.AvgPool2DOp, [xv], TensorType(out_q, [n, oh, ow, c]), attrs)
    return Act(y, True)


@_handles("MaxPool", qdq=True)
def _maxpool(imp: _Importer, node: _Node, out_qs=None, rounding="onnx", acts=None):
    if out_qs is None:  # MaxPool on a quantized tensor (QOperator models run it on integers), or in float
        x = imp.input(node, 0, "X")
        if not isinstance(x, Act):
            raise _Unsupported("on a constant")
        return [_pool(imp, node, x, x.qtype, "onnxruntime", "max", {})]
    x = imp.qact(imp.input(node, 0, "X"), "X")
    return [_pool(imp, node, x, out_qs[0], rounding, "max", {})]


@_handles("AveragePool", "GlobalAveragePool", qdq=True)
def _avgpool(imp: _Importer, node: _Node, out_qs, rounding, acts):
    x = imp.qact(imp.input(node, 0, "X"), "X")
    kind = "global" if node.op_type == "GlobalAveragePool" else "avg"
    return [_pool(imp, node, x, out_qs[0], rounding, kind, _out_bounds(imp, acts[0], out_qs[0]))]


@_handles("QLinearAveragePool", "QLinearGlobalAveragePool")
def _qlinear_pool(imp: _Importer, node: _Node):
    xv = imp.input(node, 0, "X")
    if not isinstance(xv, Act) or xv.qtype is None:
        raise imp.bad("X must be a quantized tensor")
    if node.attrs.get("channels_last", 0):
        raise _Unsupported("channels_last = 1")
    x = imp.retyped(xv, imp.params(node, 1, 2, xv.qtype.storage, (), "X"))
    y_q = imp.params(node, 3, 4, _zp_storage(imp, node, 4, xv.qtype.storage), (), "Y")
    kind = "global" if node.op_type == "QLinearGlobalAveragePool" else "avg"
    return [_pool(imp, node, x, y_q, "onnxruntime", kind, {})]


# ======================================================================================
# Concatenation and data movement
# ======================================================================================


def concat(imp: _Importer, xs: list[Act], axis: int, out_q, rounding: str) -> Act:
    rank = len(xs[0].logical_shape)
    axis = _axis(imp, axis, rank)
    logical = [list(x.logical_shape) for x in xs]
    if any(len(s) != rank or s[:axis] + s[axis + 1:] != logical[0][:axis] + logical[0][axis + 1:] for s in logical):
        raise imp.bad(f"input shapes {logical} differ outside axis {axis}")
    if all(x.nhwc for x in xs) or not any(x.nhwc for x in xs):
        vals, nhwc = [x.value for x in xs], xs[0].nhwc
    else:
        vals, nhwc = [imp.nhwc(x) for x in xs], True
    pa = _TO_PHYSICAL[axis] if nhwc else axis
    shapes = [qnn.shape_of(v) for v in vals]
    out = list(shapes[0])
    out[pa] = sum(s[pa] for s in shapes)
    attrs = {"axis": pa, "rounding": rounding}
    return Act(imp.emit(qnn.ConcatenationOp, vals, TensorType(out_q, out), attrs), nhwc)


def _concat_operand(imp: _Importer, v, role: str) -> Act:
    """A Concat input: a quantized activation, or a quantized constant (a ViT's class token) as a
    qnn.constant in ONNX order."""
    if isinstance(v, Deq) and isinstance(v.src, Const):
        if v.qtype.axis is not None:
            raise _Unsupported(f"a per-axis quantized constant {role}")
        return Act(imp.qconst(np.asarray(v.src.array), v.qtype))
    return imp.qact(v, role)


@_handles("Concat", qdq=True)
def _concat(imp: _Importer, node: _Node, out_qs, rounding, acts):
    xs = [_concat_operand(imp, imp.input(node, k, f"input {k}"), f"input {k}") for k in range(len(node.inputs))]
    return [concat(imp, xs, node.attrs.get("axis", 0), out_qs[0], rounding)]


@_handles("QLinearConcat")
def _qlinear_concat(imp: _Importer, node: _Node):
    y_q = imp.params(node, 0, 1, imp.const(imp.input(node, 1, "Y zero point"), "Y zero point").dtype, (), "Y")
    xs = []
    for k in range(2, len(node.inputs), 3):
        v = imp.input(node, k, f"input {k}")
        if isinstance(v, Const) and np.asarray(v.array).dtype in (np.uint8, np.int8):
            arr = np.asarray(v.array)  # a quantized constant input (a ViT's class token)
            xs.append(Act(imp.qconst(arr, imp.params(node, k + 1, k + 2, arr.dtype, arr.shape, f"input {k}"))))
            continue
        if not isinstance(v, Act) or v.qtype is None:
            raise _Unsupported("a constant input") if isinstance(v, Const) else imp.bad(f"input {k} must be quantized")
        xs.append(imp.retyped(v, imp.params(node, k + 1, k + 2, v.qtype.storage, (), f"input {k}")))
    if not xs:
        raise imp.bad("has no inputs to concatenate")
    return [concat(imp, xs, node.attrs.get("axis", 0), y_q, "onnxruntime")]


def _movement_input(imp: _Importer, node: _Node, out_qs):
    """The data input of a movement op: quantized (QDQ unit or integer tensor), or float."""
    v = imp.input(node, 0, "data")
    if out_qs is not None:
        return imp.qact(v, "data")
    if isinstance(v, Act):
        return v
    return None


def _requantize_to(imp: _Importer, a: Act, out_q, rounding: str) -> Act:
    if out_q is None or a.qtype == out_q:
        return a
    return unary(imp, qnn.RequantizeOp, a, out_q, {"rounding": rounding})


def _static_shape(imp, node: _Node, k: int, role: str) -> list[int]:
    return imp.ints(imp.input(node, k, role), role)


@_handles("Reshape", "Flatten", "Squeeze", "Unsqueeze", qdq=True)
def _reshape(imp: _Importer, node: _Node, out_qs=None, rounding="onnx", acts=None):
    x = _movement_input(imp, node, out_qs)
    if x is None:
        return _fold_or_float(imp, node)
    shape = list(x.logical_shape)
    op = node.op_type
    if op == "Reshape":
        target = _static_shape(imp, node, 1, "shape")
        if node.attrs.get("allowzero", 0) and 0 in target:
            raise _Unsupported("allowzero with a zero in the shape")
        new = [shape[i] if d == 0 and i < len(shape) else d for i, d in enumerate(target)]
        if new.count(-1) > 1:
            raise imp.bad(f"shape {target} has more than one -1")
        if -1 in new:
            rest = math.prod(d for d in new if d != -1)
            if rest == 0 or math.prod(shape) % rest:
                raise imp.bad(f"cannot reshape {shape} to {target}")
            new[new.index(-1)] = math.prod(shape) // rest
    elif op == "Flatten":
        axis = _axis(imp, node.attrs.get("axis", 1), len(shape) + 1) if shape else 0
        new = [math.prod(shape[:axis]), math.prod(shape[axis:])]
    elif op == "Squeeze":
        axes = node.attrs.get("axes") if imp.g.opset < 13 else (
            _static_shape(imp, node, 1, "axes") if len(node.inputs) > 1 and node.inputs[1] else None)
        if axes is None:
            new = [d for d in shape if d != 1]
        else:
            axes = {_axis(imp, a, len(shape)) for a in axes}
            for a in axes:
                if shape[a] != 1:
                    raise imp.bad(f"cannot squeeze axis {a} of size {shape[a]}")
            new = [d for i, d in enumerate(shape) if i not in axes]
    else:
        axes = node.attrs.get("axes") if imp.g.opset < 13 else _static_shape(imp, node, 1, "axes")
        if axes is None:
            raise imp.bad(f"has no 'axes' attribute (opset {imp.g.opset} Unsqueeze needs one)")
        rank = len(shape) + len(axes)
        axes = sorted(_axis(imp, a, rank) for a in axes)
        if len(set(axes)) != len(axes):
            raise imp.bad(f"axes {node.attrs.get('axes') if imp.g.opset < 13 else axes} repeat an axis")
        new = list(shape)
        for a in axes:
            new.insert(a, 1)
    if math.prod(new) != math.prod(shape) or any(d < 0 for d in new):
        raise imp.bad(f"cannot reshape {shape} to {new}")
    xv = imp.logical(x)
    y = Act(imp.emit(qnn.ReshapeOp, [xv], TensorType(x.value.type.element_type, new)))
    return [_requantize_to(imp, y, out_qs[0] if out_qs else None, rounding)]


@_handles("Transpose", qdq=True)
def _transpose(imp: _Importer, node: _Node, out_qs=None, rounding="onnx", acts=None):
    x = _movement_input(imp, node, out_qs)
    if x is None:
        return _fold_or_float(imp, node)
    rank = len(x.logical_shape)
    perm = node.attrs.get("perm", list(range(rank))[::-1])
    if sorted(perm) != list(range(rank)):
        raise imp.bad(f"perm {perm} is not a permutation of {rank} axes")
    if x.nhwc:
        # physical = logical[0,2,3,1]; result logical = logical[perm] -> compose on the physical value
        phys_of_logical = {0: 0, 1: 3, 2: 1, 3: 2}
        p = [phys_of_logical[a] for a in perm]
        if p == [0, 1, 2, 3]:
            return [_requantize_to(imp, Act(x.value), out_qs[0] if out_qs else None, rounding)]
        y = Act(imp.transpose(x.value, p))
    else:
        if perm == [0, 2, 3, 1] and rank == 4:
            # NCHW -> NHWC in the model: the result is our NHWC value seen logically
            y = Act(imp.transpose(x.value, perm))
        else:
            y = Act(imp.transpose(x.value, perm)) if perm != list(range(rank)) else x
    return [_requantize_to(imp, y, out_qs[0] if out_qs else None, rounding)]


@_handles("Pad", qdq=True)
def _pad(imp: _Importer, node: _Node, out_qs=None, rounding="onnx", acts=None):
    x = _movement_input(imp, node, out_qs)
    if x is None:
        return _fold_or_float(imp, node)
    if node.attrs.get("mode", "constant") != "constant":
        raise _Unsupported(f"mode '{node.attrs.get('mode')}'")
    rank = len(x.logical_shape)
    pads = node.attrs.get("pads") if imp.g.opset < 11 else _static_shape(imp, node, 1, "pads")
    if len(pads) != 2 * rank:
        raise imp.bad(f"pads {pads} must have {2 * rank} entries")
    if len(node.inputs) > 3 and node.inputs[3]:
        raise _Unsupported("the axes input")
    if any(p < 0 for p in pads):
        raise _Unsupported("negative pads")
    cv = imp.input(node, 2, "constant_value", optional=True) if imp.g.opset >= 11 else None
    q = x.qtype
    zp = int(q.zero_point_array().reshape(-1)[0]) if q is not None else 0
    stored = zp  # default: real 0
    if cv is not None:
        from qdialect.reference import onnxruntime_kernels as ort

        if isinstance(cv, Deq) and isinstance(cv.src, Const):
            real = ort.dequantize_linear(cv.src.array, x_q=cv.qtype.qparams()).reshape(-1)[:1]
        else:
            arr = np.asarray(imp.const(cv, "constant_value")).reshape(-1)[:1]
            real = arr if arr.dtype == np.float32 else None
            if real is None and q is not None and arr.dtype.kind in "iu":
                stored = int(arr[0])  # an integer pad of a quantized tensor: the stored value itself
            elif real is None:
                raise imp.bad(f"constant_value has type {arr.dtype}")
        if real is not None and real.size:
            if q is None:
                if float(real[0]) != 0.0:
                    raise _Unsupported("a float pad with a nonzero constant_value")
            else:
                stored = int(ort.quantize_linear(np.asarray(real, np.float32), out_q=q.qparams())[0])
        lo, hi = q.storage_range() if q is not None else (0, 0)
        if q is not None and not lo <= stored <= hi:
            raise imp.bad(f"constant_value {stored} is outside {q.storage} [{lo}, {hi}]")
    pairs = [(pads[i], pads[i + rank]) for i in range(rank)]
    if x.nhwc:
        pairs = [pairs[0], pairs[2], pairs[3], pairs[1]]
    shape = qnn.shape_of(x.value)
    out = [d + a + b for d, (a, b) in zip(shape, pairs)]
    y = Act(imp.emit(qnn.PadOp, [x.value], TensorType(x.value.type.element_type, out),
                     {"paddings": [v for p in pairs for v in p], "pad_value": stored}), x.nhwc)
    return [_requantize_to(imp, y, out_qs[0] if out_qs else None, rounding)]


@_handles("Slice", qdq=True)
def _slice(imp: _Importer, node: _Node, out_qs=None, rounding="onnx", acts=None):
    x = _movement_input(imp, node, out_qs)
    if x is None:
        return _fold_or_float(imp, node)
    shape = list(x.logical_shape)
    rank = len(shape)
    if imp.g.opset < 10:
        raise _Unsupported("opset < 10 Slice")
    starts = _static_shape(imp, node, 1, "starts")
    ends = _static_shape(imp, node, 2, "ends")
    axes = _static_shape(imp, node, 3, "axes") if len(node.inputs) > 3 and node.inputs[3] else list(range(len(starts)))
    steps = _static_shape(imp, node, 4, "steps") if len(node.inputs) > 4 and node.inputs[4] else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise imp.bad("starts, ends, axes and steps must have the same length")
    begin, end, stride = [0] * rank, list(shape), [1] * rank
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = _axis(imp, a, rank)
        if st == 0:
            raise imp.bad("a step of 0")
        if st < 0:
            raise _Unsupported("negative steps")
        d = shape[a]
        s = s + d if s < 0 else s
        e = e + d if e < 0 else e
        s, e = min(max(s, 0), d), min(max(e, 0), d)
        begin[a], end[a], stride[a] = s, max(e, s), st
    if x.nhwc:
        begin, end, stride = ([v[i] for i in (0, 2, 3, 1)] for v in (begin, end, stride))
    out = [len(range(b, e, st)) for b, e, st in zip(begin, end, stride)]
    if 0 in out:
        raise _Unsupported("an empty slice")
    y = Act(imp.emit(qnn.SliceOp, [x.value], TensorType(x.value.type.element_type, out),
                     {"begin": begin, "end": end, "strides": stride}), x.nhwc)
    return [_requantize_to(imp, y, out_qs[0] if out_qs else None, rounding)]


@_handles("Gather", qdq=True)
def _gather(imp: _Importer, node: _Node, out_qs=None, rounding="onnx", acts=None):
    """ONNX Gather with constant indices that pick one position (a scalar index: the axis goes)
    or a run of consecutive positions along `axis`: a slice, data movement."""
    x = _movement_input(imp, node, out_qs)
    if x is None:
        return _fold_or_float(imp, node)
    iv = imp.input(node, 1, "indices")
    if not isinstance(iv, Const):
        raise _Unsupported("indices computed at run time")
    idx = np.asarray(imp.ints(iv, "indices"), np.int64).reshape(np.shape(iv.array))
    shape = list(x.logical_shape)
    rank = len(shape)
    axis = _axis(imp, int(node.attrs.get("axis", 0)), rank)
    flat = [int(i) + shape[axis] if i < 0 else int(i) for i in idx.reshape(-1)]
    if any(not 0 <= i < shape[axis] for i in flat):
        raise imp.bad(f"an index in {idx.reshape(-1).tolist()} is outside axis {axis} of size {shape[axis]}")
    if idx.ndim > 1 or not flat or flat != list(range(flat[0], flat[0] + len(flat))):
        raise _Unsupported("indices that are not one position or a run of consecutive positions")
    xv = imp.logical(x)
    el = xv.type.element_type
    begin, end = [0] * rank, list(shape)
    begin[axis], end[axis] = flat[0], flat[0] + len(flat)
    sliced = [e - b for b, e in zip(begin, end)]
    y = imp.emit(qnn.SliceOp, [xv], TensorType(el, sliced), {"begin": begin, "end": end, "strides": [1] * rank})
    if idx.ndim == 0:
        y = imp.emit(qnn.ReshapeOp, [y], TensorType(el, sliced[:axis] + sliced[axis + 1:]))
    return [_requantize_to(imp, Act(y), out_qs[0] if out_qs else None, rounding)]


@_handles("Split", qdq=True)
def _split(imp: _Importer, node: _Node, out_qs=None, rounding="onnx", acts=None):
    x = _movement_input(imp, node, out_qs)
    if x is None:
        raise _Unsupported("in float")
    shape = list(x.logical_shape)
    axis = _axis(imp, node.attrs.get("axis", 0), len(shape))
    n_out = len(node.outputs)
    if imp.g.opset >= 13 and len(node.inputs) > 1 and node.inputs[1]:
        sizes = _static_shape(imp, node, 1, "split")
    elif imp.g.opset < 13 and "split" in node.attrs:
        sizes = node.attrs["split"]
    else:
        if shape[axis] % n_out:
            raise _Unsupported("an uneven split without sizes")
        sizes = [shape[axis] // n_out] * n_out
    if len(sizes) != n_out or sum(sizes) != shape[axis] or any(s < 1 for s in sizes):
        raise imp.bad(f"split sizes {sizes} do not divide axis {axis} of size {shape[axis]} into {n_out}")
    pa = _phys_axis(x, axis)
    pshape = list(qnn.shape_of(x.value))
    outs = []
    start = 0
    for k, s in enumerate(sizes):
        begin, end = [0] * len(pshape), list(pshape)
        begin[pa], end[pa] = start, start + s
        start += s
        o = list(pshape)
        o[pa] = s
        y = Act(imp.emit(qnn.SliceOp, [x.value], TensorType(x.value.type.element_type, o),
                         {"begin": begin, "end": end, "strides": [1] * len(pshape)}), x.nhwc)
        outs.append(_requantize_to(imp, y, out_qs[k] if out_qs else None, rounding))
    return outs


@_handles("Resize", qdq=True)
def _resize(imp: _Importer, node: _Node, out_qs=None, rounding="onnx", acts=None):
    x = _movement_input(imp, node, out_qs)
    if x is None:
        raise _Unsupported("in float")
    mode = node.attrs.get("mode", "nearest")
    if mode != "nearest":
        raise _Unsupported(f"mode '{mode}'")
    ctm = node.attrs.get("coordinate_transformation_mode", "half_pixel")
    nearest_mode = node.attrs.get("nearest_mode", "round_prefer_floor")
    shape = list(x.logical_shape)
    if len(shape) != 4:
        raise _Unsupported("a resize of a tensor that is not 4-D")
    sizes = None
    if len(node.inputs) > 3 and node.inputs[3]:
        sizes = _static_shape(imp, node, 3, "sizes")
    elif len(node.inputs) > 2 and node.inputs[2]:
        scales = imp.const(imp.input(node, 2, "scales"), "scales").reshape(-1).tolist()
        if not all(math.isfinite(v) and v > 0 for v in scales):
            raise imp.bad(f"scales {scales} must be finite and > 0")
        if len(scales) != 4 or scales[0] != 1 or scales[1] != 1:
            raise _Unsupported(f"scales {scales}")
        sizes = [shape[0], shape[1], int(math.floor(shape[2] * scales[2])), int(math.floor(shape[3] * scales[3]))]
        if any(abs(s - round(s)) > 0 for s in scales[2:]) or scales[2] != scales[3]:
            raise _Unsupported(f"non-integer or unequal scales {scales}")
    if sizes is None or len(sizes) != 4 or sizes[:2] != shape[:2]:
        raise _Unsupported(f"sizes {sizes}")
    oh, ow = sizes[2], sizes[3]
    if min(shape) < 1 or oh < 1 or ow < 1:
        raise imp.bad(f"resizes shape {shape} to {sizes}: an empty tensor")
    if oh % shape[2] or ow % shape[3] or oh // shape[2] != ow // shape[3]:
        raise _Unsupported("a resize that is not an integer upscale")
    # integer nearest upscale: every mode picks input floor(o / factor), except some rounding modes
    factor = oh // shape[2]
    ok = ctm in ("asymmetric",) and nearest_mode in ("floor", "round_prefer_floor", "round_prefer_ceil") and (
        nearest_mode == "floor" or factor == 1)
    ok = ok or (ctm in ("half_pixel", "pytorch_half_pixel") and nearest_mode in ("round_prefer_floor", "floor")
                and factor in (1, 2, 4, 8, 16) and nearest_mode == "round_prefer_floor")
    ok = ok or (ctm == "asymmetric" and nearest_mode == "floor")
    if not ok:
        raise _Unsupported(f"nearest resize with coordinate_transformation_mode '{ctm}', nearest_mode '{nearest_mode}'")
    xv = imp.nhwc(x)
    n, h, w, c = qnn.shape_of(xv)
    if x.qtype is None:  # in float: each pixel repeated factor x factor times (reshapes and concatenations)
        el = xv.type.element_type
        v = imp.emit(qnn.ReshapeOp, [xv], TensorType(el, [n, h, 1, w, 1, c]))
        v = imp.emit(qnn.ConcatenationOp, [v] * factor, TensorType(el, [n, h, factor, w, 1, c]), {"axis": 2})
        v = imp.emit(qnn.ConcatenationOp, [v] * factor, TensorType(el, [n, h, factor, w, factor, c]), {"axis": 4})
        return [Act(imp.emit(qnn.ReshapeOp, [v], TensorType(el, [n, oh, ow, c])), True)]
    y = imp.emit(qnn.ResizeNearestNeighborOp, [xv], TensorType(qnn.qtype(xv), [n, oh, ow, c]),
                 {"align_corners": False, "half_pixel_centers": False})
    return [_requantize_to(imp, Act(y, True), out_qs[0] if out_qs else None, rounding)]


@_handles("ReduceMean", qdq=True)
def _reduce_mean(imp: _Importer, node: _Node, out_qs, rounding, acts):
    x = imp.qact(imp.input(node, 0, "data"), "data")
    shape = x.logical_shape
    rank = len(shape)
    if imp.g.opset >= 18 and len(node.inputs) > 1 and node.inputs[1]:
        axes = _static_shape(imp, node, 1, "axes")
    else:
        axes = node.attrs.get("axes")
    if axes is None or len(axes) == 0:
        if node.attrs.get("noop_with_empty_axes", 0):
            raise _Unsupported("noop_with_empty_axes")
        axes = list(range(rank))
    axes = sorted({_axis(imp, a, rank) for a in axes})
    keep = bool(node.attrs.get("keepdims", 1))
    # in ONNX order: ORT's float ReduceMean sums each row of the trailing axes in memory order
    xv = imp.logical(x)
    shape = list(qnn.shape_of(xv))
    out = [1 if i in axes else d for i, d in enumerate(shape)] if keep else [d for i, d in enumerate(shape) if i not in axes]
    return [Act(imp.emit(qnn.MeanOp, [xv], TensorType(out_qs[0], out),
                         {"axes": axes, "keep_dims": keep, "rounding": rounding}))]


# ======================================================================================
# Float islands: ops ONNX Runtime computes in float between quantized ones
# ======================================================================================

_FLOAT_TWIN = {qnn.ReshapeOp: nn.ReshapeOp, qnn.TransposeOp: nn.TransposeOp, qnn.SliceOp: nn.SliceOp,
               qnn.PadOp: nn.PadOp, qnn.ConcatenationOp: nn.ConcatenationOp, qnn.MaxPool2DOp: nn.MaxPool2DOp}
_FLOAT_HANDLERS: dict[str, object] = {}
_FLOAT_BINARY = {"Add": nn.AddOp, "Sub": nn.SubOp, "Mul": nn.MulOp}
_FLOAT_UNARY = {"Tanh": nn.TanhOp, "Sigmoid": nn.LogisticOp, "Relu": nn.ReluOp}


def _float_op(imp: _Importer, cls, operands: list[SSAValue], shape, attrs=None) -> SSAValue:
    attrs = {**(attrs or {}), "qnn.rounding": "onnx"}
    try:
        return imp.add(cls(operands, TensorType(Float32Type(), list(shape)), attrs)).results[0]
    except VerifyException as e:
        raise imp.bad(str(e).strip().splitlines()[0]) from None


def _float_binary(imp: _Importer, node: _Node, cls=None):
    """A float binary op with broadcasting: `cls`, by default the `_FLOAT_BINARY` op of the node."""
    va, vb = imp.input(node, 0, "A"), imp.input(node, 1, "B")
    like = next((v for v in (va, vb) if isinstance(v, Act)), None)
    like = like or next((v.src for v in (va, vb) if isinstance(v, Deq) and isinstance(v.src, Act)), None)
    a, b = imp.float_value(va, "A", like), imp.float_value(vb, "B", like)
    av, bv, nhwc = _broadcast_pair(imp, a, b)
    shape = _broadcast(imp, qnn.shape_of(av), qnn.shape_of(bv))
    return [Act(_float_op(imp, cls or _FLOAT_BINARY[node.op_type], [av, bv], shape), nhwc)]


def _float_unary(imp: _Importer, node: _Node):
    x = imp.float_value(imp.input(node, 0, "X"), "X")
    return [Act(_float_op(imp, _FLOAT_UNARY[node.op_type], [x.value], qnn.shape_of(x.value)), x.nhwc)]


def _float_softmax(imp: _Importer, node: _Node):
    x = imp.float_value(imp.input(node, 0, "input"), "input")
    rank = len(x.logical_shape)
    axis = _axis(imp, node.attrs.get("axis", -1 if imp.g.opset >= 13 else 1), rank)
    if axis != rank - 1 or imp.g.opset < 13:
        raise _Unsupported(f"float softmax over axis {axis} of rank {rank}")
    xv = imp.logical(x) if x.nhwc else x.value
    return [Act(_float_op(imp, nn.SoftmaxOp, [xv], qnn.shape_of(xv), {"beta": 1.0}))]


def _float_reduce_mean(imp: _Importer, node: _Node):
    x = imp.float_value(imp.input(node, 0, "data"), "data")
    rank = len(x.logical_shape)
    if imp.g.opset >= 18 and len(node.inputs) > 1 and node.inputs[1]:
        axes = _static_shape(imp, node, 1, "axes")
    else:
        axes = node.attrs.get("axes") or list(range(rank))
    axes = sorted({_axis(imp, a, rank) for a in axes})
    keep = bool(node.attrs.get("keepdims", 1))
    xv = imp.logical(x)  # ORT's float ReduceMean sums rows of the trailing axes in ONNX memory order
    shape = list(qnn.shape_of(xv))
    out = [1 if i in axes else d for i, d in enumerate(shape)] if keep else [d for i, d in enumerate(shape) if i not in axes]
    return [Act(_float_op(imp, nn.MeanOp, [xv], out, {"axes": axes, "keep_dims": keep}))]


def _float_clip(imp: _Importer, node: _Node):
    x = imp.float_value(imp.input(node, 0, "input"), "input")
    if imp.g.opset < 11:
        lo, hi = node.attrs.get("min"), node.attrs.get("max")
    else:
        lv, hv = imp.input(node, 1, "min", optional=True), imp.input(node, 2, "max", optional=True)
        lo = float(imp.const(lv, "min").reshape(-1)[0]) if lv is not None else None
        hi = float(imp.const(hv, "max").reshape(-1)[0]) if hv is not None else None
    attrs = {k: v for k, v in (("min", lo), ("max", hi)) if v is not None}
    return [Act(_float_op(imp, nn.ClipOp, [x.value], qnn.shape_of(x.value), attrs), x.nhwc)]


def _float_pool(imp: _Importer, node: _Node):
    x = imp.float_value(imp.input(node, 0, "X"), "X")
    xv = imp.nhwc(x)
    n, h, w, c = qnn.shape_of(xv)
    if node.op_type == "GlobalAveragePool":
        kernel, strides, pads = [h, w], [1, 1], [0, 0, 0, 0]
    else:
        kernel = node.attrs.get("kernel_shape")
        if kernel is None or len(kernel) != 2:
            raise _Unsupported("a pooling window that is not 2-D")
        kernel = _positive(imp, "kernel_shape", kernel)
        strides = _positive(imp, "strides", node.attrs.get("strides", [1, 1]))
        if node.attrs.get("ceil_mode", 0) or list(node.attrs.get("dilations", [1, 1])) != [1, 1]:
            raise _Unsupported("ceil_mode or dilations")
        pads = _pads_2d(imp, node, (h, w), kernel, strides, (1, 1))
        if node.attrs.get("count_include_pad", 0) and any(pads):
            raise _Unsupported("float AveragePool with count_include_pad = 1 and padding")
        if imp.g.opset >= 19 and list(kernel) == [h, w] and not any(pads):
            raise _Unsupported("a float whole-image AveragePool at opset >= 19 (it would read as GlobalAveragePool)")
    oh = (h + pads[0] + pads[1] - kernel[0]) // strides[0] + 1
    ow = (w + pads[2] + pads[3] - kernel[1]) // strides[1] + 1
    attrs = {"kernel": kernel, "strides": strides, "padding": pads}
    return [Act(_float_op(imp, nn.AvgPool2DOp, [xv], [n, oh, ow, c], attrs), True)]


def _float_scalar(imp: _Importer, value: float, rank: int) -> SSAValue:
    arr = np.full([1] * rank, value, np.float32)
    return imp.add(nn.ConstantOp(arr, TensorType(Float32Type(), list(arr.shape)))).results[0]


def _hard_sigmoid(imp: _Importer, x: Act, alpha: float, beta: float) -> SSAValue:
    """ORT's HardSigmoid functor: (x * alpha + beta), then min(1), max(0), in float32, no FMA."""
    shape = qnn.shape_of(x.value)
    v = _float_op(imp, nn.MulOp, [x.value, _float_scalar(imp, alpha, len(shape))], shape)
    v = _float_op(imp, nn.AddOp, [v, _float_scalar(imp, beta, len(shape))], shape)
    return _float_op(imp, nn.ClipOp, [v], shape, {"min": 0.0, "max": 1.0})


def _float_hard(imp: _Importer, node: _Node):
    x = imp.float_value(imp.input(node, 0, "X"), "X")
    if node.op_type == "HardSigmoid":
        alpha = float(np.float32(node.attrs.get("alpha", 0.2)))
        beta = float(np.float32(node.attrs.get("beta", 0.5)))
        return [Act(_hard_sigmoid(imp, x, alpha, beta), x.nhwc)]
    # HardSwish: ORT rewrites it as x * HardSigmoid(x, 1/6, 0.5)
    hs = _hard_sigmoid(imp, x, float(np.float32(1.0 / 6.0)), 0.5)
    shape = qnn.shape_of(x.value)
    return [Act(_float_op(imp, nn.MulOp, [x.value, hs], shape), x.nhwc)]


_FLOAT_HANDLERS["GlobalAveragePool"] = _float_pool
_FLOAT_HANDLERS["AveragePool"] = _float_pool
_FLOAT_HANDLERS["HardSigmoid"] = _float_hard
_FLOAT_HANDLERS["HardSwish"] = _float_hard
for _n in _FLOAT_BINARY:
    _FLOAT_HANDLERS[_n] = _float_binary
for _n in _FLOAT_UNARY:
    _FLOAT_HANDLERS[_n] = _float_unary
_FLOAT_HANDLERS["Softmax"] = _float_softmax
_FLOAT_HANDLERS["ReduceMean"] = _float_reduce_mean
_FLOAT_HANDLERS["Clip"] = _float_clip


# ----- the float ops of quantized transformer encoders ------------------------------------
# ORT has no integer kernel for Div, Sqrt, Pow, Erf, Gelu or LayerNormalization: between a
# DequantizeLinear and a QuantizeLinear they run in float in both sessions (the importer reads the
# dequantized operands, emits the float op, and the QuantizeLinear after it quantizes the result).

_TRANSFORMER_BINARY = {"Div": nn.DivOp}
_TRANSFORMER_UNARY = {"Sqrt": nn.SqrtOp, "Erf": nn.ErfOp}


def _all_constant(imp: _Importer, node: _Node) -> bool:
    """Whether every input is a constant (the node is folded at import); otherwise the remark
    that ORT computes it in float."""
    if all(isinstance(imp.get(i, "input"), Const) for i in node.inputs if i):
        return True
    imp.remark("ONNX Runtime runs it in float (it has no integer kernel): rounding = onnx")
    return False


@_handles("Div")
def _div(imp: _Importer, node: _Node):
    """ONNX Div: IEEE float32 division (Eigen's, in ORT), broadcasting."""
    if _all_constant(imp, node):
        return _fold_node(imp, node)
    return _float_binary(imp, node, _TRANSFORMER_BINARY[node.op_type])


@_handles("Sqrt", "Erf")
def _float_elementwise(imp: _Importer, node: _Node):
    """ONNX Sqrt (IEEE) and Erf (MLAS's erf), in float."""
    if _all_constant(imp, node):
        return _fold_node(imp, node)
    x = imp.float_value(imp.input(node, 0, "X"), "X")
    return [Act(_float_op(imp, _TRANSFORMER_UNARY[node.op_type], [x.value], qnn.shape_of(x.value)), x.nhwc)]


def _scalar_constant(imp: _Importer, v, role: str) -> float:
    """The value of a constant scalar operand (a float constant, or a dequantized one)."""
    if isinstance(v, Deq) and isinstance(v.src, Const):
        from qdialect.reference import onnxruntime_kernels as ort

        arr = ort.dequantize_linear(v.src.array, x_q=v.qtype.qparams())
    elif isinstance(v, Const):
        arr = np.asarray(v.array)
    else:
        raise _Unsupported(f"a {role} computed at run time")
    if arr.size != 1:
        raise _Unsupported(f"a {role} with {arr.size} elements (a scalar is supported)")
    return float(arr.reshape(-1)[0])


@_handles("Pow")
def _pow(imp: _Importer, node: _Node):
    """ONNX Pow with a constant exponent 2 or 3: ORT computes `x * x` / `x * x * x` (its
    special cases of std::pow), written here as multiplications."""
    if _all_constant(imp, node):
        return _fold_node(imp, node)
    e = _scalar_constant(imp, imp.input(node, 1, "Y"), "exponent")
    if e not in (2.0, 3.0):
        raise _Unsupported(f"exponent {e!r} (ORT's std::pow is modelled for exponents 2 and 3)")
    x = imp.float_value(imp.input(node, 0, "X"), "X")
    shape = qnn.shape_of(x.value)
    y = _float_op(imp, nn.MulOp, [x.value, x.value], shape)
    if e == 3.0:
        y = _float_op(imp, nn.MulOp, [y, x.value], shape)
    return [Act(y, x.nhwc)]


def _float_matmul(imp: _Importer, node: _Node):
    """A MatMul reading a float activation (what follows an unquantized op, e.g. com.microsoft Gelu,
    which `quantize_static` leaves in float) and constant weights: ORT's float MatMul (MLAS SGEMM)
    with ORT_DISABLE_ALL, nn.batch_matmul."""
    wv = imp.input(node, 1, "B")
    if not (isinstance(wv, Deq) and isinstance(wv.src, Const)):
        raise _Unsupported("in float with float weights or two activations (only DequantizeLinear weights)"
                           if isinstance(wv, Const) else "in float on two activations")
    if imp.profile == "onnxruntime":
        return _matmul_nbits(imp, node, wv)
    imp.remark("ONNX Runtime runs it in float (a float activation): rounding = onnx")
    a = imp.float_value(imp.input(node, 0, "A"), "A")
    w = imp.float_value(wv, "B")
    av = imp.logical(a)
    ashape, wshape = list(qnn.shape_of(av)), list(qnn.shape_of(w.value))
    if len(wshape) != 2 or len(ashape) < 2 or ashape[-1] != wshape[0]:
        raise imp.bad(f"A {ashape} and B {wshape} do not multiply")
    return [Act(_float_op(imp, nn.BatchMatmulOp, [av, w.value], ashape[:-1] + wshape[1:]))]


def _nbits_bias(imp: _Importer, node: _Node, n: int):
    """The Add that ORT fuses into MatMulNBits as its bias: the MatMul's only reader, adding a
    constant (or DequantizeLinear constant) of N elements.  -> (Add node, bias f32 [N]) or None."""
    cons = imp.g.consumers.get(node.outputs[0], [])
    if len(cons) != 1 or cons[0] < 0 or imp.g.nodes[cons[0]].op_type != "Add":
        return None
    add = imp.g.nodes[cons[0]]
    other = add.inputs[1] if add.inputs[0] == node.outputs[0] else add.inputs[0]
    if other not in imp.env and other not in imp.g.initializers:
        # a DequantizeLinear of constants listed after the MatMul: import it now
        dq = next((n for n in imp.g.nodes if other in n.outputs), None)
        if dq is None or dq.op_type != "DequantizeLinear" or dq.index in imp.done \
                or not all(i in imp.g.initializers for i in dq.inputs if i):
            return None
        saved, imp.node = imp.node, dq
        try:
            imp.dispatch(dq)
        finally:
            imp.node = saved
        imp.done.add(dq.index)
    saved, imp.node = imp.node, add
    try:
        v = imp.input(add, 1 if other == add.inputs[1] else 0, "B")
    finally:
        imp.node = saved
    if isinstance(v, Deq) and isinstance(v.src, Const):
        from qdialect.reference import onnxruntime_kernels as ort

        arr = ort.dequantize_linear(v.src.array, x_q=v.qtype.qparams())
    elif isinstance(v, Const) and np.asarray(v.array).dtype == np.float32:
        arr = np.asarray(v.array)
    else:
        return None
    if arr.shape != (n,):
        return None
    return add, np.ascontiguousarray(arr, np.float32)


def _matmul_nbits(imp: _Importer, node: _Node, wv):
    """ORT's default session: `MatMul(float A, DequantizeLinear(8-bit constant W))` (+ a constant
    bias Add) becomes com.microsoft MatMulNBits (bits 8, block 32, accuracy level 4), an int8
    kernel on a per-block quantized A (qdialect.reference.onnxruntime_nbits): nn.fully_connected
    marked `ort_nbits`, its weights a qnn.dequantize of the integers, [N, K]."""
    from qdialect.reference import onnxruntime_nbits as nbits

    recipe = nbits.nbits_recipe()
    if recipe != nbits.RECIPE:
        raise _Unsupported(f"a float activation times DequantizeLinear weights: ORT's MatMulNBits "
                           f"(accuracy level 4) on {recipe} runs another MLAS kernel, not modelled "
                           f"(only {nbits.RECIPE}); --rounding onnx imports it")
    w = np.asarray(wv.src.array)
    if w.ndim != 2 or w.dtype not in (np.int8, np.uint8):
        raise _Unsupported(f"MatMulNBits with {w.dtype} weights of rank {w.ndim} (8-bit [K, N] is modelled)")
    qt = wv.qtype
    if qt.is_per_axis and qt.axis != 1:
        raise _Unsupported(f"MatMulNBits from weights quantized along axis {qt.axis} (per-column is modelled)")
    imp.remark("ONNX Runtime's default session runs it as MatMulNBits (8-bit, block 32, accuracy level 4)")
    a = imp.float_value(imp.input(node, 0, "A"), "A")
    av = imp.logical(a)
    xs = list(qnn.shape_of(av))
    k, n = w.shape
    if not xs or xs[-1] != k:
        raise imp.bad(f"A {xs} and B {[k, n]} do not multiply")
    wq_t = (UniformQuantizedType.per_axis(qt.scale_array(), qt.zero_point_array(), axis=0, storage=qt.storage)
            if qt.is_per_axis else qt)
    wq = imp.qconst(np.ascontiguousarray(w.T), wq_t)
    wf = imp.emit(qnn.DequantizeOp, [wq], TensorType(Float32Type(), [n, k]))
    operands = [av, wf]
    fused = _nbits_bias(imp, node, n)
    if fused is not None:
        c = nn.ConstantOp(fused[1], TensorType(Float32Type(), [n]))
        operands.append(imp.add(c).results[0])
    y = _float_op(imp, nn.FullyConnectedOp, operands, xs[:-1] + [n], {"ort_nbits": nbits.RECIPE})
    if fused is None:
        return [Act(y)]
    imp.done.add(fused[0].index)
    imp.env[fused[0].outputs[0]] = Act(y)
    return [Act(y)]


_FLOAT_HANDLERS["MatMul"] = _float_matmul

_GELU_TANH_B = 0.7978845608028654  # sqrt(2 / pi), as ORT's Gelu kernel spells it
_GELU_TANH_C = 0.035677408136300125  # 0.044715 * sqrt(2 / pi)


@_handles("Gelu")
def _gelu(imp: _Importer, node: _Node):
    """com.microsoft Gelu and ONNX Gelu-20 as ORT's kernel computes them (`tensor/gelu.cc`):
    `t = x * f32(M_SQRT1_2)`, `e = erf(t)` (MLAS), `y = (0.5 * x) * (e + 1)`; with
    approximate = "tanh": `t = x * ((C * x) * x + B)`, `e = tanh(t)` (MLAS)."""
    if node.domain not in ("com.microsoft",) and imp.g.opset < 20:
        raise _Unsupported("ai.onnx Gelu before opset 20")
    _all_constant(imp, node)
    approximate = node.attrs.get("approximate", "none")
    approximate = approximate.decode() if isinstance(approximate, bytes) else approximate
    if approximate not in ("none", "tanh"):
        raise imp.bad(f"approximate is '{approximate}', expected 'none' or 'tanh'")
    x = imp.float_value(imp.input(node, 0, "X"), "X")
    shape = qnn.shape_of(x.value)
    rank = len(shape)
    if approximate == "none":
        t = _float_op(imp, nn.MulOp, [x.value, _float_scalar(imp, float(np.float32(np.sqrt(0.5))), rank)], shape)
        e = _float_op(imp, nn.ErfOp, [t], shape)
    else:
        c = _float_op(imp, nn.MulOp, [_float_scalar(imp, float(np.float32(_GELU_TANH_C)), rank), x.value], shape)
        c = _float_op(imp, nn.MulOp, [c, x.value], shape)
        c = _float_op(imp, nn.AddOp, [c, _float_scalar(imp, float(np.float32(_GELU_TANH_B)), rank)], shape)
        t = _float_op(imp, nn.MulOp, [x.value, c], shape)
        e = _float_op(imp, nn.TanhOp, [t], shape)
    e1 = _float_op(imp, nn.AddOp, [e, _float_scalar(imp, 1.0, rank)], shape)
    half = _float_op(imp, nn.MulOp, [_float_scalar(imp, 0.5, rank), x.value], shape)
    return [Act(_float_op(imp, nn.MulOp, [half, e1], shape), x.nhwc)]


@_handles("LayerNormalization")
def _layer_norm(imp: _Importer, node: _Node):
    """ONNX LayerNormalization (float32) as ORT's AVX2 MLAS kernel computes it, over the axes
    from `axis` on in ONNX order."""
    if any(o for o in node.outputs[1:]) and any(imp.g.consumers.get(o) for o in node.outputs[1:] if o):
        raise _Unsupported("the Mean / InvStdDev outputs")
    if int(node.attrs.get("stash_type", 1)) != 1:
        raise _Unsupported(f"stash_type {node.attrs.get('stash_type')}")
    _all_constant(imp, node)
    x = imp.float_value(imp.input(node, 0, "X"), "X")
    xv = imp.logical(x)
    shape = list(qnn.shape_of(xv))
    axis = _axis(imp, int(node.attrs.get("axis", -1)), len(shape))
    row = math.prod(shape[axis:])
    from qdialect.reference.onnxruntime_float import LAYER_NORM_MIN_ROW

    if row < LAYER_NORM_MIN_ROW:
        raise _Unsupported(f"normalizing {row} elements (ORT's kernel for rows under "
                           f"{LAYER_NORM_MIN_ROW} is not modelled)")
    operands = [xv]
    for k, role in ((1, "Scale"), (2, "B")):
        v = imp.input(node, k, role, optional=(k == 2))
        if v is None:
            continue
        if not isinstance(v, Const) and not (isinstance(v, Deq) and isinstance(v.src, Const)):
            raise _Unsupported(f"a {role} computed at run time")
        c = imp.float_value(v, role)
        if math.prod(qnn.shape_of(c.value)) != row:
            raise imp.bad(f"{role} has {math.prod(qnn.shape_of(c.value))} elements, the normalized axes {row}")
        if list(qnn.shape_of(c.value)) != shape[axis:]:
            c = Act(imp.add(nn.ReshapeOp([c.value], TensorType(Float32Type(), shape[axis:]),
                                         {"qnn.rounding": "onnx"})).results[0])
        operands.append(c.value)
    eps = float(np.float32(node.attrs.get("epsilon", 1e-5)))
    return [Act(_float_op(imp, nn.LayerNormOp, operands, shape, {"axis": axis, "epsilon": eps}))]


# ======================================================================================
# Shape arithmetic folded at import
# ======================================================================================


@_handles("Constant")
def _constant(imp: _Importer, node: _Node):
    onnx = _onnx()
    if "value" in node.attrs and isinstance(node.attrs["value"], tuple):
        return [Const(_tensor_array(onnx, node.attrs["value"][1], "Constant"))]
    for key, dtype in (("value_float", np.float32), ("value_int", np.int64)):
        if key in node.attrs:
            return [Const(np.array(node.attrs[key], dtype))]
    for key, dtype in (("value_floats", np.float32), ("value_ints", np.int64)):
        if key in node.attrs:
            return [Const(np.array(node.attrs[key], dtype))]
    raise _Unsupported("a Constant without a tensor value")


@_handles("Shape")
def _shape(imp: _Importer, node: _Node):
    v = imp.input(node, 0, "data")
    if isinstance(v, Const):
        shape = v.array.shape
    elif isinstance(v, Deq):
        shape = v.src.array.shape if isinstance(v.src, Const) else v.src.logical_shape
    else:
        shape = v.logical_shape
    shape = list(shape)
    start = node.attrs.get("start", 0)
    end = node.attrs.get("end", len(shape))
    return [Const(np.array(shape[start:end], np.int64))]


@_handles("Identity")
def _identity(imp: _Importer, node: _Node):
    return [imp.input(node, 0, "input")]


def _fold_or_float(imp: _Importer, node: _Node):
    if all(isinstance(imp.get(i, "input"), Const) for i in node.inputs if i):
        return _fold_node(imp, node)
    raise _Unsupported("in float (no QuantizeLinear after it); qd-import imports quantized graphs")


def _fold_node(imp: _Importer, node: _Node):
    """Evaluate a node whose inputs are all constants with ONNX's reference implementation."""
    onnx = _onnx()
    from onnx.reference import ReferenceEvaluator

    ins = [imp.get(i, "input").array if i else None for i in node.inputs]
    if any(a is not None and a.size > (1 << 20) for a in ins):
        raise _Unsupported("folding a large constant expression")
    n = onnx.helper.make_node(node.op_type, [f"i{k}" if i else "" for k, i in enumerate(node.inputs)],
                              [f"o{k}" for k in range(len(node.outputs))], domain=node.domain or None,
                              **{k: v for k, v in node.attrs.items() if not isinstance(v, tuple)})
    try:
        ev = ReferenceEvaluator(n)
        outs = ev.run(None, {f"i{k}": a for k, a in enumerate(ins) if a is not None})
    except Exception as e:  # noqa: BLE001 - the model's constant expression is malformed
        raise imp.bad(f"cannot evaluate its constant inputs: {e}") from None
    for name, o in zip(node.outputs, outs):
        imp.env[name] = Const(np.asarray(o))
    return None


# ======================================================================================
# Entry points
# ======================================================================================

SUPPORTED_OPERATORS = tuple(sorted(_HANDLERS))


def _scan_unsupported(g: _Graph) -> None:
    missing = []
    for n in g.nodes:
        if n.domain not in ("", "ai.onnx", "com.microsoft"):
            missing.append((f"{n.domain}.{n.op_type}", None))
        elif n.op_type not in _HANDLERS:
            missing.append((n.op_type, None))
    if missing:
        raise OnnxImportError(_format_unsupported(missing))


def _check_wiring(g: _Graph) -> None:
    """Every node writes its first output, reads at least one input (but Constant), and every name is
    written once (by a node, a graph input or an initializer): ONNX graphs are single assignment."""
    written = {name: "a graph input" for name, _, _ in g.inputs}
    written.update({name: "an initializer" for name in g.initializers})
    for n in g.nodes:
        if not n.outputs or not n.outputs[0]:
            raise OnnxImportError(f"{n.label()}: has no output")
        if not n.inputs and n.op_type != "Constant":
            raise OnnxImportError(f"{n.label()}: has no inputs")
        for o in n.outputs:
            if o and o in written:
                raise OnnxImportError(f"{n.label()}: output '{o}' is already written by {written[o]}")
            if o:
                written[o] = f"node {n.index}"


def import_onnx(data: bytes, *, batch: int = 1, name: str = "model", profile: str = "onnxruntime",
                remarks: list[str] | None = None) -> ModuleOp:
    """Import a quantized ONNX model (QDQ or QOperator) as a verified L1 module.

    `profile`: "onnxruntime" (ORT's default session, op by op) or "onnx" (the
    specification's QDQ meaning, what ORT computes with optimizations off).
    `remarks`, when given, receives one line per op whose numerics follow ORT's
    float path.  Raises OnnxImportError with a one-line explanation.
    """
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise TypeError(f"import_onnx expects bytes, got {type(data).__name__}")
    if not isinstance(batch, int) or batch < 1:
        raise OnnxImportError(f"batch must be a positive integer, got {batch!r}")
    if profile not in ONNX_PROFILES:
        raise OnnxImportError(f"profile {profile!r} is not one of {', '.join(ONNX_PROFILES)}")
    g = _read(data)
    _scan_unsupported(g)
    _check_wiring(g)
    imp = _Importer(g, batch, profile)
    try:
        with np.errstate(all="ignore"):
            results, in_names, out_names = imp.run()
    except OnnxImportError:
        raise
    except (ArithmeticError, ValueError, IndexError, KeyError, TypeError, RuntimeError, AttributeError,
            AssertionError, RecursionError, VerifyException) as e:
        where = imp.node.label() if imp.node else ""
        raise OnnxImportError(f"{where + ': ' if where else ''}malformed model ({type(e).__name__}: {e})") from None
    if remarks is not None:
        remarks.extend(imp.remarks)
    block = imp.block
    block.add_op(func.ReturnOp(*results))
    ftype = ([a.type for a in block.args], [v.type for v in results])
    arg_attrs = ArrayAttr([DictionaryAttr({"onnx.name": StringAttr(n)}) for n in in_names])
    res_attrs = ArrayAttr([DictionaryAttr({"onnx.name": StringAttr(n)}) for n in out_names])
    f = func.FuncOp("main", ftype, Region(block), arg_attrs=arg_attrs, res_attrs=res_attrs)
    module = ModuleOp([f], sym_name=StringAttr(name)) if name else ModuleOp([f])
    # the float kernels ORT picks depend on the opset (AveragePool-19), so the module keeps it
    module.attributes["onnx.opset"] = IntegerAttr(g.opset, IntegerType(64))
    try:
        verify_module(module)
    except VerifyException as e:
        raise OnnxImportError(f"the imported module does not verify: {e}") from None
    return module


def import_onnx_file(path, *, batch: int = 1, name: str | None = None, profile: str = "onnxruntime",
                     remarks: list[str] | None = None) -> ModuleOp:
    """Read and import an .onnx file (module named after the file's stem)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise OnnxImportError(f"cannot read {p}: {e.strerror or e}") from None
    return import_onnx(data, batch=batch, name=p.stem if name is None else name, profile=profile, remarks=remarks)
