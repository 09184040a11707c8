"""int8 convolutions on AVX-512 VNNI (`vpdpbusd`) through TVM's own tensor intrinsic.

`vpdpbusd` multiplies unsigned 8-bit activations with signed 8-bit weights,
four at a time, and adds the four products to a 32-bit lane, without
saturation.  Our convolutions are int8 x int8, so the activations travel as
`x + 128` in uint8 (exact: -128..127 -> 0..255) and the accumulator is
corrected by `128 * sum(weights of that output channel)`, a per-channel
constant computed at translation time:

    sum (x + 128) * w = sum x * w + 128 * sum w

The weights (constants) are packed once, at translation time, into
`[K/KB, KH, KW, C/4, KB x 4]` (block-major, `_packed_shape`): for one kernel tap and
four input channels, the 64 bytes one `vpdpbusd` reads for 16 output channels, a
channel block's taps one contiguous run.  The kernel is a TIR
PrimFunc (built node by node, specialised to the shapes, compiled by TVM's
LLVM backend; the TVMScript it prints is what it would be written as) whose
inner statement is the `llvm.x86.avx512.vpdpbusd.512` call
of TVM's own `dot_16x4_vnni` intrinsic (`tvm.s_tir.tensor_intrin.x86`), written
out rather than tensorized: `Schedule.tensorize` crashes (segfault) in TVM 0.27
even on the smallest example.  Each step computes TT neighbouring output
columns x NV vectors of 16 (or 8) output channels in registers (`Flavor.blocks`:
6 x 2 or 4 x 3 where the shape allows; whole rows of a narrow image, `_row_tiles`; or
tiles leaving a tail whose pixels are discarded, `_tail_tiles`).

Block-diagonal weights (a grouped convolution, which the TFLite importer makes dense with
zeros outside each group; `block_groups`) are packed per channel block over that block's own
groups' input channels only, and the reduction reads those (`GROUP`): a ResNeXt-like net's 3x3
layers of 8 groups take an eighth to a half of the dense multiply-accumulates.

Used for int8 x int8 -> int32 `linalg.conv_2d_nhwc_fhwc` with constant weights
when the target has `avx512vnni` and K % 8 == 0 (8-channel blocks use the
256-bit `vpdpbusd`; C is padded to a multiple of 4); every other
convolution takes the generic path.

**Without VNNI** (AVX2, or AVX-512BW without VNNI) the same kernel runs on
`vpmaddwd` (`PMADDWD` flavor): signed 16-bit activations and weights, two
products per 32-bit lane added to the accumulator.  The activations travel as
int16 (no +128, no correction), the weights are packed as int8
`[K/KB, KH, KW, C/2, KB x 2]` and widened on load (`vpmovsxbw`, once per
weight vector for TT columns: half the cache footprint of int16 weights, the
same speed on the 48x48x16->32 conv), and each step computes TT output columns x KB
(= NV vectors of L lanes) output channels.  `vpmaddwd` itself is exact for
int8-ranged operands (|x w + x' w'| <= 2^15); its accumulation is a plain
vector add, which TVM emits with `nsw`, so the flavor is used only where no
partial sum can leave int32: |start| + C KH KW 2^14 < 2^31 for every channel
(`_accumulation_fits`), and every other convolution takes the generic path.

Each flavor can also be built **emulated** (`Flavor.emulate`): the intrinsic
replaced by the same arithmetic written as portable vector TIR (bytes or
halves extracted from 32-bit lanes with shifts), which any CPU runs.  The
tests use it to check the packing, blocking, correction and epilogue of a
flavor on a machine without its instruction; the native flavor is checked
there by compiling for a CPU that has it and finding the instruction.
"""

from __future__ import annotations

import contextlib
import functools
import os
from dataclasses import dataclass, replace

import numpy as np

from tvm_bridge.common import TranslationError, call_tir, tensor_constant
from tvm_bridge.cpu import env_int


@dataclass(frozen=True)
class Flavor:
    """One dot-product instruction the kernel is built on.

    `group` activations (of `xdtype`, in one 32-bit word) meet `group` weights (of
    `wdtype`) per 32-bit accumulator lane; `bias` is added to each activation on the
    way into `xdtype` (128 for VNNI's unsigned bytes) and corrected in the start value;
    `max_lanes` is the widest vector (16 lanes: 512 bits; 8: 256) and `blocks` the
    register tiles tried, (output columns TT, vectors per step NV), first fit first."""

    name: str
    group: int
    xdtype: str
    wdtype: str
    bias: int
    max_lanes: int
    blocks: tuple
    emulate: bool = False
    #: the AMX tile reduction (tvm_bridge/amx.py's `Tiles`) for the convolutions and batch
    #: matmuls it takes, or None
    tiled: object = None

    def intrinsic(self, lanes: int) -> str:
        if self.name == "vnni":
            return f"llvm.x86.avx512.vpdpbusd.{32 * lanes}"
        return "llvm.x86.avx2.pmadd.wd" if lanes == 8 else "llvm.x86.avx512.pmaddw.d.512"


#: AVX-512 VNNI: `vpdpbusd`, u8 x s8, four products per lane, the add inside the instruction
#: (register tiles: 12 accumulators where the shape allows, so that vpdpbusd's 4-5 cycle latency
#: is hidden behind independent chains; 4 x 1 left 24-channel 3x3 convolutions at 101 GMAC/s
#: against 149 for 4 x 3 on Zen 4, bench/conv_gmacs.py).  7-column tiles for rows of 7 and 14
#: (MobileNetV2-1.0's last stages): with 1 x 4 tiles every weight vector served one pixel and
#: the 7x7 pointwise layers ran at 105 GMAC/s, 1.9x XNNPACK's time; 7 x 2 / 7 x 3 run them
#: at 195-215 GMAC/s, x0.95-0.99 (one-op models of those layers, one thread, Zen 4)
VNNI = Flavor("vnni", 4, "uint8", "int8", 128, 16,
              ((6, 2), (4, 3), (4, 2), (7, 3), (7, 2), (3, 2), (2, 2), (4, 1), (3, 1), (2, 1), (1, 4), (1, 2), (1, 1)))
#: AVX2 `vpmaddwd` on 256-bit vectors: s16 x s16, two products per lane, then a vector add
#: (7 x 1 for rows of 7: the 7x7 pointwise layers of MobileNetV2-1.0 1.4x faster than 1 x 2,
#: built for haswell and run on Zen 4)
PMADDWD = Flavor("pmaddwd", 2, "int16", "int8", 0, 8,
                 ((3, 2), (4, 2), (5, 2), (2, 2), (7, 1), (1, 2), (4, 1), (3, 1), (5, 1), (2, 1), (1, 1)))
#: AVX-512BW `vpmaddwd` on 512-bit vectors
PMADDWD_512 = replace(PMADDWD, name="pmaddwd512", max_lanes=16)


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


def _parallel(loop):
    """The `For` `loop` with its iterations run on TVM's thread pool."""
    from tvm import tirx

    return tirx.For(loop.loop_var, loop.min, loop.extent, tirx.ForKind.PARALLEL, loop.body)


def _seq(stmts):
    from tvm import tirx

    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


