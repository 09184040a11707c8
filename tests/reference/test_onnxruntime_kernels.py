"""ONNX Runtime CPU kernels vs qdialect.reference.onnxruntime_kernels: zero differing elements.

The kernels follow this CPU (`detect_isa`: on AVX2 without VNNI, uint8 x int8
pairs saturate to int16; on VNNI they are exact).  Under `qemu-x86_64 -cpu
Haswell` set QDIALECT_ORT_ISA=avx2 (qemu passes the host's /proc/cpuinfo
through): every integer kernel test passes there; the float-kernel tests
(softmax, the NCHWc convolution, float GlobalAveragePool) model the AVX-512
kernels and differ on AVX2 (docs/numerics-findings.md)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from qdialect.qparams import QParams
from qdialect.reference import onnxruntime_kernels as R

ONNX_T = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8,
          np.dtype(np.uint16): TensorProto.UINT16, np.dtype(np.int16): TensorProto.INT16,
          np.dtype(np.int32): TensorProto.INT32, np.dtype(np.float32): TensorProto.FLOAT}
DT = {"u8": np.uint8, "i8": np.int8}
ISA = R.detect_isa()  # "vnni" on AVX-512 VNNI / AVX-VNNI CPUs; QDIALECT_ORT_ISA overrides


def one_node_model(node, inputs: dict, inits: dict, out_dtype, opset=19) -> onnx.ModelProto:
    """One-node model: `inputs` are fed, `inits` are constant initializers."""
    g_in = [helper.make_tensor_value_info(k, ONNX_T[np.asarray(v).dtype], np.shape(v)) for k, v in inputs.items()]
    g_init = [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()]
    out = helper.make_tensor_value_info(node.output[0], ONNX_T[np.dtype(out_dtype)], None)
    graph = helper.make_graph([node], "g", g_in, [out], g_init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 9
    return model


def run(node, inputs: dict, inits: dict, out_dtype, opset=19):
    model = one_node_model(node, inputs, inits, out_dtype, opset)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {k: np.asarray(v) for k, v in inputs.items()})[0]


def f32(v):
    return np.asarray(v, np.float32)


def ndiff(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    if a.dtype.kind == "f":
        return int(np.sum(~((a == b) | (np.isnan(a) & np.isnan(b)))))
    return int(np.sum(a != b))


def rand(rng, dt, shape, lo=None, hi=None):
    info = np.iinfo(dt)
    return rng.integers(info.min if lo is None else lo, (info.max if hi is None else hi) + 1,
                        size=shape).astype(dt)


def qp(scale, zp, st, axis=None):
    return QParams.make(np.float32(scale), zp, storage=st, axis=axis)


# --------------------------------------------------------------------------- conv


def _qconv(x, w, b, xq, wq, yq, strides, pads, dil, groups):
    """x NHWC, w OHWI -> ORT NCHW/OIHW; returns NHWC result."""
    y = run(*_qconv_node(x, w, b, xq, wq, yq, strides, pads, dil, groups), yq.dtype)
    return np.transpose(y, (0, 2, 3, 1))


def _qconv_node(x, w, b, xq, wq, yq, strides, pads, dil, groups):
    """The QLinearConv node, its NCHW feed and its initializers."""
    (pt, pb), (pl, pr) = pads
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"] + (["b"] if b is not None else []),
                            ["y"], strides=list(strides), pads=[pt, pl, pb, pr], dilations=list(dil), group=groups)
    inits = dict(xs=f32(xq.scale), xz=np.asarray(xq.zero_point, xq.dtype), w=np.transpose(w, (0, 3, 1, 2)),
                 ws=f32(wq.scale), wz=np.asarray(wq.zero_point, wq.dtype), ys=f32(yq.scale),
                 yz=np.asarray(yq.zero_point, yq.dtype))
    if b is not None:
        inits["b"] = np.asarray(b, np.int32)
    return node, {"x": np.transpose(x, (0, 3, 1, 2))}, inits


CONV_CASES = [
    # (act, wt, C, O, groups, k, stride, pads, dil, per_channel, wzp)
    ("u8", "i8", 8, 16, 1, 3, 1, ((1, 1), (1, 1)), 1, True, 0),     # ConvSym path
    ("u8", "i8", 6, 6, 1, 3, 2, ((1, 0), (0, 1)), 1, False, 0),     # gemm path, odd K
    ("u8", "i8", 16, 16, 16, 3, 1, ((1, 1), (1, 1)), 1, True, 0),   # depthwise sym
    ("u8", "i8", 6, 6, 6, 3, 1, ((1, 1), (1, 1)), 2, True, 0),      # depthwise non-sym
    ("u8", "i8", 8, 12, 2, 3, 1, ((0, 1), (1, 0)), 1, True, 0),     # grouped
    ("u8", "i8", 4, 8, 4, 3, 1, ((1, 1), (1, 1)), 1, False, 0),     # channel multiplier 2
    ("u8", "u8", 8, 8, 1, 3, 1, ((1, 1), (1, 1)), 1, False, 131),   # u8 weights, nonzero zp
    ("u8", "u8", 6, 6, 6, 3, 1, ((1, 1), (1, 1)), 1, False, 17),    # u8 depthwise
    ("u8", "i8", 8, 16, 1, 1, 1, ((0, 0), (0, 0)), 1, True, 5),     # s8 weights nonzero zp
    ("i8", "i8", 8, 16, 1, 3, 1, ((1, 1), (1, 1)), 1, True, 0),
    ("i8", "i8", 16, 16, 16, 3, 2, ((1, 1), (1, 1)), 1, True, 0),
    ("i8", "i8", 8, 12, 2, 3, 1, ((1, 1), (1, 1)), 1, False, 0),
    ("i8", "i8", 5, 7, 1, 2, 1, ((0, 1), (0, 1)), 1, False, 0),
]


def _conv_case(case):
    """(x, w, b, xq, wq, yq, strides, pads, dilations, groups) of a CONV_CASES row."""
    act, wt, C, O, groups, k, stride, pads, dil, per_ch, wzp = case
    rng = np.random.default_rng(hash(case) % 2**32)
    x = rand(rng, DT[act], (2, 9, 9, C))
    w = rand(rng, DT[wt], (O, k, k, C // groups))
    b = rng.integers(-5000, 5000, size=O).astype(np.int32)
    xq = qp(0.02, 128 if act == "u8" else 3, act)
    ws = rng.uniform(0.002, 0.02, size=O).astype(np.float32) if per_ch else np.float32(0.01)
    wq = QParams.make(ws, wzp, storage=wt, axis=0 if per_ch else None)
    # out scale near the accumulator spread so that many values land on ties / bounds
    yq = qp(0.05 * k, 120 if act == "u8" else -7, act)
    return x, w, b, xq, wq, yq, (stride, stride), pads, (dil, dil), groups


def _conv_reference(x, w, b, xq, wq, yq, strides, pads, dil, groups, isa):
    return R.qlinear_conv(x, w, b, x_q=xq, w_q=wq, out_q=yq, strides=strides, padding=pads,
                          dilations=dil, groups=groups, isa=isa)


@pytest.mark.parametrize("case", CONV_CASES, ids=[str(i) for i in range(len(CONV_CASES))])
def test_qlinear_conv(case):
    args = _conv_case(case)
    assert ndiff(_qconv(*args), _conv_reference(*args, ISA)) == 0


@pytest.mark.skipif(shutil.which("qemu-x86_64") is None,
                    reason="qemu-x86_64 is not installed (Debian package qemu-user): no CPU without VNNI")
def test_qlinear_conv_without_vnni(tmp_path):
    """Every CONV_CASES row on ORT under `qemu-x86_64 -cpu Haswell` (AVX2, no VNNI) against
    isa="avx2": random bytes saturate many pairs, so the K order and the pairing are checked
    on every group layout, odd K, zero points and padding above."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    import ort_emulated

    jobs, expected = [], []
    for i, case in enumerate(CONV_CASES):
        args = _conv_case(case)
        node, feeds, inits = _qconv_node(*args)
        path = tmp_path / f"conv{i}.onnx"
        onnx.save(one_node_model(node, feeds, inits, args[5].dtype), str(path))
        jobs.append((str(path), False, [feeds["x"]]))
        expected.append((_conv_reference(*args, "avx2"), _conv_reference(*args, "vnni")))
    saturated = 0
    for ((y,), (sat, exact)) in zip(ort_emulated.run_emulated(jobs), expected):
        assert ndiff(np.transpose(y, (0, 2, 3, 1)), sat) == 0
        saturated += ndiff(sat, exact)
    assert saturated > 0


