#!/usr/bin/env python3
"""Rewrite a torch 1.13 export (opsets 11 to 17) as a newer exporter writes it at opset 18-28.

torch 1.13 (Debian's) cannot export past opset 17, and onnx 1.12 cannot convert past it, so the
tests of graphc's opset 18-28 import (test/e2e/*-opset*.test) rewrite the exported graph here,
op by op, into the forms those opsets define (ONNX's docs/Changelog.md), and train it against
the same PyTorch module. Each rewrite keeps the graph's meaning under the newer opset's
definition:

  18: every Reduce* takes its axes as an int64 input; Pad names the padded axes in an `axes`
      input (negative, counted from the end) and gives pads for those only; Split with equal
      parts (the last one smaller: torch.chunk's rule) uses `num_outputs`; Resize gives scales
      or sizes for the spatial axes only, with `axes` = [-2, -1] (or [-1] for sequences)
  19: Resize's half_pixel and pytorch_half_pixel are written half_pixel_symmetric (the same
      positions at the whole factors these models use)
  20: the exact GELU chain (Div by sqrt 2, Erf, Add 1, Mul x, Mul 0.5) becomes Gelu
  21: nn.GroupNorm's export (Reshape to [N, G, -1], InstanceNormalization with ones and zeros,
      Reshape back, Mul by the weight and Add the bias, each Unsqueezed to [C, 1, 1]) becomes
      GroupNormalization(num_groups, epsilon) with the [C] weight and bias
  23: RMSNorm's chain (Pow 2, ReduceMean over the last axis, Add eps, Sqrt, then Div(1, .) and
      Mul(x, .) or Div(x, .), then Mul by the [D] weight) becomes RMSNormalization
  23: an attention over [B, H, S, D] heads, MatMul(q, Transpose(k, [0, 1, 3, 2])) times (or
      divided by) a scalar, Where(constant mask, -inf, .) or not, Softmax over the last axis,
      MatMul by v, becomes Attention(q, k, v) with that scale, and is_causal where the mask
      hides exactly the later keys (a bool attn_mask of the attended keys otherwise), as the
      dynamo exporter writes scaled_dot_product_attention at opset 23
  24: Mul(x, Sigmoid(x)) becomes Swish (alpha 1)

Nodes left unread by a rewrite are removed. The model's ir_version is raised to the one its
opset needs.

  onnx_upgrade.py IN.onnx OUT.onnx --opset N   (prints the rewrites made, one per line)
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.mapping import TENSOR_TYPE_TO_NP_TYPE

# The IR version each opset needs (ONNX's docs/Versioning.md).
IR_VERSIONS = {18: 8, 19: 9, 20: 9, 21: 10, 22: 10, 23: 11, 24: 11, 25: 12, 26: 12, 27: 13,
               28: 13}
AXES_REDUCTIONS = ("ReduceMean", "ReduceMax", "ReduceMin", "ReduceL2", "ReduceL1",
                   "ReduceLogSumExp", "ReduceSumSquare", "ReduceProd", "ReduceLogSum")


class Graph:
    """The graph's nodes with producer/reader maps and known constants, for rewriting."""

    def __init__(self, model):
        self.model = model
        self.g = model.graph
        self.consts = {t.name: numpy_helper.to_array(t) for t in self.g.initializer}
        for n in self.g.node:
            if n.op_type == "Constant":
                for a in n.attribute:
                    if a.name == "value":
                        self.consts[n.output[0]] = numpy_helper.to_array(a.t)
        self.counter = 0
        self.log = []

    def producer(self, name):
        for n in self.g.node:
            if name in n.output:
                return n
        return None

    def readers(self, name):
        return [n for n in self.g.node if name in n.input]

    def sole_reader(self, name, op_type):
        rs = self.readers(name)
        outputs = {o.name for o in self.g.output}
        if len(rs) == 1 and rs[0].op_type == op_type and name not in outputs:
            return rs[0]
        return None

    def const(self, name):
        """The value of `name` if it is a constant: an initializer, a Constant node, or the
        shape arithmetic torch writes for F.pad's pads and Resize's scales (Shape, Gather,
        Mul, Sub, ConstantOfShape, Concat, Reshape, Slice, Transpose, Cast of constants); else
        None."""
        if name in self.consts:
            return self.consts[name]
        p = self.producer(name)
        if p is None or p.op_type not in ("ConstantOfShape", "Concat", "Reshape", "Slice",
                                          "Transpose", "Cast", "Shape", "Gather", "Mul", "Sub"):
            return None
        ins = [self.const(i) if i else None for i in p.input]
        if ins[0] is None:
            return None
        if p.op_type == "Shape":
            return np.array(ins[0].shape, np.int64)
        if p.op_type in ("Gather", "Mul", "Sub") and ins[1] is None:
            return None
        if p.op_type == "Gather":
            return np.take(ins[0], ins[1], axis=attr(p, "axis", 0))
        if p.op_type in ("Mul", "Sub"):
            return ins[0] * ins[1] if p.op_type == "Mul" else ins[0] - ins[1]
        if p.op_type == "ConstantOfShape":
            value = attr(p, "value")
            fill = numpy_helper.to_array(value) if value is not None else np.zeros(1, np.float32)
            return np.full(tuple(ins[0]), fill.reshape(-1)[0], fill.dtype)
        if p.op_type == "Concat":
            return None if any(x is None for x in ins) else \
                np.concatenate(ins, axis=attr(p, "axis", 0))
        if p.op_type == "Reshape":
            return None if ins[1] is None else ins[0].reshape(tuple(ins[1]))
        if p.op_type == "Transpose":
            return np.transpose(ins[0], attr(p, "perm"))
        if p.op_type == "Cast":
            return ins[0].astype(TENSOR_TYPE_TO_NP_TYPE[attr(p, "to", 1)])
        # Slice: starts, ends, axes, steps
        if any(x is None for x in ins[1:3]):
            return None
        axes = ins[3] if len(ins) > 3 and ins[3] is not None else range(len(ins[1]))
        steps = ins[4] if len(ins) > 4 and ins[4] is not None else [1] * len(ins[1])
        index = [slice(None)] * ins[0].ndim
        for start, end, axis, step in zip(ins[1], ins[2], axes, steps):
            big = np.iinfo(np.int64).max // 2
            index[axis] = slice(None if abs(start) >= big else start,
                                None if abs(end) >= big else end, step)
        return ins[0][tuple(index)]

    def add_constant(self, array, hint):
        """A Constant node of `array` at the graph's start (not an initializer: the tests map
        every initializer to a state_dict entry); its output's name."""
        self.counter += 1
        name = "%s__upgraded_%d" % (hint, self.counter)
        self.g.node.insert(0, helper.make_node("Constant", [], [name], name=name,
                                               value=numpy_helper.from_array(array, name)))
        self.consts[name] = array
        return name

    def replace(self, old_nodes, new_node):
        """Put `new_node` where the first of `old_nodes` was, and remove them all."""
        position = min(list(self.g.node).index(n) for n in old_nodes)
        for n in old_nodes:
            self.g.node.remove(n)
        self.g.node.insert(position, new_node)

    def prune(self):
        """Remove nodes whose outputs nothing reads (repeatedly) and unread initializers."""
        outputs = {o.name for o in self.g.output}
        while True:
            read = {i for n in self.g.node for i in n.input} | outputs
            dead = [n for n in self.g.node if not any(o in read for o in n.output)]
            if not dead:
                break
            for n in dead:
                self.g.node.remove(n)
        read = {i for n in self.g.node for i in n.input}
        for t in [t for t in self.g.initializer if t.name not in read]:
            self.g.initializer.remove(t)


