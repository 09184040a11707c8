"""The lowering pipeline on every quantized zoo model: each layer gives the same integers.

For each model of `models/zoo` (the quantized ones, not `*_float`): the
imported L1, the module after `qnn-canonicalize`, the L2 module after
`qnn-decompose` and the L3 module after `qnn-lower-to-linalg` run on the
reference interpreter to identical integers on a few seeded inputs, and the
L3 text is accepted by MLIR 22's own `mlir-opt --verify-each`; as a second
execution oracle, `mlir-opt` lowers the L3 to LLVM and `mlir-runner` runs it
to the same integers.  Unsigned
storage (u8) travels as i8 bits from L2 on, so those arrays are compared
bit for bit.  `qd-opt -p qnn-to-l3` is the same pipeline under one name.

mlir-opt comes from the Debian package `mlir-22-tools` (`.ci/run` installs
it); where it is missing the L3 check fails rather than skips, so CI never
passes without the outside check.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from qdialect.interpreter import run_module
from transforms.canonicalize import QnnCanonicalizePass
from transforms.decompose import QnnDecomposePass
from transforms.lower_to_linalg import QnnLowerToLinalgPass

from .helpers import PROFILES, ZOO, ZOO_MODELS, apply, op_names, random_inputs, zoo_module

MLIR_OPT = os.environ.get("MLIR_OPT", "/usr/lib/llvm-22/bin/mlir-opt")
SEEDS = (0, 1, 2)
L3_DIALECTS = {"func", "arith", "linalg", "tensor", "math"}  # math.ctlz: reciprocals, softmax


@lru_cache(maxsize=None)
def layers(name: str):
    """(L1, canonicalized L1, L2, L3) of a zoo model, each verified."""
    l1 = zoo_module(name)
    canonical = apply(l1, QnnCanonicalizePass())
    l2 = apply(canonical, QnnDecomposePass())
    l3 = apply(l2, QnnLowerToLinalgPass())
    return l1, canonical, l2, l3


def _entry_dtypes(module) -> list[np.dtype]:
    from qdialect.interpreter import Interpreter, _qp

    out = []
    for arg in Interpreter(module).entry().body.block.args:
        q = _qp(arg)
        if q is not None:
            out.append(np.dtype(q.dtype))
        else:
            width = arg.type.element_type.width.data
            out.append(np.dtype(f"int{width}"))
    return out


def _as(arrays: list[np.ndarray], dtypes: list[np.dtype]) -> list[np.ndarray]:
    """The same bits in the module's argument dtypes (u8 storage is i8 at L2 and L3)."""
    out = []
    for a, dt in zip(arrays, dtypes):
        out.append(a.view(dt) if a.dtype != dt and a.dtype.itemsize == dt.itemsize else a)
    return out


def _bits(a: np.ndarray) -> np.ndarray:
    """An integer array as signed integers of its width, for bit-for-bit comparison."""
    a = np.asarray(a)
    return a.view(np.dtype(f"int{8 * a.dtype.itemsize}")) if a.dtype.kind == "u" else a


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_layers_are_pure(name):
    """L2 holds no qnn ops or quantized types; L3 only upstream func/arith/linalg/tensor."""
    _, _, l2, l3 = layers(name)
    assert not {n for n in op_names(l2) if n.startswith(("qnn.", "quant."))}
    assert any(n.startswith("qint.") for n in op_names(l2))
    assert "!quant." not in str(l2)
    assert {n.split(".")[0] for n in op_names(l3)} <= L3_DIALECTS, sorted(op_names(l3))
    assert "!quant." not in str(l3)


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_every_layer_gives_the_same_integers(name):
    modules = layers(name)
    labels = ("L1", "after qnn-canonicalize", "L2", "L3")
    dtypes = [_entry_dtypes(m) for m in modules]
    for seed in SEEDS:
        inputs = random_inputs(modules[0], seed)
        expected = [_bits(o) for o in run_module(modules[0], inputs)]
        for label, module, dts in zip(labels[1:], modules[1:], dtypes[1:]):
            got = [_bits(o) for o in run_module(module, _as(inputs, dts))]
            assert len(got) == len(expected), f"{name} {label}: {len(got)} outputs, expected {len(expected)}"
            for k, (want, have) in enumerate(zip(expected, got)):
                assert have.dtype == want.dtype and have.shape == want.shape, (
                    f"{name} {label} output {k}: {have.dtype}{list(have.shape)} vs {want.dtype}{list(want.shape)}")
                diff = int(np.count_nonzero(have != want))
                assert diff == 0, f"{name} {label} output {k} seed {seed}: {diff} of {want.size} differ from L1"


