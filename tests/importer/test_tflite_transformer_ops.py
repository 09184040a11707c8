"""The operators quantized transformer encoders need (issue 22), against LiteRT.

Every case is a model built in memory with tests/tflite_writer.py, imported,
re-parsed and run by the reference interpreter in two profiles: `tflite`
against LiteRT's reference kernels (BUILTIN_REF) and `litert` against LiteRT's
default interpreter (XNNPACK where it takes the op, TFLite's builtin kernels
where it does not).  Expected integers come from LiteRT only; 8-bit unary ops
are run on all 256 inputs, int16 ones on all 65536, over several scales and
zero points.  Bit-exact means zero differing elements.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qdialect.importer import TFLiteImportError, import_tflite
from qdialect.interpreter import InterpreterError, run_module
from tests.importer.test_tflite_import import body_ops, reparse
from tests.tflite_writer import OpSpec, TensorSpec, build_model, build_single_op_model, delegate_partitions, run_tflite

PROFILES = ((True, "tflite"), (False, "litert"))


def mismatches(model: bytes, inputs: list[np.ndarray], module=None) -> dict[str, int]:
    """Differing elements per profile (all outputs together)."""
    module = import_tflite(model) if module is None else module
    out = {}
    for reference, profile in PROFILES:
        expected = run_tflite(model, inputs, reference=reference)
        got = run_module(module, inputs, rounding=profile)
        bad = 0
        for a, b in zip(got, expected):
            a = np.asarray(a)
            assert a.shape == b.shape
            if np.issubdtype(b.dtype, np.floating):
                bad += int(np.count_nonzero(a.astype(np.float32).view(np.int32) != b.view(np.int32)))
            else:
                bad += int(np.count_nonzero(a.astype(np.int64) != b.astype(np.int64)))
        out[profile] = bad
    return out


def every_value(dtype: str, at_least: int | None = None) -> np.ndarray:
    info = np.iinfo(np.dtype(dtype))
    lo = info.min if at_least is None else max(info.min, at_least)
    return np.arange(lo, int(info.max) + 1).astype(dtype)


# (input scale, input zp, output scale, output zp) for 8-bit; int16 uses zero points 0
SCALES_8 = [(0.05, 0, 0.05, 0), (0.02, -3, 0.1, 5), (0.0031, 7, 0.0007, -20), (1.7, -100, 0.9, 3),
            (0.1, 20, 0.02, -128)]
SCALES_16 = [(2.5e-4, 2.5e-4), (1e-4, 5e-4), (1.55e-5, 3.5e-6), (8.5e-3, 4.5e-3), (5e-4, 1e-4)]


def unary_model(op: str, dtype: str, n: int, s_in, z_in, s_out, z_out, options=None) -> bytes:
    return build_single_op_model(op, [TensorSpec((n,), dtype, s_in, z_in)], [TensorSpec((n,), dtype, s_out, z_out)],
                                 options)


UNARY = [("GELU", {"approximate": False}), ("GELU", {"approximate": True}), ("EXP", None), ("RSQRT", None),
         ("SQRT", None), ("ABS", None)]


@pytest.mark.parametrize("op,options", UNARY, ids=[f"{o}{'_approx' if (p or {}).get('approximate') else ''}"
                                                   for o, p in UNARY])
@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_unary_op_is_bit_exact_on_every_input(op, options, dtype):
    """All 256 (65536) stored inputs, five scale choices, both profiles: 0 mismatches.
    RSQRT / SQRT are defined from the zero point up (below it LiteRT fails the invoke)."""
    cases = SCALES_8 if dtype == "int8" else [(a, 0, b, 0) for a, b in SCALES_16]
    for s_in, z_in, s_out, z_out in cases:
        xs = every_value(dtype, z_in if op in ("RSQRT", "SQRT") else None)
        model = unary_model(op, dtype, xs.size, s_in, z_in, s_out, z_out, options)
        module = import_tflite(model)
        assert [o.name for o in body_ops(module)] == [f"qnn.{op.lower()}"]
        assert mismatches(model, [xs], reparse(module)) == {"tflite": 0, "litert": 0}, (s_in, z_in, s_out, z_out)


@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_neg_negates_stored_integers_and_wraps_the_minimum(dtype):
    xs = every_value(dtype)
    for scale in (0.05, 0.0031, 1.7):
        model = unary_model("NEG", dtype, xs.size, scale, 0, scale, 0)
        assert mismatches(model, [xs]) == {"tflite": 0, "litert": 0}
    (out,) = run_tflite(unary_model("NEG", dtype, 1, 0.5, 0, 0.5, 0), [xs[:1]])
    assert int(out[0]) == int(xs[0])  # -(-128) is -128 in LiteRT's kernel


def test_quantized_neg_with_a_zero_point_is_refused_by_name():
    model = unary_model("NEG", "int8", 4, 0.5, 3, 0.5, 3)
    with pytest.raises(TFLiteImportError, match=r"operator 0 \(NEG\).*zero point 0"):
        import_tflite(model)


def test_exp_int16_overflowing_table_wraps_as_litert():
    """exp overflows float32 inside the table: LiteRT's table holds inf - inf = NaN (-> 0) and
    -32768, and LUTLookup's int16 slope wraps; the interpreter follows."""
    xs = every_value("int16")
    model = unary_model("EXP", "int16", xs.size, 8.5e-3, 0, 4.5e-3, 0)
    assert mismatches(model, [xs]) == {"tflite": 0, "litert": 0}


