"""Concatenation as contiguous vector copies.

TVM legalizes `relax.op.concat` to one block that picks each output element's source with an
`if_then_else` on its index along the axis; TVM's vectorizer cannot vectorize that, so the
whole copy runs a byte at a time.  DenseNet121 at 96x96 concatenates every dense layer's 32
new channels to the block's growing input (24x24x192 + 24x24x32 took 45 us, 2.9 GB/s, on
Zen 5), 58 concatenations a call.

`concat_kernel` replaces such a kernel, found by its shape alone (`match_concat`), with one
loop nest per input writing that input's slice of the output: the loops over the dimensions
before the axis and along it, and the contiguous run of the dimensions after it (a channel
concatenation in NHWC: each pixel's channels of that input) copied in vectors of 64 bytes
(then one shorter vector for the rest).  The schedule pass (`schedule.py`) applies it to every
kernel TVM's fusion left as a concatenation alone.
"""

from __future__ import annotations

import math

#: bytes of one vector copy (a 512-bit register; LLVM splits it on AVX2)
VECTOR_BYTES = 64


def match_concat(func):
    """(inputs, output, axis) when `func` (a PrimFunc in block form, as TE makes it) is one
    block named T_concat (schedule.CONCAT_BLOCK) whose parameters are inputs of one dtype and
    rank and the output last, all of one shape but along `axis`, where the inputs' extents add
    up to the output's; else None (an input passed twice is one parameter, and fails the sum)."""
    from tvm import tirx
    from tvm.s_tir import SBlockRealize

    from tvm_bridge.schedule import CONCAT_BLOCK

    params = list(func.params)
    if len(params) < 2 or not all(isinstance(p.ty, tirx.BufferType) for p in params):
        return None
    import tvm_ffi

    blocks = []

    def visit(node):
        blocks.append(node.block)
        return node

    tvm_ffi.structural_map(func.body, (SBlockRealize, visit))
    named = [b for b in blocks if b.name_hint != "root"]
    if len(named) != 1 or not named[0].name_hint.startswith(CONCAT_BLOCK) or named[0].init is not None:
        return None
    if any(b.alloc_buffers for b in blocks):
        return None
    *inputs, out = params
    try:
        shapes = [[int(d) for d in b.shape] for b in params]
    except TypeError:  # (a dimension not a constant)
        return None
    if len({str(b.dtype) for b in params}) != 1 or len({len(s) for s in shapes}) != 1 or not shapes[-1]:
        return None
    rank = len(shapes[-1])
    differing = [a for a in range(rank) if any(s[a] != shapes[-1][a] for s in shapes[:-1])]
    if len(differing) != 1:
        return None
    axis = differing[0]
    if sum(s[axis] for s in shapes[:-1]) != shapes[-1][axis]:
        return None
    return inputs, out, axis


def concat_kernel(func):
    """The copy form of a concatenation kernel (`match_concat`), or None when `func` is not
    one.  Same parameters; a block-free body marked scheduled."""
    import tvm
    from tvm import tirx

    found = match_concat(func)
    if found is None:
        return None
    inputs, out, axis = found
    dtype = str(out.dtype)
    lanes_max = max(1, VECTOR_BYTES // tvm.runtime.DataType(dtype).itemsize)
    out_shape = [int(d) for d in out.shape]
    after = math.prod(out_shape[axis + 1:])  # (elements of one step along the axis)
    # the buffers as (before, along, after) views of the parameters' data
    before = math.prod(out_shape[:axis])
    yv = tirx.decl_buffer((before, out_shape[axis] * after), dtype, "concat_y", layout=None)
    body = [tirx.DeclBuffer(yv, data=out.data)]
    i64 = "int64"
    offset = 0
    for k, x in enumerate(inputs):
        run = int(x.shape[axis]) * after  # contiguous elements of this input per outer index
        xv = tirx.decl_buffer((before, run), dtype, f"concat_x{k}", layout=None)
        body.append(tirx.DeclBuffer(xv, data=x.data))
        o = tirx.Var(f"o{k}", i64)
        copies = []
        full, rest = divmod(run, lanes_max)
        if full:
            j = tirx.Var(f"j{k}", i64)
            start = j * tirx.IntImm(i64, lanes_max)
            copies.append(tirx.For(j, tirx.IntImm(i64, 0), tirx.IntImm(i64, full), tirx.ForKind.SERIAL,
                                   yv.vstore([o, start + tirx.IntImm(i64, offset)],
                                             xv.vload([o, start], f"{dtype}x{lanes_max}"))))
        if rest:
            start = tirx.IntImm(i64, full * lanes_max)
            value = xv.vload([o, start], f"{dtype}x{rest}") if rest > 1 else tirx.BufferLoad(xv, [o, start])
            copies.append(yv.vstore([o, tirx.IntImm(i64, full * lanes_max + offset)], value)
                          if rest > 1 else tirx.BufferStore(yv, value, [o, tirx.IntImm(i64, full * lanes_max + offset)]))
        inner = copies[0] if len(copies) == 1 else tirx.SeqStmt(copies)
        body.append(tirx.For(o, tirx.IntImm(i64, 0), tirx.IntImm(i64, before), tirx.ForKind.SERIAL, inner))
        offset += run
    attrs = dict(func.attrs) if func.attrs is not None else {}
    attrs.update({"tirx.noalias": True, "tirx.is_scheduled": True, "s_tir": True, "op_pattern": 8})
    return tirx.PrimFunc(list(func.params), tirx.SeqStmt(body), ret_type=func.ret_type,
                         attrs=tvm.ir.make_node("ir.DictAttrs", **attrs))
