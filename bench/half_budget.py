#!/usr/bin/python3
"""Half the no-remat peak: does each benchmark model compile and train there, and does it
compute what the unbudgeted build computes? (issue #5's first "done when" item)

  /usr/bin/python3 bench/half_budget.py [--graphc build/bin/graphc] [--models resnet50,...]
      [--batch-scale 1] [--steps 2] [--work /tmp/graphc-half]

For each model of bench/training_graphs.py (exported the same way, training mode, with a
dynamic batch axis so that any batch imports), at its benchmark batch divided by
--batch-scale (default 1: the benchmark batch itself; smaller batches make the fixed
parameters and Adam state a larger share of the peak, so half of it may be below them):

  1. compiles the Adam step without a budget; its arena is the no-remat peak P;
  2. compiles it again with --budget=P/2 (every cure allowed except 16-bit storage: the
     comparison is fp32 against fp32; --offload=auto, so that the optimizer state may move to
     host memory when nothing else fits), and prints the cures the fit report names;
  3. trains both --steps steps on the same fixed random batch data and compares the printed
     losses: the largest relative difference, against the issue's 1e-5.

A model whose half budget cannot be met prints graphc's exit-3 line (the floor, and what would
fit) instead. Prints one Markdown table.
"""
import os
import re
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from training_graphs import MODELS, OPSET, bench_parser, run  # noqa: E402

STEP = re.compile(r"^step \d+/\d+ loss (\S+)$", re.M)
ARENA = re.compile(r"arena +\S+ \S+ \((\d+) bytes")
CURES = re.compile(r"^  cures +(.*)$", re.M)


def export_dynamic(build, shape, batch, integer, path):
    torch.manual_seed(0)
    model = build()
    model.train()
    dummy = (torch.zeros((batch,) + shape, dtype=torch.int64) if integer
             else torch.zeros((batch,) + shape))
    with torch.no_grad():
        torch.onnx.export(model, dummy, path, export_params=True, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.TRAINING, opset_version=OPSET,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})


def main():
    ap = bench_parser(__doc__, "/tmp/graphc-half")
    ap.add_argument("--models", default="resnet50,vgg16,unet,transformer")
    ap.add_argument("--batch-scale", type=int, default=1)
    ap.add_argument("--steps", type=int, default=2)
    opts = ap.parse_args()
    os.makedirs(opts.work, exist_ok=True)
    wanted = opts.models.split(",")
    rows = []
    for name, desc, build, shape, batch, loss, integer, _ in MODELS:
        if name not in wanted:
            continue
        batch = max(batch // opts.batch_scale, 1)
        onnx_path = os.path.join(opts.work, name + ".onnx")
        export_dynamic(build, shape, batch, integer, onnx_path)
        common = [opts.graphc, onnx_path, "--optimizer=adam", "--lr=0.001", "--loss=" + loss,
                  "--batch=%d" % batch]
        rc, out, err, _ = run(common + ["-o", os.path.join(opts.work, name + ".full")], 3600)
        if rc != 0:
            rows.append((desc, batch, "-", "-", "full build failed: " + (err or out).strip()[-200:], "-"))
            continue
        peak = int(ARENA.search(out).group(1))
        half = peak // 2
        rc, out, err, _ = run(common + ["--budget=%d" % half, "--precision=fp32", "--offload=auto",
                                        "-o", os.path.join(opts.work, name + ".half")], 3600)
        if rc != 0:
            line = (err or out).strip().splitlines()[-1]
            # "...: the training step needs X but --budget is Y; by kind: ...; that plan
            # rematerializes ... Fits at --budget=N; no recomputation fits below F ...; <what
            # would fit>": keep the need, the floor and what would fit.
            need = re.search(r"the training step needs (.*?) but", line)
            tail = line[line.find("Fits at --budget"):] if "Fits at --budget" in line else line
            rows.append((desc, batch, "%.1f" % (peak / 2**20), "%.1f" % (half / 2**20),
                         "no fit: needs %s. %s" % (need.group(1) if need else "?", tail), "-"))
            print(rows[-1], flush=True)
            continue
        cures = "; ".join(c.strip() for c in CURES.findall(out))
        arena = int(ARENA.search(out).group(1))
        rng = np.random.default_rng(7)
        n = opts.steps * batch
        x = rng.standard_normal((n,) + shape, dtype=np.float32)
        if loss == "binary_crossentropy":
            y = rng.integers(0, 2, (n,) + forward_shape(build, shape)).astype(np.float32)
        else:
            y = rng.integers(0, forward_shape(build, shape)[0], n)
        xp, yp = os.path.join(opts.work, name + ".x.npy"), os.path.join(opts.work, name + ".y.npy")
        np.save(xp, x)
        np.save(yp, y)
        losses = {}
        for tag in ("full", "half"):
            rc, out, err, _ = run([os.path.join(opts.work, name + "." + tag), "--data", xp,
                                   "--labels", yp, "--steps", str(opts.steps)], 3600)
            losses[tag] = [float(v) for v in STEP.findall(out)]
        a, b = np.array(losses["full"]), np.array(losses["half"])
        rel = float(np.max(np.abs(a - b) / np.maximum(np.abs(a), 1e-12))) if len(a) == len(b) == opts.steps else float("nan")
        rows.append((desc, batch, "%.1f" % (peak / 2**20), "%.1f (arena %.1f)" % (half / 2**20, arena / 2**20),
                     cures, "%.1e" % rel))
        print(rows[-1], losses, flush=True)
    print("\n| model | batch | no-remat peak MiB | half budget MiB | cures applied | max rel. loss diff, %d steps |" % opts.steps)
    print("|---|---:|---:|---|---|---:|")
    for r in rows:
        print("| %s | %d | %s | %s | %s | %s |" % r)


def forward_shape(build, shape):
    """The model's output shape per sample (labels of a per-pixel loss; classes = [0])."""
    torch.manual_seed(0)
    model = build()
    model.eval()
    with torch.no_grad():
        return tuple(model(torch.zeros((1,) + shape)).shape[1:])


if __name__ == "__main__":
    main()
