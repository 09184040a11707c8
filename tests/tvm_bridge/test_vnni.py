"""The dot-product convolution kernels (tvm_bridge/vnni.py) against numpy.

Reference: int64 numpy convolution of the same int8 tensors (linalg's
sign-extended products, accumulated exactly, then wrapped to int32), so the
kernel's packing, blocking, VNNI's u8 activation trick and its 128 * sum(w)
correction are checked for every element.  Shapes cover strides, dilations,
several channel blocks, every register-tile width (4, 3, 2, 1 output columns)
and extreme values (all -128 activations with all -128/127 weights, where the
uint8 bias matters most).

Every flavor (VNNI `vpdpbusd`, 256-bit and 512-bit `vpmaddwd`) runs on every
machine: natively where the CPU has the instruction, otherwise emulated (the
same kernel with the instruction written as portable vector TIR,
`Flavor.emulate`).  That the native kernels really are the instruction is
checked by compiling each for a CPU that has it and reading the assembly.
"""

from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

from tests.tvm_bridge.helpers import assembly, lowered_tflite  # noqa: E402


#: CPU features each flavor needs (and LLVM CPUs that have them, for the assembly check)
FEATURES = {"vnni": ("avx512vnni", "cascadelake"), "pmaddwd": ("avx2", "haswell"),
            "pmaddwd512": ("avx512bw", "skylake-avx512")}


def flavor(name: str):
    """The flavor `name` as this machine runs it: native if the CPU has its instruction,
    emulated otherwise."""
    from dataclasses import replace

    from tvm.target.codegen import target_has_features

    from tvm_bridge import vnni
    from tvm_bridge.compile import host_target

    f = {"vnni": vnni.VNNI, "pmaddwd": vnni.PMADDWD, "pmaddwd512": vnni.PMADDWD_512}[name]
    return f if target_has_features(FEATURES[name][0], host_target()) else replace(f, emulate=True)


FLAVORS = list(FEATURES)


