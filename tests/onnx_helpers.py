"""ONNX Runtime as the oracle of the ONNX frontend's tests (models from tools/gen_onnx_zoo.py)."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np

ZOO = Path(__file__).resolve().parent.parent / "models" / "onnx"
MODELS = sorted(ZOO.glob("*.onnx"))


def model(name: str) -> Path:
    return ZOO / f"{name}.onnx"


@functools.cache
def _session(path: str, disable_all: bool):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    if disable_all:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_run(path: Path, inputs: list[np.ndarray], *, disable_all: bool = False) -> list[np.ndarray]:
    """ONNX Runtime's outputs: the default session, or ORT_DISABLE_ALL (the spec's QDQ meaning)."""
    sess = _session(str(path), disable_all)
    names = [i.name for i in sess.get_inputs()]
    return [np.asarray(o) for o in sess.run(None, dict(zip(names, inputs)))]


def inputs_for(module, seed: int) -> list[np.ndarray]:
    """Seeded inputs in the model's own dtypes (float N(0, 1), integers over the whole range)."""
    from tvm_bridge.run_cli import _entry_signature, make_inputs

    _, args, _ = _entry_signature(module)
    return make_inputs(args, seed)


def differing(ours: list[np.ndarray], theirs: list[np.ndarray]) -> list[int]:
    """Differing elements per output (float outputs compared bit for bit)."""
    counts = []
    for a, b in zip(ours, theirs):
        a, b = np.asarray(a), np.asarray(b).reshape(np.shape(a))
        if a.dtype.kind == "f" or b.dtype.kind == "f":
            counts.append(int(np.count_nonzero(a.astype(np.float32).view(np.int32) != b.astype(np.float32).view(np.int32))))
        else:
            counts.append(int(np.count_nonzero(a.astype(np.int64) != b.astype(np.int64))))
    return counts


def ort_optimized_graph(model: str | bytes):
    """The graph ONNX Runtime's default session runs (SessionOptions.optimized_model_filepath) of a
    model given by path or bytes."""
    import tempfile

    import onnx
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as tmp:
        so = ort.SessionOptions()
        so.log_severity_level = 3
        so.optimized_model_filepath = str(Path(tmp) / "opt.onnx")
        ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        return onnx.load(so.optimized_model_filepath).graph


@functools.cache
def ort_float_nodes(path: str) -> frozenset[str]:
    """Names of the compute nodes ONNX Runtime's default session leaves in float (its optimized graph)."""
    graph = ort_optimized_graph(path)
    compute = {"Conv", "Gemm", "MatMul", "Add", "Sub", "Mul", "Div", "Sigmoid", "Tanh", "LeakyRelu", "Softmax",
               "AveragePool", "GlobalAveragePool", "Concat", "HardSigmoid", "HardSwish", "ReduceMean", "Relu", "Clip"}
    # (the NCHWc layout transformer renames the float nodes it rewrites: `<name>_out_nchwc`)
    return frozenset(re.sub(r"_out_nchwc$", "", n.name) for n in graph.node if n.op_type in compute)


REMARK = re.compile(r"node \d+ '([^']*)' \((\w+)\): (?:ONNX Runtime runs it in float|stays in float)")


def our_float_nodes(remarks: list[str]) -> frozenset[str]:
    return frozenset(m.group(1) for r in remarks if (m := REMARK.match(r)))
