"""The float ops of quantized transformer encoders (ONNX), lowered to L3 bit for bit, for `qnn-decompose`.

What ONNX Runtime computes in float between the quantized ops of an encoder, as
`qdialect.interp_onnx_float` / `qdialect.reference.onnxruntime_float` compute it,
written with upstream func / arith / linalg / tensor / math.fma ops only:

| op (float32 island, `qnn.rounding = "onnx"`) | L3 |
| --- | --- |
| nn.div | one `arith.divf` per element, numpy broadcasting maps |
| nn.sqrt | (in its own buffer) IEEE square root from arith alone: Newton's iteration in float64 from an exponent-halving estimate, rounded to float32, then corrected to the nearest float32 by comparing the input with the squares of the two neighbouring midpoints (25-bit midpoints: their squares are exact in float64) |
| nn.erf | MLAS's FMA3 erf kernel: the small and big polynomials as `math.fma` chains (each in its own buffer), MLAS's exp with `2^r` built in the exponent field, the sign or-ed back |
| nn.layer_norm | MLAS's AVX2 LayerNorm; per row (three one-step reductions, so TVM keeps each in a buffer), the row's values unrolled in the body: the four float64 lanes of the mean, `(0 + 2) + (1 + 3)`, the tail in order; eight float32 FMA lanes of centred squares, their reduction tree and the tail (rounded products for GCC's fold-left blocks of four, FMA for the rest); `1 / sqrt(var / n + eps)`; then `fma((x - mean) * inv, scale, bias)` per element |
| qnn.batch_matmul (`onnx`), nn.batch_matmul | ORT_DISABLE_ALL's MatMul (MLAS's unpacked SGEMM): per K slice of `sgemm_strides` an in-order `math.fma` chain from +0.0, the slices added in order; M == 1 / N == 1 refused |
| nn.mean / qnn.mean (`onnx`) over leading axes | ORT's `FastReduceRK`: an in-order `math.fma(x, 1.0, acc)` chain over the reduced rows from -0.0, `/ f32(rows)`; other axis patterns go to `float_reductions` |

Products an add could follow sit behind `decompose_onnx.no_contract`, so LLVM
cannot contract them into fused multiply-adds MLAS does not do.  TVM's schedule
inlines elementwise producers into their readers as expression trees (a value
read twice is computed twice), so the large per-element or per-row kernels are
written as one-step reductions (`_per_row`), which it keeps in buffers.  Registered into
`transforms.decompose.DECOMPOSITIONS` / `decompose_onnx.FLOAT_LOWERINGS` on import.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import IntegerType, TensorType, f32, f64
from xdsl.ir import SSAValue

import transforms.float_islands  # noqa: F401 - registered first: the wrappers below delegate to it
import transforms.float_reductions as float_reductions
from qdialect.dialects import nn, qint, qnn
from qdialect.reference import onnxruntime_float as orf
from transforms import decompose, decompose_onnx
from transforms.decompose import Emitter, Unsupported, qp
from transforms.float_islands import _check, _elementwise, _shape
from transforms.lower_to_linalg import Lowering, Scalar, amap, dim, identity

F32 = np.float32
I32, I64 = IntegerType(32), IntegerType(64)
MAX_UNROLLED_ROW = 1024  # layer norm rows are spelled out value by value in one body
_no_contract = decompose_onnx.no_contract


def _k(s: Scalar, value: float, t=f32) -> SSAValue:
    return s.const(float(F32(value)) if t == f32 else float(value), t)


def _fma(s: Scalar, a, b, c) -> SSAValue:
    return s.emit(mathd.FmaOp(a, b, c))


def _bits(s: Scalar, v: SSAValue) -> SSAValue:
    return s.emit(arith.BitcastOp(v, I32))


def _f32_of_bits(s: Scalar, b: SSAValue) -> SSAValue:
    return s.emit(arith.BitcastOp(b, f32))


# ----- scalar kernels -----------------------------------------------------------------------------


def ieee_sqrt(s: Scalar, x: SSAValue) -> SSAValue:
    """The correctly rounded float32 square root of `x`, from arith alone (Newton's steps are
    corrected exactly afterwards, so how LLVM contracts them cannot show)."""
    xd = s.emit(arith.ExtFOp(x, f64))
    estimate = s.emit(arith.BitcastOp(s.add(s.emit(arith.ShRSIOp(s.emit(arith.BitcastOp(xd, I64)), s.const(1))),
                                            0x1FF8000000000000), f64))
    g, half = estimate, s.const(0.5, f64)
    for _ in range(4):  # from 6 % off, quadratic convergence: 1e-12 after four, far inside a float32 ulp
        g = s.emit(arith.MulfOp(s.emit(arith.AddfOp(g, s.emit(arith.DivfOp(xd, g)))), half))
    y = s.emit(arith.TruncFOp(g, f32))
    yb = _bits(s, y)
    up, down = _f32_of_bits(s, s.add(yb, s.const(1, I32))), _f32_of_bits(s, s.sub(yb, s.const(1, I32)))
    yd = s.emit(arith.ExtFOp(y, f64))

    def mid_square(other):
        m = s.emit(arith.MulfOp(s.emit(arith.AddfOp(yd, s.emit(arith.ExtFOp(other, f64)))), half))
        return s.emit(arith.MulfOp(m, m))

    y = s.emit(arith.SelectOp(s.emit(arith.CmpfOp(xd, mid_square(up), "ogt")), up, y))
    y = s.emit(arith.SelectOp(s.emit(arith.CmpfOp(xd, mid_square(down), "olt")), down, y))
    zero = s.const(0.0, f32)
    special = s.emit(arith.OrIOp(s.emit(arith.CmpfOp(x, zero, "oeq")),  # +-0, +inf and NaN are their own root
                                 s.emit(arith.OrIOp(s.emit(arith.CmpfOp(x, s.const(math.inf, f32), "oeq")),
                                                    s.emit(arith.CmpfOp(x, x, "uno"))))))
    nan = s.const(math.nan, f32)
    y = s.emit(arith.SelectOp(s.emit(arith.CmpfOp(x, zero, "olt")), nan, y))
    return s.emit(arith.SelectOp(special, x, y))


def _erf_abs(s: Scalar, x: SSAValue) -> SSAValue:
    """min(|x|, upper): vminps(|x|, upper); a NaN input is not modelled (as in the reference)."""
    a = _f32_of_bits(s, s.band(_bits(s, x), s.const(0x7FFFFFFF, I32)))
    return s.emit(arith.MinimumfOp(a, _k(s, orf._ERF_UPPER_ABS)))


def _erf_big(s: Scalar, a: SSAValue) -> SSAValue:
    return s.emit(arith.CmpfOp(_k(s, orf._ERF_SPLIT), a, "ole"))


def erf_small(s: Scalar, x: SSAValue) -> SSAValue:
    """The small-argument polynomial of MLAS's erf (0 where |x| >= 0.921875)."""
    a = _erf_abs(s, x)
    sq = s.emit(arith.MulfOp(a, a))
    small = _k(s, orf._ERF_SMALL[0])
    for p in orf._ERF_SMALL[1:]:
        small = _fma(s, small, sq, _k(s, p))
    small = _fma(s, small, a, a)
    return s.emit(arith.SelectOp(_erf_big(s, a), s.const(0.0, f32), small))


