"""Which int8 kernel family the bridge chooses from the target CPU, and the AVX2 one run here.

- tvm_bridge/cpu.py names the CPU from /proc/cpuinfo-style vendor and flags (the names
  are checked against LLVM's own feature tables through TVM, not against a table of ours).
- The zoo convnets compiled for an AVX2-only CPU (`haswell`, `znver2`: no AVX-512) take
  the `vpmaddwd` kernels (kernels.py records each choice), run on this machine (its CPU
  runs AVX2 code natively) and are bit-exact against LiteRT (BUILTIN_REF for the
  `tflite` profile, XNNPACK for `litert`); the assembly has `vpmaddwd` on ymm registers
  and no zmm register at all.
- A VNNI CPU (`cascadelake`, `znver4`) takes the `vpdpbusd` kernels; no AMX kernel is
  chosen anywhere (there is none yet).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ZOO = Path(__file__).resolve().parents[2] / "models" / "zoo"
CONVNETS = ["cnn_small.tflite", "ds_cnn_kws.tflite", "mobilenetv2_tiny.tflite"]


def _target(cpu: str):
    import tvm

    return tvm.target.Target({"kind": "llvm", "mcpu": cpu})


# ----- the cpu name from cpuinfo flags --------------------------------------------------------

_BASE = {"sse4_2", "popcnt", "avx", "avx2", "fma", "bmi2"}
_AVX512 = _BASE | {"avx512f", "avx512bw", "avx512dq", "avx512vl"}


@pytest.mark.parametrize("vendor, flags, name, has, lacks", [
    ("AuthenticAMD", _AVX512 | {"avx512_vnni", "avx512_bf16"}, "znver4", ["avx512vnni"], ["amx-int8"]),
    ("AuthenticAMD", _BASE | {"vaes", "vpclmulqdq", "clwb"}, "znver3", ["avx2"], ["avx512bw"]),
    ("AuthenticAMD", _BASE | {"clwb"}, "znver2", ["avx2"], ["avx512bw"]),
    ("GenuineIntel", _AVX512 | {"avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8"},
     "sapphirerapids", ["amx-int8", "avx512vnni"], []),
    ("GenuineIntel", _AVX512 | {"avx512_vnni", "avx512_vbmi2", "gfni"}, "icelake-server", ["avx512vnni"],
     ["amx-int8"]),
    ("GenuineIntel", _AVX512 | {"avx512_vnni"}, "cascadelake", ["avx512vnni"], ["amx-int8"]),
    ("GenuineIntel", _AVX512, "skylake-avx512", ["avx512bw"], ["avx512vnni"]),
    ("GenuineIntel", _BASE, "haswell", ["avx2"], ["avx512f"]),
    ("GenuineIntel", {"sse4_2", "popcnt"}, "x86-64-v2", [], ["avx2"]),
])
def test_cpu_name_from_flags(vendor, flags, name, has, lacks):
    from tvm.target.codegen import target_has_features

    from tvm_bridge.cpu import cpu_name

    assert cpu_name(vendor, frozenset(flags)) == name
    target = _target(name)
    assert all(target_has_features(f, target) for f in has)
    assert not any(target_has_features(f, target) for f in lacks)


def test_host_target_is_the_machine_and_the_override_is_checked(monkeypatch):
    import tvm

    from tvm_bridge.compile import host_target
    from tvm_bridge.cpu import cpu_flags, machine_cpu

    vendor, flags = cpu_flags()
    if not flags:
        pytest.skip("no /proc/cpuinfo")
    monkeypatch.delenv("QDIALECT_TARGET_CPU", raising=False)
    assert str(host_target().attrs["mcpu"]) == machine_cpu() != "generic"
    # what LLVM's own host detection says this CPU has, the named target has too (and no more of
    # the kernels' instruction sets)
    from tvm.target.codegen import target_has_features

    ours = host_target()
    llvm = tvm.target.Target({"kind": "llvm", "mcpu": str(tvm.target.codegen.llvm_get_system_cpu())})
    for f in ("avx2", "avx512bw", "avx512vnni", "amx-int8"):
        assert target_has_features(f, ours) == target_has_features(f, llvm), f
    monkeypatch.setenv("QDIALECT_TARGET_CPU", "haswell")
    assert str(host_target().attrs["mcpu"]) == "haswell"
    for bad in ("native", "nosuchcpu"):
        monkeypatch.setenv("QDIALECT_TARGET_CPU", bad)
        with pytest.raises(ValueError, match="QDIALECT_TARGET_CPU"):
            host_target()


# ----- the family chosen per target ----------------------------------------------------------


def _lowered(name: str, profile: str):
    from qdialect.dialects.qnn import set_rounding
    from transforms.pipelines import lower_to_l3
    from tvm_bridge.run_cli import load_module

    module = load_module(ZOO / name, batch=1)
    if profile == "litert":
        set_rounding(module, "litert")
    lower_to_l3(module)
    return module


def _choices(module, cpu: str) -> list[tuple]:
    from tvm_bridge.translate import translate
    from tvm_bridge.kernels import target_flavor

    choices: list[tuple] = []
    translate(module, dot=target_flavor(_target(cpu)), choices=choices)
    return choices


@pytest.mark.parametrize("cpu, family", [("cascadelake", "avx512-vnni"), ("znver4", "avx512-vnni"),
                                         ("skylake-avx512", "avx512bw"), ("haswell", "avx2"),
                                         ("znver2", "avx2")])
def test_family_follows_the_cpu(cpu, family):
    choices = _choices(_lowered("mobilenetv2_tiny.tflite", "litert"), cpu)
    # every convolution but the classifier (10 output channels: K % 8 != 0, TVM's own
    # schedule) takes the family's kernel
    convs = [c for c in choices if c[0] == "conv2d" and c[1] != "generic"]
    assert len(convs) >= 15 and all(c[2].startswith(family) for c in convs), choices
    assert len([c for c in choices if c[0] == "conv2d" and c[1] == "generic"]) == 1
    # the 7 depthwise layers: the depthwise kernel, on vpdpwssd where the CPU has VNNI
    depthwise = [c for c in choices if c[0] == "depthwise"]
    want = "avx512-vnni (vpdpwssd)" if family == "avx512-vnni" else family
    assert len(depthwise) == 7 and all(c[2].startswith(want) for c in depthwise), choices
    assert not any("amx" in c[2] for c in choices)


def test_no_kernel_family_without_avx2():
    choices = _choices(_lowered("cnn_small.tflite", "tflite"), "x86-64-v2")
    assert choices and all(c[2] == "generic" for c in choices), choices


@pytest.mark.parametrize("name, profile", [
    # (one in the default run: 10-20 s here, a compile of the whole model for haswell; the
    # others 15-60 s each on this shared machine, in the slow run)
    ("ds_cnn_kws.tflite", "litert"),
    *[pytest.param(n, p, marks=pytest.mark.slow) for n in CONVNETS for p in ("tflite", "litert")
      if (n, p) != ("ds_cnn_kws.tflite", "litert")],
])
def test_avx2_convnet_runs_here_bit_exact(name, profile):
    from tvm_bridge.compile import compile_module
    from tvm_bridge.run_cli import _entry_signature, litert_run, make_inputs

    from .helpers import assembly

    module = _lowered(name, profile)
    choices = _choices(module, "haswell")
    assert any(c[0] == "conv2d" and c[2].startswith("avx2") for c in choices), choices
    model = compile_module(module, target=_target("haswell"))
    from qdialect.interpreter import Interpreter
    from tvm_bridge.run_cli import load_module

    source = load_module(ZOO / name, batch=1)
    _, in_values, _ = _entry_signature(source)
    out_dtypes = [Interpreter._dtype(v) for v in Interpreter(source).entry().get_return_op().operands]
    samples = [make_inputs(in_values, seed) for seed in range(3)]
    theirs = litert_run((ZOO / name).read_bytes(), samples, reference=profile == "tflite")
    differing = compared = 0
    for sample, expected in zip(samples, theirs):
        for a, b, d in zip(model(*sample), expected, out_dtypes):
            a = a.view(d).reshape(b.shape)
            differing += int(np.count_nonzero(a.astype(np.int64) != b.astype(np.int64)))
            compared += b.size
    assert compared > 0 and differing == 0, f"{name} ({profile}) for haswell: {differing} of {compared} differ"
    asm = assembly(model.executable)
    assert "vpmaddwd" in asm and "%ymm" in asm and "%zmm" not in asm
