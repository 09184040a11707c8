"""The fixed-point helpers of `transforms.linalg_build.Scalar` that read their operands once
(session 18): `srdhm` saturating with a min, `sat_shift_left` as a clamp and a shift, and
`clz32` as `math.ctlz`.  Each is built into an L3 function, run by the L3 interpreter and
compiled with TVM, and compared with the independent numpy references of gemmlowp's
functions (`qdialect.reference`) and with Python's `int.bit_length`, on edge values and
random int32 values.  Also: `tvm_bridge.schedule.fold_cast_chains`, the exact rewrite that
spares TVM's simplifier nested casts."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType, ModuleOp, TensorType
from xdsl.ir import Block, Region

from qdialect.interpreter import run_module
from qdialect.reference.activations import _sat_shift_left
from qdialect.reference.rescale import saturating_rounding_doubling_high_mul
from transforms.linalg_build import Lowering

I32 = IntegerType(32)
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1

_EDGES = [0, 1, -1, 2, -2, INT32_MIN, INT32_MIN + 1, INT32_MAX, INT32_MAX - 1, 1 << 30, -(1 << 30),
          (1 << 29) - 1, -(1 << 29), (1 << 29), (1 << 29) + 1, -(1 << 29) - 1, 255, 256, -256, 65535]


def _values(n_random: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rand = rng.integers(INT32_MIN, INT32_MAX, size=n_random, endpoint=True, dtype=np.int64)
    small = rng.integers(-(1 << 20), 1 << 20, size=n_random, dtype=np.int64)
    return np.concatenate([np.array(_EDGES, dtype=np.int64), rand, small]).astype(np.int32)


def _module(n: int, n_inputs: int, body) -> ModuleOp:
    """func @main(n_inputs x tensor<n x i32>) -> tensor<n x i32>: one elementwise generic whose
    body is `body(s, *i64 operands)` (its i64 result truncated to i32)."""
    t = TensorType(I32, [n])
    block = Block(arg_types=[t] * n_inputs)
    e = Lowering()

    def scalar(s, *args):
        return s.trunc(body(s, *[s.ext(a) for a in args[:-1]]), 32)

    out = e.elementwise(list(block.args), t, scalar)
    for op in e.ops:
        block.add_op(op)
    block.add_op(func.ReturnOp(out))
    return ModuleOp([func.FuncOp("main", ([t] * n_inputs, [t]), Region(block))])


def _both(module: ModuleOp, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The module's output from the L3 interpreter and from TVM."""
    from tvm_bridge.compile import compile_module

    interp = np.asarray(run_module(module, inputs)[0])
    compiled = np.asarray(compile_module(module, cache=False)(*inputs)[0])
    return [interp, compiled]


def test_srdhm_saturates_with_a_min():
    a = _values(3000, 1)
    b = np.roll(_values(3000, 2), 7)
    # every pairing of the edge values, where the saturating case lives
    edges = np.array(_EDGES, dtype=np.int32)
    a = np.concatenate([a, np.repeat(edges, len(edges))])
    b = np.concatenate([b, np.tile(edges, len(edges))])
    expected = saturating_rounding_doubling_high_mul(a, b).astype(np.int32)
    assert (a == INT32_MIN).any() and ((a == INT32_MIN) & (b == INT32_MIN)).any()
    for got in _both(_module(len(a), 2, lambda s, x, y: s.srdhm(x, y)), [a, b]):
        assert int((got != expected).sum()) == 0


@pytest.mark.parametrize("exponent", [1, 2, 5, 30])
def test_sat_shift_left_is_a_clamp_and_a_shift(exponent):
    x = _values(3000, 3 + exponent)
    bound = 1 << (31 - exponent)
    x = np.concatenate([x, np.array([bound, bound - 1, bound + 1, -bound, -bound + 1, -bound - 1],
                                    dtype=np.int64).clip(INT32_MIN, INT32_MAX).astype(np.int32)])
    expected = _sat_shift_left(x.astype(np.int64), exponent).astype(np.int32)
    assert (expected == INT32_MAX).any() and (expected == INT32_MIN).any()
    for got in _both(_module(len(x), 1, lambda s, v: s.sat_shift_left(v, exponent)), [x]):
        assert int((got != expected).sum()) == 0


