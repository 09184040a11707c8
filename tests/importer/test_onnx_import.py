"""The ONNX frontend against ONNX Runtime: every zoo model, both profiles, on the interpreter.

`onnxruntime` (the default import) must give ORT's default session's outputs
bit for bit; `onnx` must give ORT's with all graph optimizations disabled (the
ONNX specification's QDQ meaning).  Which groups run in float is checked
against ORT's own optimized graph, and the two spellings of a model (QDQ and
QOperator) against each other: they import to the same canonical ops.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from qdialect.importer.onnx import OnnxImportError, import_onnx, import_onnx_file
from qdialect.interpreter import run_module
from tests.onnx_helpers import MODELS, differing, inputs_for, model, ort_float_nodes, ort_run, our_float_nodes

SAMPLES = 2


def _check(path, profile: str) -> list[int]:
    module = import_onnx_file(path, profile=profile)
    counts = [0]
    for seed in range(SAMPLES):
        inputs = inputs_for(module, seed)
        ours = run_module(module, inputs)
        theirs = ort_run(path, inputs, disable_all=profile == "onnx")
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            assert o.dtype == t.dtype, f"output dtype {o.dtype}, ONNX Runtime gives {t.dtype}"
            assert o.shape == t.shape
        d = differing(ours, theirs)
        counts = [a + b for a, b in zip(counts, d)] if len(counts) == len(d) else d
    return counts


@pytest.mark.parametrize("profile", ["onnxruntime", "onnx"])
@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_interpreter_matches_onnxruntime(path, profile):
    counts = _check(path, profile)
    assert sum(counts) == 0, f"differing elements per output: {counts}"


QDQ_MODELS = [p for p in MODELS if "_qdq_" in p.name]


@pytest.mark.parametrize("path", QDQ_MODELS, ids=[p.stem for p in QDQ_MODELS])
def test_float_groups_are_the_ones_onnxruntime_leaves_in_float(path):
    """Our per-group choice (fused integer kernel or float) against ORT's own optimized graph."""
    remarks: list[str] = []
    import_onnx_file(path, remarks=remarks)
    ours = our_float_nodes(remarks)
    theirs = ort_float_nodes(str(path))
    hard_swish = {n.name for n in onnx.load(str(path)).graph.node if n.op_type == "HardSwish"}
    if hard_swish:  # ORT rewrites HardSwish as HardSigmoid + Mul, nodes without names
        assert hard_swish <= ours and "" in theirs
        ours, theirs = ours - hard_swish, theirs - {""}
    assert ours == theirs


@pytest.mark.parametrize("name", ["cnn", "mobilenetv2", "mlp"])
def test_qdq_and_qoperator_import_to_the_same_canonical_ops(name):
    """One canonical op per operation, whichever spelling the model uses."""
    def ops(stem):
        m = import_onnx_file(model(stem))
        return [op.name for op in m.walk() if op.name.startswith("qnn.") and op.name != "qnn.constant"]

    assert ops(f"{name}_qdq_u8") == ops(f"{name}_qop_u8")


@pytest.mark.parametrize("name", ["cnn_qdq_u8", "cnn_qop_s8", "mobilenetv2_qdq_u8", "mobilenetv2_qop_s8"])
def test_convnet_has_no_transpose_between_ops(name):
    """NCHW is handled at import: one transpose at the 4-D input, none between ops, after lowering."""
    from transforms.pipelines import lower_to_l3

    module = import_onnx_file(model(name))
    l1 = Counter(op.name for op in module.walk())
    assert l1["qnn.transpose"] == 1
    lower_to_l3(module)
    l3 = Counter(op.name for op in module.walk())
    assert l3["linalg.transpose"] == 1
    assert not any(n.startswith("qnn.") for n in l3)


