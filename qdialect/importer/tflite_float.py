"""TFLite float32 flatbuffer -> float graph of `nn` ops (layer L0 without casts).

    from qdialect.importer.tflite_float import import_tflite_float_file
    module = import_tflite_float_file("model_float.tflite")

The result is a verified `builtin.module @<name>` holding `func.func @main`
on f32 tensors: weights and biases are `nn.constant`s, fused activations are
real clamps (`act_min` / `act_max`: relu = [0, +inf), relu6 = [0, 6]),
SAME/VALID padding is explicit, and integer shape arithmetic (a Keras
Flatten's SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE) is folded at import as
the integer importer does.  Arguments and results carry `tflite.name`, and
every op result's SSA name is the TFLite tensor's name (sanitised), so a
calibration report can speak of tensors by name.  It is what `qd-quantize`
calibrates and quantizes; the reference interpreter runs it
(`qdialect.interp_nn`).

Errors are `TFLiteImportError` with a one-line message: quantized models
are sent to `import_tflite`, unsupported operators are listed at once.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, Float32Type, IntegerType, ModuleOp, StringAttr, TensorType
from xdsl.ir import Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from qdialect.dialects import nn, qnn
from qdialect.diagnostics import verify_module
from qdialect.importer.tflite import (
    _ACT_REAL,
    _ARITY,
    _FLOAT_TYPES,
    _FUSED,
    _MULTI_OUT,
    TFLiteImportError,
    _check_strided_masks,
    _format_unsupported,
    _Importer,
    _Op,
    _positive,
    _read,
    _resolve_shape,
    _scan_unsupported,
    _Unsupported,
    _tflite_padding,
)
from qdialect.reference.movement import strided_slice_indices

__all__ = ["import_tflite_float", "import_tflite_float_file", "is_float_model", "FLOAT_OPERATORS"]


def is_float_model(data: bytes) -> bool:
    """True when no tensor the graph uses carries quantization parameters and some are float."""
    g = _read(bytes(data))
    used = set(g.inputs) | set(g.outputs)
    for op in g.ops:
        used.update(i for i in op.inputs if i >= 0)
        used.update(op.outputs)
    tensors = [g.tensors[i] for i in used]
    return not any(t.quantized for t in tensors) and any(t.type in _FLOAT_TYPES for t in tensors)


_NAME = re.compile(r"[^A-Za-z0-9_.$-]")


def ssa_name(tensor_name: str) -> str | None:
    """A TFLite tensor name as an SSA name hint (None when nothing usable is left)."""
    text = _NAME.sub("_", tensor_name.split(";")[0])
    if not text or text[0].isdigit():
        text = "t" + text
    return text if re.fullmatch(r"[A-Za-z_.$-][A-Za-z0-9_.$-]*", text) else None


_PLAIN = {"FLOAT32": Float32Type(), "INT32": IntegerType(32), "INT64": IntegerType(64), "BOOL": nn.I1}
"""Tensor types the float import reads: float32 values, and the int32 / bool tensors of
attention and padding masks (token ids, comparisons, selections)."""


def _plain(imp, i: int, what: str):
    t = imp.tensor(i)
    el = _PLAIN.get(t.type)
    if el is None or t.quantized:
        raise imp.bad(f"{what} '{t.name}' is {t.type.lower()}; the float import reads float32, int32 and bool tensors")
    return el


class _FloatImporter(_Importer):
    """The integer importer's tensor handling, emitting `nn` ops on float (and int32 / bool) tensors."""

    @property
    def handlers(self) -> dict:
        return _FLOAT_HANDLERS

    def tensor_type(self, i: int) -> TensorType:
        return TensorType(_plain(self, i, "tensor"), list(self.shape(i)))

    def constant(self, i: int) -> SSAValue:
        if i in self.consts:
            return self.consts[i]
        el = _plain(self, i, "constant")
        arr = self.raw_array(i)
        op = nn.ConstantOp(arr, TensorType(el, list(arr.shape)))
        self.block.add_op(op)
        self.consts[i] = op.result
        return op.result

    def act(self, i: int, role: str = "input") -> SSAValue:
        """A float operand (run-time tensor or float constant)."""
        if i < 0:
            raise self.bad(f"{role} is missing")
        if i in self.values:
            return self.values[i]
        t = self.tensor(i)
        if i in self.static:  # a folded integer (shape arithmetic) read by a run-time op
            arr = self.static[i]
            op = nn.ConstantOp(arr, TensorType(_plain(self, i, "tensor"), list(arr.shape)))
            self.block.add_op(op)
            self.values[i] = op.result
            return op.result
        if t.constant:
            return self.constant(i)
        raise self.bad(f"{role} '{t.name}' is read before any operator produces it")

    def emit_nn(self, cls, operands, out: int, attrs: dict | None = None, shape=None):
        t = self.tensor(out)
        el = _plain(self, out, "output tensor")
        if shape is None and self.dynamic(out) and cls in _ELEMENTWISE_SHAPED:
            try:  # a float island's elementwise op on a tensor the file leaves dynamic
                shape = list(operands[0].type.get_shape())
                for v in operands[1:]:
                    shape = qnn.broadcast_shape(shape, list(v.type.get_shape()))
            except ValueError:
                shape = None
        if shape is not None:
            self.check_declared(out, shape)
            self.shapes[out] = tuple(int(d) for d in shape)
            self.computed.add(out)
        rtype = TensorType(el, list(self.shape(out)))
        try:
            op = cls(list(operands), rtype, attrs or {})
            op.verify()
        except VerifyException as e:
            lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
            raise self.bad(lines[0] if lines else "verification failed") from None
        op.result.name_hint = ssa_name(t.name)
        self.block.add_op(op)
        self.values[out] = op.result
        return op

    def fused_real(self, code: int) -> dict:
        """A fused activation as the real clamp act_min / act_max."""
        if code not in _FUSED:
            raise _Unsupported(f"fused activation code {code}")
        name = _FUSED[code]
        if name is None:
            return {}
        lo, hi = _ACT_REAL[name]
        return {"act_min": lo, "act_max": hi}


