"""xDSL's MLIR lexer with one regular expression for the common tokens.

`MLIRLexer.lex` reads a token character by character through a chain of tests
and a regular expression per token class: about 5 us a token, a third of the
parse time of a model's text.  `FastMLIRLexer.lex` skips white space and reads
the next token with a single match of `_TOKEN`, whose alternatives are the
token classes in the order `MLIRLexer` tries them, and builds the same token.
Whatever `_TOKEN` does not cover (the end of the input, string literals with
their escapes, identifiers that start with a non-ASCII letter, malformed
tokens) goes to `MLIRLexer.lex` from the same position, so every token and
every lexer error is exactly xDSL's.
"""

from __future__ import annotations

import re

from xdsl.utils.lexer import Span, Token
from xdsl.utils.mlir_lexer import KIND_BY_PUNCTUATION_SPELLING, MLIRLexer, MLIRToken, MLIRTokenKind

import qdialect._xdsl_fixes  # noqa: F401  (linear-time string literals in the lexer)

__all__ = ["FastMLIRLexer"]

# White space and `//` comments (as MLIRLexer skips them), then one token.  Every
# alternative is one capturing group, so `lastindex` says which one matched.
_TOKEN = re.compile(
    r"""(?:[ \t\n\r\f\v]++|//[^\n]*+\n?)*+
    (?:
      ([A-Za-z_][A-Za-z0-9_$.]*+)                              # 1 bare identifier
    | (?!\#-\})([%#!^](?:[0-9]++|[A-Za-z$._-][A-Za-z0-9$._-]*+))  # 2 prefixed identifier
    | (@[A-Za-z_][A-Za-z0-9_$.]*+)                             # 3 at-identifier (bare)
    | (0x[0-9A-Fa-f]++)                                        # 4 hexadecimal integer
    | ([0-9]++\.[0-9]*+(?:[eE][+-]?[0-9]++)?)                  # 5 float
    | ([0-9]++)                                                # 6 decimal integer
    | (->|\{-\#|\#-\}|\.\.\.|[-:,()}{\[\]<>=+/*?|])            # 7 punctuation
    | (")                                                      # 8 string literal
    )""",
    re.VERBOSE,
)

_PREFIXED_KINDS = {
    "%": MLIRTokenKind.PERCENT_IDENT,
    "#": MLIRTokenKind.HASH_IDENT,
    "!": MLIRTokenKind.EXCLAMATION_IDENT,
    "^": MLIRTokenKind.CARET_IDENT,
}
_BARE, _PREFIXED, _AT, _HEX, _FLOAT, _INTEGER, _PUNCTUATION, _STRING = range(1, 9)


_new = object.__new__


def _token(kind: MLIRTokenKind, start: int, end: int, input) -> MLIRToken:
    """`Token(kind, Span(start, end, input))`: the same fields, set directly (Span is a frozen
    dataclass, whose `__init__` sets each field through `object.__setattr__`; neither class
    has a `__post_init__`), about 1 us less per token."""
    span = _new(Span)
    fields = span.__dict__
    fields["start"] = start
    fields["end"] = end
    fields["input"] = input
    fields["line_offset"] = 0
    token = _new(Token)
    token.kind = kind
    token.span = span
    return token


class FastMLIRLexer(MLIRLexer):
    """`MLIRLexer` whose `lex` reads the common tokens with one match (see the module doc)."""

    def lex(self) -> MLIRToken:
        m = _TOKEN.match(self.input.content, self.pos)
        if m is None:
            return super().lex()
        group = m.lastindex
        start = m.start(group)
        if group == _BARE:
            kind = MLIRTokenKind.BARE_IDENT
        elif group == _PREFIXED:
            kind = _PREFIXED_KINDS[m.group(group)[0]]
        elif group == _PUNCTUATION:
            kind = KIND_BY_PUNCTUATION_SPELLING[m.group(group)]
        elif group == _FLOAT:
            kind = MLIRTokenKind.FLOAT_LIT
        elif group == _STRING:
            self.pos = start + 1  # where MLIRLexer is when it reads the literal
            return self._lex_string_literal(start)
        elif group == _AT:
            kind = MLIRTokenKind.AT_IDENT
        else:
            kind = MLIRTokenKind.INTEGER_LIT
        self.pos = end = m.end()
        return _token(kind, start, end, self.input)
