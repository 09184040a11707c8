"""The `nn` dialect: float tensor ops (layer L0), the counterparts of the qnn ops.

An `nn` op computes on real numbers.  Between `quant.dcast` and `quant.qcast`
it spells fake quantization (`qnn-lower-to-float` writes it, `qnn-raise`
reads it back into qnn ops); on its own it is a float graph (the float TFLite
import of issue 7).  Names, operands, layouts and attributes are the qnn
op's wherever they mean something for real numbers:

    %y = nn.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 0, 1, 0, 1>,
                               act_min = 0.0 : f64, act_max = 6.0 : f64}
           : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>

- Layouts are TFLite's: NHWC activations, conv weights OHWI, depthwise
  weights 1HW(C*multiplier), fully connected weights [out, in].  The bias of
  conv2d / depthwise_conv2d / fully_connected is optional.
- `act_min` / `act_max` (f64) are a fused clamp in *real* numbers (TFLite's
  float fused activations: relu = [0, +inf), relu6 = [0, 6]); absent = no
  bound.  The qnn op's `act_min` / `act_max` are the same clamp in the
  storage domain.
- `padding` is explicit [top, bottom, left, right]; `pad_value` of nn.pad
  is a real number (default 0.0).
- Attributes named `qnn.<knob>` (`qnn.rounding`, `qnn.bias`, `qnn.acc`,
  `qnn.acc_overflow`) mean nothing in float; they record how the integer
  op they came from computes, and `qnn-raise` puts them back.  The unit
  attribute `qnn.requantize` on nn.clip says the clamp came from a
  qnn.requantize (not a qnn.clamp).

Element types.  Arithmetic ops take float tensors (f16, bf16, f32, f64), all
operands and the result of one element type.  Ops whose result is one of the
input values (max_pool2d, maximum, minimum, reduce_max, reduce_min, relu,
clip, concatenation, pad, reshape, transpose, slice) also take integer or
quantized tensors, unchanged element type throughout: on a quantized tensor
they act on the real values, which for these order-preserving ops is the same
as acting on the stored integers (a real bound of clip/relu maps to the
storage domain as TFLite's relu does, `zp + roundf(bound / scale)`; pad's
real `pad_value` likewise, so the default pads with the zero point).  This is
how frontends spell the ops that "need nothing" on quantized data.
avg_pool2d, mean and sum also take integer tensors (the stored values of
the cast -> avg_pool -> cast and cast -> mean -> requantize spellings): the
integer result is the average rounded half away from zero, TFLite's
integer AveragePool rounding.

`nn.cast` converts element types (same shape): integer <-> integer
(saturating), integer <-> float (float -> integer truncates toward zero and
saturates, NaN to the maximum: TFLite CAST), float <-> float, quantized -> integer (its stored values) and
integer -> quantized (stored values saturated to the storage range).
Quantized <-> float is `quant.dcast` / `quant.qcast`, not a cast.

Booleans (attention and padding masks, issue 22).  `i1` is a boolean: false 0,
true 1.  Casting to i1 is `x != 0` (TFLite CAST, MLIR's `arith.cmpi ne` /
`arith.cmpf une`), casting from i1 gives 0 or 1 (`arith.extui` / `uitofp`).
`nn.compare {predicate}` (eq, ne, lt, le, gt, ge; float or integer operands of
one type, broadcasting) gives i1; `nn.logical_and` / `nn.logical_or` /
`nn.logical_not` take and give i1; `nn.select %cond, %a, %b` (i1 condition,
a / b / result of one element type of any class, numpy broadcasting of all
three: TFLite SELECT_V2) picks values without arithmetic.  nn.add / sub / mul
also take integer tensors (i32 index arithmetic, e.g. Keras' negative-index
wrap of an embedding lookup): two's-complement results that wrap, as TFLite's
int32 kernels compute them; a fused act_min / act_max stays float-only.

`nn.constant` holds a dense float (or integer) tensor as raw little-endian
bytes, printed in hex like `qnn.constant`:

    %w = nn.constant dense<"0x0000803F00000040"> : tensor<2xf32>
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, traits_def, var_operand_def, var_result_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from qdialect.dialects.qnn import (
    BOOL,
    FLOAT,
    INT,
    INTS,
    STR,
    _KIND_SPELLING,
    _read_attr,
    broadcast_shape,
    conv_output_size,
    make_attr,
    window_attr,
    shape_of,
)
from qdialect.dialects.quant import UniformQuantizedType, quantized_tensor_problems
from qdialect.qparams import ACC_WIDTHS, BIAS_MODES, ROUNDING_PROFILES

FLOAT_TYPES = (Float16Type, BFloat16Type, Float32Type, Float64Type)

HINTS = {
    "qnn.rounding": (STR, ROUNDING_PROFILES),
    "qnn.bias": (STR, BIAS_MODES),
    "qnn.acc": (STR, ACC_WIDTHS),
    "qnn.acc_overflow": (STR, ("wrap", "saturate")),
}
"""Integer-path details carried through the float form (see the module docstring)."""

ACT = {"act_min": (FLOAT, None), "act_max": (FLOAT, None)}

# Element-type classes an op accepts.
FLOAT_ONLY, NUMERIC, ANY = "float", "numeric", "any"
_CLASS_SPELLING = {
    FLOAT_ONLY: "a float type",
    NUMERIC: "a float or integer type",
    ANY: "a float, integer or quantized type",
}


def element_of(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, TensorType) else t


def is_float(el: Attribute) -> bool:
    return isinstance(el, FLOAT_TYPES)


def is_integer(el: Attribute) -> bool:
    return isinstance(el, IntegerType)


def is_quantized(el: Attribute) -> bool:
    return isinstance(el, UniformQuantizedType)


def _fits(el: Attribute, cls: str) -> bool:
    if cls == FLOAT_ONLY:
        return is_float(el)
    if cls == NUMERIC:
        return is_float(el) or is_integer(el)
    return is_float(el) or is_integer(el) or is_quantized(el)


# ----- base op -----------------------------------------------------------------------


class NnOp(IRDLOperation):
    """Common syntax and checks of nn ops.

    Subclasses declare `ATTRS` (name -> (kind, allowed values or None)),
    `REQUIRED` attribute names, `OPERAND_NAMES`, the operand count (`N_OPERANDS`:
    an int, a tuple of allowed counts, or None for any) and `ELEMENTS`, the
    element-type class all operands and the result share.
    """

    ATTRS: ClassVar[dict] = {}
    REQUIRED: ClassVar[tuple[str, ...]] = ()
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    N_OPERANDS: ClassVar[int | tuple[int, ...] | None] = 1
    ELEMENTS: ClassVar[str] = FLOAT_ONLY

    operand_list = var_operand_def()
    result_list = var_result_def()
    traits = traits_def(Pure())

    def __init__(
        self,
        operands: Sequence[SSAValue | Operation],
        result_type: Attribute,
        attributes: dict[str, object] | None = None,
    ):
        attrs: dict[str, Attribute] = {}
        for key, value in (attributes or {}).items():
            if value is None:
                continue
            if isinstance(value, Attribute):
                attrs[key] = value
            elif key in self.ATTRS:
                attrs[key] = make_attr(self.ATTRS[key][0], value)
            elif key in HINTS:
                attrs[key] = make_attr(HINTS[key][0], value)
            else:
                raise VerifyException(f"{self.name}: unknown attribute '{key}'")
        super().__init__(operands=[list(operands)], result_types=[[result_type]], attributes=attrs)

    # -- syntax (the qnn ops' generic form) --
    @classmethod
    def parse(cls, parser: Parser):
        pos = parser.pos
        operands = (
            parser.parse_optional_undelimited_comma_separated_list(
                parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand
            )
            or []
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ftype = parser.parse_function_type()
        inputs = ftype.inputs.data
        if len(inputs) != len(operands):
            parser.raise_error(f"{cls.name}: {len(operands)} operands but {len(inputs)} operand types", pos)
        resolved = parser.resolve_operands(operands, inputs, pos)
        return cls.create(operands=list(resolved), result_types=list(ftype.outputs.data), attributes=attrs)

    def print(self, printer: Printer):
        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_ssa_value)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type([o.type for o in self.operands], [r.type for r in self.results])

    # -- access --
    @property
    def result(self) -> SSAValue:
        return self.results[0]

    def attr(self, name: str, default=None):
        if name not in self.attributes:
            return default
        kind = (self.ATTRS.get(name) or HINTS[name])[0]
        return _read_attr(self.attributes[name], kind)

    def hints(self) -> dict[str, Attribute]:
        """The `qnn.<knob>` attributes, keyed by knob name."""
        return {k[4:]: v for k, v in self.attributes.items() if k in HINTS}

    def act_bounds(self) -> tuple[float | None, float | None]:
        """The fused real clamp (None: unbounded)."""
        return self.attr("act_min", None), self.attr("act_max", None)

    def operand_name(self, i: int) -> str:
        if i < len(self.OPERAND_NAMES):
            return f"operand {i} ({self.OPERAND_NAMES[i]})"
        return f"operand {i}"

    def fail(self, message: str):
        raise VerifyException(f"{self.name}: {message}")

    # -- verification --
    def verify_(self) -> None:
        n = self.N_OPERANDS
        if isinstance(n, int) and len(self.operands) != n:
            self.fail(f"expects {n} operands, got {len(self.operands)}")
        if isinstance(n, tuple) and len(self.operands) not in n:
            self.fail(f"expects {' or '.join(map(str, n))} operands, got {len(self.operands)}")
        if len(self.results) != 1:
            self.fail(f"expects 1 result, got {len(self.results)}")
        for name, attr in self.attributes.items():
            spec = self.ATTRS.get(name) or HINTS.get(name)
            if spec is None:
                if name == "qnn.requantize" and isinstance(attr, UnitAttr):
                    continue
                self.fail(f"unknown attribute '{name}'")
            kind, allowed = spec
            try:
                value = _read_attr(attr, kind)
            except TypeError:
                self.fail(f"attribute '{name}' must be {_KIND_SPELLING[kind]}, got {attr}")
            if allowed is not None and value not in allowed:
                self.fail(f"attribute '{name}' is '{value}', expected one of {', '.join(allowed)}")
        for name in self.REQUIRED:
            if name not in self.attributes:
                self.fail(f"missing attribute '{name}'")
        for i, v in enumerate([*self.operands, *self.results]):
            if not isinstance(v.type, TensorType):
                what = self.operand_name(i) if i < len(self.operands) else "result"
                self.fail(f"{what} type {v.type} must be a ranked tensor")
            for p in quantized_tensor_problems(v.type):
                self.fail(p)
        lo, hi = self.act_bounds()
        if (lo is not None or hi is not None) and not is_float(element_of(self.results[0].type)):
            self.fail("act_min / act_max (a real clamp) need a float result")
        if lo is not None and hi is not None and lo > hi:
            self.fail(f"act_min {lo} is greater than act_max {hi}")
        self.verify_elements()
        self.verify_op()

    def verify_elements(self) -> None:
        """All operands and the result share one element type of the op's class."""
        el = element_of(self.result.type)
        if not _fits(el, self.ELEMENTS):
            self.fail(f"result element type {el} must be {_CLASS_SPELLING[self.ELEMENTS]}")
        for i, v in enumerate(self.operands):
            if element_of(v.type) != el:
                self.fail(f"{self.operand_name(i)} element type {element_of(v.type)} differs from the result's {el}")

    def verify_op(self) -> None:
        """Op-specific rules."""

    def require_rank(self, i: int, rank: int):
        s = shape_of(self.operands[i])
        if len(s) != rank:
            self.fail(f"{self.operand_name(i)} must have rank {rank}, got shape {list(s)}")

    def require_result_shape(self, expected: Sequence[int]):
        got = shape_of(self.result)
        if tuple(got) != tuple(expected):
            self.fail(f"result shape {list(got)} does not match the expected {list(expected)}")


