"""Kernels that prefetch the next kernel's weights (tvm_bridge/prefetch.py).

The plan is checked on made-up calls (which call fetches what, and how much); the rebuilt
kernels are checked end to end: a chain of convolutions whose kernels are made to
prefetch (the cache thresholds lowered, so that a small model qualifies) must contain
`prefetcht1`, take the next kernel's weights as an argument, and give LiteRT's reference
output bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")


def _calls(spec):
    """DotCalls of (MACs, weight bytes) on the 512-bit VNNI flavor."""
    from tvm_bridge.prefetch import DotCall
    from tvm_bridge.vnni import VNNI

    return [DotCall(None, None, [None, None], None, macs, nbytes, ((nbytes,), "int8"), VNNI, None)
            for macs, nbytes in spec]


def test_plan_fetches_what_the_compute_time_leaves_room_for():
    from tvm_bridge import prefetch

    llc = 32 << 20
    # 151 M MACs at 500 GMAC/s: 302 us, 9.06 MB at 30 GB/s, less its own 2.36 MB
    calls = _calls([(151_000_000, 2_359_296), (151_000_000, 2_359_296), (37_700_000, 2_359_296),
                    (37_700_000, 2_359_296), (16_777_216, 16_777_216), (4_096_000, 4_096_000)])
    plan = prefetch.plan(calls, llc)
    # the compute-bound calls fetch all of the next call's weights, and nothing further
    assert plan[0] == [(1, 0, 2_359_296)]
    assert plan[1] == [(2, 0, 2_359_296)]
    # 37.7 M MACs leave 2.26 MB, less than their own 2.36 MB: memory-bound, nothing to fetch;
    # the same for the fully connected layers (a MAC a weight byte)
    assert 2 not in plan and 3 not in plan and 4 not in plan
    assert 5 not in plan  # (the last call has no next)


def test_plan_takes_part_of_a_large_next_call_and_none_below_the_cache():
    from tvm_bridge import prefetch

    llc = 32 << 20
    calls = _calls([(100_000_000, 1_000_000), (16_777_216, 16_777_216)])
    # 100 M MACs: 6 MB at 30 GB/s, less its own 1 MB: 5 MB of the next 16 MB
    assert prefetch.plan(calls, llc) == {0: [(1, 0, 5_000_000)]}
    # weights that fit in half the last-level cache stay there between calls: no plan
    small = _calls([(100_000_000, 1 << 20), (16_777_216, 8 << 20)])
    assert prefetch.plan(small, llc) == {}
    # under 64 KiB to fetch is not worth a kernel of its own
    assert prefetch.plan(_calls([(2_000_000, 60_000), (1_000_000, 32 << 20)]), llc) == {}


def test_plan_is_off_with_the_environment_switch(monkeypatch):
    from tvm_bridge import prefetch

    calls = _calls([(151_000_000, 2_359_296), (151_000_000, 2_359_296)])
    assert prefetch.plan(calls, 4 << 20)
    monkeypatch.setenv(prefetch.ENV, "0")
    assert prefetch.plan(calls, 4 << 20) == {}


def test_llc_bytes_reads_the_largest_cache(tmp_path):
    from tvm_bridge.prefetch import llc_bytes

    for name, size in (("index0", "48K"), ("index2", "1024K"), ("index3", "32768K"), ("index9", "junk")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "size").write_text(size + "\n")
    assert llc_bytes.__wrapped__(str(tmp_path)) == 32 << 20
    assert llc_bytes.__wrapped__(str(tmp_path / "missing")) == 32 << 20  # (the fallback)


def _chain():
    """A TFLite chain: 3x3 conv 32 -> 64, 1x1 conv 64 -> 136 (8-lane blocks), 3x3 conv 136 -> 48
    (stride 2), fully connected 4 * 4 * 48 -> 40; int8, per-channel weights."""
    from tests.tflite_writer import TensorSpec, build_model

    rng = np.random.default_rng(25)
    tensors = [TensorSpec((1, 8, 8, 32), "int8", scale=0.05, zero_point=-3)]
    ops = []
    c, scale = 32, 0.05
    for j, (k, kh, stride, out_hw) in enumerate([(64, 3, 1, 8), (136, 1, 1, 8), (48, 3, 2, 4)]):
        ws = [float(v) for v in rng.uniform(0.002, 0.01, k)]
        src = len(tensors) - 1
        tensors += [TensorSpec((k, kh, kh, c), "int8", scale=ws, zero_point=[0] * k,
                               data=rng.integers(-127, 128, (k, kh, kh, c)).astype(np.int8)),
                    TensorSpec((k,), "int32", scale=[scale * s for s in ws], zero_point=[0] * k,
                               data=rng.integers(-3000, 3000, k).astype(np.int32)),
                    TensorSpec((1, out_hw, out_hw, k), "int8", scale=0.06 + 0.02 * j, zero_point=4 - 5 * j)]
        scale = 0.06 + 0.02 * j
        ops.append(("CONV_2D", [src, src + 1, src + 2], [src + 3],
                    {"padding": "SAME", "stride_w": stride, "stride_h": stride,
                     "fused_activation_function": "RELU" if j != 1 else "NONE"}))
        c = k
    src = len(tensors) - 1
    tensors += [TensorSpec((1, 768), "int8", scale=scale, zero_point=-6),
                TensorSpec((40, 768), "int8", scale=0.004, zero_point=0,
                           data=rng.integers(-127, 128, (40, 768)).astype(np.int8)),
                TensorSpec((40,), "int32", scale=scale * 0.004, zero_point=0,
                           data=rng.integers(-3000, 3000, 40).astype(np.int32)),
                TensorSpec((1, 40), "int8", scale=0.2, zero_point=1)]
    ops.append(("RESHAPE", [src], [src + 1], {"new_shape": [1, 768]}))
    ops.append(("FULLY_CONNECTED", [src + 1, src + 2, src + 3], [src + 4], {"fused_activation_function": "NONE"}))
    return build_model(ops, tensors, [0], [src + 4])


@pytest.mark.parametrize("cpu", ["host", "haswell"])
def test_prefetching_kernels_equal_litert(cpu, tmp_path, monkeypatch):
    """The chain with every kernel made to prefetch (a last-level cache of 64 KiB, no
    minimum): the rebuilt kernels are called, issue `prefetcht1`, and the outputs are
    LiteRT's reference kernels' bit for bit (and the build without prefetching's); on the
    host's kernels and on AVX2's `vpmaddwd` ones (haswell runs on every x86-64 CPU with
    AVX2, which the tests' machines have)."""
    from tests.tflite_writer import run_tflite
    from tests.tvm_bridge.helpers import assembly, lowered_tflite
    from tvm_bridge import compile_module, prefetch
    from tvm_bridge.compile import host_target
    from tvm_bridge.kernels import target_flavor
    from tvm_bridge.translate import translate

    if cpu != "host":
        monkeypatch.setenv("QDIALECT_TARGET_CPU", cpu)
    flavor = target_flavor(host_target())
    if flavor is None:
        pytest.skip("no dot-product kernel on this target")  # (never on x86-64 with AVX2)
    model = _chain()
    lowered = lowered_tflite(model, "tflite", tmp_path)
    monkeypatch.setattr(prefetch, "llc_bytes", lambda: 64 << 10)
    monkeypatch.setattr(prefetch, "MIN_BYTES", 0)
    monkeypatch.setattr(prefetch, "BANDWIDTH", 1e12)  # (every call fetches all of the next's)
    mod, _ = translate(lowered(), dot=flavor)
    names = sorted(gv.name_hint for gv in mod.get_global_vars())
    pf = [n for n in names if n.endswith("_pf") or "_pf" in n]
    assert len(pf) == 3, names  # the three convolutions; the last call (the FC) has no next
    for n in pf:  # one more parameter: the next kernel's weights
        f = mod[n]
        assert any(getattr(p, "name", "").startswith("PF") for p in f.params), f.params
    built = compile_module(lowered(), cache=False)
    assert "prefetcht1" in assembly(built.executable)
    monkeypatch.setenv(prefetch.ENV, "0")
    plain = compile_module(lowered(), cache=False)
    assert "prefetcht1" not in assembly(plain.executable)
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = rng.integers(-128, 128, (1, 8, 8, 32)).astype(np.int8)
        (want,) = run_tflite(model, [x], reference=True)
        got = built(x)[0]
        assert got.shape == want.shape
        assert int(np.count_nonzero(got != want)) == 0
        assert np.array_equal(plain(x)[0], got)
