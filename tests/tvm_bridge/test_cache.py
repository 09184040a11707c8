"""The compiled-model cache (tvm_bridge/cache.py): a second compile of the same L3 module
loads the stored library instead of building (counted in `cache.stats` and checked by
making `build` fail, never by timing), runs the same and still matches LiteRT's reference
kernels; a damaged entry is rebuilt; QDIALECT_CACHE=0 builds every time and writes nothing.
qd-run's cached path (tvm_bridge/fast_run.py), in a child process: no xDSL, qdialect or `tvm`
imported, the same report and outputs as the cold run (uint8 edges), a miss on other model
bytes or options, a damaged entry or `.run` file taking the cold path (rebuilt, same outputs).

Each test points QDIALECT_CACHE_DIR at its own directory (tests/conftest.py already keeps
the whole session away from the user's cache)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tvm_bridge.compile as compile_mod
from transforms.pipelines import lower_to_l3
from tvm_bridge import cache
from tvm_bridge.compile import compile_module
from tvm_bridge.run_cli import _entry_signature, litert_run, load_module, make_inputs
from tvm_bridge.run_cli import main as qd_run

MODEL = Path(__file__).resolve().parents[2] / "models" / "zoo" / "mlp_act.tflite"


@pytest.fixture(scope="module")
def lowered():
    """(L3 module of mlp_act, two input samples, LiteRT BUILTIN_REF's outputs for them)."""
    module = load_module(MODEL, batch=1)
    samples = [make_inputs(_entry_signature(module)[1], seed) for seed in range(2)]
    theirs = litert_run(MODEL.read_bytes(), samples, reference=True)
    lower_to_l3(module)
    return module, samples, theirs


@pytest.fixture(scope="module")
def stored_entry(lowered, tmp_path_factory):
    """The bytes of mlp_act's cache entry ({file name: bytes}), built once for the module."""
    import os

    saved = os.environ.get("QDIALECT_CACHE_DIR")
    os.environ["QDIALECT_CACHE_DIR"] = str(directory := tmp_path_factory.mktemp("entry"))
    try:
        compile_module(lowered[0], cache=True)
    finally:
        os.environ["QDIALECT_CACHE_DIR"] = saved if saved is not None else ""
        if saved is None:
            del os.environ["QDIALECT_CACHE_DIR"]
    return {p.name: p.read_bytes() for p in directory.iterdir()}


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("QDIALECT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("QDIALECT_CACHE", raising=False)
    for k in cache.stats:
        monkeypatch.setitem(cache.stats, k, 0)
    return tmp_path / "cache"


def _outputs(model, samples):
    return [[o.copy() for o in model(*s)] for s in samples]


def _no_build(*_args, **_kwargs):
    raise AssertionError("built although the cache holds this module")


def _assert_matches_litert(ours, theirs):
    assert len(ours) == len(theirs) and all(len(o) == len(t) for o, t in zip(ours, theirs))
    for o, t in zip(ours, theirs):
        for a, b in zip(o, t):
            assert np.count_nonzero(a.astype(np.int64) != b.reshape(a.shape).astype(np.int64)) == 0


def test_hit_skips_the_build_and_runs_the_same(lowered, cache_dir, monkeypatch):
    module, samples, theirs = lowered
    first = compile_module(module)
    assert cache.stats == {"hits": 0, "misses": 1, "stores": 1, "corrupt": 0}
    assert len(list(cache_dir.glob("*.so"))) == 1 and len(list(cache_dir.glob("*.json"))) == 1
    cold = _outputs(first, samples)
    _assert_matches_litert(cold, theirs)

    monkeypatch.setattr(compile_mod, "build", _no_build)
    monkeypatch.setattr(compile_mod, "translate", _no_build)
    again = compile_module(module)
    assert cache.stats["hits"] == 1 and again.executable is None
    warm = _outputs(again, samples)
    assert [len(c) for c in cold] == [len(w) for w in warm] and len(cold) == len(warm) == len(samples)
    assert all(np.array_equal(a, b) for c, w in zip(cold, warm) for a, b in zip(c, w))

    exported = cache_dir.parent / "exported.so"  # a cached model still exports its library
    again.export_library(str(exported))
    assert exported.read_bytes() == next(cache_dir.glob("*.so")).read_bytes()


def test_key_changes_with_the_module_and_the_target(lowered, cache_dir):
    module, _, _ = lowered
    text = str(module)
    assert cache.key(text, "llvm -mcpu=znver4") == cache.key(text, "llvm -mcpu=znver4")
    assert cache.key(text, "llvm -mcpu=znver4") != cache.key(text, "llvm -mcpu=skylake-avx512")
    assert cache.key(text, "llvm -mcpu=znver4") != cache.key(text + " ", "llvm -mcpu=znver4")
    assert cache.key(text, "t", "entry main") != cache.key(text, "t", "entry other")


@pytest.mark.parametrize("text, message", [("lots", "not a whole number"), ("-5", "must be >= 0")])
def test_bad_build_variable_is_named(monkeypatch, text, message):
    """A tuning variable that is not a whole number >= 0 is refused by name and value (it
    is read when the kernels' module is imported), never a bare int() traceback."""
    from tvm_bridge.cpu import env_int

    monkeypatch.setenv("QDIALECT_DOT_PARALLEL_MIN_MACS", text)
    with pytest.raises(ValueError, match=f"QDIALECT_DOT_PARALLEL_MIN_MACS=.*{message}"):
        env_int("QDIALECT_DOT_PARALLEL_MIN_MACS", 1 << 23)
    monkeypatch.setenv("QDIALECT_DOT_PARALLEL_MIN_MACS", " ")
    assert env_int("QDIALECT_DOT_PARALLEL_MIN_MACS", 1 << 23) == 1 << 23


@pytest.mark.parametrize("variable", cache.BUILD_ENV)
def test_key_changes_with_the_build_variables(lowered, cache_dir, monkeypatch, variable):
    """A variable that changes the generated code (a parallel threshold, the requantization
    pairs) names another entry: a build under other values is never served the old one."""
    module, _, _ = lowered
    text = str(module)
    monkeypatch.delenv(variable, raising=False)
    before, unlowered_before = cache.key(text, "t"), cache.unlowered_key(text, "t")
    monkeypatch.setenv(variable, "1")
    assert cache.key(text, "t") != before
    assert cache.unlowered_key(text, "t") != unlowered_before


@pytest.mark.parametrize("damage", ["truncated library", "garbage json", "missing library"])
def test_damaged_entry_is_rebuilt(lowered, stored_entry, cache_dir, damage):
    module, samples, theirs = lowered
    cache_dir.mkdir()
    for name, data in stored_entry.items():
        (cache_dir / name).write_bytes(data)
    (lib,), (meta,) = cache_dir.glob("*.so"), cache_dir.glob("*.json")
    # damaged files are new files (as another process would leave them): this process has
    # the library mapped, and rewriting a mapped file in place is a bus error, not a test
    if damage == "truncated library":
        (cache_dir / "damaged").write_bytes(lib.read_bytes()[:1000])
        (cache_dir / "damaged").replace(lib)
    elif damage == "garbage json":
        meta.unlink()
        meta.write_text("{not json")
    else:
        lib.unlink()
    rebuilt = compile_module(module)
    assert cache.stats["corrupt"] == 1 and cache.stats["stores"] == 1 and cache.stats["hits"] == 0
    _assert_matches_litert(_outputs(rebuilt, samples), theirs)
    assert compile_module(module).executable is None  # the rebuilt entry is used next time
    assert cache.stats["hits"] == 1


def test_cache_off_builds_and_writes_nothing(lowered, cache_dir, monkeypatch):
    module, samples, theirs = lowered
    monkeypatch.setenv("QDIALECT_CACHE", "0")
    model = compile_module(module)
    assert model.executable is not None and model.library is None
    assert not cache_dir.exists() and cache.stats == {"hits": 0, "misses": 0, "stores": 0, "corrupt": 0}
    _assert_matches_litert(_outputs(model, samples), theirs)


def test_qd_run_says_when_it_used_the_cache(cache_dir, capsys):
    assert qd_run([str(MODEL), "--compare", "litert-ref"]) == 0
    out = capsys.readouterr().out
    assert "stage      lower to L3" in out and "stage      TVM compile" in out
    assert qd_run([str(MODEL), "--compare", "litert-ref"]) == 0
    out = capsys.readouterr().out  # found by the module before lowering: no lowering either
    assert "stage      TVM (cached)" in out and "lower to L3" not in out and "BIT-EXACT vs LiteRT litert-ref" in out
    assert qd_run([str(MODEL), "--compare", "litert", "--rounding", "litert"]) == 0  # another module: built
    out = capsys.readouterr().out
    assert "stage      TVM compile" in out and "BIT-EXACT vs LiteRT litert" in out


def _unlowered_case():
    """(mlp_act's module before lowering in the litert profile, two samples, XNNPACK's outputs
    for them, a `lower` function, the list of modules it was called with)."""
    from qdialect.dialects.qnn import set_rounding

    module = load_module(MODEL, batch=1)
    set_rounding(module, "litert")
    samples = [make_inputs(_entry_signature(module)[1], seed) for seed in range(2)]
    theirs = litert_run(MODEL.read_bytes(), samples, reference=False)  # XNNPACK: the litert profile
    lowered = []

    def lower(m):
        lowered.append(m)
        m = m.clone()
        lower_to_l3(m)
        return m

    return module, samples, theirs, lower, lowered


def test_unlowered_module_found_without_lowering(cache_dir):
    from tvm_bridge.compile import compile_unlowered

    module, samples, theirs, lower, lowered = _unlowered_case()
    first = compile_unlowered(module, lower)
    again = compile_unlowered(module, lower)
    assert len(lowered) == 1 and again.executable is None and cache.stats["hits"] == 1
    for model in (first, again):
        _assert_matches_litert(_outputs(model, samples), theirs)


def test_unlowered_entry_named_by_identity_prints_no_module(cache_dir, monkeypatch):
    """With `identity` (qd-run's run key) the entry is named by it: neither the module nor its
    lowered form is printed on the way in or out, the second compile loads the first's
    library without lowering, and another identity is another entry."""
    from xdsl.dialects.builtin import ModuleOp

    from tvm_bridge.compile import compile_unlowered

    module, samples, theirs, lower, lowered = _unlowered_case()

    def no_printing(self):
        raise AssertionError("a module was printed to name its cache entry")

    monkeypatch.setattr(ModuleOp, "__str__", no_printing)
    first = compile_unlowered(module, lower, identity="mlp_act litert")
    again = compile_unlowered(module, lower, identity="mlp_act litert")
    assert len(lowered) == 1 and again.executable is None
    assert cache.stats["hits"] == 1 and cache.stats["stores"] == 1
    assert again.library_path == first.library_path
    other = compile_unlowered(module, lower, identity="mlp_act, other options")
    assert len(lowered) == 2 and other.library_path != first.library_path and cache.stats["stores"] == 2
    for model in (first, again, other):
        _assert_matches_litert(_outputs(model, samples), theirs)


def test_unwritable_cache_still_compiles(lowered, tmp_path, monkeypatch):
    module, samples, theirs = lowered
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("QDIALECT_CACHE_DIR", str(blocker / "cache"))
    model = compile_module(module)
    assert model.executable is not None and model.library is None  # built, run by the VM, not stored
    _assert_matches_litert(_outputs(model, samples), theirs)


# ---- qd-run's cached path (tvm_bridge/fast_run.py): no xDSL, no qdialect, no `import tvm` ----

ZOO = MODEL.parent
UINT8 = ZOO / "cnn_small_uint8.tflite"  # uint8 input and output: the declared dtypes must survive

# run in a child process: the exit status, then the top-level packages the process imported
_CHILD = """
import json, sys
sys.argv = ["qd-run", *sys.argv[1:]]
from tvm_bridge.run_cli import main
rc = main()
print("IMPORTED " + json.dumps(sorted({m.split(".")[0] for m, v in sys.modules.items() if v is not None})))
sys.exit(rc)
"""


def _qd_run_child(*argv):
    """(exit status, stdout without the IMPORTED line, stderr, top-level modules imported)."""
    import json
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _CHILD, *map(str, argv)], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2], timeout=600)
    lines = proc.stdout.splitlines()
    imported = [json.loads(ln.split(" ", 1)[1]) for ln in lines if ln.startswith("IMPORTED ")]
    out = "\n".join(ln for ln in lines if not ln.startswith("IMPORTED "))
    return proc.returncode, out, proc.stderr, set(imported[0]) if imported else set()