_FLOAT_HANDLERS: dict = {}

_ELEMENTWISE_SHAPED = (nn.AddOp, nn.SubOp, nn.MulOp, nn.SquaredDifferenceOp, nn.MaximumOp, nn.MinimumOp,
                       nn.LogisticOp, nn.TanhOp, nn.ReluOp, nn.ClipOp, nn.HardSwishOp, nn.LeakyReluOp, nn.EluOp,
                       nn.SoftmaxOp, nn.LogSoftmaxOp, nn.GeluOp, nn.RsqrtOp, nn.DivOp, nn.CastOp, nn.CompareOp,
                       nn.LogicalAndOp, nn.LogicalOrOp, nn.LogicalNotOp, nn.SelectOp)
"""nn ops whose result shape is their operands' (broadcast) shape."""


def _handles(*names):
    def register(fn):
        for n in names:
            _FLOAT_HANDLERS[n] = fn
        return fn

    return register


def _rank(imp: _FloatImporter, v: SSAValue, rank: int, role: str) -> tuple[int, ...]:
    s = tuple(v.type.get_shape())
    if len(s) != rank:
        raise imp.bad(f"{role} must have rank {rank}, got shape {list(s)}")
    return s


def _bias_operands(imp: _FloatImporter, op: _Op, k: int) -> list[SSAValue]:
    if k < len(op.inputs) and op.inputs[k] >= 0:
        return [imp.act(op.inputs[k], "bias")]
    return []


@_handles("CONV_2D", "DEPTHWISE_CONV_2D")
def _conv(imp: _FloatImporter, op: _Op):
    o = op.options
    x, w = imp.act(op.inputs[0], "input"), imp.act(op.inputs[1], "weights")
    n, h, wd, c = _rank(imp, x, 4, "input")
    _, kh, kw, ic = _rank(imp, w, 4, "weights")
    if op.name == "CONV_2D" and ic != c:
        raise _Unsupported("grouped convolution")
    strides = _positive(imp, "strides", o["StrideH"], o["StrideW"])
    dil = _positive(imp, "dilations", o["DilationHFactor"], o["DilationWFactor"])
    pads = _tflite_padding(o["Padding"], (h, wd), (kh, kw), strides, dil)
    cls = nn.Conv2DOp if op.name == "CONV_2D" else nn.DepthwiseConv2DOp
    attrs = dict(strides=strides, dilations=dil, padding=pads, **imp.fused_real(o["FusedActivationFunction"]))
    imp.emit_nn(cls, [x, w, *_bias_operands(imp, op, 2)], op.outputs[0], attrs)


