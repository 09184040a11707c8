"""`qnn-partition{target=NAME}`: outline what an accelerator takes into functions of its own.

    qd-opt model.mlir -p 'qnn-partition{target=ethos-u}'

For every function of the module (not already a partition), each op is
looked up in the target's table (`transforms.targets`): an op whose row
exists and whose checks all hold is *supported*.  Supported ops connected by
def-use edges are grouped into maximal regions, greedily, as long as the
graph of regions and host ops stays acyclic: a region may not both feed and
consume a host op (or another region) that sits between its members.  A
target with `schedule_runs` (the Ethos-U tables) groups as Vela 5.2 does
instead: ops are put in the order of a depth-first walk from the function's
results, host ops are regrouped as Vela does (those reading only inputs first,
those feeding only results last, the others moved later past supported ops
that do not read them), and each run of consecutive supported ops is one region.  Each
region becomes

    func.func private @main_ethos_u_0(...) -> (...) attributes {qd.target = "ethos-u"}

called from where it was with `func.call`; constants used by a region travel
into it (a constant also used elsewhere is copied), the rest of the graph
stays on the host in its original order.

Every op kept on the host gets one remark saying which constraint failed,
printed to stderr one line each:

    remark: qnn.softmax %16 stays on host for ethos-u: beta -1.0 is not >= 0 [attribute]

and two supported neighbours left in different regions say why (the cycle
merging them would make):

    remark: qnn.add %7 is not merged into the ethos-u region of qnn.conv2d %3: ...

From Python, `partition(module, "ethos-u")` rewrites the module and returns a
`PartitionResult` with the remarks, the regions and the offloaded fraction.
"""

from __future__ import annotations

import heapq
import io
import sys
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.traits import IsTerminator

from transforms.targets import Target, load_target
from transforms.targets.checks import is_constant_op as is_constant

TARGET_ATTR = "qd.target"
"""Attribute on an outlined function naming the target that runs it."""


@dataclass(frozen=True)
class Remark:
    """Why an op stays on the host (or why two supported ops are in different regions)."""

    kind: str
    op: str
    value: str
    target: str
    message: str

    @property
    def line(self) -> str:
        if self.kind == "convexity":
            return f"remark: {self.op} {self.value} {self.message} [convexity]"
        return f"remark: {self.op} {self.value} stays on host for {self.target}: {self.message} [{self.kind}]"

    def __str__(self) -> str:
        return self.line


@dataclass
class RegionInfo:
    """One outlined region: its function, the ops it holds and its interface sizes."""

    function: str
    parent: str
    ops: list[str]
    inputs: int
    outputs: int


@dataclass
class PartitionResult:
    target: str
    remarks: list[Remark] = field(default_factory=list)
    regions: list[RegionInfo] = field(default_factory=list)
    total_ops: int = 0
    offloaded_ops: int = 0

    @property
    def fraction(self) -> float:
        """Offloaded compute ops / all compute ops (constants and returns not counted)."""
        return self.offloaded_ops / self.total_ops if self.total_ops else 0.0

    @property
    def host_remarks(self) -> list[Remark]:
        return [r for r in self.remarks if r.kind != "convexity"]


def _value_names(fn: func.FuncOp) -> dict[SSAValue, str]:
    """The SSA names the printer gives `fn`'s values (what the user sees in the text)."""
    printer = Printer(stream=io.StringIO())
    printer.print_op(fn)
    return dict(printer._ssa_values)  # noqa: SLF001 - the printer's own numbering


