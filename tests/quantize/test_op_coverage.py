"""Every nn op with a qnn counterpart goes through the quantizer (int8 and int16x8)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import Float32Type, ModuleOp, TensorType
from xdsl.ir import Block, Region

from qdialect.diagnostics import verify_module
from qdialect.dialects import nn
from qdialect.interpreter import run_module
from transforms.quantizer.flow import quantize_float_module
from transforms.quantizer.strategy import load_strategy

F32 = Float32Type()


def t(*shape):
    return TensorType(F32, list(shape))


def float_graph() -> ModuleOp:
    rng = np.random.default_rng(3)
    block = Block(arg_types=[t(1, 6, 6, 4), t(2, 8)])
    x, v = block.args
    outs = []

    def add(op, keep=True):
        block.add_op(op)
        if keep:
            outs.append(op.results[0])
        return op.results[0]

    def const(*shape, scale=0.5):
        return add(nn.ConstantOp(rng.normal(0, scale, shape).astype(np.float32), t(*shape)), keep=False)

    c = add(nn.Conv2DOp([x, const(8, 3, 3, 4), const(8)], t(1, 6, 6, 8),
                        {"strides": [1, 1], "padding": [1, 1, 1, 1], "act_min": 0.0, "act_max": 6.0}))
    add(nn.DepthwiseConv2DOp([c, const(1, 3, 3, 8)], t(1, 3, 3, 8), {"strides": [2, 2], "padding": [0, 1, 0, 1]}))
    add(nn.AvgPool2DOp([c], t(1, 6, 6, 8), {"kernel": [3, 3], "padding": [1, 1, 1, 1]}))
    add(nn.MaxPool2DOp([x], t(1, 3, 3, 4), {"kernel": [2, 2], "strides": [2, 2]}))
    add(nn.MeanOp([c], t(1, 8), {"axes": [1, 2]}))
    add(nn.SumOp([x], t(1, 6, 6), {"axes": [3]}))
    add(nn.ReduceMaxOp([x], t(1, 6, 4), {"axes": [2]}))
    add(nn.ReduceMinOp([x], t(1, 6, 4), {"axes": [1]}))
    fc = add(nn.FullyConnectedOp([v, const(5, 8), const(5)], t(2, 5), {"act_min": 0.0}))
    add(nn.BatchMatmulOp([v, v], t(2, 2), {"adj_y": True}))
    for cls in (nn.AddOp, nn.SubOp, nn.MulOp, nn.SquaredDifferenceOp, nn.MaximumOp, nn.MinimumOp):
        add(cls([v, add(nn.TanhOp([v], t(2, 8)), keep=False)], t(2, 8)))
    for cls in (nn.ReluOp, nn.LogisticOp, nn.TanhOp, nn.LogSoftmaxOp, nn.HardSwishOp, nn.EluOp):
        add(cls([v], t(2, 8)))
    add(nn.SoftmaxOp([v], t(2, 8), {"beta": 1.0}))
    add(nn.LeakyReluOp([v], t(2, 8), {"alpha": 0.1}))
    add(nn.ClipOp([v], t(2, 8), {"min": -1.0, "max": 1.0}))
    add(nn.ConcatenationOp([v, add(nn.MulOp([v, const(1, 8)], t(2, 8)), keep=False)], t(4, 8), {"axis": 0}))
    add(nn.PadOp([fc], t(3, 7), {"paddings": [0, 1, 2, 0]}))
    add(nn.ReshapeOp([v], t(16)))
    add(nn.TransposeOp([v], t(8, 2), {"perm": [1, 0]}))
    add(nn.SliceOp([v], t(4), {"begin": [1, 7], "end": [2, -1], "strides": [1, -2]}))
    block.add_op(func.ReturnOp(*outs))
    module = ModuleOp([func.FuncOp("main", ([a.type for a in block.args], [o.type for o in outs]), Region(block))])
    verify_module(module)
    return module


def samples(n: int, seed: int):
    rng = np.random.default_rng(seed)
    return [[rng.normal(0, 1, (1, 6, 6, 4)).astype(np.float32), rng.normal(0, 1.5, (2, 8)).astype(np.float32)]
            for _ in range(n)]


@pytest.mark.parametrize("scheme, floor_db", [("int8", 15.0), ("int16x8", 25.0), ("int8-symmetric", 10.0)])
def test_every_op_quantizes_and_runs(scheme, floor_db):
    module = float_graph()
    result = quantize_float_module(module, samples(12, 0), load_strategy(scheme))
    worst = min(result.outputs_sqnr_db)
    assert worst > floor_db, [(k, round(v, 1)) for k, v in enumerate(result.outputs_sqnr_db)]
    names = {op.name for op in result.module.walk()}
    assert not any(n.startswith("nn.") for n in names)
    for sample in samples(2, 1):
        outs = run_module(result.module, sample)
        assert len(outs) == len(result.outputs_sqnr_db) and all(np.all(np.isfinite(o)) for o in outs)


def test_dead_layer_and_zero_weight_channel():
    """A relu that never fires (all-zero output in calibration) and an all-zero weight channel."""
    block = Block(arg_types=[t(1, 8)])
    (x,) = block.args
    w1 = nn.ConstantOp(np.ones((4, 8), np.float32), t(4, 8))
    b1 = nn.ConstantOp(np.full(4, -100.0, np.float32), t(4))
    w2 = np.random.default_rng(0).normal(0, 1, (3, 4)).astype(np.float32)
    w2[1] = 0.0
    c2 = nn.ConstantOp(w2, t(3, 4))
    b2 = nn.ConstantOp(np.array([0.5, -2.0, 1.0], np.float32), t(3))
    dead = nn.FullyConnectedOp([x, w1.result, b1.result], t(1, 4), {"act_min": 0.0})
    head = nn.FullyConnectedOp([dead.result, c2.result, b2.result], t(1, 3))
    for op in (w1, b1, c2, b2, dead, head):
        block.add_op(op)
    block.add_op(func.ReturnOp(head.result))
    module = ModuleOp([func.FuncOp("main", ([t(1, 8)], [t(1, 3)]), Region(block))])
    rng = np.random.default_rng(1)
    result = quantize_float_module(module, [[rng.normal(0, 1, (1, 8)).astype(np.float32)] for _ in range(8)],
                                   load_strategy("int8"))
    (y,) = run_module(result.module, [np.zeros((1, 8), np.float32)])
    np.testing.assert_allclose(y, [[0.5, -2.0, 1.0]], atol=0.03)  # the biases survive: no scale underflow
