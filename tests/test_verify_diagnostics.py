"""qd-opt's `--split-input-file` and `--verify-diagnostics` against mlir-opt 22's on the same inputs.

The inputs use an op both tools reject (`quant.dcast` of a float) and `expected-error-re
{{{{.*}}}}` (any message), so that what is compared is the machinery, not the words:
which chunks fail, on which lines, which expectations are met, the order and the exit
status.  Columns of an op's diagnostic differ (mlir-opt: the op name; qd-opt: the op's
first token, `%0`), so only the lines of `unexpected` diagnostics are compared.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from qdialect.expected_diagnostics import Diagnostic, check, parse_expectations

QD_OPT = str(Path(sys.executable).parent / "qd-opt")
MLIR_OPT = os.environ.get("MLIR_OPT", "/usr/lib/llvm-22/bin/mlir-opt")
needs_mlir_opt = pytest.mark.skipif(not (Path(MLIR_OPT).exists() or shutil.which(MLIR_OPT)),
                                    reason=f"{MLIR_OPT} missing (Debian package mlir-22-tools)")

BAD = "%0 = quant.dcast %a : f32 to f32"  # rejected by both tools

# every designator, met and unmet, and malformed regular expressions
FAILING = f"""func.func @same_line(%a: f32) {{
  {BAD} // expected-error-re {{{{{{{{.*}}}}}}}}
  return
}}

// -----
func.func @above(%a: f32) {{
  {BAD}
  // expected-error-re@above {{{{{{{{.*}}}}}}}}
  return
}}

// -----
// expected-error-re@below {{{{{{{{.*}}}}}}}}
// expected-note@below {{{{never}}}}
func.func @below(%a: f32) {{
  return
}}

// -----
func.func @minus(%a: f32) {{
  {BAD}

  // expected-error-re@-2 {{{{{{{{.*}}}}}}}}
  return
}}

// -----
func.func @wrong_line(%a: f32) {{
  // expected-error-re@+2 {{{{{{{{.*}}}}}}}}
  {BAD}
  return
}}

// -----
func.func @no_error(%a: f32) {{
  // expected-warning@+1 {{{{nothing here}}}}
  return
}}

// -----
func.func @bad_regex(%a: f32) {{
  // expected-error-re@+1 {{{{{{{{[}}}}}}}}
  {BAD}
  return
}}

// -----
func.func @unclosed(%a: f32) {{
  // expected-error-re@+1 {{{{ab {{{{x}}}}
  {BAD}
  return
}}
"""

PASSING = f"""func.func @same_line(%a: f32) {{
  {BAD} // expected-error-re {{{{{{{{.*}}}}}}}}
  return
}}

// -----
func.func @above(%a: f32) {{
  {BAD}
  // expected-error-re@above {{{{{{{{.*}}}}}}}}
  return
}}

// -----
func.func @below(%a: f32) {{
  // expected-error-re@below {{{{{{{{.*}}}}}}}}
  {BAD}
  return
}}

// -----
func.func @plus(%a: f32) {{
  // expected-error-re@+2 {{{{{{{{.*}}}}}}}}

  {BAD}
  return
}}

