"""Where the time goes in one zoo model compiled by our TVM bridge: per-kernel times.

    python bench/profile_kernels.py mobilenetv2_tiny [--rounding tflite|litert] [--runs 50] [--no-schedule]
                                    [--in-context]

MODEL is a zoo name or a .tflite or .onnx path (`--rounding tflite` keeps an ONNX model's own
import profile).

Compiles the model exactly as `qd-run` does, then times every call the Relax VM
makes (each fused PrimFunc and the VM's own builtins) with `time_evaluator`-style
repetition through the VM's instrument hook, and prints the kernels sorted by
total time with their share.  Also prints end-to-end median latency and the
LiteRT default (XNNPACK) latency on the same input for scale.  Not a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("--rounding", default="tflite")
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--no-schedule", action="store_true", help="TVM's default pipeline without our schedules")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--threads", type=int, default=1, help="TVM worker threads (default 1)")
    p.add_argument("--in-context", action="store_true",
                   help="time each kernel once per call in the model's own sequence, over --runs calls "
                        "(caches as the real call leaves them: weights beyond L3 come from memory), "
                        "instead of re-running it warm")
    args = p.parse_args(argv)

    import tvm
    from tvm import relax

    from qdialect.dialects.qnn import set_rounding
    from transforms import pipelines
    from tvm_bridge import compile as qc
    from tvm_bridge.run_cli import _entry_signature, load_module, make_inputs
    from tvm_bridge.translate import translate

    path = Path(args.model) if args.model.endswith((".tflite", ".onnx")) else ROOT / "models" / "zoo" / f"{args.model}.tflite"
    module = load_module(path, 1)
    _, in_values, _ = _entry_signature(module)
    sample = make_inputs(in_values, 0)
    if args.rounding != "tflite":
        set_rounding(module, args.rounding)
    pipelines.lower_to_l3(module)
    target = qc.host_target()
    from tvm_bridge.kernels import target_flavor

    mod, _ = translate(module, dot=target_flavor(target))
    t0 = time.perf_counter()
    kwargs = {}
    if not args.no_schedule and hasattr(qc, "pipeline"):
        kwargs["relax_pipeline"] = qc.pipeline(target)
        from tvm_bridge.lowering import register

        kwargs["tir_pipeline"] = register()  # (the TIR pipeline of our builds)
    ex = tvm.compile(mod, target=target, **kwargs)
    print(f"compile: {time.perf_counter() - t0:.1f} s")
    dev = tvm.cpu()
    if args.threads:
        from tvm_bridge.cpu import set_threads

        set_threads(args.threads)  # (mode 1 of config_threadpool put 2 threads on one core here)
    vm = relax.VirtualMachine(ex, dev)
    arrays = [x.view(f"int{x.dtype.itemsize * 8}") if x.dtype.kind == "u" else x for x in sample]
    args_t = [tvm.runtime.tensor(a, dev) for a in arrays]
    for _ in range(5):
        vm["main"](*args_t)
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        vm["main"](*args_t)
        times.append(time.perf_counter() - t0)
    e2e = statistics.median(times) * 1e3

    # Each kernel call is re-run `reps` times inside the VM's instrument hook (kernels
    # write their outputs into preallocated arguments, so re-running is harmless) and
    # its median is charged to the kernel; VM builtins are timed once around the call.
    rows = defaultdict(lambda: [0.0, 0])
    reps = 20
    pending = {}
    if args.in_context:
        samples = defaultdict(list)  # (position in the call, symbol) -> seconds of each call

        def timed(fn, symbol, before, ret, *call_args):
            if before:
                pending["t"] = time.perf_counter()
            else:
                samples[(len(pending["seen"]), str(symbol))].append(time.perf_counter() - pending["t"])
                pending["seen"].append(symbol)
            return 0

        vm.set_instrument(timed)
        for _ in range(args.runs):
            pending["seen"] = []
            vm["main"](*args_t)
        for (_, symbol), ts in samples.items():
            key = ("(vm) " + symbol) if (symbol.startswith("vm.builtin") or "." in symbol) else symbol
            rows[key][0] += statistics.median(ts) * 1e6
            rows[key][1] += 1

    def instrument(fn, symbol, before, ret, *call_args):
        symbol = str(symbol)
        if symbol.startswith("vm.builtin") or symbol.startswith("relax.") or "." in symbol:
            if before:
                pending[symbol] = time.perf_counter()
            else:
                rows["(vm) " + symbol][0] += (time.perf_counter() - pending.pop(symbol, time.perf_counter())) * 1e6
                rows["(vm) " + symbol][1] += 1
            return 0
        if before:
            ts = []
            for _ in range(reps):
                t0 = time.perf_counter()
                fn(*call_args)
                ts.append(time.perf_counter() - t0)
            rows[symbol][0] += statistics.median(ts) * 1e6
            rows[symbol][1] += 1
        return 0

    if not args.in_context:
        vm.set_instrument(instrument)
        vm["main"](*args_t)
    total = sum(r[0] for r in rows.values())
    total_k = sum(r[0] for k, r in rows.items() if not k.startswith('(vm)'))
    kernels = sum(r[0] for k, r in rows.items() if not k.startswith("(vm)"))
    n_calls = sum(r[1] for k, r in rows.items() if not k.startswith("(vm)"))
    print(f"end-to-end median: {e2e:.3f} ms over {args.runs} runs; {n_calls} kernel calls take "
          f"{kernels / 1e3:.3f} ms, the rest ({e2e - kernels / 1e3:.3f} ms) is the VM: allocation, "
          f"reshapes, call overhead (the VM rows below are inflated by the Python hook)")
    for name, (us, n) in sorted(rows.items(), key=lambda kv: -kv[1][0])[: args.top]:
        print(f"  {us:9.1f} us {100 * us / total:5.1f}%  x{n:<3} {name}")
    if path.suffix != ".tflite":  # (an ONNX model: bench/latency.py compares it with ONNX Runtime)
        return 0
    try:
        from ai_edge_litert.interpreter import Interpreter

        it = Interpreter(model_content=path.read_bytes(), num_threads=1)
        it.allocate_tensors()
        for d, a in zip(it.get_input_details(), sample):
            it.set_tensor(d["index"], a.astype(d["dtype"]))
        for _ in range(5):
            it.invoke()
        lt = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            it.invoke()
            lt.append(time.perf_counter() - t0)
        ref = statistics.median(lt) * 1e3
        print(f"LiteRT default 1 thread: {ref:.3f} ms; ratio ours/LiteRT x{e2e / ref:.2f}")
    except ImportError:
        pass
    return 0


if __name__ == "__main__":
    from tvm_bridge.cpu import allow_threads

    allow_threads()  # before TVM starts its pool: --threads 2 possible on a 2-core machine
    sys.exit(main())
