"""Parsing with source locations, and one-line diagnostics for people.

xDSL's verifier says what is wrong but not where; `parse_module` remembers
where each op was parsed so that `verify_module` can report
`FILE:LINE:COL: error: MESSAGE` for verifier failures as for parse errors.
"""

from __future__ import annotations

import functools
import re

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr, BFloat16Type, Float16Type, Float32Type, Float64Type, FunctionType, IndexType, IntegerType, ModuleOp,
    TensorType,
)
from xdsl.ir import ErasedSSAValue, Operation
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.irdl import AnyAttr, RangeOf, VarOperandDef, VarResultDef
from xdsl.traits import OpTrait, Pure
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRTokenKind

import qdialect._xdsl_fixes  # noqa: F401  (linear-time string literals in the lexer)
from qdialect import cyclic_gc, trusted
from qdialect.dialects import quant
from qdialect.dialects.qnn import ConstantOp, QnnOp
from qdialect.dialects.quant import mlir_tensor_problems
from qdialect.lexer import FastMLIRLexer


class LocatedVerifyError(VerifyException):
    """A verifier failure with the source span of the failing op, when known."""

    def __init__(self, message: str, span: Span | None):
        super().__init__(message)
        self.message = message
        self.span = span


# Types and attributes whose text extent is their balanced angle brackets, and so can be
# found before parsing them: `tensor<...>`, `!dialect.name<...>`, `array<...>`, ...
_BRACKETED_TYPE = {str: re.compile(r"(?:tensor|vector|memref|![A-Za-z_][\w.$]*)<"),
                   bytes: re.compile(rb"(?:tensor|vector|memref|![A-Za-z_][\w.$]*)<")}
_BRACKETED_ATTR = {str: re.compile(r"(?:array|affine_map)<"), bytes: re.compile(rb"(?:array|affine_map)<")}
# an integer attribute `-3 : i64` (its extent: up to the type's name)
_INTEGER_ATTR = {str: re.compile(r"-?[0-9]+ : (?:[su]?i[0-9]+|index)(?![\w$.])"),
                 bytes: re.compile(rb"-?[0-9]+ : (?:[su]?i[0-9]+|index)(?![\w$.])")}


class _Brackets:
    """A pair of brackets, to find where a text that opens with one closes."""

    NESTING = 4
    """Texts nested at most this deep are measured by one regular expression."""

    def __init__(self, opening: str, closing: str):
        both = re.escape(opening + closing)
        pattern = f'{re.escape(opening)}[^{both}"]*+{re.escape(closing)}'
        for _ in range(self.NESTING - 1):
            pattern = f'{re.escape(opening)}(?:[^{both}"]++|{pattern})*+{re.escape(closing)}'
        self._nested = {str: re.compile(pattern), bytes: re.compile(pattern.encode())}
        self._scan = {str: re.compile(f'[{both}"]'), bytes: re.compile(f'[{both}"]'.encode())}
        self._opening = {str: opening, bytes: opening.encode()}

    def end(self, content, start: int) -> int | None:
        """The end of the bracketed text that opens at `start`, or None when a string literal
        comes first (a string could hold brackets) or it does not close."""
        kind = type(content)
        m = self._nested[kind].match(content, start)
        if m is not None:
            return m.end()
        opening, depth = self._opening[kind], 0
        for m in self._scan[kind].finditer(content, start):
            c = m.group()
            if c == opening:
                depth += 1
            elif c in ('"', b'"'):
                return None
            else:
                depth -= 1
                if depth == 0:
                    return m.end()
        return None


_ANGLES = _Brackets("<", ">")
# the extent of an attribute dictionary `{...}` and of a function type `(...) -> ...`
_BRACES = _Brackets("{", "}")
_PARENS = _Brackets("(", ")")
# white space as the lexer skips it (not Unicode's)
_ARROW = {str: re.compile(r"\s*->\s*", re.ASCII), bytes: re.compile(rb"\s*->\s*")}
_KEYWORD_TYPE = {str: re.compile(r"(?:[su]?i[0-9]+|f16|bf16|f32|f64|index|none)(?![\w$.<])"),
                 bytes: re.compile(rb"(?:[su]?i[0-9]+|f16|bf16|f32|f64|index|none)(?![\w$.<])")}
