"""Regression tests for what the fuzzers (tests/fuzz/) found, and the CLI contract they check.

Each test pins one diagnostic class or one fixed crash: bad input is exit
status 2 with exactly one line on stderr, never a traceback, a hang or a
gigantic allocation.
"""

from __future__ import annotations

import io
import sys
import time

import numpy as np
import pytest

from qdialect.diagnostics import parse_module
from qdialect.interpreter import AccumulatorOverflow, Interpreter, InterpreterError, run_module
from tests.fuzz.harness import contract_violation, run_main
from transforms.opt import QdOptMain
from transforms.opt import main as qd_opt


@pytest.fixture(scope="module")
def ctx():
    return QdOptMain(args=[]).ctx


def opt(text: str, *argv: str):
    cap = run_main(qd_opt, list(argv), text.encode())
    assert contract_violation(cap, "qd-opt") is None, (cap.rc, cap.stderr)
    return cap


def one_error(text: str, *argv: str) -> str:
    cap = opt(text, *argv)
    assert cap.rc == 2, cap.stdout
    lines = cap.stderr.strip().splitlines()
    assert len(lines) == 1, cap.stderr
    return lines[0]


# ----- parser ------------------------------------------------------------------------------------


def test_unterminated_string_is_an_error_not_a_hang():
    """xDSL's string-literal regex backtracked exponentially on an unterminated literal
    (a truncated qnn.constant); qdialect._xdsl_fixes makes it linear."""
    text = 'func.func @main() {\n  %0 = qnn.constant dense<"0x' + "7F01" * 5000
    t0 = time.perf_counter()
    line = one_error(text)
    assert time.perf_counter() - t0 < 5
    assert line == "stdin:2:27: error: End of file reached before closing string literal."


def test_string_literals_still_lex_the_same(ctx):
    text = 'func.func @f() attributes {s = "a\\"b\\n\\t\\\\c\\41", t = ""} { func.return }'
    m = parse_module(ctx, text)
    f = m.ops.first
    assert f.attributes["s"].data == 'a"b\n\t\\cA'
    assert f.attributes["t"].data == ""


# ----- qd-opt exit status ------------------------------------------------------------------------


def test_qd_opt_bad_input_is_exit_2_one_line():
    line = one_error("func.func @f(%a: tensor<4x!quant.uniform<i8:f32, 5.000000e-01:300>>) { %0 = qnn.reshape %a : (tensor<4x!quant.uniform<i8:f32, 5.000000e-01:300>>) -> tensor<4x!quant.uniform<i8:f32, 5.000000e-01:300>> func.return }")
    assert line == "stdin:1:72: error: qnn.reshape: operand 0 (input): zero point 300 is outside i8 [-128:127]"


def test_qd_opt_usage_error_is_exit_2_one_line():
    assert one_error("", "--no-such-flag") == "qd-opt: error: unrecognized arguments: --no-such-flag"
    assert one_error("", "-p", "no-such-pass") == "qd-opt: error: Unrecognized passes: ['no-such-pass']"


# ----- interpreter ---------------------------------------------------------------------------------

_BIG_ARG = "func.func @main(%a: tensor<999999999x999999999x!quant.uniform<i8:f32, 5.000000e-01>>) -> tensor<999999999x999999999x!quant.uniform<i8:f32, 5.000000e-01>> { func.return %a : tensor<999999999x999999999x!quant.uniform<i8:f32, 5.000000e-01>> }"


def test_gigantic_tensor_types_verify_but_the_interpreter_refuses_them(ctx):
    m = parse_module(ctx, _BIG_ARG)  # a type is only a type
    with pytest.raises(InterpreterError, match=r"@main input 0: .* has 999999998000000001 elements, more than the interpreter's limit"):
        run_module(m, [np.zeros((1,), np.int8)])


def test_gigantic_constant_is_refused_without_allocating():
    line = one_error('func.func @main() { %0 = qnn.constant dense<"0x01"> : tensor<999999999x999999999x!quant.uniform<i8:f32, 5.000000e-01>>\n func.return }')
    assert "qnn.constant: 1 bytes of data but tensor<999999999x999999999x!quant.uniform<i8:f32, 5.000000e-01>> needs 999999998000000001" in line


