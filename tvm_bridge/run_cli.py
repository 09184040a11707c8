"""`qd-run`: the main job — import, (lower,) run, compare with LiteRT, report.

    qd-run [MODEL] [--backend tvm|interp] [--input IN.npz] [--output OUT.npz]
           [--rounding PROFILE] [--compare litert-ref|litert|none]
           [--bench N] [--seed S] [--samples N] [--batch N] [--opt auto|quick|full]

MODEL is a `.tflite` file or a `.mlir` file (entry `main` or the only public
function).  With no MODEL it runs the example model shipped in the package.
Exit status: 0 ran (and matched, when comparing), 1 ran but did not match,
2 bad input (one line on stderr, after the "  .. " progress lines), 3 a bug
in qdialect (one line `qd-run: internal error: ...`, never a traceback).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import sys
import time
from importlib import resources
from pathlib import Path

import numpy as np

from tvm_bridge.cpu import SettingError

EXIT_OK, EXIT_MISMATCH, EXIT_BAD_INPUT, EXIT_INTERNAL_ERROR = 0, 1, 2, 3

#: the most samples a run may have for `--opt auto` to build quick (LLVM at
#: tvm_bridge/compile.py's QUICK_OPT_LEVEL) rather than full.  Session 23, Zen 5: a quick
#: build of MobileNetV2-0.35 is 0.8-0.9 s shorter and each call 0.26 ms longer, of
#: MobileNetV2-1.0 at 224x224 1.1 s shorter and 4.5 ms a call longer, so both gain over
#: 16 calls with a wide margin (the break-even is near 3000 and 240 calls)
QUICK_MAX_SAMPLES = 16


class BadInput(Exception):
    """Bad user input: reported as one line, exit status 2."""


def example_model() -> Path:
    return Path(str(resources.files("qdialect") / "examples" / "cnn_small.tflite"))


def _progress(msg: str) -> None:
    print(f"  .. {msg}", file=sys.stderr, flush=True)


def load_module(path: Path, batch: int, *, profile: str = "onnxruntime", progress=None):
    """Parse `.mlir` or import `.tflite` / `.onnx` (a path or str) into a verified module.

    `profile` is the ONNX importer's ("onnxruntime" or "onnx"); `progress` receives its remarks."""
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    from qdialect.diagnostics import one_line, parse_module

    path = Path(path)
    if not path.exists():
        raise BadInput(f"cannot read {path}: no such file")
    if path.suffix == ".tflite":
        from qdialect.importer.tflite import TFLiteImportError, import_tflite

        try:
            return import_tflite(path.read_bytes(), batch=batch, name=path.stem)
        except TFLiteImportError as e:
            raise BadInput(f"{path}: {e}") from None
    if path.suffix == ".onnx":
        from qdialect.importer.onnx import OnnxImportError, import_onnx

        remarks: list[str] = []
        try:
            module = import_onnx(path.read_bytes(), batch=batch, name=path.stem, profile=profile, remarks=remarks)
        except OnnxImportError as e:
            raise BadInput(f"{path}: {e}") from None
        if progress is not None:
            for r in remarks:
                progress(f"remark: {r}")
        return module
    if path.suffix == ".mlir":
        from transforms.opt import QdOptMain

        ctx = QdOptMain(args=[]).ctx
        try:
            return parse_module(ctx, path.read_bytes(), str(path))
        except (ParseError, DiagnosticException) as e:
            raise BadInput(one_line(e, str(path))) from None
    raise BadInput(f"{path}: expected a .tflite, .onnx or .mlir file")


def _entry_signature(module):
    """(entry function, its argument values, its result types); BadInput for a
    `qnn.element_type` mark that cannot describe its value."""
    from qdialect.interpreter import Interpreter
    from qdialect.io_types import EdgeTypeError, declared_dtypes

    f = Interpreter(module).entry()
    try:
        declared_dtypes(f)
    except EdgeTypeError as e:
        raise BadInput(str(e)) from None
    return f, list(f.body.block.args), list(f.function_type.outputs.data)


