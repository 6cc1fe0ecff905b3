# Sweeps the budget from HIGH down to LOW in STEP-byte decrements and checks that the resulting
# peak never increases as the budget decreases, and that the instant bound on any
# recomputation's extra FLOPs (graph.fit_instant_bound) never exceeds what the solver applied,
# nor says that nothing fits where the solver's plan fits. Counts the budgets whose arena was
# padded up to the floor of a kept local-search or seed trial (padded=).
# Usage: remat_sweep.py TOOL MODEL HIGH LOW STEP [SOLVER [GRAPHC_ARG...]]
# TOOL graphc-opt: MODEL is a forward function in the graph dialect, run through
#   graphc-build-train-step (mse) and graphc-fit-budget; the peak is graph.fit_peak_after,
#   and a budget it does not fit ends the sweep.
# TOOL graphc: MODEL is anything graphc imports, compiled to a plan (Adam, no micro-batching);
#   the peak is the planned arena; a budget graphc cannot meet (exit 3) ends the sweep.
# (SOLVER: the fit's solver, heuristic by default; GRAPHC_ARGs: more graphc options, such as
# --loss=binary_crossentropy.)
import os
import re
import subprocess
import sys

tool, model, high, low, step = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
solver = sys.argv[6] if len(sys.argv) > 6 else "heuristic"
extra = sys.argv[7:]
driver = os.path.basename(tool) == "graphc"
peaks = []
bounded = 0  # budgets where the instant bound is above zero
above = []   # budgets where the bound exceeds the applied extra FLOPs (a wrong bound)
improved = 0  # budgets where the local search after the remat search changed the result
seeded = 0    # budgets where an exact seed, completed by the heuristic, was kept
padded = 0    # budgets whose arena keeps unused bytes, padded up to the floor of a kept trial
flops = []    # graphc: the extra FLOPs % at each budget, to count where they fall as it shrinks
for budget in range(high, low - 1, -step):
    if driver:
        run = subprocess.run([tool, model, "--compile-to=planned", "-o", "/dev/null",
                              "--optimizer=adam", "--no-micro-batching", f"--budget={budget}",
                              f"--remat={solver}"] + extra, capture_output=True, text=True)
        if run.returncode == 3:
            break
        if run.returncode != 0:
            sys.exit(f"graphc failed at --budget={budget}: {run.stderr.strip()}")
        peak = int(re.search(r"arena +\S+ \S+ \((\d+) bytes", run.stdout).group(1))
        applied = re.search(r"rematerialized .*, \+([0-9.]+)% FLOPs", run.stdout)
        flops.append(float(applied.group(1)) if applied else 0.0)
        improved += "local search" in run.stdout
        seeded += "exact seed" in run.stdout
        padded += "monotone     " in run.stdout
        bound = re.search(r"adds >= \+([0-9.]+)% FLOPs .*the applied \+([0-9.]+)%", run.stdout)
        if bound:
            bounded += float(bound.group(1)) > 0
            if float(bound.group(1)) > float(bound.group(2)):
                above.append(budget)
    else:
        out = subprocess.run([tool, model, "--graphc-build-train-step=loss=mse",
                              f"--graphc-fit-budget=budget={budget} solver={solver}"],
                             check=True, capture_output=True, text=True).stdout
        peak = int(re.search(r"graph.fit_peak_after = (\d+)", out).group(1))
        if peak > budget:  # nothing fits (graphc would exit 3), nor at any smaller budget
            break
        improved += "graph.fit_local_search" in out
        seeded += "graph.fit_exact_seed_level" in out
        padded += "graph.fit_arena_floor" in out
        bound = re.search(r"graph.fit_instant_bound = ([-0-9.eE+]+)", out)
        extra = re.search(r"graph.fit_extra_flops = ([-0-9.eE+]+)", out)
        status = re.search(r'graph.fit_instant_bound_status = "(\w+)"', out)
        if status and status.group(1) == "infeasible":
            if peak <= budget:  # a plan that fits where the bound says none can
                above.append(budget)
        elif bound and float(bound.group(1)) > 0:
            bounded += 1
            if float(bound.group(1)) > float(extra.group(1)) * (1 + 1e-9):
                above.append(budget)
    peaks.append((budget, peak))
monotone = all(later <= earlier for (_, earlier), (_, later) in zip(peaks, peaks[1:]))
# Where the extra FLOPs fall although the budget shrank (the peak is what the fit keeps
# monotone; the FLOPs are the heuristic's and may not be).
flops_falls = sum(later < earlier for earlier, later in zip(flops, flops[1:]))
for budget, peak in peaks:
    print(f"budget {budget} peak {peak}")
print(f"budgets={len(peaks)} distinct_peaks={len(set(p for _, p in peaks))} "
      f"local_search={improved} seeded={seeded} monotone={'yes' if monotone else 'NO'} bounded={bounded} "
      f"bound_above_applied={above if above else 'none'} padded={padded}"
      + (f" flops_falls={flops_falls}" if driver else ""))
sys.exit(0 if monotone and not above else 1)
