"""Fuzz the ONNX importer and `qd-run`: mutated `.onnx` files.

    python -m tests.fuzz.onnx_models                   # short mode: 600 cases, seed 0
    python -m tests.fuzz.onnx_models --cases 5000      # long mode (random seed, printed)

Corpus: the quantized ONNX models of `models/onnx/` (QDQ and QOperator, small).

Mutations: byte-level (bit flips, bytes overwritten with 0x00 / 0xFF / 0x7F /
0x80, truncation, inserted / dropped chunks) and *structure-aware* ones made
through the `onnx` protobuf API: a seed model is parsed, one to three of its
fields are changed and it is serialized again.  Fields: node op types (other
known operators, unknown ones, empty), domains, node inputs and outputs
(dangling names, empty, swapped, duplicated, a node reading its own output,
outputs that another node also writes), attributes (removed, of the wrong
type, extreme integers, huge lists, `axis`), initializers (dims, data type,
raw data length; dims that claim 2^40 elements with a few bytes of data),
scales (0, -1, NaN, inf, 1e-45, 3.4e38, per-axis lengths), zero points (dtype,
values, lengths), opset versions, graph input shapes (dynamic, 0, negative,
huge) and element types, graph outputs, node order, and empty graphs.

Targets (in this process): `import_onnx(bytes)` must return a module or raise
`OnnxImportError` with a one-line message (a message that is the importer's
catch-all, "malformed model (TypeError: ...)", is a finding too: it is an
exception nobody checked for, with the frame it came from); every 5th case is
imported with `profile="onnx"` as well; an accepted model is run by
`qd-run --backend interp --compare none` (every 2nd case); every
`--cli-every` case goes through `qd-import`'s `main` for the one-line
contract, and every `--subprocess-every` case through the real `qd-import`
executable.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from tests.fuzz.harness import (
    CASE_TIMEOUT,
    ROOT,
    RSS_GROWTH_LIMIT,
    Captured,
    CaseTimeout,
    Finding,
    Report,
    common_arguments,
    contract_violation,
    diagnostic_class,
    finish,
    flip_bits,
    overwrite_bytes,
    splice_bytes,
    truncate_bytes,
    frame_signature,
    fuzz_limits,
    limit_address_space,
    peak_rss,
    pick_seed,
    run_main,
    time_limit,
)

SHORT_CASES = 600
MAX_PIN_BYTES = 4096
"""Largest pinned example (bytes of edits, or of the file)."""
ONNX_ZOO = ROOT / "models" / "onnx"
CATCH_ALL = "malformed model ("
"""The importer's last-resort wrapper of an unexpected exception: a finding, not a diagnostic."""


# ----- corpus ------------------------------------------------------------------------------------


def corpus() -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in sorted(ONNX_ZOO.glob("*.onnx"))]


# ----- byte-level mutations -------------------------------------------------------------------------


