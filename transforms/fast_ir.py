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

import functools
from collections.abc import Callable, Mapping, Sequence

from xdsl.dialects.builtin import UNKNOWN_LOC, BytesAttr, DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.core import BlockArgument, ErasedSSAValue, OpResult, SSAValues, Use
from xdsl.traits import IsTerminator, MemoryEffect, NoMemoryEffect, SymbolOpInterface
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from qdialect import trusted


def _linked_uses(op: Operation, operands) -> tuple:
    """The operand uses of a new `op`, each linked at the head of its value's use list:
    `Use(op, i)` then `value.add_use(use)`, without the method calls."""
    uses = []
    for i, value in enumerate(operands):
        first = value.first_use
        use = Use(op, i, None, first)
        if first is not None:
            first._prev_use = use
        value.first_use = use
        uses.append(use)
    return tuple(uses)


def new_block(arg_types: Sequence[Attribute]) -> Block:
    """`Block(arg_types=arg_types)`, its arguments given their unknown location directly
    (their dataclass's default asks `_unknown_loc()`, an import statement per call: 4% of
    a lowering)."""
    block = Block()
    block._args = tuple([BlockArgument(t, block, i, UNKNOWN_LOC) for i, t in enumerate(arg_types)])
    return block


def new_region(block: Block) -> Region:
    """`Region(block)` for a new `block` no region holds (xDSL's constructor takes any
    iterable of blocks and checks each)."""
    if block.parent is not None:
        return Region(block)  # (with xDSL's error)
    region = Region()
    block.parent = region
    region._first_block = region._last_block = block
    return region


def create_op(cls: type[Operation], operands: Sequence[SSAValue], result_types: Sequence[Attribute],
              properties: Mapping[str, Attribute], attributes: Mapping[str, Attribute],
              regions: Sequence[Region] = ()) -> Operation:
    """What `cls.create(operands=..., result_types=..., properties=..., attributes=...,
    regions=...)` makes (no successors, unknown location), without its conversions.

    `properties` must already hold the IRDL defaults of `cls` (as a template op's do);
    both dicts are copied."""
    op = cls.__new__(cls)
    op._operands = operands = SSAValues(operands)
    op._operand_uses = _linked_uses(op, operands)
    op.results = SSAValues([OpResult(t, op, i) for i, t in enumerate(result_types)])
    op.properties = dict(properties)
    op.attributes = dict(attributes)
    op.location = UNKNOWN_LOC
    op.regions = ()
    for region in regions:
        op.add_region(region)
    return op


def dense_attr(t: TensorType, data: bytes) -> DenseIntOrFPElementsAttr:
    """`DenseIntOrFPElementsAttr(t, BytesAttr(data))` for `t` a static tensor type of integer
    or float elements and `data` exactly the bytes of its elements, without the IRDL
    verification of the attribute (about 10 us, two thirds of making a per-channel constant;
    the lowerings make one or two per op): `qdialect.trusted.attr`."""
    return trusted.attr(DenseIntOrFPElementsAttr, t, trusted.data_attr(BytesAttr, bytes(data)))


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
            # operands all defined in the block (None: some from outside), the one result's
            # type (None: another number of results): instantiate's common case, made cheap
            inside = operands if all(type(v) is int for v in operands) else None
            single = result_types[0] if len(result_types) == 1 else None
            self.ops.append((type(op), operands, inside, result_types, single, op.properties, op.attributes,
                             op.location))

    def instantiate(self, outside: Mapping[SSAValue, SSAValue] | None = None) -> Block:
        """A new block, equal to the one compiled but for the values from outside it
        that `outside` maps to others."""
        block = new_block(self.arg_types)
        values = list(block.args)
        outside = outside or {}
        last = None
        new_result = OpResult
        for cls, operands, inside, result_types, single, properties, attributes, location in self.ops:
            # create_op, inlined (a body is a dozen ops; this loop is most of a lowering)
            op = cls.__new__(cls)
            if inside is not None:
                op._operands = args = SSAValues([values[v] for v in inside])
            else:
                op._operands = args = SSAValues([values[v] if type(v) is int else outside.get(v, v)
                                                 for v in operands])
            op._operand_uses = _linked_uses(op, args)
            if single is not None:
                result = new_result(single, op, 0)
                op.results = SSAValues((result,))
                values.append(result)
            else:
                op.results = results = SSAValues([new_result(t, op, i) for i, t in enumerate(result_types)])
                values.extend(results)
            op.properties = dict(properties) if properties else {}
            op.attributes = dict(attributes) if attributes else {}
            op.location = location
            op.regions = ()
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


