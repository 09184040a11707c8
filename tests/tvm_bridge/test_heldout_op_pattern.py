"""Held-out BERT encoders (issue 25): a paired requantization kernel of one tensor argument
broke Relax's reshape check (RewriteDataflowReshape reads the root block of such a kernel,
and the paired form is lowered TIR without one).  Until session 20 the schedule pass kept
such kernels in block form, unpaired; the pairing now runs right after that check
(`schedule.pair_late_pass`), so a lone requantization kernel -- a MUL by a constant scalar,
whose only tensor argument is its input -- builds paired, in the Relax VM's form and in the
fused module's, with the bits of LiteRT's reference kernels over every int8 value."""

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

from tests.tflite_writer import TensorSpec, build_model, run_tflite  # noqa: E402
from tests.tvm_bridge.helpers import lowered_tflite  # noqa: E402
from tests.tvm_bridge.test_requant_pairs import paired_elementwise  # noqa: E402,F401 - the fixture


@pytest.mark.parametrize("fused", ["1", "0"], ids=["fused", "vm"])
def test_lone_requantize_kernel_builds_paired(tmp_path, monkeypatch, fused, paired_elementwise):  # noqa: F811
    from tvm_bridge.compile import compile_module

    monkeypatch.setenv("QDIALECT_FUSED", fused)
    shape = (1, 6, 5, 24)
    tensors = [TensorSpec(shape, "int8", 0.05, 3), TensorSpec((1,), "int8", 0.02, -1, data=np.array([77])),
               TensorSpec(shape, "int8", 0.0123, -7)]
    model = build_model([("MUL", [0, 1], [2])], tensors, [0], [2])
    x = np.resize(np.arange(-128, 128), shape).astype(np.int8)  # every int8 value
    theirs = run_tflite(model, [x], reference=True)[0]
    ours = compile_module(lowered_tflite(model, "tflite", tmp_path)(), cache=False)(x)[0]
    assert paired_elementwise["kernels"] >= 1
    assert int(np.count_nonzero(ours != theirs)) == 0