def _report(out: str) -> tuple[list[str], list[str]]:
    """(the report's lines but the stage timings, the stage names)."""
    lines = out.strip().splitlines()
    return ([ln for ln in lines if not ln.startswith("stage ")],
            [ln.split()[1] + (" " + ln.split()[2] if not ln.split()[2][0].isdigit() else "")
             for ln in lines if ln.startswith("stage ")])


def test_cached_run_imports_no_compiler_and_matches_the_cold_run(cache_dir, tmp_path, capsys):
    cold_npz, fast_npz = tmp_path / "cold.npz", tmp_path / "fast.npz"
    argv = [UINT8, "--samples", "3", "--seed", "5", "--compare", "litert-ref"]
    assert qd_run([*map(str, argv), "--output", str(cold_npz)]) == 0  # cold: imports, lowers, builds
    cold_lines, cold_stages = _report(capsys.readouterr().out)
    assert "import" in cold_stages and "BIT-EXACT" in cold_lines[-1] and len(list(cache_dir.glob("*.run"))) == 1

    rc, out, err, imported = _qd_run_child(*argv, "--output", fast_npz)
    assert rc == 0, err
    fast_lines, fast_stages = _report(out)
    assert fast_stages == ["TVM (cached)", "run (tvm)", "LiteRT litert-ref"] and "fast_run.py" in err
    assert fast_lines == cold_lines  # model, ops, backend (target), outputs' counts, verdict vs BUILTIN_REF
    assert not imported & {"xdsl", "qdialect", "transforms", "tvm", "torch"}, imported & {"xdsl", "qdialect", "tvm"}
    cold, fast = np.load(cold_npz), np.load(fast_npz)
    assert cold.files == fast.files == ["output_0"]
    assert fast["output_0"].dtype == np.uint8 and fast["output_0"].shape[0] == 3  # the declared dtype
    assert np.count_nonzero(cold["output_0"] != fast["output_0"]) == 0

    # --input checked and fed from the entry's signature alone (shape, uint8), still BIT-EXACT
    import json

    (spec,) = json.loads(next(cache_dir.glob("*.run")).read_text())["inputs"]
    assert spec["dtype"] == "|u1"
    x = np.random.default_rng(9).integers(0, 256, size=(2, *spec["shape"])).astype(np.uint8)
    np.savez(tmp_path / "x.npz", input_0=x)
    rc, out, err, imported = _qd_run_child(UINT8, "--input", tmp_path / "x.npz", "--compare", "litert-ref")
    assert rc == 0 and "samples 2" in out and "BIT-EXACT vs LiteRT litert-ref" in out and "xdsl" not in imported, err
    np.savez(tmp_path / "bad.npz", input_0=x.astype(np.int16) - 1)  # -1: not a uint8 value
    rc, out, err, _ = _qd_run_child(UINT8, "--input", tmp_path / "bad.npz")
    assert rc == 2 and "outside uint8 [0, 255]" in err.strip().splitlines()[-1]


