"""`qnn-decompose` for the ONNX profiles (`rounding = "onnxruntime" | "onnx"`).

The recipes are `qdialect.interp_onnx`'s; this module writes each as qint ops
that compute the same integers:

| op (profile) | L2 |
| --- | --- |
| conv2d / depthwise_conv2d / fully_connected (`onnxruntime`: QLinearConv, QGemm, QLinearMatMul) | qint accumulation (exact) -> qint.rescale `float_even` with ORT's float32 scale `f32(f32(x_s * w_s[c]) / y_s)`, clamp |
| conv2d / fully_connected, uint8 x int8 on AVX2 without VNNI (`onnxruntime`) | L3: the patches in (ky, kx, c) order, their even and odd K halves (strided slices), one reduction generic summing `sat16(a0 w0 + a1 w1) - w_zp (a0 + a1)` in int32; the constant zero-point correction and bias (qint.bias_add), the same rescale |
| conv2d / depthwise_conv2d / fully_connected (`onnx`: ORT's float Conv / Gemm) | L3 directly: activations dequantized once into float32, MLAS's fused multiply-add chains in K order (math.fma, in-order loops in TVM), its K blocks and path choice, the one-filter-per-group kernel's rounded products in groups of 4, bias, QuantizeLinear |
| batch_matmul (`onnxruntime`: QLinearMatMul of two activations) | qint.batch_matmul -> rescale with `f32(f32(a_s * b_s) / y_s)` |
| mean over H, W (`onnxruntime`: QLinearGlobalAveragePool) | qint.reduce_sum -> rescale `float_even`, scale `f32(x_s / f32(y_s * f32(N)))` |
| mean over H, W (`onnx`: float GlobalAveragePool) | MLAS's four-lane global sum, `/ HW`, QuantizeLinear |
| avg_pool2d (`onnxruntime`: QLinearAveragePool) | the taps' strided slices, dequantized and summed in (ky, kx) order in float32, `/ count`, `rint(avg / s + zp)` |
| softmax (`onnxruntime`: QLinearSoftmax) | qint.softmax `ort_float` |
| add / sub / mul, 8-bit (both profiles) | one 65536-entry qint.table indexed by both operands' stored bytes, computed from the reference |
| logistic / tanh / hard_swish / hard_sigmoid / leaky_relu / requantize, <= 16-bit (both) | qint.table computed from the reference |
| concatenation (both) | a qint.table per input whose parameters differ (QLinearConcat's own tables), then tensor.concat |
| resize_nearest_neighbor by an integer factor | a broadcasting linalg.generic, collapsed |
| quantize (both) | MlasQuantizeLinear: `x / s`, clamp to [lo - z, hi - z] (NaN: lo - z), ties to even, `+ z` (`transforms.float_edges`) |

Unsigned (uint8) storage: the accumulating ops and reductions read their
activations as `x - 128` with zero point `zp - 128` (the same differences, so
the same sums), written as one wrapped qint.add; their outputs are written
straight into the uint8 result (the rescale clamps to [0, 255]).  Tables take
the stored bytes as they are.

ORT's float paths that this table does not list (float softmax, average
pools, ReduceMean, 16-bit add / sub / mul, and the float-island nn ops) are
lowered by `transforms.float_reductions` and `transforms.float_islands`,
registered in `FLOAT_LOWERINGS` / `decompose.DECOMPOSITIONS`; a recipe here
that refuses an op falls back to them.

Which dot products saturate is the modelled CPU's (`onnxruntime_kernels.detect_isa`: this host,
or `QDIALECT_ORT_ISA`); the TVM build runs on the host, so the lowered IR carries the
saturation itself and forcing `avx2` on a VNNI machine reproduces ORT on an AVX2 one.

Not lowered (the interpreter runs them, by name): ORT's float MatMul of two
activations, ReduceMean over non-trailing axes.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineConstantExpr

from qdialect.dialects import qint, qnn
from qdialect.qparams import ONNX_ROUNDINGS, QParams
from qdialect.reference import elementwise as ew
from transforms.decompose import Emitter, Unsupported, clamp_bounds, float_spec, int_tensor, knobs, qp, storage_type

F32 = np.float32


def _f32(q: QParams) -> np.ndarray:
    return np.asarray(q.scale, dtype=np.float64).astype(F32).reshape(-1)


def _zp(q: QParams) -> int:
    zps = set(np.asarray(q.zero_point).reshape(-1).tolist())
    if len(zps) != 1:
        raise Unsupported("per-channel zero points that differ")
    return int(zps.pop())


def _bounds(op, out_q: QParams) -> tuple[int, int]:
    k = knobs(op)
    lo, hi = ew.type_bounds(out_q)
    amin, amax = k["act_min"], k["act_max"]
    return max(lo, amin) if amin is not None else lo, min(hi, amax) if amax is not None else hi


def _signed_activation(e: Emitter, v: SSAValue, q: QParams) -> tuple[SSAValue, int]:
    """Stored integers read as signed, and their zero point: uint8 `x` becomes `x - 128`."""
    x = e.storage(v)
    if q.signed:
        return x, _zp(q)
    if q.bits not in (8, 16):
        raise Unsupported(f"unsigned {q.bits}-bit activations")
    half = 1 << (q.bits - 1)
    shape = qint.shape_of(x)
    zero = e.constant(np.zeros([1] * len(shape), np.int64), q.bits)
    return e.qint(qint.AddOp, [x, zero], int_tensor(shape, q.bits), lhs_zp=-half), _zp(q) - half


def _signed_weights(e: Emitter, v: SSAValue, q: QParams) -> tuple[SSAValue, int]:
    zps = np.asarray(q.zero_point).reshape(-1)
    if q.per_axis and len(set(zps.tolist())) > 1:
        # per-channel zero points that differ: the differences w - zp[c] as 16-bit weights, zero point 0
        arr = _const_array(v, "weights with per-channel zero points").astype(np.int64)
        shape = [1] * arr.ndim
        shape[q.axis] = zps.size
        return e.constant(arr - zps.reshape(shape), 16), 0
    if q.signed:
        return e.storage(v), _zp(q)
    if q.bits != 8:
        raise Unsupported(f"unsigned {q.bits}-bit weights")
    owner = v.owner
    try:  # shifted at compile time
        arr = _const_array(v, "weights").astype(np.int64) - 128
    except Unsupported:
        return _signed_activation(e, v, q)
    return e.constant(arr, 8), _zp(q) - 128


def _ort_scale(x_q: QParams, w_q: QParams, out_q: QParams, channels: int) -> np.ndarray:
    prod = (_f32(x_q)[0] * np.broadcast_to(_f32(w_q), (channels,))).astype(F32)
    return (prod / _f32(out_q)[0]).astype(F32)


def _accumulate(e: Emitter, op, cls, x_v, w_v, bias_v, channels: int, out_shape, attrs: dict,
                acc_shape=None) -> SSAValue:
    x_q, w_q, out_q = qp(x_v), qp(w_v), qp(op.results[0])
    if op.attr("rounding") == "onnx":
        return _float_accumulate(e, op, "depthwise" if isinstance(op, qnn.DepthwiseConv2DOp) else "conv")
    k = knobs(op)
    if k["bias_mode"] != "accumulator" or k["acc"] not in (None, "i32"):
        raise Unsupported(f"{op.name} with bias / acc knobs other than ORT's")
    if _pairs_saturate(x_q, w_q) and cls is qint.Conv2DOp:
        acc = _saturated_conv(e, op, x_v, w_v)
        return _saturated_finish(e, op, acc, bias_v, x_q, w_q, out_q, channels)
    x, x_zp = _signed_activation(e, x_v, x_q)
    w, w_zp = _signed_weights(e, w_v, w_q)
    acc = e.qint(cls, [x, w], int_tensor(acc_shape or out_shape, 32), input_zp=x_zp, weight_zp=w_zp, **attrs)
    if bias_v is not None:
        acc = e.qint(qint.BiasAddOp, [acc, e.storage(bias_v)], acc.type)
    spec = float_spec(_ort_scale(x_q, w_q, out_q, channels))
    return e.rescale(acc, out_q.bits, spec, output_zp=_zp(out_q), bounds=_bounds(op, out_q))


def _pairs_saturate(x_q: QParams, w_q: QParams) -> bool:
    """Whether ORT's dot product of these types saturates pairs of products to int16 on the
    CPU the ONNX profiles model (`onnxruntime_kernels.detect_isa`, `QDIALECT_ORT_ISA`):
    uint8 x int8 with MLAS's AVX2 kernels (vpmaddubsw)."""
    from qdialect.reference.onnxruntime_kernels import detect_isa

    return (detect_isa() == "avx2" and x_q.bits == 8 and not x_q.signed and w_q.bits == 8 and w_q.signed)


