"""`ethos-u55`: Arm Ethos-U55 as Vela 5.2 places TFLite operators (see `ethos_u.py`)."""

from transforms.targets.ethos_u import U55_SUMMARY, build

TARGET = build("ethos-u55", "u55", U55_SUMMARY)
