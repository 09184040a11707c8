"""Fuzz the TFLite importer and `qd-run`: mutated `.tflite` files.

    python -m tests.fuzz.models                      # short mode: 1,200 cases, seed 0
    python -m tests.fuzz.models --cases 50000        # long mode (random seed, printed)

Corpus: the quantized and float models of `models/zoo/`, and the one-operator
models of the importer's tests (`tests/importer/test_tflite_import.py`,
small, so that mutations reach every operator's conversion quickly).

Mutations: bit flips (anywhere, or in the first kilobyte where the tables and
vtables are), bytes overwritten with 0x00 / 0xFF / 0x7F / 0x80, truncation,
and *field mutations*: an index of the model's flatbuffer fields (tensor
shapes, types, buffer indices, quantization scales / zero points / axis,
operator code indices, operator inputs and outputs, options fields, builtin
codes, vector length prefixes, buffer offsets and sizes) is built once per
model and one to three fields are overwritten in place with values that
matter for their type (0, -1, 1, the type's limits, 2^31 - 1, 65536;
NaN, inf, 0.0, -0.0, 1e-45, 3.4e38 for float scales).  Field mutations
are structure-aware but keep the file's layout, so they get far past the
flatbuffer reader into the importer's conversion.

Targets (in this process): `import_tflite(bytes)` must return a module or
raise `TFLiteImportError`; an accepted model is printed and read back by the
parser (every 4th), run by `qd-run --backend interp --compare none` (every
2nd), and every `--cli-every` case goes through `qd-import`'s `main` for the
one-line contract; every `--subprocess-every` case through the real
`qd-import` executable.  Existing deterministic sweeps (every truncation and
a structural bit-flip sweep of one small model) stay in the importer's
tests; this harness is their random, multi-model, multi-tool extension.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz.harness import (
    CASE_TIMEOUT,
    ROOT,
    RSS_GROWTH_LIMIT,
    Captured,
    CaseTimeout,
    Finding,
    Report,
    common_arguments,
    contract_violation,
    finish,
    flip_bits,
    overwrite_bytes,
    splice_bytes,
    truncate_bytes,
    fuzz_limits,
    frame_signature,
    limit_address_space,
    peak_rss,
    pick_seed,
    run_main,
    time_limit,
)

SHORT_CASES = 1200
ZOO = ROOT / "models" / "zoo"

# ----- corpus -----------------------------------------------------------------------------------


def corpus(which: str = "all") -> list[tuple[str, bytes]]:
    """Seed models: "zoo" (models/zoo/*.tflite), "float" (the zoo's float models), "ops" (the
    importer tests' one-op models) or "all"."""
    out = [(p.name, p.read_bytes()) for p in sorted(ZOO.glob("*.tflite"))] if which in ("all", "zoo") else []
    if which == "float":
        out = [(p.name, p.read_bytes()) for p in sorted(ZOO.glob("*_float.tflite"))]
    if which in ("all", "ops"):
        try:
            from tests.importer.test_tflite_import import CASES
        except Exception:  # noqa: BLE001 - the importer tests need LiteRT etc.; the zoo is enough
            CASES = {}
        out += [(f"case:{k}", v) for k, v in sorted(CASES.items()) if isinstance(v, (bytes, bytearray))]
    return out


# ----- the field index ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    offset: int  # absolute byte offset in the file
    fmt: str  # struct format of the value: b B h i I q Q f
    what: str


def _vector(tab, slot):
    o = tab.Offset(slot)
    if o == 0:
        return None, 0
    return tab.Vector(o), tab.VectorLen(o)


def _scalar(tab, slot, fmt, what, out):
    o = tab.Offset(slot)
    if o:
        out.append(Field(tab.Pos + o, fmt, what))


def _entries(tab, slot, fmt, what, out, limit=64):
    start, n = _vector(tab, slot)
    if start is None:
        return
    out.append(Field(start - 4, "I", f"{what} length"))
    size = struct.calcsize(fmt)
    for j in range(min(n, limit)):
        out.append(Field(start + j * size, fmt, f"{what}[{j}]"))


def _table_fields(tab, what, out):
    """Every present field of a table we know nothing about: 4-byte words at its slots."""
    vt = tab.Pos - struct.unpack_from("<i", tab.Bytes, tab.Pos)[0]
    vt_len = struct.unpack_from("<H", tab.Bytes, vt)[0]
    for slot in range(4, vt_len, 2):
        o = tab.Offset(slot)
        if o:
            out.append(Field(tab.Pos + o, "B", f"{what} slot {slot} (byte)"))
            if tab.Pos + o + 4 <= len(tab.Bytes):
                out.append(Field(tab.Pos + o, "i", f"{what} slot {slot} (int32)"))


def field_index(data: bytes) -> list[Field]:
    """The mutable scalar fields of a TFLite flatbuffer (only fields present in the file)."""
    import tflite

    out: list[Field] = []
    try:
        m = tflite.Model.GetRootAs(data, 0)
        _scalar(m._tab, 4, "I", "model version", out)
        for j in range(m.OperatorCodesLength()):
            oc = m.OperatorCodes(j)
            _scalar(oc._tab, 4, "b", f"opcode {j} deprecated_builtin_code", out)
            _scalar(oc._tab, 8, "i", f"opcode {j} version", out)
            _scalar(oc._tab, 10, "i", f"opcode {j} builtin_code", out)
        for j in range(m.BuffersLength()):
            b = m.Buffers(j)
            start, n = _vector(b._tab, 4)
            if start is not None:
                out.append(Field(start - 4, "I", f"buffer {j} length"))
                if n:
                    out.append(Field(start, "b", f"buffer {j}[0]"))
                    out.append(Field(start + n - 1, "b", f"buffer {j}[-1]"))
            _scalar(b._tab, 6, "Q", f"buffer {j} offset", out)
            _scalar(b._tab, 8, "Q", f"buffer {j} size", out)
        sg = m.Subgraphs(0)
        _entries(sg._tab, 6, "i", "graph inputs", out)
        _entries(sg._tab, 8, "i", "graph outputs", out)
        for i in range(sg.TensorsLength()):
            t = sg.Tensors(i)
            _entries(t._tab, 4, "i", f"tensor {i} shape", out)
            _entries(t._tab, 18, "i", f"tensor {i} shape_signature", out)
            _scalar(t._tab, 6, "b", f"tensor {i} type", out)
            _scalar(t._tab, 8, "I", f"tensor {i} buffer", out)
            _scalar(t._tab, 14, "B", f"tensor {i} is_variable", out)
            q = t.Quantization()
            if q is not None:
                _entries(q._tab, 8, "f", f"tensor {i} scale", out, limit=8)
                _entries(q._tab, 10, "q", f"tensor {i} zero_point", out, limit=8)
                _scalar(q._tab, 16, "i", f"tensor {i} quantized_dimension", out)
                _scalar(q._tab, 12, "B", f"tensor {i} details_type", out)
        for k in range(sg.OperatorsLength()):
            o = sg.Operators(k)
            _scalar(o._tab, 4, "I", f"op {k} opcode_index", out)
            _entries(o._tab, 6, "i", f"op {k} inputs", out)
            _entries(o._tab, 8, "i", f"op {k} outputs", out)
            _scalar(o._tab, 10, "B", f"op {k} builtin_options_type", out)
            opt = o.BuiltinOptions()
            if opt is not None:
                _table_fields(opt, f"op {k} options", out)
    except Exception:  # noqa: BLE001 - a corpus entry the tflite package cannot walk: bytes only
        pass
    return out


_INTERESTING = {
    "b": [0, -1, 1, 127, -128, 3, 9, 17],
    "B": [0, 1, 255, 2, 9, 17, 128],
    "h": [0, -1, 32767, -32768],
    "i": [0, -1, 1, 2, 3, 4, 7, 65536, 2**31 - 1, -(2**31), 1 << 24, 255, 256],
    "I": [0, 1, 2, 3, 2**31 - 1, 2**32 - 1, 1 << 20, 64, 255],
    "q": [0, -1, 1, 127, 128, -128, -129, 255, 256, 32768, 2**31, 2**63 - 1, -(2**63)],
    "Q": [0, 1, 2**63, 2**64 - 1, 1 << 32, 64, 4096],
    "f": [0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1e-45, 1.4e-45, 1.1754944e-38, 3.4028235e38,
          1.0, -1.0, 0.5, 1e-10, 1e10, 65504.0, 2.0**-31, 2.0**31],
}


def write_field(rng: random.Random, data: bytearray, f: Field) -> None:
    size = struct.calcsize("<" + f.fmt)
    if f.offset < 0 or f.offset + size > len(data):
        return
    if rng.random() < 0.8:
        value = rng.choice(_INTERESTING[f.fmt])
    else:
        old = struct.unpack_from("<" + f.fmt, data, f.offset)[0]
        if f.fmt == "f":
            value = old * rng.choice([-1.0, 2.0, 0.5, 1e10, 1e-10, 1.0000001])
        else:
            value = old + rng.choice([-2, -1, 1, 2, 1000])
    try:
        struct.pack_into("<" + f.fmt, data, f.offset, value)
    except (struct.error, OverflowError):
        pass


# ----- mutations ------------------------------------------------------------------------------------


_CATEGORY_WEIGHTS = {"quant": 30, "shape": 25, "options": 20, "wiring": 10, "type": 5, "length": 4, "other": 6}


def _category(f: Field) -> str:
    w = f.what
    if w.endswith("length"):
        return "length"
    if "scale" in w or "zero_point" in w or "quantized_dimension" in w or "details_type" in w:
        return "quant"
    if "shape" in w:
        return "shape"
    if "options" in w:
        return "options"
    if "inputs" in w or "outputs" in w or "opcode_index" in w or "buffer" in w and "tensor" in w:
        return "wiring"
    if "type" in w or "builtin_code" in w:
        return "type"
    return "other"


def group_fields(fields: list[Field]) -> dict[str, list[Field]]:
    groups: dict[str, list[Field]] = {}
    for f in fields:
        groups.setdefault(_category(f), []).append(f)
    return groups


def mutate(rng: random.Random, data: bytes, groups: dict[str, list[Field]]) -> tuple[bytes, str]:
    buf = bytearray(data)
    r = rng.random()
    if r < 0.6 and groups:
        names = list(groups)
        picked = []
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            cat = rng.choices(names, [_CATEGORY_WEIGHTS[n] for n in names])[0]
            picked.append(rng.choice(groups[cat]))
        for f in picked:
            write_field(rng, buf, f)
        return bytes(buf), "field:" + ";".join(f.what for f in picked)
    if r < 0.75:
        return flip_bits(rng, buf, 1024), "bitflip"
    if r < 0.88:
        return overwrite_bytes(rng, buf, len(data)), "bytes"
    if r < 0.95:
        return truncate_bytes(rng, buf, 2048), "truncate"
    return splice_bytes(rng, buf)


# ----- targets ---------------------------------------------------------------------------------------


def _write_temp(data: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".tflite", delete=False) as f:
        f.write(data)
        return f.name


def _diagnose_qd_run(path: str):
    import numpy as np

    from tvm_bridge.run_cli import _run, build_parser

    def run(argv):
        args = build_parser().parse_args(argv)
        args.argv = argv
        with np.errstate(all="ignore"):
            return _run(args)

    return run_main(run, [path, "--backend", "interp", "--compare", "none"])


def run_case(data: bytes, report: Report, save: Path | None, *, case_no: int, args,
             seed: tuple[str, bytes] | None = None) -> None:
    from qdialect.importer.tflite import TFLiteImportError, import_tflite
    from tests.fuzz.pin import model_example

    def example(tool: str) -> dict | None:
        return None if seed is None else model_example(tool, seed[0], seed[1], data)

    rss0 = peak_rss()

    def record(kind, target, detail, where="?"):
        report.outcome("finding")
        report.add(Finding(kind, target, detail, where), save, data, ".tflite")

    try:
        with time_limit(CASE_TIMEOUT):
            if seed is not None and "_float" in seed[0]:
                _float_case(data, report, record, case_no, example)
            try:
                module = import_tflite(data, name="fuzz")
            except TFLiteImportError as e:
                report.outcome("refused")
                report.message(str(e), example("import_tflite"))
                module = None
            except Exception as e:  # noqa: BLE001
                record("escaped", "import_tflite", f"{type(e).__name__}: {' '.join(str(e).split())}",
                       frame_signature(e))
                return
            else:
                report.outcome("imported")
            if case_no % args.cli_every == 0:
                _cli_case(data, report, record)
            if module is None:
                return
            if case_no % 4 == 0:
                problem = _reparse(module)
                if problem:
                    record("roundtrip", "qd-import | qd-opt", problem)
                    return
            if case_no % 2 == 0:
                path = _write_temp(data)
                try:
                    from tvm_bridge.run_cli import main as qd_run

                    compare = "litert-ref" if args.compare_every and case_no % args.compare_every == 0 else "none"
                    cap = run_main(qd_run, [path, "--backend", "interp", "--compare", compare])
                    cap.stderr = "\n".join(ln for ln in cap.stderr.splitlines() if not ln.startswith("  .. "))
                    if compare != "none" and cap.rc == 1 and cap.escaped is None:
                        # ran, but differs from LiteRT's reference kernels: a numerics lead, not a crash
                        report.outcome("qd-run: differs from LiteRT")
                        record("mismatch", "qd-run --compare litert-ref",
                               next((ln for ln in cap.stdout.splitlines() if ln.startswith("output_") and " 0 of " not in ln), "?"))
                        return
                    bad = contract_violation(cap, "qd-run")
                    if bad is not None:
                        where = frame_signature(cap.escaped)
                        if bad[0] in ("internal-error", "exit-3"):
                            where = frame_signature(_diagnose_qd_run(path).escaped)
                        record(bad[0], "qd-run --backend interp", bad[1], where)
                        return
                    report.outcome(f"qd-run: {'ran' if cap.rc == 0 else 'rejected'}")
                    if cap.rc != 0:
                        report.message(cap.stderr.strip().replace(path, "MODEL.tflite"), example("qd-run-tflite"))
                finally:
                    os.unlink(path)
    except CaseTimeout as e:
        record("hang", "qd-import/qd-run", str(e))
    except MemoryError as e:
        record("memory", "qd-import/qd-run", f"MemoryError: {e}")
    grown = peak_rss() - rss0
    if grown > RSS_GROWTH_LIMIT:
        record("memory", "qd-import/qd-run", f"peak RSS grew by {grown >> 20} MB")


def _float_case(data: bytes, report: Report, record, case_no: int, example) -> None:
    """A mutated float model through the float importer (qd-import --float, what qd-quantize
    reads) and, when it imports, the interpreter on random inputs."""
    import numpy as np

    from qdialect.importer.tflite import TFLiteImportError
    from qdialect.importer.tflite_float import import_tflite_float
    from qdialect.interpreter import InterpreterError, run_module

    try:
        module = import_tflite_float(data, name="fuzz")
    except TFLiteImportError as e:
        report.outcome("float: refused")
        report.message(str(e), example("import_tflite_float"))
        return
    except Exception as e:  # noqa: BLE001
        record("escaped", "import_tflite_float", f"{type(e).__name__}: {' '.join(str(e).split())}",
               frame_signature(e))
        return
    report.outcome("float: imported")
    if case_no % 4 == 0:
        problem = _reparse(module)
        if problem:
            record("roundtrip", "qd-import --float | qd-opt", problem)
            return
    if case_no % 2:
        return
    from tvm_bridge.run_cli import make_inputs

    try:
        from qdialect.interpreter import Interpreter

        from qdialect.interpreter import check_size

        fn = Interpreter(module).entry()
        for i, arg in enumerate(fn.body.block.args):
            check_size(arg, f"input {i}")
        with np.errstate(all="ignore"):
            run_module(module, make_inputs(list(fn.body.block.args), case_no))
        report.outcome("float: ran")
    except InterpreterError as e:
        report.outcome("float: interpreter refused")
        report.message(str(e))
    except Exception as e:  # noqa: BLE001
        record("escaped", "interpreter (float model)", f"{type(e).__name__}: {' '.join(str(e).split())}",
               frame_signature(e))


def _cli_case(data: bytes, report: Report, record) -> None:
    from qdialect.importer.cli import main as qd_import

    path = _write_temp(data)
    try:
        cap = run_main(qd_import, [path, "-o", os.devnull])
    finally:
        os.unlink(path)
    bad = contract_violation(cap, "qd-import")
    if bad is not None:
        record(bad[0], "qd-import", bad[1], frame_signature(cap.escaped))
    else:
        report.outcome(f"qd-import: exit {cap.rc}")


def _reparse(module) -> str | None:
    from qdialect.diagnostics import parse_module
    from qdialect.importer.cli import module_text
    from transforms.opt import QdOptMain

    ctx = _reparse.ctx if hasattr(_reparse, "ctx") else QdOptMain(args=[]).ctx
    _reparse.ctx = ctx
    text = module_text(module)
    try:
        again = module_text(parse_module(ctx, text, "imported"))
    except Exception as e:  # noqa: BLE001
        return f"the imported module does not parse back: {type(e).__name__}: {' '.join(str(e).split())[:300]}"
    if again != text:
        return "printing the imported module is not stable"
    return None


def run_subprocess_case(data: bytes, report: Report, save: Path | None) -> None:
    exe = Path(sys.executable).parent / "qd-import"
    path = _write_temp(data)
    try:
        cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "qdialect.importer.cli"]
        proc = subprocess.run([*cmd, path, "-o", os.devnull], capture_output=True, timeout=120, cwd=ROOT)
    except subprocess.TimeoutExpired:
        report.add(Finding("hang", "qd-import (subprocess)", "more than 120 s"), save, data, ".tflite")
        return
    finally:
        os.unlink(path)
    cap = Captured(proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"))
    report.outcome("subprocess")
    bad = contract_violation(cap, "qd-import")
    if bad is not None:
        report.add(Finding(bad[0], "qd-import (subprocess)", bad[1]), save, data, ".tflite")


# ----- driver ---------------------------------------------------------------------------------------


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz.models", description=__doc__.split("\n\n")[0])
    common_arguments(p, SHORT_CASES)
    p.add_argument("--cli-every", type=int, default=10, help="run qd-import's main on every N-th case")
    p.add_argument("--compare-every", type=int, default=None,
                   help="run qd-run with --compare litert-ref (LiteRT in a child process) on every N-th case "
                        "(default: never in short mode, 40 in long mode); a difference is a 'mismatch' finding")
    p.add_argument("--corpus", choices=("all", "zoo", "float", "ops"), default="all",
                   help="seed models: the zoo, its float models only (the float importer), the importer "
                        "tests' one-op models, or all (default)")
    args = p.parse_args(argv)
    short = args.cases <= SHORT_CASES and args.time_budget is None
    seed = pick_seed(args, short)
    if args.subprocess_every is None:
        args.subprocess_every = 400 if short else 2000
    if args.compare_every is None:
        args.compare_every = 0 if short else 40
    limit_address_space()
    fuzz_limits()
    warnings.simplefilter("ignore")
    started = time.perf_counter()
    rng = random.Random(seed)
    seeds = corpus(args.corpus)
    fields = {name: group_fields(field_index(data)) for name, data in seeds}
    # small models are cheap: weight by 1/sqrt(size) so the zoo and the one-op models share the
    # time; float models only check that they are told apart, so they come up less often
    weights = [(0.2 if "_float" in name else 1.0) / math.sqrt(max(2000, len(d))) for name, d in seeds]
    report = Report("models", seed)
    if not args.quiet:
        print(f"models: {len(seeds)} seeds ({sum(len(f) for g in fields.values() for f in g.values())} fields), "
              f"{args.cases} cases, seed {seed}", flush=True)
    for case_no in range(args.cases):
        if args.time_budget is not None and time.perf_counter() - started > args.time_budget:
            break
        name, base = rng.choices(seeds, weights)[0]
        data, how = mutate(rng, base, fields[name])
        report.cases += 1
        report.outcome(f"mutation {how.split(':')[0]}")
        run_case(data, report, args.save, case_no=case_no, args=args, seed=(name, base))
        if args.subprocess_every and case_no % args.subprocess_every == 0:
            run_subprocess_case(data, report, args.save)
        if not args.quiet and case_no and case_no % 5000 == 0:
            print(f"  {case_no} cases, {time.perf_counter() - started:.0f} s, "
                  f"{len(report.findings)} distinct findings", flush=True)
    return finish(report, args, started)


if __name__ == "__main__":
    sys.exit(main())
