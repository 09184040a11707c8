"""Epilogues fused into the VNNI convolution: the elementwise chain that follows it.

After lowering, an int8 convolution is `linalg.conv_2d_nhwc_fhwc` (i32 sums) followed
by elementwise `linalg.generic`s: the input zero-point correction, the bias, the
requantization (multiply, shift, zero point, clamp, i8) and sometimes a residual
add, then often a `tensor.pad` for the next depthwise convolution.  Run as separate
kernels, every one of them reads and writes a whole tensor (the i32 sums are 4
bytes per element); fused into the convolution, they run on the accumulators
while those are still in registers, and the int8 result (padded in place) is the
only thing written.

`collect` follows the convolution's result through generics that can be fused:

- all loops parallel, the identity output map, the convolution's shape;
- the chain value read once, at the identity map, and used by nothing else;
- every other input a scalar constant, a constant per-output-channel vector
  (map `(d0, d1, d2, d3) -> (d3)`), or a tensor of the output's shape read at the
  identity map (a residual; it must be computed before the convolution is);
- a body of scalar arith / linalg.index ops (no table reads);

and then, optionally, one `tensor.pad` of the height and width by a constant.  A
fully connected layer's sums (a 1x1 convolution of a 1 x B image, [1, 1, B, K])
collapsed to [B, K] continue the same way over 2-D generics: element (b, k) is
(0, 0, b, k), and the kernel's [1, 1, B, K] result is reshaped back (a free view).

Leading steps that only add a per-channel constant modulo 2^32 (`x + c`, `x - c`
in i32, or `trunci(extsi(x) +/- c)`: the zero-point correction and the bias) are
folded into the accumulator's initial value, exactly, because the i32 sums wrap.
The rest is evaluated by the same scalar rules as every other generic
(tvm_bridge/translate.py), so the semantics cannot drift.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerType, TensorType, i32
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr

from qdialect.dialects.quant import is_subclass
from tvm_bridge.common import (
    TranslationError,
    dtype_of,
    eval_scalar_op,
    inputs_outputs,
    int_values,
    operand_segment,
    scalar_constant,
    shape_of,
)


@dataclass
class Param:
    """An extra kernel input of the epilogue: a per-channel vector ('channel', shape [K])
    or a tensor of the output's shape ('full')."""

    kind: str
    dtype: str  # the buffer's dtype
    value: object  # numpy array (a constant) or a relax expression
    widen_to: str | None = None  # loaded and cast to this dtype (constants stored narrower)
    shape: tuple = ()  # the buffer's shape


@dataclass
class Epilogue:
    """What `collect` found: the fused ops, the value they end in and how to compute it."""

    result: SSAValue
    ops: list[Operation] = field(default_factory=list)
    steps: list[tuple[linalg.GenericOp, SSAValue]] = field(default_factory=list)  # (generic, chain input)
    init: np.ndarray | None = None  # int32 [K], added to the accumulator (folded additive steps)
    pad: tuple[list[int], list[int], int | float] | None = None  # (low, high, value) on NHWC
    # a fully connected layer's [1, 1, B, K] sums collapsed to [B, K] before the chain: the
    # result's shape (the kernel writes [1, 1, B, K], reshaped back for free)
    collapsed: list[int] | None = None
    out_dtype: str = "int32"
    params: list[Param] = field(default_factory=list)
    # per step: the body argument -> ("chain",) | ("param", i) | ("scalar", value)
    bindings: list[dict] = field(default_factory=list)

    def key(self, tr) -> tuple:
        """Everything the kernel's text depends on besides the convolution's shapes: two
        epilogues with equal keys build the same PrimFunc (their constants are arguments)."""
        def step_key(g, binding):
            body = g.body.block
            numbering = {id(arg): ("arg", i) for i, arg in enumerate(body.args)}  # see Translator.op_key
            args = []
            for arg in body.args:
                b = binding.get(arg, ("unused",))
                if b[0] == "inline":
                    b = ("inline", step_key(b[1], b[2]))
                elif b[0] == "param":
                    p = self.params[b[1]]
                    b = ("param", b[1], p.kind, p.dtype, p.widen_to, p.shape)
                elif b[0] == "scalar":
                    b = ("scalar", repr(b[1]), tr.token(arg.type))
                args.append(b)
            ops = []
            op_key = tr.op_key
            bop, i = body.first_op, 0
            while bop is not None:
                ops.append(op_key(bop, numbering))
                for j, r in enumerate(bop.results):
                    numbering[id(r)] = ("result", i, j)
                bop, i = bop._next_op, i + 1
            return tuple(args), tuple(ops)

        return (tuple(step_key(g, b) for (g, _), b in zip(self.steps, self.bindings)),
                self.pad and (tuple(self.pad[0]), tuple(self.pad[1]), self.pad[2]), self.out_dtype,
                tuple((p.kind, p.dtype, p.widen_to, p.shape) for p in self.params),
                self.collapsed and tuple(self.collapsed))

    def expr(self, acc, y, x, k, buffers, lane, lanes: int):
        """(temps, value): the epilogue as TIR of the accumulator value `acc` at output
        position (y, x, channel k), `buffers` being the kernel's buffers for `params`,
        inside a loop vectorized over `lane` (`lanes` wide).

        `temps` are (local buffer of `lanes` values, PrimExpr) assignments, in order,
        for every value used more than once (a rescale reads its high product three
        times; as one expression tree, five chained steps would copy it hundreds of
        times).  They are buffers, not `LetStmt`s: TVM 0.27's VectorizeLoop keeps a
        let-bound value scalar inside a vectorized loop (every lane gets the last one)."""
        temps: list = []
        value = acc
        for (g, _), binding in zip(self.steps, self.bindings):
            value = self._eval(g, binding, value, (y, x, k), buffers, (temps, lane, lanes))
        return temps, value

    def _eval(self, g, binding: dict, chain, pos, buffers, temps):
        from tvm import tirx

        y, x, k = pos
        body = g.regions[0].block
        values: dict = {}
        for arg in body.args:
            b = binding.get(arg)
            if b is None:
                continue
            if b[0] == "chain":
                values[arg] = chain
            elif b[0] == "scalar":
                values[arg] = tirx.const(b[1], dtype_of(arg.type))
            elif b[0] == "inline":  # an elementwise producer evaluated in place
                values[arg] = self._eval(b[1], b[2], None, pos, buffers, temps)
            else:
                p = self.params[b[1]]
                buf = buffers[b[1]]
                load = buf[k] if p.kind == "channel" else buf[0, y, x, k] if len(p.shape) == 4 else buf[x, k]
                values[arg] = tirx.Cast(p.widen_to, load) if p.widen_to else load
        dims = [0, y, x, k] if len(shape_of(inputs_outputs(g)[1][0]._type)) == 4 else [x, k]
        for bop in body.ops:
            if is_subclass(type(bop), linalg.YieldOp):
                return values[bop._operands[0]]
            eval_scalar_op(bop, values, dims)
            r = bop.results[0]
            e = values[r]
            if hasattr(e, "asobject"):  # a lazy `==` / `!=` (tvm's EqualOp, NotEqualOp)
                e = values[r] = e.asobject()
            if r.first_use is not None and r.first_use._next_use is not None and str(e.ty) != "bool" and not isinstance(e, (tirx.IntImm, tirx.FloatImm)):
                assigned, lane, lanes = temps
                buf = tirx.decl_buffer((lanes,), str(e.ty), name=f"TMP{len(assigned)}", scope="local",
                                      layout=None)  # as TVMScript declares it in the kernel
                assigned.append((buf, e))
                values[r] = buf[lane]
        raise TranslationError("linalg.generic body without linalg.yield")


