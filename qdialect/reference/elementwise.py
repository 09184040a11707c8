"""Reference semantics of the elementwise qnn ops (binary arithmetic, min/max,
requantize, quantize / dequantize, relu-family clamps).

Every function takes stored-integer numpy arrays and keyword-only QParams, is
vectorised over whole arrays (numpy broadcasting for binary ops, which is
TFLite's right-aligned broadcasting), computes in int64 and returns the
output's container dtype.

`rounding` selects the arithmetic:

- "tflite": TFLite's reference kernels (BUILTIN_REF), bit for bit.
- "single": the same kernels built with TFLITE_SINGLE_ROUNDING (every
  MultiplyByQuantizedMultiplier becomes one rounding, ties toward +inf).
- "half_up": TVM's UPWARD rounding of the same Q31 multipliers (numerically
  the same formula as "single").
- "half_even": float32 requantization, round half to even (ONNX Runtime /
  XNNPACK style): `rint(float32(acc) * float32(real_multiplier))`.
- "litert": what LiteRT's default interpreter does for the op: XNNPACK's
  kernel where the XNNPACK delegate takes the op (8-bit ADD / SUB / MUL /
  QUANTIZE / DEQUANTIZE within its scale ranges), TFLite's optimized kernels
  elsewhere.  Those compute the reference integers for SUB, but 8-bit ADD and
  MUL run NEON code (through NEON_2_SSE on x86) whose vector blocks round and
  narrow differently (`_add_8bit_optimized`, `_mul_8bit_optimized`,
  `fivefold_lanes`).

Scales are taken as float32, as they are stored in a .tflite flatbuffer;
ratios are formed in float32 or double exactly where the TFLite kernel does.
"""

from __future__ import annotations

import math

import numpy as np

from ..qparams import QParams, ROUNDING_PROFILES, storage_bounds
from .rescale import (
    INT32_MAX,
    INT32_MIN,
    multiply_by_quantized_multiplier,
    multiply_single_rounding,
    quantize_multiplier,
    quantize_multiplier_for,
    rounding_divide_by_pot,
)

__all__ = [
    "FUSED_ACTIVATIONS",
    "fused_activation_range",
    "fivefold_lanes",
    "add",
    "sub",
    "mul",
    "maximum",
    "minimum",
    "squared_difference",
    "requantize",
    "quantize",
    "dequantize",
    "clamp",
    "relu",
    "relu6",
    "relu_n1_to_1",
    "relu_0_to_1",
    "absolute",
    "negate",
    "div",
]

FUSED_ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1")

# ---------------------------------------------------------------------------
# small helpers shared with activations.py
# ---------------------------------------------------------------------------


def _check_rounding(rounding: str) -> None:
    if rounding not in ROUNDING_PROFILES:
        raise ValueError(
            f"unknown rounding profile {rounding!r}; expected one of {ROUNDING_PROFILES}"
        )


def _per_tensor(q: QParams, name: str) -> None:
    if q.per_axis:
        raise ValueError(f"{name}: per-axis quantization is not supported by this op")


def f32(x) -> np.float32:
    """A number as float32 (how TFLite stores scales)."""
    return np.float32(x)


def scale32(q: QParams) -> np.float32:
    """The per-tensor scale of `q` as float32."""
    return np.float32(float(q.scale))


def zp(q: QParams) -> int:
    return int(q.zero_point)


def type_bounds(q: QParams) -> tuple[int, int]:
    """Bounds of the container integer type (int8 -> [-128, 127]); TFLite
    kernels saturate to these, not to a narrowed storage range."""
    return storage_bounds(q.bits, q.signed)


def _act_bounds(out_q: QParams, act_min, act_max) -> tuple[int, int]:
    lo = out_q.storage_min if act_min is None else int(act_min)
    hi = out_q.storage_max if act_max is None else int(act_max)
    return lo, hi


def _finish(v: np.ndarray, out_q: QParams, act_min, act_max) -> np.ndarray:
    lo, hi = _act_bounds(out_q, act_min, act_max)
    tlo, thi = type_bounds(out_q)
    return np.clip(v, max(lo, tlo), min(hi, thi)).astype(out_q.dtype)


def wrap_int32(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.int64)
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def round_half_away_f32(x) -> np.ndarray:
    """TfLiteRound / roundf on float32 values (result float64 holding an integer)."""
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def mbqm(x, m, shift, rounding: str = "tflite") -> np.ndarray:
    """MultiplyByQuantizedMultiplier under the integer profiles ("tflite":
    double rounding; "single"/"half_up": one rounding, ties up)."""
    if rounding in ("single", "half_up"):
        return multiply_single_rounding(x, m, shift)
    return multiply_by_quantized_multiplier(x, m, shift)


def quantize_multiplier_single(real) -> tuple[np.ndarray, np.ndarray]:
    """QuantizeMultiplier as built with TFLITE_SINGLE_ROUNDING (shift capped at 30)."""
    return quantize_multiplier_for(real, "single")


qmult = quantize_multiplier_for


