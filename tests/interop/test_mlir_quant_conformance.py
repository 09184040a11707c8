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

# -- why chunks disagree (the types' work, qdialect/dialects/quant.py, is under way) --
PRINTING = ("scale printing: qd-opt prints the shortest decimal that reads back (0.99872, 2.0, "
            "{1.0, 2.0}), mlir-opt 22 prints %e with 6 digits and no space after commas "
            "(9.987200e-01, {1.000000e+00,2.000000e+00}); the types are the same (mlir-opt reads "
            "qd-opt's output back to its own)")
ZERO_POINT_RANGE = ("qd-opt rejects a zero point outside the storage range (DESIGN.md: stricter than "
                    "MLIR); mlir-opt 22 accepts it")
SUB_CHANNEL = "sub-channel quantization (`:{axis:block, ...}, {{...}}`) is not parsed by qd-opt"
F64_EXPRESSED = "f64 expressed type is refused by qd-opt (f16, bf16, f32 only)"
PER_AXIS_SCALAR = ("qd-opt accepts a per-axis quantized type on a scalar (not a tensor) operand of "
                   "quant.dcast / qcast / scast; mlir-opt: 'scalar types may not use per-axis quantization'")
F16_SUBNORMAL_SCALE = ("qd-opt accepts scale 5.8e-8 for f16 (it rounds to f16's smallest subnormal); "
                       "mlir-opt rejects scales below 5.960464e-08")
QUANT_ANY_CALIBRATED = "!quant.any and !quant.calibrated are not implemented in qd-opt ('is not registered')"
CHECKED_WHERE_DEFINED = ("qd-opt checks a per-axis type against its tensor's shape on every value, so the "
                         "error is at the function whose block argument has the type, not at the "
                         "quant cast that uses it (the line mlir-opt reports)")

# chunk -> why qd-opt and mlir-opt 22 disagree on it
DISAGREEMENTS = {
    "Bytecode/types.mlir:8": QUANT_ANY_CALIBRATED,
    "invalid.mlir:56": PER_AXIS_SCALAR,
    "invalid.mlir:136": PER_AXIS_SCALAR,
    "invalid.mlir:234": PER_AXIS_SCALAR,
    "lower-quant-ops.mlir:17": PRINTING,
    "lower-quant-ops.mlir:40": PRINTING,
    "lower-quant-ops.mlir:64": PRINTING,
    "lower-quant-ops.mlir:89": PRINTING,
    "lower-quant-ops.mlir:120": PRINTING,
    "lower-quant-ops.mlir:153": PRINTING,
    "lower-quant-ops.mlir:199": PRINTING,
    "lower-quant-ops.mlir:221": PRINTING,
    "lower-quant-ops.mlir:246": PRINTING,
    "lower-quant-ops.mlir:271": ZERO_POINT_RANGE,
    "lower-quant-ops.mlir:296": PRINTING,
    "lower-quant-ops.mlir:323": PRINTING,
    "lower-quant-ops.mlir:356": ZERO_POINT_RANGE,
    "lower-quant-ops.mlir:389": PRINTING,
    "lower-quant-ops.mlir:424": PRINTING,
    "lower-quant-ops.mlir:458": PRINTING,
    "lower-quant-ops.mlir:506": PRINTING,
    "normalize-quant-types.mlir:16": SUB_CHANNEL,
    "normalize-quant-types.mlir:40": SUB_CHANNEL,
    "ops.mlir:3": PRINTING,
    "ops.mlir:11": PRINTING,
    "ops.mlir:19": PRINTING,
    "ops.mlir:27": PRINTING,
    "ops.mlir:35": PRINTING,
    "ops.mlir:43": PRINTING,
    "ops.mlir:51": PRINTING,
    "ops.mlir:59": PRINTING,
    "ops.mlir:67": PRINTING,
    "ops.mlir:75": PRINTING,
    "ops.mlir:83": PRINTING,
    "ops.mlir:91": PRINTING,
    "ops.mlir:99": PRINTING,
    "ops.mlir:108": PRINTING,
    "ops.mlir:117": PRINTING,
    "ops.mlir:126": PRINTING,
    "ops.mlir:135": PRINTING,
    "ops.mlir:144": PRINTING,
    "parse-uniform-invalid.mlir:132": F16_SUBNORMAL_SCALE,
    "parse-uniform-invalid.mlir:142": F16_SUBNORMAL_SCALE,
    "parse-uniform.mlir:7": ZERO_POINT_RANGE,
    "parse-uniform.mlir:16": ZERO_POINT_RANGE,
    "parse-uniform.mlir:26": PRINTING,
    "parse-uniform.mlir:35": PRINTING,
    "parse-uniform.mlir:44": PRINTING,
    "parse-uniform.mlir:53": PRINTING,
    "parse-uniform.mlir:62": PRINTING,
    "parse-uniform.mlir:71": PRINTING,
    "parse-uniform.mlir:80": PRINTING,
    "parse-uniform.mlir:89": PRINTING,
    "parse-uniform.mlir:98": PRINTING,
    "parse-uniform.mlir:107": PRINTING,
    "parse-uniform.mlir:116": F64_EXPRESSED,
    "parse-uniform.mlir:125": PRINTING,
    "parse-uniform.mlir:134": ZERO_POINT_RANGE,
    "parse-uniform.mlir:143": PRINTING,
    "parse-uniform.mlir:152": PRINTING,
    "parse-uniform.mlir:161": SUB_CHANNEL,
    "parse-uniform.mlir:170": SUB_CHANNEL,
    "strip-func-quant-types.mlir:15": ZERO_POINT_RANGE,
    "strip-func-quant-types.mlir:42": ZERO_POINT_RANGE,
    "strip-func-quant-types.mlir:76": ZERO_POINT_RANGE,
}

