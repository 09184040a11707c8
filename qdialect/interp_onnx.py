"""The reference interpreter's recipes for the ONNX profiles (`rounding = "onnxruntime" | "onnx"`).

A profile is a table: (profile, qnn op class) -> numpy recipe.  The interpreter
asks it for every op whose rounding knob names an ONNX profile; an op with no
recipe under that profile is refused by name (never run under another
profile's arithmetic).

- `onnxruntime`: ONNX Runtime 1.32's integer CPU kernels
  (`qdialect.reference.onnxruntime_kernels`: QLinearConv, QGemm /
  QLinearMatMul, QLinearAdd / QLinearMul, lookup tables, QLinearAveragePool,
  QLinearGlobalAveragePool, QLinearConcat, QLinearSoftmax).  The u8 x s8 dot
  products follow the CPU this runs on (`detect_isa`: vpmaddubsw's int16
  saturation on AVX2 without VNNI; `QDIALECT_ORT_ISA=avx2|vnni|sse` picks
  another CPU's, e.g. to compare with ORT under `qemu-x86_64 -cpu Haswell`).
- `onnx`: the ONNX specification's QDQ meaning, what ORT computes for a
  group it does not fuse (and with all graph optimizations off):
  DequantizeLinear (`f32(q - zp) * s`), the float op in float32,
  QuantizeLinear (`x / s`, saturate, ties to even), with ORT's own float
  kernels: MLAS's convolution and SGEMM summation orders (fused
  multiply-add chains in K order, K blocks, bias last), its sigmoid / tanh /
  exp approximations, its pooling and Eigen's reduction orders
  (`onnxruntime_kernels.mlas_*`).  A float convolution with DequantizeLinear
  weights runs the same kernel in both sessions (the NCHWc rewrite needs
  float initializer weights); `FLOAT_CONV_SESSION` picks the kernel for the
  other case.
"""

from __future__ import annotations

import numpy as np

from qdialect.dialects import nn, qnn
from qdialect.qparams import QParams
from qdialect.reference import onnxruntime_kernels as ort

F32 = np.float32


class NoRecipe(Exception):
    pass


def _isa() -> str:
    return ort.detect_isa()


def _q(value) -> QParams | None:
    t = qnn.qtype(value)
    return t.qparams() if t is not None else None


def _clamp(op, y: np.ndarray) -> np.ndarray:
    if "act_min" not in op.ATTRS:
        return y
    lo, hi = op.clamp_bounds()
    if lo is None and hi is None:
        return y
    info = _q(op.results[0])
    lo = info.storage_min if lo is None else lo
    hi = info.storage_max if hi is None else hi
    return np.clip(y, lo, hi).astype(y.dtype)


def _pads(op) -> tuple[tuple[int, int], tuple[int, int]]:
    p = op.attr("padding", [0, 0, 0, 0])
    return (int(p[0]), int(p[1])), (int(p[2]), int(p[3]))


def _pair(op, name):
    v = op.attr(name, [1, 1])
    return int(v[0]), int(v[1])


def _depthwise_as_grouped(w: np.ndarray, channels: int) -> np.ndarray:
    """[1, KH, KW, C*m] -> OHWI [C*m, KH, KW, 1] (groups = C)."""
    return np.ascontiguousarray(np.asarray(w).transpose(3, 1, 2, 0))


def _depthwise_q(w_q: QParams) -> QParams:
    if not w_q.per_axis:
        return w_q
    return QParams(w_q.bits, w_q.signed, w_q.storage_min, w_q.storage_max, w_q.scale, w_q.zero_point, 0,
                   w_q.expressed)


# ======================================================================================
# onnxruntime: the integer kernels
# ======================================================================================

_ORT: dict[type, object] = {}
_FLOAT: dict[type, object] = {}


def _recipe(table, *classes):
    def register(fn):
        for c in classes:
            table[c] = fn
        return fn

    return register


