"""qd-export: modules written back as .tflite run in LiteRT with the same integers.

References are LiteRT's, never our own output: (a) every quantized zoo model,
imported and exported, gives element for element what the original .tflite
gives, with the reference kernels (BUILTIN_REF) and with the default
(XNNPACK) interpreter; (b) a float zoo model quantized by qd-quantize's
defaults and exported gives in BUILTIN_REF what our reference interpreter
gives for the module; (c) ONNX models imported and set to the `tflite`
profile (what `qd-run --rounding tflite` runs) give in BUILTIN_REF what the
interpreter gives.  Refusals are one diagnostic naming every offending op.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from qdialect.dialects.qnn import set_rounding
from qdialect.exporter import TFLiteExportError, export_tflite
from qdialect.importer import import_tflite_file
from qdialect.interpreter import run_module
from tests.tflite_writer import run_tflite
from tvm_bridge.run_cli import _entry_signature, make_inputs

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
QUANTIZED = sorted(
    str(p.relative_to(MODELS))
    for d in ("zoo", "transformers", "transformers/masked")
    for p in (MODELS / d).glob("*.tflite")
    if not p.stem.endswith("_float")
)
RANDOM_SAMPLES = 3


def _samples(path: Path, module) -> list[list[np.ndarray]]:
    """The committed held-out samples in the model's input types when there are some (token ids
    must be in range), else seeded random inputs over the whole storage range."""
    q = path.with_name(path.stem + "_heldout_q.npz")
    if q.exists():
        with np.load(q) as d:
            keys = sorted(d.files, key=lambda k: int(k.rsplit("_", 1)[1]))
            return [[d[k][n] for k in keys] for n in range(min(4, d[keys[0]].shape[0]))]
    _, in_values, _ = _entry_signature(module)
    return [make_inputs(in_values, seed) for seed in range(RANDOM_SAMPLES)]


def _mismatches(a_list, b_list) -> list[str]:
    out = []
    for k, (a, b) in enumerate(zip(a_list, b_list, strict=True)):
        if a.shape != b.shape:
            out.append(f"output {k}: shape {a.shape} vs {b.shape}")
            continue
        diff = int(np.count_nonzero(a.astype(np.float64) != b.astype(np.float64)))
        if diff:
            out.append(f"output {k}: {diff} of {a.size} differ")
    return out


def _ops(data: bytes) -> Counter:
    import tflite

    names = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
    m = tflite.Model.GetRootAs(data, 0)
    sg = m.Subgraphs(0)
    codes = [max(m.OperatorCodes(i).BuiltinCode(), m.OperatorCodes(i).DeprecatedBuiltinCode())
             for i in range(m.OperatorCodesLength())]
    return Counter(names[codes[sg.Operators(i).OpcodeIndex()]] for i in range(sg.OperatorsLength()))


# ----- (a) import -> export round trip of every quantized zoo model ---------------------------------


@pytest.mark.parametrize("reference", [True, False], ids=["builtin_ref", "xnnpack"])
@pytest.mark.parametrize("name", QUANTIZED)
def test_roundtrip_bit_exact(name, reference):
    path = MODELS / name
    module = import_tflite_file(path)
    exported = export_tflite(module)
    original = path.read_bytes()
    bad = []
    for sample in _samples(path, module):
        bad += _mismatches(run_tflite(original, sample, reference=reference),
                           run_tflite(exported, sample, reference=reference))
    assert not bad, f"{name}: " + "; ".join(bad)


def test_quantized_models_are_there():
    assert len(QUANTIZED) >= 18, QUANTIZED


@pytest.mark.parametrize("name", ["zoo/cnn_small.tflite", "zoo/ds_cnn_kws.tflite", "zoo/mobilenetv2_tiny.tflite",
                                  "zoo/cnn_small_16x8.tflite"])
def test_roundtrip_keeps_the_operators(name):
    """Fused activations fold back (no MAXIMUM / MINIMUM added), paddings are SAME / VALID (no PAD
    added): the exported CNN has the original's operators."""
    ours, theirs = _ops(export_tflite(import_tflite_file(MODELS / name))), _ops((MODELS / name).read_bytes())
    assert not ours - theirs, f"operators added: {ours - theirs}"
    missing = theirs - ours  # only the shape arithmetic the importer folds (SHAPE -> STRIDED_SLICE -> PACK)
    assert set(missing) <= {"SHAPE", "STRIDED_SLICE", "PACK"}, missing


