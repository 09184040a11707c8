"""The `fuzz` marker: the fuzzers' short mode (deselect with `-m "not fuzz"`)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "fuzz: short-mode fuzzing run in CI (about a minute)")
