"""Data parallelism (issue #8) on the CPU target over MPI: a --data-parallel binary run on W ranks
must train like the single-process binary on the same global batch.

For each world size it compiles the model twice with graphc (plain, and --data-parallel
--world-size=W), runs the plain binary and `mpirun -np W` of the parallel one on the same data
(--shuffle, --validation-split, --seed), and compares:
  - the per-step losses and the validation losses rank 0 prints (relative error <= --tol), and
    that only rank 0 printed them (one line per step);
  - every weight saved by --save-weights: max|a - b| / max|ref| <= --tol.
The tolerance covers fp32 reduction order only: a rank sums over its rows, then the ranks' means
are averaged, where the single process sums over all rows at once (docs/data-parallel.md).
Prints one PASS line per world size, or FAIL lines and exits 1.

--model mask_cls (test/e2e/models.py, needs torch) has two data inputs, input_ids and
attention_mask: the ranks must read the same rows of both files.
"""
import argparse
import os
import re
import subprocess
import sys

import numpy as np

SHAPES = {"mlp": (10,), "cnn": (3, 28, 28)}
TWO_INPUT_MODELS = ("mask_cls",)


def run(cmd, **kw):
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        sys.exit("FAIL: %s exited %d\n%s%s" % (" ".join(cmd), done.returncode, done.stdout,
                                               done.stderr))
    return done.stdout


def losses(text):
    text = text.replace("\r\n", "\n")  # mpirun relays each rank through a pseudo-terminal
    steps = [float(m.group(1)) for m in re.finditer(r"^step \d+/\d+ loss (\S+)$", text, re.M)]
    vals = [float(m.group(1)) for m in re.finditer(r"val_loss (\S+)", text)]
    return steps, vals


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(a)), 1e-30))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=sorted(SHAPES) + list(TWO_INPUT_MODELS), required=True)
    ap.add_argument("--optimizer", default="sgd")
    ap.add_argument("--batch", type=int, required=True, help="global batch")
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--bucket-size", help="graphc --bucket-size (default: graphc's own)")
    ap.add_argument("--graphc-flag", action="append", default=[],
                    help="one more graphc flag for both compiles, e.g. --micro-batches=2")
    ap.add_argument("--parallel-flag", action="append", default=[],
                    help="one more graphc flag for the data-parallel compile only, e.g. --zero=1")
    ap.add_argument("--sample-weights", action="store_true",
                    help="graphc --sample-weights and the binaries' --sample-weights W.npy (W in "
                    "[0, 2), shuffled and held out with the samples)")
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--graphc", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--src", required=True, help="graphc source root (examples/)")
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    model = os.path.join(a.src, "examples", a.model + ".onnx")

    # Enough samples for two epochs of three steps after the held-out quarter.
    rng = np.random.default_rng(7)
    n = a.batch * 4
    if a.model in TWO_INPUT_MODELS:
        sys.path.insert(0, os.path.join(a.src, "test", "e2e"))
        import models
        import train_vs_torch
        model = os.path.join(a.workdir, a.model + ".onnx")
        models.export(a.model, model)
        xs, y = train_vs_torch.make_data(a.model, n)
    else:
        xs = (rng.standard_normal((n,) + SHAPES[a.model]).astype(np.float32),)
        y = rng.integers(0, 10, n).astype(np.int64)
    train = []
    for i, x in enumerate(xs):
        train += ["--data", os.path.join(a.workdir, "x%s.npy" % (i or ""))]
        np.save(train[-1], x)
    labels = os.path.join(a.workdir, "y.npy")
    np.save(labels, y)
    train += ["--labels", labels, "--steps", str(a.steps), "--shuffle",
              "--seed", "5", "--validation-split", "0.25"]
    common = [model, "--optimizer=" + a.optimizer, "--batch=%d" % a.batch, "--quiet"] + a.graphc_flag
    if a.sample_weights:
        weights = os.path.join(a.workdir, "w.npy")
        np.save(weights, (2 * rng.random(n)).astype(np.float32))
        train += ["--sample-weights", weights]
        common.append("--sample-weights")

    single = os.path.join(a.workdir, "single")
    run([a.graphc] + common + ["-o", single])
    ref_out = run([single] + train + ["--save-weights", single + ".w"])
    ref_steps, ref_vals = losses(ref_out)
    if len(ref_steps) != a.steps or not ref_vals:
        sys.exit("FAIL: the single-process run printed %d step losses and %d validation losses"
                 % (len(ref_steps), len(ref_vals)))

    failed = False
    for w in [int(r) for r in a.ranks.split(",")]:
        binary = os.path.join(a.workdir, "dp%d" % w)
        buckets = ["--bucket-size=" + a.bucket_size] if a.bucket_size else []
        run([a.graphc] + common + ["--data-parallel", "--world-size=%d" % w, "-o", binary] +
            buckets + a.parallel_flag)
        out = run([a.mpirun, "-np", str(w), binary] + train + ["--save-weights", binary + ".w"],
                  timeout=600)
        steps, vals = losses(out)
        problems = []
        if len(steps) != a.steps:
            problems.append("rank 0 alone should print %d step lines, got %d" % (a.steps, len(steps)))
        elif rel(ref_steps, steps) > a.tol:
            problems.append("step losses differ by %.3g: %s vs %s" % (rel(ref_steps, steps),
                                                                       steps, ref_steps))
        if len(vals) != len(ref_vals) or rel(ref_vals, vals) > a.tol:
            problems.append("validation losses %s vs %s" % (vals, ref_vals))
        worst = 0.0
        names = sorted(os.listdir(single + ".w"))
        if sorted(os.listdir(binary + ".w")) != names:
            problems.append("saved weights %s vs %s" % (sorted(os.listdir(binary + ".w")), names))
        else:
            for name in names:
                worst = max(worst, rel(np.load(os.path.join(single + ".w", name)),
                                       np.load(os.path.join(binary + ".w", name))))
            if worst > a.tol:
                problems.append("weights differ by %.3g (max|a-b|/max|ref|)" % worst)
        if problems:
            failed = True
            for p in problems:
                print("FAIL: %s %s %d ranks: %s" % (a.model, a.optimizer, w, p))
        else:
            print("PASS: %s %s %d ranks x %d rows: %d step losses, %d validation losses and %d "
                  "weights match one process (weights within %.2g)"
                  % (a.model, a.optimizer, w, a.batch // w, len(steps), len(vals), len(names),
                     worst))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
