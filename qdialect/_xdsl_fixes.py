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
"""

from __future__ import annotations

import math
import re

from xdsl.parser.attribute_parser import AttrParser
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