def neon_srdhm(a, b) -> np.ndarray:
    """NEON_2_SSE vqrdmulhq_s32: high word of 2ab + 2^31 (ties toward +inf),
    INT32_MIN flipped to INT32_MAX."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    r = wrap_int32((a * b + (1 << 30)) >> 31)
    return np.where(r == INT32_MIN, np.int64(INT32_MAX), r)


def neon_rounding_shift_right(x, n) -> np.ndarray:
    """NEON_2_SSE vrshlq_s32 with a shift of -n (n >= 0): ties toward +inf."""
    x = np.asarray(x, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    nm1 = np.maximum(n - 1, 0)
    return np.where(n > 0, (x >> n) + ((x >> nm1) & 1), x)


def neon_mbqm(x, m, shift) -> np.ndarray:
    """TFLite MultiplyByQuantizedMultiplier4Rows as NEON_2_SSE executes it."""
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    return neon_rounding_shift_right(neon_srdhm(wrap_int32(np.asarray(x, np.int64) << left), m), right)


def vector_prefix(shape, lanes: int) -> np.ndarray:
    """Boolean mask (of `shape`) of the flat positions a NEON loop over
    `lanes` elements at a time covers; the rest runs the scalar tail."""
    n = int(np.prod(shape, dtype=np.int64))
    flat = np.arange(n) < (n // lanes) * lanes
    return flat.reshape(shape)


def _vshl(x, n: int) -> np.ndarray:
    """NEON vshlq_s32 by a constant: left shift wrapping in int32 for n >= 0,
    arithmetic (flooring) right shift for n < 0."""
    x = np.asarray(x, dtype=np.int64)
    if n >= 32:  # every bit shifted out
        return np.zeros_like(x)
    return wrap_int32(x << n) if n >= 0 else x >> min(-n, 63)


def wrap_int16(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.int64)
    return ((x + (1 << 15)) & 0xFFFF) - (1 << 15)


def fivefold_lanes(shape1, shape2, elementwise_lanes: int, scalar_lanes: int) -> np.ndarray:
    """Which kernel of TFLite's optimized 8-bit binary ops computes each output
    element (an int8 array of the broadcast output shape): 0 = a scalar loop
    (the reference arithmetic), 1 = the vector block of the elementwise kernel,
    2 = the vector block of the scalar-broadcast kernel.

    Follows ProcessBroadcastShapes and BinaryBroadcastFiveFold: equal
    (right-aligned) shapes are one elementwise call over all elements; a
    broadcast that folds into five nested loops calls the elementwise kernel
    on runs of y4 contiguous outputs (y4 > 1) or the scalar-broadcast kernel on
    runs of y3; anything else is the generic 6-D loop (scalar).  Each call
    runs whole blocks of `lanes` from its start and the rest one by one."""
    out_shape = np.broadcast_shapes(tuple(shape1), tuple(shape2))
    n = int(np.prod(out_shape, dtype=np.int64))
    rank = max(len(shape1), len(shape2))
    a = (1,) * (rank - len(shape1)) + tuple(int(d) for d in shape1)
    b = (1,) * (rank - len(shape2)) + tuple(int(d) for d in shape2)

    def runs(run: int, lanes: int, kind: int) -> np.ndarray:
        pos = np.arange(n) % run
        return np.where(pos < (run // lanes) * lanes, kind, 0).astype(np.int8).reshape(out_shape)

    if a == b:
        return runs(max(n, 1), elementwise_lanes, 1)
    first_fast = None
    for i in range(rank - 1, -1, -1):
        if a[i] == b[i]:
            continue
        if a[i] == 1:
            first_fast = True
        elif b[i] == 1:
            first_fast = False
        break
    if first_fast is None:
        return np.zeros(out_shape, np.int8)
    sa, sb = (a, b) if first_fast else (b, a)
    y = [1, 1, 1, 1, 1]
    i = rank - 1
    for slot, test in ((4, "eq"), (3, "a1"), (2, "eq"), (1, "b1"), (0, "eq")):
        while i >= 0 and (sa[i] == sb[i] if test == "eq" else
                          (sa[i] == 1 if test == "a1" else sb[i] == 1)):
            y[slot] *= sb[i] if test != "b1" else sa[i]
            i -= 1
    if i >= 0:
        return np.zeros(out_shape, np.int8)
    if y[4] > 1:
        return runs(y[4], elementwise_lanes, 1)
    return runs(y[3], scalar_lanes, 2)


def fused_activation_range(
    activation: str | None, out_q: QParams, rounding: str = "tflite"
) -> tuple[int, int]:
    """Clamp bounds (output storage domain) of a TFLite fused activation.

    TFLite (CalculateActivationRangeQuantized): `zp + roundf(f / scale)` with a
    float32 division, intersected with the storage range.  "litert" for ops
    XNNPACK takes (int8 ADD/SUB/MUL): XNNPACK quantizes the float bounds as
    `lrintf(f / scale + zp)` (ties to even, then saturated).
    """
    act = "NONE" if activation is None else str(activation).upper()
    if act not in FUSED_ACTIVATIONS:
        raise ValueError(f"unknown fused activation {activation!r}")
    lo, hi = out_q.storage_min, out_q.storage_max
    if act == "NONE":
        return lo, hi
    s = scale32(out_q)
    z = zp(out_q)

    def q(f: float) -> int:
        if rounding == "litert":
            v = np.float32(np.float32(f) / s) + np.float32(z)
            v = np.clip(v, np.float32(lo), np.float32(hi))
            return int(np.rint(v))
        v = np.float32(np.float32(f) / s)
        return z + int(round_half_away_f32(v))

    low_f, high_f = {
        "RELU": (0.0, None),
        "RELU6": (0.0, 6.0),
        "RELU_N1_TO_1": (-1.0, 1.0),
        "RELU_0_TO_1": (0.0, 1.0),
    }[act]
    amin = max(lo, q(low_f))
    amax = hi if high_f is None else min(hi, q(high_f))
    return amin, amax


def _binary_operands(x1, x2):
    a = np.asarray(x1).astype(np.int64)
    b = np.asarray(x2).astype(np.int64)
    a, b = np.broadcast_arrays(a, b)
    return a, b


# ---------------------------------------------------------------------------
# add / sub
# ---------------------------------------------------------------------------


def _checked_log2(scale: np.float32) -> tuple[bool, int]:
    """TFLite CheckedLog2 (float32 math)."""
    x_log2 = np.float32(np.float32(math.log(float(scale))) * np.float32(1.0 / math.log(2.0)))
    # std::log(float) is logf; float64 log rounded to float32 is the same value
    # except in pathological cases, which do not matter for a 1e-3 test.
    rounded = np.float32(round_half_away_f32(x_log2))
    frac = np.float32(x_log2 - rounded)
    return bool(abs(frac) < np.float32(1e-3)), int(rounded)


def _add_sub_pot_int16(a, b, x1_q, x2_q, out_q, act_min, act_max, subtract: bool):
    """TFLite's int16 power-of-two-scale ADD/SUB path (pot_scale_int16)."""
    _, l1 = _checked_log2(scale32(x1_q))
    _, l2 = _checked_log2(scale32(x2_q))
    _, lo = _checked_log2(scale32(out_q))
    s1, s2 = l1 - lo, l2 - lo
    if not (s1 == 0 or s2 == 0) or s1 > 0 or s2 > 0:
        raise ValueError(
            "int16 power-of-two ADD/SUB needs one input on the output scale and the "
            "other on a finer one"
        )
    a = rounding_divide_by_pot(a, -s1) if s1 else a
    b = rounding_divide_by_pot(b, -s2) if s2 else b
    v = a - b if subtract else a + b
    v = np.clip(v, -32768, 32767)
    return _finish(v, out_q, act_min, act_max)


