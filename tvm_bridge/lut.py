"""Byte table look-ups in vectors: `y = table[x + c]` with `vpermi2b` (AVX-512 VBMI) or
`vpshufb` (AVX-512BW, AVX2).

An int8 activation the lowering computes by a table (LOGISTIC, TANH, ELU, the swish of
EfficientNet's blocks: qnn's 256-entry look-up tables) becomes a kernel of one gather per
element, `Y[i] = B[cast(X[i]) + 128]`, which LLVM leaves as a scalar load of the table per
byte: about 1.2 cycles per element on the Zen 4, and the largest share of EfficientNet-B0's
time (held-out, session 19: 11 such kernels, 1.1 ms of 2.3 ms at 128x128 in the VM form,
x1.29 XNNPACK's whole-model time).

The index is x + c as an unsigned byte u: for an int8 input and c = 128 that is x with its
top bit flipped, for a uint8 input (or a uint8 edge kept in int8 storage, read through a
cast to uint8) and c = 0 x's byte itself.  `lookup_kernel` looks up a vector of them:

- "vbmi" (64 bytes a step): the table is four 64-byte registers, and `vpermi2b` looks up 64
  bytes in two of them (128 entries: index bits 0-6); two of those and a select on bit 7
  (64x64x96 int8: 163 -> 23 us on the Zen 4);
- "pshufb512" / "pshufb" (64 / 32 bytes a step): `vpshufb` looks up in 16 entries and gives
  0 where the index byte's bit 7 is set.  For u < 128, with T_k the table's entries 16k to
  16k + 15 and D_k = T_k ^ T_(k-1) (D_0 = T_0), the XOR over k = 0..7 of pshufb(D_k, u - 16k)
  is T_(u/16)[u % 16]: the terms with 16k <= u read D_k at u % 16, the others (u - 16k
  negative, bit 7 set) are 0, and the D_k telescope.  The same chain over entries 128..255
  at u ^ 128 gives the upper half, and a select on u's bit 7 picks (16 `vpshufb`, 14
  subtractions, 14 XORs and a blend per vector: 2.5x the scalar kernel's speed).

Elements past the last whole vector are looked up one at a time.  `schedule.schedule_pass`
puts this kernel in place of a PrimFunc that is exactly such a look-up (`match_lookup`), in
the target's family (`lookup_family`); a look-up fused with other operations, or a target
without AVX2, keeps the scheduled scalar form.  The look-up is the table's read, so the bits
cannot differ: tests/tvm_bridge/test_lut.py checks them against LiteRT in every family the
host can run.
"""

from __future__ import annotations

import math

#: family -> (bytes looked up per vector step, the LLVM intrinsic)
FAMILIES = {
    "vbmi": (64, "llvm.x86.avx512.vpermi2var.qi.512"),  # vpermi2b: 128 entries per look-up
    "pshufb512": (64, "llvm.x86.avx512.pshuf.b.512"),  # vpshufb: 16 entries per look-up
    "pshufb": (32, "llvm.x86.avx2.pshuf.b"),
}


def lookup_family(target) -> str | None:
    """The look-up family for `target` (a TVM target): "vbmi" with AVX-512 VBMI, "pshufb512"
    with AVX-512BW, "pshufb" with AVX2, None otherwise (the scalar kernel)."""
    from tvm_bridge.vnni import _has

    for family, feature in (("vbmi", "avx512vbmi"), ("pshufb512", "avx512bw"), ("pshufb", "avx2")):
        if _has(target, feature):
            return family
    return None


