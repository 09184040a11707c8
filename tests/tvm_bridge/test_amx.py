"""The AMX-int8 tile convolution (tvm_bridge/amx.py).

Checked bit for bit on any CPU, twice over:

- the kernel built with its tile instructions as TIR loops (`Tiles(emulate=True)`), against
  an int64 reference for the bare convolution and against LiteRT for whole zoo models;
- the native build (for this CPU plus AMX) with only the tile instructions replaced, in its
  LLVM IR, by calls of a C emulation written from Intel's manual (amx_emulation.py,
  amx_emu.c), so that the pointers, strides, tile numbers and configuration the
  instructions get are the native code's own: a kernel on its own and a whole model, at one
  and two threads.

On a CPU with AMX the native kernel runs too; elsewhere the tests check that it compiles to
the tile instructions and that nothing selects it.
"""

from __future__ import annotations

import re
import struct
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

from tests.tvm_bridge.helpers import assembly  # noqa: E402
from tests.tvm_bridge.test_vnni import reference  # noqa: E402
from tvm_bridge import amx, vnni  # noqa: E402
from tvm_bridge.cpu import cpu_flags  # noqa: E402

HAS_AMX = {"amx_tile", "amx_int8"} <= cpu_flags()[1]


def tiles(native: bool = False):
    """The VNNI flavor with its convolutions on tiles: emulated unless `native`."""
    return replace(vnni.VNNI, tiled=amx.Tiles(emulate=not native))


def build_conv(x_shape, w, strides, dilations, flavor, target=None, parallel=False, in_pad=None):
    import contextlib

    from tvm import relax

    from tvm_bridge.compile import host_target

    bb = relax.BlockBuilder()
    xv = relax.Var("x", relax.TensorType(list(x_shape), "int8"))
    padded = list(x_shape)
    if in_pad is not None:
        (pt, pl), (pb, pr), _ = in_pad
        padded = [1, x_shape[1] + pt + pb, x_shape[2] + pl + pr, x_shape[3]]
    ctx = vnni.parallel_threshold(1) if parallel else contextlib.nullcontext()
    with ctx, bb.function("main", [xv]):
        with bb.dataflow():
            out = bb.emit_output(vnni.emit_conv2d(bb, xv, padded, w, strides, dilations, flavor=flavor,
                                                  in_pad=in_pad))
        bb.emit_func_output(out)
    mod = bb.get()
    return mod, tvm.compile(mod, target=target or host_target())


def run_conv(x, w, strides, dilations, flavor, **kw):
    from tvm import relax

    from tvm_bridge.cpu import request_amx

    if not flavor.tiled.emulate:  # (a VM made here, not by compile_module: ask Linux for the tiles)
        assert request_amx()
    mod, ex = build_conv(x.shape, w, strides, dilations, flavor, **kw)
    scripts = [f.script() for gv, f in mod.functions.items() if "conv2d" in gv.name_hint]
    assert scripts and all("TMM_" in s or "tdpbusd" in s for s in scripts), "the kernel is not the tile kernel"
    return relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.runtime.tensor(x)).numpy()


CASES = [
    # (H, W, C, K, KH, KW, strides, dilations): the pixels of a 1x1 stride-1 convolution as
    # one sequence (FLAT), the others in tiles along each output row
    (8, 8, 64, 64, 1, 1, (1, 1), (1, 1)),     # 64 pixels: 2 A tiles x 2 B tiles, one chunk of 64
    (7, 7, 32, 48, 1, 1, (1, 1), (1, 1)),     # 49 pixels: the last tile 17 of 32; K = 48: 3 C tiles of 1 A
    (3, 3, 160, 32, 1, 1, (1, 1), (1, 1)),    # 9 pixels, one A tile; C = 160: 4 chunks of 40
    (6, 6, 96, 128, 1, 1, (1, 1), (1, 1)),    # C = 96: 2 chunks of 48 bytes (B tiles of 12 rows)
    (10, 10, 16, 32, 3, 3, (1, 1), (1, 1)),   # 3x3: 8 columns in a tile of 16, 16 bytes a row
    (12, 20, 24, 16, 3, 3, (2, 2), (1, 1)),   # stride 2: A rows 2 pixels apart
    (9, 9, 20, 64, 3, 3, (1, 1), (2, 2)),     # dilation 2; C = 20 (a chunk of 20)
    (5, 40, 32, 32, 1, 3, (1, 1), (1, 1)),    # 38 columns: 2 tiles of 32, the last 6 valid
    (4, 4, 64, 16, 2, 2, (2, 2), (1, 1)),     # 2 columns, stride 2
    (8, 9, 18, 32, 3, 3, (1, 1), (1, 1)),     # C = 18: padded to 20 (VNNI would fold the kernel row)
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}x{c[1]}x{c[2]}-k{c[3]}-{c[4]}x{c[5]}-s{c[6][0]}-d{c[7][0]}"
                                             for c in CASES])
