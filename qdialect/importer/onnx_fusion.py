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
  Tanh, HardSigmoid, HardSwish, Pad, ReduceMean, ConvTranspose, GlobalMaxPool
  have none (always float).
- R-types: every input DQ and output Q of a group has the same storage type.
- R-s8: on x86 ORT has no int8 kernels for these groups; `QDQS8ToU8Transformer`
  turns an int8 Q->DQ pair into uint8 (zero point + 128, bit-identical) only
  where the Q feeds a single DQ consumer.  An int8 tensor read by several nodes
  (a residual branch), and an int8 constant that is not Conv / MatMul / Gemm
  weights, stay int8, and every group that reads or writes one stays float.
- Data movement (Reshape, Transpose, MaxPool, Slice, ...) with equal parameters
  in and out runs on the integers; with different parameters it is float (a
  DQ -> Q requantize in float), as is every DQ -> Q with different parameters.
"""

from __future__ import annotations

FUSING_OPS = {"Conv", "Gemm", "MatMul", "Add", "Mul", "Sigmoid", "LeakyRelu", "Softmax", "AveragePool",
              "GlobalAveragePool", "Concat"}
WEIGHT_INPUTS = {"Conv": {1, 2}, "Gemm": {1, 2}, "MatMul": {1}}


def _fan_out(imp, dq_input: str) -> int:
    """How many nodes read the quantized tensor behind a DequantizeLinear output (through all
    DequantizeLinear nodes of the tensor the DQ reads)."""
    g = imp.g
    producer_q = None
    for n in g.nodes:
        if dq_input in n.outputs and n.op_type == "DequantizeLinear":
            producer_q = n.inputs[0]
            break
    if producer_q is None:
        return 1
    readers = 0
    for c in g.consumers.get(producer_q, []):
        if c < 0:
            readers += 1
        elif g.nodes[c].op_type == "DequantizeLinear":
            readers += len(g.consumers.get(g.nodes[c].outputs[0], []))
        else:
            readers += 1
    return readers


def _dq_type(imp, name: str):
    from qdialect.importer.onnx import Deq

    v = imp.env.get(name)
    return v.qtype if isinstance(v, Deq) else None


def _dq_storage(imp, name: str) -> str | None:
    from qdialect.importer.onnx import Act, Const, Deq

    v = imp.env.get(name)
    if v is None and name in imp.g.initializers:
        return None
    if isinstance(v, Deq):
        return v.qtype.storage
    if isinstance(v, Act) and v.qtype is not None:
        return v.qtype.storage
    if isinstance(v, Const):
        return None
    return None


MOVEMENT_OPS = {"Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Slice", "Split", "MaxPool", "Resize", "Pad",
                "Relu", "Clip"}


def fused(imp, node, out_qs) -> bool | str:
    op = node.op_type
    if op in MOVEMENT_OPS:
        # moves or clamps stored integers: ORT drops the DQ / Q (or computes the same values in float)
        # when the parameters stay; a change of parameters is a requantize in float
        in_q = _dq_type(imp, node.inputs[0])
        if in_q is not None and all(q == in_q for q in out_qs):
            return True
        return f"ORT requantizes {op}'s output in float (its output parameters differ from its input's)"
    if op not in FUSING_OPS:
        return f"ORT has no integer kernel for a QDQ {op}"
    if op == "Gemm" and (node.attrs.get("alpha", 1.0) != 1.0 or node.attrs.get("beta", 1.0) != 1.0):
        return "ORT fuses Gemm only with alpha = beta = 1"
    storages = {q.storage for q in out_qs}
    weights = WEIGHT_INPUTS.get(op, set())
    shared_s8 = False
    const_s8 = False
    for k, name in enumerate(node.inputs):
        if not name:
            continue
        st = _dq_storage(imp, name)
        v = imp.env.get(name)
        from qdialect.importer.onnx import Const, Deq

        is_const = isinstance(v, Deq) and isinstance(v.src, Const)
        if k in weights:
            continue
        if st is not None:
            storages.add(st)
            if st == "i8" and is_const:
                const_s8 = True
            if st == "i8" and not is_const and _fan_out(imp, name) > 1:
                shared_s8 = True
    if any(s not in ("u8", "i8") for s in storages):
        return "ORT fuses only 8-bit activations"
    if len(storages) > 1:
        return "ORT fuses a group only when its activations share one storage type"
    if "i8" in storages:
        if const_s8:
            return "its int8 constant operand is not converted to uint8 on x86, so ORT keeps it in float"
        if shared_s8:
            return "an int8 input read by several nodes is not converted to uint8 on x86, so ORT keeps it in float"
        # the output: an int8 result read by several nodes stays int8 as well
        for o in node.outputs:
            for c in imp.g.consumers.get(o, []):
                if c >= 0 and imp.g.nodes[c].op_type == "QuantizeLinear":
                    q_out = imp.g.nodes[c].outputs[0]
                    readers = 0
                    for d in imp.g.consumers.get(q_out, []):
                        if d >= 0 and imp.g.nodes[d].op_type == "DequantizeLinear":
                            readers += len(imp.g.consumers.get(imp.g.nodes[d].outputs[0], []))
                        else:
                            readers += 1
                    if readers > 1:
                        return ("its int8 result is read by several nodes and is not converted to uint8 on x86, "
                                "so ORT keeps it in float")
    return True


def requantize_fused(imp, node, in_q, out_q) -> bool | str:
    """A DequantizeLinear -> QuantizeLinear with different parameters: ORT computes it in float."""
    return "ORT has no integer requantize for a DQ -> Q pair"
