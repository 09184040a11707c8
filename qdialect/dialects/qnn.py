"""The `qnn` dialect: one canonical op per quantized operation.

Every compute op takes and returns `!quant.uniform` tensors; the types say
everything about scales and zero points.  A fused op is one op: `qnn.conv2d`
with bias, requantization and a fused activation is a single int8 -> int8 op.
Implementation details are attributes ("knobs"), not graph shapes:

| knob        | values                                               | default       |
|-------------|------------------------------------------------------|---------------|
| rounding    | tflite, single, half_even, half_up, litert           | tflite        |
| bias        | accumulator, output                                  | accumulator   |
| acc         | i32, i16, i64 (with acc_overflow = wrap | saturate)  | i32 (i64 for 16-bit activations or an i64 bias, as TFLite), wrap |
| act_min/max | clamp bounds in the result's storage domain          | storage range |

Syntax, for every op:

    %r = qnn.conv2d %x, %w, %b {strides = array<i64: 1, 1>, ...} : (Tx, Tw, Tb) -> Tr

Layouts are TFLite's (NHWC; conv weights OHWI; depthwise 1HWC; fully
connected [out, in]).  A bias is an i32 (i64 for 16x8) tensor; when it is
given a quantized type its scales must equal input_scale * weight_scale[c].
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    attr_def,
    irdl_op_definition,
    operand_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, HasParent, IsolatedFromAbove, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.lexer import Span

from qdialect import trusted
from qdialect.dialects.quant import UniformQuantizedType, _integer_type, is_subclass, quantized_tensor_problems
from qdialect.qparams import ACC_WIDTHS, BIAS_MODES, ONNX_ROUNDINGS, ROUNDING_PROFILES, storage_dtype

# ----- attribute schema --------------------------------------------------------------

INTS, STR, FLOAT, BOOL, INT = "ints", "str", "float", "bool", "int"

KNOB_ATTRS = {
    "rounding": (STR, ROUNDING_PROFILES),
    "act_min": (INT, None),
    "act_max": (INT, None),
}
ROUNDING_ONLY = {"rounding": (STR, ROUNDING_PROFILES)}
"""Activation ops: TFLite fuses no clamp into them, so they take no act_min/act_max."""
ACC_ATTRS = {
    "bias": (STR, BIAS_MODES),
    "acc": (STR, ACC_WIDTHS),
    "acc_overflow": (STR, ("wrap", "saturate")),
}


def ints_attr(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def make_attr(kind: str, value) -> Attribute:
    if kind == INTS:
        return ints_attr(value)
    if kind == STR:
        return StringAttr(str(value))
    if kind == FLOAT:
        return FloatAttr(float(value), 64)
    if kind == BOOL:
        return IntegerAttr(1 if value else 0, 1)
    if kind == INT:
        return IntegerAttr(int(value), 64)
    raise ValueError(kind)


def _read_attr(attr: Attribute, kind: str):
    # (is_subclass: isinstance on xDSL's attribute classes goes through ABCMeta)
    cls = type(attr)
    if kind == INTS and is_subclass(cls, DenseArrayBase):
        return list(attr.get_values())
    if kind == STR and is_subclass(cls, StringAttr):
        return attr.data
    if kind == FLOAT and is_subclass(cls, FloatAttr):
        return float(attr.value.data)
    if kind == BOOL and is_subclass(cls, IntegerAttr) and attr.type == _integer_type(1):
        return bool(attr.value.data)
    if kind == INT and is_subclass(cls, IntegerAttr):
        return int(attr.value.data)
    raise TypeError


_KIND_SPELLING = {
    INTS: "array<i64: ...>",
    STR: "a string",
    FLOAT: "a float",
    BOOL: "true/false",
    INT: "an integer",
}


def broadcast_shape(a: Sequence[int], b: Sequence[int]) -> list[int]:
    """Numpy/TFLite right-aligned broadcasting of two shapes (any rank); ValueError if they clash."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            raise ValueError(f"{list(a)} and {list(b)} do not broadcast")
        out.append(y if x == 1 else x)
    return out[::-1]


def qtype(value: SSAValue) -> UniformQuantizedType | None:
    t = value.type
    if is_subclass(type(t), TensorType) and is_subclass(type(t.element_type), UniformQuantizedType):
        return t.element_type
    if is_subclass(type(t), UniformQuantizedType):
        return t
    return None


def shape_of(value: SSAValue) -> tuple[int, ...]:
    t = value.type
    return t.get_shape() if is_subclass(type(t), TensorType) else ()


# ----- base op -----------------------------------------------------------------------

# an operand `%name` (the lexer's extent of it) as QnnOp.print spells a list of them: each
# followed by `,` (then the next) or by the `{` or `:` after the list (so no `#index`)
_PRINTED_OPERAND = re.compile(
    r"(%(?:[0-9]++|[A-Za-z$._-][A-Za-z0-9$._-]*+))[ \t\n\r\f\v]*+(?:(,)[ \t\n\r\f\v]*+(?=%)|(?=[{:]))")


def _printed_operands(parser: Parser) -> list[UnresolvedOperand] | None:
    """The operand list at the parser's position read with regular expressions, as
    parsing it token by token would give it, when it is spelled as printed; else None."""
    content = parser.lexer.input.content
    if not isinstance(content, str):
        return None
    operands, pos = [], parser.pos
    while (m := _PRINTED_OPERAND.match(content, pos)) is not None:
        operands.append(UnresolvedOperand(Span(m.start(1), m.end(1), parser.lexer.input), 0))
        pos = m.end()
        if m.group(2) is None:
            parser._resume_from(pos)
            return operands
    return None


