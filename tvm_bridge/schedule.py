"""CPU schedules for the kernels the TVM bridge emits.

TVM 0.27's CPU pipeline leaves every PrimFunc as written: serial loops in the
order TE produced them, every intermediate of a fused kernel materialised in
its own buffer.  For the kernels our lowering produces that is 5-10x slower
than it needs to be.  This pass applies one schedule to every fused PrimFunc,
built only from TVM's own TIR schedule primitives (`tvm.s_tir.Schedule`):

1. **Inline** every elementwise intermediate (zero-point corrections, bias,
   the rescale chain, copies) into its consumer, so a fused
   `conv -> rescale -> clamp` kernel is one accumulation block plus one
   epilogue block.
2. **Accumulation blocks** (conv, depthwise, pooling, reductions): the
   innermost spatial loop with extent > 1 (the channel axis in NHWC) becomes
   the innermost loop, split into SIMD-width pieces and vectorized; the
   spatial loop before it is register-blocked (unrolled) so each weight
   vector is reused across neighbouring output pixels; the reduction loops
   sit between the two tiles, and the init is hoisted out of the reduction.
   Weights must be laid out with channels last (the bridge emits `HWIO`
   convolution weights for this).
3. **The epilogue** (rescale, activation clamp, the next layer's padding) is
   computed at the channel tile of the accumulation, right after its
   reduction finishes, while the accumulators are still in cache.
4. **Elementwise kernels**: loops fused, split to the SIMD width, vectorized; a kernel
   that is only a byte table look-up becomes `tvm_bridge/lut.py`'s vector form (`vpermi2b`
   with AVX-512 VBMI, `vpshufb` with AVX-512BW or AVX2).

Schedules do not change what is computed (integer arithmetic is exact and TVM
proves every transformation legal), so bit-exactness is untouched; the zoo
tests on TVM check it anyway.  A kernel whose shape the rules do not fit is
left unscheduled rather than rejected: any schedule error falls back to the
unscheduled function.
"""

from __future__ import annotations

import math
import os

from tvm_bridge.cpu import env_int

#: multiply-accumulates (iterations of an accumulation block) from which its outer loop
#: is parallel.  Measured on mobilenetv2_tiny (kernels of 10^4-10^5.5 MACs): a threshold
#: of 2^17 made it slower at 1 thread (0.143 -> 0.220 ms) and at 2 (0.192 ms), so only
#: kernels far larger than the zoo's go parallel
PARALLEL_MIN_WORK = env_int("QDIALECT_PARALLEL_MIN_WORK", 1 << 22)

#: set QDIALECT_NO_SCHEDULE=1 to build without these schedules (A/B measurements)
DISABLE_ENV = "QDIALECT_NO_SCHEDULE"


def _vector_bits(target) -> int:
    from tvm.target.codegen import llvm_get_vector_width

    try:
        bits = int(llvm_get_vector_width(target))
    except Exception:  # noqa: BLE001 - a target without an llvm vector width
        bits = 0
    return bits if bits > 0 else 128


def _extent(sch, loop) -> int | None:
    from tvm import tirx

    ext = sch.get(loop).extent
    return int(ext.value) if isinstance(ext, tirx.IntImm) else None


def _is_reduction(sch, block) -> bool:
    return any(int(iv.iter_type) == 2 for iv in sch.get(block).iter_vars)


def _dtype_bits(sch, block) -> int:
    writes = sch.get(block).writes
    return writes[0].source.dtype.bits if writes else 32


def _largest_divisor(n: int, candidates) -> int | None:
    for c in candidates:
        if c <= n and n % c == 0:
            return c
    return None


def _loop_kinds(sch, block, loops) -> list[str] | None:
    """'S'/'R' per loop when every block iter is bound to exactly one loop, in order.

    The SBlockRealize's iter_values are not reachable from the SBlock in TVM 0.27's
    Python API, so the binding is recovered from the loops' extents and the iter
    vars' domains (the loop nests TE emits bind them one to one)."""
    from tvm import tirx

    stmt = sch.get(block)
    if len(stmt.iter_vars) != len(loops):
        return None
    kinds = []
    for iv, lp in zip(stmt.iter_vars, loops):
        ext = _extent(sch, lp)
        dom = iv.dom.extent
        if not isinstance(dom, tirx.IntImm) or ext is None or int(dom.value) != ext:
            return None
        kinds.append("R" if int(iv.iter_type) == 2 else "S")
    return kinds


