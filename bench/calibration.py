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
        x = np.asarray(sample[0], np.float32).reshape(inp["shape"])
        if inp["dtype"] != np.float32:
            s, z = inp["quantization"]
            info = np.iinfo(inp["dtype"])
            x = np.clip(np.round(x / s) + z, info.min, info.max).astype(inp["dtype"])
        it.set_tensor(inp["index"], x)
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


def least_confident(reference: list[np.ndarray]) -> int:
    """The sample whose float probabilities have the smallest margin between the top two classes."""
    return int(np.argmin([np.diff(np.sort(r.reshape(-1))[-2:])[0] for r in reference]))


def without(values: list, k: int) -> list:
    """`values` without its k-th entry."""
    return [v for i, v in enumerate(values) if i != k]


def top1(reference: list[np.ndarray], approx: list[np.ndarray]) -> int:
    """How many samples `approx` gives the reference's class (arg-max)."""
    return sum(int(np.argmax(r) == np.argmax(a)) for r, a in zip(reference, approx))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--schemes", default=",".join(SCHEMES))
    args = p.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
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
