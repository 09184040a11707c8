"""The int8 kernel registry: which hand-written TIR kernel takes a convolution or a
linalg.generic, for a dot-product flavor (tvm_bridge/vnni.py's `Flavor`).

The translation (tvm_bridge/translate.py) consults this module and nothing else about
the kernels, and for the flavor a target gets (`target_flavor`); the kernel modules
(vnni.py, amx.py, depthwise.py, batch_matmul.py, epilogue.py) depend only on the shared
pieces in tvm_bridge/common.py and never on the translation
(no import cycle, at module level or inside functions).  The translator is passed to
the kernels as an object (its `bb`, `env`, `tensor`, `dense`, `vnni_kernels`, ...).

Each kernel that takes an op is recorded in the translator's `choices` list (when it
has one) as (op kind, kernel name, family): `family` names the instruction family the
kernel runs on (`FAMILIES`), "generic" for TVM's own schedules.
"""

from __future__ import annotations

from dataclasses import replace

from tvm_bridge import amx, batch_matmul, depthwise, epilogue, vnni
from tvm_bridge.common import _add_init, _init_value, dtype_of, shape_of
from tvm_bridge.vnni import Flavor, NotApplicable, _has

#: flavor name -> the instruction family it runs on (what the reports print)
FAMILIES = {"vnni": "avx512-vnni (vpdpbusd)", "pmaddwd": "avx2 (vpmaddwd, 256-bit)",
            "pmaddwd512": "avx512bw (vpmaddwd, 512-bit)"}
#: kernels whose instruction is not their flavor's (kernel name -> family): the depthwise
#: kernel multiplies 16-bit pairs (tvm_bridge/depthwise.py)
KERNEL_FAMILIES = {"vnni_depthwise": "avx512-vnni (vpdpwssd)", "pmaddwd512_depthwise": "avx512bw (vpmaddwd, 512-bit)",
                   "pmaddwd_depthwise": "avx2 (vpmaddwd, 256-bit)", "amx_conv2d": "amx-int8 (tdpbusd)",
                   "amx_batch_matmul": "amx-int8 (tdpbusd)"}


def target_flavor(target) -> Flavor | None:
    """The kernels' flavor for `target`: `vnni.target_flavor`'s dot-product instruction, and
    on a target with `amx-int8`, when QDIALECT_AMX asks for it (tvm_bridge/amx.py), the VNNI
    flavor with its convolutions' reduction on AMX tiles where `amx.Tiles.takes` them (not
    on an AMX machine whose Linux refuses the tiles: `amx.can_run`)."""
    wanted = amx.enabled()  # (a value it does not know is an error on any target)
    flavor = vnni.target_flavor(target)
    if wanted and flavor is vnni.VNNI and _has(target, "amx-int8") and amx.can_run():
        return replace(flavor, tiled=amx.Tiles())
    return flavor


def family(flavor: Flavor | None) -> str:
    """The instruction family of `flavor` ("generic" for None)."""
    return "generic" if flavor is None else FAMILIES.get(flavor.name, flavor.name) + (
        " emulated" if flavor.emulate else "")


def record(tr, kind: str, kernel: str, flavor: Flavor | None, op=None) -> None:
    """Note in `tr.choices` (if the translator keeps one) that `kernel` took `op`, an op of
    `kind`: (kind, kernel, family, its multiply-accumulates or None)."""
    choices = getattr(tr, "choices", None)
    if choices is not None:
        name = family(flavor)
        if flavor is not None and kernel in KERNEL_FAMILIES:
            emulated = flavor.tiled.emulate if kernel.startswith("amx_") else flavor.emulate
            name = KERNEL_FAMILIES[kernel] + (" emulated" if emulated else "")
        choices.append((kind, kernel, name, None if op is None else macs(op)))


def macs(op) -> int | None:
    """The multiply-accumulates of a convolution, matmul or contraction `op` (the product of
    its loop extents: output elements x reduction size), or None when it cannot tell."""
    import math

    try:
        out = shape_of(op.results[0].type)
        if op.name == "linalg.conv_2d_nhwc_fhwc":
            w = shape_of(op.operands[1].type)
            return math.prod(out) * math.prod(w[1:])
        if op.name == "linalg.matmul":
            return math.prod(out) * shape_of(op.operands[0].type)[-1]
        extents = {}
        for v, m in zip(op.operands, op.indexing_maps.data):
            for r, e in enumerate(m.data.results):
                if hasattr(e, "position"):
                    extents[e.position] = shape_of(v.type)[r]
        return math.prod(extents.values())
    except Exception:  # noqa: BLE001 - an op of another form
        return None