def test_tile_convolution_equals_the_int64_reference(case):
    h, w, c, k, kh, kw, strides, dilations = case
    rng = np.random.default_rng(sum(case[:6]))
    x = rng.integers(-128, 128, (1, h, w, c)).astype(np.int8)
    wt = rng.integers(-128, 128, (k, kh, kw, c)).astype(np.int8)
    got = run_conv(x, wt, strides, dilations, tiles(HAS_AMX))
    want = reference(x, wt, strides, dilations)
    assert got.shape == want.shape and int(np.count_nonzero(got != want)) == 0


@pytest.mark.parametrize("case", [(12, 12, 32, 64, 1, 1), (14, 18, 16, 32, 3, 3)], ids=["flat", "rows"])
def test_tile_convolution_in_parallel_and_with_an_input_pad(case):
    """Parallel (each thread its accumulators, tile file and configuration; a flat kernel's
    tiles in groups, the last group past the end) and staging the producer's pad."""
    h, w, c, k, kh, kw = case
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (1, h, w, c)).astype(np.int8)
    wt = rng.integers(-128, 128, (k, kh, kw, c)).astype(np.int8)
    got = run_conv(x, wt, (1, 1), (1, 1), tiles(HAS_AMX), parallel=True)
    assert int(np.count_nonzero(got != reference(x, wt, (1, 1), (1, 1)))) == 0
    pad = ((1, 1), (1, 1), -5) if kh == 3 else None
    if pad is not None:
        got = run_conv(x, wt, (1, 1), (1, 1), tiles(HAS_AMX), in_pad=pad)
        padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)), constant_values=-5)
        assert int(np.count_nonzero(got != reference(padded, wt, (1, 1), (1, 1)))) == 0


def test_geometry_blocks_and_reads_within_the_staging():
    """The blocking chosen (A tiles, C tiles, chunk) and the staging rows added for the
    pixels the last tile reads past the end."""
    def geometry(h, w, c, k, kh, kw, strides=(1, 1)):
        return vnni._geometry(tiles(), h, w, c, k, kh, kw, strides, (1, 1))

    g = geometry(7, 7, 32, 48, 1, 1)
    assert (g["FLAT"], g["MA"], g["NV"], g["CH"], g["NTILES"], g["TT"], g["KB"]) == (True, 2, 1, 32, 2, 32, 16)
    assert g["XU"] == (7 + 3, 7, 32)  # pixels 49..63 read: 15 past the end, 3 rows of 7
    g = geometry(6, 6, 96, 128, 1, 1)
    assert (g["MA"], g["NV"], g["CH"], g["K16"]) == (2, 2, 48, 4)
    g = geometry(3, 3, 160, 64, 1, 1)
    assert (g["MA"], g["NV"], g["CH"], g["XU"]) == (1, 4, 40, (3 + 3, 3, 160))  # 4 chunks of 40
    g = geometry(10, 10, 16, 32, 3, 3)
    assert (g["FLAT"], g["MA"], g["NTILES"]) == (False, 1, 1)
    # the last row's tile reads columns 0..15 of input row 7 + 2 = 9 from tap column 2: 17 of
    # a 10-pixel row, 8 past its end
    assert g["XU"] == (11, 10, 16)