def op_types(root: Operation) -> set[type]:
    """`{type(op) for op in all_ops(root)}`, without the list of ops (a lowered module has
    about a hundred ops per convolution, of a few classes)."""
    types = {type(root)}
    add = types.add
    pending = [root]
    while pending:
        for region in pending.pop().regions:
            block = region._first_block
            while block is not None:
                nested = block._first_op
                while nested is not None:
                    add(type(nested))
                    if nested.regions:
                        pending.append(nested)
                    nested = nested._next_op
                block = block._next_block
    return types


class _ReplacingRewriter:
    """The part of xDSL's PatternRewriter a pattern run by `rewrite_once` may use: `replace`,
    with what PatternRewriter.replace does when no listener wants to know (insert the new
    ops before `op`, move the uses of its results, carry name hints over, erase it)."""

    __slots__ = ("has_done_action", "erased")

    def __init__(self, erased: set[int]):
        self.has_done_action = False
        self.erased = erased  # id()s of the erased ops nested in the replaced ones

    def replace(self, op: Operation, new_ops, new_results=None, safe_erase: bool = True):
        self.has_done_action = True
        new_ops, new_results = _inserted(op, new_ops, new_results)
        for old_result, new_result in zip(op.results, new_results):
            if old_result is not new_result:
                if new_result is None:
                    old_result.erase(safe_erase=safe_erase)
                else:
                    replace_uses(old_result, new_result)
            if new_result is not None and not new_result.name_hint:
                new_result.name_hint = old_result.name_hint
        _hint_new_results(new_ops, new_results)
        if op.regions:
            self.erased.update(id(o) for o in op.walk())
        _erase(op, safe_erase)


def _inserted(op: Operation, new_ops, new_results) -> tuple:
    """PatternRewriter.replace's start: `new_ops` (an op or a sequence) inserted before `op`,
    and the values replacing its results (by default the last new op's), as many as it has."""
    if isinstance(new_ops, Operation):
        new_ops = (new_ops,)
    if new_ops:
        _insert_before(op.parent, new_ops, op)
    if new_results is None:
        new_results = new_ops[-1].results if new_ops else []
    if len(op.results) != len(new_results):
        raise ValueError(f"Expected {len(op.results)} new results, but got {len(new_results)}")
    return new_ops, new_results


def _hint_new_results(new_ops, new_results) -> None:
    """PatternRewriter.replace's end: one replacing value's name hint given to the new ops'
    results that have none."""
    if len(new_results) == 1 and (only := new_results[0]) is not None and (hint := only.name_hint) is not None:
        for new_op in new_ops:
            for res in new_op.results:
                if not res.name_hint:
                    res.name_hint = hint


def _insert_before(block: Block, new_ops: Sequence[Operation], anchor: Operation) -> None:
    """`block.insert_ops_before(new_ops, anchor)`.  A new op without regions is linked in
    directly: xDSL's check that it is not an ancestor of `block` walks up every parent of
    `block`, and an op without regions is nobody's ancestor."""
    if block is None or anchor.parent is not block:
        raise ValueError("Can't insert operation before operation not in current block")
    for new in new_ops:
        if new.parent is not None or new.regions:
            block.insert_op_before(new, anchor)  # (with xDSL's checks and errors)
            continue
        new.parent = block
        prev = anchor._prev_op
        new._prev_op, new._next_op = prev, anchor
        anchor._prev_op = new
        if prev is None:
            block._first_op = new
        else:
            prev._next_op = new


