"""One TIR entry function per model: the whole model in one call, without the Relax VM (issue 25).

A small model's call is mostly the VM's: storage and tensor allocations, reshapes, shape
checks and one packed call per kernel (mlp_act: 10 kernels, 4 alloc_storage, 10
alloc_tensor, 9 reshape per call).  `fuse` turns a translated Relax module into one TIR
IRModule whose entry `main` calls every kernel in order, and `build_fused` compiles it with
TVM's TIR pipeline:

    main(input_0, ..., output_0, ..., blob_0, ..., work_0, ..., threads)

Destination passing: the caller owns every buffer and the function writes the outputs and
returns nothing (a model of FUSED_PARTS_MIN_CALLS kernel calls or more: two entries, `main`
and `main_1`, each half of the calls, called in that order with the same arguments and built
as two LLVM modules on two threads, which halves TVM's passes and LLVM in a cold compile on
two cores); `threads` is the thread count TVM's pool runs on (tvm_bridge/cpu.py's
`current_threads`, passed on every call).  Threads (session 17): when the model's
convolution and depthwise kernels that can split their rows add up to FUSED_LAUNCH_MIN_MACS per entry,
the whole body of `main` (of each entry, see below) is ONE parallel launch of TVM's pool, at every thread count: those
kernels split their rows in `threads` chunks, one call of an outlined function (a compute
scope) per chunk, with barriers between dependent steps, and the other kernels run on the
first thread; one wake-up of the pool per call instead of one per parallel loop.  Below
that, every kernel runs serially.  (QDIALECT_FUSED_LAUNCH=0: the earlier form, each parallel
loop its own launch at more than one thread and a serial twin at one.)  `blob_k` hold the
model's constants (TVM 0.27's TIR has no
embedded-constant statement), `work_k` its intermediates: one 1-D array per dtype each,
every constant or intermediate a region of it starting on a 64-byte boundary, never shared
with another (see below).  A reshape is
its input's address; an output that is an input, a constant or a reshape of one is copied.

How: our Relax pipeline runs up to and including our schedule pass (before memory
planning), so `main` is a chain of `call_tir`s, reshapes, constants and tuples.  Each
kernel becomes a private TIR function of the module, built from its PrimFunc object (no
TVMScript text): a kernel in block form first lowered to flat, block-free TIR (TVM's own
passes up to FlattenBuffer), its buffer parameters turned into pointers (`T.handle`) with a
buffer declared on each, returning int32 (the status of a parallel launch).  `main` binds
one pointer variable per intermediate (its region of the workspace) and calls the kernels
with them.  `build_fused` runs TVM's lowering passes on these small functions, then inlines
every kernel into `main` in TIR (InlinePrivateFunctions), so each kernel's buffers take the
pointer variable of the intermediate they are bound to.  That is why the inlining is TVM's
and not LLVM's: TVM gives every pointer variable a TBAA type of its own and marks a
`noalias` function's buffers as not aliasing, so kernels left for LLVM to inline would see
one intermediate through two types, and LLVM may then move one kernel's store past another's
load of the same bytes (found when intermediates shared bytes: an ONNX MLP, 29 elements
wrong; TVM's StorageRewrite sharing broke the masked encoders' function the same way in
session 13).  Through one variable per intermediate, and no two intermediates sharing bytes,
the producer's stores and the consumers' loads carry one type.  Until session 16 the
kernels' bodies were printed as TVMScript, renamed, pasted into one function and parsed
back: MobileNetV2-0.35 at 96x96 spent 4.6 s of a 13.5 s cold compile there (now 0.04 s;
a whole cold `qd-run` 7.4 s wall in bench/time_to_first.py).

Anything else in `main` (a dynamic shape, an op not listed, a packed call) makes `fuse`
return None and the caller keeps the VM path: the fused form is an optimisation, never a
requirement.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np

from tvm_bridge.cpu import THREADS, configure_pool, env_int


def _switched_off(name: str) -> bool:
    """Whether the environment variable `name` is 0 (or off / no / false)."""
    return os.environ.get(name, "1").strip().lower() in ("0", "off", "no", "false")


def launch_mode() -> str:
    """How a fused model uses TVM's thread pool: "one" (default): one parallel launch per call
    for the whole model (`_fuse`); "per-loop" with QDIALECT_FUSED_LAUNCH=0: each parallel loop
    is its own launch at more than one thread, serial twins at one (the form until session
    17, kept for comparisons: bench/latency.py A/B)."""
    return "per-loop" if _switched_off("QDIALECT_FUSED_LAUNCH") else "one"


#: the multiply-accumulates of a model's kernels with a one-launch form, per entry function
#: (each entry is one launch of the pool per call, `parts`), from which the model is built as
#: one parallel launch per entry; below it every kernel runs serially.  Measured: cnn_small
#: (0.55 M MACs, one entry) paid ~1 us for the launch at one thread, 8 -> 9 us, and gained
#: nothing at two (Zen 4, session 17); on the 2-core Zen 5 (session 23, 2 threads against 1,
#: nothing else running) mobilenetv2_tiny (2.4 M MACs, two entries: 1.2 M a launch) 26.0
#: against 23.5 us, ds_cnn_kws (2.7 M, one entry) 15.4 against 18.3, mobilenetv2_035_h
#: (10.6 M, two entries) 88.5 against 99.0
FUSED_LAUNCH_MIN_MACS = env_int("QDIALECT_FUSED_LAUNCH_MIN_MACS", 1 << 21)


#: a model of at least this many kernel calls is fused into two entry functions, `main` and
#: `main_1` (each about half of the calls' TIR, `_cuts`; the same arguments; called one
#: after the other), built as two LLVM modules on two threads: TVM's passes and LLVM are the
#: bulk of a cold compile and each works on one module on one core.  MobileNetV2-0.35 (53
#: calls), session 18, 2-core Zen 4: see `build_fused`.  The cost is one more packed call
#: (and, in the one-launch form, one more wake-up of the pool) per model call, noise beside
#: a model of this size.
FUSED_PARTS_MIN_CALLS = env_int("QDIALECT_FUSED_PARTS_MIN_CALLS", 24)


def parts(n_calls: int) -> int:
    """How many entry functions a fused model of `n_calls` kernel calls is built as."""
    return 2 if FUSED_PARTS_MIN_CALLS > 0 and n_calls >= FUSED_PARTS_MIN_CALLS else 1


def launches(parallel_macs: int, n_calls: int) -> bool:
    """Whether a fused model of `n_calls` kernel calls, whose kernels with a one-launch form
    do `parallel_macs` multiply-accumulates, is built as one parallel launch per entry:
    FUSED_LAUNCH_MIN_MACS for each entry (`parts`), each of which wakes the pool once a call."""
    return parallel_macs >= FUSED_LAUNCH_MIN_MACS * parts(n_calls)


def entry_name(k: int) -> str:
    """The name of a fused model's `k`-th entry function: main, main_1, main_2, ..."""
    return "main" if k == 0 else f"main_{k}"