def reference(x, w, strides, dilations):
    _, h, wd, _ = x.shape
    k, kh, kw, _ = w.shape
    sh, sw = strides
    dh, dw = dilations
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (wd - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((1, oh, ow, k), np.int64)
    for i in range(kh):
        for j in range(kw):
            patch = x[0, i * dh: i * dh + (oh - 1) * sh + 1: sh, j * dw: j * dw + (ow - 1) * sw + 1: sw]
            out[0] += np.einsum("hwc,kc->hwk", patch.astype(np.int64), w[:, i, j, :].astype(np.int64))
    return ((out + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


def run_kernel(x, w, strides, dilations, name):
    from tvm import relax

    from tvm_bridge.compile import host_target
    from tvm_bridge.lowering import register
    from tvm_bridge.vnni import emit_conv2d

    bb = relax.BlockBuilder()
    xv = relax.Var("x", relax.TensorType(list(x.shape), "int8"))
    with bb.function("main", [xv]):
        with bb.dataflow():
            out = bb.emit_output(emit_conv2d(bb, xv, list(x.shape), w, strides, dilations, flavor=flavor(name)))
        bb.emit_func_output(out)
    target = host_target()
    ex = tvm.compile(bb.get(), target=target, tir_pipeline=register())  # (our builds' TIR pipeline)
    vm = relax.VirtualMachine(ex, tvm.cpu())
    return vm["main"](tvm.runtime.tensor(x)).numpy()


CASES = [
    # (H, W, C, K, KH, KW, strides, dilations)
    (10, 10, 16, 32, 3, 3, (1, 1), (1, 1)),   # 8 output columns: tiles of 4
    (9, 9, 8, 16, 3, 3, (1, 1), (1, 1)),      # 7 columns: tiles of 1 (vpmaddwd: 7 x one vector)
    (7, 7, 32, 64, 1, 1, (1, 1), (1, 1)),     # MobileNetV2's 7x7 pointwise: 7 x 2 vectors (vpmaddwd: 7 x 1)
    (9, 9, 8, 48, 3, 3, (1, 1), (1, 1)),      # 7 columns, K = 48: 7 x 3 vectors
    (14, 14, 8, 32, 1, 1, (1, 1), (1, 1)),    # 14 columns: 7 x 2
    (11, 11, 4, 48, 3, 3, (2, 2), (1, 1)),    # stride 2, 5 columns (vpmaddwd: tiles of 5), 3 channel blocks
    (25, 5, 64, 64, 1, 1, (1, 1), (1, 1)),    # ds_cnn's pointwise layers: 5 columns
    (4, 10, 16, 24, 1, 1, (1, 1), (1, 1)),    # 10 columns, K = 24 (vpmaddwd: tiles of 5 x one vector)
    (8, 8, 12, 16, 1, 1, (1, 1), (1, 1)),     # 1x1 (pointwise)
    (12, 12, 8, 16, 3, 3, (1, 1), (2, 2)),    # dilation 2, 8 columns
    (7, 9, 4, 16, 2, 3, (1, 2), (1, 1)),      # uneven kernel and strides, 3 columns
    (8, 8, 8, 32, 1, 1, (1, 1), (1, 1)),      # 8 columns, 2 blocks
    (9, 9, 3, 16, 3, 3, (2, 2), (1, 1)),      # C = 3 (an RGB first layer): padded to 4
    (8, 8, 6, 32, 3, 3, (1, 1), (1, 1)),      # C = 6: padded to 8
    (10, 10, 3, 8, 3, 3, (1, 1), (1, 1)),     # K = 8: 256-bit vpdpbusd
    (9, 9, 8, 24, 3, 3, (2, 2), (1, 1)),      # K = 24: 16 + 8 lanes on VNNI (three 8-lane vectors on AVX2)
    (6, 6, 16, 24, 1, 1, (1, 1), (1, 1)),     # K = 24 in rows of 6: 6 x (16 + 8)
    (8, 8, 8, 40, 1, 1, (1, 1), (1, 1)),      # K = 40: 16 + 16 + 8 lanes on VNNI
    (6, 8, 4, 16, 1, 3, (1, 1), (1, 1)),      # 6 columns: tiles of 3
    # few channels: the kernel-row window's W x C bytes grouped by 4 (C = 1, 2, 6, 5)
    (20, 12, 1, 64, 10, 4, (2, 2), (1, 1)),   # ds_cnn's first layer: one channel, 10x4, stride 2
    (9, 10, 2, 16, 3, 3, (1, 1), (1, 1)),     # C = 2: 6 bytes per kernel row -> 2 groups
    (8, 9, 6, 16, 3, 3, (1, 2), (1, 1)),      # C = 6: 18 bytes -> 5 groups (was 6); stride 2 in w
    (9, 9, 5, 16, 3, 2, (2, 1), (2, 1)),      # C = 5, dilation 2 in h only
    # narrow images: tiles of whole rows (ROWS) on the 512-bit flavors
    (5, 5, 64, 64, 3, 3, (1, 1), (1, 1)),     # 3 x 3 outputs: one tile of 9 pixels x 2 vectors
    (3, 3, 128, 96, 1, 1, (1, 1), (1, 1)),    # 1x1 over 3 x 3, K = 96: 9 pixels x 2 vectors, 3 blocks
    (12, 5, 32, 48, 1, 1, (2, 2), (1, 1)),    # stride 2: 6 x 3 outputs, tiles of 2 rows x 3 columns x 3 vectors
    (11, 11, 16, 32, 3, 3, (2, 2), (1, 1)),   # 5 x 5 outputs: tiles of one row of 5 (was 1 pixel x 2 vectors)
    (6, 6, 16, 56, 1, 1, (1, 1), (1, 1)),     # K = 56 in rows of 6: 6 x (16 + 16 + 16 + 8) (was 1 pixel)
    # tails: tiles that do not divide the row (or the image), the pixels past it discarded
    (23, 23, 16, 32, 1, 1, (1, 1), (1, 1)),   # 1x1 over 23 x 23: the 529 pixels as one sequence, 12 x 2
    (23, 23, 8, 56, 1, 1, (1, 1), (1, 1)),    # the same, K = 56: 6 x (16 + 16 + 16 + 8)
    (15, 15, 8, 32, 3, 3, (1, 1), (1, 1)),    # 3x3 into rows of 13
    (27, 27, 8, 32, 3, 3, (2, 2), (1, 1)),    # stride 2 into rows of 13
    (17, 17, 8, 48, 3, 3, (1, 1), (2, 2)),    # dilation 2 into rows of 13, K = 48
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}x{c[1]}x{c[2]}-k{c[3]}-{c[4]}x{c[5]}-s{c[6][0]}{c[6][1]}-d{c[7][0]}"
                                             for c in CASES])
@pytest.mark.parametrize("name", FLAVORS)
def test_dot_convolution_equals_the_int64_reference(case, name):
    h, w, c, k, kh, kw, strides, dilations = case
    rng = np.random.default_rng(sum(case[:6]))
    x = rng.integers(-128, 128, (1, h, w, c)).astype(np.int8)
    wt = rng.integers(-128, 128, (k, kh, kw, c)).astype(np.int8)
    got = run_kernel(x, wt, strides, dilations, name)
    np.testing.assert_array_equal(got, reference(x, wt, strides, dilations))


def test_seven_column_rows_take_seven_column_tiles():
    """A row of 7 (or 14) output columns is tiled 7 wide, not 1 (or 2): a 7x7 pointwise
    layer of MobileNetV2-1.0 with 1 x 4 tiles ran at 108 GMAC/s against 207 with 7 x 2 and
    was 1.9x XNNPACK's time (the layer alone as a one-op model, one thread, Zen 4)."""
    from tvm_bridge import vnni

    for ow, k, (tt, nv) in ((7, 64, (7, 2)), (7, 96, (7, 3)), (14, 32, (7, 2)), (8, 32, (8, 2))):
        g = vnni._geometry(vnni.VNNI, 7, ow, 64, k, 1, 1, (1, 1), (1, 1))
        assert (g["TT"], g["NV"]) == (tt, nv), (ow, k)
    g = vnni._geometry(vnni.PMADDWD, 7, 7, 64, 64, 1, 1, (1, 1), (1, 1))
    assert (g["TT"], g["NV"]) == (7, 1)


def test_narrow_images_take_tiles_of_whole_rows(monkeypatch):
    """Where the tiles within a row would hold fewer than 12 accumulators (rows of 3, 5 or 8
    columns), a tile is R whole rows x NV vectors, up to 12 pixels and 24 accumulators
    (ResNet50 at 96x96, whose last stage is 3 x 3: 3.03 -> 2.44-2.66 ms a call, `litert`,
    Zen 5); 512-bit flavors only (AVX2 has 16 registers); QDIALECT_VNNI_ROWS=0 turns it off."""
    from tvm_bridge import vnni

    for (oh, ow, k), (rows, tt, nv) in (((3, 3, 512), (3, 9, 2)), ((6, 3, 48), (2, 6, 3)), ((5, 5, 32), (1, 5, 2)),
                                        ((25, 5, 64), (1, 5, 2)), ((7, 8, 32), (1, 8, 2))):
        g = vnni._geometry(vnni.VNNI, oh, ow, 64, k, 1, 1, (1, 1), (1, 1))
        assert (g["ROWS"], g["TT"], g["NV"], g["OWT"]) == (rows, tt, nv, 1), (oh, ow, k)
    for oh, ow, k in ((6, 6, 64), (7, 7, 64), (24, 24, 64)):  # 12 accumulators or more within a row
        assert vnni._geometry(vnni.VNNI, oh, ow, 64, k, 1, 1, (1, 1), (1, 1))["ROWS"] is None
    assert vnni._geometry(vnni.PMADDWD, 3, 3, 64, 64, 1, 1, (1, 1), (1, 1))["ROWS"] is None
    monkeypatch.setenv(vnni.ROWS_ENV, "0")
    assert vnni._geometry(vnni.VNNI, 3, 3, 64, 512, 1, 1, (1, 1), (1, 1))["ROWS"] is None


@pytest.mark.parametrize("name", FLAVORS)
@pytest.mark.parametrize("wval", [-128, 127])
def test_dot_extremes(wval, name):
    x = np.full((1, 6, 6, 16), -128, np.int8)
    x[0, ::2, ::3] = 127
    wt = np.full((16, 3, 3, 16), wval, np.int8)
    got = run_kernel(x, wt, (1, 1), (1, 1), name)
    np.testing.assert_array_equal(got, reference(x, wt, (1, 1), (1, 1)))


@pytest.mark.parametrize("name", FLAVORS)
def test_native_kernel_is_the_instruction(name):
    """Compiled for a CPU that has it (no need to run it), the native kernel's inner loop
    is the instruction: `vpdpbusd` for VNNI, `vpmaddwd` on ymm or zmm registers."""
    from tvm import relax

    from tvm_bridge import vnni
    from tvm_bridge.compile import as_target
    from tvm_bridge.vnni import emit_conv2d

    f = {"vnni": vnni.VNNI, "pmaddwd": vnni.PMADDWD, "pmaddwd512": vnni.PMADDWD_512}[name]
    bb = relax.BlockBuilder()
    xv = relax.Var("x", relax.TensorType([1, 8, 8, 16], "int8"))
    with bb.function("main", [xv]):
        with bb.dataflow():
            out = bb.emit_output(emit_conv2d(bb, xv, [1, 8, 8, 16], np.ones((32, 3, 3, 16), np.int8), (1, 1),
                                             (1, 1), flavor=f))
        bb.emit_func_output(out)
    ex = tvm.compile(bb.get(), target=as_target(f"llvm -mcpu={FEATURES[name][1]}"))

    asm = assembly(ex)
    want = {"vnni": "vpdpbusd\t%zmm", "pmaddwd": "vpmaddwd\t%ymm", "pmaddwd512": "vpmaddwd\t%zmm"}[name]
    assert asm.count(want) >= 2, f"{want!r} not in the {name} kernel's assembly"


def test_flavor_of_the_target():
    from tvm_bridge import vnni
    from tvm_bridge.compile import as_target

    assert vnni.target_flavor(as_target("llvm -mcpu=cascadelake")) is vnni.VNNI
    assert vnni.target_flavor(as_target("llvm -mcpu=skylake-avx512")) is vnni.PMADDWD_512
    assert vnni.target_flavor(as_target("llvm -mcpu=znver3")) is vnni.PMADDWD
    assert vnni.target_flavor(as_target("llvm -mcpu=haswell")) is vnni.PMADDWD
    assert vnni.target_flavor(as_target("llvm -mcpu=nehalem")) is None  # SSE only: the generic path


def test_pmaddwd_only_where_no_sum_can_leave_int32():
    """vpmaddwd's accumulation is an `nsw` add: the flavor refuses a convolution whose
    products could add up to more than 2^30 (C KH KW 2^14), and emit_conv2d refuses a start
    value (bias, folded constants) over 2^30 before emitting anything."""
    from tvm import relax

    from tvm_bridge import vnni

    assert vnni.applicable([1, 8, 8, 7281], np.zeros((16, 3, 3, 7281), np.int8), "int8", "int8", "int32",
                           vnni.PMADDWD)   # 7281 * 9 * 2^14 < 2^30
    assert not vnni.applicable([1, 8, 8, 7282], np.zeros((16, 3, 3, 7282), np.int8), "int8", "int8", "int32",
                               vnni.PMADDWD)
    assert vnni.applicable([1, 8, 8, 7282], np.zeros((16, 3, 3, 7282), np.int8), "int8", "int8", "int32",
                           vnni.VNNI)      # vpdpbusd wraps like linalg
    bb = relax.BlockBuilder()
    xv = relax.Var("x", relax.TensorType([1, 4, 4, 8], "int8"))
    with bb.function("main", [xv]):
        with pytest.raises(vnni.NotApplicable, match="over 2"):
            vnni.emit_conv2d(bb, xv, [1, 4, 4, 8], np.ones((8, 1, 1, 8), np.int8), (1, 1), (1, 1),
                             init=(1 << 30) + 1, flavor=vnni.PMADDWD)
        out = vnni.emit_conv2d(bb, xv, [1, 4, 4, 8], np.ones((8, 1, 1, 8), np.int8), (1, 1), (1, 1),
                               init=1 << 30, flavor=vnni.PMADDWD)
        bb.emit_func_output(out)


def test_vnni_applicability():
    from tvm_bridge.vnni import applicable

    w = np.zeros((16, 3, 3, 8), np.int8)
    assert applicable([1, 8, 8, 8], w, "int8", "int8", "int32")
    assert not applicable([1, 8, 8, 8], None, "int8", "int8", "int32")            # weights not constant
    assert applicable([1, 8, 8, 3], np.zeros((16, 3, 3, 3), np.int8), "int8", "int8", "int32")  # C padded
    assert applicable([1, 8, 8, 8], np.zeros((8, 3, 3, 8), np.int8), "int8", "int8", "int32")       # K = 8
    assert not applicable([1, 8, 8, 8], np.zeros((12, 3, 3, 8), np.int8), "int8", "int8", "int32")  # K % 8
    assert not applicable([1, 8, 8, 8], w, "int16", "int8", "int32")             # 16x8
    assert not applicable([2, 8, 8, 8], w, "int8", "int8", "int32")              # batch 2


def _epilogue_tflite() -> bytes:
    """conv 1x1 (16 -> 32, per-channel weights, relu6) -> conv 1x1 (32 -> 16) -> ADD with the
    input (a residual) -> depthwise 3x3 SAME (its input pad follows the add), as a TFLite
    model: the convolutions' requantizations, the residual add (whose other input is
    rescaled after the convolution) and the pad are all epilogue candidates."""
    from tests.tflite_writer import TensorSpec, build_model

    rng = np.random.default_rng(7)

    def w(shape, axis, name):
        n = shape[axis]
        return TensorSpec(shape, "int8", scale=list(rng.uniform(0.002, 0.02, n)), zero_point=[0] * n,
                          quantized_dimension=axis, data=rng.integers(-127, 128, shape).astype(np.int8), name=name)

    def b(n, in_scale, w_spec, name):
        return TensorSpec((n,), "int32", scale=[in_scale * s for s in w_spec.scale], zero_point=[0] * n,
                          data=rng.integers(-900, 900, n).astype(np.int32), name=name)

    x = TensorSpec((1, 8, 8, 16), "int8", scale=0.05, zero_point=-3, name="x")
    w1 = w((32, 1, 1, 16), 0, "w1")
    b1 = b(32, 0.05, w1, "b1")
    y = TensorSpec((1, 8, 8, 32), "int8", scale=0.03, zero_point=5, name="y")
    w2 = w((16, 1, 1, 32), 0, "w2")
    b2 = b(16, 0.03, w2, "b2")
    z = TensorSpec((1, 8, 8, 16), "int8", scale=0.05, zero_point=-3, name="z")
    s = TensorSpec((1, 8, 8, 16), "int8", scale=0.03, zero_point=5, name="s")
    wd = w((1, 3, 3, 16), 3, "wd")
    bd = b(16, 0.03, wd, "bd")
    d = TensorSpec((1, 8, 8, 16), "int8", scale=0.05, zero_point=-3, name="d")
    tensors = [x, w1, b1, y, w2, b2, z, s, wd, bd, d]
    conv = {"padding": "SAME", "stride_w": 1, "stride_h": 1}
    ops = [("CONV_2D", [0, 1, 2], [3], {**conv, "fused_activation_function": "RELU6"}),
           ("CONV_2D", [3, 4, 5], [6], conv),
           ("ADD", [0, 6], [7], {}),
           ("DEPTHWISE_CONV_2D", [7, 8, 9], [10], {**conv, "depth_multiplier": 1})]
    return build_model(ops, tensors, inputs=[0], outputs=[10])


@pytest.mark.parametrize("name", FLAVORS)
@pytest.mark.parametrize("rounding", ["tflite", "litert"])
def test_dot_fused_epilogues_equal_litert(rounding, name, tmp_path):
    """Every epilogue fuses into its dot-product kernel (int8 results, the pad written in
    place, no separate i32 tensor), and the result equals LiteRT: its reference kernels
    under `tflite`, its default (XNNPACK) interpreter under `litert`."""
    from tvm import relax

    from tests.tflite_writer import run_tflite
    from tvm_bridge.compile import compile_module
    from tvm_bridge.translate import translate

    model = _epilogue_tflite()
    lowered = lowered_tflite(model, rounding, tmp_path, "epilogue.tflite")
    mod, _ = translate(lowered(), dot=flavor(name))
    calls = [bd.value for bd in mod["main"].body.blocks[0].bindings
             if isinstance(bd.value, relax.Call) and f"{name}_conv2d" in str(bd.value.args[0])]
    # the second kernel ends in the residual add and writes the depthwise's padded input
    assert [([int(v) for v in c.ty.shape], str(c.ty.dtype)) for c in calls] == \
        [([1, 8, 8, 32], "int8"), ([1, 10, 10, 16], "int8")]
    built = compile_module(lowered(), dot=flavor(name))
    rng = np.random.default_rng(0)
    for _ in range(4):
        x = rng.integers(-128, 128, (1, 8, 8, 16)).astype(np.int8)
        (want,) = run_tflite(model, [x], reference=rounding == "tflite")
        got = built(x)[0]
        assert int(np.count_nonzero(got != want)) == 0, f"{np.count_nonzero(got != want)} of {want.size} differ"


def _conv24_tflite() -> bytes:
    """conv 3x3 SAME, 16 -> 24 channels (ResNet's and MobileNetV2's 24-channel layers),
    per-channel weights, relu6, on 8x8 (tiles of several columns)."""
    from tests.tflite_writer import TensorSpec, build_model

    rng = np.random.default_rng(24)
    n = 24
    w = TensorSpec((n, 3, 3, 16), "int8", scale=list(rng.uniform(0.002, 0.02, n)), zero_point=[0] * n,
                   quantized_dimension=0, data=rng.integers(-127, 128, (n, 3, 3, 16)).astype(np.int8))
    b = TensorSpec((n,), "int32", scale=[0.05 * s for s in w.scale], zero_point=[0] * n,
                   data=rng.integers(-2000, 2000, n).astype(np.int32))
    tensors = [TensorSpec((1, 8, 8, 16), "int8", 0.05, -3), w, b, TensorSpec((1, 8, 8, n), "int8", 0.04, -20)]
    ops = [("CONV_2D", [0, 1, 2], [3], {"padding": "SAME", "stride_w": 1, "stride_h": 1,
                                        "fused_activation_function": "RELU6"})]
    return build_model(ops, tensors, inputs=[0], outputs=[3])


@pytest.mark.parametrize("rounding", ["tflite", "litert"])
def test_24_channels_take_a_512_and_a_256_bit_vector(rounding, tmp_path):
    """On the 512-bit flavor a block of 24 channels is a 16-lane and an 8-lane vector, in the
    accumulation (one `vpdpbusd` on zmm and one on ymm per step, not three on ymm: resnet_h
    0.156 -> 0.136 ms `tflite`, 0.124 -> 0.108 `litert`, Zen 5) and in the epilogue (its
    requantization constants in pair order per piece), with LiteRT's bits."""
    from tests.tflite_writer import run_tflite
    from tvm_bridge.compile import compile_module
    from tvm_bridge.translate import translate

    model = _conv24_tflite()
    lowered = lowered_tflite(model, rounding, tmp_path, "conv24.tflite")
    mod, _ = translate(lowered(), dot=flavor("vnni"))
    (kernel,) = [f.script() for gv, f in mod.functions.items() if "vnni_conv2d" in gv.name_hint]
    if not flavor("vnni").emulate:
        assert "vpdpbusd.512" in kernel and "vpdpbusd.256" in kernel
    built = compile_module(lowered(), dot=flavor("vnni"), cache=False)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.integers(-128, 128, (1, 8, 8, 16)).astype(np.int8)
        (want,) = run_tflite(model, [x], reference=rounding == "tflite")
        got = built(x)[0]
        assert int(np.count_nonzero(got != want)) == 0


def test_pair_twins_per_piece():
    """The pair-order copies of a 24-channel block laid out per piece (16 + 8): each
    piece's even channels, then its odd ones."""
    from tvm_bridge.epilogue import Param, pair_twins

    values = np.arange(48, dtype=np.int64)  # two blocks of 24
    p = Param(kind="channel", dtype="int64", value=values, shape=(48,))
    ((_, twin),) = pair_twins([p], 24, [(0, 16), (16, 8)])
    block = [*range(0, 16, 2), *range(1, 16, 2), *range(16, 24, 2), *range(17, 24, 2)]
    assert twin.tolist() == block + [c + 24 for c in block]


@pytest.mark.parametrize("name", FLAVORS)
def test_epilogue_works_one_register_at_a_time(name, tmp_path):
    """The `tflite` profile's epilogue of a channel block wider than one register (32
    channels of 16 lanes on VNNI, 16 of 8 on AVX2) is computed a register at a time: its
    requantization's 64-bit products are in vectors of half a register's lanes (int64x8 or
    int64x4), never of the whole block's (LLVM split those unevenly and rebuilt spilled
    constants from 8-byte pieces: resnet_h 0.260 -> 0.244 ms).  The bits are
    test_dot_fused_epilogues_equal_litert's."""
    from tvm_bridge.translate import translate
    from tvm_bridge.vnni import epilogue_width

    lowered = lowered_tflite(_epilogue_tflite(), "tflite", tmp_path, "epilogue.tflite")
    mod, _ = translate(lowered(), dot=flavor(name))
    lanes = 16 if flavor(name).max_lanes == 16 else 8
    assert epilogue_width(lanes, 2 * lanes, 4) == lanes and epilogue_width(8, 12, 4) == 12
    assert epilogue_width(lanes, 2 * lanes, 1) == 2 * lanes  # (one column: the whole block)
    kernels = [f.script() for gv, f in mod.functions.items() if f"{name}_conv2d" in gv.name_hint]
    assert kernels and all(f"int64x{lanes // 2}" in k and f"int64x{lanes}" not in k for k in kernels)


@pytest.mark.parametrize("fname", FLAVORS)
@pytest.mark.parametrize("name", ["mlp_act", "cnn_small", "mobilenetv2_tiny", "ds_cnn_kws"])
def test_zoo_dot_kernels_end_in_int8(name, fname):
    """In the zoo, every dot-product kernel carries its epilogue: convolutions, fully
    connected layers (through their [1, 1, B, K] -> [B, K] collapse) and residual adds all
    write int8, never an i32 tensor for a separate kernel.  (A translation: nothing runs.
    Bit-exactness of the host's builds: tests/tvm_bridge/test_zoo_tvm.py.)"""
    from pathlib import Path

    from tvm import relax

    from transforms import pipelines
    from tvm_bridge.run_cli import load_module
    from tvm_bridge.translate import translate

    module = load_module(Path(__file__).resolve().parents[2] / "models" / "zoo" / f"{name}.tflite", 1)
    pipelines.lower_to_l3(module)
    mod, _ = translate(module, dot=flavor(fname))
    calls = [b.value for b in mod["main"].body.blocks[0].bindings
             if isinstance(b.value, relax.Call) and f"{fname}_conv2d" in str(b.value.args[0])]
    assert calls
    assert all(str(c.ty.dtype) == "int8" for c in calls), [str(c.ty) for c in calls]


@pytest.mark.parametrize("name", FLAVORS)
def test_dot_epilogue_that_cannot_be_built_falls_back(name, tmp_path, monkeypatch):
    """An epilogue the kernel cannot take leaves the bare dot-product convolution (i32 sums)
    and the chain translated op by op: still bit-exact with LiteRT's reference kernels."""
    from tests.tflite_writer import run_tflite
    from tvm_bridge import epilogue
    from tvm_bridge.compile import compile_module

    def refuse(self, *args, **kwargs):
        raise RuntimeError("this epilogue cannot be built")

    monkeypatch.setattr(epilogue.Epilogue, "expr", refuse)
    model = _epilogue_tflite()
    built = compile_module(lowered_tflite(model, "tflite", tmp_path, "epilogue.tflite")(), dot=flavor(name))
    x = np.random.default_rng(1).integers(-128, 128, (1, 8, 8, 16)).astype(np.int8)
    (want,) = run_tflite(model, [x], reference=True)
    assert int(np.count_nonzero(built(x)[0] != want)) == 0


def _padded_conv_tflite(c: int, stride: int, dilation: int, zero_point: int) -> bytes:
    """One CONV_2D with SAME padding on a 9x9xC input whose zero point (the pad value) is
    `zero_point`: stride 2 pads only the bottom and right, dilation 2 two on every side."""
    from tests.tflite_writer import TensorSpec, build_model

    rng = np.random.default_rng(c * 10 + stride + dilation)
    x = TensorSpec((1, 9, 9, c), "int8", scale=0.05, zero_point=zero_point, name="x")
    scales = list(rng.uniform(0.002, 0.02, 16))
    w = TensorSpec((16, 3, 3, c), "int8", scale=scales, zero_point=[0] * 16, quantized_dimension=0,
                   data=rng.integers(-127, 128, (16, 3, 3, c)).astype(np.int8), name="w")
    b = TensorSpec((16,), "int32", scale=[0.05 * s for s in scales], zero_point=[0] * 16,
                   data=rng.integers(-900, 900, 16).astype(np.int32), name="b")
    out = -(-9 // stride)
    y = TensorSpec((1, out, out, 16), "int8", scale=0.08, zero_point=4, name="y")
    options = {"padding": "SAME", "stride_w": stride, "stride_h": stride, "dilation_w_factor": dilation,
               "dilation_h_factor": dilation}
    return build_model([("CONV_2D", [0, 1, 2], [3], options)], [x, w, b, y], inputs=[0], outputs=[3])


@pytest.mark.parametrize("name", FLAVORS)
@pytest.mark.parametrize("c,stride,dilation", [(3, 2, 1), (8, 1, 1), (3, 1, 2)],
                         ids=["C3-stride2", "C8", "C3-dilation2"])
def test_dot_kernel_stages_its_input_pad(c, stride, dilation, name, tmp_path):
    """A convolution whose input is padded by a tensor.pad (the model's input, SAME padding)
    stages the pad with its activations: one kernel, no pad kernel before it, and the
    border holds the input's zero point (-7: a pad of 0 would change the border outputs).
    Covers the kernel's three stagings (the (kw, c) fold, C a multiple of the group, C
    padded to it).  Reference: LiteRT's reference kernels."""
    from tvm import relax

    from tests.tflite_writer import run_tflite
    from tvm_bridge.compile import compile_module
    from tvm_bridge.translate import translate

    model = _padded_conv_tflite(c, stride, dilation, -7)
    lowered = lowered_tflite(model, "tflite", tmp_path, "padded.tflite")
    mod, _ = translate(lowered(), dot=flavor(name))
    kernels = [str(bd.value.args[0]) for bd in mod["main"].body.blocks[0].bindings
               if isinstance(bd.value, relax.Call) and "call_tir" in str(bd.value.op)]
    assert len(kernels) == 1 and f"{name}_conv2d" in kernels[0], kernels
    built = compile_module(lowered(), dot=flavor(name))
    rng = np.random.default_rng(1)
    for x in (rng.integers(-128, 128, (1, 9, 9, c)).astype(np.int8), np.full((1, 9, 9, c), 127, np.int8)):
        (want,) = run_tflite(model, [x], reference=True)
        got = built(x)[0]
        assert int(np.count_nonzero(got != want)) == 0, f"{np.count_nonzero(got != want)} of {want.size} differ"


def test_input_pad_also_returned_is_materialized(tmp_path):
    """An explicit PAD (uneven: 1/2 rows, 2/1 columns) feeding a VALID convolution and also a
    model output: the convolution stages the pad itself, the output still gets the padded
    tensor (the pad kernel emitted where it is needed).  Against LiteRT's reference kernels."""
    from tvm import relax

    from tests.tflite_writer import TensorSpec, build_model, run_tflite
    from tvm_bridge.compile import compile_module
    from tvm_bridge.translate import translate

    rng = np.random.default_rng(5)
    scales = list(rng.uniform(0.002, 0.02, 16))
    tensors = [TensorSpec((1, 6, 6, 8), "int8", scale=0.05, zero_point=-7),
               TensorSpec((4, 2), "int32", data=np.array([[0, 0], [1, 2], [2, 1], [0, 0]], np.int32)),
               TensorSpec((1, 9, 9, 8), "int8", scale=0.05, zero_point=-7),
               TensorSpec((16, 3, 3, 8), "int8", scale=scales, zero_point=[0] * 16, quantized_dimension=0,
                          data=rng.integers(-127, 128, (16, 3, 3, 8)).astype(np.int8)),
               TensorSpec((16,), "int32", scale=[0.05 * s for s in scales], zero_point=[0] * 16,
                          data=rng.integers(-500, 500, 16).astype(np.int32)),
               TensorSpec((1, 7, 7, 16), "int8", scale=0.1, zero_point=3)]
    model = build_model([("PAD", [0, 1], [2], {}),
                         ("CONV_2D", [2, 3, 4], [5], {"padding": "VALID", "stride_w": 1, "stride_h": 1})],
                        tensors, [0], [2, 5])
    lowered = lowered_tflite(model, "tflite", tmp_path, "pad_out.tflite")
    host = flavor("pmaddwd")
    mod, _ = translate(lowered(), dot=host)
    calls = [bd.value for bd in mod["main"].body.blocks[0].bindings if isinstance(bd.value, relax.Call)]
    conv = next(c for c in calls if "pmaddwd_conv2d" in str(c.args[0]))
    assert [int(d) for d in conv.args[1].fields[0].ty.shape] == [1, 6, 6, 8]  # the unpadded input
    built = compile_module(lowered(), dot=host)
    for _ in range(3):
        x = rng.integers(-128, 128, (1, 6, 6, 8)).astype(np.int8)
        for got, want in zip(built(x), run_tflite(model, [x], reference=True)):
            assert int(np.count_nonzero(got != want)) == 0


@pytest.mark.parametrize("c", [8, 3])  # (C = 3: the folded staging of few channels)
@pytest.mark.parametrize("name", FLAVORS)
def test_dot_kernel_rows_in_parallel(name, c, monkeypatch):
    """Above DOT_PARALLEL_MIN_MACS the output rows (and the staging's input rows) are
    parallel loops (accumulators per thread); on TVM's pool at 2 threads (as many as it
    allows here) the sums are exact."""
    from tvm_bridge import vnni
    from tvm_bridge.cpu import set_threads

    monkeypatch.setattr(vnni, "DOT_PARALLEL_MIN_MACS", 1)
    vnni.clear_caches()
    h, w, k, kh, kw = 14, 12, 32, 3, 3
    prim = vnni._bare_kernel(flavor(name), h, w, c, k, kh, kw, (1, 1), (1, 1))
    assert prim.script().count("T.parallel") == 2
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (1, h, w, c)).astype(np.int8)
    wt = rng.integers(-128, 128, (k, kh, kw, c)).astype(np.int8)
    before = int(tvm.get_global_func("runtime.NumThreads")())
    try:
        set_threads(2)
        got = run_kernel(x, wt, (1, 1), (1, 1), name)
    finally:
        set_threads(before)
        vnni.clear_caches()
    np.testing.assert_array_equal(got, reference(x, wt, (1, 1), (1, 1)))
    monkeypatch.setattr(vnni, "DOT_PARALLEL_MIN_MACS", 1 << 40)
    assert "T.parallel" not in vnni._bare_kernel(flavor(name), h, w, c, k, kh, kw, (1, 1), (1, 1)).script()
    vnni.clear_caches()


def test_awkward_shapes_take_wide_tiles_and_tails(monkeypatch):
    """Rows whose dividing tiles hold fewer than 8 accumulators take tiles with a tail (a 1x1
    stride-1 layer: the image's pixels as one sequence, SEQ; else along each row, LIMIT = OW),
    and a K that is an odd multiple of 8 takes 16 + 8-lane blocks in whole-row tiles
    (Xception's 728 channels at 6x6: one pixel a tile before, 0.161 -> 0.049 ms a layer;
    its 23x23 pointwise layers 0.287 -> 0.087 ms, Zen 5).  QDIALECT_VNNI_TAILS=0: no tails."""
    from tvm_bridge import vnni

    g = vnni._geometry(vnni.VNNI, 6, 6, 728, 728, 1, 1, (1, 1), (1, 1))
    assert (g["ROWS"], g["TT"], g["NV"], g["L"], g["LIMIT"]) == (1, 6, 7, 8, None)
    g = vnni._geometry(vnni.VNNI, 23, 23, 256, 256, 1, 1, (1, 1), (1, 1))
    assert g["SEQ"] and (g["TT"], g["NV"], g["LIMIT"]) == (12, 2, 529)
    assert g["XU"][0] > 23  # spare rows for the last tile's overhang
    g = vnni._geometry(vnni.VNNI, 15, 15, 8, 32, 3, 3, (1, 1), (1, 1))
    assert not g["SEQ"] and (g["LIMIT"], g["OWT"]) == (13, 2) and g["TT"] * g["OWT"] >= 13
    assert vnni._geometry(vnni.PMADDWD, 23, 23, 256, 256, 1, 1, (1, 1), (1, 1))["LIMIT"] is None
    monkeypatch.setenv(vnni.TAILS_ENV, "0")
    assert vnni._geometry(vnni.VNNI, 23, 23, 256, 256, 1, 1, (1, 1), (1, 1))["LIMIT"] is None


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", [(10, 10, 512, 256, 3, 3, (1, 1), (1, 1)), (6, 6, 512, 256, 3, 3, (1, 1), (1, 1)),
                                  (13, 13, 2048, 1024, 1, 1, (1, 1), (1, 1)), (1, 1, 2048, 1024, 1, 1, (1, 1), (1, 1))],
                         ids=["8x8", "rows", "seq", "one-tile"])
