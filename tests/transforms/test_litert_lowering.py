"""The `litert` rounding profile through the lowering: L1 == L2 == L3 == LiteRT's default interpreter.

Under `qnn.set_rounding(module, "litert")` every quantized zoo model goes
qnn-canonicalize -> qnn-decompose -> qnn-lower-to-linalg, and each layer run
on the reference interpreter gives the integers LiteRT's default interpreter
(XNNPACK attached) gives, on a few seeded inputs.  What that needs beyond the
`tflite` profile: XNNPACK's single-rounding add (`qint.scaled_add`), its float
mean (`qint.rescale` float_even with an offset), the optimized kernel's
float-table softmax with a sequential float32 row sum, and the check that
LiteRT's optimized 8-bit ADD / MUL / Requantize fallback equals the reference
arithmetic before lowering it as `tflite`.

One module of single ops (add and sub with broadcasting, mean, softmax over
rows longer than one summing chunk) runs L1 vs L3 on many inputs on the
interpreter and through TVM; mobilenetv2_tiny runs end to end through TVM
against LiteRT.  (The full zoo on TVM is tests/tvm_bridge/test_zoo_tvm.py.)
"""

from __future__ import annotations

import subprocess
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from qdialect.dialects import qnn
from qdialect.interpreter import run_module
from transforms.canonicalize import QnnCanonicalizePass
from transforms.decompose import QnnDecomposePass
from transforms.lower_to_linalg import QnnLowerToLinalgPass

from .helpers import ZOO, ZOO_MODELS, apply, op_names, parse, random_inputs, zoo_module
from .test_lowering_zoo import MLIR_OPT, _as, _bits, _entry_dtypes

SEEDS = (0, 1, 2)
L3_DIALECTS = {"func", "arith", "linalg", "tensor", "math"}  # math.ctlz: reciprocals, softmax


def _litert(module_l1, model_bytes: bytes, seeds=SEEDS):
    from tvm_bridge.run_cli import litert_run

    samples = [random_inputs(module_l1, seed) for seed in seeds]
    return samples, litert_run(model_bytes, samples, reference=False)


@lru_cache(maxsize=None)
def litert_layers(name: str):
    """(L1, L2, L3) of a zoo model under the litert profile, each verified."""
    l1 = zoo_module(name)
    qnn.set_rounding(l1, "litert")
    l2 = apply(l1, QnnCanonicalizePass(), QnnDecomposePass())
    l3 = apply(l2, QnnLowerToLinalgPass())
    return l1, l2, l3


def _mismatches(module, samples, expected) -> list[int]:
    dtypes = _entry_dtypes(module)
    counts = []
    for inputs, want in zip(samples, expected):
        got = run_module(module, _as(inputs, dtypes))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            counts.append(int(np.count_nonzero(_bits(g) != _bits(w))))
    return counts


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_zoo_litert_every_layer_matches_litert_default(name):
    modules = litert_layers(name)
    samples, expected = _litert(modules[0], (ZOO / name).read_bytes())
    for label, module in zip(("L1", "L2", "L3"), modules):
        counts = _mismatches(module, samples, expected)
        assert sum(counts) == 0, f"{name} {label} under litert: {counts} elements differ from LiteRT default"
    l3 = modules[2]
    assert {n.split(".")[0] for n in op_names(l3)} <= L3_DIALECTS, sorted(op_names(l3))