@pytest.mark.parametrize("op", ["RSQRT", "SQRT"])
def test_negative_input_is_a_one_line_error_as_litert_fails(op):
    model = unary_model(op, "int8", 3, 0.05, 2, 0.05, 0)
    xs = np.array([5, 1, 3], np.int8)  # 1 < zero point 2
    with pytest.raises(Exception):
        run_tflite(model, [xs])
    with pytest.raises(InterpreterError, match=f"qnn.{op.lower()}: .*non-negative") as e:
        run_module(import_tflite(model), [xs])
    assert "\n" not in str(e.value)


def test_xnnpack_takes_none_of_the_quantized_unary_ops():
    """Why `litert` equals `tflite` for these: the default interpreter runs the builtin kernel."""
    for op, options in UNARY + [("NEG", None)]:
        for dtype in ("int8", "int16"):
            assert delegate_partitions(unary_model(op, dtype, 8, 0.05, 0, 0.05, 0, options)) == 0, (op, dtype)


# ----- float islands between quantized ops --------------------------------------------------------


def island_model(dtype: str, n: int, s_in, z_in, s_out, z_out) -> bytes:
    tensors = [TensorSpec((n,), dtype, s_in, z_in), TensorSpec((n,), "float32"), TensorSpec((n,), "float32"),
               TensorSpec((n,), dtype, s_out, z_out)]
    ops = [OpSpec("DEQUANTIZE", [0], [1]), OpSpec("NEG", [1], [2]), OpSpec("QUANTIZE", [2], [3])]
    return build_model(ops, tensors, [0], [3])


@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_dequantize_neg_quantize_runs_in_float_as_litert(dtype):
    """Keras LayerNormalization's `DEQUANTIZE -> NEG -> QUANTIZE` (int8 models): the NEG runs
    in float (XNNPACK takes the island in the default interpreter), 0 mismatches."""
    xs = every_value(dtype)
    for s_in, z_in, s_out, z_out in [(0.05, 3, 0.05, 3), (0.0123, -7, 0.031, 11), (0.37, 100, 0.11, -90)]:
        if dtype == "int16":
            z_in = z_out = 0
        model = island_model(dtype, xs.size, s_in, z_in, s_out, z_out)
        module = reparse(import_tflite(model))
        assert [o.name for o in body_ops(module)] == ["qnn.dequantize", "nn.constant", "nn.mul", "qnn.quantize"]
        assert mismatches(model, [xs], module) == {"tflite": 0, "litert": 0}
    assert delegate_partitions(island_model(dtype, 8, 0.05, 0, 0.05, 0)) > 0


# ----- L2_NORMALIZATION --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 16), (2, 3, 64), (1, 300), (8, 1), (2, 16384)])
def test_l2_normalization_int8_is_bit_exact(shape):
    """Random rows, all-zero rows (acc 0) and, at depth 16384 with extreme values, sums of
    squares above 2^29 (the normalising loop of GetInvSqrtQuantizedMultiplierExp)."""
    rng = np.random.default_rng(sum(shape))
    for z_in in (0, -5, 77, -128):
        model = build_single_op_model("L2_NORMALIZATION", [TensorSpec(shape, "int8", 0.05, z_in)],
                                      [TensorSpec(shape, "int8", 1 / 128, 0)])
        xs = rng.integers(-128, 128, shape).astype(np.int8)
        if shape[-1] == 16384:
            xs = np.where(xs >= 0, 127, -128).astype(np.int8)
        xs.reshape(-1, shape[-1])[0] = z_in  # a row of real zeros
        module = reparse(import_tflite(model))
        assert [o.name for o in body_ops(module)] == ["qnn.l2_normalization"]
        assert mismatches(model, [xs], module) == {"tflite": 0, "litert": 0}, z_in


