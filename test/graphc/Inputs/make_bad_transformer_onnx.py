# Writes small ONNX models, each with one node of the transformer op set (issue #6) used in a
# way graphc refuses: make_bad_transformer_onnx.py KIND OUT.onnx with KIND one of
#   matmul-bcast  MatMul of [2, 4, 8] x [8, 4]-shaped computed tensors (broadcast batch axes)
#   slice-step    Slice with step 2
#   layernorm-axis  LayerNormalization over axes 1 and 2 of a rank-3 input with [4] scale
#                 and bias (not the normalised [4, 8])
#   pow-computed  Pow of a computed tensor to a computed exponent
#   split-sizes   Split of an axis of 8 into parts of 3 and 3
#   add-incompatible  Add of a computed [2, 4, 8] tensor and a [4, 3] initializer (numpy's
#                 rule cannot broadcast 3 to 8)
#   mask-band     an attention mask before a Softmax that is not causal (-inf off a band)
#   fill-band     the same band as masked_fill(mask, -inf): Where(mask, -inf, scores)
#   pow-vector    Pow of a computed tensor to an [8] exponent (only scalar exponents)
#   sum-gap       ReduceSum over axes 0 and 2 (axes as an input; only consecutive axes)
#   div-int       Div of an int64 scalar constant by a computed tensor
#   double-weight MatMul by a float64 initializer
#   einsum-computed  Einsum of a computed tensor summing i over that operand only ("bij,jk->bk")
#   einsum-ellipsis  Einsum of constants with an ellipsis
import sys

import numpy as np
import onnx_case
from onnx import TensorProto, helper, numpy_helper

kind, out = sys.argv[1], sys.argv[2]
inits = []


def const(name, value, dtype=np.int64):
    inits.append(numpy_helper.from_array(np.array(value, dtype), name))
    return name


x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [2, 4, 8])
opset = 13
if kind == "matmul-bcast":
    nodes = [helper.make_node("Reshape", ["input", const("s", [8, 8])], ["flat"], name="flat"),
             helper.make_node("Relu", ["flat"], ["w"], name="relu"),
             helper.make_node("Slice", ["w", const("st", [0]), const("en", [4]), const("ax", [1])],
                              ["w4"], name="cut"),
             helper.make_node("MatMul", ["input", "w4"], ["output"], name="scores")]
elif kind == "slice-step":
    nodes = [helper.make_node("Slice", ["input", const("st", [0]), const("en", [8]),
                                        const("ax", [2]), const("sp", [2])], ["output"],
                              name="strided")]
elif kind == "layernorm-axis":
    opset = 17
    nodes = [helper.make_node("LayerNormalization",
                              ["input", const("g", np.ones(4), np.float32),
                               const("b", np.zeros(4), np.float32)], ["output"], name="ln", axis=1)]
elif kind == "pow-computed":
    nodes = [helper.make_node("Relu", ["input"], ["r"], name="relu"),
             helper.make_node("Pow", ["r", "r"], ["output"], name="power")]
elif kind == "split-sizes":
    nodes = [helper.make_node("Split", ["input", const("parts", [3, 3])], ["a", "b"], name="heads",
                              axis=2),
             helper.make_node("Concat", ["a", "b"], ["output"], name="join", axis=2)]
elif kind == "add-incompatible":
    nodes = [helper.make_node("Relu", ["input"], ["r"], name="relu"),
             helper.make_node("Add", ["r", const("shift", np.ones((4, 3)), np.float32)],
                              ["output"], name="shift")]
elif kind == "mask-band":
    band = np.where(np.abs(np.subtract.outer(np.arange(4), np.arange(4))) <= 1, 0.0, -np.inf)
    nodes = [helper.make_node("MatMul", ["input", const("w", np.ones((8, 4)), np.float32)],
                              ["scores"], name="scores"),
             helper.make_node("Add", ["scores", const("band", band, np.float32)], ["masked"],
                              name="mask"),
             helper.make_node("Softmax", ["masked"], ["output"], name="probs", axis=-1)]
elif kind == "fill-band":
    band = np.abs(np.subtract.outer(np.arange(4), np.arange(4))) > 1
    nodes = [helper.make_node("MatMul", ["input", const("w", np.ones((8, 4)), np.float32)],
                              ["scores"], name="scores"),
             helper.make_node("Where", [const("band", band, np.bool_),
                                        const("fill", -np.inf, np.float32), "scores"],
                              ["masked"], name="fill"),
             helper.make_node("Softmax", ["masked"], ["output"], name="probs", axis=-1)]
elif kind == "pow-vector":
    nodes = [helper.make_node("Pow", ["input", const("e", np.full(8, 2.0), np.float32)],
                              ["output"], name="square")]
elif kind == "sum-gap":
    nodes = [helper.make_node("ReduceSum", ["input", const("axes", [0, 2])], ["output"],
                              name="total", keepdims=1)]
elif kind == "div-int":
    nodes = [helper.make_node("Relu", ["input"], ["r"], name="relu"),
             helper.make_node("Div", [const("two", 2), "r"], ["output"], name="invert")]
elif kind == "double-weight":
    nodes = [helper.make_node("MatMul", ["input", const("w64", np.ones((8, 3)), np.float64)],
                              ["output"], name="project")]
elif kind == "einsum-computed":
    nodes = [helper.make_node("Relu", ["input"], ["r"], name="relu"),
             helper.make_node("Einsum", ["r", const("w", np.ones((8, 3)), np.float32)],
                              ["output"], name="project", equation="bij,jk->bk")]
elif kind == "einsum-ellipsis":
    nodes = [helper.make_node("Einsum", [const("a", np.ones((2, 3)), np.float32),
                                         const("b", np.ones(3), np.float32)],
                              ["e"], name="table", equation="...j,j->..."),
             helper.make_node("Relu", ["input"], ["output"], name="relu")]
else:
    raise SystemExit("unknown kind " + kind)
onnx_case.save(nodes, kind, x, inits, opset, out)
