#!/usr/bin/python3
"""A padded-batch encoder with an attention mask input, fused and unfused: plan and CPU step time.

  /usr/bin/python3 bench/masked_attention.py [--graphc build/bin/graphc] [--work DIR]
      [--layers 2] [--width 256] [--heads 4] [--seq 256] [--vocab 2000] [--batch 8]
      [--steps 8] [--warmup 2] [--rounds 2] [--plan-seqs 512,1024] [--mask bias|fill|query]
      [--json OUT]

The model is a BERT-style encoder fed as Hugging Face models are, forward(input_ids,
attention_mask): token and learned position embeddings, --layers pre-norm blocks (multi-head
attention whose scores get BertModel's extended mask (1 - mask[:, None, None, :]) * finfo.min,
a GELU feed-forward of 4 x width), the mean over the real tokens and a 10-class head. Exported
at --batch without a dynamic axis (inputs int64 [batch, seq] each), it is compiled twice with
`graphc M.onnx --target=cpu --device=cpu --optimizer=adam --lr=0.001`: as is, where
graphc-fuse-attention turns each masked attention into one graph.attention with a bias, and
with --no-fuse-attention, where the [batch, heads, seq, seq] scores, the broadcast mask and the
probabilities are tensors of the plan. Each binary trains on the same random ids and masks (each
sequence 1/4 to all of seq real tokens) with random labels; its log's `step_ms` after --warmup
steps is the time, the contenders alternating --rounds times. PyTorch eager's Adam step of the
same model is timed alongside (torch.set_num_threads(os.cpu_count())).

--mask chooses how the scores are masked: `bias` (the default) adds BertModel's extended mask
above, one row per sequence; `fill` is research code's scores.masked_fill(attention_mask[:, None,
None, :] == 0, -inf), which graphc fuses as a bias that replaces the masked scores (bias_fills);
`query` builds the mask as transformers' AttentionMaskConverter._expand_mask does, expanded to
[batch, 1, seq, seq] (a bias with a row per query, seq x seq floats per sequence).

--plan-seqs compiles both forms at longer sequences only to --compile-to=planned: the arena
graphc plans for each, nothing run.

Prints Markdown tables: arena and activation bytes of both plans, and step times with their
ratios to the unfused graphc binary of the same run.
"""
import json
import math
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
from cpu_step_time import summary, time_on_data  # noqa: E402
from training_graphs import cpu_timing_parser, run  # noqa: E402