def test_l2_normalization_output_parameters_are_checked():
    model = build_single_op_model("L2_NORMALIZATION", [TensorSpec((2, 4), "int8", 0.05, 0)],
                                  [TensorSpec((2, 4), "int8", 1 / 64, 0)])
    with pytest.raises(TFLiteImportError, match=r"L2_NORMALIZATION.*scale 0.0078125 and zero point 0"):
        import_tflite(model)


# ----- ops that were imported already, on transformer shapes ------------------------------------


def random_ints(shape, dtype, rng):
    info = np.iinfo(np.dtype(dtype))
    return rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)


@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, False), (False, True), (True, True)])
def test_batch_matmul_of_two_activations_with_adjoint_flags(dtype, adj_x, adj_y):
    """Attention's Q K^T and P V: both operands are run-time activations."""
    rng = np.random.default_rng(7)
    z = (-3, 5, 2) if dtype == "int8" else (0, 0, 0)
    a = (2, 4, 8, 16) if adj_x else (2, 4, 16, 8)
    b = (2, 4, 12, 8) if adj_y else (2, 4, 8, 12)
    model = build_single_op_model(
        "BATCH_MATMUL", [TensorSpec(a, dtype, 0.02, z[0]), TensorSpec(b, dtype, 0.03, z[1])],
        [TensorSpec((2, 4, 16, 12), dtype, 0.05, z[2])], {"adj_x": adj_x, "adj_y": adj_y})
    for _ in range(2):
        assert mismatches(model, [random_ints(a, dtype, rng), random_ints(b, dtype, rng)]) == {"tflite": 0, "litert": 0}


@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("depth", [128, 1000, 4096])
def test_softmax_on_long_rows(dtype, depth):
    rng = np.random.default_rng(depth)
    out = (1 / 256, -128) if dtype == "int8" else (1 / 32768, 0)
    for scale in ((0.05, 0.5) if dtype == "int8" else (5e-4, 5e-5, 5e-6)):
        model = build_single_op_model("SOFTMAX", [TensorSpec((4, depth), dtype, scale, -3 if dtype == "int8" else 0)],
                                      [TensorSpec((4, depth), dtype, *out)], {"beta": 1.0})
        assert mismatches(model, [random_ints((4, depth), dtype, rng)]) == {"tflite": 0, "litert": 0}, scale


def test_int8_softmax_whose_row_sum_reaches_512_is_refused_as_the_reference_kernel_aborts():
    """TFLite's reference int8 SOFTMAX aborts (TFLITE_CHECK on the output exponent) once a row's
    sum of exponentials reaches 512: the `tflite` profile says so in one line; LiteRT's default
    interpreter (optimized kernel, float exp table) runs it and `litert` matches it."""
    rng = np.random.default_rng(3)
    model = build_single_op_model("SOFTMAX", [TensorSpec((2, 1000), "int8", 0.004, -3)],
                                  [TensorSpec((2, 1000), "int8", 1 / 256, -128)], {"beta": 1.0})
    xs = random_ints((2, 1000), "int8", rng)
    module = import_tflite(model)
    with pytest.raises(InterpreterError, match=r"qnn.softmax: a row's sum of exponentials .* aborts") as e:
        run_module(module, [xs], rounding="tflite")
    assert "\n" not in str(e.value)
    (expected,) = run_tflite(model, [xs], reference=False)
    np.testing.assert_array_equal(run_module(module, [xs], rounding="litert")[0], expected)


@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_layer_norm_mean_over_the_last_axis(dtype):
    rng = np.random.default_rng(11)
    z = -3 if dtype == "int8" else 0
    for keep in (True, False):
        model = build_single_op_model(
            "MEAN", [TensorSpec((2, 8, 64), dtype, 0.05, z), TensorSpec((1,), "int32", data=np.array([-1]))],
            [TensorSpec((2, 8, 1) if keep else (2, 8), dtype, 0.03, z)], {"keep_dims": keep})
        assert mismatches(model, [random_ints((2, 8, 64), dtype, rng)]) == {"tflite": 0, "litert": 0}