_CONV = """
func.func @main(%x: tensor<1x1x1x{k}x!quant.uniform<i8:f32, 5.000000e-01:-128>>) -> tensor<1x1x1x2x!quant.uniform<i8:f32, 2.500000e-01>> {{
  %w = qnn.constant dense<"0x{w}"> : tensor<2x1x1x{k}x!quant.uniform<i8:f32:0, {{0.5, 0.5}}>>
  %b = qnn.constant dense<"0x0000000010000000"> : tensor<2x!quant.uniform<i32:f32:0, {{0.25, 0.25}}>>
  %y = qnn.conv2d %x, %w, %b {{acc = "{acc}", acc_overflow = "{mode}"}} : (tensor<1x1x1x{k}x!quant.uniform<i8:f32, 5.000000e-01:-128>>, tensor<2x1x1x{k}x!quant.uniform<i8:f32:0, {{0.5, 0.5}}>>, tensor<2x!quant.uniform<i32:f32:0, {{0.25, 0.25}}>>) -> tensor<1x1x1x2x!quant.uniform<i8:f32, 2.500000e-01>>
  func.return %y : tensor<1x1x1x2x!quant.uniform<i8:f32, 2.500000e-01>>
}}
"""


def _conv(ctx, k, acc="i16", mode="wrap", w0=1, w1=127):
    w = (bytes([w0 & 0xFF] * k) + bytes([w1 & 0xFF] * k)).hex().upper()
    return parse_module(ctx, _CONV.format(k=k, w=w, acc=acc, mode=mode))


def test_check_overflow_names_the_op_and_the_first_element(ctx):
    # x = 127 everywhere: (127 - (-128)) * 127 * 2 = 64770 > 32767 on channel 1 only
    m = _conv(ctx, 2)
    x = np.full((1, 1, 1, 2), 127, np.int8)
    run_module(m, [x])  # without the check it wraps silently
    with pytest.raises(AccumulatorOverflow) as info:
        run_module(m, [x], check_overflow=True)
    e = info.value
    assert (e.op, e.position, e.index, e.value, e.acc) == ("qnn.conv2d", 2, (0, 0, 0, 1), 64770 + 0x10, "i16")
    assert str(e) == ("qnn.conv2d (op 2): the accumulator overflows i16 at element [0, 0, 0, 1]: "
                      "exact value 64786 is outside [-32768, 32767]")
    # the same conv with an i32 accumulator is fine
    run_module(_conv(ctx, 2, acc="i32"), [x], check_overflow=True)


def test_check_overflow_sees_saturating_partial_sums(ctx):
    # channel 1 weights: +127 then -127; inputs 127 (centered 255): the partial sum 32385 fits,
    # so use three taps +127, +127, -127: partials 32385, 64770 (> 32767), 32385 at the end
    w = bytes([1, 1, 1]) + bytes([127, 127, 0x81])
    text = _CONV.format(k=3, w=w.hex().upper(), acc="i16", mode="saturate").replace(
        'dense<"0x0000000010000000">', 'dense<"0x0000000000000000">')
    m = parse_module(ctx, text)
    x = np.full((1, 1, 1, 3), 127, np.int8)
    with pytest.raises(AccumulatorOverflow, match=r"a partial sum overflows i16 at element \[0, 0, 0, 1\]") as info:
        run_module(m, [x], check_overflow=True)
    assert info.value.partial and info.value.value == 64770
    it = Interpreter(m, check_overflow="report")
    it.run([x])
    assert [o.index for o in it.overflows] == [(0, 0, 0, 1)]


def test_zero_size_results_are_empty_arrays(ctx):
    text = """func.func @main(%z: tensor<0x3x!quant.uniform<i8:f32, 5.000000e-01>>) -> tensor<0x3x!quant.uniform<i8:f32, 3.906250e-03:-128>> {
      %s = qnn.softmax %z : (tensor<0x3x!quant.uniform<i8:f32, 5.000000e-01>>) -> tensor<0x3x!quant.uniform<i8:f32, 3.906250e-03:-128>>
      func.return %s : tensor<0x3x!quant.uniform<i8:f32, 3.906250e-03:-128>>
    }"""
    (out,) = run_module(parse_module(ctx, text), [np.zeros((0, 3), np.int8)])
    assert out.shape == (0, 3) and out.dtype == np.int8


