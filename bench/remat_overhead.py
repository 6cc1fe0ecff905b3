#!/usr/bin/python3
"""Rematerialization overhead against the budget (issue #5): graphc's heuristic, graphc's exact
solver (CBC) and Chen et al.'s sqrt(n) checkpointing, on torchvision models.

Each model is exported to ONNX exactly as bench/training_graphs.py does (training mode, fixed
seed, opset 13). Then:

  1. graphc M.onnx --compile-to=planned --optimizer=adam --batch=B --no-micro-batching
         -o /dev/null --plan-out=M.json            the unbudgeted plan: its arena is the
                                                   no-remat peak P; "fixed" is the bytes of
                                                   parameters, optimizer state and inputs
                                                   (live the whole step), A = P - fixed the
                                                   activation memory.
  2. for each fraction f (default 0.9 0.75 0.5 0.33 0.25): budget = fixed + f * A, compiled with
     --remat=heuristic, with --remat=heuristic plus --baseline-args (default --no-remat-seeds:
     the heuristic without its exact seeds; the baseline column, same binary, same run) and
     with --remat=exact --remat-time-limit=T
     (default 60 s). The fit
     report gives the planned arena, the extra FLOPs (cost model, % of the step), the exact
     solve's status, time, lower bound and gap, and Chen's sqrt(n) figure priced with the same
     cost model (FitBudget.cpp recordChen; Chen's is a single point, the same for every budget,
     and it is not planned, so whether it would fit is not checked), and the instant lower
     bound on the extra FLOPs of any recomputation that fits the budget (fit/BoundaryBound.h).

A budget that a solver cannot meet is reported as "no fit" (graphc exits 3). Prints one Markdown
table per model and writes --work/remat_results.json. Usage:

  /usr/bin/python3 bench/remat_overhead.py [--graphc build/bin/graphc] [--work DIR]
      [--baseline-graphc OTHER --baseline-args= --baseline-name=NAME]
      [--models resnet50,vgg16,unet,transformer] [--fractions 0.9,0.75,0.5,0.33,0.25] [--time-limit 60]
"""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from training_graphs import MODELS, bench_parser, export, run  # noqa: E402

FIXED_KINDS = {"parameter", "optimizer_state", "input"}
CURE = re.compile(r"rematerialized (?:(\d+) ops?)?(?: and )?(?:(\d+) segments? \(\d+ ops\))?: peak .* -> .*, \+([0-9.]+)% FLOPs")
REMAT = re.compile(r"remat +([\w+]+) solver chose(?: \([0-9.]+ s in all, [0-9]+ ops\))?(?:; exact solve ([\w-]+) in ([0-9.]+) s)?"
                   r"(?:, lower bound \+([0-9.]+)% FLOPs, remat optimality gap ([0-9.]+)%)?"
                   r"; Chen sqrt\(n\) checkpointing: \+([0-9.]+)% FLOPs")


INSTANT = re.compile(r"remat bound  any recomputation that fits this budget adds >= \+([0-9.]+)% FLOPs "
                     r"\(instant bound at .*?, ([\w-]+) in")


def compile_one(opts, onnx_path, batch, loss, extra, plan_json, graphc=None):
    args = [graphc or opts.graphc, onnx_path, "--compile-to=planned", "--optimizer=adam", "--batch=%d" % batch,
            "--loss=" + loss,
            "--no-micro-batching", "-o", "/dev/null", "--plan-out=" + plan_json] + extra
    rc, stdout, stderr, secs = run(args, opts.timeout)
    res = {"rc": rc, "seconds": secs, "args": args}
    if rc != 0:
        res["fits"] = False
        if "no recomputation can fit this budget" in stderr:  # the instant bound's proof
            res["instant"], res["instant_status"] = float("inf"), "infeasible"
        return res
    with open(plan_json) as f:
        plan = json.load(f)
    res["fits"] = True
    res["arena"] = plan["arena_bytes"]
    res["fixed"] = sum(b["bytes"] for b in plan["buffers"]
                       if b.get("kind") in FIXED_KINDS)
    m = CURE.search(stdout)
    res["remat_ops"], res["remat_segments"], res["extra"] = (
        (int(m.group(1) or 0), int(m.group(2) or 0), float(m.group(3))) if m else (0, 0, 0.0))
    m = REMAT.search(stdout)
    if m:
        res["solver"] = m.group(1)
        res["status"] = m.group(2)
        res["solve_s"] = float(m.group(3)) if m.group(3) else None
        res["bound"] = float(m.group(4)) if m.group(4) else None
        res["gap"] = float(m.group(5)) if m.group(5) else None
        res["chen"] = float(m.group(6))
    m = INSTANT.search(stdout)
    if m:
        res["instant"] = float(m.group(1))
        res["instant_status"] = m.group(2)
    return res


def cell_heuristic(r):
    return "%.2f" % r["extra"] if r["fits"] else "no fit"


