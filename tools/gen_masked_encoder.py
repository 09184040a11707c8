#!/usr/bin/env python3
"""Generate small Keras encoders with attention / padding masks (issue 22) into
models/transformers/masked/:

    NAME.tflite          int8 full-integer model (int8 features, int32 ids / mask)
    NAME_16x8.tflite     int16 activations, int8 weights (when the converter takes it)
    NAME_float.tflite    float32 export of the same Keras model
    NAME_calib.npz       representative dataset (input_0, ... in the model's input order,
                         each a stack (N, 1, *shape) in the input's real dtype: float32
                         features, int32 token ids and validity masks)
    NAME_heldout.npz     held-out samples from the same distribution
    NAME[_16x8]_heldout_q.npz
                         the held-out samples as the quantized model takes them: float
                         features quantized with its input scale and zero point (round half
                         away from zero, saturated), int32 inputs unchanged

The models (random seeded weights, no training: the masks are what matters):

    mha_mask     features [1, 8, 16] float and a token-validity mask [1, 8] int32;
                 Keras MultiHeadAttention (2 heads) with attention_mask = valid_q & valid_k
                 (EXPAND_DIMS, LOGICAL_AND of bool tensors; Keras' masked softmax is a
                 SELECT_V2), residual, masked mean pooling MEAN(x * m) / MEAN(m), Dense.
    ids_mask     token ids [1, 10] int32 (0 = padding): Embedding, mask = ids != 0
                 (NOT_EQUAL), MHA with a [1, 10, 10] mask built by CAST and MUL, GELU MLP,
                 masked mean pooling, Dense.  The converter's Embedding lookup adds
                 Keras' negative-index wrap (LESS, int32 ADD, SELECT_V2 on int32).
    key_mask     features [1, 6, 8] float and a key-padding mask [1, 6] int32: one MHA
                 whose attention mask is a FILL of true broadcast against the keys
                 (Keras' query mask), a layer norm spelled with MUL (Keras' own becomes an
                 int16 SQUARED_DIFFERENCE LiteRT cannot run), the first token's output.

TensorFlow is not a dependency of qdialect; run in its own virtualenv:

    /work/tfvenv/bin/python tools/gen_masked_encoder.py [--out models/transformers/masked]

Calibration masks keep at least two valid tokens per sample (an all-padding row has no
meaningful masked mean: its SUM(m) is 0 and the quantized DIV fails in LiteRT).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_zoo  # noqa: E402 - the zoo's deterministic npz writer

N_CALIB, N_HELDOUT = 32, 16

CONFIGS = {
    "mha_mask": dict(tokens=8, dim=16, heads=2, seed=2201),
    "ids_mask": dict(tokens=10, dim=16, heads=2, vocab=50, seed=2202),
    "key_mask": dict(tokens=6, dim=8, heads=2, seed=2203),
}


def validity(rng, n: int, tokens: int) -> np.ndarray:
    """int32 [n, tokens] masks: a random prefix of at least two valid tokens."""
    lengths = rng.integers(2, tokens + 1, n)
    return (np.arange(tokens)[None, :] < lengths[:, None]).astype(np.int32)


def samples(name: str, cfg: dict, seed: int, n: int) -> dict:
    """The model's inputs as the npz contract wants them: input_k of shape (n, 1, *shape)."""
    rng = np.random.default_rng(seed)
    t = cfg["tokens"]
    m = validity(rng, n, t)
    if name == "ids_mask":
        ids = rng.integers(1, cfg["vocab"], (n, t)).astype(np.int32) * m
        return {"input_0": ids[:, None]}
    x = rng.normal(0.0, 1.0, (n, t, cfg["dim"])).astype(np.float32)
    return {"input_0": x[:, None], "input_1": m[:, None]}


