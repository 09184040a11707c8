"""Latency of every zoo model: our TVM build vs LiteRT / ONNX Runtime and vs TVM's own importers.

    python bench/latency.py [--models a,b] [--runs 50] [--warmup 5] [--target "llvm -mcpu=..."] [--cpu haswell]
    python bench/latency.py --onnx-only [--onnx-models cnn_qdq_u8,...]

Measured in the same run, with warm-up, median of `--runs`.  The one-thread
candidates of a model (LiteRT default, ours in both profiles, TVM's importer) are
timed interleaved: `--rounds` rounds, each running every candidate runs/rounds
times, so a change in machine load during the run hits all of them alike:
- ours: import -> qnn-decompose -> qnn-lower-to-linalg -> Relax -> tvm.compile
  with our scheduled CPU pipeline (host CPU as tvm_bridge/cpu.py names it, or
  `--cpu`; one TVM thread, and `_2` the same build on two), `tflite` rounding
  (bit-exact with BUILTIN_REF) and `litert` rounding (bit-exact with LiteRT's
  default path);
- LiteRT default interpreter (XNNPACK) at 1 and 2 threads (the 2-thread
  candidates are timed interleaved too, against XNNPACK at 2), BUILTIN_REF at 1;
- TVM's own Relax TFLite frontend (`tvm.relax.frontend.tflite`, which
  dequantizes to float) where it imports the model.
Prints the CPU name and flags it saw, latencies, ratios to LiteRT default at the
same thread count, the kernel family of each convolution / matmul layer,
mismatching elements against the matching LiteRT path, and compile times.

ONNX models (`models/onnx/`, `--onnx-models`): ours (`onnxruntime` profile,
bit-exact with ORT's default session; 1 and 2 TVM threads) against ONNX
Runtime's default session at 1 thread (the peer; `ort_2` at 2 threads) and
with ORT_DISABLE_ALL, and TVM's own Relax ONNX frontend where it imports the
model; interleaved like the TFLite rows.  Both sides copy inputs in and
outputs out (ORT's `run` does).  Not a test: numbers on a shared machine
move; compare ratios within one run.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
ZOO = ROOT / "models" / "zoo"
sys.path.insert(0, str(ROOT))

# TVM's pool may grow to every usable CPU (it would stop at half of them, one here); each
# timing sets its own thread count (set_tvm_threads)
from tvm_bridge.cpu import allow_threads  # noqa: E402 - before TVM starts its pool

allow_threads()


def median_ms(fn, runs: int, warmup: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def interleaved_medians(fns: dict, runs: int, warmup: int, rounds: int, settle: float = 0.02,
                        before: dict | None = None) -> dict:
    """Median ms of each callable, measured in `rounds` interleaved rounds (`settle` seconds
    of sleep and one untimed call before each candidate's turn; `before[k]()`, when given,
    first: the 2-thread rounds stop TVM's pool workers before LiteRT's turn and start them
    before ours)."""
    before = before or {}
    for k, fn in fns.items():
        before.get(k, lambda: None)()
        for _ in range(warmup):
            fn()
    times = {k: [] for k in fns}
    per_round = {k: [] for k in fns}
    per = max(1, runs // rounds)
    for _ in range(rounds):
        for k, fn in fns.items():
            before.get(k, lambda: None)()
            # the other candidates' idle threads spin for a while after their last call and
            # would take the second core from this one (TVM's pool workers spin through
            # 300000 sched_yield calls, TVM_THREAD_POOL_SPIN_COUNT, before they block: XNNPACK
            # at 2 threads measured 0.45 ms right after our 2-thread build ran, 0.145 ms
            # alone): let them go to sleep, then one untimed call
            time.sleep(settle)
            fn()
            these = []
            for _ in range(per):
                t0 = time.perf_counter()
                fn()
                these.append(time.perf_counter() - t0)
            times[k] += these
            per_round[k].append(statistics.median(these))
    group = id(fns)
    out = {k: statistics.median(v) * 1000 for k, v in times.items()}
    # each candidate's round medians (print_table's ratios: the median over rounds of the
    # ratio within a round, so a slower or faster stretch of the machine cancels)
    out.update({f"{k}@rounds": (group, v) for k, v in per_round.items()})
    return out


def set_tvm_threads(n: int) -> None:
    """TVM's CPU thread pool size (tvm_bridge.cpu.set_threads; our kernels parallelize only
    above tvm_bridge.vnni.DOT_PARALLEL_MIN_MACS / tvm_bridge.schedule.PARALLEL_MIN_WORK
    multiply-accumulates)."""
    from tvm_bridge.cpu import set_threads

    set_threads(n)


def reference_aborts(model: bytes, sample: list | None = None) -> str | None:
    """Why LiteRT's reference kernels cannot run `model` (on `sample`, the inputs the bench
    uses, else zeros), or None when they can.  Some abort the process, which no `except`
    catches: in `allocate_tensors` (a full MobileNetV2 of random weights: SOFTMAX's prepare,
    `PreprocessSoftmaxScaling`, on its input scale) or in `invoke` (Keras's ResNet50 and
    Xception of random weights at 96x96, session 24): a child process tries first."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path, inputs = Path(tmp) / "model.tflite", Path(tmp) / "inputs.npz"
        path.write_bytes(model)
        np.savez(inputs, *(sample or []))
        probe = ("import sys\nimport numpy as np\nfrom ai_edge_litert.interpreter import Interpreter, OpResolverType\n"
                 "it = Interpreter(model_path=sys.argv[1], experimental_op_resolver_type=OpResolverType.BUILTIN_REF)\n"
                 "it.allocate_tensors()\n"
                 "given = np.load(sys.argv[2])\n"
                 "for k, d in enumerate(it.get_input_details()):\n"
                 "    x = given[f'arr_{k}'] if f'arr_{k}' in given.files else np.zeros(d['shape'], d['dtype'])\n"
                 "    it.set_tensor(d['index'], x.astype(d['dtype']))\n"
                 "it.invoke()\n")
        done = subprocess.run([sys.executable, "-c", probe, str(path), str(inputs)], capture_output=True, text=True)
    if done.returncode == 0:
        return None
    reason = f"signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
    return f"LiteRT's reference kernels fail to run it ({reason})"


