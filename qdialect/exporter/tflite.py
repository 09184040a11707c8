"""Canonical qnn module (L1) -> TFLite flatbuffer that LiteRT runs with the same integers.

    from qdialect.exporter import export_tflite
    data = export_tflite(module)          # bytes of a .tflite model

The inverse of `qdialect.importer.tflite`: every `qnn` op becomes the TFLite
builtin operator it was imported from, with its options; tensors keep their
storage types (int8, uint8, int16, int32, int64 biases) and per-tensor or
per-channel quantization; constants become buffers; `act_min` / `act_max`
fold back into the fused activation (NONE, RELU, RELU6, RELU_N1_TO_1) whose
bounds TFLite's CalculateActivationRangeQuantized computes, or become a
MAXIMUM / MINIMUM against constants where no fused activation gives them;
explicit padding becomes SAME or VALID (or a PAD before a convolution);
`qnn.quantize` / `quant.qcast` / `qnn.requantize` are QUANTIZE,
`qnn.dequantize` / `quant.dcast` DEQUANTIZE; `qnn.layer_norm` is its body
chain; float and mask islands (`nn` ops on float32 / int32 / bool tensors)
are TFLite's float operators.  The entry function's arguments and results
are the graph's inputs and outputs with their `tflite.name`s (or `onnx.name`s), and one
signature (`serving_default`) maps those names to them.

Only modules whose numbers TFLite's kernels reproduce are written: every op's
`rounding` must be `tflite` (the reference kernels) or `litert` (LiteRT's
default path), with TFLite's accumulator (i32, i64 for 16-bit activations)
and bias handling.  Anything else (an `onnxruntime` / `onnx` / `half_even`
profile, an op with no TFLite kernel) raises `TFLiteExportError` naming
every offending op and where it is, at once.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field

import flatbuffers
import numpy as np
import tflite
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    TensorType,
)
from xdsl.ir import Operation, SSAValue

from qdialect.dialects import qnn
from qdialect.dialects.quant import UniformQuantizedType
from qdialect.importer.tflite import _activation_bounds, _tflite_padding

__all__ = ["TFLiteExportError", "export_tflite", "EXPORTABLE_ROUNDINGS", "SUPPORTED_OPS"]

EXPORTABLE_ROUNDINGS = ("tflite", "litert")
"""Rounding profiles TFLite's kernels reproduce (reference kernels; LiteRT's default path)."""


class TFLiteExportError(ValueError):
    """A module `export_tflite` cannot write as a .tflite; the message names every offending op."""


class _Refused(Exception):
    """One op the exporter cannot write (collected, reported at once)."""


def _mod(name: str):
    """The tflite schema module `tflite.<name>` (the package star-imports classes over them)."""
    return importlib.import_module(f"tflite.{name}")


_TT = tflite.TensorType
_ACT = tflite.ActivationFunctionType
_QUANT_TYPES = {("i", 8): _TT.INT8, ("u", 8): _TT.UINT8, ("i", 16): _TT.INT16, ("u", 16): _TT.UINT16,
                ("i", 32): _TT.INT32, ("i", 4): _TT.INT4}
_NP = {_TT.INT8: np.int8, _TT.UINT8: np.uint8, _TT.INT16: np.int16, _TT.UINT16: np.uint16, _TT.INT32: np.int32,
       _TT.INT64: np.int64, _TT.FLOAT32: np.float32, _TT.FLOAT16: np.float16, _TT.BOOL: np.bool_}

# Ops whose options table is not CamelCase(op) + "Options" (None: no options table).
_OPTIONS_TABLE: dict[str, str | None] = {
    "CONV_2D": "Conv2DOptions",
    "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions",
    "TRANSPOSE_CONV": "TransposeConvOptions",
    "FULLY_CONNECTED": "FullyConnectedOptions",
    "BATCH_MATMUL": "BatchMatMulOptions",
    "AVERAGE_POOL_2D": "Pool2DOptions",
    "MAX_POOL_2D": "Pool2DOptions",
    "MEAN": "ReducerOptions",
    "SUM": "ReducerOptions",
    "REDUCE_MAX": "ReducerOptions",
    "REDUCE_MIN": "ReducerOptions",
    "MAXIMUM": "MaximumMinimumOptions",
    "MINIMUM": "MaximumMinimumOptions",
    "PADV2": "PadV2Options",
    "SPLIT_V": "SplitVOptions",
    "LOG_SOFTMAX": "LogSoftmaxOptions",
    "SELECT_V2": "SelectV2Options",
    "GATHER_ND": "GatherNdOptions",
    "ARG_MAX": "ArgMaxOptions",
    "ARG_MIN": "ArgMinOptions",
    "EQUAL": "EqualOptions",
    "NOT_EQUAL": "NotEqualOptions",
    "LESS": "LessOptions",
    "LESS_EQUAL": "LessEqualOptions",
    "GREATER": "GreaterOptions",
    "GREATER_EQUAL": "GreaterEqualOptions",
    "LOGICAL_AND": "LogicalAndOptions",
    "LOGICAL_OR": "LogicalOrOptions",
    "LOGICAL_NOT": "LogicalNotOptions",
    "CAST": "CastOptions",
    "LOGISTIC": None, "TANH": None, "RELU": None, "RELU6": None, "RELU_N1_TO_1": None, "RELU_0_TO_1": None,
    "PRELU": None, "ELU": None, "EXP": None, "RSQRT": None, "SQRT": None, "ABS": None, "NEG": None,
    "QUANTIZE": None, "DEQUANTIZE": None, "HARD_SWISH": None, "SQUARED_DIFFERENCE": None,
}


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:].lower() for p in name.split("_"))


def _options_table(op: str) -> str | None:
    if op in _OPTIONS_TABLE:
        return _OPTIONS_TABLE[op]
    guess = _camel(op) + "Options"
    return guess if hasattr(tflite.BuiltinOptions, guess) else None


# ----- the model being written ------------------------------------------------------------------


@dataclass
class _Tensor:
    shape: list[int]
    type: int
    name: str = ""
    data: bytes | None = None
    scales: list[float] | None = None
    zero_points: list[int] | None = None
    axis: int = 0


@dataclass
class _Operator:
    op: str
    inputs: list[int]
    outputs: list[int]
    options: dict = field(default_factory=dict)
    origin: str = ""  # the module op it comes from, and where


class _Model:
    """Tensors and operators of one subgraph, serialized with the `tflite` package's builders."""

    def __init__(self):
        self.tensors: list[_Tensor] = []
        self.ops: list[_Operator] = []
        self.origin = ""

    def tensor(self, shape, ttype: int, *, name: str = "", q: UniformQuantizedType | None = None,
               data: np.ndarray | None = None, keep_uint8: bool = False) -> int:
        """A tensor; a uint8 quantized one is written as int8 with values and zero points - 128 (the
        same real numbers and integer differences: TFLite's int8 kernels, which take per-channel int8
        weights next to it), unless `keep_uint8` (graph inputs and outputs keep their type)."""
        t = _Tensor([int(d) for d in shape], ttype, name)
        if q is not None:
            shift = 0
            if not q.signed and q.storage_width.data == 8 and not keep_uint8:
                shift, t.type = -128, _TT.INT8
                if data is not None:
                    data = np.asarray(data).astype(np.int16) - 128
            t.scales = [float(np.float32(s)) for s in np.atleast_1d(q.scale_array())]
            t.zero_points = [int(z) + shift for z in np.atleast_1d(q.zero_point_array())]
            t.axis = q.axis if q.is_per_axis else 0
        if data is not None and t.type == _TT.INT4:  # two values a byte, the first in the low nibble
            flat = (np.asarray(data).astype(np.int64).reshape(-1) & 0xF).astype(np.uint8)
            if flat.size % 2:
                flat = np.append(flat, np.uint8(0))
            t.data = (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8).tobytes()
        elif data is not None:
            arr = np.ascontiguousarray(np.asarray(data).astype(_NP[t.type]).reshape(t.shape))
            t.data = arr.tobytes()
        self.tensors.append(t)
        return len(self.tensors) - 1

    def int32_const(self, values, shape=None, name: str = "") -> int:
        arr = np.asarray(values, np.int32)
        return self.tensor(arr.shape if shape is None else shape, _TT.INT32, name=name, data=arr)

    def emit(self, op: str, inputs: list[int], outputs: list[int], options: dict | None = None) -> None:
        self.ops.append(_Operator(op, list(inputs), list(outputs), dict(options or {}), self.origin))

    # -- serialization --
    def serialize(self, inputs: list[int], outputs: list[int], in_names: list[str], out_names: list[str],
                  description: str) -> bytes:
        b = flatbuffers.Builder(1 << 16)

        def ints(values, kind: str = "int32") -> int:
            values = list(values)
            size = {"int32": 4, "int64": 8, "float32": 4}[kind]
            prepend = {"int32": b.PrependInt32, "int64": b.PrependInt64, "float32": b.PrependFloat32}[kind]
            b.StartVector(size, len(values), size)
            for v in reversed(values):
                prepend(v)
            return b.EndVector()

        def offsets(offs) -> int:
            b.StartVector(4, len(offs), 4)
            for off in reversed(offs):
                b.PrependUOffsetTRelative(off)
            return b.EndVector()

        buf = _mod("Buffer")
        buffer_offsets, tensor_buffer = [], []
        buf.BufferStart(b)
        buffer_offsets.append(buf.BufferEnd(b))  # buffer 0: the empty sentinel
        for t in self.tensors:
            if t.data is None:
                tensor_buffer.append(0)
                continue
            vec = _byte_vector(b, t.data) if t.data else None
            buf.BufferStart(b)
            if vec is not None:
                buf.BufferAddData(b, vec)
            tensor_buffer.append(len(buffer_offsets))
            buffer_offsets.append(buf.BufferEnd(b))

        ten, qp = _mod("Tensor"), _mod("QuantizationParameters")
        tensor_offsets = []
        for k, t in enumerate(self.tensors):
            name = b.CreateString(t.name or f"t{k}")
            shape = ints(t.shape)
            quant = None
            if t.scales is not None:
                sv, zv = ints(t.scales, "float32"), ints(t.zero_points, "int64")
                qp.QuantizationParametersStart(b)
                qp.QuantizationParametersAddScale(b, sv)
                qp.QuantizationParametersAddZeroPoint(b, zv)
                qp.QuantizationParametersAddQuantizedDimension(b, t.axis)
                quant = qp.QuantizationParametersEnd(b)
            ten.TensorStart(b)
            ten.TensorAddShape(b, shape)
            ten.TensorAddType(b, t.type)
            ten.TensorAddBuffer(b, tensor_buffer[k])
            ten.TensorAddName(b, name)
            if quant is not None:
                ten.TensorAddQuantization(b, quant)
            tensor_offsets.append(ten.TensorEnd(b))

        codes: dict[str, int] = {}
        for o in self.ops:
            codes.setdefault(o.op, len(codes))
        oc = _mod("OperatorCode")
        code_offsets = []
        for name in codes:
            code = getattr(tflite.BuiltinOperator, name)
            oc.OperatorCodeStart(b)
            oc.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
            oc.OperatorCodeAddBuiltinCode(b, code)
            oc.OperatorCodeAddVersion(b, 1)
            code_offsets.append(oc.OperatorCodeEnd(b))

        opm = _mod("Operator")
        op_offsets = []
        for o in self.ops:
            ins, outs = ints(o.inputs), ints(o.outputs)
            opt_type, opt = _build_options(b, o.op, o.options, ints)
            opm.OperatorStart(b)
            opm.OperatorAddOpcodeIndex(b, codes[o.op])
            opm.OperatorAddInputs(b, ins)
            opm.OperatorAddOutputs(b, outs)
            if opt_type:
                opm.OperatorAddBuiltinOptionsType(b, opt_type)
                opm.OperatorAddBuiltinOptions(b, opt)
            op_offsets.append(opm.OperatorEnd(b))

        sg = _mod("SubGraph")
        tensors_vec, ops_vec = offsets(tensor_offsets), offsets(op_offsets)
        in_vec, out_vec = ints(inputs), ints(outputs)
        sg_name = b.CreateString("main")
        sg.SubGraphStart(b)
        sg.SubGraphAddTensors(b, tensors_vec)
        sg.SubGraphAddInputs(b, in_vec)
        sg.SubGraphAddOutputs(b, out_vec)
        sg.SubGraphAddOperators(b, ops_vec)
        sg.SubGraphAddName(b, sg_name)
        subgraph = sg.SubGraphEnd(b)

        tm, sd = _mod("TensorMap"), _mod("SignatureDef")

        def tensor_maps(names, indices) -> int:
            maps = []
            for n, i in zip(names, indices):
                s = b.CreateString(n)
                tm.TensorMapStart(b)
                tm.TensorMapAddName(b, s)
                tm.TensorMapAddTensorIndex(b, i)
                maps.append(tm.TensorMapEnd(b))
            return offsets(maps)

        sig_in, sig_out = tensor_maps(in_names, inputs), tensor_maps(out_names, outputs)
        key = b.CreateString("serving_default")
        sd.SignatureDefStart(b)
        sd.SignatureDefAddInputs(b, sig_in)
        sd.SignatureDefAddOutputs(b, sig_out)
        sd.SignatureDefAddSignatureKey(b, key)
        sd.SignatureDefAddSubgraphIndex(b, 0)
        signature = sd.SignatureDefEnd(b)

        model = _mod("Model")
        codes_vec, subgraphs_vec = offsets(code_offsets), offsets([subgraph])
        buffers_vec, sigs_vec = offsets(buffer_offsets), offsets([signature])
        desc = b.CreateString(description)
        model.ModelStart(b)
        model.ModelAddVersion(b, 3)
        model.ModelAddOperatorCodes(b, codes_vec)
        model.ModelAddSubgraphs(b, subgraphs_vec)
        model.ModelAddDescription(b, desc)
        model.ModelAddBuffers(b, buffers_vec)
        model.ModelAddSignatureDefs(b, sigs_vec)
        root = model.ModelEnd(b)
        b.Finish(root, file_identifier=b"TFL3")
        return bytes(b.Output())


