"""Compile a lowered (L3) module with TVM and run it on numpy arrays.

    from tvm_bridge import compile_module
    model = compile_module(l3_module)            # host CPU, llvm
    outputs = model(x0, x1)                       # list of numpy arrays
    model.export_library("model.so")              # TVM's own export

A model whose Relax `main` is a static chain of kernels is built as one fused TIR function
(tvm_bridge/fused.py, `CompiledModel.is_fused`), anything else for the Relax VM;
QDIALECT_FUSED=0 builds every model for the VM.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qdialect.io_types import EdgeTypeError, as_declared, declared_dtypes
from tvm_bridge import vnni
from tvm_bridge.translate import TranslationError, Translator, aligned_empty, translate


#: LLVM's optimisation level for our llvm targets when the target does not name one.  Level
#: 2, not TVM's default 3: the kernels are explicit vector code that level 3 does not make
#: faster (session 18, 1 thread, AMD Zen 4: MobileNetV2-0.35 0.209 / 0.210 ms at 3 / 2,
#: ResNet block 0.248 / 0.251, DS-CNN 0.126 / 0.127, attention 0.085 / 0.082), and its
#: passes cost a fifth of a cold compile (MobileNetV2-0.35: LLVM 3.15 -> 2.63 s)
LLVM_OPT_LEVEL = 2


#: LLVM's optimisation level of a quick build (`quick_target`; qd-run `--opt quick`, and its
#: default for a run of few samples): level 0 skips LLVM's optimising passes and selects
#: instructions the fast way.  Same TIR, same results (bit for bit: the integer semantics are
#: TIR's, not LLVM's); on the 2-core Zen 5 (session 23, bench/time_to_first.py) a whole cold
#: `qd-run --samples 1` of MobileNetV2-0.35 2.57-2.78 -> 1.73-1.85 s (TVM's passes, LLVM and
#: machine code 1.6 -> 0.8 s), for a call about 4x slower (0.10 -> 0.36 ms)
QUICK_OPT_LEVEL = 0


def quick_target(target=None):
    """`as_target(target)` with LLVM at `QUICK_OPT_LEVEL`: for code that runs a few times,
    where a shorter build matters more than fast kernels.  A target that names an
    `opt-level` of its own (in its text or dict), a `tvm.target.Target` and a target of
    another kind are `as_target`'s."""
    import tvm

    spec = None if isinstance(target, tvm.target.Target) else _spec_of(target)
    if spec is None or spec.get("kind") != "llvm" or "opt-level" in spec:
        return as_target(target)
    return _target_of({**spec, "opt-level": QUICK_OPT_LEVEL}, target)


def _llvm_spec(spec: dict) -> dict:
    """An llvm target's dict with our default optimisation level where it names none."""
    if spec.get("kind") == "llvm" and "opt-level" not in spec:
        return {**spec, "opt-level": LLVM_OPT_LEVEL}
    return spec


def host_target():
    """The host CPU as an llvm target, in TVM 0.27's dict form (its name: tvm_bridge/cpu.py,
    `QDIALECT_TARGET_CPU` overrides it; LLVM at `LLVM_OPT_LEVEL`)."""
    return as_target(None)


#: x86 instruction-set features a kernel compiled for a target may use (LLVM's names)
_X86_FEATURES = ("sse4.1", "sse4.2", "avx", "avx2", "fma", "f16c", "avxvnni", "avx512f", "avx512bw", "avx512dq",
                 "avx512vl", "avx512vnni", "avx512vbmi", "avx512bf16", "avx512fp16", "amx-int8", "amx-tile")


def missing_host_features(target) -> list[str]:
    """The instruction-set features `target` compiles for and this CPU lacks: code built
    for it would stop on an illegal instruction here (empty for the host's own target)."""
    import tvm
    from tvm.target.codegen import target_has_features

    from tvm_bridge.cpu import machine_cpu

    host = tvm.target.Target({"kind": "llvm", "mcpu": machine_cpu()})  # (this CPU: no override)
    missing = []
    for feature in _X86_FEATURES:
        try:
            if target_has_features(feature, target) and not target_has_features(feature, host):
                missing.append(feature)
        except Exception:  # noqa: BLE001 - not an llvm target, or a feature LLVM does not know
            continue
    return missing


