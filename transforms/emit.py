"""Shared building blocks of the lowering passes: the `Emitter` that collects the ops
replacing one op, and the small type / constant / shape helpers it and its users need.

`qnn-decompose` (transforms/decompose.py), its float-edge and float-island
decompositions (transforms/float_edges.py, ...) and `qnn-lower-to-linalg`
(transforms/lower_to_linalg.py, through transforms/linalg_build.py) all build on
these; none of those modules imports another pass for them.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, IntegerType, TensorType, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from qdialect import trusted
from qdialect.dialects import qint
from qdialect.dialects.quant import StorageCastOp, _integer_type, is_subclass, quantized_element_type
from transforms.fast_ir import create_op, dense_attr


class Unsupported(Exception):
    """An op (or knob combination) qnn-decompose cannot express exactly."""


# ----- types and small IR helpers ----------------------------------------------------------------


def tensor_type(element, shape) -> TensorType:
    """TensorType(element, shape), one shared object per (element, shape): building and
    verifying a type costs tens of microseconds, and the same few recur on every op
    (`qdialect.trusted.tensor_type`: the shapes and elements here come from valid types)."""
    return trusted.tensor_type(element, [int(d) for d in shape])


def int_tensor(shape, width: int) -> TensorType:
    return tensor_type(_integer_type(width), shape)


_STORAGE_TYPES: dict[int, tuple] = {}  # id(type) -> (type, its storage type): see storage_type


def storage_type(t):
    """The integer tensor type that holds a quantized tensor's stored values.

    Remembered per type object (a type is immutable, and the few of a model recur on
    every op: the entry keeps the type alive, so its id stays its own)."""
    hit = _STORAGE_TYPES.get(id(t))
    if hit is not None and hit[0] is t:
        return hit[1]
    made = _storage_type(t)
    if len(_STORAGE_TYPES) > 4096:  # bounded across the models of a long-lived process
        _STORAGE_TYPES.clear()
    _STORAGE_TYPES[id(t)] = (t, made)
    return made


def _storage_type(t):
    q = quantized_element_type(t)
    if q is None:
        return t
    if not isinstance(t, TensorType):  # a scalar !quant.uniform value
        return q.storage_type
    return tensor_type(q.storage_type, t.get_shape())


def dense_constant(values: np.ndarray, width: int) -> arith.ConstantOp:
    """`arith.constant dense<"0x...">` of an integer tensor, built from raw bytes."""
    container = np.dtype(f"int{max(8, width)}")
    arr = np.ascontiguousarray(np.asarray(values).astype(container))
    t = int_tensor(arr.shape, width)
    # what arith.ConstantOp(attr, t) makes, without its generic builder (and what
    # arith.ConstantOp.create makes, without its conversions: see transforms/fast_ir.py)
    return create_op(arith.ConstantOp, (), (t,), {"value": dense_attr(t, arr.tobytes())}, {})


def reassociation(groups) -> ArrayAttr:
    return ArrayAttr([ArrayAttr([IntegerAttr(i, i64) for i in g]) for g in groups])


def _grouping(src: tuple[int, ...], dst: tuple[int, ...]) -> list[list[int]] | None:
    """Consecutive groups of `src` dims whose products are the `dst` dims, if any."""
    if not dst or len(dst) > len(src):
        return None
    groups, i = [], 0
    for j, d in enumerate(dst):
        if i >= len(src):
            return None
        group, prod = [i], src[i]
        i += 1
        while prod < d and i < len(src):
            group.append(i)
            prod *= src[i]
            i += 1
        if j == len(dst) - 1:
            while i < len(src):
                group.append(i)
                prod *= src[i]
                i += 1
        if prod != d:
            return None
        groups.append(group)
    return groups


def _storage_cast(value: SSAValue, t) -> StorageCastOp:
    """`StorageCastOp(value, t)` (t: the storage integer type of value's quantized type or the
    other way round, as the callers form it), without Operation's generic constructor (see
    transforms/fast_ir.py): every op decomposed makes one or two."""
    return create_op(StorageCastOp, (value,), (t,), {}, {})


class Emitter:
    """Collects the ops that replace one L1 op."""

    def __init__(self):
        self.ops: list[Operation] = []

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        # (tuple's own indexing: SSAValues.__getitem__ is a Python method)
        return tuple.__getitem__(op.results, 0) if op.results else None

    def storage(self, value: SSAValue) -> SSAValue:
        """The stored integers of a quantized value (a quant.scast), or the value itself.

        A value that is itself the scast of stored integers (the result of an op decomposed
        before) gives those integers back: the pair `FoldStorageCastPair` would fold is
        never built."""
        if quantized_element_type(value.type) is None:
            return value
        t = storage_type(value.type)
        owner = value.owner
        if is_subclass(type(owner), StorageCastOp):
            (x,) = owner._operands  # (its `input`, without the IRDL accessor)
            if x.type is t or x.type == t:
                return x
        return self.add(_storage_cast(value, t))

    def quantized(self, value: SSAValue, qtype) -> SSAValue:
        if value.type == qtype:
            return value
        return self.add(_storage_cast(value, qtype))

    def constant(self, values, width: int) -> SSAValue:
        return self.add(dense_constant(values, width))

    def qint(self, cls, operands: list[SSAValue], result_type, **attrs) -> SSAValue:
        """`cls(operands, [result_type], attrs)`, without xDSL's generic Operation builder
        (a qint op has no properties and no regions: its attributes are the whole of it)."""
        made: dict[str, Attribute] = {}
        for key, value in attrs.items():
            if value is None:
                continue
            if is_subclass(type(value), Attribute):  # (isinstance: through ABCMeta)
                made[key] = value
            elif key in cls.ATTRS:
                made[key] = qint.make_attr(cls.ATTRS[key][0], value)
            else:
                raise VerifyException(f"{cls.name}: unknown attribute '{key}'")
        return self.add(create_op(cls, operands, [result_type], {}, made))

    def rescale(self, x: SSAValue, width: int, spec: dict, *, input_zp=0, output_zp=0,
                bounds=None, left_shift=0, input_unsigned=False, axis=None) -> SSAValue:
        attrs = dict(spec)
        if input_zp:
            attrs["input_zp"] = int(input_zp)
        if left_shift:
            attrs["left_shift"] = int(left_shift)
        if output_zp:
            attrs["output_zp"] = int(output_zp)
        if bounds is not None:
            attrs["clamp_min"], attrs["clamp_max"] = int(bounds[0]), int(bounds[1])
        if input_unsigned:
            attrs["input_unsigned"] = True
        if axis is not None:
            attrs["axis"] = int(axis)
        return self.qint(qint.RescaleOp, [x], int_tensor(qint.shape_of(x), width), **attrs)

    def reshape(self, value: SSAValue, shape) -> SSAValue:
        """Same values, new shape: collapse_shape, expand_shape, or both via 1-D."""
        src = tuple(qint.shape_of(value))
        dst = tuple(int(d) for d in shape)
        if src == dst:
            return value
        el = value.type.element_type
        if len(dst) < len(src) and (g := _grouping(src, dst)) is not None:
            return self.add(tensor.CollapseShapeOp.create(
                operands=[value], result_types=[TensorType(el, dst)],
                properties={"reassociation": reassociation(g)}))
        if len(dst) > len(src) and (g := _grouping(dst, src)) is not None:
            return self.add(tensor.ExpandShapeOp(value, [], reassociation(g), dst, TensorType(el, dst)))
        if not src or not dst:
            raise Unsupported(f"reshape between {list(src)} and {list(dst)} (rank 0)")
        flat = self.reshape(value, (math.prod(src),))
        return self.reshape(flat, dst)



def pad_op(x: SSAValue, low, high, value: SSAValue, result_type) -> tensor.PadOp:
    from xdsl.dialects.builtin import IndexType

    rank = len(low)
    block = Block(arg_types=[IndexType()] * rank)
    block.add_op(tensor.YieldOp(value))
    return tensor.PadOp(x, [], [], Region(block), list(low), list(high), result_type)


def scalar_constant(value: int, width: int) -> arith.ConstantOp:
    return arith.ConstantOp(IntegerAttr(int(value), IntegerType(width)))