@pytest.mark.parametrize("name", ["transformers/bert_tiny.tflite", "transformers/vit_tiny_16x8.tflite"])
def test_raised_layer_norm_exports_its_body(name):
    """After qnn-raise-layer-norm the module holds qnn.layer_norm ops; their body chains are written
    op by op and the model still gives the original's outputs."""
    from transforms.opt import QdOptMain
    from transforms.raise_layer_norm import QnnRaiseLayerNormPass

    path = MODELS / name
    module = import_tflite_file(path)
    QnnRaiseLayerNormPass().apply(QdOptMain(args=[]).ctx, module)
    assert sum(op.name == "qnn.layer_norm" for op in module.walk()) == 5
    exported, original = export_tflite(module), path.read_bytes()
    bad = []
    for sample in _samples(path, module)[:2]:
        for reference in (True, False):
            bad += _mismatches(run_tflite(original, sample, reference=reference),
                               run_tflite(exported, sample, reference=reference))
    assert not bad, "; ".join(bad)


def test_signature_and_io_names_kept():
    from ai_edge_litert.interpreter import Interpreter

    path = MODELS / "zoo" / "elementwise_movement.tflite"
    data = export_tflite(import_tflite_file(path))
    theirs, ours = Interpreter(model_path=str(path)), Interpreter(model_content=data)
    assert [d["name"] for d in ours.get_input_details()] == ["input_0", "input_1"]
    assert [d["name"] for d in ours.get_output_details()] == [d["name"] for d in theirs.get_output_details()]
    sig = ours.get_signature_list()["serving_default"]
    assert sig["inputs"] == ["input_0", "input_1"]
    assert sorted(sig["outputs"]) == sorted(d["name"] for d in theirs.get_output_details())
    runner = ours.get_signature_runner("serving_default")
    x = np.random.default_rng(0).integers(-128, 128, (1, 6, 8, 4)).astype(np.int8)
    got = runner(input_0=x, input_1=x)
    want = run_tflite(path.read_bytes(), [x, x], reference=False)  # the runner is the default interpreter
    names = [d["name"] for d in theirs.get_output_details()]
    for n, w in zip(names, want):
        assert np.array_equal(got[n], w)


# ----- (b) qd-quantize's module exported: LiteRT BUILTIN_REF == our interpreter ------------------------


def _quantized_float_model(stem: str, where: str = "zoo"):
    from transforms.quantizer.flow import quantize_float_module, samples_from_npz
    from transforms.quantizer.strategy import load_strategy
    from qdialect.importer.tflite_float import import_tflite_float_file

    path = MODELS / where / f"{stem}_float.tflite"
    fm = import_tflite_float_file(path)
    f = next(iter(fm.ops))
    shapes = [list(a.type.get_shape()) for a in f.body.block.args]
    with np.load(MODELS / where / f"{stem}_calib.npz") as d:
        calib = samples_from_npz(dict(d), shapes)
    with np.load(MODELS / where / f"{stem}_heldout.npz") as d:
        held = samples_from_npz(dict(d), shapes)[:4]
    return quantize_float_module(fm, calib, load_strategy("int8")).module, held


@pytest.mark.parametrize("stem", ["cnn_small", "mlp_act", "ds_cnn_kws", "elementwise_movement",
                                  pytest.param("mobilenetv2_tiny", marks=pytest.mark.slow),
                                  "transformers/vit_tiny"])
def test_quantized_float_model_matches_interpreter(stem):
    """BUILTIN_REF against the interpreter's `tflite` profile (qd-run --backend interp); the default
    (XNNPACK) interpreter against its `litert` profile.  elementwise_movement and vit_tiny concatenate
    differently quantized values: qd-quantize ties the inputs to the output type (TFLite's converter
    does), so they export (no `single` requantize)."""
    where, _, name = stem.rpartition("/")
    module, held = _quantized_float_model(name, where or "zoo")
    data = export_tflite(module)
    bad = []
    for sample in held:
        bad += _mismatches(run_module(module, sample), run_tflite(data, sample, reference=True))
        bad += [f"XNNPACK {m}" for m in _mismatches(run_module(module, sample, rounding="litert"),
                                                     run_tflite(data, sample, reference=False))]
    assert not bad, f"{stem}: " + "; ".join(bad)


