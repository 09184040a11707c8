"""Shared fixtures: the float zoo, its calibration / held-out data, LiteRT runs."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from qdialect.reference.elementwise import quantize_like_litert_input

ROOT = Path(__file__).resolve().parents[2]
ZOO = ROOT / "models" / "zoo"
FLOAT_MODELS = sorted(p.stem[: -len("_float")] for p in ZOO.glob("*_float.tflite"))


def input_shapes(module) -> list[list[int]]:
    from xdsl.dialects import func

    f = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return [list(a.type.get_shape()) for a in f.body.block.args]


@functools.cache
def float_module(name: str):
    from qdialect.importer.tflite_float import import_tflite_float_file

    return import_tflite_float_file(ZOO / f"{name}_float.tflite")


@functools.cache
def data(name: str, split: str) -> list[list[np.ndarray]]:
    from transforms.quantizer.flow import samples_from_npz

    return samples_from_npz(dict(np.load(ZOO / f"{name}_{split}.npz")), input_shapes(float_module(name)))


def litert(path: Path, samples) -> list[list[np.ndarray]]:
    """Run a .tflite model in LiteRT (default resolver); integer inputs/outputs are
    quantized / dequantized with the model's own parameters, so results are real numbers."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    ins, outs = it.get_input_details(), it.get_output_details()
    results = []
    for sample in samples:
        for d, x in zip(ins, sample):
            it.set_tensor(d["index"], quantize_like_litert_input(x, d))
        it.invoke()
        row = []
        for d in outs:
            y = it.get_tensor(d["index"]).astype(np.float64)
            if d["dtype"] != np.float32:
                s, z = d["quantization"]
                y = (y - z) * s
            row.append(y)
        results.append(row)
    return results


def stacked(results, k: int) -> np.ndarray:
    return np.concatenate([np.asarray(r[k], np.float64).reshape(-1) for r in results])


@pytest.fixture(scope="session")
def zoo_names():
    if not FLOAT_MODELS:
        pytest.skip("zoo not generated")
    return FLOAT_MODELS
