"""CompiledModel's call path (the per-call floor, bench/call_floor.py): inputs copied into
buffers kept per input, outputs copied out of the VM's buffers.  Checked against LiteRT's
reference kernels (BUILTIN_REF) call after call: a result stays what it was when the next
call refills the buffers (also for a model whose output is a reshaped input), arrays of
another shape, dtype or layout go the slow way and still match, uint8 models take and give
uint8, and the previous path (`fast_call = False`) gives the same arrays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qdialect.builder import GraphBuilder
from qdialect.dialects.quant import UniformQuantizedType as Q
from qdialect.exporter.tflite import export_tflite
from transforms.pipelines import lower_to_l3
from tvm_bridge.compile import compile_module
from tvm_bridge.run_cli import _entry_signature, litert_run, load_module, make_inputs

ZOO = Path(__file__).resolve().parents[2] / "models" / "zoo"


def _reshape_model() -> bytes:
    g = GraphBuilder()
    x = g.input([1, 4, 16], Q.per_tensor(0.05, -3))
    g.output(g.reshape(x, [1, 64]))
    return export_tflite(g.build())


def _add_model() -> bytes:
    g = GraphBuilder()
    a, b = g.input([1, 64], Q.per_tensor(0.05, -3)), g.input([1, 64], Q.per_tensor(0.04, 5))
    g.output(g.add(a, b, Q.per_tensor(0.07, -2)))
    return export_tflite(g.build())


def _compiled(tflite: bytes, tmp_path, n_samples: int = 3):
    path = tmp_path / "model.tflite"
    path.write_bytes(tflite)
    module = load_module(path, 1)
    samples = [make_inputs(_entry_signature(module)[1], seed) for seed in range(n_samples)]
    theirs = litert_run(tflite, samples, reference=True)
    lower_to_l3(module)
    return compile_module(module), samples, theirs


def _same(ours, theirs) -> bool:
    return len(ours) == len(theirs) and all(a.dtype == b.dtype and a.shape == tuple(b.shape) and np.array_equal(a, b) for a, b in zip(ours, theirs))


@pytest.mark.parametrize("tflite", [_reshape_model, _add_model], ids=["reshape", "add"])
def test_results_survive_the_next_call(tflite, tmp_path):
    model, samples, theirs = _compiled(tflite(), tmp_path)
    results = [model(*s) for s in samples]  # each call refills the same input buffers
    assert len(results) == len(theirs) == len(samples)
    for ours, ref in zip(results, theirs):
        assert _same(ours, ref)
    results[0][0][...] = 0  # the caller owns its arrays: writing one changes no later result
    assert _same(model(*samples[1]), theirs[1])


def test_other_shapes_dtypes_and_layouts_take_the_slow_way(tmp_path):
    model, samples, theirs = _compiled(_add_model(), tmp_path)
    assert _same(model(*samples[0]), theirs[0])
    a, b = samples[1]
    strided = np.asfortranarray(np.concatenate([a, a]))[:1]  # same shape and dtype, another layout
    assert _same(model(strided, b), theirs[1])
    assert _same(model(memoryview(a), b), theirs[1])  # not an ndarray: made one, then staged
    with pytest.raises(Exception):  # noqa: B017,PT011 - the VM refuses an int16 input by its own message
        model(a.astype(np.int16), b)
    assert _same(model(*samples[2]), theirs[2])  # and the kept buffers still work


def test_uint8_model_in_and_out(tmp_path):
    model, samples, theirs = _compiled((ZOO / "cnn_small_uint8.tflite").read_bytes(), tmp_path, n_samples=2)
    assert samples[0][0].dtype == np.uint8
    for s, ref in zip(samples, theirs):
        ours = model(*s)
        assert ours[0].dtype == np.uint8 and _same(ours, ref)


def test_previous_call_path_gives_the_same_arrays(tmp_path, monkeypatch):
    monkeypatch.setenv("QDIALECT_FUSED", "0")  # the VM's two call paths (the fused form has one)
    model, samples, theirs = _compiled((ZOO / "elementwise_movement.tflite").read_bytes(), tmp_path, n_samples=2)
    before = type(model)(model.executable, model.n_outputs, model.target, model.out_dtypes,
                         library=model.library, library_path=model.library_path)
    before.fast_call = False
    for s, ref in zip(samples, theirs):
        fast, slow = model(*s), before(*s)
        assert _same(fast, ref) and _same(slow, ref)


def test_one_input_one_output_shortcut_falls_back(tmp_path, monkeypatch):
    monkeypatch.setenv("QDIALECT_FUSED", "0")  # the VM's shortcut (the fused form has its own call)
    model, samples, theirs = _compiled(_reshape_model(), tmp_path)
    assert _same(model(*samples[0]), theirs[0]) and model._one_in_one_out is not None
    (x,) = samples[1]
    strided = np.asfortranarray(np.concatenate([x, x]))[:1]
    assert _same(model(strided), theirs[1])  # another layout: copied into the same buffer
    assert _same(model(memoryview(x)), theirs[1])  # not an ndarray: the general path
    with pytest.raises(Exception, match="expects 1 arguments"):  # noqa: PT011 - TVM's InternalError
        model(x, x)
    assert _same(model(*samples[2]), theirs[2]) and model._one_in_one_out is not None