def cannot_run_here(target) -> str | None:
    """Why code built for `target` cannot run on this machine (another architecture, or
    instruction-set features this CPU lacks), or None when it can."""
    import platform

    triple = target.attrs.get("mtriple") if hasattr(target, "attrs") else None
    if triple:
        arch, host = str(triple).split("-")[0].lower(), platform.machine().lower()
        same = {"x86_64": {"x86_64", "amd64"}, "amd64": {"x86_64", "amd64"}, "aarch64": {"aarch64", "arm64"},
                "arm64": {"aarch64", "arm64"}}.get(host, {host})
        if arch not in same:
            return f"it is built for {arch} and this machine is {platform.machine()}"
    missing = missing_host_features(target)
    if missing:
        return f"it uses {', '.join(missing)}, which this CPU has not got"
    return None


def _spec_of(target) -> dict | None:
    """The dict form of a target given as None (the host), a dict or a string (`llvm
    -mcpu=znver4 -opt-level=3`), before our default optimisation level; None otherwise."""
    from tvm_bridge.cpu import host_cpu

    if target is None:
        return {"kind": "llvm", "mcpu": host_cpu()}
    if isinstance(target, dict):
        return dict(target)
    if isinstance(target, str):
        parts = target.split()
        spec = {"kind": parts[0]}
        for p in parts[1:]:
            key, _, value = p.lstrip("-").partition("=")
            spec[key] = int(value) if key == "opt-level" and value.isdigit() else value
        return spec
    return None


def as_target(target):
    import tvm

    if isinstance(target, tvm.target.Target):
        return target
    spec = _spec_of(target)
    if spec is None:
        raise TranslationError(f"target {target!r} is not a TVM target, dict or string")
    return _target_of(_llvm_spec(spec), target)


def _target_of(spec: dict, given):
    """`tvm.target.Target(spec)`; a TranslationError naming `given` (what the caller passed)
    where TVM refuses it (an unknown kind or attribute)."""
    import tvm

    try:
        return tvm.target.Target(spec)
    except (ValueError, TypeError) as e:
        raise TranslationError(f"target {given!r}: {' '.join(str(e).split())}") from None


def pipeline(target, schedule: bool = True):
    """The Relax pipeline our builds use: TVM's CPU pipeline (legalize, fuse
    elementwise chains into their producers, lower to the VM) with our CPU
    schedules applied to every fused kernel between fusion and lowering.

    TVM's `tvm.compile` default for CPU does not fuse at all (it legalizes and
    lowers); every rescale epilogue would be its own kernel with its own buffer.
    """
    import tvm
    from tvm import relax
    from tvm.relax.backend.cpu_generic import pipeline as cpu

    passes = cpu.library_dispatch_passes(target) + cpu.legalize_passes(target)
    if schedule:
        from tvm_bridge.schedule import schedule_pass

        passes.append(schedule_pass(target))
    from tvm_bridge.schedule import fold_casts_pass

    passes.append(fold_casts_pass())  # exact; spares TVM's simplifier nested casts (schedule.py)
    lower = cpu.dataflow_lower_passes(target)
    if schedule:  # (after RewriteDataflowReshape, which reads kernels' block forms: schedule.py)
        from tvm_bridge.schedule import pair_late_pass

        at = next(i for i, p in enumerate(lower) if p.info.name == "RewriteDataflowReshape") + 1
        lower.insert(at, pair_late_pass(target))
    passes += lower + cpu.finalize_passes(target)

    @tvm.transform.module_pass(opt_level=0, name="QdialectCPUPipeline")
    def _pipeline(mod, _ctx):
        with target:
            return tvm.transform.Sequential(passes)(mod)

    del relax
    return _pipeline


