"""Random *valid* L1 modules with extreme quantization parameters, for the IR fuzzer.

Text mutation mostly produces input the parser or verifier rejects; to reach
the interpreter and the passes with legal-but-nasty input, this module builds
small qnn graphs with the GraphBuilder: scales from the smallest subnormal to
the largest float of the expressed type, zero points at the storage bounds,
storage widths from i2 to i32 (and unsigned), narrowed ranges, per-axis
weights with one channel, zero-size and rank-0 tensors, every knob value and
clamp bounds at and inside the range.
"""

from __future__ import annotations

import random

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Region

from qdialect.builder import GraphBuilder
from qdialect.dialects import qnn
from qdialect.dialects.quant import UniformQuantizedType as Q
from qdialect.qparams import storage_bounds

_F32_TINY, _F32_MAX = 2.0**-149, float(np.finfo(np.float32).max)
_STORAGES = ["i8"] * 8 + ["u8"] * 2 + ["i16"] * 3 + ["i4", "i2", "i32", "u16", "u4", "u32"]
_ROUNDINGS = ["tflite", "single", "half_even", "half_up", "litert"]


def rscale(rng: random.Random) -> float:
    r = rng.random()
    if r < 0.5:
        return float(np.float32(10 ** rng.uniform(-4, 1)))
    if r < 0.6:
        return rng.choice([_F32_TINY, _F32_MAX, 1.0, 2.0**-126, 2.0**-31, 2.0**31, 1e-38, 1e38, 2.0**-32])
    return float(np.float32(10 ** rng.uniform(-44, 38)))


def rzp(rng: random.Random, lo: int, hi: int) -> int:
    r = rng.random()
    if r < 0.4:
        return 0 if lo <= 0 <= hi else lo
    if r < 0.7:
        return rng.choice([lo, hi, lo + 1, hi - 1])
    return rng.randint(lo, hi)


def rqtype(rng: random.Random, storage: str | None = None, per_axis: int | None = None, axis: int = 0,
           symmetric: bool = False) -> Q:
    storage = storage or rng.choice(_STORAGES)
    lo, hi = storage_bounds(int(storage[1:]), storage[0] == "i")
    smin = smax = None
    if rng.random() < 0.15 and hi - lo > 2:
        smin, smax = lo + 1, hi
        lo = smin
    if per_axis is not None:
        scales = [rscale(rng) for _ in range(per_axis)]
        zps = [min(max(0, lo), hi) if symmetric else rzp(rng, lo, hi) for _ in range(per_axis)]
        return Q.per_axis(scales, zps, axis=axis, storage=storage, storage_min=smin, storage_max=smax)
    return Q.per_tensor(rscale(rng), min(max(0, lo), hi) if symmetric else rzp(rng, lo, hi), storage=storage,
                        storage_min=smin, storage_max=smax)


def _values(rng: random.Random, q: Q, shape) -> np.ndarray:
    lo, hi = q.storage_range()
    mode = rng.random()
    if mode < 0.2:
        arr = np.full(shape, rng.choice([lo, hi]), dtype=np.int64)
    else:
        arr = np.asarray(np.random.default_rng(rng.randrange(1 << 30)).integers(lo, hi + 1, size=shape))
    return arr.astype(q.qparams().dtype)


def _knobs(rng: random.Random, weighted: bool) -> dict:
    k = {}
    if rng.random() < 0.5:
        k["rounding"] = rng.choice(_ROUNDINGS)
    if weighted:
        if rng.random() < 0.3:
            k["bias"] = rng.choice(["accumulator", "output"])
        if rng.random() < 0.5:
            k["acc"] = rng.choice(["i16", "i32", "i64"])
        if rng.random() < 0.3:
            k["acc_overflow"] = rng.choice(["wrap", "saturate"])
    return k


def _clamp(rng: random.Random, out: Q) -> dict:
    if rng.random() < 0.7:
        return {}
    lo, hi = out.storage_range()
    a = rng.choice([lo, hi, rng.randint(lo, hi)])
    b = rng.choice([hi, a, rng.randint(a, hi)])
    return {"act_min": a, "act_max": b}


def _act(rng: random.Random) -> str | None:
    return rng.choice([None, None, "relu", "relu6", "relu_n1_to_1"])


def _dim(rng: random.Random) -> int:
    return rng.choice([1, 1, 2, 3, 4, 5, 7] + ([0] if rng.random() < 0.1 else []))