class QnnOp(IRDLOperation):
    """Common syntax, attribute checking and helpers of qnn ops.

    Subclasses declare `ATTRS` (name -> (kind, allowed values or None)),
    `REQUIRED` attribute names, `OPERAND_NAMES` for diagnostics, and
    `QUANTIZED_OPERANDS` (indices that must be quantized; default all).

    A verifier (`verify_`, `verify_op`) reads nothing but the op's operand and
    result types and its attributes (never an operand's defining op or a
    constant's values): `qdialect.diagnostics.verify_module` verifies ops that
    share all of those once.
    """

    ATTRS: ClassVar[dict] = {}
    REQUIRED: ClassVar[tuple[str, ...]] = ()
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    QUANTIZED_OPERANDS: ClassVar[tuple[int, ...] | None] = None
    N_OPERANDS: ClassVar[int | None] = 1
    N_RESULTS: ClassVar[int | None] = 1

    operand_list = var_operand_def()
    result_list = var_result_def()
    traits = traits_def(Pure())

    def __init__(
        self,
        operands: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
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
            else:
                raise VerifyException(f"{self.name}: unknown attribute '{key}'")
        super().__init__(operands=[list(operands)], result_types=[list(result_types)], attributes=attrs)

    # -- syntax --
    @classmethod
    def parse(cls, parser: Parser):
        pos = parser.pos
        operands = _printed_operands(parser)
        if operands is None:
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
            parser.raise_error(
                f"{cls.name}: {len(operands)} operands but {len(inputs)} operand types", pos
            )
        resolved = parser.resolve_operands(operands, inputs, pos)
        return cls.create(
            operands=list(resolved), result_types=list(ftype.outputs.data), attributes=attrs
        )

    def print(self, printer: Printer):
        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_ssa_value)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type(
            [o.type for o in self.operands], [r.type for r in self.results]
        )

    # -- attribute access --
    def attr(self, name: str, default=None):
        if name not in self.attributes:
            return default
        return _read_attr(self.attributes[name], self.ATTRS[name][0])

    @property
    def rounding(self) -> str:
        return self.attr("rounding", "tflite")

    def operand_name(self, i: int) -> str:
        if i < len(self.OPERAND_NAMES):
            return f"operand {i} ({self.OPERAND_NAMES[i]})"
        return f"operand {i}"

    def fail(self, message: str):
        raise VerifyException(f"{self.name}: {message}")

    def in_q(self, i: int) -> UniformQuantizedType:
        return qtype(self.operands[i])

    def out_q(self, i: int = 0) -> UniformQuantizedType:
        return qtype(self.results[i])

    def clamp_bounds(self) -> tuple[int, int]:
        lo, hi = self.out_q().storage_range()
        return self.attr("act_min", lo), self.attr("act_max", hi)

    # -- verification --
    def verify_(self) -> None:
        self.verify_semantics()

    def verify_semantics(self) -> None:
        """The op's own rules, which xDSL runs after its IRDL checks (`verify_`).  Subclasses
        extend `verify_op` or replace this, never `verify_`: `verify_module` calls this
        directly when the IRDL checks pass by construction (see `_irdl_checks_pass`)."""
        operands = self.operands  # (a view, built at each `self.operands`)
        if self.N_OPERANDS is not None and len(operands) != self.N_OPERANDS:
            self.fail(f"expects {self.N_OPERANDS} operands, got {len(operands)}")
        if self.N_RESULTS is not None and len(self.results) != self.N_RESULTS:
            self.fail(f"expects {self.N_RESULTS} results, got {len(self.results)}")
        for name, attr in self.attributes.items():
            if name not in self.ATTRS:
                self.fail(f"unknown attribute '{name}'")
            kind, allowed = self.ATTRS[name]
            try:
                value = _read_attr(attr, kind)
            except TypeError:
                self.fail(f"attribute '{name}' must be {_KIND_SPELLING[kind]}, got {attr}")
            if allowed is not None and value not in allowed:
                self.fail(
                    f"attribute '{name}' is '{value}', expected one of {', '.join(allowed)}"
                )
        for name in self.REQUIRED:
            if name not in self.attributes:
                self.fail(f"missing attribute '{name}'")
        quantized = (
            range(len(operands)) if self.QUANTIZED_OPERANDS is None else self.QUANTIZED_OPERANDS
        )
        for i in quantized:
            if i < len(operands) and qtype(operands[i]) is None:
                self.fail(f"{self.operand_name(i)} type {operands[i].type} is not quantized")
        for i, v in enumerate(operands):
            for p in quantized_tensor_problems(v.type):
                self.fail(f"{self.operand_name(i)}: {p}")
        for i, r in enumerate(self.results):
            if qtype(r) is None:
                self.fail(f"result {i} type {r.type} is not quantized")
            for p in quantized_tensor_problems(r.type):
                self.fail(f"result {i}: {p}")
        if "act_min" in self.ATTRS and self.results:
            lo, hi = self.out_q().storage_range()
            amin, amax = self.clamp_bounds()
            if not lo <= amin <= amax <= hi:
                self.fail(
                    f"clamp bounds [{amin}, {amax}] are not inside the result storage "
                    f"range [{lo}, {hi}] or are empty"
                )
        self.verify_op()

    def verify_op(self) -> None:
        """Op-specific rules."""

    # -- shared rules --
    def require_per_tensor(self, i: int):
        q = self.in_q(i)
        if q is not None and q.is_per_axis:
            self.fail(f"{self.operand_name(i)} must be per-tensor quantized, got {q}")

    def require_same_params(self, i: int, what: str = "result"):
        a, b = self.in_q(i), self.out_q()
        if a is None or b is None:
            return
        if a.storage != b.storage or a.scale_array().tolist() != b.scale_array().tolist() or (
            a.zero_point_array().tolist() != b.zero_point_array().tolist()
        ):
            self.fail(
                f"{self.operand_name(i)} and {what} must have the same quantization "
                f"parameters, got {a} and {b}"
            )

    def require_rank(self, i: int, rank: int, what: str | None = None):
        s = shape_of(self.operands[i])
        if len(s) != rank:
            self.fail(f"{what or self.operand_name(i)} must have rank {rank}, got shape {list(s)}")

    def require_result_shape(self, expected: Sequence[int], i: int = 0):
        got = shape_of(self.results[i])
        if tuple(got) != tuple(expected):
            self.fail(f"result {i} shape {list(got)} does not match the expected {list(expected)}")

    def require_fixed_output(self, table: dict[str, tuple[float, int]]):
        if self.attr("rounding", "tflite") in ONNX_ROUNDINGS:
            return  # ONNX's QLinearSigmoid / QLinearSoftmax take the model's own output parameters
        q = self.out_q()
        if q.storage in table:
            scale, zp = table[q.storage]
            if q.is_per_axis or float(q.scale_array()) != scale or int(q.zero_point_array()) != zp:
                self.fail(
                    f"result for {q.storage} must have scale {scale} and zero point {zp} "
                    f"(fixed by TFLite), got {q}"
                )

    def check_bias(self, bias_index: int, in_index: int, w_index: int, channels: int):
        """Bias: integer tensor [channels] of i32/i64; if quantized, scale = in_s * w_s[c]."""
        b = self.operands[bias_index]
        shape = shape_of(b)
        if tuple(shape) != (channels,):
            self.fail(f"{self.operand_name(bias_index)} shape {list(shape)} must be [{channels}]")
        t = b.type
        el = t.element_type if isinstance(t, TensorType) else t
        if isinstance(el, UniformQuantizedType):
            if el.storage not in ("i32", "i64"):
                self.fail(f"{self.operand_name(bias_index)} storage {el.storage} must be i32 or i64")
            bscale = _per_channel(el, channels)
            in_q = self.in_q(in_index)
            in_s = in_q.scales.data[0].data if len(in_q.scales) == 1 else float(in_q.scale_array())
            expected = [in_s * w for w in _per_channel(self.in_q(w_index), channels)]
            for c in range(channels):
                # abs_tol: a float32 product in the subnormal range is only exact to 2^-149
                if not math.isclose(bscale[c], expected[c], rel_tol=1e-5, abs_tol=2.0**-149):
                    self.fail(
                        f"{self.operand_name(bias_index)} scale {float(bscale[c])!r} at channel {c} is not "
                        f"input scale * weight scale = {float(expected[c])!r}"
                    )
        elif not (isinstance(el, IntegerType) and el.width.data in (32, 64)):
            self.fail(f"{self.operand_name(bias_index)} element type {el} must be i32 or i64")


def _per_channel(q: UniformQuantizedType, channels: int) -> Sequence[float]:
    """The scales of `q` as `np.broadcast_to(q.scale_array(), (channels,))` gives them (a
    per-tensor scale repeated), as Python floats (the arithmetic on them is the same)."""
    scales = [s.data for s in q.scales.data]
    if len(scales) == channels:
        return scales
    if len(scales) == 1:
        return scales * channels
    return np.broadcast_to(q.scale_array(), (channels,))


# ----- constants ---------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A dense constant of quantized (or integer) tensor type, stored as raw bytes.

    `%w = qnn.constant dense<"0x..."> : tensor<3x3x!quant.uniform<i8:f32, 0.5>>`
    The hex string holds the little-endian stored integers in the storage
    type's numpy container (1, 2 or 4 bytes per element); weights never
    travel as decimal element lists.
    """

    name = "qnn.constant"
    result_list = var_result_def()
    traits = traits_def(Pure(), ConstantLike())

    def __init__(self, value: np.ndarray, result_type: Attribute):
        value = np.ascontiguousarray(value)
        super().__init__(
            result_types=[[result_type]],
            attributes={"value": _dense_bytes(value.tobytes(), value.dtype.itemsize, value.shape)},
        )

    @staticmethod
    def from_array(value: np.ndarray, qt: UniformQuantizedType) -> "ConstantOp":
        container = qt.qparams().dtype
        arr = np.asarray(value)
        lo, hi = qt.storage_range()
        if arr.size and (arr.min() < lo or arr.max() > hi):
            raise VerifyException(
                f"qnn.constant: values [{arr.min()}, {arr.max()}] outside {qt.storage} [{lo}, {hi}]"
            )
        return ConstantOp(arr.astype(container), TensorType(qt, arr.shape))

    @property
    def result(self) -> SSAValue:
        return self.results[0]

    def element_dtype(self) -> np.dtype:
        return _constant_dtype(self.results[0].type)

    def array(self) -> np.ndarray:
        t = self.results[0].type
        shape = t.get_shape() if isinstance(t, TensorType) else ()
        data = self.attributes["value"].data.data
        return np.frombuffer(data, dtype=self.element_dtype()).reshape(shape)

    def verify_(self) -> None:
        self.verify_semantics()

    def verify_semantics(self) -> None:
        """The op's own rules, which xDSL runs after its IRDL checks (as QnnOp's)."""
        if len(self.results) != 1:
            raise VerifyException("qnn.constant: expects one result")
        t = self.results[0].type
        # (isinstance on xDSL's attribute classes goes through ABCMeta: is_subclass is remembered)
        if not is_subclass(type(t), TensorType):
            raise VerifyException(f"qnn.constant: result type {t} must be a ranked tensor")
        value = self.attributes.get("value")
        if not is_subclass(type(value), DenseIntOrFPElementsAttr):
            raise VerifyException("qnn.constant: missing dense 'value'")
        dtype = _constant_dtype(t)
        n = math.prod(t.get_shape())
        if len(value.data.data) != n * dtype.itemsize:
            raise VerifyException(
                f"qnn.constant: {len(value.data.data)} bytes of data but {t} needs {n * dtype.itemsize}"
            )
        for p in quantized_tensor_problems(t):
            raise VerifyException(f"qnn.constant: {p}")
        el = t.element_type
        if is_subclass(type(el), UniformQuantizedType) and n:
            lo, hi = el.storage_range()
            container_min, container_max = _container_range(dtype)
            if lo <= container_min and hi >= container_max:
                return  # the container holds nothing else (int8 storage of range [-128, 127])
            if dtype.itemsize == 1 and not value.data.data.translate(None, _bytes_in_range(lo, hi)):
                return  # every byte is a value in [lo, hi] (any other: numpy finds it for the message)
            arr = self.array()
            if arr.min() < lo or arr.max() > hi:
                bad = arr[(arr < lo) | (arr > hi)].reshape(-1)[0]
                raise VerifyException(
                    f"qnn.constant: stored value {int(bad)} is outside {el.storage} [{lo}, {hi}]"
                )

    @classmethod
    def parse(cls, parser: Parser):
        content = parser.lexer.input.content
        printed = _PRINTED_CONSTANT.match(content, parser.pos) if isinstance(content, str) else None
        if printed is not None and len(printed.group(1)) % 2 == 0:
            # the printed form, read in one match instead of six tokens
            data = bytes.fromhex(printed.group(1))
            parser._resume_from(printed.end())
        else:
            data = cls._parse_hex_value(parser)
            parser.parse_punctuation(":")
        tpos = parser.pos
        t = parser.parse_type()
        if not is_subclass(type(t), TensorType):
            parser.raise_error(f"qnn.constant: result type {t} must be a ranked tensor", tpos)
        itemsize = _constant_dtype(t).itemsize
        return cls.create(result_types=[t], attributes={"value": _dense_bytes(data, itemsize, t.get_shape())})

    @staticmethod
    def _parse_hex_value(parser: Parser) -> bytes:
        """The bytes of `dense<"0x...">`, token by token (with a diagnostic for anything else)."""
        parser.parse_keyword("dense")
        parser.parse_punctuation("<")
        pos = parser.pos
        text = parser.parse_str_literal()
        parser.parse_punctuation(">")
        if not text.startswith("0x") or len(text) % 2:
            parser.raise_error("qnn.constant: expected a hex string \"0x...\"", pos)
        try:
            return bytes.fromhex(text[2:])
        except ValueError:
            parser.raise_error("qnn.constant: invalid hex digits in the constant", pos)

    def print(self, printer: Printer):
        printer.print_string(f' dense<"0x{self.attributes["value"].data.data.hex().upper()}"> : ')
        printer.print_attribute(self.results[0].type)


@functools.cache
def _container_range(dtype: np.dtype) -> tuple[int, int]:
    """`np.iinfo(dtype)`'s (min, max), remembered per integer dtype."""
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


