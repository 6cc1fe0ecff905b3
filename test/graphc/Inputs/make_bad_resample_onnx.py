# Writes small ONNX models, each with one Resize, InstanceNormalization or DepthToSpace node
# that graphc refuses: make_bad_resample_onnx.py KIND OUT.onnx with KIND one of
#   crop-resize    Resize with coordinate_transformation_mode = tf_crop_and_resize (a region
#                  of interest)
#   antialias      Resize shrinking by 1/2 with antialias = 1 (opset 18)
#   area           Resize with a mode ONNX does not define (area)
#   vanish         Resize by scales [1, 1, 0.1, 0.1] (floor(0.6) = no element)
#   bad-rounding   Resize nearest by 1.5 with a nearest_mode ONNX does not define
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
if kind == "crop-resize":
    nodes.append(resize([1, 1, 2, 2], mode="linear",
                        coordinate_transformation_mode="tf_crop_and_resize"))
elif kind == "antialias":
    opset = 18
    nodes.append(resize([1, 1, 0.5, 0.5], mode="linear", antialias=1))
elif kind == "area":
    nodes.append(resize([1, 1, 2, 2], mode="area"))
elif kind == "vanish":
    nodes.append(resize([1, 1, 0.1, 0.1]))
elif kind == "bad-rounding":
    nodes.append(resize([1, 1, 1.5, 1.5], mode="nearest", nearest_mode="round_half_even"))
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