def _byte_vector(b, raw: bytes, alignment: int = 16) -> int:
    """A [ubyte] vector aligned to 16 bytes (the kernels read constants in place)."""
    b.StartVector(1, len(raw), alignment)
    b.head = b.head - len(raw)
    b.Bytes[b.head: b.head + len(raw)] = raw
    return b.EndVector()


def _build_options(b, op: str, options: dict, ints) -> tuple[int, int]:
    """(BuiltinOptions type, table offset) of `op`'s options (snake_case schema field names)."""
    table = _options_table(op)
    if table is None:
        if options:
            raise AssertionError(f"{op} has no options table, got {sorted(options)}")
        return 0, 0
    module = _mod(table)
    prepared = []
    for key, value in options.items():
        camel = "".join(p[:1].upper() + p[1:] for p in key.split("_"))
        adder = getattr(module, f"{table}Add{camel}")
        if hasattr(module, f"{table}Start{camel}Vector"):
            value = ints([int(v) for v in value])
        prepared.append((adder, value))
    getattr(module, f"{table}Start")(b)
    for adder, value in prepared:
        adder(b, value)
    return getattr(tflite.BuiltinOptions, table), getattr(module, f"{table}End")(b)


# ----- module -> model ------------------------------------------------------------------------------


def _element_tflite_type(el) -> int:
    if isinstance(el, UniformQuantizedType):
        key = ("i" if el.signed else "u", el.storage_width.data)
        if key not in _QUANT_TYPES:
            raise _Refused(f"{el.storage} storage has no TFLite tensor type")
        return _QUANT_TYPES[key]
    if isinstance(el, Float32Type):
        return _TT.FLOAT32
    if isinstance(el, Float16Type):
        return _TT.FLOAT16
    if isinstance(el, IntegerType):
        width = el.width.data
        signed = el.signedness.data != Signedness.UNSIGNED
        table = {1: _TT.BOOL, 8: _TT.INT8 if signed else _TT.UINT8}
        if signed:
            table.update({16: _TT.INT16, 32: _TT.INT32, 64: _TT.INT64})
        if width in table:
            return table[width]
    raise _Refused(f"element type {el} has no TFLite tensor type")


