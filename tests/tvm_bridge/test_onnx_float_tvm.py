"""The `onnx` profile's float convolutions, depthwise convolutions and fully connected layers
(DequantizeLinear -> ORT's MLAS float Conv / Gemm -> QuantizeLinear) through TVM, bit-exact
with ONNX Runtime: transforms/decompose_onnx.py writes MLAS's summation orders as L3 (FMA
chains as `math.fma` reductions, the one-filter kernel's rounded products), the bridge emits
the chains as in-order loops calling `llvm.fma`."""

from __future__ import annotations

import numpy as np
import pytest

from qdialect.interpreter import Interpreter
from tests.tvm_bridge.test_onnx_tvm import _run_tvm
from transforms.pipelines import lower_to_l3
from tvm_bridge.compile import compile_module

# (model, profile): the residual-branch convolutions ORT's default session runs in float
# (s8), the 16-bit model (nothing fuses), and whole models in the `onnx` profile
CASES = [("mobilenetv2_qdq_s8", "onnxruntime"), ("cnn_qdq_s16", "onnxruntime"),
         ("cnn_qdq_u8", "onnx"), ("mobilenetv2_qdq_u8", "onnx")]


@pytest.mark.parametrize("name,profile", CASES)
def test_float_convolutions_match_onnxruntime(name, profile):
    counts = _run_tvm(name, profile)
    assert sum(counts) == 0, f"differing elements per output: {counts}"


def _adversarial(kind: str, x_storage: str, strides=(1, 1)):
    from qdialect.builder import GraphBuilder
    from qdialect.dialects.quant import UniformQuantizedType as Q

    rng = np.random.default_rng(7)
    signed = x_storage != "u8"
    bits = 16 if x_storage == "i16" else 8
    xq = Q.per_tensor(0.0213, 3 if signed else 131, storage=x_storage)
    yq = Q.per_tensor(0.0171 if bits == 8 else 0.00091, -2 if signed else 127, storage=x_storage)
    g = GraphBuilder()
    c, o = 64, 32
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, 255)
    if kind == "conv":
        x = g.input([1, 12, 12, c], xq)
        ws = rng.uniform(0.002, 0.01, o)
        wq = Q.per_axis(ws, np.zeros(o, np.int64), axis=0, storage="i8")
        w = g.constant(rng.integers(-127, 128, (o, 3, 3, c)).astype(np.int8), wq)
        b = g.bias(rng.integers(-3000, 3000, o).astype(np.int32), x, w)
        y = g.conv2d(x, w, b, yq, strides=strides, padding="SAME", rounding="onnx")
    elif kind == "depthwise":
        x = g.input([1, 12, 12, c], xq)
        ws = rng.uniform(0.002, 0.01, c)
        wq = Q.per_axis(ws, np.zeros(c, np.int64), axis=3, storage="i8")
        w = g.constant(rng.integers(-127, 128, (1, 3, 3, c)).astype(np.int8), wq)
        b = g.bias(rng.integers(-3000, 3000, c).astype(np.int32), x, w)
        y = g.depthwise_conv2d(x, w, b, yq, strides=strides, padding="SAME", rounding="onnx")
    else:  # fully connected, K = 600: three K blocks of MlasGemm
        x = g.input([3, 600], xq)
        ws = rng.uniform(0.0005, 0.002, o)
        wq = Q.per_axis(ws, np.zeros(o, np.int64), axis=0, storage="i8")
        w = g.constant(rng.integers(-127, 128, (o, 600)).astype(np.int8), wq)
        b = g.bias(rng.integers(-3000, 3000, o).astype(np.int32), x, w)
        y = g.fully_connected(x, w, b, yq, rounding="onnx")
    g.output(y)
    module = g.build()
    shape = list(module.body.block.first_op.function_type.inputs.data[0].get_shape())
    dt = {"i8": np.int8, "u8": np.uint8, "i16": np.int16}[x_storage]
    xs = [rng.integers(lo, hi + 1, shape).astype(dt) for _ in range(3)]
    return module, xs


@pytest.mark.parametrize("kind,storage,strides", [
    ("conv", "i8", (1, 1)), ("conv", "u8", (2, 2)), ("conv", "i16", (1, 1)),
    ("depthwise", "u8", (1, 1)), ("depthwise", "i16", (2, 2)), ("fc", "i8", (1, 1)), ("fc", "i16", (1, 1))])
def test_adversarial_float_ops_match_interpreter(kind, storage, strides):
    """K = 3 x 3 x 64 = 576 spans several MLAS K blocks (and, at stride 2, N slices); the
    interpreter's recipe is MLAS's own (checked against ORT in tests/reference)."""
    module, xs = _adversarial(kind, storage, strides)
    expected = [np.asarray(Interpreter(module).run([x])[0]) for x in xs]
    lower_to_l3(module)
    compiled = compile_module(module)
    for x, want in zip(xs, expected):
        got = compiled(x)[0]
        got = got.view(want.dtype) if got.dtype != want.dtype and got.dtype.itemsize == want.dtype.itemsize else got
        assert int(np.sum(got.astype(np.int64) != want.astype(np.int64))) == 0