@_handles("FULLY_CONNECTED")
def _fully_connected(imp: _FloatImporter, op: _Op):
    o = op.options
    if o["WeightsFormat"] != 0:
        raise _Unsupported("shuffled weights format")
    x, w = imp.act(op.inputs[0], "input"), imp.act(op.inputs[1], "weights")
    _rank(imp, w, 2, "weights")
    imp.emit_nn(nn.FullyConnectedOp, [x, w, *_bias_operands(imp, op, 2)], op.outputs[0],
                imp.fused_real(o["FusedActivationFunction"]))


@_handles("BATCH_MATMUL")
def _batch_matmul(imp: _FloatImporter, op: _Op):
    o = op.options
    a, b = imp.act(op.inputs[0], "lhs"), imp.act(op.inputs[1], "rhs")
    imp.emit_nn(nn.BatchMatmulOp, [a, b], op.outputs[0], {"adj_x": bool(o["AdjX"]), "adj_y": bool(o["AdjY"])})


_BINARY = {
    "ADD": nn.AddOp,
    "SUB": nn.SubOp,
    "MUL": nn.MulOp,
    "DIV": nn.DivOp,
    "SQUARED_DIFFERENCE": nn.SquaredDifferenceOp,
    "MAXIMUM": nn.MaximumOp,
    "MINIMUM": nn.MinimumOp,
}


@_handles(*_BINARY)
def _binary(imp: _FloatImporter, op: _Op):
    a, b = imp.act(op.inputs[0], "lhs"), imp.act(op.inputs[1], "rhs")
    attrs = {}
    if "FusedActivationFunction" in op.options:
        attrs = imp.fused_real(op.options["FusedActivationFunction"])
    if attrs and not nn.is_float(a.type.element_type):
        raise _Unsupported(f"fused activation on {a.type.element_type}")
    if op.name == "DIV" and not nn.is_float(a.type.element_type):
        raise _Unsupported(f"on {a.type.element_type} (integer division)")
    imp.emit_nn(_BINARY[op.name], [a, b], op.outputs[0], attrs)


# ----- masks: casts, comparisons, logic, selection (int32 / bool / float32) ------------------


@_handles("CAST")
def _cast(imp: _FloatImporter, op: _Op):
    """TFLite CAST between float32, int32 and bool: to bool `x != 0`, from bool 0 / 1, float to
    int32 truncates (`nn.cast`)."""
    imp.emit_nn(nn.CastOp, [imp.act(op.inputs[0])], op.outputs[0], shape=list(imp.act(op.inputs[0]).type.get_shape()))


_COMPARE = {"EQUAL": "eq", "NOT_EQUAL": "ne", "LESS": "lt", "LESS_EQUAL": "le", "GREATER": "gt",
            "GREATER_EQUAL": "ge"}


@_handles(*_COMPARE)
def _compare(imp: _FloatImporter, op: _Op):
    a, b = imp.act(op.inputs[0], "lhs"), imp.act(op.inputs[1], "rhs")
    if a.type.element_type != b.type.element_type:
        raise imp.bad(f"compares {a.type.element_type} with {b.type.element_type}")
    if nn.is_bool(a.type.element_type):
        raise _Unsupported("on bool tensors")
    imp.emit_nn(nn.CompareOp, [a, b], op.outputs[0], {"predicate": _COMPARE[op.name]})


_LOGICAL = {"LOGICAL_AND": nn.LogicalAndOp, "LOGICAL_OR": nn.LogicalOrOp, "LOGICAL_NOT": nn.LogicalNotOp}


@_handles(*_LOGICAL)
def _logical(imp: _FloatImporter, op: _Op):
    xs = [imp.act(i, f"input {k}") for k, i in enumerate(op.inputs)]
    imp.emit_nn(_LOGICAL[op.name], xs, op.outputs[0])