def enabled() -> bool:
    """False when QDIALECT_FUSED is 0 (or off / no / false): every build takes the VM path."""
    return not _switched_off("QDIALECT_FUSED")


@dataclass
class FusedModel:
    """A model as one TIR entry `main(inputs..., outputs..., constant blobs..., workspaces..., threads)`.

    `inputs` / `outputs`: (shape, dtype string) per model input / output, in L3's bits
    (signless: an unsigned model edge is int8 here); `constants`: the constant blobs
    (1-D numpy arrays, one per dtype) passed after the outputs on every call; `workspace`:
    (dtype, elements) of the 1-D arrays for the intermediates, passed last; `module`: the
    IRModule (`main` and one private function per kernel, `<kernel>_serial` beside a
    kernel with parallel loops)."""

    module: object
    inputs: list[tuple[tuple[int, ...], str]]
    outputs: list[tuple[tuple[int, ...], str]]
    constants: list[np.ndarray] = field(default_factory=list)
    n_kernels: int = 0
    workspace: list[tuple[str, int]] = field(default_factory=list)
    entries: list[str] = field(default_factory=lambda: ["main"])


class _NotFusable(Exception):
    """`main` holds something the fused form does not take (the message says what)."""


_PRELOWER = None


def _prelower():
    """TVM's TIR passes that take a scheduled kernel to flat, block-free TIR (the head of
    `tvm.s_tir.pipeline.default_s_tir_pipeline`, up to FlattenBuffer)."""
    global _PRELOWER
    if _PRELOWER is None:
        import tvm
        from tvm import s_tir, tirx

        _PRELOWER = tvm.transform.Sequential([
            s_tir.transform.CanonicalizeLoop(),
            s_tir.transform.LowerCrossThreadReduction(),
            s_tir.transform.LowerInitBlock(),
            s_tir.transform.PlanAndUpdateBufferAllocationLocation(),
            s_tir.transform.ConvertBlocksToOpaque(),
            s_tir.transform.CompactBufferAllocation(),
            s_tir.transform.LowerMatchBuffer(),
            s_tir.transform.LowerOpaqueBlock(),
            tirx.transform.FlattenBuffer(),
        ])
    return _PRELOWER


def _contains(stmt, node_type, test=lambda node: True) -> bool:
    """Whether `stmt` holds a node of `node_type` for which `test` holds."""
    import tvm_ffi

    seen = []

    def look(node):
        if not seen and test(node):
            seen.append(node)
        return node

    tvm_ffi.structural_map(stmt, (node_type, look))
    return bool(seen)


def _has_parallel_loop(stmt) -> bool:
    from tvm import tirx

    return _contains(stmt, tirx.For, lambda loop: loop.kind == tirx.ForKind.PARALLEL)


def _serial(stmt):
    """`stmt` with every parallel loop serial (the kernel's twin for one thread)."""
    import tvm_ffi
    from tvm import tirx

    def on_for(loop):
        if loop.kind != tirx.ForKind.PARALLEL:
            return loop
        return tirx.For(loop.loop_var, loop.min, loop.extent, tirx.ForKind.SERIAL, loop.body,
                        loop.thread_binding, loop.annotations)

    return tvm_ffi.structural_map(stmt, (tirx.For, on_for))


def _subroutines(func) -> tuple[object, object | None]:
    """`func` (a scheduled kernel PrimFunc) as a private function of the fused module taking
    one pointer per buffer parameter and returning int32, and its serial twin when it has
    parallel loops (else None).  A kernel in block form is first lowered to flat, block-free
    TIR; one written without blocks (ours in tvm_bridge/vnni.py and friends) is taken as it
    is: TVM's CompactBufferAllocation, run on it twice, breaks its vector accesses."""
    import tvm
    from tvm import ir, tirx
    from tvm.s_tir import SBlockRealize

    if _contains(func.body, SBlockRealize):
        func = _prelower()(tvm.IRModule({"main": func}))["main"]
    pointers, declarations = [], []
    for p in func.params:
        if not isinstance(p.ty, tirx.BufferType):
            raise _NotFusable(f"a kernel parameter {p.name} that is not a buffer")
        dtype = p.ty.dtype
        pointer = tirx.Var(p.name + "_ptr", ir.PointerType(dtype if isinstance(dtype, ir.PrimType) else ir.PrimType(dtype)))
        pointers.append(pointer)
        declarations.append(tirx.DeclBuffer(p, data=pointer))

    def make(body):
        # int32: a parallel loop's launch returns its status from the function it is in
        return tirx.PrimFunc(pointers, tirx.SeqStmt(declarations + [body]),
                             ret_type=ir.PrimType("int32")).with_attr({"tirx.noalias": True})

    parallel = _has_parallel_loop(func.body)
    launch = _launch_variant(func, pointers, declarations) if parallel else None
    return make(func.body), (make(_serial(func.body)) if parallel else None), launch


_BARRIER = "pragma_parallel_barrier_when_finish"
_LAUNCH = "pragma_parallel_launch_point"


