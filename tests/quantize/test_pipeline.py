"""qd-quantize output through the lowering pipeline (L1 -> L3), bit-exact on the interpreter.

The quantized module holds only qnn ops (and quant casts at the float edges),
so `transforms.pipelines.lower_to_l3` takes it; the L3 module computes the
same integers.  Runs when the pipeline exists.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from qdialect.dialects.quant import quantized_element_type
from qdialect.interpreter import run_module
from qdialect.reference.elementwise import quantize
from tests.quantize.conftest import FLOAT_MODELS, data, float_module
from transforms.quantizer.flow import quantize_float_module
from transforms.quantizer.strategy import Int8, load_strategy

pytestmark = pytest.mark.skipif(importlib.util.find_spec("transforms.pipelines") is None,
                                reason="lowering pipeline (transforms.pipelines) not built yet")


class Mixed(Int8):
    """int16 activations on every other layer: i8 / i16 meet everywhere."""

    def activation_bits(self, layer):
        return 16 if layer.index % 2 else 8

    def activation_symmetric(self, layer):
        return self.activation_bits(layer) == 16


def l1_vs_l3(name, strategy):
    from transforms.pipelines import lower_to_l3

    result = quantize_float_module(float_module(name), data(name, "calib"), strategy, int_io=True)
    lowered = lower_to_l3(result.module.clone())
    assert not any(op.name.startswith(("qnn.", "qint.", "quant.")) for op in lowered.walk())
    args = result.module.ops.first.body.block.args
    for sample in data(name, "heldout")[:2]:
        stored = [quantize(x, out_q=quantized_element_type(a.type).qparams()) for x, a in zip(sample, args)]
        for a, b in zip(run_module(result.module, stored), run_module(lowered, stored)):
            assert int(np.count_nonzero(a != b.reshape(a.shape))) == 0


@pytest.mark.parametrize("name", FLOAT_MODELS)
def test_int8_lowers_to_l3_bit_exact(name):
    l1_vs_l3(name, load_strategy("int8"))


@pytest.mark.parametrize("name", ["cnn_small", "mlp_act"])
def test_mixed_widths_lower_to_l3_bit_exact(name):
    l1_vs_l3(name, Mixed())