def test_qlinear_conv_saturation_u8s8():
    """255-valued activations with +-127 weights: vpmaddubsw pair sums saturate on AVX2."""
    rng = np.random.default_rng(1)
    C, O = 16, 16
    x = np.full((1, 5, 5, C), 255, np.uint8)
    x[0, 2] = rand(rng, np.uint8, (5, C))
    w = np.where(rng.random((O, 3, 3, C)) < 0.8, 127, -128).astype(np.int8)
    xq, wq, yq = qp(0.01, 0, "u8"), qp(0.0001, 0, "i8"), qp(0.5, 0, "u8")
    y = _qconv(x, w, None, xq, wq, yq, (1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    r_sat = R.qlinear_conv(x, w, None, x_q=xq, w_q=wq, out_q=yq, padding=((1, 1), (1, 1)))
    r_exact = R.qlinear_conv(x, w, None, x_q=xq, w_q=wq, out_q=yq, padding=((1, 1), (1, 1)), isa="vnni")
    assert ndiff(r_sat, r_exact) > 0  # the model predicts saturation for AVX2
    assert ndiff(y, r_sat if ISA == "avx2" else r_exact) == 0


# --------------------------------------------------------------------------- matmul / gemm


@pytest.mark.parametrize("act,wt,K,const_b", [("u8", "i8", 37, True), ("u8", "i8", 64, False),
                                             ("u8", "u8", 33, True), ("i8", "i8", 40, True),
                                             ("i8", "i8", 31, False)])
def test_qlinear_matmul(act, wt, K, const_b):
    rng = np.random.default_rng(K)
    a = rand(rng, DT[act], (2, 5, K))
    b = rand(rng, DT[wt], (K, 11))
    aq, bq = qp(0.03, 100 if act == "u8" else -2, act), qp(0.004, 0 if wt == "i8" else 120, wt)
    yq = qp(0.4, 128 if act == "u8" else 0, act)
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    inits = {"as": f32(aq.scale), "az": np.asarray(aq.zero_point, aq.dtype), "bs": f32(bq.scale),
             "bz": np.asarray(bq.zero_point, bq.dtype), "ys": f32(yq.scale), "yz": np.asarray(yq.zero_point, yq.dtype)}
    feeds = {"a": a}
    (inits if const_b else feeds)["b"] = b
    y = run(node, feeds, inits, yq.dtype)
    assert ndiff(y, R.qlinear_matmul(a, b, a_q=aq, b_q=bq, out_q=yq, isa=ISA)) == 0
    # MatMulInteger on the same operands
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    inits2 = {"az": inits["az"], "bz": inits["bz"]}
    (inits2 if const_b else feeds)["b"] = b
    y = run(node, feeds, inits2, np.int32)
    assert ndiff(y, R.matmul_integer(a, b, a_q=aq, b_q=bq, isa=ISA)) == 0


def test_matmul_saturation_u8s8():
    a = np.full((3, 8), 255, np.uint8)
    b = np.full((8, 4), 127, np.int8)
    b[:, 1] = -128
    aq, bq = qp(1.0, 0, "u8"), qp(1.0, 0, "i8")
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    y = run(node, {"a": a}, {"b": b, "az": np.uint8(0), "bz": np.int8(0)}, np.int32)
    sat = R.matmul_integer(a, b, a_q=aq, b_q=bq, isa="avx2")
    assert sat[0, 0] == 4 * 32767 and sat[0, 1] == 4 * -32768
    assert ndiff(y, R.matmul_integer(a, b, a_q=aq, b_q=bq, isa=ISA)) == 0


@pytest.mark.parametrize("act,wt,alpha,with_y", [("u8", "i8", 1.0, True), ("u8", "u8", 0.7, True),
                                                 ("i8", "i8", 1.3, True), ("u8", "i8", 1.0, False)])
def test_qgemm(act, wt, alpha, with_y):
    rng = np.random.default_rng(7)
    K, N = 45, 10
    a = rand(rng, DT[act], (6, K))
    w = rand(rng, DT[wt], (N, K))
    c = rng.integers(-20000, 20000, size=N).astype(np.int32)
    aq = qp(0.02, 90 if act == "u8" else 4, act)
    wq = QParams.make(rng.uniform(0.001, 0.01, N).astype(np.float32), 0 if wt == "i8" else 128, storage=wt, axis=0)
    yq = qp(0.3, 128 if act == "u8" else -3, act) if with_y else None
    ins = ["a", "as", "az", "w", "ws", "wz", "c"] + (["ys", "yz"] if with_y else [])
    node = helper.make_node("QGemm", ins, ["y"], domain="com.microsoft", transB=1, alpha=alpha)
    inits = {"as": f32(aq.scale), "az": np.asarray(aq.zero_point, aq.dtype), "w": w, "ws": f32(wq.scale),
             "wz": np.asarray(wq.zero_point, wq.dtype), "c": c}
    if with_y:
        inits.update(ys=f32(yq.scale), yz=np.asarray(yq.zero_point, yq.dtype))
    y = run(node, {"a": a}, inits, yq.dtype if with_y else np.float32)
    assert ndiff(y, R.qgemm(a, w, c, a_q=aq, w_q=wq, out_q=yq, alpha=alpha, isa=ISA)) == 0


def test_conv_integer():
    rng = np.random.default_rng(3)
    x = rand(rng, np.uint8, (1, 7, 7, 6))
    w = rand(rng, np.uint8, (5, 3, 3, 6))
    xq, wq = qp(1.0, 77, "u8"), qp(1.0, 140, "u8")
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 0, 0, 1])
    y = run(node, {"x": np.transpose(x, (0, 3, 1, 2))},
            {"w": np.transpose(w, (0, 3, 1, 2)), "xz": np.uint8(77), "wz": np.uint8(140)}, np.int32)
    r = R.conv_integer(x, w, x_q=xq, w_q=wq, padding=((1, 0), (0, 1)), isa=ISA)
    assert ndiff(np.transpose(y, (0, 2, 3, 1)), r) == 0