def mutate_bytes(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    buf = bytearray(data)
    r = rng.random()
    if r < 0.4:
        return flip_bits(rng, buf, 512), "bitflip"
    if r < 0.7:
        return overwrite_bytes(rng, buf, len(data)), "bytes"
    if r < 0.88:
        return truncate_bytes(rng, buf, 1024), "truncate"
    return splice_bytes(rng, buf)


# ----- structure-aware mutations ----------------------------------------------------------------------

EXTREME_INTS = [-1, 0, 1, 2, 3, 4, -2, 7, 2**31 - 1, -(2**31), 2**62, -(2**62), 65536]
SPECIAL_FLOATS = [0.0, -0.0, -1.0, float("nan"), float("inf"), -float("inf"), 1e-45, 3.4e38, 1e-38, 1e30]
DIMS = [0, -1, 1, 2, 3, 7, 2**31 - 1, 2**40, 2**62]
UNKNOWN_OPS = ["FancyOp", "", "Erf", "ConstantOfShape", "Loop", "If", "Gather", "Cast", "LSTM", "Einsum"]


def _known_ops() -> list[str]:
    from qdialect.importer.onnx import SUPPORTED_OPERATORS

    return list(SUPPORTED_OPERATORS)


def _quant_params(m) -> tuple[list, list]:
    """(scale-like, zero-point-like) initializers: small tensors read as a later input of a node."""
    inits = {t.name: t for t in m.graph.initializer}
    scales, zps = [], []
    seen = set()
    for n in m.graph.node:
        for k, i in enumerate(n.input):
            t = inits.get(i)
            if t is None or k == 0 and n.op_type not in ("QLinearConcat",) or i in seen:
                continue
            size = math.prod(t.dims) if len(t.dims) else 1
            if size > 256:
                continue
            seen.add(i)
            if t.data_type == 1:
                scales.append(t)
            elif t.data_type in (2, 3, 4, 5, 6):
                zps.append(t)
    return scales, zps


def _set_array(t, arr) -> None:
    from onnx import numpy_helper

    name = t.name
    t.CopyFrom(numpy_helper.from_array(arr, name))


def _rand_name(rng, m) -> str:
    names = [o for n in m.graph.node for o in n.output] + [i for n in m.graph.node for i in n.input]
    names += [t.name for t in m.graph.initializer] + [v.name for v in m.graph.input]
    return rng.choice(names + ["", "dangling", "nope:0"]) if names else "dangling"


def _mut_op_type(rng, m, onnx) -> str:
    n = rng.choice(m.graph.node)
    n.op_type = rng.choice(_known_ops() + UNKNOWN_OPS) if rng.random() < 0.8 else rng.choice(UNKNOWN_OPS)
    return f"op_type {n.op_type!r}"


def _mut_domain(rng, m, onnx) -> str:
    n = rng.choice(m.graph.node)
    n.domain = rng.choice(["com.microsoft", "", "ai.onnx", "ai.onnx.ml", "custom"])
    return "domain"


def _mut_inputs(rng, m, onnx) -> str:
    nodes = list(m.graph.node)
    n = rng.choice(nodes)
    ins = list(n.input)
    how = rng.choice(["dangling", "empty", "swap", "dup", "drop", "extra", "own-output", "later-output", "other"])
    if how == "dangling" and ins:
        ins[rng.randrange(len(ins))] = "dangling_" + str(rng.randrange(9))
    elif how == "empty" and ins:
        ins[rng.randrange(len(ins))] = ""
    elif how == "swap" and len(ins) > 1:
        a, b = rng.sample(range(len(ins)), 2)
        ins[a], ins[b] = ins[b], ins[a]
    elif how == "dup" and ins:
        ins.insert(rng.randrange(len(ins) + 1), rng.choice(ins))
    elif how == "drop" and ins:
        if rng.random() < 0.7:
            del ins[rng.randrange(len(ins))]
        else:
            ins = []
    elif how == "extra":
        ins += [_rand_name(rng, m) for _ in range(rng.choice([1, 2, 8]))]
    elif how == "own-output" and ins and n.output:
        ins[rng.randrange(len(ins))] = rng.choice(list(n.output))  # a cycle
    elif how == "later-output" and ins:
        k = nodes.index(n)
        later = [o for x in nodes[k:] for o in x.output]
        if later:
            ins[rng.randrange(len(ins))] = rng.choice(later)
    elif ins:
        ins[rng.randrange(len(ins))] = _rand_name(rng, m)
    del n.input[:]
    n.input.extend(ins)
    return f"inputs {how}"


def _mut_outputs(rng, m, onnx) -> str:
    nodes = list(m.graph.node)
    n = rng.choice(nodes)
    outs = list(n.output)
    how = rng.choice(["dup-other", "empty", "drop", "extra", "rename", "graph-input"])
    if how == "dup-other":
        other = rng.choice(nodes)
        if other.output and outs:
            outs[rng.randrange(len(outs))] = rng.choice(list(other.output))
    elif how == "empty" and outs:
        outs[rng.randrange(len(outs))] = ""
    elif how == "drop":
        outs = outs[:-1]
    elif how == "extra":
        outs += [f"extra_{k}" for k in range(rng.choice([1, 2, 5]))]
    elif how == "graph-input" and m.graph.input and outs:
        outs[0] = m.graph.input[0].name
    elif outs:
        outs[rng.randrange(len(outs))] = "renamed"
    del n.output[:]
    n.output.extend(outs)
    return f"outputs {how}"


def _mut_attribute(rng, m, onnx) -> str:
    helper = onnx.helper
    nodes = [n for n in m.graph.node if n.attribute] or list(m.graph.node)
    n = rng.choice(nodes)
    how = rng.choice(["remove", "wrong-type", "extreme", "huge-list", "add-axis", "add-known", "values"])
    attrs = list(n.attribute)
    if how == "remove" and attrs:
        del n.attribute[rng.randrange(len(attrs))]
        return "attr remove"
    if how == "wrong-type" and attrs:
        a = rng.choice(attrs)
        new = rng.choice([helper.make_attribute(a.name, 1.5), helper.make_attribute(a.name, "str"),
                          helper.make_attribute(a.name, [1, 2, 3]), helper.make_attribute(a.name, 3),
                          helper.make_attribute(a.name, [0.5, 2.0]),
                          helper.make_attribute(a.name, helper.make_tensor("t", 1, [1], [1.0]))])
        a.CopyFrom(new)
        return f"attr {a.name} wrong type"
    if how in ("extreme", "values") and attrs:
        a = rng.choice(attrs)
        if a.type == onnx.AttributeProto.INT:
            a.i = rng.choice(EXTREME_INTS)
        elif a.type == onnx.AttributeProto.INTS:
            if a.ints:
                a.ints[rng.randrange(len(a.ints))] = rng.choice(EXTREME_INTS)
            elif rng.random() < 0.5:
                a.ints.extend([rng.choice(EXTREME_INTS)])
            if rng.random() < 0.3:
                a.ints.append(rng.choice(EXTREME_INTS))
        elif a.type == onnx.AttributeProto.FLOAT:
            a.f = rng.choice(SPECIAL_FLOATS)
        elif a.type == onnx.AttributeProto.STRING:
            a.s = rng.choice([b"", b"SAME_UPPER", b"VALID", b"bogus", b"\xff\xfe", b"linear", b"cubic"])
        return f"attr {a.name} value"
    if how == "huge-list":
        name = rng.choice([a.name for a in attrs] + ["pads", "strides", "kernel_shape", "axes", "perm"])
        for a in list(n.attribute):
            if a.name == name:
                n.attribute.remove(a)
        n.attribute.append(helper.make_attribute(name, [rng.choice([1, 0, -1, 2**31 - 1])] * rng.choice([5, 100, 100000])))
        return f"attr {name} huge list"
    name = rng.choice(["axis", "axis", "group", "pads", "strides", "dilations", "kernel_shape", "perm", "axes",
                       "keepdims", "transA", "transB", "alpha", "beta", "count_include_pad", "ceil_mode",
                       "auto_pad", "block_size", "output_dtype", "saturate", "allowzero", "channels_last",
                       "mode", "storage_order", "start", "end"])
    for a in list(n.attribute):
        if a.name == name:
            n.attribute.remove(a)
    if name in ("pads", "strides", "dilations", "kernel_shape", "perm", "axes"):
        value = [rng.choice(EXTREME_INTS) for _ in range(rng.choice([0, 1, 2, 4, 5]))]
    elif name in ("alpha", "beta"):
        value = rng.choice(SPECIAL_FLOATS)
    elif name in ("auto_pad", "mode"):
        value = rng.choice(["SAME_UPPER", "SAME_LOWER", "VALID", "NOTSET", "x", "reflect", "edge", "linear"])
    else:
        value = rng.choice(EXTREME_INTS)
    n.attribute.append(helper.make_attribute(name, value))
    return f"attr {name} set"


def _mut_initializer(rng, m, onnx) -> str:
    if not m.graph.initializer:
        return "init none"
    t = rng.choice(list(m.graph.initializer))
    how = rng.choice(["dims", "dims", "huge", "rank", "dtype", "raw-short", "raw-long", "raw-clear", "typed-data"])
    if how == "dims" and len(t.dims):
        t.dims[rng.randrange(len(t.dims))] = rng.choice(DIMS)
    elif how == "huge":
        del t.dims[:]
        t.dims.extend(rng.choice([[2**40], [2**20, 2**20], [1 << 31], [2**31 - 1, 2], [0], [2**62, 4]]))
    elif how == "rank":
        if len(t.dims) and rng.random() < 0.5:
            del t.dims[-1]
        else:
            t.dims.append(rng.choice([1, 1, 2]))
    elif how == "dtype":
        t.data_type = rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17, 21, 22, 23, 99, 2**31 - 1])
    elif how == "raw-short" and t.raw_data:
        t.raw_data = t.raw_data[: rng.randrange(len(t.raw_data))]
    elif how == "raw-long":
        t.raw_data = t.raw_data + b"\x01" * rng.choice([1, 3, 4, 100])
    elif how == "raw-clear":
        t.ClearField("raw_data")
    else:
        t.ClearField("raw_data")
        rng.choice([t.float_data, t.int32_data, t.int64_data]).extend([rng.choice([0, 1, 7])] * rng.choice([0, 1, 3]))
    return f"init {how}"


