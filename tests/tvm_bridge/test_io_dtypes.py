"""A lowered model takes and returns the dtypes the original model declares (issue 25, part 5).

L2 / L3 compute on MLIR's signless storage integers, so a uint8 model's edges are `i8` in
its L3 signature; `qnn-decompose` marks them `qnn.element_type = ui8` (qdialect/io_types.py)
and every runner honours the mark: the interpreter, `qd-run` on a printed L3 file (input
checks, random inputs, outputs) and `tvm_bridge.compile_module`.  Each is checked against
the model's own runtime on inputs over the whole uint8 range (values above 127 included):
LiteRT's BUILTIN_REF kernels for TFLite models, ONNX Runtime's default session for ONNX
ones (zoo models whose float edges' QuantizeLinear / DequantizeLinear are cut off, so
the graph itself takes and returns uint8 / int16).  int16 (16x8) and float edges keep
their dtypes too, with no mark; the marked L3 text stays valid for mlir-opt 22.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from qdialect.interpreter import run_module
from tests.onnx_helpers import differing, ort_run
from transforms.pipelines import lower_to_l3
from tvm_bridge.compile import compile_module
from tvm_bridge.run_cli import _entry_signature, litert_run, load_module, make_inputs
from tvm_bridge.run_cli import main as qd_run

ROOT = Path(__file__).resolve().parents[2]
ZOO, ONNX_ZOO = ROOT / "models" / "zoo", ROOT / "models" / "onnx"
MLIR_OPT = os.environ.get("MLIR_OPT", "/usr/lib/llvm-22/bin/mlir-opt")
SEEDS = (0, 1, 2)


def integer_edges(path: Path, out: Path) -> Path:
    """`path` (a quantized ONNX zoo model with float edges) without the QuantizeLinear after each
    input and the DequantizeLinear before each output: the graph takes and returns the stored
    integers (uint8 / int8 / int16, as its zero points' types say)."""
    import onnx
    from onnx import helper

    model = onnx.load(str(path))
    g = model.graph
    inits = {i.name: i for i in g.initializer}

    def dims(v):
        return [d.dim_value for d in v.type.tensor_type.shape.dim]

    for inp in [i for i in g.input if i.name not in inits]:
        q = next(n for n in g.node if n.op_type == "QuantizeLinear" and n.input[0] == inp.name)
        g.node.remove(q)
        g.input.remove(inp)
        g.input.append(helper.make_tensor_value_info(q.output[0], inits[q.input[2]].data_type, dims(inp)))
    for outp in list(g.output):
        dq = next(n for n in g.node if n.op_type == "DequantizeLinear" and n.output[0] == outp.name)
        g.node.remove(dq)
        g.output.remove(outp)
        g.output.append(helper.make_tensor_value_info(dq.input[0], inits[dq.input[2]].data_type, dims(outp)))
    onnx.checker.check_model(model)
    onnx.save(model, str(out))
    return out


def _lowered(path: Path):
    """(L1 module, its L3 lowering, seeded inputs in the model's dtypes)."""
    l1 = load_module(path, 1)
    _, args, _ = _entry_signature(l1)
    samples = [make_inputs(args, seed) for seed in SEEDS]
    return l1, lower_to_l3(l1.clone()), samples


def _reference(path: Path, samples):
    if path.suffix == ".tflite":
        return litert_run(path.read_bytes(), samples, reference=True)
    return [ort_run(path, s) for s in samples]


def _signature_line(l3_text: str) -> str:
    return next(line for line in l3_text.splitlines() if "func.func @main" in line)


def _check(ours, theirs, what: str) -> None:
    """Same dtypes as the runtime's and 0 differing elements, for every sample and output."""
    for s, (a, b) in enumerate(zip(ours, theirs)):
        assert [o.dtype for o in a] == [np.asarray(t).dtype for t in b], f"{what} sample {s}: dtypes"
        assert differing(a, b) == [0] * len(b), f"{what} sample {s}: {differing(a, b)} elements differ"


def _mlir_opt_accepts(text: str) -> None:
    assert Path(MLIR_OPT).exists(), f"{MLIR_OPT} is missing: install mlir-22-tools or set MLIR_OPT"
    proc = subprocess.run([MLIR_OPT, "--verify-each"], input=text, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def uint8_onnx(tmp_path_factory):
    d = tmp_path_factory.mktemp("onnx")
    return {name: integer_edges(ONNX_ZOO / f"{name}.onnx", d / f"{name}_int_edges.onnx")
            for name in ("cnn_qop_u8", "cnn_qdq_u8", "cnn_qdq_s16")}


def _model(name: str, uint8_onnx) -> Path:
    return uint8_onnx[name] if name in uint8_onnx else ZOO / name


@pytest.mark.parametrize("name", ["cnn_small_uint8.tflite", "cnn_qop_u8", "cnn_qdq_u8"])
def test_uint8_l3_file_runs_uint8(name, uint8_onnx, tmp_path):
    """The printed L3 of a uint8 model: marked, valid for mlir-opt, and run by the interpreter and
    by `qd-run --backend interp` on uint8 inputs to the runtime's uint8 outputs."""
    path = _model(name, uint8_onnx)
    _, l3, samples = _lowered(path)
    assert all(s[0].dtype == np.uint8 for s in samples) and max(int(s[0].max()) for s in samples) > 127
    text = str(l3)
    sig = _signature_line(text)
    assert "xi8>" in sig and sig.count("qnn.element_type = ui8") == 2, sig  # one input, one output
    _mlir_opt_accepts(text)
    theirs = _reference(path, samples)
    file = tmp_path / "model_l3.mlir"
    file.write_text(text)
    parsed = load_module(file, 1)
    _check([run_module(parsed, s) for s in samples], theirs, f"{name} L3 on the interpreter")
    # qd-run's random inputs for the L3 file are the model's own (dtype and values)
    l3_sample = make_inputs(_entry_signature(parsed)[1], SEEDS[0])
    assert [a.dtype for a in l3_sample] == [a.dtype for a in samples[0]]
    assert all(np.array_equal(a, b) for a, b in zip(l3_sample, samples[0]))
    np.savez(tmp_path / "in.npz", input_0=np.stack([s[0] for s in samples]))  # a stack: one run per sample
    assert qd_run([str(file), "--backend", "interp", "--input", str(tmp_path / "in.npz"), "--output",
                   str(tmp_path / "out.npz")]) == 0
    out = np.load(tmp_path / "out.npz")["output_0"]
    _check([[o] for o in out], theirs, f"qd-run {name} L3 (interp)")


@pytest.mark.parametrize("name", ["cnn_small_uint8.tflite", "cnn_qop_u8"])
def test_uint8_compiled_module_takes_and_returns_uint8(name, uint8_onnx):
    """compile_module(lower_to_l3(m)) of a uint8 model: uint8 in, uint8 out, bit-exact."""
    path = _model(name, uint8_onnx)
    _, l3, samples = _lowered(path)
    model = compile_module(l3)
    _check([model(*s) for s in samples], _reference(path, samples), f"{name} compiled")


def test_qd_run_tvm_on_a_uint8_l3_file(tmp_path, capsys):
    """`qd-run L3.mlir` (TVM) on uint8 inputs writes the uint8 outputs LiteRT computes (about 2 s after
    the test above: the same L3 text is served by the session's compiled-model cache)."""
    path = ZOO / "cnn_small_uint8.tflite"
    _, l3, samples = _lowered(path)
    file = tmp_path / "model_l3.mlir"
    file.write_text(str(l3))
    stack = np.stack([s[0] for s in samples])
    np.savez(tmp_path / "in.npz", input_0=stack)
    rc = qd_run([str(file), "--backend", "tvm", "--input", str(tmp_path / "in.npz"), "--output",
                 str(tmp_path / "out.npz")])
    assert rc == 0, capsys.readouterr().err
    got = np.load(tmp_path / "out.npz")["output_0"]
    want = np.stack([o[0] for o in _reference(path, samples)])
    assert got.dtype == want.dtype == np.uint8
    assert int(np.count_nonzero(got != want)) == 0


@pytest.mark.parametrize("name", ["cnn_small_16x8.tflite",
                                  pytest.param("cnn_qdq_s16", marks=pytest.mark.slow)])  # ~60 s: TVM's int16 convs
def test_int16_edges_stay_int16(name, uint8_onnx, tmp_path):
    """A 16x8 model: L3 edges are i16 with no mark; the interpreter, qd-run on the L3 file and
    the compiled module take and return int16, bit-exact."""
    path = _model(name, uint8_onnx)
    _, l3, samples = _lowered(path)
    sig = _signature_line(str(l3))
    assert "xi16>" in sig and "qnn.element_type" not in sig, sig
    assert all(s[0].dtype == np.int16 for s in samples) and max(int(np.abs(s[0]).max()) for s in samples) > 128
    theirs = _reference(path, samples)
    file = tmp_path / "model_l3.mlir"
    file.write_text(str(l3))
    np.savez(tmp_path / "in.npz", input_0=np.stack([s[0] for s in samples]))
    assert qd_run([str(file), "--backend", "interp", "--input", str(tmp_path / "in.npz"), "--output",
                   str(tmp_path / "out.npz")]) == 0
    out = np.load(tmp_path / "out.npz")
    _check([[out[f"output_{k}"][i] for k in range(len(theirs[0]))] for i in range(len(samples))], theirs,
           f"qd-run {name} L3 (interp)")
    model = compile_module(l3)
    _check([model(*s) for s in samples], theirs, f"{name} compiled")


def test_float_edges_stay_float(tmp_path):
    """A QDQ model with float edges: L3 takes and returns f32 (no mark), bit-exact with ORT."""
    path = ONNX_ZOO / "op_mul_qdq_u8.onnx"
    _, l3, samples = _lowered(path)
    sig = _signature_line(str(l3))
    assert "xf32>" in sig and "qnn.element_type" not in sig, sig
    assert all(a.dtype == np.float32 for s in samples for a in s)
    theirs = _reference(path, samples)
    _check([run_module(l3, s) for s in samples], theirs, "op_mul_qdq_u8 L3 on the interpreter")
    model = compile_module(l3)
    _check([model(*s) for s in samples], theirs, "op_mul_qdq_u8 compiled")


def _uint8_l3_file(tmp_path) -> Path:
    _, l3, _ = _lowered(ZOO / "cnn_small_uint8.tflite")
    file = tmp_path / "model_l3.mlir"
    file.write_text(str(l3))
    return file


def test_int8_values_for_a_uint8_l3_file_are_refused(tmp_path, capsys):
    file = _uint8_l3_file(tmp_path)
    np.savez(tmp_path / "in.npz", input_0=np.full((1, 32, 32, 3), -5, np.int8))
    assert qd_run([str(file), "--backend", "interp", "--input", str(tmp_path / "in.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == f"qd-run: error: {tmp_path / 'in.npz'}: 'input_0' has values in [-5, -5], outside uint8 [0, 255]"


def test_a_mark_that_cannot_describe_its_value_is_refused(tmp_path, capsys):
    file = _uint8_l3_file(tmp_path)
    file.write_text(file.read_text().replace("qnn.element_type = ui8", "qnn.element_type = ui16", 1))
    assert qd_run([str(file), "--backend", "interp"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"qd-run: error: @main argument 0: qnn.element_type ui16 cannot describe its type "
                          f"tensor<1x32x32x3xi8>"), err


def test_integral_values_of_another_dtype_are_given_in_the_declared_one(tmp_path):
    """`--input` arrays of another dtype whose values fit (float 0..255 for a uint8 file) run as
    uint8: the same outputs as the uint8 arrays, on the interpreter and on TVM."""
    file = _uint8_l3_file(tmp_path)
    x = np.random.default_rng(7).integers(0, 256, (1, 32, 32, 3)).astype(np.uint8)
    outs = {}
    for label, a in (("u8", x), ("f32", x.astype(np.float32)), ("i64", x.astype(np.int64))):
        np.savez(tmp_path / f"in_{label}.npz", input_0=a)
        assert qd_run([str(file), "--backend", "interp", "--input", str(tmp_path / f"in_{label}.npz"), "--output",
                       str(tmp_path / f"out_{label}.npz")]) == 0
        outs[label] = np.load(tmp_path / f"out_{label}.npz")["output_0"]
    assert all(o.dtype == np.uint8 for o in outs.values())
    assert np.array_equal(outs["f32"], outs["u8"]) and np.array_equal(outs["i64"], outs["u8"])