def _add_sub_xnnpack(a, b, x1_q, x2_q, out_q, act_min, act_max, subtract: bool):
    """XNNPACK qs8 add (sub = add with the second multiplier negated)."""
    so = scale32(out_q)
    ra = np.float32(scale32(x1_q) / so)
    rb = np.float32(scale32(x2_q) / so)
    rmax = max(ra, rb)
    exponent = int((np.array(rmax, np.float32).view(np.uint32) >> 23)) - 127
    shift = 20 - exponent

    def mult(r: np.float32) -> int:
        # float with the exponent raised by `shift`: exact r * 2^shift
        return int(np.rint(np.float64(r) * (1 << shift)))

    ma, mb = mult(ra), mult(rb)
    if subtract:
        mb = -mb
    za, zb = zp(x1_q), zp(x2_q)
    bias = int(wrap_int32((1 << (shift - 1)) - ma * za - mb * zb))
    acc = wrap_int32(bias + a * ma + b * mb)
    v = (acc >> shift) + zp(out_q)
    return _finish(v, out_q, act_min, act_max)


def _xnnpack_8bit(*qs: QParams) -> bool:
    """XNNPACK (as LiteRT attaches it, QS8 and QU8 enabled) takes 8-bit tensors
    of one signedness."""
    return all(q.bits == 8 and not q.per_axis for q in qs) and len(
        {q.signed for q in qs}
    ) == 1


def _same_8bit_storage(*qs: QParams) -> bool:
    """All int8 or all uint8 (full range): the types TFLite's optimized 8-bit
    ADD/MUL kernels run on."""
    return all(q.bits == 8 for q in qs) and len({q.signed for q in qs}) == 1


def _xnnpack_add_takes(x1_q, x2_q, out_q) -> bool:
    if not _xnnpack_8bit(x1_q, x2_q, out_q):
        return False
    so = scale32(out_q)
    for q in (x1_q, x2_q):
        r = np.float32(scale32(q) / so)
        if not (np.float32(1.0 / 1024.0) <= r < np.float32(256.0)):
            return False
    return True


def _add_sub(x1, x2, x1_q, x2_q, out_q, act_min, act_max, rounding, subtract,
             pot_scale_int16):
    _check_rounding(rounding)
    for q, n in ((x1_q, "x1_q"), (x2_q, "x2_q"), (out_q, "out_q")):
        _per_tensor(q, n)
    a, b = _binary_operands(x1, x2)
    sixteen = out_q.bits == 16
    if sixteen and pot_scale_int16 and rounding in ("tflite", "litert"):
        if zp(x1_q) or zp(x2_q) or zp(out_q):
            raise ValueError("int16 ADD/SUB needs zero points 0")
        pots = [_checked_log2(scale32(q))[0] for q in (x1_q, x2_q, out_q)]
        if all(pots):
            if not subtract and np.shape(x1) != np.shape(x2):
                raise ValueError(
                    "TFLite's int16 power-of-two ADD path does not broadcast "
                    "(the kernel aborts); use pot_scale_int16=False"
                )
            return _add_sub_pot_int16(a, b, x1_q, x2_q, out_q, act_min, act_max, subtract)
    if rounding == "litert" and _xnnpack_add_takes(x1_q, x2_q, out_q):
        return _add_sub_xnnpack(a, b, x1_q, x2_q, out_q, act_min, act_max, subtract)
    optimized_add = (rounding == "litert" and not subtract
                     and _same_8bit_storage(x1_q, x2_q, out_q))
    if rounding == "litert":
        rounding = "tflite"

    s1, s2, so = scale32(x1_q), scale32(x2_q), scale32(out_q)
    d1 = a - zp(x1_q)
    d2 = b - zp(x2_q)
    if rounding == "half_even":
        r1 = np.float32(s1 / so)
        r2 = np.float32(s2 / so)
        acc = d1.astype(np.float32) * r1
        acc = acc + d2.astype(np.float32) * (-r2 if subtract else r2)
        v = np.rint(acc).astype(np.int64) + zp(out_q)
        return _finish(v, out_q, act_min, act_max)

    left_shift = 15 if sixteen else 20
    twice_max = 2.0 * float(max(s1, s2))  # 2 * float: exact, then double
    real1 = float(s1) / twice_max
    real2 = float(s2) / twice_max
    real_out = twice_max / float(np.float32(np.float32(1 << left_shift) * so))
    m1, sh1 = qmult(real1, rounding)
    m2, sh2 = qmult(real2, rounding)
    mo, sho = qmult(real_out, rounding)
    sa = mbqm(wrap_int32(d1 << left_shift), m1, sh1, rounding)
    sb = mbqm(wrap_int32(d2 << left_shift), m2, sh2, rounding)
    raw = wrap_int32(sa - sb if subtract else sa + sb)
    v = mbqm(raw, mo, sho, rounding) + zp(out_q)
    if optimized_add:
        v = _add_8bit_optimized(v, d1, d2, np.shape(x1), np.shape(x2), out_q,
                                (left_shift, m1, sh1, m2, sh2, mo, sho))
    return _finish(v, out_q, act_min, act_max)


