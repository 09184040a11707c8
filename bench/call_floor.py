"""The per-call floor: what one call of a small compiled model costs, ours against LiteRT XNNPACK.

    python bench/call_floor.py [--calls 2000] [--models empty,one_op,...] [--profiles tflite,litert]

Models: `empty` (one RESHAPE: no arithmetic, the cost of getting in and out), `one_op`
(an int8 ADD of two 1x64 tensors), `residual_block` (conv 3x3 + relu6 + residual add on
1x8x8x8), and the small zoo models (mlp_act, elementwise_movement, cnn_small, ds_cnn_kws,
mobilenetv2_tiny).  The built models are written as TFLite by qd-export
(qdialect.exporter) so LiteRT runs the very same graph.

Ours: `CompiledModel.__call__` (numpy in, numpy out: inputs copied into kept buffers, the
model run, outputs copied into arrays we own) in each rounding profile (`tflite`,
`litert`), the model built as qd-run builds it, in both forms, timed in interleaved rounds:
`fused` is the default, one TIR function for the whole model (tvm_bridge/fused.py; `*` when
the model did not qualify and runs on the VM), `VM` the Relax VM's compiled `main`
(QDIALECT_FUSED=0), `raw` the fused function alone on its kept buffers (what is left when
conversion costs nothing).  LiteRT: the default
interpreter (XNNPACK delegate), 1 thread, `set_tensor` + `invoke` + `get_tensor` per call, in
a child process (LiteRT aborts the process on models it cannot prepare).  Each number is the
median microseconds per call over `--calls` calls after a warm-up; the ratio is ours / LiteRT.
Builds come from the compiled-model cache when it holds them.  Not a test: a benchmark to read.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
ZOO = ROOT / "models" / "zoo"
ZOO_MODELS = ["mlp_act", "elementwise_movement", "cnn_small", "ds_cnn_kws", "mobilenetv2_tiny"]
BUILT = ["empty", "one_op", "residual_block"]


def built_model(name: str):
    """An L1 module for one of the built models (seeded weights)."""
    from qdialect.builder import GraphBuilder
    from qdialect.dialects.quant import UniformQuantizedType as Q

    rng = np.random.default_rng(0)
    g = GraphBuilder()
    act = Q.per_tensor(0.05, -3)
    if name == "empty":
        x = g.input([1, 4, 16], act)
        g.output(g.reshape(x, [1, 64]))
    elif name == "one_op":
        a, b = g.input([1, 64], act), g.input([1, 64], Q.per_tensor(0.04, 5))
        g.output(g.add(a, b, Q.per_tensor(0.07, -2)))
    elif name == "residual_block":
        x = g.input([1, 8, 8, 8], act)
        w = g.constant(rng.integers(-127, 128, (8, 3, 3, 8)).astype(np.int8),
                       Q.per_axis(rng.uniform(0.001, 0.01, 8), 0, axis=0, storage_min=-127))
        bias = g.bias(rng.integers(-500, 500, 8).astype(np.int32), x, w)
        y = g.conv2d(x, w, bias, act, padding="SAME", activation="relu6")
        g.output(g.add(x, y, act))
    else:
        raise ValueError(name)
    return g.build()


def tflite_bytes(name: str) -> bytes:
    if name in BUILT:
        from qdialect.exporter.tflite import export_tflite

        return export_tflite(built_model(name))
    return (ZOO / f"{name}.tflite").read_bytes()


def _median_us(f, calls: int) -> float:
    for _ in range(min(50, calls)):
        f()
    times = np.empty(calls)
    for i in range(calls):
        t0 = time.perf_counter()
        f()
        times[i] = time.perf_counter() - t0
    return float(np.median(times) * 1e6)


def ours(name: str, profile: str, calls: int, tmp: Path) -> dict:
    """Median us per call of our CompiledModel in both forms (the fused TIR function and the
    Relax VM, QDIALECT_FUSED=0), timed in interleaved rounds, and of the fused function alone."""
    import os

    from qdialect.dialects.qnn import set_rounding
    from transforms.pipelines import lower_to_l3
    from tvm_bridge.compile import compile_module
    from tvm_bridge.run_cli import _entry_signature, load_module, make_inputs

    path = tmp / f"{name}.tflite"
    path.write_bytes(tflite_bytes(name))
    module = load_module(path, 1)
    xs = make_inputs(_entry_signature(module)[1], 0)
    set_rounding(module, profile)
    lower_to_l3(module)
    model = compile_module(module)
    saved = os.environ.get("QDIALECT_FUSED")
    os.environ["QDIALECT_FUSED"] = "0"
    try:
        vm = compile_module(module)
    finally:
        if saved is None:
            del os.environ["QDIALECT_FUSED"]
        else:
            os.environ["QDIALECT_FUSED"] = saved
    for a, b in zip(model(*xs), vm(*xs)):
        assert a.dtype == b.dtype and np.array_equal(a, b), f"{name}: the two forms differ"
    raw = None
    if model.is_fused:
        runner = model._fused_runner
        from tvm_bridge.cpu import current_threads

        function, args = runner.function, [*runner._args, current_threads()]  # (main's last argument: threads)
        raw = lambda: function(*args)  # noqa: E731
    rounds = 5
    fused_t, vm_t, raw_t = [], [], []
    for _ in range(rounds):  # interleaved: a change in machine load hits both forms alike
        fused_t.append(_median_us(lambda: model(*xs), calls // rounds))
        vm_t.append(_median_us(lambda: vm(*xs), calls // rounds))
        if raw is not None:
            raw_t.append(_median_us(raw, calls // rounds))
    return {"call": float(np.median(fused_t)), "vm": float(np.median(vm_t)),
            "raw": float(np.median(raw_t)) if raw_t else float("nan"), "fused": model.is_fused, "inputs": xs}


_LITERT = r"""
import sys, time, numpy as np
from ai_edge_litert.interpreter import Interpreter
model, data, calls = sys.argv[1], np.load(sys.argv[2]), int(sys.argv[3])
it = Interpreter(model_path=model, num_threads=1)
it.allocate_tensors()
ins, outs = it.get_input_details(), it.get_output_details()
xs = [data[f"input_{j}"].astype(d["dtype"]) for j, d in enumerate(ins)]
def call():
    for d, x in zip(ins, xs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in outs]
