"""A full-size MobileNetV2 (Keras applications, alpha 1.0, 224x224x3, random weights), int8
quantized by TFLite's converter: the model bench/latency.py and bench/conv_gmacs.py use for
threading measurements (300 M MACs; the zoo's mobilenetv2_tiny has 2.4 M).  Not in the zoo
(3.5 MB); written where asked.

    /work/tfvenv/bin/python tools/gen_mobilenetv2_full.py OUT.tflite [--size 224] [--alpha 1.0]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--alpha", type=float, default=1.0)
    args = p.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import keras
    import tensorflow as tf

    import gen_zoo

    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNetV2(input_shape=(args.size, args.size, 3), alpha=args.alpha,
                                           weights=None, classes=1000)
    x_in = keras.Input(shape=(args.size, args.size, 3), batch_size=1, name="input_0")
    model = keras.Model(x_in, model(x_in), name="mobilenetv2")
    rng = np.random.default_rng(0)
    calib = {"input_0": rng.uniform(-1, 1, (gen_zoo.N_CALIB, 1, args.size, args.size, 3)).astype(np.float32)}
    Path(args.out).write_bytes(gen_zoo._convert(tf, model, calib, "int8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
