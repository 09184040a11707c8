#!/usr/bin/env python3
"""Compare `qnn-partition{target=ethos-u55|ethos-u65|ethos-u85}` with Arm's Vela 5.2, op by op.

    .venv/bin/python tools/vela_agreement.py [MODEL.tflite | DIR ...] [--config ethos-u55-128 ...]

For every .tflite (default: the int8 models of models/zoo, models/transformers
and models/transformers/masked) and every accelerator configuration (default
ethos-u55-128, ethos-u65-256, ethos-u85-256) it runs

- Vela 5.2 (the `vela` command line, default compiler core, run in-process
  through `ethosu.vela.vela.main`) and reads the optimised
  .tflite it writes: every NPU region becomes one `ethos-u` custom operator,
  every operator Vela leaves to the CPU is copied unchanged (same builtin, same
  output tensor name).  An operator of the input is *on the CPU* when an
  operator with its builtin and first output tensor name is in Vela's output;
  otherwise Vela took it (or removed it as a no-op, which also runs nothing on
  the CPU).  Vela's region count is the number of `ethos-u` custom operators.
- our TFLite importer, with each handler call recorded: the qnn / nn ops a
  TFLite operator imports as (one or several: FULLY_CONNECTED on a rank-3
  input is reshape + fully_connected + reshape, SPLIT is several slices, a
  float island's DEQUANTIZE is an nn op) are tagged with its index; operators
  the importer folds (shape arithmetic, constant inputs) import as no op and
  are counted as `folded`, not compared.  Then qnn-partition with the matching
  target.  A TFLite operator is *offloaded* when all its ops are in regions,
  *kept* when all stay on the host, *split* otherwise (a disagreement either way).

Per model and configuration it prints: ops compared, agreed, we-offload-Vela-refuses,
we-keep-Vela-runs, split, folded, and the region counts (ours / Vela's), then
every disagreement with our remark.  `--json FILE` writes the same as data.

Vela is a test dependency (`pip install -e '.[test]'`); it is run as a CLI,
never imported by qdialect itself.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CONFIGS = ("ethos-u55-128", "ethos-u65-256", "ethos-u85-256")
DEFAULT_DIRS = ("models/zoo", "models/transformers", "models/transformers/masked")


def target_for(config: str) -> str:
    """The qnn-partition target of a Vela accelerator configuration (ethos-u65-256 -> ethos-u65)."""
    return "-".join(config.split("-")[:2])


def default_models() -> list[Path]:
    """The quantized .tflite files of the shipped model directories (float exports left out)."""
    out: list[Path] = []
    for d in DEFAULT_DIRS:
        out += sorted(p for p in (ROOT / d).glob("*.tflite") if not p.stem.endswith("_float"))
    return out


# ----- reading a .tflite ---------------------------------------------------------------------


@dataclass(frozen=True)
class TFLiteOp:
    index: int
    name: str  # builtin name, or CUSTOM:<code>
    output: str  # name of the first output tensor


def read_ops(data: bytes) -> list[TFLiteOp]:
    """The operators of subgraph 0, with Vela's generated flatbuffer schema (no TensorFlow)."""
    from ethosu.vela.tflite.BuiltinOperator import BuiltinOperator
    from ethosu.vela.tflite.Model import Model

    names = {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_")}
    model = Model.GetRootAsModel(data, 0)
    graph = model.Subgraphs(0)
    ops = []
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        code = model.OperatorCodes(op.OpcodeIndex())
        name = names.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()), "?")
        if name == "CUSTOM":
            name = "CUSTOM:" + (code.CustomCode() or b"").decode()
        output = graph.Tensors(op.Outputs(0)).Name().decode() if op.OutputsLength() else ""
        ops.append(TFLiteOp(i, name, output))
    return ops


# ----- Vela ----------------------------------------------------------------------------------


@dataclass
class VelaPlacement:
    cpu: set[int]  # indices of the input's operators Vela leaves to the CPU
    regions: int  # ethos-u custom operators in Vela's output
    reasons: dict[str, str] = field(default_factory=dict)  # output tensor name -> Vela's reason


class VelaError(RuntimeError):
    pass


def _run_vela(argv: list[str]) -> tuple[int, str]:
    """Vela's command line, run in this process (`ethosu.vela.vela.main`, what the `vela`
    script calls: 100x faster than a subprocess per model); its exit status and output.

    The compiler core writes to the process's file descriptors 1 and 2 directly, so both are
    redirected to a temporary file for the call."""
    import io
    import os
    from contextlib import redirect_stderr, redirect_stdout

    from ethosu.vela import vela

    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    status: int | None | str = 0
    with tempfile.TemporaryFile(mode="w+") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        text = io.StringIO()
        try:
            with redirect_stdout(text), redirect_stderr(text):
                status = vela.main(argv)
        except SystemExit as e:  # argparse errors
            status = e.code if isinstance(e.code, int) else 2
        except Exception as e:  # noqa: BLE001 - Vela's own failure, reported as one line
            status = 1
            text.write(f"{type(e).__name__}: {e}\n")
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        log.seek(0)
        return int(status or 0), log.read() + text.getvalue()


