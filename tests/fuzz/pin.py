"""Pinned diagnostics: one replayable input per diagnostic class the fuzzers hit.

A *diagnostic class* is a message with its numbers, names and types blanked
(`harness.diagnostic_class`).  The fuzzers keep the smallest input of each
class they meet (`--pins FILE`); this module stores them under
`tests/fuzz/pinned/` and replays them (`tests/fuzz/test_fuzz_pinned.py`):
each input must still be refused with exit status 2 and exactly the pinned
one-line message.  A record is one JSON line:

    {"tool": "qd-opt", "argv": [...], "text": "...", "class": ..., "message": ...}
    {"tool": "qd-run", "text": "...", ...}                     (an .mlir file run on the interpreter)
    {"tool": "import_tflite" | "import_tflite_float" | "qd-run-tflite", "seed": "cnn_small.tflite", "edits": [...], ...}
    {"tool": "import_tflite" | "qd-run-tflite", "seed": "case:ADD", "bytes": "1c000000...", ...}
    {"tool": "import_onnx" | "qd-run-onnx", "seed": "op_add_bcast_qop_u8.onnx", "hunks": [[25, 26, "c1"], ...], ...}

Model inputs are stored as edits of a zoo model (`models/zoo/`): a list of
[offset, hex] byte replacements for mutations that keep the length, else
["splice", prefix_length, hex, suffix_length]; mutations of the importer tests' one-operator
models keep the whole (small) file.  Mutated ONNX models (`models/onnx/`) are stored as hunks
[seed_start, seed_end, hex] (`encode_hunks`: a structure-aware mutation re-serializes the protobuf,
so the lengths of the enclosing messages change too), or whole when that is shorter.
ONNX records live in `onnx.jsonl` (`python -m tests.fuzz.onnx_models`).

    python -m tests.fuzz.pin                 # run both short fuzzers and add new classes to the pins
    python -m tests.fuzz.pin --cases 20000   # more cases, more classes
    python -m tests.fuzz.pin --rewrite       # re-pin every message from the current code
    python -m tests.fuzz.pin --from long.jsonl --new-kinds-only   # a long run's new message kinds
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from tests.fuzz.harness import ROOT, run_main

PINNED = Path(__file__).resolve().parent / "pinned"
ZOO = ROOT / "models" / "zoo"
ONNX_ZOO = ROOT / "models" / "onnx"
ONNX_TOOLS = ("import_onnx", "qd-run-onnx")
MAX_TEXT = 6000
"""Longest IR example kept (characters); a class met only in bigger inputs is left out."""


# ----- model inputs as edits of a zoo file ---------------------------------------------------------


def encode_model(seed: bytes, data: bytes) -> list:
    if len(seed) == len(data):
        a = np.frombuffer(seed, np.uint8)
        b = np.frombuffer(data, np.uint8)
        diff = np.flatnonzero(a != b)
        edits: list = []
        start = None
        for i in diff.tolist():
            if start is not None and i <= prev + 8:
                prev = i
                continue
            if start is not None:
                edits.append([start, data[start : prev + 1].hex()])
            start = prev = i
        if start is not None:
            edits.append([start, data[start : prev + 1].hex()])
        return edits
    p = 0
    n = min(len(seed), len(data))
    while p < n and seed[p] == data[p]:
        p += 1
    s = 0
    while s < n - p and seed[len(seed) - 1 - s] == data[len(data) - 1 - s]:
        s += 1
    return [["splice", p, data[p : len(data) - s].hex(), s]]


def decode_model(seed: bytes, edits: list) -> bytes:
    if edits and edits[0][0] == "splice":
        _, p, mid, s = edits[0]
        return seed[:p] + bytes.fromhex(mid) + seed[len(seed) - s :]
    out = bytearray(seed)
    for offset, hexdata in edits:
        chunk = bytes.fromhex(hexdata)
        out[offset : offset + len(chunk)] = chunk
    return bytes(out)


def encode_hunks(seed: bytes, data: bytes, window: int = 24, reach: int = 4096) -> list | None:
    """[[start, end, hex], ...]: replace seed[start:end] by the bytes (seed offsets, increasing).
    For a re-serialized protobuf (a few fields changed, the lengths of the messages around
    them with them) this is a few short hunks where one splice would span most of the file.
    None when it does not reproduce `data` (it always should)."""
    out: list = []
    i = j = 0
    while True:
        n = min(len(seed) - i, len(data) - j)
        k = 0
        while k < n and seed[i + k : i + k + 64] == data[j + k : j + k + 64]:
            k += 64
        while k < n and seed[i + k] == data[j + k]:
            k += 1
        i, j = i + k, j + k
        if i >= len(seed) and j >= len(data):
            break
        found = None
        for skip_b in range(0, min(len(data) - j, reach) + 1):
            w = data[j + skip_b : j + skip_b + window]
            if len(w) < window:
                break
            at = seed.find(w, i, i + skip_b + reach + window)
            if at >= 0:
                found = (at - i, skip_b)
                break
        if found is None:
            out.append([i, len(seed), data[j:].hex()])
            break
        skip_a, skip_b = found
        out.append([i, i + skip_a, data[j : j + skip_b].hex()])
        i, j = i + skip_a, j + skip_b
    return out if decode_hunks(seed, out) == data else None


def decode_hunks(seed: bytes, hunks: list) -> bytes:
    parts, at = [], 0
    for start, end, hexdata in hunks:
        parts += [seed[at:start], bytes.fromhex(hexdata)]
        at = end
    parts.append(seed[at:])
    return b"".join(parts)


def model_example(tool: str, seed_name: str, seed: bytes, data: bytes) -> dict | None:
    if seed_name.startswith("case:"):
        # the importer tests' one-op models are built at run time: keep the (small) file itself
        return {"tool": tool, "seed": seed_name, "bytes": data.hex(), "size": len(data)}
    edits = encode_model(seed, data)
    size = sum(len(e[-2 if e[0] == "splice" else 1]) for e in edits)
    return {"tool": tool, "seed": seed_name, "edits": edits, "size": size}


# ----- storage ------------------------------------------------------------------------------------


def pin_file(tool: str) -> Path:
    if tool in ONNX_TOOLS:
        return PINNED / "onnx.jsonl"
    return PINNED / ("ir.jsonl" if tool in ("qd-opt", "qd-run") else "models.jsonl")


def read_pins(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_examples(path: Path, examples: Iterable[dict]) -> None:
    """The fuzzer's --pins output: every example, one JSON line each."""
    with open(path, "w", encoding="utf-8") as f:
        for ex in examples:
            if ex.get("text") is not None and len(ex["text"]) > MAX_TEXT:
                continue
            f.write(json.dumps({k: v for k, v in ex.items() if k != "size"}, ensure_ascii=True) + "\n")


