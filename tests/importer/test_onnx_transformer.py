"""Quantized transformer encoders from ONNX Runtime's quantizer against ONNX Runtime (issue 22).

The float kernels ORT runs between quantized ops (MLAS's erf, Gelu, its AVX2
LayerNorm, ReduceMean over leading axes) are checked against one-node models in
both sessions; whole encoder blocks built with onnx.helper and quantized by
`quantize_static` (QDQ uint8 / int8, QOperator uint8) must give ORT's outputs
bit for bit in both profiles on the interpreter.  Every expected value comes
from ONNX Runtime.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from qdialect.importer.onnx import OnnxImportError, import_onnx
from qdialect.interpreter import run_module
from qdialect.reference import onnxruntime_float as orf
from tests.onnx_helpers import differing, ort_optimized_graph

F32 = np.float32


def _session(data: bytes, disable_all: bool):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    if disable_all:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])


def _ort(data: bytes, feeds: dict, disable_all: bool = False) -> list[np.ndarray]:
    return [np.asarray(o) for o in _session(data, disable_all).run(None, feeds)]


def _one_node(op: str, shape, inits=(), domain: str = "", opset: int = 17, **attrs) -> bytes:
    node = helper.make_node(op, ["x"] + [t.name for t in inits], ["y"], domain=domain, **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(inits))
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=8).SerializeToString()


def _bits_differ(a, b) -> int:
    return int(np.count_nonzero(np.asarray(a, F32).view(np.int32) != np.asarray(b, F32).reshape(np.shape(a)).view(np.int32)))


# ----- ORT's float kernels, one node at a time ----------------------------------------------

def _erf_grid() -> np.ndarray:
    rng = np.random.default_rng(0)
    special = [0.0, -0.0, 0.921875, -0.921875, 3.725, 3.78, 3.925, -3.925, 1e-30, -1e-30, 88.0, -88.0, 1e30]
    return np.concatenate([np.linspace(-6, 6, 24001, dtype=F32), (rng.standard_normal(6000) * 2).astype(F32),
                           np.array(special, F32)])


@pytest.mark.parametrize("disable_all", [False, True], ids=["default", "disable_all"])
def test_mlas_erf_and_gelu_match_onnxruntime(disable_all):
    x = _erf_grid()
    (erf,) = _ort(_one_node("Erf", [x.size]), {"x": x}, disable_all)
    assert _bits_differ(orf.mlas_erf(x), erf) == 0
    (gelu,) = _ort(_one_node("Gelu", [x.size], domain="com.microsoft"), {"x": x}, disable_all)
    assert _bits_differ(orf.gelu(x), gelu) == 0


@pytest.mark.parametrize("n", [8, 12, 13, 16, 21, 33, 48, 100])
@pytest.mark.parametrize("with_bias", [True, False])
def test_layer_norm_matches_onnxruntime(n, with_bias):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal([24, n]) * 3 + 1).astype(F32)
    x[0] *= 1000  # large magnitudes: where the double-precision mean matters
    g, b = rng.standard_normal(n).astype(F32), rng.standard_normal(n).astype(F32)
    inits = [numpy_helper.from_array(g, "g")] + ([numpy_helper.from_array(b, "b")] if with_bias else [])
    model = _one_node("LayerNormalization", x.shape, inits, axis=-1, epsilon=1e-3)
    ours = orf.layer_norm(x, g, b if with_bias else None, -1, F32(1e-3))
    for disable_all in (False, True):
        (theirs,) = _ort(model, {"x": x}, disable_all)
        assert _bits_differ(ours, theirs) == 0


def test_reduce_mean_over_leading_axes_matches_onnxruntime():
    rng = np.random.default_rng(1)
    for shape, axes in (([1, 17, 32], [1]), ([5, 8], [0]), ([1, 49, 10], [1])):
        x = (rng.standard_normal(shape) * 3).astype(F32)
        (theirs,) = _ort(_one_node("ReduceMean", shape, axes=axes, keepdims=0), {"x": x})
        assert _bits_differ(orf.reduce_mean_rk_f32(x, axes, keepdims=False), theirs) == 0


# ----- encoder blocks quantized by ORT's quantizer -------------------------------------------

S, D, H, F = 8, 16, 2, 32


def _encoder(layer_norm: str, gelu: str) -> onnx.ModelProto:
    """A post-LN encoder block plus a classifier head: attention with two activations' MatMuls,
    Div by sqrt(head dim), Softmax, LayerNormalization (or its hand spelling with ReduceMean /
    Sub / Pow / Sqrt / Div), GELU (Erf spelling or com.microsoft Gelu), first-token Gather,
    mean over tokens, Tanh, Softmax."""
    rng = np.random.default_rng(0)
    nodes, inits = [], []

    def w(name, shape, scale=0.3):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(F32), name))
        return name

    def c(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def n(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def ln(x, p):
        g, b = w(p + "_g", [D], 0.2), w(p + "_b", [D], 0.1)
        if layer_norm == "op":
            return n("LayerNormalization", [x, g, b], p, axis=-1, epsilon=1e-3)
        m = n("ReduceMean", [x], p + "_mean", axes=[-1])
        d = n("Sub", [x, m], p + "_centred")
        v = n("ReduceMean", [n("Pow", [d, c(p + "_two", np.array(2.0, F32))], p + "_sq")], p + "_var", axes=[-1])
        s = n("Sqrt", [n("Add", [v, c(p + "_eps", np.array(1e-3, F32))], p + "_ve")], p + "_std")
        return n("Add", [n("Mul", [n("Div", [d, s], p + "_norm"), g], p + "_scaled"), b], p)

    def dense(x, p, k, m):
        return n("Add", [n("MatMul", [x, w(p + "_w", [k, m])], p + "_mm"), w(p + "_b", [m], 0.1)], p)

    shp = c("heads_shape", np.array([1, S, H, D // H], np.int64))
    q = n("Transpose", [n("Reshape", [dense("x", "q", D, D), shp], "qr")], "qh", perm=[0, 2, 1, 3])
    k = n("Transpose", [n("Reshape", [dense("x", "k", D, D), shp], "kr")], "kt", perm=[0, 2, 3, 1])
    v = n("Transpose", [n("Reshape", [dense("x", "v", D, D), shp], "vr")], "vh", perm=[0, 2, 1, 3])
    s = n("Div", [n("MatMul", [q, k], "scores"), c("sqrt_hd", np.array(math.sqrt(D // H), F32))], "scaled")
    ctx = n("MatMul", [n("Softmax", [s], "probs_attn", axis=-1), v], "ctx")
    ctx = n("Reshape", [n("Transpose", [ctx], "ctx_t", perm=[0, 2, 1, 3]), c("tokens_shape", np.array([1, S, D], np.int64))],
            "ctx_r")
    h = ln(n("Add", ["x", dense(ctx, "o", D, D)], "res1"), "ln1")
    f = dense(h, "fc1", D, F)
    if gelu == "erf":
        e = n("Erf", [n("Div", [f, c("sqrt2", np.array(math.sqrt(2.0), F32))], "gelu_div")], "gelu_erf")
        f = n("Mul", [n("Mul", [f, n("Add", [e, c("one", np.array(1.0, F32))], "gelu_add")], "gelu_mul"),
                      c("half", np.array(0.5, F32))], "gelu")
    else:
        f = n("Gelu", [f], "gelu", domain="com.microsoft")
    y = ln(n("Add", [h, dense(f, "fc2", F, D)], "res2"), "ln2")
    pooled = n("Add", [n("Gather", [y, c("first", np.array(0, np.int64))], "cls", axis=1),
                       n("ReduceMean", [y], "avg", axes=[1], keepdims=0)], "pooled")
    logits = dense(n("Tanh", [pooled], "pooler"), "head", D, 4)
    n("Softmax", [logits], "out", axis=-1)
    graph = helper.make_graph(nodes, "encoder", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, S, D])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4])], inits)
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid("com.microsoft", 1)] if gelu == "ms" else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


@functools.cache
def _quantized(layer_norm: str, gelu: str, variant: str) -> bytes:
    import logging
    import tempfile
    from pathlib import Path

    from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, \
        quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(1)
            self.data = iter([{"x": rng.standard_normal([1, S, D]).astype(F32)} for _ in range(8)])

        def get_next(self):
            return next(self.data, None)

    fmt, act = {"qdq_u8": (QuantFormat.QDQ, QuantType.QUInt8), "qdq_s8": (QuantFormat.QDQ, QuantType.QInt8),
                "qop_u8": (QuantFormat.QOperator, QuantType.QUInt8)}[variant]
    logging.getLogger().setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "float.onnx", Path(tmp) / "q.onnx"
        onnx.save(_encoder(layer_norm, gelu), src)
        quantize_static(str(src), str(dst), Reader(), quant_format=fmt, activation_type=act,
                        weight_type=QuantType.QInt8, calibrate_method=CalibrationMethod.MinMax)
        return dst.read_bytes()


# (quantize_static leaves com.microsoft Gelu unquantized: the MatMul after it reads a float activation)
ENCODERS = [(ln, "erf", v) for ln in ("op", "hand") for v in ("qdq_u8", "qdq_s8", "qop_u8")]


@pytest.mark.parametrize("profile", ["onnxruntime", "onnx"])
@pytest.mark.parametrize("spelling", ENCODERS, ids=["-".join(e) for e in ENCODERS])
def test_quantized_encoder_matches_onnxruntime(spelling, profile):
    data = _quantized(*spelling)
    module = import_onnx(data, profile=profile)
    total = 0
    for seed in range(3):
        x = (np.random.default_rng(seed).standard_normal([1, S, D]) * 1.5).astype(F32)
        ours = run_module(module, [x])
        theirs = _ort(data, {"x": x}, disable_all=profile == "onnx")
        total += sum(differing(ours, theirs))
    assert total == 0, f"{total} output elements differ from ONNX Runtime"


_COMPUTE = {"MatMul", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Erf", "Gelu", "LayerNormalization", "Softmax",
            "ReduceMean", "Tanh", "Relu"}  # (data movement keeps its name whether it moves integers or floats)


def _ort_float_nodes(data: bytes) -> set[str]:
    """Names of the compute nodes ORT's default session leaves in float (its optimized graph)."""
    return {n.name for n in ort_optimized_graph(data).node if n.op_type in _COMPUTE}


