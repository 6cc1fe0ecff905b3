#!/usr/bin/env python3
# Writes a small ONNX model whose [4, 6] input meets Mul or Div operands that an Expand made:
# make_expand_product_onnx.py KIND OUT.onnx with KIND one of
#   divide  x / Expand(mean(x, -1), [4, 6])          (F.normalize's x / norm.expand_as(x))
#   both    Expand(mean(x, -1), [4, 6]) * Expand(Relu(mean(x, -1)), [4, 6])   (two expanded
#           [4, 1] operands: their product keeps [4, 6])
# then a MatMul by a [6, 3] weight and a Softmax.
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

kind, out = sys.argv[1], sys.argv[2]
inits = [numpy_helper.from_array(np.array([4, 6], np.int64), "shape"),
         numpy_helper.from_array(np.full((6, 3), 0.1, np.float32), "w")]
nodes = [helper.make_node("ReduceMean", ["input"], ["m"], name="mean", axes=[-1], keepdims=1),
         helper.make_node("Expand", ["m", "shape"], ["me"], name="expand")]
if kind == "divide":
    nodes.append(helper.make_node("Div", ["input", "me"], ["h"], name="divide"))
elif kind == "both":
    nodes += [helper.make_node("Relu", ["m"], ["r"], name="relu"),
              helper.make_node("Expand", ["r", "shape"], ["re"], name="expand_relu"),
              helper.make_node("Mul", ["me", "re"], ["h"], name="product")]
else:
    raise SystemExit("unknown kind " + kind)
nodes += [helper.make_node("MatMul", ["h", "w"], ["y"], name="project"),
          helper.make_node("Softmax", ["y"], ["output"], name="probs", axis=-1)]
graph = helper.make_graph(nodes, kind, [helper.make_tensor_value_info("input", TensorProto.FLOAT, [4, 6])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)],
                          initializer=inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), out)