def _statements(stmt) -> list:
    from tvm import tirx

    if isinstance(stmt, tirx.SeqStmt):
        return [s for part in stmt.seq for s in _statements(part)]
    return [stmt]


#: the names of the compute scopes `_launch_variant` and `_fuse` make (`_finish_launches`
#: puts a statement after each: not after TVM's own `main_compute_`)
_SCOPES = ("rows", "once", "serial_kernels")


def _compute_scope(stmt, name: str):
    """`stmt` made its own function by TVM's CPU codegen (the `compute_scope` attribute: an
    LLVM function, never inlined, whose pointer arguments are `noalias`).  Inside the
    parallel launch the captured pointers are loads from the closure, which LLVM must assume
    may alias: a kernel compiled there ran 30 % slower (mobilenetv2_035_h 0.195 -> 0.26 ms)."""
    from tvm import ir, tirx

    return tirx.AttrStmt(tirx.const(0, "int32"), "compute_scope", ir.StringImm(name), stmt)


_TASK_ZERO = "qdialect_task_zero"


def _on_task_zero(stmts, name: str):
    """`stmts` marked to run on the first thread of the parallel launch only: `build_fused`
    puts them in a parallel loop of one iteration (TVM's CPU codegen splits a parallel loop's
    iterations among the launch's threads) after TVM's lowering passes, whose StmtSimplify
    removes a loop of one iteration, parallel or not."""
    from tvm import tirx

    body = stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)
    return tirx.AttrStmt(tirx.const(0, "int32"), _TASK_ZERO, tirx.const(1, "int32"), _compute_scope(body, name))


def _rows_scoped(loop, name: str, threads):
    """The parallel loop `loop` as `threads` contiguous chunks of its iterations, a parallel
    loop over the chunks whose body, a serial loop over one chunk, is a compute scope of its
    own (see `_compute_scope`): one call per thread, not one per iteration (one per row cost
    mobilenetv2_035_h 15 % at one thread)."""
    from tvm import tirx

    i32 = "int32"
    count = tirx.Max(threads, tirx.const(1, i32))
    chunk = tirx.FloorDiv(loop.extent + count - tirx.const(1, i32), count)
    task = tirx.Var(f"{loop.loop_var.name}_chunk", i32)
    first = task * chunk
    size = tirx.Max(tirx.Min(chunk, loop.extent - first), tirx.const(0, i32))
    inner = tirx.For(loop.loop_var, loop.min + first, size, tirx.ForKind.SERIAL, loop.body)
    return tirx.For(task, tirx.const(0, i32), count, tirx.ForKind.PARALLEL, _compute_scope(inner, name))


def _launch_variant(func, pointers, declarations):
    """The kernel's form for the one-launch `main`, run at every thread count (see `_fuse`), or
    None: (PrimFunc, [(shape, dtype) of each buffer it takes from the caller], its MACs).

    Only a kernel of ours marked LAUNCH_GROUPS (tvm_bridge/vnni.py), flat TIR whose top level
    holds buffer allocations and loops, no parallel loop nested in another loop, the last
    statement a parallel loop.  Inside
    the model's one parallel launch every thread runs the kernel's body: its top-level
    buffers (the staged input) are the caller's, so that the threads share them; each
    serial statement runs on the first thread only (a parallel loop of one iteration); the
    statements before the last parallel loop run side by side (they write disjoint bytes),
    then a barrier, then the last loop (the output tiles).  The caller puts a barrier
    after the kernel."""
    from tvm import ir, tirx

    from tvm_bridge.vnni import LAUNCH_GROUPS

    macs = func.attrs.get(LAUNCH_GROUPS, None) if func.attrs is not None else None
    if macs is None:
        return None
    stmts = _statements(func.body)
    hoisted, rest = [], []
    for st in stmts:
        if isinstance(st, tirx.AllocBuffer):
            hoisted.append(st.buffer)
        elif isinstance(st, tirx.For) and st.kind == tirx.ForKind.PARALLEL:
            if _has_parallel_loop(st.body):
                return None
            rest.append(st)
        elif isinstance(st, (tirx.For, tirx.IfThenElse)) and not _has_parallel_loop(st):
            rest.append(st)
        else:
            return None
    last = max((k for k, st in enumerate(rest) if isinstance(st, tirx.For) and st.kind == tirx.ForKind.PARALLEL),
               default=None)
    if last is None or last != len(rest) - 1:
        return None  # (a statement after the last parallel loop would run beside it, unordered)

    def grouped(part):
        out, serial = [], []
        for st in part:
            if isinstance(st, tirx.For) and st.kind == tirx.ForKind.PARALLEL:
                out.append(_rows_scoped(st, "rows", threads))
            else:
                serial.append(st)
        if serial:  # (one loop of one iteration for all of them: they touch disjoint bytes too)
            out.append(_on_task_zero(serial, "once"))
        return out

    threads = tirx.Var("threads", "int32")
    before, tail = grouped(rest[:last]), grouped(rest[last:])
    extra = [tirx.Var(b.name + "_shared", ir.PointerType(b.dtype if isinstance(b.dtype, ir.PrimType)
                                                         else ir.PrimType(b.dtype))) for b in hoisted]
    body = list(declarations) + [tirx.DeclBuffer(b, data=v) for b, v in zip(hoisted, extra)]
    if before:
        seq = before[0] if len(before) == 1 else tirx.SeqStmt(before)
        body.append(tirx.AttrStmt(tirx.const(0, "int32"), _BARRIER, tirx.const(1, "int32"), seq))
    body += tail
    shapes = [(tuple(int(d) for d in b.shape), str(b.dtype)) for b in hoisted]
    launched = tirx.PrimFunc(list(pointers) + extra + [threads], tirx.SeqStmt(body),
                             ret_type=ir.PrimType("int32")).with_attr({"tirx.noalias": True})
    return launched, shapes, int(macs)