@functools.cache
def _bytes_in_range(lo: int, hi: int) -> bytes:
    """The bytes that store the values in [lo, hi] (inside int8's or uint8's range) in a one-byte container."""
    return bytes(sorted({v & 0xFF for v in range(lo, hi + 1)}))


# `dense<"0x...."> :` as ConstantOp.print spells it (any hex digits, the lexer's white space)
_PRINTED_CONSTANT = re.compile(r'dense[ \t\n\r\f\v]*<[ \t\n\r\f\v]*"0x([0-9A-Fa-f]*)"[ \t\n\r\f\v]*>[ \t\n\r\f\v]*:')


def _constant_dtype(t) -> np.dtype:
    """The numpy dtype of a qnn.constant's stored values, for its result type `t`."""
    el = t.element_type if is_subclass(type(t), TensorType) else t
    if is_subclass(type(el), UniformQuantizedType):
        return storage_dtype(el.storage_width.data, el.signed)  # = el.qparams().dtype, without the arrays
    if is_subclass(type(el), IntegerType):
        w = el.width.data
        return np.dtype(f"int{8 if w <= 8 else 16 if w <= 16 else 32 if w <= 32 else 64}")
    raise VerifyException(f"qnn.constant: element type {el} is not quantized or integer")


# ----- convolutions and matmuls --------------------------------------------------------


def _dense_bytes(data: bytes, itemsize: int, shape) -> DenseIntOrFPElementsAttr:
    """Raw little-endian bytes as a dense attribute of the container integer type."""
    dims = tuple(int(d) for d in shape)
    if len(data) != math.prod(dims) * itemsize or min(dims, default=0) < 0:
        # the verified constructors say what is wrong
        return DenseIntOrFPElementsAttr(TensorType(IntegerType(8 * itemsize), list(dims)), BytesAttr(bytes(data)))
    # a constant's parse or build: the parts are valid by construction (qdialect/trusted.py)
    return trusted.attr(DenseIntOrFPElementsAttr, trusted.tensor_type(_integer_type(8 * itemsize), dims),
                        trusted.data_attr(BytesAttr, bytes(data)))


def conv_output_size(in_size: int, kernel: int, stride: int, dilation: int, pad_before: int, pad_after: int) -> int:
    effective = (kernel - 1) * dilation + 1
    return (in_size + pad_before + pad_after - effective) // stride + 1


WINDOW_RULES = {"kernel": (2, 1), "strides": (2, 1), "dilations": (2, 1), "padding": (4, 0)}
"""Window attributes of convolutions and pools: (entries, smallest value); padding is [top, bottom, left, right]."""


def window_attr(op, name: str) -> list[int]:
    """A window attribute of `op` (or its default), checked against WINDOW_RULES; fails with a diagnostic."""
    length, minimum = WINDOW_RULES[name]
    values = op.attr(name, [minimum] * length if name != "kernel" else None)
    if values is None or len(values) != length or any(v < minimum for v in values):
        op.fail(f"attribute '{name}' must be {length} integers >= {minimum}, got {values}")
    return values


class _WeightedOp(QnnOp):
    OPERAND_NAMES: ClassVar = ("input", "weights", "bias")
    N_OPERANDS: ClassVar = 3
    QUANTIZED_OPERANDS: ClassVar = (0, 1)

    def check_weights_axis(self, axis: int, channels: int):
        w = self.in_q(1)
        if w.is_per_axis and w.axis != axis:
            self.fail(f"operand 1 (weights) must be quantized along axis {axis}, got axis {w.axis}")
        self.require_per_tensor(0)
        if self.out_q().is_per_axis:
            self.fail(f"result must be per-tensor quantized, got {self.out_q()}")


CONV_ATTRS = {
    "strides": (INTS, None),
    "dilations": (INTS, None),
    "padding": (INTS, None),
    **KNOB_ATTRS,
    **ACC_ATTRS,
}


@irdl_op_definition
class Conv2DOp(_WeightedOp):
    """2-D convolution, NHWC input, OHWI weights, bias, requantization and clamp.

    real: out = clamp(conv(x_real, w_real) + bias_real) quantized to the result
    type; `padding` is [top, bottom, left, right] (zeros in real terms).
    """

    name = "qnn.conv2d"
    ATTRS: ClassVar = CONV_ATTRS

    def verify_op(self):
        for i in (0, 1):
            self.require_rank(i, 4)
        n, h, w, c = shape_of(self.operands[0])
        o, kh, kw, ci = shape_of(self.operands[1])
        if ci != c:
            self.fail(f"operand 1 (weights) has {ci} input channels but the input has {c}")
        self.check_weights_axis(0, o)
        self.check_bias(2, 0, 1, o)
        sh, sw = window_attr(self, "strides")
        dh, dw = window_attr(self, "dilations")
        pt, pb, pl, pr = window_attr(self, "padding")
        self.require_result_shape(
            [n, conv_output_size(h, kh, sh, dh, pt, pb), conv_output_size(w, kw, sw, dw, pl, pr), o]
        )


@irdl_op_definition
class DepthwiseConv2DOp(_WeightedOp):
    """Depthwise 2-D convolution, NHWC input, 1HW(C*multiplier) weights, bias, clamp."""

    name = "qnn.depthwise_conv2d"
    ATTRS: ClassVar = CONV_ATTRS

    def verify_op(self):
        for i in (0, 1):
            self.require_rank(i, 4)
        n, h, w, c = shape_of(self.operands[0])
        one, kh, kw, oc = shape_of(self.operands[1])
        if one != 1 or oc % c:
            self.fail(
                f"operand 1 (weights) shape {[one, kh, kw, oc]} must be [1, KH, KW, C*multiplier] with C={c}"
            )
        self.check_weights_axis(3, oc)
        self.check_bias(2, 0, 1, oc)
        sh, sw = window_attr(self, "strides")
        dh, dw = window_attr(self, "dilations")
        pt, pb, pl, pr = window_attr(self, "padding")
        self.require_result_shape(
            [n, conv_output_size(h, kh, sh, dh, pt, pb), conv_output_size(w, kw, sw, dw, pl, pr), oc]
        )


