"""Bit-exact numpy references of ONNX Runtime 1.32's CPU integer kernels (MLAS).

Targets the default CPU execution provider on x86-64: the integer kernels on
any x86-64 CPU (the `isa` argument: AVX2 without VNNI saturates uint8 x int8
pairs, see below), the float kernels as measured on an AVX-512 CPU (Zen 4).
Layouts are the project's: NHWC activations, conv weights OHWI (O = groups*Og,
I = C/groups), Gemm weights [out, in], int32 bias.  Parameters are `QParams`;
every scale is first rounded to float32 (what an .onnx file stores).

Shared pieces (onnxruntime/core/mlas/lib/quantize.cpp):

- `MlasRequantizeOutput`: `v = float32(int32 acc) * scale_f32` (one vmulps);
  `v = min(max(v, lo - zp), hi - zp)` in float; `cvtps2dq` (round half to
  even); `+ zp`.  Clamping before the conversion equals clamping after it.
- `MlasQuantizeLinear`: `v = x / scale` (a real division, `divps`, not a
  multiply by 1/scale); clamp to `[lo - zp, hi - zp]` (`maxps` turns NaN into
  `lo - zp`); `cvtps2dq` (ties to even); `+ zp`.  Same for u8/s8/u16/s16.

Per-op recipes (a = raw stored value, zp its zero point, s its float32 scale):

- qlinear_conv (qlinearconv.cc): `scale[c] = f32(f32(x_s * w_s[c]) / y_s)`
  (float32 arithmetic, not double); `acc = sum((x - x_zp) * (w - w_zp)) + bias`
  in int32; MlasRequantizeOutput.  Padding taps read x_zp (contribute 0).
- qlinear_matmul / qgemm / matmul_integer / conv_integer: same accumulator;
  QLinearMatMul scale `f32(f32(a_s*b_s)/y_s)`; QGemm scale
  `f32(f32(f32(alpha*a_s)*b_s)/y_s)`, its int32 C is added to the
  accumulator before requantization; without y_scale QGemm returns
  `float32(acc) * f32(alpha*a_s*b_s)`.  MatMulInteger / ConvInteger return the
  int32 accumulator.
- **AVX2 u8 x s8 saturation** (isa="avx2"): with uint8 activations and int8
  weights MLAS's U8S8 kernels (QgemmU8S8KernelAvx2 / QgemvU8S8KernelAvx2 /
  ConvSymKernelAvx2) multiply with `vpmaddubsw`, which adds the two products
  of each pair of adjacent K elements (raw stored u8 * s8, before any zero
  point correction) and saturates that pair sum to int16.  The reference
  models it: K is flattened in (ky, kx, c) order per group, zero padded to
  even length, and `acc = sum_pairs sat16(a0*b0 + a1*b1) - b_zp*sum(a) -
  a_zp*sum(b) + K*a_zp*b_zp (+ bias)`.  It bites only when a pair exceeds
  32767, e.g. a = 255, 255 with b = 127, 127 (not with 7-bit "reduce_range"
  weights).  Measured with ORT 1.32 under `qemu-x86_64 -cpu Haswell`
  (tools/ort_emulated.py): the pairs are adjacent in that flattened order
  and cross taps (3 or 5 input channels: per-tap channel padding gives
  hundreds of differences, the flat pairing none), for QLinearConv with
  symmetric and asymmetric weights, grouped convolutions, QGemm,
  QLinearMatMul and MatMulInteger; padded taps pair their raw x_zp.
  Depthwise convolutions (1 in and 1 out channel per group) use vpmaddwd on
  widened values and are exact.  Int8 activations (S8S8, S8U8) use MLAS's
  portable C++ kernel on AVX2 and uint8 x uint8 uses vpmaddwd: both exact.
  CPUs with AVX-512 VNNI or AVX-VNNI (Ice Lake, Alder Lake, Zen4+) use
  vpdpbusd (no int16 step): isa="vnni" (= exact).  Without AVX2 (SSE4.1
  kernels, measured under `-cpu SandyBridge` / `Nehalem`) the sums are exact
  too: isa="sse".  AVX-512BW without VNNI (Skylake-X) is read to saturate as
  AVX2 does (not measured: qemu 7.2 has no AVX-512).  `detect_isa` picks the
  host's; `QDIALECT_ORT_ISA` overrides it.
- qlinear_add (qladd_avx2.cpp, MlasQLinearAddKernelAvx2Helper; the kernel on
  every AVX2 CPU, AVX-512 / VNNI included): raw values, zero points folded
  into a float32 constant, FMA: `rA = f32(a_s/y_s)`, `rB = f32(b_s/y_s)`,
  `fixed = f32(y_zp) - fma(rA, a_zp, f32(rB*b_zp))`,
  `v = fma(a, rA, fma(b, rB, fixed))`; `cvtps2dq` (ties to even, overflow ->
  INT32_MIN), saturating packs.  When a is the broadcast scalar ORT swaps
  the operands (a <-> b with their scales and zero points).
- qlinear_mul (qlmul.cpp, SSE2, no dispatch): `ratio = f32(f32(a_s*b_s)/y_s)`;
  `v = f32(f32(f32((a - a_zp)*(b - b_zp)) * ratio) + f32(y_zp))` (zero point
  added in float before rounding); `cvtps2dq`, saturating packs.
- qlinear_sigmoid / qlinear_leaky_relu (qlinear_lookup_table.cc): a 256-entry
  table over raw bytes: `d = f32(x_s * (q - x_zp))`; sigmoid is MLAS's
  rational approximation MlasLogisticKernelFma3 (clamp d to [-18, 18], odd
  polynomial p / even polynomial q with fused multiply-adds, `+ 0.5`,
  `max(., 0)`); leaky relu `d >= 0 ? d : f32(alpha * d)`; the table entry is
  MlasQuantizeLinear of that float.
- qlinear_avg_pool (qlinear_pool.cc): dequantize each input to float32
  `x_s * (q - x_zp)`, sum the in-image taps in float32 in (ky, kx) order,
  divide (float32) by the count (all kernel taps when count_include_pad = 1,
  in-image taps otherwise; padded taps add 0.0), then
  `clamp(nearbyintf(f32(avg / y_s) + y_zp))`.
- qlinear_global_avg_pool (qlgavgpool.cpp): `acc = sum(q) - x_zp * N` in
  int32, `scale = f32(x_s / f32(y_s * f32(N)))`, MlasRequantizeOutput.
- qlinear_concat (qlinear_concat.cc): an input whose (scale, zp) equal the
  output's is copied; otherwise a 256-entry table
  `MlasQuantizeLinear(f32(x_s * (q - x_zp)))`.
- qlinear_softmax (qlinear_softmax.cc, opset 13 semantics): table in double
  `t[i] = float32(exp((i - 255 + bs) * x_s))` with
  `bs = max(0, log(FLT_MAX / D) - 5) / x_s`; per row, `t` is indexed by
  `x - max + 255`; `sum` accumulates float32 in order along the axis;
  `y = nearbyintf(f32(t * floor(1 / y_s)) / sum) + y_zp`, saturated to the
  storage range (measured on 1.32: a probability of 1 with y = (1/256, -128)
  gives 127, not a wrapped -128).
- quantize_linear: MlasQuantizeLinear (division, ties to even, saturate).
- dequantize_linear: `f32(f32(q - zp) * s)`, q - zp computed in int32.

Float kernels (the QDQ "onnx" profile's middle op; measured bitwise on 1.32,
ORT_DISABLE_ALL and the default session alike, on an AVX-512 Zen4):

- mlas_logistic (float Sigmoid too, MlasComputeLogisticF32KernelFma3): the
  table recipe above on float32 values.
- mlas_tanh (float Tanh, tanh.cpp constants + TanhKernelFma3.S): clamp to
  [-9, 9], x2 = f32(v*v), odd p (a13..a1) and even q (b6..b0) by Horner with
  FMAs, `f32(f32(v*p) / q)`.
- mlas_softmax_f32 (float Softmax opset 13, compute.cpp MlasComputeSoftmax,
  AVX-512F SumExp kernel): e = MLAS exp(f32(x - max)) (clamp -103.97, FMA range
  reduction, degree-6 polynomial, vscalefps), sum over 16 lanes then
  vhaddps-style reduction, `y = e * f32(1 / sum)`.
- reduce_mean_f32 (float ReduceMean over trailing ONNX-layout axes,
  reduction_ops.cc FastReduceKR): Eigen Packet4f sum per row (alignment
  dependent), `f32(sum / n)`; differs from float GlobalAveragePool's order.
- mlas_avg_pool_f32 / mlas_global_avg_f32: float AveragePool /
  GlobalAveragePool (MlasPool), see there.
- avg_pool19_f32 (float AveragePool opset >= 19, pool_functors.h
  AveragePool2DTask, not MlasPool): taps summed from 0.0 in (ky, kx) order,
  `f32(sum / f32(count))`; also NCHWc GlobalAveragePool with kernel=(H, W).
- Add / Sub / Mul / Div of float32 tensors (any broadcast): one IEEE float32
  operation per element (numpy's `a op b` in float32 is exact; Div divides).
"""

