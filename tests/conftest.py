"""Shared pytest configuration: the `slow` marker.

Tests marked `slow` (whole-model TVM builds of real-size networks, long
campaigns, benchmarks' checks) stay out of the default run, which pyproject's
`addopts` limits to `-m "not slow"` so that `pytest` finishes in about a
quarter of an hour on a 2-core machine.  `pytest -m slow` runs just them;
`pytest -m "slow or not slow"` runs everything.
"""


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: long test kept out of the default run (`pytest -m slow` runs them)")
