"""Native AMX code run on a CPU without AMX: the LLVM IR of a build for a CPU with AMX, its
tile intrinsics renamed to the functions of amx_emu.c (Intel's descriptions of the
instructions, in C), compiled by TVM's own LLVM and linked with them into a library TVM
loads.  Everything else in the library is the native build's code, so the pointers, strides,
tile numbers and configuration bytes the tile instructions get are exactly the native
kernel's.  The build is for this machine's CPU plus `amx-tile` and `amx-int8` (a build for
Sapphire Rapids could use instructions this CPU lacks elsewhere).
"""

from __future__ import annotations

import ctypes
import re
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: the intrinsics tvm_bridge/amx.py emits (and tilezero), in amx_emu.c's counter order
INSTRUCTIONS = ("ldtilecfg", "tileloadd64", "tilestored64", "tdpbusd", "tilerelease", "tilezero")


def target() -> dict:
    """The build target: this machine's CPU with the AMX features."""
    from tvm_bridge.cpu import machine_cpu

    return {"kind": "llvm", "mcpu": machine_cpu(), "mattr": ["+amx-tile", "+amx-int8"]}


def _patched(ll: str) -> tuple[str, int]:
    """(`ll` with each tile intrinsic a call of its emulation, the calls renamed)."""
    renamed = 0
    for name in INSTRUCTIONS:
        ll, n = re.subn(rf"@llvm\.x86\.{name}\b", f"@qd_emu_{name}", ll)
        renamed += n
    # (`immarg` is for intrinsics only: LLVM's verifier refuses it on a plain declaration)
    ll = re.sub(r"declare [^\n]*@qd_emu_[^\n]*", lambda m: m.group(0).replace(" immarg", ""), ll)
    return ll, renamed


def emulated_library(modules: list, workdir: Path, tiles: bool = True) -> Path:
    """A shared library of the LLVM `modules` (TVM runtime modules of a build for `target()`)
    with their tile instructions emulated; AssertionError when they have none and `tiles`
    (none expected otherwise)."""
    import tvm
    from tvm.support import cc

    workdir.mkdir(parents=True, exist_ok=True)
    objects = [workdir / "amx_emu.o"]
    subprocess.run(["cc", "-O2", "-fPIC", "-c", str(HERE / "amx_emu.c"), "-o", str(objects[0])], check=True)
    total = 0
    for k, module in enumerate(modules):
        ll, renamed = _patched(module.inspect_source("ll"))
        total += renamed
        path = workdir / f"part{k}.ll"
        path.write_text(ll)
        obj = workdir / f"part{k}.o"
        tvm.runtime.load_module(str(path)).write_to_file(str(obj))  # (TVM's LLVM parses its own IR)
        objects.append(obj)
    assert (total > 0) == tiles, "no tile instruction in the build" if tiles else "tile instructions in the build"
    library = workdir / "emulated.so"
    cc.create_shared(str(library), [str(o) for o in objects])
    return library


def modules_of(executable) -> list:
    """The LLVM modules of a build: a fused model's parts, or the one module of a kernel or of
    a fused model of one entry."""
    if hasattr(executable, "modules"):  # tvm_bridge.fused.PartsLibrary
        return list(executable.modules)
    return [getattr(executable, "mod", executable)]


def counts(library: Path) -> dict:
    """How many of each tile instruction the library's emulation has run."""
    array = (ctypes.c_long * len(INSTRUCTIONS)).in_dll(ctypes.CDLL(str(library)), "qd_emu_amx_count")
    return dict(zip(INSTRUCTIONS, list(array)))


def fault(library: Path) -> str:
    """The first fault the library's emulation met (a configuration or operand shapes the
    manual faults on: the instruction then did nothing), or "" when none."""
    first = ctypes.c_char.in_dll(ctypes.CDLL(str(library)), "qd_emu_fault")
    return ctypes.c_char_p(ctypes.addressof(first)).value.decode()
