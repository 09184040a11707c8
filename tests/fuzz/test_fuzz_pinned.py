"""Every diagnostic class the fuzzers hit is pinned: its smallest input is replayed and must
still be refused with exit status 2 and exactly the pinned one-line message.

The records live in tests/fuzz/pinned/ (see tests/fuzz/pin.py).  When a message changes on
purpose, or the fuzzers meet new classes, refresh them with `python -m tests.fuzz.pin`
(`--rewrite` re-pins changed messages).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tests.fuzz.pin import PINNED, read_pins, replay


@pytest.mark.parametrize("name", ["ir.jsonl", "models.jsonl", "onnx.jsonl"])
def test_pinned_diagnostics(name):
    records = read_pins(PINNED / name)
    assert len(records) > 50, f"{name}: only {len(records)} pinned classes"
    problems = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for r in records:
            rc, message = replay(r)
            if rc != 2 or message != r["message"]:
                problems.append(f"[{r['tool']}] expected exit 2 and\n    {r['message']}\n  got exit {rc} and\n    {message[:600]}")
    assert not problems, (f"{len(problems)} of {len(records)} pinned diagnostics changed "
                          f"(refresh with `python -m tests.fuzz.pin --rewrite` if on purpose):\n"
                          + "\n".join(problems[:20]))


def test_pinned_classes_are_distinct_and_one_line():
    for name in ("ir.jsonl", "models.jsonl", "onnx.jsonl"):
        records = read_pins(PINNED / name)
        classes = [r["class"] for r in records]
        assert len(classes) == len(set(classes))
        assert all("\n" not in r["message"] and "Traceback" not in r["message"] for r in records)
        assert not any("internal error" in r["message"] for r in records)
