"""Shared machinery of the fuzz harnesses: bounded cases, outcome classes, reports.

A *case* is one mutated input fed to one tool.  The contract every tool must
keep, whatever the input:

- success (exit 0), or
- exit status 2 with exactly one line on stderr (a diagnostic for people;
  `remark: ` lines a pass printed before a later stage refused are not counted);
- never a Python traceback, an ``internal error`` line (exit 3), an exception
  escaping ``main``, a hang (each case runs under a wall-clock alarm), or a
  memory blow-up (the process runs under an address-space limit, and the
  peak resident size is watched case by case).

Anything else is a *finding*: it is deduplicated by a signature (kind,
exception type, innermost project frame), counted, and saved with its input
under ``--save DIR`` so that it can be replayed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import resource
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

EXIT_BAD_INPUT = 2
CASE_TIMEOUT = 10.0
"""CPU seconds one case may take before it counts as a hang."""
CASE_WALL_TIMEOUT = 120.0
"""Wall-clock seconds one case may take (a backstop for a case that blocks without computing; on a
shared, loaded machine a case's wall time says little, so the CPU time is the real limit)."""
ADDRESS_SPACE_LIMIT = 4 << 30
"""RLIMIT_AS of a fuzzing process: an input claiming a gigantic tensor fails fast."""
RSS_GROWTH_LIMIT = 1 << 30
"""A case that raises the process's peak resident size by this much is a blow-up."""


class CaseTimeout(BaseException):
    """Raised by the alarm inside a case that ran too long (BaseException: no
    `except Exception` in the code under test can swallow it)."""


@contextlib.contextmanager
def time_limit(seconds: float, wall_seconds: float | None = None) -> Iterator[None]:
    """Raise CaseTimeout after `seconds` of CPU time (ITIMER_PROF) or `wall_seconds` of wall time."""
    wall_seconds = max(seconds, CASE_WALL_TIMEOUT) if wall_seconds is None else wall_seconds

    def _cpu(signum, frame):
        raise CaseTimeout(f"case took more than {seconds} s of CPU time")

    def _wall(signum, frame):
        raise CaseTimeout(f"case took more than {wall_seconds} s of wall time")

    old_prof = signal.signal(signal.SIGPROF, _cpu)
    old_alarm = signal.signal(signal.SIGALRM, _wall)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, wall_seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGPROF, old_prof)
        signal.signal(signal.SIGALRM, old_alarm)


def limit_address_space(limit: int = ADDRESS_SPACE_LIMIT) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


FUZZ_MAX_ELEMENTS = 1 << 22
"""The interpreter's tensor-size limit while fuzzing (legal but big inputs would only be slow)."""


def fuzz_limits() -> None:
    """Address-space limit for this process and a smaller interpreter tensor limit."""
    import qdialect.interpreter

    qdialect.interpreter.MAX_ELEMENTS = FUZZ_MAX_ELEMENTS


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@dataclass
class Captured:
    """What a CLI `main(argv)` did when run in-process."""

    rc: int | None
    stdout: str
    stderr: str
    escaped: BaseException | None = None
    tb: str = ""


def run_main(main: Callable, argv: list[str], stdin: bytes = b"") -> Captured:
    """Run a console-script `main(argv)` in this process with stdin/stdout/stderr redirected."""
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    sys.stdout, sys.stderr = out, err
    rc: int | None = None
    escaped = None
    tb = ""
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            err.write(str(e.code) + "\n")
    except CaseTimeout:
        raise
    except BaseException as e:  # noqa: BLE001 - exactly what we are looking for
        escaped = e
        tb = traceback.format_exc()
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    return Captured(rc, out.getvalue(), err.getvalue(), escaped, tb)


