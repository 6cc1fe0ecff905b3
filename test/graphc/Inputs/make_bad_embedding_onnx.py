# Writes small ONNX models whose integer input (token ids, issue #6) is used in a way graphc
# refuses: make_bad_embedding_onnx.py KIND OUT.onnx with KIND one of
#   ids-div         the int64 input's Relu divided by 2 (an integer division, truncating)
#   gather-axis     Gather of an embedding table along axis 1
#   bool-input      a bool graph input
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

kind, out = sys.argv[1], sys.argv[2]
table = numpy_helper.from_array(np.zeros((11, 4), np.float32), "emb.weight")
ids = helper.make_tensor_value_info("tokens", TensorProto.INT64, [2, 5])
if kind == "ids-div":
    two = helper.make_node("Constant", [], ["two"], name="two",
                           value=numpy_helper.from_array(np.array(2, np.int64)))
    nodes = [two, helper.make_node("Relu", ["tokens"], ["positive"], name="relu"),
             helper.make_node("Div", ["positive", "two"], ["output"], name="halve")]
elif kind == "gather-axis":
    nodes = [helper.make_node("Gather", ["emb.weight", "tokens"], ["output"], name="lookup",
                              axis=1)]
elif kind == "bool-input":
    ids = helper.make_tensor_value_info("tokens", TensorProto.BOOL, [2, 5])
    nodes = [helper.make_node("Gather", ["emb.weight", "tokens"], ["output"], name="lookup")]
else:
    raise SystemExit("unknown kind " + kind)
graph = helper.make_graph(nodes, kind, [ids],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)],
                          initializer=[table])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), out)
