"""ONNX Runtime 1.32's com.microsoft MatMulNBits, 8-bit weights, accuracy level 4, as its default
session runs it on an x86 CPU with AVX-512 VNNI (MLAS SQNBitGemm, CompInt8, BlkLen 32).

ORT's graph transformer (DQMatMulToMatMulNBits) rewrites `MatMul(float A, DequantizeLinear(int8 /
uint8 constant W))` (and a following `Add(DequantizeLinear(bias))`) into MatMulNBits with
bits = 8, block_size = 32, accuracy_level = 4: W is stored transposed as uint8 (int8 + 128, zero
point + 128), one scale and one zero point per (column, block of 32 along K), copied from the
per-channel / per-tensor DequantizeLinear.  Measured against ORT 1.32 (0 differing float32 bits,
K in 16..300, N in 8..64, M in 1..5, u8 / s8, per-channel / per-tensor, with and without bias):

1. A is quantized per row and block of 32 along K (the tail block padded with 0):
   `amax = max |a|`, `scale_a = f32(amax / 127)`, `q = rint(f32(a * f32(127 / amax)))` (ties
   to even; 0 when amax = 0); `sum_a = f32(scale_a * f32(sum q))`.
2. Per block b, the int8 dot products (exact int32) come in 8 lanes of 4 consecutive k; the
   combined scale `f32(scale_a[b] * scale_w[b])` multiplies them into float lanes:
   - blocks in groups of four (a 512-bit accumulator of 16 lanes): lane pairs (0, 2), (1, 3) of
     each 128-bit quarter of the two blocks' 16 int32 lanes are added in integer first
     (`unpacklo/hi_epi64`), then `acc16 = fma(f32(dot), scale, acc16)`;
   - then `acc8 = acc16[0:8] + acc16[8:16]` and the remaining blocks (< 4) one at a time,
     `acc8 = fma(f32(dot lane), scale, acc8)`.
3. Horizontal sum of acc8: for the columns in groups of four (the C4 kernel),
   `((l0 + l1) + l2) + l3 + (((l4 + l5) + l6) + l7)`; for the last N % 4 columns (the C1
   kernel), halves folded: `(l0 + l4) + (l2 + l6)` + `(l1 + l5) + (l3 + l7)`.
4. `+ bias` (float32), then the zero-point term: an SGEMM over blocks,
   `t = fma(sum_a[b], -f32(scale_w[b] * zp[b]), t)` from +0, and `C = C + t`.

Other ISAs (AVX2, AVX-VNNI without AVX-512, AVX-512 without VNNI, ARM) run other MLAS kernels
with other lane layouts and sums: not modelled, refused by name (`NbitsUnsupported`).
"""

from __future__ import annotations

import os

import numpy as np

F32 = np.float32
F64 = np.float64

BLOCK = 32
RECIPE = "avx512vnni"


class NbitsUnsupported(Exception):
    """ORT would run another MLAS MatMulNBits kernel than the one modelled here."""


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def nbits_recipe() -> str:
    """The MLAS CompInt8 recipe ORT picks on this CPU: "avx512vnni" (AVX-512 F/BW/DQ/VL + VNNI),
    else the ISA's name ("avx2vnni", "avx512", "avx2", "other"), which is not modelled.
    `QDIALECT_ORT_ISA` set to anything but "vnni" names a CPU without it."""
    forced = os.environ.get("QDIALECT_ORT_ISA")
    if forced and forced != "vnni":
        return forced
    flags = _cpu_flags()
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni"} <= flags:
        return RECIPE
    if "avx_vnni" in flags:
        return "avx2vnni"
    if "avx512bw" in flags:
        return "avx512"
    return "avx2" if "avx2" in flags else "other"


def require_recipe() -> None:
    isa = nbits_recipe()
    if isa != RECIPE:
        raise NbitsUnsupported(
            f"MatMulNBits (8-bit, accuracy level 4) on {isa}: ORT runs another MLAS CompInt8 kernel "
            f"there; only the {RECIPE} recipe is modelled")


def blockwise_weights(w_q: np.ndarray, scale, zero_point, axis_n: int | None):
    """MatMul weights `[K, N]` (int8 / uint8) with a per-tensor (axis_n None) or per-column
    DequantizeLinear -> (uint8 values `[K, N]` as int64, scale `[N]` f32, zero point `[N]` int64),
    as DQMatMulToMatMulNBits stores them (int8 shifted by +128, its zero point with it)."""
    w_q = np.asarray(w_q)
    if w_q.ndim != 2:
        raise NbitsUnsupported(f"weights of rank {w_q.ndim} (MatMulNBits takes [K, N])")
    n = w_q.shape[1]
    shift = 128 if w_q.dtype == np.int8 else 0
    if w_q.dtype not in (np.int8, np.uint8):
        raise NbitsUnsupported(f"{w_q.dtype} weights (8-bit only)")
    s = np.broadcast_to(np.asarray(scale, dtype=F32).reshape(-1), (n,)).astype(F32)
    z = np.broadcast_to(np.asarray(zero_point).astype(np.int64).reshape(-1), (n,)) + shift
    return w_q.astype(np.int64) + shift, s, z