def _static_tensor(ty) -> tuple[tuple[int, ...], str]:
    """(shape, dtype) of a Relax tensor type of static shape, else _NotFusable."""
    from tvm import relax

    if not isinstance(ty, relax.TensorType) or ty.shape is None:
        raise _NotFusable(f"a value of type {ty} (not a tensor of static shape)")
    try:
        shape = tuple(int(d) for d in ty.shape.values)
    except (TypeError, AttributeError):
        raise _NotFusable(f"a tensor of dynamic shape {ty.shape}") from None
    return shape, str(ty.dtype)


def fuse(mod, max_workspace_bytes: int | None = None) -> FusedModel | None:
    """`mod` (scheduled by our pipeline up to `schedule_pass`) as one fused IRModule, or None
    when its `main` is not a static chain of `call_tir`s, reshapes, constants and tuples,
    or when its intermediates need more than `max_workspace_bytes` (None: no limit; see
    `tvm_bridge.compile.FUSED_MAX_WORKSPACE_BYTES`)."""
    try:
        return _fuse(mod, max_workspace_bytes)
    except _NotFusable:
        return None
    except Exception:  # noqa: BLE001 - TVM refusing a step (lowering a kernel): the VM path
        return None


def _itemsize(dtype: str) -> int:
    return np.dtype("bool" if dtype == "bool" else dtype).itemsize


