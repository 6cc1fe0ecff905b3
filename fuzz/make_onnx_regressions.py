#!/usr/bin/env python3
"""Writes the hand-made ONNX reproducers in this directory (see ../README.md).

    /usr/bin/python3 fuzz/make_onnx_regressions.py
Each model is well-formed protobuf but breaks an arity or size assumption of the importer.
"""
import os

import onnx
from onnx import TensorProto, helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz-onnx-import")


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def save(name, nodes, inits=()):
    g = helper.make_graph(nodes, name, [vi("x", [2, 3])], [vi("y", [2, 3])],
                          initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, os.path.join(HERE, name + ".onnx"))


shape = helper.make_tensor("s", TensorProto.INT64, [2], [1, -1])
# A Constant node with no outputs: importNode reads node.output(0).
save("constant-no-output", [helper.make_node("Constant", [], [], value=shape),
                            helper.make_node("Relu", ["x"], ["y"])])
# An Identity node with no inputs: importNode reads node.input(0).
save("identity-no-input", [helper.make_node("Identity", [], ["y"])])
# An Add node with no inputs: importNode reads node.input(0).
save("add-no-input", [helper.make_node("Add", [], ["y"])])
# A Gemm node with one input: parameterOf(node, 1) reads node.input(1) before any check.
save("gemm-one-input", [helper.make_node("Gemm", ["x"], ["y"])])
# An initializer whose dims multiply past INT64_MAX (2^32 * 2^32): readTensor's element count
# overflows (signed overflow, UB), wraps to 0, and the empty tensor is accepted with that shape.
t = TensorProto()
t.name = "w"
t.data_type = TensorProto.FLOAT
t.dims.extend([1 << 32, 1 << 32])
save("initializer-dims-overflow", [helper.make_node("MatMul", ["x", "w"], ["y"])], [t])


def save_with_inputs(name, nodes, inputs):
    g = helper.make_graph(nodes, name, inputs, [vi("y", [2, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, os.path.join(HERE, name + ".onnx"))


# Parameters as graph inputs (export_params=False): a Linear whose weight and bias graphc
# initialises, as a seed for the mutations of ParameterInputs.cpp.
save_with_inputs("parameter-inputs-linear",
                 [helper.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["y"], transB=1)],
                 [vi("x", [2, 3]), vi("fc.weight", [4, 3]), vi("fc.bias", [4])])
# A parameter input of 2^40 elements: its shape costs nothing in the file, its values would
# cost 4 TiB; refused by the element bound.
save_with_inputs("parameter-inputs-huge",
                 [helper.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["y"], transB=1)],
                 [vi("x", [2, 3]), vi("fc.weight", [1 << 20, 1 << 20]), vi("fc.bias", [4])])
# A Reshape to [32767, 2^50 - 1]: the product of the target dims overflowed int64 (signed
# overflow, UB) before it was compared with the input's element count. Found by the fuzzer.
big = helper.make_tensor("s", TensorProto.INT64, [2], [32767, (1 << 50) - 1])
save("reshape-shape-overflow", [helper.make_node("Constant", [], ["s"], value=big),
                                helper.make_node("Reshape", ["x", "s"], ["y"])])
# A Conv whose bias initializer has no elements: the empty value vector reached memcpy as a null
# pointer when graphc copied it into the parameter's blob (UB). Found by the fuzzer.
x4 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])
g = helper.make_graph([helper.make_node("Conv", ["x", "w", "b"], ["y"], name="c")],
                      "empty-parameter", [x4],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 2, 2])],
                      initializer=[helper.make_tensor("w", TensorProto.FLOAT, [1, 1, 1, 1], [1.0]),
                                   helper.make_tensor("b", TensorProto.FLOAT, [0], [])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, os.path.join(HERE, "empty-parameter.onnx"))