def test_weights_are_ohwi_and_depthwise_weights_1hwc():
    text = str(import_onnx_file(model("mobilenetv2_qop_u8")))
    assert "qnn.depthwise_conv2d" in text
    m = import_onnx_file(model("op_conv_dw_qop_u8"))
    dw = next(op for op in m.walk() if op.name == "qnn.depthwise_conv2d")
    w_shape = list(dw.operands[1].type.get_shape())
    assert w_shape[0] == 1 and w_shape[-1] == dw.results[0].type.get_shape()[-1]


def test_int8_groups_ort_runs_as_uint8_are_imported_as_uint8():
    """ORT's QDQS8ToU8Transformer: a fused int8 average pool runs on uint8 with zero point + 128."""
    m = import_onnx_file(model("op_avgpool_cip0_qdq_s8"))
    pool = next(op for op in m.walk() if op.name == "qnn.avg_pool2d")
    assert "u8" in str(pool.results[0].type)
    m = import_onnx_file(model("op_avgpool_cip0_qdq_s8"), profile="onnx")
    pool = next(op for op in m.walk() if op.name == "qnn.avg_pool2d")
    assert "i8" in str(pool.results[0].type)


def test_profiles_differ_where_onnxruntime_fuses():
    """A fused QDQ model differs between ORT's two paths; each profile matches its own."""
    path = model("op_avgpool_cip0_qdq_u8")
    module, reference_module = import_onnx_file(path), import_onnx_file(path, profile="onnx")
    parted = 0
    for seed in range(4):
        inputs = inputs_for(module, seed)
        fused = ort_run(path, inputs)
        reference = ort_run(path, inputs, disable_all=True)
        parted += sum(differing(fused, reference))
        assert sum(differing(run_module(module, inputs), fused)) == 0
        assert sum(differing(run_module(reference_module, inputs), reference)) == 0
    assert parted > 0


# ----- bad input ------------------------------------------------------------------------------------


def _tiny_qop(**changes) -> onnx.ModelProto:
    m = onnx.load(str(model("op_conv_dw_qop_u8")))
    return m


def _bytes(m: onnx.ModelProto) -> bytes:
    return m.SerializeToString()


def _error(data: bytes) -> str:
    with pytest.raises(OnnxImportError) as e:
        import_onnx(data)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_truncated_and_garbage_files():
    data = model("cnn_qdq_u8").read_bytes()
    assert "truncated" in _error(data[: len(data) // 2])
    assert "not an ONNX model" in _error(b"\x08\x07 definitely not a model")
    assert "empty" in _error(b"")


def test_unsupported_operators_are_listed_at_once():
    m = onnx.load(str(model("cnn_qdq_u8")))
    ops = [n for n in m.graph.node if n.op_type in ("Conv", "MaxPool", "Gemm")]
    ops[0].op_type, ops[1].op_type, ops[2].op_type = "Hardmax", "FancyOp", "Hardmax"
    msg = _error(_bytes(m))
    assert msg.startswith("unsupported operators:")
    assert "Hardmax x2" in msg and "FancyOp x1" in msg


def test_non_constant_scale_names_the_node():
    m = onnx.load(str(model("op_conv_dw_qop_u8")))
    conv = next(n for n in m.graph.node if n.op_type == "QLinearConv")
    m.graph.input.append(helper.make_tensor_value_info("runtime_scale", TensorProto.FLOAT, []))
    conv.input[1] = "runtime_scale"
    msg = _error(_bytes(m))
    assert "(QLinearConv)" in msg and "x scale must be a constant" in msg


def test_zero_point_of_the_wrong_type():
    m = onnx.load(str(model("op_conv_dw_qop_u8")))
    conv = next(n for n in m.graph.node if n.op_type == "QLinearConv")
    m.graph.initializer.append(helper.make_tensor("zp16", TensorProto.INT16, [], [3]))
    conv.input[7] = "zp16"
    msg = _error(_bytes(m))
    assert "(QLinearConv)" in msg and "int16" in msg


def test_weights_quantized_along_an_unsupported_axis():
    m = onnx.load(str(model("op_conv_dw_qdq_u8")))
    dq = next(n for n in m.graph.node if n.op_type == "DequantizeLinear" and "w" in n.input[0]
              and any(i.name == n.input[1] and len(i.dims) == 1 for i in m.graph.initializer))
    dq.attribute.append(helper.make_attribute("axis", 1))
    msg = _error(_bytes(m))
    assert "axis" in msg


def test_opset_outside_the_supported_range():
    m = onnx.load(str(model("op_conv_dw_qop_u8")))
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = 8
    assert "opset 8 is outside" in _error(_bytes(m))


def test_invalid_scale_and_zero_point_values():
    m = onnx.load(str(model("op_conv_dw_qop_u8")))
    conv = next(n for n in m.graph.node if n.op_type == "QLinearConv")
    m.graph.initializer.append(helper.make_tensor("neg_scale", TensorProto.FLOAT, [], [-0.5]))
    conv.input[6] = "neg_scale"
    assert "scale -0.5 must be finite and > 0" in _error(_bytes(m))


def test_external_data_is_refused():
    m = onnx.load(str(model("op_conv_dw_qop_u8")))
    t = next(i for i in m.graph.initializer if i.data_type == TensorProto.INT8 and len(i.dims) == 4)
    t.data_location = TensorProto.EXTERNAL
    t.ClearField("raw_data")
    e = t.external_data.add()
    e.key, e.value = "location", "weights.bin"
    assert "external file" in _error(_bytes(m))


def test_initializer_whose_data_does_not_match_its_dims():
    m = onnx.load(str(model("op_conv_dw_qop_u8")))
    t = next(i for i in m.graph.initializer if i.data_type == TensorProto.INT8 and len(i.dims) == 4)
    t.dims[0] = 1 << 30  # claims a huge tensor: refused before anything is allocated
    assert "claims" in _error(_bytes(m)) or "needs" in _error(_bytes(m))


def test_float_model_is_not_silently_imported():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 4], np.eye(4, dtype=np.float32).ravel().tolist())
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [x], [y], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    assert "unsupported operators: MatMul (in float" in _error(_bytes(m))


