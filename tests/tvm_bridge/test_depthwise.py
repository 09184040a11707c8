"""The depthwise kernel (tvm_bridge/depthwise.py: vpmaddwd, vpdpwssd on VNNI) against LiteRT.

TFLite DEPTHWISE_CONV_2D models (int8, per-channel weights, bias, a fused
activation) built here, compiled with the kernel and compared element for
element with LiteRT: its reference kernels under the `tflite` rounding profile,
its default (XNNPACK) interpreter under `litert`.  Shapes cover strides,
dilations, SAME and VALID padding, 8 / 16 / 24 / 48 channels (one or two 8-lane
vectors per step, every register tile), and the extremes (all -128 activations
against all -128 or 127 weights).  The kernel runs natively where the CPU has
AVX2, emulated elsewhere (`Flavor.emulate`, as in test_vnni.py); that the
native kernel is `vpmovsxbd` + `vpmaddwd` is checked in its assembly.
"""

from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

from tests.tvm_bridge.helpers import assembly, lowered_tflite  # noqa: E402


def _flavor():
    from dataclasses import replace

    from tvm.target.codegen import target_has_features

    from tvm_bridge import vnni
    from tvm_bridge.compile import host_target

    return vnni.PMADDWD if target_has_features("avx2", host_target()) else replace(vnni.PMADDWD, emulate=True)


def _model(h, w, c, k, stride, dilation, padding, act, wfill=None, mult=1):
    from tests.tflite_writer import TensorSpec, build_model

    rng = np.random.default_rng(h * 100 + w * 10 + c + k)
    oc = c * mult
    wdata = rng.integers(-127, 128, (1, k, k, oc)).astype(np.int8) if wfill is None else \
        np.full((1, k, k, oc), wfill, np.int8)
    ws = list(rng.uniform(0.002, 0.03, oc))
    x = TensorSpec((1, h, w, c), "int8", scale=0.05, zero_point=-3, name="x")
    wt = TensorSpec((1, k, k, oc), "int8", scale=ws, zero_point=[0] * oc, quantized_dimension=3, data=wdata,
                    name="w")
    b = TensorSpec((oc,), "int32", scale=[0.05 * s for s in ws], zero_point=[0] * oc,
                   data=rng.integers(-900, 900, oc).astype(np.int32), name="b")
    if padding == "SAME":
        oh, ow = -(-h // stride), -(-w // stride)
    else:
        oh = (h - dilation * (k - 1) - 1) // stride + 1
        ow = (w - dilation * (k - 1) - 1) // stride + 1
    y = TensorSpec((1, oh, ow, oc), "int8", scale=0.04, zero_point=6, name="y")
    opts = {"padding": padding, "stride_w": stride, "stride_h": stride, "depth_multiplier": mult,
            "dilation_w_factor": dilation, "dilation_h_factor": dilation, "fused_activation_function": act}
    return build_model([("DEPTHWISE_CONV_2D", [0, 1, 2], [3], opts)], [x, wt, b, y], inputs=[0], outputs=[3])


def _compiled(model: bytes, rounding: str, tmp_path, dot):
    from tvm_bridge.compile import compile_module
    from tvm_bridge.translate import translate

    lowered = lowered_tflite(model, rounding, tmp_path, "dw.tflite")
    mod, _ = translate(lowered(), dot=dot)
    kernels = [gv.name_hint for gv, _ in mod.functions_items() if gv.name_hint.startswith("depthwise_conv2d")]
    return compile_module(lowered(), dot=dot), kernels


CASES = [
    # (H, W, C, K, stride, dilation, padding, activation)
    (10, 10, 16, 3, 1, 1, "SAME", "RELU6"),    # 10 columns: tiles of 2 x 16 channels
    (12, 12, 48, 3, 1, 1, "SAME", "NONE"),     # 12 columns: tiles of 4, 3 x 16 channels
    (11, 11, 24, 3, 2, 1, "SAME", "RELU"),     # stride 2, 6 columns, 24 channels: 8-channel vectors
    (9, 9, 8, 3, 1, 2, "VALID", "NONE"),       # dilation 2, 5 columns: tiles of 1
    (7, 13, 16, 5, 1, 1, "VALID", "RELU6"),    # 5x5, 9 columns: tiles of 3
    (8, 8, 32, 3, 2, 1, "VALID", "NONE"),      # stride 2 VALID: 3 columns
    (9, 9, 64, 3, 1, 1, "VALID", "RELU6"),     # 7 columns (MobileNetV2-1.0's last stage): tiles of 7 x 2
]


@pytest.mark.parametrize("rounding", ["tflite", "litert"])
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}x{c[1]}x{c[2]}-k{c[3]}-s{c[4]}-d{c[5]}-{c[6]}-{c[7]}"
                                             for c in CASES])