def _fuse(mod, max_workspace_bytes: int | None = None) -> FusedModel:
    import tvm
    from tvm import ir, relax, tirx

    main = mod["main"]
    call_tir_op = tvm.ir.Op.get("relax.call_tir")
    reshape_op = tvm.ir.Op.get("relax.reshape")
    names: dict[object, str] = {}  # Relax var -> the buffer holding it
    shapes: dict[str, tuple[tuple[int, ...], str]] = {}  # buffer name -> (shape, dtype)
    tuples: dict[object, list[str]] = {}  # Relax var of a tuple -> its fields' buffers
    storage: dict[str, str] = {}  # buffer name -> the buffer whose bytes it views (itself if none)
    constants: list[np.ndarray] = []
    inputs = []
    for k, p in enumerate(main.params):
        shape, dtype = _static_tensor(p.ty)
        name = f"input_{k}"
        names[p], shapes[name], storage[name] = name, (shape, dtype), name
        inputs.append((shape, dtype))

    body = main.body
    if not isinstance(body, relax.SeqExpr):
        raise _NotFusable("main's body is not a sequence of bindings")
    bindings = [b for block in body.blocks for b in block.bindings]

    # what the model returns: the buffers `main`'s result names
    result = body.body
    bound_to = {b.var: b.value for b in bindings if isinstance(b, relax.VarBinding)}
    while isinstance(result, relax.Var) and isinstance(bound_to.get(result), (relax.Tuple, relax.Var)):
        result = bound_to[result]  # `gv = (a, b); return gv`: the tuple's fields are the outputs
    result_vars = list(result.fields) if isinstance(result, relax.Tuple) else [result]
    for v in result_vars:
        if not isinstance(v, relax.Var):
            raise _NotFusable("main returns something other than variables")
    outputs = []
    out_of_var: dict[object, str] = {}  # Relax var a kernel can write straight into output k
    for k, v in enumerate(result_vars):
        shape, dtype = _static_tensor(v.ty)
        outputs.append((shape, dtype))
        if v not in out_of_var:
            out_of_var[v] = f"output_{k}"

    def operand(e) -> str:
        if isinstance(e, relax.Var):
            if e not in names:
                raise _NotFusable(f"{e} is not a tensor the fused function holds")
            return names[e]
        if isinstance(e, tvm.ir.expr.Constant):
            shape, dtype = _static_tensor(e.ty)
            name = f"constant_{len(constants)}"
            constants.append(e.value.numpy())
            names[e], shapes[name], storage[name] = name, (shape, dtype), name
            return name
        raise _NotFusable(f"an operand {type(e).__name__} the fused function does not take")

    temps: list[tuple[str, tuple[int, ...], str]] = []  # intermediates (name, shape, dtype), in order
    calls: list[tuple[object, list[str]]] = []  # (kernel GlobalVar, its buffers in order)
    temp = 0

    def new_buffer(var, shape, dtype) -> str:
        nonlocal temp
        name = out_of_var.pop(var, None)
        if name is None:
            name = f"t{temp}"
            temp += 1
            temps.append((name, tuple(shape), dtype))  # a region of the workspace, placed below
        shapes[name], storage[name] = (shape, dtype), name
        return name

    for b in bindings:
        if not isinstance(b, relax.VarBinding):
            raise _NotFusable("a binding that is not a plain variable binding (match_cast)")
        v, value = b.var, b.value
        if isinstance(value, relax.Call) and value.op.same_as(call_tir_op):
            callee = value.args[0]
            if not isinstance(callee, relax.GlobalVar) or len(value.args) != 2:
                raise _NotFusable("a call_tir with symbolic arguments or a callee that is not a module function")
            if not isinstance(mod[callee], tvm.tirx.PrimFunc):
                raise _NotFusable(f"call_tir of {callee.name_hint}, which is not a PrimFunc")
            args = value.args[1]
            args = list(args.fields) if isinstance(args, relax.Tuple) else [args]
            arg_names = [operand(a) for a in args]
            if isinstance(v.ty, relax.TupleType):
                outs = [new_buffer(None, *_static_tensor(t)) for t in v.ty.fields]
                tuples[v] = outs
            else:
                outs = [new_buffer(v, *_static_tensor(v.ty))]
                names[v] = outs[0]
            calls.append((callee, arg_names + outs))
        elif isinstance(value, relax.Call) and value.op.same_as(reshape_op):
            src = operand(value.args[0])
            shape, dtype = _static_tensor(v.ty)
            if math.prod(shape) != math.prod(shapes[src][0]) or dtype != shapes[src][1]:
                raise _NotFusable("a reshape that changes the number of elements")
            name = f"t{temp}"
            temp += 1
            names[v], shapes[name], storage[name] = name, (shape, dtype), storage[src]
        elif isinstance(value, relax.TupleGetItem) and value.tuple_value in tuples:
            names[v] = tuples[value.tuple_value][value.index]
        elif isinstance(value, relax.Tuple):
            tuples[v] = [operand(f) for f in value.fields]
        elif isinstance(value, relax.Var) and value in names:
            names[v] = names[value]
        elif isinstance(value, tvm.ir.expr.Constant):
            names[v] = operand(value)
        else:
            raise _NotFusable(f"a binding of {type(value).__name__} {getattr(value, 'op', '')}")

    # outputs no kernel wrote: copies (an input, a constant, a view, a value returned twice)
    copies = []
    for k, v in enumerate(result_vars):
        if v not in names:
            raise _NotFusable("main returns a tuple variable")
        if names[v] != f"output_{k}":
            copies.append((f"output_{k}", names[v]))

    # each kernel's forms; a kernel's one-launch form takes its staging buffers from here (one
    # region per kernel, shared by its calls, which run one after the other)
    kernels: dict[str, tuple] = {}  # callee -> (its function, its serial twin, its one-launch form)
    for callee, _ in calls:
        if callee.name_hint not in kernels:
            kernels[callee.name_hint] = _subroutines(mod[callee])
    # the one-launch form (see below) where the kernels that split their loops among the
    # threads add up to FUSED_LAUNCH_MIN_MACS per entry; below it every kernel runs serially
    parallel_macs = sum(kernels[c.name_hint][2][2] for c, _ in calls if kernels[c.name_hint][2] is not None)
    mode = launch_mode()
    n_parts = parts(len(calls))
    one_launch = mode == "one" and launches(parallel_macs, len(calls))
    all_serial = mode == "one" and not one_launch
    shared: dict[str, list[str]] = {}  # callee -> the intermediates standing for its staging buffers
    for name, (_, _, launch) in kernels.items():
        if launch is not None and one_launch:
            shared[name] = []
            for shape, dtype in launch[1]:
                temp_name = f"s{len(temps)}"
                temps.append((temp_name, shape, dtype))
                shapes[temp_name], storage[temp_name] = (shape, dtype), temp_name
                shared[name].append(temp_name)
    work_sizes, work_placed = _layout([(d, math.prod(shape), _itemsize(d)) for _, shape, d in temps])
    if max_workspace_bytes is not None:
        size = sum(n * _itemsize(d) for d, n in work_sizes.items())
        if size > max_workspace_bytes:
            raise _NotFusable(f"its intermediates take {size} bytes (the fused form's limit: {max_workspace_bytes})")
    blobs, placed = _pack(constants)

    # main's parameters, and the address of every buffer the kernels take
    params = {f"input_{k}": tirx.decl_buffer(s, d, f"input_{k}") for k, (s, d) in enumerate(inputs)}
    params.update({f"output_{k}": tirx.decl_buffer(s, d, f"output_{k}") for k, (s, d) in enumerate(outputs)})
    blob_params = [tirx.decl_buffer(b.shape, d, f"blob_{d}") for d, b in blobs.items()]
    blob_of = dict(zip(blobs, blob_params))
    work_params = {d: tirx.decl_buffer((n,), d, f"work_{d}") for d, n in work_sizes.items()}
    threads = tirx.Var("threads", "int32")
    address = {name: buf.data for name, buf in params.items()}

    def element(buf, offset: int):
        return tirx.address_of(tirx.BufferLoad(buf, [tirx.const(offset, "int32")]))

    for k, (d, offset) in enumerate(placed):
        address[f"constant_{k}"] = element(blob_of[d], offset)
    bindings = []
    for (name, _, _), (d, offset) in zip(temps, work_placed):
        pointer = tirx.Var(f"{name}_data", ir.PointerType(ir.PrimType(d)))
        bindings.append(tirx.Bind(pointer, element(work_params[d], offset)))
        address[name] = pointer

    functions: dict[object, object] = {}
    gvs: dict[str, tuple] = {}  # callee -> GlobalVars of (its function, serial twin, one-launch form)
    for name, (parallel, serial, launch) in kernels.items():
        gv = ir.GlobalVar(f"k_{name}")
        if serial is None or mode == "per-loop":  # (else only the serial twin and the one-launch form are called)
            functions[gv] = parallel
        gv_serial = gv_launch = None
        if serial is not None and name not in shared:
            gv_serial = ir.GlobalVar(f"k_{name}_serial")
            functions[gv_serial] = serial
        if name in shared:
            gv_launch = ir.GlobalVar(f"k_{name}_launched")
            functions[gv_launch] = launch[0]
        gvs[name] = (gv, gv_serial, gv_launch)
    int32 = ir.PrimType("int32")

    def kernel_statements(part_calls) -> list:
        if one_launch:
            # The whole model in one parallel launch of TVM's pool, at any thread count: one
            # wake-up of its workers per call instead of one per parallel loop (~1.5 us
            # each).  A kernel with a one-launch form splits its loops among the threads, the
            # others run on the first thread; a barrier after each kernel.  At one thread the
            # launch runs on the calling thread and the barriers return at once.
            launched, pending = [], []

            def flush():
                if pending:
                    launched.append(tirx.AttrStmt(tirx.const(0, "int32"), _BARRIER, tirx.const(1, "int32"),
                                                  _on_task_zero(list(pending), "serial_kernels")))
                    pending.clear()

            for callee, buffers in part_calls:
                gv, gv_serial, gv_launch = gvs[callee.name_hint]
                args = [address[storage[b]] for b in buffers]
                if gv_launch is None:
                    pending.append(tirx.Evaluate(ir.expr.Call(gv_serial or gv, args, ret_ty=int32)))
                    continue
                flush()
                extra = [address[b] for b in shared[callee.name_hint]]
                launched.append(tirx.AttrStmt(tirx.const(0, "int32"), _BARRIER, tirx.const(1, "int32"),
                                              tirx.Evaluate(ir.expr.Call(gv_launch, args + extra + [threads],
                                                                         ret_ty=int32))))
            flush()
            if not launched:
                return []
            return [tirx.AttrStmt(tirx.const(0, "int32"), _LAUNCH, tirx.const(1, "int32"),
                                  launched[0] if len(launched) == 1 else tirx.SeqStmt(launched))]
        statements = []
        for callee, buffers in part_calls:
            gv, gv_serial, _ = gvs[callee.name_hint]
            args = [address[storage[b]] for b in buffers]
            serial = tirx.Evaluate(ir.expr.Call(gv_serial or gv, args, ret_ty=int32))
            if all_serial or gv_serial is None:
                statements.append(serial)
            else:  # (per-loop: TVM launches a parallel loop on its pool even with one thread)
                statements.append(tirx.IfThenElse(threads > 1, tirx.Evaluate(ir.expr.Call(gv, args, ret_ty=int32)),
                                                  serial))
        return statements

    copy_statements = []
    for out, src in copies:
        shape, d = outputs[int(out.removeprefix("output_"))]
        n = math.prod(shape)
        i = tirx.Var(f"{out}_i", "int32")
        flat = tirx.decl_buffer((n,), d, f"{out}_flat")
        source = tirx.decl_buffer((n,), d, f"{out}_src")
        copy_statements += [tirx.DeclBuffer(flat, data=params[out].data),
                            tirx.DeclBuffer(source, data=address[storage[src]]),
                            tirx.For(i, tirx.const(0, "int32"), tirx.const(n, "int32"), tirx.ForKind.SERIAL,
                                     tirx.BufferStore(flat, tirx.BufferLoad(source, [i]), [i]))]
    # the entries: one, or, for a model of FUSED_PARTS_MIN_CALLS kernel calls or more, one per
    # contiguous share of the calls, called in order with the same arguments (see `parts`)
    if n_parts > 1:
        printed = {name: len(str(mod[name])) for name in kernels}  # (once per kernel, not per call)
        cuts = _cuts([printed[callee.name_hint] for callee, _ in calls], n_parts)
    else:
        cuts = [0, len(calls)]
    signature = list(params.values()) + blob_params + list(work_params.values()) + [threads]
    entries = []
    for k in range(n_parts):
        statements = kernel_statements(calls[cuts[k]:cuts[k + 1]])
        if k == n_parts - 1:
            statements += copy_statements
        statements = list(bindings) + statements
        if not statements:
            statements.append(tirx.Evaluate(tirx.const(0, "int32")))
        name = entry_name(k)
        entries.append(name)
        functions[ir.GlobalVar(name)] = tirx.PrimFunc(
            signature, tirx.SeqStmt(statements) if len(statements) > 1 else statements[0]).with_attr(
            {"global_symbol": name, "tirx.noalias": True})
    return FusedModel(tvm.IRModule(functions), inputs, outputs, list(blobs.values()), len(calls),
                      [(d, n) for d, n in work_sizes.items()], entries)