@irdl_op_definition
class TransposeConv2DOp(_WeightedOp):
    """Transposed 2-D convolution (TFLite TRANSPOSE_CONV), OHWI weights, bias, clamp.

    `padding` [top, bottom, left, right] is removed from the full output.
    """

    name = "qnn.transpose_conv2d"
    ATTRS: ClassVar = CONV_ATTRS

    def verify_op(self):
        for i in (0, 1):
            self.require_rank(i, 4)
        n, h, w, c = shape_of(self.operands[0])
        o, kh, kw, ci = shape_of(self.operands[1])
        if ci != c:
            self.fail(f"operand 1 (weights) has {ci} input channels but the input has {c}")
        self.check_weights_axis(0, o)
        self.check_bias(2, 0, 1, o)
        sh, sw = window_attr(self, "strides")
        pt, pb, pl, pr = window_attr(self, "padding")
        self.require_result_shape(
            [n, (h - 1) * sh + kh - pt - pb, (w - 1) * sw + kw - pl - pr, o]
        )


@irdl_op_definition
class FullyConnectedOp(_WeightedOp):
    """y = x @ W^T + b with W [out, in]; leading input dims are flattened (or kept)."""

    name = "qnn.fully_connected"
    ATTRS: ClassVar = {**KNOB_ATTRS, **ACC_ATTRS}

    def verify_op(self):
        self.require_rank(1, 2)
        o, k = shape_of(self.operands[1])
        xs = shape_of(self.operands[0])
        if not xs or math.prod(xs) % k:
            self.fail(f"operand 0 (input) shape {list(xs)} is not a multiple of {k} input features")
        self.check_weights_axis(0, o)
        self.check_bias(2, 0, 1, o)
        rs = shape_of(self.results[0])
        if not rs or rs[-1] != o or math.prod(rs) != math.prod(xs) // k * o:
            self.fail(f"result shape {list(rs)} does not match {math.prod(xs) // k} rows of {o} outputs")


@irdl_op_definition
class BatchMatmulOp(QnnOp):
    """Batched matrix product of two quantized tensors (adj_x/adj_y transpose the last two dims)."""

    name = "qnn.batch_matmul"
    ATTRS: ClassVar = {"adj_x": (BOOL, None), "adj_y": (BOOL, None), **KNOB_ATTRS, **ACC_ATTRS}
    OPERAND_NAMES: ClassVar = ("lhs", "rhs")
    N_OPERANDS: ClassVar = 2

    def verify_op(self):
        a, b = shape_of(self.operands[0]), shape_of(self.operands[1])
        if len(a) < 2 or len(b) < 2:
            self.fail(f"operands must have rank >= 2, got {list(a)} and {list(b)}")
        for i in (0, 1):
            self.require_per_tensor(i)
        m, ka = (a[-1], a[-2]) if self.attr("adj_x", False) else (a[-2], a[-1])
        kb, nn = (b[-1], b[-2]) if self.attr("adj_y", False) else (b[-2], b[-1])
        if ka != kb:
            self.fail(f"contracting sizes differ: {ka} and {kb}")
        try:
            batch = broadcast_shape(a[:-2], b[:-2])
        except ValueError:
            self.fail(f"batch dims {list(a[:-2])} and {list(b[:-2])} do not broadcast")
        self.require_result_shape([*batch, m, nn])


# ----- elementwise ---------------------------------------------------------------------


class _BinaryOp(QnnOp):
    OPERAND_NAMES: ClassVar = ("lhs", "rhs")
    N_OPERANDS: ClassVar = 2
    ATTRS: ClassVar = dict(KNOB_ATTRS)
    SAME_PARAMS: ClassVar = False

    def verify_op(self):
        for i in (0, 1):
            self.require_per_tensor(i)
        a, b = shape_of(self.operands[0]), shape_of(self.operands[1])
        try:
            out = broadcast_shape(a, b)
        except ValueError:
            self.fail(f"operand shapes {list(a)} and {list(b)} do not broadcast")
        self.require_result_shape(out)
        if self.SAME_PARAMS:
            self.require_same_params(0)
            self.require_same_params(1)


@irdl_op_definition
class AddOp(_BinaryOp):
    """out = lhs + rhs (real), broadcasting, requantized and clamped."""

    name = "qnn.add"


@irdl_op_definition
class SubOp(_BinaryOp):
    """out = lhs - rhs (real), broadcasting, requantized and clamped."""

    name = "qnn.sub"


@irdl_op_definition
class MulOp(_BinaryOp):
    """out = lhs * rhs (real), broadcasting, requantized and clamped."""

    name = "qnn.mul"


@irdl_op_definition
class DivOp(_BinaryOp):
    """out = lhs / rhs (real), broadcasting, requantized and clamped.  TFLite recipe
    (DivElementwise, int8 / uint8 / int16): `a = q1 - zp1`, `b = q2 - zp2` (both negated when
    b < 0); (r, e) = GetReciprocal(b, 31); h = CountLeadingSignBits(a);
    `u = SRDHM(a << h, r)`; `out = RDBPOT(SRDHM(u, M), h + e - shift) + out_zp` with
    (M, shift) = QuantizeMultiplier(f32(s1 / f32(s2 * s_out))); a divisor at its zero point
    is a run-time error."""

    name = "qnn.div"


@irdl_op_definition
class SquaredDifferenceOp(_BinaryOp):
    """out = (lhs - rhs)^2 (real), broadcasting, requantized."""

    name = "qnn.squared_difference"


@irdl_op_definition
class MaximumOp(_BinaryOp):
    """Elementwise max of stored values; operands and result share parameters."""

    name = "qnn.maximum"
    SAME_PARAMS: ClassVar = True


@irdl_op_definition
class MinimumOp(_BinaryOp):
    """Elementwise min of stored values; operands and result share parameters."""

    name = "qnn.minimum"
    SAME_PARAMS: ClassVar = True


@irdl_op_definition
class PReluOp(_BinaryOp):
    """out = x >= 0 ? x : alpha * x (real), alpha a quantized tensor broadcast against x."""

    name = "qnn.prelu"
    ATTRS: ClassVar = dict(ROUNDING_ONLY)
    OPERAND_NAMES: ClassVar = ("input", "alpha")


class _UnaryOp(QnnOp):
    ATTRS: ClassVar = dict(KNOB_ATTRS)
    FIXED: ClassVar[dict[str, tuple[float, int]]] = {}

    def verify_op(self):
        self.require_per_tensor(0)
        self.require_result_shape(shape_of(self.operands[0]))
        if self.FIXED:
            self.require_fixed_output(self.FIXED)


@irdl_op_definition
class RequantizeOp(_UnaryOp):
    """Same real values, new quantization parameters (per-axis input allowed)."""

    name = "qnn.requantize"

    def verify_op(self):
        self.require_result_shape(shape_of(self.operands[0]))


@irdl_op_definition
class ClampOp(_UnaryOp):
    """relu / relu6 / relu_n1_to_1 / clamp: requantize then clamp to [act_min, act_max]."""

    name = "qnn.clamp"


@irdl_op_definition
class LogisticOp(_UnaryOp):
    """out = sigmoid(x); int8 result fixed at scale 1/256, zp -128 (int16: 1/32768, 0)."""

    name = "qnn.logistic"
    ATTRS: ClassVar = dict(ROUNDING_ONLY)
    FIXED: ClassVar = {"i8": (1 / 256, -128), "u8": (1 / 256, 0), "i16": (1 / 32768, 0)}


@irdl_op_definition
class TanhOp(_UnaryOp):
    """out = tanh(x); int8 result fixed at scale 1/128, zp 0 (int16: 1/32768, 0)."""

    name = "qnn.tanh"
    ATTRS: ClassVar = dict(ROUNDING_ONLY)
    FIXED: ClassVar = {"i8": (1 / 128, 0), "u8": (1 / 128, 128), "i16": (1 / 32768, 0)}


@irdl_op_definition
class SoftmaxOp(_UnaryOp):
    """out = softmax(beta * x) along the last axis; int8 result 1/256, zp -128."""

    name = "qnn.softmax"
    ATTRS: ClassVar = {"beta": (FLOAT, None), **ROUNDING_ONLY}
    FIXED: ClassVar = {"i8": (1 / 256, -128), "u8": (1 / 256, 0), "i16": (1 / 32768, 0)}


@irdl_op_definition
class LogSoftmaxOp(_UnaryOp):
    """out = log_softmax(x) along the last axis; int8 result 16/256, zp 127."""

    name = "qnn.log_softmax"
    ATTRS: ClassVar = dict(ROUNDING_ONLY)
    FIXED: ClassVar = {"i8": (16 / 256, 127), "u8": (16 / 256, 255)}