from __future__ import annotations

import functools
import os
from fractions import Fraction

import numpy as np

from ..qparams import QParams

__all__ = [
    "requantize_output",
    "mlas_quantize_linear",
    "qlinear_conv",
    "conv_integer",
    "qlinear_matmul",
    "matmul_integer",
    "qgemm",
    "qlinear_add",
    "qlinear_mul",
    "qlinear_sigmoid",
    "qlinear_leaky_relu",
    "qlinear_avg_pool",
    "qlinear_global_avg_pool",
    "mlas_avg_pool_f32",
    "mlas_global_avg_f32",
    "avg_pool19_f32",
    "qlinear_concat",
    "qlinear_softmax",
    "quantize_linear",
    "dequantize_linear",
    "mlas_logistic",
    "mlas_tanh",
    "mlas_softmax_f32",
    "reduce_mean_f32",
    "mlas_conv_f32",
    "mlas_gemm_f32",
    "mlas_matmul_f32",
    "nchwc_conv_eligible",
    "detect_isa",
]

F32 = np.float32


#: environment variable that forces the ISA the ONNX profiles model ("avx2", "vnni" or "sse"),
#: whatever this CPU is: e.g. to compare with ORT run under `qemu-x86_64 -cpu Haswell`
ISA_ENV = "QDIALECT_ORT_ISA"
ISAS = ("avx2", "vnni", "sse")


@functools.cache
def _cpu_isa() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    if flags & {"avx512_vnni", "avx_vnni"}:
                        return "vnni"
                    return "avx2" if "avx2" in flags else "sse"
    except OSError:
        pass
    return "avx2"


def detect_isa() -> str:
    """Which MLAS u8 x s8 kernels ORT runs: "avx2" on an x86 CPU with AVX2 and
    without VNNI (vpmaddubsw: pairs of products saturated to int16; AVX-512BW
    without VNNI is read to do the same), "vnni" with AVX-512 VNNI or AVX-VNNI
    (vpdpbusd, exact), "sse" without AVX2 (pmaddwd on widened values, exact).
    `QDIALECT_ORT_ISA` overrides it.  Reads /proc/cpuinfo (Linux); elsewhere "avx2"."""
    forced = os.environ.get(ISA_ENV)
    if forced:
        if forced not in ISAS:
            raise ValueError(f"{ISA_ENV}={forced!r}: expected one of {', '.join(ISAS)}")
        return forced
    return _cpu_isa()


def _s(q: QParams) -> np.ndarray:
    return np.asarray(q.scale, dtype=np.float64).astype(F32)


def _zp(q: QParams) -> int:
    return int(np.asarray(q.zero_point).reshape(-1)[0])


def _bounds(q: QParams) -> tuple[int, int]:
    # MLAS saturates to the storage type, not to a narrowed range.
    if q.signed:
        return -(1 << (q.bits - 1)), (1 << (q.bits - 1)) - 1
    return 0, (1 << q.bits) - 1


def _wrap32(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.int64)
    return ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def requantize_output(acc, scale, out_q: QParams) -> np.ndarray:
    """MlasRequantizeOutput: int32 acc -> f32 * scale (f32) -> clamp -> cvtps2dq -> + zp."""
    zp = _zp(out_q)
    lo, hi = _bounds(out_q)
    v = _wrap32(acc).astype(F32) * np.asarray(scale, dtype=F32)
    v = np.minimum(np.maximum(v, F32(lo - zp)), F32(hi - zp))
    return (np.rint(v).astype(np.int64) + zp).astype(out_q.dtype)


def mlas_quantize_linear(xf, scale, zero_point: int, lo: int, hi: int) -> np.ndarray:
    """MlasQuantizeLinear: x / scale (divps), clamp (NaN -> lo - zp), cvtps2dq, + zp."""
    v = np.asarray(xf, dtype=F32) / F32(scale)
    v = np.where(np.isnan(v), F32(lo - zero_point), v)
    v = np.minimum(np.maximum(v, F32(lo - zero_point)), F32(hi - zero_point))
    return np.rint(v).astype(np.int64) + zero_point


# ---------------------------------------------------------------------------
# integer dot products
# ---------------------------------------------------------------------------


