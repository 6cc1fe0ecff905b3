# Writes a small ONNX model whose [2, 4, 8] input goes through one RMSNorm chain as exporters
# write it, then a Linear to 3 classes: make_rms_norm_onnx.py KIND OUT.onnx with KIND one of
#   rsqrt       Mul(Mul(x, Div(1, Sqrt(Add(ReduceMean(Pow(x, 2)), eps)))), weight)  (torch.rsqrt)
#   reciprocal  the same with Reciprocal(Sqrt(..)) for the rsqrt, weight first in the Mul
#   divide      Mul(Div(x, Sqrt(..)), weight)                                      (T5-style)
#   cast        rsqrt with a Cast to float before the weight (Hugging Face's .to(dtype))
#   noweight    rsqrt without a weight (elementwise_affine=False)
#   shared      rsqrt whose normalized tensor is also read elsewhere: fused up to it, the
#               weight then a broadcast_mul
# and "rotary", a rotary table computed from constants: Einsum("i,j->ij") of positions and
# frequencies (a Pow of constants), Concat, Cos, then Mul of the computed input by the table
# and a rotate_half (Slice, Neg, Concat) times the Sin table.
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

kind, out = sys.argv[1], sys.argv[2]
inits = []


def const(name, value, dtype=np.float32):
    inits.append(numpy_helper.from_array(np.array(value, dtype), name))
    return name


x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [2, 4, 8])
c = lambda name, value: helper.make_node(
    "Constant", [], [name], value=numpy_helper.from_array(np.array(value, np.float32)))
if kind == "rotary":
    nodes = [helper.make_node("Relu", ["input"], ["h"], name="relu"),
             c("positions", np.arange(4)), c("base", 10000.0),
             c("exponents", -np.arange(0, 8, 2) / 8.0),
             helper.make_node("Pow", ["base", "exponents"], ["inv_freq"], name="inv_freq"),
             helper.make_node("Einsum", ["positions", "inv_freq"], ["freqs"], name="outer",
                              equation="i,j->ij"),
             helper.make_node("Concat", ["freqs", "freqs"], ["emb"], name="emb", axis=-1),
             helper.make_node("Cos", ["emb"], ["cos"], name="cos"),
             helper.make_node("Sin", ["emb"], ["sin"], name="sin"),
             helper.make_node("Mul", ["h", "cos"], ["hc"], name="rope_cos"),
             helper.make_node("Slice", ["h", const("s0", [0], np.int64), const("e0", [4], np.int64),
                                        const("a0", [2], np.int64)], ["x1"], name="first_half"),
             helper.make_node("Slice", ["h", const("s1", [4], np.int64), const("e1", [8], np.int64),
                                        const("a1", [2], np.int64)], ["x2"], name="second_half"),
             helper.make_node("Neg", ["x2"], ["nx2"], name="negate"),
             helper.make_node("Concat", ["nx2", "x1"], ["rot"], name="rotate_half", axis=-1),
             helper.make_node("Mul", ["rot", "sin"], ["rs"], name="rope_sin"),
             helper.make_node("Add", ["hc", "rs"], ["y"], name="rope")]
else:
    nodes = [c("two", 2.0), c("eps", 1e-6 if kind != "divide" else 1e-5),
             helper.make_node("Pow", ["input", "two"], ["sq"], name="square"),
             helper.make_node("ReduceMean", ["sq"], ["ms"], name="mean", axes=[-1]),
             helper.make_node("Add", ["ms", "eps"], ["mse"], name="add_eps"),
             helper.make_node("Sqrt", ["mse"], ["root"], name="root")]
    if kind == "divide":
        nodes.append(helper.make_node("Div", ["input", "root"], ["n"], name="normalize"))
    elif kind == "reciprocal":
        nodes += [helper.make_node("Reciprocal", ["root"], ["inv"], name="inverse"),
                  helper.make_node("Mul", ["input", "inv"], ["n"], name="normalize")]
    else:
        nodes += [c("one", 1.0), helper.make_node("Div", ["one", "root"], ["inv"], name="inverse"),
                  helper.make_node("Mul", ["inv", "input"], ["n"], name="normalize")]
    if kind == "cast":
        nodes.append(helper.make_node("Cast", ["n"], ["nc"], name="to_dtype", to=TensorProto.FLOAT))
    normalized = "nc" if kind == "cast" else "n"
    weight = const("norm.weight", 1.0 + 0.1 * np.arange(8))
    if kind == "noweight":
        nodes.append(helper.make_node("Identity", [normalized], ["y"], name="same"))
    elif kind == "reciprocal":
        nodes.append(helper.make_node("Mul", [weight, normalized], ["y"], name="scale"))
    else:
        nodes.append(helper.make_node("Mul", [normalized, weight], ["y"], name="scale"))
    if kind == "shared":
        nodes += [helper.make_node("Relu", ["n"], ["r"], name="other_reader"),
                  helper.make_node("Add", ["y", "r"], ["y2"], name="join")]
        nodes.append(helper.make_node("Identity", ["y2"], ["y_out"], name="out"))
    else:
        nodes.append(helper.make_node("Identity", ["y"], ["y_out"], name="out"))
last = "y" if kind == "rotary" else "y_out"
nodes += [helper.make_node("MatMul", [last, const("fc.weight", np.ones((8, 3)) / 8)], ["logits"],
                           name="fc"),
          helper.make_node("Softmax", ["logits"], ["output"], name="probs", axis=-1)]
graph = helper.make_graph(nodes, kind, [x],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)],
                          initializer=inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), out)
