"""Applying a real multiplier to integers, under every rounding profile.

All functions are vectorised over numpy arrays and compute in int64 (Python
ints only for scalars), following TFLite's `common.h` / `quantization_util.cc`.
"""

from __future__ import annotations

import math

import numpy as np

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


def quantize_multiplier(real) -> tuple[np.ndarray, np.ndarray]:
    """TFLite QuantizeMultiplier: real -> (Q31 multiplier M, shift).

    `real ~= M * 2^(shift - 31)`.  frexp, round half away from zero to Q31,
    fix the 2^31 overflow, flush shifts below -31 to (0, 0).  Accepts a scalar
    or array of (double) reals; returns int64 arrays of the same shape.
    """
    return quantize_multiplier_for(real, "tflite")


def quantize_multiplier_scalar(r: float, rounding: str = "tflite") -> tuple[int, int]:
    """QuantizeMultiplier of one double as the build behind `rounding` computes it, as
    Python ints (the compile-time passes form a few per op: numpy on one value costs more).

    TFLITE_SINGLE_ROUNDING (profiles `single`, `half_up`) caps the shift at 30
    (M = 2^31 - 1 there); the double-rounding build does not."""
    if r == 0.0:
        return 0, 0
    if not math.isfinite(r):
        raise ValueError(f"real multiplier {r} is not finite (the scales are too far apart)")
    q, shift = math.frexp(r)
    # TfLiteRound: round half away from zero
    m = int(math.floor(abs(q) * (1 << 31) + 0.5))
    if q < 0:
        m = -m
    if m == (1 << 31):
        m //= 2
        shift += 1
    if shift < -31:
        m, shift = 0, 0
    if rounding in ("single", "half_up") and shift > 30:
        m, shift = INT32_MAX, 30
    return m, shift


def saturating_rounding_doubling_high_mul(a, b) -> np.ndarray:
    """gemmlowp SaturatingRoundingDoublingHighMul on int32 values (as int64 arrays)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    prod = a * b
    nudge = np.where(prod >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    total = prod + nudge
    # C++ division truncates toward zero
    q = np.abs(total) >> 31
    q = np.where(total < 0, -q, q)
    return np.where(overflow, np.int64(INT32_MAX), q)


def rounding_divide_by_pot(x, exponent) -> np.ndarray:
    """gemmlowp RoundingDivideByPOT: x / 2^exponent, ties away from zero."""
    x = np.asarray(x, dtype=np.int64)
    exponent = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0).astype(np.int64)
    return (x >> exponent) + (remainder > threshold).astype(np.int64)


def _wrap_int32(x: np.ndarray) -> np.ndarray:
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def multiply_by_quantized_multiplier(x, multiplier, shift) -> np.ndarray:
    """TFLite MultiplyByQuantizedMultiplier (double rounding), x int32-valued.

    `RDBPOT(SRDHM(x * 2^max(shift,0), M), max(-shift,0))`.  The left shift is
    done in 32-bit arithmetic as TFLite does (wrapping).
    """
    x = np.asarray(x, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    shifted = _wrap_int32(x << left)
    return rounding_divide_by_pot(
        saturating_rounding_doubling_high_mul(shifted, multiplier), right
    )


def multiply_single_rounding(x, multiplier, shift) -> np.ndarray:
    """Single rounding: `(x * M + 2^(30 - shift)) >> (31 - shift)`, ties toward +inf.

    TFLite's TFLITE_SINGLE_ROUNDING build, TOSA SINGLE_ROUND, TVM UPWARD.
    Exact for any int64 `x` (wide accumulators): falls back to Python ints
    where the int64 product could overflow.
    """
    x = np.asarray(x, dtype=np.int64)
    multiplier = np.asarray(multiplier, dtype=np.int64)
    total_shift = 31 - np.asarray(shift, dtype=np.int64)
    x, multiplier, total_shift = np.broadcast_arrays(x, multiplier, total_shift)
    if x.size == 0:
        return x.copy()
    # |x| < 2^31 and M < 2^31: the product is below 2^62 and the rounding add fits.
    if np.all(total_shift >= 1) and int(np.abs(x).max()) < (1 << 31):
        return (x * multiplier + (np.int64(1) << (total_shift - 1))) >> total_shift
    flat = [
        (int(a) * int(b) + (1 << (int(t) - 1))) >> int(t) if t >= 1 else (int(a) * int(b)) << -int(t)
        for a, b, t in zip(x.ravel(), multiplier.ravel(), total_shift.ravel())
    ]
    return np.array(flat, dtype=np.int64).reshape(x.shape)


def quantize_multiplier_for(real, rounding: str) -> tuple[np.ndarray, np.ndarray]:
    """QuantizeMultiplier as the build behind `rounding` computes it (see
    `quantize_multiplier_scalar`), on a scalar or array of reals: int64 arrays of its shape."""
    real = np.asarray(real, dtype=np.float64)
    pairs = [quantize_multiplier_scalar(r, rounding) for r in real.reshape(-1).tolist()]
    ms = np.array([m for m, _ in pairs], dtype=np.int64).reshape(real.shape)
    shifts = np.array([s for _, s in pairs], dtype=np.int64).reshape(real.shape)
    return ms, shifts


def multiply_float_half_even(x, real_scale) -> np.ndarray:
    """float32(x) * float32(scale), rounded to nearest with ties to even (XNNPACK)."""
    xf = np.asarray(x).astype(np.float32)
    scale = np.asarray(real_scale, dtype=np.float32)
    return np.rint(xf * scale).astype(np.int64)


def apply_multiplier(x, real, rounding: str) -> np.ndarray:
    """Multiply integer accumulators `x` by the real multiplier `real` under `rounding`.

    `real` is a scalar or an array broadcastable against x (per-channel).
    For `tflite`, `single` and `half_up` the real is first turned into
    (M, shift) with QuantizeMultiplier; for `half_even` it is used as float32.
    """
    if rounding == "tflite":
        m, s = quantize_multiplier(real)
        return multiply_by_quantized_multiplier(x, m, s)
    if rounding in ("single", "half_up"):
        m, s = quantize_multiplier(real)
        return multiply_single_rounding(x, m, s)
    if rounding == "half_even":
        return multiply_float_half_even(x, real)
    raise ValueError(f"unknown rounding profile {rounding!r}")


def round_half_away(x) -> np.ndarray:
    """TfLiteRound / std::round: round half away from zero."""
    x = np.asarray(x, dtype=np.float64)
    # trunc + exact fraction test: floor(|x| + 0.5) misrounds 0.49999999999999994
    # (the addition rounds up to 1.0) and odd integers >= 2^52.
    t = np.trunc(x)
    return t + np.sign(x) * (np.abs(x - t) >= 0.5)