# --------------------------------------------------------------------------- elementwise


def _binary(op, st, a, b, aq, bq, yq):
    node = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], domain="com.microsoft")
    inits = {"as": f32(aq.scale), "az": np.asarray(aq.zero_point, aq.dtype), "bs": f32(bq.scale),
             "bz": np.asarray(bq.zero_point, bq.dtype), "ys": f32(yq.scale), "yz": np.asarray(yq.zero_point, yq.dtype)}
    return run(node, {"a": a, "b": b}, inits, yq.dtype)


@pytest.mark.parametrize("st", ["u8", "i8"])
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_binary(op, st):
    """Random inputs, tie-rich scale ratios, every broadcast pattern ORT's
    BroadcastLooper distinguishes (span on span, scalar b, scalar a -- which
    swaps the operands inside QLinearAdd --, per-row scalars) and lengths with
    a tail after the 32-wide body (771 = 24 * 32 + 3)."""
    rng = np.random.default_rng(11)
    dt = DT[st]
    f = R.qlinear_add if op == "QLinearAdd" else R.qlinear_mul
    shapes = [((3, 257), (3, 257)), ((3, 257), (1, 1)), ((1, 1), (3, 257)), ((3, 257), (3, 1)),
              ((3, 1), (3, 257)), ((3, 1), (1, 257)), ((2, 3, 33), (3, 1)), ((5, 64), (64,)),
              ((771,), (771,)), ((7,), (1,)), ((1,), (1,))]
    for scales in [(0.05, 0.05, 0.05), (0.02, 0.07, 0.1), (0.013, 0.021, 0.0017), (0.5, 0.25, 0.125),
                   (0.1, 0.1, 0.2), (0.03, 0.03, 0.06), (0.25, 0.75, 0.5)]:
        for zps in ([(5, -9, 0), (0, 0, 0), (-3, 7, 11)] if st == "i8" else [(130, 100, 128), (128, 128, 128), (1, 250, 77)]):
            aq, bq, yq = (qp(s, z, st) for s, z in zip(scales, zps))
            for sa, sb in shapes:
                a, b = rand(rng, dt, sa), rand(rng, dt, sb)
                y = _binary(op, st, a, b, aq, bq, yq)
                r = f(a, b, a_q=aq, b_q=bq, out_q=yq)
                assert r.shape == y.shape and r.dtype == y.dtype
                assert ndiff(y, r) == 0, (scales, zps, sa, sb)


@pytest.mark.parametrize("st", ["u8", "i8"])
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_binary_exhaustive(op, st):
    """All 65536 (a, b) pairs; the last scales overflow cvtps2dq (INT32_MIN ->
    the storage minimum, not the maximum)."""
    dt = DT[st]
    info = np.iinfo(dt)
    g = np.arange(info.min, info.max + 1).astype(dt)
    A, B = np.meshgrid(g, g, indexing="ij")
    f = R.qlinear_add if op == "QLinearAdd" else R.qlinear_mul
    zps = (3, 7, -11) if st == "i8" else (1, 250, 77)
    for scales in [(0.5, 0.25, 0.125), (0.1, 0.1, 0.2), (0.02, 0.07, 0.1), (1.0, 1.0, 1e-7)]:
        aq, bq, yq = (qp(s, z, st) for s, z in zip(scales, zps))
        assert ndiff(_binary(op, st, A, B, aq, bq, yq), f(A, B, a_q=aq, b_q=bq, out_q=yq)) == 0, scales
        for v in (info.min, 0, info.max):  # scalar a (operands swapped in QLinearAdd), scalar b
            s = np.array([[v]], dt)
            assert ndiff(_binary(op, st, s, A, aq, bq, yq), f(s, A, a_q=aq, b_q=bq, out_q=yq)) == 0, (scales, v)
            assert ndiff(_binary(op, st, A, s, aq, bq, yq), f(A, s, a_q=aq, b_q=bq, out_q=yq)) == 0, (scales, v)



# (scales, zero points, scalar a) where QLinearAdd's operand swap for a scalar
# input 0 changes the result (without the swap the reference differs from ORT
# on 1 / 7 / 22 / 1 / 1 / 1 of the 256 outputs).
_SWAP_CASES = {
    "u8": [((0.07, 0.125, 0.07), (246, 36, 33), 255), ((0.75, 0.03, 0.2), (223, 162, 85), 255),
           ((2.0, 0.125, 0.75), (231, 226, 90), 255)],
    "i8": [((0.0625, 0.05, 0.5), (-32, -83, 31), -128), ((0.05, 0.013, 0.05), (34, -55, -46), 127),
           ((0.5, 0.013, 0.2), (82, -89, -34), 127)],
}


@pytest.mark.parametrize("st", ["u8", "i8"])
def test_qlinear_add_scalar_a_swap(st):
    dt = DT[st]
    info = np.iinfo(dt)
    g = np.arange(info.min, info.max + 1).astype(dt).reshape(1, -1)
    for scales, zps, v in _SWAP_CASES[st]:
        aq, bq, yq = (qp(s, z, st) for s, z in zip(scales, zps))
        s = np.array([[v]], dt)
        y = _binary("QLinearAdd", st, s, g, aq, bq, yq)
        assert ndiff(y, R.qlinear_add(s, g, a_q=aq, b_q=bq, out_q=yq)) == 0, (scales, zps, v)
        # the same numbers as b + a with the roles exchanged (scalar b path)
        assert ndiff(y, R.qlinear_add(g, s, a_q=bq, b_q=aq, out_q=yq)) == 0, (scales, zps, v)

