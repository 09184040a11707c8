"""The fused form (tvm_bridge/fused.py): a zoo model as one TIR function, no Relax VM.

Every small zoo model takes the fused path and is bit-exact with LiteRT (BUILTIN_REF for
the `tflite` profile, the default XNNPACK interpreter for `litert`); QDIALECT_FUSED=0
gives the VM form with the same bits; the exported library's `main(inputs..., outputs...,
constants...)` runs under TVM's own runtime; the compiled-model cache stores and loads the
fused form (constants included); a model with an output that is its input is copied in the
body; a wrong input shape is refused in one line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qdialect.builder import GraphBuilder
from qdialect.dialects.qnn import set_rounding
from qdialect.dialects.quant import UniformQuantizedType as Q
from qdialect.exporter.tflite import export_tflite
from transforms.pipelines import lower_to_l3
from tvm_bridge.compile import compile_module
from tvm_bridge.run_cli import _entry_signature, litert_run, load_module, make_inputs

ZOO = Path(__file__).resolve().parents[2] / "models" / "zoo"
SMALL = ["mlp_act", "elementwise_movement", "cnn_small"]


def _lowered(path: Path, profile: str):
    module = load_module(path, batch=1)
    samples = [make_inputs(_entry_signature(module)[1], seed) for seed in range(3)]
    set_rounding(module, profile)
    lower_to_l3(module)
    return module, samples


def _differing(ours, theirs) -> int:
    assert len(ours) == len(theirs)
    n = 0
    for a, b in zip(ours, theirs):
        assert a.size == b.size
        n += int(np.count_nonzero(a.view(b.dtype).reshape(b.shape) != b))
    return n


@pytest.mark.parametrize("profile", ["tflite", "litert"])
@pytest.mark.parametrize("name", SMALL)
def test_small_zoo_model_is_fused_and_bit_exact(name, profile, monkeypatch):
    monkeypatch.setenv("QDIALECT_CACHE", "0")
    module, samples = _lowered(ZOO / f"{name}.tflite", profile)
    theirs = litert_run((ZOO / f"{name}.tflite").read_bytes(), samples, reference=profile == "tflite")
    model = compile_module(module)
    assert model.is_fused, f"{name}: the fused form was not built"
    assert sum(_differing(model(*s), t) for s, t in zip(samples, theirs)) == 0
    monkeypatch.setenv("QDIALECT_FUSED", "0")
    vm = compile_module(module)
    assert not vm.is_fused
    for s in samples:
        ours, on_vm = model(*s), vm(*s)
        assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(ours, on_vm))


def _capture_fused(monkeypatch) -> list:
    """The modules `fused._fuse` makes from now on (a list filled as builds run)."""
    from tvm_bridge import fused

    made_modules = []
    real_fuse = fused._fuse

    def fuse(mod, *args, **kwargs):
        made = real_fuse(mod, *args, **kwargs)
        made_modules.append(made.module)
        return made

    monkeypatch.setattr(fused, "_fuse", fuse)
    return made_modules


def test_parallel_kernels_have_a_serial_twin(monkeypatch):
    """Per-loop launches (QDIALECT_FUSED_LAUNCH=0, the form before the one-launch `main`):
    with every dot-product kernel parallel (threshold 1 MAC), the fused module holds each
    such kernel twice, `k_<name>` with parallel loops and `k_<name>_serial` without, `main`
    calling the first when `threads > 1` and the twin otherwise; bit-exact with LiteRT at
    one thread and at two (TVM's pool); the call passes the pool's count."""
    from tvm_bridge import cpu, vnni

    monkeypatch.setenv("QDIALECT_CACHE", "0")
    monkeypatch.setenv("QDIALECT_FUSED_LAUNCH", "0")
    monkeypatch.setattr(vnni, "FUSED_DOT_PARALLEL_MIN_MACS", 1)
    made_modules = _capture_fused(monkeypatch)
    module, samples = _lowered(ZOO / "cnn_small.tflite", "tflite")
    theirs = litert_run((ZOO / "cnn_small.tflite").read_bytes(), samples, reference=True)
    model = compile_module(module)
    assert model.is_fused and len(made_modules) == 1
    functions = {gv.name_hint: f for gv, f in made_modules[0].functions.items()}
    twins = [name for name in functions if name.endswith("_serial")]
    assert len(twins) >= 2, "the dot kernels did not go parallel"
    for twin in twins:  # parallel loops in the first form, none in its twin
        assert "T.parallel(" in functions[twin.removesuffix("_serial")].script()
        assert "T.parallel(" not in functions[twin].script()
    from tvm import tirx

    branches = {(str(st.condition), st.then_case.value.op.name_hint, st.else_case.value.op.name_hint)
                for st in functions["main"].body.seq if isinstance(st, tirx.IfThenElse)}
    assert branches == {("threads > 1", twin.removesuffix("_serial"), twin) for twin in twins}
    before = cpu.current_threads()
    try:
        for n in (1, 2):
            cpu.set_threads(n)
            assert cpu.current_threads() == n
            assert sum(_differing(model(*s), t) for s, t in zip(samples, theirs)) == 0
    finally:
        cpu.set_threads(before)


def _attr_keys(stmt) -> list[str]:
    import tvm_ffi
    from tvm import tirx

    keys = []

    def look(node):
        keys.append(node.attr_key)
        return node

    tvm_ffi.structural_map(stmt, (tirx.AttrStmt, look))
    return keys


@pytest.mark.parametrize("name", ["cnn_small", "mobilenetv2_tiny", "ds_cnn_kws"])
def test_one_launch_form_equals_litert_at_one_and_two_threads(name, monkeypatch):
    """The default form at any thread count: the whole model one parallel launch of TVM's
    pool.  With every dot-product kernel parallel (thresholds at 1 MAC), `main` is one
    launch holding each such kernel's one-launch form (`k_<name>_launched`, its staging
    buffer the caller's, a barrier after it) and the other kernels' serial forms; no kernel
    keeps a form with its own launches.  Bit-exact with LiteRT's reference kernels at one
    thread and at two, call after call (a missing barrier shows as a race)."""
    from tvm_bridge import cpu, fused, vnni

    monkeypatch.setenv("QDIALECT_CACHE", "0")
    monkeypatch.setattr(vnni, "FUSED_DOT_PARALLEL_MIN_MACS", 1)
    monkeypatch.setattr(fused, "FUSED_LAUNCH_MIN_MACS", 1)
    made_modules = _capture_fused(monkeypatch)
    module, samples = _lowered(ZOO / f"{name}.tflite", "tflite")
    theirs = litert_run((ZOO / f"{name}.tflite").read_bytes(), samples, reference=True)
    model = compile_module(module)
    assert model.is_fused and len(made_modules) == 1
    functions = {gv.name_hint: f for gv, f in made_modules[0].functions.items()}
    launched = [n for n in functions if n.endswith("_launched")]
    assert len(launched) >= 2, "the dot kernels have no one-launch form"
    staged = 0
    for n in launched:  # its loops parallel, no form of it with loops of its own launch or a twin
        text = functions[n].script()
        assert "T.parallel(" in text
        assert n.removesuffix("_launched") not in functions and n.replace("_launched", "_serial") not in functions
        if text.count("T.parallel(") > 1:  # input rows staged in parallel: a barrier before the output rows
            staged += 1             # (a race the runs below may not show: without it mobilenetv2_035_h
            assert "pragma_parallel_barrier_when_finish" in _attr_keys(functions[n].body)  # had 9 wrong)
    assert staged, "no kernel staged its input rows in parallel"
    entries = [n for n in functions if n == "main" or n.startswith("main_")]  # (two for many kernels)
    keys = [key for n in entries for key in _attr_keys(functions[n].body)]
    assert keys.count("pragma_parallel_launch_point") == len(entries)  # one launch per entry
    assert keys.count("pragma_parallel_barrier_when_finish") >= len(launched)
    before = cpu.current_threads()
    try:
        for n in (1, 2, 1, 2):
            cpu.set_threads(n)
            for _ in range(5):
                assert sum(_differing(model(*s), t) for s, t in zip(samples, theirs)) == 0
    finally:
        cpu.set_threads(before)


def test_small_model_runs_serially(monkeypatch):
    """Below FUSED_LAUNCH_MIN_MACS of splittable kernels a model is all serial at any thread
    count (cnn_small: 0.55 M MACs, whose launch cost ~1 us of its 8 and gained nothing at
    two threads): no launch, no parallel loop, no branch on the thread count."""
    from tvm_bridge import cpu, fused, vnni

    monkeypatch.setenv("QDIALECT_CACHE", "0")
    monkeypatch.setattr(vnni, "FUSED_DOT_PARALLEL_MIN_MACS", 1)
    monkeypatch.setattr(fused, "FUSED_LAUNCH_MIN_MACS", 1 << 40)
    made_modules = _capture_fused(monkeypatch)
    module, samples = _lowered(ZOO / "cnn_small.tflite", "tflite")
    theirs = litert_run((ZOO / "cnn_small.tflite").read_bytes(), samples, reference=True)
    model = compile_module(module)
    assert model.is_fused
    import tvm_ffi
    from tvm import tirx

    branches = []
    tvm_ffi.structural_map(made_modules[0]["main"].body, (tirx.IfThenElse, lambda n: branches.append(n) or n))
    assert not branches and "pragma_parallel_launch_point" not in _attr_keys(made_modules[0]["main"].body)
    assert not any("T.parallel(" in f.script() for _, f in made_modules[0].functions.items())
    before = cpu.current_threads()
    try:
        for n in (1, 2):
            cpu.set_threads(n)
            assert sum(_differing(model(*s), t) for s, t in zip(samples, theirs)) == 0
    finally:
        cpu.set_threads(before)


def test_launch_threshold_is_per_entry(monkeypatch):
    """Each entry of a fused model is one launch of the pool per call, so the one-launch form
    needs FUSED_LAUNCH_MIN_MACS of splittable kernels per entry (mobilenetv2_tiny, two
    entries of 1.0 M MACs each, was 26.0 us a call at two threads against 23.5 at one on the
    Zen 5).  By hand: at 1.5 M a launch, mobilenetv2_tiny (31 calls, two entries, 2.06 M MACs
    in kernels with a one-launch form) stays serial, which a threshold on the whole model
    would have launched, and ds_cnn_kws (17 calls, one entry, 2.66 M) is launched."""
    from tvm_bridge import fused

    monkeypatch.setattr(fused, "FUSED_PARTS_MIN_CALLS", 24)
    monkeypatch.setattr(fused, "FUSED_LAUNCH_MIN_MACS", 1000)
    assert fused.launches(1000, 23) and not fused.launches(999, 23)
    assert fused.launches(2000, 24) and not fused.launches(1999, 24)

    monkeypatch.setenv("QDIALECT_CACHE", "0")
    monkeypatch.setattr(fused, "FUSED_LAUNCH_MIN_MACS", 1_500_000)
    for name, launched in (("mobilenetv2_tiny", False), ("ds_cnn_kws", True)):
        made_modules = _capture_fused(monkeypatch)
        module, samples = _lowered(ZOO / f"{name}.tflite", "tflite")
        model = compile_module(module)
        assert model.is_fused and len(made_modules) == 1
        functions = {gv.name_hint: f for gv, f in made_modules[0].functions.items()}
        entries = [n for n in functions if n == "main" or n.startswith("main_")]
        assert len(entries) == (2 if name == "mobilenetv2_tiny" else 1)
        keys = [key for n in entries for key in _attr_keys(functions[n].body)]
        assert keys.count("pragma_parallel_launch_point") == (len(entries) if launched else 0), name
        theirs = litert_run((ZOO / f"{name}.tflite").read_bytes(), samples, reference=True)
        assert sum(_differing(model(*s), t) for s, t in zip(samples, theirs)) == 0


def test_vm_fallback_keeps_its_threshold(monkeypatch):
    """A model that does not take the fused form (here: a workspace limit of 0) is
    translated again for the VM, whose kernels stay serial below DOT_PARALLEL_MIN_MACS even
    when the fused form's threshold would have made them parallel (the VM has no serial
    twin: a parallel loop costs its launch at one thread); still LiteRT's bits."""
    import tvm

    import tvm_bridge.compile as compile_mod
    from tvm_bridge import vnni

    monkeypatch.setenv("QDIALECT_CACHE", "0")
    monkeypatch.setattr(vnni, "FUSED_DOT_PARALLEL_MIN_MACS", 1)
    monkeypatch.setattr(compile_mod, "FUSED_MAX_WORKSPACE_BYTES", 0)
    built = []
    real_build = compile_mod.build

    def build(mod, target):
        built.append([f.script() for _, f in mod.functions_items() if isinstance(f, tvm.tirx.PrimFunc)])
        return real_build(mod, target)

    monkeypatch.setattr(compile_mod, "build", build)
    module, samples = _lowered(ZOO / "cnn_small.tflite", "tflite")
    theirs = litert_run((ZOO / "cnn_small.tflite").read_bytes(), samples, reference=True)
    model = compile_module(module)
    assert not model.is_fused and len(built) == 1
    kernels = [t for t in built[0] if "vnni_conv2d" in t or "vpdpbusd" in t]
    assert kernels and not any("T.parallel(" in t for t in kernels)
    assert sum(_differing(model(*s), t) for s, t in zip(samples, theirs)) == 0


