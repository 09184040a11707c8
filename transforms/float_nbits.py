"""ONNX Runtime's MatMulNBits (8-bit weights, block 32, accuracy level 4, MLAS CompInt8 on AVX-512
VNNI) lowered to L3 bit for bit, for `qnn-decompose`: an `nn.fully_connected` marked `ort_nbits`.

The operation order is `qdialect.reference.onnxruntime_nbits.matmul_nbits`'s (the spec), written
with upstream arith / linalg / tensor / math.fma ops:

1. A padded to whole blocks of 32, per row and block `amax` (a max reduction), `scale_a =
   amax / 127`, `inv = 127 / amax` (0 when amax = 0), `q = rint(a * inv)` (ties to even) in int32,
   `sum_a = scale_a * f32(sum q)`;
2. the int32 dot products of the blocks in groups of four, the lane pairs (0, 2), (1, 3) of each
   128-bit quarter pre-added in integer (one reduction generic whose loops split k into
   (group, hsel, qh, ql, t, e, i): k = 128 g + 64 hsel + 32 qh + 16 ql + 8 t + 4 e + i), then per
   lane an in-order `math.fma(f32(dot), f32(scale_a * scale_w), acc16)` chain over the groups from
   +0; `acc8 = acc16[0:8] + acc16[8:16]`; the remaining blocks one at a time,
   `acc8 = fma(f32(dot lane), scale, acc8)`;
3. the horizontal sum per column: C4's `((l0 + l1) + l2) + l3 + (((l4 + l5) + l6) + l7)` for the
   first N - N % 4 columns, C1's halves folded `((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))`
   for the rest;
4. `+ bias`, then `+ t` with `t = fma(sum_a[b], -f32(scale_w * zp), t)` over the blocks from +0.

Each stage is a reduction generic (TVM keeps it in a buffer); products sit behind
`decompose_onnx.no_contract`.  Registered into `transforms.decompose.DECOMPOSITIONS` on import
(wrapping whatever lowering nn.fully_connected had without `ort_nbits`, and qnn.dequantize's, which
records the stored weights and their parameters for the layer it feeds: it is decomposed first).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import IntegerType, TensorType, f32
from xdsl.ir import SSAValue

from qdialect.dialects import nn, qint, qnn
from qdialect.reference import onnxruntime_nbits as nbits
from transforms import decompose, decompose_onnx
from transforms.decompose import Emitter, Unsupported
from transforms.float_edges import _float_constant
from transforms.lower_to_linalg import Lowering, amap, dim, identity

F32 = np.float32
I32 = IntegerType(32)
BLOCK = nbits.BLOCK
_no_contract = decompose_onnx.no_contract


_WEIGHTS: dict[int, tuple] = {}
"""Weights of the ort_nbits fully connected layers, recorded when their qnn.dequantize is decomposed
(it is, before the layer): id(the dequantized value) -> (value, (stored [N, K], qparams))."""


def _record_dequantize(base):
    def lower(e: Emitter, op) -> SSAValue:
        v = base(e, op)
        if any(isinstance(u.operation, nn.FullyConnectedOp) and u.index == 1
               and u.operation.attr("ort_nbits", None) is not None for u in op.results[0].uses):
            src = op.operands[0]
            stored = np.asarray(decompose_onnx._const_array(src, "MatMulNBits weights"), np.int64)
            if len(_WEIGHTS) > 4096:
                _WEIGHTS.clear()
            _WEIGHTS[id(v)] = (v, (stored, qnn.qtype(src).qparams()))
        return v

    return lower


def _weights(op):
    """(uint8 weights [K, N] int64, scale [N] f32, zero point [N] int64) as MatMulNBits stores them."""
    wv = op.operands[1]
    hit = _WEIGHTS.get(id(wv))
    if hit is None or hit[0] is not wv:
        raise Unsupported("nn.fully_connected ort_nbits whose weights are not a qnn.dequantize of constants")
    stored, q = hit[1]  # [N, K]
    n = stored.shape[0]
    scale = np.broadcast_to(np.asarray(q.scale, np.float64).reshape(-1), (n,)).astype(F32)
    zp = np.broadcast_to(np.asarray(q.zero_point, np.int64).reshape(-1), (n,))
    dtype = np.int8 if q.storage_min < 0 else np.uint8
    return nbits.blockwise_weights(stored.T.astype(dtype), scale, zp.astype(dtype), 1)


def _f32_const(low: Lowering, values: np.ndarray) -> SSAValue:
    v = _float_constant(low, np.asarray(values, F32).reshape(-1), f32)
    return v if np.ndim(values) == 1 else low.reshape(v, np.shape(values))


def _i32_const(low: Lowering, values: np.ndarray) -> SSAValue:
    arr = np.asarray(values, np.int64)
    c = low.add(decompose.dense_constant(arr.reshape(-1), 32))
    return c if arr.ndim == 1 else low.reshape(c, arr.shape)


def _abs(s, x) -> SSAValue:
    bits = s.emit(arith.BitcastOp(x, I32))
    return s.emit(arith.BitcastOp(s.band(bits, s.const(0x7FFFFFFF, I32)), f32))


def _fma(s, a, b, c) -> SSAValue:
    return s.emit(mathd.FmaOp(a, b, c))


def _tof(s, x) -> SSAValue:
    return s.emit(arith.SIToFPOp(x, f32))


def _imac(s, x, y, acc) -> SSAValue:
    return s.emit(arith.AddiOp(acc, s.emit(arith.MuliOp(x, y))))


def lower_matmul_nbits(e: Emitter, op) -> SSAValue:
    if op.attr("ort_nbits", None) != nbits.RECIPE:
        raise Unsupported(f"nn.fully_connected ort_nbits = {op.attr('ort_nbits', None)!r} (only {nbits.RECIPE})")
    try:
        nbits.require_recipe()
    except nbits.NbitsUnsupported as err:
        raise Unsupported(str(err)) from None
    w_u8, scale_w, zp = _weights(op)
    a = op.operands[0]
    shape_a = list(qint.shape_of(a))
    k = shape_a[-1]
    n = w_u8.shape[1]
    m = int(np.prod(shape_a[:-1], dtype=np.int64))
    nb = -(-k // BLOCK)
    kp = nb * BLOCK
    groups = nb // 4
    low = Lowering()

    # 1. A quantized per row and block
    a2 = low.reshape(a, [m, k])
    if kp != k:
        a2 = low.pad(a2, [0, 0], [0, kp - k], 0.0)
    a3 = low.reshape(a2, [m, nb, BLOCK])
    amax = low.generic([a3], [amap(3, [dim(0), dim(1), dim(2)])], TensorType(f32, [m, nb]), amap(3, [dim(0), dim(1)]),
                       lambda s, x, acc: s.emit(arith.MaximumfOp(acc, _abs(s, x))),
                       iterators=["parallel", "parallel", "reduction"], init=0.0)
    scale_a = low.generic([amax], [identity(2)], TensorType(f32, [m, nb]), identity(2),
                          lambda s, x, _o: s.emit(arith.DivfOp(x, s.const(127.0, f32))))

    def inverse(s, x, _o):
        zero = s.const(0.0, f32)
        nz = s.emit(arith.CmpfOp(x, zero, "one"))
        safe = s.emit(arith.SelectOp(nz, x, s.const(1.0, f32)))
        return s.emit(arith.SelectOp(nz, s.emit(arith.DivfOp(s.const(127.0, f32), safe)), zero))

    inv = low.generic([amax], [identity(2)], TensorType(f32, [m, nb]), identity(2), inverse)
    q = low.generic([a3, inv], [identity(3), amap(3, [dim(0), dim(1)])], TensorType(I32, [m, nb, BLOCK]), identity(3),
                    lambda s, x, iv, _o: s.trunc(s.round_half_even(_no_contract(s, s.emit(arith.MulfOp(x, iv)))), 32))
    qsum = low.generic([q], [identity(3)], TensorType(I32, [m, nb]), amap(3, [dim(0), dim(1)]),
                       lambda s, x, acc: s.emit(arith.AddiOp(acc, x)),
                       iterators=["parallel", "parallel", "reduction"], init=0)
    sum_a = low.generic([scale_a, qsum], [identity(2)] * 2, TensorType(f32, [m, nb]), identity(2),
                        lambda s, sc, t, _o: _no_contract(s, s.emit(arith.MulfOp(sc, _tof(s, t)))))

    # weights [nb, 32, N] (the tail block padded with 0), the combined scales [M, nb, N]
    wp = np.zeros((kp, n), np.int64)
    wp[:k] = w_u8
    w3 = _i32_const(low, wp.reshape(nb, BLOCK, n))
    sw = _f32_const(low, scale_w)
    combined = low.generic([scale_a, sw], [amap(3, [dim(0), dim(1)]), amap(3, [dim(2)])], TensorType(f32, [m, nb, n]),
                           identity(3), lambda s, x, y, _o: _no_contract(s, s.emit(arith.MulfOp(x, y))))

    # 2. groups of four blocks: 16 lanes (qh, ql, hsel, e), integer pair pre-adds, an fma chain over g
    # (k in a block = 16 ql + 8 t + 4 e + i; block = 4 g + 2 hsel + qh)
    q6 = low.reshape(q, [m, nb, 2, 2, 2, 4])
    w6 = low.reshape(w3, [nb, 2, 2, 2, 4, n])
    if groups:
        # loops (m, g, qh, ql, hsel, e, n | t, i)
        mm, g, qh, ql, hsel, e_, nn_, t, i = (dim(j) for j in range(9))
        block = g * 4 + hsel * 2 + qh
        pairdot = low.generic([q6, w6], [amap(9, [mm, block, ql, t, e_, i]), amap(9, [block, ql, t, e_, i, nn_])],
                              TensorType(I32, [m, groups, 2, 2, 2, 2, n]), amap(9, [mm, g, qh, ql, hsel, e_, nn_]),
                              _imac, iterators=["parallel"] * 7 + ["reduction"] * 2, init=0)
        # loops (m, qh, ql, hsel, e, n | g)
        mm, qh, ql, hsel, e_, nn_, g = (dim(j) for j in range(7))
        acc16 = low.generic([pairdot, combined],
                            [amap(7, [mm, g, qh, ql, hsel, e_, nn_]), amap(7, [mm, g * 4 + hsel * 2 + qh, nn_])],
                            TensorType(f32, [m, 2, 2, 2, 2, n]), amap(7, [mm, qh, ql, hsel, e_, nn_]),
                            lambda s, x, c, acc: _fma(s, _tof(s, x), c, acc),
                            iterators=["parallel"] * 6 + ["reduction"], init=0.0)
        d = [dim(j) for j in range(5)]
        acc8 = low.generic([acc16, acc16], [amap(5, [d[0], 0, d[1], d[2], d[3], d[4]]),
                                            amap(5, [d[0], 1, d[1], d[2], d[3], d[4]])],
                           TensorType(f32, [m, 2, 2, 2, n]), identity(5),
                           lambda s, x, y, _o: s.emit(arith.AddfOp(x, y)))
    else:
        acc8 = low.filled(TensorType(f32, [m, 2, 2, 2, n]), 0.0)
    left = nb - 4 * groups
    if left:
        b0 = 4 * groups
        q4 = low.reshape(q, [m, nb, 8, 4])
        w4 = low.reshape(w3, [nb, 8, 4, n])
        # loops (m, bl, ql, hsel, e, n | i): lane = 4 ql + 2 hsel + e
        mm, bl, ql, hsel, e_, nn_, i = (dim(j) for j in range(7))
        lane = ql * 4 + hsel * 2 + e_
        dot8 = low.generic([q4, w4], [amap(7, [mm, bl + b0, lane, i]), amap(7, [bl + b0, lane, i, nn_])],
                           TensorType(I32, [m, left, 2, 2, 2, n]), amap(7, [mm, bl, ql, hsel, e_, nn_]),
                           _imac, iterators=["parallel"] * 6 + ["reduction"], init=0)
        # loops (m, ql, hsel, e, n | bl), the blocks in order
        mm, ql, hsel, e_, nn_, bl = (dim(j) for j in range(6))
        acc8 = low.generic([dot8, combined], [amap(6, [mm, bl, ql, hsel, e_, nn_]), amap(6, [mm, bl + b0, nn_])],
                           TensorType(f32, [m, 2, 2, 2, n]), amap(6, [mm, ql, hsel, e_, nn_]),
                           lambda s, x, c, acc: _fma(s, _tof(s, x), c, acc),
                           iterators=["parallel"] * 5 + ["reduction"], init=acc8)

    # 4. (first) the zero-point term t over the blocks from +0
    wsum = _f32_const(low, (-scale_w * zp.astype(F32)).astype(F32))
    tz = low.generic([sum_a, wsum], [amap(3, [dim(0), dim(2)]), amap(3, [dim(1)])], TensorType(f32, [m, n]),
                     amap(3, [dim(0), dim(1)]), lambda s, x, y, acc: _fma(s, x, y, acc),
                     iterators=["parallel", "parallel", "reduction"], init=0.0)

    # 3. horizontal sums (C4 / C1 by column), + bias, + t
    n4 = n - n % 4
    c4mask = _f32_const(low, (np.arange(n) < n4).astype(F32))
    lane_maps = [amap(2, [dim(0), (j >> 2) & 1, (j >> 1) & 1, j & 1, dim(1)]) for j in range(8)]
    inputs = [acc8] * 8 + [c4mask]
    maps = lane_maps + [amap(2, [dim(1)])]
    has_bias = len(op.operands) > 2
    if has_bias:
        inputs.append(op.operands[2])
        maps.append(amap(2, [dim(1)]))
    inputs.append(tz)
    maps.append(identity(2))

    def finish(s, *args):
        ls, mask = args[:8], args[8]
        rest = args[9:-1]
        add = lambda x, y: s.emit(arith.AddfOp(x, y))  # noqa: E731
        lo, hi = ls[0], ls[4]
        for j in (1, 2, 3):
            lo, hi = add(lo, ls[j]), add(hi, ls[4 + j])
        c4 = add(lo, hi)
        c1 = add(add(add(ls[0], ls[4]), add(ls[2], ls[6])), add(add(ls[1], ls[5]), add(ls[3], ls[7])))
        c = s.emit(arith.SelectOp(s.emit(arith.CmpfOp(mask, s.const(0.0, f32), "one")), c4, c1))
        if has_bias:
            c = add(c, rest[0])
            rest = rest[1:]
        return add(c, rest[0])

    y = low.generic(inputs, maps, TensorType(f32, [m, n]), identity(2), finish)
    y = low.reshape(y, shape_a[:-1] + [n])
    e.ops.extend(low.ops)
    return y


def _wrap(base):
    def lower(e: Emitter, op) -> SSAValue:
        if op.attr("ort_nbits", None) is None:
            if base is None:
                raise Unsupported(f"{op.name} (no lowering)")
            return base(e, op)
        return lower_matmul_nbits(e, op)

    return lower


decompose.DECOMPOSITIONS[nn.FullyConnectedOp] = _wrap(decompose.DECOMPOSITIONS.get(nn.FullyConnectedOp))
decompose.DECOMPOSITIONS[qnn.DequantizeOp] = _record_dequantize(decompose.DECOMPOSITIONS[qnn.DequantizeOp])
