"""`FastMLIRLexer` reads exactly the tokens (and raises exactly the errors) of xDSL's `MLIRLexer`."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from qdialect.lexer import FastMLIRLexer

ROOT = Path(__file__).resolve().parent.parent

# pieces of tokens, near misses and characters the two lexers treat specially
_PIECES = list("%#!^@\"\\ \t\n\r\x0b\x0c/.-{}[]()<>:,=+*?|0123456789xXeE_$azAZé½٣\u2003") + [
    "//", "#-}", "{-#", "...", "->", "0x", "0x1F", "1.5e+3", "2.", '"a\\n"', '"\\41"', "@\"s\"", "%arg0#1",
    "!quant.uniform", "tensor<1x8xi8>",
]


def _tokens(lexer_class, text: str) -> list[tuple]:
    """Every token (kind, span, its span class, the lexer position after it) up to the end of
    the input and one past it, or up to the first error (its span, message and position)."""
    lexer = lexer_class(Input(text, "test"))
    out = []
    for _ in range(len(text) + 2):
        try:
            token = lexer.lex()
        except ParseError as e:
            out.append(("error", e.span.start, e.span.end, str(e), lexer.pos))
            break
        out.append((token.kind, token.span.start, token.span.end, type(token.span), lexer.pos))
    return out


@pytest.mark.parametrize("path", sorted((ROOT / "filecheck").rglob("*.mlir")), ids=lambda p: p.name)
def test_same_tokens_on_filecheck_inputs(path):
    text = path.read_text(encoding="utf-8")
    assert _tokens(FastMLIRLexer, text) == _tokens(MLIRLexer, text)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12).map("".join))
def test_same_tokens_and_errors_on_any_text(text):
    assert _tokens(FastMLIRLexer, text) == _tokens(MLIRLexer, text)


def test_end_of_input_is_xdsl_token():
    tokens = _tokens(FastMLIRLexer, "%0 ")
    assert [t[0] for t in tokens][:2] == [MLIRTokenKind.PERCENT_IDENT, MLIRTokenKind.EOF]
    assert tokens[1][1:3] == (3, 4)  # MLIRLexer's end-of-file span: one past the input