class CompiledModel:
    """A compiled Relax `main`: call it with numpy arrays, get a list of numpy arrays.

    `out_dtypes` (one per output, None where the L3 type is the model's own): the dtypes the
    model declares where L3 carries other bits (`qnn.element_type`, `qdialect.io_types`):
    a uint8 model takes and returns uint8 arrays."""

    def __init__(self, executable, n_outputs: int, target, out_dtypes=None, library=None, library_path=None,
                 fused=None):
        """`executable`: what `build` returns (None for a model loaded from the cache);
        `library`: the same code loaded from a shared library (`library_path`), which the VM
        runs instead of making machine code from the executable again on its first use.
        `fused`: (spec, constants) when the code is the fused form (tvm_bridge/fused.py:
        one TIR function `main(inputs..., outputs..., constants...)`, no VM), else None."""
        import tvm

        self.executable = executable
        self.fused = fused
        self._fused_runner = None
        self.library, self.library_path = library, library_path
        self.n_outputs = n_outputs
        self.target = target
        self.out_dtypes = list(out_dtypes) if out_dtypes and any(d is not None for d in out_dtypes) else None
        self.device = tvm.cpu()
        self._vm = self._main = None  # made on the first use: a target this machine cannot run
        self._inputs: dict[int, tuple] = {}  # the staged inputs of `_call_v1`
        self._slots: list[tuple | None] = []  # per input: (shape, dtype, buffer in that dtype, TVM tensor)
        self._one_in_one_out = None  # `_one_in_one_out_call`'s closure, once a call has made the slot

    @property
    def is_fused(self) -> bool:
        """True when the model runs as one fused TIR function (tvm_bridge/fused.py), False
        when it runs on the Relax VM."""
        return self.fused is not None

    def _fused_call(self, *inputs: np.ndarray) -> list[np.ndarray]:
        """A call of the fused form: no VM, the caller's buffers all the way
        (`fused.FusedRunner`)."""
        runner = self._fused_runner
        if runner is None:
            from tvm_bridge.fused import FusedRunner, entry_functions

            why = cannot_run_here(self.target)
            if why is not None:
                raise TranslationError(f"the model was compiled for {self.target} and cannot run here: {why} "
                                       f"(export it with export_library and run it on such a machine)")
            library = self.library if self.library is not None else self.executable
            runner = self._fused_runner = FusedRunner(entry_functions(library, self.fused[0]), *self.fused)
        outs = runner(*inputs)
        return outs if self.out_dtypes is None else as_declared(outs, self.out_dtypes)

    @property
    def vm(self):
        """The Relax VM running the executable; TranslationError (naming why) when it was
        built for another architecture or for instructions this CPU lacks (it can still be
        exported with `export_library`)."""
        if self._vm is None:
            from tvm import relax

            if self.fused is not None:
                raise TranslationError("the model was built as one fused TIR function and has no Relax VM "
                                       "(QDIALECT_FUSED=0 builds the VM form)")

            why = cannot_run_here(self.target)
            if why is not None:
                raise TranslationError(f"the model was compiled for {self.target} and cannot run here: {why} "
                                       f"(export it with export_library and run it on such a machine)")
            from tvm_bridge.cpu import configure_pool

            configure_pool()
            self._vm = relax.VirtualMachine(self.executable if self.library is None else self.library, self.device)
            self._main = self._vm["main"]  # looked up once: a lookup costs about 1 us per call
        return self._vm

    #: False: every call takes the path calls took before the per-call floor work (`_call_v1`),
    #: kept so that bench/call_floor.py can show before and after on the same build
    fast_call = True

    def __call__(self, *inputs: np.ndarray) -> list[np.ndarray]:
        """Run `main` on numpy arrays (unsigned storage as the model declares it); a list of
        new numpy arrays, one per output.

        Each input is copied into a 64-byte aligned buffer kept for it and shared with TVM
        through DLPack (LiteRT's set_tensor is the same copy); an array of the shape and
        dtype of the previous call's goes straight in (about 0.3 us), anything else makes
        a new buffer.  Outputs are the VM's result buffers seen through DLPack and copied
        once into arrays the caller owns (a result can be an input's buffer or a constant)."""
        if self.fused is not None:
            runner = self._fused_runner
            if runner is not None and self.out_dtypes is None:
                return runner.call(*inputs)
            return self._fused_call(*inputs)
        one = self._one_in_one_out
        if one is not None and self.fast_call:
            return one(*inputs)
        main = self._main
        if main is None:
            self.vm  # noqa: B018 - made (or refused) here
            main = self._main
        if not self.fast_call:
            return self._call_v1(*inputs)
        slots = self._slots
        args = []
        for i, x in enumerate(inputs):
            slot = slots[i] if i < len(slots) else None
            if slot is not None and x.__class__ is np.ndarray and x.shape == slot[0] and x.dtype == slot[1]:
                slot[2][...] = x
                args.append(slot[3])
            else:
                args.append(self._slot(i, x))
        out = main(*args)
        if self.n_outputs == 1:
            outs = [np.from_dlpack(out).copy()]
        else:  # the FFI's element getter itself: the tuple's Python iterator costs ~1 us an element
            item = _array_item()
            outs = [np.from_dlpack(item(out, k)).copy() for k in range(self.n_outputs)]
        if len(inputs) == 1 and slots and slots[0] is not None and self.n_outputs == 1 and self.out_dtypes is None:
            self._one_in_one_out = self._one_in_one_out_call(main, slots[0])
        return outs if self.out_dtypes is None else as_declared(outs, self.out_dtypes)

    def _one_in_one_out_call(self, main, slot):
        """The call of a model with one input and one output (no dtype to declare), its
        checks and copies in one closure: about half a microsecond less a call."""
        shape, dtype, buffer, tensor = slot
        ndarray, from_dlpack = np.ndarray, np.from_dlpack

        def call(*inputs):
            if len(inputs) == 1:
                x = inputs[0]
                if x.__class__ is ndarray and x.shape == shape and x.dtype == dtype:
                    buffer[...] = x
                    return [from_dlpack(main(tensor)).copy()]
            self._one_in_one_out = None  # something else: the general path, which makes it again
            return self(*inputs)

        return call

    def _slot(self, i: int, x) -> object:
        """Input `i`'s TVM tensor holding `x`, through a new buffer kept for the next calls."""
        import tvm
        import tvm_ffi

        x = np.asarray(x)
        bits = x.dtype
        if bits.kind == "u":  # unsigned storage (u8) travels through L3 as signless bits
            bits = np.dtype(f"int{bits.itemsize * 8}")
        try:
            buf = aligned_empty(x.shape, bits)
            tensor = tvm_ffi.from_dlpack(buf)
        except Exception:  # noqa: BLE001 - a dtype or shape DLPack refuses: a new tensor each call
            return tvm.runtime.tensor(np.ascontiguousarray(x.view(bits)), self.device)
        slot = (x.shape, x.dtype, buf.view(x.dtype), tensor)
        slot[2][...] = x
        self._slots.extend([None] * (i + 1 - len(self._slots)))
        self._slots[i] = slot
        return tensor

    def _call_v1(self, *inputs: np.ndarray) -> list[np.ndarray]:
        """The call path before the per-call floor work (issue 25 part 1), for comparison."""
        args = []
        for i, x in enumerate(inputs):
            x = np.asarray(x)
            if x.dtype.kind == "u":  # unsigned storage (u8) travels through L3 as signless bits
                x = x.view(np.dtype(f"int{x.dtype.itemsize * 8}"))
            args.append(self._staged(i, x))
        out = self._main(*args)
        # zero-copy views of the VM's result buffers, copied once into arrays we own
        if self.n_outputs == 1:
            outs = [np.from_dlpack(out).copy()]
        else:
            outs = [np.from_dlpack(out[i]).copy() for i in range(self.n_outputs)]
        return outs if self.out_dtypes is None else as_declared(outs, self.out_dtypes)

    def _staged(self, i: int, x: np.ndarray):
        """The TVM tensor for input `i`: a 64-byte aligned numpy buffer kept per input
        and shared with TVM through DLPack, refilled with `x` on each call (building a
        tvm.runtime.tensor from numpy costs ~25 us, this ~1 us; LiteRT's set_tensor is
        the same kind of copy)."""
        import tvm
        import tvm_ffi

        staged = self._inputs.get(i)
        if staged is None or staged[0].shape != x.shape or staged[0].dtype != x.dtype:
            try:
                buf = aligned_empty(x.shape, x.dtype)
                staged = (buf, tvm_ffi.from_dlpack(buf))
            except Exception:  # noqa: BLE001 - a dtype or shape DLPack refuses: copy each call
                return tvm.runtime.tensor(np.ascontiguousarray(x), self.device)
            self._inputs[i] = staged
        np.copyto(staged[0], x)
        return staged[1]

    def export_library(self, path: str) -> None:
        """Write a shared library with TVM's own export (load with tvm.runtime.load_module).

        The library holds whichever form was built: a Relax VM executable, or the fused
        form (`is_fused`), one function `main(inputs..., outputs..., constants...,
        workspaces..., threads)` that writes the outputs into the buffers it is given and
        returns nothing (a model of many kernels: the entries `self.fused[0]["entries"]`,
        `main` then `main_1`, called in that order with the same arguments, the first
        writing intermediates into the workspaces the second reads); its constants
        (`self.fused[1]`, in order) are not in the library
        and must be passed by the caller, as must the workspaces (`self.fused[0]["workspace"]`:
        dtype and elements of each) and the thread count of TVM's pool (an int: 1 takes each
        kernel's serial form, more its parallel one).

        A build with AMX tile kernels (QDIALECT_AMX=1, tvm_bridge/amx.py) runs only in a process
        that has asked Linux for the tiles: call `tvm_bridge.cpu.request_amx()` before the
        library's first call (qdialect's own loaders do).

        TVM 0.27 logs one `Warning: Scope Saving:` line per function when it saves a
        `compiled`-mode VM executable (and `Scope Loaded:` when it loads one): debug
        output, not a problem.  The save-side lines are filtered out here; anything
        else TVM writes to stderr is passed on.
        """
        if self.executable is None:  # loaded from the cache: its library is the export (either form)
            from tvm_bridge import cache

            cache.copy_library(self.library_path, path)
            return
        with _stderr_filtered("Warning: Scope Saving:"):
            self.executable.export_library(path)