def contract_violation(c: Captured, tool: str) -> tuple[str, str] | None:
    """(kind, detail) when a CLI run broke the contract, else None."""
    if c.escaped is not None:
        return "escaped", f"{type(c.escaped).__name__}: {c.escaped}"
    lines = [ln for ln in c.stderr.splitlines() if ln.strip()]
    if "Traceback" in c.stderr:
        return "traceback", c.stderr.strip().splitlines()[-1]
    if c.rc == 0:
        return None
    if c.rc == EXIT_BAD_INPUT:
        # remarks a pass printed before a later stage refused the input are not the diagnostic
        lines = [ln for ln in lines if not ln.startswith("remark: ")]
        if len(lines) != 1:
            return "not-one-line", f"{len(lines)} stderr lines: {c.stderr[:300]!r}"
        if "internal error" in lines[0]:
            return "internal-error", lines[0]
        return None
    if c.rc == 130:
        return None  # KeyboardInterrupt, i.e. the user
    detail = lines[-1] if lines else f"exit {c.rc} and no stderr"
    kind = "internal-error" if "internal error" in detail else f"exit-{c.rc}"
    return kind, detail


def frame_signature(tb: BaseException | None) -> str:
    """file:line of the innermost frame in the project's code (not site-packages)."""
    if tb is None:
        return "?"
    frames = traceback.extract_tb(tb.__traceback__)
    for fr in reversed(frames):
        if str(ROOT) in fr.filename and "/.venv/" not in fr.filename and "/tests/fuzz/" not in fr.filename:
            return f"{Path(fr.filename).relative_to(ROOT)}:{fr.lineno}"
    if frames:
        fr = frames[-1]
        return f"{Path(fr.filename).name}:{fr.lineno}"
    return "?"


@dataclass
class Finding:
    kind: str
    target: str
    detail: str
    where: str = "?"
    count: int = 0
    example: str | None = None  # path of the saved input

    @property
    def key(self) -> tuple:
        detail = self.detail.split(":")[0] if self.kind in ("internal-error", "escaped") else ""
        return (self.kind, self.target, self.where, detail)


@dataclass
class Report:
    harness: str
    seed: int
    cases: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    messages: dict[str, int] = field(default_factory=dict)
    findings: dict[tuple, Finding] = field(default_factory=dict)
    examples: dict[str, dict] = field(default_factory=dict)
    """Diagnostic class -> the smallest input that produced it (see tests/fuzz/pin.py)."""
    seconds: float = 0.0
    peak_rss_mb: float = 0.0

    def outcome(self, name: str) -> None:
        self.outcomes[name] = self.outcomes.get(name, 0) + 1

    def message(self, line: str, example: dict | None = None) -> None:
        """Count a diagnostic by its class (the message with numbers and names blanked);
        `example` (tool, input, size) is kept when it is the smallest of its class so far."""
        key = diagnostic_class(line)
        self.messages[key] = self.messages.get(key, 0) + 1
        if example is not None:
            old = self.examples.get(key)
            if old is None or example["size"] < old["size"]:
                self.examples[key] = {**example, "class": key, "message": line}

    def add(self, f: Finding, save_dir: Path | None, data: bytes | str, suffix: str) -> None:
        old = self.findings.get(f.key)
        if old is None:
            self.findings[f.key] = f
            old = f
            if save_dir is not None:
                save_dir.mkdir(parents=True, exist_ok=True)
                path = save_dir / f"{self.harness}-{len(self.findings):03d}{suffix}"
                path.write_bytes(data.encode() if isinstance(data, str) else data)
                f.example = str(path)
        old.count += 1

    def to_json(self) -> dict:
        return {
            "harness": self.harness,
            "seed": self.seed,
            "cases": self.cases,
            "seconds": round(self.seconds, 2),
            "peak_rss_mb": round(self.peak_rss_mb, 1),
            "outcomes": dict(sorted(self.outcomes.items())),
            "diagnostic_classes": len(self.messages),
            "classes": sorted(self.messages),
            "findings": [
                {"kind": f.kind, "target": f.target, "where": f.where, "detail": f.detail[:400],
                 "count": f.count, "example": f.example}
                for f in self.findings.values()
            ],
        }

    def summary(self) -> str:
        lines = [
            f"{self.harness}: {self.cases} cases in {self.seconds:.1f} s (seed {self.seed}), "
            f"peak RSS {self.peak_rss_mb:.0f} MB",
            "  outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items())),
            f"  distinct diagnostic classes: {len(self.messages)}",
        ]
        if self.findings:
            lines.append(f"  FINDINGS ({len(self.findings)} distinct, "
                         f"{sum(f.count for f in self.findings.values())} cases):")
            for f in self.findings.values():
                lines.append(f"    [{f.kind}] {f.target} at {f.where} x{f.count}: {f.detail[:300]}"
                             + (f"  ({f.example})" if f.example else ""))
        else:
            lines.append("  no findings")
        return "\n".join(lines)


