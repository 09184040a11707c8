"""Interpreter recipes for the float ops of quantized transformer encoders (ONNX profiles).

Registered into `interp_onnx`'s float-island table (`nn` ops marked
`qnn.rounding = "onnx"`): Div and Sqrt are IEEE float32 operations; Erf and
LayerNormalization are ONNX Runtime's own kernels
(`qdialect.reference.onnxruntime_float`: MLAS's erf, MLAS's AVX2 layer norm).
ORT's com.microsoft Gelu is imported as `x * M_SQRT1_2 -> erf -> + 1 ->
* (0.5 * x)`, so it needs no recipe of its own.
"""

from __future__ import annotations

import numpy as np

from qdialect.dialects import nn
from qdialect.interp_onnx import _nn_recipe
from qdialect.reference import onnxruntime_float as orf

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


@_nn_recipe(nn.LayerNormOp)
def _nn_layer_norm(op, args):
    x = np.asarray(args[0], F32)
    bias = args[2] if len(args) > 2 else None
    with np.errstate(all="ignore"):
        return orf.layer_norm(x, args[1], bias, op.attr("axis"), F32(op.attr("epsilon")))
