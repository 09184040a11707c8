"""The float ops of quantized transformer encoders through TVM, bit-exact with ONNX Runtime (issue 22).

One quantized chain holds every op `transforms/float_transformer.py` lowers
(Div, Sqrt, Pow, LayerNormalization, ReduceMean over leading axes, Erf, each
between DequantizeLinear and QuantizeLinear as `quantize_static` writes them):
imported in both profiles, lowered to L3, compiled by TVM and run on every
uint8 input value against ORT's two sessions; and the `onnx` profile's float
MatMul of two activations (attention's QK^T and PV with ORT_DISABLE_ALL).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from qdialect.importer.onnx import import_onnx
from qdialect.interpreter import Interpreter
from tests.onnx_helpers import differing
from transforms.pipelines import lower_to_l3
from tvm_bridge.compile import compile_module

F32 = np.float32
ROWS, N = 16, 16


@functools.cache
def _chain() -> bytes:
    """uint8 [16, 16] -> Div -> Sqrt -> Pow 2 -> LayerNormalization -> Erf, and a ReduceMean over
    the rows of the layer norm's output; each op between DequantizeLinear and QuantizeLinear."""
    inits, nodes = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def q(x, name, scale, zp):
        s, z = const(name + "_s", np.array(scale, F32)), const(name + "_z", np.array(zp, np.uint8))
        nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [name + "_q"]))
        nodes.append(helper.make_node("DequantizeLinear", [name + "_q", s, z], [name + "_dq"]))
        return name + "_dq"

    x = "x_dq"
    nodes.append(helper.make_node("DequantizeLinear", ["x", const("x_s", np.array(0.05, F32)),
                                                       const("x_z", np.array(30, np.uint8))], [x]))
    nodes.append(helper.make_node("Div", [x, const("sqrt2", np.array(1.4142135, F32))], ["div"]))
    x = q("div", "div", 0.045, 25)
    nodes.append(helper.make_node("Sqrt", [x], ["sqrt"]))  # negative inputs: NaN, quantized to 0
    x = q("sqrt", "sqrt", 0.012, 0)
    nodes.append(helper.make_node("Pow", [x, const("two", np.array(2.0, F32))], ["pow"]))
    x = q("pow", "pow", 0.04, 0)
    gamma = const("gamma", np.linspace(-1.5, 1.5, N, dtype=F32))
    beta = const("beta", np.linspace(0.5, -0.25, N, dtype=F32))
    nodes.append(helper.make_node("LayerNormalization", [x, gamma, beta], ["ln"], axis=-1, epsilon=1e-3))
    x = q("ln", "ln", 0.03, 128)
    nodes.append(helper.make_node("Erf", [x], ["erf"]))
    s, z = const("out_s", np.array(1 / 127, F32)), const("out_z", np.array(128, np.uint8))
    nodes.append(helper.make_node("QuantizeLinear", ["erf", s, z], ["y"]))
    nodes.append(helper.make_node("ReduceMean", [x], ["mean"], axes=[0], keepdims=0))
    s, z = const("mean_s", np.array(0.01, F32)), const("mean_z", np.array(128, np.uint8))
    nodes.append(helper.make_node("QuantizeLinear", ["mean", s, z], ["m"]))
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.UINT8, [ROWS, N])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [ROWS, N]),
                               helper.make_tensor_value_info("m", TensorProto.UINT8, [N])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


def _ort(data: bytes, x: np.ndarray, disable_all: bool) -> list[np.ndarray]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    if disable_all:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return [np.asarray(o) for o in ort.InferenceSession(data, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})]


@pytest.mark.parametrize("profile", ["onnxruntime", "onnx"])
def test_transformer_float_ops_on_tvm_match_onnxruntime(profile):
    data = _chain()
    module = import_onnx(data, profile=profile)
    out_dtypes = [Interpreter._dtype(v) for v in Interpreter(module).entry().get_return_op().operands]
    lower_to_l3(module)
    compiled = compile_module(module)
    rng = np.random.default_rng(0)
    inputs = [np.arange(256, dtype=np.uint8).reshape(ROWS, N)] + [
        rng.integers(0, 256, (ROWS, N), dtype=np.uint8) for _ in range(3)]
    total = 0
    for x in inputs:
        theirs = _ort(data, x, disable_all=profile == "onnx")
        ours = [o.view(d) if o.dtype != d and o.dtype.itemsize == d.itemsize else o
                for o, d in zip(compiled(x), out_dtypes)]  # TVM returns the uint8 outputs as int8
        total += sum(differing(ours, theirs))
    assert total == 0, f"{total} output elements differ from ONNX Runtime"


def _matmul_acts(a_shape, b_shape) -> bytes:
    """DequantizeLinear x 2 -> MatMul of the two activations -> QuantizeLinear (uint8)."""
    inits, nodes = [], []
    for name, scale, zp in (("a", 0.02, 128), ("b", 0.03, 120), ("y", 2.0, 128)):
        inits += [numpy_helper.from_array(np.array(scale, F32), name + "_s"),
                  numpy_helper.from_array(np.array(zp, np.uint8), name + "_z")]
    nodes.append(helper.make_node("DequantizeLinear", ["aq", "a_s", "a_z"], ["a"]))
    nodes.append(helper.make_node("DequantizeLinear", ["bq", "b_s", "b_z"], ["b"]))
    nodes.append(helper.make_node("MatMul", ["a", "b"], ["y"]))
    nodes.append(helper.make_node("QuantizeLinear", ["y", "y_s", "y_z"], ["yq"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("aq", TensorProto.UINT8, a_shape),
                                           helper.make_tensor_value_info("bq", TensorProto.UINT8, b_shape)],
                              [helper.make_tensor_value_info("yq", TensorProto.UINT8, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


@pytest.mark.parametrize("shapes", [([1, 2, 8, 16], [1, 2, 16, 8]), ([1, 4, 600], [1, 600, 200])],
                         ids=["attention", "k_slices"])
def test_float_matmul_of_two_activations_on_tvm(shapes):
    """The `onnx` profile's MatMul of two activations (ORT_DISABLE_ALL: MLAS SGEMM, K slices of
    `sgemm_strides` when K is large) on TVM against ORT."""
    import onnxruntime as ort

    data = _matmul_acts(*shapes)
    module = import_onnx(data, profile="onnx")
    out_dtypes = [Interpreter._dtype(v) for v in Interpreter(module).entry().get_return_op().operands]
    lower_to_l3(module)
    compiled = compile_module(module)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    total = 0
    for _ in range(3):
        a, b = (rng.integers(0, 256, s, dtype=np.uint8) for s in shapes)
        ours = [o.view(d) if o.dtype != d and o.dtype.itemsize == d.itemsize else o
                for o, d in zip(compiled(a, b), out_dtypes)]
        total += sum(differing(ours, sess.run(None, {"aq": a, "bq": b})))
    assert total == 0, f"{total} output elements differ from ONNX Runtime"
