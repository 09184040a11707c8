#!/usr/bin/env python3
"""Generate the transformer zoo (models/transformers/, issue 22): three small
transformer encoders, trained for a few seconds on synthetic labelled tasks so
that weights and activations look like a trained network's, exported as

    NAME.tflite           int8 full-integer model (int8 input/output)
    NAME_16x8.tflite      int16 activations, int8 weights (int16 input/output)
    NAME_float.tflite     float32 export of the same Keras model
    NAME_calib.npz        the representative dataset (calibration, both converters)
    NAME_heldout.npz      held-out samples from the same distribution
    NAME_weights.npz      the trained Keras weights, keyed by Keras variable path
    onnx/VARIANT_float.onnx, onnx/VARIANT_{qdq_u8,qdq_s8,qop_u8}.onnx
                          the same encoder built with onnx.helper from NAME_weights.npz,
                          statically quantized with onnxruntime's quantize_static

The models (names are the NAME above):

    vit_tiny     ViT-style image classifier: 16x16x3 input, 4x4 patches (stride-4
                 Conv2D), class token, learned positions, 2 pre-LN blocks with Keras
                 MultiHeadAttention (2 heads, dim 32), GELU MLP, class-token head.
    bert_tiny    BERT-style encoder on token features [1, 16, 32]: dense embedding,
                 learned positions, embedding LayerNorm, 2 post-LN blocks with
                 hand-written softmax attention (2 heads), GELU MLP, first-token
                 pooler (dense + tanh), classifier.
    kws_attn     attention keyword spotter on MFCC-like [1, 49, 10]: dense+ReLU
                 front end per frame, learned positions, 1 pre-LN attention block
                 (2 heads), mean over time, classifier.

ONNX variants: vit_tiny, bert_tiny, kws_attn use opset-17 LayerNormalization and GELU
spelled with Erf (x * 0.5 * (1 + Erf(x / sqrt 2))); bert_tiny_msgelu uses
com.microsoft Gelu instead; vit_tiny_handln spells every layer norm by hand
(ReduceMean / Sub / Pow / ReduceMean / Add / Sqrt / Div / Mul / Add).

TensorFlow is NOT a dependency of qdialect; generation runs in its own virtualenv
(tensorflow-cpu, numpy, onnx, onnxruntime), as tools/gen_zoo.py documents:

    /work/tfvenv/bin/python tools/gen_transformer_zoo.py [--out models/transformers]
    /work/tfvenv/bin/python tools/gen_transformer_zoo.py --heldout /tmp/tz_heldout

--heldout OUTDIR writes the same kinds of files for differently sized encoders
(other dims, head counts, sequence lengths, depths, seeds) outside the repository,
for testing on models nobody tuned on; never commit them.

Two modes need no TensorFlow (the project venv: numpy, onnx, onnxruntime,
ai-edge-litert):

    .venv/bin/python tools/gen_transformer_zoo.py --onnx [--out DIR]
        rebuild DIR/onnx/ from DIR/NAME_weights.npz and the calibration data
    .venv/bin/python tools/gen_transformer_zoo.py --verify [--out DIR]
        run every .tflite with LiteRT (default resolver and BUILTIN_REF) and every
        .onnx with onnxruntime (default options and ORT_DISABLE_ALL) on the held-out
        samples, print the operator histograms, and rewrite the generated section
        of DIR/README.md

Determinism: data come from numpy generators with fixed seeds; Keras initialisers
and training are seeded (keras.utils.set_random_seed) and run with TensorFlow's op
determinism on one thread; the training batches are in a fixed order.

npz layout is the qd-run / qd-quantize contract of models/zoo: arrays input_0, ...
in the model's input order, float32, each a stack (N, *model_input_shape) with
batch-1 model inputs. The ONNX models take the same inputs as the .tflite ones
(the ONNX ViT too: NHWC input and one Transpose to NCHW before its Conv, as tf2onnx
exports a Keras model), so one NAME_calib.npz / NAME_heldout.npz serves both.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import logging
import math
import os
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_zoo  # noqa: E402 - the TFLite zoo's converter, npz writer and flatbuffer reader

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "models" / "transformers"
N_CALIB = gen_zoo.N_CALIB      # 32, the converter's representative dataset
N_HELDOUT = gen_zoo.N_HELDOUT  # 16
N_TRAIN = 2048
BATCH = 64
GEN_BEGIN = "<!-- generated:begin -->"
GEN_END = "<!-- generated:end -->"
LN_EPS = 1e-3  # Keras LayerNormalization's default epsilon; the ONNX graphs use the same


# --------------------------------------------------------------------------------------
# Configurations
# --------------------------------------------------------------------------------------

ZOO = {
    "vit_tiny": dict(kind="vit", image=16, patch=4, channels=3, dim=32, heads=2, blocks=2,
                     mlp=64, classes=4, pool="cls", seed=301, epochs=6),
    "bert_tiny": dict(kind="bert", seq=16, features=32, dim=32, heads=2, blocks=2, mlp=64,
                      classes=4, seed=302, epochs=8),
    "kws_attn": dict(kind="kws", frames=49, mfcc=10, dim=32, heads=2, blocks=1, mlp=64,
                     classes=6, seed=303, epochs=8),
}

# held-out encoders: other sizes, head counts, sequence lengths, depths and seeds
HELDOUT = {
    "vit_h48": dict(kind="vit", image=20, patch=4, channels=3, dim=48, heads=3, blocks=1,
                    mlp=96, classes=4, pool="mean", seed=401, epochs=5),
    "vit_h24": dict(kind="vit", image=12, patch=3, channels=3, dim=24, heads=1, blocks=3,
                    mlp=48, classes=4, pool="cls", seed=402, epochs=6),
    "bert_s8": dict(kind="bert", seq=8, features=24, dim=24, heads=3, blocks=2, mlp=96,
                    classes=4, seed=403, epochs=8),
    "bert_s20": dict(kind="bert", seq=20, features=16, dim=48, heads=1, blocks=3, mlp=64,
                     classes=4, seed=404, epochs=6),
    "kws_h3": dict(kind="kws", frames=20, mfcc=12, dim=24, heads=3, blocks=2, mlp=48,
                   classes=6, seed=405, epochs=8),
}

# ONNX spellings per trained model: variant name -> (gelu, layer norm)
ONNX_SPELLINGS = {
    "vit": {"": ("erf", "op"), "_handln": ("erf", "hand")},
    "bert": {"": ("erf", "op"), "_msgelu": ("ms", "op")},
    "kws": {"": ("erf", "op")},
}
HELDOUT_SPELLINGS = {  # held-out mode: the other spelling on the other models
    "vit": {"": ("ms", "op")},
    "bert": {"": ("erf", "hand")},
    "kws": {"": ("erf", "op"), "_handln_msgelu": ("ms", "hand")},
}


def input_shape(cfg) -> tuple[int, ...]:
    """Model input shape without the batch dimension (NHWC for images)."""
    if cfg["kind"] == "vit":
        return (cfg["image"], cfg["image"], cfg["channels"])
    if cfg["kind"] == "bert":
        return (cfg["seq"], cfg["features"])
    return (cfg["frames"], cfg["mfcc"])


# --------------------------------------------------------------------------------------
# Synthetic labelled tasks (numpy only)
# --------------------------------------------------------------------------------------

def task_vit(cfg, rng, n):
    """Oriented colour gratings: class = orientation (0, 45, 90, 135 degrees), with
    random frequency, phase, colour mix, contrast, brightness and pixel noise.
    Values roughly in [-1, 1]."""
    s, c = cfg["image"], cfg["channels"]
    y = rng.integers(0, cfg["classes"], size=n)
    theta = y * np.pi / cfg["classes"] + rng.normal(0.0, 0.08, size=n)
    freq = rng.uniform(0.25, 0.6, size=n)
    phase = rng.uniform(0.0, 2 * np.pi, size=n)
    r, col = np.meshgrid(np.arange(s), np.arange(s), indexing="ij")
    proj = (np.cos(theta)[:, None, None] * col + np.sin(theta)[:, None, None] * r)
    wave = np.sin(freq[:, None, None] * 2 * np.pi * proj / 4.0 + phase[:, None, None])
    mix = rng.uniform(0.3, 1.0, size=(n, 1, 1, c))
    contrast = rng.uniform(0.4, 0.9, size=(n, 1, 1, 1))
    bright = rng.uniform(-0.3, 0.3, size=(n, 1, 1, c))
    x = bright + contrast * mix * wave[..., None] + rng.normal(0.0, 0.15, size=(n, s, s, c))
    return np.clip(x, -1.5, 1.5).astype(np.float32), y


def task_bert(cfg, rng, n):
    """Token features: each token is one of 24 vocabulary vectors (fixed, seeded)
    plus noise. Class = which of the marker tokens 0..classes-1 occurs most often
    (the label's marker is planted 3-5 times, the others 0-2 times)."""
    t, f, k = cfg["seq"], cfg["features"], cfg["classes"]
    vocab = np.random.default_rng(cfg["seed"] + 7).normal(0.0, 1.0, size=(24, f))
    y = rng.integers(0, k, size=n)
    ids = rng.integers(k, 24, size=(n, t))
    for i in range(n):
        slots = rng.permutation(t)
        pos = 0
        planted = int(rng.integers(3, 6)) if t >= 12 else 2
        for m in range(k):
            cnt = planted if m == y[i] else int(rng.integers(0, min(planted, 3)))
            ids[i, slots[pos:pos + cnt]] = m
            pos += cnt
    x = vocab[ids] * rng.uniform(0.7, 1.3, size=(n, 1, 1)) + rng.normal(0.0, 0.2, size=(n, t, f))
    return x.astype(np.float32), y


def task_kws(cfg, rng, n):
    """MFCC-like [frames, coefficients]: a smooth background plus a Gaussian
    'word' bump whose coefficient index follows a class-specific trajectory over a
    random stretch of time: rising, falling, flat low, flat high, two bursts, none.
    Values roughly in [-4, 4]."""
    tf_, m = cfg["frames"], cfg["mfcc"]
    y = rng.integers(0, cfg["classes"], size=n)
    x = np.zeros((n, tf_, m))
    tt = np.arange(tf_)[:, None]
    ff = np.arange(m)[None, :]
    for i in range(n):
        bg = rng.normal(0.0, 0.6, size=(1, m)) + rng.normal(0.0, 0.4, size=(tf_, m))
        start = rng.uniform(0.1, 0.4) * tf_
        length = rng.uniform(0.35, 0.55) * tf_
        u = np.clip((tt - start) / length, 0.0, 1.0)
        inside = ((tt >= start) & (tt <= start + length)).astype(float)
        c = y[i]
        if c == 0:
            centre = 1 + u * (m - 3)
        elif c == 1:
            centre = (m - 2) - u * (m - 3)
        elif c == 2:
            centre = np.full_like(u, 2.0)
        elif c == 3:
            centre = np.full_like(u, m - 3.0)
        elif c == 4:
            centre = np.full_like(u, m / 2.0)
            inside = inside * ((u < 0.35) | (u > 0.65))
        else:
            inside = inside * 0.0
            centre = np.full_like(u, m / 2.0)
        amp = rng.uniform(2.0, 3.5)
        bump = amp * inside * np.exp(-0.5 * ((ff - centre) / 1.2) ** 2)
        x[i] = np.clip(bg + bump, -4.0, 4.0)
    return x.astype(np.float32), y


TASKS = {"vit": task_vit, "bert": task_bert, "kws": task_kws}


def samples(cfg, seed, n):
    """(x, y): x has shape (n, *input_shape)."""
    return TASKS[cfg["kind"]](cfg, np.random.default_rng(seed), n)


def npz_stack(x):
    """The qd-run npz contract: input_0 of shape (N, 1, *input_shape)."""
    return {"input_0": np.ascontiguousarray(x[:, None]).astype(np.float32)}


# --------------------------------------------------------------------------------------
# Keras models (TensorFlow venv only)
# --------------------------------------------------------------------------------------

def keras_layers(keras):
    """Two small layers holding learned tensors: a class token and positions."""
    ops = keras.ops

    class ClassToken(keras.layers.Layer):
        def build(self, shape):
            self.token = self.add_weight(shape=(1, 1, shape[-1]), initializer="zeros", name="token")

        def call(self, x):
            tok = ops.broadcast_to(self.token, (ops.shape(x)[0], 1, x.shape[-1]))
            return ops.concatenate([tok, x], axis=1)

    class PositionEmbedding(keras.layers.Layer):
        def build(self, shape):
            self.pos = self.add_weight(shape=(1, shape[1], shape[2]),
                                       initializer=keras.initializers.RandomNormal(stddev=0.02),
                                       name="pos")

        def call(self, x):
            return x + self.pos

    class LayerNormMul(keras.layers.Layer):
        """keras.layers.LayerNormalization (same weights, same epsilon) spelled
        d = x - mean(x); y = d * (rsqrt(mean(d * d) + eps) * gamma) + beta.
        Used for the 16x8 models only: Keras' own spelling (tf.nn.moments'
        SQUARED_DIFFERENCE and -mean * inv, a NEG) has no 16x8 conversion in TF 2.21
        (the converter refuses NEG) and, with TFLITE_BUILTINS as fallback, becomes an
        int16 SQUARED_DIFFERENCE that LiteRT 2.3.0 refuses to run."""

        def __init__(self, epsilon, **kw):
            super().__init__(**kw)
            self.epsilon = epsilon

        def build(self, shape):
            self.gamma = self.add_weight(shape=(shape[-1],), initializer="ones", name="gamma")
            self.beta = self.add_weight(shape=(shape[-1],), initializer="zeros", name="beta")

        def call(self, x):
            d = x - ops.mean(x, axis=-1, keepdims=True)
            var = ops.mean(d * d, axis=-1, keepdims=True)
            return d * (ops.rsqrt(var + self.epsilon) * self.gamma) + self.beta

    return ClassToken, PositionEmbedding, LayerNormMul


def _attention(keras, x, cfg, p):
    """Hand-written multi-head softmax attention (Dense q/k/v, reshape, transpose,
    Q.K^T, scale, softmax, P.V, transpose back, output Dense)."""
    L, ops = keras.layers, keras.ops
    d, h = cfg["dim"], cfg["heads"]
    hd = d // h
    t = x.shape[1]

    def heads(z):
        return ops.transpose(L.Reshape((t, h, hd))(z), (0, 2, 1, 3))

    q = heads(L.Dense(d, name=p + "q")(x))
    k = heads(L.Dense(d, name=p + "k")(x))
    v = heads(L.Dense(d, name=p + "v")(x))
    s = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) * (1.0 / math.sqrt(hd))
    a = ops.softmax(s, axis=-1)
    o = ops.transpose(ops.matmul(a, v), (0, 2, 1, 3))
    o = L.Reshape((t, d))(o)
    return L.Dense(d, name=p + "o")(o)


