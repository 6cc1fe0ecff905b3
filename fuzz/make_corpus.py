#!/usr/bin/env python3
"""Writes the generated seed corpora under fuzz/corpus/: small .npy files and tiny ONNX models.

Run with Debian's /usr/bin/python3 (numpy and onnx):  /usr/bin/python3 fuzz/make_corpus.py
The CSV and JSON plan seeds and fuzz/corpus/fuzz-onnx-import/mlp.onnx are plain copies
(test/graphc-plan/Inputs, examples/mlp.onnx) and are kept in git as they are.
"""
import io
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def out(target, name):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, name)


# --- .npy: one file per dtype and layout the reader supports (and a few it must refuse). ---
rng = np.random.default_rng(0)
npy = {
    "f32-2x3.npy": rng.standard_normal((2, 3)).astype("<f4"),
    "f64-0d.npy": np.array(1.5, dtype="<f8"),
    "f16-4.npy": np.arange(4, dtype="<f2"),
    "i64-5.npy": np.arange(5, dtype="<i8"),
    "i32-2x2x2.npy": np.arange(8, dtype="<i4").reshape(2, 2, 2),
    "i16-3.npy": np.array([-1, 0, 1], dtype="<i2"),
    "i8-3.npy": np.array([-1, 0, 1], dtype="i1"),
    "u8-1x4.npy": np.arange(4, dtype="u1").reshape(1, 4),
    "u16-2.npy": np.array([1, 2], dtype="<u2"),
    "u32-2.npy": np.array([1, 2], dtype="<u4"),
    "u64-2.npy": np.array([1, 2], dtype="<u8"),
    "bool-3.npy": np.array([True, False, True]),
    "f32-empty-0x3.npy": np.zeros((0, 3), dtype="<f4"),
    "f32-big-endian.npy": np.arange(3, dtype=">f4"),        # refused: big endian
    "f32-fortran.npy": np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)),  # refused
}
for name, a in npy.items():
    np.save(out("fuzz-npy", name), a, allow_pickle=False)
# Format versions 2.0 and 3.0 (np.save picks 1.0 for small headers).
for version in ((2, 0), (3, 0)):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.arange(3, dtype="<f4"), version=version)
    with open(out("fuzz-npy", "f32-v%d.npy" % version[0]), "wb") as f:
        f.write(buf.getvalue())


# --- ONNX: tiny models covering each supported op; mlp.onnx is copied from examples/. ---
def model(name, nodes, inputs, outputs, inits, opset=13):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, out("fuzz-onnx-import", name + ".onnx"))


def init(name, a):
    return numpy_helper.from_array(np.asarray(a, dtype=np.float32), name)


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


model("gemm-relu-softmax",
      [helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1, name="fc"),
       helper.make_node("Relu", ["h"], ["r"]),
       helper.make_node("Softmax", ["r"], ["y"], axis=-1)],
      [vi("x", [2, 3])], [vi("y", [2, 4])],
      [init("w", rng.standard_normal((4, 3))), init("b", np.zeros(4))])

model("matmul-add-tanh-sigmoid",
      [helper.make_node("MatMul", ["x", "w"], ["m"]),
       helper.make_node("Add", ["m", "b"], ["a"]),
       helper.make_node("Tanh", ["a"], ["t"]),
       helper.make_node("Sigmoid", ["t"], ["s"]),
       helper.make_node("Identity", ["s"], ["y"])],
      [vi("x", [2, 3])], [vi("y", [2, 2])],
      [init("w", rng.standard_normal((3, 2))), init("b", np.zeros(2))])

model("conv-pool-flatten",
      [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                        strides=[1, 1]),
       helper.make_node("Relu", ["c"], ["r"]),
       helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
       helper.make_node("Flatten", ["p"], ["f"], axis=1),
       helper.make_node("Gemm", ["f", "w2"], ["y"], transB=1)],
      [vi("x", [1, 1, 4, 4])], [vi("y", [1, 2])],
      [init("w", rng.standard_normal((2, 1, 3, 3))), init("b", np.zeros(2)),
       init("w2", rng.standard_normal((2, 8)))])

model("conv-transpose-concat",
      [helper.make_node("ConvTranspose", ["x", "w", "b"], ["u"], kernel_shape=[3, 3],
                        strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
       helper.make_node("Relu", ["u"], ["r"]),
       helper.make_node("Concat", ["r", "r"], ["c"], axis=1),
       helper.make_node("Flatten", ["c"], ["f"], axis=1),
       helper.make_node("Gemm", ["f", "w2"], ["y"], transB=1)],
      [vi("x", [1, 2, 2, 2])], [vi("y", [1, 2])],
      [init("w", rng.standard_normal((2, 1, 3, 3))), init("b", np.zeros(1)),
       init("w2", rng.standard_normal((2, 32)))])

shape = helper.make_tensor("shape", TensorProto.INT64, [2], [1, -1])
model("constant-reshape",
      [helper.make_node("Constant", [], ["s"], value=shape),
       helper.make_node("Reshape", ["x", "s"], ["y"])],
      [vi("x", [1, 2, 3])], [vi("y", [1, 6])], [])

# nn.GroupNorm as torch exports it (InstanceNormalization over [N, G, -1] with Constant ones and
# zeros, the weight and bias unsqueezed), a per-channel Mul, and Resize nearest by sizes and
# linear by scales.
ones = helper.make_tensor("ones", TensorProto.FLOAT, [2], [1.0, 1.0])
zeros = helper.make_tensor("zeros", TensorProto.FLOAT, [2], [0.0, 0.0])
model("groupnorm-resize",
      [helper.make_node("Reshape", ["x", "groups"], ["g"]),
       helper.make_node("Constant", [], ["one"], value=ones),
       helper.make_node("Constant", [], ["zero"], value=zeros),
       helper.make_node("InstanceNormalization", ["g", "one", "zero"], ["n"], epsilon=1e-5),
       helper.make_node("Reshape", ["n", "image"], ["h"]),
       helper.make_node("Unsqueeze", ["gamma", "axes"], ["gu"]),
       helper.make_node("Mul", ["h", "gu"], ["m"]),
       helper.make_node("Resize", ["m", "", "", "sizes"], ["u"], mode="nearest",
                        coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
       helper.make_node("Resize", ["u", "", "scales"], ["v"], mode="linear"),
       helper.make_node("InstanceNormalization", ["v", "gamma", "beta"], ["y"])],
      [vi("x", [1, 4, 2, 2])], [vi("y", [1, 4, 8, 12])],
      [init("gamma", rng.standard_normal(4)), init("beta", np.zeros(4)),
       numpy_helper.from_array(np.array([0, 2, -1], np.int64), "groups"),
       numpy_helper.from_array(np.array([1, 4, 2, 2], np.int64), "image"),
       numpy_helper.from_array(np.array([1, 2], np.int64), "axes"),
       numpy_helper.from_array(np.array([1, 4, 4, 4], np.int64), "sizes"),
       numpy_helper.from_array(np.array([1, 1, 2, 3], np.float32), "scales")])


# --- graph-dialect IR: every `// -----` chunk of the dialect tests, comments dropped. ---
for test in ("ops", "invalid"):
    path = os.path.join(HERE, "..", "test", "Dialect", test + ".mlir")
    chunks = open(path).read().split("// -----")
    for i, chunk in enumerate(chunks):
        lines = [l for l in chunk.splitlines() if l.strip() and not l.lstrip().startswith("//")]
        if lines:
            with open(out("fuzz-graph-mlir", "%s-%02d.mlir" % (test, i)), "w") as f:
                f.write("\n".join(lines) + "\n")
