"""Shared pieces of the TVM bridge tests: a TFLite model lowered to L3, a build's assembly."""

from __future__ import annotations


def assembly(executable) -> str:
    """The assembly text of every module of `executable` (a `relax.build` result, or the
    fused form's runtime module) that has one."""

    def sources(m):
        try:
            yield m.inspect_source("asm")
        except Exception:  # noqa: BLE001 - a module without assembly (the VM's own)
            pass
        for sub in m.imports:
            yield from sources(sub)

    return "\n".join(sources(getattr(executable, "mod", executable)))


def lowered_tflite(model: bytes, rounding: str, tmp_path, name: str = "model.tflite"):
    """A function returning a fresh L3 module of the TFLite `model` under `rounding` on
    each call (a translation consumes nothing, but a build must not share a module)."""
    from qdialect.dialects.qnn import set_rounding
    from transforms import pipelines
    from tvm_bridge.run_cli import load_module

    path = tmp_path / name
    path.write_bytes(model)

    def lowered():
        module = load_module(path, 1)
        if rounding != "tflite":
            set_rounding(module, rounding)
        pipelines.lower_to_l3(module)
        return module

    return lowered
