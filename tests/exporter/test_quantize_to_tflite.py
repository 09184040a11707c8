"""`qd-quantize ... -o model.tflite` writes the quantized model as a .tflite (qd-export's API):
LiteRT's reference kernels give what the interpreter gives for the module the same command
writes as .mlir; a module TFLite cannot reproduce is one line, exit 2, and no file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from qdialect.interpreter import run_module
from tests.tflite_writer import run_tflite

ZOO = Path(__file__).resolve().parents[2] / "models" / "zoo"


def _qd_quantize(capsys, *args) -> tuple[int, str]:
    from transforms.quantizer.cli import main

    capsys.readouterr()
    code = main([str(a) for a in args] + ["--quiet"])
    return code, capsys.readouterr().err


def test_qd_quantize_writes_tflite(tmp_path, capsys):
    from qdialect.diagnostics import parse_module
    from transforms.opt import QdOptMain
    from transforms.quantizer.flow import samples_from_npz

    model, calib = ZOO / "mlp_act_float.tflite", ZOO / "mlp_act_calib.npz"
    out, mlir = tmp_path / "q.tflite", tmp_path / "q.mlir"
    assert _qd_quantize(capsys, model, "--calibration", calib, "-o", out)[0] == 0
    assert _qd_quantize(capsys, model, "--calibration", calib, "-o", mlir)[0] == 0
    assert out.read_bytes()[4:8] == b"TFL3"
    module = parse_module(QdOptMain(args=[]).ctx, mlir.read_text())
    with np.load(ZOO / "mlp_act_heldout.npz") as d:
        shapes = [list(a.type.get_shape()) for a in next(iter(module.ops)).body.block.args]
        held = samples_from_npz(dict(d), shapes)[:4]
    for sample in held:
        ours, theirs = run_module(module, sample), run_tflite(out.read_bytes(), sample, reference=True)
        for a, b in zip(ours, theirs, strict=True):
            assert np.count_nonzero(a != b) == 0


def test_qd_quantize_tflite_refused(tmp_path, capsys):
    out = tmp_path / "e.tflite"
    code, err = _qd_quantize(capsys, ZOO / "mlp_act_float.tflite", "--calibration", ZOO / "mlp_act_calib.npz",
                             "--scheme", "int16x8", "-o", out)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("qd-quantize: error: ")
    assert "qnn.fully_connected at @main op" in err and "i8 input and i16 result" in err
    assert not out.exists()