def litert(model: bytes, reference: bool, threads: int):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kwargs = dict(model_content=model, num_threads=threads)
    if reference:
        kwargs["experimental_op_resolver_type"] = OpResolverType.BUILTIN_REF
    it = Interpreter(**kwargs)
    it.allocate_tensors()
    ins, outs = it.get_input_details(), it.get_output_details()

    def run(sample):
        for d, a in zip(ins, sample):
            it.set_tensor(d["index"], a.astype(d["dtype"]))
        it.invoke()
        return [it.get_tensor(d["index"]).copy() for d in outs]

    return run


def ours(path: Path, rounding: str | None, target):
    """Our TVM build of a .tflite model (`rounding` set on every op unless None or "tflite") or of an
    .onnx model (None: its import profile, ONNX Runtime's choice op by op)."""
    from qdialect.dialects.qnn import set_rounding
    from transforms import pipelines
    from tvm_bridge.compile import compile_module
    from tvm_bridge.run_cli import load_module

    from qdialect.interpreter import Interpreter

    t0 = time.perf_counter()
    module = load_module(path, 1)
    out_dtypes = [Interpreter._dtype(v) for v in Interpreter(module).entry().get_return_op().operands]
    if rounding not in (None, "tflite"):
        set_rounding(module, rounding)
    pipelines.lower_to_l3(module)
    model = compile_module(module, target=target)
    seconds = time.perf_counter() - t0

    def run(sample):  # u8 storage leaves L3 as i8 bits
        return [o.view(d) if o.dtype != d and o.dtype.itemsize == d.itemsize else o
                for o, d in zip(model(*sample), out_dtypes)]

    run.choices = kernel_choices(module, model.target)
    return run, seconds


def kernel_choices(module, target) -> list[tuple]:
    """(op kind, kernel, instruction family, MACs) of each convolution / matmul / registered
    kernel of the L3 `module` translated for `target` (tvm_bridge/kernels.py records them)."""
    from tvm_bridge.translate import translate
    from tvm_bridge.kernels import target_flavor

    choices: list[tuple] = []
    try:
        translate(module, dot=target_flavor(target), choices=choices)
    except Exception:  # noqa: BLE001 - the build above translated it; report nothing more
        pass
    return choices