def _mut_scale(rng, m, onnx) -> str:
    import numpy as np

    scales, _ = _quant_params(m)
    if not scales:
        return "scale none"
    t = rng.choice(scales)
    how = rng.choice(["value", "value", "value", "per-axis", "rank2", "empty", "dtype"])
    if how == "value":
        from onnx import numpy_helper

        arr = np.array(numpy_helper.to_array(t), np.float32)
        flat = arr.reshape(-1)
        if flat.size:
            flat[rng.randrange(flat.size)] = np.float32(rng.choice(SPECIAL_FLOATS))
        _set_array(t, flat.reshape(arr.shape))
    elif how == "per-axis":
        k = rng.choice([2, 3, 4, 8, 16, 32, 1])
        _set_array(t, np.full([k], 0.05, np.float32))
    elif how == "rank2":
        _set_array(t, np.full([2, 2], 0.05, np.float32))
    elif how == "empty":
        _set_array(t, np.zeros([0], np.float32))
    else:
        _set_array(t, np.array(0.05, rng.choice([np.float64, np.float16, np.int32])))
    return f"scale {how}"


def _mut_zero_point(rng, m, onnx) -> str:
    import numpy as np

    _, zps = _quant_params(m)
    if not zps:
        return "zp none"
    t = rng.choice(zps)
    from onnx import numpy_helper

    arr = np.array(numpy_helper.to_array(t))
    how = rng.choice(["dtype", "value", "length", "value"])
    if how == "dtype":
        _set_array(t, arr.astype(rng.choice([np.int8, np.uint8, np.int16, np.uint16, np.int32, np.int64, np.float32])))
    elif how == "value" and arr.size:
        info = np.iinfo(arr.dtype) if arr.dtype.kind in "iu" else None
        v = rng.choice([info.min, info.max, 0, -1 % (info.max + 1) if info.min == 0 else -1]) if info else 3
        flat = arr.reshape(-1).copy()
        flat[rng.randrange(flat.size)] = v
        _set_array(t, flat.reshape(arr.shape))
    else:
        k = rng.choice([0, 2, 3, 7])
        _set_array(t, np.zeros([k], arr.dtype))
    return f"zp {how}"