def test_depthwise_kernel_equals_litert(case, rounding, tmp_path):
    from tests.tflite_writer import run_tflite

    h, w, c, k, stride, dilation, padding, act = case
    model = _model(h, w, c, k, stride, dilation, padding, act)
    built, kernels = _compiled(model, rounding, tmp_path, _flavor())
    assert kernels, "the depthwise convolution did not take the kernel"
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = rng.integers(-128, 128, (1, h, w, c)).astype(np.int8)
        (want,) = run_tflite(model, [x], reference=rounding == "tflite")
        got = built(x)[0]
        assert int(np.count_nonzero(got != want)) == 0, f"{np.count_nonzero(got != want)} of {want.size} differ"


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_depthwise_rows_in_parallel(padding, tmp_path, monkeypatch):
    """A depthwise kernel whose output rows go parallel (every kernel, with the threshold at
    one multiply-accumulate), run on TVM's pool at 2 threads, equals LiteRT.  VALID: the
    kernel is its parallel loop alone (no border to pad), the shape a 112x112x32 layer of
    MobileNetV2-1.0 at 224x224 takes and that once failed to build (a SeqStmt of one)."""
    from tests.tflite_writer import run_tflite
    from tvm_bridge import vnni
    from tvm_bridge.cpu import set_threads

    monkeypatch.setattr(vnni, "DOT_PARALLEL_MIN_MACS", 1)
    monkeypatch.setattr(vnni, "FUSED_DOT_PARALLEL_MIN_MACS", 1)
    vnni.clear_caches()
    model = _model(12, 10, 32, 3, 1, 1, padding, "RELU6")
    before = int(tvm.get_global_func("runtime.NumThreads")())
    try:
        built, kernels = _compiled(model, "tflite", tmp_path, _flavor())
        assert kernels
        from tvm_bridge.translate import translate

        mod, _ = translate(lowered_tflite(model, "tflite", tmp_path, "dw.tflite")(), dot=_flavor())
        assert all("T.parallel" in mod[name].script() for name in kernels)
        set_threads(2)
        rng = np.random.default_rng(11)
        for _ in range(3):
            x = rng.integers(-128, 128, (1, 12, 10, 32)).astype(np.int8)
            (want,) = run_tflite(model, [x], reference=True)
            got = built(x)[0]
            assert int(np.count_nonzero(got != want)) == 0, f"{np.count_nonzero(got != want)} of {want.size} differ"
    finally:
        set_threads(before)
        vnni.clear_caches()


@pytest.mark.parametrize("wfill", [-127, 127])
def test_depthwise_kernel_extremes(wfill, tmp_path):
    """All -128 activations (x + 128 = 0 in the generic's form, the largest |x| here)."""
    from tests.tflite_writer import run_tflite

    model = _model(8, 8, 16, 3, 1, 1, "SAME", "NONE", wfill=wfill)
    built, kernels = _compiled(model, "tflite", tmp_path, _flavor())
    assert kernels
    for x in (np.full((1, 8, 8, 16), -128, np.int8), np.full((1, 8, 8, 16), 127, np.int8)):
        (want,) = run_tflite(model, [x], reference=True)
        np.testing.assert_array_equal(built(x)[0], want)