# ----- the requantization's 64-bit product, lane pairs at a time ---------------------------------
#
# The `tflite` profile's rescale (transforms/lower_to_linalg.py, the one-shift form) is, per
# lane, `trunci((extsi(a) * extsi(M) + (t < c ? neg : pos)) >> 32)` on i64 followed by 32-bit
# steps.  Vectorized as written, every 16 int32 lanes become two vectors of 8 int64 lanes
# (the low and the high half: vpmovzxdq, vextracti64x4, vpmovzxdq), and the high halves
# come back by two vpsrlq, two vpmovqd and a vinserti64x4.  x86's 32x32->64 multiply
# (vpmuldq) reads the even 32-bit lanes of each 64-bit lane, so the natural split is even
# and odd lanes: the even products are vpmuldq of the int32 vectors themselves, the odd
# ones of the vectors shifted down by 32 bits, and the result's lane 2i is the high half
# of even product i (moved down by a vpsrlq) and lane 2i+1 the high half of odd product i,
# already in place: one blend.  `split_wide_products` rewrites the lane expression into
# that form; the arithmetic is the same, lane for lane.  The dot-product and depthwise
# kernels (vnni.py `_tiles`) rewrite their epilogues as they build them, with the int64
# per-channel constants passed a second time in pair order (`pair_twins`); TVM's scheduled
# kernels (schedule.py) go through `pair_products_in` after scheduling.
#
# Per 16 int32 lanes on AVX-512 (mobilenetv2_tiny's 1x1 expansion, 8 -> 48 channels): 21
# instructions from the accumulator to the stored int8 as written, 15 paired (vpsrlq,
# 2 vpmuldq, 2 vpcmpgtq, 2 vpblendmq, 2 vpaddq, vpermt2d, vpsravd, then the clamp and the
# narrowing); XNNPACK's float form (the `litert` profile) takes about 7.  The choice of
# nudge by the product's sign (a compare and a blend per 8 lanes) is most of the rest.


#: set QDIALECT_REQUANT_PAIRS=0 to build the products as written (A/B measurements; the
#: compiled-model cache keys its entries by it, tvm_bridge/cache.BUILD_ENV)
PAIRS_ENV = "QDIALECT_REQUANT_PAIRS"


def _is_load(e) -> bool:
    """Whether `e` is a buffer load (TVM 0.27's `tirx.BufferLoad` is a function making a
    `TensorLoad`, whose buffer is its `source`)."""
    from tvm.ir.expr import TensorLoad

    return isinstance(e, TensorLoad)


def _lane_free(e, lane) -> bool:
    from tvm import tirx

    return not any(v.same_as(lane) for v in tirx.analysis.undefined_vars(e, []))


def _lane_vector(e, lane, lanes: int):
    """`e` (a lane expression: a constant, or a load whose last index is `lane` or
    `base + lane`, possibly cast) as one vector of `lanes` values; None if it is another
    expression."""
    from tvm import tirx

    if isinstance(e, (tirx.IntImm, tirx.FloatImm)):
        return tirx.Broadcast(e, lanes)
    if isinstance(e, tirx.Cast):
        inner = _lane_vector(e.value, lane, lanes)
        return None if inner is None else tirx.Cast(f"{e.ty}x{lanes}", inner)
    if not _is_load(e) or not e.indices:
        return None
    *outer, last = e.indices
    if not all(_lane_free(i, lane) for i in outer):
        return None
    base = _lane_offset(last, lane)
    if base is None:
        return None
    return tirx.BufferLoad(e.source, [*outer, tirx.Ramp(base, tirx.IntImm(str(base.ty), 1), lanes)])


def _lane_offset(index, lane):
    """`base` (free of `lane`) when `index` is `lane` plus `base`, written as `lane`,
    `base + lane`, `lane + base`, or nested so (`ko * 24 + (lane + 8)`, the epilogue of one
    register of a channel block: vnni._lanes_of); else None."""
    from tvm import tirx

    if index.same_as(lane):
        return tirx.IntImm(str(lane.ty), 0)
    if not isinstance(index, tirx.Add):
        return None
    for with_lane, other in ((index.a, index.b), (index.b, index.a)):
        if _lane_free(other, lane):
            inner = _lane_offset(with_lane, lane)
            if inner is not None:
                return other if isinstance(inner, tirx.IntImm) and inner.value == 0 else other + inner
    return None


