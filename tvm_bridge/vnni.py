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
PrimFunc (written in TVMScript, specialised to the shapes, compiled by TVM's
LLVM backend) whose inner statement is the `llvm.x86.avx512.vpdpbusd.512` call
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

_KERNEL = """
# from tvm.script import tirx as T
@T.prim_func(private=True, s_tir=True)
def vnni_conv2d(X: T.Buffer((1, {H}, {W}, {C}), "int8"), WP: T.Buffer(({KH}, {KWE}, {C4}, {K16}, {L4}), "int8"),
                INIT: T.Buffer(({K},), "int32"),{EPARAMS} Y: T.Buffer((1, {YH}, {YW}, {K}), "{ODT}")):
    T.func_attr({{"tirx.noalias": True, "tirx.is_scheduled": True}})
    XU = T.alloc_buffer({XUSHAPE}, "uint8")
    ACC = T.alloc_buffer(({TT}, {L}), "int32", scope="local")
{FILL}{BORDER}
    for y, xo, ko in T.grid({OH}, {OWT}, {K16}):
        for t in T.unroll({TT}):
            ACC[t, T.ramp(0, 1, {L})] = INIT.vload([ko * {L}], "int32x{L}")
        for rh, rw, rc in T.grid({KH}, {KWE}, {C4}):
            for t in T.unroll({TT}):
                ACC[t, T.ramp(0, 1, {L})] = T.call_llvm_pure_intrin(
                    T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.{BITS}"),
                    ACC.vload([t, 0], "int32x{L}"),
                    T.reinterpret(T.Broadcast(T.reinterpret(
                        XU.vload({XIDX}, "uint8x4"),
                        dtype="int32"), {L}), dtype="int8x{L4}"),
                    WP.vload([rh, rw, rc, ko, 0], "int8x{L4}"),
                    dtype="int32x{L}")
        for t in T.unroll({TT}):
            for l in T.vectorized({L}):
                {EPI}
"""

_BORDER = """
    for h, w in T.grid({YH}, {YW}):
        if h < {PT} or h >= {PT} + {OH} or w < {PL} or w >= {PL} + {OW}:
            for c in T.vectorized({K}):
                Y[0, h, w, c] = T.{ODT}({PADV})"""



@functools.lru_cache(maxsize=512)
def _parse(text: str):
    """The PrimFunc of a kernel's TVMScript text; repeated layers (same shapes, same
    epilogue: their per-channel constants are arguments) parse once."""
    import tvm

    return tvm.script.from_source(text)


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


