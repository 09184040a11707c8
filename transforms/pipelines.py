"""Named pass pipelines, callable from Python and as `qd-opt -p` names.

- `lower_to_l3(module)`: whatever layer the module is at (L1 canonical qnn,
  L2 qint, or already L3), bring it to L3 (func/arith/linalg/tensor on
  integers) in place: `qnn-canonicalize`, `qnn-decompose`,
  `qnn-lower-to-linalg`, each run only when the module still holds ops of the
  layer it consumes.  A fake-quant (L0) module is raised first with `qnn-raise`.
  The model's unsigned edges stay marked `qnn.element_type = uiN` on the entry's
  arguments and results (qdialect/io_types.py), so L3 runs take and return the
  model's own dtypes.
- `qnn-to-l3` is the same pipeline as one pass for `qd-opt -p qnn-to-l3`.

Every step verifies the module; a step that cannot lower an op raises
`PassFailedException` naming every such op.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from qdialect import cyclic_gc
from qdialect.dialects.quant import quantized_element_type

L3_DIALECTS = frozenset({"builtin", "func", "arith", "linalg", "tensor", "math"})  # math.fma (float chains), math.ctlz


def _dialects(module: ModuleOp) -> set[str]:
    return {op.dialect_name() for op in module.walk()}


def _has_quantized_types(module: ModuleOp) -> bool:
    for op in module.walk():
        for v in (*op.operands, *op.results):
            if quantized_element_type(v.type) is not None:
                return True
    return False


def _has_fake_quant(module: ModuleOp) -> bool:
    """Whether some nn op may stand for a quantized one: every nn op but the float islands an
    ONNX model keeps (`qnn.rounding = "onnx"`: ONNX Runtime computes them in float)."""
    from qdialect.qparams import ONNX_ROUNDINGS

    def island(op) -> bool:
        return getattr(op.attributes.get("qnn.rounding"), "data", None) in ONNX_ROUNDINGS

    for op in module.walk():
        if op.dialect_name() == "nn" and not island(op):
            # a float constant read only by float islands is part of them (HardSwish's 1/6)
            if op.name == "nn.constant" and all(island(u.operation) for r in op.results for u in r.uses):
                continue
            return True
    return False


def _context() -> Context:
    from transforms.opt import QdOptMain

    return QdOptMain(args=[]).ctx


def l3_passes(module: ModuleOp) -> list[ModulePass]:
    """The passes that take `module` from its current layer to L3."""
    from transforms.canonicalize import QnnCanonicalizePass
    from transforms.decompose import QnnDecomposePass
    from transforms.lower_to_linalg import QnnLowerToLinalgPass
    from transforms.raise_fake_quant import QnnRaisePass

    from transforms.raise_layer_norm import QnnExpandLayerNormPass, has_layer_norm

    dialects = _dialects(module)
    passes: list[ModulePass] = []
    if has_layer_norm(module):  # composites go back to the chains they were raised from first
        passes.append(QnnExpandLayerNormPass())
    if "nn" in dialects and _has_fake_quant(module):
        passes.append(QnnRaisePass())
    if "qnn" in dialects or "nn" in dialects:
        passes.append(QnnCanonicalizePass())
    if passes or "quant" in dialects or _has_quantized_types(module):
        passes.append(QnnDecomposePass())
    if passes or "qint" in dialects:
        passes.append(QnnLowerToLinalgPass())
    return passes


@cyclic_gc.paused()
def lower_to_l3(module: ModuleOp, ctx: Context | None = None,
                timings: list[tuple[str, float]] | None = None,
                progress: Callable[[str], None] | None = None) -> ModuleOp:
    """Lower `module` (L0..L3) to L3 in place and return it; `timings` collects (pass, seconds)."""
    ctx = ctx or _context()
    for p in l3_passes(module):
        if progress is not None:
            progress(p.name)
        t0 = time.perf_counter()
        p.apply(ctx, module)
        module.verify()
        if timings is not None:
            timings.append((p.name, time.perf_counter() - t0))
    return module


@dataclass(frozen=True)
class QnnToL3Pipeline(ModulePass):
    """`qnn-to-l3`: qnn-canonicalize, qnn-decompose, qnn-lower-to-linalg (each only when needed)."""

    name = "qnn-to-l3"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_to_l3(op, ctx)
