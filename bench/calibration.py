"""qd-quantize against TensorFlow's converter on the float transformer encoders (issue 22).

    python bench/calibration.py [--models vit_tiny,bert_tiny,kws_attn] [--schemes int8,int16x8,ln16]

For each encoder of `models/transformers` (Keras LayerNormalization, GELU,
multi-head attention with softmax, all in the float graph), `qd-quantize`'s
defaults quantize `NAME_float.tflite` on `NAME_calib.npz`, the 32 samples that
were the representative dataset of TensorFlow's converter for `NAME.tflite`
(int8) and `NAME_16x8.tflite` (16x8) (`tools/gen_transformer_zoo.py` passes
the same `calib` to both conversions).  Our module is printed, parsed back
and run on the reference interpreter (what `qd-run OUT.mlir --backend interp`
does) on the 16 held-out samples; the converter's models run in LiteRT
(its builtin kernels, without the XNNPACK delegate, so that the logits can be
read).  Both are compared with the float model run in LiteRT the same way:
output SQNR (dB; higher is better), the same without the sample on which
the float model is least confident (smallest margin between its top two
probabilities; one such sample can hold most of the noise), the SQNR of the
logits (the input of the last softmax, dequantized), and top-1 agreement
(the float model's class, out of 16).  At int8 a confident
softmax output sits on the 1/256 grid (0.99609 / 0), whoever quantized it.

Schemes: `int8` (`--scheme int8`) against the converter's int8 model;
`int16x8` (`--scheme int16x8`) and `ln16` (int8, but int16 activations for the
layer norms' ops and the softmaxes: `--override '*_ln*=int16x8' --override
'kind:softmax=int16x8'`) against the converter's 16x8 model.  The 16x8
models spell the layer norms differently (no SQUARED_DIFFERENCE / NEG, see
models/transformers/README.md): same weights, same calibration data.

TensorFlow is not needed: the converter's models are the committed files.
Not a test: a benchmark to read (about a minute per model and scheme on a
loaded 2-core machine).

Calibration zoo (issue 23, the default `--zoo calib`):

    python bench/calibration.py [--zoo calib] [--models mobilenetv2_035,...] [--plot sqnr.png] [--samples N]

For every model of `models/calib` (trained float Keras models, see its README),
on the 128 samples of `NAME_eval.npz` (labelled, not used for calibration):
output SQNR against the float model (LiteRT), top-1 agreement with the float
model, accuracy on the labels, and calibration time, for

- `ours`: `qd-quantize`'s defaults (the API the CLI calls) on `NAME_calib.npz`
  (64 samples), printed, parsed back and run on the reference interpreter;
- `TF`: `NAME_tf_int8.tflite`, TensorFlow's full-integer converter on the same 64
  samples (committed; its conversion time is the generator's, from facts.txt),
  run in LiteRT;
- `ORT minmax / entropy / percentile`: onnxruntime's `quantize_static` on `NAME.onnx`
  (QDQ, per-channel int8 weights, uint8 activations, its defaults otherwise) with
  the same 64 samples, run in an onnxruntime default session.  Through
  quantize_static the Entropy calibrator keeps its defaults, 128 histogram bins
  and 128 quantized bins: its threshold search has one candidate, the full
  range, so it gives exactly MinMax's ranges (onnxruntime 1.32,
  calibrate.py get_entropy_threshold; the QDQ scales were compared).

`--test N` evaluates on N samples of each model's test split instead (regenerated from
the generator's seeds; never trained or calibrated on): the 128 evaluation samples cannot
separate methods 0.3 dB apart (bootstrap SE about 0.4 dB), a few thousand can.  The last
column is ours minus the best peer, with its paired bootstrap standard error.

The files `tools/gen_calib_zoo.py --derived` rebuilds (large npz, .onnx) are
made on the first run.  `--plot` writes a grouped bar chart of the output SQNR
(one group per model; bars in the order ours, TF, ORT minmax, entropy,
percentile).  The table is printed in README.md's format.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODELS = ("vit_tiny", "bert_tiny", "kws_attn")
ZOO = ROOT / "models" / "transformers"

SCHEMES = {
    "int8": ("int8", [], ""),
    "int16x8": ("int16x8", [], "_16x8"),
    "ln16": ("int8", ["*_ln*=int16x8", "kind:softmax=int16x8"], "_16x8"),
}
"""name -> (--scheme, --override list, suffix of the converter's peer model)."""


def model_input(detail: dict, x) -> np.ndarray:
    """A real-valued sample as LiteRT input `detail` takes it: quantized with the model's own
    (scale, zero point) and clamped to the storage type when the input is integer."""
    from qdialect.reference.elementwise import quantize_like_litert_input

    return quantize_like_litert_input(x, detail)


def litert(path: Path, samples) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per sample, a .tflite model's first output and the input of its last SOFTMAX (the logits), as
    real numbers, from LiteRT's builtin kernels without the XNNPACK delegate (which would hide the
    logits tensor); integer inputs / outputs quantized / dequantized with the model's own parameters."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_path=str(path), experimental_preserve_all_tensors=True,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    inp, out = it.get_input_details()[0], it.get_output_details()[0]
    softmax = [op for op in it._get_ops_details() if op["op_name"] == "SOFTMAX"][-1]
    logits = {d["index"]: d for d in it.get_tensor_details()}[int(softmax["inputs"][0])]

    def real(d, y):
        y = np.asarray(y, np.float64)
        if d["dtype"] != np.float32:
            s, z = d["quantization"]
            y = (y - z) * s
        return y

    outputs, pre = [], []
    for sample in samples:
        it.set_tensor(inp["index"], model_input(inp, sample[0]))
        it.invoke()
        outputs.append(real(out, it.get_tensor(out["index"])))
        pre.append(real(logits, it.get_tensor(logits["index"])))
    return outputs, pre


