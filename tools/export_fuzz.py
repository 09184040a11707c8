"""Differential fuzz of qd-export: mutated .tflite models (tests/fuzz/models.py's mutations of the
zoo's quantized models and the importer tests' one-operator models) that qd-import accepts and
LiteRT runs are exported; the export must be refused with TFLiteExportError or give, element for
element, what the mutated original gives in LiteRT (BUILTIN_REF).

    .venv/bin/python tools/export_fuzz.py [--cases 300] [--seed 0]

LiteRT may crash on a malformed model, so cases run in a worker process that is restarted (the
case counted as `litert-crash`) when it dies.  Prints counts and every mismatch or exporter error.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _case(data: bytes) -> tuple[str, str]:
    import numpy as np

    from qdialect.exporter import TFLiteExportError, export_tflite
    from qdialect.importer.tflite import TFLiteImportError, import_tflite
    from tests.tflite_writer import run_tflite
    from tvm_bridge.run_cli import _entry_signature, make_inputs

    try:
        with np.errstate(all="ignore"):
            module = import_tflite(data)
    except TFLiteImportError:
        return "import-refused", ""
    _, in_values, _ = _entry_signature(module)
    try:
        sample = make_inputs(in_values, 0)
        want = run_tflite(data, sample, reference=True)
    except Exception:  # noqa: BLE001 - LiteRT refuses the mutated original: nothing to compare
        return "litert-refused", ""
    try:
        exported = export_tflite(module)
    except TFLiteExportError as e:
        return "export-refused", str(e)[:160]
    except Exception as e:  # noqa: BLE001 - a bug in the exporter
        return "export-error", f"{type(e).__name__}: {e}"[:300]
    try:
        got = run_tflite(exported, sample, reference=True)
    except Exception as e:  # noqa: BLE001
        return "exported-fails", f"{type(e).__name__}: {e}"[:300]
    bad = sum(int(np.count_nonzero(a != b)) if a.shape == b.shape else a.size for a, b in zip(want, got))
    return ("exact", "") if bad == 0 and len(want) == len(got) else ("mismatch", f"{bad} elements differ")


def _worker(conn):
    while True:
        data = conn.recv()
        if data is None:
            return
        conn.send(_case(data))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save", type=Path, help="write mismatching / failing cases here")
    args = ap.parse_args(argv)
    from tests.fuzz.models import corpus, field_index, group_fields, mutate

    seeds = [(n, d) for n, d in corpus("all") if not n.endswith("_float.tflite")]
    groups = {n: group_fields(field_index(d)) for n, d in seeds}
    rng = random.Random(args.seed)
    ctx = mp.get_context("spawn")
    counts: Counter = Counter()
    parent = proc = None

    def start():
        nonlocal parent, proc
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(child,), daemon=True)
        proc.start()

    start()
    for k in range(args.cases):
        name, seed = rng.choice(seeds)
        data, how = mutate(rng, seed, groups[name])
        parent.send(data)
        if parent.poll(120):
            try:
                status, detail = parent.recv()
            except EOFError:
                status, detail = "litert-crash", ""
        else:
            status, detail = "timeout", ""
        if not proc.is_alive() or status in ("litert-crash", "timeout"):
            proc.kill()
            status = "litert-crash" if status != "timeout" else status
            start()
        counts[status] += 1
        if status in ("mismatch", "export-error", "exported-fails"):
            print(f"case {k} ({name}, {how}): {status}: {detail}", flush=True)
            if args.save:
                args.save.mkdir(parents=True, exist_ok=True)
                (args.save / f"case{k}.tflite").write_bytes(data)
    parent.send(None)
    print("summary: " + ", ".join(f"{s} {c}" for s, c in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
