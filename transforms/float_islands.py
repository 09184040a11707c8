"""Float islands of ONNX models, for `qnn-decompose`: `nn` ops marked `qnn.rounding = "onnx"`
(ops ONNX Runtime computes in float whose results are not quantized), lowered straight to L3
(linalg.generic with arith / math.fma bodies, tensor movement ops) bit for bit as
`qdialect.interp_onnx.evaluate_nn` computes them; and the `onnx` profile's binary ops on
activations wider than 8 bits (`decompose_onnx.FLOAT_LOWERINGS`).

| op (float32) | L3 |
| --- | --- |
| nn.constant | arith.constant dense |
| nn.add / sub / mul | one float32 op per element, numpy broadcasting maps |
| nn.relu / nn.clip | numpy's maximum / minimum: `a > b or a is NaN ? a : b` (so -0 / +0 ties and NaN as numpy) |
| nn.tanh | `ort.mlas_tanh` (MlasComputeTanhF32KernelFma3): clamp to [-9, 9], `x2 = v*v`, math.fma chains for p and q, `v*p`, `p / q` |
| nn.logistic | `ort.mlas_logistic` (MlasLogisticKernelFma3): clamp to [-18, 18], math.fma chains, `v*p`, `p / q + 0.5`, `max(., 0)` |
| nn.reshape / transpose / slice / concatenation / pad | tensor.collapse/expand_shape, linalg.transpose, tensor.extract_slice, tensor.concat, tensor.pad |
| nn.max_pool2d | tensor.pad with -inf, one generic over the taps' strided slices, numpy maximum in (ky, kx) order |
| qnn.add / sub / mul, `onnx`, wider than 8 bits | `f32(q - zp) * s` per operand, the float op, QuantizeLinear (`x / s`, clamp to [lo - zp, hi - zp], NaN to lo - zp, ties to even, `+ zp`), act_min / act_max |

A float product that an add could follow (in the same generic, or in one TVM fuses with it)
goes through `_unfused`: a clamp to the finite range that is a no-op on every value (non-finite
values bypass it), so LLVM cannot contract the multiply and the add into one fused
multiply-add.  The fused multiply-adds MLAS does use are `math.fma` (TVM: `llvm.fma`).

nn.constant / add / sub / mul and the movement ops also lower outside ONNX models (a TFLite model's
float island between DEQUANTIZE and QUANTIZE: each is one correctly rounded float32 operation per
element, or a move, the same in every float kernel); the others only in ONNX models.

Not lowered here (another module's, or refused by name): nn.softmax, nn.avg_pool2d, nn.mean;
nn ops with a fused act_min / act_max; float types other than f32.  Registered into
`transforms.decompose.DECOMPOSITIONS` on import.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith, tensor
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, FloatAttr, Float32Type, TensorType, f32
from xdsl.ir import SSAValue

from qdialect.dialects import nn, qnn
from qdialect.qparams import ONNX_ROUNDINGS
from qdialect.reference import onnxruntime_kernels as ort
from transforms import decompose, decompose_onnx
from transforms.decompose import Emitter, Unsupported, int_tensor, qp
from transforms.lower_to_linalg import Lowering, Scalar, broadcast_map, identity

F32 = np.float32
FLT_MAX = float(np.finfo(np.float32).max)


# ----- scalar helpers (numpy's float32 semantics) ------------------------------------------------


def _isnan(s: Scalar, a: SSAValue) -> SSAValue:
    return s.emit(arith.CmpfOp(a, a, "uno"))


def np_maximum(s: Scalar, a: SSAValue, b: SSAValue) -> SSAValue:
    """numpy.maximum(a, b) on float32: `a > b or isnan(a) ? a : b` (NaN propagates; of two
    equal values, -0 and +0, the second)."""
    take_a = s.emit(arith.OrIOp(s.emit(arith.CmpfOp(a, b, "ogt")), _isnan(s, a)))
    return s.emit(arith.SelectOp(take_a, a, b))


def np_minimum(s: Scalar, a: SSAValue, b: SSAValue) -> SSAValue:
    """numpy.minimum(a, b) on float32: `a < b or isnan(a) ? a : b`."""
    take_a = s.emit(arith.OrIOp(s.emit(arith.CmpfOp(a, b, "olt")), _isnan(s, a)))
    return s.emit(arith.SelectOp(take_a, a, b))


_unfused = decompose_onnx.no_contract


def _mul(s: Scalar, a: SSAValue, b: SSAValue) -> SSAValue:
    return _unfused(s, s.emit(arith.MulfOp(a, b)))


def _fma(s: Scalar, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
    return s.emit(mathd.FmaOp(a, b, c))


def _k(s: Scalar, value: float) -> SSAValue:
    return s.const(float(F32(value)), f32)


def mlas_tanh(s: Scalar, x: SSAValue) -> SSAValue:
    """`ort.mlas_tanh` of one float32."""
    k = ort._TANH
    v = np_minimum(s, np_maximum(s, x, _k(s, k["lower"])), _k(s, k["upper"]))
    x2 = _mul(s, v, v)
    p = _fma(s, x2, _k(s, k["alpha_13"]), _k(s, k["alpha_11"]))
    for c in ("alpha_9", "alpha_7", "alpha_5", "alpha_3", "alpha_1"):
        p = _fma(s, x2, p, _k(s, k[c]))
    p = _mul(s, v, p)
    q = _fma(s, x2, _k(s, k["beta_6"]), _k(s, k["beta_4"]))
    for c in ("beta_2", "beta_0"):
        q = _fma(s, x2, q, _k(s, k[c]))
    return s.emit(arith.DivfOp(p, q))


def mlas_logistic(s: Scalar, x: SSAValue) -> SSAValue:
    """`ort.mlas_logistic` of one float32: every step rounded to float32 once, as its exact
    (Fraction) emulation does; its clamp is Python's max / min (NaN stays NaN)."""
    k = ort._LOGISTIC
    v = np_minimum(s, np_maximum(s, x, _k(s, k["lower"])), _k(s, k["upper"]))
    x2 = _mul(s, v, v)
    p = _fma(s, x2, _k(s, k["alpha_9"]), _k(s, k["alpha_7"]))
    for c in ("alpha_5", "alpha_3", "alpha_1"):
        p = _fma(s, x2, p, _k(s, k[c]))
    q = _fma(s, x2, _k(s, k["beta_10"]), _k(s, k["beta_8"]))
    for c in ("beta_6", "beta_4", "beta_2", "beta_0"):
        q = _fma(s, x2, q, _k(s, k[c]))
    p = _mul(s, v, p)
    r = s.emit(arith.AddfOp(s.emit(arith.DivfOp(p, q)), s.const(0.5, f32)))
    zero = s.const(0.0, f32)
    return s.emit(arith.SelectOp(s.emit(arith.CmpfOp(r, zero, "ogt")), r, zero))