# ----- constants and casts ---------------------------------------------------------------


def _container(el: Attribute) -> np.dtype:
    if isinstance(el, Float16Type):
        return np.dtype(np.float16)
    if isinstance(el, Float32Type):
        return np.dtype(np.float32)
    if isinstance(el, Float64Type):
        return np.dtype(np.float64)
    if isinstance(el, IntegerType):
        w = el.width.data
        return np.dtype(f"int{8 if w <= 8 else 16 if w <= 16 else 32 if w <= 32 else 64}")
    raise VerifyException(f"nn.constant: element type {el} is not f16, f32, f64 or an integer type")


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A dense float (or integer) tensor stored as raw little-endian bytes.

    `%w = nn.constant dense<"0x0000803F"> : tensor<1xf32>`; the hex string is
    the numpy container's bytes (f16: 2, f32: 4, f64: 8 bytes per element;
    integers as in qnn.constant).  Weights never travel as decimal lists.
    """

    name = "nn.constant"
    result_list = var_result_def()
    traits = traits_def(Pure(), ConstantLike())

    def __init__(self, value: np.ndarray, result_type: TensorType):
        arr = np.ascontiguousarray(np.asarray(value).astype(_container(result_type.element_type)))
        super().__init__(result_types=[[result_type]], attributes={"value": _dense(arr.tobytes(), result_type)})

    @staticmethod
    def from_array(value: np.ndarray, element: Attribute | None = None) -> "ConstantOp":
        arr = np.asarray(value)
        el = element or (Float32Type() if arr.dtype.kind == "f" else IntegerType(8 * arr.dtype.itemsize))
        return ConstantOp(arr, TensorType(el, list(arr.shape)))

    @property
    def result(self) -> SSAValue:
        return self.results[0]

    def array(self) -> np.ndarray:
        t = self.results[0].type
        dtype = _container(t.element_type)
        return np.frombuffer(self.attributes["value"].data.data, dtype=dtype).reshape(t.get_shape())

    def verify_(self) -> None:
        if len(self.results) != 1:
            raise VerifyException("nn.constant: expects one result")
        t = self.results[0].type
        if not isinstance(t, TensorType):
            raise VerifyException(f"nn.constant: result type {t} must be a ranked tensor")
        dtype = _container(t.element_type)
        value = self.attributes.get("value")
        if not isinstance(value, DenseIntOrFPElementsAttr):
            raise VerifyException("nn.constant: missing dense 'value'")
        n = math.prod(t.get_shape())
        if len(value.data.data) != n * dtype.itemsize:
            raise VerifyException(
                f"nn.constant: {len(value.data.data)} bytes of data but {t} needs {n * dtype.itemsize}"
            )

    @classmethod
    def parse(cls, parser: Parser):
        parser.parse_keyword("dense")
        parser.parse_punctuation("<")
        pos = parser.pos
        text = parser.parse_str_literal()
        parser.parse_punctuation(">")
        if not text.startswith("0x") or len(text) % 2:
            parser.raise_error('nn.constant: expected a hex string "0x..."', pos)
        try:
            data = bytes.fromhex(text[2:])
        except ValueError:
            parser.raise_error("nn.constant: invalid hex digits in the constant", pos)
        parser.parse_punctuation(":")
        tpos = parser.pos
        t = parser.parse_type()
        if not isinstance(t, TensorType):
            parser.raise_error(f"nn.constant: result type {t} must be a ranked tensor", tpos)
        try:
            _container(t.element_type)
        except VerifyException as e:
            parser.raise_error(str(e), tpos)
        return cls.create(result_types=[t], attributes={"value": _dense(data, t)})

    def print(self, printer: Printer):
        printer.print_string(f' dense<"0x{self.attributes["value"].data.data.hex().upper()}"> : ')
        printer.print_attribute(self.results[0].type)


def _dense(data: bytes, t: TensorType) -> DenseIntOrFPElementsAttr:
    """Raw bytes as a dense attribute (integer container type for integers, the float type for floats)."""
    el = t.element_type
    container = el if not isinstance(el, IntegerType) else IntegerType(8 * _container(el).itemsize)
    if isinstance(el, BFloat16Type):
        container = IntegerType(16)
    return DenseIntOrFPElementsAttr(TensorType(container, t.get_shape()), BytesAttr(bytes(data)))


@irdl_op_definition
class CastOp(NnOp):
    """Element-type conversion, same shape (see the module docstring for the rules)."""

    name = "nn.cast"
    ELEMENTS: ClassVar = ANY

    def verify_elements(self):
        src, dst = element_of(self.operands[0].type), element_of(self.result.type)
        if shape_of(self.operands[0]) != shape_of(self.result):
            self.fail(f"operand shape {list(shape_of(self.operands[0]))} and result shape "
                      f"{list(shape_of(self.result))} differ")
        for el, what in ((src, "operand"), (dst, "result")):
            if not _fits(el, ANY):
                self.fail(f"{what} element type {el} must be {_CLASS_SPELLING[ANY]}")
        if (is_quantized(src) and not is_integer(dst)) or (is_quantized(dst) and not is_integer(src)):
            self.fail(f"cannot cast {src} to {dst}: quantized values convert to and from integers "
                      "(use quant.dcast / quant.qcast for floats)")


# ----- convolutions and matmuls ------------------------------------------------------------


CONV_ATTRS = {"strides": (INTS, None), "dilations": (INTS, None), "padding": (INTS, None), **ACT}


class _WeightedOp(NnOp):
    OPERAND_NAMES: ClassVar = ("input", "weights", "bias")
    N_OPERANDS: ClassVar = (2, 3)

    def check_bias(self, channels: int):
        if len(self.operands) == 3 and tuple(shape_of(self.operands[2])) != (channels,):
            self.fail(f"operand 2 (bias) shape {list(shape_of(self.operands[2]))} must be [{channels}]")

    def conv_result_shape(self, n, h, w, kh, kw, o):
        sh, sw = window_attr(self, "strides")
        dh, dw = window_attr(self, "dilations")
        pt, pb, pl, pr = window_attr(self, "padding")
        return [n, conv_output_size(h, kh, sh, dh, pt, pb), conv_output_size(w, kw, sw, dw, pl, pr), o]


@irdl_op_definition
class Conv2DOp(_WeightedOp):
    """2-D convolution: NHWC input, OHWI weights, optional bias, fused real clamp."""

    name = "nn.conv2d"
    ATTRS: ClassVar = CONV_ATTRS

    def verify_op(self):
        self.require_rank(0, 4)
        self.require_rank(1, 4)
        n, h, w, c = shape_of(self.operands[0])
        o, kh, kw, ci = shape_of(self.operands[1])
        if ci != c:
            self.fail(f"operand 1 (weights) has {ci} input channels but the input has {c}")
        self.check_bias(o)
        self.require_result_shape(self.conv_result_shape(n, h, w, kh, kw, o))


@irdl_op_definition
class DepthwiseConv2DOp(_WeightedOp):
    """Depthwise 2-D convolution: NHWC input, 1HW(C*multiplier) weights, optional bias."""

    name = "nn.depthwise_conv2d"
    ATTRS: ClassVar = CONV_ATTRS

    def verify_op(self):
        self.require_rank(0, 4)
        self.require_rank(1, 4)
        n, h, w, c = shape_of(self.operands[0])
        one, kh, kw, oc = shape_of(self.operands[1])
        if one != 1 or oc % c:
            self.fail(f"operand 1 (weights) shape {[one, kh, kw, oc]} must be [1, KH, KW, C*multiplier] with C={c}")
        self.check_bias(oc)
        self.require_result_shape(self.conv_result_shape(n, h, w, kh, kw, oc))


@irdl_op_definition
class FullyConnectedOp(_WeightedOp):
    """y = x @ W^T + b with W [out, in]; leading input dims flattened (or kept, as the result shape says)."""

    name = "nn.fully_connected"
    # ort_nbits: ONNX Runtime's MatMulNBits recipe (8-bit weights, accuracy level 4) for the
    # weights, a qnn.dequantize of constant integers (qdialect.reference.onnxruntime_nbits)
    ATTRS: ClassVar = {**ACT, "ort_nbits": (STR, ("avx512vnni",))}

    def verify_op(self):
        self.require_rank(1, 2)
        o, k = shape_of(self.operands[1])
        xs = shape_of(self.operands[0])
        if not xs or math.prod(xs) % k:
            self.fail(f"operand 0 (input) shape {list(xs)} is not a multiple of {k} input features")
        self.check_bias(o)
        rs = shape_of(self.result)
        if not rs or rs[-1] != o or math.prod(rs) != math.prod(xs) // k * o:
            self.fail(f"result shape {list(rs)} does not match {math.prod(xs) // k} rows of {o} outputs")


@irdl_op_definition
class BatchMatmulOp(NnOp):
    """Batched matrix product (adj_x / adj_y transpose the last two dims)."""

    name = "nn.batch_matmul"
    ATTRS: ClassVar = {"adj_x": (BOOL, None), "adj_y": (BOOL, None), **ACT}
    OPERAND_NAMES: ClassVar = ("lhs", "rhs")
    N_OPERANDS: ClassVar = 2

    def verify_op(self):
        a, b = shape_of(self.operands[0]), shape_of(self.operands[1])
        if len(a) < 2 or len(b) < 2:
            self.fail(f"operands must have rank >= 2, got {list(a)} and {list(b)}")
        m, ka = (a[-1], a[-2]) if self.attr("adj_x", False) else (a[-2], a[-1])
        kb, n = (b[-1], b[-2]) if self.attr("adj_y", False) else (b[-2], b[-1])
        if ka != kb:
            self.fail(f"contracting sizes differ: {ka} and {kb}")
        try:
            batch = broadcast_shape(a[:-2], b[:-2])
        except ValueError:
            self.fail(f"batch dims {list(a[:-2])} and {list(b[:-2])} do not broadcast")
        self.require_result_shape([*batch, m, n])


# ----- elementwise ---------------------------------------------------------------------


class _BinaryOp(NnOp):
    OPERAND_NAMES: ClassVar = ("lhs", "rhs")
    N_OPERANDS: ClassVar = 2
    ATTRS: ClassVar = dict(ACT)

    def verify_op(self):
        a, b = shape_of(self.operands[0]), shape_of(self.operands[1])
        try:
            out = broadcast_shape(a, b)
        except ValueError:
            self.fail(f"operand shapes {list(a)} and {list(b)} do not broadcast")
        self.require_result_shape(out)


@irdl_op_definition
class AddOp(_BinaryOp):
    """lhs + rhs, broadcasting; integers wrap."""

    name = "nn.add"
    ELEMENTS: ClassVar = NUMERIC


@irdl_op_definition
class SubOp(_BinaryOp):
    """lhs - rhs, broadcasting; integers wrap."""

    name = "nn.sub"
    ELEMENTS: ClassVar = NUMERIC


@irdl_op_definition
class MulOp(_BinaryOp):
    """lhs * rhs, broadcasting; integers wrap."""

    name = "nn.mul"
    ELEMENTS: ClassVar = NUMERIC


@irdl_op_definition
class DivOp(_BinaryOp):
    """lhs / rhs, broadcasting (IEEE division, as ONNX Div)."""

    name = "nn.div"


@irdl_op_definition
class SquaredDifferenceOp(_BinaryOp):
    """(lhs - rhs)^2, broadcasting."""

    name = "nn.squared_difference"


@irdl_op_definition
class MaximumOp(_BinaryOp):
    """max(lhs, rhs), broadcasting; also on integer and quantized tensors."""

    name = "nn.maximum"
    ELEMENTS: ClassVar = ANY


@irdl_op_definition
class MinimumOp(_BinaryOp):
    """min(lhs, rhs), broadcasting; also on integer and quantized tensors."""

    name = "nn.minimum"
    ELEMENTS: ClassVar = ANY


class _UnaryOp(NnOp):
    def verify_op(self):
        self.require_result_shape(shape_of(self.operands[0]))


@irdl_op_definition
class ReluOp(_UnaryOp):
    """max(x, 0); also on integer and quantized tensors (real 0 is the zero point)."""

    name = "nn.relu"
    ELEMENTS: ClassVar = ANY


@irdl_op_definition
class ClipOp(_UnaryOp):
    """clamp(x, min, max) with real bounds (either optional); relu6 is clip(0, 6)."""

    name = "nn.clip"
    ATTRS: ClassVar = {"min": (FLOAT, None), "max": (FLOAT, None)}
    ELEMENTS: ClassVar = ANY

    def verify_op(self):
        super().verify_op()
        lo, hi = self.attr("min"), self.attr("max")
        if lo is not None and hi is not None and lo > hi:
            self.fail(f"min {lo} is greater than max {hi}")


@irdl_op_definition
class LogisticOp(_UnaryOp):
    """1 / (1 + exp(-x))."""

    name = "nn.logistic"


@irdl_op_definition
class TanhOp(_UnaryOp):
    """tanh(x)."""

    name = "nn.tanh"


@irdl_op_definition
class SoftmaxOp(_UnaryOp):
    """softmax(beta * x) along the last axis."""

    name = "nn.softmax"
    ATTRS: ClassVar = {"beta": (FLOAT, None)}


@irdl_op_definition
class LogSoftmaxOp(_UnaryOp):
    """log(softmax(x)) along the last axis."""

    name = "nn.log_softmax"


@irdl_op_definition
class HardSwishOp(_UnaryOp):
    """x * relu6(x + 3) / 6."""

    name = "nn.hard_swish"


@irdl_op_definition
class LeakyReluOp(_UnaryOp):
    """x >= 0 ? x : alpha * x."""

    name = "nn.leaky_relu"
    ATTRS: ClassVar = {"alpha": (FLOAT, None)}
    REQUIRED: ClassVar = ("alpha",)


@irdl_op_definition
class EluOp(_UnaryOp):
    """x >= 0 ? x : exp(x) - 1."""

    name = "nn.elu"


@irdl_op_definition
class SqrtOp(_UnaryOp):
    """sqrt(x) (IEEE square root)."""

    name = "nn.sqrt"


@irdl_op_definition
class ErfOp(_UnaryOp):
    """The error function erf(x)."""

    name = "nn.erf"


@irdl_op_definition
class GeluOp(_UnaryOp):
    """gelu(x) = x * Phi(x); `approximate = true`: the tanh form (TFLite GELU)."""

    name = "nn.gelu"
    ATTRS: ClassVar = {"approximate": (BOOL, None)}


@irdl_op_definition
class RsqrtOp(_UnaryOp):
    """1 / sqrt(x) (TFLite RSQRT)."""

    name = "nn.rsqrt"


# ----- booleans and selection (masks) ------------------------------------------------------


I1 = IntegerType(1)
PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


def is_bool(el: Attribute) -> bool:
    return isinstance(el, IntegerType) and el.width.data == 1


@irdl_op_definition
class CompareOp(_BinaryOp):
    """lhs <predicate> rhs -> i1, broadcasting (float or integer operands of one type)."""

    name = "nn.compare"
    ATTRS: ClassVar = {"predicate": (STR, PREDICATES)}
    REQUIRED: ClassVar = ("predicate",)

    def verify_elements(self):
        a, b = element_of(self.operands[0].type), element_of(self.operands[1].type)
        if not _fits(a, NUMERIC):
            self.fail(f"operand 0 (lhs) element type {a} must be {_CLASS_SPELLING[NUMERIC]}")
        if a != b:
            self.fail(f"operand 1 (rhs) element type {b} differs from operand 0's {a}")
        if not is_bool(element_of(self.result.type)):
            self.fail(f"result element type {element_of(self.result.type)} must be i1")


class _LogicalOp(NnOp):
    """Operands and result i1."""

    def verify_elements(self):
        for i, v in enumerate([*self.operands, self.result]):
            if not is_bool(element_of(v.type)):
                what = self.operand_name(i) if i < len(self.operands) else "result"
                self.fail(f"{what} element type {element_of(v.type)} must be i1")


@irdl_op_definition
class LogicalAndOp(_LogicalOp, _BinaryOp):
    """lhs and rhs on i1, broadcasting."""

    name = "nn.logical_and"
    ATTRS: ClassVar = {}


@irdl_op_definition
class LogicalOrOp(_LogicalOp, _BinaryOp):
    """lhs or rhs on i1, broadcasting."""

    name = "nn.logical_or"
    ATTRS: ClassVar = {}


@irdl_op_definition
class LogicalNotOp(_LogicalOp, _UnaryOp):
    """not x on i1."""

    name = "nn.logical_not"


@irdl_op_definition
class SelectOp(NnOp):
    """cond ? a : b elementwise, numpy broadcasting of all three (TFLite SELECT_V2); the
    values are copied, so a / b / result may be of any element class, one type throughout."""

    name = "nn.select"
    OPERAND_NAMES: ClassVar = ("condition", "true_value", "false_value")
    N_OPERANDS: ClassVar = 3

    def verify_elements(self):
        c = element_of(self.operands[0].type)
        if not is_bool(c):
            self.fail(f"operand 0 (condition) element type {c} must be i1")
        el = element_of(self.result.type)
        if not _fits(el, ANY):
            self.fail(f"result element type {el} must be {_CLASS_SPELLING[ANY]}")
        for i in (1, 2):
            if element_of(self.operands[i].type) != el:
                self.fail(f"{self.operand_name(i)} element type {element_of(self.operands[i].type)} "
                          f"differs from the result's {el}")

    def verify_op(self):
        shapes = [shape_of(v) for v in self.operands]
        try:
            out = broadcast_shape(broadcast_shape(shapes[0], shapes[1]), shapes[2])
        except ValueError:
            self.fail(f"operand shapes {[list(s) for s in shapes]} do not broadcast")
        self.require_result_shape(out)


@irdl_op_definition
class LayerNormOp(NnOp):
    """(x - mean) / sqrt(var + epsilon) * scale + bias over the trailing axes from `axis`
    (ONNX LayerNormalization; `scale` and `bias` have the normalized axes' shape)."""

    name = "nn.layer_norm"
    OPERAND_NAMES: ClassVar = ("input", "scale", "bias")
    N_OPERANDS: ClassVar = (2, 3)
    ATTRS: ClassVar = {"axis": (INT, None), "epsilon": (FLOAT, None)}
    REQUIRED: ClassVar = ("axis", "epsilon")

    def verify_op(self):
        x = list(shape_of(self.operands[0]))
        axis = self.attr("axis")
        if not -len(x) <= axis < len(x):
            self.fail(f"axis {axis} is out of range for rank {len(x)}")
        norm = x[axis % len(x):]
        for i in range(1, len(self.operands)):
            s = list(shape_of(self.operands[i]))
            if s != norm and s != [math.prod(norm)]:
                self.fail(f"{self.operand_name(i)} shape {s} must be the normalized shape {norm}")
        self.require_result_shape(x)


# ----- pools and reductions -------------------------------------------------------------


class _PoolOp(NnOp):
    ATTRS: ClassVar = {"kernel": (INTS, None), "strides": (INTS, None), "padding": (INTS, None), **ACT}
    REQUIRED: ClassVar = ("kernel",)

    def verify_op(self):
        self.require_rank(0, 4)
        n, h, w, c = shape_of(self.operands[0])
        kh, kw = window_attr(self, "kernel")
        sh, sw = window_attr(self, "strides")
        pt, pb, pl, pr = window_attr(self, "padding")
        self.require_result_shape(
            [n, conv_output_size(h, kh, sh, 1, pt, pb), conv_output_size(w, kw, sw, 1, pl, pr), c]
        )


@irdl_op_definition
class AvgPool2DOp(_PoolOp):
    """Average over each window's in-bounds positions (padding not counted); integers round half away from zero."""

    name = "nn.avg_pool2d"
    ELEMENTS: ClassVar = NUMERIC


@irdl_op_definition
class MaxPool2DOp(_PoolOp):
    """Max over each window's in-bounds positions; also on integer and quantized tensors."""

    name = "nn.max_pool2d"
    ELEMENTS: ClassVar = ANY


class _ReduceOp(NnOp):
    ATTRS: ClassVar = {"axes": (INTS, None), "keep_dims": (BOOL, None), **ACT}
    REQUIRED: ClassVar = ("axes",)

    def reduced_shape(self) -> list[int]:
        s = list(shape_of(self.operands[0]))
        axes = {a % len(s) for a in self.attr("axes")} if s else set()
        if self.attr("keep_dims", False):
            return [1 if i in axes else d for i, d in enumerate(s)]
        return [d for i, d in enumerate(s) if i not in axes]

    def verify_op(self):
        rank = len(shape_of(self.operands[0]))
        for a in self.attr("axes"):
            if not -rank <= a < rank:
                self.fail(f"axis {a} is out of range for rank {rank}")
        self.require_result_shape(self.reduced_shape())


@irdl_op_definition
class MeanOp(_ReduceOp):
    """Mean over `axes`; on integers rounded half away from zero."""

    name = "nn.mean"
    ELEMENTS: ClassVar = NUMERIC


@irdl_op_definition
class SumOp(_ReduceOp):
    """Sum over `axes`."""

    name = "nn.sum"
    ELEMENTS: ClassVar = NUMERIC


@irdl_op_definition
class ReduceMaxOp(_ReduceOp):
    """Max over `axes`; also on integer and quantized tensors."""

    name = "nn.reduce_max"
    ELEMENTS: ClassVar = ANY


@irdl_op_definition
class ReduceMinOp(_ReduceOp):
    """Min over `axes`; also on integer and quantized tensors."""

    name = "nn.reduce_min"
    ELEMENTS: ClassVar = ANY


# ----- data movement ------------------------------------------------------------------------


@irdl_op_definition
class ConcatenationOp(NnOp):
    """Concatenate along `axis`."""

    name = "nn.concatenation"
    ATTRS: ClassVar = {"axis": (INT, None), **ACT}
    REQUIRED: ClassVar = ("axis",)
    N_OPERANDS: ClassVar = None
    ELEMENTS: ClassVar = ANY

    def verify_op(self):
        if not self.operands:
            self.fail("needs at least one operand")
        s0 = shape_of(self.operands[0])
        axis = self.attr("axis") % len(s0)
        total = 0
        for i, v in enumerate(self.operands):
            s = shape_of(v)
            if len(s) != len(s0) or any(s[d] != s0[d] for d in range(len(s0)) if d != axis):
                self.fail(f"operand {i} shape {list(s)} does not match {list(s0)} off axis {axis}")
            total += s[axis]
        self.require_result_shape([total if d == axis else s0[d] for d in range(len(s0))])


@irdl_op_definition
class PadOp(NnOp):
    """Pad with the real `pad_value` (default 0.0); `paddings` = [before_0, after_0, ...]."""

    name = "nn.pad"
    ATTRS: ClassVar = {"paddings": (INTS, None), "pad_value": (FLOAT, None)}
    REQUIRED: ClassVar = ("paddings",)
    ELEMENTS: ClassVar = ANY

    def verify_op(self):
        s = shape_of(self.operands[0])
        p = self.attr("paddings")
        if len(p) != 2 * len(s) or min(p, default=0) < 0:
            self.fail(f"paddings {p} must be 2 non-negative ints per dim of {list(s)}")
        self.require_result_shape([d + p[2 * i] + p[2 * i + 1] for i, d in enumerate(s)])


@irdl_op_definition
class ReshapeOp(NnOp):
    """Same values, new shape."""

    name = "nn.reshape"
    ELEMENTS: ClassVar = ANY

    def verify_op(self):
        a, r = shape_of(self.operands[0]), shape_of(self.result)
        if math.prod(a) != math.prod(r):
            self.fail(f"result shape {list(r)} has a different element count than {list(a)}")


@irdl_op_definition
class TransposeOp(NnOp):
    """Permute dimensions: result dim i is input dim perm[i]."""

    name = "nn.transpose"
    ATTRS: ClassVar = {"perm": (INTS, None)}
    REQUIRED: ClassVar = ("perm",)
    ELEMENTS: ClassVar = ANY

    def verify_op(self):
        s = shape_of(self.operands[0])
        perm = self.attr("perm")
        if sorted(perm) != list(range(len(s))):
            self.fail(f"perm {perm} is not a permutation of {len(s)} dims")
        self.require_result_shape([s[p] for p in perm])


@irdl_op_definition
class SliceOp(NnOp):
    """Strided slice with Python-range begin/end/strides per dim (as qnn.slice); size-1 dims may be dropped."""

    name = "nn.slice"
    ATTRS: ClassVar = {"begin": (INTS, None), "end": (INTS, None), "strides": (INTS, None)}
    REQUIRED: ClassVar = ("begin", "end")
    ELEMENTS: ClassVar = ANY

    def verify_op(self):
        s = shape_of(self.operands[0])
        begin, end = self.attr("begin"), self.attr("end")
        strides = self.attr("strides", [1] * len(s))
        if not len(begin) == len(end) == len(strides) == len(s):
            self.fail(f"begin/end/strides must have {len(s)} entries")
        if 0 in strides:
            self.fail("stride 0 in slice")
        full = [max(0, len(range(b, e, st))) for b, e, st in zip(begin, end, strides)]
        r = shape_of(self.result)
        if math.prod(full) != math.prod(r) or [d for d in full if d != 1] != [d for d in r if d != 1]:
            self.fail(f"result shape {list(r)} does not match the slice shape {full}")


NN_OPS = [
    ConstantOp,
    CastOp,
    Conv2DOp,
    DepthwiseConv2DOp,
    FullyConnectedOp,
    BatchMatmulOp,
    AddOp,
    SubOp,
    MulOp,
    DivOp,
    SquaredDifferenceOp,
    MaximumOp,
    MinimumOp,
    ReluOp,
    ClipOp,
    LogisticOp,
    TanhOp,
    SoftmaxOp,
    LogSoftmaxOp,
    HardSwishOp,
    LeakyReluOp,
    EluOp,
    SqrtOp,
    ErfOp,
    GeluOp,
    RsqrtOp,
    CompareOp,
    LogicalAndOp,
    LogicalOrOp,
    LogicalNotOp,
    SelectOp,
    LayerNormOp,
    AvgPool2DOp,
    MaxPool2DOp,
    MeanOp,
    SumOp,
    ReduceMaxOp,
    ReduceMinOp,
    ConcatenationOp,
    PadOp,
    ReshapeOp,
    TransposeOp,
    SliceOp,
]

NN = Dialect("nn", NN_OPS, [])

__all__ = [op.__name__ for op in NN_OPS] + ["NN", "NnOp", "HINTS"]