# -- qdialect's own words for a diagnostic mlir-opt words otherwise (same place) --
QUANT_TYPE_WORDING = ("quant.uniform's diagnostics name the type and the bad value "
                      "(STYLE.md, 'Errors are for people'): 'storage range [2:1] is empty' for MLIR's "
                      "'illegal storage min and storage max: (2:1)'")
OP_VERIFIER_WORDING = ("the cast ops' verifiers name the op, the operand and the types "
                       "('quant.dcast: operand element type f32 is not quantized' for MLIR's ODS "
                       "'operand #0 must be scalar or tensor of quantized type')")
XDSL_PARSER_WORDING = ("xDSL's parser words syntax errors its own way ('Expected ':'', "
                       "''quant.foobar' is not registered' for MLIR's 'expected ':'', "
                       "'unknown quantized type foobar')")

# chunk -> why its diagnostic is worded otherwise than MLIR's test expects
WORDING = {
    "invalid.mlir:3": OP_VERIFIER_WORDING,
    "invalid.mlir:11": OP_VERIFIER_WORDING,
    "invalid.mlir:20": OP_VERIFIER_WORDING,
    "invalid.mlir:29": OP_VERIFIER_WORDING,
    "invalid.mlir:38": OP_VERIFIER_WORDING,
    "invalid.mlir:47": OP_VERIFIER_WORDING,
    "invalid.mlir:83": OP_VERIFIER_WORDING,
    "invalid.mlir:91": OP_VERIFIER_WORDING,
    "invalid.mlir:100": OP_VERIFIER_WORDING,
    "invalid.mlir:109": OP_VERIFIER_WORDING,
    "invalid.mlir:118": OP_VERIFIER_WORDING,
    "invalid.mlir:127": OP_VERIFIER_WORDING,
    "invalid.mlir:145": OP_VERIFIER_WORDING,
    "invalid.mlir:154": OP_VERIFIER_WORDING,
    "invalid.mlir:163": OP_VERIFIER_WORDING,
    "invalid.mlir:172": OP_VERIFIER_WORDING,
    "invalid.mlir:181": OP_VERIFIER_WORDING,
    "invalid.mlir:189": OP_VERIFIER_WORDING,
    "invalid.mlir:198": OP_VERIFIER_WORDING,
    "invalid.mlir:207": OP_VERIFIER_WORDING,
    "invalid.mlir:216": OP_VERIFIER_WORDING,
    "invalid.mlir:225": OP_VERIFIER_WORDING,
    "invalid.mlir:243": OP_VERIFIER_WORDING,
    "invalid.mlir:252": OP_VERIFIER_WORDING,
    "parse-any-invalid.mlir:11": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:6": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:11": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:16": QUANT_TYPE_WORDING,
    "parse-uniform-invalid.mlir:21": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:26": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:31": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:36": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:41": QUANT_TYPE_WORDING,
    "parse-uniform-invalid.mlir:46": QUANT_TYPE_WORDING,
    "parse-uniform-invalid.mlir:51": QUANT_TYPE_WORDING,
    "parse-uniform-invalid.mlir:56": QUANT_TYPE_WORDING,
    "parse-uniform-invalid.mlir:61": QUANT_TYPE_WORDING,
    "parse-uniform-invalid.mlir:66": QUANT_TYPE_WORDING,
    "parse-uniform-invalid.mlir:71": QUANT_TYPE_WORDING,
    "parse-uniform-invalid.mlir:76": QUANT_TYPE_WORDING,
    "parse-uniform-invalid.mlir:81": QUANT_TYPE_WORDING,
    "parse-uniform-invalid.mlir:86": QUANT_TYPE_WORDING,
    "parse-uniform-invalid.mlir:91": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:96": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:101": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:106": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:111": QUANT_TYPE_WORDING,
    "parse-uniform-invalid.mlir:116": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:122": QUANT_TYPE_WORDING,
    "parse-uniform-invalid.mlir:127": QUANT_TYPE_WORDING,
    "parse-uniform-invalid.mlir:137": QUANT_TYPE_WORDING,
    "parse-uniform-invalid.mlir:147": QUANT_TYPE_WORDING,
    "parse-uniform-invalid.mlir:152": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:158": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:164": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:170": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:176": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:194": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:200": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:206": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:212": XDSL_PARSER_WORDING,
    "parse-uniform-invalid.mlir:230": XDSL_PARSER_WORDING,
}

