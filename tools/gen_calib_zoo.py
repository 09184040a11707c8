#!/usr/bin/env python3
"""Generate the calibration zoo (models/calib/, issue 23): float Keras models
TRAINED on procedurally generated labelled tasks (no dataset downloads), so
that weights, activation ranges and accuracy look like a trained network's:

    NAME_float.tflite     float32 export of the trained Keras model (batch 1)
    NAME_tf_int8.tflite   TensorFlow's full-integer converter (int8 I/O) with
                          exactly the samples of NAME_calib.npz as its
                          representative dataset
    NAME_calib.npz        64 calibration samples: input_0 (64, 1, *input_shape)
    NAME_eval.npz         128 other samples (input_0) and their labels (labels)
    NAME.onnx             the same float model in ONNX (opset 17), written with
                          onnx.helper from NAME_float.tflite (folded BatchNorm,
                          same weights); checked against the float .tflite in
                          onnxruntime

Models (NAME):

    mobilenetv2_035   keras.applications.MobileNetV2, width 0.35, 96x96x3, shapes task
    mobilenetv2_050   keras.applications.MobileNetV2, width 0.5, 96x96x3, shapes task
    resnet_small      ResNet-style CNN (3 stages of 2 basic blocks, residual adds), 64x64x3, shapes task
    ds_cnn_kws        depthwise-separable keyword-spotting CNN, 49x20x1 spectrograms, 12 keywords
    mlp_tabular       MLP (4 dense layers), 32 tabular features, 8 classes
    attn_kws          one attention block (multi-head attention, softmax, LayerNorm, FFN)
                      on the keyword spectrograms as a sequence [49, 20]

Tasks: `shapes` draws one of 10 shapes (circle, square, triangle, ring, square
outline, plus, x, diamond, striped discs two ways) at a random position, size,
small rotation, colour and contrast on a coloured gradient background, with
distractor blobs and Gaussian noise, in [-1, 1].  `kws` draws 12 keyword
templates (2 formant tracks over 3 segments, fixed per class) with random time
shift / stretch, frequency shift, loudness, background noise and noise bursts,
as a log-energy spectrogram (49 frames x 20 bins).  `tabular` is a Gaussian
mixture in 6 latent dimensions mapped through a fixed random nonlinear mixing to
32 features with heavy-tailed noise.

TensorFlow is NOT a dependency of qdialect; training and conversion run in the
TF virtualenv:

    /work/tfvenv/bin/python tools/gen_calib_zoo.py [--out models/calib] [--models a,b]
    /work/tfvenv/bin/python tools/gen_calib_zoo.py --heldout DIR   # other seeds / sizes, outside the repo

Without TensorFlow (numpy, onnx, onnxruntime, ai-edge-litert: the project venv):

    python tools/gen_calib_zoo.py --derived [--out DIR]

rebuilds what is not committed because of its size (the image tasks' npz files and
the .onnx files) from the seeds and NAME_float.tflite, and checks each against the
sha256 in DIR/MANIFEST.txt (what TensorFlow's converter saw); bench/calibration.py
does this on its first run.

Determinism: data come from numpy generators with fixed seeds; Keras
initialisers and training are seeded (keras.utils.set_random_seed) with
TensorFlow's op determinism; the training batches are in a fixed order.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
N_CALIB = 64
N_EVAL = 128
N_TEST = 1000

# name -> configuration.  seed: data and weights; train: training samples (per epoch when `fresh`:
# new samples every epoch); epochs.
MODELS = {
    "mobilenetv2_035": dict(task="shapes", size=96, arch="mobilenetv2", alpha=0.35, seed=1, train=3000, epochs=30,
                            batch=32, lr=3e-3, fresh=True),
    "mobilenetv2_050": dict(task="shapes", size=96, arch="mobilenetv2", alpha=0.5, seed=2, train=3000, epochs=30,
                            batch=32, lr=3e-3, fresh=True),
    "resnet_small": dict(task="shapes", size=64, arch="resnet", widths=(16, 32, 64), seed=3, train=4000, epochs=8),
    "ds_cnn_kws": dict(task="kws", arch="ds_cnn", width=64, seed=4, train=6000, epochs=12),
    "mlp_tabular": dict(task="tabular", arch="mlp", units=(128, 128, 64), seed=5, train=8000, epochs=20),
    "attn_kws": dict(task="kws", arch="attention", dim=32, heads=2, seed=6, train=6000, epochs=15),
}

HELDOUT = {
    "mobilenetv2_035_h": dict(task="shapes", size=96, arch="mobilenetv2", alpha=0.35, seed=101, train=3000,
                              epochs=30, batch=32, lr=3e-3, fresh=True),
    "mobilenetv2_075_h": dict(task="shapes", size=80, arch="mobilenetv2", alpha=0.75, seed=102, train=3000,
                              epochs=24, batch=32, lr=3e-3, fresh=True),
    "resnet_h": dict(task="shapes", size=48, arch="resnet", widths=(24, 48, 96), seed=103, train=4000, epochs=8),
    "ds_cnn_kws_h": dict(task="kws", arch="ds_cnn", width=96, seed=104, train=6000, epochs=10),
    "mlp_h": dict(task="tabular", arch="mlp", units=(256, 64), seed=105, train=8000, epochs=15),
    "attn_kws_h": dict(task="kws", arch="attention", dim=48, heads=4, seed=106, train=6000, epochs=12),
}

#: per-epoch training data of `fresh` models: seeds seed * 1000 + FRESH_SEED + epoch
FRESH_SEED = 100

TASK_CLASSES = {"shapes": 10, "kws": 12, "tabular": 8}

# Files not committed (size): regenerated by --derived and checked against MANIFEST.txt.
BIG_NPZ_TASKS = ("shapes",)


# ---------------------------------------------------------------- tasks (numpy only)

def task_shapes(rng, n: int, size: int):
    """n images (n, size, size, 3) in [-1, 1] and labels 0..9."""
    labels = rng.integers(0, 10, n)
    out = np.empty((n, size, size, 3), np.float32)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    for lo in range(0, n, 256):
        hi = min(n, lo + 256)
        m = hi - lo
        lab = labels[lo:hi]

        def u(a, b, shape=(m,)):
            return rng.uniform(a, b, shape).astype(np.float32)

        r = u(0.16, 0.34) * size
        cx = u(0, 1) * (size - 2 * r) + r
        cy = u(0, 1) * (size - 2 * r) + r
        th = u(-0.35, 0.35)
        freq = u(0.9, 1.4)
        bg = u(-0.8, 0.8, (m, 3))
        grad = u(-0.5, 0.5, (m, 2, 3))
        contrast = u(0.45, 1.0)
        direction = rng.normal(size=(m, 3)).astype(np.float32)
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        fg = bg + contrast[:, None] * direction * 1.2
        noise = u(0.03, 0.3)
        R = r[:, None, None]
        dx, dy = xx[None] - cx[:, None, None], yy[None] - cy[:, None, None]
        c, s = np.cos(th)[:, None, None], np.sin(th)[:, None, None]
        pu, pv = c * dx + s * dy, -s * dx + c * dy
        rad = np.sqrt(pu ** 2 + pv ** 2)
        box = np.maximum(abs(pu), abs(pv))
        d45 = (abs(pu) + abs(pv)) / np.sqrt(2)
        q = np.sqrt(0.5)
        ru, rv = q * (pu + pv), q * (pv - pu)
        tri = np.ones_like(pu, bool)
        for a in (np.pi / 2, np.pi * 7 / 6, np.pi * 11 / 6):
            tri &= (pu * np.cos(a) + pv * np.sin(a)) < R * 0.5
        stripes = np.sin(pv * freq[:, None, None] * 2 * np.pi / 6) > 0
        stripes_v = np.sin(pu * freq[:, None, None] * 2 * np.pi / 6) > 0
        masks = [
            rad < R,
            box < R * 0.82,
            tri,
            (rad < R) & (rad > R * 0.6),
            (box < R * 0.85) & (box > R * 0.55),
            ((abs(pu) < R * 0.28) & (abs(pv) < R)) | ((abs(pv) < R * 0.28) & (abs(pu) < R)),
            ((abs(ru) < R * 0.28) & (abs(rv) < R)) | ((abs(rv) < R * 0.28) & (abs(ru) < R)),
            d45 < R * 0.8,
            (rad < R) & stripes,
            (rad < R) & stripes_v,
        ]
        mask = np.stack(masks)[lab, np.arange(m)]
        img = (bg[:, None, None, :] + grad[:, 0, None, None, :] * (xx[None, :, :, None] / size - 0.5)
               + grad[:, 1, None, None, :] * (yy[None, :, :, None] / size - 0.5))
        img = np.where(mask[..., None], fg[:, None, None, :], img)
        for _ in range(2):  # distractor blobs (some samples get none)
            on = rng.uniform(size=m) < 0.4
            br = u(0.03, 0.09) * size
            bx, by = u(0, size), u(0, size)
            col = u(-1, 1, (m, 3))
            blob = ((xx[None] - bx[:, None, None]) ** 2 + (yy[None] - by[:, None, None]) ** 2
                    < (br ** 2)[:, None, None]) & on[:, None, None]
            img = np.where(blob[..., None], col[:, None, None, :], img)
        img = img + rng.normal(size=img.shape).astype(np.float32) * noise[:, None, None, None]
        out[lo:hi] = np.clip(img, -1, 1)
    return out, labels


def _kws_templates(n_classes=12, bins=20):
    t = np.random.default_rng(12345)
    return t.uniform(2, bins - 3, (n_classes, 3, 2, 2))  # class, segment, formant, (start, end)


def task_kws(rng, n: int, frames=49, bins=20):
    """n log-energy spectrograms (n, frames, bins) and labels 0..11."""
    tpl = _kws_templates(12, bins)
    labels = rng.integers(0, 12, n)
    out = np.empty((n, frames, bins), np.float32)
    b = np.arange(bins, dtype=np.float64)
    for i in range(n):
        k = labels[i]
        length = rng.uniform(26, 44)
        start = rng.uniform(0, frames - length)
        fshift = rng.normal(0, 2.0)
        loud = rng.uniform(0.2, 1.0)
        width = rng.uniform(1.0, 2.6)
        e = np.full((frames, bins), 1.0) * rng.uniform(0.3, 1.5) * np.exp(rng.normal(0, 0.5, (1, bins)))
        tt = np.arange(frames)
        pos = (tt - start) / length
        on = (pos >= 0) & (pos < 1)
        seg = np.clip((pos * 3).astype(int), 0, 2)
        frac = pos * 3 - seg
        for f in range(2):
            centre = tpl[k, seg, f, 0] + (tpl[k, seg, f, 1] - tpl[k, seg, f, 0]) * frac + fshift
            amp = loud * (1.0 if f == 0 else 0.6) * on * (0.6 + 0.4 * np.sin(np.pi * np.clip(pos, 0, 1)))
            e += amp[:, None] * 4 * np.exp(-((b[None] - centre[:, None]) ** 2) / (2 * width ** 2))
        if rng.uniform() < 0.6:  # a noise burst
            s = int(rng.integers(0, frames - 6))
            e[s:s + int(rng.integers(2, 6))] += rng.uniform(0.5, 3)
        e *= np.exp(rng.normal(0, 0.7, e.shape))
        out[i] = np.log(e + 0.05)
    return out, labels


def task_tabular(rng, n: int):
    """n rows of 32 features and labels 0..7."""
    t = np.random.default_rng(777)
    means = t.normal(0, 1.6, (8, 6))
    w1, w2 = t.normal(0, 0.7, (6, 24)), t.normal(0, 0.5, (24, 32))
    scale = np.exp(t.normal(0, 1.0, 32))
    labels = rng.integers(0, 8, n)
    z = means[labels] + rng.normal(0, 1.0, (n, 6))
    x = np.tanh(z @ w1) @ w2 + 0.35 * rng.standard_t(4, (n, 32))
    return (x * scale).astype(np.float32), labels


def task_data(cfg, seed: int, n: int):
    """n samples of cfg's task from a numpy generator with this seed: (inputs, labels)."""
    rng = np.random.default_rng(seed)
    if cfg["task"] == "shapes":
        return task_shapes(rng, n, cfg["size"])
    if cfg["task"] == "kws":
        x, y = task_kws(rng, n)
        return (x[..., None] if cfg["arch"] == "ds_cnn" else x), y
    return task_tabular(rng, n)