def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def drop_attr(node, name):
    for a in list(node.attribute):
        if a.name == name:
            node.attribute.remove(a)


def set_attr(node, name, value):
    drop_attr(node, name)
    node.attribute.append(helper.make_attribute(name, value))


def scalar(g, name):
    v = g.const(name)
    return float(v.reshape(-1)[0]) if v is not None and v.size == 1 else None


def reductions_take_axes_inputs(g):
    for n in list(g.g.node):  # (add_constant inserts nodes)
        axes = attr(n, "axes")
        if n.op_type in AXES_REDUCTIONS and axes is not None:
            drop_attr(n, "axes")
            n.input.append(g.add_constant(np.array(axes, np.int64), "axes"))
            g.log.append("%s %s: axes %s as an input" % (n.op_type, n.name, list(axes)))


def pads_name_their_axes(g):
    for n in list(g.g.node):  # (add_constant inserts nodes)
        if n.op_type != "Pad" or len(n.input) < 2 or len(n.input) > 3:
            continue
        pads = g.const(n.input[1])
        rank = len(pads) // 2
        axes = [a for a in range(rank) if pads[a] or pads[a + rank]]
        if not axes or len(axes) == rank:
            continue
        given = [pads[a] for a in axes] + [pads[a + rank] for a in axes]
        while len(n.input) < 3:
            n.input.append("")
        n.input[1] = g.add_constant(np.array(given, np.int64), "pads")
        n.input.append(g.add_constant(np.array([a - rank for a in axes], np.int64), "axes"))
        g.log.append("Pad %s: pads %s for axes %s" % (n.name, given, [a - rank for a in axes]))