_ARRAY_ITEM = None


def _array_item():
    """TVM FFI's `ffi.ArrayGetItem` (array, index) -> element, looked up once."""
    global _ARRAY_ITEM
    if _ARRAY_ITEM is None:
        import tvm_ffi

        _ARRAY_ITEM = tvm_ffi.get_global_func("ffi.ArrayGetItem")
    return _ARRAY_ITEM


# drops TVM's "Scope Loaded/Saving" debug lines (kept here under its old name)
from tvm_bridge.cache import stderr_filtered as _stderr_filtered  # noqa: E402


def build(mod, target):
    """Build a translated Relax module with our pipeline, in the VM's `compiled` mode.

    `relax.build(exec_mode="compiled")` turns `main`'s VM bytecode into a TIR
    function compiled by LLVM, so each kernel call, allocation and shape check is a
    direct C call instead of an interpreted instruction.  Same kernels, same
    results; it takes about a third off the per-call overhead (mlp_act, 10 kernel
    calls: 8.7 -> 6.2 us; mobilenetv2_tiny: 79 -> 75 us).
    """
    from tvm import relax

    from tvm_bridge.lowering import register

    return relax.build(mod, target=target, relax_pipeline=pipeline(target), tir_pipeline=register(),
                       exec_mode="compiled")


