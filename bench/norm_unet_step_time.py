#!/usr/bin/python3
"""CPU training step of a diffusion-style U-Net (GroupNorm, upsampling): graphc against PyTorch.

  /usr/bin/python3 bench/norm_unet_step_time.py [--graphc build/bin/graphc] [--work DIR]
      [--image 64] [--width 32] [--batch 8] [--upsample nearest,bilinear] [--steps 8]
      [--warmup 2] [--rounds 2] [--json OUT]

The model (GroupNormUNet below) is the block structure of diffusion and segmentation U-Nets at
two levels: residual blocks of GroupNorm(8) -> SiLU -> 3x3 Conv (twice, plus the skip), a
stride-2 convolution down, F.interpolate x2 up (--upsample: nearest or bilinear with
align_corners=False), the skip concatenated, an InstanceNorm2d(affine) before the 1x1 head,
per-pixel binary crossentropy. graphc imports GroupNorm and InstanceNorm as layer norms of
channel groups with their affine maps as depthwise 1x1 convolutions, and the upsampling as a
depthwise transposed convolution (importers/common/ImageOps). Each variant is exported in
training mode and compiled with `graphc M.onnx --target=cpu --device=cpu --batch=B
--optimizer=adam --lr=0.001 --loss=binary_crossentropy`; the binary's log gives `step_ms`
after --warmup steps. PyTorch runs the same Adam step in eager mode (binary crossentropy on the
logits) with torch.set_num_threads(os.cpu_count()), timed with time.perf_counter around one
step. The contenders alternate --rounds times; medians are over all their rounds' steps.

Prints one Markdown table: graphc ms, PyTorch ms, their ratio (below 1: graphc is faster), the
planned arena, and the cost model's cpu-profile prediction against graphc's measurement.
"""
import json
import os
import re
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cpu_step_time import PREDICTED, print_against_torch, rounds_against_torch  # noqa: E402
from training_graphs import bench_parser, run  # noqa: E402

ARENA = re.compile(r"arena +([0-9.]+ [KMG]i?B)")


class ResBlock(nn.Module):
    """GroupNorm -> SiLU -> Conv, twice, plus a 1x1 skip when the width changes."""

    def __init__(self, cin, cout):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(8, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.n2, self.c2 = nn.GroupNorm(8, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        h = self.c1(F.silu(self.n1(x)))
        return self.skip(x) + self.c2(F.silu(self.n2(h)))


class GroupNormUNet(nn.Module):
    def __init__(self, width, mode):
        super().__init__()
        self.mode = mode
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.enc = ResBlock(width, width)
        self.down = nn.Conv2d(width, 2 * width, 3, stride=2, padding=1)
        self.mid = ResBlock(2 * width, 2 * width)
        self.dec = ResBlock(3 * width, width)
        self.norm = nn.InstanceNorm2d(width, affine=True)
        self.out = nn.Conv2d(width, 1, 1)
        self.head = True

    def forward(self, x):
        skip = self.enc(self.stem(x))
        h = self.mid(self.down(skip))
        h = F.interpolate(h, scale_factor=2, mode=self.mode,
                          **({"align_corners": False} if self.mode == "bilinear" else {}))
        h = self.out(F.silu(self.norm(self.dec(torch.cat([h, skip], 1)))))
        return torch.sigmoid(h) if self.head else h


def build(args, mode):
    torch.manual_seed(0)
    return GroupNormUNet(args.width, mode)


def time_torch(args, mode, x, y, steps, warmup):
    torch.set_num_threads(os.cpu_count())
    model = build(args, mode)
    model.train()
    model.head = False
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    xs, ys = torch.from_numpy(np.load(x)), torch.from_numpy(np.load(y))
    times, value = [], None
    batches = len(xs) // args.batch
    for i in range(steps):
        rows = slice((i % batches) * args.batch, (i % batches + 1) * args.batch)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        value = F.binary_cross_entropy_with_logits(model(xs[rows]), ys[rows])
        value.backward()
        opt.step()
        times.append(1e3 * (time.perf_counter() - t0))
    return times[warmup:], float(value)


def main():
    ap = bench_parser(__doc__, "/tmp/graphc-norm-unet-step-time")
    ap.add_argument("--image", type=int, default=64)
    ap.add_argument("--width", type=int, default=32)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--upsample", default="nearest,bilinear")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", default="", help="also write the results to this file")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rng = np.random.default_rng(0)
    x, y = os.path.join(args.work, "x.npy"), os.path.join(args.work, "y.npy")
    n = 4 * args.batch
    np.save(x, rng.standard_normal((n, 3, args.image, args.image)).astype(np.float32))
    np.save(y, (rng.random((n, 1, args.image, args.image)) < 0.5).astype(np.float32))
    rows = []
    for mode in args.upsample.split(","):
        tag = "norm_unet_%s_w%d_%d" % (mode, args.width, args.image)
        onnx = os.path.join(args.work, tag + ".onnx")
        model = build(args, mode)
        model.train()
        with torch.no_grad():
            torch.onnx.export(model, torch.zeros(args.batch, 3, args.image, args.image), onnx,
                              training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=False, opset_version=13)
        binary = os.path.join(args.work, tag + ".bin")
        cmd = [args.graphc, onnx, "--target=cpu", "--device=cpu", "--batch=%d" % args.batch,
               "--optimizer=adam", "--lr=0.001", "--loss=binary_crossentropy", "-o", binary]
        status, stdout, stderr, secs = run(cmd, 3600)
        if status != 0:
            print("%s: graphc exited %s: %s" % (tag, status, (stdout + stderr)[-600:]))
            continue
        predicted = PREDICTED.search(stdout + stderr)
        arena = ARENA.search(stdout + stderr)
        row = {"model": tag, "batch": args.batch, "compile_s": round(secs, 1),
               "arena": arena.group(1) if arena else None,
               "predicted_ms": float(predicted.group(1)) if predicted else None}
        row.update(rounds_against_torch(
            binary, x, y, args.work, args.steps, args.warmup, args.rounds,
            lambda steps, warmup: time_torch(args, mode, x, y, steps, warmup)))
        print(row, flush=True)
        rows.append(row)
    print()
    print_against_torch(rows, "model (batch)", lambda row: "%s (%d)" % (row["model"], row["batch"]),
                        [("graphc arena", lambda row: row["arena"] or "-")])
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpus": os.cpu_count(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
