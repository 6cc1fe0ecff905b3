#!/usr/bin/python3
"""A GPT-style language model's training step: memory with the causal attention fused or not.

  /usr/bin/python3 bench/causal_lm_memory.py [--graphc build/bin/graphc] [--work DIR]
      [--layers 12] [--width 768] [--heads 12] [--seq 1024] [--vocab 50257] [--batch 8]
      [--device h100] [--budget 80GB] [--max-batch]

The model is test/e2e/models.py's CausalClassifier with per_token (token embeddings, a learned
position table, pre-norm nn.TransformerEncoderLayers under generate_square_subsequent_mask, a
Linear head over every position), at GPT-2 small's shape by default, exported by torch 1.13
in training mode with a dynamic batch axis. For the Adam step at --batch, it compiles to the
plan twice, with the causal attention fused (graph.attention {causal}: a block of scores at a
time, recomputed in the backward pass) and with --no-fuse-attention (the [batch x heads, seq,
seq] scores and probabilities kept from the forward to the backward pass), and prints the
arena, the activation bytes and the cost model's predicted step on --device. With --max-batch,
also the largest batch within --budget of each (reuse only, then with every cure), which the
CPU machine computes by compiling, never by running.

Prints one Markdown table; the numbers are plans and predictions, not measurements.
"""
import os
import re
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "e2e"))
from training_graphs import bench_parser, run  # noqa: E402

ARENA = re.compile(r"arena +\S+ \S+ \((\d+) bytes")
ACTIVATION = re.compile(r"^ +activation +(\S+ \S+)$", re.M)
PREDICTED = re.compile(r"predicted ([0-9.]+) ms/step")
LARGEST = re.compile(r"^.*(largest|batch).*$", re.M)


class CausalLM(nn.Module):
    """Token embeddings + learned positions -> pre-norm encoder layers under a causal mask ->
    Linear(width, vocab) at every position -> softmax over the vocabulary."""

    def __init__(self, vocab, width, heads, layers, seq):
        super().__init__()
        self.emb = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(0.02 * torch.randn(1, seq, width))
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.1,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq))
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens):
        h = self.enc(self.emb(tokens) + self.pos, mask=self.mask)
        return torch.softmax(self.head(h), dim=-1)


def main():
    ap = bench_parser(__doc__, "/tmp/graphc-causal-lm")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--width", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--device", default="h100")
    ap.add_argument("--budget", default="80GB")
    ap.add_argument("--max-batch", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    name = "causal_lm_%dx%d_seq%d" % (args.layers, args.width, args.seq)
    path = os.path.join(args.work, name + ".onnx")
    if not os.path.exists(path):
        torch.manual_seed(0)
        model = CausalLM(args.vocab, args.width, args.heads, args.layers, args.seq).train()
        start = time.monotonic()
        with torch.no_grad():
            torch.onnx.export(model, torch.zeros((2, args.seq), dtype=torch.int64), path,
                              export_params=True, do_constant_folding=False,
                              training=torch.onnx.TrainingMode.TRAINING, opset_version=13,
                              input_names=["input"], output_names=["output"],
                              dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
        print("exported %s in %.0f s" % (path, time.monotonic() - start), file=sys.stderr)

    print("| %s | attention | arena | activations | predicted step (%s) |%s" %
          ("batch", args.device, " largest batch in %s |" % args.budget if args.max_batch else ""))
    print("|---|---|---:|---:|---:|%s" % ("---|" if args.max_batch else ""))
    for fused in (True, False):
        flags = [args.graphc, path, "--batch=%d" % args.batch, "--optimizer=adam",
                 "--device=" + args.device] + ([] if fused else ["--no-fuse-attention"])
        rc, out, err, wall = run(flags + ["--compile-to=planned", "-o", os.devnull], 3600)
        text = out + err
        arena = ARENA.search(text)
        activation = ACTIVATION.search(text)
        predicted = PREDICTED.search(text)
        row = "| %d | %s | %s | %s | %s |" % (
            args.batch, "fused, causal" if fused else "unfused (--no-fuse-attention)",
            "%.2f GiB" % (int(arena.group(1)) / 2**30) if arena else "exit %s" % rc,
            activation.group(1) if activation else "", predicted.group(1) + " ms" if predicted
            else "")
        if args.max_batch:
            rc, out, err, wall = run(
                [args.graphc, path, "--batch=%d" % args.batch, "--optimizer=adam",
                 "--device=" + args.device,
                 "--budget=" + args.budget, "--max-batch"] +
                ([] if fused else ["--no-fuse-attention"]), 7200)
            lines = [l.strip() for l in (out + err).splitlines() if "batch" in l.lower()]
            row += " %s (%.0f s) |" % ("; ".join(lines[:4]) if lines else "exit %s" % rc, wall)
        print(row, flush=True)


if __name__ == "__main__":
    main()
