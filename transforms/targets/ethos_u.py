"""`ethos-u`: Arm Ethos-U NPUs as Arm's Vela 5.2 (default compiler core) places TFLite operators.

Three targets share this module: `ethos-u55` and `ethos-u65` (one table: Vela
documents and checks them together) and `ethos-u85`; `ethos-u` is an alias
of `ethos-u55`.  Each row restates, for the qnn op that canonically
represents a TFLite operator, the constraints of Vela 5.2's SUPPORTED_OPS
report (`vela --supported-ops-report`), generic constraints first:

- U55/U65: feature maps i8, u8 or i16 (32-bit only where Vela lists no
  "32-bit feature-maps are not supported": add, sub, mul, reshape, fully
  connected, batch matmul, neg, sum, mirror pad, transpose); per-axis
  quantization only on conv2d, depthwise, transpose conv and fully connected;
  unsigned zero points >= 0; tensor scales below 2^32 (probed, not in the
  report).  No rank, batch, dimension, broadcast or fused-activation limits
  (Vela 5.2 lowers those itself).
- U85: feature maps also i32 (and i64, bool); result zero points in the
  8-bit range, input zero points 0 for i16 / i32; no stride limits; larger
  16-bit weight sums and int64 bias; a wider op set (div, gather, ...).

Operator-specific rules (strides, kernels, weights, bias, softmax H x W,
mean, transpose, resize, ...) are in the rows.  What Vela does not have to say
because TFLite fixes it is explicit: the NPU computes TFLite's arithmetic, so
`rounding` must be `tflite` with TFLite's accumulators.

`tools/vela_agreement.py` compares these tables with Vela 5.2 op by op.
"""

from __future__ import annotations

from transforms.targets import Row, Target, table
from transforms.targets.checks import (
    Check,
    arg_max_vela,
    bias_constant,
    bias_storage,
    dynamic_weights_matmul,
    gather_axis_is_batch_dims,
    hw_product_at_most,
    input_storage,
    int64_bias_below,
    kernel,
    max_rank,
    mean_vela,
    params_match_result,
    per_axis_only_on,
    plain_storage,
    resize_vela,
    rounding,
    same_shape_as_result,
    same_storage,
    scales_below,
    slice_strides_vela,
    storage,
    stride,
    stride_over_3_valid_only,
    tflite_accumulator,
    transpose_conv_vela,
    transpose_vela_u55,
    u85_zero_points,
    unsigned_zero_points,
    weights_abs_sum_by_input,
    weights_storage,
)

PER_AXIS_NOTE = "Vela takes per-axis quantization only on conv2d, depthwise, transpose conv and fully connected"
FM8_16 = ("i8", "u8", "i16")
FM32 = ("i8", "u8", "i16", "i32")
FM_U85 = ("i8", "u8", "i16", "u16", "i32", "i64", "i1")

WEIGHTED_OPS = ("qnn.conv2d", "qnn.depthwise_conv2d", "qnn.transpose_conv2d", "qnn.fully_connected")


def _generic(core: str, op: str, fm: tuple[str, ...] | None) -> list[Check]:
    """Vela's generic constraints for `core` (u55 or u85), then TFLite's arithmetic."""
    if fm is None:
        fm = FM8_16 if core == "u55" else FM_U85
    checks = [storage(*fm), per_axis_only_on(op in WEIGHTED_OPS, PER_AXIS_NOTE), scales_below(2.0**32, "2^32")]
    checks.append(unsigned_zero_points() if core == "u55" else u85_zero_points())
    checks += [rounding("tflite"), tflite_accumulator()]
    return checks