def test_non_finite_multiplier_is_a_diagnostic(ctx):
    # in_s * w_s / out_s overflows double: the interpreter names the op, qd-run exits 2
    text = """func.func @main(%x: tensor<1x2x!quant.uniform<i8:f32, 3.000000e+38>>) -> tensor<1x1x!quant.uniform<i8:f32, 1.5e-45>> {
      %w = qnn.constant dense<"0x0101"> : tensor<1x2x!quant.uniform<i8:f32, 3.000000e+38>>
      %b = arith.constant dense<[0]> : tensor<1xi32>
      %y = qnn.conv2d %x, %w, %b : (tensor<1x2x!quant.uniform<i8:f32, 3.000000e+38>>, tensor<1x2x!quant.uniform<i8:f32, 3.000000e+38>>, tensor<1xi32>) -> tensor<1x1x!quant.uniform<i8:f32, 1.5e-45>>
      func.return %y : tensor<1x1x!quant.uniform<i8:f32, 1.5e-45>>
    }""".replace("qnn.conv2d", "qnn.fully_connected")
    m = parse_module(ctx, text)
    with pytest.raises(InterpreterError, match=r"^qnn.fully_connected: .*not finite|^qnn.fully_connected: its arithmetic fails"):
        run_module(m, [np.ones((1, 2), np.int8)], rounding="single")


# ----- verifier findings (IR fuzzer) ------------------------------------------------------------


def test_dimension_past_int64_is_a_diagnostic():
    """A shape dimension of 2^64 made numpy's product overflow inside the constant verifiers."""
    line = one_error('func.func @f() {\n  %0 = nn.constant dense<"0x0000803F"> : tensor<18446744073709551616xf32>\n  func.return\n}')
    assert line == "stdin:2:3: error: nn.constant: 4 bytes of data but tensor<18446744073709551616xf32> needs 73786976294838206464"
    line = one_error('func.func @f() {\n  %0 = qnn.constant dense<"0x01"> : tensor<18446744073709551616x!quant.uniform<i8:f32, 5.000000e-01>>\n  func.return\n}')
    assert "qnn.constant: 1 bytes of data but tensor<18446744073709551616x!quant.uniform<i8:f32, 5.000000e-01>> needs 18446744073709551616" in line


_STRIDED = """!x = !quant.uniform<i8:f32, 5.000000e-01:-3>
!w = !quant.uniform<i8:f32, 1.000000e-01>
!b = !quant.uniform<i32:f32, 5.000000e-02>
func.func @stride(%x: tensor<1x8x8x2x!x>) -> tensor<1x2x2x2x!x> {
  %w = qnn.constant dense<"0x01020304"> : tensor<2x1x1x2x!w>
  %b = qnn.constant dense<"0x0100000002000000"> : tensor<2x!b>
  %c = qnn.conv2d %x, %w, %b {ATTRS} : (tensor<1x8x8x2x!x>, tensor<2x1x1x2x!w>, tensor<2x!b>) -> tensor<1x2x2x2x!x>
  func.return %c : tensor<1x2x2x2x!x>
}"""


@pytest.mark.parametrize("attrs, message", [
    # stride 0 divided by zero in the result-shape rule
    ("strides = array<i64: 0, -999999999>", "qnn.conv2d: attribute 'strides' must be 2 integers >= 1, got [0, -999999999]"),
    ("strides = array<i64: 1, 1, 1>", "qnn.conv2d: attribute 'strides' must be 2 integers >= 1, got [1, 1, 1]"),
    ("dilations = array<i64: 1, 0>", "qnn.conv2d: attribute 'dilations' must be 2 integers >= 1, got [1, 0]"),
    ("padding = array<i64: 0, 0, -1, 0>", "qnn.conv2d: attribute 'padding' must be 4 integers >= 0, got [0, 0, -1, 0]"),
])
def test_window_attributes_are_checked(attrs, message):
    assert one_error(_STRIDED.replace("ATTRS", attrs)) == "stdin:7:3: error: " + message