for _ in range(min(50, calls)):
    call()
times = np.empty(calls)
for i in range(calls):
    t0 = time.perf_counter(); call(); times[i] = time.perf_counter() - t0
inv = np.empty(calls)
for i in range(calls):
    t0 = time.perf_counter(); it.invoke(); inv[i] = time.perf_counter() - t0
print(float(np.median(times) * 1e6), float(np.median(inv) * 1e6))
"""


def litert_xnnpack(name: str, xs, calls: int, tmp: Path) -> tuple[float, float]:
    """(median us of set_tensor + invoke + get_tensor, median us of invoke alone), 1 thread."""
    model, data = tmp / f"{name}.tflite", tmp / f"{name}.npz"
    np.savez(data, **{f"input_{j}": x for j, x in enumerate(xs)})
    proc = subprocess.run([sys.executable, "-c", _LITERT, str(model), str(data), str(calls)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"LiteRT failed on {name}: {proc.stderr.strip().splitlines()[-1:]}")
    full, invoke = proc.stdout.split()
    return float(full), float(invoke)


def main(argv=None) -> int:
    import tempfile

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--models", default=",".join(BUILT + ZOO_MODELS))
    p.add_argument("--profiles", default="tflite,litert")
    args = p.parse_args(argv)
    unknown = [m for m in args.models.split(",") if m not in BUILT and not (ZOO / f"{m}.tflite").exists()]
    if unknown:
        p.error(f"unknown model(s) {', '.join(unknown)} (built: {', '.join(BUILT)}; or a models/zoo name)")
    bad = [pr for pr in args.profiles.split(",") if pr not in ("tflite", "litert")]
    if bad:
        p.error(f"unknown profile(s) {', '.join(bad)} (tflite, litert)")
    sys.modules.setdefault("torch", None)  # as qd-run: TVM's FFI would import PyTorch
    from tvm_bridge.compile import host_target

    print(f"per-call microseconds (median of {args.calls}); host {host_target().attrs['mcpu']}, 1 thread")
    print(f"{'model':<22} {'XNNPACK':>8} {'(invoke)':>8} | " + " | ".join(
        f"{pr + ' VM':>10} {'fused':>6} {'raw':>6} {'ratio':>5}" for pr in args.profiles.split(",")))
    rows = {}
    with tempfile.TemporaryDirectory(prefix="qd-floor-") as tmp:
        for name in args.models.split(","):
            cells, peer = [], None
            for profile in args.profiles.split(","):
                r = ours(name, profile, args.calls, Path(tmp))
                if peer is None:
                    peer = litert_xnnpack(name, r["inputs"], args.calls, Path(tmp))
                mark = "" if r["fused"] else "*"
                cells.append(f"{r['vm']:10.1f} {r['call']:5.1f}{mark or ' '} {r['raw']:6.1f} {r['call'] / peer[0]:5.2f}")
                rows[f"{name}/{profile}"] = {"ours": r["call"], "vm": r["vm"], "raw": r["raw"], "fused": r["fused"],
                                             "xnnpack": peer[0]}
            print(f"{name:<22} {peer[0]:8.1f} {peer[1]:8.1f} | " + " | ".join(cells), flush=True)
    if "--json" in sys.argv:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