def strategy_for(name: str):
    """The strategy a SCHEMES entry names (`qd-quantize --scheme S --override ...`)."""
    from transforms.quantizer.strategy import PerLayer, load_strategy

    scheme, overrides, _ = SCHEMES[name]
    base = load_strategy(scheme)
    if not overrides:
        return base
    return PerLayer(base, {p: load_strategy(s) for p, _, s in (o.partition("=") for o in overrides)})


def ours(model: str, scheme: str, held) -> tuple[list[np.ndarray], list[np.ndarray], float]:
    """Our quantized module on `held` (printed, parsed back, reference interpreter): per sample its
    output and the input of its last qnn.softmax (the logits, dequantized); and the seconds qd-quantize took."""
    from qdialect.diagnostics import parse_module
    from qdialect.dialects import qnn
    from qdialect.dialects.quant import quantized_element_type
    from qdialect.importer.cli import module_text
    from qdialect.importer.tflite_float import import_tflite_float_file
    from qdialect.reference.elementwise import dequantize
    from transforms.opt import QdOptMain
    from transforms.quantizer.flow import _trace, quantize_float_module, samples_from_npz

    float_module = import_tflite_float_file(ZOO / f"{model}_float.tflite")
    shapes = [list(a.type.get_shape()) for a in float_module.ops.first.body.block.args]
    calib = samples_from_npz(dict(np.load(ZOO / f"{model}_calib.npz")), shapes)
    start = time.perf_counter()
    result = quantize_float_module(float_module, calib, strategy_for(scheme))
    seconds = time.perf_counter() - start
    module = parse_module(QdOptMain(args=[]).ctx, module_text(result.module), f"{model}_{scheme}.mlir")
    assert {op.name.split(".")[0] for op in module.walk()} <= {"builtin", "func", "qnn", "quant"}
    softmax = [op for op in module.walk() if isinstance(op, qnn.SoftmaxOp)][-1]
    ret = module.ops.first.body.block.last_op
    logits = softmax.operands[0]
    qp = quantized_element_type(logits.type).qparams()
    outputs, pre = [], []
    for sample in held:
        env = _trace(module, sample)
        outputs.append(np.asarray(env[ret.operands[0]], np.float64))
        pre.append(np.asarray(dequantize(env[logits], x_q=qp), np.float64))
    return outputs, pre, seconds


def sqnr_db(reference: list[np.ndarray], approx: list[np.ndarray]) -> float:
    """SQNR (dB) of `approx` against `reference` over all samples together."""
    from transforms.quantizer.flow import sqnr_db as sqnr

    return sqnr(np.concatenate([r.reshape(-1) for r in reference]), np.concatenate([a.reshape(-1) for a in approx]))


