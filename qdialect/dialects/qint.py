"""The `qint` dialect (layer L2): integer primitives on storage integers.

`qnn-decompose` turns every canonical `qnn` op into these ops.  Values are
plain signless integer tensors holding stored integers (an unsigned storage
type such as u8 travels as i8 bits; the ops that read it say so with
`input_unsigned` / `unsigned`).  Zero points, multipliers and clamps are
explicit attributes; nothing depends on a `!quant.uniform` type any more.

Arithmetic is exact (conceptually in unbounded integers) and then wrapped to
the result's width, two's complement, unless an op says otherwise.  The one
requantization primitive is `qint.rescale`:

    v   = x - input_zp                       (x sign- or zero-extended)
    v   = v << left_shift                    (wrapping in max(32, width(x)) bits)
    r   = apply(v)                           one of the `mode`s below, per channel
    out = trunc(clamp(r + output_zp, clamp_min, clamp_max))

| mode           | apply(v) (M = multiplier, s = shift, f = scale)                     |
|----------------|---------------------------------------------------------------------|
| `double_round` | TFLite MultiplyByQuantizedMultiplier on int32: RDBPOT(SRDHM(v << max(s,0), M), max(-s,0)) |
| `single_round` | (v * M + 2^(30-s)) >> (31-s)   (TFLITE_SINGLE_ROUNDING, TOSA SINGLE_ROUND) |
| `wide_round`   | TFLite's int64 MultiplyByQuantizedMultiplier: M cut to 16 bits, one rounding, wrapped to int32 |
| `float_even`   | rint(float32(v) * float32(f)), ties to even (XNNPACK, ONNX Runtime); with `offset` o: rint(float32(float32(v) * f) + float32(o)) (XNNPACK's reduce, zero points folded into o) |
| `float_away`   | round(float64(v) * f), ties away from zero (TFLite FC reference)      |
| `none`         | v                                                                   |

Per-channel parameters (`multiplier`/`shift`/`scale` with more than one entry)
index the dimension `axis` (default: the last).

Syntax of every op:

    %r = qint.rescale %acc {mode = "double_round", multiplier = array<i64: 1272468866>,
                            shift = array<i64: -8>, output_zp = -128 : i64,
                            clamp_min = -128 : i64, clamp_max = 127 : i64}
         : (tensor<1x8x8x16xi32>) -> tensor<1x8x8x16xi8>
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f64,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, traits_def, var_operand_def, var_result_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qdialect.dialects.qnn import window_attr

INTS, FLOATS, INT, STR, BOOL = "ints", "floats", "int", "str", "bool"

RESCALE_MODES = ("double_round", "single_round", "wide_round", "float_even", "float_away", "none")
DIVIDE_ROUNDINGS = ("away", "half_up", "half_even")
_KIND_SPELLING = {
    INTS: "array<i64: ...>",
    FLOATS: "array<f64: ...>",
    INT: "an integer",
    STR: "a string",
    BOOL: "true/false",
}


_MADE: dict[tuple, Attribute] = {}


def make_attr(kind: str, value) -> Attribute:
    """The attribute of `kind` holding `value`; equal values share one (immutable) attribute,
    since building and verifying one costs more than the rest of an op."""
    if kind == INTS:
        key = (kind, tuple(map(int, value)))
    elif kind == FLOATS:  # by the exact bits (0.0 and -0.0, NaN payloads)
        floats = [float(v) for v in value]
        key = (kind, struct.pack(f"<{len(floats)}d", *floats))
    elif kind == INT:
        key = (kind, int(value))
    elif kind == BOOL:
        key = (kind, bool(value))
    else:
        key = (kind, str(value))
    attr = _MADE.get(key)
    if attr is None:
        if len(_MADE) >= 4096:
            _MADE.clear()
        attr = _MADE[key] = _make_attr(kind, value)
    return attr


def _make_attr(kind: str, value) -> Attribute:
    if kind == INTS:
        return DenseArrayBase.from_list(i64, [int(v) for v in value])
    if kind == FLOATS:
        return DenseArrayBase.from_list(f64, [float(v) for v in value])
    if kind == INT:
        return IntegerAttr(int(value), 64)
    if kind == STR:
        return StringAttr(str(value))
    if kind == BOOL:
        return IntegerAttr(1 if value else 0, 1)
    raise ValueError(kind)


_I1 = IntegerType(1)
_READ: dict[int, tuple] = {}  # id(attr) -> (attr, kind, value); holding attr keeps its id unique


def read_attr(attr: Attribute, kind: str):
    """The Python value of a qint attribute of `kind` (lists are fresh copies); TypeError
    if it is not one.  Remembered per attribute object: passes read the same
    attributes many times, and decoding an array is the bulk of it."""
    hit = _READ.get(id(attr))
    if hit is not None and hit[0] is attr and hit[1] == kind:
        value = hit[2]
        return list(value) if isinstance(value, list) else value
    value = _read_attr(attr, kind)
    if len(_READ) >= 4096:
        _READ.clear()
    _READ[id(attr)] = (attr, kind, value)
    return list(value) if isinstance(value, list) else value


def _read_attr(attr: Attribute, kind: str):
    if kind in (INTS, FLOATS) and isinstance(attr, DenseArrayBase):
        values = list(attr.get_values())
        if (kind == INTS) == isinstance(attr.elt_type, IntegerType):
            return values
    if kind == INT and isinstance(attr, IntegerAttr) and attr.type != _I1:
        return int(attr.value.data)
    if kind == STR and isinstance(attr, StringAttr):
        return attr.data
    if kind == BOOL and isinstance(attr, IntegerAttr) and attr.type == _I1:
        return bool(attr.value.data)
    if kind == FLOATS and isinstance(attr, FloatAttr):
        return [float(attr.value.data)]
    raise TypeError


def int_width(value: SSAValue) -> int | None:
    """Bit width of an integer (tensor) value, else None."""
    t = value.type
    el = t.element_type if isinstance(t, TensorType) else t
    return el.width.data if isinstance(el, IntegerType) else None


def shape_of(value: SSAValue) -> tuple[int, ...]:
    t = value.type
    return tuple(t.get_shape()) if isinstance(t, TensorType) else ()


def signed_range(width: int) -> tuple[int, int]:
    return -(1 << (width - 1)), (1 << (width - 1)) - 1


class QIntOp(IRDLOperation):
    """Common syntax and attribute checking of qint ops.

    Subclasses declare `ATTRS` (name -> (kind, allowed values or None)),
    `REQUIRED`, `N_OPERANDS` / `N_RESULTS` (None: variadic).
    """

    ATTRS: ClassVar[dict] = {}
    REQUIRED: ClassVar[tuple[str, ...]] = ()
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
        # what IRDLOperation's builder makes of the one variadic operand list and the one
        # variadic result list (no segment sizes), without its generic conversions
        Operation.__init__(self, operands=[SSAValue.get(o) for o in operands], result_types=list(result_types),
                           attributes=attrs)

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

    def attr(self, name: str, default=None):
        if name not in self.attributes:
            return default
        return read_attr(self.attributes[name], self.ATTRS[name][0])

    def fail(self, message: str):
        raise VerifyException(f"{self.name}: {message}")

    def verify_(self) -> None:
        if self.N_OPERANDS is not None and len(self.operands) != self.N_OPERANDS:
            self.fail(f"expects {self.N_OPERANDS} operands, got {len(self.operands)}")
        if self.N_RESULTS is not None and len(self.results) != self.N_RESULTS:
            self.fail(f"expects {self.N_RESULTS} results, got {len(self.results)}")
        for name, attr in self.attributes.items():
            if name not in self.ATTRS:
                self.fail(f"unknown attribute '{name}'")
            kind, allowed = self.ATTRS[name]
            try:
                value = read_attr(attr, kind)
            except TypeError:
                self.fail(f"attribute '{name}' must be {_KIND_SPELLING[kind]}, got {attr}")
            if allowed is not None and value not in allowed:
                self.fail(f"attribute '{name}' is '{value}', expected one of {', '.join(allowed)}")
        for name in self.REQUIRED:
            if name not in self.attributes:
                self.fail(f"missing attribute '{name}'")
        for i, v in enumerate(self.operands):
            if int_width(v) is None or not isinstance(v.type, TensorType):
                self.fail(f"operand {i} type {v.type} is not an integer tensor")
        for i, r in enumerate(self.results):
            if int_width(r) is None or not isinstance(r.type, TensorType):
                self.fail(f"result {i} type {r.type} is not an integer tensor")
        self.verify_op()

    def verify_op(self) -> None:
        """Op-specific rules."""

    def require_result_shape(self, expected: Sequence[int], i: int = 0):
        got = shape_of(self.results[i])
        if tuple(got) != tuple(expected):
            self.fail(f"result {i} shape {list(got)} does not match the expected {list(expected)}")


def _window_out(size: int, kernel: int, stride: int, dilation: int, before: int, after: int) -> int:
    return (size + before + after - ((kernel - 1) * dilation + 1)) // stride + 1


# ----- accumulating ops -----------------------------------------------------------------------

CONV_ATTRS = {
    "input_zp": (INT, None),
    "weight_zp": (INT, None),
    "strides": (INTS, None),
    "dilations": (INTS, None),
    "padding": (INTS, None),
}


class _ConvOp(QIntOp):
    ATTRS: ClassVar = CONV_ATTRS
    N_OPERANDS: ClassVar = 2

    def window(self):
        sh, sw = window_attr(self, "strides")
        dh, dw = window_attr(self, "dilations")
        pt, pb, pl, pr = window_attr(self, "padding")
        return (sh, sw), (dh, dw), (pt, pb, pl, pr)

    def out_hw(self, h, w, kh, kw):
        (sh, sw), (dh, dw), (pt, pb, pl, pr) = self.window()
        return _window_out(h, kh, sh, dh, pt, pb), _window_out(w, kw, sw, dw, pl, pr)


@irdl_op_definition
class Conv2DOp(_ConvOp):
    """Integer 2-D convolution: NHWC input, OHWI weights, accumulator result.

    `acc[n,y,x,o] = sum_{ky,kx,i} (in[n, y*sh - pt + ky*dh, x*sw - pl + kx*dw, i] - input_zp)
    * (w[o,ky,kx,i] - weight_zp)`; taps outside the input contribute 0 (the
    input is padded with its zero point).  Exact, then wrapped to the result
    width (i16 / i32 / i64 accumulators).
    """

    name = "qint.conv2d"

    def verify_op(self):
        n, h, w, c = shape_of(self.operands[0])
        o, kh, kw, ci = shape_of(self.operands[1])
        if ci != c:
            self.fail(f"weights have {ci} input channels but the input has {c}")
        self.require_result_shape([n, *self.out_hw(h, w, kh, kw), o])


@irdl_op_definition
class DepthwiseConv2DOp(_ConvOp):
    """Integer depthwise convolution: NHWC input, weights [1, KH, KW, C*M].

    Output channel `c*M + m` is input channel c convolved with weights[..., c*M + m],
    zero points subtracted as in `qint.conv2d`.
    """

    name = "qint.depthwise_conv2d"

    def verify_op(self):
        n, h, w, c = shape_of(self.operands[0])
        one, kh, kw, oc = shape_of(self.operands[1])
        if one != 1 or oc % c:
            self.fail(f"weights shape {[one, kh, kw, oc]} must be [1, KH, KW, C*M] with C={c}")
        self.require_result_shape([n, *self.out_hw(h, w, kh, kw), oc])


@irdl_op_definition
class FullyConnectedOp(QIntOp):
    """`acc[b,o] = sum_k (in[b,k] - input_zp) * (w[o,k] - weight_zp)`, weights [out, in]."""

    name = "qint.fully_connected"
    ATTRS: ClassVar = {"input_zp": (INT, None), "weight_zp": (INT, None)}
    N_OPERANDS: ClassVar = 2

    def verify_op(self):
        b, k = shape_of(self.operands[0]) if len(shape_of(self.operands[0])) == 2 else (None, None)
        if b is None:
            self.fail("input must have rank 2")
        o, k2 = shape_of(self.operands[1])
        if k != k2:
            self.fail(f"input has {k} features but the weights expect {k2}")
        self.require_result_shape([b, o])


@irdl_op_definition
class BatchMatmulOp(QIntOp):
    """`acc[..., i, j] = sum_k (lhs[..., i, k] - lhs_zp) * (rhs[..., k, j] - rhs_zp)` with
    numpy batch broadcasting (operands already transposed as needed)."""

    name = "qint.batch_matmul"
    ATTRS: ClassVar = {"lhs_zp": (INT, None), "rhs_zp": (INT, None)}
    N_OPERANDS: ClassVar = 2

    def verify_op(self):
        a, b = shape_of(self.operands[0]), shape_of(self.operands[1])
        if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
            self.fail(f"operand shapes {list(a)} and {list(b)} do not multiply")


@irdl_op_definition
class BiasAddOp(QIntOp):
    """`acc + bias` with bias [C] broadcast along the last dimension, the bias
    sign-extended or truncated to the accumulator width; wraps."""

    name = "qint.bias_add"
    N_OPERANDS: ClassVar = 2

    def verify_op(self):
        s = shape_of(self.operands[0])
        if shape_of(self.operands[1]) != (s[-1],):
            self.fail(f"bias shape {list(shape_of(self.operands[1]))} must be [{s[-1]}]")
        self.require_result_shape(s)
        if int_width(self.results[0]) != int_width(self.operands[0]):
            self.fail("result and accumulator must have the same type")


# ----- the rescale primitive ------------------------------------------------------------------


@irdl_op_definition
class RescaleOp(QIntOp):
    """Requantization: zero points, a real multiplier applied per `mode`, clamp, truncate.

    See the module docstring for the formula.  Integer modes take `multiplier`
    and `shift` (TFLite's Q31 multiplier and exponent), float modes `scale`.
    """

    name = "qint.rescale"
    ATTRS: ClassVar = {
        "mode": (STR, RESCALE_MODES),
        "multiplier": (INTS, None),
        "shift": (INTS, None),
        "scale": (FLOATS, None),
        "offset": (FLOATS, None),
        "axis": (INT, None),
        "input_zp": (INT, None),
        "left_shift": (INT, None),
        "output_zp": (INT, None),
        "clamp_min": (INT, None),
        "clamp_max": (INT, None),
        "input_unsigned": (BOOL, None),
    }
    REQUIRED: ClassVar = ("mode",)

    @property
    def mode(self) -> str:
        return self.attr("mode")

    def channels(self) -> int:
        key = "scale" if self.mode.startswith("float") else "multiplier"
        return len(self.attr(key, [0]))

    def rescale_axis(self) -> int:
        rank = len(shape_of(self.operands[0]))
        return self.attr("axis", rank - 1) % max(rank, 1)

    def bounds(self) -> tuple[int, int]:
        lo, hi = signed_range(int_width(self.results[0]))
        return self.attr("clamp_min", lo), self.attr("clamp_max", hi)

    def verify_op(self):
        self.require_result_shape(shape_of(self.operands[0]))
        mode = self.mode
        if mode in ("double_round", "single_round", "wide_round"):
            m, s = self.attr("multiplier"), self.attr("shift")
            if m is None or s is None or len(m) != len(s) or not m:
                self.fail(f"mode '{mode}' needs 'multiplier' and 'shift' arrays of one length")
            if "scale" in self.attributes:
                self.fail(f"mode '{mode}' takes no 'scale'")
            if mode != "wide_round" and int_width(self.operands[0]) > 32:
                self.fail(f"mode '{mode}' works on values of at most 32 bits, got i{int_width(self.operands[0])}")
            for v in m:
                if not 0 <= v < (1 << 31):
                    self.fail(f"multiplier {v} is outside [0, 2^31)")
            for v in s:
                if not -62 <= v <= 30:
                    self.fail(f"shift {v} is outside [-62, 30]")
        elif mode in ("float_even", "float_away"):
            if not self.attr("scale"):
                self.fail(f"mode '{mode}' needs a 'scale' array")
            if "multiplier" in self.attributes or "shift" in self.attributes:
                self.fail(f"mode '{mode}' takes no 'multiplier'/'shift'")
        elif any(k in self.attributes for k in ("multiplier", "shift", "scale")):
            self.fail("mode 'none' takes no multiplier, shift or scale")
        if "offset" in self.attributes:
            if mode != "float_even":
                self.fail(f"'offset' is only for mode 'float_even', not '{mode}'")
            if len(self.attr("offset")) != 1 or len(self.attr("scale")) != 1:
                self.fail("'offset' needs one per-tensor 'scale' and one offset value")
        n = self.channels()
        shape = shape_of(self.operands[0])
        if n > 1:
            if not shape or shape[self.rescale_axis()] != n:
                self.fail(f"{n} per-channel parameters do not match dimension {self.rescale_axis()} of {list(shape)}")
        lo, hi = signed_range(int_width(self.results[0]))
        cmin, cmax = self.bounds()
        # unsigned storage keeps its values in [0, 2^w - 1]; the result holds their bits
        if not (lo <= cmin <= cmax <= max(hi, 2 * hi + 1)):
            self.fail(f"clamp bounds [{cmin}, {cmax}] do not fit i{int_width(self.results[0])}")
        if not 0 <= self.attr("left_shift", 0) < 32:
            self.fail(f"left_shift {self.attr('left_shift')} is outside [0, 32)")


# ----- elementwise ----------------------------------------------------------------------------


def _broadcast(a: Sequence[int], b: Sequence[int]) -> list[int] | None:
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(y if x == 1 else x)
    return out[::-1]


class _BinaryOp(QIntOp):
    ATTRS: ClassVar = {"lhs_zp": (INT, None), "rhs_zp": (INT, None)}
    N_OPERANDS: ClassVar = 2

    def verify_op(self):
        out = _broadcast(shape_of(self.operands[0]), shape_of(self.operands[1]))
        if out is None:
            self.fail("operand shapes do not broadcast")
        self.require_result_shape(out)


@irdl_op_definition
class AddOp(_BinaryOp):
    """`(lhs - lhs_zp) + (rhs - rhs_zp)`, broadcasting, wrapped to the result width."""

    name = "qint.add"


@irdl_op_definition
class SubOp(_BinaryOp):
    """`(lhs - lhs_zp) - (rhs - rhs_zp)`, broadcasting, wrapped to the result width."""

    name = "qint.sub"


@irdl_op_definition
class MulOp(_BinaryOp):
    """`(lhs - lhs_zp) * (rhs - rhs_zp)`, broadcasting, wrapped to the result width."""

    name = "qint.mul"


@irdl_op_definition
class ScaledAddOp(QIntOp):
    """XNNPACK's qs8/qu8 add in one rounding (LiteRT's default path for ADD / SUB):

        acc = wrap32(bias + lhs * lhs_multiplier + rhs * rhs_multiplier)
        out = trunc(clamp((acc >> shift) + output_zp, clamp_min, clamp_max))

    on the stored integers (read as unsigned when `unsigned`), broadcasting;
    `>>` is arithmetic.  The input zero points and the rounding constant are
    folded into `bias` (= 2^(shift-1) - lhs_multiplier * lhs_zp -
    rhs_multiplier * rhs_zp, wrapped to 32 bits); SUB negates
    `rhs_multiplier`.
    """

    name = "qint.scaled_add"
    ATTRS: ClassVar = {
        "lhs_multiplier": (INT, None),
        "rhs_multiplier": (INT, None),
        "bias": (INT, None),
        "shift": (INT, None),
        "output_zp": (INT, None),
        "clamp_min": (INT, None),
        "clamp_max": (INT, None),
        "unsigned": (BOOL, None),
    }
    REQUIRED: ClassVar = ("lhs_multiplier", "rhs_multiplier", "bias", "shift")
    N_OPERANDS: ClassVar = 2

    def bounds(self) -> tuple[int, int]:
        lo, hi = signed_range(int_width(self.results[0]))
        return self.attr("clamp_min", lo), self.attr("clamp_max", hi)

    def verify_op(self):
        out = _broadcast(shape_of(self.operands[0]), shape_of(self.operands[1]))
        if out is None:
            self.fail("operand shapes do not broadcast")
        self.require_result_shape(out)
        for i, v in enumerate(self.operands):
            if int_width(v) > 16:
                self.fail(f"operand {i} must be at most 16 bits wide, got i{int_width(v)}")
        if not 1 <= self.attr("shift") <= 31:
            self.fail(f"shift {self.attr('shift')} is outside [1, 31]")
        for name in ("lhs_multiplier", "rhs_multiplier", "bias"):
            if not -(1 << 31) <= self.attr(name) < (1 << 31):
                self.fail(f"{name} {self.attr(name)} does not fit 32 bits")
        lo, hi = signed_range(int_width(self.results[0]))
        cmin, cmax = self.bounds()
        if not (lo <= cmin <= cmax <= max(hi, 2 * hi + 1)):
            self.fail(f"clamp bounds [{cmin}, {cmax}] do not fit i{int_width(self.results[0])}")


class _ExtremumOp(_BinaryOp):
    ATTRS: ClassVar = {}

    def verify_op(self):
        super().verify_op()
        if not int_width(self.operands[0]) == int_width(self.operands[1]) == int_width(self.results[0]):
            self.fail("operands and result must have one integer type")


@irdl_op_definition
class MaximumOp(_ExtremumOp):
    """Elementwise signed maximum, broadcasting."""

    name = "qint.maximum"


@irdl_op_definition
class MinimumOp(_ExtremumOp):
    """Elementwise signed minimum, broadcasting."""

    name = "qint.minimum"


@irdl_op_definition
class TableOp(QIntOp):
    """Look every element up in a 1-D table: `table[x - type_min]` (signed) or
    `table[x]` (`unsigned`, x read as unsigned).  The table has 2^width(x)
    entries; it is computed at compile time from the reference semantics."""

    name = "qint.table"
    ATTRS: ClassVar = {"unsigned": (BOOL, None)}
    N_OPERANDS: ClassVar = 2

    def verify_op(self):
        w = int_width(self.operands[0])
        if w > 16:
            self.fail(f"input of i{w} is too wide for a table")
        if shape_of(self.operands[1]) != (1 << w,):
            self.fail(f"table shape {list(shape_of(self.operands[1]))} must be [{1 << w}] for i{w} input")
        if int_width(self.operands[1]) != int_width(self.results[0]):
            self.fail("table and result element types differ")
        self.require_result_shape(shape_of(self.operands[0]))


# ----- pools and reductions -------------------------------------------------------------------

POOL_ATTRS = {"kernel": (INTS, None), "strides": (INTS, None), "padding": (INTS, None)}


class _PoolOp(QIntOp):
    ATTRS: ClassVar = POOL_ATTRS
    REQUIRED: ClassVar = ("kernel",)

    def verify_op(self):
        n, h, w, c = shape_of(self.operands[0])
        kh, kw = window_attr(self, "kernel")
        sh, sw = window_attr(self, "strides")
        pt, pb, pl, pr = window_attr(self, "padding")
        if max(pt, pb) >= kh or max(pl, pr) >= kw:
            self.fail("padding must be smaller than the window (a window would lie in the padding)")
        self.require_result_shape([n, _window_out(h, kh, sh, 1, pt, pb), _window_out(w, kw, sw, 1, pl, pr), c])


@irdl_op_definition
class PoolSumOp(_PoolOp):
    """Sum of each NHWC window's in-bounds values (padding contributes nothing); wraps."""

    name = "qint.pool_sum"


