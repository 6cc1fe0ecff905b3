# Writes a small ONNX model with one CumSum of a computed [2, 3] tensor along its last axis
# (given as an int32 scalar, as torch exports it), exclusive and reverse: make_cumsum_onnx.py
# OUT.onnx.
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper
import onnx
x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [2, 3])
y = helper.make_tensor_value_info("output", TensorProto.FLOAT, [2, 3])
w = numpy_helper.from_array(np.eye(3, dtype=np.float32), "w")
axis = numpy_helper.from_array(np.array(-1, np.int32), "axis")
nodes = [helper.make_node("MatMul", ["input", "w"], ["h"], name="mm"),
         helper.make_node("CumSum", ["h", "axis"], ["output"], name="cumsum", exclusive=1, reverse=1)]
m = helper.make_model(helper.make_graph(nodes, "g", [x], [y], [w, axis]),
                      opset_imports=[helper.make_opsetid("", 14)])
onnx.save(m, sys.argv[1])
