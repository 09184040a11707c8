"""One TIR function per model: the whole model in one call, without the Relax VM (issue 25).

A small model's call is mostly the VM's: storage and tensor allocations, reshapes, shape
checks and one packed call per kernel (mlp_act: 10 kernels, 4 alloc_storage, 10
alloc_tensor, 9 reshape per call).  `fuse` turns a translated Relax module into one TIR
PrimFunc whose body is every kernel's body in order, and `build_fused` compiles it with
TVM's TIR build:

    main(input_0, ..., output_0, ..., blob_0, ..., work_0, ..., threads)

Destination passing: the caller owns every buffer and the function writes the outputs and
returns nothing; `threads` is the thread count TVM's pool runs on (tvm_bridge/cpu.py's
`current_threads`, passed on every call): a kernel with parallel loops has a serial twin
taken at one thread (`_thread_branches`).  `blob_k` hold the model's constants (TVM 0.27's TIR has no embedded-constant
statement), `work_k` its intermediates: one 1-D array per dtype each, every constant or
intermediate a region of it starting on a 64-byte boundary, never shared with another (TVM's
StorageRewrite, left to place intermediates allocated in the body, shared memory between
intermediates still live in the masked encoders' function: 16 elements wrong).  A reshape is
a second view of its input's bytes (`T.decl_buffer(..., data=x.data)`); an output that is an
input, a constant or a reshape of one is copied in the body.

How: our Relax pipeline runs up to and including our schedule pass (before memory
planning), so `main` is a chain of `call_tir`s, reshapes, constants and tuples; each
kernel is lowered on its own to flat, block-free TIR (TVM's own passes up to
FlattenBuffer), printed as TVMScript, its names made unique with a prefix and its buffer
parameters renamed to the model's buffers, and the function parsed back.  Anything else
in `main` (a dynamic shape, an op not listed, a packed call) makes `fuse` return None and
the caller keeps the VM path: the fused function is an optimisation, never a requirement.
"""

from __future__ import annotations

import ast
import math
import os
from dataclasses import dataclass, field

import numpy as np

from tvm_bridge.cpu import THREADS, current_threads


def enabled() -> bool:
    """False when QDIALECT_FUSED is 0 (or off / no / false): every build takes the VM path."""
    return os.environ.get("QDIALECT_FUSED", "1").strip().lower() not in ("0", "off", "no", "false")


@dataclass
class FusedModel:
    """A model as one TIR function `main(inputs..., outputs..., constant blobs..., workspaces..., threads)`.

    `inputs` / `outputs`: (shape, dtype string) per model input / output, in L3's bits
    (signless: an unsigned model edge is int8 here); `constants`: the constant blobs
    (1-D numpy arrays, one per dtype) passed after the outputs on every call; `workspace`:
    (dtype, elements) of the 1-D arrays for the intermediates, passed last; `func`: the PrimFunc (None once built and dropped)."""

    func: object
    inputs: list[tuple[tuple[int, ...], str]]
    outputs: list[tuple[tuple[int, ...], str]]
    constants: list[np.ndarray] = field(default_factory=list)
    n_kernels: int = 0
    workspace: list[tuple[str, int]] = field(default_factory=list)


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


class _Renamer(ast.NodeTransformer):
    """Every name a printed kernel binds made unique in the fused function: a buffer parameter
    becomes the model buffer it is bound to, any other name it binds gets the kernel's prefix;
    names it does not bind (TVMScript's `T`, Python's `range`) stay."""

    def __init__(self, prefix: str, bound: dict[str, str], own: set[str]):
        self.prefix, self.bound, self.own = prefix, bound, own

    def visit_Name(self, node: ast.Name):
        if node.id in self.bound:
            node.id = self.bound[node.id]
        elif node.id in self.own:
            node.id = self.prefix + node.id
        return node


