"""qnn-partition{target=ethos-u55|ethos-u65|ethos-u85} against Arm's Vela 5.2, operator by operator.

The reference is the `vela` CLI (ethos-u-vela 5.2, default compiler core) run
on the same .tflite: an operator it copies unchanged into its output runs on
the CPU, the others run in its `ethos-u` custom operators (one per NPU
region).  Our side is the TFLite importer plus qnn-partition with the
matching target (tools/vela_agreement.py explains how TFLite operators map to
qnn ops).  Every operator must be placed as Vela places it and the number of
regions must be Vela's.

Default run (about 35 s here; Vela runs in-process): the CNN zoo, the
transformer and masked-encoder models and single-operator probes of the
documented (and measured) limits, each on the three configurations.  Slow:
held-out models the tools/ generators write outside the repository (needs the
TensorFlow venv).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import ethosu.vela  # noqa: E402,F401  (a test dependency: a missing Vela fails, it does not skip)

from tools.vela_agreement import CONFIGS, compare, main  # noqa: E402
from tools.vela_probes import write_probes  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ZOO = sorted(p for p in (ROOT / "models" / "zoo").glob("*.tflite") if not p.stem.endswith("_float"))
TRANSFORMERS = sorted(
    p
    for d in ("models/transformers", "models/transformers/masked")
    for p in (ROOT / d).glob("*.tflite")
    if not p.stem.endswith("_float")
)

KNOWN_REGION_GAPS = {
    # (model, config): (ours, Vela's).  Every operator agrees; the region count differs because
    # regor's graph optimiser rewrites the graph (removes reshapes, lowers MEAN / SOFTMAX) before
    # the depth-first schedule whose NPU runs become its command streams, and we schedule the
    # imported graph.
    ("ids_mask.tflite", "ethos-u85-256"): (4, 5),
    ("mha_mask_16x8.tflite", "ethos-u85-256"): (5, 4),
}


def _assert_agrees(path: Path, config: str) -> None:
    a = compare(path, config)
    assert not a.error, a.error
    assert a.ops > 0, f"{path.name}: no operator compared"
    assert a.agreed == a.ops, f"{path.name} on {config}: " + "; ".join(a.disagreements)
    assert a.we_offload_vela_refuses == a.we_keep_vela_runs == a.split == 0
    known = KNOWN_REGION_GAPS.get((path.name, config))
    if known is not None:
        assert (a.our_regions, a.vela_regions) == known
    else:
        assert a.our_regions == a.vela_regions, f"{path.name} on {config}: regions {a.our_regions} vs Vela's {a.vela_regions}"


def test_the_zoo_is_there():
    assert len(ZOO) >= 7 and len(TRANSFORMERS) >= 10


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("path", ZOO, ids=lambda p: p.stem)
def test_zoo_placement_matches_vela(path, config):
    _assert_agrees(path, config)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("path", TRANSFORMERS, ids=lambda p: p.stem)
def test_transformer_placement_matches_vela(path, config):
    _assert_agrees(path, config)


@pytest.fixture(scope="module")
def probes(tmp_path_factory):
    return write_probes(tmp_path_factory.mktemp("vela_probes"))


# Which probes Vela 5.2 refuses (measured with the vela CLI; the test checks Vela still does).
REFUSED_U55 = {
    "conv_stride4_same", "depthwise_stride4", "add_scale_2e32", "softmax_hw_65537", "mean_depth",
    "transpose_general", "strided_slice_c2", "resize_bilinear_3x", "batch_matmul_int16",
}
REFUSED = {
    "ethos-u55-128": REFUSED_U55,
    "ethos-u65-256": REFUSED_U55,
    "ethos-u85-256": {"add_scale_2e32", "softmax_hw_65537", "mean_depth", "strided_slice_c2", "resize_bilinear_3x"},
}


@pytest.mark.parametrize("config", CONFIGS)
def test_single_op_probes_match_vela(probes, config):
    """Limits just inside and outside each modelled rule: stride 4 (valid / same), dilation 3,
    batch 2, a 70000 dimension, broadcasting both ways, weight zero point 3, depth multiplier 2,
    16-bit MEAN, SOFTMAX H x W 65536 / 65537, a 2^32 scale, and the ops added for Vela 5.2."""
    refused = set()
    for path in probes:
        a = compare(path, config)
        assert not a.error, a.error
        assert a.agreed == a.ops == 1, f"{path.stem} on {config}: " + "; ".join(a.disagreements)
        assert a.our_regions == a.vela_regions, f"{path.stem} on {config}"
        if a.vela_regions == 0:
            refused.add(path.stem)
    assert refused == REFUSED[config]


TF_PYTHON = Path(os.environ.get("QDIALECT_TF_PYTHON", "/work/tfvenv/bin/python"))
"""A Python with TensorFlow (the generators in tools/ need it; not a project dependency)."""


@pytest.mark.slow
def test_heldout_encoders_placement_matches_vela(tmp_path):
    """Encoders of other sizes than the zoo's, written outside the repository by
    `tools/gen_transformer_zoo.py --heldout` (TensorFlow venv; about 12 minutes here)."""
    import subprocess

    assert TF_PYTHON.exists(), (f"this slow test generates models with TensorFlow: no Python at {TF_PYTHON} "
                                "(set QDIALECT_TF_PYTHON to one with tensorflow-cpu installed)")
    out = tmp_path / "heldout"
    subprocess.run(
        [str(TF_PYTHON), str(ROOT / "tools" / "gen_transformer_zoo.py"), "--heldout", str(out)],
        check=True, capture_output=True, timeout=3600, cwd=ROOT,
    )
    models = sorted(p for p in out.glob("*.tflite") if not p.stem.endswith("_float"))
    assert len(models) >= 10
    for path in models:
        for config in CONFIGS:
            _assert_agrees(path, config)


def test_a_file_that_is_not_tflite_is_refused_in_one_line(tmp_path, capsys):
    bad = tmp_path / "model.tflite"
    bad.write_bytes(b"not a flatbuffer at all")
    assert main([str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"vela_agreement: {bad}: not a TFLite flatbuffer (no 'TFL3' identifier)"]
