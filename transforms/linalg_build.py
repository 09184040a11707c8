"""Shared building blocks for emitting L3 (`linalg` / `arith` / `tensor`): `Lowering` (an
`Emitter` that builds `linalg.generic` ops and shares their bodies), `Scalar` (folding
arith inside a body), affine-map helpers, templates of repeated ops, `reduce`.

`qnn-lower-to-linalg` (transforms/lower_to_linalg.py) is made of these, and the
decompositions that go straight to L3 (transforms/decompose.py's gather / arg_max /
mirror_pad, transforms/float_edges.py, ...) use them without importing that pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

import numpy as np
from xdsl.dialects import arith, tensor
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    TensorType,
)
from xdsl.dialects.linalg.ops import FillOp, GenericOp, IteratorTypeAttr, YieldOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from qdialect.dialects import qint
from transforms.emit import Emitter, int_tensor, pad_op, tensor_type
from transforms.fast_ir import BlockTemplate, create_op, new_region

I64 = IntegerType(64)
I32 = IntegerType(32)
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


# ----- scalar arith inside a linalg body -------------------------------------------------------


_TEMPLATES: dict[tuple, tuple] = {}
_EMPTIES: dict[int, tuple] = {}  # id(tensor type) -> (type, tensor.empty template): Lowering.empty


def make_op(key: tuple, build: Callable[..., Operation], operands: Sequence[SSAValue] = ()) -> Operation:
    """The op `build(*operands)` makes, when that op depends only on `key` and the operand
    types: built once on placeholder operands, then copied through `Operation.create`.
    (xDSL's typed constructors convert and check every argument and attribute on each
    call, 3-7x the cost; a rescale body is about 20 ops.)  Ops with regions are not for
    this: see `_region_op`."""
    types = tuple(v.type for v in operands)
    template = _TEMPLATES.get((key, types))
    if template is None:
        proto = build(*Block(arg_types=types).args)
        template = (type(proto), tuple(r.type for r in proto.results), dict(proto.properties),
                    dict(proto.attributes))
        proto.drop_all_references()
        if len(_TEMPLATES) > 4096:  # bounded across the models of a long-lived process
            _TEMPLATES.clear()
        _TEMPLATES[(key, types)] = template
    cls, result_types, properties, attributes = template
    return create_op(cls, operands, result_types, properties, attributes)


def _signed_bits(value: int) -> int:
    """The fewest bits of a two's-complement integer holding `value`."""
    return (value if value >= 0 else ~value).bit_length() + 1


def _wrap_signed(value: int, width: int) -> int:
    half = 1 << (width - 1)
    return ((value + half) & ((1 << width) - 1)) - half


# exact integer folds of two constants (shifts only by 0 .. width-1, where arith defines them)
_FOLDS: dict[type, Callable[[int, int, int], int | None]] = {
    arith.AddiOp: lambda a, b, w: a + b,
    arith.SubiOp: lambda a, b, w: a - b,
    arith.MuliOp: lambda a, b, w: a * b,
    arith.ShLIOp: lambda a, b, w: a << b if 0 <= b < w else None,
    arith.ShRSIOp: lambda a, b, w: a >> b if 0 <= b < w else None,
    arith.AndIOp: lambda a, b, w: a & b,
    arith.MaxSIOp: lambda a, b, w: max(a, b),
    arith.MinSIOp: lambda a, b, w: min(a, b),
}
# x op identity = x
_RIGHT_IDENTITY = {arith.AddiOp: 0, arith.SubiOp: 0, arith.MuliOp: 1, arith.ShLIOp: 0, arith.ShRSIOp: 0}
_LEFT_IDENTITY = {arith.AddiOp: 0, arith.MuliOp: 1}