def test_single_rounding_requantize_refused():
    """A requantize with `single` rounding (which LiteRT's kernels do not have): refused by name, not
    written with other numbers."""
    from xdsl.dialects.builtin import StringAttr

    from qdialect.dialects import qnn

    module, _ = _quantized_float_model("elementwise_movement")
    req = next(op for op in module.walk() if isinstance(op, qnn.RequantizeOp))
    req.attributes["rounding"] = StringAttr("single")
    with pytest.raises(TFLiteExportError, match=r'qnn\.requantize at @main op \d+: rounding = "single"'):
        export_tflite(module)


def test_int4_weights_packed():
    """qd-quantize's int4-weights scheme: INT4 weight buffers packed two a byte, as LiteRT reads them."""
    from transforms.quantizer.flow import quantize_float_module, samples_from_npz
    from transforms.quantizer.strategy import load_strategy
    from qdialect.importer.tflite_float import import_tflite_float_file

    fm = import_tflite_float_file(MODELS / "zoo" / "mlp_act_float.tflite")
    shapes = [list(a.type.get_shape()) for a in next(iter(fm.ops)).body.block.args]
    with np.load(MODELS / "zoo" / "mlp_act_calib.npz") as d:
        calib = samples_from_npz(dict(d), shapes)
    module = quantize_float_module(fm, calib, load_strategy("int4-weights")).module
    data = export_tflite(module)
    assert "INT4" in {k for k, v in vars(__import__("tflite").TensorType).items()
                      if v in _tensor_types(data)}
    bad = []
    for sample in calib[:3]:
        bad += _mismatches(run_module(module, sample), run_tflite(data, sample, reference=True))
    assert not bad, "; ".join(bad)


def _tensor_types(data: bytes) -> set[int]:
    import tflite

    sg = tflite.Model.GetRootAs(data, 0).Subgraphs(0)
    return {sg.Tensors(i).Type() for i in range(sg.TensorsLength())}


def test_mixed_width_fully_connected_refused():
    """qd-quantize's int16x8 ends mlp_act in an int8 -> int16 FULLY_CONNECTED, which LiteRT runs to
    zeros: refused by name."""
    from transforms.quantizer.flow import quantize_float_module, samples_from_npz
    from transforms.quantizer.strategy import load_strategy
    from qdialect.importer.tflite_float import import_tflite_float_file

    fm = import_tflite_float_file(MODELS / "zoo" / "mlp_act_float.tflite")
    shapes = [list(a.type.get_shape()) for a in next(iter(fm.ops)).body.block.args]
    with np.load(MODELS / "zoo" / "mlp_act_calib.npz") as d:
        calib = samples_from_npz(dict(d), shapes)
    module = quantize_float_module(fm, calib, load_strategy("int16x8")).module
    with pytest.raises(TFLiteExportError, match=r"qnn\.fully_connected at @main op \d+: i8 input and i16 result"):
        export_tflite(module)


# ----- (c) ONNX in the tflite profile ----------------------------------------------------------------

ONNX_EXACT = ["cnn_qdq_s8", "cnn_qop_u8", "mobilenetv2_qdq_u8", "mobilenetv2_qop_s8", "op_avgpool_cip0_qdq_u8",
              "op_conv_dw_qdq_s8", "op_gemm_qop_u8", "op_matmul_acts_qdq_s8", "op_leakyrelu_qdq_u8",
              "op_lrelu_resize_qop_u8", "op_concat_qdq_u8", "cnn_qdq_u8w"]


def _onnx_tflite_profile(name: str):
    from qdialect.importer.onnx import import_onnx_file

    module = import_onnx_file(MODELS / "onnx" / f"{name}.onnx", profile="onnxruntime")
    set_rounding(module, "tflite")  # qd-run --rounding tflite
    return module


@pytest.mark.parametrize("name", ONNX_EXACT)
def test_onnx_tflite_profile_matches_interpreter(name):
    module = _onnx_tflite_profile(name)
    data = export_tflite(module)
    _, in_values, _ = _entry_signature(module)
    bad = []
    for seed in range(RANDOM_SAMPLES):
        sample = make_inputs(in_values, seed)
        bad += _mismatches(run_module(module, sample), run_tflite(data, sample, reference=True))
    assert not bad, f"{name}: " + "; ".join(bad)


