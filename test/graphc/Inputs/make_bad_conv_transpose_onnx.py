# Writes small ONNX models, each with one ConvTranspose node graphc refuses:
# make_bad_conv_transpose_onnx.py KIND OUT.onnx with KIND one of
#   auto-pad       auto_pad = SAME_UPPER (graphc wants explicit pads)
#   output-shape   the output_shape attribute instead of pads
#   group          group = 3, which does not divide the 4 input channels
#   output-padding output_padding 2 at stride 2 (rows no input reaches)
#   rank6          a 4-D transposed convolution (rank-6 input)
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

kind, out = sys.argv[1], sys.argv[2]
shape, wshape = [2, 4, 5, 5], [4, 2, 3, 3]
attrs = {"strides": [2, 2]}
if kind == "auto-pad":
    attrs["auto_pad"] = "SAME_UPPER"
elif kind == "output-shape":
    attrs["output_shape"] = [10, 10]
elif kind == "group":
    attrs["group"] = 3
elif kind == "output-padding":
    attrs["output_padding"] = [2, 2]
elif kind == "rank6":
    shape, wshape, attrs = [2, 4, 3, 3, 3, 3], [4, 2, 2, 2, 2, 2], {"strides": [1, 1, 1, 2]}
else:
    raise SystemExit("unknown kind " + kind)
w = numpy_helper.from_array(np.zeros(wshape, np.float32), "w")
node = helper.make_node("ConvTranspose", ["input", "w"], ["output"], name="up", **attrs)
graph = helper.make_graph([node], kind, [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)],
                          initializer=[w])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), out)
