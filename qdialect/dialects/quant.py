"""The `quant` dialect: uniform quantized types and the three casts, in MLIR's syntax.

```
!quant.uniform<i8:f32, 0.5:-3>                    per-tensor scale:zero_point
!quant.uniform<i8<-127:127>:f32, 0.0078125>       narrowed storage range
!quant.uniform<u8:f32, 0.02:128>                  unsigned storage
!quant.uniform<i8:f32:0, {0.1:1, 0.2:2, 0.3:3}>   per-axis, axis 0
quant.qcast / quant.dcast / quant.scast           quantize, dequantize, storage cast
```

A stored value `q` means the real number `scale * (q - zero_point)`.  The
verifier is stricter than MLIR's: scales finite and > 0 (also after rounding
to the expressed type), zero points inside the storage range, storage widths
2..32, per-axis list length equal to the tensor's size on that axis.
"""

from __future__ import annotations

import functools
import math
import re
import struct
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    Float16Type,
    Float32Type,
    FloatData,
    IntAttr,
    IntegerType,
    Signedness,
    TensorType,
    UnrankedTensorType,
)
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
from xdsl.utils.exceptions import VerifyException

import qdialect._xdsl_fixes  # noqa: F401  (linear-time string literals in the lexer)
from qdialect.qparams import QParams, storage_bounds
from qdialect.trusted import data_attr, data_attrs, int_attr

EXPRESSED_TYPES = {"f16": Float16Type, "bf16": BFloat16Type, "f32": Float32Type}
_EXPRESSED_LIMITS = {
    # (smallest positive subnormal, largest finite) of each expressed type
    "f16": (2.0**-24, 65504.0),
    "bf16": (2.0**-133, float(np.finfo(np.float32).max)),
    "f32": (2.0**-149, float(np.finfo(np.float32).max)),
}
_STORAGE_RE = re.compile(r"^([iu])([0-9]+)$")

# the parameters of `!quant.uniform<...>` by the exact spelling of `<...>`
_PARSED_PARAMETERS: dict[str, tuple] = {}
_QPARAMS: dict[int, tuple] = {}  # id(type) -> (type, its QParams): see qparams