def input_specs(args_values) -> list[dict]:
    """Per entry argument what qd-run needs to make or check its inputs without the module:
    {"shape", "dtype" (the declared one, `_declared_dtype`), "range": [lo, hi] of random
    integers, or None for standard-normal float32}.  JSON-able (tvm_bridge/fast_run.py keeps it)."""
    from qdialect.interpreter import Interpreter, _qp

    specs = []
    for v in args_values:
        q = _qp(v)
        dtype = _declared_dtype(v)
        if q is not None:
            span = [int(q.storage_min), int(q.storage_max)]
        elif dtype != Interpreter._dtype(v):  # an unsigned edge (qnn.element_type): its whole storage range
            info = np.iinfo(dtype)
            span = [int(info.min), int(info.max)]
        elif np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            span = [int(max(info.min, -128)), int(min(info.max, 127))]
        else:
            span = None
        specs.append({"shape": [int(d) for d in v.type.get_shape()], "dtype": np.dtype(dtype).str, "range": span})
    return specs


def inputs_from_specs(specs: list[dict], seed: int) -> list[np.ndarray]:
    """Seeded random inputs for `input_specs`: each integer input covers its range."""
    rng = np.random.default_rng(seed)
    out = []
    for spec in specs:
        shape = tuple(spec["shape"])
        if spec["range"] is not None:
            lo, hi = spec["range"]
            out.append(rng.integers(lo, hi + 1, size=shape).astype(np.dtype(spec["dtype"])))
        else:
            out.append(rng.standard_normal(shape).astype(np.float32))
    return out


def make_inputs(args_values, seed: int) -> list[np.ndarray]:
    """Seeded random inputs covering each input's whole storage range."""
    return inputs_from_specs(input_specs(args_values), seed)


def _declared_dtype(value) -> np.dtype:
    """The dtype the model declares for an entry argument: its quantized storage's, the
    `qnn.element_type` mark of an unsigned edge after lowering (`qdialect.io_types`), else its type's."""
    from xdsl.dialects import func
    from xdsl.ir import BlockArgument

    from qdialect.interpreter import Interpreter
    from qdialect.io_types import declared_dtypes

    if isinstance(value, BlockArgument) and isinstance(fn := value.block.parent_op(), func.FuncOp):
        declared = declared_dtypes(fn)[0][value.index]
        if declared is not None:
            return declared
    return np.dtype(Interpreter._dtype(value))


def _output_dtypes(module) -> list[np.dtype]:
    """The dtypes the model declares for the entry's results (as `_declared_dtype` for arguments)."""
    from qdialect.interpreter import Interpreter
    from qdialect.io_types import declared_dtypes

    f = Interpreter(module).entry()
    marks = declared_dtypes(f)[1]
    return [np.dtype(Interpreter._dtype(v)) if d is None else d for v, d in zip(f.get_return_op().operands, marks)]


def _not_representable(a: np.ndarray, want: np.dtype) -> str | None:
    """Why the values of `a` do not fit the model's input dtype `want` exactly (None: they do)."""
    if a.dtype.kind not in "biuf":
        return f"has dtype {a.dtype}, the model expects {want}"
    if want.kind in "iu" and a.size:
        if a.dtype.kind == "f" and not (np.all(np.isfinite(a)) and np.all(a == np.trunc(a))):
            return f"has non-integer values, the model expects {want}"
        info = np.iinfo(want)
        lo, hi = a.min(), a.max()
        if lo < info.min or hi > info.max:
            return f"has values in [{lo}, {hi}], outside {want} [{info.min}, {info.max}]"
    return None


def read_inputs(path: Path, args_values) -> tuple[list[np.ndarray], bool]:
    """input_0.. from an .npz; returns (arrays, stacked) — stacked if one extra leading dim."""
    return _read_inputs(path, input_specs(args_values))