def _equal(a, b) -> bool:
    """The same expression (the object, or an equal tree)."""
    import tvm_ffi

    return a.same_as(b) or bool(tvm_ffi.structural_equal(a, b))


def _int32_factor(f):
    """The int32 expression whose sign extension is the int64 factor `f`, else None: a
    cast of an int32 value, a constant of int32 range, or any expression whose range TVM's
    analyzer bounds within int32 (`(x - zp)` of an int8 `x`: computed in int32, cast)."""
    from tvm import sym, tirx

    if isinstance(f, tirx.Cast) and str(f.ty) == "int64" and str(f.value.ty) == "int32":
        inner = f.value
        if isinstance(inner, tirx.Cast) and str(inner.value.ty) == "int64":
            narrow = _narrow32(inner.value)  # (a MUL's `(x - zp1) * (y - zp2)`, built in i64)
            if narrow is not None:
                return narrow
        return inner
    if isinstance(f, tirx.IntImm):
        return f if -(1 << 31) <= f.value < (1 << 31) else None
    if str(f.ty) != "int64":
        return None
    narrow = _narrow32(f)
    if narrow is not None:
        return narrow
    bound = sym.Analyzer().const_int_bound(f)  # (TVM 0.27's arith analyzer)
    if -(1 << 31) <= bound.min_value and bound.max_value < (1 << 31):
        return tirx.Cast("int32", f)
    return None


def _narrow32(e):
    """An int32 expression equal to the int64 expression `e`, when `e` is built of sign
    extensions of values of at most 32 bits, constants, +, - and * and every step of it
    stays in int32 range (TVM's analyzer bounds each); else None.  A factor computed so
    is int32 arithmetic in the vector loop instead of int64 (no 64-bit multiply left)."""
    from tvm import sym, tirx

    def fits(lo, hi) -> bool:
        return -(1 << 31) <= lo and hi < (1 << 31)

    ty = str(e.ty)
    if ty == "int32":
        return e
    if ty != "int64":
        return None
    if isinstance(e, tirx.IntImm):
        return tirx.IntImm("int32", e.value) if fits(e.value, e.value) else None
    if isinstance(e, tirx.Cast):
        inner = str(e.value.ty)
        if inner == "int32":
            v = e.value
            if isinstance(v, tirx.Cast) and str(v.value.ty) == "int64":  # an i64 value truncated
                narrow = _narrow32(v.value)  # (that fits: the truncation changed nothing)
                if narrow is not None:
                    return narrow
            return v
        if inner in ("int8", "int16", "uint8", "uint16"):
            return tirx.Cast("int32", e.value)
        return None
    if isinstance(e, (tirx.Add, tirx.Sub, tirx.Mul)):
        bound = sym.Analyzer().const_int_bound(e)
        if not fits(bound.min_value, bound.max_value):
            return None
        a, b = _narrow32(e.a), _narrow32(e.b)
        return None if a is None or b is None else type(e)(a, b)
    return None


def _wide_core(e, defs: dict):
    """(product node P, (A, B), R, S) if `e` is `Cast(int32, (P + R) >> S)` with P an int64
    product of two sign-extended int32 values A and B (or a temp holding one, `defs`:
    buffer name -> expression), R free of P or `Select(P < c, X, Y)` (or `Select(A < 0, X,
    Y)` with B a positive constant: returned as the former) and S a constant or
    a lane value (0 <= S <= 63: the lowering's total shifts are 1..62); else None."""
    from tvm import tirx

    if not isinstance(e, tirx.Cast) or str(e.ty) != "int32":
        return None
    s = e.value
    if not isinstance(s, tirx.RShift) or str(s.ty) != "int64":
        return None
    shift = s.b
    if isinstance(shift, tirx.IntImm) and not 0 <= shift.value <= 63:
        return None
    u = s.a
    if isinstance(u, tirx.Sub) and isinstance(u.b, tirx.IntImm):  # (TVM's form of adding c < 0)
        u = tirx.Add(u.a, tirx.IntImm(str(u.b.ty), -u.b.value))
    if not isinstance(u, tirx.Add):
        return None
    for p, r in ((u.a, u.b), (u.b, u.a)):
        prod = defs.get(p.source.name) if _is_load(p) else p
        if prod is None or not isinstance(prod, tirx.Mul):
            continue
        factors = [_int32_factor(prod.a), _int32_factor(prod.b)]
        if any(f is None for f in factors) or all(isinstance(f, tirx.IntImm) for f in factors):
            continue
        if isinstance(r, tirx.Select):
            c = r.condition
            if not (isinstance(c, tirx.LT) and isinstance(c.b, tirx.IntImm)):
                continue
            if not _equal(c.a, p):
                # the sign of a factor whose partner is a positive constant (a MUL's nudge,
                # `x < 0 ? ..`) is the product's sign
                if c.b.value != 0 or not any(
                        _equal(c.a, f) and isinstance(o, tirx.IntImm) and o.value > 0
                        for f, o in ((prod.a, prod.b), (prod.b, prod.a))):
                    continue
                r = tirx.Select(tirx.LT(p, c.b), r.true_value, r.false_value)
        if _find(shift, lambda x: _equal(x, p)) is not None:
            continue
        return p, tuple(factors), r, shift
    return None


def _rebuild(e, old, new):
    """`e` with its subexpression `old` (the object) replaced by `new`."""
    from tvm import tirx

    if e.same_as(old):
        return new
    if isinstance(e, tirx.Cast):
        v = _rebuild(e.value, old, new)
        return e if v.same_as(e.value) else tirx.Cast(str(e.ty), v)
    if isinstance(e, tirx.Select):
        parts = [_rebuild(x, old, new) for x in (e.condition, e.true_value, e.false_value)]
        return e if all(p.same_as(x) for p, x in zip(parts, (e.condition, e.true_value, e.false_value))) \
            else tirx.Select(*parts)
    if hasattr(e, "a") and hasattr(e, "b"):  # binary arithmetic, comparisons, shifts, logic
        a, b = _rebuild(e.a, old, new), _rebuild(e.b, old, new)
        return e if a.same_as(e.a) and b.same_as(e.b) else type(e)(a, b)
    if isinstance(e, tirx.Not):
        a = _rebuild(e.a, old, new)
        return e if a.same_as(e.a) else tirx.Not(a)
    return e  # leaves (loads, constants, variables): a core is never inside a load index


