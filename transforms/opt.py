"""`qd-opt`: an `mlir-opt`-like driver with qdialect's dialects and passes.

    qd-opt [FILE] [-p PASS,PASS{opt=v}] [-o OUT] [--split-input-file]
           [--verify-diagnostics] [--print-op-generic]

Bad input never shows a Python traceback: a parse error prints
`FILE:LINE:COL: error: MESSAGE`, a verifier error `FILE: error: MESSAGE`, both
on one line of stderr, and the exit status is 2 (as for `qd-import` and
`qd-run`; `mlir-opt` uses 1).  A usage error is one line and exit status 2
too.  A bug in qdialect (an exception no diagnostic covers) is one line
`qd-opt: internal error: ...` and exit status 3.  With
`--verify-diagnostics` the diagnostics go to stdout (one per split chunk) and
the exit status is 0, for FileCheck tests of invalid input.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError, PassFailedException
from xdsl.xdsl_opt_main import xDSLOptMain

from qdialect.diagnostics import one_line, parse_module, verify_module

EXIT_BAD_INPUT = 2
EXIT_INTERNAL_ERROR = 3


class QdOptMain(xDSLOptMain):
    """xDSL's driver with one-line diagnostics and qdialect's extra type checks."""

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)
        arg_parser.prog = "qd-opt"

        def error(message: str):  # one line instead of argparse's usage block
            print(f"qd-opt: error: {' '.join(message.split())}", file=sys.stderr)
            sys.exit(EXIT_BAD_INPUT)

        arg_parser.error = error

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        if file_extension != "mlir" or self.args.no_implicit_module:
            module = super().parse_chunk(chunk, file_extension, start_offset)
            if module is not None and not self.args.disable_verify:
                verify_module(module)
            return module
        return parse_module(
            self.ctx,
            chunk.read(),
            self.get_input_name(),
            verify=not self.args.disable_verify,
            line_offset=start_offset,
        )

    def run(self) -> int:
        chunks, file_extension = self.prepare_input()
        output = self.prepare_output()
        failed = False
        try:
            for i, (chunk, offset) in enumerate(chunks):
                if i > 0:
                    output.write("// -----\n")
                try:
                    module = self.parse_chunk(chunk, file_extension, offset)
                    if module is not None:
                        self.apply_passes(module)
                        output.write(self.output_resulting_program(module))
                except (ParseError, DiagnosticException) as e:
                    line = one_line(e, self.get_input_name())
                    if self.args.verify_diagnostics:
                        output.write(line + "\n")
                    else:
                        print(line, file=sys.stderr)
                        failed = True
                        break
                finally:
                    chunk.close()
                output.flush()
        finally:
            if output is not sys.stdout:
                output.close()
        return EXIT_BAD_INPUT if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
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