def _dot(f: Flavor, lanes: int, acc, xw, ww):
    """`acc` (int32 x lanes) plus the flavor's dot products of the broadcast activation
    group `xw` and the weight vector `ww` (both already reinterpreted to the
    instruction's operand types for a native flavor, to int32 x lanes when emulated)."""
    from tvm.target.codegen import llvm_lookup_intrinsic_id
    from tvm.tirx.script.builder import ir as T

    if f.emulate:
        if f.name == "vnni":  # unsigned bytes of x times signed bytes of w, four per lane
            dots = [((xw >> (8 * j)) & 255) * ((ww << (24 - 8 * j)) >> 24) for j in range(4)]
            return acc + ((dots[0] + dots[1]) + (dots[2] + dots[3]))
        return acc + (((xw << 16) >> 16) * ((ww << 16) >> 16) + (xw >> 16) * (ww >> 16))
    intrinsic = llvm_lookup_intrinsic_id(f.intrinsic(lanes))
    if f.name == "vnni":
        return T.call_llvm_pure_intrin(intrinsic, acc, xw, ww, dtype=f"int32x{lanes}")
    return acc + T.call_llvm_pure_intrin(intrinsic, xw, ww, dtype=f"int32x{lanes}")


def _kernel(g: dict, xu_shape, fold: bool, kind: str, eparams, acc_buf, loop_vars, temps, value):
    """The kernel's PrimFunc, built node by node (no TVMScript text to print and parse):
    `g` holds the flavor F and the shapes (H, W, C, CP, K, KH, KWE, C4 groups, K16 channel
    blocks of KB = NV x L channels, TT, OH, OW, OWT, strides, dilations, output pad and
    dtype), `eparams` the epilogue's argument buffers, `acc_buf` the accumulators,
    `loop_vars` the (y, xo, t, ko, l) variables the epilogue `value` and its `temps`
    (local buffer, PrimExpr) are written in."""
    from tvm import tirx
    from tvm.tirx.script.builder import ir as T

    f: Flavor = g["F"]
    G = f.group
    H, W, C, CP, K = g["H"], g["W"], g["C"], g["CP"], g["K"]
    L, NV, TT, SH, SW, DH, DW = g["L"], g["NV"], g["TT"], g["SH"], g["SW"], g["DH"], g["DW"]
    KB = NV * L
    ODT = g["ODT"]
    # an input pad (the producer's tensor.pad, staged here instead of run as its own kernel):
    # X is the unpadded input, XU holds the padded one
    pt, pl, pb, pr, padv = g.get("IN_PAD") or (0, 0, 0, 0, 0)
    H0, W0 = H - pt - pb, W - pl - pr
    X = _buffer((1, H0, W0, C), "int8", "X")

    def at(v, offset: int):
        return v + offset if offset else v
    WP = _buffer(_packed_shape(g, G * KB), f.wdtype, "WP")
    # (the tile kernel loads its accumulator tiles from 16 copies of the start values)
    INIT = _buffer((16, K) if g.get("TILED") else (K,), "int32", "INIT")
    Y = _buffer((1, g["YH"], g["YW"], K), ODT, "Y")
    XU = _buffer(xu_shape, f.xdtype, "XU")
    zero = getattr(T, f.xdtype)(0)

    def widened(h, w, c):
        if f.bias:
            return T.Cast(f.xdtype, T.Cast("int32", X[0, h, w, c]) + f.bias)
        return T.Cast(f.xdtype, X[0, h, w, c])

    body = [tirx.AllocBuffer(XU)]
    if fold:
        body.append(_loops("serial", (H0, W0), ("h", "w"), lambda h, w: _loops(
            kind, (C,), ("c",), lambda c: tirx.BufferStore(XU, widened(h, w, c), [at(h, pt), at(w, pl) * C + c]))))
        body.append(_loops("serial", (H,), ("h",), lambda h: _loops(
            "unroll", (G,), ("j",), lambda j: tirx.BufferStore(XU, zero, [h, W * C + j]))))
    elif CP == C:
        body.append(_loops("serial", (H0, W0), ("h", "w"), lambda h, w: _loops(
            "vectorized", (C,), ("c",), lambda c: tirx.BufferStore(XU, widened(h, w, c), [at(h, pt), at(w, pl), c]))))
    else:  # the padding channels hold 0 (and meet zero weights)
        body.append(_loops("serial", (H0, W0), ("h", "w"), lambda h, w: _seq([
            _loops(kind, (C,), ("c",), lambda c: tirx.BufferStore(XU, widened(h, w, c), [at(h, pt), at(w, pl), c])),
            _loops("unroll", (CP - C,), ("c",), lambda c: tirx.BufferStore(XU, zero, [at(h, pt), at(w, pl), C + c]))])))
    if g.get("PARALLEL") and H0 > 1:  # the staging's rows shared among the threads too
        staging = -2 if fold else -1  # (fold: then the zero overhang of each row)
        body[staging] = _parallel(body[staging])
    if pt or pl or pb or pr:
        # the input pad: the pad value, widened as the activations are, in the border rows
        # and columns (and in the padding channels there: they meet zero weights)
        word = getattr(T, f.xdtype)(int(padv) + f.bias)

        def fill(h0: int, nh: int, w0: int, nw: int):
            if fold:
                return _loops("serial", (nh, nw * C), ("h", "i"), lambda h, i: tirx.BufferStore(
                    XU, word, [h0 + h, w0 * C + i]))
            return _loops("serial", (nh, nw, CP), ("h", "w", "c"), lambda h, w, c: tirx.BufferStore(
                XU, word, [h0 + h, w0 + w, c]))

        body += [fill(h0, nh, w0, nw) for h0, nh, w0, nw in (
            (0, pt, 0, W), (H - pb, pb, 0, W), (pt, H0, 0, pl), (pt, H0, W - pr, pr)) if nh and nw]
    border = _pad_border(Y, g, K)
    if border is not None:
        body.append(border)

    yv, xov, tv, kov, lv = loop_vars
    operand = "int8" if f.name == "vnni" else "int16"
    # block-diagonal weights (`GROUP` = (KG, CG, span)): block kov's first input word, that of
    # the group of its first output channel
    first = 0 if not g.get("GROUP") else tirx.floordiv(tirx.floordiv(kov * KB, g["GROUP"][0]) * g["GROUP"][1], G)

    def accumulate(rh, rw, rc):
        def step(t):
            if fold:
                xidx = [yv * SH + rh * DH, (xov * TT + t) * SW * C + rc * G]
            else:
                py, px = _pixel(g, yv, xov, t)
                xidx = [py * SH + rh * DH, px * SW + rw * DW, (rc + first) * G if g.get("GROUP") else rc * G]
            group = T.reinterpret(XU.vload(xidx, f"{f.xdtype}x{G}"), dtype="int32")
            stores = []
            for o, n_l in g["VECS"]:
                word = T.Broadcast(group, n_l)
                xw = word if f.emulate else T.reinterpret(word, dtype=f"{operand}x{G * n_l}")
                at_w = [kov, rh, rw, rc, o * G] if g.get("BLOCK_MAJOR") else [rh, rw, rc, kov, o * G]
                wv = WP.vload(at_w, f"{f.wdtype}x{G * n_l}")
                if f.wdtype != operand:  # int8 weights widened on load (vpmovsxbw)
                    wv = T.Cast(f"{operand}x{G * n_l}", wv)
                ww = T.reinterpret(wv, dtype=f"int32x{n_l}") if f.emulate else wv
                stores.append(tirx.BufferStore(acc_buf, _dot(f, n_l, acc_buf.vload([t, o], f"int32x{n_l}"), xw, ww),
                                               [t, T.ramp(o, 1, n_l)]))
            return _seq(stores)
        tile = _loops("unroll", (TT,), ("t",), step)
        return _seq(_prefetch_ahead(g, WP, kov, rh, rw, rc) + [tile]) if g.get("PREFETCH") else tile

    if g.get("TILED"):  # the reduction on AMX tiles (tvm_bridge/amx.py)
        body.append(f.tiled.loops(g, XU, WP, INIT, Y, acc_buf, loop_vars, temps, value))
    else:
        body.append(_tiles(g, KB, g["K16"], acc_buf, INIT, Y, loop_vars, temps, value,
                           _loops("serial", (g["KH"], g["KWE"], g["C4"]), ("rh", "rw", "rc"), accumulate)))
    # (staging and pad fill write XU's interior and border, the border loop Y's border, the
    # tiles read XU and write Y's interior)
    return _prim_func([X, WP, INIT, *eparams, Y], body,
                      launch_macs=g["OH"] * g["OW"] * K * g["KH"] * g["KW"] * C)


