# The tail the make_*_onnx.py generators share: one small ONNX model of `nodes` reading the
# value_info `x`, writing a float tensor "output" of any shape, saved at `out`, with the
# model-local `functions` given.
import onnx
from onnx import TensorProto, helper


def save(nodes, name, x, inits, opset, out, functions=()):
    graph = helper.make_graph(nodes, name, [x],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    if functions:  # model-local functions, in domain "local"
        model.opset_import.append(helper.make_opsetid("local", 1))
        model.functions.extend(functions)
    onnx.save(model, out)