@pytest.mark.parametrize("spelling", [e for e in ENCODERS if e[2] != "qop_u8"], ids=lambda e: "-".join(e))
def test_float_ops_are_the_ones_onnxruntime_runs_in_float(spelling):
    """Our remarks name exactly the compute nodes ORT's default session runs in float."""
    from tests.onnx_helpers import REMARK

    data = _quantized(*spelling)
    remarks: list[str] = []
    import_onnx(data, remarks=remarks)
    ours = {m.group(1) for r in remarks if (m := REMARK.match(r)) and m.group(2) in _COMPUTE}
    assert ours == _ort_float_nodes(data)


# ----- refusals: one line naming the node ------------------------------------------------------

def _quantized_one_node(op: str, shape, inits=(), **attrs) -> bytes:
    """DequantizeLinear -> op -> QuantizeLinear on a uint8 input."""
    sc = numpy_helper.from_array(np.array(0.05, F32), "sc")
    zp = numpy_helper.from_array(np.array(128, np.uint8), "zp")
    nodes = [helper.make_node("DequantizeLinear", ["xq", "sc", "zp"], ["x"]),
             helper.make_node(op, ["x"] + [t.name for t in inits], ["y"], name="the_op", **attrs),
             helper.make_node("QuantizeLinear", ["y", "sc", "zp"], ["yq"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("xq", TensorProto.UINT8, list(shape))],
                              [helper.make_tensor_value_info("yq", TensorProto.UINT8, None)], [sc, zp, *inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


@pytest.mark.parametrize("case, message", [
    (("LayerNormalization", [2, 4], [numpy_helper.from_array(np.ones(4, F32), "g")]), "normalizing 4 elements"),
    (("Pow", [2, 4], [numpy_helper.from_array(np.array(0.5, F32), "e")]), "exponent 0.5"),
    (("Gather", [4, 4], [numpy_helper.from_array(np.array([0, 2], np.int64), "i")]), "consecutive"),
])
def test_unmodelled_cases_are_refused_by_name(case, message):
    op, shape, inits = case
    with pytest.raises(OnnxImportError) as e:
        import_onnx(_quantized_one_node(op, shape, inits))
    text = str(e.value)
    assert "\n" not in text and op in text and message in text


@pytest.mark.parametrize("spelling", [("op", "ms", "qdq_u8"), ("hand", "ms", "qdq_s8")], ids=["op-ms-qdq_u8", "hand-ms-qdq_s8"])
def test_float_matmul_after_unquantized_gelu(spelling):
    """quantize_static leaves com.microsoft Gelu in float: the MatMul after it reads a float
    activation.  ORT_DISABLE_ALL runs MLAS's float SGEMM (the `onnx` profile); the default session
    MatMulNBits (8-bit, accuracy level 4: `onnxruntime_nbits`, on AVX-512 VNNI).  Both bit-exact."""
    from qdialect.reference import onnxruntime_nbits as nbits

    data = _quantized(*spelling)
    for profile in ("onnx", "onnxruntime"):
        if profile == "onnxruntime" and nbits.nbits_recipe() != nbits.RECIPE:
            with pytest.raises(OnnxImportError, match="MatMul.*MatMulNBits"):
                import_onnx(data, profile=profile)
            continue
        module = import_onnx(data, profile=profile)
        total = 0
        for seed in range(3):
            x = (np.random.default_rng(seed).standard_normal([1, S, D]) * 1.5).astype(F32)
            total += sum(differing(run_module(module, [x]), _ort(data, {"x": x}, disable_all=profile == "onnx")))
        assert total == 0, profile


def test_float_matmul_takes_mlas_unpacked_sgemm():
    """A float activation times DequantizeLinear weights with ORT_DISABLE_ALL: MLAS does not prepack
    B (a node's output), so its unpacked SGEMM runs (the packed kernel differs at M = 1, K = 300)."""
    from qdialect.reference import onnxruntime_kernels as ort_kernels

    rng = np.random.default_rng(0)
    for m, k, n in ((1, 128, 64), (8, 300, 70)):
        wq = rng.integers(-127, 128, (k, n), dtype=np.int8)
        nodes = [helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["w"]), helper.make_node("MatMul", ["x", "w"], ["y"])]
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, m, k])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                                  [numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(np.array(0.01, F32), "s"),
                                   numpy_helper.from_array(np.array(0, np.int8), "z")])
        data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()
        x = rng.standard_normal([1, m, k]).astype(F32)
        (theirs,) = _ort(data, {"x": x}, disable_all=True)
        w = (wq.astype(F32) * F32(0.01)).astype(F32)
        assert _bits_differ(ort_kernels.mlas_matmul_f32(x, w, const_b=False), theirs) == 0