def test_squared_difference_int8_and_int16_has_no_litert_kernel():
    rng = np.random.default_rng(5)
    model = build_single_op_model(
        "SQUARED_DIFFERENCE", [TensorSpec((2, 8, 64), "int8", 0.05, -3), TensorSpec((2, 8, 1), "int8", 0.04, 4)],
        [TensorSpec((2, 8, 64), "int8", 0.2, -100)])
    xs = [random_ints((2, 8, 64), "int8", rng), random_ints((2, 8, 1), "int8", rng)]
    assert mismatches(model, xs) == {"tflite": 0, "litert": 0}
    model16 = build_single_op_model(
        "SQUARED_DIFFERENCE", [TensorSpec((2, 8), "int16", 0.05, 0), TensorSpec((2, 8), "int16", 0.04, 0)],
        [TensorSpec((2, 8), "int16", 0.2, 0)])
    xs16 = [random_ints((2, 8), "int16", rng), random_ints((2, 8), "int16", rng)]
    with pytest.raises(RuntimeError, match="SquaredDifference only supports"):
        run_tflite(model16, xs16)
    with pytest.raises(InterpreterError, match="qnn.squared_difference: i16 SQUARED_DIFFERENCE has no TFLite kernel"):
        run_module(import_tflite(model16), xs16)


# ----- data movement and index ops -------------------------------------------------------------


def one_op(op, inputs, outputs, options=None, version=1) -> bytes:
    """A one-operator model with an explicit operator version (BROADCAST_TO has no version 1)."""
    tensors = list(inputs) + list(outputs)
    outs = [len(inputs) + k for k in range(len(outputs))]
    return build_model([OpSpec(op, list(range(len(inputs))), outs, options, version)], tensors,
                       [k for k, t in enumerate(inputs) if t.data is None], outs)


def const(values, dtype="int32"):
    arr = np.asarray(values)
    return TensorSpec(arr.shape, dtype, data=arr)


def movement_cases(dtype):
    z = -3 if dtype == "int8" else 0

    def q(shape):
        return TensorSpec(shape, dtype, 0.05, z)

    reflect = [[0, 0], [2, 1], [1, 2]]
    symmetric = [[1, 0], [4, 0], [3, 3]]
    idx = [[[0, 1], [1, 3]], [[1, 0], [0, 2]]]
    return {
        "tile": (one_op("TILE", [q((2, 1, 3)), const([2, 4, 1])], [q((4, 4, 3))]), [(2, 1, 3)], "qnn.tile"),
        "broadcast_to": (one_op("BROADCAST_TO", [q((1, 3)), const([2, 4, 3])], [q((2, 4, 3))], version=2),
                         [(1, 3)], "qnn.tile"),
        "mirror_pad_reflect": (one_op("MIRROR_PAD", [q((2, 4, 3)), const(reflect)], [q((2, 7, 6))], {"mode": "REFLECT"}),
                               [(2, 4, 3)], "qnn.mirror_pad"),
        "mirror_pad_symmetric": (one_op("MIRROR_PAD", [q((2, 4, 3)), const(symmetric)], [q((3, 8, 9))],
                                        {"mode": "SYMMETRIC"}), [(2, 4, 3)], "qnn.mirror_pad"),
        "gather_nd_const": (one_op("GATHER_ND", [q((2, 4, 5)), const(idx)], [q((2, 2, 5))]), [(2, 4, 5)],
                            "qnn.gather_nd"),
    }


@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("case", ["tile", "broadcast_to", "mirror_pad_reflect", "mirror_pad_symmetric",
                                  "gather_nd_const"])
def test_movement_op_is_bit_exact(dtype, case):
    model, shapes, op_name = movement_cases(dtype)[case]
    module = reparse(import_tflite(model))
    assert op_name in [o.name for o in body_ops(module)]
    rng = np.random.default_rng(len(case))
    assert mismatches(model, [random_ints(s, dtype, rng) for s in shapes], module) == {"tflite": 0, "litert": 0}
    assert delegate_partitions(model) == 0


def gather_nd_runtime(dtype="int8"):
    return one_op("GATHER_ND", [TensorSpec((2, 4, 5), dtype, 0.05, 0), TensorSpec((3, 3), "int32")],
                  [TensorSpec((3,), dtype, 0.05, 0)])


