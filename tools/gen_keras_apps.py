"""Keras-applications models (random weights) int8-quantized by TFLite's converter: the
unseen architectures bench/latency.py was checked on in session 19 (not in the zoo: 0.6-6 MB
each; written where asked).

    /work/tfvenv/bin/python tools/gen_keras_apps.py OUT_DIR [--models mnv3s,mnv1,effb0,mnv3l]

  mnv3s  MobileNetV3-Small at 224x224 (hard-swish, SE blocks)  mnv3s_224.tflite
  mnv1   MobileNet (V1) alpha 0.25 at 128x128                 mnv1_025_128.tflite
  effb0  EfficientNet-B0 at 128x128 (swish, SE blocks)         effb0_128.tflite
  mnv3l  MobileNetV3-Large alpha 0.75 at 160x160              mnv3l_075_160.tflite

Keras's random state is seeded once and the models are made in this order (the weights of
one depend on the ones made before it: all four, the default, are session 19's files).

The converter's calibration data is uniform in [-1, 1] (`gen_zoo.N_CALIB` samples).  With
random weights LiteRT's reference kernels refuse to prepare these models (SOFTMAX, as for
tools/gen_mobilenetv2_full.py's model), so only the `litert` profile's bits are checked on them.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

#: name -> (file name, input size, keras.applications constructor name, its keyword arguments)
MODELS = {
    "mnv3s": ("mnv3s_224", 224, "MobileNetV3Small", {"include_preprocessing": False}),
    "mnv1": ("mnv1_025_128", 128, "MobileNet", {"alpha": 0.25}),
    "effb0": ("effb0_128", 128, "EfficientNetB0", {}),
    "mnv3l": ("mnv3l_075_160", 160, "MobileNetV3Large", {"alpha": 0.75, "include_preprocessing": False}),
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated names of " + ", ".join(MODELS))
    args = p.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        p.error(f"unknown model(s) {', '.join(unknown)}: expected some of {', '.join(MODELS)}")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    import numpy as np
    import tensorflow as tf

    import gen_zoo

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    keras.utils.set_random_seed(0)
    for name in [n for n in MODELS if n in names]:
        file_name, size, constructor, kwargs = MODELS[name]
        net = getattr(keras.applications, constructor)(input_shape=(size, size, 3), weights=None, classes=1000,
                                                       **kwargs)
        x_in = keras.Input(shape=(size, size, 3), batch_size=1, name="input_0")
        model = keras.Model(x_in, net(x_in), name=file_name)
        rng = np.random.default_rng(0)
        calib = {"input_0": rng.uniform(-1, 1, (gen_zoo.N_CALIB, 1, size, size, 3)).astype(np.float32)}
        (out / f"{file_name}.tflite").write_bytes(gen_zoo._convert(tf, model, calib, "int8"))
        print(f"wrote {out / f'{file_name}.tflite'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
