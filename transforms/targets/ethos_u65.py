"""`ethos-u65`: Arm Ethos-U65; Vela 5.2 applies the U55's operator constraints (see `ethos_u.py`)."""

from transforms.targets.ethos_u import build

TARGET = build("ethos-u65", "u55", "Arm Ethos-U65 as Vela 5.2 places TFLite operators (the U55's constraints)")
