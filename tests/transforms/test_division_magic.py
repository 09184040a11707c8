"""lower_to_linalg.division_magic: the average pool's division by its window counts as a
multiplication, checked against integer floor division (numpy's `//`) over the whole
range it claims, 0 <= n < 2^32 and 1 <= d <= 2^14."""

import numpy as np

from transforms.lower_to_linalg import _MAGIC_MAX_DIVISOR, division_magic


def _quotients(n, shift, hi, lo):
    return (n * hi + ((n * lo) >> 16)) >> (shift - 16)


def test_every_divisor_at_the_edges_of_the_range():
    """Each divisor up to 2^14 with the largest one in the same table (the shift is shared),
    at the multiples of d around the ends of [0, 2^32), where a magic number that is too
    small or too large first gives the wrong floor; and no product reaches 2^63."""
    d = np.arange(1, _MAGIC_MAX_DIVISOR + 1, dtype=np.int64)
    shift, hi, lo = division_magic(d)
    top = (1 << 32) - 1
    assert int(top) * int(hi.max()) < 1 << 63 and int(top) * int(lo.max()) < 1 << 63
    for k in range(3):
        for n in (k * d - 1, k * d, k * d + 1, top - k * d, top - k * d - 1, (top // d - k) * d, (top // d - k) * d - 1):
            n = np.clip(n, 0, top)
            np.testing.assert_array_equal(_quotients(n, shift, hi, lo), n // d)


def test_random_dividends_per_table():
    """Tables of one pool's counts (3x3 'SAME': 4, 6, 9; 7x7: up to 49) and random dividends."""
    rng = np.random.default_rng(0)
    for counts in ([4, 6, 9], [1], [2], [16, 12, 9, 8, 6, 4], list(range(1, 50)), [16384, 3, 1]):
        d = np.asarray(counts, np.int64)
        shift, hi, lo = division_magic(d)
        n = rng.integers(0, 1 << 32, (5000, 1), dtype=np.int64)
        np.testing.assert_array_equal(_quotients(n, shift, hi, lo), n // d)


_DIVIDE = """
func.func @main(%s: tensor<1x2x2x2xiW>) -> tensor<1x2x2x2xiW> {
  %n = arith.constant dense<[[[[4], [6]], [[7], [9]]]]> : tensor<1x2x2x1xiW>
  %0 = qint.divide_round %s, %n {rounding = "away"} : (tensor<1x2x2x2xiW>, tensor<1x2x2x1xiW>) -> tensor<1x2x2x2xiW>
  func.return %0 : tensor<1x2x2x2xiW>
}
"""


def _away(x: int, d: int) -> int:
    """TFLite's average-pool rounding by hand: sign(x) floor((|x| + d / 2) / d), ties away."""
    q = (abs(x) + d // 2) // d
    return q if x > 0 else -q


def test_lowered_divide_round_by_constants_at_the_edges_of_its_width():
    """The lowered form (multiplication for i32 dividends; an i64 dividend, outside the magic
    numbers' range, keeps the division) run by the interpreter equals the rounding by hand at
    the least and greatest values of the dividend's width and around them (for i64, as far
    from them as |x| + d / 2 must stay below 2^63 in the 64-bit division)."""
    from tests.transforms.helpers import apply, parse
    from qdialect.interpreter import run_module
    from transforms.lower_to_linalg import QnnLowerToLinalgPass

    d = np.array([4, 6, 7, 9]).reshape(1, 2, 2, 1)
    for width, dtype in ((32, np.int32), (64, np.int64)):
        l3 = apply(parse(_DIVIDE.replace("iW", f"i{width}")), QnnLowerToLinalgPass())
        assert ("arith.divsi" in str(l3)) == (width == 64)
        info = np.iinfo(dtype)
        edge = 0 if width == 32 else 8
        for lo in (int(info.min) + edge, int(info.min) + 7 + edge, -13, 13, int(info.max) - 7 - edge, -(1 << 40)):
            x = np.arange(lo, lo + 8, dtype=np.int64).astype(dtype).reshape(1, 2, 2, 2)
            (got,) = run_module(l3, [x])
            want = np.array([_away(int(v), int(d.reshape(-1)[i // 2]))
                             for i, v in enumerate(x.reshape(-1))]).reshape(x.shape)
            np.testing.assert_array_equal(np.asarray(got, np.int64), want)
