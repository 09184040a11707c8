"""qnn.simulated_quantize: semantics on the interpreter, verifier, lowering to casts."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

from qdialect.diagnostics import parse_module
from qdialect.interpreter import run_module
from qdialect.qparams import QParams
from qdialect.reference.elementwise import dequantize, quantize
from transforms.lower_simulated_quantize import QnnLowerSimulatedQuantizePass


def _ctx():
    from transforms.opt import QdOptMain

    return QdOptMain(args=[]).ctx


CTX = _ctx()


def module(body: str, n: int = 1, shape: str = "8") -> str:
    results = ", ".join([f"tensor<{shape}xf32>"] * n)
    return f"func.func @main(%x: tensor<{shape}xf32>) -> ({results}) {{\n{body}\n}}"


def sim(attrs: str, shape: str = "8") -> str:
    return (f"  %y = qnn.simulated_quantize %x {{{attrs}}} : (tensor<{shape}xf32>) -> tensor<{shape}xf32>\n"
            f"  func.return %y : tensor<{shape}xf32>")


X = np.array([0.25, -0.25, 0.75, -1.25, 100.0, -100.0, 3.1, 1e-3], np.float32)


@pytest.mark.parametrize("rounding", ["tflite", "half_even", "half_up"])
def test_equals_quantize_then_dequantize(rounding):
    m = parse_module(CTX, module(sim(f'qtype = !quant.uniform<i8:f32, 5.000000e-01:-3>, rounding = "{rounding}"')))
    (y,) = run_module(m, [X])
    q = QParams.make(0.5, -3)
    expected = np.asarray(dequantize(quantize(X, out_q=q, rounding=rounding), x_q=q), np.float32)
    np.testing.assert_array_equal(y, expected)
    assert y[4] == 0.5 * (127 + 3) and y[5] == -0.5 * (128 - 3)  # clamped to the storage range


def test_rounding_profiles_differ_on_ties():
    outs = {}
    for r in ("tflite", "half_even", "half_up"):
        m = parse_module(CTX, module(sim(f'qtype = !quant.uniform<i8:f32, 5.000000e-01>, rounding = "{r}"')))
        outs[r] = run_module(m, [X])[0]
    assert outs["tflite"][1] == -0.5 and outs["half_even"][1] == 0.0 and outs["half_up"][1] == 0.0
    assert outs["tflite"][0] == 0.5 and outs["half_even"][0] == 0.0 and outs["half_up"][0] == 0.5


def test_per_axis():
    m = parse_module(CTX, module(sim("qtype = !quant.uniform<i8:f32:1, {5.000000e-01,2.500000e-01}>", "4x2"), shape="4x2"))
    x = X.reshape(4, 2)
    (y,) = run_module(m, [x])
    np.testing.assert_array_equal(y[:, 0], np.clip(np.sign(x[:, 0]) * np.floor(np.abs(x[:, 0] / 0.5) + 0.5), -128, 127) * 0.5)
    np.testing.assert_array_equal(y[:, 1], np.clip(np.sign(x[:, 1]) * np.floor(np.abs(x[:, 1] / 0.25) + 0.5), -128, 127) * 0.25)


def test_passthrough_adds_no_error():
    m = parse_module(CTX, module(sim('qtype = !quant.uniform<i8:f32, 5.000000e-01>, mode = "passthrough"')))
    np.testing.assert_array_equal(run_module(m, [X])[0], X)


def test_narrow_accumulator_wraps_or_saturates():
    x = np.array([16383.5, 16384.0, -16384.0, -16384.5, 1.0, 0, 0, 0], np.float32)
    wrap = parse_module(CTX, module(sim('qtype = !quant.uniform<i32:f32, 5.000000e-01>, acc = "i16"')))
    sat = parse_module(CTX, module(sim('qtype = !quant.uniform<i32:f32, 5.000000e-01>, acc = "i16", acc_overflow = "saturate"')))
    (w,), (s,) = run_module(wrap, [x]), run_module(sat, [x])
    assert w.tolist()[:5] == [16383.5, -16384.0, -16384.0, 16383.5, 1.0]  # 32768 wraps to -32768
    assert s.tolist()[:5] == [16383.5, 16383.5, -16384.0, -16384.0, 1.0]


@pytest.mark.parametrize("attrs, message", [
    ("rounding = \"tflite\"", "'qtype' must be a !quant.uniform type"),
    ("qtype = !quant.uniform<i8:f32, 5.000000e-01>, mode = \"record\"", "expected one of quantize, passthrough"),
    ("qtype = !quant.uniform<i8:f32, 5.000000e-01>, acc_overflow = \"wrap\"", "acc_overflow needs acc"),
    ("qtype = !quant.uniform<i8:f32:0, {5.000000e-01,2.500000e-01}>", "2 scales on axis 0"),
    ("qtype = !quant.uniform<i8:f32, 5.000000e-01>, bias = \"output\"", "unknown attribute 'bias'"),
])
def test_verifier(attrs, message):
    with pytest.raises(VerifyException, match=message):
        parse_module(CTX, module(sim(attrs)))


def test_lowering_is_exact():
    body = "\n".join([
        '  %a = qnn.simulated_quantize %x {qtype = !quant.uniform<i8:f32, 5.000000e-01:-3>} : (tensor<8xf32>) -> tensor<8xf32>',
        '  %b = qnn.simulated_quantize %x {qtype = !quant.uniform<u8:f32, 2.500000e-01:128>, rounding = "half_even"} : (tensor<8xf32>) -> tensor<8xf32>',
        '  %c = qnn.simulated_quantize %x {qtype = !quant.uniform<i32:f32, 5.000000e-01>, acc = "i16", acc_overflow = "saturate"} : (tensor<8xf32>) -> tensor<8xf32>',
        '  %d = qnn.simulated_quantize %x {qtype = !quant.uniform<i8:f32, 5.000000e-01>, mode = "passthrough"} : (tensor<8xf32>) -> tensor<8xf32>',
        '  %e = qnn.simulated_quantize %x {qtype = !quant.uniform<i32:f32, 5.000000e-01>, acc = "i16"} : (tensor<8xf32>) -> tensor<8xf32>',
        "  func.return %a, %b, %c, %d, %e : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>",
    ])
    text = module(body, 5)
    before = parse_module(CTX, text)
    after = parse_module(CTX, text)
    QnnLowerSimulatedQuantizePass(remarks=False).apply(CTX, after)
    printed = str(after)
    assert printed.count("qnn.simulated_quantize") == 1  # the wrapping accumulator stays
    assert "quant.qcast" in printed and 'qnn.quantize %x {rounding = "half_even"}' in printed
    assert "i16:f32, 5.000000e-01" in printed or "i16:f32, 0.5" in printed
    x = np.concatenate([X[:6], [16384.0, -20000.0]]).astype(np.float32)
    for a, b in zip(run_module(before, [x]), run_module(after, [x])):
        np.testing.assert_array_equal(a, b)


def test_wrap_remark(capsys):
    m = parse_module(CTX, module(sim('qtype = !quant.uniform<i32:f32, 5.000000e-01>, acc = "i16"')))
    QnnLowerSimulatedQuantizePass().apply(CTX, m)
    assert "remark: qnn-lower-simulated-quantize:" in capsys.readouterr().err


def test_passthrough_probe_needs_no_qtype_and_reports_to_an_observer():
    from qdialect.interpreter import Interpreter

    m = parse_module(CTX, module(sim('mode = "passthrough"')))
    seen = []
    it = Interpreter(m)
    it.observer = lambda op, values: seen.append(values.copy())
    (y,) = it.run([X])
    np.testing.assert_array_equal(y, X)
    assert len(seen) == 1 and np.array_equal(seen[0], X)


def test_observation_module_adds_no_error():
    from tests.quantize.conftest import data, float_module
    from transforms.quantizer.flow import observation_module

    original = float_module("mlp_act")
    observed = observation_module(original)
    text = str(observed)
    assert text.count('mode = "passthrough"') == 10  # the input and 9 layers
    reparsed = parse_module(CTX, text)
    sample = data("mlp_act", "heldout")[0]
    np.testing.assert_array_equal(run_module(reparsed, sample)[0], run_module(original, sample)[0])
