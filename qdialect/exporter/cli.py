"""`qd-export`: a canonical qnn module (L1 text) as a .tflite file LiteRT runs with the same integers.

    qd-export MODEL.mlir -o OUT.tflite

MODEL is what `qd-import` of a .tflite or `qd-quantize` writes (a .tflite is
also read, through `qd-import`'s importer: a round trip).  A module TFLite's
kernels cannot reproduce (a rounding profile other than tflite / litert, an
op with no TFLite kernel) is refused with one line naming every offending op
and its place (`FILE:LINE:COL`); bad input is one line too; both exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse's own status for usage errors)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


class _BadInput(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="qd-export", description="Write a canonical qnn module (L1) as a TFLite flatbuffer.")
    p.add_argument("model", help="the .mlir module (qd-import / qd-quantize output), or a .tflite to round-trip")
    p.add_argument("-o", "--output", required=True, help="the .tflite file to write")
    return p


def _load(path: Path):
    """The module and its ops' source places (id(op) -> FILE:LINE:COL)."""
    if not path.exists():
        raise _BadInput(f"cannot read {path}: no such file")
    if path.is_dir():
        raise _BadInput(f"cannot read {path}: it is a directory")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise _BadInput(f"cannot read {path}: {e.strerror or e}") from None
    if path.suffix == ".tflite":
        from qdialect.importer.tflite import TFLiteImportError, import_tflite

        try:
            return import_tflite(data, name=path.stem), {}
        except TFLiteImportError as e:
            raise _BadInput(f"{path}: {' '.join(str(e).split())}") from None
    from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

    from qdialect.diagnostics import one_line, parse_module
    from transforms.opt import QdOptMain

    ctx = QdOptMain(args=[]).ctx
    located: list = []
    try:
        module = parse_module(ctx, data, str(path), located=located)
    except (ParseError, VerifyException, DiagnosticException) as e:
        raise _BadInput(one_line(e, str(path)).replace(": error: ", ": ", 1)) from None
    except UnicodeDecodeError:
        raise _BadInput(f"{path}: not a text .mlir file (not UTF-8)") from None
    places = {}
    for op, span in located:
        loc = span.get_location()
        places[id(op)] = f"{loc.file}:{loc.line}:{loc.col}"
    return module, places


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from qdialect.exporter.tflite import TFLiteExportError, export_tflite

    try:
        module, places = _load(Path(args.model))
        data = export_tflite(module, locations=places)
        try:
            Path(args.output).write_bytes(data)
        except OSError as e:
            raise _BadInput(f"cannot write {args.output}: {e.strerror or e}") from None
    except _BadInput as e:
        print(f"qd-export: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    except TFLiteExportError as e:
        print(f"qd-export: error: {args.model}: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug in qd-export: still one line, with its type for reports
        print(f"qd-export: internal error: {type(e).__name__}: {' '.join(str(e).split())}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
