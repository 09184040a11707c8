"""The accumulators on the stack (tvm_bridge/lowering.py): which kernels' ``ACC`` buffers
`mark_accumulators` annotates after TVM's lowering, and that the builds' TIR pipeline does
it (the assembly of a prefetching loop: tests/tvm_bridge/test_vnni.py)."""

from __future__ import annotations

import pytest

tvm = pytest.importorskip("tvm")


def _marked(prim):
    """`prim` as our builds lower it: built through the registered pipeline (`register`),
    the module taken right after `mark_accumulators` (a pass instrument)."""
    from tvm_bridge.compile import host_target
    from tvm_bridge.lowering import register

    seen = []

    @tvm.instrument.pass_instrument
    class AfterMarking:
        def run_after_pass(self, mod, info):
            if info.name == "QdialectStackAccumulators":
                seen.append(mod)

    mod = tvm.IRModule({"main": prim.with_attr("global_symbol", "main")})
    with tvm.transform.PassContext(instruments=[AfterMarking()]):
        tvm.tirx.build(mod, target=host_target(), pipeline=register())
    assert len(seen) == 1
    return seen[0]


def _annotations(mod) -> list:
    """(buffer name, annotations) of every AllocBuffer in `mod`."""
    import tvm_ffi
    from tvm import tirx

    found = []

    def visit(node):
        found.append((node.buffer.name, dict(node.annotations)))
        return node

    for f in mod.functions.values():
        tvm_ffi.structural_map(f.body, (tirx.AllocBuffer, visit))
    return found


def _acc(mod) -> list:
    return [a for name, a in _annotations(mod) if name == "ACC"]


def test_vectors_of_one_width_go_on_the_stack():
    """ResNet101's 3x3 layer at 4x4 (8 pixels x two 16-lane vectors, every access a 16-lane
    vector): its ACC is annotated for the stack, and nothing else is."""
    from tvm_bridge import lowering, vnni

    mod = _marked((vnni._bare_kernel(vnni.VNNI, 6, 6, 256, 256, 3, 3, (1, 1), (1, 1))))
    accs = _acc(mod)
    assert accs and all(int(a.get("disable_lower_builtin", 0)) == 1 for a in accs), _annotations(mod)
    assert all("disable_lower_builtin" not in a for name, a in _annotations(mod) if name != "ACC")


@pytest.mark.parametrize("shape", [(9, 9, 8, 24, 3, 3), (1, 1, 64, 48, 1, 1)], ids=["16+8 lanes", "fc 48"])
def test_vectors_of_several_widths_stay_in_the_workspace(shape):
    """K = 24 (a 16-lane and an 8-lane vector) and a 48-channel fully connected layer (its
    epilogue reads 48 lanes at once): SROA would split such an alloca into single lanes, so
    their ACC is left as TVM lowers it."""
    from tvm_bridge import lowering, vnni

    h, w, c, k, kh, kw = shape
    mod = _marked((vnni._bare_kernel(vnni.VNNI, h, w, c, k, kh, kw, (1, 1), (1, 1))))
    accs = _acc(mod)
    assert accs and not any("disable_lower_builtin" in a for a in accs), accs


def test_large_accumulators_stay_in_the_workspace(monkeypatch):
    """Beyond MAX_STACK_BYTES an ACC buffer is not put on the stack."""
    from tvm_bridge import lowering, vnni

    monkeypatch.setattr(lowering, "MAX_STACK_BYTES", 512)  # (this kernel's ACC: 8 x 32 int32, 1 KB)
    mod = _marked((vnni._bare_kernel(vnni.VNNI, 6, 6, 256, 256, 3, 3, (1, 1), (1, 1))))
    assert _acc(mod) and not any("disable_lower_builtin" in a for a in _acc(mod))


def test_the_builds_pipeline_is_registered_once():
    """`register` names a pipeline TVM's `get_tir_pipeline` knows, in three parts as TVM's own
    (lowering, the host's and the device's finalizing passes); `_marked` above builds through
    it and finds the marking pass run once."""
    from tvm import tirx

    from tvm_bridge import lowering

    assert lowering.register() == lowering.register() == lowering.PIPELINE
    assert len(tirx.get_tir_pipeline(lowering.PIPELINE)) == 3
