"""Post-training quantization: a float `nn` graph + calibration data -> an L1 qnn module.

    from qdialect.importer.tflite_float import import_tflite_float_file
    from transforms.quantizer.flow import quantize_float_module
    from transforms.quantizer.strategy import Int8

    float_module = import_tflite_float_file("model_float.tflite")
    result = quantize_float_module(float_module, samples, Int8())
    print(result.module)            # qnn ops, quant.qcast / quant.dcast at the float edges
    result.layers                   # per-layer SQNR against float on the calibration data

`samples` is a list of samples, each a list of float arrays (one per graph
input).  The float graph is walked op by op, all samples at a time:

1. the float op runs on the float values (the reference) and, in
   `layerwise` mode, also on the dequantized values of the quantized graph
   built so far (weights dequantized too), so layer k is calibrated on what
   it will really see at run time, errors of layers 0..k-1 included;
   `float` mode calibrates every layer on the float reference;
2. the strategy picks bits, symmetry, granularity, rounding and multiplier
   for the layer; its output range comes from the statistics
   (`transforms.quantizer.calibration`); weights are quantized symmetric (per channel
   by default, [-127, 127] for 8 bits), the float bias becomes i32 (i64
   under 16-bit activations) at scale float32(input_scale * weight_scale[c]);
3. the qnn op is built with `qnn-raise`'s builder (so the quantized op means
   what raising the fake-quant region would mean: clamps in the storage
   domain, requantizes where an op needs equal parameters) and run on the
   integer values with the reference interpreter; the next layers read those
   integers.

Per-layer SQNR (signal: the float reference; noise: reference minus the
dequantized integer output) is recorded as a by-product; `write_report`
writes it as a markdown table and a PNG plot.
"""

from __future__ import annotations

import copy
import math
import struct
import sys
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType, ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from qdialect.dialects import nn, qnn
from qdialect.dialects.quant import DequantizeCastOp, QuantizeCastOp, UniformQuantizedType, quantized_element_type
from qdialect.diagnostics import verify_module
from qdialect.interpreter import Interpreter, InterpreterError
from qdialect.reference.elementwise import dequantize, quantize
from qdialect.reference.rescale import round_half_away
from transforms.quantizer.calibration import TensorStats, affine_params, choose_range
from transforms.raise_fake_quant import NN_TO_QNN, build, qnn_attributes
from transforms.quantizer.strategy import Layer, Strategy, StrategyError, check_decisions

CALIBRATION_MODES = ("auto", "layerwise", "float")

INHERIT = (nn.ReshapeOp, nn.TransposeOp, nn.PadOp, nn.SliceOp, nn.MaxPool2DOp, nn.AvgPool2DOp,
           nn.ReduceMaxOp, nn.ReduceMinOp)
"""Ops whose output keeps the input's parameters (TFLite's kernels need it; nothing is rescaled)."""

EIGHT_BIT_ONLY = (nn.HardSwishOp, nn.LogSoftmaxOp, nn.EluOp, nn.SquaredDifferenceOp)
"""Ops whose integer kernels (and reference semantics) exist for 8-bit storage only: they read and write
8 bits whatever the strategy says (qnn.squared_difference on i16 computes nonsense in the reference;
with 16-bit activations a squared difference becomes qnn.sub and qnn.mul instead)."""

TRANSFORMER_OPS: dict[type[nn.NnOp], type[qnn.QnnOp]] = {nn.GeluOp: qnn.GeluOp, nn.RsqrtOp: qnn.RsqrtOp}
"""Float ops of transformer encoders and their qnn counterparts (TFLite's table kernels: any output
parameters at 8 bits, zero points 0 at 16), built here: qnn-raise has no fake-quant spelling of them."""

ILL_CONDITIONED = (nn.RsqrtOp,)
"""Ops whose output error explodes near some input (1 / sqrt(x) at 0): calibrated on the quantized graph's
values, their range would cover the error of their input (a ViT's class-token row, whose variance
0.0034 is three int8 steps of its layer norm's variance: the seen rsqrt reaches 20.6 where float stops at
17.2; the range is capped at the float values' range: that rsqrt 17.7 -> 41.6 dB on the calibration data)."""

HOLD = 4
"""Folds of the cross-validation that scores the per-layer choices (`_Quantizer.select`)."""

SCORE_ELEMENTS = 8192
"""At most about this many elements per sample are scored (every k-th; all of them before a consumer)."""

WEIGHTED_SCORE_SAMPLES = 2
"""Samples per fold scored at least after a weighted consumer (each costs a float conv per candidate)."""

SCORE_MACS = 8_000_000
"""Multiply-accumulates of the weighted consumers per fold and candidate: more samples where they are cheap."""

FIT_STRIDE = 4
FIT_VALUES = 262144
"""The ranges scored in the cross-validation are fitted on every k-th kept value, k <= FIT_STRIDE, so
that about FIT_VALUES remain (all of a small tensor's: thinning would hide its extremes from the mse
search and favour min / max); the final range on all of them."""

SWITCH_Z = 2.0
"""A candidate replaces the first (default) one only when its mean per-sample error is lower by more
than SWITCH_Z standard errors of the paired differences (a few dozen samples are noisy evidence)."""

MIN_SELECT_SAMPLES = 8
"""Fewer calibration samples than this: no cross-validation (the first candidate, mse ranges)."""

AUTO_METHODS = ("mse", "minmax")
"""The range methods the `auto` calibration method chooses between, per layer."""

INPUT_METHODS = ("minmax", "minmax*1.25", "minmax*1.5", "minmax*2")
"""The ranges `auto` chooses between for graph inputs: min / max, or widened (`*F`: [lo, hi] * F) for
inputs whose later samples reach past what the calibration samples show (heavy-tailed features)."""

FIXED_OUTPUT = (nn.LogisticOp, nn.TanhOp, nn.SoftmaxOp, nn.LogSoftmaxOp)
WEIGHTED = (nn.Conv2DOp, nn.DepthwiseConv2DOp, nn.FullyConnectedOp)


class QuantizeError(ValueError):
    """A float graph, calibration set or strategy qd-quantize cannot use; the message says why."""


@dataclass
class LayerReport:
    """One quantized layer: what it became and how far it is from float."""

    index: int
    name: str
    kind: str
    type: str
    sqnr_db: float
    weights: str = ""
    range: tuple[float, float] | None = None
    eval_sqnr_db: float | None = None
    """SQNR on evaluation data (`evaluate`), None until evaluated."""
    choice: str = ""
    """What cross-validation chose for the layer (`auto` decisions): the range source (`seen`: the values
    the quantized graph computes, `float`: the float reference), `+bc` (bias corrected) and the range
    method; empty when nothing was chosen."""


@dataclass
class QuantizeResult:
    module: ModuleOp
    layers: list[LayerReport] = field(default_factory=list)
    outputs_sqnr_db: list[float] = field(default_factory=list)
    strategy: str = ""
    mode: str = "auto"
    eval_outputs_sqnr_db: list[float] | None = None
    float_module: ModuleOp | None = None
    pairs: list = field(default_factory=list)
    """Per layer (float value in float_module, its quantized value in module): what `evaluate` compares."""
    simulation: ModuleOp | None = None
    """The float graph with qnn.simulated_quantize after every activation and weight (fake quantization
    with the chosen types and roundings): what the quantized module computes, simulated in float."""


def sqnr_db(reference: np.ndarray, approx: np.ndarray) -> float:
    """10 log10(sum ref^2 / sum (ref - approx)^2); inf when equal, -inf when the signal is 0."""
    ref = np.asarray(reference, np.float64)
    err = ref - np.asarray(approx, np.float64)
    noise = float(np.sum(err * err))
    signal = float(np.sum(ref * ref))
    if noise == 0.0:
        return math.inf
    if signal == 0.0:
        return -math.inf
    return 10.0 * math.log10(signal / noise)


def _storage(bits: int, signed: bool = True) -> str:
    return f"{'i' if signed else 'u'}{bits}"


def _bounds(bits: int) -> tuple[int, int]:
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _kind(op) -> str:
    return op.name.split(".", 1)[1]


