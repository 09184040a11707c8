"""Held-out BERT encoders (issue 25): the paired requantization of an injective
kernel broke Relax's reshape check (`HasReshapePattern` needs a root block).
schedule._with_op_pattern keeps the block form of such kernels and carries the
op pattern of the others onto their lowered form."""

import pytest

tvm = pytest.importorskip("tvm")

from tvm import te  # noqa: E402

from tvm_bridge.schedule import _with_op_pattern  # noqa: E402

def test_injective_kernel_keeps_its_block_form():
    a = te.placeholder((8, 16), "int32", name="a")
    b = te.compute((8, 16), lambda i, j: a[i, j] * 3 + 1, name="b")
    f = te.create_prim_func([a, b])
    assert _with_op_pattern(f, f) is None

def test_reduction_kernel_carries_its_pattern():
    a = te.placeholder((8, 16), "int32", name="a")
    k = te.reduce_axis((0, 16), name="k")
    b = te.compute((8,), lambda i: te.sum(a[i, k], axis=k), name="b")
    f = te.create_prim_func([a, b])
    out = _with_op_pattern(f, f)
    assert out is not None and int(out.attrs["op_pattern"]) > 2