def _mut_axis(rng, m, onnx) -> str:
    nodes = [n for n in m.graph.node if n.op_type in ("QuantizeLinear", "DequantizeLinear", "Concat", "Softmax",
                                                         "Flatten", "Split", "QLinearConcat", "QLinearSoftmax")]
    if not nodes:
        return "axis none"
    n = rng.choice(nodes)
    for a in list(n.attribute):
        if a.name == "axis":
            n.attribute.remove(a)
    if rng.random() < 0.9:
        n.attribute.append(onnx.helper.make_attribute("axis", rng.choice([-5, -4, -2, -1, 0, 1, 2, 3, 4, 5, 2**31 - 1, 2**62])))
    return "axis"


def _mut_opset(rng, m, onnx) -> str:
    how = rng.choice(["default", "default", "ms", "remove", "add"])
    if how == "remove" and m.opset_import:
        del m.opset_import[rng.randrange(len(m.opset_import))]
    elif how == "add":
        o = m.opset_import.add()
        o.domain, o.version = rng.choice(["", "com.microsoft", "ai.onnx"]), rng.choice([1, 13, 2**62])
    else:
        want = "" if how == "default" else "com.microsoft"
        for o in m.opset_import:
            if o.domain in ((want, "ai.onnx") if want == "" else (want,)):
                o.version = rng.choice([0, 1, 9, 10, 11, 12, 13, 17, 18, 19, 21, 23, 24, 2**31 - 1, 2**62, -1])
    if rng.random() < 0.2:
        m.ir_version = rng.choice([0, 1, 3, 10, 99])
    return f"opset {how}"