def test_small_quantized_ops_match_onnxruntime():
    """Div / Sqrt / Pow / Erf between DequantizeLinear and QuantizeLinear, every uint8 input."""
    x = np.arange(256, dtype=np.uint8).reshape(16, 16)
    cases = [("Sqrt", []), ("Erf", []), ("Pow", [numpy_helper.from_array(np.array(2.0, F32), "e")]),
             ("Pow", [numpy_helper.from_array(np.array(3.0, F32), "e")]),
             ("Div", [numpy_helper.from_array(np.array(1.4142135, F32), "d")]),
             ("LayerNormalization", [numpy_helper.from_array(np.linspace(-1, 1, 16, dtype=F32), "g")])]
    for op, inits in cases:
        data = _quantized_one_node(op, [16, 16], inits)
        for profile in ("onnxruntime", "onnx"):
            ours = run_module(import_onnx(data, profile=profile), [x])
            theirs = _ort(data, {"xq": x}, disable_all=profile == "onnx")
            assert sum(differing(ours, theirs)) == 0, f"{op} ({profile})"


# ----- the transformer zoo (models/transformers/onnx, tools/gen_transformer_zoo.py) ---------------

ZOO = Path(__file__).resolve().parents[2] / "models" / "transformers"
ZOO_MODELS = sorted((ZOO / "onnx").glob("*_q*.onnx"))