def paired_margin(reference, ours, peer, rounds: int = 400, seed: int = 0) -> tuple[float, float]:
    """SQNR(ours) - SQNR(peer) in dB over all samples, and its bootstrap standard error
    (samples resampled with replacement, the same draw for both: a paired comparison)."""
    ref = np.asarray(reference, np.float64).reshape(len(reference), -1)
    e_ours = np.sum((np.asarray(ours, np.float64).reshape(ref.shape) - ref) ** 2, axis=1)
    e_peer = np.sum((np.asarray(peer, np.float64).reshape(ref.shape) - ref) ** 2, axis=1)

    def diff(idx):
        return 10 * np.log10(np.sum(e_peer[idx]) / max(np.sum(e_ours[idx]), 1e-300))

    rng = np.random.default_rng(seed)
    n = len(ref)
    boot = [diff(rng.integers(0, n, n)) for _ in range(rounds)]
    return float(diff(np.arange(n))), float(np.std(boot))


def least_confident(reference: list[np.ndarray]) -> int:
    """The sample whose float probabilities have the smallest margin between the top two classes."""
    return int(np.argmin([np.diff(np.sort(r.reshape(-1))[-2:])[0] for r in reference]))


def without(values: list, k: int) -> list:
    """`values` without its k-th entry."""
    return [v for i, v in enumerate(values) if i != k]


def top1(reference: list[np.ndarray], approx: list[np.ndarray]) -> int:
    """How many samples `approx` gives the reference's class (arg-max)."""
    return sum(int(np.argmax(r) == np.argmax(a)) for r, a in zip(reference, approx))


# ---------------------------------------------------------------- the calibration zoo (issue 23)

CALIB_ZOO = ROOT / "models" / "calib"
CALIB_MODELS = ("mobilenetv2_035", "mobilenetv2_050", "resnet_small", "ds_cnn_kws", "mlp_tabular", "attn_kws")
CALIB_METHODS = ("ours", "tf", "ort_minmax", "ort_entropy", "ort_percentile")
METHOD_TITLES = {"ours": "ours", "tf": "TF", "ort_minmax": "ORT MinMax", "ort_entropy": "ORT Entropy",
                 "ort_percentile": "ORT Percentile"}
METHOD_COLOURS = {"ours": (40, 110, 200), "tf": (230, 150, 30), "ort_minmax": (120, 120, 120),
                  "ort_entropy": (60, 160, 80), "ort_percentile": (170, 60, 160)}


def _flow():
    """The quantizer's flow module (`transforms.quantizer.flow`)."""
    from transforms.quantizer import flow
    return flow


def _strategy_int8():
    from transforms.quantizer.strategy import load_strategy
    return load_strategy("int8")