@_recipe(_ORT, qnn.Conv2DOp)
def _ort_conv(op, args):
    x, w, b = args
    y = ort.qlinear_conv(x, w, b, x_q=_q(op.operands[0]), w_q=_q(op.operands[1]), out_q=_q(op.results[0]),
                         strides=_pair(op, "strides"), padding=_pads(op), dilations=_pair(op, "dilations"),
                         groups=1, isa=_isa())
    return _clamp(op, y)


@_recipe(_ORT, qnn.DepthwiseConv2DOp)
def _ort_depthwise(op, args):
    x, w, b = args
    c = x.shape[3]
    y = ort.qlinear_conv(x, _depthwise_as_grouped(w, c), b, x_q=_q(op.operands[0]),
                         w_q=_depthwise_q(_q(op.operands[1])), out_q=_q(op.results[0]),
                         strides=_pair(op, "strides"), padding=_pads(op), dilations=_pair(op, "dilations"),
                         groups=c, isa=_isa())
    return _clamp(op, y)


@_recipe(_ORT, qnn.FullyConnectedOp)
def _ort_fc(op, args):
    x, w, b = args
    k = w.shape[1]
    rows = np.asarray(x).reshape(-1, k)
    y = ort.qgemm(rows, w, b, a_q=_q(op.operands[0]), w_q=_q(op.operands[1]), out_q=_q(op.results[0]),
                  isa=_isa())
    return _clamp(op, np.asarray(y).reshape(op.results[0].type.get_shape()))


@_recipe(_ORT, qnn.BatchMatmulOp)
def _ort_batch_matmul(op, args):
    a, b = args
    if op.attr("adj_x", False):
        a = np.swapaxes(a, -1, -2)
    if op.attr("adj_y", False):
        b = np.swapaxes(b, -1, -2)
    y = ort.qlinear_matmul(a, b, a_q=_q(op.operands[0]), b_q=_q(op.operands[1]), out_q=_q(op.results[0]),
                           isa=_isa())
    return _clamp(op, y)


@_recipe(_ORT, qnn.AddOp)
def _ort_add(op, args):
    return _clamp(op, ort.qlinear_add(*args, a_q=_q(op.operands[0]), b_q=_q(op.operands[1]),
                                      out_q=_q(op.results[0])))


@_recipe(_ORT, qnn.MulOp)
def _ort_mul(op, args):
    return _clamp(op, ort.qlinear_mul(*args, a_q=_q(op.operands[0]), b_q=_q(op.operands[1]),
                                      out_q=_q(op.results[0])))


@_recipe(_ORT, qnn.LogisticOp)
def _ort_sigmoid(op, args):
    return ort.qlinear_sigmoid(args[0], x_q=_q(op.operands[0]), out_q=_q(op.results[0]))


@_recipe(_ORT, qnn.LeakyReluOp)
def _ort_leaky_relu(op, args):
    return ort.qlinear_leaky_relu(args[0], x_q=_q(op.operands[0]), out_q=_q(op.results[0]),
                                  alpha=op.attr("alpha"))


@_recipe(_ORT, qnn.SoftmaxOp)
def _ort_softmax(op, args):
    if op.attr("beta", 1.0) != 1.0:
        raise NoRecipe("qnn.softmax with beta != 1 has no onnxruntime recipe (QLinearSoftmax has no beta)")
    return ort.qlinear_softmax(args[0], x_q=_q(op.operands[0]), out_q=_q(op.results[0]), axis=-1)


@_recipe(_ORT, qnn.AvgPool2DOp)
def _ort_avg_pool(op, args):
    y = ort.qlinear_avg_pool(args[0], x_q=_q(op.operands[0]), out_q=_q(op.results[0]),
                             kernel=_pair(op, "kernel"), strides=_pair(op, "strides"), padding=_pads(op),
                             count_include_pad=0)
    return _clamp(op, y)


