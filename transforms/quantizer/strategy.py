"""Quantization strategies: what each tensor of a float graph becomes.

A strategy is a small object whose methods answer, for one layer (an op of
the float graph, named after its output tensor), how to quantize it:

| method | answers | int8 (TFLite) |
| --- | --- | --- |
| `activation_bits(layer)` | storage width of the layer's output: 8 or 16 (4 for experiments) | 8 |
| `activation_symmetric(layer)` | zero point 0 and a symmetric range? | False |
| `weight_bits(layer)` | storage width of conv / fully connected weights | 8 (range [-127, 127]) |
| `weight_per_channel(layer)` | one scale per output channel, or one per tensor | True |
| `rounding(layer)` | integer rounding profile of the op (`tflite`, `single`, `half_up`) | tflite |
| `multiplier(layer)` | `integer` (fixed-point multiplier with `rounding`) or `float` (float scale, ties to even: the `half_even` profile) | integer |
| `calibration(layer)` | how the output range is chosen from statistics (`auto`, `minmax`, `moving_average`, `percentile`, `mse`; `auto`: mse or minmax by held-back error, graph inputs min/max or widened) | auto |
| `weight_calibration(layer)` | weight range per channel: `minmax` (max abs, TFLite) or `mse` (the clipping with least squared error) | mse |
| `accumulator(layer)` | None, or (`i16`/`i32`/`i64`, `wrap`/`saturate`) to simulate another accumulator | None |

Weights are always symmetric (zero point 0), as every qnn kernel expects;
biases are i32 (i64 when the layer's input has 16-bit activations) with
scale input_scale * weight_scale[c].  Ops whose integer kernel fixes the
output parameters (logistic, tanh, softmax, log_softmax) take TFLite's
fixed ones for the chosen width; data movement and pooling keep their
input's parameters.

    class Int16Head(Int8):
        '''int8 everywhere, but the layer named "dense" gets int16 activations.'''
        def activation_bits(self, layer):
            return 16 if layer.name == "dense" else 8

A user strategy subclasses `Strategy` (or a built-in) and overrides any of
the methods; `qd-quantize --scheme FILE.py:CLASS` loads one.  Built-in
names: `int8`, `int16x8`, `int8-symmetric`, `int4-weights`.  `PerLayer`
applies other strategies to layers matched by name, kind or index.
"""

from __future__ import annotations

import fnmatch
import importlib
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from transforms.quantizer.calibration import RANGE_METHODS


@dataclass(frozen=True)
class Layer:
    """One op of the float graph as a strategy sees it.

    name: its output tensor's name (the SSA name; inputs: the argument's);
    kind: the op without dialect prefix ("conv2d", "add", ...; "input" for
    graph inputs); index: position among the graph's ops (inputs: -1, -2, ...).
    """

    name: str
    kind: str
    index: int


class Strategy:
    """TFLite's int8 scheme; subclass and override methods to change decisions."""

    name = "int8"

    def activation_bits(self, layer: Layer) -> int:
        return 8

    def activation_symmetric(self, layer: Layer) -> bool:
        return False

    def weight_bits(self, layer: Layer) -> int:
        return 8

    def weight_per_channel(self, layer: Layer) -> bool:
        return True

    def rounding(self, layer: Layer) -> str:
        return "tflite"

    def multiplier(self, layer: Layer) -> str:
        return "integer"

    def calibration(self, layer: Layer) -> str:
        return "auto"

    def weight_calibration(self, layer: Layer) -> str:
        return "mse"

    def accumulator(self, layer: Layer) -> tuple[str, str] | None:
        return None

    def __repr__(self) -> str:
        return f"<strategy {self.name}>"


class Int8(Strategy):
    """int8 activations (asymmetric), int8 per-channel symmetric weights [-127, 127], i32 bias."""

    name = "int8"


class Int16x8(Strategy):
    """int16 symmetric activations (zero point 0), int8 per-channel weights, i64 bias (TFLite's 16x8)."""

    name = "int16x8"

    def activation_bits(self, layer: Layer) -> int:
        return 16

    def activation_symmetric(self, layer: Layer) -> bool:
        return True


class Int8Symmetric(Strategy):
    """int8 activations with zero point 0 (symmetric), int8 per-channel weights."""

    name = "int8-symmetric"

    def activation_symmetric(self, layer: Layer) -> bool:
        return True


class Int4Weights(Strategy):
    """int8 activations, int4 per-channel symmetric weights in [-7, 7]."""

    name = "int4-weights"

    def weight_bits(self, layer: Layer) -> int:
        return 4


BUILTIN: dict[str, type[Strategy]] = {
    "int8": Int8,
    "int16x8": Int16x8,
    "int8-symmetric": Int8Symmetric,
    "int4-weights": Int4Weights,
}


