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


import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _compiled_model_cache(tmp_path_factory):
    """Compiled models go to a fresh directory per test session (tvm_bridge/cache.py), so a
    stale entry in the user's cache never decides a test and no test writes there."""
    import os

    saved = {k: os.environ.get(k) for k in ("QDIALECT_CACHE_DIR", "QDIALECT_CACHE")}
    os.environ["QDIALECT_CACHE_DIR"] = str(tmp_path_factory.mktemp("qdialect-cache"))
    os.environ.pop("QDIALECT_CACHE", None)
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