def _read_inputs(path: Path, specs: list[dict]) -> tuple[list[np.ndarray], bool]:
    """`read_inputs` for `input_specs`."""
    try:
        data = np.load(path)
    except Exception as e:  # noqa: BLE001 - any unreadable file is bad input
        raise BadInput(f"cannot read inputs {path}: {e}") from None
    arrays, stacked = [], None
    for i, spec in enumerate(specs):
        key = f"input_{i}"
        if key not in data:
            raise BadInput(f"{path}: missing array '{key}' (have: {', '.join(data.files) or 'none'})")
        try:
            a = data[key]
        except Exception as e:  # noqa: BLE001 - object (pickled) arrays, damaged members
            raise BadInput(f"{path}: cannot read '{key}': {' '.join(str(e).split())}") from None
        want = np.dtype(spec["dtype"])
        problem = _not_representable(a, want)
        if problem is not None:
            raise BadInput(f"{path}: '{key}' {problem}")
        if a.dtype != want:  # the same values in the model's dtype (what every backend is given)
            a = a.astype(want)
        shape = tuple(spec["shape"])
        this_stacked = a.ndim == len(shape) + 1 and tuple(a.shape[1:]) == shape
        if not this_stacked and tuple(a.shape) != shape:
            raise BadInput(f"{path}: '{key}' has shape {list(a.shape)}, the model expects {list(shape)}")
        if stacked is not None and stacked != this_stacked:
            raise BadInput(f"{path}: some inputs are stacks of samples and some are not")
        stacked = this_stacked
        arrays.append(a)
    return arrays, bool(stacked)


_LITERT_CHILD = """
import sys
import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

model_path, in_path, out_path, reference, threads = sys.argv[1:6]
kwargs = dict(model_path=model_path, num_threads=int(threads))
if reference == "1":
    kwargs["experimental_op_resolver_type"] = OpResolverType.BUILTIN_REF
interp = Interpreter(**kwargs)
interp.allocate_tensors()
ins, outs = interp.get_input_details(), interp.get_output_details()
data = np.load(in_path)
results = {}
for i in range(int(data["n"])):
    for j, d in enumerate(ins):
        a = data[f"s{i}_{j}"]
        if tuple(d["shape"]) != a.shape:
            interp.resize_tensor_input(d["index"], a.shape)
            interp.allocate_tensors()
        interp.set_tensor(d["index"], a.astype(d["dtype"]))
    interp.invoke()
    for k, d in enumerate(outs):
        results[f"s{i}_{k}"] = interp.get_tensor(d["index"]).copy()
bench = int(sys.argv[6]) if len(sys.argv) > 6 else 0
if bench:  # median latency of `bench` invokes on the first sample, after a warm-up
    import time
    for j, d in enumerate(ins):
        interp.set_tensor(d["index"], data[f"s0_{j}"].astype(d["dtype"]))
    interp.invoke()
    times = []
    for _ in range(bench):
        t0 = time.perf_counter()
        interp.invoke()
        times.append(time.perf_counter() - t0)
    results["latency"] = np.array(float(np.median(times)))
np.savez(out_path, n=len(outs), **results)
"""


def litert_run(model: bytes, samples: list[list[np.ndarray]], reference: bool, threads: int = 1,
               bench: int = 0, timing: dict | None = None):
    """LiteRT's outputs for each sample, computed in a child process: LiteRT aborts the process
    (a failed CHECK) on models it cannot prepare, e.g. ADD whose output multiplier is not below 1.
    With `bench` > 0, `timing["latency"]` receives the median seconds of that many invokes."""
    import signal
    import subprocess
    import tempfile

    if importlib.util.find_spec("ai_edge_litert") is None:
        raise BadInput("--compare needs ai-edge-litert (pip install -e '.[test]')")
    with tempfile.TemporaryDirectory(prefix="qd-run-litert-") as tmp:
        model_path, in_path, out_path = (str(Path(tmp) / n) for n in ("model.tflite", "in.npz", "out.npz"))
        Path(model_path).write_bytes(model)
        arrays = {f"s{i}_{j}": a for i, sample in enumerate(samples) for j, a in enumerate(sample)}
        np.savez(in_path, n=len(samples), **arrays)
        proc = subprocess.run(
            [sys.executable, "-c", _LITERT_CHILD, model_path, in_path, out_path, "1" if reference else "0", str(threads),
             str(bench)],
            capture_output=True, text=True,
        )
        if proc.returncode < 0:
            name = signal.Signals(-proc.returncode).name
            raise BadInput(f"LiteRT aborts on this model ({name} while preparing or running it); "
                           "there is nothing to compare with (--compare none runs without it)")
        if proc.returncode != 0:
            lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
            raise BadInput(f"LiteRT refuses this model: {lines[-1] if lines else f'exit status {proc.returncode}'}")
        out = np.load(out_path)
        n_out = int(out["n"])
        if timing is not None and "latency" in out.files:
            timing["latency"] = float(out["latency"])
        return [[out[f"s{i}_{k}"] for k in range(n_out)] for i in range(len(samples))]