def quantize_a(a: np.ndarray):
    """Rows of A `[M, K]` f32 -> (q `[M, nb, 32]` int64, scale `[M, nb]` f32, scaled sum `[M, nb]`)."""
    m, k = a.shape
    nb = -(-k // BLOCK)
    padded = np.zeros((m, nb * BLOCK), F32)
    padded[:, :k] = a
    blocks = padded.reshape(m, nb, BLOCK)
    amax = np.abs(blocks).max(-1)
    scale = (amax / F32(127)).astype(F32)
    nonzero = amax != 0
    inverse = np.where(nonzero, F32(127) / np.where(nonzero, amax, F32(1)), F32(0)).astype(F32)
    q = np.rint((blocks * inverse[..., None]).astype(F32)).astype(np.int64)
    scaled_sum = (scale * q.sum(-1).astype(F32)).astype(F32)
    return q, scale, scaled_sum


def _sum_c4(lanes: np.ndarray) -> np.ndarray:
    """[8, ...] -> ((l0 + l1) + l2) + l3 + (((l4 + l5) + l6) + l7)."""
    lo, hi = lanes[0], lanes[4]
    for i in (1, 2, 3):
        lo = (lo + lanes[i]).astype(F32)
        hi = (hi + lanes[4 + i]).astype(F32)
    return (lo + hi).astype(F32)


def _sum_c1(lanes: np.ndarray) -> np.ndarray:
    """[8, ...] -> halves folded: 8 -> 4 -> 2 -> 1."""
    while lanes.shape[0] > 1:
        h = lanes.shape[0] // 2
        lanes = (lanes[:h] + lanes[h:]).astype(F32)
    return lanes[0]


def matmul_nbits(a: np.ndarray, w_u8: np.ndarray, scale: np.ndarray, zero_point: np.ndarray,
                 bias: np.ndarray | None = None) -> np.ndarray:
    """`A [..., K] f32 x W [K, N]` as ORT's MatMulNBits (bits 8, block 32, accuracy level 4) on
    AVX-512 VNNI.  `w_u8`, `scale`, `zero_point` as `blockwise_weights` returns them (one scale
    and zero point per column: every block of a column shares them)."""
    require_recipe()
    a = np.asarray(a, dtype=F32)
    lead = a.shape[:-1]
    k = a.shape[-1]
    a2 = a.reshape(-1, k)
    m = a2.shape[0]
    n = w_u8.shape[1]
    nb = -(-k // BLOCK)
    q, scale_a, sum_a = quantize_a(a2)
    w = np.zeros((nb * BLOCK, n), np.int64)
    w[:k] = w_u8
    # dot[b, m, lane, n]: lane = 4 consecutive k of block b
    dot = np.einsum("mblk,blkn->bmln", q.reshape(m, nb, 8, 4), w.reshape(nb, 8, 4, n))
    combined = (scale_a.T[:, :, None] * scale[None, None, :]).astype(F32)  # [nb, m, n]
    groups = nb // 4
    acc16 = np.zeros((16, m, n), F32)
    for g in range(groups):
        b0 = 4 * g
        lo = np.concatenate([dot[b0], dot[b0 + 1]], axis=1)  # [m, 16, n]: blocks b0, b0 + 1
        hi = np.concatenate([dot[b0 + 2], dot[b0 + 3]], axis=1)  # blocks b0 + 2, b0 + 3
        lanes, scales = [], []
        for quarter in range(4):
            j = 4 * quarter
            s_lo = combined[b0 + quarter // 2]
            s_hi = combined[b0 + 2 + quarter // 2]
            lanes += [lo[:, j] + lo[:, j + 2], lo[:, j + 1] + lo[:, j + 3],
                      hi[:, j] + hi[:, j + 2], hi[:, j + 1] + hi[:, j + 3]]
            scales += [s_lo, s_lo, s_hi, s_hi]
        acc16 = (np.stack(lanes).astype(F64) * np.stack(scales).astype(F64) + acc16).astype(F32)
    acc8 = (acc16[:8] + acc16[8:]).astype(F32)
    for b in range(4 * groups, nb):
        acc8 = (dot[b].transpose(1, 0, 2).astype(F64) * combined[b][None].astype(F64) + acc8).astype(F32)
    n4 = n - n % 4
    c = np.empty((m, n), F32)
    c[:, :n4] = _sum_c4(acc8[:, :, :n4])
    c[:, n4:] = _sum_c1(acc8[:, :, n4:])
    if bias is not None:
        c = (c + np.asarray(bias, dtype=F32)).astype(F32)
    w_sum = (-scale * zero_point.astype(F32)).astype(F32)  # per block; equal across a column's blocks
    t = np.zeros((m, n), F32)
    for b in range(nb):
        t = (sum_a[:, b:b + 1].astype(F64) * w_sum[None, :].astype(F64) + t).astype(F32)
    c = (c + t).astype(F32)
    return c.reshape(*lead, n)
