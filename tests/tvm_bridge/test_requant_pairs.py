"""The `tflite` profile's requantization with its 64-bit products in even and odd lanes.

tvm_bridge/epilogue.py (`split_wide_products`, `pair_products_in`) rewrites every
`trunci((extsi(a) * extsi(M) + nudge) >> S)` of a vectorized epilogue into vpmuldq on the
int32 vectors and on them shifted by 32 bits, with the high (or shifted) halves gathered
back by one blend.  These tests run that code, built by TVM for this CPU and for an
AVX2-only one (`haswell`), against TFLite's integer reference as
qdialect/reference/rescale.py writes it (`multiply_by_quantized_multiplier`: SRDHM then
RoundingDivideByPOT, left shifts wrapping at 32 bits), on int32 accumulators at the
extremes (INT32_MIN, INT32_MAX and their neighbours), at the sign boundary of the SRDHM
result, at exact ties of both roundings of either sign, and at random over the whole range,
for right shifts 0..31, left shifts, multipliers 0 and 2^30 to 2^31 - 1 (qint.rescale's
range), per channel and per tensor; and they check that the rewrite did happen (a test of
the rewritten form that silently ran the old one would prove nothing).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm")

from qdialect.reference.rescale import INT32_MAX, INT32_MIN, multiply_by_quantized_multiplier  # noqa: E402

from tests.transforms.test_rescale_double_round import _tflite  # noqa: E402

from .helpers import lowered_tflite  # noqa: E402

CHANNELS = 32


def _multipliers(rng) -> list[int]:
    ms = [1 << 30, INT32_MAX, (1 << 30) + 1, 1518500250, 1992864825, 1340029796, INT32_MAX - 1, 0]
    return ms + [int(v) for v in rng.integers(1 << 30, 1 << 31, CHANNELS - len(ms))]


CASES = {
    # name: shifts per channel (TFLite's exponent: < 0 right, > 0 left), output zero point, type
    "right_1_to_31": ([-(1 + i % 31) for i in range(CHANNELS)], -3, "i8"),
    "with_zero": ([0, -1, -2, 0, -1, -3, 0, -31] + [-(i % 12) for i in range(CHANNELS - 8)], 5, "i8"),  # S = 31..62
    # left shifts of int32 values: TFLite's shift wraps at 32 bits (the lowering's select reads
    # the product before that wrap, so the rewrite may leave it as written: checked for bits only)
    "left": ([0, 1, 2, 0, -1, 3, 0, -31] + [-(i % 12) for i in range(CHANNELS - 8)], 5, "i8"),
    "int16_out": ([-(i % 20) for i in range(CHANNELS)], 0, "i16"),
}


def _tie_accumulators(m: int, shift: int, rng, n: int) -> list[int]:
    """Accumulators a whose SRDHM(a, m) is an exact tie of RoundingDivideByPOT by the right
    shift (q = k 2^e + 2^(e-1), k of both signs) or whose product is a tie of SRDHM itself."""
    e = max(-shift, 0)
    if m == 0:
        return [0] * n
    out = []
    for k in rng.integers(-(1 << 12), 1 << 12, n):
        q = (int(k) << e) + ((1 << (e - 1)) if e else 0)
        a0 = (q << 31) // m
        out += [a0 - 1, a0, a0 + 1]
    return out[:n]


def _accumulators(ms, shifts, rng, rows: int = 96) -> np.ndarray:
    acc = rng.integers(INT32_MIN, INT32_MAX + 1, (rows, CHANNELS), dtype=np.int64)
    acc[:12] = rng.integers(-5000, 5001, (12, CHANNELS))
    acc[12:20] = np.array([INT32_MIN, INT32_MIN + 1, INT32_MAX, INT32_MAX - 1, 0, 1, -1, -2])[:, None]
    for j, (m, s) in enumerate(zip(ms, shifts)):
        if m:
            a0 = -((1 << 30) // abs(m))  # where a * M crosses -2^30: the SRDHM result turns negative
            acc[20:26, j] = [a0 - 2, a0 - 1, a0, a0 + 1, a0 + 2, -a0]
        acc[26:80, j] = _tie_accumulators(m, s, rng, 54)
    return np.clip(acc, INT32_MIN, INT32_MAX)


def _expected(acc, ms, shifts, zp, out_t) -> np.ndarray:
    bits = int(out_t[1:])
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    r = multiply_by_quantized_multiplier(acc, np.array(ms, np.int64), np.array(shifts, np.int64))
    return np.clip(r + zp, lo, hi).astype(f"int{bits}")


def _lowered(text: str, name: str):
    """The module of `text` after qnn-lower-to-linalg."""
    from qdialect.diagnostics import parse_module
    from transforms.lower_to_linalg import QnnLowerToLinalgPass
    from transforms.opt import QdOptMain

    ctx = QdOptMain(args=[]).ctx
    module = parse_module(ctx, text, name)
    QnnLowerToLinalgPass().apply(ctx, module)
    return module


def _rescale_module(ms, shifts, zp, out_t, rows):
    t_in, t_out = f"tensor<{rows}x{CHANNELS}xi32>", f"tensor<{rows}x{CHANNELS}x{out_t}>"
    text = f"""
