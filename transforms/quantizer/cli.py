"""`qd-quantize`: a float model + calibration data -> a quantized L1 (qnn) module.

    qd-quantize MODEL --calibration DATA.npz [--scheme S] [-o OUT.mlir] [--report DIR] [--int-io]
                [--override PATTERN=SCHEME ...] [--method M] [--weights minmax|mse]
                [--calibrate auto|layerwise|float] [--simulate SIM.mlir] [--evaluate EVAL.npz]
                [--bias-correction auto|on|off] [--no-bias-correction] [--quiet]

MODEL is a float32 `.tflite` file or a `.mlir` file holding a float graph
of `nn` ops (L0 without casts).  DATA.npz holds `input_0`, `input_1`, ...,
each a stack of float samples `(N, *input_shape)`.  S is a built-in scheme
(`int8`, `int16x8`, `int8-symmetric`, `int4-weights`) or a user strategy
`FILE.py:CLASS` / `module:CLASS` (see `transforms.quantizer.strategy`).  By default
the module keeps the float interface: its arguments and results are f32,
with `quant.qcast` / `quant.dcast` at the edges, so `qd-run OUT.mlir --input
SAME.npz` takes the same float inputs as the float model; `--int-io` gives
it the quantized tensors as arguments and results instead.

Progress goes to stderr while calibrating (one line per layer; `--quiet`
drops it).  `--report DIR` writes `DIR/report.md` (per-layer SQNR against
float, a markdown table) and `DIR/sqnr.png` (a bar chart).  `--simulate SIM.mlir`
writes the fake-quantization simulation: the float graph with
`qnn.simulated_quantize` (the chosen type and rounding) after every
quantized activation and weight, and the biases the integer ops add.  Bad input is
one line on stderr and exit status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import math
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from transforms.quantizer.strategy import BUILTIN, PerLayer, Strategy, StrategyError, load_strategy


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


class UsageError(ValueError):
    pass


class WithDecisions(Strategy):
    """`base` with some decisions fixed for every layer (`calibration="minmax"`, ...)."""

    def __init__(self, base: Strategy, **decisions):
        self.base, self.decisions = base, decisions
        self.name = base.name

    def __getattribute__(self, name):
        if name in ("base", "decisions", "name", "__class__", "__dict__"):
            return object.__getattribute__(self, name)
        decisions = object.__getattribute__(self, "decisions")
        if name in decisions:
            return lambda layer, value=decisions[name]: value
        return getattr(object.__getattribute__(self, "base"), name)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="qd-quantize",
                description="Quantize a float model (.tflite or float .mlir) with calibration data into qnn (L1) IR.")
    p.add_argument("model", help="float32 .tflite, or .mlir with a float nn graph")
    p.add_argument("--calibration", required=True, metavar="DATA.npz",
                   help="input_0, input_1, ...: stacks of float samples (N, *input_shape)")
    p.add_argument("--scheme", default="int8",
                   help=f"{', '.join(BUILTIN)} (default int8), or a user strategy FILE.py:CLASS / module:CLASS")
    p.add_argument("--override", action="append", default=[], metavar="PATTERN=SCHEME",
                   help="use SCHEME for the layers PATTERN matches (tensor name glob, #INDEX or kind:OP); repeatable")
    p.add_argument("--method", choices=("auto", "minmax", "moving_average", "percentile", "mse"),
                   help="range choice for every layer (default: the scheme's; auto for the built-ins: "
                        "mse or minmax per layer, whichever errs least on held-back calibration samples)")
    p.add_argument("--weights", choices=("minmax", "mse"),
                   help="weight ranges: max |w| per channel (TFLite) or the least-squared-error clipping (default)")
    p.add_argument("--calibrate", choices=("auto", "layerwise", "float"), default="auto",
                   help="take each layer's range from the values the quantized graph computes (layerwise), from "
                        "the float reference (float; no bias correction), or per layer whichever errs least on "
                        "held-back calibration samples (auto, default)")
    p.add_argument("--bias-correction", choices=("auto", "on", "off"), default="auto",
                   help="correct biases for the mean error of quantized layers: per layer by held-back error "
                        "(auto, default), always, or never (not in --calibrate float)")
    p.add_argument("--no-bias-correction", action="store_true",
                   help="do not correct biases for the mean error of quantized layers (layerwise mode)")
    p.add_argument("-o", "--output", help="write the module here instead of stdout (OUT.tflite: as a TFLite model)")
    p.add_argument("--report", metavar="DIR", help="write DIR/report.md and DIR/sqnr.png")
    p.add_argument("--evaluate", metavar="EVAL.npz",
                   help="also measure per-layer SQNR against float on these samples (e.g. held out): report column")
    p.add_argument("--simulate", metavar="SIM.mlir",
                   help="also write the float graph with qnn.simulated_quantize after every quantized value")
    p.add_argument("--int-io", action="store_true", help="quantized arguments and results instead of float ones")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p


def load_float_module(path: Path):
    """A float module from a .tflite (float import) or .mlir file."""
    from qdialect.importer.tflite import TFLiteImportError
    from qdialect.importer.tflite_float import import_tflite_float

    if not path.exists():
        raise UsageError(f"cannot read {path}: no such file")
    if path.is_dir():
        raise UsageError(f"cannot read {path}: it is a directory")
    data = path.read_bytes()
    if path.suffix == ".mlir":
        from qdialect.diagnostics import one_line, parse_module
        from transforms.opt import QdOptMain
        from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

        ctx = QdOptMain(args=[]).ctx
        try:
            return parse_module(ctx, data, str(path))
        except (ParseError, VerifyException, DiagnosticException) as e:
            raise UsageError(one_line(e, str(path)).replace(": error: ", ": ", 1)) from None
    try:
        return import_tflite_float(data, name=path.stem)
    except TFLiteImportError as e:
        raise UsageError(f"{path}: {' '.join(str(e).split())}") from None


def read_calibration(path: Path) -> dict[str, np.ndarray]:
    if not path.exists():
        raise UsageError(f"cannot read {path}: no such file")
    try:
        with open(path, "rb") as f:
            header = f.read(4)
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    if header != b"PK\x03\x04":  # np.load would try its other formats and blame pickles
        raise UsageError(f"{path}: not a readable .npz file (no zip archive header)")
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise UsageError(f"{path}: not a readable .npz file ({' '.join(str(e).split())})") from None


def make_strategy(args) -> Strategy:
    try:
        strategy = load_strategy(args.scheme)
        overrides = {}
        for item in args.override:
            pattern, sep, scheme = item.partition("=")
            if not sep or not pattern or not scheme:
                raise UsageError(f"--override '{item}' must be PATTERN=SCHEME")
            overrides[pattern] = load_strategy(scheme)
    except StrategyError as e:
        raise UsageError(str(e)) from None
    if overrides:
        strategy = PerLayer(strategy, overrides)
    decisions = {}
    if args.method:
        decisions["calibration"] = args.method
    if args.weights:
        decisions["weight_calibration"] = args.weights
    if decisions:
        strategy = WithDecisions(strategy, **decisions)
    return strategy


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except UsageError as e:
        print(f"qd-quantize: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug: still one line
        print(f"qd-quantize: internal error: {type(e).__name__}: {' '.join(str(e).split())}", file=sys.stderr)
        return 3


def _run(args) -> int:
    from qdialect.entry import EntryError, entry_function
    from qdialect.importer.cli import module_text
    from transforms.quantizer.flow import (
        QuantizeError,
        evaluate,
        progress_to_stderr,
        quantize_float_module,
        samples_from_npz,
        write_report,
    )

    model = Path(args.model)
    module = load_float_module(model)
    arrays = read_calibration(Path(args.calibration))
    strategy = make_strategy(args)
    try:
        entry = entry_function(module)
    except EntryError as e:
        raise UsageError(f"{model}: {e}") from None
    shapes = [list(a.type.get_shape()) for a in entry.body.block.args]
    bias_correction = {"auto": None, "on": True, "off": False}[args.bias_correction]
    if args.no_bias_correction:
        if args.bias_correction == "on":
            raise UsageError("--no-bias-correction contradicts --bias-correction on")
        bias_correction = False
    if args.calibrate == "float" and bias_correction:
        raise UsageError("--bias-correction on has no effect with --calibrate float (it corrects the error "
                         "the quantized layers before it leave, which float calibration does not see)")
    eval_samples = None
    if args.evaluate:  # read and checked before calibrating: a bad file is named at once
        try:
            eval_samples = samples_from_npz(read_calibration(Path(args.evaluate)), shapes, "evaluation data")
        except QuantizeError as e:
            raise UsageError(f"{args.evaluate}: {e}") from None
    try:
        samples = samples_from_npz(arrays, shapes)
        progress = None if args.quiet else (lambda m: progress_to_stderr(f"qd-quantize: {m}"))
        if progress:
            progress(f"{model.name}: {len(samples)} calibration samples, scheme {strategy.name}, {args.calibrate}")
        result = quantize_float_module(module, samples, strategy, mode=args.calibrate, int_io=args.int_io,
                                       bias_correction=bias_correction, progress=progress)
        if eval_samples is not None:
            if progress:
                progress(f"evaluating on {len(eval_samples)} samples of {args.evaluate}")
            evaluate(result, eval_samples)
    except QuantizeError as e:
        raise UsageError(f"{model}: {e}") from None
    except StrategyError as e:
        raise UsageError(f"{model}: {e}") from None
    text = module_text(result.module)
    if args.report:
        try:
            md, png = write_report(result, Path(args.report), model.name)
        except OSError as e:
            raise UsageError(f"cannot write the report to {args.report}: {e.strerror or e}") from None
        if not args.quiet:
            progress_to_stderr(f"qd-quantize: wrote {md} and {png}")
    if args.simulate:
        try:
            Path(args.simulate).write_text(module_text(result.simulation), encoding="utf-8")
        except OSError as e:
            raise UsageError(f"cannot write {args.simulate}: {e.strerror or e}") from None
    if args.output and args.output.endswith(".tflite"):  # qd-export's API: a .tflite LiteRT runs
        from qdialect.exporter import TFLiteExportError, export_tflite

        try:
            data = export_tflite(result.module)
        except TFLiteExportError as e:
            raise UsageError(f"{model}: {e}") from None
        try:
            Path(args.output).write_bytes(data)
        except OSError as e:
            raise UsageError(f"cannot write {args.output}: {e.strerror or e}") from None
    elif args.output and args.output != "-":
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as e:
            raise UsageError(f"cannot write {args.output}: {e.strerror or e}") from None
    else:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            return 0
    if not args.quiet:
        def db(values):
            return ", ".join("inf" if math.isinf(v) else f"{v:.2f} dB" for v in values)

        progress_to_stderr(f"qd-quantize: {len(result.layers)} layers; output SQNR vs float on the calibration data: "
                           f"{db(result.outputs_sqnr_db)}")
        if result.eval_outputs_sqnr_db is not None:
            progress_to_stderr(f"qd-quantize: output SQNR vs float on {args.evaluate}: {db(result.eval_outputs_sqnr_db)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
