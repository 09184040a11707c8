"""MLIR's own quant dialect tests through mlir-opt 22 and qd-opt, chunk by chunk.

    python tools/mlir_quant_conformance.py [--mlir-opt PATH] [--only-disagreements] [FILE ...]

The files are MLIR's `mlir/test/Dialect/Quant/*.mlir` (kept unchanged under
`tests/interop/mlir_quant/`, see the LICENSE note there).  Each file is split on
`// -----` as `--split-input-file` splits it, and every chunk is parsed, verified
and printed by both tools (the files whose RUN line runs a pass,
`--lower-quant-ops` and the like, are only parsed, verified and printed: qd-opt
has none of those passes).  Two tools agree on a chunk when

  - both reject it, or
  - both accept it and print the same quant types: the `!quant.…<…>` texts of
    both outputs, in order, are equal strings.

The printed strings are compared, not what they mean, because a file that
moves between the tools is read by people and by FileCheck lines written
against mlir-opt's spelling (`2.000000e+00`).  A second column says whether
mlir-opt, reading qd-opt's output, prints exactly what it prints for the input
(`reread`): it separates a spelling difference from a different type, and
checks that qd-opt's output is valid MLIR.

The files whose RUN line has `-verify-diagnostics` are also run through
`qd-opt --split-input-file --verify-diagnostics`; a chunk passes when every
`expected-error` is produced at its line and nothing else is
(`verify` column: `ok`, or the first failure).

The test `tests/interop/test_mlir_quant_conformance.py` asserts these per chunk;
this script prints the table (one row a chunk) and a summary, and exits 1 when a
chunk disagrees.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "interop" / "mlir_quant"
MLIR_OPT = os.environ.get("MLIR_OPT", "/usr/lib/llvm-22/bin/mlir-opt")
SPLIT = "// -----"

_LOCATED = re.compile(r"^(?:.*?):(\d+):(\d+): (error|warning|note|remark): (.*)$")
_LABEL = re.compile(r"(?:func\.func|module)\s+(?:private\s+)?@([\w$.]+)")


def mlir_files() -> list[Path]:
    """MLIR's quant test files kept as test data, in a fixed order."""
    return sorted(DATA.rglob("*.mlir"))


@dataclass
class Chunk:
    """One `// -----` chunk of a file: where it starts, what it is called and its text."""

    file: str  # relative to the data directory
    index: int
    first_line: int  # the file's line number of the chunk's first line
    last_line: int
    text: str

    @property
    def name(self) -> str:
        """`FILE:LINE`, the chunk's name in tables and test ids (LINE: its first line of code)."""
        for i, line in enumerate(self.text.split("\n")):
            if line.strip() and not line.strip().startswith("//"):
                return f"{self.file}:{self.first_line + i}"
        return f"{self.file}:{self.first_line}"

    @property
    def label(self) -> str:
        """The chunk's function or module name, or its first comment, for people."""
        m = _LABEL.search(self.text)
        if m:
            return "@" + m.group(1)
        for line in self.text.split("\n"):
            s = line.strip()
            if s.startswith("//") and not re.match(r"//\s*(RUN|CHECK|expected-|-----)", s) and s.strip("/ "):
                return s.strip("/ ")[:60]
        return "(empty)"


def split_chunks(path: Path) -> list[Chunk]:
    """`path` split as `--split-input-file` splits it."""
    text = path.read_text()
    rel = str(path.relative_to(DATA)) if path.is_relative_to(DATA) else path.name
    chunks, line = [], 1
    for i, piece in enumerate(text.split(SPLIT)):
        newlines = piece.count("\n")
        chunks.append(Chunk(rel, i, line, line + newlines, piece))
        line += newlines
    return chunks


def run_line(path: Path) -> str:
    """The file's first RUN line."""
    for line in path.read_text().splitlines():
        if "RUN:" in line:
            return line
    return ""


