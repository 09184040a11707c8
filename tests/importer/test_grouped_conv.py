"""A CONV_2D whose groups each read one input channel (Keras's `Conv2D(groups=C)`: ConvNeXt's
7x7 depthwise layers reach TFLite this way) is imported as the depthwise convolution it is,
and runs bit-exact against LiteRT (reference kernels for the `tflite` profile, XNNPACK for
`litert`) through the interpreter and the TVM build; groups of several input channels are one
dense convolution with zeros outside each group (`_grouped_as_dense`), bit-exact the same way."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tflite_writer import TensorSpec, build_model, run_tflite


def _grouped(c: int, k: int, ic: int, relu6: bool = False):
    rng = np.random.default_rng(c + k + ic)
    w = rng.integers(-127, 128, (k, 3, 3, ic)).astype(np.int8)
    wscale = [float(s) for s in rng.uniform(0.002, 0.02, k)]
    bias = rng.integers(-3000, 3000, k).astype(np.int32)
    xs = 0.05
    tensors = [
        TensorSpec((1, 9, 7, c), "int8", scale=xs, zero_point=-4),
        TensorSpec((k, 3, 3, ic), "int8", scale=wscale, zero_point=[0] * k, data=w),
        TensorSpec((k,), "int32", scale=[xs * s for s in wscale], zero_point=[0] * k, data=bias),
        TensorSpec((1, 9, 7, k), "int8", scale=0.08, zero_point=3),
    ]
    options = {"padding": "SAME", "stride_w": 1, "stride_h": 1, "dilation_w_factor": 1, "dilation_h_factor": 1,
               "fused_activation_function": "RELU6" if relu6 else "NONE"}
    return build_model([("CONV_2D", [0, 1, 2], [3], options)], tensors, [0], [3])


@pytest.mark.parametrize("c, k, relu6", [(8, 8, False), (8, 16, True), (16, 16, False)],
                         ids=["one-per-group", "two-per-group-relu6", "sixteen"])
@pytest.mark.parametrize("rounding", ["tflite", "litert"])
def test_grouped_convolution_as_depthwise_equals_litert(c, k, relu6, rounding, tmp_path):
    from tests.tvm_bridge.helpers import lowered_tflite
    from tvm_bridge import compile_module
    from tvm_bridge.run_cli import load_module

    model = _grouped(c, k, 1, relu6)
    path = tmp_path / "grouped.tflite"
    path.write_bytes(model)
    text = str(load_module(path, 1))
    assert "qnn.depthwise_conv2d" in text and "qnn.conv2d" not in text
    built = compile_module(lowered_tflite(model, rounding, tmp_path)())
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.integers(-128, 128, (1, 9, 7, c)).astype(np.int8)
        (want,) = run_tflite(model, [x], reference=rounding == "tflite")
        assert int(np.count_nonzero(built(x)[0] != want)) == 0


def test_grouped_convolution_interpreted_equals_litert_reference(tmp_path):
    from qdialect.interpreter import run_module
    from tvm_bridge.run_cli import load_module

    model = _grouped(8, 16, 1)
    path = tmp_path / "grouped.tflite"
    path.write_bytes(model)
    module = load_module(path, 1)
    x = np.random.default_rng(2).integers(-128, 128, (1, 9, 7, 8)).astype(np.int8)
    (want,) = run_tflite(model, [x], reference=True)
    (got,) = run_module(module, [x])
    assert int(np.count_nonzero(np.asarray(got) != want)) == 0


@pytest.mark.parametrize("c, k, ic", [(16, 8, 4), (16, 32, 8), (24, 48, 8), (12, 6, 6)],
                         ids=["4-groups-of-4", "2-groups-of-8-x4", "3-groups-of-8-x2", "2-groups-of-6"])
@pytest.mark.parametrize("rounding", ["tflite", "litert"])
def test_groups_of_several_channels_equal_litert(c, k, ic, rounding, tmp_path):
    """Groups reading several input channels (ResNeXt's, RegNet's): one dense convolution whose
    weights hold each filter on its group's channels and zeros elsewhere; bit-exact against
    LiteRT through the TVM build, and (the `tflite` profile) through the interpreter."""
    from qdialect.interpreter import run_module
    from tests.tvm_bridge.helpers import lowered_tflite
    from tvm_bridge import compile_module
    from tvm_bridge.run_cli import load_module

    model = _grouped(c, k, ic, relu6=k > c)
    path = tmp_path / "grouped.tflite"
    path.write_bytes(model)
    module = load_module(path, 1)
    assert "qnn.conv2d" in str(module)
    built = compile_module(lowered_tflite(model, rounding, tmp_path)())
    rng = np.random.default_rng(c * k + ic)
    for j in range(3):
        x = rng.integers(-128, 128, (1, 9, 7, c)).astype(np.int8)
        if j == 2:  # the storage extremes
            x = np.where(rng.random(x.shape) < 0.5, -128, 127).astype(np.int8)
        (want,) = run_tflite(model, [x], reference=rounding == "tflite")
        assert int(np.count_nonzero(built(x)[0] != want)) == 0
        if rounding == "tflite":
            (got,) = run_module(module, [x])
            assert int(np.count_nonzero(np.asarray(got) != want)) == 0


def test_groups_not_dividing_the_output_channels_are_named(tmp_path):
    from tvm_bridge.run_cli import BadInput, load_module

    path = tmp_path / "grouped_bad.tflite"
    path.write_bytes(_grouped(8, 6, 2))  # 4 groups, 6 output channels
    with pytest.raises(BadInput, match=r"grouped convolution of 4 groups: 6 output channels"):
        load_module(path, 1)


def test_a_dense_form_beyond_the_limit_is_refused_before_it_is_allocated(tmp_path, monkeypatch):
    """The input's channel count is a field of the file: a grouped convolution of tiny weights
    on an input claiming many channels would make a dense form of G times the weights' bytes.
    Refused, named, before anything is allocated (the limit lowered here so that a small
    model crosses it: 16 x 3 x 3 x 8 = 1152 weights)."""
    from qdialect.importer import tflite
    from tvm_bridge.run_cli import BadInput, load_module

    monkeypatch.setattr(tflite, "MAX_DENSE_GROUPED", 1000)
    path = tmp_path / "grouped_big.tflite"
    path.write_bytes(_grouped(8, 16, 2))
    with pytest.raises(BadInput, match=r"grouped convolution of 4 groups whose dense form would hold 1152 weights"):
        load_module(path, 1)