def _qtype(v: SSAValue) -> UniformQuantizedType | None:
    return qnn.qtype(v)


def _shape(v: SSAValue) -> list[int]:
    return [int(d) for d in v.type.get_shape()]


class _Exporter:
    def __init__(self, f: func.FuncOp, locations: dict | None = None):
        self.f = f
        self.locations = locations or {}
        self.m = _Model()
        self.values: dict[SSAValue, int] = {}
        self.refused: list[tuple[str, str, str]] = []  # (op name, where, why)
        self.uint8_views: dict[SSAValue, int] = {}  # uint8 values' uint8 tensors
        self.index = 0

    # -- values --
    def new_tensor(self, v: SSAValue, name: str = "") -> int:
        t = v.type
        if not isinstance(t, TensorType):
            raise _Refused(f"value of type {t} is not a ranked tensor")
        if not t.has_static_shape():
            raise _Refused(f"value of type {t} has a dynamic shape (TFLite tensors here need static shapes)")
        i = self.m.tensor(_shape(v), _element_tflite_type(t.element_type), name=name or (v.name_hint or ""),
                          q=_qtype(v))
        self.values[v] = i
        return i

    def of(self, v: SSAValue) -> int:
        if v not in self.values:
            raise _Refused("reads a value defined outside what the exporter has written")
        return self.values[v]

    def same_type_const(self, like: SSAValue, stored: int, shape=(1,)) -> int:
        t = like.type
        return self.m.tensor(list(shape), _element_tflite_type(t.element_type), q=_qtype(like),
                             data=np.full(shape, stored))

    # -- driving --
    def run(self) -> bytes:
        block = self.f.body.block
        arg_names = _names(self.f.arg_attrs, len(block.args), "input")
        inputs = []
        for a, n in zip(block.args, arg_names):
            try:
                i = self.new_tensor(a, n)
                if self.m.tensors[i].type != _element_tflite_type(a.type.element_type):  # uint8 at the edge
                    edge = self.m.tensor(_shape(a), _TT.UINT8, name=n, q=_qtype(a), keep_uint8=True)
                    self.m.tensors[i].name = ""
                    self.m.emit("QUANTIZE", [edge], [i])
                    i = self.uint8_views[a] = edge
                inputs.append(i)
            except _Refused as e:
                self.refused.append(("argument", f"@{self.f.sym_name.data} argument {n}", str(e)))
        self.ops(block.ops)
        ret = block.last_op
        if self.refused:
            raise TFLiteExportError(_format_refused(self.refused))
        out_names = _names(self.f.res_attrs, len(ret.operands), "output")
        outputs = []
        for v, n in zip(ret.operands, out_names):
            i = self.of(v)
            if i in inputs or i in outputs or self.m.tensors[i].data is not None:
                j = self.m.tensor(self.m.tensors[i].shape, self.m.tensors[i].type, q=_qtype(v),
                                  keep_uint8=self.m.tensors[i].type == _TT.UINT8)
                self.m.emit("RESHAPE", [i, self.m.int32_const(self.m.tensors[i].shape)], [j],
                            {"new_shape": self.m.tensors[i].shape})
                i = j
            if self.m.tensors[i].type != _element_tflite_type(v.type.element_type):  # uint8 at the edge
                j = self.m.tensor(self.m.tensors[i].shape, _TT.UINT8, q=_qtype(v), keep_uint8=True)
                self.m.emit("QUANTIZE", [i], [j])
                i = j
            self.m.tensors[i].name = n
            outputs.append(i)
        used = {t.name for k, t in enumerate(self.m.tensors) if k in inputs or k in outputs}
        for k, t in enumerate(self.m.tensors):
            if k not in inputs and k not in outputs and (not t.name or t.name in used):
                t.name = f"{t.name or 't'}_{k}"
        return self.m.serialize(inputs, outputs, arg_names, out_names, "qdialect qd-export")

    def ops(self, ops) -> None:
        for op in ops:
            if isinstance(op, (func.ReturnOp, qnn.YieldOp)):
                continue
            self.index += 1
            try:
                self.m.origin = f"{op.name} at {self.where(op)}"
                _check_profile(op)
                _check_same_params(op)
                handler = _HANDLERS.get(op.name)
                if handler is None:
                    raise _Refused("TFLite has no kernel for it" if op.name.startswith(("qnn.", "nn.", "quant."))
                                   else "not a qnn / nn / quant op")
                handler(self, op)
                self.flush()
            except _Refused as e:
                self.refused.append((op.name, self.where(op), str(e)))
                for r in op.results:  # keep going: every offending op at once
                    if r not in self.values and isinstance(r.type, TensorType):
                        try:
                            self.new_tensor(r)
                        except _Refused:
                            pass

    def where(self, op: Operation) -> str:
        if id(op) in self.locations:
            return self.locations[id(op)]
        res = f" (%{op.results[0].name_hint})" if op.results and op.results[0].name_hint else ""
        return f"@{self.f.sym_name.data} op {self.index}{res}"

    # -- helpers for handlers --
    def out(self, op: Operation, k: int = 0) -> int:
        return self.new_tensor(op.results[k])

    def fused(self, op: Operation, allowed: bool = True) -> tuple[int, tuple[int, int] | None]:
        """(fused activation code, clamp still to apply or None) for an op's act_min / act_max."""
        act_min, act_max = op.attr("act_min"), op.attr("act_max")
        if act_min is None and act_max is None:
            return _ACT.NONE, None
        q = _qtype(op.results[0])
        lo, hi = q.storage_range()
        want = (max(lo, act_min if act_min is not None else lo), min(hi, act_max if act_max is not None else hi))
        if want == (lo, hi):
            return _ACT.NONE, None
        if allowed and not q.is_per_axis:
            for name, code in (("relu", _ACT.RELU), ("relu6", _ACT.RELU6), ("relu_n1_to_1", _ACT.RELU_N1_TO_1)):
                if _activation_bounds(name, q) == want:
                    return code, None
        return _ACT.NONE, want

    def clamp_after(self, op: Operation, produced: int, bounds: tuple[int, int] | None) -> None:
        """Apply stored-value bounds a fused activation cannot give: MAXIMUM / MINIMUM with constants
        of the result's own type (TFLite copies the larger / smaller stored value)."""
        self.flush()
        if bounds is None:
            return
        r = op.results[0]
        lo, hi = bounds
        t = self.m.tensors[produced]
        mid = self.m.tensor(t.shape, t.type, q=_qtype(r))
        # the op wrote `produced`; re-point: produced -> MAXIMUM -> mid -> MINIMUM -> final
        final = self.m.tensor(t.shape, t.type, q=_qtype(r))
        self.m.emit("MAXIMUM", [produced, self.same_type_const(r, lo)], [mid])
        self.m.emit("MINIMUM", [mid, self.same_type_const(r, hi)], [final])
        self.values[r] = final

    def uint8_island(self, op: Operation, ins: list[int], outs: list[int]) -> tuple[list[int], list[int]]:
        """Kernels that round stored values themselves (average pool, bilinear resize, a
        concatenation that rescales, MEAN / SUM) give other integers on int8 than on uint8: a
        uint8 op runs on uint8 tensors between exact QUANTIZE shifts (same scale, zero point
        + / - 128) of the int8 tensors around it."""
        vals = list(op.operands[: len(ins)])
        if not all(_is_uint8(_qtype(v)) for v in [*vals, *op.results[: len(outs)]]):
            return ins, outs  # (mixed int8 / uint8: the int8 kernel, or its refusal)
        new_ins = []
        for i, v in zip(ins, vals):
            u = self.m.tensor(self.m.tensors[i].shape, _TT.UINT8, q=_qtype(v), keep_uint8=True)
            self.m.emit("QUANTIZE", [i], [u])
            new_ins.append(u)
        new_outs = []
        for o, r in zip(outs, op.results):
            u = self.m.tensor(self.m.tensors[o].shape, _TT.UINT8, q=_qtype(r), keep_uint8=True)
            new_outs.append(u)
        self.pending = list(zip(new_outs, outs))
        return new_ins, new_outs

    def uint8_view(self, v: SSAValue) -> int:
        """A uint8 tensor of the uint8 value `v` (written as int8): the graph input's own, else a
        QUANTIZE shift of it (same scale, zero point + 128)."""
        if v not in self.uint8_views:
            i = self.of(v)
            u = self.m.tensor(self.m.tensors[i].shape, _TT.UINT8, q=_qtype(v), keep_uint8=True)
            self.m.emit("QUANTIZE", [i], [u])
            self.uint8_views[v] = u
        return self.uint8_views[v]

    def flush(self) -> None:
        """The QUANTIZE back to int8 after a uint8 island's op."""
        for u, o in getattr(self, "pending", []):
            self.m.emit("QUANTIZE", [u], [o])
        self.pending = []

    def padding(self, op: Operation, in_hw, k_hw, strides, dil) -> int | None:
        pads = list(op.attr("padding") or [0, 0, 0, 0])
        for code in (tflite.Padding.VALID, tflite.Padding.SAME):
            if _tflite_padding(code, in_hw, k_hw, strides, dil) == pads:
                return code
        return None


