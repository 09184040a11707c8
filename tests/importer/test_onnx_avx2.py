"""The `onnxruntime` profile on an x86 CPU without VNNI, against ORT run on one.

ORT / MLAS multiplies uint8 activations by int8 weights with `vpmaddubsw` on a
CPU with AVX2 and no VNNI: each pair of adjacent raw products is saturated to
int16 before the int32 sum.  `qemu-x86_64 -cpu Haswell` runs this venv's ORT as
such a CPU (tools/ort_emulated.py), so ORT's integers on that path are the
reference here, on any x86-64 machine.  Ours run with the ISA forced to the
AVX2 model (`QDIALECT_ORT_ISA=avx2`): the interpreter, and the TVM build, whose
lowering writes the same saturation into the integer IR.  Each must give zero
differing elements; and the exact (VNNI) model must differ from emulated ORT,
or the test would not be testing the saturation.

Skipped only where `qemu-x86_64` is not installed (Debian package qemu-user;
.ci/run installs it).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from qdialect.importer.onnx import import_onnx_file
from qdialect.interpreter import Interpreter, run_module
from qdialect.qparams import QParams
from qdialect.reference import onnxruntime_kernels as R
from tests.onnx_helpers import differing, inputs_for, model
from transforms.pipelines import lower_to_l3

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import ort_emulated  # noqa: E402 - ORT under qemu, beside the zoo generators

needs_qemu = pytest.mark.skipif(shutil.which("qemu-x86_64") is None,
                                reason="qemu-x86_64 is not installed (Debian package qemu-user): "
                                       "no CPU without VNNI to run ONNX Runtime on")

# uint8 x int8 convolutions (3 input channels: pairs cross taps; stride 2 with asymmetric padding;
# grouped), QGemm / QLinearMatMul with constant weights; QDQ and QOperator spellings
MODELS = ["cnn_qdq_u8", "op_conv_s2_asym_qop_u8", "op_conv_grouped_qdq_u8", "mlp_qop_u8"]
SAMPLES = 2


def _tvm(module):
    from tvm_bridge.compile import compile_module

    out_dtypes = [Interpreter._dtype(v) for v in Interpreter(module).entry().get_return_op().operands]
    lower_to_l3(module)
    compiled = compile_module(module)

    def run(inputs):
        return [np.array(o.view(d) if o.dtype != d and o.dtype.itemsize == d.itemsize else o)
                for o, d in zip(compiled(*inputs), out_dtypes)]

    return run


def _total(ours, theirs) -> int:
    return sum(sum(differing(a, b)) for a, b in zip(ours, theirs))


@needs_qemu
def test_zoo_models_match_onnxruntime_without_vnni(monkeypatch):
    jobs, ours = [], {}
    for name in MODELS:
        path = model(name)
        exact = import_onnx_file(path)
        samples = [inputs_for(exact, seed) for seed in range(SAMPLES)]
        monkeypatch.setenv("QDIALECT_ORT_ISA", "vnni")
        vnni = [run_module(exact, x) for x in samples]
        monkeypatch.setenv("QDIALECT_ORT_ISA", "avx2")
        module = import_onnx_file(path)
        interp = [run_module(module, x) for x in samples]
        tvm = _tvm(module)
        ours[name] = (vnni, interp, [tvm(x) for x in samples])
        jobs.extend((str(path), False, x) for x in samples)
    emulated = iter(ort_emulated.run_emulated(jobs))
    saturated = 0
    for name in MODELS:
        vnni, interp, tvm = ours[name]
        theirs = [next(emulated) for _ in range(SAMPLES)]
        assert _total(interp, theirs) == 0, f"{name}: interpreter (avx2) vs ORT on Haswell"
        assert _total(tvm, theirs) == 0, f"{name}: TVM (avx2) vs ORT on Haswell"
        saturated += _total(vnni, theirs)
    assert saturated > 0  # the exact dot products do not reproduce ORT on this CPU


def _qlinear_conv_model(path: Path, w: np.ndarray, bias: np.ndarray | None, case: dict) -> None:
    """QLinearConv, uint8 x int8, 3 x 3, 3 input channels (K = 27: odd, pairs cross taps)."""
    o, c = w.shape[0], w.shape[1]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"] + (["b"] if bias is not None else []),
                            ["y"], pads=case["pads"], strides=case["strides"])
    inits = [numpy_helper.from_array(np.float32(0.02), "xs"), numpy_helper.from_array(np.uint8(case["x_zp"]), "xz"),
             numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.full(np.shape(case["w_zp"]), 0.01, np.float32), "ws"),
             numpy_helper.from_array(np.asarray(case["w_zp"], np.int8), "wz"),
             numpy_helper.from_array(np.float32(case["y_scale"]), "ys"), numpy_helper.from_array(np.uint8(128), "yz")]
    if bias is not None:
        inits.append(numpy_helper.from_array(bias, "b"))
    graph = helper.make_graph([node], "sat", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, c, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    m.ir_version = 9
    onnx.save(m, str(path))


@needs_qemu
def test_crafted_saturation(tmp_path, monkeypatch):
    """Activations near 255 times weights near +-127: most pair sums leave int16.  Emulated ORT,
    the reference kernel, the interpreter and TVM agree in the AVX2 model; the exact sums differ.
    A CPU without AVX2 (-cpu SandyBridge: MLAS's SSE kernels widen to int16) is exact."""
    rng = np.random.default_rng(0)
    w = np.where(rng.random((8, 3, 3, 3)) < 0.5, rng.integers(100, 128, (8, 3, 3, 3)),
                 rng.integers(-128, -100, (8, 3, 3, 3))).astype(np.int8)
    x = rng.integers(200, 256, (1, 3, 6, 6)).astype(np.uint8)
    bias = rng.integers(-3000, 3000, 8).astype(np.int32)
    cases = [dict(x_zp=0, w_zp=0, y_scale=2.0, pads=[1, 1, 1, 1], strides=[1, 1], bias=None),
             # per-channel weight zero points that differ, asymmetric padding, strides (2, 1), bias
             dict(x_zp=7, w_zp=[0, 3, -4, 7, -1, 2, 5, -6], y_scale=1.0, pads=[1, 0, 0, 1], strides=[2, 1],
                  bias=bias)]
    paths, jobs = [], []
    for i, case in enumerate(cases):
        path = tmp_path / f"sat{i}.onnx"
        _qlinear_conv_model(path, w, case["bias"], case)
        paths.append(path)
        jobs.append((str(path), False, [x]))
    haswell = ort_emulated.run_emulated(jobs)
    sandy = ort_emulated.run_emulated(jobs, cpu="SandyBridge")
    for path, case, (theirs,), (exact_cpu,) in zip(paths, cases, haswell, sandy):
        per_channel = np.ndim(case["w_zp"]) == 1
        x_q = QParams.make(np.float32(0.02), case["x_zp"], storage="u8")
        w_q = QParams.make(np.full(8, 0.01, np.float32) if per_channel else np.float32(0.01), case["w_zp"],
                           storage="i8", axis=0 if per_channel else None)
        y_q = QParams.make(np.float32(case["y_scale"]), 128, storage="u8")
        (pt, pl, pb, pr) = case["pads"]
        args = dict(x_q=x_q, w_q=w_q, out_q=y_q, padding=((pt, pb), (pl, pr)), strides=case["strides"])
        x_nhwc, w_ohwi = x.transpose(0, 2, 3, 1), w.transpose(0, 2, 3, 1)
        saturated = R.qlinear_conv(x_nhwc, w_ohwi, case["bias"], isa="avx2", **args).transpose(0, 3, 1, 2)
        exact = R.qlinear_conv(x_nhwc, w_ohwi, case["bias"], isa="vnni", **args).transpose(0, 3, 1, 2)
        assert np.count_nonzero(saturated != exact) > saturated.size // 4
        assert np.count_nonzero(theirs != saturated) == 0
        assert np.count_nonzero(exact_cpu != exact) == 0
        monkeypatch.setenv("QDIALECT_ORT_ISA", "avx2")
        module = import_onnx_file(path)
        assert np.count_nonzero(run_module(module, [x])[0] != theirs) == 0
        assert np.count_nonzero(_tvm(module)([x])[0] != theirs) == 0
        monkeypatch.delenv("QDIALECT_ORT_ISA")


@needs_qemu
def test_crafted_saturation_two_activations(tmp_path, monkeypatch):
    """QLinearMatMul of a uint8 and an int8 activation (MLAS packs B at run time), K = 9 (odd),
    batched, both zero points nonzero: the saturating pairs through the interpreter and TVM."""
    rng = np.random.default_rng(1)
    a = rng.integers(180, 256, (2, 3, 5, 9)).astype(np.uint8)
    b = np.where(rng.random((2, 3, 9, 4)) < 0.5, rng.integers(90, 128, (2, 3, 9, 4)),
                 rng.integers(-128, -90, (2, 3, 9, 4))).astype(np.int8)
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    inits = [numpy_helper.from_array(np.float32(0.03), "as"), numpy_helper.from_array(np.uint8(9), "az"),
             numpy_helper.from_array(np.float32(0.02), "bs"), numpy_helper.from_array(np.int8(-5), "bz"),
             numpy_helper.from_array(np.float32(2.5), "ys"), numpy_helper.from_array(np.uint8(128), "yz")]
    graph = helper.make_graph([node], "sat", [helper.make_tensor_value_info("a", TensorProto.UINT8, a.shape),
                                              helper.make_tensor_value_info("b", TensorProto.INT8, b.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [2, 3, 5, 4])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    m.ir_version = 9
    path = tmp_path / "matmul.onnx"
    onnx.save(m, str(path))
    ((theirs,),) = ort_emulated.run_emulated([(str(path), False, [a, b])])
    args = dict(a_q=QParams.make(np.float32(0.03), 9, storage="u8"), b_q=QParams.make(np.float32(0.02), -5, storage="i8"),
                out_q=QParams.make(np.float32(2.5), 128, storage="u8"))
    assert np.count_nonzero(R.qlinear_matmul(a, b, isa="vnni", **args) != theirs) > 0
    assert np.count_nonzero(R.qlinear_matmul(a, b, isa="avx2", **args) != theirs) == 0
    monkeypatch.setenv("QDIALECT_ORT_ISA", "avx2")
    module = import_onnx_file(path)
    assert any(op.name == "qnn.batch_matmul" for op in module.walk())
    assert np.count_nonzero(run_module(module, [a, b])[0] != theirs) == 0
    assert np.count_nonzero(_tvm(module)([a, b])[0] != theirs) == 0