def _cli(*args):
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=300)


def test_qd_import_cli(tmp_path):
    ok = _cli("qdialect.importer.cli", str(model("cnn_qop_u8")))
    assert ok.returncode == 0, ok.stderr
    assert "qnn.conv2d" in ok.stdout and "qnn.fully_connected" in ok.stdout
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"garbage")
    r = _cli("qdialect.importer.cli", str(bad))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    remarks = _cli("qdialect.importer.cli", str(model("mobilenetv2_qdq_s8")))
    assert remarks.returncode == 0
    assert "remark:" in remarks.stderr and "runs it in float" in remarks.stderr


def test_qd_run_cli_compares_with_onnxruntime(tmp_path):
    r = _cli("tvm_bridge.run_cli", str(model("op_add_bcast_qop_u8")), "--backend", "interp", "--samples", "2",
             "--output", str(tmp_path / "out.npz"))
    assert r.returncode == 0, r.stderr
    assert "BIT-EXACT vs ONNX Runtime (default session)" in r.stdout
    out = np.load(tmp_path / "out.npz")["output_0"]
    assert out.dtype == np.float32  # a QDQ/QOperator model with float edges keeps them
    r = _cli("tvm_bridge.run_cli", str(model("op_add_bcast_qop_u8")), "--backend", "interp", "--rounding", "onnx")
    assert r.returncode == 0 and "ORT_DISABLE_ALL" in r.stdout
    r = _cli("tvm_bridge.run_cli", str(model("op_add_bcast_qop_u8")), "--compare", "litert")
    assert r.returncode == 2 and "needs a .tflite" in r.stderr


# ----- found by the ONNX fuzzer (tests/fuzz/onnx_models.py): each was a TypeError / IndexError /
# ValueError inside the importer, reported only by its catch-all ("malformed model (...)") or not at all


def _node(m, op_type):
    return next(n for n in m.graph.node if n.op_type == op_type)


