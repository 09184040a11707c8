"""Differential tests: the transformer-encoder kernels of qdialect.reference vs LiteRT.

GELU, EXP, RSQRT, SQRT, ABS (activations / elementwise) and L2_NORMALIZATION, called
directly on every stored input (int8: 256, int16: 65536) at scales and zero points
drawn by hypothesis; the expected integers are LiteRT's (BUILTIN_REF for "tflite",
the default interpreter for "litert"), zero differing elements.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qdialect.qparams import QParams
from qdialect.reference import activations as act
from qdialect.reference import elementwise as ew
from tests.tflite_writer import TensorSpec, build_single_op_model, run_tflite

pytestmark = pytest.mark.filterwarnings("ignore:numElems is deprecated:DeprecationWarning")

FEW = settings(max_examples=25, deadline=None)
STORAGE = {"int8": "i8", "int16": "i16"}


def f32(x: float) -> float:
    return float(np.float32(x))


def qp(scale: float, zero_point: int, dtype: str) -> QParams:
    return QParams.make(scale, zero_point, storage=STORAGE[dtype])


def every_value(dtype: str, lowest: int | None = None) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.arange(int(info.min) if lowest is None else lowest, int(info.max) + 1).astype(dtype)


KERNELS = {
    "GELU": lambda x, **kw: act.gelu(x, approximate=False, **kw),
    "GELU_APPROX": lambda x, **kw: act.gelu(x, approximate=True, **kw),
    "EXP": act.exp,
    "RSQRT": act.rsqrt,
    "SQRT": act.sqrt,
    "ABS": ew.absolute,
}


def params(dtype: str):
    """(input scale, input zp, output scale, output zp); int16 kernels need zero points 0."""
    lo, hi = (-5.0, 0.5) if dtype == "int8" else (-7.0, -1.5)
    scale = st.floats(lo, hi).map(lambda e: f32(10.0**e))
    zp = st.integers(-128, 127) if dtype == "int8" else st.just(0)
    return st.tuples(scale, zp, scale, zp)


def check(op: str, dtype: str, s_in, z_in, s_out, z_out):
    xs = every_value(dtype, z_in if op in ("RSQRT", "SQRT") else None)
    tflite_op = "GELU" if op.startswith("GELU") else op
    options = {"approximate": op == "GELU_APPROX"} if tflite_op == "GELU" else None
    model = build_single_op_model(tflite_op, [TensorSpec((xs.size,), dtype, s_in, z_in)],
                                  [TensorSpec((xs.size,), dtype, s_out, z_out)], options)
    for profile, reference in (("tflite", True), ("litert", False)):
        (expected,) = run_tflite(model, [xs], reference=reference)
        got = KERNELS[op](xs, x_q=qp(s_in, z_in, dtype), out_q=qp(s_out, z_out, dtype), rounding=profile)
        bad = int(np.count_nonzero(got.astype(np.int64) != expected.astype(np.int64)))
        assert bad == 0, f"{op} {dtype} {profile}: {bad} of {xs.size} differ at {(s_in, z_in, s_out, z_out)}"


@pytest.mark.parametrize("op", list(KERNELS))
@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_unary_kernel_on_every_input(op, dtype):
    @FEW
    @given(params(dtype))
    def run(p):
        check(op, dtype, *p)

    run()


@FEW
@given(st.integers(-128, 127), st.integers(1, 300), st.integers(0, 2**32 - 1))
def test_l2_normalization_int8(z_in, depth, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (3, depth)).astype(np.int8)
    x[0] = z_in  # a zero row
    model = build_single_op_model("L2_NORMALIZATION", [TensorSpec(x.shape, "int8", 0.05, z_in)],
                                  [TensorSpec(x.shape, "int8", 1 / 128, 0)])
    for profile, reference in (("tflite", True), ("litert", False)):
        (expected,) = run_tflite(model, [x], reference=reference)
        got = act.l2_normalization(x, x_q=qp(0.05, z_in, "int8"), out_q=qp(1 / 128, 0, "int8"), rounding=profile)
        np.testing.assert_array_equal(got, expected)


def test_rsqrt_table_is_the_kernel_on_every_int8_input():
    """`rsqrt_table_int8` is what a lowering materialises: it must be the kernel itself."""
    for s_in, z_in, s_out, z_out in [(0.02, -3, 0.1, 5), (1.7, -100, 0.9, 3), (0.0031, 7, 0.0007, -20)]:
        xs = every_value("int8", z_in)
        model = build_single_op_model("RSQRT", [TensorSpec((xs.size,), "int8", s_in, z_in)],
                                      [TensorSpec((xs.size,), "int8", s_out, z_out)])
        (expected,) = run_tflite(model, [xs])
        table = act.rsqrt_table_int8(qp(s_in, z_in, "int8"), qp(s_out, z_out, "int8"))
        np.testing.assert_array_equal(act.apply_table(xs, table, qp(s_in, z_in, "int8")), expected)


@pytest.mark.parametrize("kind,op", [("gelu", "GELU"), ("exp", "EXP"), ("rsqrt", "RSQRT")])
@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_transformer_table_is_the_kernel(kind, op, dtype):
    """The tables a lowering materialises (`transformer_table`), looked up as the kernels do."""
    z_in, z_out = (-5, 3) if dtype == "int8" else (0, 0)
    s_in, s_out = (0.04, 0.03) if dtype == "int8" else (2e-4, 1e-4)
    xs = every_value(dtype, z_in if op == "RSQRT" else None)
    model = build_single_op_model(op, [TensorSpec((xs.size,), dtype, s_in, z_in)],
                                  [TensorSpec((xs.size,), dtype, s_out, z_out)])
    (expected,) = run_tflite(model, [xs])
    x_q, out_q = qp(s_in, z_in, dtype), qp(s_out, z_out, dtype)
    table = act.transformer_table(kind, x_q, out_q)
    got = act.apply_table(xs, table, x_q) if dtype == "int8" else act.int16_lut_lookup(xs, table)
    np.testing.assert_array_equal(np.asarray(got).astype(np.int64), expected.astype(np.int64))
