"""`qd-opt`: an `mlir-opt`-like driver with qdialect's dialects and passes.

    qd-opt [FILE] [-p PASS,PASS{opt=v}] [-o OUT] [--split-input-file]
           [--verify-diagnostics] [--print-op-generic]

Bad input never shows a Python traceback: a diagnostic is one line of stderr,
`FILE:LINE:COL: error: MESSAGE` (a parse error at its place, a verifier error
at its op, a pass's refusal at the op it names; `FILE: error: MESSAGE` when no
place is known), and the exit status is 2 (as for `qd-import` and `qd-run`;
`mlir-opt` uses 1).  A usage error is one line and exit status 2 too.  A bug
in qdialect (an exception no diagnostic covers) is one line
`qd-opt: internal error: ...` and exit status 3.

Options are also read in LLVM's spelling, with one dash (`-split-input-file`), so
that MLIR's RUN lines work unchanged.  As in mlir-opt 22, `--split-input-file` runs each chunk of the input between
`// -----` lines on its own: every chunk's diagnostics are reported (line
numbers are the file's), the outputs are separated by `// -----` lines (a
chunk that failed prints nothing), and the status is that of the worst chunk.
`--verify-diagnostics` checks the diagnostics against the input's
`// expected-error {{...}}` (`-note`, `-warning`, `-remark`; `@+N`, `@-N`,
`@above`, `@below`, `@unknown`; `expected-error-re`) comments with MLIR's
rules (`qdialect.expected_diagnostics`): every expected diagnostic produced
and no other is exit status 0; otherwise each unexpected diagnostic and each
one not produced is a line on stderr in mlir-opt's words, and the status is 1.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from io import BytesIO

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError, PassFailedException
from xdsl.utils.lexer import Span
from xdsl.xdsl_opt_main import xDSLOptMain

from qdialect.diagnostics import LocatedVerifyError, locate, one_line, parse_module, verify_module
from qdialect.expected_diagnostics import Diagnostic, Report, check, format_diagnostic, parse_expectations

EXIT_VERIFY_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL_ERROR = 3


def _one_line_message(error: BaseException) -> str:
    lines = [ln for ln in str(error).strip().splitlines() if ln.strip()]
    return " ".join((lines[0] if lines else type(error).__name__).split())


def _at(span: Span | None, message: str) -> Diagnostic:
    if span is None:
        return Diagnostic("error", message)
    loc = span.get_location()
    return Diagnostic("error", message, loc.line, loc.col)


class QdOptMain(xDSLOptMain):
    """xDSL's driver with one-line located diagnostics, mlir-opt's `--split-input-file` and
    `--verify-diagnostics`, and qdialect's extra type checks."""

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)
        arg_parser.prog = "qd-opt"

        def error(message: str):  # one line instead of argparse's usage block
            print(f"qd-opt: error: {' '.join(message.split())}", file=sys.stderr)
            sys.exit(EXIT_BAD_INPUT)

        arg_parser.error = error

    def parse_chunk(self, chunk, file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        return self._parse(chunk.read(), file_extension, start_offset, None)

    def _parse(self, text: bytes, file_extension: str, line_offset: int,
               located: list[tuple[Operation, Span]] | None) -> ModuleOp | None:
        if file_extension != "mlir" or self.args.no_implicit_module:
            module = super().parse_chunk(BytesIO(text), file_extension, line_offset)
            if module is not None and not self.args.disable_verify:
                verify_module(module)
            return module
        return parse_module(self.ctx, text, self.get_input_name(), verify=not self.args.disable_verify,
                            line_offset=line_offset, located=located)

    def _run_chunk(self, text: bytes, file_extension: str, line_offset: int) -> tuple[str | None, list[Diagnostic]]:
        """The printed result of one chunk (None when it failed) and the diagnostics it produced.
        An exception that is no diagnostic (a bug) propagates."""
        located: list[tuple[Operation, Span]] = []
        module = None
        try:
            module = self._parse(text, file_extension, line_offset, located)
            if module is None:
                return None, []
            self.apply_passes(module)
            return self.output_resulting_program(module), []
        except ParseError as e:
            spans = [(e.span, e.msg), *getattr(e, "also", ())]  # quant.ParseErrors: MLIR's several errors
            if line_offset:
                spans = [(s if s.line_offset else Span(s.start, s.end, s.input, line_offset), m) for s, m in spans]
            return None, [_at(s, " ".join(str(m).split())) for s, m in spans]
        except LocatedVerifyError as e:
            return None, [_at(e.span, e.message)]
        except DiagnosticException as e:  # a pass's refusal (or xDSL's verifier between passes)
            message = _one_line_message(e)
            return None, [_at(None if module is None else locate(message, module, located), message)]
        except UnicodeDecodeError:
            raise  # (a ValueError) the input is not text: main's one line
        except (ValueError, KeyError) as e:  # bad input a pass found without a diagnostic
            if not (self.args.split_input_file or self.args.verify_diagnostics):
                raise  # main's one line, `qd-opt: error: ...`
            return None, [Diagnostic("error", " ".join(str(e).split()))]

    def run(self) -> int:
        chunks, file_extension = self.prepare_input()
        output = self.prepare_output()
        source = self.get_input_name()
        verify = self.args.verify_diagnostics
        status = 0
        report = Report()  # --verify-diagnostics: every chunk's failures, printed at the end
        try:
            for i, (chunk, line_offset) in enumerate(chunks):
                try:
                    text = chunk.read()
                finally:
                    chunk.close()
                if i > 0:
                    output.write("// -----\n")
                try:
                    printed, diagnostics = self._run_chunk(text, file_extension, line_offset)
                except (KeyboardInterrupt, BrokenPipeError, ValueError, KeyError):
                    raise  # (ValueError, KeyError: bad input without --split-input-file; main's one line)
                except Exception as e:  # a bug: one line, and the next chunk still runs
                    print(f"qd-opt: internal error: {type(e).__name__}: {' '.join(str(e).split())}", file=sys.stderr)
                    status = EXIT_INTERNAL_ERROR
                    continue
                if verify:
                    report.extend(check(diagnostics, parse_expectations(text.decode("utf-8", "replace"),
                                                                        line_offset + 1)))
                else:  # one line a failed chunk (the further errors MLIR adds are for --verify-diagnostics)
                    for d in diagnostics[:1]:
                        print(format_diagnostic(d, source), file=sys.stderr)
                    if diagnostics:
                        status = max(status, EXIT_BAD_INPUT)
                if printed is not None:
                    output.write(printed)
                output.flush()
        finally:
            if output is not sys.stdout:
                output.close()
        for d in report.failures:
            print(format_diagnostic(d, source), file=sys.stderr)
        if report.failures:
            status = max(status, EXIT_VERIFY_FAILED)
        return status


_SINGLE_DASH_LONG = re.compile(r"-[a-z][a-z0-9]*(?:-[a-z0-9]+)+(?:=.*)?", re.S)


def mlir_style_arguments(argv: Sequence[str]) -> list[str]:
    """`argv` with LLVM's single-dash long options (`-split-input-file`, `-verify-diagnostics`,
    as MLIR's RUN lines spell them) in argparse's spelling (`--split-input-file`).  A single
    dash before a hyphenated name is the only form changed (`-p PASS`, `-o OUT` stay)."""
    return [f"-{a}" if _SINGLE_DASH_LONG.fullmatch(a) else a for a in argv]


def main(argv: Sequence[str] | None = None) -> int:
    argv = mlir_style_arguments(sys.argv[1:] if argv is None else argv)
    try:
        tool = QdOptMain(description="qdialect modular optimizer driver", args=argv)
        return tool.run()
    except (ParseError, DiagnosticException, PassFailedException) as e:
        print(one_line(e, "qd-opt"), file=sys.stderr)
        return EXIT_BAD_INPUT
    except UnicodeDecodeError as e:
        print(f"qd-opt: error: input is not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start})", file=sys.stderr)
        return EXIT_BAD_INPUT
    except FileNotFoundError as e:
        print(f"qd-opt: error: cannot read {e.filename}: {e.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (ValueError, KeyError) as e:
        print(f"qd-opt: error: {' '.join(str(e).split())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ArgSpecParseError as e:  # a BaseException in xDSL: a malformed -p pipeline
        # "Error parsing ...:", "pass-pipeline:1:COL", the pipeline, a caret line, the message
        lines = [ln for ln in str(e).splitlines() if ln.strip()]
        where = lines[1].rsplit(":", 1)[-1] if len(lines) > 1 else "?"
        spec = lines[2].strip() if len(lines) > 2 else ""
        what = lines[-1].strip().rstrip(".") if len(lines) > 4 else "malformed"
        print(f"qd-opt: error: pass pipeline '{spec}', column {where}: {what[:1].lower() + what[1:]}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `qd-opt ... | head`: the reader left; nothing to report (as qd-import)
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except Exception as e:  # a bug in a pass: still one line, with its type for reports
        print(f"qd-opt: internal error: {type(e).__name__}: {' '.join(str(e).split())}", file=sys.stderr)
        return EXIT_INTERNAL_ERROR


if __name__ == "__main__":
    sys.exit(main())