@irdl_op_definition
class HardSwishOp(_UnaryOp):
    """out = x * relu6(x + 3) / 6."""

    name = "qnn.hard_swish"
    ATTRS: ClassVar = dict(ROUNDING_ONLY)


@irdl_op_definition
class HardSigmoidOp(_UnaryOp):
    """out = max(0, min(1, alpha * x + beta)) (ONNX HardSigmoid; TFLite has no such operator, so
    only the ONNX profiles give it arithmetic)."""

    name = "qnn.hard_sigmoid"
    ATTRS: ClassVar = {"alpha": (FLOAT, None), "beta": (FLOAT, None), **ROUNDING_ONLY}
    REQUIRED: ClassVar = ("alpha", "beta")


@irdl_op_definition
class LeakyReluOp(_UnaryOp):
    """out = x >= 0 ? x : alpha * x."""

    name = "qnn.leaky_relu"
    ATTRS: ClassVar = {"alpha": (FLOAT, None), **ROUNDING_ONLY}
    REQUIRED: ClassVar = ("alpha",)


@irdl_op_definition
class EluOp(_UnaryOp):
    """out = x >= 0 ? x : exp(x) - 1."""

    name = "qnn.elu"
    ATTRS: ClassVar = dict(ROUNDING_ONLY)


@irdl_op_definition
class GeluOp(_UnaryOp):
    """out = gelu(x) = x * Phi(x) (`approximate = true`: the tanh form
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))).  Any output parameters.

    TFLite recipe (`rounding` tflite / litert: XNNPACK takes no quantized GELU):
    8-bit, a 256-entry table of the float32 function on `in_s * (q - in_zp)`,
    `round_half_away(y * f32(1 / out_s)) + out_zp`, saturated; int16, the
    513-entry LUTPopulateInt16<float> table with 7-bit interpolation.
    """

    name = "qnn.gelu"
    ATTRS: ClassVar = {"approximate": (BOOL, None), **ROUNDING_ONLY}


@irdl_op_definition
class ExpOp(_UnaryOp):
    """out = exp(x).  TFLite recipe: the table of `expf` as for `qnn.gelu`
    (int16: both zero points 0)."""

    name = "qnn.exp"
    ATTRS: ClassVar = dict(ROUNDING_ONLY)

    def verify_op(self):
        super().verify_op()
        _require_zero_zps_16(self)


@irdl_op_definition
class RsqrtOp(_UnaryOp):
    """out = 1 / sqrt(x) for x > 0 (stored x below the input zero point is an error at
    run time; x == 0 gives the storage maximum, as TFLite).

    TFLite recipe: int8 fixed point, `v = q - in_zp`, (M, s) from
    GetInvSqrtQuantizedMultiplierExp(v) (gemmlowp Newton-Raphson in Q3.28),
    `d = MBQM(1, M, s + 20)`, `out = MBQM(d, M_o, s_o - 20) + out_zp` with
    (M_o, s_o) = QuantizeMultiplier(1 / (sqrt(in_s) * out_s)); int16 (zero points 0)
    the 513-entry table of `1.0f / sqrtf(v)`.  Every int8 output is a function of the
    stored input alone: a 256-entry table (`reference.activations.rsqrt_table_int8`).
    """

    name = "qnn.rsqrt"
    ATTRS: ClassVar = dict(ROUNDING_ONLY)

    def verify_op(self):
        super().verify_op()
        _require_zero_zps_16(self)


@irdl_op_definition
class SqrtOp(_UnaryOp):
    """out = sqrt(x) for x >= 0 (a negative input is an error at run time).

    TFLite recipe (int8, int16, any zero points): float32
    `trunc(sqrtf(in_s * (q - in_zp)) / out_s) + out_zp` (truncation, not rounding),
    saturated.
    """

    name = "qnn.sqrt"
    ATTRS: ClassVar = dict(ROUNDING_ONLY)


@irdl_op_definition
class AbsOp(_UnaryOp):
    """out = |x|.  TFLite recipe: `|q - in_zp|`, then (when the scales differ)
    MBQM with QuantizeMultiplier(f32(in_s / out_s)), `+ out_zp`, saturated
    (int16: zero points 0)."""

    name = "qnn.abs"
    ATTRS: ClassVar = dict(ROUNDING_ONLY)

    def verify_op(self):
        super().verify_op()
        _require_zero_zps_16(self)


@irdl_op_definition
class NegOp(_UnaryOp):
    """out = -x on stored integers: TFLite's NEG reads no quantization parameters, so
    the op requires both zero points 0 and equal scales, where stored negation is real
    negation; the storage minimum maps to itself (`-x` wraps, as the kernel's cast does:
    int8 -128 -> -128)."""

    name = "qnn.neg"
    ATTRS: ClassVar = dict(ROUNDING_ONLY)

    def verify_op(self):
        super().verify_op()
        a, b = self.in_q(0), self.out_q()
        if int(a.zero_point_array()) != 0 or int(b.zero_point_array()) != 0 or (
            float(a.scale_array()) != float(b.scale_array()) or a.storage != b.storage
        ):
            self.fail(f"operand and result must have zero point 0 and the same scale and storage "
                      f"(stored negation), got {a} and {b}")


@irdl_op_definition
class L2NormalizationOp(_UnaryOp):
    """out = x / sqrt(sum(x^2)) along the last axis; int8 result fixed at 1/128, zp 0 (uint8:
    1/128, zp 128).

    TFLite recipe: `d = q - in_zp`, `acc = sum(d^2)` (int32),
    (M, s) = GetInvSqrtQuantizedMultiplierExp(acc) (as `qnn.rsqrt`); int8
    `out = MBQM(d, M, s + 7)` saturated; uint8 `out = 128 + RDBPOT(SRDHM(128 d, M), -s)`
    saturated to [0, 255].  The input scale is not used.
    """

    name = "qnn.l2_normalization"
    ATTRS: ClassVar = dict(ROUNDING_ONLY)
    FIXED: ClassVar = {"i8": (1 / 128, 0), "u8": (1 / 128, 128)}

    def verify_op(self):
        super().verify_op()
        if not shape_of(self.operands[0]):
            self.fail("operand 0 (input) must have rank >= 1")


def _require_zero_zps_16(op: QnnOp) -> None:
    for what, q in (("operand 0", op.in_q(0)), ("result", op.out_q())):
        if q.storage_width.data == 16 and int(q.zero_point_array()) != 0:
            op.fail(f"{what} is 16-bit with zero point {int(q.zero_point_array())}; TFLite needs 0")


# ----- pools and reductions ------------------------------------------------------------


POOL_ATTRS = {"kernel": (INTS, None), "strides": (INTS, None), "padding": (INTS, None), **KNOB_ATTRS}


class _PoolOp(QnnOp):
    ATTRS: ClassVar = POOL_ATTRS
    REQUIRED: ClassVar = ("kernel",)

    def verify_op(self):
        self.require_rank(0, 4)
        self.require_per_tensor(0)
        if not (self.name == "qnn.avg_pool2d" and self.attr("rounding", "tflite") in ONNX_ROUNDINGS):
            self.require_same_params(0)  # ONNX's average pools requantize to their own output parameters
        n, h, w, c = shape_of(self.operands[0])
        kh, kw = window_attr(self, "kernel")
        sh, sw = window_attr(self, "strides")
        pt, pb, pl, pr = window_attr(self, "padding")
        self.require_result_shape(
            [n, conv_output_size(h, kh, sh, 1, pt, pb), conv_output_size(w, kw, sw, 1, pl, pr), c]
        )


@irdl_op_definition
class AvgPool2DOp(_PoolOp):
    """Average over each window's in-bounds positions (padding is not counted)."""

    name = "qnn.avg_pool2d"


@irdl_op_definition
class MaxPool2DOp(_PoolOp):
    """Max over each window's in-bounds positions."""

    name = "qnn.max_pool2d"


class _ReduceOp(QnnOp):
    ATTRS: ClassVar = {"axes": (INTS, None), "keep_dims": (BOOL, None), **KNOB_ATTRS}
    REQUIRED: ClassVar = ("axes",)
    SAME_PARAMS: ClassVar = False

    def reduced_shape(self) -> list[int]:
        s = list(shape_of(self.operands[0]))
        axes = sorted({a % len(s) for a in self.attr("axes")}) if s else []
        keep = self.attr("keep_dims", False)
        return [1 if i in axes else d for i, d in enumerate(s)] if keep else [
            d for i, d in enumerate(s) if i not in axes
        ]

    def verify_op(self):
        self.require_per_tensor(0)
        rank = len(shape_of(self.operands[0]))
        for a in self.attr("axes"):
            if not -rank <= a < rank:
                self.fail(f"axis {a} is out of range for rank {rank}")
        self.require_result_shape(self.reduced_shape())
        if self.SAME_PARAMS:
            self.require_same_params(0)