def _kernel_body(func, prefix: str, bound: list[str]) -> list[ast.stmt]:
    """`func` (a scheduled kernel PrimFunc) as TVMScript statements whose parameters are
    renamed to `bound` (one model buffer name per parameter, in order).  A kernel in block
    form is first lowered to flat, block-free TIR; one written without blocks (ours in
    tvm_bridge/vnni.py and friends) is taken as it is: TVM's CompactBufferAllocation, run
    on it twice, breaks its vector accesses."""
    import tvm

    text = func.script(show_meta=True)
    if "T.sblock(" in text:  # block form: flat and block-free, to sit beside the others
        text = _prelower()(tvm.IRModule({"main": func}))["main"].script(show_meta=True)
    if "metadata[" in text.split("@T.prim_func", 1)[1]:
        raise _NotFusable("a kernel holds metadata (constants) in its TIR")
    tree = ast.parse(text)
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if len(funcs) != 1:
        raise _NotFusable("a kernel did not print as one function")
    fdef = funcs[0]
    params = [a.arg for a in fdef.args.args]
    if len(params) != len(bound):
        raise _NotFusable(f"a kernel takes {len(params)} buffers where the call passes {len(bound)}")
    body = [s for s in fdef.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and ast.unparse(s.value.func) == "T.func_attr")]
    own = {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    renamer = _Renamer(prefix, dict(zip(params, bound)), own)
    return [renamer.visit(s) for s in body]


#: the parser's recursion: TVMScript's parser nests a frame per buffer declaration to the
#: end of the function (through TVM FFI callbacks), so a model with many buffers recurses
#: past Python's default limit (MobileNetV2-0.35 at 96x96, 61 kernels: RecursionError,
#: then a segfault in the FFI's error path); it is parsed on a thread of its own with a
#: large stack and a high recursion limit
_PARSE_STACK_BYTES = 512 * 1024 * 1024
_PARSE_RECURSION = 200_000


def _deep_call(fn):
    """`fn()` on a thread with a `_PARSE_STACK_BYTES` stack and `_PARSE_RECURSION` frames
    allowed; its result, or its exception raised here."""
    import sys
    import threading

    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            out["error"] = e

    old_stack, old_limit = threading.stack_size(), sys.getrecursionlimit()
    try:
        threading.stack_size(_PARSE_STACK_BYTES)
        sys.setrecursionlimit(max(old_limit, _PARSE_RECURSION))
        worker = threading.Thread(target=run, name="qdialect-fuse-parse")
        worker.start()
        worker.join()
    finally:
        threading.stack_size(old_stack)
        sys.setrecursionlimit(old_limit)
    if "error" in out:
        raise out["error"]
    return out["value"]


class _Serial(ast.NodeTransformer):
    """`for v in T.parallel(n)` -> `for v in range(n)`."""

    def visit_For(self, node: ast.For):
        self.generic_visit(node)
        it = node.iter
        if isinstance(it, ast.Call) and ast.unparse(it.func) == "T.parallel":
            node.iter = ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=it.args, keywords=[])
        return node


def _thread_branches(body: list[ast.stmt]) -> list[ast.stmt]:
    """A kernel's statements with parallel loops as `if threads > 1: <them> else: <them with
    serial loops>`: TVM launches a parallel loop on its thread pool even when the pool has
    one thread, about 1.7 us a launch here (a 24-channel ResNet at 96x96: 0.254 ms with its
    3x3 layers serial, 0.281 ms parallel, at one thread); a kernel without one as it is."""
    import copy

    if not any(isinstance(n, ast.For) and isinstance(n.iter, ast.Call) and ast.unparse(n.iter.func) == "T.parallel"
               for s in body for n in ast.walk(s)):
        return body
    serial = [_Serial().visit(copy.deepcopy(s)) for s in body]
    test = ast.Compare(left=ast.Name(id="threads", ctx=ast.Load()), ops=[ast.Gt()], comparators=[ast.Constant(1)])
    return [ast.If(test=test, body=body, orelse=serial)]


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


def _buffer_decl(shape, dtype: str) -> str:
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    return f'T.Buffer(({dims}), "{dtype}")'


def fuse(mod, max_workspace_bytes: int | None = None) -> FusedModel | None:
    """`mod` (scheduled by our pipeline up to `schedule_pass`) as one TIR function, or None
    when its `main` is not a static chain of `call_tir`s, reshapes, constants and tuples,
    or when its intermediates need more than `max_workspace_bytes` (None: no limit; checked
    before the costly parse, see `tvm_bridge.compile.FUSED_MAX_WORKSPACE_BYTES`)."""
    try:
        return _fuse(mod, max_workspace_bytes)
    except _NotFusable:
        return None
    except Exception:  # noqa: BLE001 - TVM refusing a step (printing, parsing a kernel): the VM path
        return None


