"""Attention and padding masks of quantized encoders (issue 22), against LiteRT.

The converter computes a Keras mask on int32 and bool run-time tensors (CAST, NOT_EQUAL,
LESS, int32 ADD, SELECT / SELECT_V2, LOGICAL_AND, FILL) beside the quantized graph.  The
importer spells them as `nn` ops on i32 / i1 / f32 tensors (`nn.cast`, `nn.compare`,
`nn.logical_*`, `nn.select`, integer `nn.add`); a SELECT_V2 of quantized scores copies
stored values.  Small graphs built with tests/tflite_writer.py and the encoders of
models/transformers/masked/ (tools/gen_masked_encoder.py) are imported, re-parsed and run
by the interpreter in both profiles: `tflite` against LiteRT's BUILTIN_REF kernels,
`litert` against its default interpreter.  Expected values come from LiteRT only;
bit-exact means zero differing elements.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qdialect.importer import TFLiteImportError, import_tflite
from qdialect.interpreter import run_module
from tests.importer.test_tflite_import import body_ops, reparse
from tests.tflite_writer import OpSpec, TensorSpec, build_model, run_tflite

PROFILES = ((True, "tflite"), (False, "litert"))
MASKED = Path(__file__).resolve().parents[2] / "models" / "transformers" / "masked"
RNG = np.random.default_rng(22)


def mismatches(model: bytes, samples: list[list[np.ndarray]], profiles=PROFILES) -> dict[str, int]:
    """Differing elements per profile over all samples and outputs (bools compared as 0 / 1)."""
    module = reparse(import_tflite(model))
    out = {}
    for reference, profile in profiles:
        bad = 0
        for inputs in samples:
            expected = run_tflite(model, inputs, reference=reference)
            got = run_module(module, inputs, rounding=profile)
            assert len(got) == len(expected)
            for a, b in zip(got, expected):
                a = np.asarray(a)
                assert a.shape == b.shape, (a.shape, b.shape)
                if b.dtype == np.float32:
                    bad += int(np.count_nonzero(a.astype(np.float32).view(np.int32) != b.view(np.int32)))
                else:
                    bad += int(np.count_nonzero(a.astype(np.int64) != b.astype(np.int64)))
        out[profile] = bad
    return out


def const(values, dtype: str, scale=None, zero_point=None) -> TensorSpec:
    arr = np.asarray(values)
    return TensorSpec(arr.shape, dtype, scale, zero_point, data=arr)


# ----- one-operator graphs --------------------------------------------------------------------


COMPARISONS = ["EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"]


@pytest.mark.parametrize("op", COMPARISONS)
@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_comparison_then_select_of_quantized_values(op, dtype):
    """`NOT_EQUAL(ids, 0)` and friends give a bool mask that SELECT_V2 applies to quantized
    scores (broadcast [2, 1, 5] against [2, 3, 5] and a scalar constant), as Keras' masked
    softmax does; the bool mask is a graph output too."""
    zp = 3 if dtype == "int8" else 0
    info = np.iinfo(dtype)
    tensors = [
        TensorSpec((2, 1, 5), "int32"),
        const(np.array(2, np.int32), "int32"),
        TensorSpec((2, 1, 5), "bool"),
        TensorSpec((2, 3, 5), dtype, 0.1, zp),
        const(np.array([info.min], dtype), dtype, 0.1, zp),
        TensorSpec((2, 3, 5), dtype, 0.1, zp),
    ]
    ops = [OpSpec(op, [0, 1], [2]), OpSpec("SELECT_V2", [2, 3, 4], [5])]
    model = build_model(ops, tensors, [0, 3], [5, 2])
    samples = [[RNG.integers(-1, 5, (2, 1, 5)).astype(np.int32),
                RNG.integers(info.min, info.max + 1, (2, 3, 5)).astype(dtype)] for _ in range(3)]
    module = import_tflite(model)
    assert [o.name for o in body_ops(module) if o.name.startswith("nn.")] == ["nn.constant", "nn.compare", "nn.select"]
    assert mismatches(model, samples) == {"tflite": 0, "litert": 0}


def test_embedding_lookup_with_keras_negative_index_wrap():
    """Keras' Embedding as TF 2.21 converts it: `SELECT(LESS(ids, 0), ADD(ids, vocab), ids)`
    on int32, then GATHER of the int8 table; int32 SUB and MUL ride along."""
    vocab = 7
    table = RNG.integers(-128, 128, (vocab, 4)).astype(np.int8)
    tensors = [
        TensorSpec((6,), "int32"),                        # 0 ids
        const(np.array(0, np.int32), "int32"),            # 1
        TensorSpec((6,), "bool"),                         # 2 ids < 0
        const(np.array([vocab], np.int32), "int32"),      # 3
        TensorSpec((6,), "int32"),                        # 4 ids + vocab
        TensorSpec((6,), "int32"),                        # 5 wrapped
        const(table, "int8", 0.02, -4),                   # 6
        TensorSpec((6, 4), "int8", 0.02, -4),             # 7 embeddings
        const(np.array([3, -2, 1, 0, 5, -7], np.int32), "int32"),  # 8
        TensorSpec((6,), "int32"),                        # 9 (ids - c) * c
        TensorSpec((6,), "int32"),                        # 10
    ]
    ops = [OpSpec("LESS", [0, 1], [2]), OpSpec("ADD", [0, 3], [4], {"fused_activation_function": "NONE"}),
           OpSpec("SELECT", [2, 4, 0], [5]), OpSpec("GATHER", [6, 5], [7], {"axis": 0}),
           OpSpec("SUB", [0, 8], [9], {"fused_activation_function": "NONE"}),
           OpSpec("MUL", [9, 8], [10], {"fused_activation_function": "NONE"})]
    model = build_model(ops, tensors, [0], [7, 5, 10])
    samples = [[RNG.integers(-vocab, vocab, 6).astype(np.int32)] for _ in range(4)]
    assert mismatches(model, samples) == {"tflite": 0, "litert": 0}


def test_casts_and_logic_between_int32_bool_and_float():
    """int32 -> bool (`!= 0`), LOGICAL_AND / OR / NOT, bool -> float32 -> QUANTIZE (the mask a
    masked mean multiplies by), float32 -> bool, float32 -> int32 (truncation), bool -> int32."""
    tensors = [
        TensorSpec((2, 6), "int32"),                      # 0 mask
        TensorSpec((2, 6), "bool"),                       # 1 cast
        const(np.array([True, False, True, True, False, True]), "bool"),  # 2
        TensorSpec((2, 6), "bool"),                       # 3 and
        TensorSpec((2, 6), "bool"),                       # 4 or
        TensorSpec((2, 6), "bool"),                       # 5 not
        TensorSpec((2, 6), "float32"),                    # 6 float
        TensorSpec((2, 6), "int8", 1 / 255, -128),        # 7 quantized mask
        TensorSpec((2, 6), "float32"),                    # 8 features
        TensorSpec((2, 6), "bool"),                       # 9 features != 0
        TensorSpec((2, 6), "int32"),                      # 10 truncated
        TensorSpec((2, 6), "int32"),                      # 11 bool -> int32
    ]
    ops = [OpSpec("CAST", [0], [1]), OpSpec("LOGICAL_AND", [1, 2], [3]), OpSpec("LOGICAL_OR", [3, 2], [4]),
           OpSpec("LOGICAL_NOT", [4], [5]), OpSpec("CAST", [3], [6]), OpSpec("QUANTIZE", [6], [7]),
           OpSpec("CAST", [8], [9]), OpSpec("CAST", [8], [10]), OpSpec("CAST", [5], [11])]
    model = build_model(ops, tensors, [0, 8], [7, 5, 9, 10, 11])
    feats = np.array([[0.0, -0.0, 2.7, -2.7, 1e-30, np.nan], [5.5, -1.5, 0.999, -0.999, 100.0, 0.0]], np.float32)
    samples = [[RNG.integers(-2, 3, (2, 6)).astype(np.int32), feats] for _ in range(3)]
    assert mismatches(model, samples) == {"tflite": 0, "litert": 0}


def test_fill_of_true_and_float_island_div_and_select():
    """A FILL of `true` (dims known at import) ANDed with a run-time mask; the 16x8 converter's
    float island `DEQUANTIZE -> SELECT_V2 -> DIV -> QUANTIZE` (IEEE division, x / 0 included)."""
    tensors = [
        TensorSpec((1, 4), "int32"),                      # 0 mask
        const(np.array([3, 4], np.int32), "int32"),       # 1 dims
        const(np.array(True), "bool"),                    # 2 value
        TensorSpec((3, 4), "bool"),                       # 3 filled
        TensorSpec((1, 4), "bool"),                       # 4 mask as bool
        TensorSpec((3, 4), "bool"),                       # 5 and
        TensorSpec((3, 4), "int16", 0.001, 0),            # 6 scores
        TensorSpec((3, 4), "float32"),                    # 7 dequantized
        const(np.array(-1e9, np.float32), "float32"),     # 8
        TensorSpec((3, 4), "float32"),                    # 9 selected
        TensorSpec((3, 4), "float32"),                    # 10 divisor
        TensorSpec((3, 4), "float32"),                    # 11 quotient
        TensorSpec((3, 4), "int16", 0.002, 0),            # 12 out
    ]
    ops = [OpSpec("FILL", [1, 2], [3]), OpSpec("CAST", [0], [4]), OpSpec("LOGICAL_AND", [3, 4], [5]),
           OpSpec("DEQUANTIZE", [6], [7]), OpSpec("SELECT_V2", [5, 7, 8], [9]),
           OpSpec("DIV", [9, 10], [11], {"fused_activation_function": "NONE"}), OpSpec("QUANTIZE", [11], [12])]
    model = build_model(ops, tensors, [0, 6, 10], [12, 5])
    divisor = np.array([[1.0, 3.0, -7.0, 0.0], [0.1, 3.3, 1e-3, -0.0], [2.0, 9.0, 0.7, 11.0]], np.float32)
    samples = [[RNG.integers(0, 2, (1, 4)).astype(np.int32), RNG.integers(-32768, 32768, (3, 4)).astype(np.int16),
                divisor] for _ in range(3)]
    module = import_tflite(model)
    assert "nn.div" in [o.name for o in body_ops(module)]
    assert mismatches(model, samples) == {"tflite": 0, "litert": 0}


def test_packed_int32_masks_select_scores():
    """PACK of two run-time int32 masks (a stacked padding mask), NOT_EQUAL 0, selecting int16
    scores; PACK of bools is refused by name (LiteRT's PACK has no bool kernel)."""
    tensors = [TensorSpec((4,), "int32"), TensorSpec((4,), "int32"), TensorSpec((2, 4), "int32"),
               const(np.array(0, np.int32), "int32"), TensorSpec((2, 4), "bool"), TensorSpec((2, 4), "int16", 0.05, 0),
               const(np.array(-32768, np.int16), "int16", 0.05, 0), TensorSpec((2, 4), "int16", 0.05, 0)]
    ops = [OpSpec("PACK", [0, 1], [2], {"values_count": 2, "axis": 0}), OpSpec("NOT_EQUAL", [2, 3], [4]),
           OpSpec("SELECT_V2", [4, 5, 6], [7])]
    model = build_model(ops, tensors, [0, 1, 5], [7, 2])
    samples = [[RNG.integers(0, 2, 4).astype(np.int32), RNG.integers(-1, 2, 4).astype(np.int32),
                RNG.integers(-32768, 32768, (2, 4)).astype(np.int16)] for _ in range(3)]
    assert mismatches(model, samples) == {"tflite": 0, "litert": 0}

    tensors = [TensorSpec((4,), "bool"), TensorSpec((4,), "bool"), TensorSpec((2, 4), "bool"),
               TensorSpec((2, 4), "int8", 0.1, 0), TensorSpec((2, 4), "int8", 0.1, 0)]
    ops = [OpSpec("PACK", [0, 1], [2], {"values_count": 2, "axis": 0}), OpSpec("SELECT_V2", [2, 3, 3], [4])]
    with pytest.raises(TFLiteImportError, match=r"^unsupported operators: PACK x1 \(on bool tensors: LiteRT's PACK "
                                                r"has no bool kernel\)$"):
        import_tflite(build_model(ops, tensors, [0, 1, 3], [4]))


def test_bad_masks_are_refused_in_one_line():
    """A SELECT_V2 whose values have other quantization parameters than its output (LiteRT
    would copy stored bytes into a differently scaled tensor), a comparison of bools, a FILL of
    a run-time value: one-line diagnostics naming the operator."""
    tensors = [TensorSpec((4,), "bool"), TensorSpec((4,), "int8", 0.1, 0), TensorSpec((4,), "int8", 0.1, 0),
               TensorSpec((4,), "int8", 0.2, 0)]
    model = build_model([OpSpec("SELECT_V2", [0, 1, 2], [3])], tensors, [0, 1, 2], [3])
    with pytest.raises(TFLiteImportError) as e:
        import_tflite(model)
    assert "SELECT_V2" in str(e.value) and "requantize" in str(e.value) and "\n" not in str(e.value)

    tensors = [TensorSpec((4,), "bool"), TensorSpec((4,), "bool"), TensorSpec((4,), "bool")]
    with pytest.raises(TFLiteImportError, match=r"^unsupported operators: EQUAL x1 \(on bool tensors\)$"):
        import_tflite(build_model([OpSpec("EQUAL", [0, 1], [2])], tensors, [0, 1], [2]))

    tensors = [const(np.array([4], np.int32), "int32"), TensorSpec((), "bool"), TensorSpec((4,), "bool")]
    with pytest.raises(TFLiteImportError, match=r"^unsupported operators: FILL x1 \(with a run-time value\)$"):
        import_tflite(build_model([OpSpec("FILL", [0, 1], [2])], tensors, [1], [2]))


# ----- the masked encoders ------------------------------------------------------------------


def encoder_samples(name: str, count: int = 4) -> list[list[np.ndarray]]:
    data = np.load(MASKED / f"{name}_heldout_q.npz")
    keys = sorted(k for k in data.files if k.startswith("input_"))
    return [[data[k][i] for k in keys] for i in range(count)]


@pytest.mark.parametrize("name", ["mha_mask", "mha_mask_16x8", "key_mask", "key_mask_16x8"])
def test_masked_encoder_is_bit_exact_in_both_profiles(name):
    """Keras MultiHeadAttention with an attention mask (int32 validity input, LOGICAL_AND,
    SELECT_V2 of the scores), int8 and 16x8: 0 differing elements against LiteRT."""
    model = (MASKED / f"{name}.tflite").read_bytes()
    ops = {o.name for o in body_ops(import_tflite(model))}
    assert {"nn.cast", "nn.logical_and", "nn.select"} <= ops
    assert mismatches(model, encoder_samples(name)) == {"tflite": 0, "litert": 0}


def test_token_id_encoder_is_bit_exact_on_litert():
    """BERT-style ids input: NOT_EQUAL, CAST, LOGICAL_AND, LESS / ADD / SELECT on int32 ids,
    GATHER, masked SUM pooling.  LiteRT 2.3's BUILTIN_REF SUM reads int8 data as uint8 (its
    DIV then fails on a zero divisor), so the default interpreter is the reference here."""
    model = (MASKED / "ids_mask.tflite").read_bytes()
    ops = {o.name for o in body_ops(import_tflite(model))}
    assert {"nn.compare", "nn.add", "nn.select", "nn.logical_and", "nn.cast"} <= ops
    assert mismatches(model, encoder_samples("ids_mask"), ((False, "litert"),)) == {"litert": 0}
