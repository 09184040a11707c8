"""ONNX Runtime's float Softmax, AveragePool and ReduceMean, bit for bit, for `qnn-decompose`.

Models imported from ONNX compute these as ORT's float kernels: qnn ops with `rounding =
"onnx"` (dequantize `f32(q - zp) * s`, the float op, QuantizeLinear) and float-island `nn`
ops marked `qnn.rounding = "onnx"`.  The recipes are `qdialect.interp_onnx`'s
(`onnxruntime_kernels.mlas_softmax_f32`, `mlas_avg_pool_f32`, `avg_pool19_f32`,
`mlas_global_avg_f32`, `reduce_mean_f32`); this module writes them in L3 directly
(func / arith / linalg / tensor / math.fma):

| op | L3 |
| --- | --- |
| softmax (qnn `onnx`, nn) | max (a max reduction: order-free); MLAS's AVX-512F exp (range reduction and degree-6 polynomial as `math.fma`, `p * 2^m` in one rounding through float64); the 16-lane sum as a `math.fma(e, 1.0, acc)` chain (an in-order loop in TVM: a float reduction may be reordered) over the row padded with zeros to 16 lanes; the lane tree `((a0+a1)+(a2+a3)) + ((a4+a5)+(a6+a7))` of `a = lanes[0:8] + lanes[8:16]`; `e * f32(1 / sum)`; QuantizeLinear |
| avg_pool2d, opset <= 18 (qnn `onnx`, nn) | MlasPool: the global kernel for a whole-image window (4 lanes as an FMA chain, `(l0+l2)+(l1+l3)`, the rest in order, `/ HW`); the vector kernel (stride_w <= 2, kernel <= 32, pl + W + pr <= 2045): column sums over the window's rows, then the kw column sums left to right, `/ count`; else the generic kernel: taps from +0.0 in (ky, kx) order, `/ count` |
| avg_pool2d, opset >= 19 | AveragePoolV19's scalar loop: taps from +0.0 in (ky, kx) order, `/ count` (nn: a whole-image unpadded window is the global kernel, as the importer writes a GlobalAveragePool) |
| mean (qnn `onnx` over trailing axes in ONNX order, nn) | ReduceMean's KR path: per row of n, Eigen's alignment-dependent sum (row offset `r * n` from a 16-byte boundary: the aligned body in two 4-lane accumulators as an FMA chain from -0.0, `(p0+p2)+(p1+p3)`, then head and tail in order), `/ f32(n)` |

Padding: pooled rows outside the image read -0.0 (the additive identity: `x + -0.0 = x`
and `-0.0 + x = x`, so a column sum over them is the sum over the in-image rows that MLAS
computes), columns outside read +0.0 (the vector kernel adds its zero-filled buffer).
Products (dequantization, softmax's `e * scale`) sit behind a no-op clamp so LLVM cannot
contract them with a following add into a fused multiply-add.

The whole-image NHWC mean of `qnn.mean` axes [1, 2] is decompose_onnx's own
(`_float_global_avg`).  Registered on import: the qnn ops into
`decompose_onnx.FLOAT_LOWERINGS`, the nn ops into `decompose.DECOMPOSITIONS`.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import arith, tensor
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import TensorType, f32, f64
from xdsl.dialects.linalg.ops import IndexOp
from xdsl.ir import SSAValue

from qdialect.dialects import nn, qnn, qint
from transforms import decompose, decompose_onnx
from transforms.decompose import Emitter, Unsupported, int_tensor, qp
from transforms.decompose_onnx import _dequant_scalar, _f32, _quantize_scalar, _zp
from transforms.lower_to_linalg import I64, Lowering, amap, dim, identity

F32 = np.float32
FLT_MAX = float(np.finfo(np.float32).max)
MAX_UNROLLED_TAPS = 1024  # pooling windows are spelled out tap by tap in one body
_PAR, _RED = "parallel", "reduction"


# ----- common -----------------------------------------------------------------------------------


def _is_nn(op) -> bool:
    return op.dialect_name() == "nn"


def _check(op) -> None:
    if _is_nn(op):
        r = op.attributes.get("qnn.rounding")
        if getattr(r, "data", None) != "onnx":
            raise Unsupported(f"{op.name} without qnn.rounding = \"onnx\" (only ONNX float islands lower)")
        if op.operands[0].type.element_type != f32:
            raise Unsupported(f"{op.name} on {op.operands[0].type.element_type} (float32 only)")
        return
    x_q, out_q = qp(op.operands[0]), qp(op.results[0])
    if x_q.per_axis or out_q.per_axis:
        raise Unsupported(f"{op.name} in float with per-axis parameters")
    _zp(x_q), _zp(out_q)


_no_contract = decompose_onnx.no_contract


def _input(e: Emitter, low: Lowering, op, pre=None) -> SSAValue:
    """The op's input as float32: the nn operand, or the qnn operand dequantized
    (`f32(q - zp) * s`, one rounding); `pre(s, v)` applied to each value if given."""
    x_v = op.operands[0]
    if _is_nn(op) and pre is None:
        return x_v
    shape = list(qint.shape_of(x_v))
    src = x_v if _is_nn(op) else e.storage(x_v)
    x_q = None if _is_nn(op) else qp(x_v)

    def body(s, a, _o):
        v = a if x_q is None else _no_contract(s, _dequant_scalar(s, a, x_q))
        return pre(s, v) if pre is not None else v

    return low.generic([src], [identity(len(shape))], TensorType(f32, shape), identity(len(shape)), body)


def _out_type(op, shape):
    return TensorType(f32, shape) if _is_nn(op) else int_tensor(shape, qp(op.results[0]).bits)


def _finish(op):
    """The last step of a body: the float result (nn), or QuantizeLinear and the clamp (qnn)."""
    if _is_nn(op):
        return lambda s, y: y
    return lambda s, y: _quantize_scalar(s, y, op)


def _fma_sum(low: Lowering, x: SSAValue, in_map, out_shape, n_par: int, n_red: int, init: float) -> SSAValue:
    """An in-order float32 sum `acc = fma(x, 1.0, acc)` (= acc + x, one rounding) over the
    reduction loops in order, from `init`: a float reduction TVM may reorder is not one.
    A single step is elementwise, `init + x` (TVM's reshape analysis rejects a block-less
    loop nest whose input and output have the same number of elements)."""
    red_extents = [qint.shape_of(x)[k] for k, r in enumerate(in_map.data.results)
                   if getattr(r, "position", -1) >= n_par]
    if math.prod(red_extents) == 1:
        from xdsl.ir.affine import AffineDimExpr

        flat = amap(n_par, [r if not isinstance(r, AffineDimExpr) or r.position < n_par else 0
                            for r in in_map.data.results])
        return low.generic([x], [flat], TensorType(f32, out_shape), identity(n_par),
                           lambda s, a, _o: s.emit(arith.AddfOp(s.const(init, f32), a)))

    def body(s, a, one, acc):
        return s.emit(mathd.FmaOp(a, one, acc))

    # the 1.0 is a tensor operand: TVM's reshape analysis also rejects a block-less loop nest
    # with a single input
    one = decompose_onnx._float_tensor(low, np.ones(1, F32))
    return low.generic([x, one], [in_map, amap(n_par + n_red, [0])], TensorType(f32, out_shape),
                       amap(n_par + n_red, [dim(i) for i in range(n_par)]),
                       body, iterators=[_PAR] * n_par + [_RED] * n_red, init=init)


def _done(e: Emitter, low: Lowering, value: SSAValue, shape) -> SSAValue:
    value = low.reshape(value, shape)
    e.ops.extend(low.ops)
    return value


# ----- softmax ----------------------------------------------------------------------------------

_EXP = {k: float(F32(v)) for k, v in dict(
    lower=-103.9720840454, rounding_bias=12582912.0, log2_reciprocal=1.44269504088896341,
    log2_high=-6.93145752e-1, log2_low=-1.42860677e-6,
    poly_0=float.fromhex("0x1.694000p-10"), poly_1=float.fromhex("0x1.125edcp-7"),
    poly_2=float.fromhex("0x1.555b5ap-5"), poly_3=float.fromhex("0x1.555450p-3"),
    poly_4=float.fromhex("0x1.fffff6p-2"), poly_56=1.0).items()}


def _mlas_exp(s, v):
    """ort._exp_avx512f of v = x + (-max): clamp, range reduction and polynomial with FMAs,
    `p * 2^m` rounded once (in float64: exact product, one rounding to float32)."""
    k = {n: s.const(c, f32) for n, c in _EXP.items()}

    def fma(a, b, c):
        return s.emit(mathd.FmaOp(a, b, c))

    v = s.emit(arith.MaximumfOp(k["lower"], v))
    biased = fma(v, k["log2_reciprocal"], k["rounding_bias"])
    m = s.emit(arith.SubfOp(biased, k["rounding_bias"]))
    v = fma(m, k["log2_high"], v)
    v = fma(m, k["log2_low"], v)
    p = fma(k["poly_0"], v, k["poly_1"])
    for c in ("poly_2", "poly_3", "poly_4", "poly_56", "poly_56"):
        p = fma(p, v, k[c])
    mi = s.emit(arith.FPToSIOp(m, I64))  # m in [-150, 0]: v <= 0 and clamped below
    two_m = s.emit(arith.BitcastOp(s.shl(s.add(mi, 1023), 52), f64))
    return s.emit(arith.TruncFOp(s.emit(arith.MulfOp(s.emit(arith.ExtFOp(p, f64)), two_m)), f32))


def lower_softmax(e: Emitter, op) -> SSAValue:
    """ORT's float Softmax (MlasComputeSoftmax, AVX-512F kernels) along the last axis."""
    _check(op)
    shape = list(qint.shape_of(op.operands[0]))
    if not shape or shape[-1] == 0 or math.prod(shape) == 0:
        raise Unsupported(f"{op.name} of an empty tensor or a scalar")
    d = shape[-1]
    rows = math.prod(shape[:-1])
    beta = float(op.attr("beta", 1.0) or 1.0)
    low = Lowering()
    pre = None
    if beta != 1.0:  # ONNX Softmax has no beta: a float32 Mul by beta in front of it
        b32 = float(F32(beta))

        def pre(s, v):
            return _no_contract(s, s.emit(arith.MulfOp(v, s.const(b32, f32))))
    x = low.reshape(_input(e, low, op, pre), (rows, d))
    rmap = amap(2, [dim(0)])
    mx = low.generic([x], [identity(2)], TensorType(f32, [rows]), rmap,
                     lambda s, a, acc: s.emit(arith.MaximumfOp(acc, a)), iterators=[_PAR, _RED], init=-math.inf)
    ex = low.generic([x, mx], [identity(2), rmap], TensorType(f32, [rows, d]), identity(2),
                     lambda s, a, m, _o: _mlas_exp(s, s.emit(arith.AddfOp(a, s.emit(arith.NegfOp(m))))))
    j = -(-d // 16)
    padded = low.pad(ex, [0, 0], [0, 16 * j - d], 0.0)  # the masked tail adds +0.0
    lanes3 = low.reshape(padded, (rows, j, 16))
    lanes = _fma_sum(low, lanes3, amap(3, [dim(0), dim(2), dim(1)]), [rows, 16], 2, 1, 0.0)

    def tree(s, *args):
        ln = args[:16]
        a = [s.emit(arith.AddfOp(ln[i], ln[i + 8])) for i in range(8)]
        h = [s.emit(arith.AddfOp(a[i], a[i + 1])) for i in range(0, 8, 2)]
        total = s.emit(arith.AddfOp(s.emit(arith.AddfOp(h[0], h[1])), s.emit(arith.AddfOp(h[2], h[3]))))
        return s.emit(arith.DivfOp(s.const(1.0, f32), total))

    scale = low.generic([lanes] * 16, [amap(1, [dim(0), k]) for k in range(16)], TensorType(f32, [rows]),
                        identity(1), tree)
    finish = _finish(op)
    out = low.generic([ex, scale], [identity(2), rmap], _out_type(op, [rows, d]), identity(2),
                      lambda s, a, sc, _o: finish(s, _no_contract(s, s.emit(arith.MulfOp(a, sc)))))
    return _done(e, low, out, shape)


# ----- average pool -----------------------------------------------------------------------------


def _global_avg(low: Lowering, x: SSAValue, shape, finish, out_type) -> SSAValue:
    """MlasPoolGlobalKernel on NHWC float32 x -> [N, C] (ort.mlas_global_avg_f32)."""
    n, h, w, c = shape
    size = h * w
    flat = low.reshape(x, (n, size, c))
    full = size - size % 4
    q = full // 4
    inputs, maps = [], []
    if q:
        head = flat if full == size else low.add(tensor.ExtractSliceOp(
            flat, [0, 0, 0], [n, full, c], [1, 1, 1], TensorType(f32, [n, full, c])))
        lanes = _fma_sum(low, low.reshape(head, (n, q, 4, c)), amap(4, [dim(0), dim(3), dim(1), dim(2)]),
                         [n, 4, c], 3, 1, 0.0)
        inputs += [lanes] * 4
        maps += [amap(2, [dim(0), k, dim(1)]) for k in range(4)]
    rest = list(range(full, size))
    inputs += [flat] * len(rest)
    maps += [amap(2, [dim(0), i, dim(1)]) for i in rest]

    def body(s, *args):
        if q:
            ln = args[:4]
            acc = s.emit(arith.AddfOp(s.emit(arith.AddfOp(ln[0], ln[2])), s.emit(arith.AddfOp(ln[1], ln[3]))))
        else:  # (0 + 0) + (0 + 0)
            acc = s.const(0.0, f32)
        for v in args[4 if q else 0:-1]:
            acc = s.emit(arith.AddfOp(acc, v))
        return finish(s, s.emit(arith.DivfOp(acc, s.const(float(size), f32))))

    return low.generic(inputs, maps, out_type, identity(2), body)


def lower_avg_pool(e: Emitter, op) -> SSAValue:
    from qdialect.interp_onnx import onnx_opset

    _check(op)
    n, h, w, c = qint.shape_of(op.operands[0])
    kh, kw = op.attr("kernel")
    sh, sw = op.attr("strides", [1, 1]) or [1, 1]
    pt, pb, pl, pr = op.attr("padding", [0, 0, 0, 0]) or [0, 0, 0, 0]
    dil = op.attr("dilations", None) if "dilations" in getattr(op, "ATTRS", {}) else None
    if dil is not None and list(dil) != [1, 1]:
        raise Unsupported(f"{op.name} in float with dilations {list(dil)}")
    out_shape = list(qint.shape_of(op.results[0]))
    _, oh, ow, _ = out_shape
    opset = onnx_opset(op) or 0
    padded_any = any((pt, pb, pl, pr))
    whole = (kh, kw) == (h, w) and not padded_any
    if _is_nn(op):
        kind = "global" if whole else None
    else:
        kind = "global" if whole and (sh, sw) == (1, 1) and opset < 19 else None
    if kind is None:
        if opset >= 19:
            kind = "v19"
        elif sw <= 2 and kh <= 32 and kw <= 32 and 2048 - 3 - pl - pr >= w:
            kind = "vector"
        else:
            kind = "generic"
    low = Lowering()
    finish = _finish(op)
    x = _input(e, low, op)
    if kind == "global":
        y = _global_avg(low, x, (n, h, w, c), finish, _out_type(op, [n, c]))
        return _done(e, low, y, out_shape)
    if kh * kw > MAX_UNROLLED_TAPS:
        raise Unsupported(f"{op.name} in float with a {kh}x{kw} window (> {MAX_UNROLLED_TAPS} taps, unrolled)")
    ys = np.arange(oh) * sh - pt
    xs = np.arange(ow) * sw - pl
    rows_in = np.minimum(ys + kh, h) - np.maximum(ys, 0)
    cols_in = np.minimum(xs + kw, w) - np.maximum(xs, 0)
    counts = rows_in[:, None] * cols_in[None, :]
    if np.any(counts <= 0):
        raise Unsupported(f"{op.name} in float with a window that lies entirely in the padding")
    if oh != (h + pt + pb - kh) // sh + 1 or ow != (w + pl + pr - kw) // sw + 1:
        raise Unsupported(f"{op.name} in float with an output shape other than floor mode's")
    # columns padded with +0.0 (the vector kernel's zero buffer), then rows with -0.0 (skipped rows)
    xp = low.pad(x, [0, 0, pl, 0], [0, 0, pr, 0], 0.0)
    xp = low.pad(xp, [0, pt, 0, 0], [0, pb, 0, 0], -0.0)
    wins = {}
    for ky in range(kh):
        for kx in range(kw):
            wins[ky, kx] = low.add(tensor.ExtractSliceOp(xp, [0, ky, kx, 0], [n, oh, ow, c], [1, sh, sw, 1],
                                                         TensorType(f32, [n, oh, ow, c])))
    taps = list(wins)
    cnt = low.reshape(decompose_onnx._float_tensor(low, counts.astype(F32).reshape(-1)), (oh, ow))

    def body(s, *args):
        vals = dict(zip(taps, args[:len(taps)]))
        count = args[len(taps)]
        if kind == "vector":
            acc = None
            for kx in range(kw):
                col = vals[0, kx]
                for ky in range(1, kh):
                    col = s.emit(arith.AddfOp(col, vals[ky, kx]))
                acc = col if acc is None else s.emit(arith.AddfOp(acc, col))
        else:
            acc = s.const(0.0, f32)
            for t in taps:
                acc = s.emit(arith.AddfOp(acc, vals[t]))
        return finish(s, s.emit(arith.DivfOp(acc, count)))

    maps = [identity(4)] * len(taps) + [amap(4, [dim(1), dim(2)])]
    y = low.generic([wins[t] for t in taps] + [cnt], maps, _out_type(op, out_shape), identity(4), body)
    return _done(e, low, y, out_shape)


# ----- mean -------------------------------------------------------------------------------------


def _eigen_row_sums(low: Lowering, x: SSAValue, rows: int, n: int, align: int) -> SSAValue:
    """ort._eigen_sum_rows of [rows, n] x for rows whose start is `align` floats past a
    16-byte boundary -> [rows]."""
    start = min((4 - align) % 4, n)
    nb = (n - start) // 4
    end4 = start + 4 * nb
    rmap = [dim(0)]
    if nb == 0:  # left to right
        return low.generic([x] * n, [amap(1, rmap + [i]) for i in range(n)], TensorType(f32, [rows]), identity(1),
                           lambda s, *a: _fold(s, a[:-1]))
    inputs, maps = [], []
    pairs = nb // 2
    if nb >= 2:
        body8 = x if (start, 8 * pairs) == (0, n) else low.add(tensor.ExtractSliceOp(
            x, [0, start], [rows, 8 * pairs], [1, 1], TensorType(f32, [rows, 8 * pairs])))
        acc = _fma_sum(low, low.reshape(body8, (rows, pairs, 2, 4)), amap(4, [dim(0), dim(3), dim(1), dim(2)]),
                       [rows, 2, 4], 3, 1, -0.0)  # from -0.0: the first block itself
        inputs += [acc] * 8
        maps += [amap(1, rmap + [b, lane]) for b in (0, 1) for lane in range(4)]
        odd = nb % 2
        lead = list(range(start + 8 * pairs, end4)) if odd else []
    else:
        lead = list(range(start, start + 4))
    inputs += [x] * len(lead)
    maps += [amap(1, rmap + [i]) for i in lead]
    extra = list(range(start)) + list(range(end4, n))
    inputs += [x] * len(extra)
    maps += [amap(1, rmap + [i]) for i in extra]

    def body(s, *args):
        args = list(args[:-1])
        if nb >= 2:
            p, args = args[:8], args[8:]
            p0 = [s.emit(arith.AddfOp(p[i], p[4 + i])) for i in range(4)]
            if lead:
                p0 = [s.emit(arith.AddfOp(p0[i], args[i])) for i in range(4)]
                args = args[4:]
        else:
            p0, args = args[:4], args[4:]
        res = s.emit(arith.AddfOp(s.emit(arith.AddfOp(p0[0], p0[2])), s.emit(arith.AddfOp(p0[1], p0[3]))))
        return _fold(s, [res] + args)

    return low.generic(inputs, maps, TensorType(f32, [rows]), identity(1), body)


def _fold(s, vals):
    acc = vals[0]
    for v in vals[1:]:
        acc = s.emit(arith.AddfOp(acc, v))
    return acc


def lower_mean(e: Emitter, op) -> SSAValue:
    """ORT's float ReduceMean over trailing axes in ONNX order (ort.reduce_mean_f32, base offset 0)."""
    _check(op)
    shape = list(qint.shape_of(op.operands[0]))
    nd = len(shape)
    axes = sorted({int(a) % nd for a in op.attr("axes")}) if nd else []
    if not axes:
        raise Unsupported(f"{op.name} in float with no axes")
    kept = [i for i in range(nd) if i not in axes and shape[i] != 1]
    reduced = [i for i in axes if shape[i] != 1]
    if kept and reduced and max(kept) > min(reduced):
        raise Unsupported(f"{op.name} in float over axes {axes} of {shape} (ORT's ReduceMean reduces them "
                          "with its RK / KRK paths, which are not modelled; only trailing axes in ONNX order)")
    n = math.prod(shape[i] for i in axes)
    rows = math.prod(shape) // n if n else 0
    if n == 0 or rows == 0:
        raise Unsupported(f"{op.name} in float of an empty tensor")
    out_shape = list(qint.shape_of(op.results[0]))
    low = Lowering()
    x = low.reshape(_input(e, low, op), (rows, n))
    classes = sorted({(r * n) % 4 for r in range(min(rows, 4))})
    sums = [_eigen_row_sums(low, x, rows, n, a) for a in classes]
    finish = _finish(op)

    def body(s, *args):
        total = args[0]
        if len(classes) > 1:
            r = s.emit(arith.IndexCastOp(s.emit(IndexOp(0)), I64))
            a = s.band(s.mul(r, n), 3)
            for cls, v in zip(classes[1:], args[1:len(classes)]):
                total = s.emit(arith.SelectOp(s.cmp("eq", a, cls), v, total))
        return finish(s, s.emit(arith.DivfOp(total, s.const(float(F32(n)), f32))))

    y = low.generic(sums, [identity(1)] * len(sums), _out_type(op, [rows]), identity(1), body)
    return _done(e, low, y, out_shape)


decompose_onnx.FLOAT_LOWERINGS.update({
    qnn.SoftmaxOp: lower_softmax,
    qnn.AvgPool2DOp: lower_avg_pool,
    qnn.MeanOp: lower_mean,
})
decompose.DECOMPOSITIONS.update({
    nn.SoftmaxOp: lower_softmax,
    nn.AvgPool2DOp: lower_avg_pool,
    nn.MeanOp: lower_mean,
})
