"""MLIR's `--verify-diagnostics`: the diagnostics a run produced, checked against the
`expected-*` comments of its input.

    %0 = quant.dcast %a : f32 to f32   // expected-error {{must be scalar or tensor}}
    // expected-error@+1 {{zero point 300 is outside i8}}
    // expected-error@below {{...}}     (the next line without a designator)
    // expected-error@above {{...}}     (the last line without a designator)
    // expected-error@-2 {{...}}        (two lines up)
    // expected-error@unknown {{...}}   (a diagnostic without a location)
    // expected-error-re {{result {{[0-9]+}} of}}   (`{{...}}` inside: a regular expression)

The kinds are `error`, `warning`, `note` and `remark`.  A diagnostic matches an
expectation of its kind on its line whose text it contains (or whose regular
expression it matches).  One expectation may match several diagnostics; a
diagnostic that matches none, and an expectation that no diagnostic matched, are
failures, reported as mlir-opt 22 words and orders them (`unexpected error: ...`,
then `expected error "..." was not produced`, after the whole input has run).  These are the rules of MLIR's
`SourceMgrDiagnosticVerifierHandler` (mlir/lib/IR/Diagnostics.cpp).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# MLIR's own pattern: `expected-KIND[-re] [@DESIGNATOR] {{TEXT}}` ending its line
_EXPECTED = re.compile(
    r"expected-(error|note|remark|warning)(-re)? *(@([+-][0-9]+|above|below|unknown))? *\{\{(.*)\}\}$"
)


@dataclass(frozen=True)
class Diagnostic:
    """A diagnostic a run produced: its kind, its message and its place (None: unknown)."""

    kind: str
    message: str
    line: int | None = None
    col: int | None = None


@dataclass
class Expectation:
    """One `expected-*` comment: the kind and text it expects on `line` (None: unknown location),
    and where the comment itself is (`comment_line`, `comment_col`), for reports."""

    kind: str
    text: str
    line: int | None
    comment_line: int
    comment_col: int
    pattern: re.Pattern | None = None
    matched: bool = False
    problem: str | None = field(default=None)

    def matches(self, message: str) -> bool:
        """Whether `message` is what this expectation asks for."""
        if self.pattern is not None:
            return self.pattern.search(message) is not None
        return self.text in message


def _regex(text: str) -> tuple[re.Pattern | None, str | None]:
    """The regular expression of an `expected-*-re` text: literal text, with `{{...}}` blocks
    that are regular expressions; or (None, why) when the text is malformed."""
    parts, rest = [], text
    while rest:
        start = rest.find("{{")
        if start < 0:
            parts.append(re.escape(rest))
            break
        parts.append(re.escape(rest[:start]))
        rest = rest[start + 2:]
        end = rest.find("}}")
        if end < 0:
            return None, "found start of regex with no end '}}'"
        block = rest[:end]
        try:
            re.compile(block)
        except re.error as e:
            return None, f"invalid regex: {e}"
        parts.append(f"({block})")
        rest = rest[end + 2:]
    return re.compile("".join(parts)), None


def parse_expectations(text: str, first_line: int = 1) -> list[Expectation]:
    """The `expected-*` comments of `text`, whose first line is line `first_line` of its file."""
    expectations: list[Expectation] = []
    below: list[Expectation] = []  # waiting for the next line without a designator
    last_plain = first_line - 1  # the last line without a designator (before the text: none)
    lines = text.split("\n")
    for index, content in enumerate(lines):
        number = first_line + index
        m = _EXPECTED.search(content.rstrip())
        if m is None:
            for e in below:
                e.line = number
            below.clear()
            last_plain = number
            continue
        kind, is_regex, _, designator, body = m.groups()
        e = Expectation(kind, body, number, number, m.start() + 1)
        if is_regex:
            e.pattern, e.problem = _regex(body)
        if designator is not None:
            if designator[0] in "+-":
                e.line = number + int(designator)
            elif designator == "unknown":
                e.line = None
            elif designator == "above":
                e.line = last_plain
            else:  # below: the next line without a designator (a dangling one: past the end)
                e.line = first_line + len(lines)
                below.append(e)
        expectations.append(e)
    return expectations


@dataclass
class Report:
    """The failures of a run, in the three groups mlir-opt 22 prints in this order: malformed
    expectations, diagnostics no expectation accounts for, expectations no diagnostic matched."""

    malformed: list[Diagnostic] = field(default_factory=list)
    unexpected: list[Diagnostic] = field(default_factory=list)
    not_produced: list[Diagnostic] = field(default_factory=list)

    def extend(self, other: "Report") -> None:
        """Add the failures of another chunk of the same input."""
        self.malformed += other.malformed
        self.unexpected += other.unexpected
        self.not_produced += other.not_produced

    @property
    def failures(self) -> list[Diagnostic]:
        """Every failure, as error diagnostics in mlir-opt's order and words."""
        return [*self.malformed, *self.unexpected, *self.not_produced]


def check(diagnostics: list[Diagnostic], expectations: list[Expectation]) -> Report:
    """Match the diagnostics a run produced against the expectations of its input."""
    report = Report()
    for e in expectations:
        if e.problem is not None:
            report.malformed.append(Diagnostic("error", e.problem, e.comment_line, e.comment_col))
    for d in diagnostics:
        near_miss = None
        for e in expectations:
            if e.problem is None and e.line == d.line and e.matches(d.message):
                if e.kind == d.kind:
                    e.matched = True
                    break
                near_miss = near_miss or e
        else:
            if near_miss is not None:
                report.unexpected.append(Diagnostic(
                    "error", f"'{d.kind}' diagnostic emitted when expecting a '{near_miss.kind}'",
                    near_miss.comment_line, near_miss.comment_col))
            else:
                report.unexpected.append(Diagnostic("error", f"unexpected {d.kind}: {d.message}", d.line, d.col))
    for e in expectations:
        if e.problem is None and not e.matched:
            report.not_produced.append(Diagnostic("error", f'expected {e.kind} "{e.text}" was not produced',
                                                  e.comment_line, e.comment_col))
    return report


def format_diagnostic(d: Diagnostic, source: str) -> str:
    """`SOURCE:LINE:COL: KIND: MESSAGE` (`SOURCE: KIND: MESSAGE` when the place is unknown), one line."""
    message = " ".join(d.message.split())
    if d.line is None:
        return f"{source}: {d.kind}: {message}"
    return f"{source}:{d.line}:{d.col or 1}: {d.kind}: {message}"


__all__ = ["Diagnostic", "Expectation", "Report", "check", "format_diagnostic", "parse_expectations"]
