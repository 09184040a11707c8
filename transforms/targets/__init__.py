"""Accelerator targets for `qnn-partition`, as data.

A target is a table with one row per qnn op name.  A row is a list of
`Check`s (see `checks.py`): predicates over the op's operand and result
types (storage, per-axis or per-tensor, zero points) and its attributes
(rounding profile, fused-activation bounds, kernel size, strides, ...).  An
op is supported when its row exists and every check holds; otherwise the
first failing check is the reason it stays on the host.

Targets live in this package, one module per target, each defining `TARGET`;
`load_target("ethos-u")` imports `transforms.targets.ethos_u`.

    from transforms.targets import load_target
    target = load_target("cmsis-nn")
    reason = target.reason(op)        # None, or (kind, message)
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field

from xdsl.ir import Operation

from transforms.targets.checks import KINDS, Check

__all__ = ["Check", "KINDS", "Row", "Target", "available_targets", "load_target"]


@dataclass(frozen=True)
class Row:
    """The constraints under which a target takes one qnn op; `source` names what it models."""

    op: str
    checks: tuple[Check, ...]
    source: str = ""


@dataclass(frozen=True)
class Target:
    """A named table of rows, keyed by qnn op name."""

    name: str
    summary: str
    rows: dict[str, Row] = field(default_factory=dict)
    schedule_runs: bool = False
    """Regions are the runs of consecutive supported ops in a depth-first schedule from the
    function's results (Vela 5.2 packs consecutive NPU ops of such a schedule into one
    command stream); otherwise supported producer/consumer pairs are merged greedily while
    the region graph stays acyclic."""

    def reason(self, op: Operation) -> tuple[str, str] | None:
        """None if the target takes `op`; else (kind, message) of the first failing constraint."""
        row = self.rows.get(op.name)
        if row is None:
            return "op", f"{self.name} has no row for {op.name}"
        for check in row.checks:
            try:
                message = check(op)
            except (ArithmeticError, IndexError, KeyError, TypeError, ValueError, AttributeError) as e:
                message = f"cannot check '{check.text}' on this op ({type(e).__name__}: {e})"
            if message is not None:
                return check.kind, message
        return None

    def supports(self, op: Operation) -> bool:
        return self.reason(op) is None

    def markdown(self) -> str:
        """The table as Markdown: constraints every row shares, then one line per op."""
        keys = [{(c.kind, c.text) for c in row.checks} for row in self.rows.values() if row.op.startswith("qnn.")]
        common = set.intersection(*keys) if keys else set()
        first = next((r for r in self.rows.values() if r.op.startswith("qnn.")), None)
        shared = [c for c in (first.checks if first else ()) if (c.kind, c.text) in common]
        lines = [
            f"Target `{self.name}`: {self.summary}.",
            "",
            "Every qnn row: " + "; ".join(f"{c.text} [{c.kind}]" for c in shared) + ".",
            "",
            "| qnn op | models | further constraints |",
            "| --- | --- | --- |",
        ]
        for row in self.rows.values():
            rest = [c for c in row.checks if (c.kind, c.text) not in common or not row.op.startswith("qnn.")]
            cell = "; ".join(f"{c.text} [{c.kind}]" for c in rest) or "—"
            lines.append(f"| `{row.op}` | {row.source} | {cell} |")
        return "\n".join(lines) + "\n"


def table(name: str, summary: str, rows: list[Row], schedule_runs: bool = False) -> Target:
    """A target from its rows (one per qnn op name)."""
    names = [r.op for r in rows]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise ValueError(f"target {name}: more than one row for {', '.join(sorted(duplicates))}")
    return Target(name, summary, {r.op: r for r in rows}, schedule_runs)


def _module_name(name: str) -> str:
    return name.replace("-", "_")


def available_targets() -> list[str]:
    """Names of the targets shipped in this package (module `ethos_u` is target `ethos-u`)."""
    import transforms.targets as package

    return sorted(
        m.name.replace("_", "-")
        for m in pkgutil.iter_modules(package.__path__)
        if m.name != "checks" and not m.name.startswith("_")
    )


def load_target(name: str) -> Target:
    """The target called `name`; ValueError naming the known targets if there is none."""
    known = available_targets()
    if name not in known:
        raise ValueError(f"qnn-partition: unknown target '{name}' (known: {', '.join(known)})")
    module = importlib.import_module(f"transforms.targets.{_module_name(name)}")
    target = getattr(module, "TARGET", None)
    if not isinstance(target, Target):
        raise ValueError(f"qnn-partition: transforms.targets.{_module_name(name)} defines no TARGET")
    return target