def erf_exponent(s: Scalar, x: SSAValue) -> SSAValue:
    """max(-p(|x|), lower): the argument of the big branch's exp (-0.0 where |x| < 0.921875)."""
    a = _erf_abs(s, x)
    ab = s.emit(arith.SelectOp(_erf_big(s, a), a, s.const(0.0, f32)))
    r = _k(s, orf._ERF_BIG[0])
    for p in orf._ERF_BIG[1:]:
        r = _fma(s, r, ab, _k(s, p))
    r = s.emit(arith.NegfOp(_fma(s, r, ab, ab)))
    lower = _k(s, orf._EXP_LOWER)
    return s.emit(arith.SelectOp(s.emit(arith.CmpfOp(r, lower, "ogt")), r, lower))  # vmaxps(r, lower)


def erf_finish(s: Scalar, x: SSAValue, small: SSAValue, r: SSAValue) -> SSAValue:
    """1 - exp(r) with MLAS's exp, or-ed with the small branch and x's sign."""
    c = _k(s, orf._EXP_C)
    vr = s.emit(arith.SubfOp(_fma(s, _k(s, orf._EXP_LOG2_RECIPROCAL), r, c), c))
    f = _fma(s, vr, _k(s, orf._EXP_LOG2_HI), r)
    f = _fma(s, vr, _k(s, orf._EXP_LOG2_LO), f)
    y = _k(s, orf._EXP_P[0])
    for p in orf._EXP_P[1:]:
        y = _fma(s, y, f, _k(s, p))
    i = s.emit(arith.FPToSIOp(vr, I32))
    pow2 = _f32_of_bits(s, s.shl(s.add(i, s.const(127, I32)), s.const(23, I32)))
    y = s.emit(arith.SubfOp(s.const(1.0, f32), _no_contract(s, s.emit(arith.MulfOp(y, pow2)))))
    sign = s.band(_bits(s, x), s.const(-0x80000000, I32))
    return _f32_of_bits(s, s.emit(arith.OrIOp(s.emit(arith.OrIOp(_bits(s, y), _bits(s, small))), sign)))


