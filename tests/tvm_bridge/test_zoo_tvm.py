"""Every zoo model end to end through TVM: import -> qnn-canonicalize -> qnn-decompose ->
qnn-lower-to-linalg -> Relax -> tvm.compile -> run, bit-exact with LiteRT.

Expected values come from LiteRT itself: BUILTIN_REF (the reference kernels)
for the default `tflite` profile, the default interpreter (XNNPACK) for
`--rounding litert`.  Inputs are seeded and cover each input's whole storage
range.  Also: `qd-run` with its default backend (tvm) on a zoo model, and the
compiled artifact exported as a shared library and loaded back with TVM's own
runtime.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from qdialect.dialects.qnn import set_rounding
from qdialect.interpreter import Interpreter
from transforms.pipelines import lower_to_l3
from tvm_bridge.compile import compile_module
from tvm_bridge.run_cli import _entry_signature, litert_run, load_module, make_inputs
from tvm_bridge.run_cli import main as qd_run

ZOO = Path(__file__).resolve().parents[2] / "models" / "zoo"
MODELS = sorted(p.name for p in ZOO.glob("*.tflite") if not p.stem.endswith("_float"))
SAMPLES = 4


def _compiled(name: str, profile: str):
    module = load_module(ZOO / name, batch=1)
    _, in_values, _ = _entry_signature(module)
    out_dtypes = [Interpreter._dtype(v) for v in Interpreter(module).entry().get_return_op().operands]
    samples = [make_inputs(in_values, seed) for seed in range(SAMPLES)]
    if profile == "litert":
        set_rounding(module, "litert")
    lower_to_l3(module)
    model = compile_module(module)
    assert model.is_fused or os.environ.get("QDIALECT_FUSED") == "0", "the zoo model did not take the fused path"
    return model, samples, out_dtypes


@pytest.mark.parametrize("profile", ["tflite", "litert"])
@pytest.mark.parametrize("name", MODELS)
def test_zoo_model_through_tvm_bit_exact(name, profile):
    model, samples, out_dtypes = _compiled(name, profile)
    theirs = litert_run((ZOO / name).read_bytes(), samples, reference=profile == "tflite")
    mismatches, compared = [], 0
    for sample, expected in zip(samples, theirs):
        ours = model(*sample)
        assert len(ours) == len(expected)
        for k, (a, b, d) in enumerate(zip(ours, expected, out_dtypes)):
            a = a.view(d)
            assert a.shape == tuple(b.shape) or a.size == b.size
            diff = int(np.count_nonzero(a.reshape(b.shape).astype(np.int64) != b.astype(np.int64)))
            compared += b.size
            if diff:
                mismatches.append(f"output {k}: {diff} of {b.size}")
    assert compared > 0
    assert not mismatches, f"{name} ({profile}) through TVM: " + "; ".join(mismatches)


def test_qd_run_defaults_to_tvm_and_is_bit_exact(capsys):
    rc = qd_run([str(ZOO / "mlp_act.tflite"), "--samples", "2", "--bench", "3"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert "backend    tvm" in out.out
    assert "BIT-EXACT vs LiteRT litert-ref" in out.out
    assert "ms/run (tvm, median of 3)" in out.out
    assert "(LiteRT default, XNNPACK, 1 thread); ours / LiteRT = " in out.out


def test_exported_library_runs_the_same(tmp_path, monkeypatch):
    import tvm
    from tvm import relax

    monkeypatch.setenv("QDIALECT_FUSED", "0")  # the VM form's export (the fused form's: test_fused.py)

    model, samples, _ = _compiled("elementwise_movement.tflite", "tflite")
    path = tmp_path / "model.so"
    model.export_library(str(path))
    vm = relax.VirtualMachine(tvm.runtime.load_module(str(path)), tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(x) for x in samples[0]])
    expected = model(*samples[0])
    got = [out[i].numpy() for i in range(len(expected))]
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