def test_export_runs_under_tvm_runtime(tmp_path, monkeypatch):
    """The exported library's calling convention: main(inputs..., outputs..., constant blobs...,
    workspaces..., threads) (threads: the thread count of TVM's pool, choosing the kernels'
    serial or parallel forms; 1 here)."""
    import tvm

    monkeypatch.setenv("QDIALECT_CACHE", "0")
    module, samples = _lowered(ZOO / "mlp_act.tflite", "tflite")
    theirs = litert_run((ZOO / "mlp_act.tflite").read_bytes(), samples, reference=True)
    model = compile_module(module)
    model.export_library(str(tmp_path / "m.so"))
    main = tvm.runtime.load_module(str(tmp_path / "m.so"))["main"]
    spec, constants = model.fused
    for sample, expected in zip(samples, theirs):
        ins = [tvm.runtime.tensor(np.ascontiguousarray(x.view(d)))
               for x, (_, d) in zip(sample, spec["inputs"])]
        outs = [tvm.runtime.tensor(np.zeros(s, d)) for s, d in spec["outputs"]]
        work = [tvm.runtime.tensor(np.zeros(n, d)) for d, n in spec["workspace"]]
        main(*ins, *outs, *[tvm.runtime.tensor(c) for c in constants], *work, 1)
        assert _differing([o.numpy() for o in outs], expected) == 0