def compile_module(module, target=None, entry: str | None = None, dot="target",
                   cache: bool | None = None, cache_key: str | None = None) -> CompiledModel:
    """Translate an L3 module to Relax and build it (`build`).

    `dot`: the dot-product flavor of the int8 convolution kernels (tvm_bridge/vnni.py);
    by default the target's own (`kernels.target_flavor`), None for the generic path, or
    a `vnni.Flavor` (an emulated one runs on any CPU: tests of a flavor the host lacks).

    `cache`: look the build up in (and store it to) the compiled-model cache
    (tvm_bridge/cache.py); None (default) follows QDIALECT_CACHE.  Only targets this
    machine can run are cached.  `cache_key`: the entry's name when the caller knows what
    determines the module (`compile_unlowered`: `cache.unlowered_key`); by default a hash of
    the module's text (`cache.key`).  (A caller that names the entry has looked it up
    already: the look-up here is not counted again in `cache.stats`.)

    The form: one fused TIR module (tvm_bridge/fused.py) when `main` is a static chain of
    kernels (whose intermediates take at most `FUSED_MAX_WORKSPACE_BYTES`, when that is
    set), the Relax VM otherwise or with QDIALECT_FUSED=0."""
    from tvm_bridge import cache as build_cache
    from tvm_bridge.kernels import target_flavor

    tgt = as_target(target)
    try:  # the model's unsigned edges (qnn.element_type, qdialect.io_types): outputs in their dtypes
        out_dtypes = declared_dtypes(Translator(module).entry(entry))[1]
    except EdgeTypeError as e:
        raise TranslationError(str(e)) from None
    flavor = target_flavor(tgt) if dot == "target" else dot
    key = found = executable = None
    if (build_cache.enabled() if cache is None else cache) and cannot_run_here(tgt) is None:
        key = cache_key or build_cache.key(str(module), str(tgt), f"entry {entry}", f"dot {flavor!r}",
                                           f"fused {fused_enabled()}")
        found = build_cache.load(key, count=cache_key is None)
    fused = None
    if found is None:
        mod = None
        if fused_enabled():  # (kernels parallel from the fused form's threshold: serial twins at one thread)
            with vnni.parallel_threshold(vnni.FUSED_DOT_PARALLEL_MIN_MACS) as below:
                mod, n_outputs = translate(module, entry, dot=flavor)
            executable, fused = build_fused(mod, tgt)
            if executable is None and below[0]:
                mod = None  # the VM form: translated again with the VM's threshold
        if executable is None:
            if mod is None:
                mod, n_outputs = translate(module, entry, dot=flavor)
            executable = build(mod, tgt)
        meta = {"n_outputs": n_outputs, "out_dtypes": [None if d is None else np.dtype(d).str for d in out_dtypes]}
        if fused is not None:
            meta.update(form="fused", fused=fused[0])
        if key is not None and build_cache.store(key, executable, meta,
                                                 constants=fused[1] if fused is not None else None) is not None:
            # run the stored library: LLVM makes the machine code once, for the export
            found = build_cache.load(key, count=False)
    library, library_path = (found[0], found[2]) if found is not None else (None, None)
    if found is not None:
        n_outputs = found[1]["n_outputs"]
        fused = _fused_of(found[1])
    return CompiledModel(executable, n_outputs, tgt, out_dtypes, library=library, library_path=library_path,
                         fused=fused)


