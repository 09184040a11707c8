"""The `quant` dialect: uniform quantized types and the three casts, in MLIR's syntax.

```
!quant.uniform<i8:f32, 0.5:-3>                    per-tensor scale:zero_point
!quant.uniform<i8<-127:127>:f32, 0.0078125>       narrowed storage range
!quant.uniform<u8:f32, 0.02:128>                  unsigned storage
!quant.uniform<i8:f32:0, {0.1:1, 0.2:2, 0.3:3}>   per-axis, axis 0
!quant.uniform<i8:f32:{1:2}, {{0.1, 0.2}}>        sub-channel: blocks of 2 along axis 1
!quant.any<i8:f32>, !quant.calibrated<f32<-1.0:1.0>>
quant.qcast / quant.dcast / quant.scast           quantize, dequantize, storage cast
```

A stored value `q` means the real number `scale * (q - zero_point)`.

The types accept and refuse what MLIR 22's quant dialect does, and print as
`mlir-opt` prints them (scales in APFloat's `%e`-like form, `9.987200e-01`):
storage iN / uN / siN / uiN of 1..32 bits, any float expressed type, any
64-bit zero point, per-axis and sub-channel (block-wise) scales, plus
`!quant.any` and `!quant.calibrated`.  What our computation needs beyond that
(zero points inside the storage range, storage widths 2..32, an f16 / bf16 /
f32 expressed type, no sub-channel scales) is `UniformQuantizedType.problems`,
which the qnn and nn ops and the importers check (`quantized_tensor_problems`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
import math
import re
import struct
from fractions import Fraction
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    Float80Type,
    Float128Type,
    FloatData,
    FloatTF32Type,
    IntAttr,
    IntegerType,
    Signedness,
    TensorType,
    UnrankedTensorType,
)
from xdsl.context import Context
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span

import qdialect._xdsl_fixes  # noqa: F401  (linear-time string literals in the lexer)
from qdialect.qparams import QParams, storage_bounds
from qdialect.trusted import data_attr, data_attrs, int_attr

EXPRESSED_TYPES = {"f16": Float16Type, "bf16": BFloat16Type, "f32": Float32Type}
"""The expressed types our computation takes (MLIR's types take any float type)."""

_INT64 = (-(1 << 63), (1 << 63) - 1)
_STORAGE_RE = re.compile(r"^([iu])([0-9]+)$")
_STORAGE_SPELLING = re.compile(r"^(?:(s?i)|(ui|u))([0-9]+)$")  # i8, si8 | u8, ui8

# the parameters of `!quant.uniform<...>` by the exact spelling of `<...>`
_PARSED_PARAMETERS: dict[str, tuple] = {}
_QPARAMS: dict[int, tuple] = {}  # id(type) -> (type, its QParams): see qparams

# `<...>` as qdialect and MLIR print it: storage[<min:max>]:expressed[:axis], scale[:zp] or
# {scale[:zp],...} (decimal scales, decimal zero points).  Read with regular expressions
# instead of token by token; any other spelling, and any value the checks refuse, goes
# through the parser (which says what is wrong and where).
_FLOAT_LITERAL = r"[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?"  # the lexer's FLOAT_LIT
_PRINTED_PARAMETERS = re.compile(
    rf"<([iu])([0-9]+)(?:<(-?[0-9]+):(-?[0-9]+)>)?:(f16|bf16|f32|f64)(?::([0-9]+))?, "
    rf"(\{{[^{{}}<>]*\}}|{_FLOAT_LITERAL}(?::-?[0-9]+)?)>")
# a scale and zero point in braces (with white space as the lexer skips it), and a list of them
_PRINTED_PAIR = re.compile(rf"[ \t\n\r\f\v]*({_FLOAT_LITERAL})(?::(-?[0-9]+))?[ \t\n\r\f\v]*")
_PRINTED_PAIRS = re.compile(rf"(?:{_PRINTED_PAIR.pattern},)*+{_PRINTED_PAIR.pattern}")


@functools.cache
def _integer_type(width: int) -> IntegerType:
    """IntegerType(width), built (and verified) once per width."""
    return IntegerType(width)


def _angle_bracket_end(text: str, start: int, limit: int = 1 << 16) -> int | None:
    """The index just past the `>` closing the `<` at `start` (None if there is none
    on that line within `limit` characters)."""
    if not text.startswith("<", start):
        return None
    end = text.find(">", start)
    while end != -1 and text.count("<", start, end + 1) > text.count(">", start, end + 1):
        end = text.find(">", end + 1)
    if end == -1 or end - start > limit or text.find("\n", start, end) != -1:
        return None
    return end + 1


def expressed_name(t: Attribute) -> str | None:
    """"f16", "bf16" or "f32" for the expressed types our computation takes, else None."""
    for name, cls in EXPRESSED_TYPES.items():
        if is_subclass(type(t), cls):  # (isinstance: through ABCMeta for each other class)
            return name
    return None


def is_float_type(t: Attribute) -> bool:
    """Whether `t` is one of MLIR's float types (what an expressed type may be)."""
    return is_subclass(type(t), AnyFloat)


# ----- float formats and MLIR's printing of floats -----------------------------------


class FloatFormat:
    """A binary float format: `precision` significant bits (hidden bit included), smallest
    normal exponent `emin`, smallest positive and largest finite value (as doubles, the
    way MLIR's scale check converts them), and the bit layout for hexadecimal literals."""

    def __init__(self, precision: int, emin: int, smallest: float, largest: float,
                 exponent_bits: int, bias: int, explicit_bit: bool = False):
        self.precision, self.emin = precision, emin
        self.smallest, self.largest = smallest, largest
        self.exponent_bits, self.bias, self.explicit_bit = exponent_bits, bias, explicit_bit

    def round(self, value: float) -> float:
        """`value` (finite, >= 0) rounded to this format, ties to even (as APFloat converts)."""
        if value == 0 or self.precision >= 53 and self.emin <= -1022:
            return float(value)
        return float(_round_to_format(Fraction(value), self.precision, self.emin))

    def bits(self, value: float) -> int:
        """The encoding of `value` (finite, representable) in this format."""
        sign = 1 if math.copysign(1.0, value) < 0 else 0
        v = Fraction(abs(value))
        mantissa_bits = self.precision - (0 if self.explicit_bit else 1)
        if v == 0:
            field, mantissa = 0, 0
        else:
            e = _floor_log2(v)
            if e < self.emin:  # subnormal
                field, mantissa = 0, int(v / Fraction(2) ** (self.emin - self.precision + 1))
            else:
                field = e + self.bias
                mantissa = int(v / Fraction(2) ** (e - self.precision + 1))
                if not self.explicit_bit:
                    mantissa -= 1 << (self.precision - 1)
        return (sign << (self.exponent_bits + mantissa_bits)) | (field << mantissa_bits) | mantissa


def _ieee(precision: int, exponent_bits: int, explicit_bit: bool = False) -> FloatFormat:
    bias = (1 << (exponent_bits - 1)) - 1
    emin, emax = 1 - bias, bias
    smallest = math.ldexp(1.0, emin - precision + 1) if emin - precision + 1 >= -1074 else 0.0
    largest = (math.ldexp(2.0 - math.ldexp(1.0, 1 - precision), emax)
               if emax <= 1023 else math.inf)
    return FloatFormat(precision, emin, smallest, largest, exponent_bits, bias, explicit_bit)


_FLOAT_FORMATS = {
    Float16Type: _ieee(11, 5), BFloat16Type: _ieee(8, 8), FloatTF32Type: _ieee(11, 8),
    Float32Type: _ieee(24, 8), Float64Type: _ieee(53, 11), Float80Type: _ieee(64, 15, True),
    Float128Type: _ieee(113, 15),
}


@functools.cache
def float_format(cls: type) -> FloatFormat | None:
    """The format of a float type class (the small f8 / f6 / f4 ones from their encodings)."""
    for base, fmt in _FLOAT_FORMATS.items():
        if issubclass(cls, base):
            return fmt
    semantics = getattr(cls, "SEMANTICS", None)
    if semantics is None or not is_subclass(cls, AnyFloat):
        return None
    t = cls()
    values = []
    for code in range(1 << t.bitwidth):
        try:
            v = t.decode_bits(code)
        except Exception:  # noqa: BLE001  (codes a format does not use)
            continue
        if math.isfinite(v) and v > 0:
            values.append(v)
    return FloatFormat(semantics.mantissa_bits + 1, 1 - semantics.exponent_bias, min(values),
                       max(values), semantics.exponent_bits, semantics.exponent_bias)


def _floor_log2(v: Fraction) -> int:
    e = v.numerator.bit_length() - v.denominator.bit_length()
    return e - 1 if Fraction(2) ** e > v else e


def _round_to_format(value: Fraction, precision: int, emin: int) -> Fraction:
    """`value` (> 0) to the nearest number of `precision` bits with exponent >= emin (ties
    to even)."""
    quantum = Fraction(2) ** (max(_floor_log2(value), emin) - precision + 1)
    whole, rest = divmod(value / quantum, 1)
    whole = int(whole)
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole & 1):
        whole += 1
    return whole * quantum


