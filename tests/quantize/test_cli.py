"""qd-quantize on the command line: outputs, report, progress, qd-run on the result, bad input."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tests.quantize.conftest import ZOO, data, float_module
from transforms.quantizer.cli import main

MODEL = ZOO / "cnn_small_float.tflite"
CALIB = ZOO / "cnn_small_calib.npz"


def run(args, capsys):
    rc = main([str(a) for a in args])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_writes_module_report_and_progress(tmp_path, capsys):
    out, rep = tmp_path / "q.mlir", tmp_path / "report"
    rc, stdout, err = run([MODEL, "--calibration", CALIB, "-o", out, "--report", rep], capsys)
    assert rc == 0 and stdout == ""
    text = out.read_text()
    assert text.count("quant.qcast") == 1 and text.count("quant.dcast") == 1
    assert "func.func @main(%input: tensor<1x32x32x3xf32>" in text and "-> (tensor<1x10xf32>" in text
    assert "qnn.conv2d" in text and "qnn.softmax" in text and "nn." not in text.replace("qnn.", "")
    assert "calibrating [1/8] conv2d cnn_small_1_conv1_1_Relu" in err
    assert "output SQNR vs float on the calibration data" in err
    md = (rep / "report.md").read_text()
    assert "| 2 | `cnn_small_1_conv1_1_Relu` | conv2d |" in md and "| output_0 |" in md
    png = (rep / "sqnr.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png[12:16] == b"IHDR"


def test_stdout_int_io_and_quiet(tmp_path, capsys):
    rc, stdout, err = run([MODEL, "--calibration", CALIB, "--int-io", "--quiet", "--scheme", "int8-symmetric",
                           "--method", "minmax", "--calibrate", "float"], capsys)
    assert rc == 0 and err == ""
    assert "quant.qcast" not in stdout and "func.func @main(%input: tensor<1x32x32x3x!quant.uniform<i8:f32, " in stdout


def test_override_and_user_scheme(tmp_path, capsys):
    strategy = tmp_path / "mine.py"
    strategy.write_text(
        "from transforms.quantizer.strategy import Int8\n\n"
        "class FloatFC(Int8):\n"
        "    name = 'float-fc'\n"
        "    def multiplier(self, layer):\n"
        "        return 'float' if layer.kind == 'fully_connected' else 'integer'\n"
    )
    out = tmp_path / "q.mlir"
    rc, _, err = run([MODEL, "--calibration", CALIB, "-o", out, "--quiet", "--scheme", f"{strategy}:FloatFC",
                      "--override", "*conv2*=int16x8"], capsys)
    assert rc == 0, err
    text = out.read_text()
    assert 'rounding = "half_even"' in text and "x!quant.uniform<i16:f32, " in text


def test_qd_run_takes_the_float_inputs(tmp_path, capsys):
    """`qd-run OUT.mlir --input SAME_FLOAT_INPUTS.npz` works unchanged."""
    out = tmp_path / "q.mlir"
    assert run([MODEL, "--calibration", CALIB, "-o", out, "--quiet"], capsys)[0] == 0
    inputs = tmp_path / "in.npz"
    np.savez(inputs, input_0=np.load(ZOO / "cnn_small_heldout.npz")["input_0"][:3])
    outputs = tmp_path / "out.npz"
    p = subprocess.run([sys.executable, "-m", "tvm_bridge.run_cli", str(out), "--backend", "interp",
                        "--input", str(inputs), "--output", str(outputs)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    y = np.load(outputs)["output_0"]
    assert y.dtype == np.float32 and y.shape == (3, 1, 10)
    np.testing.assert_allclose(y.sum(axis=-1), 1.0, atol=0.05)


def test_float_mlir_input(tmp_path, capsys):
    src = tmp_path / "float.mlir"
    src.write_text(str(float_module("mlp_act")))
    rc, stdout, err = run([src, "--calibration", ZOO / "mlp_act_calib.npz", "--quiet"], capsys)
    assert rc == 0, err
    assert "qnn.tanh" in stdout and "qnn.hard_swish" in stdout and "qnn.leaky_relu" in stdout


@pytest.mark.parametrize("case, message", [
    ("missing_model", "cannot read"),
    ("quantized_model", "already quantized"),
    ("missing_calibration", "cannot read"),
    ("not_npz", "not a readable .npz"),
    ("wrong_key", "has no 'input_0'"),
    ("wrong_shape", "expected [N, 1, 32, 32, 3]"),
    ("nan", "NaN"),
    ("bad_scheme", "unknown scheme 'int3'"),
    ("bad_override", "must be PATTERN=SCHEME"),
    ("bad_mlir", "error"),
])
def test_bad_input_is_one_line_exit_2(case, message, tmp_path, capsys):
    model, calib, extra = MODEL, CALIB, []
    if case == "missing_model":
        model = tmp_path / "nope.tflite"
    elif case == "quantized_model":
        model = ZOO / "cnn_small.tflite"
    elif case == "missing_calibration":
        calib = tmp_path / "nope.npz"
    elif case == "not_npz":
        calib = tmp_path / "x.npz"
        calib.write_text("hello")
    elif case in ("wrong_key", "wrong_shape", "nan"):
        calib = tmp_path / "c.npz"
        x = np.zeros((2, 1, 32, 32, 3), np.float32)
        if case == "nan":
            x[0, 0, 0, 0, 0] = np.nan
        arrays = {"input_1" if case == "wrong_key" else "input_0": x[:, :, :16] if case == "wrong_shape" else x}
        np.savez(calib, **arrays)
    elif case == "bad_scheme":
        extra = ["--scheme", "int3"]
    elif case == "bad_override":
        extra = ["--override", "conv"]
    elif case == "bad_mlir":
        model = tmp_path / "m.mlir"
        model.write_text("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> { func.return %y : tensor<4xf32> }")
    rc, stdout, err = run([model, "--calibration", calib, "--quiet", *extra], capsys)
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(("qd-quantize: error:",)) and message in lines[0], err
    assert "Traceback" not in err


def test_usage_error_is_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        main([str(MODEL)])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--calibration" in err[0]


def test_simulation_module(tmp_path, capsys):
    from qdialect.diagnostics import parse_module
    from qdialect.interpreter import run_module
    from transforms.lower_simulated_quantize import QnnLowerSimulatedQuantizePass
    from transforms.opt import QdOptMain
    from transforms.quantizer.flow import sqnr_db

    out, sim = tmp_path / "q.mlir", tmp_path / "sim.mlir"
    rc, _, err = run([MODEL, "--calibration", CALIB, "-o", out, "--simulate", sim, "--quiet"], capsys)
    assert rc == 0, err
    ctx = QdOptMain(args=[]).ctx
    text = sim.read_text()
    assert text.count("qnn.simulated_quantize") == 13  # input, 8 layers, 4 weights
    assert "qnn." not in text.replace("qnn.simulated_quantize", "")
    simulated, quantized = parse_module(ctx, text), parse_module(ctx, out.read_text())
    samples = data("cnn_small", "heldout")[:4]
    a = np.concatenate([run_module(quantized, s)[0].reshape(-1) for s in samples])
    b = [run_module(simulated, s)[0] for s in samples]
    assert sqnr_db(a, np.concatenate([x.reshape(-1) for x in b])) > 20  # the simulation tracks the integer model
    QnnLowerSimulatedQuantizePass(remarks=False).apply(ctx, simulated)  # -> fake-quant casts, same numbers
    assert "qnn.simulated_quantize" not in str(simulated)
    for s, expected in zip(samples, b):
        np.testing.assert_array_equal(run_module(simulated, s)[0], expected)


def test_png_plot_edge_cases(tmp_path):
    import struct
    import zlib

    from transforms.quantizer.flow import plot_sqnr, write_png

    for values in ([], [float("inf")] * 3, [53.7, -3.0, float("-inf"), 12.0]):
        img = plot_sqnr(values)
        path = tmp_path / "p.png"
        write_png(path, img)
        data_ = path.read_bytes()
        w, h = struct.unpack(">II", data_[16:24])
        assert (w, h) == (img.shape[1], img.shape[0])
        idat = data_[data_.index(b"IDAT") + 4:data_.index(b"IEND") - 8]
        raw = zlib.decompress(idat)
        assert len(raw) == h * (1 + 3 * w)


def test_evaluate_on_held_out(tmp_path, capsys):
    rep = tmp_path / "rep"
    rc, _, err = run([ZOO / "mlp_act_float.tflite", "--calibration", ZOO / "mlp_act_calib.npz", "-o", tmp_path / "q.mlir",
                      "--evaluate", ZOO / "mlp_act_heldout.npz", "--report", rep], capsys)
    assert rc == 0, err
    assert "evaluating on 16 samples" in err and "output SQNR vs float on " in err
    md = (rep / "report.md").read_text()
    assert "| SQNR (dB) | SQNR eval (dB) |" in md
    rows = [line for line in md.splitlines() if line.startswith("| ") and "`" in line]
    assert len(rows) == 10 and all(line.count("|") == 9 for line in rows)  # with the choice column
    assert "| choice |" in md and any(" minmax |" in line or " mse |" in line for line in rows)


@pytest.mark.parametrize("content, message", [
    (b"hello", "not a readable .npz file (no zip archive header)"),
    (None, "evaluation data has no 'input_0'"),
])
def test_bad_evaluate_file_is_named_before_calibrating(content, message, tmp_path, capsys):
    bad = tmp_path / "eval.npz"
    if content is None:
        np.savez(bad, other=np.zeros((2, 1, 32, 32, 3), np.float32))
    else:
        bad.write_bytes(content)
    rc, _, err = run([MODEL, "--calibration", CALIB, "--evaluate", bad], capsys)
    assert rc == 2
    assert "calibrating" not in err and "calibration samples" not in err  # refused before any work
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"qd-quantize: error: {bad}:") and message in last, err