@irdl_op_definition
class MeanOp(_ReduceOp):
    """Mean over `axes` (real), requantized."""

    name = "qnn.mean"


@irdl_op_definition
class SumOp(_ReduceOp):
    """Sum over `axes` (real), requantized."""

    name = "qnn.sum"


@irdl_op_definition
class ReduceMaxOp(_ReduceOp):
    """Max over `axes`; input and result share parameters."""

    name = "qnn.reduce_max"
    SAME_PARAMS: ClassVar = True


@irdl_op_definition
class ReduceMinOp(_ReduceOp):
    """Min over `axes`; input and result share parameters."""

    name = "qnn.reduce_min"
    SAME_PARAMS: ClassVar = True


# ----- data movement (stored integers only) ------------------------------------------------


class _MoveOp(QnnOp):
    ATTRS: ClassVar[dict] = {}

    def verify_op(self):
        self.require_same_params(0)
        self.verify_shape()

    def verify_shape(self):
        pass


@irdl_op_definition
class ReshapeOp(_MoveOp):
    """Same values, new shape: TFLite RESHAPE, SQUEEZE, EXPAND_DIMS and flattening."""

    name = "qnn.reshape"

    def verify_shape(self):
        a, r = shape_of(self.operands[0]), shape_of(self.results[0])
        if math.prod(a) != math.prod(r):
            self.fail(f"result shape {list(r)} has a different element count than {list(a)}")
        if self.in_q(0).is_per_axis:
            self.fail("a per-axis quantized tensor cannot be reshaped")


@irdl_op_definition
class TransposeOp(_MoveOp):
    """Permute dimensions: result dim i is input dim perm[i]."""

    name = "qnn.transpose"
    ATTRS: ClassVar = {"perm": (INTS, None)}
    REQUIRED: ClassVar = ("perm",)

    def verify_shape(self):
        s = shape_of(self.operands[0])
        perm = self.attr("perm")
        if sorted(perm) != list(range(len(s))):
            self.fail(f"perm {perm} is not a permutation of {len(s)} dims")
        self.require_result_shape([s[p] for p in perm])


@irdl_op_definition
class PadOp(_MoveOp):
    """Pad with `pad_value` stored integers (default: the zero point, i.e. real 0).

    `paddings` holds [before_0, after_0, before_1, after_1, ...].
    """

    name = "qnn.pad"
    ATTRS: ClassVar = {"paddings": (INTS, None), "pad_value": (INT, None)}
    REQUIRED: ClassVar = ("paddings",)

    def verify_shape(self):
        s = shape_of(self.operands[0])
        p = self.attr("paddings")
        if len(p) != 2 * len(s) or min(p, default=0) < 0:
            self.fail(f"paddings {p} must be 2 non-negative ints per dim of {list(s)}")
        self.require_result_shape([d + p[2 * i] + p[2 * i + 1] for i, d in enumerate(s)])
        if "pad_value" in self.attributes:
            lo, hi = self.out_q().storage_range()
            if not lo <= self.attr("pad_value") <= hi:
                self.fail(f"pad_value {self.attr('pad_value')} is outside [{lo}, {hi}]")


@irdl_op_definition
class SliceOp(_MoveOp):
    """Strided slice with static, normalized begin/end/strides (TFLite SLICE, STRIDED_SLICE).

    The result may drop size-1 dims (shrink_axis) since its shape is given.
    """

    name = "qnn.slice"
    ATTRS: ClassVar = {"begin": (INTS, None), "end": (INTS, None), "strides": (INTS, None)}
    REQUIRED: ClassVar = ("begin", "end")

    def sliced_shape(self) -> list[int]:
        s = shape_of(self.operands[0])
        begin, end = self.attr("begin"), self.attr("end")
        strides = self.attr("strides", [1] * len(s))
        if not len(begin) == len(end) == len(strides) == len(s):
            self.fail(f"begin/end/strides must have {len(s)} entries")
        out = []
        for b, e, st in zip(begin, end, strides):
            if st == 0:
                self.fail("stride 0 in slice")
            out.append(max(0, len(range(b, e, st))))
        return out

    def verify_shape(self):
        full = self.sliced_shape()
        r = shape_of(self.results[0])
        if math.prod(full) != math.prod(r) or [d for d in full if d != 1] != [d for d in r if d != 1]:
            self.fail(f"result shape {list(r)} does not match the slice shape {full}")


@irdl_op_definition
class SplitOp(_MoveOp):
    """Split along `axis` into the results' sizes."""

    name = "qnn.split"
    ATTRS: ClassVar = {"axis": (INT, None)}
    REQUIRED: ClassVar = ("axis",)
    N_RESULTS: ClassVar = None

    def verify_op(self):
        s = shape_of(self.operands[0])
        axis = self.attr("axis") % len(s)
        total = 0
        for i, r in enumerate(self.results):
            rs = shape_of(r)
            if len(rs) != len(s) or any(rs[d] != s[d] for d in range(len(s)) if d != axis):
                self.fail(f"result {i} shape {list(rs)} does not fit a split of {list(s)} on axis {axis}")
            total += rs[axis]
            a, b = self.in_q(0), qtype(r)
            if a != b:
                self.fail(f"result {i} must have the input's quantization parameters")
        if total != s[axis]:
            self.fail(f"result sizes on axis {axis} add to {total}, not {s[axis]}")


@irdl_op_definition
class ConcatenationOp(QnnOp):
    """Concatenate along `axis`; all inputs share the result's parameters (TFLite int8)."""

    name = "qnn.concatenation"
    ATTRS: ClassVar = {"axis": (INT, None), **KNOB_ATTRS}
    REQUIRED: ClassVar = ("axis",)
    N_OPERANDS: ClassVar = None

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
            self.require_per_tensor(i)
        self.require_result_shape([total if d == axis else s0[d] for d in range(len(s0))])


@irdl_op_definition
class GatherOp(QnnOp):
    """Gather slices of `params` along `axis` at integer `indices`.

    With `batch_dims = b` (default 0) the first b dimensions of `params` and
    `indices` are shared batch dimensions (b <= axis): for every batch index
    `n`, `result[n, o, i, r] = params[n, o, indices[n, i], r]` (TFLite GATHER,
    tf.gather); the result shape is params[:axis] + indices[b:] + params[axis+1:].
    """

    name = "qnn.gather"
    ATTRS: ClassVar = {"axis": (INT, None), "batch_dims": (INT, None)}
    OPERAND_NAMES: ClassVar = ("params", "indices")
    N_OPERANDS: ClassVar = 2
    QUANTIZED_OPERANDS: ClassVar = (0,)

    def verify_op(self):
        self.require_same_params(0)
        s = shape_of(self.operands[0])
        idx = shape_of(self.operands[1])
        axis = self.attr("axis", 0) % len(s)
        t = self.operands[1].type
        if not (isinstance(t, TensorType) and isinstance(t.element_type, IntegerType)):
            self.fail(f"operand 1 (indices) type {t} must be an integer tensor")
        b = self.attr("batch_dims", 0)
        if not 0 <= b <= min(axis, len(idx)):
            self.fail(f"batch_dims {b} must be in [0, {min(axis, len(idx))}] (at most axis {axis} "
                      f"and the indices rank {len(idx)})")
        if list(s[:b]) != list(idx[:b]):
            self.fail(f"batch_dims {b}: params batch dims {list(s[:b])} differ from "
                      f"indices batch dims {list(idx[:b])}")
        self.require_result_shape([*s[:axis], *idx[b:], *s[axis + 1 :]])


class _ResizeOp(_MoveOp):
    ATTRS: ClassVar = {"align_corners": (BOOL, None), "half_pixel_centers": (BOOL, None)}

    def verify_shape(self):
        self.require_rank(0, 4)
        n, _, _, c = shape_of(self.operands[0])
        r = shape_of(self.results[0])
        if len(r) != 4 or r[0] != n or r[3] != c:
            self.fail(f"result shape {list(r)} must be [{n}, H, W, {c}]")


@irdl_op_definition
class ResizeBilinearOp(_ResizeOp):
    """Bilinear resize of NHWC to the result's H, W."""

    name = "qnn.resize_bilinear"


@irdl_op_definition
class ResizeNearestNeighborOp(_ResizeOp):
    """Nearest-neighbour resize of NHWC to the result's H, W."""

    name = "qnn.resize_nearest_neighbor"