def select(imp, op: _Op, value, emit) -> None:
    """SELECT_V2 (numpy broadcasting of condition, x and y) and SELECT (condition of x's shape,
    or of rank 1 picking x's rows) as `nn.select`; `value(i, role)` reads an operand and `emit`
    writes the op (the float or the quantized importer's)."""
    c, x, y = (value(i, r) for i, r in zip(op.inputs, ("condition", "x", "y")))
    cs, xs = list(c.type.get_shape()), list(x.type.get_shape())
    if op.name == "SELECT" and cs != xs:
        if len(cs) != 1 or not xs or cs[0] != xs[0] or list(y.type.get_shape()) != xs:
            raise imp.bad(f"condition shape {cs} must be the values' {xs} or [{xs[0] if xs else '?'}]")
        r = nn.ReshapeOp([c], TensorType(c.type.element_type, cs + [1] * (len(xs) - 1)))
        imp.block.add_op(r)
        c = r.result
    if not nn.is_bool(c.type.element_type):
        raise imp.bad(f"condition '{imp.tensor(op.inputs[0]).name}' is {c.type.element_type}, not bool")
    if x.type.element_type != y.type.element_type:
        raise imp.bad(f"selects between {x.type.element_type} and {y.type.element_type} "
                      "(LiteRT copies the stored values: both must have one type)")
    emit(c, x, y)


@_handles("SELECT", "SELECT_V2")
def _select(imp: _FloatImporter, op: _Op):
    select(imp, op, imp.act, lambda c, x, y: imp.emit_nn(nn.SelectOp, [c, x, y], op.outputs[0]))


@_handles("FILL")
def _fill(imp: _FloatImporter, op: _Op):
    """FILL with dims known at import and a constant value: an `nn.constant` (a bool mask of ones)."""
    dims = imp.static_ints(op.inputs[0], "dims").reshape(-1).tolist()
    i = op.inputs[1]
    if i < 0 or not imp.tensor(i).constant:
        raise _Unsupported("with a run-time value")
    v = imp.raw_array(i).reshape(-1)
    if v.size != 1:
        raise imp.bad(f"value must hold one element, got {v.size}")
    if any(d < 0 for d in dims):
        raise imp.bad(f"dims {dims} must not be negative")
    el = _plain(imp, op.outputs[0], "output tensor")
    arr = np.full(dims, v[0])
    imp.check_declared(op.outputs[0], dims)
    c = nn.ConstantOp(arr, TensorType(el, dims))
    c.result.name_hint = ssa_name(imp.tensor(op.outputs[0]).name)
    imp.block.add_op(c)
    imp.values[op.outputs[0]] = c.result


_UNARY = {
    "LOGISTIC": nn.LogisticOp,
    "TANH": nn.TanhOp,
    "HARD_SWISH": nn.HardSwishOp,
    "ELU": nn.EluOp,
    "LOG_SOFTMAX": nn.LogSoftmaxOp,
    "SOFTMAX": nn.SoftmaxOp,
    "LEAKY_RELU": nn.LeakyReluOp,
}


@_handles(*_UNARY)
def _unary(imp: _FloatImporter, op: _Op):
    x = imp.act(op.inputs[0])
    attrs = {}
    if op.name == "SOFTMAX":
        attrs["beta"] = float(np.float32(op.options["Beta"]))
    if op.name == "LEAKY_RELU":
        attrs["alpha"] = float(np.float32(op.options["Alpha"]))
    imp.emit_nn(_UNARY[op.name], [x], op.outputs[0], attrs)


@_handles("GELU")
def _gelu(imp: _FloatImporter, op: _Op):
    x = imp.act(op.inputs[0])
    imp.emit_nn(nn.GeluOp, [x], op.outputs[0], {"approximate": bool(op.options.get("Approximate", False))})


@_handles("RSQRT")
def _rsqrt(imp: _FloatImporter, op: _Op):
    imp.emit_nn(nn.RsqrtOp, [imp.act(op.inputs[0])], op.outputs[0])


@_handles("NEG")
def _neg(imp: _FloatImporter, op: _Op):
    """Float NEG as `nn.mul(x, -1.0)`: exact in IEEE arithmetic (signs of zeros included),
    so it is TFLite's `-x` bit for bit and lowers wherever a float multiply does."""
    x = imp.act(op.inputs[0])
    minus_one = nn.ConstantOp(np.array(-1.0, np.float32), TensorType(Float32Type(), []))
    imp.block.add_op(minus_one)
    imp.emit_nn(nn.MulOp, [x, minus_one.result], op.outputs[0])


