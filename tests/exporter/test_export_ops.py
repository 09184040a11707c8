"""qd-export op by op: one-operator TFLite models (tests/tflite_writer.py) for the operators the zoo
does not hold, imported and exported; LiteRT runs both on the same full-range inputs and every
element must agree (BUILTIN_REF and the default XNNPACK interpreter)."""

from __future__ import annotations

import numpy as np
import pytest

from qdialect.exporter import export_tflite
from qdialect.importer import import_tflite
from tests.tflite_writer import TensorSpec, build_single_op_model, run_tflite

RNG = np.random.default_rng(7)


def q(shape, dtype="int8", scale=0.05, zp=3):
    return TensorSpec(tuple(shape), dtype, scale, zp if dtype != "int16" else 0)


def const(values, dtype="int32"):
    arr = np.asarray(values)
    return TensorSpec(arr.shape, dtype, data=arr)


def weights(shape, axis_len, dtype="int8", axis=0):
    return TensorSpec(tuple(shape), dtype, scale=list(np.linspace(0.01, 0.03, axis_len)), zero_point=[0] * axis_len,
                      quantized_dimension=axis, data=RNG.integers(-127, 128, shape))


def bias(n, in_scale, w):
    return TensorSpec((n,), "int32", scale=[in_scale * s for s in w.scale], zero_point=[0] * n,
                      data=RNG.integers(-2000, 2000, n))


W_T = weights((4, 3, 3, 2), 4)
CASES = {
    "transpose_conv_same_relu": ("TRANSPOSE_CONV", [const([1, 8, 8, 4]), W_T, q((1, 4, 4, 2)), bias(4, 0.05, W_T)],
                                 [q((1, 8, 8, 4), scale=0.1, zp=-5)],
                                 {"padding": "SAME", "stride_h": 2, "stride_w": 2,
                                  "fused_activation_function": "RELU"}),
    "prelu": ("PRELU", [q((1, 4, 4, 3)), TensorSpec((3,), "int8", 0.01, 0, data=RNG.integers(-100, 100, 3))],
              [q((1, 4, 4, 3), scale=0.04, zp=-2)], None),
    "resize_bilinear_half_pixel": ("RESIZE_BILINEAR", [q((1, 3, 5, 2)), const([6, 9])], [q((1, 6, 9, 2))],
                                   {"half_pixel_centers": True}),
    "resize_nearest": ("RESIZE_NEAREST_NEIGHBOR", [q((1, 3, 5, 2)), const([6, 10])], [q((1, 6, 10, 2))], None),
    "space_to_depth": ("SPACE_TO_DEPTH", [q((1, 4, 6, 2))], [q((1, 2, 3, 8))], {"block_size": 2}),
    "depth_to_space": ("DEPTH_TO_SPACE", [q((1, 2, 3, 8))], [q((1, 4, 6, 2))], {"block_size": 2}),
    "mirror_pad": ("MIRROR_PAD", [q((2, 4, 3)), const([[0, 0], [1, 2], [2, 0]])], [q((2, 7, 5))], {"mode": "REFLECT"}),
    "arg_max": ("ARG_MAX", [q((3, 7)), const([1])], [TensorSpec((3,), "int32")], {"output_type": "INT32"}),
    "split": ("SPLIT", [const(1), q((2, 6, 3))], [q((2, 2, 3)), q((2, 2, 3)), q((2, 2, 3))], {"num_splits": 3}),
    "tile": ("TILE", [q((2, 3)), const([2, 3])], [q((4, 9))], None),
    "strided_slice_negative": ("STRIDED_SLICE", [q((4, 9)), const([3, 8]), const([0, 0]), const([-1, -3])],
                               [q((4, 3))], {"end_mask": 1}),
    "strided_slice_shrink": ("STRIDED_SLICE", [q((4, 9, 2)), const([1, 0, 0]), const([2, 9, 2]), const([1, 2, 1])],
                             [q((5, 2))], {"shrink_axis_mask": 1}),
    "exp": ("EXP", [q((2, 16))], [q((2, 16), scale=0.2, zp=-128)], None),
    "abs": ("ABS", [q((2, 16))], [q((2, 16), scale=0.04, zp=-100)], None),
    "log_softmax": ("LOG_SOFTMAX", [q((2, 16))], [q((2, 16), scale=16 / 256, zp=127)], None),
    "elu": ("ELU", [q((2, 16))], [q((2, 16), scale=0.05, zp=-40)], None),
    "l2_normalization": ("L2_NORMALIZATION", [q((2, 16))], [q((2, 16), scale=1 / 128, zp=0)], None),
    "reduce_max": ("REDUCE_MAX", [q((2, 5, 6)), const([1])], [q((2, 6))], {"keep_dims": False}),
    "sum_keep": ("SUM", [q((2, 5, 6)), const([2])], [q((2, 5, 1), scale=0.2, zp=1)], {"keep_dims": True}),
    "sum_uint8": ("SUM", [q((1, 5, 4, 3), "uint8", 0.05, 128), const([2])], [q((1, 5, 3), "uint8", 0.3, 127)],
                  {"keep_dims": False}),
    "mean_uint8": ("MEAN", [q((1, 5, 4, 3), "uint8", 0.05, 128), const([1, 2])], [q((1, 3), "uint8", 0.02, 120)],
                   {"keep_dims": False}),
    "avg_pool_uint8": ("AVERAGE_POOL_2D", [q((1, 6, 6, 3), "uint8", 0.05, 128)], [q((1, 3, 3, 3), "uint8", 0.05, 128)],
                       {"padding": "VALID", "stride_h": 2, "stride_w": 2, "filter_height": 2, "filter_width": 2}),
    "quantize_uint8_to_int8": ("QUANTIZE", [q((2, 8), "uint8", 0.05, 120)], [q((2, 8), "int8", 0.04, 3)], None),
    "quantize_int8_to_uint8": ("QUANTIZE", [q((2, 8), "int8", 0.05, 12)], [q((2, 8), "uint8", 0.04, 130)], None),
    "padv2": ("PADV2", [q((1, 3, 3, 2)), const([[0, 0], [1, 1], [2, 0], [0, 0]]),
                        TensorSpec((), "int8", 0.05, 3, data=np.array(-20))], [q((1, 5, 5, 2))], None),
    "max_pool_same": ("MAX_POOL_2D", [q((1, 7, 7, 3))], [q((1, 4, 4, 3))],
                      {"padding": "SAME", "stride_h": 2, "stride_w": 2, "filter_height": 3, "filter_width": 3}),
    "relu6": ("RELU6", [q((2, 16))], [q((2, 16), scale=0.03, zp=-128)], None),
    "relu_n1_to_1": ("RELU_N1_TO_1", [q((2, 16))], [q((2, 16), scale=0.01, zp=0)], None),
    "squeeze": ("SQUEEZE", [q((1, 4, 1, 3))], [q((4, 3))], {"squeeze_dims": [0, 2]}),
    "gather": ("GATHER", [q((5, 4)), const([4, 0, 2, 2])], [q((4, 4))], {"axis": 0}),
    "add_relu6_int16": ("ADD", [q((2, 8), "int16", 0.001), q((2, 8), "int16", 0.002)],
                        [q((2, 8), "int16", 0.0005)], {"fused_activation_function": "RELU6"}),
    "mul_broadcast_uint8": ("MUL", [q((2, 3, 4), "uint8", 0.05, 130), q((4,), "uint8", 0.02, 120)],
                            [q((2, 3, 4), "uint8", 0.03, 128)], None),
    "depthwise_multiplier2_dilated": (
        "DEPTHWISE_CONV_2D",
        [q((1, 9, 9, 2)), (wd := weights((1, 3, 3, 4), 4, axis=3)), bias(4, 0.05, wd)],
        [q((1, 5, 5, 4), scale=0.1, zp=0)],
        {"padding": "VALID", "stride_h": 1, "stride_w": 1, "depth_multiplier": 2, "dilation_h_factor": 2,
         "dilation_w_factor": 2}),
}