_GC_CHILD = """
import gc, json, sys
from tvm_bridge import run_cli
seen = {}
build = run_cli._tvm_runner
def watched(*a, **k):  # the collector's state while the model is built
    seen["collector on while building"] = gc.isenabled()
    return build(*a, **k)
run_cli._tvm_runner = watched
sys.argv = ["qd-run", *sys.argv[1:]]
rc = run_cli.main()
seen.update({"rc": rc, "collector on after": gc.isenabled(), "frozen": gc.get_freeze_count()})
print("GC " + json.dumps(seen))
"""


def test_qd_run_as_a_program_pauses_the_collector_until_the_model_is_ready(cache_dir):
    """qd-run as a program builds with Python's cyclic collector off (the imports and the IR
    live until exit: collecting during them costs a quarter of a second on MobileNetV2) and
    turns it back on, with what it made frozen, before it runs the samples.  Called as a
    function (`main(argv)`) it leaves the collector alone."""
    import gc
    import json
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _GC_CHILD, str(MODEL), "--compare", "litert-ref"],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2], timeout=600)
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("GC ")]
    seen = json.loads(line[3:])
    assert seen["rc"] == 0 and "BIT-EXACT vs LiteRT litert-ref" in proc.stdout, proc.stderr
    assert seen["collector on while building"] is False
    assert seen["collector on after"] is True and seen["frozen"] > 10000
    frozen = gc.get_freeze_count()
    assert qd_run([str(MODEL), "--compare", "none"]) == 0
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_cached_run_misses_on_other_bytes_or_options(cache_dir, tmp_path, capsys):
    from tvm_bridge import fast_run

    data = MODEL.read_bytes()
    base = fast_run.run_key(data, suffix=".tflite", batch=1, rounding=None, target=None)
    assert base == fast_run.run_key(data, suffix=".tflite", batch=1, rounding=None, target=None)
    assert base != fast_run.run_key(data + b"\0", suffix=".tflite", batch=1, rounding=None, target=None)
    for change in ({"batch": 2}, {"rounding": "litert"}, {"target": "llvm -mcpu=haswell"}, {"suffix": ".onnx"}):
        assert base != fast_run.run_key(data, **{**dict(suffix=".tflite", batch=1, rounding=None, target=None),
                                                 **change}), change

    model = tmp_path / "model.tflite"  # one file name, two models: the bytes decide
    model.write_bytes(MODEL.read_bytes())
    assert qd_run([str(model), "--compare", "none"]) == 0
    capsys.readouterr()
    model.write_bytes((ZOO / "cnn_small.tflite").read_bytes())
    assert qd_run([str(model), "--compare", "litert-ref"]) == 0
    out = capsys.readouterr().out
    assert "stage      import" in out and "BIT-EXACT vs LiteRT litert-ref" in out
    assert qd_run([str(model), "--compare", "litert", "--rounding", "litert"]) == 0  # another option: a miss
    out = capsys.readouterr().out
    assert "stage      import" in out and "BIT-EXACT vs LiteRT litert" in out
    assert qd_run([str(model), "--compare", "litert", "--rounding", "litert"]) == 0  # now cached
    out = capsys.readouterr().out
    assert "stage      import" not in out and "stage      TVM (cached)" in out and "BIT-EXACT" in out