def _add_8bit_optimized(scalar, d1, d2, shape1, shape2, out_q, params):
    """TFLite's optimized 8-bit ADD (what LiteRT runs when XNNPACK declines the
    scales), as its NEON code computes on x86 through NEON_2_SSE.

    Vector blocks (`fivefold_lanes`: 16 int8 / 8 uint8 lanes elementwise, 8
    for scalar broadcast) differ from the scalar loop (`scalar`, the
    reference arithmetic) in three ways: vqrdmulh rounds ties toward +inf;
    the input shift is a plain shift -- folded into the left shift before the
    multiply in the int8 elementwise kernel, an arithmetic (flooring) right
    shift after it elsewhere; and the int32 result is narrowed to int16 by
    truncation (vmovn) and the output zero point added in wrapping int16
    before the saturating narrow to 8 bits -- so outputs far outside the 8-bit
    range can wrap to the opposite bound."""
    left_shift, m1, sh1, m2, sh2, mo, sho = (int(v) for v in params)
    signed = out_q.signed
    kind = fivefold_lanes(shape1, shape2, 16 if signed else 8, 8)
    if not kind.any():
        return scalar

    def scaled(d, m, sh, preshift):
        if preshift:
            return neon_srdhm(_vshl(d, left_shift + sh), m)
        return _vshl(neon_srdhm(_vshl(d, left_shift), m), sh)

    out = scalar
    for k in (1, 2):
        if not (kind == k).any():
            continue
        pre = signed and k == 1
        raw = wrap_int32(scaled(d1, m1, sh1, pre) + scaled(d2, m2, sh2, pre))
        raw = neon_srdhm(raw, mo)
        raw = rounding_divide_by_pot(raw, -sho) if sho <= 0 else _vshl(raw, sho)
        v = wrap_int16(wrap_int16(raw) + zp(out_q))
        v = np.clip(v, *type_bounds(out_q))
        out = np.where(kind == k, v, out)
    return out


def add(
    x1,
    x2,
    *,
    x1_q: QParams,
    x2_q: QParams,
    out_q: QParams,
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
    pot_scale_int16: bool = False,
) -> np.ndarray:
    """Quantized addition with broadcasting: `out = q(s1*(x1-z1) + s2*(x2-z2))`.

    Mirrors TFLite ADD (reference_integer_ops::AddFunc / reference_ops::
    AddElementwise): each input is shifted left by 20 (15 for int16), scaled by
    `s_i / (2 max(s1, s2))` with MultiplyByQuantizedMultiplierSmallerThanOneExp,
    summed, and scaled by `2 max(s1, s2) / (2^left_shift * s_out)`; then the
    output zero point is added and the result clamped to [act_min, act_max].

    int16 with `pot_scale_int16=True` (the flag in TFLite's AddOptions) and all
    three scales powers of two takes TFLite's LSTM path instead: rounding
    right shift of the finer input, saturating add.

    "litert": int8 goes through XNNPACK's qs8 add when its scale checks pass
    (one rounding: `(bias + a*Ma + b*Mb) >> shift`, see NUMERICS.md).
    """
    return _add_sub(x1, x2, x1_q, x2_q, out_q, act_min, act_max, rounding, False,
                    pot_scale_int16)


def sub(
    x1,
    x2,
    *,
    x1_q: QParams,
    x2_q: QParams,
    out_q: QParams,
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
    pot_scale_int16: bool = False,
) -> np.ndarray:
    """Quantized subtraction `x1 - x2` with broadcasting.

    Mirrors TFLite SUB (reference_ops::SubElementwise): the ADD recipe with the
    scaled inputs subtracted.  int16 with `pot_scale_int16=True` and
    power-of-two scales: reference_ops::Sub16 (rounding shift, saturating sub).
    "litert": int8 through XNNPACK's qs8 add with the second multiplier negated.
    """
    return _add_sub(x1, x2, x1_q, x2_q, out_q, act_min, act_max, rounding, True,
                    pot_scale_int16)


# ---------------------------------------------------------------------------
# mul
# ---------------------------------------------------------------------------


def _xnnpack_mul_takes(x1_q, x2_q, out_q) -> bool:
    if not _xnnpack_8bit(x1_q, x2_q, out_q):
        return False
    r = np.float32(np.float32(scale32(x1_q) * scale32(x2_q)) / scale32(out_q))
    return np.float32(2.0 ** -16) <= r < np.float32(256.0)


