"""The table `qnn-decompose` reads: op class -> its decomposition `fn(emitter, op)`.

transforms/decompose.py fills it with the decompositions of the canonical qnn ops;
the modules named in `EXTENSIONS` add theirs on import (float edges, ONNX Runtime's
float islands and reductions, MatMulNBits, mask ops).  A module that adds to the
table imports this one, not the pass, and the pass loads the extensions through
`load_extensions` before it runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

#: op class -> decomposition (returns the new value, or a list of them, for the op's results)
DECOMPOSITIONS: dict[type, Callable] = {}

#: the modules that register decompositions on import, in the order they are loaded (a later
#: one may wrap an earlier one's entry)
EXTENSIONS = (
    "transforms.float_edges",  # quant.qcast / dcast, float qnn.quantize / dequantize
    "transforms.float_reductions",  # ORT's float softmax / average pool / ReduceMean
    "transforms.float_islands",  # ONNX float islands (nn ops), 16-bit float binary ops
    "transforms.float_transformer",  # ORT's float Div / Sqrt / Erf / LayerNorm / RK ReduceMean
    "transforms.float_nbits",  # ORT's MatMulNBits (nn.fully_connected ort_nbits)
    "transforms.mask_islands",  # int32 / i1 mask ops (nn.compare, select, logical_*, casts)
)


def load_extensions() -> None:
    """Import every module of `EXTENSIONS` (each registers into `DECOMPOSITIONS` once)."""
    for name in EXTENSIONS:
        importlib.import_module(name)