class Scalar:
    """Builds arith ops on scalars into a block; Python ints become i64 constants.

    It folds as it builds, each fold exact on every input: one `arith.constant`
    per value and type in a block; an integer op on two constants is their
    constant; x + 0, x - 0, 0 + x, x * 1, 1 * x, x << 0 and x >> 0 are x; the
    truncation of an extension back to the original width is the original value, and so
    is the sign extension of a truncation of a value that fits the narrower width;
    wrapping to w bits a value that already fits w signed bits is the value
    itself, and so is a max / min with a bound the value cannot cross.  What fits is
    known from how a value was made (sign or zero extension from iN, add / sub / mul /
    shift by a constant without 64-bit overflow, max / min), never guessed.
    """

    def __init__(self, block: Block):
        self.block = block
        self.constants: dict[tuple, SSAValue] = {}  # (value, type) -> its arith.constant
        self.known: dict[SSAValue, int] = {}  # integer constants' values
        self.bits: dict[SSAValue, int] = {}  # values known to fit this many signed bits
        self.extended: dict[SSAValue, SSAValue] = {}  # ext result -> the value extended
        self.narrowed: dict[SSAValue, SSAValue] = {}  # trunc result -> the value, when it fits

    def emit(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def make(self, key: tuple, build: Callable[..., Operation], *operands: SSAValue) -> SSAValue:
        return self.emit(make_op(key, build, operands))

    def const(self, value, t=I64) -> SSAValue:
        if isinstance(t, IntegerType):
            value = int(value)
            key = (value, t)
        else:
            value = float(value)
            key = (value.hex(), t)  # by the exact bits: 0.0 and -0.0 are equal as Python floats
        shared = self.constants.get(key)
        if shared is not None:
            return shared
        if isinstance(t, IntegerType):
            r = self.make(("constant", value, t), lambda: arith.ConstantOp(IntegerAttr(value, t), t))
            if _signed_bits(value) <= t.width.data:
                self.known[r] = value
                self.bits[r] = _signed_bits(value)
        else:
            r = self.make(("constant", value.hex(), t), lambda: arith.ConstantOp(FloatAttr(value, t), t))
        self.constants[key] = r
        return r

    def v(self, x, t=I64) -> SSAValue:
        return x if isinstance(x, SSAValue) else self.const(x, t)

    def _value(self, x) -> int | None:
        return x if isinstance(x, int) else self.known.get(x)

    def fits(self, x: SSAValue) -> int:
        """How many signed bits hold every value `x` can take."""
        return self.bits.get(x, x.type.width.data)

    def _bin(self, cls, a, b):
        ka, kb = self._value(a), self._value(b)
        t = a.type if isinstance(a, SSAValue) else b.type if isinstance(b, SSAValue) else I64
        if isinstance(t, IntegerType):
            width = t.width.data
            if ka is not None and kb is not None and cls in _FOLDS:
                folded = _FOLDS[cls](ka, kb, width)
                if folded is not None:
                    return self.const(_wrap_signed(folded, width), t)
            if isinstance(a, SSAValue) and kb is not None and _RIGHT_IDENTITY.get(cls) == kb:
                return a
            if isinstance(b, SSAValue) and ka is not None and _LEFT_IDENTITY.get(cls) == ka:
                return b
            if cls in (arith.MaxSIOp, arith.MinSIOp):  # a bound the value never crosses
                x, bound = (a, kb) if isinstance(a, SSAValue) and kb is not None else (b, ka)
                if isinstance(x, SSAValue) and bound is not None:
                    half = 1 << (self.fits(x) - 1)
                    if bound <= -half if cls is arith.MaxSIOp else bound >= half - 1:
                        return x
        a = self.v(a)
        b = self.v(b, a.type)
        r = self.make((cls,), cls, a, b)
        if isinstance(r.type, IntegerType):
            bits = None
            if cls in (arith.AddiOp, arith.SubiOp):
                bits = max(self.fits(a), self.fits(b)) + 1
            elif cls is arith.MuliOp:
                bits = self.fits(a) + self.fits(b)
            elif cls is arith.ShLIOp and kb is not None and kb >= 0:
                bits = self.fits(a) + kb
            elif cls is arith.ShRSIOp and kb is not None and 0 <= kb < r.type.width.data:
                bits = max(self.fits(a) - kb, 1)
            elif cls in (arith.MaxSIOp, arith.MinSIOp):
                bits = max(self.fits(a), self.fits(b))
            if bits is not None and bits < r.type.width.data:
                self.bits[r] = bits
        return r

    def add(self, a, b):
        return self._bin(arith.AddiOp, a, b)

    def sub(self, a, b):
        return self._bin(arith.SubiOp, a, b)

    def mul(self, a, b):
        return self._bin(arith.MuliOp, a, b)

    def divsi(self, a, b):
        return self._bin(arith.DivSIOp, a, b)

    def floordiv(self, a, b):
        return self._bin(arith.FloorDivSIOp, a, b)

    def shl(self, a, b):
        return self._bin(arith.ShLIOp, a, b)

    def shr(self, a, b):
        return self._bin(arith.ShRSIOp, a, b)

    def band(self, a, b):
        return self._bin(arith.AndIOp, a, b)

    def max(self, a, b):
        return self._bin(arith.MaxSIOp, a, b)

    def min(self, a, b):
        return self._bin(arith.MinSIOp, a, b)

    def cmp(self, pred: str, a, b):
        a = self.v(a)
        return self.make((arith.CmpiOp, pred), lambda x, y: arith.CmpiOp(x, y, pred), a, self.v(b, a.type))

    def select(self, c, a, b):
        a = self.v(a)
        return self.make((arith.SelectOp,), arith.SelectOp, c, a, self.v(b, a.type))

    def bool_to_int(self, c):
        r = self.make((arith.ExtUIOp, 64), lambda x: arith.ExtUIOp(x, I64), c)
        self.bits[r] = 2  # 0 or 1
        return r

    def ext(self, x: SSAValue, width: int = 64, unsigned: bool = False) -> SSAValue:
        w = x.type.width.data
        if w == width:
            return x
        if w > width:
            source = self.extended.get(x)
            if source is not None and source.type.width.data == width:
                return source
        elif not unsigned:
            # the sign extension of a truncation that lost nothing is the value truncated
            source = self.narrowed.get(x)
            if source is not None and source.type.width.data == width:
                return source
        cls = arith.TruncIOp if w > width else arith.ExtUIOp if unsigned else arith.ExtSIOp
        r = self.make((cls, width), lambda v: cls(v, IntegerType(width)), x)
        if w < width:
            self.extended[r] = x
            bits = w + 1 if unsigned else self.fits(x)
            if bits < width:
                self.bits[r] = bits
        elif (bits := self.fits(x)) <= width:
            self.narrowed[r] = x
            self.bits[r] = bits
        return r

    def trunc(self, x: SSAValue, width: int) -> SSAValue:
        return self.ext(x, width)

    def wrap(self, x: SSAValue, width: int) -> SSAValue:
        """Two's-complement wrap of an i64 value to `width` bits, kept in i64."""
        if width >= 64 or self.fits(x) <= width:
            return x
        return self.ext(self.trunc(x, width), 64)

    def clamp(self, x, lo: int, hi: int):
        return self.min(self.max(x, lo), hi)

    # gemmlowp / TFLite fixed point on int32 values held in i64

    def srdhm(self, a, b, b_never_min: bool = False):
        """SaturatingRoundingDoublingHighMul of int32 values held in i64.

        gemmlowp's form, trunc((a*b + nudge) / 2^31) with nudge = 2^30 for a
        non-negative product and 1 - 2^30 otherwise, equals floor((a*b + 2^30) / 2^31)
        for every product (for a negative one, trunc(n / 2^31) = ceil(n / 2^31) =
        floor((n + 2^31 - 1) / 2^31) with n = a*b + 1 - 2^30), so it is one add and one
        arithmetic shift.  The only saturating case is a = b = INT32_MIN, the one product
        whose q is 2^31 (every other q lies in [INT32_MIN + 1, INT32_MAX]), so the
        saturation is min(q, INT32_MAX), which reads a and b once each (a select on
        a == b == INT32_MIN read them twice, and nested reciprocal steps grew
        exponentially for TVM's simplifier); with `b_never_min` (a constant multiplier
        without INT32_MIN) it is left out."""
        a, b = self.v(a), self.v(b)
        q = self.shr(self.add(self.mul(a, b), 1 << 30), 31)
        if b_never_min:
            return q
        return self.min(q, INT32_MAX)

    def rdbpot(self, x, exponent):
        """RoundingDivideByPOT (round half away from zero) with an i64 exponent >= 0.

        gemmlowp adds 1 when the remainder exceeds mask/2 (+1 for negative x); that is
        (x + bias) >> e with bias = 2^(e-1) - [x < 0] for e >= 1 and 0 for e = 0,
        i.e. bias = ((2^e - 1) + [x >= 0]) >> 1."""
        e = self.v(exponent)
        mask = self.sub(self.shl(1, e), 1)
        bias = self.shr(self.add(mask, self.bool_to_int(self.cmp("sge", x, 0))), 1)
        return self.shr(self.add(x, bias), e)

    def sat_shift_left(self, x, exponent: int):
        """SaturatingRoundingMultiplyByPOT with exponent > 0 of an int32 value held in i64:
        INT32_MAX above 2^(31-e) - 1, INT32_MIN below -(2^(31-e) - 1), else x << e.  As
        min(clamp(x, -2^(31-e), 2^(31-e)) << e, INT32_MAX), which reads x once: the
        upper bound shifts to 2^31 (then INT32_MAX), the lower to INT32_MIN, and every
        value between shifts exactly."""
        if exponent == 0:
            return x
        bound = 1 << (31 - exponent)
        return self.min(self.shl(self.clamp(x, -bound, bound), exponent), INT32_MAX)

    def clz32(self, x):
        """CountLeadingZeros of the low 32 bits read as unsigned (32 for 0), in `x`'s type:
        `math.ctlz` on the i32 truncation (TVM: `tirx.clz`, LLVM's ctlz defined at 0).
        (Until session 18 a sum of 32 comparisons, which took TVM's simplifier 0.3 s per
        softmax or reciprocal body to lower.)"""
        width = x.type.width.data
        count = self.make(("ctlz",), lambda v: mathd.CountLeadingZerosOp(v), self.trunc(x, 32))
        self.bits[count] = 7  # 0..32
        return self.ext(count, width)

    def round_half_away(self, y: SSAValue) -> SSAValue:
        """A float rounded half away from zero, as i64 (|y| < 2^62; exact below 2^53)."""
        t = self.emit(arith.FPToSIOp(y, I64))
        frac = self.emit(arith.SubfOp(y, self.emit(arith.SIToFPOp(t, y.type))))
        half = self.const(0.5, y.type)
        mhalf = self.const(-0.5, y.type)
        up = self.bool_to_int(self.emit(arith.CmpfOp(frac, half, "oge")))
        down = self.bool_to_int(self.emit(arith.CmpfOp(frac, mhalf, "ole")))
        return self.sub(self.add(t, up), down)

    def round_half_even(self, y: SSAValue) -> SSAValue:
        """A float rounded to nearest, ties to even, as i64 (|y| < 2^62)."""
        t = self.emit(arith.FPToSIOp(y, I64))
        frac = self.emit(arith.SubfOp(y, self.emit(arith.SIToFPOp(t, y.type))))
        odd = self.cmp("ne", self.band(t, 1), 0)
        half = self.const(0.5, y.type)
        mhalf = self.const(-0.5, y.type)
        gt = self.emit(arith.CmpfOp(frac, half, "ogt"))
        eq = self.emit(arith.CmpfOp(frac, half, "oeq"))
        lt = self.emit(arith.CmpfOp(frac, mhalf, "olt"))
        meq = self.emit(arith.CmpfOp(frac, mhalf, "oeq"))
        up = self.emit(arith.OrIOp(gt, self.emit(arith.AndIOp(eq, odd))))
        down = self.emit(arith.OrIOp(lt, self.emit(arith.AndIOp(meq, odd))))
        return self.sub(self.add(t, self.bool_to_int(up)), self.bool_to_int(down))

    def fclamp(self, y: SSAValue, bound: float) -> SSAValue:
        lo, hi = self.const(-bound, y.type), self.const(bound, y.type)
        return self.emit(arith.MinimumfOp(self.emit(arith.MaximumfOp(y, lo)), hi))

    def lookup(self, table: SSAValue, index: SSAValue) -> SSAValue:
        """`table[index]` (a 1-D constant captured by the body), as i64."""
        i = self.emit(arith.IndexCastOp(index, IndexType()))
        el = table.type.element_type
        return self.ext(self.emit(tensor.ExtractOp(table, [i], el)), 64)


# ----- linalg.generic construction -------------------------------------------------------------


def dim(i: int) -> AffineExpr:
    return AffineExpr.dimension(i)


_AMAPS: dict[tuple, AffineMapAttr] = {}


def amap(n_dims: int, results: Sequence) -> AffineMapAttr:
    """The map `(d0, ..., d{n_dims-1}) -> (results)` (ints are constants), one attribute object
    per distinct map: an attribute is immutable, so the ops share it; making one costs 4-25 us
    (hashing the key about 2), and the translation remembers what it read from a map by the
    map's identity (`tvm_bridge.epilogue._map_text`)."""
    key = (n_dims, tuple(r if isinstance(r, AffineExpr) else int(r) for r in results))
    hit = _AMAPS.get(key)
    if hit is None:
        exprs = tuple(r if isinstance(r, AffineExpr) else AffineExpr.constant(r) for r in key[1])
        hit = AffineMapAttr(AffineMap(n_dims, 0, exprs))
        if len(_AMAPS) > 4096:  # bounded across the models of a long-lived process
            _AMAPS.clear()
        _AMAPS[key] = hit
    return hit


@cache
def identity(rank: int) -> AffineMapAttr:
    return amap(rank, [dim(i) for i in range(rank)])


@cache
def axis_map(rank: int, axis: int) -> AffineMapAttr:
    """(d0, ..., d{rank-1}) -> (d{axis}): a per-channel parameter's map."""
    return amap(rank, [dim(axis)])


def broadcast_map(shape: Sequence[int], out_shape: Sequence[int]) -> AffineMapAttr:
    """Right-aligned numpy broadcasting of an operand of `shape` into `out_shape`'s loops."""
    return _broadcast_map(tuple(shape), tuple(out_shape))


@cache
def _broadcast_map(shape: tuple[int, ...], out_shape: tuple[int, ...]) -> AffineMapAttr:
    rank, out_rank = len(shape), len(out_shape)
    results = []
    for j, s in enumerate(shape):
        d = out_rank - rank + j
        results.append(0 if s == 1 and out_shape[d] != 1 else dim(d))
    return amap(out_rank, results)


def element(t):
    return t.element_type if isinstance(t, TensorType) else t


@cache
def _iterator_types(iterators: tuple[str, ...]) -> ArrayAttr:
    return ArrayAttr([getattr(IteratorTypeAttr, it)() for it in iterators])


_MAPS_ATTRS: dict[tuple, tuple] = {}


def _maps_attr(maps: tuple[AffineMapAttr, ...]) -> ArrayAttr:
    """`ArrayAttr(maps)`, one object per tuple of map objects (found by their identities: the
    maps are `amap`'s shared ones, and hashing a map walks its expressions)."""
    key = tuple([id(m) for m in maps])
    hit = _MAPS_ATTRS.get(key)
    if hit is None:
        if len(_MAPS_ATTRS) > 4096:  # bounded across the models of a long-lived process
            _MAPS_ATTRS.clear()
        # the entry keeps the maps alive, so no other object can take their ids while it exists
        hit = _MAPS_ATTRS[key] = (maps, ArrayAttr(maps))
    return hit[1]


@cache
def _segment_sizes(n_inputs: int) -> DenseArrayBase:
    """A linalg.generic's operandSegmentSizes: `n_inputs` inputs, one output."""
    return DenseArrayBase.from_list(IntegerType(32), [n_inputs, 1])


class Lowering(Emitter):
    """Collects the L3 ops that replace one qint op.

    `bodies` caches linalg.generic bodies by the key their callers give (see
    `generic`); share one dict between the Lowerings of a pass run."""

    def __init__(self, bodies: dict | None = None, bounds: dict | None = None):
        super().__init__()
        # id(qint.rescale) -> (that op, a bound on |x| of its input: lower_to_linalg.value_bound)
        self.bounds = {} if bounds is None else bounds
        # (a later op, the value now replacing its result): an op lowered together with this one
        self.replaces: list[tuple[Operation, SSAValue]] = []
        # ops (before this one) the lowering reads through: erased when nothing reads them any more
        self.dead: list[Operation] = []
        self.bodies = {} if bodies is None else bodies

    def empty(self, t: TensorType) -> SSAValue:
        # make_op's template, found by the type's identity (hashing a tensor type walks
        # its whole tree; a lowering makes an empty tensor per generic)
        hit = _EMPTIES.get(id(t))
        if hit is None or hit[0] is not t:
            proto = tensor.EmptyOp([], t)
            hit = (t, [r.type for r in proto.results], dict(proto.properties), dict(proto.attributes))
            if len(_EMPTIES) > 4096:  # bounded across the models of a long-lived process
                _EMPTIES.clear()
            _EMPTIES[id(t)] = hit  # (t kept alive: its id stays its own)
        return self.add(create_op(tensor.EmptyOp, (), hit[1], hit[2], hit[3]))

    def scalar(self, value, el) -> SSAValue:
        """An `arith.constant` of a scalar integer or float `el`."""
        if isinstance(el, IntegerType):
            value = int(value)
            return self.add(make_op(("constant", value, el), lambda: arith.ConstantOp(IntegerAttr(value, el), el)))
        value = float(value)
        return self.add(make_op(("constant", value.hex(), el), lambda: arith.ConstantOp(FloatAttr(value, el), el)))

    def filled(self, t: TensorType, value) -> SSAValue:
        c = self.scalar(value, t.element_type)
        out = self.empty(t)
        return self.add(_region_op(("fill", t), lambda a, b: FillOp([a], [b], [t]), (c, out)))

    def generic(self, inputs: Sequence[SSAValue], maps: Sequence[AffineMapAttr], out_type: TensorType,
                out_map: AffineMapAttr, body: Callable[..., SSAValue], *, iterators: Sequence[str] | None = None,
                init=None, key: tuple | None = None) -> SSAValue:
        """One linalg.generic; `body(s, *args, out)` builds the yielded scalar with `Scalar` s.

        With a `key`, a body built before under the same key and block argument types
        is copied instead of calling `body` again: `key` must then determine everything
        `body` builds (every Python value it reads; SSA values from outside the body
        are not allowed)."""
        n = out_map.data.num_dims
        iterators = iterators or ["parallel"] * n
        if isinstance(init, SSAValue):  # a tensor the reduction continues from
            out = init
        else:
            out = self.empty(out_type) if init is None else self.filled(out_type, init)
        arg_types = tuple([element(v.type) for v in inputs] + [out_type.element_type])
        if key is None:
            block = _build_body(arg_types, body)
        else:
            template = self.bodies.get((key, arg_types))
            if template is None:
                template = self.bodies[(key, arg_types)] = BlockTemplate(_build_body(arg_types, body))
            block = template.instantiate()
        # the op GenericOp(...) makes, without its constructor's conversions and checks of
        # arguments built right here (lower_to_l3 verifies the module after the pass)
        op = create_op(GenericOp, [*inputs, out], [out_type],
                       {"indexing_maps": _maps_attr((*maps, out_map)),
                        "iterator_types": _iterator_types(tuple(iterators)),
                        "operandSegmentSizes": _segment_sizes(len(inputs))}, {}, [new_region(block)])
        return self.add(op)

    def elementwise(self, inputs: Sequence[SSAValue], out_type: TensorType, body, key: tuple | None = None) -> SSAValue:
        shape = list(out_type.get_shape())
        maps = [broadcast_map(qint.shape_of(v), shape) for v in inputs]
        return self.generic(inputs, maps, out_type, identity(len(shape)), body, key=key)

    def channel_constant(self, values, axis: int, rank: int, width: int = 64):
        """Per-channel i`width` parameters: (operand, map) or a Python int when they are all one value."""
        values = [int(v) for v in values]
        if len(set(values)) == 1:
            return values[0], None
        return self.constant(np.asarray(values, np.int64), width), axis_map(rank, axis)

    def pad(self, x: SSAValue, low: Sequence[int], high: Sequence[int], value: int) -> SSAValue:
        if not any(low) and not any(high):
            return x
        shape = qint.shape_of(x)
        el = x.type.element_type
        result = tensor_type(el, [d + lo + hi for d, lo, hi in zip(shape, low, high)])
        c = self.scalar(value, el)
        return self.add(_region_op(("pad", tuple(low), tuple(high), result),
                                   lambda src, pad_value: pad_op(src, list(low), list(high), pad_value, result),
                                   [x], [c]))


def _build_body(arg_types: Sequence, body: Callable[..., SSAValue]) -> Block:
    """A linalg.generic body block: `body(s, *args)` with `Scalar` s, yielded, dead ops dropped."""
    block = Block(arg_types=arg_types)
    s = Scalar(block)
    y = body(s, *block.args)
    block.add_op(YieldOp(y))
    # values the folds made unneeded (constants they read, an extension a truncation undid)
    dead = block.last_op.prev_op
    while dead is not None:
        earlier = dead.prev_op
        if not any(r.uses for r in dead.results):
            block.erase_op(dead)
        dead = earlier
    return block


_REGION_TEMPLATES: dict[tuple, Operation] = {}


def _region_op(key: tuple, build: Callable[..., Operation], operands: Sequence[SSAValue],
               captured: Sequence[SSAValue] = ()) -> Operation:
    """`make_op` for an op with regions (linalg's named ops and their hidden bodies,
    tensor.pad): the template's regions are copied.  Their bodies may read, besides
    their own values, only the `captured` values (`build(*operands, *captured)`)."""
    types = tuple(v.type for v in operands)
    captured_types = tuple(v.type for v in captured)
    template = _REGION_TEMPLATES.get((key, types, captured_types))
    if template is None:
        # built on placeholder values, which nothing else ever sees
        placeholders = Block(arg_types=types + captured_types).args
        proto = build(*placeholders)
        template = (proto, placeholders[len(types):], [[BlockTemplate(b) for b in r.blocks] for r in proto.regions])
        if len(_REGION_TEMPLATES) > 1024:  # bounded across the models of a long-lived process
            _REGION_TEMPLATES.clear()
        _REGION_TEMPLATES[(key, types, captured_types)] = template
    proto, captured_placeholders, regions = template
    outside = dict(zip(captured_placeholders, captured))
    return create_op(type(proto), operands, [r.type for r in proto.results], proto.properties, proto.attributes,
                     [new_region(blocks[0].instantiate(outside)) if len(blocks) == 1
                      else Region([b.instantiate(outside) for b in blocks]) for blocks in regions])


def signed_min(width: int) -> int:
    return -(1 << (width - 1))


def signed_max(width: int) -> int:
    return (1 << (width - 1)) - 1


def reduce(e: Lowering, x: SSAValue, axes: Sequence[int], out_width: int, combine: str,
           keep_dims: bool = False) -> SSAValue:
    shape = list(qint.shape_of(x))
    rank = len(shape)
    axes = sorted({a % rank for a in axes})
    kept = [i for i in range(rank) if i not in axes]
    order = kept + axes
    out_t = int_tensor([shape[i] for i in kept], out_width)
    cls = {"sum": arith.AddiOp, "max": arith.MaxSIOp, "min": arith.MinSIOp}[combine]
    init = {"sum": 0, "max": signed_min(out_width), "min": signed_max(out_width)}[combine]
    # loops: kept dims first (parallel), then reduced dims
    in_map = amap(rank, [dim(order.index(i)) for i in range(rank)])
    out_map = amap(rank, [dim(k) for k in range(len(kept))])
    r = e.generic([x], [in_map], out_t, out_map, lambda s, a, acc: s.emit(cls(acc, s.ext(a, out_width))),
                  iterators=["parallel"] * len(kept) + ["reduction"] * len(axes), init=init,
                  key=("reduce", combine, out_width))
    if keep_dims:
        r = e.reshape(r, [1 if i in axes else d for i, d in enumerate(shape)])
    return r
