"""fp16 loss scaling under data parallelism (issue #8) on the CPU target over MPI: every rank must
skip the same steps. The global batch's first 16 rows (all on rank 0) have targets of 4000, so
rank 0's scaled gradients overflow fp16 at the first loss scales while rank 1's do not; a rank
that decided alone would apply an average holding rank 0's inf and turn its weights to NaN.

Compiles the graph-dialect MLP (32 rows per rank) with --precision=fp16 --data-parallel for W
ranks, plainly and with --zero=1, runs both under `mpirun -np W` and checks:
  - the plain run's losses are finite, its first steps were skipped and it then trained
    (skipped_steps.py's wording);
  - ZeRO-1 skips the same steps and trains like plain data parallelism: every step loss equal,
    every saved weight within --tol (max|a - b| / max|a|; the shards' updates compute the same
    element updates, so only the collectives' reduction order could differ).
Prints one PASS line per world size, or FAIL lines and exits 1.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

import numpy as np


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("FAIL: %s exited %d\n%s%s" % (" ".join(cmd), done.returncode, done.stdout,
                                               done.stderr))
    return done.stdout.replace("\r\n", "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="2")
    ap.add_argument("--optimizer", default="adam")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--graphc", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--model", required=True, help="the graph-dialect MLP (deep-mlp.mlir)")
    ap.add_argument("--skipped-steps", required=True, help="test/graphc/Inputs/skipped_steps.py")
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    failed = False
    for ranks in [int(r) for r in a.ranks.split(",")]:
        rows = 32 * ranks
        rng = np.random.default_rng(3)
        data, labels = (os.path.join(a.workdir, "%s%d.npy" % (n, ranks)) for n in ("x", "y"))
        np.save(data, rng.standard_normal((rows, 64), dtype=np.float32))
        y = np.ones((rows, 64), np.float32)
        y[:16] = 4000.0  # rank 0's rows only
        np.save(labels, y)
        outputs, weights = {}, {}
        for zero in (0, 1):
            binary = os.path.join(a.workdir, "fp16-%d-zero%d" % (ranks, zero))
            run([a.graphc, a.model, "-o", binary, "--loss=mse", "--optimizer=" + a.optimizer,
                 "--lr=1e-3", "--precision=fp16", "--data-parallel", "--world-size=%d" % ranks,
                 "--zero=%d" % zero, "--bucket-size=20KiB", "--quiet"])
            out = run(a.mpirun.split() + ["-np", str(ranks), binary, "--data", data, "--labels",
                                          labels, "--steps", str(a.steps), "--save-weights",
                                          binary + ".w"])
            with open(binary + ".out", "w") as f:
                f.write(out)
            outputs[zero] = re.findall(r"^step \d+/\d+ loss (\S+)$", out, re.M)
            weights[zero] = sorted(glob.glob(binary + ".w/*.npy"))
        plain = outputs[0]
        if len(plain) != a.steps or not all(np.isfinite(float(l)) for l in plain):
            print("FAIL: %d ranks: plain losses %s" % (ranks, plain))
            failed = True
            continue
        print(run([sys.executable, a.skipped_steps,
                   os.path.join(a.workdir, "fp16-%d-zero0.out" % ranks)]).strip())
        if outputs[1] != plain:
            print("FAIL: %d ranks: ZeRO-1 losses %s, plain %s" % (ranks, outputs[1], plain))
            failed = True
            continue
        worst = 0.0
        for ref, got in zip(weights[0], weights[1]):
            r, g = np.load(ref), np.load(got)
            worst = max(worst, float(np.max(np.abs(r - g)) / max(np.max(np.abs(r)), 1e-30)))
        if len(weights[0]) != 4 or len(weights[1]) != 4 or worst > a.tol:
            print("FAIL: %d ranks: %d/%d weights, max relative difference %.3g"
                  % (ranks, len(weights[0]), len(weights[1]), worst))
            failed = True
            continue
        print("PASS: fp16 %s %d ranks: ZeRO-1 equals plain (weights within %g)"
              % (a.optimizer, ranks, a.tol))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
