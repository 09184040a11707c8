"""qd-quantize's per-layer decisions by cross-validation (`--calibrate auto`, `--method auto`,
`--bias-correction auto`, the defaults).

References are independent of the quantizer: numpy's float computation of small graphs built here,
a brute-force search written out in the test, LiteRT running the float zoo model and TensorFlow's
converter model.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import Float32Type, ModuleOp, TensorType
from xdsl.ir import Block, Region

from qdialect.dialects import nn
from qdialect.interpreter import run_module
from qdialect.reference.elementwise import quantize_like_litert_input
from tests.quantize.conftest import FLOAT_MODELS, ZOO
from transforms.quantizer import flow
from transforms.quantizer.calibration import TensorStats, _mse_search, affine_params
from transforms.quantizer.flow import QuantizeError, _significantly_better, quantize_float_module, sqnr_db
from transforms.quantizer.strategy import Int8

F32 = Float32Type()


def t(*shape):
    return TensorType(F32, list(shape))


def module_of(block: Block, outputs) -> ModuleOp:
    block.add_op(func.ReturnOp(*outputs))
    return ModuleOp([func.FuncOp("main", (list(block.arg_types), [o.type for o in outputs]), Region(block))])


def fc_module(w: np.ndarray, b: np.ndarray, then=None) -> tuple[ModuleOp, nn.FullyConnectedOp]:
    """x (1, in) -> fully_connected(w, b) [-> then(...)]."""
    block = Block(arg_types=[t(1, w.shape[1])])
    wc = nn.ConstantOp(w.astype(np.float32), t(*w.shape))
    bc = nn.ConstantOp(b.astype(np.float32), t(b.size))
    fc = nn.FullyConnectedOp([block.args[0], wc.result, bc.result], t(1, w.shape[0]))
    for op in (wc, bc, fc):
        block.add_op(op)
    out = fc.results[0]
    if then is not None:
        op = then(out)
        block.add_op(op)
        out = op.results[0]
    return module_of(block, [out]), fc


# ----- the pieces ---------------------------------------------------------------------------------


def test_merged_statistics_equal_observing_in_order():
    rng = np.random.default_rng(0)
    samples = [rng.normal(i * 0.1, 1.0, 500) for i in range(7)]
    whole = TensorStats()
    for s in samples:
        whole.observe(s)
    parts = []
    for s in samples:
        p = TensorStats()
        p.observe(s)
        parts.append(p)
    merged = TensorStats.merged(parts)
    assert (merged.lo, merged.hi, merged.count) == (whole.lo, whole.hi, whole.count)
    assert math.isclose(merged.avg_lo, whole.avg_lo) and math.isclose(merged.avg_hi, whole.avg_hi)
    np.testing.assert_array_equal(np.concatenate(merged.values), np.concatenate(whole.values))
    assert sum(v.size for v in TensorStats.merged(parts, stride=4).values) == sum(math.ceil(500 / 4) for _ in samples)


@pytest.mark.parametrize("kind", ["normal", "relu", "skewed", "bimodal"])
def test_coarse_to_fine_mse_search_finds_the_full_grid_optimum(kind):
    """The asymmetric search (every 4th factor, then every factor near the best) against all 40 x 40
    (lo, hi) pairs, errors computed here from the histogram."""
    rng = np.random.default_rng(1)
    x = {"normal": rng.normal(0.3, 1.0, 40000), "relu": np.maximum(rng.normal(0, 1, 40000), 0) ** 1.5,
         "skewed": rng.lognormal(0, 0.8, 40000) - 1.5,
         "bimodal": np.concatenate([rng.normal(-2, 0.3, 20000), rng.normal(3, 1.0, 20000)])}[kind]
    stats = TensorStats()
    stats.observe(x)
    counts, centers = stats.histogram()
    lo0, hi0 = min(stats.lo, 0.0), max(stats.hi, 0.0)

    def error(lo, hi):
        s, z = affine_params(lo, hi, -128, 127, False)
        q = np.clip(np.round(centers / s) + z, -128, 127)
        return float(np.sum(counts * ((q - z) * s - centers) ** 2))

    factors = np.linspace(1.0, 0.2, 40)
    best = min(error(lo0 * a, hi0 * b) for a in (factors if lo0 < 0 else [1.0]) for b in (factors if hi0 > 0 else [1.0]))
    lo, hi = _mse_search(stats, -128, 127, False, 40)
    assert error(lo, hi) <= best * 1.02


def test_a_candidate_must_be_significantly_better_to_replace_the_default():
    base = np.array([1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.0, 1.0])
    noisy = base - np.array([0.3, -0.3, 0.3, -0.3, 0.3, -0.3, 0.3, -0.25])  # better on average, not reliably
    clear = base * 0.8
    assert _significantly_better([(base, "a"), (noisy, "b")])[1] == "a"
    assert _significantly_better([(base, "a"), (noisy, "b"), (clear, "c")])[1] == "c"


def test_views_follow_consumers():
    """Where a layer's error is scored: after its weighted consumer, after a softmax, or itself."""
    rng = np.random.default_rng(2)
    module, fc = fc_module(rng.normal(0, 0.3, (8, 16)), np.zeros(8), then=lambda v: nn.SoftmaxOp([v], t(1, 8), {"beta": 1.0}))
    q = flow._Quantizer(module, Int8(), "auto", False, None, None)
    (kind, chain), = q.views(fc.results[0])
    assert kind == "chain" and isinstance(chain[0][0], nn.SoftmaxOp)

    block = Block(arg_types=[t(1, 16)])
    ops = [nn.ConstantOp(rng.normal(0, 0.3, (8, 16)).astype(np.float32), t(8, 16)),
           nn.ConstantOp(rng.normal(0, 0.3, (4, 8)).astype(np.float32), t(4, 8))]
    first = nn.FullyConnectedOp([block.args[0], ops[0].result], t(1, 8), {"act_min": 0.0})
    second = nn.FullyConnectedOp([first.results[0], ops[1].result], t(1, 4))
    add = nn.AddOp([first.results[0], first.results[0]], t(1, 8))
    for op in (*ops, first, second, add):
        block.add_op(op)
    module = module_of(block, [second.results[0], add.results[0]])
    q = flow._Quantizer(module, Int8(), "auto", False, None, None)
    assert q.views(first.results[0]) == [("weighted", second), ("own", None)]
    assert q.views(second.results[0]) == [("own", None)]