class _Quantizer:
    def __init__(self, float_module: ModuleOp, strategy: Strategy, mode: str, int_io: bool,
                 progress: Callable[[str], None] | None, bias_correction: bool | None = None):
        if mode not in CALIBRATION_MODES:
            raise QuantizeError(f"calibration mode '{mode}' is not one of {', '.join(CALIBRATION_MODES)}")
        from qdialect.entry import EntryError, entry_function

        try:
            self.func = entry_function(float_module)
        except EntryError as e:
            raise QuantizeError(f"the float module: {e}") from None
        self.strategy = strategy
        self.mode = mode
        self.int_io = int_io
        self.bias_correction = bias_correction
        self.progress = progress or (lambda message: None)
        self.it = Interpreter(float_module)
        self.block = Block()
        self.fenv: dict[SSAValue, list[np.ndarray]] = {}  # float graph value -> float arrays (reference)
        self.qenv: dict[SSAValue, list[np.ndarray]] = {}  # new graph value -> stored integers
        self.qmap: dict[SSAValue, SSAValue] = {}  # float graph value -> its quantized value
        self.layers: list[LayerReport] = []
        self.float_module = float_module
        self.weight_types: dict[SSAValue, UniformQuantizedType] = {}  # float weight constant -> its type
        self.roundings: dict[SSAValue, str] = {}  # float value -> rounding profile of the op producing it
        self.biases: dict = {}  # weighted float op -> the real bias its quantized op adds
        self.pairs: list = []
        self.choices: dict[str, str] = {}  # layer name -> the per-layer decision held-back data made
        self.ties: dict[SSAValue, SSAValue] = {}  # float value -> the concatenation whose output type it takes
        self.tied_types: dict[SSAValue, UniformQuantizedType] = {}  # tied concatenation result -> its type

    # ----- helpers --------------------------------------------------------------------------

    def name_of(self, value: SSAValue, fallback: str) -> str:
        return value.name_hint or fallback

    def run_new(self, op, n: int) -> None:
        """Evaluate a freshly built qnn op (all samples) into qenv."""
        if isinstance(op, qnn.ConstantOp):
            arr = op.array()
            self.qenv[op.results[0]] = [arr] * n
            return
        per_sample = []
        for s in range(n):
            args = [self.qenv[v][s] for v in op.operands]
            try:
                per_sample.append(self.it.eval(op, args))
            except (InterpreterError, ValueError, ArithmeticError) as e:
                raise QuantizeError(f"{op.name}: the quantized op does not run: {e}") from None
        for k, r in enumerate(op.results):
            self.qenv[r] = [out[k] for out in per_sample]

    def dequantized(self, value: SSAValue) -> list[np.ndarray]:
        """Real values of the quantized counterpart of float value `value`, per sample."""
        q = self.qmap[value]
        qp = quantized_element_type(q.type).qparams()
        return [np.asarray(dequantize(a, x_q=qp), np.float32) for a in self.qenv[q]]

    def activation_type(self, layer: Layer, stats: TensorStats, bits: int | None = None,
                        reference: Sequence[np.ndarray] | None = None, method: str | None = None):
        """(type, real range) of an activation from its statistics.  `reference`: the float values the
        activation stands for; in layerwise mode the range then never reaches past theirs (a value beyond
        every reference value is error only: clamping it to their bound moves it closer to any of them,
        and the narrower range has a finer step).  Used for ILL_CONDITIONED ops only: elsewhere the
        error's excursions are small and leave headroom that held-out data use."""
        bits = self.strategy.activation_bits(layer) if bits is None else bits
        symmetric = self.strategy.activation_symmetric(layer)
        qmin, qmax = _bounds(bits)
        method = self.strategy.calibration(layer) if method is None else method
        lo, hi = fitted_range(stats, method, qmin, qmax, symmetric)
        if reference is not None and self.mode != "float":
            bound = TensorStats(keep=1)
            for r in reference:
                bound.observe(r)
            if not bound.empty:
                lo, hi = max(lo, min(bound.lo, 0.0)), min(hi, max(bound.hi, 0.0))
                if symmetric:
                    m = max(-lo, hi)
                    lo, hi = -m, m
        scale, zp = affine_params(lo, hi, qmin, qmax, symmetric)
        return UniformQuantizedType.per_tensor(scale, zp, _storage(bits)), (lo, hi)

    def weight_type(self, layer: Layer, w: np.ndarray, axis: int) -> tuple[UniformQuantizedType, np.ndarray]:
        bits = self.strategy.weight_bits(layer)
        qmax = (1 << (bits - 1)) - 1
        storage = _storage(bits)
        rows = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1) if self.strategy.weight_per_channel(layer) \
            else w.reshape(1, -1)
        m = np.max(np.abs(rows), axis=1).astype(np.float64)
        if getattr(self.strategy, "weight_calibration", lambda layer: "minmax")(layer) == "mse":
            m = weight_mse_max(rows.astype(np.float64), m, qmax)
        scales = (m / qmax).astype(np.float32).astype(np.float64)
        scales = np.where(scales > 0, scales, 1.0)  # an all-zero channel: any scale; 1 keeps its bias exact enough
        if scales.size > 1 or self.strategy.weight_per_channel(layer):
            qt = UniformQuantizedType.per_axis(scales, 0, axis=axis, storage=storage, storage_min=-qmax, storage_max=qmax)
        else:
            qt = UniformQuantizedType.per_tensor(float(scales[0]), 0, storage=storage, storage_min=-qmax, storage_max=qmax)
        stored = quantize(w.astype(np.float32), out_q=qt.qparams())
        return qt, np.clip(stored, -qmax, qmax)

    def constant_activation(self, value: SSAValue, layer: Layer) -> SSAValue:
        """A float constant used as an activation operand (e.g. a broadcast multiplier) -> qnn.constant."""
        const = value.owner
        arr = const.array().astype(np.float32)
        stats = TensorStats()
        stats.observe(arr)
        bits = self.strategy.activation_bits(layer)
        qmin, qmax = _bounds(bits)
        symmetric = self.strategy.activation_symmetric(layer)
        scale, zp = affine_params(stats.lo, stats.hi, qmin, qmax, symmetric)
        qt = UniformQuantizedType.per_tensor(scale, zp, _storage(bits))
        new = qnn.ConstantOp.from_array(quantize(arr, out_q=qt.qparams()), qt)
        self.block.add_op(new)
        self.qmap[value] = new.result
        return new.result

    # ----- driving ---------------------------------------------------------------------------

    def run(self, samples: Sequence[Sequence[np.ndarray]]) -> QuantizeResult:
        f = self.func
        args = list(f.body.block.args)
        n = self.n = len(samples)
        if n == 0:
            raise QuantizeError("the calibration set holds no samples")
        # HOLD folds (sample s in fold s % HOLD) score the per-layer choices by cross-validation
        self.folds = [list(range(f, n, HOLD)) for f in range(HOLD)] if n >= MIN_SELECT_SAMPLES else []
        for s, sample in enumerate(samples):
            if len(sample) != len(args):
                raise QuantizeError(f"sample {s} has {len(sample)} inputs, the model takes {len(args)}")
        for k, arg in enumerate(args):
            if not (isinstance(arg.type, TensorType) and nn.is_float(arg.type.element_type)):
                raise QuantizeError(f"input {k} is {arg.type}; qd-quantize quantizes graphs of float tensors")
            shape = tuple(arg.type.get_shape())
            for s, sample in enumerate(samples):
                if tuple(np.shape(sample[k])) != shape:
                    raise QuantizeError(
                        f"input_{k} sample {s} has shape {list(np.shape(sample[k]))}, the model expects {list(shape)}"
                    )
            self.fenv[arg] = [np.asarray(sample[k], np.float32) for sample in samples]

        # graph inputs
        new_args = []
        for k, arg in enumerate(args):
            layer = Layer(self.name_of(arg, f"input_{k}"), "input", -1 - k)
            self.check(layer)
            values = self.fenv[arg]
            _, method, stats = self.select(arg, layer, [("float", values, values)], self.strategy.activation_bits(layer))
            if stats is None:
                stats = TensorStats()
                for a in values:
                    stats.observe(a)
            qt, rng = self.activation_type(layer, stats, method=method)
            qtype = TensorType(qt, list(arg.type.get_shape()))
            if self.int_io:
                new_arg = self.block.insert_arg(qtype, k)
                new_arg.name_hint = arg.name_hint
                self.qmap[arg] = new_arg
                self.qenv[new_arg] = [quantize(a, out_q=qt.qparams()) for a in self.fenv[arg]]
            else:
                new_arg = self.block.insert_arg(arg.type, k)
                new_arg.name_hint = arg.name_hint
                cast = QuantizeCastOp(new_arg, qtype)
                self.block.add_op(cast)
                self.qmap[arg] = cast.results[0]
                self.qenv[new_arg] = self.fenv[arg]
                self.run_new(cast, n)
                del self.qenv[new_arg]
            new_args.append(new_arg)
            self.record(layer, self.qmap[arg], self.fenv[arg], rng)

        ops = list(f.body.block.ops)
        self.tie_concatenations(ops, n)
        total = sum(1 for op in ops if isinstance(op, nn.NnOp))
        last_use = {v: i for i, op in enumerate(ops) for v in op.operands}
        done = 0
        for index, op in enumerate(ops):
            if isinstance(op, func.ReturnOp):
                return self.finish(op, new_args, n)
            if isinstance(op, nn.ConstantOp):
                continue
            if not isinstance(op, nn.NnOp) or not nn.is_float(nn.element_of(op.results[0].type)):
                raise QuantizeError(f"op #{index} {op.name} is not a float nn op; qd-quantize reads float graphs")
            done += 1
            layer = Layer(self.name_of(op.results[0], f"#{index}"), _kind(op), index)
            self.progress(f"calibrating [{done}/{total}] {layer.kind} {layer.name}")
            self.layer(op, layer, n)
            for v in set(op.operands):  # values no later op reads: free their arrays
                if last_use.get(v) == index and not isinstance(v.owner, nn.ConstantOp):
                    self.fenv.pop(v, None)
                    if v in self.qmap:
                        self.qenv.pop(self.qmap[v], None)
        raise QuantizeError(f"@{f.sym_name.data} has no func.return")

    def tie_concatenations(self, ops: list, n: int) -> None:
        """Tie the producers of each concatenation's inputs to its output type, as TFLite's converter
        does: TFLite's int8 CONCATENATION needs every input to carry the output's scale and zero point,
        and a requantize in front of it is either a second rounding (`tflite`: elementwise_movement's
        mean output loses 3.7 dB) or one no TFLite kernel computes (`single`).  A tied producer (an op
        whose result only the concatenation reads, possibly through data movement that keeps its
        parameters) is given the concatenation's output type directly, chosen from the float values of
        the concatenation (a float pre-pass over the calibration samples).  Graph inputs, producers
        with other consumers, fixed-output ops (softmax, logistic, ...) and ops of another width are
        not tied: their values meet the concatenation through a `tflite` qnn.requantize (a QUANTIZE
        op).  Fills `ties` and `tied_types`."""
        index_of = {id(op): i for i, op in enumerate(ops)}
        concats = [op for op in ops if isinstance(op, nn.ConcatenationOp)
                   and "act_min" not in op.attributes and "act_max" not in op.attributes]
        typed: dict[SSAValue, tuple[Layer, int]] = {}  # concatenation result -> (layer, bits) to type
        for op in reversed(concats):
            result = op.results[0]
            target = self.ties.get(result, result)  # a concatenation feeding a concatenation takes its type
            layer = Layer(self.name_of(result, f"#{index_of[id(op)]}"), _kind(op), index_of[id(op)])
            bits = self.strategy.activation_bits(layer) if target is result else typed[target][1]
            tied = False
            for v in set(op.operands):
                producer = self.tie_producer(v, op)
                if producer is None or id(producer) not in index_of:
                    continue
                k = index_of[id(producer)]
                p_layer = Layer(self.name_of(producer.results[0], f"#{k}"), _kind(producer), k)
                p_bits = 8 if isinstance(producer, EIGHT_BIT_ONLY) else self.strategy.activation_bits(p_layer)
                if (p_bits != bits or (isinstance(producer, nn.SquaredDifferenceOp) and p_bits > 8)
                        or self.strategy.activation_symmetric(p_layer) != self.strategy.activation_symmetric(layer)):
                    continue
                self.ties[producer.results[0]] = target
                tied = True
            if tied and target is result:
                typed[result] = (layer, bits)
        if not typed:
            return
        values = self.float_trace(ops, set(typed), n)
        for result, (layer, bits) in typed.items():
            self.fenv[result] = values[result]  # what `select` scores against; set again when it is reached
            _, method, stats = self.select(result, layer, [("float", values[result], values[result])], bits)
            del self.fenv[result]
            if stats is None:
                stats = TensorStats()
                for a in values[result]:
                    stats.observe(a)
            self.tied_types[result], _ = self.activation_type(layer, stats, bits, method=method)

    @staticmethod
    def tie_producer(value: SSAValue, concat) -> nn.NnOp | None:
        """The op whose output type `value` (an input of `concat`) carries, when it can take the
        concatenation's: `concat` its only reader, directly or through ops that keep their input's
        parameters (reshape, transpose, ...), none of it a graph input, constant or fixed-output op."""
        reader = concat
        for _ in range(8):
            if {id(use.operation) for use in value.uses} != {id(reader)}:
                return None
            owner = value.owner
            if not isinstance(owner, nn.NnOp) or isinstance(owner, (nn.ConstantOp, FIXED_OUTPUT, nn.HardSwishOp)):
                return None
            if len(owner.results) != 1:
                return None
            if not isinstance(owner, INHERIT):
                return owner
            reader, value = owner, owner.operands[0]  # its output carries its first operand's type
        return None

    def float_trace(self, ops: list, wanted: set, n: int) -> dict[SSAValue, list[np.ndarray]]:
        """The float values of `wanted` (results of `ops`), per calibration sample: the float graph
        run up to the last of them, one sample at a time."""
        last = max(i for i, op in enumerate(ops) if any(r in wanted for r in op.results))
        out: dict[SSAValue, list[np.ndarray]] = {w: [] for w in wanted}
        for s in range(n):
            env = {arg: self.fenv[arg][s] for arg in self.func.body.block.args}
            for op in ops[:last + 1]:
                if isinstance(op, nn.ConstantOp) or not isinstance(op, nn.NnOp):
                    continue
                args = [env[v] if v in env else self.fenv_of(v, s) for v in op.operands]
                try:
                    got = self.it.eval(op, args)
                except (InterpreterError, ValueError, ArithmeticError) as e:
                    raise QuantizeError(f"{op.name}: the float op does not run: {e}") from None
                for r, g in zip(op.results, got):
                    env[r] = g
                    if r in wanted:
                        out[r].append(np.asarray(g, np.float32))
        return out

    def check(self, layer: Layer) -> None:
        try:
            check_decisions(layer, self.strategy)
        except StrategyError as e:
            raise QuantizeError(str(e)) from None

    def float_eval(self, op, args_per_sample: list[list[np.ndarray]], *, clamp: bool = True) -> list[np.ndarray]:
        """Run float op `op` per sample (a weighted op may be given a bias argument it does not have:
        the nn handlers read one from a third argument); clamp=False: without its fused clamp."""
        saved = dict(op.attributes)  # restored as it was (attribute order included): the caller's module
        if not clamp:
            for k in ("act_min", "act_max"):
                op.attributes.pop(k, None)
        out = []
        try:
            for args in args_per_sample:
                try:
                    out.append(self.it.eval(op, args)[0])
                except (InterpreterError, ValueError, ArithmeticError) as e:
                    raise QuantizeError(f"{op.name}: the float op does not run: {e}") from None
        finally:
            op.attributes.clear()
            op.attributes.update(saved)
        return out

    def layer(self, op: nn.NnOp, layer: Layer, n: int) -> None:
        self.check(layer)
        target = NN_TO_QNN.get(type(op)) or TRANSFORMER_OPS.get(type(op))
        if target is None or isinstance(op, nn.CastOp):
            raise QuantizeError(f"{layer.name}: {op.name} has no quantized (qnn) counterpart")
        result = op.results[0]
        operands = list(op.operands)
        weighted_layerwise = isinstance(op, WEIGHTED) and self.mode != "float"
        if not weighted_layerwise:  # float reference (a weighted op's comes with its bias correction)
            self.fenv[result] = self.float_eval(op, [[self.fenv_of(v, s) for v in operands] for s in range(n)])

        if isinstance(op, nn.SquaredDifferenceOp) and self.strategy.activation_bits(layer) > 8:
            self.wide_squared_difference(op, layer, n)
            return
        extra: list = []
        weights_text = ""
        options: list[tuple[str, list, list]] = []  # (label, values the range is taken from, values the op computes)
        bias_options: dict[str, np.ndarray] = {}
        if isinstance(op, WEIGHTED):
            x, w_value = operands[0], operands[1]
            if not isinstance(w_value.owner, nn.ConstantOp):
                raise QuantizeError(f"{layer.name}: {op.name} weights must be a constant")
            if len(operands) == 3 and not isinstance(operands[2].owner, nn.ConstantOp):
                raise QuantizeError(f"{layer.name}: {op.name} bias must be a constant")
            wf = w_value.owner.array().astype(np.float32)
            axis = 3 if isinstance(op, nn.DepthwiseConv2DOp) else 0
            w_qt, w_stored = self.weight_type(layer, wf, axis)
            self.weight_types[w_value] = w_qt
            w_const = qnn.ConstantOp.from_array(w_stored, w_qt)
            channels = wf.shape[axis]
            xq = self.quantized_operand(x, layer)
            w_deq = np.asarray(dequantize(w_stored, x_q=w_qt.qparams()), np.float32)
            bias_real = (operands[2].owner.array().astype(np.float32).reshape(-1) if len(operands) == 3
                         else np.zeros(channels, np.float32))
            if weighted_layerwise:
                options, bias_options = self.weighted_options(op, x, wf, w_deq, bias_real, n)
                seen = options[0][2]
            else:
                seen = self.fenv[result]
            extra = [w_const]
            q_operands = [xq, w_const.results[0]]
            weights_text = str(w_qt).split(",")[0].replace("!quant.uniform<", "") + f" x{channels}"
        else:
            q_operands = [self.quantized_operand(v, layer) for v in operands]
            if not isinstance(op, INHERIT):
                bits = 8 if isinstance(op, EIGHT_BIT_ONLY) else self.strategy.activation_bits(layer)
                symmetric = self.strategy.activation_symmetric(layer)
                q_operands = [self.match_width(v, bits, n, symmetric) for v in q_operands]
            if self.mode != "float":
                deq = [self.dequantized(v) for v in operands]
                seen = self.float_eval(op, [[d[s] for d in deq] for s in range(n)])
                options = [(source, seen if source == "seen" else self.fenv[result], seen) for source in self.sources()]
            else:
                seen = self.fenv[result]

        method, stats = None, None
        if options and not isinstance(op, (INHERIT, FIXED_OUTPUT, ILL_CONDITIONED)) and result not in self.tied_types:
            bits = 8 if isinstance(op, EIGHT_BIT_ONLY) else self.strategy.activation_bits(layer)
            label, method, stats = self.select(result, layer, options, bits)
            seen = next(stat for lab, stat, _ in options if lab == label)
            if isinstance(op, WEIGHTED):
                bias_real = bias_options["on" if label.endswith("+bc") else "off"]
        elif options:
            seen = options[0][1]
            if isinstance(op, WEIGHTED):
                bias_real = bias_options["on" if options[0][0].endswith("+bc") else "off"]
        if isinstance(op, WEIGHTED):
            bias_const = self.bias(bias_real, quantized_element_type(xq.type), w_qt, channels)
            self.biases[op] = self.real_bias(bias_const, quantized_element_type(xq.type), w_qt, channels)
            extra.append(bias_const)
            q_operands.append(bias_const.results[0])

        reference = self.fenv[result] if isinstance(op, ILL_CONDITIONED) else None
        out_qt, rng = self.output_type(op, layer, q_operands, seen, reference, method, stats)
        rounding = "half_even" if self.strategy.multiplier(layer) == "float" else self.strategy.rounding(layer)
        tie = self.ties.get(result, result if result in self.tied_types else None)
        if tie is not None:  # see `tie_concatenations`
            out_qt = self.tied_types[tie]
            rng = tuple(float(v) for v in out_qt.qparams().dequantize(np.array(out_qt.storage_range())))
        if isinstance(op, nn.ConcatenationOp):
            # inputs take the output's parameters, so the concatenation only moves integers (TFLite's
            # int8 kernel needs it): tied producers give them already (`tie_concatenations`), constants
            # are quantized to them, anything else is requantized (a QUANTIZE op in TFLite)
            q_operands = [self.tied_constant(v, q, out_qt) if isinstance(v.owner, nn.ConstantOp)
                          else self.requantized(q, out_qt, n, rounding) for v, q in zip(operands, q_operands)]
        built = _build(op, q_operands, TensorType(out_qt, list(result.type.get_shape())), extra, rounding)
        if isinstance(built, str):
            raise QuantizeError(f"{layer.name}: cannot quantize {op.name}: {built}")
        new_ops, new = built
        acc = self.strategy.accumulator(layer)
        if acc is not None and "acc" in new.ATTRS:
            new.attributes["acc"] = StringAttr(acc[0])
            new.attributes["acc_overflow"] = StringAttr(acc[1])
            try:
                new.verify()
            except VerifyException as e:
                raise QuantizeError(f"{layer.name}: {e}") from None
        for o in [*new_ops, new]:
            self.block.add_op(o)
            self.run_new(o, n)
        images = {id(q) for q in self.qmap.values()}
        for v in new.operands:  # requantized operands and constants: read by this op only
            if id(v) not in images:
                self.qenv.pop(v, None)
        self.qmap[result] = new.results[0]
        self.roundings[result] = rounding
        self.record(layer, new.results[0], self.fenv[result], rng, weights_text)

    def wide_squared_difference(self, op: nn.SquaredDifferenceOp, layer: Layer, n: int) -> None:
        """(a - b)^2 with wide (16-bit) activations as qnn.sub then qnn.mul of the difference by itself:
        TFLite has no int16 SQUARED_DIFFERENCE kernel (LiteRT refuses it; its converter's 16x8 layer
        norms are spelled with SUB and MUL, as here).  The difference is calibrated like a layer."""
        bits = self.strategy.activation_bits(layer)
        rounding = "half_even" if self.strategy.multiplier(layer) == "float" else self.strategy.rounding(layer)
        attrs = {"rounding": StringAttr(rounding)} if rounding != "tflite" else {}
        result = op.results[0]
        shape = list(result.type.get_shape())
        a, b = (self.match_width(self.quantized_operand(v, layer), bits, n) for v in op.operands)
        if self.mode != "float":
            da, db = (self.dequantized_value(v) for v in (a, b))
            difference = [x - y for x, y in zip(da, db)]
        else:
            difference = [self.fenv_of(op.operands[0], s) - self.fenv_of(op.operands[1], s) for s in range(n)]
        stats = TensorStats()
        for d in difference:
            stats.observe(d)
        d_qt, _ = self.activation_type(layer, stats, bits)
        sub = qnn.SubOp([a, b], [TensorType(d_qt, shape)], dict(attrs))
        self.block.add_op(sub)
        self.run_new(sub, n)
        d = sub.results[0]
        seen = [x * x for x in self.dequantized_value(d)] if self.mode != "float" else self.fenv[result]
        stats = TensorStats()
        for v in seen:
            stats.observe(v)
        out_qt, rng = self.activation_type(layer, stats, bits)
        square = qnn.MulOp([d, d], [TensorType(out_qt, shape)], dict(attrs))
        for new in (sub, square):
            try:
                new.verify()
            except VerifyException as e:
                raise QuantizeError(f"{layer.name}: cannot quantize {op.name}: {e}") from None
        self.block.add_op(square)
        self.run_new(square, n)
        self.qenv.pop(d, None)
        self.qmap[result] = square.results[0]
        self.roundings[result] = rounding
        self.record(layer, square.results[0], self.fenv[result], rng)

    def dequantized_value(self, q: SSAValue) -> list[np.ndarray]:
        """Real values of quantized value `q` of the new graph, per sample."""
        qp = quantized_element_type(q.type).qparams()
        return [np.asarray(dequantize(v, x_q=qp), np.float32) for v in self.qenv[q]]

    def fenv_of(self, value: SSAValue, s: int) -> np.ndarray:
        if value in self.fenv:
            return self.fenv[value][s]
        owner = value.owner
        if isinstance(owner, nn.ConstantOp):
            arr = owner.array().astype(np.float32)
            self.fenv[value] = _Repeat(arr)
            return arr
        raise QuantizeError(f"{value} is used before it is defined")

    def quantized_operand(self, value: SSAValue, layer: Layer) -> SSAValue:
        if value in self.qmap:
            return self.qmap[value]
        if isinstance(value.owner, nn.ConstantOp):
            q = self.constant_activation(value, layer)
            self.run_new(q.owner, self.n)
            return q
        raise QuantizeError(f"{layer.name}: operand {value} has no quantized counterpart")

    def tied_constant(self, value: SSAValue, q: SSAValue, qt: UniformQuantizedType) -> SSAValue:
        """Float constant `value` (quantized as `q` so far) quantized to `qt`: a concatenation's constant
        input needs no requantize.  `q` is dropped when nothing else reads `value`."""
        if quantized_element_type(q.type) == qt:
            return q
        if len({id(use.operation) for use in value.uses}) == 1 and not q.uses:
            self.block.detach_op(q.owner).erase()
            self.qmap.pop(value, None)
            self.qenv.pop(q, None)
        new = qnn.ConstantOp.from_array(quantize(value.owner.array().astype(np.float32), out_q=qt.qparams()), qt)
        self.block.add_op(new)
        self.run_new(new, self.n)
        return new.results[0]

    def requantized(self, value: SSAValue, qt: UniformQuantizedType, n: int, rounding: str = "tflite") -> SSAValue:
        """`value` with element type `qt` (a qnn.requantize unless it has it already)."""
        if quantized_element_type(value.type) == qt:
            return value
        attrs = {"rounding": rounding} if rounding != "tflite" else {}
        req = qnn.RequantizeOp([value], [TensorType(qt, list(value.type.get_shape()))], attrs)
        self.block.add_op(req)
        self.run_new(req, n)
        return req.results[0]

    def match_width(self, value: SSAValue, bits: int, n: int, symmetric: bool | None = None) -> SSAValue:
        """`value` requantized to `bits`-wide storage (TFLite's kernels other than conv / fully connected
        take and give one storage type; mixed widths meet through a requantize).  Widening keeps the
        real range of the narrow type; narrowing takes the range the values take on the calibration
        data (a 16-bit softmax's [0, 1], not its type's [-1, 1]), symmetric as `symmetric` says
        (default: when the wide type's zero point is 0)."""
        q = quantized_element_type(value.type)
        if q.storage_width.data == bits:
            return value
        lo, hi = (float(v) for v in q.qparams().dequantize(np.array(q.storage_range())))
        if q.storage_width.data > bits and value in self.qenv:
            stored = [np.asarray(v) for v in self.qenv[value]]
            lo, hi = (float(v) for v in q.qparams().dequantize(
                np.array([min(int(v.min()) for v in stored), max(int(v.max()) for v in stored)])))
            lo, hi = min(lo, 0.0), max(hi, 0.0)
        qmin, qmax = _bounds(bits)
        if symmetric is None:
            symmetric = int(q.zero_point_array()) == 0
        scale, zp = affine_params(lo, hi, qmin, qmax, symmetric)
        new_type = UniformQuantizedType.per_tensor(scale, zp, _storage(bits))
        req = qnn.RequantizeOp([value], [TensorType(new_type, list(value.type.get_shape()))])
        self.block.add_op(req)
        self.run_new(req, n)
        return req.results[0]

    def weighted_options(self, op, x: SSAValue, wf: np.ndarray, w_deq: np.ndarray, bias: np.ndarray, n: int):
        """The candidate outputs of a weighted op calibrated on the quantized graph: its output with the
        float bias and, with bias correction, with the bias plus the mean (per output channel, before the
        fused clamp) of float reference minus the quantized layer's real output.  Sets the float
        reference of the op's result.  Returns (options for `select`, {"on"/"off": the real bias the
        final op adds}); the corrected candidate scored on held-back samples was corrected on the
        others only (the final one on all samples)."""
        xd = self.dequantized(x)
        ref = self.float_eval(op, [[self.fenv_of(x, s), wf, bias] for s in range(n)], clamp=False)
        got = self.float_eval(op, [[xd[s], w_deq, bias] for s in range(n)], clamp=False)
        lo, hi = op.act_bounds()
        lo = -np.inf if lo is None else lo
        hi = np.inf if hi is None else hi

        def clamp(values):
            return [np.clip(v, lo, hi).astype(np.float32) for v in values]

        self.fenv[op.results[0]] = clamp(ref)
        plain = clamp(got)
        use = [True, False] if self.bias_correction is None else [self.bias_correction]
        options, biases = [], {"off": bias}
        for correct in use:
            if not correct:
                for source in self.sources():
                    options.append((source, plain if source == "seen" else self.fenv[op.results[0]], plain))
                continue
            diffs = [(ref[s].astype(np.float64) - got[s]).reshape(-1, bias.size) for s in range(n)]
            sums = np.stack([d.sum(axis=0) for d in diffs])
            rows = np.array([d.shape[0] for d in diffs], np.float64)
            corrected = (bias.astype(np.float64) + sums.sum(axis=0) / rows.sum()).astype(np.float32)
            biases["on"] = corrected

            def shifted(b, s):
                return np.clip(got[s] + (b.astype(np.float64) - bias).astype(np.float32), lo, hi).astype(np.float32)

            final = [shifted(corrected, s) for s in range(n)]
            scored = final
            if self.folds:  # a held-back sample sees the bias corrected on the other folds only
                k = len(self.folds)
                others = [[t for t in range(n) if t % k != f] for f in range(k)]
                fold_bias = [(bias.astype(np.float64) + sums[o].sum(axis=0) / rows[o].sum()).astype(np.float32)
                             for o in others]
                scored = [shifted(fold_bias[s % k], s) for s in range(n)]
            for source in self.sources():
                stat = final if source == "seen" else self.fenv[op.results[0]]
                options.append((source + "+bc", stat, scored))
        return options, biases

    def sources(self) -> list[str]:
        """Where an output range may come from: the values the quantized graph computes ("seen"), the
        float reference ("float"); both in auto mode, where held-back data decide ("seen" first: the
        default unless the float reference is significantly better.  Measured the other way round,
        float first: models/calib ds_cnn_kws 39.66 -> 37.68 dB, zoo mlp_act 16.92 -> 16.15 dB,
        mlp_tabular 28.27 -> 28.43 dB held-out output SQNR)."""
        return ["seen", "float"] if self.mode == "auto" else ["seen"]

    def select(self, value: SSAValue, layer: Layer, options: list[tuple[str, list, list]],
               bits: int) -> tuple[str, str, TensorStats | None]:
        """The (option label, range method) whose output quantization has the least squared error
        against the float reference on held-back samples, by HOLD-fold cross-validation: each fold's
        samples are scored with the range (and corrected bias) fitted on the other folds.  The error is
        measured after the op's sole consumer when that is a cheap op of the output alone (softmax,
        mean, pooling, reshape, ...): the error that matters is what reaches it.  Range methods: the
        strategy's, or for `auto` AUTO_METHODS (graph inputs: INPUT_METHODS).  Without folds (or with
        one candidate): the first option and method.  Also returns the chosen values' statistics over all samples (None when
        nothing was scored)."""
        method = self.strategy.calibration(layer)
        auto = INPUT_METHODS if layer.kind == "input" else AUTO_METHODS
        methods = list(auto) if method == "auto" else [method]
        if not self.folds or len(options) * len(methods) == 1:
            return options[0][0], methods[0], None
        symmetric = self.strategy.activation_symmetric(layer)
        qmin, qmax = _bounds(bits)
        n = self.n
        views = self.views(value)
        weighted = any(kind == "weighted" for kind, _ in views)
        size = int(np.prod(np.shape(self.fenv[value][0])))
        step = max(1, size // SCORE_ELEMENTS)  # own error: every step-th element is scored
        if weighted:  # a float conv per candidate and sample: as many samples as SCORE_MACS allow
            macs = sum(int(np.prod(what.results[0].type.get_shape())) * int(np.prod(what.operands[1].type.get_shape()))
                       // max(1, int(what.operands[1].type.get_shape()[3 if isinstance(what, nn.DepthwiseConv2DOp) else 0]))
                       for kind, what in views if kind == "weighted")
            per_fold = max(WEIGHTED_SCORE_SAMPLES, SCORE_MACS // max(macs, 1))
            folds = [fold[:per_fold] for fold in self.folds]
        else:
            folds = self.folds

        def seen_by(values: list[np.ndarray], grid: tuple | None = None) -> list[np.ndarray]:
            """What the error is measured on: per view, the values after it (flattened, concatenated)."""
            out = [[] for _ in values]
            for kind, what in views:
                if kind == "own":
                    got = [np.asarray(v).reshape(-1)[::step] for v in values]
                elif kind == "chain":
                    got = self.through(what, values, grid)
                else:
                    got = self.float_eval(what, [[v, *(self.fenv_of(o, 0) for o in what.operands[1:])]
                                                 for v in values])
                for k, g in enumerate(got):
                    out[k].append(np.asarray(g, np.float64).reshape(-1))
            return [np.concatenate(o) for o in out]

        reference = [seen_by([self.fenv[value][s] for s in fold]) for fold in folds]
        per_sample: dict[int, list[TensorStats]] = {}
        fitted: dict[tuple, tuple[float, float]] = {}
        scores: list[tuple[np.ndarray, str, str, list]] = []
        for label, stat, actual in options:
            if id(stat) not in per_sample:
                parts = []
                for s in range(n):
                    part = TensorStats(seed=s)
                    part.observe(stat[s])
                    parts.append(part)
                per_sample[id(stat)] = parts
            parts = per_sample[id(stat)]
            kept = sum(v.size for p in parts for v in p.values)
            stride = max(1, min(FIT_STRIDE, kept // FIT_VALUES))  # thin only large histograms
            for m in methods:
                err: list[float] = []  # per scored sample
                for f, fold in enumerate(folds):
                    key = (id(stat), f, m)
                    if key not in fitted:
                        others = TensorStats.merged([p for s, p in enumerate(parts) if s % len(self.folds) != f],
                                                    stride=stride)
                        fitted[key] = fitted_range(others, m, qmin, qmax, symmetric)
                    scale, zp = affine_params(*fitted[key], qmin, qmax, symmetric)
                    fq = [_fake_quant(actual[s], scale, zp, qmin, qmax) for s in fold]
                    got = seen_by(fq, (scale, zp, qmin, qmax))
                    err += [float(np.sum((g - r) ** 2)) for g, r in zip(got, reference[f])]
                scores.append((np.array(err), label, m, stat))
        best = _significantly_better(scores)
        self.choices[layer.name] = f"{best[1]} {best[2]}"
        return best[1], best[2], TensorStats.merged(per_sample[id(best[3])])

    def views(self, value: SSAValue) -> list[tuple[str, object]]:
        """Where `select` measures the error of `value`: after each weighted consumer that reads
        it as its input (a conv's output error, float weights: clipping errors add up there, rounding
        noise averages out); after a single cheap consumer chain (`downstream`); else on the output
        itself ("own"), also when some consumer is neither."""
        users = list({id(use.operation): use.operation for use in value.uses}.values())
        views: list[tuple[str, object]] = []
        own = False
        for user in users:
            if (isinstance(user, WEIGHTED) and user.operands[0] is value
                    and all(isinstance(o.owner, nn.ConstantOp) for o in user.operands[1:])):
                views.append(("weighted", user))
            else:
                own = True
        if not views:
            chain = self.downstream(value)
            return [("chain", chain)] if chain else [("own", None)]
        return views + ([("own", None)] if own else [])

    def downstream(self, value: SSAValue) -> list[tuple[nn.NnOp, SSAValue]]:
        """The ops after `op` whose float output `select` scores: while a value has one consumer, a
        cheap op (not weighted; its other operands constants), followed through data movement."""
        chain = []
        for _ in range(3):
            users = {id(use.operation): use.operation for use in value.uses}
            if len(users) != 1:
                break
            user = next(iter(users.values()))
            if (not isinstance(user, nn.NnOp) or isinstance(user, (WEIGHTED, nn.ConcatenationOp))
                    or not all(o is value or isinstance(o.owner, nn.ConstantOp) for o in user.operands)):
                break
            chain.append((user, value))
            if not isinstance(user, INHERIT):
                break
            value = user.results[0]
        return chain

    def through(self, chain, values: list[np.ndarray], grid: tuple | None = None) -> list[np.ndarray]:
        """`values` (one array per sample) through the float ops of `chain`; with `grid` (scale, zero
        point, qmin, qmax of the values), as the quantized ops would give them: an op that keeps its
        input's parameters (pooling, data movement) rounds onto `grid` again, a fixed-output op (softmax,
        logistic, ...) onto its fixed parameters."""
        for user, value in chain:
            values = self.float_eval(user, [[v if o is value else self.fenv_of(o, 0) for o in user.operands]
                                            for v in values])
            if grid is None:
                continue
            if isinstance(user, INHERIT):
                values = [_fake_quant(v, *grid) for v in values]
            elif isinstance(user, FIXED_OUTPUT):
                storage = _storage(grid_bits(grid))
                fixed = NN_TO_QNN[type(user)].FIXED.get(storage)
                if fixed is not None:
                    values = [_fake_quant(v, fixed[0], fixed[1], grid[2], grid[3]) for v in values]
        return values

    @staticmethod
    def real_bias(const, x_qt, w_qt, channels: int) -> np.ndarray:
        stored = const.array().astype(np.float64).reshape(-1)
        scales = (np.float32(float(x_qt.scale_array())) * np.broadcast_to(
            w_qt.scale_array().astype(np.float32), (channels,))).astype(np.float64)
        return (stored * scales).astype(np.float32)

    def bias(self, real: np.ndarray, x_qt: UniformQuantizedType, w_qt: UniformQuantizedType, channels: int):
        in_s = np.float32(float(x_qt.scale_array()))
        w_s = np.broadcast_to(w_qt.scale_array().astype(np.float32), (channels,))
        scales = (in_s * w_s).astype(np.float32).astype(np.float64)
        real = np.asarray(real, np.float64).reshape(-1)
        stored = np.sign(real / scales) * np.floor(np.abs(real / scales) + 0.5)
        if x_qt.storage_width.data > 8:  # 16-bit activations: TFLite's int64 bias
            return qnn.ConstantOp(stored.astype(np.int64), TensorType(IntegerType(64), [channels]))
        stored = np.clip(stored, -(2**31) + 1, 2**31 - 1).astype(np.int32)
        if w_qt.is_per_axis:
            qt = UniformQuantizedType.per_axis(scales, 0, axis=0, storage="i32")
        else:
            qt = UniformQuantizedType.per_tensor(float(scales[0]), 0, storage="i32")
        return qnn.ConstantOp.from_array(stored, qt)

    def output_type(self, op, layer: Layer, q_operands, seen,
                    reference=None, method: str | None = None,
                    stats: TensorStats | None = None) -> tuple[UniformQuantizedType, tuple | None]:
        bits = 8 if isinstance(op, EIGHT_BIT_ONLY) else self.strategy.activation_bits(layer)
        if isinstance(op, INHERIT):
            return quantized_element_type(q_operands[0].type), None
        if isinstance(op, FIXED_OUTPUT):
            target = NN_TO_QNN[type(op)]
            storage = _storage(bits)
            if storage not in target.FIXED:
                raise QuantizeError(f"{layer.name}: {target.name} has no fixed output parameters for {storage}")
            scale, zp = target.FIXED[storage]
            return UniformQuantizedType.per_tensor(scale, zp, storage), None
        if stats is None:
            stats = TensorStats()
            for a in seen:
                stats.observe(a)
        qt, rng = self.activation_type(layer, stats, bits, reference, method)
        if isinstance(op, nn.HardSwishOp):  # TFLite's kernel needs s_in / (128 s_out) <= 1
            in_s = float(quantized_element_type(q_operands[0].type).scale_array())
            if float(qt.scale_array()) < in_s / 128:
                lo, hi = qt.storage_range()
                scale = float(np.float32(in_s / 128)) * (1 + 2**-20)
                zp = int(qt.zero_point_array())
                qt = UniformQuantizedType.per_tensor(scale, zp, qt.storage)
        return qt, rng

    def record(self, layer: Layer, qvalue: SSAValue, reference: list[np.ndarray], rng, weights: str = "") -> None:
        self.pairs.append((self.float_value_of(qvalue), qvalue))
        qt = quantized_element_type(qvalue.type)
        qp = qt.qparams()
        approx = np.concatenate([np.asarray(dequantize(a, x_q=qp), np.float64).reshape(-1) for a in self.qenv[qvalue]])
        ref = np.concatenate([np.asarray(r, np.float64).reshape(-1) for r in reference])
        self.layers.append(LayerReport(layer.index, layer.name, layer.kind, str(qt), sqnr_db(ref, approx), weights, rng,
                                       choice=self.choices.get(layer.name, "")))

    def float_value_of(self, qvalue: SSAValue) -> SSAValue:
        for f, q in self.qmap.items():
            if q is qvalue:
                return f
        raise QuantizeError(f"{qvalue} has no float counterpart")

    def finish(self, ret: func.ReturnOp, new_args: list[SSAValue], n: int) -> QuantizeResult:
        results = []
        outputs_sqnr = []
        for k, v in enumerate(ret.operands):
            if v not in self.qmap:
                raise QuantizeError(f"output {k} is not computed by a quantized op")
            q = self.qmap[v]
            if self.int_io:
                results.append(q)
            else:
                cast = DequantizeCastOp(q, v.type)
                self.block.add_op(cast)
                results.append(cast.results[0])
            qp = quantized_element_type(q.type).qparams()
            approx = np.concatenate([np.asarray(dequantize(a, x_q=qp), np.float64).reshape(-1) for a in self.qenv[q]])
            ref = np.concatenate([np.asarray(r, np.float64).reshape(-1) for r in self.fenv[v]])
            outputs_sqnr.append(sqnr_db(ref, approx))
        self.block.add_op(func.ReturnOp(*results))
        f = self.func
        ftype = ([a.type for a in self.block.args], [r.type for r in results])
        kwargs = {}
        if f.arg_attrs is not None:
            kwargs["arg_attrs"] = f.arg_attrs
        if f.res_attrs is not None:
            kwargs["res_attrs"] = f.res_attrs
        new_func = func.FuncOp("main", ftype, Region(self.block), **kwargs)
        module = ModuleOp([new_func])
        try:
            verify_module(module)
        except VerifyException as e:
            raise QuantizeError(f"the quantized module does not verify: {e}") from None
        pairs = self.pairs + [(v, self.qmap[v]) for v in ret.operands]  # layers, then outputs
        return QuantizeResult(module, self.layers, outputs_sqnr, getattr(self.strategy, "name", ""), self.mode,
                              None, self.float_module, pairs, self.simulation_module())

    def simulation_module(self) -> ModuleOp:
        """A copy of the float module with qnn.simulated_quantize after each quantized value."""
        copy = self.float_module.clone()
        original_ops = list(self.float_module.walk())
        for original, op in zip(original_ops, list(copy.walk())):
            if original in self.biases:  # the bias the integer op adds (corrected, rounded to its scale)
                const = nn.ConstantOp.from_array(self.biases[original])
                op.parent.insert_op_before(const, op)
                if len(op.operands) == 3:
                    old = op.operands[2]
                    op.operands = [op.operands[0], op.operands[1], const.result]
                    if not old.uses:
                        old.owner.parent.erase_op(old.owner)
                else:
                    op.operands = [*op.operands, const.result]
        originals = [v for op in self.float_module.walk() for v in (*op.results, *_block_args(op))]
        clones = [v for op in copy.walk() for v in (*op.results, *_block_args(op))]
        for original, clone in zip(originals, clones):
            qt = self.weight_types.get(original)
            if qt is None and original in self.qmap:
                qt = quantized_element_type(self.qmap[original].type)
            if qt is None or not clone.uses:
                continue
            rounding = self.roundings.get(original, "tflite")
            attrs = {"qtype": qt}
            if rounding != "tflite":
                attrs["rounding"] = StringAttr(rounding)
            sim = qnn.SimulatedQuantizeOp([clone], [clone.type], attrs)
            clone.replace_uses_with_if(sim.results[0], lambda use: use.operation is not sim)
            owner = clone.owner
            if isinstance(owner, Block):
                owner.insert_op_before(sim, owner.first_op)
            else:
                owner.parent.insert_op_after(sim, owner)
        return copy


def fitted_range(stats: TensorStats, method: str, qmin: int, qmax: int, symmetric: bool) -> tuple[float, float]:
    """`choose_range`, and `METHOD*F` (the METHOD range times F) for the widened candidates."""
    base, _, factor = method.partition("*")
    lo, hi = choose_range(stats, base, qmin=qmin, qmax=qmax, symmetric=symmetric)
    if factor:
        lo, hi = lo * float(factor), hi * float(factor)
    return lo, hi


def _fake_quant(values: np.ndarray, scale: float, zp: int, qmin: int, qmax: int) -> np.ndarray:
    """`values` rounded onto the grid (scale, zero point) and clamped to [qmin, qmax], as real numbers:
    TFLite's QUANTIZE (float32 division, half away from zero), then DEQUANTIZE."""
    q = round_half_away(np.asarray(values, np.float32) / np.float32(scale))
    return ((np.clip(q + zp, qmin, qmax) - zp) * scale).astype(np.float32)


def grid_bits(grid: tuple) -> int:
    """Storage width of a (scale, zero point, qmin, qmax) grid."""
    return int(grid[3] - grid[2] + 1).bit_length() - 1


def _significantly_better(scores: list[tuple]) -> tuple:
    """Of `scores` ((per-sample errors, ...) per candidate, the first the default), the candidate whose
    mean error is lowest among those better than the default by more than SWITCH_Z standard errors of
    the per-sample differences; the default when none is."""
    base = scores[0][0]
    best, gain = scores[0], 0.0
    for cand in scores[1:]:
        d = base - cand[0]
        mean = float(np.mean(d))
        se = float(np.std(d, ddof=1) / math.sqrt(d.size)) if d.size > 1 else math.inf
        if mean > SWITCH_Z * se and mean > gain:
            best, gain = cand, mean
    return best


def _build(op: nn.NnOp, operands: list[SSAValue], result_type, extra: list, rounding: str):
    """`qnn-raise`'s builder, and the transformer ops' qnn ops (one operand, no clamp); or why not."""
    target = TRANSFORMER_OPS.get(type(op))
    if target is None:
        return build(op, operands, result_type, extra, rounding)
    attrs = qnn_attributes(op, target, quantized_element_type(result_type))
    if rounding != "tflite":
        attrs["rounding"] = rounding
    new = target(operands, [result_type], attrs)
    try:
        new.verify()
    except VerifyException as e:
        new.drop_all_references()
        return f"the qnn op would not verify: {e}"
    return list(extra), new


def weight_mse_max(rows: np.ndarray, m: np.ndarray, qmax: int, grid: int = 40) -> np.ndarray:
    """Per row, the clipping magnitude (a fraction of max |w|) whose symmetric quantization has the least squared error."""
    best_err = np.full(rows.shape[0], np.inf)
    best = m.copy()
    for f in np.linspace(1.0, 0.3, grid):
        c = m * f
        s = np.where(c > 0, c / qmax, 1.0)[:, None]
        err = np.sum((np.clip(np.round(rows / s), -qmax, qmax) * s - rows) ** 2, axis=1)
        better = err < best_err
        best_err = np.where(better, err, best_err)
        best = np.where(better, c, best)
    return best


def _block_args(op) -> list[SSAValue]:
    return [a for region in op.regions for block in region.blocks for a in block.args]


class _Repeat:
    """The same array for every sample (a constant)."""

    def __init__(self, arr):
        self.arr = arr

    def __getitem__(self, s):
        return self.arr


def quantize_float_module(float_module: ModuleOp, samples: Sequence[Sequence[np.ndarray]], strategy: Strategy,
                          *, mode: str = "auto", int_io: bool = False, bias_correction: bool | None = None,
                          progress: Callable[[str], None] | None = None) -> QuantizeResult:
    """Calibrate `float_module` on `samples` and build its quantized L1 module (see the module docstring)."""
    with np.errstate(all="ignore"):
        return _Quantizer(float_module, strategy, mode, int_io, progress, bias_correction).run(samples)


def _trace(module: ModuleOp, inputs: Sequence[np.ndarray]) -> dict[SSAValue, np.ndarray]:
    """Every value of the entry function of `module` on `inputs` (the reference interpreter, op by op)."""
    it = Interpreter(module)
    f = it.entry()
    env: dict[SSAValue, np.ndarray] = {}
    for arg, x in zip(f.body.block.args, inputs):
        env[arg] = np.asarray(x).astype(Interpreter._dtype(arg), copy=False)
    for op in f.body.block.ops:
        if isinstance(op, func.ReturnOp):
            break
        for r, v in zip(op.results, it.eval(op, [env[o] for o in op.operands])):
            env[r] = v
    return env


def observation_module(float_module: ModuleOp) -> ModuleOp:
    """A copy of the float graph with a passthrough qnn.simulated_quantize (an observation point that
    adds no error) after every argument and float op result, named like the value it observes."""
    copy = float_module.clone()
    for op in list(copy.walk()):
        values = [a for region in op.regions for block in region.blocks for a in block.args] if isinstance(
            op, func.FuncOp) else list(op.results) if isinstance(op, nn.NnOp) else []
        for value in values:
            if not (isinstance(value.type, TensorType) and nn.is_float(value.type.element_type)) or not value.uses:
                continue
            probe = qnn.SimulatedQuantizeOp([value], [value.type], {"mode": StringAttr("passthrough")})
            value.replace_uses_with_if(probe.results[0], lambda use: use.operation is not probe)
            probe.results[0].name_hint = value.name_hint
            if isinstance(value.owner, Block):
                value.owner.insert_op_before(probe, value.owner.first_op)
            else:
                value.owner.parent.insert_op_after(probe, value.owner)
    return copy


def collect_statistics(float_module: ModuleOp, samples: Sequence[Sequence[np.ndarray]]) -> dict[str, TensorStats]:
    """Run the float graph on `samples` and gather `TensorStats` of every argument and float op result,
    keyed by SSA name (`#K` for the K-th observation point without one): calibration without quantizing.
    The values are what passthrough simulated_quantize probes (`observation_module`) record."""
    observed = observation_module(float_module)
    stats: dict[str, TensorStats] = {}
    probes = [op for op in observed.walk() if isinstance(op, qnn.SimulatedQuantizeOp)]
    names = {id(op): op.operands[0].name_hint or f"#{k}" for k, op in enumerate(probes)}
    it = Interpreter(observed)
    it.observer = lambda op, values: stats.setdefault(names[id(op)], TensorStats()).observe(values)
    with np.errstate(all="ignore"):
        for sample in samples:
            it.run(sample)
    return stats


def evaluate(result: QuantizeResult, samples: Sequence[Sequence[np.ndarray]]) -> QuantizeResult:
    """Per-layer and output SQNR of the quantized module against float on other data (e.g. held out);
    fills `eval_sqnr_db` of each layer and `eval_outputs_sqnr_db`."""
    if result.float_module is None:
        raise QuantizeError("this result does not carry its float module")
    ref: dict = {}
    got: dict = {}
    with np.errstate(all="ignore"):
        for sample in samples:
            fenv = _trace(result.float_module, sample)
            qin = sample if not any(quantized_element_type(a.type) for a in result.module.ops.first.body.block.args) \
                else [quantize(x, out_q=quantized_element_type(a.type).qparams())
                      for x, a in zip(sample, result.module.ops.first.body.block.args)]
            qenv = _trace(result.module, qin)
            for k, (fv, qv) in enumerate(result.pairs):
                qp = quantized_element_type(qv.type).qparams()
                ref.setdefault(k, []).append(np.asarray(fenv[fv], np.float64).reshape(-1))
                got.setdefault(k, []).append(np.asarray(dequantize(qenv[qv], x_q=qp), np.float64).reshape(-1))
    values = [sqnr_db(np.concatenate(ref[k]), np.concatenate(got[k])) for k in range(len(result.pairs))]
    n = len(result.layers)
    for layer, v in zip(result.layers, values[:n]):
        layer.eval_sqnr_db = v
    result.eval_outputs_sqnr_db = values[n:]
    return result


def samples_from_npz(arrays: dict[str, np.ndarray], input_shapes: Sequence[Sequence[int]],
                     what: str = "calibration data") -> list[list[np.ndarray]]:
    """`input_0`, `input_1`, ... stacks of samples (one more leading dim than the input, or exactly the
    input's shape for a single sample) -> a list of samples."""
    stacks = []
    for k, shape in enumerate(input_shapes):
        key = f"input_{k}"
        if key not in arrays:
            raise QuantizeError(f"{what} has no '{key}' (it holds {', '.join(sorted(arrays)) or 'nothing'})")
        a = np.asarray(arrays[key])
        if a.dtype.kind not in "fiu":
            raise QuantizeError(f"'{key}' has dtype {a.dtype}, expected float32 samples")
        if tuple(a.shape) == tuple(shape):
            a = a[None]
        elif tuple(a.shape[1:]) != tuple(shape):
            raise QuantizeError(f"'{key}' has shape {list(a.shape)}; expected [N, {', '.join(map(str, shape))}]")
        if not np.all(np.isfinite(a)):
            raise QuantizeError(f"'{key}' holds NaN or infinite values")
        stacks.append(a.astype(np.float32))
    counts = {len(s) for s in stacks}
    if len(counts) != 1:
        raise QuantizeError(f"inputs hold different sample counts: {sorted(counts)}")
    n = counts.pop()
    if n == 0:
        raise QuantizeError(f"the {what} holds no samples")
    return [[s[i] for s in stacks] for i in range(n)]


# ----- the report -----------------------------------------------------------------------------


def _fmt_db(v: float) -> str:
    if v == math.inf:
        return "inf"
    if v == -math.inf:
        return "-inf"
    return f"{v:.2f}"


def report_markdown(result: QuantizeResult, title: str = "") -> str:
    evaluated = result.eval_outputs_sqnr_db is not None
    chosen = any(r.choice for r in result.layers)
    lines = [f"# qd-quantize report{': ' + title if title else ''}", "",
             f"Scheme `{result.strategy}`, calibration `{result.mode}`. SQNR of each layer's dequantized "
             "integer output against the float graph on the calibration samples "
             "(10 log10 signal / noise power; higher is better)" + (
                 "; `SQNR eval`: the same on the evaluation data" if evaluated else "") + (
                 "; `choice`: what cross-validation on the calibration samples chose (range from the quantized "
                 "graph's values `seen` or the float reference `float`, `+bc` bias corrected, range method)"
                 if chosen else "") + ".", "",
             "| # | layer | op | type | weights |" + (" choice |" if chosen else "") + " SQNR (dB) |"
             + (" SQNR eval (dB) |" if evaluated else ""),
             "| --- | --- | --- | --- | --- |" + (" --- |" if chosen else "") + " --- |" + (" --- |" if evaluated else "")]
    for r in result.layers:
        t = r.type.replace("|", "\\|")
        extra = f" {_fmt_db(r.eval_sqnr_db)} |" if evaluated else ""
        choice = f" {r.choice} |" if chosen else ""
        lines.append(f"| {r.index} | `{r.name}` | {r.kind} | `{t}` | {r.weights} |{choice} {_fmt_db(r.sqnr_db)} |{extra}")
    lines += ["", "| output | SQNR (dB) |" + (" SQNR eval (dB) |" if evaluated else ""),
              "| --- | --- |" + (" --- |" if evaluated else "")]
    for k, v in enumerate(result.outputs_sqnr_db):
        extra = f" {_fmt_db(result.eval_outputs_sqnr_db[k])} |" if evaluated else ""
        lines.append(f"| output_{k} | {_fmt_db(v)} |{extra}")
    return "\n".join(lines) + "\n"


def write_png(path: Path, rgb: np.ndarray) -> None:
    """A minimal PNG writer (8-bit RGB, no filtering) with numpy and zlib."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].astype(np.uint8).tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    path.write_bytes(png)


_DIGITS = {  # 3x5 bitmap glyphs, rows top to bottom
    "0": ("111", "101", "101", "101", "111"), "1": ("010", "110", "010", "010", "111"),
    "2": ("111", "001", "111", "100", "111"), "3": ("111", "001", "111", "001", "111"),
    "4": ("101", "101", "111", "001", "001"), "5": ("111", "100", "111", "001", "111"),
    "6": ("111", "100", "111", "101", "111"), "7": ("111", "001", "001", "001", "001"),
    "8": ("111", "101", "111", "101", "111"), "9": ("111", "101", "111", "001", "111"),
    "-": ("000", "000", "111", "000", "000"),
}


def _draw_text(img: np.ndarray, text: str, x: int, y: int) -> None:
    """Digits in a 3x5 font (axis labels), top-left corner at (x, y), clipped to the image."""
    for ch in text:
        glyph = _DIGITS.get(ch)
        if glyph is None:
            x += 4
            continue
        for dy, row in enumerate(glyph):
            for dx, bit in enumerate(row):
                if bit == "1" and 0 <= y + dy < img.shape[0] and 0 <= x + dx < img.shape[1]:
                    img[y + dy, x + dx] = (0, 0, 0)
        x += 4


def plot_sqnr(values: Sequence[float], width: int = 640, height: int = 320,
              second: Sequence[float] | None = None) -> np.ndarray:
    """A bar chart of per-layer SQNR (dB) as an RGB image: one bar per layer (numbered), grid lines
    every 10 dB labelled on the left; `second` (e.g. evaluation SQNR) draws a grey bar beside each."""
    img = np.full((height, width, 3), 255, np.uint8)
    margin = 24
    finite = [v for v in [*values, *(second or [])] if math.isfinite(v)]
    top = max([10.0, *finite]) if finite else 10.0
    top = 10.0 * math.ceil(top / 10.0)
    bottom = 10.0 * math.floor(min(0.0, *finite) / 10.0) if finite else 0.0
    span = top - bottom
    plot_h = height - 2 * margin

    def y_of(v: float) -> int:
        return int(round(margin + (top - v) / span * plot_h))

    def bar(x0: int, x1: int, v: float, color=None) -> None:
        vv = top if v == math.inf else bottom if v == -math.inf else v
        y0, y1 = sorted((y_of(0.0), y_of(vv)))
        if color is None:
            color = (40, 110, 200) if vv >= 30 else (230, 150, 30) if vv >= 15 else (210, 50, 40)
        img[y0:y1 + 1, x0:x1] = color

    for g in np.arange(bottom, top + 1e-9, 10.0):
        img[y_of(g), margin:width - margin] = (220, 220, 220)
        _draw_text(img, f"{int(g)}", 2, y_of(g) - 2)
    img[y_of(0.0), margin:width - margin] = (0, 0, 0)
    n = max(len(values), 1)
    slot = (width - 2 * margin) / n
    for i, v in enumerate(values):
        x0 = int(margin + i * slot + slot * 0.15)
        x1 = max(int(margin + (i + 1) * slot - slot * 0.15), x0 + 1)
        if second is not None and i < len(second):
            mid = max((x0 + x1) // 2, x0 + 1)
            bar(x0, mid, v)
            bar(mid, max(x1, mid + 1), second[i], (150, 150, 150))
        else:
            bar(x0, x1, v)
        if slot >= 10:
            _draw_text(img, str(i + 1), (x0 + x1) // 2 - 2 * len(str(i + 1)), height - margin + 6)
    img[margin:height - margin, margin] = (0, 0, 0)
    return img


def write_report(result: QuantizeResult, directory: Path, title: str = "") -> tuple[Path, Path]:
    """report.md (table) and sqnr.png (bar chart) in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    md = directory / "report.md"
    png = directory / "sqnr.png"
    text = report_markdown(result, title)
    evaluated = result.eval_outputs_sqnr_db is not None
    text += ("\n![per-layer SQNR](sqnr.png)\n\nBars: one per table row, numbered in order; grid every 10 dB; "
             "blue >= 30 dB, orange >= 15 dB, red below" + ("; grey: the evaluation data" if evaluated else "") + ".\n")
    md.write_text(text, encoding="utf-8")
    second = [r.eval_sqnr_db for r in result.layers] if evaluated else None
    write_png(png, plot_sqnr([r.sqnr_db for r in result.layers], second=second))
    return md, png


def progress_to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