def _expr_size(stmt) -> int:
    """Size of a block body in characters of its printed form (TVM 0.27's Python API
    has no TIR visitor; the text is a faithful proxy for the expression tree)."""
    return len(str(stmt))


def _load_pattern(buffer) -> str:
    """A regular expression for the start of a load of `buffer` in printed TIR (`name[`)."""
    import re

    return rf"(?<![\w.]){re.escape(buffer.name)}\["


def _loads_of(stmt, buffer) -> int:
    import re

    return len(re.findall(_load_pattern(buffer), str(stmt)))


#: inlining copies the producer's expression into every load of it; a rescale reads
#: its input three times, so chains of rescales would grow exponentially.  The budget
#: (characters of printed TIR) also bounds TVM's own compile time: at 6000,
#: elementwise_movement's concat/transpose kernel with four inlined i32 rescales took
#: 19.6 s to build (0.3 s at 3000, with the same latency on mobilenet and ds_cnn)
INLINE_BUDGET = 3000


def _squares(stmt, buffer) -> bool:
    """Whether `stmt` multiplies a load of `buffer` by another load of it (`d * d`, the
    variance of a layer norm)."""
    import re

    load = _load_pattern(buffer) + r"[^\]]*\]"
    return re.search(rf"{load}\)* \* (T\.Cast\(\"\w+\", )*{load}", str(stmt)) is not None


#: a producer with a rescale (a Select) is not inlined into a consumer that squares it at
#: more than this many characters: TVM's StmtSimplify takes about 0.5 s on each such
#: product of two copies (the transformers' layer-norm variance: 4 passes x 7 layers made
#: 20 of bert_s20's 26 s cold build), and the square costs one more loop over a row
SQUARE_INLINE_BUDGET = 400


#: a producer of at most this many elements is not inlined when more than one block reads
#: it (unless it is shorter than SMALL_SHARED_MIN_SIZE characters): at that size its buffer
#: costs next to nothing at run time, and each copy costs TVM's passes.  TFLite's softmax
#: reciprocal (a clz-normalised estimate read by each of three Newton steps and the final
#: scale, per row) took 0.25 s of MobileNetV2-0.35's cold build as one kernel (one row;
#: 0.08 s apart) and 0.68 s of attn_kws_h's (4 x 49 rows; 0.06 s apart), most of it in
#: StmtSimplify and RemoveNoOp.  A producer read several times by one consumer is still
#: inlined: a requantization's epilogue must see its input to pair its products
#: (epilogue.py; tests/tvm_bridge/test_heldout_op_pattern.py)
SMALL_SHARED_ELEMENTS = 1024
SMALL_SHARED_MIN_SIZE = 200


def _inline_is_cheap(sch, block) -> bool:
    stmt = sch.get(block)
    if not stmt.writes:
        return False
    buf = stmt.writes[0].source
    size = _expr_size(stmt.body)
    dims = [getattr(d, "value", None) for d in buf.shape]  # (None: a dimension not a constant)
    elements = math.prod(dims) if all(isinstance(d, int) for d in dims) else None
    concat = stmt.name_hint.startswith(CONCAT_BLOCK)
    consumers = sch.get_consumers(block)
    if len(consumers) > 1 and elements is not None and elements <= SMALL_SHARED_ELEMENTS \
            and size > SMALL_SHARED_MIN_SIZE:
        return False
    for consumer in consumers:
        c = sch.get(consumer)
        # A concatenation picks each lane's source with an if_then_else on the lane's index,
        # which TVM's vectorizer cannot vectorize: the whole loop becomes scalar.  Arithmetic
        # inlined into it, or it into arithmetic, would run scalar with it (elementwise_movement
        # in the litert profile: 3.1 us a call of scalar code, 0.8 with its blocks apart and
        # vectorized, bench/call_floor.py's raw call); moves (reshape, transpose, pad) still
        # follow it
        if (c.name_hint.startswith(CONCAT_BLOCK) and _has_arithmetic(stmt.body)) or (
                concat and _has_arithmetic(c.body)):
            return False
        if _loads_of(c.body, buf) * size + _expr_size(c.body) > INLINE_BUDGET:
            return False
        if size > SQUARE_INLINE_BUDGET and "Select" in str(stmt.body) and _squares(c.body, buf):
            return False
    return True


