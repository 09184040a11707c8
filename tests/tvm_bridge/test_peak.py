"""The measured peak of bench/conv_gmacs.py: a loop of the kernel family's own instruction.

`bench/conv_gmacs.py` (and so the issue's "physical limit" figures) divides the achieved
GMAC/s by `measured_peak_gmacs`; these check that its loop is the instruction it names (the
native flavors' assembly holds it, 16 or 10 independent accumulators), that the figure it
returns is a positive rate, and that an emulated flavor has none."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

tvm = pytest.importorskip("tvm")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))


@pytest.mark.parametrize("cpu,instruction", [(None, None), ("haswell", "vpmaddwd")])
def test_measured_peak_runs_the_instruction_it_names(cpu, instruction, monkeypatch):
    from conv_gmacs import measured_peak_gmacs

    from tvm_bridge import compile as qc
    from tvm_bridge.kernels import target_flavor

    if cpu:
        monkeypatch.setenv("QDIALECT_TARGET_CPU", cpu)
    target = qc.host_target()
    flavor = target_flavor(target)
    if flavor is None:
        pytest.skip("no dot-product kernel on this target")  # (never on x86-64 with AVX2)
    instruction = instruction or ("vpdpbusd" if flavor.name == "vnni" else "vpmaddwd")
    lib = []
    real_build = tvm.tirx.build
    monkeypatch.setattr(tvm.tirx, "build", lambda *a, **k: lib.append(real_build(*a, **k)) or lib[-1])
    gmacs, how = measured_peak_gmacs(flavor, target, iters=20_000)
    assert math.isfinite(gmacs) and gmacs > 1.0
    assert instruction.split()[0] in how
    asm = lib[0].inspect_source("asm")
    count = sum(1 for line in asm.splitlines() if line.strip().startswith(instruction))
    assert count >= (16 if flavor.max_lanes == 16 else 10), count


def test_emulated_flavor_has_no_measured_peak():
    from dataclasses import replace

    from conv_gmacs import measured_peak_gmacs

    from tvm_bridge import compile as qc
    from tvm_bridge.vnni import VNNI

    assert measured_peak_gmacs(replace(VNNI, emulate=True), qc.host_target()) is None
    assert measured_peak_gmacs(None, qc.host_target()) is None
