"""Float TFLite import: the nn graph computes what LiteRT computes on the float model."""

from __future__ import annotations

import numpy as np
import pytest

from qdialect.dialects import nn
from qdialect.importer.tflite import TFLiteImportError
from qdialect.importer.tflite_float import import_tflite_float, import_tflite_float_file, is_float_model
from qdialect.interpreter import run_module
from tests.quantize.conftest import FLOAT_MODELS, ZOO, data, float_module, litert


@pytest.mark.parametrize("name", FLOAT_MODELS)
def test_float_zoo_matches_litert(name):
    module = float_module(name)
    ops = [op for op in module.walk() if op.name.startswith("nn.")]
    assert ops and all(isinstance(op, nn.NnOp | nn.ConstantOp) for op in ops)
    samples = data(name, "heldout")[:4]
    ref = litert(ZOO / f"{name}_float.tflite", samples)
    for sample, expected in zip(samples, ref):
        got = run_module(module, sample)
        for g, e in zip(got, expected):
            scale = max(float(np.abs(e).max()), 1e-6)
            assert np.abs(g.astype(np.float64) - e.reshape(g.shape)).max() <= 1e-5 * scale


def test_ssa_names_are_tensor_names():
    text = str(float_module("cnn_small"))
    assert "%cnn_small_1_conv1_1_Relu = nn.conv2d" in text
    assert "act_min = 0.000000e+00 : f64" in text  # fused relu as a real clamp


def test_quantized_model_is_sent_to_qd_import():
    data_ = (ZOO / "cnn_small.tflite").read_bytes()
    assert not is_float_model(data_)
    assert is_float_model((ZOO / "cnn_small_float.tflite").read_bytes())
    with pytest.raises(TFLiteImportError, match="already quantized"):
        import_tflite_float(data_)


def test_bad_file_is_one_line_error(tmp_path):
    bad = tmp_path / "x.tflite"
    bad.write_bytes(b"not a model at all")
    with pytest.raises(TFLiteImportError):
        import_tflite_float_file(bad)
    with pytest.raises(TFLiteImportError, match="cannot read"):
        import_tflite_float_file(tmp_path / "missing.tflite")


def test_qd_import_float_flag(tmp_path, capsys):
    from qdialect.importer.cli import main

    out = tmp_path / "f.mlir"
    assert main([str(ZOO / "mlp_act_float.tflite"), "--float", "-o", str(out)]) == 0
    assert "nn.fully_connected" in out.read_text() and "qnn." not in out.read_text()
    assert main([str(ZOO / "mlp_act_float.tflite")]) == 2
    assert "this model is float32" in capsys.readouterr().err
