"""Cheap construction of xDSL ops whose every part is already known to be valid.

The lowering passes emit tens of ops per source op, most of them copies of a
template (an `arith.addi` on i64, a rescale body seen before).  xDSL's generic
`Operation.create` converts every argument (operands to `SSAValues`, successors
and regions through their setters, IRDL default properties) on each call, and
the typed constructors also build and verify their attributes: 2-6x the cost of
what an op is.  `create_op` fills the same fields directly; a `BlockTemplate`
copies a region-free block op by op with it.

Only for parts taken from an existing valid op (a template built once through
the normal constructors): nothing is converted or checked here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import UNKNOWN_LOC
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.core import OpResult, SSAValues, Use


def create_op(cls: type[Operation], operands: Sequence[SSAValue], result_types: Sequence[Attribute],
              properties: Mapping[str, Attribute], attributes: Mapping[str, Attribute],
              regions: Sequence[Region] = ()) -> Operation:
    """What `cls.create(operands=..., result_types=..., properties=..., attributes=...,
    regions=...)` makes (no successors, unknown location), without its conversions.

    `properties` must already hold the IRDL defaults of `cls` (as a template op's do);
    both dicts are copied."""
    op = cls.__new__(cls)
    op._operands = operands = SSAValues(operands)
    op._operand_uses = uses = tuple([Use(op, i) for i in range(len(operands))])
    for value, use in zip(operands, uses):
        value.add_use(use)
    op.results = SSAValues([OpResult(t, op, i) for i, t in enumerate(result_types)])
    op.properties = dict(properties)
    op.attributes = dict(attributes)
    op.location = UNKNOWN_LOC
    op.regions = ()
    for region in regions:
        op.add_region(region)
    return op


class BlockTemplate:
    """A region-free block compiled for copying: per op its class, operands (as indices
    into the values defined so far: block arguments, then each op's results, in order,
    or a value from outside the block), result types, properties and attributes."""

    def __init__(self, block: Block):
        self.arg_types = tuple(a.type for a in block.args)
        index: dict[SSAValue, int] = {a: i for i, a in enumerate(block.args)}
        self.ops = []
        for op in block.ops:
            if op.regions or op.successors:
                raise ValueError(f"{op.name} has regions or successors: not a BlockTemplate op")
            operands = tuple(index.get(v, v) for v in op.operands)
            result_types = tuple(r.type for r in op.results)
            for r in op.results:
                index[r] = len(index)
            self.ops.append((type(op), operands, result_types, op.properties, op.attributes, op.location))

    def instantiate(self, outside: Mapping[SSAValue, SSAValue] | None = None) -> Block:
        """A new block, equal to the one compiled but for the values from outside it
        that `outside` maps to others."""
        block = Block(arg_types=self.arg_types)
        values = list(block.args)
        outside = outside or {}
        last = None
        for cls, operands, result_types, properties, attributes, location in self.ops:
            op = create_op(cls, [values[v] if type(v) is int else outside.get(v, v) for v in operands],
                           result_types, properties, attributes)
            op.location = location
            values.extend(op.results)
            # Block.add_op, minus its checks (a fresh op has no parent and no regions)
            op.parent = block
            if last is None:
                block._first_op = op
            else:
                last._next_op = op
                op._prev_op = last
            last = op
        block._last_op = last
        return block


def all_ops(root: Operation) -> list[Operation]:
    """`root` and every op nested in it, parents before children (not in `walk` order).

    `Operation.walk` is a generator per nesting level: about 10 us per op of a
    lowered module, mostly in the generators."""
    ops = [root]
    i = 0
    while i < len(ops):
        op = ops[i]
        i += 1
        for region in op.regions:
            block = region._first_block
            while block is not None:
                nested = block._first_op
                while nested is not None:
                    ops.append(nested)
                    nested = nested._next_op
                block = block._next_block
    return ops
