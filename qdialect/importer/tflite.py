"""TFLite flatbuffer -> canonical qnn module (L1).

    from qdialect.importer.tflite import import_tflite
    module = import_tflite(open("model.tflite", "rb").read(), batch=1)

The result is a verified `builtin.module @<name>` holding one
`func.func @main` whose arguments and results are the graph's inputs and
outputs in the model's order, each with a `tflite.name` attribute (the
tensor's name).  Activations are tensors of `!quant.uniform` type (per-axis
when the tensor has several scales); weights are `qnn.constant`s of their
stored integers (per-axis where the model is per-channel); biases are
`qnn.constant`s of quantized i32 type whose scales are the model's
(input_scale * weight_scale[c] as float32 products) — int64 biases (16x8
models) are plain `i64` tensors because `!quant.uniform` storage stops at 32
bits.  Fused activations become `act_min`/`act_max` clamp bounds computed as
TFLite's CalculateActivationRangeQuantized does, SAME/VALID padding becomes
explicit [top, bottom, left, right] as ComputePaddingHeightWidth computes it
(the odd extra row/column goes to the bottom/right).

Integer shape arithmetic that does not depend on data (SHAPE ->
STRIDED_SLICE -> PACK -> RESHAPE of a Keras Flatten, CONCATENATION /
GATHER / arithmetic on int32 shape tensors) is folded at import for a
concrete batch: `batch` replaces a dynamic (-1) batch dimension of the
model's shape signatures.

Errors are `TFLiteImportError` (a ValueError) with a message for people:
every unsupported operator at once with counts, float and dynamic-range
models told apart from fully quantized ones, corrupt or truncated files,
tensors without quantization where an integer op needs it.  Nothing is ever
silently dropped.
"""

from __future__ import annotations

import functools
import importlib
import math
import re
import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

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
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from qdialect.dialects import nn, qnn
from qdialect.dialects.quant import UniformQuantizedType, quantized_tensor_problems
from qdialect.diagnostics import verify_module
from qdialect.reference.movement import strided_slice_effective, strided_slice_indices
from qdialect.reference.rescale import round_half_away

__all__ = ["TFLiteImportError", "import_tflite", "import_tflite_file", "SUPPORTED_OPERATORS"]


class TFLiteImportError(ValueError):
    """A model qd-import cannot bring in; the message says why, for people."""


class _Unsupported(Exception):
    """A supported operator used in a way qnn cannot express (collected, reported at once)."""


MAX_ELEMENTS = 2**31 - 1
"""Largest element count of one tensor (TFLite's dimensions are int32)."""
MAX_RANK = 16
"""Largest tensor rank imported (TFLite's kernels stop at 6 or 8)."""
MAX_DENSE_GROUPED = 1 << 28
"""Most weights a grouped CONV_2D's dense form (`_grouped_as_dense`) may hold (ResNeXt-101
64x4d's widest grouped layer holds 37.7 M)."""