@_handles("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1")
def _relu(imp: _FloatImporter, op: _Op):
    x = imp.act(op.inputs[0])
    if op.name == "RELU":
        imp.emit_nn(nn.ReluOp, [x], op.outputs[0])
        return
    lo, hi = _ACT_REAL[{"RELU6": "relu6", "RELU_N1_TO_1": "relu_n1_to_1", "RELU_0_TO_1": "relu_0_to_1"}[op.name]]
    imp.emit_nn(nn.ClipOp, [x], op.outputs[0], {"min": lo, "max": hi})


@_handles("AVERAGE_POOL_2D", "MAX_POOL_2D")
def _pool(imp: _FloatImporter, op: _Op):
    o = op.options
    x = imp.act(op.inputs[0])
    n, h, w, c = _rank(imp, x, 4, "input")
    kernel = _positive(imp, "filter size", o["FilterHeight"], o["FilterWidth"])
    strides = _positive(imp, "strides", o["StrideH"], o["StrideW"])
    pads = _tflite_padding(o["Padding"], (h, w), kernel, strides, (1, 1))
    cls = nn.AvgPool2DOp if op.name == "AVERAGE_POOL_2D" else nn.MaxPool2DOp
    attrs = dict(kernel=kernel, strides=strides, padding=pads, **imp.fused_real(o["FusedActivationFunction"]))
    imp.emit_nn(cls, [x], op.outputs[0], attrs)


_REDUCE = {"MEAN": nn.MeanOp, "SUM": nn.SumOp, "REDUCE_MAX": nn.ReduceMaxOp, "REDUCE_MIN": nn.ReduceMinOp}


@_handles(*_REDUCE)
def _reduce(imp: _FloatImporter, op: _Op):
    x = imp.act(op.inputs[0])
    axes = imp.static_ints(op.inputs[1], "axes").reshape(-1).tolist()
    rank = len(x.type.get_shape())
    for a in axes:
        if not -rank <= a < rank:
            raise imp.bad(f"axis {a} is out of range for rank {rank}")
    imp.emit_nn(_REDUCE[op.name], [x], op.outputs[0], {"axes": axes, "keep_dims": bool(op.options["KeepDims"])})


def _reshape_to(imp: _FloatImporter, x: SSAValue, out: int, shape: list[int]):
    imp.emit_nn(nn.ReshapeOp, [x], out, shape=shape)


@_handles("RESHAPE")
def _reshape(imp: _FloatImporter, op: _Op):
    x = imp.act(op.inputs[0])
    count = math.prod(x.type.get_shape())
    new_shape = None
    if len(op.inputs) > 1 and op.inputs[1] >= 0:
        i = op.inputs[1]
        if i in imp.static or imp.tensor(i).constant:
            new_shape = imp.static_ints(i, "shape").reshape(-1).tolist()
    if new_shape is None and op.options.get("NewShape"):
        new_shape = list(op.options["NewShape"])
    if new_shape is None:
        new_shape = list(imp.shape(op.outputs[0]))
    _reshape_to(imp, x, op.outputs[0], _resolve_shape(imp, new_shape, count))


@_handles("SQUEEZE")
def _squeeze(imp: _FloatImporter, op: _Op):
    x = imp.act(op.inputs[0])
    s = list(x.type.get_shape())
    dims = op.options.get("SqueezeDims") or []
    axes = {d % len(s) for d in dims} if dims else {k for k, d in enumerate(s) if d == 1}
    if any(s[a] != 1 for a in axes):
        raise imp.bad(f"cannot squeeze dimensions {sorted(axes)} of shape {s}")
    _reshape_to(imp, x, op.outputs[0], [d for k, d in enumerate(s) if k not in axes])


@_handles("EXPAND_DIMS")
def _expand_dims(imp: _FloatImporter, op: _Op):
    x = imp.act(op.inputs[0])
    s = list(x.type.get_shape())
    axis = imp.static_scalar(op.inputs[1], "axis")
    if not -len(s) - 1 <= axis <= len(s):
        raise imp.bad(f"axis {axis} is out of range for rank {len(s)}")
    if axis < 0:
        axis += len(s) + 1
    _reshape_to(imp, x, op.outputs[0], s[:axis] + [1] + s[axis:])


@_handles("TRANSPOSE")
def _transpose(imp: _FloatImporter, op: _Op):
    x = imp.act(op.inputs[0])
    perm = imp.static_ints(op.inputs[1], "perm").reshape(-1).tolist()
    rank = len(x.type.get_shape())
    imp.emit_nn(nn.TransposeOp, [x], op.outputs[0], {"perm": [p + rank if p < 0 else p for p in perm]})


