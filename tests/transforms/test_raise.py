"""qnn-raise: fake quantization and the frontends' other spellings become canonical qnn ops.

The round trip import -> qnn-lower-to-float -> qnn-raise gives back, for every
zoo model, a module of canonical qnn ops that runs to the same integers as
the imported L1 (and so as LiteRT BUILTIN_REF).  The awkward spellings are
checked one by one; where the L0 spelling is itself an integer computation
(cast -> avg_pool -> cast, ops on quantized tensors) the raised op must
compute the same integers as the L0 module.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from qdialect.builder import GraphBuilder
from qdialect.dialects import nn, qnn
from qdialect.dialects.quant import UniformQuantizedType as Q
from qdialect.interpreter import run_module
from transforms.lower_to_float import QnnLowerToFloatPass
from transforms.raise_fake_quant import QnnRaisePass, raise_fake_quant

from .helpers import ZOO, ZOO_MODELS, apply, op_names, parse, random_inputs, same_integers, zoo_module
from .test_canonicalize import random_graphs


def raised(module):
    out = module.clone()
    report = raise_fake_quant(out)
    apply(out)  # verify
    return out, report


def only_qnn(module) -> bool:
    return all(n.startswith("qnn.") for n in op_names(module))


# ----- the round trip on the zoo -------------------------------------------------------------------

# Regions qnn-lower-to-float makes and qnn-raise raises back, per model (none are left).
REGIONS = {
    "cnn_small.tflite": 8,
    "cnn_small_16x8.tflite": 8,
    "cnn_small_uint8.tflite": 10,
    "ds_cnn_kws.tflite": 12,
    "elementwise_movement.tflite": 11,
    "mlp_act.tflite": 9,
    "mobilenetv2_tiny.tflite": 28,
}


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_zoo_round_trip_gives_the_same_integers(name):
    from tvm_bridge.run_cli import litert_run

    original = zoo_module(name)
    fake = apply(original, QnnLowerToFloatPass())
    back, report = raised(fake)
    assert only_qnn(back), op_names(back)
    assert op_names(back) == op_names(original)
    assert report.regions_left == 0, report.remarks
    assert report.regions_raised == REGIONS.get(name, report.regions_raised)
    samples = [random_inputs(original, seed) for seed in range(3)]
    for sample in samples:
        assert not same_integers(original, back, sample)
    theirs = litert_run((ZOO / name).read_bytes(), samples[:1], reference=True)[0]
    for a, b in zip(run_module(back, samples[0]), theirs):
        assert np.array_equal(a, b.reshape(a.shape))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs())
def test_random_graphs_round_trip(module):
    """Builder graphs (those of the canonicalize tests) through float and back keep their integers."""
    back, report = raised(apply(module, QnnLowerToFloatPass()))
    assert report.regions_left == 0, report.remarks
    assert only_qnn(back), op_names(back)
    for seed in range(2):
        assert not same_integers(module, back, random_inputs(module, seed))


def test_knobs_survive_the_round_trip():
    g = GraphBuilder()
    x = g.input([1, 6, 6, 3], Q.per_tensor(0.05, -3))
    w = g.constant(np.arange(12).reshape(4, 1, 1, 3) - 6, Q.per_axis([0.01, 0.02, 0.03, 0.04], axis=0))
    y = g.conv2d(x, w, g.bias(np.array([1, 2, 3, 4]), x, w), Q.per_tensor(0.1, 5), rounding="half_even",
                 bias="output", acc="i16", acc_overflow="saturate", activation="relu6")
    p = g.pad(y, [[0, 0], [1, 1], [1, 1], [0, 0]])
    p.owner.attributes["pad_value"] = qnn.make_attr(qnn.INT, 25)
    g.output(g.requantize(p, Q.per_tensor(0.2, 0), rounding="single", act_min=-3))
    original = g.build()
    back, report = raised(apply(original, QnnLowerToFloatPass()))
    assert report.regions_left == 0
    before = [(op.name, dict(op.attributes)) for op in original.walk() if isinstance(op, qnn.QnnOp)]
    after = [(op.name, dict(op.attributes)) for op in back.walk() if isinstance(op, qnn.QnnOp)]
    assert [n for n, _ in before] == [n for n, _ in after]
    for (_, a), (_, b) in zip(before, after):
        assert a == b
    assert not same_integers(original, back, random_inputs(original, 0))


# ----- the awkward spellings ---------------------------------------------------------------------

Q_IN = "!quant.uniform<i8:f32, 5.000000e-02:-3>"
Q_OUT = "!quant.uniform<i8:f32, 1.000000e-01:5>"


def _module(body: str, args: str, results: str) -> str:
    return f"func.func @main({args}) -> ({results}) {{\n{body}\n}}"


def test_cast_avg_pool_cast_is_raised_bit_exactly():
    text = _module(
        f"""
  %i = nn.cast %x : (tensor<1x6x6x3x{Q_IN}>) -> tensor<1x6x6x3xi32>
  %p = nn.avg_pool2d %i {{kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>}} : (tensor<1x6x6x3xi32>) -> tensor<1x6x6x3xi32>
  %n = nn.cast %p : (tensor<1x6x6x3xi32>) -> tensor<1x6x6x3xi8>
  %q = quant.scast %n : tensor<1x6x6x3xi8> to tensor<1x6x6x3x{Q_IN}>
  func.return %q : tensor<1x6x6x3x{Q_IN}>""",
        f"%x: tensor<1x6x6x3x{Q_IN}>",
        f"tensor<1x6x6x3x{Q_IN}>",
    )
    fake = parse(text)
    back, report = raised(fake)
    assert op_names(back) == {"qnn.avg_pool2d"}
    assert report.raised["nn.cast -> nn.avg_pool2d -> nn.cast"] == 1
    for seed in range(4):
        assert not same_integers(fake, back, random_inputs(fake, seed))


def test_cast_mean_requantize_becomes_mean():
    q32 = "!quant.uniform<i32:f32, 5.000000e-02:-3>"
    text = _module(
        f"""
  %i = nn.cast %x : (tensor<1x6x6x3x{Q_IN}>) -> tensor<1x6x6x3xi32>
  %m = nn.mean %i {{axes = array<i64: 1, 2>, keep_dims = true}} : (tensor<1x6x6x3xi32>) -> tensor<1x1x1x3xi32>
  %s = quant.scast %m : tensor<1x1x1x3xi32> to tensor<1x1x1x3x{q32}>
  %r = qnn.requantize %s {{act_min = 5 : i64}} : (tensor<1x1x1x3x{q32}>) -> tensor<1x1x1x3x{Q_OUT}>
  func.return %r : tensor<1x1x1x3x{Q_OUT}>""",
        f"%x: tensor<1x6x6x3x{Q_IN}>",
        f"tensor<1x1x1x3x{Q_OUT}>",
    )
    back, report = raised(parse(text))
    assert op_names(back) == {"qnn.mean"}
    mean = next(op for op in back.walk() if isinstance(op, qnn.MeanOp))
    assert mean.attr("axes") == [1, 2] and mean.attr("keep_dims") and mean.clamp_bounds() == (5, 127)
    assert str(mean.results[0].type) == f"tensor<1x1x1x3x{Q_OUT}>"
    # the canonical op is TFLite's MEAN (one rounding), which test_zoo checks against LiteRT
    g = GraphBuilder()
    g.output(g.mean(g.input([1, 6, 6, 3], Q.per_tensor(0.05, -3)), [1, 2], Q.per_tensor(0.1, 5), keep_dims=True))
    reference = g.build()
    inputs = random_inputs(reference, 0)
    expected = np.maximum(run_module(reference, inputs)[0], 5)
    assert np.array_equal(run_module(back, inputs)[0], expected)


RELU_AS_MAX = """
func.func @main(%x: tensor<1x4x4x3x!quant.uniform<i8:f32, 5.000000e-02:-3>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 1.000000e-01:5>> {
  %w = qnn.constant dense<"0x0AF6147FE281"> : tensor<2x1x1x3x!quant.uniform<i8:f32:0, {1.000000e-02,2.000000e-02}>>
  %b = qnn.constant dense<"0x64000000CEFFFFFF"> : tensor<2x!quant.uniform<i32:f32:0, {5.000000e-04,1.000000e-03}>>
  %y = qnn.conv2d %x, %w, %b CLAMP: (tensor<1x4x4x3x!quant.uniform<i8:f32, 5.000000e-02:-3>>, tensor<2x1x1x3x!quant.uniform<i8:f32:0, {1.000000e-02,2.000000e-02}>>, tensor<2x!quant.uniform<i32:f32:0, {5.000000e-04,1.000000e-03}>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 1.000000e-01:5>>
  RELU
}
"""
MAX_WITH_ZERO_POINT = """%yf = quant.dcast %y : tensor<1x4x4x2x!quant.uniform<i8:f32, 1.000000e-01:5>> to tensor<1x4x4x2xf32>
  %z = qnn.constant dense<"0x05"> : tensor<1x!quant.uniform<i8:f32, 1.000000e-01:5>>
  %zf = quant.dcast %z : tensor<1x!quant.uniform<i8:f32, 1.000000e-01:5>> to tensor<1xf32>
  %mf = nn.maximum %yf, %zf : (tensor<1x4x4x2xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32>
  %m = quant.qcast %mf : tensor<1x4x4x2xf32> to tensor<1x4x4x2x!quant.uniform<i8:f32, 1.000000e-01:5>>
  func.return %m : tensor<1x4x4x2x!quant.uniform<i8:f32, 1.000000e-01:5>>"""


def test_relu_as_max_with_the_zero_point_folds_into_the_producer():
    fake = parse(RELU_AS_MAX.replace("CLAMP", "").replace("RELU", MAX_WITH_ZERO_POINT))
    back, report = raised(fake)
    assert op_names(back) == {"qnn.constant", "qnn.conv2d"}
    conv = next(op for op in back.walk() if isinstance(op, qnn.Conv2DOp))
    assert conv.clamp_bounds() == (5, 127)
    expected = parse(RELU_AS_MAX.replace("CLAMP", "{act_min = 5 : i64} ").replace(
        "RELU", "func.return %y : tensor<1x4x4x2x!quant.uniform<i8:f32, 1.000000e-01:5>>"))
    for seed in range(3):
        assert not same_integers(expected, back, random_inputs(expected, seed))


def test_float_activation_folds_into_the_fused_clamp():
    g = GraphBuilder()
    x = g.input([1, 6, 6, 3], Q.per_tensor(0.05, -3))
    w = g.constant(np.ones((4, 1, 1, 3)), Q.per_axis([0.01, 0.02, 0.03, 0.04], axis=0))
    g.output(g.conv2d(x, w, g.bias(np.zeros(4), x, w), Q.per_tensor(0.1, 5)))
    fake = apply(g.build(), QnnLowerToFloatPass())
    conv = next(op for op in fake.walk() if isinstance(op, nn.Conv2DOp))
    qcast = next(iter(conv.result.uses)).operation
    relu6 = nn.ClipOp([conv.result], conv.result.type, {"min": 0.0, "max": 6.0})
    qcast.parent_block().insert_op_before(relu6, qcast)
    qcast.operands[0] = relu6.result
    back, report = raised(fake)
    conv = next(op for op in back.walk() if isinstance(op, qnn.Conv2DOp))
    assert conv.clamp_bounds() == (5, 65)
    assert report.folded["nn.clip -> fused clamp of nn.conv2d"] == 1


def test_ops_on_quantized_tensors_need_nothing():
    q = Q_IN
    text = _module(
        f"""
  %p = nn.pad %x {{paddings = array<i64: 0, 0, 1, 1, 1, 1, 0, 0>}} : (tensor<1x4x4x3x{q}>) -> tensor<1x6x6x3x{q}>
  %m = nn.max_pool2d %p {{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>}} : (tensor<1x6x6x3x{q}>) -> tensor<1x3x3x3x{q}>
  %r = nn.reshape %m : (tensor<1x3x3x3x{q}>) -> tensor<1x9x3x{q}>
  %t = nn.transpose %r {{perm = array<i64: 0, 2, 1>}} : (tensor<1x9x3x{q}>) -> tensor<1x3x9x{q}>
  %c = nn.clip %t {{min = 0.0 : f64, max = 1.0 : f64}} : (tensor<1x3x9x{q}>) -> tensor<1x3x9x{q}>
  %a = nn.maximum %c, %c : (tensor<1x3x9x{q}>, tensor<1x3x9x{q}>) -> tensor<1x3x9x{q}>
  %s = nn.slice %a {{begin = array<i64: 0, 2, 8>, end = array<i64: 1, -1, -1>, strides = array<i64: 1, -1, -2>}} : (tensor<1x3x9x{q}>) -> tensor<1x3x5x{q}>
  func.return %s : tensor<1x3x5x{q}>""",
        f"%x: tensor<1x4x4x3x{q}>",
        f"tensor<1x3x5x{q}>",
    )
    fake = parse(text)
    back, report = raised(fake)
    assert op_names(back) == {"qnn.pad", "qnn.max_pool2d", "qnn.reshape", "qnn.transpose", "qnn.clamp",
                              "qnn.maximum", "qnn.slice"}
    for seed in range(4):
        assert not same_integers(fake, back, random_inputs(fake, seed))


def test_requantize_through_float_and_constant_weights():
    text = _module(
        f"""
  %xf = quant.dcast %x : tensor<1x8x{Q_IN}> to tensor<1x8xf32>
  %w = nn.constant dense<"0x0000803F000000BF0000003F0000803E0000003F000080BF0000803F0000C03F0000803F000000BF0000003F0000803E0000003F000080BF0000803F0000C03F"> : tensor<2x8xf32>
  %wq = quant.qcast %w : tensor<2x8xf32> to tensor<2x8x!quant.uniform<i8:f32, 1.250000e-02>>
  %wf = quant.dcast %wq : tensor<2x8x!quant.uniform<i8:f32, 1.250000e-02>> to tensor<2x8xf32>
  %y = nn.fully_connected %xf, %wf : (tensor<1x8xf32>, tensor<2x8xf32>) -> tensor<1x2xf32>
  %yq = quant.qcast %y : tensor<1x2xf32> to tensor<1x2x{Q_OUT}>
  %yf = quant.dcast %yq : tensor<1x2x{Q_OUT}> to tensor<1x2xf32>
  %z = quant.qcast %yf : tensor<1x2xf32> to tensor<1x2x!quant.uniform<u8:f32, 2.000000e-01:128>>
  func.return %z : tensor<1x2x!quant.uniform<u8:f32, 2.000000e-01:128>>""",
        f"%x: tensor<1x8x{Q_IN}>",
        "tensor<1x2x!quant.uniform<u8:f32, 2.000000e-01:128>>",
    )
    back, report = raised(parse(text))
    assert op_names(back) == {"qnn.constant", "qnn.fully_connected", "qnn.requantize"}
    weights = [op for op in back.walk() if isinstance(op, qnn.ConstantOp)]
    assert weights[0].array().tolist() == [[80, -40, 40, 20, 40, -80, 80, 120]] * 2
    assert weights[1].array().tolist() == [0, 0]  # the zero bias it needed


def test_regions_left_in_float_are_remarks():
    text = _module(
        """
  %xf = quant.dcast %x : tensor<1x8x!quant.uniform<i8:f32, 5.000000e-02:-3>> to tensor<1x8xf32>
  %c = nn.constant dense<"0x0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F"> : tensor<1x8xf32>
  %a = nn.add %xf, %c : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
  %aq = quant.qcast %a : tensor<1x8xf32> to tensor<1x8x!quant.uniform<i8:f32, 1.000000e-01:5>>
  %t = nn.tanh %xf : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %l = nn.logistic %t : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %lq = quant.qcast %l : tensor<1x8xf32> to tensor<1x8x!quant.uniform<i8:f32, 3.906250e-03:-128>>
  func.return %aq, %lq : tensor<1x8x!quant.uniform<i8:f32, 1.000000e-01:5>>, tensor<1x8x!quant.uniform<i8:f32, 3.906250e-03:-128>>""",
        "%x: tensor<1x8x!quant.uniform<i8:f32, 5.000000e-02:-3>>",
        "tensor<1x8x!quant.uniform<i8:f32, 1.000000e-01:5>>, tensor<1x8x!quant.uniform<i8:f32, 3.906250e-03:-128>>",
    )
    back, report = raised(parse(text))
    assert report.regions_left == 3 and report.regions_raised == 0
    joined = "\n".join(report.remarks)
    assert "nn.add (%a) left in float: operand 1 (rhs) is a float value not produced by quant.dcast" in joined
    assert "nn.tanh (%t) left in float: its result is used in float by nn.logistic" in joined
    assert "nn.logistic (%l) left in float: operand 0 (input) is a float value not produced by quant.dcast" in joined


def test_qd_opt_prints_the_ir_and_the_remarks(tmp_path: Path):
    src = tmp_path / "left.mlir"
    src.write_text(
        _module(
            """
  %xf = quant.dcast %x : tensor<1x8x!quant.uniform<i8:f32, 5.000000e-02:-3>> to tensor<1x8xf32>
  %t = nn.tanh %xf : (tensor<1x8xf32>) -> tensor<1x8xf32>
  func.return %t : tensor<1x8xf32>""",
            "%x: tensor<1x8x!quant.uniform<i8:f32, 5.000000e-02:-3>>",
            "tensor<1x8xf32>",
        )
    )
    tool = Path(sys.executable).parent / "qd-opt"
    proc = subprocess.run([str(tool), str(src), "-p", "qnn-raise"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert "nn.tanh" in proc.stdout
    assert "remark: qnn-raise: @main: nn.tanh (%t) left in float: its result is used in float by func.return" in proc.stderr
    quiet = subprocess.run([str(tool), str(src), "-p", "qnn-raise{remarks=false}"], capture_output=True, text=True)
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_pass_object_runs_from_python():
    fake = apply(zoo_module("mlp_act.tflite"), QnnLowerToFloatPass())
    out = apply(fake, QnnRaisePass(remarks=False))
    assert only_qnn(out)