@pytest.mark.parametrize("name, why", [
    ("op_sigmoid_qdq_s8", r"qnn\.logistic at @main op \d+: LiteRT's kernel LOGISTIC refuses it"),
    ("op_concat_qop_s8", r"qnn\.concatenation at @main op \d+: LiteRT's kernel CONCATENATION refuses it"),
    ("op_avgpool_cip1_qop_s8", r"qnn\.avg_pool2d at @main op \d+: operand 0 is .* does not requantize"),
    ("cnn_qop_u8w", r"qnn\.conv2d at @main op \d+: weights with zero points"),
    ("elementwise_qdq_s8", r"qnn\.hard_sigmoid at @main op \d+: TFLite has no kernel for it"),
])
def test_onnx_tflite_profile_refusals(name, why):
    with pytest.raises(TFLiteExportError, match=why):
        export_tflite(_onnx_tflite_profile(name))


# ----- refusals ---------------------------------------------------------------------------------------


def test_onnxruntime_profile_refused_listing_every_op():
    from qdialect.importer.onnx import import_onnx_file

    module = import_onnx_file(MODELS / "onnx" / "cnn_qdq_s8.onnx", profile="onnxruntime")
    with pytest.raises(TFLiteExportError) as e:
        export_tflite(module)
    msg = str(e.value)
    assert "\n" not in msg
    offending = [op for op in module.walk() if "rounding" in op.attributes
                 and op.attributes["rounding"].data not in ("tflite", "litert")]
    assert msg.startswith(f"cannot export {len(offending)} ops to TFLite")
    assert msg.count("rounding = \"onnxruntime\"") + msg.count("rounding = \"onnx\"") == len(offending)


class _Result:
    def __init__(self, returncode: int, stderr: str):
        self.returncode, self.stderr = returncode, stderr


def _qd_export(*args, capsys=None):
    """qd-export in this process (its `main`), or the console script when no capsys is given."""
    if capsys is None:
        exe = Path(sys.executable).with_name("qd-export")
        return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=120)
    from qdialect.exporter.cli import main

    capsys.readouterr()
    code = main([str(a) for a in args])
    return _Result(code, capsys.readouterr().err)


def test_cli_roundtrip_and_refusal(tmp_path, capsys):
    from qdialect.importer.cli import main as qd_import

    mlir = tmp_path / "m.mlir"
    assert qd_import([str(MODELS / "zoo" / "mlp_act.tflite"), "-o", str(mlir)]) == 0
    out = tmp_path / "m.tflite"
    r = _qd_export(mlir, "-o", out)  # the console script
    assert r.returncode == 0, r.stderr
    x = np.random.default_rng(1).integers(-128, 128, (1, 16)).astype(np.int8)
    orig = (MODELS / "zoo" / "mlp_act.tflite").read_bytes()
    assert not _mismatches(run_tflite(orig, [x]), run_tflite(out.read_bytes(), [x]))

    onnx_mlir = tmp_path / "o.mlir"
    assert qd_import([str(MODELS / "onnx" / "op_conv_dw_qdq_s8.onnx"), "-o", str(onnx_mlir)]) == 0
    r = _qd_export(onnx_mlir, "-o", tmp_path / "o.tflite", capsys=capsys)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("qd-export: error: ")
    assert f"{onnx_mlir}:3:" in lines[0] and 'rounding = "onnxruntime"' in lines[0]  # FILE:LINE:COL of each op


def test_cli_op_without_kernel(tmp_path, capsys):
    mlir = tmp_path / "sq.mlir"
    mlir.write_text(
        'func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n'
        '  %y = qnn.simulated_quantize %x {qtype = !quant.uniform<i8:f32, 0.05:-3>} : (tensor<4xf32>) -> tensor<4xf32>\n'
        '  func.return %y : tensor<4xf32>\n'
        '}\n')
    r = _qd_export(mlir, "-o", tmp_path / "sq.tflite", capsys=capsys)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1
    assert f"qnn.simulated_quantize at {mlir}:2:3: TFLite has no kernel for it" in r.stderr
    assert not (tmp_path / "sq.tflite").exists()


