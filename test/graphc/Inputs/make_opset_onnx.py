# Writes small ONNX models at opsets 18 to 29, each with one node whose import the opset's
# definition decides (make_opset_onnx.py KIND OUT.onnx), on an image [2, 4, 6, 6] behind a Relu:
#   opset29        a Relu at opset 29 (newer than graphc knows)
#   opset10        a Relu at opset 10 (older)
#   not-larger     Resize-18 to sizes [12, 13] for axes [2, 3], keep_aspect_ratio_policy
#                  not_larger, antialias 1: one scale, min(12/6, 13/6) = 2, so 12 x 12
#   not-smaller    the same with not_smaller: 13/6, a fraction (interpolation matrices)
#   resize-axes    Resize-18 whose axes repeat an axis, [2, -2]
#   pool-dilated   AveragePool-19 with dilations [2, 2]
#   groups         GroupNormalization-21 with num_groups 3 for 4 channels
#   group-scale18  GroupNormalization-18 (scale and bias per group) given 4 per-channel scales
#                  for 2 groups
#   split-count    Split-18 with num_outputs 2 and 3 outputs
#   split-empty    Split-18 of the 4 channels by num_outputs 3 (parts of ceil(4 / 3) = 2:
#                  2, 2 and an empty last one)
#   rms-axis0      RMSNormalization-23 with axis 0 (across the batch)
#   ln-scale       LayerNormalization with axis -2 and a [6] scale (not the normalised [6, 6])
#   gelu-approx    Gelu-20 with approximate = erf
#   pad-axes       Pad-18 whose axes repeat an axis, [3, -1]
#   attn-mask      Attention-23 of the [2, 4, 6, 6] image as Q, K and V (4 heads) with an
#                  attn_mask per head, [1, 4, 6, 6]
#   attn-causal-mask  the same with a float attn_mask [6, 6], 0 on and below the diagonal and
#                  -inf above: a causal mask
#   attn-softcap   Attention-23 with softcap 30
#   attn-causal    Attention-23, causal, of 6 queries and 3 keys (a Slice of the image)
#   rope-positions RotaryEmbedding-23 of the image as [B, H, S, D] whose position_ids differ
#                  between the two samples
#   rope-dim       RotaryEmbedding-23 with rotary_embedding_dim 3 (odd)
#   fn-opset       a call of a local function whose body imports opset 17 (the model 21)
#   fn-recursive   a local function that calls itself
#   prelu-slope    PRelu with a slope per element of each image, [4, 6, 6]
#   random-dtype   RandomNormalLike of the image with dtype DOUBLE
#   random-shape   RandomNormal without its shape attribute
#   random-scale   RandomNormalLike with scale -1
#   random-bounds  RandomUniformLike with low 2 above high 1
import sys

import numpy as np
import onnx_case
from onnx import TensorProto, helper, numpy_helper

kind, out = sys.argv[1], sys.argv[2]
inits = []
functions = []


def const(name, value, dtype=np.float32):
    inits.append(numpy_helper.from_array(np.array(value, dtype), name))
    return name


def node(op, inputs, name, **attrs):
    return helper.make_node(op, inputs, ["output"], name=name, **attrs)


x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [2, 4, 6, 6])
nodes = [helper.make_node("Relu", ["input"], ["r"], name="relu")]
opset = {"opset29": 29, "opset10": 10, "rms-axis0": 23}.get(
    kind, 23 if kind.startswith(("attn", "rope")) else 21)
if kind in ("opset29", "opset10"):
    nodes.append(node("Relu", ["r"], "relu2"))
elif kind in ("not-larger", "not-smaller"):
    nodes.append(node("Resize", ["r", "", "", const("sizes", [12, 13], np.int64)], "up",
                      axes=[2, 3], antialias=1, mode="linear",
                      keep_aspect_ratio_policy=kind.replace("-", "_")))
elif kind == "resize-axes":
    nodes.append(node("Resize", ["r", "", const("scales", [2, 2])], "up", axes=[2, -2]))
elif kind == "pool-dilated":
    nodes.append(node("AveragePool", ["r"], "pool", kernel_shape=[2, 2], dilations=[2, 2]))