def _fuse(mod, max_workspace_bytes: int | None = None) -> FusedModel:
    import tvm
    from tvm import relax

    main = mod["main"]
    call_tir_op = tvm.ir.Op.get("relax.call_tir")
    reshape_op = tvm.ir.Op.get("relax.reshape")
    names: dict[object, str] = {}  # Relax var -> the buffer holding it (name in the fused text)
    shapes: dict[str, tuple[tuple[int, ...], str]] = {}  # buffer name -> (shape, dtype)
    tuples: dict[object, list[str]] = {}  # Relax var of a tuple -> its fields' buffers
    storage: dict[str, str] = {}  # buffer name -> the buffer whose bytes it views (itself if none)
    kind: dict[str, str] = {}  # buffer name -> "input" / "constant" / "temp" / "output"
    constants: list[np.ndarray] = []
    header_inputs = []
    inputs = []
    for k, p in enumerate(main.params):
        shape, dtype = _static_tensor(p.ty)
        name = f"input_{k}"
        names[p], shapes[name], storage[name], kind[name] = name, (shape, dtype), name, "input"
        inputs.append((shape, dtype))
        header_inputs.append(f"{name}: {_buffer_decl(shape, dtype)}")

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
            names[e], shapes[name], storage[name], kind[name] = name, (shape, dtype), name, "constant"
            return name
        raise _NotFusable(f"an operand {type(e).__name__} the fused function does not take")

    statements: list[ast.stmt] = []
    allocations: list = []  # intermediates (name, shape, dtype) and views (T.decl_buffer lines), in order
    n_kernels = 0
    temp = 0

    def new_buffer(var, shape, dtype) -> str:
        nonlocal temp
        name = out_of_var.pop(var, None)
        if name is None:
            name = f"t{temp}"
            temp += 1
            allocations.append((name, tuple(shape), dtype))  # a region of the workspace, placed below
            kind[name] = "temp"
        else:
            kind[name] = "output"
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
            func = mod[callee]
            if not isinstance(func, tvm.tirx.PrimFunc):
                raise _NotFusable(f"call_tir of {callee.name_hint}, which is not a PrimFunc")
            args = value.args[1]
            args = list(args.fields) if isinstance(args, relax.Tuple) else [args]
            arg_names = [operand(a) for a in args]
            out_ty = v.ty
            if isinstance(out_ty, relax.TupleType):
                outs = [new_buffer(None, *_static_tensor(t)) for t in out_ty.fields]
                tuples[v] = outs
            else:
                outs = [new_buffer(v, *_static_tensor(out_ty))]
                names[v] = outs[0]
            statements += _thread_branches(_kernel_body(func, f"k{n_kernels}_", arg_names + outs))
            n_kernels += 1
        elif isinstance(value, relax.Call) and value.op.same_as(reshape_op):
            src = operand(value.args[0])
            shape, dtype = _static_tensor(v.ty)
            if math.prod(shape) != math.prod(shapes[src][0]) or dtype != shapes[src][1]:
                raise _NotFusable("a reshape that changes the number of elements")
            name = f"t{temp}"
            temp += 1
            allocations.append(f"{name} = T.decl_buffer({tuple(shape)!r}, \"{dtype}\", data={storage[src]}.data)")
            names[v], shapes[name], storage[name], kind[name] = name, (shape, dtype), storage[src], "view"
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
        out = f"output_{k}"
        if v not in names:
            raise _NotFusable("main returns a tuple variable")
        src = names[v]
        if src == out:
            continue
        shape, dtype = outputs[k]
        n = math.prod(shape)
        copies.append(f"{out}_flat = T.decl_buffer(({n},), \"{dtype}\", data={out}.data)\n"
                      f"{out}_src = T.decl_buffer(({n},), \"{dtype}\", data={storage[src]}.data)\n"
                      f"for {out}_i in range({n}):\n"
                      f"    {out}_flat[{out}_i] = {out}_src[{out}_i]")

    header = header_inputs + [f"output_{k}: {_buffer_decl(*o)}" for k, o in enumerate(outputs)]
    blobs, placed = _pack(constants)
    header += [f"blob_{d}: {_buffer_decl(b.shape, d)}" for d, b in blobs.items()]
    lines = ["@T.prim_func(s_tir=True)", f"def main({', '.join(header)}):",
             '    T.func_attr({"global_symbol": "main", "tirx.noalias": True})']
    for k, (c, (d, offset)) in enumerate(zip(constants, placed)):  # each constant a view into its blob
        lines.append(f"    constant_{k}_data = T.address_of(blob_{d}[{offset}])")
        lines.append(f"    constant_{k} = T.decl_buffer({tuple(c.shape)!r}, \"{d}\", data=constant_{k}_data)")
    temps = [a for a in allocations if isinstance(a, tuple)]
    work_sizes, work_placed = _layout([(d, math.prod(shape), np.dtype("bool" if d == "bool" else d).itemsize)
                                       for _, shape, d in temps])
    if max_workspace_bytes is not None:
        size = sum(n * np.dtype("bool" if d == "bool" else d).itemsize for d, n in work_sizes.items())
        if size > max_workspace_bytes:
            raise _NotFusable(f"its intermediates take {size} bytes (the fused form's limit: {max_workspace_bytes})")
    lines[1] = lines[1][:-2] + "".join(f", work_{d}: {_buffer_decl((n,), d)}" for d, n in work_sizes.items()) + ", threads: T.int32):"
    where = {name: placed_at for (name, _, _), placed_at in zip(temps, work_placed)}
    for a in allocations:
        if isinstance(a, tuple):  # each intermediate a region of its dtype's workspace, never shared
            name, shape, d = a
            lines.append(f"    {name}_data = T.address_of(work_{d}[{where[name][1]}])")
            lines.append(f"    {name} = T.decl_buffer({shape!r}, \"{d}\", data={name}_data)")
        else:
            lines.append("    " + a)
    lines += ["    " + ln for s in statements for ln in ast.unparse(s).splitlines()]
    lines += ["    " + ln for c in copies for ln in c.splitlines()]
    if not statements and not copies:
        lines.append("    T.evaluate(0)")
    text = "\n".join(lines) + "\n"
    from tvm.script import tirx as T  # noqa: N812 - TVMScript's own name

    try:
        func = _deep_call(lambda: tvm.script.from_source(text, extra_vars={"T": T}, s_tir=True))
    except Exception as e:  # noqa: BLE001 - a kernel TVMScript does not read back: the VM path
        raise _NotFusable(f"the fused function does not parse: {str(e).splitlines()[0] if str(e) else e}") from None
    return FusedModel(func, inputs, outputs, list(blobs.values()), n_kernels,
                      [(d, n) for d, n in work_sizes.items()])


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
    """Compile `fused.func` with TVM's TIR build for `target`: a runtime Module whose
    `main` runs the model (`tvm.compile` of an IRModule of PrimFuncs)."""
    import tvm

    return tvm.compile(tvm.IRModule({"main": fused.func}), target=target)