@_recipe(_ORT, qnn.MeanOp)
def _ort_mean(op, args):
    x = args[0]
    axes = sorted(a % x.ndim for a in op.attr("axes"))
    if x.ndim != 4 or axes != [1, 2] or not op.attr("keep_dims", False):
        raise NoRecipe("qnn.mean under onnxruntime is QLinearGlobalAveragePool: NHWC, axes [1, 2], keep_dims")
    return _clamp(op, ort.qlinear_global_avg_pool(x, x_q=_q(op.operands[0]), out_q=_q(op.results[0])))


@_recipe(_ORT, qnn.ConcatenationOp)
def _ort_concat(op, args):
    y = ort.qlinear_concat(args, x_qs=[_q(v) for v in op.operands], out_q=_q(op.results[0]),
                           axis=op.attr("axis") % args[0].ndim)
    return _clamp(op, y)


@_recipe(_ORT, qnn.QuantizeOp, qnn.RequantizeOp)
def _quantize(op, args):
    out_q = _q(op.results[0])
    x = args[0]
    if isinstance(op, qnn.RequantizeOp):
        x = _dequantize(x, _q(op.operands[0]))
    y = ort.quantize_linear(np.asarray(x, F32), out_q=out_q)
    return _clamp(op, y)


_FLOAT[qnn.QuantizeOp] = _quantize
_FLOAT[qnn.RequantizeOp] = _quantize


# ======================================================================================
# onnx: dequantize, float32 op, quantize
# ======================================================================================


def _dequantize(x, q: QParams) -> np.ndarray:
    return ort.dequantize_linear(x, x_q=q)


def _operands_f32(op, args):
    return [_dequantize(a, _q(v)) if _q(v) is not None else np.asarray(a) for a, v in zip(args, op.operands)]


def _requant(op, yf: np.ndarray) -> np.ndarray:
    y = ort.quantize_linear(np.asarray(yf, F32), out_q=_q(op.results[0]))
    return _clamp(op, y)


#: the float convolution kernel for a qnn conv whose weights ORT would see as a float initializer
#: ("default": the NCHWc rewrite).  A QDQ group's weights are a DequantizeLinear of an
#: initializer, which ORT's default session does not fold (its constant folding skips
#: DequantizeLinear), so its Conv runs MlasConv in both sessions: "disable_all".
FLOAT_CONV_SESSION = "disable_all"


def _conv_session(op) -> str:
    return FLOAT_CONV_SESSION


def _onnx_pads(op) -> tuple[int, int, int, int]:
    """qnn padding [top, bottom, left, right] -> ONNX order (top, left, bottom, right)."""
    (pt, pb), (pl, pr) = _pads(op)
    return pt, pl, pb, pr


def _is_constant(value) -> bool:
    return isinstance(getattr(value, "owner", None), qnn.ConstantOp)


@_recipe(_FLOAT, qnn.Conv2DOp)
def _f_conv(op, args):
    xf, wf, bf = _operands_f32(op, args)
    y = ort.mlas_conv_f32(np.asarray(xf, F32).transpose(0, 3, 1, 2), np.asarray(wf, F32).transpose(0, 3, 1, 2),
                          np.asarray(bf, F32), _pair(op, "strides"), _onnx_pads(op), _pair(op, "dilations"), 1,
                          session=_conv_session(op))
    return _requant(op, y.transpose(0, 2, 3, 1))


@_recipe(_FLOAT, qnn.DepthwiseConv2DOp)
def _f_depthwise(op, args):
    xf, wf, bf = _operands_f32(op, args)
    c = xf.shape[3]
    w = np.asarray(wf, F32).transpose(3, 0, 1, 2)  # [1, KH, KW, C*m] -> OIHW [C*m, 1, KH, KW]
    y = ort.mlas_conv_f32(np.asarray(xf, F32).transpose(0, 3, 1, 2), w, np.asarray(bf, F32),
                          _pair(op, "strides"), _onnx_pads(op), _pair(op, "dilations"), c,
                          session=_conv_session(op))
    return _requant(op, y.transpose(0, 2, 3, 1))