def _find(e, pred, calls: bool = True):
    """The first subexpression of `e` (pre-order) for which `pred` holds, else None; not
    inside the arguments of calls when `calls` is false."""
    from tvm import tirx

    if pred(e):
        return e
    if isinstance(e, tirx.Cast) or isinstance(e, tirx.Not):
        return _find(e.value if isinstance(e, tirx.Cast) else e.a, pred, calls)
    if isinstance(e, tirx.Select):
        for x in (e.condition, e.true_value, e.false_value):
            hit = _find(x, pred, calls)
            if hit is not None:
                return hit
        return None
    if hasattr(e, "a") and hasattr(e, "b"):
        hit = _find(e.a, pred, calls)
        return hit if hit is not None else _find(e.b, pred, calls)
    children = (e.args if calls else ()) if hasattr(e, "args") else e.vectors if isinstance(e, tirx.Shuffle) else \
        [e.value] if isinstance(e, tirx.Broadcast) else ()
    for x in children:
        hit = _find(x, pred, calls)
        if hit is not None:
            return hit
    return None


def _uses_buffer(e, name: str) -> bool:
    from tvm import tirx

    return _find(e, lambda x: _is_load(x) and x.source.name == name) is not None


def pair_twins(params: list, lanes: int, segments: list | None = None) -> list:
    """(index into `params`, array) for every constant int64 per-channel parameter: its
    values in pair order, each block of `lanes` channels as its even channels then its odd
    ones, so that a kernel whose channel blocks are `lanes` wide loads a requantization
    constant's even and odd halves directly (`split_wide_products`' `twins`) instead of
    shuffling them out of the natural order (two shuffles per constant and block: cheap with
    AVX-512's 32 registers, spills on AVX2's 16).  With `segments` ((offset, width) pieces of
    each block of `lanes` channels: vectors of unequal widths, vnni's 16 + 8), each piece is
    put in pair order on its own."""
    out = []
    pieces = segments if segments is not None else [(0, lanes)]
    if any(w % 2 for _, w in pieces):
        return out
    for i, p in enumerate(params):
        if p.kind == "channel" and isinstance(p.value, np.ndarray) and p.value.ndim == 1 \
                and p.value.size % lanes == 0 and (p.dtype == "int64" or (
                    p.dtype == "int32" and bool(((p.value < 0) | (p.value > 63)).any()))):
            # (int32 ones, sign-extended, for the multipliers a vpmuldq pair reads: not the
            # shift amounts, 0..63, which are never a product's factor)
            blocks = p.value.astype(np.int64).reshape(-1, lanes)
            v = np.concatenate([blocks[:, o:o + w].reshape(-1, w // 2, 2).transpose(0, 2, 1).reshape(-1, w)
                                for o, w in pieces], axis=1).reshape(-1)
            out.append((i, np.ascontiguousarray(v)))
    return out


def split_wide_products(temps: list, value, lane, lanes: int, twins: dict | None = None):
    """The epilogue `temps` / `value` (see `Epilogue.expr`, lane variable `lane` of a loop
    vectorized `lanes` wide) as steps: a list of ("lanes", buffer, expression) (per lane,
    in the vectorized loop) and ("vector", buffer, vector expression) (one statement over
    all lanes), and the final per-lane value.  Every requantization core
    `trunci((extsi(a) * extsi(m) + r) >> 32)` becomes a vector step computing it in even
    and odd lanes (see above); without one, the steps are `temps` as they were.  `twins`
    maps a buffer's name to its copy in pair order (`pair_twins`), read instead of it."""
    from tvm import tirx
    from tvm.tirx.script.builder import ir as T

    steps = [("lanes", b, e) for b, e in temps]
    if lanes % 2 or lanes < 4 or os.environ.get(PAIRS_ENV) == "0":
        return steps, value
    items = steps + [("value", None, value)]
    out: list = []
    n_cores = 0
    for kind, buf, expr in items:
        while True:
            defs = {b.name: e for k, b, e in out if k == "lanes"}
            # (not inside calls: an if_then_else reads its branches' lanes only where its
            # condition holds, and a vector step would read all of them)
            core = _find(expr, lambda x: _wide_core(x, defs) is not None, calls=False)
            if core is None:
                break
            p, (fa, fb), r, shift = _wide_core(core, defs)
            mark = len(out)
            try:
                vexpr = _wide_vector(p, fa, fb, r, shift, lane, lanes, out, twins or {})
            except Exception:  # noqa: BLE001 - a form the rewrite does not know: as written
                vexpr = None
            if vexpr is None:
                del out[mark:]
                break
            hi = tirx.decl_buffer((lanes,), "int32", name=f"HI{n_cores}", scope="local", layout=None)
            rebuilt = _rebuild(expr, core, hi[lane])
            if rebuilt.same_as(expr):  # (never: cores are looked for where _rebuild reaches)
                del out[mark:]
                break
            n_cores += 1
            out.append(("vector", hi, vexpr))
            expr = rebuilt
        out.append((kind, buf, expr))
    # what is left computed in i64 but fits i32 (the sign form's `d >> 31` of a MUL's product
    # of two bytes, built in i64) is computed in i32
    out = [(kind, buf, _narrowed(expr) if kind != "vector" else expr) for kind, buf, expr in out]
    value = out.pop()[2]
    # a product temp no longer read (its cores now compute it themselves) is dropped
    kept = []
    for i, (kind, buf, expr) in enumerate(out):
        later = [e for _, _, e in out[i + 1:]] + [value]
        if kind == "lanes" and not any(_uses_buffer(e, buf.name) for e in later):
            continue
        kept.append((kind, buf, expr))
    del T
    return kept, value


def _narrowed(e):
    """`e` with every `Cast(int32, x)` of an int64 `x` that multiplies and that `_narrow32`
    computes in int32 (each step bounded within int32: the cast changed nothing) replaced by
    that int32 computation."""
    from tvm import tirx

    def wide_cast(x) -> bool:
        return (isinstance(x, tirx.Cast) and str(x.ty) == "int32" and str(x.value.ty) == "int64"
                and _wide_product_in(x.value) and _narrow32(x.value) is not None)

    for _ in range(64):  # (each pass removes one product; a bound on the loop all the same)
        hit = _find(e, wide_cast, calls=False)
        if hit is None:
            break
        e = _rebuild(e, hit, _narrow32(hit.value))
    return e


def _wide_product_in(e) -> bool:
    """Whether the lane expression `e` still multiplies in 64 bits."""
    from tvm import tirx

    return _find(e, lambda x: isinstance(x, tirx.Mul) and str(x.ty) == "int64") is not None


def lane_statements(steps: list, final: list, lane, lanes: int) -> list:
    """The statements of `split_wide_products`' `steps` followed by the per-lane stores
    `final` (in `lane`): the per-lane steps in loops vectorized `lanes` wide (each loop
    with its own variable), the vector steps between them.  The buffers of the steps are
    the caller's to allocate."""
    import tvm_ffi
    from tvm import tirx

    stmts, pending = [], []

    def flush(stores):
        var = lane if not stmts else tirx.Var(lane.name, str(lane.ty))  # (one variable per loop)
        body = stores[0] if len(stores) == 1 else tirx.SeqStmt(stores)
        if var is not lane:
            body = tvm_ffi.structural_map(body, (tirx.Var, lambda v: var if v.same_as(lane) else v))
        zero, extent = tirx.IntImm(str(lane.ty), 0), tirx.IntImm(str(lane.ty), lanes)
        stmts.append(tirx.For(var, zero, extent, tirx.ForKind.VECTORIZED, body))

    for kind, b, e in steps:
        if kind == "lanes":
            pending.append(tirx.BufferStore(b, e, [lane]))
            continue
        if pending:
            flush(pending)
            pending = []
        stmts.append(tirx.BufferStore(b, e, [tirx.Ramp(tirx.IntImm("int32", 0), tirx.IntImm("int32", 1), lanes)]))
    flush(pending + list(final))
    return stmts


#: the block-lowering passes of TVM's s_tir pipeline (tvm/s_tir/pipeline.py), in its order:
#: a scheduled function's loops and plain buffer stores, as `pair_products_in` rewrites them
_LOWER_BLOCKS = ("LowerInitBlock", "PlanAndUpdateBufferAllocationLocation", "ConvertBlocksToOpaque",
                 "CompactBufferAllocation", "LowerMatchBuffer", "LowerOpaqueBlock")


def pair_products_in(func, target=None):
    """`func` (a scheduled PrimFunc) with the requantization cores of its vectorized loops
    computed in even and odd lanes (`split_wide_products`), its blocks lowered first as
    TVM's pipeline would lower them; None when it has no such core."""
    import tvm
    import tvm_ffi
    from tvm import s_tir, tirx

    if os.environ.get(PAIRS_ENV) == "0":
        return None
    text = func.script()
    if not ('T.Cast("int64"' in text and " >> " in text):  # (no 64-bit product and shift: none)
        return None
    # (no StmtSimplify after them: the rewrite finds the same cores without it -- the same
    # count on every zoo and held-out model checked -- and the build's own pipeline
    # simplifies later; on the encoders' double-rounding chains it cost ~3 s of a model's
    # compile, mostly on kernels without a core to rewrite)
    passes = [getattr(s_tir.transform, name)() for name in _LOWER_BLOCKS]
    mod = tvm.IRModule({"main": func})
    if target is not None:
        with target:
            mod = tvm.transform.Sequential(passes)(mod)
    else:
        mod = tvm.transform.Sequential(passes)(mod)
    lowered = mod["main"]

    def rewrite(stmt):
        """(stmt with its vectorized loops rewritten, the new buffers they use)."""
        buffers: list = []

        def on_for(loop):
            if loop.kind != tirx.ForKind.VECTORIZED or not isinstance(loop.extent, tirx.IntImm):
                return loop
            lanes = int(loop.extent.value)
            stores = list(loop.body.seq) if isinstance(loop.body, tirx.SeqStmt) else [loop.body]
            if not all(isinstance(st, tirx.BufferStore) for st in stores) or \
                    not isinstance(loop.min, tirx.IntImm) or loop.min.value != 0:
                return loop
            stmts: list = []
            rewritten = False
            for st in stores:
                steps, value = split_wide_products([], st.value, loop.loop_var, lanes)
                left = [value] + [e for kind, _, e in steps if kind == "lanes"]
                if not any(kind == "vector" for kind, _, _ in steps) or any(map(_wide_product_in, left)):
                    # (a chain with a product the rewrite cannot take stays one loop: split
                    # around the others, its temporaries cost more than the pairs save, as in
                    # vit_tiny's residual chains: 0.0254 -> 0.0262 ms)
                    stmts.append(tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, st))
                    continue
                rewritten = True
                buffers.extend(b for _, b, _ in steps)
                stmts += lane_statements(steps, [tirx.BufferStore(st.buffer, value, st.indices)],
                                         loop.loop_var, lanes)
            return tirx.SeqStmt(stmts) if rewritten else loop

        return tvm_ffi.structural_map(stmt, (tirx.For, on_for)), buffers

    def with_allocations(stmt, buffers):
        return tirx.SeqStmt([tirx.AllocBuffer(b) for b in buffers] + [stmt]) if buffers else stmt

    # The new temporaries are allocated once, outside the loops (a fused build without
    # TVM's StorageRewrite would otherwise allocate them in every iteration), and inside
    # a parallel loop's body (one set per thread)
    def on_parallel(loop):
        if loop.kind != tirx.ForKind.PARALLEL:
            return loop
        body, buffers = rewrite(loop.body)
        if not buffers:
            return loop
        return tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, with_allocations(body, buffers),
                        loop.thread_binding, loop.annotations)

    body = tvm_ffi.structural_map(lowered.body, (tirx.For, on_parallel))
    changed = not body.same_as(lowered.body)
    body, buffers = rewrite(body)
    if not buffers and not changed:
        return None
    return lowered.with_body(with_allocations(body, buffers))


