"""`qnn-raise-layer-norm` on the transformer zoo: every layer normalization becomes one
`qnn.layer_norm`, and the raised module computes the chain's integers exactly.

Oracles: the unraised module on the interpreter (the layer norms' own outputs, exposed as
extra results, and the model outputs: 0 differing elements), LiteRT (BUILTIN_REF for
`tflite`, the default interpreter for `litert`) and ONNX Runtime (default session for
`onnxruntime`, ORT_DISABLE_ALL for `onnx`) on the model outputs: 0 differing elements.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType

from qdialect.dialects import nn, qnn
from qdialect.importer.onnx import import_onnx_file
from qdialect.importer.tflite import import_tflite_file
from qdialect.interpreter import run_module
from tests.onnx_helpers import differing, inputs_for, ort_run
from tests.tflite_writer import run_tflite
from transforms.raise_layer_norm import expand_layer_norms, raise_layer_norms

ZOO = Path(__file__).resolve().parents[2] / "models" / "transformers"
LAYER_NORMS = {"vit_tiny": 5, "bert_tiny": 5, "kws_attn": 3}  # Keras LayerNormalization layers per encoder
TFLITE = sorted(p for p in ZOO.glob("*.tflite") if not p.stem.endswith("_float"))
# the msgelu files need the `onnx` profile (ORT's default session runs MatMulNBits there)
ONNX = [(p, profile) for p in sorted((ZOO / "onnx").glob("*.onnx")) if "_float" not in p.stem
        for profile in ("onnxruntime", "onnx") if not ("msgelu" in p.stem and profile == "onnxruntime")]


def _encoder(path: Path) -> str:
    return next(k for k in LAYER_NORMS if path.stem.startswith(k))


def _expose(module, values) -> None:
    """Append `values` to the entry function's results (to compare intermediates)."""
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    ret = fn.get_return_op()
    ret.operands = (*ret.operands, *values)
    fn.function_type = FunctionType.from_lists(fn.function_type.inputs.data, [v.type for v in ret.operands])
    fn.res_attrs = None


def _raised_and_chain(module):
    """The raised module with every layer norm's output as an extra result, and the same module
    expanded back (its extra results are then the chains' outputs)."""
    raised = module.clone()
    ops = raise_layer_norms(raised)
    _expose(raised, [op.output for op in ops])
    raised.verify()
    chain = raised.clone()
    assert expand_layer_norms(chain) == len(ops)
    chain.verify()
    return raised, chain, ops


def _histogram(module) -> Counter:
    """Compute ops by name (constants aside: one read by several chains is cloned into each body)."""
    skip = (qnn.LayerNormOp, qnn.YieldOp, qnn.ConstantOp, nn.ConstantOp)
    return Counter(op.name for op in module.walk() if not isinstance(op, skip))


@pytest.mark.parametrize("path", TFLITE, ids=[p.stem for p in TFLITE])
def test_tflite_encoder_raised_equals_chain_and_litert(path):
    from tests.importer.test_tflite_import import random_inputs

    module = import_tflite_file(path)
    raised, chain, ops = _raised_and_chain(module)
    spelling = "tflite_hand" if path.stem.endswith("_16x8") else "tflite"
    assert Counter(op.spelling.data for op in ops) == {spelling: LAYER_NORMS[_encoder(path)]}
    assert all(op.axis.value.data == 2 for op in ops)  # [1, tokens, features]: the feature axis
    top = {o.name for o in raised.body.block.first_op.body.block.ops}
    assert not top & {"qnn.rsqrt", "qnn.squared_difference", "nn.mul"}, top  # every RSQRT is a layer norm's
    # raise then expand gives back the imported ops, one for one
    assert _histogram(chain) == _histogram(module)
    n_out = len(module.body.block.first_op.get_return_op().operands)
    model = path.read_bytes()
    for seed in (0, 1):
        inputs = random_inputs(model, seed)
        for reference, profile in ((True, "tflite"), (False, "litert")):
            ours = run_module(raised, inputs, rounding=profile)
            theirs = run_module(chain, inputs, rounding=profile)
            assert differing(ours, theirs) == [0] * len(ours), (seed, profile)
            litert = run_tflite(model, inputs, reference=reference)
            assert differing(ours[:n_out], litert) == [0] * n_out, (seed, profile)


@pytest.mark.parametrize("path,profile", ONNX, ids=[f"{p.stem}-{prof}" for p, prof in ONNX])
def test_onnx_encoder_raised_equals_chain_and_onnxruntime(path, profile):
    module = import_onnx_file(path, profile=profile)
    raised, chain, ops = _raised_and_chain(module)
    spelling = "onnx_hand" if "handln" in path.stem else "onnx"
    assert {op.spelling.data for op in ops} == {spelling}
    left = [o for o in raised.walk() if isinstance(o, nn.LayerNormOp) and not isinstance(o.parent_op(), qnn.LayerNormOp)]
    # every LayerNormalization of the file is raised but the ones whose float result feeds
    # another float op (the QOperator files' last one: a token mean or the class-token gather)
    assert len(ops) + len(left) == LAYER_NORMS[_encoder(path)]
    for ln in left:
        assert not any(isinstance(u.operation, qnn.QuantizeOp) for u in ln.results[0].uses)
    assert _histogram(chain) == _histogram(module)
    n_out = len(module.body.block.first_op.get_return_op().operands)
    for seed in (0, 1):
        inputs = inputs_for(module, seed)
        ours = run_module(raised, inputs)
        assert differing(ours, run_module(chain, inputs)) == [0] * len(ours), seed
        theirs = ort_run(path, inputs, disable_all=profile == "onnx")
        assert differing(ours[:n_out], theirs) == [0] * n_out, seed


