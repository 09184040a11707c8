"""A trained encoder of the transformer zoo end to end through TVM, bit-exact with LiteRT.

`models/transformers/kws_attn_16x8.tflite` (tools/gen_transformer_zoo.py: a 16x8 keyword
spotter with one attention block -- 16-bit Q @ K^T and P @ V, the 16-bit softmax's LUTs,
hand-spelled layer norms with RSQRT, GELU's interpolated table, mean over time), imported,
lowered to L3, compiled for the host and run on seeded inputs over the whole int16 range;
expected values from LiteRT (BUILTIN_REF under `tflite`, the default interpreter under
`litert`).  The int8 encoders take 30-70 s each to compile here, so they are measured by
`qd-run` (README / bench/latency.py --attention), not in the test suite.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

MODEL = Path(__file__).resolve().parents[2] / "models" / "transformers" / "kws_attn_16x8.tflite"


@pytest.mark.parametrize("rounding", ["tflite", "litert"])
def test_kws_attention_encoder_16x8_bit_exact(rounding):
    from qdialect.dialects.qnn import set_rounding
    from transforms.pipelines import lower_to_l3
    from tvm_bridge.compile import compile_module
    from tvm_bridge.run_cli import _entry_signature, litert_run, load_module, make_inputs

    module = load_module(MODEL, batch=1)
    _, in_values, _ = _entry_signature(module)
    samples = [make_inputs(in_values, seed) for seed in range(3)]
    if rounding != "tflite":
        set_rounding(module, rounding)
    model = compile_module(lower_to_l3(module))
    theirs = litert_run(MODEL.read_bytes(), samples, reference=rounding == "tflite")
    differ = compared = 0
    for sample, expected in zip(samples, theirs):
        (ours,) = model(*sample)
        (want,) = expected
        differ += int(np.count_nonzero(ours.reshape(want.shape).astype(np.int64) != want.astype(np.int64)))
        compared += want.size
    assert compared == 3 * 6 and differ == 0, f"{differ} of {compared} differ ({rounding})"
