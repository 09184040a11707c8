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
from qdialect.interpreter import run_module
from qdialect.qparams import QParams, QuantizationError

MLIR_OPT = os.environ.get("MLIR_OPT", "/usr/lib/llvm-22/bin/mlir-opt")


def _ctx() -> Context:
    ctx = Context()
    for d in (Builtin, Func, Quant):
        ctx.load_dialect(d)
    return ctx


def test_build_per_tensor_and_read_back():
    t = UniformQuantizedType.per_tensor(0.5, -3)
    assert str(t) == "!quant.uniform<i8:f32, 5.000000e-01:-3>"
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
        "{0.10000000149011612,0.20000000298023224,0.30000001192092896}>"
    )
    np.testing.assert_array_equal(t.scale_array(), scales.astype(np.float64))
    np.testing.assert_array_equal(t.zero_point_array(), [0, 0, 0])
    assert t.axis == 0 and t.is_per_axis


def test_unsigned_and_narrow_widths():
    t = UniformQuantizedType.per_tensor(0.02, 128, storage="u8")
    assert str(t) == "!quant.uniform<u8:f32, 2.000000e-02:128>"
    assert t.storage_range() == (0, 255)
    t4 = UniformQuantizedType.per_tensor(0.125, 1, storage="i4", expressed="f16")
    assert str(t4) == "!quant.uniform<i4:f16, 1.250000e-01:1>"
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
        (dict(scale=0.0, zero_point=0), "out of expressed type range"),
        (dict(scale=float("nan"), zero_point=0), "out of expressed type range"),
        (dict(scale=float("inf"), zero_point=0), "out of expressed type range"),
        (dict(scale=0.5, zero_point=300), "zero point 300 is outside i8 [-128:127]"),
        (dict(scale=0.5, zero_point=0, storage="i1"), "storage width 1 of 'i1' is outside 2..32"),
        (dict(scale=0.5, zero_point=0, storage="i40"), "illegal storage type size: 40"),
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
    # what mlir-opt 22 prints for these doubles (measured; see test_scales_print_as_mlir_opt_prints_them)
    assert format_scale(1e-5) == "1.000000e-05"
    assert format_scale(3.0) == "3.000000e+00"
    assert format_scale(1 / 3) == "0.33333333333333331"
    assert format_scale(1e38) == "9.9999999999999997E+37"
    assert format_scale(10704349.0) == "0x41646ABBA0000000"
    # remembered texts keep the sign of zero (0.0 and -0.0 compare equal; mlir-opt 22 prints
    # `arith.constant -0.0 : f64` as -0.000000e+00), whichever is printed first
    assert format_scale(0.0) == "0.000000e+00" and format_scale(-0.0) == "-0.000000e+00"
    assert format_scale(0.0) == "0.000000e+00"


def test_per_axis_length_checked_with_location():
    q = "!quant.uniform<i8:f32:0, {0.5, 0.5, 0.5}>"
    text = (f"func.func @f(%a: tensor<2x{q}>) {{\n  %0 = quant.dcast %a : tensor<2x{q}> to tensor<2xf32>\n"
            "  func.return\n}\n")
    with pytest.raises(VerifyException, match="3 per-axis scales but dimension 0"):
        parse_module(_ctx(), text, "t.mlir")