# ----- decisions that must come out right -------------------------------------------------------------


def test_bias_correction_chosen_where_weight_rounding_is_biased():
    """Weights just under half a step round to 0 in every channel: the quantized layer is short by a
    systematic amount on positive inputs.  Cross-validation must choose the corrected bias, and the
    result must be far closer to numpy's float output than without correction."""
    rng = np.random.default_rng(3)
    w = np.full((16, 64), 0.45 / 127, np.float32)
    w[:, 0] = 1.0  # sets each channel's scale: 1 / 127
    b = rng.normal(0, 0.1, 16).astype(np.float32)
    module, _ = fc_module(w, b)
    calib = [[rng.uniform(0, 1, (1, 64)).astype(np.float32)] for _ in range(32)]
    fresh = [[rng.uniform(0, 1, (1, 64)).astype(np.float32)] for _ in range(64)]
    ref = np.concatenate([s[0] @ w.T + b for s in fresh])

    def sqnr(**kw):
        result = quantize_float_module(module, calib, Int8(), **kw)
        got = np.concatenate([run_module(result.module, s)[0] for s in fresh])
        return result, sqnr_db(ref, got)

    auto, auto_db = sqnr()
    _, off_db = sqnr(bias_correction=False)
    layer = next(r for r in auto.layers if r.kind == "fully_connected")
    assert "+bc" in layer.choice
    assert auto_db >= off_db + 10, (auto_db, off_db)


def test_few_samples_skip_cross_validation():
    """Below MIN_SELECT_SAMPLES samples nothing is chosen (mse ranges, corrected biases)."""
    rng = np.random.default_rng(5)
    module, _ = fc_module(rng.normal(0, 0.3, (8, 16)), np.zeros(8))
    calib = [[rng.normal(0, 1, (1, 16)).astype(np.float32)] for _ in range(flow.MIN_SELECT_SAMPLES - 1)]
    result = quantize_float_module(module, calib, Int8())
    assert all(r.choice == "" for r in result.layers)