// -----
!alias = !quant.uniform<i8:f32, 5.000000e-01>
func.func @fine(%a: !alias) {{
  %0 = quant.dcast %a : !alias to f32
  return
}}
"""

SPLIT = f"""func.func @bad(%a: f32) {{
  {BAD}
  return
}}
// -----
!only = !quant.uniform<i8:f32, 5.000000e-01>
// -----
func.func @good(%a: !quant.uniform<i8:f32, 5.000000e-01>) {{
  return
}}
// -----
func.func @bad_again(%a: f32) {{
  {BAD}
  return
}}
// -----
"""

_LOCATED = re.compile(r"^(?:.*?):(\d+):(\d+): error: (.*)$")


def _run(tool: str, path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([tool, str(path), *args], capture_output=True, text=True, timeout=60)


def _failures(stderr: str) -> list[tuple]:
    """The located error lines, with what both tools word alike (not an op's own message)."""
    out = []
    for line in stderr.splitlines():
        m = _LOCATED.match(line)
        if not m:
            continue
        number, col, message = int(m.group(1)), int(m.group(2)), m.group(3)
        if message.startswith("unexpected error:"):
            out.append((number, "unexpected error"))
        elif message.startswith("invalid regex:"):
            out.append((number, col, "invalid regex"))
        else:
            out.append((number, col, message))
    return out


@needs_mlir_opt
def test_failing_expectations_reported_as_mlir_opt_does(tmp_path):
    path = tmp_path / "failing.mlir"
    path.write_text(FAILING)
    ours = _run(QD_OPT, path, "--split-input-file", "--verify-diagnostics")
    theirs = _run(MLIR_OPT, path, "--split-input-file", "--verify-diagnostics")
    assert theirs.returncode == 1 and ours.returncode == 1, ours.stderr
    assert _failures(ours.stderr) == _failures(theirs.stderr), (ours.stderr, theirs.stderr)
    assert "Traceback" not in ours.stderr


@needs_mlir_opt
def test_met_expectations_pass_as_with_mlir_opt(tmp_path):
    path = tmp_path / "passing.mlir"
    path.write_text(PASSING)
    ours = _run(QD_OPT, path, "--split-input-file", "--verify-diagnostics")
    theirs = _run(MLIR_OPT, path, "--split-input-file", "--verify-diagnostics")
    assert theirs.returncode == 0, theirs.stderr
    assert ours.returncode == 0, ours.stderr
    assert ours.stderr == ""
    # the chunks without an error are printed, the others are not
    assert [bool(p.strip()) for p in ours.stdout.split("// -----\n")] == [False, False, False, False, True]


@needs_mlir_opt
def test_split_input_file_reports_every_chunk(tmp_path):
    path = tmp_path / "split.mlir"
    path.write_text(SPLIT)
    ours = _run(QD_OPT, path, "--split-input-file")
    theirs = _run(MLIR_OPT, path, "--split-input-file")
    assert theirs.returncode != 0 and ours.returncode == 2
    assert [f[0] for f in _failures(ours.stderr)] == [f[0] for f in _failures(theirs.stderr)] == [2, 13]
    # one output per chunk (the failed ones empty), separated by `// -----` as mlir-opt does
    ours_pieces = ours.stdout.split("// -----\n")
    theirs_pieces = theirs.stdout.split("// -----\n")
    assert [bool(p.strip()) for p in ours_pieces] == [bool(p.strip()) for p in theirs_pieces] \
        == [False, True, True, False, True]
    assert "func.func @good" in ours_pieces[2]


def test_alias_only_and_empty_inputs_parse(tmp_path):
    for text in ("!a = !quant.uniform<i8:f32, 5.000000e-01>\n", "", "// nothing\n"):
        proc = subprocess.run([QD_OPT], input=text, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert "builtin.module" in proc.stdout


def test_pass_refusal_located_at_the_op(tmp_path):
    path = tmp_path / "refused.mlir"
    path.write_text("!a = !quant.uniform<i8:f32, 5.000000e-01:-3>\n!o = !quant.uniform<i8:f32, 2.500000e-01:5>\n"
                    "func.func @f(%a: tensor<2x3x!a>) -> tensor<2x3x!o> {\n"
                    "  %0 = qnn.add %a, %a {rounding = \"half_even\"} : (tensor<2x3x!a>, tensor<2x3x!a>) -> tensor<2x3x!o>\n"
                    "  func.return %0 : tensor<2x3x!o>\n}\n")
    proc = _run(QD_OPT, path, "-p", "qnn-decompose")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"{path}:4:3: error: qnn-decompose cannot lower: qnn.add:"), proc.stderr


def test_designators_and_matching():
    text = "\n".join([
        "a",                                      # 1
        "// expected-error@+2 {{two down}}",      # 2 -> 4
        "// expected-warning@below {{below}}",    # 3 -> 5 (next line without a designator)
        "// expected-note@above {{above}}",       # 4 -> 1 (last line without a designator)
        "b",                                      # 5
        "// expected-remark@-1 {{up}}",           # 6 -> 5
        "// expected-error@unknown {{nowhere}}",  # 7 -> unknown
        "c // expected-error-re {{x {{[0-9]+}} y}}",  # 8: its own line
    ])
    es = parse_expectations(text, first_line=11)
    assert [(e.kind, e.line) for e in es] == [
        ("error", 14), ("warning", 15), ("note", 11), ("remark", 15), ("error", None), ("error", 18)]
    report = check([Diagnostic("error", "two down there", 14, 1),
                    Diagnostic("warning", "below", 15, 2), Diagnostic("note", "above", 11, 1),
                    Diagnostic("remark", "up", 15, 1), Diagnostic("error", "nowhere", None),
                    Diagnostic("error", "x 42 y", 18, 1)], es)
    assert report.failures == []
    report = check([Diagnostic("error", "above", 11, 1), Diagnostic("error", "x y", 18, 1)],
                   parse_expectations(text, first_line=11))
    assert report.unexpected[0].message == "'error' diagnostic emitted when expecting a 'note'"
    assert report.unexpected[1].message == "unexpected error: x y"
    assert len(report.not_produced) == 6


def test_llvm_single_dash_options(tmp_path):
    """MLIR's RUN lines spell long options with one dash: qd-opt reads them unchanged."""
    path = tmp_path / "passing.mlir"
    path.write_text(PASSING)
    proc = _run(QD_OPT, path, "-split-input-file", "-verify-diagnostics")
    assert proc.returncode == 0, proc.stderr
    proc = _run(QD_OPT, path, "-split-input-file")
    assert proc.returncode == 2 and len(_failures(proc.stderr)) == 4, proc.stderr