# chunk -> why `qd-opt --verify-diagnostics` fails on it (not a matter of words)
VERIFY_FAILURES = {
    "invalid.mlir:56": PER_AXIS_SCALAR,
    "invalid.mlir:65": CHECKED_WHERE_DEFINED,
    "invalid.mlir:74": CHECKED_WHERE_DEFINED,
    "invalid.mlir:136": PER_AXIS_SCALAR,
    "invalid.mlir:234": PER_AXIS_SCALAR,
    "invalid.mlir:261": SUB_CHANNEL,
    "invalid.mlir:271": SUB_CHANNEL,
    "invalid.mlir:281": SUB_CHANNEL,
    "invalid.mlir:291": SUB_CHANNEL,
    "invalid.mlir:301": SUB_CHANNEL,
    "invalid.mlir:311": SUB_CHANNEL,
    "invalid.mlir:321": SUB_CHANNEL,
    "parse-any-invalid.mlir:6": QUANT_ANY_CALIBRATED,
    "parse-any-invalid.mlir:16": QUANT_ANY_CALIBRATED,
    "parse-any-invalid.mlir:21": QUANT_ANY_CALIBRATED,
    "parse-any-invalid.mlir:26": QUANT_ANY_CALIBRATED,
    "parse-any-invalid.mlir:31": QUANT_ANY_CALIBRATED,
    "parse-any-invalid.mlir:36": QUANT_ANY_CALIBRATED,
    "parse-any-invalid.mlir:41": QUANT_ANY_CALIBRATED,
    "parse-any-invalid.mlir:46": QUANT_ANY_CALIBRATED,
    "parse-any-invalid.mlir:51": QUANT_ANY_CALIBRATED,
    "parse-any-invalid.mlir:56": QUANT_ANY_CALIBRATED,
    "parse-any-invalid.mlir:61": QUANT_ANY_CALIBRATED,
    "parse-calibrated-invalid.mlir:7": QUANT_ANY_CALIBRATED,
    "parse-calibrated-invalid.mlir:12": QUANT_ANY_CALIBRATED,
    "parse-calibrated-invalid.mlir:18": QUANT_ANY_CALIBRATED,
    "parse-calibrated-invalid.mlir:23": QUANT_ANY_CALIBRATED,
    "parse-calibrated-invalid.mlir:28": QUANT_ANY_CALIBRATED,
    "parse-uniform-invalid.mlir:132": F16_SUBNORMAL_SCALE,
    "parse-uniform-invalid.mlir:142": F16_SUBNORMAL_SCALE,
    "parse-uniform-invalid.mlir:182": SUB_CHANNEL,
    "parse-uniform-invalid.mlir:188": SUB_CHANNEL,
    "parse-uniform-invalid.mlir:218": SUB_CHANNEL,
    "parse-uniform-invalid.mlir:224": SUB_CHANNEL,
    "parse-uniform-invalid.mlir:235": SUB_CHANNEL,
}


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
