"""A concatenation's inputs carry its output type (TFLite's int8 CONCATENATION needs it; its converter
ties them): producers that only feed the concatenation are given that type directly (no requantize),
constants are quantized to it, other inputs (graph inputs, shared values, fixed-output ops) meet it
through a `tflite` qnn.requantize, which TFLite writes as a QUANTIZE op."""

from __future__ import annotations

import numpy as np

from qdialect.diagnostics import parse_module
from qdialect.dialects import qnn
from qdialect.dialects.quant import quantized_element_type
from transforms.quantizer.flow import quantize_float_module, sqnr_db
from transforms.quantizer.strategy import Int8

T = "tensor<1x4x8xf32>"
CONST = np.linspace(-0.7, 0.9, 32, dtype=np.float32).reshape(1, 4, 8)
GRAPH = f"""
func.func @main(%x: {T}, %y: {T}) -> (tensor<1x4x56xf32>, {T}) {{
  %c = nn.constant dense<"0x{CONST.tobytes().hex().upper()}"> : {T}
  %a = nn.add %x, %y : ({T}, {T}) -> {T}
  %m = nn.mul %x, %y : ({T}, {T}) -> {T}
  %r = nn.reshape %m : ({T}) -> {T}
  %s = nn.sub %x, %y : ({T}, {T}) -> {T}
  %d = nn.maximum %x, %y : ({T}, {T}) -> {T}
  %l = nn.logistic %a : ({T}) -> {T}
  %cat = nn.concatenation %a, %r, %s, %x, %l, %c, %d {{axis = 2 : i64}} : ({T}, {T}, {T}, {T}, {T}, {T}, {T}) -> tensor<1x4x56xf32>
  func.return %cat, %s : tensor<1x4x56xf32>, {T}
}}
"""


def _quantized():
    from transforms.opt import QdOptMain

    module = parse_module(QdOptMain(args=[]).ctx, GRAPH)
    rng = np.random.default_rng(0)
    samples = [[rng.normal(0, 1, (1, 4, 8)).astype(np.float32) * 2, rng.normal(0.5, 1, (1, 4, 8)).astype(np.float32)]
               for _ in range(16)]
    return module, samples, quantize_float_module(module, samples, Int8())


def test_concatenation_inputs_carry_its_output_type():
    _, samples, result = _quantized()
    ops = list(result.module.walk())
    cat = next(op for op in ops if isinstance(op, qnn.ConcatenationOp))
    out = quantized_element_type(cat.results[0].type)
    owners = [v.owner for v in cat.operands]
    assert all(quantized_element_type(v.type) == out for v in cat.operands)
    kinds = [o.name for o in owners]
    # %a (also read by the logistic), %s (also an output), %x (graph input), %l (fixed output): requantized
    assert [kinds[i] for i in (0, 2, 3, 4)] == ["qnn.requantize"] * 4
    # the mul behind the reshape and the maximum are tied (they compute in the output type), the constant
    # is quantized to it
    assert kinds[1] == "qnn.reshape" and owners[1].operands[0].owner.name == "qnn.mul"
    assert quantized_element_type(owners[1].operands[0].type) == out
    assert kinds[5] == "qnn.constant" and kinds[6] == "qnn.maximum"
    assert sum(isinstance(op, qnn.ConstantOp) for op in ops) == 1  # no unused constant of its own type left
    # every requantize rounds as TFLite's QUANTIZE does (no `single` rounding, which no kernel has)
    assert all("rounding" not in op.attributes for op in ops if isinstance(op, qnn.RequantizeOp))
    # and the constant sits on the output grid: its dequantized values are within half a step
    step = float(out.scale_array())
    got = np.asarray(owners[5].array(), np.float64) - int(out.zero_point_array())
    assert np.max(np.abs(got * step - CONST)) <= step / 2 + 1e-7
    assert result.outputs_sqnr_db[0] > 30, result.outputs_sqnr_db


def test_tied_module_runs_in_litert_as_in_the_interpreter():
    """TFLite's int8 CONCATENATION takes only inputs with its output's parameters: the tied module
    exports, and LiteRT's reference kernels compute exactly what our interpreter computes."""
    from qdialect.exporter import export_tflite
    from qdialect.interpreter import Interpreter
    from tests.tflite_writer import run_tflite

    _, samples, result = _quantized()
    model = export_tflite(result.module)
    interp = Interpreter(result.module)
    for xs in samples[:4]:  # float inputs: the module and the .tflite both quantize them
        want = interp.run(xs)
        got = run_tflite(model, xs, reference=True)
        assert len(got) == len(want)
        for w, g in zip(want, got):
            assert np.count_nonzero(np.asarray(w) != np.asarray(g)) == 0