@_handles("PAD", "PADV2")
def _pad(imp: _FloatImporter, op: _Op):
    x = imp.act(op.inputs[0])
    rank = len(x.type.get_shape())
    p = imp.static_ints(op.inputs[1], "paddings")
    if p.shape != (rank, 2):
        raise imp.bad(f"paddings must have shape [{rank}, 2], got {list(p.shape)}")
    attrs: dict = {"paddings": p.reshape(-1).tolist()}
    if op.name == "PADV2" and len(op.inputs) > 2 and op.inputs[2] >= 0:
        i = op.inputs[2]
        if not imp.tensor(i).constant:
            raise imp.bad("constant_values must be a constant")
        v = imp.raw_array(i).reshape(-1)
        if v.size != 1:
            raise imp.bad("constant_values must hold one value")
        attrs["pad_value"] = float(v[0])
    imp.emit_nn(nn.PadOp, [x], op.outputs[0], attrs)


@_handles("STRIDED_SLICE")
def _strided_slice(imp: _FloatImporter, op: _Op):
    from qdialect.importer.tflite import _slice_attrs

    o = op.options
    x = imp.act(op.inputs[0])
    s = tuple(x.type.get_shape())
    _check_strided_masks(o)
    begin = imp.static_ints(op.inputs[1], "begin").reshape(-1).tolist()
    end = imp.static_ints(op.inputs[2], "end").reshape(-1).tolist()
    strides = (
        imp.static_ints(op.inputs[3], "strides").reshape(-1).tolist()
        if len(op.inputs) > 3 and op.inputs[3] >= 0 else [1] * len(begin)
    )
    if not len(begin) == len(end) == len(strides) or len(begin) > len(s) or 0 in strides:
        raise imp.bad(f"begin/end/strides {begin}/{end}/{strides} do not fit rank {len(s)}")
    idx = strided_slice_indices(s, begin, end, strides, o["BeginMask"], o["EndMask"], o["ShrinkAxisMask"], bool(o["Offset"]))
    b, e, st, shape = _slice_attrs(idx, s, strides)
    imp.emit_nn(nn.SliceOp, [x], op.outputs[0], {"begin": b, "end": e, "strides": st}, shape=shape)


@_handles("SLICE")
def _slice(imp: _FloatImporter, op: _Op):
    x = imp.act(op.inputs[0])
    s = list(x.type.get_shape())
    begin = imp.static_ints(op.inputs[1], "begin").reshape(-1).tolist()
    size = imp.static_ints(op.inputs[2], "size").reshape(-1).tolist()
    if not len(begin) == len(size) == len(s):
        raise imp.bad(f"begin {begin} and size {size} must have {len(s)} entries")
    end = [d if z == -1 else b + z for b, z, d in zip(begin, size, s)]
    if any(not 0 <= b <= e <= d for b, e, d in zip(begin, end, s)):
        raise imp.bad(f"slice begin {begin} size {size} is outside shape {s}")
    imp.emit_nn(nn.SliceOp, [x], op.outputs[0], {"begin": begin, "end": end, "strides": [1] * len(s)},
                shape=[e - b for b, e in zip(begin, end)])


@_handles("CONCATENATION")
def _concatenation(imp: _FloatImporter, op: _Op):
    o = op.options
    xs = [imp.act(i, f"input {k}") for k, i in enumerate(op.inputs)]
    if not xs:
        raise imp.bad("no inputs")
    rank = len(xs[0].type.get_shape())
    axis = o["Axis"]
    if not -rank <= axis < rank:
        raise imp.bad(f"axis {axis} is out of range for rank {rank}")
    imp.emit_nn(nn.ConcatenationOp, xs, op.outputs[0],
                {"axis": axis % rank, **imp.fused_real(o["FusedActivationFunction"])})


@_handles("PACK")
def _pack(imp: _FloatImporter, op: _Op):
    xs = [imp.act(i, f"input {k}") for k, i in enumerate(op.inputs)]
    if nn.is_bool(xs[0].type.element_type):
        raise _Unsupported("on bool tensors: LiteRT's PACK has no bool kernel")
    s = list(xs[0].type.get_shape())
    axis = op.options["Axis"] % (len(s) + 1)
    expanded = []
    for v in xs:
        if list(v.type.get_shape()) != s:
            raise imp.bad(f"inputs of shapes {s} and {list(v.type.get_shape())} cannot be packed")
        r = nn.ReshapeOp([v], TensorType(v.type.element_type, s[:axis] + [1] + s[axis:]))
        imp.block.add_op(r)
        expanded.append(r.result)
    imp.emit_nn(nn.ConcatenationOp, expanded, op.outputs[0], {"axis": axis})