def _rows(core: str) -> list[Row]:
    u55 = core == "u55"

    def row(op: str, source: str, *specific: Check, fm: tuple[str, ...] | None = None) -> Row:
        return Row(op, tuple(_generic(core, op, fm)) + tuple(specific), source)

    bias = (
        bias_constant(),
        bias_storage(("i32", "i64")),
        int64_bias_below(2**40 - 1 if u55 else 2**48 - 1),
    )
    weights = (
        weights_storage("i8", "u8"),
        weights_abs_sum_by_input({"8": 127 * 65536, "16": 127 * 65536 if u55 else 127 * 2**24}),
    )
    conv_stride = (stride_over_3_valid_only(),) if u55 else ()
    dw_stride = (stride(1, 3),) if u55 else ()
    wide = None if not u55 else FM32
    rows = [
        row("qnn.conv2d", "CONV_2D", *bias, *weights, *conv_stride),
        row("qnn.depthwise_conv2d", "DEPTHWISE_CONV_2D", *bias, *weights, *dw_stride),
        row("qnn.transpose_conv2d", "TRANSPOSE_CONV", *bias, *weights, transpose_conv_vela(u85=not u55)),
        row(
            "qnn.fully_connected",
            "FULLY_CONNECTED",
            *bias,
            *weights,
            *((dynamic_weights_matmul(),) if u55 else ()),
            fm=wide,
        ),
        row("qnn.batch_matmul", "BATCH_MATMUL", *((dynamic_weights_matmul(),) if u55 else ()), fm=wide),
        row(
            "qnn.avg_pool2d",
            "AVERAGE_POOL_2D",
            *conv_stride,
            kernel(height=(1, 8), width=(1, 8), padding="same"),
            kernel(height=(1, 256), area=(1, 65536), padding="valid"),
        ),
        row("qnn.max_pool2d", "MAX_POOL_2D", *conv_stride, kernel(height=(1, 256), area=(1, 65536))),
        row("qnn.add", "ADD", fm=wide),
        row("qnn.sub", "SUB", fm=wide),
        row("qnn.mul", "MUL", fm=wide),
        row("qnn.maximum", "MAXIMUM", params_match_result()),
        row("qnn.minimum", "MINIMUM", params_match_result()),
        row("qnn.squared_difference", "SQUARED_DIFFERENCE"),
        row("qnn.prelu", "PRELU"),
        row("qnn.logistic", "LOGISTIC"),
        row("qnn.tanh", "TANH"),
        row("qnn.hard_swish", "HARD_SWISH"),
        row("qnn.leaky_relu", "LEAKY_RELU"),
        row("qnn.elu", "ELU", input_storage("i8"), same_storage(), same_shape_as_result()),
        row("qnn.gelu", "GELU", input_storage("i8", "u8"), same_storage(), same_shape_as_result()),
        row("qnn.exp", "EXP"),
        row("qnn.log", "LOG", input_storage("i8", "i16"), same_storage(), same_shape_as_result()),
        row("qnn.rsqrt", "RSQRT", input_storage("i8", "i16")),
        row("qnn.abs", "ABS"),
        row("qnn.neg", "NEG", fm=wide),
        row("qnn.clamp", "RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1"),
        row("qnn.softmax", "SOFTMAX", hw_product_at_most(65536)),
        row("qnn.concatenation", "CONCATENATION, PACK"),
        row("qnn.split", "SPLIT, SPLIT_V, UNPACK"),
        row("qnn.slice", "SLICE, STRIDED_SLICE", slice_strides_vela()),
        row("qnn.pad", "PAD, PADV2"),
        row("qnn.mirror_pad", "MIRROR_PAD", fm=wide),
        row("qnn.tile", "TILE"),
        row("qnn.reshape", "RESHAPE, EXPAND_DIMS, SQUEEZE", fm=wide),
        row("qnn.transpose", "TRANSPOSE", transpose_vela_u55() if u55 else max_rank(8), fm=wide),
        row("qnn.mean", "MEAN", input_storage("i8", "u8", "i16"), mean_vela()),
        row("qnn.sum", "SUM", fm=wide),
        row("qnn.reduce_max", "REDUCE_MAX"),
        row("qnn.reduce_min", "REDUCE_MIN"),
        row("qnn.arg_max", "ARG_MAX", *((arg_max_vela(),) if u55 else ()), fm=FM_U85),
        row("qnn.resize_bilinear", "RESIZE_BILINEAR", resize_vela(nearest=False, u85=not u55)),
        row("qnn.resize_nearest_neighbor", "RESIZE_NEAREST_NEIGHBOR", resize_vela(nearest=True, u85=not u55)),
        row("qnn.requantize", "QUANTIZE"),
    ]
    if not u55:
        rows += [
            row("qnn.div", "DIV"),
            row("qnn.gather", "GATHER", gather_axis_is_batch_dims()),
        ]
    # Integer and boolean tensors (a mask's computation imports as `nn` ops on plain types):
    # U55/U65 take 32-bit ADD / SUB / MUL and reshapes, the U85 also bools, casts,
    # comparisons, logical ops and selects.
    ints = ("i8", "i16", "i32") if u55 else ("i1", "i8", "i16", "i32")
    plain = [
        ("nn.add", "ADD (int32)"),
        ("nn.sub", "SUB (int32)"),
        ("nn.mul", "MUL (int32)"),
        ("nn.reshape", "RESHAPE, EXPAND_DIMS, SQUEEZE (int32)"),
    ]
    if not u55:
        plain += [
            ("nn.cast", "CAST"),
            ("nn.compare", "EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL"),
            ("nn.logical_and", "LOGICAL_AND"),
            ("nn.logical_or", "LOGICAL_OR"),
            ("nn.logical_not", "LOGICAL_NOT"),
            ("nn.select", "SELECT, SELECT_V2"),
            ("nn.slice", "SLICE, STRIDED_SLICE"),
            ("nn.transpose", "TRANSPOSE"),
            ("nn.concatenation", "CONCATENATION, PACK"),
            ("nn.maximum", "MAXIMUM"),
            ("nn.minimum", "MINIMUM"),
        ]
    rows += [Row(op, (plain_storage(*ints),), source) for op, source in plain]
    return rows


def build(name: str, core: str, summary: str) -> Target:
    """The table of `core` ("u55" for U55/U65, "u85") under the target name `name`."""
    return table(name, summary, _rows(core), schedule_runs=True)


U55_SUMMARY = "Arm Ethos-U55 as Vela 5.2 places TFLite operators (its SUPPORTED_OPS constraints)"
TARGET = build("ethos-u", "u55", "alias of ethos-u55: " + U55_SUMMARY)
