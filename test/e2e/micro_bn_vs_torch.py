"""Micro-batching with batch normalization, against PyTorch.

With k micro-batches, each micro-batch is normalized with its own batch statistics and the
running statistics are updated once per micro-batch (k momentum steps per training step), as
when PyTorch runs the forward pass on each micro-batch in turn and accumulates gradients. That
is what this checks: a Conv-BN-ReLU-Linear model trained 3 SGD steps by graphc with
--micro-batches=2 against PyTorch doing exactly that, comparing the losses, the weights and the
running statistics at max relative error 1e-4 (max|a-b| / max|ref| per tensor). It also shows
that the result differs from the full-batch step (BN couples the samples of a batch), so the
difference is visible rather than assumed.

Usage: micro_bn_vs_torch.py --workdir DIR --graphc PATH
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, MICRO, STEPS, LR = 8, 2, 3, 0.05


class ConvBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 6 * 6, 5)
        self.head = True  # the export ends in a softmax (graphc folds it into the loss)

    def forward(self, x):
        logits = self.fc(torch.flatten(F.relu(self.bn(self.conv(x))), 1))
        return torch.softmax(logits, dim=1) if self.head else logits


def rel(a, b):
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-12))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--graphc", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    torch.set_num_threads(1)
    torch.manual_seed(7)
    model = ConvBN()
    start = {k: v.clone() for k, v in model.state_dict().items()}
    onnx_path = os.path.join(args.workdir, "convbn.onnx")
    model.train()
    torch.onnx.export(model, torch.zeros(BATCH, 3, 8, 8), onnx_path, export_params=True,
                      do_constant_folding=False, opset_version=13,
                      training=torch.onnx.TrainingMode.TRAINING,
                      input_names=["input"], output_names=["output"])
    model.load_state_dict(start)  # the export's trace ran the model once
    model.head = False
    # The exported initial running statistics are what graphc starts from.
    import onnx
    from onnx import numpy_helper
    exported = {t.name: numpy_helper.to_array(t) for t in onnx.load(onnx_path).graph.initializer}
    with torch.no_grad():
        for name in ("bn.running_mean", "bn.running_var"):
            model.state_dict()[name].copy_(torch.from_numpy(exported[name].copy()))

    rng = np.random.default_rng(11)
    x = rng.standard_normal((BATCH * STEPS, 3, 8, 8), dtype=np.float32)
    y = rng.integers(0, 5, BATCH * STEPS).astype(np.int64)
    np.save(os.path.join(args.workdir, "x.npy"), x)
    np.save(os.path.join(args.workdir, "y.npy"), y)

    def graphc_run(name, extra):
        binary = os.path.join(args.workdir, name)
        subprocess.run([args.graphc, onnx_path, "-o", binary, "--optimizer=sgd", f"--lr={LR}",
                        "--quiet"] + extra, check=True)
        out = subprocess.run([binary, "--data", os.path.join(args.workdir, "x.npy"), "--labels",
                              os.path.join(args.workdir, "y.npy"), "--steps", str(STEPS),
                              "--save-weights", binary + ".w"],
                             check=True, capture_output=True, text=True).stdout
        losses = [float(l.split()[-1]) for l in out.splitlines() if l.startswith("step ")]
        weights = {f[:-4]: np.load(os.path.join(binary + ".w", f))
                   for f in os.listdir(binary + ".w")}
        return losses, weights

    micro_losses, micro_weights = graphc_run("micro", [f"--micro-batches={MICRO}"])
    full_losses, _ = graphc_run("full", [])

    # PyTorch: each micro-batch forward in train mode (its own batch statistics, one running
    # statistics update each), gradients accumulated over the mean of the micro-batch losses.
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    ref_losses = []
    for s in range(STEPS):
        opt.zero_grad()
        total = 0.0
        for m in range(MICRO):
            lo = s * BATCH + m * (BATCH // MICRO)
            xb = torch.from_numpy(x[lo:lo + BATCH // MICRO])
            yb = torch.from_numpy(y[lo:lo + BATCH // MICRO])
            loss = F.cross_entropy(model(xb), yb) / MICRO
            loss.backward()
            total += float(loss)
        opt.step()
        ref_losses.append(total)

    ok = True
    worst = 0.0
    for i, (a, b) in enumerate(zip(micro_losses, ref_losses)):
        err = abs(a - b) / max(abs(b), 1e-12)
        worst = max(worst, err)
        if err > 1e-4:
            print(f"FAIL: step {i + 1} loss {a} vs torch {b} ({err:.3g})")
            ok = False
    for name, ref in model.state_dict().items():
        if name.endswith("num_batches_tracked"):
            continue
        if name not in micro_weights:
            print(f"FAIL: graphc saved no {name}")
            ok = False
            continue
        err = rel(micro_weights[name], ref.numpy())
        worst = max(worst, err)
        if err > 1e-4:
            print(f"FAIL: {name} relative error {err:.3g}")
            ok = False
    differs = abs(full_losses[0] - micro_losses[0]) > 1e-6 * abs(full_losses[0])
    print(f"micro-batched vs torch: max relative error {worst:.3g}; "
          f"full-batch step-1 loss {full_losses[0]:.6f} vs micro-batched {micro_losses[0]:.6f} "
          f"({'differs' if differs else 'SAME'})")
    ok = ok and differs and len(micro_losses) == STEPS
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