def _weight_zps(w_q: QParams, channels: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(w_q.zero_point, np.int64).reshape(-1), (channels,)).copy()


def _saturated_pair(s, a0, a1, b0, b1, t):
    """`sat16(a0 b0 + a1 b1)` in `t` (i32) of raw uint8 `a` and int8 `b` (vpmaddubsw), and the
    four values widened.  uint8 is read as `sext & 255`, not `zext`: TVM 0.27 bounds
    cast<uint8>(an int8) to [0, 127] and then dropped the clamp as a no-op."""
    mask = s.const(255, t)
    u0, u1 = (s.emit(arith.AndIOp(s.ext(v, 32), mask)) for v in (a0, a1))
    v0, v1 = s.ext(b0, 32), s.ext(b1, 32)
    pair = s.emit(arith.AddiOp(s.emit(arith.MuliOp(u0, v0)), s.emit(arith.MuliOp(u1, v1))))
    return s.clamp(pair, -32768, 32767), (u0, u1), (v0, v1)


def _minus_zp_sum(s, term, zp, pair, t):
    """`term - zp * (pair[0] + pair[1])` (zp an int or an i32 value; nothing for zp 0)."""
    if not isinstance(zp, SSAValue) and not zp:
        return term
    zpv = zp if isinstance(zp, SSAValue) else s.const(zp, t)
    return s.emit(arith.SubiOp(term, s.emit(arith.MuliOp(zpv, s.emit(arith.AddiOp(*pair))))))


def _pair_saturated_sum(e: Emitter, cols: SSAValue, w: np.ndarray, w_zp: np.ndarray) -> SSAValue:
    """MLAS's AVX2 uint8 x int8 dot products (`vpmaddubsw`, then `vpmaddwd` by ones into int32)
    of `cols` [..., K] (raw uint8 storage, K in MLAS's packed order) with the constant raw int8
    weights `w` [O, K]: per output, the sum over pairs p of `sat16(a[2p] w[2p] + a[2p+1] w[2p+1])`
    (K zero-padded to even), minus `w_zp[o] * sum(a)`, in int32 -> [..., O].  The rest of ORT's
    zero-point correction is constant (`_saturated_finish`)."""
    from transforms.lower_to_linalg import Lowering, amap, dim

    shape = list(qint.shape_of(cols))
    lead, k = shape[:-1], shape[-1]
    o = w.shape[0]
    if k % 2:
        zero = e.constant(np.zeros(lead + [1], np.int64), 8)
        cols = e.add(tensor.ConcatOp([cols, zero], len(shape) - 1, int_tensor(lead + [k + 1], 8)))
        w = np.concatenate([w, np.zeros((o, 1), w.dtype)], axis=1)
    p = (k + 1) // 2
    r = len(shape)

    def half(j):  # a[..., j::2]
        return e.add(tensor.ExtractSliceOp(cols, [0] * (r - 1) + [j], lead + [p], [1] * (r - 1) + [2],
                                           int_tensor(lead + [p], 8)))

    a0, a1 = half(0), half(1)
    w0, w1 = e.constant(w[:, 0::2].astype(np.int64), 8), e.constant(w[:, 1::2].astype(np.int64), 8)
    low = Lowering()
    inputs = [w0, w1, a0, a1]
    wmap = amap(r + 1, [dim(r - 1), dim(r)])
    amap_ = amap(r + 1, [dim(i) for i in range(r - 1)] + [dim(r)])
    maps = [wmap, wmap, amap_, amap_]
    uniform = len(set(w_zp.tolist())) == 1
    if not uniform:
        inputs.append(e.constant(w_zp, 32))
        maps.append(amap(r + 1, [dim(r - 1)]))

    def body(s, b0, b1, x0, x1, *rest):
        acc = rest[-1]
        term, xs, _ = _saturated_pair(s, x0, x1, b0, b1, acc.type)
        term = _minus_zp_sum(s, term, int(w_zp[0]) if uniform else rest[0], xs, acc.type)
        return s.emit(arith.AddiOp(acc, term))

    acc = low.generic(inputs, maps, int_tensor(lead + [o], 32), amap(r + 1, [dim(i) for i in range(r)]), body,
                      iterators=["parallel"] * r + ["reduction"], init=0)
    e.ops.extend(low.ops)
    return acc


def _saturated_batch_matmul(e: Emitter, op, a: SSAValue, b: SSAValue, a_zp: int, b_zp: int) -> SSAValue:
    """QLinearMatMul of a uint8 and an int8 activation on AVX2 (MLAS's U8S8 GEMM, B packed at run
    time): `_pair_saturated_sum`'s pairs over K with both zero points in the body, `K a_zp b_zp`
    after."""
    from transforms.lower_to_linalg import Lowering, amap, dim

    a_shape, b_shape = list(qint.shape_of(a)), list(qint.shape_of(b))
    if a_shape[:-2] != b_shape[:-2]:
        raise Unsupported(f"{op.name} of uint8 x int8 activations on AVX2 with broadcast batch dimensions")
    batch, (m, k), n = a_shape[:-2], a_shape[-2:], b_shape[-1]
    nb = len(batch)
    if k % 2:  # K zero-padded to even: the padding adds 0 to every sum
        a = e.add(tensor.ConcatOp([a, e.constant(np.zeros(batch + [m, 1], np.int64), 8)], nb + 1,
                                  int_tensor(batch + [m, k + 1], 8)))
        b = e.add(tensor.ConcatOp([b, e.constant(np.zeros(batch + [1, n], np.int64), 8)], nb,
                                  int_tensor(batch + [k + 1, n], 8)))
    p = (k + 1) // 2
    r = nb + 2

    def half(v, axis, j, shape):
        offsets, strides = [0] * r, [1] * r
        offsets[axis], strides[axis] = j, 2
        return e.add(tensor.ExtractSliceOp(v, offsets, shape, strides, int_tensor(shape, 8)))

    a0, a1 = (half(a, r - 1, j, batch + [m, p]) for j in (0, 1))
    b0, b1 = (half(b, r - 2, j, batch + [p, n]) for j in (0, 1))
    loops = [dim(i) for i in range(nb)]
    m_, n_, p_ = dim(nb), dim(nb + 1), dim(nb + 2)
    amap_ = amap(r + 1, loops + [m_, p_])
    bmap = amap(r + 1, loops + [p_, n_])

    def body(s, x0, x1, y0, y1, acc):
        term, xs, ys = _saturated_pair(s, x0, x1, y0, y1, acc.type)
        term = _minus_zp_sum(s, _minus_zp_sum(s, term, b_zp, xs, acc.type), a_zp, ys, acc.type)
        return s.emit(arith.AddiOp(acc, term))

    low = Lowering()
    acc = low.generic([a0, a1, b0, b1], [amap_, amap_, bmap, bmap], int_tensor(batch + [m, n], 32),
                      amap(r + 1, loops + [m_, n_]), body, iterators=["parallel"] * r + ["reduction"], init=0)
    e.ops.extend(low.ops)
    if a_zp and b_zp:
        acc = e.qint(qint.BiasAddOp, [acc, e.constant(np.full(n, k * a_zp * b_zp, np.int64), 32)], acc.type)
    return acc


