#!/usr/bin/python3
"""A LLaMA-style language model's training step: memory and predicted time, with rotary
embeddings or without, multi-head or grouped-query, the causal attention fused or not.

  /usr/bin/python3 bench/llama_memory.py [--graphc build/bin/graphc] [--work DIR]
      [--layers 12] [--width 768] [--heads 12] [--kv-heads 12,4] [--hidden 2048] [--seq 1024]
      [--vocab 32000] [--batch 8] [--device h100] [--budget 80GB] [--max-batch]

The model is test/e2e/models.py's Llama (RMSNorm, rotary embeddings whose cos/sin tables the
forward pass computes from torch.arange, causal masked_fill attention, SwiGLU, bias-free
projections, a head over the vocabulary at every position), at GPT-2 small's width and depth
by default so that its rows compare with bench/causal_lm_memory.py's, exported by torch 1.13
in training mode with a dynamic batch axis. The "no rotary" rows are the same model with q and
k unrotated: the difference is what rotary embeddings cost in the plan. For the Adam step at
--batch it compiles to the plan (fused attention, and --no-fuse-attention) and prints the
arena, the activation bytes and the cost model's predicted step on --device; with --max-batch
also the largest batch within --budget (reuse only, then with every cure), computed by
compiling, never by running.

Prints one Markdown table; the numbers are plans and predictions, not measurements.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "e2e"))
from training_graphs import export_language_model, language_model_parser, plan_summary, run  # noqa: E402
import models  # noqa: E402


def export(args, kv_heads, rotary):
    name = "llama_%dx%d_kv%d_seq%d%s" % (args.layers, args.width, kv_heads, args.seq,
                                          "" if rotary else "_norope")
    path = os.path.join(args.work, name + ".onnx")
    if os.path.exists(path):
        return path
    torch.manual_seed(0)
    model = models.Llama(args.vocab, args.seq, width=args.width, heads=args.heads,
                         layers=args.layers, hidden=args.hidden, kv_heads=kv_heads).train()
    for attention in model.attn:
        attention.rotary = rotary
    export_language_model(model, path, args.seq)
    return path


def main():
    ap = language_model_parser(__doc__, "/tmp/graphc-llama", 32000)
    ap.add_argument("--kv-heads", default="12,4")
    ap.add_argument("--hidden", type=int, default=2048)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    print("| kv heads | rotary | attention | arena | activations | predicted step (%s) |%s" %
          (args.device, " largest batch in %s |" % args.budget if args.max_batch else ""))
    print("|---:|---|---|---:|---:|---:|%s" % ("---|" if args.max_batch else ""))
    for kv_heads in [int(k) for k in args.kv_heads.split(",")]:
        for rotary in (True, False):
            path = export(args, kv_heads, rotary)
            for fused in (True, False):
                flags = [args.graphc, path, "--batch=%d" % args.batch, "--optimizer=adam",
                         "--device=" + args.device] + ([] if fused else ["--no-fuse-attention"])
                rc, out, err, wall = run(flags + ["--compile-to=planned", "-o", os.devnull], 3600)
                row = "| %d | %s | %s | %s | %s | %s |" % (
                    (kv_heads, "yes" if rotary else "no",
                     "fused, causal" if fused else "unfused (--no-fuse-attention)")
                    + plan_summary(out + err, rc))
                if args.max_batch:
                    rc, out, err, wall = run(flags + ["--budget=" + args.budget, "--max-batch"],
                                             7200)
                    lines = [l.strip() for l in (out + err).splitlines() if "batch" in l.lower()]
                    row += " %s (%.0f s) |" % ("; ".join(lines[:4]) if lines else "exit %s" % rc,
                                               wall)
                print(row, flush=True)


if __name__ == "__main__":
    main()