# --------------------------------------------------------------------------- tables


@pytest.mark.parametrize("st", ["u8", "i8"])
def test_sigmoid_leaky_relu(st):
    dt = DT[st]
    x = np.arange(np.iinfo(dt).min, np.iinfo(dt).max + 1).astype(dt).reshape(1, 256)
    for xs, xz, ys, yz in [(0.05, 3, 1 / 256, 0), (0.1, 0, 1 / 255, 0), (0.0173, -20, 0.004, 7)]:
        xz = xz + (128 if st == "u8" else 0)
        yz = yz if st == "u8" else yz - 128
        xq, yq = qp(xs, xz, st), qp(ys, yz, st)
        node = helper.make_node("QLinearSigmoid", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft")
        inits = {"xs": f32(xs), "xz": np.asarray(xz, dt), "ys": f32(ys), "yz": np.asarray(yz, dt)}
        y = run(node, {"x": x}, inits, dt)
        assert ndiff(y, R.qlinear_sigmoid(x, x_q=xq, out_q=yq)) == 0
        for alpha in (0.1, 0.01, 0.3333):
            node = helper.make_node("QLinearLeakyRelu", ["x", "xs", "xz", "ys", "yz"], ["y"],
                                    domain="com.microsoft", alpha=alpha)
            y = run(node, {"x": x}, {**inits, "ys": f32(xs * 0.9)}, dt)
            r = R.qlinear_leaky_relu(x, x_q=xq, out_q=qp(np.float32(xs * 0.9), yz, st), alpha=alpha)
            assert ndiff(y, r) == 0


# --------------------------------------------------------------------------- pools, concat, softmax


@pytest.mark.parametrize("st", ["u8", "i8"])
@pytest.mark.parametrize("cip", [0, 1])
def test_avg_pool(st, cip):
    rng = np.random.default_rng(5)
    dt = DT[st]
    x = rand(rng, dt, (2, 9, 8, 5))
    xq, yq = qp(0.1, 3, st), qp(0.07, 1, st)
    for k, s, pads in [(3, 1, ((1, 1), (1, 1))), (2, 2, ((0, 1), (1, 0))), (3, 2, ((0, 0), (0, 0)))]:
        (pt, pb), (pl, pr) = pads
        node = helper.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft",
                                kernel_shape=[k, k], strides=[s, s], pads=[pt, pl, pb, pr], count_include_pad=cip,
                                channels_last=1)
        y = run(node, {"x": x}, {"xs": f32(0.1), "xz": np.asarray(3, dt), "ys": f32(0.07), "yz": np.asarray(1, dt)}, dt)
        r = R.qlinear_avg_pool(x, x_q=xq, out_q=yq, kernel=k, strides=s, padding=pads, count_include_pad=cip)
        assert ndiff(y, r) == 0


@pytest.mark.parametrize("st", ["u8", "i8"])
def test_global_avg_pool(st):
    rng = np.random.default_rng(6)
    dt = DT[st]
    for shape, xs, ys in [((2, 7, 7, 24), 0.1, 0.1), ((1, 3, 5, 9), 0.02, 0.013), ((1, 4, 4, 3), 0.25, 0.5)]:
        x = rand(rng, dt, shape)
        xq, yq = qp(xs, 4, st), qp(ys, -2 if st == "i8" else 2, st)
        node = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"],
                                domain="com.microsoft", channels_last=1)
        y = run(node, {"x": x}, {"xs": f32(xs), "xz": np.asarray(4, dt), "ys": f32(ys),
                                 "yz": np.asarray(yq.zero_point, dt)}, dt)
        assert ndiff(y, R.qlinear_global_avg_pool(x, x_q=xq, out_q=yq)) == 0


@pytest.mark.parametrize("st", ["u8", "i8"])
def test_concat(st):
    rng = np.random.default_rng(8)
    dt = DT[st]
    xs = [rand(rng, dt, (2, 3, 256)), rand(rng, dt, (2, 5, 256)), rand(rng, dt, (2, 1, 256))]
    qs = [qp(0.1, 3, st), qp(0.05, -4 if st == "i8" else 4, st), qp(0.07, 1, st)]
    yq = qp(0.07, 1, st)
    ins, inits = ["ys", "yz"], {"ys": f32(0.07), "yz": np.asarray(1, dt)}
    feeds = {}
    for i, (x, q) in enumerate(zip(xs, qs)):
        ins += [f"x{i}", f"s{i}", f"z{i}"]
        feeds[f"x{i}"] = x
        inits[f"s{i}"], inits[f"z{i}"] = f32(q.scale), np.asarray(q.zero_point, dt)
    node = helper.make_node("QLinearConcat", ins, ["y"], domain="com.microsoft", axis=1)
    y = run(node, feeds, inits, dt)
    assert ndiff(y, R.qlinear_concat(xs, x_qs=qs, out_q=yq, axis=1)) == 0


@pytest.mark.parametrize("st", ["u8", "i8"])
def test_softmax(st):
    rng = np.random.default_rng(9)
    dt = DT[st]
    for shape, axis, xs in [((4, 10), -1, 0.1), ((2, 7, 3), 1, 0.05), ((3, 1000), -1, 0.2), ((2, 5), -1, 0.5)]:
        x = rand(rng, dt, shape)
        x.reshape(-1, shape[-1])[0, :] = np.iinfo(dt).min  # a row with one max
        x.reshape(-1, shape[-1])[0, 0] = np.iinfo(dt).max
        yz = 0 if st == "u8" else -128
        xq, yq = qp(xs, 0, st), qp(1 / 256, yz, st)
        node = helper.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft",
                                axis=axis, opset=13)
        y = run(node, {"x": x}, {"xs": f32(xs), "xz": np.asarray(0, dt), "ys": f32(1 / 256),
                                 "yz": np.asarray(yz, dt)}, dt)
        assert ndiff(y, R.qlinear_softmax(x, x_q=xq, out_q=yq, axis=axis)) == 0


# --------------------------------------------------------------------------- quantize / dequantize


