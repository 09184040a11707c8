"""`ethos-u85`: Arm Ethos-U85 as Vela 5.2 places TFLite operators (see `ethos_u.py`)."""

from transforms.targets.ethos_u import build

TARGET = build("ethos-u85", "u85", "Arm Ethos-U85 as Vela 5.2 places TFLite operators (its SUPPORTED_OPS constraints)")