@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_gather_nd_with_run_time_indices(dtype):
    rng = np.random.default_rng(2)
    indices = np.array([[0, 1, 2], [1, 3, 4], [0, 0, 0]], np.int32)
    assert mismatches(gather_nd_runtime(dtype), [random_ints((2, 4, 5), dtype, rng), indices]) == {
        "tflite": 0, "litert": 0}


@pytest.mark.parametrize("bad", [[1, 4, 4], [0, -1, 0]])
def test_gather_nd_index_out_of_range_fails_in_one_line_as_litert_fails(bad):
    rng = np.random.default_rng(4)
    params = random_ints((2, 4, 5), "int8", rng)
    indices = np.array([[0, 1, 2], bad, [0, 0, 0]], np.int32)
    model = gather_nd_runtime()
    with pytest.raises(RuntimeError, match="gather_nd"):
        run_tflite(model, [params, indices])
    with pytest.raises(InterpreterError, match=r"qnn.gather_nd: gather_nd index -?\d+ is out of range for dimension 1") as e:
        run_module(import_tflite(model), [params, indices])
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("op", ["ARG_MAX", "ARG_MIN"])
@pytest.mark.parametrize("out_type", ["int32", "int64"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_arg_max_min_first_index_of_ties(op, out_type, axis):
    rng = np.random.default_rng(9)
    x = random_ints((3, 7, 5), "int8", rng)
    x[0, :, 0] = 5  # ties: the first index wins
    x[:, 2, 1] = 127
    shape = [d for k, d in enumerate((3, 7, 5)) if k != axis % 3]
    model = build_single_op_model(op, [TensorSpec((3, 7, 5), "int8", 0.05, -3), const([axis])],
                                  [TensorSpec(tuple(shape), out_type)], {"output_type": out_type.upper()})
    module = reparse(import_tflite(model))
    assert [o.name for o in body_ops(module)][-1] == f"qnn.{op.lower()}"
    assert mismatches(model, [x], module) == {"tflite": 0, "litert": 0}


def test_arg_max_int16_is_refused_as_litert_has_no_kernel():
    model = build_single_op_model("ARG_MAX", [TensorSpec((3, 7), "int16", 0.05, 0), const([1])],
                                  [TensorSpec((3,), "int32")], {"output_type": "INT32"})
    with pytest.raises(RuntimeError, match="ARG_MAX"):
        run_tflite(model, [np.zeros((3, 7), np.int16)])
    with pytest.raises(TFLiteImportError, match=r"operator 0 \(ARG_MAX\).*i16 input"):
        import_tflite(model)


@pytest.mark.parametrize("mode,pads", [("REFLECT", [[0, 0], [4, 0]]), ("SYMMETRIC", [[0, 0], [0, 5]])])
def test_mirror_pad_wider_than_the_input_is_refused_by_name(mode, pads):
    """LiteRT refuses paddings above size - offset (REFLECT 1, SYMMETRIC 0); so does the import."""
    out = (2, 4 + sum(pads[1]))
    model = one_op("MIRROR_PAD", [TensorSpec((2, 4), "int8", 0.05, 0), const(pads)], [TensorSpec(out, "int8", 0.05, 0)],
                   {"mode": mode})
    with pytest.raises((RuntimeError, ValueError), match="MirrorPad paddings must be no greater"):
        run_tflite(model, [np.zeros((2, 4), np.int8)])
    with pytest.raises(TFLiteImportError, match=r"operator 0 \(MIRROR_PAD\).*qnn.mirror_pad: paddings .* of dimension 1"):
        import_tflite(model)


def test_broadcast_to_that_does_not_broadcast_is_refused_by_name():
    model = one_op("BROADCAST_TO", [TensorSpec((2, 3), "int8", 0.05, 0), const([4, 3])],
                   [TensorSpec((4, 3), "int8", 0.05, 0)], version=2)
    with pytest.raises(TFLiteImportError, match=r"operator 0 \(BROADCAST_TO\).*cannot broadcast shape \[2, 3\] to \[4, 3\]"):
        import_tflite(model)


def test_tile_with_other_output_parameters_is_refused_by_name():
    """TFLite's TILE copies stored bytes: different output parameters would change the values."""
    model = one_op("TILE", [TensorSpec((2, 3), "int8", 0.05, 0), const([2, 1])], [TensorSpec((4, 3), "int8", 0.1, 0)])
    with pytest.raises(TFLiteImportError, match=r"operator 0 \(TILE\).*same quantization parameters"):
        import_tflite(model)


# ----- the converter's Tensordot: shapes the file leaves dynamic ---------------------------------------


def test_tensordot_reshape_and_fully_connected_with_dynamic_shapes():
    """TF 2.21 spells Dense on a [1, S, D] input as SHAPE -> GATHER -> REDUCE_PROD -> PACK ->
    RESHAPE -> FULLY_CONNECTED -> RESHAPE whose intermediate tensors carry a placeholder
    shape ([1, 1]) and a -1 shape signature; LiteRT sizes them at allocation, the import
    computes them from the folded shape arithmetic and the operands."""
    rng = np.random.default_rng(1)
    x = TensorSpec((1, 16, 32), "int8", 0.05, -3, signature=(-1, 16, 32))
    shape = TensorSpec((3,), "int32", signature=(3,))
    gather_idx = const([0, 1])
    prod_axis = const([0])
    rows = TensorSpec((), "int32")
    gathered = TensorSpec((2,), "int32")
    feat = const(np.array(32, np.int32))
    stacked = TensorSpec((2,), "int32")
    flat = TensorSpec((1, 1), "int8", 0.05, -3, signature=(-1, -1))
    w = TensorSpec((64, 32), "int8", 0.01, 0, data=rng.integers(-127, 128, (64, 32)))
    b = TensorSpec((64,), "int32", float(np.float32(0.05) * np.float32(0.01)), 0, data=rng.integers(-500, 500, 64))
    fc = TensorSpec((1, 64), "int8", 0.1, 4, signature=(-1, 64))
    out_shape = const([1, 16, 64])
    y = TensorSpec((1, 16, 64), "int8", 0.1, 4)
    tensors = [x, shape, gather_idx, gathered, prod_axis, rows, feat, stacked, flat, w, b, fc, out_shape, y]
    ops = [OpSpec("SHAPE", [0], [1], {"out_type": 2}), OpSpec("GATHER", [1, 2], [3]),
           OpSpec("REDUCE_PROD", [3, 4], [5]), OpSpec("PACK", [5, 6], [7], {"values_count": 2}),
           OpSpec("RESHAPE", [0, 7], [8]), OpSpec("FULLY_CONNECTED", [8, 9, 10], [11]),
           OpSpec("RESHAPE", [11, 12], [13])]
    model = build_model(ops, tensors, [0], [13])
    module = reparse(import_tflite(model))
    assert "qnn.fully_connected" in [o.name for o in body_ops(module)]
    assert mismatches(model, [random_ints((1, 16, 32), "int8", rng)], module) == {"tflite": 0, "litert": 0}


# ----- whole encoders: the transformer zoo (tools/gen_transformer_zoo.py, TF 2.21) ------------------

TRANSFORMERS = sorted(p for p in (Path(__file__).resolve().parents[2] / "models" / "transformers").glob("*.tflite")
                      if not p.stem.endswith("_float"))


def test_the_transformer_zoo_is_there():
    assert len(TRANSFORMERS) >= 6, TRANSFORMERS


@pytest.mark.parametrize("path", TRANSFORMERS, ids=[p.stem for p in TRANSFORMERS])
def test_transformer_encoder_is_bit_exact_in_both_profiles(path):
    """int8 encoders carry the converter's float islands (DEQUANTIZE -> NEG -> QUANTIZE of each
    Keras LayerNormalization), RSQRT, GELU, two-activation BATCH_MATMUL and SOFTMAX; 16x8 ones
    the same in int16 (no NEG: the converter has no 16x8 NEG)."""
    from tests.importer.test_tflite_import import random_inputs

    model = path.read_bytes()
    module = import_tflite(model)
    names = {o.name for o in body_ops(module)}
    assert {"qnn.rsqrt", "qnn.gelu", "qnn.batch_matmul", "qnn.softmax"} <= names
    for seed in (0, 1):
        assert mismatches(model, random_inputs(model, seed), module) == {"tflite": 0, "litert": 0}, seed


# ----- fuzzing the new operators' parameters against LiteRT ---------------------------------------------


def _fuzz_case(data) -> tuple[bytes, list[np.ndarray]]:
    """A one-operator model of a new operator with drawn (often bad) parameters and inputs."""
    from hypothesis import strategies as st

    dtype = data.draw(st.sampled_from(["int8", "int16"]))
    z = data.draw(st.integers(-128, 127)) if dtype == "int8" else 0
    rank = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = random_ints(shape, dtype, rng)
    q = TensorSpec(shape, dtype, 0.05, z)
    op = data.draw(st.sampled_from(["TILE", "BROADCAST_TO", "MIRROR_PAD", "GATHER_ND", "ARG_MAX", "RSQRT", "SQRT"]))
    if op == "TILE":
        m = data.draw(st.lists(st.integers(0, 3), min_size=rank, max_size=rank))
        out = tuple(d * k for d, k in zip(shape, m))
        return one_op("TILE", [q, const(m)], [TensorSpec(out, dtype, 0.05, z)]), [x]
    if op == "BROADCAST_TO":
        target = data.draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank + 1))
        return one_op("BROADCAST_TO", [q, const(target)], [TensorSpec(tuple(target), dtype, 0.05, z)], version=2), [x]
    if op == "MIRROR_PAD":
        mode = data.draw(st.sampled_from(["REFLECT", "SYMMETRIC"]))
        pads = [data.draw(st.lists(st.integers(0, 5), min_size=2, max_size=2)) for _ in shape]
        out = tuple(d + a + b for d, (a, b) in zip(shape, pads))
        return one_op("MIRROR_PAD", [q, const(pads)], [TensorSpec(out, dtype, 0.05, z)], {"mode": mode}), [x]
    if op == "GATHER_ND":
        nd = data.draw(st.integers(1, rank))
        n = data.draw(st.integers(1, 3))
        idx = np.array([[data.draw(st.integers(-1, d)) for d in shape[:nd]] for _ in range(n)], np.int32)
        out = (n, *shape[nd:])
        return one_op("GATHER_ND", [q, TensorSpec(idx.shape, "int32")], [TensorSpec(out, dtype, 0.05, z)]), [x, idx]
    if op == "ARG_MAX":
        axis = data.draw(st.integers(-rank, rank - 1))
        out = tuple(d for k, d in enumerate(shape) if k != axis % rank)
        return one_op("ARG_MAX", [q, const([axis])], [TensorSpec(out, "int32")], {"output_type": "INT32"}), [x]
    return one_op(op, [q], [TensorSpec(shape, dtype, 0.03, z)]), [x]


