#!/usr/bin/env python3
"""Generate the qdialect ONNX model zoo (models/onnx/): small float ONNX graphs built
with onnx.helper (seeded He-normal weights), statically quantized with
onnxruntime.quantization.quantize_static (MinMax calibration on seeded inputs).

Needs only numpy, onnx and onnxruntime (the project venv):

    .venv/bin/python tools/gen_onnx_zoo.py [--out models/onnx]
    .venv/bin/python tools/gen_onnx_zoo.py --check [--out models/onnx]
    .venv/bin/python tools/gen_onnx_zoo.py --check-determinism

Default mode writes NAME_<variant>.onnx for each network model and
op_<name>_<fmt>_<act>.onnx for each single-op model, and prints every file written
with its size.  --check loads every *.onnx in --out with onnxruntime (default
SessionOptions and ORT_DISABLE_ALL), runs it on a seeded input and prints the
node op-type histogram.  --check-determinism generates the zoo twice into two
temporary directories and compares the files byte for byte (it does not touch --out).

Determinism: all weights / calibration data come from numpy Generators with fixed
seeds; the float model is built with fixed node/tensor names, fixed producer
fields and a fixed IR version.  quantize_static calibrates in a temporary
directory but does not embed that path (or any random names) in the output.
"""

from __future__ import annotations

import argparse
import collections
import filecmp
import hashlib
import logging
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnxruntime as ort
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quantize_static,
)

OPSET = 17
IR_VERSION = 8  # matches opset 17; quantize_static bumps it itself when it bumps the opset
N_CALIB = 32
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "models" / "onnx"


