"""The dot-product batch matmul kernel (tvm_bridge/batch_matmul.py) against LiteRT.

TFLite BATCH_MATMUL models of two int8 activations (zero points on both sides, adj_x /
adj_y, broadcast batch dimensions, K not a multiple of the instruction's group, 8 / 16 /
24 / 48 columns, rows that no register tile divides) compiled with each flavor's kernel
and compared element for element with LiteRT's reference kernels (and its XNNPACK path
under `litert`).  A flavor runs natively where the CPU has its instruction, emulated
elsewhere (`Flavor.emulate`); that the native kernel is the instruction is checked in
its assembly, compiled for a CPU that has it.
"""

from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

from tests.tflite_writer import TensorSpec, build_single_op_model, run_tflite  # noqa: E402
from tests.tvm_bridge.helpers import assembly, lowered_tflite  # noqa: E402
from tests.tvm_bridge.test_vnni import FEATURES, FLAVORS, flavor  # noqa: E402


def _model(lhs, rhs, adj_x, adj_y, lzp, rzp, out_s=0.6):
    m = lhs[-1] if adj_x else lhs[-2]
    n = rhs[-2] if adj_y else rhs[-1]
    out_shape = tuple(np.broadcast_shapes(lhs[:-2], rhs[:-2])) + (m, n)
    return build_single_op_model(
        "BATCH_MATMUL", [TensorSpec(lhs, "int8", 0.05, lzp), TensorSpec(rhs, "int8", 0.03, rzp)],
        [TensorSpec(out_shape, "int8", out_s, 5)], {"adj_x": adj_x, "adj_y": adj_y})


def _run(model: bytes, inputs, rounding: str, f, tmp_path):
    """(ours, LiteRT's, the names of the translated module's batch matmul kernels)."""
    from tvm_bridge.compile import compile_module
    from tvm_bridge.translate import translate

    lowered = lowered_tflite(model, rounding, tmp_path, "bmm.tflite")
    mod, _ = translate(lowered(), dot=f)
    kernels = [gv.name_hint for gv, _ in mod.functions_items() if "batch_matmul" in gv.name_hint]
    (ours,) = compile_module(lowered(), dot=f)(*inputs)
    (theirs,) = run_tflite(model, inputs, reference=rounding == "tflite")
    return ours.reshape(theirs.shape), theirs, kernels


CASES = [
    # (lhs, rhs, adj_x, adj_y, lhs zp, rhs zp)
    ((1, 4, 12, 16), (1, 4, 16, 16), False, False, -3, 0),      # P @ V shape, 16 columns
    ((1, 4, 16, 16), (1, 4, 48, 16), False, True, 11, -7),      # Q @ K^T (rhs read as (n, k)), 48 columns
    ((2, 7, 5), (5, 24), False, False, -128, 127),              # K = 5 (padded), 7 rows, rhs broadcast
    ((3, 1, 9, 6), (1, 2, 9, 8), True, False, 100, 3),          # adj_x (lhs read as (k, m)), both broadcast
    ((2, 32, 3), (2, 8, 32), True, True, 0, -1),                # both adjoint, K = 32
]


