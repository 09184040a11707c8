"""Achieved GMAC/s of one int8 convolution against the core's peak.

    python bench/conv_gmacs.py [--shape 48,48,16,32] [--kernel 3] [--runs 200]

The convolution of the performance issue: NHWC int8 input HxWxC, 3x3 kernel,
per-channel int8 weights, int32 bias, requantized to int8 with ReLU6 (one
`qnn.conv2d`), 'SAME' padding, one image.  Timed, each on one TVM thread:

- ours: the qnn op through qnn-decompose / qnn-lower-to-linalg / our Relax
  translation (the dot-product convolution kernel of tvm_bridge/vnni.py on the
  CPU's instruction: AVX-512 VNNI `vpdpbusd`, else `vpmaddwd`) / our scheduled
  CPU pipeline;
- ours without the dot-product kernel: the convolution as Relax conv2d, tiled
  and vectorized by tvm_bridge/schedule.py, requantization fused into it;
- TVM's default `tvm.compile` pipeline on that same Relax module (no fusion,
  no schedule), as the issue measured it.

Timed at each of `--threads` TVM thread counts (default 1 and 2), then the whole
`--model` (default mobilenetv2_tiny) the same way, against LiteRT XNNPACK at the
same thread count.  Peak, measured (`measured_peak_gmacs`): a loop of independent
dot-product instructions of the kernel's family timed on one core, times the cores;
the percentages of our kernel are of it.  Peak, nominal: the MACs of one instruction per cycle per core times
the cores times the clock (the highest `cpu MHz` in /proc/cpuinfo): 64 for a 512-bit VPDPBUSD (the figure the issue quotes as "well
over 100 GMAC/s"), 64 for two 512-bit VPMADDWD, 32 for two 256-bit ones (Zen 3
issues two per cycle: a C loop of independent vpmaddwd ran 6.22 G of them per
second on the AMD EPYC host whose /proc/cpuinfo says 2.45 GHz, so that core also
runs above its nominal clock and the percentages here are upper bounds).
All outputs are checked equal to the interpreter's before timing.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def build(h, w, c, k, ksize):
    from qdialect.builder import GraphBuilder
    from qdialect.dialects.quant import UniformQuantizedType as Q

    rng = np.random.default_rng(0)
    g = GraphBuilder()
    x = g.input([1, h, w, c], Q.per_tensor(0.05, -3))
    wt = g.constant(rng.integers(-127, 128, (k, ksize, ksize, c)).astype(np.int8),
                    Q.per_axis(rng.uniform(0.001, 0.01, k), 0, axis=0, storage_min=-127))
    b = g.bias(rng.integers(-500, 500, k).astype(np.int32), x, wt)
    g.output(g.conv2d(x, wt, b, Q.per_tensor(0.1, 2), padding="SAME", activation="relu6"))
    return g.build()


def clock_ghz() -> tuple[float, str]:
    """(GHz, how it was read): the highest `cpu MHz` in /proc/cpuinfo (the kernel's view of the
    current clock: under load it is the boost clock), else cpufreq's cpuinfo_max_freq."""
    try:
        mhz = [float(line.split(":")[1]) for line in open("/proc/cpuinfo") if line.startswith("cpu MHz")]
        if mhz:
            return max(mhz) / 1000, "highest 'cpu MHz' in /proc/cpuinfo"
    except (OSError, ValueError):
        pass
    try:
        khz = int(open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").read())
        return khz / 1e6, "cpufreq cpuinfo_max_freq"
    except (OSError, ValueError):
        return float("nan"), "unknown"


#: int8 multiply-accumulates per cycle per core of each kernel family's instruction at its
#: throughput: 512-bit VPDPBUSD 64 (one per cycle; Zen 4 splits it into two 256-bit halves on
#: two pipes, the same 64), two 512-bit VPMADDWD 64, two 256-bit VPMADDWD 32, and TVM's
#: generic int8 path (vpmovsx + vpmulld / vpmaddwd on 256 bits) at most 32
MACS_PER_CYCLE = {"vnni": 64, "pmaddwd512": 64, "pmaddwd": 32, None: 32,
                  # AMX (QDIALECT_AMX=1 on Sapphire Rapids and later): one TDPBUSD, 16 x 16 x 64
                  # MACs, every 16 cycles (Intel's optimization manual)
                  "amx": 1024}
#: CPUs whose 512-bit integer pipes issue two of them per cycle: Zen 5 (`znver5`) runs 512-bit
#: operations at full width on four pipes, two of which multiply (measured on the 2-core EPYC
#: 9005 of session 20: the 48x48x16->32 layer at 349 GMAC/s on one thread, 134 MACs per cycle of
#: the nominal 2.6 GHz, so twice the Zen 4 figure, and the clock above nominal)
DOUBLE_512 = ("znver5",)


def peak_gmacs(flavor_name: str | None, cores: int) -> tuple[float, str]:
    """(peak GMAC/s, how it was computed) of `cores` cores running `flavor_name`'s instruction."""
    from tvm_bridge.cpu import host_cpu

    ghz, how = clock_ghz()
    per_cycle = MACS_PER_CYCLE.get(flavor_name, 32)
    if host_cpu() in DOUBLE_512 and flavor_name in ("vnni", "pmaddwd512"):
        per_cycle *= 2
    return per_cycle * cores * ghz, (f"{per_cycle} MACs/cycle ({flavor_name or 'generic'}) x {cores} core"
                                     f"{'s' if cores > 1 else ''} x {ghz:.2f} GHz ({how})")


def measured_peak_gmacs(flavor, target, iters: int = 1_000_000) -> tuple[float, str] | None:
    """(GMAC/s, how) of one core issuing `flavor`'s dot-product instruction as fast as it can:
    a loop of 16 independent accumulators (10 on 256-bit vectors, which have 16 registers),
    each one instruction a step, timed on one thread.  Unlike `peak_gmacs` it needs no clock
    and no issue width: a guest's /proc/cpuinfo gives the nominal clock, and the Zen 5 of
    sessions 20-26 ran 8.35 G vpdpbusd a second (a C loop), 534 GMAC/s, where 128 MACs a cycle
    at its nominal 2.6 GHz say 333.  None for a flavor without a native instruction."""
    import time

    import tvm
    from tvm import tirx
    from tvm.tirx.script.builder import ir as T

    from tvm_bridge import vnni

    if flavor is None or flavor.emulate or flavor.tiled is not None:
        return None
    lanes, g = flavor.max_lanes, flavor.group
    operand = "int8" if flavor.name == "vnni" else "int16"
    chains = 16 if lanes == 16 else 10
    xb = vnni._buffer((g * lanes,), operand, "XB")
    wb = vnni._buffer((g * lanes,), operand, "WB")
    out = vnni._buffer((chains, lanes), "int32", "OUT")
    acc = vnni._buffer((chains, lanes), "int32", "ACC", scope="local")
    ww = wb.vload([0], f"{operand}x{g * lanes}")

    def step(j):
        a = acc.vload([j, 0], f"int32x{lanes}")
        # (vpmaddwd's operands from its own accumulator: with loop-invariant ones LLVM would
        # hoist the multiplication out of the loop and time the adds)
        xw = xb.vload([0], f"{operand}x{g * lanes}") if flavor.name == "vnni" else \
            T.reinterpret(a, dtype=f"{operand}x{g * lanes}")
        return tirx.BufferStore(acc, vnni._dot(flavor, lanes, a, xw, ww), [j, T.ramp(0, 1, lanes)])

    body = vnni._seq([
        tirx.AllocBuffer(acc),
        vnni._loops("unroll", (chains,), ("j",), lambda j: tirx.BufferStore(
            acc, T.Broadcast(tirx.IntImm("int32", 0), lanes), [j, T.ramp(0, 1, lanes)])),
        vnni._loops("serial", (iters,), ("i",), lambda i: vnni._loops("unroll", (chains,), ("j",), step)),
        vnni._loops("unroll", (chains,), ("j",), lambda j: tirx.BufferStore(
            out, acc.vload([j, 0], f"int32x{lanes}"), [j, T.ramp(0, 1, lanes)]))])
    func = vnni._prim_func([xb, wb, out], [body]).with_attr("global_symbol", "peak")
    lib = tvm.tirx.build(tvm.IRModule({"peak": func}), target=target)
    args = [tvm.runtime.tensor(np.ones(g * lanes, operand)), tvm.runtime.tensor(np.ones(g * lanes, operand)),
            tvm.runtime.tensor(np.zeros((chains, lanes), np.int32))]
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        lib["peak"](*args)
        best = min(best, time.perf_counter() - t0)
    rate = iters * chains / best
    per = lanes * g  # (MACs an instruction: lanes x group)
    name = "vpdpbusd" if flavor.name == "vnni" else "vpmaddwd + vpaddd"
    return rate * per / 1e9, (f"measured: {rate / 1e9:.2f} G {name} ({32 * lanes}-bit) a second on one core "
                              f"x {per} MACs")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", default="48,48,16,32", help="H,W,C_in,C_out")
    p.add_argument("--kernel", type=int, default=3)
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--threads", default="1,2", help="TVM thread counts to time (comma-separated)")
    p.add_argument("--cpu", default=None, help="compile for this LLVM cpu (e.g. haswell: the AVX2 kernels)")
    p.add_argument("--model", default="mobilenetv2_tiny",
                   help="also the whole zoo model's (or .tflite file's) GMAC/s (its conv / depthwise / matmul "
                        "MACs); '' for none")
    args = p.parse_args(argv)
    h, w, c, k = (int(v) for v in args.shape.split(","))
    if args.cpu:
        os.environ["QDIALECT_TARGET_CPU"] = args.cpu

    import tvm
    from tvm import relax

    from latency import median_ms  # bench/latency.py: the same warm-up + median timer

    from qdialect.interpreter import Interpreter
    from transforms import pipelines
    from tvm_bridge import compile as qc
    from tvm_bridge.cpu import describe
    from tvm_bridge.translate import translate

    threads = [int(t) for t in args.threads.split(",")]
    from tvm_bridge.cpu import set_threads as pool

    pool(max(threads))
    module = build(h, w, c, k, args.kernel)
    x = np.random.default_rng(1).integers(-128, 128, (1, h, w, c)).astype(np.int8)
    expected = Interpreter(module).run([x])[0]
    pipelines.lower_to_l3(module)
    target = qc.host_target()
    from tvm_bridge.kernels import target_flavor

    from tvm_bridge.lowering import register

    flavor = target_flavor(target)
    mod_vnni, _ = translate(module, dot=flavor)
    mod_plain, _ = translate(module)
    macs = h * w * k * args.kernel * args.kernel * c
    rows = []
    fname = None if flavor is None else "amx" if flavor.tiled is not None else flavor.name
    variants = [("ours" + (f" ({fname} kernel)" if flavor else ""),
                 lambda: tvm.compile(mod_vnni, target=target, relax_pipeline=qc.pipeline(target),
                                    tir_pipeline=register())),
                ("ours, no dot kernel (scheduled TE)", lambda: tvm.compile(mod_plain, target=target,
                                                                     relax_pipeline=qc.pipeline(target),
                                                                     tir_pipeline=register())),
                ("TVM default tvm.compile", lambda: tvm.compile(mod_plain, target=target))]
    for name, make in variants:
        ex = make()
        vm = relax.VirtualMachine(ex, tvm.cpu())
        arg = tvm.runtime.tensor(x)
        for n in threads:
            pool(n)
            out = vm["main"](arg).numpy()
            bad = int(np.count_nonzero(out != expected))
            ms = median_ms(lambda: vm["main"](arg), args.runs, 10)
            rows.append((name, n, ms, macs / ms / 1e6, bad))
    print(describe())
    print(f"conv 1x{h}x{w}x{c} -> {k}, {args.kernel}x{args.kernel} SAME, int8 per-channel + requant + relu6: "
          f"{macs / 1e6:.2f} M MACs")
    measured = measured_peak_gmacs(flavor, target)
    if measured is not None:
        print(f"  peak of one core, measured: {measured[0]:.0f} GMAC/s = {measured[1]} (x cores below)")

    def peak_of(name, n):
        """(GMAC/s, how): the measured peak for our kernel where there is one, else the nominal."""
        if measured is not None and name.startswith("ours ("):
            return measured[0] * n, "measured"
        return peak_gmacs(fname if name.startswith("ours (") else None, n)[0], "nominal"

    for n in threads:
        peak, how = peak_gmacs(fname, n)
        print(f"  nominal peak at {n} thread{'s' if n > 1 else ''}: {peak:.0f} GMAC/s = {how}")
    for name, n, ms, gmacs, bad in rows:
        peak, how = peak_of(name, n)
        print(f"  {name:<34} {n} thr {ms:8.3f} ms {gmacs:8.1f} GMAC/s ({100 * gmacs / peak:4.1f}% of the {how} "
              f"peak), {bad} mismatching elements vs the interpreter")
    if args.model:
        model_gmacs(args.model, threads, args.runs, fname, measured)
    return 0


def model_gmacs(name: str, threads: list[int], runs: int, fname: str | None, measured=None) -> None:
    """The zoo model's achieved GMAC/s (the MACs of its convolutions, depthwise convolutions and
    matmuls, as the kernel registry records them, over its median latency) against the peak of
    the target's kernel family (`fname`) at each thread count; checked bit-exact vs LiteRT XNNPACK."""
    from latency import litert, median_ms, mismatches
    from qdialect.dialects.qnn import set_rounding
    from transforms import pipelines
    from tvm_bridge.compile import compile_module, host_target
    from tvm_bridge.run_cli import _entry_signature, load_module, make_inputs
    from tvm_bridge.translate import translate
    from tvm_bridge.kernels import target_flavor

    path = Path(name) if name.endswith(".tflite") else ROOT / "models" / "zoo" / f"{name}.tflite"
    name = path.stem
    module = load_module(path, 1)
    _, in_values, _ = _entry_signature(module)
    sample = make_inputs(in_values, 0)
    set_rounding(module, "litert")
    pipelines.lower_to_l3(module)
    choices: list = []
    translate(module, dot=target_flavor(host_target()), choices=choices)
    total = sum(c[3] or 0 for c in choices)
    by_family: dict[str, int] = {}
    for c in choices:
        by_family[c[2]] = by_family.get(c[2], 0) + (c[3] or 0)
    largest = max(choices, key=lambda c: c[3] or 0)
    model = compile_module(module)
    expected = litert(path.read_bytes(), False, 1)(sample)
    bad = mismatches(model(*sample), expected)
    print(f"{name} (litert profile): {total / 1e6:.2f} M MACs in {len(choices)} conv / depthwise / matmul layers "
          f"({', '.join(f'{f}: {m / 1e6:.2f} M' for f, m in by_family.items())}); largest layer "
          f"{largest[1]} {largest[3] / 1e6:.3f} M MACs; {bad} mismatching elements vs LiteRT XNNPACK")
    from tvm_bridge.cpu import set_threads

    for n in threads:
        set_threads(n)
        ms = median_ms(lambda: model(*sample), runs, 10)
        x_ms = median_ms(lambda r=litert(path.read_bytes(), False, n): r(sample), runs, 10)
        peak, how = peak_gmacs(fname, n) if measured is None else (measured[0] * n, f"{n} x the measured peak")
        print(f"  {n} thr: ours {ms:.3f} ms = {total / ms / 1e6:.1f} GMAC/s ({100 * total / ms / 1e6 / peak:.1f}% "
              f"of {peak:.0f} = {how}); XNNPACK {x_ms:.3f} ms = {total / x_ms / 1e6:.1f} GMAC/s")


if __name__ == "__main__":
    from tvm_bridge.cpu import allow_threads

    allow_threads()  # before TVM starts its pool: 2 threads possible on a 2-core machine
    sys.exit(main())