elif kind == "groups":
    nodes.append(node("GroupNormalization", ["r", const("s", np.ones(4)), const("b", np.zeros(4))],
                      "norm", num_groups=3))
elif kind == "group-scale18":
    opset = 18
    nodes.append(node("GroupNormalization", ["r", const("s", np.ones(4)), const("b", np.zeros(4))],
                      "norm", num_groups=2))
elif kind in ("split-count", "split-empty"):
    outputs = ["a", "b", "c"]
    nodes.append(helper.make_node("Split", ["r"], outputs, name="split", axis=1,
                                  num_outputs=2 if kind == "split-count" else 3))
    nodes.append(helper.make_node("Concat", outputs, ["output"], name="cat", axis=1))
elif kind == "rms-axis0":
    nodes.append(node("RMSNormalization", ["r", const("s", np.ones((2, 4, 6, 6)))], "rms", axis=0))
elif kind == "ln-scale":
    nodes.append(node("LayerNormalization", ["r", const("s", np.ones(6)), const("b", np.zeros(6))],
                      "ln", axis=-2))
elif kind == "gelu-approx":
    nodes.append(node("Gelu", ["r"], "gelu", approximate="erf"))
elif kind == "pad-axes":
    nodes.append(node("Pad", ["r", const("pads", [1, 1, 1, 1], np.int64), "",
                              const("axes", [3, -1], np.int64)], "pad"))
elif kind == "attn-mask":
    nodes.append(node("Attention", ["r", "r", "r", const("mask", np.zeros((1, 4, 6, 6)))],
                      "attn"))
elif kind == "attn-causal-mask":
    causal = np.where(np.tri(6, dtype=bool), 0.0, -np.inf)
    nodes.append(node("Attention", ["r", "r", "r", const("mask", causal)], "attn"))
elif kind == "attn-softcap":
    nodes.append(node("Attention", ["r", "r", "r"], "attn", softcap=30.0))
elif kind == "attn-causal":
    nodes.append(helper.make_node("Slice", ["r", const("starts", [0], np.int64),
                                            const("ends", [3], np.int64),
                                            const("axes", [2], np.int64)], ["kv"], name="half"))
    nodes.append(node("Attention", ["r", "kv", "kv"], "attn", is_causal=1))
elif kind in ("rope-positions", "rope-dim"):
    positions = [list(range(6)), list(range(1, 7))] if kind == "rope-positions" else [
        list(range(6))] * 2
    nodes.append(node("RotaryEmbedding", ["r", const("cos", np.ones((8, 3))),
                                          const("sin", np.zeros((8, 3))),
                                          const("positions", positions, np.int64)], "rope",
                      **({"rotary_embedding_dim": 3} if kind == "rope-dim" else {})))
elif kind == "prelu-slope":
    nodes.append(node("PRelu", ["r", const("slope", np.full((4, 6, 6), 0.25))], "prelu"))
elif kind.startswith("random-"):
    op, attrs = {"random-dtype": ("RandomNormalLike", {"dtype": TensorProto.DOUBLE}),
                 "random-shape": ("RandomNormal", {}),
                 "random-scale": ("RandomNormalLike", {"scale": -1.0}),
                 "random-bounds": ("RandomUniformLike", {"low": 2.0, "high": 1.0})}[kind]
    nodes.append(helper.make_node(op, [] if op == "RandomNormal" else ["r"], ["noise"],
                                  name="noise", **attrs))
    nodes.append(node("Add", ["r", "noise"], "add"))
elif kind in ("fn-opset", "fn-recursive"):
    body = [helper.make_node("Relu", ["X"], ["Y"])] if kind == "fn-opset" else [
        helper.make_node("Again", ["X"], ["Y"], domain="local")]
    functions = [helper.make_function(
        "local", "Again", ["X"], ["Y"], body,
        [helper.make_opsetid("", 17 if kind == "fn-opset" else 21),
         helper.make_opsetid("local", 1)])]
    nodes.append(helper.make_node("Again", ["r"], ["output"], name="call", domain="local"))
else:
    raise SystemExit("unknown kind " + kind)
onnx_case.save(nodes, kind, x, inits, opset, out, functions)