_SPACE = {str: re.compile(r"\s|$"), bytes: re.compile(rb"\s|$")}
_SPACES = {str: re.compile(r"\s*", re.ASCII), bytes: re.compile(rb"\s*")}
_COMMA = {str: re.compile(r"\s*,\s*", re.ASCII), bytes: re.compile(rb"\s*,\s*")}
_EQUALS = {str: re.compile(r"\s*=", re.ASCII), bytes: re.compile(rb"\s*=")}
_OPEN_PAREN = {str: "(", bytes: b"("}
# a ranked tensor type of static, nonzero dimensions (`0x..` would lex as a hexadecimal
# literal: those, dynamic dimensions and encodings go through the parser)
_STATIC_TENSOR = {str: re.compile(r"tensor<((?:[1-9][0-9]*x)*)([^x<>][^<>]*(?:<.*>)?)>", re.S),
                  bytes: re.compile(rb"tensor<((?:[1-9][0-9]*x)*)([^x<>][^<>]*(?:<.*>)?)>", re.S)}
_QUANT_UNIFORM = {str: "!quant.uniform<", bytes: b"!quant.uniform<"}
_ANY_RANGE = RangeOf(AnyAttr())  # the constraint of `var_operand_def()` / `var_result_def()`


@functools.cache
def _simple_types() -> dict:
    """Element types spelled by a keyword, as the parser builds them."""
    out = {f"i{w}": IntegerType(w) for w in (1, 2, 4, 8, 16, 32, 64)}
    out.update({"f16": Float16Type(), "bf16": BFloat16Type(), "f32": Float32Type(), "f64": Float64Type(),
                "index": IndexType()})
    out.update({k.encode(): v for k, v in list(out.items())})
    return out


# xDSL's words for the commonest syntax errors, and mlir-opt's for the same (MLIR's tests expect those)
_MLIR_WORDS = (
    (re.compile(r"Expected ('[^']+')(.*)", re.S), r"expected \1\2"),
    (re.compile(r"('[^']+') expected"), r"expected \1"),
    (re.compile(r"Expected integer literal"), "expected integer value"),
    (re.compile(r"type expected"), "expected non-function type"),
)


_OPAQUE_SCAN = {str: re.compile(r'[<>"]'), bytes: re.compile(rb'[<>"]')}


