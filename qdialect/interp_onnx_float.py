"""Interpreter recipes for the float ops of quantized transformer encoders (ONNX profiles).

Registered into `interp_onnx`'s float-island table (`nn` ops marked
`qnn.rounding = "onnx"`): Div and Sqrt are IEEE float32 operations; Erf and
LayerNormalization are ONNX Runtime's own kernels
(`qdialect.reference.onnxruntime_float`: MLAS's erf, MLAS's AVX2 layer norm);
a MatMul of a float activation and constant weights (ORT_DISABLE_ALL) is MLAS's
unpacked SGEMM.
ReduceMean over leading axes takes ORT's RK path (`reduce_mean_rk_f32`)
before the KR path `interp_onnx` models.  ORT's com.microsoft Gelu is imported as `x * M_SQRT1_2 -> erf -> + 1 ->
* (0.5 * x)`, so it needs no recipe of its own.
"""

from __future__ import annotations

import numpy as np

from qdialect.dialects import nn, qnn
from qdialect.interp_onnx import _FLOAT, _NN, _nn_recipe, _operands_f32, _requant
from qdialect.reference import onnxruntime_float as orf
from qdialect.reference import onnxruntime_kernels as ort

F32 = np.float32


@_nn_recipe(nn.DivOp)
def _nn_div(op, args):
    a, b = (np.asarray(v, F32) for v in args)
    with np.errstate(all="ignore"):
        return np.divide(a, b).astype(F32)


@_nn_recipe(nn.SqrtOp)
def _nn_sqrt(op, args):
    with np.errstate(all="ignore"):
        return np.sqrt(np.asarray(args[0], F32)).astype(F32)


@_nn_recipe(nn.ErfOp)
def _nn_erf(op, args):
    x = np.asarray(args[0], F32)
    uniq, inv = np.unique(x.reshape(-1), return_inverse=True)
    return orf.mlas_erf(uniq)[inv].reshape(x.shape)


@_nn_recipe(nn.BatchMatmulOp)
def _nn_matmul(op, args):
    """ORT's float MatMul of a float activation and DequantizeLinear weights (ORT_DISABLE_ALL): B is
    a node's output, not an initializer, so MLAS does not prepack it (measured: the unpacked path
    matches on M = 1 and K = 300, where the packed one differs)."""
    a, b = (np.asarray(v, F32) for v in args)
    return ort.mlas_matmul_f32(a, b, const_b=False)


@_nn_recipe(nn.LayerNormOp)
def _nn_layer_norm(op, args):
    x = np.asarray(args[0], F32)
    bias = args[2] if len(args) > 2 else None
    with np.errstate(all="ignore"):
        return orf.layer_norm(x, args[1], bias, op.attr("axis"), F32(op.attr("epsilon")))


# ReduceMean over leading axes (the tokens of [1, tokens, dim]): ORT's RK fast path, before the
# KR path the ONNX profiles' recipes model
def _with_rk_mean(base, quantized: bool):
    def recipe(op, args):
        x = _operands_f32(op, args)[0] if quantized else np.asarray(args[0], F32)
        axes = tuple(a % x.ndim for a in op.attr("axes"))
        y = orf.reduce_mean_rk_f32(x, axes, bool(op.attr("keep_dims", False)))
        if y is None:
            return base(op, args)
        return _requant(op, y) if quantized else y

    return recipe


_FLOAT[qnn.MeanOp] = _with_rk_mean(_FLOAT[qnn.MeanOp], quantized=True)
_NN[nn.MeanOp] = _with_rk_mean(_NN[nn.MeanOp], quantized=False)