def _try_batch_matmul(tr, op, flavor: Flavor) -> str | bool:
    geometry = batch_matmul.match(tr, op)
    if geometry is None or not batch_matmul.applicable(geometry, flavor):
        return False
    if flavor.tiled is not None:
        batches = 1
        for d in geometry["out_shape"][:-2]:
            batches *= d
        if not flavor.tiled.takes_matmul(geometry["M"], geometry["N"], geometry["K"], batches):
            flavor = replace(flavor, tiled=None)  # (the flavor's own register tiles)
    batch_matmul.emit(tr, op, geometry, flavor)
    return "amx_batch_matmul" if flavor.tiled is not None else True


def _try_depthwise(tr, op, flavor: Flavor) -> bool:
    geometry = depthwise.match(tr, op)
    if geometry is None:
        return False
    try:
        depthwise.emit(tr, op, geometry, flavor)
    except NotApplicable:  # sums that could leave int32 (nothing emitted)
        return False
    return True


#: the kernels a linalg.generic is offered to, in order: (name, try(tr, op, flavor)): falsy
#: when it does not take the op, else True (recorded as `<flavor>_<name>`) or the name of
#: the kernel that took it
GENERIC_KERNELS = (("batch_matmul", _try_batch_matmul), ("depthwise", _try_depthwise))


def emit_generic(tr, op, flavor: Flavor | None) -> bool:
    """Emit `op` (a linalg.generic) with the first registered kernel that takes it; False
    (nothing emitted) when none does or there is no flavor: the generic TE path."""
    if flavor is None:
        return False
    for name, attempt in GENERIC_KERNELS:
        taken = attempt(tr, op, flavor)
        if taken:
            record(tr, name, taken if isinstance(taken, str) else f"{flavor.name}_{name}", flavor, op)
            return True
    return False


def emit_conv(tr, op, x_value, w_value, out, strides, dilations, flavor: Flavor | None, source=None) -> bool:
    """Emit the int8 convolution `op` (input `x_value`, weights `w_value`, output init
    `out`) as the `flavor` dot-product kernel (tvm_bridge/vnni.py), with the elementwise
    chain after it fused in when it can be; False (nothing emitted) when it does not
    apply.  `source()` gives (relax input, in_pad): the input, or the unpadded input
    and the pad the kernel stages itself ((top, left), (bottom, right), value)."""
    if flavor is None:
        return False
    out_dtype = dtype_of(op.results[0].type)
    dense = tr.dense(w_value)
    weights = dense.array() if dense is not None else None
    x_shape = list(shape_of(x_value._type))
    if not vnni.applicable(x_shape, weights, dtype_of(x_value._type), dtype_of(w_value._type), out_dtype, flavor):
        return False
    k, kh, kw, c = weights.shape
    if flavor.tiled is not None and not flavor.tiled.takes(x_shape[1], x_shape[2], c, k, kh, kw, strides, dilations):
        flavor = replace(flavor, tiled=None)  # (the flavor's own register tiles)
    x, in_pad = source() if source is not None else (tr.tensor(x_value), None)
    try:
        _dot_conv(tr, op, out, x, x_shape, weights, strides, dilations, flavor, in_pad)
    except NotApplicable:  # sums that could leave int32 (nothing emitted)
        return False
    record(tr, "conv2d", "amx_conv2d" if flavor.tiled is not None else f"{flavor.name}_conv2d", flavor, op)
    return True


def _dot_conv(tr, op, out, x, x_shape, weights, strides, dilations, flavor, in_pad=None):
    """The convolution `op` (its output init `out`) as a dot-product kernel
    (tvm_bridge/vnni.py) of `flavor`, with the elementwise chain after it fused in when it
    can be (and `x` padded to `x_shape` by the kernel with `in_pad`, if given)."""

    def bare():
        return vnni.emit_conv2d(tr.bb, x, x_shape, weights, strides, dilations, kernels=tr.vnni_kernels,
                                flavor=flavor, in_pad=in_pad)

    init_tensor, init_const = _init_value(tr, out)
    if init_tensor is not None:  # sums added to a tensor: no epilogue fusion
        _add_init(tr, op, bare())
        return
    epi = epilogue.collect(tr, op)
    try:
        result = vnni.emit_conv2d(tr.bb, x, x_shape, weights, strides, dilations, epi, init_const,
                                  epi.key(tr), tr.vnni_kernels, flavor, in_pad)
    except NotApplicable:
        raise
    except Exception:  # noqa: BLE001 - an epilogue the kernel cannot take (nothing was
        # emitted yet): the bare convolution, and the chain translated op by op, which
        # names an op it cannot translate itself
        _add_init(tr, op, bare())
        return
    if epi.collapsed is not None:  # a fully connected layer's [1, 1, B, K] -> [B, K]
        from tvm import relax

        result = tr.bb.emit(relax.op.reshape(result, epi.collapsed))
    tr.env[epi.result] = result
    tr.fused.update(map(id, epi.ops))