def onnxruntime_run(model: bytes, samples: list[list[np.ndarray]], disable_all: bool, bench: int = 0,
                    timing: dict | None = None):
    """ONNX Runtime's outputs for each sample (CPU EP, one thread; default graph optimizations, or none
    with `disable_all`).  With `bench` > 0, `timing["latency"]` receives the median seconds of that many runs."""
    if importlib.util.find_spec("onnxruntime") is None:
        raise BadInput("--compare onnxruntime needs onnxruntime (pip install -e '.[onnx]')")
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    if disable_all:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - ORT's refusal is the model's problem
        raise BadInput(f"ONNX Runtime refuses this model: {' '.join(str(e).split())[:300]}") from None
    names = [i.name for i in sess.get_inputs()]
    outs = []
    try:
        for sample in samples:
            outs.append([np.asarray(o) for o in sess.run(None, dict(zip(names, sample)))])
    except Exception as e:  # noqa: BLE001 - ORT's run-time refusal is the model's problem
        raise BadInput(f"ONNX Runtime fails on this model: {' '.join(str(e).split())[:300]}") from None
    if bench > 0 and timing is not None:
        feed = dict(zip(names, samples[0]))
        sess.run(None, feed)
        times = []
        for _ in range(bench):
            t0 = time.perf_counter()
            sess.run(None, feed)
            times.append(time.perf_counter() - t0)
        timing["latency"] = float(np.median(times))
    return outs


def _tvm_runner(module, args, stages):
    """Lower to L3, translate to Relax, compile; returns a callable sample -> outputs."""
    from qdialect.dialects.qnn import set_rounding
    from transforms import pipelines
    from tvm_bridge import cache as build_cache
    from tvm_bridge.compile import QUICK_OPT_LEVEL, cannot_run_here, compile_unlowered, quick_target
    from tvm_bridge.translate import TranslationError

    from xdsl.utils.exceptions import PassFailedException

    if args.rounding is not None and not args.onnx_profile:
        set_rounding(module, args.rounding)
    # the model's own output dtypes (u8 storage leaves L3 as i8 bits)
    out_dtypes = _output_dtypes(module)
    lowering = []

    def lower(module):
        t0 = time.perf_counter()
        _progress("lowering to L3 (qnn-canonicalize, qnn-decompose, qnn-lower-to-linalg)")
        l3 = module.clone()
        try:
            pipelines.lower_to_l3(l3)
        except PassFailedException as e:
            raise BadInput(" ".join(str(e).split())) from None
        lowering.append(time.perf_counter() - t0)
        stages.append(("lower to L3", lowering[0]))
        _progress("translating to Relax and compiling with TVM" + (
            f" (a quick build, LLVM at opt-level {QUICK_OPT_LEVEL}, for {args.n_samples} sample(s): "
            "--opt full builds the fast kernels)" if quick else ""))
        return l3

    t0 = time.perf_counter()
    hits = build_cache.stats["hits"]
    try:  # the cache can skip the lowering too (compile_unlowered)
        # a quick build (`--opt`): LLVM at QUICK_OPT_LEVEL, unless --target names an opt-level
        target = quick_target(args.target) if args.quick else args.target
        quick = args.quick and target.attrs.get("opt-level") == QUICK_OPT_LEVEL
        # named by the run key (the model file and the options): neither the module nor its
        # lowered form is printed to name the cache entry
        model = compile_unlowered(module, lower, target=target, identity=getattr(args, "run_key", None))
    except TranslationError as e:
        raise BadInput(f"TVM bridge: {e}") from None
    cached = build_cache.stats["hits"] > hits
    if cached:
        _progress("loaded the compiled model from the cache (tvm_bridge/cache.py)")
    stages.append(("TVM (cached)" if cached else "TVM compile", time.perf_counter() - t0 - sum(lowering)))
    why = cannot_run_here(model.target)
    if why is not None:
        raise BadInput(f"--target {args.target}: the code cannot run here: {why}")

    from qdialect.io_types import as_declared

    def runner(sample):
        return as_declared(model(*sample), out_dtypes)

    runner.target = str(model.target)
    # the cache entry it runs (tvm_bridge/fast_run.py names it for the next run), if any
    runner.entry = Path(str(model.library_path)).name.removesuffix(".so") if model.library_path else None
    runner.out_dtypes = out_dtypes
    runner.quick = quick
    return runner