def _heldout(path) -> np.ndarray:
    base = path.stem.replace("_msgelu", "").replace("_handln", "").split("_qdq_")[0].split("_qop_")[0]
    return np.load(ZOO / f"{base}_heldout.npz")["input_0"]


@pytest.mark.parametrize("profile", ["onnxruntime", "onnx"])
@pytest.mark.parametrize("path", ZOO_MODELS, ids=[p.stem for p in ZOO_MODELS])
def test_zoo_encoder_matches_onnxruntime(path, profile):
    """Every held-out sample of every quantized zoo encoder, bit for bit (the msgelu models'
    default session runs MatMulNBits: modelled on AVX-512 VNNI, refused by name elsewhere)."""
    from qdialect.reference import onnxruntime_nbits as nbits

    data = path.read_bytes()
    if profile == "onnxruntime" and "_msgelu" in path.stem and nbits.nbits_recipe() != nbits.RECIPE:
        with pytest.raises(OnnxImportError, match="MatMulNBits"):
            import_onnx(data, profile=profile)
        return
    module = import_onnx(data, profile=profile)
    name = _session(data, False).get_inputs()[0].name
    total = 0
    for x in _heldout(path):
        total += sum(differing(run_module(module, [x]), _ort(data, {name: x}, disable_all=profile == "onnx")))
    assert total == 0, f"{total} output elements differ from ONNX Runtime"