def _mut_graph_input(rng, m, onnx) -> str:
    if not m.graph.input:
        return "gin none"
    vi = rng.choice(list(m.graph.input))
    tt = vi.type.tensor_type
    how = rng.choice(["dim", "dim", "param", "rank", "no-shape", "elem", "not-tensor", "dup", "remove"])
    dims = tt.shape.dim
    if how == "dim" and len(dims):
        dims[rng.randrange(len(dims))].dim_value = rng.choice([0, -1, -7, 1, 2, 3, 1000, 2**31, 2**40, 2**62])
    elif how == "param" and len(dims):
        dims[rng.randrange(len(dims))].dim_param = rng.choice(["N", "batch", ""])
    elif how == "rank":
        if len(dims) and rng.random() < 0.5:
            del dims[-1]
        else:
            dims.add().dim_value = rng.choice([1, 2])
    elif how == "no-shape":
        tt.ClearField("shape")
    elif how == "elem":
        tt.elem_type = rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 16, 99])
    elif how == "not-tensor":
        vi.type.ClearField("tensor_type")
        vi.type.sequence_type.elem_type.tensor_type.elem_type = 1
    elif how == "dup":
        m.graph.input.add().CopyFrom(vi)
    else:
        m.graph.input.remove(vi)
    return f"graph input {how}"


def _mut_graph_output(rng, m, onnx) -> str:
    how = rng.choice(["dangling", "initializer", "input", "dup", "remove", "intermediate"])
    outs = m.graph.output
    if how == "remove" and len(outs):
        del outs[rng.randrange(len(outs))]
    elif how == "dup" and len(outs):
        outs.add().CopyFrom(outs[0])
    elif len(outs):
        o = rng.choice(list(outs))
        if how == "dangling":
            o.name = "nowhere"
        elif how == "initializer" and m.graph.initializer:
            o.name = rng.choice(list(m.graph.initializer)).name
        elif how == "input" and m.graph.input:
            o.name = m.graph.input[0].name
        else:
            o.name = _rand_name(rng, m)
    return f"graph output {how}"


def _set_nodes(g, nodes) -> None:
    copies = []
    for n in nodes:
        c = type(n)()
        c.CopyFrom(n)
        copies.append(c)
    del g.node[:]
    g.node.extend(copies)


