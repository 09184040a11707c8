"""ORT's float Softmax, AveragePool and ReduceMean (`rounding = "onnx"` qnn ops and float-island
nn ops) through TVM, bit-exact with ONNX Runtime (ORT_DISABLE_ALL): transforms/float_reductions.py."""

from __future__ import annotations

import numpy as np
import pytest

from qdialect.importer.onnx import import_onnx_file
from tests.onnx_helpers import differing, ort_run
from tests.tvm_bridge.test_onnx_tvm import _run_tvm
from transforms.pipelines import lower_to_l3
from tvm_bridge.compile import compile_module


@pytest.mark.parametrize("name", ["mlp_qdq_u8", "op_softmax_qdq_u8", "op_softmax_qdq_s8", "op_avgpool_cip0_qdq_u8",
                                  "op_avgpool_cip1_qdq_s8",
                                  pytest.param("elementwise_qdq_u8", marks=pytest.mark.slow)])  # ~28 s
def test_zoo_float_reductions_match_onnxruntime(name):
    counts = _run_tvm(name, "onnx")
    assert sum(counts) == 0, f"differing elements per output: {counts}"


def _model(tmp_path, kind: str, shape, *, scale: float, opset: int = 17, island: bool = False, **attrs):
    """float x -> Q -> DQ -> op -> Q (or the float result itself: a float island)."""
    import onnx
    from onnx import TensorProto, helper

    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node(kind, ["xd"], ["y" if island else "yf"], **attrs)]
    inits = [helper.make_tensor("xs", TensorProto.FLOAT, [], [scale]),
             helper.make_tensor("xz", TensorProto.UINT8, [], [128])]
    if not island:
        nodes.append(helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["y"]))
        inits += [helper.make_tensor("ys", TensorProto.FLOAT, [], [1.0 / 256 if kind == "Softmax" else scale * 0.7]),
                  helper.make_tensor("yz", TensorProto.UINT8, [], [0 if kind == "Softmax" else 120])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT if island else TensorProto.UINT8, None)],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10 if opset >= 21 else 8
    # (a distinct name per model: tests.onnx_helpers caches ORT sessions by path)
    path = tmp_path / f"{kind}_{opset}_{int(island)}_{'x'.join(map(str, shape))}.onnx"
    onnx.save(m, str(path))
    return path


def _compare(path, inputs) -> int:
    module = import_onnx_file(str(path), profile="onnx")
    lower_to_l3(module)
    compiled = compile_module(module)
    total = 0
    for x in inputs:
        ours = compiled(x)
        theirs = ort_run(path, [x], disable_all=True)
        ours = [o.view(t.dtype) if o.dtype != t.dtype and o.dtype.itemsize == t.dtype.itemsize else o
                for o, t in zip(ours, theirs)]
        total += sum(differing(ours, theirs))
    return total


@pytest.mark.parametrize("island", [False, True])
@pytest.mark.parametrize("scale", [0.5, 1e-3])  # exp underflowing to 0 / values within a few ulps of 1
def test_softmax_rows_of_every_length_class(tmp_path, scale, island):
    rng = np.random.default_rng(3)
    for d in (1, 2, 15, 16, 17, 47, 48, 49, 100, 300):
        path = _model(tmp_path, "Softmax", [3, d], scale=scale, island=island, axis=-1)
        xs = [(rng.normal(size=(3, d)) * 128 * scale).astype(np.float32) for _ in range(2)]
        assert _compare(path, xs) == 0, f"row length {d}"


@pytest.mark.parametrize("opset", [17, 21])
@pytest.mark.parametrize("island", [False, True])
@pytest.mark.parametrize("kernel,strides,pads", [((3, 3), (1, 1), (1, 1, 1, 1)), ((3, 3), (2, 2), (1, 0, 1, 0)),
                                                 ((2, 3), (3, 3), (0, 1, 1, 2)), ((5, 5), (1, 1), (2, 2, 2, 2)),
                                                 ((7, 7), (1, 1), (0, 0, 0, 0))])
def test_average_pools_with_padding_and_stride(tmp_path, opset, island, kernel, strides, pads):
    rng = np.random.default_rng(5)
    path = _model(tmp_path, "AveragePool", [1, 6, 7, 7], scale=0.0371, opset=opset, island=island,
                  kernel_shape=list(kernel), strides=list(strides), pads=list(pads))
    if island and opset >= 19 and kernel == (7, 7) and not any(pads):
        # a float whole-image AveragePool at opset >= 19 would read as GlobalAveragePool: refused by name
        from qdialect.importer.onnx import OnnxImportError, import_onnx_file

        with pytest.raises(OnnxImportError, match="whole-image AveragePool at opset >= 19"):
            import_onnx_file(path)
        return
    xs = [rng.normal(size=(1, 6, 7, 7)).astype(np.float32) * 3 for _ in range(2)]
    assert _compare(path, xs) == 0


@pytest.mark.parametrize("island", [False, True])
@pytest.mark.parametrize("shape,axes", [([2, 3, 5, 7], [2, 3]), ([2, 3, 4, 4], [3]), ([5, 6], [1]),
                                        ([2, 3, 9], [1, 2])])
def test_reduce_mean_alignment_classes(tmp_path, island, shape, axes):
    rng = np.random.default_rng(9)
    path = _model(tmp_path, "ReduceMean", shape, scale=0.0213, island=island, axes=axes, keepdims=1)
    xs = [rng.normal(size=shape).astype(np.float32) * 2 for _ in range(2)]
    assert _compare(path, xs) == 0