def test_clz32_is_math_ctlz():
    x = _values(3000, 9)
    powers = np.array([1 << k for k in range(31)] + [-(1 << k) for k in range(32)], dtype=np.int64)
    x = np.concatenate([x, powers.astype(np.int32), (powers - 1).clip(INT32_MIN).astype(np.int32)])
    expected = np.array([32 - (int(v) & 0xFFFFFFFF).bit_length() for v in x], dtype=np.int32)
    module = _module(len(x), 1, lambda s, v: s.clz32(v))
    assert "math.ctlz" in str(module)
    assert "arith.cmpi" not in str(module)  # not the sum of 32 comparisons it replaced
    for got in _both(module, [x]):
        assert int((got != expected).sum()) == 0


def test_ctlz_on_i64_in_the_interpreter():
    from xdsl.dialects import math as mathd

    from qdialect.interp_standard import _ctlz

    i64 = IntegerType(64)
    op = mathd.CountLeadingZerosOp(Block(arg_types=[i64]).args[0])
    x = np.array([0, 1, -1, 1 << 40, (1 << 62), -(1 << 63), (1 << 53) + 1, 12345], dtype=np.int64)
    expected = [64 - (int(v) & ((1 << 64) - 1)).bit_length() for v in x]
    assert _ctlz(None, op, [x]).tolist() == expected


def _cast_chain_func():
    """A PrimFunc with casts nested as the translation writes them: i8 -> i32 -> i64 -> i32,
    an i16 value read through i64 and truncated to i8, and an unsigned and a narrowing
    inner cast the fold must keep (one output each)."""
    import tvm
    from tvm import te, tirx

    n = 256
    x = te.placeholder((n,), "int8", name="X")
    y = te.placeholder((n,), "int16", name="Y")
    chains = [
        lambda i: tirx.Cast("int32", tirx.Cast("int64", tirx.Cast("int32", x[i]))),  # -> Cast(int32, x)
        lambda i: tirx.Cast("int32", tirx.Cast("int8", tirx.Cast("int64", y[i]))),   # the i64 step folds
        lambda i: tirx.Cast("int32", tirx.Cast("uint16", x[i])),                     # unsigned: kept
        lambda i: tirx.Cast("int32", tirx.Cast("int8", y[i])),                       # narrowing inner: kept
    ]
    outs = [te.compute((n,), chain, name=f"O{k}") for k, chain in enumerate(chains)]
    return te.create_prim_func([x, y, *outs]), tvm


def test_fold_cast_chains_is_exact_and_shallower():
    from tvm_bridge.schedule import fold_cast_chains

    func, tvm = _cast_chain_func()
    folded = fold_cast_chains(func)
    text_before, text_after = func.script(), folded.script()
    assert text_before.count("T.Cast(") == 10
    # the first chain is one cast (3 -> 1); the second drops its i64 step (3 -> 2); the
    # unsigned and the narrowing inner casts stay (2 and 2)
    assert text_after.count("T.Cast(") == 7
    assert 'T.Cast("uint16"' in text_after and 'T.Cast("int64"' not in text_after
    x = np.arange(-128, 128, dtype=np.int8)
    y = (np.arange(256, dtype=np.int64) * 257 - 32768).astype(np.int16)
    expected = [x.astype(np.int32), y.astype(np.int8).astype(np.int32), x.astype(np.uint16).astype(np.int32),
                y.astype(np.int8).astype(np.int32)]
    for f in (func, folded):
        lib = tvm.compile(tvm.IRModule({"main": f}), target="llvm")
        outs = [tvm.runtime.tensor(np.zeros(256, np.int32)) for _ in expected]
        lib["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(y), *outs)
        for o, e in zip(outs, expected):
            assert int((o.numpy() != e).sum()) == 0


def test_folded_cast_builds_the_folded_chain():
    """The translation's `folded_cast` folds as the pass does, as it builds: i8 -> i64 -> i32
    is one cast, i8 -> i64 -> i8 is the value itself; an unsigned or a narrowing inner
    cast stays (whose bits the fold would change)."""
    from tvm import tirx

    from tvm_bridge.schedule import folded_cast

    x8, x16 = tirx.Var("x8", "int8"), tirx.Var("x16", "int16")
    assert folded_cast("int32", tirx.Cast("int64", x8)).script() == tirx.Cast("int32", x8).script()
    assert folded_cast("int8", tirx.Cast("int64", x8)).same_as(x8)
    kept = [folded_cast("int32", tirx.Cast("uint16", x8)), folded_cast("int32", tirx.Cast("int8", x16))]
    assert [k.value.script() for k in kept] == [tirx.Cast("uint16", x8).script(), tirx.Cast("int8", x16).script()]