def test_takes_only_what_tiles_pay_for():
    t = amx.Tiles()
    assert t.takes(56, 56, 64, 64, 1, 1, (1, 1), (1, 1))
    assert not t.takes(56, 56, 64, 24, 1, 1, (1, 1), (1, 1))  # K % 16
    assert not t.takes(56, 56, 8, 64, 3, 3, (1, 1), (1, 1))  # fewer than 16 input channels
    assert not t.takes(8, 8, 16, 16, 1, 1, (1, 1), (1, 1))  # 16 K MACs < MIN_MACS
    with pytest.raises(vnni.NotApplicable, match="K % 16"):  # asked directly, a clear refusal
        vnni._geometry(tiles(), 8, 8, 64, 24, 1, 1, (1, 1), (1, 1))


def test_selection_asks_for_qdialect_amx_and_a_target_with_amx(monkeypatch):
    from tvm_bridge.compile import as_target
    from tvm_bridge.kernels import target_flavor

    spr = as_target("llvm -mcpu=sapphirerapids")
    monkeypatch.delenv(amx.ENABLE_ENV, raising=False)
    assert target_flavor(spr) is vnni.VNNI  # off by default
    monkeypatch.setenv(amx.ENABLE_ENV, "1")
    assert target_flavor(spr).tiled == amx.Tiles()
    assert target_flavor(as_target("llvm -mcpu=graniterapids")).tiled == amx.Tiles()
    assert target_flavor(as_target("llvm -mcpu=icelake-server")) is vnni.VNNI  # VNNI, no AMX
    assert target_flavor(as_target("llvm -mcpu=znver5")) is vnni.VNNI
    assert target_flavor(as_target("llvm -mcpu=haswell")) is vnni.PMADDWD
    monkeypatch.setenv(amx.ENABLE_ENV, "off")
    assert target_flavor(spr) is vnni.VNNI
    monkeypatch.setenv(amx.ENABLE_ENV, "2")
    with pytest.raises(ValueError, match="QDIALECT_AMX='2'"):
        target_flavor(spr)