def _cuts(weights: list[int], n_parts: int) -> list[int]:
    """Where `n_parts` contiguous shares of the calls begin (and the last ends), by the
    calls' `weights`: each share ends next to the call that takes its running total past
    its fraction of the whole (before or after that call, whichever is nearer; no share is
    empty).  The weight of a call is its kernel's printed TIR (a kernel is inlined at each
    call): across MobileNetV2-0.35's 61 calls it follows the time TVM's passes and LLVM
    take on the kernel (correlation 0.91).  Halving the count of calls instead gave that
    model's two LLVM modules 24.5 and 18.4 thousand lines of optimized IR (23.0 and 19.9
    cut by TIR), the larger one setting the cold build's wall time."""
    total = sum(weights) or 1
    cuts, running = [0], 0
    for k, w in enumerate(weights):
        before, running = running, running + w
        while len(cuts) < n_parts and running * n_parts >= total * len(cuts):
            target = total * len(cuts) / n_parts  # (the crossing call goes where it is nearer)
            at = k if target - before < running - target else k + 1
            cuts.append(min(max(at, cuts[-1] + 1), len(weights) - (n_parts - len(cuts))))
    while len(cuts) < n_parts:
        cuts.append(len(weights) - (n_parts - len(cuts)))
    cuts.append(len(weights))
    return cuts


def _dtype_name(a: np.ndarray) -> str:
    return "bool" if a.dtype == np.bool_ else str(a.dtype)