def replace_uses(old: SSAValue, new: SSAValue) -> None:
    """`old.replace_all_uses_with(new)`: each use of `old`, first to last, becomes the
    first use of `new` (as `OpOperands.__setitem__` moves it), its op's operand tuple
    rebuilt once instead of through a view object and two method calls."""
    if new is old:
        return
    use = old.first_use
    while use is not None:
        following = use._next_use
        user = use.operation
        operands = list(user._operands)
        operands[use.index] = new
        user._operands = SSAValues(operands)
        # unlinked from the head of old's list, linked at the head of new's
        old.first_use = following
        if following is not None:
            following._prev_use = None
        first = new.first_use
        use._prev_use, use._next_use = None, first
        if first is not None:
            first._prev_use = use
        new.first_use = use
        use = following
    if new.name_hint is None:
        new.name_hint = old.name_hint


def _erase(op: Operation, safe_erase: bool = True) -> None:
    if (block := op.parent) is not None:
        block.detach_op(op)
    for r in op.results:
        if r.first_use is not None:
            op.erase(safe_erase=safe_erase)
            return
    # what op.erase does when no result is used (each result's erase would replace
    # its no uses by a new ErasedSSAValue)
    op.drop_all_references()


def rewrite_once(region: Region, pattern) -> None:
    """What `PatternRewriteWalker(GreedyRewritePatternApplier([pattern]),
    apply_recursively=False).rewrite_region(region)` does, for a `pattern` that only
    replaces the op it is given (`rewriter.replace(op, ...)`): every op nested in `region`,
    in order (an op before the ops in its regions), is erased if it is trivially dead and
    else given to the pattern once; ops the rewrites insert are not visited.  Without the
    walker's worklist, listeners and per-op PatternRewriter state (about a tenth of a
    lowering)."""
    ops = all_ops_in_walk_order(region)
    erased: set[int] = set()  # id()s of erased ops still in `ops` (nested in an erased op)
    rewriter = _ReplacingRewriter(erased)
    match = pattern.match_and_rewrite
    for op in ops:
        if erased and id(op) in erased:
            continue
        try:
            if is_trivially_dead(op):
                if op.regions:
                    erased.update(id(o) for o in op.walk())
                _erase(op)
                continue
            match(op, rewriter)
        except Exception as err:  # noqa: BLE001 - as the walker reports it
            op.emit_error(f"Error while applying pattern: {err}", underlying_error=err)


class _GreedyRewriter:
    """The part of xDSL's PatternRewriter a pattern run by `rewrite_greedy` may use (`replace`,
    `erase`), telling the worklist what the walker's listeners would: inserted ops, the users
    of replaced results and of values replaced in them, and the producers an erased op was
    the only user of are (re)visited."""

    __slots__ = ("has_done_action", "_stack", "_index")

    def __init__(self):
        self.has_done_action = False
        # xdsl.utils.worklist.Worklist keyed by id(): an IRDL op's hash is a Python call
        self._stack: list[Operation | None] = []
        self._index: dict[int, int] = {}

    def push(self, op: Operation) -> None:
        """Worklist.push: on top, unless already in the worklist (then it keeps its place)."""
        key = id(op)
        if key not in self._index:
            self._index[key] = len(self._stack)
            self._stack.append(op)

    def pop(self) -> Operation | None:
        stack = self._stack
        while stack:
            op = stack.pop()
            if op is not None:
                del self._index[id(op)]
                return op
        return None

    def _remove(self, op: Operation) -> None:
        pos = self._index.pop(id(op), None)
        if pos is not None:
            self._stack[pos] = None

    def erase(self, op: Operation, safe_erase: bool = True) -> None:
        self.has_done_action = True
        # PatternRewriteWalker._handle_operation_removal
        for operand in op._operands:
            first = operand.first_use
            if (first is not None and first._next_use is None and not isinstance(operand, ErasedSSAValue)
                    and isinstance(owner := operand.owner, Operation)):
                self.push(owner)
        if op.regions:
            for nested in op.walk():
                self._remove(nested)
        else:
            self._remove(op)
        _erase(op, safe_erase)

    def replace(self, op: Operation, new_ops, new_results=None, safe_erase: bool = True):
        """PatternRewriter.replace with the walker's listeners inlined."""
        self.has_done_action = True
        new_ops, new_results = _inserted(op, new_ops, new_results)
        push = self.push
        for new_op in new_ops:
            push(new_op)
        for old_result in op.results:
            use = old_result.first_use  # (the use list by its links: `uses` makes two objects)
            while use is not None:
                push(use.operation)
                use = use._next_use
        for old_result, new_result in zip(op.results, new_results):
            if old_result is not new_result:
                modified = []
                use = old_result.first_use
                while use is not None:
                    modified.append(use.operation)
                    use = use._next_use
                if new_result is None:
                    old_result.erase(safe_erase=safe_erase)
                else:
                    replace_uses(old_result, new_result)
                for user in modified:
                    self.push(user)
            if new_result is not None and not new_result.name_hint:
                new_result.name_hint = old_result.name_hint
        _hint_new_results(new_ops, new_results)
        self.erase(op, safe_erase)


