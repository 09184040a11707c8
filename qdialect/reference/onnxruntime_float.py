"""ONNX Runtime 1.32's float CPU kernels for the ops a quantized transformer encoder leaves in float.

What ORT computes between a `DequantizeLinear` and a `QuantizeLinear` it does not
fuse (and everywhere with `ORT_DISABLE_ALL`), read in its source and pinned
against one-node models (`tests/importer/test_onnx_transformer.py`):

- **Div, Sqrt** (`element_wise_ops.cc`, Eigen): IEEE division and square
  root in float32, one rounding each (numpy's are the same).
- **Pow** with a scalar exponent 2 or 3 is `x * x` / `x * x * x`
  (`pow_internal::PowImpl`'s special cases); the importer writes it as
  multiplications.
- **Erf** (`MlasComputeErf`; on x86-64 with FMA3 the `MlasErfKernelFma3`
  assembly kernel, every element through the vector path, the tail with
  masked loads): `a = min(|x|, 3.725)`; below 0.921875 an odd polynomial in
  `a * a` (fused multiply-adds), else `1 - exp(-p(a))` with MLAS's
  polynomial exp (`2^r` built from the integer `r` in the exponent field);
  the sign is or-ed back in.  `mlas_erf`.
- **Gelu** (`tensor/gelu.cc`, com.microsoft and ONNX-20, approximation
  "none"): `t = x * f32(M_SQRT1_2)`, `e = MlasComputeErf(t)`,
  `y = 0.5f * x * (e + 1.0f)` (three float32 roundings, no FMA).  `gelu`.
- **LayerNormalization** (float32, ORT 1.32 on x86-64 with AVX2: MLAS's
  `MlasLayerNormKernelAvx2`, one row of the axes from `axis` on at a time):
  the mean from a float64 sum in four lanes (blocks of 4; lanes reduced
  `(0 + 2) + (1 + 3)`; the tail in order), `f32(sum / n)`; the centred
  squares `d = x - mean` accumulated with FMA in eight float32 lanes
  (reduced `k + (k + 4)`, then `(0 + 2, 1 + 3)`, then `0 + 1`); the tail in
  order, as GCC compiled it (the first four of a tail of four or more as
  rounded products, a fold-left vector reduction, the rest with FMA);
  `inv = 1 / sqrt(var / n + eps)`; `y = fma((x - mean) * inv, scale, bias)`.
  Rows shorter than 8 take another (scalar) path, not modelled: the importer
  refuses them.  `layer_norm`.  (The sources' scalar `ComputeJob` is not what
  1.32 runs: it differs on about 40 % of the outputs.)
- **ReduceMean** over leading axes (`FastReduceRK`): the first row, the
  others added in order, `/ f32(count)`.  `reduce_mean_rk_f32`.
"""

from __future__ import annotations

import numpy as np

from qdialect.reference.onnxruntime_kernels import _fma_f32 as fma_f32

F32 = np.float32

# MlasErfConstants (erf.cpp), in the order the kernels read them
_ERF_UPPER_ABS = F32(3.925)  # measured on ORT 1.32 (older sources: 3.725, which differs above 3.78)
_ERF_SPLIT = F32(0.921875)
_ERF_SMALL = [F32(v) for v in (-5.99104969e-4, 4.99339588e-3, -2.67667342e-2, 1.12818025e-1, -3.76124859e-1,
                               1.28379151e-1)]
_ERF_BIG = [F32(v) for v in (1.72948930e-5, -3.83208680e-4, 3.88393435e-3, -2.42545605e-2, 1.06777847e-1,
                             6.34846687e-1, 1.28717512e-1)]
_EXP_LOWER = F32(-88.3762626647949)
_EXP_LOG2_RECIPROCAL = F32(1.44269504088896341)
_EXP_LOG2_HI = F32(-6.93145752e-1)
_EXP_LOG2_LO = F32(-1.42860677e-6)
_EXP_P = [F32(v) for v in (1.38319808e-3, 8.37550033e-3, 4.16689515e-2, 1.66664466e-1, 4.99999851e-1, 1.0, 1.0)]
_EXP_C = F32(1.25829120e+7)
M_SQRT1_2 = F32(0.70710678118654752440)
LAYER_NORM_MIN_ROW = 8  # shorter rows take ORT's scalar path, not modelled


