"""Time to first result: from a model file to its first output, cold and from the cache.

    python bench/time_to_first.py [MODEL ...] [--runs 3]

For each model (default: models/zoo/mobilenetv2_tiny.tflite) and each of qd-run's two
builds -- quick (LLVM at opt-level 0, qd-run's default for a run of few samples) and full
(`--opt full`, the fast kernels: what `--bench`, `compile_module` and bench/latency.py use)
-- it prints

  * the wall time of whole `qd-run MODEL --samples 1 --compare none [--opt full]`
    processes: with a new, empty compiled-model cache (cold: everything is built) and then
    again with the cache that run filled (cached), fastest of `--runs` each (each cold run
    gets its own empty cache directory);
  * where a cold and a cached process spend it, measured inside one child process per
    case: Python imports (qdialect, TVM), import of the model, lowering to L3, Relax
    translation, `relax.build` (TVM's passes and LLVM IR; or, for a model compile_module
    builds fused, the fuse step and TVM's TIR build), codegen (LLVM making machine
    code: the library export, `export_library`, on the way into the cache), VM set-up and
    the first call, and the steady-state call (median of 200).  Cached, qd-run takes its
    cached path (tvm_bridge/fast_run.py): Python imports without xDSL, qdialect or `import
    tvm` (numpy, tvm_ffi), the run key (hashes of the model file and of the sources), the
    `.run` file and the library loaded with TVM's runtime only, VM set-up and the first call.

Python's bytecode caches are allowed in the children (PYTHONDONTWRITEBYTECODE removed from
their environment) and written by one untimed process first, as a package installed from a
wheel has them; `--no-bytecode` measures with the caller's setting.
Timings on a shared machine are noisy: compare the rows of one run with each other; the
processes' CPU time (user + system) is printed beside their wall time, as it depends less
on what else the machine runs.
Not a test: a benchmark to read.  (bench/compile_time.py measures how the Python stages
scale with model size; this one measures one model's whole path.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
sys.modules.setdefault("torch", None)   # as qd-run does: TVM's FFI would import PyTorch
import numpy as np
from tvm_bridge.run_cli import _entry_signature, load_module, make_inputs
from transforms import pipelines
t1 = time.perf_counter()
import tvm
from tvm_bridge import cache
from tvm_bridge.compile import CompiledModel, as_target, build, cannot_run_here, fused_enabled, quick_target
from tvm_bridge.translate import translate
from tvm_bridge.kernels import target_flavor
t2 = time.perf_counter()
stages = {"python imports (qdialect)": t1 - t0, "python imports (tvm)": t2 - t1}
def timed(name, f, *a, **k):
    t = time.perf_counter(); r = f(*a, **k); stages[name] = time.perf_counter() - t; return r
module = timed("import model", load_module, sys.argv[1], 1)
xs = make_inputs(_entry_signature(module)[1], 0)
tgt = quick_target(None) if sys.argv[2] == "quick" else as_target(None)  # as qd-run's --opt
flavor = target_flavor(tgt)
from pathlib import Path
from tvm_bridge.run_cli import _run_key, build_parser
args = build_parser().parse_args([sys.argv[1]])
def look_up():  # as qd-run (compile_unlowered): named by the run key, found before lowering
    k = cache.unlowered_key(f"identity {_run_key(args, Path(sys.argv[1]), Path(sys.argv[1]).read_bytes())}",
                            str(tgt), "entry None", f"dot {flavor!r}", f"fused {fused_enabled()}")
    return k, cache.load(k)
key, found = timed("cache look-up", look_up)
if found is None:
    from qdialect.io_types import declared_dtypes
    from tvm_bridge.translate import Translator
    l3 = module.clone()
    timed("lower to L3", pipelines.lower_to_l3, l3)
    mod, n = timed("relax translation", translate, l3, None, dot=flavor)
    from tvm_bridge.compile import _fused_of, build_fused
    ex, fz = timed("fused: fuse + TIR build (None: VM)", build_fused, mod, tgt) if fused_enabled() else (None, None)
    if ex is None:
        ex = timed("relax.build (passes, LLVM IR)", build, mod, tgt)
    dts = [None if d is None else np.dtype(d).str for d in declared_dtypes(Translator(l3).entry(None))[1]]
    meta = {"n_outputs": n, "out_dtypes": dts}
    if fz is not None:
        meta.update(form="fused", fused=fz[0])
    timed("codegen + export (machine code)", cache.store, key, ex, meta, constants=fz[1] if fz else None)
    found = timed("load library", cache.load, key, False)
library, meta, path = found
model = CompiledModel(None, meta["n_outputs"], tgt, library=library, library_path=path,
                      fused=_fused_of(meta) if meta.get("form") == "fused" else None)
timed("VM set-up + first call", model, *xs)
times = []
for _ in range(200):
    t = time.perf_counter(); model(*xs); times.append(time.perf_counter() - t)
stages["steady-state call (median)"] = float(np.median(times))
print(json.dumps(stages))
"""