@pytest.mark.parametrize("c, mult", [(12, 1), (8, 2)])
def test_depthwise_shapes_the_kernel_does_not_take(c, mult, tmp_path):
    """12 channels (not a multiple of the 8 lanes) and a channel multiplier of 2 take the
    generic path, still exact."""
    from tests.tflite_writer import run_tflite

    model = _model(8, 8, c, 3, 1, 1, "SAME", "NONE", mult=mult)
    built, kernels = _compiled(model, "tflite", tmp_path, _flavor())
    assert kernels == []
    x = np.random.default_rng(5).integers(-128, 128, (1, 8, 8, c)).astype(np.int8)
    (want,) = run_tflite(model, [x], reference=True)
    np.testing.assert_array_equal(built(x)[0], want)


@pytest.mark.parametrize("rounding", ["tflite", "litert"])
@pytest.mark.parametrize("c", [16, 24, 48])
@pytest.mark.parametrize("name, feature", [("VNNI", "avx512vnni"), ("PMADDWD_512", "avx512bw")])
def test_512_bit_depthwise_equals_litert(name, feature, c, rounding, tmp_path):
    """The flavors with 512-bit vectors: on an AVX-512 VNNI machine the taps are one
    vpdpwssd per 16 channels, on AVX-512BW one 512-bit vpmaddwd (16 and 48 channels: 512-bit
    vectors; 24: 8-channel ones); emulated (as vpmaddwd arithmetic) where the CPU lacks
    the feature."""
    from dataclasses import replace

    from tests.tflite_writer import run_tflite
    from tvm.target.codegen import target_has_features

    from tvm_bridge import vnni
    from tvm_bridge.compile import host_target

    flavor = getattr(vnni, name)
    if not target_has_features(feature, host_target()):
        flavor = replace(flavor, emulate=True)
    model = _model(9, 10, c, 3, 1, 1, "SAME", "RELU6")
    built, kernels = _compiled(model, rounding, tmp_path, flavor)
    assert kernels, "the depthwise convolution did not take the kernel"
    rng = np.random.default_rng(c)
    for x in [rng.integers(-128, 128, (1, 9, 10, c)).astype(np.int8), np.full((1, 9, 10, c), -128, np.int8)]:
        (want,) = run_tflite(model, [x], reference=rounding == "tflite")
        got = built(x)[0]
        assert int(np.count_nonzero(got != want)) == 0, f"{np.count_nonzero(got != want)} of {want.size} differ"


def _depthwise_assembly(tmp_path, flavor, cpu: str) -> str:
    """The assembly of a 16-channel 3x3 depthwise kernel built with `flavor` for LLVM cpu
    `cpu` (compiled only, not run): that function's body alone."""
    from transforms import pipelines
    from tvm_bridge.compile import as_target, build
    from tvm_bridge.run_cli import load_module
    from tvm_bridge.translate import translate

    path = tmp_path / "dw.tflite"
    path.write_bytes(_model(8, 8, 16, 3, 1, 1, "SAME", "NONE"))
    module = load_module(path, 1)
    pipelines.lower_to_l3(module)
    mod, _ = translate(module, dot=flavor)
    asm = assembly(build(mod, as_target(f"llvm -mcpu={cpu}")))
    body = asm[asm.index("depthwise_conv2d_compute_:"):]
    return body[:body.index(".Lfunc_end")]


def test_native_vnni_depthwise_is_vpdpwssd(tmp_path):
    """Compiled for an AVX-512 VNNI CPU (no need to run it), the taps of a 16-channel
    depthwise are a sign-extending load and a 512-bit vpdpwssd (no vpmaddwd).  (For Zen 4:
    LLVM's tuning for Intel's VNNI CPUs -- icelake-server, sapphirerapids -- splits most of
    them back into vpmaddwd + vpaddd, its own choice for those cores.)"""
    from tvm_bridge import vnni

    body = _depthwise_assembly(tmp_path, vnni.VNNI, "znver4")
    assert body.count("vpdpwssd\t%zmm") >= 9 and "vpmovsxbd" in body and "vpmaddwd" not in body


def test_native_depthwise_is_vpmaddwd(tmp_path):
    """Compiled for an AVX2 CPU (no need to run it), the kernel's taps are a sign-extending
    load and a vpmaddwd."""
    from tvm_bridge import vnni

    body = _depthwise_assembly(tmp_path, vnni.PMADDWD, "haswell")
    assert body.count("vpmaddwd\t%ymm") >= 9 and "vpmovsxbd" in body