def _saturated_conv(e: Emitter, op, x_v, w_v) -> SSAValue:
    """The convolution's patches in MLAS's K order, (ky, kx, c) (measured: pairs cross taps),
    through `_pair_saturated_sum`."""
    n, oh, ow, oc = qint.shape_of(op.results[0])
    cin = qint.shape_of(x_v)[3]
    w = _const_array(w_v, "weights")  # OHWI
    _, kh, kw, _ = w.shape
    sh, sw = op.attr("strides", [1, 1])
    dh, dw = op.attr("dilations", [1, 1])
    x = _padded(e, x_v, tuple(op.attr("padding", [0, 0, 0, 0])))
    el = x.type.element_type
    taps = []
    for ky in range(kh):
        for kx in range(kw):
            shape = qint.shape_of(x)
            if (ky, kx, sh, sw) == (0, 0, 1, 1) and tuple(shape[1:3]) == (oh, ow):
                taps.append(x)
            else:
                taps.append(e.add(tensor.ExtractSliceOp(x, [0, ky * dh, kx * dw, 0], [n, oh, ow, cin],
                                                        [1, sh, sw, 1], TensorType(el, [n, oh, ow, cin]))))
    cols = taps[0] if len(taps) == 1 else e.add(tensor.ConcatOp(taps, 3, TensorType(el, [n, oh, ow, kh * kw * cin])))
    return _pair_saturated_sum(e, cols, w.reshape(oc, -1), _weight_zps(qp(w_v), oc))


def _saturated_finish(e: Emitter, op, acc, bias_v, x_q, w_q, out_q, channels: int) -> SSAValue:
    """ORT's constant part of the zero-point correction, `K x_zp w_zp[o] - x_zp sum(w[o])`, the
    bias, then ORT's requantization."""
    w = _const_array(op.operands[1], "weights")
    w = w.reshape(w.shape[0], -1)
    x_zp = _zp(x_q)
    k = w.shape[1]
    corr = k * x_zp * _weight_zps(w_q, channels) - x_zp * w.astype(np.int64).sum(axis=1)
    if corr.any():
        acc = e.qint(qint.BiasAddOp, [acc, e.constant(corr, 32)], acc.type)
    if bias_v is not None:
        acc = e.qint(qint.BiasAddOp, [acc, e.storage(bias_v)], acc.type)
    spec = float_spec(_ort_scale(x_q, w_q, out_q, channels))
    return e.rescale(acc, out_q.bits, spec, output_zp=_zp(out_q), bounds=_bounds(op, out_q))


def _conv_attrs(op) -> dict:
    return dict(strides=op.attr("strides", [1, 1]), dilations=op.attr("dilations", [1, 1]),
                padding=op.attr("padding", [0, 0, 0, 0]))


def decompose_conv2d(e: Emitter, op) -> SSAValue:
    xv, wv, bv = op.operands
    oc, _, _, ci = qint.shape_of(wv)
    if qint.shape_of(xv)[3] != ci:
        raise Unsupported("grouped convolution")
    return _accumulate(e, op, qint.Conv2DOp, xv, wv, bv, oc, qint.shape_of(op.results[0]), _conv_attrs(op))


def decompose_depthwise(e: Emitter, op) -> SSAValue:
    xv, wv, bv = op.operands
    oc = qint.shape_of(wv)[3]
    return _accumulate(e, op, qint.DepthwiseConv2DOp, xv, wv, bv, oc, qint.shape_of(op.results[0]),
                       _conv_attrs(op))


def decompose_fully_connected(e: Emitter, op) -> SSAValue:
    xv, wv, bv = op.operands
    o, k = qint.shape_of(wv)
    rows = math.prod(qint.shape_of(xv)) // k
    x_q, w_q, out_q = qp(xv), qp(wv), qp(op.results[0])
    if op.attr("rounding") == "onnx":
        return _float_accumulate(e, op, "fc")
    if _pairs_saturate(x_q, w_q):
        w = _const_array(wv, "weights")
        acc = _pair_saturated_sum(e, e.reshape(e.storage(xv), (rows, k)), w, _weight_zps(w_q, o))
        out = _saturated_finish(e, op, acc, bv, x_q, w_q, out_q, o)
        return e.reshape(out, qint.shape_of(op.results[0]))
    x, x_zp = _signed_activation(e, xv, x_q)
    x = e.reshape(x, (rows, k))
    w, w_zp = _signed_weights(e, wv, w_q)
    acc = e.qint(qint.FullyConnectedOp, [x, w], int_tensor((rows, o), 32), input_zp=x_zp, weight_zp=w_zp)
    acc = e.qint(qint.BiasAddOp, [acc, e.storage(bv)], acc.type)
    out = e.rescale(acc, out_q.bits, float_spec(_ort_scale(x_q, w_q, out_q, o)), output_zp=_zp(out_q),
                    bounds=_bounds(op, out_q))
    return e.reshape(out, qint.shape_of(op.results[0]))


def decompose_batch_matmul(e: Emitter, op) -> SSAValue:
    """QLinearMatMul of two activations (`onnxruntime`): exact int32 sums, ORT's float32 scale."""
    a_v, b_v = op.operands
    a_q, b_q, out_q = qp(a_v), qp(b_v), qp(op.results[0])
    if op.attr("rounding") != "onnxruntime":
        raise Unsupported(f"{op.name} with rounding 'onnx' (ORT's float MatMul rounds its partial sums in its "
                          "own order; the interpreter runs it)")
    if a_q.bits != 8 or b_q.bits != 8:
        raise Unsupported(f"{op.name} on {a_q.storage} x {b_q.storage}")
    if op.attr("adj_x", False) or op.attr("adj_y", False):
        raise Unsupported(f"{op.name} with adjoint flags under the ONNX profiles")
    shape = qint.shape_of(op.results[0])
    if _pairs_saturate(a_q, b_q):
        acc = _saturated_batch_matmul(e, op, e.storage(a_v), e.storage(b_v), _zp(a_q), _zp(b_q))
    else:
        a, a_zp = _signed_activation(e, a_v, a_q)
        b, b_zp = _signed_activation(e, b_v, b_q)
        acc = e.qint(qint.BatchMatmulOp, [a, b], int_tensor(shape, 32), lhs_zp=a_zp, rhs_zp=b_zp)
    scale = F32(F32(_f32(a_q)[0] * _f32(b_q)[0]) / _f32(out_q)[0])
    return e.rescale(acc, out_q.bits, float_spec(np.array([scale], F32)), output_zp=_zp(out_q),
                     bounds=_bounds(op, out_q))


def decompose_mean(e: Emitter, op) -> SSAValue:
    x_v = op.operands[0]
    x_q, out_q = qp(x_v), qp(op.results[0])
    shape = qint.shape_of(x_v)
    axes = sorted(a % len(shape) for a in op.attr("axes"))
    if op.attr("rounding") == "onnx" and len(shape) == 4 and axes == [1, 2]:
        return _float_global_avg(e, op)
    if op.attr("rounding") != "onnxruntime" or len(shape) != 4 or axes != [1, 2] or not op.attr("keep_dims", False):
        raise Unsupported(f"{op.name} in float (ORT's float ReduceMean; the interpreter runs it)")
    n = shape[1] * shape[2]
    x, x_zp = _signed_activation(e, x_v, x_q)
    total = e.qint(qint.ReduceSumOp, [x], int_tensor(qint.shape_of(op.results[0]), 32), axes=[1, 2],
                   keep_dims=True)
    scale = F32(_f32(x_q)[0] / F32(_f32(out_q)[0] * F32(n)))
    return e.rescale(total, out_q.bits, float_spec(np.array([scale], F32)), input_zp=x_zp * n,
                     output_zp=_zp(out_q), bounds=_bounds(op, out_q))