#: the name TVM's legalized concatenate gives its block
CONCAT_BLOCK = "T_concat"


def _has_arithmetic(stmt) -> bool:
    """Whether the block body `stmt` computes anything beyond loads, casts and index
    arithmetic: a multiply, add, subtract, min / max or division of which an operand depends
    on loaded data (a body that is not one store counts as computing)."""
    from tvm import tirx

    from tvm_bridge.epilogue import _find

    if not hasattr(stmt, "value") or not hasattr(stmt, "indices"):  # (not a BufferStore)
        return True
    ops = (tirx.Mul, tirx.Add, tirx.Sub, tirx.Min, tirx.Max, tirx.Div, tirx.FloorDiv, tirx.FloorMod)
    return _find(stmt.value, lambda x: isinstance(x, ops) and _reads_data(x)) is not None


def _reads_data(node) -> bool:
    """Whether the expression `node` depends on loaded data, not only on loop indices (a load
    outside any load's indices, or a call or select, counted as data)."""
    from tvm import tirx

    from tvm_bridge.epilogue import _find, _is_load

    def leaf_or_arith(x) -> bool:
        return isinstance(x, (tirx.IntImm, tirx.FloatImm, tirx.Var, tirx.Cast)) or (
            hasattr(x, "a") and hasattr(x, "b"))

    return _find(node, lambda x: _is_load(x) or not leaf_or_arith(x), calls=False) is not None


def _inline_elementwise(sch, root) -> None:
    """compute_inline every non-output spatial block that TVM lets us inline (repeat to a fixpoint)."""
    changed = True
    while changed:
        changed = False
        outputs = {sch.get(b).name_hint for b in sch.get_output_blocks(root)}
        for block in sch.get_child_blocks(root):
            if sch.get(block).name_hint in outputs or _is_reduction(sch, block):
                continue
            if not _inline_is_cheap(sch, block):
                continue
            try:
                sch.compute_inline(block)
                changed = True
                break
            except Exception:  # noqa: BLE001 - not inlinable (e.g. read with a different layout)
                continue