def test_fuzzed_parameters_match_litert_or_fail_in_one_line():
    """Drawn parameters, many of them bad (out-of-range indices, paddings wider than the input,
    shapes that do not broadcast, inputs below RSQRT's zero point, int16 ARG_MAX): where LiteRT
    runs the model the interpreter gives its integers; where LiteRT refuses or fails, qdialect
    refuses with a one-line TFLiteImportError or InterpreterError, never a traceback.  LiteRT
    runs in a child process (it aborts on some bad models)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from tvm_bridge.run_cli import BadInput, litert_run

    outcomes = {"ran": 0, "refused": 0}

    @settings(max_examples=40, deadline=None, database=None)
    @given(st.data())
    def run(data):
        model, xs = _fuzz_case(data)
        try:
            (expected,) = litert_run(model, [xs], reference=True)
        except BadInput:
            expected = None
        try:
            got = run_module(import_tflite(model), xs)
        except (TFLiteImportError, InterpreterError) as e:
            assert "\n" not in str(e) and str(e), e
            assert expected is None, f"LiteRT runs it, qdialect refuses: {e}"
            outcomes["refused"] += 1
            return
        assert expected is not None, "LiteRT refuses it, qdialect runs it"
        for a, b in zip(got, expected):
            np.testing.assert_array_equal(np.asarray(a).astype(np.int64), b.astype(np.int64))
        outcomes["ran"] += 1

    run()
    assert outcomes["ran"] and outcomes["refused"], outcomes


# ----- uint8 ---------------------------------------------------------------------------------------------


def test_uint8_gelu_and_l2_normalization_match_and_the_rest_fail_as_litert():
    """LiteRT has uint8 GELU and L2_NORMALIZATION (1/128, zp 128, its own rounding); EXP, RSQRT,
    SQRT, ABS and NEG have no uint8 kernel, and the interpreter says so in one line."""
    xs = every_value("uint8")
    gelu = unary_model("GELU", "uint8", 256, 0.05, 120, 0.03, 100, {"approximate": False})
    assert mismatches(gelu, [xs]) == {"tflite": 0, "litert": 0}
    rng = np.random.default_rng(6)
    for shape, z in [((4, 16), 77), ((2, 300), 128), ((1, 8000), 0)]:
        x = random_ints(shape, "uint8", rng)
        x[0] = z
        if shape[1] == 8000:
            x = np.where(x > 127, 255, 0).astype(np.uint8)  # a sum of squares above 2^29
        l2 = build_single_op_model("L2_NORMALIZATION", [TensorSpec(shape, "uint8", 0.05, z)],
                                   [TensorSpec(shape, "uint8", 1 / 128, 128)])
        assert mismatches(l2, [x]) == {"tflite": 0, "litert": 0}
    for op in ("EXP", "RSQRT", "SQRT", "ABS", "NEG"):
        model = unary_model(op, "uint8", 256, 0.05, 0, 0.05 if op == "NEG" else 0.03, 0)
        with pytest.raises(RuntimeError):
            run_tflite(model, [xs])
        with pytest.raises(InterpreterError, match=f"qnn.{op.lower()}: {op} has no kernel for u8 input"):
            run_module(import_tflite(model), [xs])


# ----- DIV (masked mean pooling: SUM(x * mask) / SUM(mask)) ---------------------------------------------


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("params", [(1.0, 0, 1.0, 0, 1.0, 0), (0.05, 3, 0.02, -7, 0.1, 1),
                                    (0.5, -100, 0.01, 50, 0.7, -20), (0.001, 0, 0.9, 0, 0.5, -128)])
def test_div_8bit_on_every_pair_of_inputs(dtype, params):
    """All 256 x 255 (dividend, divisor) pairs; scales 1.0 make power-of-two divisors shift by
    32 or more, where x86's RoundingDivideByPOT keeps the dividend (LiteRT: 127, not 0)."""
    s1, z1, s2, z2, so, zo = params
    if dtype == "uint8":
        z1, z2, zo = z1 + 128, z2 + 128, zo + 128
    vals = every_value(dtype).astype(np.int64)
    divisors = vals[(vals != 0) & (vals != z2)]
    a = np.repeat(vals, divisors.size).astype(dtype)
    b = np.tile(divisors, vals.size).astype(dtype)
    model = build_single_op_model("DIV", [TensorSpec(a.shape, dtype, s1, z1), TensorSpec(b.shape, dtype, s2, z2)],
                                  [TensorSpec(a.shape, dtype, so, zo)])
    assert mismatches(model, [a, b]) == {"tflite": 0, "litert": 0}


