"""Strategies: the built-in schemes give the types they promise; overrides and user classes."""

from __future__ import annotations

import numpy as np
import pytest

from qdialect.dialects import qnn
from qdialect.dialects.quant import quantized_element_type
from qdialect.interpreter import run_module
from tests.quantize.conftest import data, float_module
from transforms.quantizer.flow import QuantizeError, quantize_float_module
from transforms.quantizer.strategy import Int8, Layer, PerLayer, Strategy, StrategyError, load_strategy, matches

CALIB = 8


def quantize(scheme, name="cnn_small", **kw):
    strategy = load_strategy(scheme) if isinstance(scheme, str) else scheme
    return quantize_float_module(float_module(name), data(name, "calib")[:CALIB], strategy, **kw)


def ops_of(module, cls):
    return [op for op in module.walk() if isinstance(op, cls)]


def test_int8_is_tflites_scheme():
    m = quantize("int8").module
    for conv in ops_of(m, qnn.Conv2DOp) + ops_of(m, qnn.FullyConnectedOp):
        x, w, b = (quantized_element_type(v.type) for v in conv.operands)
        y = quantized_element_type(conv.results[0].type)
        assert x.storage == "i8" and y.storage == "i8"
        assert w.is_per_axis and w.storage_range() == (-127, 127) and set(w.zero_point_array().tolist()) == {0}
        assert b.storage == "i32"
        np.testing.assert_allclose(b.scale_array(), np.float32(float(x.scale_array())) * w.scale_array().astype(np.float32), rtol=1e-6)
    softmax = ops_of(m, qnn.SoftmaxOp)[0]
    out = quantized_element_type(softmax.results[0].type)
    assert (float(out.scale_array()), int(out.zero_point_array())) == (1 / 256, -128)
    pool = ops_of(m, qnn.MaxPool2DOp)[0]
    assert pool.operands[0].type.element_type == pool.results[0].type.element_type  # data movement keeps its parameters


def test_int16x8():
    m = quantize("int16x8").module
    conv = ops_of(m, qnn.Conv2DOp)[1]
    x, w = quantized_element_type(conv.operands[0].type), quantized_element_type(conv.operands[1].type)
    assert x.storage == "i16" and int(x.zero_point_array()) == 0 and w.storage == "i8"
    assert str(conv.operands[2].type) == "tensor<16xi64>"  # TFLite's int64 bias


def test_int8_symmetric_and_int4_weights():
    m = quantize("int8-symmetric").module
    for op in ops_of(m, qnn.Conv2DOp):
        assert int(quantized_element_type(op.results[0].type).zero_point_array()) == 0
    m = quantize("int4-weights").module
    for op in ops_of(m, qnn.Conv2DOp):
        w = quantized_element_type(op.operands[1].type)
        assert w.storage == "i4" and w.storage_range() == (-7, 7)
    run_module(m, data("cnn_small", "heldout")[0])


class Int16Conv2(Int8):
    name = "conv2-int16"

    def activation_bits(self, layer):
        return 16 if "conv2" in layer.name else 8

    def activation_symmetric(self, layer):
        return self.activation_bits(layer) == 16


def test_user_strategy_mixes_widths_end_to_end():
    result = quantize(Int16Conv2())
    widths = [quantized_element_type(op.results[0].type).storage for op in ops_of(result.module, qnn.QnnOp)
              if not isinstance(op, qnn.ConstantOp)]
    assert widths.count("i16") == 3 and "i8" in widths  # conv2, its avg pool and reshape
    assert all(np.isfinite(r.sqnr_db) for r in result.layers)
    (y,) = run_module(result.module, data("cnn_small", "heldout")[0])
    assert y.dtype == np.float32 and abs(float(y.sum()) - 1.0) < 0.05  # softmax through float edges


def test_per_layer_override_and_rounding_knobs():
    class Float(Strategy):
        name = "float-multiplier"

        def multiplier(self, layer):
            return "float"

    class Single(Strategy):
        def rounding(self, layer):
            return "single"

    strategy = PerLayer(Int8(), {"kind:fully_connected": Float(), "#2": Single()})
    m = quantize(strategy).module
    assert all(op.attr("rounding") == "half_even" for op in ops_of(m, qnn.FullyConnectedOp))
    convs = ops_of(m, qnn.Conv2DOp)
    assert convs[0].attr("rounding", "tflite") == "single" and convs[1].attr("rounding", "tflite") == "tflite"


def test_accumulator_knob():
    class NarrowAcc(Int8):
        def accumulator(self, layer):
            return ("i16", "saturate") if layer.kind == "conv2d" else None

    m = quantize(NarrowAcc()).module
    assert all(op.attr("acc") == "i16" and op.attr("acc_overflow") == "saturate" for op in ops_of(m, qnn.Conv2DOp))


def test_matches():
    layer = Layer("model_conv2_Relu", "conv2d", 6)
    assert matches(layer, "*conv2*") and matches(layer, "#6") and matches(layer, "kind:conv*")
    assert not matches(layer, "#7") and not matches(layer, "kind:add")


def test_load_strategy_errors(tmp_path):
    with pytest.raises(StrategyError, match="unknown scheme 'int7'"):
        load_strategy("int7")
    with pytest.raises(StrategyError, match="does not exist"):
        load_strategy(str(tmp_path / "nope.py") + ":X")
    f = tmp_path / "s.py"
    f.write_text("class NotOne:\n    pass\n\nclass Bad(object):\n    def __init__(self):\n        raise RuntimeError('boom')\n")
    with pytest.raises(StrategyError, match="is not a strategy"):
        load_strategy(f"{f}:NotOne")
    with pytest.raises(StrategyError, match="boom"):
        load_strategy(f"{f}:Bad")
    with pytest.raises(StrategyError, match="has no Missing"):
        load_strategy(f"{f}:Missing")


def test_bad_decisions_name_the_layer():
    class Bad(Int8):
        def activation_bits(self, layer):
            return 12

    with pytest.raises(QuantizeError, match="activation bits 12"):
        quantize(Bad())


def test_float_mode_and_int_io():
    result = quantize("int8", mode="float", int_io=True)
    f = result.module.ops.first
    assert all(quantized_element_type(t) is not None for t in f.function_type.inputs.data)
    assert all(quantized_element_type(t) is not None for t in f.function_type.outputs.data)
    assert not any(op.name in ("quant.qcast", "quant.dcast") for op in result.module.walk())


def test_per_tensor_weights_and_percentile():
    class PerTensor(Int8):
        def weight_per_channel(self, layer):
            return False

        def calibration(self, layer):
            return "percentile" if layer.kind != "input" else "moving_average"

    result = quantize(PerTensor(), name="ds_cnn_kws")
    for op in ops_of(result.module, qnn.Conv2DOp) + ops_of(result.module, qnn.DepthwiseConv2DOp):
        assert not quantized_element_type(op.operands[1].type).is_per_axis
    (y,) = run_module(result.module, data("ds_cnn_kws", "heldout")[0])
    assert y.shape == (1, 12) and abs(float(y.sum()) - 1.0) < 0.05


def test_the_float_module_is_left_as_it_was():
    module = float_module("mlp_act")
    before = str(module)
    quantize_float_module(module, data("mlp_act", "calib")[:4], Int8())
    assert str(module) == before