@pytest.mark.parametrize("damage", ["truncated library", "garbage run file", "run file naming no entry",
                                    "run file with edited inputs"])
def test_cached_run_with_a_damaged_entry_rebuilds(cache_dir, tmp_path, capsys, damage):
    argv = [str(MODEL), "--samples", "2", "--compare", "litert-ref"]
    assert qd_run([*argv, "--output", str(tmp_path / "cold.npz")]) == 0
    cold_lines, _ = _report(capsys.readouterr().out)
    (run,) = cache_dir.glob("*.run")
    if damage == "truncated library":
        for lib in cache_dir.glob("*.so"):  # a new file, as another process would leave it
            (cache_dir / "damaged").write_bytes(lib.read_bytes()[:1000])
            (cache_dir / "damaged").replace(lib)
    elif damage == "garbage run file":
        run.write_text("{not json")
    elif damage == "run file with edited inputs":  # valid JSON, wrong signature: caught by its digest
        import json as _json
        meta = _json.loads(run.read_text())
        meta["inputs"] = [{"shape": [2, 2]}]
        run.write_text(_json.dumps(meta))
    else:
        run.write_text('{"run_format": 1, "entry": "' + "0" * 40 + '"}')
    assert qd_run([*argv, "--output", str(tmp_path / "again.npz")]) == 0  # the cold path, never a crash
    lines, stages = _report(capsys.readouterr().out)
    assert "import" in stages and lines == cold_lines
    if damage == "truncated library":
        assert "TVM compile" in stages  # rebuilt
    a, b = np.load(tmp_path / "cold.npz"), np.load(tmp_path / "again.npz")
    assert np.count_nonzero(a["output_0"] != b["output_0"]) == 0
    assert qd_run(argv) == 0  # and the next run is the cached one again
    _, stages = _report(capsys.readouterr().out)
    assert stages == ["TVM (cached)", "run (tvm)", "LiteRT litert-ref"]


