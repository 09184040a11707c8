"""A small quantized TFLite attention block, built in memory (tests and bench/latency.py).

`attention_block(seq, dim, heads, storage)`: x [1, S, D] -> FULLY_CONNECTED (Q, K, V,
keep_num_dims) -> RESHAPE [1, S, H, D/H] -> TRANSPOSE [1, H, S, D/H] -> BATCH_MATMUL(Q, K,
adj_y) -> SOFTMAX over rows of S -> BATCH_MATMUL(P, V) -> TRANSPOSE / RESHAPE back ->
FULLY_CONNECTED (output projection); with `layer_norm=True` the residual x + attention and
a layer norm's integer pieces after it (MEAN over D, SUB, SQUARED_DIFFERENCE (int16: MUL of the
difference by itself), MEAN, RSQRT, MUL).
`storage` "int8" (int8 activations and weights, int32 bias) or "int16" (TFLite's 16x8:
int16 activations with zero point 0, int8 weights, int64 bias).

Scales are set from a float run of the block on a seeded sample (each tensor's range over
its storage range), so no tensor saturates everywhere; the weights and the sample are
seeded.  Expected values come from LiteRT running the model, never from this module.
"""

from __future__ import annotations

import numpy as np

from tests.tflite_writer import TensorSpec, build_model