def test_native_kernel_is_the_tile_instructions_with_intels_configuration():
    """Compiled for Sapphire Rapids: the configuration loaded, the accumulators loaded and
    stored, one tdpbusd per (chunk, A tile, B tile), the tiles released; per thread in the
    parallel form.  The 64 configuration bytes are those of Intel's layout (SDM vol. 1,
    "TILECFG": palette, start row, 14 reserved bytes, 16 x bytes a row as u16, 16 x rows)."""
    import tvm_ffi
    from tvm import tirx

    spr = tvm.target.Target({"kind": "llvm", "mcpu": "sapphirerapids"})
    w = np.ones((64, 1, 1, 64), np.int8)
    mod, ex = build_conv((1, 8, 8, 64), w, (1, 1), (1, 1), tiles(native=True), target=spr)
    count = Counter(re.findall(r"^\s+(ldtilecfg|tileloadd|tdpbusd|tilestored|tilerelease)\b", assembly(ex), re.M))
    # per step of 32 pixels (2 A tiles) x 64 channels (2 B tiles), 64 input channels (one
    # chunk): 4 accumulator tiles loaded and stored, 2 + 2 operand tiles loaded, 4 tdpbusd
    # (LLVM may unroll the loop over the two steps: counts per step, not per function)
    assert count["ldtilecfg"] == count["tilerelease"] == 1
    assert count["tdpbusd"] in (4, 8) and count["tileloadd"] == 2 * count["tdpbusd"] == 2 * count["tilestored"]
    (kernel,) = [f for gv, f in mod.functions.items() if "conv2d" in gv.name_hint]
    stored = {}

    def visit(node):
        if node.buffer.name == "TILECFG":
            stored[int(node.indices[0])] = int(node.value)
        return node

    tvm_ffi.structural_map(kernel.body, (tirx.BufferStore, visit))
    colsb = [64] * 4 + [64, 64] + [64, 64] + [0] * 8  # C 0-3, A 4-5 (64 bytes), B 6-7 (16 rows of 64)
    rows = [16] * 4 + [16, 16] + [16, 16] + [0] * 8
    assert bytes(stored[i] for i in range(64)) == struct.pack("<BB14x16H16B", 1, 0, *colsb, *rows)
    # a chunk of 48 bytes: A tiles 16 x 48, B tiles 12 x 64
    mod, _ = build_conv((1, 6, 6, 96), np.ones((32, 1, 1, 96), np.int8), (1, 1), (1, 1), tiles(native=True),
                        target=spr)
    (kernel,) = [f for gv, f in mod.functions.items() if "conv2d" in gv.name_hint]
    stored.clear()
    tvm_ffi.structural_map(kernel.body, (tirx.BufferStore, visit))
    colsb = [64] * 4 + [48, 48] + [64, 64] + [0] * 8
    rows = [16] * 4 + [16, 16] + [12, 12] + [0] * 8
    assert bytes(stored[i] for i in range(64)) == struct.pack("<BB14x16H16B", 1, 0, *colsb, *rows)
    # parallel: each task configures and releases its own tiles
    _, ex = build_conv((1, 14, 18, 16), np.ones((32, 3, 3, 16), np.int8), (1, 1), (1, 1), tiles(native=True),
                       target=spr, parallel=True)
    text = assembly(ex)
    lambdas = [body for body in re.split(r"\n(?=\S+:)", text) if "tdpbusd" in body]
    assert lambdas and all("ldtilecfg" in b and "tilerelease" in b for b in lambdas)
    # qd-run's quick build (LLVM at opt-level 0) emits the same instructions
    from tvm_bridge.compile import quick_target

    _, ex = build_conv((1, 8, 8, 64), w, (1, 1), (1, 1), tiles(native=True),
                       target=quick_target("llvm -mcpu=sapphirerapids"))
    count = Counter(re.findall(r"^\s+(ldtilecfg|tileloadd|tdpbusd|tilestored|tilerelease)\b", assembly(ex), re.M))
    assert count["ldtilecfg"] == count["tilerelease"] == 1
    assert count["tdpbusd"] in (4, 8) and count["tileloadd"] == 2 * count["tdpbusd"] == 2 * count["tilestored"]


def test_this_machine(monkeypatch):
    """With AMX: Linux grants the tiles and the native kernel is the reference's bits.
    Without: nothing is asked of Linux and the host's flavor has no tiles, even asked for."""
    from tvm_bridge.compile import host_target
    from tvm_bridge.cpu import request_amx
    from tvm_bridge.kernels import target_flavor

    monkeypatch.setenv(amx.ENABLE_ENV, "1")
    if HAS_AMX:
        assert request_amx()
        assert target_flavor(host_target()).tiled == amx.Tiles()
        rng = np.random.default_rng(3)
        x = rng.integers(-128, 128, (1, 9, 9, 64)).astype(np.int8)
        wt = rng.integers(-128, 128, (64, 3, 3, 64)).astype(np.int8)
        got = run_conv(x, wt, (1, 1), (1, 1), tiles(native=True))
        assert int(np.count_nonzero(got != reference(x, wt, (1, 1), (1, 1)))) == 0
    else:
        assert not request_amx()
        assert target_flavor(host_target()).tiled is None