def _write_pins(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    records = sorted(records, key=lambda r: (r["tool"], r["class"]))
    path.write_text("".join(json.dumps(r, ensure_ascii=True) + "\n" for r in records), encoding="utf-8")


# ----- replay --------------------------------------------------------------------------------------


def model_bytes(record: dict) -> bytes:
    if "bytes" in record:
        return bytes.fromhex(record["bytes"])
    if "hunks" in record:  # an ONNX model (tests/fuzz/onnx_models.py): edits of a models/onnx/ file
        return decode_hunks((ONNX_ZOO / record["seed"]).read_bytes(), record["hunks"])
    return decode_model((ZOO / record["seed"]).read_bytes(), record["edits"])


def replay(record: dict) -> tuple[int | None, str]:
    """(exit status, stderr without progress lines) of the record's tool on its input, under the
    fuzzers' interpreter size limit (the messages name it)."""
    import qdialect.interpreter as interpreter
    from tests.fuzz.harness import FUZZ_MAX_ELEMENTS

    saved = interpreter.MAX_ELEMENTS
    interpreter.MAX_ELEMENTS = FUZZ_MAX_ELEMENTS
    try:
        return _replay(record)
    finally:
        interpreter.MAX_ELEMENTS = saved


def _replay(record: dict) -> tuple[int | None, str]:
    tool = record["tool"]
    if tool == "qd-opt":
        from transforms.opt import main

        cap = run_main(main, list(record["argv"]), record["text"].encode("utf-8", "surrogatepass"))
        return cap.rc, "\n".join(ln for ln in cap.stderr.strip().splitlines() if not ln.startswith("remark: "))
    if tool in ("import_tflite", "import_tflite_float"):
        from qdialect.importer.tflite import TFLiteImportError, import_tflite
        from qdialect.importer.tflite_float import import_tflite_float

        try:
            (import_tflite if tool == "import_tflite" else import_tflite_float)(model_bytes(record), name="fuzz")
        except TFLiteImportError as e:
            return 2, str(e)
        return 0, ""
    if tool == "import_onnx":
        from qdialect.importer.onnx import OnnxImportError, import_onnx

        try:
            import_onnx(model_bytes(record), name="fuzz")
        except OnnxImportError as e:
            return 2, str(e)
        return 0, ""
    from tvm_bridge.run_cli import main as qd_run

    suffix = {"qd-run": ".mlir", "qd-run-onnx": ".onnx"}.get(tool, ".tflite")
    with tempfile.NamedTemporaryFile(suffix=suffix, delete=False) as f:
        f.write(record["text"].encode("utf-8", "surrogatepass") if tool == "qd-run" else model_bytes(record))
        path = f.name
    try:
        cap = run_main(qd_run, [path, "--backend", "interp", "--compare", "none"])
    finally:
        os.unlink(path)
    lines = [ln for ln in cap.stderr.splitlines() if not ln.startswith("  .. ")]
    return cap.rc, "\n".join(lines).strip().replace(path, "MODEL" + suffix)


# ----- refreshing the pins ----------------------------------------------------------------------------


def message_kind(diagnostic_class: str) -> str:
    """A coarser class: operator and op names blanked too (long runs meet one class per operator)."""
    kind = re.sub(r"\b[A-Z][A-Z0-9_]{2,}\b", "OP", diagnostic_class)
    return re.sub(r"\b(?:qnn|qint|nn|quant|arith|linalg|tensor|func)\.[a-z_0-9]+", "op", kind)


def _run_fuzzer(module: str, out: Path, args: list[str]) -> None:
    subprocess.run([sys.executable, "-m", module, "--pins", str(out), "--quiet", *args], cwd=ROOT, check=False)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz.pin", description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=None, help="cases per fuzzer (default: their short modes)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rewrite", action="store_true", help="re-pin every stored message from the current code")
    p.add_argument("--from", dest="sources", type=Path, nargs="*", default=None,
                   help="merge these --pins outputs instead of running the fuzzers")
    p.add_argument("--new-kinds-only", action="store_true",
                   help="add only classes of a message kind (operator names blanked) not pinned yet "
                        "(for the many classes of long runs)")
    p.add_argument("--only", choices=("ir.jsonl", "models.jsonl", "onnx.jsonl"), nargs="*", default=None,
                   help="refresh only these pin files (with --from: e.g. a `tests.fuzz.onnx_models --pins` output)")
    args = p.parse_args(argv)
    sources = args.sources
    with tempfile.TemporaryDirectory() as tmp:
        if sources is None:
            sources = []
            runs = [("tests.fuzz.ir", []), ("tests.fuzz.models", ["--corpus", "zoo"]),
                    ("tests.fuzz.models", ["--corpus", "ops"]), ("tests.fuzz.models", ["--corpus", "float"]),
                    ("tests.fuzz.onnx_models", [])]
            for module, extra in runs:
                out = Path(tmp) / f"{module}-{len(sources)}.jsonl"
                cases = [] if args.cases is None else ["--cases", str(args.cases)]
                _run_fuzzer(module, out, ["--seed", str(args.seed), *cases, *extra])
                sources.append(out)
        new = [r for path in sources for r in read_pins(path)]
    added = 0
    for path in (PINNED / "ir.jsonl", PINNED / "models.jsonl", PINNED / "onnx.jsonl"):
        if args.only is not None and path.name not in args.only:
            continue
        records = {r["class"]: r for r in read_pins(path)}
        kinds = {message_kind(c) for c in records}
        for r in new:
            if pin_file(r["tool"]) == path and r["class"] not in records:
                if args.new_kinds_only and message_kind(r["class"]) in kinds:
                    continue
                records[r["class"]] = r
                kinds.add(message_kind(r["class"]))
                added += 1
        kept = []
        for r in records.values():
            rc, message = replay(r)
            if rc != 2 or len(message.splitlines()) != 1:
                continue  # no longer refused with one line (fixed, or now an accepted input)
            if args.rewrite or message == r["message"]:
                from tests.fuzz.harness import diagnostic_class

                r = {**r, "message": message, "class": diagnostic_class(message)}
                kept.append(r)
        _write_pins(path, list({r["class"]: r for r in kept}.values()))
        print(f"{path.relative_to(ROOT)}: {len(kept)} pinned classes")
    print(f"{added} new classes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