class _Clusters:
    """Ops (nodes) merged into clusters, with cluster-level def-use edges kept acyclic."""

    def __init__(self, ops: list[Operation], deps: dict[Operation, list[Operation]]):
        self.ops = ops
        self.id = {op: i for i, op in enumerate(ops)}
        self.root = list(range(len(ops)))
        self.members: dict[int, list[int]] = {i: [i] for i in range(len(ops))}
        self.succ: dict[int, set[int]] = {i: set() for i in range(len(ops))}
        self.pred: dict[int, set[int]] = {i: set() for i in range(len(ops))}
        for op in ops:
            for d in deps[op]:
                a, b = self.id[d], self.id[op]
                if a != b:
                    self.succ[a].add(b)
                    self.pred[b].add(a)

    def find(self, i: int) -> int:
        while self.root[i] != i:
            self.root[i] = self.root[self.root[i]]
            i = self.root[i]
        return i

    def detour(self, src: int, dst: int) -> list[int] | None:
        """A path src -> ... -> dst through at least one other cluster, or None."""
        parent: dict[int, int] = {}
        stack = [s for s in self.succ[src] if s != dst]
        for s in stack:
            parent[s] = src
        while stack:
            x = stack.pop()
            if dst in self.succ[x]:
                path = [x]
                while parent[path[-1]] != src:
                    path.append(parent[path[-1]])
                return path[::-1]
            for y in self.succ[x]:
                if y != dst and y not in parent and y != src:
                    parent[y] = x
                    stack.append(y)
        return None

    def merge(self, a: int, b: int) -> None:
        keep, drop = min(a, b), max(a, b)
        self.root[drop] = keep
        self.members[keep] += self.members.pop(drop)
        for x in self.succ.pop(drop):
            self.pred[x].discard(drop)
            if x != keep:
                self.pred[x].add(keep)
                self.succ[keep].add(x)
        for x in self.pred.pop(drop):
            self.succ[x].discard(drop)
            if x != keep:
                self.succ[x].add(keep)
                self.pred[keep].add(x)
        self.succ[keep].discard(keep)
        self.pred[keep].discard(keep)