def test_unknown_mode_is_refused():
    rng = np.random.default_rng(6)
    module, _ = fc_module(rng.normal(0, 0.3, (8, 16)), np.zeros(8))
    with pytest.raises(QuantizeError, match="calibration mode 'best' is not one of auto, layerwise, float"):
        quantize_float_module(module, [[np.zeros((1, 16), np.float32)]], Int8(), mode="best")


# ----- against TensorFlow's converter ----------------------------------------------------------------

MARGIN_DB = {"cnn_small": 1.5, "ds_cnn_kws": 1.5}
"""Held-out output SQNR the default must have above TFLite's converter model of the same Keras model
(measured: cnn_small +2.0 dB, ds_cnn_kws +2.9 dB; LiteRT float as the reference)."""


@pytest.mark.parametrize("name", sorted(MARGIN_DB))
def test_default_beats_the_converter_by_a_margin(name, tmp_path):
    if name not in FLOAT_MODELS:
        pytest.skip("zoo not generated")
    from tests.quantize.test_accuracy import ours_vs_tflite

    ours, theirs = ours_vs_tflite(name, tmp_path)
    assert ours[0] >= theirs[0] + MARGIN_DB[name], f"{name}: ours {ours[0]:.2f} dB, TFLite {theirs[0]:.2f} dB"