def _stored_values(q: QParams) -> np.ndarray:
    """Every stored value of an 8-bit type, in the order of its signed bit patterns -128..127."""
    bits = np.arange(-128, 128, dtype=np.int64)
    return (bits & 0xFF).astype(q.dtype) if not q.signed else bits.astype(q.dtype)


def decompose_binary_table(e: Emitter, op) -> SSAValue:
    """An 8-bit binary op as one table lookup indexed by both stored bytes."""
    from qdialect.interpreter import Interpreter

    a_v, b_v = op.operands
    a_q, b_q, out_q = qp(a_v), qp(b_v), qp(op.results[0])
    if a_q.bits != 8 or b_q.bits != 8:
        raise Unsupported(f"{op.name} on {a_q.storage} x {b_q.storage} (the table needs 8-bit operands)")
    va, vb = _stored_values(a_q), _stored_values(b_q)
    aa = np.repeat(va, 256)
    bb = np.tile(vb, 256)
    table = np.asarray(Interpreter(None).eval(op, [aa, bb])[0]).astype(np.int64).reshape(-1)
    a, b = e.storage(a_v), e.storage(b_v)
    shape = qint.shape_of(op.results[0])
    rank = len(shape)
    c256 = e.constant(np.full([1] * rank, 256, np.int64), 32)
    high = e.qint(qint.MulOp, [a, c256], int_tensor(qint.shape_of(a_v), 32), lhs_zp=-128)
    index = e.qint(qint.AddOp, [high, b], int_tensor(shape, 16), rhs_zp=-128)
    tv = e.constant(table, out_q.bits)
    return e.qint(qint.TableOp, [index, tv], int_tensor(shape, out_q.bits), unsigned=True)


def _table_for(values: np.ndarray, fn) -> np.ndarray:
    return np.asarray(fn(values)).astype(np.int64).reshape(-1)


def decompose_concat(e: Emitter, op) -> SSAValue:
    from qdialect.reference import onnxruntime_kernels as ort

    out_q = qp(op.results[0])
    xs = []
    for v in op.operands:
        q = qp(v)
        x = e.storage(v)
        same = (q.storage == out_q.storage and np.array_equal(q.scale, out_q.scale)
                and np.array_equal(q.zero_point, out_q.zero_point))
        if not same:
            if q.bits > 16:
                raise Unsupported(f"qnn.concatenation requantizing a {q.storage} input")
            lo, hi = ew.type_bounds(q)
            values = np.arange(lo, hi + 1, dtype=np.int64).astype(q.dtype)
            table = ort.quantize_linear(ort.dequantize_linear(values, x_q=q), out_q=out_q).astype(np.int64)
            tv = e.constant(table, out_q.bits)
            attrs = {} if q.signed else {"unsigned": True}
            x = e.qint(qint.TableOp, [x, tv], int_tensor(qint.shape_of(v), out_q.bits), **attrs)
        xs.append(x)
    rank = len(qint.shape_of(op.results[0]))
    t = storage_type(op.results[0].type)
    v = xs[0] if len(xs) == 1 else e.add(tensor.ConcatOp(xs, op.attr("axis") % rank, t))
    lo, hi = _bounds(op, out_q)
    if (lo, hi) != ew.type_bounds(out_q):  # a clamp folded into it: one table over the stored values
        tlo, thi = ew.type_bounds(out_q)
        table = np.clip(np.arange(tlo, thi + 1, dtype=np.int64), lo, hi)
        attrs = {} if out_q.signed else {"unsigned": True}
        v = e.qint(qint.TableOp, [v, e.constant(table, out_q.bits)], t_int(op), **attrs)
    return v


def t_int(op):
    return int_tensor(qint.shape_of(op.results[0]), qp(op.results[0]).bits)


def decompose_softmax(e: Emitter, op) -> SSAValue:
    """QLinearSoftmax (`onnxruntime`, 8-bit): qint.softmax's `ort_float` recipe."""
    x_v = op.operands[0]
    x_q, out_q = qp(x_v), qp(op.results[0])
    if op.attr("rounding") != "onnxruntime":
        raise Unsupported("qnn.softmax in float (ORT's float Softmax; the interpreter runs it)")
    if x_q.bits != 8 or out_q.bits != 8 or op.attr("beta", 1.0) != 1.0:
        raise Unsupported("qnn.softmax other than 8-bit with beta 1")
    if (out_q.signed and out_q.storage_min != -128) or (not out_q.signed and out_q.storage_min != 0):
        raise Unsupported("qnn.softmax with a narrowed result range")
    x, _ = _signed_activation(e, x_v, x_q)  # only differences x - max(row) matter
    attrs = dict(mode="ort_float", input_scale=[float(_f32(x_q)[0])], beta=[1.0],
                 output_scale=[float(_f32(out_q)[0])], output_zp=_zp(out_q))
    if not out_q.signed:
        attrs["output_unsigned"] = True
    return e.qint(qint.SoftmaxOp, [x], int_tensor(qint.shape_of(op.results[0]), 8), **attrs)


