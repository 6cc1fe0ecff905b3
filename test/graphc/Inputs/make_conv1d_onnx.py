"""Writes a one-Conv ONNX model on a 1-D input [2, 3, 8] (weight [4, 3, 3]) with the given pads,
for the importer's refusal of a pads count that is not a 1-D convolution's 2.

usage: make_conv1d_onnx.py OUT.onnx PADS (comma-separated)
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

pads = [int(v) for v in sys.argv[2].split(",")]
weight = numpy_helper.from_array(np.zeros((4, 3, 3), np.float32), "w")
conv = helper.make_node("Conv", ["x", "w"], ["y"], name="conv1d_bad", pads=pads)
graph = helper.make_graph([conv, helper.make_node("Flatten", ["y"], ["out"])], "conv1d",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
                          [weight])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
