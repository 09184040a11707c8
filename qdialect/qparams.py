"""Quantization parameters as plain numpy data.

`QParams` is the numeric content of a `!quant.uniform` type, detached from the
IR: what the reference semantics, the importer and the lowering passes compute
with.  `real = scale * (stored - zero_point)`; for a per-axis type, `scale` and
`zero_point` are 1-D arrays indexed along `axis`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

ROUNDING_PROFILES = ("tflite", "single", "half_even", "half_up", "litert", "onnxruntime", "onnx")
"""Names of the rounding knob.

- `tflite`: TFLite reference kernels: QuantizeMultiplier + double rounding
  (SaturatingRoundingDoublingHighMul then RoundingDivideByPOT).
- `single`: TFLite built with TFLITE_SINGLE_ROUNDING, TOSA SINGLE_ROUND:
  `(x * M + 2^(30 - shift)) >> (31 - shift)`, ties toward +inf.
- `half_even`: multiply by the float32 scale and round ties to even
  (XNNPACK, ONNX Runtime).
- `half_up`: TVM Relay QNN's UPWARD: one rounding of the Q31 product, ties
  toward +inf.
- `litert`: LiteRT's default (XNNPACK) path, op by op.
- `onnxruntime`: ONNX Runtime's integer CPU kernels (QLinearConv, QGemm,
  QLinearAdd, lookup tables, ...; `qdialect.reference.onnxruntime_kernels`).
- `onnx`: the ONNX specification's QDQ meaning: dequantize (float32), the
  float op in float32, QuantizeLinear (x / scale, ties to even, saturate);
  what ONNX Runtime computes for a group it does not fuse.
"""

ONNX_ROUNDINGS = ("onnxruntime", "onnx")
"""The profiles of ONNX models (their ops take whatever output parameters the model gives)."""

BIAS_MODES = ("accumulator", "output")
ACC_WIDTHS = ("i32", "i16", "i64")


class QuantizationError(ValueError):
    """Invalid quantization parameters; the message names the bad value."""


@dataclass(frozen=True, eq=False)
class QParams:
    """Uniform quantization parameters of one tensor.

    bits/signed: the storage integer type (e.g. 8, True for i8).
    storage_min/storage_max: the (possibly narrowed) storage range.
    scale: float64 array, shape () for per-tensor or (C,) for per-axis.
    zero_point: int64 array of the same shape as scale.
    axis: the quantized dimension for per-axis parameters, else None.
    expressed: the expressed float type name ("f32", "f16", "bf16").
    """

    bits: int
    signed: bool
    storage_min: int
    storage_max: int
    scale: np.ndarray
    zero_point: np.ndarray
    axis: int | None = None
    expressed: str = "f32"

    @staticmethod
    def make(
        scale,
        zero_point=0,
        *,
        storage: str = "i8",
        axis: int | None = None,
        storage_min: int | None = None,
        storage_max: int | None = None,
        expressed: str = "f32",
    ) -> "QParams":
        """Build parameters from numbers or arrays; `storage` is like "i8", "u8", "i16"."""
        signed, bits = parse_storage(storage)
        lo, hi = storage_bounds(bits, signed)
        scale_arr = np.asarray(scale, dtype=np.float64)
        zp_arr = np.asarray(zero_point, dtype=np.int64)
        if axis is not None:
            scale_arr = np.atleast_1d(scale_arr)
            zp_arr = np.broadcast_to(np.atleast_1d(zp_arr), scale_arr.shape).copy()
        params = QParams(
            bits=bits,
            signed=signed,
            storage_min=lo if storage_min is None else int(storage_min),
            storage_max=hi if storage_max is None else int(storage_max),
            scale=scale_arr,
            zero_point=zp_arr,
            axis=axis,
            expressed=expressed,
        )
        params.validate()
        return params

    @property
    def per_axis(self) -> bool:
        return self.axis is not None

    @property
    def storage(self) -> str:
        return f"{'i' if self.signed else 'u'}{self.bits}"

    @property
    def dtype(self) -> np.dtype:
        """The numpy container dtype for stored values."""
        return storage_dtype(self.bits, self.signed)

    def validate(self) -> None:
        """Raise QuantizationError naming the first bad value."""
        if not 2 <= self.bits <= 32:
            raise QuantizationError(f"storage width {self.bits} is outside 2..32")
        lo, hi = storage_bounds(self.bits, self.signed)
        if self.storage_min < lo or self.storage_max > hi:
            raise QuantizationError(
                f"storage range [{self.storage_min}, {self.storage_max}] is outside "
                f"{self.storage} [{lo}, {hi}]"
            )
        if self.storage_min >= self.storage_max:
            raise QuantizationError(
                f"storage range [{self.storage_min}, {self.storage_max}] is empty"
            )
        for i, s in enumerate(np.atleast_1d(self.scale)):
            if not np.isfinite(s) or s <= 0:
                where = f" (channel {i})" if self.per_axis else ""
                raise QuantizationError(f"scale {float(s)!r}{where} must be finite and > 0")
        for i, z in enumerate(np.atleast_1d(self.zero_point)):
            if not self.storage_min <= z <= self.storage_max:
                where = f" (channel {i})" if self.per_axis else ""
                raise QuantizationError(
                    f"zero point {int(z)}{where} is outside {self.storage} "
                    f"[{self.storage_min}, {self.storage_max}]"
                )

    def channel(self, c: int) -> "QParams":
        """Per-tensor parameters of channel c of a per-axis type."""
        if not self.per_axis:
            return self
        return QParams(
            self.bits, self.signed, self.storage_min, self.storage_max,
            self.scale[c], self.zero_point[c], None, self.expressed,
        )

    def broadcast_shape(self, rank: int) -> tuple[int, ...]:
        """Shape that makes scale/zero_point broadcast against a rank-`rank` tensor."""
        if not self.per_axis:
            return ()
        shape = [1] * rank
        shape[self.axis] = self.scale.shape[0]
        return tuple(shape)

    def dequantize(self, stored: np.ndarray) -> np.ndarray:
        """Real values (float64) of stored integers."""
        stored = np.asarray(stored)
        shape = self.broadcast_shape(stored.ndim)
        scale = self.scale.reshape(shape) if shape else self.scale
        zp = self.zero_point.reshape(shape) if shape else self.zero_point
        return (stored.astype(np.int64) - zp) * scale

    def __repr__(self) -> str:
        return (
            f"QParams({self.storage}<{self.storage_min}:{self.storage_max}>, "
            f"scale={self.scale.tolist()}, zp={self.zero_point.tolist()}, axis={self.axis})"
        )


def parse_storage(storage: str) -> tuple[bool, int]:
    """'i8' -> (True, 8); 'u8' -> (False, 8)."""
    if len(storage) < 2 or storage[0] not in "iu" or not storage[1:].isdigit():
        raise QuantizationError(f"storage type {storage!r} is not iN or uN")
    return storage[0] == "i", int(storage[1:])


def storage_bounds(bits: int, signed: bool) -> tuple[int, int]:
    if signed:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


@functools.cache
def storage_dtype(bits: int, signed: bool) -> np.dtype:
    """The numpy container of `bits`-bit storage (remembered: a dtype is immutable, and
    parsing asks it of every constant)."""
    for width in (8, 16, 32, 64):
        if bits <= width:
            return np.dtype(f"{'int' if signed else 'uint'}{width}")
    raise QuantizationError(f"storage width {bits} is outside 2..32")