@pytest.mark.parametrize("name", FLAVORS)
def test_large_weights_take_the_channel_blocks_outermost(case, name, threads, monkeypatch):
    """Weights beyond OUTER_MIN_WEIGHTS over few pixel tiles (VGG16's last stages at 64x64)
    or one (a fully connected layer): each channel block's weights are read once for all the
    tiles, the blocks (not the rows) shared among the threads; the sums are the reference's
    at 1 and 2 threads.  QDIALECT_VNNI_BLOCKS_OUTER=0 keeps the rows outermost (and a
    one-tile kernel serial)."""
    from tvm_bridge import vnni
    from tvm_bridge.cpu import set_threads

    monkeypatch.setattr(vnni, "DOT_PARALLEL_MIN_MACS", 1 << 20)  # (the one-tile case: 2 M MACs)
    h, w, c, k, kh, kw, strides, dilations = case
    f = flavor(name)
    g = vnni._geometry(f, h, w, c, k, kh, kw, strides, dilations)
    assert g["BLOCKS_OUTER"] and g["PARALLEL"] and g["K16"] >= vnni.OUTER_MIN_BLOCKS
    vnni.clear_caches()
    script = vnni._bare_kernel(f, h, w, c, k, kh, kw, strides, dilations).script()
    assert "for ko in T.parallel" in script, script
    rng = np.random.default_rng(sum(case[:6]))
    x = rng.integers(-128, 128, (1, h, w, c)).astype(np.int8)
    wt = rng.integers(-128, 128, (k, kh, kw, c)).astype(np.int8)
    before = int(tvm.get_global_func("runtime.NumThreads")())
    try:
        set_threads(threads)
        got = run_kernel(x, wt, strides, dilations, name)
    finally:
        set_threads(before)
        vnni.clear_caches()
    np.testing.assert_array_equal(got, reference(x, wt, strides, dilations))
    monkeypatch.setenv(vnni.BLOCKS_OUTER_ENV, "0")
    assert not vnni._geometry(f, h, w, c, k, kh, kw, strides, dilations)["BLOCKS_OUTER"]
    assert "for ko in T.parallel" not in vnni._bare_kernel(f, h, w, c, k, kh, kw, strides, dilations).script()
    vnni.clear_caches()