def _full_range(spec: TensorSpec) -> np.ndarray:
    info = np.iinfo(np.dtype(spec.dtype))
    return RNG.integers(info.min, info.max + 1, spec.shape).astype(spec.dtype)


# LiteRT's BUILTIN_REF resolver has no ELU (the original model does not run there either): that case
# runs under the default resolver only.
ROUNDTRIPS = [(case, reference) for case in sorted(CASES) for reference in (True, False)
              if not (reference and CASES[case][0] == "ELU")]


@pytest.mark.parametrize("case,reference", ROUNDTRIPS,
                         ids=[f"{c}-{'builtin_ref' if r else 'xnnpack'}" for c, r in ROUNDTRIPS])
def test_single_op_roundtrip(case, reference):
    op, ins, outs, options = CASES[case]
    model = build_single_op_model(op, ins, outs, options)
    exported = export_tflite(import_tflite(model))
    for _ in range(3):
        xs = [_full_range(s) for s in ins if s is not None and s.data is None]
        want = run_tflite(model, xs, reference=reference)
        got = run_tflite(exported, xs, reference=reference)
        for k, (w, g) in enumerate(zip(want, got, strict=True)):
            assert w.shape == g.shape, f"{case} output {k}: {w.shape} vs {g.shape}"
            assert np.count_nonzero(w != g) == 0, f"{case} output {k}: {np.count_nonzero(w != g)} of {w.size} differ"