def test_a_repeated_type_spelling_parses_to_the_same_type():
    # the parser looks a spelling up once it has parsed it; a different one is parsed
    t = "!quant.uniform<i8<-127:127>:f32:0, {5.000000e-01:1,2.500000e-01:-2}>"
    u = t.replace("0.25", "0.125")
    text = f"func.func @f(%a: tensor<2x{t}>, %b: tensor<2x{t}>, %c: tensor<2x{u}>) {{\n  func.return\n}}\n"
    f = next(iter(parse_module(_ctx(), text, "t.mlir").ops))
    a, b, c = (arg.type.element_type for arg in f.body.block.args)
    assert a == b and str(a) == t
    assert str(c) == u
    # an invalid type is reported each time it is read, never remembered
    bad = "func.func @f(%a: tensor<2x!quant.uniform<i8:f32, 0.0:3>>) {\n  func.return\n}\n"
    for _ in range(2):
        with pytest.raises(Exception, match="out of expressed type range"):
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
    "<i8:f32, 0.5:300>", "<i8:f32:0, {0.5, 0.5:128}>", "<i1:f64, 0.5>", "<i8:f32:0, {0.5,0.25}>",
    "<i8:f32, 0.5>", "<i8:f32, 0.5:-3>", "<u8:f32, 1.25e-3:128>", "<i8<-127:127>:f32:0, {0.5:1, 0.25:-2}>",
    "<i16:f16, 3.0e+2:-7>", "<i32:f32, 2.0e-10>", "<i4:bf16:0, {0.75:3, 1.0:-8}>", "<u16<0:1000>:f32, 7.5:999>",
]
_SPELLINGS_BAD = [
    "<i8:f32, 0.0>", "<i33:f32, 0.5>", "<i8<5:5>:f32, 0.5>", "<i8<-200:5>:f32, 0.5>",
    "<i8:f32:0, 0.5>", "<i8:f32, {0.5}>", "<i8:f16, 1.0e+30>", "<i8:f16, 5.8e-8>",
    "<i8:f32, 1.0:99999999999999999999>",
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


# ----- agreement with mlir-opt 22 (the reference for the types' syntax and printing) ---------


def _mlir_opt(text: str, *args: str) -> str:
    proc = subprocess.run([MLIR_OPT, *args], input=text, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _printed_types(text: str) -> list[str]:
    import re

    return re.findall(r"!quant\.(?:uniform|any|calibrated)<(?:[^<>]|<[^<>]*>)*>", text)


def _random_doubles(rng, n: int) -> list[float]:
    """Doubles of every kind MLIR's printer treats differently: 6-digit decimals, integers,
    dyadic fractions, denormals, arbitrary bit patterns."""
    import struct

    out = [1.0, 1 / 128, 0.1, 1 / 3, 1e-10, 1e38, 123456789.0, 10704349.0, 0.99872, 0.998, 5e-324,
           2.2250738585072014e-308, 1.7976931348623157e308, 999999.5, 9999995.0, 2.0**53, 1e22, 1e23]
    while len(out) < n:
        kind = rng.integers(5)
        if kind == 0:
            out.append(float(rng.random() * 10.0 ** rng.integers(-12, 13)))
        elif kind == 1:
            out.append(float(np.float32(rng.random() * 10.0 ** rng.integers(-8, 9))))
        elif kind == 2:
            out.append(2.0 ** int(rng.integers(-1070, 1020)))
        elif kind == 3:
            out.append(float(rng.integers(1, 10**15)))
        else:
            v = struct.unpack("<d", struct.pack("<Q", int(rng.integers(1, 2**63 - 2**52))))[0]
            out.append(v)
    return out


@pytest.mark.skipif(not Path(MLIR_OPT).exists() and not os.environ.get("CI"), reason="mlir-opt not installed")
def test_scales_print_as_mlir_opt_prints_them():
    """Per-tensor scales (f64: every double), per-axis lists, sub-channel scales in f16 / bf16 /
    f32 (rounded to the expressed type) and calibrated bounds print exactly as mlir-opt 22
    prints the same types; mlir-opt is given each scale's bits in hexadecimal."""
    import struct

    rng = np.random.default_rng(26)
    doubles = _random_doubles(rng, 400)
    spellings = []
    for v in doubles:
        spellings.append(f"!quant.uniform<i8:f64, 0x{struct.unpack('<Q', struct.pack('<d', v))[0]:X}>")
    for expressed in ("f16", "bf16", "f32"):
        for _ in range(40):
            scales = ", ".join(f"{rng.random() * 10.0 ** rng.integers(-3, 4):.9g}" for _ in range(4))
            spellings.append(f"!quant.uniform<i8:{expressed}:{{1:2}}, {{{{{scales.replace(', ', ':3, ', 1)}}}}}>")
    for low, high in ((-0.998, 1.2321), (-1e-10, 1e38), (-123456789.0, 0.0), (0.1, 0.30000000000000004)):
        spellings.append(f"!quant.calibrated<f32<{low:.17e}:{high:.17e}>>")
    spellings += ["!quant.any<i8<-8:7>:f32>", "!quant.any<ui4>", "!quant.uniform<si8<-4:3>:f32:1, {0.5,0.25:3}>"]
    text = "\n".join(f'"test.t"() {{t = {s}}} : () -> ()' for s in spellings)
    theirs = _printed_types(_mlir_opt(text, "--allow-unregistered-dialect"))
    ctx = _ctx()
    ctx.allow_unregistered = True
    ours = _printed_types(str(parse_module(ctx, text, "t.mlir")))
    assert len(theirs) == len(spellings)
    assert ours == theirs


@pytest.mark.skipif(not Path(MLIR_OPT).exists() and not os.environ.get("CI"), reason="mlir-opt not installed")
def test_our_printing_reads_back_in_both_tools():
    """Our printed types parse back to the same types with our parser, and mlir-opt prints them
    back unchanged."""
    spellings = ["!quant.uniform<u8:f32:{0:1, 1:2}, {{2.0:120,3.0:127}, {4.0,5.0}}>", "!quant.uniform<i8:f32, 0.5:300>",
                 "!quant.uniform<i4:f16:{}, {{0.1:-8}}>", "!quant.uniform<u8:f32, 10704349.0:128>",
                 "!quant.uniform<i8:bf16:0, {0.1, 3.0e38}>", "!quant.calibrated<f16<-1.0:2.5>>"]
    text = "\n".join(f'"test.t"() {{t = {s}}} : () -> ()' for s in spellings)
    ctx = _ctx()
    ctx.allow_unregistered = True
    once = str(parse_module(ctx, text, "t.mlir"))
    twice = str(parse_module(ctx, once, "t2.mlir"))
    assert twice == once
    assert _printed_types(_mlir_opt(once, "--allow-unregistered-dialect")) == _printed_types(once)


def _sub_channel_case(rng):
    shape = [int(d) for d in rng.integers(1, 4, size=int(rng.integers(1, 4)))]
    blocks = [int(rng.choice([b for b in range(1, 4) if (d * b) % b == 0])) for d in shape]
    dims = [d * b for d, b in zip(shape, blocks)]
    scales = rng.integers(1, 9, size=shape) / 4.0
    zero_points = rng.integers(-20, 21, size=shape)

    def nested(index=()):
        if len(index) == len(shape):
            z = int(zero_points[index])
            return repr(float(scales[index])) + (f":{z}" if z else "")
        return "{" + ", ".join(nested((*index, i)) for i in range(shape[len(index)])) + "}"

    given = ", ".join(f"{axis}:{b}" for axis, b in enumerate(blocks) if rng.random() < 0.8 or b > 1)
    q = f"!quant.uniform<i8:f32:{{{given}}}, {nested()}>"
    return q, dims, rng.integers(-128, 128, size=dims).astype(np.int8)


def _run_with_mlir(program: str, dims: list[int]) -> np.ndarray:
    """Lower `program` (quant ops, one printMemrefF32 call) with MLIR 22's own passes and run it
    with mlir-runner: the array it prints."""
    lowered = _mlir_opt(program, "--lower-quant-ops", "--canonicalize",
                        "--one-shot-bufferize=bufferize-function-boundaries", "--convert-linalg-to-loops",
                        "--expand-strided-metadata", "--lower-affine", "--convert-scf-to-cf", "--convert-cf-to-llvm",
                        "--convert-arith-to-llvm", "--finalize-memref-to-llvm", "--convert-func-to-llvm",
                        "--reconcile-unrealized-casts")
    libs = sorted(Path(MLIR_OPT).parents[1].glob("lib/libmlir_*runner_utils.so*"))
    proc = subprocess.run([str(Path(MLIR_OPT).parent / "mlir-runner"), "-e", "main", "-entry-point-result=void",
                           f"-shared-libs={','.join(str(p) for p in libs if 'arm' not in p.name)}"],
                          input=lowered, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    numbers = proc.stdout.split("data =", 1)[1].replace("[", " ").replace("]", " ").replace(",", " ").split()
    return np.array([float(x) for x in numbers], np.float32).reshape(dims)


@pytest.mark.skipif(not Path(MLIR_OPT).exists() and not os.environ.get("CI"), reason="mlir-opt not installed")
def test_sub_channel_dequantize_matches_mlir_runner():
    """quant.dcast of sub-channel types in our interpreter gives what MLIR 22's own lowering
    (--lower-quant-ops) computes when mlir-runner executes it (scales multiples of 1/4 and
    small values, so printMemrefF32's six digits are exact)."""
    from transforms.opt import QdOptMain

    rng = np.random.default_rng(7)
    for _ in range(6):
        q, dims, data = _sub_channel_case(rng)
        t = f"tensor<{'x'.join(map(str, dims))}x{q}>"
        ti, tf = (f"tensor<{'x'.join(map(str, dims))}x{el}>" for el in ("i8", "f32"))
        body = (f"  %q = quant.scast %a : {ti} to {t}\n  %d = quant.dcast %q : {t} to {tf}\n")
        ours_text = f"func.func @main(%a: {ti}) -> {tf} {{\n{body}  func.return %d : {tf}\n}}\n"
        ours = run_module(parse_module(QdOptMain(args=[]).ctx, ours_text, "t.mlir"), [data])[0]
        constant = "dense<\"0x" + data.tobytes().hex().upper() + f"\"> : {ti}"
        program = (f"func.func private @printMemrefF32(tensor<*xf32>)\nfunc.func @main() {{\n"
                   f"  %a = arith.constant {constant}\n{body}"
                   f"  %u = tensor.cast %d : {tf} to tensor<*xf32>\n"
                   "  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()\n  return\n}\n")
        theirs = _run_with_mlir(program, dims)
        np.testing.assert_array_equal(ours, theirs, err_msg=q)
        # quantize then dequantize values on the grid of the block they fall in (where MLIR's
        # truncating lowering and our rounding agree): any other block's scale would move them
        grid = ours.astype(np.float32)
        program = program.replace(f"  %a = arith.constant {constant}\n{body}",
                                  f"  %a = arith.constant dense<\"0x{grid.tobytes().hex().upper()}\"> : {tf}\n"
                                  f"  %q = quant.qcast %a : {tf} to {t}\n  %d = quant.dcast %q : {t} to {tf}\n")
        theirs = _run_with_mlir(program, dims)
        round_trip = (f"func.func @main(%a: {tf}) -> {tf} {{\n  %q = quant.qcast %a : {tf} to {t}\n"
                      f"  %d = quant.dcast %q : {t} to {tf}\n  func.return %d : {tf}\n}}\n")
        ours = run_module(parse_module(QdOptMain(args=[]).ctx, round_trip, "t.mlir"), [grid])[0]
        np.testing.assert_array_equal(ours, theirs, err_msg=q)
        np.testing.assert_array_equal(ours, grid, err_msg=q)


def test_unknown_quant_names_are_errors_even_unregistered():
    """MLIR never reads a known dialect's unknown type or op as an opaque one."""
    ctx = _ctx()
    ctx.allow_unregistered = True
    with pytest.raises(ParseError, match="unknown quantized type foobar"):
        parse_module(ctx, '"test.t"() {t = !quant.foobar<i8>} : () -> ()', "t.mlir")
    with pytest.raises(ParseError, match="quant.frobnicate"):
        parse_module(ctx, '"quant.frobnicate"() : () -> ()', "t.mlir")
    parse_module(ctx, '"test.t"() {t = !other.foobar<i8>} : () -> ()', "t.mlir")  # others stay opaque