def _apfloat_digits(odd: int, exp2: int, precision: int) -> tuple[str, int]:
    """The decimal digits APFloat prints for `odd * 2**exp2` with `precision` digits, and
    the power of ten of the last one.  Like LLVM's `toStringImpl`: the exact value is cut
    (truncated) to a few digits more than asked, then rounded half up on the next digit."""
    digits, exp = (odd << exp2, 0) if exp2 >= 0 else (odd * 5 ** (-exp2), exp2)
    required = (precision * 196 + 58) // 59
    if digits.bit_length() > required:
        tens = (digits.bit_length() - required) * 59 // 196
        if tens:
            exp += tens
            digits //= 10**tens
    text = str(digits)
    kept = text.rstrip("0")
    exp += len(text) - len(kept)
    text = kept
    if len(text) > precision:
        dropped = len(text) - precision
        head = text[:precision]
        if text[precision] < "5":
            kept = head.rstrip("0")
            return kept, exp + dropped + len(head) - len(kept)
        kept = head.rstrip("9")
        if not kept:
            return "1", exp + len(text)
        return kept[:-1] + chr(ord(kept[-1]) + 1), exp + dropped + len(head) - len(kept)
    return text, exp


def apfloat_text(value: float, format_precision: int, max_padding: int, truncate_zero: bool,
                 semantics_precision: int = 53) -> str:
    """LLVM's `APFloat::toString(str, format_precision, max_padding, truncate_zero)` of a
    finite value with `semantics_precision` significant bits."""
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        if max_padding:
            return sign + "0"
        return sign + ("0.0E+0" if truncate_zero else "0.0" + "0" * max(format_precision - 1, 0) + "e+00")
    numerator, denominator = abs(value).as_integer_ratio()
    zeros = (numerator & -numerator).bit_length() - 1
    precision = format_precision or 2 + semantics_precision * 59 // 196
    digits, exp = _apfloat_digits(numerator >> zeros, zeros - (denominator.bit_length() - 1), precision)
    n = len(digits)
    if not max_padding:
        scientific = True
    elif exp >= 0:
        scientific = exp > max_padding or n + exp > precision
    else:
        scientific = exp + n - 1 < 0 and -(exp + n - 1) > max_padding
    if scientific:
        power = exp + n - 1
        text = digits[0] + "." + ("0" if n == 1 and truncate_zero else digits[1:])
        if not truncate_zero and precision > n - 1:
            text += "0" * (precision - n + 1)
        power_text = str(abs(power)).rjust(1 if truncate_zero else 2, "0")
        return f"{sign}{text}{'E' if truncate_zero else 'e'}{'+' if power >= 0 else '-'}{power_text}"
    if exp >= 0:
        return sign + digits + "0" * exp
    whole = exp + n
    if whole > 0:
        return sign + digits[:whole] + "." + digits[whole:]
    return sign + "0." + "0" * (-whole) + digits


def format_float(value: float, fmt: FloatFormat | None = None) -> str:
    """`value` as MLIR 22's AsmPrinter prints a float of format `fmt` (default: a double):
    `%e`-like with 6 digits when that reads back to the same value, else APFloat's
    shortest-safe form when it has a '.', else the bits in hexadecimal (`0x...`)."""
    fmt = fmt or _FLOAT_FORMATS[Float64Type]
    if not math.isfinite(value):
        return repr(value)  # (no scale or calibrated bound is; MLIR prints these in hex)
    text = apfloat_text(value, 6, 0, False, fmt.precision)
    if fmt.precision == 53:
        if float(text) == value:
            return text
    elif _read_in_format(text, fmt) == value:
        return text
    text = apfloat_text(value, 0, 3, True, fmt.precision)
    if "." in text:
        return text
    return "0x" + format(fmt.bits(value), "X")


def _read_in_format(text: str, fmt: FloatFormat) -> float:
    """The decimal `text` rounded once to `fmt` (as APFloat reads it)."""
    exact = Fraction(text)
    sign = -1 if exact < 0 else 1
    if exact == 0:
        return 0.0
    rounded = _round_to_format(abs(exact), fmt.precision, fmt.emin)
    return sign * float(rounded) if rounded <= Fraction(fmt.largest) else sign * math.inf


def format_scale(value: float) -> str:
    """A scale (a double) as mlir-opt 22 prints it in a `!quant.uniform` type (remembered:
    a model's per-channel scales are printed again for every print of the module, and the
    compiled-model cache keys print it twice: 0.4 s of a 5 s cold build of MobileNetV2).
    Zero and NaN are formatted anew: 0.0 and -0.0 are one key of a cache (equal, same
    hash) but print differently, and NaN never equals its key (a diagnostic can print them)."""
    if value == 0 or value != value:
        return format_float(value)
    return _format_nonzero_scale(value)


@functools.lru_cache(maxsize=1 << 16)
def _format_nonzero_scale(value: float) -> str:
    return format_float(value)


def _mlir_e(value: float) -> str:
    """A double as MLIR's diagnostics print it (`raw_ostream << double`: printf's `%e`)."""
    return f"{value:e}"


# ----- the types ---------------------------------------------------------------------------


def _storage_text(width: int, signed: bool, smin: int, smax: int) -> str:
    lo, hi = storage_bounds(width, signed)
    text = f"{'i' if signed else 'u'}{width}"
    return text if (smin, smax) == (lo, hi) else f"{text}<{smin}:{smax}>"


