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
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "e2e"))
from training_graphs import export_language_model, language_model_parser, plan_summary, run  # noqa: E402


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
    ap = language_model_parser(__doc__, "/tmp/graphc-causal-lm", 50257)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    name = "causal_lm_%dx%d_seq%d" % (args.layers, args.width, args.seq)
    path = os.path.join(args.work, name + ".onnx")
    if not os.path.exists(path):
        torch.manual_seed(0)
        model = CausalLM(args.vocab, args.width, args.heads, args.layers, args.seq).train()
        export_language_model(model, path, args.seq)

    print("| %s | attention | arena | activations | predicted step (%s) |%s" %
          ("batch", args.device, " largest batch in %s |" % args.budget if args.max_batch else ""))
    print("|---|---|---:|---:|---:|%s" % ("---|" if args.max_batch else ""))
    for fused in (True, False):
        flags = [args.graphc, path, "--batch=%d" % args.batch, "--optimizer=adam",
                 "--device=" + args.device] + ([] if fused else ["--no-fuse-attention"])
        rc, out, err, wall = run(flags + ["--compile-to=planned", "-o", os.devnull], 3600)
        row = "| %d | %s | %s | %s | %s |" % (
            (args.batch, "fused, causal" if fused else "unfused (--no-fuse-attention)")
            + plan_summary(out + err, rc))
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
