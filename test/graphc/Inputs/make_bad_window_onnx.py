# Writes small ONNX models whose convolution or pooling window attributes, node inputs or graph
# inputs are out of range: make_bad_window_onnx.py OUTDIR writes one .onnx per case below.
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
weight = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "conv.weight")


def save(name, nodes, inputs, output_shape, initializer=(weight,)):
    graph = helper.make_graph(
        nodes, name, inputs,
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, output_shape)],
        initializer=list(initializer))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
              os.path.join(out, name + ".onnx"))


image = [helper.make_tensor_value_info("input", TensorProto.FLOAT, [2, 3, 8, 8])]


def conv(**attrs):
    return helper.make_node("Conv", ["input", "conv.weight"], ["output"], name="conv", **attrs)


# kernel_shape 5x5 against a 3x3 weight (onnxruntime refuses it too).
save("conv-kernel-shape", [conv(kernel_shape=[5, 5])], image, [2, 4, 4, 4])
save("conv-stride-zero", [conv(strides=[0, 0])], image, [2, 4, 6, 6])
save("conv-negative-pad", [conv(pads=[-1, -1, -1, -1])], image, [2, 4, 4, 4])
save("maxpool-stride-zero",
     [helper.make_node("MaxPool", ["input"], ["output"], name="pool", kernel_shape=[2, 2],
                       strides=[0, 0])], image, [2, 3, 4, 4], initializer=())
save("avgpool-kernel-zero",
     [helper.make_node("AveragePool", ["input"], ["output"], name="pool", kernel_shape=[0, 2])],
     image, [2, 3, 4, 4], initializer=())
# A graph input with a zero dimension (not a dynamic one).
save("input-dim-zero", [conv()],
     [helper.make_tensor_value_info("input", TensorProto.FLOAT, [2, 3, 0, 8])], [2, 4, 6, 6])
# A Relu with a second input (its schema takes one): refused, not ignored.
save("relu-two-inputs",
     [helper.make_node("Relu", ["input", "input"], ["output"], name="relu")], image,
     [2, 3, 8, 8], initializer=())
# No graph input at all: the output is a constant.
save("no-input",
     [helper.make_node("Relu", ["conv.weight"], ["output"], name="relu")], [], [4, 3, 3, 3])
# A mean over axes 1 and 3, which are not consecutive (graphc's view of it is one average pool
# over a run of axes).
save("reducemean-separated-axes",
     [helper.make_node("ReduceMean", ["input"], ["output"], name="mean", axes=[1, 3],
                       keepdims=0)], image, [2, 8], initializer=())
# Pads graphc does not import: a reflection as wide as the axis (it mirrors about the edge, so
# it must be narrower), an unknown mode, negative widths (cropping), and pads of the wrong
# length for the input's rank.
save("pad-reflect",
     [helper.make_node("Pad", ["input", "pads"], ["output"], name="pad", mode="reflect")],
     image, [2, 3, 10, 10],
     initializer=(numpy_helper.from_array(np.array([0, 0, 10, 1, 0, 0, 1, 1], np.int64), "pads"),))
save("pad-mirror",
     [helper.make_node("Pad", ["input", "pads"], ["output"], name="pad", mode="mirror")],
     image, [2, 3, 10, 10],
     initializer=(numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),))
save("pad-negative",
     [helper.make_node("Pad", ["input", "pads"], ["output"], name="pad", mode="constant")],
     image, [2, 3, 6, 8],
     initializer=(numpy_helper.from_array(np.array([0, 0, -1, 0, 0, 0, -1, 0], np.int64), "pads"),))
save("pad-rank",
     [helper.make_node("Pad", ["input", "pads"], ["output"], name="pad", mode="constant")],
     image, [2, 3, 10, 10],
     initializer=(numpy_helper.from_array(np.array([1, 1, 1, 1], np.int64), "pads"),))