# ----- the nn float islands --------------------------------------------------------------------


def _is_island(op) -> bool:
    hint = op.attributes.get("qnn.rounding")
    return getattr(hint, "data", None) in ONNX_ROUNDINGS


def _is_f32(v: SSAValue) -> bool:
    t = v.type
    return isinstance(t, TensorType) and isinstance(t.element_type, Float32Type)


def _check(op, anywhere: bool = False):
    """`anywhere`: the op is one correctly rounded float32 operation per element (add, sub, mul)
    or moves values: every float kernel computes it the same, so a TFLite model's float island
    (LiteRT's reference kernels or XNNPACK: the NEG of a layer norm as `x * -1.0`) lowers too."""
    if not _is_island(op) and not anywhere:
        raise Unsupported(f"{op.name} that is not an ONNX float island (no qnn.rounding = \"onnx\"); "
                          "a float model's nn ops are not lowered")
    for v in (*op.operands, *op.results):
        if not _is_f32(v):
            raise Unsupported(f"{op.name} on {v.type} (float islands lower on float32 tensors only)")
    if "act_min" in op.ATTRS and (op.attr("act_min", None) is not None or op.attr("act_max", None) is not None):
        raise Unsupported(f"{op.name} with a fused act_min / act_max")


def _shape(v: SSAValue) -> list[int]:
    return list(v.type.get_shape())


def _emit_generic(e: Emitter, inputs, maps, out_type, body) -> SSAValue:
    low = Lowering()
    rank = len(out_type.get_shape())
    out = low.generic(inputs, maps, out_type, identity(rank), body)
    e.ops.extend(low.ops)
    return out