def _vectorize_spatial(sch, block, lanes_bits: int) -> None:
    """Vectorize a spatial block's innermost loops.

    Only the shortest suffix of loops whose extents multiply to at least one
    vector is fused (fusing everything would turn each lane's index into a
    div/mod chain and the loads into gathers); it is split to a divisor of the
    SIMD width and the inner piece vectorized."""
    loops = sch.get_loops(block)
    if not loops:
        return
    exts = [_extent(sch, lp) for lp in loops]
    if any(e is None for e in exts):
        return
    lanes = max(lanes_bits // max(_dtype_bits(sch, block), 32), 4)
    k, total = len(loops), 1
    while k > 0 and total < lanes:
        k -= 1
        total *= exts[k]
    suffix = loops[k:]
    fused = sch.fuse(*suffix) if len(suffix) > 1 else suffix[0]
    v = _largest_divisor(total, [lanes, lanes // 2, lanes // 4])
    if v is None or v < 2:
        return
    if v == total:
        sch.vectorize(fused)
        return
    _, inner = sch.split(fused, factors=[None, v])
    sch.vectorize(inner)


class _Refused(Exception):
    pass


def _reads_elementwise(sch, consumer, buffer, shape) -> bool:
    """Whether `consumer` writes a tensor of `shape` and reads `buffer` only at its own
    output index (iter var k at dimension k), so computing it at the producer's tile
    covers it exactly."""
    from tvm import tirx

    stmt = sch.get(consumer)
    if [int(d) for d in stmt.writes[0].source.shape] != shape:
        return False
    ivs = [iv.var for iv in stmt.iter_vars]
    if len(ivs) != len(shape):
        return False
    for region in stmt.reads:
        if not region.source.same_as(buffer):
            continue
        for k, rng in enumerate(region.region):
            if not (isinstance(rng.extent, tirx.IntImm) and int(rng.extent) == 1 and rng.min.same_as(ivs[k])):
                return False
    return True


def _schedule_accumulation(sch, block, root, lanes_bits: int, local: bool) -> set[str] | None:
    """Tile one accumulation block (see the module doc); with `local`, accumulate in a
    tile-sized local buffer (registers) and let the epilogue read it from there."""
    loops = sch.get_loops(block)
    kinds = _loop_kinds(sch, block, loops)
    if kinds is None or "R" not in kinds:
        return None
    n_s = kinds.index("R")
    if any(k != "R" for k in kinds[n_s:]) or n_s == 0:
        return None
    if local:
        writeback = sch.cache_write(block, 0, "local")
        try:
            sch.compute_inline(writeback)
        except Exception:  # noqa: BLE001 - the accumulator is the function's output: keep the copy-out
            pass
    s_loops, r_loops = loops[:n_s], loops[n_s:]
    work = 1
    for lp in loops:
        work *= _extent(sch, lp) or 1
    exts = [_extent(sch, lp) for lp in s_loops]
    # the channel loop: innermost spatial loop with extent > 1
    ci = max((i for i, e in enumerate(exts) if e > 1), default=None)
    if ci is None:
        return None
    lanes = max(lanes_bits // _dtype_bits(sch, block), 4)
    v = _largest_divisor(exts[ci], [lanes, lanes // 2, lanes // 4])
    if v is None or v < 2:
        return None
    c_out, c_in = sch.split(s_loops[ci], factors=[None, v])
    # register blocking on the spatial loop before the channel loop (output columns)
    wi = max((i for i in range(ci) if exts[i] > 1), default=None)
    t = None
    if wi is not None:
        t = _largest_divisor(exts[wi], [4, 5, 3, 2])
    rest = [lp for i, lp in enumerate(s_loops) if i not in (ci, wi)]
    if t is not None and t > 1:
        w_out, w_in = sch.split(s_loops[wi], factors=[None, t])
        outer = rest + [w_out, c_out]
        sch.reorder(*outer, *r_loops, w_in, c_in)
        sch.unroll(w_in)
    else:
        w_in = None
        outer = [lp for i, lp in enumerate(s_loops) if i != ci] + [c_out]
        sch.reorder(*outer, *r_loops, c_in)
    sch.vectorize(c_in)
    # threads: the outermost loop with more than one iteration runs in parallel when the
    # kernel is big enough to pay for waking the pool (TVM runs it inline with one thread)
    if work >= PARALLEL_MIN_WORK:
        for lp in outer[:-1]:
            ext = _extent(sch, lp)
            if ext is not None and ext > 1:
                sch.parallel(lp)
                break
    # epilogue consumers at the channel tile
    anchor = outer[-1]
    produced = [int(d) for d in sch.get(block).writes[0].source.shape]
    for consumer in sch.get_consumers(block):
        try:
            # only a consumer with the same iteration domain: reverse_compute_at of a
            # consumer that writes more than the tile it reads (a pad) would leave the
            # elements outside the producer's range unwritten
            if not _reads_elementwise(sch, consumer, sch.get(block).writes[0].source, produced):
                raise _Refused("not an elementwise consumer")
            sch.reverse_compute_at(consumer, anchor, preserve_unit_loops=True)
            inner = sch.get_loops(consumer)[len(sch.get_loops(block)) - len(r_loops) - (2 if w_in is not None else 1):]
            if inner:
                cl = inner[-1]
                if _extent(sch, cl) is not None and _extent(sch, cl) > 1:
                    sch.vectorize(cl)
        except Exception as e:  # noqa: BLE001 - e.g. a reshape between
            if local:  # a full-size local accumulator could overflow the stack
                raise _Refused() from e
            _vectorize_spatial(sch, consumer, lanes_bits)
    scheduled = {sch.get(block).name_hint} | {sch.get(c).name_hint for c in sch.get_consumers(block)}
    init = sch.decompose_reduction(block, r_loops[0])
    init_loops = sch.get_loops(init)
    if init_loops and _extent(sch, init_loops[-1]) == v:
        sch.vectorize(init_loops[-1])
    return scheduled | {sch.get(init).name_hint, sch.get(block).name_hint}


def schedule_func(func, target, report: list | None = None):
    """A schedule of one PrimFunc (`sch.mod["main"]` is the scheduled function).

    `report`, when given, receives one (block name, outcome) per accumulation block:
    "tiled, local accumulator", "tiled" or "left as written"."""
    from tvm import s_tir

    lanes_bits = _vector_bits(target)
    sch = s_tir.Schedule(func)
    root = sch.get_sblock("root")
    _inline_elementwise(sch, root)
    names = [sch.get(b).name_hint for b in sch.get_child_blocks(root)]
    done: set[str] = set()
    for name in names:
        if name in done:
            continue
        block = sch.get_sblock(name)
        if not _is_reduction(sch, block):
            continue
        for local in (True, False):
            state = sch.copy()
            try:
                scheduled = _schedule_accumulation(sch, block, root, lanes_bits, local)
                done.update(scheduled or ())
                if report is not None:
                    report.append((name, "left as written" if not scheduled else
                                   "tiled, local accumulator" if local else "tiled"))
                break
            except Exception:  # noqa: BLE001 - try without the local accumulator, then leave it
                sch = state
                root = sch.get_sblock("root")
                block = sch.get_sblock(name)
        else:
            if report is not None:
                report.append((name, "left as written"))
    for block in sch.get_child_blocks(root):
        name = sch.get(block).name_hint
        if name in done or _is_reduction(sch, block):
            continue
        if len(sch.get_loops(block)) == 0:
            continue
        try:
            _vectorize_spatial(sch, block, lanes_bits)
        except Exception:  # noqa: BLE001
            pass
    return sch


def schedule_pass(target):
    """Module pass: schedule every PrimFunc not yet marked `tirx.is_scheduled`."""
    import tvm
    from tvm import tirx

    from tvm_bridge.concat import concat_kernel
    from tvm_bridge.lut import lookup_family, lookup_kernel

    family = lookup_family(target)

    @tvm.transform.module_pass(opt_level=0, name="QdialectScheduleCPU")
    def _schedule(mod, _ctx):
        if os.environ.get(DISABLE_ENV):
            return mod
        updated = {}
        for gv, f in mod.functions_items():
            if not isinstance(f, tirx.PrimFunc) or ("tirx.is_scheduled" in f.attrs and f.attrs["tirx.is_scheduled"]):
                continue
            try:  # a concatenation alone: contiguous vector copies (tvm_bridge/concat.py)
                copies = concat_kernel(f)
            except Exception:  # noqa: BLE001 - an unforeseen form: scheduled as any other
                copies = None
            if copies is not None:
                updated[gv] = copies
                continue
            if family is not None:  # a byte table look-up: 32 or 64 bytes per step (tvm_bridge/lut.py)
                try:
                    lut = lookup_kernel(f, family)
                except Exception:  # noqa: BLE001 - an unforeseen form: scheduled as any other
                    lut = None
                if lut is not None:
                    updated[gv] = lut
                    continue
            try:
                sch = schedule_func(f, target)
            except Exception:  # noqa: BLE001 - an unforeseen shape: keep the function as written
                continue
            if sch is not None:
                # (the tflite profile's requantization cores: paired by `pair_late_pass`)
                updated[gv] = sch.mod["main"].with_attr("tirx.is_scheduled", True).with_attr(PAIR_LATER, True)
        for gv, f in updated.items():
            mod[gv] = f
        return mod

    return _schedule


#: marks a kernel the schedule pass scheduled, whose requantization cores `pair_late_pass`
#: then rewrites
PAIR_LATER = "qdialect.pair_later"


def pair_late_pass(target):
    """Module pass, right after Relax's RewriteDataflowReshape: the tflite profile's
    requantization cores of every kernel the schedule pass scheduled (`PAIR_LATER`)
    computed in even and odd lanes (`epilogue.pair_products_in`).

    After that pass, not in the schedule pass: the paired form is lowered TIR (no root
    block), and RewriteDataflowReshape asks a kernel of one tensor argument whether it is a
    reshape by reading its root block (held-out BERT encoders' requantize kernels and
    int16 attention failed the build so).  Until session 20 the schedule pass paired
    kernels itself and kept the block form of every elementwise kernel, unpaired:
    EfficientNet-B0's squeeze-and-excitation gates (a MUL requantized in 64 bits) took
    110 us in all at 128x128, 91 us paired."""
    import tvm
    from tvm import tirx

    from tvm_bridge import epilogue

    @tvm.transform.module_pass(opt_level=0, name="QdialectPairLate")
    def _pair(mod, _ctx):
        updated = {}
        for gv, f in mod.functions_items():
            if not isinstance(f, tirx.PrimFunc) or PAIR_LATER not in f.attrs:
                continue
            try:
                paired = epilogue.pair_products_in(f, target)
            except Exception:  # noqa: BLE001 - a form the rewrite does not know: as scheduled
                paired = None
            updated[gv] = (f if paired is None else paired).without_attr(PAIR_LATER)
        for gv, f in updated.items():
            mod[gv] = f
        return mod

    return _pair


def _signed_int_bits(dtype: str) -> tuple[int, str] | None:
    """(bits, lanes suffix) of a signed integer dtype ("int32", "int64x8"), else None."""
    if not dtype.startswith("int"):
        return None
    bits, _, lanes = dtype[3:].partition("x")
    return (int(bits), lanes) if bits.isdigit() and (not lanes or lanes.isdigit()) else None


def _folded(dtype: str, x):
    """Cast(dtype, x) read straight from the narrower value when `x` is a widening signed
    cast (see `fold_cast_chains`), or None when it is not."""
    from tvm import tirx

    if not isinstance(x, tirx.Cast):
        return None
    inner = x.value
    t, u, s = _signed_int_bits(dtype), _signed_int_bits(str(x.ty.dtype)), _signed_int_bits(str(inner.ty.dtype))
    if t is None or u is None or s is None or not t[1] == u[1] == s[1] or u[0] < s[0]:
        return None
    return inner if t[0] == s[0] else tirx.Cast(dtype, inner)


def folded_cast(dtype: str, x):
    """`tirx.Cast(dtype, x)`, folded as `fold_cast_chains` folds (the translation builds its
    casts with it: the i64 arithmetic truncated to i32 of common.py's `wrapping` and the
    extensions of a fused chain nested casts ten deep, and `te.create_prim_func`'s analysis
    took held-out BERT 4.6 s of a 6.0 s translation).

    Also the extension of a truncation that cannot wrap: Cast(i64, Cast(i32, e)) with e of
    i64 is e itself where `interval` proves e within int32.  A chain of requantizations in
    one elementwise kernel (NASNet's 11-channel layers, ConvNeXt's residual adds, off the
    convolution kernels' epilogues) nests those pairs once per step, and `te.create_prim_func`'s
    canonical simplifier took 13 s on each such kernel: 258 s of NASNetMobile's translation, 8 s
    after.  (A requantization core's own truncation stays: see below.)"""
    from tvm import tirx

    folded = _folded(dtype, x)
    if folded is not None:
        return folded
    # (not a requantization core's truncation, i32((P + R) >> S): epilogue.split_wide_products
    # finds the cores by it, to compute them in even and odd lanes)
    if isinstance(x, tirx.Cast) and _expr_dtype(x.value) == dtype and not isinstance(x.value, tirx.RShift):
        inner = x.value
        t, n = _signed_int_bits(dtype), _signed_int_bits(str(x.ty.dtype))
        if t is not None and n is not None and not t[1] and not n[1] and n[0] < t[0]:
            bounds = interval(inner)
            if bounds is not None and -(1 << (n[0] - 1)) <= bounds[0] and bounds[1] < 1 << (n[0] - 1):
                return inner
    return tirx.Cast(dtype, x)


def _expr_dtype(e) -> str | None:
    ty = getattr(e, "ty", None)
    dtype = getattr(ty, "dtype", None)
    return str(dtype) if dtype is not None else None


#: interval's memo: the expression's handle -> (the expression, kept alive so that no other
#: object takes its address, its bounds)
_INTERVALS: dict = {}


def interval(e) -> tuple[int, int] | None:
    """Bounds [lo, hi] of the scalar integer expression `e`'s value, sound for the translation's
    arithmetic: a cast to an integer type is its operand's bounds where they fit the type,
    else the type's whole range (a truncation may wrap); + - * min max select and shifts by a
    constant combine their operands' bounds, the type's whole range where the result would
    leave it; anything else (a load, a call, a division) is its type's whole range.  None for
    a non-integer or vector expression."""
    key = e.__chandle__()
    hit = _INTERVALS.get(key)
    if hit is not None:
        return hit[1]
    if len(_INTERVALS) > 200_000:
        _INTERVALS.clear()
    bounds = _interval_of(e)
    _INTERVALS[key] = (e, bounds)
    return bounds


def _interval_of(e):
    from tvm import tirx

    bits = _signed_int_bits(_expr_dtype(e) or "")
    if bits is None or bits[1]:
        return None
    lo_t, hi_t = -(1 << (bits[0] - 1)), (1 << (bits[0] - 1)) - 1

    def within(lo, hi):
        return (lo, hi) if lo_t <= lo and hi <= hi_t else (lo_t, hi_t)

    if isinstance(e, tirx.IntImm):
        return int(e.value), int(e.value)
    if isinstance(e, tirx.Cast):
        inner = interval(e.value)
        return (lo_t, hi_t) if inner is None else within(*inner)
    if isinstance(e, (tirx.Add, tirx.Sub, tirx.Mul, tirx.Min, tirx.Max)):
        a, b = interval(e.a), interval(e.b)
        if a is None or b is None:
            return lo_t, hi_t
        if isinstance(e, tirx.Add):
            return within(a[0] + b[0], a[1] + b[1])
        if isinstance(e, tirx.Sub):
            return within(a[0] - b[1], a[1] - b[0])
        if isinstance(e, tirx.Mul):
            products = [x * y for x in a for y in b]
            return within(min(products), max(products))
        if isinstance(e, tirx.Min):
            return min(a[0], b[0]), min(a[1], b[1])
        return max(a[0], b[0]), max(a[1], b[1])
    if isinstance(e, tirx.Select):
        a, b = interval(e.true_value), interval(e.false_value)
        return (lo_t, hi_t) if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1]))
    shift_right, shift_left = getattr(tirx, "RShift", None), getattr(tirx, "LShift", None)
    if shift_right is not None and isinstance(e, (shift_right, shift_left)) and isinstance(e.b, tirx.IntImm):
        a, k = interval(e.a), int(e.b.value)
        if a is None or not 0 <= k < bits[0]:
            return lo_t, hi_t
        if isinstance(e, shift_right):
            return a[0] >> k, a[1] >> k
        return within(a[0] << k, a[1] << k)
    return lo_t, hi_t


def fold_cast_chains(func):
    """`func` with each cast of a widening signed cast read straight from the narrower
    value: Cast(T, Cast(U, x)), x of iS and S <= U, is Cast(T, x) (x itself when T is S),
    for every signed T (a sign extension keeps every bit of x, so a further extension
    extends x and a truncation takes x's own low bits).  Exact, and for TVM's arithmetic
    simplifier the difference between milliseconds and seconds: the translation's i64
    arithmetic truncated to i32 (common.py's `wrapping`) and the sign extensions of
    fused elementwise chains nest casts five deep, and TVM 0.27's canonical simplifier
    takes time exponential in that depth (a held-out attention model's requantize ->
    dequantize -> requantize kernel: 111 ms per simplification of its one store, 2.1 s of
    TIR lowering; 3.9 ms folded)."""
    body = fold_casts(func.body)
    return func if body.same_as(func.body) else func.with_body(body)


def fold_casts(node):
    """`fold_cast_chains`'s rewrite on a TIR statement (not on a TE expression: the map
    descends into the tensors a `ProducerLoad` reads; the translation folds casts as it
    builds them, `folded_cast`)."""
    import tvm_ffi
    from tvm import tirx

    def on_cast(cast):
        folded = _folded(str(cast.ty.dtype), cast.value)
        return cast if folded is None else folded

    return tvm_ffi.structural_map(node, (tirx.Cast, on_cast))


def fold_casts_pass():
    """Module pass: `fold_cast_chains` on every PrimFunc."""
    import tvm
    from tvm import tirx

    @tvm.transform.module_pass(opt_level=0, name="QdialectFoldCastChains")
    def _fold(mod, _ctx):
        updated = {gv: fold_cast_chains(f) for gv, f in mod.functions_items() if isinstance(f, tirx.PrimFunc)}
        for gv, f in updated.items():
            mod[gv] = f
        return mod

    return _fold