def prefix_module(mod, target):
    """`mod` after our Relax pipeline's passes up to and including the schedule pass
    (`tvm_bridge.compile.pipeline`'s head): the input of `fuse`."""
    import tvm
    from tvm import relax
    from tvm.relax.backend.cpu_generic import pipeline as cpu

    from tvm_bridge.schedule import schedule_pass

    passes = cpu.library_dispatch_passes(target) + cpu.legalize_passes(target) + [schedule_pass(target),
                                                                                  relax.transform.RewriteDataflowReshape()]
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
            "workspace": [[d, n] for d, n in fused.workspace]}


class FusedRunner:
    """The fused function `main(inputs..., outputs..., constant blobs..., workspaces..., threads)` called with numpy
    arrays: inputs copied into 64-byte aligned buffers kept for them, the outputs written
    into buffers kept for them and copied once into arrays the caller owns.  Needs only
    numpy and TVM FFI (qd-run's cached path uses it without `import tvm`).

    `call` is the call itself (a closure: a call of a small model is a few hundred
    nanoseconds of Python, and attribute look-ups are a good part of it)."""

    def __init__(self, function, spec: dict, constants):
        """`function`: the library's `main`; `spec`: `spec(fused)`; `constants`: its
        trailing arguments (numpy arrays, in order)."""
        import tvm_ffi

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
        current_threads()  # (TVM's default count, unless set_threads named one)
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
