"""Differential tests: qdialect.reference.elementwise vs LiteRT.

"tflite" must match LiteRT's reference kernels (BUILTIN_REF) exactly;
"litert" must match LiteRT's default interpreter (XNNPACK where it takes the
op, TFLite's optimized kernels elsewhere) exactly.  Expected values always
come from LiteRT.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qdialect.qparams import QParams
from qdialect.reference import elementwise as ew
from tests.tflite_writer import (
    TensorSpec,
    build_single_op_model,
    delegate_partitions,
    run_tflite,
)

# tests/tflite_writer.py triggers flatbuffers' "numElems is deprecated" warning
pytestmark = pytest.mark.filterwarnings("ignore:numElems is deprecated:DeprecationWarning")

SETTINGS = settings(max_examples=40, deadline=None)
FEW = settings(max_examples=25, deadline=None)

STORAGE = {"int8": "i8", "uint8": "u8", "int16": "i16"}
PROFILES = [("tflite", True), ("litert", False)]


# ---------------------------------------------------------------------------
# strategies / helpers
# ---------------------------------------------------------------------------


def f32(x: float) -> float:
    return float(np.float32(x))


def scales(lo_exp: float, hi_exp: float):
    return st.floats(lo_exp, hi_exp).map(lambda e: f32(10.0**e))


def zero_points(dtype: str):
    if dtype == "int16":
        return st.just(0)
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    return st.integers(lo, hi)


@st.composite
def broadcast_shapes(draw, max_dims: int = 4, max_side: int = 6):
    """Two shapes that broadcast against each other (TFLite's right-aligned
    rules), of rank up to `max_dims`."""
    nd = draw(st.integers(1, max_dims))
    base = draw(st.lists(st.integers(1, max_side), min_size=nd, max_size=nd))

    def variant():
        keep = draw(st.integers(1, nd))
        dims = base[nd - keep:]
        return tuple(1 if draw(st.booleans()) else d for d in dims)

    a = tuple(base) if draw(st.booleans()) else variant()
    b = variant()
    if draw(st.booleans()):
        a, b = b, a
    return a, b


def rand_ints(rng, dtype: str, shape) -> np.ndarray:
    info = np.iinfo(dtype)
    x = rng.integers(int(info.min), int(info.max) + 1, size=shape).astype(dtype)
    flat = x.reshape(-1)
    if flat.size >= 2:
        flat[0], flat[-1] = info.min, info.max
    return x


def qp(scale: float, zero_point: int, dtype: str) -> QParams:
    return QParams.make(scale, zero_point, storage=STORAGE[dtype])


def assert_exact(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert got.dtype == expected.dtype, (what, got.dtype, expected.dtype)
    assert got.shape == expected.shape, (what, got.shape, expected.shape)
    bad = got != expected
    if bad.any():
        idx = np.argwhere(bad)[:5].tolist()
        raise AssertionError(
            f"{what}: {int(bad.sum())}/{bad.size} elements differ at {idx}: "
            f"got {got[bad][:5].tolist()} expected {expected[bad][:5].tolist()}"
        )


ACTIVATIONS = st.sampled_from(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"])


# ---------------------------------------------------------------------------
# add / sub / mul, 8-bit
# ---------------------------------------------------------------------------


@st.composite
def add_sub_case(draw, dtype: str):
    shapes = draw(broadcast_shapes())
    s1 = draw(scales(-3, 0))
    s2 = f32(s1 * 2.0 ** draw(st.floats(-5, 5)))
    so = f32(max(s1, s2) * 2.0 ** draw(st.floats(-10, 12)))
    zs = [draw(zero_points(dtype)) for _ in range(3)]
    act = draw(ACTIVATIONS)
    seed = draw(st.integers(0, 2**32 - 1))
    return shapes, (s1, s2, so), zs, act, seed


def _run_binary(op, fn, dtype, case, profile, reference, options=None, **kw):
    (sh1, sh2), (s1, s2, so), (z1, z2, zo), act, seed = case
    rng = np.random.default_rng(seed)
    x1, x2 = rand_ints(rng, dtype, sh1), rand_ints(rng, dtype, sh2)
    out_shape = np.broadcast_shapes(sh1, sh2)
    opts = {"fused_activation_function": act}
    opts.update(options or {})
    model = build_single_op_model(
        op,
        [TensorSpec(sh1, dtype, s1, z1), TensorSpec(sh2, dtype, s2, z2)],
        [TensorSpec(out_shape, dtype, so, zo)],
        opts,
    )
    q1, q2, qo = qp(s1, z1, dtype), qp(s2, z2, dtype), qp(so, zo, dtype)
    lo, hi = ew.fused_activation_range(act, qo, profile)
    (expected,) = run_tflite(model, [x1, x2], reference=reference)
    got = fn(x1, x2, x1_q=q1, x2_q=q2, out_q=qo, act_min=lo, act_max=hi,
             rounding=profile, **kw)
    assert_exact(got, expected, f"{op} {dtype} {profile} {case}")
    return model, (q1, q2, qo)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("op", ["ADD", "SUB"])
@SETTINGS
@given(data=st.data())
def test_add_sub_8bit_tflite(op, dtype, data):
    case = data.draw(add_sub_case(dtype))
    fn = ew.add if op == "ADD" else ew.sub
    _run_binary(op, fn, dtype, case, "tflite", True)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("op", ["ADD", "SUB"])
@SETTINGS
@given(data=st.data())
def test_add_sub_8bit_litert(op, dtype, data):
    case = data.draw(add_sub_case(dtype))
    _, (s1, s2, so), (z1, z2, zo), _, _ = case
    takes = ew._xnnpack_add_takes(qp(s1, z1, dtype), qp(s2, z2, dtype), qp(so, zo, dtype))
    fn = ew.add if op == "ADD" else ew.sub
    model, _ = _run_binary(op, fn, dtype, case, "litert", False)
    assert delegate_partitions(model) == (1 if takes else 0)


@st.composite
def mul_case(draw, dtype: str):
    shapes = draw(broadcast_shapes())
    s1, s2 = draw(scales(-3, 0)), draw(scales(-3, 0))
    so = f32(s1 * s2 * 2.0 ** draw(st.floats(-7, 15)))
    zs = [draw(zero_points(dtype)) for _ in range(3)]
    return shapes, (s1, s2, so), zs, draw(ACTIVATIONS), draw(st.integers(0, 2**32 - 1))


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("profile,reference", PROFILES)
@SETTINGS
@given(data=st.data())
def test_mul_8bit(dtype, profile, reference, data):
    case = data.draw(mul_case(dtype))
    model, qs = _run_binary("MUL", ew.mul, dtype, case, profile, reference)
    if profile == "litert":
        assert delegate_partitions(model) == (1 if ew._xnnpack_mul_takes(*qs) else 0)


@st.composite
def declined_case(draw, op: str, dtype: str):
    """8-bit ADD/SUB/MUL whose scale ratio XNNPACK declines (LiteRT then runs
    TFLite's optimized kernels), on shapes long enough for their vector blocks:
    equal shapes, five-fold broadcasts (elementwise and scalar-broadcast inner
    loops) and generic ones."""
    shapes = draw(broadcast_shapes(max_dims=3, max_side=24))
    s1 = draw(scales(-3, 0))
    if op == "MUL":
        s2 = draw(scales(-3, 0))
        e = draw(st.one_of(st.floats(-15, -8.5), st.floats(16.5, 20)))
        so = f32(s1 * s2 * 2.0**e)
    else:
        s2 = f32(s1 * 2.0 ** draw(st.floats(-5, 5)))
        e = draw(st.one_of(st.floats(-12, -8.5), st.floats(10.5, 14)))
        so = f32(max(s1, s2) * 2.0**e)
    zs = [draw(zero_points(dtype)) for _ in range(3)]
    act = draw(ACTIVATIONS)
    if act in ("RELU6", "RELU_N1_TO_1") and 6.0 / so > 2.0**30:
        act = "RELU"  # TFLite refuses bounds that overflow int32 when quantized
    return shapes, (s1, s2, so), zs, act, draw(st.integers(0, 2**32 - 1))


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
@FEW
@given(data=st.data())
def test_binary_8bit_litert_declined_by_xnnpack(op, dtype, data):
    """"litert" where XNNPACK declines the scales: TFLite's optimized kernels
    (NEON code through NEON_2_SSE for ADD/MUL; SUB is the reference kernel)."""
    case = data.draw(declined_case(op, dtype))
    _, (s1, s2, so), (z1, z2, zo), _, _ = case
    qs = (qp(s1, z1, dtype), qp(s2, z2, dtype), qp(so, zo, dtype))
    takes = ew._xnnpack_mul_takes(*qs) if op == "MUL" else ew._xnnpack_add_takes(*qs)
    assert not takes
    fn = {"ADD": ew.add, "SUB": ew.sub, "MUL": ew.mul}[op]
    model, _ = _run_binary(op, fn, dtype, case, "litert", False)
    assert delegate_partitions(model) == 0


@pytest.mark.parametrize(
    "shape1,shape2,expected",
    [
        ((40,), (40,), [1] * 32 + [0] * 8),            # one elementwise call, 16 lanes
        ((2, 20), (20,), ([1] * 16 + [0] * 4) * 2),    # five-fold, y4 = 20
        ((3, 1), (3, 10), ([2] * 8 + [0] * 2) * 3),    # five-fold, y4 = 1, y3 = 10
        ((3, 1, 20), (1, 2, 20), ([1] * 16 + [0] * 4) * 6),  # five-fold, y1 = 3
        ((2, 1, 3, 1), (1, 2, 1, 3), [0] * 36),        # no five-fold pattern: generic
    ],
)
def test_fivefold_lanes_hand_cases(shape1, shape2, expected):
    got = ew.fivefold_lanes(shape1, shape2, 16, 8)
    assert got.reshape(-1).tolist() == expected


# ---------------------------------------------------------------------------
# add / sub / mul, int16
# ---------------------------------------------------------------------------


@st.composite
def int16_case(draw, op: str):
    shapes = draw(broadcast_shapes(max_side=9))
    if op == "MUL":
        s1, s2 = draw(scales(-4.5, -2)), draw(scales(-4.5, -2))
        # keep 6 / s_out inside int32 (TFLite's RELU6 bound computation)
        so = f32(s1 * s2 * 2.0 ** draw(st.floats(4, 16)))
    else:
        s1, s2, so = (draw(scales(-4.5, -2)) for _ in range(3))
    act = draw(st.sampled_from(["NONE", "RELU", "RELU6"]))
    return shapes, (s1, s2, so), (0, 0, 0), act, draw(st.integers(0, 2**32 - 1))


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
@pytest.mark.parametrize("profile,reference", PROFILES)
@SETTINGS
@given(data=st.data())
def test_binary_int16_general(op, profile, reference, data):
    case = data.draw(int16_case(op))
    fn = {"ADD": ew.add, "SUB": ew.sub, "MUL": ew.mul}[op]
    options = {} if op == "MUL" else {"pot_scale_int16": False}
    _run_binary(op, fn, "int16", case, profile, reference, options)


@st.composite
def int16_pot_case(draw, broadcast: bool):
    shapes = draw(broadcast_shapes(max_side=9))
    if not broadcast:  # TFLite's power-of-two int16 ADD does not broadcast
        shapes = (shapes[0], shapes[0])
    e = draw(st.integers(-14, -6))
    finer = 2.0 ** (e - draw(st.integers(0, 4)))
    s1, s2 = (2.0**e, finer) if draw(st.booleans()) else (finer, 2.0**e)
    act = draw(st.sampled_from(["NONE", "RELU", "RELU6"]))
    return shapes, (s1, s2, 2.0**e), (0, 0, 0), act, draw(st.integers(0, 2**32 - 1))


@pytest.mark.parametrize("op", ["ADD", "SUB"])
@pytest.mark.parametrize("profile,reference", PROFILES)
@FEW
@given(data=st.data())
def test_add_sub_int16_pot(op, profile, reference, data):
    case = data.draw(int16_pot_case(broadcast=op == "SUB"))
    fn = ew.add if op == "ADD" else ew.sub
    _run_binary(op, fn, "int16", case, profile, reference, {"pot_scale_int16": True},
                pot_scale_int16=True)


# ---------------------------------------------------------------------------
# maximum / minimum / squared_difference
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["MAXIMUM", "MINIMUM"])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16"])
@pytest.mark.parametrize("profile,reference", PROFILES)
@FEW
@given(shapes=broadcast_shapes(), s=scales(-3, 0), data=st.data(),
       seed=st.integers(0, 2**32 - 1))
def test_maximum_minimum(op, dtype, profile, reference, shapes, s, data, seed):
    z = data.draw(zero_points(dtype))
    sh1, sh2 = shapes
    rng = np.random.default_rng(seed)
    x1, x2 = rand_ints(rng, dtype, sh1), rand_ints(rng, dtype, sh2)
    model = build_single_op_model(
        op, [TensorSpec(sh1, dtype, s, z), TensorSpec(sh2, dtype, s, z)],
        [TensorSpec(np.broadcast_shapes(sh1, sh2), dtype, s, z)])
    q = qp(s, z, dtype)
    (expected,) = run_tflite(model, [x1, x2], reference=reference)
    fn = ew.maximum if op == "MAXIMUM" else ew.minimum
    assert_exact(fn(x1, x2, x1_q=q, x2_q=q, out_q=q, rounding=profile), expected, op)


@pytest.mark.parametrize("profile,reference", PROFILES)
@SETTINGS
@given(shapes=broadcast_shapes(), s1=scales(-3, 0), s2=scales(-3, 0),
       out_exp=st.floats(0.5, 3.5), z=st.tuples(*[zero_points("int8")] * 3),
       seed=st.integers(0, 2**32 - 1))
def test_squared_difference_int8(profile, reference, shapes, s1, s2, out_exp, z, seed):
    so = f32(max(s1, s2) ** 2 * 10.0**out_exp)
    sh1, sh2 = shapes
    rng = np.random.default_rng(seed)
    x1, x2 = rand_ints(rng, "int8", sh1), rand_ints(rng, "int8", sh2)
    model = build_single_op_model(
        "SQUARED_DIFFERENCE",
        [TensorSpec(sh1, "int8", s1, z[0]), TensorSpec(sh2, "int8", s2, z[1])],
        [TensorSpec(np.broadcast_shapes(sh1, sh2), "int8", so, z[2])])
    (expected,) = run_tflite(model, [x1, x2], reference=reference)
    got = ew.squared_difference(x1, x2, x1_q=qp(s1, z[0], "int8"), x2_q=qp(s2, z[1], "int8"),
                                out_q=qp(so, z[2], "int8"), rounding=profile)
    assert_exact(got, expected, "SQUARED_DIFFERENCE")


# ---------------------------------------------------------------------------
# requantize / quantize / dequantize
# ---------------------------------------------------------------------------

REQUANT_PAIRS = [
    ("int8", "int8"), ("int8", "uint8"), ("uint8", "int8"), ("uint8", "uint8"),
    ("int8", "int16"), ("int16", "int8"), ("int16", "int16"),
]


@pytest.mark.parametrize("src,dst", REQUANT_PAIRS)
@pytest.mark.parametrize("profile,reference", PROFILES)
@FEW
@given(data=st.data(), n=st.integers(1, 70), s_in=scales(-3, 0),
       ratio_exp=st.floats(-10, 9), seed=st.integers(0, 2**32 - 1))
def test_requantize(src, dst, profile, reference, data, n, s_in, ratio_exp, seed):
    s_out = f32(s_in / 2.0**ratio_exp)
    z_in, z_out = data.draw(zero_points(src)), data.draw(zero_points(dst))
    x = rand_ints(np.random.default_rng(seed), src, (n,))
    model = build_single_op_model("QUANTIZE", [TensorSpec((n,), src, s_in, z_in)],
                                  [TensorSpec((n,), dst, s_out, z_out)])
    (expected,) = run_tflite(model, [x], reference=reference)
    got = ew.requantize(x, x_q=qp(s_in, z_in, src), out_q=qp(s_out, z_out, dst), rounding=profile)
    assert_exact(got, expected, f"QUANTIZE {src}->{dst}")


@pytest.mark.parametrize("dst", ["int8", "uint8", "int16"])
@pytest.mark.parametrize("profile,reference", PROFILES)
@SETTINGS
@given(data=st.data(), shape=st.lists(st.integers(1, 9), min_size=1, max_size=3),
       s=scales(-4, 0), seed=st.integers(0, 2**32 - 1))
def test_quantize_float(dst, profile, reference, data, shape, s, seed):
    z = data.draw(zero_points(dst))
    rng = np.random.default_rng(seed)
    span = {"int16": 40000.0, "int8": 300.0, "uint8": 300.0}[dst]
    x = (rng.uniform(-span, span, shape) * s).astype(np.float32)
    flat = x.reshape(-1)
    k = rng.integers(-200, 200, flat.size)
    ties = rng.random(flat.size) < 0.4
    flat[ties] = ((k[ties] + 0.5) * np.float32(s)).astype(np.float32)  # exact halves
    model = build_single_op_model("QUANTIZE", [TensorSpec(tuple(shape), "float32")],
                                  [TensorSpec(tuple(shape), dst, s, z)])
    (expected,) = run_tflite(model, [x], reference=reference)
    got = ew.quantize(x, out_q=qp(s, z, dst), rounding=profile)
    assert_exact(got, expected, f"QUANTIZE float->{dst}")


@pytest.mark.parametrize("src", ["int8", "uint8", "int16"])
@pytest.mark.parametrize("profile,reference", PROFILES)
@FEW
@given(data=st.data(), shape=st.lists(st.integers(1, 9), min_size=1, max_size=3),
       s=scales(-4, 1), seed=st.integers(0, 2**32 - 1))
def test_dequantize(src, profile, reference, data, shape, s, seed):
    z = data.draw(zero_points(src))
    x = rand_ints(np.random.default_rng(seed), src, tuple(shape))
    model = build_single_op_model("DEQUANTIZE", [TensorSpec(tuple(shape), src, s, z)],
                                  [TensorSpec(tuple(shape), "float32")])
    (expected,) = run_tflite(model, [x], reference=reference)
    got = ew.dequantize(x, x_q=qp(s, z, src), rounding=profile)
    assert_exact(got.view(np.int32), expected.view(np.int32), f"DEQUANTIZE {src}")


def test_quantize_per_axis_matches_per_channel_kernel():
    s = [0.1, 0.02, 0.5]
    zs = [0, 3, -7]
    x = (np.random.default_rng(0).standard_normal((4, 3)) * 5).astype(np.float32)
    x[0] = [0.05, 0.03, 0.25]  # ties
    model = build_single_op_model(
        "QUANTIZE", [TensorSpec((4, 3), "float32")],
        [TensorSpec((4, 3), "int8", s, zs, quantized_dimension=1)])
    (expected,) = run_tflite(model, [x], reference=True)
    got = ew.quantize(x, out_q=QParams.make(s, zs, axis=1))
    assert_exact(got, expected, "per-channel QUANTIZE")


# ---------------------------------------------------------------------------
# relu family
# ---------------------------------------------------------------------------

RELU_FNS = {
    "RELU": ew.relu,
    "RELU6": ew.relu6,
    "RELU_N1_TO_1": ew.relu_n1_to_1,
    "RELU_0_TO_1": ew.relu_0_to_1,
}


# LiteRT has kernels for these pairs only: no int16 RELU_N1_TO_1 / RELU_0_TO_1 in TFLite,
# no uint8 RELU_0_TO_1 in LiteRT 2.3 (nothing to compare with, so not generated)
RELU_CASES = [(op, dtype) for op in RELU_FNS for dtype in ("int8", "uint8", "int16")
              if not (dtype == "int16" and op in ("RELU_N1_TO_1", "RELU_0_TO_1"))
              and not (dtype == "uint8" and op == "RELU_0_TO_1")]


@pytest.mark.parametrize("op,dtype", RELU_CASES)
@pytest.mark.parametrize("profile,reference", PROFILES)
@FEW
@given(data=st.data(), shape=st.lists(st.integers(1, 8), min_size=1, max_size=4),
       s_in=scales(-2.5, -0.5), same=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_relu_family(op, dtype, profile, reference, data, shape, s_in, same, seed):
    if dtype == "int16":
        s_in = f32(s_in / 256)
    z_in = data.draw(zero_points(dtype))
    if same:
        s_out, z_out = s_in, z_in
    else:
        s_out = f32(s_in * 2.0 ** data.draw(st.floats(-3, 3)))
        z_out = data.draw(zero_points(dtype))
    shape = tuple(shape)
    x = rand_ints(np.random.default_rng(seed), dtype, shape)
    model = build_single_op_model(op, [TensorSpec(shape, dtype, s_in, z_in)],
                                  [TensorSpec(shape, dtype, s_out, z_out)])
    (expected,) = run_tflite(model, [x], reference=reference)
    got = RELU_FNS[op](x, x_q=qp(s_in, z_in, dtype), out_q=qp(s_out, z_out, dtype),
                       rounding=profile)
    assert_exact(got, expected, op)


def test_int16_pot_add_refuses_broadcast():
    q = QParams.make(2.0**-10, 0, storage="i16")
    with pytest.raises(ValueError, match="broadcast"):
        ew.add(np.zeros((2, 3), np.int16), np.zeros((3,), np.int16), x1_q=q, x2_q=q,
               out_q=q, pot_scale_int16=True)


def test_clamp_with_equal_params_is_pure_clamp():
    q = QParams.make(0.05, -3)
    x = np.arange(-128, 128, dtype=np.int8)
    got = ew.clamp(x, x_q=q, out_q=q, act_min=-10, act_max=20)
    np.testing.assert_array_equal(got, np.clip(x, -10, 20).astype(np.int8))


def test_fused_activation_range_matches_writer_helper():
    from tests.tflite_writer import activation_bounds

    for s, z in [(0.05, -3), (0.1, 10), (0.5, -128), (0.047, 127)]:
        q = QParams.make(s, z)
        for act in ["NONE", "RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1"]:
            assert ew.fused_activation_range(act, q) == activation_bounds(act, s, z)


def test_rejects_unknown_rounding():
    q = QParams.make(0.1, 0)
    with pytest.raises(ValueError, match="rounding"):
        ew.add(np.zeros(2, np.int8), np.zeros(2, np.int8), x1_q=q, x2_q=q, out_q=q,
               rounding="banker")


@pytest.mark.parametrize("profile", ["single", "half_up", "half_even"])
@settings(max_examples=30, deadline=None)
@given(s=st.tuples(scales(-2.5, -0.5), scales(-2.5, -0.5), scales(-2.5, -0.5)),
       z=st.tuples(*[zero_points("int8")] * 3), seed=st.integers(0, 2**32 - 1))
def test_other_profiles_within_one_lsb(profile, s, z, seed):
    q1, q2, qo = (qp(si, zi, "int8") for si, zi in zip(s, z))
    qm = qp(f32(s[0] * s[1] * 20), z[2], "int8")
    qs = qp(f32(max(s[0], s[1]) ** 2 * 100), z[2], "int8")
    rng = np.random.default_rng(seed)
    x1, x2 = rand_ints(rng, "int8", (4, 32)), rand_ints(rng, "int8", (32,))
    xf = (rng.standard_normal(64) * s[2] * 60).astype(np.float32)
    kw = dict(x1_q=q1, x2_q=q2)
    cases = {
        "add": lambda p: ew.add(x1, x2, out_q=qo, rounding=p, **kw),
        "sub": lambda p: ew.sub(x1, x2, out_q=qo, rounding=p, **kw),
        "mul": lambda p: ew.mul(x1, x2, out_q=qm, rounding=p, **kw),
        "squared_difference": lambda p: ew.squared_difference(x1, x2, out_q=qs, rounding=p, **kw),
        "requantize": lambda p: ew.requantize(x1, x_q=q1, out_q=qo, rounding=p),
        "quantize": lambda p: ew.quantize(xf, out_q=qo, rounding=p),
        "relu6": lambda p: ew.relu6(x1, x_q=q1, out_q=qo, rounding=p),
    }
    for name, fn in cases.items():
        ref = fn("tflite").astype(int)
        other = fn(profile).astype(int)
        assert np.max(np.abs(other - ref)) <= 1, (name, profile)


@pytest.mark.parametrize("op", ["ADD", "MUL"])
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("shapes", [((3, 40), (3, 40)), ((2, 3, 20), (3, 20)), ((4, 1), (4, 24))])
def test_declined_add_mul_imported_and_interpreted(op, dtype, shapes):
    """The same fallback end to end: a .tflite model imported to qnn and run by
    the interpreter with rounding "litert" (operands keep their own shapes, so
    the kernel choice per output element is the same) against LiteRT's default
    interpreter."""
    from qdialect.importer.tflite import import_tflite
    from qdialect.interpreter import run_module

    z = (-5, 17, 3) if dtype == "int8" else (120, 140, 131)
    # output scale 2^-10 of the inputs': XNNPACK declines (ratio >= 256), sums wrap in int16
    s1, s2 = 0.05, 0.07
    so = f32((s1 * s2 if op == "MUL" else s1) / 1000.0)
    sh1, sh2 = shapes
    model = build_single_op_model(
        op, [TensorSpec(sh1, dtype, s1, z[0]), TensorSpec(sh2, dtype, s2, z[1])],
        [TensorSpec(np.broadcast_shapes(sh1, sh2), dtype, so, z[2])], {"fused_activation_function": "NONE"})
    assert delegate_partitions(model) == 0
    rng = np.random.default_rng(7)
    x1, x2 = rand_ints(rng, dtype, sh1), rand_ints(rng, dtype, sh2)
    (expected,) = run_tflite(model, [x1, x2], reference=False)
    (got,) = run_module(import_tflite(model), [x1, x2], rounding="litert")
    assert_exact(np.asarray(got), expected, f"{op} {dtype} {shapes} imported, litert")
    (reference_kernel,) = run_tflite(model, [x1, x2], reference=True)
    assert np.any(reference_kernel != expected)  # the fallback is not the reference kernel here