def mlas_erf(s: Scalar, x: SSAValue) -> SSAValue:
    """`orf.mlas_erf` of one float32 (MlasErfKernelFma3), in one expression."""
    return erf_finish(s, x, erf_small(s, x), erf_exponent(s, x))


# ----- elementwise ops ------------------------------------------------------------------------------


def lower_div(e: Emitter, op) -> SSAValue:
    _check(op)
    return _elementwise(e, op, lambda s, a, b, _o: s.emit(arith.DivfOp(a, b)))


def lower_sqrt(e: Emitter, op) -> SSAValue:
    """Elementwise, as a one-step reduction (`_per_row`): TVM keeps the root in a buffer."""
    _check(op)
    shape = _shape(op.operands[0])
    low = Lowering()
    flat = low.reshape(op.operands[0], (math.prod(shape),))
    y = _per_row(low, [flat], [amap(2, [dim(0)])], math.prod(shape), ieee_sqrt)
    y = low.reshape(y, shape)
    e.ops.extend(low.ops)
    return y


def lower_erf(e: Emitter, op) -> SSAValue:
    """Elementwise, as a one-step reduction (`_per_row`) so TVM keeps the result in a buffer
    rather than inlining the kernel's expression into each of its readers."""
    _check(op)
    shape = _shape(op.operands[0])
    low = Lowering()
    flat = low.reshape(op.operands[0], (math.prod(shape),))
    n, each = math.prod(shape), amap(2, [dim(0)])
    small = _per_row(low, [flat], [each], n, erf_small)  # three buffers: TVM inlines expressions as trees
    r = _per_row(low, [flat], [each], n, erf_exponent)
    y = _per_row(low, [flat, small, r], [each] * 3, n, erf_finish)
    y = low.reshape(y, shape)
    e.ops.extend(low.ops)
    return y


# ----- layer normalization --------------------------------------------------------------------------


def _row_mean(s: Scalar, xs: list[SSAValue]) -> SSAValue:
    """Pass 1 of MlasLayerNormKernelAvx2: the float64 four-lane sum, the tail, / n."""
    n = len(xs)
    n4 = n - n % 4
    lanes = [s.const(0.0, f64)] * 4
    for i in range(n4):
        lanes[i % 4] = s.emit(arith.AddfOp(lanes[i % 4], s.emit(arith.ExtFOp(xs[i], f64))))
    total = s.emit(arith.AddfOp(s.emit(arith.AddfOp(lanes[0], lanes[2])), s.emit(arith.AddfOp(lanes[1], lanes[3]))))
    for i in range(n4, n):
        total = s.emit(arith.AddfOp(total, s.emit(arith.ExtFOp(xs[i], f64))))
    return s.emit(arith.TruncFOp(s.emit(arith.DivfOp(total, s.const(float(n), f64))), f32))