def test_small_weights_keep_the_rows_outermost():
    """Weights that stay in L2 between pixel tiles (VGG16's first layers: 37 KB over 64 rows;
    ResNet50V2's 590 KB 3x3 layers) keep the rows outermost and parallel: the activations are
    read once."""
    from tvm_bridge import vnni

    assert not vnni._geometry(vnni.VNNI, 66, 66, 64, 64, 3, 3, (1, 1), (1, 1))["BLOCKS_OUTER"]
    assert not vnni._geometry(vnni.VNNI, 34, 34, 128, 128, 3, 3, (1, 1), (1, 1))["BLOCKS_OUTER"]
    assert not vnni._geometry(vnni.VNNI, 8, 8, 256, 256, 3, 3, (1, 1), (1, 1))["BLOCKS_OUTER"]
    # (large weights over a large image in 16-bit words: the activations dominate the traffic)
    assert not vnni._geometry(vnni.PMADDWD, 7, 7, 2048, 512, 1, 1, (1, 1), (1, 1))["BLOCKS_OUTER"]


@pytest.mark.parametrize("case", [CASES[0], CASES[3], CASES[-5]], ids=["8cols", "k48", "seq"])
def test_tap_major_weights_equal_the_int64_reference(case, monkeypatch):
    """QDIALECT_VNNI_BLOCK_MAJOR=0, the weights in the tap-major order the AMX tiles keep: still
    the reference's sums (the default, block-major, is every other case here)."""
    from tvm_bridge import vnni

    monkeypatch.setenv(vnni.BLOCK_MAJOR_ENV, "0")
    vnni.clear_caches()
    h, w, c, k, kh, kw, strides, dilations = case
    assert not vnni._geometry(vnni.VNNI, h, w, c, k, kh, kw, strides, dilations)["BLOCK_MAJOR"]
    rng = np.random.default_rng(sum(case[:6]))
    x = rng.integers(-128, 128, (1, h, w, c)).astype(np.int8)
    wt = rng.integers(-128, 128, (k, kh, kw, c)).astype(np.int8)
    try:
        got = run_kernel(x, wt, strides, dilations, "vnni")
    finally:
        vnni.clear_caches()
    np.testing.assert_array_equal(got, reference(x, wt, strides, dilations))


