"""MLIR's own quant dialect tests through mlir-opt 22 and qd-opt, chunk by chunk.

The files are MLIR's `mlir/test/Dialect/Quant/*.mlir` (unchanged, under
`tests/interop/mlir_quant/`); `tools/mlir_quant_conformance.py` runs them and says
what agreement means (same accept / reject; where both accept, the same printed
`!quant` type strings) and prints the table.  Two tests a chunk:

- `test_agrees_with_mlir_opt`: qd-opt agrees with mlir-opt 22 on the chunk.
- `test_verify_diagnostics` (the files MLIR runs with `-verify-diagnostics`):
  `qd-opt --split-input-file --verify-diagnostics` passes on the chunk unchanged:
  every `expected-error` produced at its line, nothing else.  Where qdialect words a
  diagnostic its own way (`WORDING`, with the reason), the chunk must still be
  rejected on exactly the expected lines, and the words must really differ (an entry
  that now passes as it is fails: drop it).

Known disagreements are listed by chunk with their cause and marked
`xfail(strict=True)`: a chunk that starts agreeing fails until its entry is removed.
"""

import importlib.util
import os
import shutil
import sys
from functools import cache
from pathlib import Path

import pytest

from qdialect.expected_diagnostics import parse_expectations

ROOT = Path(__file__).resolve().parents[2]
MLIR_OPT = os.environ.get("MLIR_OPT", "/usr/lib/llvm-22/bin/mlir-opt")

_spec = importlib.util.spec_from_file_location("mlir_quant_conformance", ROOT / "tools" / "mlir_quant_conformance.py")
conformance = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = conformance
_spec.loader.exec_module(conformance)

pytestmark = pytest.mark.skipif(not (Path(MLIR_OPT).exists() or shutil.which(MLIR_OPT)),
                                reason=f"{MLIR_OPT} missing (Debian package mlir-22-tools; CI installs it)")

# -- why chunks disagree: none now (types, printing and checks follow MLIR 22: quant.py) --
# chunk -> why qd-opt and mlir-opt 22 disagree on it
DISAGREEMENTS: dict[str, str] = {}

# -- qdialect's own words for a diagnostic mlir-opt words otherwise (same place) --
# (xDSL's generic syntax errors are said in mlir-opt's words; where MLIR reports one mistake as two errors
# (`!quant.calibrated`), so does qd-opt: quant.ParseErrors; and an opaque `!quant<...>` whose `<`
# does not close is refused as mlir-opt refuses it: qdialect.diagnostics.LocatingParser)
TRUE_NUMBERS = ("mlir-opt 22 prints the expected block count for both numbers ('dimension size 2 of scales "
                "tensor at axis 1 ... = 2'); qd-opt prints the scales' real size on that axis (1)")

# chunk -> why its diagnostic is worded otherwise than MLIR's test expects
WORDING = {
    "invalid.mlir:311": TRUE_NUMBERS,
}

# chunk -> why `qd-opt --verify-diagnostics` fails on it (not a matter of words): none now
VERIFY_FAILURES: dict[str, str] = {}


def _chunks(verify_only: bool = False) -> list:
    return [c for path in conformance.mlir_files() if not verify_only or conformance.has_verify_diagnostics(path)
            for c in conformance.split_chunks(path)]


@cache
def _results(file: str) -> dict:
    return {r.chunk.name: r for r in conformance.run_file(conformance.DATA / file, MLIR_OPT)}


def _params(chunks: list, known: dict) -> list:
    return [pytest.param(c, id=c.name, marks=[pytest.mark.xfail(strict=True, reason=known[c.name])]
                         if c.name in known else []) for c in chunks]


@pytest.mark.parametrize("chunk", _params(_chunks(), DISAGREEMENTS))
def test_agrees_with_mlir_opt(chunk):
    r = _results(chunk.file)[chunk.name]
    assert r.mlir_accepts == r.qd_accepts, (
        f"{r.verdict}: mlir-opt {r.mlir_errors or 'accepts'}, qd-opt {r.qd_errors or 'accepts'}")
    if r.mlir_accepts:
        assert r.qd_types == r.mlir_types
        assert r.reread_same, "mlir-opt reads qd-opt's output into another module"


@pytest.mark.parametrize("chunk", _params(_chunks(verify_only=True), VERIFY_FAILURES))
def test_verify_diagnostics(chunk):
    r = _results(chunk.file)[chunk.name]
    if chunk.name not in WORDING:
        assert r.verify == "ok"
        return
    expected = {e.line for e in parse_expectations(chunk.text, chunk.first_line) if e.kind == "error"}
    produced = {int(d.split(":")[0]) for d in r.qd_errors}
    assert not r.qd_accepts and produced == expected, (r.qd_errors, expected)
    assert r.verify != "ok", "qd-opt now words it as MLIR does: drop the chunk from WORDING"


def test_lists_name_real_chunks():
    names = {c.name for c in _chunks()}
    verify_names = {c.name for c in _chunks(verify_only=True)}
    assert set(DISAGREEMENTS) <= names
    assert set(WORDING) | set(VERIFY_FAILURES) <= verify_names
    assert not set(WORDING) & set(VERIFY_FAILURES)
    assert len(names) == 161  # MLIR 22's quant test files, split on `// -----`
