"""qd-run's cached path: a model run again starts in a fraction of a second.

A cold `qd-run MODEL` imports xDSL and qdialect, imports the model, prints the module for
the cache's keys and imports all of TVM (its compiler included: about 1 s of CPU alone).
When the same model file is run again with the same options, none of that is needed:

* `run_key` names the run from the model file's bytes and the options that change the
  build (the ONNX profile / rounding, batch, --target, the host CPU name of
  tvm_bridge/cpu.py, QDIALECT_TARGET_CPU, QDIALECT_FUSED and cache.BUILD_ENV), the versions of TVM, TVM FFI and qdialect,
  and the source of qdialect/, transforms/ and tvm_bridge/ -- without importing any of them;
* `<run key>.run` (JSON, in the cache directory) names the compiled-model entry
  (tvm_bridge/cache.py) and holds what qd-run prints and needs besides the library: the
  entry function's name, its compute-op count, each input's shape, dtype (unsigned edges
  included, qdialect/io_types.py) and random range, the outputs' dtypes, the target text,
  and whether the build was quick (LLVM at opt-level 0, qd-run's `--opt`: such an entry
  serves only runs that would build quick, run_cli._run_cached);
* `load` opens the entry's library with TVM's runtime only (libtvm_runtime.so and the
  tvm_ffi package: about 0.2 s CPU instead of `import tvm`'s 1-3 s) and `RuntimeModel`
  runs it on the Relax VM the library carries (`vm_load_executable`, the same VM
  `relax.VirtualMachine` makes, with its default pooled allocator), or, for the fused
  form (tvm_bridge/fused.py), calls its one function with the entry's constants.

Anything missing, stale or damaged (no `.run`, a `.run` that does not parse or name an
entry, a library whose sha256 is not its JSON's, a library that does not load) makes
`load` return None and qd-run takes the cold path, which rebuilds the entry and writes the
`.run` again.  Nothing here imports xDSL, qdialect or `tvm`.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import json
import os
from pathlib import Path

from tvm_bridge import cache, fused

_RUN_FORMAT = 1  # bump when a `.run` file's layout changes


def _versions() -> str:
    """The installed TVM, TVM FFI and qdialect distributions, by their dist-info directories'
    names (which carry the versions) beside the tvm package: one directory listing, where
    importlib.metadata scans every distribution (0.1 s here)."""
    spec = importlib.util.find_spec("tvm")
    if spec is None or spec.origin is None:
        return "no tvm"
    site = Path(spec.origin).parent.parent
    try:
        names = os.listdir(site)
    except OSError:
        return "unknown"
    wanted = ("apache_tvm", "apache_tvm_ffi", "qdialect")
    return " ".join(sorted(n for n in names if n.endswith(".dist-info") and n.split("-")[0].lower() in wanted))


def run_key(model_bytes: bytes, **options) -> str | None:
    """The `.run` file's name for a model file's bytes and qd-run's build options (keyword
    arguments: anything that changes what is built or printed besides samples and seed);
    None when the host CPU cannot be named without TVM (not Linux x86: no fast path)."""
    from tvm_bridge.cpu import cpu_flags, cpu_name

    machine = cpu_name(*cpu_flags())
    if machine is None:
        return None
    h = hashlib.sha256()
    parts = [f"run {_RUN_FORMAT}", f"format {cache._FORMAT}", _versions(), cache._code_source_digest(), f"cpu {machine}",
             f"QDIALECT_TARGET_CPU={os.environ.get('QDIALECT_TARGET_CPU', '').strip()}", f"fused {fused.enabled()}",
             cache.build_env()]
    parts += [f"{k}={options[k]!r}" for k in sorted(options)]
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    h.update(hashlib.sha256(model_bytes).digest())
    return h.hexdigest()[:40]


def remember(rk: str, meta: dict) -> None:
    """Write `<rk>.run` (atomically; a failed write only loses the shortcut)."""
    path = cache.cache_dir() / f"{rk}.run"
    tmp = path.with_name(f"{rk}.{os.getpid()}.tmp.run")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        body = dict(meta, run_format=_RUN_FORMAT)
        tmp.write_text(json.dumps(dict(body, digest=_digest(body))))
        os.replace(tmp, path)
    except OSError:
        cache._discard(tmp)


def recall(rk: str) -> dict | None:
    """The `.run` file's contents, or None (none, unreadable, another layout)."""
    try:
        meta = json.loads((cache.cache_dir() / f"{rk}.run").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("run_format") != _RUN_FORMAT or not isinstance(meta.get("entry"), str):
        return None
    digest = meta.pop("digest", None)
    if digest != _digest(meta):  # edited or damaged in a way JSON still parses: the cold path rebuilds
        return None
    return meta


def _digest(body: dict) -> str:
    """sha256 of a `.run` file's fields (canonical JSON), kept in the file itself."""
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


_runtime_loaded = False


def _load_runtime() -> None:
    """TVM's runtime library, loaded as `import tvm` loads it (RTLD_GLOBAL: the model's
    library links against its symbols), without the compiler or TVM's Python package."""
    global _runtime_loaded
    if not _runtime_loaded:
        import tvm_ffi  # noqa: F401 - loads libtvm_ffi.so, which libtvm_runtime.so links against

        spec = importlib.util.find_spec("tvm")  # finds the package without running it
        if spec is None or spec.origin is None:
            raise OSError("TVM is not installed")
        ctypes.CDLL(str(Path(spec.origin).parent / "lib" / "libtvm_runtime.so"), mode=ctypes.RTLD_GLOBAL)
        _runtime_loaded = True


def load(entry: str):
    """(RuntimeModel, entry metadata) for compiled-model entry `entry`, or None when it is
    missing or damaged (the caller then builds as usual; the cold path removes and rebuilds
    a damaged entry).  Counts a hit in `cache.stats` on success."""
    if len(entry) != 40 or any(c not in "0123456789abcdef" for c in entry):
        return None
    lib_path, meta_path = cache._paths(entry)
    try:
        meta = json.loads(meta_path.read_text())
        if not isinstance(meta, dict) or meta.get("format") != cache._FORMAT \
                or cache._file_sha256(lib_path) != meta.get("sha256") or not isinstance(meta.get("n_outputs"), int):
            return None
        _load_runtime()
        import tvm_ffi

        fused = None
        if meta.get("form") == "fused":
            constants = cache.load_constants(entry, meta)
            if constants is None:
                return None
            fused = (meta["fused"], constants)
        with cache.stderr_filtered("Warning: Scope Loaded:"):
            library = tvm_ffi.load_module(str(lib_path))
        model = RuntimeModel(library, meta["n_outputs"], fused)
    except Exception:  # noqa: BLE001 - unreadable, damaged, refused by dlopen: the cold path rebuilds
        return None
    cache.stats["hits"] += 1
    return model, meta


def _aligned_empty(shape, dtype):
    """An uninitialized array whose data starts on a 64-byte boundary (as
    tvm_bridge/common.py's, which imports xDSL)."""
    import math

    import numpy as np

    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    raw = np.empty(nbytes + 64, np.uint8)
    offset = (-raw.ctypes.data) % 64
    return raw[offset:offset + nbytes].view(dtype).reshape(shape)


class RuntimeModel:
    """A cached library's `main` on the Relax VM, or its fused function (tvm_bridge/fused.py),
    called with numpy arrays: a list of new numpy arrays (in L3's bits: unsigned outputs come
    back signed, as from `CompiledModel` without declared dtypes; qd-run views them in the
    declared dtypes)."""

    def __init__(self, library, n_outputs: int, fused=None):
        """`library`: the loaded shared library (tvm_ffi Module); `n_outputs`: main's results;
        `fused`: (spec, constants) when the library is the fused form."""
        from tvm_bridge.cpu import request_amx

        request_amx()  # (a build with AMX tile kernels runs only once Linux gave the tiles)
        self.library = library
        self.n_outputs = n_outputs
        self._fused = None
        if fused is not None:
            from tvm_bridge.fused import FusedRunner, entry_functions

            self._fused = FusedRunner(entry_functions(library, fused[0]), *fused)
            return
        vm = library["vm_load_executable"]()
        vm["vm_initialization"](1, 0, 2)  # CPU (kDLCPU 1), device 0, pooled allocator (relax.VirtualMachine's)
        self._vm, self._main = vm, vm["main"]
        self._slots: dict[int, tuple] = {}  # input index -> ((shape, dtype), its buffer, the TVM tensor on it)

    def __call__(self, *inputs):
        """Run `main` on `inputs` (copied into 64-byte aligned buffers kept per input, as
        CompiledModel does: refilled while shape and dtype stay the same)."""
        if self._fused is not None:
            return self._fused(*inputs)
        import numpy as np
        import tvm_ffi

        args = []
        for i, x in enumerate(inputs):
            x = np.asarray(x)
            slot = self._slots.get(i)
            if slot is None or slot[0] != (x.shape, x.dtype):  # a buffer kept per input, as CompiledModel's
                bits = x.dtype
                if bits.kind == "u":  # unsigned storage travels through L3 as signless bits
                    bits = np.dtype(f"int{bits.itemsize * 8}")
                buf = _aligned_empty(x.shape, bits)
                slot = self._slots[i] = ((x.shape, x.dtype), buf.view(x.dtype), tvm_ffi.from_dlpack(buf))
            slot[1][...] = x
            args.append(slot[2])
        out = self._main(*args)
        if self.n_outputs == 1:
            return [np.from_dlpack(out).copy()]
        item = tvm_ffi.get_global_func("ffi.ArrayGetItem")
        return [np.from_dlpack(item(out, k)).copy() for k in range(self.n_outputs)]