def _dot(a: np.ndarray, b: np.ndarray, a_zp, b_zp, *, saturate: bool) -> np.ndarray:
    """a [..., M, K] raw ints, b [..., K, N] raw ints (zero points scalar or per-N).

    Returns int64 sum((a - a_zp) * (b - b_zp)) (before int32 wrap), with the
    AVX2 vpmaddubsw pair saturation when `saturate`."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    b_zp = np.asarray(b_zp, dtype=np.int64)
    if not saturate:
        return np.matmul(a - a_zp, b - b_zp)
    K = a.shape[-1]
    if K % 2:
        a = np.concatenate([a, np.zeros(a.shape[:-1] + (1,), np.int64)], axis=-1)
        b = np.concatenate([b, np.zeros(b.shape[:-2] + (1,) + b.shape[-1:], np.int64)], axis=-2)
    a0, a1 = a[..., 0::2], a[..., 1::2]          # [..., M, P]
    b0, b1 = b[..., 0::2, :], b[..., 1::2, :]    # [..., P, N]
    pair = a0[..., :, :, None] * b0[..., None, :, :] + a1[..., :, :, None] * b1[..., None, :, :]
    raw = np.clip(pair, -32768, 32767).sum(axis=-2)  # [..., M, N]
    a_sum = a.sum(axis=-1)[..., :, None]
    b_sum = b.sum(axis=-2)[..., None, :]
    return raw - b_zp * a_sum - a_zp * b_sum + K * a_zp * b_zp


def _u8s8(a_q: QParams, b_q: QParams, isa: str) -> bool:
    if isa not in ISAS:
        raise ValueError(f"isa must be one of {', '.join(ISAS)}, got {isa!r}")
    return isa == "avx2" and a_q.bits == 8 and not a_q.signed and b_q.bits == 8 and b_q.signed


def _conv_acc(x, w, x_q, w_q, strides, padding, dilations, groups, isa):
    x = np.asarray(x, dtype=np.int64)
    w = np.asarray(w, dtype=np.int64)
    n, h, wd, c = x.shape
    oc, fh, fw, ci = w.shape
    if groups is None:
        groups = c // ci
    if c != groups * ci or oc % groups:
        raise ValueError(f"channels {c} / weights {w.shape} do not match groups={groups}")
    og = oc // groups
    sh, sw = strides
    dh, dw = dilations
    (pt, pb), (pl, pr) = padding
    x_zp = _zp(x_q)
    w_zp = np.broadcast_to(np.asarray(w_q.zero_point, np.int64).reshape(-1), (oc,))
    oh = (h + pt + pb - ((fh - 1) * dh + 1)) // sh + 1
    ow = (wd + pl + pr - ((fw - 1) * dw + 1)) // sw + 1
    xp = np.full((n, h + pt + pb, wd + pl + pr, c), x_zp, dtype=np.int64)
    xp[:, pt:pt + h, pl:pl + wd, :] = x
    taps = []
    for ky in range(fh):
        for kx in range(fw):
            y0, x0 = ky * dh, kx * dw
            taps.append(xp[:, y0:y0 + sh * (oh - 1) + 1:sh, x0:x0 + sw * (ow - 1) + 1:sw, :])
    cols = np.stack(taps, axis=3)  # n, oh, ow, T, c
    depthwise = ci == 1 and og == 1
    sat = _u8s8(x_q, w_q, isa) and not depthwise
    out = np.empty((n, oh, ow, oc), dtype=np.int64)
    for g in range(groups):
        a = cols[..., g * ci:(g + 1) * ci].reshape(n * oh * ow, fh * fw * ci)  # (tap, c) order
        wg = w[g * og:(g + 1) * og].reshape(og, fh * fw * ci).T                 # K x og
        zg = w_zp[g * og:(g + 1) * og]
        out[..., g * og:(g + 1) * og] = _dot(a, wg, x_zp, zg, saturate=sat).reshape(n, oh, ow, og)
    return out


def _pairs(v, name):
    if isinstance(v, (int, np.integer)):
        return int(v), int(v)
    v = tuple(int(t) for t in v)
    if len(v) != 2:
        raise ValueError(f"{name} must be an int or a pair")
    return v


def _pads(padding):
    if padding is None:
        return (0, 0), (0, 0)
    (pt, pb), (pl, pr) = padding
    return (int(pt), int(pb)), (int(pl), int(pr))


def qlinear_conv(x, w, bias=None, *, x_q: QParams, w_q: QParams, out_q: QParams,
                 strides=(1, 1), padding=((0, 0), (0, 0)), dilations=(1, 1),
                 groups: int | None = None, isa: str = "avx2") -> np.ndarray:
    """ONNX QLinearConv on NHWC x and OHWI w (groups default C / I)."""
    acc = _conv_acc(x, w, x_q, w_q, _pairs(strides, "strides"), _pads(padding),
                    _pairs(dilations, "dilations"), groups, isa)
    oc = acc.shape[-1]
    if bias is not None:
        acc = acc + np.asarray(bias, np.int64).reshape(oc)
    ws = np.broadcast_to(_s(w_q).reshape(-1), (oc,))
    scale = ((_s(x_q) * ws).astype(F32) / _s(out_q)).astype(F32)
    return requantize_output(acc, scale, out_q)


def conv_integer(x, w, *, x_q: QParams, w_q: QParams, strides=(1, 1),
                 padding=((0, 0), (0, 0)), dilations=(1, 1), groups: int | None = None,
                 isa: str = "avx2") -> np.ndarray:
    """ONNX ConvInteger (int32 out); only zero points of x_q / w_q are used."""
    acc = _conv_acc(x, w, x_q, w_q, _pairs(strides, "strides"), _pads(padding),
                    _pairs(dilations, "dilations"), groups, isa)
    return _wrap32(acc).astype(np.int32)


def matmul_integer(a, b, *, a_q: QParams, b_q: QParams, isa: str = "avx2") -> np.ndarray:
    """ONNX MatMulInteger: a [..., M, K] @ b [..., K, N] -> int32 (b_zp per N allowed)."""
    acc = _dot(a, b, _zp(a_q), np.asarray(b_q.zero_point, np.int64).reshape(-1),
               saturate=_u8s8(a_q, b_q, isa))
    return _wrap32(acc).astype(np.int32)


def qlinear_matmul(a, b, *, a_q: QParams, b_q: QParams, out_q: QParams,
                   isa: str = "avx2") -> np.ndarray:
    """ONNX QLinearMatMul: batched a [..., M, K] @ b [..., K, N] (b scale/zp per N allowed)."""
    acc = _dot(a, b, _zp(a_q), np.asarray(b_q.zero_point, np.int64).reshape(-1),
               saturate=_u8s8(a_q, b_q, isa))
    scale = ((_s(a_q) * _s(b_q).reshape(-1)).astype(F32) / _s(out_q)).astype(F32)
    return requantize_output(acc, scale, out_q)


def qgemm(a, w, bias=None, *, a_q: QParams, w_q: QParams, out_q: QParams | None,
          alpha: float = 1.0, isa: str = "avx2") -> np.ndarray:
    """com.microsoft QGemm with weights [out, in] (= transB=1): y = a @ w.T + C.

    bias: int32 C broadcastable to [M, N]; out_q None -> float32 output."""
    b = np.asarray(w).T
    acc = _dot(a, b, _zp(a_q), np.asarray(w_q.zero_point, np.int64).reshape(-1),
               saturate=_u8s8(a_q, w_q, isa))
    if bias is not None:
        acc = _wrap32(acc + np.asarray(bias, np.int64))
    scale = ((F32(alpha) * _s(a_q)).astype(F32) * _s(w_q).reshape(-1)).astype(F32)
    if out_q is None:
        return _wrap32(acc).astype(F32) * scale
    scale = (scale / _s(out_q)).astype(F32)
    return requantize_output(acc, scale, out_q)


# ---------------------------------------------------------------------------
# elementwise
# ---------------------------------------------------------------------------


def _fma_f32(x, y, z) -> np.ndarray:
    """float32 fused multiply-add `RN32(x*y + z)` (one rounding) for float32 x, y, z.

    x*y is exact in float64 (24 + 24 bits); the float64 sum s = RN64(x*y + z)
    can only round to float32 wrongly when s lands exactly on a float32
    midpoint while the exact sum is not there, so those cases are pushed one
    float64 ulp towards the exact value (its error from TwoSum) first."""
    x = np.asarray(x, F32).astype(np.float64)
    y = np.asarray(y, F32).astype(np.float64)
    z = np.asarray(z, F32).astype(np.float64)
    p = x * y
    s = p + z
    bv = s - p
    err = (p - (s - bv)) + (z - bv)
    with np.errstate(over="ignore", invalid="ignore"):
        r = s.astype(F32)
        other = np.nextafter(r, np.where(s > r, F32(np.inf), F32(-np.inf)).astype(F32))
        mid = (s != r) & (s == (r.astype(np.float64) + other.astype(np.float64)) / 2)
        fix = mid & (err != 0)
        nudged = np.where(err > 0, np.nextafter(s, np.inf), np.nextafter(s, -np.inf))
        return np.where(fix, nudged.astype(F32), r)


def _cvtps2dq_sat(v: np.ndarray, out_q: QParams) -> np.ndarray:
    """`cvtps2dq` (ties to even; NaN and |v| >= 2**31 give INT32_MIN), then the
    saturating packs (`packssdw` + `packuswb` / `packsswb`) = clamp to storage."""
    lo, hi = _bounds(out_q)
    v = np.asarray(v, F32)
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(v) < F32(2.0 ** 31))
        r = np.where(bad, np.int64(-(1 << 31)), np.rint(np.where(bad, F32(0), v)).astype(np.int64))
    return np.clip(r, lo, hi).astype(out_q.dtype)


def _scalar_operand(a_shape, b_shape) -> str:
    """Which operand ORT's BroadcastLooper treats as a per-span scalar:
    "a" (input0scalar), "b" (input1scalar) or "" (general: span on span).
    The span is the innermost output axis longer than 1 (size-1 axes merge
    away); an input of size 1 along it (or of total size 1) is the scalar;
    input 0 is tested first."""
    out = np.broadcast_shapes(tuple(a_shape), tuple(b_shape))
    nd = len(out)
    a_full = (1,) * (nd - len(a_shape)) + tuple(a_shape)
    b_full = (1,) * (nd - len(b_shape)) + tuple(b_shape)
    axes = [i for i in range(nd) if out[i] > 1]
    if not axes:
        return "a"
    ax = axes[-1]
    if int(np.prod(a_shape, dtype=np.int64)) == 1 or a_full[ax] == 1:
        return "a"
    if int(np.prod(b_shape, dtype=np.int64)) == 1 or b_full[ax] == 1:
        return "b"
    return ""


def qlinear_add(a, b, *, a_q: QParams, b_q: QParams, out_q: QParams) -> np.ndarray:
    """com.microsoft QLinearAdd (numpy broadcasting), MLAS's AVX2 kernel
    (qladd_avx2.cpp: MlasQLinearAddKernelAvx2Helper), which every x86-64 CPU
    with AVX2 runs (AVX-512 / VNNI CPUs included; there is no AVX-512 kernel).

    Raw stored values, zero points folded into one float32 constant:
        rA = f32(sA / sC), rB = f32(sB / sC)
        fixed = f32(f32(zC) - fma(rA, f32(zA), f32(rB * f32(zB))))
        v = fma(f32(a), rA, fma(f32(b), rB, fixed))
        out = saturate(cvtps2dq(v))        (zC is already inside `fixed`)
    (vector B computes fma(b, rB, fixed) per lane; scalar B folds
    fixed' = fma(b0, rB, fixed) once: the same numbers.)
    The scalar fma(rA, zA, rB*zB) and fma(b0, rB, fixed) are GCC's FMA
    contractions of the C++ `ScaleRatio_AC * ZeroPointA + ScaleRatio_BC *
    ZeroPointB` and `_mm256_add_ps(fixed, _mm256_mul_ps(vb, ratio))` (the file is
    built with -mfma).  When A is the per-span scalar, ORT calls the kernel
    with A and B swapped (qlinear_binary_op.cc), so the roles of (a, sA, zA)
    and (b, sB, zB) above exchange.  Elements are independent: the 32-wide
    body and the zero-padded tail give the same numbers."""
    a = np.asarray(a)
    b = np.asarray(b)
    which = _scalar_operand(a.shape, b.shape)
    a, b = np.broadcast_arrays(a, b)
    x, xq, y, yq = (b, b_q, a, a_q) if which == "a" else (a, a_q, b, b_q)
    sC = _s(out_q).reshape(-1)[0]
    rX = F32(_s(xq).reshape(-1)[0] / sC)
    rY = F32(_s(yq).reshape(-1)[0] / sC)
    fixed = F32(F32(_zp(out_q)) - _fma_f32(rX, F32(_zp(xq)), F32(rY * F32(_zp(yq)))))
    xf = x.astype(np.int64).astype(F32)
    yf = y.astype(np.int64).astype(F32)
    v = _fma_f32(xf, rX, _fma_f32(yf, rY, fixed))
    return _cvtps2dq_sat(v, out_q)


def qlinear_mul(a, b, *, a_q: QParams, b_q: QParams, out_q: QParams) -> np.ndarray:
    """com.microsoft QLinearMul (numpy broadcasting), qlmul.cpp's SSE2 kernel
    (MlasQLinearMulKernel; no per-CPU dispatch, no FMA):
        ratio = f32(f32(sA * sB) / sC)
        p = (a - zA) * (b - zB)             (int16 operands, exact int32 product)
        v = f32(f32(f32(p) * ratio) + f32(zC))
        out = saturate(cvtps2dq(v))
    zC is added in float before the rounding (it shifts where float32 rounding
    errors and ties fall, e.g. with zC = 128).  Symmetric in a and b, so the
    scalar-operand swap of the broadcast loop does not matter."""
    ratio = F32((_s(a_q).reshape(-1)[0] * _s(b_q).reshape(-1)[0]) / _s(out_q).reshape(-1)[0])
    pa = np.asarray(a, np.int64) - _zp(a_q)
    pb = np.asarray(b, np.int64) - _zp(b_q)
    v = ((pa * pb).astype(F32) * ratio).astype(F32) + F32(_zp(out_q))
    return _cvtps2dq_sat(v.astype(F32), out_q)


# ---------------------------------------------------------------------------
# lookup tables
# ---------------------------------------------------------------------------

_LOGISTIC = dict(
    lower=-18.0, upper=18.0,
    alpha_9=4.37031012579801e-11, alpha_7=1.15627324459942e-07, alpha_5=6.08574864600143e-05,
    alpha_3=8.51377133304701e-03, alpha_1=2.48287947061529e-01,
    beta_10=6.10247389755681e-13, beta_8=5.76102136993427e-09, beta_6=6.29106785017040e-06,
    beta_4=1.70198817374094e-03, beta_2=1.16817656904453e-01, beta_0=9.93151921023180e-01,
)


def _round_f32(fr: Fraction) -> Fraction:
    """Correctly rounded (ties to even) float32 value of an exact rational."""
    if fr == 0:
        return Fraction(0)
    c = np.float32(float(fr))  # may be off by double rounding; fix below
    cands = [c, np.nextafter(c, F32(np.inf)), np.nextafter(c, F32(-np.inf))]
    best = None
    for v in cands:
        d = abs(Fraction(float(v)) - fr)
        key = (d, int(np.asarray(v).view(np.uint32)) & 1)
        if best is None or key < best[0]:
            best = (key, v)
    return Fraction(float(best[1]))


def _fma(a: Fraction, b: Fraction, c: Fraction) -> Fraction:
    return _round_f32(a * b + c)


def _mul(a: Fraction, b: Fraction) -> Fraction:
    return _round_f32(a * b)


def mlas_logistic(x) -> np.ndarray:
    """MlasLogisticKernelFma3 on float32 values, vectorised: every fma is `_fma_f32` (one
    float32 rounding), `v*v`, `v*p`, `p / q` and `+ 0.5` are float32 operations (IEEE,
    correctly rounded as the kernel's), then `max(., 0)`.  The same bits as the exact
    scalar emulation `mlas_logistic_exact` (65536 values of a 16-bit table: 12 s ->
    a few ms)."""
    k = {n: F32(v) for n, v in _LOGISTIC.items()}
    x = np.asarray(x, F32)
    v = np.minimum(np.maximum(x, k["lower"]), k["upper"])
    x2 = (v * v).astype(F32)
    p = _fma_f32(x2, k["alpha_9"], k["alpha_7"])
    for c in ("alpha_5", "alpha_3", "alpha_1"):
        p = _fma_f32(x2, p, k[c])
    q = _fma_f32(x2, k["beta_10"], k["beta_8"])
    for c in ("beta_6", "beta_4", "beta_2", "beta_0"):
        q = _fma_f32(x2, q, k[c])
    p = (v * p).astype(F32)
    r = ((p / q).astype(F32) + F32(0.5)).astype(F32)
    return np.asarray(np.maximum(r, F32(0.0)), F32).reshape(np.shape(x))


def mlas_logistic_exact(x) -> np.ndarray:
    """MlasLogisticKernelFma3 on float32 values (exact emulation in rationals, scalar loop:
    about 0.2 ms a value; the cross-check of `mlas_logistic`)."""
    k = {n: Fraction(float(F32(v))) for n, v in _LOGISTIC.items()}
    out = []
    for xv in np.asarray(x, F32).reshape(-1):
        v = Fraction(float(min(max(xv, F32(-18.0)), F32(18.0))))
        x2 = _mul(v, v)
        p = _fma(x2, k["alpha_9"], k["alpha_7"])
        p = _fma(x2, p, k["alpha_5"])
        p = _fma(x2, p, k["alpha_3"])
        p = _fma(x2, p, k["alpha_1"])
        q = _fma(x2, k["beta_10"], k["beta_8"])
        q = _fma(x2, q, k["beta_6"])
        q = _fma(x2, q, k["beta_4"])
        q = _fma(x2, q, k["beta_2"])
        q = _fma(x2, q, k["beta_0"])
        p = _mul(v, p)
        r = _round_f32(_round_f32(p / q) + Fraction(1, 2))
        out.append(max(float(r), 0.0))
    return np.asarray(out, F32).reshape(np.shape(x))


# ---------------------------------------------------------------------------
# float kernels (the "onnx" profile: DequantizeLinear -> float op -> QuantizeLinear)
# ---------------------------------------------------------------------------

_TANH = dict(
    lower=-9.0, upper=9.0,
    alpha_13=-2.76076847742355e-16, alpha_11=2.00018790482477e-13, alpha_9=-8.60467152213735e-11,
    alpha_7=5.12229709037114e-08, alpha_5=1.48572235717979e-05, alpha_3=6.37261928875436e-04,
    alpha_1=4.89352455891786e-03,
    beta_6=1.19825839466702e-06, beta_4=1.18534705686654e-04, beta_2=2.26843463243900e-03,
    beta_0=4.89352518554385e-03,
)


def mlas_tanh(x) -> np.ndarray:
    """ORT's float Tanh = MlasComputeTanh -> MlasComputeTanhF32KernelFma3 on every
    AVX2/FMA CPU (AVX-512 ones included; there is no AVX-512 tanh kernel), with
    the Eigen-derived constants `MlasTanhConstants` of mlas/lib/tanh.cpp:
        v = min(max(x, -9), 9); x2 = f32(v*v)
        p = fma(x2, a13, a11); p = fma(x2, p, a9) ... fma(x2, p, a1); p = f32(v*p)
        q = fma(x2, b6, b4); q = fma(x2, q, b2); q = fma(x2, q, b0)
        y = f32(p / q)
    Vectorised: every fma is `_fma_f32` (float64 exact product, one float32
    rounding with the double-rounding midpoint fix), so it is exact."""
    k = {n: F32(v) for n, v in _TANH.items()}
    x = np.asarray(x, F32)
    v = np.minimum(np.maximum(x, k["lower"]), k["upper"])
    x2 = (v * v).astype(F32)
    p = _fma_f32(x2, k["alpha_13"], k["alpha_11"])
    for c in ("alpha_9", "alpha_7", "alpha_5", "alpha_3", "alpha_1"):
        p = _fma_f32(x2, p, k[c])
    p = (v * p).astype(F32)
    q = _fma_f32(x2, k["beta_6"], k["beta_4"])
    for c in ("beta_2", "beta_0"):
        q = _fma_f32(x2, q, k[c])
    return np.asarray((p / q).astype(F32))


_EXP = dict(
    lower=-103.9720840454, rounding_bias=12582912.0, log2_reciprocal=1.44269504088896341,
    log2_high=-6.93145752e-1, log2_low=-1.42860677e-6,
    poly_0=float.fromhex("0x1.694000p-10"), poly_1=float.fromhex("0x1.125edcp-7"),
    poly_2=float.fromhex("0x1.555b5ap-5"), poly_3=float.fromhex("0x1.555450p-3"),
    poly_4=float.fromhex("0x1.fffff6p-2"), poly_56=1.0,
)


def _exp_avx512f(v: np.ndarray) -> np.ndarray:
    """One lane of MlasComputeSumExpF32KernelAvx512F (TransKernelAvx512F.S) after the
    `+ (-max)`: clamp below at LowerRange (-103.97), range reduction and the
    degree-6 polynomial with FMAs, `vscalefps` (p * 2**m, one rounding)."""
    k = {n: F32(c) for n, c in _EXP.items()}
    v = np.maximum(k["lower"], v)
    biased = _fma_f32(v, k["log2_reciprocal"], k["rounding_bias"])
    m = (biased - k["rounding_bias"]).astype(F32)
    v = _fma_f32(m, k["log2_high"], v)
    v = _fma_f32(m, k["log2_low"], v)
    p = _fma_f32(k["poly_0"], v, k["poly_1"])
    for c in ("poly_2", "poly_3", "poly_4", "poly_56", "poly_56"):
        p = _fma_f32(p, v, k[c])
    with np.errstate(over="ignore", invalid="ignore"):
        return (p.astype(np.float64) * np.exp2(m.astype(np.float64))).astype(F32)


def mlas_softmax_f32(x, axis: int = -1) -> np.ndarray:
    """ORT's float Softmax, opset 13 (softmax.cc: a non-last axis is transposed to
    the end and back) -> MlasComputeSoftmax (compute.cpp), per row of D values,
    with the AVX-512F kernels this CPU class dispatches:
    - max: MlasReduceMaximumF32KernelAvx512F (order-free);
    - e = exp(f32(x + (-max))) by MlasComputeSumExpF32KernelAvx512F (`_exp_avx512f`),
      sum: lane i of a 16-float accumulator adds elements i, i+16, ... in order
      (the 48-wide loop and the masked tail add zeros elsewhere), then
      a = lanes[0:8] + lanes[8:16], two vhaddps within each 128-bit half,
      sum = ((a0+a1)+(a2+a3)) + ((a4+a5)+(a6+a7));
    - y = e * f32(1 / sum) (MlasComputeSoftmaxOutputF32KernelAvx: vmulps, not a division).
    CPUs without AVX-512F use MlasComputeSumExpF32KernelFma3 (8 lanes, another exp
    reconstruction), which is not modelled here."""
    x = np.asarray(x, F32)
    xm = np.moveaxis(x, axis, -1)
    d = xm.shape[-1]
    rows = xm.reshape(-1, d)
    neg = (-rows.max(axis=1, keepdims=True)).astype(F32)
    with np.errstate(over="ignore", invalid="ignore"):
        e = _exp_avx512f((rows + neg).astype(F32))
    nr = rows.shape[0]
    lanes16 = np.concatenate([e, np.zeros((nr, (-d) % 16), F32)], axis=1).reshape(nr, -1, 16)
    acc = np.zeros((nr, 16), F32)
    with np.errstate(over="ignore", invalid="ignore"):
        for j in range(lanes16.shape[1]):
            acc = (acc + lanes16[:, j]).astype(F32)
        a = (acc[:, :8] + acc[:, 8:]).astype(F32)
        h = (a[:, 0::2] + a[:, 1::2]).astype(F32)  # (a0+a1), (a2+a3), (a4+a5), (a6+a7)
        s = ((h[:, 0] + h[:, 1]).astype(F32) + (h[:, 2] + h[:, 3]).astype(F32)).astype(F32)
        scale = (F32(1.0) / s).astype(F32)
        y = (e * scale[:, None]).astype(F32)
    return np.moveaxis(y.reshape(xm.shape), -1, axis)


def _eigen_sum_rows(rows: np.ndarray, align: np.ndarray) -> np.ndarray:
    """Eigen 3.4 `Map<VectorXf>(p, n).sum()` (Redux.h, LinearVectorizedTraversal, SSE
    Packet4f) of each row of [R, n]; align[r] = the row start's float offset from a
    16-byte boundary.  The unaligned head (first_default_aligned) is skipped; two
    packet accumulators take alternate 4-float blocks of the aligned body, are
    added, plus one more block if the body has an odd count; predux
    (p0+p2) + (p1+p3); then the head and the tail are added one by one.  With no
    whole aligned block the row is summed left to right."""
    nr, n = rows.shape
    out = np.empty(nr, F32)
    for a in range(4):
        sel = np.nonzero(align == a)[0]
        if sel.size == 0:
            continue
        x = rows[sel]
        start = min((4 - a) % 4, n)
        end4 = start + (n - start) // 4 * 4
        end8 = start + (n - start) // 8 * 8
        if end4 == start:
            res = x[:, 0].copy()
            for i in range(1, n):
                res = (res + x[:, i]).astype(F32)
            out[sel] = res
            continue
        p0 = x[:, start:start + 4].copy()
        if end4 - start > 4:
            p1 = x[:, start + 4:start + 8].copy()
            for i in range(start + 8, end8, 8):
                p0 = (p0 + x[:, i:i + 4]).astype(F32)
                p1 = (p1 + x[:, i + 4:i + 8]).astype(F32)
            p0 = (p0 + p1).astype(F32)
            if end4 > end8:
                p0 = (p0 + x[:, end8:end4]).astype(F32)
        res = ((p0[:, 0] + p0[:, 2]).astype(F32) + (p0[:, 1] + p0[:, 3]).astype(F32)).astype(F32)
        for i in list(range(start)) + list(range(end4, n)):
            res = (res + x[:, i]).astype(F32)
        out[sel] = res
    return out


def reduce_mean_f32(x, axes, keepdims: bool = True, base_offset: int = 0) -> np.ndarray:
    """ORT's float ReduceMean (reduction_ops.cc) when the reduced axes are the
    trailing ones of the array *in ONNX memory order* (size-1 axes aside), e.g.
    NCHW axes [2, 3] or the last axis: the KR fast path,
    ReduceAggregatorMean::FastReduceKR = per row of n = prod(reduced dims)
    contiguous values, Eigen's vectorised sum (`_eigen_sum_rows`), then
    `f32(sum / f32(n))`.  The summation order depends on each row's 16-byte
    alignment, so pass x in ONNX layout (an NHWC array must be transposed to
    NCHW first); base_offset = the tensor's first element's float offset from a
    16-byte boundary (0 for ORT's own buffers; ORT reads a fed numpy array in
    place, so (x.ctypes.data % 16) // 4 for a session input).  Not
    `mlas_global_avg_f32`: GlobalAveragePool sums in another order.  Other axis
    patterns (RK / KRK / RKR paths) raise NotImplementedError."""
    x = np.ascontiguousarray(x, F32)
    nd = x.ndim
    axes = sorted({int(a) % nd for a in axes})
    kept = [i for i in range(nd) if i not in axes and x.shape[i] != 1]
    reduced = [i for i in axes if x.shape[i] != 1]
    if kept and reduced and max(kept) > min(reduced):
        raise NotImplementedError("reduce_mean_f32: only trailing reduced axes (ORT's KR fast path)")
    n = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
    rows = x.reshape(-1, n)
    align = (base_offset + np.arange(rows.shape[0], dtype=np.int64) * n) % 4
    y = (_eigen_sum_rows(rows, align) / F32(n)).astype(F32)
    shape = [1 if i in axes else x.shape[i] for i in range(nd)] if keepdims else \
        [x.shape[i] for i in range(nd) if i not in axes]
    return y.reshape(shape)


def _table_inputs(x_q: QParams) -> np.ndarray:
    raw = np.arange(256, dtype=np.int64)
    vals = raw - 256 * (raw >= 128) if x_q.signed else raw
    return ((vals - _zp(x_q)).astype(F32) * _s(x_q)).astype(F32)  # indexed by raw byte


def _apply_table(x, table_f32, x_q: QParams, out_q: QParams) -> np.ndarray:
    lo, hi = _bounds(out_q)
    t = mlas_quantize_linear(table_f32, _s(out_q), _zp(out_q), lo, hi)
    idx = np.asarray(x).astype(x_q.dtype).view(np.uint8).astype(np.int64)
    return t[idx].astype(out_q.dtype)


def qlinear_sigmoid(x, *, x_q: QParams, out_q: QParams) -> np.ndarray:
    """com.microsoft QLinearSigmoid (table of MLAS's logistic approximation)."""
    return _apply_table(x, mlas_logistic(_table_inputs(x_q)), x_q, out_q)


def qlinear_leaky_relu(x, *, x_q: QParams, out_q: QParams, alpha: float) -> np.ndarray:
    """com.microsoft QLinearLeakyRelu."""
    d = _table_inputs(x_q)
    y = np.where(d >= 0, d, (F32(alpha) * d).astype(F32)).astype(F32)
    return _apply_table(x, y, x_q, out_q)


# ---------------------------------------------------------------------------
# pooling, concat, softmax
# ---------------------------------------------------------------------------


def qlinear_avg_pool(x, *, x_q: QParams, out_q: QParams, kernel, strides=(1, 1),
                     padding=((0, 0), (0, 0)), count_include_pad: int = 0,
                     s8_to_u8: bool = False) -> np.ndarray:
    """com.microsoft QLinearAveragePool on NHWC x (2-D).

    NCHW and channels_last kernels compute the same floats (per channel: taps
    summed in (ky, kx) order, divided by the count), so one recipe covers both.
    `s8_to_u8`: an int8 QDQ AveragePool that ORT fused on x86-64; its
    QDQS8ToU8Transformer first turned the int8 Q/DQ pairs into uint8 (zero
    point + 128), so the kernel adds `y_zp + 128` in float before rounding (a
    larger addend, hence a different float32 rounding near .5 ties).
    """
    x = np.asarray(x, np.int64)
    n, h, w, c = x.shape
    kh, kw = _pairs(kernel, "kernel")
    sh, sw = _pairs(strides, "strides")
    (pt, pb), (pl, pr) = _pads(padding)
    oh = (h + pt + pb - kh) // sh + 1
    ow = (w + pl + pr - kw) // sw + 1
    xf = ((x - _zp(x_q)).astype(F32) * _s(x_q)).astype(F32)
    out = np.empty((n, oh, ow, c), dtype=F32)
    for i in range(oh):
        hs = i * sh - pt
        he, hs = min(hs + kh, h), max(hs, 0)
        for j in range(ow):
            ws = j * sw - pl
            we, ws = min(ws + kw, w), max(ws, 0)
            acc = np.zeros((n, c), F32)
            for yy in range(hs, he):
                for xx in range(ws, we):
                    acc = (acc + xf[:, yy, xx, :]).astype(F32)
            cnt = kh * kw if count_include_pad else (he - hs) * (we - ws)
            out[:, i, j, :] = (acc / F32(cnt)).astype(F32)
    lo, hi = _bounds(out_q)
    shift = 128 if (s8_to_u8 and out_q.signed and out_q.bits == 8) else 0
    v = (out / _s(out_q)).astype(F32) + F32(_zp(out_q) + shift)
    return np.clip(np.rint(v).astype(np.int64) - shift, lo, hi).astype(out_q.dtype)


def mlas_avg_pool_f32(x, *, kernel, strides=(1, 1), padding=((0, 0), (0, 0)),
                      count_include_pad: int = 0) -> np.ndarray:
    """ORT's float AveragePool opset 7..18 (Pool<float, AveragePool> -> MlasPool) on NHWC float32 x.

    MlasPool picks, per call:
    - the global kernel when the kernel equals the input, strides 1, no padding (`mlas_global_avg_f32`);
    - MlasPool2DVectorKernel when stride_w <= 2, both kernel dims <= 32 and
      pl + W + pr <= 2045: per output row, each input column is summed over the
      window's in-image rows (first row, then + the next ...), the padded
      column sums are 0.0, then kw consecutive column sums are added left to
      right; divided (divps) by kh*kw (count_include_pad) or by
      in-image columns * in-image rows;
    - otherwise MlasPool2DKernel: in-image taps summed from 0 in (ky, kx) order, divided.
    """
    x = np.asarray(x, F32)
    n, h, w, c = x.shape
    kh, kw = _pairs(kernel, "kernel")
    sh, sw = _pairs(strides, "strides")
    (pt, pb), (pl, pr) = _pads(padding)
    if (kh, kw) == (h, w) and (sh, sw) == (1, 1) and not any((pt, pb, pl, pr)):
        return mlas_global_avg_f32(x)
    oh = (h + pt + pb - kh) // sh + 1
    ow = (w + pl + pr - kw) // sw + 1
    out = np.empty((n, oh, ow, c), F32)
    vector = sw <= 2 and kh <= 32 and kw <= 32 and 2048 - 3 - pl - pr >= w
    for i in range(oh):
        hs = i * sh - pt
        he, hs = min(hs + kh, h), max(hs, 0)
        rows = he - hs
        if vector:
            col = x[:, hs].copy()
            for r in range(hs + 1, he):
                col = (col + x[:, r]).astype(F32)
            buf = np.zeros((n, pl + w + pr + kw + 2 * sw, c), F32)
            buf[:, pl:pl + w] = col
            for j in range(ow):
                s0 = j * sw
                acc = buf[:, s0].copy()
                for k in range(1, kw):
                    acc = (acc + buf[:, s0 + k]).astype(F32)
                if count_include_pad:
                    d = F32(kh * kw)
                else:
                    d = F32(max((min(s0 + kw, pl + w) - max(s0, pl)) * rows, 1))
                out[:, i, j] = (acc / d).astype(F32)
        else:
            for j in range(ow):
                ws = j * sw - pl
                we, ws = min(ws + kw, w), max(ws, 0)
                acc = np.zeros((n, c), F32)
                for yy in range(hs, he):
                    for xx in range(ws, we):
                        acc = (acc + x[:, yy, xx]).astype(F32)
                d = kh * kw if count_include_pad else rows * (we - ws)
                out[:, i, j] = (acc / F32(d)).astype(F32)
    return out


def mlas_global_avg_f32(x) -> np.ndarray:
    """MlasPoolGlobalKernel (float GlobalAveragePool, and AveragePool whose kernel
    is the whole unpadded input) on NHWC float32 x -> [N, 1, 1, C]: over the
    H*W plane in row-major order, lane k of a 4-float vector accumulates
    elements k, k+4, ... of the first 4*floor(HW/4); the lanes are reduced as
    (l0 + l2) + (l1 + l3); the remaining elements are added one by one; then
    divided by float(HW)."""
    x = np.asarray(x, F32)
    n, h, w, c = x.shape
    size = h * w
    flat = x.reshape(n, size, c)
    full = size - size % 4
    lanes = np.zeros((4, n, c), F32)
    for i in range(0, full, 4):
        lanes = (lanes + flat[:, i:i + 4].transpose(1, 0, 2)).astype(F32)
    acc = ((lanes[0] + lanes[2]).astype(F32) + (lanes[1] + lanes[3]).astype(F32)).astype(F32)
    for i in range(full, size):
        acc = (acc + flat[:, i]).astype(F32)
    return (acc / F32(size)).astype(F32).reshape(n, 1, 1, c)


def avg_pool19_f32(x_nhwc, *, kernel, strides=(1, 1), padding=((0, 0), (0, 0)), dilations=(1, 1),
                   count_include_pad: int = 0) -> np.ndarray:
    """ORT's float AveragePool for opset >= 19 (the op gained `dilations`) on NHWC float32
    x (ceil_mode 0): AveragePoolV19 -> pool_functors.h AveragePool2DTask, a scalar loop, not
    MlasPool (`mlas_avg_pool_f32` differs in about half of the elements).  Measured bitwise
    on 1.32 (opsets 19 and 21, ORT_DISABLE_ALL and the default session alike).

    Per output: `y = 0.0f`, then `y += x[h, w]` over the taps h = hstart + ky*dh,
    w = wstart + kx*dw in (ky, kx) order, skipping taps outside the image (the sum starts
    from +0.0, so an all -0.0 window gives +0.0); then `y /= count` (a float32 division by
    float(count), not a multiply by its reciprocal).  count = the number of in-image taps,
    or with count_include_pad = 1 `(1 + (hend - hstart - 1) // dh) * (1 + (wend - wstart - 1) // dw)`
    with hstart = oh*sh - pad_top (unclamped) and hend = min(hstart + kh*dh, H + pad_bottom)
    (likewise for w) -- without ceil_mode always kh*kw.  A window without an in-image tap
    would give 0.0 (ORT rejects pads >= kernel, so it does not arise).

    The same arithmetic is com.microsoft.nchwc GlobalAveragePool, which the default session
    (NchwcTransformer) substitutes for GlobalAveragePool when C is a multiple of the NCHWc
    block size (16 with AVX-512, 8 with AVX2): `avg_pool19_f32(x, kernel=(H, W))`.
    """
    x = np.asarray(x_nhwc, F32)
    n, h, w, c = x.shape
    kh, kw = _pairs(kernel, "kernel")
    sh, sw = _pairs(strides, "strides")
    dh, dw = _pairs(dilations, "dilations")
    (pt, pb), (pl, pr) = _pads(padding)
    oh = (h + pt + pb - ((kh - 1) * dh + 1)) // sh + 1
    ow = (w + pl + pr - ((kw - 1) * dw + 1)) // sw + 1
    hs = np.arange(oh, dtype=np.int64) * sh - pt
    ws = np.arange(ow, dtype=np.int64) * sw - pl
    acc = np.zeros((n, oh, ow, c), F32)
    cnt = np.zeros((oh, ow), np.int64)
    for ky in range(kh):
        yy = hs + ky * dh
        vy = (yy >= 0) & (yy < h)
        rows = x[:, np.clip(yy, 0, h - 1)]
        for kx in range(kw):
            xx = ws + kx * dw
            v = vy[:, None] & ((xx >= 0) & (xx < w))[None, :]
            tap = rows[:, :, np.clip(xx, 0, w - 1)]
            # adding +0.0 for a skipped tap is exact: the running sum, started at +0.0, is never -0.0
            acc = (acc + np.where(v[None, :, :, None], tap, F32(0))).astype(F32)
            cnt += v
    if count_include_pad:
        he = np.minimum(hs + kh * dh, h + pb)
        we = np.minimum(ws + kw * dw, w + pr)
        d = (1 + (he - hs - 1) // dh)[:, None] * (1 + (we - ws - 1) // dw)[None, :]
    else:
        d = cnt
    y = (acc / np.maximum(d, 1).astype(F32)[None, :, :, None]).astype(F32)
    return np.where((cnt > 0)[None, :, :, None], y, F32(0)).astype(F32)


def qlinear_global_avg_pool(x, *, x_q: QParams, out_q: QParams) -> np.ndarray:
    """com.microsoft QLinearGlobalAveragePool on NHWC x -> [N, 1, 1, C]."""
    x = np.asarray(x, np.int64)
    n, h, w, c = x.shape
    size = h * w
    acc = x.sum(axis=(1, 2), keepdims=True) - _zp(x_q) * size
    scale = (_s(x_q) / (_s(out_q) * F32(size)).astype(F32)).astype(F32)
    return requantize_output(acc, scale, out_q)


def qlinear_concat(xs, *, x_qs, out_q: QParams, axis: int) -> np.ndarray:
    """com.microsoft QLinearConcat."""
    lo, hi = _bounds(out_q)
    parts = []
    for x, q in zip(xs, x_qs):
        if float(_s(q)) == float(_s(out_q)) and _zp(q) == _zp(out_q):
            parts.append(np.asarray(x).astype(out_q.dtype))
            continue
        t = mlas_quantize_linear(_table_inputs(q), _s(out_q), _zp(out_q), lo, hi)
        idx = np.asarray(x).astype(q.dtype).view(np.uint8).astype(np.int64)
        parts.append(t[idx].astype(out_q.dtype))
    return np.concatenate(parts, axis=axis)


def qlinear_softmax(x, *, x_q: QParams, out_q: QParams, axis: int = -1) -> np.ndarray:
    """com.microsoft QLinearSoftmax with opset-13 semantics (softmax along `axis`)."""
    x = np.moveaxis(np.asarray(x, np.int64), axis, -1)
    D = x.shape[-1]
    xs = float(_s(x_q))
    bs = np.log(float(np.finfo(np.float32).max) / D)
    bs = max(0.0, bs - 5.0) / xs
    i = np.arange(256, dtype=np.float64)
    table = np.exp((i - 255 + bs) * xs).astype(F32)
    idx = x - x.max(axis=-1, keepdims=True) + 255
    t = table[idx]
    vsum = np.zeros(x.shape[:-1], F32)
    for j in range(D):
        vsum = (vsum + t[..., j]).astype(F32)
    ys = F32(np.floor(F32(1.0) / _s(out_q)))
    q = np.rint(((t * ys).astype(F32) / vsum[..., None]).astype(F32)).astype(np.int64) + _zp(out_q)
    lo, hi = _bounds(out_q)
    r = np.clip(q, lo, hi)  # measured: int8 saturates to 127 (1.32 does not wrap)
    return np.moveaxis(r.astype(out_q.dtype), -1, axis)


# ---------------------------------------------------------------------------
# quantize / dequantize
# ---------------------------------------------------------------------------


def quantize_linear(xf, *, out_q: QParams) -> np.ndarray:
    """ONNX QuantizeLinear (per-tensor or per-axis), float32 in."""
    xf = np.asarray(xf, F32)
    lo, hi = _bounds(out_q)
    if out_q.per_axis:
        shape = out_q.broadcast_shape(xf.ndim)
        s = _s(out_q).reshape(shape)
        z = np.asarray(out_q.zero_point, np.int64).reshape(shape)
        v = xf / s
        v = np.where(np.isnan(v), (lo - z).astype(F32), v)
        v = np.minimum(np.maximum(v, (lo - z).astype(F32)), (hi - z).astype(F32))
        return (np.rint(v).astype(np.int64) + z).astype(out_q.dtype)
    return mlas_quantize_linear(xf, _s(out_q), _zp(out_q), lo, hi).astype(out_q.dtype)


def dequantize_linear(x, *, x_q: QParams) -> np.ndarray:
    """ONNX DequantizeLinear: f32(x - zp) * scale."""
    x = np.asarray(x, np.int64)
    if x_q.per_axis:
        shape = x_q.broadcast_shape(x.ndim)
        return ((x - np.asarray(x_q.zero_point, np.int64).reshape(shape)).astype(F32)
                * _s(x_q).reshape(shape)).astype(F32)
    return ((x - _zp(x_q)).astype(F32) * _s(x_q)).astype(F32)


# ---------------------------------------------------------------------------
# float GEMM / convolution (MLAS SGEMM, MlasConv, NCHWc kernels)
# ---------------------------------------------------------------------------

_SGEMM_STRIDEN = 128  # MLAS_SGEMM_STRIDEN
_SGEMM_STRIDEK = 128  # MLAS_SGEMM_STRIDEK


def sgemm_strides(n: int, k: int) -> tuple[int, int]:
    """MLAS's SGEMM block sizes (N, K) for an N x K problem: 128 x 128 to start, K halved (N doubled)
    while K is larger than needed, else N halved (K doubled) down to 16 while N is."""
    sn, sk = _SGEMM_STRIDEN, _SGEMM_STRIDEK
    if n >= k:
        while sk // 2 >= k:
            sn, sk = sn * 2, sk // 2
    else:
        while sn > 16 and sn // 2 >= n:
            sn, sk = sn // 2, sk * 2
    return sn, sk
_SGEMM_PACKED_STRIDEK = 256  # K block of MlasGemm with a prepacked B (measured)
_NCHWC = 16  # MlasNchwcGetBlockSize() on AVX-512F
_POINTWISE_BATCH = 128  # ICSTRIDE of the NCHWc pointwise algorithm


def _fma_chain(a: np.ndarray, b: np.ndarray, acc=None) -> np.ndarray:
    """a [M, K], b [K, N]: the SGEMM kernels' accumulator, `acc = fma(a_k, b_k, acc)`
    for k in order from +0 (one FMA per K step over all M*N outputs at once)."""
    m, k = a.shape
    acc = np.zeros((m, b.shape[1]), F32) if acc is None else acc
    for i in range(k):
        acc = _fma_f32(a[:, i:i + 1], b[i:i + 1, :], acc)
    return acc


def _sgemm_m1(a: np.ndarray, b: np.ndarray, c) -> np.ndarray:
    """MlasSgemmKernelM1Avx (M == 1, no FMA): K in groups of 4,
    `c = (((p0 + p1) + p2) + p3) + c`, then a pair `(p0 + p1) + c`, then `p0 + c`;
    products rounded (vmulps); c = None is beta 0."""
    k = b.shape[0]
    c = np.zeros(b.shape[1], F32) if c is None else np.asarray(c, F32)

    def p(i):
        return (F32(a[i]) * b[i]).astype(F32)

    i = 0
    for width in (4, 2, 1):
        while k - i >= width:
            s = p(i)
            for j in range(1, width):
                s = (s + p(i + j)).astype(F32)
            c = (s + c).astype(F32)
            i += width
            if width < 4:
                break
    return c


def _sgemm_operation(a: np.ndarray, b: np.ndarray, c=None) -> np.ndarray:
    """MlasSgemmOperation, NoTrans x NoTrans, alpha 1, beta 0 (c None) or 1 (c [M, N]).

    M == 1 takes SgemmKernelM1Avx.  Otherwise N is cut in StrideN slices and
    K in StrideK slices (128 x 128, StrideK halved while StrideK/2 >= K when
    N >= K, else doubled while StrideN > 16 and StrideN/2 >= N, StrideN
    halved); each K slice is an FMA chain from 0 added to C (`C + acc`).
    N == 1 (SgemmKernelM1TransposeBAvx) is not modelled."""
    a = np.asarray(a, F32)
    b = np.asarray(b, F32)
    m, k = a.shape
    n = b.shape[1]
    if m == 1:
        return _sgemm_m1(a[0], b, None if c is None else c[0])[None, :]
    sn, sk = sgemm_strides(n, k)
    out = np.empty((m, n), F32)
    for n0 in range(0, n, sn):
        cc = None if c is None else np.asarray(c, F32)[:, n0:n0 + sn]
        for k0 in range(0, k, sk):
            acc = _fma_chain(a[:, k0:k0 + sk], b[k0:k0 + sk, n0:n0 + sn])
            cc = acc if cc is None else (cc + acc).astype(F32)
        out[:, n0:n0 + sn] = cc
    return out


def _sgemm_packed(a: np.ndarray, b: np.ndarray, c=None) -> np.ndarray:
    """MlasGemm with a prepacked B (constant weights of Gemm / MatMul): K blocks
    of 256, each an FMA chain from 0, added to C; no M == 1 special case."""
    a = np.asarray(a, F32)
    b = np.asarray(b, F32)
    k = a.shape[1]
    for k0 in range(0, k, _SGEMM_PACKED_STRIDEK):
        acc = _fma_chain(a[:, k0:k0 + _SGEMM_PACKED_STRIDEK], b[k0:k0 + _SGEMM_PACKED_STRIDEK])
        c = acc if c is None else (np.asarray(c, F32) + acc).astype(F32)
    return c


def mlas_gemm_f32(a, b, c=None, *, transB: int = 0, const_b: bool = True) -> np.ndarray:
    """ORT's float Gemm (alpha = beta = 1, transA = 0): a [M, K], b [K, N] ([N, K]
    with transB), c broadcastable to [M, N] or None.

    Constant B (an initializer: ORT prepacks it, both sessions): C is
    broadcast into Y first, then K blocks of 256 (FMA chains from 0, in K
    order) are added: `y = (c + acc[0:256]) + acc[256:512] ...`.  Without C
    the first block is stored.  A non-constant B runs MlasSgemmOperation
    (`_sgemm_operation`, including the M == 1 AVX kernel without FMA)."""
    a = np.asarray(a, F32)
    b = np.asarray(b, F32)
    if transB:
        b = b.T
    m, n = a.shape[0], b.shape[1]
    c0 = None if c is None else np.ascontiguousarray(np.broadcast_to(np.asarray(c, F32), (m, n)))
    if const_b:
        return _sgemm_packed(a, b, c0)
    return _sgemm_operation(a, b, c0)


def mlas_matmul_f32(a, b, *, const_b: bool | None = None) -> np.ndarray:
    """ORT's float MatMul (numpy broadcasting semantics, rank >= 2).

    A constant 2-D B (default when const_b is None and b.ndim == 2) is
    prepacked: A's rows are flattened and `_sgemm_packed` runs.  Otherwise
    each broadcast batch runs MlasSgemmOperation (M == 1 -> AVX kernel
    without FMA; K slices per `_sgemm_operation`)."""
    a = np.asarray(a, F32)
    b = np.asarray(b, F32)
    if const_b is None:
        const_b = b.ndim == 2
    if const_b and b.ndim == 2:
        k = a.shape[-1]
        return _sgemm_packed(a.reshape(-1, k), b).reshape(a.shape[:-1] + (b.shape[1],))
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    ab = np.broadcast_to(a, batch + a.shape[-2:])
    bb = np.broadcast_to(b, batch + b.shape[-2:])
    out = np.empty(batch + (a.shape[-2], b.shape[-1]), F32)
    for idx in np.ndindex(*batch):
        out[idx] = _sgemm_operation(np.ascontiguousarray(ab[idx]), np.ascontiguousarray(bb[idx]))
    return out


def _conv_geometry(x, w, strides, pads, dilations):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    pt, pl, pb, pr = pads
    sh, sw = strides
    dh, dw = dilations
    oh = (h + pt + pb - ((kh - 1) * dh + 1)) // sh + 1
    ow = (wd + pl + pr - ((kw - 1) * dw + 1)) // sw + 1
    return oh, ow


def _conv_taps(x, kh, kw, strides, pads, dilations, oh, ow):
    """x [C, H, W] -> {(ky, kx): [C, oh, ow]} (zero padded; a padded tap adds an exact 0)."""
    pt, pl, pb, pr = pads
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr)))
    sh, sw = strides
    dh, dw = dilations
    return {(ky, kx): xp[:, ky * dh: ky * dh + (oh - 1) * sh + 1: sh, kx * dw: kx * dw + (ow - 1) * sw + 1: sw]
            for ky in range(kh) for kx in range(kw)}


def nchwc_conv_eligible(w_shape, group: int) -> bool:
    """Whether ORT 1.32's default session (NchwcTransformer, AVX-512 block 16)
    rewrites a float Conv with constant weights (and constant bias) into
    com.microsoft.nchwc.Conv (measured): depthwise (1 input channel per group,
    O == group) when C % 4 == 0; group 1 when C < 16 (NCHW input kernel) or
    C % 4 == 0; other groups when C/group and O/group are multiples of 16."""
    o, cg, _, _ = w_shape
    if group > 1:
        if cg == 1 and o == group:
            return o % 4 == 0
        return cg % _NCHWC == 0 and (o // group) % _NCHWC == 0
    return cg < _NCHWC or cg % 4 == 0


def _conv_disable_all(x, w, b, strides, pads, dilations, group):
    """MlasConv (ORT_DISABLE_ALL Conv, one thread)."""
    nb, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = _conv_geometry(x, w, strides, pads, dilations)
    og = o // group
    k = cg * kh * kw
    osz = oh * ow
    out = np.empty((nb, o, oh, ow), F32)
    direct = tuple(strides) == (1, 1) and tuple(pads) == (0, 0, 0, 0) and k == cg
    for n in range(nb):
        for g in range(group):
            xg = x[n, g * cg:(g + 1) * cg]
            a = w[g * og:(g + 1) * og].reshape(og, k)
            if direct:  # MlasConvAlgorithmGemmDirect
                y = _sgemm_operation(a, xg.reshape(cg, h * wd))
            else:
                taps = _conv_taps(xg, kh, kw, strides, pads, dilations, oh, ow)
                cols = np.stack([taps[ky, kx] for ky in range(kh) for kx in range(kw)], axis=1).reshape(k, osz)
                if og > osz:  # MlasConvAlgorithmExpandThenGemm
                    y = _sgemm_operation(a, cols)
                else:  # MlasConvAlgorithmExpandThenGemmSegmented (MlasConvOperation)
                    sn, sk = sgemm_strides(osz, k)
                    y = np.empty((og, osz), F32)
                    for n0 in range(0, osz, sn):
                        cc = None
                        for k0 in range(0, k, sk):
                            cc = _sgemm_operation(a[:, k0:k0 + sk], cols[k0:k0 + sk, n0:n0 + sn], cc)
                        y[:, n0:n0 + sn] = cc
            if b is not None:
                y = (y + b[g * og:(g + 1) * og, None]).astype(F32)
            out[n, g * og:(g + 1) * og] = y.reshape(og, oh, ow)
    return out


def _conv_nchwc(x, w, b, strides, pads, dilations, group):
    """MlasNchwcConv (default session, AVX-512F kernels, one thread)."""
    nb, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = _conv_geometry(x, w, strides, pads, dilations)
    og = o // group
    out = np.empty((nb, o, oh, ow), F32)
    pointwise = kh == 1 and kw == 1 and tuple(pads) == (0, 0, 0, 0)
    for n in range(nb):
        taps = _conv_taps(x[n], kh, kw, strides, pads, dilations, oh, ow)
        if group > 1 and cg == 1 and o == group:  # depthwise kernel
            acc = np.zeros((o, oh, ow), F32)
            for ky in range(kh):
                for kx in range(kw):
                    acc = _fma_f32(taps[ky, kx], w[:, 0, ky, kx][:, None, None], acc)
            out[n] = acc if b is None else (acc + b[:, None, None]).astype(F32)
            continue
        for g in range(group):
            if group == 1 and c < _NCHWC:  # NCHW input kernel: one input channel per pass
                step = 1
            elif pointwise:
                step = _POINTWISE_BATCH
            else:
                step = _NCHWC
            wg = w[g * og:(g + 1) * og]
            y = None
            for c0 in range(0, cg, step):
                acc = np.zeros((og, oh, ow), F32)
                for ky in range(kh):
                    for kx in range(kw):
                        for ci in range(c0, min(c0 + step, cg)):
                            acc = _fma_f32(taps[ky, kx][g * cg + ci][None], wg[:, ci, ky, kx][:, None, None], acc)
                y = acc if y is None else (acc + y).astype(F32)
            if b is not None:
                y = (y + b[g * og:(g + 1) * og, None, None]).astype(F32)
            out[n, g * og:(g + 1) * og] = y
    return out


def mlas_conv_f32(x, w, b=None, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group: int = 1,
                  session: str = "disable_all") -> np.ndarray:
    """ORT 1.32's float 2-D Conv on this CPU (AVX-512F), one intra-op thread:
    x NCHW, w OIHW (constant), b [O] or None, pads ONNX order (top, left,
    bottom, right).  Bitwise equal to ORT for the measured shapes.

    session="disable_all" (GraphOptimizationLevel.ORT_DISABLE_ALL; also a Conv
    the NCHWc transformer leaves alone): MlasConv per image and group, A =
    filter [O/g, K] (K in (c, ky, kx) order), B = input / im2col:
    - 1x1, stride 1, no padding: SGEMM directly on the input;
    - O/g > OH*OW: full im2col + SGEMM;
    - else MlasConvOperation: N (OH*OW) and K slices from 128 x 128 (the
      SGEMM stride rule), each K slice a MlasSgemmOperation with beta 1 after
      the first.
    SGEMM: each K slice an FMA chain from 0 in K order added to C
    (`_sgemm_operation`); M == 1 (depthwise, or one filter per group) uses
    SgemmKernelM1Avx: products rounded, summed in groups of 4 without FMA.
    The bias is added last (`y + b`, one rounding).

    session="default" (ORT_ENABLE_ALL): when `nchwc_conv_eligible`, the
    com.microsoft.nchwc.Conv kernels: depthwise = FMA chain over (ky, kx)
    then `+ b`; group 1 with C < 16 (NCHW input) = one input channel per
    pass, each pass an FMA chain over (ky, kx) from 0 added to the running
    output; 1x1 without padding (pointwise, any stride) = passes of 128 input
    channels, one FMA chain over the channels each; otherwise passes of 16
    input channels, each an FMA chain over (ky, kx, c); passes are added
    (`acc + y`) and the bias comes last.  Not eligible -> the
    disable_all recipe."""
    x = np.asarray(x, F32)
    w = np.asarray(w, F32)
    b = None if b is None else np.asarray(b, F32).reshape(-1)
    strides, dilations, pads = tuple(int(v) for v in strides), tuple(int(v) for v in dilations), tuple(
        int(v) for v in pads)
    if session not in ("disable_all", "default"):
        raise ValueError(f"session must be 'disable_all' or 'default', not {session!r}")
    if session == "default" and nchwc_conv_eligible(w.shape, group):
        return _conv_nchwc(x, w, b, strides, pads, dilations, group)
    return _conv_disable_all(x, w, b, strides, pads, dilations, group)