@pytest.mark.parametrize("profile", ["tflite", "litert"])
@pytest.mark.parametrize("name", ["mobilenetv2_tiny", "ds_cnn_kws", "cnn_small"])
def test_zoo_models_on_tiles_match_litert(name, profile, monkeypatch):
    """Every convolution the tiles can take (MIN_MACS lowered to 0 for these small models) on
    tiles, with its fused epilogue, and the model's outputs LiteRT's, bit for bit: BUILTIN_REF
    for `tflite`, XNNPACK for `litert`."""
    from pathlib import Path

    from qdialect.dialects.qnn import set_rounding
    from transforms.pipelines import lower_to_l3
    from tvm_bridge.compile import compile_module
    from tvm_bridge.run_cli import _entry_signature, litert_run, load_module, make_inputs
    from tvm_bridge.translate import translate

    monkeypatch.setattr(amx, "MIN_MACS", 0)
    path = Path(__file__).resolve().parents[2] / "models" / "zoo" / f"{name}.tflite"

    def lowered():
        module = load_module(path, batch=1)
        if profile == "litert":
            set_rounding(module, "litert")
        lower_to_l3(module)
        return module

    flavor = tiles(HAS_AMX)
    choices = []
    translate(lowered(), dot=flavor, choices=choices)
    on_tiles = [c for c in choices if c[1] == "amx_conv2d"]
    assert on_tiles and all(c[2] == "amx-int8 (tdpbusd)" + ("" if HAS_AMX else " emulated") for c in on_tiles)
    model = compile_module(lowered(), dot=flavor, cache=False)
    module = load_module(path, batch=1)
    _, in_values, _ = _entry_signature(module)
    samples = [make_inputs(in_values, seed) for seed in range(3)]
    theirs = litert_run(path.read_bytes(), samples, reference=profile == "tflite")
    compared = 0
    for sample, expected in zip(samples, theirs):
        for a, b in zip(model(*sample), expected):
            a = a.view(b.dtype).reshape(b.shape)
            assert int(np.count_nonzero(a != b)) == 0
            compared += b.size
    assert compared > 0


def _kernel_and_constants(x_shape, w, strides, dilations, flavor, parallel=False):
    """The convolution's PrimFunc (named `kernel`) and the constants it is called with."""
    import contextlib

    from tvm import relax

    bb = relax.BlockBuilder()
    xv = relax.Var("x", relax.TensorType(list(x_shape), "int8"))
    ctx = vnni.parallel_threshold(1) if parallel else contextlib.nullcontext()
    with ctx, bb.function("main", [xv]):
        with bb.dataflow():
            out = bb.emit_output(vnni.emit_conv2d(bb, xv, list(x_shape), w, strides, dilations, flavor=flavor))
        bb.emit_func_output(out)
    mod = bb.get()
    (gv,) = [g for g in mod.functions if "conv2d" in g.name_hint]
    call = next(b.value for b in mod["main"].body.blocks[0].bindings if isinstance(b.value, tvm.ir.expr.Call))
    constants = [a.value.numpy() for a in call.args[1].fields[1:]]
    return mod[gv].with_attr("global_symbol", "kernel"), constants


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}x{c[1]}x{c[2]}-k{c[3]}-{c[4]}x{c[5]}-s{c[6][0]}-d{c[7][0]}"
                                             for c in CASES])
@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_native_kernel_on_an_emulation_of_intels_instructions(case, parallel, tmp_path):
    from tests.tvm_bridge import amx_emulation
    from tvm_bridge import cpu

    h, w, c, k, kh, kw, strides, dilations = case
    rng = np.random.default_rng(sum(case[:6]))
    x = rng.integers(-128, 128, (1, h, w, c)).astype(np.int8)
    wt = rng.integers(-128, 128, (k, kh, kw, c)).astype(np.int8)
    kernel, constants = _kernel_and_constants(x.shape, wt, strides, dilations, tiles(native=True), parallel)
    built = tvm.compile(tvm.IRModule({"kernel": kernel}), target=tvm.target.Target(amx_emulation.target()))
    library = amx_emulation.emulated_library(amx_emulation.modules_of(built), tmp_path)
    function = tvm.runtime.load_module(str(library))["kernel"]
    want = reference(x, wt, strides, dilations)
    before = cpu.current_threads()
    try:
        for n in (1, 2):
            cpu.set_threads(n)
            y = tvm.runtime.tensor(np.zeros(want.shape, np.int32))
            function(tvm.runtime.tensor(x), *[tvm.runtime.tensor(a) for a in constants], y)
            assert amx_emulation.fault(library) == ""
            assert int(np.count_nonzero(y.numpy() != want)) == 0
    finally:
        cpu.set_threads(before)
    ran = amx_emulation.counts(library)
    assert ran["tdpbusd"] > 0 and ran["ldtilecfg"] == ran["tilerelease"] > 0


