"""ONNX Runtime on an emulated x86 CPU without VNNI, against our ONNX profiles.

ORT / MLAS picks its integer and float kernels from CPUID.  On a CPU with
AVX2 but neither AVX-512 VNNI nor AVX-VNNI (Haswell .. Comet Lake, Zen 2 / 3),
its uint8 x int8 dot products use `vpmaddubsw`, which saturates each pair of
adjacent products to int16.  `qemu-x86_64 -cpu Haswell` runs this venv's
Python and ORT as such a CPU (qemu 7.2's TCG has no AVX-512 at all), so the
integers of that path can be measured on any x86-64 machine.

    .venv/bin/python tools/ort_emulated.py [MODEL.onnx | DIR ...] [--samples N] [--tvm]
                                           [--profiles onnxruntime,onnx] [--cpu Haswell]

For each model and profile: ORT under emulation (default session for
`onnxruntime`, ORT_DISABLE_ALL for `onnx`) on the seeded inputs the tests use
(`tests.onnx_helpers.inputs_for`, seeds 0..N-1), our interpreter with the ISA
forced to the AVX2 model (`QDIALECT_ORT_ISA=avx2`), optionally the TVM build
of the same recipe; prints the differing elements, and how many elements
emulated ORT itself differs from this machine's native ORT (where the CPU
changes ORT's answer at all).  Exit status 1 if any comparison differs.

`run_emulated(jobs)` is the library part: one qemu process runs a batch of
(model, session, inputs) jobs (the worker mode of this file) and returns ORT's
outputs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
QEMU = "qemu-x86_64"
#: a CPU model with AVX2 / FMA3 and no AVX-512, no AVX-VNNI
CPU = "Haswell"
#: models per qemu process in the measurement
CHUNK = 8


def qemu_path() -> str | None:
    return shutil.which(QEMU)


def run_emulated(jobs: list[tuple[str, bool, list[np.ndarray]]], cpu: str = CPU,
                 timeout: float = 1200) -> list[list[np.ndarray]]:
    """ORT's outputs for each job (model path, disable_all, inputs), computed by
    this interpreter's ORT under `qemu-x86_64 -cpu <cpu>`, one process for all."""
    qemu = qemu_path()
    if qemu is None:
        raise FileNotFoundError(f"{QEMU} is not on PATH (Debian package qemu-user)")
    with tempfile.TemporaryDirectory() as tmp:
        req, out = Path(tmp) / "req.npz", Path(tmp) / "out.npz"
        arrays = {}
        spec = []
        for j, (path, disable_all, inputs) in enumerate(jobs):
            for i, a in enumerate(inputs):
                arrays[f"in_{j}_{i}"] = np.asarray(a)
            spec.append({"path": str(path), "disable_all": bool(disable_all), "inputs": len(inputs)})
        np.savez(req, spec=np.array(json.dumps(spec)), **arrays)
        proc = subprocess.run([qemu, "-cpu", cpu, sys.executable, __file__, "--worker", str(req), str(out)],
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            err = [ln for ln in proc.stderr.splitlines() if "TCG doesn't support" not in ln]
            raise RuntimeError(f"ORT under {QEMU} -cpu {cpu} failed: " + "\n".join(err[-20:]))
        with np.load(out) as data:
            counts = json.loads(str(data["counts"]))
            return [[data[f"out_{j}_{k}"] for k in range(n)] for j, n in enumerate(counts)]


def _worker(req: str, out: str) -> None:
    """Runs under qemu: ORT on every job of `req`, outputs to `out`."""
    import onnxruntime as ort

    sessions = {}
    results = {}
    with np.load(req) as data:
        spec = json.loads(str(data["spec"]))
        counts = []
        for j, job in enumerate(spec):
            key = (job["path"], job["disable_all"])
            if key not in sessions:
                so = ort.SessionOptions()
                so.intra_op_num_threads = 1
                so.log_severity_level = 3
                if job["disable_all"]:
                    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
                sessions[key] = ort.InferenceSession(job["path"], so, providers=["CPUExecutionProvider"])
            sess = sessions[key]
            names = [i.name for i in sess.get_inputs()]
            feeds = {n: data[f"in_{j}_{i}"] for i, n in enumerate(names[:job["inputs"]])}
            outs = sess.run(None, feeds)
            counts.append(len(outs))
            for k, o in enumerate(outs):
                results[f"out_{j}_{k}"] = np.asarray(o)
    np.savez(out, counts=np.array(json.dumps(counts)), **results)


# --------------------------------------------------------------------------- measurement


def _models(args: list[str]) -> list[Path]:
    paths = []
    for a in args or [str(ROOT / "models" / "onnx")]:
        p = Path(a)
        paths.extend(sorted(p.glob("*.onnx")) if p.is_dir() else [p])
    return paths


def _ours(path: Path, profile: str, samples: int, tvm: bool):
    """(inputs per sample, interpreter outputs per sample, TVM outputs per sample or a refusal)."""
    from qdialect.importer.onnx import import_onnx_file
    from qdialect.interpreter import Interpreter, run_module
    from tests.onnx_helpers import inputs_for

    module = import_onnx_file(path, profile=profile)
    inputs = [inputs_for(module, seed) for seed in range(samples)]
    interp = [run_module(module, x) for x in inputs]
    if not tvm:
        return inputs, interp, None
    from transforms.decompose import Unsupported
    from transforms.pipelines import lower_to_l3
    from tvm_bridge.compile import compile_module

    out_dtypes = [Interpreter._dtype(v) for v in Interpreter(module).entry().get_return_op().operands]
    try:
        lower_to_l3(module)
    except Unsupported as e:
        return inputs, interp, f"not lowered: {e}"
    except Exception as e:  # noqa: BLE001 - reported per model
        return inputs, interp, f"not lowered: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
    compiled = compile_module(module)
    outs = []
    for x in inputs:
        # (copies: the arrays TVM returns may share memory it frees with the compiled module)
        outs.append([np.array(o.view(d) if o.dtype != d and o.dtype.itemsize == d.itemsize else o)
                     for o, d in zip(compiled(*x), out_dtypes)])
    return inputs, interp, outs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="*", help="ONNX files or directories (default: models/onnx)")
    p.add_argument("--samples", type=int, default=2)
    p.add_argument("--profiles", default="onnxruntime,onnx")
    p.add_argument("--cpu", default=CPU)
    p.add_argument("--tvm", action="store_true", help="also build and run the TVM lowering")
    p.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        _worker(*args.worker)
        return 0
    sys.path.insert(0, str(ROOT))
    os.environ["QDIALECT_ORT_ISA"] = "avx2"
    from tests.onnx_helpers import differing, ort_run

    def total(a, b):
        return sum(sum(differing(x, y)) for x, y in zip(a, b))

    print("| model | profile | elements | emulated ORT vs native ORT | interp (avx2) | TVM (avx2) |")
    print("|---|---|---|---|---|---|", flush=True)
    bad = False
    paths = _models(args.models)
    for c0 in range(0, len(paths), CHUNK):  # one qemu process per chunk: results as they come
        rows, jobs = [], []
        for path in paths[c0:c0 + CHUNK]:
            for profile in args.profiles.split(","):
                try:
                    inputs, interp, tvm = _ours(path, profile, args.samples, args.tvm)
                except Exception as e:  # noqa: BLE001 - a model our importer refuses is reported, not fatal
                    rows.append((path, profile, None, None, None, None, f"{type(e).__name__}: {str(e)[:120]}"))
                    continue
                native = [ort_run(path, x, disable_all=profile == "onnx") for x in inputs]
                rows.append((path, profile, inputs, interp, tvm, native, None))
                jobs.extend((str(path), profile == "onnx", x) for x in inputs)
        emulated = iter(run_emulated(jobs, cpu=args.cpu)) if jobs else iter(())
        for path, profile, inputs, interp, tvm, native, err in rows:
            if err is not None:
                print(f"| {path.stem} | {profile} | | | {err} | |", flush=True)
                continue
            emu = [next(emulated) for _ in inputs]
            size = sum(int(np.size(o)) for sample in emu for o in sample)
            d_interp = total(interp, emu)
            bad |= d_interp != 0
            if tvm is None or isinstance(tvm, str):
                d_tvm = tvm or ""
            else:
                d_tvm = total(tvm, emu)
                bad |= d_tvm != 0
            print(f"| {path.stem} | {profile} | {size} | {total(emu, native)} | {d_interp} | {d_tvm} |", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