def vela_reasons(text: str) -> dict[str, str]:
    """Vela's "Warning (supported operators) operator: OP, ofm: 'NAME' / Reason: ..." lines:
    first output tensor name -> the reason (and the constraint it quotes), one line."""
    reasons: dict[str, str] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Warning (supported operators) operator:") and "ofm: '" in line:
            name = line.split("ofm: '", 1)[1].rsplit("'", 1)[0]
            why = []
            for follow in lines[i + 1 : i + 3]:
                if not follow.strip() or follow.startswith("Warning"):
                    break
                why.append(follow.strip().removeprefix("Reason: "))
            reasons.setdefault(name, " / ".join(why))
    return reasons


def vela_placement(path: Path, config: str) -> VelaPlacement:
    """Run `vela NETWORK --accelerator-config CONFIG` on `path`; which operators stay on the CPU."""
    original = read_ops(path.read_bytes())
    with tempfile.TemporaryDirectory(prefix="vela_") as out:
        status, text = _run_vela([str(path), "--accelerator-config", config, "--output-dir", out])
        produced = Path(out) / f"{path.stem}_vela.tflite"
        if status != 0 or not produced.exists():
            tail = text.strip().splitlines()[-1:] or ["no output"]
            raise VelaError(f"vela failed on {path.name} for {config}: {tail[0]}")
        result = read_ops(produced.read_bytes())
    left = Counter((op.name, op.output) for op in result if not op.name.startswith("CUSTOM:"))
    cpu = set()
    for op in original:
        key = (op.name, op.output)
        if left[key] > 0:
            left[key] -= 1
            cpu.add(op.index)
    regions = sum(1 for op in result if op.name == "CUSTOM:ethos-u")
    return VelaPlacement(cpu, regions, vela_reasons(text))


# ----- ours ----------------------------------------------------------------------------------


@contextlib.contextmanager
def _tagging_handlers(tags: dict):
    """While active, every op an importer handler adds is mapped to the TFLite operator index."""
    from qdialect.importer import tflite as importer
    from qdialect.importer.tflite_float import FLOAT_HANDLERS

    saved = []

    def wrap(table, name, handler):
        def tagged(imp, op):
            before = set(imp.block.ops)
            handler(imp, op)
            for new in imp.block.ops:
                if new not in before:
                    tags[new] = op.index

        saved.append((table, name, handler))
        table[name] = tagged

    for table in (importer._HANDLERS, FLOAT_HANDLERS):  # noqa: SLF001 - the importer's own table
        for name, handler in list(table.items()):
            wrap(table, name, handler)
    try:
        yield
    finally:
        for table, name, handler in saved:
            table[name] = handler


@dataclass
class OurPlacement:
    status: dict[int, str]  # TFLite op index -> offloaded | kept | split (folded ops absent)
    remarks: dict[int, list[str]]  # TFLite op index -> remarks of its host ops
    regions: int


def our_placement(path: Path, target: str) -> OurPlacement:
    """Import `path`, partition it for `target`, and place each TFLite operator."""
    from qdialect.importer.tflite import import_tflite
    from transforms.partition import TARGET_ATTR, is_constant, partition
    from transforms.targets import load_target

    tags: dict = {}
    with _tagging_handlers(tags):
        module = import_tflite(path.read_bytes(), name=path.stem)
    result = partition(module, target)
    where: dict[int, set[bool]] = {}
    for op, index in tags.items():
        if is_constant(op) or op.parent is None:
            continue
        fn = op.parent_op()
        while fn is not None and fn.name != "func.func":
            fn = fn.parent_op()
        where.setdefault(index, set()).add(fn is not None and TARGET_ATTR in fn.attributes)
    status = {
        i: ("offloaded" if s == {True} else "kept" if s == {False} else "split") for i, s in where.items()
    }
    target_table = load_target(target)
    remarks: dict[int, list[str]] = {}
    for op, index in tags.items():
        if status.get(index) in ("kept", "split") and not is_constant(op) and op.parent is not None:
            reason = target_table.reason(op)
            text = f"{op.name}: {reason[1]} [{reason[0]}]" if reason else f"{op.name}: supported, split off (convexity)"
            remarks.setdefault(index, []).append(text)
    return OurPlacement(status, remarks, len(result.regions))


# ----- comparison ----------------------------------------------------------------------------


@dataclass
class Agreement:
    model: str
    config: str
    ops: int = 0
    agreed: int = 0
    we_offload_vela_refuses: int = 0
    we_keep_vela_runs: int = 0
    split: int = 0
    folded: int = 0
    our_regions: int = 0
    vela_regions: int = 0
    disagreements: list[str] = field(default_factory=list)
    both_refuse: list[str] = field(default_factory=list)  # host ops: our remark next to Vela's reason
    error: str = ""

    @property
    def exact(self) -> bool:
        return not self.error and self.agreed == self.ops and self.our_regions == self.vela_regions


