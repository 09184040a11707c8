"""Concatenations as contiguous vector copies (tvm_bridge/concat.py), against LiteRT.

TFLite CONCATENATION models of int8 and int16 inputs sharing one scale (so each is a pure
copy), along the channel axis and along the rows, with runs of channels that are a multiple
of 64 bytes, leave a shorter vector, or leave one element; each compiled through our pipeline
(the kernel must be the copy form) and run against LiteRT's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

CASES = [
    # (input shapes, axis, dtype)
    ([(1, 6, 5, 192), (1, 6, 5, 32)], 3, "int8"),        # DenseNet: a block's input and 32 new channels
    ([(1, 4, 3, 130), (1, 4, 3, 1), (1, 4, 3, 7)], 3, "int8"),  # 2 vectors + 2, one element, 7
    ([(1, 2, 5, 8), (1, 3, 5, 8)], 1, "int8"),            # along the rows: 40 and 40 contiguous bytes
    ([(1, 3, 3, 40), (1, 3, 3, 24)], 3, "int16"),         # 16-bit: 32 lanes a vector
]


def _model(shapes, axis, dtype):
    from tests.tflite_writer import TensorSpec, build_model

    zp = -3 if dtype == "int8" else 0
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    tensors = [TensorSpec(tuple(s), dtype, scale=0.05, zero_point=zp) for s in shapes]
    tensors.append(TensorSpec(tuple(out), dtype, scale=0.05, zero_point=zp))
    n = len(shapes)
    return build_model([("CONCATENATION", list(range(n)), [n], {"axis": axis})], tensors, list(range(n)), [n])


@pytest.mark.parametrize("case", CASES, ids=[f"{c[2]}-axis{c[1]}-{len(c[0])}in" for c in CASES])
def test_concatenation_copies_equal_litert(case, tmp_path):
    from tvm.relax.backend.cpu_generic import pipeline as cpu

    from tests.tflite_writer import run_tflite
    from tests.tvm_bridge.helpers import lowered_tflite
    from tvm_bridge import compile_module
    from tvm_bridge.compile import host_target
    from tvm_bridge.concat import concat_kernel
    from tvm_bridge.translate import translate

    shapes, axis, dtype = case
    model = _model(shapes, axis, dtype)
    lowered = lowered_tflite(model, "tflite", tmp_path, "concat.tflite")
    # the legalized kernel is one TVM's fusion leaves alone, and it takes the copy form
    mod, _ = translate(lowered())
    target = host_target()
    with target:
        mod = tvm.transform.Sequential(cpu.library_dispatch_passes(target) + cpu.legalize_passes(target))(mod)
    kernels = [f for _, f in mod.functions_items() if isinstance(f, tvm.tirx.PrimFunc)]
    copies = [concat_kernel(f) for f in kernels]
    assert sum(c is not None for c in copies) == 1, [f.script() for f in kernels]
    assert "if_then_else" not in next(c for c in copies if c is not None).script()
    built = compile_module(lowered())
    rng = np.random.default_rng(len(shapes) + axis)
    info = np.iinfo(dtype)
    for _ in range(3):
        data = [rng.integers(info.min, info.max + 1, s).astype(dtype) for s in shapes]
        (want,) = run_tflite(model, data, reference=True)
        got = built(*data)[0]
        assert got.shape == want.shape
        assert int(np.count_nonzero(got != want)) == 0


def test_what_is_not_a_concatenation_is_left_alone():
    """A kernel that is not one T_concat block over inputs adding up along one axis: None."""
    from tvm.script import tirx as T

    from tvm_bridge.concat import concat_kernel

    @T.prim_func(private=True, s_tir=True)
    def add(a: T.Buffer((4, 8), "int8"), b: T.Buffer((4, 8), "int8"), c: T.Buffer((4, 8), "int8")):
        for i, j in T.grid(4, 8):
            with T.sblock("T_add"):
                vi, vj = T.axis.remap("SS", [i, j])
                c[vi, vj] = a[vi, vj] + b[vi, vj]

    @T.prim_func(private=True, s_tir=True)
    def twice(a: T.Buffer((4, 8), "int8"), c: T.Buffer((4, 16), "int8")):  # concat(a, a): one parameter
        for i, j in T.grid(4, 16):
            with T.sblock("T_concat"):
                vi, vj = T.axis.remap("SS", [i, j])
                c[vi, vj] = T.if_then_else(8 <= vj, a[vi, vj - 8], a[vi, vj])

    assert concat_kernel(add) is None
    assert concat_kernel(twice) is None