def _row_var_eps(s: Scalar, xs: list[SSAValue], mean: SSAValue, eps: float) -> SSAValue:
    """Pass 2: eight FMA lanes of centred squares, their tree, the tail; var / n + eps."""
    n = len(xs)
    n8 = n - n % 8
    lanes = [s.const(0.0, f32)] * 8
    for i in range(n8):
        d = s.emit(arith.SubfOp(xs[i], mean))
        lanes[i % 8] = _fma(s, d, d, lanes[i % 8])
    r = [s.emit(arith.AddfOp(lanes[k], lanes[k + 4])) for k in range(4)]
    total = s.emit(arith.AddfOp(s.emit(arith.AddfOp(r[0], r[2])), s.emit(arith.AddfOp(r[1], r[3]))))
    folded = n8 + (n - n8) // 4 * 4
    for i in range(n8, n):
        d = s.emit(arith.SubfOp(xs[i], mean))
        if i < folded:
            total = s.emit(arith.AddfOp(total, _no_contract(s, s.emit(arith.MulfOp(d, d)))))
        else:
            total = _fma(s, d, d, total)
    return s.emit(arith.AddfOp(s.emit(arith.DivfOp(total, s.const(float(F32(n)), f32))), _k(s, eps)))


def _per_row(low: Lowering, inputs, maps, rows: int, value) -> SSAValue:
    """A float32 value per row (per element) as a reduction over one step (`max(-inf, v)`, which is `v` for
    every non-NaN v, -0.0 included): a reduction block, which the TVM schedule materialises
    instead of inlining its (large) expression into every element that reads it."""
    def body(s, *args):  # (the inputs, the one-step loop's placeholder, the accumulator)
        return s.emit(arith.MaximumfOp(args[-1], value(s, *args[:-2])))

    step = decompose_onnx._float_tensor(low, np.zeros(1, F32))  # gives the one-step loop its extent
    return low.generic([*inputs, step], [*maps, amap(2, [dim(1)])], TensorType(f32, [rows]), amap(2, [dim(0)]),
                       body, iterators=["parallel", "reduction"], init=-math.inf)


def lower_layer_norm(e: Emitter, op) -> SSAValue:
    _check(op)
    shape = _shape(op.operands[0])
    axis = op.attr("axis") % len(shape)
    n = math.prod(shape[axis:])
    rows = math.prod(shape[:axis])
    if n > MAX_UNROLLED_ROW:
        raise Unsupported(f"nn.layer_norm over {n} values (rows are unrolled up to {MAX_UNROLLED_ROW})")
    if n < orf.LAYER_NORM_MIN_ROW:
        raise Unsupported(f"nn.layer_norm over {n} values (ORT's kernel for short rows is not modelled)")
    eps = float(F32(op.attr("epsilon")))
    low = Lowering()
    x = low.reshape(op.operands[0], (rows, n))
    columns = [amap(2, [dim(0), i]) for i in range(n)]
    row_map = amap(2, [dim(0)])
    mean = _per_row(low, [x] * n, columns, rows, lambda s, *a: _row_mean(s, list(a)))
    var = _per_row(low, [x] * n + [mean], columns + [row_map], rows,
                   lambda s, *a: _row_var_eps(s, list(a[:n]), a[n], eps))
    inv = _per_row(low, [var], [row_map], rows,
                   lambda s, v: s.emit(arith.DivfOp(s.const(1.0, f32), ieee_sqrt(s, v))))
    params = [low.reshape(v, (n,)) for v in op.operands[1:]]
    per_row, per_col = amap(2, [dim(0)]), amap(2, [dim(1)])

    def body(s, xv, m, iv, g, *rest):
        t = s.emit(arith.MulfOp(s.emit(arith.SubfOp(xv, m)), iv))
        if len(rest) == 2:  # bias, then the output argument
            return _fma(s, t, g, rest[0])
        return s.emit(arith.MulfOp(t, g))

    y = low.generic([x, mean, inv, *params], [identity(2), per_row, per_row] + [per_col] * len(params),
                    TensorType(f32, [rows, n]), identity(2), body)
    y = low.reshape(y, shape)
    e.ops.extend(low.ops)
    return y


