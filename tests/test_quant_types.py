"""The Python API of !quant.uniform types and the MLIR interop of their values."""

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, TensorType
from xdsl.dialects.func import Func
from xdsl.utils.exceptions import ParseError, VerifyException

from qdialect.diagnostics import parse_module
from qdialect.dialects.quant import Quant, UniformQuantizedType, format_scale
from qdialect.qparams import QParams, QuantizationError

MLIR_OPT = os.environ.get("MLIR_OPT", "/usr/lib/llvm-22/bin/mlir-opt")


def _ctx() -> Context:
    ctx = Context()
    for d in (Builtin, Func, Quant):
        ctx.load_dialect(d)
    return ctx


def test_build_per_tensor_and_read_back():
    t = UniformQuantizedType.per_tensor(0.5, -3)
    assert str(t) == "!quant.uniform<i8:f32, 0.5:-3>"
    assert t.storage == "i8" and not t.is_per_axis
    assert t.storage_range() == (-128, 127)
    assert t.scale_array().shape == () and float(t.scale_array()) == 0.5
    assert int(t.zero_point_array()) == -3
    q = t.qparams()
    assert q.bits == 8 and q.signed and q.axis is None


def test_build_per_axis_from_numpy():
    scales = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    t = UniformQuantizedType.per_axis(scales, 0, axis=0, storage="i8", storage_min=-127)
    assert str(t) == (
        "!quant.uniform<i8<-127:127>:f32:0, "
        "{0.10000000149011612, 0.20000000298023224, 0.30000001192092896}>"
    )
    np.testing.assert_array_equal(t.scale_array(), scales.astype(np.float64))
    np.testing.assert_array_equal(t.zero_point_array(), [0, 0, 0])
    assert t.axis == 0 and t.is_per_axis


def test_unsigned_and_narrow_widths():
    t = UniformQuantizedType.per_tensor(0.02, 128, storage="u8")
    assert str(t) == "!quant.uniform<u8:f32, 0.02:128>"
    assert t.storage_range() == (0, 255)
    t4 = UniformQuantizedType.per_tensor(0.125, 1, storage="i4", expressed="f16")
    assert str(t4) == "!quant.uniform<i4:f16, 0.125:1>"
    assert t4.storage_range() == (-8, 7)


def test_qparams_round_trip():
    q = QParams.make([0.5, 0.25], [1, -1], storage="i8", axis=1)
    t = UniformQuantizedType.from_qparams(q)
    back = t.qparams()
    np.testing.assert_array_equal(back.scale, q.scale)
    np.testing.assert_array_equal(back.zero_point, q.zero_point)
    assert back.axis == 1
    stored = np.array([[3, -1], [1, 1]], dtype=np.int8)
    np.testing.assert_array_equal(back.dequantize(stored), [[1.0, 0.0], [0.0, 0.5]])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(scale=0.0, zero_point=0), "scale 0.0 must be finite and > 0"),
        (dict(scale=float("nan"), zero_point=0), "scale nan must be finite and > 0"),
        (dict(scale=float("inf"), zero_point=0), "scale inf must be finite and > 0"),
        (dict(scale=0.5, zero_point=300), "zero point 300 is outside i8 [-128:127]"),
        (dict(scale=0.5, zero_point=0, storage="i40"), "storage width 40 of 'i40' is outside 2..32"),
        (dict(scale=0.5, zero_point=0, storage_min=5, storage_max=5), "storage range [5:5] is empty"),
        (dict(scale=0.5, zero_point=0, storage_min=-200), "storage range [-200:127] is outside i8"),
    ],
)
def test_programmatic_types_are_verified(kwargs, message):
    with pytest.raises(VerifyException, match=message.replace("[", r"\[").replace("]", r"\]")):
        UniformQuantizedType.per_tensor(**kwargs)


def test_qparams_validation_names_value():
    with pytest.raises(QuantizationError, match="zero point 999"):
        QParams.make(0.5, 999)
    with pytest.raises(QuantizationError, match=r"scale -1.0 \(channel 1\)"):
        QParams.make([1.0, -1.0], 0, axis=0)


def test_format_scale_is_an_mlir_float_literal():
    assert format_scale(1e-5) == "1.0e-05"
    assert format_scale(3.0) == "3.0"
    assert format_scale(1e300) == "1.0e+300"


def test_per_axis_length_checked_with_location():
    text = "func.func @f(%a: tensor<2x!quant.uniform<i8:f32:0, {0.5, 0.5, 0.5}>>) {\n  func.return\n}\n"
    with pytest.raises(VerifyException, match="3 per-axis scales but dimension 0"):
        parse_module(_ctx(), text, "t.mlir")



def test_a_repeated_type_spelling_parses_to_the_same_type():
    # the parser looks a spelling up once it has parsed it; a different one is parsed
    t = "!quant.uniform<i8<-127:127>:f32:0, {0.5:1, 0.25:-2}>"
    u = t.replace("0.25", "0.125")
    text = f"func.func @f(%a: tensor<2x{t}>, %b: tensor<2x{t}>, %c: tensor<2x{u}>) {{\n  func.return\n}}\n"
    f = next(iter(parse_module(_ctx(), text, "t.mlir").ops))
    a, b, c = (arg.type.element_type for arg in f.body.block.args)
    assert a == b and str(a) == t
    assert str(c) == u
    # an invalid type is reported each time it is read, never remembered
    bad = "func.func @f(%a: tensor<2x!quant.uniform<i8:f32, 0.5:300>>) {\n  func.return\n}\n"
    for _ in range(2):
        with pytest.raises(Exception, match="300"):
            parse_module(_ctx(), bad, "t.mlir")