def kernel_summary(choices: list[tuple]) -> str:
    """'conv2d: avx512-vnni (vpdpbusd) x15 (1.99 M MACs), generic x1 (0.00 M); ...'"""
    groups: dict[tuple, list] = {}
    for kind, _, family, macs in choices:
        g = groups.setdefault((kind, family), [0, 0])
        g[0] += 1
        g[1] += macs or 0
    if not groups:
        return "no convolution or matmul"
    return "; ".join(f"{kind} {family} x{n} ({m / 1e6:.2f} M MACs)" for (kind, family), (n, m) in groups.items())


def _relax_vm(mod, target):
    """TVM's own build of a Relax module (tvm.compile's default pipeline) as a callable on samples."""
    import tvm
    from tvm import relax

    from tvm_bridge.compile import as_target

    ex = tvm.compile(mod, target=as_target(target))
    vm = relax.VirtualMachine(ex, tvm.cpu())

    def run(sample):
        out = vm["main"](*[tvm.runtime.tensor(a) for a in sample])
        return [out.numpy()] if hasattr(out, "numpy") else [o.numpy() for o in out]

    return run


def tvm_frontend(path: Path, target):
    import tflite
    from tvm.relax.frontend.tflite import from_tflite

    t0 = time.perf_counter()
    run = _relax_vm(from_tflite(tflite.Model.GetRootAsModel(path.read_bytes(), 0)), target)
    return run, time.perf_counter() - t0


ONNX_ZOO = ROOT / "models" / "onnx"
ONNX_DEFAULT = ("cnn_qdq_u8,cnn_qop_u8,cnn_qdq_s8,mobilenetv2_qdq_u8,mobilenetv2_qop_u8,mobilenetv2_qop_s8,"
                "mlp_qdq_u8,mlp_qop_s8")
ONNX_TRANSFORMERS = ROOT / "models" / "transformers" / "onnx"  # tools/gen_transformer_zoo.py
ONNX_ATTENTION = ("vit_tiny_qdq_u8,vit_tiny_qdq_s8,vit_tiny_qop_u8,bert_tiny_qdq_u8,bert_tiny_qdq_s8,bert_tiny_qop_u8,"
                  "kws_attn_qdq_u8,kws_attn_qdq_s8,kws_attn_qop_u8")


def onnx_path(name: str) -> Path:
    """An .onnx path as it is, a models/onnx name, else a models/transformers/onnx one."""
    if name.endswith(".onnx"):
        return Path(name)
    path = ONNX_ZOO / f"{name}.onnx"
    return path if path.exists() else ONNX_TRANSFORMERS / f"{name}.onnx"


def onnxruntime_session(path: Path, threads: int, disable_all: bool = False):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    if disable_all:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]

    def run(sample):
        return sess.run(None, dict(zip(names, sample)))

    return run


def tvm_onnx_frontend(path: Path, target):
    import onnx
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    t0 = time.perf_counter()
    mod = relax.transform.DecomposeOpsForInference()(from_onnx(onnx.load(str(path)), keep_params_in_input=False))
    run = _relax_vm(mod, target)
    return run, time.perf_counter() - t0


def float_mismatches(a: list[np.ndarray], b: list[np.ndarray]) -> int:
    """Differing elements; float outputs compared bit for bit."""
    total = 0
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y).reshape(np.shape(x))
        if x.dtype.kind == "f" or y.dtype.kind == "f":
            total += int(np.count_nonzero(x.astype(np.float32).view(np.int32) != y.astype(np.float32).view(np.int32)))
        else:
            total += int(np.count_nonzero(x.astype(np.int64) != y.astype(np.int64)))
    return total


