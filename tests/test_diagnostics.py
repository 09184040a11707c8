"""`LocatingParser`'s short cuts (and the qnn dialect's) give what xDSL's parser gives: the same IR,
the same errors."""

import re

import pytest

from qdialect.diagnostics import LocatingParser, one_line, parse_module
from transforms.opt import QdOptMain

W = "tensor<2x1x1x2x!quant.uniform<i8<-127:127>:f32:0, {5.000000e-01,2.500000e-01}>>"
X = "tensor<1x1x1x2x!quant.uniform<i8:f32, 5.000000e-02:-3>>"
B = "tensor<2xi32>"


def _module(signature: str) -> str:
    return (f"func.func @main(%x: {X}) -> {X} {{\n"
            f'  %w = qnn.constant dense<"0x01020304"> : {W}\n'
            f'  %b = qnn.constant dense<"0x0100000002000000"> : {B}\n'
            f"  %y = qnn.conv2d %x, %w, %b : {signature}\n"
            f"  func.return %y : {X}\n}}\n")


@pytest.fixture(scope="module")
def ctx():
    return QdOptMain(args=[]).ctx


def _outcome(ctx, text: str) -> str:
    try:
        return str(parse_module(ctx, text, "t.mlir"))
    except Exception as e:  # noqa: BLE001  (the diagnostic is what is compared)
        return one_line(e, "t.mlir")


@pytest.mark.parametrize("signature", [
    f"({X}, {W}, {B}) -> {X}",
    f"({X},{W},{B})->({X})",
    f"(\n    {X},\n    {W}, {B}\n  ) -> {X}",
    f"({X}, {W}, {B}) -> (i8, {X})",
    f"({X}, {W} {B}) -> {X}",  # no comma
    f"({X}, {W},, {B}) -> {X}",
    f"({X}, {W}, {B},) -> {X}",
    f"({X}, {W}, {B} -> {X}",
    f"({X}, {W}, // a comment\n {B}) -> {X}",
    f"({X}, {W},\u2003{B}) -> {X}",  # white space the lexer does not take
    f"({X}, {W}, {B}) -> {X}x",
    f"({X}, {W}, {B}) -> si8",
    f"({X}, {W}, tensor<2xi33>) -> {X}",
    f"({X}, {W}, array<i64: 1>) -> {X}",
    f"({X}, {W}, {B}) -> ((i8) -> i8)",
    f"({X}, {W.replace('0.5', '0.50')}, {B}) -> {X}",  # a spelling not seen before
])
def test_function_types_from_known_types_parse_as_xdsl_parses_them(ctx, signature, monkeypatch):
    text = _module(signature)
    fast = _outcome(ctx, text)
    monkeypatch.setattr(LocatingParser, "_known_types", lambda *_args: None)  # every type list parsed
    assert fast == _outcome(ctx, text)



def _adds(*lines: str, end: str = "  func.return %x : {X}\n") -> str:
    body = "".join(f"  {line}\n" for line in lines)
    return f"func.func @main(%x: {X}) -> {X} {{\n{body}{end.format(X=X)}}}\n"


ADD = f"qnn.add %x, %x : ({X}, {X}) -> {X}"


def test_ops_of_one_signature_are_verified_once(ctx, monkeypatch):
    from qdialect.dialects.qnn import QnnOp

    # (the op's own rules run once per verification, through xDSL's Operation.verify or not)
    verified = []
    verify = QnnOp.verify_semantics
    monkeypatch.setattr(QnnOp, "verify_semantics", lambda op: (verified.append(op.name), verify(op)))
    parse_module(ctx, _adds(f"%a = {ADD}", f"%b = {ADD}", f"%c = {ADD.replace('%x, %x', '%x, %a')}"))
    assert verified.count("qnn.add") == 1


def test_only_qnn_op_classes_that_read_no_context_are_verified_once():
    # the cache's premise: qnn.py's verifiers read types and attributes only, and no
    # trait but Pure reads more; a subclass with another trait (or from elsewhere) is
    # verified every time
    from xdsl.traits import HasParent, Pure

    from qdialect.diagnostics import _cacheable
    from qdialect.dialects import qnn

    assert _cacheable(qnn.AddOp) and _cacheable(qnn.Conv2DOp)
    assert not _cacheable(qnn.ConstantOp)  # (not a QnnOp: its values are its own to check)
    # (classes standing for such subclasses: only what _cacheable reads of them)
    placed = type("PlacedAddOp", (qnn.AddOp,), {"__module__": qnn.__name__,
                                                "traits": (Pure(), HasParent(qnn.AddOp))})
    elsewhere = type("OtherAddOp", (qnn.AddOp,), {"__module__": __name__})
    assert _cacheable(type("SameAddOp", (qnn.AddOp,), {"__module__": qnn.__name__}))
    assert not _cacheable(placed) and not _cacheable(elsewhere)