def test_pool_kernel_of_zero_is_a_diagnostic():
    q = "tensor<1x4x4x1x!quant.uniform<i8:f32, 5.000000e-01>>"
    r = "tensor<1x2x2x1x!quant.uniform<i8:f32, 5.000000e-01>>"
    text = (f"func.func @f(%x: {q}) -> {r} {{\n  %y = qnn.avg_pool2d %x {{kernel = array<i64: 2, 0>}} : ({q}) -> {r}\n"
            f"  func.return %y : {r}\n}}")
    assert one_error(text) == "stdin:2:3: error: qnn.avg_pool2d: attribute 'kernel' must be 2 integers >= 1, got [2, 0]"
    nn_text = text.replace("qnn.avg_pool2d", "nn.avg_pool2d").replace("!quant.uniform<i8:f32, 5.000000e-01>", "f32")
    assert one_error(nn_text) == "stdin:2:3: error: nn.avg_pool2d: attribute 'kernel' must be 2 integers >= 1, got [2, 0]"


@pytest.mark.parametrize("literal, type_, n", [
    ("0", "tensor<4294967296xi64>", 4294967296),  # a splat of 2^32 elements (32 GB once expanded)
    ('"0x01000000"', "tensor<99999999999xi32>", 99999999999),  # a hex splat
])
def test_gigantic_splat_dense_literal_is_refused_before_expanding(literal, type_, n):
    """xDSL expands a splat dense literal element by element before checking anything (the IR
    fuzzer's memory blow-up); qdialect._xdsl_fixes checks the literal's type first."""
    t0 = time.perf_counter()
    line = one_error(f"func.func @f() {{\n  %0 = arith.constant dense<{literal}> : {type_}\n  func.return\n}}")
    assert time.perf_counter() - t0 < 5
    assert line.endswith(f"error: dense literal of type {type_} has {n} elements, more than the parser's limit of 16777216")
    assert line.startswith("stdin:2:")


def test_large_splat_below_the_limit_still_parses(ctx):
    m = parse_module(ctx, "func.func @f() {\n  %0 = arith.constant dense<7> : tensor<1x112x112x32xi32>\n  func.return\n}")
    assert "dense<7> : tensor<1x112x112x32xi32>" in str(m)