@pytest.mark.parametrize("content, expect", [
    (b"garbage\n", "Operation garbage is not registered"),
    (b"\xff\xfe\x00binary", ""),
])
def test_cli_malformed_mlir(tmp_path, capsys, content, expect):
    bad = tmp_path / "bad.mlir"
    bad.write_bytes(content)
    r = _qd_export(bad, "-o", tmp_path / "x.tflite", capsys=capsys)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("qd-export: error: ")
    assert "Traceback" not in r.stderr and expect in r.stderr


def test_cli_malformed_tflite_and_missing_file(tmp_path, capsys):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"\x00" * 64)
    r = _qd_export(bad, "-o", tmp_path / "x.tflite")  # the console script: no traceback
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "bad.tflite" in r.stderr
    r = _qd_export(tmp_path / "missing.mlir", "-o", tmp_path / "x.tflite", capsys=capsys)
    assert r.returncode == 2 and "cannot read" in r.stderr and "no such file" in r.stderr


def test_clamp_without_fused_activation_becomes_maximum_minimum():
    """act_min / act_max that no fused activation gives (here [-100, 90] on a conv and a mean) are
    written as MAXIMUM / MINIMUM against constants of the result's type."""
    from xdsl.dialects.builtin import IntegerAttr, i64

    module = import_tflite_file(MODELS / "zoo" / "elementwise_movement.tflite")
    mean = next(op for op in module.walk() if op.name == "qnn.mean")
    mean.attributes["act_min"], mean.attributes["act_max"] = IntegerAttr(-100, i64), IntegerAttr(90, i64)
    cnn = import_tflite_file(MODELS / "zoo" / "cnn_small.tflite")
    conv = next(op for op in cnn.walk() if op.name == "qnn.conv2d")
    conv.attributes["act_min"], conv.attributes["act_max"] = IntegerAttr(-100, i64), IntegerAttr(90, i64)
    for m in (module, cnn):
        data = export_tflite(m)
        assert {"MAXIMUM", "MINIMUM"} <= set(_ops(data))
        _, in_values, _ = _entry_signature(m)
        for seed in range(2):
            sample = make_inputs(in_values, seed)
            assert not _mismatches(run_module(m, sample), run_tflite(data, sample, reference=True))


def _export_fuzz_is_clean(cases: int, seed: int, timeout: int) -> None:
    """tools/export_fuzz.py finds no mismatch, export error or exported model LiteRT refuses."""
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "export_fuzz.py"), "--cases", str(cases), "--seed",
                          str(seed)], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    summary = [ln for ln in out.stdout.splitlines() if ln.startswith("summary: ")]
    assert summary, out.stdout + out.stderr
    assert "mismatch" not in out.stdout and "export-error" not in out.stdout and "exported-fails" not in out.stdout, \
        out.stdout
    assert " exact " in summary[0]


def test_mutated_models_export_exactly_or_are_refused_short():
    """tools/export_fuzz.py's short run (40 mutated models, about 2 s): every model qd-import accepts
    and LiteRT runs exports to the same outputs (BUILTIN_REF) or is refused; the 400-case run is slow."""
    _export_fuzz_is_clean(40, 2, 600)


@pytest.mark.slow
def test_mutated_models_export_exactly_or_are_refused():
    """tools/export_fuzz.py: 400 mutated zoo / one-operator models that qd-import accepts and LiteRT
    runs either export to the same outputs (BUILTIN_REF) or are refused (found uint8 SUM)."""
    _export_fuzz_is_clean(400, 1, 1200)


@pytest.mark.parametrize("arg,why", [
    ("tensor<?x2xf32>", "dynamic shape"),
    ("tensor<2xui16>", "ui16 has no TFLite tensor type"),
])
def test_cli_types_tflite_cannot_hold(tmp_path, capsys, arg, why):
    """A dynamic shape or a wide unsigned integer is refused in one line (not an internal error, not
    written as a signed type)."""
    mlir = tmp_path / "t.mlir"
    mlir.write_text(f"func.func @main(%a: {arg}) -> {arg} {{\n  func.return %a : {arg}\n}}\n")
    r = _qd_export(mlir, "-o", tmp_path / "t.tflite", capsys=capsys)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("qd-export: error: ") and why in lines[0], r.stderr