def _mlp(keras, x, cfg, p):
    L = keras.layers
    h = L.Dense(cfg["mlp"], activation="gelu", name=p + "fc1")(x)
    return L.Dense(cfg["dim"], name=p + "fc2")(h)


def build_keras(keras, cfg, batch_size, layernorm="keras"):
    """layernorm: "keras" (keras.layers.LayerNormalization) or "mul" (LayerNormMul)."""
    ops = keras.ops
    ClassToken, PositionEmbedding, LayerNormMul = keras_layers(keras)

    class L:  # keras.layers with the chosen layer norm
        def __getattr__(self, name):
            return getattr(keras.layers, name)

        @staticmethod
        def LayerNormalization(epsilon, name):
            if layernorm == "mul":
                return LayerNormMul(epsilon, name=name)
            return keras.layers.LayerNormalization(epsilon=epsilon, name=name)

    L = L()
    x_in = keras.Input(shape=input_shape(cfg), batch_size=batch_size, name="input_0")
    d = cfg["dim"]
    if cfg["kind"] == "vit":
        n = (cfg["image"] // cfg["patch"]) ** 2
        x = L.Conv2D(d, cfg["patch"], strides=cfg["patch"], name="patch")(x_in)
        x = L.Reshape((n, d), name="patch_reshape")(x)
        if cfg["pool"] == "cls":
            x = ClassToken(name="cls")(x)
        x = PositionEmbedding(name="pos")(x)
        for b in range(cfg["blocks"]):
            p = f"block{b}_"
            h = L.LayerNormalization(epsilon=LN_EPS, name=p + "ln1")(x)
            h = L.MultiHeadAttention(cfg["heads"], d // cfg["heads"], name=p + "mha")(h, h)
            x = L.Add(name=p + "add1")([x, h])
            h = L.LayerNormalization(epsilon=LN_EPS, name=p + "ln2")(x)
            x = L.Add(name=p + "add2")([x, _mlp(keras, h, cfg, p)])
        x = L.LayerNormalization(epsilon=LN_EPS, name="final_ln")(x)
        x = x[:, 0, :] if cfg["pool"] == "cls" else ops.mean(x, axis=1)
        x = L.Dense(cfg["classes"], name="head")(x)
    elif cfg["kind"] == "bert":
        x = L.Dense(d, name="embed")(x_in)
        x = PositionEmbedding(name="pos")(x)
        x = L.LayerNormalization(epsilon=LN_EPS, name="embed_ln")(x)
        for b in range(cfg["blocks"]):
            p = f"block{b}_"
            x = L.Add(name=p + "add1")([x, _attention(keras, x, cfg, p)])
            x = L.LayerNormalization(epsilon=LN_EPS, name=p + "ln1")(x)
            x = L.Add(name=p + "add2")([x, _mlp(keras, x, cfg, p)])
            x = L.LayerNormalization(epsilon=LN_EPS, name=p + "ln2")(x)
        x = L.Dense(d, activation="tanh", name="pooler")(x[:, 0, :])
        x = L.Dense(cfg["classes"], name="head")(x)
    else:  # kws
        x = L.Dense(d, activation="relu", name="frontend")(x_in)
        x = PositionEmbedding(name="pos")(x)
        for b in range(cfg["blocks"]):
            p = f"block{b}_"
            h = L.LayerNormalization(epsilon=LN_EPS, name=p + "ln1")(x)
            x = L.Add(name=p + "add1")([x, _attention(keras, h, cfg, p)])
            h = L.LayerNormalization(epsilon=LN_EPS, name=p + "ln2")(x)
            x = L.Add(name=p + "add2")([x, _mlp(keras, h, cfg, p)])
        x = L.LayerNormalization(epsilon=LN_EPS, name="final_ln")(x)
        x = ops.mean(x, axis=1)
        x = L.Dense(cfg["classes"], name="head")(x)
    x = L.Softmax(name="probs")(x)
    return keras.Model(x_in, x, name=cfg["kind"])


def train_and_export(tf, keras, name, cfg, out: Path) -> dict:
    """Train briefly, write the TFLite models and the npz data and weights."""
    keras.backend.clear_session()  # fresh auto names: each model's bytes independent of --only
    keras.utils.set_random_seed(cfg["seed"])
    model = build_keras(keras, cfg, None)
    xtr, ytr = samples(cfg, cfg["seed"] + 1, N_TRAIN)
    xte, yte = samples(cfg, cfg["seed"] + 2, 512)
    model.compile(optimizer=keras.optimizers.Adam(3e-3),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(xtr, ytr, batch_size=BATCH, epochs=cfg["epochs"], shuffle=False, verbose=0)
    acc = float(np.mean(np.argmax(model.predict(xte, batch_size=256, verbose=0), -1) == yte))
    print(f"{name}: {model.count_params()} parameters, test accuracy {acc:.3f} "
          f"after {cfg['epochs']} epochs", flush=True)

    export = build_keras(keras, cfg, 1)  # static batch 1: no SHAPE/PACK ops in the graphs
    export.set_weights(model.get_weights())
    export16 = build_keras(keras, cfg, 1, layernorm="mul")  # see LayerNormMul
    export16.set_weights(model.get_weights())
    calib = npz_stack(samples(cfg, cfg["seed"] + 3, N_CALIB)[0])
    held = npz_stack(samples(cfg, cfg["seed"] + 4, N_HELDOUT)[0])
    gen_zoo._savez(out / f"{name}_calib.npz", calib)
    gen_zoo._savez(out / f"{name}_heldout.npz", held)
    weights = {v.path: np.asarray(v.numpy(), np.float32) for v in export.weights}
    gen_zoo._savez(out / f"{name}_weights.npz", weights)
    files = {}
    for suffix, mode in (("", "int8"), ("_16x8", "16x8"), ("_float", "float")):
        buf = gen_zoo._convert(tf, export16 if mode == "16x8" else export, calib, mode)
        (out / f"{name}{suffix}.tflite").write_bytes(buf)
        files[f"{name}{suffix}.tflite"] = len(buf)
        print(f"  {name}{suffix}.tflite {len(buf):8d} B", flush=True)
    return {"name": name, "config": cfg, "parameters": int(model.count_params()),
            "test_accuracy": acc, "files": files}


def generate(out: Path, configs: dict, spellings: dict, heldout: bool = False,
             all_configs: dict | None = None) -> int:
    """Train and export `configs` into out; all_configs (default: configs) orders
    the manifest when --only regenerates some of a directory's models."""
    all_configs = all_configs or configs
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.experimental.enable_op_determinism()
    import keras

    out.mkdir(parents=True, exist_ok=True)
    records = [train_and_export(tf, keras, name, cfg, out)
               for name, cfg in configs.items()]
    path = out / "manifest.json"
    if path.exists():  # --only: keep the other models' records
        done = {r["name"] for r in records}
        old = [r for r in json.loads(path.read_text())["models"]
               if r["name"] not in done and r["name"] in all_configs]
        records = sorted(old + records, key=lambda r: list(all_configs).index(r["name"]))
    manifest = {"tensorflow": tf.__version__, "keras": keras.__version__,
                "heldout": heldout, "models": records}
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    build_onnx_all(out, configs, spellings)
    return 0


# --------------------------------------------------------------------------------------
# ONNX graphs from the trained weights (numpy, onnx, onnxruntime)
# --------------------------------------------------------------------------------------

def _onnx_builder():
    import gen_onnx_zoo
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    class TransformerGraph(gen_onnx_zoo.G):
        """The ONNX zoo's graph builder with transformer layers whose weights come
        from the trained Keras model (keyed by Keras variable path)."""

        def __init__(self, name, weights, gelu, layernorm):
            super().__init__(name, seed=0)
            self.weights = weights
            self.gelu_spelling = gelu
            self.ln_spelling = layernorm

        def w(self, path, prefix="w"):
            return self.const(np.asarray(self.weights[path], np.float32), prefix)

        def first_token(self, x):
            """x[:, 0, :] as Gather with a scalar index (G.const would make it 1-D)."""
            name = self._id("index")
            self.inits.append(numpy_helper.from_array(np.array(0, np.int64), name))
            return self.op("Gather", [x, name], axis=1)

        def f32(self, value, prefix="k"):
            return self.const(np.asarray(value, np.float32), prefix)

        def dense(self, x, layer, act=None):
            kernel = np.asarray(self.weights[f"{layer}/kernel"], np.float32)
            y = self.op("MatMul", [x, self.const(kernel.reshape(kernel.shape[0], -1), "w")])
            y = self.op("Add", [y, self.const(np.asarray(self.weights[f"{layer}/bias"],
                                                         np.float32).reshape(-1), "b")])
            if act == "gelu":
                y = self.gelu(y)
            elif act == "relu":
                y = self.op("Relu", [y])
            elif act == "tanh":
                y = self.op("Tanh", [y])
            return y

        def gelu(self, x):
            if self.gelu_spelling == "ms":
                return self.op("Gelu", [x], domain="com.microsoft")
            e = self.op("Erf", [self.op("Div", [x, self.f32(math.sqrt(2.0))])])
            h = self.op("Mul", [x, self.op("Add", [e, self.f32(1.0)])])
            return self.op("Mul", [h, self.f32(0.5)])

        def layernorm(self, x, layer):
            gamma, beta = self.w(f"{layer}/gamma", "gamma"), self.w(f"{layer}/beta", "beta")
            if self.ln_spelling == "op":
                return self.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=LN_EPS)
            mean = self.op("ReduceMean", [x], axes=[-1], keepdims=1)
            centred = self.op("Sub", [x, mean])
            var = self.op("ReduceMean", [self.op("Pow", [centred, self.f32(2.0)])],
                          axes=[-1], keepdims=1)
            std = self.op("Sqrt", [self.op("Add", [var, self.f32(LN_EPS)])])
            return self.op("Add", [self.op("Mul", [self.op("Div", [centred, std]), gamma]), beta])

        def attention(self, x, cfg, tokens, q, k, v, o):
            """q/k/v/o: (kernel path, bias path) per projection; kernels reshaped to
            [dim, dim] (MultiHeadAttention keeps [dim, heads, head_dim])."""
            d, h = cfg["dim"], cfg["heads"]
            hd = d // h

            def proj(z, kb):
                kernel = np.asarray(self.weights[kb[0]], np.float32).reshape(d, d)
                y = self.op("MatMul", [z, self.const(kernel, "w")])
                return self.op("Add", [y, self.const(np.asarray(self.weights[kb[1]],
                                                                np.float32).reshape(-1), "b")])

            def split(z, perm):
                return self.op("Transpose", [self.op("Reshape", [z, self.i64([1, tokens, h, hd])])],
                               perm=perm)

            qh = split(proj(x, q), [0, 2, 1, 3])            # [1, h, t, hd]
            kt = split(proj(x, k), [0, 2, 3, 1])            # [1, h, hd, t]
            vh = split(proj(x, v), [0, 2, 1, 3])
            s = self.op("Div", [self.op("MatMul", [qh, kt]), self.f32(math.sqrt(hd))])
            a = self.op("Softmax", [s], axis=-1)
            c = self.op("Transpose", [self.op("MatMul", [a, vh])], perm=[0, 2, 1, 3])
            c = self.op("Reshape", [c, self.i64([1, tokens, d])])
            return proj(c, o)

        def model(self):
            graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
            opsets = [helper.make_opsetid("", gen_onnx_zoo.OPSET)]
            if any(n.domain == "com.microsoft" for n in self.nodes):
                opsets.append(helper.make_opsetid("com.microsoft", 1))
            m = helper.make_model(graph, opset_imports=opsets,
                                  producer_name="qdialect.gen_transformer_zoo",
                                  producer_version="1", ir_version=gen_onnx_zoo.IR_VERSION)
            strict = len(opsets) == 1  # ONNX has no shape function for com.microsoft ops
            m = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=strict)
            for o in m.graph.output:  # not inferred past a com.microsoft op
                if not o.type.tensor_type.HasField("shape"):
                    for dim in self.output_shape:
                        o.type.tensor_type.shape.dim.add().dim_value = dim
            onnx.checker.check_model(m, full_check=strict)
            return m

    return TransformerGraph, TensorProto


def build_onnx(name, cfg, weights, gelu, layernorm, graph_name):
    TransformerGraph, _ = _onnx_builder()
    g = TransformerGraph(graph_name, weights, gelu, layernorm)
    d = cfg["dim"]
    if cfg["kind"] == "vit":
        ps, s = cfg["patch"], cfg["image"]
        n = (s // ps) ** 2
        # NHWC input, as tf2onnx exports a Keras model: one Transpose to NCHW for the Conv
        x = g.input("input_0", (1, s, s, cfg["channels"]))
        x = g.op("Transpose", [x], perm=[0, 3, 1, 2])
        kernel = np.asarray(weights["patch/kernel"], np.float32).transpose(3, 2, 0, 1)
        x = g.op("Conv", [x, g.const(kernel, "w"), g.w("patch/bias", "b")],
                 kernel_shape=[ps, ps], strides=[ps, ps])            # [1, d, s/p, s/p]
        x = g.op("Transpose", [g.op("Reshape", [x, g.i64([1, d, n])])], perm=[0, 2, 1])
        tokens = n
        if cfg["pool"] == "cls":
            x = g.op("Concat", [g.w("cls/token", "cls"), x], axis=1)
            tokens += 1
        x = g.op("Add", [x, g.w("pos/pos", "pos")])
        for b in range(cfg["blocks"]):
            p = f"block{b}_"
            h = g.layernorm(x, p + "ln1")
            h = g.attention(h, cfg, tokens,
                            *[(f"{p}mha/{m}/kernel", f"{p}mha/{m}/bias")
                              for m in ("query", "key", "value", "attention_output")])
            x = g.op("Add", [x, h])
            h = g.layernorm(x, p + "ln2")
            x = g.op("Add", [x, g.dense(g.dense(h, p + "fc1", "gelu"), p + "fc2")])
        x = g.layernorm(x, "final_ln")
        if cfg["pool"] == "cls":
            x = g.first_token(x)
        else:
            x = g.op("ReduceMean", [x], axes=[1], keepdims=0)
        x = g.dense(x, "head")
    elif cfg["kind"] == "bert":
        tokens = cfg["seq"]
        x = g.input("input_0", (1, tokens, cfg["features"]))
        x = g.op("Add", [g.dense(x, "embed"), g.w("pos/pos", "pos")])
        x = g.layernorm(x, "embed_ln")
        for b in range(cfg["blocks"]):
            p = f"block{b}_"
            a = g.attention(x, cfg, tokens,
                            *[(f"{p}{m}/kernel", f"{p}{m}/bias") for m in "qkvo"])
            x = g.layernorm(g.op("Add", [x, a]), p + "ln1")
            x = g.layernorm(g.op("Add", [x, g.dense(g.dense(x, p + "fc1", "gelu"), p + "fc2")]),
                            p + "ln2")
        x = g.first_token(x)
        x = g.dense(g.dense(x, "pooler", "tanh"), "head")
    else:
        tokens = cfg["frames"]
        x = g.input("input_0", (1, tokens, cfg["mfcc"]))
        x = g.op("Add", [g.dense(x, "frontend", "relu"), g.w("pos/pos", "pos")])
        for b in range(cfg["blocks"]):
            p = f"block{b}_"
            h = g.layernorm(x, p + "ln1")
            x = g.op("Add", [x, g.attention(h, cfg, tokens,
                                            *[(f"{p}{m}/kernel", f"{p}{m}/bias") for m in "qkvo"])])
            h = g.layernorm(x, p + "ln2")
            x = g.op("Add", [x, g.dense(g.dense(h, p + "fc1", "gelu"), p + "fc2")])
        x = g.layernorm(x, "final_ln")
        x = g.dense(g.op("ReduceMean", [x], axes=[1], keepdims=0), "head")
    g.op("Softmax", [x], axis=-1, out="probs")
    g.output_shape = (1, cfg["classes"])
    g.output("probs")
    return g.model()


def _quantize_variants():
    import gen_onnx_zoo
    return {k: gen_onnx_zoo.STD_VARIANTS[k] for k in ("qdq_u8", "qdq_s8", "qop_u8")}


def quantize_onnx(fm, calib_x, path: Path, variant) -> str | None:
    """quantize_static on the calibration samples; None on success, else why not."""
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter({"input_0": x} for x in calib_x)

        def get_next(self):
            return next(self.it, None)

    fmt, act, wt, pc, rr = variant[:5]
    with tempfile.TemporaryDirectory(prefix="gen_transformer_zoo.") as td:
        fpath, qpath = Path(td) / "float.onnx", Path(td) / "q.onnx"
        onnx.save_model(fm, fpath)
        try:
            quantize_static(str(fpath), str(qpath), Reader(), quant_format=fmt,
                            activation_type=act, weight_type=wt, per_channel=pc,
                            reduce_range=rr, calibrate_method=CalibrationMethod.MinMax)
        except Exception as e:  # noqa: BLE001 - reported, file skipped
            return f"quantize_static raised {type(e).__name__}: {str(e).splitlines()[0][:160]}"
        try:
            ort.InferenceSession(str(qpath), providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001
            return f"onnxruntime cannot load it: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
        path.write_bytes(qpath.read_bytes())
    return None


def build_onnx_all(out: Path, configs: dict, spellings: dict) -> int:
    import onnx
    import onnxruntime as ort
    logging.getLogger().setLevel(logging.ERROR)
    ort.set_default_logger_severity(3)
    odir = out / "onnx"
    odir.mkdir(parents=True, exist_ok=True)
    skipped = []
    for name, cfg in configs.items():
        weights = dict(np.load(out / f"{name}_weights.npz"))
        calib = np.load(out / f"{name}_calib.npz")["input_0"]
        for suffix, (gelu, ln) in spellings[cfg["kind"]].items():
            variant = name + suffix
            fm = build_onnx(name, cfg, weights, gelu, ln, variant)
            fpath = odir / f"{variant}_float.onnx"
            onnx.save_model(fm, fpath)
            print(f"  onnx/{fpath.name} {fpath.stat().st_size:8d} B", flush=True)
            for qname, var in _quantize_variants().items():
                qpath = odir / f"{variant}_{qname}.onnx"
                why = quantize_onnx(fm, calib, qpath, var)
                if why:
                    skipped.append(f"{qpath.name}: {why}")
                    print(f"  SKIP onnx/{qpath.name}: {why}", flush=True)
                else:
                    print(f"  onnx/{qpath.name} {qpath.stat().st_size:8d} B", flush=True)
    return 1 if skipped else 0


# --------------------------------------------------------------------------------------
# Verification (project venv: numpy, ai-edge-litert, onnx, onnxruntime; no TensorFlow)
# --------------------------------------------------------------------------------------

def tflite_histogram(buf: bytes) -> collections.Counter:
    """Operators of subgraph 0 keyed 'OP in-types -> out-types' (constant inputs
    included, optional inputs left out)."""
    s = gen_zoo._schema()
    names = {v: k for k, v in vars(s.BuiltinOperator).items() if not k.startswith("_")}
    m = s.Model.GetRootAs(buf, 0)
    codes = []
    for i in range(m.OperatorCodesLength()):
        oc = m.OperatorCodes(i)
        codes.append(names.get(max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode()), "?"))
    g = m.Subgraphs(0)

    def ty(idx):
        return gen_zoo._TYPE_NAMES.get(g.Tensors(idx).Type(), "?")

    hist = collections.Counter()
    for i in range(g.OperatorsLength()):
        op = g.Operators(i)
        ins = ",".join(ty(t) for t in op.InputsAsNumpy() if t >= 0)
        outs = ",".join(ty(t) for t in op.OutputsAsNumpy())
        hist[f"{codes[op.OpcodeIndex()]}({ins} -> {outs})"] += 1
    return hist


def _fmt_hist(hist) -> str:
    return ", ".join(f"{k} ×{v}" if v > 1 else k for k, v in sorted(hist.items()))


def _xnnpack_coverage(interp) -> tuple[int, int, int, list[str]]:
    """(nodes taken by delegates, nodes, partitions, op names left to LiteRT) for an
    allocated interpreter with the default resolver. A DELEGATE node's partition is
    found by walking back from its outputs to its inputs over the original nodes."""
    details = interp._get_ops_details()
    nodes = [d for d in details if d["op_name"] != "DELEGATE"]
    delegates = [d for d in details if d["op_name"] == "DELEGATE"]
    producer = {int(t): d["index"] for d in nodes for t in d["outputs"]}
    by_index = {d["index"]: d for d in nodes}
    taken = set()
    for dg in delegates:
        stop = {int(t) for t in dg["inputs"]}
        todo = [int(t) for t in dg["outputs"]]
        while todo:
            t = todo.pop()
            if t in stop or t not in producer or producer[t] in taken:
                continue
            taken.add(producer[t])
            todo.extend(int(u) for u in by_index[producer[t]]["inputs"] if u >= 0)
    left = collections.Counter(d["op_name"] for d in nodes if d["index"] not in taken)
    return len(taken), len(nodes), len(delegates), [f"{k} ×{v}" if v > 1 else k
                                                    for k, v in sorted(left.items())]


def _litert_run(path, xs, ref: bool):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    kw = {"experimental_op_resolver_type": OpResolverType.BUILTIN_REF} if ref else {}
    interp = Interpreter(model_path=str(path), **kw)
    interp.allocate_tensors()
    ind, outd = interp.get_input_details()[0], interp.get_output_details()[0]
    outs = []
    for x in xs:
        if ind["dtype"] != np.float32:
            x = gen_zoo._quantize_input(x, ind)
        interp.set_tensor(ind["index"], x)
        interp.invoke()
        y = interp.get_tensor(outd["index"]).copy()
        if outd["dtype"] != np.float32:
            scale, zp = outd["quantization"]
            y = (y.astype(np.float64) - zp) * scale
        outs.append(y.reshape(-1))
    return np.array(outs), interp


def _onnx_float_ops(m) -> collections.Counter:
    """Ops of a quantized ONNX model that compute in float. QDQ: a node is a quantized
    unit when every non-constant input comes from a DequantizeLinear and every output
    feeds only QuantizeLinear nodes. QOperator: a node is integer when it is a QLinear /
    integer op or moves (Reshape, Transpose, ...) an integer tensor."""
    q_ops = {"QuantizeLinear", "DequantizeLinear"}
    consumers = collections.defaultdict(list)
    producer = {}
    for n in m.graph.node:
        for t in n.input:
            consumers[t].append(n)
        for t in n.output:
            producer[t] = n
    inits = {t.name: t for t in m.graph.initializer}
    is_qdq = not any(n.op_type.startswith(("QLinear", "QGemm")) for n in m.graph.node)
    float_ops = collections.Counter()
    if is_qdq:
        for n in m.graph.node:
            if n.op_type in q_ops:
                continue
            ins = [t for t in n.input if t and t not in inits]
            from_dq = all(t in producer and producer[t].op_type == "DequantizeLinear" for t in ins)
            to_q = all(consumers[t] and all(c.op_type == "QuantizeLinear" for c in consumers[t])
                       for t in n.output if t not in {o.name for o in m.graph.output})
            if not (from_dq and to_q):
                float_ops[n.op_type] += 1
        return float_ops
    from onnx import TensorProto
    int_types = {TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32}
    integer = {t.name for t in m.graph.initializer if t.data_type in int_types}
    movers = {"Reshape", "Transpose", "Gather", "Concat", "Squeeze", "Unsqueeze", "Flatten",
              "Slice", "Split", "MaxPool"}
    for n in m.graph.node:  # topological order
        if n.op_type == "QuantizeLinear" or n.op_type.startswith(("QLinear", "QGemm", "QAttention",
                                                                   "QEmbed", "QGelu")):
            integer.update(n.output)
        elif n.op_type in movers and n.input and n.input[0] in integer:
            integer.update(n.output)
        elif n.op_type != "DequantizeLinear":
            float_ops[n.op_type] += 1
    return float_ops


def _ort_session(path, level):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    if level is not None:
        so.graph_optimization_level = level
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def _ort_optimized_histogram(path) -> collections.Counter:
    """Op types of the graph ORT runs with default options (its saved optimized model)."""
    import onnx
    import onnxruntime as ort
    with tempfile.TemporaryDirectory(prefix="gen_transformer_zoo.") as td:
        so = ort.SessionOptions()
        so.log_severity_level = 3
        so.optimized_model_filepath = str(Path(td) / "opt.onnx")
        ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        m = onnx.load_model(so.optimized_model_filepath)
    return collections.Counter(n.op_type for n in m.graph.node)


def _agreement(q, f):
    """max |q - f| relative to max |f|, and arg-max agreement."""
    rel = float(np.max(np.abs(q - f)) / max(np.max(np.abs(f)), 1e-12))
    agree = int(np.sum(np.argmax(q, -1) == np.argmax(f, -1)))
    return f"{rel:.2g}; argmax {agree}/{len(f)}"


def verify(out: Path) -> int:
    import onnx
    import onnxruntime as ort
    from ai_edge_litert import __version__ as litert_version
    configs, _ = _configs_for(out)
    manifest = json.loads((out / "manifest.json").read_text())
    bad = 0
    tfl_rows, tfl_hist, onnx_rows, onnx_hist = [], [], [], []
    onnx_failures = 0
    for name in configs:
        held = np.load(out / f"{name}_heldout.npz")["input_0"]
        fpath = out / f"{name}_float.tflite"
        fref, _ = _litert_run(fpath, held, ref=True)
        for suffix in ("", "_16x8", "_float"):
            path = out / f"{name}{suffix}.tflite"
            buf = path.read_bytes()
            hist = tflite_histogram(buf)
            print(f"{path.name}: {_fmt_hist(hist)}")
            tfl_hist.append(f"| `{path.name}` | {sum(hist.values())} | {_fmt_hist(hist)} |")
            res = {}
            for label, ref in (("default", False), ("BUILTIN_REF", True)):
                try:
                    res[label] = _litert_run(path, held, ref)
                except Exception as e:  # noqa: BLE001 - recorded in the table
                    res[label] = f"FAILED ({type(e).__name__}: {str(e).splitlines()[0][:120]})"
                    bad += 1
            cells = []
            if isinstance(res["default"], tuple):
                taken, total, parts, left = _xnnpack_coverage(res["default"][1])
                cells.append(f"ok; XNNPACK took {taken}/{total} ops in {parts} partition(s)"
                             + (f"; left: {', '.join(left)}" if left else ""))
            else:
                cells.append(res["default"])
            cells.append("ok" if isinstance(res["BUILTIN_REF"], tuple) else res["BUILTIN_REF"])
            if all(isinstance(r, tuple) for r in res.values()):
                d, r = res["default"][0], res["BUILTIN_REF"][0]
                scale = 1.0
                if suffix != "_float":
                    from ai_edge_litert.interpreter import Interpreter
                    scale = Interpreter(model_path=str(path)).get_output_details()[0][
                        "quantization"][0]
                    diff = np.rint(np.abs(d - r) / scale).astype(np.int64)
                    cells.append(f"{int(np.count_nonzero(diff))}/{diff.size}, "
                                 f"max {int(diff.max())} LSB")
                else:
                    cells.append(f"max {float(np.max(np.abs(d - r))):.2g}")
                cells.append(_agreement(r, fref) if suffix != "_float" else "-")
            else:
                cells += ["-", "-"]
            tfl_rows.append(f"| `{path.name}` | {len(buf):,} B | " + " | ".join(cells) + " |")
            print("   ", tfl_rows[-1])
    for path in sorted((out / "onnx").glob("*.onnx")):
        name = next(n for n in sorted(configs, key=len, reverse=True)
                    if path.stem.startswith(n + "_"))
        held = np.load(out / f"{name}_heldout.npz")["input_0"]
        fref, _ = _litert_run(out / f"{name}_float.tflite", held, ref=True)
        m = onnx.load_model(path)
        hist = collections.Counter(
            (f"{n.domain}." if n.domain else "") + n.op_type for n in m.graph.node)
        outs, status = {}, []
        for label, level in (("default", None),
                             ("ORT_DISABLE_ALL", ort.GraphOptimizationLevel.ORT_DISABLE_ALL)):
            try:
                sess = _ort_session(path, level)
                outs[label] = np.array([sess.run(None, {"input_0": x})[0].reshape(-1)
                                        for x in held])
                status.append("ok")
            except Exception as e:  # noqa: BLE001
                status.append(f"FAILED ({type(e).__name__}: {str(e).splitlines()[0][:120]})")
                bad += 1
                onnx_failures += 1
        is_float = path.stem.endswith("_float")
        float_ops = "-" if is_float else (_fmt_hist(_onnx_float_ops(m)) or "none")
        opt = _fmt_hist(_ort_optimized_histogram(path)) if not is_float else "-"
        cmp = "-"
        if len(outs) == 2:
            dd = float(np.max(np.abs(outs["default"] - outs["ORT_DISABLE_ALL"])))
            cmp = (f"default vs DISABLE_ALL max {dd:.2g}; "
                   f"vs float .tflite {_agreement(outs['default'], fref)}")
        print(f"{path.name}: {_fmt_hist(hist)}\n    left in float: {float_ops}\n"
              f"    ORT runs: {opt}\n    {cmp}")
        onnx_rows.append(f"| `{path.name}` | {path.stat().st_size:,} B | {' / '.join(status)} | "
                         f"{cmp} |")
        onnx_hist.append(f"| `{path.name}` | {_fmt_hist(hist)} | {float_ops} | {opt} |")

    trained = [f"| `{r['name']}` | {r['parameters']:,} | {r['config']['epochs']} | "
               f"{r['test_accuracy']:.3f} | "
               + ", ".join(f"{k}={v}" for k, v in r["config"].items() if k not in ("epochs",))
               + " |" for r in manifest["models"]]
    block = [
        GEN_BEGIN,
        "Generated by `tools/gen_transformer_zoo.py --verify` with ai-edge-litert "
        f"{litert_version},",
        f"onnx {onnx.__version__}, onnxruntime {ort.__version__}, numpy {np.__version__}; "
        "models trained and converted with",
        f"TensorFlow {manifest['tensorflow']} (Keras {manifest['keras']}).",
        "",
        "### Trained models",
        "",
        "Test accuracy: float Keras model on 512 fresh samples of its synthetic task.",
        "",
        "| model | parameters | epochs | test accuracy | configuration |",
        "| --- | --- | --- | --- | --- |",
        *trained,
        "",
        "### TFLite: operator histograms",
        "",
        "One entry per builtin and tensor-type signature (inputs -> outputs, constants",
        "included), as the converter wrote the flatbuffer.",
        "",
        "| model | ops | histogram |",
        "| --- | --- | --- |",
        *tfl_hist,
        "",
        f"### TFLite: LiteRT runs on the {N_HELDOUT} held-out samples",
        "",
        "`default` is LiteRT's default resolver (XNNPACK delegate, optimized kernels),",
        "with which ops XNNPACK took; `BUILTIN_REF` the reference kernels. \"default vs",
        "ref\" counts output elements that differ (in output LSBs). \"vs float\" is",
        "max |dequantized BUILTIN_REF output - float model output| relative to the",
        "largest float output, and how often the arg-max agrees with the float model.",
        "",
        "| model | size | default | BUILTIN_REF | default vs ref | vs float |",
        "| --- | --- | --- | --- | --- | --- |",
        *tfl_rows,
        "",
        "### ONNX: operator histograms after quantize_static",
        "",
        "\"left in float\": nodes that compute in float in the quantized file (QDQ: not",
        "between DequantizeLinear inputs and QuantizeLinear outputs; QOperator: not a",
        "QLinear op and not moving an integer tensor). \"ORT runs\": the graph ONNX",
        "Runtime executes with default session options (its saved optimized model).",
        "",
        "| model | histogram | left in float | ORT runs (default options) |",
        "| --- | --- | --- | --- |",
        *onnx_hist,
        "",
        f"### ONNX: onnxruntime runs on the {N_HELDOUT} held-out samples",
        "",
        ("Both session settings load and run every file." if not onnx_failures else
         f"{onnx_failures} session(s) FAILED, see the table.") + " Outputs are probabilities;",
        "\"vs float .tflite\" compares with the float TFLite model (LiteRT BUILTIN_REF) as",
        "above, so for the `_float` files it checks that the ONNX graph computes what",
        "the Keras model does.",
        "",
        "| model | size | default / ORT_DISABLE_ALL | comparison |",
        "| --- | --- | --- | --- |",
        *onnx_rows,
        "",
        "### sha256 (first 16 hex digits)",
        "",
        *[f"- `{f.relative_to(out)}`: `{hashlib.sha256(f.read_bytes()).hexdigest()[:16]}`"
          for f in sorted(out.glob("*.*")) + sorted((out / "onnx").glob("*.onnx"))
          if f.name != "README.md"],
        GEN_END,
    ]
    readme = out / "README.md"
    text = (readme.read_text() if readme.exists()
            else f"# transformer zoo\n\n{GEN_BEGIN}\n{GEN_END}\n")
    pat = re.compile(re.escape(GEN_BEGIN) + ".*?" + re.escape(GEN_END), re.S)
    readme.write_text(pat.sub(lambda _: "\n".join(block), text))
    return 1 if bad else 0


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------

def _configs_for(out: Path):
    """The configurations a directory was generated with (its manifest)."""
    manifest = json.loads((out / "manifest.json").read_text())
    configs = {r["name"]: r["config"] for r in manifest["models"]}
    spellings = HELDOUT_SPELLINGS if manifest.get("heldout") else ONNX_SPELLINGS
    return configs, spellings


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--heldout", type=Path, metavar="OUTDIR",
                    help="write the held-out encoders to OUTDIR (outside the repository)")
    ap.add_argument("--only", help="generate only the models whose name contains this")
    ap.add_argument("--onnx", action="store_true",
                    help="rebuild OUT/onnx from OUT/NAME_weights.npz (no TensorFlow)")
    ap.add_argument("--verify", action="store_true",
                    help="run everything in LiteRT and onnxruntime, rewrite the README's "
                         "generated section (no TensorFlow)")
    args = ap.parse_args(argv)
    if args.onnx:
        return build_onnx_all(args.out, *_configs_for(args.out))
    if args.verify:
        return verify(args.out)
    if args.heldout:
        configs, spellings, out = HELDOUT, HELDOUT_SPELLINGS, args.heldout
        if out.resolve().is_relative_to(ROOT):
            ap.error(f"--heldout {out}: held-out models belong outside the repository")
    else:
        configs, spellings, out = ZOO, ONNX_SPELLINGS, args.out
    all_configs = configs
    if args.only:
        configs = {k: v for k, v in configs.items() if args.only in k}
    return generate(out, configs, spellings, heldout=bool(args.heldout), all_configs=all_configs)


if __name__ == "__main__":
    sys.exit(main())