def _parse_storage(parser: AttrParser, what: str) -> tuple[int, bool, int, int]:
    """`storage[<min:max>]` as MLIR reads it: (width, signed, min, max)."""
    pos = parser.pos
    ident = parser.parse_optional_identifier()
    match = _STORAGE_SPELLING.match(ident) if ident is not None else None
    if match is None:
        got = f"'{ident}'" if ident is not None else "nothing"
        parser.raise_error(
            f"{what}: illegal storage type prefix: expected iN, uN, siN or uiN, got {got}", pos, parser.pos)
    signed = match.group(1) is not None
    width = int(match.group(3))
    if width >= 1 << 24:  # (MLIR's integer types stop below 2^24 bits)
        parser.raise_error(f"{what}: invalid integer width {width} in '{ident}'", pos, parser.pos)
    if not 1 <= width <= 32:
        parser.raise_error(
            f"{what}: illegal storage type size: {width} ('{ident}'; MLIR takes 1..32 bits)", pos, parser.pos)
    lo, hi = storage_bounds(width, signed)
    smin, smax = lo, hi
    if parser.parse_optional_punctuation("<") is not None:
        mpos = parser.pos
        smin = _parse_int(parser, " for the storage minimum")
        if smin < lo:
            parser.raise_error(f"{what}: illegal storage type minimum: {smin} is below "
                               f"{match.group(0)}'s {lo}", mpos, parser.pos)
        parser.parse_punctuation(":", " between the storage minimum and maximum")
        mpos = parser.pos
        smax = _parse_int(parser, " for the storage maximum")
        if smax > hi:
            parser.raise_error(f"{what}: illegal storage type maximum: {smax} is above "
                               f"{match.group(0)}'s {hi}", mpos, parser.pos)
        parser.parse_punctuation(">", " after the storage range")
        if smax <= smin:
            parser.raise_error(f"{what}: illegal storage min and storage max: ({smin}:{smax}) "
                               f"is an empty range", pos, parser.pos)
    return width, signed, smin, smax


def _parse_int(parser: AttrParser, what: str) -> int:
    """An integer literal (MLIR's words when there is none, and what it was for)."""
    pos = parser.pos
    value = parser.parse_optional_integer(allow_boolean=False)
    if value is None:
        parser.raise_error(f"expected integer value{what}", pos)
    return value


@dataclass
class ParseErrors(ParseError):
    """A parse error that MLIR reports as several diagnostics: `msg` at `span`, then each
    `(span, message)` of `also` (mlir-opt's `--verify-diagnostics` expects every one)."""

    also: tuple[tuple[Span, str], ...] = ()


def _parse_expressed(parser: AttrParser, what: str) -> Attribute:
    pos = parser.pos
    expressed = parser.parse_type()
    if not is_float_type(expressed):
        parser.raise_error(f"{what}: expressed type {expressed} is not a float type", pos, parser.pos)
    return expressed


def _storage_problems(width: int, signed: bool, smin: int, smax: int) -> list[str]:
    """MLIR's checks of a storage type and range."""
    if not 1 <= width <= 32:
        return [f"illegal storage type size: {width} (MLIR takes 1..32 bits)"]
    lo, hi = storage_bounds(width, signed)
    name = f"{'i' if signed else 'u'}{width}"
    if smin < lo or smax > hi:
        return [f"storage range [{smin}:{smax}] is outside {name} [{lo}:{hi}]"]
    if smin >= smax:
        return [f"storage range [{smin}:{smax}] is empty"]
    return []