def mul(
    x1,
    x2,
    *,
    x1_q: QParams,
    x2_q: QParams,
    out_q: QParams,
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
) -> np.ndarray:
    """Quantized multiplication with broadcasting: `out = q(s1 s2 (x1-z1)(x2-z2))`.

    Mirrors TFLite MUL (reference_integer_ops::MulElementwise):
    `MBQM((x1-z1)*(x2-z2), M, shift) + z_out`, clamp; the multiplier comes from
    `s1*s2/s_out` computed in float32.  "half_even" and "litert" (XNNPACK's
    qs8-vmul fp32 kernel, int8 within XNNPACK's scale range) multiply the
    integer product by that float32 ratio and round ties to even.
    """
    _check_rounding(rounding)
    for q, n in ((x1_q, "x1_q"), (x2_q, "x2_q"), (out_q, "out_q")):
        _per_tensor(q, n)
    a, b = _binary_operands(x1, x2)
    prod = wrap_int32((a - zp(x1_q)) * (b - zp(x2_q)))
    real = np.float32(np.float32(scale32(x1_q) * scale32(x2_q)) / scale32(out_q))
    optimized = False
    if rounding == "litert":
        if _xnnpack_mul_takes(x1_q, x2_q, out_q):
            rounding = "half_even"
        else:
            rounding, optimized = "tflite", _same_8bit_storage(x1_q, x2_q, out_q)
    if rounding == "half_even":
        v = np.rint(prod.astype(np.float32) * real).astype(np.int64) + zp(out_q)
        return _finish(v, out_q, act_min, act_max)
    m, s = qmult(float(real), rounding)
    v = mbqm(prod, m, s, rounding) + zp(out_q)
    if optimized:
        v = _mul_8bit_optimized(v, prod, np.shape(x1), np.shape(x2), out_q, int(m), int(s))
    return _finish(v, out_q, act_min, act_max)


def _mul_8bit_optimized(scalar, prod, shape1, shape2, out_q, m: int, shift: int):
    """TFLite's optimized 8-bit MUL (LiteRT's path when XNNPACK declines the
    scale ratio) as NEON_2_SSE runs it: in vector blocks (16 int8 lanes, 8
    uint8 lanes, see `fivefold_lanes`) the product is multiplied with vqrdmulh
    (ties toward +inf), divided by the power of two with gemmlowp's
    RoundingDivideByPOT, narrowed to int16 -- saturating, except in the uint8
    scalar-broadcast kernel, which truncates -- and the output zero point is
    added in wrapping int16 before the saturating narrow to 8 bits."""
    signed = out_q.signed
    lanes = 16 if signed else 8
    kind = fivefold_lanes(shape1, shape2, lanes, lanes)
    if not kind.any():
        return scalar
    raw = neon_srdhm(_vshl(prod, max(shift, 0)), m)
    raw = rounding_divide_by_pot(raw, max(-shift, 0))
    saturated = np.clip(raw, -(1 << 15), (1 << 15) - 1)
    narrow = np.where((kind == 2) & (not signed), wrap_int16(raw), saturated)
    v = np.clip(wrap_int16(narrow + zp(out_q)), *type_bounds(out_q))
    return np.where(kind > 0, v, scalar)


# ---------------------------------------------------------------------------
# maximum / minimum / squared_difference
# ---------------------------------------------------------------------------


def maximum(
    x1,
    x2,
    *,
    x1_q: QParams,
    x2_q: QParams,
    out_q: QParams,
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
) -> np.ndarray:
    """Elementwise maximum of stored values, with broadcasting.

    TFLite MAXIMUM compares stored integers and requires (does not check)
    that both inputs and the output share parameters; so does this function:
    no rescaling happens.  `rounding` has no effect.
    """
    _check_rounding(rounding)
    a, b = _binary_operands(x1, x2)
    return _finish(np.maximum(a, b), out_q, act_min, act_max)


def minimum(
    x1,
    x2,
    *,
    x1_q: QParams,
    x2_q: QParams,
    out_q: QParams,
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
) -> np.ndarray:
    """Elementwise minimum of stored values, with broadcasting (see `maximum`)."""
    _check_rounding(rounding)
    a, b = _binary_operands(x1, x2)
    return _finish(np.minimum(a, b), out_q, act_min, act_max)


def squared_difference(
    x1,
    x2,
    *,
    x1_q: QParams,
    x2_q: QParams,
    out_q: QParams,
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
) -> np.ndarray:
    """Quantized `(x1 - x2)^2` with broadcasting.

    Mirrors TFLite's int8 SQUARED_DIFFERENCE kernel: inputs shifted left by 7,
    scaled by `s_i / (2 max(s1, s2))` (MBQM smaller-than-one), difference
    squared in int32, scaled by `(2 max)^2 / (2^14 s_out)`, plus z_out, clamp.
    XNNPACK does not take int8 SQUARED_DIFFERENCE, so "litert" == "tflite".
    "half_even": float32 `rint(((s1 d1 - s2 d2)^2) / s_out)`.
    """
    _check_rounding(rounding)
    for q, n in ((x1_q, "x1_q"), (x2_q, "x2_q"), (out_q, "out_q")):
        _per_tensor(q, n)
    a, b = _binary_operands(x1, x2)
    d1 = a - zp(x1_q)
    d2 = b - zp(x2_q)
    s1, s2, so = scale32(x1_q), scale32(x2_q), scale32(out_q)
    if rounding == "litert":
        rounding = "tflite"
    if x1_q.bits != 8 and rounding != "half_even":
        raise ValueError(f"{x1_q.storage} SQUARED_DIFFERENCE has no TFLite kernel (LiteRT's invoke fails: "
                         "only float32, int32 and 8-bit)")
    if rounding == "half_even":
        diff = d1.astype(np.float32) * s1 - d2.astype(np.float32) * s2
        v = np.rint((diff * diff) / so).astype(np.int64) + zp(out_q)
        return _finish(v, out_q, act_min, act_max)
    left_shift = 7
    twice_max = 2.0 * float(max(s1, s2))
    real1 = float(s1) / twice_max
    real2 = float(s2) / twice_max
    real_out = (twice_max * twice_max) / float(np.float32(np.float32(1 << 14) * so))
    m1, sh1 = qmult(real1, rounding)
    m2, sh2 = qmult(real2, rounding)
    mo, sho = qmult(real_out, rounding)
    sa = mbqm(d1 << left_shift, m1, sh1, rounding)
    sb = mbqm(d2 << left_shift, m2, sh2, rounding)
    raw = sa - sb
    sq = wrap_int32(raw * raw)
    v = mbqm(sq, mo, sho, rounding) + zp(out_q)
    return _finish(v, out_q, act_min, act_max)


