# Compares two training runs: the per-step loss lines of two outputs and the .npy weight files
# of two --save-weights directories, at a maximum relative error TOL (max|a-b| / max|b| per
# tensor, max|b| taken as at least FLOOR, default 1e-12: a tensor that stays near zero, such as
# a batch norm's bias whose gradient sums cancel, is then held to an absolute error of
# TOL * FLOOR). Prints one line per comparison that fails and a final PASS or FAIL.
# Usage: compare_runs.py TOL OUT_A OUT_B WEIGHTS_A WEIGHTS_B [FLOOR]
import os
import sys

import numpy as np

tol = float(sys.argv[1])
floor = float(sys.argv[6]) if len(sys.argv) > 6 else 1e-12
losses = [[float(line.split()[-1]) for line in open(p) if line.startswith("step ")]
          for p in sys.argv[2:4]]
ok = len(losses[0]) == len(losses[1]) and len(losses[0]) > 0
worst = 0.0
for a, b in zip(*losses):
    err = abs(a - b) / max(abs(b), 1e-12)
    worst = max(worst, err)
    if err > tol:
        print(f"FAIL: loss {a} vs {b} (relative error {err:.3g})")
        ok = False
names = sorted(os.listdir(sys.argv[5]))
if not names or sorted(os.listdir(sys.argv[4])) != names:
    print("FAIL: the weight directories hold different files")
    ok = False
for name in names:
    a = np.load(os.path.join(sys.argv[4], name))
    b = np.load(os.path.join(sys.argv[5], name))
    err = float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), floor))
    worst = max(worst, err)
    if err > tol:
        print(f"FAIL: {name} relative error {err:.3g}")
        ok = False
print(f"steps={len(losses[0])} tensors={len(names)} max_relative_error={worst:.3g}")
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
