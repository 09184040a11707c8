"""Calibration statistics and range choice."""

from __future__ import annotations

import numpy as np
import pytest

from transforms.quantizer.calibration import TensorStats, affine_params, choose_range, mse_range


def stats_of(arrays) -> TensorStats:
    s = TensorStats()
    for a in arrays:
        s.observe(a)
    return s


def test_minmax_and_moving_average():
    s = stats_of([np.array([-1.0, 2.0]), np.array([-3.0, 1.0]), np.array([0.5, 4.0])])
    assert choose_range(s, "minmax", qmin=-128, qmax=127, symmetric=False) == (-3.0, 4.0)
    lo, hi = choose_range(s, "moving_average", qmin=-128, qmax=127, symmetric=False)
    m = 0.9
    assert lo == pytest.approx(m * (m * -1 + 0.1 * -3) + 0.1 * 0.5)  # per-sample minima -1, -3, 0.5
    assert hi == pytest.approx(m * (m * 2 + 0.1 * 1) + 0.1 * 4)


def test_ranges_contain_zero():
    s = stats_of([np.array([2.0, 3.0])])
    for method in ("minmax", "moving_average", "percentile", "mse"):
        lo, hi = choose_range(s, method, qmin=-128, qmax=127, symmetric=False)
        assert lo == 0.0 and hi > 0


def test_percentile_clips_outliers():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(100_000)
    x[0] = 1000.0
    s = stats_of([x])
    lo, hi = choose_range(s, "percentile", qmin=-128, qmax=127, symmetric=False, percentile=99.9)
    assert 2.5 < hi < 4.0 and -4.0 < lo < -2.5


def _mse(x, lo, hi, symmetric):
    scale, zp = affine_params(lo, hi, -8, 7, symmetric)
    q = np.clip(np.round(x / scale) + zp, -8, 7)
    return float(np.mean(((q - zp) * scale - x) ** 2))


@pytest.mark.parametrize("symmetric", [False, True])
def test_mse_range_beats_minmax_on_heavy_tails(symmetric):
    rng = np.random.default_rng(1)
    x = rng.laplace(size=50_000)
    s = stats_of([x])
    lo, hi = mse_range(s, -8, 7, symmetric, keep=None)  # 4 bits: clipping pays off (ACIQ: about 5 b for Laplace(b))
    assert 3.0 < hi < 8.0
    assert _mse(x, lo, hi, symmetric) < 0.5 * _mse(x, x.min(), x.max(), symmetric)
    # by default the range keeps the 99.99th percentiles (about 8.5 b here)
    lo2, hi2 = mse_range(s, -8, 7, symmetric)
    kept = np.concatenate(s.values)  # the statistics keep a random subset of each sample
    assert hi2 >= np.percentile(kept, 99.99) - 1e-6 and lo2 <= np.percentile(kept, 0.01) + 1e-6


def test_affine_params():
    scale, zp = affine_params(-1.0, 3.0, -128, 127, False)
    assert scale == pytest.approx(4.0 / 255) and zp == -128 + round(1.0 / scale)
    assert affine_params(-1.0, 3.0, -128, 127, True) == (pytest.approx(3.0 / 127), 0)
    assert affine_params(0.0, 0.0, -128, 127, False)[0] > 0  # degenerate range still has a valid scale
    scale, zp = affine_params(0.0, 6.0, -128, 127, False)
    assert zp == -128  # relu output: real 0 is the lowest integer


def test_collect_statistics_of_a_float_graph():
    from tests.quantize.conftest import data, float_module
    from transforms.quantizer.flow import collect_statistics

    stats = collect_statistics(float_module("cnn_small"), data("cnn_small", "calib")[:4])
    relu = stats["cnn_small_1_conv1_1_Relu"]
    assert relu.count == 4 and relu.lo == 0.0 and relu.hi > 0
    assert stats["input"].lo >= 0.0 and stats["input"].hi <= 1.0
    assert "Identity" in stats and 0.0 <= stats["Identity"].lo and stats["Identity"].hi <= 1.0  # softmax
