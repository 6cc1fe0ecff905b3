"""How far Adam's first applied update moves the weights, after fp16 steps that were skipped.

first_adam_update.py BINARY DATA LABELS LR WORKDIR runs the training binary once to find the
leading skipped steps s (every step trains the same batch, so their losses repeat step 1's),
then saves the weights after s steps (still the initial ones) and after s + 1 (one applied
update), and prints the largest change in units of the learning rate. Adam's first update
moves every weight with a non-zero gradient by lr (bias-corrected m / sqrt(v) is the gradient's
sign) only when its step counter says 1, i.e. when skipped steps are not counted."""
import glob
import os
import re
import subprocess
import sys

import numpy as np

binary, data, labels, lr, work = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]


def run(steps, weights=None):
    cmd = [binary, "--data", data, "--labels", labels, "--steps", str(steps)]
    if weights:
        cmd += ["--save-weights", weights]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


losses = re.findall(r"^step \d+/\d+ loss (\S+)$", run(32), re.M)
same = next((i for i, l in enumerate(losses) if l != losses[0]), len(losses))
if same in (0, len(losses)):
    sys.exit("no skipped steps followed by an update within 32 steps: %s" % losses)
skipped = same - 1  # step `same` (1-based) is the first applied update
before, after = os.path.join(work, "before"), os.path.join(work, "after")
run(skipped, before)
run(skipped + 1, after)
moved = 0.0
for path in sorted(glob.glob(os.path.join(before, "*.npy"))):
    a = np.load(path).astype(np.float64)
    b = np.load(os.path.join(after, os.path.basename(path))).astype(np.float64)
    moved = max(moved, float(np.max(np.abs(b - a))))
print("skipped %d steps; the first update moves the weights by at most %.2f lr" % (skipped, moved / lr))