@_recipe(_FLOAT, qnn.FullyConnectedOp)
def _f_fc(op, args):
    xf, wf, bf = _operands_f32(op, args)
    k = wf.shape[1]
    y = ort.mlas_gemm_f32(np.asarray(xf, F32).reshape(-1, k), wf, np.asarray(bf, F32), transB=1, const_b=True)
    return _requant(op, y.reshape(op.results[0].type.get_shape()))


@_recipe(_FLOAT, qnn.BatchMatmulOp)
def _f_batch_matmul(op, args):
    a, b = _operands_f32(op, args)
    if op.attr("adj_x", False):
        a = np.swapaxes(a, -1, -2)
    if op.attr("adj_y", False):
        b = np.swapaxes(b, -1, -2)
    const_b = b.ndim == 2 and _is_constant(op.operands[1])
    return _requant(op, ort.mlas_matmul_f32(a, b, const_b=const_b))


@_recipe(_FLOAT, qnn.AddOp)
def _f_add(op, args):
    a, b = _operands_f32(op, args)
    return _requant(op, (a + b).astype(F32))


@_recipe(_FLOAT, qnn.SubOp)
def _f_sub(op, args):
    a, b = _operands_f32(op, args)
    return _requant(op, (a - b).astype(F32))


@_recipe(_FLOAT, qnn.MulOp)
def _f_mul(op, args):
    a, b = _operands_f32(op, args)
    return _requant(op, (a * b).astype(F32))


@_recipe(_FLOAT, qnn.LogisticOp)
def _f_sigmoid(op, args):
    (x,) = _operands_f32(op, args)
    # ORT's float Sigmoid is MLAS's rational approximation: evaluate it once per distinct input
    uniq, inv = np.unique(x.reshape(-1), return_inverse=True)
    y = ort.mlas_logistic(uniq)[inv].reshape(x.shape)
    return _requant(op, y)


@_recipe(_FLOAT, qnn.TanhOp)
def _f_tanh(op, args):
    (x,) = _operands_f32(op, args)
    # ORT's float Tanh is MLAS's rational approximation (MlasComputeTanhF32KernelFma3), once per distinct input
    uniq, inv = np.unique(x.reshape(-1), return_inverse=True)
    return _requant(op, ort.mlas_tanh(uniq)[inv].reshape(x.shape))


@_recipe(_FLOAT, qnn.HardSwishOp)
def _f_hard_swish(op, args):
    (x,) = _operands_f32(op, args)
    # ORT rewrites HardSwish as x * HardSigmoid(x), HardSigmoid = max(0, min(1, x / 6 + 0.5))
    hs = np.clip((x * F32(1.0 / 6.0)).astype(F32) + F32(0.5), F32(0), F32(1)).astype(F32)
    return _requant(op, (x * hs).astype(F32))


@_recipe(_FLOAT, qnn.HardSigmoidOp)
def _f_hard_sigmoid(op, args):
    (x,) = _operands_f32(op, args)
    # ORT's HardSigmoid functor (Eigen): (x * alpha + beta).cwiseMin(1).cwiseMax(0), no fused multiply-add
    v = ((x * F32(op.attr("alpha"))).astype(F32) + F32(op.attr("beta"))).astype(F32)
    return _requant(op, np.maximum(np.minimum(v, F32(1)), F32(0)).astype(F32))


@_recipe(_FLOAT, qnn.LeakyReluOp)
def _f_leaky_relu(op, args):
    (x,) = _operands_f32(op, args)
    return _requant(op, np.where(x >= 0, x, (F32(op.attr("alpha")) * x).astype(F32)).astype(F32))


@_recipe(_FLOAT, qnn.SoftmaxOp)
def _f_softmax(op, args):
    (x,) = _operands_f32(op, args)
    beta = float(op.attr("beta", 1.0))
    if beta != 1.0:
        # ONNX Softmax has no beta: a float32 Mul by beta in front of it
        x = (x * F32(beta)).astype(F32)
    # ORT's float Softmax: MlasComputeSoftmax (MLAS exp, 16-lane sum, e * (1 / sum))
    return _requant(op, ort.mlas_softmax_f32(x, axis=-1))


