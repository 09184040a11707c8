"""The CPU schedules (tvm_bridge/schedule.py) change no result.

Differential test per kernel: every fused PrimFunc of a zoo model is built twice,
as TVM's fusion wrote it and as our schedule rewrote it, and both run on the
arguments the kernel really receives when the model runs (captured through the
VM's instrument hook on two seeded inputs), outputs compared element by
element.  The unscheduled kernels are the reference here; they are in turn
checked against LiteRT end to end by test_zoo_tvm.py.  Per kernel, this points
at the kernel a schedule broke (a schedule that left a pad's border unwritten
was the first such bug).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

ZOO = Path(__file__).resolve().parents[2] / "models" / "zoo"


def fused_module(name: str, rounding: str):
    from tvm.relax.backend.cpu_generic import pipeline as cpu

    from qdialect.dialects.qnn import set_rounding
    from transforms import pipelines
    from tvm_bridge.compile import host_target
    from tvm_bridge.run_cli import load_module
    from tvm_bridge.translate import translate

    module = load_module(ZOO / f"{name}.tflite", 1)
    if rounding != "tflite":
        set_rounding(module, rounding)
    pipelines.lower_to_l3(module)
    mod, _ = translate(module)
    target = host_target()
    with target:
        mod = tvm.transform.Sequential(cpu.library_dispatch_passes(target) + cpu.legalize_passes(target))(mod)
    return mod, target


def captured_calls(mod, target, name: str, seeds=(0, 1)):
    """{PrimFunc name: [argument arrays of each call, outputs included]} from running the
    model, built without our schedules, on seeded inputs: the values every kernel really
    sees (random operands would break invariants between them, such as a softmax's
    row maximum indexing its exp table)."""
    from tvm import relax

    from tvm_bridge.compile import pipeline
    from tvm_bridge.run_cli import _entry_signature, load_module, make_inputs

    ex = tvm.compile(mod, target=target, relax_pipeline=pipeline(target, schedule=False))
    vm = relax.VirtualMachine(ex, tvm.cpu())
    calls: dict[str, list] = {}
    names = {gv.name_hint for gv in mod.get_global_vars()}

    def instrument(fn, symbol, before, ret, *args):
        symbol = str(symbol)
        if before and symbol in names:
            calls.setdefault(symbol, []).append([a.numpy() for a in args if hasattr(a, "numpy")])
        return 0

    vm.set_instrument(instrument)
    module = load_module(ZOO / f"{name}.tflite", 1)
    _, in_values, _ = _entry_signature(module)
    for seed in seeds:
        xs = make_inputs(in_values, seed)
        xs = [x.view(f"int{x.dtype.itemsize * 8}") if x.dtype.kind == "u" else x for x in xs]
        vm["main"](*[tvm.runtime.tensor(x) for x in xs])
    return calls


@pytest.mark.parametrize("name,rounding", [
    # (the tflite profile of mobilenetv2_tiny, 26 s, runs with the slow tests: its litert
    # profile, ds_cnn_kws's and cnn_small's tflite ones keep the default run's coverage)
    pytest.param("mobilenetv2_tiny", "tflite", marks=pytest.mark.slow), ("mobilenetv2_tiny", "litert"),
                                           ("cnn_small", "tflite"), ("ds_cnn_kws", "tflite"),
                                           ("mlp_act", "litert")])
def test_scheduled_kernels_compute_what_the_unscheduled_ones_do(name, rounding):
    from tvm_bridge.schedule import schedule_func

    mod, target = fused_module(name, rounding)
    checked, differing = 0, []
    for fname, arg_sets in sorted(captured_calls(mod, target, name).items()):
        func = mod[fname]
        built = [tvm.compile(tvm.IRModule({"k": variant.with_attr("global_symbol", "k")}), target=target)["k"]
                 for variant in (func, schedule_func(func, target).mod["main"])]
        for args in arg_sets:
            results = []
            for kernel in built:
                tensors = [tvm.runtime.tensor(np.ascontiguousarray(a)) for a in args[:-1]]
                out = tvm.runtime.tensor(np.zeros_like(args[-1]))
                kernel(*tensors, out)
                results.append(out.numpy())
            checked += 1
            bad = int(np.count_nonzero(results[0] != results[1]))
            if bad:
                differing.append(f"{fname}: {bad} of {results[0].size}")
    assert checked >= 5
    assert not differing, f"{name} ({rounding}): scheduled kernels differ: " + "; ".join(differing)


def test_every_convolution_of_mobilenet_is_tiled():
    """A schedule error falls back to the unscheduled kernel silently (correct but
    slow); this pins that the convolutions and depthwise convolutions really are tiled."""
    from tvm_bridge.schedule import schedule_func

    mod, target = fused_module("mobilenetv2_tiny", "tflite")
    outcomes = []
    for gv, func in mod.functions_items():
        if isinstance(func, tvm.tirx.PrimFunc):
            schedule_func(func, target, outcomes)
    tiled = [name for name, outcome in outcomes if outcome.startswith("tiled")]
    conv_blocks = [name for name, _ in outcomes if name.startswith("conv2d")]
    assert conv_blocks and all(name in tiled for name in conv_blocks)
    # 17 convolutions and depthwise convolutions; the few left are the final pooling/FC/softmax
    assert len(tiled) >= 20, outcomes


def test_square_of_a_load_is_recognized():
    """`_squares` finds a product of two loads of the same buffer (a layer norm's d * d, cast
    or not) and nothing else: another buffer, a product by a constant, a name that only
    ends like the buffer's."""
    from types import SimpleNamespace

    from tvm_bridge.schedule import _squares

    d = SimpleNamespace(name="d")
    assert _squares('T.Cast("int64", d[v0, v1]) * T.Cast("int64", d[v0, v1])', d)
    assert _squares("d[i] * d[i]", d)
    assert not _squares("d[i] * e[i]", d)
    assert not _squares('T.Cast("int64", d[i]) * T.int64(1561589347)', d)
    assert not _squares("xd[i] * xd[i]", d)


