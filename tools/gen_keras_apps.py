"""Keras-applications models (random weights) int8-quantized by TFLite's converter: the
unseen architectures bench/latency.py was checked on in session 19 (not in the zoo: 0.6-6 MB
each; written where asked).

    /work/tfvenv/bin/python tools/gen_keras_apps.py OUT_DIR [--models mnv3s,mnv1,effb0,mnv3l]

  mnv3s  MobileNetV3-Small at 224x224 (hard-swish, SE blocks)  mnv3s_224.tflite
  mnv1   MobileNet (V1) alpha 0.25 at 128x128                 mnv1_025_128.tflite
  effb0  EfficientNet-B0 at 128x128 (swish, SE blocks)         effb0_128.tflite
  mnv3l  MobileNetV3-Large alpha 0.75 at 160x160              mnv3l_075_160.tflite

Deeper architectures, the held-out models of sessions 24 and 25 (`docs/heldout-latency.md`;
3-58 MB each, not committed):

  r50 ResNet50 96  d121 DenseNet121 96  xcp Xception 96  iv3 InceptionV3 96
  nas NASNetMobile 96  ev2b0 EfficientNetV2-B0 128          (session 24: --seed 24, in this order)
  r50v2 ResNet50V2 96  mn100 MobileNet 1.0 128  ev2b1 EfficientNetV2-B1 128
  d169 DenseNet169 64                                       (session 25: --seed 25, in this order)
  irv2 InceptionResNetV2 96  cnxt ConvNeXt-Tiny 64  vgg16 VGG16 64
  r101 ResNet101 64                                         (session 25, a second --seed 25 run)
  rnxt a small ResNeXt 96 (3 stages, cardinality 8: grouped 3x3 layers of 8-32 channels a
       group)  rgx a RegNet-X-like net 96 (groups of 16 channels: 2-16 groups)   (session 26,
       --seed 26; Keras 3 has no ResNeXt or RegNet, `_resnext` builds them)

Keras's random state is seeded once (`--seed`, default 0) and the models are made in this
order (the weights of one depend on the ones made before it: mnv3s, mnv1, effb0 and mnv3l, the
default, are session 19's files).

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
    "r50": ("resnet50_96", 96, "ResNet50", {}),
    "d121": ("densenet121_96", 96, "DenseNet121", {}),
    "xcp": ("xception_96", 96, "Xception", {}),
    "iv3": ("inceptionv3_96", 96, "InceptionV3", {}),
    "nas": ("nasnetmobile_96", 96, "NASNetMobile", {}),
    "ev2b0": ("effv2b0_128", 128, "EfficientNetV2B0", {"include_preprocessing": False}),
    "r50v2": ("resnet50v2_96", 96, "ResNet50V2", {}),
    "mn100": ("mobilenet_100_128", 128, "MobileNet", {}),
    "ev2b1": ("effv2b1_128", 128, "EfficientNetV2B1", {"include_preprocessing": False}),
    "d169": ("densenet169_64", 64, "DenseNet169", {}),
    "irv2": ("incresv2_96", 96, "InceptionResNetV2", {}),
    "cnxt": ("convnext_tiny_64", 64, "ConvNeXtTiny", {"include_preprocessing": False}),
    "vgg16": ("vgg16_64", 64, "VGG16", {}),
    "r101": ("resnet101_64", 64, "ResNet101", {}),
    "rnxt": ("resnext_tiny_96", 96, "_resnext", {"cardinality": 8}),
    "rgx": ("regnetx_like_96", 96, "_resnext", {"cardinality": 0, "group_width": 16}),
}
#: what runs without --models: session 19's four
DEFAULT = ("mnv3s", "mnv1", "effb0", "mnv3l")


def _resnext(keras, input_shape, weights, classes, cardinality: int = 8, group_width: int = 0):
    """A small ResNeXt (`cardinality` groups a 3x3 layer) or, with `group_width`, a RegNet-X-like
    net (groups of that many channels): stem 3x3/2 to 32, three stages of two bottleneck
    blocks (widths 64, 128, 256; the first block of a stage strides 2), pooling, a dense
    layer.  Keras 3's applications have neither."""
    L = keras.layers
    x_in = keras.Input(shape=input_shape)
    x = L.ReLU()(L.BatchNormalization()(L.Conv2D(32, 3, strides=2, padding="same")(x_in)))
    for stage, width in enumerate((64, 128, 256)):
        for block in range(2):
            stride = 2 if block == 0 and stage > 0 else 1
            groups = cardinality or width // 2 // group_width
            y = L.ReLU()(L.BatchNormalization()(L.Conv2D(width // 2, 1)(x)))
            y = L.ReLU()(L.BatchNormalization()(L.Conv2D(width // 2, 3, strides=stride, padding="same",
                                                         groups=groups)(y)))
            y = L.BatchNormalization()(L.Conv2D(width, 1)(y))
            if block == 0:
                x = L.BatchNormalization()(L.Conv2D(width, 1, strides=stride)(x))
            x = L.ReLU()(L.Add()([x, y]))
    x = L.GlobalAveragePooling2D()(x)
    return keras.Model(x_in, L.Dense(classes, activation="softmax")(x))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--models", default=",".join(DEFAULT), help="comma-separated names of " + ", ".join(MODELS))
    p.add_argument("--seed", type=int, default=0, help="Keras's random seed, set once before the first model")
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
    keras.utils.set_random_seed(args.seed)
    for name in [n for n in MODELS if n in names]:
        file_name, size, constructor, kwargs = MODELS[name]
        make = getattr(keras.applications, constructor) if not constructor.startswith("_") else \
            (lambda **kw: globals()[constructor](keras, **kw))
        net = make(input_shape=(size, size, 3), weights=None, classes=1000, **kwargs)
        x_in = keras.Input(shape=(size, size, 3), batch_size=1, name="input_0")
        model = keras.Model(x_in, net(x_in), name=file_name)
        rng = np.random.default_rng(0)
        calib = {"input_0": rng.uniform(-1, 1, (gen_zoo.N_CALIB, 1, size, size, 3)).astype(np.float32)}
        (out / f"{file_name}.tflite").write_bytes(gen_zoo._convert(tf, model, calib, "int8"))
        print(f"wrote {out / f'{file_name}.tflite'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