def test_cli_bias_correction_flags_conflict(tmp_path, capsys):
    from transforms.quantizer.cli import main

    rc = main([str(ZOO / "mlp_act_float.tflite"), "--calibration", str(ZOO / "mlp_act_calib.npz"),
               "--bias-correction", "on", "--no-bias-correction", "-o", str(tmp_path / "q.mlir"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "--no-bias-correction contradicts --bias-correction on" in err


def test_cli_bias_correction_with_float_calibration_refused(tmp_path, capsys):
    from transforms.quantizer.cli import main

    rc = main([str(ZOO / "mlp_act_float.tflite"), "--calibration", str(ZOO / "mlp_act_calib.npz"),
               "--calibrate", "float", "--bias-correction", "on", "-o", str(tmp_path / "q.mlir"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "--bias-correction on has no effect with --calibrate float" in err


# ----- against TensorFlow's converter and ONNX Runtime on models/calib, fresh samples ------------------

CALIB = ZOO.parent / "calib"


def _calib_fresh(name: str, n: int):
    """(calibration stack, n samples of the model's test split): generated from the task's seeds by
    tools/gen_calib_zoo.py, never seen by training, the converters' calibration or models/calib's
    128-sample evaluation set (whose SQNR differences of 0.3 dB are noise: bootstrap SE 0.4 dB)."""
    import sys

    sys.path.insert(0, str(ZOO.parents[1] / "tools"))
    import gen_calib_zoo

    cfg = gen_calib_zoo.MODELS[name]
    if not (CALIB / f"{name}_calib.npz").exists():  # the image tasks' data are not committed: rebuilt from seeds
        gen_calib_zoo.derived(CALIB, {name: cfg}, log=lambda message: None)
    x, _ = gen_calib_zoo.task_data(cfg, cfg["seed"] * 1000 + 4, n)
    return np.load(CALIB / f"{name}_calib.npz")["input_0"], np.asarray(x, np.float32)[:, None]


def _litert_outputs(path, xs) -> np.ndarray:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_path=str(path), experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    inp, out = it.get_input_details()[0], it.get_output_details()[0]
    ys = []
    for x in xs:
        it.set_tensor(inp["index"], quantize_like_litert_input(x, inp))
        it.invoke()
        y = it.get_tensor(out["index"]).astype(np.float64)
        if out["dtype"] != np.float32:
            s, z = out["quantization"]
            y = (y - z) * s
        ys.append(y.reshape(-1))
    return np.stack(ys)


def _ort_outputs(name: str, xc, xs, method: str, tmp_path) -> np.ndarray:
    """onnxruntime's quantize_static (QDQ, per-channel int8 weights, uint8 activations) on the ONNX
    translation of the float model, run in a default session."""
    import contextlib
    import io
    import logging

    import gen_calib_zoo
    import onnxruntime as ort
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)

    src, dst = tmp_path / f"{name}.onnx", tmp_path / f"{name}_{method}.onnx"
    if not src.exists():
        gen_calib_zoo.tflite_to_onnx(CALIB / f"{name}_float.tflite", src)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter({"input_0": x} for x in xc)

        def get_next(self):
            return next(self.it, None)

    logging.getLogger().setLevel(logging.ERROR)
    with contextlib.redirect_stdout(io.StringIO()):
        quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        calibrate_method=getattr(CalibrationMethod, method))
    sess = ort.InferenceSession(str(dst), providers=["CPUExecutionProvider"])
    return np.stack([np.asarray(sess.run(None, {"input_0": x})[0], np.float64).reshape(-1) for x in xs])


def _default_against_peers(name: str, n: int, tmp_path) -> dict[str, float]:
    from qdialect.importer.tflite_float import import_tflite_float_file

    xc, xs = _calib_fresh(name, n)
    module = import_tflite_float_file(CALIB / f"{name}_float.tflite")
    shapes = [list(a.type.get_shape()) for a in module.ops.first.body.block.args]
    result = quantize_float_module(module, flow.samples_from_npz({"input_0": xc}, shapes), Int8())
    ref = _litert_outputs(CALIB / f"{name}_float.tflite", xs)
    got = {"ours": np.stack([np.asarray(run_module(result.module, [x.reshape(shapes[0])])[0], np.float64)
                             .reshape(-1) for x in xs]),
           "tf": _litert_outputs(CALIB / f"{name}_tf_int8.tflite", xs)}
    for method in ("MinMax", "Entropy", "Percentile"):
        got[f"ort_{method}"] = _ort_outputs(name, xc, xs, method, tmp_path)
    sqnr = {k: sqnr_db(ref.reshape(-1), v.reshape(-1)) for k, v in got.items()}
    print(name, {k: round(v, 2) for k, v in sqnr.items()})
    return sqnr


@pytest.mark.slow
def test_default_at_or_above_tf_and_ort_on_mlp_tabular_fresh_samples(tmp_path):
    """models/calib mlp_tabular (heavy-tailed inputs: a few samples far past the calibration range
    decide the SQNR, so 1000 samples are not enough: ours -0.16 dB there, +0.15 dB on 16384, bootstrap
    SE 0.05): on 4096 test-split samples the default is at or above TensorFlow's converter and each of
    ORT's MinMax / Entropy / Percentile (measured +0.20 dB, SE 0.11).  About 1 min."""
    sqnr = _default_against_peers("mlp_tabular", 4096, tmp_path)
    assert sqnr["ours"] >= max(v for k, v in sqnr.items() if k != "ours"), sqnr


@pytest.mark.slow
def test_default_at_or_above_tf_and_ort_on_resnet_small_fresh_samples(tmp_path):
    """models/calib resnet_small (residual adds): on 256 test-split samples the default is at or above
    TensorFlow's converter and ORT's MinMax / Entropy / Percentile (measured: ours 30.76, TF 28.65, ORT
    28.44 / 28.44 / 28.76 dB; on 512 samples +0.63 dB over ORT Percentile, SE 0.34).  About 4 min."""
    sqnr = _default_against_peers("resnet_small", 256, tmp_path)
    assert sqnr["ours"] >= max(v for k, v in sqnr.items() if k != "ours"), sqnr


def test_default_at_or_above_tf_and_ort_on_attn_kws_fresh_samples(tmp_path):
    """models/calib attn_kws (MatMul, Softmax, LayerNorm arithmetic): on 256 test-split samples the
    default is at or above TensorFlow's converter and each of ORT's MinMax / Entropy / Percentile
    (on 1024: ours 30.80, TF 28.79, ORT 24.80 / 24.80 / 27.12 dB; +1.6 to +2.0 dB over the best peer,
    bootstrap SE 0.3).  The default-run check of issue 23's claim; the slow tests above add the
    models where the margin is small."""
    sqnr = _default_against_peers("attn_kws", 256, tmp_path)
    assert sqnr["ours"] >= max(v for k, v in sqnr.items() if k != "ours"), sqnr
    assert sqnr["ours"] >= sqnr["tf"] + 1.0, sqnr