def _wide_vector(p, fa, fb, r, shift, lane, lanes: int, out: list, twins: dict):
    """The vector expression (int32 x lanes) of the core `trunci((fa * fb + r) >> shift)`,
    P being the product's node in `r`; operands that are not plain lane loads are first
    stored per lane into new temps appended to `out`.

    The shift: only the low 32 bits of `u >> S` are kept, bits S..S+31 of u.  For S <= 32
    they lie inside the 64 bits, so a logical shift gives them (x86 has no 64-bit
    arithmetic shift before AVX-512); for S > 32 they are the high half of u shifted
    arithmetically by S - 32 in 32 bits.  So: u >> min(S, 32) logically, the low halves
    gathered into one int32 vector, then >> (S - min(S, 32)) in 32 bits.  S = 32 (the
    lowering's usual form) is the high halves themselves."""
    from tvm import tirx
    from tvm.tirx.script.builder import ir as T

    half = lanes // 2

    def vector(e, dtype: str):
        v = _lane_vector(e, lane, lanes)
        if v is None:  # an expression: its lanes stored first
            buf = tirx.decl_buffer((lanes,), dtype, name=f"WV{len(out)}", scope="local", layout=None)
            out.append(("lanes", buf, e))
            v = tirx.BufferLoad(buf, [tirx.Ramp(tirx.IntImm("int32", 0), tirx.IntImm("int32", 1), lanes)])
        return v

    def _twin_halves(e, v):
        """The (even, odd) int64 loads of the pair-order copy of the constant `e` reads, when
        it has one and `v` reads the constant itself (a lane temporary's index says nothing
        of the channel), else None."""
        source = e.source if _is_load(e) else e.value.source if (
            isinstance(e, tirx.Cast) and _is_load(e.value)) else None
        twin = None if source is None else twins.get(source.name)
        if twin is None or not (_is_load(v) and v.source.same_as(source) and isinstance(v.indices[-1], tirx.Ramp)):
            return None
        base = v.indices[-1].base
        step = tirx.IntImm(str(base.ty), 1)
        return (tirx.BufferLoad(twin, [*v.indices[:-1], tirx.Ramp(base, step, half)]),
                tirx.BufferLoad(twin, [*v.indices[:-1], tirx.Ramp(base + half, step, half)]))

    def even_odd32(f):
        """(even, odd) int64 x half vectors whose low 32 bits are f's even / odd lanes."""
        if isinstance(f, tirx.IntImm):
            c = tirx.Broadcast(tirx.IntImm("int64", f.value), half)
            return c, c
        v = vector(f, "int32")
        pair = _twin_halves(f, v)
        if pair is not None:
            # a per-channel multiplier: its pair-order copy, sign-extended, read as is (the
            # shifts only tell LLVM so: vpmuldq reads the low halves, and they vanish)
            return tuple((h << 32) >> 32 for h in pair)
        w = T.reinterpret(v, dtype=f"int64x{half}")
        return (w << 32) >> 32, w >> 32  # (x86: vpmuldq reads the low half alone)

    ae, ao = even_odd32(fa)
    be, bo = even_odd32(fb)
    pe, po = ae * be, ao * bo
    evens = [tirx.IntImm("int32", 2 * i) for i in range(half)]
    odds = [tirx.IntImm("int32", 2 * i + 1) for i in range(half)]

    def split64(e):
        if _find(e, lambda x: _equal(x, p)) is not None:
            return None
        if isinstance(e, tirx.IntImm):
            c = tirx.Broadcast(tirx.IntImm("int64", e.value), half)
            return c, c
        v = vector(e, "int64")
        pair = _twin_halves(e, v) if _is_load(e) else None
        if pair is not None:
            return pair
        return tirx.Shuffle([v], evens), tirx.Shuffle([v], odds)

    if isinstance(r, tirx.Select):
        x, y = split64(r.true_value), split64(r.false_value)
        if x is None or y is None:
            return None
        c = tirx.Broadcast(r.condition.b, half)
        re = tirx.Select(tirx.LT(pe, c), x[0], y[0])
        ro = tirx.Select(tirx.LT(po, c), x[1], y[1])
    else:
        rr = split64(r)
        if rr is None:
            return None
        re, ro = rr
    ue, uo = pe + re, po + ro
    low = tirx.Broadcast(tirx.IntImm("int64", 0xFFFFFFFF), half)
    high = tirx.Broadcast(tirx.IntImm("int64", -(1 << 32)), half)
    if isinstance(shift, tirx.IntImm) and shift.value == 32:
        return T.reinterpret(((ue >> 32) & low) | (uo & high), dtype=f"int32x{lanes}")
    if isinstance(shift, tirx.IntImm):
        first, rest = min(shift.value, 32), shift.value - min(shift.value, 32)
        se = so = tirx.Broadcast(tirx.IntImm("uint64", first), half)
        rest = None if rest == 0 else tirx.Broadcast(tirx.IntImm("int32", rest), lanes)
    else:
        if _find(shift, lambda x: _equal(x, p)) is not None:
            return None
        sv = vector(shift, "int64")
        first = T.min(sv, tirx.Broadcast(tirx.IntImm("int64", 32), lanes))
        se = T.reinterpret(tirx.Shuffle([first], evens), dtype=f"uint64x{half}")
        so = T.reinterpret(tirx.Shuffle([first], odds), dtype=f"uint64x{half}")
        rest = tirx.Cast(f"int32x{lanes}", sv - first)

    def logical(u, amount):
        return T.reinterpret(T.reinterpret(u, dtype=f"uint64x{half}") >> amount, dtype=f"int64x{half}")

    ve, vo = logical(ue, se), logical(uo, so)
    value = T.reinterpret((ve & low) | (vo << 32), dtype=f"int32x{lanes}")
    return value if rest is None else value >> rest