def onnx_rows(names: list[str], args) -> list[dict]:
    from tvm_bridge.run_cli import _entry_signature, load_module, make_inputs

    rows = []
    for name in names:
        path = onnx_path(name)
        module = load_module(path, 1)
        _, in_values, _ = _entry_signature(module)
        sample = make_inputs(in_values, 0)
        row = {"model": path.stem if name.endswith(".onnx") else name}
        peer = onnxruntime_session(path, 1)
        expected = peer(sample)
        row["ort_2"] = median_ms(lambda r=onnxruntime_session(path, 2): r(sample), args.runs, args.warmup)
        one_thread = {"ort_1": lambda: peer(sample),
                      "ort_noopt_1": lambda r=onnxruntime_session(path, 1, True): r(sample)}
        try:
            run, compile_s = ours(path, None, args.target)
            row["ours_mismatch"] = float_mismatches(run(sample), expected)
            row["ours_compile_s"] = compile_s
            one_thread["ours"] = lambda run=run: run(sample)
            set_tvm_threads(2)
            row["ours_2"] = median_ms(lambda: run(sample), args.runs, args.warmup)
            set_tvm_threads(1)
        except Exception as e:  # noqa: BLE001 - report and go on
            row["ours"] = f"failed: {type(e).__name__}: {str(e)[:60]}"
        try:
            run, compile_s = tvm_onnx_frontend(path, args.target)
            row["tvm_frontend_compile_s"] = compile_s
            row["tvm_frontend_mismatch"] = float_mismatches(run(sample), expected)
            one_thread["tvm_frontend"] = lambda run=run: run(sample)
        except Exception as e:  # noqa: BLE001
            row["tvm_frontend"] = f"does not import: {type(e).__name__}"
        row.update(interleaved_medians(one_thread, args.runs, args.warmup, args.rounds))
        rows.append(row)
        print(f"  .. {name} done", file=sys.stderr, flush=True)
    print("ONNX models: latency, ms (median); ratio = x / ONNX Runtime default session, 1 thread; "
          "mismatches vs ORT's default session")
    print_table(rows, ["model", "ort_1", "ort_2", "ort_noopt_1", "ours", "ours_2", "tvm_frontend"], 14)
    for row in rows:
        parts = [row["model"]]
        for k in ("ours", "tvm_frontend"):
            if f"{k}_mismatch" in row:
                parts.append(f"{k}: {row[f'{k}_mismatch']} mismatches, compile {row.get(f'{k}_compile_s', float('nan')):.1f} s")
        print("  " + "; ".join(parts))
    return rows


def print_table(rows: list[dict], header: list[str], width: int, bases: dict | None = None) -> None:
    """One line per model: the peer's latency (header[1]), then each candidate with its ratio to
    it (or to the column `bases` names for it: a 2-thread candidate against the 2-thread peer):
    for candidates timed interleaved with it, the median over the rounds of their ratio in
    that round, else the ratio of the medians."""
    base = header[1]
    bases = bases or {}
    print(" | ".join(f"{h:>20}" if i == 0 else f"{h:>{width}}" for i, h in enumerate(header)))
    for row in rows:
        cells = [f"{row['model']:>20}"]
        for h in header[1:]:
            v = row.get(h, "n/a")
            b = bases.get(h, base)
            if isinstance(v, float) and h != b and isinstance(row.get(b), float):
                mine, theirs = row.get(f"{h}@rounds"), row.get(f"{b}@rounds")
                if mine and theirs and mine[0] == theirs[0]:  # timed interleaved: round by round
                    ratio = statistics.median(x / y for x, y in zip(mine[1], theirs[1]))
                else:
                    ratio = v / row[b]
                cells.append(f"{v:7.3f} x{ratio:.2f}".rjust(width))
            elif isinstance(v, float):
                cells.append(f"{v:{width}.3f}")
            else:
                cells.append(f"{str(v)[:width]:>{width}}")
        print(" | ".join(cells))


def mismatches(a: list[np.ndarray], b: list[np.ndarray]) -> int:
    return sum(int(np.count_nonzero(x.astype(np.int64) != y.reshape(x.shape).astype(np.int64))) for x, y in zip(a, b))


