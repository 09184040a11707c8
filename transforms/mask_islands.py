"""Attention and padding masks, for `qnn-decompose`: the `nn` ops a TFLite encoder computes on
int32 and bool (i1) run-time tensors beside its quantized graph (issue 22), lowered straight to
L3 as one linalg.generic of arith ops per op (numpy broadcasting maps), or a move.

| op | L3 body |
| --- | --- |
| nn.compare (integer) | `arith.cmpi` eq / ne / slt / sle / sgt / sge |
| nn.compare (f32) | `arith.cmpf` oeq / olt / ole / ogt / oge; ne is `uno or one` (numpy's: NaN compares unequal) |
| nn.logical_and / or / not | `arith.andi` / `ori` / `extui` to i32 then `cmpi eq 0` |
| nn.select | `arith.select` on the values (the stored integers of quantized ones) |
| nn.cast i1 -> i32 / f32 | `arith.extui` / `arith.select` of 1.0 and 0.0 |
| nn.cast i32 -> i1, f32 -> i1 | `arith.cmpi ne 0` / `uno or one 0.0` (NaN is true) |
| nn.cast i32 -> f32 | `arith.sitofp` (round to nearest even) |
| nn.cast f32 -> i32 | TFLite's saturating truncation: NaN and values >= 2^31 give the maximum, < -2^31 the minimum, else `arith.fptosi` |
| nn.add / sub / mul on integers | `arith.addi` / `subi` / `muli` (two's-complement wrap) |
| nn.constant / reshape / transpose / slice of i1 / integer tensors | `arith.constant`, tensor moves |
| nn.div (f32) outside ONNX islands | `arith.divf` (IEEE: a TFLite 16x8 island's DIV) |

Float32 ops go on to `transforms.float_islands` (registered first; the wrappers here delegate
to it).  Other casts (quantized <-> integer, other widths) are refused by name.  Registered
into `transforms.decompose.DECOMPOSITIONS` on import.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType, f32
from xdsl.ir import SSAValue

import transforms.float_islands as float_islands  # noqa: F401 - registered first: the wrappers below delegate to it
import transforms.float_transformer  # noqa: F401 - likewise (ONNX islands' nn.div)
from qdialect.dialects import nn
from transforms import decompose
from transforms.decompose import Emitter, Unsupported, int_tensor
from transforms.fast_ir import create_op, dense_attr
from transforms.float_islands import _elementwise, _shape

I1, I32 = IntegerType(1), IntegerType(32)
_SIGNED = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
_ORDERED = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}


def _el(v: SSAValue):
    return v.type.element_type if isinstance(v.type, TensorType) else v.type


def _plain_integer(v: SSAValue) -> bool:
    """An i1 or integer tensor (not quantized, not float)."""
    return isinstance(_el(v), IntegerType)


def _is_mask_op(op) -> bool:
    return any(_plain_integer(v) for v in (*op.operands, *op.results))


def _storage_elementwise(e: Emitter, op, body) -> SSAValue:
    """`_elementwise` on the stored integers of quantized operands (a select copies them)."""
    operands = [e.storage(v) for v in op.operands]
    out_t = decompose.storage_type(op.results[0].type) if not _plain_integer(op.results[0]) and not isinstance(
        _el(op.results[0]), Float32Type) else op.results[0].type
    shape = _shape(op.results[0])
    maps = [float_islands.broadcast_map(_shape(v), shape) for v in operands]
    return float_islands._emit_generic(e, operands, maps, out_t, body)


def lower_compare(e: Emitter, op) -> SSAValue:
    pred = op.attr("predicate")
    if isinstance(_el(op.operands[0]), Float32Type):
        if pred == "ne":  # true when either is NaN
            return _elementwise(e, op, lambda s, a, b, _o: _unordered_or(s, a, b, "one"))
        return _elementwise(e, op, lambda s, a, b, _o: s.emit(arith.CmpfOp(a, b, _ORDERED[pred])))
    if not _plain_integer(op.operands[0]):
        raise Unsupported(f"nn.compare on {op.operands[0].type}")
    return _elementwise(e, op, lambda s, a, b, _o: s.emit(arith.CmpiOp(a, b, _SIGNED[pred])))


def lower_logical(e: Emitter, op) -> SSAValue:
    if isinstance(op, nn.LogicalNotOp):
        # (a == 0 on the i32 extension: TVM's bool constant cannot hold MLIR's true, -1 in i1)
        return _elementwise(e, op, lambda s, a, _o: s.emit(arith.CmpiOp(s.emit(arith.ExtUIOp(a, I32)),
                                                                        s.const(0, I32), "eq")))
    cls = arith.AndIOp if isinstance(op, nn.LogicalAndOp) else arith.OrIOp
    return _elementwise(e, op, lambda s, a, b, _o: s.emit(cls(a, b)))


def lower_select(e: Emitter, op) -> SSAValue:
    el = _el(op.results[0])
    if isinstance(el, Float32Type) or _plain_integer(op.results[0]) or decompose.quantized_element_type(
            op.results[0].type) is not None:
        return _storage_elementwise(e, op, lambda s, c, a, b, _o: s.emit(arith.SelectOp(c, a, b)))
    raise Unsupported(f"nn.select of {op.results[0].type}")


def _f32_to_i32(s, a) -> SSAValue:
    """TFLite CAST float32 -> int32 (LiteRT 2.3 on x86): saturating truncation, NaN to the maximum."""
    lo, hi = s.const(-2147483648, I32), s.const(2147483647, I32)
    t = s.emit(arith.FPToSIOp(a, I32))
    t = s.emit(arith.SelectOp(s.emit(arith.CmpfOp(a, s.const(-2147483648.0, f32), "olt")), lo, t))
    return s.emit(arith.SelectOp(_unordered_or(s, a, s.const(2147483648.0, f32), "oge"), hi, t))


def _unordered_or(s, a, b, ordered: str) -> SSAValue:
    """`a <ordered> b or either is NaN`, spelled with an explicit `uno` (the TVM translation reads
    MLIR's unordered predicates as the ordered ones)."""
    either_nan = s.emit(arith.CmpfOp(a, b, "uno"))
    return s.emit(arith.OrIOp(either_nan, s.emit(arith.CmpfOp(a, b, ordered))))


def lower_cast(e: Emitter, op) -> SSAValue:
    src, dst = _el(op.operands[0]), _el(op.results[0])
    f = isinstance(src, Float32Type), isinstance(dst, Float32Type)
    if src == I1 and dst == I32:
        body = lambda s, a, _o: s.emit(arith.ExtUIOp(a, I32))  # noqa: E731
    elif src == I1 and f[1]:
        body = lambda s, a, _o: s.emit(arith.SelectOp(a, s.const(1.0, f32), s.const(0.0, f32)))  # noqa: E731
    elif src == I32 and dst == I1:
        body = lambda s, a, _o: s.emit(arith.CmpiOp(a, s.const(0, I32), "ne"))  # noqa: E731
    elif f[0] and dst == I1:
        body = lambda s, a, _o: _unordered_or(s, a, s.const(0.0, f32), "one")  # noqa: E731
    elif src == I32 and f[1]:
        body = lambda s, a, _o: s.emit(arith.SIToFPOp(a, f32))  # noqa: E731
    elif f[0] and dst == I32:
        body = lambda s, a, _o: _f32_to_i32(s, a)  # noqa: E731
    else:
        raise Unsupported(f"nn.cast from {src} to {dst} (the mask lowering casts between i1, i32 and f32)")
    return _elementwise(e, op, body)


_INTEGER_BINARY = {nn.AddOp: arith.AddiOp, nn.SubOp: arith.SubiOp, nn.MulOp: arith.MuliOp}


def lower_integer_binary(e: Emitter, op) -> SSAValue:
    if "act_min" in op.attributes or "act_max" in op.attributes:
        raise Unsupported(f"{op.name} on integers with a fused act_min / act_max")
    cls = _INTEGER_BINARY[type(op)]
    return _elementwise(e, op, lambda s, a, b, _o: s.emit(cls(a, b)))


def lower_constant(e: Emitter, op) -> SSAValue:
    """`arith.constant` of the same shape (a rank-0 constant stays rank 0)."""
    t = op.results[0].type
    width = t.element_type.width.data
    arr = np.array(op.array(), dtype=np.dtype(f"int{max(8, width)}"), order="C")
    it = int_tensor(list(t.get_shape()), width)
    return e.add(create_op(arith.ConstantOp, (), (it,), {"value": dense_attr(it, arr.tobytes())}, {}))


def lower_reshape(e: Emitter, op) -> SSAValue:
    return e.reshape(op.operands[0], _shape(op.results[0]))


_MOVES = {
    nn.ConstantOp: lower_constant,
    nn.ReshapeOp: lower_reshape,
    nn.TransposeOp: lambda e, op: decompose.decompose_transpose(e, op),
    nn.SliceOp: lambda e, op: decompose.decompose_slice(e, op),
    nn.AddOp: lower_integer_binary,
    nn.SubOp: lower_integer_binary,
    nn.MulOp: lower_integer_binary,
}


def lower_tflite_div(e: Emitter, op) -> SSAValue:
    """A TFLite float island's DIV (a 16x8 masked mean's SUM(x * m) / SUM(m)): one correctly
    rounded float32 division per element, the same in every float kernel (ONNX islands keep
    float_transformer's lowering)."""
    float_islands._check(op, anywhere=True)
    return _elementwise(e, op, lambda s, a, b, _o: s.emit(arith.DivfOp(a, b)))


def _delegating(cls, mine):
    """Integer / i1 instances of `cls` lower here, the others as before."""
    before = decompose.DECOMPOSITIONS.get(cls)

    def lower(e: Emitter, op):
        if _is_mask_op(op) or before is None:
            return mine(e, op)
        return before(e, op)

    return lower


def _tflite_div_or(before):
    def lower(e: Emitter, op):
        if float_islands._is_island(op) or before is None:
            return before(e, op) if before is not None else lower_tflite_div(e, op)
        return lower_tflite_div(e, op)

    return lower


LOWERINGS = {
    nn.DivOp: _tflite_div_or(decompose.DECOMPOSITIONS.get(nn.DivOp)),
    nn.CompareOp: lower_compare,
    nn.LogicalAndOp: lower_logical,
    nn.LogicalOrOp: lower_logical,
    nn.LogicalNotOp: lower_logical,
    nn.SelectOp: lower_select,
    nn.CastOp: lower_cast,
    **{cls: _delegating(cls, fn) for cls, fn in _MOVES.items()},
}

decompose.DECOMPOSITIONS.update(LOWERINGS)
