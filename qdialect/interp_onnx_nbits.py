"""Interpreter recipe for ONNX Runtime's MatMulNBits: an `nn.fully_connected` marked `ort_nbits`
(a float activation times DequantizeLinear weights, which ORT's default session rewrites into
com.microsoft MatMulNBits, 8-bit, accuracy level 4).  The weights operand is a qnn.dequantize of
constant integers: its type gives the scales and zero points, and the integers are recovered
exactly from the dequantized values (`rint(w / scale)`, |q - zp| <= 255)."""

from __future__ import annotations

import numpy as np

from qdialect.dialects import nn, qnn
from qdialect.interp_onnx import _NN
from qdialect.reference import onnxruntime_nbits as nbits

F32 = np.float32


def _weights(op, w_f: np.ndarray):
    owner = getattr(op.operands[1], "owner", None)
    if not isinstance(owner, qnn.DequantizeOp):
        raise NotImplementedError("ort_nbits weights are not a qnn.dequantize of integers")
    q = qnn.qtype(owner.operands[0]).qparams()
    n = w_f.shape[0]
    scale = np.broadcast_to(np.asarray(q.scale, np.float64).reshape(-1), (n,)).astype(F32)
    zp = np.broadcast_to(np.asarray(q.zero_point, np.int64).reshape(-1), (n,))
    centred = np.rint(w_f.astype(np.float64) / scale[:, None].astype(np.float64)).astype(np.int64)
    stored = centred + zp[:, None]
    dtype = np.int8 if q.storage_min < 0 else np.uint8
    return nbits.blockwise_weights(stored.T.astype(dtype), scale, zp.astype(dtype), 1)


def _wrap(base):
    def recipe(op, args):
        if op.attr("ort_nbits", None) is None:
            if base is None:
                raise NotImplementedError("nn.fully_connected without a recipe")
            return base(op, args)
        try:
            w_u8, scale, zp = _weights(op, np.asarray(args[1], F32))
            bias = np.asarray(args[2], F32) if len(args) > 2 else None
            return nbits.matmul_nbits(np.asarray(args[0], F32), w_u8, scale, zp, bias)
        except nbits.NbitsUnsupported as e:
            raise NotImplementedError(str(e)) from None

    return recipe


_NN[nn.FullyConnectedOp] = _wrap(_NN.get(nn.FullyConnectedOp))
