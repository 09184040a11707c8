"""A cache of compiled models on disk: the same model compiled again loads in milliseconds.

Building a model with TVM costs seconds (the TIR passes, then LLVM making machine
code); a compiled model is a shared library (`export_library`) that `dlopen` loads
in about a millisecond.  `compile_module` looks here first and stores what it builds.

    $QDIALECT_CACHE_DIR            where entries live (default $XDG_CACHE_HOME/qdialect,
                                   else ~/.cache/qdialect)
    QDIALECT_CACHE=0               no cache: every compile builds, nothing is written

An entry is `<key>.so` (the library) and `<key>.json` (what the library needs beside
it: the number of outputs, the library's sha256; for the fused form, tvm_bridge/fused.py,
`"form": "fused"`, the inputs' and outputs' shapes and dtypes, and the sha256 of
`<key>.npz`, the constants the fused function takes after its outputs).  The key hashes everything the
machine code depends on: the lowered (L3) module's text, the entry, the kernel
flavor, the target string, TVM's version, qdialect's version, the source of the
bridge that translates L3 to Relax (so an edited bridge never reuses an old build) and
the build's tuning variables (`BUILD_ENV`: the parallel thresholds, the requantization
pairs).
Writes are atomic (a temporary file in the same directory, then `os.replace`; the
JSON, written last, commits the entry); an entry that does not load, or whose
library is not the one its JSON names, is removed and rebuilt, never a crash.

An entry built from a module *before* lowering (`compile.compile_unlowered`, qd-run) is
named by `unlowered_key` instead: that module's text, or what determines it (qd-run: its run
key), and the source of everything under qdialect/, transforms/ and tvm_bridge/; it is found
without lowering or printing the module, and stored without printing the lowered one.

`<run key>.run` names an entry by qd-run's model file and options, with what qd-run prints
and needs besides the library (tvm_bridge/fast_run.py): a run of the same model again
loads it without importing xDSL, qdialect or TVM's compiler.

`stats` counts hits, misses, stores and rebuilt (corrupt) entries in this process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

#: this process's cache traffic: {"hits", "misses", "stores", "corrupt"}
stats = {"hits": 0, "misses": 0, "stores": 0, "corrupt": 0}

_FORMAT = 3  # bump when an entry's layout changes (3: the fused function's `threads` argument)


def enabled() -> bool:
    """False when QDIALECT_CACHE is 0 (or off / no / false)."""
    return os.environ.get("QDIALECT_CACHE", "1").strip().lower() not in ("0", "off", "no", "false")


def cache_dir() -> Path:
    """Where entries live: $QDIALECT_CACHE_DIR, else $XDG_CACHE_HOME/qdialect, else ~/.cache/qdialect."""
    explicit = os.environ.get("QDIALECT_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "qdialect"


_bridge_digest: str | None = None


def _bridge_source_digest() -> str:
    """sha256 of the bridge's Python sources (tvm_bridge/*.py): what turns L3 into Relax."""
    global _bridge_digest
    if _bridge_digest is None:
        h = hashlib.sha256()
        for path in sorted(Path(__file__).resolve().parent.glob("*.py")):
            h.update(path.name.encode())
            h.update(path.read_bytes())
        _bridge_digest = h.hexdigest()
    return _bridge_digest


def _versions() -> str:
    import importlib.metadata

    import tvm

    try:
        ours = importlib.metadata.version("qdialect")
    except importlib.metadata.PackageNotFoundError:
        ours = "unknown"
    return f"tvm {tvm.__version__}; qdialect {ours}; format {_FORMAT}"


#: environment variables read when a model is built that change the code it gets (the parallel
#: thresholds of tvm_bridge/vnni.py and schedule.py, the requantization pairs of epilogue.py, the
#: AMX tile kernels of amx.py):
#: their values are part of every key, so a build under other values is another entry
BUILD_ENV = ("QDIALECT_DOT_PARALLEL_MIN_MACS", "QDIALECT_FUSED_PARALLEL_MIN_MACS", "QDIALECT_PARALLEL_MIN_WORK",
             "QDIALECT_REQUANT_PAIRS", "QDIALECT_FUSED_LAUNCH", "QDIALECT_FUSED_LAUNCH_MIN_MACS",
             "QDIALECT_FUSED_PARTS_MIN_CALLS", "QDIALECT_VNNI_MIXED", "QDIALECT_AMX", "QDIALECT_AMX_MIN_MACS",
             "QDIALECT_VNNI_ROWS", "QDIALECT_VNNI_TAILS",
             "QDIALECT_VNNI_BLOCK_MAJOR", "QDIALECT_VNNI_BLOCKS_OUTER", "QDIALECT_VNNI_PREFETCH",
             "QDIALECT_CHAIN_TILES")


def build_env() -> str:
    return ";".join(f"{k}={os.environ.get(k, '').strip()}" for k in BUILD_ENV)


def key(module_text: str, target: str, *parts: str) -> str:
    """The entry's name: sha256 over the lowered module's text, the target string, the
    versions, the bridge's source, the BUILD_ENV variables and any further `parts` (entry
    name, kernel flavor)."""
    h = hashlib.sha256()
    for part in (_versions(), _bridge_source_digest(), build_env(), target, *parts):
        h.update(part.encode())
        h.update(b"\0")
    h.update(module_text.encode())
    return h.hexdigest()[:40]


_code_digest: str | None = None


def _code_source_digest() -> str:
    """sha256 of every Python source under qdialect/, transforms/ and tvm_bridge/: the code
    that imports, lowers and translates a model."""
    global _code_digest
    if _code_digest is None:
        root = Path(__file__).resolve().parent.parent
        h = hashlib.sha256()
        for package in ("qdialect", "transforms", "tvm_bridge"):
            for path in sorted((root / package).rglob("*.py")):
                h.update(str(path.relative_to(root)).encode())
                h.update(path.read_bytes())
        _code_digest = h.hexdigest()
    return _code_digest


