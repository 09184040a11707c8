"""Calibration statistics and the choice of a quantization range.

A `TensorStats` watches one tensor over the calibration samples and keeps

- the global min / max,
- the moving average of per-sample min / max (`momentum`, TF's
  MovingAverageQuantizer style: `avg = m * avg + (1 - m) * sample`),
- a bounded random subset of the values (at most `keep` per sample), from
  which a histogram is built when a range is asked for.

`choose_range(stats, method, ...)` turns those into the real interval
[lo, hi] the quantizer should cover:

| method | range |
| --- | --- |
| `minmax` | global min / max (TFLite's converter) |
| `moving_average` | moving-average min / max |
| `percentile` | the `percentile`-th and (100 - percentile)-th percentiles of the histogram |
| `mse` | the interval whose quantization (with the scheme's bits and symmetry) has the least mean squared error over the histogram, clipping included, but never inside the 99.99th percentiles |
| `auto` | `mse` or `minmax`, per layer, whichever gives the least error on held-back calibration samples (the quantizer decides, `transforms.quantizer.flow`); `mse` here |

Every range contains 0 (a real 0 must be exactly representable, as TFLite
demands for zero padding and relu).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

RANGE_METHODS = ("auto", "minmax", "moving_average", "percentile", "mse")


@dataclass
class TensorStats:
    """Running statistics of one tensor over calibration samples."""

    momentum: float = 0.9
    keep: int = 16384
    seed: int = 0
    lo: float = np.inf
    hi: float = -np.inf
    avg_lo: float | None = None
    avg_hi: float | None = None
    count: int = 0
    values: list = field(default_factory=list)

    def observe(self, x: np.ndarray) -> None:
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        x = x[np.isfinite(x)]
        if x.size == 0:
            return
        lo, hi = float(x.min()), float(x.max())
        self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)
        m = self.momentum
        self.avg_lo = lo if self.avg_lo is None else m * self.avg_lo + (1 - m) * lo
        self.avg_hi = hi if self.avg_hi is None else m * self.avg_hi + (1 - m) * hi
        if x.size > self.keep:
            rng = np.random.default_rng(self.seed + self.count)
            x = rng.choice(x, self.keep, replace=False)
        self.values.append(x.astype(np.float32))
        self.count += 1

    @classmethod
    def merged(cls, parts: "list[TensorStats]", stride: int = 1) -> "TensorStats":
        """The statistics of the samples of `parts` (each one or more observed samples) observed in
        order; stride > 1 keeps every stride-th kept value (a cheaper histogram)."""
        out = cls()
        for p in parts:
            if p.empty:
                continue
            out.lo, out.hi = min(out.lo, p.lo), max(out.hi, p.hi)
            m = out.momentum
            out.avg_lo = p.avg_lo if out.avg_lo is None else m * out.avg_lo + (1 - m) * p.avg_lo
            out.avg_hi = p.avg_hi if out.avg_hi is None else m * out.avg_hi + (1 - m) * p.avg_hi
            out.values.extend(v[::stride] for v in p.values)
            out.count += p.count
        return out

    @property
    def empty(self) -> bool:
        return self.count == 0

    def histogram(self, bins: int = 2048) -> tuple[np.ndarray, np.ndarray]:
        """(counts, bin centers) over [min, max] of the kept values."""
        v = np.concatenate(self.values).astype(np.float64)
        lo, hi = min(self.lo, 0.0), max(self.hi, 0.0)
        if hi <= lo:
            return np.array([float(v.size)]), np.array([lo])
        counts, edges = np.histogram(v, bins=bins, range=(lo, hi))
        return counts.astype(np.float64), (edges[:-1] + edges[1:]) / 2


DEGENERATE_SCALE = 1.0 / 128
"""Scale of a tensor that was all zeros in calibration: any scale represents it, and a moderate one
keeps the next layer's bias scale (input_scale * weight_scale) far from underflow."""


def _with_zero(lo: float, hi: float) -> tuple[float, float]:
    return min(float(lo), 0.0), max(float(hi), 0.0)


def affine_params(lo: float, hi: float, qmin: int, qmax: int, symmetric: bool) -> tuple[float, int]:
    """(scale, zero_point) covering [lo, hi] with integers qmin..qmax (TFLite's nudging).

    Symmetric: scale = max(|lo|, |hi|) / qmax, zero point 0 (qmax = the
    positive end, so [-127, 127] of an i8 range is used).  Asymmetric:
    scale = (hi - lo) / (qmax - qmin), zero point = round(qmin - lo / scale)
    clamped to the range.  A degenerate range gets scale DEGENERATE_SCALE (any scale
    represents all zeros exactly).
    """
    lo, hi = _with_zero(lo, hi)
    if symmetric:
        m = max(abs(lo), abs(hi))
        scale = float(np.float32(m / qmax)) if m > 0 else 0.0
        return (scale if scale > 0 else DEGENERATE_SCALE), 0
    scale = float(np.float32((hi - lo) / (qmax - qmin)))
    if not scale > 0:
        return DEGENERATE_SCALE, int(min(max(0, qmin), qmax))
    zp = int(np.round(qmin - lo / scale))
    return scale, int(min(max(zp, qmin), qmax))


