"""The TVM bridge: L3 (func/arith/linalg/tensor on integers) -> Relax -> compiled code."""

# imported on first use: qd-run's cached path (tvm_bridge/fast_run.py) imports neither xDSL nor TVM's compiler
_LAZY = {"CompiledModel": "compile", "compile_module": "compile", "host_target": "compile",
         "TranslationError": "translate", "translate": "translate"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"tvm_bridge.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'tvm_bridge' has no attribute {name!r}")