def _elementwise(e: Emitter, op, body) -> SSAValue:
    out_t = op.results[0].type
    shape = _shape(op.results[0])
    maps = [broadcast_map(_shape(v), shape) for v in op.operands]
    return _emit_generic(e, list(op.operands), maps, out_t, body)


def lower_constant(e: Emitter, op) -> SSAValue:
    t = op.results[0].type
    if not _is_f32(op.results[0]):
        raise Unsupported(f"nn.constant of {t} (float islands lower float32 constants only)")
    arr = np.array(op.array(), F32, order="C").reshape(t.get_shape())  # (ascontiguousarray makes rank 0 rank 1)
    return e.add(arith.ConstantOp(DenseIntOrFPElementsAttr(TensorType(f32, list(arr.shape)), BytesAttr(arr.tobytes())), t))


_BINARY = {nn.AddOp: arith.AddfOp, nn.SubOp: arith.SubfOp, nn.MulOp: arith.MulfOp}


def lower_binary(e: Emitter, op) -> SSAValue:
    _check(op, anywhere=True)
    cls = _BINARY[type(op)]
    if cls is arith.MulfOp:
        return _elementwise(e, op, lambda s, a, b, _o: _mul(s, a, b))
    return _elementwise(e, op, lambda s, a, b, _o: s.emit(cls(a, b)))


def lower_relu(e: Emitter, op) -> SSAValue:
    _check(op)
    return _elementwise(e, op, lambda s, a, _o: np_maximum(s, a, s.const(0.0, f32)))


def lower_clip(e: Emitter, op) -> SSAValue:
    _check(op)
    lo, hi = op.attr("min", None), op.attr("max", None)

    def body(s, a, _o):
        if lo is not None:
            a = np_maximum(s, a, _k(s, lo))
        if hi is not None:
            a = np_minimum(s, a, _k(s, hi))
        return a

    if lo is None and hi is None:
        return op.operands[0]
    return _elementwise(e, op, body)


def lower_tanh(e: Emitter, op) -> SSAValue:
    _check(op)
    return _elementwise(e, op, lambda s, a, _o: mlas_tanh(s, a))


def lower_logistic(e: Emitter, op) -> SSAValue:
    _check(op)
    return _elementwise(e, op, lambda s, a, _o: mlas_logistic(s, a))


def lower_reshape(e: Emitter, op) -> SSAValue:
    _check(op)
    return e.reshape(op.operands[0], _shape(op.results[0]))


def lower_transpose(e: Emitter, op) -> SSAValue:
    _check(op)
    return decompose.decompose_transpose(e, op)


def lower_slice(e: Emitter, op) -> SSAValue:
    _check(op)
    shape = _shape(op.operands[0])
    begin, end = op.attr("begin"), op.attr("end")
    if any(b < 0 or b > d for b, d in zip(begin, shape)):
        raise Unsupported(f"nn.slice with begin {list(begin)} outside {shape}")
    return decompose.decompose_slice(e, op)


def lower_concat(e: Emitter, op) -> SSAValue:
    _check(op)
    xs = list(op.operands)
    if len(xs) == 1:
        return xs[0]
    rank = len(_shape(op.results[0]))
    return e.add(tensor.ConcatOp(xs, op.attr("axis") % rank, op.results[0].type))


def _pad(e: Emitter, x: SSAValue, low, high, value: float, result_type) -> SSAValue:
    c = e.add(arith.ConstantOp(FloatAttr(float(value), f32), f32))
    return e.add(decompose.pad_op(x, list(low), list(high), c, result_type))


def lower_pad(e: Emitter, op) -> SSAValue:
    _check(op)
    p = op.attr("paddings")
    if not any(p):
        return op.operands[0]
    value = float(F32(op.attr("pad_value", 0.0)))
    return _pad(e, op.operands[0], p[0::2], p[1::2], value, op.results[0].type)