def _mut_graph(rng, m, onnx) -> str:
    how = rng.choice(["empty", "no-nodes", "no-inits", "shuffle", "reverse", "dup-node", "drop-node", "cycle"])
    g = m.graph
    nodes = list(g.node)
    if how == "empty":
        m.ClearField("graph")
        m.graph.name = "g"
    elif how == "no-nodes":
        del g.node[:]
    elif how == "no-inits":
        del g.initializer[:]
    elif how in ("shuffle", "reverse") and nodes:
        order = nodes[::-1] if how == "reverse" else rng.sample(nodes, len(nodes))
        _set_nodes(g, order)
    elif how == "dup-node" and nodes:
        k = rng.randrange(len(nodes))
        _set_nodes(g, nodes[: k + 1] + [nodes[k]] + nodes[k + 1 :])
    elif how == "drop-node" and nodes:
        del g.node[rng.randrange(len(nodes))]
    elif how == "cycle" and len(nodes) > 1:
        a, b = sorted(rng.sample(range(len(nodes)), 2))
        if g.node[a].input and g.node[b].output:
            g.node[a].input[0] = g.node[b].output[0]  # a reads what b (after it) writes, b depends on a
    return f"graph {how}"


def _mut_constant_node(rng, m, onnx) -> str:
    import numpy as np

    n = rng.choice(list(m.graph.node))
    t = onnx.helper.make_tensor("c", 1, [2**40], [1.0]) if rng.random() < 0.3 else \
        onnx.numpy_helper.from_array(np.array(rng.choice([[0], [1, 1], [-1], [2**31 - 1, 1]]), np.int64))
    c = onnx.helper.make_node("Constant", [], [f"const_{rng.randrange(9)}"], value=t)
    _set_nodes(m.graph, [c] + list(m.graph.node))
    if n.input and rng.random() < 0.8:
        n.input[rng.randrange(len(n.input))] = c.output[0]
    return "constant node"


STRUCTURAL = [
    (_mut_op_type, 10), (_mut_domain, 2), (_mut_inputs, 12), (_mut_outputs, 6), (_mut_attribute, 16),
    (_mut_initializer, 10), (_mut_scale, 12), (_mut_zero_point, 10), (_mut_axis, 6), (_mut_opset, 4),
    (_mut_graph_input, 8), (_mut_graph_output, 3), (_mut_graph, 4), (_mut_constant_node, 3),
]


class Mutator:
    def __init__(self):
        import onnx

        self.onnx = onnx
        self.parsed: dict[str, object] = {}

    def structural(self, rng: random.Random, name: str, data: bytes) -> tuple[bytes, str] | None:
        onnx = self.onnx
        base = self.parsed.get(name)
        if base is None:
            base = self.parsed[name] = onnx.ModelProto.FromString(data)
        m = onnx.ModelProto()
        m.CopyFrom(base)
        done = []
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            fn = rng.choices([f for f, _ in STRUCTURAL], [w for _, w in STRUCTURAL])[0]
            if not m.graph.node and fn not in (_mut_opset, _mut_graph_input, _mut_graph_output, _mut_initializer):
                continue
            try:
                done.append(fn(rng, m, onnx))
            except (ValueError, TypeError, IndexError, OverflowError):
                continue  # the mutation itself does not apply to this model
        try:
            return m.SerializeToString(), "struct:" + ";".join(done)
        except Exception:  # noqa: BLE001 - a value protobuf will not encode
            return None

    def mutate(self, rng: random.Random, name: str, data: bytes) -> tuple[bytes, str]:
        if rng.random() < 0.7:
            out = self.structural(rng, name, data)
            if out is not None:
                return out
        return mutate_bytes(rng, data)


# ----- targets ---------------------------------------------------------------------------------------


def _write_temp(data: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".onnx", delete=False) as f:
        f.write(data)
        return f.name