@irdl_op_definition
class PoolMaxOp(_PoolOp):
    """Signed maximum of each NHWC window's in-bounds values."""

    name = "qint.pool_max"

    def verify_op(self):
        super().verify_op()
        if int_width(self.operands[0]) != int_width(self.results[0]):
            self.fail("operand and result must have one integer type")


@irdl_op_definition
class DivideRoundOp(QIntOp):
    """`x / d` rounded (`away`: ties away from zero, TFLite's average pool;
    `half_up`: ties toward +inf; `half_even`), d > 0 broadcast against x."""

    name = "qint.divide_round"
    ATTRS: ClassVar = {"rounding": (STR, DIVIDE_ROUNDINGS)}
    N_OPERANDS: ClassVar = 2

    def verify_op(self):
        if _broadcast(shape_of(self.operands[0]), shape_of(self.operands[1])) != list(shape_of(self.operands[0])):
            self.fail("divisor must broadcast to the dividend's shape")
        self.require_result_shape(shape_of(self.operands[0]))


class _ReduceOp(QIntOp):
    ATTRS: ClassVar = {"axes": (INTS, None), "keep_dims": (BOOL, None)}
    REQUIRED: ClassVar = ("axes",)

    def reduced_axes(self) -> list[int]:
        rank = len(shape_of(self.operands[0]))
        return sorted({a % rank for a in self.attr("axes")})

    def verify_op(self):
        s = shape_of(self.operands[0])
        for a in self.attr("axes"):
            if not -len(s) <= a < len(s):
                self.fail(f"axis {a} is out of range for rank {len(s)}")
        axes = self.reduced_axes()
        keep = self.attr("keep_dims", False)
        self.require_result_shape(
            [1 if i in axes else d for i, d in enumerate(s)] if keep else [d for i, d in enumerate(s) if i not in axes]
        )