def _names(attrs: ArrayAttr | None, n: int, what: str) -> list[str]:
    names = []
    for k in range(n):
        name = None
        if attrs is not None and k < len(attrs.data) and isinstance(attrs.data[k], DictionaryAttr):
            for key in ("tflite.name", "onnx.name"):
                a = attrs.data[k].data.get(key)
                if isinstance(a, StringAttr) and a.data:
                    name = a.data
                    break
        names.append(name or f"{what}_{k}")
    seen: dict[str, int] = {}
    for k, nm in enumerate(names):  # signature names are keys: keep them distinct
        if nm in seen:
            names[k] = f"{nm}_{k}"
        seen[names[k]] = k
    return names


def _format_refused(items: list[tuple[str, str, str]]) -> str:
    parts = [f"{name} at {where}: {why}" for name, where, why in items]
    return f"cannot export {len(items)} op{'s' if len(items) != 1 else ''} to TFLite: " + "; ".join(parts)


def _check_profile(op: Operation) -> None:
    """Refuse knobs TFLite's kernels do not have (a rounding profile, accumulator or bias mode)."""
    if not isinstance(op, qnn.QnnOp):
        return
    attrs = op.ATTRS
    if "rounding" in attrs:
        r = op.attr("rounding", "tflite")
        if r not in EXPORTABLE_ROUNDINGS:
            raise _Refused(f"rounding = \"{r}\" (TFLite's kernels reproduce {' / '.join(EXPORTABLE_ROUNDINGS)} only)")
    if "bias" in attrs and op.attr("bias", "accumulator") != "accumulator":
        raise _Refused(f"bias = \"{op.attr('bias')}\" (TFLite adds the bias to the accumulator)")
    if "acc_overflow" in attrs and op.attr("acc_overflow", "wrap") != "wrap":
        raise _Refused(f"acc_overflow = \"{op.attr('acc_overflow')}\" (TFLite's accumulators wrap)")
    if "acc" in attrs and op.attr("acc") is not None:
        x = qnn.qtype(op.operands[0])
        default = "i64" if x is not None and x.storage_width.data > 8 else "i32"
        if op.attr("acc") != default and not (op.attr("acc") == "i64" and default == "i32"
                                               and len(op.operands) > 2 and _is_i64(op.operands[2])):
            raise _Refused(f"acc = \"{op.attr('acc')}\" (TFLite accumulates {default} here)")


_SAME_PARAMS = {"qnn.max_pool2d", "qnn.avg_pool2d", "qnn.maximum", "qnn.minimum", "qnn.reshape", "qnn.transpose",
                "qnn.pad", "qnn.slice", "qnn.split", "qnn.tile", "qnn.gather", "qnn.gather_nd", "qnn.mirror_pad",
                "qnn.space_to_depth", "qnn.depth_to_space", "qnn.resize_nearest_neighbor", "nn.select"}
"""Ops whose TFLite kernels copy or compare stored values: input and result quantization must be one."""


def _check_same_params(op: Operation) -> None:
    if op.name not in _SAME_PARAMS:
        return
    r = op.results[0].type.element_type
    if not isinstance(r, UniformQuantizedType):
        return
    for k, v in enumerate(op.operands):
        el = v.type.element_type
        if isinstance(el, UniformQuantizedType) and el != r:
            raise _Refused(f"operand {k} is {el}, the result {r}: TFLite's kernel does not requantize")


def _is_i64(v: SSAValue) -> bool:
    el = v.type.element_type
    return isinstance(el, IntegerType) and el.width.data == 64


# ----- handlers ------------------------------------------------------------------------------------

_HANDLERS: dict = {}


def _handles(*names):
    def register(fn):
        for n in names:
            _HANDLERS[n] = fn
        return fn

    return register


@_handles("qnn.constant", "nn.constant")
def _constant(ex: _Exporter, op):
    r = op.results[0]
    ex.values[r] = ex.m.tensor(_shape(r), _element_tflite_type(r.type.element_type), name=r.name_hint or "",
                               q=_qtype(r), data=op.array())


