"""Quantized ONNX models end to end through TVM, bit-exact with ONNX Runtime.

import (QDQ or QOperator) -> qnn-canonicalize -> qnn-decompose (the ONNX
profiles' recipes, transforms/decompose_onnx.py) -> qnn-lower-to-linalg ->
Relax -> tvm.compile -> run, against ORT's default session (`onnxruntime`)
and, for the models whose `onnx` profile lowers, against ORT with graph
optimizations disabled.  Also the ORT-specific lowerings on the adversarial
inputs of one-op models: ties of QLinearAdd / QLinearMul tables, softmax rows.
"""

from __future__ import annotations

import numpy as np
import pytest

from qdialect.importer.onnx import import_onnx_file
from qdialect.interpreter import Interpreter
from tests.onnx_helpers import differing, inputs_for, model, ort_run
from transforms.pipelines import lower_to_l3
from tvm_bridge.compile import compile_module

SAMPLES = 3

# every model family and op the onnxruntime profile lowers, both spellings, both activation types
ORT_MODELS = [
    "cnn_qdq_u8", "cnn_qop_s8", "cnn_qdq_u8_rr", "cnn_qdq_u8w", "cnn_qop_u8w", "cnn_qdq_s8",
    "mobilenetv2_qdq_u8", "mobilenetv2_qop_s8", "mobilenetv2_qop_u8",
    "mlp_qdq_s8", "mlp_qop_u8",
    "op_conv_grouped_qdq_u8", "op_conv_s2_asym_qop_s8", "op_gemm_qdq_s8", "op_matmul_qop_u8",
    "op_add_bcast_qdq_s8", "op_mul_qop_u8", "op_sigmoid_qdq_u8", "op_leakyrelu_qop_s8", "op_concat_qdq_u8",
    "op_softmax_qop_s8", "op_lrelu_maxpool_qdq_u8", "op_lrelu_globalavgpool_qop_u8", "op_hardswish_qdq_s8",
    "op_avgpool_cip0_qdq_s8", "op_avgpool_cip1_qop_u8", "op_matmul_acts_qdq_u8", "op_matmul_acts_qop_s8",
    "op_lrelu_resize_qdq_s8", "op_lrelu_resize_qop_u8",
]
# models whose every op lowers in the `onnx` profile too (tables, data movement)
ONNX_MODELS = ["op_add_bcast_qdq_u8", "op_mul_qdq_s8", "op_sigmoid_qdq_s8", "op_hardswish_qdq_u8",
               "op_concat_qdq_s8", "op_lrelu_transpose_qdq_u8", "op_lrelu_resize_qdq_u8"]


def _run_tvm(name: str, profile: str):
    path = model(name)
    module = import_onnx_file(path, profile=profile)
    samples = [inputs_for(module, seed) for seed in range(SAMPLES)]
    out_dtypes = [Interpreter._dtype(v) for v in Interpreter(module).entry().get_return_op().operands]
    lower_to_l3(module)
    compiled = compile_module(module)
    total = None
    for inputs in samples:
        ours = [o.view(d) if o.dtype != d and o.dtype.itemsize == d.itemsize else o
                for o, d in zip(compiled(*inputs), out_dtypes)]
        theirs = ort_run(path, inputs, disable_all=profile == "onnx")
        d = differing(ours, theirs)
        total = d if total is None else [a + b for a, b in zip(total, d)]
    return total


@pytest.mark.parametrize("name", ORT_MODELS)
def test_tvm_matches_onnxruntime_default_session(name):
    counts = _run_tvm(name, "onnxruntime")
    assert sum(counts) == 0, f"differing elements per output: {counts}"


@pytest.mark.parametrize("name", ONNX_MODELS)
def test_tvm_matches_onnxruntime_without_optimizations(name):
    counts = _run_tvm(name, "onnx")
    assert sum(counts) == 0, f"differing elements per output: {counts}"


def test_binary_tables_on_every_pair_of_stored_values():
    """QLinearAdd's 65536-entry table, through TVM, on all (a, b) byte pairs at once."""
    from qdialect.reference import onnxruntime_kernels as ort

    module = import_onnx_file(model("op_add_bcast_qop_u8"))
    add = next(op for op in module.walk() if op.name == "qnn.add")
    a_q, b_q = (Interpreter._dtype(v) for v in add.operands)
    assert a_q == np.uint8 and b_q == np.uint8
    from qdialect.builder import GraphBuilder

    qa, qb, qo = (qn.type.element_type for qn in (*add.operands, add.results[0]))
    g = GraphBuilder()
    x = g.input([256, 256], qa)
    y = g.input([256, 256], qb)
    g.output(g.add(x, y, qo, rounding="onnxruntime"))
    built = g.build()
    a = np.repeat(np.arange(256, dtype=np.uint8), 256).reshape(256, 256)
    b = np.tile(np.arange(256, dtype=np.uint8), 256).reshape(256, 256)
    expected = ort.qlinear_add(a, b, a_q=qa.qparams(), b_q=qb.qparams(), out_q=qo.qparams())
    lower_to_l3(built)
    got = compile_module(built)(a, b)[0].view(np.uint8)
    assert np.array_equal(got, expected)
