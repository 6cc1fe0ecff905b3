# Writes a small CNN with an auxiliary head, as torchvision's GoogLeNet has in training mode:
#   two.onnx   outputs "main" and "aux" (the auxiliary head reads the first block's features)
#   one.onnx   the same weights with the "main" output alone
# plus x.npy / y.npy (16 samples). make_two_output_onnx.py OUTDIR
import os
import sys
import warnings

import numpy as np
import torch
from torch import nn

warnings.filterwarnings("ignore")
out = sys.argv[1]
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self, aux):
        super().__init__()
        self.aux = aux
        self.block1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.block2 = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Linear(16 * 4 * 4, 10)
        self.aux_head = nn.Sequential(nn.Conv2d(8, 4, 1), nn.Flatten(), nn.Linear(4 * 8 * 8, 10))

    def forward(self, x):
        f = self.block1(x)
        main = torch.softmax(self.head(self.block2(f).flatten(1)), dim=1)
        return (main, torch.softmax(self.aux_head(f), dim=1)) if self.aux else main


two = Net(aux=True)
one = Net(aux=False)
one.load_state_dict(two.state_dict())
x = torch.zeros(4, 3, 16, 16)
torch.onnx.export(two, x, os.path.join(out, "two.onnx"), input_names=["input"],
                  output_names=["main", "aux"], opset_version=13)
torch.onnx.export(one, x, os.path.join(out, "one.onnx"), input_names=["input"],
                  output_names=["main"], opset_version=13)
rng = np.random.RandomState(0)
np.save(os.path.join(out, "x.npy"), rng.standard_normal((16, 3, 16, 16)).astype(np.float32))
np.save(os.path.join(out, "y.npy"), rng.randint(0, 10, size=(16,)).astype(np.int64))
