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
# (mobilenetv2 in the `onnx` profile is every layer a float MLAS kernel: a build of several minutes,
# so it runs with `pytest -m slow`; cnn_qdq_u8 covers the same lowering in the default run)
CASES = [("mobilenetv2_qdq_s8", "onnxruntime"), ("cnn_qdq_s16", "onnxruntime"),
         ("cnn_qdq_u8", "onnx"), pytest.param("mobilenetv2_qdq_u8", "onnx", marks=pytest.mark.slow)]


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
    # (the float MLAS depthwise builds take minutes: `pytest -m slow`; the default run keeps
    # test_conv_then_depthwise_padded_bottom_row's depthwise)
    pytest.param("depthwise", "u8", (1, 1), marks=pytest.mark.slow),
    pytest.param("depthwise", "i16", (2, 2), marks=pytest.mark.slow), ("fc", "i8", (1, 1)), ("fc", "i16", (1, 1))])
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


@pytest.mark.slow  # ~140 s: a float convolution chain compiled as serial loops
def test_conv_then_depthwise_padded_bottom_row():
    """A float convolution feeding the one-filter depthwise kernel (the u8 CNN's first two
    layers): the depthwise kernel reads nine shifted slices of the padded activations, and the
    slice at row offset 2 gets the pad (and the first conv's requantize) fused into it.  The
    pad was a TE Select whose index clamp TVM's simplifier drops: vectorized, the bottom pad row
    loaded past the end of the requantized buffer unconditionally and came out as garbage
    (28 of 512 elements off by up to ~100 LSB).  The pad is now an if_then_else."""
    from qdialect.builder import GraphBuilder
    from qdialect.dialects.quant import UniformQuantizedType as Q

    rng = np.random.default_rng(3)
    g = GraphBuilder()
    x = g.input([1, 16, 16, 3], Q.per_tensor(0.0287, 122, storage="u8"))
    w1q = Q.per_axis(rng.uniform(0.0012, 0.002, 8), np.zeros(8, np.int64), axis=0, storage="i8")
    w1 = g.constant(rng.integers(-127, 128, (8, 3, 3, 3)).astype(np.int8), w1q)
    b1 = g.bias(rng.integers(-4500, 4500, 8).astype(np.int32), x, w1)
    y1 = g.conv2d(x, w1, b1, Q.per_tensor(0.0116, 0, storage="u8"), strides=(2, 2),
                  padding=[1, 1, 1, 1], rounding="onnx")
    w2q = Q.per_axis(rng.uniform(0.0021, 0.0026, 8), np.zeros(8, np.int64), axis=3, storage="i8")
    w2 = g.constant(rng.integers(-127, 128, (1, 3, 3, 8)).astype(np.int8), w2q)
    b2 = g.bias(rng.integers(-6000, 11000, 8).astype(np.int32), y1, w2)
    y2 = g.depthwise_conv2d(y1, w2, b2, Q.per_tensor(0.00663, 0, storage="u8"), padding=[1, 1, 1, 1],
                            rounding="onnx")
    g.output(y2)
    module = g.build()
    xs = [rng.integers(0, 256, (1, 16, 16, 3)).astype(np.uint8) for _ in range(4)]
    expected = [np.asarray(Interpreter(module).run([x])[0]) for x in xs]
    lower_to_l3(module)
    compiled = compile_module(module)
    for x, want in zip(xs, expected):
        got = compiled(x)[0].view(np.uint8).astype(np.int64)
        assert int(np.sum(got != want.astype(np.int64))) == 0


@pytest.mark.parametrize("tiles", ["1", "0"])
def test_fma_chains_in_register_tiles_match_the_interpreter(tiles, monkeypatch):
    """The float convolution's FMA chains run a register tile of pixels at a time
    (`translate._tiled_chain`: 12 pixels x 32 channels with AVX-512, 3 with AVX2; the sums in
    a local ACC) and read
    the activations dequantized once (`decompose_onnx._dequantized`); every element is still
    MLAS's order (the interpreter's recipe, checked against ORT in tests/reference), with the
    tiles and without (QDIALECT_CHAIN_TILES=0)."""
    from tvm_bridge.compile import host_target
    from tvm_bridge.kernels import target_flavor
    from tvm_bridge.translate import CHAIN_TILES_ENV, _chain_tile, translate

    dot = target_flavor(host_target())  # (as compile_module translates: the tile follows the vector width)
    monkeypatch.delenv(CHAIN_TILES_ENV, raising=False)
    pixels = _chain_tile(12, 32, "parallel", "parallel", dot.max_lanes if dot else 8)
    assert pixels == (12 if dot is not None and dot.max_lanes == 16 else 3)
    monkeypatch.setenv(CHAIN_TILES_ENV, tiles)
    module, xs = _adversarial("conv", "i16")
    expected = [np.asarray(Interpreter(module).run([x])[0]) for x in xs]
    lower_to_l3(module)
    mod, _ = translate(module, dot=dot)
    chains = [f.script() for gv, f in mod.functions.items() if gv.name_hint.startswith("fma_chain")]
    assert chains
    assert all((f"ACC = T.alloc_local(({pixels}, 32)" in s) == (tiles == "1") for s in chains), chains[0]
    compiled = compile_module(module, cache=False)
    for x, want in zip(xs, expected):
        got = compiled(x)[0].astype(np.int64)
        assert int(np.sum(got != want.astype(np.int64))) == 0
