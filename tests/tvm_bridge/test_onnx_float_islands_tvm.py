"""ONNX float islands through TVM, bit-exact with ONNX Runtime (transforms/float_islands.py):
nn ops marked `qnn.rounding = "onnx"` (float ops whose results are not quantized: HardSwish /
HardSigmoid as nn.mul / add / clip, Tanh, data movement, max pooling) and the `onnx` profile's
binary ops on 16-bit activations; plus MLAS's tanh / logistic approximations on many float32
values against `onnxruntime_kernels.mlas_tanh` / `mlas_logistic`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qdialect.importer.onnx import import_onnx_file
from qdialect.interpreter import Interpreter
from qdialect.reference import onnxruntime_kernels as ort
from tests.onnx_helpers import differing, inputs_for, model, ort_run
from transforms.pipelines import lower_to_l3
from tvm_bridge.compile import compile_module

SAMPLES = 4

# zoo models with float islands: HardSwish as nn.mul / add / clip and a float max pool
# (torch_cnn), Tanh with transpose / reshape / concatenation / slice islands and a float
# ReduceMean island (elementwise; nn.mean is transforms/float_reductions.py's)
# (the s8 torch_cnn and QOperator s8 builds take minutes and repeat their u8 twins' islands: they
# run with `pytest -m slow`)
MODELS = ["torch_cnn_qdq_u8", pytest.param("torch_cnn_qdq_s8", marks=pytest.mark.slow), "elementwise_qdq_u8",
          "elementwise_qdq_s8", "elementwise_qop_u8", pytest.param("elementwise_qop_s8", marks=pytest.mark.slow)]
# 16-bit QDQ models (nothing fuses: qnn add / sub / mul in float, both profiles alike; a build of
# minutes, so `pytest -m slow`)
SIXTEEN_BIT = [pytest.param("elementwise_qdq_s16", marks=pytest.mark.slow)]


def _tvm_vs_ort(path: Path) -> list[int]:
    module = import_onnx_file(path, profile="onnxruntime")
    samples = [inputs_for(module, seed) for seed in range(SAMPLES)]
    out_dtypes = [Interpreter._dtype(v) for v in Interpreter(module).entry().get_return_op().operands]
    lower_to_l3(module)
    compiled = compile_module(module)
    total = None
    for inputs in samples:
        ours = [o.view(d) if o.dtype != d and o.dtype.itemsize == d.itemsize else o
                for o, d in zip(compiled(*inputs), out_dtypes)]
        d = differing(ours, ort_run(path, inputs))
        total = d if total is None else [a + b for a, b in zip(total, d)]
    return total


@pytest.mark.slow  # ~25 s each (three models)
@pytest.mark.parametrize("name", MODELS)
def test_float_islands_match_onnxruntime(name):
    counts = _tvm_vs_ort(model(name))
    assert sum(counts) == 0, f"differing elements per output: {counts}"


@pytest.mark.parametrize("name", SIXTEEN_BIT)
def test_16_bit_binary_ops_match_onnxruntime(name):
    counts = _tvm_vs_ort(model(name))
    assert sum(counts) == 0, f"differing elements per output: {counts}"


# ----- MLAS's tanh / logistic on many float32 values ---------------------------------------------


def _unary(op: str, n: int):
    from qdialect.diagnostics import parse_module
    from transforms.opt import QdOptMain

    text = f"""builtin.module {{
  func.func @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
    %y = {op} %x {{qnn.rounding = "onnx"}} : (tensor<{n}xf32>) -> tensor<{n}xf32>
    func.return %y : tensor<{n}xf32>
  }}
}}"""
    module = parse_module(QdOptMain(args=[]).ctx, text)
    lower_to_l3(module)
    assert not any(o.dialect_name() == "nn" for o in module.walk())
    return compile_module(module)


def _grid(limit: float, step: int) -> np.ndarray:
    """float32 values: every `step`-th bit pattern of [0, limit] with both signs, the clamp
    limits and their neighbours, zeros, subnormals, huge values and infinities."""
    top = int(np.float32(limit).view(np.int32))
    pos = np.arange(0, top + 1, step, dtype=np.int64).astype(np.int32).view(np.float32)
    special = []
    for c in (9.0, 18.0, 1.0, 0.5, 1e-20, 1e-30, 3e38):
        c = np.float32(c)
        special += [c, np.nextafter(c, np.float32(0)), np.nextafter(c, np.float32(np.inf))]
    special += [np.float32(0), np.float32(1e-45), np.float32(1.1754942e-38), np.finfo(np.float32).max,
                np.float32(np.inf), np.float32(1e6)]
    v = np.concatenate([pos, np.asarray(special, np.float32)])
    return np.concatenate([v, -v]).astype(np.float32)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, np.float32).view(np.int32)


def test_tanh_matches_mlas_on_a_float32_grid():
    x = _grid(12.0, 331)  # ~6.6 million values of [-12, 12]: every 331st float32
    x = np.concatenate([x, np.asarray([np.nan], np.float32)])
    got = _unary("nn.tanh", x.size)(x)[0]
    want = ort.mlas_tanh(x)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    bad = np.flatnonzero(_bits(got)[~nan] != _bits(want)[~nan])
    assert bad.size == 0, f"{bad.size} differ, e.g. x = {x[~nan][bad[:5]]}"


@pytest.mark.slow  # ~45 s
def test_logistic_matches_mlas_on_a_float32_grid():
    # (a grid chosen when mlas_logistic was a scalar emulation in rationals, ~0.4 ms a value) a grid of
    # [-20, 20], and every float32 within 128 ulps of the clamp limits +-18 and of +-1
    runs = [(np.float32(c).view(np.int32) + np.arange(-128, 129)).astype(np.int32).view(np.float32)
            for c in (18.0, 1.0)]
    x = np.concatenate([_grid(20.0, 1 << 18), *runs, *[-r for r in runs]])
    want = ort.mlas_logistic(x)
    got = _unary("nn.logistic", x.size)(x)[0]
    bad = np.flatnonzero(_bits(got) != _bits(want))
    assert bad.size == 0, f"{bad.size} differ, e.g. x = {x[bad[:5]]}"


def test_product_then_sum_is_not_contracted():
    """nn.mul then nn.add (HardSigmoid's `x * alpha + beta`): two float32 roundings, as ORT; TVM
    fuses the two generics and LLVM would contract them into one fused multiply-add (about a
    quarter of the results differ then) without the product's no-op clamp, which keeps
    infinities, overflow and NaN as they are."""
    from qdialect.diagnostics import parse_module
    from transforms.opt import QdOptMain

    n = 4096
    t = f"tensor<{n}xf32>"
    text = f"""builtin.module {{
  func.func @main(%x: {t}, %c: {t}, %d: {t}) -> {t} {{
    %m = nn.mul %x, %c {{qnn.rounding = "onnx"}} : ({t}, {t}) -> {t}
    %y = nn.add %m, %d {{qnn.rounding = "onnx"}} : ({t}, {t}) -> {t}
    func.return %y : {t}
  }}
}}"""
    module = parse_module(QdOptMain(args=[]).ctx, text)
    lower_to_l3(module)
    rng = np.random.default_rng(0)
    x, c, d = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    x[:5] = [np.inf, -np.inf, 3e38, np.nan, -0.0]
    c[:5] = [2, 2, 10, 1, 1]
    d[4] = -0.0
    got = compile_module(module)(x, c, d)[0]
    want = ((x * c).astype(np.float32) + d).astype(np.float32)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.count_nonzero(_bits(got)[ok] != _bits(want)[ok]) == 0