def test_qd_opt_into_a_closed_pipe_is_quiet(tmp_path):
    """`qd-opt big.mlir | head` ended with `qd-opt: internal error: BrokenPipeError` (exit 3)."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    exe = Path(sys.executable).parent / "qd-import"
    model = tmp_path / "m.mlir"
    subprocess.run([str(exe), str(root / "models/zoo/mobilenetv2_tiny.tflite"), "-o", str(model)], check=True)
    proc = subprocess.Popen([str(Path(sys.executable).parent / "qd-opt"), str(model)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.read(100)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and err == ""


def test_linalg_named_op_without_operands_is_a_parse_error():
    """xDSL's linalg named-op parser indexed an empty operand tuple (IndexError) when `ins(...)`
    was missing; the parser now reports the op and where it starts."""
    text = ("func.func @f(%z: i32) -> tensor<1x4xi32> {\n  %init = tensor.empty() : tensor<1x4xi32>\n"
            "  %filled = linalg.fill (%z : i32) outs(%init : tensor<1x4xi32>) -> tensor<1x4xi32>\n"
            "  func.return %filled : tensor<1x4xi32>\n}")
    assert one_error(text) == "stdin:3:3: error: linalg.fill: malformed operation (IndexError: tuple index out of range)"


def test_float_dense_arrays_with_infinities_round_trip(ctx):
    """xDSL printed inf in `array<f64: ...>` as MLIR's hexadecimal bit pattern but could not
    parse it back (a qint.rescale scale of 1.0e309 from the IR fuzzer); hex patterns now parse."""
    text = "func.func @f() attributes {a = array<f64: 1.0e309, -2.5>, b = array<f32: 0x7FC00000>, c = array<f16: 0x7C00>} { func.return }"
    printed = str(parse_module(ctx, text))
    assert "array<f64: 0x7ff0000000000000, -2.500000e+00>" in printed
    assert str(parse_module(ctx, printed)) == printed
    assert one_error("func.func @f() attributes {a = array<f32: 0x7FF0000000000000>} { func.return }") == \
        "stdin:1:43: error: hexadecimal float 0x7FF0000000000000 does not fit f32"


_PAD = """func.func @main(%x: tensor<1x4x12x20xi8>) -> tensor<1x6x14x20xi8> {
  %c = arith.constant 3 : i8
  %p = tensor.pad %x low[LOW, 1, 2, 0] high[0, 1, 0, 0] {
  ^bb0(%a: index, %b: index, %d: index, %e: index):
    tensor.yield %c : i8
  } : tensor<1x4x12x20xi8> to tensor<1x6x14x20xi8>
  func.return %p : tensor<1x6x14x20xi8>
}"""


def test_tensor_pad_whose_padding_contradicts_its_type_is_refused(ctx):
    """The interpreter padded by a mutated low[4294967296, ...] (6.56 TiB) before looking at the
    result type; the padding must give the declared shape."""
    m = parse_module(ctx, _PAD.replace("LOW", "4294967296"))
    with pytest.raises(InterpreterError, match=r"^tensor.pad: low \[4294967296, 1, 2, 0\] and high \[0, 1, 0, 0\] "
                                               r"padding of \[1, 4, 12, 20\] do not give the result shape \[1, 6, 14, 20\]$"):
        run_module(m, [np.zeros((1, 4, 12, 20), np.int8)])
    (out,) = run_module(parse_module(ctx, _PAD.replace("LOW", "0")), [np.zeros((1, 4, 12, 20), np.int8)])
    assert out.shape == (1, 6, 14, 20) and out[0, 0, 0, 0] == 3


def test_transpose_conv_with_a_huge_cropped_stride_is_refused_before_allocating():
    """A mutated TRANSPOSE_CONV stride of 2^24 cropped back to 9 columns by padding verifies;
    the reference scattered into the uncropped 6.75 GiB buffer [model fuzzer]."""
    from qdialect.builder import GraphBuilder
    from qdialect.dialects import qnn
    from qdialect.dialects.quant import UniformQuantizedType as Q
    from xdsl.dialects.builtin import TensorType

    g = GraphBuilder()
    x = g.input([1, 4, 4, 2], Q.per_tensor(0.05, -3))
    wq = Q.per_axis([0.01, 0.02], 0, axis=0)
    w = g.constant(np.ones((2, 3, 3, 2), np.int8), wq)
    b = g.bias(np.zeros(2, np.int32), x, w)
    y = g.op(qnn.TransposeConv2DOp, [x, w, b], [TensorType(Q.per_tensor(0.1, 1), [1, 9, 9, 2])],
             strides=[2, 16777216], padding=[0, 0, 0, 50331642])[0]
    g.output(y)
    with pytest.raises(InterpreterError, match=r"^qnn.transpose_conv2d: the uncropped output 1x9x50331651x2 has "
                                               r"905969718 elements, more than the reference's scratch limit of 67108864$"):
        run_module(g.build(), [np.zeros((1, 4, 4, 2), np.int8)])


@pytest.mark.parametrize("array, message", [
    (np.array([None, 1], dtype=object), "cannot read 'input_0': Object arrays cannot be loaded when allow_pickle=False"),
    (np.full((1, 64), "a"), "'input_0' has dtype <U1, the model expects int8"),
    (np.zeros((1, 64), np.complex64), "'input_0' has dtype complex64, the model expects int8"),
    (np.full((1, 64), 1000, np.int64), "'input_0' has values in [1000, 1000], outside int8 [-128, 127]"),
    (np.full((1, 64), np.nan, np.float32), "'input_0' has non-integer values, the model expects int8"),
])
def test_qd_run_input_arrays_that_do_not_fit_the_model(tmp_path, array, message):
    """Object and string arrays in --input ended in internal errors; out-of-range or fractional values
    were cast (wrapped) silently.  Integral values of any numeric dtype are still taken."""
    from pathlib import Path

    from tvm_bridge.run_cli import main as qd_run

    model = Path(__file__).resolve().parents[1] / "models/zoo/mlp_act.tflite"
    npz = tmp_path / "in.npz"
    np.savez(npz, input_0=array)
    cap = run_main(qd_run, [str(model), "--backend", "interp", "--compare", "none", "--input", str(npz)])
    lines = [ln for ln in cap.stderr.splitlines() if not ln.startswith("  .. ")]
    assert cap.rc == 2 and lines == [f"qd-run: error: {npz}: {message}"]
    np.savez(npz, input_0=np.full((1, 64), 3.0))
    assert run_main(qd_run, [str(model), "--backend", "interp", "--compare", "none", "--input", str(npz)]).rc == 0


@pytest.mark.parametrize("argv, message", [
    (["--seed", "-1"], "qd-run: error: --seed -1: must be >= 0"),  # was: internal error (numpy's ValueError)
    (["--samples", "0"], "qd-run: error: --samples 0: must be >= 1"),
    (["--bench", "-1"], "qd-run: error: --bench -1: must be >= 0"),
    (["--output", "/nonexistent/dir/o.npz"], "qd-run: error: cannot write /nonexistent/dir/o.npz: No such file or directory"),
])
def test_qd_run_bad_options_are_one_line(argv, message):
    from pathlib import Path

    from tvm_bridge.run_cli import main as qd_run

    model = Path(__file__).resolve().parents[1] / "models/zoo/mlp_act.tflite"
    cap = run_main(qd_run, [str(model), "--backend", "interp", "--compare", "none", *argv])
    assert cap.rc == 2 and [ln for ln in cap.stderr.splitlines() if not ln.startswith("  .. ")] == [message]


@pytest.mark.parametrize("target, message", [
    ("bogus", 'qd-run: error: TVM bridge: target \'bogus\': Target kind "bogus" is not defined.'),
    ("llvm -opt-level=x", "qd-run: error: TVM bridge: target 'llvm -opt-level=x': Option 'opt-level': expected type 'int'"),
])
@pytest.mark.parametrize("opt", ["quick", "full"])
def test_qd_run_target_tvm_refuses_is_one_line(target, message, opt, monkeypatch):
    """A --target TVM refuses is exit 2 with one line naming it (was: an internal error, or a
    silent fall-back to the interpreter), with either build."""
    from pathlib import Path

    from tvm_bridge.run_cli import main as qd_run

    monkeypatch.setenv("QDIALECT_CACHE", "0")
    model = Path(__file__).resolve().parents[1] / "models/zoo/mlp_act.tflite"
    cap = run_main(qd_run, [str(model), "--compare", "none", "--target", target, "--opt", opt])
    (line,) = [ln for ln in cap.stderr.splitlines() if not ln.startswith("  .. ")]
    assert cap.rc == 2 and line.startswith(message), line


@pytest.mark.parametrize("variable, value, message", [
    ("QDIALECT_AMX", "maybe", "qd-run: error: QDIALECT_AMX='maybe': 1 turns the AMX tile kernels on"),
    ("QDIALECT_TARGET_CPU", "bogus", "qd-run: error: QDIALECT_TARGET_CPU=bogus: not a cpu name LLVM knows"),
    ("QDIALECT_TARGET_CPU", "native", "qd-run: error: QDIALECT_TARGET_CPU=native: TVM 0.27 compiles that for"),
])
def test_qd_run_bad_setting_is_one_line(variable, value, message, monkeypatch):
    """A QDIALECT_* variable set to a value it does not take is the user's input: exit 2 and one
    line naming it (was: `qd-run: internal error: ValueError ...`, exit 3)."""
    from pathlib import Path

    from tvm_bridge.run_cli import main as qd_run

    monkeypatch.setenv("QDIALECT_CACHE", "0")
    monkeypatch.setenv(variable, value)
    model = Path(__file__).resolve().parents[1] / "models/zoo/mlp_act.tflite"
    cap = run_main(qd_run, [str(model), "--compare", "none"])
    (line,) = [ln for ln in cap.stderr.splitlines() if not ln.startswith("  .. ")]
    assert cap.rc == 2 and line.startswith(message), line


@pytest.mark.parametrize("pipeline, message", [
    ("qnn-overflow-check{", "qd-opt: error: pass pipeline 'qnn-overflow-check{', column 20: expected argument name here"),
    ("qnn-canonicalize,,qnn-raise", "qd-opt: error: pass pipeline 'qnn-canonicalize,,qnn-raise', column 18: expected pass name here"),
    ("qnn-overflow-check{verbose=maybe}", "qd-opt: error: Incompatible types: given ('maybe',), expected <class 'bool'>"),
    ("qnn-overflow-check{bogus=1}", 'qd-opt: error: Provided arguments ["bogus"] not found in expected arguments ["verbose", "fail"]'),
])
def test_malformed_pass_pipelines_are_one_line(pipeline, message):
    """xDSL's ArgSpecParseError is a BaseException: a malformed -p escaped qd-opt as a traceback."""
    assert one_error("func.func @f() { func.return }", "-p", pipeline) == message