class _FunctionPartitioner:
    def __init__(self, module: ModuleOp, fn: func.FuncOp, target: Target, result: PartitionResult):
        self.module = module
        self.fn = fn
        self.target = target
        self.result = result
        self.block = fn.body.block
        self.names = _value_names(fn)

    def name_of(self, op: Operation) -> str:
        if op.results:
            return "%" + self.names.get(op.results[0], "?")
        return "(no result)"

    def _calls_partition(self, op: Operation) -> bool:
        if not isinstance(op, func.CallOp):
            return False
        callee = self.module.body.block
        name = op.callee.root_reference.data
        for f in callee.ops:
            if isinstance(f, func.FuncOp) and f.sym_name.data == name:
                return TARGET_ATTR in f.attributes
        return False

    def top(self, op: Operation) -> Operation | None:
        """The op of this function's block that contains `op` (itself if it is one)."""
        return self.block.find_ancestor_op_in_block(op)

    def run(self, used_symbols: set[str]) -> None:
        all_ops = list(self.block.ops)
        terminator = all_ops[-1] if all_ops and all_ops[-1].has_trait(IsTerminator) else None
        compute = [op for op in all_ops if op is not terminator and not is_constant(op)]
        constants = [op for op in all_ops if is_constant(op)]
        self.position = {op: i for i, op in enumerate(all_ops)}
        supported = self._classify(compute)
        deps = self._dependencies(compute)
        clusters = _Clusters(compute, deps)
        if self.target.schedule_runs:
            self._group_schedule_runs(clusters, compute, deps, supported)
        else:
            self._grow_regions(clusters, compute, deps, supported)
        self._report_splits(clusters, compute, deps, supported)
        order = self._schedule(clusters, compute, constants)
        self._rebuild(order, clusters, compute, supported, terminator, used_symbols)

    def _classify(self, compute: list[Operation]) -> set[Operation]:
        """The ops the target takes; a remark for each other op (calls into earlier regions aside)."""
        earlier = {op for op in compute if self._calls_partition(op)}
        self.result.total_ops += len(compute) - len(earlier)
        supported: set[Operation] = set()
        for op in compute:
            if op in earlier:  # a region of an earlier partitioning: a host node, not an op
                continue
            reason = self.target.reason(op) if not op.regions else ("op", f"{op.name} has regions")
            if reason is None:
                supported.add(op)
            else:
                kind, message = reason
                self.result.remarks.append(Remark(kind, op.name, self.name_of(op), self.target.name, message))
        return supported

    def _dependencies(self, compute: list[Operation]) -> dict[Operation, list[Operation]]:
        """For each op, the ops of the block (not constants) whose results it (or anything nested) reads."""
        compute_set = set(compute)
        deps: dict[Operation, list[Operation]] = {}
        for op in compute:
            found: list[Operation] = []
            for inner in op.walk():
                for v in inner.operands:
                    owner = v.owner
                    if isinstance(owner, Operation):
                        d = self.top(owner)
                        if d is not None and d in compute_set and d is not op and d not in found:
                            found.append(d)
            deps[op] = found
        return deps

    @staticmethod
    def _grow_regions(clusters: _Clusters, compute, deps, supported) -> None:
        """Merge supported producer/consumer pairs until no merge keeps the graph acyclic."""
        changed = True
        while changed:
            changed = False
            for op in compute:
                if op not in supported:
                    continue
                for d in deps[op]:
                    if d not in supported:
                        continue
                    a, b = clusters.find(clusters.id[d]), clusters.find(clusters.id[op])
                    if a == b or clusters.detour(a, b) or clusters.detour(b, a):
                        continue
                    clusters.merge(a, b)
                    changed = True

    def _depth_first_schedule(self, compute, deps) -> list[Operation]:
        """Vela's order: post-order of a depth-first walk from the function's results, the last
        result and the last operand explored first (regor's Graph::TraverseGraphFromEnd); ops
        no result depends on follow in block order."""
        compute_set = set(compute)
        terminator = self.block.last_op
        roots = []
        if terminator is not None and terminator.has_trait(IsTerminator):
            for v in terminator.operands:
                owner = v.owner
                if isinstance(owner, Operation):
                    d = self.top(owner)
                    if d in compute_set:
                        roots.append(d)
        order: list[Operation] = []
        visited: set[Operation] = set()
        stack: list[tuple[bool, Operation]] = [(False, r) for r in roots]
        while stack:
            done, op = stack.pop()
            if done:
                order.append(op)
                continue
            if op in visited:
                continue
            visited.add(op)
            stack.append((True, op))
            for d in deps[op]:
                if d not in visited:
                    stack.append((False, d))
        order += [op for op in compute if op not in visited]
        return order

    def _group_host_ops(self, order: list[Operation], deps, supported) -> list[Operation]:
        """Vela's reordering of the schedule for fewer NPU/CPU switches (regor's
        SchedulerPacking::ReorderOperations): host ops that read only function arguments,
        constants and such early host ops go first; host ops whose results only the function
        returns go last; every other host op, latest first, moves later past supported ops
        that do not read its results, up to the next host op."""
        early: list[Operation] = []
        late: list[Operation] = []
        others: list[Operation] = []
        early_set: set[Operation] = set()
        terminator = self.block.last_op
        for op in order:
            if op not in supported and all(d in early_set for d in deps[op]):
                early.append(op)
                early_set.add(op)
            elif op not in supported and op.results and all(
                use.operation is terminator for r in op.results for use in r.uses
            ):
                late.append(op)
            else:
                others.append(op)
        for k in range(len(others) - 1, -1, -1):
            if others[k] in supported:
                continue
            j = k
            while j + 1 < len(others) and others[j + 1] in supported and others[j] not in deps[others[j + 1]]:
                others[j], others[j + 1] = others[j + 1], others[j]
                j += 1
        return early + others + late

    def _group_schedule_runs(self, clusters: _Clusters, compute, deps, supported) -> None:
        """Merge each run of consecutive supported ops of Vela's schedule (a run of a
        topological order is convex, so the region graph stays acyclic)."""
        self.run_order = self._group_host_ops(self._depth_first_schedule(compute, deps), deps, supported)
        previous = None
        for op in self.run_order:
            if op in supported and previous is not None and previous in supported:
                clusters.merge(clusters.find(clusters.id[previous]), clusters.find(clusters.id[op]))
            previous = op

    def _report_splits(self, clusters: _Clusters, compute, deps, supported) -> None:
        """A remark for each supported consumer left out of its supported producer's region."""
        for op in compute:
            if op not in supported:
                continue
            reported: set[int] = set()
            for d in deps[op]:
                if d not in supported:
                    continue
                a, b = clusters.find(clusters.id[d]), clusters.find(clusters.id[op])
                if a == b or a in reported:
                    continue
                reported.add(a)
                if self.target.schedule_runs:
                    self.result.remarks.append(self._schedule_split_remark(op, d, supported))
                    continue
                path = clusters.detour(a, b) or clusters.detour(b, a) or []
                self.result.remarks.append(self._split_remark(op, d, path, clusters, supported))

    def _schedule(self, clusters: _Clusters, compute, constants) -> list[tuple[str, object]]:
        """Clusters and constants in a topological order, each as early as its first op was."""
        roots = sorted({clusters.find(i) for i in range(len(compute))})
        nodes: list[tuple[str, object]] = [("cluster", r) for r in roots] + [("const", c) for c in constants]
        node_of_cluster = {r: n for n, r in enumerate(roots)}
        key = [
            min(self.position[compute[m]] for m in clusters.members[item]) if kind == "cluster" else self.position[item]
            for kind, item in nodes
        ]
        succs: dict[int, list[int]] = {n: [] for n in range(len(nodes))}
        waiting = [0] * len(nodes)
        for n, (kind, item) in enumerate(nodes):
            if kind == "cluster":
                for p in clusters.pred[item]:
                    succs[node_of_cluster[p]].append(n)
                    waiting[n] += 1
        ready = [(key[n], n) for n in range(len(nodes)) if waiting[n] == 0]
        heapq.heapify(ready)
        order: list[tuple[str, object]] = []
        while ready:
            _, n = heapq.heappop(ready)
            order.append(nodes[n])
            for s in succs[n]:
                waiting[s] -= 1
                if waiting[s] == 0:
                    heapq.heappush(ready, (key[s], s))
        assert len(order) == len(nodes), "qnn-partition: the region graph has a cycle"
        return order

    def _rebuild(self, order, clusters: _Clusters, compute, supported, terminator, used_symbols) -> None:
        """Outline each region, then put the block back together in the scheduled order."""
        for op in list(self.block.ops):
            if op is not terminator:
                self.block.detach_op(op)
        placed: list[Operation] = []
        insert_after: Operation = self.fn
        for kind, item in order:
            if kind == "const":
                placed.append(item)
                continue
            members = sorted((compute[m] for m in clusters.members[item]), key=self.position.__getitem__)
            if members[0] not in supported:
                placed.extend(members)
                continue
            name = self._fresh_name(self.fn.sym_name.data, used_symbols)
            region_fn, call = self._outline(name, members)
            self.module.body.block.insert_op_after(region_fn, insert_after)
            insert_after = region_fn
            placed.append(call)
            self.result.offloaded_ops += len(members)
        for op in placed:
            if is_constant(op) and not op.results[0].uses:
                op.erase()  # every user went into a region, which has its own copy
            elif terminator is not None:
                self.block.insert_op_before(op, terminator)
            else:
                self.block.add_op(op)

    def _split_remark(self, op, d, path, clusters, supported) -> Remark:
        compute = clusters.ops
        between = None
        for c in path:
            first_op = compute[min(clusters.members[c])]
            if first_op not in supported:
                between = f"{first_op.name} {self.name_of(first_op)} (host)"
                break
        if between is None and path:
            first_op = compute[min(clusters.members[path[0]])]
            between = f"the {self.target.name} region of {first_op.name} {self.name_of(first_op)}"
        message = (
            f"is not merged into the {self.target.name} region of {d.name} {self.name_of(d)}: "
            f"the path through {between or 'another op'} would make a cycle"
        )
        return Remark("convexity", op.name, self.name_of(op), self.target.name, message)

    def _schedule_split_remark(self, op, d, supported) -> Remark:
        """Why a supported consumer is not in its supported producer's region (schedule runs)."""
        order = self.run_order
        lo, hi = sorted((order.index(d), order.index(op)))
        host = next((x for x in order[lo + 1 : hi] if x not in supported), None)
        between = f"{host.name} {self.name_of(host)} (host)" if host is not None else "another op"
        message = (
            f"is not merged into the {self.target.name} region of {d.name} {self.name_of(d)}: "
            f"the depth-first schedule from the results runs {between} between them"
        )
        return Remark("convexity", op.name, self.name_of(op), self.target.name, message)

    def _fresh_name(self, fn_name: str, used: set[str]) -> str:
        stem = f"{fn_name}_{self.target.name.replace('-', '_')}"
        k = 0
        while f"{stem}_{k}" in used:
            k += 1
        used.add(f"{stem}_{k}")
        return f"{stem}_{k}"

    def _outline(self, name: str, members: list[Operation]) -> tuple[func.FuncOp, func.CallOp]:
        member_set = set(members)
        inputs: list[SSAValue] = []
        for op in members:
            for v in op.operands:
                owner = v.owner
                if isinstance(owner, Operation) and (owner in member_set or is_constant(owner)):
                    continue
                if v not in inputs:
                    inputs.append(v)
        outputs: list[SSAValue] = [
            r for op in members for r in op.results if any(use.operation not in member_set for use in r.uses)
        ]
        body = Block(arg_types=[v.type for v in inputs])
        arg_of = {v: body.args[i] for i, v in enumerate(inputs)}
        for v, arg in arg_of.items():
            arg.name_hint = v.name_hint
        clones: dict[Operation, Operation] = {}
        for op in members:
            for i, v in enumerate(op.operands):
                if v in arg_of:
                    op.operands[i] = arg_of[v]
                elif isinstance(v.owner, Operation) and is_constant(v.owner) and v.owner not in member_set:
                    original = v.owner
                    if original not in clones:
                        clone = original.clone()
                        clones[original] = clone
                        body.add_op(clone)
                    op.operands[i] = clones[original].results[v.index]
            body.add_op(op)
        call = func.CallOp(name, inputs, [v.type for v in outputs])
        for k, r in enumerate(outputs):
            r.replace_uses_with_if(call.results[k], lambda use: use.operation not in member_set)
        body.add_op(func.ReturnOp(*outputs))
        region_fn = func.FuncOp(
            name, ([v.type for v in inputs], [v.type for v in outputs]), Region(body), "private"
        )
        region_fn.attributes[TARGET_ATTR] = StringAttr(self.target.name)
        self.result.regions.append(
            RegionInfo(name, self.fn.sym_name.data, [op.name for op in members], len(inputs), len(outputs))
        )
        return region_fn, call


def partition(module: ModuleOp, target: str | Target) -> PartitionResult:
    """Outline the regions `target` supports in every function of `module` (in place)."""
    if isinstance(target, str):
        target = load_target(target)
    result = PartitionResult(target.name)
    functions = [
        op
        for op in module.body.block.ops
        if isinstance(op, func.FuncOp) and op.body.blocks and TARGET_ATTR not in op.attributes
    ]
    used = {op.sym_name.data for op in module.body.block.ops if isinstance(op, func.FuncOp)}
    for fn in functions:
        _FunctionPartitioner(module, fn, target, result).run(used)
    return result


@dataclass(frozen=True)
class QnnPartitionPass(ModulePass):
    """Outline maximal acyclic regions of ops `target` supports into `qd.target` functions.

    Prints one remark per op kept on the host to stderr.
    """

    name = "qnn-partition"

    target: str = "ethos-u"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        result = partition(op, self.target)
        for remark in result.remarks:
            print(remark.line, file=sys.stderr)