def _softmax(v: np.ndarray) -> np.ndarray:
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention_block(seq: int = 32, dim: int = 64, heads: int = 4, storage: str = "int8", *,
                    layer_norm: bool = False, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    dh = dim // heads
    wide = storage == "int16"
    qmax = 32767 if wide else 127
    tensors: list[TensorSpec] = []
    ops: list[tuple] = []

    def tensor(spec: TensorSpec) -> int:
        tensors.append(spec)
        return len(tensors) - 1

    def act(shape, values: np.ndarray, name: str, *, zp_shift: bool = True) -> tuple[int, float, int]:
        """An activation tensor whose scale covers `values` (the float run)."""
        lo, hi = float(min(values.min(), 0.0)), float(max(values.max(), 0.0))
        if wide:
            scale, zp = max(abs(lo), abs(hi), 1e-6) / 32767.0, 0
        else:
            scale = max(hi - lo, 1e-6) / 255.0
            zp = int(np.clip(round(-128 - lo / scale), -128, 127)) if zp_shift else 0
        return tensor(TensorSpec(tuple(shape), storage, float(np.float32(scale)), zp, name=name)), scale, zp

    def fc(x: int, x_scale: float, x_val: np.ndarray, out_dim: int, name: str, zp_shift: bool = True):
        in_dim = x_val.shape[-1]
        w = rng.normal(0.0, 1.0 / np.sqrt(in_dim), (out_dim, in_dim)).astype(np.float32)
        ws = np.maximum(np.abs(w).max(axis=1), 1e-6) / 127.0
        wq = np.clip(np.round(w / ws[:, None]), -127, 127).astype(np.int8)
        b = rng.normal(0.0, 0.1, out_dim).astype(np.float32)
        bs = [float(np.float32(x_scale) * np.float32(s)) for s in ws]
        bq = np.round(b / np.asarray(bs)).astype(np.int64 if wide else np.int32)
        wt = tensor(TensorSpec(wq.shape, "int8", [float(s) for s in ws], [0] * out_dim, 0, wq, name=f"{name}_w"))
        bt = tensor(TensorSpec((out_dim,), "int64" if wide else "int32", bs, [0] * out_dim, 0, bq,
                               name=f"{name}_b"))
        y_val = x_val @ (wq.astype(np.float32) * ws[:, None]).T + bq * np.asarray(bs, np.float32)
        y, y_scale, _ = act((1, seq, out_dim), y_val, name, zp_shift=zp_shift)
        ops.append(("FULLY_CONNECTED", [x, wt, bt], [y], {"keep_num_dims": True}))
        return y, y_scale, y_val

    def const_i32(values, name: str) -> int:
        arr = np.asarray(values, np.int32)
        return tensor(TensorSpec(arr.shape, "int32", data=arr, name=name))

    def heads_of(x: int, x_scale: float, x_zp: int, x_val: np.ndarray, name: str):
        """[1, S, D] -> [1, H, S, dh] (RESHAPE, TRANSPOSE; the parameters carried along)."""
        r = tensor(TensorSpec((1, seq, heads, dh), storage, float(np.float32(x_scale)), x_zp, name=f"{name}_r"))
        ops.append(("RESHAPE", [x, const_i32([1, seq, heads, dh], f"{name}_shape")], [r],
                    {"new_shape": [1, seq, heads, dh]}))
        t = tensor(TensorSpec((1, heads, seq, dh), storage, float(np.float32(x_scale)), x_zp, name=f"{name}_t"))
        ops.append(("TRANSPOSE", [r, const_i32([0, 2, 1, 3], f"{name}_perm")], [t]))
        return t, x_val.reshape(1, seq, heads, dh).transpose(0, 2, 1, 3)

    x_val = rng.uniform(-2.0, 2.0, (1, seq, dim)).astype(np.float32)
    x, x_scale, x_zp = act((1, seq, dim), x_val, "x")
    projected = {}
    for name in ("q", "k", "v"):
        # V with zero point 0: LiteRT's default path runs P @ V on XNNPACK (which takes int8
        # BATCH_MATMUL only with a zero rhs zero point) and Q @ K^T on TFLite's own kernel
        y, y_scale, y_val = fc(x, x_scale, x_val, dim, name, zp_shift=name != "v")
        projected[name] = heads_of(y, y_scale, tensors[y].zero_point, y_val, name)
    (q, q_val), (k, k_val), (v, v_val) = projected["q"], projected["k"], projected["v"]
    scores_val = q_val @ np.swapaxes(k_val, -1, -2)
    scores, _, _ = act((1, heads, seq, seq), scores_val, "scores")
    ops.append(("BATCH_MATMUL", [q, k], [scores], {"adj_x": False, "adj_y": True}))
    probs_val = _softmax(scores_val)
    probs = tensor(TensorSpec((1, heads, seq, seq), storage, 1.0 / 32768.0 if wide else 1.0 / 256.0,
                              0 if wide else -128, name="probs"))
    ops.append(("SOFTMAX", [scores], [probs], {"beta": 1.0}))
    ctx_val = probs_val @ v_val
    ctx, ctx_scale, ctx_zp = act((1, heads, seq, dh), ctx_val, "ctx")
    ops.append(("BATCH_MATMUL", [probs, v], [ctx], {"adj_x": False, "adj_y": False}))
    merged = tensor(TensorSpec((1, seq, heads, dh), storage, float(np.float32(ctx_scale)), ctx_zp, name="merged_t"))
    ops.append(("TRANSPOSE", [ctx, const_i32([0, 2, 1, 3], "merge_perm")], [merged]))
    flat = tensor(TensorSpec((1, seq, dim), storage, float(np.float32(ctx_scale)), ctx_zp, name="merged"))
    ops.append(("RESHAPE", [merged, const_i32([1, seq, dim], "merge_shape")], [flat], {"new_shape": [1, seq, dim]}))
    flat_val = ctx_val.transpose(0, 2, 1, 3).reshape(1, seq, dim)
    out, out_scale, out_val = fc(flat, ctx_scale, flat_val, dim, "out")
    if layer_norm:
        h_val = x_val + out_val
        h, _, h_zp = act((1, seq, dim), h_val, "residual")
        ops.append(("ADD", [x, out], [h], {"fused_activation_function": "NONE"}))
        axis = const_i32([-1], "axis")
        mu_val = h_val.mean(axis=-1, keepdims=True)
        mu, _, _ = act((1, seq, 1), np.concatenate([mu_val, h_val], axis=-1), "mean")
        ops.append(("MEAN", [h, axis], [mu], {"keep_dims": True}))
        sq_val = (h_val - mu_val) ** 2
        centered, _, _ = act((1, seq, dim), h_val - mu_val, "centered")
        ops.append(("SUB", [h, mu], [centered], {"fused_activation_function": "NONE"}))
        sq, _, _ = act((1, seq, dim), sq_val, "squared_difference")
        if wide:  # LiteRT's SQUARED_DIFFERENCE takes no int16: the square as a MUL
            ops.append(("MUL", [centered, centered], [sq], {"fused_activation_function": "NONE"}))
        else:
            ops.append(("SQUARED_DIFFERENCE", [h, mu], [sq]))
        var, _, _ = act((1, seq, 1), sq_val.mean(axis=-1, keepdims=True), "variance")
        ops.append(("MEAN", [sq, axis], [var], {"keep_dims": True}))
        inv_val = 1.0 / np.sqrt(np.maximum(sq_val.mean(axis=-1, keepdims=True), 1e-3))
        inv, _, _ = act((1, seq, 1), inv_val, "rsqrt")
        ops.append(("RSQRT", [var], [inv]))
        normed, _, _ = act((1, seq, dim), (h_val - mu_val) * inv_val, "normalized")
        ops.append(("MUL", [centered, inv], [normed], {"fused_activation_function": "NONE"}))
        return build_model(ops, tensors, inputs=[x], outputs=[normed])
    return build_model(ops, tensors, inputs=[x], outputs=[out])


def sample(model_input_shape, storage: str, seed: int) -> np.ndarray:
    """Seeded input over the whole storage range."""
    info = np.iinfo(storage)
    return np.random.default_rng(seed).integers(info.min, info.max + 1, model_input_shape).astype(storage)