def test_qnn_decompose_takes_scalar_quantized_arguments():
    """qnn-decompose assumed every quantized value is a tensor (AttributeError on a scalar
    !quant.uniform argument) [IR fuzzer running every pass]."""
    cap = opt("func.func @s(%a: !quant.uniform<i8:f32, 5.000000e-01:-3>) {\n  func.return\n}", "-p", "qnn-decompose")
    assert cap.rc == 0 and "func.func @s(%a: i8)" in cap.stdout


def test_qd_run_survives_litert_aborting_on_the_model(tmp_path):
    """LiteRT aborts the whole process (a failed CHECK) preparing ADD whose output multiplier is
    not below 1; qd-run's comparison killed qd-run with SIGABRT.  LiteRT now runs in a child."""
    from tests.tflite_writer import TensorSpec as T
    from tests.tflite_writer import build_single_op_model
    from tvm_bridge.run_cli import main as qd_run

    model = tmp_path / "add.tflite"
    model.write_bytes(build_single_op_model("ADD", [T((1, 4), "int8", 1.0, 3), T((1, 4), "int8", 0.5, -5)],
                                            [T((1, 4), "int8", 1e-7, 1)]))
    cap = run_main(qd_run, [str(model), "--backend", "interp"])
    lines = [ln for ln in cap.stderr.splitlines() if not ln.startswith("  .. ")]
    assert cap.rc == 2 and lines == [
        f"qd-run: error: {model}: LiteRT aborts on this model (SIGABRT while preparing or running it); "
        "there is nothing to compare with (--compare none runs without it)"]
    assert run_main(qd_run, [str(model), "--backend", "interp", "--compare", "none"]).rc == 0