#: block-diagonal weights (a grouped convolution made dense by the TFLite importer):
#: (H, W, C, K, KH, KW, strides, groups, whether the 512-bit VNNI kernel skips the zeros)
GROUPED = [
    (10, 10, 64, 64, 3, 3, (1, 1), 4, True),     # groups of 16 x 16: a 16-lane block reads 16 of 64
    (9, 9, 32, 32, 3, 3, (2, 2), 8, True),       # groups of 4 x 4: a block of 16 spans 4 groups, 16 of 32
    (8, 8, 48, 96, 1, 1, (1, 1), 3, True),       # groups of 32 outputs x 16 inputs: blocks of 32
    (7, 7, 128, 128, 3, 3, (1, 1), 8, True),     # rows of 5: whole-row tiles of one 16-lane vector
    (10, 10, 16, 32, 3, 3, (1, 1), 8, True),     # groups of 4 outputs x 2 inputs: 8 inputs a block
    (12, 12, 24, 48, 3, 3, (1, 1), 2, False),    # groups of 24 outputs: no block nests, all 24 read
]


@pytest.mark.parametrize("case", GROUPED, ids=[f"{c[2]}-{c[3]}-g{c[7]}-{c[4]}x{c[5]}-s{c[6][0]}" for c in GROUPED])
@pytest.mark.parametrize("name", FLAVORS)
def test_block_diagonal_weights_equal_the_int64_reference(case, name):
    """The kernel reduces each channel block over its groups' input channels alone (`GROUP`);
    the sums are the dense convolution's, zeros and all."""
    from tvm_bridge import vnni

    h, w, c, k, kh, kw, strides, n, skips = case
    rng = np.random.default_rng(sum(case[:6]) + n)
    x = rng.integers(-128, 128, (1, h, w, c)).astype(np.int8)
    wt = np.zeros((k, kh, kw, c), np.int8)
    kg, cg = k // n, c // n
    for j in range(n):
        wt[j * kg:(j + 1) * kg, ..., j * cg:(j + 1) * cg] = rng.integers(-128, 128, (kg, kh, kw, cg))
    assert vnni.block_groups(wt) == (kg, cg)
    g = vnni._geometry(flavor(name), h, w, c, k, kh, kw, strides, (1, 1), (kg, cg))
    if name == "vnni":
        assert bool(g.get("GROUP")) == skips
    if g.get("GROUP"):
        assert g["C4"] * flavor(name).group < c
    got = run_kernel(x, wt, strides, (1, 1), name)
    np.testing.assert_array_equal(got, reference(x, wt, strides, (1, 1)))