# `<...>` as qdialect and MLIR print it: storage[<min:max>]:expressed[:axis], scale[:zp] or
# {scale[:zp], ...} (decimal scales, decimal zero points).  Read with regular expressions
# instead of token by token; any other spelling, and any value the checks refuse, goes
# through the parser (which says what is wrong and where).
_FLOAT_LITERAL = r"[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?"  # the lexer's FLOAT_LIT
_PRINTED_PARAMETERS = re.compile(
    rf"<([iu])([0-9]+)(?:<(-?[0-9]+):(-?[0-9]+)>)?:(f16|bf16|f32)(?::([0-9]+))?, "
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
    for name, cls in EXPRESSED_TYPES.items():
        if is_subclass(type(t), cls):  # (isinstance: through ABCMeta for each other class)
            return name
    return None


def format_scale(value: float) -> str:
    """Shortest text that reads back to the same double, always an MLIR float literal."""
    text = repr(float(value))
    if "e" in text:
        mantissa, exponent = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        text = f"{mantissa}e{exponent}"
    elif "." not in text and text not in ("inf", "-inf", "nan"):
        text += ".0"
    return text


@irdl_attr_definition
class UniformQuantizedType(ParametrizedAttribute, TypeAttribute):
    """A uniform quantized element type, per-tensor or per-axis.

    Stored integers of `storage_width` bits (signed or unsigned), restricted to
    [storage_min, storage_max], stand for `scale * (q - zero_point)` in the
    expressed float type.  `quantized_dimension` is -1 for per-tensor types;
    otherwise `scales`/`zero_points` hold one entry per index along that axis.
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

    def __init__(
        self,
        storage: str,
        expressed: str | Attribute,
        scales: Sequence[float],
        zero_points: Sequence[int],
        axis: int | None = None,
        storage_min: int | None = None,
        storage_max: int | None = None,
    ):
        match = _STORAGE_RE.match(storage)
        if match is None:
            raise VerifyException(f"quant.uniform: storage type '{storage}' is not iN or uN")
        signed = match.group(1) == "i"
        width = int(match.group(2))
        lo, hi = storage_bounds(width, signed) if 1 <= width <= 64 else (0, 0)
        if isinstance(expressed, str):
            if expressed not in EXPRESSED_TYPES:
                raise VerifyException(
                    f"quant.uniform: expressed type '{expressed}' is not one of f16, bf16, f32"
                )
            expressed = EXPRESSED_TYPES[expressed]()
        super().__init__(
            IntAttr(width),
            IntAttr(1 if signed else 0),
            IntAttr(lo if storage_min is None else int(storage_min)),
            IntAttr(hi if storage_max is None else int(storage_max)),
            expressed,
            ArrayAttr([FloatData(float(s)) for s in scales]),
            ArrayAttr([IntAttr(int(z)) for z in zero_points]),
            IntAttr(-1 if axis is None else int(axis)),
        )

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
    def axis(self) -> int | None:
        return self.quantized_dimension.data if self.is_per_axis else None

    @property
    def storage_type(self) -> IntegerType:
        """The signless integer type that holds the stored values (MLIR's storage type)."""
        return _integer_type(self.storage_width.data)

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
        (copy them to change them)."""
        hit = _QPARAMS.get(id(self))
        if hit is not None and hit[0] is self:
            return hit[1]
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
            expressed=expressed_name(self.expressed_type) or "f32",
        )
        if len(_QPARAMS) > 4096:  # bounded across the models of a long-lived process
            _QPARAMS.clear()
        _QPARAMS[id(self)] = (self, q)  # the type kept alive, so its id stays its own
        return q

    # ----- verification --------------------------------------------------------------

    def problems(self) -> list[str]:
        """Every rule this type breaks, each naming the bad value."""
        out: list[str] = []
        width = self.storage_width.data
        if not 2 <= width <= 32:
            out.append(f"storage width {width} of '{self.storage}' is outside 2..32")
            return out
        lo, hi = storage_bounds(width, self.signed)
        smin, smax = self.storage_range()
        if smin < lo or smax > hi:
            out.append(
                f"storage range [{smin}:{smax}] is outside {self.storage} [{lo}:{hi}]"
            )
        elif smin >= smax:
            out.append(f"storage range [{smin}:{smax}] is empty")
        ename = expressed_name(self.expressed_type)
        if ename is None:
            out.append(f"expressed type {self.expressed_type} is not one of f16, bf16, f32")
        if len(self.scales.data) != len(self.zero_points.data):
            out.append(
                f"{len(self.scales.data)} scales but {len(self.zero_points.data)} zero points"
            )
        if not self.is_per_axis and len(self.scales.data) != 1:
            out.append(f"per-tensor type has {len(self.scales.data)} scales")
        if self.is_per_axis and len(self.scales.data) == 0:
            out.append("per-axis type has no scales")
        if self.quantized_dimension.data < -1:
            out.append(f"axis {self.quantized_dimension.data} is negative")
        tiny, huge = _EXPRESSED_LIMITS.get(ename or "f32")
        for i, s in enumerate(self.scales.data):
            where = f" (index {i} on axis {self.axis})" if self.is_per_axis else ""
            v = s.data
            if not math.isfinite(v) or v <= 0:
                out.append(f"scale {format_scale(v)}{where} must be finite and > 0")
            elif v < tiny / 2 or v > huge:
                out.append(
                    f"scale {format_scale(v)}{where} is not representable in {ename}"
                )
        for i, z in enumerate(self.zero_points.data):
            where = f" (index {i} on axis {self.axis})" if self.is_per_axis else ""
            if not smin <= z.data <= smax:
                out.append(
                    f"zero point {z.data}{where} is outside {self.storage} [{smin}:{smax}]"
                )
        return out

    def verify(self) -> None:
        problems = self.problems()
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
        params = cls._parse_parameters(parser)
        if end is not None and parser.pos >= end and not text[end:parser.pos].strip():
            if len(_PARSED_PARAMETERS) >= 4096:
                _PARSED_PARAMETERS.clear()
            _PARSED_PARAMETERS[text[start:end]] = params
        return params

    @classmethod
    def _parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            ident = parser.parse_optional_identifier()
            match = _STORAGE_RE.match(ident) if ident is not None else None
            if match is None:
                parser.raise_error(
                    "quant.uniform: expected a storage type like i8 or u8", pos, parser.pos
                )
            signed = match.group(1) == "i"
            width = int(match.group(2))
            if not 2 <= width <= 32:
                parser.raise_error(
                    f"quant.uniform: storage width {width} of '{ident}' is outside 2..32",
                    pos,
                    parser.pos,
                )
            lo, hi = storage_bounds(width, signed)
            smin, smax = lo, hi
            if parser.parse_optional_punctuation("<") is not None:
                rpos = parser.pos
                smin = parser.parse_integer(allow_boolean=False)
                parser.parse_punctuation(":")
                smax = parser.parse_integer(allow_boolean=False)
                parser.parse_punctuation(">")
                if smin < lo or smax > hi:
                    parser.raise_error(
                        f"quant.uniform: storage range [{smin}:{smax}] is outside "
                        f"{ident} [{lo}:{hi}]",
                        rpos,
                        parser.pos,
                    )
                if smin >= smax:
                    parser.raise_error(
                        f"quant.uniform: storage range [{smin}:{smax}] is empty",
                        rpos,
                        parser.pos,
                    )
            parser.parse_punctuation(":")
            epos = parser.pos
            expressed = parser.parse_type()
            ename = expressed_name(expressed)
            if ename is None:
                parser.raise_error(
                    f"quant.uniform: expressed type {expressed} is not one of f16, bf16, f32",
                    epos,
                    parser.pos,
                )
            axis = -1
            if parser.parse_optional_punctuation(":") is not None:
                apos = parser.pos
                axis = parser.parse_integer(allow_boolean=False)
                if axis < 0:
                    parser.raise_error(
                        f"quant.uniform: axis {axis} is negative", apos, parser.pos
                    )
            parser.parse_punctuation(",")
            params: list[tuple[float, int]] = []
            if axis >= 0:
                parser.parse_punctuation("{", " for per-axis scales")
                params.append(_parse_scale_zp(parser, ename, smin, smax, ident, 0, axis))
                while parser.parse_optional_punctuation(",") is not None:
                    params.append(
                        _parse_scale_zp(parser, ename, smin, smax, ident, len(params), axis)
                    )
                parser.parse_punctuation("}")
            else:
                params.append(_parse_scale_zp(parser, ename, smin, smax, ident, None, None))
        return (
            IntAttr(width),
            IntAttr(1 if signed else 0),
            IntAttr(smin),
            IntAttr(smax),
            expressed,
            ArrayAttr([FloatData(s) for s, _ in params]),
            ArrayAttr([IntAttr(z) for _, z in params]),
            IntAttr(axis),
        )

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + self.storage)
        lo, hi = storage_bounds(self.storage_width.data, self.signed)
        smin, smax = self.storage_range()
        if (smin, smax) != (lo, hi):
            printer.print_string(f"<{smin}:{smax}>")
        printer.print_string(":")
        printer.print_attribute(self.expressed_type)
        pairs = [
            format_scale(s.data) + (f":{z.data}" if z.data != 0 else "")
            for s, z in zip(self.scales.data, self.zero_points.data)
        ]
        if self.is_per_axis:
            printer.print_string(f":{self.axis}, {{{', '.join(pairs)}}}>")
        else:
            printer.print_string(f", {pairs[0]}>")


def _printed_parameters(text: str) -> tuple | None:
    """`_parse_parameters` of `text` (the whole `<...>`) when it is in the printed form and
    every check passes, else None (then the parser reads it, and reports what is wrong)."""
    m = _PRINTED_PARAMETERS.fullmatch(text)
    if m is None:
        return None
    kind, width, smin, smax, ename, axis, pairs = m.groups()
    width = int(width)
    if not 2 <= width <= 32:
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
    tiny, huge = _EXPRESSED_LIMITS[ename]  # (the bounds also refuse inf; the literals spell no nan)
    if not (tiny / 2 <= min(scales) and max(scales) <= huge):
        return None
    if any(zero_point_texts):
        values = [int(zero_point) if zero_point else 0 for zero_point in zero_point_texts]
        if not (smin <= min(values) and max(values) <= smax):
            return None
        zero_points = tuple(map(int_attr, values))
    elif smin <= 0 <= smax:
        zero_points = (int_attr(0),) * len(scales)
    else:
        return None
    # the scales are Python floats and the zero points shared IntAttrs: what FloatData's and
    # ArrayAttr's verifiers accept, so they are built without them (qdialect.trusted)
    return (int_attr(width), int_attr(1 if kind == "i" else 0), int_attr(smin), int_attr(smax),
            _expressed_type(ename), data_attr(ArrayAttr, data_attrs(FloatData, scales)),
            data_attr(ArrayAttr, zero_points), int_attr(-1 if axis is None else int(axis)))


@functools.cache
def _expressed_type(name: str) -> Attribute:
    """The expressed type called `name`, built (and verified) once."""
    return EXPRESSED_TYPES[name]()


def _parse_scale_zp(
    parser: AttrParser,
    ename: str,
    smin: int,
    smax: int,
    storage: str,
    index: int | None,
    axis: int | None,
) -> tuple[float, int]:
    where = f" (index {index} on axis {axis})" if index is not None else ""
    pos = parser.pos
    negative = parser.parse_optional_punctuation("-") is not None
    scale = parser.parse_optional_float(allow_negative=False)
    token_text = parser._current_token.text
    if scale is None and token_text.lower().startswith("0x"):
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
        parser.raise_error(f"quant.uniform: expected a scale{where}", pos)
    if negative:
        scale = -scale
    end = parser.pos
    tiny, huge = _EXPRESSED_LIMITS[ename]
    if not math.isfinite(scale) or scale <= 0:
        parser.raise_error(
            f"quant.uniform: scale {format_scale(scale)}{where} must be finite and > 0",
            pos,
            end,
        )
    if scale < tiny / 2 or scale > huge:
        parser.raise_error(
            f"quant.uniform: scale {format_scale(scale)}{where} is not representable in {ename}",
            pos,
            end,
        )
    zero_point = 0
    zpos = pos
    if parser.parse_optional_punctuation(":") is not None:
        zpos = parser.pos
        zero_point = parser.parse_integer(allow_boolean=False)
    if not smin <= zero_point <= smax:
        parser.raise_error(
            f"quant.uniform: zero point {zero_point}{where} is outside "
            f"{storage} [{smin}:{smax}]",
            zpos,
            parser.pos,
        )
    return scale, zero_point


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


def quantized_tensor_problems(t: Attribute) -> list[str]:
    """Problems of a shaped quantized type that need its shape (per-axis length, axis rank)."""
    q = quantized_element_type(t)
    if q is None or not q.is_per_axis or not isinstance(t, TensorType):
        return []
    shape = t.get_shape()
    axis = q.axis
    if axis >= len(shape):
        return [f"axis {axis} is out of range for rank-{len(shape)} {t}"]
    n = len(q.scales.data)
    if shape[axis] >= 0 and shape[axis] != n:
        return [
            f"{n} per-axis scales but dimension {axis} of {t} has size {shape[axis]}"
        ]
    return []


def verify_quantized_value(value: SSAValue, what: str) -> None:
    problems = quantized_tensor_problems(value.type)
    if problems:
        raise VerifyException(f"{what}: {problems[0]}")


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
        if isinstance(a, TensorType) != isinstance(b, TensorType) or (
            isinstance(a, TensorType) and a.get_shape() != b.get_shape()
        ):
            raise VerifyException(f"{self.name}: operand type {a} and result type {b} differ in shape")
        verify_quantized_value(self.input, f"{self.name} operand")
        verify_quantized_value(self.result, f"{self.name} result")


def _is_float(t: Attribute) -> bool:
    return expressed_name(t) is not None


@irdl_op_definition
class QuantizeCastOp(_CastOp):
    """Quantize: float -> quantized, `q = clamp(round(x / scale) + zero_point)`."""

    name = "quant.qcast"

    def verify_(self) -> None:
        self._check_shapes()
        src, dst = element_type(self.input.type), element_type(self.result.type)
        if not isinstance(dst, UniformQuantizedType):
            raise VerifyException(f"quant.qcast: result element type {dst} is not quantized")
        if not _is_float(src):
            raise VerifyException(f"quant.qcast: operand element type {src} is not a float type")
        if src != dst.expressed_type:
            raise VerifyException(
                f"quant.qcast: operand float type {src} is not the expressed type "
                f"{dst.expressed_type} of {dst}"
            )


@irdl_op_definition
class DequantizeCastOp(_CastOp):
    """Dequantize: quantized -> float, `x = scale * (q - zero_point)`."""

    name = "quant.dcast"

    def verify_(self) -> None:
        self._check_shapes()
        src, dst = element_type(self.input.type), element_type(self.result.type)
        if not isinstance(src, UniformQuantizedType):
            raise VerifyException(f"quant.dcast: operand element type {src} is not quantized")
        if not _is_float(dst):
            raise VerifyException(f"quant.dcast: result element type {dst} is not a float type")
        if dst != src.expressed_type:
            raise VerifyException(
                f"quant.dcast: result float type {dst} is not the expressed type "
                f"{src.expressed_type} of {src}"
            )


@irdl_op_definition
class StorageCastOp(_CastOp):
    """Reinterpret stored integers: quantized <-> its storage integer type, no arithmetic."""

    name = "quant.scast"

    def verify_(self) -> None:
        self._check_shapes()
        src, dst = element_type(self.input.type), element_type(self.result.type)
        if isinstance(src, UniformQuantizedType) == isinstance(dst, UniformQuantizedType):
            raise VerifyException(
                f"quant.scast: exactly one of {src} and {dst} must be quantized"
            )
        q, i = (src, dst) if isinstance(src, UniformQuantizedType) else (dst, src)
        if not isinstance(i, IntegerType) or i.width.data != q.storage_width.data or (
            i.signedness.data != Signedness.SIGNLESS
        ):
            raise VerifyException(
                f"quant.scast: integer type {i} is not the storage type i{q.storage_width.data} of {q}"
            )


Quant = Dialect(
    "quant",
    [QuantizeCastOp, DequantizeCastOp, StorageCastOp],
    [UniformQuantizedType],
)