def onnx_example(tool: str, seed_name: str, seed: bytes, data: bytes) -> dict | None:
    """A pin record of a mutated .onnx file: hunks that turn the seed model into it (see
    `tests.fuzz.pin.encode_hunks`), or the whole file in hex when that is shorter."""
    from tests.fuzz.pin import encode_hunks

    if len(data) > MAX_PIN_BYTES * 8:
        return None

    hunks = encode_hunks(seed, data)
    size = len(data) if hunks is None else sum(len(h[2]) // 2 + 8 for h in hunks)
    if size > MAX_PIN_BYTES:
        return None  # a huge-list mutation: the class is counted, but not pinned by this input
    if hunks is None or size >= len(data):
        return {"tool": tool, "seed": seed_name, "bytes": data.hex(), "size": len(data)}
    return {"tool": tool, "seed": seed_name, "hunks": hunks, "size": size}


def _catch_all_where(e: BaseException) -> str:
    inner = e.__context__ if e.__context__ is not None else e
    return frame_signature(inner)


def run_case(data: bytes, report: Report, save: Path | None, *, case_no: int, args,
             seed: tuple[str, bytes] | None = None) -> None:
    from qdialect.importer.onnx import OnnxImportError, import_onnx

    def example(tool: str, msg: str) -> dict | None:
        if seed is None:
            return None
        old = report.examples.get(diagnostic_class(msg))
        if old is not None and old["size"] <= 64:
            return None  # small enough: not worth diffing again
        return onnx_example(tool, seed[0], seed[1], data)

    def record(kind, target, detail, where="?"):
        report.outcome("finding")
        report.add(Finding(kind, target, detail, where), save, data, ".onnx")

    rss0 = peak_rss()
    try:
        with time_limit(CASE_TIMEOUT):
            module = None
            profiles = ["onnxruntime", "onnx"] if case_no % 5 == 0 else ["onnxruntime"]
            for profile in profiles:
                try:
                    m = import_onnx(data, name="fuzz", profile=profile)
                except OnnxImportError as e:
                    msg = str(e)
                    if "\n" in msg or not msg.strip():
                        record("not-one-line", f"import_onnx ({profile})", repr(msg[:300]))
                        return
                    if CATCH_ALL in msg:
                        record("catch-all", f"import_onnx ({profile})", msg[:300], _catch_all_where(e))
                        return
                    report.outcome(f"refused ({profile})" if profile != "onnxruntime" else "refused")
                    if profile == "onnxruntime":
                        report.message(msg, example("import_onnx", msg))
                except Exception as e:  # noqa: BLE001
                    record("escaped", f"import_onnx ({profile})", f"{type(e).__name__}: {' '.join(str(e).split())}",
                           frame_signature(e))
                    return
                else:
                    report.outcome("imported" if profile == "onnxruntime" else f"imported ({profile})")
                    if profile == "onnxruntime":
                        module = m
            if case_no % args.cli_every == 0:
                _cli_case(data, report, record)
            if module is None or case_no % 2:
                return
            path = _write_temp(data)
            try:
                from tvm_bridge.run_cli import main as qd_run

                cap = run_main(qd_run, [path, "--backend", "interp", "--compare", "none"])
                cap.stderr = "\n".join(ln for ln in cap.stderr.splitlines() if not ln.startswith("  .. "))
                bad = contract_violation(cap, "qd-run")
                if bad is not None:
                    record(bad[0], "qd-run --backend interp", bad[1],
                           frame_signature(cap.escaped) if cap.escaped else _qd_run_where(path))
                    return
                report.outcome(f"qd-run: {'ran' if cap.rc == 0 else 'rejected'}")
                if cap.rc != 0:
                    msg = cap.stderr.strip().replace(path, "MODEL.onnx")
                    report.message(msg, example("qd-run-onnx", msg))
            finally:
                os.unlink(path)
    except CaseTimeout as e:
        record("hang", "import_onnx/qd-run", str(e))
    except MemoryError as e:
        record("memory", "import_onnx/qd-run", f"MemoryError: {e}")
    grown = peak_rss() - rss0
    if grown > RSS_GROWTH_LIMIT:
        record("memory", "import_onnx/qd-run", f"peak RSS grew by {grown >> 20} MB")


def _qd_run_where(path: str) -> str:
    """Where an internal error of qd-run came from: the same run without its catch-all."""
    import numpy as np

    from tvm_bridge.run_cli import _run, build_parser

    def run(argv):
        args = build_parser().parse_args(argv)
        args.argv = argv
        with np.errstate(all="ignore"):
            return _run(args)

    return frame_signature(run_main(run, [path, "--backend", "interp", "--compare", "none"]).escaped)


def _cli_case(data: bytes, report: Report, record) -> None:
    from qdialect.importer.cli import main as qd_import

    path = _write_temp(data)
    try:
        cap = run_main(qd_import, [path, "-o", os.devnull])
    finally:
        os.unlink(path)
    cap.stderr = "\n".join(ln for ln in cap.stderr.splitlines() if "qd-import: remark: " not in ln)
    bad = contract_violation(cap, "qd-import")
    if bad is not None:
        record(bad[0], "qd-import", bad[1], frame_signature(cap.escaped))
    else:
        report.outcome(f"qd-import: exit {cap.rc}")


def run_subprocess_case(data: bytes, report: Report, save: Path | None) -> None:
    exe = Path(sys.executable).parent / "qd-import"
    path = _write_temp(data)
    try:
        cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "qdialect.importer.cli"]
        proc = subprocess.run([*cmd, path, "-o", os.devnull], capture_output=True, timeout=120, cwd=ROOT)
    except subprocess.TimeoutExpired:
        report.add(Finding("hang", "qd-import (subprocess)", "more than 120 s"), save, data, ".onnx")
        return
    finally:
        os.unlink(path)
    stderr = "\n".join(ln for ln in proc.stderr.decode(errors="replace").splitlines() if "qd-import: remark: " not in ln)
    cap = Captured(proc.returncode, proc.stdout.decode(errors="replace"), stderr)
    report.outcome("subprocess")
    bad = contract_violation(cap, "qd-import")
    if bad is not None:
        report.add(Finding(bad[0], "qd-import (subprocess)", bad[1]), save, data, ".onnx")


