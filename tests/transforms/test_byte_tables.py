"""Elementwise graphs of one byte tensor folded into one table (transforms/byte_tables.py,
a step of qnn-decompose): which graphs fold, and the bits of models built of them against
LiteRT (reference kernels for the `tflite` profile, the default path for `litert`) over
every stored byte, through the TVM build."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tflite_writer import OpSpec, TensorSpec, build_model, run_tflite
from tests.tvm_bridge.helpers import lowered_tflite
from transforms import pipelines
from tvm_bridge.compile import compile_module

SHAPE = (1, 4, 8, 9)  # 288 elements: every int8 value and then some


def _swish(with_gate_output: bool = False, act: str | None = None) -> bytes:
    """EfficientNet's swish: y = x * logistic(x) (TFLite's int8 spelling), with a
    fused activation on the MUL when `act`; the logistic also an output when asked."""
    tensors = [TensorSpec(SHAPE, "int8", 0.031, -4), TensorSpec(SHAPE, "int8", 1 / 256, -128),
               TensorSpec(SHAPE, "int8", 0.017, -5)]
    options = {"fused_activation_function": act} if act else None
    ops = [OpSpec("LOGISTIC", [0], [1]), OpSpec("MUL", [0, 1], [2], options)]
    return build_model(ops, tensors, [0], [2, 1] if with_gate_output else [2])


def _square_plus_tanh() -> bytes:
    """y = x * x + tanh(x): a binary op of x with itself, and a sum of two branches."""
    tensors = [TensorSpec(SHAPE, "int8", 0.05, 7), TensorSpec(SHAPE, "int8", 0.2, -100),
               TensorSpec(SHAPE, "int8", 1 / 128, 0), TensorSpec(SHAPE, "int8", 0.15, -60)]
    ops = [OpSpec("MUL", [0, 0], [1]), OpSpec("TANH", [0], [2]), OpSpec("ADD", [1, 2], [3])]
    return build_model(ops, tensors, [0], [3])


def _gate() -> bytes:
    """squeeze-and-excitation's gate: x * logistic(g) with g per channel (broadcast): two
    tensors, no table."""
    tensors = [TensorSpec(SHAPE, "int8", 0.031, -4), TensorSpec((1, 1, 1, 9), "int8", 0.05, 2),
               TensorSpec((1, 1, 1, 9), "int8", 1 / 256, -128), TensorSpec(SHAPE, "int8", 0.02, 1)]
    ops = [OpSpec("LOGISTIC", [1], [2]), OpSpec("MUL", [0, 2], [3])]
    return build_model(ops, tensors, [0, 1], [3])


def _every_byte(seed: int = 0) -> np.ndarray:
    x = np.resize(np.arange(-128, 128), SHAPE).astype(np.int8)
    x.reshape(-1)[256:] = np.random.default_rng(seed).integers(-128, 128, x.size - 256)
    return x


def _to_l2(module) -> None:
    """`module` lowered up to L2 (qint ops) by the passes `lower_to_l3` runs."""
    for p in pipelines.l3_passes(module):
        if p.name == "qnn-lower-to-linalg":
            break
        p.apply(pipelines._context(), module)


def _l2_ops(model: bytes, rounding: str, tmp_path) -> dict[str, int]:
    from qdialect.dialects.qnn import set_rounding
    from tvm_bridge.run_cli import load_module

    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    module = load_module(path, 1)
    if rounding != "tflite":
        set_rounding(module, rounding)
    _to_l2(module)
    counts: dict[str, int] = {}
    for op in module.walk():
        counts[op.name] = counts.get(op.name, 0) + 1
    return counts


@pytest.mark.parametrize("rounding", ["tflite", "litert"])
@pytest.mark.parametrize("name, build, tables, muls", [
    ("swish", lambda: _swish(), 1, 0),
    ("swish-relu6", lambda: _swish(act="RELU6"), 1, 0),
    ("swish-and-its-gate", lambda: _swish(with_gate_output=True), 2, 0),
    ("square-plus-tanh", _square_plus_tanh, 1, 0),
])
def test_graphs_of_one_byte_tensor_fold_and_match_litert(tmp_path, rounding, name, build, tables, muls):
    model = build()
    counts = _l2_ops(model, rounding, tmp_path)
    assert counts.get("qint.table", 0) == tables, counts
    assert counts.get("qint.mul", 0) == muls and counts.get("qint.add", 0) == 0, counts
    x = _every_byte()
    theirs = run_tflite(model, [x], reference=rounding == "tflite")
    ours = compile_module(lowered_tflite(model, rounding, tmp_path)(), cache=False)(x)
    assert [o.dtype for o in ours] == [t.dtype for t in theirs]
    assert [int(np.count_nonzero(o != t)) for o, t in zip(ours, theirs)] == [0] * len(theirs)


def test_a_gate_of_two_tensors_does_not_fold(tmp_path):
    model = _gate()
    counts = _l2_ops(model, "tflite", tmp_path)
    assert counts.get("qint.mul", 0) == 1 and counts.get("qint.table", 0) == 1, counts  # (the logistic's own)
    x = _every_byte()
    g = np.arange(-64, 80, 16, dtype=np.int8).reshape(1, 1, 1, 9)
    theirs = run_tflite(model, [x, g], reference=True)
    ours = compile_module(lowered_tflite(model, "tflite", tmp_path)(), cache=False)(x, g)
    assert np.count_nonzero(ours[0] != theirs[0]) == 0


def _onnx_silu(path, dtype: str) -> None:
    """A QDQ SiLU, `x * sigmoid(x)` (DequantizeLinear -> Sigmoid -> QuantizeLinear, then the
    Mul of both dequantized), int8 or uint8, written with onnx.helper."""
    import onnx
    from onnx import TensorProto
    from onnx import helper as h

    t = TensorProto.INT8 if dtype == "int8" else TensorProto.UINT8
    shift = 0 if dtype == "int8" else 128
    init = [h.make_tensor("sx", TensorProto.FLOAT, [], [0.031]), h.make_tensor("zx", t, [], [-3 + shift]),
            h.make_tensor("ss", TensorProto.FLOAT, [], [1 / 256]), h.make_tensor("zs", t, [], [-128 + shift]),
            h.make_tensor("so", TensorProto.FLOAT, [], [0.017]), h.make_tensor("zo", t, [], [-5 + shift])]
    nodes = [h.make_node("DequantizeLinear", ["x", "sx", "zx"], ["xf"]), h.make_node("Sigmoid", ["xf"], ["sf"]),
             h.make_node("QuantizeLinear", ["sf", "ss", "zs"], ["sq"]),
             h.make_node("DequantizeLinear", ["sq", "ss", "zs"], ["sf2"]), h.make_node("Mul", ["xf", "sf2"], ["yf"]),
             h.make_node("QuantizeLinear", ["yf", "so", "zo"], ["y"])]
    graph = h.make_graph(nodes, "silu", [h.make_tensor_value_info("x", t, list(SHAPE))],
                         [h.make_tensor_value_info("y", t, list(SHAPE))], init)
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))


@pytest.mark.parametrize("profile", ["onnxruntime", "onnx"])
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_onnx_qdq_silu_folds_and_matches_onnxruntime(tmp_path, dtype, profile):
    """The ONNX profiles' ops fold too (their decompositions and the interpreter's ONNX
    arithmetic): one table, against ONNX Runtime's default session (`onnxruntime`) and
    ORT_DISABLE_ALL (`onnx`) over every stored byte."""
    pytest.importorskip("onnxruntime")
    from qdialect.dialects.qnn import set_rounding
    from tests.onnx_helpers import ort_run
    from tvm_bridge.run_cli import load_module

    path = tmp_path / "silu.onnx"
    _onnx_silu(path, dtype)

    def module():
        m = load_module(path, 1)
        if profile == "onnx":
            set_rounding(m, "onnx")
        return m

    l2 = module()
    _to_l2(l2)
    names = [op.name for op in l2.walk()]
    assert names.count("qint.table") == 1 and not any(n.startswith("qint.") and n != "qint.table" for n in names), names
    lowered = module()
    pipelines.lower_to_l3(lowered)
    x = _every_byte().view(np.uint8) if dtype == "uint8" else _every_byte()
    theirs = ort_run(path, [x], disable_all=profile == "onnx")[0]
    ours = compile_module(lowered, cache=False)(x)[0]
    assert ours.dtype == theirs.dtype and int(np.count_nonzero(ours != theirs)) == 0


def test_a_graph_the_decomposition_refuses_is_left_to_refuse(tmp_path):
    """uint8 swish: qnn-decompose refuses a MUL of unsigned storage, so the graph is not
    folded behind its back; the pass names the op and the reason, as without the fold."""
    from xdsl.utils.exceptions import PassFailedException

    from tvm_bridge.run_cli import load_module

    tensors = [TensorSpec(SHAPE, "uint8", 0.031, 124), TensorSpec(SHAPE, "uint8", 1 / 256, 0),
               TensorSpec(SHAPE, "uint8", 0.017, 123)]
    path = tmp_path / "swish_u8.tflite"
    path.write_bytes(build_model([OpSpec("LOGISTIC", [0], [1]), OpSpec("MUL", [0, 1], [2])], tensors, [0], [2]))
    module = load_module(path, 1)
    with pytest.raises(PassFailedException, match=r"qnn\.mul: .*unsigned storage"):
        pipelines.lower_to_l3(module)