def _mlir_opt() -> str:
    assert Path(MLIR_OPT).exists(), (
        f"{MLIR_OPT} is missing: install the Debian package mlir-22-tools (.ci/run does) or set MLIR_OPT")
    return MLIR_OPT


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_l3_is_accepted_by_mlir_opt(name):
    l3 = layers(name)[3]
    proc = subprocess.run([_mlir_opt(), "--verify-each"], input=str(l3), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"{name}: mlir-opt rejects the L3 text:\n{proc.stderr[-5000:]}"
    assert "linalg." in proc.stdout and "func.func" in proc.stdout


# (model, profile) pairs qnn-decompose refuses, with the reason it gives: arithmetic with no
# exact integer form at L2.  Every other pair must lower and stay bit-exact.
KNOWN_REFUSALS = {
    ("cnn_small_16x8.tflite", "half_even"): "int16 qnn.softmax with rounding 'half_even'",
    ("cnn_small_16x8.tflite", "half_up"): "rounding 'half_up' with a 64-bit accumulator",
    ("elementwise_movement.tflite", "half_even"): "with rounding 'half_even' (one float sum of both inputs)",
    ("mobilenetv2_tiny.tflite", "half_even"): "with rounding 'half_even' (one float sum of both inputs)",
    # the ONNX profiles on TFLite models: TFLite's 16x8 i64 bias is no ORT kernel's, and a mean over
    # axes that are not ONNX's trailing ones has no ORT float recipe
    ("cnn_small_16x8.tflite", "onnxruntime"): "with bias / acc knobs other than ORT's",
    ("cnn_small_16x8.tflite", "onnx"): "with bias / acc knobs other than ORT's",
    ("elementwise_movement.tflite", "onnxruntime"): "qnn.mean in float",
    ("mobilenetv2_tiny.tflite", "onnxruntime"): "qnn.mean in float",
}


@pytest.mark.parametrize("profile", [p for p in PROFILES if p is not None and p != "tflite"])
@pytest.mark.parametrize("name", ZOO_MODELS)
def test_every_rounding_profile_lowers_bit_exact(name, profile):
    """With every op's rounding set to a profile, L3 gives L1's integers (or the pass refuses, as known)."""
    from xdsl.utils.exceptions import PassFailedException

    from qdialect.dialects.qnn import set_rounding

    l1 = zoo_module(name)
    set_rounding(l1, profile)
    try:
        l3 = apply(l1, QnnCanonicalizePass(), QnnDecomposePass(), QnnLowerToLinalgPass())
    except PassFailedException as e:
        reason = KNOWN_REFUSALS.get((name, profile))
        assert reason is not None and reason in str(e), f"{name} under {profile}: {e}"
        return
    assert (name, profile) not in KNOWN_REFUSALS, f"{name} under {profile} lowers now: update KNOWN_REFUSALS"
    dtypes = _entry_dtypes(l3)
    for seed in SEEDS[:2]:
        inputs = random_inputs(l1, seed)
        for k, (want, have) in enumerate(zip(run_module(l1, inputs), run_module(l3, _as(inputs, dtypes)))):
            diff = int(np.count_nonzero(_bits(want) != _bits(have)))
            assert diff == 0, f"{name} under {profile}, output {k} seed {seed}: {diff} of {want.size} differ"
    proc = subprocess.run([_mlir_opt(), "--verify-each"], input=str(l3), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{name} under {profile}: mlir-opt rejects the L3 text:\n{proc.stderr[-3000:]}"


# ----- a second execution oracle: MLIR's own LLVM lowering and mlir-runner ------------------------

LLVM_DIR = Path(MLIR_OPT).parent.parent
TO_LLVM = ["--convert-elementwise-to-linalg", "--one-shot-bufferize=bufferize-function-boundaries",
           "--convert-linalg-to-loops", "--expand-strided-metadata", "--lower-affine", "--convert-scf-to-cf",
           "--convert-cf-to-llvm", "--convert-math-to-llvm", "--convert-arith-to-llvm", "--convert-index-to-llvm",
           "--finalize-memref-to-llvm", "--convert-func-to-llvm", "--reconcile-unrealized-casts"]


def _runner_program(l3, inputs: list[np.ndarray]) -> str:
    """The L3 module plus `@run_main`: the inputs as constants, a call, each result printed as i32."""
    fn = next(op for op in l3.walk() if op.name == "func.func")
    args, results = fn.body.block.args, fn.function_type.outputs.data
    lines = ["func.func private @printMemrefI32(memref<*xi32>)", "func.func @run_main() {"]
    for i, (arg, x) in enumerate(zip(args, inputs)):
        el = arg.type.element_type
        values = ", ".join(str(int(v)) for v in np.asarray(x).ravel())
        dims = ", ".join(str(k) for k in range(x.ndim))
        lines.append(f"  %flat{i} = arith.constant dense<[{values}]> : tensor<{x.size}x{el}>")
        lines.append(f"  %in{i} = tensor.expand_shape %flat{i} [[{dims}]] output_shape {list(x.shape)} : "
                     f"tensor<{x.size}x{el}> into {arg.type}")
    operands = ", ".join(f"%in{i}" for i in range(len(args)))
    lines.append(f"  %r:{len(results)} = func.call @{fn.sym_name.data}({operands}) : "
                 f"({', '.join(str(a.type) for a in args)}) -> ({', '.join(str(r) for r in results)})")
    from qdialect.io_types import declared_dtypes

    unsigned = [d is not None and d.kind == "u" for d in declared_dtypes(fn)[1]]  # qnn.element_type = uiN
    for k, r in enumerate(results):
        t32 = "tensor<" + "x".join(str(d) for d in r.get_shape()) + "xi32>"
        value = f"%r#{k}"
        if str(r.element_type) != "i32":
            lines.append(f"  %wide{k} = arith.{'extui' if unsigned[k] else 'extsi'} {value} : {r} to {t32}")
            value = f"%wide{k}"
        lines.append(f"  %any{k} = tensor.cast {value} : {t32} to tensor<*xi32>")
        lines.append(f"  %buf{k} = bufferization.to_buffer %any{k} : tensor<*xi32> to memref<*xi32>")
        lines.append(f"  func.call @printMemrefI32(%buf{k}) : (memref<*xi32>) -> ()")
    lines += ["  func.return", "}"]
    return str(l3).rstrip().rstrip("}") + "\n" + "\n".join(lines) + "\n}\n"


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_l3_runs_the_same_under_mlir_runner(name):
    """mlir-opt lowers the L3 to LLVM, mlir-runner executes it: the same integers as the interpreter."""
    runner = LLVM_DIR / "bin" / "mlir-runner"
    libs = [LLVM_DIR / "lib" / "libmlir_runner_utils.so.22.1", LLVM_DIR / "lib" / "libmlir_c_runner_utils.so.22.1"]
    for tool in (runner, *libs):
        assert tool.exists(), f"{tool} is missing: install mlir-22-tools (it brings libmlir-22)"
    l1, _, _, l3 = layers(name)
    inputs = _as(random_inputs(l1, 0), _entry_dtypes(l3))
    want = np.concatenate([np.asarray(o).astype(np.int64).ravel() for o in run_module(l3, inputs)])
    llvm = subprocess.run([_mlir_opt(), *TO_LLVM], input=_runner_program(l3, inputs), capture_output=True,
                          text=True, timeout=300)
    assert llvm.returncode == 0, llvm.stderr[-3000:]
    run = subprocess.run([str(runner), "-e", "run_main", "-entry-point-result=void",
                          "-shared-libs=" + ",".join(str(p) for p in libs)],
                         input=llvm.stdout, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    got = np.array([int(v) for block in run.stdout.split("Unranked Memref")[1:]
                    for v in re.findall(r"-?\d+", block.split("data =", 1)[1])], np.int64)
    assert got.shape == want.shape, f"{name}: mlir-runner printed {got.size} values, expected {want.size}"
    assert int(np.count_nonzero(got != want)) == 0, f"{name}: mlir-runner and the interpreter differ"


def _tool(name: str) -> str:
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else name


def test_qnn_to_l3_is_one_pipeline_name(tmp_path):
    """`qd-import M | qd-opt -p qnn-to-l3` gives the L3 the three passes give, which mlir-opt accepts."""
    from qdialect.diagnostics import parse_module
    from tests.transforms.helpers import context

    name = "cnn_small.tflite"
    l1_text = subprocess.run([_tool("qd-import"), str(ZOO / name)], capture_output=True, text=True, check=True,
                             timeout=300).stdout
    proc = subprocess.run([_tool("qd-opt"), "-p", "qnn-to-l3"], input=l1_text, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    l3 = parse_module(context(), proc.stdout)
    assert {n.split(".")[0] for n in op_names(l3)} <= L3_DIALECTS, sorted(op_names(l3))
    l1 = layers(name)[0]
    for seed in SEEDS[:1]:
        inputs = random_inputs(l1, seed)
        for want, have in zip(run_module(l1, inputs), run_module(l3, _as(inputs, _entry_dtypes(l3)))):
            assert np.array_equal(_bits(want), _bits(have))
    checked = subprocess.run([_mlir_opt(), "--verify-each"], input=proc.stdout, capture_output=True, text=True,
                             timeout=300)
    assert checked.returncode == 0, checked.stderr[-5000:]


def test_qnn_to_l3_from_python_matches_the_passes():
    """`transforms.pipelines.lower_to_l3` (what `qnn-to-l3` runs) prints the same L3 as the three passes."""
    from transforms.pipelines import lower_to_l3

    name = "mlp_act.tflite"
    timings: list[tuple[str, float]] = []
    lowered = lower_to_l3(zoo_module(name), timings=timings)
    assert [p for p, _ in timings] == ["qnn-canonicalize", "qnn-decompose", "qnn-lower-to-linalg"]
    assert str(lowered) == str(layers(name)[3])