_IDENTITY = {4: "(d0, d1, d2, d3) -> (d0, d1, d2, d3)", 2: "(d0, d1) -> (d0, d1)"}
_I32 = i32  # (builtin's object, which the lowering's types usually are: see _same)
_CHANNEL = {4: "(d0, d1, d2, d3) -> (d3)", 2: "(d0, d1) -> (d1)"}


_MAP_TEXT: dict[int, tuple] = {}


def _map_text(m) -> str:
    """The affine map's text, printed once per attribute object (printing costs ~10 us)."""
    hit = _MAP_TEXT.get(id(m))
    if hit is None or hit[0] is not m:
        if len(_MAP_TEXT) > 4096:
            _MAP_TEXT.clear()
        hit = _MAP_TEXT[id(m)] = (m, str(m.data))  # the attribute is kept, so its id stays its own
    return hit[1]


def _one_use(v: SSAValue) -> bool:
    """`len(list(v.uses)) == 1`, from the use list's links (no iterator objects)."""
    first = v.first_use
    return first is not None and first._next_use is None


def _constant_of(tr, v: SSAValue):
    """The numpy value of a dense arith.constant tensor, else None."""
    dense = tr.dense(v)
    return None if dense is None else dense.array()


def _scalar_of(tr, v: SSAValue):
    owner = v.owner
    if is_subclass(type(owner), arith.ConstantOp) and \
            not is_subclass(type(owner.properties["value"]), DenseIntOrFPElementsAttr):
        return scalar_constant(owner)[0]
    c = tr.env.get(v)
    return c[0] if isinstance(c, tuple) else None