_scales = st.floats(min_value=1e-30, max_value=1e30, allow_nan=False, allow_infinity=False)


@st.composite
def _types(draw):
    storage = draw(st.sampled_from(["i2", "i4", "i8", "u8", "i16", "u16", "i32"]))
    signed = storage[0] == "i"
    bits = int(storage[1:])
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if draw(st.booleans()):
        lo = draw(st.integers(lo, hi - 1))
        hi = draw(st.integers(lo + 1, hi))
    expressed = draw(st.sampled_from(["f32", "f32", "bf16"]))
    n = draw(st.integers(1, 4))
    per_axis = draw(st.booleans())
    scales = draw(st.lists(_scales, min_size=n, max_size=n)) if per_axis else [draw(_scales)]
    zps = [draw(st.integers(lo, hi)) for _ in scales]
    axis = 0 if per_axis else None
    return UniformQuantizedType(storage, expressed, scales, zps, axis, lo, hi), len(scales)


@pytest.mark.skipif(not Path(MLIR_OPT).exists() and not os.environ.get("CI"), reason="mlir-opt not installed")
@settings(max_examples=40, deadline=None)
@given(st.lists(_types(), min_size=1, max_size=6))
def test_mlir_opt_reads_our_types_and_we_read_its_output(types):
    """Print random types, pass them through mlir-opt, parse its output: identical values."""
    args = ", ".join(f"%a{i}: {TensorType(t, [n])}" for i, (t, n) in enumerate(types))
    text = f"func.func @f({args}) {{\n  func.return\n}}\n"
    proc = subprocess.run([MLIR_OPT], input=text, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    module = parse_module(_ctx(), proc.stdout, "mlir-opt-output")
    func = next(iter(module.ops))
    for (t, _), arg in zip(types, func.body.block.args):
        back = arg.type.element_type
        assert back == t, f"{t} came back as {back}"
        np.testing.assert_array_equal(back.scale_array(), t.scale_array())


_SPELLINGS_OK = [
    "<i8:f32, 0.5>", "<i8:f32, 0.5:-3>", "<u8:f32, 1.25e-3:128>", "<i8<-127:127>:f32:0, {0.5:1, 0.25:-2}>",
    "<i16:f16, 3.0e+2:-7>", "<i32:f32, 2.0e-10>", "<i4:bf16:0, {0.75:3, 1.0:-8}>", "<u16<0:1000>:f32, 7.5:999>",
]
_SPELLINGS_BAD = [
    "<i8:f32, 0.5:300>", "<i8:f32, 0.0>", "<i33:f32, 0.5>", "<i8<5:5>:f32, 0.5>", "<i8<-200:5>:f32, 0.5>",
    "<i8:f32:0, 0.5>", "<i8:f32, {0.5}>", "<i8:f16, 1.0e+30>", "<i8:f32:0, {0.5, 0.5:128}>",
]


@pytest.mark.parametrize("space", ["\u2003", "\x1c", "\xa0"])
def test_printed_form_reader_takes_only_the_lexers_white_space(space):
    """A space the lexer refuses is refused in a type too: the reader declines it, and the
    parser reports it (the reader used to accept any Unicode space between per-axis scales)."""
    from qdialect.dialects import quant

    spelling = f"<i8:f32:0, {{0.5,{space}0.25}}>"
    assert quant._printed_parameters(spelling) is None
    assert quant._printed_parameters(spelling.replace(space, "\n ")) is not None
    text = f"func.func @f(%a: tensor<2x!quant.uniform{spelling}>) {{\n  func.return\n}}\n"
    with pytest.raises(ParseError, match="Unexpected character"):
        parse_module(_ctx(), text, "t.mlir")


@pytest.mark.parametrize("spelling", _SPELLINGS_OK + _SPELLINGS_BAD)
def test_printed_form_reader_agrees_with_the_parser(spelling, monkeypatch):
    """The regular-expression reader of `!quant.uniform<...>` in its printed form gives the
    parser's own parameters, and declines (None) every spelling the parser refuses."""
    from qdialect.dialects import quant

    fast = quant._printed_parameters(spelling)
    text = f"func.func @f(%a: tensor<2x!quant.uniform{spelling}>) {{\n  func.return\n}}\n"
    quant._PARSED_PARAMETERS.clear()
    monkeypatch.setattr(quant, "_printed_parameters", lambda _text: None)  # the parser alone
    if spelling in _SPELLINGS_BAD:
        assert fast is None
        with pytest.raises(Exception, match="quant.uniform"):
            parse_module(_ctx(), text, "t.mlir")
        return
    assert fast is not None
    f = next(iter(parse_module(_ctx(), text, "t.mlir").ops))
    slow = f.body.block.args[0].type.element_type
    assert tuple(slow.parameters) == tuple(fast)
    quant._PARSED_PARAMETERS.clear()