def _count_mismatches(ours, theirs) -> list[tuple[int, int, float]]:
    """(differing elements, elements, max |difference|) per output; float outputs compare their bits."""
    out = []
    for k in range(len(ours[0])):
        a = np.stack([o[k] for o in ours])
        b = np.stack([t[k] for t in theirs]).reshape(a.shape)
        if a.dtype.kind == "f" or b.dtype.kind == "f":
            fa, fb = a.astype(np.float32), b.astype(np.float32)
            differ = fa.view(np.int32) != fb.view(np.int32)
            diff = float(np.max(np.abs(fa.astype(np.float64) - fb))) if a.size else 0.0
        else:
            differ = a.astype(np.int64) != b.astype(np.int64)
            diff = int(np.max(np.abs(a.astype(np.int64) - b.astype(np.int64)))) if a.size else 0
        out.append((int(np.count_nonzero(differ)), a.size, diff))
    return out


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, instead of argparse's usage block
        print(f"{self.prog}: error: {' '.join(message.split())}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    p = _ArgumentParser(prog="qd-run", description=__doc__.split("\n\n")[0])
    p.add_argument("model", nargs="?", help=".tflite, .onnx or .mlir (default: the bundled example)")
    p.add_argument("--backend", choices=["tvm", "interp"], default=None,
                   help="default: tvm (the interpreter, said on stderr, when the lowering refuses an op)")
    p.add_argument("--input", type=Path)
    p.add_argument("--output", type=Path)
    p.add_argument("--rounding", default=None, help="override every op's rounding profile")
    p.add_argument("--compare", choices=["litert-ref", "litert", "onnxruntime", "onnx", "none"], default=None,
                   help="default: litert-ref for .tflite (litert with --rounding litert), onnxruntime for .onnx "
                        "(onnx, ORT without graph optimizations, with --rounding onnx), none for .mlir")
    p.add_argument("--bench", type=int, default=0, metavar="N", help="time N runs")
    p.add_argument("--target", default=None, help="TVM target (tvm backend)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=int, default=1, help="random samples when no --input")
    p.add_argument("--batch", type=int, default=1, help="batch for a dynamic batch dimension")
    p.add_argument("--opt", choices=["auto", "quick", "full"], default="auto",
                   help="the TVM build: full (LLVM optimising: the fast kernels), quick (LLVM at opt-level 0: "
                        "a shorter build, kernels about 4x slower, the same results), auto (default): quick for "
                        f"at most {QUICK_MAX_SAMPLES} samples and no --bench, unless the compiled-model cache "
                        "holds the full build from an earlier run of the model with these options")
    return p


def _wants_full(args, n_samples: int) -> bool:
    """Whether this run needs the full build (`--opt`), for `n_samples` samples."""
    if args.opt == "auto":
        return args.bench > 0 or n_samples > QUICK_MAX_SAMPLES
    return args.opt == "full"


def main(argv=None) -> int:
    gc_paused = False
    if argv is None and "torch" not in sys.modules:
        # as a program: TVM's FFI imports PyTorch when it is installed (0.5 to 3 s here) for
        # DLPack interop qd-run never uses; a None entry makes that import fail fast
        sys.modules["torch"] = None
        # as a program, Python's cyclic collector is off until the model is ready (`_finish`):
        # the imports of xDSL and TVM and the model's IR are objects that live until exit,
        # which the collector would traverse again and again to free almost nothing (0.24 s
        # of a cold MobileNetV2-0.35 run: 520 collections during the imports alone)
        gc_paused = gc.isenabled()
        gc.disable()
    args = build_parser().parse_args(argv)
    args.argv, args.gc_paused = argv, gc_paused
    try:
        # integer wrap-around is the semantics, and float overflow in extreme
        # scales is diagnosed where it matters: no numpy warnings on stderr
        with np.errstate(all="ignore"):
            _check_options(args)
            code = _run_cached(args)
            return _run(args) if code is None else code
    except (BadInput, SettingError) as e:  # (a QDIALECT_* variable's value: the user's input too)
        print(f"qd-run: error: {' '.join(str(e).split())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug in qdialect: still one line, with its type for reports
        print(f"qd-run: internal error: {type(e).__name__}: {' '.join(str(e).split())}", file=sys.stderr)
        return EXIT_INTERNAL_ERROR


def _check_options(args) -> None:
    """BadInput for an option value no run accepts (checked before either path)."""
    for flag, value, least in (("--seed", args.seed, 0), ("--samples", args.samples, 1), ("--bench", args.bench, 0)):
        if value < least:
            raise BadInput(f"{flag} {value}: must be >= {least}")


def _run_key(args, path: Path, model_bytes: bytes) -> str | None:
    """The cached path's key for this model file and these options (tvm_bridge/fast_run.py),
    None where there is no cached path (another backend, the cache off)."""
    from tvm_bridge import cache as build_cache
    from tvm_bridge import fast_run

    if args.backend not in (None, "tvm") or not build_cache.enabled():
        return None
    return fast_run.run_key(model_bytes, suffix=path.suffix, batch=args.batch, rounding=args.rounding,
                            target=args.target)


def _run_cached(args) -> int | None:
    """qd-run of a model run before with the same options, from the compiled-model cache
    without xDSL, qdialect's importers or TVM's compiler (tvm_bridge/fast_run.py); None
    when there is no such run (the cold path, `_run`, then does everything)."""
    from tvm_bridge import fast_run

    path = Path(args.model) if args.model else example_model()
    t0 = time.perf_counter()
    try:
        model_bytes = path.read_bytes()
    except OSError:
        return None  # the cold path says what is wrong
    rk = _run_key(args, path, model_bytes)
    meta = fast_run.recall(rk) if rk is not None else None
    found = fast_run.load(meta["entry"]) if meta is not None else None
    if found is None:
        return None
    model = found[0]
    try:
        specs, out_dtypes = meta["inputs"], [np.dtype(d) for d in meta["out_dtypes"]]
        n_ops, entry_name, target = int(meta["n_ops"]), str(meta["entry_name"]), str(meta["target"])
        if len(out_dtypes) != model.n_outputs:
            return None
    except (KeyError, TypeError, ValueError):
        return None
    stages: list[tuple[str, float]] = [("TVM (cached)", time.perf_counter() - t0)]
    args.backend = "tvm"
    if args.input is not None:
        arrays, stacked = _read_inputs(args.input, specs)
        samples = [list(s) for s in zip(*arrays)] if stacked else [arrays]
    else:
        samples = [inputs_from_specs(specs, args.seed + i) for i in range(max(1, args.samples))]
        stacked = args.samples > 1
    if meta.get("quick") and _wants_full(args, len(samples)):
        return None  # a quick build: the cold path builds the full one (and names it in the `.run`)
    _progress("loaded the compiled model from the cache (tvm_bridge/cache.py, tvm_bridge/fast_run.py)")

    def runner(sample):  # io_types.as_declared's view, without importing qdialect (and xDSL) here
        outs = model(*sample)
        return [o.view(d) if o.dtype != d and o.dtype.itemsize == d.itemsize else o
                for o, d in zip(outs, out_dtypes)]

    backend_text = f"tvm ({target}){', quick build' if meta.get('quick') else ''}"
    return _finish(args, path, samples, stacked, runner, backend_text, stages, n_ops, entry_name, len(specs))


def _run(args) -> int:
    from xdsl.dialects.builtin import TensorType

    from qdialect.interpreter import InterpreterError, check_size, run_module
    from qdialect.qparams import ROUNDING_PROFILES

    if args.rounding is not None and args.rounding not in ROUNDING_PROFILES:
        raise BadInput(f"--rounding {args.rounding!r}: expected one of {', '.join(ROUNDING_PROFILES)}")
    tvm_ready = importlib.util.find_spec("transforms.pipelines") is not None
    if args.backend is None:
        args.backend = "tvm" if tvm_ready else "interp"
        if not tvm_ready:
            _progress("the lowering pipeline is not built yet; running the reference interpreter (--backend interp)")
    if args.backend == "tvm" and not tvm_ready:
        raise BadInput(
            "the TVM backend needs the lowering pipeline (qnn-decompose, qnn-lower-to-linalg), "
            "which is not built yet; use --backend interp for the reference interpreter"
        )
    path = Path(args.model) if args.model else example_model()
    stages: list[tuple[str, float]] = []
    try:
        model_bytes = path.read_bytes()  # the cached path's key is made of the bytes imported here
    except OSError:
        model_bytes = None

    t0 = time.perf_counter()
    _progress(f"importing {path.name}")
    # for an .onnx model an ONNX profile is chosen at import (QOperator nodes keep their kernels)
    args.onnx_profile = path.suffix == ".onnx" and args.rounding in (None, "onnxruntime", "onnx")
    profile = args.rounding if args.onnx_profile and args.rounding else "onnxruntime"
    module = load_module(path, args.batch, profile=profile, progress=_progress)
    stages.append(("import" if path.suffix in (".tflite", ".onnx") else "parse", time.perf_counter() - t0))
    try:
        f, in_values, _ = _entry_signature(module)
        for i, v in enumerate(in_values):  # before any input array is allocated
            if not isinstance(v.type, TensorType):
                raise InterpreterError(f"@{f.sym_name.data} input {i}: {v.type} is not a tensor; "
                                       "qd-run feeds ranked tensors")
            check_size(v, f"@{f.sym_name.data} input {i}")
    except InterpreterError as e:
        raise BadInput(f"{path}: {e}") from None
    n_ops = sum(1 for op in f.body.block.ops if op.name not in ("qnn.constant", "arith.constant", "func.return"))
    specs = input_specs(in_values)

    if args.input is not None:
        arrays, stacked = _read_inputs(args.input, specs)
        samples = [list(s) for s in zip(*arrays)] if stacked else [arrays]
    else:
        samples = [inputs_from_specs(specs, args.seed + i) for i in range(max(1, args.samples))]
        stacked = args.samples > 1

    args.quick, args.n_samples = not _wants_full(args, len(samples)), len(samples)
    # --backend tvm, or a --target (which only TVM takes): TVM refusing the model is an error,
    # not a fall-back to the interpreter
    explicit_backend = args.backend == "tvm" and ("--backend" in (sys.argv if args.argv is None else args.argv)
                                                  or args.target is not None)
    args.run_key = _run_key(args, path, model_bytes) if args.backend == "tvm" and model_bytes is not None else None
    if args.backend == "tvm":
        try:
            runner = _tvm_runner(module, args, stages)
            backend_text = f"tvm ({runner.target}){', quick build' if runner.quick else ''}"
        except BadInput as e:
            if explicit_backend:
                raise
            _progress(f"TVM backend unavailable for this model ({e}); falling back to --backend interp")
            args.backend = "interp"
    if args.backend == "tvm":
        if runner.entry is not None and model_bytes is not None:
            # the next run of this model with these options takes the cached path
            from tvm_bridge import fast_run

            rk = args.run_key
            if rk is not None:
                fast_run.remember(rk, {"entry": runner.entry, "n_ops": n_ops, "entry_name": f.sym_name.data,
                                       "inputs": specs, "out_dtypes": [d.str for d in runner.out_dtypes],
                                       "target": runner.target, "quick": runner.quick})
    else:
        def runner(sample):
            try:
                return run_module(module, sample, rounding=None if args.onnx_profile else args.rounding)
            except InterpreterError as e:
                raise BadInput(f"{path}: {e}") from None
        backend_text = "interp (numpy reference)"
    return _finish(args, path, samples, stacked, runner, backend_text, stages, n_ops, f.sym_name.data, len(in_values))


def _finish(args, path, samples, stacked, runner, backend_text, stages, n_ops, entry_name, n_inputs) -> int:
    """Run the samples, compare, write and print the report: the same for the cold and the cached path."""
    if args.gc_paused:  # qd-run as a program (`main`): the collector back on for the runs,
        args.gc_paused = False  # without ever traversing what was made before them
        gc.freeze()
        gc.enable()
    _progress(f"running {len(samples)} sample(s) on {args.backend}")
    t0 = time.perf_counter()
    ours = [runner(s) for s in samples]
    run_time = time.perf_counter() - t0
    stages.append((f"run ({args.backend})", run_time))

    compare = args.compare
    if compare is None:
        if path.suffix == ".tflite":
            compare = "litert" if args.rounding == "litert" else "litert-ref"
        elif path.suffix == ".onnx":
            compare = "onnx" if args.rounding == "onnx" else "onnxruntime"
        else:
            compare = "none"
    # --compare X: (what runs, the report's name for it, the run)
    peers = {
        "onnxruntime": ("ONNX Runtime (default session)", "ONNX Runtime (default session)",
                        lambda: onnxruntime_run(path.read_bytes(), samples, disable_all=False)),
        "onnx": ("ONNX Runtime (ORT_DISABLE_ALL)", "ONNX Runtime (ORT_DISABLE_ALL)",
                 lambda: onnxruntime_run(path.read_bytes(), samples, disable_all=True)),
        "litert-ref": ("LiteRT (BUILTIN_REF)", "LiteRT litert-ref",
                       lambda: litert_run(path.read_bytes(), samples, reference=True)),
        "litert": ("LiteRT (default, XNNPACK)", "LiteRT litert",
                   lambda: litert_run(path.read_bytes(), samples, reference=False)),
    }
    if compare in ("onnxruntime", "onnx") and path.suffix != ".onnx":
        raise BadInput(f"--compare {compare} needs an .onnx MODEL")
    if compare in ("litert-ref", "litert") and path.suffix != ".tflite":
        raise BadInput("--compare litert needs a .tflite MODEL")
    mismatches = None
    if compare in peers:
        running, peer, run_peer = peers[compare]
        _progress(f"running {running}")
        t0 = time.perf_counter()
        try:
            theirs = run_peer()
        except BadInput as e:
            raise BadInput(f"{path}: {e}") from None
        stages.append((f"{'ORT' if compare in ('onnxruntime', 'onnx') else 'LiteRT'} {compare}", time.perf_counter() - t0))
        mismatches = _count_mismatches(ours, theirs)

    if args.output is not None:
        outs = {f"output_{k}": (np.stack([o[k] for o in ours]) if stacked else ours[0][k]) for k in range(len(ours[0]))}
        try:
            np.savez(args.output, **outs)
        except OSError as e:
            raise BadInput(f"cannot write {args.output}: {e.strerror or e}") from None

    latency = None
    if args.bench > 0:
        runner(samples[0])  # warm-up
        times = []
        for _ in range(args.bench):
            t0 = time.perf_counter()
            runner(samples[0])
            times.append(time.perf_counter() - t0)
        latency = float(np.median(times))

    print(f"model      {path}")
    print(f"ops        {n_ops} compute ops in @{entry_name}; inputs {n_inputs}; samples {len(samples)}")
    default_rounding = "per op (ONNX Runtime's choice)" if path.suffix == ".onnx" else "per op (default tflite)"
    print(f"backend    {backend_text}, rounding {args.rounding or default_rounding}")
    for name, secs in stages:
        print(f"stage      {name:<18} {secs * 1000:9.1f} ms")
    if latency is not None:
        print(f"latency    {latency * 1000:.3f} ms/run ({args.backend}, median of {args.bench})")
        if path.suffix == ".tflite":
            try:
                timing: dict = {}
                litert_run(path.read_bytes(), samples[:1], reference=False, bench=args.bench, timing=timing)
                peer = timing["latency"]
                print(f"latency    {peer * 1000:.3f} ms/run (LiteRT default, XNNPACK, 1 thread); "
                      f"ours / LiteRT = {latency / peer:.2f}")
            except BadInput as e:
                print(f"latency    LiteRT default: n/a ({e})")
        if path.suffix == ".onnx":
            try:
                timing = {}
                onnxruntime_run(path.read_bytes(), samples[:1], disable_all=False, bench=args.bench, timing=timing)
                peer = timing["latency"]
                print(f"latency    {peer * 1000:.3f} ms/run (ONNX Runtime default, 1 thread); "
                      f"ours / ORT = {latency / peer:.2f}")
            except BadInput as e:
                print(f"latency    ONNX Runtime: n/a ({e})")
    if mismatches is not None:
        total = sum(m for m, _, _ in mismatches)
        peer = peers[compare][1]
        for k, (m, n, d) in enumerate(mismatches):
            print(f"output_{k}   {m} of {n} elements differ from {peer} (max |diff| {d})")
        verdict = "BIT-EXACT" if total == 0 else "MISMATCH"
        print(f"verdict    {verdict} vs {peer}")
        return EXIT_OK if total == 0 else EXIT_MISMATCH
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