def test_div_int16_broadcast_and_fused_relu():
    rng = np.random.default_rng(8)
    for s1, s2, so in [(1e-4, 1e-4, 1e-4), (3e-5, 2e-3, 4e-6), (1.0, 1.0, 1.0)]:
        a = random_ints((4, 64, 32), "int16", rng)
        b = random_ints((4, 64, 1), "int16", rng)
        b[b == 0] = 1
        b.reshape(-1)[:8] = [-32768, 32767, 1, -1, 128, -128, 16384, -4096]
        model = build_single_op_model("DIV", [TensorSpec(a.shape, "int16", s1, 0), TensorSpec(b.shape, "int16", s2, 0)],
                                      [TensorSpec(a.shape, "int16", so, 0)], {"fused_activation_function": "RELU"})
        module = reparse(import_tflite(model))
        assert [o.name for o in body_ops(module)] == ["qnn.div"]
        assert mismatches(model, [a, b], module) == {"tflite": 0, "litert": 0}


def test_div_by_zero_is_a_one_line_error():
    """A stored 0 is a real number like any other; a divisor at its zero point (real 0) fails
    LiteRT's invoke and the interpreter's, in one line."""
    model = build_single_op_model("DIV", [TensorSpec((4,), "int8", 0.1, 0), TensorSpec((4,), "int8", 0.1, 5)],
                                  [TensorSpec((4,), "int8", 0.1, 0)])
    a = np.array([1, -2, 3, 0], np.int8)
    assert mismatches(model, [a, np.array([0, 0, 3, 4], np.int8)]) == {"tflite": 0, "litert": 0}
    zero = np.array([1, 5, 3, 4], np.int8)
    with pytest.raises(RuntimeError, match="zero_point"):
        run_tflite(model, [a, zero])
    with pytest.raises(InterpreterError, match="qnn.div: DIV by a real zero") as e:
        run_module(import_tflite(model), [a, zero])
    assert "\n" not in str(e.value)
