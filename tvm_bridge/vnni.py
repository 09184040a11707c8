"""int8 convolutions on AVX-512 VNNI (`vpdpbusd`) through TVM's own tensor intrinsic.

`vpdpbusd` multiplies unsigned 8-bit activations with signed 8-bit weights,
four at a time, and adds the four products to a 32-bit lane, without
saturation.  Our convolutions are int8 x int8, so the activations travel as
`x + 128` in uint8 (exact: -128..127 -> 0..255) and the accumulator is
corrected by `128 * sum(weights of that output channel)`, a per-channel
constant computed at translation time:

    sum (x + 128) * w = sum x * w + 128 * sum w

The weights (constants) are packed once, at translation time, into
`[KH, KW, C/4, K/16, 16 x 4]`: for one kernel tap and four input channels, the
64 bytes one `vpdpbusd` reads for 16 output channels.  The kernel is a TIR
PrimFunc (built node by node, specialised to the shapes, compiled by TVM's
LLVM backend; the TVMScript it prints is what it would be written as) whose
inner statement is the `llvm.x86.avx512.vpdpbusd.512` call
of TVM's own `dot_16x4_vnni` intrinsic (`tvm.s_tir.tensor_intrin.x86`), written
out rather than tensorized: `Schedule.tensorize` crashes (segfault) in TVM 0.27
even on the smallest example.  Each step computes 4 neighbouring output
columns x 16 output channels in registers.

Used for int8 x int8 -> int32 `linalg.conv_2d_nhwc_fhwc` with constant weights
when the target has `avx512vnni` and K % 8 == 0 (8-channel blocks use the
256-bit `vpdpbusd`; C is padded to a multiple of 4); every other
convolution takes the generic path.
"""

from __future__ import annotations

import functools

import numpy as np

from tvm_bridge.translate import TranslationError, tensor_constant


def _buffer(shape, dtype: str, name: str, scope: str = "global"):
    """A kernel buffer as TVMScript declares one in an `s_tir` PrimFunc (no layout)."""
    from tvm import tirx

    return tirx.decl_buffer(shape, dtype, name=name, scope=scope, layout=None)


def _loops(kind: str, extents, names, body_of):
    """Nested `For`s (`kind`: serial, unroll or vectorized) over `extents`, loop variables
    named `names`; `body_of(*vars)` builds the innermost body.  A TVMScript `T.grid` or
    `for v in T.unroll(n)` builds the same nodes."""
    from tvm import tirx

    kinds = {"serial": tirx.ForKind.SERIAL, "unroll": tirx.ForKind.UNROLLED,
             "vectorized": tirx.ForKind.VECTORIZED}
    loop_vars = [tirx.Var(n, "int32") for n in names]
    stmt = body_of(*loop_vars)
    for v, e in zip(reversed(loop_vars), reversed(extents)):
        stmt = tirx.For(v, tirx.IntImm("int32", 0), tirx.IntImm("int32", e), kinds[kind], stmt)
    return stmt


def _seq(stmts):
    from tvm import tirx

    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


