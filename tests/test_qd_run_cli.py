"""qd-run on `.mlir` modules with the reference interpreter: report, npz I/O, exit codes."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.test_interpreter import _graph, _qnn_module, _tflite_model
from tests.tflite_writer import run_tflite

QD_RUN = str(Path(sys.executable).parent / "qd-run")


def _run(*args):
    return subprocess.run([QD_RUN, *map(str, args)], capture_output=True, text=True, timeout=300)


def test_mlir_model_with_npz_io_matches_litert(tmp_path):
    rng = np.random.default_rng(5)
    w, w_s, bias = _graph(rng)
    mlir = tmp_path / "m.mlir"
    mlir.write_text(str(_qnn_module(w, w_s, bias)))
    xs = rng.integers(-128, 128, (3, 1, 9, 9, 4)).astype(np.int8)   # a stack of 3 samples
    np.savez(tmp_path / "in.npz", input_0=xs)
    proc = _run(mlir, "--backend", "interp", "--input", tmp_path / "in.npz", "--output", tmp_path / "out.npz")
    assert proc.returncode == 0, proc.stderr
    assert "backend    interp" in proc.stdout
    out = np.load(tmp_path / "out.npz")
    assert out["output_0"].shape == (3, 1, 6) and out["output_1"].shape == (3, 1, 5, 5, 6)
    model = _tflite_model(w, w_s, bias)
    for i in range(3):
        expected = run_tflite(model, [xs[i]], reference=True)
        assert np.array_equal(out["output_0"][i], expected[0])
        assert np.array_equal(out["output_1"][i], expected[1])


def test_bad_inputs_exit_2_with_one_line(tmp_path):
    rng = np.random.default_rng(5)
    mlir = tmp_path / "m.mlir"
    mlir.write_text(str(_qnn_module(*_graph(rng))))
    np.savez(tmp_path / "bad.npz", input_0=np.zeros((1, 3, 3, 4), np.int8))
    cases = [
        ([tmp_path / "missing.mlir", "--backend", "interp"], "no such file"),
        ([mlir, "--backend", "interp", "--input", tmp_path / "bad.npz"], "'input_0' has shape [1, 3, 3, 4], the model expects [1, 9, 9, 4]"),
        ([mlir, "--backend", "interp", "--rounding", "nearest"], "--rounding 'nearest': expected one of"),
        ([mlir, "--backend", "interp", "--compare", "litert"], "--compare litert needs a .tflite MODEL"),
    ]
    for args, message in cases:
        proc = _run(*args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert lines[-1].startswith("qd-run: error:") and message in lines[-1], proc.stderr
        assert "Traceback" not in proc.stderr
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main(%a: tensor<4x!quant.uniform<i8:f32, 5.000000e-01:300>>) { %0 = qnn.reshape %a : (tensor<4x!quant.uniform<i8:f32, 5.000000e-01:300>>) -> tensor<4x!quant.uniform<i8:f32, 5.000000e-01:300>> func.return }")
    proc = _run(bad, "--backend", "interp")
    assert proc.returncode == 2 and "zero point 300 is outside i8" in proc.stderr


def test_explicit_tvm_backend_names_what_it_cannot_lower(tmp_path):
    """--backend tvm on a module the lowering refuses: exit 2, one line naming the op."""
    mlir = tmp_path / "log_softmax.mlir"
    mlir.write_text(
        "func.func @main(%a: tensor<2x3x!quant.uniform<i8:f32, 5.000000e-01:-3>>)"
        " -> tensor<2x3x!quant.uniform<i8:f32, 6.250000e-02:127>> {\n"
        "  %0 = qnn.log_softmax %a : (tensor<2x3x!quant.uniform<i8:f32, 5.000000e-01:-3>>)"
        " -> tensor<2x3x!quant.uniform<i8:f32, 6.250000e-02:127>>\n"
        "  func.return %0 : tensor<2x3x!quant.uniform<i8:f32, 6.250000e-02:127>>\n}\n")
    proc = _run(mlir, "--backend", "tvm", "--compare", "none")
    assert proc.returncode == 2, proc.stdout
    errors = [ln for ln in proc.stderr.splitlines() if not ln.startswith("  .. ")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr
    assert "qnn-decompose cannot lower: qnn.log_softmax (no decomposition)" in errors[0]


def test_no_arguments_runs_the_bundled_example():
    proc = _run()
    assert proc.returncode == 0, proc.stderr
    assert "cnn_small.tflite" in proc.stdout
    assert "verdict    BIT-EXACT vs LiteRT litert-ref" in proc.stdout


def _foreign_cpu() -> tuple[str, list[str]]:
    """An x86 CPU whose code this machine cannot run, and the features it lacks for it."""
    from tvm_bridge.compile import as_target, missing_host_features

    for cpu in ("cascadelake", "sapphirerapids", "graniterapids"):
        missing = missing_host_features(as_target(f"llvm -mcpu={cpu}"))
        if missing:
            return cpu, missing
    raise AssertionError("this CPU runs code for every listed x86 CPU: add a newer one")


def test_target_this_cpu_cannot_run_is_refused_not_crashed(tmp_path):
    """--backend tvm --target for a CPU with instructions this one lacks: exit 2 with one
    line naming them (running the code would stop on an illegal instruction, SIGILL)."""
    pytest.importorskip("tvm")
    cpu, missing = _foreign_cpu()
    model = tmp_path / "m.tflite"
    model.write_bytes((Path(__file__).resolve().parents[1] / "models" / "zoo" / "mlp_act.tflite").read_bytes())
    proc = _run(model, "--backend", "tvm", "--target", f"llvm -mcpu={cpu}")
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr[-500:])
    errors = [ln for ln in proc.stderr.splitlines() if not ln.startswith("  .. ") and "Scope" not in ln]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, errors
    assert f"-mcpu={cpu}" in errors[0] and all(m in errors[0] for m in missing)


def test_compiled_model_for_a_foreign_cpu_raises_on_call():
    """From Python: compiling for another CPU works (for export_library), calling the
    model here raises a TranslationError naming the missing instructions."""
    pytest.importorskip("tvm")
    from transforms import pipelines
    from tvm_bridge.compile import compile_module
    from tvm_bridge.run_cli import load_module
    from tvm_bridge.translate import TranslationError

    cpu, missing = _foreign_cpu()
    module = load_module(Path(__file__).resolve().parents[1] / "models" / "zoo" / "mlp_act.tflite", 1)
    pipelines.lower_to_l3(module)
    model = compile_module(module, target=f"llvm -mcpu={cpu}")
    with pytest.raises(TranslationError, match=missing[-1]):
        model(np.zeros((1, 64), np.int8))


def test_target_of_another_architecture_is_refused_not_an_internal_error(tmp_path):
    """--target for aarch64 on an x86-64 machine (or x86-64 on an arm64 one): exit 2 naming
    both architectures (TVM refused to load the module: an InternalError, exit 3)."""
    pytest.importorskip("tvm")
    import platform

    other = "x86_64-linux-gnu" if platform.machine().lower() in ("aarch64", "arm64") else "aarch64-linux-gnu"
    model = Path(__file__).resolve().parents[1] / "models" / "zoo" / "mlp_act.tflite"
    proc = _run(model, "--backend", "tvm", "--target", f"llvm -mtriple={other}")
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-500:])
    errors = [ln for ln in proc.stderr.splitlines() if not ln.startswith("  .. ") and "Scope" not in ln]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, errors
    assert other.split("-")[0] in errors[0] and platform.machine() in errors[0]