@_recipe(_FLOAT, qnn.AvgPool2DOp)
def _f_avg_pool(op, args):
    # ORT's float AveragePool opset 7..18 is MlasPool (vector / generic / global kernel, see
    # ort.mlas_avg_pool_f32); qnn.avg_pool2d excludes padding (count_include_pad=1 arrives as an
    # explicit pad of the zero point and an unpadded pool, which MlasPool computes the same way).
    (x,) = _operands_f32(op, args)
    return _requant(op, _float_avg_pool(op, x))


def onnx_opset(op) -> int | None:
    """The default-domain opset of the ONNX model `op` was imported from (`onnx.opset` on its module)."""
    p = op.parent_op()
    while p is not None and p.name != "builtin.module":
        p = p.parent_op()
    attr = p.attributes.get("onnx.opset") if p is not None else None
    return getattr(attr, "value", None) and attr.value.data


def _float_avg_pool(op, x: np.ndarray) -> np.ndarray:
    """ORT's float AveragePool: MlasPool up to opset 18, AveragePoolV19's scalar loop from 19."""
    kernel, strides, padding = _pair(op, "kernel"), _pair(op, "strides"), _pads(op)
    if (onnx_opset(op) or 0) >= 19:
        return np.asarray(ort.avg_pool19_f32(x, kernel=kernel, strides=strides, padding=padding), F32)
    return np.asarray(ort.mlas_avg_pool_f32(x, kernel=kernel, strides=strides, padding=padding,
                                            count_include_pad=0), F32)


@_recipe(_FLOAT, qnn.MeanOp)
def _f_mean(op, args):
    (x,) = _operands_f32(op, args)
    axes = tuple(sorted(a % x.ndim for a in op.attr("axes")))
    keep = bool(op.attr("keep_dims", False))
    if x.ndim == 4 and axes == (1, 2):
        # float GlobalAveragePool = MlasPoolGlobalKernel (4-lane sums, then / H*W)
        y = ort.mlas_global_avg_f32(x)
        return _requant(op, y if keep else y.reshape(x.shape[0], x.shape[3]))
    # ReduceMean: the importer keeps it in ONNX order (trailing axes), as ORT's KR fast path reduces
    return _requant(op, ort.reduce_mean_f32(x, axes, keepdims=keep))


@_recipe(_FLOAT, qnn.ConcatenationOp)
def _f_concat(op, args):
    out_q = _q(op.results[0])
    parts = []
    for a, v in zip(args, op.operands):
        q = _q(v)
        same = (q.storage == out_q.storage and np.array_equal(q.scale, out_q.scale)
                and np.array_equal(q.zero_point, out_q.zero_point))
        parts.append(np.asarray(a) if same else ort.quantize_linear(_dequantize(a, q), out_q=out_q))
    y = np.concatenate([p.astype(out_q.dtype) for p in parts], axis=op.attr("axis") % args[0].ndim)
    return _clamp(op, y)


# ======================================================================================
# float islands: nn ops an ONNX model computes in float (`qnn.rounding = "onnx"`)
# ======================================================================================

_NN: dict[type, object] = {}


def _nn_recipe(*classes):
    def register(fn):
        for c in classes:
            _NN[c] = fn
        return fn

    return register


@_nn_recipe(nn.AddOp, nn.SubOp, nn.MulOp)
def _nn_binary(op, args):
    a, b = (np.asarray(v, F32) for v in args)
    fn = {nn.AddOp: np.add, nn.SubOp: np.subtract, nn.MulOp: np.multiply}[type(op)]
    return fn(a, b).astype(F32)


@_nn_recipe(nn.LogisticOp)
def _nn_sigmoid(op, args):
    x = np.asarray(args[0], F32)
    uniq, inv = np.unique(x.reshape(-1), return_inverse=True)
    return ort.mlas_logistic(uniq)[inv].reshape(x.shape).astype(F32)


@_nn_recipe(nn.TanhOp)
def _nn_tanh(op, args):
    x = np.asarray(args[0], F32)
    uniq, inv = np.unique(x.reshape(-1), return_inverse=True)
    return np.asarray(ort.mlas_tanh(uniq), F32)[inv].reshape(x.shape)


