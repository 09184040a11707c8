"""int8 depthwise convolutions on `vpmaddwd`, one product per 32-bit lane.

The lowering writes an int8 depthwise convolution with constant weights as a
`linalg.generic` summing `extui(x xor 0x80) * extsi(w)` (that is (x + 128) * w)
into i32, followed by the per-channel correction `(izp + 128) * sum(w)`
(transforms/lower_to_linalg.py).  TVM's own code for that generic spends more
of its time widening bytes than multiplying: every tap of every output vector
is an xor, a byte shuffle and a zero-extension before its `vpmaddwd`.

This kernel computes the same sums with the signed activations loaded and
sign-extended to 32-bit lanes in one instruction (`vpmovsxbd` from memory) and
the weights stored, at translation time, as 32-bit lanes whose low half is the
weight as int16 and whose high half is zero.  `vpmaddwd` of the two is then
x_lo w_lo + x_hi 0 = x w exactly (x and w are int8): one load-extend, one
multiply and one add per 8 products.  The `+128` of the generic's activations
becomes `128 * sum(w)` in the accumulator's start value, with the elementwise
chain after it (the correction, bias, requantization, activation, the next
layer's pad) fused in as for the dot-product convolutions (tvm_bridge/epilogue.py):
only the int8 result is written.

Each step computes TT output columns x NV vectors of L channels in registers: L = 16
(512-bit vectors) where the channels are a multiple of 16 and the flavor has 512-bit
vectors (AVX-512BW, AVX-512 VNNI), else 8.  On an AVX-512 VNNI CPU the multiply and
the add are one instruction, `vpdpwssd` (the 16-bit pairs' dot product added to the
accumulator): one load-extend and one `vpdpwssd` per 16 products; elsewhere `vpmaddwd`
then a vector add, which is `nsw` in TVM's LLVM code, so the kernel is used only
where no partial sum can leave int32 (|start| + KH KW 2^15 < 2^31; `vpdpwssd` wraps,
the same condition is kept for both).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.builtin import TensorType

from tvm_bridge.common import call_tir, dtype_of, tensor_constant
from tvm_bridge.vnni import (_HALF_RANGE, PMADDWD, Flavor, NotApplicable, _buffer, _dot, _loops, _pad_border,
                              _prim_func, _seq, _tiles, epilogue_width, parallel_rows)

#: register tiles (output columns TT, L-channel vectors NV), first fit first; rows of 7 columns
#: (MobileNetV2-1.0's 7x7x960 and 7x7x576 layers) take 7 x 2, not one column at a time (their
#: epilogue then a register at a time too): MobileNetV2-1.0 1.656 -> 1.580 ms `tflite`, 1.218 ->
#: 1.199 `litert`, one-process A/B on the Zen 5
BLOCKS = ((4, 2), (3, 2), (2, 2), (4, 1), (3, 1), (2, 1), (7, 2), (1, 2), (1, 1))


#: the arithmetic of `vpmaddwd` as portable vector TIR: the emulated VNNI flavor's taps
_PMADDWD_EMULATED = replace(PMADDWD, emulate=True)


def lanes(flavor: Flavor, channels: int) -> int:
    """Channels per vector: 16 where they divide the channels and the flavor has 512-bit
    vectors, else 8."""
    return 16 if flavor.max_lanes == 16 and channels % 16 == 0 else 8


def _tap(f: Flavor, lanes_: int, acc, xs, ws):
    """`acc` + x * w in each 32-bit lane, xs the activations sign-extended to int32 and ws
    the weights' int16 in the low half (zero high half), both reinterpreted as int16 pairs
    unless emulated: `vpdpwssd` on AVX-512 VNNI, `vpmaddwd` + add otherwise (and emulated)."""
    from tvm.target.codegen import llvm_lookup_intrinsic_id
    from tvm.tirx.script.builder import ir as T

    if f.name == "vnni" and not f.emulate:
        intrinsic = llvm_lookup_intrinsic_id(f"llvm.x86.avx512.vpdpwssd.{32 * lanes_}")
        return T.call_llvm_pure_intrin(intrinsic, acc, xs, ws, dtype=f"int32x{lanes_}")
    return _dot(f if f.name != "vnni" else _PMADDWD_EMULATED, lanes_, acc, xs, ws)


def match(tr, op) -> dict | None:
    """The depthwise geometry of generic `op` if it is the lowering's int8 depthwise sum
    (loops n, y, x, c, ky, kx; x read at (n, y*sh + ky*dh, x*sw + kx*dw, c), constant
    (1, KH, KW, C) int8 weights read at (0, ky, kx, c); body acc + extui(x xor -128) *
    extsi(w) in i32; init 0), else None."""
    if len(op.iterator_types.data) != 6:  # (cheap: this runs on every generic)
        return None
    inputs, outputs = list(op.inputs), list(op.outputs)
    if len(inputs) != 2 or len(outputs) != 1:
        return None
    iters = [str(it.data) for it in op.iterator_types.data]
    if [("parallel" in i) for i in iters] != [True] * 4 + [False] * 2:
        return None
    x, w = inputs
    if not (isinstance(x.type, TensorType) and isinstance(w.type, TensorType)):
        return None
    if (dtype_of(x.type), dtype_of(w.type), dtype_of(outputs[0].type)) != ("int8", "int8", "int32"):
        return None
    dense = tr.dense(w)
    if dense is None:
        return None
    weights = dense.array()
    n, oh, ow, c = outputs[0].type.get_shape()
    if n != 1 or weights.ndim != 4 or weights.shape[0] != 1 or weights.shape[3] != c or c % 8:
        return None
    _, kh, kw, _ = weights.shape
    xm, wm, om = (m.data for m in op.indexing_maps.data)
    if xm.num_symbols or wm.num_symbols or om.num_symbols or xm.num_dims != 6:
        return None
    # the maps are affine: their values at the unit vectors give the coefficients
    unit = [[int(i == d) for i in range(6)] for d in range(6)]
    if [list(om.eval(u, [])) for u in unit] != [[int(i == d) for i in range(4)] if d < 4 else [0] * 4
                                                 for d in range(6)] or list(om.eval([0] * 6, [])) != [0] * 4:
        return None
    if list(xm.eval([0] * 6, [])) != [0] * 4 or list(wm.eval([0] * 6, [])) != [0] * 4:
        return None
    xc = [list(xm.eval(u, [])) for u in unit]
    wc = [list(wm.eval(u, [])) for u in unit]
    sh, sw, dh, dw = xc[1][1], xc[2][2], xc[4][1], xc[5][2]
    want_x = [[1, 0, 0, 0], [0, sh, 0, 0], [0, 0, sw, 0], [0, 0, 0, 1], [0, dh, 0, 0], [0, 0, dw, 0]]
    want_w = [[0] * 4, [0] * 4, [0] * 4, [0, 0, 0, 1], [0, 1, 0, 0], [0, 0, 1, 0]]
    if xc != want_x or wc != want_w or min(sh, sw, dh, dw) < 1:
        return None
    _, h, wd, _ = x.type.get_shape()
    if h < (oh - 1) * sh + (kh - 1) * dh + 1 or wd < (ow - 1) * sw + (kw - 1) * dw + 1:
        return None
    body = op.body.block
    a, b, acc = body.args
    ops = [o for o in body.ops]
    if len(ops) != 7:
        return None
    const, xor, extu, exts, mul, add, yld = ops
    if not (isinstance(const, arith.ConstantOp) and isinstance(xor, arith.XOrIOp)
            and isinstance(extu, arith.ExtUIOp) and isinstance(exts, arith.ExtSIOp)
            and isinstance(mul, arith.MuliOp) and isinstance(add, arith.AddiOp)
            and isinstance(yld, linalg.YieldOp)):
        return None
    if getattr(const.value, "value", None) is None or const.value.value.data != -128:
        return None
    if set(xor.operands) != {a, const.results[0]} or extu.operands[0] is not xor.results[0] \
            or exts.operands[0] is not b or set(mul.operands) != {extu.results[0], exts.results[0]} \
            or set(add.operands) != {acc, mul.results[0]} or yld.operands[0] is not add.results[0]:
        return None
    if extu.results[0].type.width.data != 32 or exts.results[0].type.width.data != 32:
        return None
    return dict(H=h, W=wd, C=c, KH=kh, KW=kw, OH=oh, OW=ow, SH=sh, SW=sw, DH=dh, DW=dw,
                weights=weights[0])


def _kernel(g: dict, f: Flavor, eparams, acc_buf, loop_vars, temps, value):
    """The kernel's PrimFunc (built node by node, as tvm_bridge/vnni.py's)."""
    from tvm import tirx
    from tvm.tirx.script.builder import ir as T

    H, W, C, KH, KW = g["H"], g["W"], g["C"], g["KH"], g["KW"]
    g = dict(g, PARALLEL=parallel_rows(g["OH"] * g["OW"] * C * KH * KW, g["OH"]))
    TT, NV, SH, SW, DH, DW = g["TT"], g["NV"], g["SH"], g["SW"], g["DH"], g["DW"]
    L = g["L"]
    KB = L * NV
    X = _buffer((1, H, W, C), "int8", "X")
    WP = _buffer((KH, KW, C), "int32", "WP")
    INIT = _buffer((C,), "int32", "INIT")
    Y = _buffer((1, g["YH"], g["YW"], C), g["ODT"], "Y")
    body = []
    border = _pad_border(Y, g, C)
    if border is not None:
        body.append(border)

    yv, xov, _, kov, _ = loop_vars
    otype = "int32" if f.emulate else f"int16x{2 * L}"

    def accumulate(rh, rw):
        def step(t):
            stores = []
            for n in range(NV):
                xs = T.Cast(f"int32x{L}", X.vload([0, yv * SH + rh * DH, (xov * TT + t) * SW + rw * DW,
                                                   kov * KB + n * L], f"int8x{L}"))
                ws = WP.vload([rh, rw, kov * KB + n * L], f"int32x{L}")
                if not f.emulate:
                    xs, ws = T.reinterpret(xs, dtype=otype), T.reinterpret(ws, dtype=otype)
                stores.append(tirx.BufferStore(acc_buf, _tap(f, L, acc_buf.vload([t, n * L], f"int32x{L}"), xs, ws),
                                               [t, T.ramp(n * L, 1, L)]))
            return _seq(stores)
        return _loops("unroll", (TT,), ("t",), step)

    body.append(_tiles(g, KB, C // KB, acc_buf, INIT, Y, loop_vars, temps, value,
                        _loops("serial", (KH, KW), ("rh", "rw"), accumulate)))
    # (the border loop writes Y's border, the tiles Y's interior)
    return _prim_func([X, WP, INIT, *eparams, Y], body, launch_macs=g["OH"] * g["OW"] * C * KH * KW)


def emit(tr, op, g: dict, flavor: Flavor):
    """Emit the depthwise kernel for generic `op` of geometry `g` (`match`), with the
    elementwise chain after it fused in; raises NotApplicable (nothing emitted) when its
    sums could leave int32."""
    from tvm import relax, tirx

    from tvm_bridge import epilogue

    weights = g["weights"].astype(np.int64)  # [KH, KW, C]
    c = g["C"]
    L = lanes(flavor, c)
    tt, nv = next((t, n) for t, n in BLOCKS if g["OW"] % t == 0 and c % (L * n) == 0)
    g = dict(g, TT=tt, NV=nv, L=L)
    epi = epilogue.collect(tr, op)
    # the generic sums (x + 128) * w; the kernel x * w
    start = 128 * weights.sum(axis=(0, 1))
    if epi.init is not None:
        start = start + epi.init.astype(np.int64)
    start = (start + (1 << 31)) % (1 << 32) - (1 << 31)
    if np.abs(start).max(initial=0) > _HALF_RANGE or g["KH"] * g["KW"] * (1 << 15) > _HALF_RANGE:
        raise NotApplicable("depthwise sums could leave int32")
    packed = (weights & 0xFFFF).astype(np.int32)  # int16 in the low half, zero high half
    pad, padv = (((0, 0), (0, 0)), 0) if epi.pad is None else (
        ((epi.pad[0][1], epi.pad[0][2]), (epi.pad[1][1], epi.pad[1][2])), epi.pad[2])
    odt = epi.out_dtype
    (pt, pl), (pb, pr) = pad
    key = ("depthwise", flavor, tuple(sorted((k, v) for k, v in g.items() if k != "weights")), pad, odt,
           padv, epi.key(tr))
    prim_func = tr.vnni_kernels.get(key)
    params = epi.params
    kb = L * nv
    # (the requantization's constants in pair order, per register as `_tiles` reads them)
    twin_values = epilogue.pair_twins(params, epilogue_width(L, kb, tt))
    if prim_func is None:
        loop_vars = yv, xov, tv, kov, lv = tuple(tirx.Var(n, "int32") for n in ("y", "xo", "t", "ko", "l"))
        acc_buf = _buffer((tt, kb), "int32", "ACC", scope="local")
        ebufs = [_buffer(p.shape, p.dtype, f"E{i}") for i, p in enumerate(params)]
        twins = {ebufs[i].name: _buffer(v.shape, "int64", f"P{i}") for i, v in twin_values}
        try:
            temps, value = epi.expr(acc_buf[tv, lv], yv, xov * tt + tv, kov * kb + lv, ebufs, lv, kb)
        except Exception as e:  # noqa: BLE001 - an epilogue the kernel cannot take (nothing was
            # emitted yet): the generic depthwise, with the chain translated op by op
            raise NotApplicable(f"depthwise epilogue: {e}") from e
        if str(value.ty) != odt:
            raise NotApplicable(f"depthwise epilogue computes {value.ty}, its result is {odt}")
        shapes = dict(g, YH=g["OH"] + pt + pb, YW=g["OW"] + pl + pr, PT=pt, PL=pl, PB=pb, PR=pr, ODT=odt,
                      PADV=float(padv) if "float" in odt else int(padv), TWINS=twins)
        prim_func = _kernel(shapes, flavor, ebufs + list(twins.values()), acc_buf, loop_vars, temps, value)
        tr.vnni_kernels[key] = prim_func
    gvar = tr.vnni_kernels.get(("gvar", id(prim_func)), (None, None))[1]
    if gvar is None:
        gvar = tr.bb.add_func(prim_func, "depthwise_conv2d")
        tr.vnni_kernels[("gvar", id(prim_func))] = (prim_func, gvar)
    args = [tr.tensor(op.inputs[0]), tensor_constant(packed), tensor_constant(start.astype(np.int32))]
    args += [tensor_constant(p.value) if isinstance(p.value, np.ndarray) else p.value for p in params]
    args += [tensor_constant(v) for _, v in twin_values]
    yh, yw = g["OH"] + pt + pb, g["OW"] + pl + pr
    result = tr.bb.emit(call_tir(gvar, args, relax.TensorType([1, yh, yw, c], odt)))
    if epi.collapsed is not None:  # a 1x1 output's [1, 1, 1, C] -> [1, C]
        result = tr.bb.emit(relax.op.reshape(result, epi.collapsed))
    tr.env[epi.result] = result
    tr.fused.update(map(id, epi.ops))
