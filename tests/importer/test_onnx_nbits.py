"""ONNX Runtime's MatMulNBits (8-bit weights, block 32, accuracy level 4) against ORT 1.32's default
session: a float MatMul fed by a float graph input, with DequantizeLinear weights (and a
DequantizeLinear bias Add), which ORT rewrites into com.microsoft MatMulNBits.  0 differing float32
bits.  The recipe is AVX-512 VNNI's (`onnxruntime_nbits.nbits_recipe`); on another CPU the kernel
refuses by name, and the test checks that refusal instead."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from qdialect.reference import onnxruntime_nbits as nbits

F32 = np.float32
ON_RECIPE = nbits.nbits_recipe() == nbits.RECIPE


def _model(k: int, n: int, signed: bool, per_channel: bool, with_bias: bool, seed: int, rows=None):
    rng = np.random.default_rng(seed)
    if signed:
        w = rng.integers(-128, 128, (k, n)).astype(np.int8)
        zp = rng.integers(-5, 5, n).astype(np.int8) if per_channel else np.int8(0)
    else:
        w = rng.integers(0, 256, (k, n)).astype(np.uint8)
        zp = rng.integers(100, 150, n).astype(np.uint8) if per_channel else np.uint8(128)
    s = (rng.random(n) * 0.01 + 0.001).astype(F32) if per_channel else F32(0.003)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.asarray(s), "s"),
             numpy_helper.from_array(np.asarray(zp), "zp")]
    nodes = [helper.make_node("DequantizeLinear", ["w", "s", "zp"], ["wf"], axis=1),
             helper.make_node("MatMul", ["x", "wf"], ["mm" if with_bias else "y"])]
    bias = None
    if with_bias:
        b = rng.integers(-3000, 3000, n).astype(np.int32)
        bs = F32(0.0007)
        inits += [numpy_helper.from_array(b, "b"), numpy_helper.from_array(np.asarray(bs), "bs")]
        nodes += [helper.make_node("DequantizeLinear", ["b", "bs"], ["bf"]),
                  helper.make_node("Add", ["mm", "bf"], ["y"])]
        bias = (b.astype(F32) * bs).astype(F32)
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, n])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    return m, w, s, zp, bias


def _ort(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    so = ort.SessionOptions()
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def _ours(x, w, s, zp, bias, signed, per_channel):
    wu, scale, zero = nbits.blockwise_weights(w, s, zp, 1 if per_channel else None)
    return nbits.matmul_nbits(x, wu, scale, zero, bias)


def test_default_session_rewrites_to_matmul_nbits(tmp_path):
    """What the model is: ORT's optimized graph holds MatMulNBits bits=8, block 32, accuracy 4."""
    m, *_ = _model(100, 10, True, True, True, 0)
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    nodes = [n for n in onnx.load(str(tmp_path / "opt.onnx")).graph.node if n.op_type == "MatMulNBits"]
    assert len(nodes) == 1
    attrs = {a.name: a.i for a in nodes[0].attribute}
    assert (attrs["bits"], attrs["block_size"], attrs["accuracy_level"], attrs["K"], attrs["N"]) == (8, 32, 4, 100, 10)
    assert nodes[0].input[5]  # the bias Add was fused


@pytest.mark.skipif(not ON_RECIPE, reason="this CPU runs another MLAS kernel (see test_refused_elsewhere)")
@pytest.mark.parametrize("k", [16, 32, 48, 64, 100, 300])
@pytest.mark.parametrize("n", [8, 10, 64])
def test_bit_exact_against_default_session(k, n):
    total = 0
    for signed in (True, False):
        for per_channel in (True, False):
            for with_bias in (False, True):
                m, w, s, zp, bias = _model(k, n, signed, per_channel, with_bias, seed=k * 7 + n)
                for rows in (1, 3, 5):
                    x = np.random.default_rng(rows + k).standard_normal((rows, k)).astype(F32)
                    ref = _ort(m, x)
                    got = _ours(x, w, s, zp, bias, signed, per_channel)
                    total += int((ref.view(np.int32) != got.view(np.int32)).sum())
    assert total == 0


@pytest.mark.skipif(not ON_RECIPE, reason="needs the AVX-512 VNNI recipe")
def test_not_the_float_matmul():
    """The recipe is really int8: the float product (ORT_DISABLE_ALL's SGEMM) differs from ORT here."""
    m, w, s, zp, _ = _model(100, 10, True, True, False, 1)
    x = np.random.default_rng(2).standard_normal((3, 100)).astype(F32)
    ref = _ort(m, x)
    deq = ((w.astype(np.int32) - zp.astype(np.int32)).astype(F32) * s).astype(F32)
    assert (ref.view(np.int32) != (x.astype(np.float64) @ deq).astype(F32).view(np.int32)).sum() > 20
    assert (ref.view(np.int32) != _ours(x, w, s, zp, None, True, True).view(np.int32)).sum() == 0


def test_refused_elsewhere(monkeypatch):
    monkeypatch.setenv("QDIALECT_ORT_ISA", "avx2")
    with pytest.raises(nbits.NbitsUnsupported, match="avx2"):
        nbits.matmul_nbits(np.zeros((1, 32), F32), np.zeros((32, 8), np.int64), np.ones(8, F32), np.zeros(8, np.int64))


@pytest.mark.skipif(not ON_RECIPE, reason="needs the AVX-512 VNNI recipe")
def test_importer_default_profile_bit_exact():
    """qd-import's default profile: one nn.fully_connected marked ort_nbits (the bias Add fused, as
    ORT fuses it), run by the interpreter, 0 differing bits against the default session."""
    from qdialect.dialects import nn
    from qdialect.importer.onnx import import_onnx
    from qdialect.interpreter import run_module

    total = 0
    for k, n, signed in ((100, 10, True), (300, 64, False), (48, 8, True)):
        m, *_ = _model(k, n, signed, True, True, seed=k, rows=4)
        module = import_onnx(m.SerializeToString(), profile="onnxruntime")
        ops = [op for op in module.walk() if isinstance(op, nn.FullyConnectedOp)]
        assert len(ops) == 1 and ops[0].attr("ort_nbits") == nbits.RECIPE and len(ops[0].operands) == 3
        assert not any(isinstance(op, nn.AddOp) for op in module.walk())
        x = np.random.default_rng(k).standard_normal((4, k)).astype(F32)
        (ours,) = run_module(module, [x])
        total += int((_ort(m, x).view(np.int32) != np.asarray(ours, F32).view(np.int32)).sum())
    assert total == 0


def test_importer_refuses_other_isas(monkeypatch):
    from qdialect.importer.onnx import OnnxImportError, import_onnx

    monkeypatch.setenv("QDIALECT_ORT_ISA", "avx2")
    m, *_ = _model(64, 8, True, True, False, 0)
    with pytest.raises(OnnxImportError, match="MatMulNBits.*avx2"):
        import_onnx(m.SerializeToString(), profile="onnxruntime")