def _hand_chain_model(dtype: str) -> bytes:
    """`d = x - mean(x); d * (rsqrt(mean(d * d) + eps) * gamma)` as a TFLite model (int8 or 16x8)."""
    from tests.tflite_writer import OpSpec, TensorSpec, build_model

    z = (3, 2, 0, -128, -128, -2) if dtype == "int8" else (0,) * 6
    top = 127 if dtype == "int8" else 32767
    gamma = np.random.default_rng(3).integers(top // 2, top + 1, 16)
    tensors = [
        TensorSpec((2, 8, 16), dtype, 0.05, z[0]),
        TensorSpec((1,), "int32", data=np.array([-1])),
        TensorSpec((2, 8, 1), dtype, 0.01, z[1]),
        TensorSpec((2, 8, 16), dtype, 0.04, z[2]),
        TensorSpec((2, 8, 16), dtype, 0.02, z[3]),
        TensorSpec((2, 8, 1), dtype, 0.01, z[4]),
        TensorSpec((), dtype, 1e-3 / top, z[4], data=np.array(top)),
        TensorSpec((2, 8, 1), dtype, 0.01, z[4]),
        TensorSpec((2, 8, 1), dtype, 0.05, z[4]),
        TensorSpec((16,), dtype, 1.0 / top, z[4] if dtype == "int8" else 0, data=gamma),
        TensorSpec((2, 8, 16), dtype, 0.05, z[4]),
        TensorSpec((2, 8, 16), dtype, 0.03, z[5]),
    ]
    ops = [OpSpec("MEAN", [0, 1], [2], {"keep_dims": True}), OpSpec("SUB", [0, 2], [3]), OpSpec("MUL", [3, 3], [4]),
           OpSpec("MEAN", [4, 1], [5], {"keep_dims": True}), OpSpec("ADD", [5, 6], [7]), OpSpec("RSQRT", [7], [8]),
           OpSpec("MUL", [8, 9], [10]), OpSpec("MUL", [3, 10], [11])]
    return build_model(ops, tensors, [0], [11])


@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_hand_chain_through_tvm_matches_litert(dtype):
    """The raised op lowers (expanded to its chain first) and TVM's integers are LiteRT's."""
    from qdialect.importer import import_tflite
    from tests.tflite_writer import run_tflite
    from transforms.pipelines import lower_to_l3
    from tvm_bridge.compile import compile_module

    model = _hand_chain_model(dtype)
    module = import_tflite(model)
    (op,) = raise_layer_norms(module)
    assert op.spelling.data == "tflite_hand" and op.axis.value.data == 2
    compiled = compile_module(lower_to_l3(module.clone()))
    info = np.iinfo(dtype)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.integers(info.min, int(info.max) + 1, (2, 8, 16)).astype(dtype)
        (expected,) = run_tflite(model, [x], reference=True)
        (interp,) = run_module(module, [x])
        (tvm,) = compiled(x)
        np.testing.assert_array_equal(interp, expected)
        np.testing.assert_array_equal(tvm.view(expected.dtype), expected)


def test_partitioning_keeps_the_raised_op_whole_on_the_host():
    """No target has a row for qnn.layer_norm yet: it stays one op on the host, outputs unchanged."""
    from transforms.partition import partition

    module = import_tflite_file(ZOO / "kws_attn.tflite")
    raised = module.clone()
    raise_layer_norms(raised)
    result = partition(raised, "cmsis-nn")
    raised.verify()
    host = [o for o in raised.body.block.first_op.body.block.ops if isinstance(o, qnn.LayerNormOp)]
    assert len(host) == LAYER_NORMS["kws_attn"]
    assert any(r.op == "qnn.layer_norm" for r in result.remarks)
    x = [np.random.default_rng(0).integers(-128, 128, (1, 49, 10)).astype(np.int8)]
    assert differing(run_module(raised, x), run_module(module, x)) == [0]


@pytest.mark.parametrize("path,intermediate", [
    (ZOO / "kws_attn.tflite", "qnn.rsqrt"),
    (ZOO / "kws_attn.tflite", "nn.mul"),  # the NEG island
    (ZOO / "kws_attn_16x8.tflite", "qnn.sub"),
    (ZOO / "onnx" / "vit_tiny_handln_qdq_u8.onnx", "nn.sqrt"),
    (ZOO / "onnx" / "kws_attn_qdq_u8.onnx", "nn.layer_norm"),
], ids=lambda v: getattr(v, "stem", v))
def test_a_chain_whose_intermediate_is_read_outside_is_not_raised(path, intermediate):
    """Returning one intermediate of the first layer norm as well keeps that chain as it is."""
    module = import_onnx_file(path) if path.suffix == ".onnx" else import_tflite_file(path)
    first = next(o for o in module.body.block.first_op.body.block.ops if o.name == intermediate)
    _expose(module, [first.results[0]])
    module.verify()
    ops = raise_layer_norms(module)
    assert len(ops) == LAYER_NORMS[_encoder(path)] - 1
    assert first.parent is not None and any(o is first for o in module.body.block.first_op.body.block.ops)