def rewrite_greedy(region: Region, match: Callable[[Operation, _GreedyRewriter], None],
                   may_match: Callable[[Operation], bool]) -> None:
    """What `PatternRewriteWalker(GreedyRewritePatternApplier(patterns),
    apply_recursively=True).rewrite_region(region)` does, for patterns that only replace
    the op they are given (`rewriter.replace(op, ...)`), `match(op, rewriter)` applying
    them in order: the same worklist (trivially dead ops erased, the others given to
    `match`; what a rewrite touches visited again), rounds over the whole region until
    one changes nothing.  Without the walker's PatternRewriter state, listeners and
    pattern dispatch per op, and without its last round: when no op is trivially dead
    and `may_match(op)` is false for every op (the patterns would leave it alone) that
    round could not change anything and is skipped."""
    rewriter = _GreedyRewriter()
    while True:
        ops = all_ops_in_walk_order(region)
        if not any(may_match(op) or _is_trivially_dead(op) for op in ops):
            return
        for op in reversed(ops):  # PatternRewriteWalker._populate_worklist: a stack
            rewriter.push(op)
        changed = False
        while (op := rewriter.pop()) is not None:
            rewriter.has_done_action = False
            try:
                if _is_trivially_dead(op):
                    rewriter.erase(op)
                else:
                    match(op, rewriter)
            except Exception as err:  # noqa: BLE001 - as the walker reports it
                op.emit_error(f"Error while applying pattern: {err}", underlying_error=err)
            changed |= rewriter.has_done_action
        if not changed:
            return


def _is_trivially_dead(op: Operation) -> bool:
    """xDSL's `is_trivially_dead`, its first condition (no result used) asked first without
    a generator (most ops visited have a used result: then the traits and effects need
    not be looked at), and the second answered per class where the class decides it."""
    for result in op.results:
        if result.first_use is not None:
            return False
    return _dead_when_unused(type(op)) or is_trivially_dead(op)


@functools.cache
def _dead_when_unused(cls: type[Operation]) -> bool:
    """`would_be_trivially_dead` holds for every op of `cls`, whatever its fields: traits are
    the class's, and with only `NoMemoryEffect` memory-effect traits (at least one) an op's
    effects are none.  (False: ask xDSL of each op.)"""
    effects = cls.get_traits_of_type(MemoryEffect)
    return (bool(effects) and all(isinstance(t, NoMemoryEffect) for t in effects)
            and not cls.has_trait(IsTerminator) and not cls.has_trait(SymbolOpInterface))


def all_ops_in_walk_order(region: Region) -> list[Operation]:
    """`list(region.walk())` (an op, then the ops nested in it, in order), without its
    generator per nesting level."""
    ops: list[Operation] = []

    def visit(region: Region) -> None:
        block = region._first_block
        while block is not None:
            op = block._first_op
            while op is not None:
                ops.append(op)
                for nested in op.regions:
                    visit(nested)
                op = op._next_op
            block = block._next_block

    visit(region)
    return ops