#: the fused form is built for models of at most this many kernels (None: all).  Measured
#: on every zoo model (compile 1.2-2.2x the VM form's CPU time, every call faster) and on
#: vit_tiny (35.0 -> 40.5 s CPU): no size where the fused form stops paying, so no limit
FUSED_MAX_KERNELS = None

#: the fused form is built only for models whose intermediates (the fused function's
#: workspace, all dtypes) take at most this many bytes (None: all); larger ones keep the VM
#: form, whose memory plan reuses bytes (the fused form gives every intermediate its own, see
#: tvm_bridge/fused.py).  Sessions 14-15 held it at 256 KiB, then 1 MiB, because the fused
#: build then printed every kernel as TVMScript and parsed the whole function back
#: (MobileNetV2-0.35 at 96x96: cold `qd-run` 14.1 s wall against 12.6 s CPU on the VM).  Since
#: session 16 the fused module is built from the kernels' PrimFunc objects; measured on the
#: 2-core Zen 4, cold build fused / VM, steady call fused / VM (one thread, same bits):
#: mobilenetv2_035_h (606 KB) 6.6 / 8.9 s wall, 0.198 / 0.229 ms; mobilenetv2_050 2.7 /
#: 3.2 s, 0.262 / 0.277 ms; resnet_small 2.7 / 1.9 s, 0.200 / 0.207 ms; resnet_h 3.5 / 2.3 s,
#: 0.248 / 0.254 ms; bert_s20 20.0 / 20.1 s, 0.055 / 0.075 ms (cold times with LLVM inlining
#: the kernels; inlined in TIR, as now for correctness, mobilenetv2_035_h takes 7.4 s wall in
#: bench/time_to_first.py, bert_s20 22.7 s).  No model measured runs faster
#: on the VM; the limit stays, at 16 MiB, only as a memory bound for models far larger than
#: any measured.
FUSED_MAX_WORKSPACE_BYTES = 16 * 1024 * 1024


