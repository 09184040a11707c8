"""Compile-time scaling: the Python part of the pipeline on synthetic chains of conv blocks.

    python bench/compile_time.py [--blocks 10,100,1000] [--tvm-build-up-to 10]

Each block is `conv2d 3x3 (per-channel int8 weights, i32 bias, relu6) -> add
(residual)` on a 1x8x8x8 int8 tensor, built with the Python GraphBuilder and
printed as text first, so every stage is measured from text: parse + verify,
qnn-canonicalize, qnn-decompose, qnn-lower-to-linalg, Relax translation (the
last Python stage before TVM's own C++ build, which is timed separately and
only up to `--tvm-build-up-to` blocks).  The translation is the one `qd-run` does
here: with the dot-product convolution kernels (AVX-512 VNNI, else vpmaddwd)
and their fused epilogues when the CPU has the instruction (`--no-dot` for the
generic form).  Prints seconds per stage and
milliseconds per op; the Python part should grow linearly (flat ms/op) and
stay under 1 ms per op.  TVM is imported (about a second, once per process)
and its TVMScript parser used once before anything is timed.  Every chain is compiled
`--repeat` times (5 by default); each stage's time is its fastest run, the least
disturbed by whatever else the machine runs (as `timeit` reports), and the median
of the runs' totals is printed beside the fastest total.  The TVM build here never
uses the compiled-model cache (tvm_bridge/cache.py); bench/time_to_first.py measures
one model's whole path from file to first output, cold and cached.  Not a test: a
benchmark to read.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def chain(blocks: int) -> str:
    from qdialect.builder import GraphBuilder
    from qdialect.dialects.quant import UniformQuantizedType as Q

    rng = np.random.default_rng(0)
    g = GraphBuilder()
    act = Q.per_tensor(0.05, -3)
    x = g.input([1, 8, 8, 8], act)
    for _ in range(blocks):
        w = g.constant(rng.integers(-127, 128, (8, 3, 3, 8)).astype(np.int8),
                       Q.per_axis(rng.uniform(0.001, 0.01, 8), 0, axis=0, storage_min=-127))
        b = g.bias(rng.integers(-500, 500, 8).astype(np.int32), x, w)
        y = g.conv2d(x, w, b, act, padding="SAME", activation="relu6")
        x = g.add(x, y, act)
    g.output(x)
    return str(g.build())


def count_ops(module) -> int:
    return sum(1 for op in module.walk() if op.name not in ("builtin.module", "func.func", "func.return"))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--blocks", default="10,100,1000")
    p.add_argument("--tvm-build-up-to", type=int, default=10,
                   help="also time tvm.compile for chains up to this many blocks")
    p.add_argument("--repeat", type=int, default=5,
                   help="compile each chain this many times; print the fastest run of each stage and the median total")
    p.add_argument("--no-dot", action="store_true", help="translate without the dot-product kernels")
    args = p.parse_args(argv)

    from qdialect.diagnostics import parse_module
    from transforms.canonicalize import QnnCanonicalizePass
    from transforms.decompose import QnnDecomposePass
    from transforms.lower_to_linalg import QnnLowerToLinalgPass
    from transforms.opt import QdOptMain
    from tvm_bridge.translate import translate

    import tvm  # noqa: F401  (importing TVM takes about a second: once per process, not per op)
    from tvm import relax, te, tirx  # noqa: F401

    from tvm_bridge.compile import host_target
    from tvm_bridge.kernels import target_flavor
    from tvm_bridge.vnni import clear_caches

    # what compile_module does on this machine: the dot-product kernels (with their fused
    # epilogues) where the CPU has the instruction, and our fusing, scheduled pipeline
    target = host_target()
    dot = None if args.no_dot else target_flavor(target)
    print(f"target {target}; dot-product kernels: {dot.name if dot else 'no'}")
    # TVMScript's parser costs ~0.1 s on its first use in a process (lazy imports): a
    # once-per-process cost like importing TVM, paid here (the VNNI kernels no longer go
    # through it; the warm-up stays so these numbers compare with earlier runs)
    tvm.script.from_source('# from tvm.script import tirx as T\n@T.prim_func\n'
                           'def f(A: T.Buffer((1,), "int8")):\n    A[0] = T.int8(0)\n')
    ctx = QdOptMain(args=[]).ctx
    stages = ["parse", "qnn-canonicalize", "qnn-decompose", "qnn-lower-to-linalg", "relax translation"]
    print(f"{'blocks':>7} {'L1 ops':>7} | " + " | ".join(f"{s:>19}" for s in stages)
          + f" | {'python total':>12} | {'ms/L1 op':>8} | {'median':>8} | {'tvm.compile':>11}")
    for n in (int(b) for b in args.blocks.split(",")):
        text = chain(n)
        runs = []
        for _ in range(max(1, args.repeat)):
            times = []
            t0 = time.perf_counter()
            module = parse_module(ctx, text)
            times.append(time.perf_counter() - t0)
            n_ops = count_ops(module)
            for p_ in (QnnCanonicalizePass(), QnnDecomposePass(), QnnLowerToLinalgPass()):
                t0 = time.perf_counter()
                p_.apply(ctx, module)
                times.append(time.perf_counter() - t0)
            clear_caches()  # every run builds its own kernels: no help from a previous run
            t0 = time.perf_counter()
            mod, _ = translate(module, dot=dot)
            times.append(time.perf_counter() - t0)
            runs.append(times)
        times = [min(stage) for stage in zip(*runs)]
        median_total = float(np.median([sum(r) for r in runs]))
        build = "-"
        if n <= args.tvm_build_up_to:
            from tvm_bridge.compile import build as tvm_build

            t0 = time.perf_counter()
            tvm_build(mod, target)  # as qd-run builds: our pipeline, the VM in compiled mode
            build = f"{time.perf_counter() - t0:9.1f} s"
        total = sum(times)
        print(f"{n:>7} {n_ops:>7} | " + " | ".join(f"{t:8.3f} s {1e3 * t / n_ops:5.2f}ms" for t in times)
              + f" | {total:10.2f} s | {1e3 * total / n_ops:8.3f} | {1e3 * median_total / n_ops:8.3f} | {build:>11}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