def _backend(out: str) -> str:
    (line,) = [ln for ln in out.splitlines() if ln.startswith("backend ")]
    return line


def test_few_samples_build_quick_and_a_run_that_wants_the_full_build_gets_it(cache_dir, capsys):
    """`--opt auto` (the default): a run of at most QUICK_MAX_SAMPLES samples and no --bench
    builds quick (LLVM at opt-level 0), still bit-exact against LiteRT's reference kernels;
    its `.run` does not serve a run of more samples, which builds the full one (opt-level 2),
    and the full build then serves the runs of few samples too."""
    import json

    from tvm_bridge.compile import LLVM_OPT_LEVEL, QUICK_OPT_LEVEL
    from tvm_bridge.run_cli import QUICK_MAX_SAMPLES

    assert QUICK_OPT_LEVEL != LLVM_OPT_LEVEL
    assert qd_run([str(MODEL), "--samples", "2", "--compare", "litert-ref"]) == 0
    out = capsys.readouterr().out
    assert f'"opt-level":{QUICK_OPT_LEVEL},' in _backend(out) and "quick build" in _backend(out)
    assert "BIT-EXACT vs LiteRT litert-ref" in out
    (run,) = cache_dir.glob("*.run")
    assert json.loads(run.read_text())["quick"] is True

    assert qd_run([str(MODEL), "--compare", "none"]) == 0  # few samples again: the quick build serves
    out = capsys.readouterr().out
    assert _report(out)[1] == ["TVM (cached)", "run (tvm)"] and "quick build" in _backend(out)

    many = str(QUICK_MAX_SAMPLES + 1)
    assert qd_run([str(MODEL), "--samples", many, "--compare", "litert-ref"]) == 0
    out = capsys.readouterr().out
    assert "TVM compile" in _report(out)[1]  # not served by the quick build: built
    assert f'"opt-level":{LLVM_OPT_LEVEL},' in _backend(out) and "quick build" not in _backend(out)
    assert f"samples {many}" in out and "BIT-EXACT vs LiteRT litert-ref" in out
    assert json.loads(run.read_text())["quick"] is False

    for argv in ([], ["--opt", "quick"], ["--bench", "2"]):  # the full build serves them all
        assert qd_run([str(MODEL), "--compare", "none", *argv]) == 0
        out = capsys.readouterr().out
        assert _report(out)[1][0] == "TVM (cached)", argv
        assert f'"opt-level":{LLVM_OPT_LEVEL},' in _backend(out), argv