def decompose_avg_pool(e: Emitter, op) -> SSAValue:
    """QLinearAveragePool (`onnxruntime`, 8-bit): each tap dequantized to float32 (`f32(q - zp) *
    x_s`), the taps summed in (ky, kx) order in float32 (a padded tap is the zero point: adds
    0.0), divided by the count of in-image taps, `rint(f32(avg / y_s) + f32(y_zp))`, saturated.
    One linalg.generic reads the padded input once per tap through a shifted map."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import TensorType, f32

    from transforms.decompose import _pool_counts, pad_op, scalar_constant
    from transforms.lower_to_linalg import Lowering, amap, dim, identity

    x_v = op.operands[0]
    x_q, out_q = qp(x_v), qp(op.results[0])
    if op.attr("rounding") != "onnxruntime":
        raise Unsupported("qnn.avg_pool2d in float (MLAS's float pooling order; the interpreter runs it)")
    if x_q.bits != 8 or out_q.bits != 8 or x_q.per_axis or out_q.per_axis:
        raise Unsupported("qnn.avg_pool2d other than 8-bit per-tensor")
    kh, kw = op.attr("kernel")
    sh, sw = op.attr("strides", [1, 1])
    pt, pb, pl, pr = op.attr("padding", [0, 0, 0, 0])
    counts = _pool_counts(op, qint.shape_of(x_v))
    if np.any(counts <= 0):
        raise Unsupported("a pooling window that lies entirely in the padding")
    x = e.storage(x_v)
    x_zp = _zp(x_q)
    if pt or pb or pl or pr:
        n, h, w, c = qint.shape_of(x_v)
        zp_bits = x_zp - 256 if (not x_q.signed and x_zp > 127) else x_zp
        pad_value = e.add(scalar_constant(zp_bits, 8))
        padded = int_tensor([n, h + pt + pb, w + pl + pr, c], 8)
        x = e.add(pad_op(x, [0, pt, pl, 0], [0, pb, pr, 0], pad_value, padded))
    low = Lowering()
    from transforms.float_edges import _float_constant

    cnt = _float_constant(low, counts.astype(np.float32), f32)
    shape = list(qint.shape_of(op.results[0]))
    cnt = low.reshape(cnt, counts.shape)
    taps = [(ky, kx) for ky in range(kh) for kx in range(kw)]
    n, oh, ow, c = shape
    el = x.type.element_type
    windows = [e.add(tensor.ExtractSliceOp(x, [0, ky, kx, 0], [n, oh, ow, c], [1, sh, sw, 1],
                                           TensorType(el, [n, oh, ow, c]))) for ky, kx in taps]
    maps = [identity(4)] * len(taps) + [amap(4, [0, dim(1), dim(2), 0])]
    xs, ys = float(_f32(x_q)[0]), float(_f32(out_q)[0])
    ozp = _zp(out_q)
    lo, hi = _bounds(op, out_q)
    unsigned = not x_q.signed

    def body(s, *args):
        vals, count = args[:len(taps)], args[len(taps)]
        acc = None
        for t in vals:
            d = s.emit(arith.SIToFPOp(s.sub(s.ext(t, 64, unsigned), x_zp), f32))
            # the clamp (no-op) keeps the product one float32 rounding: no fused multiply-add
            v = no_contract(s, s.emit(arith.MulfOp(d, s.const(xs, f32))))
            acc = v if acc is None else s.emit(arith.AddfOp(acc, v))
        avg = s.emit(arith.DivfOp(acc, count))
        y = s.emit(arith.AddfOp(s.emit(arith.DivfOp(avg, s.const(ys, f32))), s.const(float(ozp), f32)))
        r = s.round_half_even(s.fclamp(y, float(1 << 62)))
        return s.trunc(s.clamp(r, lo, hi), 8)

    out = low.generic(windows + [cnt], maps, int_tensor(shape, 8), identity(4), body)
    e.ops.extend(low.ops)
    return out


def _table(e: Emitter, op) -> SSAValue:
    from transforms.decompose import decompose_table

    return decompose_table(e, op)


ONNX_DECOMPOSITIONS = {
    qnn.Conv2DOp: decompose_conv2d,
    qnn.DepthwiseConv2DOp: decompose_depthwise,
    qnn.FullyConnectedOp: decompose_fully_connected,
    qnn.MeanOp: decompose_mean,
    qnn.BatchMatmulOp: decompose_batch_matmul,
    qnn.AddOp: decompose_binary_table,
    qnn.SubOp: decompose_binary_table,
    qnn.MulOp: decompose_binary_table,
    qnn.LogisticOp: _table,
    qnn.TanhOp: _table,
    qnn.HardSwishOp: _table,
    qnn.HardSigmoidOp: _table,
    qnn.LeakyReluOp: _table,
    qnn.RequantizeOp: _table,
    qnn.ConcatenationOp: decompose_concat,
    qnn.SoftmaxOp: decompose_softmax,
    qnn.AvgPool2DOp: decompose_avg_pool,
}


def onnx_profile(op) -> str | None:
    """The op's ONNX profile, or None if it has another rounding knob (or none)."""
    if "rounding" not in getattr(op, "ATTRS", ()):
        return None
    r = op.attr("rounding", "tflite")
    return r if r in ONNX_ROUNDINGS else None


def decompose_max_pool_unsigned(e: Emitter, op) -> SSAValue:
    """uint8 max pooling: on `x - 128` (signed order), then back."""
    x_v = op.operands[0]
    x_q = qp(x_v)
    if not pooling_same(x_q, qp(op.results[0])):
        raise Unsupported(f"{op.name} that changes the quantization parameters")
    x, _ = _signed_activation(e, x_v, x_q)
    bits = x_q.bits
    shape = qint.shape_of(op.results[0])
    attrs = dict(kernel=op.attr("kernel"), strides=op.attr("strides", [1, 1]),
                 padding=op.attr("padding", [0, 0, 0, 0]))
    v = e.qint(qint.PoolMaxOp, [x], int_tensor(shape, bits), **attrs)
    zero = e.constant(np.zeros([1] * len(shape), np.int64), bits)
    v = e.qint(qint.AddOp, [v, zero], int_tensor(shape, bits), lhs_zp=-(1 << (bits - 1)))
    lo, hi = _bounds(op, qp(op.results[0]))
    if (lo, hi) != (0, (1 << bits) - 1):
        raise Unsupported(f"{op.name} with a clamp on uint8")
    return v


def pooling_same(a: QParams, b: QParams) -> bool:
    return a.storage == b.storage and np.array_equal(a.scale, b.scale) and np.array_equal(a.zero_point, b.zero_point)


def _integer_upscale(op) -> int | None:
    """The factor of a nearest resize that repeats every pixel f x f times (None otherwise): without
    align_corners / half_pixel_centers, TFLite's and ONNX's nearest rules pick floor(o / f) there."""
    if not isinstance(op, qnn.ResizeNearestNeighborOp) or op.attr("align_corners", False) \
            or op.attr("half_pixel_centers", False):
        return None
    n, h, w, c = qint.shape_of(op.operands[0])
    _, oh, ow, _ = qint.shape_of(op.results[0])
    if h == 0 or w == 0 or oh % h or ow % w or oh // h != ow // w or not pooling_same(
            qp(op.operands[0]), qp(op.results[0])):
        return None
    return oh // h


def decompose_resize_nearest(e: Emitter, op) -> SSAValue:
    """An integer nearest upscale: one broadcasting linalg.generic [N, H, f, W, f, C], collapsed."""
    from transforms.lower_to_linalg import Lowering, amap, dim, identity

    f = _integer_upscale(op)
    x = e.storage(op.operands[0])
    n, h, w, c = qint.shape_of(op.operands[0])
    low = Lowering()
    wide = low.generic([x], [amap(6, [dim(0), dim(1), dim(3), dim(5)])], int_tensor([n, h, f, w, f, c], qp(op.results[0]).bits),
                       identity(6), lambda s, a, _o: a)
    e.ops.extend(low.ops)
    return e.reshape(wide, qint.shape_of(op.results[0]))


def takes(op) -> bool:
    """Whether this module lowers `op` (an ONNX profile, or uint8 max pooling)."""
    if isinstance(op, (qnn.QuantizeOp, qnn.DequantizeOp)):
        return False  # transforms.float_edges (MlasQuantizeLinear for the ONNX profiles)
    if isinstance(op, qnn.ResizeNearestNeighborOp):
        return _integer_upscale(op) is not None
    if isinstance(op, (qnn.ClampOp, qnn.ConcatenationOp)) and not qp(op.results[0]).signed \
            and qp(op.results[0]).bits <= 16:
        # unsigned: decompose's clamps compare signed storage; tables do it (a concatenation that
        # requantizes an input under a TFLite profile stays with decompose's own recipe)
        out_q = qp(op.results[0])
        return isinstance(op, qnn.ClampOp) or onnx_profile(op) is not None or all(
            pooling_same(qp(v), out_q) for v in op.operands)
    if isinstance(op, (qnn.MaximumOp, qnn.MinimumOp, qnn.ClampOp)):
        return False  # compare stored integers: the same in every profile (decompose's own)
    if onnx_profile(op) is not None:
        return True
    if isinstance(op, qnn.MaxPool2DOp):
        q = qp(op.operands[0])
        return not q.signed
    return False