func.func @main(%x: {t_in}) -> {t_out} {{
  %0 = qint.rescale %x {{mode = "double_round", multiplier = array<i64: {", ".join(map(str, ms))}>, shift = array<i64: {", ".join(map(str, shifts))}>, output_zp = {zp} : i64}} : ({t_in}) -> {t_out}
  func.return %0 : {t_out}
}}
"""
    return _lowered(text, "rescale.mlir")


@pytest.fixture
def paired(monkeypatch):
    """Counts the requantization cores rewritten into even / odd lanes during a build."""
    from tvm_bridge import epilogue

    count = {"cores": 0}
    split = epilogue.split_wide_products

    def counting(*args, **kwargs):
        steps, value = split(*args, **kwargs)
        count["cores"] += sum(kind == "vector" for kind, _, _ in steps)
        return steps, value

    monkeypatch.setattr(epilogue, "split_wide_products", counting)
    monkeypatch.delenv("QDIALECT_REQUANT_PAIRS", raising=False)
    return count


@pytest.mark.parametrize("cpu", [None, "haswell"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_rescale_kernel_matches_the_integer_reference(case, cpu, paired):
    """A rescale kernel on its own (TVM's schedule, vectorized over 16 or 8 channels)."""
    from tvm_bridge.compile import compile_module, host_target

    shifts, zp, out_t = CASES[case]
    rng = np.random.default_rng(len(case))
    ms = _multipliers(rng)
    acc = _accumulators(ms, shifts, rng)
    target = host_target() if cpu is None else {"kind": "llvm", "mcpu": cpu}
    model = compile_module(_rescale_module(ms, shifts, zp, out_t, acc.shape[0]), target=target, cache=False)
    assert paired["cores"] >= 1 or case == "left"  # the paired form is what ran
    got = model(acc.astype(np.int32))[0]
    want = _expected(acc, ms, shifts, zp, out_t)
    assert int(np.count_nonzero(got != want)) == 0, np.argwhere(got != want)[:5]


def test_per_tensor_rescale_matches_the_integer_reference(paired):
    """One multiplier and shift for every channel: constants in the body, not vectors."""
    from tvm_bridge.compile import compile_module

    rng = np.random.default_rng(7)
    for m, s in ((1340029796, -9), (1 << 30, 0), (INT32_MAX, -31), (1518500250, 2)):
        ms, shifts = [m] * CHANNELS, [s] * CHANNELS
        acc = _accumulators(ms, shifts, rng)
        model = compile_module(_rescale_module(ms, shifts, -128, "i8", acc.shape[0]), cache=False)
        got = model(acc.astype(np.int32))[0]
        want = _expected(acc, ms, shifts, -128, "i8")
        assert int(np.count_nonzero(got != want)) == 0, (m, s, np.argwhere(got != want)[:5])
    # 2^30 with shift 0 has no product (the lowering shifts); the left shift: see "left"
    assert paired["cores"] >= 2


def _conv_module(weights: np.ndarray, bias: np.ndarray, ms, shifts, zp, h: int, w: int):
    """A 1x1 convolution (the dot-product kernel), a per-channel bias (folded into its
    accumulators' start) and the rescale (its fused epilogue)."""
    k, c = weights.shape
    acc_t, out_t = f"tensor<1x{h}x{w}x{k}xi32>", f"tensor<1x{h}x{w}x{k}xi8>"
    e4 = "affine_map<(n, y, x, o) -> (n, y, x, o)>"
    ch = "affine_map<(n, y, x, o) -> (o)>"
    text = f"""
func.func @main(%x: tensor<1x{h}x{w}x{c}xi8>) -> {out_t} {{
  %w = arith.constant dense<"0x{weights.astype(np.int8).tobytes().hex().upper()}"> : tensor<{k}x1x1x{c}xi8>
  %bias = arith.constant dense<[{", ".join(map(str, bias.tolist()))}]> : tensor<{k}xi32>
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : {acc_t}
  %init = linalg.fill ins(%zero : i32) outs(%e : {acc_t}) -> {acc_t}
  %acc = linalg.conv_2d_nhwc_fhwc {{dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}} ins(%x, %w : tensor<1x{h}x{w}x{c}xi8>, tensor<{k}x1x1x{c}xi8>) outs(%init : {acc_t}) -> {acc_t}
  %e2 = tensor.empty() : {acc_t}
  %b = linalg.generic {{indexing_maps = [{e4}, {ch}, {e4}], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}} ins(%acc, %bias : {acc_t}, tensor<{k}xi32>) outs(%e2 : {acc_t}) {{
  ^bb0(%v: i32, %bb: i32, %o: i32):
    %t = arith.addi %v, %bb : i32
    linalg.yield %t : i32
  }} -> {acc_t}
  %0 = qint.rescale %b {{mode = "double_round", multiplier = array<i64: {", ".join(map(str, ms))}>, shift = array<i64: {", ".join(map(str, shifts))}>, output_zp = {zp} : i64}} : ({acc_t}) -> {out_t}
  func.return %0 : {out_t}
}}
"""
    return _lowered(text, "conv.mlir")


@pytest.mark.parametrize("shift_zero", [False, True], ids=["right_shifts", "with_zero"])
@pytest.mark.parametrize("cpu", [None, "haswell"])
def test_convolution_epilogue_matches_the_integer_reference(cpu, shift_zero, paired):
    """The dot-product kernel's fused epilogue (vpdpbusd here, vpmaddwd for haswell), its
    int64 constants read from pair-order copies.  Output channel o reads input channel
    o mod 16 with weight 1, so its accumulator is x + bias[o]: the biases put 256
    consecutive accumulators around INT32_MIN, INT32_MAX (wrapping past them: the sums wrap
    as linalg's i32 does), the SRDHM sign boundary and ties of either sign."""
    from tvm_bridge.compile import compile_module, host_target

    rng = np.random.default_rng(3)
    k, c, h, w = CHANNELS, 16, 4, 8
    weights = np.zeros((k, c), np.int64)
    weights[np.arange(k), np.arange(k) % c] = 1
    ms = _multipliers(rng)
    # all right shifts >= 1: the high halves; a shift 0 among them: the general shift
    shifts = [-(1 + i % 13) if i % 5 or not shift_zero else 0 for i in range(k)]
    # vpmaddwd adds without wrapping: its sums must start within 2^30 (vnni.py); VNNI wraps
    limit = INT32_MAX if cpu is None else (1 << 29)
    bias = np.zeros(k, np.int64)
    for o, (m, s) in enumerate(zip(ms, shifts)):
        kind = o % 4
        if kind == 0:
            bias[o] = limit - 100 if o % 8 == 0 else -limit + 100
        elif kind == 1 and m:
            bias[o] = -((1 << 30) // abs(m))
        else:
            bias[o] = _tie_accumulators(m, s, rng, 1)[0] if m else 0
    bias = np.clip(bias, -limit, limit)
    target = host_target() if cpu is None else {"kind": "llvm", "mcpu": cpu}
    model = compile_module(_conv_module(weights, bias, ms, shifts, -5, h, w), target=target, cache=False)
    assert paired["cores"] >= 1
    for seed in range(2):
        x = np.random.default_rng(seed).integers(-128, 128, (1, h, w, c)).astype(np.int8)
        x.reshape(-1, c)[:4] = [[-128] * c, [127] * c, [0] * c, [-1] * c]
        acc = np.einsum("nhwc,kc->nhwk", x.astype(np.int64), weights) + bias
        acc = (acc + (1 << 31)) % (1 << 32) - (1 << 31)
        want = np.clip(multiply_by_quantized_multiplier(acc, np.array(ms), np.array(shifts)) - 5, -128, 127)
        got = model(x)[0]
        assert int(np.count_nonzero(got != want)) == 0, (seed, np.argwhere(got != want)[:5])


def test_zoo_convnet_for_avx2_matches_builtin_ref(paired, tmp_path):
    """mobilenetv2_tiny compiled for an AVX2-only CPU (the vpmaddwd convolution and
    depthwise kernels, residual adds, pair-order constants) in the `tflite` profile against
    LiteRT's reference kernels."""
    from pathlib import Path

    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    from tvm_bridge.compile import compile_module
    from tvm_bridge.run_cli import _entry_signature, make_inputs

    model_bytes = (Path(__file__).resolve().parents[2] / "models" / "zoo" / "mobilenetv2_tiny.tflite").read_bytes()
    lowered = lowered_tflite(model_bytes, "tflite", tmp_path)
    module = lowered()
    _, in_values, _ = _entry_signature(module)
    model = compile_module(module, target={"kind": "llvm", "mcpu": "haswell"}, cache=False)
    assert paired["cores"] >= 10
    it = Interpreter(model_content=model_bytes, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    detail_in, detail_out = it.get_input_details()[0], it.get_output_details()[0]
    for seed in range(3):
        (x,) = make_inputs(in_values, seed)
        it.set_tensor(detail_in["index"], x.astype(detail_in["dtype"]))
        it.invoke()
        want = it.get_tensor(detail_out["index"])
        got = model(x)[0]
        assert int(np.count_nonzero(got != want)) == 0, seed


@pytest.fixture
def paired_elementwise(monkeypatch):
    """Counts the elementwise kernels (Relax op pattern injective or simpler) whose cores
    `schedule.pair_late_pass` rewrote: the paired form is what runs (before session 20
    such kernels kept their block form, unpaired)."""
    import tvm
    from tvm import relax

    from tvm_bridge import epilogue

    count = {"kernels": 0}
    pair = epilogue.pair_products_in

    def counting(func, target=None):
        out = pair(func, target)
        if out is not None:
            annotated = relax.transform.AnnotateTIROpPattern()(tvm.IRModule({"main": func}))["main"]
            if int(annotated.attrs.get("op_pattern", 8)) <= 2:
                count["kernels"] += 1
        return out

    monkeypatch.setattr(epilogue, "pair_products_in", counting)
    monkeypatch.delenv("QDIALECT_REQUANT_PAIRS", raising=False)
    return count


@pytest.mark.parametrize("cpu", [None, "haswell"])
@pytest.mark.parametrize("gate", [False, True], ids=["same-shape", "channel-gate"])
def test_mul_kernels_run_paired_and_match_builtin_ref(tmp_path, cpu, gate, paired_elementwise):
    """MUL's requantization in its own elementwise kernel (EfficientNet's squeeze-and-
    excitation gate: a per-channel operand broadcast over the pixels), paired, against
    LiteRT's reference kernels on operands at both ends of int8."""
    from tests.tflite_writer import OpSpec, TensorSpec, build_model, run_tflite
    from tvm_bridge.compile import compile_module, host_target

    shape, other = (1, 6, 7, 40), ((1, 1, 1, 40) if gate else (1, 6, 7, 40))
    tensors = [TensorSpec(shape, "int8", 0.031, -4), TensorSpec(other, "int8", 1 / 256, -128),
               TensorSpec(shape, "int8", 0.0173, -5)]
    model = build_model([OpSpec("MUL", [0, 1], [2])], tensors, [0, 1], [2])
    rng = np.random.default_rng(11)
    x = rng.integers(-128, 128, shape).astype(np.int8)
    y = rng.integers(-128, 128, other).astype(np.int8)
    x.reshape(-1)[:4], y.reshape(-1)[:4] = [-128, 127, -128, 127], [-128, -128, 127, 127]
    theirs = run_tflite(model, [x, y], reference=True)[0]
    target = host_target() if cpu is None else {"kind": "llvm", "mcpu": cpu}
    ours = compile_module(lowered_tflite(model, "tflite", tmp_path)(), target=target, cache=False)(x, y)[0]
    assert paired_elementwise["kernels"] >= 1
    assert int(np.count_nonzero(ours != theirs)) == 0


def _qint_conv_module(weights: np.ndarray, bias: np.ndarray, ms, shifts, zp, h: int, w: int):
    """`_conv_module` one level up: qint.conv2d, qint.bias_add and qint.rescale, so that the
    lowering sees the convolution's constant weights and bias and bounds its sums."""

    k, c = weights.shape
    acc_t, out_t = f"tensor<1x{h}x{w}x{k}xi32>", f"tensor<1x{h}x{w}x{k}xi8>"
    text = f"""
func.func @main(%x: tensor<1x{h}x{w}x{c}xi8>) -> {out_t} {{
  %w = arith.constant dense<"0x{weights.astype(np.int8).tobytes().hex().upper()}"> : tensor<{k}x1x1x{c}xi8>
  %bias = arith.constant dense<[{", ".join(map(str, bias.tolist()))}]> : tensor<{k}xi32>
  %acc = qint.conv2d %x, %w {{input_zp = 0 : i64, weight_zp = 0 : i64, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>}} : (tensor<1x{h}x{w}x{c}xi8>, tensor<{k}x1x1x{c}xi8>) -> {acc_t}
  %b = qint.bias_add %acc, %bias : ({acc_t}, tensor<{k}xi32>) -> {acc_t}
  %0 = qint.rescale %b {{mode = "double_round", multiplier = array<i64: {", ".join(map(str, ms))}>, shift = array<i64: {", ".join(map(str, shifts))}>, output_zp = {zp} : i64}} : ({acc_t}) -> {out_t}
  func.return %0 : {out_t}
}}
"""
    return _lowered(text, "conv.mlir")


def _sign_form_in(module) -> bool:
    """Whether a generic's body takes the input's sign in 32 bits (`arith.shrsi %d, 31` on
    i32): the sign form of the double rounding (lower_to_linalg._rescale_plan)."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IntegerAttr, i32

    for op in module.walk():
        if isinstance(op, arith.ShRSIOp) and op.result.type == i32:
            amount = op.rhs.owner
            if isinstance(amount, arith.ConstantOp) and isinstance(amount.value, IntegerAttr) \
                    and amount.value.value.data == 31:
                return True
    return False


@pytest.mark.parametrize("variant", ["sign_form", "multiplier_2_30", "unbounded"])
@pytest.mark.parametrize("cpu", [None, "haswell"])
def test_sign_form_epilogue_matches_the_integer_reference(cpu, variant, paired):
    """A convolution whose sums are bounded below 2^30 (known from its constant weights and
    bias) with every multiplier in (2^30, 2^31) and every right shift >= 1 takes the double
    rounding's sign from the accumulator in 32 bits: (high32(2d*M + 2^31 + 2^(31+e)) + (d >> 31))
    >> e.  Output channel o reads input channel o mod 16 with weight 1, so its sums are
    x + bias[o]: biases at ties of RoundingDivideByPOT of either sign (a right shift of 1 makes
    every other SRDHM result a tie), around 0 / -1 (where the sign test turns) and at the
    bound.  A multiplier of exactly 2^30 (its sign test is d <= -2, not d < 0) and a bias
    that lets the sums reach 2^30 must keep the select form; all three match the reference."""
    from tvm_bridge.compile import compile_module, host_target

    rng = np.random.default_rng(11)
    k, c, h, w = CHANNELS, 16, 4, 8
    weights = np.zeros((k, c), np.int64)
    weights[np.arange(k), np.arange(k) % c] = 1
    ms = [(1 << 30) + 1, INT32_MAX, 1518500250, 1992864825, 1340029796, INT32_MAX - 1]
    ms += [int(v) for v in rng.integers((1 << 30) + 1, 1 << 31, k - len(ms))]
    shifts = [-(1 + i % 13) for i in range(k)]
    shifts[:4] = [-1, -1, -1, -2]
    limit = (1 << 30) - 256  # (the bound reads the int8 input as int8 or uint8: |x| <= 255)
    bias = np.zeros(k, np.int64)
    for o, (m, s) in enumerate(zip(ms, shifts)):
        kind = o % 4
        if kind == 0:
            bias[o] = limit if o % 8 == 0 else -limit
        elif kind == 1:
            bias[o] = 0
        else:
            bias[o] = int(np.clip(_tie_accumulators(m, s, rng, 1)[0], -limit, limit))
    if variant == "multiplier_2_30":
        ms[5] = 1 << 30
    if variant == "unbounded":
        bias[3] = 1 << 30
    target = host_target() if cpu is None else {"kind": "llvm", "mcpu": cpu}
    module = _qint_conv_module(weights, bias, ms, shifts, -5, h, w)
    assert _sign_form_in(module) == (variant == "sign_form")
    model = compile_module(module, target=target, cache=False)
    assert paired["cores"] >= 1
    for seed in range(3):
        x = np.random.default_rng(seed).integers(-128, 128, (1, h, w, c)).astype(np.int8)
        x.reshape(-1, c)[:4] = [[-128] * c, [127] * c, [0] * c, [-1] * c]
        acc = np.einsum("nhwc,kc->nhwk", x.astype(np.int64), weights) + bias
        # the expected bits from the test-local line-by-line transcription of TFLite's reference
        # (tests/transforms/test_rescale_double_round.py), not the library's vectorized one
        want = np.array([[max(-128, min(127, _tflite(int(a), m, sh) - 5)) for a, m, sh in zip(row, ms, shifts)]
                         for row in acc.reshape(-1, k)]).reshape(acc.shape)
        got = model(x)[0]
        assert int(np.count_nonzero(got != want)) == 0, (seed, np.argwhere(got != want)[:5])
