"""Float <-> quantized at a graph's edges, for `qnn-decompose`: `quant.qcast`,
`quant.dcast`, `qnn.quantize` (float input) and `qnn.dequantize`.

A quantized module that keeps a float model's interface (what `qd-quantize`
writes by default, as TFLite's converter does with float I/O) starts and ends
with these casts.  They decompose straight into elementwise `linalg.generic`
ops whose arith bodies reproduce `qdialect.reference.elementwise.quantize` /
`dequantize` bit for bit:

- quantize, `tflite` (TFLite AffineQuantize): `v = float32(x) / float32(s)`;
  values outside [-2^31, 2^31) and NaN become INT32_MIN; else round half away
  from zero; `+ z` wrapped to 32 bits; clamp to the storage range.
  `half_even`: ties to even; `single` / `half_up`: `floor(v + 0.5)`;
  `litert` for 8-bit per-tensor (XNNPACK's f32-qs8 cvt): `v = x * float32(1/s)`
  clamped to [min - z, max - z] (NaN to the lower bound), ties to even, `+ z`.
  `onnxruntime` / `onnx` (ORT's MlasQuantizeLinear): the same with `v = x / s`.
- dequantize: `float32(double(s) * (x - z))`.

Per-axis scales and zero points travel as 1-D constant operands indexed by the
axis.  The 16-bit `litert` quantize (position-dependent vector blocks in LiteRT)
is refused.  Registered into `transforms.decompositions.DECOMPOSITIONS` on import.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, Float32Type, TensorType, f32, f64
from xdsl.ir import SSAValue

from qdialect.dialects import qnn
from qdialect.dialects.quant import DequantizeCastOp, QuantizeCastOp, quantized_element_type
from transforms.decompositions import DECOMPOSITIONS
from transforms.emit import Emitter, Unsupported, storage_type
from transforms.linalg_build import I64, Lowering, Scalar, amap, dim, identity

INT32_MIN = -(1 << 31)


def _float_constant(e: Lowering, values: np.ndarray, ftype) -> SSAValue:
    arr = np.ascontiguousarray(values.astype(np.float32 if ftype == f32 else np.float64))
    t = TensorType(ftype, [arr.size])
    return e.add(arith.ConstantOp(DenseIntOrFPElementsAttr(t, BytesAttr(arr.tobytes())), t))


def _params(e: Lowering, q, rank: int, inputs: list, maps: list, scales: np.ndarray, ftype):
    """(scale parameter, zero-point parameter): literals, or indices of extra operands."""
    zps = np.asarray(q.zero_point_array(), np.int64).reshape(-1)
    scales = scales.reshape(-1)
    if scales.size == 1 and zps.size == 1:
        return ("value", float(scales[0])), ("value", int(zps[0]))
    axis = q.axis if q.is_per_axis else rank - 1
    m = amap(rank, [dim(axis)])
    inputs.append(_float_constant(e, scales, ftype))
    maps.append(m)
    s_ref = ("operand", len(inputs) - 1)
    inputs.append(e.constant(zps, 64))
    maps.append(m)
    return s_ref, ("operand", len(inputs) - 1)


def _get(s: Scalar, args, ref, ftype=None):
    kind, v = ref
    if kind == "operand":
        return args[v]
    return s.const(v, ftype) if ftype is not None else v


def quantize(e: Emitter, x: SSAValue, result_type, rounding: str) -> SSAValue:
    """Float tensor -> stored integers of `result_type` (a quantized tensor type)."""
    q = quantized_element_type(result_type)
    if not isinstance(x.type.element_type, Float32Type):
        raise Unsupported(f"quantize from {x.type.element_type} (only f32 inputs)")
    qp = q.qparams()
    lo, hi = int(qp.storage_min), int(qp.storage_max)
    out_t = storage_type(result_type)
    out_w = out_t.element_type.width.data
    rank = len(out_t.get_shape())
    low = Lowering()
    inputs, maps = [x], [identity(rank)]
    litert8 = rounding == "litert" and not q.is_per_axis and qp.bits == 8
    # ONNX Runtime's MlasQuantizeLinear: x / s, clamp to [lo - z, hi - z] (NaN: lo - z), ties to even, + z
    mlas = rounding in ("onnxruntime", "onnx")
    if rounding == "litert" and not litert8:
        if not q.is_per_axis and qp.bits == 16 and qp.signed:
            raise Unsupported("16-bit quantize with rounding 'litert' (LiteRT's position-dependent vector blocks)")
        rounding = "tflite"
    scales = np.asarray(q.scale_array(), np.float32)
    if litert8:
        scales = (np.float32(1.0) / scales).astype(np.float32)
    s_ref, z_ref = _params(low, q, rank, inputs, maps, scales, f32)

    def body(s: Scalar, *args):
        v, scale, z = args[0], _get(s, args, s_ref, f32), _get(s, args, z_ref)
        zf = s.emit(arith.SIToFPOp(s.v(z), f32))
        if litert8 or mlas:
            v = s.emit(arith.DivfOp(v, scale) if mlas else arith.MulfOp(v, scale))
            lo_f = s.emit(arith.SubfOp(s.const(float(lo), f32), zf))
            hi_f = s.emit(arith.SubfOp(s.const(float(hi), f32), zf))
            nan = s.emit(arith.CmpfOp(v, v, "uno"))
            v = s.emit(arith.MinimumfOp(s.emit(arith.MaximumfOp(v, lo_f)), hi_f))
            v = s.emit(arith.SelectOp(nan, lo_f, v))
            r = s.add(s.round_half_even(v), z)
            return s.trunc(s.clamp(r, lo, hi), out_w)
        v = s.emit(arith.DivfOp(v, scale))
        ok = s.emit(arith.AndIOp(s.emit(arith.CmpfOp(v, s.const(2.0**31, f32), "olt")),
                                 s.emit(arith.CmpfOp(v, s.const(-(2.0**31), f32), "oge"))))
        safe = s.emit(arith.SelectOp(ok, v, s.const(0.0, f32)))
        if rounding == "half_even":
            r = s.round_half_even(safe)
        elif rounding in ("single", "half_up"):
            w = s.emit(arith.AddfOp(s.emit(arith.ExtFOp(safe, f64)), s.const(0.5, f64)))
            t = s.emit(arith.FPToSIOp(w, I64))
            below = s.emit(arith.CmpfOp(w, s.emit(arith.SIToFPOp(t, f64)), "olt"))
            r = s.sub(t, s.bool_to_int(below))
        else:
            r = s.round_half_away(safe)
        r = s.select(ok, r, INT32_MIN)
        r = s.wrap(s.add(r, z), 32)
        return s.trunc(s.clamp(r, lo, hi), out_w)

    value = low.generic(inputs, maps, out_t, identity(rank), body)
    e.ops.extend(low.ops)
    return e.quantized(value, result_type)


def dequantize(e: Emitter, x: SSAValue, result_type) -> SSAValue:
    """Stored integers of a quantized tensor -> float32: float32(double(s) * (x - z))."""
    q = quantized_element_type(x.type)
    if not isinstance(result_type.element_type, Float32Type):
        raise Unsupported(f"dequantize to {result_type.element_type} (only f32 results)")
    stored = e.storage(x)
    unsigned = not q.qparams().signed
    rank = len(result_type.get_shape())
    low = Lowering()
    inputs, maps = [stored], [identity(rank)]
    scales = np.asarray(q.scale_array(), np.float32).astype(np.float64)
    s_ref, z_ref = _params(low, q, rank, inputs, maps, scales, f64)

    def body(s: Scalar, *args):
        v = s.sub(s.ext(args[0], 64, unsigned), _get(s, args, z_ref))
        y = s.emit(arith.MulfOp(_get(s, args, s_ref, f64), s.emit(arith.SIToFPOp(v, f64))))
        return s.emit(arith.TruncFOp(y, f32))

    value = low.generic(inputs, maps, TensorType(f32, result_type.get_shape()), identity(rank), body)
    e.ops.extend(low.ops)
    return value


def _qcast(e: Emitter, op: QuantizeCastOp) -> SSAValue:
    _lowerable(op.result.type)
    return quantize(e, op.input, op.result.type, "tflite")


def _dcast(e: Emitter, op: DequantizeCastOp) -> SSAValue:
    _lowerable(op.input.type)
    return dequantize(e, op.input, op.result.type)


def _lowerable(t) -> None:
    """Refuse, by name, the quant cast types MLIR accepts that this lowering does not take."""
    q = quantized_element_type(t)
    if q is None:
        raise Unsupported(f"{t} has no scale and zero point (a !quant.any or !quant.calibrated type)")
    if q.is_sub_channel:
        raise Unsupported(f"sub-channel (block-wise) scales of {t} are not lowered (the interpreter runs them)")
    if q.storage_width.data < 2:
        raise Unsupported(f"1-bit storage of {t} is not lowered (the interpreter runs it)")


def _qnn_quantize(e: Emitter, op: qnn.QuantizeOp) -> SSAValue:
    x = op.operands[0]
    if quantized_element_type(x.type) is not None:
        raise Unsupported("qnn.quantize between quantized types (canonicalize it into qnn.requantize first)")
    return quantize(e, x, op.results[0].type, op.attr("rounding", "tflite") or "tflite")


def _qnn_dequantize(e: Emitter, op: qnn.DequantizeOp) -> SSAValue:
    return dequantize(e, op.operands[0], op.results[0].type)


DECOMPOSITIONS.update({
    QuantizeCastOp: _qcast,
    DequantizeCastOp: _dcast,
    qnn.QuantizeOp: _qnn_quantize,
    qnn.DequantizeOp: _qnn_dequantize,
})