def random_module(rng: random.Random) -> str:
    """One small verified-by-construction graph as text (may still be rejected: that is fine)."""
    g = GraphBuilder()
    kind = rng.choice(["conv", "depthwise", "tconv", "fc", "bmm", "binary", "unary", "pool", "reduce", "move", "fixed"])
    act_storage = rng.choice(["i8"] * 6 + ["u8", "i16", "i16", "i4", "i32"])
    xq = rqtype(rng, act_storage)
    out_q = rqtype(rng, act_storage if rng.random() < 0.8 else None)
    n, h, w, c = 1, _dim(rng) + 2, _dim(rng) + 2, _dim(rng) or 1
    if kind in ("conv", "depthwise", "tconv"):
        x = g.input([n, h, w, c], xq)
        kh, kw = rng.choice([1, 2, 3]), rng.choice([1, 2, 3])
        if kind in ("conv", "tconv"):
            o = rng.choice([1, 1, 2, 3])
            wshape, axis = (o, kh, kw, c), 0
        else:
            o = c * rng.choice([1, 2])
            wshape, axis = (1, kh, kw, o), 3
        per = rng.random() < 0.6
        wq = rqtype(rng, rng.choice(["i8", "i8", "i4", "u8"]), per_axis=o if per else None, axis=axis, symmetric=rng.random() < 0.7)
        wt = g.constant(_values(rng, wq, wshape), wq)
        bias_store = "i64" if act_storage == "i16" and rng.random() < 0.5 else "i32"
        bvals = np.array([rng.choice([0, 1, -1, 2**31 - 1, -(2**31), rng.randint(-1000, 1000)]) for _ in range(o)])
        if bias_store == "i64":
            bvals = bvals * rng.choice([1, 1 << 20])
        try:
            b = g.bias(bvals.astype(np.int64 if bias_store == "i64" else np.int32), x, wt, storage=bias_store)
        except Exception:  # noqa: BLE001 - a bias scale the verifier refuses: use a plain i32 tensor
            from xdsl.dialects.arith import ConstantOp
            from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, i32

            cst = ConstantOp(DenseIntOrFPElementsAttr.from_list(TensorType(i32, [o]), [int(v) % 2**31 for v in bvals]))
            g.block.add_op(cst)
            b = cst.result
        pad = rng.choice(["VALID", "SAME", [rng.randint(0, 2) for _ in range(4)]])
        strides = (rng.choice([1, 2, 3]), rng.choice([1, 2]))
        dil = (rng.choice([1, 1, 2]), 1)
        if kind == "tconv":  # transposed: the padding crops the full (h - 1) * stride + kernel output
            pads = [rng.randint(0, kh - 1), rng.randint(0, kh - 1), rng.randint(0, kw - 1), rng.randint(0, kw - 1)]
            oh = (h - 1) * strides[0] + kh - pads[0] - pads[1]
            ow = (w - 1) * strides[1] + kw - pads[2] - pads[3]
            y = g.op(qnn.TransposeConv2DOp, [x, wt, b], [TensorType(out_q, [n, oh, ow, o])], strides=list(strides),
                     padding=pads, **_clamp(rng, out_q), **_knobs(rng, True))[0]
        else:
            fn = g.conv2d if kind == "conv" else g.depthwise_conv2d
            y = fn(x, wt, b, out_q, strides=strides, dilations=dil, padding=pad, activation=_act(rng), **_knobs(rng, True))
    elif kind == "fc":
        k = _dim(rng) or 1
        rows = rng.choice([1, 2, 3])
        x = g.input([rows, k], xq)
        o = rng.choice([1, 2, 5])
        per = rng.random() < 0.4
        wq = rqtype(rng, "i8", per_axis=o if per else None, axis=0, symmetric=True)
        wt = g.constant(_values(rng, wq, (o, k)), wq)
        b = g.bias(np.array([rng.randint(-(2**31), 2**31 - 1) if rng.random() < 0.2 else rng.randint(-99, 99)
                             for _ in range(o)], np.int32), x, wt)
        y = g.fully_connected(x, wt, b, out_q, activation=_act(rng), **_knobs(rng, True))
    elif kind == "bmm":
        m, k, nn = _dim(rng) or 1, _dim(rng) or 1, _dim(rng) or 1
        a = g.input([2, m, k], xq)
        bq = rqtype(rng, act_storage)
        bb = g.input([2, k, nn], bq)
        y = g.op(qnn.BatchMatmulOp, [a, bb], [TensorType(out_q, [2, m, nn])], **_knobs(rng, True),
                 **_clamp(rng, out_q))[0]
    elif kind == "binary":
        shape = rng.choice([[2, 3], [1, 4], [3], [], [0, 2], [1, 1, 2, 2]])
        a = g.input(shape, xq)
        bshape = rng.choice([shape, shape[-1:], [1] * len(shape), []])
        bq = rqtype(rng, act_storage)
        op = rng.choice(["add", "sub", "mul", "maximum", "minimum", "squared_difference", "prelu"])
        if op in ("maximum", "minimum"):
            bb = g.input(bshape, xq)
            y = g.maximum(a, bb) if op == "maximum" else g.minimum(a, bb)
        else:
            bb = g.input(bshape, bq)
            cls = {"add": qnn.AddOp, "sub": qnn.SubOp, "mul": qnn.MulOp, "squared_difference": qnn.SquaredDifferenceOp,
                   "prelu": qnn.PReluOp}[op]
            oshape = list(np.broadcast_shapes(tuple(shape), tuple(bshape)))
            y = g.op(cls, [a, bb], [TensorType(out_q, oshape)], **_knobs(rng, False), **_clamp(rng, out_q))[0]
    elif kind == "unary":
        shape = rng.choice([[2, 3], [5], [], [0], [1, 2, 2, 1]])
        x = g.input(shape, xq)
        op = rng.choice(["requantize", "clamp", "hard_swish", "leaky_relu", "elu"])
        if op == "requantize":
            if rng.random() < 0.3:
                xq2 = rqtype(rng, act_storage, per_axis=shape[0] if shape and shape[0] else None, axis=0)
                x = g.input(shape, xq2)
            y = g.requantize(x, out_q, **_knobs(rng, False))
        elif op == "clamp":
            y = g.op(qnn.ClampOp, [x], [TensorType(out_q, shape)], **_knobs(rng, False), **_clamp(rng, out_q))[0]
        elif op == "leaky_relu":
            y = g.leaky_relu(x, out_q, alpha=rng.choice([0.0, 0.1, -1.0, 1e-45, 3e38, 1.0, 0.2]), **_knobs(rng, False))
        else:
            cls = qnn.HardSwishOp if op == "hard_swish" else qnn.EluOp
            y = g.op(cls, [x], [TensorType(out_q, shape)], **_knobs(rng, False))[0]
    elif kind == "fixed":
        storage = rng.choice(["i8", "u8", "i16"])
        xq = rqtype(rng, storage)
        shape = rng.choice([[1, 5], [2, 3], [1, 1], [1, 0]])
        x = g.input(shape, xq)
        op = rng.choice(["logistic", "tanh", "softmax", "log_softmax"])
        if op == "log_softmax" and storage == "i16":
            op = "softmax"
        if op == "softmax":
            y = g.softmax(x, beta=rng.choice([1.0, 0.5, 2.0, 1e-10, 1e10]), **_knobs(rng, False))
        else:
            y = getattr(g, op)(x, **_knobs(rng, False))
    elif kind == "pool":
        x = g.input([n, h, w, c], xq)
        k = (rng.choice([1, 2, 3]), rng.choice([1, 2, 3]))
        s = (rng.choice([1, 2]), rng.choice([1, 2]))
        pad = rng.choice(["VALID", "SAME"])
        y = (g.avg_pool2d if rng.random() < 0.5 else g.max_pool2d)(x, k, s, pad)
    elif kind == "reduce":
        x = g.input([n, h, w, c], xq)
        axes = rng.choice([[1, 2], [3], [0, 1, 2, 3], [-1], [1]])
        keep = rng.random() < 0.5
        op = rng.choice(["mean", "sum", "reduce_max", "reduce_min"])
        if op in ("mean", "sum"):
            y = getattr(g, op)(x, axes, out_q, keep_dims=keep, **_knobs(rng, False))
        else:
            cls = qnn.ReduceMaxOp if op == "reduce_max" else qnn.ReduceMinOp
            y = g._reduce(cls, x, axes, None, keep)
    else:  # data movement
        x = g.input([n, h, w, c], xq)
        op = rng.choice(["reshape", "transpose", "pad", "concat", "slice", "resize"])
        if op == "reshape":
            y = g.reshape(x, [n * h, w * c])
        elif op == "transpose":
            perm = list(range(4))
            rng.shuffle(perm)
            y = g.transpose(x, perm)
        elif op == "pad":
            y = g.pad(x, [[rng.randint(0, 2), rng.randint(0, 2)] for _ in range(4)])
        elif op == "concat":
            y = g.concatenation([x, x], rng.choice([0, 1, 3, -1]))
        elif op == "slice":
            y = g.op(qnn.SliceOp, [x], [TensorType(xq, [n, h - 1, (w + 1) // 2, c])], begin=[0, 1, 0, 0],
                     end=[n, h, w, c], strides=[1, 1, 2, 1])[0]
        else:
            cls = qnn.ResizeBilinearOp if rng.random() < 0.5 else qnn.ResizeNearestNeighborOp
            attrs = {"align_corners": rng.random() < 0.3, "half_pixel_centers": rng.random() < 0.5}
            y = g.op(cls, [x], [TensorType(xq, [n, rng.choice([1, 2 * h, h + 1]), rng.choice([1, w, 3]), c])], **attrs)[0]
    g.output(y)
    g.block.add_op(func.ReturnOp(*g.outputs))
    f = func.FuncOp("main", ([a.type for a in g.block.args], [v.type for v in g.outputs]), Region(g.block))
    return str(ModuleOp([f]))