@_nn_recipe(nn.ReluOp)
def _nn_relu(op, args):
    x = np.asarray(args[0], F32)
    return np.maximum(x, F32(0)).astype(F32)


@_nn_recipe(nn.ClipOp)
def _nn_clip(op, args):
    x = np.asarray(args[0], F32)
    lo, hi = op.attr("min"), op.attr("max")
    if lo is not None:
        x = np.maximum(x, F32(lo))
    if hi is not None:
        x = np.minimum(x, F32(hi))
    return x.astype(F32)


@_nn_recipe(nn.SoftmaxOp)
def _nn_softmax(op, args):
    x = np.asarray(args[0], F32)
    return np.asarray(ort.mlas_softmax_f32(x, axis=-1), F32)


@_nn_recipe(nn.MeanOp)
def _nn_mean(op, args):
    x = np.asarray(args[0], F32)
    axes = tuple(sorted(a % x.ndim for a in op.attr("axes")))
    keep = bool(op.attr("keep_dims", False))
    return np.asarray(ort.reduce_mean_f32(x, axes, keepdims=keep), F32)


@_nn_recipe(nn.AvgPool2DOp)
def _nn_avg_pool(op, args):
    x = np.asarray(args[0], F32)
    kh, kw = _pair(op, "kernel")
    if (kh, kw) == x.shape[1:3] and not any(op.attr("padding", [0, 0, 0, 0])):
        # the importer writes a float GlobalAveragePool as a whole-image pool (and refuses an
        # opset >= 19 AveragePool of that shape, which ORT computes with another kernel)
        return ort.mlas_global_avg_f32(x)
    return _float_avg_pool(op, x)


def evaluate_nn(it, op, args):
    """A float op of an ONNX model: ORT's float kernel, or None for data movement (exact anywhere)."""
    fn = _NN.get(type(op))
    if fn is not None:
        try:
            return fn(op, [np.asarray(a) for a in args])
        except NotImplementedError as e:
            raise NoRecipe(f"{op.name} in the 'onnx' profile: {e}") from None
    if isinstance(op, (nn.ReshapeOp, nn.TransposeOp, nn.SliceOp, nn.PadOp, nn.ConcatenationOp, nn.MaxPool2DOp,
                       nn.ConstantOp)):
        return None
    raise NoRecipe(f"{op.name} has no recipe in the 'onnx' profile")


# ops that compare or move stored integers: the same in every profile when parameters match
_INTEGER = (qnn.MaxPool2DOp, qnn.ClampOp, qnn.MaximumOp, qnn.MinimumOp)


def evaluate(it, op, args, profile: str):
    """Run `op` under an ONNX profile; raises NoRecipe for an op the profile does not define."""
    table = _ORT if profile == "onnxruntime" else _FLOAT
    fn = table.get(type(op))
    if fn is None and profile == "onnxruntime":
        fn = _FLOAT.get(type(op)) if isinstance(op, (qnn.SubOp, qnn.TanhOp, qnn.HardSwishOp,
                                                     qnn.HardSigmoidOp)) else None
    if fn is not None:
        try:
            return fn(op, [np.asarray(a) for a in args])
        except NotImplementedError as e:  # a case ORT's kernel has that the reference does not model
            raise NoRecipe(f"{op.name} in the '{profile}' profile: {e}") from None
    if isinstance(op, _INTEGER) or (isinstance(op, qnn.ConcatenationOp)):
        return None  # the profile-independent integer handler
    raise NoRecipe(f"{op.name} has no recipe in the '{profile}' profile")


# the float ops of transformer encoders (nn.div, nn.sqrt, nn.erf, nn.layer_norm) add their recipes to _NN
from qdialect import interp_onnx_float  # noqa: E402,F401
from qdialect import interp_onnx_nbits  # noqa: E402,F401  (MatMulNBits: nn.fully_connected ort_nbits)
