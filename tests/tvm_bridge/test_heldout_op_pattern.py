"""Held-out BERT encoders (issue 25): a paired requantization kernel of one tensor argument
broke Relax's reshape check (RewriteDataflowReshape reads the root block of such a kernel,
and the paired form is lowered TIR without one).  Until session 20 the schedule pass kept
such kernels in block form, unpaired; the pairing now runs right after that check
(`schedule.pair_late_pass`), so a lone requantization kernel builds paired, in the Relax
VM's form and in the fused module's, with TFLite's integer reference bits."""

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

from tests.tvm_bridge.test_requant_pairs import (  # noqa: E402
    _accumulators,
    _expected,
    _multipliers,
    _rescale_module,
    paired_elementwise,  # noqa: F401 - the fixture
)


@pytest.mark.parametrize("fused", ["1", "0"], ids=["fused", "vm"])
def test_lone_requantize_kernel_builds_paired(monkeypatch, fused, paired_elementwise):  # noqa: F811
    from tvm_bridge.compile import compile_module

    monkeypatch.setenv("QDIALECT_FUSED", fused)
    rng = np.random.default_rng(5)
    ms = _multipliers(rng)
    shifts = [-(1 + i % 31) for i in range(len(ms))]
    acc = _accumulators(ms, shifts, rng)
    model = compile_module(_rescale_module(ms, shifts, -3, "i8", acc.shape[0]), cache=False)
    assert paired_elementwise["kernels"] >= 1
    got = model(acc.astype(np.int32))[0]
    assert int(np.count_nonzero(got != _expected(acc, ms, shifts, -3, "i8"))) == 0
