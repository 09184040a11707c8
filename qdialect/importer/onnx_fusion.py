"""Which QDQ groups ONNX Runtime fuses into integer kernels (CPU EP, default session).

ORT 1.32's QDQ transformers (`qdq_selectors.cc`, `qdq_selector_action_transformer.cc`,
`qdq_s8_to_u8.cc`), as measured on one-op and in-context models (`tools/` probes;
NUMERICS.md has the table).  The importer asks `fused(imp, node, out_qs)` for every
`DequantizeLinear -> op -> QuantizeLinear` group: True means ORT runs the op's integer
kernel (`rounding = "onnxruntime"`), a string says why ORT computes it in float
(`rounding = "onnx"`).

The rules, for 8-bit activations (16-bit activations fuse nothing but data movement):

- R-kind: Conv, Gemm (alpha = beta = 1), MatMul, Add, Mul, Sigmoid, LeakyRelu,
  Softmax, AveragePool, GlobalAveragePool, Concat have integer kernels; Sub, Div,
  Tanh, HardSigmoid, HardSwish, ReduceMean, ConvTranspose, GlobalMaxPool have
  none (always float).  ORT computes Pad in float too, but a constant pad with
  the same parameters in and out gives the integers a qnn.pad moves, so it is
  treated as data movement below.
- R-types: every input DQ and output Q of a group has the same storage type.
- R-s8: on x86 `QDQS8ToU8Transformer` turns an int8 Q->DQ pair into uint8
  (zero point + 128) where the Q feeds one DQ that feeds one node; the
  importer applies the same rewrite (`_Importer.s8_to_u8`), so the types
  seen here are ORT's.  An int8 tensor read by several nodes (a residual
  branch), and an int8 constant that is not Conv / MatMul / Gemm weights,
  stay int8.  Conv / MatMul / Gemm have no int8 activation kernels on x86:
  a group with an int8 activation stays float.  The other groups need one
  storage type for all their activations (int8 QLinearAdd exists).
- Data movement (Reshape, Transpose, MaxPool, Slice, Gather, ...) with equal parameters
  in and out runs on the integers; with different parameters it is float (a
  DQ -> Q requantize in float), as is every DQ -> Q with different parameters.
"""

from __future__ import annotations

FUSING_OPS = {"Conv", "Gemm", "MatMul", "Add", "Mul", "Sigmoid", "LeakyRelu", "Softmax", "AveragePool",
              "GlobalAveragePool", "Concat"}
WEIGHT_INPUTS = {"Conv": {1, 2}, "Gemm": {1, 2}, "MatMul": {1}}


def _dq_type(imp, name: str):
    from qdialect.importer.onnx import Deq

    v = imp.env.get(name)
    return v.qtype if isinstance(v, Deq) else None


MOVEMENT_OPS = {"Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Slice", "Split", "MaxPool", "Resize", "Pad",
                "Relu", "Clip", "Gather"}


def fused(imp, node, out_qs) -> bool | str:
    op = node.op_type
    if op in ("Relu", "Clip"):
        # ORT deletes a Relu / Clip whose range the QuantizeLinear already implies
        # (IsClipMadeRedundantByQ); it keeps any other in float (the same integers as a clamp)
        from qdialect.importer.onnx import _out_bounds

        if _out_bounds(imp, [node], out_qs[0]):
            return f"ORT keeps the {op} in float: its range is not implied by the output's quantization"
        in_q = _dq_type(imp, node.inputs[0])
        if in_q is not None and all(q == in_q for q in out_qs):
            return True
        return f"ORT requantizes {op}'s output in float (its output parameters differ from its input's)"
    if op in MOVEMENT_OPS:
        # moves stored integers: ORT drops the DQ / Q (or computes the same values in float)
        # when the parameters stay; a change of parameters is a requantize in float
        in_q = _dq_type(imp, node.inputs[0])
        if in_q is not None and all(q == in_q for q in out_qs):
            return True
        return f"ORT requantizes {op}'s output in float (its output parameters differ from its input's)"
    if op not in FUSING_OPS:
        return f"ORT has no integer kernel for a QDQ {op}"
    if op == "Gemm" and (node.attrs.get("alpha", 1.0) != 1.0 or node.attrs.get("beta", 1.0) != 1.0):
        return "ORT fuses Gemm only with alpha = beta = 1"
    # the types as ORT's kernels see them: the importer has already applied QDQS8ToU8Transformer
    weights = WEIGHT_INPUTS.get(op, set())
    storages = [q.storage for q in out_qs]
    for k, name in enumerate(node.inputs):
        if name and k not in weights:
            q = _dq_type(imp, name)
            if q is not None:
                storages.append(q.storage)
    if any(st not in ("u8", "i8") for st in storages):
        return "ORT fuses only 8-bit activations"
    if op in weights_ops():
        if "i8" in storages:
            return ("an int8 activation that ORT does not rewrite to uint8 (it is read by several nodes); "
                    "ORT has no int8 kernel for it on x86")
        return True
    if len(set(storages)) > 1:
        return "ORT fuses a group only when its activations share one storage type (int8 read by several nodes " \
               "stays int8, the others become uint8)"
    return True


def weights_ops() -> set[str]:
    return set(WEIGHT_INPUTS)


def requantize_fused(imp, node, in_q, out_q) -> bool | str:
    """A DequantizeLinear -> QuantizeLinear with different parameters: ORT computes it in float."""
    return "ORT has no integer requantize for a DQ -> Q pair"
