"""Convolutions whose int8 weights keep a zero point (ONNX's asymmetric uint8 weights, shifted
to int8 by the importer: w - wzp needs 9 bits), lowered as the convolution of the stored
integers and its corrections (`lower_to_linalg._weight_zp_expanded`), against ONNX Runtime's
QLinearConv (its integer path) through TVM and through the interpreter."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from qdialect.importer.onnx import import_onnx_file
from qdialect.interpreter import Interpreter
from tests.onnx_helpers import differing, inputs_for, ort_run
from transforms.pipelines import lower_to_l3
from tvm_bridge.compile import compile_module


def _qlinear_conv(path, c: int, k: int, kernel: int, stride: int, pad: int, w_zp: int, x_zp: int, seed: int):
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 256, (k, c, kernel, kernel), dtype=np.uint8)
    bias = rng.integers(-3000, 3000, k, dtype=np.int32)
    inits = [
        helper.make_tensor("x_s", TensorProto.FLOAT, [], [0.05]),
        helper.make_tensor("x_zp", TensorProto.UINT8, [], [x_zp]),
        helper.make_tensor("w", TensorProto.UINT8, list(w.shape), w.tobytes(), raw=True),
        helper.make_tensor("w_s", TensorProto.FLOAT, [], [0.01]),
        helper.make_tensor("w_zp", TensorProto.UINT8, [], [w_zp]),
        helper.make_tensor("y_s", TensorProto.FLOAT, [], [0.9]),
        helper.make_tensor("y_zp", TensorProto.UINT8, [], [120]),
        helper.make_tensor("b", TensorProto.INT32, [k], bias.tolist()),
    ]
    node = helper.make_node("QLinearConv", ["x", "x_s", "x_zp", "w", "w_s", "w_zp", "y_s", "y_zp", "b"], ["y"],
                            kernel_shape=[kernel, kernel], strides=[stride, stride], pads=[pad] * 4)
    size = 12
    out = (size + 2 * pad - kernel) // stride + 1
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, c, size, size])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, k, out, out])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))


@pytest.mark.parametrize("c,k,kernel,stride,pad,w_zp,x_zp", [
    (8, 16, 3, 1, 1, 190, 100),   # shifted zero point 62: w - 62 spans [-190, 65]
    (13, 32, 3, 2, 1, 3, 255),    # shifted -125: w + 125 up to 252; padding meets x_zp 255
    (32, 16, 1, 1, 0, 250, 0),    # a pointwise layer, shifted 122
    (5, 24, 5, 1, 2, 60, 17),     # shifted -68, 5x5 with a wide pad
])
def test_weight_zero_point_matches_onnxruntime(tmp_path, c, k, kernel, stride, pad, w_zp, x_zp):
    path = tmp_path / "conv.onnx"
    _qlinear_conv(path, c, k, kernel, stride, pad, w_zp, x_zp, seed=c * 7 + k)
    module = import_onnx_file(path, profile="onnxruntime")
    samples = [inputs_for(module, seed) for seed in range(3)]
    lower_to_l3(module)
    # the expansion was taken: a linalg convolution of the stored integers and the window sums
    assert str(module).count("linalg.conv_2d_nhwc_fhwc") == 2
    compiled = compile_module(module)
    interp = Interpreter(module)
    for inputs in samples:
        theirs = ort_run(path, inputs)
        assert differing([o.view(np.uint8) for o in compiled(*inputs)], theirs) == [0]
        assert differing([np.asarray(o).astype(np.uint8) for o in interp.run(inputs)], theirs) == [0]