def _prefetch_ahead(g: dict, WP, kov, rh, rw, rc) -> list:
    """The statements that prefetch (`prefetcht0`) the packed weights `g["PREFETCH"]` bytes
    ahead of those the reduction step (kov, rh, rw, rc) reads, one per 64-byte line it reads
    (one for the 32 bytes of a 256-bit vpmaddwd step; the block-major weights are one stream
    in the order the steps read them; the address is clamped to the last weight).  In the
    call of a model whose weights do not stay in the caches, the hardware's prefetchers left
    the weights' first read to the pace of the computation: ResNet101_64's 3x3 layers of 256 channels at 4x4 (590 KB) took 44 us a
    call where they take 19 warm; 8 KB ahead, 23 us (a C loop of the same shape: 42 -> 21 us,
    2 and 4 KB ahead 31 and 25)."""
    from tvm import tirx

    f: Flavor = g["F"]
    size = np.dtype(f.wdtype).itemsize
    row = g["NV"] * g["L"] * f.group  # (the weights of one step, in elements)
    step = (((kov * g["KH"] + rh) * g["KWE"] + rw) * g["C4"] + rc) * row
    last = tirx.IntImm("int32", _weight_bytes(g) // size - 1)
    return [tirx.Evaluate(tirx.call_intrin("void", "tirx.prefetch", WP.access_ptr(
        "r", offset=tirx.Min(step + (g["PREFETCH"] + j) // size, last)), 0, 3, 1))
        for j in range(0, row * size, 64)]


def _pad_border(Y, g: dict, channels: int):
    """The loops writing the pad value into the border of output Y (g: its padded size YH x
    YW, the pad PT/PL/PB/PR, the unpadded OH x OW, ODT, PADV), or None without a pad."""
    from tvm import tirx
    from tvm.tirx.script.builder import ir as T

    PT, PL, OH, OW = g["PT"], g["PL"], g["OH"], g["OW"]
    if not (PT or PL or g["PB"] or g["PR"]):
        return None
    pad_value = getattr(T, g["ODT"])(g["PADV"])

    def border(h, w):
        inside = tirx.Or(tirx.Or(tirx.Or(tirx.LT(h, tirx.IntImm("int32", PT)),
                                          tirx.GE(h, tirx.IntImm("int32", PT + OH))),
                                 tirx.LT(w, tirx.IntImm("int32", PL))),
                         tirx.GE(w, tirx.IntImm("int32", PL + OW)))
        return tirx.IfThenElse(inside, _loops("vectorized", (channels,), ("c",), lambda c: tirx.BufferStore(
            Y, pad_value, [0, h, w, c])), None)

    return _loops("serial", (g["YH"], g["YW"]), ("h", "w"), border)


def epilogue_width(L: int, KB: int, TT: int) -> int:
    """The lanes `_tiles` computes an epilogue in at a time, for channel blocks of KB = NV x L
    lanes and tiles of TT output columns: one vector register, L, where a tile has several
    columns (the constants, loaded once for the tile, then stay in registers), else the
    whole block (one column: mlp_h's fully connected layers took 2.2 us a call in blocks,
    2.7 us a register at a time).  The pair-order copies of the requantization's constants
    (epilogue.pair_twins) are laid out per this many channels."""
    return L if KB % L == 0 and TT > 1 else KB


def _lanes_of(temps: list, value, lv, lane, offset: int, width: int):
    """The epilogue `temps` / `value` (written for lane `lv` of a channel block) for the
    `width` lanes from `offset`, in lane variable `lane`: every `lv` becomes lane + offset, and
    each temporary a buffer of its own of `width` lanes read at `lane`."""
    import tvm_ffi
    from tvm import tirx
    from tvm.ir.expr import TensorLoad

    renamed = {}
    out = []

    def on_load(node):
        old, new = renamed.get(node.source.name, (None, None))
        return tirx.BufferLoad(new, [lane]) if old is not None and node.source.same_as(old) else node

    def moved(e):
        e = tvm_ffi.structural_map(e, (TensorLoad, on_load))
        return tvm_ffi.structural_map(e, (tirx.Var, lambda v: lane + offset if v.same_as(lv) else v))

    for buf, e in temps:
        e = moved(e)
        new = tirx.decl_buffer((width,), buf.dtype, name=f"{buf.name}_{offset}", scope="local", layout=None)
        renamed[buf.name] = (buf, new)
        out.append((new, e))
    return out, moved(value)


def epilogue_blocks(g: dict, KB: int, acc_buf, Y, kov, lv, temps, value):
    """(allocations, statements_at(y, x)) of the epilogue of a channel block of KB channels:
    the accumulator buffer and the epilogue's temporaries to allocate, and a function giving
    the statements that write the epilogue `value` (with its `temps`, in lane variable `lv`
    of block `kov`) of the pixel whose place in Y is (y, x).  The block in the pieces of
    `epilogue_segments`, each with the requantization's 64-bit products in even and odd lanes
    (epilogue.split_wide_products, its constants' pair-order copies `g["TWINS"]`)."""
    from tvm import tirx

    from tvm_bridge.epilogue import lane_statements, split_wide_products

    blocks = []  # (channel offset in the block, lanes, lane variable, steps, final value)
    for b, (offset, width) in enumerate(epilogue_segments(g, KB)):
        lane = lv if b == 0 else tirx.Var(f"l{b}", "int32")
        b_temps, b_value = (temps, value) if KB == width else _lanes_of(temps, value, lv, lane, offset, width)
        steps, b_value = split_wide_products(b_temps, b_value, lane, width, g.get("TWINS"))
        blocks.append((offset, width, lane, steps, b_value))
    allocs = [tirx.AllocBuffer(acc_buf)] + [tirx.AllocBuffer(b) for *_, steps, _ in blocks for _, b, _ in steps]

    def statements_at(y, x) -> list:
        stmts = []
        for offset, width, lane, steps, b_value in blocks:
            store = tirx.BufferStore(Y, b_value, [0, y, x, kov * KB + offset + lane])
            stmts += lane_statements(steps, [store], lane, width)
        return stmts

    return allocs, statements_at


def _tiles(g: dict, KB: int, k_blocks: int, acc_buf, INIT, Y, loop_vars, temps, value, reduction):
    """The output loops (y, column tile xo, channel block ko): TT x KB accumulators started
    from INIT, the `reduction` loops accumulating into them, then the epilogue `value` (with
    its `temps`) of each written to Y inside its pad.  With `g["PARALLEL"]` the output rows
    are shared among TVM's threads (`parallel_rows`)."""
    from tvm import tirx
    from tvm.tirx.script.builder import ir as T

    yv, xov, tv, kov, lv = loop_vars
    TT, PT, PL = g["TT"], g["PT"], g["PL"]
    # The epilogue one vector register of channels at a time (L lanes of the KB of a channel
    # block): in KB-lane vectors (24 or 48 lanes of int64 for the requantization's products)
    # LLVM split the values into registers unevenly, spilled the per-channel constants and
    # rebuilt them from 8-byte pieces; then the requantization's 64-bit products in even and
    # odd lanes (epilogue.py), with its constants' pair-order copies per L lanes.
    # The accumulators and the epilogue's temporaries: one set per thread when the output
    # rows run in parallel (allocated inside the parallel loop), else one for the kernel
    allocs, epilogue_at = epilogue_blocks(g, KB, acc_buf, Y, kov, lv, temps, value)
    # (the yv loop: output rows, groups of ROWS, or groups of a sequence's tiles)
    n_rows = g.get("GROUPS") or g["OH"] // (g.get("ROWS") or 1)
    parallel = bool(g.get("PARALLEL")) and n_rows > 1

    def epilogue():
        y, x = _pixel(g, yv, xov, tv)
        stmts = _seq(epilogue_at(y + PT, x + PL))
        if not g.get("LIMIT"):
            return stmts
        # a tail: the pixels past the row (or the image) are computed and not written
        first = (yv * g["OWT"] + xov) * TT if g.get("SEQ") else xov * TT
        return tirx.IfThenElse(tirx.LT(first + tv, tirx.IntImm("int32", g["LIMIT"])), stmts, None)

    # (the start values a vector register at a time, as the reduction reads and writes them:
    # on the stack, tvm_bridge/lowering.py, one store of a whole 48-lane block made LLVM's
    # SROA split the accumulators into single lanes, rebuilt into vectors at every step)
    main = _seq([
        _loops("unroll", (TT,), ("t",), lambda t: _seq([tirx.BufferStore(
            acc_buf, INIT.vload([kov * KB + o], f"int32x{n}"), [t, T.ramp(o, 1, n)])
            for o, n in g.get("VECS") or [(0, KB)]])),
        reduction,
        tirx.For(tv, tirx.IntImm("int32", 0), tirx.IntImm("int32", TT), tirx.ForKind.UNROLLED, epilogue())])
    def loop(v, extent: int, body, kind=tirx.ForKind.SERIAL):
        return tirx.For(v, tirx.IntImm("int32", 0), tirx.IntImm("int32", extent), kind, body)

    owt = g.get("OWT", g["OW"] // TT)
    if g.get("BLOCKS_OUTER"):  # each channel block's weights read once, for all the pixel tiles
        inner = loop(yv, n_rows, loop(xov, owt, main))
        if bool(g.get("PARALLEL")) and k_blocks > 1:  # (the blocks shared among the threads)
            return loop(kov, k_blocks, _seq(allocs + [inner]), tirx.ForKind.PARALLEL)
        return _seq(allocs + [loop(kov, k_blocks, inner)])
    if parallel:
        return loop(yv, n_rows, _seq(allocs + [loop(xov, owt, loop(kov, k_blocks, main))]), tirx.ForKind.PARALLEL)
    return _seq(allocs + [loop(yv, n_rows, loop(xov, owt, loop(kov, k_blocks, main)))])


#: the attribute of a kernel whose top-level statements before its last parallel loop touch
#: disjoint bytes (input staging, its pad, the output's border: tvm_bridge/fused.py's
#: one-launch form runs them side by side, then the last loop after a barrier); its value is
#: the kernel's multiply-accumulates
LAUNCH_GROUPS = "qdialect.launch_groups"


def _prim_func(params, body, launch_macs: int | None = None):
    """A scheduled PrimFunc of `params` (buffers) and the statements `body` (`launch_macs`:
    the kernel's multiply-accumulates, for a kernel whose statements before the last parallel
    loop write disjoint bytes and read none of each other's, see LAUNCH_GROUPS)."""
    import tvm
    from tvm import tirx

    flags = {"tirx.noalias": True, "tirx.is_scheduled": True, "s_tir": True}
    if launch_macs is not None:
        flags[LAUNCH_GROUPS] = int(launch_macs)
    attrs = tvm.ir.make_node("ir.DictAttrs", **flags)
    # (one statement is the body itself: TVM refuses a SeqStmt of length 1, the body of a
    # parallel depthwise kernel without a border to pad)
    return tirx.PrimFunc(params, _seq(list(body)), ret_type=tvm.ir.TupleType([]), attrs=attrs)


def _has(target, feature: str) -> bool:
    try:
        from tvm.target.codegen import target_has_features

        return bool(target_has_features(feature, target))
    except Exception:  # noqa: BLE001 - not an llvm target
        return False


def target_has_vnni(target) -> bool:
    return _has(target, "avx512vnni")


def target_flavor(target) -> Flavor | None:
    """The dot-product flavor for `target`: VNNI where it has `avx512vnni`, 512-bit
    `vpmaddwd` with `avx512bw`, 256-bit with `avx2`; None (the generic path) otherwise."""
    if _has(target, "avx512vnni"):
        return VNNI
    if _has(target, "avx512bw"):
        return PMADDWD_512
    if _has(target, "avx2"):
        return PMADDWD
    return None


#: multiply-accumulates of one dot-product kernel (convolution, depthwise) from which its
#: output rows run on TVM's thread pool (`parallel_rows`); below it one thread does the
#: whole kernel.  Measured (bench/conv_gmacs.py shapes, 3x3 VNNI, 2 threads against 1, on
#: the shared 2-core Zen 4 under load ~10): 48x48x16->32 (10.6 M MACs) 1.78x faster,
#: 32x32x32->32 (9.4 M) 1.6x; 28x28x32->32 (7.2 M) and 24x24x32->32 (5.3 M) 0.9x, 1.3 M
#: and below 0.6-0.8x (waking the second thread, busy with other processes, costs more
#: than half the work).  Re-tune on an idle machine with QDIALECT_DOT_PARALLEL_MIN_MACS.
DOT_PARALLEL_MIN_MACS = env_int("QDIALECT_DOT_PARALLEL_MIN_MACS", 1 << 23)
#: the same threshold for a model built as one fused function (tvm_bridge/fused.py), whose
#: whole call is one parallel launch of TVM's pool: a kernel's parallel loops cost a barrier
#: there (~0.2 us), not a launch (~1.7 us), so small layers split too.  mobilenetv2_035_h at
#: two threads (one-op-launch form, Zen 4): 2^17 MACs 0.155-0.158 ms, 2^16 0.151-0.153, 2^15
#: 0.147, against 0.195 with each parallel loop its own launch from 2^20 (one thread 0.195-0.20)
FUSED_DOT_PARALLEL_MIN_MACS = env_int("QDIALECT_FUSED_PARALLEL_MIN_MACS", 1 << 16)

#: [threshold in force, whether a kernel went parallel below DOT_PARALLEL_MIN_MACS]
_PARALLEL = [None, False]


def parallel_rows(macs: int, rows: int) -> bool:
    """Whether a kernel of `macs` multiply-accumulates over `rows` output rows goes parallel
    (at DOT_PARALLEL_MIN_MACS, or the threshold of an enclosing `parallel_threshold`)."""
    threshold = DOT_PARALLEL_MIN_MACS if _PARALLEL[0] is None else _PARALLEL[0]
    if rows > 1 and macs >= threshold:
        if macs < DOT_PARALLEL_MIN_MACS:
            _PARALLEL[1] = True
        return True
    return False


@contextlib.contextmanager
def parallel_threshold(macs: int):
    """Kernels built inside go parallel from `macs` multiply-accumulates (the fused form's
    FUSED_DOT_PARALLEL_MIN_MACS); yields a list whose element says, after the block,
    whether any kernel went parallel that DOT_PARALLEL_MIN_MACS would have kept serial
    (a VM build of that translation would pay for it at one thread)."""
    saved = list(_PARALLEL)
    _PARALLEL[:] = [macs, False]
    _bare_kernel_of.cache_clear()
    below = [False]
    try:
        yield below
    finally:
        below[0] = _PARALLEL[1]
        _PARALLEL[:] = saved
        _bare_kernel_of.cache_clear()


#: the most an accumulator may start from and the most its products may add, so that no
#: partial sum of a flavor without a wrapping add (vpmaddwd) leaves int32
_HALF_RANGE = 1 << 30


class NotApplicable(Exception):
    """The convolution does not fit the flavor (nothing was emitted): take the generic path."""


def applicable(x_shape, weights: np.ndarray | None, x_dtype: str, w_dtype: str, out_dtype: str,
               flavor: Flavor = VNNI) -> bool:
    """int8 x int8 -> int32, one image, constant weights, K % 8 == 0 (16 output channels
    per 512-bit vector, or 8 per 256-bit one; C is padded to a multiple of the group
    with zero activations and zero weights).

    No range condition for VNNI: `vpdpbusd` adds without saturating, so the kernel
    computes sum((x + 128) * w) - 128 * sum(w) modulo 2^32, which is linalg's wrapping
    i32 accumulation exactly, overflow or not.  `vpmaddwd`'s accumulation is an `nsw`
    add: the products of one output may add up to at most 2^30 in magnitude
    (C KH KW 2^14 <= 2^30), and `emit_conv2d` checks the start value."""
    if weights is None or (x_dtype, w_dtype, out_dtype) != ("int8", "int8", "int32") or x_shape[0] != 1:
        return False
    k, kh, kw, c = weights.shape
    if flavor.name != "vnni" and c * kh * kw * (1 << 14) > _HALF_RANGE:
        return False
    return k % 8 == 0


#: set QDIALECT_VNNI_MIXED=0 to keep a block of 8-lane vectors as it is on a 512-bit flavor
MIXED_ENV = "QDIALECT_VNNI_MIXED"


def _vectors(f: Flavor, lanes: int, nv: int) -> tuple:
    """(channel offset, lanes) of each accumulator vector of a channel block of nv x lanes
    channels.  On a 512-bit flavor a block of 8-lane vectors (K not a multiple of 16) is
    16-lane vectors and one of 8 for the rest: 24 channels (ResNet's and MobileNetV2's
    24-channel layers) take a 512-bit and a 256-bit instruction per step instead of three
    256-bit ones, and their epilogue two vectors instead of three."""
    kb = nv * lanes
    if lanes != 8 or f.max_lanes != 16 or kb < 16 or os.environ.get(MIXED_ENV) == "0":
        return tuple((n * lanes, lanes) for n in range(nv))
    return tuple((o, 16) for o in range(0, kb - kb % 16, 16)) + (((kb - 8, 8),) if kb % 16 else ())


def epilogue_segments(g: dict, KB: int) -> list:
    """(channel offset, lanes) of the pieces `_tiles` computes an epilogue in, for a channel
    block of KB channels: the accumulator vectors (`VECS`) where the tile has several
    columns and they are given, else pieces of `epilogue_width`."""
    if g.get("VECS") and g["TT"] > 1 and sum(w for _, w in g["VECS"]) == KB:
        return list(g["VECS"])
    width = epilogue_width(g["L"], KB, g["TT"])
    return [(o, width) for o in range(0, KB, width)]


#: set QDIALECT_VNNI_ROWS=0 to keep every register tile within one output row
ROWS_ENV = "QDIALECT_VNNI_ROWS"


#: set QDIALECT_VNNI_BLOCK_MAJOR=0 for the weights packed tap-major, [KH, KW, C/4, K/KB, KB x 4]
BLOCK_MAJOR_ENV = "QDIALECT_VNNI_BLOCK_MAJOR"


#: set QDIALECT_VNNI_BLOCKS_OUTER=0 to keep the channel blocks innermost of the output loops
BLOCKS_OUTER_ENV = "QDIALECT_VNNI_BLOCKS_OUTER"


#: how far ahead (bytes) the kernels prefetch their weights (`_prefetch_ahead`); 0 for none
PREFETCH_ENV = "QDIALECT_VNNI_PREFETCH"
PREFETCH_BYTES = 8 << 10


def _prefetch_bytes(g: dict) -> int:
    """How far ahead a kernel of geometry `g` prefetches its weights: PREFETCH_ENV's bytes
    (default PREFETCH_BYTES, 0 for none), with block-major weights only (tap-major ones are
    no single stream), and only where its accumulators go on the stack (their vectors all of
    one width, tvm_bridge/lowering.py): elsewhere LLVM stores them at every step of a loop
    that prefetches."""
    widths = {n for _, n in g["VECS"]} | {n for _, n in epilogue_segments(g, g["NV"] * g["L"])}
    return env_int(PREFETCH_ENV, PREFETCH_BYTES) if g.get("BLOCK_MAJOR") and len(widths) == 1 else 0


#: the weights above which `_blocks_outer` may read them once (below, the L2 of the CPUs the
#: kernels target keeps them for the next pixel tile: with 512 KB, ResNet50V2's 590 KB 3x3
#: layers at 96x96 took the blocks outermost and ran 2-4 % slower), and the fewest channel
#: blocks it shares among the threads
OUTER_MIN_WEIGHTS = 1 << 20
OUTER_MIN_BLOCKS = 4


def _blocks_outer(g: dict) -> bool:
    """Whether a serial kernel of geometry `g` runs its channel blocks outermost (each block's
    weights read once, its pixel tiles inside re-reading the staged activations XU) rather
    than innermost (the activations' rows read once, all the weights once per pixel tile):
    the order that reads fewer bytes.  VGG16's 3x3 layers of 512 channels at 8x8 (2.4 MB of
    weights, 51 KB of activations, 8 rows of tiles) streamed their weights from L3 eight
    times, the first from memory at the pace of the computation: 706 us a call where the
    same kernel warm took 330 (a microbenchmark of the two orders: +170 us against +10 us
    over warm after the caches were flushed)."""
    if os.environ.get(BLOCKS_OUTER_ENV) == "0":
        return False
    f: Flavor = g["F"]
    weights, tiles = _weight_bytes(g), _tile_count(g)
    staged = int(np.prod(g["XU"])) * np.dtype(f.xdtype).itemsize
    return weights > OUTER_MIN_WEIGHTS and g["K16"] >= OUTER_MIN_BLOCKS and tiles > 1 and \
        weights + g["K16"] * staged < staged + tiles * weights


def _one_tile_streamed(g: dict) -> bool:
    """Whether a kernel of geometry `g` is one pixel tile over more than OUTER_MIN_WEIGHTS of
    weights (a fully connected layer: each weight byte read once from memory, for one
    `vpdpbusd`): its channel blocks, in parallel, let a second core stream weights too.
    VGG16_64's 4096 -> 4096 layer (16.8 MB) at two threads: 308-318 -> 174-231 us in the
    call; its rows (one) had left it serial."""
    return os.environ.get(BLOCKS_OUTER_ENV) != "0" and _tile_count(g) == 1 and \
        _weight_bytes(g) > OUTER_MIN_WEIGHTS and g["K16"] >= OUTER_MIN_BLOCKS


def _weight_bytes(g: dict) -> int:
    """The packed weights' bytes of a kernel of geometry `g`."""
    f: Flavor = g["F"]
    return g["K"] * g["KH"] * g["KWE"] * g["C4"] * f.group * np.dtype(f.wdtype).itemsize


def _tile_count(g: dict) -> int:
    """The pixel tiles of a kernel of geometry `g`: row groups (or a sequence's groups) x
    column tiles."""
    return (g.get("GROUPS") or g["OH"] // (g.get("ROWS") or 1)) * g["OWT"]


def _packed_shape(g: dict, row: int) -> tuple:
    """The packed weights' shape (rows of `row` values: one channel block's G-value groups):
    block-major, [K/KB, KH, KW, C/4, KB x 4], where `g["BLOCK_MAJOR"]`, so that one channel
    block's reduction reads its weights as one contiguous run (ResNet50 at 96x96 streams 23.5
    MB of weights a call, most from beyond L2: in the tap-major order a block's 128-byte rows
    lie 1-8 KB apart, a page's few lines for the prefetcher to follow); else tap-major,
    [KH, KW, C/4, K/KB, KB x 4] (the AMX kernel's: a row of it is a row of a B tile)."""
    if g.get("BLOCK_MAJOR"):
        return (g["K16"], g["KH"], g["KWE"], g["C4"], row)
    return (g["KH"], g["KWE"], g["C4"], g["K16"], row)


def _channel_blocks(k: int, lanes: int, mixed: bool, max_n: int = 6) -> list:
    """(vectors per step, NV in `lanes` units) of each channel block a wide tile may take that
    divides K: 3, 2 or 1 vectors, or with `mixed` (K an odd multiple of 8, `_vectors`) n - 1
    vectors of 16 lanes and one of 8 (NV = 2n - 1 of 8 lanes), n up to 6."""
    if mixed:
        return [(n, 2 * n - 1) for n in range(6, 0, -1) if k % (16 * n - 8) == 0 and n <= max_n]
    return [(n, n) for n in (3, 2, 1) if k % (n * lanes) == 0 and n <= max_n]


#: set QDIALECT_VNNI_TAILS=0 to keep every register tile dividing its row
TAILS_ENV = "QDIALECT_VNNI_TAILS"


def _tail_tiles(f: Flavor, pixels: int, k: int, lanes: int, accumulators: int, mixed: bool, max_n: int = 6):
    """(TT, NV, tiles): register tiles of TT pixels x NV vectors over `pixels` output pixels
    (a row, or a 1x1 stride-1 layer's whole image read as one sequence) that leave a tail,
    its pixels computed and discarded, where every tile dividing it holds fewer than 8
    accumulators (`accumulators`, the best of those: too few to hide vpdpbusd's latency):
    rows of 23 (a prime; Xception's 23x23 pointwise layers at 96x96 had tiles of 1 pixel x
    4 vectors, 127 GMAC/s).  The tile whose accumulators times the share of pixels kept is
    largest (of equals, the one computing fewest pixels), where that beats `accumulators`
    by a quarter.  Only on 512-bit flavors."""
    if f.max_lanes != 16 or accumulators >= 8 or os.environ.get(TAILS_ENV) == "0":
        return None
    best, score = None, (1.25 * accumulators, 0)
    for t in range(12, 1, -1):
        tiles = -(-pixels // t)
        for n, nv in _channel_blocks(k, lanes, mixed, max_n):
            kept = (round(t * n * pixels / (tiles * t), 9), -tiles * t)
            if t * n <= 24 and kept > score:
                best, score = (t, nv, tiles), kept
    return best


def _row_tiles(f: Flavor, oh: int, ow: int, k: int, lanes: int, accumulators: int, mixed: bool = False,
               max_n: int = 6):
    """(R, TT, NV): register tiles holding more accumulators than `accumulators` (fewer than
    12) for a narrow image or an awkward channel count, or None: R whole output rows (TT = R x
    OW pixels, R None for TT columns within a row) x NV vectors of `lanes`.  ResNet50's 3x3
    output of 512 channels at 96x96 had tiles of 3 pixels x 2 vectors (6 accumulators, their
    latency not hidden, each weight vector serving 3 pixels); rows of 5, which no tile of
    `Flavor.blocks` divides, 1 x 2.  With `mixed` (K an odd multiple of 8, `_vectors`) a block
    is n - 1 vectors of 16 lanes and one of 8 (NV = 2n - 1 of 8): Xception's 728 channels at
    6x6 had 1 pixel x (3 x 16 + 8), each weight vector serving one pixel.  Only on 512-bit
    flavors (32 vector registers: up to 24 accumulators, at most 12 pixels)."""
    if f.max_lanes != 16 or accumulators >= 12 or os.environ.get(ROWS_ENV) == "0":
        return None
    blocks = _channel_blocks(k, lanes, mixed, max_n)
    # (R, pixels): whole rows first, then tiles within a row
    pixels = [(r, r * ow) for r in range(1, oh + 1) if oh % r == 0 and r * ow <= 12] + \
        [(None, t) for t in range(ow - 1, 1, -1) if ow % t == 0 and t <= 12]
    best, most = None, accumulators
    for r, t in pixels:
        for n, nv in blocks:
            if most < t * n <= 24:
                best, most = (r, t, nv), t * n
    return best


def _pixel(g: dict, yv, xov, t):
    """(output row, output column) of pixel `t` of the tile (`yv`, `xov`): column xov TT + t of
    row yv, or with row tiles (ROWS = R) pixel t of rows R yv .. R yv + R - 1, or with a
    sequence (SEQ) pixel (yv OWT + xov) TT + t of the image.  With a tail (LIMIT) the last
    tiles' pixels run past the row or image, into XU's spare rows."""
    from tvm import tirx

    rows = g.get("ROWS")
    if g.get("SEQ"):  # pixel t of tile xov of group yv of the image's pixels in one sequence
        m = (yv * g["OWT"] + xov) * g["TT"] + t
        ow = tirx.IntImm("int32", g["OW"])
        return tirx.floordiv(m, ow), tirx.floormod(m, ow)
    if not rows:
        return yv, xov * g["TT"] + t
    ow = tirx.IntImm("int32", g["OW"])
    return yv * rows + tirx.floordiv(t, ow), tirx.floormod(t, ow)


def block_groups(weights: np.ndarray) -> tuple[int, int] | None:
    """(KG, CG): the weights [K, KH, KW, C] are block-diagonal, output channels k*KG ..
    (k+1)*KG - 1 reading only input channels k*CG .. (k+1)*CG - 1 (all other weights 0): a
    grouped convolution as the TFLite importer makes it dense (`_grouped_as_dense`); the
    finest such grouping of at least 2 groups, or None."""
    k, _, _, c = weights.shape
    if k < 2 or c < 2 or np.any(weights[0, ..., c - 1]):  # (output 0 reads input C-1: dense)
        return None
    for n in sorted((n for n in range(2, min(k, c) + 1) if k % n == 0 and c % n == 0), reverse=True):
        outside = weights.reshape(n, k // n, *weights.shape[1:3], n, c // n).copy()
        outside[np.arange(n), :, :, :, np.arange(n)] = 0  # (group j's outputs on its own inputs)
        if not outside.any():
            return k // n, c // n
    return None


def _group_span(kb: int, groups: tuple[int, int] | None, g_words: int) -> int | None:
    """The input channels one channel block of `kb` outputs reads under block-diagonal
    weights of `groups` = (KG, CG): CG (a block within a group) or kb / KG groups' CG each,
    where blocks and groups nest and the span and its offsets are whole `g_words`-channel
    words; else None (the block reads all C)."""
    if groups is None:
        return None
    kg, cg = groups
    if kb <= kg and kg % kb == 0 and cg % g_words == 0:
        return cg
    if kb > kg and kb % kg == 0 and (kb // kg * cg) % g_words == 0:
        return kb // kg * cg
    return None


def _geometry(f: Flavor, h: int, w: int, c: int, k: int, kh: int, kw: int, strides, dilations,
              diagonal: tuple[int, int] | None = None) -> dict:
    """The kernel's loop extents and blocking for an HxWxC input and K x KH x KW x C weights
    (block-diagonal ones of `diagonal` = (KG, CG), `block_groups`: each channel block reduces
    over its groups' input channels alone, `GROUP`, in blocks of at most KG channels where
    KG holds a vector)."""
    sh, sw = strides
    dh, dw = dilations
    G = f.group
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (w - dw * (kw - 1) - 1) // sw + 1
    lanes = 16 if k % 16 == 0 and f.max_lanes == 16 else 8
    cp = -(-c // G) * G
    fold = dw == 1 and kw > 1 and c % G != 0 and -(-kw * c // G) < kw * (cp // G)
    # block-diagonal weights: blocks of at most KG channels (one group's) where KG holds whole
    # vectors, so that a block reads CG input channels (all C in one dense block)
    if diagonal is not None and (fold or f.tiled is not None or _group_span(lanes, diagonal, G) is None
                                 or _group_span(lanes, diagonal, G) >= cp):
        diagonal = None
    max_n = 6 if diagonal is None else max(1, diagonal[0] // lanes)
    # a 512-bit flavor and K an odd multiple of 8: blocks of n vectors, n - 1 of 16 lanes and
    # one of 8 (`_vectors`), where the tile fits (24 channels in 6 columns: 6 x (16 + 8))
    mixed = lanes == 8 and f.max_lanes == 16 and os.environ.get(MIXED_ENV) != "0" and diagonal is None
    hit = next(((t, n) for t, n in f.blocks if n > 1 and ow % t == 0 and k % (16 * n - 8) == 0), None) \
        if mixed else None
    if hit is not None:
        tt, nv = hit[0], (16 * hit[1] - 8) // lanes
    else:
        tt, nv = next((t, n) for t, n in f.blocks if ow % t == 0 and k % (n * lanes) == 0 and n <= max_n)
    # Few input channels (C = 1, 2, 6, ... not a multiple of the group): the bytes of one
    # input row under a kernel row, x[h, w0 + kw, c] for all (kw, c), are contiguous in
    # NHWC (dilation 1), so the dot products run over (kw, c) in groups of G values
    # instead of over c padded to G per tap: a 10x4 kernel on one channel takes 10
    # vpdpbusd per output block instead of 40.  The activations are then one row per
    # image row (W * C values, G zeros after it for the last group's overhang).
    cf = -(-kw * c // G) * G
    kwe, c4 = (1, cf // G) if fold else (kw, cp // G)

    def accumulators(tt, nv):
        return tt * (len(_vectors(f, lanes, nv)) if mixed else nv)

    wide = None if fold else _row_tiles(f, oh, ow, k, lanes, accumulators(tt, nv), mixed=mixed, max_n=max_n)
    rows = None
    if wide is not None:
        rows, tt, nv = wide
    # tiles that leave a tail: over the whole image for a 1x1 stride-1 layer (its input pixels
    # are one sequence in NHWC), else along each row
    seq = kh == 1 and kw == 1 and sh == 1 and sw == 1
    tail = None if fold else _tail_tiles(f, oh * ow if seq else ow, k, lanes, accumulators(tt, nv), mixed, max_n)
    owt, groups, xu = (1 if rows else ow // tt), None, ((h, w * c + G) if fold else (h, w, cp))
    parallel = parallel_rows(oh * ow * k * kh * kw * c, oh // (rows or 1))
    if tail is not None:
        tt, nv, tiles = tail
        rows = None
        if seq:  # one tile a parallel iteration, else one group of all tiles
            parallel = parallel_rows(oh * ow * k * c, tiles)
            groups, owt = (tiles, 1) if parallel else (1, tiles)
            last = tiles * tt - 1  # (the last pixel a tile reads, of XU as H x W pixels)
        else:
            owt = tiles
            last = ((oh - 1) * sh + (kh - 1) * dh) * w + (tiles * tt - 1) * sw + (kw - 1) * dw
        xu = (h + max(0, -(-(last + 1 - h * w) // w)), w, cp)
    g = dict(F=f, BLOCK_MAJOR=os.environ.get(BLOCK_MAJOR_ENV) != "0", PARALLEL=parallel, ROWS=rows, SEQ=tail is not None and seq, GROUPS=groups,
             LIMIT=None if tail is None else (oh * ow if seq else ow), H=h, W=w, C=c, CP=cp, CF=cf, K=k, KH=kh, KW=kw, KWE=kwe, C4=c4, K16=k // (nv * lanes),
             L=lanes, NV=nv, VECS=_vectors(f, lanes, nv), OH=oh, OW=ow, TT=tt, OWT=owt, SH=sh, SW=sw, DH=dh, DW=dw, FOLD=fold,
             KIND="unroll" if c < 16 else "vectorized",
             XU=xu)
    span = _group_span(nv * lanes, diagonal, G)
    if span is not None and span < cp:  # (a block of one group's KG channels reads its CG)
        g.update(GROUP=(diagonal[0], diagonal[1], span), C4=span // G)
    g["BLOCKS_OUTER"] = _blocks_outer(g)
    g["PREFETCH"] = _prefetch_bytes(g)
    if not g["BLOCKS_OUTER"] and not parallel and _one_tile_streamed(g) and \
            parallel_rows(oh * ow * k * kh * kw * c, g["K16"]):
        g.update(BLOCKS_OUTER=True, PARALLEL=True)  # (its channel blocks shared among the threads)
    # a flavor with a tile reduction (AMX) blocks the same operands its own way
    return g if f.tiled is None else f.tiled.geometry(g)


def _build(g: dict, pad, odt: str, padv, epi, ebufs, twins: dict | None = None):
    """The kernel of geometry `g` writing `odt` inside `pad` ((top, left), (bottom, right))
    filled with `padv`, the epilogue `epi` (or none) reading its parameters from `ebufs`
    (and the pair-order copies `twins` of some of them: epilogue.pair_twins)."""
    from tvm import tirx

    (pt, pl), (pb, pr) = pad
    tt, lanes = g["TT"], g["NV"] * g["L"]
    loop_vars = yv, xov, tv, kov, lv = tuple(tirx.Var(n, "int32") for n in ("y", "xo", "t", "ko", "l"))
    acc_buf = _buffer((tt, lanes), "int32", "ACC", scope="local")
    acc = acc_buf[tv, lv]
    y, x = _pixel(g, yv, xov, tv) if not g.get("TILED") else g["F"].tiled.position(g, yv, xov, tv)
    temps, value = ([], acc) if epi is None else epi.expr(acc, y, x, kov * lanes + lv, ebufs, lv, lanes)
    if str(value.ty) != odt:
        raise TranslationError(f"{g['F'].name} epilogue computes {value.ty}, its result is {odt}")
    shapes = dict(g, YH=g["OH"] + pt + pb, YW=g["OW"] + pl + pr, PT=pt, PL=pl, PB=pb, PR=pr, ODT=odt,
                  PADV=float(padv) if "float" in odt else int(padv), TWINS=twins or {})
    eparams = list(ebufs) + list((twins or {}).values())
    return _kernel(shapes, g["XU"], g["FOLD"], g["KIND"], eparams, acc_buf, loop_vars, temps, value)


def _bare_kernel(f: Flavor, h: int, w: int, c: int, k: int, kh: int, kw: int, strides: tuple, dilations: tuple,
                 in_pad: tuple | None = None, groups: tuple | None = None):
    """`_bare_kernel_of` for the tiles and packing the environment asks for now."""
    return _bare_kernel_of(f, h, w, c, k, kh, kw, strides, dilations, in_pad, groups,
                           (os.environ.get(MIXED_ENV) != "0", os.environ.get(ROWS_ENV) != "0",
                            os.environ.get(TAILS_ENV) != "0", os.environ.get(BLOCK_MAJOR_ENV) != "0",
                            os.environ.get(BLOCKS_OUTER_ENV) != "0", os.environ.get(PREFETCH_ENV, "").strip()))


@functools.lru_cache(maxsize=256)
def _bare_kernel_of(f: Flavor, h: int, w: int, c: int, k: int, kh: int, kw: int, strides: tuple, dilations: tuple,
                    in_pad: tuple | None, groups: tuple | None, env: tuple):
    """The kernel without an epilogue (int32 sums): a function of the flavor, the shapes and
    the input pad alone (and of `env`, what `_geometry` reads from the environment,
    MIXED_ENV, ROWS_ENV, TAILS_ENV, BLOCK_MAJOR_ENV, BLOCKS_OUTER_ENV and PREFETCH_ENV: a key
    of the cache only)."""
    g = dict(_geometry(f, h, w, c, k, kh, kw, strides, dilations, groups), IN_PAD=in_pad)
    return _build(g, ((0, 0), (0, 0)), "int32", 0, None, [])


def clear_caches() -> None:
    """Forget the epilogue-free kernels built so far (benchmarks that time building them;
    kernels with an epilogue are cached per translation, in the Translator)."""
    _bare_kernel_of.cache_clear()


def emit_conv2d(bb, x, x_shape, weights: np.ndarray, strides, dilations, epi=None, init: int = 0,
                epi_key: tuple | None = None, kernels: dict | None = None, flavor: Flavor = VNNI,
                in_pad: tuple | None = None):
    """Emit the `flavor` convolution of relax tensor `x` (NHWC int8, padded to `x_shape`:
    already, or by the kernel itself when `in_pad` = ((top, left), (bottom, right), value)
    is the pad `x` still needs) with constant OHWI int8 `weights`, plus the constant `init` (the
    convolution's output init) and the fused epilogue `epi` (tvm_bridge/epilogue.py:
    additive constants folded into the accumulator's start, the elementwise chain
    applied to the accumulators, the result written inside its pad); returns the
    relax result (NHWC int32 sums without an epilogue).

    `epi_key` (`Epilogue.key`) identifies the epilogue's structure within one translation
    (its tokens are the translator's): a kernel whose shapes and epilogue key are already
    in `kernels` (the translator's own dict, one per BlockBuilder) is reused without being
    built again, and called through the GlobalVar it was added under.

    Raises NotApplicable, having emitted nothing, when a flavor without a wrapping add
    would start its sums from more than 2^30 in magnitude."""
    from tvm import relax

    f = flavor
    k, kh, kw, c = weights.shape
    _, h, w, _ = x_shape
    if in_pad is not None:
        (pt, pl), (pb, pr), value = in_pad
        # (the value as the int8 it pads with)
        in_pad = (int(pt), int(pl), int(pb), int(pr), (int(value) + 128) % 256 - 128) if pt or pl or pb or pr else None
    groups = block_groups(weights)
    g = dict(_geometry(f, h, w, c, k, kh, kw, tuple(strides), tuple(dilations), groups), IN_PAD=in_pad)
    G, lanes, kwe, c4 = f.group, g["NV"] * g["L"], g["KWE"], g["C4"]
    if g["FOLD"]:
        padded = np.zeros((k, kh, 1, g["CF"]), np.int8)
        padded[:, :, 0, :kw * c] = weights.reshape(k, kh, kw * c)  # value kw * C + c of the window
    elif g["CP"] == c and weights.dtype == np.int8:
        padded = weights  # (no padding channels: packed below into a copy of its own)
    else:
        padded = np.zeros((k, kh, kw, g["CP"]), np.int8)
        padded[..., :c] = weights
    if g.get("GROUP"):  # each block's own groups' input channels only
        kg, cg, span = g["GROUP"]
        padded = np.stack([padded[b * lanes:(b + 1) * lanes, ..., b * lanes // kg * cg:b * lanes // kg * cg + span]
                           for b in range(k // lanes)])
    blocked = padded.reshape(k // lanes, lanes, kh, kwe, c4, G)
    order = (0, 2, 3, 4, 1, 5) if g.get("BLOCK_MAJOR") else (2, 3, 4, 0, 1, 5)
    packed = np.ascontiguousarray(blocked.transpose(*order).reshape(_packed_shape(g, G * lanes)).astype(f.wdtype))
    # start value of the sums: -bias * sum(w) undoes the activations' bias (VNNI's +128;
    # nothing to undo without one); plus the output init and the folded additive epilogue
    # steps, all modulo 2^32
    if f.bias:
        start = -f.bias * weights.astype(np.int64).sum(axis=(1, 2, 3)) + int(init)
    else:
        start = np.full(k, int(init), np.int64)
    params = [] if epi is None else epi.params
    if epi is not None and epi.init is not None:
        start = start + epi.init.astype(np.int64)
    start = (start + (1 << 31)) % (1 << 32) - (1 << 31)
    if f.name != "vnni" and np.abs(start).max(initial=0) > _HALF_RANGE:
        raise NotApplicable(f"{f.name}: the sums would start from {int(np.abs(start).max())}, over 2^30")
    start = start.astype(np.int32)
    pad, padv = (((0, 0), (0, 0)), 0) if epi is None or epi.pad is None else (
        ((epi.pad[0][1], epi.pad[0][2]), (epi.pad[1][1], epi.pad[1][2])), epi.pad[2])
    odt = "int32" if epi is None else epi.out_dtype
    yh, yw = g["OH"] + pad[0][0] + pad[1][0], g["OW"] + pad[0][1] + pad[1][1]
    args = [x, tensor_constant(packed), tensor_constant(np.tile(start, (16, 1)) if g.get("TILED") else start)]
    args += [tensor_constant(p.value) if isinstance(p.value, np.ndarray) else p.value for p in params]
    from tvm_bridge.epilogue import pair_twins

    # (the requantization's constants in pair order, per L lanes as `_tiles` reads them)
    twin_values = pair_twins(params, lanes, epilogue_segments(g, lanes))
    args += [tensor_constant(v) for _, v in twin_values]
    if epi is None:
        prim_func = _bare_kernel(f, h, w, c, k, kh, kw, tuple(strides), tuple(dilations), in_pad, groups)
    else:
        struct_key = None if epi_key is None or kernels is None else (
            f, h, w, c, k, kh, kw, tuple(strides), tuple(dilations), in_pad, groups, epi_key)
        prim_func = kernels.get(struct_key) if struct_key is not None else None
        if prim_func is None:
            ebufs = [_buffer(p.shape, p.dtype, f"E{i}") for i, p in enumerate(params)]
            twins = {ebufs[i].name: _buffer(v.shape, "int64", f"P{i}") for i, v in twin_values}
            prim_func = _build(g, pad, odt, padv, epi, ebufs, twins)
            if struct_key is not None:
                kernels[struct_key] = prim_func
    # BlockBuilder.add_func finds an equal function by structural hash (about 0.2 ms a call):
    # once per kernel object and translation
    gvar = None if kernels is None else kernels.get(("gvar", id(prim_func)), (None, None))[1]
    if gvar is None:
        gvar = bb.add_func(prim_func, "amx_conv2d" if f.tiled is not None else f"{f.name}_conv2d")
        if kernels is not None:
            kernels[("gvar", id(prim_func))] = (prim_func, gvar)  # the kernel kept: its id stays its own
    return bb.emit(call_tir(gvar, args, relax.TensorType([1, yh, yw, k], odt)))
