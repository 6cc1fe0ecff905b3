#!/usr/bin/python3
"""CPU training step time of token language models: graphc's CPU binaries against PyTorch eager.

  /usr/bin/python3 bench/lm_step_time.py [--graphc build/bin/graphc] [--work DIR]
      [--layers 2] [--width 256] [--heads 4] [--seq 128] [--vocab 2000] [--batch 8]
      [--steps 8] [--warmup 2] [--rounds 2] [--json OUT]

Two models at the same shape: "gpt", causal_lm_memory.py's CausalLM (token embeddings, learned
positions, pre-norm nn.TransformerEncoderLayers with GELU and dropout 0.1 under a causal mask,
a Linear head at every position), and "llama", test/e2e/models.py's Llama (RMSNorm, rotary
embeddings, SwiGLU with a 8/3 x width hidden layer, no biases, no dropout). Each is exported
as the memory benchmarks export it, compiled with `graphc M.onnx --target=cpu --device=cpu
--batch=B --optimizer=adam --lr=0.001 --loss=sparse_categorical_crossentropy`, and run on
random token ids with random next-token labels ([N, seq] int64 each), its log's `step_ms`
(the step call alone) taken after --warmup steps. PyTorch runs the same model's Adam step in
eager mode on the logits (F.cross_entropy over every position, what graphc's per-token loss
computes) with torch.set_num_threads(os.cpu_count()), timed with time.perf_counter around one
step. The contenders alternate --rounds times; medians are over all their rounds' steps.

Prints one Markdown table: graphc ms, PyTorch ms, their ratio (below 1: graphc is faster), and
the cost model's cpu-profile prediction against graphc's measurement.
"""
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "test", "e2e"))
from causal_lm_memory import CausalLM  # noqa: E402
from cpu_step_time import PREDICTED, print_against_torch, rounds_against_torch  # noqa: E402
from training_graphs import cpu_timing_parser, export_language_model, run  # noqa: E402
import models  # noqa: E402


def build(name, args):
    """The model `name` with fixed initial weights, and a function from it and token ids to its
    logits (the head without its softmax)."""
    torch.manual_seed(0)
    if name == "gpt":
        model = CausalLM(args.vocab, args.width, args.heads, args.layers, args.seq)
        return model, lambda m, t: m.head(m.enc(m.emb(t) + m.pos, mask=m.mask))
    model = models.Llama(args.vocab, args.seq, width=args.width, heads=args.heads,
                         layers=args.layers, hidden=(8 * args.width) // 3)

    def logits(m, t):
        m.head = False
        return m(t)
    return model, logits


def write_data(work, args, batches):
    """x.npy: token ids, y.npy: next-token labels, both [batches * batch, seq] int64."""
    rng = np.random.default_rng(0)
    shape = (batches * args.batch, args.seq)
    x, y = os.path.join(work, "x.npy"), os.path.join(work, "y.npy")
    np.save(x, rng.integers(0, args.vocab, size=shape, dtype=np.int64))
    np.save(y, rng.integers(0, args.vocab, size=shape, dtype=np.int64))
    return x, y


def time_torch(name, args, x, y, steps, warmup):
    torch.set_num_threads(os.cpu_count())
    model, logits = build(name, args)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    xs, ys = torch.from_numpy(np.load(x)), torch.from_numpy(np.load(y))
    times, value = [], None
    for i in range(steps):
        rows = slice((i % (len(xs) // args.batch)) * args.batch,
                     (i % (len(xs) // args.batch) + 1) * args.batch)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        out = logits(model, xs[rows])
        value = F.cross_entropy(out.reshape(-1, args.vocab), ys[rows].reshape(-1))
        value.backward()
        opt.step()
        times.append(1e3 * (time.perf_counter() - t0))
    return times[warmup:], float(value)


def main():
    ap = cpu_timing_parser(__doc__, "/tmp/graphc-lm-step-time", seq=128)
    ap.add_argument("--models", default="gpt,llama")
    ap.add_argument("--json", default="", help="also write the results to this file")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    x, y = write_data(args.work, args, batches=4)
    rows = []
    for name in args.models.split(","):
        tag = "%s_%dx%d_seq%d_v%d" % (name, args.layers, args.width, args.seq, args.vocab)
        onnx = os.path.join(args.work, tag + ".onnx")
        if not os.path.exists(onnx):
            model, _ = build(name, args)
            export_language_model(model.train(), onnx, args.seq)
        binary = os.path.join(args.work, tag + ".bin")
        cmd = [args.graphc, onnx, "--target=cpu", "--device=cpu", "--batch=%d" % args.batch,
               "--optimizer=adam", "--lr=0.001", "--loss=sparse_categorical_crossentropy",
               "-o", binary]
        status, stdout, stderr, secs = run(cmd, 3600)
        if status != 0:
            print("%s: graphc exited %s: %s" % (name, status, (stdout + stderr)[-600:]))
            continue
        predicted = PREDICTED.search(stdout + stderr)
        row = {"model": name, "tag": tag, "batch": args.batch, "compile_s": round(secs, 1),
               "predicted_ms": float(predicted.group(1)) if predicted else None}
        row.update(rounds_against_torch(
            binary, x, y, args.work, args.steps, args.warmup, args.rounds,
            lambda steps, warmup: time_torch(name, args, x, y, steps, warmup)))
        print(row, flush=True)
        rows.append(row)
    print()
    print_against_torch(rows, "model (batch x seq)",
                        lambda row: "%s (%d x %d)" % (row["tag"], row["batch"], args.seq))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpus": os.cpu_count(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
