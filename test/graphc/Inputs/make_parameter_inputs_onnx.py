# Writes ONNX models whose parameters are graph inputs (as torch.onnx.export(...,
# export_params=False) writes them) for graphc's refusals:
#   DIR/two-data.onnx      "x" and "y" have no initializer and are not named like parameters
#   DIR/unknown-role.onnx  the parameter "scale.weight" is read by a Div
#   DIR/dynamic.onnx       the parameter "fc.weight" has a dynamic dimension
#   DIR/linear.onnx        a Linear with parameter inputs "fc.weight", "fc.bias" (imports)
import os
import sys

import onnx
from onnx import TensorProto, helper

out = sys.argv[1]


def save(name, nodes, inputs, output_shape):
    graph = helper.make_graph(nodes, name, inputs,
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, output_shape)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
              os.path.join(out, name + ".onnx"))


def tensor(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


gemm = helper.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["output"], name="fc", transB=1)
save("two-data", [gemm], [tensor("x", [8, 3]), tensor("y", [8, 3]), tensor("fc.weight", [4, 3]),
                          tensor("fc.bias", [4])], [8, 4])
save("unknown-role",
     [helper.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["h"], name="fc", transB=1),
      helper.make_node("Div", ["h", "scale.weight"], ["output"], name="rescale")],
     [tensor("x", [8, 3]), tensor("fc.weight", [4, 3]), tensor("fc.bias", [4]),
      tensor("scale.weight", [8, 4])], [8, 4])
save("dynamic", [gemm], [tensor("x", [8, 3]), tensor("fc.weight", ["out", 3]),
                         tensor("fc.bias", [4])], [8, 4])
save("linear", [gemm], [tensor("x", [8, 3]), tensor("fc.weight", [4, 3]), tensor("fc.bias", [4])],
     [8, 4])