def _kernel(g: dict, xu_shape, fold: bool, kind: str, eparams, acc_buf, loop_vars, temps, value):
    """The kernel's PrimFunc, built node by node (no TVMScript text to print and parse):
    `g` holds the shapes (H, W, C, CP, K, KH, KWE, C4, K16, L, TT, OH, OW, OWT, strides,
    dilations, output pad and dtype), `eparams` the epilogue's argument buffers, `acc_buf`
    the accumulators, `loop_vars` the (y, xo, t, ko, l) variables the epilogue `value` and
    its `temps` (local buffer, PrimExpr) are written in."""
    import tvm
    from tvm import tirx
    from tvm.target.codegen import llvm_lookup_intrinsic_id
    from tvm.tirx.script.builder import ir as T

    H, W, C, CP, K = g["H"], g["W"], g["C"], g["CP"], g["K"]
    L, TT, SH, SW, DH, DW = g["L"], g["TT"], g["SH"], g["SW"], g["DH"], g["DW"]
    PT, PL, OH, OW, ODT = g["PT"], g["PL"], g["OH"], g["OW"], g["ODT"]
    X = _buffer((1, H, W, C), "int8", "X")
    WP = _buffer((g["KH"], g["KWE"], g["C4"], g["K16"], 4 * L), "int8", "WP")
    INIT = _buffer((K,), "int32", "INIT")
    Y = _buffer((1, g["YH"], g["YW"], K), ODT, "Y")
    XU = _buffer(xu_shape, "uint8", "XU")

    def widened(h, w, c):
        return T.Cast("uint8", T.Cast("int32", X[0, h, w, c]) + 128)

    body = [tirx.AllocBuffer(XU), tirx.AllocBuffer(acc_buf)] + [tirx.AllocBuffer(b) for b, _ in temps]
    if fold:
        body.append(_loops("serial", (H, W), ("h", "w"), lambda h, w: _loops(
            kind, (C,), ("c",), lambda c: tirx.BufferStore(XU, widened(h, w, c), [h, w * C + c]))))
        body.append(_loops("serial", (H,), ("h",), lambda h: _loops(
            "unroll", (4,), ("j",), lambda j: tirx.BufferStore(XU, T.uint8(0), [h, W * C + j]))))
    elif CP == C:
        body.append(_loops("serial", (H, W), ("h", "w"), lambda h, w: _loops(
            "vectorized", (C,), ("c",), lambda c: tirx.BufferStore(XU, widened(h, w, c), [h, w, c]))))
    else:  # the padding channels hold 0 (and meet zero weights)
        body.append(_loops("serial", (H, W), ("h", "w"), lambda h, w: _seq([
            _loops(kind, (C,), ("c",), lambda c: tirx.BufferStore(XU, widened(h, w, c), [h, w, c])),
            _loops("unroll", (CP - C,), ("c",), lambda c: tirx.BufferStore(XU, T.uint8(0), [h, w, C + c]))])))
    if PT or PL or g["PB"] or g["PR"]:
        pad_value = getattr(T, ODT)(g["PADV"])

        def border(h, w):
            inside = tirx.Or(tirx.Or(tirx.Or(tirx.LT(h, tirx.IntImm("int32", PT)),
                                              tirx.GE(h, tirx.IntImm("int32", PT + OH))),
                                     tirx.LT(w, tirx.IntImm("int32", PL))),
                             tirx.GE(w, tirx.IntImm("int32", PL + OW)))
            return tirx.IfThenElse(inside, _loops("vectorized", (K,), ("c",), lambda c: tirx.BufferStore(
                Y, pad_value, [0, h, w, c])), None)

        body.append(_loops("serial", (g["YH"], g["YW"]), ("h", "w"), border))

    yv, xov, tv, kov, lv = loop_vars
    lanes = T.ramp(0, 1, L)
    intrinsic = llvm_lookup_intrinsic_id(f"llvm.x86.avx512.vpdpbusd.{32 * L}")

    def accumulate(rh, rw, rc):
        def step(t):
            if fold:
                xidx = [yv * SH + rh * DH, (xov * TT + t) * SW * C + rc * 4]
            else:
                xidx = [yv * SH + rh * DH, (xov * TT + t) * SW + rw * DW, rc * 4]
            return tirx.BufferStore(acc_buf, T.call_llvm_pure_intrin(
                intrinsic,
                acc_buf.vload([t, 0], f"int32x{L}"),
                T.reinterpret(T.Broadcast(T.reinterpret(XU.vload(xidx, "uint8x4"), dtype="int32"), L),
                              dtype=f"int8x{4 * L}"),
                WP.vload([rh, rw, rc, kov, 0], f"int8x{4 * L}"),
                dtype=f"int32x{L}"), [t, lanes])
        return _loops("unroll", (TT,), ("t",), step)

    def epilogue(lane):
        stores = [tirx.BufferStore(b, e, [lane]) for b, e in temps]
        stores.append(tirx.BufferStore(Y, value, [0, yv + PT, xov * TT + tv + PL, kov * L + lane]))
        return _seq(stores)

    def block(y, xo, ko):
        return _seq([
            _loops("unroll", (TT,), ("t",), lambda t: tirx.BufferStore(
                acc_buf, INIT.vload([ko * L], f"int32x{L}"), [t, lanes])),
            _loops("serial", (g["KH"], g["KWE"], g["C4"]), ("rh", "rw", "rc"), accumulate),
            tirx.For(tv, tirx.IntImm("int32", 0), tirx.IntImm("int32", TT), tirx.ForKind.UNROLLED,
                     tirx.For(lv, tirx.IntImm("int32", 0), tirx.IntImm("int32", L), tirx.ForKind.VECTORIZED,
                              epilogue(lv)))])

    main = block(yv, xov, kov)
    for v, e in zip((kov, xov, yv), (g["K16"], g["OWT"], OH)):
        main = tirx.For(v, tirx.IntImm("int32", 0), tirx.IntImm("int32", e), tirx.ForKind.SERIAL, main)
    body.append(main)
    attrs = tvm.ir.make_node("ir.DictAttrs", **{"tirx.noalias": True, "tirx.is_scheduled": True, "s_tir": True})
    return tirx.PrimFunc([X, WP, INIT, *eparams, Y], tirx.SeqStmt(body), ret_type=tvm.ir.TupleType([]),
                         attrs=attrs)