@irdl_attr_definition
class UniformQuantizedType(ParametrizedAttribute, TypeAttribute):
    """A uniform quantized element type: per-tensor, per-axis or sub-channel (block-wise).

    Stored integers of `storage_width` bits (signed or unsigned), restricted to
    [storage_min, storage_max], stand for `scale * (q - zero_point)` in the
    expressed float type.  `quantized_dimension` is -1 unless the type is per-axis;
    then `scales`/`zero_points` hold one entry per index along that axis.  A
    sub-channel type has a non-empty `scale_shape` (the shape of its scale and
    zero-point tensors, row-major in `scales` / `zero_points`) and `block_sizes`,
    flattened (axis, block size) pairs: element `i` of a tensor uses the scale at
    `i[d] // block[d]` on each axis `d` (a block is the whole axis unless given).
    """

    name = "quant.uniform"

    storage_width: IntAttr
    is_signed: IntAttr
    storage_min: IntAttr
    storage_max: IntAttr
    expressed_type: Attribute
    scales: ArrayAttr[FloatData]
    zero_points: ArrayAttr[IntAttr]
    quantized_dimension: IntAttr
    block_sizes: ArrayAttr[IntAttr]
    scale_shape: ArrayAttr[IntAttr]

    def __init__(
        self,
        storage: str,
        expressed: str | Attribute,
        scales: Sequence[float],
        zero_points: Sequence[int],
        axis: int | None = None,
        storage_min: int | None = None,
        storage_max: int | None = None,
        *,
        block_sizes: Sequence[tuple[int, int]] | None = None,
        scale_shape: Sequence[int] | None = None,
        strict: bool = True,
    ):
        """Build a type from numbers.  With `strict` (the default) it must also be one our
        computation takes (`problems()`: zero points inside the storage range, widths
        2..32, f16 / bf16 / f32, not sub-channel); without it, what MLIR accepts."""
        match = _STORAGE_SPELLING.match(storage)
        if match is None:
            raise VerifyException(f"quant.uniform: storage type '{storage}' is not iN or uN")
        signed = match.group(1) is not None
        width = int(match.group(3))
        lo, hi = storage_bounds(width, signed) if 1 <= width <= 64 else (0, 0)
        if isinstance(expressed, str):
            if expressed not in EXPRESSED_TYPES and expressed != "f64":
                raise VerifyException(
                    f"quant.uniform: expressed type '{expressed}' is not one of f16, bf16, f32"
                )
            expressed = EXPRESSED_TYPES.get(expressed, Float64Type)()
        super().__init__(
            IntAttr(width),
            IntAttr(1 if signed else 0),
            IntAttr(lo if storage_min is None else int(storage_min)),
            IntAttr(hi if storage_max is None else int(storage_max)),
            expressed,
            ArrayAttr([FloatData(float(s)) for s in scales]),
            ArrayAttr([IntAttr(int(z)) for z in zero_points]),
            IntAttr(-1 if axis is None else int(axis)),
            ArrayAttr([IntAttr(int(v)) for pair in (block_sizes or ()) for v in pair]),
            ArrayAttr([IntAttr(int(d)) for d in (scale_shape or ())]),
        )
        if strict:
            problems = self.problems()
            if problems:
                raise VerifyException(f"!quant.uniform: {problems[0]}")

    # ----- construction from numbers -------------------------------------------------

    @staticmethod
    def per_tensor(
        scale: float,
        zero_point: int = 0,
        storage: str = "i8",
        expressed: str = "f32",
        storage_min: int | None = None,
        storage_max: int | None = None,
    ) -> "UniformQuantizedType":
        return UniformQuantizedType(
            storage, expressed, [scale], [zero_point], None, storage_min, storage_max
        )

    @staticmethod
    def per_axis(
        scales,
        zero_points=0,
        axis: int = 0,
        storage: str = "i8",
        expressed: str = "f32",
        storage_min: int | None = None,
        storage_max: int | None = None,
    ) -> "UniformQuantizedType":
        scales = np.atleast_1d(np.asarray(scales, dtype=np.float64))
        zps = np.broadcast_to(np.atleast_1d(np.asarray(zero_points, dtype=np.int64)), scales.shape)
        return UniformQuantizedType(
            storage, expressed, scales.tolist(), zps.tolist(), axis, storage_min, storage_max
        )

    @staticmethod
    def from_qparams(q: QParams) -> "UniformQuantizedType":
        if q.per_axis:
            return UniformQuantizedType.per_axis(
                q.scale, q.zero_point, q.axis, q.storage, q.expressed, q.storage_min, q.storage_max
            )
        return UniformQuantizedType.per_tensor(
            float(q.scale), int(q.zero_point), q.storage, q.expressed, q.storage_min, q.storage_max
        )

    # ----- reading back ------------------------------------------------------------------

    @property
    def signed(self) -> bool:
        return self.is_signed.data == 1

    @property
    def storage(self) -> str:
        return f"{'i' if self.signed else 'u'}{self.storage_width.data}"

    @property
    def is_per_axis(self) -> bool:
        return self.quantized_dimension.data >= 0

    @property
    def is_sub_channel(self) -> bool:
        """Whether the scales are a tensor of blocks (`!quant.uniform<i8:f32:{0:1, 1:2}, ...>`)."""
        return len(self.scale_shape.data) > 0

    @property
    def axis(self) -> int | None:
        return self.quantized_dimension.data if self.is_per_axis else None

    @property
    def storage_type(self) -> IntegerType:
        """The signless integer type that holds the stored values (MLIR's storage type)."""
        return _integer_type(self.storage_width.data)

    def block_size_pairs(self) -> list[tuple[int, int]]:
        """A sub-channel type's (axis, block size) pairs, as written."""
        flat = [v.data for v in self.block_sizes.data]
        return list(zip(flat[0::2], flat[1::2]))

    def sub_channel_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """A sub-channel type's scales (float64) and zero points (int64), in `scale_shape`."""
        shape = tuple(d.data for d in self.scale_shape.data)
        return (np.array([s.data for s in self.scales.data], np.float64).reshape(shape),
                np.array([z.data for z in self.zero_points.data], np.int64).reshape(shape))

    def scale_array(self) -> np.ndarray:
        """Scales as float64: shape () per-tensor, (C,) per-axis."""
        arr = np.array([s.data for s in self.scales.data], dtype=np.float64)
        return arr if self.is_per_axis else arr.reshape(())

    def zero_point_array(self) -> np.ndarray:
        arr = np.array([z.data for z in self.zero_points.data], dtype=np.int64)
        return arr if self.is_per_axis else arr.reshape(())

    def storage_range(self) -> tuple[int, int]:
        return self.storage_min.data, self.storage_max.data

    def qparams(self) -> QParams:
        """The parameters as a `QParams`, made once per type object (a type is immutable,
        and the passes ask this of every quantized operand): its arrays are read-only
        (copy them to change them).  Not for sub-channel types (see `sub_channel_arrays`)."""
        hit = _QPARAMS.get(id(self))
        if hit is not None and hit[0] is self:
            return hit[1]
        if self.is_sub_channel:
            raise VerifyException(f"{self}: sub-channel (block-wise) scales have no per-tensor or per-axis "
                                  "parameters (see sub_channel_arrays)")
        # over immutable bytes: numpy refuses to make them writable again (a flag alone
        # could be set back, and a write would change every later caller's parameters)
        scale, zero_point = (np.frombuffer(a.tobytes(), a.dtype).reshape(a.shape)
                             for a in (self.scale_array(), self.zero_point_array()))
        q = QParams(
            bits=self.storage_width.data,
            signed=self.signed,
            storage_min=self.storage_min.data,
            storage_max=self.storage_max.data,
            scale=scale,
            zero_point=zero_point,
            axis=self.axis,
            expressed=expressed_name(self.expressed_type)
            or ("f64" if isinstance(self.expressed_type, Float64Type) else "f32"),
        )
        if len(_QPARAMS) > 4096:  # bounded across the models of a long-lived process
            _QPARAMS.clear()
        _QPARAMS[id(self)] = (self, q)  # the type kept alive, so its id stays its own
        return q

    # ----- verification --------------------------------------------------------------

    def mlir_problems(self) -> list[str]:
        """Every rule of MLIR 22's quant dialect this type breaks (what the parser and the
        type's verifier refuse), each naming the bad value."""
        width = self.storage_width.data
        out = _storage_problems(width, self.signed, *self.storage_range())
        if out:
            return out
        fmt = float_format(type(self.expressed_type))
        if fmt is None:
            return [f"expressed type {self.expressed_type} is not a float type"]
        if len(self.scales.data) != len(self.zero_points.data):
            out.append(
                f"{len(self.scales.data)} scales but {len(self.zero_points.data)} zero points"
            )
        if self.is_sub_channel:
            if self.is_per_axis:
                out.append("a sub-channel type has no single quantized dimension")
            n = math.prod(d.data for d in self.scale_shape.data)
            if n != len(self.scales.data) or n == 0:
                out.append(f"{len(self.scales.data)} scales do not fill a "
                           f"{'x'.join(str(d.data) for d in self.scale_shape.data)} tensor")
            if len(self.block_sizes.data) % 2:
                out.append("block sizes are not (axis, size) pairs")
            for axis, size in self.block_size_pairs():
                if axis < 0:
                    out.append(f"illegal quantized dimension: {axis} (negative axis in the block sizes)")
                if size <= 0:
                    out.append(f"illegal block size: {size} for axis {axis} (must be > 0)")
        else:
            if len(self.block_sizes.data):
                out.append("block sizes without a sub-channel scale tensor")
            if not self.is_per_axis and len(self.scales.data) != 1:
                out.append(f"per-tensor type has {len(self.scales.data)} scales")
            if self.is_per_axis and len(self.scales.data) == 0:
                out.append("per-axis type has no scales")
            if self.quantized_dimension.data < -1:
                out.append(f"illegal quantized dimension: {self.quantized_dimension.data} (negative axis)")
        for i, s in enumerate(self.scales.data):
            v = s.data
            where = self._where(i)
            if not math.isfinite(v) or not fmt.smallest <= v <= fmt.largest:
                out.append(f"scale {_mlir_e(v)} out of expressed type range "
                           f"[{_mlir_e(fmt.smallest)}, {_mlir_e(fmt.largest)}] of {self.expressed_type}{where}")
            elif v <= 0:
                out.append(f"illegal scale: {_mlir_e(v)}{where} (must be > 0)")
        for i, z in enumerate(self.zero_points.data):
            if not _INT64[0] <= z.data <= _INT64[1]:
                out.append(f"zero point {z.data}{self._where(i)} does not fit in 64 bits")
        return out

    def _where(self, i: int) -> str:
        if self.is_per_axis:
            return f" (index {i} on axis {self.axis})"
        if self.is_sub_channel:
            return f" (element {i} of the scale tensor)"
        return ""

    def problems(self) -> list[str]:
        """Every rule this type breaks for our computation (MLIR's rules, and zero points
        inside the storage range, widths 2..32, f16 / bf16 / f32, scales representable in
        it, no sub-channel scales), each naming the bad value."""
        out = self.mlir_problems()
        if out:
            return out
        width = self.storage_width.data
        if not 2 <= width <= 32:
            return [f"storage width {width} of '{self.storage}' is outside 2..32"]
        ename = expressed_name(self.expressed_type)
        if ename is None:
            out.append(f"expressed type {self.expressed_type} is not one of f16, bf16, f32")
        if self.is_sub_channel:
            out.append("sub-channel (block-wise) scales are only taken by quant.qcast / quant.dcast / quant.scast")
        tiny = float_format(type(self.expressed_type)).smallest
        for i, s in enumerate(self.scales.data):
            if s.data < tiny / 2:  # (MLIR's check has passed: a scale >= tiny)
                out.append(f"scale {s.data!r}{self._where(i)} is not representable in {ename}")
        smin, smax = self.storage_range()
        for i, z in enumerate(self.zero_points.data):
            if not smin <= z.data <= smax:
                out.append(
                    f"zero point {z.data}{self._where(i)} is outside {self.storage} [{smin}:{smax}]"
                )
        return out

    def verify(self) -> None:
        problems = self.mlir_problems()
        if problems:
            raise VerifyException(f"!quant.uniform: {problems[0]}")

    # ----- syntax --------------------------------------------------------------------

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        # A model's text repeats each type (every op signature spells its operand types
        # out, per-axis ones with every scale): a spelling parsed once is looked up.
        text = parser.lexer.input.content
        start = parser.pos
        end = _angle_bracket_end(text, start) if isinstance(text, str) else None
        if end is not None:
            params = _PARSED_PARAMETERS.get(text[start:end])
            if params is not None:
                parser._resume_from(end)
                return params
            params = _printed_parameters(text[start:end])
            if params is not None:
                parser._resume_from(end)
                if len(_PARSED_PARAMETERS) >= 4096:
                    _PARSED_PARAMETERS.clear()
                _PARSED_PARAMETERS[text[start:end]] = params
                return params
        params = _balanced(parser, cls._parse_parameters)
        if end is not None and parser.pos >= end and not text[end:parser.pos].strip():
            if len(_PARSED_PARAMETERS) >= 4096:
                _PARSED_PARAMETERS.clear()
            _PARSED_PARAMETERS[text[start:end]] = params
        return params

    @classmethod
    def _parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        what = "quant.uniform"
        with parser.in_angle_brackets():
            width, signed, smin, smax = _parse_storage(parser, what)
            parser.parse_punctuation(":", " between the storage type and the expressed type")
            expressed = _parse_expressed(parser, what)
            fmt = float_format(type(expressed))
            axis = -1
            blocks: list[tuple[int, int]] | None = None
            if parser.parse_optional_punctuation(":") is not None:
                if parser.parse_optional_punctuation("{") is not None:
                    blocks = []
                    if parser.parse_optional_punctuation("}") is None:
                        while True:
                            bpos = parser.pos
                            block_axis = _parse_int(parser, " for a block's axis (axis:size)")
                            if block_axis < 0:
                                parser.raise_error(f"{what}: illegal quantized dimension: {block_axis} "
                                                   f"(negative axis in the block sizes)", bpos, parser.pos)
                            parser.parse_punctuation(":", " between a block's axis and its size")
                            bpos = parser.pos
                            size = _parse_int(parser, " for a block size")
                            if size <= 0:
                                parser.raise_error(f"{what}: illegal block size: {size} for axis "
                                                   f"{block_axis} (must be > 0)", bpos, parser.pos)
                            blocks.append((block_axis, size))
                            if parser.parse_optional_punctuation(",") is None:
                                break
                        parser.parse_punctuation("}", " to end the block sizes")
                else:
                    apos = parser.pos
                    axis = _parse_int(parser, " for the quantized axis (or {axis:block size, ...})")
                    if axis < 0:
                        parser.raise_error(
                            f"{what}: illegal quantized dimension: {axis} (negative axis)", apos, parser.pos
                        )
            parser.parse_punctuation(",", " before the scales")
            if axis < 0 and blocks is None:
                params = [_parse_scale_zp(parser, fmt, expressed, None)]
                shape: list[int] = []
            else:
                parser.parse_punctuation("{", " (per-axis and sub-channel scales are a list in braces)")
                params = []
                shape = _parse_scale_list(parser, fmt, expressed, params)
        if blocks is not None:
            # MLIR keeps sub-channel scales in the expressed type and zero points in the
            # storage width (an APInt: wrapped), unlike per-tensor and per-axis ones
            params = [(fmt.round(s), _wrap(z, width, signed)) for s, z in params]
        return (
            int_attr(width),
            int_attr(1 if signed else 0),
            IntAttr(smin),
            IntAttr(smax),
            expressed,
            ArrayAttr([FloatData(s) for s, _ in params]),
            ArrayAttr([IntAttr(z) for _, z in params]),
            IntAttr(axis),
            ArrayAttr([IntAttr(v) for pair in (blocks or ()) for v in pair]),
            ArrayAttr([IntAttr(d) for d in (shape if blocks is not None else ())]),
        )

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + _storage_text(self.storage_width.data, self.signed, *self.storage_range()))
        printer.print_string(":")
        printer.print_attribute(self.expressed_type)
        if self.is_sub_channel:
            fmt = float_format(type(self.expressed_type))
            width = self.storage_width.data
            blocks = ", ".join(f"{a}:{b}" for a, b in self.block_size_pairs())
            texts = [
                format_float(s.data, fmt) + (f":{_wrap(z.data, width, True)}" if z.data else "")
                for s, z in zip(self.scales.data, self.zero_points.data)
            ]
            printer.print_string(f":{{{blocks}}}, {_nested(texts, [d.data for d in self.scale_shape.data])}>")
            return
        pairs = [
            format_scale(s.data) + (f":{z.data}" if z.data != 0 else "")
            for s, z in zip(self.scales.data, self.zero_points.data)
        ]
        if self.is_per_axis:
            printer.print_string(f":{self.axis}, {{{','.join(pairs)}}}>")
        else:
            printer.print_string(f", {pairs[0]}>")