# ---------------------------------------------------------------------------
# requantize / quantize / dequantize
# ---------------------------------------------------------------------------


def _xnnpack_cvt_takes(x_q: QParams, out_q: QParams) -> bool:
    if not _xnnpack_8bit(x_q, out_q):
        return False
    r = np.float32(scale32(x_q) / scale32(out_q))
    return np.float32(1.0 / 256.0) <= r <= np.float32(128.0)


def requantize(
    x,
    *,
    x_q: QParams,
    out_q: QParams,
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
) -> np.ndarray:
    """Change quantization parameters (and possibly storage type):
    `out = q_out(s_in (x - z_in))`.

    Mirrors TFLite QUANTIZE with a quantized input (reference_ops::Requantize):
    `MBQM(x - z_in, M, shift) + z_out` with `(M, shift)` from
    `double(s_in) / double(s_out)`, saturated to the output type (int8 <->
    uint8 with equal scales and zero points 128 apart is the same as the
    kernel's xor fast path).  "litert": int8 -> int8 within XNNPACK's range
    uses qs8-vcvt: `m = lrintf(256 * float(s_in / s_out))`,
    `out = ((x - z_in) * m + 128) >> 8 + z_out`.  Per-axis output parameters
    are supported along `out_q.axis` (not a TFLite kernel; same formula per
    channel).
    """
    _check_rounding(rounding)
    _per_tensor(x_q, "x_q")
    x = np.asarray(x).astype(np.int64)
    d = x - zp(x_q)
    if rounding == "litert" and not out_q.per_axis and _xnnpack_cvt_takes(x_q, out_q):
        ratio = np.float32(scale32(x_q) / scale32(out_q))
        m = int(np.rint(np.float32(256.0) * ratio))
        v = ((d * m + 128) >> 8) + zp(out_q)
        return _finish(v, out_q, act_min, act_max)
    if (
        rounding == "litert"
        and not out_q.per_axis
        and x_q.bits == 8
        and out_q.bits == 8
    ):
        # optimized_ops::Requantize specialisations for 8-bit pairs: NEON
        # blocks of 16, scalar tail.
        m, s = quantize_multiplier(float(scale32(x_q)) / float(scale32(out_q)))
        vec = neon_mbqm(d, m, s)
        sca = multiply_by_quantized_multiplier(d, m, s)
        v = np.where(vector_prefix(d.shape, 16), vec, sca) + zp(out_q)
        return _finish(v, out_q, act_min, act_max)
    if rounding == "litert":
        rounding = "tflite"
    shape = out_q.broadcast_shape(x.ndim)
    s_out = np.asarray(out_q.scale, np.float32).astype(np.float64)
    z_out = out_q.zero_point
    if shape:
        s_out = s_out.reshape(shape)
        z_out = z_out.reshape(shape)
    if rounding == "half_even":
        ratio = (np.float64(scale32(x_q)) / s_out).astype(np.float32)
        v = np.rint(d.astype(np.float32) * ratio).astype(np.int64) + z_out
        return _finish(v, out_q, act_min, act_max)
    real = np.float64(scale32(x_q)) / s_out
    m, s = qmult(real, rounding)
    v = mbqm(d, m, s, rounding) + z_out
    return _finish(v, out_q, act_min, act_max)


def quantize(
    x,
    *,
    out_q: QParams,
    rounding: str = "tflite",
) -> np.ndarray:
    """Float -> stored integers: `clamp(round(x / s) + z)`.

    Mirrors TFLite QUANTIZE float->int (reference_ops::AffineQuantize):
    `TfLiteRound(float32(x) / float32(s))` (half away from zero) + z,
    saturated; per-axis along `out_q.axis` (PerChannelQuantize).  Values the
    float->int32 conversion cannot represent (NaN, |v| >= 2^31) become
    INT32_MIN as on x86.  "half_even": `rint(x / s)`.  "litert" (int8 via
    XNNPACK's f32-qs8-vcvt): `lrintf(clamp(x * float32(1/s), -128-z, 127-z)) + z`;
    other types run TFLite's optimized kernel (same as "tflite").
    """
    _check_rounding(rounding)
    xf = np.asarray(x, dtype=np.float32)
    shape = out_q.broadcast_shape(xf.ndim)
    s = np.asarray(out_q.scale, np.float32)
    z = out_q.zero_point
    if shape:
        s = s.reshape(shape)
        z = z.reshape(shape)
    tlo, thi = type_bounds(out_q)
    if rounding == "litert" and not out_q.per_axis and out_q.bits == 8:
        # XNNPACK f32-qs8 / f32-qu8 cvt
        inv = np.float32(np.float32(1.0) / s)
        with np.errstate(invalid="ignore", over="ignore"):
            v = (xf * inv).astype(np.float32)
        v = np.clip(v, np.float32(tlo - int(z)), np.float32(thi - int(z)))
        v = np.where(np.isnan(v), np.float32(tlo - int(z)), v)
        return np.clip(np.rint(v).astype(np.int64) + z, tlo, thi).astype(out_q.dtype)
    if rounding == "litert" and not out_q.per_axis and out_q.bits == 16 and out_q.signed:
        # optimized_ops::AffineQuantize<int16>: NEON blocks of 8 multiply by
        # float(1 / double(s)) and round ties-to-even (cvtps2dq); the scalar
        # tail divides in double and rounds half away from zero.
        sd = np.float64(s)
        inv = np.float32(1.0 / sd)
        with np.errstate(invalid="ignore", over="ignore"):
            vv = (xf * inv).astype(np.float32).astype(np.float64)
            vs = xf.astype(np.float64) / sd
        rv = np.rint(vv)
        rs = round_half_away_f32(vs)
        r = np.where(vector_prefix(xf.shape, 8), rv, rs)
        bad = ~np.isfinite(r) | (r >= 2.0**31) | (r < -(2.0**31))
        r = np.where(bad, float(INT32_MIN), r).astype(np.int64)
        return np.clip(wrap_int32(r + z), tlo, thi).astype(out_q.dtype)
    if rounding == "litert":
        rounding = "tflite"
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        v = (xf / s).astype(np.float32)
    if rounding == "half_even":
        r = np.rint(v.astype(np.float64))
    elif rounding in ("single", "half_up"):
        r = np.floor(v.astype(np.float64) + 0.5)
    else:
        r = round_half_away_f32(v)
    bad = ~np.isfinite(r) | (r >= 2.0**31) | (r < -(2.0**31))
    r = np.where(bad, float(INT32_MIN), r).astype(np.int64)
    v = wrap_int32(r + z)
    return np.clip(v, tlo, thi).astype(out_q.dtype)