def test_folded_strided_slice_with_an_omitted_input_is_a_diagnostic():
    """A mutated operator input index of -1 reached the importer's static folding of
    STRIDED_SLICE as None (AttributeError) [model fuzzer, cnn_small with two edits]."""
    from pathlib import Path

    from qdialect.importer import TFLiteImportError, import_tflite
    from tests.fuzz.pin import decode_model

    zoo = Path(__file__).resolve().parents[1] / "models/zoo/cnn_small.tflite"
    data = decode_model(zoo.read_bytes(), [[35768, "ffffffff"], [37236, "04"]])
    with pytest.raises(TFLiteImportError, match=r"^operator 5 \(STRIDED_SLICE\) -> 'cnn_small_1/flatten_1/strided_slice': "
                                                r"input 0 is missing$"):
        import_tflite(data)


_TANH16 = """func.func @main(%0: tensor<1xNx!quant.uniform<i16:f32, 1.2400130936751676E+34:-20838>>) -> tensor<1xNx!quant.uniform<i16:f32, 3.0517578125E-5>> {
  %1 = qnn.tanh %0 : (tensor<1xNx!quant.uniform<i16:f32, 1.2400130936751676E+34:-20838>>) -> tensor<1xNx!quant.uniform<i16:f32, 3.0517578125E-5>>
  func.return %1 : tensor<1xNx!quant.uniform<i16:f32, 3.0517578125E-5>>
}"""


def test_int16_tanh_whose_input_multiplier_overflows_int32(ctx):
    """The int16 LOGISTIC/TANH input multiplier in_s * 4096 * 3 overflowed int64 arithmetic
    (OverflowError in qnn-decompose, which builds the table) [IR fuzzer running every pass]."""
    message = ("int16 tanh: input scale 1.2400130936751676e+34 gives an input multiplier 1.52373e+38 "
               "that does not fit int32")
    assert one_error(_TANH16.replace("N", "0"), "-p", "qnn-decompose") == f"qd-opt: error: {message}"
    with pytest.raises(InterpreterError, match="^" + __import__("re").escape(f"qnn.tanh: {message}") + "$"):
        run_module(parse_module(ctx, _TANH16.replace("N", "3")), [np.zeros((1, 3), np.int16)])