def match_lookup(func):
    """(X, B, Y, c, unsigned) when `func` (a PrimFunc in block form, as TE makes it) is exactly
    `Y[i...] = B[cast(X[i...]) + c]` over every element of Y, with X and Y of one shape,
    X int8 and c = 128 or X uint8 and c = 0 (each index in [0, 256)), B a parameter of 256
    elements of Y's dtype (int8 or uint8); else None.  `unsigned`: X is int8 storage read as
    uint8 (`cast(cast(X, uint8))`, a model's uint8 edge: c = 0)."""
    from tvm import tirx
    from tvm.ir.expr import TensorLoad  # (TVM 0.27: what tirx.BufferLoad makes; its buffer is `source`)
    from tvm.s_tir import SBlockRealize

    params = list(func.params)
    if len(params) != 3 or not all(isinstance(p.ty, tirx.BufferType) for p in params):
        return None
    stmt = func.body
    if isinstance(stmt, SBlockRealize):  # the root block
        if stmt.block.alloc_buffers or stmt.block.init is not None:
            return None
        stmt = stmt.block.body
    loops = []
    while isinstance(stmt, tirx.For):
        loops.append(stmt)
        stmt = stmt.body
    if not isinstance(stmt, SBlockRealize):
        return None
    block = stmt.block
    store = block.body
    if block.init is not None or block.alloc_buffers or not isinstance(store, tirx.BufferStore):
        return None
    y = store.buffer
    if not isinstance(store.value, TensorLoad) or len(store.value.indices) != 1:
        return None
    table, index = store.value.source, store.value.indices[0]
    offset = 0
    if isinstance(index, tirx.Add) and isinstance(index.b, tirx.IntImm):
        index, offset = index.a, int(index.b.value)
    if isinstance(index, tirx.Cast):
        index = index.value
    unsigned = False
    if isinstance(index, tirx.Cast) and str(index.ty) == "uint8":  # a uint8 edge in int8 storage
        index, unsigned = index.value, True
    if not isinstance(index, TensorLoad):
        return None
    x = index.source
    dtypes = (str(x.dtype), str(table.dtype), str(y.dtype))
    if dtypes[0] not in ("int8", "uint8") or dtypes[1] != dtypes[2] or dtypes[2] not in ("int8", "uint8"):
        return None
    if offset != (0 if unsigned or dtypes[0] == "uint8" else 128):
        return None
    shape = [int(d) for d in y.shape]
    if [int(d) for d in x.shape] != shape or [int(d) for d in table.shape] != [256]:
        return None
    if not all(any(p.same_as(b) for p in params) for b in (x, table, y)) or len({id(b) for b in (x, table, y)}) != 3:
        return None
    # every element of Y once, read at its own index: the block's variables are Y's indices, in
    # order, over Y's extents, bound one to one to the loops
    iters = list(block.iter_vars)
    if len(iters) != len(shape) or len(loops) != len(shape) or len(stmt.iter_values) != len(shape):
        return None
    for iv, value, loop, extent, a, b in zip(iters, stmt.iter_values, loops, shape, store.indices, index.indices):
        if not (a.same_as(iv.var) and b.same_as(iv.var) and value.same_as(loop.loop_var)):
            return None
        if int(iv.dom.min) != 0 or int(iv.dom.extent) != extent or int(loop.min) != 0 or int(loop.extent) != extent:
            return None
    if not isinstance(stmt.predicate, tirx.IntImm) or int(stmt.predicate.value) != 1:
        return None
    return x, table, y, offset, unsigned


