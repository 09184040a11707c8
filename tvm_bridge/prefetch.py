"""Weights fetched from memory while the kernel before them computes.

A model whose weights do not stay in the last-level cache between calls reads them
from memory on every call.  The dot-product kernels (tvm_bridge/vnni.py) are
compute-bound where a weight byte serves many pixels, and the memory then idles while
the next kernel's weights wait far away.  VGG16 at 64x64 (43 MB of weights) took 4.1 ms
a call against 2.7 ms for its kernels timed warm (Zen 5, one thread,
`bench/profile_kernels.py --in-context`): conv4_2 alone 0.39-0.71 ms in the call
against 0.30 warm.

So a dot-product convolution of `main` may take the packed weights of the next one as
one more argument and prefetch them (`prefetcht1`, into L2, whose evictions fill L3):
as many bytes as its compute time at `RATE` multiply-accumulates a second leaves room
for at a memory bandwidth of `BANDWIDTH` bytes a second, beyond its own weights
(`plan`), spread over its tile iterations (`vnni._prefetch`).  A memory-bound kernel (a
fully connected layer, a 1x1 layer on a 4x4 image) fetches nothing more: in a first
version without the subtraction, ResNet50 and ResNet101 lost 5 %.  Fetching further
ahead than the next call (the stream up to 30 % of the LLC ahead) was slower on VGG16
than the next call alone (x1.08 against x1.01 of XNNPACK, one process).  The rewrite
happens after the translation of `main` (the next kernel's weights are not known when
a kernel is emitted): `apply` rebuilds the kernels that prefetch, one PrimFunc per
(kernel, prefetched segments).

Only where the model's packed weights are at least half the last-level cache
(`llc_bytes`, read from sysfs): weights that stay in the cache gain nothing.
`QDIALECT_PREFETCH=0` turns it off (a key of the compiled-artifact cache).  Measured in
one process against the build without it (Zen 5, one thread): VGG16_64 4.07 -> 3.64 ms
(XNNPACK 3.59), ResNet101_64 and ResNet50_96 unchanged within 1 %.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

#: set QDIALECT_PREFETCH=0 to build no prefetching kernels
ENV = "QDIALECT_PREFETCH"
#: bytes a second of memory a kernel's prefetches may use while it computes
BANDWIDTH = 30e9
#: multiply-accumulates a second of the 512-bit VNNI kernels (about 520 GMAC/s on a Zen 5
#: core, bench/conv_gmacs.py); the 256-bit and vpmaddwd flavors take about four times as long
RATE = {"vnni": 500e9}
RATE_OTHER = 125e9
#: fewer bytes than this are not worth a kernel of their own
MIN_BYTES = 64 << 10
#: the share of the LLC fetched ahead of the next call's weights at most
WINDOW = 0.3
#: how many calls ahead a kernel prefetches at most
LOOKAHEAD = 1
#: later calls' weights a kernel prefetches from at most (a parameter each)
MAX_SEGMENTS = 4


@dataclass
class DotCall:
    """One dot-product kernel call of the translation, in emission order."""

    KEY = "dot calls"

    var: object  # the relax Var the call is bound to
    gvar: object
    args: list
    out_type: object
    macs: int
    weight_bytes: int
    weight_type: tuple  # (shape, dtype) of the packed weights, args[1]
    flavor: object
    rebuild: object  # (shape, dtype, bytes) -> the kernel's PrimFunc prefetching those bytes


@functools.lru_cache(maxsize=1)
def llc_bytes(path: str = "/sys/devices/system/cpu/cpu0/cache") -> int:
    """The largest cache of CPU 0 in bytes (32 MiB when sysfs does not say)."""
    best = 0
    try:
        for entry in os.listdir(path):
            try:
                with open(os.path.join(path, entry, "size")) as fh:
                    text = fh.read().strip()
            except OSError:
                continue
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            digits = text.rstrip("KMG")
            if digits.isdigit():
                best = max(best, int(digits) * scale)
    except OSError:
        pass
    return best or 32 << 20


def plan(calls: list[DotCall], llc: int | None = None) -> dict[int, list[tuple[int, int, int]]]:
    """{index of a call: the segments (index of a later call, first byte, bytes) of the
    later calls' weights it prefetches}.

    The weights of all calls after the first, in call order, are one stream.  Each call
    fetches the stream from where the calls before it stopped (and not before the next
    call's weights: its own are on their way), as many bytes as its compute time leaves
    bandwidth for beyond its own weights, and never more than WINDOW of the LLC past the
    start of the next call's weights (what is fetched ahead must still be there when its
    kernel runs)."""
    llc = llc or llc_bytes()
    if os.environ.get(ENV) == "0" or len(calls) < 2 or sum(c.weight_bytes for c in calls) < llc // 2:
        return {}
    offsets = [0]
    for c in calls:
        offsets.append(offsets[-1] + c.weight_bytes)
    window = int(llc * WINDOW)
    out, pos = {}, 0
    for i, call in enumerate(calls[:-1]):
        rate = RATE.get(call.flavor.name, RATE_OTHER) if call.flavor.max_lanes == 16 else RATE_OTHER
        budget = int(call.macs * BANDWIDTH / rate) - call.weight_bytes
        lo = max(pos, offsets[i + 1])
        hi = min(lo + max(budget, 0), offsets[i + 1] + window, offsets[min(i + 1 + LOOKAHEAD, len(calls))])
        if hi - lo < MIN_BYTES:
            continue
        segments = []
        for j in range(i + 1, len(calls)):
            a, b = max(lo, offsets[j]), min(hi, offsets[j + 1])
            if a < b:
                segments.append((j, a - offsets[j], b - a))
        out[i] = segments = segments[:MAX_SEGMENTS]
        j, first, n = segments[-1]
        pos = offsets[j] + first + n
    return out


def apply(bb, calls: list[DotCall]):
    """The module of BlockBuilder `bb` with the calls of `plan` replaced by kernels
    prefetching the next call's weights."""
    from tvm import relax

    from tvm_bridge.common import call_tir

    chosen = plan(calls)
    mod = bb.get()
    if not chosen:
        return mod
    built: dict[tuple, object] = {}
    new_value = {}
    for i, segments in chosen.items():
        call = calls[i]
        spec = tuple((*calls[j].weight_type, first, n) for j, first, n in segments)
        gvar = built.get((call.gvar.name_hint, spec))
        if gvar is None:
            gvar = built[(call.gvar.name_hint, spec)] = bb.add_func(call.rebuild(spec), f"{call.gvar.name_hint}_pf")
        new_value[call.var] = call_tir(gvar, [*call.args, *(calls[j].args[1] for j, _, _ in segments)],
                                       call.out_type)
    mod = bb.get()
    main_gv = mod.get_global_var("main")
    main = mod[main_gv]
    blocks = []
    for block in main.body.blocks:
        bindings = [relax.VarBinding(b.var, new_value[b.var]) if b.var in new_value else b for b in block.bindings]
        blocks.append(relax.DataflowBlock(bindings) if isinstance(block, relax.DataflowBlock)
                      else relax.BindingBlock(bindings))
    bb.update_func(main_gv, relax.Function(main.params, relax.SeqExpr(blocks, main.body.body), main.ret_ty,
                                           main.is_pure, main.attrs))
    return bb.get()