def tool_args(path: Path) -> list[str]:
    """The options both tools get for `path`: `--split-input-file`, and
    `--allow-unregistered-dialect` where the file has ops of no registered dialect (its RUN line
    says so, or it uses MLIR's test dialect, which upstream's mlir-opt registers).  Not for the
    others: xDSL would then take an unknown `!quant.NAME` type as an unregistered one."""
    args = ["--split-input-file"]
    if "allow-unregistered-dialect" in run_line(path) or '"test.' in path.read_text():
        args.append("--allow-unregistered-dialect")
    return args


def has_verify_diagnostics(path: Path) -> bool:
    """Whether MLIR runs the file with `-verify-diagnostics`."""
    return "verify-diagnostics" in run_line(path)


def run_mlir_opt(args: list[str], stdin: str | None = None, mlir_opt: str = MLIR_OPT) -> tuple[int, str, str]:
    """mlir-opt's exit status, stdout and stderr."""
    proc = subprocess.run([mlir_opt, *args], input=stdin, capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def run_qd_opt(args: list[str]) -> tuple[int, str, str]:
    """qd-opt's exit status, stdout and stderr (run in this process: no start-up per file)."""
    from transforms.opt import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(args)
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else 2
    return status, out.getvalue(), err.getvalue()


def split_output(stdout: str, count: int) -> list[str]:
    """The outputs of `count` chunks, separated by `// -----` lines."""
    pieces = re.split(r"^// -----\n", stdout, flags=re.M)
    if len(pieces) != count:
        raise RuntimeError(f"expected {count} output chunks, got {len(pieces)}")
    return pieces


def quant_types(text: str) -> list[str]:
    """The `!quant.NAME<...>` texts in `text`, in order (balanced angle brackets)."""
    found = []
    for m in re.finditer(r"!quant\.\w+", text):
        end, depth = m.end(), 0
        if text[end:end + 1] == "<":
            for j in range(end, len(text)):
                if text[j] == "<":
                    depth += 1
                elif text[j] == ">" and text[j - 1] != "-":
                    depth -= 1
                    if depth == 0:
                        end = j + 1
                        break
        found.append(text[m.start():end])
    return found


def diagnostics_by_chunk(stderr: str, chunks: list[Chunk]) -> dict[int, list[str]]:
    """The located diagnostics on stderr (`LINE: KIND: MESSAGE`), grouped by the chunk of their line."""
    out: dict[int, list[str]] = {c.index: [] for c in chunks}
    for line in stderr.splitlines():
        m = _LOCATED.match(line)
        if not m:
            continue
        number = int(m.group(1))
        for c in chunks:
            if c.first_line <= number <= c.last_line:
                out[c.index].append(f"{number}: {m.group(3)}: {m.group(4)}")
                break
    return out


@dataclass
class Result:
    """What both tools did with one chunk."""

    chunk: Chunk
    mlir_accepts: bool
    qd_accepts: bool
    mlir_types: list[str] = field(default_factory=list)
    qd_types: list[str] = field(default_factory=list)
    reread_same: bool | None = None  # mlir-opt on qd-opt's output prints what it prints for the input
    mlir_errors: list[str] = field(default_factory=list)
    qd_errors: list[str] = field(default_factory=list)
    verify: str | None = None  # None: not a verify-diagnostics file; "ok"; or qd-opt's first failure

    @property
    def agrees(self) -> bool:
        """Same accept / reject, and the same printed quant types where both accept."""
        if self.mlir_accepts != self.qd_accepts:
            return False
        return not self.mlir_accepts or self.mlir_types == self.qd_types

    @property
    def verdict(self) -> str:
        """`agree`, or what differs."""
        if self.mlir_accepts != self.qd_accepts:
            return "mlir-opt accepts, qd-opt rejects" if self.mlir_accepts else "qd-opt accepts, mlir-opt rejects"
        if self.mlir_accepts and self.mlir_types != self.qd_types:
            return "types printed differently" + ("" if self.reread_same else " (and mean other types)")
        return "agree"


def run_file(path: Path, mlir_opt: str = MLIR_OPT) -> list[Result]:
    """Both tools on every chunk of `path`."""
    chunks = split_chunks(path)
    args = [str(path), *tool_args(path)]
    _, m_out, m_err = run_mlir_opt(args, mlir_opt=mlir_opt)
    _, q_out, q_err = run_qd_opt(args)
    m_pieces, q_pieces = split_output(m_out, len(chunks)), split_output(q_out, len(chunks))
    # mlir-opt reading qd-opt's output, chunk by chunk (a chunk qd-opt rejected, empty, is read
    # as an empty module: mlir-opt drops an empty first chunk)
    reread_input = "// -----\n".join(q if q.strip() else "module {}\n" for q in q_pieces)
    _, r_out, _ = run_mlir_opt([*tool_args(path), "-"], stdin=reread_input,
                               mlir_opt=mlir_opt)
    r_pieces = split_output(r_out, len(chunks))
    m_diags, q_diags = diagnostics_by_chunk(m_err, chunks), diagnostics_by_chunk(q_err, chunks)
    verify: dict[int, list[str]] | None = None
    if has_verify_diagnostics(path):
        _, _, v_err = run_qd_opt([str(path), "--split-input-file", "--verify-diagnostics"])
        verify = diagnostics_by_chunk(v_err, chunks)
    results = []
    for c, m, q, r in zip(chunks, m_pieces, q_pieces, r_pieces, strict=True):
        res = Result(c, bool(m.strip()), bool(q.strip()), quant_types(m), quant_types(q),
                     mlir_errors=m_diags[c.index], qd_errors=q_diags[c.index])
        if res.mlir_accepts and res.qd_accepts:
            res.reread_same = r == m
        if verify is not None:
            res.verify = verify[c.index][0] if verify[c.index] else "ok"
        results.append(res)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, help="default: every file under tests/interop/mlir_quant")
    parser.add_argument("--mlir-opt", default=MLIR_OPT)
    parser.add_argument("--only-disagreements", action="store_true")
    args = parser.parse_args(argv)
    if not (Path(args.mlir_opt).exists() or subprocess.run(["which", args.mlir_opt], capture_output=True).returncode == 0):
        print(f"mlir_quant_conformance: error: {args.mlir_opt} not found (Debian package mlir-22-tools)", file=sys.stderr)
        return 2
    files = [f.resolve() for f in args.files] or mlir_files()
    total = agree = verify_total = verify_ok = 0
    print(f"{'chunk':<36} {'label':<44} {'mlir':<6} {'qd':<6} {'verdict':<34} {'reread':<6} verify")
    for path in files:
        for r in run_file(path, args.mlir_opt):
            total += 1
            agree += r.agrees
            if r.verify is not None:
                verify_total += 1
                verify_ok += r.verify == "ok"
            if args.only_disagreements and r.agrees and r.verify in (None, "ok"):
                continue
            reread = "-" if r.reread_same is None else ("same" if r.reread_same else "DIFF")
            print(f"{r.chunk.name:<36} {r.chunk.label[:44]:<44} {'accept' if r.mlir_accepts else 'reject':<6} "
                  f"{'accept' if r.qd_accepts else 'reject':<6} {r.verdict:<34} {reread:<6} {r.verify or '-'}")
            if not r.agrees and r.mlir_types != r.qd_types and r.mlir_accepts and r.qd_accepts:
                for a, b in zip(r.mlir_types, r.qd_types):
                    if a != b:
                        print(f"    mlir-opt: {a}\n    qd-opt:   {b}")
                        break
            elif not r.agrees:
                print(f"    mlir-opt: {(r.mlir_errors or ['(no error)'])[0]}\n    qd-opt:   {(r.qd_errors or ['(no error)'])[0]}")
    print(f"\n{agree} of {total} chunks agree; verify-diagnostics: {verify_ok} of {verify_total} chunks pass")
    return 0 if agree == total and verify_ok == verify_total else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