@pytest.mark.parametrize("rounding", ["tflite", "litert"])
def test_arithmetic_is_not_inlined_into_a_concatenation(rounding):
    """TVM's vectorizer cannot vectorize the if_then_else by which a concatenation picks each
    lane's source, and a loop it cannot vectorize runs scalar as a whole: elementwise_movement's
    ADD / MAXIMUM / MINIMUM / MUL chain inlined into its CONCATENATION (and that into the MUL
    after it) ran 3.1 us of scalar code in the `litert` profile, 0.8 us vectorized apart
    (bench/call_floor.py, raw).  The chain's blocks stay apart, each with a vectorized loop;
    the concatenation keeps no arithmetic of its own."""
    from tvm_bridge.schedule import CONCAT_BLOCK, _has_arithmetic, schedule_func

    mod, target = fused_module("elementwise_movement", rounding)
    funcs = [func for _, func in mod.functions_items()
             if isinstance(func, tvm.tirx.PrimFunc) and CONCAT_BLOCK in func.script()]
    assert len(funcs) == 1
    sch = schedule_func(funcs[0], target, [])
    text = sch.mod["main"].script()
    blocks = {sch.get(b).name_hint: sch.get(b) for b in sch.get_child_blocks(sch.get_sblock("root"))}
    assert len(blocks) >= 7, text  # the chain's blocks, the concatenation, the moves after it
    assert text.count("T.vectorized(") >= 6, text
    concat = [b for b in blocks if b.startswith(CONCAT_BLOCK)]
    assert concat and not any(_has_arithmetic(blocks[b].body) for b in concat), text


def test_small_producer_read_by_several_blocks_is_not_copied_into_them(monkeypatch):
    """TFLite's softmax reciprocal: a clz-normalised estimate of one element per row, read by
    each of three Newton steps and the final scale.  Inlined, each reader held a copy of the
    estimate's expression (8 `clz` in mobilenetv2_tiny's kernel), and TVM's StmtSimplify and
    RemoveNoOp took 0.25 s on MobileNetV2-0.35's one-element kernel, 0.68 s on attn_kws_h's
    196-element one.  The estimate stays one block: its `clz` twice (the normalised value is
    read twice by it), counted by hand from the TIR."""
    from tvm_bridge import schedule
    from tvm_bridge.schedule import schedule_func

    mod, target = fused_module("mobilenetv2_tiny", "tflite")
    funcs = [f for _, f in mod.functions_items() if isinstance(f, tvm.tirx.PrimFunc) and "T.clz(" in f.script()
             and f.script().count("T.clz(") > 1]
    assert len(funcs) == 1
    text = schedule_func(funcs[0], target, []).mod["main"].script()
    assert text.count("T.clz(") == 2, text
    # the rule is what keeps it apart: without it the copies come back
    monkeypatch.setattr(schedule, "SMALL_SHARED_ELEMENTS", 0)
    assert schedule_func(funcs[0], target, []).mod["main"].script().count("T.clz(") > 2
