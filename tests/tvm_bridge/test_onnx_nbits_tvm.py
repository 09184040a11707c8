"""ONNX Runtime's MatMulNBits (8-bit weights, block 32, accuracy level 4, AVX-512 VNNI) through TVM:
one-node models as tests/importer/test_onnx_nbits.py builds them, imported in the default profile
(nn.fully_connected ort_nbits), lowered by transforms/float_nbits.py, compiled by TVM, against ORT
1.32's default session: 0 differing float32 bits.  On a CPU without AVX-512 VNNI the importer
refuses the model by name, and the test checks that refusal instead."""

from __future__ import annotations

import numpy as np
import pytest

from qdialect.dialects import nn
from qdialect.importer.onnx import OnnxImportError, import_onnx
from tests.importer.test_onnx_nbits import ON_RECIPE, _model, _ort
from transforms.pipelines import lower_to_l3
from tvm_bridge.compile import compile_module

F32 = np.float32

# (K, N, rows, signed, per_channel, bias): K below / at / above one group of four blocks, K % 32 != 0
# and K % 128 != 0; N % 4 != 0 (the C1 columns)
CASES = [
    (48, 10, 3, True, True, True),
    (100, 8, 1, False, False, False),
    (128, 12, 4, True, False, True),
    (300, 13, 5, False, True, True),
    (520, 6, 2, True, True, False),
]


@pytest.mark.parametrize("k,n,rows,signed,per_channel,with_bias", CASES)
def test_matmul_nbits_on_tvm_bit_exact(k, n, rows, signed, per_channel, with_bias):
    m, *_ = _model(k, n, signed, per_channel, with_bias, seed=k + n, rows=rows)
    data = m.SerializeToString()
    if not ON_RECIPE:
        with pytest.raises(OnnxImportError, match="MatMulNBits"):
            import_onnx(data, profile="onnxruntime")
        return
    module = import_onnx(data, profile="onnxruntime")
    fcs = [op for op in module.walk() if isinstance(op, nn.FullyConnectedOp)]
    assert len(fcs) == 1 and fcs[0].attr("ort_nbits") == "avx512vnni"
    lower_to_l3(module)
    assert not any(isinstance(op, nn.FullyConnectedOp) for op in module.walk())
    compiled = compile_module(module)
    rng = np.random.default_rng(k * n)
    total = 0
    for scale in (1.0, 30.0):
        x = (rng.standard_normal((rows, k)) * scale).astype(F32)
        x[0, :min(k, 40)] = 0.0  # a block of zeros (amax = 0)
        (ours,) = [np.asarray(o) for o in compiled(x)]
        theirs = _ort(m, x)
        assert ours.shape == theirs.shape and ours.dtype == np.float32
        total += int((ours.view(np.int32) != theirs.view(np.int32)).sum())
    assert total == 0, f"{total} output elements differ from ONNX Runtime's default session"
