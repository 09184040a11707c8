"""The host CPU as an LLVM cpu name TVM accepts, from /proc/cpuinfo's flags.

TVM 0.27 takes `{"kind": "llvm", "mcpu": "native"}` without complaint and then
compiles for LLVM's generic x86-64 (it logs one line and drops every AVX feature),
so the target names a real CPU instead: the oldest named CPU with every instruction set
the kernels use that the flags show (`cpu_name`).  `QDIALECT_TARGET_CPU=<name>` overrides it
(`host_cpu`), e.g. `haswell` to build and run the AVX2 kernels on an AVX-512 machine;
`machine_cpu` ignores the override (what this machine can run).

Only the instruction sets the kernels choose between matter (tvm_bridge/kernels.py):
AVX2 (`vpmaddwd`), AVX-512BW, AVX-512 VNNI (`vpdpbusd`), AMX-int8.  The name is
chosen by vendor and flags; where /proc/cpuinfo cannot be read (not Linux, not x86)
LLVM's own host detection (`llvm_get_system_cpu`) names it.
"""

from __future__ import annotations

import os

class SettingError(ValueError):
    """A QDIALECT_* environment variable set to a value it does not take (the message names the
    variable, its value and what it takes); qd-run reports it as bad input, in one line."""


#: Linux flag names of the instruction sets the kernel choice depends on
KERNEL_FLAGS = ("avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "avx512_bf16", "avx512_fp16",
                "amx_tile", "amx_int8")


def cpu_flags(path: str = "/proc/cpuinfo") -> tuple[str, frozenset[str]]:
    """(vendor id, flags) of the first processor in /proc/cpuinfo; ("", empty) when it
    cannot be read."""
    vendor, flags = "", frozenset()
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "vendor_id" and not vendor:
                    vendor = value.strip()
                elif key == "flags":
                    flags = frozenset(value.split())
                    break
    except OSError:
        pass
    return vendor, flags


def cpu_name(vendor: str, flags: frozenset[str] | set[str]) -> str | None:
    """The LLVM cpu name for an x86 CPU of `vendor` (cpuinfo's vendor_id) with Linux
    cpuinfo `flags`: the oldest named CPU of that vendor with every instruction set the
    flags show of those the kernels use, so the target claims nothing the CPU lacks.
    None without `sse4_2` (not an x86 CPU LLVM can name this way)."""
    f = set(flags)
    if "sse4_2" not in f:
        return None
    amd = "AMD" in vendor or "Hygon" in vendor
    if "amx_int8" in f and "amx_tile" in f:
        return "graniterapids" if "amx_fp16" in f else "sapphirerapids"
    if "avx512f" in f and "avx512bw" in f:
        if amd:
            return "znver5" if "avx512_vp2intersect" in f else "znver4"
        if "avx512_vnni" in f:
            if "avx512_vbmi2" in f and "gfni" in f:
                return "icelake-server"
            return "cooperlake" if "avx512_bf16" in f else "cascadelake"
        return "skylake-avx512"
    if "avx2" in f and "fma" in f and "bmi2" in f:
        if amd:
            if "vaes" in f and "vpclmulqdq" in f:
                return "znver3"
            return "znver2" if "clwb" in f else "znver1"
        if "avx_vnni" in f:
            return "alderlake"
        return "broadwell" if "adx" in f else "haswell"
    if "avx" in f:
        return "btver2" if amd and "movbe" in f else "sandybridge"
    return "x86-64-v2" if "popcnt" in f else "x86-64"


def machine_cpu() -> str:
    """The LLVM cpu name of this machine's CPU (no override)."""
    name = cpu_name(*cpu_flags())
    if name is None:
        import tvm

        name = str(tvm.target.codegen.llvm_get_system_cpu())
    return name


def host_cpu() -> str:
    """The cpu name the host target compiles for: `QDIALECT_TARGET_CPU` if set, else
    `machine_cpu()`.  A name TVM's LLVM does not know is refused with a one-line error
    (TVM would fall back to a generic CPU silently)."""
    override = os.environ.get("QDIALECT_TARGET_CPU", "").strip()
    if not override:
        return machine_cpu()
    if override == "native":
        raise SettingError("QDIALECT_TARGET_CPU=native: TVM 0.27 compiles that for a generic CPU; "
                         "name the CPU (e.g. znver4, haswell) or unset it")
    import tvm

    known = tvm.target.codegen.llvm_get_cpu_archlist(tvm.target.Target({"kind": "llvm"}))
    if override not in known:
        raise SettingError(f"QDIALECT_TARGET_CPU={override}: not a cpu name LLVM knows (e.g. znver4, "
                         f"sapphirerapids, icelake-server, skylake-avx512, haswell, x86-64-v2)")
    return override


def describe() -> str:
    """One line: the cpu name the host target uses (and whether it is overridden), the vendor
    and the flags of KERNEL_FLAGS this CPU has."""
    vendor, flags = cpu_flags()
    name, machine = host_cpu(), machine_cpu()
    shown = " ".join(f for f in KERNEL_FLAGS if f in flags) or "-"
    where = f"{name} (QDIALECT_TARGET_CPU; this machine is {machine})" if name != machine else name
    return f"cpu {where}, {vendor or 'unknown vendor'}, flags: {shown}"