def matches(layer: Layer, pattern: str) -> bool:
    """`#K` matches the op at index K, `kind:conv2d` an op kind, anything else the name (glob)."""
    if pattern.startswith("#"):
        return pattern[1:].lstrip("-").isdigit() and int(pattern[1:]) == layer.index
    if pattern.startswith("kind:"):
        return fnmatch.fnmatchcase(layer.kind, pattern[5:])
    return fnmatch.fnmatchcase(layer.name, pattern)


class PerLayer(Strategy):
    """`base` everywhere, except layers matching a pattern of `overrides` (first match wins)."""

    def __init__(self, base: Strategy, overrides: Mapping[str, Strategy]):
        self.base = base
        self.overrides = dict(overrides)
        self.name = base.name + "".join(f"+{p}={s.name}" for p, s in self.overrides.items())

    def pick(self, layer: Layer) -> Strategy:
        for pattern, strategy in self.overrides.items():
            if matches(layer, pattern):
                return strategy
        return self.base


def _delegate(method: str):
    def call(self: PerLayer, layer: Layer):
        return getattr(self.pick(layer), method)(layer)

    call.__name__ = method
    return call


for _m in ("activation_bits", "activation_symmetric", "weight_bits", "weight_per_channel", "rounding",
           "multiplier", "calibration", "weight_calibration", "accumulator"):
    setattr(PerLayer, _m, _delegate(_m))


class StrategyError(ValueError):
    """A scheme name or user strategy that cannot be used; the message says why."""


def load_strategy(spec: str) -> Strategy:
    """A built-in name, `FILE.py:CLASS` or `package.module:CLASS` -> a strategy instance."""
    if spec in BUILTIN:
        return BUILTIN[spec]()
    if ":" not in spec:
        raise StrategyError(
            f"unknown scheme '{spec}': expected one of {', '.join(BUILTIN)} or FILE.py:CLASS / module:CLASS"
        )
    where, _, cls_name = spec.rpartition(":")
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise StrategyError(f"strategy file {where} does not exist")
        module_spec = importlib.util.spec_from_file_location(f"qd_user_strategy_{path.stem}", path)
        module = importlib.util.module_from_spec(module_spec)
        try:
            module_spec.loader.exec_module(module)
        except Exception as e:  # the user's code: report, do not crash
            raise StrategyError(f"cannot load {where}: {type(e).__name__}: {e}") from None
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as e:
            raise StrategyError(f"cannot import {where}: {e}") from None
    cls = getattr(module, cls_name, None)
    if cls is None:
        raise StrategyError(f"{where} has no {cls_name}")
    try:
        strategy = cls() if isinstance(cls, type) else cls
    except Exception as e:
        raise StrategyError(f"cannot construct {cls_name}: {type(e).__name__}: {e}") from None
    missing = [m for m in ("activation_bits", "weight_bits", "rounding") if not callable(getattr(strategy, m, None))]
    if missing:
        raise StrategyError(f"{cls_name} is not a strategy (no {', '.join(missing)}); subclass transforms.quantizer.strategy.Strategy")
    return strategy


def check_decisions(layer: Layer, strategy: Strategy) -> None:
    """Raise StrategyError when a decision is out of range (naming the layer)."""
    a, w = strategy.activation_bits(layer), strategy.weight_bits(layer)
    if a not in (4, 8, 16):
        raise StrategyError(f"layer {layer.name}: activation bits {a} (expected 4, 8 or 16)")
    if w not in (2, 3, 4, 5, 6, 7, 8):
        raise StrategyError(f"layer {layer.name}: weight bits {w} (expected 2..8)")
    r, m = strategy.rounding(layer), strategy.multiplier(layer)
    if r not in ("tflite", "single", "half_up", "half_even"):
        raise StrategyError(f"layer {layer.name}: rounding '{r}' (expected tflite, single, half_up or half_even)")
    if m not in ("integer", "float"):
        raise StrategyError(f"layer {layer.name}: multiplier '{m}' (expected integer or float)")
    c = strategy.calibration(layer)
    if c not in RANGE_METHODS:
        raise StrategyError(f"layer {layer.name}: calibration '{c}' (expected one of {', '.join(RANGE_METHODS)})")
    wc = getattr(strategy, "weight_calibration", lambda layer: "minmax")(layer)
    if wc not in ("minmax", "mse"):
        raise StrategyError(f"layer {layer.name}: weight calibration '{wc}' (expected minmax or mse)")
    acc = strategy.accumulator(layer)
    if acc is not None and (acc[0] not in ("i16", "i32", "i64") or acc[1] not in ("wrap", "saturate")):
        raise StrategyError(f"layer {layer.name}: accumulator {acc} (expected (i16|i32|i64, wrap|saturate))")
