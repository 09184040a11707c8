"""Round-trip models through qd-export and check them in LiteRT; print per-model results and counts.

    .venv/bin/python tools/export_roundtrip.py PATH... [--samples N] [--no-float]

PATH is a .tflite / .onnx file or a directory (searched recursively).
- quantized .tflite: qd-import -> qd-export; the exported model's outputs against the original's,
  LiteRT BUILTIN_REF and the default (XNNPACK) interpreter, on NAME_heldout_q.npz samples when
  there are some, else seeded random inputs over the whole storage range;
- NAME_float.tflite with NAME_calib.npz: qd-quantize's defaults -> qd-export; BUILTIN_REF against
  the reference interpreter on the module, on NAME_heldout.npz (or the calibration) samples;
- .onnx: imported (onnxruntime profile) and set to the tflite profile (qd-run --rounding tflite)
  -> qd-export; BUILTIN_REF against the reference interpreter (the verdict), and XNNPACK against
  its litert profile (reported).
Each model is `exact` (0 differing elements), `mismatch` (counts given), `refused` (the exporter's
one-line diagnostic), `skipped` (the importer or qd-quantize cannot take it) or `error` (anything
else: a bug to look at).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from qdialect.dialects.qnn import set_rounding  # noqa: E402
from qdialect.exporter import TFLiteExportError, export_tflite  # noqa: E402
from qdialect.interpreter import run_module  # noqa: E402
from tests.tflite_writer import run_tflite  # noqa: E402
from tvm_bridge.run_cli import _entry_signature, make_inputs  # noqa: E402


def _diff(a_list, b_list) -> tuple[int, int]:
    bad = total = 0
    for a, b in zip(a_list, b_list, strict=True):
        total += a.size
        bad += a.size if a.shape != b.shape else int(np.count_nonzero(a.astype(np.float64) != b.astype(np.float64)))
    return bad, total


def _random(module, n: int) -> list[list[np.ndarray]]:
    _, in_values, _ = _entry_signature(module)
    return [make_inputs(in_values, seed) for seed in range(n)]


def _npz_samples(path: Path, n: int) -> list[list[np.ndarray]] | None:
    if not path.exists():
        return None
    with np.load(path) as d:
        keys = sorted(d.files, key=lambda k: int(k.rsplit("_", 1)[1]))
        return [[d[k][i] for k in keys] for i in range(min(n, d[keys[0]].shape[0]))]


def quantized_tflite(path: Path, n: int) -> str:
    from qdialect.importer import import_tflite_file

    module = import_tflite_file(path)
    data = export_tflite(module)
    samples = _npz_samples(path.with_name(path.stem + "_heldout_q.npz"), n) or _random(module, n)
    original = path.read_bytes()
    parts = []
    for ref in (True, False):
        bad = total = 0
        for s in samples:
            b, t = _diff(run_tflite(original, s, reference=ref), run_tflite(data, s, reference=ref))
            bad, total = bad + b, total + t
        parts.append(f"{'BUILTIN_REF' if ref else 'XNNPACK'} {bad}/{total} differ")
    return ("exact" if all(p.startswith(("BUILTIN_REF 0/", "XNNPACK 0/")) for p in parts) else "mismatch") + \
        ": " + ", ".join(parts)


def float_tflite(path: Path, n: int) -> str:
    from qdialect.importer.tflite_float import import_tflite_float_file
    from transforms.quantizer.flow import quantize_float_module, samples_from_npz
    from transforms.quantizer.strategy import load_strategy

    stem = path.stem[: -len("_float")]
    fm = import_tflite_float_file(path)
    shapes = [list(a.type.get_shape()) for a in next(iter(fm.ops)).body.block.args]
    with np.load(path.with_name(f"{stem}_calib.npz")) as d:
        calib = samples_from_npz(dict(d), shapes)
    held_path = path.with_name(f"{stem}_heldout.npz")
    if held_path.exists():
        with np.load(held_path) as d:
            held = samples_from_npz(dict(d), shapes)[:n]
    else:
        held = calib[:n]
    module = quantize_float_module(fm, calib, load_strategy("int8")).module
    data = export_tflite(module)
    bad = total = xbad = 0
    for s in held:
        b, t = _diff(run_module(module, s), run_tflite(data, s, reference=True))
        bad, total = bad + b, total + t
        xbad += _diff(run_module(module, s, rounding="litert"), run_tflite(data, s, reference=False))[0]
    return (f"{'exact' if bad == xbad == 0 else 'mismatch'}: BUILTIN_REF vs interpreter {bad}/{total} differ, "
            f"XNNPACK vs interpreter (litert) {xbad}/{total} differ")


def onnx_model(path: Path, n: int) -> str:
    from qdialect.importer.onnx import import_onnx_file

    module = import_onnx_file(path, profile="onnxruntime")
    set_rounding(module, "tflite")
    data = export_tflite(module)
    bad = total = xbad = 0
    for s in _random(module, n):
        b, t = _diff(run_module(module, s), run_tflite(data, s, reference=True))
        bad, total = bad + b, total + t
        xbad += _diff(run_module(module, s, rounding="litert"), run_tflite(data, s, reference=False))[0]
    # (XNNPACK against the interpreter's litert profile is reported, the verdict is BUILTIN_REF's)
    return (f"{'exact' if bad == 0 else 'mismatch'}: BUILTIN_REF vs interpreter {bad}/{total} differ "
            f"(XNNPACK vs interpreter (litert) {xbad}/{total})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--no-float", action="store_true", help="skip the float models (qd-quantize is slow)")
    args = ap.parse_args(argv)
    files = []
    for p in args.paths:
        files += sorted(p.rglob("*")) if p.is_dir() else [p]
    counts: Counter = Counter()
    for f in files:
        if f.suffix == ".onnx" and "float" not in f.stem:
            kind, run = "onnx", onnx_model
        elif f.suffix == ".tflite" and f.stem.endswith("_float"):
            if args.no_float or not f.with_name(f.stem[: -len("_float")] + "_calib.npz").exists():
                continue
            kind, run = "float", float_tflite
        elif f.suffix == ".tflite":
            kind, run = "tflite", quantized_tflite
        else:
            continue
        t = time.time()
        try:
            with np.errstate(all="ignore"):
                result = run(f, args.samples)
        except TFLiteExportError as e:
            result = f"refused: {' '.join(str(e).split())}"
        except ValueError as e:  # the importer or qd-quantize cannot take the model: not qd-export's
            if type(e).__name__ not in ("TFLiteImportError", "OnnxImportError", "QuantizeError"):
                result = f"error: {type(e).__name__}: {' '.join(str(e).split())[:300]}"
            else:
                result = f"skipped: {type(e).__name__}: {' '.join(str(e).split())[:200]}"
        except Exception as e:  # noqa: BLE001 - reported, counted, the sweep goes on
            result = f"error: {type(e).__name__}: {' '.join(str(e).split())[:300]}"
        status = result.split(":", 1)[0]
        counts[(kind, status)] += 1
        print(f"{f} [{kind}] {result} ({time.time() - t:.1f} s)", flush=True)
    print("summary: " + ", ".join(f"{k} {s} {c}" for (k, s), c in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