def _edge_floats(rng, scale):
    ties = (np.arange(-70000, 70000, dtype=np.float64) + 0.5) * scale
    return np.concatenate([rng.normal(0, 300 * scale, 20000), ties, np.array([np.inf, -np.inf, np.nan, 0.0, -0.0,
                                                                              3e38, -3e38])]).astype(np.float32)


@pytest.mark.parametrize("st", ["u8", "i8", "u16", "i16"])
def test_quantize_dequantize(st):
    rng = np.random.default_rng(10)
    dt = {"u8": np.uint8, "i8": np.int8, "u16": np.uint16, "i16": np.int16}[st]
    for scale, zp in [(0.1, 0), (0.0173, 3), (3.0, 1), (1 / 3, -1)]:
        if st.startswith("u"):
            zp = abs(zp) + 7
        x = _edge_floats(rng, scale)
        q = qp(scale, zp, st)
        node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])
        y = run(node, {"x": x}, {"s": f32(scale), "z": np.asarray(zp, dt)}, dt, opset=21)
        assert ndiff(y, R.quantize_linear(x, out_q=q)) == 0
        node = helper.make_node("DequantizeLinear", ["y", "s", "z"], ["x"])
        d = run(node, {"y": y}, {"s": f32(scale), "z": np.asarray(zp, dt)}, np.float32, opset=21)
        assert ndiff(d, R.dequantize_linear(y, x_q=q)) == 0


def _session(nodes, x_shape, inits: dict, opset=17, disable_all=False, threads=1):
    g_init = [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], g_init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = threads
    if disable_all:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


_POOL_CASES = [((1, 8, 6, 6), (3, 3), (1, 1), (1, 1, 1, 1)), ((2, 5, 9, 11), (3, 3), (2, 2), (1, 1, 1, 1)),
               ((1, 4, 13, 7), (5, 3), (1, 2), (2, 1, 2, 1)), ((1, 3, 12, 12), (3, 3), (3, 3), (1, 1, 1, 1)),
               ((1, 3, 7, 17), (4, 5), (1, 1), (0, 2, 3, 1)), ((1, 3, 7, 5), (7, 5), (1, 1), (0, 0, 0, 0)),
               ((1, 2, 40, 40), (33, 3), (1, 1), (0, 0, 0, 0))]


@pytest.mark.parametrize("cip", [0, 1])
@pytest.mark.parametrize("case", _POOL_CASES)
def test_mlas_float_avg_pool(case, cip):
    """ORT's float AveragePool (opset 17, MlasPool vector / generic / global kernels), bitwise."""
    shape, k, s, p = case
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=list(k), strides=list(s), pads=list(p),
                            count_include_pad=cip)
    sess = _session([node], shape, {}, disable_all=True)
    rng = np.random.default_rng(7)
    for scale in (1.0, 100.0, 1e-3):
        x = (rng.standard_normal(shape) * scale).astype(np.float32)
        y = sess.run(None, {"x": x})[0]
        r = R.mlas_avg_pool_f32(x.transpose(0, 2, 3, 1), kernel=k, strides=s,
                                padding=((p[0], p[2]), (p[1], p[3])), count_include_pad=cip).transpose(0, 3, 1, 2)
        assert np.array_equal(y.view(np.int32), r.view(np.int32))