@pytest.mark.parametrize("profile", ["tflite", "litert"])
def test_native_model_on_an_emulation_of_intels_instructions(profile, tmp_path, monkeypatch):
    """mobilenetv2_tiny with every convolution the tiles take on them (its fused form, two
    entries), native code but for the tile instructions: LiteRT's bits at one and two threads."""
    from pathlib import Path

    from qdialect.dialects.qnn import set_rounding
    from tests.tvm_bridge import amx_emulation
    from transforms.pipelines import lower_to_l3
    from tvm_bridge import cpu
    from tvm_bridge.run_cli import _entry_signature, litert_run, load_module, make_inputs

    monkeypatch.setattr(amx, "MIN_MACS", 0)
    path = Path(__file__).resolve().parents[2] / "models" / "zoo" / "mobilenetv2_tiny.tflite"
    module = load_module(path, batch=1)
    if profile == "litert":
        set_rounding(module, "litert")
    lower_to_l3(module)
    model, library = _native_on_emulation(module, tmp_path)
    _, in_values, _ = _entry_signature(load_module(path, batch=1))
    samples = [make_inputs(in_values, seed) for seed in range(3)]
    theirs = litert_run(path.read_bytes(), samples, reference=profile == "tflite")
    before = cpu.current_threads()
    try:
        for n in (1, 2):
            cpu.set_threads(n)
            for sample, expected in zip(samples, theirs):
                outputs = model(*sample)
                assert amx_emulation.fault(library) == ""
                for a, b in zip(outputs, expected):
                    assert int(np.count_nonzero(a.view(b.dtype).reshape(b.shape) != b)) == 0
    finally:
        cpu.set_threads(before)
    ran = amx_emulation.counts(library)
    assert ran["tdpbusd"] > 0 and ran["ldtilecfg"] == ran["tilerelease"] > 0


def _native_on_emulation(module, workdir, tiles_expected: bool = True):
    """(a callable model, its library): the L3 `module` built natively for this CPU plus AMX
    (fused), its tile instructions then emulated (amx_emulation.py)."""
    from tests.tvm_bridge import amx_emulation
    from tvm_bridge.compile import CompiledModel, cannot_run_here, compile_module, host_target

    target = tvm.target.Target(amx_emulation.target())
    built = compile_module(module, target=target, dot=tiles(native=True), cache=False)
    # (without AMX the build as it is cannot run here: the emulation is what runs it)
    assert built.is_fused and (HAS_AMX or cannot_run_here(target) is not None)
    library = amx_emulation.emulated_library(amx_emulation.modules_of(built.executable), workdir, tiles_expected)
    model = CompiledModel(None, built.n_outputs, host_target(), built.out_dtypes,
                          library=tvm.runtime.load_module(str(library)), library_path=str(library), fused=built.fused)
    return model, library


MATMUL_CASES = [
    # (lhs, rhs, adj_x, adj_y, lhs zp, rhs zp, output scale: most outputs inside the int8 range)
    ((1, 4, 12, 16), (1, 4, 16, 16), False, False, -3, 0, 0.6),     # P @ V: 12 rows of a 16-row tile
    ((1, 4, 16, 16), (1, 4, 48, 16), False, True, 11, -7, 0.6),     # Q @ K^T, rhs read as (n, k): 3 C tiles
    ((1, 2, 40, 80), (1, 2, 80, 64), False, False, 5, 9, 1.0),      # 40 rows (2 A tiles, 2 steps), K = 80: chunks of 40
    ((2, 36, 20), (1, 36, 32), True, False, -20, 13, 0.6),          # adj_x (20 rows), lhs broadcast, K = 36: one chunk
    ((1, 8, 512), (1, 512, 16), False, False, 6, -4, 2.0),          # K = 512: 8 chunks of 64
    ((2, 7, 5), (5, 32), False, False, 3, 1, 0.6),                  # K = 5: fewer than 16, the VNNI kernel
]


@pytest.mark.parametrize("case", MATMUL_CASES, ids=[f"{'x'.join(map(str, c[0]))}-{'x'.join(map(str, c[1]))}"
                                                    for c in MATMUL_CASES])
