#!/usr/bin/python3
"""Rematerialization solve time against graph size (issue #5's goal: under 10 s for graphs of
10k ops).

Transformer encoders of growing depth (post-norm nn.TransformerEncoderLayer, d_model 64,
4 heads, FFN 256, dropout 0.1, sequence 64, batch 8, mean over the sequence, Linear to 10
classes), exported in training mode as bench/training_graphs.py exports its models. For each
depth L:

  1. graphc M.onnx --compile-to=planned --optimizer=adam --no-micro-batching: the unbudgeted
     plan; P its arena, "fixed" the parameters, optimizer state and inputs, A = P - fixed;
  2. the same with --budget = fixed + 0.5 A (half the activation memory), --remat=heuristic,
     and with --remat=exact --remat-time-limit=T (default 60).

Reports the training step's op count (the fit report's remat line), graphc-fit-budget's wall
time (the same line: the whole pass, candidates, measurements and the solve), the extra FLOPs,
and the whole compile's wall time. A budget a solver cannot meet is "no fit". Usage:

  /usr/bin/python3 bench/remat_scaling.py [--graphc build/bin/graphc] [--layers 6,24,48,106]
      [--modes heuristic,exact] [--time-limit 60] [--work /tmp/graphc-remat-scaling]
"""
import json
import os
import re
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from training_graphs import bench_parser, export, run  # noqa: E402

FIXED_KINDS = {"parameter", "optimizer_state", "input"}
REMAT = re.compile(r"remat +([\w+]+) solver chose \(([0-9.]+) s in all, ([0-9]+) ops\)"
                   r"(?:; exact solve ([\w-]+) in ([0-9.]+) s)?")
CURE = re.compile(r"rematerialized (?:(\d+) ops?)?(?: and )?(?:(\d+) segments? \(\d+ ops\))?: peak .* -> .*, \+([0-9.]+)% FLOPs")


class DeepEncoder(nn.Module):
    def __init__(self, layers):
        super().__init__()
        layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=256, dropout=0.1,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return torch.softmax(self.fc(self.encoder(x).mean(dim=1)), dim=1)


def compile_plan(opts, onnx_path, extra, plan_json):
    args = [opts.graphc, onnx_path, "--compile-to=planned", "--optimizer=adam", "--batch=8",
            "--loss=sparse_categorical_crossentropy", "--no-micro-batching", "-o", "/dev/null",
            "--plan-out=" + plan_json] + extra
    rc, out, err, secs = run(args, opts.timeout)
    res = {"rc": rc, "seconds": secs}
    if rc != 0:
        return res
    with open(plan_json) as f:
        plan = json.load(f)
    res.update(arena=plan["arena_bytes"], steps=len(plan["steps"]),
               fixed=sum(b["bytes"] for b in plan["buffers"] if b.get("kind") in FIXED_KINDS))
    m = REMAT.search(out)
    if m:
        res.update(fit_seconds=float(m.group(2)), ops=int(m.group(3)),
                   exact_status=m.group(4), exact_seconds=float(m.group(5) or 0))
    c = CURE.search(out)
    res["extra"] = float(c.group(3)) if c else 0.0
    return res


def main():
    ap = bench_parser(__doc__, "/tmp/graphc-remat-scaling")
    ap.add_argument("--layers", default="6,24,48,106")
    ap.add_argument("--modes", default="heuristic,exact")
    ap.add_argument("--time-limit", type=float, default=60)
    ap.add_argument("--timeout", type=float, default=3600)
    opts = ap.parse_args()
    os.makedirs(opts.work, exist_ok=True)
    rows = []
    for layers in [int(x) for x in opts.layers.split(",")]:
        onnx_path = os.path.join(opts.work, "encoder%d.onnx" % layers)
        err = export("encoder%d" % layers, lambda: DeepEncoder(layers), (64, 64), 8, False,
                     onnx_path)
        if err:
            print("L=%d: export failed: %s" % (layers, err))
            continue
        plan_json = os.path.join(opts.work, "plan.json")
        base = compile_plan(opts, onnx_path, [], plan_json)
        if base["rc"] != 0:
            print("L=%d: the unbudgeted compile failed" % layers)
            continue
        budget = int(base["fixed"] + 0.5 * (base["arena"] - base["fixed"]))
        for mode in opts.modes.split(","):
            extra = ["--budget=%d" % budget, "--remat=" + mode]
            if mode == "exact":
                extra.append("--remat-time-limit=%g" % opts.time_limit)
            r = compile_plan(opts, onnx_path, extra, plan_json)
            row = (layers, base["steps"], mode,
                   "%d" % r["ops"] if "ops" in r else "-",
                   "%.2f" % r["fit_seconds"] if "fit_seconds" in r else "-",
                   ("%s in %.1f s" % (r["exact_status"], r["exact_seconds"])
                    if r.get("exact_status") else "-"),
                   "%.2f" % r["extra"] if r["rc"] == 0 else "no fit",
                   "%.0f" % r["seconds"])
            rows.append(row)
            print(row, flush=True)
    print("\n| layers | unbudgeted step ops | solver | budgeted step ops | fit-budget s | exact solve "
          "| +FLOPs % | compile s |")
    print("|---:|---:|---|---:|---:|---|---:|---:|")
    for r in rows:
        print("| %d | %d | %s | %s | %s | %s | %s | %s |" % r)


if __name__ == "__main__":
    main()