def build(keras, name: str, cfg: dict):
    """The Keras model (functional, batch 1)."""
    L, ops = keras.layers, keras.ops
    keras.utils.set_random_seed(cfg["seed"])
    t, d, h = cfg["tokens"], cfg["dim"], cfg["heads"]
    mha = L.MultiHeadAttention(num_heads=h, key_dim=d // h, name="mha")
    if name == "ids_mask":
        ids = keras.Input((t,), batch_size=1, dtype="int32", name="input_0")
        inputs = [ids]
        valid = ops.not_equal(ids, 0)
        x = L.Embedding(cfg["vocab"], d, name="emb")(ids)
        vf = ops.cast(valid, "float32")
        att_mask = ops.cast(vf[:, :, None] * vf[:, None, :], "bool")
    else:
        x = keras.Input((t, d), batch_size=1, dtype="float32", name="input_0")
        mask = keras.Input((t,), batch_size=1, dtype="int32", name="input_1")
        inputs = [x, mask]
        valid = ops.cast(mask, "bool")
        vf = ops.cast(valid, "float32")
        if name == "mha_mask":
            att_mask = ops.logical_and(valid[:, :, None], valid[:, None, :])
        else:
            att_mask = ops.logical_and(ops.ones((1, t, t), "bool"), valid[:, None, :])
    y = x + mha(x, x, attention_mask=att_mask)
    if name == "key_mask":
        d_ = y - ops.mean(y, axis=-1, keepdims=True)  # a layer norm by hand: Keras' own has an
        y = d_ * ops.rsqrt(ops.mean(d_ * d_, axis=-1, keepdims=True) + 1e-5)  # int16 SQUARED_DIFFERENCE
        out = L.Dense(4, name="head")(y[:, 0, :])
    else:
        if name == "ids_mask":
            y = y + L.Dense(d, name="fc2")(L.Dense(2 * d, activation="gelu", name="fc1")(y))
        if name == "ids_mask":  # BERT's masked mean pooling, SUM(x * m) / SUM(m)
            pooled = ops.sum(y * vf[:, :, None], axis=1) / ops.sum(vf, axis=1, keepdims=True)
        else:  # the same with MEAN (LiteRT 2.3's BUILTIN_REF SUM reads int8 / int16 as uint8)
            pooled = ops.mean(y * vf[:, :, None], axis=1) / ops.mean(vf, axis=1, keepdims=True)
        out = L.Dense(4, name="head")(pooled)
    return keras.Model(inputs, out, name=name)


def convert(tf, model, calib: dict, mode: str) -> bytes:
    """The zoo's converter settings, with input specs in each input's real dtype."""
    specs = [tf.TensorSpec(inp.shape, inp.dtype, name=f"input_{i}") for i, inp in enumerate(model.inputs)]

    @tf.function(input_signature=specs)
    def serve(*args):
        return model(list(args) if len(args) > 1 else args[0], training=False)

    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    conv = tf.lite.TFLiteConverter.from_concrete_functions(
        [convert_variables_to_constants_v2(serve.get_concrete_function())])
    if mode == "float":
        return conv.convert()
    names = sorted(calib)

    def rep():
        for k in range(N_CALIB):
            yield [calib[n][k] for n in names]

    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = rep
    if mode == "int8":
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = tf.int8
        conv.inference_output_type = tf.int8
    else:
        # The 16x8 converter quantizes no CAST: with TFLITE_BUILTINS as fallback the mask's
        # CASTs stay on int32 / bool / float32 tensors (what a 16x8 masked encoder looks like).
        conv.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8,
            tf.lite.OpsSet.TFLITE_BUILTINS]
        if all(inp.dtype == "float32" for inp in model.inputs[:1]):
            conv.inference_input_type = tf.int16  # an int32 ids input stays int32
        conv.inference_output_type = tf.int16
    return conv.convert()


def quantized_inputs(tf, model: bytes, data: dict) -> dict:
    """`data` in the dtypes of the model's inputs (float features quantized as QUANTIZE would)."""
    interp = tf.lite.Interpreter(model_content=model)
    out = {}
    for k, d in enumerate(interp.get_input_details()):
        a = data[f"input_{k}"]
        scale, zp = d["quantization"]
        if scale:
            info = np.iinfo(d["dtype"])
            v = np.sign(a / scale) * np.floor(np.abs(a / scale) + 0.5) + zp
            a = np.clip(v, info.min, info.max)
        out[f"input_{k}"] = a.astype(d["dtype"])
    return out


def generate(out: Path, names: list[str]) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    import keras

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        cfg = CONFIGS[name]
        model = build(keras, name, cfg)
        calib = samples(name, cfg, cfg["seed"] + 3, N_CALIB)
        held = samples(name, cfg, cfg["seed"] + 4, N_HELDOUT)
        gen_zoo._savez(out / f"{name}_calib.npz", calib)
        gen_zoo._savez(out / f"{name}_heldout.npz", held)
        for suffix, mode in (("", "int8"), ("_16x8", "16x8"), ("_float", "float")):
            try:
                buf = convert(tf, model, calib, mode)
            except Exception as e:  # noqa: BLE001 - the converter refuses some 16x8 models
                line = next((ln for ln in str(e).splitlines() if "error" in ln.lower()), str(e).splitlines()[0])
                print(f"{name}{suffix}: the converter refuses {mode}: {line.strip()[:200]}")
                continue
            (out / f"{name}{suffix}.tflite").write_bytes(buf)
            print(f"{name}{suffix}.tflite: {len(buf)} bytes")
            if mode != "float":
                gen_zoo._savez(out / f"{name}{suffix}_heldout_q.npz", quantized_inputs(tf, buf, held))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "models/transformers/masked")
    ap.add_argument("names", nargs="*", default=list(CONFIGS))
    args = ap.parse_args(argv)
    generate(args.out, args.names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