# ----- ReduceMean over leading axes -----------------------------------------------------------------


def _rk_shape(op) -> tuple[int, int] | None:
    """(reduced rows, kept columns) when the reduced axes lead (size-1 axes aside), else None."""
    shape = list(qint.shape_of(op.operands[0]))
    nd = len(shape)
    axes = sorted({int(a) % nd for a in op.attr("axes")}) if nd else []
    kept = [i for i in range(nd) if i not in axes and shape[i] != 1]
    reduced = [i for i in axes if shape[i] != 1]
    if not kept or not reduced or max(reduced) > min(kept):
        return None
    return math.prod(shape[i] for i in reduced), math.prod(shape[i] for i in kept)


def _with_rk_mean(kr_lowering):
    def lower(e: Emitter, op) -> SSAValue:
        rk = _rk_shape(op)
        if rk is None:
            return kr_lowering(e, op)
        float_reductions._check(op)
        rows, cols = rk
        low = Lowering()
        x = low.reshape(float_reductions._input(e, low, op), (rows, cols))
        total = float_reductions._fma_sum(low, x, amap(2, [dim(1), dim(0)]), [cols], 1, 1, -0.0)
        finish = float_reductions._finish(op)
        y = low.generic([total], [identity(1)], float_reductions._out_type(op, [cols]), identity(1),
                        lambda s, t, _o: finish(s, s.emit(arith.DivfOp(t, s.const(float(F32(rows)), f32)))))
        return float_reductions._done(e, low, y, list(qint.shape_of(op.results[0])))

    return lower


# ----- ORT's float MatMul of two activations (the `onnx` profile's attention) --------------------


def _sgemm_unpacked(low: Lowering, a: SSAValue, b: SSAValue, sa, sb, so, what: str) -> SSAValue:
    """Each batch's MlasSgemmOperation on float32 a [..., M, K], b [..., K, N] (B not prepacked):
    per K slice of `sgemm_strides` an in-order `math.fma` chain from +0.0, the slices added in
    order.  M == 1 (MLAS's M1 kernel) and N == 1 are refused by name."""
    from qdialect.reference import onnxruntime_kernels as ort

    m, k, n = sa[-2], sa[-1], sb[-1]
    if m == 1 or n == 1:
        raise Unsupported(f"{what} in float with M = {m}, N = {n} (MLAS's M == 1 / N == 1 kernels are "
                          "not lowered; the interpreter runs them)")
    rank = len(so)
    nb = rank - 2  # loops: the output's (batch..., m, n), then k; operands broadcast over the batch dims

    def operand_map(shape, rows_dim, cols_dim):
        lead = len(shape) - 2
        res = [dim(nb - lead + i) if shape[i] != 1 or so[nb - lead + i] == 1 else 0 for i in range(lead)]
        return amap(rank + 1, res + [rows_dim, cols_dim])

    _, sk = ort.sgemm_strides(n, k)
    total = None
    for k0 in range(0, k, sk):
        kk = min(sk, k - k0)
        if kk != k:
            a_s = _slice_last(low, a, sa, k0, kk, axis=len(sa) - 1)
            b_s = _slice_last(low, b, sb, k0, kk, axis=len(sb) - 2)
        else:
            a_s, b_s = a, b
        ash, bsh = list(qint.shape_of(a_s)), list(qint.shape_of(b_s))
        acc = low.generic([a_s, b_s], [operand_map(ash, dim(nb), dim(rank)), operand_map(bsh, dim(rank), dim(nb + 1))],
                          TensorType(f32, so), amap(rank + 1, [dim(i) for i in range(rank)]),
                          lambda s, x, y, c: s.emit(mathd.FmaOp(x, y, c)),
                          iterators=["parallel"] * rank + ["reduction"], init=0.0)
        total = acc if total is None else low.generic(
            [total, acc], [identity(rank)] * 2, TensorType(f32, so), identity(rank),
            lambda s, x, y, _o: s.emit(arith.AddfOp(x, y)))
    return total