def unlowered_key(identity: str, target: str, *parts: str) -> str:
    """The name of an entry built from a module *before* lowering (`compile.compile_unlowered`):
    sha256 over `identity` (the module's text, or anything that determines it, such as
    qd-run's run key: the model file's bytes and its import options), the target, the
    versions, the source of all the code that lowers and translates it (`_code_source_digest`),
    the BUILD_ENV variables and further `parts` (entry, form, kernel flavor).  Such an entry is
    found without lowering, or even printing, the module; the same model compiled from its L3
    form (`key`) is another entry."""
    h = hashlib.sha256()
    for part in ("unlowered", _versions(), _code_source_digest(), build_env(), target, *parts):
        h.update(part.encode())
        h.update(b"\0")
    h.update(identity.encode())
    return h.hexdigest()[:40]


def _paths(k: str) -> tuple[Path, Path]:
    d = cache_dir()
    return d / f"{k}.so", d / f"{k}.json"


def _constants_path(k: str) -> Path:
    return cache_dir() / f"{k}.npz"


def load_constants(k: str, meta: dict) -> list | None:
    """The fused form's constants of entry `k` (in order), or None when they are missing or
    not the ones its JSON names.  Needs only numpy (qd-run's cached path calls it)."""
    import numpy as np

    path = _constants_path(k)
    try:
        if _file_sha256(path) != meta.get("constants_sha256"):
            return None
        with np.load(path, allow_pickle=False) as data:
            return [data[f"c{i}"] for i in range(len(data.files))]
    except (OSError, ValueError, KeyError):
        return None


def _file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _discard(*paths: Path) -> None:
    for p in paths:
        try:
            p.unlink()
        except OSError:
            pass


def load(k: str, count: bool = True):
    """(loaded library, metadata dict, library path) for entry `k`, or None when there is
    none or it is damaged (a damaged entry is removed, counted in `stats["corrupt"]`).
    `count`: add this look-up to `stats` (not for the load that follows a store)."""
    lib_path, meta_path = _paths(k)
    try:
        meta = json.loads(meta_path.read_text())
    except FileNotFoundError:
        stats["misses"] += count
        return None
    except (OSError, ValueError):
        meta = None
    try:
        if not isinstance(meta, dict) or meta.get("format") != _FORMAT or _file_sha256(lib_path) != meta.get("sha256"):
            raise ValueError("damaged entry")
        import tvm

        if meta.get("form") == "fused":
            constants = load_constants(k, meta)
            if constants is None:
                raise ValueError("damaged constants")
            meta["constants"] = constants
        with stderr_filtered("Warning: Scope Loaded:"):
            library = tvm.runtime.load_module(str(lib_path))
    except Exception:  # noqa: BLE001 - any damage (missing .so, wrong hash, dlopen refusal): rebuild
        stats["corrupt"] += 1
        stats["misses"] += count
        _discard(lib_path, meta_path, _constants_path(k))
        return None
    stats["hits"] += count
    return library, meta, lib_path


def store(k: str, executable, meta: dict, constants=None) -> Path | None:
    """Export `executable` (a VM executable or the fused form's runtime module) as entry `k`
    with `meta` (JSON-able) and, for the fused form, its `constants` (numpy arrays, in
    order); returns the library's path, or None when the entry cannot be made (the
    directory cannot be written, the export fails): the build is still usable, the VM then
    makes its machine code itself."""
    import numpy as np

    lib_path, meta_path = _paths(k)
    tmp_lib = lib_path.with_name(f"{k}.{os.getpid()}.tmp.so")
    tmp_meta = meta_path.with_name(f"{k}.{os.getpid()}.tmp.json")
    tmp_consts = meta_path.with_name(f"{k}.{os.getpid()}.tmp.npz")
    try:
        lib_path.parent.mkdir(parents=True, exist_ok=True)
        with stderr_filtered("Warning: Scope Saving:"):
            executable.export_library(str(tmp_lib))
        meta = dict(meta, format=_FORMAT, sha256=_file_sha256(tmp_lib))
        if constants is not None:
            with open(tmp_consts, "wb") as f:
                np.savez(f, **{f"c{i}": c for i, c in enumerate(constants)})
            meta["constants_sha256"] = _file_sha256(tmp_consts)
            os.replace(tmp_consts, _constants_path(k))
        tmp_meta.write_text(json.dumps(meta))
        os.replace(tmp_lib, lib_path)
        os.replace(tmp_meta, meta_path)  # the entry exists from here on
    except Exception:  # noqa: BLE001 - an unwritable directory, no C compiler to link with: no entry
        _discard(tmp_lib, tmp_meta, tmp_consts)
        return None
    stats["stores"] += 1
    return lib_path


def clear() -> None:
    """Remove every entry (the directory itself stays)."""
    d = cache_dir()
    if d.is_dir():
        for p in d.iterdir():
            if p.suffix in (".so", ".json", ".npz", ".alias", ".run"):  # (.alias: until session 19)
                _discard(p)


def copy_library(src: Path, dst: str) -> None:
    """Copy a cached library to `dst` (CompiledModel.export_library of a model loaded from the cache)."""
    shutil.copyfile(src, dst)


@contextlib.contextmanager
def stderr_filtered(noise: str):
    """Drop lines containing `noise` from what C++ code writes to file descriptor 2."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            kept = [ln for ln in tmp.read().decode(errors="replace").splitlines(keepends=True) if noise not in ln]
            if kept:
                sys.stderr.write("".join(kept))
