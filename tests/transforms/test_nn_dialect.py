"""The nn dialect (L0 float ops): verifier messages and the numpy interpreter handlers.

Handlers are checked against straightforward numpy written here (loops over
output positions where that is clearer), and the integer / quantized forms
against the qnn reference ops they stand for.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

from qdialect.diagnostics import LocatedVerifyError
from qdialect.interpreter import run_module

from .helpers import parse

Q = "!quant.uniform<i8:f32, 5.000000e-02:-3>"


def run(text: str, *inputs):
    return run_module(parse(text), list(inputs))


def one_op(op_line: str, args: str, result: str) -> str:
    return f"func.func @main({args}) -> {result} {{\n  %r = {op_line}\n  func.return %r : {result}\n}}"


def naive_conv(x, w, b, stride, pads):
    n, h, wd, c = x.shape
    o, kh, kw, _ = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (pads[0], pads[1]), (pads[2], pads[3]), (0, 0)))
    oh = (h + pads[0] + pads[1] - kh) // stride + 1
    ow = (wd + pads[2] + pads[3] - kw) // stride + 1
    out = np.zeros((n, oh, ow, o))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, i * stride : i * stride + kh, j * stride : j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return (out + b).astype(np.float32)


def test_conv2d_matches_naive_loops():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 7, 6, 3)).astype(np.float32)
    w = rng.standard_normal((4, 3, 2, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    text = one_op(
        "nn.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 0, 1>} : "
        "(tensor<1x7x6x3xf32>, tensor<4x3x2x3xf32>, tensor<4xf32>) -> tensor<1x4x3x4xf32>",
        "%x: tensor<1x7x6x3xf32>, %w: tensor<4x3x2x3xf32>, %b: tensor<4xf32>",
        "tensor<1x4x3x4xf32>",
    )
    (got,) = run(text, x, w, b)
    np.testing.assert_allclose(got, naive_conv(x, w, b, 2, (1, 1, 0, 1)), rtol=1e-5, atol=1e-5)


def test_depthwise_with_multiplier_and_fused_clamp():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 5, 5, 2)).astype(np.float32)
    w = rng.standard_normal((1, 3, 3, 4)).astype(np.float32)
    text = one_op(
        "nn.depthwise_conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, act_min = 0.0 : f64, act_max = 1.0 : f64} : "
        "(tensor<1x5x5x2xf32>, tensor<1x3x3x4xf32>) -> tensor<1x5x5x4xf32>",
        "%x: tensor<1x5x5x2xf32>, %w: tensor<1x3x3x4xf32>",
        "tensor<1x5x5x4xf32>",
    )
    (got,) = run(text, x, w)
    expected = np.concatenate(
        [naive_conv(x[..., c // 2 : c // 2 + 1], w[..., c : c + 1].transpose(3, 1, 2, 0), 0.0, 1, (1, 1, 1, 1)) for c in range(4)],
        axis=3,
    )
    np.testing.assert_allclose(got, np.clip(expected, 0, 1), rtol=1e-5, atol=1e-6)


def test_avg_pool_float_excludes_padding_and_integers_round_half_away():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    text = one_op(
        "nn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : "
        "(tensor<1x4x4x1xf32>) -> tensor<1x3x3x1xf32>",
        "%x: tensor<1x4x4x1xf32>",
        "tensor<1x3x3x1xf32>",
    )
    (got,) = run(text, x)
    assert got[0, 0, 0, 0] == 0.0 and got[0, 1, 1, 0] == pytest.approx((5 + 6 + 9 + 10) / 4)
    ints = np.array([1, 2, -1, -2], np.int32).reshape(1, 2, 2, 1)  # sums 3 and -3 over 2: 1.5 -> 2, -1.5 -> -2
    text = one_op(
        "nn.avg_pool2d %x {kernel = array<i64: 1, 2>, strides = array<i64: 1, 2>} : (tensor<1x2x2x1xi32>) -> tensor<1x2x1x1xi32>",
        "%x: tensor<1x2x2x1xi32>",
        "tensor<1x2x1x1xi32>",
    )
    (got,) = run(text, ints)
    assert got.reshape(-1).tolist() == [2, -2]


def test_casts():
    q = np.array([-128, -3, 0, 127], np.int8).reshape(1, 4)
    text = f"""func.func @main(%q: tensor<1x4x{Q}>, %f: tensor<1x4xf32>) -> (tensor<1x4xi32>, tensor<1x4x!quant.uniform<i8<-127:127>:f32, 5.000000e-01>>, tensor<1x4xi8>) {{
  %i = nn.cast %q : (tensor<1x4x{Q}>) -> tensor<1x4xi32>
  %k = nn.constant dense<"0x2C010000F6FFFFFF0000000080FFFFFF"> : tensor<1x4xi32>
  %n = nn.cast %k : (tensor<1x4xi32>) -> tensor<1x4x!quant.uniform<i8<-127:127>:f32, 5.000000e-01>>
  %t = nn.cast %f : (tensor<1x4xf32>) -> tensor<1x4xi8>
  func.return %i, %n, %t : tensor<1x4xi32>, tensor<1x4x!quant.uniform<i8<-127:127>:f32, 5.000000e-01>>, tensor<1x4xi8>
}}"""
    i, n, t = run(text, q, np.array([[-2.7, 2.7, 300.0, -1e9]], np.float32))
    assert i.dtype == np.int32 and i.tolist() == [[-128, -3, 0, 127]]
    assert n.tolist() == [[127, -10, 0, -127]]  # stored values saturated to the narrowed range
    assert t.tolist() == [[-2, 2, 127, -128]]  # truncation toward zero, saturated


def test_quantized_pad_uses_the_zero_point_and_clip_maps_bounds_like_tflite_relu():
    x = np.array([-128, -3, 10, 127], np.int8).reshape(1, 4)
    text = f"""func.func @main(%x: tensor<1x4x{Q}>) -> (tensor<1x6x{Q}>, tensor<1x4x{Q}>) {{
  %p = nn.pad %x {{paddings = array<i64: 0, 0, 1, 1>}} : (tensor<1x4x{Q}>) -> tensor<1x6x{Q}>
  %c = nn.clip %x {{min = 0.0 : f64, max = 0.5 : f64}} : (tensor<1x4x{Q}>) -> tensor<1x4x{Q}>
  func.return %p, %c : tensor<1x6x{Q}>, tensor<1x4x{Q}>
}}"""
    p, c = run(text, x)
    assert p.tolist() == [[-3, -128, -3, 10, 127, -3]]
    assert c.tolist() == [[-3, -3, 7, 7]]  # [zp + 0, zp + round(0.5 / 0.05)]


def test_slice_has_qnn_slice_bounds():
    x = np.arange(10, dtype=np.float32).reshape(1, 10)
    text = one_op(
        "nn.slice %x {begin = array<i64: 0, 8>, end = array<i64: 1, -1>, strides = array<i64: 1, -3>} : "
        "(tensor<1x10xf32>) -> tensor<1x3xf32>",
        "%x: tensor<1x10xf32>",
        "tensor<1x3xf32>",
    )
    (got,) = run(text, x)
    assert got.tolist() == [[8.0, 5.0, 2.0]]


def test_activations():
    x = np.linspace(-5, 5, 11, dtype=np.float32).reshape(1, 11)
    ops = ["nn.logistic", "nn.tanh", "nn.hard_swish", "nn.elu", "nn.softmax", "nn.log_softmax"]
    expected = [
        1 / (1 + np.exp(-x)), np.tanh(x), x * np.clip(x + 3, 0, 6) / 6, np.where(x >= 0, x, np.expm1(x)),
        np.exp(x) / np.exp(x).sum(), x - np.log(np.exp(x).sum()),
    ]
    for name, want in zip(ops, expected):
        text = one_op(f"{name} %x : (tensor<1x11xf32>) -> tensor<1x11xf32>", "%x: tensor<1x11xf32>", "tensor<1x11xf32>")
        np.testing.assert_allclose(run(text, x)[0], want, rtol=1e-6, atol=1e-6, err_msg=name)


@pytest.mark.parametrize(
    "line, message",
    [
        ("nn.add %x, %x {act_min = 1.0 : f64, act_max = 0.0 : f64} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>",
         "nn.add: act_min 1.0 is greater than act_max 0.0"),
        ("nn.add %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<3xf32>",
         "nn.add: result shape [3] does not match the expected [2]"),
        ("nn.logistic %x {alpha = 1.0 : f64} : (tensor<2xf32>) -> tensor<2xf32>",
         "nn.logistic: unknown attribute 'alpha'"),
        ("nn.add %x, %x {qnn.rounding = \"nearest\"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>",
         "nn.add: attribute 'qnn.rounding' is 'nearest', expected one of tflite, single, half_even, half_up, litert"),
        ("nn.cast %x : (tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32, 5.000000e-01>>",
         "nn.cast: cannot cast f32 to !quant.uniform<i8:f32, 5.000000e-01>"),
        ("nn.tanh %x : (tensor<2xf32>) -> tensor<2xf16>",
         "nn.tanh: operand 0 (input) element type f32 differs from the result's f16"),
    ],
)
def test_verifier_messages(line, message):
    with pytest.raises((VerifyException, LocatedVerifyError)) as info:
        parse(f"func.func @main(%x: tensor<2xf32>) {{\n  %r = {line}\n  func.return\n}}")
    assert message in str(info.value)