def litert_run(path: Path, xs: np.ndarray) -> np.ndarray:
    """The first output of a .tflite model for each sample of xs (N, 1, ...), as real numbers (int8
    input quantized and output dequantized with the model's own parameters); LiteRT's builtin kernels."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_path=str(path), experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    inp, out = it.get_input_details()[0], it.get_output_details()[0]
    ys = []
    for x in xs:
        it.set_tensor(inp["index"], model_input(inp, x))
        it.invoke()
        y = np.asarray(it.get_tensor(out["index"]), np.float64)
        if out["dtype"] != np.float32:
            s, z = out["quantization"]
            y = (y - z) * s
        ys.append(y.reshape(-1))
    return np.stack(ys)


def ours_calib(zoo: Path, model: str, xc: np.ndarray, xs: np.ndarray) -> tuple[np.ndarray, float]:
    """qd-quantize's defaults (int8, layerwise, MSE ranges, MSE weights, bias correction) on the
    calibration stack xc; the module printed, parsed back and run on the reference interpreter on xs.
    Returns (outputs, seconds of quantize_float_module)."""
    from qdialect.diagnostics import parse_module
    from qdialect.importer.cli import module_text
    from qdialect.importer.tflite_float import import_tflite_float_file
    from transforms.opt import QdOptMain

    flow = _flow()
    float_module = import_tflite_float_file(zoo / f"{model}_float.tflite")
    shapes = [list(a.type.get_shape()) for a in float_module.ops.first.body.block.args]
    calib = flow.samples_from_npz({"input_0": xc}, shapes)
    start = time.perf_counter()
    result = flow.quantize_float_module(float_module, calib, _strategy_int8())
    seconds = time.perf_counter() - start
    module = parse_module(QdOptMain(args=[]).ctx, module_text(result.module), f"{model}.mlir")
    ret = module.ops.first.body.block.last_op
    outs = []
    for x in xs:
        env = flow._trace(module, [np.asarray(x, np.float32)])
        outs.append(np.asarray(env[ret.operands[0]], np.float64).reshape(-1))
    return np.stack(outs), seconds


def ort_calib(zoo: Path, model: str, method: str, xc: np.ndarray, xs: np.ndarray, workdir: Path) -> tuple[np.ndarray, float]:
    """onnxruntime's quantize_static on NAME.onnx (QDQ, per-channel weights, `method` = MinMax, Entropy or
    Percentile) with the calibration stack xc; the quantized model run in a default session on xs.
    Returns (outputs, seconds of quantize_static)."""
    import onnxruntime as ort
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter({"input_0": np.asarray(x, np.float32)} for x in xc)

        def get_next(self):
            return next(self.it, None)

    out = workdir / f"{model}_{method}.onnx"
    cm = {"minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
          "percentile": CalibrationMethod.Percentile}[method]
    import contextlib
    import io
    import logging

    logging.getLogger().setLevel(logging.ERROR)  # its "consider pre-processing" warning
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # it prints its calibrator's settings
        quantize_static(str(zoo / f"{model}.onnx"), str(out), Reader(), quant_format=QuantFormat.QDQ,
                        per_channel=True, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        calibrate_method=cm)
    seconds = time.perf_counter() - start
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    ys = np.stack([np.asarray(sess.run(None, {"input_0": np.asarray(x, np.float32)})[0], np.float64).reshape(-1)
                   for x in xs])
    return ys, seconds


def tf_convert_seconds(zoo: Path, model: str) -> float | None:
    """TensorFlow's conversion time for NAME_tf_int8.tflite as the generator recorded it (facts.txt)."""
    import ast

    facts = zoo / "facts.txt"
    if not facts.exists():
        return None
    found = None
    for line in facts.read_text().splitlines():
        if line.strip():
            d = ast.literal_eval(line)
            if d.get("name") == model:
                found = d.get("tf_int8_s")
    return found


def plot_groups(values: dict[str, dict[str, float]], methods: list[str], width: int = 760,
                height: int = 340) -> np.ndarray:
    """Grouped bar chart (RGB) of output SQNR: one group per model, one bar per method (METHOD_COLOURS);
    grid every 5 dB, labelled on the left."""
    flow = _flow()
    img = np.full((height, width, 3), 255, np.uint8)
    margin = 28
    finite = [v for d in values.values() for v in d.values() if np.isfinite(v)]
    top = 5.0 * np.ceil(max([10.0, *finite]) / 5.0)
    plot_h = height - 2 * margin

    def y_of(v: float) -> int:
        return int(round(margin + (top - max(0.0, min(v, top))) / top * plot_h))

    for gv in np.arange(0.0, top + 1e-9, 5.0):
        img[y_of(gv), margin:width - margin] = (220, 220, 220)
        if hasattr(flow, "_draw_text"):
            flow._draw_text(img, f"{int(gv)}", 2, y_of(gv) - 2)
    img[y_of(0.0), margin:width - margin] = (0, 0, 0)
    models = list(values)
    slot = (width - 2 * margin) / max(len(models), 1)
    bar = slot * 0.8 / max(len(methods), 1)
    for i, m in enumerate(models):
        for j, meth in enumerate(methods):
            v = values[m].get(meth, np.nan)
            if not np.isfinite(v):
                continue
            x0 = int(margin + i * slot + slot * 0.1 + j * bar)
            x1 = max(int(x0 + bar * 0.9), x0 + 1)
            img[y_of(v):y_of(0.0), x0:x1] = METHOD_COLOURS[meth]
        if hasattr(flow, "_draw_text"):
            flow._draw_text(img, str(i + 1), int(margin + (i + 0.5) * slot) - 2, height - margin + 8)
    img[margin:height - margin, margin] = (0, 0, 0)
    return img


