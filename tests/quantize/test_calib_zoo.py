"""The calibration zoo (models/calib, tools/gen_calib_zoo.py): the ONNX graphs written from the float
.tflite agree with LiteRT, the committed data match MANIFEST.txt, and the held-out data are regenerated
bit for bit from the seeds (what TensorFlow's converter saw)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from qdialect.reference.elementwise import quantize_like_litert_input

ROOT = Path(__file__).resolve().parents[2]
ZOO = ROOT / "models" / "calib"
sys.path.insert(0, str(ROOT / "tools"))

import gen_calib_zoo  # noqa: E402

SMALL = [m for m in ("ds_cnn_kws", "mlp_tabular", "attn_kws") if (ZOO / f"{m}_float.tflite").exists()]


def _litert(path: Path, xs: np.ndarray, resolver: str) -> np.ndarray:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kw = {} if resolver == "default" else {"experimental_op_resolver_type": OpResolverType.BUILTIN_REF}
    it = Interpreter(model_path=str(path), **kw)
    it.allocate_tensors()
    inp, out = it.get_input_details()[0], it.get_output_details()[0]
    ys = []
    for x in xs:
        it.set_tensor(inp["index"], x)
        it.invoke()
        ys.append(it.get_tensor(out["index"]).copy())
    return np.stack(ys)


def _ort(path: Path, xs: np.ndarray, optimized: bool) -> np.ndarray:
    import onnxruntime as ort

    so = ort.SessionOptions()
    if not optimized:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return np.stack([sess.run(None, {"input_0": x})[0] for x in xs])


@pytest.mark.parametrize("name", SMALL)
def test_onnx_translation_agrees_with_litert(name, tmp_path):
    onnx_path = tmp_path / f"{name}.onnx"
    gen_calib_zoo.tflite_to_onnx(ZOO / f"{name}_float.tflite", onnx_path)
    xs = np.load(ZOO / f"{name}_eval.npz")["input_0"][:24]
    ref = _litert(ZOO / f"{name}_float.tflite", xs, "ref")
    assert np.max(np.abs(_litert(ZOO / f"{name}_float.tflite", xs, "default") - ref)) < 1e-5
    for optimized in (False, True):
        got = _ort(onnx_path, xs, optimized)
        assert got.shape == ref.shape
        assert np.max(np.abs(got - ref)) < 1e-5, (name, optimized)


def test_committed_data_match_manifest():
    manifest = {}
    for line in (ZOO / "MANIFEST.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            h, f = line.split()
            manifest[f] = h
    checked = 0
    for f, h in manifest.items():
        if (ZOO / f).exists():
            assert gen_calib_zoo.sha256(ZOO / f) == h, f
            checked += 1
    assert checked >= 1


@pytest.mark.parametrize("name", SMALL)
def test_data_regenerate_from_seeds(name, tmp_path):
    _, (xc, _), (xe, ye), _ = gen_calib_zoo.splits(gen_calib_zoo.MODELS[name])
    gen_calib_zoo.save_npz(tmp_path / "c.npz", input_0=xc)
    gen_calib_zoo.save_npz(tmp_path / "e.npz", input_0=xe, labels=ye.astype(np.int64))
    assert gen_calib_zoo.sha256(tmp_path / "c.npz") == gen_calib_zoo.sha256(ZOO / f"{name}_calib.npz")
    assert gen_calib_zoo.sha256(tmp_path / "e.npz") == gen_calib_zoo.sha256(ZOO / f"{name}_eval.npz")


def test_tf_int8_model_keeps_float_class_mostly():
    """TensorFlow's int8 model of the first committed model agrees with its float model's class on most
    evaluation samples (the committed peer is the model it claims to be)."""
    name = (SMALL or ["mobilenetv2_035"])[0]
    if not (ZOO / f"{name}_eval.npz").exists():
        pytest.skip(f"{name}_eval.npz not generated (tools/gen_calib_zoo.py --derived)")
    xs = np.load(ZOO / f"{name}_eval.npz")["input_0"][:32]
    ref = _litert(ZOO / f"{name}_float.tflite", xs, "ref")
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(ZOO / f"{name}_tf_int8.tflite"))
    it.allocate_tensors()
    inp, out = it.get_input_details()[0], it.get_output_details()[0]
    agree = 0
    for x, r in zip(xs, ref):
        it.set_tensor(inp["index"], quantize_like_litert_input(x, inp))
        it.invoke()
        agree += int(np.argmax(it.get_tensor(out["index"])) == np.argmax(r))
    assert agree >= 28