def splits(cfg):
    """(train, calib, eval, test) as (x, labels) pairs; each split has its own data seed."""
    s = cfg["seed"] * 1000
    return (task_data(cfg, s + 1, cfg["train"]), task_data(cfg, s + 2, N_CALIB),
            task_data(cfg, s + 3, N_EVAL), task_data(cfg, s + 4, N_TEST))


def save_npz(path: Path, **arrays):
    """np.savez with batch-1 stacks for the model inputs (the qd-quantize contract)."""
    out = {}
    for k, v in arrays.items():
        out[k] = v[:, None].astype(np.float32) if k.startswith("input_") else v
    with open(path, "wb") as f:
        np.savez(f, **out)


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ---------------------------------------------------------------- tflite -> onnx (no TF needed)

def tflite_to_onnx(tflite_path: Path, onnx_path: Path) -> None:
    """Write the float32 .tflite graph as an ONNX (opset 17) model with the same weights.

    4-D activations are NCHW inside the ONNX graph (Transpose after a 4-D input and
    before every op that is not layout-aware); graph inputs and outputs keep the
    .tflite shapes and the names input_0, ... / output_0, ...  Unknown operators
    raise ValueError naming them."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from ai_edge_litert import schema_py_generated as S

    buf = Path(tflite_path).read_bytes()
    model = S.ModelT.InitFromObj(S.Model.GetRootAsModel(buf, 0))
    g = model.subgraphs[0]
    opnames = {v: k for k, v in vars(S.BuiltinOperator).items() if not k.startswith("_")}

    def code(op):
        oc = model.operatorCodes[op.opcodeIndex]
        return opnames[max(oc.builtinCode, oc.deprecatedBuiltinCode)]

    def const(i):
        t = g.tensors[i]
        data = model.buffers[t.buffer].data
        if data is None or len(data) == 0:
            return None
        dt = {S.TensorType.FLOAT32: np.float32, S.TensorType.INT32: np.int32, S.TensorType.INT64: np.int64}[t.type]
        return np.frombuffer(bytes(bytearray(data)), dt).reshape(list(t.shape))

    nodes, inits = [], []
    layout = {}  # tensor index -> "nchw" for 4-D activations held transposed
    counter = [0]

    def fresh(base):
        counter[0] += 1
        return f"{base}_{counter[0]}"

    names = {}
    for k, i in enumerate(g.inputs):
        names[i] = f"input_{k}"
    for k, i in enumerate(g.outputs):
        names[i] = f"output_{k}"

    def name(i):
        return names.setdefault(i, f"t{i}")

    def init(arr, base="c"):
        nm = fresh(base)
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), nm))
        return nm

    def node(op, ins, outs, **attrs):
        nodes.append(helper.make_node(op, ins, outs, name=fresh(op), **attrs))

    def nhwc(i):
        """Name of tensor i in the .tflite layout (a Transpose back when held NCHW)."""
        c = const(i)
        if c is not None:
            return init(c)
        if layout.get(i) == "nchw":
            nm = fresh(name(i) + "_nhwc")
            node("Transpose", [name(i)], [nm], perm=[0, 2, 3, 1])
            return nm
        return name(i)

    def nchw(i):
        """Name of 4-D activation i in NCHW."""
        if layout.get(i) == "nchw":
            return name(i)
        nm = fresh(name(i) + "_nchw")
        node("Transpose", [name(i)], [nm], perm=[0, 3, 1, 2])
        return nm

    def finish(out_i, produced, fused, in_layout):
        """Apply a fused activation to `produced` and bind the result to tensor out_i."""
        act = {0: None, 1: "Relu", 3: "Relu6"}[fused] if fused in (0, 1, 3) else "?"
        if act == "?":
            raise ValueError(f"{tflite_path}: fused activation {fused} not supported")
        if act is None:
            node("Identity", [produced], [name(out_i)])
        elif act == "Relu":
            node("Relu", [produced], [name(out_i)])
        else:
            node("Clip", [produced, init(np.float32(0)), init(np.float32(6))], [name(out_i)])
        if in_layout == "nchw":
            layout[out_i] = "nchw"

    def same_pads(in_hw, k_hw, strides, dil, padding):
        if padding == S.Padding.VALID:
            return [0, 0, 0, 0]
        pads = []
        for n_in, k, s, d in zip(in_hw, k_hw, strides, dil):
            out = -(-n_in // s)
            total = max((out - 1) * s + (k - 1) * d + 1 - n_in, 0)
            pads.append((total // 2, total - total // 2))
        return [pads[0][0], pads[1][0], pads[0][1], pads[1][1]]

    def shape(i):
        return [int(v) for v in g.tensors[i].shape]

    for op in g.operators:
        kind = code(op)
        o = op.builtinOptions
        ins, out = list(op.inputs), op.outputs[0]
        if kind in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            x, w, b = ins[0], const(ins[1]), (const(ins[2]) if len(ins) > 2 and ins[2] >= 0 else None)
            kh, kw = w.shape[1], w.shape[2]
            if kind == "CONV_2D":
                wt, group = w.transpose(0, 3, 1, 2), 1
            else:
                wt, group = w.transpose(3, 0, 1, 2), shape(x)[3]
            dil = [getattr(o, "dilationHFactor", 1) or 1, getattr(o, "dilationWFactor", 1) or 1]
            pads = same_pads(shape(x)[1:3], (kh, kw), (o.strideH, o.strideW), dil, o.padding)
            args = [nchw(x), init(wt.astype(np.float32), "w")] + ([init(b, "b")] if b is not None else [])
            tmp = fresh("conv")
            node("Conv", args, [tmp], strides=[o.strideH, o.strideW], pads=pads, dilations=dil,
                 group=group, kernel_shape=[kh, kw])
            finish(out, tmp, o.fusedActivationFunction, "nchw")
        elif kind in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
            x = ins[0]
            pads = same_pads(shape(x)[1:3], (o.filterHeight, o.filterWidth), (o.strideH, o.strideW), (1, 1),
                             o.padding)
            tmp = fresh("pool")
            attrs = dict(kernel_shape=[o.filterHeight, o.filterWidth], strides=[o.strideH, o.strideW], pads=pads)
            if kind == "AVERAGE_POOL_2D":
                attrs["count_include_pad"] = 0
            node("AveragePool" if kind == "AVERAGE_POOL_2D" else "MaxPool", [nchw(x)], [tmp], **attrs)
            finish(out, tmp, o.fusedActivationFunction, "nchw")
        elif kind == "FULLY_CONNECTED":
            x, w = ins[0], const(ins[1])
            b = const(ins[2]) if len(ins) > 2 and ins[2] >= 0 else None
            tmp = fresh("fc")
            xs = shape(x)
            if len(xs) != 2 and not o.keepNumDims:  # TFLite flattens to [-1, input depth]
                flat = fresh("flat")
                node("Reshape", [nhwc(x), init(np.array([-1, w.shape[1]], np.int64))], [flat])
                node("Gemm", [flat, init(w, "w")] + ([init(b, "b")] if b is not None else []), [tmp], transB=1)
            elif len(xs) == 2:
                node("Gemm", [nhwc(x), init(w, "w")] + ([init(b, "b")] if b is not None else []), [tmp], transB=1)
            else:
                if not o.keepNumDims:
                    raise ValueError(f"{tflite_path}: FULLY_CONNECTED on {xs} without keep_num_dims")
                mm = fresh("mm") if b is not None else tmp
                node("MatMul", [nhwc(x), init(np.ascontiguousarray(w.T), "w")], [mm])
                if b is not None:
                    node("Add", [mm, init(b, "b")], [tmp])
            finish(out, tmp, o.fusedActivationFunction, None)
        elif kind in ("ADD", "SUB", "MUL", "DIV", "SQUARED_DIFFERENCE"):
            a, bb = ins
            four = len(shape(out)) == 4 and all(layout.get(i) == "nchw" or const(i) is not None for i in ins)
            four = four and any(layout.get(i) == "nchw" for i in ins)

            def operand(i):
                c = const(i)
                if four:
                    if c is not None:
                        c4 = c.reshape([1] * (4 - c.ndim) + list(c.shape))
                        return init(c4.transpose(0, 3, 1, 2))
                    return nchw(i)
                return nhwc(i)

            tmp = fresh("bin")
            if kind == "SQUARED_DIFFERENCE":
                d = fresh("diff")
                node("Sub", [operand(a), operand(bb)], [d])
                node("Mul", [d, d], [tmp])
                fused = 0
            else:
                node(kind.capitalize(), [operand(a), operand(bb)], [tmp])
                fused = o.fusedActivationFunction if o is not None else 0
            finish(out, tmp, fused, "nchw" if four else None)
        elif kind in ("MEAN", "SUM"):
            x, axes = ins[0], [int(v) for v in const(ins[1]).reshape(-1)]
            rank = len(shape(x))
            axes = [a % rank for a in axes]
            if layout.get(x) == "nchw":
                to_nchw = [0, 2, 3, 1]  # NHWC axis a is NCHW axis to_nchw[a]
                src, axes = name(x), sorted(to_nchw[a] for a in axes)
                keep_layout = "nchw" if o.keepDims else None
            else:
                src, keep_layout = nhwc(x), None
            tmp = fresh("red")
            node("ReduceMean" if kind == "MEAN" else "ReduceSum", [src] if kind == "MEAN" else
                 [src, init(np.array(axes, np.int64))], [tmp], keepdims=int(bool(o.keepDims)),
                 **({"axes": axes} if kind == "MEAN" else {}))
            finish(out, tmp, 0, keep_layout)
        elif kind in ("RESHAPE", "SQUEEZE", "EXPAND_DIMS"):
            node("Reshape", [nhwc(ins[0]), init(np.array(shape(out), np.int64))], [name(out)])
        elif kind == "SOFTMAX":
            src = nhwc(ins[0])
            if o.beta != 1.0:
                scaled = fresh("beta")
                node("Mul", [src, init(np.float32(o.beta))], [scaled])
                src = scaled
            node("Softmax", [src], [name(out)], axis=-1)
        elif kind == "TRANSPOSE":
            node("Transpose", [nhwc(ins[0])], [name(out)], perm=[int(v) for v in const(ins[1])])
        elif kind == "BATCH_MATMUL":
            a, bb = nhwc(ins[0]), nhwc(ins[1])
            for flag, which in ((o.adjX, 0), (o.adjY, 1)):
                if flag:
                    r = len(shape(ins[which]))
                    t = fresh("adj")
                    perm = list(range(r - 2)) + [r - 1, r - 2]
                    node("Transpose", [a if which == 0 else bb], [t], perm=perm)
                    a, bb = (t, bb) if which == 0 else (a, t)
            node("MatMul", [a, bb], [name(out)])
        elif kind == "RSQRT":
            s = fresh("sqrt")
            node("Sqrt", [nhwc(ins[0])], [s])
            node("Reciprocal", [s], [name(out)])
        elif kind == "NEG":
            node("Neg", [nhwc(ins[0])], [name(out)])
        elif kind in ("RELU", "RELU6", "LOGISTIC", "TANH"):
            x = ins[0]
            src = name(x) if layout.get(x) == "nchw" else nhwc(x)
            if kind == "RELU6":
                node("Clip", [src, init(np.float32(0)), init(np.float32(6))], [name(out)])
            else:
                node({"RELU": "Relu", "LOGISTIC": "Sigmoid", "TANH": "Tanh"}[kind], [src], [name(out)])
            if layout.get(x) == "nchw":
                layout[out] = "nchw"
        elif kind == "PAD":
            p = const(ins[1])
            x = ins[0]
            if layout.get(x) == "nchw":
                p = p[[0, 3, 1, 2]]
                src = name(x)
                layout[out] = "nchw"
            else:
                src = nhwc(x)
            node("Pad", [src, init(np.concatenate([p[:, 0], p[:, 1]]).astype(np.int64))], [name(out)])
        else:
            raise ValueError(f"{tflite_path}: operator {kind} has no ONNX translation here")

    for i in g.outputs:  # bring outputs back to the .tflite layout
        if layout.get(i) == "nchw":
            raise ValueError(f"{tflite_path}: 4-D NCHW graph output not supported")
    inputs, pre = [], []
    for k, i in enumerate(g.inputs):
        inputs.append(helper.make_tensor_value_info(name(i), TensorProto.FLOAT, shape(i)))
    outputs = [helper.make_tensor_value_info(name(i), TensorProto.FLOAT, shape(i)) for i in g.outputs]
    graph = helper.make_graph(pre + nodes, Path(tflite_path).stem, inputs, outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="gen_calib_zoo")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, str(onnx_path))


def check_onnx(tflite_path: Path, onnx_path: Path, samples: np.ndarray) -> float:
    """Max |onnxruntime - LiteRT| over the samples (float models)."""
    import onnxruntime as ort
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_path=str(tflite_path),
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    inp, out = it.get_input_details()[0], it.get_output_details()[0]
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(onnx_path), so, providers=["CPUExecutionProvider"])
    worst = 0.0
    for x in samples:
        it.set_tensor(inp["index"], x.astype(np.float32))
        it.invoke()
        a = it.get_tensor(out["index"])
        b = sess.run(None, {"input_0": x.astype(np.float32)})[0]
        worst = max(worst, float(np.max(np.abs(a - b))))
    return worst


# ---------------------------------------------------------------- Keras (TF venv only)

def build_keras(keras, cfg, n_classes):
    """The Keras model of cfg (batch size 1 inputs are fixed at conversion)."""
    L = keras.layers
    arch = cfg["arch"]
    if arch == "mobilenetv2":
        s = cfg["size"]
        return keras.applications.MobileNetV2(input_shape=(s, s, 3), alpha=cfg["alpha"], weights=None,
                                              classes=n_classes, classifier_activation="softmax")
    if arch == "resnet":
        s = cfg["size"]
        inp = keras.Input((s, s, 3))
        w0 = cfg["widths"][0]
        x = L.Conv2D(w0, 3, padding="same", use_bias=False)(inp)
        x = L.ReLU()(L.BatchNormalization()(x))
        for stage, w in enumerate(cfg["widths"]):
            for blk in range(2):
                stride = 2 if blk == 0 else 1
                sc = x
                if stride != 1 or x.shape[-1] != w:
                    sc = L.BatchNormalization()(L.Conv2D(w, 1, strides=stride, use_bias=False)(x))
                h = L.ReLU()(L.BatchNormalization()(L.Conv2D(w, 3, strides=stride, padding="same",
                                                             use_bias=False)(x)))
                h = L.BatchNormalization()(L.Conv2D(w, 3, padding="same", use_bias=False)(h))
                x = L.ReLU()(L.Add()([h, sc]))
        x = L.GlobalAveragePooling2D()(x)
        return keras.Model(inp, L.Dense(n_classes, activation="softmax")(x))
    if arch == "ds_cnn":
        w = cfg["width"]
        inp = keras.Input((49, 20, 1))
        x = L.Conv2D(w, (10, 4), strides=(2, 2), padding="same", use_bias=False)(inp)
        x = L.ReLU()(L.BatchNormalization()(x))
        for _ in range(4):
            x = L.ReLU()(L.BatchNormalization()(L.DepthwiseConv2D(3, padding="same", use_bias=False)(x)))
            x = L.ReLU()(L.BatchNormalization()(L.Conv2D(w, 1, use_bias=False)(x)))
        x = L.AveragePooling2D(pool_size=(x.shape[1], x.shape[2]))(x)
        x = L.Flatten()(x)
        return keras.Model(inp, L.Dense(n_classes, activation="softmax")(x))
    if arch == "mlp":
        inp = keras.Input((32,))
        x = inp
        for u in cfg["units"]:
            x = L.Dense(u, activation="relu")(x)
        return keras.Model(inp, L.Dense(n_classes, activation="softmax")(x))
    if arch == "attention":
        d, heads = cfg["dim"], cfg["heads"]

        class PositionEmbedding(L.Layer):
            def build(self, shape):
                self.pos = self.add_weight(shape=(1, shape[1], shape[2]), initializer="random_normal")

            def call(self, x):
                return x + self.pos

        inp = keras.Input((49, 20))
        x = L.Dense(d, activation="relu")(inp)
        x = PositionEmbedding()(x)
        h = L.LayerNormalization(epsilon=1e-3)(x)
        h = L.MultiHeadAttention(heads, d // heads)(h, h)
        x = L.Add()([x, h])
        h = L.LayerNormalization(epsilon=1e-3)(x)
        h = L.Dense(2 * d, activation="relu")(h)
        h = L.Dense(d)(h)
        x = L.Add()([x, h])
        x = L.LayerNormalization(epsilon=1e-3)(x)
        x = L.GlobalAveragePooling1D()(x)
        return keras.Model(inp, L.Dense(n_classes, activation="softmax")(x))
    raise ValueError(arch)


def convert(tf, model, input_shape, calib=None):
    """Float .tflite bytes (calib None) or TF's full-integer int8 model on exactly `calib`."""
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    @tf.function(input_signature=[tf.TensorSpec([1, *input_shape], tf.float32, name="input_0")])
    def serve(x):
        return model(x, training=False)

    frozen = convert_variables_to_constants_v2(serve.get_concrete_function())
    conv = tf.lite.TFLiteConverter.from_concrete_functions([frozen])
    if calib is None:
        return conv.convert()

    def rep():
        for k in range(len(calib)):
            yield [calib[k:k + 1].astype(np.float32)]

    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = rep
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    return conv.convert()