def decompose(e: Emitter, op) -> SSAValue:
    if onnx_profile(op) is None and isinstance(op, qnn.MaxPool2DOp):
        return decompose_max_pool_unsigned(e, op)
    if isinstance(op, qnn.MaxPool2DOp):
        q = qp(op.operands[0])
        if not q.signed:
            return decompose_max_pool_unsigned(e, op)
        from transforms.decompose import decompose_pool

        return decompose_pool(e, op)
    if isinstance(op, qnn.ResizeNearestNeighborOp):
        return decompose_resize_nearest(e, op)
    if isinstance(op, qnn.ClampOp):
        return _table(e, op)
    if isinstance(op, qnn.ConcatenationOp):
        return decompose_concat(e, op)
    fn = ONNX_DECOMPOSITIONS.get(type(op))
    float_path = FLOAT_LOWERINGS.get(type(op)) if onnx_profile(op) == "onnx" else None
    if fn is None and float_path is None:
        raise Unsupported(f"rounding '{op.attr('rounding')}' (no lowering for {op.name} in this profile; "
                          "the interpreter runs it)")
    if fn is None:
        return float_path(e, op)
    try:
        return fn(e, op)
    except Unsupported:
        if float_path is None:
            raise
        return float_path(e, op)


FLOAT_LOWERINGS: dict[type, object] = {}
"""Lowerings of the `onnx` (float path) recipes that other modules register (op class -> function
(Emitter, op) -> value): tried where this module's own recipe refuses the op."""


# ======================================================================================
# the `onnx` profile's float convolutions and fully connected layers (MLAS, bit for bit)
# ======================================================================================
#
# ORT computes a QDQ group it does not fuse as DequantizeLinear -> float Conv / Gemm ->
# QuantizeLinear, with MLAS's float kernels (`onnxruntime_kernels.mlas_conv_f32` with
# session "disable_all", which a QDQ group's DequantizeLinear weights get in both sessions,
# and `mlas_gemm_f32` with a prepacked B).  Their sums are, for every output, a left fold
# of terms over consecutive ranges of K (in (c, ky, kx) order):
#
# - "fma" terms: a fused multiply-add chain from 0 in K order (the SGEMM kernels), the first
#   term stored, the others added to it; each is a linalg.generic reduction whose body is
#   `math.fma(x, w, acc)` (tvm_bridge.translate emits it as in-order loops calling
#   `llvm.fma`), split into boxes of (c, ky, kx) that continue the same chain;
# - "m1" terms (SgemmKernelM1Avx: one filter per group, so every depthwise convolution):
#   products rounded, summed in groups of 4 / 2 / 1, each group added to the running sum
#   (from +0); one elementwise generic per term list, each product behind a no-op clamp so
#   LLVM cannot contract it into a fused multiply-add.
#
# Then `+ bias` (conv: last; Gemm: the bias is where the fold starts), QuantizeLinear
# (`y / s`, clamp to [lo - zp, hi - zp], NaN to lo - zp, ties to even, `+ zp`) and the
# act_min / act_max clamp.  Which ranges form the terms follows MlasConv's algorithm choice
# and the SGEMM stride rule (the N slice a pixel falls in can change the K slicing: the
# output then selects, per pixel, between the folds of the plans that occur).

_MAX_UNROLLED_TERMS = 4096


def _sgemm_strides(n: int, k: int) -> tuple[int, int]:
    from qdialect.reference.onnxruntime_kernels import sgemm_strides

    return sgemm_strides(n, k)


def _sgemm_terms(m: int, k0: int, k: int, n: int) -> list[tuple[str, int, int]]:
    """The terms of one MlasSgemmOperation over K [k0, k0 + k) and N columns (ort._sgemm_operation)."""
    if m == 1:  # SgemmKernelM1Avx: groups of 4, then one pair, then one single
        terms, i = [], 0
        for width in (4, 2, 1):
            while k - i >= width:
                terms.append(("m1", k0 + i, k0 + i + width))
                i += width
                if width < 4:
                    break
        return terms
    _, sk = _sgemm_strides(n, k)
    return [("fma", k0 + a, k0 + min(a + sk, k)) for a in range(0, k, sk)]


def _conv_plans(og: int, k: int, osz: int, direct: bool) -> list[tuple[int, int, list]]:
    """[(first pixel, end pixel, terms)] for MlasConv (ort._conv_disable_all) of one group."""
    if direct or og > osz:
        return [(0, osz, _sgemm_terms(og, 0, k, osz))]
    sn, sk = _sgemm_strides(osz, k)
    plans = []
    for n0 in range(0, osz, sn):
        nn = min(sn, osz - n0)
        terms = []
        for k0 in range(0, k, sk):
            terms += _sgemm_terms(og, k0, min(sk, k - k0), nn)
        if plans and plans[-1][2] == terms:
            plans[-1] = (plans[-1][0], n0 + nn, terms)
        else:
            plans.append((n0, n0 + nn, terms))
    return plans


def _boxes(ka: int, kb: int, taps: tuple[int, int]) -> list[tuple[tuple[int, int], ...]]:
    """K range [ka, kb) in (c, ky, kx) order as boxes ((c0, c1), (y0, y1), (x0, x1)), in order."""
    kh, kw = taps
    t = kh * kw
    out = []

    def tap_range(c, t0, t1):  # taps [t0, t1) of channel c, as row boxes
        while t0 < t1:
            y, x = divmod(t0, kw)
            if x == 0 and t1 - t0 >= kw:  # whole rows
                rows = (t1 - t0) // kw
                out.append(((c, c + 1), (y, y + rows), (0, kw)))
                t0 += rows * kw
            else:
                x1 = min(kw, x + (t1 - t0))
                out.append(((c, c + 1), (y, y + 1), (x, x1)))
                t0 += x1 - x

    k = ka
    while k < kb:
        c, t0 = divmod(k, t)
        if t0 == 0 and kb - k >= t:  # whole channels
            cs = (kb - k) // t
            out.append(((c, c + cs), (0, kh), (0, kw)))
            k += cs * t
        else:
            t1 = min(t, t0 + (kb - k))
            tap_range(c, t0, t1)
            k += t1 - t0
    return out


def _float_tensor(low, values: np.ndarray):
    from xdsl.dialects.builtin import f32

    from transforms.float_edges import _float_constant

    v = _float_constant(low, np.asarray(values, F32).reshape(-1), f32)
    return v if np.ndim(values) == 1 else low.reshape(v, np.shape(values))


def _const_array(v: SSAValue, what: str) -> np.ndarray:
    """The stored integers of a constant quantized operand (a qnn.constant, or the scast of
    the arith.constant it was decomposed into), in its storage type's values."""
    from qdialect.dialects.quant import StorageCastOp

    from transforms.lower_to_linalg import _constant_values

    owner = v.owner
    if isinstance(owner, qnn.ConstantOp):
        return np.asarray(owner.array())
    raw = None
    if isinstance(owner, StorageCastOp):
        raw = _constant_values(owner.operands[0])
    if raw is None:
        raise Unsupported(f"float {what} that are not constant (ORT prepacks constant weights)")
    q = qp(v)
    raw = np.asarray(raw).astype(np.int64)
    if not q.signed:
        raw = raw & ((1 << q.bits) - 1)
    return raw


def _dequantized_constant(v: SSAValue, what: str) -> np.ndarray:
    from qdialect.reference import onnxruntime_kernels as ort

    return ort.dequantize_linear(_const_array(v, what), x_q=qp(v))


def _padded(e: Emitter, x_v: SSAValue, pads) -> SSAValue:
    from transforms.decompose import pad_op, scalar_constant

    x = e.storage(x_v)
    pt, pb, pl, pr = pads
    if not (pt or pb or pl or pr):
        return x
    q = qp(x_v)
    zp = _zp(q)
    bits = q.bits
    zp_bits = zp - (1 << bits) if (not q.signed and zp >= 1 << (bits - 1)) else zp
    n, h, w, c = qint.shape_of(x_v)
    return e.add(pad_op(x, [0, pt, pl, 0], [0, pb, pr, 0], e.add(scalar_constant(zp_bits, bits)),
                        int_tensor([n, h + pt + pb, w + pl + pr, c], bits)))


FLT_MAX = float(np.finfo(np.float32).max)