_NUM = __import__("re").compile(r"(?<![A-Za-z_])[-+]?(0x[0-9a-fA-F]+|[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?)")
_QUOTED = __import__("re").compile(r"'[^']*'|\"[^\"]*\"")


def diagnostic_class(line: str) -> str:
    """A diagnostic with its location, numbers and quoted names blanked: one per message kind."""
    text = line.split(" error: ", 1)[-1]
    text = _QUOTED.sub("'_'", text)
    text = __import__("re").sub(r"![a-z_.]+<[^>]*>+|tensor<[^>]*>+", "T", text)
    text = _NUM.sub("N", text)
    return text[:160]


def common_arguments(p: argparse.ArgumentParser, default_cases: int) -> None:
    p.add_argument("--cases", type=int, default=int(os.environ.get("QD_FUZZ_CASES", default_cases)),
                   help=f"number of cases (default {default_cases}; env QD_FUZZ_CASES)")
    p.add_argument("--seed", type=int, default=None,
                   help="random seed (default: env QD_FUZZ_SEED, else 0 in short mode, random in long mode)")
    p.add_argument("--time-budget", type=float, default=None,
                   help="stop after this many seconds even if fewer cases ran")
    p.add_argument("--save", type=Path, default=None, help="save the input of each distinct finding here")
    p.add_argument("--json", type=Path, default=None, help="write the report as JSON here")
    p.add_argument("--subprocess-every", type=int, default=None,
                   help="also run every N-th case through the real console script in a subprocess")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--pins", type=Path, default=None,
                   help="write the smallest input of each diagnostic class here (JSON lines, tests/fuzz/pin.py)")


def pick_seed(args, short: bool) -> int:
    if args.seed is not None:
        return args.seed
    env = os.environ.get("QD_FUZZ_SEED")
    if env:
        return int(env)
    return 0 if short else random.SystemRandom().randrange(1 << 31)


def finish(report: Report, args, started: float) -> int:
    report.seconds = time.perf_counter() - started
    report.peak_rss_mb = peak_rss() / 2**20
    if args.json is not None:
        args.json.write_text(json.dumps(report.to_json(), indent=1))
    if getattr(args, "pins", None) is not None:
        from tests.fuzz.pin import write_examples

        write_examples(args.pins, report.examples.values())
    if not args.quiet:
        print(report.summary())
    return 1 if report.findings else 0


# ----- byte-level mutations shared by the model fuzzers ------------------------------------------


def flip_bits(rng: random.Random, buf: bytearray, head_span: int) -> bytes:
    """1-8 bit flips, half of the time within the first `head_span` bytes (where tables live)."""
    head = rng.random() < 0.5
    for _ in range(rng.choice([1, 1, 2, 4, 8])):
        span = min(len(buf), head_span) if head else len(buf)
        pos = rng.randrange(span * 8)
        buf[pos // 8] ^= 1 << (pos % 8)
    return bytes(buf)


def overwrite_bytes(rng: random.Random, buf: bytearray, length: int) -> bytes:
    """1-4 runs of bytes overwritten with 0x00 / 0xFF / 0x7F / 0x80 (the length kept)."""
    for _ in range(rng.choice([1, 2, 4])):
        pos = rng.randrange(len(buf))
        n = rng.choice([1, 1, 2, 4, 8])
        buf[pos : pos + n] = bytes([rng.choice([0x00, 0xFF, 0x7F, 0x80])]) * n
    return bytes(buf)[:length]


def truncate_bytes(rng: random.Random, buf: bytearray, head_span: int) -> bytes:
    cut = rng.choice([rng.randrange(len(buf)), rng.randrange(min(len(buf), head_span))])
    return bytes(buf[:cut])


def splice_bytes(rng: random.Random, buf: bytearray) -> tuple[bytes, str]:
    """A chunk duplicated or dropped: every offset after it is off."""
    a = rng.randrange(len(buf))
    n = rng.choice([1, 4, 16, 100])
    if rng.random() < 0.5:
        return bytes(buf[:a] + buf[a : a + n] + buf[a:]), "insert"
    return bytes(buf[:a] + buf[a + n :]), "delete"
