"""int8 convolutions and batch matmuls on AMX-int8 tiles (`tdpbusd`), for CPUs that have
them (Sapphire Rapids and later).

`tdpbusd tmm_c, tmm_a, tmm_b` adds to each int32 of a 16 x 16 tile C the dot product of
a row of A (16 rows of up to 64 unsigned bytes) with a column of B (up to 16 rows of 64
signed bytes, each row four consecutive K values of 16 output channels): up to 16 x 16 x 64
multiply-accumulates an instruction, wrapping as `vpdpbusd` does.  The operands are the
VNNI kernel's (tvm_bridge/vnni.py): activations staged as `x + 128` in uint8, the start
value corrected by `-128 * sum(w)`, and weights packed `[KH, KW, C/4, K/KB, KB x 4]`: for
one tap and a channel block, the rows of B are that layout's C/4 rows, 4K bytes apart.

The kernel is the VNNI kernel's (staging, input pad, output border, fused epilogue) with
its reduction done on tiles.  Each step computes TT = 16 MA output pixels x KB = 16 NV
output channels (MA x NV <= 4 accumulator tiles, tmm0-3; A tiles tmm4-5; B tiles tmm6-7):
the accumulator tiles are loaded from 16 copies of the start values (a [16, K] constant, so
no store starts them), take one `tdpbusd` per (tap, chunk of CH input channels, A tile, B
tile), and are stored to a stack buffer for the epilogue, which runs per pixel as the VNNI
kernel's does.

- A 1x1 convolution of stride 1 reads its pixels as one sequence (`FLAT`): a tile's 16
  rows are 16 consecutive pixels of the image, across its rows, so a 7x7 or 3x3 layer
  wastes at most the last tile's tail.  Other convolutions take tiles along each output
  row (a 3x3 over 12 columns computes 16, the last 4 discarded).
- A step reads whole tiles of 16 pixels, past the last pixel of the image (or of a row's
  last tile); the staging buffer has the rows for them, and their sums are discarded.
- CH, the bytes of a row of A, is the largest multiple of 4 up to 64 that divides the
  padded channel count (C = 96: 48), so no channel is computed twice.
- Each thread loads the tile configuration (`ldtilecfg`) before its first tile and releases
  the tiles (`tilerelease`) after its last.  Linux gives a process the tile registers only
  after it asks (`arch_prctl(ARCH_REQ_XCOMP_PERM)`): `tvm_bridge.cpu.request_amx` asks,
  when a model is loaded (`configure_pool`).

**Checked without AMX hardware**, two ways (tests/tvm_bridge/test_amx.py):

- `Tiles(emulate=True)`: every tile instruction replaced by TIR loops over a tile file in
  memory, with the same operands (pointer offsets, strides, rows and columns of the
  configuration), so any CPU runs the kernel: packing, offsets, strides, tails and epilogue
  bit for bit against an int64 reference and LiteRT;
- the native build (for the host CPU plus `amx-tile`, `amx-int8`) with only the tile
  intrinsics renamed, in its LLVM IR, to a C emulation written from Intel's manual
  (tests/tvm_bridge/amx_emu.c: per-thread tiles and configuration, the manual's faults on a
  bad configuration or operand shapes): the native code's own pointers, strides, tile
  numbers and configuration bytes, at one and two threads, a whole model's outputs LiteRT's.

What neither can check is the silicon itself, nor the speed: hence opt-in.

Which convolutions take it (`Tiles.takes`): int8 with constant weights, K % 16 == 0, at
least 16 input channels and `MIN_MACS` multiply-accumulates (below, a tile's fixed costs
outweigh the VNNI kernel's register tiles).

**Batch matmuls** (attention's products of two activations, tvm_bridge/batch_matmul.py) take
tiles too (`Tiles.takes_matmul`: N % 16 == 0, K >= 16, `MIN_MACS` over all batches): the
kernel stages `a + 128` and packs the right-hand side per batch into the layout of B tiles,
as it does for VNNI; `matmul_loops` accumulates 16 MA rows x 16 NV columns from zero (tilezero)
and hands each row to the kernel's own corrections and epilogue.

Off by default until it has been measured on a CPU with AMX: `QDIALECT_AMX=1` selects it where
the target has `amx-int8`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from tvm_bridge.cpu import SettingError, cpu_flags, env_int, request_amx
from tvm_bridge.vnni import _buffer, _loops, _seq, epilogue_blocks

#: multiply-accumulates from which a convolution (or a batch matmul, all its batches) takes
#: tiles (QDIALECT_AMX_MIN_MACS): a guess until measured (bench/amx_ab.py)
MIN_MACS = env_int("QDIALECT_AMX_MIN_MACS", 1 << 20)
#: the environment variable that turns the tile kernels on where the target has amx-int8
ENABLE_ENV = "QDIALECT_AMX"

#: tile registers: accumulators 0-3, A 4-5, B 6-7
_C0, _A0, _B0 = 0, 4, 6


def enabled() -> bool:
    """Whether QDIALECT_AMX asks for the tile kernels: 1 / on / yes / true, or 0 / off / no /
    false / unset; SettingError (a ValueError) naming the variable for anything else."""
    text = os.environ.get(ENABLE_ENV, "").strip().lower()
    if text in ("1", "on", "yes", "true"):
        return True
    if text in ("", "0", "off", "no", "false"):
        return False
    raise SettingError(f"{ENABLE_ENV}={text!r}: 1 turns the AMX tile kernels on, 0 (or unset) off")


def can_run() -> bool:
    """False only on a machine with AMX whose Linux refuses this process the tile registers
    (its tile kernels would die of SIGILL); True there once granted, and on a machine without
    AMX (a build for another CPU)."""
    return "amx_tile" not in cpu_flags()[1] or request_amx()


@dataclass(frozen=True)
class Tiles:
    """The AMX tile reduction a VNNI flavor (vnni.Flavor.tiled) uses for the convolutions
    it takes; `emulate`: the tile instructions as loops (any CPU)."""

    emulate: bool = False

    def takes(self, h: int, w: int, c: int, k: int, kh: int, kw: int, strides, dilations) -> bool:
        """Whether a convolution of an h x w x c input and k x kh x kw x c weights runs on tiles."""
        oh = (h - dilations[0] * (kh - 1) - 1) // strides[0] + 1
        ow = (w - dilations[1] * (kw - 1) - 1) // strides[1] + 1
        return k % 16 == 0 and c >= 16 and oh > 0 and ow > 0 and oh * ow * k * kh * kw * c >= MIN_MACS

    def takes_matmul(self, m: int, n: int, k: int, batches: int) -> bool:
        """Whether a batch matmul of `batches` [m, k] x [k, n] products runs on tiles."""
        return n % 16 == 0 and k >= 16 and batches * m * n * k >= MIN_MACS

    @staticmethod
    def matmul_geometry(g: dict) -> dict:
        """batch_matmul.py's geometry `g` (M, N, K) made the tile kernel's: TT = 16 MA rows, KB
        = 16 NV columns, CH bytes of k a tile row, MT rows staged (M rounded up to TT)."""
        from tvm_bridge.vnni import NotApplicable

        if g["N"] % 16:
            raise NotApplicable(f"AMX tiles need N % 16 == 0 (N = {g['N']})")
        ma = 2 if g["M"] > 16 else 1
        nv = next(n for n in (4 // ma, 2, 1) if g["N"] % (16 * n) == 0)
        kp = -(-g["K"] // 4) * 4
        ch = next(b for b in range(min(64, kp), 0, -4) if kp % b == 0)
        tt = 16 * ma
        return dict(g, TILED=True, L=16, NV=nv, MA=ma, TT=tt, CH=ch, MT=-(-g["M"] // tt) * tt)

    def matmul_loops(self, g: dict, XU, WP, acc_buf, mo, ko, tv, store):
        """The row-tile (mo) and column-block (ko) loops of the batch matmul kernel on tiles:
        the accumulators from zero, the tile reduction over k, stored to `acc_buf`, then
        `store` (the statement of row `tv` of the tile, every lane) for each row < M; the
        tile configuration loaded before them and the tiles released after."""
        from tvm import tirx

        TT, KB, MA, NV, CH = g["TT"], 16 * g["NV"], g["MA"], g["NV"], g["CH"]
        N, KP = g["N"], int(XU.shape[1])
        ops = _Ops(self.emulate, {**{_C0 + i: (16, 64) for i in range(MA * NV)},
                                  **{_A0 + a: (16, CH) for a in range(MA)},
                                  **{_B0 + b: (CH // 4, 64) for b in range(min(NV, 2))}})
        c_tiles = [(_C0 + a * NV + n, a, n) for a in range(MA) for n in range(NV)]

        def reduce(rc):
            stmts = [ops.load(_A0 + a, XU, (mo * TT + 16 * a) * KP + rc * CH, KP) for a in range(MA)]
            for n in range(NV):
                b = _B0 + n % 2
                stmts.append(ops.load(b, WP, (rc * (CH // 4) * (N // KB) + ko) * (4 * KB) + n * 64, 4 * N))
                stmts += [ops.dpbusd(_C0 + a * NV + n, _A0 + a, b) for a in range(MA)]
            return _seq(stmts)

        rows = tirx.IfThenElse(tirx.LT(mo * TT + tv, tirx.IntImm("int32", g["M"])), store, None)
        main = _seq([
            *[ops.zero(t) for t, _, _ in c_tiles],
            _loops("serial", (KP // CH,), ("rc",), reduce),
            *[ops.store(t, acc_buf, a * 16 * KB + n * 16, KB) for t, a, n in c_tiles],
            tirx.For(tv, tirx.IntImm("int32", 0), tirx.IntImm("int32", TT), tirx.ForKind.SERIAL, rows)])
        for v, e in ((ko, N // KB), (mo, g["MT"] // TT)):
            main = tirx.For(v, tirx.IntImm("int32", 0), tirx.IntImm("int32", e), tirx.ForKind.SERIAL, main)
        return _seq(ops.allocs() + ops.enter() + [main] + ops.leave())

    def geometry(self, g: dict) -> dict:
        """The VNNI geometry `g` (vnni._geometry's, of lanes 16) made the tile kernel's: TT =
        16 MA pixels, KB = 16 NV channels, CH bytes of channels a tile row, the input channels
        padded to CP, a multiple of 4, never folded into the kernel row (FOLD: C = 18, 3x3)."""
        from tvm_bridge.vnni import NotApplicable

        if g["K"] % 16:  # (`takes` refuses it: a caller of emit_conv2d that did not ask)
            raise NotApplicable(f"AMX tiles need K % 16 == 0 (K = {g['K']})")
        flat = g["KH"] == 1 and g["KW"] == 1 and g["SH"] == 1 and g["SW"] == 1
        pixels = g["OH"] * g["OW"] if flat else g["OW"]
        ma = 2 if pixels > 16 else 1
        nv = next(n for n in (4 // ma, 2, 1) if g["K"] % (16 * n) == 0)
        tt, kb = 16 * ma, 16 * nv
        cp = g["CP"]
        ch = next(b for b in range(min(64, cp), 0, -4) if cp % b == 0)
        n_tiles = -(-pixels // tt)
        H, W = g["H"], g["W"]
        if flat:
            last = n_tiles * tt - 1  # the last pixel a tile reads
        else:
            last = ((g["OH"] - 1) * g["SH"] + (g["KH"] - 1) * g["DH"]) * W + (n_tiles * tt - 1) * g["SW"] + \
                (g["KW"] - 1) * g["DW"]
        extra = max(0, -(-(last + 1 - H * W) // W))
        from tvm_bridge.vnni import parallel_rows

        # (its own loops: none of the VNNI kernel's whole-row or tail tiles)
        parallel = parallel_rows(g["OH"] * g["OW"] * g["K"] * g["KH"] * g["KW"] * g["C"], g["OH"])
        return dict(g, TILED=True, BLOCK_MAJOR=False, ROWS=None, SEQ=False, GROUPS=None, LIMIT=None, PARALLEL=parallel, FLAT=flat, MA=ma, NV=nv, L=16, TT=tt, KB=kb, K16=g["K"] // kb, CH=ch,
                    NTILES=n_tiles, VECS=tuple((o, 16) for o in range(0, kb, 16)), XU=(H + extra, W, cp),
                    OWT=n_tiles, FOLD=False, KWE=g["KW"], C4=cp // 4)

    def position(self, g: dict, yv, xov, tv):
        """(output row, output column) of pixel `tv` of tile `xov` (in row `yv`, or in group
        `yv` of the flat sequence)."""
        from tvm import tirx

        if not g["FLAT"]:
            return yv, xov * g["TT"] + tv
        m = self._tile(g, yv, xov) * g["TT"] + tv
        ow = tirx.IntImm("int32", g["OW"])
        return tirx.floordiv(m, ow), tirx.floormod(m, ow)

    @staticmethod
    def _groups(g: dict) -> tuple:
        """(outer iterations, tiles each) of the kernel's loops: output rows x tiles of a row,
        or for a flat kernel groups of tiles (several when it runs in parallel)."""
        if not g["FLAT"]:
            return g["OH"], g["NTILES"]
        groups = min(g["NTILES"], 16) if g.get("PARALLEL") else 1
        return groups, -(-g["NTILES"] // groups)

    def _tile(self, g: dict, yv, xov):
        return yv * self._groups(g)[1] + xov if g["FLAT"] else xov

    def loops(self, g: dict, XU, WP, INIT, Y, acc_buf, loop_vars, temps, value):
        """The kernel's output loops on tiles (the part vnni._tiles is for the VNNI kernel):
        per tile and channel block, accumulators from INIT, the tile reduction, and the
        epilogue `value` (with its `temps`) of each valid pixel written to Y inside its pad."""
        from tvm import tirx

        yv, xov, tv, kov, lv = loop_vars
        TT, KB, MA, NV, CH, CP = g["TT"], g["KB"], g["MA"], g["NV"], g["CH"], g["CP"]
        K, K16, KH, KW = g["K"], g["K16"], g["KH"], g["KW"]
        ops = _Ops(self.emulate, {**{_C0 + i: (16, 64) for i in range(MA * NV)},
                                  **{_A0 + a: (16, CH) for a in range(MA)},
                                  **{_B0 + b: (CH // 4, 64) for b in range(min(NV, 2))}})
        allocs, epilogue_at = epilogue_blocks(g, KB, acc_buf, Y, kov, lv, temps, value)
        allocs += ops.allocs()

        y, x = self.position(g, yv, xov, tv)
        limit = g["OH"] * g["OW"] if g["FLAT"] else g["OW"]
        first = self._tile(g, yv, xov) * TT  # the tile's first pixel (of the image, or of its row)
        PT, PL = g["PT"], g["PL"]

        def epilogue():
            return tirx.IfThenElse(tirx.LT(first + tv, tirx.IntImm("int32", limit)), _seq(epilogue_at(y + PT, x + PL)),
                                   None)

        def a_offset(a, rh, rw, rc):
            if g["FLAT"]:
                pixel = first + 16 * a
            else:
                pixel = (yv * g["SH"] + rh * g["DH"]) * g["W"] + (first + 16 * a) * g["SW"] + rw * g["DW"]
            return pixel * CP + rc * CH

        a_stride = CP if g["FLAT"] else g["SW"] * CP
        rows_b = CH // 4

        def reduce(rh, rw, rc):
            stmts = [ops.load(_A0 + a, XU, a_offset(a, rh, rw, rc), a_stride) for a in range(MA)]
            for n in range(NV):
                b = _B0 + n % 2
                b_off = (((rh * KW + rw) * g["C4"] + rc * rows_b) * K16 + kov) * (4 * KB) + n * 64
                stmts.append(ops.load(b, WP, b_off, 4 * K))
                stmts += [ops.dpbusd(_C0 + a * NV + n, _A0 + a, b) for a in range(MA)]
            return _seq(stmts)

        c_tiles = [(_C0 + a * NV + n, a, n) for a in range(MA) for n in range(NV)]
        main = _seq([
            # the accumulators start from INIT's 16 rows (each the start values of all K)
            *[ops.load(t, INIT, kov * KB + n * 16, K) for t, _, n in c_tiles],
            _loops("serial", (KH, KW, CP // CH), ("rh", "rw", "rc"), reduce),
            *[ops.store(t, acc_buf, a * 16 * KB + n * 16, KB) for t, a, n in c_tiles],
            tirx.For(tv, tirx.IntImm("int32", 0), tirx.IntImm("int32", TT), tirx.ForKind.SERIAL, epilogue())])
        main = tirx.For(kov, tirx.IntImm("int32", 0), tirx.IntImm("int32", K16), tirx.ForKind.SERIAL, main)
        outer, each = self._groups(g)
        if g["FLAT"] and outer * each > g["NTILES"]:  # (the last group's tiles past the end)
            main = tirx.IfThenElse(tirx.LT(first, tirx.IntImm("int32", g["NTILES"] * TT)), main, None)
        main = tirx.For(xov, tirx.IntImm("int32", 0), tirx.IntImm("int32", each), tirx.ForKind.SERIAL, main)
        parallel = bool(g.get("PARALLEL")) and outer > 1
        if parallel:  # each thread its accumulators, tile file and configuration
            return tirx.For(yv, tirx.IntImm("int32", 0), tirx.IntImm("int32", outer), tirx.ForKind.PARALLEL,
                            _seq(allocs + ops.enter() + [main] + ops.leave()))
        main = tirx.For(yv, tirx.IntImm("int32", 0), tirx.IntImm("int32", outer), tirx.ForKind.SERIAL, main)
        return _seq(allocs + ops.enter() + [main] + ops.leave())


class _Ops:
    """The tile instructions a kernel uses, for the tile configuration `config` (tile ->
    (rows, bytes a row)): native (LLVM's AMX intrinsics, tiles named by number) or emulated
    (loops over a tile file in memory, the same operands).  Offsets and strides are in
    elements of the buffer named; the instruction takes them in bytes."""

    def __init__(self, emulate: bool, config: dict):
        self.emulate, self.config = emulate, config
        self.cfg = _buffer((64,), "uint8", "TILECFG", scope="local")
        # the emulated tile file: unsigned bytes (A), signed bytes (B), int32 (accumulators)
        self.file = {"uint8": _buffer((8, 16, 64), "uint8", "TMM_U8", scope="local"),
                     "int8": _buffer((8, 16, 64), "int8", "TMM_S8", scope="local"),
                     "int32": _buffer((8, 16, 16), "int32", "TMM_I32", scope="local")}

    def allocs(self) -> list:
        from tvm import tirx

        return [tirx.AllocBuffer(b) for b in self.file.values()] if self.emulate else [tirx.AllocBuffer(self.cfg)]

    @staticmethod
    def _intrin(name: str, *args):
        from tvm import tirx
        from tvm.tirx.script.builder import ir as T

        return tirx.Evaluate(T.call_llvm_intrin("void", name, *args))

    @staticmethod
    def _tmm(t: int):
        from tvm import tirx

        return tirx.const(t, "uint8")

    def enter(self) -> list:
        """The palette-1 configuration (64 bytes: palette, start row, 14 reserved, 16 x
        bytes a row as u16, 16 reserved, 16 x rows as u8; unused tiles 0) loaded."""
        from tvm import tirx

        if self.emulate:
            return []
        data = [0] * 64
        data[0] = 1
        for t, (rows, colsb) in self.config.items():
            data[16 + 2 * t], data[17 + 2 * t] = colsb & 255, colsb >> 8
            data[48 + t] = rows
        stores = [tirx.BufferStore(self.cfg, tirx.const(v, "uint8"), [i]) for i, v in enumerate(data)]
        return stores + [self._intrin("llvm.x86.ldtilecfg", self.cfg.access_ptr("r"))]

    def leave(self) -> list:
        return [] if self.emulate else [self._intrin("llvm.x86.tilerelease")]

    @staticmethod
    def _flat(buf):
        """`buf` seen as one dimension (the same data)."""
        from tvm import tirx

        n = 1
        for s in buf.shape:
            n *= int(s)
        return tirx.decl_buffer((n,), buf.dtype, name=f"{buf.name}_flat", data=buf.data, scope=buf.scope(),
                                layout=None)

    def load(self, t: int, buf, offset, stride: int):
        """Tile `t` <- its rows x bytes from `buf`'s element `offset`, rows `stride` elements apart."""
        return self._move(t, buf, offset, stride, "llvm.x86.tileloadd64")

    def store(self, t: int, buf, offset, stride: int):
        """`buf` from element `offset`, rows `stride` elements apart <- tile `t`."""
        return self._move(t, buf, offset, stride, "llvm.x86.tilestored64")

    def _move(self, t: int, buf, offset, stride: int, intrinsic: str):
        """A tile load or store (`intrinsic`) of tile `t` and `buf` from element `offset`, rows
        `stride` elements apart (the instruction takes the stride in bytes)."""
        from tvm import tirx

        size = {"uint8": 1, "int8": 1, "int32": 4}[str(buf.dtype)]
        loading = intrinsic.endswith("loadd64")
        if not self.emulate:
            pointer = buf.access_ptr("r" if loading else "w", offset=offset)
            return self._intrin(intrinsic, self._tmm(t), pointer, tirx.const(stride * size, "int64"))
        rows, colsb = self.config[t]
        tile, flat = self.file[str(buf.dtype)], self._flat(buf)

        def copy(r, c):
            at = offset + r * stride + c
            if loading:
                return tirx.BufferStore(tile, tirx.BufferLoad(flat, [at]), [t, r, c])
            return tirx.BufferStore(flat, tirx.BufferLoad(tile, [t, r, c]), [at])

        return _seq([tirx.DeclBuffer(flat, data=buf.data), _loops("serial", (rows, colsb // size), ("er", "ec"), copy)])

    def zero(self, t: int):
        """Tile `t` (int32 accumulators) <- 0."""
        from tvm import tirx

        if not self.emulate:
            return self._intrin("llvm.x86.tilezero", self._tmm(t))
        rows, colsb = self.config[t]
        return _loops("serial", (rows, colsb // 4), ("er", "ec"), lambda r, c: tirx.BufferStore(
            self.file["int32"], tirx.const(0, "int32"), [t, r, c]))

    def dpbusd(self, c: int, a: int, b: int):
        """Tile c (int32) += tile a (unsigned bytes, rows x K) . tile b (signed bytes, K/4 x
        (N x 4)): c[m, n] += sum over k of a[m, k] * b[k / 4, 4 n + k % 4]."""
        from tvm import tirx

        if not self.emulate:
            return self._intrin("llvm.x86.tdpbusd", self._tmm(c), self._tmm(a), self._tmm(b))
        rows, colsb = self.config[c]
        k_bytes = self.config[a][1]
        TU, TS, TI = self.file["uint8"], self.file["int8"], self.file["int32"]

        def body(m, n, k):
            product = tirx.Cast("int32", tirx.BufferLoad(TU, [a, m, k])) * tirx.Cast(
                "int32", tirx.BufferLoad(TS, [b, tirx.floordiv(k, 4), n * 4 + tirx.floormod(k, 4)]))
            return tirx.BufferStore(TI, tirx.BufferLoad(TI, [c, m, n]) + product, [c, m, n])

        return _loops("serial", (rows, colsb // 4, k_bytes), ("em", "en", "ek"), body)