def lower_batch_matmul_float(e: Emitter, op) -> SSAValue:
    """qnn.batch_matmul with rounding `onnx` (ORT_DISABLE_ALL's attention): both operands
    dequantized (`f32(q - zp) * s`), `_sgemm_unpacked`, QuantizeLinear and the op's clamp."""
    a_v, b_v = op.operands
    a_q, b_q, out_q = qp(a_v), qp(b_v), qp(op.results[0])
    if any(q.per_axis for q in (a_q, b_q, out_q)):
        raise Unsupported(f"{op.name} in float with per-axis parameters")
    if op.attr("adj_x", False) or op.attr("adj_y", False):
        raise Unsupported(f"{op.name} in float with adj_x / adj_y")
    sa, sb, so = (list(qint.shape_of(v)) for v in (a_v, b_v, op.results[0]))
    rank = len(so)
    low = Lowering()

    total = _sgemm_unpacked(low, decompose_onnx._dequantized(e, e.storage(a_v), a_q),
                            decompose_onnx._dequantized(e, e.storage(b_v), b_q), sa, sb, so, op.name)
    y = low.generic([total], [identity(rank)], decompose.int_tensor(so, out_q.bits), identity(rank),
                    lambda s, x, _o: decompose_onnx._quantize_scalar(s, x, op))
    e.ops.extend(low.ops)
    return y


def lower_nn_batch_matmul(e: Emitter, op) -> SSAValue:
    """nn.batch_matmul float island (a float activation times DequantizeLinear weights, what
    follows an unquantized Gelu, ORT_DISABLE_ALL): `_sgemm_unpacked`."""
    _check(op)
    if op.attr("adj_x", False) or op.attr("adj_y", False):
        raise Unsupported(f"{op.name} with adj_x / adj_y")
    a, b = op.operands
    low = Lowering()
    y = _sgemm_unpacked(low, a, b, _shape(a), _shape(b), _shape(op.results[0]), op.name)
    e.ops.extend(low.ops)
    return y


def _slice_last(low: Lowering, x: SSAValue, shape, start: int, size: int, axis: int) -> SSAValue:
    """x[..., start:start + size, ...] along `axis` (tensor.extract_slice)."""
    from xdsl.dialects import tensor

    out = list(shape)
    out[axis] = size
    offsets = [start if i == axis else 0 for i in range(len(shape))]
    return low.add(tensor.ExtractSliceOp(x, offsets, out, [1] * len(shape), TensorType(f32, out)))


# ----- registration ---------------------------------------------------------------------------------

decompose.DECOMPOSITIONS.update({
    nn.DivOp: lower_div,
    nn.SqrtOp: lower_sqrt,
    nn.ErfOp: lower_erf,
    nn.LayerNormOp: lower_layer_norm,
    nn.BatchMatmulOp: lower_nn_batch_matmul,
    nn.MeanOp: _with_rk_mean(decompose.DECOMPOSITIONS[nn.MeanOp]),
})
decompose_onnx.FLOAT_LOWERINGS[qnn.MeanOp] = _with_rk_mean(decompose_onnx.FLOAT_LOWERINGS[qnn.MeanOp])
decompose_onnx.FLOAT_LOWERINGS.setdefault(qnn.BatchMatmulOp, lower_batch_matmul_float)
