"""qd-quantize vs TFLite's converter on the zoo's float models (the anchor).

For every `NAME_float.tflite`: `qd-quantize` on `NAME_calib.npz` (the 32
samples that were the converter's representative dataset), the written
.mlir parsed back and run on the reference interpreter with the float
held-out inputs; TFLite's `NAME.tflite` (the converter's int8 model of the
same Keras model) run in LiteRT.  Both are compared with the float model
run in LiteRT, as output SQNR over the 16 held-out samples.  Ours must not
be worse than TFLite's by more than 0.5 dB on any model and output, and
must be better on at least half of the models.
"""

from __future__ import annotations

import numpy as np
import pytest

from qdialect.diagnostics import parse_module
from qdialect.interpreter import run_module
from tests.quantize.conftest import FLOAT_MODELS, ZOO, data, litert, stacked
from transforms.quantizer.flow import sqnr_db
from transforms.quantizer.cli import main as qd_quantize

SQNR: dict[str, tuple[list[float], list[float]]] = {}


def _ctx():
    from transforms.opt import QdOptMain

    return QdOptMain(args=[]).ctx


def ours_vs_tflite(name: str, tmp_path) -> tuple[list[float], list[float]]:
    if name in SQNR:
        return SQNR[name]
    out = tmp_path / f"{name}_int8.mlir"
    rc = qd_quantize([str(ZOO / f"{name}_float.tflite"), "--calibration", str(ZOO / f"{name}_calib.npz"),
                      "-o", str(out), "--quiet"])
    assert rc == 0
    module = parse_module(_ctx(), out.read_text(), str(out))
    assert {op.name.split(".")[0] for op in module.walk()} <= {"builtin", "func", "qnn", "quant"}
    held = data(name, "heldout")
    reference = litert(ZOO / f"{name}_float.tflite", held)
    tflite = litert(ZOO / f"{name}.tflite", held)
    ours = [run_module(module, sample) for sample in held]
    n = len(reference[0])
    result = ([sqnr_db(stacked(reference, k), stacked(ours, k)) for k in range(n)],
              [sqnr_db(stacked(reference, k), stacked(tflite, k)) for k in range(n)])
    SQNR[name] = result
    return result


@pytest.mark.parametrize("name", FLOAT_MODELS)
def test_not_worse_than_tflite(name, tmp_path):
    ours, theirs = ours_vs_tflite(name, tmp_path)
    print(f"{name}: ours {['%.2f' % v for v in ours]} dB, TFLite converter {['%.2f' % v for v in theirs]} dB")
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert a >= b - 0.5, f"{name} output {k}: ours {a:.2f} dB < TFLite {b:.2f} dB - 0.5"


def test_better_on_at_least_half(tmp_path):
    if not FLOAT_MODELS:
        pytest.skip("zoo not generated")
    better = [name for name in FLOAT_MODELS if np.mean(ours_vs_tflite(name, tmp_path)[0]) > np.mean(ours_vs_tflite(name, tmp_path)[1])]
    assert 2 * len(better) >= len(FLOAT_MODELS), f"better only on {better}"


def test_int16x8_not_worse_than_tflite_16x8(tmp_path):
    """cnn_small with --scheme int16x8 against the converter's 16x8 model of the same Keras model."""
    if not (ZOO / "cnn_small_16x8.tflite").exists():
        pytest.skip("zoo not generated")
    out = tmp_path / "cnn_small_16x8.mlir"
    assert qd_quantize([str(ZOO / "cnn_small_float.tflite"), "--calibration", str(ZOO / "cnn_small_calib.npz"),
                        "--scheme", "int16x8", "-o", str(out), "--quiet"]) == 0
    module = parse_module(_ctx(), out.read_text(), str(out))
    held = data("cnn_small", "heldout")
    reference = litert(ZOO / "cnn_small_float.tflite", held)
    ours = sqnr_db(stacked(reference, 0), stacked([run_module(module, s) for s in held], 0))
    theirs = sqnr_db(stacked(reference, 0), stacked(litert(ZOO / "cnn_small_16x8.tflite", held), 0))
    print(f"cnn_small 16x8: ours {ours:.2f} dB, TFLite converter {theirs:.2f} dB")
    assert ours >= theirs - 0.5