_ALL_PARALLEL: dict[int, tuple] = {}


def _all_parallel(iterator_types) -> bool:
    """Every iterator parallel; answered once per attribute object (as `_map_text`)."""
    hit = _ALL_PARALLEL.get(id(iterator_types))
    if hit is None or hit[0] is not iterator_types:
        if len(_ALL_PARALLEL) > 4096:
            _ALL_PARALLEL.clear()
        hit = _ALL_PARALLEL[id(iterator_types)] = (
            iterator_types, all("parallel" in str(it.data) for it in iterator_types.data))
    return hit[1]


def _elementwise(g: Operation, shape: list[int]) -> bool:
    """All loops parallel, identity output map of `shape`, the output's old value unread,
    a body of scalar ops only (no table reads)."""
    if not is_subclass(type(g), linalg.GenericOp):
        return False
    # (the properties and the region read directly: xDSL's accessors for them are Python calls)
    properties = g.properties
    outputs = inputs_outputs(g)[1]
    if len(outputs) != 1 or not _all_parallel(properties["iterator_types"]):
        return False
    if _map_text(properties["indexing_maps"].data[-1]) != _IDENTITY[len(shape)] or \
            list(shape_of(outputs[0]._type)) != shape:
        return False
    body = g.regions[0].block
    if body.args[-1].first_use is not None:
        return False
    bop = body.first_op
    while bop is not None:  # (the op's own fields: its `operands` and `type` are wrappers)
        if bop.regions:
            return False
        for o in bop._operands:
            t = type(o._type)
            if t is not IntegerType and is_subclass(t, TensorType):  # (an integer, the usual one: no call)
                return False
        bop = bop._next_op
    return True


# numpy's reductions cost a few us a call: a constant this small is read as a list instead
_SMALL = 64


def _splat(const: np.ndarray):
    """The value every element of `const` has (a Python scalar), else None."""
    if not const.size:
        return None
    if const.size <= _SMALL:
        values = const.ravel().tolist()
        first = values[0]
        return first if all(v == first for v in values) else None
    first = const.flat[0]
    return first.item() if (const == first).all() else None


def _fits_int32(value: np.ndarray) -> bool:
    if value.size <= _SMALL:
        values = value.ravel().tolist()
        return min(values) >= -(1 << 31) and max(values) < (1 << 31)
    return bool(value.min() >= -(1 << 31) and value.max() < (1 << 31))


def _bind(tr, g: Operation, chain: SSAValue | None, shape: list[int], params: list[Param],
          inlined: list[Operation], depth: int = 0):
    """How each input of elementwise generic `g` reaches the kernel (see `Epilogue._eval`),
    appending its run-time inputs to `params` and inlined producers to `inlined`; None if
    some input cannot."""
    maps = [_map_text(m) for m in g.properties["indexing_maps"].data]  # (see _elementwise)
    body = g.regions[0].block
    inputs = inputs_outputs(g)[0]
    if chain is not None and inputs.count(chain) != 1:
        return None
    binding: dict = {}
    for v, m, arg in zip(inputs, maps, body.args):
        if chain is not None and v is chain:
            if m != _IDENTITY[len(shape)]:
                return None
            binding[arg] = ("chain",)
            continue
        t = v._type
        if not isinstance(t, TensorType):
            c = _scalar_of(tr, v)
            if c is None:
                return None
            binding[arg] = ("scalar", c)
            continue
        const = _constant_of(tr, v)
        if const is not None and (splat := _splat(const)) is not None:
            binding[arg] = ("scalar", splat)  # a splat: its value inline
            continue
        if m == _CHANNEL[len(shape)] and const is not None and const.shape == (shape[-1],):
            kind, value = "channel", const
        elif m == _IDENTITY[len(shape)] and list(shape_of(t)) == shape:
            if const is not None:
                kind, value = "full", const
            elif v in tr.env and not isinstance(tr.env[v], tuple):
                kind, value = "full", tr.tensor(v)
            elif depth < 2 and _one_use(v) and _elementwise(v.owner, shape):
                # computed after the convolution by an elementwise generic of available
                # tensors (the other input of a residual add, rescaled): evaluate it here
                sub = _bind(tr, v.owner, None, shape, params, inlined, depth + 1)
                if sub is None:
                    return None
                inlined.append(v.owner)
                binding[arg] = ("inline", v.owner, sub)
                continue
            else:
                return None
        else:
            return None
        dtype = dtype_of(t)
        widen = None
        if isinstance(value, np.ndarray) and dtype == "int64" and value.size and _fits_int32(value):
            value, dtype, widen = value.astype(np.int32), "int32", "int64"  # sext(i32) x sext(i32)
        binding[arg] = ("param", len(params))
        params.append(Param(kind, dtype, value, widen, (shape[-1],) if kind == "channel" else tuple(shape)))
    return binding