def calib_main(p, args) -> int:
    """The calibration-zoo benchmark (see the module docstring)."""
    import platform
    import tempfile

    sys.path.insert(0, str(ROOT / "tools"))
    import gen_calib_zoo

    zoo = Path(args.dir) if args.dir else CALIB_ZOO
    table = {**gen_calib_zoo.MODELS, **gen_calib_zoo.HELDOUT}
    present = [m for m in table if (zoo / f"{m}_float.tflite").exists()]
    models = [m for m in (args.models or ",".join(present)).split(",") if m]
    methods = [m for m in args.methods.split(",") if m]
    if not models:
        p.error(f"{zoo}: no NAME_float.tflite of tools/gen_calib_zoo.py (run it with TensorFlow)")
    for m in models:
        if m not in table:
            p.error(f"unknown model '{m}' (expected {', '.join(table)})")
    for m in methods:
        if m not in CALIB_METHODS:
            p.error(f"unknown method '{m}' (expected {', '.join(CALIB_METHODS)})")
    missing = [m for m in models if not (zoo / f"{m}_float.tflite").exists()]
    if missing:
        p.error(f"{zoo} has no {missing[0]}_float.tflite (run tools/gen_calib_zoo.py with TensorFlow)")
    gen_calib_zoo.derived(zoo, {m: table[m] for m in models},
                          log=lambda s: print(f"[derived] {s}", file=sys.stderr))
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cols = [METHOD_TITLES[m] for m in methods]
    heads = " / ".join(cols)
    margin = " ours - best peer, dB (bootstrap SE) |" if "ours" in methods and len(methods) > 1 else ""
    print(f"| model | float accuracy | output SQNR (dB): {heads} | top-1 agreement with float: {heads} "
          f"| accuracy: {heads} | calibration time (s): {heads} |{margin}")
    print("| --- | --- | --- | --- | --- | --- |" + (" --- |" if margin else ""))
    sqnrs: dict[str, dict[str, float]] = {}
    total = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            xc = np.load(zoo / f"{model}_calib.npz")["input_0"]
            if args.test:  # the test split: never trained on, never calibrated on (seeds, not files)
                cfg = table[model]
                xs, labels = gen_calib_zoo.task_data(cfg, cfg["seed"] * 1000 + 4, args.test)
                xs = xs[:, None]  # batch-1 stacks, as in NAME_eval.npz
            else:
                ev = np.load(zoo / f"{model}_eval.npz")
                xs, labels = ev["input_0"], ev["labels"]
                if args.samples:
                    xs, labels = xs[:args.samples], labels[:args.samples]
            ref = litert_run(zoo / f"{model}_float.tflite", xs)
            row, outs = {}, {}
            for meth in methods:
                if meth == "ours":
                    got, sec = ours_calib(zoo, model, xc, xs)
                elif meth == "tf":
                    got, sec = litert_run(zoo / f"{model}_tf_int8.tflite", xs), tf_convert_seconds(zoo, model)
                else:
                    got, sec = ort_calib(zoo, model, meth[4:], xc, xs, Path(tmp))
                row[meth] = (sqnr_db(list(ref), list(got)), top1(list(ref), list(got)),
                             float(np.mean(np.argmax(got, -1) == labels)), sec)
                outs[meth] = got
            sqnrs[model] = {m: v[0] for m, v in row.items()}
            acc_f = float(np.mean(np.argmax(ref, -1) == labels))
            n = len(xs)

            def cells(k, fmt):
                return " / ".join(fmt(row[m][k]) for m in methods)

            margin = ""
            if "ours" in outs and len(outs) > 1:
                best = max((m for m in outs if m != "ours"), key=lambda m: row[m][0])
                d, se = paired_margin(ref, outs["ours"], outs[best])
                margin = f" {d:+.2f} ({se:.2f}) vs {METHOD_TITLES[best]} |"
            print(f"| `{model}` | {100 * acc_f:.1f} % | {cells(0, lambda v: f'{v:.2f}')} "
                  f"| {cells(1, lambda v: f'{v}')} (of {n}) | {cells(2, lambda v: f'{100 * v:.1f}')} % "
                  f"| {cells(3, lambda v: '-' if v is None else f'{v:.1f}')} |{margin}", flush=True)
    print(f"\n{len(models)} models, {len(xs)} evaluation samples each, 64 calibration samples; CPU: {cpu}; "
          f"bench wall time {time.perf_counter() - total:.0f} s.  TF's time is its converter's (recorded "
          "when the zoo was generated).")
    if args.plot:
        _flow().write_png(Path(args.plot), plot_groups(sqnrs, methods))
        legend = ", ".join(f"{METHOD_TITLES[m]} rgb{METHOD_COLOURS[m]}" for m in methods)
        print(f"plot: {args.plot} (groups numbered 1.. = {', '.join(models)}; bars: {legend})")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--zoo", choices=("calib", "transformers"), default="calib",
                   help="models/calib against TF and ONNX Runtime (default), or the transformer encoders")
    p.add_argument("--models", default=None)
    p.add_argument("--schemes", default=",".join(SCHEMES), help="transformers only")
    p.add_argument("--plot", metavar="PNG", help="calib only: write the SQNR bar chart here")
    p.add_argument("--dir", metavar="DIR", help="calib only: another zoo directory (e.g. gen_calib_zoo.py "
                   "--heldout DIR); default models/calib")
    p.add_argument("--samples", type=int, default=None, help="calib only: evaluate on the first N eval samples")
    p.add_argument("--test", type=int, default=None, metavar="N",
                   help="calib only: evaluate on N samples of each model's test split instead (regenerated from "
                        "the generator's seeds: never trained or calibrated on; large N separates methods "
                        "0.3 dB apart, which 128 samples cannot)")
    p.add_argument("--methods", default=",".join(CALIB_METHODS), help="calib only: subset of "
                   + ", ".join(CALIB_METHODS))
    args = p.parse_args(argv)
    if args.zoo == "calib":
        return calib_main(p, args)
    models = [m for m in (args.models or ",".join(MODELS)).split(",") if m]
    schemes = [s for s in args.schemes.split(",") if s]
    for m in models:
        if m not in MODELS:
            p.error(f"unknown model '{m}' (expected {', '.join(MODELS)})")
    for s in schemes:
        if s not in SCHEMES:
            p.error(f"unknown scheme '{s}' (expected {', '.join(SCHEMES)})")

    from transforms.quantizer.flow import samples_from_npz

    print("| model | scheme | output SQNR ours / TF (dB) | difference (dB) | without the least confident sample: "
          "ours / TF (dB) | logits SQNR ours / TF (dB) | difference (dB) | top-1 ours / TF (of N) | TF peer "
          "| qd-quantize time (s) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for model in models:
        held = samples_from_npz(dict(np.load(ZOO / f"{model}_heldout.npz")),
                                [list(np.load(ZOO / f"{model}_heldout.npz")["input_0"].shape[1:])])
        reference, reference_logits = litert(ZOO / f"{model}_float.tflite", held)
        k = least_confident(reference)
        for scheme in schemes:
            peer = f"{model}{SCHEMES[scheme][2]}.tflite"
            theirs, their_logits = litert(ZOO / peer, held)
            got, our_logits, seconds = ours(model, scheme, held)
            a, b = sqnr_db(reference, got), sqnr_db(reference, theirs)
            a1, b1 = sqnr_db(without(reference, k), without(got, k)), sqnr_db(without(reference, k), without(theirs, k))
            a2, b2 = sqnr_db(reference_logits, our_logits), sqnr_db(reference_logits, their_logits)
            print(f"| `{model}` | {scheme} | {a:.2f} / {b:.2f} | {a - b:+.2f} | {a1:.2f} / {b1:.2f} "
                  f"| {a2:.2f} / {b2:.2f} | {a2 - b2:+.2f} "
                  f"| {top1(reference, got)} / {top1(reference, theirs)} (of {len(held)}) | `{peer}` "
                  f"| {seconds:.0f} |", flush=True)
    print("\nThe outputs are probabilities: one borderline sample can hold most of the noise (bert_tiny's, float\n"
          "0.748 / 0.248) and a confident int8 softmax sits on the 1/256 grid whoever quantized it, so the SQNR\n"
          "without the float model's least confident sample, and of the logits (the last softmax's input), are\n"
          "printed too.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