@pytest.mark.parametrize("argv", [["--bench", "2"], ["--opt", "full"]])
def test_bench_and_opt_full_build_the_fast_kernels(cache_dir, capsys, argv):
    from tvm_bridge.compile import LLVM_OPT_LEVEL

    assert qd_run([str(MODEL), "--compare", "litert-ref", *argv]) == 0
    out = capsys.readouterr().out
    assert f'"opt-level":{LLVM_OPT_LEVEL},' in _backend(out) and "quick build" not in _backend(out)
    assert "BIT-EXACT vs LiteRT litert-ref" in out


def test_quick_target_keeps_an_opt_level_the_caller_names():
    from tvm_bridge.compile import QUICK_OPT_LEVEL, as_target, quick_target

    assert quick_target(None).attrs["opt-level"] == QUICK_OPT_LEVEL
    assert quick_target(None).attrs["mcpu"] == as_target(None).attrs["mcpu"]
    assert quick_target("llvm -mcpu=haswell").attrs["opt-level"] == QUICK_OPT_LEVEL
    assert quick_target("llvm -mcpu=haswell -opt-level=3").attrs["opt-level"] == 3
    assert quick_target({"kind": "llvm", "mcpu": "haswell", "opt-level": 1}).attrs["opt-level"] == 1
    given = as_target("llvm -mcpu=haswell")
    assert quick_target(given) is given


def test_compile_module_with_the_quick_target_matches_litert(lowered, cache_dir):
    """The Python form of qd-run's quick build: `compile_module(l3, target=quick_target())`."""
    from tvm_bridge.compile import QUICK_OPT_LEVEL, quick_target

    module, samples, theirs = lowered
    model = compile_module(module, target=quick_target())
    assert model.target.attrs["opt-level"] == QUICK_OPT_LEVEL
    _assert_matches_litert(_outputs(model, samples), theirs)