def target_has_vnni(target) -> bool:
    try:
        from tvm.target.codegen import target_has_features

        return bool(target_has_features("avx512vnni", target))
    except Exception:  # noqa: BLE001 - not an llvm target
        return False


def applicable(x_shape, weights: np.ndarray | None, x_dtype: str, w_dtype: str, out_dtype: str) -> bool:
    """int8 x int8 -> int32, one image, constant weights, K % 8 == 0 (16 output channels
    per 512-bit `vpdpbusd`, or 8 per 256-bit one when K % 16 != 0; C is padded to a
    multiple of 4 with zero activations and zero weights).

    No range condition: `vpdpbusd` adds without saturating, so the kernel computes
    sum((x + 128) * w) - 128 * sum(w) modulo 2^32, which is linalg's wrapping i32
    accumulation exactly, overflow or not."""
    if weights is None or (x_dtype, w_dtype, out_dtype) != ("int8", "int8", "int32") or x_shape[0] != 1:
        return False
    k, _, _, c = weights.shape
    return k % 8 == 0


def _geometry(h: int, w: int, c: int, k: int, kh: int, kw: int, strides, dilations) -> dict:
    """The kernel's loop extents and blocking for an HxWxC input and K x KH x KW x C weights."""
    sh, sw = strides
    dh, dw = dilations
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (w - dw * (kw - 1) - 1) // sw + 1
    tt = next(t for t in (4, 3, 2, 1) if ow % t == 0)
    cp = -(-c // 4) * 4
    # Few input channels (C = 1, 2, 6, ... not a multiple of 4): the bytes of one input
    # row under a kernel row, x[h, w0 + kw, c] for all (kw, c), are contiguous in NHWC
    # (dilation 1), so the dot products run over (kw, c) in groups of 4 bytes instead of
    # over c padded to 4 per tap: a 10x4 kernel on one channel takes 10 vpdpbusd per
    # output block instead of 40.  The activations are then one byte row per image row
    # (W * C bytes, 4 zero bytes after it for the last group's overhang).
    fold = dw == 1 and kw > 1 and c % 4 != 0 and -(-kw * c // 4) < kw * (cp // 4)
    lanes = 16 if k % 16 == 0 else 8
    cf = -(-kw * c // 4) * 4
    kwe, c4 = (1, cf // 4) if fold else (kw, cp // 4)
    return dict(H=h, W=w, C=c, CP=cp, CF=cf, K=k, KH=kh, KW=kw, KWE=kwe, C4=c4, K16=k // lanes, L=lanes,
                OH=oh, OW=ow, TT=tt, OWT=ow // tt, SH=sh, SW=sw, DH=dh, DW=dw, FOLD=fold,
                KIND="unroll" if c < 16 else "vectorized",
                XU=(h, w * c + 4) if fold else (h, w, cp))


def _build(g: dict, pad, odt: str, padv, epi, ebufs):
    """The kernel of geometry `g` writing `odt` inside `pad` ((top, left), (bottom, right))
    filled with `padv`, the epilogue `epi` (or none) reading its parameters from `ebufs`."""
    from tvm import tirx

    (pt, pl), (pb, pr) = pad
    tt, lanes = g["TT"], g["L"]
    loop_vars = yv, xov, tv, kov, lv = tuple(tirx.Var(n, "int32") for n in ("y", "xo", "t", "ko", "l"))
    acc_buf = _buffer((tt, lanes), "int32", "ACC", scope="local")
    acc = acc_buf[tv, lv]
    temps, value = ([], acc) if epi is None else epi.expr(acc, yv, xov * tt + tv, kov * lanes + lv, ebufs,
                                                          lv, lanes)
    if str(value.ty) != odt:
        raise TranslationError(f"VNNI epilogue computes {value.ty}, its result is {odt}")
    shapes = dict(g, YH=g["OH"] + pt + pb, YW=g["OW"] + pl + pr, PT=pt, PL=pl, PB=pb, PR=pr, ODT=odt,
                  PADV=float(padv) if "float" in odt else int(padv))
    return _kernel(shapes, g["XU"], g["FOLD"], g["KIND"], ebufs, acc_buf, loop_vars, temps, value)


@functools.lru_cache(maxsize=256)
def _bare_kernel(h: int, w: int, c: int, k: int, kh: int, kw: int, strides: tuple, dilations: tuple):
    """The kernel without an epilogue (int32 sums): a function of the shapes alone."""
    return _build(_geometry(h, w, c, k, kh, kw, strides, dilations), ((0, 0), (0, 0)), "int32", 0, None, [])


def clear_caches() -> None:
    """Forget the epilogue-free kernels built so far (benchmarks that time building them;
    kernels with an epilogue are cached per translation, in the Translator)."""
    _bare_kernel.cache_clear()


def emit_conv2d(bb, x, x_shape, weights: np.ndarray, strides, dilations, epi=None, init: int = 0,
                epi_key: tuple | None = None, kernels: dict | None = None):
    """Emit the VNNI convolution of relax tensor `x` (NHWC int8, already padded, shape
    `x_shape`) with constant OHWI int8 `weights`, plus the constant `init` (the
    convolution's output init) and the fused epilogue `epi` (tvm_bridge/epilogue.py:
    additive constants folded into the accumulator's start, the elementwise chain
    applied to the accumulators, the result written inside its pad); returns the
    relax result (NHWC int32 sums without an epilogue).

    `epi_key` (`Epilogue.key`) identifies the epilogue's structure within one translation
    (its tokens are the translator's): a kernel whose shapes and epilogue key are already
    in `kernels` (the translator's own dict, one per BlockBuilder) is reused without being
    built again, and called through the GlobalVar it was added under."""
    from tvm import relax

    k, kh, kw, c = weights.shape
    _, h, w, _ = x_shape
    g = _geometry(h, w, c, k, kh, kw, tuple(strides), tuple(dilations))
    lanes, kwe, c4 = g["L"], g["KWE"], g["C4"]
    if g["FOLD"]:
        padded = np.zeros((k, kh, 1, g["CF"]), np.int8)
        padded[:, :, 0, :kw * c] = weights.reshape(k, kh, kw * c)  # byte kw * C + c of the window
    else:
        padded = np.zeros((k, kh, kw, g["CP"]), np.int8)
        padded[..., :c] = weights
    packed = np.ascontiguousarray(padded.reshape(k // lanes, lanes, kh, kwe, c4, 4)
                                  .transpose(2, 3, 4, 0, 1, 5).reshape(kh, kwe, c4, k // lanes, 4 * lanes))
    # start value of the sums: -128 * sum(w) undoes the +128 of the activations;
    # plus the output init and the folded additive epilogue steps, all modulo 2^32
    start = -128 * weights.astype(np.int64).sum(axis=(1, 2, 3)) + int(init)
    params = [] if epi is None else epi.params
    if epi is not None and epi.init is not None:
        start = start + epi.init.astype(np.int64)
    start = ((start + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)
    pad, padv = (((0, 0), (0, 0)), 0) if epi is None or epi.pad is None else (
        ((epi.pad[0][1], epi.pad[0][2]), (epi.pad[1][1], epi.pad[1][2])), epi.pad[2])
    odt = "int32" if epi is None else epi.out_dtype
    yh, yw = g["OH"] + pad[0][0] + pad[1][0], g["OW"] + pad[0][1] + pad[1][1]
    args = [x, relax.const(packed), relax.const(start)]
    args += [tensor_constant(p.value) if isinstance(p.value, np.ndarray) else p.value for p in params]
    if epi is None:
        prim_func = _bare_kernel(h, w, c, k, kh, kw, tuple(strides), tuple(dilations))
    else:
        struct_key = None if epi_key is None or kernels is None else (
            h, w, c, k, kh, kw, tuple(strides), tuple(dilations), epi_key)
        prim_func = kernels.get(struct_key) if struct_key is not None else None
        if prim_func is None:
            ebufs = [_buffer(p.shape, p.dtype, f"E{i}") for i, p in enumerate(params)]
            prim_func = _build(g, pad, odt, padv, epi, ebufs)
            if struct_key is not None:
                kernels[struct_key] = prim_func
    # BlockBuilder.add_func finds an equal function by structural hash (about 0.2 ms a call):
    # once per kernel object and translation
    gvar = None if kernels is None else kernels.get(("gvar", id(prim_func)), (None, None))[1]
    if gvar is None:
        gvar = bb.add_func(prim_func, "vnni_conv2d")
        if kernels is not None:
            kernels[("gvar", id(prim_func))] = (prim_func, gvar)  # the kernel kept: its id stays its own
    return bb.emit(relax.call_tir(gvar, args, relax.TensorType([1, yh, yw, k], odt)))