# --------------------------------------------------------------------------- builder
class G:
    """Tiny graph builder with deterministic names and a seeded weight generator."""

    def __init__(self, name: str, seed: int):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self.input_shapes: dict[str, tuple[int, ...]] = {}
        self.n = 0

    def _id(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{self.n}"

    def input(self, name: str, shape) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
        self.input_shapes[name] = tuple(shape)
        return name

    def output(self, name: str) -> None:
        # shape left to ONNX shape inference (see model())
        vi = onnx.ValueInfoProto(name=name)
        vi.type.tensor_type.elem_type = TensorProto.FLOAT
        self.outputs.append(vi)

    def const(self, arr: np.ndarray, prefix: str = "c") -> str:
        name = self._id(prefix)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def i64(self, vals, prefix: str = "shape") -> str:
        return self.const(np.asarray(vals, dtype=np.int64), prefix)

    def he(self, shape, fan_in: int) -> np.ndarray:
        return (self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    def bias(self, n: int) -> np.ndarray:
        return (self.rng.standard_normal(n) * 0.05).astype(np.float32)

    def op(self, op_type: str, inputs, n_out: int = 1, out=None, **attrs):
        base = self._id(op_type.lower())
        if out is None:
            outs = [f"{base}_out{i}" if n_out > 1 else f"{base}_out" for i in range(n_out)]
        else:
            outs = [out] if isinstance(out, str) else list(out)
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=base, **attrs))
        return outs[0] if len(outs) == 1 else outs

    # layers --------------------------------------------------------------
    def conv(self, x, cin, cout, k, stride=1, pads=None, group=1, act=None):
        if pads is None:
            pads = [k // 2] * 4
        w = self.const(self.he((cout, cin // group, k, k), (cin // group) * k * k), "w")
        b = self.const(self.bias(cout), "b")
        y = self.op("Conv", [x, w, b], kernel_shape=[k, k], strides=[stride, stride], pads=pads, group=group)
        if act == "relu":
            y = self.op("Relu", [y])
        elif act == "relu6":
            y = self.op("Clip", [y, self.const(np.array(0, np.float32), "lo"), self.const(np.array(6, np.float32), "hi")])
        return y

    def gemm(self, x, cin, cout, trans_b=1):
        wshape = (cout, cin) if trans_b else (cin, cout)
        w = self.const(self.he(wshape, cin), "w")
        b = self.const(self.bias(cout), "b")
        return self.op("Gemm", [x, w, b], transB=trans_b)

    def model(self) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        m = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name="qdialect.gen_onnx_zoo",
            producer_version="1",
            ir_version=IR_VERSION,
        )
        # fill in the output shapes (and intermediate value_info) from ONNX shape inference
        m = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
        onnx.checker.check_model(m, full_check=True)
        return m


# --------------------------------------------------------------------------- float models
def build_cnn() -> G:
    g = G("cnn", 101)
    x = g.input("input", (1, 3, 16, 16))
    y = g.conv(x, 3, 8, 3, act="relu")
    y = g.conv(y, 8, 16, 3, stride=2, act="relu")
    y = g.op("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])
    y = g.conv(y, 16, 16, 1)
    y = g.op("GlobalAveragePool", [y])
    y = g.op("Flatten", [y], axis=1)
    g.gemm(y, 16, 10)
    g.nodes[-1].output[0] = "logits"
    g.output("logits")
    return g


def build_mobilenetv2() -> G:
    g = G("mobilenetv2", 102)
    x = g.input("input", (1, 3, 32, 32))
    y = g.conv(x, 3, 16, 3, stride=2, act="relu6")  # 16x16x16

    def block(y, cin, cout, expand, stride):
        c = cin * expand
        h = g.conv(y, cin, c, 1, act="relu6")
        h = g.conv(h, c, c, 3, stride=stride, group=c, act="relu6")
        h = g.conv(h, c, cout, 1)
        if stride == 1 and cin == cout:
            h = g.op("Add", [y, h])
        return h

    y = block(y, 16, 16, 2, 1)  # residual
    y = block(y, 16, 24, 3, 2)  # 8x8
    y = block(y, 24, 24, 3, 1)  # residual
    y = block(y, 24, 24, 3, 1)  # residual
    y = g.conv(y, 24, 48, 1, act="relu6")
    y = g.op("GlobalAveragePool", [y])
    y = g.op("Flatten", [y], axis=1)
    g.gemm(y, 48, 10)
    g.nodes[-1].output[0] = "logits"
    g.output("logits")
    return g


def build_mlp() -> G:
    g = G("mlp", 103)
    x = g.input("input", (1, 64))
    y = g.op("Relu", [g.gemm(x, 64, 64, trans_b=1)])
    w = g.const(g.he((64, 32), 64), "w")
    y = g.op("MatMul", [y, w])
    y = g.op("Add", [y, g.const(g.bias(32), "b")])
    y = g.op("Sigmoid", [y])
    y = g.op("LeakyRelu", [g.gemm(y, 32, 16, trans_b=0)], alpha=0.1)
    y = g.gemm(y, 16, 10, trans_b=1)
    g.op("Softmax", [y], out="probs", axis=-1)
    g.output("probs")
    return g


def build_elementwise() -> G:
    g = G("elementwise", 104)
    x = g.input("x", (1, 8, 8, 8))
    z = g.input("y", (1, 8, 8, 8))
    a = g.op("Add", [x, z])
    m = g.op("Mul", [x, z])
    s = g.op("Sub", [a, m])
    c = g.op("Concat", [a, s], axis=1)  # 1x16x8x8
    t = g.op("Transpose", [c], perm=[0, 2, 3, 1])  # 1x8x8x16
    r = g.op("Reshape", [t, g.i64([1, 16, 8, 8])])
    ap = g.op("AveragePool", [r], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=0)
    sg = g.op("Sigmoid", [ap])
    g.op("Pad", [sg, g.i64([0, 0, 1, 1, 0, 0, 1, 1])], out="out_pad", mode="constant")  # 1x16x10x10
    th = g.op("Tanh", [m])
    rs = g.op("Resize", [th, "", g.const(np.array([1, 1, 2, 2], np.float32), "scales")], mode="nearest")  # 1x8x16x16
    g.op("Slice", [rs, g.i64([2, 2], "starts"), g.i64([14, 14], "ends"), g.i64([2, 3], "axes")], out="out_slice")
    hs = g.op("HardSigmoid", [a], alpha=0.2, beta=0.5)
    s1, s2 = g.op("Split", [hs, g.i64([4, 4], "split")], n_out=2, axis=1)
    rm = g.op("ReduceMean", [s1], axes=[2, 3], keepdims=1)  # 1x4x1x1
    sq = g.op("Squeeze", [rm, g.i64([2, 3], "axes")])  # 1x4
    g.op("Unsqueeze", [sq, g.i64([2], "axes")], out="out_reduce")  # 1x4x1
    g.op("Relu", [s2], out="out_split")
    for o in ("out_pad", "out_slice", "out_reduce", "out_split"):
        g.output(o)
    return g


# single-op models -------------------------------------------------------------
def _single(name, seed, shapes, body) -> G:
    g = G(f"op_{name}", seed)
    ins = [g.input(f"x{i}" if len(shapes) > 1 else "x", s) for i, s in enumerate(shapes)]
    y = body(g, *ins)
    g.nodes[-1].output[0] = "y"
    g.output("y")
    return g


def op_models() -> dict[str, G]:
    ops = {}
    s = 200

    def add(name, shapes, body, **opts):
        nonlocal s
        s += 1
        ops[name] = (_single(name, s, shapes, body), opts)

    add("conv_grouped", [(1, 8, 8, 8)], lambda g, x: g.conv(x, 8, 8, 3, group=2, act="relu"))
    add("conv_dw", [(1, 8, 8, 8)], lambda g, x: g.conv(x, 8, 8, 3, group=8))
    add("conv_s2_asym", [(1, 4, 9, 9)], lambda g, x: g.conv(x, 4, 8, 3, stride=2, pads=[0, 0, 1, 1]))
    add("gemm", [(1, 32)], lambda g, x: g.gemm(x, 32, 16, trans_b=1))
    add("matmul", [(1, 4, 32)], lambda g, x: g.op("MatMul", [x, g.const(g.he((32, 16), 32), "w")]))
    add("add_bcast", [(1, 8, 4, 4), (1, 8, 1, 1)], lambda g, a, b: g.op("Add", [a, b]))
    add("mul", [(1, 8, 4, 4), (1, 8, 4, 4)], lambda g, a, b: g.op("Mul", [a, b]))
    add("sigmoid", [(1, 8, 4, 4)], lambda g, x: g.op("Sigmoid", [x]))
    add("leakyrelu", [(1, 8, 4, 4)], lambda g, x: g.op("LeakyRelu", [x], alpha=0.1))
    for cip in (0, 1):
        add(f"avgpool_cip{cip}", [(1, 8, 6, 6)],
            lambda g, x, cip=cip: g.op("AveragePool", [x], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                       count_include_pad=cip))
    add("globalavgpool", [(1, 8, 6, 6)], lambda g, x: g.op("GlobalAveragePool", [x]))
    add("concat", [(1, 4, 4, 4), (1, 6, 4, 4)], lambda g, a, b: g.op("Concat", [a, b], axis=1))
    add("softmax", [(1, 10)], lambda g, x: g.op("Softmax", [x], axis=-1))
    add("maxpool", [(1, 8, 6, 6)], lambda g, x: g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2]))
    add("reshape", [(1, 8, 4, 4)], lambda g, x: g.op("Reshape", [x, g.i64([1, 128])]))
    add("transpose", [(1, 8, 4, 4)], lambda g, x: g.op("Transpose", [x], perm=[0, 2, 3, 1]))
    # In QOperator mode MaxPool/Reshape/Transpose/GlobalAveragePool are only quantized when their
    # input is already quantized (ForceQuantizeNoInputCheck only helps for initializer inputs), so
    # the pure single-op models above stay float there.  These variants put a LeakyRelu(0.1)
    # (-> QLinearLeakyRelu) in front so the op under test gets a quantized input in every format.
    lrelu = lambda g, x: g.op("LeakyRelu", [x], alpha=0.1)  # noqa: E731
    add("lrelu_maxpool", [(1, 8, 6, 6)],
        lambda g, x: g.op("MaxPool", [lrelu(g, x)], kernel_shape=[2, 2], strides=[2, 2]))
    add("lrelu_reshape", [(1, 8, 4, 4)], lambda g, x: g.op("Reshape", [lrelu(g, x), g.i64([1, 128])]))
    add("lrelu_transpose", [(1, 8, 4, 4)], lambda g, x: g.op("Transpose", [lrelu(g, x)], perm=[0, 2, 3, 1]))
    add("lrelu_globalavgpool", [(1, 8, 6, 6)], lambda g, x: g.op("GlobalAveragePool", [lrelu(g, x)]))
    # HardSwish is in neither default registry; ask for it explicitly (QDQ wraps it generically).
    add("hardswish", [(1, 8, 4, 4)], lambda g, x: g.op("HardSwish", [x]), op_types=["HardSwish"])
    # both operands activations (attention's Q.K^T and P.V)
    add("matmul_acts", [(1, 2, 8, 16), (1, 2, 16, 8)], lambda g, a, b: g.op("MatMul", [a, b]))
    add("lrelu_resize", [(1, 4, 4, 4)],
        lambda g, x: g.op("Resize", [lrelu(g, x), "", g.const(np.array([1, 1, 2, 2], np.float32), "scales")],
                          mode="nearest"))
    return ops


# --------------------------------------------------------------------------- quantization
class Reader(CalibrationDataReader):
    """Seeded N(0,1) inputs; the same samples every time it is constructed."""

    def __init__(self, input_shapes: dict[str, tuple[int, ...]], seed: int, n: int = N_CALIB):
        rng = np.random.default_rng(seed)
        self.samples = [
            {k: rng.standard_normal(shape).astype(np.float32) for k, shape in input_shapes.items()}
            for _ in range(n)
        ]
        self.it = iter(self.samples)

    def get_next(self):
        return next(self.it, None)

    def rewind(self):
        self.it = iter(self.samples)


QDQ, QOP = QuantFormat.QDQ, QuantFormat.QOperator
U8, S8, S16 = QuantType.QUInt8, QuantType.QInt8, QuantType.QInt16

# suffix -> (format, activation type, weight type, per_channel, reduce_range)
STD_VARIANTS = {
    "qdq_u8": (QDQ, U8, S8, True, False),
    "qdq_s8": (QDQ, S8, S8, True, False),
    "qop_u8": (QOP, U8, S8, True, False),
    "qop_s8": (QOP, S8, S8, False, False),
}
CNN_EXTRA = {
    "qdq_u8_rr": (QDQ, U8, S8, False, True),
    "qdq_u8w": (QDQ, U8, U8, True, False),
    "qdq_s16": (QDQ, S16, S8, True, False),
    # asymmetric uint8 weights: per-channel zero points that differ
    "qop_u8w": (QOP, U8, U8, True, False, {"WeightSymmetric": False}),
}
OP_VARIANTS = {  # op_<name>_<fmt>_<act>
    "qdq_u8": (QDQ, U8, S8, True, False),
    "qdq_s8": (QDQ, S8, S8, True, False),
    "qop_u8": (QOP, U8, S8, True, False),
    "qop_s8": (QOP, S8, S8, True, False),
}

QUANT_OPS = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"}


def is_quantized(m: onnx.ModelProto) -> bool:
    return any(n.op_type in QUANT_OPS or n.op_type.startswith("QLinear") or n.op_type.startswith("QGemm")
               for n in m.graph.node)


def quantize(fm: onnx.ModelProto, shapes, seed, out: Path, variant, op_types=None, extra=None) -> str | None:
    """Returns None on success, or a reason string if skipped."""
    fmt, act, wt, pc, rr = variant[:5]
    if len(variant) > 5:
        extra = {**(extra or {}), **variant[5]}
    with tempfile.TemporaryDirectory(prefix="gen_onnx_zoo.") as td:
        fpath = Path(td) / "float.onnx"
        onnx.save_model(fm, fpath)
        tmp_out = Path(td) / "q.onnx"
        try:
            quantize_static(
                str(fpath), str(tmp_out), Reader(shapes, seed),
                quant_format=fmt, activation_type=act, weight_type=wt,
                per_channel=pc, reduce_range=rr, calibrate_method=CalibrationMethod.MinMax,
                op_types_to_quantize=op_types, extra_options=extra,
            )
        except Exception as e:  # noqa: BLE001 - report and skip
            return f"quantize_static raised {type(e).__name__}: {str(e).splitlines()[0][:160]}"
        qm = onnx.load_model(tmp_out)
        if not is_quantized(qm):
            return "quantize_static produced no quantized nodes (graph left float)"
        try:
            ort.InferenceSession(str(tmp_out), providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001
            return f"onnxruntime cannot load result: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
        out.write_bytes(tmp_out.read_bytes())
    return None


def generate(out: Path, verbose: bool = True) -> tuple[list[Path], list[str]]:
    out.mkdir(parents=True, exist_ok=True)
    written, skipped = [], []

    def emit(path: Path):
        written.append(path)
        if verbose:
            print(f"wrote {path.name:36s} {path.stat().st_size:8d} bytes", flush=True)

    nets = [(build_cnn(), {**STD_VARIANTS, **CNN_EXTRA}), (build_mobilenetv2(), STD_VARIANTS),
            (build_mlp(), STD_VARIANTS),
            (build_elementwise(), {**STD_VARIANTS, "qdq_s16": (QDQ, S16, S8, True, False)})]
    for i, (g, variants) in enumerate(nets):
        fm = g.model()
        for suf, var in variants.items():
            p = out / f"{g.name}_{suf}.onnx"
            why = quantize(fm, g.input_shapes, 1000 + i, p, var)
            if why:
                skipped.append(f"{p.name}: {why}")
                print(f"SKIP {p.name}: {why}", flush=True)
            else:
                emit(p)

    for j, (name, (g, opts)) in enumerate(op_models().items()):
        fm = g.model()
        for suf, var in OP_VARIANTS.items():
            p = out / f"op_{name}_{suf}.onnx"
            # ForceQuantizeNoInputCheck: "latent" ops (MaxPool, Transpose, Reshape, AveragePool in QDQ,
            # GlobalAveragePool in QOperator) are otherwise only quantized when their input already is,
            # which never holds for a graph input -> the single-op model would stay float.
            why = quantize(fm, g.input_shapes, 2000 + j, p, var, opts.get("op_types"),
                           {"ForceQuantizeNoInputCheck": True})
            if why:
                skipped.append(f"{p.name}: {why}")
                print(f"SKIP {p.name}: {why}", flush=True)
            else:
                emit(p)
    total = sum(p.stat().st_size for p in written)
    print(f"{len(written)} files, {total} bytes total; {len(skipped)} skipped", flush=True)
    return written, skipped


# --------------------------------------------------------------------------- checks
def float_models() -> dict[str, onnx.ModelProto]:
    fms = {g.name: g.model() for g in (build_cnn(), build_mobilenetv2(), build_mlp(), build_elementwise())}
    fms.update({g.name: g.model() for g, _ in op_models().values()})
    return fms


def check(out: Path) -> int:
    failures = 0
    files = sorted(out.glob("*.onnx"))
    fms = float_models()
    for p in files:
        m = onnx.load_model(p)
        hist = collections.Counter(n.op_type for n in m.graph.node)
        opset = {o.domain or "ai.onnx": o.version for o in m.opset_import}
        rng = np.random.default_rng(int.from_bytes(hashlib.sha256(p.name.encode()).digest()[:4], "little"))
        status = []
        results = []
        for label, level in (("default", None), ("disable_all", ort.GraphOptimizationLevel.ORT_DISABLE_ALL)):
            so = ort.SessionOptions()
            if level is not None:
                so.graph_optimization_level = level
            try:
                sess = ort.InferenceSession(str(p), so, providers=["CPUExecutionProvider"])
                if not results:
                    feeds = {}
                    for i in sess.get_inputs():
                        shape = [d if isinstance(d, int) else 1 for d in i.shape]
                        feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
                outs = sess.run(None, feeds)
                results.append(outs)
                status.append(f"{label}:ok")
            except Exception as e:  # noqa: BLE001
                failures += 1
                status.append(f"{label}:FAIL({type(e).__name__}: {str(e).splitlines()[0][:120]})")
        agree = ""
        if len(results) == 2:
            diff = max(float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
                       for a, b in zip(results[0], results[1]))
            agree = f" max|default-disable_all|={diff:.3g}"
            shapes = ",".join("x".join(map(str, o.shape)) for o in results[0])
        else:
            shapes = "?"
        base = next((k for k in sorted(fms, key=len, reverse=True) if p.stem.startswith(k + "_")), None)
        if results and base:
            ref = ort.InferenceSession(fms[base].SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
            err = max(float(np.max(np.abs(a - b))) for a, b in zip(results[0], ref))
            rng_ = max(float(np.ptp(b)) for b in ref)
            agree += f" max|quant-float|={err:.3g} (float range {rng_:.3g})"
        print(f"{p.name}  {p.stat().st_size}B  opset={opset}  ir={m.ir_version}  out={shapes}  "
              f"{' '.join(status)}{agree}")
        print("    " + ", ".join(f"{k}:{v}" for k, v in sorted(hist.items())))
    print(f"checked {len(files)} models, {failures} session failures")
    return 1 if failures else 0


def check_determinism() -> int:
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        wa, _ = generate(Path(a), verbose=False)
        wb, _ = generate(Path(b), verbose=False)
        na, nb = sorted(p.name for p in wa), sorted(p.name for p in wb)
        bad = [n for n in na if n not in nb or not filecmp.cmp(Path(a) / n, Path(b) / n, shallow=False)]
        bad += [n for n in nb if n not in na]
        print(f"determinism: {len(na)} files compared, {len(bad)} differ" + (f": {bad}" if bad else ""))
        return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="load+run every model in --out, print op histograms")
    ap.add_argument("--check-determinism", action="store_true", help="generate twice in temp dirs and compare")
    args = ap.parse_args()
    logging.getLogger().setLevel(logging.ERROR)  # silence quantize_static's pre-processing warnings
    ort.set_default_logger_severity(3)
    if args.check:
        return check(args.out)
    if args.check_determinism:
        return check_determinism()
    generate(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