def attention_models() -> dict[str, Path]:
    """The attention blocks (tests/tvm_bridge/attention_block.py, written to a temporary directory) and
    the quantized encoders of models/transformers."""
    import tempfile

    from tests.tvm_bridge.attention_block import attention_block

    folder = Path(tempfile.mkdtemp(prefix="qd_attention_"))
    out = {}
    for storage, label in (("int8", "attention_s64"), ("int16", "attention_s64_16x8")):
        path = folder / f"{label}.tflite"
        path.write_bytes(attention_block(seq=64, dim=64, heads=4, storage=storage, layer_norm=True))
        out[label] = path
    for path in sorted((ROOT / "models" / "transformers").glob("*.tflite")):  # tools/gen_transformer_zoo.py
        if not path.stem.endswith("_float"):
            out[path.stem] = path
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=None,
                   help="comma-separated zoo names or .tflite paths (default: all quantized zoo models)")
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--rounds", type=int, default=10, help="interleaved rounds of the one-thread candidates")
    p.add_argument("--target", default=None, help="TVM target (default: host CPU)")
    p.add_argument("--cpu", default=None, help="compile for this LLVM cpu name (QDIALECT_TARGET_CPU), e.g. "
                                               "haswell: the AVX2 kernels on an AVX-512 machine")
    p.add_argument("--onnx-models", default=ONNX_DEFAULT, help="comma-separated names of models/onnx or models/transformers/onnx, or .onnx paths ('' for none)")
    p.add_argument("--onnx-only", action="store_true", help="only the ONNX rows")
    p.add_argument("--attention", action="store_true",
                   help="also the attention blocks of tests/tvm_bridge/attention_block.py (int8 and 16x8, "
                        "sequence 64, model width 64, 4 heads, with the layer norm's pieces) and the encoders "
                        "of models/transformers (TFLite against LiteRT, ONNX against ONNX Runtime)")
    p.add_argument("--attention-only", action="store_true", help="only the attention / encoder rows")
    args = p.parse_args(argv)
    if args.cpu:
        import os

        os.environ["QDIALECT_TARGET_CPU"] = args.cpu
    if args.onnx_only:
        set_tvm_threads(1)
        onnx_rows([n for n in args.onnx_models.split(",") if n], args)
        return 0

    from tvm_bridge.run_cli import BadInput, _entry_signature, load_module, make_inputs

    names = args.models.split(",") if args.models else sorted(
        q.stem for q in ZOO.glob("*.tflite") if not q.stem.endswith("_float")
    )
    paths = {} if args.attention_only else {
        Path(name).stem if name.endswith(".tflite") else name: Path(name) if name.endswith(".tflite")
        else ZOO / f"{name}.tflite" for name in names}
    if args.attention or args.attention_only:
        paths.update(attention_models())
    have_ours = importlib.util.find_spec("transforms.pipelines") is not None
    set_tvm_threads(1)
    rows = []
    notes: list[str] = []
    for name, path in paths.items():
        buf = path.read_bytes()
        try:
            module = load_module(path, 1)
        except BadInput as e:  # (one model we cannot import costs its row, not the run)
            notes.append(f"{name}: not imported: {e}")
            print(f"  .. {name} not imported: {e}", file=sys.stderr, flush=True)
            continue
        _, in_values, _ = _entry_signature(module)
        sample = make_inputs(in_values, 0)
        row = {"model": name}
        no_reference = reference_aborts(buf, sample)
        dflt1 = litert(buf, False, 1)
        expected_default = dflt1(sample)
        if no_reference is None:
            ref1 = litert(buf, True, 1)
            expected_ref = ref1(sample)
            row["ref_1"] = median_ms(lambda: ref1(sample), max(3, args.runs // 5), 1)
        else:  # the `tflite` profile is timed, its bits not checked (nothing to check them against)
            expected_ref, row["ref_1"] = None, "n/a"
            notes.append(f"{name}: {no_reference}; ours_tflite's output not checked")
        one_thread = {"litert_1": lambda: dflt1(sample)}
        two_threads = {"litert_2": lambda r=litert(buf, False, 2): r(sample)}
        if have_ours:
            for rounding, expected in (("tflite", expected_ref), ("litert", expected_default)):
                try:
                    run, compile_s = ours(path, rounding, args.target)
                    row[f"ours_{rounding}_mismatch"] = "not checked" if expected is None else \
                        mismatches(run(sample), expected)
                    row[f"ours_{rounding}_compile_s"] = compile_s
                    row["kernels"] = kernel_summary(run.choices)
                    one_thread[f"ours_{rounding}"] = lambda run=run: run(sample)
                    two_threads[f"ours_{rounding}_2"] = lambda run=run: run(sample)
                except Exception as e:  # noqa: BLE001 - report and go on to the next model
                    row[f"ours_{rounding}"] = f"failed: {type(e).__name__}: {str(e)[:80]}"
        try:
            run, compile_s = tvm_frontend(path, args.target)
            row["tvm_frontend_compile_s"] = compile_s
            row["tvm_frontend_mismatch"] = mismatches(run(sample), expected_default)
            one_thread["tvm_frontend"] = lambda run=run: run(sample)
        except Exception as e:  # noqa: BLE001
            row["tvm_frontend"] = f"does not import: {type(e).__name__}"
        row.update(interleaved_medians(one_thread, args.runs, args.warmup, args.rounds))
        # LiteRT's 2 threads are its own; TVM's pool is set to 2 threads for ours and to 1
        # (its worker stopped) for LiteRT's turn, since an idle TVM worker spins through
        # 300000 sched_yield calls before it blocks and takes the second core meanwhile.
        # (Until 2026-11-28 the turns were instead separated by 0.4 s of sleep.  On the 2-core
        # KVM machine 2-thread times are bimodal after an idle stretch: full MobileNetV2,
        # XNNPACK at 2 threads, took 1.7 ms per call in one stretch and 4-5 ms in another
        # (3.3 at 1 thread), the slow mode often right after a sleep of 0.2-0.4 s; medians
        # over rounds with 0.4 s sleeps caught mostly the slow mode.  Expect noise here.)
        row.update(interleaved_medians(two_threads, args.runs, args.warmup, args.rounds, before={
            k: (lambda k=k: set_tvm_threads(1 if k.startswith("litert") else 2)) for k in two_threads}))
        set_tvm_threads(1)
        rows.append(row)
        print(f"  .. {name} done", file=sys.stderr, flush=True)

    def fmt(v):
        return f"{v:8.3f}" if isinstance(v, float) else f"{str(v):>8}"

    from tvm_bridge.cpu import describe

    print(describe())
    print("latency, ms (median); ratio = x / LiteRT default (XNNPACK) at the same thread count, the median "
          "of the per-round ratios (_2: 2 threads, TVM's pool and LiteRT num_threads=2; litert_2's own: of the "
          "medians); mismatches vs the matching LiteRT path")
    print_table(rows, ["model", "litert_1", "ours_tflite", "ours_litert", "litert_2", "ours_tflite_2",
                       "ours_litert_2", "ref_1", "tvm_frontend"], 13,
                bases={"ours_tflite_2": "litert_2", "ours_litert_2": "litert_2", "litert_2": "litert_1"})
    print()
    print("kernel family of each convolution / matmul layer (tvm_bridge/kernels.py)")
    for row in rows:
        print(f"  {row['model']}: {row.get('kernels', 'n/a')}")
    print()
    print("mismatching elements / compile seconds")
    for row in rows:
        parts = [row["model"]]
        for k in ("ours_tflite", "ours_litert", "tvm_frontend"):
            if f"{k}_mismatch" in row:
                m = row[f"{k}_mismatch"]
                parts.append(f"{k}: {m if isinstance(m, str) else f'{m} mismatches'}, "
                             f"compile {row.get(f'{k}_compile_s', float('nan')):.1f} s")
        print("  " + "; ".join(parts))
    for note in notes:
        print(f"  {note}")
    if not have_ours:
        print("(our TVM build: n/a — the lowering pipeline transforms.pipelines is not built yet)")
    onnx_names = [] if args.attention_only else [n for n in args.onnx_models.split(",") if n]
    if args.attention or args.attention_only:
        onnx_names += ONNX_ATTENTION.split(",")
    if onnx_names and importlib.util.find_spec("onnxruntime") is not None:
        print()
        set_tvm_threads(1)
        onnx_rows(onnx_names, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
