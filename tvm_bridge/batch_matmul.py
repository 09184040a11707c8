"""Batched int8 matrix products of two activations on the dot-product instructions.

The lowering writes `qint.batch_matmul` (attention's Q @ K^T and P @ V) as one reduction
`linalg.generic`: loops (batch..., m, n, k), the operands read at (batch..., m, k) and
(batch..., k, n) -- or (k, m) / (n, k), a TFLite adj_x / adj_y read in place -- with 0 for
a broadcast batch dimension, body `acc + (extsi(a) - za) * (extsi(b) - zb)` in i32, init 0
(transforms/lower_to_linalg.py).  TVM's code for it multiplies in 32-bit lanes.

This kernel runs the sums on the flavor's dot-product instruction (tvm_bridge/vnni.py:
`vpdpbusd` on AVX-512 VNNI, `vpmaddwd` elsewhere), with the zero points folded out of
the inner loop:

    sum_k (a - za)(b - zb) = sum_k a b - zb sum_k a - za sum_k b + K za zb

VNNI multiplies `a + 128` (uint8), which adds `128 sum_k b`: the column correction is
`-(128 + za) sum_k b[k, n] + K za zb`, the row correction `-zb sum_k a[m, k]`, each sum
computed once per batch.  Per batch the kernel stages the activations (`a + 128` in
uint8, or int16), packs the rhs as the convolution kernel packs its weights
(`[K/G, N/KB, KB x G]`: the G values of one 32-bit lane are consecutive k) and forms the
two corrections; then TT rows x KB columns (NV vectors of L lanes) are accumulated in
registers over k in steps of G, and the corrections added in 64-bit arithmetic before
the result is truncated to i32 (which is the generic's wrapping sum exactly).  For a 4-D
[1, H, M, N] result (attention's heads) the elementwise chain after it (the requantization,
a clamp) runs on those values inside the kernel (tvm_bridge/epilogue.py, as for the
convolutions: its additive steps folded into the column correction), and only the int8
result is written; other ranks write the i32 sums.

`vpdpbusd` adds without saturation.  `vpmaddwd`'s accumulation is a vector add (`nsw`
in TVM's LLVM code): it is used only where no partial sum can leave int32 (K 2^14 <=
2^30).  Like the other kernels, each flavor can be built emulated (`Flavor.emulate`).
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.builtin import TensorType
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr

from tvm_bridge.common import call_tir, dtype_of, shape_of
from tvm_bridge.vnni import _HALF_RANGE, Flavor, _buffer, _dot, _loops, _prim_func, _seq

#: register tiles (rows TT, vectors NV), first fit first
BLOCKS = ((4, 1), (3, 1), (2, 1), (4, 2), (1, 1))


def _zp_operand(value, arg):
    """za when `value` is `extsi(arg) - za` (a constant) or `extsi(arg)` (0), else None."""
    owner = value.owner
    if isinstance(owner, arith.ExtSIOp):
        return 0 if owner.operands[0] is arg else None
    if isinstance(owner, arith.SubiOp):
        ext, c = owner.operands
        if isinstance(ext.owner, arith.ExtSIOp) and ext.owner.operands[0] is arg \
                and isinstance(c.owner, arith.ConstantOp) and getattr(c.owner.value, "value", None) is not None:
            return int(c.owner.value.value.data)
    return None


def _positions(m, n_loops: int) -> list | None:
    """Per map result: the loop it reads (an int) or 0 (the constant 0 of a broadcast dim)."""
    out = []
    for e in m.results:
        if isinstance(e, AffineDimExpr) and e.position < n_loops:
            out.append(e.position)
        elif isinstance(e, AffineConstantExpr) and e.value == 0:
            out.append(None)
        else:
            return None
    return out


def match(tr, op) -> dict | None:
    """The geometry of generic `op` if it is the lowering's int8 batch matmul (see the module
    docstring) with N % 8 == 0, else None."""
    iters = op.iterator_types.data
    r = len(iters) - 1
    if r < 2 or "reduction" not in str(iters[-1].data) or any("parallel" not in str(i.data) for i in iters[:-1]):
        return None
    inputs, outputs = list(op.inputs), list(op.outputs)
    if len(inputs) != 2 or len(outputs) != 1:
        return None
    a, b = inputs
    if not (isinstance(a.type, TensorType) and isinstance(b.type, TensorType)):
        return None
    if (dtype_of(a.type), dtype_of(b.type), dtype_of(outputs[0].type)) != ("int8", "int8", "int32"):
        return None
    from tvm_bridge.common import _init_value

    init_tensor, init_const = _init_value(tr, outputs[0])
    if init_tensor is not None or init_const != 0:
        return None
    am, bm, om = (m.data for m in op.indexing_maps.data)
    if am.num_symbols or bm.num_symbols or _positions(om, r + 1) != list(range(r)):
        return None
    ap, bp = _positions(am, r + 1), _positions(bm, r + 1)
    if ap is None or bp is None or len(ap) < 2 or len(bp) < 2:
        return None
    nb = r - 2
    for p in (ap, bp):  # batch positions read a batch loop (or 0), in order
        if any(q is not None and q >= nb for q in p[:-2]):
            return None
    if sorted(ap[-2:]) != [r - 2, r] or sorted(bp[-2:]) != [r - 1, r]:
        return None
    body = op.body.block
    x, y, acc = body.args
    ops = list(body.ops)
    yld = ops[-1]
    add = yld.operands[0].owner if isinstance(yld, linalg.YieldOp) else None
    if not isinstance(add, arith.AddiOp) or acc not in add.operands or len(list(acc.uses)) != 1:
        return None
    mul = [v for v in add.operands if v is not acc][0].owner
    if not isinstance(mul, arith.MuliOp):
        return None
    za = zb = None
    for v in mul.operands:
        zx, zy = _zp_operand(v, x), _zp_operand(v, y)
        if zx is not None and za is None:
            za = zx
        elif zy is not None and zb is None:
            zb = zy
    if za is None or zb is None or len(ops) > 9:
        return None
    out_shape = list(shape_of(outputs[0].type))
    m, n = out_shape[-2:]
    k = shape_of(a.type)[ap.index(r)]
    if n % 8 or k == 0 or m == 0:
        return None
    return dict(a_pos=tuple(ap), b_pos=tuple(bp), a_shape=tuple(shape_of(a.type)), b_shape=tuple(shape_of(b.type)),
                out_shape=tuple(out_shape), M=m, N=n, K=k, ZA=za, ZB=zb)


def _kernel(g: dict, f: Flavor, epi=None, ebufs=()):
    """The kernel's PrimFunc (built node by node, as tvm_bridge/vnni.py's); with `epi` (an
    `epilogue.Epilogue` of a 4-D [1, H, M, N] result, its parameters in `ebufs`) the chain
    after the sums runs on them before the result is written."""
    from tvm import tirx
    from tvm.tirx.script.builder import ir as T

    G, L, NV, TT = f.group, g["L"], g["NV"], g["TT"]
    tiled = bool(g.get("TILED"))  # the products on AMX tiles (tvm_bridge/amx.py)
    KB = NV * L
    M, N, K, za, zb = g["M"], g["N"], g["K"], g["ZA"], g["ZB"]
    KP = -(-K // G) * G
    out_shape = g["out_shape"]
    nb = len(out_shape) - 2
    r = nb + 2
    A = _buffer(g["a_shape"], "int8", "A")
    B = _buffer(g["b_shape"], "int8", "B")
    INIT = _buffer((N,), "int32", "INIT")  # the epilogue's additive steps folded (mod 2^32)
    Y = _buffer(out_shape, "int32" if epi is None else epi.out_dtype, "Y")
    # (a tile reads whole 16-row tiles: the rows past M are read, their sums discarded)
    XU = _buffer((g["MT"] if tiled else M, KP), f.xdtype, "XU")
    WP = _buffer((KP // G, N // KB, G * KB), f.wdtype, "WP")
    COL = _buffer((N,), "int32", "COL")  # the column correction, then read by the epilogue
    ROW = _buffer((M,), "int32", "ROW")
    acc_buf = _buffer((TT, KB), "int32", "ACC", scope="local")
    batch = [tirx.Var(f"b{i}", "int32") for i in range(nb)]

    def index(positions, values: dict):
        return [tirx.IntImm("int32", 0) if p is None else (batch[p] if p < nb else values[p]) for p in positions]

    def a_at(mm, kk):
        return A[index(g["a_pos"], {r - 2: mm, r: kk})]

    def b_at(kk, nn):
        return B[index(g["b_pos"], {r - 1: nn, r: kk})]

    zero32 = tirx.IntImm("int32", 0)
    # the staging loops walk each operand in its stored order (k last for a (m, k) lhs and an
    # (n, k) rhs: adj_y), so the innermost loop reads consecutive bytes
    a_k_last, b_k_last = g["a_pos"][-1] == r, g["b_pos"][-1] == r

    def over_a(body):  # body(m, k) for every m < M, k < K
        if a_k_last:
            return _loops("serial", (M, K), ("m", "k"), body)
        return _loops("serial", (K, M), ("k", "m"), lambda kk, mm: body(mm, kk))

    def over_b(body):  # body(k, n) for every k < K, n < N
        if b_k_last:
            return _loops("serial", (N, K), ("n", "k"), lambda nn, kk: body(kk, nn))
        return _loops("serial", (K, N), ("k", "n"), body)

    stage = [
        # activations: a + 128 as uint8 (VNNI) or a as int16; the k padding 0 (meets zero weights)
        over_a(lambda mm, kk: tirx.BufferStore(
            XU, T.Cast(f.xdtype, T.Cast("int32", a_at(mm, kk)) + f.bias) if f.bias else T.Cast(f.xdtype, a_at(mm, kk)),
            [mm, kk])),
    ]
    if KP != K:
        stage.append(_loops("serial", (M, KP - K), ("m", "k"), lambda mm, kk: tirx.BufferStore(
            XU, getattr(T, f.xdtype)(0), [mm, K + kk])))
        stage.append(_loops("serial", (N // KB, KB, KP - K), ("ko", "l", "j"), lambda ko, ll, j: tirx.BufferStore(
            WP, getattr(T, f.wdtype)(0), [(K + j) // G, ko, ll * G + (K + j) % G])))
    stage.append(over_b(lambda kk, nn: tirx.BufferStore(
        WP, T.Cast(f.wdtype, b_at(kk, nn)), [kk // G, nn // KB, nn % KB * G + kk % G])))
    # the corrections: -(bias + za) * sum_k b + K za zb per column, -zb * sum_k a per row
    stage.append(_loops("vectorized", (N,), ("n",), lambda nn: tirx.BufferStore(COL, zero32, [nn])))
    stage.append(over_b(lambda kk, nn: tirx.BufferStore(COL, COL[nn] + T.Cast("int32", b_at(kk, nn)), [nn])))
    stage.append(_loops("vectorized", (N,), ("n",), lambda nn: tirx.BufferStore(COL, T.Cast("int32", (
        T.Cast("int64", COL[nn]) * (-(f.bias + za)) + T.Cast("int64", INIT[nn]) + K * za * zb + (1 << 31))
        % (1 << 32) - (1 << 31)), [nn])))
    if zb:
        stage.append(_loops("serial", (M,), ("m",), lambda mm: tirx.BufferStore(ROW, zero32, [mm])))
        stage.append(over_a(lambda mm, kk: tirx.BufferStore(ROW, ROW[mm] + T.Cast("int32", a_at(mm, kk)), [mm])))

    operand = "int8" if f.name == "vnni" else "int16"
    otype = "int32" if f.emulate else f"{operand}x{G * L}"
    mo, ko, tv, lv = (tirx.Var(v, "int32") for v in ("mo", "ko", "t", "l"))

    def accumulate(rc):
        def step(t):
            word = T.Broadcast(T.reinterpret(XU.vload([mo * TT + t, rc * G], f"{f.xdtype}x{G}"), dtype="int32"), L)
            xw = word if f.emulate else T.reinterpret(word, dtype=otype)
            stores = []
            for v in range(NV):
                wv = WP.vload([rc, ko, v * L * G], f"{f.wdtype}x{G * L}")
                if f.wdtype != operand:
                    wv = T.Cast(f"{operand}x{G * L}", wv)
                ww = T.reinterpret(wv, dtype=f"int32x{L}") if f.emulate else wv
                stores.append(tirx.BufferStore(acc_buf, _dot(f, L, acc_buf.vload([t, v * L], f"int32x{L}"), xw, ww),
                                               [t, T.ramp(v * L, 1, L)]))
            return _seq(stores)
        return _loops("unroll", (TT,), ("t",), step)

    def result(t, lane):
        row, col = mo * TT + t, ko * KB + lane
        total = T.Cast("int64", acc_buf[t, lane]) + T.Cast("int64", COL[col])
        if zb:
            total = total - T.Cast("int64", ROW[row]) * zb
        # (the i32 wrap of the generic's sum, as a 64-bit remainder: no signed overflow)
        return T.Cast("int32", (total + (1 << 31)) % (1 << 32) - (1 << 31))

    if epi is None:
        temps, value = [], result(tv, lv)
    else:  # positions (y, x, k) of the 4-D [1, H, M, N] result: (head, row, column)
        temps, value = epi.expr(result(tv, lv), batch[1], mo * TT + tv, ko * KB + lv, list(ebufs), lv, KB)
        if str(value.ty) != Y.dtype:
            raise ValueError(f"batch matmul epilogue computes {value.ty}, its result is {Y.dtype}")
    store = _seq([*(tirx.BufferStore(b, e, [lv]) for b, e in temps),
                  tirx.BufferStore(Y, value, [*batch, mo * TT + tv, ko * KB + lv])])
    row = tirx.For(lv, tirx.IntImm("int32", 0), tirx.IntImm("int32", KB), tirx.ForKind.VECTORIZED, store)
    if tiled:
        tiles = f.tiled.matmul_loops(g, XU, WP, acc_buf, mo, ko, tv, row)
    else:
        tiles = _seq([
            _loops("unroll", (TT,), ("t",), lambda t: tirx.BufferStore(
                acc_buf, T.Broadcast(zero32, KB), [t, T.ramp(0, 1, KB)])),
            _loops("serial", (KP // G,), ("rc",), accumulate),
            tirx.For(tv, tirx.IntImm("int32", 0), tirx.IntImm("int32", TT), tirx.ForKind.UNROLLED, row)])
        for v, e in ((ko, N // KB), (mo, M // TT)):
            tiles = tirx.For(v, tirx.IntImm("int32", 0), tirx.IntImm("int32", e), tirx.ForKind.SERIAL, tiles)
    per_batch = _seq([*stage, tiles])
    for v, e in zip(reversed(batch), reversed(out_shape[:nb])):
        per_batch = tirx.For(v, tirx.IntImm("int32", 0), tirx.IntImm("int32", e), tirx.ForKind.SERIAL, per_batch)
    body = [tirx.AllocBuffer(b) for b in (XU, WP, COL, ROW, acc_buf, *(b for b, _ in temps))] + [per_batch]
    return _prim_func([A, B, INIT, *ebufs, Y], body)


def applicable(g: dict, f: Flavor) -> bool:
    """`vpmaddwd` accumulates with an `nsw` add: only where no partial sum can leave int32."""
    return f.name == "vnni" or g["K"] * (1 << 14) <= _HALF_RANGE


def _epilogue(tr, op, g: dict):
    """The elementwise chain after a 4-D [1, H, M, N] result (tvm_bridge/epilogue.py: the
    requantization, a clamp), or None (another rank, or a chain ending in a pad)."""
    from tvm_bridge import epilogue

    shape = g["out_shape"]
    if len(shape) != 4 or shape[0] != 1:
        return None
    epi = epilogue.collect(tr, op)
    if not epi.ops or epi.pad is not None or epi.collapsed is not None:
        return None
    return epi


def emit(tr, op, g: dict, flavor: Flavor) -> None:
    """Emit the kernel for generic `op` of geometry `g` (`match`), with the elementwise chain
    after it fused in when it can be."""
    import numpy as np
    from tvm import relax

    from tvm_bridge.common import tensor_constant

    lanes = 16 if g["N"] % 16 == 0 and flavor.max_lanes == 16 else 8
    if flavor.tiled is not None:  # (the registry leaves tiles only where `takes_matmul` holds)
        g = flavor.tiled.matmul_geometry(g)
    else:
        tt, nv = next((t, v) for t, v in BLOCKS if g["M"] % t == 0 and g["N"] % (v * lanes) == 0)
        g = dict(g, L=lanes, TT=tt, NV=nv)
    epi = _epilogue(tr, op, g)
    prim_func = None
    if epi is not None:
        key = ("batch_matmul", flavor, tuple(sorted(g.items())), epi.key(tr))
        prim_func = tr.vnni_kernels.get(key)
        if prim_func is None:
            from tvm_bridge.vnni import _buffer as buffer

            try:
                ebufs = [buffer(p.shape, p.dtype, f"E{i}") for i, p in enumerate(epi.params)]
                prim_func = tr.vnni_kernels[key] = _kernel(g, flavor, epi, ebufs)
            except Exception:  # noqa: BLE001 - an epilogue the kernel cannot take (nothing emitted
                # yet): the bare sums, and the chain translated op by op
                epi = prim_func = None
    if epi is None:
        key = ("batch_matmul", flavor, tuple(sorted(g.items())))
        prim_func = tr.vnni_kernels.get(key)
        if prim_func is None:
            prim_func = tr.vnni_kernels[key] = _kernel(g, flavor)
    gvar = tr.vnni_kernels.get(("gvar", id(prim_func)), (None, None))[1]
    if gvar is None:
        name = "amx_batch_matmul" if flavor.tiled is not None else f"{flavor.name}_batch_matmul"
        gvar = tr.bb.add_func(prim_func, name)
        tr.vnni_kernels[("gvar", id(prim_func))] = (prim_func, gvar)
    a, b = (tr.tensor(v) for v in op.inputs)
    init = np.zeros(g["N"], np.int32) if epi is None else epi.init
    args = [a, b, tensor_constant(np.ascontiguousarray(init, np.int32))]
    if epi is None:
        tr.env[op.results[0]] = tr.bb.emit(call_tir(gvar, args, relax.TensorType(list(g["out_shape"]), "int32")))
        return
    args += [tensor_constant(p.value) if isinstance(p.value, np.ndarray) else p.value for p in epi.params]
    tr.env[epi.result] = tr.bb.emit(call_tir(gvar, args, relax.TensorType(list(g["out_shape"]), epi.out_dtype)))
    tr.fused.update(map(id, epi.ops))