def lookup_kernel(func, family: str = "vbmi"):
    """The vector form of a look-up kernel (`match_lookup`) for `family` (`FAMILIES`), or None
    when `func` is not one.  Same parameters; a block-free body marked scheduled, with op
    pattern 8 (opaque) as the translation's other hand-written kernels."""
    import tvm
    from tvm import tirx
    from tvm.tirx.script.builder import ir as T

    found = match_lookup(func)
    if found is None:
        return None
    x, table, y, offset, unsigned = found
    lanes, shuffle = FAMILIES[family]
    n = math.prod(int(d) for d in y.shape)
    xd, yd = str(x.dtype), str(y.dtype)
    xf = tirx.decl_buffer((n,), xd, "lut_x", layout=None)
    yf = tirx.decl_buffer((n,), yd, "lut_y", layout=None)
    tf = tirx.decl_buffer((256,), yd, "lut_table", layout=None)
    body = [tirx.DeclBuffer(xf, data=x.data), tirx.DeclBuffer(yf, data=y.data), tirx.DeclBuffer(tf, data=table.data)]
    steps = n // lanes
    i8 = f"int8x{lanes}"

    def splat(v: int, dtype: str = "int8"):
        return tirx.Broadcast(tirx.IntImm(dtype, v), lanes)

    def table_bytes(start: int, count: int):
        v = tf.vload([start], f"{yd}x{count}")
        return v if yd == "int8" else T.reinterpret(v, dtype=f"int8x{count}")

    if steps:
        i = tirx.Var("i", "int32")
        raw = xf.vload([i * lanes], f"{xd}x{lanes}")
        if offset:  # int8 x + 128 as a byte: x with its top bit flipped
            raw = T.reinterpret(raw, dtype=f"uint8x{lanes}") ^ tirx.Broadcast(tirx.IntImm("uint8", 128), lanes)
        idx = T.reinterpret(raw, dtype=i8) if xd != "int8" or offset else raw
        if family == "vbmi":
            quarters = [table_bytes(k * lanes, lanes) for k in range(4)]
            low = T.call_llvm_pure_intrin(shuffle, quarters[0], idx, quarters[1], dtype=i8)
            high = T.call_llvm_pure_intrin(shuffle, quarters[2], idx, quarters[3], dtype=i8)
        else:
            def chain(base: int, index):
                """table[base + index] for index in [0, 128): the XOR of pshufb look-ups of the
                16-entry differences D_k = T_k ^ T_(k-1), at index - 16k (see the module's
                docstring); lanes whose index is 128 or more get garbage"""
                def sixteen(k):  # T_k (entries base + 16k ..), in every 16 lanes
                    v = table_bytes(base + 16 * k, 16)
                    return tirx.Shuffle([v] * (lanes // 16), [tirx.IntImm("int32", j) for j in range(lanes)])

                acc = None
                for k in range(8):
                    d = sixteen(k) if k == 0 else sixteen(k) ^ sixteen(k - 1)
                    look = T.call_llvm_pure_intrin(shuffle, d, index, dtype=i8)
                    acc = look if acc is None else acc ^ look
                    # (in uint8, where wrapping is defined: a lane whose index wraps is one
                    # whose result the select drops)
                    index = T.reinterpret(T.reinterpret(index, dtype=f"uint8x{lanes}") - splat(16, "uint8"),
                                          dtype=i8)
                return acc

            low = chain(0, idx)
            high = chain(128, idx ^ splat(-128))
        # entries 128..255: the index's bit 7, its sign as int8
        value = tirx.Select(idx < splat(0), high, low)
        if yd != "int8":
            value = T.reinterpret(value, dtype=f"{yd}x{lanes}")
        body.append(tirx.For(i, tirx.IntImm("int32", 0), tirx.IntImm("int32", steps), tirx.ForKind.SERIAL,
                             yf.vstore([i * lanes], value)))
    if n % lanes:
        j = tirx.Var("j", "int32")
        element = tirx.BufferLoad(xf, [j])
        if unsigned and xd == "int8":
            element = tirx.Cast("uint8", element)
        index = tirx.Cast("int32", element) + tirx.IntImm("int32", offset)
        entry = tirx.BufferLoad(tf, [index])
        if yd != "int8":
            entry = T.reinterpret(entry, dtype=yd)
        body.append(tirx.For(j, tirx.IntImm("int32", steps * lanes), tirx.IntImm("int32", n % lanes),
                             tirx.ForKind.SERIAL, tirx.BufferStore(yf, entry, [j])))
    attrs = dict(func.attrs) if func.attrs is not None else {}
    attrs.update({"tirx.noalias": True, "tirx.is_scheduled": True, "s_tir": True, "op_pattern": 8})
    return tirx.PrimFunc(list(func.params), tirx.SeqStmt(body), ret_type=func.ret_type,
                         attrs=tvm.ir.make_node("ir.DictAttrs", **attrs))