_CLOSING = {"<": ">", "[": "]", "(": ")", "{": "}"}


def _unbalanced(text: str, start: int) -> str | None:
    """The bracket left open when the bracketed text at `start` is unbalanced (as MLIR's lexer
    reads a pretty dialect type's body), else None."""
    stack: list[str] = []
    for ch in text[start:]:
        if ch in _CLOSING:
            stack.append(ch)
        elif ch in ">])}":
            if not stack or _CLOSING[stack[-1]] != ch:
                return stack[-1] if stack else None
            stack.pop()
            if not stack:
                return None
    return stack[-1] if stack else None


def _balanced(parser: AttrParser, parse):
    """`parse(parser)`; when it fails on a type whose brackets do not balance, say so at the
    type (MLIR's lexer finds that before it reads the parameters)."""
    start = parser.pos
    try:
        return parse(parser)
    except ParseError:
        text = parser.lexer.input.content
        bracket = _unbalanced(text, start) if isinstance(text, str) else None
        if bracket is None:
            raise
        parser.raise_error(f"unbalanced '{bracket}' character in pretty dialect name", start, start + 1)


def _wrap(value: int, width: int, signed: bool) -> int:
    """`value` cut to `width` bits (an APInt of that width), read signed or unsigned."""
    value &= (1 << width) - 1
    return value - (1 << width) if signed and value >> (width - 1) else value