def test_qint_window_attributes_are_checked():
    """The L2 conv verifier divided by a stride of 0 (ZeroDivisionError) like qnn's did."""
    text = """func.func @main(%x: tensor<1x8x8x3xi8>, %w: tensor<2x3x3x3xi8>) -> tensor<1x8x8x2xi32> {
  %y = qint.conv2d %x, %w {input_zp = -128 : i64, weight_zp = 0 : i64, strides = array<i64: 0, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x3xi8>, tensor<2x3x3x3xi8>) -> tensor<1x8x8x2xi32>
  func.return %y : tensor<1x8x8x2xi32>
}"""
    assert one_error(text) == "stdin:2:3: error: qint.conv2d: attribute 'strides' must be 2 integers >= 1, got [0, 1]"


def test_hard_swish_with_a_huge_reluish_exponent(ctx):
    """Input scale 2e17: the reluish multiplier's exponent is ~64 and `x * (1 << (e - 1))` overflowed
    int64 (OverflowError: internal error in qnn-decompose) [IR fuzzer].  TFLite's shift saturates.
    By hand: |x| real <= 2.6e19 against an output scale of 1.3e36 rounds to 0: every output is the
    zero point -128."""
    text = """func.func @main(%0: tensor<2x3x!quant.uniform<i8:f32, 2.0596936574763008E+17>>) -> tensor<2x3x!quant.uniform<i8:f32, 1.2967404877459418E+36:-128>> {
  %1 = qnn.hard_swish %0 : (tensor<2x3x!quant.uniform<i8:f32, 2.0596936574763008E+17>>) -> tensor<2x3x!quant.uniform<i8:f32, 1.2967404877459418E+36:-128>>
  func.return %1 : tensor<2x3x!quant.uniform<i8:f32, 1.2967404877459418E+36:-128>>
}"""
    (out,) = run_module(parse_module(ctx, text), [np.array([[-128, -1, 0], [1, 50, 127]], np.int8)])
    np.testing.assert_array_equal(out, np.full((2, 3), -128))
    assert opt(text, "-p", "qnn-decompose").rc == 0


def test_pool_with_a_gigantic_window_is_refused_before_padding(ctx):
    """A mutated AVERAGE_POOL window of 3 x 4194307 with matching SAME padding verifies; the reference
    padded the input to 113M elements and looped over 12.6M taps (45 s, ~1 GB) [model fuzzer]."""
    q = "!quant.uniform<i8:f32, 5.000000e-02:-3>"
    text = (f"func.func @main(%x: tensor<1x7x7x3x{q}>) -> tensor<1x4x4x3x{q}> {{\n"
            f"  %y = qnn.avg_pool2d %x {{kernel = array<i64: 3, 4194307>, strides = array<i64: 2, 2>, "
            f"padding = array<i64: 1, 1, 2097153, 2097153>}} : (tensor<1x7x7x3x{q}>) -> tensor<1x4x4x3x{q}>\n"
            f"  func.return %y : tensor<1x4x4x3x{q}>\n}}")
    t0 = time.perf_counter()
    with pytest.raises(InterpreterError, match=r"^qnn.avg_pool2d: the padded input has 113246451 elements, "
                                               r"more than the reference's scratch limit of 67108864$"):
        run_module(parse_module(ctx, text), [np.zeros((1, 7, 7, 3), np.int8)])
    assert time.perf_counter() - t0 < 5


def test_integer_types_past_mlirs_width_limit():
    """`1073741824 : i641073741824` made xDSL compute a 641-million-bit value range (MemoryError);
    `array<i641>` had no byte format (NotImplementedError) [IR fuzzer]."""
    line = one_error("func.func @f() attributes {a = 1 : i641073741824} { func.return }")
    assert line.endswith("error: integer width 641073741824 is larger than MLIR's limit of 16777215")
    line = one_error("func.func @f() attributes {a = array<i641>} { func.return }")
    assert line.endswith("error: dense array element type i641 is wider than 64 bits")
    assert opt("func.func @f() attributes {a = 5 : i17, b = array<i1: true>} { func.return }").rc == 0
