"""lit configuration for qdialect's FileCheck suites (dialects/, transforms/)."""

import os
import shutil

import lit.formats

config.name = "qdialect"
config.test_format = lit.formats.ShTest(preamble_commands=[])
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "Inputs"]

# Tools come from the environment lit runs in (the project's virtualenv).
config.environment["PATH"] = os.environ.get("PATH", "")
config.environment["PYTHONDONTWRITEBYTECODE"] = "1"
# The ONNX profiles model the host's MLAS kernels (uint8 x int8 sums saturate in int16 pairs on
# x86 without VNNI); the FileCheck lines are written for the exact (VNNI) IR on every host.
config.environment["QDIALECT_ORT_ISA"] = "vnni"

config.substitutions.append(("%qd-opt", "qd-opt"))
config.substitutions.append(("%qd-import", "qd-import"))
config.substitutions.append(("%xdsl-opt", "xdsl-opt"))

# MLIR 22's own mlir-opt, for interop tests (Debian package mlir-22-tools).
MLIR_OPT = os.environ.get("MLIR_OPT", "/usr/lib/llvm-22/bin/mlir-opt")
if os.path.exists(MLIR_OPT) or shutil.which(MLIR_OPT):
    config.available_features.add("mlir-opt")
    config.substitutions.append(("%mlir-opt", MLIR_OPT))