_TENSOR_TYPES = {v: k for k, v in vars(tflite.TensorType).items() if not k.startswith("_")}
_OPERATORS = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
_OPTION_TABLES = {v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_")}

_NP_DTYPES = {
    "FLOAT32": np.float32,
    "FLOAT16": np.float16,
    "FLOAT64": np.float64,
    "INT32": np.int32,
    "UINT8": np.uint8,
    "INT64": np.int64,
    "BOOL": np.bool_,
    "INT16": np.int16,
    "INT8": np.int8,
    "UINT64": np.uint64,
    "UINT32": np.uint32,
    "UINT16": np.uint16,
}
_QUANT_STORAGE = {"INT8": "i8", "UINT8": "u8", "INT16": "i16", "UINT16": "u16", "INT32": "i32", "INT4": "i4"}
_PLAIN_TYPES = {"FLOAT32", "INT32", "BOOL"}
"""Run-time tensors without quantization that float islands and masks compute on."""


def _plain_kinds(imp, op) -> str:
    """'on float32 tensors', 'on int32 / bool tensors': what an unsupported island operator reads."""
    kinds = dict.fromkeys(imp.tensor(i).type.lower() for i in op.inputs if i >= 0 and imp.tensor(i).type in _PLAIN_TYPES)
    return f"on {' / '.join(kinds) or 'float32'} tensors"
_INT_TYPES = {"INT32", "INT64", "INT16", "INT8", "UINT8", "UINT16", "UINT32", "UINT64"}
_FLOAT_TYPES = {"FLOAT32", "FLOAT16", "FLOAT64", "BFLOAT16"}

_SAME, _VALID = tflite.Padding.SAME, tflite.Padding.VALID
_FUSED = {
    tflite.ActivationFunctionType.NONE: None,
    tflite.ActivationFunctionType.RELU: "relu",
    tflite.ActivationFunctionType.RELU_N1_TO_1: "relu_n1_to_1",
    tflite.ActivationFunctionType.RELU6: "relu6",
}

# Options table each handled operator reads (None: the operator has none).
_OPTIONS = {
    "CONV_2D": "Conv2DOptions",
    "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions",
    "TRANSPOSE_CONV": "TransposeConvOptions",
    "FULLY_CONNECTED": "FullyConnectedOptions",
    "BATCH_MATMUL": "BatchMatMulOptions",
    "ADD": "AddOptions",
    "SUB": "SubOptions",
    "MUL": "MulOptions",
    "DIV": "DivOptions",
    "SOFTMAX": "SoftmaxOptions",
    "LEAKY_RELU": "LeakyReluOptions",
    "GELU": "GeluOptions",
    "L2_NORMALIZATION": "L2NormOptions",
    "MIRROR_PAD": "MirrorPadOptions",
    "AVERAGE_POOL_2D": "Pool2DOptions",
    "MAX_POOL_2D": "Pool2DOptions",
    "MEAN": "ReducerOptions",
    "SUM": "ReducerOptions",
    "REDUCE_MAX": "ReducerOptions",
    "REDUCE_MIN": "ReducerOptions",
    "REDUCE_PROD": "ReducerOptions",
    "RESHAPE": "ReshapeOptions",
    "SQUEEZE": "SqueezeOptions",
    "STRIDED_SLICE": "StridedSliceOptions",
    "SPLIT": "SplitOptions",
    "SPLIT_V": "SplitVOptions",
    "CONCATENATION": "ConcatenationOptions",
    "GATHER": "GatherOptions",
    "RESIZE_BILINEAR": "ResizeBilinearOptions",
    "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions",
    "SPACE_TO_DEPTH": "SpaceToDepthOptions",
    "DEPTH_TO_SPACE": "DepthToSpaceOptions",
    "PACK": "PackOptions",
    "UNPACK": "UnpackOptions",
    "ARG_MAX": "ArgMaxOptions",
    "ARG_MIN": "ArgMinOptions",
    "SHAPE": "ShapeOptions",
}

# Operators that only make sense on integer shape values known at import.
_STATIC_ONLY = {"SHAPE", "CAST", "FLOOR_DIV", "REDUCE_PROD", "RANGE", "FILL"}
# Mapped operators that are folded at import when all their inputs are known integers.
_STATIC_CAPABLE = {
    "STRIDED_SLICE",
    "SLICE",
    "PACK",
    "UNPACK",
    "CONCATENATION",
    "GATHER",
    "RESHAPE",
    "SQUEEZE",
    "EXPAND_DIMS",
    "TRANSPOSE",
    "ADD",
    "SUB",
    "MUL",
    "MAXIMUM",
    "MINIMUM",
}


# (min, max) inputs per operator (max None: any number); one output unless listed in _MULTI_OUT.
_ARITY = {
    "CONV_2D": (2, 3), "DEPTHWISE_CONV_2D": (2, 3), "TRANSPOSE_CONV": (3, 4), "FULLY_CONNECTED": (2, 3),
    "BATCH_MATMUL": (2, 2), "ADD": (2, 2), "SUB": (2, 2), "MUL": (2, 2), "DIV": (2, 2), "SQUARED_DIFFERENCE": (2, 2),
    "MAXIMUM": (2, 2), "MINIMUM": (2, 2), "PRELU": (2, 2), "FLOOR_DIV": (2, 2),
    "MEAN": (2, 2), "SUM": (2, 2), "REDUCE_MAX": (2, 2), "REDUCE_MIN": (2, 2), "REDUCE_PROD": (2, 2),
    "RESHAPE": (1, 2), "EXPAND_DIMS": (2, 2), "TRANSPOSE": (2, 2), "PAD": (2, 2), "PADV2": (2, 3),
    "SLICE": (3, 3), "STRIDED_SLICE": (3, 4), "SPLIT": (2, 2), "SPLIT_V": (3, 3), "CONCATENATION": (1, None),
    "GATHER": (2, 2), "RESIZE_BILINEAR": (2, 2), "RESIZE_NEAREST_NEIGHBOR": (2, 2), "PACK": (1, None),
    "RANGE": (3, 3), "FILL": (2, 2),
    "TILE": (2, 2), "BROADCAST_TO": (2, 2), "MIRROR_PAD": (2, 2), "GATHER_ND": (2, 2), "ARG_MAX": (2, 2),
    "ARG_MIN": (2, 2),
    "EQUAL": (2, 2), "NOT_EQUAL": (2, 2), "LESS": (2, 2), "LESS_EQUAL": (2, 2), "GREATER": (2, 2),
    "GREATER_EQUAL": (2, 2), "LOGICAL_AND": (2, 2), "LOGICAL_OR": (2, 2), "SELECT": (3, 3), "SELECT_V2": (3, 3),
}
_MULTI_OUT = {"SPLIT", "SPLIT_V", "UNPACK"}


# ======================================================================================
# Reading the flatbuffer into plain Python data (every access bounds-checked)
# ======================================================================================


@dataclass
class _Tensor:
    index: int
    name: str
    type: str
    shape: tuple[int, ...]
    signature: tuple[int, ...] | None
    scales: np.ndarray | None  # float32, None when not quantized
    zero_points: np.ndarray | None
    quantized_dimension: int
    data: np.ndarray | None  # uint8 bytes of a constant, None for run-time tensors
    is_variable: bool = False
    sparse: bool = False
    custom_quantization: bool = False

    @property
    def quantized(self) -> bool:
        return self.scales is not None

    @property
    def constant(self) -> bool:
        return self.data is not None


@dataclass
class _Op:
    index: int
    name: str  # builtin operator name, "CUSTOM", or "builtin code N"
    custom: str | None
    inputs: list[int]
    outputs: list[int]
    options: dict = field(default_factory=dict)


@dataclass
class _Graph:
    tensors: list[_Tensor]
    ops: list[_Op]
    inputs: list[int]
    outputs: list[int]
    subgraphs: int


def _corrupt(what: str) -> TFLiteImportError:
    return TFLiteImportError(f"truncated or corrupt TFLite file: {what}")


def _text(raw) -> str:
    if raw is None:
        return ""
    return bytes(raw).decode("utf-8", "replace")


def _table_vector_length(obj, slot: int, size: int, file_size: int, what: str) -> int:
    """Length of a vector field (slot = vtable offset), after checking that all its
    `size`-byte entries lie inside the file — so no loop over a bogus length."""
    tab = obj._tab
    o = tab.Offset(slot)
    if o == 0:
        return 0
    start = tab.Vector(o)
    length = tab.VectorLen(o)
    if start < 0 or start + length * size > file_size:
        raise _corrupt(f"{what} claims {length} entries that run past the end of the {file_size}-byte file")
    return length


def _numbers(obj, name: str) -> np.ndarray:
    """A scalar vector field as numpy (empty when absent); out-of-file vectors raise."""
    arr = getattr(obj, name + "AsNumpy")()
    if isinstance(arr, int):
        return np.zeros(0, np.int64)
    return arr


@functools.cache
def _option_fields(table: str) -> tuple[tuple[str, bool], ...]:
    cls = getattr(tflite, table)
    names = set(dir(cls))
    out = []
    for n in sorted(names):
        if not n[:1].isupper() or n.startswith(("GetRootAs", "Init")) or "BufferHasIdentifier" in n:
            continue
        if n.endswith(("AsNumpy", "IsNone", "Length")):
            continue
        is_vector = n + "Length" in names
        if is_vector and n + "AsNumpy" not in names:
            continue  # vector of tables or strings: never needed here
        out.append((n, is_vector))
    return tuple(out)


def _read_option_table(obj, table: str) -> dict:
    out = {}
    for name, is_vector in _option_fields(table):
        out[name] = [int(v) for v in _numbers(obj, name).tolist()] if is_vector else getattr(obj, name)()
    return out


@functools.cache
def _default_options(table: str) -> dict:
    """The schema defaults of an options table (an operator may omit its options)."""
    mod = importlib.import_module(f"tflite.{table}")
    b = flatbuffers.Builder(16)
    getattr(mod, f"{table}Start")(b)
    b.Finish(getattr(mod, f"{table}End")(b))
    obj = getattr(tflite, table).GetRootAs(bytes(b.Output()), 0)
    return _read_option_table(obj, table)


def _read(data: bytes) -> _Graph:
    n = len(data)
    if n < 8:
        raise TFLiteImportError(f"not a TFLite model: {n} bytes is too short for a flatbuffer")
    ident = data[4:8]
    if ident != b"TFL3":
        hint = ""
        if data[8:12] == b"TFL3":
            hint = " (it looks size-prefixed; strip the 4-byte prefix)"
        raise TFLiteImportError(
            f"not a TFLite model: flatbuffer identifier {ident!r} is not b'TFL3'{hint}"
        )
    root = struct.unpack_from("<I", data, 0)[0]
    if root + 4 > n:
        raise _corrupt(f"root table offset {root} is outside the {n}-byte file")
    where = "the model table"
    try:
        model = tflite.Model.GetRootAs(data, 0)
        nsub = _table_vector_length(model, 8, 4, n, "the subgraph list")
        if nsub == 0:
            raise TFLiteImportError("the model has no subgraphs")
        ncodes = _table_vector_length(model, 6, 4, n, "the operator-code list")
        nbuf = _table_vector_length(model, 12, 4, n, "the buffer list")
        codes: list[tuple[str, str | None]] = []
        for j in range(ncodes):
            where = f"operator code {j}"
            oc = model.OperatorCodes(j)
            code = max(int(oc.BuiltinCode()), int(oc.DeprecatedBuiltinCode()))
            name = _OPERATORS.get(code, f"builtin code {code}")
            codes.append((name, _text(oc.CustomCode()) if name == "CUSTOM" else None))

        buffers: dict[int, np.ndarray | None] = {}

        def buffer(k: int, tname: str) -> np.ndarray | None:
            if k in buffers:
                return buffers[k]
            if not 0 <= k < nbuf:
                raise _corrupt(f"tensor '{tname}' refers to buffer {k}, the model has {nbuf}")
            b = model.Buffers(k)
            raw = _numbers(b, "Data")
            if raw.size == 0:
                off, size = int(b.Offset()), int(b.Size())
                if off > 1:  # data stored after the flatbuffer (large models)
                    if off + size > n:
                        raise _corrupt(
                            f"buffer {k} of tensor '{tname}' lies at bytes {off}..{off + size}, "
                            f"past the end of the {n}-byte file"
                        )
                    raw = np.frombuffer(data, np.uint8, count=size, offset=off)
            buffers[k] = raw if raw.size else None
            return buffers[k]

        where = "subgraph 0"
        sg = model.Subgraphs(0)
        ntensors = _table_vector_length(sg, 4, 4, n, "the tensor list")
        nops = _table_vector_length(sg, 10, 4, n, "the operator list")
        tensors: list[_Tensor] = []
        for i in range(ntensors):
            where = f"tensor {i}"
            t = sg.Tensors(i)
            name = _text(t.Name()) or f"tensor_{i}"
            where = f"tensor {i} ('{name}')"
            type_code = int(t.Type())
            shape = tuple(int(d) for d in _numbers(t, "Shape").tolist())
            sig = None
            if not t.ShapeSignatureIsNone():
                sig = tuple(int(d) for d in _numbers(t, "ShapeSignature").tolist())
            scales = zps = None
            qdim = 0
            custom_q = False
            q = t.Quantization()
            if q is not None:
                s = _numbers(q, "Scale")
                if s.size:
                    scales = np.array(s, dtype=np.float32)
                    zps = np.array(_numbers(q, "ZeroPoint"), dtype=np.int64)
                    qdim = int(q.QuantizedDimension())
                custom_q = int(q.DetailsType()) != 0
            tensors.append(
                _Tensor(
                    index=i,
                    name=name,
                    type=_TENSOR_TYPES.get(type_code, f"type code {type_code}"),
                    shape=shape,
                    signature=sig,
                    scales=scales,
                    zero_points=zps,
                    quantized_dimension=qdim,
                    data=buffer(int(t.Buffer()), name),
                    is_variable=bool(t.IsVariable()),
                    sparse=t.Sparsity() is not None,
                    custom_quantization=custom_q,
                )
            )

        def indices(vec: np.ndarray, what: str, optional: bool) -> list[int]:
            out = [int(v) for v in vec.tolist()]
            for v in out:
                if not (-1 if optional else 0) <= v < ntensors:
                    raise _corrupt(f"{what} refers to tensor {v}, the subgraph has {ntensors}")
            return out

        where = "the subgraph's inputs/outputs"
        graph_inputs = indices(_numbers(sg, "Inputs"), "a graph input", False)
        graph_outputs = indices(_numbers(sg, "Outputs"), "a graph output", False)

        ops: list[_Op] = []
        for i in range(nops):
            where = f"operator {i}"
            o = sg.Operators(i)
            k = int(o.OpcodeIndex())
            if not 0 <= k < ncodes:
                raise _corrupt(f"operator {i} uses operator code {k}, the model has {ncodes}")
            name, custom = codes[k]
            where = f"operator {i} ({name})"
            op = _Op(
                index=i,
                name=name,
                custom=custom,
                inputs=indices(_numbers(o, "Inputs"), f"operator {i} ({name})", True),
                outputs=indices(_numbers(o, "Outputs"), f"operator {i} ({name})", False),
            )
            table = _OPTIONS.get(name)
            if table is not None:
                otype = int(o.BuiltinOptionsType())
                if otype == 0:
                    op.options = dict(_default_options(table))
                elif _OPTION_TABLES.get(otype) != table:
                    raise _corrupt(
                        f"operator {i} ({name}) carries {_OPTION_TABLES.get(otype, f'options type {otype}')}, "
                        f"expected {table}"
                    )
                else:
                    tab = o.BuiltinOptions()
                    if tab is None:
                        raise _corrupt(f"operator {i} ({name}) declares {table} but carries none")
                    obj = getattr(tflite, table)()
                    obj.Init(tab.Bytes, tab.Pos)
                    op.options = _read_option_table(obj, table)
            ops.append(op)
    except TFLiteImportError:
        raise
    except (struct.error, ValueError, IndexError, OverflowError, TypeError, UnicodeDecodeError, MemoryError) as e:
        raise _corrupt(f"cannot read {where}: {_describe(e, n)}") from None
    return _Graph(tensors, ops, graph_inputs, graph_outputs, nsub)


def _describe(e: Exception, size: int) -> str:
    """A flatbuffer access error in words."""
    text = str(e)
    m = re.search(r"at offset (-?\d+)", text)
    if isinstance(e, struct.error) and m:
        return f"it points to byte {m.group(1)}, past the end of the {size}-byte file"
    if "buffer is smaller than requested size" in text:
        return f"a vector runs past the end of the {size}-byte file"
    if isinstance(e, (TypeError, OverflowError)) and "bad number" in text:
        return "an offset is out of range"
    return f"{type(e).__name__}: {text}"


# ======================================================================================
# Whole-model checks before conversion
# ======================================================================================


def _classify(g: _Graph) -> None:
    """Float and dynamic-range models are not integer models: say which it is."""
    used = set(g.inputs) | set(g.outputs)
    for op in g.ops:
        used.update(i for i in op.inputs if i >= 0)
        used.update(op.outputs)
    tensors = [g.tensors[i] for i in sorted(used)]
    q_act = any(t.quantized and not t.constant for t in tensors)
    q_const = any(t.quantized and t.constant for t in tensors)
    float_act = [t for t in tensors if t.type in _FLOAT_TYPES and not t.constant]
    float_any = [t for t in tensors if t.type in _FLOAT_TYPES]
    if not q_act and not q_const and float_any:
        kinds = sorted({t.type.lower() for t in float_any})
        kind = kinds[0] if len(kinds) == 1 else "/".join(kinds)
        if "float32" in kinds and "float16" in kinds:
            kind = "float32 (with float16 weights)"
        raise TFLiteImportError(
            f"this model is {kind} (no quantized tensors): qd-import needs a fully "
            "integer-quantized model; float import arrives with qd-quantize"
        )
    if q_const and not q_act and float_act:
        wtypes = sorted({t.type.lower() for t in tensors if t.quantized and t.constant})
        raise TFLiteImportError(
            f"this model is dynamic-range quantized ({'/'.join(wtypes)} weights, "
            f"{float_act[0].type.lower()} activations): qd-import needs a fully integer-quantized "
            "model (convert with a representative dataset and TFLITE_BUILTINS_INT8); "
            "float import arrives with qd-quantize"
        )


def _format_unsupported(items: list[tuple[str, str | None]]) -> str:
    """'CUSTOM x2 (TFLite_Detection_PostProcess), LSTM x1' in first-seen order."""
    counts: Counter = Counter(name for name, _ in items)
    notes: dict[str, Counter] = {}
    for name, note in items:
        if note:
            notes.setdefault(name, Counter())[note] += 1
    parts = []
    for name in dict.fromkeys(name for name, _ in items):
        text = f"{name} x{counts[name]}"
        if name in notes:
            inner = [k if c == counts[name] or c == 1 else f"{k} x{c}" for k, c in notes[name].items()]
            text += f" ({', '.join(inner)})"
        parts.append(text)
    return "unsupported operators: " + ", ".join(parts)


def _static_output_ok(g: _Graph, op: _Op) -> bool:
    return all(g.tensors[o].type in ("INT32", "INT64") and not g.tensors[o].quantized for o in op.outputs)


def _scan_unsupported(g: _Graph, handlers: dict | None = None) -> None:
    handlers = _HANDLERS if handlers is None else handlers
    static = {
        t.index for t in g.tensors if t.constant and t.type in ("INT32", "INT64") and not t.quantized
    }
    items: list[tuple[str, str | None]] = []
    for op in g.ops:
        if op.name == "CUSTOM":
            items.append(("CUSTOM", op.custom or "no custom code"))
            continue
        inputs_static = all(i < 0 or i in static for i in op.inputs)
        if op.name == "SHAPE" or (
            op.name in (_STATIC_ONLY | _STATIC_CAPABLE) and inputs_static and _static_output_ok(g, op)
        ):
            static.update(op.outputs)
        elif op.name in _STATIC_ONLY and op.name not in handlers:
            items.append((op.name, "on run-time tensors"))
        elif op.name not in handlers:
            items.append((op.name, None))
    if items:
        raise TFLiteImportError(_format_unsupported(items))


# ======================================================================================
# Conversion
# ======================================================================================


def _tflite_padding(padding: int, in_hw, k_hw, strides, dilations) -> list[int]:
    """ComputePaddingHeightWidth: [top, bottom, left, right]; SAME puts the odd one after."""
    pads: list[int] = []
    for size, k, s, d in zip(in_hw, k_hw, strides, dilations):
        eff = (k - 1) * d + 1
        if padding == _SAME:
            out = (size + s - 1) // s
        elif padding == _VALID:
            out = (size + s - eff) // s
        else:
            raise TFLiteImportError(f"unknown padding code {padding}")
        total = max((out - 1) * s + eff - size, 0)
        pads += [total // 2, total - total // 2]
    return pads


_ACT_REAL = {
    "relu": (0.0, None),
    "relu6": (0.0, 6.0),
    "relu_n1_to_1": (-1.0, 1.0),
    "relu_0_to_1": (0.0, 1.0),
}


def _activation_bounds(name: str, out_q: UniformQuantizedType) -> tuple[int, int]:
    """CalculateActivationRangeQuantized: zp + round_half_away(f / scale) (float32
    division), intersected with the storage range."""
    lo, hi = out_q.storage_range()
    scale = np.float32(float(out_q.scale_array()))
    zp = int(out_q.zero_point_array())

    def quantize(f: float) -> int:
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            v = float(np.float32(f) / scale)
        v = min(max(v, -(2.0**40)), 2.0**40)  # a subnormal scale: clamp, the storage range wins
        return zp + int(round_half_away(v))

    low, high = _ACT_REAL[name]
    return max(lo, quantize(low)), hi if high is None else min(hi, quantize(high))


def _element_type(t: _Tensor) -> Attribute:
    if t.type == "FLOAT32":
        return Float32Type()
    if t.type == "FLOAT16":
        return Float16Type()
    if t.type in _INT_TYPES:
        return IntegerType(int(np.dtype(_NP_DTYPES[t.type]).itemsize * 8))
    if t.type == "BOOL":
        return IntegerType(1)
    raise TFLiteImportError(f"tensor '{t.name}' has type {t.type}, which qdialect cannot represent")


class _Importer:
    @property
    def handlers(self) -> dict:
        """Operator name -> handler (the float importer has its own table)."""
        return _HANDLERS

    def __init__(self, g: _Graph, batch: int):
        self.g = g
        self.batch = batch
        self.block = Block()
        self.values: dict[int, SSAValue] = {}
        self.static: dict[int, np.ndarray] = {}
        self.consts: dict[int, SSAValue] = {}
        self.shapes: dict[int, tuple[int, ...]] = {}
        self.computed: set[int] = set()  # tensors whose shape an operator computed (not the file's)
        self.qtypes: dict[int, UniformQuantizedType | None] = {}
        self.poisoned: set[int] = set()
        self.unsupported: list[tuple[str, str | None]] = []
        self.op: _Op | None = None

    # ----- diagnostics -------------------------------------------------------------------

    def where(self) -> str:
        op = self.op
        if op is None:
            return ""
        outs = [self.g.tensors[o].name for o in op.outputs[:1]]
        return f"operator {op.index} ({op.name})" + (f" -> '{outs[0]}'" if outs else "")

    def bad(self, message: str) -> TFLiteImportError:
        w = self.where()
        return TFLiteImportError(f"{w}: {message}" if w else message)

    # ----- tensors -----------------------------------------------------------------------

    def tensor(self, i: int) -> _Tensor:
        return self.g.tensors[i]

    def shape(self, i: int) -> tuple[int, ...]:
        """The tensor's shape with a dynamic batch (-1 in dimension 0 of the signature) set to `batch`."""
        if i in self.shapes:
            return self.shapes[i]
        t = self.tensor(i)
        shape = list(t.shape)
        sig = t.signature
        # batch 1: the file's static shapes are what LiteRT allocates; another batch
        # re-reads the shape signature (-1 in dimension 0 only).
        if self.batch != 1 and sig is not None and len(sig) == len(shape):
            for d, s in enumerate(sig):
                if s == -1:
                    if d != 0:
                        raise self.bad(
                            f"tensor '{t.name}' has a dynamic dimension {d} (shape signature "
                            f"{list(sig)}); only a dynamic batch (dimension 0) can be fixed at import"
                        )
                    shape[0] = self.batch
        if len(shape) > MAX_RANK:
            raise self.bad(f"tensor '{t.name}' has rank {len(shape)}; qd-import supports up to {MAX_RANK}")
        for d in shape:
            if d < 0:
                raise self.bad(f"tensor '{t.name}' has a negative dimension in its shape {list(t.shape)}")
        count = math.prod(shape)
        if count > MAX_ELEMENTS or any(d > MAX_ELEMENTS for d in shape):
            raise self.bad(
                f"tensor '{t.name}' claims shape {shape} ({count} elements), more than the "
                f"{MAX_ELEMENTS} a TFLite tensor can hold"
            )
        self.shapes[i] = tuple(shape)
        return self.shapes[i]

    def qtype(self, i: int) -> UniformQuantizedType | None:
        """The tensor's quantized element type (None if it carries no scales)."""
        if i in self.qtypes:
            return self.qtypes[i]
        t = self.tensor(i)
        if not t.quantized:
            self.qtypes[i] = None
            return None
        if t.custom_quantization:
            raise self.bad(f"tensor '{t.name}' uses custom quantization, which qdialect cannot represent")
        storage = _QUANT_STORAGE.get(t.type)
        if storage is None:
            if t.type == "INT64":
                self.qtypes[i] = None  # int64 bias: a plain i64 tensor, scale checked by the caller
                return None
            raise self.bad(f"tensor '{t.name}' of type {t.type} carries quantization parameters, "
                           "which qdialect cannot represent")
        scales = t.scales.astype(np.float64)
        zps = t.zero_points
        if zps.size == 0:
            zps = np.zeros(scales.shape, np.int64)
        elif zps.size == 1 and scales.size > 1:
            zps = np.repeat(zps, scales.size)
        if zps.size != scales.size:
            raise self.bad(f"tensor '{t.name}' has {scales.size} scales but {zps.size} zero points")
        shape = self.shape(i)
        lo, hi = (-(1 << (int(storage[1:]) - 1)), (1 << (int(storage[1:]) - 1)) - 1) if storage[0] == "i" else (
            0, (1 << int(storage[1:])) - 1)
        for s, z in zip(scales.tolist(), zps.tolist()):
            if not (math.isfinite(s) and s > 0):
                raise self.bad(f"tensor '{t.name}' has scale {s}; scales must be finite and > 0")
            if not lo <= z <= hi:
                raise self.bad(f"tensor '{t.name}' has zero point {z} outside {storage} [{lo}, {hi}]")
        try:
            if scales.size > 1:
                axis = t.quantized_dimension
                if not 0 <= axis < len(shape) or shape[axis] != scales.size:
                    raise self.bad(
                        f"tensor '{t.name}' has {scales.size} per-axis scales on dimension {axis}, "
                        f"but its shape is {list(shape)}"
                    )
                qt = UniformQuantizedType(storage, "f32", scales.tolist(), zps.tolist(), axis)
            else:
                qt = UniformQuantizedType(storage, "f32", [float(scales[0])], [int(zps[0])], None)
            problems = qt.problems()
        except VerifyException as e:
            problems = [str(e)]
        if problems:
            raise self.bad(f"tensor '{t.name}': quantization {problems[0]}")
        self.qtypes[i] = qt
        return qt

    def tensor_type(self, i: int) -> TensorType:
        q = self.qtype(i)
        return TensorType(q if q is not None else _element_type(self.tensor(i)), list(self.shape(i)))

    def result_type(self, i: int, shape=None, *, quantized: bool = True) -> TensorType:
        t = self.tensor(i)
        q = self.qtype(i)
        if quantized and q is None:
            raise self.bad(
                f"output tensor '{t.name}' is {t.type} without quantization parameters; "
                "qd-import never drops quantization (is the model only partly quantized?)"
            )
        if shape is not None:
            self.check_declared(i, shape)
            self.shapes[i] = tuple(int(d) for d in shape)
            self.computed.add(i)
        else:
            shape = self.shape(i)
        return TensorType(q if q is not None else _element_type(t), list(shape))

    def check_declared(self, i: int, shape) -> None:
        declared = self.shape(i)
        if tuple(declared) != tuple(int(d) for d in shape):
            sig = self.tensor(i).signature
            if sig is not None and -1 in sig:
                return  # a signature's -1 may stand for more than the batch (flattened): trust the op
            raise self.bad(
                f"computes shape {[int(d) for d in shape]} for '{self.tensor(i).name}', "
                f"but the model declares {list(declared)}"
            )

    def raw_array(self, i: int) -> np.ndarray:
        """A constant tensor's contents in its numpy dtype and shape."""
        t = self.tensor(i)
        shape = self.shape(i)
        count = math.prod(shape)
        raw = t.data
        if t.type == "INT4":
            need = (count + 1) // 2
            if raw.size != need:
                raise self.bad(f"constant '{t.name}' holds {raw.size} bytes, int4{list(shape)} needs {need}")
            packed = raw.astype(np.int16)
            lo, hi = packed & 0xF, packed >> 4
            vals = np.stack([lo, hi], axis=-1).reshape(-1)[:count]
            return np.where(vals > 7, vals - 16, vals).astype(np.int8).reshape(shape)
        dtype = _NP_DTYPES.get(t.type)
        if dtype is None:
            raise self.bad(f"constant '{t.name}' has type {t.type}, which qdialect cannot represent")
        need = count * np.dtype(dtype).itemsize
        if raw.size != need:
            raise self.bad(
                f"constant '{t.name}' holds {raw.size} bytes, but {t.type.lower()}{list(shape)} needs {need}"
            )
        return np.frombuffer(raw, dtype=dtype, count=count).reshape(shape)

    # ----- operands ------------------------------------------------------------------------

    def constant(self, i: int) -> SSAValue:
        if i in self.consts:
            return self.consts[i]
        t = self.tensor(i)
        arr = self.raw_array(i)
        q = self.qtype(i)
        if q is not None:
            op = qnn.ConstantOp.from_array(arr, q)
        elif t.type in _INT_TYPES:
            op = qnn.ConstantOp(arr, TensorType(_element_type(t), list(arr.shape)))
        else:
            raise self.bad(
                f"constant '{t.name}' is {t.type} without quantization parameters; "
                "qd-import needs integer (quantized) constants"
            )
        self.block.add_op(op)
        self.consts[i] = op.result
        return op.result

    def value(self, i: int, role: str) -> SSAValue:
        """Any SSA value for tensor i (quantized, float or integer)."""
        if i < 0:
            raise self.bad(f"{role} is missing")
        if i in self.values:
            return self.values[i]
        if i in self.static:
            arr = self.static[i]
            op = qnn.ConstantOp(arr, TensorType(_element_type(self.tensor(i)), list(arr.shape)))
            self.block.add_op(op)
            self.values[i] = op.result
            return op.result
        if self.tensor(i).constant:
            return self.constant(i)
        raise self.bad(f"{role} '{self.tensor(i).name}' is read before any operator produces it")

    def act(self, i: int, role: str = "input") -> SSAValue:
        """A quantized operand."""
        v = self.value(i, role)
        if qnn.qtype(v) is None:
            t = self.tensor(i)
            raise self.bad(
                f"{role} '{t.name}' is {t.type} without quantization parameters; "
                "qd-import never drops quantization (is the model only partly quantized?)"
            )
        return v

    def static_ints(self, i: int, role: str) -> np.ndarray:
        """An integer tensor whose value is known at import (constant or folded)."""
        if i < 0:
            raise self.bad(f"{role} is missing")
        if i in self.static:
            return self.static[i]
        t = self.tensor(i)
        if t.constant and t.type in _INT_TYPES:
            arr = self.raw_array(i).astype(np.int64)
            self.static[i] = arr
            return arr
        raise self.bad(f"{role} '{t.name}' must be an integer constant (it is computed at run time)")

    def static_scalar(self, i: int, role: str) -> int:
        arr = self.static_ints(i, role)
        if arr.size != 1:
            raise self.bad(f"{role} must hold one integer, got shape {list(arr.shape)}")
        return int(arr.reshape(-1)[0])

    # ----- emitting ---------------------------------------------------------------------------

    def dynamic(self, i: int) -> bool:
        """True when the tensor's shape signature has a -1 the file's shape only stands in for
        (LiteRT sizes it at allocation; the converter's Tensordot spelling of Dense on 3-D inputs)."""
        sig = self.tensor(i).signature
        return sig is not None and -1 in sig and i not in self.computed

    def emit(self, cls, operands, outs: list[int], attrs: dict | None = None, types=None):
        if types is None:
            inferred = None
            if len(outs) == 1 and self.dynamic(outs[0]):
                inferred = _inferred_shape(cls, operands, attrs or {}, len(self.tensor(outs[0]).shape))
            types = [self.result_type(o, inferred) for o in outs]
        try:
            op = cls(list(operands), list(types), attrs or {})
            op.verify()
        except VerifyException as e:
            lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
            raise self.bad(lines[0] if lines else "verification failed") from None
        self.block.add_op(op)
        for o, r in zip(outs, op.results):
            self.values[o] = r
        return op

    def emit_one(self, cls, operands, out: int, attrs=None, shape=None):
        return self.emit(cls, operands, [out], attrs, [self.result_type(out, shape)])

    def fused(self, code: int, out_q: UniformQuantizedType) -> dict:
        if code not in _FUSED:
            names = {v: k for k, v in vars(tflite.ActivationFunctionType).items() if not k.startswith("_")}
            if code in names:
                raise _Unsupported(f"fused {names[code]} activation")
            raise self.bad(f"unknown fused activation code {code}")
        name = _FUSED[code]
        if name is None:
            return {}
        if out_q.is_per_axis:
            raise self.bad("a fused activation needs a per-tensor quantized output")
        lo, hi = _activation_bounds(name, out_q)
        return {"act_min": lo, "act_max": hi}

    @staticmethod
    def acc(x: SSAValue) -> dict:
        """TFLite's 16x8 kernels accumulate in int64: say so on the op (default is i32)."""
        q = qnn.qtype(x)
        return {"acc": "i64"} if q is not None and q.storage_width.data > 8 else {}

    def out_q(self, op: _Op, k: int = 0) -> UniformQuantizedType:
        return self.result_type(op.outputs[k]).element_type

    # ----- the bias of weighted ops -------------------------------------------------------------

    def bias(self, op: _Op, k: int, x: SSAValue, w: SSAValue, channels: int) -> SSAValue:
        xq, wq = qnn.qtype(x), qnn.qtype(w)
        if xq.is_per_axis:
            raise self.bad(f"input must be per-tensor quantized, got {xq}")
        wide = xq.storage_width.data > 8  # 16x8: int64 bias
        in_s = np.float32(float(xq.scale_array()))
        w_s = wq.scale_array().astype(np.float32)
        if w_s.size not in (1, channels):
            raise self.bad(f"weights have {w_s.size} scales for {channels} output channels")
        w_s = np.broadcast_to(w_s, (channels,))
        expected = (in_s * w_s).astype(np.float32).astype(np.float64)
        if not np.all(np.isfinite(expected) & (expected > 0)):
            raise self.bad("input scale * weight scale is not a positive float32 (bias scale underflows)")

        def quantized_type(storage: str) -> UniformQuantizedType:
            if wq.is_per_axis and channels > 1:
                return UniformQuantizedType.per_axis(expected, 0, axis=0, storage=storage)
            return UniformQuantizedType.per_tensor(float(expected[0]), 0, storage=storage)

        i = op.inputs[k] if k < len(op.inputs) else -1
        if i < 0:
            if wide:
                c = qnn.ConstantOp(np.zeros(channels, np.int64), TensorType(IntegerType(64), [channels]))
            else:
                c = qnn.ConstantOp.from_array(np.zeros(channels, np.int32), quantized_type("i32"))
            self.block.add_op(c)
            return c.result
        t = self.tensor(i)
        if t.type not in ("INT32", "INT64"):
            raise self.bad(f"bias '{t.name}' is {t.type}; a quantized bias is int32 or int64")
        if not t.constant:
            return self.value(i, "bias")
        if i in self.consts:
            return self.consts[i]
        arr = self.raw_array(i)
        if t.type == "INT64":
            if t.quantized:
                got = np.broadcast_to(t.scales.astype(np.float64), (channels,)) if t.scales.size in (1, channels) else None
                if got is None or not np.allclose(got, expected, rtol=1e-5, atol=0):
                    raise self.bad(
                        f"bias '{t.name}' scales {t.scales.tolist()[:4]} are not input scale * weight "
                        f"scale {expected.tolist()[:4]}"
                    )
            c = qnn.ConstantOp(arr, TensorType(IntegerType(64), list(arr.shape)))
        else:
            q = self.qtype(i)
            c = qnn.ConstantOp.from_array(arr, q if q is not None else quantized_type("i32"))
        self.block.add_op(c)
        self.consts[i] = c.result
        return c.result

    # ----- driving -------------------------------------------------------------------------------

    def run(self) -> tuple[list[SSAValue], list[str], list[str]]:
        g = self.g
        input_names = []
        for k, i in enumerate(g.inputs):
            t = self.tensor(i)
            arg = self.block.insert_arg(self.tensor_type(i), k)
            self.values[i] = arg
            input_names.append(t.name)
        for op in g.ops:
            self.op = op
            if any(i in self.poisoned for i in op.inputs if i >= 0):
                self.poisoned.update(op.outputs)
                continue
            try:
                lo, hi = _ARITY.get(op.name, (1, 1))
                if len(op.inputs) < lo or (hi is not None and len(op.inputs) > hi):
                    want = f"{lo}" if lo == hi else f"{lo} to {hi}" if hi is not None else f"at least {lo}"
                    raise self.bad(f"expects {want} inputs, has {len(op.inputs)}")
                if (len(op.outputs) < 1) if op.name in _MULTI_OUT else (len(op.outputs) != 1):
                    raise self.bad(f"has {len(op.outputs)} outputs")
                for o in op.outputs:
                    t = self.tensor(o)
                    if o in self.values or o in self.static:
                        raise self.bad(f"tensor '{t.name}' is produced twice")
                    if t.is_variable:
                        raise _Unsupported("variable (stateful) tensors")
                    if t.sparse:
                        raise self.bad(f"tensor '{t.name}' is sparse, which qdialect cannot represent")
                if not self.fold(op):
                    owner = self.float_view() if self.float_island(op) else self
                    handler = owner.handlers.get(op.name)
                    if handler is None:
                        raise _Unsupported(_plain_kinds(self, op) if owner is not self else "on quantized tensors")
                    handler(owner, op)
            except _Unsupported as e:
                self.unsupported.append((op.name, str(e)))
                self.poisoned.update(op.outputs)
        self.op = None
        if self.unsupported:
            raise TFLiteImportError(_format_unsupported(self.unsupported))
        results, names = [], []
        for i in g.outputs:
            results.append(self.value(i, "graph output"))
            names.append(self.tensor(i).name)
        return results, input_names, names

    # ----- float islands --------------------------------------------------------------------------

    def float_island(self, op: _Op) -> bool:
        """True for an operator of a float island between quantized ops (the converter's
        DEQUANTIZE -> NEG -> QUANTIZE of a Keras LayerNormalization) or of a mask's int32 / bool
        computation (CAST, NOT_EQUAL, LOGICAL_AND, SELECT_V2 ...): it reads a float32, int32 or
        bool run-time tensor, no quantized one, and writes such tensors, so it runs as LiteRT
        does, on plain values (`nn` ops)."""
        if op.name in ("QUANTIZE", "DEQUANTIZE") or self.handlers is not _HANDLERS:
            return False
        ins = [i for i in op.inputs if i >= 0]
        if any(self.tensor(i).quantized for i in ins):
            return False
        return bool(ins) and any(
            self.tensor(i).type in _PLAIN_TYPES and i not in self.static
            and (i in self.values or not self.tensor(i).constant) for i in ins
        ) and all(self.tensor(o).type in _PLAIN_TYPES and not self.tensor(o).quantized for o in op.outputs)

    def float_view(self):
        """This importer's state seen through the float importer's handlers (same block,
        values and constants)."""
        from qdialect.importer.tflite_float import _FloatImporter

        view = object.__new__(_FloatImporter)
        view.__dict__ = self.__dict__
        return view

    # ----- static integer folding ---------------------------------------------------------------

    def fold(self, op: _Op) -> bool:
        """Evaluate integer shape arithmetic at import; True if done."""
        g = self.g
        if op.name == "SHAPE":
            x = op.inputs[0]
            if x < 0:
                raise self.bad("input is missing")
            shape = self.shape(x)
            self.static[op.outputs[0]] = np.array(shape, dtype=np.int64)
            return True
        if op.name not in (_STATIC_ONLY | _STATIC_CAPABLE) or not _static_output_ok(g, op):
            return False
        known = all(
            i < 0 or i in self.static or (self.tensor(i).constant and self.tensor(i).type in _INT_TYPES)
            for i in op.inputs
        )
        if not known:
            return False
        ins = [None if i < 0 else self.static_ints(i, f"input {k}") for k, i in enumerate(op.inputs)]
        try:
            outs = _fold(self, op, ins)
        except TFLiteImportError:
            raise
        except (ValueError, IndexError, TypeError, AttributeError) as e:
            missing = [k for k, v in enumerate(ins) if v is None]
            if missing:  # an omitted (-1) input the arithmetic needs
                raise self.bad(f"input {missing[0]} is missing") from None
            raise self.bad(f"cannot evaluate this integer shape arithmetic: {e}") from None
        for o, v in zip(op.outputs, outs):
            v = np.asarray(v)
            dtype = np.int64 if self.tensor(o).type == "INT64" else np.int32
            if v.size and (v.min() < np.iinfo(dtype).min or v.max() > np.iinfo(dtype).max):
                raise self.bad(f"folded value overflows {self.tensor(o).type.lower()}")
            self.static[o] = v.astype(np.int64)
        return True


def _inferred_shape(cls, operands, attrs: dict, declared_rank: int) -> list[int] | None:
    """The result shape of a qnn op from its operands, for outputs whose shape the file leaves
    dynamic (None: keep the declared shape)."""
    shapes = [list(qnn.shape_of(v)) for v in operands]
    if issubclass(cls, (qnn._UnaryOp, qnn.QuantizeOp, qnn.DequantizeOp)):
        return shapes[0]
    if issubclass(cls, qnn._BinaryOp):
        try:
            return qnn.broadcast_shape(shapes[0], shapes[1])
        except ValueError:
            return None
    if cls is qnn.FullyConnectedOp:
        x, (o, k) = shapes[0], shapes[1]
        if declared_rank == len(x) and len(x) > 2:
            return x[:-1] + [o]
        return [math.prod(x) // k if k else 0, o]
    if cls is qnn.BatchMatmulOp:
        a, b = shapes
        m = a[-1] if attrs.get("adj_x") else a[-2]
        n = b[-2] if attrs.get("adj_y") else b[-1]
        try:
            return qnn.broadcast_shape(a[:-2], b[:-2]) + [m, n]
        except ValueError:
            return None
    if cls is qnn.TransposeOp:
        return [shapes[0][p] for p in attrs["perm"]] if sorted(attrs["perm"]) == list(range(len(shapes[0]))) else None
    if issubclass(cls, qnn._ReduceOp):
        s = shapes[0]
        axes = {a % len(s) for a in attrs["axes"]} if s else set()
        keep = attrs.get("keep_dims", False)
        return [1 if k in axes else d for k, d in enumerate(s)] if keep else [d for k, d in enumerate(s) if k not in axes]
    return None


# ----- static folding of integer shape arithmetic ---------------------------------------------


def _fold(imp: _Importer, op: _Op, ins: list) -> list[np.ndarray]:
    o = op.options
    name = op.name
    if name == "STRIDED_SLICE":
        x = ins[0]
        _check_strided_masks(o)
        idx = strided_slice_indices(
            x.shape, ins[1].tolist(), ins[2].tolist(),
            ins[3].tolist() if len(ins) > 3 and ins[3] is not None else [1] * ins[1].size,
            o["BeginMask"], o["EndMask"], o["ShrinkAxisMask"], bool(o["Offset"]),
        )
        v = x[np.ix_(*[ix for ix, _ in idx])] if x.ndim else x
        keep = [ix.size for ix, s in idx if not s]
        return [v.reshape(keep)]
    if name == "SLICE":
        x, begin, size = ins
        sl = tuple(slice(int(b), None if int(s) == -1 else int(b) + int(s)) for b, s in zip(begin, size))
        return [x[sl]]
    if name == "PACK":
        return [np.stack(ins, axis=o["Axis"])]
    if name == "UNPACK":
        x = ins[0]
        return [np.take(x, k, axis=o["Axis"]) for k in range(x.shape[o["Axis"]])]
    if name == "CONCATENATION":
        return [np.concatenate([np.atleast_1d(v) if v.ndim == 0 else v for v in ins], axis=o["Axis"])]
    if name == "GATHER":
        if o["BatchDims"]:
            raise _Unsupported("GATHER with batch_dims in shape arithmetic")
        return [np.take(ins[0], ins[1], axis=o["Axis"])]
    if name in ("RESHAPE", "SQUEEZE", "EXPAND_DIMS"):
        return [ins[0].reshape(imp.shape(op.outputs[0]))]
    if name == "TRANSPOSE":
        return [np.transpose(ins[0], ins[1].tolist())]
    if name == "CAST":
        return [ins[0]]
    if name in ("ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM", "FLOOR_DIV"):
        a, b = ins
        if name == "FLOOR_DIV" and np.any(b == 0):
            raise imp.bad("integer division by zero in shape arithmetic")
        fn = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "MAXIMUM": np.maximum,
              "MINIMUM": np.minimum, "FLOOR_DIV": np.floor_divide}[name]
        return [fn(a, b)]
    if name == "REDUCE_PROD":
        axes = tuple(int(a) for a in np.atleast_1d(ins[1]))
        return [np.prod(ins[0], axis=axes, keepdims=bool(o["KeepDims"]))]
    if name == "RANGE":
        start, limit, delta = (int(v.reshape(-1)[0]) for v in ins)
        if delta == 0:
            raise imp.bad("RANGE with delta 0")
        return [np.arange(start, limit, delta)]
    if name == "FILL":
        return [np.full(ins[0].tolist(), int(ins[1].reshape(-1)[0]))]
    raise imp.bad("cannot fold this operator")


def _check_strided_masks(o: dict) -> None:
    if o["EllipsisMask"] or o["NewAxisMask"]:
        raise _Unsupported("ellipsis_mask/new_axis_mask")


# ======================================================================================
# Operator handlers
# ======================================================================================

_HANDLERS: dict = {}


def _handles(*names):
    def register(fn):
        for n in names:
            _HANDLERS[n] = fn
        return fn

    return register


def _positive(imp: _Importer, what: str, *values: int) -> list[int]:
    for v in values:
        if v < 1:
            raise imp.bad(f"{what} {list(values)} must be >= 1")
    return list(values)


def _rank(imp: _Importer, v: SSAValue, rank: int, role: str) -> tuple[int, ...]:
    s = qnn.shape_of(v)
    if len(s) != rank:
        raise imp.bad(f"{role} must have rank {rank}, got shape {list(s)}")
    return s


@_handles("CONV_2D")
def _conv2d(imp: _Importer, op: _Op):
    o = op.options
    x, w = imp.act(op.inputs[0], "input"), imp.act(op.inputs[1], "weights")
    n, h, wd, c = _rank(imp, x, 4, "input")
    oc, kh, kw, ic = _rank(imp, w, 4, "weights")
    if ic != c and 0 < ic < c and c % ic == 0:
        if oc % (c // ic):
            raise imp.bad(f"grouped convolution of {c // ic} groups: {oc} output channels are not a multiple")
        if ic == 1:  # (groups of one channel: K a multiple of C, checked above)
            w = _grouped_as_depthwise(imp, op.inputs[1], oc, kh, kw)
            _depthwise_of(imp, op, x, w, h, wd, kh, kw, oc)
            return
        w = _grouped_as_dense(imp, op.inputs[1], oc, kh, kw, ic, c)
    strides = _positive(imp, "strides", o["StrideH"], o["StrideW"])
    dil = _positive(imp, "dilations", o["DilationHFactor"], o["DilationWFactor"])
    pads = _tflite_padding(o["Padding"], (h, wd), (kh, kw), strides, dil)
    b = imp.bias(op, 2, x, w, oc)
    attrs = dict(strides=strides, dilations=dil, padding=pads, **imp.fused(o["FusedActivationFunction"], imp.out_q(op)), **imp.acc(x))
    imp.emit(qnn.Conv2DOp, [x, w, b], op.outputs[:1], attrs)


def _grouped_weights_type(imp: _Importer, i: int) -> UniformQuantizedType:
    """The quantized type of a grouped CONV_2D's weights (tensor `i`): constant, quantized,
    per-tensor or along the output channels."""
    t = imp.tensor(i)
    if not t.constant:
        raise _Unsupported("grouped convolution with weights computed at run time")
    q = imp.qtype(i)
    if q is None:
        raise imp.bad(f"weights '{t.name}' are {t.type} without quantization parameters")
    if q.is_per_axis and q.axis != 0:
        raise _Unsupported(f"grouped convolution weights quantized along axis {q.axis}")
    return q


def _grouped_as_depthwise(imp: _Importer, i: int, oc: int, kh: int, kw: int) -> SSAValue:
    """The weights [K, KH, KW, 1] of a CONV_2D whose groups each read one input channel (Keras's
    `Conv2D(groups=C)`, ConvNeXt's 7x7 depthwise layers) as DEPTHWISE_CONV_2D's [1, KH, KW, K]:
    output channel k of both reads input channel k // (K / C) with filter k, so the sums, the
    per-output-channel requantization and the bias are the depthwise convolution's (per-axis
    scales move from axis 0 to axis 3)."""
    q = _grouped_weights_type(imp, i)
    arr = np.ascontiguousarray(imp.raw_array(i).reshape(oc, kh, kw).transpose(1, 2, 0).reshape(1, kh, kw, oc))
    moved = UniformQuantizedType(q.storage, "f32", q.scale_array().tolist(), q.zero_point_array().tolist(),
                                 3 if q.is_per_axis else None)
    const = qnn.ConstantOp.from_array(arr, moved)
    imp.block.add_op(const)
    return const.result


def _grouped_as_dense(imp: _Importer, i: int, oc: int, kh: int, kw: int, ic: int, c: int) -> SSAValue:
    """The weights [K, KH, KW, IC] of a CONV_2D of G = C / IC groups reading IC > 1 input
    channels each (ResNeXt's and RegNet's grouped 3x3 layers) as the dense [K, KH, KW, C] of
    one convolution: output channel k (of group g = k // (K / G)) keeps its filter on input
    channels g IC .. g IC + IC - 1 and holds its zero point on every other, so each sum
    gains only terms (x - zx) * 0.  Exact (the sums, the bias and the per-channel
    requantization are the grouped convolution's), at G times the grouped form's
    multiply-accumulates."""
    q = _grouped_weights_type(imp, i)
    # (the input's channel count is a field of the file: the dense form G times the weights'
    # bytes is checked before it is allocated)
    if oc * kh * kw * c > MAX_DENSE_GROUPED:
        raise _Unsupported(f"grouped convolution of {c // ic} groups whose dense form would hold "
                           f"{oc * kh * kw * c} weights (more than {MAX_DENSE_GROUPED})")
    arr = imp.raw_array(i).reshape(oc, kh, kw, ic)
    zp = np.broadcast_to(np.asarray(q.zero_point_array(), np.int64).reshape(-1), (oc,))
    dense = np.empty((oc, kh, kw, c), arr.dtype)
    dense[...] = zp.astype(arr.dtype)[:, None, None, None]
    per_group = oc // (c // ic)
    for k in range(oc):
        g = k // per_group
        dense[k, :, :, g * ic:(g + 1) * ic] = arr[k]
    const = qnn.ConstantOp.from_array(dense, q)
    imp.block.add_op(const)
    return const.result


@_handles("DEPTHWISE_CONV_2D")
def _depthwise(imp: _Importer, op: _Op):
    x, w = imp.act(op.inputs[0], "input"), imp.act(op.inputs[1], "weights")
    n, h, wd, c = _rank(imp, x, 4, "input")
    one, kh, kw, oc = _rank(imp, w, 4, "weights")
    _depthwise_of(imp, op, x, w, h, wd, kh, kw, oc)


def _depthwise_of(imp: _Importer, op: _Op, x: SSAValue, w: SSAValue, h: int, wd: int, kh: int, kw: int, oc: int):
    o = op.options
    strides = _positive(imp, "strides", o["StrideH"], o["StrideW"])
    dil = _positive(imp, "dilations", o["DilationHFactor"], o["DilationWFactor"])
    pads = _tflite_padding(o["Padding"], (h, wd), (kh, kw), strides, dil)
    b = imp.bias(op, 2, x, w, oc)
    attrs = dict(strides=strides, dilations=dil, padding=pads, **imp.fused(o["FusedActivationFunction"], imp.out_q(op)), **imp.acc(x))
    imp.emit(qnn.DepthwiseConv2DOp, [x, w, b], op.outputs[:1], attrs)


@_handles("TRANSPOSE_CONV")
def _transpose_conv(imp: _Importer, op: _Op):
    o = op.options
    out_shape = imp.static_ints(op.inputs[0], "output_shape")
    w, x = imp.act(op.inputs[1], "weights"), imp.act(op.inputs[2], "input")
    n, h, wd, c = _rank(imp, x, 4, "input")
    oc, kh, kw, ic = _rank(imp, w, 4, "weights")
    if out_shape.size != 4:
        raise imp.bad(f"output_shape must have 4 entries, got {out_shape.tolist()}")
    H, W = int(out_shape[1]), int(out_shape[2])
    strides = _positive(imp, "strides", o["StrideH"], o["StrideW"])
    pads = []
    for size, k, s, in_size in ((H, kh, strides[0], h), (W, kw, strides[1], wd)):
        top = _tflite_padding(o["Padding"], (size,), (k,), (s,), (1,))[0]
        bottom = (in_size - 1) * s + k - top - size
        if bottom < 0:
            raise _Unsupported("output larger than the full transposed convolution")
        pads += [top, bottom]
    b = imp.bias(op, 3, x, w, oc)
    attrs = dict(strides=strides, dilations=[1, 1], padding=pads, **imp.fused(o["FusedActivationFunction"], imp.out_q(op)), **imp.acc(x))
    imp.emit(qnn.TransposeConv2DOp, [x, w, b], op.outputs[:1], attrs)


@_handles("FULLY_CONNECTED")
def _fully_connected(imp: _Importer, op: _Op):
    o = op.options
    if o["WeightsFormat"] != 0:
        raise _Unsupported("shuffled weights format")
    x, w = imp.act(op.inputs[0], "input"), imp.act(op.inputs[1], "weights")
    oc, _ = _rank(imp, w, 2, "weights")
    b = imp.bias(op, 2, x, w, oc)
    imp.emit(qnn.FullyConnectedOp, [x, w, b], op.outputs[:1], {**imp.fused(o["FusedActivationFunction"], imp.out_q(op)), **imp.acc(x)})


@_handles("BATCH_MATMUL")
def _batch_matmul(imp: _Importer, op: _Op):
    o = op.options
    a, b = imp.act(op.inputs[0], "lhs"), imp.act(op.inputs[1], "rhs")
    imp.emit(qnn.BatchMatmulOp, [a, b], op.outputs[:1], {"adj_x": bool(o["AdjX"]), "adj_y": bool(o["AdjY"]), **imp.acc(a)})


_BINARY = {
    "ADD": qnn.AddOp,
    "SUB": qnn.SubOp,
    "MUL": qnn.MulOp,
    "DIV": qnn.DivOp,
    "SQUARED_DIFFERENCE": qnn.SquaredDifferenceOp,
    "MAXIMUM": qnn.MaximumOp,
    "MINIMUM": qnn.MinimumOp,
    "PRELU": qnn.PReluOp,
}


@_handles(*_BINARY)
def _binary(imp: _Importer, op: _Op):
    a = imp.act(op.inputs[0], "lhs")
    b = imp.act(op.inputs[1], "alpha" if op.name == "PRELU" else "rhs")
    attrs = {}
    if "FusedActivationFunction" in op.options:
        attrs = imp.fused(op.options["FusedActivationFunction"], imp.out_q(op))
    imp.emit(_BINARY[op.name], [a, b], op.outputs[:1], attrs)


_UNARY = {
    "LOGISTIC": qnn.LogisticOp,
    "TANH": qnn.TanhOp,
    "HARD_SWISH": qnn.HardSwishOp,
    "ELU": qnn.EluOp,
    "LOG_SOFTMAX": qnn.LogSoftmaxOp,
    "SOFTMAX": qnn.SoftmaxOp,
    "LEAKY_RELU": qnn.LeakyReluOp,
    "GELU": qnn.GeluOp,
    "EXP": qnn.ExpOp,
    "RSQRT": qnn.RsqrtOp,
    "SQRT": qnn.SqrtOp,
    "ABS": qnn.AbsOp,
    "NEG": qnn.NegOp,
    "L2_NORMALIZATION": qnn.L2NormalizationOp,
}


@_handles(*_UNARY)
def _unary(imp: _Importer, op: _Op):
    x = imp.act(op.inputs[0])
    attrs = {}
    if op.name == "L2_NORMALIZATION" and op.options.get("FusedActivationFunction"):
        raise imp.bad("a fused activation on L2_NORMALIZATION (TFLite's kernels refuse it)")
    if op.name == "SOFTMAX":
        attrs["beta"] = float(np.float32(op.options["Beta"]))
    if op.name == "LEAKY_RELU":
        attrs["alpha"] = float(np.float32(op.options["Alpha"]))
    if op.name == "GELU":
        attrs["approximate"] = bool(op.options["Approximate"])
    imp.emit(_UNARY[op.name], [x], op.outputs[:1], attrs)


_RELUS = {"RELU": "relu", "RELU6": "relu6", "RELU_N1_TO_1": "relu_n1_to_1", "RELU_0_TO_1": "relu_0_to_1"}


@_handles(*_RELUS)
def _relu(imp: _Importer, op: _Op):
    x = imp.act(op.inputs[0])
    out_q = imp.out_q(op)
    if out_q.is_per_axis:
        raise imp.bad("the output must be per-tensor quantized")
    lo, hi = _activation_bounds(_RELUS[op.name], out_q)
    imp.emit(qnn.ClampOp, [x], op.outputs[:1], {"act_min": lo, "act_max": hi})


@_handles("AVERAGE_POOL_2D", "MAX_POOL_2D")
def _pool(imp: _Importer, op: _Op):
    o = op.options
    x = imp.act(op.inputs[0])
    n, h, w, c = _rank(imp, x, 4, "input")
    kernel = _positive(imp, "filter size", o["FilterHeight"], o["FilterWidth"])
    strides = _positive(imp, "strides", o["StrideH"], o["StrideW"])
    pads = _tflite_padding(o["Padding"], (h, w), kernel, strides, (1, 1))
    attrs = dict(kernel=kernel, strides=strides, padding=pads, **imp.fused(o["FusedActivationFunction"], imp.out_q(op)))
    cls = qnn.AvgPool2DOp if op.name == "AVERAGE_POOL_2D" else qnn.MaxPool2DOp
    imp.emit(cls, [x], op.outputs[:1], attrs)


_REDUCE = {"MEAN": qnn.MeanOp, "SUM": qnn.SumOp, "REDUCE_MAX": qnn.ReduceMaxOp, "REDUCE_MIN": qnn.ReduceMinOp}


@_handles(*_REDUCE)
def _reduce(imp: _Importer, op: _Op):
    x = imp.act(op.inputs[0])
    axes = imp.static_ints(op.inputs[1], "axes").reshape(-1).tolist()
    rank = len(qnn.shape_of(x))
    for a in axes:
        if not -rank <= a < rank:
            raise imp.bad(f"axis {a} is out of range for rank {rank}")
    imp.emit(_REDUCE[op.name], [x], op.outputs[:1], {"axes": axes, "keep_dims": bool(op.options["KeepDims"])})


def _resolve_shape(imp: _Importer, new_shape: list[int], count: int) -> list[int]:
    if sum(1 for d in new_shape if d == -1) > 1 or any(d < -1 for d in new_shape):
        raise imp.bad(f"new shape {new_shape} is not a shape (at most one -1)")
    known = math.prod(d for d in new_shape if d != -1)
    if -1 in new_shape:
        if known == 0 or count % known:
            raise imp.bad(f"new shape {new_shape} does not fit {count} elements")
        new_shape = [count // known if d == -1 else d for d in new_shape]
    if math.prod(new_shape) != count:
        raise imp.bad(f"new shape {new_shape} does not hold {count} elements")
    return new_shape


def _reshape_to(imp: _Importer, x: SSAValue, out: int, shape: list[int]):
    imp.emit_one(qnn.ReshapeOp, [x], out, shape=shape)


@_handles("RESHAPE")
def _reshape(imp: _Importer, op: _Op):
    x = imp.act(op.inputs[0])
    count = math.prod(qnn.shape_of(x))
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
def _squeeze(imp: _Importer, op: _Op):
    x = imp.act(op.inputs[0])
    s = qnn.shape_of(x)
    dims = op.options.get("SqueezeDims") or []
    if dims:
        axes = set()
        for d in dims:
            if not -len(s) <= d < len(s) or s[d] != 1:
                raise imp.bad(f"cannot squeeze dimension {d} of shape {list(s)}")
            axes.add(d % len(s))
    else:
        axes = {k for k, d in enumerate(s) if d == 1}
    _reshape_to(imp, x, op.outputs[0], [d for k, d in enumerate(s) if k not in axes])


@_handles("EXPAND_DIMS")
def _expand_dims(imp: _Importer, op: _Op):
    x = imp.act(op.inputs[0])
    s = list(qnn.shape_of(x))
    axis = imp.static_scalar(op.inputs[1], "axis")
    if not -len(s) - 1 <= axis <= len(s):
        raise imp.bad(f"axis {axis} is out of range for rank {len(s)}")
    if axis < 0:
        axis += len(s) + 1
    _reshape_to(imp, x, op.outputs[0], s[:axis] + [1] + s[axis:])


@_handles("TRANSPOSE")
def _transpose(imp: _Importer, op: _Op):
    x = imp.act(op.inputs[0])
    perm = imp.static_ints(op.inputs[1], "perm").reshape(-1).tolist()
    rank = len(qnn.shape_of(x))
    perm = [p + rank if p < 0 else p for p in perm]
    imp.emit(qnn.TransposeOp, [x], op.outputs[:1], {"perm": perm})


@_handles("PAD", "PADV2")
def _pad(imp: _Importer, op: _Op):
    x = imp.act(op.inputs[0])
    rank = len(qnn.shape_of(x))
    p = imp.static_ints(op.inputs[1], "paddings")
    if p.shape != (rank, 2):
        raise imp.bad(f"paddings must have shape [{rank}, 2], got {list(p.shape)}")
    attrs = {"paddings": p.reshape(-1).tolist()}
    if op.name == "PADV2" and len(op.inputs) > 2 and op.inputs[2] >= 0:
        i = op.inputs[2]
        t = imp.tensor(i)
        if not t.constant:
            raise imp.bad(f"constant_values '{t.name}' must be a constant")
        cq, xq = imp.qtype(i), qnn.qtype(x)
        if cq is None:
            raise imp.bad(f"constant_values '{t.name}' is {t.type} without quantization parameters")
        if cq.scale_array().tolist() != xq.scale_array().tolist() or cq.zero_point_array().tolist() != xq.zero_point_array().tolist():
            raise imp.bad(f"constant_values '{t.name}' is quantized as {cq}, the input as {xq}")
        v = imp.raw_array(i).reshape(-1)
        if v.size != 1:
            raise imp.bad("constant_values must hold one value")
        attrs["pad_value"] = int(v[0])
    imp.emit(qnn.PadOp, [x], op.outputs[:1], attrs)


def _slice_attrs(idx, shape_in, strides_in) -> tuple[list[int], list[int], list[int], list[int]]:
    """Per axis: the first index, just past the last one (last + 1, or last - 1 for a
    negative stride), the stride; and the result shape (shrunk axes dropped)."""
    begin, end, strides, shape = [], [], [], []
    for (ix, shrink), n, st in zip(idx, shape_in, list(strides_in) + [1] * (len(shape_in) - len(strides_in))):
        st = int(st) if ix.size > 1 else (1 if st > 0 else -1)
        if ix.size:
            b = int(ix[0])
            e = int(ix[-1]) + (1 if st > 0 else -1)
        else:
            b = e = 0
            st = 1
        begin.append(b)
        end.append(e)
        strides.append(st)
        if not shrink:
            shape.append(int(ix.size))
    return begin, end, strides, shape


@_handles("STRIDED_SLICE")
def _strided_slice(imp: _Importer, op: _Op):
    o = op.options
    x = imp.act(op.inputs[0])
    s = qnn.shape_of(x)
    begin = imp.static_ints(op.inputs[1], "begin").reshape(-1).tolist()
    end = imp.static_ints(op.inputs[2], "end").reshape(-1).tolist()
    strides = (
        imp.static_ints(op.inputs[3], "strides").reshape(-1).tolist()
        if len(op.inputs) > 3 and op.inputs[3] >= 0 else [1] * len(begin)
    )
    if not len(begin) == len(end) == len(strides) or len(begin) > len(s):
        raise imp.bad(f"begin/end/strides {begin}/{end}/{strides} do not fit rank {len(s)}")
    if 0 in strides:
        raise imp.bad("stride 0 in STRIDED_SLICE")
    if o["EllipsisMask"] or o["NewAxisMask"]:
        # folded into a slice of the input viewed with the new size-1 axes; the
        # new axes reappear only in the result shape
        if o["Offset"]:
            raise _Unsupported("offset together with ellipsis_mask/new_axis_mask")
        if bin(o["EllipsisMask"]).count("1") > 1:
            raise imp.bad(f"ellipsis_mask {o['EllipsisMask']} marks more than one ellipsis")
        try:
            eff_shape, eb, ee, es, bm, em, sm, new = strided_slice_effective(
                s, begin, end, strides, o["BeginMask"], o["EndMask"], o["ShrinkAxisMask"],
                o["EllipsisMask"], o["NewAxisMask"])
        except ValueError as err:
            raise imp.bad(str(err)) from None
        idx = strided_slice_indices(eff_shape, eb, ee, es, bm, em, sm)
        shape = [int(ix.size) for ix, shrink in idx if not shrink]
        keep = [a for a in range(len(eff_shape)) if not new & (1 << a)]
        b, e, st, _ = _slice_attrs([idx[a] for a in keep], s, [es[a] for a in keep])
    else:
        idx = strided_slice_indices(s, begin, end, strides, o["BeginMask"], o["EndMask"], o["ShrinkAxisMask"],
                                    bool(o["Offset"]))
        b, e, st, shape = _slice_attrs(idx, s, strides)
    imp.emit_one(qnn.SliceOp, [x], op.outputs[0], {"begin": b, "end": e, "strides": st}, shape=shape)


@_handles("SLICE")
def _slice(imp: _Importer, op: _Op):
    x = imp.act(op.inputs[0])
    s = qnn.shape_of(x)
    begin = imp.static_ints(op.inputs[1], "begin").reshape(-1).tolist()
    size = imp.static_ints(op.inputs[2], "size").reshape(-1).tolist()
    if not len(begin) == len(size) == len(s):
        raise imp.bad(f"begin {begin} and size {size} must have {len(s)} entries")
    end = []
    for b, z, d in zip(begin, size, s):
        e = d if z == -1 else b + z
        if not 0 <= b <= e <= d:
            raise imp.bad(f"slice begin {begin} size {size} is outside shape {list(s)}")
        end.append(e)
    imp.emit_one(qnn.SliceOp, [x], op.outputs[0], {"begin": begin, "end": end, "strides": [1] * len(s)},
                 shape=[e - b for b, e in zip(begin, end)])


def _split_into(imp: _Importer, op: _Op, x: SSAValue, axis: int, sizes: list[int]):
    s = list(qnn.shape_of(x))
    if not -len(s) <= axis < len(s):
        raise imp.bad(f"axis {axis} is out of range for rank {len(s)}")
    axis %= len(s)
    if len(sizes) != len(op.outputs):
        raise imp.bad(f"{len(sizes)} pieces but {len(op.outputs)} outputs")
    types = []
    for o, z in zip(op.outputs, sizes):
        types.append(imp.result_type(o, s[:axis] + [z] + s[axis + 1 :]))
    imp.emit(qnn.SplitOp, [x], op.outputs, {"axis": axis}, types)


@_handles("SPLIT")
def _split(imp: _Importer, op: _Op):
    axis = imp.static_scalar(op.inputs[0], "axis")
    x = imp.act(op.inputs[1])
    s = qnn.shape_of(x)
    num = op.options["NumSplits"] or len(op.outputs)
    if not -len(s) <= axis < len(s):
        raise imp.bad(f"axis {axis} is out of range for rank {len(s)}")
    dim = s[axis % len(s)]
    if num < 1 or dim % num:
        raise imp.bad(f"cannot split size {dim} into {num} equal pieces")
    _split_into(imp, op, x, axis, [dim // num] * num)


@_handles("SPLIT_V")
def _split_v(imp: _Importer, op: _Op):
    x = imp.act(op.inputs[0])
    s = qnn.shape_of(x)
    sizes = imp.static_ints(op.inputs[1], "size_splits").reshape(-1).tolist()
    axis = imp.static_scalar(op.inputs[2], "axis")
    if not -len(s) <= axis < len(s):
        raise imp.bad(f"axis {axis} is out of range for rank {len(s)}")
    dim = s[axis % len(s)]
    sizes = _resolve_shape(imp, sizes, dim) if -1 in sizes else sizes
    if sum(sizes) != dim or min(sizes, default=0) < 0:
        raise imp.bad(f"size_splits {sizes} do not add up to {dim}")
    _split_into(imp, op, x, axis, sizes)


@_handles("CONCATENATION")
def _concatenation(imp: _Importer, op: _Op):
    o = op.options
    xs = [imp.act(i, f"input {k}") for k, i in enumerate(op.inputs)]
    if not xs:
        raise imp.bad("no inputs")
    rank = len(qnn.shape_of(xs[0]))
    axis = o["Axis"]
    if not -rank <= axis < rank:
        raise imp.bad(f"axis {axis} is out of range for rank {rank}")
    attrs = {"axis": axis % rank, **imp.fused(o["FusedActivationFunction"], imp.out_q(op))}
    imp.emit(qnn.ConcatenationOp, xs, op.outputs[:1], attrs)


@_handles("PACK")
def _pack(imp: _Importer, op: _Op):
    xs = [imp.act(i, f"input {k}") for k, i in enumerate(op.inputs)]
    if not xs:
        raise imp.bad("no inputs")
    s = list(qnn.shape_of(xs[0]))
    axis = op.options["Axis"]
    if not -len(s) - 1 <= axis <= len(s):
        raise imp.bad(f"axis {axis} is out of range for rank {len(s)}")
    axis %= len(s) + 1
    expanded = []
    for v in xs:
        vs = list(qnn.shape_of(v))
        if vs != s:
            raise imp.bad(f"inputs of shapes {s} and {vs} cannot be packed")
        r = qnn.ReshapeOp([v], [TensorType(qnn.qtype(v), s[:axis] + [1] + s[axis:])], {})
        imp.block.add_op(r)
        expanded.append(r.results[0])
    imp.emit(qnn.ConcatenationOp, expanded, op.outputs[:1], {"axis": axis})


@_handles("UNPACK")
def _unpack(imp: _Importer, op: _Op):
    x = imp.act(op.inputs[0])
    s = list(qnn.shape_of(x))
    axis = op.options["Axis"]
    if not -len(s) <= axis < len(s):
        raise imp.bad(f"axis {axis} is out of range for rank {len(s)}")
    axis %= len(s)
    if s[axis] != len(op.outputs):
        raise imp.bad(f"{len(op.outputs)} outputs for dimension {axis} of size {s[axis]}")
    piece = TensorType(qnn.qtype(x), s[:axis] + [1] + s[axis + 1 :])
    try:
        split = qnn.SplitOp([x], [piece] * s[axis], {"axis": axis})
        split.verify()
    except VerifyException as e:
        raise imp.bad(str(e).splitlines()[0]) from None
    imp.block.add_op(split)
    for r, o in zip(split.results, op.outputs):
        _reshape_to(imp, r, o, s[:axis] + s[axis + 1 :])


@_handles("GATHER")
def _gather(imp: _Importer, op: _Op):
    o = op.options
    x = imp.act(op.inputs[0], "params")
    i = op.inputs[1]
    t = imp.tensor(i) if i >= 0 else None
    if t is None or t.type not in ("INT32", "INT64", "INT16"):
        raise imp.bad(f"indices must be an integer tensor, got {t.type if t else 'nothing'}")
    idx = imp.value(i, "indices")
    rank = len(qnn.shape_of(x))
    axis = o["Axis"]
    if not -rank <= axis < rank:
        raise imp.bad(f"axis {axis} is out of range for rank {rank}")
    attrs = {"axis": axis % rank}
    batch_dims = o["BatchDims"]
    if batch_dims:
        idx_rank = len(qnn.shape_of(idx))
        b = batch_dims + idx_rank if batch_dims < 0 else batch_dims
        if not 0 <= b <= min(axis % rank, idx_rank):
            raise imp.bad(f"batch_dims {batch_dims} does not fit axis {axis % rank} and indices rank {idx_rank}")
        attrs["batch_dims"] = b
    imp.emit(qnn.GatherOp, [x, idx], op.outputs[:1], attrs)


@_handles("TILE")
def _tile(imp: _Importer, op: _Op):
    x = imp.act(op.inputs[0])
    rank = len(qnn.shape_of(x))
    multiples = imp.static_ints(op.inputs[1], "multiples").reshape(-1).tolist()
    if len(multiples) != rank or min(multiples, default=1) < 0:
        raise imp.bad(f"multiples {multiples} must be one non-negative integer per dimension of rank {rank}")
    imp.emit(qnn.TileOp, [x], op.outputs[:1], {"multiples": multiples})


@_handles("BROADCAST_TO")
def _broadcast_to(imp: _Importer, op: _Op):
    """BROADCAST_TO = qnn.reshape to the target rank (leading 1s) + qnn.tile."""
    x = imp.act(op.inputs[0])
    s = list(qnn.shape_of(x))
    target = imp.static_ints(op.inputs[1], "shape").reshape(-1).tolist()
    if len(target) < len(s) or min(target, default=1) < 0:
        raise imp.bad(f"cannot broadcast shape {s} to {target}")
    padded = [1] * (len(target) - len(s)) + s
    multiples = []
    for d, (a, b) in enumerate(zip(padded, target)):
        if a != b and a != 1:
            raise imp.bad(f"cannot broadcast shape {s} to {target} (dimension {d}: {a} to {b})")
        multiples.append(b if a == 1 else 1)
    if padded != s:
        r = qnn.ReshapeOp([x], [TensorType(qnn.qtype(x), padded)], {})
        imp.block.add_op(r)
        x = r.results[0]
    imp.emit(qnn.TileOp, [x], op.outputs[:1], {"multiples": multiples})


@_handles("MIRROR_PAD")
def _mirror_pad(imp: _Importer, op: _Op):
    x = imp.act(op.inputs[0])
    rank = len(qnn.shape_of(x))
    p = imp.static_ints(op.inputs[1], "paddings")
    if p.shape != (rank, 2):
        raise imp.bad(f"paddings must have shape [{rank}, 2], got {list(p.shape)}")
    mode = {tflite.MirrorPadMode.REFLECT: "reflect", tflite.MirrorPadMode.SYMMETRIC: "symmetric"}.get(op.options["Mode"])
    if mode is None:
        raise imp.bad(f"unknown mirror pad mode {op.options['Mode']}")
    imp.emit(qnn.MirrorPadOp, [x], op.outputs[:1], {"paddings": p.reshape(-1).tolist(), "mode": mode})


@_handles("GATHER_ND")
def _gather_nd(imp: _Importer, op: _Op):
    x = imp.act(op.inputs[0], "params")
    i = op.inputs[1]
    t = imp.tensor(i) if i >= 0 else None
    if t is None or t.type not in ("INT32", "INT64", "INT16"):
        raise imp.bad(f"indices must be an integer tensor, got {t.type if t else 'nothing'}")
    imp.emit(qnn.GatherNdOp, [x, imp.value(i, "indices")], op.outputs[:1])


@_handles("ARG_MAX", "ARG_MIN")
def _arg_extreme(imp: _Importer, op: _Op):
    x = imp.act(op.inputs[0])
    rank = len(qnn.shape_of(x))
    axis = imp.static_scalar(op.inputs[1], "axis")
    if not -rank <= axis < rank:
        raise imp.bad(f"axis {axis} is out of range for rank {rank}")
    out = op.outputs[0]
    if imp.tensor(out).type not in ("INT32", "INT64"):
        raise imp.bad(f"output '{imp.tensor(out).name}' is {imp.tensor(out).type}; ARG_MAX / ARG_MIN give int32 or int64")
    if qnn.qtype(x).storage_width.data != 8:
        raise imp.bad(f"{qnn.qtype(x).storage} input: LiteRT's kernel takes 8-bit, int32, float32 and bool only "
                      "(its prepare fails)")
    cls = qnn.ArgMaxOp if op.name == "ARG_MAX" else qnn.ArgMinOp
    imp.emit(cls, [x], [out], {"axis": axis % rank}, [imp.result_type(out, quantized=False)])


@_handles("FILL")
def _fill(imp: _Importer, op: _Op):
    """FILL of a non-integer constant (a bool mask of ones; int32 FILLs fold): the float importer's."""
    from qdialect.importer.tflite_float import FLOAT_HANDLERS

    FLOAT_HANDLERS["FILL"](imp.float_view(), op)


@_handles("SELECT", "SELECT_V2")
def _select(imp: _Importer, op: _Op):
    """SELECT_V2 of quantized values by a bool mask (Keras' masked softmax: scores where the mask
    is true, a very negative constant elsewhere): `nn.select` copies stored values, as LiteRT
    does, so both values and the output must share one quantized type."""
    from qdialect.importer.tflite_float import select

    out = op.outputs[0]

    def emit(c, x, y):
        if qnn.qtype(x) is None:
            raise imp.bad(f"x '{imp.tensor(op.inputs[1]).name}' is {imp.tensor(op.inputs[1]).type} without "
                          "quantization parameters")
        shape = qnn.broadcast_shape(qnn.broadcast_shape(list(c.type.get_shape()), list(x.type.get_shape())),
                                    list(y.type.get_shape()))
        rtype = imp.result_type(out, shape)
        if rtype.element_type != x.type.element_type:
            raise imp.bad(f"output type {rtype.element_type} differs from the values' {x.type.element_type} "
                          "(LiteRT copies stored values, it does not requantize)")
        sel = nn.SelectOp([c, x, y], rtype)
        try:
            sel.verify()
        except VerifyException as e:
            raise imp.bad(str(e).strip().splitlines()[0]) from None
        imp.block.add_op(sel)
        imp.values[out] = sel.result

    select(imp, op, imp.value, emit)


@_handles("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR")
def _resize(imp: _Importer, op: _Op):
    o = op.options
    x = imp.act(op.inputs[0])
    n, h, w, c = _rank(imp, x, 4, "input")
    size = imp.static_ints(op.inputs[1], "size").reshape(-1).tolist()
    if len(size) != 2 or min(size) < 1:
        raise imp.bad(f"size must be two positive integers, got {size}")
    cls = qnn.ResizeBilinearOp if op.name == "RESIZE_BILINEAR" else qnn.ResizeNearestNeighborOp
    attrs = {"align_corners": bool(o["AlignCorners"]), "half_pixel_centers": bool(o["HalfPixelCenters"])}
    imp.emit_one(cls, [x], op.outputs[0], attrs, shape=[n, size[0], size[1], c])


@_handles("SPACE_TO_DEPTH", "DEPTH_TO_SPACE")
def _space_depth(imp: _Importer, op: _Op):
    x = imp.act(op.inputs[0])
    cls = qnn.SpaceToDepthOp if op.name == "SPACE_TO_DEPTH" else qnn.DepthToSpaceOp
    imp.emit(cls, [x], op.outputs[:1], {"block_size": op.options["BlockSize"]})


@_handles("QUANTIZE")
def _quantize(imp: _Importer, op: _Op):
    i = op.inputs[0]
    v = imp.value(i, "input")
    t = imp.tensor(i)
    if qnn.qtype(v) is not None:
        imp.emit(qnn.RequantizeOp, [v], op.outputs[:1])
        return
    if t.type != "FLOAT32":
        raise imp.bad(f"input '{t.name}' is {t.type} without quantization parameters")
    imp.emit(qnn.QuantizeOp, [v], op.outputs[:1])


@_handles("DEQUANTIZE")
def _dequantize(imp: _Importer, op: _Op):
    i = op.inputs[0]
    x = imp.act(i)
    out = op.outputs[0]
    t = imp.tensor(out)
    if t.type != "FLOAT32":
        raise _Unsupported(f"dequantize to {t.type.lower()}")
    shape = list(qnn.shape_of(x)) if imp.dynamic(out) else list(imp.shape(out))
    if imp.dynamic(out):
        imp.check_declared(out, shape)
        imp.shapes[out] = tuple(shape)
        imp.computed.add(out)
    imp.emit(qnn.DequantizeOp, [x], [out], types=[TensorType(Float32Type(), shape)])


# Ops listed as supported (shape-only ones only on values known at import).
SUPPORTED_OPERATORS = tuple(sorted(_HANDLERS)) + tuple(sorted(_STATIC_ONLY))


# ======================================================================================
# Entry points
# ======================================================================================


def import_tflite(data: bytes, *, batch: int = 1, name: str = "model") -> ModuleOp:
    """Import a fully integer-quantized TFLite model as a verified L1 module.

    `batch` fixes a dynamic (-1) batch dimension; `name` becomes the module's
    symbol name.  Raises TFLiteImportError with a one-line explanation for
    anything it cannot import.
    """
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise TypeError(f"import_tflite expects bytes, got {type(data).__name__}")
    if not isinstance(batch, int) or batch < 1:
        raise TFLiteImportError(f"batch must be a positive integer, got {batch!r}")
    g = _read(data)
    _classify(g)
    from qdialect.importer.tflite_float import FLOAT_HANDLERS

    _scan_unsupported(g, {**FLOAT_HANDLERS, **_HANDLERS})  # float islands run the float importer's
    if batch != 1:
        dynamic = any(
            (t := g.tensors[i]).signature is not None and len(t.signature) > 0 and t.signature[0] == -1
            for i in g.inputs
        )
        if not dynamic:
            shapes = ", ".join(str(list(g.tensors[i].shape)) for i in g.inputs)
            raise TFLiteImportError(
                f"batch {batch}: the model has no dynamic batch dimension (its inputs are {shapes})"
            )
    imp = _Importer(g, batch)
    try:
        with np.errstate(all="ignore"):
            results, in_names, out_names = imp.run()
    except TFLiteImportError:
        raise
    except (ArithmeticError, ValueError, IndexError, KeyError, TypeError, RuntimeError, VerifyException) as e:
        where = imp.where()
        raise TFLiteImportError(
            f"{where + ': ' if where else ''}malformed model ({type(e).__name__}: {e})"
        ) from None
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


def import_tflite_file(path, *, batch: int = 1, name: str | None = None) -> ModuleOp:
    """Read and import a .tflite file (module named after the file's stem)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise TFLiteImportError(f"cannot read {p}: {e.strerror or e}") from None
    return import_tflite(data, batch=batch, name=p.stem if name is None else name)
