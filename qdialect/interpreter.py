"""Run a module's entry function on numpy arrays with the reference semantics.

Every `quant` and `qnn` op is evaluated by the vectorised numpy reference in
`qdialect.reference` (whole arrays at a time, not element by element), so a
real model runs in seconds.  Values are stored integers in the storage
type's numpy container; float tensors are float32.

    from qdialect.interpreter import run_module
    outputs = run_module(module, [x0, x1], rounding="litert")
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, Float64Type, IntegerType, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue

from qdialect.dialects import qnn
from qdialect.dialects.quant import (
    AnyQuantizedType,
    CalibratedQuantizedType,
    DequantizeCastOp,
    QuantizeCastOp,
    StorageCastOp,
    quantized_element_type,
)
from qdialect.io_types import EdgeTypeError, as_declared, declared_dtypes
from qdialect.qparams import ONNX_ROUNDINGS, QParams


class InterpreterError(RuntimeError):
    """An op the interpreter cannot evaluate, or inputs that do not fit; names the op."""


class AccumulatorOverflow(InterpreterError):
    """With `check_overflow`: an accumulator left the width its op declares.

    `op` is the op's name, `position` its index in the function body, `index`
    the first overflowing element (C order, in the accumulator's shape: the
    result's shape, [rows, out] for fully_connected), `value` its exact value,
    `acc` the width ("i16" | "i32" | "i64"), `bounds` that width's range,
    `partial` True when only a running partial sum (saturating accumulation)
    left the range.
    """

    def __init__(self, op: str, position: int, index: tuple[int, ...], value: int, acc: str,
                 bounds: tuple[int, int], partial: bool = False):
        what = "a partial sum" if partial else "the accumulator"
        super().__init__(
            f"{op} (op {position}): {what} overflows {acc} at element {list(index)}: "
            f"exact value {value} is outside [{bounds[0]}, {bounds[1]}]"
        )
        self.op, self.position, self.index, self.value = op, position, index, value
        self.acc, self.bounds, self.partial = acc, bounds, partial


MAX_ELEMENTS = 1 << 26
"""Largest tensor (in elements) the interpreter allocates; larger types are refused up front
(whole-array numpy evaluation keeps int64 intermediates: 2^26 elements are 512 MB each).
Assign a larger value to run bigger models."""
MAX_CALL_DEPTH = 64


def _qp(value: SSAValue, shape: tuple[int, ...] | None = None) -> QParams | None:
    """The parameters of a quantized value (a sub-channel type's expanded to `shape`, the
    value's runtime shape, else to its static one)."""
    q = quantized_element_type(value.type)
    if q is None:
        element = getattr(value.type, "element_type", value.type)
        if isinstance(element, AnyQuantizedType | CalibratedQuantizedType):
            raise InterpreterError(f"{element} has no scale and zero point to compute with")
        return None
    if q.is_sub_channel:
        return _sub_channel_qparams(q, _shape(value) if shape is None else shape)
    return q.qparams()


def _sub_channel_qparams(q, shape: tuple[int, ...]) -> QParams:
    """A sub-channel type's parameters as element-wise arrays of `shape`: element `i` takes the
    scale and zero point of block `i[d] // block[d]` on every axis `d`."""
    scales, zero_points = q.sub_channel_arrays()
    if len(shape) == scales.ndim and all(n >= 0 for n in shape):
        for axis, n in enumerate(shape):
            scales = np.repeat(scales, n // scales.shape[axis], axis=axis)
            zero_points = np.repeat(zero_points, n // zero_points.shape[axis], axis=axis)
    return QParams(bits=q.storage_width.data, signed=q.signed, storage_min=q.storage_min.data,
                   storage_max=q.storage_max.data, scale=scales, zero_point=zero_points, axis=None,
                   expressed="f64" if isinstance(q.expressed_type, Float64Type) else "f32")


def _shape(value: SSAValue) -> tuple[int, ...]:
    t = value.type
    return tuple(t.get_shape()) if isinstance(t, TensorType) else ()


def _pairs(flat: Sequence[int]) -> tuple[tuple[int, int], ...]:
    return tuple((int(flat[i]), int(flat[i + 1])) for i in range(0, len(flat), 2))


def _call(fn: Callable, *args, **kwargs):
    """Call a reference function with the keyword arguments it accepts."""
    params = inspect.signature(fn).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        kwargs = {k: v for k, v in kwargs.items() if k in params}
    return fn(*args, **kwargs)


def _reference(module: str, name: str) -> Callable:
    import importlib

    try:
        mod = importlib.import_module(f"qdialect.reference.{module}")
        return getattr(mod, name)
    except (ImportError, AttributeError) as e:
        raise InterpreterError(f"no reference implementation qdialect.reference.{module}.{name}") from e


class Interpreter:
    """Evaluates one function op by op; `rounding` overrides every op's rounding knob."""

    def __init__(self, module: ModuleOp, rounding: str | None = None, *, check_overflow: bool | str = False,
                 _depth: int = 0):
        self.module = module
        self.rounding = rounding
        # True / "raise": AccumulatorOverflow at the first overflow; "report": collect them in .overflows
        self.check_overflow = check_overflow
        self.overflows: list[AccumulatorOverflow] = []
        self._depth = _depth

    def entry(self, name: str | None = None) -> func.FuncOp:
        from qdialect.entry import EntryError, entry_function

        try:
            return _runnable(entry_function(self.module, name))
        except EntryError as e:
            raise InterpreterError(str(e)) from None

    def run(self, inputs: Sequence[np.ndarray], entry: str | None = None) -> list[np.ndarray]:
        f = self.entry(entry)
        block = f.body.block
        if len(inputs) != len(block.args):
            raise InterpreterError(f"@{f.sym_name.data} takes {len(block.args)} inputs, got {len(inputs)}")
        try:  # the model's unsigned edges (qnn.element_type): results leave in the declared dtype
            declared = None if self._depth else declared_dtypes(f)[1]
        except EdgeTypeError as e:
            raise InterpreterError(str(e)) from None
        env: dict[SSAValue, np.ndarray] = {}
        for i, (arg, value) in enumerate(zip(block.args, inputs)):
            check_size(arg, f"@{f.sym_name.data} input {i}")
            expected = _shape(arg)
            arr = np.asarray(value)
            if tuple(arr.shape) != expected:
                raise InterpreterError(f"input {i} has shape {list(arr.shape)}, @{f.sym_name.data} expects {list(expected)}")
            env[arg] = arr.astype(self._dtype(arg), copy=False)
        for position, op in enumerate(block.ops):
            if isinstance(op, func.ReturnOp):
                results = [env[v] for v in op.operands]
                return results if declared is None else as_declared(results, declared)
            for i, r in enumerate(op.results):
                check_size(r, f"{op.name} result {i}")
            try:
                args = [env[v] for v in op.operands]
            except KeyError:
                raise InterpreterError(f"{op.name}: an operand is not defined before its use in @{f.sym_name.data}") from None
            try:
                if op.results and all(_static_size(r) == 0 for r in op.results):
                    results = [np.zeros(_shape(r), dtype=self._dtype(r)) for r in op.results]
                elif self.check_overflow and "acc" in getattr(op, "ATTRS", ()):
                    results = self._eval_checked(op, args, position)
                else:
                    results = self.eval(op, args)
            except InterpreterError:
                raise
            except (ValueError, TypeError, IndexError, KeyError) as e:
                raise InterpreterError(f"{op.name}: {_one_line(e)}") from e
            except (ArithmeticError, RecursionError) as e:
                raise InterpreterError(
                    f"{op.name}: its arithmetic fails for these quantization parameters "
                    f"({type(e).__name__}: {_one_line(e)})"
                ) from e
            for r, value in zip(op.results, results):
                env[r] = value
        raise InterpreterError(f"@{f.sym_name.data} has no func.return")

    def _eval_checked(self, op: Operation, args: list[np.ndarray], position: int) -> list[np.ndarray]:
        """eval() while watching the accumulators of the op's reference function."""
        from qdialect.reference.linear import observe_accumulators

        def observe(*, exact, terms, bias, acc, acc_overflow):
            bits = {"i16": 16, "i32": 32, "i64": 64}[acc]
            lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
            total = np.asarray(exact(), dtype=np.int64)
            if bias is not None:
                total = total + np.asarray(bias, dtype=np.int64)
            found = _first_outside(total, lo, hi)
            partial = False
            if found is None and acc_overflow == "saturate" and bits < 64:
                running = None
                for t in terms():
                    running = t.astype(np.int64) if running is None else running + t
                    found = _first_outside(running, lo, hi)
                    if found is not None:
                        partial = True
                        break
            if found is not None:
                index, value = found
                err = AccumulatorOverflow(op.name, position, index, value, acc, (lo, hi), partial)
                if self.check_overflow == "report":
                    self.overflows.append(err)
                else:
                    raise err

        with observe_accumulators(observe):
            return self.eval(op, args)

    @staticmethod
    def _dtype(value: SSAValue) -> np.dtype:
        q = _qp(value)
        if q is not None:
            return q.dtype
        t = value.type
        el = t.element_type if isinstance(t, TensorType) else t
        if isinstance(el, IntegerType):
            w = el.width.data
            return np.dtype(f"int{8 if w <= 8 else 16 if w <= 16 else 32 if w <= 32 else 64}")
        return np.dtype(np.float64 if isinstance(el, Float64Type) else np.float32)

    # ----- op evaluation -------------------------------------------------------------------

    def eval(self, op: Operation, args: list[np.ndarray]) -> list[np.ndarray]:
        if isinstance(op, qnn.QnnOp) and "rounding" in op.ATTRS:
            profile = self.rounding or op.attr("rounding", "tflite")
            if profile in ONNX_ROUNDINGS:
                from qdialect import interp_onnx

                try:
                    out = interp_onnx.evaluate(self, op, args, profile)
                except interp_onnx.NoRecipe as e:
                    raise InterpreterError(str(e)) from None
                if out is not None:
                    return out if isinstance(out, list) else [out]
                self = _integer_profile(self)
        elif "qnn.rounding" in op.attributes and _hint(op) in ONNX_ROUNDINGS:
            from qdialect import interp_onnx

            try:
                out = interp_onnx.evaluate_nn(self, op, args)
            except interp_onnx.NoRecipe as e:
                raise InterpreterError(str(e)) from None
            if out is not None:
                return [out]
        handler = _HANDLERS.get(type(op))
        if handler is None:
            raise InterpreterError(f"the interpreter does not run {op.name}")
        out = handler(self, op, args)
        return out if isinstance(out, list) else [out]

    def knobs(self, op: qnn.QnnOp) -> dict:
        amin, amax = op.clamp_bounds() if "act_min" in op.ATTRS else (None, None)
        return dict(
            rounding=self.rounding or op.attr("rounding", "tflite") if "rounding" in op.ATTRS else "tflite",
            act_min=amin,
            act_max=amax,
            bias_mode=op.attr("bias", "accumulator") if "bias" in op.ATTRS else "accumulator",
            # absent: the width TFLite uses (i32; i64 for 16-bit activations or an i64 bias)
            acc=op.attr("acc", None) if "acc" in op.ATTRS else None,
            acc_overflow=op.attr("acc_overflow", "wrap") if "acc_overflow" in op.ATTRS else "wrap",
        )


_HANDLERS: dict[type, Callable] = {}


def _hint(op) -> str | None:
    attr = op.attributes.get("qnn.rounding")
    return getattr(attr, "data", None)


def _integer_profile(it: "Interpreter") -> "Interpreter":
    """An interpreter whose ops run TFLite's integer semantics: for the ops that only compare or move
    stored integers, which are the same in every profile."""
    shadow = Interpreter(it.module, None, check_overflow=it.check_overflow, _depth=it._depth)
    shadow.rounding = "tflite"
    return shadow


def handles(*classes):
    def register(fn):
        for cls in classes:
            _HANDLERS[cls] = fn
        return fn

    return register


@handles(func.CallOp)
def _call_op(it, op, args):
    """Run the callee (a func.func in the same module) on the argument arrays."""
    callee = op.callee.root_reference.data
    if it._depth >= MAX_CALL_DEPTH:
        raise InterpreterError(f"func.call @{callee}: calls nest deeper than {MAX_CALL_DEPTH} (recursion?)")
    inner = Interpreter(it.module, it.rounding, check_overflow=it.check_overflow, _depth=it._depth + 1)
    try:
        return inner.run(args, entry=callee)
    finally:
        it.overflows.extend(inner.overflows)


@handles(qnn.ConstantOp)
def _constant(it, op, args):
    return op.array()


@handles(arith.ConstantOp)
def _arith_constant(it, op, args):
    value = op.value
    if isinstance(value, DenseIntOrFPElementsAttr):
        t = value.type
        dtype = Interpreter._dtype(op.results[0])
        el = t.element_type
        if isinstance(el, IntegerType):
            raw = np.frombuffer(value.data.data, dtype=np.dtype(f"int{max(8, el.width.data)}"))
        else:
            raw = np.frombuffer(value.data.data, dtype=np.float32 if el.bitwidth == 32 else np.float64)
        n = int(np.prod(t.get_shape()))
        if raw.size == 1 and n != 1:
            raw = np.broadcast_to(raw, (n,))
        return raw.reshape(t.get_shape()).astype(dtype)
    return np.asarray(value.value.data, dtype=Interpreter._dtype(op.results[0]))


@handles(QuantizeCastOp, qnn.QuantizeOp)
def _quantize(it, op, args):
    rounding = it.rounding or (op.attr("rounding", "tflite") if isinstance(op, qnn.QnnOp) else "tflite")
    q = _qp(op.results[0], np.shape(args[0]))
    if q.scale.ndim and not q.per_axis and rounding == "litert":
        rounding = "tflite"  # (XNNPACK's cvt kernels take one scale; a sub-channel type has many)
    return _call(_reference("elementwise", "quantize"), args[0], out_q=q, rounding=rounding)


@handles(DequantizeCastOp, qnn.DequantizeOp)
def _dequantize(it, op, args):
    q = _qp(op.operands[0], np.shape(args[0]))
    if q.expressed == "f64":  # an f64 expressed type: scale * (q - zero point) in double
        return q.dequantize(args[0])
    return np.asarray(_call(_reference("elementwise", "dequantize"), args[0], x_q=q), dtype=np.float32)


@handles(qnn.SimulatedQuantizeOp)
def _simulated_quantize(it, op, args):
    """Quantize-dequantize in float (see qnn.SimulatedQuantizeOp)."""
    x = np.asarray(args[0])
    observer = getattr(it, "observer", None)
    if observer is not None:  # calibration hooks see what reaches every simulated_quantize
        observer(op, x)
    if op.attr("mode", "quantize") == "passthrough":
        return x.copy()
    q = op.qtype.qparams()
    rounding = it.rounding or op.attr("rounding", "tflite")
    acc = op.attr("acc", None)
    if acc is None:
        stored = _call(_reference("elementwise", "quantize"), x, out_q=q, rounding=rounding)
        return np.asarray(_call(_reference("elementwise", "dequantize"), stored, x_q=q), dtype=x.dtype)
    shape = q.broadcast_shape(x.ndim)
    scale = (q.scale.reshape(shape) if shape else q.scale).astype(np.float32)
    zp = q.zero_point.reshape(shape) if shape else q.zero_point
    v = (x.astype(np.float32) / scale).astype(np.float64)
    if rounding == "half_even":
        r = np.rint(v)
    elif rounding == "half_up":
        r = np.floor(v + 0.5)
    else:
        r = np.trunc(v) + np.sign(v) * (np.abs(v - np.trunc(v)) >= 0.5)
    bits = {"i16": 16, "i32": 32, "i64": 64}[acc]
    lo, hi = -(2.0 ** (bits - 1)), 2.0 ** (bits - 1) - 1
    total = r + zp
    if op.attr("acc_overflow", "wrap") == "saturate":
        total = np.clip(total, lo, hi)
    else:
        total = np.mod(total - lo, 2.0**bits) + lo
    return ((total - zp) * scale).astype(x.dtype)


@handles(StorageCastOp)
def _scast(it, op, args):
    return args[0].astype(Interpreter._dtype(op.results[0]))


def _weighted(ref_name):
    def handler(it, op, args):
        x, w, b = args
        k = it.knobs(op)
        pt, pb, pl, pr = op.attr("padding", [0, 0, 0, 0]) if "padding" in op.ATTRS else [0, 0, 0, 0]
        extra = {}
        if ref_name in ("conv2d", "depthwise_conv2d", "transpose_conv2d"):
            extra = dict(
                strides=tuple(op.attr("strides", [1, 1])),
                dilations=tuple(op.attr("dilations", [1, 1])),
                padding=((pt, pb), (pl, pr)),
            )
        if ref_name == "transpose_conv2d":
            extra["output_shape"] = _shape(op.results[0])
        if ref_name == "fully_connected":
            extra["keep_num_dims"] = len(_shape(op.results[0])) == len(_shape(op.operands[0])) and len(_shape(op.operands[0])) > 2
        out = _call(
            _reference("linear", ref_name), x, w, b,
            x_q=_qp(op.operands[0]), w_q=_qp(op.operands[1]), out_q=_qp(op.results[0]), **extra, **k,
        )
        return np.asarray(out).reshape(_shape(op.results[0]))

    return handler


_HANDLERS[qnn.Conv2DOp] = _weighted("conv2d")
_HANDLERS[qnn.DepthwiseConv2DOp] = _weighted("depthwise_conv2d")
_HANDLERS[qnn.TransposeConv2DOp] = _weighted("transpose_conv2d")
_HANDLERS[qnn.FullyConnectedOp] = _weighted("fully_connected")


@handles(qnn.BatchMatmulOp)
def _batch_matmul(it, op, args):
    return _call(
        _reference("linear", "batch_matmul"), args[0], args[1],
        lhs_q=_qp(op.operands[0]), rhs_q=_qp(op.operands[1]), out_q=_qp(op.results[0]),
        adj_x=op.attr("adj_x", False), adj_y=op.attr("adj_y", False), **it.knobs(op),
    )


def _binary(ref_module, ref_name):
    def handler(it, op, args):
        return _call(
            _reference(ref_module, ref_name), args[0], args[1],
            x1_q=_qp(op.operands[0]), x2_q=_qp(op.operands[1]), x_q=_qp(op.operands[0]),
            alpha_q=_qp(op.operands[1]), out_q=_qp(op.results[0]), **it.knobs(op),
        )

    return handler


for _cls, _mod, _name in [
    (qnn.AddOp, "elementwise", "add"),
    (qnn.SubOp, "elementwise", "sub"),
    (qnn.MulOp, "elementwise", "mul"),
    (qnn.DivOp, "elementwise", "div"),
    (qnn.SquaredDifferenceOp, "elementwise", "squared_difference"),
    (qnn.MaximumOp, "elementwise", "maximum"),
    (qnn.MinimumOp, "elementwise", "minimum"),
    (qnn.PReluOp, "activations", "prelu"),
]:
    _HANDLERS[_cls] = _binary(_mod, _name)


def _unary(ref_module, ref_name, **fixed):
    def handler(it, op, args):
        extra = {}
        for key in ("beta", "alpha"):
            if key in op.ATTRS:
                extra[key] = op.attr(key, 1.0)
        return _call(
            _reference(ref_module, ref_name), args[0],
            x_q=_qp(op.operands[0]), out_q=_qp(op.results[0]), **extra, **fixed, **it.knobs(op),
        )

    return handler


for _cls, _mod, _name in [
    (qnn.RequantizeOp, "elementwise", "requantize"),
    (qnn.ClampOp, "elementwise", "clamp"),
    (qnn.LogisticOp, "activations", "logistic"),
    (qnn.TanhOp, "activations", "tanh"),
    (qnn.SoftmaxOp, "activations", "softmax"),
    (qnn.LogSoftmaxOp, "activations", "log_softmax"),
    (qnn.HardSwishOp, "activations", "hard_swish"),
    (qnn.LeakyReluOp, "activations", "leaky_relu"),
    (qnn.EluOp, "activations", "elu"),
    (qnn.ExpOp, "activations", "exp"),
    (qnn.RsqrtOp, "activations", "rsqrt"),
    (qnn.SqrtOp, "activations", "sqrt"),
    (qnn.AbsOp, "elementwise", "absolute"),
    (qnn.NegOp, "elementwise", "negate"),
    (qnn.L2NormalizationOp, "activations", "l2_normalization"),
]:
    _HANDLERS[_cls] = _unary(_mod, _name)


@handles(qnn.GeluOp)
def _gelu(it, op, args):
    return _call(
        _reference("activations", "gelu"), args[0], x_q=_qp(op.operands[0]), out_q=_qp(op.results[0]),
        approximate=op.attr("approximate", False), **it.knobs(op),
    )


def _pool(ref_name):
    def handler(it, op, args):
        pt, pb, pl, pr = op.attr("padding", [0, 0, 0, 0])
        return _call(
            _reference("pooling", ref_name), args[0],
            x_q=_qp(op.operands[0]), out_q=_qp(op.results[0]),
            kernel=tuple(op.attr("kernel")), filter_size=tuple(op.attr("kernel")),
            strides=tuple(op.attr("strides", [1, 1])), padding=((pt, pb), (pl, pr)), **it.knobs(op),
        )

    return handler


_HANDLERS[qnn.AvgPool2DOp] = _pool("avg_pool2d")
_HANDLERS[qnn.MaxPool2DOp] = _pool("max_pool2d")


def _reduce(ref_name):
    def handler(it, op, args):
        out = _call(
            _reference("pooling", ref_name), args[0],
            x_q=_qp(op.operands[0]), out_q=_qp(op.results[0]),
            axes=tuple(op.attr("axes")), axis=tuple(op.attr("axes")), keep_dims=op.attr("keep_dims", False),
            **it.knobs(op),
        )
        return np.asarray(out).reshape(_shape(op.results[0]))

    return handler


for _cls, _name in [
    (qnn.MeanOp, "mean"),
    (qnn.SumOp, "sum"),
    (qnn.ReduceMaxOp, "reduce_max"),
    (qnn.ReduceMinOp, "reduce_min"),
]:
    _HANDLERS[_cls] = _reduce(_name)


# ----- data movement: stored integers only ------------------------------------------------


def _move(ref_name, **static):
    """Data movement through qdialect.reference.movement (stored integers only)."""

    def handler(it, op, args):
        extra = {}
        for key in ("perm", "block_size", "axis", "batch_dims", "paddings", "pad_value", "begin", "end", "strides",
                    "multiples"):
            if key in op.ATTRS:
                value = op.attr(key, None)
                if value is not None:
                    extra[key] = value
        if "paddings" in extra:
            extra["paddings"] = _pairs(extra["paddings"])
        if "pad_value" in extra:
            extra["constant"] = extra.pop("pad_value")
        out = _call(
            _reference("movement", ref_name), *args,
            x_q=_qp(op.operands[0]), out_q=_qp(op.results[0]),
            new_shape=_shape(op.results[0]), **static, **extra,
        )
        return np.asarray(out).reshape(_shape(op.results[0]))

    return handler


_HANDLERS[qnn.ReshapeOp] = _move("reshape")
_HANDLERS[qnn.TransposeOp] = _move("transpose")
_HANDLERS[qnn.PadOp] = _move("pad")
@handles(qnn.SliceOp)
def _slice(it, op, args):
    """qnn.slice bounds are Python-range bounds: end -1 with a negative stride means
    "past index 0", which TFLite's strided_slice spells with the end mask."""
    end = op.attr("end")
    end_mask = sum(1 << d for d, e in enumerate(end) if e < 0)
    out = _call(
        _reference("movement", "strided_slice"), args[0],
        x_q=_qp(op.operands[0]), out_q=_qp(op.results[0]),
        begin=op.attr("begin"), end=[max(e, 0) for e in end],
        strides=op.attr("strides", [1] * args[0].ndim), end_mask=end_mask,
    )
    return np.asarray(out).reshape(_shape(op.results[0]))
_HANDLERS[qnn.SpaceToDepthOp] = _move("space_to_depth")
_HANDLERS[qnn.DepthToSpaceOp] = _move("depth_to_space")
_HANDLERS[qnn.GatherOp] = _move("gather")
_HANDLERS[qnn.TileOp] = _move("tile")
_HANDLERS[qnn.GatherNdOp] = _move("gather_nd")


@handles(qnn.MirrorPadOp)
def _mirror_pad(it, op, args):
    return _call(
        _reference("movement", "mirror_pad"), args[0], x_q=_qp(op.operands[0]), out_q=_qp(op.results[0]),
        paddings=_pairs(op.attr("paddings")), mode=op.attr("mode"),
    )


@handles(qnn.ArgMaxOp, qnn.ArgMinOp)
def _arg_extreme(it, op, args):
    name = "arg_max" if isinstance(op, qnn.ArgMaxOp) else "arg_min"
    return _call(_reference("pooling", name), args[0], axis=op.attr("axis"),
                 output_dtype=Interpreter._dtype(op.results[0]))


@handles(qnn.ConcatenationOp)
def _concat(it, op, args):
    return _call(
        _reference("movement", "concatenation"), args,
        xs_q=[_qp(v) for v in op.operands], x_qs=[_qp(v) for v in op.operands],
        out_q=_qp(op.results[0]), axis=op.attr("axis"), **it.knobs(op),
    )


@handles(qnn.SplitOp)
def _split(it, op, args):
    """Split into the results' sizes (qnn.split covers SPLIT and SPLIT_V)."""
    axis = op.attr("axis") % args[0].ndim
    bounds = np.cumsum([0] + [_shape(r)[axis] for r in op.results])
    slicer = _reference("movement", "strided_slice")
    outs = []
    for r, lo, hi in zip(op.results, bounds[:-1], bounds[1:]):
        begin = [0] * args[0].ndim
        end = list(args[0].shape)
        begin[axis], end[axis] = int(lo), int(hi)
        outs.append(np.asarray(_call(slicer, args[0], x_q=_qp(op.operands[0]), out_q=_qp(r), begin=begin, end=end)))
    return outs


def _resize(ref_name):
    def handler(it, op, args):
        return _call(
            _reference("movement", ref_name), args[0],
            size=_shape(op.results[0])[1:3], out_size=_shape(op.results[0])[1:3],
            x_q=_qp(op.operands[0]), out_q=_qp(op.results[0]),
            align_corners=op.attr("align_corners", False),
            half_pixel_centers=op.attr("half_pixel_centers", False),
        )

    return handler


_HANDLERS[qnn.ResizeBilinearOp] = _resize("resize_bilinear")
_HANDLERS[qnn.ResizeNearestNeighborOp] = _resize("resize_nearest_neighbor")


@handles(qnn.LayerNormOp)
def _layer_norm(it, op, args):
    """Run the body: the chain the op was raised from, op by op, with this interpreter's knobs."""
    block = op.body.block
    env: dict[SSAValue, np.ndarray] = {block.args[0]: args[0]}
    for position, inner in enumerate(block.ops):
        if isinstance(inner, qnn.YieldOp):
            return env[inner.value]
        try:
            inputs = [env[v] for v in inner.operands]
            if it.check_overflow and "acc" in getattr(inner, "ATTRS", ()):  # position: in the body
                results = it._eval_checked(inner, inputs, position)
            else:
                results = it.eval(inner, inputs)
        except AccumulatorOverflow:
            raise
        except InterpreterError as e:
            raise InterpreterError(f"{op.name} ({inner.name} in its body): {e}") from e
        except (ValueError, TypeError, IndexError, KeyError, ArithmeticError) as e:
            raise InterpreterError(f"{op.name} ({inner.name} in its body): {_one_line(e)}") from e
        env.update(zip(inner.results, results))
    raise InterpreterError(f"{op.name}: its body has no qnn.yield")


def run_module(module: ModuleOp, inputs: Sequence[np.ndarray], *, rounding: str | None = None,
               entry: str | None = None, check_overflow: bool = False) -> list[np.ndarray]:
    """Run the entry function (`main`, or the only public one) on numpy inputs.

    check_overflow: raise AccumulatorOverflow (naming the op and the first
    overflowing element) when an accumulating op's exact accumulator, or with
    `acc_overflow = "saturate"` a running partial sum, leaves its `acc` width.
    (`Interpreter(module, check_overflow="report")` collects them instead.)
    """
    return Interpreter(module, rounding, check_overflow=check_overflow).run(inputs, entry)


def _runnable(f: func.FuncOp) -> func.FuncOp:
    """The function itself if it has one block to run (a declaration has none)."""
    n = len(f.body.blocks)
    if n != 1:
        what = "is a declaration (no body)" if n == 0 else f"has {n} blocks; the interpreter runs single-block functions"
        raise InterpreterError(f"@{f.sym_name.data} {what}")
    return f


def _static_size(value: SSAValue) -> int | None:
    """Element count of a value's static type (1 for scalars, None when a dim is dynamic)."""
    t = value.type
    if not isinstance(t, TensorType):
        return 1
    shape = t.get_shape()
    if any(d < 0 for d in shape):
        return None
    return math.prod(shape)


def check_size(value: SSAValue, what: str) -> None:
    """Refuse a tensor type the interpreter would have to allocate beyond MAX_ELEMENTS."""
    n = _static_size(value)
    if n is None:
        raise InterpreterError(f"{what}: {value.type} has a dynamic dimension; the interpreter needs static shapes")
    if n > MAX_ELEMENTS:
        raise InterpreterError(
            f"{what}: {value.type} has {n} elements, more than the interpreter's limit of {MAX_ELEMENTS}"
        )


def _first_outside(values: np.ndarray, lo: int, hi: int) -> tuple[tuple[int, ...], int] | None:
    bad = (values < lo) | (values > hi)
    if not bad.any():
        return None
    flat = int(np.argmax(bad.reshape(-1)))
    index = tuple(int(i) for i in np.unravel_index(flat, values.shape))
    return index, int(values.reshape(-1)[flat])


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


# Handlers for other layers live beside their dialects and register into _HANDLERS
# when imported: L3 upstream ops (arith/linalg/tensor), L2 integer primitives, L0 float ops.
for _extension in ("qdialect.interp_standard", "qdialect.interp_qint", "qdialect.interp_nn"):
    if importlib.util.find_spec(_extension) is not None:
        importlib.import_module(_extension)