def mlas_erf(x: np.ndarray) -> np.ndarray:
    """MLAS's erf (`MlasErfKernelFma3`) elementwise on float32."""
    x = np.asarray(x, F32)
    sign = x.view(np.uint32) & np.uint32(0x80000000)
    a = np.minimum(np.abs(x), _ERF_UPPER_ABS)
    s = (a * a).astype(F32)
    small = np.full_like(a, _ERF_SMALL[0])
    for p in _ERF_SMALL[1:]:
        small = fma_f32(small, s, p)
    small = fma_f32(small, a, a)
    big_mask = a >= _ERF_SPLIT
    small = np.where(big_mask, F32(0), small)
    ab = np.where(big_mask, a, F32(0))
    r = np.full_like(a, _ERF_BIG[0])
    for p in _ERF_BIG[1:]:
        r = fma_f32(r, ab, p)
    r = fma_f32(r, ab, ab)
    r = np.maximum(-r, _EXP_LOWER)
    vr = (fma_f32(_EXP_LOG2_RECIPROCAL, r, _EXP_C) - _EXP_C).astype(F32)
    f = fma_f32(vr, _EXP_LOG2_HI, r)
    f = fma_f32(vr, _EXP_LOG2_LO, f)
    y = np.full_like(a, _EXP_P[0])
    for p in _EXP_P[1:]:
        y = fma_f32(y, f, p)
    i = vr.astype(np.int32)  # vcvttps2dq: truncation (vr is integral)
    pow2 = ((i + 127).astype(np.uint32) << np.uint32(23)).view(F32)
    y = (F32(1) - (y * pow2).astype(F32)).astype(F32)
    out = y.view(np.uint32) | small.view(np.uint32) | sign
    return out.view(F32).reshape(x.shape)


def gelu(x: np.ndarray) -> np.ndarray:
    """ORT's float Gelu kernel (approximation "none")."""
    x = np.asarray(x, F32)
    e = mlas_erf((x * M_SQRT1_2).astype(F32))
    return ((F32(0.5) * x).astype(F32) * (e + F32(1)).astype(F32)).astype(F32)


def layer_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray | None, axis: int, epsilon: float) -> np.ndarray:
    """ORT's float LayerNormalization on x86-64 with AVX2 (`MlasLayerNormKernelAvx2`), row by row
    over the axes from `axis` on."""
    x = np.asarray(x, F32)
    axis = axis % x.ndim
    n = int(np.prod(x.shape[axis:], dtype=np.int64))
    rows = x.reshape(-1, n)
    m = rows.shape[0]
    # pass 1: the mean from a double sum in four lanes (blocks of 4), lanes reduced (0+2) + (1+3),
    # then the tail in order
    n4 = n - n % 4
    lanes = np.zeros((m, 4), np.float64)
    for i in range(0, n4, 4):
        lanes += rows[:, i:i + 4].astype(np.float64)
    dsum = (lanes[:, 0] + lanes[:, 2]) + (lanes[:, 1] + lanes[:, 3])
    for i in range(n4, n):
        dsum = dsum + rows[:, i].astype(np.float64)
    mean = (dsum / np.float64(n)).astype(F32)
    # pass 2: centred squares in eight float32 lanes with FMA, reduced (k + k+4), (0+2, 1+3), 0+1;
    # the tail in order (measured: blocks of four as rounded products, then FMA)
    n8 = n - n % 8
    var = np.zeros((m, 8), F32)
    for i in range(0, n8, 8):
        d = (rows[:, i:i + 8] - mean[:, None]).astype(F32)
        var = fma_f32(d, d, var)
    r = (var[:, :4] + var[:, 4:]).astype(F32)
    r = (r[:, :2] + r[:, 2:]).astype(F32)
    total = (r[:, 0] + r[:, 1]).astype(F32)
    folded = n8 + (n - n8) // 4 * 4  # GCC's vectorized fold-left part of the tail: products rounded
    for i in range(n8, n):
        d = (rows[:, i] - mean).astype(F32)
        total = (total + (d * d).astype(F32)).astype(F32) if i < folded else fma_f32(d, d, total)
    inv = (F32(1) / np.sqrt(((total / F32(n)).astype(F32) + F32(epsilon)).astype(F32))).astype(F32)
    # normalise: ((x - mean) * inv) * scale + bias, the last step one FMA
    y = ((rows - mean[:, None]).astype(F32) * inv[:, None]).astype(F32)
    g = np.asarray(scale, F32).reshape(n)
    if bias is None:
        y = (y * g).astype(F32)
    else:
        y = fma_f32(y, g, np.asarray(bias, F32).reshape(n))
    return y.reshape(x.shape)


def reduce_mean_rk_f32(x: np.ndarray, axes, keepdims: bool) -> np.ndarray | None:
    """ORT's float ReduceMean when, size-1 axes aside, the reduced axes lead and the kept ones
    trail (`ReduceAggregatorMean::FastReduceRK`: the first row copied, the others added in
    order in float32, then `/ f32(count)`), e.g. [1, tokens, dim] over the tokens; None for
    another pattern."""
    x = np.asarray(x, F32)
    nd = x.ndim
    axes = sorted({int(a) % nd for a in axes})
    kept = [i for i in range(nd) if i not in axes and x.shape[i] != 1]
    reduced = [i for i in axes if x.shape[i] != 1]
    if not kept or not reduced or max(reduced) > min(kept):
        return None
    r = int(np.prod([x.shape[i] for i in reduced], dtype=np.int64))
    rows = np.ascontiguousarray(x).reshape(r, -1)
    acc = rows[0].copy()
    for k in range(1, r):
        acc = (acc + rows[k]).astype(F32)
    y = (acc / F32(r)).astype(F32)
    shape = [1 if i in axes else x.shape[i] for i in range(nd)] if keepdims else \
        [x.shape[i] for i in range(nd) if i not in axes]
    return y.reshape(shape)