def _additive(g: linalg.GenericOp, binding: dict, epi: Epilogue):
    """The per-channel int32 vector this step adds (mod 2^32) if it is `x + c`, `x - c`
    (i32) or `trunci(extsi(x) +/- c)` with c a scalar or per-channel constant; else None."""
    body = g.regions[0].block
    ops = []
    bop = body._first_op
    while bop is not None and len(ops) < 4:  # (a longer body is not additive: not listed whole)
        if not is_subclass(type(bop), linalg.YieldOp):
            ops.append(bop)
        bop = bop._next_op
    if len(ops) not in (1, 3):
        return None
    chain = next(a for a in body.args if binding.get(a) == ("chain",))
    i32 = _I32
    # (`is` first: comparing types equal is a Python call, and the IR's i32 is usually builtin's)
    if not _same(chain._type, i32) or not _same(g.results[0]._type.element_type, i32):
        return None

    def const_of(arg):
        b = binding.get(arg)
        if b is None:
            return None
        if b[0] == "scalar":
            return np.int64(b[1])
        if b[0] == "param" and epi.params[b[1]].kind == "channel" and isinstance(epi.params[b[1]].value, np.ndarray):
            return epi.params[b[1]].value.astype(np.int64)
        return None

    # (the classes by `is_subclass`, the operands by the ops' own fields: isinstance on an op
    # class goes through ABCMeta, and `operands` is a Python view)
    kinds = [type(o) for o in ops]
    if len(ops) == 1 and (is_subclass(kinds[0], arith.AddiOp) or is_subclass(kinds[0], arith.SubiOp)):
        a, b = ops[0]._operands
        if is_subclass(kinds[0], arith.AddiOp) and b is chain:
            a, b = b, a
        if a is chain and (c := const_of(b)) is not None:
            return c if is_subclass(kinds[0], arith.AddiOp) else -c
        return None
    if len(ops) == 3 and is_subclass(kinds[0], arith.ExtSIOp) and ops[0]._operands[0] is chain and \
            (is_subclass(kinds[1], arith.AddiOp) or is_subclass(kinds[1], arith.SubiOp)) and \
            is_subclass(kinds[2], arith.TruncIOp) and ops[2]._operands[0] is ops[1].results[0] and \
            body.last_op._operands[0] is ops[2].results[0]:
        a, b = ops[1]._operands
        wide = ops[0].results[0]
        if is_subclass(kinds[1], arith.AddiOp) and b is wide:
            a, b = b, a
        if a is wide and (c := const_of(b)) is not None:
            return c if is_subclass(kinds[1], arith.AddiOp) else -c
    return None


def _same(a, b) -> bool:
    """`a == b` for attributes, `is` first."""
    return a is b or a == b


def collect(tr, conv: Operation) -> Epilogue:
    """The fusable elementwise chain (and pad) after `conv`'s result; see the module doc."""
    value = conv.results[0]
    shape = list(shape_of(value._type))
    epi = Epilogue(result=value)
    init = np.zeros(shape[3], np.int64)
    folding = True
    while True:
        if not _one_use(value):
            break
        user = value.first_use.operation
        n_params = len(epi.params)
        inlined: list[Operation] = []
        binding = (_bind(tr, user, value, shape, epi.params, inlined)
                   if _elementwise(user, shape) and dtype_of(user.results[0]._type) != "bool" else None)
        if binding is None:
            del epi.params[n_params:]
        else:
            epi.ops.extend(inlined)
            add = _additive(user, binding, epi) if folding else None
            if add is not None:
                init = init + add
                del epi.params[n_params:]  # folded: the constant is not read at run time
            else:
                folding = False
                epi.steps.append((user, value))
                epi.bindings.append(binding)
            epi.ops.append(user)
            value = user.results[0]
            continue
        if is_subclass(type(user), tensor.CollapseShapeOp) and not epi.ops and len(shape) == 4 and shape[:2] == [1, 1] \
                and list(shape_of(user.results[0]._type)) == shape[2:]:
            # [1, 1, B, K] -> [B, K] keeps the row-major order: element (b, k) is (0, 0, b, k)
            epi.collapsed = shape = shape[2:]
            epi.ops.append(user)
            value = user.results[0]
            continue
        if len(shape) == 4 and is_subclass(type(user), tensor.PadOp) and (pad := _pad_of(tr, user)) is not None:
            epi.pad = pad
            epi.ops.append(user)
            value = user.results[0]
        break
    epi.result = value
    epi.out_dtype = dtype_of(value.type)
    epi.init = ((init + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)
    return epi


def _pad_of(tr, op: tensor.PadOp):
    """(low, high, value) of a pad of only the height and width by a constant, else None."""
    try:
        low = [int(v) for v in int_values(op.properties["static_low"])]
        high = [int(v) for v in int_values(op.properties["static_high"])]
    except Exception:  # noqa: BLE001 - dynamic
        return None
    if len(low) != 4 or low[0] or low[3] or high[0] or high[3] or min(low + high) < 0 or \
            operand_segment(op, "low") or operand_segment(op, "high"):
        return None
    yielded = op.regions[0].block.last_op._operands[0]
    c = _scalar_of(tr, yielded)
    if c is None:
        return None
    return low, high, c


__all__ = ["Epilogue", "Param", "collect", "lane_statements", "pair_products_in", "pair_twins", "split_wide_products",
           "TranslationError"]
