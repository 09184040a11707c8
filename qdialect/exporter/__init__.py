"""Backends that take qdialect's canonical (L1) modules out as deployable models.

    from qdialect.exporter import export_tflite, TFLiteExportError
    data = export_tflite(module)              # bytes of a .tflite that LiteRT runs
    open("model.tflite", "wb").write(data)
"""

from qdialect.exporter.tflite import TFLiteExportError, export_tflite

__all__ = ["TFLiteExportError", "export_tflite"]
