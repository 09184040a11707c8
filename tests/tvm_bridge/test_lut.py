"""Byte table look-ups in vectors (tvm_bridge/lut.py): which kernels are look-ups, and the
bits of LOGISTIC / TANH models built with them against LiteRT (reference kernels for the
`tflite` profile, the default path for `litert`), on shapes with a tail past the last whole
vector, for the host and for every other look-up family the host can run (a VBMI host runs
the AVX-512BW and AVX2 forms too); each build must hold its family's instruction
(`vpermi2b` / `vpermt2b`, `vpshufb` on zmm or ymm registers) and no other family's."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.tflite_writer import TensorSpec as T
from tests.tflite_writer import build_single_op_model, run_tflite
from tests.tvm_bridge.helpers import assembly, lowered_tflite
from tvm_bridge.compile import as_target, cannot_run_here, compile_module, host_target
from tvm_bridge.lut import lookup_family, match_lookup

#: the instruction each family's build must contain (and no other family's)
_INSTRUCTION = {"vbmi": r"vperm[it]2b", "pshufb512": r"vpshufb\s+%zmm", "pshufb": r"vpshufb\s+%ymm"}
#: the host, then CPUs of the other families, where the host can run their code
_TARGETS = [None] + [cpu for cpu in ("skylake-avx512", "znver3")
                     if cannot_run_here(as_target({"kind": "llvm", "mcpu": cpu})) is None]


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


def _family_of(asm: str) -> list[str]:
    return [f for f, pattern in _INSTRUCTION.items() if re.search(pattern, asm)]


_OPS = [("LOGISTIC", "int8", 1 / 256, -128), ("TANH", "int8", 1 / 128, 0), ("LOGISTIC", "uint8", 1 / 256, 0)]
#: every op in both profiles on the host; LOGISTIC (int8 and uint8), `tflite`, on the others
_CASES = [(op, rounding, None) for op in _OPS for rounding in ("tflite", "litert")] + \
    [(op, "tflite", cpu) for cpu in _TARGETS[1:] for op in _OPS if op[0] == "LOGISTIC"]


@pytest.mark.parametrize("op_spec, rounding, cpu", _CASES,
                         ids=[f"{o[0]}-{o[1]}-{r}-{c or 'host'}" for o, r, c in _CASES])
def test_lookup_models_match_litert(tmp_path, op_spec, rounding, cpu):
    op, dtype, out_scale, out_zp = op_spec
    shape = (1, 9, 9, 8)  # 648 bytes: whole vectors of 64 or 32 and a tail of 8
    zp = 3 if dtype == "int8" else 131
    model = build_single_op_model(op, [T(shape, dtype, 0.07, zp)], [T(shape, dtype, out_scale, out_zp)])
    info = np.iinfo(dtype)
    x = np.resize(np.arange(info.min, info.max + 1), shape).astype(dtype)  # every byte value
    x[0, 8:] = np.random.default_rng(3).integers(info.min, info.max + 1, x[0, 8:].shape)
    theirs = run_tflite(model, [x], reference=rounding == "tflite")[0]
    target = host_target() if cpu is None else as_target({"kind": "llvm", "mcpu": cpu})
    compiled = compile_module(lowered_tflite(model, rounding, tmp_path)(), target=target, cache=False)
    ours = compiled(x)[0]
    assert ours.dtype == np.dtype(dtype) and np.count_nonzero(ours != theirs) == 0
    family = lookup_family(target)
    assert _family_of(assembly(compiled.executable)) == ([] if family is None else [family])