def _bias(ex: _Exporter, op, x: SSAValue, w: SSAValue) -> int:
    """The bias operand; an i64 (16x8) bias gets input scale * weight scale, as TFLite writes it."""
    b = op.operands[2] if len(op.operands) > 2 else None
    if b is None:
        return -1
    i = ex.of(b)
    t = ex.m.tensors[i]
    if t.scales is None and t.type in (_TT.INT64, _TT.INT32):
        xs = np.float32(float(_qtype(x).scale_array()))
        ws = np.atleast_1d(_qtype(w).scale_array()).astype(np.float32)
        t.scales = [float(np.float32(xs * s)) for s in ws]
        t.zero_points = [0] * len(t.scales)
        t.axis = 0
    return i


def _symmetric_weights(op, w: SSAValue) -> None:
    """TFLite's int8 / int16 convolution and per-channel kernels ignore a weight zero point: refuse one."""
    q = _qtype(w)
    zps = np.atleast_1d(q.zero_point_array()) - (128 if (not q.signed and q.storage_width.data == 8) else 0)
    if np.any(zps != 0):
        raise _Refused(f"weights with zero points {sorted(set(zps.tolist()))[:4]} (as int8): TFLite's int8 / "
                       "int16 kernels take symmetric weights (zero point 0)")


def _same_width(op) -> None:
    """TFLite's weighted kernels read and write one activation width (int8 -> int8, int16 -> int16;
    LiteRT's FULLY_CONNECTED writes zeros for int8 -> int16)."""
    x, r = _qtype(op.operands[0]), _qtype(op.results[0])
    if x.storage_width.data != r.storage_width.data:
        raise _Refused(f"{x.storage} input and {r.storage} result: TFLite's kernel reads and writes one "
                       "activation width")


def _is_uint8(q: UniformQuantizedType | None) -> bool:
    return q is not None and not q.signed and q.storage_width.data == 8


def _uint8_kernel(op) -> bool:
    """True for a uint8 op whose per-tensor uint8 weights have a zero point other than 128: TFLite's
    uint8 kernels take it (their filter offset), the int8 ones would not."""
    x, w, r = (_qtype(v) for v in (op.operands[0], op.operands[1], op.results[0]))
    return (_is_uint8(x) and _is_uint8(w) and _is_uint8(r) and not w.is_per_axis
            and int(w.zero_point_array()) != 128 and isinstance(op.operands[1].owner, qnn.ConstantOp))


def _weighted_operands(ex: _Exporter, op, xi: int, out: int) -> tuple[int, int, int]:
    """(input, weights, output) tensors of a weighted op: its own, or uint8 ones around a uint8 kernel
    (QUANTIZE shifts of the int8 input and output, the weights as stored)."""
    w = op.operands[1]
    if not _uint8_kernel(op):
        _symmetric_weights(op, w)
        return xi, ex.of(w), out
    xu = ex.m.tensor(ex.m.tensors[xi].shape, _TT.UINT8, q=_qtype(op.operands[0]), keep_uint8=True)
    ex.m.emit("QUANTIZE", [xi], [xu])
    wu = ex.m.tensor(_shape(w), _TT.UINT8, q=_qtype(w), data=w.owner.array(), keep_uint8=True)
    ou = ex.m.tensor(ex.m.tensors[out].shape, _TT.UINT8, q=_qtype(op.results[0]), keep_uint8=True)
    ex.pending = [(ou, out)]
    return xu, wu, ou


def _conv_common(ex: _Exporter, op, depthwise: bool):
    x, w = op.operands[0], op.operands[1]
    _same_width(op)
    n, h, wd, c = _shape(x)
    if depthwise:
        _, kh, kw, oc = _shape(w)
    else:
        oc, kh, kw, ic = _shape(w)
        if ic != c:
            raise _Refused(f"grouped convolution (input channels {c}, weights {ic}): TFLite CONV_2D has no groups")
    strides = list(op.attr("strides") or [1, 1])
    dil = list(op.attr("dilations") or [1, 1])
    xi = ex.of(x)
    code = ex.padding(op, (h, wd), (kh, kw), strides, dil)
    if code is None:
        pads = list(op.attr("padding"))
        xq = _qtype(x)
        padded = [n, h + pads[0] + pads[1], wd + pads[2] + pads[3], c]
        pi = ex.m.tensor(padded, _element_tflite_type(xq), q=xq)
        ex.m.emit("PAD", [xi, ex.m.int32_const([[0, 0], pads[0:2], pads[2:4], [0, 0]])], [pi])
        xi, code = pi, tflite.Padding.VALID
    act, clamp = ex.fused(op)
    bi = _bias(ex, op, x, w)
    out = ex.out(op)
    xi, wi, oi = _weighted_operands(ex, op, xi, out)
    opts = {"padding": code, "stride_h": strides[0], "stride_w": strides[1], "dilation_h_factor": dil[0],
            "dilation_w_factor": dil[1], "fused_activation_function": act}
    if depthwise:
        opts["depth_multiplier"] = oc // c
        ex.m.emit("DEPTHWISE_CONV_2D", [xi, wi, bi], [oi], opts)
    else:
        ex.m.emit("CONV_2D", [xi, wi, bi], [oi], opts)
    ex.clamp_after(op, out, clamp)


@_handles("qnn.conv2d")
def _conv2d(ex, op):
    _conv_common(ex, op, False)


@_handles("qnn.depthwise_conv2d")
def _depthwise(ex, op):
    _conv_common(ex, op, True)


@_handles("qnn.transpose_conv2d")
def _transpose_conv(ex: _Exporter, op):
    x, w = op.operands[0], op.operands[1]
    _symmetric_weights(op, w)
    _same_width(op)
    n, h, wd, c = _shape(x)
    oc, kh, kw, ic = _shape(w)
    y = _shape(op.results[0])
    strides = list(op.attr("strides") or [1, 1])
    pads = list(op.attr("padding"))
    code = None
    for cand in (tflite.Padding.VALID, tflite.Padding.SAME):
        got, sizes_ok = [], True
        for size, k, s, in_size in ((y[1], kh, strides[0], h), (y[2], kw, strides[1], wd)):
            top = _tflite_padding(cand, (size,), (k,), (s,), (1,))[0]
            got += [top, (in_size - 1) * s + k - top - size]
            # TFLite checks the input size its padding implies for the output size
            implied = (size + s - 1) // s if cand == tflite.Padding.SAME else (size - k + s) // s
            sizes_ok &= implied == in_size
        if got == pads and sizes_ok:
            code = cand
            break
    if code is None:
        raise _Refused(f"padding {pads} is neither SAME nor VALID for this output size")
    act, clamp = ex.fused(op)
    bi = _bias(ex, op, x, w)
    out = ex.out(op)
    ex.m.emit("TRANSPOSE_CONV", [ex.m.int32_const(y), ex.of(w), ex.of(x), bi], [out],
              {"padding": code, "stride_h": strides[0], "stride_w": strides[1], "fused_activation_function": act})
    ex.clamp_after(op, out, clamp)


@_handles("qnn.fully_connected")
def _fully_connected(ex: _Exporter, op):
    x, w = op.operands[0], op.operands[1]
    _same_width(op)
    act, clamp = ex.fused(op)
    bi = _bias(ex, op, x, w)
    out = ex.out(op)
    xi, wi, oi = _weighted_operands(ex, op, ex.of(x), out)
    keep = len(_shape(op.results[0])) == len(_shape(x)) and len(_shape(x)) > 2
    ex.m.emit("FULLY_CONNECTED", [xi, wi, bi], [oi], {"fused_activation_function": act, "keep_num_dims": keep})
    ex.clamp_after(op, out, clamp)


