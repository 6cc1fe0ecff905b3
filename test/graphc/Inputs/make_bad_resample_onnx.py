# Writes small ONNX models, each with one Resize or InstanceNormalization node that
# graphc refuses: make_bad_resample_onnx.py KIND OUT.onnx with KIND one of
#   align-corners  Resize linear with coordinate_transformation_mode = align_corners
#   shrink         Resize by scales [1, 1, 0.4, 0.4] (not the inverse of a whole factor)
#   fraction       Resize by scales [1, 1, 1.5, 1.5]
#   odd-sizes      Resize to sizes [2, 4, 9, 9] from 6 x 6 (a factor of 1.5)
#   cubic          Resize with mode = cubic
#   nearest-round  Resize nearest, asymmetric, round_prefer_floor at scale 3 (output 2 of each
#                  3 reads the next pixel: not a repeat)
#   channels       Resize by scales [1, 2, 2, 2] (the channel axis)
#   rank2          Resize of a [2, 144] tensor
#   no-scales      Resize with neither scales nor sizes
#   norm-scale     InstanceNormalization with a scale of 3 elements for 4 channels
#   depth-mode     DepthToSpace in a mode ONNX does not define (RDC)
# The input is an image [2, 4, 6, 6] behind a Relu.
import sys

import numpy as np
import onnx_case
from onnx import TensorProto, helper, numpy_helper

kind, out = sys.argv[1], sys.argv[2]
inits = []


def const(name, value, dtype=np.float32):
    inits.append(numpy_helper.from_array(np.array(value, dtype), name))
    return name


def resize(scales=None, sizes=None, name="up", source="r", **attrs):
    inputs = [source, "", const("scales", scales) if scales is not None else ""]
    if sizes is not None:
        inputs.append(const("sizes", sizes, np.int64))
    return helper.make_node("Resize", inputs, ["output"], name=name, **attrs)


x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [2, 4, 6, 6])
opset = 13
nodes = [helper.make_node("Relu", ["input"], ["r"], name="relu")]
if kind == "align-corners":
    nodes.append(resize([1, 1, 2, 2], mode="linear", coordinate_transformation_mode="align_corners"))
elif kind == "shrink":
    nodes.append(resize([1, 1, 0.4, 0.4]))
elif kind == "fraction":
    nodes.append(resize([1, 1, 1.5, 1.5], mode="linear"))
elif kind == "odd-sizes":
    nodes.append(resize(sizes=[2, 4, 9, 9]))
elif kind == "cubic":
    nodes.append(resize([1, 1, 2, 2], mode="cubic"))
elif kind == "nearest-round":
    nodes.append(resize([1, 1, 3, 3], mode="nearest", coordinate_transformation_mode="asymmetric",
                        nearest_mode="round_prefer_floor"))
elif kind == "channels":
    nodes.append(resize([1, 2, 2, 2]))
elif kind == "rank2":
    nodes += [helper.make_node("Reshape", ["r", const("shape", [2, 144], np.int64)], ["flat"],
                               name="flat"),
              resize([1, 2], source="flat")]
elif kind == "no-scales":
    nodes.append(helper.make_node("Resize", ["r", ""], ["output"], name="up"))
elif kind == "norm-scale":
    nodes.append(helper.make_node("InstanceNormalization",
                                  ["r", const("s", np.ones(3)), const("b", np.zeros(4))],
                                  ["output"], name="norm"))
elif kind == "depth-mode":
    nodes.append(helper.make_node("DepthToSpace", ["r"], ["output"], name="shuffle", blocksize=2,
                                  mode="RDC"))
else:
    raise SystemExit("unknown kind " + kind)
onnx_case.save(nodes, kind, x, inits, opset, out)