def cell_exact(r, limit):
    status = r.get("status")
    if not r["fits"]:
        return "no fit (%s)" % (status or "rc %s" % r["rc"])
    if status is None:
        return "%.2f (no remat)" % r["extra"]
    timeout = " timeout" if status in ("feasible", "no-solution") and r["solve_s"] >= limit else ""
    gap = " gap %.1f%%" % r["gap"] if r.get("gap") is not None else ""
    if r.get("solver") == "heuristic":
        return "model %s%s; heuristic used: %.2f" % (status, timeout, r["extra"])
    if r.get("solver") == "exact+heuristic":  # the model's choice missed, the heuristic completed it
        return "%.2f (model %s, completed by the heuristic,%s)" % (r["extra"], status, gap)
    return "%.2f (%s%s, %.1f s%s)" % (r["extra"], status, gap, r["solve_s"], timeout)


def main():
    ap = bench_parser(__doc__, "/tmp/graphc-remat-bench")
    ap.add_argument("--models", default="resnet50,vgg16,unet,transformer")
    ap.add_argument("--fractions", default="0.9,0.75,0.5,0.33,0.25")
    ap.add_argument("--time-limit", type=float, default=60)
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per graphc run")
    ap.add_argument("--baseline-args", default="--no-remat-seeds",
                    help="graphc options of the baseline column (same binary, same run)")
    ap.add_argument("--baseline-name", default="without exact seeds",
                    help="the baseline column's heading")
    ap.add_argument("--baseline-graphc", default=None,
                    help="the baseline column's graphc binary (default: --graphc), to compare "
                         "two builds in the same run (with --baseline-args=)")
    opts = ap.parse_args()
    os.makedirs(opts.work, exist_ok=True)
    wanted = opts.models.split(",")
    unknown = [m for m in wanted if m not in {x[0] for x in MODELS}]
    if unknown:
        sys.exit("remat_overhead.py: unknown model(s) %s" % ", ".join(unknown))
    fractions = [float(f) for f in opts.fractions.split(",")]
    results = {}
    for name, desc, build, shape, batch, loss, integer, _ in MODELS:
        if name not in wanted:
            continue
        onnx_path = os.path.join(opts.work, name + ".onnx")
        if not os.path.exists(onnx_path):
            err = export(name, build, shape, batch, integer, onnx_path)
            if err:
                print("%s: export failed: %s" % (name, err))
                continue
        plan_json = os.path.join(opts.work, name + ".json")
        base = compile_one(opts, onnx_path, batch, loss, [], plan_json)
        if not base["fits"]:
            print("%s: the unbudgeted compile failed (exit %s)" % (name, base["rc"]))
            continue
        peak, fixed = base["arena"], base["fixed"]
        act = peak - fixed
        rows = []
        for f in fractions:
            budget = int(fixed + f * act)
            row = {"fraction": f, "budget": budget}
            for mode, extra, graphc in (
                    ("heuristic", ["--remat=heuristic"], None),
                    ("unseeded", ["--remat=heuristic"] + opts.baseline_args.split(),
                     opts.baseline_graphc),
                    ("exact", ["--remat=exact", "--remat-time-limit=%g" % opts.time_limit], None)):
                row[mode] = compile_one(opts, onnx_path, batch, loss,
                                        ["--budget=%d" % budget] + extra, plan_json, graphc)
            rows.append(row)
            print("%s f=%.2f heuristic %s (%s %s) exact %s (%.0f s, %.0f s, %.0f s)"
                  % (name, f, cell_heuristic(row["heuristic"]), opts.baseline_name,
                     cell_heuristic(row["unseeded"]),
                     cell_exact(row["exact"], opts.time_limit), row["heuristic"]["seconds"],
                     row["unseeded"]["seconds"], row["exact"]["seconds"]), flush=True)
        results[name] = {"desc": desc, "batch": batch, "peak": peak, "fixed": fixed, "rows": rows}
        print("\n### %s (batch %d): no-remat peak %.1f MiB, of which activations %.1f MiB\n" % (
            name, batch, peak / 2**20, act / 2**20))
        print("| activation budget | budget MiB | heuristic +FLOPs %% | %s "
              "| exact +FLOPs %% (status, gap, solve time) | Chen sqrt(n) +FLOPs %% "
              "| any remat >= +FLOPs %% (instant bound) "
              "| compile s (heuristic / baseline / exact) |" % opts.baseline_name)
        print("|---|---|---|---|---|---|---|---|")
        for row in rows:
            h, u, e = row["heuristic"], row["unseeded"], row["exact"]
            chen = next((r["chen"] for r in (h, e) if r.get("chen") is not None), None)
            instant = next((r for r in (h, e) if r.get("instant") is not None), None)
            print("| %d%% | %.1f | %s | %s | %s | %s | %s | %.1f / %.1f / %.1f |" % (
                round(100 * row["fraction"]), row["budget"] / 2**20, cell_heuristic(h),
                cell_heuristic(u), cell_exact(e, opts.time_limit), "%.2f" % chen if chen is not None else "-",
                ("none fits (proven)" if instant["instant_status"] == "infeasible" else
                 "%.2f (%s)" % (instant["instant"], instant["instant_status"])) if instant else "-",
                h["seconds"], u["seconds"], e["seconds"]))
        sys.stdout.flush()
    with open(os.path.join(opts.work, "remat_results.json"), "w") as f:
        json.dump(results, f, indent=1, default=str)


if __name__ == "__main__":
    main()