@_handles("qnn.batch_matmul")
def _batch_matmul(ex: _Exporter, op):
    _same_width(op)
    act, clamp = ex.fused(op, allowed=False)
    out = ex.out(op)
    ex.m.emit("BATCH_MATMUL", [ex.of(op.operands[0]), ex.of(op.operands[1])], [out],
              {"adj_x": bool(op.attr("adj_x", False)), "adj_y": bool(op.attr("adj_y", False))})
    ex.clamp_after(op, out, clamp)


_BINARY = {
    "qnn.add": "ADD", "qnn.sub": "SUB", "qnn.mul": "MUL", "qnn.div": "DIV",
    "qnn.squared_difference": "SQUARED_DIFFERENCE", "qnn.maximum": "MAXIMUM", "qnn.minimum": "MINIMUM",
    "qnn.prelu": "PRELU",
}
_FUSING = {"ADD", "SUB", "MUL", "DIV"}


@_handles(*_BINARY)
def _binary(ex: _Exporter, op):
    name = _BINARY[op.name]
    act, clamp = ex.fused(op, allowed=name in _FUSING)
    out = ex.out(op)
    opts = {}
    if name in _FUSING:
        opts["fused_activation_function"] = act
    if name in ("ADD", "SUB"):
        opts["pot_scale_int16"] = False  # TFLite's general int16 path (what the importer reads)
    ex.m.emit(name, [ex.of(op.operands[0]), ex.of(op.operands[1])], [out], opts)
    ex.clamp_after(op, out, clamp)


_UNARY = {
    "qnn.logistic": "LOGISTIC", "qnn.tanh": "TANH", "qnn.hard_swish": "HARD_SWISH", "qnn.elu": "ELU",
    "qnn.log_softmax": "LOG_SOFTMAX", "qnn.softmax": "SOFTMAX", "qnn.leaky_relu": "LEAKY_RELU",
    "qnn.gelu": "GELU", "qnn.exp": "EXP", "qnn.rsqrt": "RSQRT", "qnn.sqrt": "SQRT", "qnn.abs": "ABS",
    "qnn.neg": "NEG", "qnn.l2_normalization": "L2_NORMALIZATION", "qnn.requantize": "QUANTIZE",
    "qnn.quantize": "QUANTIZE", "qnn.dequantize": "DEQUANTIZE", "quant.qcast": "QUANTIZE",
    "quant.dcast": "DEQUANTIZE",
}


@_handles(*_UNARY)
def _unary(ex: _Exporter, op):
    name = _UNARY[op.name]
    opts = {}
    if name == "SOFTMAX":
        opts["beta"] = float(op.attr("beta", 1.0))
    elif name == "LEAKY_RELU":
        opts["alpha"] = float(op.attr("alpha"))
    elif name == "GELU":
        opts["approximate"] = bool(op.attr("approximate", False))
    clamp = None
    if isinstance(op, qnn.QnnOp) and "act_min" in op.ATTRS:
        _, clamp = ex.fused(op, allowed=False)
    out = ex.out(op)
    xi = ex.of(op.operands[0])
    if op.name == "qnn.requantize" and (_is_uint8(_qtype(op.operands[0])) or _is_uint8(_qtype(op.results[0]))):
        # a uint8 side stays uint8: XNNPACK's uint8 <-> int8 conversion is not its int8 requantization
        if _is_uint8(_qtype(op.operands[0])):
            xi = ex.uint8_view(op.operands[0])
        if _is_uint8(_qtype(op.results[0])):
            ou = ex.m.tensor(ex.m.tensors[out].shape, _TT.UINT8, q=_qtype(op.results[0]), keep_uint8=True)
            ex.pending = [(ou, out)]
            out = ou
    ex.m.emit(name, [xi], [out], opts)
    ex.clamp_after(op, ex.values[op.results[0]], clamp)


@_handles("qnn.clamp")
def _clamp(ex: _Exporter, op):
    """RELU / RELU6 / RELU_N1_TO_1 / RELU_0_TO_1 (they requantize as qnn.clamp does), else MAXIMUM /
    MINIMUM against constants when the input and result types are one."""
    x, r = op.operands[0], op.results[0]
    q = _qtype(r)
    lo, hi = q.storage_range()
    want = (max(lo, op.attr("act_min", lo)), min(hi, op.attr("act_max", hi)))
    if not q.is_per_axis:
        for name, relu in (("relu", "RELU"), ("relu6", "RELU6"), ("relu_n1_to_1", "RELU_N1_TO_1"),
                           ("relu_0_to_1", "RELU_0_TO_1")):
            if _activation_bounds(name, q) == want:
                ex.m.emit(relu, [ex.of(x)], [ex.out(op)])
                return
    if x.type != r.type:
        if want == (lo, hi):
            ex.m.emit("QUANTIZE", [ex.of(x)], [ex.out(op)])
            return
        raise _Refused(f"clamp to [{want[0]}, {want[1]}] with a requantization is no TFLite activation")
    ex.values[r] = ex.of(x)
    prod = ex.of(x)
    ex.clamp_after(op, prod, want)


@_handles("qnn.avg_pool2d", "qnn.max_pool2d")
def _pool(ex: _Exporter, op):
    x = op.operands[0]
    n, h, w, c = _shape(x)
    kernel, strides = list(op.attr("kernel")), list(op.attr("strides") or [1, 1])
    code = ex.padding(op, (h, w), kernel, strides, (1, 1))
    if code is None:
        raise _Refused(f"padding {list(op.attr('padding'))} is neither SAME nor VALID")
    act, clamp = ex.fused(op)
    out = ex.out(op)
    ins, outs = ex.uint8_island(op, [ex.of(x)], [out])
    ex.m.emit("AVERAGE_POOL_2D" if op.name == "qnn.avg_pool2d" else "MAX_POOL_2D", ins, outs,
              {"padding": code, "stride_h": strides[0], "stride_w": strides[1], "filter_height": kernel[0],
               "filter_width": kernel[1], "fused_activation_function": act})
    ex.clamp_after(op, out, clamp)


_REDUCE = {"qnn.mean": "MEAN", "qnn.sum": "SUM", "qnn.reduce_max": "REDUCE_MAX", "qnn.reduce_min": "REDUCE_MIN",
           "nn.mean": "MEAN", "nn.sum": "SUM", "nn.reduce_max": "REDUCE_MAX", "nn.reduce_min": "REDUCE_MIN"}


@_handles(*_REDUCE)
def _reduce(ex: _Exporter, op):
    clamp = None
    if isinstance(op, qnn.QnnOp):
        _, clamp = ex.fused(op, allowed=False)
    elif op.attributes.get("act_min") is not None or op.attributes.get("act_max") is not None:
        raise _Refused("a fused clamp on a float reduction")
    axes = list(op.attr("axes"))
    out = ex.out(op)
    # TFLite's uint8 MEAN / SUM round their own way (not the int8 kernels shifted by 128)
    ins, outs = ex.uint8_island(op, [ex.of(op.operands[0])], [out])
    ex.m.emit(_REDUCE[op.name], [ins[0], ex.m.int32_const(axes)], outs,
              {"keep_dims": bool(op.attr("keep_dims", False))})
    ex.clamp_after(op, out, clamp)


@_handles("qnn.reshape", "nn.reshape")
def _reshape(ex: _Exporter, op):
    shape = _shape(op.results[0])
    ex.m.emit("RESHAPE", [ex.of(op.operands[0]), ex.m.int32_const(shape)], [ex.out(op)], {"new_shape": shape})