def splits_by_count(g):
    for n in list(g.g.node):  # (add_constant inserts nodes)
        if n.op_type != "Split" or len(n.input) < 2 or not n.input[1]:
            continue
        sizes = list(g.const(n.input[1]))
        parts = len(sizes)
        chunk = -(-sum(sizes) // parts)
        if sizes != [chunk] * (parts - 1) + [sum(sizes) - chunk * (parts - 1)]:
            continue
        del n.input[1]
        set_attr(n, "num_outputs", parts)
        g.log.append("Split %s: num_outputs %d" % (n.name, parts))


def resizes_name_their_axes(g, opset):
    for n in list(g.g.node):  # (add_constant inserts nodes)
        if n.op_type != "Resize" or attr(n, "axes") is not None:
            continue
        for index in (2, 3):  # scales, sizes
            if index >= len(n.input) or not n.input[index]:
                continue
            values = g.const(n.input[index])
            if values is None:
                # Sizes from shape arithmetic, Concat(Slice(Shape(x), 0, 2), spatial sizes):
                # the constant spatial part.
                p = g.producer(n.input[index])
                spatial = g.const(p.input[-1]) if p is not None and p.op_type == "Concat" \
                    else None
                if spatial is None:
                    continue
            elif values.size == 0:
                continue
            else:
                spatial = values[2:]
            axes = list(range(-len(spatial), 0))
            n.input[index] = g.add_constant(
                np.array(spatial, np.float32 if index == 2 else np.int64), "resize")
            set_attr(n, "axes", axes)
            g.log.append("Resize %s: %s %s for axes %s" % (n.name, ("scales", "sizes")[index - 2],
                                                          list(spatial), axes))
        mode = attr(n, "coordinate_transformation_mode", b"half_pixel")
        if opset >= 19 and mode in (b"half_pixel", b"pytorch_half_pixel"):
            set_attr(n, "coordinate_transformation_mode", "half_pixel_symmetric")
            g.log.append("Resize %s: half_pixel_symmetric" % n.name)


def gelus(g):
    for div in list(g.g.node):
        if div.op_type != "Div" or div not in g.g.node:
            continue
        root = scalar(g, div.input[1])
        if root is None or abs(root - 2 ** 0.5) > 1e-6:
            continue
        x = div.input[0]
        erf = g.sole_reader(div.output[0], "Erf")
        add = erf and g.sole_reader(erf.output[0], "Add")
        mul = add and g.sole_reader(add.output[0], "Mul")
        half = mul and g.sole_reader(mul.output[0], "Mul")
        if not half or x not in mul.input or scalar(g, [i for i in half.input
                                                         if i != mul.output[0]][0]) != 0.5:
            continue
        g.replace([div, erf, add, mul, half],
                  helper.make_node("Gelu", [x], [half.output[0]], name=div.name + "_gelu"))
        g.log.append("Gelu from %s" % div.name)


def group_norms(g):
    for norm in list(g.g.node):
        if norm.op_type != "InstanceNormalization" or norm not in g.g.node:
            continue
        ones, zeros = g.const(norm.input[1]), g.const(norm.input[2])
        if ones is None or zeros is None or norm.input[1] in g.consts and \
                any(t.name == norm.input[1] for t in g.g.initializer):
            continue
        if not (np.all(ones == 1) and np.all(zeros == 0)):
            continue
        to_groups = g.producer(norm.input[0])
        back = g.sole_reader(norm.output[0], "Reshape")
        mul = back and g.sole_reader(back.output[0], "Mul")
        add = mul and g.sole_reader(mul.output[0], "Add")
        if to_groups is None or to_groups.op_type != "Reshape" or not add:
            continue

        def weight_of(node, skip):
            other = [i for i in node.input if i != skip][0]
            p = g.producer(other)
            if p is not None and p.op_type == "Unsqueeze":
                other = p.input[0]
            return other if any(t.name == other for t in g.g.initializer) else None
        scale, bias = weight_of(mul, back.output[0]), weight_of(add, mul.output[0])
        if scale is None or bias is None:
            continue
        node = helper.make_node("GroupNormalization", [to_groups.input[0], scale, bias],
                                [add.output[0]], name=norm.name + "_group_norm",
                                num_groups=int(ones.size),
                                epsilon=attr(norm, "epsilon", 1e-5))
        g.replace([to_groups, norm, back, mul, add], node)
        g.log.append("GroupNormalization(num_groups=%d) from %s" % (ones.size, norm.name))


def rms_norms(g):
    for pow_ in list(g.g.node):
        if pow_.op_type != "Pow" or pow_ not in g.g.node or scalar(g, pow_.input[1]) != 2.0:
            continue
        x = pow_.input[0]
        mean = g.sole_reader(pow_.output[0], "ReduceMean")
        if not mean:
            continue
        axes = attr(mean, "axes") or (list(g.const(mean.input[1])) if len(mean.input) > 1
                                      else None)
        add = g.sole_reader(mean.output[0], "Add")
        sqrt = add and g.sole_reader(add.output[0], "Sqrt")
        if axes != [-1] or not sqrt:
            continue
        eps = scalar(g, [i for i in add.input if i != mean.output[0]][0])
        chain = [pow_, mean, add, sqrt]
        div = g.sole_reader(sqrt.output[0], "Div")
        if div is None:
            continue
        chain.append(div)
        if div.input[0] == x:
            normalized = div.output[0]
        elif scalar(g, div.input[0]) == 1.0:
            times = g.sole_reader(div.output[0], "Mul")
            if times is None or x not in times.input:
                continue
            chain.append(times)
            normalized = times.output[0]
        else:
            continue
        weigh = g.sole_reader(normalized, "Mul")
        weight = weigh and [i for i in weigh.input if i != normalized][0]
        if not weigh or not any(t.name == weight for t in g.g.initializer):
            continue
        chain.append(weigh)
        node = helper.make_node("RMSNormalization", [x, weight], [weigh.output[0]],
                                name=pow_.name + "_rms_norm", axis=-1, epsilon=eps)
        g.replace(chain, node)
        g.log.append("RMSNormalization(epsilon=%g) from %s" % (eps, pow_.name))


def attentions(g):
    for softmax in list(g.g.node):
        if softmax.op_type != "Softmax" or softmax not in g.g.node or \
                attr(softmax, "axis", -1) != -1:
            continue
        chain = [softmax]
        scores = softmax.input[0]
        where = g.producer(scores)
        hidden = None  # the constant mask: true where a key is hidden
        if where is not None and where.op_type == "Where":
            hidden, fill = g.const(where.input[0]), scalar(g, where.input[1])
            if hidden is None or fill is None or not np.isinf(fill) or fill > 0 or \
                    g.sole_reader(where.output[0], "Softmax") is not softmax:
                continue
            chain.insert(0, where)
            scores = where.input[2]
        scaling = g.producer(scores)
        if scaling is None or scaling.op_type not in ("Mul", "Div") or \
                len(g.readers(scaling.output[0])) != 1:
            continue
        factor = scalar(g, scaling.input[1])
        product = g.producer(scaling.input[0])
        if factor is None or product is None or product.op_type != "MatMul":
            continue
        scale = factor if scaling.op_type == "Mul" else 1.0 / factor
        transpose = g.producer(product.input[1])
        if transpose is None or transpose.op_type != "Transpose" or \
                list(attr(transpose, "perm", [])) != [0, 1, 3, 2] or \
                len(g.readers(product.output[0])) != 1:
            continue
        out = g.sole_reader(softmax.output[0], "MatMul")
        if out is None or out.input[0] != softmax.output[0]:
            continue
        chain = [product, scaling] + chain + [out]
        if len(g.readers(transpose.output[0])) == 1:
            chain.insert(0, transpose)
        inputs = [product.input[0], transpose.input[0], out.input[1]]
        attrs = dict(scale=float(scale))
        if hidden is not None:
            keep = ~hidden.astype(bool)
            if keep.ndim == 2 and keep.shape[0] == keep.shape[1] and \
                    np.array_equal(keep, np.tri(keep.shape[0], dtype=bool)):
                attrs["is_causal"] = 1
            else:
                inputs.append(g.add_constant(keep, "attn_mask"))
        g.replace(chain, helper.make_node("Attention", inputs, [out.output[0]],
                                          name=product.name + "_attention", **attrs))
        g.log.append("Attention(%s) from %s" % (", ".join(
            "%s=%g" % kv for kv in sorted(attrs.items())), product.name))


def swishes(g):
    for sig in list(g.g.node):
        if sig.op_type != "Sigmoid" or sig not in g.g.node:
            continue
        mul = g.sole_reader(sig.output[0], "Mul")
        if not mul or sig.input[0] not in mul.input:
            continue
        g.replace([sig, mul], helper.make_node("Swish", [sig.input[0]], [mul.output[0]],
                                               name=sig.name + "_swish"))
        g.log.append("Swish from %s" % sig.name)


def upgrade(model, opset):
    """Rewrite `model` (opset <= 17) in place into opset `opset` (18-28); the rewrites' log."""
    g = Graph(model)
    if opset >= 21:
        group_norms(g)
    if opset >= 23:
        rms_norms(g)
    if opset >= 20:
        gelus(g)
    if opset >= 23:
        attentions(g)
    if opset >= 24:
        swishes(g)
    reductions_take_axes_inputs(g)
    pads_name_their_axes(g)
    splits_by_count(g)
    resizes_name_their_axes(g, opset)
    g.prune()
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = opset
    model.ir_version = max(model.ir_version, IR_VERSIONS[opset])
    return g.log


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--opset", type=int, required=True, choices=sorted(IR_VERSIONS))
    a = p.parse_args()
    model = onnx.load(a.input)
    for line in upgrade(model, a.opset):
        print(line)
    onnx.save(model, a.output)


if __name__ == "__main__":
    sys.exit(main())