def generate(name: str, cfg: dict, out: Path, log=print) -> dict:
    """Train cfg's model and write all of NAME's files to out; returns measured facts."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    import keras

    keras.utils.set_random_seed(cfg["seed"])
    tf.config.experimental.enable_op_determinism()
    n_classes = TASK_CLASSES[cfg["task"]]
    (xt, yt), (xc, yc), (xe, ye), (xs, ys) = splits(cfg)
    model = build_keras(keras, cfg, n_classes)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            # keras.applications' 0.999 would leave the moving statistics far from the data after
            # a few hundred steps (the float model then classifies at chance)
            layer.momentum = 0.9
    batch = cfg.get("batch", 64)
    steps = cfg["epochs"] * (len(xt) // batch)
    lr = keras.optimizers.schedules.CosineDecay(cfg.get("lr", 2e-3), steps)
    model.compile(optimizer=keras.optimizers.Adam(lr), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    t0 = time.time()
    if cfg.get("fresh"):
        # new samples every epoch (seeds apart from the calibration / eval / test splits'): a
        # MobileNetV2 memorises a fixed 3000-image set (90 % train, 41 % test accuracy) long
        # before it learns the shapes
        for epoch in range(cfg["epochs"]):
            xt, yt = task_data(cfg, cfg["seed"] * 1000 + FRESH_SEED + epoch, cfg["train"])
            log(f"{name}: epoch {epoch + 1}/{cfg['epochs']} on {len(xt)} new samples")
            model.fit(xt, yt, batch_size=batch, epochs=1, shuffle=True, verbose=2)
    else:
        model.fit(xt, yt, batch_size=batch, epochs=cfg["epochs"], shuffle=True, verbose=2)
    train_s = time.time() - t0
    acc_train = float(np.mean(np.argmax(model.predict(xt[:1000], verbose=0), -1) == yt[:1000]))
    acc_test = float(np.mean(np.argmax(model.predict(xs, verbose=0), -1) == ys))
    acc_eval = float(np.mean(np.argmax(model.predict(xe, verbose=0), -1) == ye))
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}_float.tflite").write_bytes(convert(tf, model, xt.shape[1:]))
    t0 = time.time()
    (out / f"{name}_tf_int8.tflite").write_bytes(convert(tf, model, xt.shape[1:], xc))
    tf_int8_s = time.time() - t0
    save_npz(out / f"{name}_calib.npz", input_0=xc)
    save_npz(out / f"{name}_eval.npz", input_0=xe, labels=ye.astype(np.int64))
    tflite_to_onnx(out / f"{name}_float.tflite", out / f"{name}.onnx")
    err = check_onnx(out / f"{name}_float.tflite", out / f"{name}.onnx", xe[:16, None])
    facts = dict(name=name, params=int(model.count_params()), train_s=train_s, tf_int8_s=tf_int8_s,
                 acc_train=acc_train,
                 acc_test=acc_test, acc_eval=acc_eval, onnx_err=err,
                 sizes={p.name: p.stat().st_size for p in sorted(out.glob(f"{name}[._]*"))},
                 sha={p.name: sha256(p) for p in sorted(out.glob(f"{name}_*.npz"))})
    log(f"{name}: {facts['params']} params, trained {train_s:.0f} s, accuracy train {acc_train:.3f} "
        f"test {acc_test:.3f} eval {acc_eval:.3f}, |onnx - tflite| {err:.2e}")
    return facts


def write_manifest(out: Path) -> None:
    """MANIFEST.txt: sha256 of every npz in out (what the converter saw; --derived checks against it)."""
    lines = ["# sha256 of the calibration / evaluation data (tools/gen_calib_zoo.py --derived checks these)"]
    lines += [f"{sha256(p)}  {p.name}" for p in sorted(out.glob("*.npz"))]
    (out / "MANIFEST.txt").write_text("\n".join(lines) + "\n")


def derived(out: Path, models, log=print) -> None:
    """Rebuild the uncommitted npz and .onnx files of `models` in out (no TF) and check the npz
    against MANIFEST.txt."""
    manifest = {}
    mf = out / "MANIFEST.txt"
    if mf.exists():
        for line in mf.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                h, f = line.split()
                manifest[f] = h
    for name, cfg in models.items():
        if not (out / f"{name}_float.tflite").exists():
            continue
        need_npz = not (out / f"{name}_calib.npz").exists() or not (out / f"{name}_eval.npz").exists()
        if need_npz:
            _, (xc, _), (xe, ye), _ = splits(cfg)
            save_npz(out / f"{name}_calib.npz", input_0=xc)
            save_npz(out / f"{name}_eval.npz", input_0=xe, labels=ye.astype(np.int64))
        for f in (f"{name}_calib.npz", f"{name}_eval.npz"):
            if f in manifest and sha256(out / f) != manifest[f]:
                raise SystemExit(f"error: {out / f}: regenerated data differ from MANIFEST.txt "
                                 "(another numpy version?); regenerate the zoo with TensorFlow")
        if not (out / f"{name}.onnx").exists():
            tflite_to_onnx(out / f"{name}_float.tflite", out / f"{name}.onnx")
            xe = np.load(out / f"{name}_eval.npz")["input_0"]
            err = check_onnx(out / f"{name}_float.tflite", out / f"{name}.onnx", xe[:8])
            if err > 1e-4:
                raise SystemExit(f"error: {out / name}.onnx differs from the float .tflite by {err:.2e}")
            log(f"{name}.onnx written (|onnx - tflite| {err:.1e})")


DESCRIPTIONS = {
    "mobilenetv2": lambda c: f"keras.applications.MobileNetV2, width {c['alpha']}, {c['size']}x{c['size']}x3",
    "resnet": lambda c: f"ResNet-style: 3 stages x 2 basic blocks (widths {'/'.join(map(str, c['widths']))}), "
                        f"residual adds, {c['size']}x{c['size']}x3",
    "ds_cnn": lambda c: f"DS-CNN: conv 10x4 + 4 depthwise-separable blocks (width {c['width']}), 49x20x1",
    "mlp": lambda c: f"MLP {'-'.join(map(str, (32, *c['units'])))}-8, relu",
    "attention": lambda c: f"dense embedding + positions, 1 pre-LN block: MultiHeadAttention "
                           f"({c['heads']} heads, dim {c['dim']}), LayerNorm, FFN; mean over time; [49, 20]",
}


def models_table(out: Path, table=None) -> str:
    """The markdown table of the models in out (the last facts.txt entry per model)."""
    import ast

    table = table or {**MODELS, **HELDOUT}
    facts = {}
    for line in (out / "facts.txt").read_text().splitlines():
        if line.strip():
            d = ast.literal_eval(line)
            facts[d["name"]] = d
    rows = ["| model | task | architecture | parameters | float accuracy: test (1000) / eval (128) | "
            "training (s) | TF conversion (s) | float .tflite | |ONNX - tflite| |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, cfg in table.items():
        if name not in facts:
            continue
        f = facts[name]
        rows.append(f"| `{name}` | {cfg['task']} | {DESCRIPTIONS[cfg['arch']](cfg)} | {f['params']:,} "
                    f"| {100 * f['acc_test']:.1f} % / {100 * f['acc_eval']:.1f} % | {f['train_s']:.0f} "
                    f"| {f.get('tf_int8_s', float('nan')):.1f} | {f['sizes'].get(name + '_float.tflite', 0):,} B "
                    f"| {f['onnx_err']:.1e} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(ROOT / "models" / "calib"))
    p.add_argument("--models", default="", help="comma-separated subset (default: all)")
    p.add_argument("--heldout", metavar="DIR", help="write the held-out zoo (other seeds / sizes) to DIR")
    p.add_argument("--derived", action="store_true", help="rebuild uncommitted npz / .onnx files (no TF)")
    p.add_argument("--table", action="store_true", help="print the models table of DIR/facts.txt (no TF)")
    args = p.parse_args(argv)
    table = HELDOUT if args.heldout else MODELS
    out = Path(args.heldout or args.out)
    if args.heldout and Path(args.heldout).resolve().is_relative_to(ROOT):
        p.error(f"--heldout {args.heldout}: write held-out models outside the repository")
    names = [m for m in args.models.split(",") if m] or list(table)
    for m in names:
        if m not in table:
            p.error(f"unknown model '{m}' (expected {', '.join(table)})")
    if args.table:
        print(models_table(out, {m: table[m] for m in names}))
        return 0
    if args.derived:
        derived(out, {m: table[m] for m in names})
        return 0
    for m in names:
        facts = generate(m, table[m], out)
        with open(out / "facts.txt", "a") as f:
            f.write(repr(facts) + "\n")
        write_manifest(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