def allow_threads() -> int:
    """Let TVM's pool grow to every CPU this process may use (TVM_NUM_THREADS, unless set):
    call before TVM starts its pool (before the first build); returns that number."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    os.environ.setdefault("TVM_NUM_THREADS", str(usable))
    return int(os.environ["TVM_NUM_THREADS"])


def env_int(name: str, default: int, least: int = 0) -> int:
    """The whole number environment variable `name` holds (`default` when unset or empty);
    SettingError (a ValueError) naming the variable and its value when it is not a whole number
    >= `least`."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise SettingError(f"{name}={text!r}: not a whole number (unset it for the default, {default})") from None
    if value < least:
        raise SettingError(f"{name}={value}: must be >= {least} (unset it for the default, {default})")
    return value


#: the thread count set last by `set_threads` (None: not set; `current_threads` then names
#: TVM's default); the fused models (tvm_bridge/fused.py) read it on every call to choose
#: between each kernel's parallel and serial form
THREADS: list = [None]


def configure_pool(get_global_func=None) -> int:
    """Configure TVM's pool for `current_threads()` threads, unpinned (as `set_threads` does),
    once per process unless `set_threads` already did; the thread count.  A model's first
    call does it (tvm_bridge/fused.py's FusedRunner, the VM's set-up): left to itself, TVM
    0.27 starts a pool of its own size and affinity, and a fused model's one-launch form then
    hands every launch to it (mobilenetv2_tiny 34 us a call against 23 with the pool set, one
    thread, Zen 5).  `get_global_func`: tvm_ffi's (the cached path runs without `import tvm`)."""
    request_amx()  # (tile kernels need it before their first instruction; nothing without AMX)
    if not POOL_SET[0]:
        if get_global_func is None:
            import tvm_ffi

            get_global_func = tvm_ffi.get_global_func
        _configure(current_threads(), get_global_func)
    return current_threads()


def _configure(n: int, get_global_func) -> None:
    """TVM's pool at `n` threads, unpinned (affinity mode 0), TVM_NUM_THREADS raised to `n`
    first (it is read when TVM's pool starts)."""
    if int(os.environ.get("TVM_NUM_THREADS", "0") or 0) < n:
        os.environ["TVM_NUM_THREADS"] = str(n)
    get_global_func("runtime.config_threadpool")(0, n)
    POOL_SET[0] = True


#: whether Linux gave this process the AMX tile registers: None until `request_amx` asked
AMX_GRANTED: list = [None]
#: x86-64 Linux: the arch_prctl system call, its request for an extended state, the tile data
_SYS_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA = 158, 0x1023, 18


def request_amx() -> bool:
    """Ask Linux, once per process, for the AMX tile data registers where this CPU has AMX
    (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`: a process that runs a tile
    instruction without asking dies of SIGILL).  The permission covers every thread of the
    process.  True when granted; False without AMX (nothing asked), off x86-64 Linux, or
    when Linux refuses."""
    if AMX_GRANTED[0] is None:
        AMX_GRANTED[0] = False
        import platform
        import sys

        if sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64") \
                and "amx_tile" in cpu_flags()[1]:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            AMX_GRANTED[0] = libc.syscall(_SYS_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA) == 0
    return AMX_GRANTED[0]


#: whether this process configured TVM's pool (set_threads or configure_pool)
POOL_SET: list = [False]


def current_threads() -> int:
    """The threads TVM's pool runs our kernels on: the count of the last `set_threads`, else
    TVM 0.27's default (TVM_NUM_THREADS, else OMP_NUM_THREADS, else half the CPUs this
    process may use; at least 1).
    A pool configured behind our back (`runtime.config_threadpool` called directly) is not
    seen: the fused models then take the serial or parallel forms of the count they know
    (the results are the same; only the speed differs)."""
    if THREADS[0] is None:
        usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        count = usable // 2
        for name in ("TVM_NUM_THREADS", "OMP_NUM_THREADS"):
            text = os.environ.get(name, "").strip()
            if text.isdigit() and int(text) > 0:  # (TVM ignores what it cannot read, so do we)
                count = int(text)
                break
        THREADS[0] = max(1, count)
    return THREADS[0]


def set_threads(n: int) -> None:
    """Run TVM's CPU kernels on `n` threads from now on (the parallel loops of the kernels:
    tvm_bridge/vnni.py's `parallel_rows`, tvm_bridge/schedule.py's PARALLEL_MIN_WORK).

    TVM 0.27 caps its pool at `TVM_NUM_THREADS` (default: half the logical CPUs, one on
    a 2-core machine without SMT), read when the pool starts, so the variable is raised
    to the CPUs this process may use (and at least `n`) first; that takes effect only
    before TVM starts its pool (its first build does), so a process that wants more than
    TVM's default calls `allow_threads()` before it builds anything (bench/latency.py does);
    the pool is then configured with affinity mode 0 (no pinning: mode 1, "big cores",
    put both threads of a 2-thread pool on one core here, no faster than one thread).

    Use more than one thread only where the cores are free: TVM's pool splits a parallel
    loop statically and waits for every thread, so a worker the OS has descheduled holds
    the whole kernel up (full MobileNetV2 on the shared 2-core machine under load ~11:
    3.5 ms best at 1 thread, 11.9 ms at 2; XNNPACK's pool, whose caller takes over the
    work of a late thread, 3.4 and 3.6 ms)."""
    import tvm

    _configure(n, tvm.get_global_func)
    THREADS[0] = int(n)
