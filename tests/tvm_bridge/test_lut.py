"""Byte table look-ups 64 at a time (tvm_bridge/lut.py): which kernels are look-ups, and the
bits of LOGISTIC / TANH models built with them against LiteRT (reference kernels for the
`tflite` profile, the default path for `litert`), on shapes with a tail past the last whole
64 bytes.  Where the host has AVX-512 VBMI the build must use `vpermi2b` (`vpermt2b`);
elsewhere it must not (the scalar form runs), and the bits are checked either way."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tflite_writer import TensorSpec as T
from tests.tflite_writer import build_single_op_model, run_tflite
from tests.tvm_bridge.helpers import assembly, lowered_tflite
from tvm_bridge.compile import compile_module, host_target
from tvm_bridge.lut import match_lookup, target_has_vbmi


def _te_lookup(n=130, x_dtype="int8", offset=128, table_size=256, plus=0, out_dtype="int8", unsigned=False):
    from tvm import te

    x = te.placeholder((1, n), x_dtype, name="X")
    b = te.placeholder((table_size,), out_dtype, name="B")

    def element(i, j):
        v = x[i, j].astype("uint8") if unsigned else x[i, j]
        return b[v.astype("int64") + offset]

    y = te.compute((1, n), lambda i, j: (element(i, j) + plus) if plus else element(i, j), name="Y")
    return te.create_prim_func([x, b, y])


def test_match_lookup_takes_exactly_a_table_read_of_every_element():
    assert match_lookup(_te_lookup()) is not None
    assert match_lookup(_te_lookup(x_dtype="uint8", offset=0, out_dtype="uint8")) is not None
    assert match_lookup(_te_lookup(x_dtype="int8", offset=0, unsigned=True)) is not None
    # anything else: an index that can leave the table, a table of another size, more than the read
    assert match_lookup(_te_lookup(offset=127)) is None
    assert match_lookup(_te_lookup(x_dtype="uint8", offset=128)) is None
    assert match_lookup(_te_lookup(offset=128, unsigned=True)) is None
    assert match_lookup(_te_lookup(table_size=300)) is None
    assert match_lookup(_te_lookup(plus=1)) is None


def _vpermb(text: str) -> bool:
    return "vpermi2b" in text or "vpermt2b" in text


@pytest.mark.parametrize("rounding", ["tflite", "litert"])
@pytest.mark.parametrize("op, dtype, out_scale, out_zp", [
    ("LOGISTIC", "int8", 1 / 256, -128),
    ("TANH", "int8", 1 / 128, 0),
    ("LOGISTIC", "uint8", 1 / 256, 0),
])
def test_lookup_models_match_litert(tmp_path, rounding, op, dtype, out_scale, out_zp):
    shape = (1, 9, 9, 8)  # 648 bytes: ten steps of 64 and a tail of 8
    zp = 3 if dtype == "int8" else 131
    model = build_single_op_model(op, [T(shape, dtype, 0.07, zp)], [T(shape, dtype, out_scale, out_zp)])
    info = np.iinfo(dtype)
    x = np.resize(np.arange(info.min, info.max + 1), shape).astype(dtype)  # every byte value
    x[0, 8:] = np.random.default_rng(3).integers(info.min, info.max + 1, x[0, 8:].shape)
    theirs = run_tflite(model, [x], reference=rounding == "tflite")[0]
    compiled = compile_module(lowered_tflite(model, rounding, tmp_path)(), cache=False)
    ours = compiled(x)[0]
    assert ours.dtype == np.dtype(dtype) and np.count_nonzero(ours != theirs) == 0
    assert _vpermb(assembly(compiled.executable)) == target_has_vbmi(host_target())