def no_contract(s, p: SSAValue) -> SSAValue:
    """`p` itself, through a clamp to [-FLT_MAX, FLT_MAX] (a no-op on finite values; infinities and
    NaN bypass it): the one guard of the float lowerings.  Behind it LLVM cannot contract the
    product `p` into a following add, nor TVM's simplifier fold its constant factor into the next
    product."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import f32

    finite = s.emit(arith.AndIOp(s.emit(arith.CmpfOp(p, s.const(float("inf"), f32), "olt")),
                                 s.emit(arith.CmpfOp(p, s.const(float("-inf"), f32), "ogt"))))
    return s.emit(arith.SelectOp(finite, s.fclamp(p, FLT_MAX), p))


def _dequant_scalar(s, v, q: QParams):
    """DequantizeLinear of one stored integer: f32(q - zp) * s (one rounding)."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import f32

    d = s.emit(arith.SIToFPOp(s.sub(s.ext(v, 64, not q.signed), _zp(q)), f32))
    # the no-op clamp keeps this product one rounding of its own: TVM's simplifier would otherwise
    # fold the scale into a following product by a constant weight, and LLVM contract it into an add
    return no_contract(s, s.emit(arith.MulfOp(d, s.const(float(_f32(q)[0]), f32))))


def _quantize_scalar(s, y, op):
    """QuantizeLinear (MlasQuantizeLinear) of a float32 to the op's result, then its clamp."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import f32

    out_q = qp(op.results[0])
    lo, hi = ew.type_bounds(out_q)
    zp = _zp(out_q)
    v = s.emit(arith.DivfOp(y, s.const(float(_f32(out_q)[0]), f32)))
    lo_f, hi_f = s.const(float(lo - zp), f32), s.const(float(hi - zp), f32)
    nan = s.emit(arith.CmpfOp(v, v, "uno"))
    v = s.emit(arith.MinimumfOp(s.emit(arith.MaximumfOp(v, lo_f)), hi_f))
    v = s.emit(arith.SelectOp(nan, lo_f, v))
    r = s.add(s.round_half_even(v), zp)
    blo, bhi = _bounds(op, out_q)
    return s.trunc(s.clamp(r, max(lo, blo), min(hi, bhi)), out_q.bits)


def _dequantized(e: Emitter, x: SSAValue, x_q: QParams) -> SSAValue:
    """The stored integers `x` dequantized once into float32 (`_dequant_scalar`, one generic
    over the tensor), for the float convolutions to read: exactly the values their bodies
    computed per product (one rounding, in a kernel of its own, so nothing contracts it),
    where an FMA chain dequantized each activation once per filter tap and per channel
    vector, with the clamp that keeps the product a rounding of its own around each."""
    from xdsl.dialects.builtin import TensorType, f32

    from transforms.lower_to_linalg import Lowering

    low = Lowering()
    out = low.elementwise([x], TensorType(f32, list(qint.shape_of(x))), lambda s, v, _o: _dequant_scalar(s, v, x_q))
    e.ops.extend(low.ops)
    return out


def _fma_chain(e: Emitter, low, pieces, out_shape, n_par: int) -> SSAValue:
    """One FMA chain from +0: `pieces` [(x, x's map, weights box)], x the float32 activations
    (`_dequantized`), each a reduction generic continuing the previous one's accumulator."""
    from xdsl.dialects import math as mathd
    from xdsl.dialects.builtin import TensorType, f32

    from transforms.lower_to_linalg import amap, dim

    acc = 0.0
    out_map = amap(n_par + 3, [dim(i) for i in range(n_par)])
    for x, xmap, w in pieces:
        n_red = 3

        def body(s, wv, xv, a):  # (the weights first: xDSL's verifier takes loop ranges from the first
            # operand that names a loop alone, and x names the reduction loops only with offsets)
            return s.emit(mathd.FmaOp(xv, wv, a))

        acc = low.generic([w, x], [amap(n_par + n_red, [dim(n_par - 1)] + [dim(n_par + j) for j in range(n_red)]), xmap],
                          TensorType(f32, out_shape), out_map, body,
                          iterators=["parallel"] * n_par + ["reduction"] * n_red, init=acc)
    return acc


def _float_accumulate(e: Emitter, op, kind: str) -> SSAValue:
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import TensorType, f32

    from transforms.lower_to_linalg import Lowering, amap, dim, identity

    x_v, w_v, b_v = op.operands
    x_q, out_q = qp(x_v), qp(op.results[0])
    if x_q.per_axis or out_q.per_axis:
        raise Unsupported(f"{op.name} in float with per-axis activation parameters")
    if x_q.bits not in (8, 16):
        raise Unsupported(f"{op.name} in float on {x_q.storage} activations")
    k_ = knobs(op)
    if k_["bias_mode"] != "accumulator" or k_["acc"] not in (None, "i32"):
        raise Unsupported(f"{op.name} with bias / acc knobs other than ORT's")
    wf = _dequantized_constant(w_v, "weights")
    bf = np.zeros(wf.shape[0 if kind != "depthwise" else 3], F32) if b_v is None else \
        _dequantized_constant(b_v, "bias").reshape(-1)
    out_shape = list(qint.shape_of(op.results[0]))
    low = Lowering()
    n_par = 4
    if kind == "fc":
        o, k = wf.shape
        rows = math.prod(qint.shape_of(x_v)) // k
        x = _dequantized(e, e.reshape(e.storage(x_v), (rows, k)), x_q)
        # MlasGemm with a prepacked B: K blocks of 256, each an FMA chain from 0; y = (b + t0) + t1 ...
        chains = []
        for k0 in range(0, k, 256):
            k1 = min(k, k0 + 256)
            wblk = _float_tensor(low, wf[:, k0:k1])
            xb = x if (k0, k1) == (0, k) else e.add(tensor.ExtractSliceOp(
                x, [0, k0], [rows, k1 - k0], [1, 1], TensorType(x.type.element_type, [rows, k1 - k0])))
            pieces = [(xb, amap(3, [dim(0), dim(2)]), wblk)]
            chains.append(_fma_chain_fc(low, pieces, [rows, o]))
        bias = _float_tensor(low, bf)

        def body(s, *args):
            ts, b = args[:len(chains)], args[len(chains)]
            y = b
            for t in ts:
                y = s.emit(arith.AddfOp(y, t))
            return _quantize_scalar(s, y, op)

        maps = [identity(2)] * len(chains) + [amap(2, [dim(1)])]
        out = low.generic(chains + [bias], maps, int_tensor([rows, o], out_q.bits), identity(2), body)
        e.ops.extend(low.ops)
        return e.reshape(out, out_shape)

    n, oh, ow, oc = out_shape
    sh, sw = op.attr("strides", [1, 1])
    dh, dw = op.attr("dilations", [1, 1])
    pads = tuple(op.attr("padding", [0, 0, 0, 0]))
    x = _dequantized(e, _padded(e, x_v, pads), x_q)
    cin = qint.shape_of(x_v)[3]
    if kind == "conv":
        _, kh, kw, cg = wf.shape  # OHWI
        og = oc
        wk = wf.transpose(0, 3, 1, 2)  # [O, C, KH, KW]: K in (c, ky, kx) order
    else:
        _, kh, kw, _ = wf.shape  # [1, KH, KW, C*m]
        cg, og = 1, 1
        if oc % cin:
            raise Unsupported(f"{op.name} with {oc} outputs over {cin} channels")
        wk = wf[0].transpose(2, 0, 1)[:, None]  # [C*m, 1, KH, KW]
    mult = oc // cin if kind == "depthwise" else 1
    k = cg * kh * kw
    osz = oh * ow
    direct = (sh, sw) == (1, 1) and not any(pads) and kh == kw == 1
    plans = _conv_plans(og, k, osz, direct)

    windows: dict = {}

    def window(ky, kx):  # the tap's strided slice of the padded input: [n, oh, ow, C]
        from xdsl.dialects.builtin import TensorType

        if (ky, kx) not in windows:
            el = x.type.element_type
            windows[ky, kx] = e.add(tensor.ExtractSliceOp(x, [0, ky * dh, kx * dw, 0], [n, oh, ow, cin],
                                                          [1, sh, sw, 1], TensorType(el, [n, oh, ow, cin])))
        return windows[ky, kx]

    def xmap(n_dims, c_expr, ky, kx):
        return amap(n_dims, [dim(0), dim(1), dim(2), c_expr])

    # every distinct term once: fma terms are chains (generics), m1 terms are folded in the final body
    term_values: dict = {}
    inputs, maps = [], []
    unrolled = 0
    for _, _, terms in plans:
        for term in terms:
            if term in term_values:
                continue
            tkind, ka, kb = term
            if tkind == "fma":
                pieces = []
                for (c0, c1), (y0, y1), (x0, x1) in _boxes(ka, kb, (kh, kw)):
                    wbox = _float_tensor(low, wk[:, c0:c1, y0:y1, x0:x1])
                    # (x's channels read at an offset, c0 + c, where the box is not all of them:
                    # the weights box names the loop alone; a slice of x per box was a copy of
                    # the activations each, ResNeXt's 16-bit grouped layers 12 of 6.4 us)
                    c_at = dim(4) if (c0, c1) == (0, cin) else AffineBinaryOpExpr(
                        AffineBinaryOpKind.Add, dim(4), AffineConstantExpr(c0))  # (d4 + 0 kept: no plain dim)
                    m = amap(7, [dim(0), dim(1) * sh + (dim(5) + y0) * dh, dim(2) * sw + (dim(6) + x0) * dw, c_at])
                    pieces.append((x, m, wbox))
                inputs.append(_fma_chain(e, low, pieces, out_shape, n_par))
                maps.append(identity(4))
                term_values[term] = ("input", len(inputs) - 1)
            else:
                prods = []
                for kk in range(ka, kb):
                    c, t = divmod(kk, kh * kw)
                    ky, kx = divmod(t, kw)
                    if kind == "conv":
                        inputs.append(window(ky, kx))
                        maps.append(xmap(4, c, ky, kx))
                        prods.append((len(inputs) - 1, ("scalar", float(wk[0, c, ky, kx]))))
                    else:
                        inputs.append(window(ky, kx))
                        maps.append(xmap(4, dim(3) if mult == 1 else dim(3) // mult, ky, kx))
                        inputs.append(_float_tensor(low, wk[:, 0, ky, kx]))
                        maps.append(amap(4, [dim(3)]))
                        prods.append((len(inputs) - 2, ("input", len(inputs) - 1)))
                    unrolled += 1
                term_values[term] = ("m1", prods)
    if unrolled > _MAX_UNROLLED_TERMS:
        raise Unsupported(f"{op.name} in float with {unrolled} unrolled products (MLAS's one-filter kernel)")
    inputs.append(_float_tensor(low, bf))
    maps.append(amap(4, [dim(3)]))
    n_in = len(inputs)

    def body(s, *args):
        from xdsl.dialects.builtin import IndexType

        def value(term):
            how = term_values[term]
            if how[0] == "input":
                return args[how[1]]
            total = None
            for xi, (wk_kind, wref) in how[1]:
                wv = s.const(wref, f32) if wk_kind == "scalar" else args[wref]
                p = no_contract(s, s.emit(arith.MulfOp(args[xi], wv)))  # (x dequantized above)
                total = p if total is None else s.emit(arith.AddfOp(total, p))
            return total

        ys = []
        for _, _, terms in plans:
            y = s.const(0.0, f32) if terms[0][0] == "m1" else None
            for term in terms:
                t = value(term)
                y = t if y is None else s.emit(arith.AddfOp(t, y) if term[0] == "m1" else arith.AddfOp(y, t))
            ys.append(s.emit(arith.AddfOp(y, args[n_in - 1])))
        y = ys[-1]
        if len(plans) > 1:  # the pixel's N slice picks the plan
            from xdsl.dialects.linalg.ops import IndexOp

            from transforms.lower_to_linalg import I64

            oy = s.emit(arith.IndexCastOp(s.emit(IndexOp(1)), I64))
            ox = s.emit(arith.IndexCastOp(s.emit(IndexOp(2)), I64))
            pix = s.add(s.mul(oy, ow), ox)
            for i in range(len(plans) - 2, -1, -1):
                inside = s.cmp("slt", pix, plans[i][1])
                y = s.emit(arith.SelectOp(inside, ys[i], y))
        return _quantize_scalar(s, y, op)

    out = low.generic(inputs, maps, int_tensor(out_shape, out_q.bits), identity(4), body)
    e.ops.extend(low.ops)
    return out


def _fma_chain_fc(low, pieces, out_shape) -> SSAValue:
    from xdsl.dialects import math as mathd
    from xdsl.dialects.builtin import TensorType, f32

    from transforms.lower_to_linalg import amap, dim

    acc = 0.0
    for x, xmap, w in pieces:  # (x the float32 activations, `_dequantized`)
        def body(s, wv, xv, a):
            return s.emit(mathd.FmaOp(xv, wv, a))

        acc = low.generic([w, x], [amap(3, [dim(1), dim(2)]), xmap], TensorType(f32, out_shape),
                          amap(3, [dim(0), dim(1)]), body, iterators=["parallel", "parallel", "reduction"], init=acc)
    return acc


def _float_global_avg(e: Emitter, op) -> SSAValue:
    """Float GlobalAveragePool (MlasPoolGlobalKernel, `ort.mlas_global_avg_f32`) of dequantized
    integers: lane j of 4 sums elements j, j + 4, ... of the first 4 floor(HW / 4) in row-major
    order, `(l0 + l2) + (l1 + l3)`, the rest added one by one, `/ f32(HW)`; then QuantizeLinear.
    One elementwise generic reading each position of the plane through its own map."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import f32

    from transforms.lower_to_linalg import Lowering, amap, dim, identity

    x_v = op.operands[0]
    x_q = qp(x_v)
    if x_q.per_axis or qp(op.results[0]).per_axis:
        raise Unsupported(f"{op.name} in float with per-axis parameters")
    n, h, w, c = qint.shape_of(x_v)
    size = h * w
    if size > _MAX_UNROLLED_TERMS:
        raise Unsupported(f"{op.name} in float over {size} positions (unrolled)")
    out_shape = list(qint.shape_of(op.results[0]))
    rank = len(out_shape)
    x = e.storage(x_v)
    low = Lowering()
    ch = dim(rank - 1)
    maps = [amap(rank, [dim(0), i // w, i % w, ch]) for i in range(size)]
    full = size - size % 4

    def body(s, *args):
        def d(i):  # the clamp (no-op) keeps the product one rounding: no fused multiply-add
            return _dequant_scalar(s, args[i], x_q)  # (guarded there)

        zero = s.const(0.0, f32)
        lanes = [zero] * 4
        for i in range(full):
            lanes[i % 4] = s.emit(arith.AddfOp(lanes[i % 4], d(i)))
        acc = s.emit(arith.AddfOp(s.emit(arith.AddfOp(lanes[0], lanes[2])), s.emit(arith.AddfOp(lanes[1], lanes[3]))))
        for i in range(full, size):
            acc = s.emit(arith.AddfOp(acc, d(i)))
        return _quantize_scalar(s, s.emit(arith.DivfOp(acc, s.const(float(size), f32))), op)

    out = low.generic([x] * size, maps, int_tensor(out_shape, qp(op.results[0]).bits), identity(rank), body)
    e.ops.extend(low.ops)
    return out
