"""Build small TFLite flatbuffers in memory and run them with LiteRT.

Used by every differential test: the expected values come from LiteRT running
a one-operator (or small multi-operator) model, never from qdialect's code.

Usage::

    import numpy as np
    from tests.tflite_writer import TensorSpec, build_single_op_model, run_tflite

    x = TensorSpec((1, 5, 5, 3), "int8", scale=0.05, zero_point=-3)
    w = TensorSpec((4, 3, 3, 3), "int8", scale=[0.01, 0.02, 0.03, 0.04],
                   zero_point=[0, 0, 0, 0], quantized_dimension=0,
                   data=np.random.randint(-127, 128, (4, 3, 3, 3)).astype(np.int8))
    b = TensorSpec((4,), "int32", scale=[5e-4, 1e-3, 1.5e-3, 2e-3], zero_point=[0] * 4,
                   data=np.zeros(4, np.int32))
    y = TensorSpec((1, 5, 5, 4), "int8", scale=0.1, zero_point=2)
    model = build_single_op_model(
        "CONV_2D", [x, w, b], [y],
        {"padding": "SAME", "stride_w": 1, "stride_h": 1,
         "fused_activation_function": "RELU6"})
    (out,) = run_tflite(model, [np.zeros((1, 5, 5, 3), np.int8)])            # BUILTIN_REF
    (out_x,) = run_tflite(model, [np.zeros((1, 5, 5, 3), np.int8)], reference=False)  # XNNPACK

Conventions:

- `op` is the TFLite builtin operator name ("CONV_2D", "ADD", "MEAN", ...).
- Inputs that carry `data` are constants (weights, bias, shape/axis operands);
  the others, in order, are the graph inputs.  `None` in an op's input list is
  an omitted optional input (index -1), e.g. TRANSPOSE_CONV without bias.
- `options` is a dict of the op's BuiltinOptions table fields in snake_case
  (the schema's names): {"padding": "SAME", "stride_w": 2, "keep_dims": True,
  "new_shape": [1, 6], ...}.  Enum fields take their schema names as strings
  ("SAME", "RELU6", ...).  Which table an op uses is looked up in
  `OPTIONS_TABLE` (falling back to CamelCase(op) + "Options"); unknown fields
  raise KeyError listing the valid ones.
- Multi-op graphs: `build_model(ops, tensors, inputs, outputs)` where each op
  is an `OpSpec(op, inputs=[tensor indices], outputs=[...], options={...})`
  or a tuple `(op, inputs, outputs[, options])`; -1 marks an omitted input.
- `run_tflite(model, inputs, reference=True)` uses
  `OpResolverType.BUILTIN_REF` (TFLite reference kernels); `reference=False`
  uses the default interpreter (XNNPACK attached where it takes the op).
  `delegate_partitions(model)` > 0 says XNNPACK took (some of) the ops.
- Known LiteRT 2.3 pitfall: DEPTHWISE_CONV_2D without a bias input segfaults
  on the default (XNNPACK) path; always give depthwise a bias there.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Sequence

import flatbuffers
import numpy as np

__all__ = [
    "TensorSpec",
    "OpSpec",
    "OPTIONS_TABLE",
    "build_model",
    "build_single_op_model",
    "run_tflite",
    "delegate_partitions",
    "activation_bounds",
]


def _mod(name: str):
    """The tflite schema module `tflite.<name>` (the package star-imports classes
    over the submodule names, so go through importlib)."""
    return importlib.import_module(f"tflite.{name}")


_BuiltinOperator = _mod("BuiltinOperator").BuiltinOperator
_BuiltinOptions = _mod("BuiltinOptions").BuiltinOptions
_TensorType = _mod("TensorType").TensorType
_Padding = _mod("Padding").Padding
_Activation = _mod("ActivationFunctionType").ActivationFunctionType

_DTYPES: dict[str, tuple[int, np.dtype]] = {
    "float32": (_TensorType.FLOAT32, np.dtype(np.float32)),
    "float16": (_TensorType.FLOAT16, np.dtype(np.float16)),
    "int32": (_TensorType.INT32, np.dtype(np.int32)),
    "uint8": (_TensorType.UINT8, np.dtype(np.uint8)),
    "int64": (_TensorType.INT64, np.dtype(np.int64)),
    "bool": (_TensorType.BOOL, np.dtype(np.bool_)),
    "int16": (_TensorType.INT16, np.dtype(np.int16)),
    "int8": (_TensorType.INT8, np.dtype(np.int8)),
    "uint16": (_TensorType.UINT16, np.dtype(np.uint16)),
    "uint32": (_TensorType.UINT32, np.dtype(np.uint32)),
}

# Ops whose options table is not CamelCase(op) + "Options".
OPTIONS_TABLE: dict[str, str | None] = {
    "CONV_2D": "Conv2DOptions",
    "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions",
    "TRANSPOSE_CONV": "TransposeConvOptions",
    "FULLY_CONNECTED": "FullyConnectedOptions",
    "BATCH_MATMUL": "BatchMatMulOptions",
    "AVERAGE_POOL_2D": "Pool2DOptions",
    "MAX_POOL_2D": "Pool2DOptions",
    "L2_POOL_2D": "Pool2DOptions",
    "MEAN": "ReducerOptions",
    "SUM": "ReducerOptions",
    "REDUCE_MAX": "ReducerOptions",
    "REDUCE_MIN": "ReducerOptions",
    "REDUCE_PROD": "ReducerOptions",
    "REDUCE_ANY": "ReducerOptions",
    "REDUCE_ALL": "ReducerOptions",
    "MAXIMUM": "MaximumMinimumOptions",
    "MINIMUM": "MaximumMinimumOptions",
    "PADV2": "PadV2Options",
    "SPLIT_V": "SplitVOptions",
    "SPACE_TO_BATCH_ND": "SpaceToBatchNDOptions",
    "BATCH_TO_SPACE_ND": "BatchToSpaceNDOptions",
    "LOG_SOFTMAX": "LogSoftmaxOptions",
    "SELECT_V2": "SelectV2Options",
    "GATHER_ND": "GatherNdOptions",
    "TOPK_V2": "TopKV2Options",
    "ARG_MAX": "ArgMaxOptions",
    "ARG_MIN": "ArgMinOptions",
    "REVERSE_V2": "ReverseV2Options",
    "UNIDIRECTIONAL_SEQUENCE_LSTM": "UnidirectionalSequenceLSTMOptions",
    # ops with no options table
    "LOGISTIC": None,
    "TANH": None,
    "RELU": None,
    "RELU6": None,
    "RELU_N1_TO_1": None,
    "RELU_0_TO_1": None,
    "PRELU": None,
    "ELU": None,
    "FLOOR": None,
}

# Enum-valued fields: field name -> enum class (strings are looked up by name).
_ENUM_FIELDS: dict[str, Any] = {
    "padding": _Padding,
    "fused_activation_function": _Activation,
    "quantized_bias_type": _TensorType,
    "in_data_type": _TensorType,
    "out_data_type": _TensorType,
    "output_type": _TensorType,
    "idx_out_type": _TensorType,
    "weights_format": _mod("FullyConnectedOptionsWeightsFormat").FullyConnectedOptionsWeightsFormat,
    "mode": _mod("MirrorPadMode").MirrorPadMode,
}


@dataclass
class TensorSpec:
    """One tensor of the model.

    dtype: "int8", "uint8", "int16", "int32", "float32", "int64" (also
    "float16", "bool", "uint16", "uint32").  scale/zero_point: per-tensor
    numbers or per-axis lists (along `quantized_dimension`); None = not
    quantized.  data: the contents of a constant tensor (converted to dtype).
    """

    shape: tuple[int, ...]
    dtype: str
    scale: float | list[float] | None = None
    zero_point: int | list[int] | None = None
    quantized_dimension: int = 0
    data: np.ndarray | None = None
    name: str = ""
    signature: tuple[int, ...] | None = None  # shape_signature (-1: sized by LiteRT at allocation)


@dataclass
class OpSpec:
    """One operator of a multi-op graph: tensor indices in/out (-1 = omitted)."""

    op: str
    inputs: list[int]
    outputs: list[int]
    options: dict | None = None
    version: int = 1


def _camel(name: str) -> str:
    if "_" not in name and name[:1].isupper():
        return name
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def _opcode(op: str) -> int:
    try:
        return getattr(_BuiltinOperator, op)
    except AttributeError:
        raise KeyError(f"unknown TFLite builtin operator {op!r}") from None


def _options_table_name(op: str) -> str | None:
    if op in OPTIONS_TABLE:
        return OPTIONS_TABLE[op]
    guess = _camel(op.lower()) + "Options"
    return guess if hasattr(_BuiltinOptions, guess) else None


def _byte_vector(builder: flatbuffers.Builder, raw: bytes, alignment: int = 16) -> int:
    builder.StartVector(1, len(raw), alignment)
    builder.head = builder.head - len(raw)
    builder.Bytes[builder.head : builder.head + len(raw)] = raw
    return builder.EndVector()


def _scalar_vector(builder, values, kind: str) -> int:
    values = list(values)
    size = {"int32": 4, "int64": 8, "float32": 4, "uint8": 1}[kind]
    builder.StartVector(size, len(values), size)
    prepend = {
        "int32": builder.PrependInt32,
        "int64": builder.PrependInt64,
        "float32": builder.PrependFloat32,
        "uint8": builder.PrependUint8,
    }[kind]
    for v in reversed(values):
        prepend(v)
    return builder.EndVector()


def _build_options(builder, op: str, options: dict | None) -> tuple[int, int]:
    """Return (BuiltinOptions type, table offset) for `op`; (0, 0) if it has none."""
    table = _options_table_name(op)
    options = dict(options or {})
    if table is None:
        if options:
            raise KeyError(f"{op} has no options table, got {sorted(options)}")
        return 0, 0
    module = _mod(table)
    adders = {
        n[len(table) + 3 :]: getattr(module, n)
        for n in dir(module)
        if n.startswith(table + "Add")
    }
    # Vectors (e.g. new_shape, squeeze_dims) must be built before the table.
    prepared: list[tuple[Any, Any]] = []
    for key, value in options.items():
        camel = _camel(key)
        if camel not in adders:
            raise KeyError(
                f"{table} has no field {key!r}; fields: "
                + ", ".join(sorted(adders))
            )
        if hasattr(module, f"{table}Start{camel}Vector"):
            value = _scalar_vector(builder, [int(v) for v in value], "int32")
        elif isinstance(value, str):
            enum = _ENUM_FIELDS.get(key) or _ENUM_FIELDS.get(
                "".join("_" + c.lower() if c.isupper() else c for c in key).lstrip("_")
            )
            if enum is None or not hasattr(enum, value):
                raise KeyError(f"{table}.{key}: cannot interpret {value!r}")
            value = getattr(enum, value)
        elif isinstance(value, (bool, np.bool_)):
            value = bool(value)
        elif isinstance(value, (np.integer,)):
            value = int(value)
        elif isinstance(value, (np.floating,)):
            value = float(value)
        prepared.append((adders[camel], value))
    getattr(module, f"{table}Start")(builder)
    for adder, value in prepared:
        adder(builder, value)
    return getattr(_BuiltinOptions, table), getattr(module, f"{table}End")(builder)


def _build_quant(builder, spec: TensorSpec) -> int | None:
    if spec.scale is None:
        return None
    scales = np.atleast_1d(np.asarray(spec.scale, dtype=np.float32)).tolist()
    zps = spec.zero_point if spec.zero_point is not None else 0
    zps = np.atleast_1d(np.asarray(zps, dtype=np.int64))
    if zps.size == 1 and len(scales) > 1:
        zps = np.repeat(zps, len(scales))
    scale_vec = _scalar_vector(builder, scales, "float32")
    zp_vec = _scalar_vector(builder, zps.tolist(), "int64")
    qp = _mod("QuantizationParameters")
    qp.QuantizationParametersStart(builder)
    qp.QuantizationParametersAddScale(builder, scale_vec)
    qp.QuantizationParametersAddZeroPoint(builder, zp_vec)
    qp.QuantizationParametersAddQuantizedDimension(builder, int(spec.quantized_dimension))
    return qp.QuantizationParametersEnd(builder)


def _as_opspec(op) -> OpSpec:
    if isinstance(op, OpSpec):
        return op
    if isinstance(op, dict):
        return OpSpec(**op)
    return OpSpec(*op)


def build_model(
    ops: Sequence[OpSpec | tuple],
    tensors: Sequence[TensorSpec],
    inputs: Sequence[int],
    outputs: Sequence[int],
) -> bytes:
    """Serialize a one-subgraph TFLite model.

    ops: OpSpec or (op, inputs, outputs[, options[, version]]) tuples, in
    execution order; tensors: all tensors (constants carry `data`);
    inputs/outputs: the graph's input and output tensor indices.
    """
    ops = [_as_opspec(o) for o in ops]
    b = flatbuffers.Builder(1024)

    # Buffers: 0 is the empty sentinel; one per constant tensor.
    buffer_data: list[bytes | None] = [None]
    tensor_buffer: list[int] = []
    for t in tensors:
        if t.data is None:
            tensor_buffer.append(0)
            continue
        _, np_dtype = _DTYPES[t.dtype]
        arr = np.asarray(t.data)
        if tuple(arr.shape) != tuple(t.shape) and arr.size == int(np.prod(t.shape, dtype=np.int64)):
            arr = arr.reshape(t.shape)
        if tuple(arr.shape) != tuple(t.shape):
            raise ValueError(f"tensor {t.name!r}: data shape {arr.shape} != {t.shape}")
        if arr.dtype != np_dtype:
            if np.issubdtype(np_dtype, np.integer) and np.issubdtype(arr.dtype, np.integer):
                info = np.iinfo(np_dtype)
                if arr.size and (arr.min() < info.min or arr.max() > info.max):
                    raise ValueError(f"tensor {t.name!r}: data out of {t.dtype} range")
            arr = arr.astype(np_dtype)
        tensor_buffer.append(len(buffer_data))
        buffer_data.append(np.ascontiguousarray(arr).tobytes())

    buf_mod = _mod("Buffer")
    buffer_offsets = []
    for raw in buffer_data:
        vec = _byte_vector(b, raw) if raw else None
        buf_mod.BufferStart(b)
        if vec is not None:
            buf_mod.BufferAddData(b, vec)
        buffer_offsets.append(buf_mod.BufferEnd(b))

    ten_mod = _mod("Tensor")
    tensor_offsets = []
    for i, t in enumerate(tensors):
        if t.dtype not in _DTYPES:
            raise KeyError(f"unsupported dtype {t.dtype!r}")
        name = b.CreateString(t.name or f"t{i}")
        shape = _scalar_vector(b, [int(d) for d in t.shape], "int32")
        quant = _build_quant(b, t)
        signature = None if t.signature is None else _scalar_vector(b, [int(d) for d in t.signature], "int32")
        ten_mod.TensorStart(b)
        ten_mod.TensorAddShape(b, shape)
        if signature is not None:
            ten_mod.TensorAddShapeSignature(b, signature)
        ten_mod.TensorAddType(b, _DTYPES[t.dtype][0])
        ten_mod.TensorAddBuffer(b, tensor_buffer[i])
        ten_mod.TensorAddName(b, name)
        if quant is not None:
            ten_mod.TensorAddQuantization(b, quant)
        tensor_offsets.append(ten_mod.TensorEnd(b))

    # Operator codes, deduplicated by (op, version).
    code_index: dict[tuple[str, int], int] = {}
    for o in ops:
        code_index.setdefault((o.op, o.version), len(code_index))
    oc_mod = _mod("OperatorCode")
    code_offsets = []
    for (name, version) in code_index:
        code = _opcode(name)
        oc_mod.OperatorCodeStart(b)
        oc_mod.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        oc_mod.OperatorCodeAddBuiltinCode(b, code)
        oc_mod.OperatorCodeAddVersion(b, version)
        code_offsets.append(oc_mod.OperatorCodeEnd(b))

    op_mod = _mod("Operator")
    op_offsets = []
    for o in ops:
        ins = _scalar_vector(b, [int(i) for i in o.inputs], "int32")
        outs = _scalar_vector(b, [int(i) for i in o.outputs], "int32")
        opt_type, opt = _build_options(b, o.op, o.options)
        op_mod.OperatorStart(b)
        op_mod.OperatorAddOpcodeIndex(b, code_index[(o.op, o.version)])
        op_mod.OperatorAddInputs(b, ins)
        op_mod.OperatorAddOutputs(b, outs)
        if opt_type:
            op_mod.OperatorAddBuiltinOptionsType(b, opt_type)
            op_mod.OperatorAddBuiltinOptions(b, opt)
        op_offsets.append(op_mod.OperatorEnd(b))

    def offsets_vector(offs):
        b.StartVector(4, len(offs), 4)
        for off in reversed(offs):
            b.PrependUOffsetTRelative(off)
        return b.EndVector()

    sg_mod = _mod("SubGraph")
    tensors_vec = offsets_vector(tensor_offsets)
    ops_vec = offsets_vector(op_offsets)
    in_vec = _scalar_vector(b, [int(i) for i in inputs], "int32")
    out_vec = _scalar_vector(b, [int(i) for i in outputs], "int32")
    sg_name = b.CreateString("main")
    sg_mod.SubGraphStart(b)
    sg_mod.SubGraphAddTensors(b, tensors_vec)
    sg_mod.SubGraphAddInputs(b, in_vec)
    sg_mod.SubGraphAddOutputs(b, out_vec)
    sg_mod.SubGraphAddOperators(b, ops_vec)
    sg_mod.SubGraphAddName(b, sg_name)
    subgraph = sg_mod.SubGraphEnd(b)

    model_mod = _mod("Model")
    codes_vec = offsets_vector(code_offsets)
    subgraphs_vec = offsets_vector([subgraph])
    buffers_vec = offsets_vector(buffer_offsets)
    desc = b.CreateString("qdialect test model")
    model_mod.ModelStart(b)
    model_mod.ModelAddVersion(b, 3)
    model_mod.ModelAddOperatorCodes(b, codes_vec)
    model_mod.ModelAddSubgraphs(b, subgraphs_vec)
    model_mod.ModelAddDescription(b, desc)
    model_mod.ModelAddBuffers(b, buffers_vec)
    model = model_mod.ModelEnd(b)
    b.Finish(model, file_identifier=b"TFL3")
    return bytes(b.Output())


def build_single_op_model(
    op: str,
    inputs: list[TensorSpec | None],
    outputs: list[TensorSpec],
    options: dict | None = None,
) -> bytes:
    """A model with one operator `op`.  Inputs without `data` become the graph
    inputs (in order); `None` entries are omitted optional inputs (index -1;
    trailing ones are dropped, since several kernels count their inputs)."""
    inputs = list(inputs)
    while inputs and inputs[-1] is None:
        inputs.pop()
    tensors: list[TensorSpec] = []
    op_inputs: list[int] = []
    graph_inputs: list[int] = []
    for spec in inputs:
        if spec is None:
            op_inputs.append(-1)
            continue
        op_inputs.append(len(tensors))
        if spec.data is None:
            graph_inputs.append(len(tensors))
        tensors.append(spec)
    op_outputs = []
    for spec in outputs:
        op_outputs.append(len(tensors))
        tensors.append(spec)
    return build_model(
        [OpSpec(op, op_inputs, op_outputs, options)], tensors, graph_inputs, op_outputs
    )


def _interpreter(model: bytes, reference: bool, num_threads: int):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    resolver = OpResolverType.BUILTIN_REF if reference else OpResolverType.AUTO
    return Interpreter(
        model_content=model,
        experimental_op_resolver_type=resolver,
        num_threads=num_threads,
    )


def run_tflite(
    model: bytes,
    inputs: list[np.ndarray],
    reference: bool = True,
    num_threads: int = 1,
) -> list[np.ndarray]:
    """Run `model` on `inputs` (graph-input order); return the outputs (copies).

    reference=True: TFLite reference kernels (OpResolverType.BUILTIN_REF).
    reference=False: the default interpreter (XNNPACK where it takes the op,
    TFLite's optimized kernels elsewhere).
    """
    interp = _interpreter(model, reference, num_threads)
    details = interp.get_input_details()
    if len(details) != len(inputs):
        raise ValueError(f"model has {len(details)} inputs, got {len(inputs)}")
    for d, x in zip(details, inputs):
        x = np.asarray(x)
        if tuple(d["shape"]) != x.shape:
            interp.resize_tensor_input(d["index"], list(x.shape))
    interp.allocate_tensors()
    for d, x in zip(details, inputs):
        interp.set_tensor(d["index"], np.asarray(x, dtype=d["dtype"]))
    interp.invoke()
    return [np.array(interp.get_tensor(d["index"])) for d in interp.get_output_details()]


def delegate_partitions(model: bytes, num_threads: int = 1) -> int:
    """How many delegate (XNNPACK) partitions the default interpreter created for
    `model`; 0 means every op runs on TFLite's optimized kernels.  For a
    one-op model, > 0 means XNNPACK took the op."""
    interp = _interpreter(model, False, num_threads)
    interp.allocate_tensors()
    ops = interp._get_ops_details()  # noqa: SLF001 - only way to see delegation
    return sum(1 for o in ops if o.get("op_name") == "DELEGATE")


def activation_bounds(
    activation: str, scale: float, zero_point: int, dtype: str = "int8"
) -> tuple[int, int]:
    """TFLite CalculateActivationRangeQuantized: `zp + round_half_away(f / scale)`
    intersected with the storage range (float32 division as in the kernel)."""
    info = np.iinfo(_DTYPES[dtype][1])
    lo, hi = int(info.min), int(info.max)

    def q(f: float) -> int:
        v = np.float32(f) / np.float32(scale)
        r = float(np.sign(v) * np.floor(abs(float(v)) + 0.5))
        return int(zero_point + r)

    if activation == "NONE":
        return lo, hi
    if activation == "RELU":
        return max(lo, q(0.0)), hi
    if activation == "RELU6":
        return max(lo, q(0.0)), min(hi, q(6.0))
    if activation == "RELU_N1_TO_1":
        return max(lo, q(-1.0)), min(hi, q(1.0))
    if activation == "RELU_0_TO_1":
        return max(lo, q(0.0)), min(hi, q(1.0))
    raise KeyError(f"unknown fused activation {activation!r}")