FLOAT_OPERATORS = tuple(sorted(_FLOAT_HANDLERS))
FLOAT_HANDLERS = _FLOAT_HANDLERS
"""Operator name -> handler of the float import (also the float islands of quantized models)."""


def import_tflite_float(data: bytes, *, batch: int = 1, name: str = "model") -> ModuleOp:
    """Import a float32 TFLite model as a verified module of `nn` ops on f32 tensors."""
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise TypeError(f"import_tflite_float expects bytes, got {type(data).__name__}")
    g = _read(data)
    used = set(g.inputs) | set(g.outputs)
    for op in g.ops:
        used.update(i for i in op.inputs if i >= 0)
    if any(g.tensors[i].quantized for i in used):
        raise TFLiteImportError(
            "this model has quantized tensors: it is already quantized (import it with qd-import), "
            "the float import reads float32 models"
        )
    _scan_unsupported(g, _FLOAT_HANDLERS)
    imp = _FloatImporter(g, batch)
    try:
        with np.errstate(all="ignore"):
            results, in_names, out_names = _run(imp)
    except TFLiteImportError:
        raise
    except (ArithmeticError, ValueError, IndexError, KeyError, TypeError, RuntimeError, VerifyException) as e:
        where = imp.where()
        raise TFLiteImportError(f"{where + ': ' if where else ''}malformed model ({type(e).__name__}: {e})") from None
    block = imp.block
    block.add_op(func.ReturnOp(*results))
    ftype = ([a.type for a in block.args], [v.type for v in results])
    arg_attrs = ArrayAttr([DictionaryAttr({"tflite.name": StringAttr(n)}) for n in in_names])
    res_attrs = ArrayAttr([DictionaryAttr({"tflite.name": StringAttr(n)}) for n in out_names])
    f = func.FuncOp("main", ftype, Region(block), arg_attrs=arg_attrs, res_attrs=res_attrs)
    module = ModuleOp([f], sym_name=StringAttr(name)) if name else ModuleOp([f])
    try:
        verify_module(module)
    except VerifyException as e:
        raise TFLiteImportError(f"the imported module does not verify: {e}") from None
    return module


def _run(imp: _FloatImporter):
    g = imp.g
    for k, i in enumerate(g.inputs):
        imp.block.insert_arg(imp.tensor_type(i), k)
    for k, i in enumerate(g.inputs):
        arg = imp.block.args[k]
        arg.name_hint = ssa_name(imp.tensor(i).name)
        imp.values[i] = arg
    in_names = [imp.tensor(i).name for i in g.inputs]
    for op in g.ops:
        imp.op = op
        try:
            lo, hi = _ARITY.get(op.name, (1, 1))
            if len(op.inputs) < lo or (hi is not None and len(op.inputs) > hi):
                raise imp.bad(f"expects {lo}{'' if lo == hi else '+'} inputs, has {len(op.inputs)}")
            if (len(op.outputs) < 1) if op.name in _MULTI_OUT else (len(op.outputs) != 1):
                raise imp.bad(f"has {len(op.outputs)} outputs")
            if not imp.fold(op):
                imp.handlers[op.name](imp, op)
        except _Unsupported as e:
            imp.unsupported.append((op.name, str(e)))
    imp.op = None
    if imp.unsupported:
        raise TFLiteImportError(_format_unsupported(imp.unsupported))
    results, out_names = [], []
    for i in g.outputs:
        if i not in imp.values:
            raise imp.bad(f"graph output '{imp.tensor(i).name}' is not produced by any operator")
        results.append(imp.values[i])
        out_names.append(imp.tensor(i).name)
    return results, in_names, out_names


def import_tflite_float_file(path, *, batch: int = 1, name: str | None = None) -> ModuleOp:
    """Read and import a float32 .tflite file (module named after the file's stem)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise TFLiteImportError(f"cannot read {p}: {e.strerror or e}") from None
    return import_tflite_float(data, batch=batch, name=p.stem if name is None else name)
