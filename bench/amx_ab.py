"""AMX tiles against the VNNI register kernel, layer by layer and on whole models.

    python bench/amx_ab.py [--runs 200] [--rounds 10] [--models a.tflite,...] [--min-macs N] [--emulate]

For the tile kernel of tvm_bridge/amx.py (opt-in, `QDIALECT_AMX=1`): the numbers that
decide whether it becomes the default on a CPU with AMX, and from how many MACs
(`amx.MIN_MACS`).  Each int8 convolution shape below (MobileNetV2-1.0's pointwise layers,
a ResNet 3x3, a 1280 -> 1024 fully connected layer) is built twice, on the VNNI flavor's
register tiles and on AMX tiles, both checked equal to an int64 reference, and timed
interleaved on one thread: GMAC/s of each against the core's peak (bench/conv_gmacs.py's
`peak_gmacs`: 64 or 128 MACs a cycle for vpdpbusd, 1024 for tdpbusd) and the ratio
tiles / VNNI.  Then each `--models` file (default: the zoo's mobilenetv2_tiny and
models/transformers' bert_tiny, whose attention products take tiles too) built both ways in the `litert` profile, checked against LiteRT XNNPACK and timed against it.

On a CPU without AMX it says so and stops (exit 2), unless `--emulate`: the tile
instructions emulated (tvm_bridge/amx.py), to check this script and its kernels' bits;
the times are then the emulation's, not the hardware's.  Not a test.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

#: (H, W, C, K, KH, KW, stride): the layers timed
SHAPES = [(112, 112, 16, 96, 1, 1, 1), (56, 56, 24, 144, 1, 1, 1), (28, 28, 32, 192, 1, 1, 1),
          (14, 14, 64, 384, 1, 1, 1), (14, 14, 96, 576, 1, 1, 1), (7, 7, 160, 960, 1, 1, 1),
          (7, 7, 320, 1280, 1, 1, 1), (58, 58, 64, 64, 3, 3, 1), (1, 1, 1280, 1024, 1, 1, 1)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--models", default=",".join(str(ROOT / "models" / d / f"{n}.tflite") for d, n in (
                       ("zoo", "mobilenetv2_tiny"), ("transformers", "bert_tiny"))),
                   help="comma-separated .tflite files ('' for none)")
    p.add_argument("--emulate", action="store_true", help="emulate the tile instructions (a CPU without AMX)")
    p.add_argument("--min-macs", type=int, default=None,
                   help="the whole models' tile threshold (amx.MIN_MACS, QDIALECT_AMX_MIN_MACS; default its own)")
    args = p.parse_args(argv)

    from tvm_bridge import amx, vnni

    if args.min_macs is not None:
        amx.MIN_MACS = args.min_macs
    from tvm_bridge.cpu import cpu_flags, describe, request_amx

    print(describe())
    has_amx = {"amx_tile", "amx_int8"} <= cpu_flags()[1]
    if not has_amx and not args.emulate:
        print("this CPU has no AMX: nothing to measure (--emulate checks the kernels' bits, not their speed)")
        return 2
    if has_amx and not request_amx():
        print("Linux refused this process the AMX tile registers (arch_prctl ARCH_REQ_XCOMP_PERM)")
        return 2
    vnni_flavor = vnni.VNNI if "avx512_vnni" in cpu_flags()[1] else replace(vnni.VNNI, emulate=True)
    tiles = replace(vnni_flavor, tiled=amx.Tiles(emulate=not has_amx))
    what = "emulated tiles (not the hardware's speed)" if not has_amx else "AMX tiles"
    print(f"one thread; {what} against {'emulated ' if vnni_flavor.emulate else ''}VNNI register tiles")
    layers(tiles, vnni_flavor, args)
    for model in [m for m in args.models.split(",") if m]:
        whole_model(Path(model), tiles, vnni_flavor, args)
    return 0


def _conv(shape, flavor):
    """The bare convolution of `shape` on `flavor`: (callable on the input, input, weights)."""
    import tvm
    from tvm import relax

    from tvm_bridge import vnni
    from tvm_bridge.compile import host_target

    h, w, c, k, kh, kw, s = shape
    rng = np.random.default_rng(sum(shape))
    x = rng.integers(-128, 128, (1, h, w, c)).astype(np.int8)
    wt = rng.integers(-128, 128, (k, kh, kw, c)).astype(np.int8)
    bb = relax.BlockBuilder()
    xv = relax.Var("x", relax.TensorType([1, h, w, c], "int8"))
    with bb.function("main", [xv]):
        with bb.dataflow():
            out = bb.emit_output(vnni.emit_conv2d(bb, xv, [1, h, w, c], wt, (s, s), (1, 1), flavor=flavor))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(tvm.compile(bb.get(), target=host_target()), tvm.cpu())
    arg = tvm.runtime.tensor(x)
    return (lambda: vm["main"](arg)), x, wt


def layers(tiles, vnni_flavor, args) -> None:
    from conv_gmacs import peak_gmacs
    from latency import interleaved_medians

    from tests.tvm_bridge.test_vnni import reference
    from tvm_bridge.cpu import set_threads

    set_threads(1)
    peak_t, how_t = peak_gmacs("amx", 1)
    peak_v, how_v = peak_gmacs("vnni", 1)
    print(f"  peak: tiles {peak_t:.0f} GMAC/s ({how_t}); VNNI {peak_v:.0f} GMAC/s ({how_v})")
    print(f"  {'layer':<28} {'M MACs':>8} {'VNNI ms':>9} {'GMAC/s':>7} {'tiles ms':>9} {'GMAC/s':>7} "
          f"{'tiles/VNNI':>10}  mismatches (VNNI, tiles)")
    for shape in SHAPES:
        h, w, c, k, kh, kw, s = shape
        run_v, x, wt = _conv(shape, vnni_flavor)
        run_t, _, _ = _conv(shape, tiles)
        want = reference(x, wt, (s, s), (1, 1))
        bad = [int(np.count_nonzero(run().numpy() != want)) for run in (run_v, run_t)]
        ms = interleaved_medians({"v": run_v, "t": run_t}, args.runs, 10, args.rounds)
        oh, ow = want.shape[1:3]
        macs = oh * ow * k * kh * kw * c
        name = f"{h}x{w}x{c}->{k} {kh}x{kw}/{s}"
        print(f"  {name:<28} {macs / 1e6:8.2f} {ms['v']:9.4f} {macs / ms['v'] / 1e6:7.1f} {ms['t']:9.4f} "
              f"{macs / ms['t'] / 1e6:7.1f} {ms['t'] / ms['v']:10.2f}  {bad[0]}, {bad[1]}")


def whole_model(path: Path, tiles, vnni_flavor, args) -> None:
    from latency import interleaved_medians, litert, mismatches

    from qdialect.dialects.qnn import set_rounding
    from transforms.pipelines import lower_to_l3
    from tvm_bridge.compile import compile_module
    from tvm_bridge.run_cli import _entry_signature, load_module, make_inputs
    from tvm_bridge.translate import translate

    def lowered():
        module = load_module(path, 1)
        set_rounding(module, "litert")
        lower_to_l3(module)
        return module

    _, in_values, _ = _entry_signature(load_module(path, 1))
    sample = make_inputs(in_values, 0)
    choices: list = []
    translate(lowered(), dot=tiles, choices=choices)
    on_tiles = sum(c[3] or 0 for c in choices if c[1] == "amx_conv2d")
    total = sum(c[3] or 0 for c in choices)
    models = {"VNNI": compile_module(lowered(), dot=vnni_flavor, cache=False),
              "tiles": compile_module(lowered(), dot=tiles, cache=False)}
    xnn = litert(path.read_bytes(), False, 1)
    expected = xnn(sample)
    bad = {k: mismatches(m(*sample), expected) for k, m in models.items()}
    fns = {k: (lambda m=m: m(*sample)) for k, m in models.items()}
    fns["XNNPACK"] = lambda: xnn(sample)
    ms = interleaved_medians(fns, args.runs, 10, args.rounds)
    print(f"  {path.stem} (litert profile; {on_tiles / 1e6:.2f} of {total / 1e6:.2f} M MACs on tiles): XNNPACK "
          f"{ms['XNNPACK']:.3f} ms, VNNI {ms['VNNI']:.3f} ms x{ms['VNNI'] / ms['XNNPACK']:.2f} ({bad['VNNI']} "
          f"mismatches), tiles {ms['tiles']:.3f} ms x{ms['tiles'] / ms['XNNPACK']:.2f} ({bad['tiles']} mismatches)")


if __name__ == "__main__":
    sys.exit(main())
