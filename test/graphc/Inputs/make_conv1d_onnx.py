"""Writes a one-Conv ONNX model on a 1-D input [2, 3, 8] (weight [4, 3, 3]) with the given pads,
for the importer's refusal of a pads count that is not a 1-D convolution's 2; with --volume a
3-D input [2, 3, 4, 8, 8] (weight [4, 3, 3, 3, 3]), with --transposed a ConvTranspose (weight
[3, 4, ...]).

usage: make_conv1d_onnx.py OUT.onnx PADS (comma-separated) [--volume] [--transposed]
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

pads = [int(v) for v in sys.argv[2].split(",")]
spatial = [4, 8, 8] if "--volume" in sys.argv else [8]
transposed = "--transposed" in sys.argv
weight = numpy_helper.from_array(
    np.zeros([3, 4] + [3] * len(spatial) if transposed else [4, 3] + [3] * len(spatial),
             np.float32), "w")
conv = helper.make_node("ConvTranspose" if transposed else "Conv", ["x", "w"], ["y"],
                        name="conv1d_bad", pads=pads)
graph = helper.make_graph([conv, helper.make_node("Flatten", ["y"], ["out"])], "conv1d",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3] + spatial)],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
                          [weight])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