def clear_caches() -> None:
    """Forget the kernel texts parsed so far (benchmarks that time building them)."""
    _parse.cache_clear()


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
    in `kernels` (the translator's own dict) is reused without building its text again."""
    import tvm
    from tvm import relax, tirx

    k, kh, kw, c = weights.shape
    _, h, w, _ = x_shape
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
    if fold:
        cf = -(-kw * c // 4) * 4
        padded = np.zeros((k, kh, 1, cf), np.int8)
        padded[:, :, 0, :kw * c] = weights.reshape(k, kh, kw * c)  # byte kw * C + c of the window
        kwe, c4 = 1, cf // 4
    else:
        padded = np.zeros((k, kh, kw, cp), np.int8)
        padded[..., :c] = weights
        kwe, c4 = kw, cp // 4
    packed = np.ascontiguousarray(padded.reshape(k // lanes, lanes, kh, kwe, c4, 4)
                                  .transpose(2, 3, 4, 0, 1, 5).reshape(kh, kwe, c4, k // lanes, 4 * lanes))
    kind = "unroll" if c < 16 else "vectorized"
    if fold:
        xu_shape = f"({h}, {w * c + 4})"
        xidx = "[y * {SH} + rh * {DH}, (xo * {TT} + t) * {SW} * {C} + rc * 4]"
    else:
        xu_shape = f"({h}, {w}, {cp})"
        xidx = "[y * {SH} + rh * {DH}, (xo * {TT} + t) * {SW} + rw * {DW}, rc * 4]"
    if fold:
        fill = ("    for h, w in T.grid({H}, {W}):\n"
                f"        for c in T.{kind}({{C}}):\n"
                "            XU[h, w * {C} + c] = T.Cast(\"uint8\", T.Cast(\"int32\", X[0, h, w, c]) + 128)\n"
                "    for h in range({H}):\n"
                "        for j in T.unroll(4):\n"
                "            XU[h, {W} * {C} + j] = T.uint8(0)")
    elif cp == c:
        fill = ("    for h, w in T.grid({H}, {W}):\n        for c in T.vectorized({C}):\n"
                "            XU[h, w, c] = T.Cast(\"uint8\", T.Cast(\"int32\", X[0, h, w, c]) + 128)")
    else:  # the padding channels hold 0 (and meet zero weights)
        fill = ("    for h, w in T.grid({H}, {W}):\n"
                f"        for c in T.{kind}({{C}}):\n"
                "            XU[h, w, c] = T.Cast(\"uint8\", T.Cast(\"int32\", X[0, h, w, c]) + 128)\n"
                "        for c in T.unroll({CP} - {C}):\n"
                "            XU[h, w, {C} + c] = T.uint8(0)")
    # start value of the sums: -128 * sum(w) undoes the +128 of the activations;
    # plus the output init and the folded additive epilogue steps, all modulo 2^32
    start = -128 * weights.astype(np.int64).sum(axis=(1, 2, 3)) + int(init)
    params = [] if epi is None else epi.params
    if epi is not None and epi.init is not None:
        start = start + epi.init.astype(np.int64)
    start = ((start + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)
    (pt, pl), (pb, pr), padv = ((0, 0), (0, 0), 0) if epi is None or epi.pad is None else (
        (epi.pad[0][1], epi.pad[0][2]), (epi.pad[1][1], epi.pad[1][2]), epi.pad[2])
    odt = "int32" if epi is None else epi.out_dtype
    yh, yw = oh + pt + pb, ow + pl + pr
    eshapes = [p.shape for p in params]
    eparams = "".join(f" E{i}: T.Buffer({s}, \"{p.dtype}\")," for i, (s, p) in enumerate(zip(eshapes, params)))
    yv, xov, tv, kov, lv = (tirx.Var(n, "int32") for n in ("y", "xo", "t", "ko", "l"))
    acc_buf = tirx.decl_buffer((tt, lanes), "int32", name="ACC", scope="local")
    ebufs = [tirx.decl_buffer(s, p.dtype, name=f"E{i}") for i, (s, p) in enumerate(zip(eshapes, params))]
    acc = acc_buf[tv, lv]
    struct_key = None if epi is not None and epi_key is None else (
        h, w, c, k, kh, kw, tuple(strides), tuple(dilations), epi_key)
    if kernels is None:
        struct_key = None
    prim_func = kernels.get(struct_key) if struct_key is not None else None
    args = [x, relax.const(packed), relax.const(start)]
    args += [tensor_constant(p.value) if isinstance(p.value, np.ndarray) else p.value for p in params]
    if prim_func is not None:
        gvar = bb.add_func(prim_func, "vnni_conv2d")
        return bb.emit(relax.call_tir(gvar, args, relax.TensorType([1, yh, yw, k], odt)))
    temps, value = ([], acc) if epi is None else epi.expr(acc, yv, xov * tt + tv, kov * lanes + lv, ebufs,
                                                          lv, lanes)
    if str(value.ty) != odt:
        raise TranslationError(f"VNNI epilogue computes {value.ty}, its result is {odt}")
    border = _BORDER if (pt or pl or pb or pr) else ""
    fmt = dict(H=h, W=w, C=c, CP=cp, K=k, KH=kh, KW=kw, KWE=kwe, C4=c4, K16=k // lanes, L=lanes, L4=4 * lanes,
               BITS=32 * lanes, OH=oh, OW=ow, TT=tt, OWT=ow // tt, SH=sh, SW=sw, DH=dh, DW=dw,
               YH=yh, YW=yw, PT=pt, PL=pl, ODT=odt, PADV=repr(float(padv)) if "float" in odt else int(padv))
    indent = "\n" + " " * 16
    epi_text = "".join(f"{b.name}[l] = {e}{indent}" for b, e in temps) + \
        f"Y[0, y + {pt}, xo * {tt} + t + {pl}, ko * {lanes} + l] = {value}"
    allocs = "".join(f"\n    {b.name} = T.alloc_buffer(({lanes},), \"{b.dtype}\", scope=\"local\")" for b, _ in temps)
    text = (_KERNEL.replace("{FILL}", allocs + "\n" + fill).replace("{XUSHAPE}", xu_shape).replace("{XIDX}", xidx).replace("{BORDER}", border).replace("{EPARAMS}", eparams)
            .format(EPI="@EPI@", **fmt).replace("@EPI@", epi_text))
    prim_func = _parse(text)
    if struct_key is not None:
        kernels[struct_key] = prim_func
    gvar = bb.add_func(prim_func, "vnni_conv2d")
    return bb.emit(relax.call_tir(gvar, args, relax.TensorType([1, yh, yw, k], odt)))
