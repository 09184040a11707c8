#!/usr/bin/env python3
"""Generate a held-out set of quantized ONNX models for reviewing the qdialect ONNX
frontend on graphs it was not developed against (not the zoo's graphs, not the zoo's
option combinations).

    .venv/bin/python tools/gen_onnx_heldout.py [--out /tmp/heldout/models] [--only SUBSTR]
                                               [--no-ops] [--no-torch]

Writes <net>__<variant>.onnx for every (network, quantization variant) pair that
quantize_static accepts and ONNX Runtime loads, op_<name>__<variant>.onnx single-op
models (for isolating failures), optionally torch_cnn__<variant>.onnx (a small float
CNN exported by torch.onnx.export, if torch imports), and manifest.json
(file -> network, variant options, or the reason it was skipped).

Graphs are built with onnx.helper at the variant's opset (13, 17 or 21; opset-dependent
operator spellings - Squeeze/Unsqueeze/ReduceMean axes, HardSwish - are handled) and
quantized with onnxruntime.quantization.quantize_static.  Deterministic seeds.
Not part of the test suite; torch is optional and not a project dependency.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_onnx_zoo  # noqa: E402 - the zoo's graph builder, beside this file
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quantize_static,
)

IR_FOR_OPSET = {13: 7, 17: 8, 21: 10}
N_CALIB = 16


# --------------------------------------------------------------------------- builder
class G(gen_onnx_zoo.G):
    """The zoo's graph builder at a chosen opset, with more layer options."""

    def __init__(self, name: str, seed: int, opset: int):
        super().__init__(name, seed)
        self.opset = opset

    def f32(self, vals, p="k"):
        return self.const(np.asarray(vals, dtype=np.float32), p)

    # opset-aware spellings --------------------------------------------------
    def squeeze(self, x, axes):
        return self.op("Squeeze", [x, self.i64(axes, "axes")])  # opset >= 13

    def unsqueeze(self, x, axes):
        return self.op("Unsqueeze", [x, self.i64(axes, "axes")])

    def reduce_mean(self, x, axes, keepdims):
        if self.opset >= 18:
            return self.op("ReduceMean", [x, self.i64(axes, "axes")], keepdims=keepdims)
        return self.op("ReduceMean", [x], axes=axes, keepdims=keepdims)

    def hardswish(self, x):
        if self.opset >= 14:
            return self.op("HardSwish", [x])
        # opset 13 has no HardSwish: x * HardSigmoid(x, 1/6, 0.5)
        return self.op("Mul", [x, self.op("HardSigmoid", [x], alpha=1.0 / 6, beta=0.5)])

    def relu6(self, y):
        return self.op("Clip", [y, self.f32(0.0, "lo"), self.f32(6.0, "hi")])

    # layers ----------------------------------------------------------------
    def conv(self, x, cin, cout, k, stride=1, pads=None, group=1, dilation=1, auto_pad=None, act=None):
        w = self.const(self.he((cout, cin // group, k, k), (cin // group) * k * k), "w")
        b = self.const(self.bias(cout), "b")
        attrs = dict(kernel_shape=[k, k], strides=[stride, stride], group=group, dilations=[dilation, dilation])
        if auto_pad:
            attrs["auto_pad"] = auto_pad
        else:
            attrs["pads"] = pads if pads is not None else [dilation * (k // 2)] * 4
        y = self.op("Conv", [x, w, b], **attrs)
        if act == "relu":
            y = self.op("Relu", [y])
        elif act == "relu6":
            y = self.relu6(y)
        return y

    def gemm(self, x, cin, cout, trans_b=1, **attrs):
        w = self.const(self.he((cout, cin) if trans_b else (cin, cout), cin), "w")
        b = self.const(self.bias(cout), "b")
        return self.op("Gemm", [x, w, b], transB=trans_b, **attrs)

    def model(self):
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                              producer_name="qdialect.gen_onnx_heldout", producer_version="1",
                              ir_version=IR_FOR_OPSET[self.opset])
        m = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
        onnx.checker.check_model(m, full_check=True)
        return m


def finish(g, y, name="y"):
    g.nodes[-1].output[0] = name
    g.output(name)
    return g


# --------------------------------------------------------------------------- networks
def build_cnn_mix(opset):
    """1x1, 5x5 stride 2, 3x3 dilation 2, 3x3 stride-2 SAME_UPPER (asymmetric), group=3."""
    g = G("cnn_mix", 301, opset)
    x = g.input("image", (1, 3, 20, 20))
    y = g.conv(x, 3, 6, 1, act="relu")                                  # 1x1        20x20
    y = g.conv(y, 6, 12, 5, stride=2, pads=[2, 2, 2, 2], act="relu")    # 5x5 s2     10x10
    y = g.conv(y, 12, 12, 3, dilation=2, act="relu")                    # dil 2      10x10
    y = g.conv(y, 12, 12, 3, stride=2, auto_pad="SAME_UPPER")           # 5x5, pads 0/1
    y = g.conv(y, 12, 9, 3, group=3, act="relu")                        # grouped    5x5
    y = g.op("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])  # 3x3
    y = g.op("GlobalAveragePool", [y])
    y = g.op("Flatten", [y], axis=1)
    return finish(g, g.gemm(y, 9, 7), "logits")


def build_cnn_wide(opset):
    """Wider, odd-sized CNN: 7 -> 20 -> 32 channels, 5x5 SAME_UPPER stride 1 on even kernel-free path."""
    g = G("cnn_wide", 302, opset)
    x = g.input("image", (1, 3, 17, 17))
    y = g.conv(x, 3, 20, 3, stride=2, auto_pad="SAME_UPPER", act="relu")   # 9x9
    y = g.conv(y, 20, 20, 5, group=20, act="relu")                           # depthwise 5x5
    y = g.conv(y, 20, 32, 1)
    y = g.op("AveragePool", [y], kernel_shape=[2, 2], strides=[2, 2])        # 4x4
    y = g.op("Flatten", [y], axis=1)                                         # 512
    return finish(g, g.gemm(y, 512, 12), "logits")


def build_mbv2(opset):
    g = G("mbv2", 303, opset)
    x = g.input("image", (1, 3, 24, 24))
    y = g.conv(x, 3, 8, 3, stride=2, act="relu6")  # 12x12

    def block(y, cin, cout, e, s):
        c = cin * e
        h = g.conv(y, cin, c, 1, act="relu6")
        h = g.conv(h, c, c, 3, stride=s, group=c, act="relu6")
        h = g.conv(h, c, cout, 1)
        return g.op("Add", [h, y]) if s == 1 and cin == cout else h

    y = block(y, 8, 8, 4, 1)     # res 1
    y = block(y, 8, 12, 3, 2)    # 6x6
    y = block(y, 12, 12, 2, 1)   # res 2
    y = block(y, 12, 12, 3, 1)   # res 3
    y = block(y, 12, 12, 2, 1)   # res 4
    y = g.conv(y, 12, 32, 1, act="relu6")   # ReLU6 head
    y = g.op("GlobalAveragePool", [y])
    y = g.op("Flatten", [y], axis=1)
    return finish(g, g.gemm(y, 32, 5), "logits")


def build_mlp(opset):
    g = G("mlp_act", 304, opset)
    x = g.input("feat", (1, 48))
    y = g.op("Relu", [g.gemm(x, 48, 40)])
    y = g.op("Sigmoid", [g.gemm(y, 40, 24)])
    y = g.op("Tanh", [g.gemm(y, 24, 24, trans_b=0)])
    y = g.op("Relu", [g.gemm(y, 24, 16)])
    y = g.gemm(y, 16, 6)
    return finish(g, g.op("Softmax", [y], axis=1), "probs")


def build_ew_shape1(opset):
    """ew_shape with a unit-step Slice (Slice steps != 1 is refused by the importer, masking the rest)."""
    g = build_ew_shape(opset)
    g.name = "ew_shape1"
    sl = next(n for n in g.nodes if n.op_type == "Slice")
    sl.input[4] = g.i64([1, 1])
    return g


def build_ew_shape(opset):
    """Broadcasting Add/Mul/Sub with constants, Concat of differently-scaled inputs,
    Transpose/Reshape/Flatten/Squeeze/Unsqueeze/Slice/Split."""
    g = G("ew_shape", 305, opset)
    x = g.input("x", (1, 8, 6, 6))
    z = g.input("z", (1, 4, 6, 6))
    a = g.op("Add", [x, g.f32(g.rng.standard_normal((1, 8, 1, 1)))])
    m = g.op("Mul", [x, g.f32(g.rng.uniform(0.5, 2.0, (6,)))])          # broadcast on W
    s = g.op("Sub", [a, g.f32(0.25)])                                    # scalar
    z3 = g.op("Mul", [z, g.f32(3.0)])                                    # differently scaled
    c = g.op("Concat", [a, z3, m], axis=1)                               # 1x20x6x6
    t = g.op("Transpose", [c], perm=[0, 3, 1, 2])                        # 1x6x20x6
    r = g.op("Reshape", [t, g.i64([1, 120, 6])])
    sl = g.op("Slice", [r, g.i64([4, 1]), g.i64([100, 6]), g.i64([1, 2]), g.i64([3, 2])])  # 1x32x3
    g.op("Flatten", [sl], out="out_flat", axis=1)                        # 1x96
    p1, p2, p3 = g.op("Split", [s, g.i64([2, 2, 4])], n_out=3, axis=1)
    q = g.op("Reshape", [p3, g.i64([1, 1, 4, 36])])
    sq = g.squeeze(q, [1])                                               # 1x4x36
    g.op("Unsqueeze", [sq, g.i64([3], "axes")], out="out_unsq")           # 1x4x36x1
    g.op("Add", [p1, p2], out="out_split")
    for o in ("out_flat", "out_unsq", "out_split"):
        g.output(o)
    return g


def build_ew_pool(opset):
    """Pad, LeakyRelu, AveragePool cip 0/1, MaxPool, nearest Resize x2, HardSigmoid,
    HardSwish, GlobalAveragePool, ReduceMean."""
    g = G("ew_pool", 306, opset)
    x = g.input("x", (1, 6, 12, 12))
    p = g.op("Pad", [x, g.i64([0, 0, 1, 2, 0, 0, 2, 1])], mode="constant")   # 1x6x15x15
    lr = g.op("LeakyRelu", [p], alpha=0.2)
    ap0 = g.op("AveragePool", [lr], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=0)  # 8x8
    ap1 = g.op("AveragePool", [lr], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=1)  # 15x15
    mp = g.op("MaxPool", [ap1], kernel_shape=[3, 3], strides=[2, 2])                                            # 7x7
    rz = g.op("Resize", [ap0, "", g.f32([1, 1, 2, 2], "scales")], mode="nearest")                               # 16x16
    hs = g.op("HardSigmoid", [rz], alpha=0.25, beta=0.4)
    hw = g.hardswish(mp)
    g.op("GlobalAveragePool", [hw], out="out_gap")
    rm = g.reduce_mean(hs, [2, 3], 0)
    g.nodes[-1].output[0] = "out_rmean"
    for o in ("out_gap", "out_rmean"):
        g.output(o)
    return g


def build_resnext(opset):
    """A small ResNeXt / RegNet-X: grouped 3x3 layers of 16 channels a group (4 and 8 groups)
    in residual bottleneck blocks, 56x56 input (session 26: ONNX's grouped convolutions)."""
    g = G("resnext", 303, opset)
    x = g.input("image", (1, 3, 56, 56))
    y = g.conv(x, 3, 32, 3, stride=2, pads=[1, 1, 1, 1], act="relu")       # 28x28
    c = 32
    for width, stride in ((64, 1), (128, 2)):
        h = g.conv(y, c, width, 1, act="relu")
        h = g.conv(h, width, width, 3, stride=stride, pads=[1, 1, 1, 1], group=width // 16, act="relu")
        h = g.conv(h, width, width, 1)
        skip = g.conv(y, c, width, 1, stride=stride)
        y = g.op("Relu", [g.op("Add", [h, skip])])
        c = width
    y = g.op("GlobalAveragePool", [y])
    y = g.op("Flatten", [y], axis=1)
    return finish(g, g.gemm(y, c, 10), "logits")


NETS = {"cnn_mix": build_cnn_mix, "cnn_wide": build_cnn_wide, "mbv2": build_mbv2,
        "mlp_act": build_mlp, "ew_shape": build_ew_shape, "ew_shape1": build_ew_shape1, "ew_pool": build_ew_pool,
        "resnext": build_resnext}


# --------------------------------------------------------------------------- single-op models
def _single(name, seed, opset, shapes, body):
    g = G(f"op_{name}", seed, opset)
    ins = [g.input(f"x{i}" if len(shapes) > 1 else "x", s) for i, s in enumerate(shapes)]
    return finish(g, body(g, *ins))


def op_builders():
    lr = lambda g, x: g.op("LeakyRelu", [x], alpha=0.2)  # noqa: E731  quantized producer for latent ops
    return {
        "conv1x1": ([(1, 3, 8, 8)], lambda g, x: g.conv(x, 3, 6, 1)),
        "conv5x5s2": ([(1, 6, 10, 10)], lambda g, x: g.conv(x, 6, 12, 5, stride=2, pads=[2, 2, 2, 2])),
        "conv_dil2": ([(1, 12, 10, 10)], lambda g, x: g.conv(x, 12, 12, 3, dilation=2)),
        "conv_same_upper": ([(1, 12, 10, 10)], lambda g, x: g.conv(x, 12, 12, 3, stride=2, auto_pad="SAME_UPPER")),
        "conv_group3": ([(1, 12, 5, 5)], lambda g, x: g.conv(x, 12, 9, 3, group=3)),
        "conv_group3_relu": ([(1, 12, 5, 5)], lambda g, x: g.conv(x, 12, 9, 3, group=3, act="relu")),
        "conv_dw5": ([(1, 20, 9, 9)], lambda g, x: g.conv(x, 20, 20, 5, group=20)),
        "gemm_transb0": ([(1, 24)], lambda g, x: g.gemm(x, 24, 24, trans_b=0)),
        "gemm_alpha": ([(1, 24)], lambda g, x: g.gemm(x, 24, 16, alpha=0.5)),
        "tanh": ([(1, 24)], lambda g, x: g.op("Tanh", [x])),
        "sigmoid": ([(1, 40)], lambda g, x: g.op("Sigmoid", [x])),
        "softmax": ([(1, 6)], lambda g, x: g.op("Softmax", [x], axis=1)),
        "add_const": ([(1, 8, 6, 6)], lambda g, x: g.op("Add", [x, g.f32(g.rng.standard_normal((1, 8, 1, 1)))])),
        "mul_const": ([(1, 8, 6, 6)], lambda g, x: g.op("Mul", [x, g.f32(g.rng.uniform(0.5, 2.0, (6,)))])),
        "sub_scalar": ([(1, 8, 6, 6)], lambda g, x: g.op("Sub", [x, g.f32(0.25)])),
        "add_res": ([(1, 8, 6, 6)], lambda g, x: g.op("Add", [lr(g, x), x])),
        "concat3": ([(1, 8, 6, 6), (1, 4, 6, 6)],
                    lambda g, a, b: g.op("Concat", [a, g.op("Mul", [b, g.f32(3.0)]), a], axis=1)),
        "transpose": ([(1, 20, 6, 6)], lambda g, x: g.op("Transpose", [lr(g, x)], perm=[0, 3, 1, 2])),
        "slice_step": ([(1, 120, 6)], lambda g, x: g.op("Slice", [lr(g, x), g.i64([4, 1]), g.i64([100, 6]),
                                                                    g.i64([1, 2]), g.i64([3, 2])])),
        "split": ([(1, 8, 6, 6)], lambda g, x: g.op("Split", [lr(g, x), g.i64([2, 2, 4])], n_out=3, axis=1)[2]),
        "squeeze": ([(1, 1, 4, 36)], lambda g, x: g.squeeze(lr(g, x), [1])),
        "unsqueeze": ([(1, 4, 36)], lambda g, x: g.unsqueeze(lr(g, x), [3])),
        "flatten": ([(1, 32, 3)], lambda g, x: g.op("Flatten", [lr(g, x)], axis=1)),
        "pad_asym": ([(1, 6, 12, 12)], lambda g, x: g.op("Pad", [lr(g, x), g.i64([0, 0, 1, 2, 0, 0, 2, 1])])),
        "leakyrelu": ([(1, 6, 15, 15)], lambda g, x: g.op("LeakyRelu", [x], alpha=0.2)),
        "avgpool_s2_cip0": ([(1, 6, 15, 15)], lambda g, x: g.op("AveragePool", [x], kernel_shape=[3, 3], strides=[2, 2],
                                                                 pads=[1, 1, 1, 1], count_include_pad=0)),
        "avgpool_cip1": ([(1, 6, 15, 15)], lambda g, x: g.op("AveragePool", [x], kernel_shape=[3, 3],
                                                             pads=[1, 1, 1, 1], count_include_pad=1)),
        "avgpool2x2": ([(1, 32, 9, 9)], lambda g, x: g.op("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])),
        "maxpool3s2": ([(1, 6, 15, 15)], lambda g, x: g.op("MaxPool", [lr(g, x)], kernel_shape=[3, 3], strides=[2, 2])),
        "maxpool_pad": ([(1, 9, 5, 5)], lambda g, x: g.op("MaxPool", [lr(g, x)], kernel_shape=[3, 3], strides=[2, 2],
                                                          pads=[1, 1, 1, 1])),
        "resize2x": ([(1, 6, 8, 8)], lambda g, x: g.op("Resize", [lr(g, x), "", g.f32([1, 1, 2, 2], "scales")],
                                                       mode="nearest")),
        "hardsigmoid": ([(1, 6, 16, 16)], lambda g, x: g.op("HardSigmoid", [x], alpha=0.25, beta=0.4)),
        "hardswish": ([(1, 6, 7, 7)], lambda g, x: g.hardswish(x)),
        "gap": ([(1, 6, 7, 7)], lambda g, x: g.op("GlobalAveragePool", [lr(g, x)])),
        "reducemean": ([(1, 6, 16, 16)], lambda g, x: g.reduce_mean(lr(g, x), [2, 3], 0)),
        "relu6": ([(1, 6, 8, 8)], lambda g, x: g.relu6(g.conv(x, 6, 6, 3))),
    }


# --------------------------------------------------------------------------- variants
QDQ, QOP = QuantFormat.QDQ, QuantFormat.QOperator
U8, S8, U16, S16 = QuantType.QUInt8, QuantType.QInt8, QuantType.QUInt16, QuantType.QInt16
MM, ENT, PCT = CalibrationMethod.MinMax, CalibrationMethod.Entropy, CalibrationMethod.Percentile

# name -> (format, act, weight, per_channel, reduce_range, calibration, opset, extra_options)
VARIANTS = {
    "qdq_u8s8_pc_o17": (QDQ, U8, S8, True, False, MM, 17, {}),
    "qdq_s8s8_asym_o13": (QDQ, S8, S8, True, False, MM, 13, {"ActivationSymmetric": True}),
    "qdq_u8u8_rr_wasym_o21": (QDQ, U8, U8, False, True, MM, 21, {"WeightSymmetric": False}),
    "qdq_u8s8_wpair_ded_o17": (QDQ, U8, S8, True, False, MM, 17,
                               {"AddQDQPairToWeight": True, "DedicatedQDQPair": True}),
    "qdq_s8s8_keep_ent_o17": (QDQ, S8, S8, False, False, ENT, 17, {"QDQKeepRemovableActivations": True}),
    "qdq_u8s8_pct_o21": (QDQ, U8, S8, True, False, PCT, 21, {}),
    "qdq_u8u8_force_o13": (QDQ, U8, U8, False, True, PCT, 13,
                           {"ForceQuantizeNoInputCheck": True, "DedicatedQDQPair": True}),
    "qdq_s16s8_o21": (QDQ, S16, S8, True, False, MM, 21, {}),
    "qdq_u16u8_o21": (QDQ, U16, U8, False, False, MM, 21, {}),
    "qop_u8s8_pc_o13": (QOP, U8, S8, True, False, MM, 13, {}),
    "qop_s8s8_rr_sym_o17": (QOP, S8, S8, False, True, MM, 17, {"ActivationSymmetric": True}),
    "qop_u8u8_ent_o21": (QOP, U8, U8, True, False, ENT, 21, {"ForceQuantizeNoInputCheck": True}),
}
OP_VARIANTS = ["qdq_u8s8_pc_o17", "qdq_s8s8_asym_o13", "qdq_s16s8_o21", "qop_s8s8_rr_sym_o17"]


def variant_desc(v):
    fmt, act, wt, pc, rr, cal, opset, extra = VARIANTS[v]
    return dict(format=fmt.name, activation=act.name, weight=wt.name, per_channel=pc, reduce_range=rr,
                calibrate=cal.name, opset=opset, extra=extra)


class Reader(CalibrationDataReader):
    def __init__(self, shapes, seed, n=N_CALIB):
        rng = np.random.default_rng(seed)
        self.samples = [{k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()} for _ in range(n)]
        self.it = iter(self.samples)

    def get_next(self):
        return next(self.it, None)

    def rewind(self):
        self.it = iter(self.samples)


QUANT = {"QuantizeLinear", "DequantizeLinear"}


def quantize(fm, shapes, seed, out: Path, variant, op_types=None, force=False):
    fmt, act, wt, pc, rr, cal, _opset, extra = VARIANTS[variant]
    extra = dict(extra)
    if force:
        extra["ForceQuantizeNoInputCheck"] = True
    with tempfile.TemporaryDirectory(prefix="gen_onnx_heldout.") as td:
        fpath, qpath = Path(td) / "float.onnx", Path(td) / "q.onnx"
        onnx.save_model(fm, fpath)
        try:
            quantize_static(str(fpath), str(qpath), Reader(shapes, seed), quant_format=fmt, activation_type=act,
                            weight_type=wt, per_channel=pc, reduce_range=rr, calibrate_method=cal,
                            op_types_to_quantize=op_types, extra_options=extra)
        except Exception as e:  # noqa: BLE001
            return f"quantize_static raised {type(e).__name__}: {str(e).splitlines()[0][:160]}"
        qm = onnx.load_model(qpath)
        if not any(n.op_type in QUANT or n.op_type.startswith(("QLinear", "QGemm")) for n in qm.graph.node):
            return "quantize_static left the graph float"
        try:
            ort.InferenceSession(str(qpath), providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001
            return f"onnxruntime cannot load result: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
        out.write_bytes(qpath.read_bytes())
    return None


ALL_OPS = ["Conv", "Gemm", "MatMul", "Add", "Mul", "Sub", "Sigmoid", "Tanh", "LeakyRelu", "Softmax", "Relu", "Clip",
           "AveragePool", "GlobalAveragePool", "MaxPool", "Concat", "Transpose", "Reshape", "Flatten", "Squeeze",
           "Unsqueeze", "Slice", "Split", "Pad", "Resize", "HardSigmoid", "HardSwish", "ReduceMean"]


# --------------------------------------------------------------------------- torch
def torch_float_model(opset):
    import io

    import torch  # optional; not a project dependency

    torch.manual_seed(7)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
            self.bn = torch.nn.BatchNorm2d(8)
            self.c2 = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
            self.c3 = torch.nn.Conv2d(8, 16, 1)
            self.fc = torch.nn.Linear(16, 10)

        def forward(self, x):
            y = torch.relu(self.bn(self.c1(x)))
            y = torch.nn.functional.relu6(self.c2(y)) + y
            y = torch.nn.functional.hardswish(self.c3(y))
            y = torch.nn.functional.max_pool2d(y, 2)
            y = torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1)
            return torch.softmax(self.fc(y), dim=1)

    net = Net().eval()
    with torch.no_grad():  # non-trivial BN statistics
        net.bn.running_mean.uniform_(-0.2, 0.2)
        net.bn.running_var.uniform_(0.5, 1.5)
    buf = io.BytesIO()
    torch.onnx.export(net, (torch.randn(1, 3, 16, 16),), buf, input_names=["image"], output_names=["probs"],
                      opset_version=opset, dynamo=False, do_constant_folding=True)
    return onnx.load_model_from_string(buf.getvalue()), {"image": (1, 3, 16, 16)}


# --------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("/tmp/heldout/models"))
    ap.add_argument("--only", default=None, help="only files whose name contains this")
    ap.add_argument("--no-ops", action="store_true")
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args()
    logging.getLogger().setLevel(logging.ERROR)
    ort.set_default_logger_severity(3)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = {}

    def do(fname, kind, build, seed, variant, op_types=None, force=False):
        if args.only and args.only not in fname:
            return
        p = args.out / fname
        entry = dict(kind=kind, variant=variant, options=variant_desc(variant))
        try:
            fm, shapes = build()
        except Exception as e:  # noqa: BLE001
            entry["skipped"] = f"float model: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
        else:
            why = quantize(fm, shapes, seed, p, variant, op_types, force)
            if why:
                entry["skipped"] = why
        manifest[fname] = entry
        print(("SKIP " + fname + ": " + entry["skipped"]) if "skipped" in entry else f"wrote {fname}", flush=True)

    for i, (net, build) in enumerate(NETS.items()):
        for v in VARIANTS:
            opset = VARIANTS[v][6]

            def b(build=build, opset=opset):
                g = build(opset)
                return g.model(), g.input_shapes
            do(f"{net}__{v}.onnx", net, b, 4000 + i, v, ALL_OPS)
    if not args.no_ops:
        for j, (name, (shapes, body)) in enumerate(op_builders().items()):
            for v in OP_VARIANTS:
                opset = VARIANTS[v][6]

                def b(name=name, shapes=shapes, body=body, opset=opset, j=j):
                    g = _single(name, 5000 + j, opset, shapes, body)
                    return g.model(), g.input_shapes
                do(f"op_{name}__{v}.onnx", "op_" + name, b, 6000 + j, v, ALL_OPS, force=True)
    if not args.no_torch:
        try:
            import torch  # noqa: F401
        except ImportError:
            print("SKIP torch_cnn: torch not importable", flush=True)
        else:
            for v in ("qdq_u8s8_pc_o17", "qdq_s8s8_asym_o13"):
                opset = VARIANTS[v][6]
                do(f"torch_cnn__{v}.onnx", "torch_cnn", lambda opset=opset: torch_float_model(opset), 7000, v)
    mpath = args.out / "manifest.json"
    old = json.loads(mpath.read_text()) if mpath.exists() and args.only else {}
    old.update(manifest)
    mpath.write_text(json.dumps(old, indent=1, sort_keys=True))
    n_ok = sum("skipped" not in e for e in manifest.values())
    print(f"{n_ok} written, {len(manifest) - n_ok} skipped -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
