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