def _nested(texts: list[str], shape: list[int]) -> str:
    """Row-major `texts` in braces nested as `shape` (MLIR's dense quantization parameters)."""
    if len(shape) <= 1:
        return "{" + ", ".join(texts) + "}"
    step = len(texts) // shape[0]
    return "{" + ", ".join(_nested(texts[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])) + "}"


def _parse_scale_list(parser: AttrParser, fmt: FloatFormat, expressed: Attribute,
                      params: list[tuple[float, int]]) -> list[int]:
    """A brace list of scale[:zero point] (nested lists of the same shape allowed), after
    its `{`: appends to `params` and returns the list's shape."""
    inner: list[int] | None = None
    size = 0
    while True:
        pos = parser.pos
        if parser.parse_optional_punctuation("{") is not None:
            shape = _parse_scale_list(parser, fmt, expressed, params)
        else:
            params.append(_parse_scale_zp(parser, fmt, expressed, len(params)))
            shape = []
        if inner is None:
            inner = shape
        elif shape != inner:
            parser.raise_error(
                "quant.uniform: tensor literal is invalid; ranks are not consistent between elements: "
                f"an element of shape {shape or 'scalar'} after ones of shape {inner or 'scalar'}", pos, parser.pos)
        size += 1
        if parser.parse_optional_punctuation(",") is None:
            break
    parser.parse_punctuation("}", " to end the list of scales")
    return [size, *inner]


def _parse_scale_zp(parser: AttrParser, fmt: FloatFormat, expressed: Attribute,
                    index: int | None) -> tuple[float, int]:
    where = f" (element {index})" if index is not None else ""
    pos = parser.pos
    negative = parser.parse_optional_punctuation("-") is not None
    scale = parser.parse_optional_float(allow_negative=False)
    token_text = parser._current_token.text
    if scale is None and token_text.lower().startswith("0x"):
        if negative:
            parser.raise_error(f"quant.uniform: hexadecimal scale{where} {token_text} has a leading minus",
                               pos, parser.pos + len(token_text))
        # MLIR prints a double it cannot write exactly in decimal as its IEEE-754 bits.
        bits = parser.parse_integer(allow_boolean=False, allow_negative=False)
        if bits >= 1 << 64:
            parser.raise_error(
                f"quant.uniform: hexadecimal scale{where} {token_text} has more than 64 bits",
                pos,
                parser.pos,
            )
        scale = struct.unpack("<d", struct.pack("<Q", bits))[0]
    if scale is None:
        if parser.parse_optional_integer(allow_boolean=False, allow_negative=False) is not None:
            parser.raise_error(
                f"quant.uniform: scale{where} must be a float literal (add '.0')",
                pos,
                parser.pos,
            )
        parser.raise_error(f"quant.uniform: expected floating point literal for a scale{where}", pos)
    if negative:
        scale = -scale
    end = parser.pos
    if not math.isfinite(scale) or not fmt.smallest <= scale <= fmt.largest:
        parser.raise_error(
            f"quant.uniform: scale {_mlir_e(scale)} out of expressed type range "
            f"[{_mlir_e(fmt.smallest)}, {_mlir_e(fmt.largest)}] of {expressed}{where}",
            pos,
            end,
        )
    zero_point = 0
    if parser.parse_optional_punctuation(":") is not None:
        zpos = parser.pos
        zero_point = _parse_int(parser, f" for the zero point{where} after ':'")
        if not _INT64[0] <= zero_point <= _INT64[1]:
            parser.raise_error(f"quant.uniform: zero point {zero_point}{where} does not fit in 64 bits",
                               zpos, parser.pos)
    return scale, zero_point


def _printed_parameters(text: str) -> tuple | None:
    """`_parse_parameters` of `text` (the whole `<...>`) when it is in the printed per-tensor
    or per-axis form and every check passes, else None (then the parser reads it, and
    reports what is wrong)."""
    m = _PRINTED_PARAMETERS.fullmatch(text)
    if m is None:
        return None
    kind, width, smin, smax, ename, axis, pairs = m.groups()
    width = int(width)
    if not 1 <= width <= 32:
        return None
    lo, hi = storage_bounds(width, kind == "i")
    smin, smax = (lo, hi) if smin is None else (int(smin), int(smax))
    if smin < lo or smax > hi or smin >= smax:
        return None
    if axis is None:
        if pairs.startswith("{"):
            return None
    elif not pairs.startswith("{") or _PRINTED_PAIRS.fullmatch(pairs, 1, len(pairs) - 1) is None:
        return None
    found = _PRINTED_PAIR.findall(pairs, 0 if axis is None else 1)  # [(scale, zero point or ""), ...]
    scale_texts, zero_point_texts = zip(*found)
    scales = list(map(float, scale_texts))
    expressed = _expressed_type(ename)
    fmt = float_format(type(expressed))
    if not (fmt.smallest <= min(scales) and max(scales) <= fmt.largest):
        return None  # (the bounds also refuse inf; the literals spell no nan)
    if any(zero_point_texts):
        values = [int(zero_point) if zero_point else 0 for zero_point in zero_point_texts]
        if not (_INT64[0] <= min(values) and max(values) <= _INT64[1]):
            return None
        zero_points = tuple(map(int_attr, values))
    else:
        zero_points = (int_attr(0),) * len(scales)
    # the scales are Python floats and the zero points shared IntAttrs: what FloatData's and
    # ArrayAttr's verifiers accept, so they are built without them (qdialect.trusted)
    return (int_attr(width), int_attr(1 if kind == "i" else 0), int_attr(smin), int_attr(smax),
            expressed, data_attr(ArrayAttr, data_attrs(FloatData, scales)),
            data_attr(ArrayAttr, zero_points), int_attr(-1 if axis is None else int(axis)),
            _EMPTY, _EMPTY)


_EMPTY = ArrayAttr([])


@functools.cache
def _expressed_type(name: str) -> Attribute:
    """The expressed type called `name`, built (and verified) once."""
    return {"f64": Float64Type}.get(name, EXPRESSED_TYPES.get(name))()


@irdl_attr_definition
class AnyQuantizedType(ParametrizedAttribute, TypeAttribute):
    """`!quant.any<storage[<min:max>][:expressed]>`: a quantized type whose parameters are
    not chosen yet (MLIR's AnyQuantizedType).  `expressed` holds the expressed type, or
    nothing when the type names none."""

    name = "quant.any"

    storage_width: IntAttr
    is_signed: IntAttr
    storage_min: IntAttr
    storage_max: IntAttr
    expressed: ArrayAttr  # [] or [the expressed type]

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        return _balanced(parser, cls._parse_parameters)

    @classmethod
    def _parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            width, signed, smin, smax = _parse_storage(parser, "quant.any")
            expressed = []
            if parser.parse_optional_punctuation(":") is not None:
                expressed = [_parse_expressed(parser, "quant.any")]
        return (IntAttr(width), IntAttr(1 if signed else 0), IntAttr(smin), IntAttr(smax),
                ArrayAttr(expressed))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + _storage_text(self.storage_width.data, self.is_signed.data == 1,
                                                 self.storage_min.data, self.storage_max.data))
        for t in self.expressed.data:
            printer.print_string(":")
            printer.print_attribute(t)
        printer.print_string(">")

    def verify(self) -> None:
        problems = _storage_problems(self.storage_width.data, self.is_signed.data == 1,
                                     self.storage_min.data, self.storage_max.data)
        if len(self.expressed.data) > 1 or any(not is_float_type(t) for t in self.expressed.data):
            problems.append(f"expressed type {self.expressed} is not one float type")
        if problems:
            raise VerifyException(f"!quant.any: {problems[0]}")


