# Writes one small MLP twice: probs.onnx ends with a Softmax (graphc's crossentropy reads it
# as probabilities and folds the Softmax into the loss), logits.onnx without it (PyTorch's
# CrossEntropyLoss convention); plus x.npy / y.npy. make_logits_onnx.py OUTDIR
import os
import sys
import warnings

import numpy as np
import torch
from torch import nn

warnings.filterwarnings("ignore")
out = sys.argv[1]
torch.manual_seed(0)
mlp = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
x = torch.zeros(8, 6)
torch.onnx.export(nn.Sequential(mlp, nn.Softmax(dim=1)), x, os.path.join(out, "probs.onnx"),
                  input_names=["input"], output_names=["probs"], opset_version=13)
# (nn.Identity in place of the Softmax keeps the parameters' names: "0.0.weight" in both.)
torch.onnx.export(nn.Sequential(mlp, nn.Identity()), x, os.path.join(out, "logits.onnx"),
                  input_names=["input"], output_names=["logits"], opset_version=13)
rng = np.random.RandomState(0)
np.save(os.path.join(out, "x.npy"), rng.standard_normal((32, 6)).astype(np.float32))
np.save(os.path.join(out, "y.npy"), rng.randint(0, 4, size=(32,)).astype(np.int64))
