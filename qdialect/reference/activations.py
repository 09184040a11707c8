"""Reference semantics of the activation qnn ops: logistic, tanh, softmax,
log_softmax, hard_swish, leaky_relu, prelu, elu.

Conventions as in `elementwise.py`: stored-integer numpy arrays in, keyword-
only QParams, int64 arithmetic emulating the kernels' int32/int16 arithmetic,
result in the output container dtype.

Rounding profiles:

- "tflite": TFLite's reference kernels (BUILTIN_REF), bit for bit.
- "litert": LiteRT's default interpreter: XNNPACK where its delegate takes the
  op (8-bit LOGISTIC / TANH / ELU as 256-entry tables built in float with
  ties-to-even rounding, 8-bit LEAKY_RELU as `((x - z) * m + 128) >> 8`),
  TFLite's optimized kernels elsewhere (8-bit SOFTMAX and LOG_SOFTMAX from a
  float exp table; HARD_SWISH, PRELU and the int16 kernels are the
  reference ones on x86).
- "half_even": the float path (tables / float formulas) rounding ties to even.
- "single" / "half_up": the integer kernels with one rounding per multiplier.

Table builders (`logistic_table`, `tanh_table`, `elu_table`, and
`int16_lut`) are public so that the lowering can materialise the tables at
compile time; `apply_table` indexes them.

The float32 transcendental functions the kernels call (expf, expm1f, logf)
are evaluated in float64 and rounded once to float32, i.e. correctly rounded;
a libm that is not correctly rounded can differ in the last ulp, which moves a
table entry only if the value sits within that ulp of a rounding boundary.
`tanhf` is the C library's own (what TFLite's LUTPopulate and XNNPACK's table
call): glibc's tanhf is not correctly rounded for small arguments, and at an
input scale of 0.0032 that moved 130 of 22 000 8-bit TANH table entries in
both profiles (found by hypothesis against LiteRT).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..qparams import QParams
from .elementwise import (
    _check_rounding,
    _per_tensor,
    mbqm,
    qmult,
    round_half_away_f32,
    scale32,
    type_bounds,
    wrap_int32,
    zp,
)
from .rescale import (
    INT32_MAX,
    INT32_MIN,
    multiply_single_rounding,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)

__all__ = [
    "lut_index",
    "apply_table",
    "logistic_table",
    "tanh_table",
    "elu_table",
    "int16_lut",
    "int16_lut_lookup",
    "logistic",
    "tanh",
    "elu",
    "softmax",
    "log_softmax",
    "hard_swish",
    "leaky_relu",
    "prelu",
    "softmax_params",
    "gelu",
    "gelu_f32",
    "exp",
    "rsqrt",
    "rsqrt_table_int8",
    "transformer_table",
    "sqrt",
    "l2_normalization",
]

# ---------------------------------------------------------------------------
# float32 libm emulation
# ---------------------------------------------------------------------------


def _f32(fn, x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return fn(x.astype(np.float64)).astype(np.float32)


def expf(x):
    return _f32(np.exp, x)


@functools.lru_cache(maxsize=None)
def _libm_tanhf():
    """The C library's float tanhf, or None where no C math library can be loaded."""
    import ctypes
    import ctypes.util

    try:
        lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        fn = lib.tanhf
    except (OSError, AttributeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
    return fn


def tanhf(x):
    """float32 tanh as `std::tanh(float)` computes it in TFLite and XNNPACK: the C
    library's tanhf, element by element (tables have 256 entries); correctly rounded
    where no C math library can be loaded."""
    fn = _libm_tanhf()
    x = np.asarray(x, dtype=np.float32)
    if fn is None:
        return _f32(np.tanh, x)
    return np.array([fn(float(v)) for v in x.ravel()], dtype=np.float32).reshape(x.shape)


def expm1f(x):
    return _f32(np.expm1, x)


def logf(x):
    return _f32(np.log, x)


# ---------------------------------------------------------------------------
# 256-entry tables (8-bit LOGISTIC / TANH / ELU)
# ---------------------------------------------------------------------------


def lut_index(x, in_q: QParams) -> np.ndarray:
    """Table index of stored values: `x - type_min` (int8: x + 128, uint8: x)."""
    lo, _ = type_bounds(in_q)
    return np.asarray(x).astype(np.int64) - lo


def apply_table(x, table: np.ndarray, in_q: QParams) -> np.ndarray:
    """Look stored values up in a table built by one of the *_table functions."""
    return np.asarray(table)[lut_index(x, in_q)]


def _table_inputs(in_q: QParams) -> np.ndarray:
    if in_q.bits != 8:
        raise ValueError(f"256-entry tables need 8-bit input, got {in_q.storage}")
    _per_tensor(in_q, "x_q")
    lo, hi = type_bounds(in_q)
    return np.arange(lo, hi + 1, dtype=np.int64)


def _tflite_lut(transform, in_q: QParams, out_q: QParams, rounding: str) -> np.ndarray:
    """TFLite LUTPopulateInt8: float32 dequantize, transform, multiply by
    float32(1/s_out), TfLiteRound, + z_out, saturate."""
    vals = _table_inputs(in_q)
    deq = np.float32(scale32(in_q)) * (vals - zp(in_q)).astype(np.float32)
    y = transform(deq.astype(np.float32)).astype(np.float32)
    inv = np.float32(np.float32(1.0) / scale32(out_q))
    with np.errstate(over="ignore", invalid="ignore"):
        r = (y * inv).astype(np.float32)
    if rounding in ("single", "half_up"):
        rr = np.floor(r.astype(np.float64) + 0.5)
    else:
        rr = round_half_away_f32(r)
    q = (rr.astype(np.float32) + np.float32(zp(out_q))).astype(np.float64)
    lo, hi = type_bounds(out_q)
    q = np.where(np.isnan(q), lo, q)
    return np.clip(q, lo, hi).astype(np.int64).astype(out_q.dtype)


def _xnnpack_lut(op, in_q: QParams, out_q: QParams) -> np.ndarray:
    """XNNPACK's table for a quantized unary op without a dedicated kernel:
    `(float(x) - z) * s`, the float op, then `nearbyint(y * float(1/s_out) + z_out)`
    (NaN -> 0), saturated."""
    vals = _table_inputs(in_q)
    xf = (vals.astype(np.float32) - np.float32(zp(in_q))) * scale32(in_q)
    y = op(xf.astype(np.float32)).astype(np.float32)
    inv = np.float32(np.float32(1.0) / scale32(out_q))
    with np.errstate(over="ignore", invalid="ignore"):
        t = (y * inv + np.float32(zp(out_q))).astype(np.float32)
    t = np.where(np.isnan(t), np.float32(0), t)
    lo, hi = type_bounds(out_q)
    r = np.clip(np.rint(t.astype(np.float64)), lo, hi)
    return r.astype(np.int64).astype(out_q.dtype)


def _sigmoid_tflite(v):
    # 1.0f / (1.0f + std::exp(-value)) in float32
    e = expf(-v)
    with np.errstate(over="ignore"):
        return (np.float32(1.0) / (np.float32(1.0) + e)).astype(np.float32)


def _sigmoid_xnnpack(v):
    # double e = exp(double(x)); float(e / (1 + e)); saturating beyond +-100
    vd = v.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(vd)
        r = (e / (1.0 + e)).astype(np.float32)
    r = np.where(vd > 100, np.float32(1), r)
    r = np.where(vd < -100, np.float32(0), r)
    return r.astype(np.float32)


def _elu_f32(v):
    return np.where(v < 0, expm1f(v), v).astype(np.float32)


def _table(kind: str, in_q: QParams, out_q: QParams, rounding: str) -> np.ndarray:
    _check_rounding(rounding)
    tfl = {"logistic": _sigmoid_tflite, "tanh": tanhf, "elu": _elu_f32}[kind]
    xnn = {"logistic": _sigmoid_xnnpack, "tanh": tanhf, "elu": _elu_f32}[kind]
    if rounding in ("litert", "half_even"):
        if rounding == "litert" and kind == "elu" and not in_q.signed:
            # XNNPACK takes ELU only for QS8; uint8 ELU has no TFLite kernel either
            raise ValueError("ELU has no uint8 kernel in TFLite")
        return _xnnpack_lut(xnn, in_q, out_q)
    return _tflite_lut(tfl, in_q, out_q, rounding)


def logistic_table(in_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """The 256-entry table of 8-bit LOGISTIC, indexed by `lut_index`.

    "tflite": LUTPopulate with `1.0f / (1.0f + expf(-x))` (TfLiteRound);
    "litert"/"half_even": XNNPACK's table (sigmoid in double, ties to even).
    """
    return _table("logistic", in_q, out_q, rounding)


def tanh_table(in_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """The 256-entry table of 8-bit TANH (tanhf), indexed by `lut_index`."""
    return _table("tanh", in_q, out_q, rounding)


def elu_table(in_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """The 256-entry table of int8 ELU (`x < 0 ? expm1f(x) : x`), by `lut_index`."""
    return _table("elu", in_q, out_q, rounding)


# ---------------------------------------------------------------------------
# gemmlowp fixed point (int32 raw values held in int64 arrays)
# ---------------------------------------------------------------------------

_srdhm = saturating_rounding_doubling_high_mul


def _fx_const(value: float, integer_bits: int = 0) -> int:
    """gemmlowp FixedPoint<int32, IB>::FromDouble (the CHECKED constants)."""
    raw = round(value * 2.0 ** (31 - integer_bits))
    return int(min(max(raw, INT32_MIN), INT32_MAX))


def _sat_shift_left(x, exponent: int) -> np.ndarray:
    """SaturatingRoundingMultiplyByPOT<+exponent> on int32 raw values."""
    x = np.asarray(x, dtype=np.int64)
    if exponent == 0:
        return x
    threshold = (1 << (31 - exponent)) - 1
    r = wrap_int32(x << exponent)
    r = np.where(x > threshold, np.int64(INT32_MAX), r)
    return np.where(x < -threshold, np.int64(INT32_MIN), r)


def _sat_shift_left_param(x, exponent) -> np.ndarray:
    """SaturatingRoundingMultiplyByPOTParam with a per-element exponent >= 0."""
    x = np.asarray(x, dtype=np.int64)
    e = np.asarray(exponent, dtype=np.int64)
    x, e = np.broadcast_arrays(x, e)
    threshold = (np.int64(1) << (31 - e)) - 1
    r = wrap_int32(x << e)
    r = np.where(x > threshold, np.int64(INT32_MAX), r)
    r = np.where(x < -threshold, np.int64(INT32_MIN), r)
    return np.where(e == 0, x, r)


def _rescale(x, src_bits: int, dst_bits: int) -> np.ndarray:
    """gemmlowp Rescale<dst>(FixedPoint<int32, src>)."""
    e = src_bits - dst_bits
    if e > 0:
        return _sat_shift_left(x, e)
    if e < 0:
        return rounding_divide_by_pot(x, -e)
    return np.asarray(x, dtype=np.int64)


def _rounding_half_sum(a, b) -> np.ndarray:
    s = np.asarray(a, dtype=np.int64) + np.asarray(b, dtype=np.int64)
    t = s + np.where(s >= 0, 1, -1)
    q = np.abs(t) // 2
    return np.where(t < 0, -q, q)


def _clz32(x) -> np.ndarray:
    """CountLeadingZeros of uint32 values (32 for 0)."""
    u = np.asarray(x, dtype=np.int64) & 0xFFFFFFFF
    bl = np.zeros(u.shape, dtype=np.int64)
    cur = u.copy()
    for width in (16, 8, 4, 2, 1):
        big = cur >= (np.int64(1) << width)
        bl = np.where(big, bl + width, bl)
        cur = np.where(big, cur >> width, cur)
    bl = np.where(u > 0, bl + 1, 0)
    return 32 - bl


def _exp_on_interval_neg_quarter_0(a) -> np.ndarray:
    """exp(x) for x in [-1/4, 0), Q0.31."""
    constant_term = _fx_const(math.exp(-1.0 / 8.0))
    one_third = _fx_const(1.0 / 3.0)
    x = wrap_int32(np.asarray(a, np.int64) + (1 << 28))
    x2 = _srdhm(x, x)
    x3 = _srdhm(x2, x)
    x4 = _srdhm(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(
        wrap_int32(_srdhm(wrap_int32(x4_over_4 + x3), one_third) + x2), 1
    )
    return wrap_int32(constant_term + _srdhm(constant_term, wrap_int32(x + poly)))


def exp_on_negative_values(a, integer_bits: int) -> np.ndarray:
    """gemmlowp exp_on_negative_values: exp(a) for a <= 0 in Q(IB).(31-IB),
    result Q0.31."""
    a = np.asarray(a, dtype=np.int64)
    fb = 31 - integer_bits
    one_quarter = 1 << (fb - 2)
    mask = one_quarter - 1
    a_mod = wrap_int32((a & mask) - one_quarter)
    result = _exp_on_interval_neg_quarter_0(_rescale(a_mod, integer_bits, 0))
    remainder = wrap_int32(a_mod - a)
    for exponent in range(-2, 5):
        if integer_bits > exponent:
            mult = _fx_const(math.exp(-(2.0**exponent)))
            bit = 1 << (fb + exponent)
            result = np.where((remainder & bit) != 0, _srdhm(result, mult), result)
    if integer_bits > 5:
        clamp = -(1 << (36 - integer_bits))
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, np.int64(INT32_MAX), result)


def one_over_one_plus_x_for_x_in_0_1(a) -> np.ndarray:
    """gemmlowp 1 / (1 + x), x in [0, 1) as Q0.31, result Q0.31 (Newton-Raphson)."""
    half_denominator = _rounding_half_sum(a, INT32_MAX)
    c48_17 = _fx_const(48.0 / 17.0, 2)
    c_neg32_17 = _fx_const(-32.0 / 17.0, 2)
    x = wrap_int32(c48_17 + _srdhm(half_denominator, c_neg32_17))
    one_f2 = 1 << 29
    for _ in range(3):
        hdx = _srdhm(half_denominator, x)
        one_minus = wrap_int32(one_f2 - hdx)
        x = wrap_int32(x + _sat_shift_left(_srdhm(x, one_minus), 2))
    return _sat_shift_left(x, 1)


def get_reciprocal(x, x_integer_digits: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLite GetReciprocal: (Q0.31 reciprocal of the normalised x,
    num_bits_over_unit)."""
    x = np.asarray(x, dtype=np.int64)
    h = _clz32(x)
    nbou = x_integer_digits - h
    shifted = wrap_int32(((x & 0xFFFFFFFF) << h) - (1 << 31))
    return one_over_one_plus_x_for_x_in_0_1(shifted), nbou


def _sat_add32(a, b):
    return np.clip(np.asarray(a, np.int64) + np.asarray(b, np.int64), INT32_MIN, INT32_MAX)


def log_x_for_x_ge_1(input_raw, output_integer_bits: int, input_integer_bits: int):
    """TFLite log_x_for_x_greater_than_or_equal_to_1_impl (fixed point)."""
    acc_bits = output_integer_bits + 1
    log_2 = _fx_const(math.log(2.0))
    sqrt_sqrt_half = _fx_const(math.sqrt(math.sqrt(0.5)))
    sqrt_half = _fx_const(math.sqrt(0.5))
    one_quarter = _fx_const(0.25)
    q2 = math.sqrt(math.sqrt(2.0))
    alpha_n = _fx_const(11.0 / 240.0 * q2)
    alpha_d = _fx_const(1.0 / 20.0 * q2)
    alpha_i = _fx_const(2.0 / q2 - q2)
    alpha_f = _fx_const(1.0 / 4.0 * q2)
    shifted_quarter = _rescale(np.int64(one_quarter), 0, acc_bits)

    z_a = np.asarray(input_raw, dtype=np.int64)
    za_h1 = _clz32(z_a)
    r_a_tmp = _sat_shift_left_param(z_a, za_h1 - 1)
    r_a_raw = _sat_shift_left_param(_srdhm(r_a_tmp, sqrt_half), 1)
    z_a_pow_2_adj = _sat_add32(
        _sat_shift_left_param(input_integer_bits - za_h1, 31 - acc_bits), shifted_quarter
    )
    z_b = _srdhm(z_a, sqrt_half)
    zb_h = _clz32(z_b) - 1
    r_b_raw = _sat_shift_left_param(z_a, zb_h)
    z_b_pow_2_adj = np.clip(
        _sat_shift_left_param(input_integer_bits - zb_h, 31 - acc_bits) - shifted_quarter,
        INT32_MIN,
        INT32_MAX,
    )
    r = np.minimum(r_a_raw, r_b_raw)
    z_pow_2_adj = np.maximum(z_a_pow_2_adj, z_b_pow_2_adj)
    p = _rounding_half_sum(r, sqrt_sqrt_half)
    q = wrap_int32(r - sqrt_sqrt_half)
    q = wrap_int32(q + q)
    common_sq = _srdhm(q, q)
    num = wrap_int32(_srdhm(q, r) + _srdhm(_srdhm(q, common_sq), alpha_n))
    denom_minus_one = wrap_int32(
        _srdhm(p, wrap_int32(alpha_i + q + _srdhm(alpha_d, common_sq)))
        + _srdhm(alpha_f, q)
    )
    recip_denom = one_over_one_plus_x_for_x_in_0_1(denom_minus_one)
    num_scaled = _rescale(num, 0, acc_bits)
    total = wrap_int32(_srdhm(z_pow_2_adj, log_2) + _srdhm(num_scaled, recip_denom))
    return _rescale(total, acc_bits, output_integer_bits)


# ---------------------------------------------------------------------------
# LOGISTIC / TANH / ELU
# ---------------------------------------------------------------------------


def _sigmoid_table_uint16() -> np.ndarray:
    """The Q0.16 sigmoid table of TFLite's int16 LOGISTIC/TANH kernels.

    Nodes at x_i = i / 24, i = 0..255, placed for linear interpolation with
    the smallest worst-case error: on a segment of width h a chord misses a
    function by up to h^2 |f''| / 8, so each node is lifted by half of that,

        entry_i = round_half_up(65536 * (sigmoid(x_i) + h^2 |sigmoid''(x_i)| / 16)),

    with sigmoid'' = s (1 - s) (1 - 2 s) and h = 1 / 24; the last node is
    pinned to 65535, full scale.  This reproduces every entry of the kernel's
    table (checked against LiteRT on all 65536 int16 inputs for many input
    scales, tests/reference/test_activations.py); the lift divisor 16 is the
    middle of the range (15.75..16.5) that does."""
    x = np.arange(256, dtype=np.float64) / 24.0
    s = 1.0 / (1.0 + np.exp(-x))
    lift = np.abs(s * (1.0 - s) * (1.0 - 2.0 * s)) / (24.0 * 24.0 * 16.0)
    table = np.floor(65536.0 * (s + lift) + 0.5).astype(np.int64)
    table[-1] = 65535
    return table


def _int16_input_rescale(x_q: QParams, kind: str) -> tuple[int, int]:
    """(input_multiplier, input_left_shift) of TFLite's int16 LOGISTIC/TANH Prepare."""
    s = scale32(x_q)
    log2 = math.log(float(s)) / math.log(2.0)
    rounded = round_half_away_f32(np.float32(log2))
    pot = abs(np.float32(log2) - np.float32(rounded)) < np.float32(1e-3)
    left = (15 - 3) + int(rounded)
    if kind == "logistic":
        pot = pot and left == 0
    else:
        pot = pot and left in (0, 1)
    if pot:
        return 0, left
    multiplier = float(s) * 4096.0 * 3.0
    left = 0
    while multiplier <= 32767.0 / 2.0 and left <= 30:
        left += 1
        multiplier *= 2.0
    if not multiplier < 2.0**31:  # TFLite's static_cast<int32_t> would be undefined
        raise ValueError(f"int16 {kind}: input scale {float(s)!r} gives an input multiplier {multiplier:.6g} "
                         "that does not fit int32")
    return int(multiplier), left


def _int16_logistic_tanh(x, x_q, kind):
    mult, left = _int16_input_rescale(x_q, kind)
    if mult == 0:
        mult, left = 3 << left, 0
    rnd = (1 << (left - 1)) if left > 0 else 0
    v = (np.asarray(x).astype(np.int64) * mult + rnd) >> left
    table = _sigmoid_table_uint16()
    a = np.abs(v)
    if kind == "logistic":
        uh = a >> 9
        ut = a & 0x1FF
        frac_bits = 9
    else:
        uh = a >> 8
        ut = a & 0xFF
        frac_bits = 8
    sat = uh >= 255
    ui = np.minimum(uh, 254)
    ua = table[ui]
    ub = table[ui + 1]
    res = (ua << frac_bits) + ut * (ub - ua)
    if kind == "logistic":
        res = np.where(sat, 0x7FFF << 10, res)
        res = np.where(v >= 0, res + (1 << 9), (1 << 25) - res + (1 << 9) - 1)
        res = (res & 0xFFFFFFFF) >> 10
    else:
        res = np.where(sat, 0xFFFF << 8, res)
        res = np.where(
            v >= 0, res - (1 << 23) + (1 << 7), -res + (1 << 23) + (1 << 7) - 1
        )
        res = res >> 8
    return wrap_int16(res)


def wrap_int16(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.int64)
    return ((x + (1 << 15)) & 0xFFFF) - (1 << 15)


# gemmlowp fixed point on int16 raw values (TFLite's optimized int16
# LOGISTIC / TANH for power-of-two input scales, Q3.12 input, Q0.15 output).


def _c16(int32_value: int) -> int:
    """RescaleConstantInitializer<int16>: RDBPOT(int32 constant, 16)."""
    return int(rounding_divide_by_pot(np.int64(int32_value), 16))


def _sat_shl16(x, exponent: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.int64)
    if exponent == 0:
        return x
    threshold = (1 << (15 - exponent)) - 1
    r = wrap_int16(x << exponent)
    r = np.where(x > threshold, 32767, r)
    return np.where(x < -threshold, -32768, r)


def _rescale16(x, src_bits: int, dst_bits: int) -> np.ndarray:
    e = src_bits - dst_bits
    if e > 0:
        return _sat_shl16(x, e)
    if e < 0:
        return rounding_divide_by_pot(x, -e)
    return np.asarray(x, dtype=np.int64)


def _half_sum16(a, b) -> np.ndarray:
    return _rounding_half_sum(a, b)


def _sat_add16(a, b) -> np.ndarray:
    return np.clip(np.asarray(a, np.int64) + np.asarray(b, np.int64), -32768, 32767)


def _exp_interval16(a) -> np.ndarray:
    constant_term = _c16(_fx_const(math.exp(-1.0 / 8.0)))
    one_third = _c16(_fx_const(1.0 / 3.0))
    x = wrap_int16(np.asarray(a, np.int64) + (1 << 12))
    x2 = _srdhm16(x, x)
    x3 = _srdhm16(x2, x)
    x4 = _srdhm16(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(
        wrap_int16(_srdhm16(wrap_int16(x4_over_4 + x3), one_third) + x2), 1
    )
    return _sat_add16(constant_term, _srdhm16(constant_term, wrap_int16(x + poly)))


def _exp_neg16(a, integer_bits: int) -> np.ndarray:
    a = np.asarray(a, dtype=np.int64)
    fb = 15 - integer_bits
    one_quarter = 1 << (fb - 2)
    a_mod = wrap_int16((a & (one_quarter - 1)) - one_quarter)
    result = _exp_interval16(_rescale16(a_mod, integer_bits, 0))
    remainder = wrap_int16(a_mod - a)
    for exponent in range(-2, 5):
        if integer_bits > exponent:
            mult = _c16(_fx_const(math.exp(-(2.0**exponent))))
            bit = 1 << (fb + exponent)
            result = np.where((remainder & bit) != 0, _srdhm16(result, mult), result)
    return np.where(a == 0, 32767, result)


def _newton16(half_denominator) -> np.ndarray:
    c48_17 = _c16(_fx_const(48.0 / 17.0, 2))
    c_neg32_17 = _c16(_fx_const(-32.0 / 17.0, 2))
    x = wrap_int16(c48_17 + _srdhm16(half_denominator, c_neg32_17))
    one_f2 = 1 << 13
    for _ in range(3):
        hdx = _srdhm16(half_denominator, x)
        one_minus = wrap_int16(one_f2 - hdx)
        x = wrap_int16(x + _sat_shl16(_srdhm16(x, one_minus), 2))
    return x


def _gemmlowp_logistic16(a) -> np.ndarray:
    """gemmlowp::logistic(FixedPoint<int16, 3>) -> Q0.15 raw."""
    a = np.asarray(a, dtype=np.int64)
    positive = a > 0
    abs_in = np.where(positive, a, wrap_int16(-a))
    e = _exp_neg16(wrap_int16(-abs_in), 3)
    x = _newton16(_half_sum16(e, 32767))
    pos = _sat_shl16(x, 1)
    neg = wrap_int16(32767 - pos)
    return np.where(a == 0, _c16(1 << 30), np.where(positive, pos, neg))


def _gemmlowp_tanh16(a) -> np.ndarray:
    """gemmlowp::tanh(FixedPoint<int16, 3>) -> Q0.15 raw."""
    a = np.asarray(a, dtype=np.int64)
    negative = a < 0
    n = np.where(negative, a, wrap_int16(-a))
    e = _exp_neg16(n, 4)  # ExactMulByPot<1>: same raw as Q4.11
    x = _newton16(_half_sum16(e, 32767))
    t = _sat_shl16(wrap_int16(x - (1 << 13)), 2)
    return np.where(a == 0, 0, np.where(negative, wrap_int16(-t), t))


def logistic(x, *, x_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """Quantized sigmoid.

    8-bit: a 256-entry table (`logistic_table`), TFLite LUTPopulate for
    "tflite", XNNPACK's table for "litert".  int16 (zero points 0, output
    scale 2^-15): TFLite's reference_integer_ops::Logistic (input rescaled to
    Q3.12 x 3/4 and linear interpolation in a 256-entry Q0.16 sigmoid table
    whose entries `_sigmoid_table_uint16` derives in closed form).  "litert" with
    the power-of-two input scale 2^-12: TFLite's optimized kernel,
    gemmlowp::logistic on Q3.12 in int16 fixed point (exact).
    """
    _check_rounding(rounding)
    if x_q.bits == 16:
        if rounding == "litert" and _int16_input_rescale(x_q, "logistic")[0] == 0:
            # optimized_ops::Logistic(int16): gemmlowp fixed point on Q3.12
            return _gemmlowp_logistic16(x).astype(out_q.dtype)
        return _int16_logistic_tanh(x, x_q, "logistic").astype(out_q.dtype)
    return apply_table(x, logistic_table(x_q, out_q, rounding), x_q)


def tanh(x, *, x_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """Quantized tanh; 8-bit through `tanh_table`, int16 as TFLite's
    reference_integer_ops::Tanh (see `logistic`; "litert" with input scale
    2^-12 or 2^-11 runs gemmlowp::tanh in int16 fixed point, exact)."""
    _check_rounding(rounding)
    if x_q.bits == 16:
        mult, left = _int16_input_rescale(x_q, "tanh")
        if rounding == "litert" and mult == 0:
            # optimized_ops::Tanh(int16): gemmlowp fixed point on Q3.12
            xi = np.asarray(x).astype(np.int64)
            if left == 1:
                xi = _sat_shl16(xi, 1)
            return _gemmlowp_tanh16(xi).astype(out_q.dtype)
        return _int16_logistic_tanh(x, x_q, "tanh").astype(out_q.dtype)
    return apply_table(x, tanh_table(x_q, out_q, rounding), x_q)


def elu(x, *, x_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """Quantized ELU (alpha 1): int8 through `elu_table` (TFLite's LUT /
    XNNPACK's table for "litert")."""
    _check_rounding(rounding)
    return apply_table(x, elu_table(x_q, out_q, rounding), x_q)


# ---------------------------------------------------------------------------
# int16 LUTs with interpolation (TFLite LUTPopulateInt16 / LUTLookup)
# ---------------------------------------------------------------------------


def int16_lut(transform, input_scale, input_zero_point, output_scale, output_zero_point,
              float_type=np.float64) -> np.ndarray:
    """TFLite LUTPopulateInt16: 513 entries, sampled at 512 steps over the input
    range with a midpoint-error bias; `transform` works on `float_type` arrays."""
    ft = float_type
    i_s = ft(input_scale)
    o_s = ft(output_scale)
    input_min = ft(i_s * ft(-32768 - input_zero_point))
    input_max = ft(i_s * ft(32767 - input_zero_point))
    output_min = ft(o_s * ft(-32768 - output_zero_point))
    output_max = ft(o_s * ft(32767 - output_zero_point))
    nb = 512
    step = ft((input_max - input_min) / ft(nb))
    half_step = ft(step / ft(2))
    inv = ft(ft(65536) / ft(output_max - output_min))
    i = np.arange(nb).astype(ft)
    x0 = (input_min + (i * step).astype(ft)).astype(ft)
    xm = (x0 + half_step).astype(ft)
    x1 = (input_min + ((i + 1) * step).astype(ft)).astype(ft)
    val = transform(x0).astype(ft)
    val_mid = transform(xm).astype(ft)
    val_next = transform(x1).astype(ft)

    def rnd(v):
        v = np.asarray(v, dtype=np.float64)
        return np.sign(v) * np.floor(np.abs(v) + 0.5)

    sample = rnd((val * inv).astype(ft))
    interp = rnd(((val_next * inv).astype(ft) + sample.astype(ft)).astype(ft) / ft(2))
    mid = rnd((val_mid * inv).astype(ft))
    bias = rnd((interp - mid) / 2)
    # std::min(std::max(NaN, lo), hi) keeps a NaN (an overflowing transform gives
    # inf - inf), and its conversion to int16 on x86 keeps the low half of 0x80000000
    lut = np.clip(sample - bias, -32768, 32767)
    lut = np.where(np.isnan(lut), 0, lut)
    last = np.clip(rnd((transform(np.asarray([input_max], ft)).astype(ft) * inv).astype(ft)),
                   -32768, 32767)
    return np.concatenate([lut, last]).astype(np.int64)


def int16_lut_lookup(value, lut) -> np.ndarray:
    """TFLite LUTLookup(int16, lut[513]): 9-bit index + 7-bit interpolation."""
    value = np.asarray(value, dtype=np.int64)
    lut = np.asarray(lut, dtype=np.int64)
    index = 256 + (value >> 7)
    offset = value & 0x7F
    base = lut[index]
    slope = wrap_int16(lut[index + 1] - base)  # an int16 in the kernel: wraps across a saturated table
    delta = (slope * offset + 64) >> 7
    return wrap_int16(base + delta)


# ---------------------------------------------------------------------------
# SOFTMAX / LOG_SOFTMAX
# ---------------------------------------------------------------------------

_SCALED_DIFF_INTEGER_BITS = 5
_ACCUM_INTEGER_BITS = 12


def softmax_params(beta: float, in_q: QParams, rounding: str = "tflite"):
    """TFLite PreprocessSoftmaxScaling + CalculateInputRadius for 8-bit input:
    (input_multiplier, input_left_shift, diff_min)."""
    max_real = float((1 << 30) - 1) if rounding in ("single", "half_up") else float((1 << 31) - 1)
    real = min(
        float(np.float32(beta)) * float(scale32(in_q)) * float(1 << (31 - _SCALED_DIFF_INTEGER_BITS)),
        max_real,
    )
    m, s = qmult(real, rounding)
    m, s = int(m), int(s)
    radius = math.floor(
        1.0 * ((1 << _SCALED_DIFF_INTEGER_BITS) - 1)
        * (1 << (31 - _SCALED_DIFF_INTEGER_BITS)) / (1 << s)
    )
    return m, s, -radius


def _mbqm_gt1(x, m, s, rounding):
    """MultiplyByQuantizedMultiplierGreaterThanOne (shift >= 0)."""
    if rounding in ("single", "half_up"):
        return multiply_single_rounding(x, m, s)
    return _srdhm(wrap_int32(np.asarray(x, np.int64) << s), m)


def _softmax_8bit_fixed(x, x_q, out_q, beta, rounding):
    m, s, diff_min = softmax_params(beta, x_q, rounding)
    xi = np.asarray(x).astype(np.int64)
    mx = xi.max(axis=-1, keepdims=True)
    diff = xi - mx
    valid = diff >= diff_min
    rescaled = _mbqm_gt1(np.where(valid, diff, 0), m, s, rounding)
    exps = exp_on_negative_values(rescaled, _SCALED_DIFF_INTEGER_BITS)
    contrib = np.where(valid, _rescale(exps, 0, _ACCUM_INTEGER_BITS), 0)
    total = wrap_int32(contrib.sum(axis=-1, keepdims=True))
    recip, nbou = get_reciprocal(total, _ACCUM_INTEGER_BITS)
    out_bits = out_q.bits
    exponent = nbou + 31 - out_bits
    if np.any((exponent < 0) | (exponent > 31)):
        # TFLITE_CHECK(0 <= exponent && exponent <= 31) aborts the reference kernel: with 8-bit
        # output, a row whose sum of exponentials (Q12.19) reaches 512 (long rows, small scales)
        row_sum = float(total.max()) / (1 << 19)
        raise ValueError(f"a row's sum of exponentials ({row_sum:.1f}) reaches 2^{out_bits + 1}: TFLite's "
                         "reference SOFTMAX kernel aborts there (TFLITE_CHECK on the output exponent); "
                         "LiteRT's default interpreter (--rounding litert) runs it")
    unsat = rounding_divide_by_pot(_srdhm(recip, exps), exponent)
    lo, hi = type_bounds(out_q)
    v = np.clip(unsat + lo, lo, hi)
    return np.where(valid, v, lo).astype(out_q.dtype)


def _softmax_8bit_float_table(x, x_q, out_q, beta, tie_even=False):
    """optimized_ops::Softmax (8-bit in): table[255 - d] = expf(-s*beta*d),
    float32 sequential sum, `1 / (sum * s_out)`, round, + z_out."""
    xi = np.asarray(x).astype(np.int64)
    scale = np.float32(-scale32(x_q) * np.float32(beta))
    vals = np.arange(256, dtype=np.float32)
    table_by_d = expf((scale * vals).astype(np.float32))  # index: d = max - x
    mx = xi.max(axis=-1, keepdims=True)
    e = table_by_d[mx - xi]
    total = np.cumsum(e, axis=-1, dtype=np.float32)[..., -1:]
    inv = (np.float32(1.0) / (total * scale32(out_q)).astype(np.float32)).astype(np.float32)
    prob = (e * inv).astype(np.float32)
    r = np.rint(prob.astype(np.float64)) if tie_even else round_half_away_f32(prob)
    lo, hi = type_bounds(out_q)
    return np.clip(r.astype(np.int64) + zp(out_q), lo, hi).astype(out_q.dtype)


def _softmax_int16(x, x_q, out_q, beta, rounding):
    rng = 65535
    exp_lut = int16_lut(np.exp, 10.0 / rng, 32767, 2.0 / rng, 0)
    recip_lut = int16_lut(lambda v: 1.0 / (1.0 + v), 1.0 / rng, -32768, 2.0 / rng, 0)
    real = float(np.float32(scale32(x_q) * np.float32(beta))) / (10.0 / 65535.0)
    m, s = qmult(real, rounding)
    xi = np.asarray(x).astype(np.int64)
    mx = xi.max(axis=-1, keepdims=True)
    scaled = mbqm(xi - mx, m, s, rounding)
    sym = np.clip(scaled + 32767, -32768, 32767)
    exps = int16_lut_lookup(sym, exp_lut)
    total = exps.sum(axis=-1, keepdims=True)
    h = _clz32(total)
    shifted = ((total << (h - 1)) + (1 << 13)) >> 14
    sym_sum = np.clip(shifted - ((1 << 15) + (1 << 16)), -32768, 32767)
    recip = int16_lut_lookup(sym_sum, recip_lut)
    right = 31 - h
    res = (exps * recip + (np.int64(1) << (right - 1))) >> right
    return np.clip(res, 0, 32767).astype(out_q.dtype)


def softmax(
    x,
    *,
    x_q: QParams,
    out_q: QParams,
    beta: float = 1.0,
    rounding: str = "tflite",
) -> np.ndarray:
    """Quantized softmax over the last axis: `q_out(exp(beta s d) / sum exp(beta s d))`
    with `d = x - max(x)`.

    8-bit input ("tflite", also "single"/"half_up" with one-rounding
    multipliers): TFLite's reference kernel in gemmlowp fixed point --
    PreprocessSoftmaxScaling(beta, s, 5) gives a Q5.26 rescale of the
    differences, entries below `-CalculateInputRadius` contribute nothing and
    output the type minimum, exp_on_negative_values, sum in Q12.19,
    GetReciprocal, `RDBPOT(recip * exp, bits_over_unit + 31 - out_bits) +
    type_min`.  The output type may be int8, uint8 or int16 (the kernel fixes
    the output zero point to the type minimum and the scale to 2^-out_bits).

    8-bit "litert" / "half_even": optimized_ops::Softmax -- a float table
    `expf(-s beta d)`, sequential float32 sum, `round(e / (sum s_out)) + z_out`
    (half away from zero for litert, to even for half_even).

    int16 (zero points 0, output 2^-15): reference_ops::SoftmaxInt16 with its
    two 513-entry interpolated LUTs (exp on [-10, 0], 1/(1+x) on [0, 1]); the
    same kernel runs in LiteRT's default interpreter.
    """
    _check_rounding(rounding)
    _per_tensor(x_q, "x_q")
    if x_q.bits == 16:
        return _softmax_int16(x, x_q, out_q, beta, "tflite" if rounding == "litert" else rounding)
    if rounding in ("litert", "half_even"):
        return _softmax_8bit_float_table(x, x_q, out_q, beta, tie_even=rounding == "half_even")
    return _softmax_8bit_fixed(x, x_q, out_q, beta, rounding)


def _log_softmax_8bit_fixed(x, x_q, out_q, rounding):
    m, s, diff_min = softmax_params(1.0, x_q, rounding)
    real_reverse = float(1 << (31 - s)) / float(m)
    rm, rs = quantize_multiplier(real_reverse)
    xi = np.asarray(x).astype(np.int64)
    mx = xi.max(axis=-1, keepdims=True)
    diff = xi - mx
    valid = diff >= diff_min
    diff_q5 = mbqm(np.where(valid, diff, 0), m, s, rounding)
    exps = exp_on_negative_values(diff_q5, _SCALED_DIFF_INTEGER_BITS)
    contrib = np.where(valid, _rescale(exps, 0, _ACCUM_INTEGER_BITS), 0)
    total = wrap_int32(contrib.sum(axis=-1, keepdims=True))
    log_sum = log_x_for_x_ge_1(total, _SCALED_DIFF_INTEGER_BITS, _ACCUM_INTEGER_BITS)
    shifted_log_sum = wrap_int32(log_sum + INT32_MIN)
    adjusted = np.maximum(diff_min - 1, mbqm(shifted_log_sum, rm, rs, rounding))
    keep = diff > adjusted
    diff_q5_all = mbqm(np.where(keep, diff, 0), m, s, rounding)
    out = rounding_divide_by_pot(
        wrap_int32(diff_q5_all - log_sum), 31 - _SCALED_DIFF_INTEGER_BITS - 4
    ) + 127
    lo, hi = type_bounds(out_q)
    if not x_q.signed:
        out = out + 128  # uint8: zero point 255
    out = np.clip(out, lo, hi)
    return np.where(keep, out, lo).astype(out_q.dtype)


def _log_softmax_8bit_float(x, x_q, out_q, tie_even_rint=True):
    """optimized_ops::LogSoftmax (8-bit): float exp table, logf of the float32
    sum, `rint(s/s_out * x - (s*max + log_sum)/s_out) + z_out`."""
    xi = np.asarray(x).astype(np.int64)
    s_in = scale32(x_q)
    scale = np.float32(-s_in * np.float32(1.0))
    vals = np.arange(256, dtype=np.float32)
    table_by_d = expf((scale * vals).astype(np.float32))
    mx = xi.max(axis=-1, keepdims=True)
    e = table_by_d[mx - xi]
    total = np.cumsum(e, axis=-1, dtype=np.float32)[..., -1:]
    log_sum = logf(total)
    s_out = scale32(out_q)
    ratio = np.float32(s_in / s_out)
    pre = ((np.float32(s_in) * mx.astype(np.float32)).astype(np.float32) + log_sum).astype(np.float32)
    pre = (pre / s_out).astype(np.float32)
    log_prob = ((ratio * xi.astype(np.float32)).astype(np.float32) - pre).astype(np.float32)
    r = np.rint(log_prob.astype(np.float64)).astype(np.int64) + zp(out_q)
    lo, hi = type_bounds(out_q)
    return np.clip(r, lo, hi).astype(out_q.dtype)


def log_softmax(x, *, x_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """Quantized log-softmax over the last axis; output fixed to scale 16/256,
    zero point 127 (int8) / 255 (uint8).

    "tflite": reference_integer_ops::LogSoftmax -- Q5.26 differences as in
    softmax (beta 1), sum of exp in Q12.19, fixed-point log
    (log_x_for_x_greater_than_or_equal_to_1), entries more than the reverse-
    scaled log-sum below the maximum give the type minimum, otherwise
    `RDBPOT(d_q5 - log_sum, 22) + 127`.  "litert"/"half_even":
    optimized_ops::LogSoftmax in float32 with `rint`.
    """
    _check_rounding(rounding)
    _per_tensor(x_q, "x_q")
    if x_q.bits != 8:
        raise ValueError("LOG_SOFTMAX is defined for 8-bit tensors only")
    if rounding in ("litert", "half_even"):
        return _log_softmax_8bit_float(x, x_q, out_q)
    return _log_softmax_8bit_fixed(x, x_q, out_q, rounding)


# ---------------------------------------------------------------------------
# HARD_SWISH
# ---------------------------------------------------------------------------


def _srdhm16(a, b) -> np.ndarray:
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    overflow = (a == -32768) & (b == -32768)
    ab = a * b
    t = ab + np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    q = np.abs(t) >> 15
    q = wrap_int16(np.where(t < 0, -q, q))
    return np.where(overflow, 32767, q)


def _sdhm16(a, b) -> np.ndarray:
    """SaturatingDoublingHighMul (truncating) on int16."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    overflow = (a == -32768) & (b == -32768)
    ab = a * b
    q = np.abs(ab) >> 15
    q = wrap_int16(np.where(ab < 0, -q, q))
    return np.where(overflow, 32767, q)


def _rdbpot16(x, exponent: int) -> np.ndarray:
    """gemmlowp RoundingDivideByPOT on int16 values (mask truncated to int16)."""
    x = np.asarray(x, dtype=np.int64)
    mask = int(wrap_int16((1 << exponent) - 1))
    remainder = wrap_int16(x & mask)
    threshold = (mask >> 1) + (x < 0).astype(np.int64)
    return (x >> exponent) + (remainder > threshold).astype(np.int64)


def _downscale_to_int16(m: int) -> int:
    if m >= INT32_MAX - (1 << 15):
        return 32767
    return (m + (1 << 15)) >> 16


def hard_swish_params(x_q: QParams, out_q: QParams):
    """TFLite HardSwishPrepare: (output_multiplier_int16, output_exponent,
    reluish_multiplier_int16, reluish_exponent), ratios in float32."""
    hires = np.float32(np.float32(1.0 / 128.0) * scale32(x_q))
    out_mult = np.float32(hires / scale32(out_q))
    reluish_scale = np.float32(3.0 / 32768.0)
    reluish_mult = np.float32(hires / reluish_scale)
    om, oe = quantize_multiplier(float(out_mult))
    rm, re = quantize_multiplier(float(reluish_mult))
    if int(oe) > 0:
        raise ValueError("HARD_SWISH needs s_in / (128 s_out) <= 1 (TFLite requires it)")
    return _downscale_to_int16(int(om)), int(oe), _downscale_to_int16(int(rm)), int(re)


def hard_swish(x, *, x_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """Quantized hard-swish `x * relu6(x + 3) / 6`.

    Mirrors TFLite's reference_ops::HardSwish for 8-bit tensors (int16 fixed
    point): the input on a 2^7 finer "hires" scale, one SRDHM16 to the output
    scale, a saturating "reluish" rescale of x onto [-3, 3] -> [-1, 1] mapped
    to [0, 1], a truncating doubling high multiply, the output exponent as a
    rounding shift.  LiteRT's default interpreter runs the same code on x86
    (its NEON block is compiled only for ARM), so "litert" == "tflite";
    "half_even" evaluates the float formula and rounds ties to even.
    """
    _check_rounding(rounding)
    _per_tensor(x_q, "x_q")
    _per_tensor(out_q, "out_q")
    xi = np.asarray(x).astype(np.int64)
    lo, hi = type_bounds(out_q)
    if rounding == "half_even":
        xf = (xi - zp(x_q)).astype(np.float32) * scale32(x_q)
        y = xf * np.clip(xf + np.float32(3), 0, 6).astype(np.float32) / np.float32(6)
        r = np.rint((y / scale32(out_q)).astype(np.float64)).astype(np.int64) + zp(out_q)
        return np.clip(r, lo, hi).astype(out_q.dtype)
    om, oe, rm, re = hard_swish_params(x_q, out_q)
    v = wrap_int16(xi - zp(x_q))
    hires = wrap_int16(v * 128)
    preshift = _srdhm16(hires, om)
    reluish = hires
    if re > 0:  # a saturating shift: past 16 bits any nonzero value saturates (and int64 would overflow)
        reluish = np.clip(reluish * (1 << min(re - 1, 16)), -32768, 32767)
    reluish = _srdhm16(reluish, rm)
    if re > 0:
        reluish = np.clip(reluish * 2, -32768, 32767)
    if re < 0:
        reluish = _rdbpot16(reluish, -re)
    reluish = wrap_int16((reluish + (1 << 15)) >> 1)
    pre_out = _sdhm16(reluish, preshift)
    out = wrap_int16(_rdbpot16(pre_out, -oe) + zp(out_q))
    return np.clip(out, lo, hi).astype(out_q.dtype)


# ---------------------------------------------------------------------------
# LEAKY_RELU / PRELU
# ---------------------------------------------------------------------------


def _xnnpack_lrelu_mults(x_q: QParams, out_q: QParams, alpha: float):
    """XNNPACK qs8/qu8 leaky relu multipliers, or None when LiteRT's delegate
    refuses the op (then TFLite's kernel runs)."""
    if not (x_q.bits == out_q.bits == 8 and x_q.signed == out_q.signed):
        return None
    a = np.float32(alpha)
    if not np.isfinite(a) or a == 0 or abs(a) < np.finfo(np.float32).tiny:
        return None
    pos = np.float32(scale32(x_q) / scale32(out_q))
    if pos < np.float32(1.0 / 256.0) or pos > np.float32(128.0):
        return None
    neg = np.float32(pos * a)
    if neg < np.float32(-127.99609375) or neg > np.float32(128.0) or abs(neg) < np.float32(1.0 / 256.0):
        return None
    pm = int(np.rint(np.float32(256.0) * pos))
    nm = int(np.rint(np.float32(256.0) * neg))
    return pm, nm


def leaky_relu(
    x,
    *,
    x_q: QParams,
    out_q: QParams,
    alpha: float,
    rounding: str = "tflite",
) -> np.ndarray:
    """Quantized leaky relu `x >= 0 ? x : alpha x`.

    "tflite": reference_ops::QuantizeLeakyRelu -- `z_out + MBQM(x - z_in, M, s)`
    with the identity multiplier from float32 `s_in / s_out` for x >= z_in and
    the alpha multiplier from float32 `s_in * alpha / s_out` below (a negative
    alpha is applied as `-MBQM(d, |M|, s)`).  "litert": XNNPACK's vlrelu
    where LiteRT's delegate takes it: `m = lrintf(256 * ratio)`,
    `((x - z_in) * m + 128) >> 8 + z_out`; otherwise TFLite's optimized kernel,
    which applies a negative alpha multiplier directly, `MBQM(d, M, s)`.
    """
    _check_rounding(rounding)
    _per_tensor(x_q, "x_q")
    _per_tensor(out_q, "out_q")
    xi = np.asarray(x).astype(np.int64)
    d = xi - zp(x_q)
    lo, hi = type_bounds(out_q)
    if rounding == "litert":
        mults = _xnnpack_lrelu_mults(x_q, out_q, alpha)
        if mults is not None:
            pm, nm = mults
            m = np.where(d >= 0, pm, nm)
            v = ((d * m + 128) >> 8) + zp(out_q)
            return np.clip(v, lo, hi).astype(out_q.dtype)
        # LiteRT's default (optimized) kernel applies a negative alpha multiplier
        # directly, MBQM(d, M < 0, s); the reference kernel as -MBQM(d, |M|, s).  They
        # differ on ties: d = -12595, alpha -0.5, equal scales gives 6298 and 6297.
        direct_negative = True
        rounding = "tflite"
    else:
        direct_negative = False
    ident = np.float32(scale32(x_q) / scale32(out_q))
    alpha_m = np.float32(np.float32(scale32(x_q) * np.float32(alpha)) / scale32(out_q))
    if rounding == "half_even":
        r = np.where(d >= 0, d.astype(np.float32) * ident, d.astype(np.float32) * alpha_m)
        v = np.rint(r.astype(np.float64)).astype(np.int64) + zp(out_q)
        return np.clip(v, lo, hi).astype(out_q.dtype)
    mi, si = qmult(float(ident), rounding)
    ma, sa = qmult(float(alpha_m), rounding)
    pos = mbqm(d, mi, si, rounding)
    if int(ma) < 0 and not direct_negative:
        neg = -mbqm(d, -ma, sa, rounding)
    else:
        neg = mbqm(d, ma, sa, rounding)
    v = np.where(d >= 0, pos, neg) + zp(out_q)
    return np.clip(v, lo, hi).astype(out_q.dtype)


def prelu(
    x,
    alpha,
    *,
    x_q: QParams,
    alpha_q: QParams,
    out_q: QParams,
    rounding: str = "tflite",
) -> np.ndarray:
    """Quantized parametric relu with a quantized, broadcast `alpha` tensor.

    Mirrors TFLite's reference_ops::BroadcastPrelu4DSlow / Prelu:
    `x >= z_in : MBQM(x - z_in, M1, s1)`, else
    `MBQM((x - z_in) * (alpha - z_a), M2, s2)`, plus z_out, saturated; M1
    from float32 `s_in / s_out`, M2 from float32 `s_in * s_a / s_out`.  XNNPACK
    does not take quantized PRELU, so "litert" == "tflite".
    """
    _check_rounding(rounding)
    _per_tensor(x_q, "x_q")
    _per_tensor(alpha_q, "alpha_q")
    _per_tensor(out_q, "out_q")
    xi = np.asarray(x).astype(np.int64)
    ai = np.asarray(alpha).astype(np.int64)
    xi, ai = np.broadcast_arrays(xi, ai)
    d = xi - zp(x_q)
    da = ai - zp(alpha_q)
    lo, hi = type_bounds(out_q)
    r1 = np.float32(scale32(x_q) / scale32(out_q))
    r2 = np.float32(np.float32(scale32(x_q) * scale32(alpha_q)) / scale32(out_q))
    if rounding == "litert":
        rounding = "tflite"
    if rounding == "half_even":
        r = np.where(d >= 0, d.astype(np.float32) * r1, (d * da).astype(np.float32) * r2)
        v = np.rint(r.astype(np.float64)).astype(np.int64) + zp(out_q)
        return np.clip(v, lo, hi).astype(out_q.dtype)
    m1, s1 = qmult(float(r1), rounding)
    m2, s2 = qmult(float(r2), rounding)
    pos = mbqm(d, m1, s1, rounding)
    neg = mbqm(wrap_int32(d * da), m2, s2, rounding)
    v = np.where(d >= 0, pos, neg) + zp(out_q)
    return np.clip(v, lo, hi).astype(out_q.dtype)



# ---------------------------------------------------------------------------
# Transformer-encoder unary ops: GELU, EXP, RSQRT, SQRT (TFLite builtins)
# ---------------------------------------------------------------------------
#
# None of these is taken by XNNPACK on quantized tensors: LiteRT's default
# interpreter runs the same builtin kernel as BUILTIN_REF, so "litert" gives the
# "tflite" numbers.  The float functions are the C library's float versions
# (`std::erfc(float)` is erfcf, ...), called through ctypes where it loads.


@functools.lru_cache(maxsize=None)
def _libm_float(name: str):
    """The C library's float function `name` (erfcf, expf, tanhf, sqrtf), or None."""
    import ctypes
    import ctypes.util

    try:
        lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        fn = getattr(lib, name)
    except (OSError, AttributeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
    return fn


def _libm_apply(name: str, fallback, x) -> np.ndarray:
    """float32 `name(x)` element by element with the C library (tables only: at most 1539
    calls); `fallback` in float64 rounded once where no C math library can be loaded."""
    fn = _libm_float(name)
    x = np.asarray(x, dtype=np.float32)
    if fn is None:
        return _f32(fallback, x)
    return np.array([fn(float(v)) for v in x.ravel()], dtype=np.float32).reshape(x.shape)


def _erfc(v):
    return np.vectorize(math.erfc, otypes=[np.float64])(v)


_NEG_SQRT1_2 = np.float32(-0.7071067811865476)  # static_cast<float>(-M_SQRT1_2)
_SQRT_2_OVER_PI = np.float32(1.1283791670955126 * 0.7071067811865476)  # constexpr float M_2_SQRTPI * M_SQRT1_2


def gelu_f32(v, approximate: bool = False) -> np.ndarray:
    """TFLite's GeluTransform / GeluTransformApproximate in float32, as the LUTs call them:
    `0.5f * x * erfcf(x * -M_SQRT1_2)`, or
    `0.5f * x * (1.f + tanhf(sqrt(2/pi) * (x + 0.044715f * x * x * x)))`."""
    x = np.asarray(v, dtype=np.float32)
    half_x = (np.float32(0.5) * x).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        if not approximate:
            return (half_x * _libm_apply("erfcf", _erfc, (x * _NEG_SQRT1_2).astype(np.float32))).astype(np.float32)
        cube = (((np.float32(0.044715) * x).astype(np.float32) * x).astype(np.float32) * x).astype(np.float32)
        inner = (_SQRT_2_OVER_PI * (x + cube).astype(np.float32)).astype(np.float32)
        return (half_x * (np.float32(1.0) + tanhf(inner)).astype(np.float32)).astype(np.float32)


def _exp_f32(v) -> np.ndarray:
    return _libm_apply("expf", np.exp, v)


def _lut_table(transform, x_q: QParams, out_q: QParams) -> np.ndarray:
    _per_tensor(x_q, "x_q")
    _per_tensor(out_q, "out_q")
    if x_q.bits == 8:
        return _tflite_lut(transform, x_q, out_q, "tflite")
    if x_q.bits == 16 and x_q.signed:
        with np.errstate(over="ignore", invalid="ignore"):  # inf / NaN entries are part of the recipe
            return int16_lut(transform, scale32(x_q), zp(x_q), scale32(out_q), zp(out_q), float_type=np.float32)
    raise ValueError(f"no kernel for {x_q.storage} input")


def _lut_op(transform, x, x_q: QParams, out_q: QParams) -> np.ndarray:
    """TFLite's LUTPopulate + LookupTable: 8-bit through a 256-entry table
    (LUTPopulateInt8), int16 through the 513-entry interpolated table
    (LUTPopulateInt16<float>)."""
    table = _lut_table(transform, x_q, out_q)
    if x_q.bits == 8:
        return apply_table(x, table, x_q)
    return int16_lut_lookup(x, table).astype(out_q.dtype)


def transformer_table(kind: str, x_q: QParams, out_q: QParams, approximate: bool = False) -> np.ndarray:
    """The table a lowering materialises for `qnn.gelu` / `qnn.exp` / `qnn.rsqrt` (TFLite
    profiles), from the op's types alone.  8-bit input: the 256 outputs indexed by `lut_index`
    (`apply_table`); int16 input: the 513 entries of LUTPopulateInt16<float>, looked up with
    `int16_lut_lookup` (9-bit index, 7-bit interpolation, int16 slope)."""
    if kind == "gelu":
        return _lut_table(lambda v: gelu_f32(v, approximate), x_q, out_q)
    if kind == "exp":
        return _lut_table(_exp_f32, x_q, out_q)
    if kind == "rsqrt":
        if x_q.bits == 8 and x_q.signed:
            return rsqrt_table_int8(x_q, out_q)
        return _lut_table(_rsqrt_int16_f32(scale32(out_q)), x_q, out_q)
    raise ValueError(f"no table for {kind!r} (gelu, exp, rsqrt)")


def _lut_rounding(rounding: str, op: str) -> None:
    _check_rounding(rounding)
    if rounding not in ("tflite", "litert", "single"):
        raise ValueError(f"{op}: rounding '{rounding}' has no recipe (only LiteRT's table kernel is known)")


def gelu(x, *, x_q: QParams, out_q: QParams, approximate: bool = False, rounding: str = "tflite") -> np.ndarray:
    """Quantized GELU: TFLite's LUT (`gelu_f32` on the dequantized inputs, TfLiteRound);
    int16 through LUTPopulateInt16<float> and LUTLookup (any zero points)."""
    _lut_rounding(rounding, "GELU")
    return _lut_op(lambda v: gelu_f32(v, approximate), x, x_q, out_q)


def exp(x, *, x_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """Quantized EXP: TFLite's LUT of expf (int16: zero points 0, interpolated table)."""
    _lut_rounding(rounding, "EXP")
    if not x_q.signed:
        raise ValueError(f"EXP has no kernel for {x_q.storage} input (LiteRT: int8, int16, float32)")
    if x_q.bits == 16 and (zp(x_q) or zp(out_q)):
        raise ValueError("int16 EXP needs zero points 0")
    return _lut_op(_exp_f32, x, x_q, out_q)


def _inv_sqrt_multiplier_exp(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLite GetInvSqrtQuantizedMultiplierExp(v, kReverseShift) for int32 values v >= 0:
    (multiplier, left shift), gemmlowp Newton-Raphson in Q3.28 (5 steps from 1)."""
    v = np.asarray(values, dtype=np.int64).copy()
    small = v <= 1
    v = np.where(small, 2, v)
    shift = np.full(v.shape, 11, dtype=np.int64)
    while np.any(v >= (1 << 29)):
        big = v >= (1 << 29)
        v = np.where(big, v // 4, v)
        shift = shift + big
    pairs = (_clz32(v) - 1) // 2 - 1
    shift = shift - pairs
    v = v << (2 * pairs)
    fx_input = v >> 1
    half_input = rounding_divide_by_pot(fx_input, 1)
    half_three = (1 << 28) + (1 << 27)
    x = np.full(v.shape, 1 << 28, dtype=np.int64)
    for _ in range(5):
        x3 = _rescale(_srdhm(_srdhm(x, x), x), 9, 3)
        x = _rescale(wrap_int32(_srdhm(half_three, x) - _srdhm(half_input, x3)), 6, 3)
    x = _srdhm(x, 1518500250)
    neg = shift < 0
    x = np.where(neg, wrap_int32(x << np.where(neg, -shift, 0)), x)
    shift = np.where(neg, 0, shift)
    return np.where(small, INT32_MAX, x), np.where(small, 0, -shift)


def _positive_only(x, x_q: QParams, op: str) -> None:
    xi = np.asarray(x).astype(np.int64)
    if xi.size and int(xi.min()) < zp(x_q):
        raise ValueError(f"{op} is only defined for non-negative inputs (stored {int(xi.min())} is below "
                         f"the zero point {zp(x_q)}; LiteRT fails the invoke)")


def rsqrt_table_int8(x_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """The 256 outputs of int8 RSQRT (indexed by `lut_index`; entries below the input
    zero point are LiteRT's errors and hold the type maximum here).

    TFLite's RsqrtEvalQuantizedInt8: `v = x - zp_in`; v == 0 gives 127; else
    `(M, s) = GetInvSqrtQuantizedMultiplierExp(v)`, `d = MBQM(1, M, s + 20)`,
    `out = MBQM(d, M_out, shift_out - 20) + zp_out` with `M_out, shift_out` from
    QuantizeMultiplier(1 / (sqrt(double(float in_s)) * out_s)), saturated."""
    vals = _table_inputs(x_q)
    v = vals - zp(x_q)
    m_inv, s_inv = _inv_sqrt_multiplier_exp(np.maximum(v, 0))
    data = mbqm(np.ones_like(v), m_inv, s_inv + 20, rounding)
    real = 1.0 / (math.sqrt(float(scale32(x_q))) * float(scale32(out_q)))
    m_out, s_out = qmult(real, rounding)
    out = mbqm(data, m_out, s_out - 20, rounding) + zp(out_q)
    lo, hi = type_bounds(out_q)
    out = np.where(v <= 0, hi, np.clip(out, lo, hi))
    return out.astype(out_q.dtype)


def _rsqrt_int16_f32(out_scale: np.float32):
    def fn(v):
        v = np.asarray(v, dtype=np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = (np.float32(1.0) / np.sqrt(v)).astype(np.float32)
        return np.where(v <= 0, np.float32(np.float32(32767) * out_scale), r).astype(np.float32)

    return fn


def rsqrt(x, *, x_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """Quantized RSQRT (1 / sqrt(x)).  int8: TFLite's fixed-point kernel
    (`rsqrt_table_int8`); int16 (zero points 0): LUTPopulateInt16<float> of
    `v <= 0 ? 32767 * out_s : 1.0f / sqrtf(v)` and LUTLookup.  Inputs below the
    input zero point are an error (LiteRT fails the invoke)."""
    _lut_rounding(rounding, "RSQRT")
    _per_tensor(x_q, "x_q")
    _per_tensor(out_q, "out_q")
    _positive_only(x, x_q, "RSQRT")
    if x_q.bits == 8 and x_q.signed:
        return apply_table(x, rsqrt_table_int8(x_q, out_q, rounding), x_q)
    if x_q.bits == 16 and x_q.signed:
        if zp(x_q) or zp(out_q):
            raise ValueError("int16 RSQRT needs zero points 0")
        lut = int16_lut(_rsqrt_int16_f32(scale32(out_q)), scale32(x_q), 0, scale32(out_q), 0,
                        float_type=np.float32)
        return int16_lut_lookup(x, lut).astype(out_q.dtype)
    raise ValueError(f"RSQRT has no kernel for {x_q.storage} input")


def sqrt(x, *, x_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """Quantized SQRT as TFLite's SqrtEvalQuantized computes it, in float32:
    `d = in_s * float(x - zp_in)`, `out = int(sqrtf(d) / out_s) + zp_out` (truncation
    toward zero, not rounding), saturated; int8 and int16 (any zero points).
    Negative inputs are an error (LiteRT fails the invoke)."""
    _lut_rounding(rounding, "SQRT")
    _per_tensor(x_q, "x_q")
    _per_tensor(out_q, "out_q")
    if not x_q.signed or x_q.bits not in (8, 16):
        raise ValueError(f"SQRT has no kernel for {x_q.storage} input")
    _positive_only(x, x_q, "SQRT")
    xi = np.asarray(x).astype(np.int64)
    d = (scale32(x_q) * (xi - zp(x_q)).astype(np.float32)).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        y = (np.sqrt(d).astype(np.float32) / scale32(out_q)).astype(np.float32)
    t = np.trunc(np.nan_to_num(y.astype(np.float64), nan=0.0, posinf=2.0**31 - 1, neginf=-(2.0**31)))
    out = np.clip(t, -(2.0**31), 2.0**31 - 1) + zp(out_q)
    lo, hi = type_bounds(out_q)
    return np.clip(out, lo, hi).astype(np.int64).astype(out_q.dtype)


def l2_normalization(x, *, x_q: QParams, out_q: QParams, rounding: str = "tflite") -> np.ndarray:
    """Quantized L2_NORMALIZATION over the last axis, int8 (output fixed at 1/128, zp 0); uint8
    (1/128, zp 128) as reference_ops::L2Normalization: `128 + RDBPOT(SRDHM(128 d, M), -s)`.

    TFLite's reference_integer_ops::L2Normalization (both builtin kernels call it; XNNPACK
    does not take it): `d = x - zp_in`, `acc = sum(d * d)` in int32 (wrapping),
    `(M, s) = GetInvSqrtQuantizedMultiplierExp(acc)`, `out = MBQM(d, M, s + 7)`, saturated;
    the input scale is not read (the result is d / |d| whatever the scale)."""
    _lut_rounding(rounding, "L2_NORMALIZATION")
    _per_tensor(x_q, "x_q")
    if x_q.bits != 8:
        raise ValueError(f"L2_NORMALIZATION has quantized kernels for 8-bit input only, got {x_q.storage}")
    d = np.asarray(x).astype(np.int64) - zp(x_q)
    if d.ndim == 0:
        d = d.reshape(1)
    acc = wrap_int32(np.sum(d * d, axis=-1, keepdims=True))
    m, s = _inv_sqrt_multiplier_exp(np.maximum(acc, 0))
    if not x_q.signed:
        # reference_ops::L2Normalization(uint8): MultiplyByQuantizedMultiplierSmallerThanOneExp
        # on 128 * d (the shift, never positive here, applied after the high multiply), + 128
        out = 128 + rounding_divide_by_pot(_srdhm(wrap_int32(128 * d), m), np.maximum(-s, 0))
        return np.clip(out, 0, 255).astype(out_q.dtype).reshape(np.shape(x))
    out = mbqm(d, m, s + 7, rounding)
    return np.clip(out, -128, 127).astype(out_q.dtype).reshape(np.shape(x))