@_handles("qnn.transpose", "nn.transpose")
def _transpose(ex: _Exporter, op):
    ex.m.emit("TRANSPOSE", [ex.of(op.operands[0]), ex.m.int32_const(list(op.attr("perm")))], [ex.out(op)])


@_handles("qnn.pad")
def _pad(ex: _Exporter, op):
    x = op.operands[0]
    p = np.asarray(list(op.attr("paddings")), np.int32).reshape(-1, 2)
    pad_value = op.attr("pad_value")
    if pad_value is None:
        ex.m.emit("PAD", [ex.of(x), ex.m.int32_const(p)], [ex.out(op)])
    else:
        ex.m.emit("PADV2", [ex.of(x), ex.m.int32_const(p), ex.same_type_const(x, pad_value, ())], [ex.out(op)])


@_handles("qnn.mirror_pad")
def _mirror_pad(ex: _Exporter, op):
    p = np.asarray(list(op.attr("paddings")), np.int32).reshape(-1, 2)
    mode = tflite.MirrorPadMode.REFLECT if op.attr("mode") == "reflect" else tflite.MirrorPadMode.SYMMETRIC
    ex.m.emit("MIRROR_PAD", [ex.of(op.operands[0]), ex.m.int32_const(p)], [ex.out(op)], {"mode": mode})


@_handles("qnn.slice", "nn.slice")
def _slice(ex: _Exporter, op):
    """SLICE for unit strides, else STRIDED_SLICE (end_mask where a negative stride runs past index 0);
    a RESHAPE after it drops the axes the result shrinks."""
    x, r = op.operands[0], op.results[0]
    begin, end = list(op.attr("begin")), list(op.attr("end"))
    strides = list(op.attr("strides") or [1] * len(begin))
    full = [len(range(b, e, st)) for b, e, st in zip(begin, end, strides)]
    rshape = _shape(r)
    xi = ex.of(x)
    target = ex.out(op) if full == rshape else None
    t_el = ex.m.tensors[xi].type
    mid = target if target is not None else ex.m.tensor(full, t_el, q=_qtype(x))
    if all(st == 1 for st in strides):
        ex.m.emit("SLICE", [xi, ex.m.int32_const(begin), ex.m.int32_const(full)], [mid])
    else:
        end_mask = 0
        ends = []
        for k, (e, st) in enumerate(zip(end, strides)):
            if st < 0 and e < 0:
                end_mask |= 1 << k
                ends.append(0)
            else:
                ends.append(e)
        ex.m.emit("STRIDED_SLICE", [xi, ex.m.int32_const(begin), ex.m.int32_const(ends), ex.m.int32_const(strides)],
                  [mid], {"end_mask": end_mask})
    if target is None:
        ex.m.emit("RESHAPE", [mid, ex.m.int32_const(rshape)], [ex.out(op)], {"new_shape": rshape})


@_handles("qnn.split")
def _split(ex: _Exporter, op):
    axis = op.attr("axis")
    sizes = [_shape(r)[axis] for r in op.results]
    outs = [ex.out(op, k) for k in range(len(op.results))]
    ex.m.emit("SPLIT_V", [ex.of(op.operands[0]), ex.m.int32_const(sizes), ex.m.int32_const(axis, [])], outs,
              {"num_splits": len(outs)})


@_handles("qnn.concatenation", "nn.concatenation")
def _concatenation(ex: _Exporter, op):
    if isinstance(op, qnn.QnnOp):
        act, clamp = ex.fused(op)
    else:
        act, clamp = _float_act(op), None
    out = ex.out(op)
    # uint8 inputs of other parameters than the result's: TFLite's uint8 ConcatenationWithScaling
    ins, outs = ex.uint8_island(op, [ex.of(v) for v in op.operands], [out])
    ex.m.emit("CONCATENATION", ins, outs, {"axis": op.attr("axis"), "fused_activation_function": act})
    ex.clamp_after(op, out, clamp)


@_handles("qnn.gather")
def _gather(ex: _Exporter, op):
    ex.m.emit("GATHER", [ex.of(op.operands[0]), ex.of(op.operands[1])], [ex.out(op)],
              {"axis": op.attr("axis", 0), "batch_dims": op.attr("batch_dims", 0)})


@_handles("qnn.gather_nd")
def _gather_nd(ex: _Exporter, op):
    ex.m.emit("GATHER_ND", [ex.of(op.operands[0]), ex.of(op.operands[1])], [ex.out(op)])


@_handles("qnn.tile")
def _tile(ex: _Exporter, op):
    ex.m.emit("TILE", [ex.of(op.operands[0]), ex.m.int32_const(list(op.attr("multiples")))], [ex.out(op)])


@_handles("qnn.arg_max", "qnn.arg_min")
def _arg(ex: _Exporter, op):
    out = ex.out(op)
    name = "ARG_MAX" if op.name == "qnn.arg_max" else "ARG_MIN"
    ex.m.emit(name, [ex.of(op.operands[0]), ex.m.int32_const([op.attr("axis")])], [out],
              {"output_type": ex.m.tensors[out].type})


@_handles("qnn.resize_bilinear", "qnn.resize_nearest_neighbor")
def _resize(ex: _Exporter, op):
    y = _shape(op.results[0])
    name = "RESIZE_BILINEAR" if op.name == "qnn.resize_bilinear" else "RESIZE_NEAREST_NEIGHBOR"
    ins, outs = ex.uint8_island(op, [ex.of(op.operands[0])], [ex.out(op)])
    ex.m.emit(name, [ins[0], ex.m.int32_const(y[1:3])], outs,
              {"align_corners": bool(op.attr("align_corners", False)),
               "half_pixel_centers": bool(op.attr("half_pixel_centers", False))})


@_handles("qnn.space_to_depth", "qnn.depth_to_space")
def _space_depth(ex: _Exporter, op):
    name = "SPACE_TO_DEPTH" if op.name == "qnn.space_to_depth" else "DEPTH_TO_SPACE"
    ex.m.emit(name, [ex.of(op.operands[0])], [ex.out(op)], {"block_size": op.attr("block_size")})


@_handles("qnn.layer_norm")
def _layer_norm(ex: _Exporter, op):
    """The body chain, op by op (its constants included), on the input's tensor."""
    block = op.body.block
    ex.values[block.args[0]] = ex.of(op.operands[0])
    before = len(ex.refused)
    ex.ops(block.ops)
    if len(ex.refused) == before:
        ex.values[op.results[0]] = ex.of(block.last_op.operands[0])
    else:
        ex.new_tensor(op.results[0])


# ----- float / mask islands (nn ops on float32, int32, bool) ----------------------------------------

_NN_BINARY = {"nn.add": "ADD", "nn.sub": "SUB", "nn.mul": "MUL", "nn.div": "DIV",
              "nn.squared_difference": "SQUARED_DIFFERENCE", "nn.maximum": "MAXIMUM", "nn.minimum": "MINIMUM",
              "nn.logical_and": "LOGICAL_AND", "nn.logical_or": "LOGICAL_OR"}
_NN_UNARY = {"nn.logistic": "LOGISTIC", "nn.tanh": "TANH", "nn.hard_swish": "HARD_SWISH", "nn.elu": "ELU",
             "nn.sqrt": "SQRT", "nn.rsqrt": "RSQRT", "nn.logical_not": "LOGICAL_NOT", "nn.cast": "CAST",
             "nn.log_softmax": "LOG_SOFTMAX"}
_COMPARE = {"eq": "EQUAL", "ne": "NOT_EQUAL", "lt": "LESS", "le": "LESS_EQUAL", "gt": "GREATER",
            "ge": "GREATER_EQUAL"}
