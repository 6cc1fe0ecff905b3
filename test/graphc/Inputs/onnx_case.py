# The tail the make_*_onnx.py generators share: one small ONNX model of `nodes` reading the
# value_info `x`, writing a float tensor "output" of any shape, saved at `out`.
import onnx
from onnx import TensorProto, helper


def save(nodes, name, x, inits, opset, out):
    graph = helper.make_graph(nodes, name, [x],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)],
                              initializer=inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), out)