def lower_max_pool(e: Emitter, op) -> SSAValue:
    """The interpreter's float max pool: the input padded with -inf, numpy.maximum over the
    taps in (ky, kx) order (NaN propagates; of equal values the later tap's)."""
    _check(op)
    x = op.operands[0]
    kh, kw = op.attr("kernel")
    sh, sw = op.attr("strides", [1, 1])
    pt, pb, pl, pr = op.attr("padding", [0, 0, 0, 0])
    n, h, w, c = _shape(x)
    _, oh, ow, _ = _shape(op.results[0])
    if pt or pb or pl or pr:
        x = _pad(e, x, [0, pt, pl, 0], [0, pb, pr, 0], float("-inf"), TensorType(f32, [n, h + pt + pb, w + pl + pr, c]))
    taps = [(ky, kx) for ky in range(kh) for kx in range(kw)]
    t = TensorType(f32, [n, oh, ow, c])
    windows = [e.add(tensor.ExtractSliceOp(x, [0, ky, kx, 0], [n, oh, ow, c], [1, sh, sw, 1], t)) for ky, kx in taps]

    def body(s, *args):
        best = args[0]
        for v in args[1:len(taps)]:
            best = np_maximum(s, best, v)
        return best

    if len(windows) == 1:
        return windows[0]
    return _emit_generic(e, windows, [identity(4)] * len(taps), op.results[0].type, body)


# ----- qnn add / sub / mul in float (`onnx`, operands wider than 8 bits) -------------------------


def _dequant(s: Scalar, v: SSAValue, q) -> SSAValue:
    """DequantizeLinear of one stored integer: f32(q - zp) * s, one rounding, not fused."""
    return _unfused(s, decompose_onnx._dequant_scalar(s, v, q))


def lower_qnn_binary_float(e: Emitter, op) -> SSAValue:
    """ORT's DequantizeLinear -> float Add / Sub / Mul -> QuantizeLinear, with the op's clamp."""
    a_v, b_v = op.operands
    a_q, b_q, out_q = qp(a_v), qp(b_v), qp(op.results[0])
    for q in (a_q, b_q, out_q):
        if q.per_axis:
            raise Unsupported(f"{op.name} in float with per-axis parameters")
        if q.bits > 16:
            raise Unsupported(f"{op.name} in float on {q.storage}")
    cls = {qnn.AddOp: arith.AddfOp, qnn.SubOp: arith.SubfOp, qnn.MulOp: arith.MulfOp}[type(op)]
    shape = _shape(op.results[0])

    def operand(v, q):
        """A constant dequantized at compile time (the same float32 values), else the stored integers."""
        try:
            values = decompose_onnx._const_array(v, "operand")
        except Unsupported:
            return e.storage(v), True
        f = ort.dequantize_linear(values, x_q=q).astype(F32).reshape(_shape(v))
        return e.add(arith.ConstantOp(DenseIntOrFPElementsAttr(TensorType(f32, list(f.shape)), BytesAttr(f.tobytes())),
                                      TensorType(f32, list(f.shape)))), False

    (a, a_int), (b, b_int) = operand(a_v, a_q), operand(b_v, b_q)

    def body(s, x, y, _o):
        x = _dequant(s, x, a_q) if a_int else x
        y = _dequant(s, y, b_q) if b_int else y
        return decompose_onnx._quantize_scalar(s, s.emit(cls(x, y)), op)

    maps = [broadcast_map(_shape(a), shape), broadcast_map(_shape(b), shape)]
    return _emit_generic(e, [a, b], maps, int_tensor(shape, out_q.bits), body)


# ----- registration ------------------------------------------------------------------------------


LOWERINGS = {
    nn.ConstantOp: lower_constant,
    nn.AddOp: lower_binary,
    nn.SubOp: lower_binary,
    nn.MulOp: lower_binary,
    nn.ReluOp: lower_relu,
    nn.ClipOp: lower_clip,
    nn.TanhOp: lower_tanh,
    nn.LogisticOp: lower_logistic,
    nn.ReshapeOp: lower_reshape,
    nn.TransposeOp: lower_transpose,
    nn.SliceOp: lower_slice,
    nn.ConcatenationOp: lower_concat,
    nn.PadOp: lower_pad,
    nn.MaxPool2DOp: lower_max_pool,
}

decompose.DECOMPOSITIONS.update(LOWERINGS)
for _cls in (qnn.AddOp, qnn.SubOp, qnn.MulOp):
    decompose_onnx.FLOAT_LOWERINGS.setdefault(_cls, lower_qnn_binary_float)