@pytest.mark.parametrize("name", FLAVORS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-adj{int(c[2])}{int(c[3])}")
def test_kernel_equals_litert(case, name, tmp_path):
    lhs, rhs, adj_x, adj_y, lzp, rzp = case
    rng = np.random.default_rng(sum(lhs) * 31 + sum(rhs))
    inputs = [rng.integers(-128, 128, lhs).astype(np.int8), rng.integers(-128, 128, rhs).astype(np.int8)]
    ours, theirs, kernels = _run(_model(lhs, rhs, adj_x, adj_y, lzp, rzp), inputs, "tflite", flavor(name), tmp_path)
    assert kernels == [f"{name}_batch_matmul"]
    diff = int(np.count_nonzero(ours != theirs))
    assert diff == 0, f"{diff} of {theirs.size} differ from LiteRT"


@pytest.mark.parametrize("name", FLAVORS)
def test_kernel_under_litert_equals_xnnpack(name, tmp_path):
    """rhs zero point 0: XNNPACK's batch matmul (float requantization) on the kernel's sums."""
    lhs, rhs = (1, 4, 64, 16), (1, 4, 16, 16)
    rng = np.random.default_rng(3)
    inputs = [rng.integers(-128, 128, lhs).astype(np.int8), rng.integers(-128, 128, rhs).astype(np.int8)]
    ours, theirs, kernels = _run(_model(lhs, rhs, False, False, -9, 0, out_s=0.4), inputs, "litert", flavor(name),
                                 tmp_path)
    assert kernels == [f"{name}_batch_matmul"]
    assert int(np.count_nonzero(ours != theirs)) == 0


@pytest.mark.parametrize("name", FLAVORS)
@pytest.mark.parametrize("lval,rval", [(-128, -128), (-128, 127), (127, 127)])
def test_kernel_extremes(lval, rval, name, tmp_path):
    """Every product at its extreme over K = 512, zero points at the other end: sums near
    2^24 and corrections of both signs (int32 sums, requantized to the clamp bounds or
    inside them, as LiteRT does)."""
    lhs, rhs = (1, 8, 512), (1, 512, 16)
    inputs = [np.full(lhs, lval, np.int8), np.full(rhs, rval, np.int8)]
    model = _model(lhs, rhs, False, False, 127 if lval < 0 else -128, 127 if rval < 0 else -128, out_s=2000.0)
    ours, theirs, _ = _run(model, inputs, "tflite", flavor(name), tmp_path)
    assert int(np.count_nonzero(ours != theirs)) == 0
    assert len(np.unique(theirs)) == 1 and -128 < int(theirs.flat[0]) < 127  # a value inside the range


@pytest.mark.parametrize("name", FLAVORS)
def test_native_kernel_is_the_instruction(name, tmp_path):
    """Compiled for a CPU that has it (no need to run it), the native kernel's inner loop is
    the instruction: `vpdpbusd` for VNNI, `vpmaddwd` on ymm or zmm registers."""
    from tvm_bridge import vnni
    from tvm_bridge.compile import as_target
    from tvm_bridge.translate import translate

    f = {"vnni": vnni.VNNI, "pmaddwd": vnni.PMADDWD, "pmaddwd512": vnni.PMADDWD_512}[name]
    lowered = lowered_tflite(_model((1, 4, 32, 64), (1, 4, 64, 32), False, False, -3, 4), "tflite", tmp_path)
    mod, _ = translate(lowered(), dot=f)
    asm = assembly(tvm.compile(mod, target=as_target(f"llvm -mcpu={FEATURES[name][1]}")))
    want = {"vnni": "vpdpbusd\t%zmm", "pmaddwd": "vpmaddwd\t%ymm", "pmaddwd512": "vpmaddwd\t%zmm"}[name]
    assert asm.count(want) >= 2, f"{want!r} not in the {name} kernel's assembly"


def test_pmaddwd_only_where_no_sum_can_leave_int32():
    """vpmaddwd's accumulation is an `nsw` add: K 2^14 must stay within 2^30 (VNNI wraps)."""
    from tvm_bridge import batch_matmul, vnni

    assert batch_matmul.applicable({"K": 1 << 16}, vnni.PMADDWD)
    assert not batch_matmul.applicable({"K": (1 << 16) + 1}, vnni.PMADDWD)
    assert batch_matmul.applicable({"K": 1 << 20}, vnni.VNNI)


def test_columns_not_a_multiple_of_8_take_the_generic_path(tmp_path):
    lhs, rhs = (1, 4, 16), (1, 16, 6)
    rng = np.random.default_rng(1)
    inputs = [rng.integers(-128, 128, lhs).astype(np.int8), rng.integers(-128, 128, rhs).astype(np.int8)]
    ours, theirs, kernels = _run(_model(lhs, rhs, False, False, 2, 1), inputs, "tflite", flavor("vnni"), tmp_path)
    assert kernels == []
    assert int(np.count_nonzero(ours != theirs)) == 0


@pytest.mark.parametrize("rounding", ["tflite", "litert"])
def test_requantization_runs_inside_the_kernel(rounding, tmp_path):
    """A [1, H, M, N] product and its requantization are one kernel writing int8 (the chain
    after it fused, tvm_bridge/epilogue.py); the values are LiteRT's."""
    from tvm_bridge.translate import translate

    lhs, rhs = (1, 4, 12, 16), (1, 4, 16, 16)
    model = _model(lhs, rhs, False, False, -3, 0)
    mod, _ = translate(lowered_tflite(model, rounding, tmp_path)(), dot=flavor("vnni"))
    kernels = [gv.name_hint for gv, f in mod.functions_items() if isinstance(f, tvm.tirx.PrimFunc)]
    assert kernels == ["vnni_batch_matmul"]
    rng = np.random.default_rng(12)
    inputs = [rng.integers(-128, 128, lhs).astype(np.int8), rng.integers(-128, 128, rhs).astype(np.int8)]
    ours, theirs, _ = _run(model, inputs, rounding, flavor("vnni"), tmp_path)
    assert ours.dtype == np.int8 and int(np.count_nonzero(ours != theirs)) == 0
