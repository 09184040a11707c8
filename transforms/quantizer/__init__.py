"""Post-training quantization (`qd-quantize`): a float `nn` graph + calibration data -> a qnn module.

- `transforms.quantizer.flow`: `quantize_float_module`, `evaluate`, the report;
- `transforms.quantizer.calibration`: tensor statistics and range choice;
- `transforms.quantizer.strategy`: `Strategy`, the built-in schemes, `PerLayer`;
- `transforms.quantizer.cli`: the `qd-quantize` command.
"""
