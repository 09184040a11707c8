"""`qd-import`: a fully integer-quantized TFLite or quantized ONNX model as qdialect L1 text.

    qd-import MODEL.tflite|MODEL.onnx [-o OUT.mlir] [--batch N] [--float] [--profile onnxruntime|onnx]

Prints the module (qdialect's custom syntax, readable by `qd-opt`) or writes
it to OUT; `--float` reads a float32 model as a float graph of `nn` ops.  Bad input — a missing file, bytes that are not a TFLite model, a
float or dynamic-range model, unsupported operators — is one line on stderr,
`qd-import: error: ...`, and exit status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Sequence

from xdsl.printer import Printer


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse's own status for usage errors)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="qd-import",
        description="Import a fully integer-quantized TFLite model or a quantized ONNX model (QDQ or QOperator) "
                    "as qdialect L1 (qnn) text.",
    )
    p.add_argument("model", help="the .tflite or .onnx file")
    p.add_argument("--profile", choices=["onnxruntime", "onnx"], default="onnxruntime",
                   help="ONNX models: ONNX Runtime's default session op by op (default), or the specification's "
                        "QDQ float meaning (ORT without graph optimizations)")
    p.add_argument("-o", "--output", help="write the module here instead of stdout")
    p.add_argument("--batch", type=int, default=1, help="value for a dynamic (-1) batch dimension (default 1)")
    p.add_argument("--name", help="module symbol name (default: the file's stem)")
    p.add_argument("--float", action="store_true",
                   help="read a float32 model as a float graph of nn ops (what qd-quantize calibrates)")
    return p


def module_text(module) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    out.write("\n")
    return out.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from qdialect.importer.tflite import TFLiteImportError, import_tflite_file

    try:
        if args.batch < 1:
            raise TFLiteImportError(f"--batch must be >= 1, got {args.batch}")
        if str(args.model).endswith(".onnx"):
            if args.float:
                raise TFLiteImportError("--float reads float .tflite models only")
            from qdialect.importer.onnx import OnnxImportError, import_onnx_file

            remarks: list[str] = []
            try:
                module = import_onnx_file(args.model, batch=args.batch, name=args.name, profile=args.profile,
                                          remarks=remarks)
            except OnnxImportError as e:
                raise TFLiteImportError(str(e)) from None
            for r in remarks:
                print(f"qd-import: remark: {r}", file=sys.stderr)
        elif args.float:
            from qdialect.importer.tflite_float import import_tflite_float_file

            module = import_tflite_float_file(args.model, batch=args.batch, name=args.name)
        else:
            module = import_tflite_file(args.model, batch=args.batch, name=args.name)
        text = module_text(module)
    except TFLiteImportError as e:
        msg = " ".join(str(e).split())
        prefix = "" if msg.startswith("cannot read") else f"{args.model}: "
        print(f"qd-import: error: {prefix}{msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug in qd-import: still one line, with its type for reports
        print(f"qd-import: internal error: {type(e).__name__}: {' '.join(str(e).split())}", file=sys.stderr)
        return 3
    if args.output and args.output != "-":
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            print(f"qd-import: error: cannot write {args.output}: {e.strerror or e}", file=sys.stderr)
            return 2
    else:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