ARENA = re.compile(r"arena +[0-9.]+ \S+ \((\d+) bytes")
ACTIVATION = re.compile(r"^ +activation +([0-9.]+ \S+)", re.M)


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, h, extended):
        B, T, C = h.shape
        q, k, v = self.qkv(self.norm1(h)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5
        if extended.dtype == torch.bool:  # --mask fill: the positions to hide
            scores = scores.masked_fill(extended, float("-inf"))
        else:
            scores = scores + extended
        y = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        h = h + self.proj(y)
        return h + self.down(F.gelu(self.up(self.norm2(h))))


class MaskedEncoder(nn.Module):
    def __init__(self, vocab, seq, width, heads, layers, mask="bias"):
        super().__init__()
        self.mask = mask
        self.emb = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(0.02 * torch.randn(1, seq, width))
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.fc = nn.Linear(width, 10)

    def forward(self, input_ids, attention_mask):
        h = self.emb(input_ids) + self.pos
        B, T = attention_mask.shape
        if self.mask == "fill":
            extended = attention_mask[:, None, None, :] == 0
        elif self.mask == "query":
            expanded = attention_mask[:, None, None, :].expand(B, 1, T, T).to(h.dtype)
            inverted = 1.0 - expanded
            extended = inverted.masked_fill(inverted.to(torch.bool), torch.finfo(h.dtype).min)
        else:
            extended = ((1.0 - attention_mask[:, None, None, :].to(h.dtype)) *
                        torch.finfo(h.dtype).min)
        for block in self.blocks:
            h = block(h, extended)
        keep = attention_mask.unsqueeze(-1).to(h.dtype)
        return self.fc((h * keep).sum(1) / keep.sum(1))


def build(args, seq):
    torch.manual_seed(0)
    return MaskedEncoder(args.vocab, seq, args.width, args.heads, args.layers, args.mask)


def export(args, seq, path):
    model = build(args, seq).train()
    ids = torch.zeros(args.batch, seq, dtype=torch.int64)
    with torch.no_grad():
        torch.onnx.export(model, (ids, torch.ones_like(ids)), path, opset_version=14,
                          input_names=["input_ids", "attention_mask"], output_names=["logits"],
                          do_constant_folding=False)


def compile_plan(args, onnx, out, fused, extra=()):
    cmd = [args.graphc, onnx, "--target=cpu", "--device=cpu", "--batch=%d" % args.batch,
           "--optimizer=adam", "--lr=0.001", "--from-logits",
           "--loss=sparse_categorical_crossentropy", "-o", out] + list(extra)
    if not fused:
        cmd.append("--no-fuse-attention")
    status, stdout, stderr, secs = run(cmd, 3600)
    if status != 0:
        raise RuntimeError("%s exited %s: %s" % (" ".join(cmd), status, (stdout + stderr)[-600:]))
    text = stdout + stderr
    arena, activation = ARENA.search(text), ACTIVATION.search(text)
    return {"arena_bytes": int(arena.group(1)) if arena else None,
            "activation": activation.group(1) if activation else None, "compile_s": round(secs, 1)}


def write_data(work, args, batches):
    rng = np.random.default_rng(0)
    n = batches * args.batch
    lengths = rng.integers(max(args.seq // 4, 1), args.seq + 1, size=(n, 1))
    mask = (np.arange(args.seq)[None, :] < lengths).astype(np.int64)
    ids = rng.integers(1, args.vocab, size=(n, args.seq)).astype(np.int64) * mask
    paths = [os.path.join(work, f) for f in ("ids.npy", "mask.npy", "y.npy")]
    np.save(paths[0], ids)
    np.save(paths[1], mask)
    np.save(paths[2], rng.integers(0, 10, size=(n,)).astype(np.int64))
    return paths[:2], paths[2]


def time_torch(args, xs, y, steps, warmup):
    torch.set_num_threads(os.cpu_count())
    model = build(args, args.seq).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ids, mask = (torch.from_numpy(np.load(p)) for p in xs)
    labels = torch.from_numpy(np.load(y))
    times = []
    for i in range(steps):
        rows = slice((i % (len(ids) // args.batch)) * args.batch,
                     (i % (len(ids) // args.batch) + 1) * args.batch)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(ids[rows], mask[rows]), labels[rows])
        loss.backward()
        opt.step()
        times.append(1e3 * (time.perf_counter() - t0))
    return times[warmup:]


def main():
    ap = cpu_timing_parser(__doc__, "/tmp/graphc-masked-attention", seq=256)
    ap.add_argument("--plan-seqs", default="512,1024")
    ap.add_argument("--mask", choices=("bias", "fill", "query"), default="bias")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    result = {"cpus": os.cpu_count(), "args": vars(args), "plans": [], "times": {}}

    print("| seq | batch | fused arena | unfused arena | fused / unfused | fused activations | "
          "unfused activations |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    binaries = {}
    for seq in [args.seq] + [int(s) for s in args.plan_seqs.split(",") if s]:
        onnx = os.path.join(args.work, "encoder_seq%d.onnx" % seq)
        export(args, seq, onnx)
        plans = {}
        for fused in (True, False):
            name = "fused" if fused else "unfused"
            out = os.path.join(args.work, "%s_seq%d.bin" % (name, seq))
            extra = [] if seq == args.seq else ["--compile-to=planned"]
            plans[name] = compile_plan(args, onnx, out, fused, extra)
            if seq == args.seq:
                binaries[name] = out
        f, u = plans["fused"], plans["unfused"]
        print("| %d | %d | %.1f MiB | %.1f MiB | %.2f | %s | %s |"
              % (seq, args.batch, f["arena_bytes"] / 2**20, u["arena_bytes"] / 2**20,
                 f["arena_bytes"] / u["arena_bytes"], f["activation"], u["activation"]),
              flush=True)
        result["plans"].append(dict(seq=seq, **{k: v for k, v in plans.items()}))

    xs, y = write_data(args.work, args, batches=4)
    times = {"fused": [], "unfused": [], "torch": []}
    for _ in range(args.rounds):
        for name in ("fused", "unfused"):
            times[name] += time_on_data(binaries[name], xs, y, args.work, args.steps,
                                        args.warmup)["times"]
        times["torch"] += time_torch(args, xs, y, args.steps, args.warmup)
    base = summary(times["unfused"])["median_ms"]
    print("\n| seq %d, batch %d, Adam | median ms | / unfused graphc |" % (args.seq, args.batch))
    print("|---|---:|---:|")
    for name, label in (("fused", "graphc, fused attention (%s)" % args.mask),
                        ("unfused", "graphc --no-fuse-attention"),
                        ("torch", "PyTorch eager")):
        s = summary(times[name])
        result["times"][name] = s
        print("| %s | %.1f | %.2f |" % (label, s["median_ms"], s["median_ms"] / base))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