def _layout(items) -> tuple[dict[str, int], list[tuple[str, int]]]:
    """Regions of one 1-D array per dtype for `items` ((dtype, elements, itemsize) each), each
    starting on a 64-byte boundary: ({dtype: elements}, [(dtype, element offset) per item])."""
    sizes: dict[str, int] = {}
    placed = []
    for d, n, itemsize in items:
        step = max(1, 64 // itemsize)
        offset = -(-sizes.get(d, 0) // step) * step
        placed.append((d, offset))
        sizes[d] = offset + max(n, 1)
    return sizes, placed


def _pack(constants: list[np.ndarray]):
    """The constants packed into one blob per dtype, each starting on a 64-byte boundary of
    its blob: ({dtype: blob}, [(dtype, element offset) per constant]).  One argument per
    dtype instead of one per constant: each argument of a packed call costs about 12 ns."""
    sizes, placed = _layout([(_dtype_name(c), c.size, c.dtype.itemsize) for c in constants])
    blobs = {d: np.zeros(n, np.bool_ if d == "bool" else np.dtype(d)) for d, n in sizes.items()}
    for c, (d, offset) in zip(constants, placed):
        blobs[d][offset:offset + c.size] = c.reshape(-1)
    return blobs, placed


def build_fused(fused: FusedModel, target):
    """Compile `fused.module` with TVM's TIR pipeline for `target`: an Executable whose
    `main` runs the model, or, for a model of several entries (`parts`), a `PartsLibrary`
    of one LLVM module per entry, built on threads of their own (TVM's passes and LLVM
    release the GIL: MobileNetV2-0.35, two entries on the 2-core Zen 4, fuse + TIR passes +
    LLVM IR 2.6 -> 1.0 s, machine code and export 1.5 -> 0.7 s in bench/time_to_first.py;
    session 18)."""
    from tvm.runtime import Executable

    if len(fused.entries) == 1:
        return Executable(_build_entry(fused.module, target))
    modules = [_entry_module(fused.module, name) for name in fused.entries]
    return PartsLibrary(_on_threads([lambda m=m: _build_entry(m, target) for m in modules]))


def _on_threads(jobs: list) -> list:
    """The results of `jobs` (functions of no argument), the first run on this thread and
    the others each on a thread of its own; the first exception raised is raised here."""
    from concurrent.futures import ThreadPoolExecutor

    if len(jobs) == 1:
        return [jobs[0]()]
    with ThreadPoolExecutor(max_workers=len(jobs) - 1) as pool:
        others = [pool.submit(job) for job in jobs[1:]]
        first = jobs[0]()
        return [first] + [f.result() for f in others]


def _entry_module(module, name: str):
    """The IRModule of entry `name` of a fused module and the kernels it calls."""
    import tvm
    import tvm_ffi
    from tvm import ir, tirx

    entry = module[name]
    called = set()

    def on_call(node):
        if isinstance(node.op, ir.GlobalVar):
            called.add(node.op.name_hint)
        return node

    tvm_ffi.structural_map(entry.body, (ir.expr.Call, on_call))
    functions = {gv: f for gv, f in module.functions.items()
                 if gv.name_hint == name or (gv.name_hint in called and isinstance(f, tirx.PrimFunc))}
    return tvm.IRModule(functions, attrs=module.attrs)


def _build_entry(module, target):
    """The runtime module (LLVM) of one fused entry and its kernels: `tvm.compile`'s steps
    (tvm/tirx/build.py), with one more before the host's finalizing passes: each kernel's
    body is put in the CPU device's scope, as MakePackedAPI does for the entry.
    LowerTVMBuiltin places a small buffer on the stack only in that scope; a private
    function's buffers would otherwise go through TVM's workspace allocator (or, where the
    allocation was hoisted, fail to lower: "Unknown device id")."""
    import importlib

    import tvm
    from tvm import tirx

    builder = importlib.import_module("tvm.tirx.build")  # (the module, not `tirx.build` the function)
    host = target.with_host(target) if target.host is None else target
    mod = tirx.transform.BindTarget(host)(module)
    lower, finalize_host, _ = tirx.get_default_tir_pipeline(target)
    from tvm_bridge.lowering import mark_accumulators

    mod = mark_accumulators(lower(mod))  # (the accumulators on the stack: tvm_bridge/lowering.py)
    functions = {}
    for gv, func in mod.functions.items():
        if isinstance(func, tirx.PrimFunc) and not func.attrs.get("tirx.is_entry_func", False):
            zero, cpu = tirx.const(0, "int32"), tirx.const(1, "int32")
            func = func.with_body(tirx.AttrStmt("default", "device_id", zero,
                                                tirx.AttrStmt("default", "device_type", cpu, func.body)))
        functions[gv] = func
    # the kernels inlined here, in TIR, not by LLVM (see the module's docstring): each kernel's
    # buffers then take the very pointer variable `main` binds for that intermediate, so the
    # producer's stores and the consumer's loads carry one TBAA type
    mod = tirx.transform.InlinePrivateFunctions()(tvm.IRModule(functions, attrs=mod.attrs))
    mod = _finish_launches(mod)
    host_mod, device_mods = builder.split_host_device_mods(mod)
    if device_mods:
        raise _NotFusable("kernels for another device")
    return builder.tir_to_runtime(finalize_host()(host_mod), {}, host.host)


class PartsLibrary:
    """A fused model built as several LLVM modules, one per entry (`build_fused`): entry
    functions by name (`library["main_1"]`), and `export_library`, which makes each
    module's machine code on a thread of its own and links them into one shared library
    (whose entries `entry_functions` finds by name as in a one-entry library)."""

    def __init__(self, modules: list):
        self.modules = list(modules)

    def __getitem__(self, name: str):
        for m in self.modules:
            if m.implements_function(name, query_imports=False):
                return m.get_function(name, query_imports=False)
        raise KeyError(f"no entry function {name!r} in the fused model's modules")

    def export_library(self, path: str) -> None:
        import tempfile

        from tvm.support import cc

        with tempfile.TemporaryDirectory() as tmp:
            objects = [os.path.join(tmp, f"lib{k}.o") for k in range(len(self.modules))]
            _on_threads([lambda m=m, o=o: m.write_to_file(o) for m, o in zip(self.modules, objects)])
            cc.create_shared(str(path), objects)


def _finish_launches(mod):
    """`mod` (lowered, kernels inlined) with each `_on_task_zero` mark made a parallel loop of
    one iteration, and a no-op statement after each compute scope in the entry: TVM's CPU
    codegen (0.27) leaves the debug location of a compute scope inside a parallel launch in
    force after it, and LLVM's verifier refuses the entry's next instruction when the launch
    returns ("!dbg attachment points at wrong subprogram"); a statement visited after the
    scope resets it."""
    import tvm
    import tvm_ffi
    from tvm import tirx

    def on_attr(node):
        if node.attr_key == _TASK_ZERO:
            return tirx.For(tirx.Var("once", "int32"), tirx.const(0, "int32"), tirx.const(1, "int32"),
                            tirx.ForKind.PARALLEL, node.body)
        if node.attr_key == "compute_scope" and getattr(node.value, "value", None) in _SCOPES:
            # (a no-op statement: TVM drops an Evaluate of a constant; LLVM this intrinsic)
            return tirx.SeqStmt([node, tirx.Evaluate(tirx.call_llvm_intrin("void", "llvm.donothing"))])
        return node

    functions = {gv: (func.with_body(tvm_ffi.structural_map(func.body, (tirx.AttrStmt, on_attr)))
                      if isinstance(func, tirx.PrimFunc) else func) for gv, func in mod.functions.items()}
    return tvm.IRModule(functions, attrs=mod.attrs)


def prefix_module(mod, target):
    """`mod` after our Relax pipeline's passes up to and including the schedule pass
    (`tvm_bridge.compile.pipeline`'s head): the input of `fuse`."""
    import tvm
    from tvm import relax
    from tvm.relax.backend.cpu_generic import pipeline as cpu

    from tvm_bridge.schedule import fold_casts_pass, pair_late_pass, schedule_pass

    passes = cpu.library_dispatch_passes(target) + cpu.legalize_passes(target) + [
        schedule_pass(target), fold_casts_pass(), relax.transform.RewriteDataflowReshape(),
        pair_late_pass(target)]
    with target:  # on a copy: a pass may change a module it alone holds, and the VM build needs `mod` as it is
        return tvm.transform.Sequential(passes)(tvm.IRModule(mod.functions, attrs=mod.attrs))


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialized array whose data starts on a 64-byte boundary (TVM's alignment, which
    the fused function assumes of its arguments); `tvm_bridge.common`'s, without xDSL."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    raw = np.empty(nbytes + 64, np.uint8)
    offset = (-raw.ctypes.data) % 64
    return raw[offset:offset + nbytes].view(dtype).reshape(shape)


def spec(fused: FusedModel) -> dict:
    """What a caller needs besides the library and the constants (JSON-able): the inputs'
    and outputs' shapes and dtypes."""
    return {"inputs": [[list(s), d] for s, d in fused.inputs], "outputs": [[list(s), d] for s, d in fused.outputs],
            "workspace": [[d, n] for d, n in fused.workspace], "entries": list(fused.entries)}


def entry_functions(library, spec: dict) -> list:
    """The fused model's entry functions in `library` (a loaded shared library, an
    Executable or a `PartsLibrary`), in the order they are called."""
    return [library[name] for name in spec.get("entries", ["main"])]


class FusedRunner:
    """The fused function `main(inputs..., outputs..., constant blobs..., workspaces..., threads)` called with numpy
    arrays: inputs copied into 64-byte aligned buffers kept for them, the outputs written
    into buffers kept for them and copied once into arrays the caller owns.  Needs only
    numpy and TVM FFI (qd-run's cached path uses it without `import tvm`).

    `call` is the call itself (a closure: a call of a small model is a few hundred
    nanoseconds of Python, and attribute look-ups are a good part of it)."""

    def __init__(self, function, spec: dict, constants):
        """`function`: the library's `main`, or its entry functions in order
        (`entry_functions`); `spec`: `spec(fused)`; `constants`: its trailing arguments
        (numpy arrays, in order)."""
        import tvm_ffi

        if isinstance(function, (list, tuple)):
            if len(function) == 1:
                function = function[0]
            else:
                entries = tuple(function)

                def function(*args):
                    for entry in entries:
                        entry(*args)
        self.function = function
        ins = [aligned_empty(tuple(s), d) for s, d in spec["inputs"]]
        outs = [aligned_empty(tuple(s), d) for s, d in spec["outputs"]]
        consts = []
        for c in constants:
            c = np.asarray(c)
            buf = aligned_empty(c.shape, c.dtype)
            buf[...] = c
            consts.append(buf)
        work = [aligned_empty((n,), np.bool_ if d == "bool" else d) for d, n in spec.get("workspace", [])]
        self._ins, self._outs, self._consts, self._work = ins, outs, consts, work  # kept: TVM sees them by DLPack
        self._args = [tvm_ffi.from_dlpack(a) for a in ins + outs + consts + work]
        configure_pool()  # (TVM's default count, unless set_threads named one; the pool set for it)
        # per input: (dtype, shape, the buffer seen in that dtype) of the arrays it was given last
        self._views = [(b.dtype, b.shape, b) for b in ins]
        self.call = self._make_call()

    def __call__(self, *inputs) -> list[np.ndarray]:
        """Run the model on `inputs` (one array per input, of its shape; unsigned storage
        passes as its signless twin's bytes): a list of new arrays in L3's dtypes."""
        return self.call(*inputs)

    def _stage(self, k: int, x) -> None:
        """Copy `x` into input `k`'s buffer the slow way (another dtype or layout, not an
        ndarray), or refuse it in one line."""
        buf = self._ins[k]
        x = np.asarray(x)
        if x.dtype != buf.dtype:
            if x.dtype.itemsize != buf.dtype.itemsize or x.dtype.kind not in "iub" or buf.dtype.kind not in "iub":
                raise ValueError(f"input {k} is {x.dtype}, the model takes {buf.dtype}")
        if x.shape != buf.shape:
            raise ValueError(f"input {k} has shape {x.shape}, the model takes {buf.shape}")
        view = buf.view(x.dtype)
        view[...] = x
        if x.flags.c_contiguous:
            self._views[k] = (x.dtype, x.shape, view)

    def _make_call(self):
        function, args, outs, views, stage = self.function, self._args, self._outs, self._views, self._stage
        ndarray, n_in = np.ndarray, len(views)
        threads = THREADS  # (the thread count, read on every call: its element)

        def refuse(inputs):
            raise ValueError(f"the model takes {n_in} inputs, not {len(inputs)}")

        if n_in == 1 and len(outs) == 1:
            out = outs[0]

            def call(*inputs):
                if len(inputs) != 1:
                    refuse(inputs)
                x = inputs[0]
                dtype, shape, view = views[0]
                if x.__class__ is ndarray and x.dtype is dtype and x.shape == shape:
                    view[...] = x
                else:
                    stage(0, x)
                function(*args, threads[0])
                return [out.copy()]

            return call

        def call(*inputs):
            if len(inputs) != n_in:
                refuse(inputs)
            for k, x in enumerate(inputs):
                dtype, shape, view = views[k]
                if x.__class__ is ndarray and x.dtype is dtype and x.shape == shape:
                    view[...] = x
                else:
                    stage(k, x)
            function(*args, threads[0])
            return [o.copy() for o in outs]

        return call