@pytest.mark.parametrize("shape", [(1, 8, 6, 6), (2, 16, 7, 7), (1, 4, 3, 1), (1, 8, 14, 14), (1, 3, 1, 7)])
def test_mlas_float_global_avg_pool(shape):
    sess = _session([helper.make_node("GlobalAveragePool", ["x"], ["y"])], shape, {}, disable_all=True)
    rng = np.random.default_rng(8)
    for scale in (1.0, 100.0, 1e-3):
        x = (rng.standard_normal(shape) * scale).astype(np.float32)
        y = sess.run(None, {"x": x})[0]
        r = R.mlas_global_avg_f32(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
        assert np.array_equal(y.view(np.int32), r.view(np.int32))


def test_qdq_s8_avg_pool_runs_as_u8():
    """x86-64 default session: QDQS8ToU8Transformer turns the int8 Q/DQ pairs into uint8 (zp + 128)
    before QLinearAveragePool is fused; the kernel's `+ y_zp` in float then differs from int8's."""
    xq = qp(0.02916006, -6, "i8")
    zp, sc = np.array(-6, np.int8), np.array(0.02916006, np.float32)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             helper.make_node("AveragePool", ["d"], ["p"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["p", "s", "z"], ["q2"]),
             helper.make_node("DequantizeLinear", ["q2", "s", "z"], ["y"])]
    sess = _session(nodes, (1, 8, 6, 6), {"s": sc, "z": zp})
    differs = {False: 0, True: 0}
    for seed in range(20):
        x = np.random.default_rng(seed).standard_normal((1, 8, 6, 6)).astype(np.float32)
        y = sess.run(None, {"x": x})[0]
        q = R.quantize_linear(x, out_q=xq).transpose(0, 2, 3, 1)
        for flag in differs:
            r = R.qlinear_avg_pool(q, x_q=xq, out_q=xq, kernel=(3, 3), padding=((1, 1), (1, 1)), s8_to_u8=flag)
            differs[flag] += int((R.dequantize_linear(r.transpose(0, 3, 1, 2), x_q=xq) != y).sum())
    assert differs[True] == 0
    assert differs[False] > 0  # the int8 kernel's rounding is observably different


# --------------------------------------------------------------------------- float kernels (the "onnx" profile)


def _bits_equal(a, b):
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    assert a.shape == b.shape, (a.shape, b.shape)
    return int(np.sum(a.view(np.int32) != b.view(np.int32)))


def _float_inputs(rng, limit):
    """Random values at several scales, a dense sweep across [-limit, limit] and the clamp limits' neighbours."""
    lim = np.float32(limit)
    near = np.concatenate([lim - np.arange(300, dtype=np.float32) * np.float32(3e-6) * lim,
                           lim + np.arange(300, dtype=np.float32) * np.float32(3e-6) * lim])
    edge = np.array([0.0, -0.0, 1e-30, -1e-45, 1.0, 1e30, -1e30, 3e38, -3e38, np.inf, -np.inf], np.float32)
    parts = [rng.standard_normal(20000) * s for s in (0.01, 1.0, 4.0, 30.0)]
    parts += [np.linspace(-1.2 * limit, 1.2 * limit, 40001), near, -near, edge]
    return np.concatenate(parts).astype(np.float32)


@pytest.mark.parametrize("disable_all", [True, False])
def test_mlas_float_tanh(disable_all):
    x = _float_inputs(np.random.default_rng(20), 9.0)
    y = _session([helper.make_node("Tanh", ["x"], ["y"])], x.shape, {}, disable_all=disable_all).run(None, {"x": x})[0]
    assert _bits_equal(y, R.mlas_tanh(x)) == 0


@pytest.mark.parametrize("disable_all", [True, False])
def test_mlas_float_sigmoid(disable_all):
    rng = np.random.default_rng(21)
    x = np.concatenate([(rng.standard_normal(600) * 6), np.linspace(-20, 20, 801),
                        [0.0, -0.0, 18.0, -18.0, 17.99999, -18.00001, 1e30, -1e30]]).astype(np.float32)
    y = _session([helper.make_node("Sigmoid", ["x"], ["y"])], x.shape, {}, disable_all=disable_all).run(None, {"x": x})[0]
    assert _bits_equal(y, R.mlas_logistic(x)) == 0


_SOFTMAX_CASES = [((4, 1000), -1), ((3, 7), -1), ((2, 5, 17), -1), ((2, 48), 1), ((5, 49), -1),
                  ((1, 10, 8, 8), 1), ((3, 33, 5), 1), ((6, 1), -1), ((2, 100, 3), -1)]


@pytest.mark.parametrize("disable_all", [True, False])
def test_mlas_float_softmax(disable_all):
    rng = np.random.default_rng(22)
    for shape, axis in _SOFTMAX_CASES:
        sess = _session([helper.make_node("Softmax", ["x"], ["y"], axis=axis)], shape, {}, opset=13,
                        disable_all=disable_all)
        for scale in (0.01, 1.0, 10.0, 100.0, 1000.0):
            x = (rng.standard_normal(shape) * scale).astype(np.float32)
            assert _bits_equal(sess.run(None, {"x": x})[0], R.mlas_softmax_f32(x, axis)) == 0, (shape, axis, scale)
    # exp's clamp (-103.97) and subnormal results, zeros, huge values
    rows = [np.concatenate([[0.0], -rng.uniform(80, 110, 36)]) for _ in range(200)]
    rows += [np.zeros(37), np.full(37, 3e38), np.linspace(-200, 0, 37), [1e30] + [-1e30] * 36,
             [-0.0] * 18 + [0.0] * 19]
    x = np.asarray(rows, np.float32)
    sess = _session([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], x.shape, {}, opset=13,
                    disable_all=disable_all)
    with np.errstate(all="ignore"):
        assert _bits_equal(sess.run(None, {"x": x})[0], R.mlas_softmax_f32(x)) == 0


_REDUCE_CASES = [((1, 8, 6, 6), [2, 3]), ((2, 16, 7, 7), [2, 3]), ((1, 4, 3, 1), [2, 3]), ((1, 8, 14, 14), [2, 3]),
                 ((1, 3, 1, 7), [2, 3]), ((2, 5, 3, 3), [2, 3]), ((1, 1, 9, 9), [2, 3]), ((1, 32, 1, 1), [2, 3]),
                 ((4, 37), [-1]), ((3, 5, 6), [-1]), ((7, 1000), [1])]


@pytest.mark.parametrize("disable_all", [True, False])
def test_float_reduce_mean(disable_all):
    """ReduceMean (KR fast path: Eigen sum per row, then / n); not GlobalAveragePool's order."""
    rng = np.random.default_rng(23)
    differs_from_gap = 0
    for shape, axes in _REDUCE_CASES:
        sess = _session([helper.make_node("ReduceMean", ["x"], ["y"], axes=axes, keepdims=1)], shape, {},
                        disable_all=disable_all)
        for scale in (1.0, 100.0, 1e-3):
            x = (rng.standard_normal(shape) * scale + scale).astype(np.float32)
            y = sess.run(None, {"x": x})[0]
            assert _bits_equal(y, R.reduce_mean_f32(x, axes, True, base_offset=(x.ctypes.data % 16) // 4)) == 0
            if len(shape) == 4:
                differs_from_gap += _bits_equal(y, R.mlas_global_avg_f32(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2))
    assert differs_from_gap > 0
    # the summation order follows the buffer's 16-byte alignment (ORT reads a fed numpy array in place)
    shape = (2, 5, 6, 7)
    sess = _session([helper.make_node("ReduceMean", ["x"], ["y"], axes=[2, 3], keepdims=1)], shape, {},
                    disable_all=disable_all)
    buf = (rng.standard_normal(4 + 420) * 100).astype(np.float32)
    for off in range(4):
        x = buf[off:off + 420].reshape(shape)
        y = sess.run(None, {"x": x})[0]
        assert _bits_equal(y, R.reduce_mean_f32(x, [2, 3], True, base_offset=(x.ctypes.data % 16) // 4)) == 0


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
def test_float_binary(op):
    """Float Add / Sub / Mul / Div: one IEEE float32 operation per element, every broadcast pattern."""
    rng = np.random.default_rng(24)
    fn = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[op]
    for sa, sb in [((300, 37), (300, 37)), ((300, 37), (1,)), ((1,), (300, 37)), ((300, 37), (37,)),
                   ((300, 1), (300, 37)), ((8, 1, 5), (1, 9, 5))]:
        a = (rng.standard_normal(sa) * 10.0 ** rng.integers(-40, 38, size=sa)).astype(np.float32)
        b = (rng.standard_normal(sb) * 10.0 ** rng.integers(-40, 38, size=sb)).astype(np.float32)
        a.reshape(-1)[:8] = [0.0, -0.0, 1e-45, 3e38, -3e38, 1e-39, 1.0, np.inf][:min(8, a.size)]
        graph = helper.make_graph([helper.make_node(op, ["a", "b"], ["y"])], "g",
                                  [helper.make_tensor_value_info("a", TensorProto.FLOAT, list(sa)),
                                   helper.make_tensor_value_info("b", TensorProto.FLOAT, list(sb))],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        with np.errstate(all="ignore"):
            ref = fn(a, b).astype(np.float32)
        for disable_all in (True, False):
            so = ort.SessionOptions()
            so.log_severity_level = 3
            if disable_all:
                so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
            assert _bits_equal(sess.run(None, {"a": a, "b": b})[0], ref) == 0


# --------------------------------------------------------------------------- float Conv / Gemm / MatMul (MLAS)


def _float_conv_session(w, b, strides, pads, dil, group, x_shape, disable_all):
    inits = {"w": w} if b is None else {"w": w, "b": b}
    node = helper.make_node("Conv", ["x", "w"] + ([] if b is None else ["b"]), ["y"], strides=list(strides),
                            pads=list(pads), dilations=list(dil), group=group)
    return _session([node], x_shape, inits, disable_all=disable_all)


_FLOAT_CONV_CASES = [  # x shape, w shape, strides, pads (t, l, b, r), dilations, group
    ((1, 3, 32, 32), (16, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),  # NCHW-input NCHWc kernel
    ((1, 16, 16, 16), (48, 16, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # pointwise / GEMM direct
    ((1, 48, 16, 16), (48, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 48),  # depthwise (M1 kernel / NCHWc)
    ((1, 72, 8, 8), (72, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 72),  # depthwise, channels padded to 80
    ((1, 64, 12, 12), (32, 64, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),  # K = 576: K slices / 16-ch passes
    ((1, 64, 5, 5), (96, 64, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),  # O > OH*OW: full im2col
    ((2, 20, 7, 9), (24, 20, 3, 3), (2, 1), (0, 1, 2, 0), (1, 2), 1),
    ((1, 300, 4, 4), (8, 300, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # pointwise, 128-channel passes
    ((1, 32, 9, 9), (64, 32, 1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1),  # strided pointwise
    ((1, 64, 6, 6), (64, 32, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),  # grouped NCHWc
    ((2, 8, 9, 9), (12, 4, 3, 3), (1, 2), (1, 0, 2, 1), (2, 1), 2),  # not NCHWc-eligible
    ((1, 6, 6, 6), (6, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 6),  # depthwise, not eligible
]


@pytest.mark.parametrize("disable_all", [True, False])
@pytest.mark.parametrize("case", _FLOAT_CONV_CASES)
def test_mlas_float_conv(case, disable_all):
    """Float Conv, bitwise: MlasConv (ORT_DISABLE_ALL) and the NCHWc kernels (default session);
    random floats and QDQ-style dequantized int8 values."""
    xs, ws, st, pd, dl, gr = case
    rng = np.random.default_rng(31)
    session = "disable_all" if disable_all else "default"
    for qdq in (False, True):
        if qdq:
            w = (np.float32(0.0123) * rng.integers(-127, 128, ws)).astype(np.float32)
            b = (np.float32(0.0123 * 0.05) * rng.integers(-3000, 3000, ws[0])).astype(np.float32)
            x = (np.float32(0.05) * (rng.integers(-128, 128, xs) - 3)).astype(np.float32)
        else:
            w = rng.standard_normal(ws).astype(np.float32)
            b = rng.standard_normal(ws[0]).astype(np.float32)
            x = rng.standard_normal(xs).astype(np.float32)
        y = _float_conv_session(w, b, st, pd, dl, gr, xs, disable_all).run(None, {"x": x})[0]
        r = R.mlas_conv_f32(x, w, b, st, pd, dl, gr, session=session)
        assert _bits_equal(y, r) == 0


def test_mlas_float_conv_sessions_differ():
    """The NCHWc kernels round differently from MlasConv (so the session matters)."""
    rng = np.random.default_rng(32)
    xs, ws = (1, 48, 8, 8), (48, 1, 3, 3)
    w, x = rng.standard_normal(ws).astype(np.float32), rng.standard_normal(xs).astype(np.float32)
    args = (x, w, None, (1, 1), (1, 1, 1, 1), (1, 1), 48)
    assert _bits_equal(R.mlas_conv_f32(*args, session="default"), R.mlas_conv_f32(*args)) > 0


def _gemm_session(op, b, c, a_shape, trans_b, const_b, disable_all):
    inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, list(a_shape))]
    inits = [] if not const_b else [numpy_helper.from_array(b, "b")]
    if not const_b:
        inputs.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, list(b.shape)))
    names = ["a", "b"]
    if c is not None:
        inits.append(numpy_helper.from_array(c, "c"))
        names.append("c")
    node = helper.make_node(op, names, ["y"], **({"transB": trans_b} if op == "Gemm" else {}))
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 1
    if disable_all:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("disable_all", [True, False])
@pytest.mark.parametrize("mkn", [(1, 48, 10), (4, 48, 10), (1, 600, 10), (8, 600, 33), (3, 300, 20), (1, 7, 5)])
def test_mlas_float_gemm_matmul(mkn, disable_all):
    m, k, n = mkn
    rng = np.random.default_rng(33)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = rng.standard_normal(n).astype(np.float32)
    for trans_b in (0, 1):
        bb = np.ascontiguousarray(b.T) if trans_b else b
        for cc in (c, None):
            y = _gemm_session("Gemm", bb, cc, a.shape, trans_b, True, disable_all).run(None, {"a": a})[0]
            assert _bits_equal(y, R.mlas_gemm_f32(a, bb, cc, transB=trans_b)) == 0
    y = _gemm_session("MatMul", b, None, a.shape, 0, True, disable_all).run(None, {"a": a})[0]
    assert _bits_equal(y, R.mlas_matmul_f32(a, b)) == 0
    y = _gemm_session("MatMul", b, None, a.shape, 0, False, disable_all).run(None, {"a": a, "b": b})[0]
    assert _bits_equal(y, R.mlas_matmul_f32(a, b, const_b=False)) == 0


def test_mlas_float_batched_matmul():
    rng = np.random.default_rng(34)
    a = rng.standard_normal((2, 3, 5, 300)).astype(np.float32)
    b = rng.standard_normal((3, 300, 7)).astype(np.float32)
    y = _gemm_session("MatMul", b, None, a.shape, 0, False, True).run(None, {"a": a, "b": b})[0]
    assert _bits_equal(y, R.mlas_matmul_f32(a, b)) == 0
    a1 = rng.standard_normal((4, 1, 40)).astype(np.float32)
    b1 = rng.standard_normal((4, 40, 9)).astype(np.float32)
    y = _gemm_session("MatMul", b1, None, a1.shape, 0, False, True).run(None, {"a": a1, "b": b1})[0]
    assert _bits_equal(y, R.mlas_matmul_f32(a1, b1)) == 0


# AveragePool opset >= 19: (shape, kernel, strides, pads [t, l, b, r], dilations)
_POOL19_CASES = [((1, 8, 9, 11), (2, 2), (1, 1), (0, 0, 0, 0), (1, 1)), ((2, 16, 12, 12), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
                 ((1, 5, 9, 11), (3, 3), (2, 2), (0, 1, 2, 1), (1, 1)), ((1, 8, 13, 10), (5, 5), (2, 1), (2, 0, 1, 2), (1, 1)),
                 ((1, 8, 9, 11), (3, 3), (1, 2), (1, 1, 1, 1), (2, 2)), ((1, 4, 12, 12), (2, 3), (2, 1), (1, 0, 1, 2), (2, 1)),
                 ((1, 3, 14, 13), (5, 5), (1, 1), (4, 2, 3, 4), (2, 2))]


@pytest.mark.parametrize("disable_all", [True, False])
@pytest.mark.parametrize("opset", [19, 21])
@pytest.mark.parametrize("cip", [0, 1])
def test_float_avg_pool_opset19(cip, opset, disable_all):
    """AveragePool opset >= 19 (AveragePool2DTask: sum from 0 in (ky, kx) order, / count), not MlasPool."""
    rng = np.random.default_rng(24)
    differs_from_mlas = 0
    for shape, k, s, p, d in _POOL19_CASES:
        node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=list(k), strides=list(s), pads=list(p),
                                dilations=list(d), count_include_pad=cip)
        sess = _session([node], shape, {}, opset=opset, disable_all=disable_all)
        pad = ((p[0], p[2]), (p[1], p[3]))
        xs = [(rng.standard_normal(shape) * scale).astype(np.float32) for scale in (1.0, 100.0, 1e-3)]
        xs.append(R.dequantize_linear(rand(rng, np.int8, shape), x_q=qp(0.0173, 3, "i8")))
        for x in xs:
            y = sess.run(None, {"x": x})[0]
            r = R.avg_pool19_f32(x.transpose(0, 2, 3, 1), kernel=k, strides=s, padding=pad, dilations=d,
                                 count_include_pad=cip).transpose(0, 3, 1, 2)
            assert _bits_equal(y, r) == 0, (shape, k, s, p, d)
            if d == (1, 1):
                differs_from_mlas += _bits_equal(y, R.mlas_avg_pool_f32(
                    x.transpose(0, 2, 3, 1), kernel=k, strides=s, padding=pad,
                    count_include_pad=cip).transpose(0, 3, 1, 2))
    assert differs_from_mlas > 0


def test_float_avg_pool_opset19_signed_zero():
    """The sum starts from +0.0: an all -0.0 window averages to +0.0 (MlasPool keeps -0.0)."""
    x = np.full((1, 2, 4, 4), -0.0, np.float32)
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2])
    y = _session([node], x.shape, {}, opset=19, disable_all=True).run(None, {"x": x})[0]
    assert _bits_equal(y, R.avg_pool19_f32(x.transpose(0, 2, 3, 1), kernel=(2, 2)).transpose(0, 3, 1, 2)) == 0
    assert not np.signbit(y).any()


def _has_avx512f() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and "avx512f" in line.split() for line in f)
    except OSError:
        return False


@pytest.mark.parametrize("opset", [17, 21])
def test_float_global_avg_pool_sessions(opset):
    """GlobalAveragePool: MlasPool's global kernel under ORT_DISABLE_ALL (any opset); the default
    session's NchwcTransformer swaps in nchwc.GlobalAveragePool when C is a multiple of the NCHWc
    block size, whose arithmetic is avg_pool19_f32 with the whole plane as kernel."""
    block = 16 if _has_avx512f() else 8  # MlasNchwcGetBlockSize: 16 with AVX-512F, 8 with AVX2
    rng = np.random.default_rng(25)
    for shape in [(2, 16, 7, 7), (1, 8, 6, 6), (1, 24, 5, 5), (1, 48, 5, 5), (1, 3, 1, 7)]:
        node = helper.make_node("GlobalAveragePool", ["x"], ["y"])
        s_off = _session([node], shape, {}, opset=opset, disable_all=True)
        s_def = _session([node], shape, {}, opset=opset, disable_all=False)
        for scale in (1.0, 100.0, 1e-3):
            x = (rng.standard_normal(shape) * scale + scale).astype(np.float32)
            xt = x.transpose(0, 2, 3, 1)
            assert _bits_equal(s_off.run(None, {"x": x})[0], R.mlas_global_avg_f32(xt).transpose(0, 3, 1, 2)) == 0
            nchwc = shape[1] % block == 0
            r = (R.avg_pool19_f32(xt, kernel=shape[2:]) if nchwc else R.mlas_global_avg_f32(xt)).transpose(0, 3, 1, 2)
            assert _bits_equal(s_def.run(None, {"x": x})[0], r) == 0, shape


@pytest.mark.parametrize("fed", [False, True])
@pytest.mark.parametrize("opset", [18, 21])
def test_float_reduce_mean_axes_input(opset, fed):
    """ReduceMean opset >= 18 (axes an input, constant or fed): still reduce_mean_f32."""
    rng = np.random.default_rng(26)
    for shape, axes in [((2, 16, 7, 7), [2, 3]), ((1, 8, 14, 14), [2, 3]), ((3, 5, 6), [-1]), ((2, 5, 6, 7), [-2, -1])]:
        ax = np.asarray(axes, np.int64)
        ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))]
        if fed:
            ins.append(helper.make_tensor_value_info("a", TensorProto.INT64, [len(axes)]))
        graph = helper.make_graph([helper.make_node("ReduceMean", ["x", "a"], ["y"], keepdims=1)], "g", ins,
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                                  [] if fed else [numpy_helper.from_array(ax, "a")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 9
        so = ort.SessionOptions()
        so.log_severity_level = 3
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        n = int(np.prod(shape))
        buf = (rng.standard_normal(n + 4) * 100 + 10).astype(np.float32)
        for off in range(4):
            x = buf[off:off + n].reshape(shape)
            y = sess.run(None, {"x": x, "a": ax} if fed else {"x": x})[0]
            assert _bits_equal(y, R.reduce_mean_f32(x, axes, True, base_offset=(x.ctypes.data % 16) // 4)) == 0


@pytest.mark.parametrize("disable_all", [True, False])
def test_logistic_emulations_match_onnxruntime(disable_all):
    """`mlas_logistic` (numpy, every fma one float32 rounding) and the exact scalar emulation
    in rationals `mlas_logistic_exact` against ORT's Sigmoid: values across the polynomial's
    range, at the clamp limits, and the float32 neighbours of +-18 and +-1."""
    rng = np.random.default_rng(22)
    runs = [(np.float32(c).view(np.int32) + np.arange(-40, 41)).astype(np.int32).view(np.float32) for c in (18.0, 1.0)]
    x = np.concatenate([rng.standard_normal(1500) * 7, np.linspace(-19, 19, 601), [0.0, -0.0, 1e30, -1e30],
                        *runs, *[-r for r in runs]]).astype(np.float32)
    y = _session([helper.make_node("Sigmoid", ["x"], ["y"])], x.shape, {}, disable_all=disable_all).run(None, {"x": x})[0]
    assert _bits_equal(y, R.mlas_logistic(x)) == 0
    assert _bits_equal(y, R.mlas_logistic_exact(x)) == 0
