"""Registration of qdialect's dialects and passes with xDSL tools (`xdsl-opt`, `qd-opt`).

Exposed through the `xdsl.universe` entry point in pyproject.toml.  Factories
import lazily so that listing the universe stays cheap.
"""

import importlib
import importlib.util
from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe


def _quant() -> Dialect:
    from qdialect.dialects.quant import Quant

    return Quant


def _qnn() -> Dialect:
    from qdialect.dialects.qnn import QNN

    return QNN


def _lazy_dialect(module: str, attr: str) -> Callable[[], Dialect]:
    def factory() -> Dialect:
        return getattr(importlib.import_module(module), attr)

    return factory


def _lazy_pass(module: str, attr: str) -> Callable[[], type[ModulePass]]:
    def factory() -> type[ModulePass]:
        return getattr(importlib.import_module(module), attr)

    return factory


def _present(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


DIALECTS: dict[str, Callable[[], Dialect]] = {"quant": _quant, "qnn": _qnn}
"""Dialect name -> factory."""
for _name, _module, _attr in [
    ("qint", "qdialect.dialects.qint", "QInt"),  # L2 integer primitives
    ("nn", "qdialect.dialects.nn", "NN"),  # L0 float ops
]:
    if _present(_module):
        DIALECTS[_name] = _lazy_dialect(_module, _attr)

PASSES: dict[str, Callable[[], type[ModulePass]]] = {}
"""Pass name -> factory (one module per pass under transforms/)."""
for _name, _module, _attr in [
    ("qnn-canonicalize", "transforms.canonicalize", "QnnCanonicalizePass"),
    ("qnn-decompose", "transforms.decompose", "QnnDecomposePass"),
    ("qnn-lower-to-linalg", "transforms.lower_to_linalg", "QnnLowerToLinalgPass"),
    ("qnn-raise", "transforms.raise_fake_quant", "QnnRaisePass"),
    ("qnn-lower-to-float", "transforms.lower_to_float", "QnnLowerToFloatPass"),
    ("qnn-partition", "transforms.partition", "QnnPartitionPass"),
    ("qnn-overflow-check", "transforms.overflow_check", "QnnOverflowCheckPass"),
    ("qnn-to-l3", "transforms.pipelines", "QnnToL3Pipeline"),
    ("qnn-lower-simulated-quantize", "transforms.lower_simulated_quantize", "QnnLowerSimulatedQuantizePass"),
    ("qnn-raise-layer-norm", "transforms.raise_layer_norm", "QnnRaiseLayerNormPass"),
    ("qnn-expand-layer-norm", "transforms.raise_layer_norm", "QnnExpandLayerNormPass"),
]:
    if _present(_module):
        PASSES[_name] = _lazy_pass(_module, _attr)

QDIALECT_UNIVERSE = Universe(all_dialects=DIALECTS, all_passes=PASSES)
