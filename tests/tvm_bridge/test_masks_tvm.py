"""Attention and padding masks on TVM (issue 22): the int32 / bool mask ops lowered by
transforms/mask_islands.py, compiled and run, element for element with LiteRT.

Mask graphs built with tests/tflite_writer.py (comparisons, logic, casts between int32, bool
and float32 with NaN and out-of-range values, SELECT_V2 of quantized values, Keras' int32
embedding-index wrap) and the masked encoders of models/transformers/masked/ whose other
operators lower too; expected values from LiteRT's reference kernels (`tflite`) and its
default interpreter (`litert`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

from tests.importer.test_tflite_masks import encoder_samples  # noqa: E402
from tests.tflite_writer import OpSpec, TensorSpec, build_model, run_tflite  # noqa: E402
from tests.tvm_bridge.helpers import lowered_tflite  # noqa: E402

MASKED = Path(__file__).resolve().parents[2] / "models" / "transformers" / "masked"
RNG = np.random.default_rng(2222)


def _mismatches(model: bytes, samples, rounding: str, tmp_path) -> int:
    """Differing elements over all samples and outputs (bools as 0 / 1, floats by their bits)."""
    from tvm_bridge.compile import compile_module

    run = compile_module(lowered_tflite(model, rounding, tmp_path)())
    bad = 0
    for inputs in samples:
        ours = run(*inputs)
        theirs = run_tflite(model, inputs, reference=rounding == "tflite")
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            a = np.asarray(a).reshape(b.shape)
            if b.dtype == np.float32:
                bad += int(np.count_nonzero(a.astype(np.float32).view(np.int32) != b.view(np.int32)))
            else:
                bad += int(np.count_nonzero(a.astype(np.int64) != b.astype(np.int64)))
    return bad


def const(values, dtype: str, scale=None, zero_point=None) -> TensorSpec:
    arr = np.asarray(values)
    return TensorSpec(arr.shape, dtype, scale, zero_point, data=arr)


def test_mask_ops_on_tvm(tmp_path):
    """NOT_EQUAL / LESS_EQUAL on int32, CAST int32 -> bool -> float32 -> QUANTIZE, LOGICAL_AND /
    OR / NOT, CAST float32 -> bool and -> int32 (NaN, +-inf, beyond 2^31), SELECT_V2 of int8
    scores with broadcasting, LESS / ADD / SELECT on int32 ids (Keras' embedding-index wrap;
    the GATHER after it has no TVM lowering yet)."""
    tensors = [
        TensorSpec((2, 6), "int32"),                      # 0 ids
        const(np.array(0, np.int32), "int32"),            # 1
        TensorSpec((2, 6), "bool"),                       # 2 ids != 0
        TensorSpec((2, 6), "float32"),                    # 3 as float
        TensorSpec((2, 6), "int8", 1 / 255, -128),        # 4 quantized mask
        const(np.array([True, False, True, True, False, True]), "bool"),  # 5
        TensorSpec((2, 6), "bool"),                       # 6 and
        TensorSpec((2, 6), "bool"),                       # 7 or
        TensorSpec((2, 6), "bool"),                       # 8 not
        TensorSpec((2, 6), "float32"),                    # 9 features
        TensorSpec((2, 6), "bool"),                       # 10 features != 0
        TensorSpec((2, 6), "int32"),                      # 11 truncated
        TensorSpec((2, 3, 6), "int8", 0.1, 3),            # 12 scores
        const(np.array([-128], np.int8), "int8", 0.1, 3),  # 13
        TensorSpec((2, 1, 6), "bool"),                    # 14 mask [2, 1, 6]
        TensorSpec((2, 3, 6), "int8", 0.1, 3),            # 15 masked scores
        TensorSpec((2, 6), "bool"),                       # 16 ids <= 0
        TensorSpec((2, 6), "int32"),                      # 17 ids + 5
        TensorSpec((2, 6), "int32"),                      # 18 wrapped
        const(np.array([5], np.int32), "int32"),          # 19
        TensorSpec((2, 6), "bool"),                       # 20 ids < 0
    ]
    ops = [OpSpec("NOT_EQUAL", [0, 1], [2]), OpSpec("CAST", [2], [3]), OpSpec("QUANTIZE", [3], [4]),
           OpSpec("LOGICAL_AND", [2, 5], [6]), OpSpec("LOGICAL_OR", [6, 5], [7]), OpSpec("LOGICAL_NOT", [7], [8]),
           OpSpec("CAST", [9], [10]), OpSpec("CAST", [9], [11]),
           OpSpec("RESHAPE", [6], [14], {"new_shape": [2, 1, 6]}), OpSpec("SELECT_V2", [14, 12, 13], [15]),
           OpSpec("LESS_EQUAL", [0, 1], [16]), OpSpec("LESS", [0, 1], [20]),
           OpSpec("ADD", [0, 19], [17], {"fused_activation_function": "NONE"}),
           OpSpec("SELECT", [20, 17, 0], [18])]
    model = build_model(ops, tensors, [0, 9, 12], [4, 8, 10, 11, 15, 16, 18])
    feats = np.array([[0.0, -0.0, 2.7, -2.7, np.nan, np.inf], [-np.inf, 3e9, -3e9, -0.999, 2147483520.0, 1e-30]],
                     np.float32)
    samples = [[RNG.integers(-5, 5, (2, 6)).astype(np.int32), feats,
                RNG.integers(-128, 128, (2, 3, 6)).astype(np.int8)] for _ in range(3)]
    assert _mismatches(model, samples, "tflite", tmp_path) == 0


@pytest.mark.parametrize("name,rounding", [("key_mask", "tflite"), ("key_mask", "litert"), ("key_mask_16x8", "tflite"),
                                           ("mha_mask_16x8", "tflite"), ("mha_mask", "tflite"), ("mha_mask", "litert"),
                                           ("ids_mask", "litert")])
def test_masked_encoder_on_tvm(name, rounding, tmp_path):
    """Keras MultiHeadAttention with a key-padding or attention mask (CAST, LOGICAL_AND,
    SELECT_V2 of the scores; the masked mean's quantized DIV, or the 16x8 one's float DIV; the
    embedding GATHER), int8 and 16x8, compiled by TVM: 0 differing elements against LiteRT
    (ids_mask in `litert` only: BUILTIN_REF's int8 SUM is broken, docs/transformer-ops.md)."""
    model = (MASKED / f"{name}.tflite").read_bytes()
    assert _mismatches(model, encoder_samples(name), rounding, tmp_path) == 0