def test_a_signature_seen_before_is_still_checked_where_it_stands(ctx):
    # the last op of a block must be a terminator, whatever its signature
    assert _outcome(ctx, _adds(f"%a = {ADD}", f"%b = {ADD}", end="")) == (
        "t.mlir:3:3: error: qnn.add: Operation qnn.add terminates block in single-block region but is not a terminator")
    # other attributes: verified again (and reported at the op)
    assert _outcome(ctx, _adds(f"%a = {ADD}", f"%b = {ADD.replace(' :', ' {act_min = 200 : i64} :')}")) == (
        "t.mlir:3:3: error: qnn.add: clamp bounds [200, 127] are not inside the result storage range "
        "[-128, 127] or are empty")


@pytest.mark.parametrize("operands", [
    "%x, %w, %b", "%x,%w,%b", "%x ,\n    %w , %b", "%x, %w, %b#0", "%x, %w#0, %b", "%x, %w %b", "%x, %w, %b,",
    "%x, // a comment\n %w, %b", "%x, %w, %bb", "%x, %w, %b$", "%x, %w, %0b", "%x, %w,\u2003%b", "%x, %w, b",
])
@pytest.mark.parametrize("value", [
    'dense<"0x0102FEFF"> :', 'dense < "0x0102fEfF" >\n :', 'dense<"0x0102FEF"> :', 'dense<"0x01 02FEFF"> :',
    'dense<"0X0102FEFF"> :', 'dense<"0x0102FEFG"> :', 'dense<"0x0102FEFF"> // a comment\n :',
    'dense<"\\30x0102FEFF"> :', 'dense<"0x0102FEFF">', 'dense<"0x0102FEFF"',
])
def test_printed_operands_and_constants_parse_as_xdsl_parses_them(ctx, operands, value, monkeypatch):
    from qdialect.dialects import qnn

    text = (f"func.func @main(%x: {X}) -> {X} {{\n"
            f"  %w = qnn.constant {value} {W}\n"
            f'  %b = qnn.constant dense<"0x0100000002000000"> : {B}\n'
            f"  %y = qnn.conv2d {operands} : ({X}, {W}, {B}) -> {X}\n"
            f"  func.return %y : {X}\n}}\n")
    fast = _outcome(ctx, text)
    never = re.compile(r"(?!)")  # every operand list and constant value read token by token
    monkeypatch.setattr(qnn, "_PRINTED_OPERAND", never)
    monkeypatch.setattr(qnn, "_PRINTED_CONSTANT", never)
    assert fast == _outcome(ctx, text)


@pytest.mark.parametrize("results", [
    "%y =", "%y=", "%y\n    =", "%y:1 =", "%y#0 =", "%y, %z =", "%y // a comment\n =", "%y\u2003=", "%y = =", "%y",
])
def test_result_lists_parse_as_xdsl_parses_them(ctx, results, monkeypatch):
    from qdialect import diagnostics

    text = _module(f"({X}, {W}, {B}) -> {X}").replace("%y =", results)
    fast = _outcome(ctx, text)
    monkeypatch.setattr(diagnostics, "_EQUALS", {str: re.compile(r"(?!)")})  # read token by token
    assert fast == _outcome(ctx, text)


@pytest.mark.parametrize("line", [
    '  %y = "qnn.add"(%x, %x) ({\n  ^bb0:\n    "test.op"() : () -> ()\n  }) : ({X}, {X}) -> {X}\n',  # a region
    '  %y = "qnn.add"(%x, %x) <{scale = 1 : i64}> : ({X}, {X}) -> {X}\n',  # a property
    '  %y = "qnn.add"(%x) : ({X}) -> {X}\n',  # its own rule: two operands
    '  %y:2 = "qnn.add"(%x, %x) : ({X}, {X}) -> ({X}, {X})\n',  # its own rule: one result
    '  %y = "qnn.add"(%x, %x) : ({X}, {X}) -> {X}\n',  # valid
])
def test_qnn_ops_verified_without_xdsls_irdl_checks_report_what_xdsl_reports(ctx, line, monkeypatch):
    # verify_module skips xDSL's IRDL checks of a qnn op only where they cannot fail
    # (_irdl_checks_pass), and re-runs them for xDSL's diagnostic when the op's own rules fail
    import qdialect.diagnostics as diagnostics

    text = _adds(line.replace("{X}", X), end=f"  func.return %x : {X}\n")
    fast = _outcome(ctx, text)
    monkeypatch.setattr(diagnostics, "_irdl_checks_pass", lambda op: False)
    assert fast == _outcome(ctx, text)