@pytest.mark.parametrize("native", [False, True], ids=["tir-loops", "native-on-emulation"])
def test_batch_matmul_on_tiles_equals_litert(case, native, tmp_path, monkeypatch):
    """Attention's products (tvm_bridge/batch_matmul.py) on tiles, their requantization fused:
    LiteRT's reference kernels' bits, as TIR with the tile instructions as loops and as the
    native build on the C emulation."""
    from tests.tflite_writer import run_tflite
    from tests.tvm_bridge.helpers import lowered_tflite
    from tests.tvm_bridge.test_batch_matmul_kernel import _model
    from tvm_bridge.compile import compile_module
    from tvm_bridge.translate import translate

    monkeypatch.setattr(amx, "MIN_MACS", 0)
    lhs, rhs, adj_x, adj_y, lzp, rzp, out_s = case
    model = _model(lhs, rhs, adj_x, adj_y, lzp, rzp, out_s)
    lowered = lowered_tflite(model, "tflite", tmp_path, "bmm.tflite")
    flavor = tiles(native)
    choices = []
    translate(lowered(), dot=flavor, choices=choices)
    on_tiles = lhs[-1] >= 16 if not adj_x else lhs[-2] >= 16
    assert [c[1] for c in choices] == ["amx_batch_matmul" if on_tiles else "vnni_batch_matmul"]
    rng = np.random.default_rng(sum(lhs) * 31 + sum(rhs))
    inputs = [rng.integers(-128, 128, lhs).astype(np.int8), rng.integers(-128, 128, rhs).astype(np.int8)]
    if native:
        built, library = _native_on_emulation(lowered(), tmp_path / "emu", on_tiles)
    else:
        built, library = compile_module(lowered(), dot=flavor, cache=False), None
    (ours,) = built(*inputs)
    (theirs,) = run_tflite(model, inputs, reference=True)
    assert len(np.unique(theirs)) > 32  # (outputs that tell a wrong sum: not all clamped)
    assert int(np.count_nonzero(ours.reshape(theirs.shape) != theirs)) == 0
    if library is not None and on_tiles:
        from tests.tvm_bridge import amx_emulation

        assert amx_emulation.fault(library) == "" and amx_emulation.counts(library)["tdpbusd"] > 0


@pytest.mark.parametrize("form", ["fused", "vm"])
def test_every_loader_asks_linux_for_the_tiles_first(form, tmp_path, monkeypatch):
    """A tile kernel run by a process that has not asked Linux for the tiles dies of SIGILL on
    a CPU with AMX: each way qdialect runs a build asks first (`cpu.request_amx`), before the
    first call: CompiledModel (fused, VM) and the cached path's RuntimeModel (fused, VM)."""
    from pathlib import Path

    import tvm_ffi

    from transforms.pipelines import lower_to_l3
    from tvm_bridge import cpu, fast_run
    from tvm_bridge.compile import compile_module
    from tvm_bridge.run_cli import _entry_signature, load_module, make_inputs

    asked = []
    monkeypatch.setattr(cpu, "request_amx", lambda: asked.append(True) or False)
    monkeypatch.setenv("QDIALECT_FUSED", "1" if form == "fused" else "0")
    path = Path(__file__).resolve().parents[2] / "models" / "zoo" / "mlp_act.tflite"
    module = load_module(path, batch=1)
    _, in_values, _ = _entry_signature(module)
    sample = make_inputs(in_values, 0)
    model = compile_module(lower_to_l3(module), cache=False)
    assert model.is_fused == (form == "fused")
    want = model(*sample)
    assert asked, "CompiledModel ran without asking"
    asked.clear()
    library_path = tmp_path / "model.so"
    model.export_library(str(library_path))
    fast_run._load_runtime()
    runtime = fast_run.RuntimeModel(tvm_ffi.load_module(str(library_path)), model.n_outputs,
                                    model.fused if form == "fused" else None)
    assert asked, "the cached path's RuntimeModel ran without asking"
    got = runtime(*sample)
    assert all(np.array_equal(a, b.view(a.dtype)) for a, b in zip(got, want))