def test_block_groups_finds_the_finest_grouping():
    from tvm_bridge.vnni import block_groups

    w = np.zeros((32, 3, 3, 16), np.int8)
    for j in range(4):
        w[j * 8:(j + 1) * 8, ..., j * 4:(j + 1) * 4] = 1
    assert block_groups(w) == (8, 4)
    w[0, 1, 1, 4] = 1  # one weight outside its group: 2 groups still hold
    assert block_groups(w) == (16, 8)
    w[0, 0, 0, 15] = -1  # output 0 reads the last input: dense
    assert block_groups(w) is None
    assert block_groups(np.ones((16, 1, 1, 16), np.int8)) is None


#: (H, W, C, K, KH, KW): ResNet101_64's 3x3 layers of 256 channels at 4x4 (590 KB of weights
#: from memory in the call) and of 512 at 2x2 (2.4 MB, one tile of the whole image)
PREFETCH_CASES = [(6, 6, 256, 256, 3, 3), (4, 4, 512, 512, 3, 3)]


@pytest.mark.parametrize("case", PREFETCH_CASES, ids=["4x4", "2x2"])
@pytest.mark.parametrize("name", FLAVORS)
def test_weights_prefetched_ahead_equal_the_reference(case, name, monkeypatch):
    """The reduction prefetches the packed weights PREFETCH_BYTES ahead, one `prefetcht0`
    per 64-byte line a step reads (clamped to the last weight): the sums are still the
    reference's, and QDIALECT_VNNI_PREFETCH=0 builds the kernel without."""
    from tvm_bridge import vnni

    h, w, c, k, kh, kw = case
    f = flavor(name)
    g = vnni._geometry(f, h, w, c, k, kh, kw, (1, 1), (1, 1))
    assert g["PREFETCH"] == vnni.PREFETCH_BYTES
    vnni.clear_caches()
    script = vnni._bare_kernel(f, h, w, c, k, kh, kw, (1, 1), (1, 1)).script()
    lines = -(-g["NV"] * g["L"] * f.group // 64)  # (a step's weights, in 64-byte lines: 1 for 32 bytes)
    assert script.count("T.prefetch(") == lines, script
    assert f"+ {vnni.PREFETCH_BYTES}, {vnni._weight_bytes(g) - 1})" in script, script
    rng = np.random.default_rng(sum(case))
    x = rng.integers(-128, 128, (1, h, w, c)).astype(np.int8)
    wt = rng.integers(-128, 128, (k, kh, kw, c)).astype(np.int8)
    try:
        got = run_kernel(x, wt, (1, 1), (1, 1), name)
    finally:
        vnni.clear_caches()
    np.testing.assert_array_equal(got, reference(x, wt, (1, 1), (1, 1)))
    monkeypatch.setenv(vnni.PREFETCH_ENV, "0")
    assert "T.prefetch" not in vnni._bare_kernel(f, h, w, c, k, kh, kw, (1, 1), (1, 1)).script()
    vnni.clear_caches()


def test_no_prefetch_where_the_accumulators_are_vectors_of_several_widths():
    """K = 24 on VNNI (a 16-lane and an 8-lane vector a pixel) and fully connected layers (one
    pixel: the epilogue reads a block of 48 or 32 channels as one vector over 16-lane steps,
    epilogue_width; their weights stream from memory at its bandwidth anyway): the
    accumulators stay in TVM's workspace (tvm_bridge/lowering.py), where a prefetch in the
    loop would have LLVM store them at every step; those kernels do not prefetch."""
    from tvm_bridge import vnni

    assert vnni._geometry(vnni.VNNI, 9, 9, 8, 24, 3, 3, (1, 1), (1, 1))["PREFETCH"] == 0
    assert vnni._geometry(vnni.VNNI, 1, 1, 64, 48, 1, 1, (1, 1), (1, 1))["PREFETCH"] == 0
    assert vnni._geometry(vnni.VNNI, 1, 1, 1024, 512, 1, 1, (1, 1), (1, 1))["PREFETCH"] == 0
    assert vnni._geometry(vnni.VNNI, 6, 6, 256, 256, 3, 3, (1, 1), (1, 1))["PREFETCH"] > 0


def _loop_blocks(asm: str) -> list[list[str]]:
    """The basic blocks of `asm` (split at labels and jumps) that branch back to their own
    label: the innermost loops."""
    import re

    blocks, label, body = [], None, []
    for line in asm.splitlines():
        m = re.match(r"^(\.?[\w.$]+):", line)
        if m:
            label, body = m.group(1), []
            continue
        body.append(line.strip())
        if label and re.match(rf"j\w+\s+{re.escape(label)}$", line.strip()):
            blocks.append(body)
            label, body = None, []
    return blocks


def test_prefetching_loop_keeps_the_accumulators_in_registers():
    """Built as our builds are (`compile.build`, the accumulators on the stack), the loop of
    ResNet101's 3x3 layer at 4x4 that prefetches holds all 16 accumulators in registers: it
    stores no vector register.  (In TVM's workspace, an `llvm.prefetch` call in the loop
    made LLVM store every accumulator at every step, 3x the time.)  Compiled for a VNNI CPU
    and read, not run."""
    from tvm import relax

    from tests.tvm_bridge.helpers import assembly
    from tvm_bridge import vnni
    from tvm_bridge.compile import as_target, build

    h, w, c, k = 6, 6, 256, 256
    bb = relax.BlockBuilder()
    xv = relax.Var("x", relax.TensorType([1, h, w, c], "int8"))
    weights = np.random.default_rng(3).integers(-128, 128, (k, 3, 3, c)).astype(np.int8)
    with bb.function("main", [xv]):
        with bb.dataflow():
            out = bb.emit_output(vnni.emit_conv2d(bb, xv, [1, h, w, c], weights, (1, 1), (1, 1), flavor=vnni.VNNI))
        bb.emit_func_output(out)
    asm = assembly(build(bb.get(), as_target("llvm -mcpu=cascadelake")))
    loops = [b for b in _loop_blocks(asm) if any(i.startswith("prefetcht0") for i in b)]
    assert loops, "no loop prefetches"
    for body in loops:
        assert sum(i.startswith("vpdpbusd") for i in body) >= 16, body
        stores = [i for i in body if i.startswith("vmov") and "%zmm" in i.split(",")[0] and "(" in i.split(",")[-1]]
        assert not stores, stores