@pytest.mark.parametrize("name,op_type,attr,value,declared", [
    ("op_leakyrelu_qdq_u8", "LeakyRelu", "alpha", [1, 2], "INTS"),
    ("op_leakyrelu_qop_u8", "QLinearLeakyRelu", "alpha", [1, 2], "INTS"),
    ("op_conv_dw_qop_u8", "QLinearConv", "pads", 1, "INT"),
    ("op_conv_dw_qop_u8", "QLinearConv", "group", [1, 2], "INTS"),
    ("op_maxpool_qdq_u8", "MaxPool", "strides", "2", "STRING"),
    ("op_transpose_qdq_u8", "Transpose", "perm", 1.5, "FLOAT"),
    ("op_softmax_qop_u8", "QLinearSoftmax", "axis", [1.0], "FLOATS"),
])
def test_attribute_of_the_wrong_type_names_the_node(name, op_type, attr, value, declared):
    m = onnx.load(str(model(name)))
    n = _node(m, op_type)
    for a in list(n.attribute):
        if a.name == attr:
            n.attribute.remove(a)
    n.attribute.append(helper.make_attribute(attr, value))
    msg = _error(_bytes(m))
    assert f"({op_type}): attribute '{attr}' is {declared}, but {op_type} takes" in msg


def test_dequantize_axis_of_the_wrong_type():
    m = onnx.load(str(model("op_conv_dw_qdq_u8")))
    dq = _node(m, "DequantizeLinear")
    dq.attribute.append(helper.make_attribute("axis", helper.make_tensor("t", TensorProto.FLOAT, [1], [1.0])))
    assert "(DequantizeLinear): attribute 'axis' is TENSOR, but DequantizeLinear takes INT" in _error(_bytes(m))


@pytest.mark.parametrize("op_type", ["QuantizeLinear", "DequantizeLinear", "Conv", "LeakyRelu", "MaxPool"])
def test_node_without_output(op_type):
    name = {"Conv": "op_conv_dw_qdq_u8", "LeakyRelu": "op_leakyrelu_qdq_u8", "MaxPool": "op_maxpool_qdq_u8"}.get(
        op_type, "op_conv_dw_qdq_u8")
    m = onnx.load(str(model(name)))
    del _node(m, op_type).output[:]
    assert f"({op_type}): has no output" in _error(_bytes(m))


def test_node_without_inputs():
    m = onnx.load(str(model("op_reshape_qdq_u8")))
    del _node(m, "Reshape").input[:]
    assert "(Reshape): has no inputs" in _error(_bytes(m))


def test_two_nodes_writing_one_name():
    m = onnx.load(str(model("op_add_bcast_qop_u8")))
    q0, q1 = [n for n in m.graph.node if n.op_type == "QuantizeLinear"]
    q1.output[0] = q0.output[0]  # single assignment broken: the QLinearAdd would read one of them twice
    assert "(QuantizeLinear): output 'x0_quantized' is already written by node 0" in _error(_bytes(m))
    m = onnx.load(str(model("op_add_bcast_qop_u8")))
    m.graph.node[0].output[0] = "x1_scale"
    assert "output 'x1_scale' is already written by an initializer" in _error(_bytes(m))


def test_names_that_are_not_utf8():
    m = onnx.load(str(model("op_add_bcast_qop_u8")))
    data = _bytes(m).replace(b"QLinearAdd", b"QLinear\xffdd")
    assert "op_type is not UTF-8 text" in _error(data)


def test_operands_that_do_not_broadcast():
    m = onnx.load(str(model("op_add_bcast_qop_u8")))
    dim = m.graph.input[1].type.tensor_type.shape.dim[1]
    dim.dim_value = 2  # [1, 8, 4, 4] + [1, 2, 1, 1]
    assert "(QLinearAdd): operand shapes [1, 8, 4, 4] and [1, 2, 1, 1] do not broadcast" in _error(_bytes(m))


