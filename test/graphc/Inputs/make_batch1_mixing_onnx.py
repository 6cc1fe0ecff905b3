# A hand-built ONNX model exported at batch 1 whose batch, once the Transpose puts it second,
# merges with the features ([4, 1 x 6] read as [4 x 1, 6] by graphc's guess) and is then summed
# over with the rows (ReduceSum over axis 0): at another batch the samples mix, which
# graphc detects (test/graphc/fixed-batch-export.test). Usage: make_batch1_mixing_onnx.py OUT
import sys, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
W = numpy_helper.from_array(np.full((6, 3), 0.1, dtype=np.float32), "w")
shape = numpy_helper.from_array(np.array([4, 6], dtype=np.int64), "shape")
axes = numpy_helper.from_array(np.array([0], dtype=np.int64), "axes")
nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2], name="seq_first"),
         helper.make_node("Reshape", ["t", "shape"], ["r"], name="merge_batch_and_features"),
         helper.make_node("MatMul", ["r", "w"], ["m"], name="project"),
         helper.make_node("ReduceSum", ["m", "axes"], ["s"], keepdims=1, name="sum_rows"),
         helper.make_node("Softmax", ["s"], ["y"], axis=1, name="head")]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], [W, shape, axes])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
