"""Single-operator TFLite models that probe Vela 5.2's placement limits (built with tests/tflite_writer.py).

Each probe is one operator just inside or just outside a limit that the
Ethos-U tables model (stride, dilation, batch, dimension sizes, broadcasting,
weight zero points, depth multiplier, 16-bit MEAN, SOFTMAX height x width,
tensor scales, the ops added for Vela 5.2 ...).  `write_probes(dir)` writes
them as DIR/NAME.tflite; `tools/vela_agreement.py --probes` and
`tests/transforms/test_vela_agreement.py` compare our placement with Vela's
on them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _specs():
    from tests.tflite_writer import TensorSpec as T

    rng = np.random.default_rng(0)

    def act(shape, dtype="int8", scale=0.05, zp=0):
        return T(tuple(shape), dtype, scale=scale, zero_point=zp)

    def weights(shape, zp=0, per_channel=None, dtype="int8"):
        data = rng.integers(-20, 21, size=shape).astype(dtype)
        if per_channel is None:
            return T(tuple(shape), dtype, scale=0.01, zero_point=zp, data=data)
        n = shape[per_channel]
        return T(tuple(shape), dtype, scale=[0.01 + 0.001 * k for k in range(n)], zero_point=[zp] * n,
                 quantized_dimension=per_channel, data=data)

    def bias(n, in_scale=0.05, w_scale=0.01, per_channel=False):
        if per_channel:
            return T((n,), "int32", scale=[in_scale * (0.01 + 0.001 * k) for k in range(n)], zero_point=[0] * n,
                     data=np.arange(n, dtype=np.int32))
        return T((n,), "int32", scale=in_scale * w_scale, zero_point=0, data=np.arange(n, dtype=np.int32))

    def ints(values):
        values = np.asarray(values, np.int32)
        return T(values.shape, "int32", data=values)

    def conv(name, x, k, stride=1, dilation=1, padding="VALID", zp=0):
        n, h, w, c = x
        eff = (k - 1) * dilation + 1
        oh = -(-h // stride) if padding == "SAME" else (h - eff) // stride + 1
        ow = -(-w // stride) if padding == "SAME" else (w - eff) // stride + 1
        return name, "CONV_2D", [act(x), weights((4, k, k, c), zp=zp), bias(4)], [act((n, oh, ow, 4), scale=0.1)], {
            "padding": padding, "stride_w": stride, "stride_h": stride,
            "dilation_w_factor": dilation, "dilation_h_factor": dilation}

    def dw(name, x, mult=1, stride=1):
        n, h, w, c = x
        oh = -(-h // stride)
        return name, "DEPTHWISE_CONV_2D", [act(x), weights((1, 3, 3, c * mult)), bias(c * mult)], [
            act((n, oh, oh, c * mult), scale=0.1)], {"padding": "SAME", "stride_w": stride, "stride_h": stride,
                                                     "depth_multiplier": mult}

    def binary(name, op, a, b, out, dtype="int8"):
        return name, op, [act(a, dtype), act(b, dtype)], [act(out, dtype, scale=0.1)], {}

    probes = [
        conv("conv_stride4_valid", (1, 9, 9, 2), 1, stride=4),
        conv("conv_stride4_same", (1, 9, 9, 2), 3, stride=4, padding="SAME"),
        conv("conv_dilation3", (1, 9, 9, 2), 3, dilation=3),
        conv("conv_batch2", (2, 5, 5, 2), 3),
        conv("conv_weight_zero_point", (1, 5, 5, 2), 3, zp=3),
        dw("depthwise_multiplier2", (1, 6, 6, 2), mult=2),
        dw("depthwise_stride4", (1, 8, 8, 2), stride=4),
        binary("add_broadcast_both", "ADD", (1, 4, 1, 2), (1, 1, 4, 2), (1, 4, 4, 2)),
        binary("add_dim_70000", "ADD", (1, 1, 70000, 1), (1, 1, 70000, 1), (1, 1, 70000, 1)),
        binary("mul_int16", "MUL", (1, 4, 4, 2), (1, 4, 4, 2), (1, 4, 4, 2), "int16"),
        binary("squared_difference", "SQUARED_DIFFERENCE", (1, 4, 4, 2), (1, 4, 4, 2), (1, 4, 4, 2)),
        ("maximum", "MAXIMUM", [act((1, 4, 4, 2)), act((1, 1, 1, 2))], [act((1, 4, 4, 2))], {}),
        ("add_scale_2e32", "ADD", [act((1, 4, 4, 2)), act((1, 4, 4, 2))], [act((1, 4, 4, 2), scale=8.0e9)], {}),
        ("prelu", "PRELU", [act((1, 4, 4, 2)), T((1, 1, 2), "int8", scale=0.01, zero_point=0,
                                                      data=np.array([[[5, -7]]], np.int8))],
         [act((1, 4, 4, 2), scale=0.1)], {}),
        ("fc_per_channel", "FULLY_CONNECTED", [act((1, 16)), weights((8, 16), per_channel=0),
                                                bias(8, per_channel=True)], [act((1, 8), scale=0.1)], {}),
        ("softmax_hw_65537", "SOFTMAX", [act((1, 65537, 1, 1))], [act((1, 65537, 1, 1), scale=1 / 256, zp=-128)],
         {"beta": 1.0}),
        ("softmax_hw_65536", "SOFTMAX", [act((1, 256, 256, 2))], [act((1, 256, 256, 2), scale=1 / 256, zp=-128)],
         {"beta": 1.0}),
        ("mean_int16", "MEAN", [act((1, 4, 4, 8), "int16"), ints([1, 2])], [act((1, 1, 1, 8), "int16")],
         {"keep_dims": True}),
        ("mean_depth", "MEAN", [act((1, 4, 4, 8)), ints([3])], [act((1, 4, 4, 1))], {"keep_dims": True}),
        ("reduce_max", "REDUCE_MAX", [act((1, 4, 4, 8)), ints([1, 2])], [act((1, 1, 1, 8))], {"keep_dims": True}),
        ("sum", "SUM", [act((1, 4, 4, 8)), ints([1, 2])], [act((1, 1, 1, 8), scale=0.5)], {"keep_dims": True}),
        ("transpose_general", "TRANSPOSE", [act((1, 300, 300, 2)), ints([2, 1, 0, 3])], [act((300, 300, 1, 2))], {}),
        ("transpose_hw", "TRANSPOSE", [act((1, 4, 6, 2)), ints([0, 2, 1, 3])], [act((1, 6, 4, 2))], {}),
        ("slice", "SLICE", [act((1, 6, 6, 4)), ints([0, 1, 1, 0]), ints([1, 4, 4, 4])], [act((1, 4, 4, 4))], {}),
        ("strided_slice_c2", "STRIDED_SLICE", [act((1, 6, 6, 4)), ints([0, 0, 0, 0]), ints([1, 6, 6, 4]),
                                               ints([1, 1, 1, 2])], [act((1, 6, 6, 2))], {}),
        ("split", "SPLIT", [ints(3), act((1, 4, 4, 6))], [act((1, 4, 4, 3)), act((1, 4, 4, 3))], {"num_splits": 2}),
        ("resize_bilinear_2x", "RESIZE_BILINEAR", [act((1, 4, 4, 2)), ints([8, 8])], [act((1, 8, 8, 2))], {}),
        ("resize_bilinear_3x", "RESIZE_BILINEAR", [act((1, 4, 4, 2)), ints([12, 12])], [act((1, 12, 12, 2))], {}),
        ("resize_nearest_2x", "RESIZE_NEAREST_NEIGHBOR", [act((1, 4, 4, 2)), ints([8, 8])], [act((1, 8, 8, 2))], {}),
        ("transpose_conv_s2", "TRANSPOSE_CONV", [ints([1, 8, 8, 4]), weights((4, 3, 3, 2)), act((1, 4, 4, 2)),
                                                  bias(4)], [act((1, 8, 8, 4), scale=0.1)],
         {"padding": "SAME", "stride_w": 2, "stride_h": 2}),
        ("elu", "ELU", [act((1, 4, 4, 2))], [act((1, 4, 4, 2), scale=0.06)], {}),
        ("batch_matmul_int8", "BATCH_MATMUL", [act((1, 2, 4, 8)), act((1, 2, 8, 4))], [act((1, 2, 4, 4), scale=0.2)],
         {}),
        ("batch_matmul_int16", "BATCH_MATMUL", [act((1, 2, 4, 8), "int16"), act((1, 2, 8, 4), "int16")],
         [act((1, 2, 4, 4), "int16", scale=0.2)], {}),
        ("arg_max_depth", "ARG_MAX", [act((1, 4, 4, 8)), ints(3)], [T((1, 4, 4), "int32")], {"output_type": "INT32"}),
    ]
    return probes


def write_probes(directory: Path) -> list[Path]:
    """Write every probe as DIRECTORY/NAME.tflite; the paths, in probe order."""
    from tests.tflite_writer import build_single_op_model

    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, op, ins, outs, options in _specs():
        path = directory / f"{name}.tflite"
        path.write_bytes(bytes(build_single_op_model(op, ins, outs, options)))
        paths.append(path)
    return paths
