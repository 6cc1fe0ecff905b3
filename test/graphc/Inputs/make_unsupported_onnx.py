# Writes a small ONNX model whose second node is a Sin, which graphc does not support.
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

w = numpy_helper.from_array(np.ones((4, 3), np.float32), "fc.weight")
b = numpy_helper.from_array(np.zeros((4,), np.float32), "fc.bias")
graph = helper.make_graph(
    [helper.make_node("Gemm", ["input", "fc.weight", "fc.bias"], ["h"], name="fc", transB=1),
     helper.make_node("Sin", ["h"], ["output"], name="act")],
    "unsupported",
    [helper.make_tensor_value_info("input", TensorProto.FLOAT, [8, 3])],
    [helper.make_tensor_value_info("output", TensorProto.FLOAT, [8, 4])],
    initializer=[w, b])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
