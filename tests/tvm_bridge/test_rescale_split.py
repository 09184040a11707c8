"""The `tflite` profile's ADD input rescale in 32-bit lanes (transforms/lower_to_linalg.py,
`_split32_plan`): on every pair of int8 inputs (256 x 256 elements, the whole domain of the
two rescales and their sum), the TVM build takes the 32-bit form and matches LiteRT's
reference kernels (BUILTIN_REF) bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from qdialect.builder import GraphBuilder
from qdialect.dialects.qnn import set_rounding
from qdialect.dialects.quant import UniformQuantizedType as Q
from qdialect.exporter.tflite import export_tflite
from transforms import lower_to_linalg
from transforms.pipelines import lower_to_l3
from tvm_bridge.compile import compile_module
from tvm_bridge.run_cli import litert_run, load_module


def _add_model(a_q, b_q, out_q, activation=None) -> bytes:
    g = GraphBuilder()
    a = g.input([1, 256, 256], a_q)
    b = g.input([1, 256, 256], b_q)
    g.output(g.add(a, b, out_q, activation=activation))
    return export_tflite(g.build())


@pytest.mark.parametrize("a_q, b_q, out_q, activation", [
    (Q.per_tensor(0.05, -3), Q.per_tensor(0.031, 7), Q.per_tensor(0.09, 2), None),
    (Q.per_tensor(0.0123, -128), Q.per_tensor(0.2, 127), Q.per_tensor(0.25, -20), "relu"),
    (Q.per_tensor(0.5, 0), Q.per_tensor(0.0071, -60), Q.per_tensor(0.4, 10), None),
])
def test_add_input_rescale_in_32_bits_is_bit_exact_on_every_input_pair(tmp_path, monkeypatch, a_q, b_q, out_q,
                                                                         activation):
    monkeypatch.setenv("QDIALECT_CACHE", "0")
    taken = []
    real = lower_to_linalg._split32_plan

    def plan(*args, **kwargs):
        made = real(*args, **kwargs)
        taken.append(made)
        return made

    monkeypatch.setattr(lower_to_linalg, "_split32_plan", plan)
    path = tmp_path / "add.tflite"
    path.write_bytes(_add_model(a_q, b_q, out_q, activation))
    module = load_module(path, batch=1)
    set_rounding(module, "tflite")
    lower_to_l3(module)
    assert any(t is not None for t in taken), "no input rescale took the 32-bit form"
    values = np.arange(-128, 128, dtype=np.int8)
    a = np.repeat(values, 256).reshape(1, 256, 256)  # a[i, j] = values[i]
    b = np.tile(values, 256).reshape(1, 256, 256)  # b[i, j] = values[j]: every pair once
    ours = compile_module(module)(a, b)[0]
    theirs = litert_run(path.read_bytes(), [[a, b]], reference=True)[0][0]
    assert ours.shape == theirs.shape
    assert int(np.count_nonzero(ours != theirs)) == 0


def test_plan_refuses_what_does_not_fit():
    """No 32-bit plan for per-channel multipliers, for inputs wider than 16 bits, for a
    power-of-two multiplier (one shift does it) or where d * (M >> S) would not fit."""
    plan = lower_to_linalg._split32_plan
    ok = plan([1795261357], [1024], [3072], [12], 10, -255, 255, 8)
    assert ok is not None and ok[0] == 1795261357 >> 12 and ok[-1] == 12
    assert plan([1795261357, 1795261358], [1024] * 2, [3072] * 2, [12] * 2, 10, -255, 255, 8) is None
    assert plan([1795261357], [1024], [3072], [12], 10, -(1 << 20), 1 << 20, 32) is None
    assert plan([1 << 30], [1024], [1024], [12], 10, -255, 255, 8) is None
    assert plan([1795261357], [1], [0], [1], 0, -32768, 32767, 16) is None


def _ops(module, cls, width: int):
    from xdsl.dialects.builtin import IntegerType

    return [op for op in module.walk() if isinstance(op, cls) and isinstance(op.result.type, IntegerType)
            and op.result.type.width.data == width]


@pytest.mark.parametrize("a_q, b_q, out_q, form", [
    # the output's scale is the larger input's: multiplier 2^30, right shift 18 (no product)
    (Q.per_tensor(0.05, -3), Q.per_tensor(0.031, 7), Q.per_tensor(0.05, 2), "pow2"),
    (Q.per_tensor(0.0123, -128), Q.per_tensor(0.2, 127), Q.per_tensor(0.2, -20), "pow2"),
    # a multiplier in (2^30, 2^31): the sign form (one 64-bit product, the sign in 32 bits)
    (Q.per_tensor(0.05, -3), Q.per_tensor(0.031, 7), Q.per_tensor(0.09, 2), "sign"),
])
def test_add_output_rescale_of_bounded_sums_is_bit_exact_on_every_input_pair(tmp_path, monkeypatch, a_q, b_q,
                                                                             out_q, form):
    """The ADD's output rescale reads the sum of its two input rescales, which its bound
    (lower_to_linalg.value_bound: int8 inputs << 20, scaled by at most 1/2) keeps below 2^29:
    with a multiplier of exactly 2^30 the double rounding is shifts and adds in 32 bits, with
    one in (2^30, 2^31) its sign test is the sum's sign (`_rescale_plan`'s pow2 / sign forms).
    Every pair of int8 inputs against LiteRT's reference kernels; the forms asserted on the
    L3 (no 64-bit multiply left for pow2; `x >> 31` in 32 bits for both)."""
    from xdsl.dialects import arith

    monkeypatch.setenv("QDIALECT_CACHE", "0")
    path = tmp_path / "add.tflite"
    path.write_bytes(_add_model(a_q, b_q, out_q))
    module = load_module(path, batch=1)
    set_rounding(module, "tflite")
    lower_to_l3(module)
    signs = [op for op in _ops(module, arith.ShRSIOp, 32)
             if isinstance(c := op.rhs.owner, arith.ConstantOp) and c.value.value.data == 31]
    assert signs, "no sign taken in 32 bits"
    assert bool(_ops(module, arith.MuliOp, 64)) == (form == "sign")
    values = np.arange(-128, 128, dtype=np.int8)
    a = np.repeat(values, 256).reshape(1, 256, 256)
    b = np.tile(values, 256).reshape(1, 256, 256)
    ours = compile_module(module)(a, b)[0]
    theirs = litert_run(path.read_bytes(), [[a, b]], reference=True)[0][0]
    assert int(np.count_nonzero(ours != theirs)) == 0