@irdl_op_definition
class ReduceSumOp(_ReduceOp):
    """Sum over `axes`, wrapped to the result width."""

    name = "qint.reduce_sum"


@irdl_op_definition
class ReduceMaxOp(_ReduceOp):
    """Signed maximum over `axes`."""

    name = "qint.reduce_max"


@irdl_op_definition
class ReduceMinOp(_ReduceOp):
    """Signed minimum over `axes`."""

    name = "qint.reduce_min"


# ----- recipes that are not one primitive --------------------------------------------------------


@irdl_op_definition
class SoftmaxOp(QIntOp):
    """TFLite's integer softmax over the last axis, carried as one recipe.

    8-bit input (gemmlowp fixed point, reference_ops::Softmax): with
    `d = x - max(row)`, entries with `d < diff_min` give the result type's
    minimum; the others rescale d into Q5.26 with `input_multiplier` /
    `input_shift` (MultiplyByQuantizedMultiplierGreaterThanOne; one rounding
    when `mode = "single_round"`), take exp_on_negative_values, sum in Q12.19,
    GetReciprocal, and give `RDBPOT(SRDHM(recip, exp), bits_over_unit + 31 -
    out_bits) + type_min`, saturated.

    16-bit input (reference_ops::SoftmaxInt16): `d` rescaled by
    `input_multiplier` / `input_shift` (MultiplyByQuantizedMultiplier) and
    offset by 32767 into TFLite's exp LUT (513 entries on [-10, 0]); the sum's
    reciprocal through the 1/(1+x) LUT; result in [0, 32767].

    8-bit input with `mode = "float_away"` / `"float_even"`
    (optimized_ops::Softmax, LiteRT's default path): a float32 table
    `expf(float32(-input_scale * beta) * d)` indexed by `d = max(row) - x`, a
    sequential float32 row sum, `inv = 1 / (sum * output_scale)`, `round(e *
    inv) + output_zp` (ties away from zero, or to even), saturated to the
    result type; takes `input_scale`, `beta`, `output_scale`, `output_zp`.

    8-bit input with `mode = "ort_float"` (ONNX Runtime's QLinearSoftmax): a
    float32 table `exp((bs - d) * input_scale)` (in double, `bs = max(0,
    ln(FLT_MAX / D) - 5) / input_scale`, D the row length) indexed by `d =
    max(row) - x`, a sequential float32 row sum, `rint(float32(e *
    floor(1 / output_scale)) / sum) + output_zp`, saturated to the result
    type (read as unsigned when `output_unsigned`).

    `qnn-lower-to-linalg` expands the recipe into linalg/arith, computing the
    tables of exp values at compile time.
    """

    name = "qint.softmax"
    FLOAT_MODES: ClassVar = ("float_away", "float_even", "ort_float")
    ATTRS: ClassVar = {
        "input_multiplier": (INT, None),
        "input_shift": (INT, None),
        "diff_min": (INT, None),
        "mode": (STR, ("double_round", "single_round", "float_away", "float_even", "ort_float")),
        "output_unsigned": (BOOL, None),
        "input_scale": (FLOATS, None),
        "beta": (FLOATS, None),
        "output_scale": (FLOATS, None),
        "output_zp": (INT, None),
    }

    @property
    def float_table(self) -> bool:
        return self.attr("mode", "double_round") in self.FLOAT_MODES

    def verify_op(self):
        self.require_result_shape(shape_of(self.operands[0]))
        w = int_width(self.operands[0])
        if w not in (8, 16):
            self.fail(f"input must be i8 or i16, got i{w}")
        float_attrs = ("input_scale", "beta", "output_scale")
        if self.float_table:
            if w != 8:
                self.fail(f"mode '{self.attr('mode')}' needs 8-bit input, got i{w}")
            for name in float_attrs:
                v = self.attr(name)
                if v is None or len(v) != 1:
                    self.fail(f"mode '{self.attr('mode')}' needs '{name}' (one value)")
            if not (self.attr("input_scale")[0] > 0 and self.attr("output_scale")[0] > 0):
                self.fail("input_scale and output_scale must be positive")
            if any(k in self.attributes for k in ("input_multiplier", "input_shift", "diff_min")):
                self.fail(f"mode '{self.attr('mode')}' takes no input_multiplier, input_shift or diff_min")
            return
        for name in ("input_multiplier", "input_shift"):
            if name not in self.attributes:
                self.fail(f"missing attribute '{name}'")
        if any(k in self.attributes for k in (*float_attrs, "output_zp")):
            self.fail("integer softmax takes no input_scale, beta, output_scale or output_zp")
        if w == 8 and "diff_min" not in self.attributes:
            self.fail("8-bit softmax needs 'diff_min'")


QINT_OPS = [
    Conv2DOp,
    DepthwiseConv2DOp,
    FullyConnectedOp,
    BatchMatmulOp,
    BiasAddOp,
    RescaleOp,
    AddOp,
    SubOp,
    MulOp,
    ScaledAddOp,
    MaximumOp,
    MinimumOp,
    TableOp,
    PoolSumOp,
    PoolMaxOp,
    DivideRoundOp,
    ReduceSumOp,
    ReduceMaxOp,
    ReduceMinOp,
    SoftmaxOp,
]

QInt = Dialect("qint", QINT_OPS, [])