@irdl_op_definition
class SpaceToDepthOp(_MoveOp):
    """NHWC space-to-depth with `block_size`."""

    name = "qnn.space_to_depth"
    ATTRS: ClassVar = {"block_size": (INT, None)}
    REQUIRED: ClassVar = ("block_size",)

    def verify_shape(self):
        self.require_rank(0, 4)
        n, h, w, c = shape_of(self.operands[0])
        b = self.attr("block_size")
        if b < 1 or h % b or w % b:
            self.fail(f"block_size {b} does not divide H={h}, W={w}")
        self.require_result_shape([n, h // b, w // b, c * b * b])


@irdl_op_definition
class DepthToSpaceOp(_MoveOp):
    """NHWC depth-to-space with `block_size`."""

    name = "qnn.depth_to_space"
    ATTRS: ClassVar = {"block_size": (INT, None)}
    REQUIRED: ClassVar = ("block_size",)

    def verify_shape(self):
        self.require_rank(0, 4)
        n, h, w, c = shape_of(self.operands[0])
        b = self.attr("block_size")
        if b < 1 or c % (b * b):
            self.fail(f"block_size {b}: {b * b} does not divide C={c}")
        self.require_result_shape([n, h * b, w * b, c // (b * b)])


@irdl_op_definition
class TileOp(_MoveOp):
    """The input repeated `multiples[d]` times along each dimension d (TFLite TILE; stored
    integers copied, operand and result share parameters).  TFLite BROADCAST_TO is
    `qnn.reshape` to the target rank (leading 1s) followed by this op."""

    name = "qnn.tile"
    ATTRS: ClassVar = {"multiples": (INTS, None)}
    REQUIRED: ClassVar = ("multiples",)

    def verify_shape(self):
        s = shape_of(self.operands[0])
        m = self.attr("multiples")
        if len(m) != len(s) or min(m, default=1) < 0:
            self.fail(f"multiples {m} must be one non-negative integer per dimension of {list(s)}")
        self.require_result_shape([d * k for d, k in zip(s, m)])


@irdl_op_definition
class MirrorPadOp(_MoveOp):
    """Pad by mirroring (TFLite MIRROR_PAD): `mode = "reflect"` does not repeat the edge
    element (numpy `reflect`), `"symmetric"` does (numpy `symmetric`).  `paddings` holds
    [before_0, after_0, before_1, after_1, ...], each at most the dimension size minus 1
    (reflect) or the size (symmetric); stored integers are copied."""

    name = "qnn.mirror_pad"
    ATTRS: ClassVar = {"paddings": (INTS, None), "mode": (STR, ("reflect", "symmetric"))}
    REQUIRED: ClassVar = ("paddings", "mode")

    def verify_shape(self):
        s = shape_of(self.operands[0])
        p = self.attr("paddings")
        if len(p) != 2 * len(s):
            self.fail(f"paddings {p} must be 2 ints per dim of {list(s)}")
        offset = 1 if self.attr("mode") == "reflect" else 0
        for d, n in enumerate(s):
            a, b = p[2 * d], p[2 * d + 1]
            if min(a, b) < 0 or max(a, b) > n - offset:
                self.fail(f"paddings {[a, b]} of dimension {d} (size {n}) must be in [0, {n - offset}] "
                          f"in {self.attr('mode')} mode")
        self.require_result_shape([d + p[2 * i] + p[2 * i + 1] for i, d in enumerate(s)])


@irdl_op_definition
class GatherNdOp(QnnOp):
    """`result[i...] = params[indices[i..., 0], ..., indices[i..., k-1]]` with k =
    indices.shape[-1] (TFLite GATHER_ND): result shape indices.shape[:-1] + params.shape[k:].
    Stored integers are copied (params and result share parameters); an index outside its
    dimension is a run-time error (LiteRT's invoke fails)."""

    name = "qnn.gather_nd"
    OPERAND_NAMES: ClassVar = ("params", "indices")
    N_OPERANDS: ClassVar = 2
    QUANTIZED_OPERANDS: ClassVar = (0,)

    def verify_op(self):
        self.require_same_params(0)
        s = shape_of(self.operands[0])
        idx = shape_of(self.operands[1])
        t = self.operands[1].type
        if not (isinstance(t, TensorType) and isinstance(t.element_type, IntegerType)):
            self.fail(f"operand 1 (indices) type {t} must be an integer tensor")
        if len(idx) < 1 or idx[-1] > len(s):
            self.fail(f"operand 1 (indices) shape {list(idx)} must have rank >= 1 and a last dimension "
                      f"of at most the params rank {len(s)}")
        self.require_result_shape([*idx[:-1], *s[idx[-1]:]])


class _ArgOp(QnnOp):
    ATTRS: ClassVar = {"axis": (INT, None)}
    REQUIRED: ClassVar = ("axis",)

    def verify_semantics(self):
        if len(self.operands) != 1 or len(self.results) != 1:
            self.fail("expects one operand and one result")
        for name, attr in self.attributes.items():
            if name not in self.ATTRS:
                self.fail(f"unknown attribute '{name}'")
        if "axis" not in self.attributes:
            self.fail("missing attribute 'axis'")
        q = qtype(self.operands[0])
        if q is None:
            self.fail(f"operand 0 (input) type {self.operands[0].type} is not quantized")
        for p in quantized_tensor_problems(self.operands[0].type):
            self.fail(f"operand 0 (input): {p}")
        s = shape_of(self.operands[0])
        axis = self.attr("axis")
        if not -len(s) <= axis < len(s):
            self.fail(f"axis {axis} is out of range for rank {len(s)}")
        t = self.results[0].type
        if not (isinstance(t, TensorType) and isinstance(t.element_type, IntegerType)
                and t.element_type.width.data in (32, 64)):
            self.fail(f"result type {t} must be an i32 or i64 tensor")
        axis %= len(s)
        self.require_result_shape([d for k, d in enumerate(s) if k != axis])


@irdl_op_definition
class ArgMaxOp(_ArgOp):
    """Index (i32 / i64) of the largest element along `axis`, the first of equal ones (TFLite
    ARG_MAX compares stored integers: the scale is positive, so stored order is real order)."""

    name = "qnn.arg_max"


@irdl_op_definition
class ArgMinOp(_ArgOp):
    """Index (i32 / i64) of the smallest element along `axis`, the first of equal ones."""

    name = "qnn.arg_min"


# ----- graph edges -------------------------------------------------------------------------


@irdl_op_definition
class QuantizeOp(QnnOp):
    """float -> quantized with the rounding knob (TFLite QUANTIZE rounds half away from zero)."""

    name = "qnn.quantize"
    ATTRS: ClassVar = {"rounding": (STR, ROUNDING_PROFILES)}
    QUANTIZED_OPERANDS: ClassVar = ()

    def verify_op(self):
        self.require_result_shape(shape_of(self.operands[0]))


@irdl_op_definition
class DequantizeOp(QnnOp):
    """quantized -> float: scale * (q - zero_point)."""

    name = "qnn.dequantize"

    def verify_semantics(self):
        if len(self.operands) != 1 or len(self.results) != 1:
            self.fail("expects one operand and one result")
        if qtype(self.operands[0]) is None:
            self.fail(f"operand type {self.operands[0].type} is not quantized")
        if shape_of(self.operands[0]) != shape_of(self.results[0]):
            self.fail("operand and result shapes differ")


SIMULATION_MODES = ("quantize", "passthrough")


@irdl_op_definition
class SimulatedQuantizeOp(QnnOp):
    """Quantize-dequantize in float with the parameters of the `qtype` attribute:
    `y = s * (clamp(round(x / s) + z) - z)`, float in, float out, same type.

        %y = qnn.simulated_quantize %x {qtype = !quant.uniform<i8:f32, 0.05:-3>, rounding = "half_even"}
               : (tensor<8xf32>) -> tensor<8xf32>

    - `rounding`: how x / s rounds: `tflite` / `single` / `litert` half away
      from zero (TFLite's QUANTIZE), `half_even` ties to even, `half_up` ties
      toward +inf; clamping is to the type's storage range, as the integer
      path's quantize does.
    - `mode = "passthrough"`: y = x exactly (an observation point that records
      real values without adding error: an interpreter with an `observer`
      callable calls it with (op, values) at every simulated_quantize); `qtype`
      may then be left out.
    - `acc` (`i16`, `i32`, `i64`) with `acc_overflow` (`wrap`, default, or
      `saturate`): the value is an accumulator held at scale s; the integer
      wraps or saturates at that width instead of clamping to the storage
      range, to see an overflow in float before hardware does.
    """

    name = "qnn.simulated_quantize"
    ATTRS: ClassVar = {
        "rounding": (STR, ROUNDING_PROFILES),
        "mode": (STR, SIMULATION_MODES),
        "acc": (STR, ACC_WIDTHS),
        "acc_overflow": (STR, ("wrap", "saturate")),
    }

    @property
    def qtype(self) -> UniformQuantizedType:
        return self.attributes["qtype"]

    def attr(self, name: str, default=None):
        if name == "qtype":
            return self.attributes.get("qtype", default)
        return super().attr(name, default)

    def verify_semantics(self) -> None:
        if len(self.operands) != 1 or len(self.results) != 1:
            self.fail("expects one operand and one result")
        q = self.attributes.get("qtype")
        mode = self.attributes.get("mode")
        if q is None and isinstance(mode, StringAttr) and mode.data == "passthrough":
            pass  # an observation point needs no parameters
        elif not isinstance(q, UniformQuantizedType):
            self.fail(f"attribute 'qtype' must be a !quant.uniform type, got {q}")
        else:
            for p in q.problems():
                self.fail(f"qtype: {p}")
        for name, attr in self.attributes.items():
            if name == "qtype":
                continue
            if name not in self.ATTRS:
                self.fail(f"unknown attribute '{name}'")
            kind, allowed = self.ATTRS[name]
            try:
                value = _read_attr(attr, kind)
            except TypeError:
                self.fail(f"attribute '{name}' must be {_KIND_SPELLING[kind]}, got {attr}")
            if allowed is not None and value not in allowed:
                self.fail(f"attribute '{name}' is '{value}', expected one of {', '.join(allowed)}")
        if "acc_overflow" in self.attributes and "acc" not in self.attributes:
            self.fail("acc_overflow needs acc")
        x, y = self.operands[0].type, self.results[0].type
        if not isinstance(x, TensorType) or qtype(self.operands[0]) is not None or isinstance(
            x.element_type, IntegerType
        ):
            self.fail(f"operand type {x} must be a float tensor")
        if x != y:
            self.fail(f"result type {y} differs from the operand type {x}")
        if q is not None and q.is_per_axis:
            shape = shape_of(self.operands[0])
            if not 0 <= q.axis < len(shape) or shape[q.axis] != len(q.scale_array()):
                self.fail(f"qtype has {len(q.scale_array())} scales on axis {q.axis}, operand shape is {list(shape)}")


# ----- composites ----------------------------------------------------------------------

LAYER_NORM_SPELLINGS = ("tflite", "tflite_hand", "onnx", "onnx_hand")
"""The chains `qnn.layer_norm` is raised from (transforms/raise_layer_norm.py):
`tflite`: Keras LayerNormalization as TFLite's int8 converter writes it (MEAN, SQUARED_DIFFERENCE,
MEAN, ADD eps, RSQRT, MUL gamma, the float NEG island of the mean, MUL, ADD beta, MUL, ADD);
`tflite_hand`: `d = x - mean; d * (rsqrt(mean(d * d) + eps) * gamma) [+ beta]` op by op (16x8);
`onnx`: ONNX LayerNormalization between DequantizeLinear and QuantizeLinear (run in float);
`onnx_hand`: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta, quantized op by op."""


@irdl_op_definition
class LayerNormOp(IRDLOperation):
    """Layer normalization over one axis as one op, with the exact integer semantics of the chain
    it was raised from: its body is that chain (constants included), and running or lowering the
    op is running or inlining the body.  A partition target or a fast kernel takes the op whole and
    reads what it needs from the attributes and the body's types.

        %y = qnn.layer_norm %x {axis = 2 : i64, epsilon = 1.0e-03 : f64, spelling = "tflite"}
               : (tensor<1x49x32x!quant.uniform<i8:f32, ...>>) -> tensor<1x49x32x!quant.uniform<i8:f32, ...>> {
        ^bb0(%a: tensor<1x49x32x!quant.uniform<i8:f32, ...>>):
          ...the chain...
          qnn.yield %out : tensor<1x49x32x!quant.uniform<i8:f32, ...>>
        }

    - `axis`: the normalized axis (non-negative; means and the variance reduce it alone);
    - `epsilon`: the real value the chain adds to the variance (the stored constant's value);
    - `spelling`: which chain the body is (`LAYER_NORM_SPELLINGS`).
    The body reads nothing from outside (isolated from above): gamma, beta and epsilon are
    constants inside it; the one block argument is the input.
    """

    name = "qnn.layer_norm"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = attr_def(IntegerAttr)
    epsilon = attr_def(FloatAttr)
    spelling = attr_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(Pure(), IsolatedFromAbove())
    assembly_format = "$input attr-dict `:` functional-type($input, $output) $body"

    def __init__(self, input: SSAValue, result_type: Attribute, axis: int, epsilon: float, spelling: str, body):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            attributes={
                "axis": IntegerAttr(axis, i64),
                "epsilon": FloatAttr(float(epsilon), 64),
                "spelling": StringAttr(spelling),
            },
            regions=[body],
        )

    def fail(self, message: str):
        raise VerifyException(f"{self.name}: {message}")

    def verify_(self) -> None:
        x, y = self.input, self.output
        for what, v in (("input", x), ("result", y)):
            q = qtype(v)
            if q is None:
                self.fail(f"{what} type {v.type} is not a quantized tensor")
            if q.is_per_axis:
                self.fail(f"{what} must be quantized per tensor")
        if shape_of(x) != shape_of(y):
            self.fail(f"input shape {list(shape_of(x))} and result shape {list(shape_of(y))} differ")
        rank = len(shape_of(x))
        axis = self.axis.value.data
        if not 0 <= axis < rank:
            self.fail(f"axis {axis} is outside [0, {rank}) for a rank-{rank} input")
        if self.spelling.data not in LAYER_NORM_SPELLINGS:
            self.fail(f"spelling '{self.spelling.data}' is not one of {', '.join(LAYER_NORM_SPELLINGS)}")
        eps = self.epsilon.value.data
        if not (math.isfinite(eps) and eps >= 0):
            self.fail(f"epsilon {eps} is not a finite non-negative number")
        block = self.body.block
        if len(block.args) != 1 or block.args[0].type != x.type:
            self.fail(f"the body must take one argument of the input type {x.type}")
        last = block.last_op
        if not isinstance(last, YieldOp) or len(last.operands) != 1:
            self.fail("the body must end in qnn.yield of one value")
        if last.operands[0].type != y.type:
            self.fail(f"the body yields {last.operands[0].type}, the result is {y.type}")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The value a composite op's body (`qnn.layer_norm`) computes."""

    name = "qnn.yield"
    value = operand_def()
    traits = traits_def(IsTerminator(), HasParent(LayerNormOp), Pure())
    assembly_format = "$value attr-dict `:` type($value)"

    def __init__(self, value: SSAValue):
        super().__init__(operands=[value])


QNN_OPS = [
    HardSigmoidOp,
    ConstantOp,
    Conv2DOp,
    DepthwiseConv2DOp,
    TransposeConv2DOp,
    FullyConnectedOp,
    BatchMatmulOp,
    AddOp,
    SubOp,
    MulOp,
    DivOp,
    SquaredDifferenceOp,
    MaximumOp,
    MinimumOp,
    PReluOp,
    RequantizeOp,
    ClampOp,
    LogisticOp,
    TanhOp,
    SoftmaxOp,
    LogSoftmaxOp,
    HardSwishOp,
    LeakyReluOp,
    EluOp,
    GeluOp,
    ExpOp,
    RsqrtOp,
    SqrtOp,
    AbsOp,
    NegOp,
    L2NormalizationOp,
    AvgPool2DOp,
    MaxPool2DOp,
    MeanOp,
    SumOp,
    ReduceMaxOp,
    ReduceMinOp,
    ReshapeOp,
    TransposeOp,
    PadOp,
    SliceOp,
    SplitOp,
    ConcatenationOp,
    GatherOp,
    ResizeBilinearOp,
    ResizeNearestNeighborOp,
    SpaceToDepthOp,
    DepthToSpaceOp,
    TileOp,
    MirrorPadOp,
    GatherNdOp,
    ArgMaxOp,
    ArgMinOp,
    QuantizeOp,
    DequantizeOp,
    SimulatedQuantizeOp,
    LayerNormOp,
    YieldOp,
]

QNN = Dialect("qnn", QNN_OPS, [])


def set_rounding(module: Operation, profile: str) -> None:
    """Set the `rounding` knob of every op that has one (what `--rounding` does)."""
    if profile not in ROUNDING_PROFILES:
        raise VerifyException(f"rounding profile '{profile}' is not one of {', '.join(ROUNDING_PROFILES)}")
    for op in module.walk():
        if isinstance(op, QnnOp) and "rounding" in op.ATTRS:
            op.attributes["rounding"] = StringAttr(profile)
