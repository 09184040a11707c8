"""Compile cost in instructions: the stages of bench/compile_time.py counted by callgrind.

    python bench/compile_instructions.py [--blocks 10] [--tree DIR ...]

On a shared machine the wall-clock times of `bench/compile_time.py` move by a third
from one minute to the next; the number of instructions a stage executes does not
(two runs agree to about half a percent).  This runs the same chain of conv blocks,
the same stages (parse + verify, qnn-canonicalize, qnn-decompose,
qnn-lower-to-linalg, Relax translation with the CPU's dot-product kernels) under
valgrind's callgrind, and prints each stage's instructions per L1 op, in millions.
With several `--tree`s (checkouts of this repository, whose code the measured
process imports through PYTHONPATH) it measures each in turn: an A/B comparison of
code changes that noise cannot blur.

How: the child process (this file with `--child`) imports everything and runs the
pipeline twice uninstrumented (first-use caches and lazy imports, which
`compile_time.py`'s fastest-of-N also leaves out), then tells the parent through a
FIFO; the parent switches callgrind's instrumentation on and, after each stage,
has callgrind dump and zero its counters (`callgrind_control`), reading the
stage's total from the dump.  Instructions are not time: memory-bound work (the
cyclic garbage collector's traversal) costs more time per instruction than the
rest.  Needs valgrind (Debian package `valgrind`); about a minute per tree at
10 blocks.  Not a test: a benchmark to read.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAGES = ("parse", "qnn-canonicalize", "qnn-decompose", "qnn-lower-to-linalg", "relax translation")


def child(blocks: int, fifo_dir: str) -> None:
    """The measured process (under valgrind): the pipeline, a handshake after each stage."""
    saved = list(sys.path)
    sys.path.insert(0, str(ROOT / "bench"))
    from compile_time import chain

    sys.path[:] = saved  # compile_time puts this checkout first: the code measured is PYTHONPATH's

    from qdialect.diagnostics import parse_module
    from transforms.canonicalize import QnnCanonicalizePass
    from transforms.decompose import QnnDecomposePass
    from transforms.lower_to_linalg import QnnLowerToLinalgPass
    from transforms.opt import QdOptMain
    from tvm_bridge.compile import host_target
    from tvm_bridge.translate import translate
    from tvm_bridge.kernels import target_flavor
    from tvm_bridge.vnni import clear_caches

    dot = target_flavor(host_target())
    ctx = QdOptMain(args=[]).ctx
    text = chain(blocks)

    def run(done) -> None:
        module = parse_module(ctx, text)
        done()
        for p in (QnnCanonicalizePass(), QnnDecomposePass(), QnnLowerToLinalgPass()):
            p.apply(ctx, module)
            done()
        clear_caches()  # as compile_time.py: every run builds its own kernels
        translate(module, dot=dot)
        done()

    for _ in range(2):
        run(lambda: None)
    with open(os.path.join(fifo_dir, "req"), "w") as req, open(os.path.join(fifo_dir, "ack")) as ack:
        def handshake() -> None:
            req.write("stage\n")
            req.flush()
            ack.readline()

        handshake()  # ready: the parent switches the instrumentation on
        run(handshake)


def measure(tree: str, blocks: int) -> dict[str, float]:
    """Millions of instructions per L1 op of each stage, with the code of checkout `tree`."""
    work = tempfile.mkdtemp(prefix="qd-instr-")
    try:
        for name in ("req", "ack"):
            os.mkfifo(os.path.join(work, name))
        out = os.path.join(work, "callgrind.out")
        env = dict(os.environ, PYTHONPATH=tree)
        log = os.path.join(work, "stderr")
        with open(log, "w") as err:  # (a file: a pipe read only at the end could fill up)
            proc = subprocess.Popen(
                ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
                 sys.executable, str(Path(__file__).resolve()), "--child", str(blocks), work],
                env=env, stdout=subprocess.DEVNULL, stderr=err)
        counts = []
        done = threading.Event()
        threading.Thread(target=_unblock_when_gone, args=(proc, work, done), daemon=True).start()
        try:
            with open(os.path.join(work, "req")) as req, open(os.path.join(work, "ack"), "w") as ack:
                pid = str(proc.pid)
                if req.readline():
                    _control("-i", "on", pid)
                    _control("-z", pid)
                    ack.write("go\n")
                    ack.flush()
                    for _ in STAGES:
                        if not req.readline():
                            break
                        before = set(glob.glob(out + "*"))
                        _control("-d", pid)
                        dump = sorted(set(glob.glob(out + "*")) - before)[-1]
                        counts.append(_total(dump))
                        ack.write("go\n")
                        ack.flush()
        except BrokenPipeError:
            pass  # the measured process is gone: reported below
        finally:
            done.set()
        proc.wait(timeout=_TIMEOUT)
        if len(counts) != len(STAGES):
            raise SystemExit(f"the measured process stopped early (exit {proc.returncode}):\n"
                             + Path(log).read_text()[-2000:])
        n_ops = 4 * blocks  # a block: weights, bias, conv2d, add
        return {stage: c / n_ops / 1e6 for stage, c in zip(STAGES, counts)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _unblock_when_gone(proc, work: str, done: threading.Event) -> None:
    """Once the measured process has ended, open the far ends of the FIFOs again and again
    until the parent is done, so that its `open` of either returns (its reads then see
    the end, its writes a broken pipe) instead of waiting for a process that is gone."""
    proc.wait()
    while not done.wait(0.2):
        for name, mode in (("req", os.O_WRONLY), ("ack", os.O_RDONLY)):
            try:
                os.close(os.open(os.path.join(work, name), mode | os.O_NONBLOCK))
            except OSError:
                pass  # nobody waits on that end


_TIMEOUT = 900  # seconds for any one step: callgrind_control waits forever where it cannot attach


def _control(*args: str) -> None:
    try:
        subprocess.run(["callgrind_control", *args], check=True, capture_output=True, timeout=_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"callgrind_control {' '.join(args)} did not answer in {_TIMEOUT} s "
                         "(can it attach to the measured process here?)") from None


def _total(dump: str) -> int:
    text = Path(dump).read_text()
    m = re.search(r"^(?:summary|totals):\s*(\d+)", text, re.M)
    if m is None:
        raise SystemExit(f"no instruction total in callgrind's dump {dump}")
    return int(m.group(1))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        child(int(argv[1]), argv[2])
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--blocks", type=int, default=10)
    p.add_argument("--tree", action="append", help="a checkout to measure (repeatable; default: this one)")
    args = p.parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("error: needs valgrind and callgrind_control (Debian package valgrind)", file=sys.stderr)
        return 2
    trees = args.tree or [str(ROOT)]
    print(f"{args.blocks} blocks, {4 * args.blocks} L1 ops; millions of instructions per L1 op")
    print(f"{'tree':<24} | " + " | ".join(f"{s:>19}" for s in STAGES) + f" | {'total':>6}")
    for tree in trees:
        per_op = measure(str(Path(tree).resolve()), args.blocks)
        print(f"{tree[-24:]:<24} | " + " | ".join(f"{v:19.3f}" for v in per_op.values())
              + f" | {sum(per_op.values()):6.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