# ----- driver ---------------------------------------------------------------------------------------


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz.onnx_models", description=__doc__.split("\n\n")[0])
    common_arguments(p, SHORT_CASES)
    p.add_argument("--cli-every", type=int, default=10, help="run qd-import's main on every N-th case")
    args = p.parse_args(argv)
    short = args.cases <= SHORT_CASES and args.time_budget is None
    seed = pick_seed(args, short)
    if args.subprocess_every is None:
        args.subprocess_every = 200 if short else 1000
    limit_address_space()
    fuzz_limits()
    warnings.simplefilter("ignore")
    started = time.perf_counter()
    rng = random.Random(seed)
    seeds = corpus()
    weights = [1.0 / math.sqrt(max(2000, len(d))) for _, d in seeds]
    mutator = Mutator()
    report = Report("onnx_models", seed)
    if not args.quiet:
        print(f"onnx_models: {len(seeds)} seeds, {args.cases} cases, seed {seed}", flush=True)
    for case_no in range(args.cases):
        if args.time_budget is not None and time.perf_counter() - started > args.time_budget:
            break
        name, base = rng.choices(seeds, weights)[0]
        data, how = mutator.mutate(rng, name, base)
        report.cases += 1
        report.outcome(f"mutation {how.split(':')[0]}")
        run_case(data, report, args.save, case_no=case_no, args=args, seed=(name, base))
        if args.subprocess_every and case_no % args.subprocess_every == 0:
            run_subprocess_case(data, report, args.save)
        if not args.quiet and case_no and case_no % 1000 == 0:
            print(f"  {case_no} cases, {time.perf_counter() - started:.0f} s, "
                  f"{len(report.findings)} distinct findings", flush=True)
    return finish(report, args, started)


if __name__ == "__main__":
    sys.exit(main())
