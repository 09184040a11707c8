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

Peak: the MACs of one instruction per cycle per core times the clock in
/proc/cpuinfo: 64 for a 512-bit VPDPBUSD (the figure the issue quotes as "well
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


def clock_ghz() -> float:
    try:
        mhz = [float(line.split(":")[1]) for line in open("/proc/cpuinfo") if line.startswith("cpu MHz")]
        return max(mhz) / 1000
    except (OSError, ValueError):
        return float("nan")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", default="48,48,16,32", help="H,W,C_in,C_out")
    p.add_argument("--kernel", type=int, default=3)
    p.add_argument("--runs", type=int, default=200)
    args = p.parse_args(argv)
    h, w, c, k = (int(v) for v in args.shape.split(","))

    import tvm
    from tvm import relax

    from latency import median_ms  # bench/latency.py: the same warm-up + median timer

    from qdialect.interpreter import Interpreter
    from transforms import pipelines
    from tvm_bridge import compile as qc
    from tvm_bridge.translate import translate

    tvm.get_global_func("runtime.config_threadpool")(1, 1)
    module = build(h, w, c, k, args.kernel)
    x = np.random.default_rng(1).integers(-128, 128, (1, h, w, c)).astype(np.int8)
    expected = Interpreter(module).run([x])[0]
    pipelines.lower_to_l3(module)
    target = qc.host_target()
    from tvm_bridge.vnni import target_flavor

    flavor = target_flavor(target)
    mod_vnni, _ = translate(module, dot=flavor)
    mod_plain, _ = translate(module)
    macs = h * w * k * args.kernel * args.kernel * c
    rows = []
    variants = [("ours" + (f" ({flavor.name} kernel)" if flavor else ""),
                 lambda: tvm.compile(mod_vnni, target=target, relax_pipeline=qc.pipeline(target))),
                ("ours, no dot kernel (scheduled TE)", lambda: tvm.compile(mod_plain, target=target,
                                                                     relax_pipeline=qc.pipeline(target))),
                ("TVM default tvm.compile", lambda: tvm.compile(mod_plain, target=target))]
    for name, make in variants:
        ex = make()
        vm = relax.VirtualMachine(ex, tvm.cpu())
        arg = tvm.runtime.tensor(x)
        out = vm["main"](arg).numpy()
        bad = int(np.count_nonzero(out != expected))
        ms = median_ms(lambda: vm["main"](arg), args.runs, 10)
        rows.append((name, ms, macs / ms / 1e6, bad))
    ghz = clock_ghz()
    per_cycle = {"vnni": 64, "pmaddwd512": 64}.get(flavor.name if flavor else "", 32)
    peak = per_cycle * ghz
    print(f"conv 1x{h}x{w}x{c} -> {k}, {args.kernel}x{args.kernel} SAME, int8 per-channel + requant + relu6: "
          f"{macs / 1e6:.2f} M MACs; 1 thread; clock {ghz:.2f} GHz, peak {peak:.0f} GMAC/s "
          f"({per_cycle} MACs per cycle: {flavor.name if flavor else 'no dot-product instruction'})")
    for name, ms, gmacs, bad in rows:
        print(f"  {name:<34} {ms:8.3f} ms {gmacs:8.1f} GMAC/s ({100 * gmacs / peak:4.1f}% of peak), "
              f"{bad} mismatching elements vs the interpreter")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TVM_NUM_THREADS", "1")
    sys.exit(main())