_REAL_ACT = {(0.0, None): _ACT.RELU, (0.0, 6.0): _ACT.RELU6, (-1.0, 1.0): _ACT.RELU_N1_TO_1}


def _float_act(op) -> int:
    lo, hi = op.attr("act_min"), op.attr("act_max")
    if lo is None and hi is None:
        return _ACT.NONE
    code = _REAL_ACT.get((lo, hi))
    if code is None:
        raise _Refused(f"fused real clamp [{lo}, {hi}] is no TFLite activation")
    return code


@_handles(*_NN_BINARY)
def _nn_binary(ex: _Exporter, op):
    name = _NN_BINARY[op.name]
    opts = {}
    if name in _FUSING:
        opts["fused_activation_function"] = _float_act(op) if "act_min" in op.ATTRS else _ACT.NONE
    ex.m.emit(name, [ex.of(op.operands[0]), ex.of(op.operands[1])], [ex.out(op)], opts)


@_handles(*_NN_UNARY, "nn.softmax", "nn.leaky_relu", "nn.gelu")
def _nn_unary(ex: _Exporter, op):
    opts = {}
    if op.name == "nn.softmax":
        name, opts = "SOFTMAX", {"beta": float(op.attr("beta", 1.0))}
    elif op.name == "nn.leaky_relu":
        name, opts = "LEAKY_RELU", {"alpha": float(op.attr("alpha"))}
    elif op.name == "nn.gelu":
        name, opts = "GELU", {"approximate": bool(op.attr("approximate", False))}
    else:
        name = _NN_UNARY[op.name]
    ex.m.emit(name, [ex.of(op.operands[0])], [ex.out(op)], opts)


@_handles("nn.pad")
def _nn_pad(ex: _Exporter, op):
    x = op.operands[0]
    p = np.asarray(list(op.attr("paddings")), np.int32).reshape(-1, 2)
    value = op.attr("pad_value")
    if not value:
        ex.m.emit("PAD", [ex.of(x), ex.m.int32_const(p)], [ex.out(op)])
        return
    el = _element_tflite_type(x.type.element_type)
    c = ex.m.tensor([], el, data=np.asarray(value, _NP[el]))
    ex.m.emit("PADV2", [ex.of(x), ex.m.int32_const(p), c], [ex.out(op)])


@_handles("nn.max_pool2d", "nn.avg_pool2d")
def _nn_pool(ex: _Exporter, op):
    x = op.operands[0]
    n, h, w, c = _shape(x)
    kernel, strides = list(op.attr("kernel")), list(op.attr("strides") or [1, 1])
    code = ex.padding(op, (h, w), kernel, strides, (1, 1))
    if code is None:
        raise _Refused(f"padding {list(op.attr('padding'))} is neither SAME nor VALID")
    ex.m.emit("AVERAGE_POOL_2D" if op.name == "nn.avg_pool2d" else "MAX_POOL_2D", [ex.of(x)], [ex.out(op)],
              {"padding": code, "stride_h": strides[0], "stride_w": strides[1], "filter_height": kernel[0],
               "filter_width": kernel[1], "fused_activation_function": _float_act(op)})


@_handles("nn.compare")
def _nn_compare(ex: _Exporter, op):
    ex.m.emit(_COMPARE[op.attr("predicate")], [ex.of(op.operands[0]), ex.of(op.operands[1])], [ex.out(op)])


@_handles("nn.select")
def _nn_select(ex: _Exporter, op):
    ex.m.emit("SELECT_V2", [ex.of(v) for v in op.operands], [ex.out(op)])


@_handles("nn.relu", "nn.clip")
def _nn_relu(ex: _Exporter, op):
    lo, hi = (0.0, None) if op.name == "nn.relu" else (op.attr("min"), op.attr("max"))
    relus = {(0.0, None): "RELU", (0.0, 6.0): "RELU6", (-1.0, 1.0): "RELU_N1_TO_1", (0.0, 1.0): "RELU_0_TO_1"}
    name = relus.get((lo, hi))
    if name is None:
        raise _Refused(f"clip to [{lo}, {hi}] is no TFLite activation")
    ex.m.emit(name, [ex.of(op.operands[0])], [ex.out(op)])


SUPPORTED_OPS = tuple(sorted(_HANDLERS))
"""The ops `export_tflite` writes (others are refused by name)."""


# ----- entry point ------------------------------------------------------------------------------------


def _entry(module: ModuleOp) -> func.FuncOp:
    from qdialect.entry import EntryError, entry_function

    try:
        f = entry_function(module)
    except EntryError as e:
        raise TFLiteExportError(str(e)) from None
    if len(f.body.blocks) != 1:
        raise TFLiteExportError(f"@{f.sym_name.data} has {len(f.body.blocks)} blocks; a TFLite subgraph is one")
    return f


def export_tflite(module: ModuleOp, *, locations: dict[int, str] | None = None) -> bytes:
    """Write an L1 module (qnn ops on `!quant.uniform` tensors, as `qd-import` or `qd-quantize` make it)
    as a TFLite flatbuffer that LiteRT runs with the same integers.

    The entry function (`@main`, or the only one) becomes the one subgraph; its arguments and
    results are the graph's inputs and outputs, named by their `tflite.name` attributes (else
    `input_K` / `output_K`) in the model and in its `serving_default` signature.  Raises
    `TFLiteExportError` naming every op (with its place, `@main op N`) that TFLite cannot run
    with the module's numbers: a rounding profile other than `tflite` / `litert`, a knob TFLite's
    kernels lack, an op without a TFLite kernel.  `locations` (id(op) -> "FILE:LINE:COL", what
    `qd-export` reads from the parser) names the places in the source text instead.
    """
    if not isinstance(module, ModuleOp):
        raise TypeError(f"export_tflite expects a builtin.module, got {type(module).__name__}")
    f = _entry(module)
    with np.errstate(all="ignore"):
        ex = _Exporter(f, locations)
        data = ex.run()
    _prepare_check(data, ex.m)
    return data


def _prepare_check(data: bytes, model: _Model) -> None:
    """Let LiteRT's reference kernels prepare the model (when `ai-edge-litert` is installed): a kernel's
    own constraint (a fixed output scale, one scale across a concatenation, int16 zero points) is
    refused here, naming the op it comes from, instead of in the user's runtime."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        import sys
        print("qd-export: note: ai-edge-litert is not installed, so LiteRT's own kernel constraints "
              "(fixed output scales, one scale across a CONCATENATION) were not checked", file=sys.stderr)
        return
    try:
        try:
            Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF).allocate_tensors()
        except (RuntimeError, ValueError) as e:
            if "Didn't find op for builtin opcode" not in str(e):
                raise
            # an op the reference resolver lacks (ELU): TFLite's optimized kernels prepare it
            Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.
                        BUILTIN_WITHOUT_DEFAULT_DELEGATES).allocate_tensors()
    except (RuntimeError, ValueError) as e:
        msg = " ".join(str(e).split())
        m = re.search(r"Node number (\d+) \((\w+)\) failed to prepare", msg)
        origin = ""
        if m and int(m.group(1)) < len(model.ops):
            origin = model.ops[int(m.group(1))].origin
            msg = msg[: m.start()].strip()
        raise TFLiteExportError(f"cannot export to TFLite: {origin or 'the model'}: LiteRT's kernel "
                                f"{m.group(2) if m else ''} refuses it ({msg})") from None