_FAST_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
sys.modules.setdefault("torch", None)
import numpy as np
from tvm_bridge import fast_run
from tvm_bridge.run_cli import build_parser, _run_key, inputs_from_specs
import tvm_ffi
t1 = time.perf_counter()
stages = {"python imports (numpy, tvm_ffi)": t1 - t0}
def timed(name, f, *a, **k):
    t = time.perf_counter(); r = f(*a, **k); stages[name] = time.perf_counter() - t; return r
from pathlib import Path
args = build_parser().parse_args([sys.argv[1]])
data = Path(sys.argv[1]).read_bytes()
rk = timed("run key (model + source hashes)", _run_key, args, Path(sys.argv[1]), data)
meta = timed("read .run", fast_run.recall, rk)
if meta is None:
    raise SystemExit("no .run entry: qd-run has not run this model with this cache")
model, _ = timed("load library (runtime only), VM", fast_run.load, meta["entry"])
xs = inputs_from_specs(meta["inputs"], 0)
timed("first call", model, *xs)
times = []
for _ in range(200):
    t = time.perf_counter(); model(*xs); times.append(time.perf_counter() - t)
stages["steady-state call (median)"] = float(np.median(times))
print(json.dumps(stages))
"""


def _wall(cmd, env) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one process running `cmd`."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _breakdown(model: str, env, child: str = _CHILD, *extra: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", child, model, *extra], env=env, capture_output=True, text=True,
                          cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"breakdown of {model} ({' '.join(extra)}) failed: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="*", default=[str(ROOT / "models" / "zoo" / "mobilenetv2_tiny.tflite")])
    p.add_argument("--runs", type=int, default=3, help="whole-process runs of each case (fastest printed)")
    p.add_argument("--no-bytecode", action="store_true",
                   help="keep PYTHONDONTWRITEBYTECODE as the caller set it (by default the children "
                        "run without it, after one untimed process that writes the bytecode caches: "
                        "a package pip installed from a wheel has them; without them each process "
                        "compiles qdialect's sources again, about 0.2 s)")
    args = p.parse_args(argv)
    qd_run = str(Path(sys.executable).with_name("qd-run"))
    for model in args.models:
        print(f"model {model}")
        rows = []
        for build, opt in (("quick", []), ("full", ["--opt", "full"])):
            with tempfile.TemporaryDirectory(prefix="qd-ttf-") as tmp:
                env = dict(os.environ, QDIALECT_CACHE="1", QDIALECT_CACHE_DIR=str(Path(tmp) / "warm-up"))
                cmd = [qd_run, model, "--samples", "1", "--compare", "none", *opt]
                if not args.no_bytecode:  # as an installed package runs: its modules' bytecode written
                    env.pop("PYTHONDONTWRITEBYTECODE", None)
                    _wall(cmd, env)  # (one process first, which writes what is missing; not timed)
                cold = []
                for i in range(max(1, args.runs)):
                    env["QDIALECT_CACHE_DIR"] = str(Path(tmp) / f"run{i}")
                    cold.append(_wall(cmd, env))
                cached = [_wall(cmd, env) for _ in range(max(1, args.runs))]
                print(f"  whole qd-run process, {build + ' build:':<12} cold {min(cold)[0]:6.2f} s   "
                      f"cached {min(cached)[0]:6.2f} s wall (fastest of {len(cold)}; slowest {max(cold)[0]:.2f} / "
                      f"{max(cached)[0]:.2f} s); CPU time {min(c for _, c in cold):.2f} / "
                      f"{min(c for _, c in cached):.2f} s  [{' '.join(['qd-run MODEL', *cmd[2:]])}]", flush=True)
                cached_row = _breakdown(model, env, _FAST_CHILD)  # the cache the qd-run processes filled
                env["QDIALECT_CACHE_DIR"] = str(Path(tmp) / "breakdown")
                rows += [(f"cold {build}", _breakdown(model, env, _CHILD, build)), (f"cached {build}", cached_row)]
        names = list(dict.fromkeys(n for _, r in rows for n in r))
        print(f"  {'stage':<34} " + " ".join(f"{case:>12}" for case, _ in rows))
        for n in names:
            cells = []
            for _, r in rows:
                v = r.get(n)
                cells.append("-" if v is None else (f"{v * 1e6:7.1f} us" if "steady" in n else f"{v * 1e3:7.1f} ms"))
            print(f"  {n:<34} " + " ".join(f"{c:>12}" for c in cells))
        totals = [sum(v for k, v in r.items() if "steady" not in k) for _, r in rows]
        print(f"  {'total to first output':<34} " + " ".join(f"{t * 1e3:9.1f} ms" for t in totals), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
