# Sweeps graphc-fit-budget's budget from HIGH down to LOW in STEP-byte decrements and checks
# that the resulting peak (graph.fit_peak_after) never increases as the budget decreases.
# Usage: remat_sweep.py GRAPHC_OPT MODEL.mlir HIGH LOW STEP [SOLVER]
# (SOLVER: graphc-fit-budget's solver option, heuristic by default.)
import re
import subprocess
import sys

tool, model, high, low, step = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
solver = sys.argv[6] if len(sys.argv) > 6 else "heuristic"
peaks = []
for budget in range(high, low - 1, -step):
    out = subprocess.run([tool, model, "--graphc-build-train-step=loss=mse",
                          f"--graphc-fit-budget=budget={budget} solver={solver}"],
                         check=True, capture_output=True, text=True).stdout
    peaks.append((budget, int(re.search(r"graph.fit_peak_after = (\d+)", out).group(1))))
monotone = all(later <= earlier for (_, earlier), (_, later) in zip(peaks, peaks[1:]))
for budget, peak in peaks:
    print(f"budget {budget} peak {peak}")
print(f"budgets={len(peaks)} distinct_peaks={len(set(p for _, p in peaks))} "
      f"monotone={'yes' if monotone else 'NO'}")
sys.exit(0 if monotone else 1)