def fused_enabled() -> bool:
    """False when QDIALECT_FUSED=0 (or off / no / false): every build runs on the Relax VM."""
    from tvm_bridge.fused import enabled

    return enabled()


def build_fused(mod, target):
    """(library, (spec, constants)) of `mod` as one fused TIR function (tvm_bridge/fused.py),
    or (None, None) when it does not qualify (then `build` makes the VM form)."""
    from tvm_bridge import fused

    try:
        made = fused.fuse(fused.prefix_module(mod, target), FUSED_MAX_WORKSPACE_BYTES)
    except Exception:  # noqa: BLE001 - our pipeline's head refuses it here: `build` reports it with the VM form
        return None, None
    if made is None or (FUSED_MAX_KERNELS is not None and made.n_kernels > FUSED_MAX_KERNELS):
        return None, None
    try:
        library = fused.build_fused(made, target)
    except Exception:  # noqa: BLE001 - TVM refuses the fused function: the VM form is still right
        return None, None
    return library, (fused.spec(made), made.constants)


def _fused_of(meta: dict):
    """(spec, constants) of a cache entry's fused form, or None for a VM entry."""
    if meta.get("form") != "fused":
        return None
    return meta["fused"], meta["constants"]


def compile_unlowered(module, lower, target=None, entry: str | None = None,
                      identity: str | None = None) -> CompiledModel:
    """`compile_module(lower(module), ...)` for a module before lowering (L1), where the
    compiled-model cache can skip the lowering too: its entry is named by this module
    (`cache.unlowered_key`: the same text, target, versions and source of the code that
    lowers and translates it) and loaded without calling `lower`.

    `identity`: a string that determines the module's text, to name the entry by instead of
    printing the module (qd-run passes its run key: the model file's bytes and the import
    options; printing MobileNetV2-0.35 takes 0.12 s, and its lowered form 0.24 s more)."""
    from tvm_bridge import cache as build_cache
    from tvm_bridge.kernels import target_flavor

    tgt = as_target(target)
    key = None
    if build_cache.enabled() and cannot_run_here(tgt) is None:
        key = build_cache.unlowered_key(str(module) if identity is None else f"identity {identity}", str(tgt),
                                        f"entry {entry}", f"dot {target_flavor(tgt)!r}", f"fused {fused_enabled()}")
        found = build_cache.load(key)
        if found is not None and isinstance(found[1].get("out_dtypes"), list):
            library, meta, path = found
            out_dtypes = [None if d is None else np.dtype(d) for d in meta["out_dtypes"]]
            return CompiledModel(None, meta["n_outputs"], tgt, out_dtypes, library=library, library_path=path,
                                 fused=_fused_of(meta))
    return compile_module(lower(module), tgt, entry, cache=key is not None, cache_key=key)


def run(model: CompiledModel, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    return model(*inputs)