def mse_range(stats: TensorStats, qmin: int, qmax: int, symmetric: bool, grid: int = 40,
              keep: float | None = 99.99) -> tuple[float, float]:
    """The [lo, hi] (shrunk from min / max) with the least quantization MSE over the histogram,
    never cutting inside the `keep`-th percentiles (a few dozen calibration samples are a small
    sample: clipping what they barely show clips more of the data seen later)."""
    lo, hi = _mse_search(stats, qmin, qmax, symmetric, grid)
    if keep is None:
        return lo, hi
    plo, phi = np.percentile(np.concatenate(stats.values), [100.0 - keep, keep])
    lo, hi = min(lo, float(plo), 0.0), max(hi, float(phi), 0.0)
    if symmetric:
        m = max(-lo, hi)
        return -m, m
    return lo, hi


def _mse_search(stats: TensorStats, qmin: int, qmax: int, symmetric: bool, grid: int) -> tuple[float, float]:
    counts, centers = stats.histogram()
    lo, hi = _with_zero(stats.lo, stats.hi)
    if hi <= lo:
        return lo, hi
    factors = np.linspace(1.0, 0.2, grid)
    if symmetric:
        m = max(-lo, hi)
        los, his = -m * factors, m * factors
        errors = _fake_quant_errors(counts, centers, los, his, qmin, qmax, True)
        k = int(np.argmin(errors))
        return float(los[k]), float(his[k])
    # (lo * a, hi * b) pairs: every 4th factor of each side, then every factor within 4 steps of the best
    a_all = factors if lo < 0 else np.ones(1)
    b_all = factors if hi > 0 else np.ones(1)
    ia, ib = np.arange(0, a_all.size, 4), np.arange(0, b_all.size, 4)
    for _ in range(2):
        ga, gb = np.repeat(ia, ib.size), np.tile(ib, ia.size)
        errors = _fake_quant_errors(counts, centers, lo * a_all[ga], hi * b_all[gb], qmin, qmax, False)
        k = int(np.argmin(errors))  # the first of equal errors wins
        ka, kb = int(ga[k]), int(gb[k])
        ia = np.arange(max(ka - 4, 0), min(ka + 5, a_all.size))
        ib = np.arange(max(kb - 4, 0), min(kb + 5, b_all.size))
    return float(lo * a_all[ka]), float(hi * b_all[kb])


def _fake_quant_errors(counts, centers, los, his, qmin, qmax, symmetric) -> np.ndarray:
    """The histogram's squared fake-quantization error for every candidate range [los[k], his[k]] at once (`affine_params`' nudging)."""
    if symmetric:
        scale = (np.maximum(np.abs(los), np.abs(his)) / qmax).astype(np.float32).astype(np.float64)
        zp = np.zeros_like(scale)
    else:
        scale = ((his - los) / (qmax - qmin)).astype(np.float32).astype(np.float64)
        zp = np.clip(np.round(qmin - los / np.where(scale > 0, scale, 1.0)), qmin, qmax)
    scale = np.where(scale > 0, scale, DEGENERATE_SCALE)[:, None]
    zp = zp[:, None]
    used = counts > 0  # empty bins add nothing
    counts, centers = counts[used], centers[used][None, :]
    errors = np.empty(los.size)
    for k in range(0, los.size, 256):  # blocks of candidates: bounded temporaries
        s, z = scale[k:k + 256], zp[k:k + 256]
        d = (np.clip(np.round(centers / s) + z, qmin, qmax) - z) * s - centers
        errors[k:k + 256] = (d * d) @ counts
    return errors


def choose_range(stats: TensorStats, method: str, *, qmin: int, qmax: int, symmetric: bool,
                 percentile: float = 99.99) -> tuple[float, float]:
    """The real interval to quantize (always containing 0); see the module docstring."""
    if method not in RANGE_METHODS:
        raise ValueError(f"calibration method '{method}' is not one of {', '.join(RANGE_METHODS)}")
    if stats.empty:
        return 0.0, 0.0
    if method == "minmax":
        return _with_zero(stats.lo, stats.hi)
    if method == "moving_average":
        return _with_zero(stats.avg_lo, stats.avg_hi)
    if method == "percentile":
        v = np.concatenate(stats.values)
        lo, hi = np.percentile(v, [100.0 - percentile, percentile])
        return _with_zero(lo, hi)
    return mse_range(stats, qmin, qmax, symmetric)  # mse, and auto where no held-back data decide