@irdl_attr_definition
class CalibratedQuantizedType(ParametrizedAttribute, TypeAttribute):
    """`!quant.calibrated<expressed<min:max>>`: a float value range seen in calibration,
    not yet a quantization (MLIR's CalibratedQuantizedType)."""

    name = "quant.calibrated"

    expressed_type: Attribute
    min: FloatData
    max: FloatData

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        return _balanced(parser, cls._parse_parameters)

    @classmethod
    def _parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            start = parser.pos
            expressed = parser.parse_type()
            if not is_float_type(expressed):  # MLIR: two errors, as parseType<FloatType> fails
                raise ParseErrors(Span(start, parser.pos, parser.lexer.input),
                                  f"quant.calibrated: invalid kind of type specified: expressed type {expressed} "
                                  "is not a float type",
                                  ((Span(start, parser.pos, parser.lexer.input), "expecting float expressed type"),))
            pos = parser.pos
            try:
                parser.parse_punctuation("<")
                low = _parse_signed_float(parser, "minimum")
                parser.parse_punctuation(":")
                high = _parse_signed_float(parser, "maximum")
                parser.parse_punctuation(">")
            except ParseError as e:  # MLIR adds a second error at the type
                raise ParseErrors(e.span, f"{' '.join(e.msg.split())} (quant.calibrated: <min:max> expected)",
                                  ((Span(start, pos, parser.lexer.input),
                                    "calibrated values must be present"),)) from None
            if not high > low:
                parser.raise_error(f"quant.calibrated: illegal min and max: ({_mlir_e(low)}:{_mlir_e(high)}) "
                                   "(max must exceed min)", pos, parser.pos)
        return (expressed, FloatData(low), FloatData(high))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_attribute(self.expressed_type)
        printer.print_string(f"<{format_float(self.min.data)}:{format_float(self.max.data)}>>")

    def verify(self) -> None:
        if not is_float_type(self.expressed_type):
            raise VerifyException(f"!quant.calibrated: expressed type {self.expressed_type} is not a float type")
        if not self.max.data > self.min.data:
            raise VerifyException(f"!quant.calibrated: illegal min and max: ({_mlir_e(self.min.data)}:"
                                  f"{_mlir_e(self.max.data)}) (max must exceed min)")


def _parse_signed_float(parser: AttrParser, what: str) -> float:
    pos = parser.pos
    negative = parser.parse_optional_punctuation("-") is not None
    value = parser.parse_optional_float(allow_negative=False)
    if value is None:
        if parser.parse_optional_integer(allow_boolean=False, allow_negative=False) is not None:
            parser.raise_error(f"quant.calibrated: {what} must be a float literal (add '.0')", pos, parser.pos)
        parser.raise_error(f"quant.calibrated: expected a float literal for the {what}", pos)
    return -value if negative else value


# ----- helpers on shaped types ------------------------------------------------------


@functools.cache
def is_subclass(cls: type, base) -> bool:
    """issubclass, remembered: isinstance on xDSL's (abstract) attribute and op classes goes
    through ABCMeta each time the class differs, and the passes and the translation ask it
    of every value's type and every op (the one such helper of the project)."""
    return issubclass(cls, base)


_TENSOR_CLASSES = (TensorType, UnrankedTensorType)


def quantized_element_type(t: Attribute) -> UniformQuantizedType | None:
    """The quantized element type of a scalar or tensor type, else None."""
    if is_subclass(type(t), UniformQuantizedType):
        return t
    if is_subclass(type(t), _TENSOR_CLASSES) and is_subclass(
        type(el := t.element_type), UniformQuantizedType
    ):
        return el
    return None


def element_type(t: Attribute) -> Attribute:
    if isinstance(t, TensorType | UnrankedTensorType):
        return t.element_type
    return t


def with_element_type(t: Attribute, element: Attribute) -> Attribute:
    """Same shape as `t` (tensor or scalar), new element type."""
    if isinstance(t, TensorType):
        return TensorType(element, t.get_shape())
    if isinstance(t, UnrankedTensorType):
        return UnrankedTensorType(element)
    return element


_PROBLEMS: dict[int, tuple] = {}  # id(type) -> (type, its problems()): see quantized_tensor_problems


def _container_kind(t: Attribute) -> tuple:
    """("tensor", shape) for a ranked tensor, ("unranked",) or ("scalar",)."""
    if isinstance(t, TensorType):
        return ("tensor", tuple(t.get_shape()))
    if isinstance(t, UnrankedTensorType):
        return ("unranked",)
    return ("scalar",)


def mlir_tensor_problems(t: Attribute, cast: bool = False) -> list[str]:
    """MLIR's checks of a quantized element type against its container, as the quant casts
    make them (`cast`): per-axis and sub-channel scales need a tensor, an axis inside its
    rank, and sizes that match.  Without `cast` (any other op's value, checked module-wide)
    none: MLIR checks them in the casts only (the qnn ops check their own operands)."""
    q = quantized_element_type(t)
    if q is None or not (q.is_per_axis or q.is_sub_channel):
        return []
    if not cast:
        return []
    kind = "per-axis" if q.is_per_axis else "sub-channel"
    if not isinstance(t, TensorType | UnrankedTensorType):
        return [f"scalar types may not use {kind} quantization: {t} is not a tensor"]
    if q.is_per_axis:
        if not isinstance(t, TensorType):
            return []
        shape = t.get_shape()
        axis = q.axis
        if axis >= len(shape):
            return [f"axis {axis} is out of range for rank-{len(shape)} {t} (quantized dimension must be "
                    "less than tensor rank)"]
        n = len(q.scales.data)
        if shape[axis] >= 0 and shape[axis] != n:
            return [f"{n} per-axis scales but dimension {axis} of {t} has size {shape[axis]} (quantized "
                    "dimension size does not match number of scales)"]
        return []
    if not isinstance(t, TensorType):
        return [f"tensor containing the sub-channel quantized type must be ranked: {t}"]
    shape = t.get_shape()
    scale_shape = [d.data for d in q.scale_shape.data]
    if len(scale_shape) != len(shape):
        return [f"Rank of scales {len(scale_shape)} must match the rank of the tensor {len(shape)}: {t}"]
    blocks = dict(q.block_size_pairs())
    for axis in blocks:
        if axis >= len(shape):
            return [f"quantized dimension {axis} must be less than tensor rank {len(shape)}: {t}"]
    for axis, size in enumerate(shape):
        if size < 0:
            continue
        if size == 0:
            return [f"tensor dimension size of zero is not allowed with sub-channel quantization: {t}"]
        block = blocks.get(axis, size)
        if size % block:
            return [f"tensor dimension size {size} at axis {axis} must be divisible by the corresponding "
                    f"block size {block}: {t}"]
        if size // block != scale_shape[axis]:
            return [f"dimension size {scale_shape[axis]} of scales tensor at axis {axis} should match (tensor "
                    f"dimension at axis / block sizes at axis) = {size // block}: {t}"]
    return []