def dequantize(x, *, x_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """Stored integers -> float32: `float32(s * (x - z))`.

    Mirrors TFLite DEQUANTIZE (reference_ops::Dequantize / PerChannelDequantize:
    double(scale) * (x - z), rounded once to float32; XNNPACK's qs8-f32 cvt
    gives the same value).  Per-axis along `x_q.axis`.
    """
    _check_rounding(rounding)
    x = np.asarray(x).astype(np.int64)
    shape = x_q.broadcast_shape(x.ndim)
    s = np.asarray(x_q.scale, np.float32).astype(np.float64)
    z = x_q.zero_point
    if shape:
        s = s.reshape(shape)
        z = z.reshape(shape)
    return (s * (x - z)).astype(np.float32)


# ---------------------------------------------------------------------------
# relu family / clamp
# ---------------------------------------------------------------------------


def relu_bounds(low: float | None, high: float | None, out_q: QParams) -> tuple[int, int]:
    """Storage-domain bounds TFLite's QuantizedReluX uses for real bounds
    [low, high]: `max(type_min, z + roundf(low / s))`, `min(type_max, z +
    roundf(high / s))` (float32 division); None means unbounded."""
    s = scale32(out_q)
    z = zp(out_q)
    lo, hi = out_q.storage_min, out_q.storage_max
    if low is not None:
        lo = max(lo, z + int(round_half_away_f32(np.float32(np.float32(low) / s))))
    if high is not None:
        hi = min(hi, z + int(round_half_away_f32(np.float32(np.float32(high) / s))))
    return lo, hi


def clamp(
    x,
    *,
    x_q: QParams,
    out_q: QParams,
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
) -> np.ndarray:
    """Requantize to the output parameters, then clamp to [act_min, act_max]
    (output storage domain).

    Mirrors TFLite's quantized RELU / RELU6 / RELU_N1_TO_1 / RELU_0_TO_1
    (reference_ops::ReluX): `MBQM(x - z_in, M, shift) + z_out` with the
    multiplier from the float32 ratio `s_in / s_out`, then the clamp.  With
    equal parameters this is a pure clamp of stored values.  XNNPACK does not
    take int8 RELU*, so "litert" == "tflite"; "half_even" requantizes in float.
    """
    _check_rounding(rounding)
    _per_tensor(x_q, "x_q")
    _per_tensor(out_q, "out_q")
    x = np.asarray(x).astype(np.int64)
    d = x - zp(x_q)
    real = np.float32(scale32(x_q) / scale32(out_q))
    if rounding == "litert":
        rounding = "tflite"
    if rounding == "half_even":
        v = np.rint(d.astype(np.float32) * real).astype(np.int64) + zp(out_q)
    else:
        m, s = qmult(float(real), rounding)
        v = mbqm(d, m, s, rounding) + zp(out_q)
    return _finish(v, out_q, act_min, act_max)


def _relu_x(x, x_q, out_q, low, high, rounding):
    lo, hi = relu_bounds(low, high, out_q)
    return clamp(x, x_q=x_q, out_q=out_q, act_min=lo, act_max=hi, rounding=rounding)


def relu(x, *, x_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """max(x, 0) with requantization (TFLite RELU, see `clamp`)."""
    return _relu_x(x, x_q, out_q, 0.0, None, rounding)


def relu6(x, *, x_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """min(max(x, 0), 6) with requantization (TFLite RELU6, see `clamp`)."""
    return _relu_x(x, x_q, out_q, 0.0, 6.0, rounding)


def relu_n1_to_1(x, *, x_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """min(max(x, -1), 1) with requantization (TFLite RELU_N1_TO_1, see `clamp`)."""
    return _relu_x(x, x_q, out_q, -1.0, 1.0, rounding)


def relu_0_to_1(x, *, x_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """min(max(x, 0), 1) with requantization (TFLite RELU_0_TO_1, see `clamp`)."""
    return _relu_x(x, x_q, out_q, 0.0, 1.0, rounding)



def absolute(x, *, x_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """Quantized ABS as TFLite's AbsEvalQuantized (int8; int16 with zero points 0):
    `v = |x - zp_in|`; when the float32 scales differ, `MBQM(v, M, shift)` with
    QuantizeMultiplier(in_s / out_s) (the ratio in float32); `+ zp_out`, saturated.
    XNNPACK does not take quantized ABS: "litert" is the same kernel."""
    _check_rounding(rounding)
    _per_tensor(x_q, "x_q")
    _per_tensor(out_q, "out_q")
    if not x_q.signed or x_q.bits not in (8, 16):
        raise ValueError(f"ABS has no kernel for {x_q.storage} input")
    if x_q.bits == 16 and (zp(x_q) or zp(out_q)):
        raise ValueError("int16 ABS needs zero points 0")
    v = np.abs(np.asarray(x).astype(np.int64) - zp(x_q))
    if scale32(x_q) != scale32(out_q):
        m, s = qmult(float(np.float32(scale32(x_q) / scale32(out_q))), rounding)
        v = mbqm(v, m, s, rounding)
    lo, hi = type_bounds(out_q)
    return np.clip(v + zp(out_q), lo, hi).astype(out_q.dtype)


def negate(x, *, x_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """Quantized NEG as TFLite's kernel computes it: the stored integers negated, in
    the storage type (int8 -128 stays -128: `-x` wraps); the quantization parameters
    are not read, so this is real negation only when both zero points are 0 and the
    scales are equal (what `qnn.neg` verifies)."""
    _check_rounding(rounding)
    if not x_q.signed:
        raise ValueError(f"NEG has no kernel for {x_q.storage} input (LiteRT: int8, int16, int32, int64, float)")
    bits = x_q.bits
    v = -np.asarray(x).astype(np.int64)
    half = 1 << (bits - 1)
    return (((v + half) & ((1 << bits) - 1)) - half).astype(out_q.dtype)


def _count_leading_sign_bits(x: np.ndarray) -> np.ndarray:
    """TFLite CountLeadingSignBits on int32 values (31 for 0 and -1)."""
    from .activations import _clz32

    x = np.asarray(x, dtype=np.int64)
    neg = np.where(x == INT32_MIN, 0, _clz32(np.where(x < 0, 2 * (-x) - 1, 1)))
    return np.where(x >= 0, _clz32(x) - 1, neg)


def div(
    x1,
    x2,
    *,
    x1_q: QParams,
    x2_q: QParams,
    out_q: QParams,
    act_min: int | None = None,
    act_max: int | None = None,
    rounding: str = "tflite",
) -> np.ndarray:
    """Quantized `x1 / x2` with broadcasting, TFLite's DivElementwise (int8, uint8, int16;
    XNNPACK takes no quantized DIV and the optimized kernel computes the same integers):
    `a = x1 - zp1`, `b = x2 - zp2` (both negated when b < 0); `(r, e) = GetReciprocal(b, 31)`
    (gemmlowp 1 / (1 + x) in Q0.31); `h = CountLeadingSignBits(a)`;
    `u = SRDHM(a << h, r)`; `out = RDBPOT(SRDHM(u, M), -(shift - e - h)) + out_zp` with
    (M, shift) = QuantizeMultiplier(double(s1 / (s2 * s_out))) (the scale product and quotient
    in float32); clamped.  A divisor equal to its zero point (real 0) is an error, as LiteRT's
    invoke fails there (`data[i] != zero_point`)."""
    from .activations import get_reciprocal
    from .rescale import saturating_rounding_doubling_high_mul as srdhm

    _check_rounding(rounding)
    for q, n in ((x1_q, "x1_q"), (x2_q, "x2_q"), (out_q, "out_q")):
        _per_tensor(q, n)
    if rounding not in ("tflite", "litert", "single"):
        raise ValueError(f"DIV: rounding '{rounding}' has no recipe (only LiteRT's kernel is known)")
    a, b = _binary_operands(x1, x2)
    a = a - zp(x1_q)
    b = b - zp(x2_q)
    if np.any(b == 0):
        raise ValueError("DIV by a real zero (a divisor equal to its zero point; LiteRT's invoke fails)")
    a = np.where(b < 0, -a, a)
    b = np.abs(b)
    recip, recip_shift = get_reciprocal(b, 31)
    headroom = _count_leading_sign_bits(a)
    real = float(np.float32(scale32(x1_q) / np.float32(scale32(x2_q) * scale32(out_q))))
    m, shift = qmult(real, rounding)
    total = shift - recip_shift - headroom
    if rounding == "single":
        u = multiply_single_rounding(a, recip, headroom)
        v = multiply_single_rounding(u, m, total)
    else:
        u = srdhm(wrap_int32(a << headroom), recip)
        v = _rdbpot_x86(srdhm(u, m), np.maximum(-total, 0))
    return _finish(v + zp(out_q), out_q, act_min, act_max)


def _rdbpot_x86(x, exponent) -> np.ndarray:
    """gemmlowp RoundingDivideByPOT on int32 as compiled for x86 when the exponent reaches 32
    (DIV of a large quotient scale by a power-of-two divisor): the mask `(1ll << e) - 1`
    truncates to int32 -1 and `x >> e` shifts by `e & 31`, so the result is
    `(x >> (e & 31)) + (x > (x < 0) - 1)`; below 32 it is the ordinary rounding shift."""
    x = np.asarray(x, dtype=np.int64)
    e = np.asarray(exponent, dtype=np.int64)
    x, e = np.broadcast_arrays(x, e)
    wide = e >= 32
    ordinary = rounding_divide_by_pot(x, np.where(wide, 0, e))
    odd = (x >> (e & 31)) + (x > (x < 0).astype(np.int64) - 1).astype(np.int64)
    return np.where(wide, odd, ordinary)


def quantize_like_litert_input(x, detail: dict) -> np.ndarray:
    """A real-valued sample as a LiteRT input tensor takes it (`detail`: one entry of
    `Interpreter.get_input_details()`): float inputs as they are, integer ones quantized as
    TFLite's own QUANTIZE does (`quantize`, half away from zero, saturated) with the tensor's
    (scale, zero point).  What a benchmark or test feeds a converter's int8 model."""
    x = np.asarray(x, np.float32).reshape(detail["shape"])
    dtype = np.dtype(detail["dtype"])
    if dtype.kind == "f":
        return x.astype(dtype)
    s, z = detail["quantization"]
    storage = f"{'u' if dtype.kind == 'u' else 'i'}{dtype.itemsize * 8}"
    return quantize(x, out_q=QParams.make(s, z, storage=storage)).astype(dtype)