def test_cache_stores_and_loads_the_fused_form(tmp_path, monkeypatch):
    from tvm_bridge import cache, fast_run

    monkeypatch.setenv("QDIALECT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("QDIALECT_CACHE", "1")
    module, samples = _lowered(ZOO / "elementwise_movement.tflite", "tflite")
    theirs = litert_run((ZOO / "elementwise_movement.tflite").read_bytes(), samples, reference=True)
    built = compile_module(module)
    assert built.is_fused and built.library_path is not None
    hits = cache.stats["hits"]
    again = compile_module(module)
    assert cache.stats["hits"] == hits + 1 and again.executable is None and again.is_fused
    assert sum(_differing(again(*s), t) for s, t in zip(samples, theirs)) == 0
    entry = Path(str(again.library_path)).name.removesuffix(".so")
    runtime, meta = fast_run.load(entry)
    assert meta["form"] == "fused"
    assert sum(_differing(runtime(*s), t) for s, t in zip(samples, theirs)) == 0
    (tmp_path / f"{entry}.npz").write_bytes(b"damaged")  # damaged constants: a rebuild, not a crash
    assert fast_run.load(entry) is None
    rebuilt = compile_module(module)
    assert rebuilt.is_fused and sum(_differing(rebuilt(*s), t) for s, t in zip(samples, theirs)) == 0


def _identity_and_add() -> bytes:
    """Two outputs: the input itself (reshaped) and input + input."""
    g = GraphBuilder()
    act = Q.per_tensor(0.05, -3)
    x = g.input([1, 4, 16], act)
    g.output(g.reshape(x, [1, 64]))
    g.output(g.add(x, x, Q.per_tensor(0.1, 2)))
    return export_tflite(g.build())


def test_output_that_is_an_input_is_copied(tmp_path, monkeypatch):
    monkeypatch.setenv("QDIALECT_CACHE", "0")
    path = tmp_path / "model.tflite"
    path.write_bytes(_identity_and_add())
    module, samples = _lowered(path, "tflite")
    theirs = litert_run(path.read_bytes(), samples, reference=True)
    model = compile_module(module)
    assert model.is_fused
    results = [model(*s) for s in samples]  # each call refills the same buffers
    for ours, expected in zip(results, theirs):
        assert _differing(ours, expected) == 0


def test_wrong_input_shape_is_refused_in_one_line(monkeypatch):
    monkeypatch.setenv("QDIALECT_CACHE", "0")
    module, samples = _lowered(ZOO / "mlp_act.tflite", "tflite")
    model = compile_module(module)
    assert model.is_fused
    x = samples[0][0]
    with pytest.raises(ValueError, match=r"input 0 has shape \(1, 32\), the model takes \(1, 64\)"):
        model(np.zeros((1, 32), x.dtype))
    with pytest.raises(ValueError, match="takes 1 inputs, not 2"):
        model(x, x)


def test_workspace_limit_keeps_the_vm_and_the_same_bits(monkeypatch):
    """A model whose intermediates exceed `FUSED_MAX_WORKSPACE_BYTES` keeps the VM form
    (the size gate) and still matches LiteRT's BUILTIN_REF bit for bit; the default limit
    (16 MiB) keeps it fused."""
    import tvm_bridge.compile as compile_mod

    monkeypatch.setenv("QDIALECT_CACHE", "0")
    module, samples = _lowered(ZOO / "cnn_small.tflite", "tflite")
    monkeypatch.setattr(compile_mod, "FUSED_MAX_WORKSPACE_BYTES", 1024)  # cnn_small's: ~15.7 KB
    model = compile_module(module)
    assert not model.is_fused
    theirs = litert_run((ZOO / "cnn_small.tflite").read_bytes(), samples, reference=True)
    for xs, ref in zip(samples, theirs):
        assert _differing(model(*xs), ref) == 0
    monkeypatch.undo()
    monkeypatch.setenv("QDIALECT_CACHE", "0")
    assert compile_mod.FUSED_MAX_WORKSPACE_BYTES == 16 * 1024 * 1024
    assert compile_module(module).is_fused



def test_kernels_reach_llvm_inlined_in_one_function(monkeypatch):
    """Every kernel is inlined into `main` in TIR before code generation, so an intermediate's
    producer and consumers access it through one pointer variable (one TBAA type); left to
    LLVM's inliner, each kernel's parameter would be a type of its own and LLVM could move a
    load above the store it reads (tvm_bridge/fused.py)."""
    import importlib

    monkeypatch.setenv("QDIALECT_CACHE", "0")
    builder = importlib.import_module("tvm.tirx.build")
    seen = []
    real = builder.split_host_device_mods

    def split(mod):
        seen.append(sorted(gv.name_hint for gv in mod.functions))
        return real(mod)

    monkeypatch.setattr(builder, "split_host_device_mods", split)
    module, samples = _lowered(ZOO / "cnn_small.tflite", "tflite")
    model = compile_module(module)
    fused_builds = [names for names in seen if "main" in names]  # (other TIR builds: helpers)
    assert model.is_fused and fused_builds == [["main"]], seen
    theirs = litert_run((ZOO / "cnn_small.tflite").read_bytes(), samples, reference=True)
    assert sum(_differing(model(*s), t) for s, t in zip(samples, theirs)) == 0


def test_launch_form_only_for_marked_kernels_ending_in_their_parallel_loop():
    """`_launch_variant` takes a kernel only when tvm_bridge/vnni.py marked it (LAUNCH_GROUPS:
    its steps before the last parallel loop touch disjoint bytes) and its last statement is
    that loop; a statement after it would run beside it, unordered, on the first thread."""
    from tvm import ir, tirx

    from tvm_bridge import fused
    from tvm_bridge.vnni import LAUNCH_GROUPS

    y = tirx.decl_buffer((8,), "int32", "Y")
    i, j = tirx.Var("i", "int32"), tirx.Var("j", "int32")
    zero, eight = tirx.const(0, "int32"), tirx.const(8, "int32")
    rows = tirx.For(i, zero, eight, tirx.ForKind.PARALLEL, tirx.BufferStore(y, i, [i]))
    after = tirx.For(j, zero, eight, tirx.ForKind.SERIAL, tirx.BufferStore(y, j + 1, [j]))
    pointer = tirx.Var("Y_ptr", ir.PointerType(ir.PrimType("int32")))
    declarations = [tirx.DeclBuffer(y, data=pointer)]

    def kernel(body, marked):
        func = tirx.PrimFunc([y], body)
        return func.with_attr({LAUNCH_GROUPS: 64}) if marked else func

    made = fused._launch_variant(kernel(rows, True), [pointer], declarations)
    assert made is not None and made[1] == [] and made[2] == 64
    assert fused._launch_variant(kernel(rows, False), [pointer], declarations) is None
    assert fused._launch_variant(kernel(tirx.SeqStmt([rows, after]), True), [pointer], declarations) is None


def test_calls_are_cut_by_their_weights():
    """`_cuts`: contiguous shares of about equal weight, the call that crosses a share's
    mark going to the side it is nearer, no share empty (expected cuts by hand)."""
    from tvm_bridge.fused import _cuts

    assert _cuts([1] * 10, 2) == [0, 5, 10]
    assert _cuts([10, 1, 1, 1], 2) == [0, 1, 4]  # the heavy first call alone
    assert _cuts([1, 1, 1, 10], 2) == [0, 3, 4]
    assert _cuts([3, 3, 1, 1, 4], 2) == [0, 2, 5]  # mark 6 reached exactly after two calls
    assert _cuts([2, 5, 1], 2) == [0, 1, 3]  # the mark 4 lies between 2 and 7: nearer 2
    assert _cuts([1, 2, 3, 4, 5, 6], 3) == [0, 3, 5, 6]  # marks 7 and 14: 6 | 10 and 10 | 15 around them
    assert _cuts([100, 1, 1], 3) == [0, 1, 2, 3]  # no share empty
    assert _cuts([0, 0], 2) == [0, 1, 2]


def test_two_entries_built_on_two_threads(tmp_path, monkeypatch):
    """A model of FUSED_PARTS_MIN_CALLS kernel calls or more is fused into two entry
    functions, `main` and `main_1`, each about half of the calls' TIR (each its own parallel launch in
    the one-launch form), built as two LLVM modules on two threads and linked into one
    library; called in order they are bit-exact with LiteRT's reference kernels at one and
    two threads, built, from the cache, through qd-run's runtime-only path and through
    TVM's runtime alone."""
    import threading

    import tvm

    from tvm_bridge import cache, cpu, fast_run, fused, vnni

    monkeypatch.setenv("QDIALECT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("QDIALECT_CACHE", "1")
    monkeypatch.setattr(fused, "FUSED_PARTS_MIN_CALLS", 2)
    monkeypatch.setattr(vnni, "FUSED_DOT_PARALLEL_MIN_MACS", 1)
    monkeypatch.setattr(fused, "FUSED_LAUNCH_MIN_MACS", 1)
    made_modules = _capture_fused(monkeypatch)
    threads_used = []
    real_build = fused._build_entry

    def build(module, target):
        threads_used.append(threading.get_ident())
        return real_build(module, target)

    monkeypatch.setattr(fused, "_build_entry", build)
    module, samples = _lowered(ZOO / "mobilenetv2_tiny.tflite", "tflite")
    theirs = litert_run((ZOO / "mobilenetv2_tiny.tflite").read_bytes(), samples, reference=True)
    built = compile_module(module)
    assert built.is_fused and built.fused[0]["entries"] == ["main", "main_1"]
    assert len(threads_used) == 2 and len(set(threads_used)) == 2
    functions = {gv.name_hint: f for gv, f in made_modules[0].functions.items()}
    for entry in ("main", "main_1"):
        assert _attr_keys(functions[entry].body).count("pragma_parallel_launch_point") == 1
    again = compile_module(module)
    assert again.executable is None and again.fused[0]["entries"] == ["main", "main_1"]
    runtime, _ = fast_run.load(Path(str(again.library_path)).name.removesuffix(".so"))
    library = tvm.runtime.load_module(str(again.library_path))
    assert library.implements_function("main") and library.implements_function("main_1")
    before = cpu.current_threads()
    try:
        for n in (1, 2):
            cpu.set_threads(n)
            for model in (built, again, runtime):
                assert sum(_differing(model(*s), t) for s, t in zip(samples, theirs)) == 0
    finally:
        cpu.set_threads(before)
    assert cache.stats["stores"] >= 1
