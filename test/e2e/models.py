"""PyTorch definitions of the three end-to-end models of issue #2, and their ONNX export.

Models (all NCHW float32, fixed seeds so every export is bit-identical):
  mlp     : input 10 -> Linear(10,100) -> ReLU -> Linear(100,10) -> Softmax   (sparse categorical CE)
  cnn     : input 3x28x28 -> Conv2d(3,32,3) -> ReLU -> MaxPool2d(2) -> Flatten
            -> Linear(5408,10) -> Softmax                                     (sparse categorical CE)
  cnn_bce : the same CNN with a Linear(5408,1) -> Sigmoid head                (binary CE)
  resmlp  : input 10 -> Linear(10,32) -> ReLU -> h + ReLU(Linear(32,32)(h))
            -> Linear(32,10) -> Softmax: a residual connection            (sparse categorical CE)

The exported ONNX graph keeps the final Softmax/Sigmoid (graphc folds it into the loss).
The PyTorch reference training works on the logits instead (``model.head = False``):
F.cross_entropy / F.binary_cross_entropy_with_logits, which is what graphc's folding computes.

Each model's ONNX initializer names are its PyTorch state_dict keys (export_params=True,
do_constant_folding=False); ``initializer_map`` checks that and falls back to matching values.
"""

import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
OPSET = 13

# One seed per model, so the initial weights of each model do not depend on what else was built.
SEEDS = {"mlp": 1, "cnn": 2, "cnn_bce": 3, "resmlp": 4}

# Which loss graphc is asked to use for each model.
LOSSES = {
    "mlp": "sparse_categorical_crossentropy",
    "cnn": "sparse_categorical_crossentropy",
    "cnn_bce": "binary_crossentropy",
    "resmlp": "sparse_categorical_crossentropy",
}


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 100)
        self.fc2 = nn.Linear(100, 10)
        self.head = True  # apply the Softmax (export); False: return logits (reference training)

    def forward(self, x):
        x = self.fc2(F.relu(self.fc1(x)))
        return torch.softmax(x, dim=1) if self.head else x


class ResMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 32)
        self.block = nn.Linear(32, 32)
        self.fc2 = nn.Linear(32, 10)
        self.head = True

    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = h + F.relu(self.block(h))  # the residual Add: h has two readers
        x = self.fc2(h)
        return torch.softmax(x, dim=1) if self.head else x


class CNN(nn.Module):
    def __init__(self, outputs=10):
        super().__init__()
        self.conv = nn.Conv2d(3, 32, 3)
        self.fc = nn.Linear(32 * 13 * 13, outputs)  # 5408 -> outputs
        self.outputs = outputs
        self.head = True

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        x = self.fc(torch.flatten(x, 1))
        if not self.head:
            return x
        return torch.sigmoid(x) if self.outputs == 1 else torch.softmax(x, dim=1)


def input_shape(name, batch=BATCH):
    return (batch, 10) if name in ("mlp", "resmlp") else (batch, 3, 28, 28)


def build(name):
    """The model `name` with its fixed initial weights (float32)."""
    torch.manual_seed(SEEDS[name])
    if name == "mlp":
        return MLP()
    if name == "resmlp":
        return ResMLP()
    if name == "cnn":
        return CNN(10)
    if name == "cnn_bce":
        return CNN(1)
    raise ValueError("unknown model %r" % name)


def export(name, path, batch=BATCH):
    """Export model `name` (with its Softmax/Sigmoid head) to ONNX at `path`; returns the model."""
    model = build(name)
    model.eval()
    model.head = True
    dummy = torch.zeros(input_shape(name, batch))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(model, dummy, path, export_params=True, do_constant_folding=False,
                          opset_version=OPSET, input_names=["input"], output_names=["output"])
    return model


def onnx_initializers(path):
    """{initializer name: numpy array} of an ONNX file, in graph order."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path)
    return {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}


def initializer_map(path, model):
    """{ONNX initializer name: state_dict key} for the exported `model`.

    The exporter normally keeps the state_dict key as the initializer name; this verifies it (same
    name, shape and bit-identical values).  Should the exporter rename an initializer (e.g.
    'onnx::Gemm_12'), it is mapped to the unique state_dict entry with bit-identical values.
    Raises if some parameter cannot be mapped one-to-one.
    """
    inits = onnx_initializers(path)
    sd = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    mapping = {}
    for name, arr in inits.items():
        if name in sd and sd[name].shape == arr.shape and np.array_equal(sd[name], arr):
            mapping[name] = name
            continue
        cands = [k for k, v in sd.items() if v.shape == arr.shape and np.array_equal(v, arr)]
        cands = [k for k in cands if k not in mapping.values()]
        if len(cands) != 1:
            raise RuntimeError("ONNX initializer %r (shape %s) matches %d state_dict entries"
                               % (name, arr.shape, len(cands)))
        mapping[name] = cands[0]
    missing = set(sd) - set(mapping.values())
    if missing:
        raise RuntimeError("state_dict entries not exported as initializers: %s" % sorted(missing))
    return mapping


if __name__ == "__main__":
    import sys
    import tempfile
    import onnx
    out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
    for n in ("mlp", "cnn", "cnn_bce", "resmlp"):
        p = os.path.join(out, n + ".onnx")
        mdl = export(n, p)
        onnx.checker.check_model(onnx.load(p))
        mp = initializer_map(p, mdl)
        print(n, p, [(k, tuple(v.shape)) for k, v in onnx_initializers(p).items()],
              "identity" if all(k == v for k, v in mp.items()) else mp)