@pytest.mark.parametrize("name", ["mobilenetv2_tiny.tflite", "elementwise_movement.tflite"])
def test_zoo_litert_l3_is_accepted_by_mlir_opt(name):
    assert Path(MLIR_OPT).exists(), f"{MLIR_OPT} is missing (Debian package mlir-22-tools)"
    l3 = litert_layers(name)[2]
    proc = subprocess.run([MLIR_OPT, "--verify-each"], input=str(l3), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_zoo_models_use_the_litert_recipes():
    """The zoo exercises each new recipe (else the tests above prove less than they say)."""
    seen = set()
    for name in ("mobilenetv2_tiny.tflite", "elementwise_movement.tflite"):
        l2 = litert_layers(name)[1]
        for op in l2.walk():
            if op.name == "qint.scaled_add":
                seen.add("scaled_add")
            if op.name == "qint.rescale" and "offset" in op.attributes:
                seen.add("mean offset")
            if op.name == "qint.softmax" and op.float_table:
                seen.add("float softmax")
    assert seen == {"scaled_add", "mean offset", "float softmax"}


# ----- single ops: many inputs, interpreter and TVM --------------------------------------------------

OPS = """
!a = !quant.uniform<i8:f32, 5.000000e-02:3>
!b = !quant.uniform<i8:f32, 7.000000e-02:-5>
!o = !quant.uniform<i8:f32, 1.000000e-01:-2>
!m = !quant.uniform<i8:f32, 3.000000e-02:7>
!s = !quant.uniform<i8:f32, 3.906250e-03:-128>
func.func @main(%x: tensor<4x16x!a>, %y: tensor<1x16x!b>, %p: tensor<1x4x4x64x!a>, %r: tensor<6x40x!a>)
    -> (tensor<4x16x!o>, tensor<4x16x!o>, tensor<1x64x!m>, tensor<6x40x!s>, tensor<4x16x!s>) {
  %0 = qnn.add %x, %y : (tensor<4x16x!a>, tensor<1x16x!b>) -> tensor<4x16x!o>
  %1 = qnn.sub %x, %y : (tensor<4x16x!a>, tensor<1x16x!b>) -> tensor<4x16x!o>
  %2 = qnn.mean %p {axes = array<i64: 1, 2>} : (tensor<1x4x4x64x!a>) -> tensor<1x64x!m>
  %3 = qnn.softmax %r : (tensor<6x40x!a>) -> tensor<6x40x!s>
  %4 = qnn.softmax %x {beta = 0.7 : f32} : (tensor<4x16x!a>) -> tensor<4x16x!s>
  func.return %0, %1, %2, %3, %4 : tensor<4x16x!o>, tensor<4x16x!o>, tensor<1x64x!m>, tensor<6x40x!s>, tensor<4x16x!s>
}
"""


@lru_cache(maxsize=None)
def single_ops(profile: str = "litert"):
    l1 = parse(OPS)
    qnn.set_rounding(l1, profile)
    l2 = apply(l1, QnnDecomposePass())
    l3 = apply(l2, QnnLowerToLinalgPass())
    return l1, l2, l3


def test_single_ops_lower_to_the_litert_recipes():
    _, l2, l3 = single_ops()
    names = op_names(l2)
    assert "qint.scaled_add" in names and "qint.add" not in names and "qint.sub" not in names
    assert sum(1 for op in l2.walk() if op.name == "qint.softmax" and op.attr("mode") == "float_away") == 2
    assert any(op.name == "qint.rescale" and "offset" in op.attributes for op in l2.walk())
    assert {n.split(".")[0] for n in op_names(l3)} <= L3_DIALECTS


SOFTMAX_ONLY = """
!a = !quant.uniform<i8:f32, 5.000000e-02:3>
!s = !quant.uniform<i8:f32, 3.906250e-03:-128>
func.func @main(%r: tensor<6x40x!a>, %x: tensor<4x16x!a>) -> (tensor<6x40x!s>, tensor<4x16x!s>) {
  %0 = qnn.softmax %r : (tensor<6x40x!a>) -> tensor<6x40x!s>
  %1 = qnn.softmax %x {beta = 0.7 : f32} : (tensor<4x16x!a>) -> tensor<4x16x!s>
  func.return %0, %1 : tensor<6x40x!s>, tensor<4x16x!s>
}
"""


@pytest.mark.parametrize("profile", ["litert", "half_even"])
def test_single_ops_l1_l2_l3_agree(profile):
    """litert: all the single ops; half_even: the float-table softmax with ties to even."""
    if profile == "litert":
        modules = single_ops()
    else:
        l1 = parse(SOFTMAX_ONLY)
        qnn.set_rounding(l1, profile)
        l2 = apply(l1, QnnDecomposePass())
        assert all(op.attr("mode") == "float_even" for op in l2.walk() if op.name == "qint.softmax")
        modules = (l1, l2, apply(l2, QnnLowerToLinalgPass()))
    l1 = modules[0]
    for seed in range(12):
        inputs = random_inputs(l1, seed)
        want = run_module(l1, inputs)
        for label, module in zip(("L2", "L3"), modules[1:]):
            got = run_module(module, inputs)
            diff = [int(np.count_nonzero(g != w)) for g, w in zip(got, want)]
            assert sum(diff) == 0, f"{profile} {label} seed {seed}: {diff}"


def test_single_ops_tvm_matches_the_interpreter():
    from tvm_bridge import compile_module

    l1, _, l3 = single_ops()
    model = compile_module(l3)
    total = np.zeros(5, np.int64)
    for seed in range(60):
        inputs = random_inputs(l1, seed)
        want = run_module(l1, inputs)
        got = model(*inputs)
        total += [int(np.count_nonzero(np.asarray(g) != w)) for g, w in zip(got, want)]
    assert total.sum() == 0, f"TVM differs from the litert reference: {total.tolist()} (add, sub, mean, softmax x2)"


# ----- LiteRT's fallback when XNNPACK declines the scales ---------------------------------------------


def _binary_module(op: str, sa: float, sb: float, so: float) -> str:
    ta = f"tensor<4x16x!quant.uniform<i8:f32, {sa}:3>>"
    tb = f"tensor<4x16x!quant.uniform<i8:f32, {sb}:-1>>"
    to = f"tensor<4x16x!quant.uniform<i8:f32, {so}:0>>"
    return (f"func.func @main(%x: {ta}, %y: {tb}) -> {to} {{\n"
            f"  %0 = qnn.{op} %x, %y : ({ta}, {tb}) -> {to}\n"
            f"  func.return %0 : {to}\n}}\n")


def test_optimized_add_fallback_that_differs_is_refused():
    """ADD with an input/output ratio above 256: XNNPACK declines, TFLite's optimized
    kernel differs from the reference in its vector blocks -> refused, not lowered as tflite."""
    from xdsl.utils.exceptions import PassFailedException

    m = parse(_binary_module("add", 0.5, 0.5, 0.0015))
    qnn.set_rounding(m, "litert")
    with pytest.raises(PassFailedException, match="XNNPACK declines the scales"):
        apply(m, QnnDecomposePass())


@pytest.mark.parametrize("op,scales", [("add", (1.0, 0.0001, 0.5)), ("mul", (0.001, 0.002, 0.5)),
                                       ("mul", (1.0, 1.0, 0.003))])
def test_fallback_lowered_only_when_equal_on_every_pair(op, scales):
    """Where XNNPACK declines, a lowered op equals the litert reference on all 65536 pairs."""
    from xdsl.utils.exceptions import PassFailedException

    text = _binary_module(op, *scales).replace("4x16", "256x256")
    m = parse(text)
    qnn.set_rounding(m, "litert")
    try:
        l2 = apply(m, QnnDecomposePass())
    except PassFailedException as err:
        assert "XNNPACK declines the scales" in str(err)
        return
    a = np.arange(-128, 128, dtype=np.int8)
    x, y = np.repeat(a, 256).reshape(256, 256), np.tile(a, 256).reshape(256, 256)
    assert np.array_equal(run_module(l2, [x, y])[0], run_module(m, [x, y])[0])


# ----- end to end through TVM ------------------------------------------------------------------------


def test_mobilenetv2_tiny_litert_tvm_bit_exact():
    from tvm_bridge import compile_module

    name = "mobilenetv2_tiny.tflite"
    l1, _, l3 = litert_layers(name)
    samples, expected = _litert(l1, (ZOO / name).read_bytes(), seeds=(0, 1, 2, 3))
    model = compile_module(l3)
    dtypes = _entry_dtypes(l3)
    for inputs, want in zip(samples, expected):
        got = model(*_as(inputs, dtypes))
        diff = [int(np.count_nonzero(_bits(np.asarray(g)) != _bits(w))) for g, w in zip(got, want)]
        assert sum(diff) == 0, f"{name} under litert on TVM: {diff} elements differ from LiteRT default"
