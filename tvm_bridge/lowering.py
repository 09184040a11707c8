"""TVM's TIR pipeline with one step of ours: the kernels' accumulators on the stack.

The dot-product kernels (tvm_bridge/vnni.py, depthwise.py, batch_matmul.py) keep their
accumulators in a local buffer named ``ACC`` that LLVM holds in vector registers for the
whole reduction.  TVM's `LowerTVMBuiltin` puts a local buffer in its workspace allocator
(`TVMBackendAllocWorkspace`, a pointer LLVM knows nothing about) unless the allocation
carries the ``disable_lower_builtin`` annotation, and `StorageRewrite` drops annotations.
LLVM then keeps the accumulators in registers only while no instruction of the reduction
loop might touch that memory: a `prefetcht0` of the weights inside the loop (an
`llvm.prefetch` call, which may read any memory through its pointer as far as LLVM can tell)
made it store all of them at every step, 3x the time.  On the stack (an `alloca`, promoted
to registers by LLVM's SROA whatever else the loop does) they stay in registers.

`mark_accumulators` puts the annotation back after TVM's lowering, on the ``ACC`` buffers of
at most `MAX_STACK_BYTES`; `PIPELINE` names TVM's default TIR pipeline followed by it, for
`relax.build(tir_pipeline=...)` (tvm_bridge/compile.py); the fused build applies it between
the same two steps (tvm_bridge/fused.py).
"""

from __future__ import annotations

import functools

#: the name `relax.build` knows our TIR pipeline by (`register`)
PIPELINE = "qdialect"
#: the largest accumulator buffer put on the stack (a tile of 24 zmm registers is 1.5 KB)
MAX_STACK_BYTES = 8 << 10
#: the buffer name of the kernels' accumulators
ACCUMULATORS = "ACC"
_ANNOTATION = "disable_lower_builtin"  # (TVM's transform::kDisableLowerTVMBuiltin)


def _lanes(dtype) -> int:
    """The lanes of a TVM dtype (1 for a scalar)."""
    import tvm

    return int(tvm.DataType(str(dtype)).lanes)


def _uniform_vectors(body, buf) -> bool:
    """Whether every access of the flat buffer `buf` in `body` is a vector of one lane count
    at a constant offset that is a multiple of it: what LLVM's SROA turns into registers of
    that vector type.  Mixed widths (a 48-lane store over 16-lane loads, a whole-block
    epilogue reading 48 lanes) it split into single lanes, rebuilt into vectors at every
    step (mobilenetv2_tiny 0.023 -> 0.037 ms)."""
    import tvm_ffi
    from tvm import tirx
    from tvm.ir.expr import TensorLoad

    # (StorageRewrite may have made the buffer one of vectors, read at scalar indices)
    element_lanes = _lanes(buf.dtype)
    seen, ok = set(), [True]

    def visit(node):
        if not (node.source if isinstance(node, TensorLoad) else node.buffer).same_as(buf):
            return node
        index = node.indices[0] if len(node.indices) == 1 else None
        if isinstance(index, tirx.Ramp) and isinstance(index.base, tirx.IntImm) and \
                isinstance(index.stride, tirx.IntImm) and int(index.stride) == 1:
            lanes = int(index.lanes)
            seen.add(lanes)
            ok[0] = ok[0] and int(index.base) % lanes == 0
        elif isinstance(index, tirx.IntImm) and element_lanes > 1:  # (one element a vector)
            seen.add(element_lanes)
        else:
            ok[0] = False
        return node

    tvm_ffi.structural_map(body, [(TensorLoad, visit), (tirx.BufferStore, visit)])
    return ok[0] and len(seen) == 1


def mark_accumulators(mod):
    """`mod` (TIR, after TVM's lowering passes) with each local ``ACC`` allocation of constant
    size at most MAX_STACK_BYTES, read and written in vectors of one width
    (`_uniform_vectors`), annotated to stay on the stack."""
    import tvm
    import tvm_ffi
    from tvm import tirx

    def on_alloc(node, body):
        buf = node.buffer
        if buf.name != ACCUMULATORS or buf.scope() != "local" or not _uniform_vectors(body, buf):
            return node
        size = 1
        for extent in buf.shape:
            if not isinstance(extent, tirx.IntImm):
                return node
            size *= int(extent)
        if size * _lanes(buf.dtype) * tvm.DataType(buf.dtype).bits // 8 > MAX_STACK_BYTES:
            return node
        return tirx.AllocBuffer(buf, {_ANNOTATION: tirx.IntImm("int32", 1)})

    def marked(f):
        return f.with_body(tvm_ffi.structural_map(f.body, (tirx.AllocBuffer, lambda n: on_alloc(n, f.body))))

    functions = {gv: (marked(f) if isinstance(f, tirx.PrimFunc) else f) for gv, f in mod.functions.items()}
    return tvm.IRModule(functions, attrs=mod.attrs)


@functools.lru_cache(maxsize=1)
def register() -> str:
    """Register PIPELINE with TVM (once) and return its name: TVM's default (`s_tir`) TIR
    pipeline, then `mark_accumulators`, then TVM's own finalizing passes."""
    import tvm
    from tvm.tirx import compilation_pipeline as pipelines

    def factory(**kwargs):
        lower, finalize_host, finalize_device = pipelines.get_tir_pipeline("s_tir", **kwargs)

        @tvm.transform.module_pass(opt_level=0, name="QdialectStackAccumulators")
        def mark(mod, _ctx):
            return mark_accumulators(mod)

        return tvm.transform.Sequential([lower, mark]), finalize_host, finalize_device

    pipelines.register_tir_pipeline(PIPELINE, factory)
    return PIPELINE