def test_pool_strides_of_the_wrong_length():
    m = onnx.load(str(model("op_avgpool_cip0_qdq_u8")))
    _node(m, "AveragePool").attribute.extend([helper.make_attribute("strides", [2]),
                                               helper.make_attribute("auto_pad", "SAME_UPPER")])
    n = _node(m, "AveragePool")
    for a in list(n.attribute):
        if a.name == "pads":
            n.attribute.remove(a)
    assert "(AveragePool): strides [2] must have 2 entries" in _error(_bytes(m))


def test_resize_scales_that_are_not_finite():
    from onnx import numpy_helper

    m = onnx.load(str(model("elementwise_qop_u8")))
    t = next(t for t in m.graph.initializer if t.name == "scales_13")
    t.CopyFrom(numpy_helper.from_array(np.array([1, 1, 2, np.nan], np.float32), "scales_13"))
    assert "(Resize): scales [1.0, 1.0, 2.0, nan] must be finite and > 0" in _error(_bytes(m))


def test_unsqueeze_without_axes_before_opset_13():
    m = onnx.load(str(model("elementwise_qdq_u8")))
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = 12
    n = _node(m, "Unsqueeze")
    del n.input[1:]  # opset 12 takes `axes` as an attribute, and it has none
    assert "(Unsqueeze): has no 'axes' attribute (opset 12 Unsqueeze needs one)" in _error(_bytes(m))


def test_concat_of_different_ranks():
    m = onnx.load(str(model("op_concat_qdq_u8")))
    del m.graph.input[1].type.tensor_type.shape.dim[-1]  # [1, C, 4, 4] and [1, C', 4]
    msg = _error(_bytes(m))
    assert "(Concat): input shapes" in msg and "differ outside axis" in msg


def test_a_name_with_a_newline_stays_one_line():
    m = onnx.load(str(model("op_add_bcast_qop_u8")))
    m.graph.input[0].name = "x0\nsecond line"
    m.graph.input[0].type.tensor_type.ClearField("shape")
    assert "graph input 'x0\\nsecond line' has no shape" in _error(_bytes(m))


def test_a_huge_attribute_list_gives_a_short_message():
    m = onnx.load(str(model("op_transpose_qdq_u8")))
    n = _node(m, "Transpose")
    del n.attribute[:]
    n.attribute.append(helper.make_attribute("perm", [1] * 100000))
    msg = _error(_bytes(m))
    assert "(Transpose): perm [1, 1," in msg and " ... " in msg and len(msg) < 1000


def test_integer_inputs_and_outputs_keep_their_dtypes():
    """A model with uint8 edges: uint8 in, uint8 out, bit-exact; the input's scale comes from its reader."""
    rng = np.random.default_rng(0)
    x = helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 3, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 4, 3, 3])
    inits = [helper.make_tensor("xs", TensorProto.FLOAT, [], [0.05]), helper.make_tensor("xz", TensorProto.UINT8, [], [120]),
             helper.make_tensor("w", TensorProto.INT8, [4, 3, 2, 2], rng.integers(-100, 100, 48).tolist()),
             helper.make_tensor("ws", TensorProto.FLOAT, [4], [0.01, 0.02, 0.015, 0.03]),
             helper.make_tensor("wz", TensorProto.INT8, [4], [0, 0, 0, 0]),
             helper.make_tensor("ys", TensorProto.FLOAT, [], [0.1]), helper.make_tensor("yz", TensorProto.UINT8, [], [100])]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])
    m = helper.make_model(helper.make_graph([node], "g", [x], [y], inits), opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    module = import_onnx(m.SerializeToString())
    inputs = inputs_for(module, 0)
    assert inputs[0].dtype == np.uint8
    ours = run_module(module, inputs)
    assert ours[0].dtype == np.uint8
    import onnxruntime as ort

    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    assert np.array_equal(ours[0], sess.run(None, {"x": inputs[0]})[0])
    # an integer input that no quantized operator reads has no scale: refused by name
    m.graph.node[0].op_type = "Identity"
    del m.graph.node[0].input[1:]
    assert "graph input 'x'" in _error(m.SerializeToString())