def quantized_tensor_problems(t: Attribute) -> list[str]:
    """Problems of a quantized type for our computation (qnn and nn ops): MLIR's checks of
    it in its container (`mlir_tensor_problems`), then `UniformQuantizedType.problems`."""
    q = quantized_element_type(t)
    if q is None:
        return []
    hit = _PROBLEMS.get(id(q))
    if hit is None or hit[0] is not q:
        if len(_PROBLEMS) > 4096:
            _PROBLEMS.clear()
        hit = _PROBLEMS[id(q)] = (q, q.problems())
    return mlir_tensor_problems(t, cast=True) + hit[1]


def verify_quantized_value(value: SSAValue, what: str) -> None:
    """MLIR's checks of a cast operand or result's quantized type in its container."""
    problems = mlir_tensor_problems(value.type, cast=True)
    if problems:
        raise VerifyException(f"{what}: {problems[0]}")


def _is_quantized(t: Attribute) -> bool:
    return isinstance(t, UniformQuantizedType | AnyQuantizedType | CalibratedQuantizedType)


def _expressed_of(q: Attribute) -> Attribute | None:
    if isinstance(q, AnyQuantizedType):
        return q.expressed.data[0] if q.expressed.data else None
    return q.expressed_type


# ----- ops ---------------------------------------------------------------------------


class _CastOp(IRDLOperation):
    input = operand_def()
    result = result_def()
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `to` type($result)"

    def __init__(self, input: SSAValue | Operation, result_type: Attribute):
        # what IRDLOperation's builder makes of one operand and one result, without its
        # generic conversions (the passes build thousands of these casts)
        Operation.__init__(self, operands=[SSAValue.get(input)], result_types=[result_type])

    def _check_shapes(self) -> None:
        a, b = self.input.type, self.result.type
        if _container_kind(a) != _container_kind(b):
            raise VerifyException(
                f"{self.name}: operand type {a} and result type {b} differ in shape (input and result "
                "are both scalars or both tensors with matching shape)")
        verify_quantized_value(self.input, f"{self.name} operand")
        verify_quantized_value(self.result, f"{self.name} result")

    def _verify_float_cast(self, quantized: str, real: str) -> None:
        """qcast / dcast: the `quantized` side ("operand" or "result") quantized, the `real` side
        a float type equal to its expressed type, and both of one shape."""
        types = {"operand": element_type(self.input.type), "result": element_type(self.result.type)}
        if not _is_quantized(types[quantized]):
            raise VerifyException(f"{self.name}: {quantized} element type {types[quantized]} is not quantized "
                                  f"({quantized} #0 must be scalar or tensor of quantized type)")
        if not is_float_type(types[real]):
            raise VerifyException(f"{self.name}: {real} element type {types[real]} is not a float type "
                                  f"({real} #0 must be scalar or tensor of floating-point)")
        self._check_shapes()
        self._check_float_cast(types[quantized], types[real], real)

    def _check_float_cast(self, quantized: Attribute, float_type: Attribute, side: str) -> None:
        expressed = _expressed_of(quantized)
        if float_type != expressed:
            raise VerifyException(
                f"{self.name}: {side} float type {float_type} is not the expressed type "
                f"{expressed if expressed is not None else '(none)'} of {quantized} (expressed type in "
                "quantized type expected to match float type)"
            )


@irdl_op_definition
class QuantizeCastOp(_CastOp):
    """Quantize: float -> quantized, `q = clamp(round(x / scale) + zero_point)`."""

    name = "quant.qcast"

    def verify_(self) -> None:
        self._verify_float_cast(quantized="result", real="operand")


@irdl_op_definition
class DequantizeCastOp(_CastOp):
    """Dequantize: quantized -> float, `x = scale * (q - zero_point)`."""

    name = "quant.dcast"

    def verify_(self) -> None:
        self._verify_float_cast(quantized="operand", real="result")


@irdl_op_definition
class StorageCastOp(_CastOp):
    """Reinterpret stored integers: quantized <-> its storage integer type, no arithmetic."""

    name = "quant.scast"

    def verify_(self) -> None:
        src, dst = element_type(self.input.type), element_type(self.result.type)
        for side, t in (("operand", src), ("result", dst)):
            if not _is_quantized(t) and not (
                isinstance(t, IntegerType) and t.signedness.data == Signedness.SIGNLESS
            ):
                raise VerifyException(
                    f"quant.scast: {side} element type {t} is neither a signless integer nor quantized "
                    f"({side} #0 must be scalar or tensor of signless integer or quantized type)"
                )
        if _is_quantized(src) == _is_quantized(dst):
            raise VerifyException(
                f"quant.scast: exactly one of {src} and {dst} must be quantized (input must be integer "
                "and result must be quantized, or vice versa)"
            )
        self._check_shapes()
        q, i = (src, dst) if _is_quantized(src) else (dst, src)
        if isinstance(q, CalibratedQuantizedType) or i.width.data != q.storage_width.data:
            storage = f"i{q.storage_width.data}" if not isinstance(q, CalibratedQuantizedType) else "(none)"
            raise VerifyException(
                f"quant.scast: integer type {i} is not the storage type {storage} of {q} (storage type "
                "in quantized type expected to match integer type)"
            )


class _UnknownQuantType(ParametrizedAttribute, TypeAttribute):
    """What `!quant.NAME` with an unknown NAME parses to: an error, also under
    --allow-unregistered-dialect (MLIR never reads a known dialect's types as opaque)."""

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        kind = cls.name.split(".", 1)[1]
        parser.raise_error(f"unknown quantized type {kind} (the quant types are uniform, any and "
                           "calibrated)", max(parser.pos - len(kind), 0), parser.pos)


@functools.cache
def _unknown_quant_type(name: str) -> type:
    return type("UnknownQuantType", (_UnknownQuantType,), {"name": name})


def _known_dialect_lookups() -> None:
    """Make the context refuse unknown `quant.*` ops and types even when unregistered
    constructs are allowed (an unknown op is 'not registered'; a type says it is unknown)."""
    if getattr(Context, "_quant_lookups", False):
        return

    def strict(lookup, unknown: bool):
        def strict_lookup(self, name: str, **kwargs):
            if not (name.startswith("quant.") and _quant_known(self)):
                return lookup(self, name, **kwargs)
            saved, self.allow_unregistered = self.allow_unregistered, False
            try:
                found = lookup(self, name, **kwargs)
            finally:
                self.allow_unregistered = saved
            return _unknown_quant_type(name) if found is None and unknown else found

        return strict_lookup

    Context.get_optional_attr = strict(Context.get_optional_attr, unknown=True)
    Context.get_optional_type = strict(Context.get_optional_type, unknown=True)
    Context.get_optional_op = strict(Context.get_optional_op, unknown=False)
    Context._quant_lookups = True


def _quant_known(ctx: Context) -> bool:
    return "quant" in ctx._registered_dialects or "quant" in ctx._loaded_dialects


Quant = Dialect(
    "quant",
    [QuantizeCastOp, DequantizeCastOp, StorageCastOp],
    [UniformQuantizedType, AnyQuantizedType, CalibratedQuantizedType],
)
_known_dialect_lookups()
