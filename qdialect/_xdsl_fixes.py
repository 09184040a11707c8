"""Work-arounds for xDSL 0.74 problems that bad input can trigger; applied on import.

- The MLIR lexer matches string literals with
  `"(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"`: nested quantifiers, so an
  unterminated string (a truncated `qnn.constant dense<"0x...`) backtracks
  exponentially and the parser never returns.  The same language with
  possessive quantifiers (Python >= 3.11) fails in linear time; the two
  patterns accept exactly the same strings (the plain-character class excludes
  both the quote and the backslash, so giving characters back can never let
  the closing quote match).
- A splat dense literal (`dense<0> : tensor<4294967296xi64>`, or a hex splat)
  is expanded element by element before anything checks its size: a small
  text asked for tens of gigabytes.  The literal's type is now checked first:
  more than `MAX_DENSE_ELEMENTS` elements is a parse error naming the type.
- xDSL prints a non-finite element of a float dense array as MLIR does, as a
  hexadecimal bit pattern (`array<f64: 0x7FF0000000000000>`), but its parser
  only took float literals there, so printed output did not parse back.  Float
  dense arrays now also take hexadecimal bit patterns (as `mlir-opt` does).
- Integer types wider than MLIR's limit (2^24 - 1 bits) are refused (an
  attribute of type `i641073741824` asked for its 641-million-bit range), and
  dense arrays of integers wider than 64 bits are a parse error (xDSL has no
  byte format for them).
"""

from __future__ import annotations

import math
import re
import struct

from xdsl.dialects.builtin import BFloat16Type, DenseArrayBase, Float16Type, Float32Type, Float64Type, IntegerType
from xdsl.parser.attribute_parser import AttrParser
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.mlir_lexer import MLIRTokenKind
from xdsl.utils.mlir_lexer import MLIRLexer

_STRING_LITERAL = re.compile(r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')

if getattr(MLIRLexer, "_unescaped_characters_regex", None) is not None:
    MLIRLexer._unescaped_characters_regex = _STRING_LITERAL


MAX_DENSE_ELEMENTS = 1 << 24
"""Largest dense literal (in elements) the parser materializes; weights travel as hex bytes anyway."""

_parse_dense_literal_type = AttrParser._parse_dense_literal_type
_parse_dense_elements = AttrParser.parse_dense_int_or_fp_elements_attr


def _check_dense_size(parser: AttrParser, type, start: int) -> None:
    n = math.prod(type.get_shape())
    if n > MAX_DENSE_ELEMENTS:
        parser.raise_error(
            f"dense literal of type {type} has {n} elements, more than the parser's limit of "
            f"{MAX_DENSE_ELEMENTS}", start, parser.pos)


def _checked_dense_literal_type(self):
    start = self.pos
    type = _parse_dense_literal_type(self)
    _check_dense_size(self, type, start)
    return type


def _checked_dense_elements(self, type):
    if type is not None:
        _check_dense_size(self, type, self.pos)
    return _parse_dense_elements(self, type)


AttrParser._parse_dense_literal_type = _checked_dense_literal_type
AttrParser.parse_dense_int_or_fp_elements_attr = _checked_dense_elements


_HEX_FLOAT_FORMATS = {Float64Type: ("<Q", "<d"), Float32Type: ("<I", "<f"), Float16Type: ("<H", "<e")}


def _dense_array_float(parser: AttrParser, element_type) -> float:
    """A float literal, or a hexadecimal bit pattern of the element type (MLIR's spelling of inf/nan)."""
    value = parser.parse_optional_float()
    if value is not None:
        return value
    token = parser._current_token  # noqa: SLF001
    if token.kind == MLIRTokenKind.INTEGER_LIT and token.text.lower().startswith("0x"):
        start = parser.pos
        bits = parser.parse_integer(allow_negative=False, allow_boolean=False)
        if isinstance(element_type, BFloat16Type):
            if bits < 1 << 16:
                return struct.unpack("<f", struct.pack("<I", bits << 16))[0]
        else:
            fmt = _HEX_FLOAT_FORMATS.get(type(element_type))
            if fmt is not None and bits < 1 << (8 * struct.calcsize(fmt[0])):
                return struct.unpack(fmt[1], struct.pack(fmt[0], bits))[0]
        parser.raise_error(f"hexadecimal float {token.text} does not fit {element_type}", start, parser.pos)
    parser.raise_error("Expected float literal")


def _parse_builtin_densearray_attr(self):
    self.parse_characters("<", " in dense array")
    pos = self.pos
    element_type = self.parse_attribute()
    if not isinstance(element_type, IntegerType) and type(element_type) not in (*_HEX_FLOAT_FORMATS, BFloat16Type):
        return _parse_builtin_densearray_attr.original_tail(self, element_type, pos)
    if isinstance(element_type, IntegerType) and element_type.width.data > 64:
        self.raise_error(f"dense array element type {element_type} is wider than 64 bits", pos, self.pos)
    if self.parse_optional_punctuation(">"):
        return DenseArrayBase.from_list(element_type, [])
    self.parse_characters(":", " in dense array")
    if isinstance(element_type, IntegerType):
        if element_type.width.data > 64:  # xDSL has no byte format for them (NotImplementedError)
            self.raise_error(f"dense array element type {element_type} is wider than 64 bits", pos, self.pos)
        values = self.parse_comma_separated_list(
            self.Delimiter.NONE, lambda: self._parse_typed_integer(element_type, allow_boolean=True))
    else:
        values = self.parse_comma_separated_list(self.Delimiter.NONE, lambda: _dense_array_float(self, element_type))
    res = DenseArrayBase.from_list(element_type, values)
    self.parse_characters(">", " in dense array")
    return res


def _other_element_type(self, element_type, pos):
    self.raise_error("dense array element type must be an integer or floating point type", pos, self.pos)


_parse_builtin_densearray_attr.original_tail = _other_element_type
AttrParser._parse_builtin_densearray_attr = _parse_builtin_densearray_attr


MAX_INTEGER_WIDTH = (1 << 24) - 1
"""MLIR's IntegerType::kMaxWidth.  xDSL took any width, and an integer attribute of type
`i641073741824` computed its value range as a 641-million-bit integer (MemoryError)."""

_verify_integer_type = IntegerType.verify


def _verify_integer_width(self) -> None:
    _verify_integer_type(self)
    if self.width.data > MAX_INTEGER_WIDTH:
        raise VerifyException(f"integer width {self.width.data} is larger than MLIR's limit of {MAX_INTEGER_WIDTH}")


IntegerType.verify = _verify_integer_width
