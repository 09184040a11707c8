"""The fuzzers' short mode, in CI: zero tracebacks, hangs or memory blow-ups.

- IR: 2,100 cases of `python -m tests.fuzz.ir` (at least 2,000 run; a few generated graphs
  the builder refuses do not count) (mutated L0..L3 text and
  generated graphs into `qd-opt`, `qd-opt -p qnn-overflow-check` and
  `qd-run --backend interp`);
- models: 1,000 mutated zoo `.tflite` files (`python -m tests.fuzz.models
  --corpus zoo`: `qd-import`, the printed module read back, `qd-run
  --backend interp`), 300 mutated one-operator models of the importer's
  tests (every operator's conversion) and 300 mutated float zoo models (the
  float importer and the interpreter);
- ONNX: 2,000 mutated `models/onnx/` files (`python -m tests.fuzz.onnx_models`: byte-level and
  protobuf field mutations into `import_onnx` (both profiles), `qd-import`, `qd-run --backend
  interp`); the importer's catch-all message ("malformed model (...)") counts as a finding.

Each harness runs in its own process (it sets an address-space limit and a
per-case alarm) with a fixed seed (env QD_FUZZ_SEED overrides it) and writes
a JSON report; the test demands the case counts and no findings.  The long
mode is the same modules run by hand: `python -m tests.fuzz.ir --cases 50000`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _fuzz(tmp_path: Path, module: str, *args: str, timeout: float = 900) -> dict:
    out = tmp_path / "report.json"
    seed = os.environ.get("QD_FUZZ_SEED", "0")
    proc = subprocess.run(
        [sys.executable, "-m", module, "--seed", seed, "--json", str(out), "--save", str(tmp_path / "findings"), *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout,
    )
    assert out.exists(), f"{module} wrote no report (exit {proc.returncode}): {proc.stderr[-3000:]}"
    report = json.loads(out.read_text())
    report["text"] = proc.stdout[-4000:] + proc.stderr[-2000:]
    return report


def _no_findings(report: dict, min_cases: int) -> None:
    assert report["cases"] >= min_cases, report["text"]
    assert report["findings"] == [], report["text"]
    assert report["peak_rss_mb"] < 3000, report["text"]


def _mostly_pinned(report: dict, pin_file: str) -> None:
    """The diagnostic classes this run met should have pinned cases (tests/fuzz/pinned/).  Which
    classes a fixed seed meets shifts whenever the corpus changes (every new FileCheck file), so
    unpinned classes are a warning (refresh with `python -m tests.fuzz.pin`), and only a
    landslide (messages reworded everywhere) fails."""
    from tests.fuzz.pin import PINNED, read_pins

    pinned = {r["class"] for r in read_pins(PINNED / pin_file)}
    met = set(report["classes"])
    unpinned = sorted(met - pinned)
    if unpinned:
        warnings.warn(f"{len(unpinned)} of {len(met)} diagnostic classes have no pinned case; run "
                      f"`python -m tests.fuzz.pin`: " + " | ".join(unpinned[:20]))
    assert len(unpinned) <= max(10, len(met) * 6 // 10), (
        f"{len(unpinned)} of {len(met)} diagnostic classes have no pinned case; run "
        f"`python -m tests.fuzz.pin`:\n" + "\n".join(unpinned[:30]))


@pytest.mark.fuzz
def test_ir_fuzz_short(tmp_path):
    report = _fuzz(tmp_path, "tests.fuzz.ir", "--cases", "2100")
    _no_findings(report, 2000)
    _mostly_pinned(report, "ir.jsonl")
    # the cases reach past the parser: valid modules ran on the interpreter and through the pass
    assert report["outcomes"].get("accepted", 0) > 300, report["text"]
    assert report["outcomes"].get("qd-run: ran", 0) > 200, report["text"]


@pytest.mark.fuzz
def test_model_fuzz_short_zoo(tmp_path):
    report = _fuzz(tmp_path, "tests.fuzz.models", "--cases", "1000", "--corpus", "zoo")
    _no_findings(report, 1000)
    _mostly_pinned(report, "models.jsonl")
    assert report["outcomes"].get("qd-run: ran", 0) > 50, report["text"]


@pytest.mark.fuzz
def test_model_fuzz_short_one_op_models(tmp_path):
    report = _fuzz(tmp_path, "tests.fuzz.models", "--cases", "300", "--corpus", "ops")
    _no_findings(report, 300)
    _mostly_pinned(report, "models.jsonl")


@pytest.mark.fuzz
def test_model_fuzz_short_float_models(tmp_path):
    """The zoo's float models through the float importer (qd-import --float, qd-quantize's input)."""
    report = _fuzz(tmp_path, "tests.fuzz.models", "--cases", "300", "--corpus", "float")
    _no_findings(report, 300)
    assert report["outcomes"].get("float: ran", 0) > 10, report["text"]
    _mostly_pinned(report, "models.jsonl")


@pytest.mark.fuzz
def test_onnx_model_fuzz_short(tmp_path):
    """Mutated quantized ONNX models (QDQ and QOperator) through the ONNX importer, qd-import and
    qd-run: about 15 s."""
    report = _fuzz(tmp_path, "tests.fuzz.onnx_models", "--cases", "2000")
    _no_findings(report, 2000)
    _mostly_pinned(report, "onnx.jsonl")
    # structure-aware mutations get past the protobuf reader: models import and run
    assert report["outcomes"].get("imported", 0) > 200, report["text"]
    assert report["outcomes"].get("qd-run: ran", 0) > 100, report["text"]