def compare(path: Path, config: str) -> Agreement:
    """Our placement of every operator of `path` against Vela's, for one configuration."""
    a = Agreement(path.name, config)
    try:
        vela = vela_placement(path, config)
        ours = our_placement(path, target_for(config))
    except Exception as e:  # noqa: BLE001 - one line per model, the run goes on
        a.error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        return a
    ops = read_ops(path.read_bytes())
    a.our_regions, a.vela_regions = ours.regions, vela.regions
    for op in ops:
        state = ours.status.get(op.index)
        if state is None:
            a.folded += 1
            continue
        a.ops += 1
        vela_npu = op.index not in vela.cpu
        label = f"op {op.index} {op.name} -> '{op.output}'"
        if state == "split":
            a.split += 1
            a.disagreements.append(f"{label}: split between regions and host; Vela {'NPU' if vela_npu else 'CPU'}")
        elif (state == "offloaded") == vela_npu:
            a.agreed += 1
            if not vela_npu:
                ours_why = "; ".join(ours.remarks.get(op.index, [])) or "(no remark)"
                a.both_refuse.append(
                    f"{op.name}: ours: {ours_why} | Vela: {vela.reasons.get(op.output, 'no reason printed')}"
                )
        elif state == "offloaded":
            a.we_offload_vela_refuses += 1
            why = vela.reasons.get(op.output, "no reason printed")
            a.disagreements.append(f"{label}: we offload, Vela keeps it on the CPU ({why})")
        else:
            a.we_keep_vela_runs += 1
            why = "; ".join(ours.remarks.get(op.index, [])) or "(no remark)"
            a.disagreements.append(f"{label}: Vela runs it, we keep it: {why}")
    return a


HEADER = f"{'model':34} {'config':14} {'ops':>4} {'agree':>5} {'offl!':>5} {'keep!':>5} {'split':>5} {'fold':>4} {'regions ours/vela':>17}"


def row(a: Agreement) -> str:
    if a.error:
        return f"{a.model:34} {a.config:14} error: {a.error}"
    return (
        f"{a.model:34} {a.config:14} {a.ops:4} {a.agreed:5} {a.we_offload_vela_refuses:5} "
        f"{a.we_keep_vela_runs:5} {a.split:5} {a.folded:4} {a.our_regions:>8} / {a.vela_regions:<6}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", type=Path, help=".tflite files or directories (default: the zoo)")
    ap.add_argument("--config", action="append", choices=CONFIGS, help="Vela accelerator configuration(s)")
    ap.add_argument("--json", type=Path, help="write every result as JSON")
    ap.add_argument("-q", "--quiet", action="store_true", help="only the table, not each disagreement")
    ap.add_argument("--reasons", action="store_true",
                    help="after the table, each kind of op both keep on the host: our remark and Vela's reason")
    ap.add_argument("--probes", action="store_true", help="also the single-op probes of tools/vela_probes.py")
    args = ap.parse_args(argv)
    paths: list[Path] = []
    for p in args.models or default_models():
        if p.is_dir():
            paths += sorted(q for q in p.glob("*.tflite") if not q.stem.endswith("_float"))
        elif p.is_file():
            with open(p, "rb") as f:
                head = f.read(8)
            if head[4:8] != b"TFL3":  # Vela would read offsets out of whatever bytes it is given
                print(f"vela_agreement: {p}: not a TFLite flatbuffer (no 'TFL3' identifier)", file=sys.stderr)
                return 2
            paths.append(p)
        else:
            print(f"vela_agreement: {p}: no such file or directory", file=sys.stderr)
            return 2
    if args.probes:
        from tools.vela_probes import write_probes

        probe_dir = Path(tempfile.mkdtemp(prefix="vela_probes_"))
        paths += write_probes(probe_dir)
    configs = args.config or list(CONFIGS)
    results = []
    print(HEADER)
    for config in configs:
        total = Agreement("TOTAL", config)
        for p in paths:
            a = compare(p, config)
            results.append(a)
            print(row(a))
            if not args.quiet:
                for d in a.disagreements:
                    print(f"    {d}")
            for k in ("ops", "agreed", "we_offload_vela_refuses", "we_keep_vela_runs", "split", "folded",
                      "our_regions", "vela_regions"):
                setattr(total, k, getattr(total, k) + getattr(a, k))
        print(row(total))
        print()
    if args.reasons:
        seen: dict[str, int] = {}
        for a in results:
            for line in a.both_refuse:
                key = f"{a.config.split('-')[1][:3]}  {line}"
                seen[key] = seen.get(key, 0) + 1
        print("Kept on the host by both (count, config, TFLite op: our remark | Vela's reason):")
        for key, n in sorted(seen.items()):
            print(f"  {n:3} x {key}")
    if args.json:
        args.json.write_text(json.dumps([asdict(a) for a in results], indent=1))
    failed = [a for a in results if a.error]
    for a in failed:
        print(f"vela_agreement: {a.model} ({a.config}): {a.error}", file=sys.stderr)
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