class LocatingParser(Parser):
    """xDSL's parser that also records the source span of every op it parses.

    It also parses each distinct type text once: a model's text repeats the same
    tensor types on every op (a per-axis quantized type has a scale per channel),
    and xDSL lexes and builds them anew each time (about half of the parse time).
    A type (or `array<...>` / `affine_map<...>` attribute) that spans exactly its
    balanced angle brackets, or an integer attribute `N : iW`, is remembered by its
    text; the same text later is skipped and answered with the same (immutable)
    object.  Tokens come from `FastMLIRLexer` (the same tokens, read faster)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._parser_state = ParserState(FastMLIRLexer(self.lexer.input))
        self.op_spans: dict[int, Span] = {}
        self._parsed_texts: dict = {}

    def _bracketed(self, starts: dict, parse):
        """`parse()`, or the object the same text parsed to before (see the class doc)."""
        content = self.lexer.input.content
        start = self._current_token.span.start
        head = starts[type(content)].match(content, start)
        end = None if head is None else _ANGLES.end(content, head.end() - 1)
        if end is None:
            return parse()
        return self._remembered(content, start, end, parse)

    def parse_optional_attr_dict(self):
        """xDSL's, but a dictionary text seen before is not parsed again (a model's ops
        repeat theirs: strides, paddings, clamp bounds); each call gets its own dict."""
        content = self.lexer.input.content
        start = self._current_token.span.start
        if content[start:start + 1] not in ("{", b"{"):
            return super().parse_optional_attr_dict()
        end = _BRACES.end(content, start)
        if end is None:
            return super().parse_optional_attr_dict()
        return dict(self._remembered(content, start, end, super().parse_optional_attr_dict))

    def parse_optional_function_type(self):
        """xDSL's, but a function type text seen before is not parsed again: its extent
        is its balanced parentheses, `->` and a parenthesized list, a bracketed type or a
        type keyword, followed by white space (anything else is parsed as usual).  A new
        text whose every type is one seen before (a convolution's, whose weight types
        were spelled on their constants) is put together from those (`_known_types`)."""
        content = self.lexer.input.content
        start = self._current_token.span.start
        kind = type(content)
        if content[start:start + 1] not in ("(", b"("):
            return super().parse_optional_function_type()
        inputs_end = _PARENS.end(content, start)
        arrow = None if inputs_end is None else _ARROW[kind].match(content, inputs_end)
        if arrow is None:
            return super().parse_optional_function_type()
        pos = arrow.end()
        if content[pos:pos + 1] in ("(", b"("):
            end = _PARENS.end(content, pos)
            outputs = (pos + 1, None if end is None else end - 1)
        else:
            end = self._type_end(content, pos)
            outputs = (pos, end)
        if end is None or _SPACE[kind].match(content, end) is None:
            return super().parse_optional_function_type()
        return self._remembered(content, start, end, lambda: self._function_type_of_known_types(
            content, (start + 1, inputs_end - 1), outputs, end))

    def _function_type_of_known_types(self, content, inputs: tuple, outputs: tuple, end: int):
        """The function type of the input and output type lists at `inputs` and `outputs`
        (start, end) ending at `end` when `_known_types` knows both, else parsed as usual."""
        input_types = self._known_types(content, *inputs)
        output_types = None if input_types is None else self._known_types(content, *outputs)
        if output_types is None:
            return super().parse_optional_function_type()
        self._resume_from(end)
        # types (as the parser builds them) are valid elements of an ArrayAttr, and valid
        # parameters of a function type
        return trusted.attr(FunctionType, trusted.data_attr(ArrayAttr, tuple(input_types)),
                            trusted.data_attr(ArrayAttr, tuple(output_types)))

    @staticmethod
    def _type_end(content, pos: int) -> int | None:
        """The end of the bracketed type or type keyword that starts at `pos`, if one does."""
        kind = type(content)
        if (head := _BRACKETED_TYPE[kind].match(content, pos)) is not None:
            return _ANGLES.end(content, head.end() - 1)
        if (word := _KEYWORD_TYPE[kind].match(content, pos)) is not None:
            return word.end()
        return None

    def _known_types(self, content, start: int, end: int) -> list | None:
        """The types of the comma-separated type list `content[start:end]` (without its
        parentheses) when it is not empty and each type is a keyword type, a bracketed type
        parsed before or a static tensor type (what parsing it would give, see
        `_remembered`), else None."""
        kind = type(content)
        if _OPEN_PAREN[kind] in content[start:end]:
            return None  # a nested function type or affine map: its `->` is not a bracket
        pos = _SPACES[kind].match(content, start).end()
        types = []
        while True:
            type_end = self._type_end(content, pos)
            if type_end is None or type_end > end:
                return None
            text = content[pos:type_end]
            known = _simple_types().get(text) if text[-1:] not in (">", b">") else self._parsed_texts.get(text)
            if known is None:
                known = self._static_tensor(text)
                if known is None:
                    return None
                self._parsed_texts[text] = known
            types.append(known)
            separator = _COMMA[kind].match(content, type_end, end)
            if separator is None:
                return types if _SPACES[kind].match(content, type_end, end).end() == end else None
            pos = separator.end()

    def _remembered(self, content, start: int, end: int, parse):
        """`parse()` of the text `content[start:end]`, or the object it parsed to before."""
        key = content[start:end]
        done = self._parsed_texts.get(key)
        if done is None:
            done = self._static_tensor(key)
            if done is not None:
                self._parsed_texts[key] = done
        if done is not None:
            self._resume_from(end)
            return done
        result = parse()
        # remembered only when the parse took exactly that text (then the same text
        # always parses to an equal object: nothing after the closing bracket matters)
        resumed = self._current_token.span.start
        if result is not None and resumed >= end and not content[end:resumed].strip():
            self._parsed_texts[key] = result
        return result

    def _static_tensor(self, text):
        """The TensorType `text` (`tensor<...>`, the whole text of a type) is when it has static
        nonzero dimensions and an element type that is a keyword (`i8`, `f32`), a type parsed
        before, or a `!quant.uniform` in the printed form that passes every check; else None
        (then the parser reads it, and reports anything wrong where it is).  The same object
        the parser builds: `TensorType(element, dims)`."""
        m = _STATIC_TENSOR[type(text)].fullmatch(text)
        if m is None:
            return None
        dims, el_text = m.groups()
        # (remembered texts that start with `!` are dialect types, parsed as types)
        element = self._parsed_texts.get(el_text) if el_text[:1] in ("!", b"!") else _simple_types().get(el_text)
        if element is None:
            prefix = _QUANT_UNIFORM[type(text)]
            if not el_text.startswith(prefix) or self.ctx.get_optional_type("quant.uniform") is not quant.UniformQuantizedType:
                return None
            body = el_text[len(prefix) - 1:]
            if isinstance(body, bytes):
                try:
                    body = body.decode("ascii")
                except UnicodeDecodeError:
                    return None
            if quant._angle_bracket_end(body, 0) != len(body):
                return None
            params = quant._PARSED_PARAMETERS.get(body)
            if params is None:
                params = quant._printed_parameters(body)
                if params is None:
                    return None
            # _printed_parameters passed every check of the type's verifier
            element = trusted.attr(quant.UniformQuantizedType, *params)
            self._parsed_texts[el_text] = element
        # static dimensions (>= 1, by the pattern) of a valid element type
        return trusted.tensor_type(element, [int(d) for d in dims.split(b"x" if isinstance(dims, bytes) else "x")[:-1]])

    def parse_optional_type(self):
        start = self._current_token.span
        if self._current_token.kind is MLIRTokenKind.EXCLAMATION_IDENT:
            self._check_opaque_brackets(start)
        try:
            return self._bracketed(_BRACKETED_TYPE, super().parse_optional_type)
        except ParseError as e:
            # xDSL says an unknown `!dialect.name` is not registered at the token after it (the
            # next line, or the end of the input): say it at the type, as mlir-opt does
            if e.msg.endswith("is not registered") and e.span.start > start.start:
                raise ParseError(start, e.msg) from None
            raise

    def _check_opaque_brackets(self, name: Span) -> None:
        """mlir-opt's check of the opaque spelling `!dialect<...>`: its `<` must close (a `>`
        after `-` is an arrow's), else `unbalanced '<' character in pretty dialect name` at the
        `<`.  (A string literal inside stops the check: its brackets are not the type's.)"""
        content = name.input.content
        if content[name.end:name.end + 1] not in ("<", b"<") or "." in name.text:
            return
        depth = 0
        for m in _OPAQUE_SCAN[type(content)].finditer(content, name.end):
            c = m.group()
            if c in ('"', b'"'):
                return
            if c in ("<", b"<"):
                depth += 1
            elif m.start() == 0 or content[m.start() - 1:m.start()] not in ("-", b"-"):
                depth -= 1
                if depth == 0:
                    return
        self.raise_error("unbalanced '<' character in pretty dialect name", name.end, name.end + 1)

    def parse_optional_attribute(self):
        content = self.lexer.input.content
        start = self._current_token.span.start
        m = _INTEGER_ATTR[type(content)].match(content, start)
        if m is not None:  # a 64-bit integer attribute costs ~70 us to lex and build
            return self._remembered(content, start, m.end(), super().parse_optional_attribute)
        return self._bracketed(_BRACKETED_ATTR, super().parse_optional_attribute)

    def _parse_op_result_list(self):
        """xDSL's, but one result `%name =` (the common case) is read with one match: the
        `=` right after the name's token (white space between) leaves no `:size` or second
        result to read."""
        token = self._current_token
        if token.kind is MLIRTokenKind.PERCENT_IDENT:
            content = self.lexer.input.content
            equals = _EQUALS[type(content)].match(content, token.span.end)
            if equals is not None:
                self._resume_from(equals.end())
                return [(token.span, 1)]
        return super()._parse_op_result_list()

    def raise_error(self, msg: str, at_position=None, end_position=None):
        """xDSL's, in mlir-opt's words where xDSL words a syntax error otherwise
        (`Expected ':'` is `expected ':'`, `Expected integer literal` is `expected integer value`)."""
        for pattern, words in _MLIR_WORDS:
            if pattern.fullmatch(msg):
                msg = pattern.sub(words, msg)
                break
        super().raise_error(msg, at_position, end_position)

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """xDSL's, but a text without operations (empty, or only alias definitions) is an empty
        module, as for mlir-opt."""
        if not allow_implicit_module:
            return super().parse_module(allow_implicit_module)
        ops: list[Operation] = []
        while self._current_token.kind != MLIRTokenKind.EOF:
            if self._current_token.kind in (MLIRTokenKind.HASH_IDENT, MLIRTokenKind.EXCLAMATION_IDENT):
                self._parse_alias_def()
            elif self._current_token.kind == MLIRTokenKind.FILE_METADATA_BEGIN:
                self._parse_file_metadata_dictionary()
            elif (op := self.parse_optional_operation()) is not None:
                ops.append(op)
            else:
                self.raise_error("Could not parse entire input!")
        if self.forward_ssa_references:
            names = ", ".join("%" + name for name in self.forward_ssa_references)
            self.raise_error(f"values used but not defined: [{names}]")
        if len(ops) == 1 and isinstance(ops[0], ModuleOp):
            return ops[0]
        return ModuleOp(ops)

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        try:
            op = super().parse_operation()
        except (IndexError, KeyError, TypeError, AttributeError, AssertionError) as e:
            # an op's custom parser (xDSL's linalg named ops, ...) that trips over malformed text
            detail = " ".join(str(e).split())
            head = re.match(r'\s*(?:%[^=]*=\s*)?"?([A-Za-z_][\w$]*\.[\w.$]+)', str(start.input.content[start.start : start.start + 400]))
            name = f"{head.group(1)}: " if head else ""
            raise ParseError(start, f"{name}malformed operation ({type(e).__name__}{': ' + detail if detail else ''})") from None
        self.op_spans[id(op)] = start
        return op


@cyclic_gc.paused()
def parse_module(
    ctx: Context, text: str | bytes, name: str = "<input>", *, verify: bool = True,
    line_offset: int = 0, located: list[tuple[Operation, Span]] | None = None,
) -> ModuleOp:
    """Parse MLIR text into a module and (by default) verify it with locations.

    `located`, when given, receives each parsed op with its source span (the span's
    `line_offset` set): what `locate` needs to place a pass's error on an op."""
    parser = LocatingParser(ctx, text, name)
    try:
        try:
            module = parser.parse_module()
        except (VerifyException, ArithmeticError, ValueError) as e:
            # xDSL builds attributes while it parses; a value they cannot hold (a
            # hexadecimal float of more than 64 bits, ...) is a mistake in the text: say where
            msg = " ".join(str(e).split()) or type(e).__name__
            if isinstance(e, (ArithmeticError, ValueError)):
                msg = f"invalid value: {msg}"
            raise ParseError(parser._current_token.span, msg) from None
    except ParseError as e:
        if line_offset:
            e.span = Span(e.span.start, e.span.end, e.span.input, line_offset)
        raise
    if located is not None:
        for op in module.walk():
            span = parser.op_spans.get(id(op))
            if span is not None:
                located.append((op, Span(span.start, span.end, span.input, line_offset)))
    if verify:
        verify_module(module, parser.op_spans, line_offset)
    return module


def verify_module(
    module: ModuleOp, op_spans: dict[int, Span] | None = None, line_offset: int = 0
) -> None:
    """xDSL's verifier op by op, plus the quantized-type rules that need a value's shape.

    Per-axis types must have one scale per index of an existing dimension; these
    are checked on every block argument and op result.  A qnn op whose verifier
    reads nothing but what an op verified before had (`_signature`) is not
    verified again.  Raises LocatedVerifyError naming the op (and its source
    location when known).
    """
    spans = op_spans or {}
    # by id: the types and attributes stay alive in module while it is verified
    problems_of: dict[int, list] = {}  # id(type) -> its problems
    verified: set[tuple] = set()  # the signatures of the qnn ops verified so far
    for op in module.walk():
        span = spans.get(id(op))
        if span is not None and line_offset:
            span = Span(span.start, span.end, span.input, line_offset)
        try:
            signature = _signature(op)
            if signature is None or signature not in verified:
                if not _irdl_checks_pass(op):
                    op.verify(verify_nested_ops=False)
                else:
                    try:
                        op.verify_semantics()
                    except Exception:
                        op.verify(verify_nested_ops=False)  # xDSL's diagnostic of the same failure
                if signature is not None:
                    verified.add(signature)
            for region in op.regions:
                for block in region.blocks:
                    for arg in block.args:
                        _check_value_type(op, arg.type, f"block argument {arg.index}", problems_of)
            for i, res in enumerate(op.results):
                _check_value_type(op, res.type, f"result {i}", problems_of)
        except LocatedVerifyError:
            raise
        except VerifyException as e:
            raise LocatedVerifyError(_first_reason(str(e), op), span) from None


@functools.cache
def _irdl_checkless(cls: type) -> bool:
    """A qnn op class (QnnOp's or ConstantOp's contract: its rules are `verify_semantics`)
    whose IRDL definition checks nothing but that an op without operands (or results)
    declared has none: at most one variadic operand and result of any type, no regions,
    successors, properties or attributes declared, no option, traits that verify nothing."""
    if not (issubclass(cls, (QnnOp, ConstantOp)) and cls.__module__ == QnnOp.__module__):
        return False
    op_def = cls.get_irdl_definition()
    return (all(len(defs) == 0 or (len(defs) == 1 and type(defs[0][1]) is kind and defs[0][1].constr == _ANY_RANGE)
                for defs, kind in ((op_def.operands, VarOperandDef), (op_def.results, VarResultDef)))
            and not (op_def.regions or op_def.successors or op_def.properties or op_def.attributes or op_def.options)
            and all(type(trait).verify is OpTrait.verify for trait in op_def.traits))


def _irdl_checks_pass(op: Operation) -> bool:
    """Whether xDSL's part of `op.verify` (its IRDL definition's checks, the erased-operand,
    successor and terminator checks) passes, by construction: an `_irdl_checkless` op with
    no region, successor, property or erased operand, not ending its block, and without
    operands (results) when its class declares none.  Then `op.verify_semantics()` is all
    that verifying it does."""
    cls = type(op)
    if not _irdl_checkless(cls) or op.regions or op._successors or op.properties or op.next_op is None:
        return False
    op_def = cls.get_irdl_definition()
    operands = op._operands  # (op.operands builds a view)
    if (not op_def.operands and operands) or (not op_def.results and op.results):
        return False
    return not any(quant.is_subclass(type(value), ErasedSSAValue) for value in operands)


@functools.cache
def _cacheable(cls: type) -> bool:
    """A qnn op class whose verification reads only types and attributes: defined in
    qdialect/dialects/qnn.py, whose verifiers keep QnnOp's contract, and with no trait but
    Pure (a trait such as HasParent would read the op's place).  A subclass from anywhere
    else, or with another trait, is verified every time."""
    return (issubclass(cls, QnnOp) and cls.__module__ == QnnOp.__module__
            and all(type(trait) is Pure for trait in cls.traits))


def _signature(op: Operation) -> tuple | None:
    """All that verifying `op` reads, when it is a qnn op: its class, the identities of its
    operand and result types and its attributes in order (QnnOp's contract for its
    verifiers; xDSL's part, IRDL's and the Pure trait's, reads no more of such an op).
    None for other ops, and for a qnn op with regions, successors, properties or an
    erased operand, or that ends its block (where xDSL requires a terminator)."""
    if (not _cacheable(type(op)) or op.regions or op._successors or op.properties
            or op.next_op is None):
        return None
    operands = op._operands  # (op.operands builds a view)
    if any(quant.is_subclass(type(value), ErasedSSAValue) for value in operands):
        return None
    return (type(op), tuple(id(value.type) for value in operands), tuple(id(r.type) for r in op.results),
            tuple((name, id(attr)) for name, attr in op.attributes.items()))


def _check_value_type(op: Operation, t, what: str, problems_of: dict[int, list] | None = None) -> None:
    if problems_of is None:
        problems = mlir_tensor_problems(t)
    else:
        problems = problems_of.get(id(t))
        if problems is None:
            problems = problems_of[id(t)] = mlir_tensor_problems(t)
    if problems:
        raise VerifyException(f"{op.name}: {what}: {problems[0]}")


def _first_reason(text: str, op: Operation) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    msg = lines[0] if lines else "verification failed"
    if not msg.startswith(op.name) and not msg.startswith("!") and not msg.startswith("'"):
        msg = f"{op.name}: {msg}"
    return " ".join(msg.split())


# an op's name in a message (not a type's `!quant.uniform`, a symbol's `@f.g` or a value's
# `%a.b`), and the `%name` of its result when one follows
_OP_NAME = re.compile(r"(?<![\w.$%@!#])([A-Za-z_][\w$]*\.[\w.$]*[\w$])(?: %([\w$.-]+))?")


def locate(message: str, module: ModuleOp, located: list[tuple[Operation, Span]]) -> Span | None:
    """Where the op that `message` (a pass's error) names was parsed: the first op name in the
    message that an op of `module` with a span in `located` has (the op whose result is the
    `%name` after it, when one does), or None.  Passes report refusals by op name; this puts
    the report on the op's line, as mlir-opt puts an op's diagnostic at the op's location."""
    spans = {id(op): span for op, span in located}  # (`located` keeps the ops alive: ids are theirs)
    by_name: dict[str, list[Operation]] = {}
    for op in module.walk():
        if id(op) in spans:
            by_name.setdefault(op.name, []).append(op)
    for m in _OP_NAME.finditer(message):
        ops = by_name.get(m.group(1))
        if not ops:
            continue
        if m.group(2) is not None:
            ops = [op for op in ops if any(r.name_hint == m.group(2) for r in op.results)] or ops
        return spans[id(ops[0])]
    return None


def one_line(error: BaseException, source: str) -> str:
    """`FILE:LINE:COL: error: MESSAGE` when the place is known, else `SOURCE: error: MESSAGE`."""
    if isinstance(error, ParseError):
        loc = error.span.get_location()
        return f"{loc.file}:{loc.line}:{loc.col}: error: {' '.join(str(error.msg).split())}"
    if isinstance(error, LocatedVerifyError):
        if error.span is not None:
            loc = error.span.get_location()
            return f"{loc.file}:{loc.line}:{loc.col}: error: {error.message}"
        return f"{source}: error: {error.message}"
    lines = [ln for ln in str(error).strip().splitlines() if ln.strip()]
    msg = lines[0] if lines else type(error).__name__
    return f"{source}: error: {' '.join(msg.split())}"


__all__ = [
    "DiagnosticException",
    "LocatedVerifyError",
    "LocatingParser",
    "locate",
    "one_line",
    "parse_module",
    "verify_module",
]
