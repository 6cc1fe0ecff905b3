#!/usr/bin/python3
"""Compile-time resources of graphc against a baseline build: wall time, CPU time and peak
resident memory of the same compiles, run one after the other in the same run.

Each model is exported as bench/training_graphs.py does (training mode, fixed seed). Its
unbudgeted plan gives the fixed bytes (parameters, optimizer state, inputs) and the activation
memory A = arena - fixed, as in bench/remat_overhead.py. The cases, per model and binary:

  plan       graphc M.onnx --compile-to=planned --optimizer=adam --batch=B -o WORK/out.mlir
             (the IR holds every weight, so this measures the import and the IR's writing)
  half       the same with --budget=fixed+A/2 --no-micro-batching: on ResNet-50 a fit with
             recomputation; on VGG-16 the infeasible error, whose batch and budget searches
             import the model again for every trial compile
  max-batch  (--max-batch only, ResNet-50) --budget=80GB --max-batch --precision=auto
             --device=h100, as in docs/benchmarks.md's largest-batch rows
  suggested  (--suggested only) what a user does after the infeasible error: a budget of 90% of
             the fixed bytes fails (exit 3) naming "Fits at --budget=N (with
             --micro-batches=K)"; the case compiles that, so its budget is exactly the smallest
             arena the error found (the new build's error gives N and K, both builds compile it)

Each compile's resources come from wait4 (ru_maxrss, ru_utime, ru_stime). "same answer" compares
the exit status, the planned arena (--plan-out) and graphc's error or --max-batch lines. Usage:

  /usr/bin/python3 bench/compile_resources.py --baseline-graphc OLD/graphc
      [--graphc build/bin/graphc] [--models resnet50,vgg16] [--max-batch] [--suggested]
      [--batch N] [--work DIR]
"""
import json
import os
import re
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from training_graphs import MODELS, bench_parser, export  # noqa: E402

FIXED_KINDS = {"parameter", "optimizer_state", "input"}
MEASURED_TIMES = re.compile(r"\d+(\.\d+)? s\b")
SUGGESTION = re.compile(r"Fits at --budget=(\d+)(?: \(with --micro-batches=(\d+)\))?")


def run_case(binary, args, timeout):
    """Runs one compile in this process's only child: RUSAGE_CHILDREN is then its own usage."""
    start = time.monotonic()
    try:
        p = subprocess.run([binary] + args, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = None, "", "timed out after %d s" % timeout
    wall = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"rc": rc, "stdout": out, "stderr": err, "wall": wall, "user": usage.ru_utime,
            "sys": usage.ru_stime, "rss_mib": usage.ru_maxrss / 1024.0}


def answer(res, plan_json):
    """What must agree between the two builds: the status, the arena or the message."""
    if res["rc"] == 0:
        arena = ""
        if os.path.exists(plan_json):
            with open(plan_json) as f:
                arena = ", arena %d" % json.load(f)["arena_bytes"]
            os.remove(plan_json)
        lines = [" ".join(l.split()) for l in res["stdout"].splitlines() if "--batch=" in l]
        return "rc 0%s%s" % (arena, "; " + " | ".join(lines) if lines else "")
    lines = [l for l in (res["stderr"] + "\n" + res["stdout"]).splitlines() if "error" in l]
    return "rc %s: %s" % (res["rc"], MEASURED_TIMES.sub("", lines[0]) if lines else "")


def main():
    ap = bench_parser(__doc__, "work/compile_resources")
    ap.add_argument("--baseline-graphc", required=True)
    ap.add_argument("--models", default="resnet50,vgg16")
    ap.add_argument("--max-batch", action="store_true")
    ap.add_argument("--suggested", action="store_true")
    ap.add_argument("--batch", type=int, default=0, help="every model's batch (default: its own)")
    ap.add_argument("--timeout", type=int, default=1800)
    opts = ap.parse_args()
    os.makedirs(opts.work, exist_ok=True)
    models = {m[0]: m for m in MODELS}
    rows = []
    for name in opts.models.split(","):
        _, _, build, shape, batch, loss, integer, _ = models[name]
        batch = opts.batch or batch
        onnx_path = os.path.join(opts.work, name + ".onnx")
        if not os.path.exists(onnx_path):
            err = export(name, build, shape, batch, integer, onnx_path)
            if err:
                sys.exit("%s: export failed: %s" % (name, err))
        base = [onnx_path, "--compile-to=planned", "--optimizer=adam", "--loss=" + loss,
                "--batch=%d" % batch, "-o", os.path.join(opts.work, "out.mlir")]
        plan_json = os.path.join(opts.work, "plan.json")
        subprocess.run([opts.graphc] + base + ["--quiet", "--plan-out=" + plan_json], check=True)
        with open(plan_json) as f:
            plan = json.load(f)
        fixed = sum(b["bytes"] for b in plan["buffers"] if b["kind"] in FIXED_KINDS)
        half = int(fixed + 0.5 * (plan["arena_bytes"] - fixed))
        cases = [("plan", base), ("half", base + ["--budget=%d" % half, "--no-micro-batching"])]
        if opts.suggested:
            error = subprocess.run([opts.graphc] + base + ["--budget=%d" % int(0.9 * fixed)],
                                   capture_output=True, text=True)
            m = SUGGESTION.search(error.stderr)
            if error.returncode != 3 or not m:
                sys.exit("%s: no budget suggestion at 90%% of the fixed bytes: %s" %
                         (name, error.stderr[-400:]))
            cases = [("suggested", base + ["--budget=" + m.group(1)] +
                      (["--micro-batches=" + m.group(2)] if m.group(2) else []))]
        if opts.max_batch and name == "resnet50":
            cases.append(("max-batch", [onnx_path, "--optimizer=adam", "--budget=80GB",
                                        "--max-batch", "--precision=auto", "--device=h100"]))
        for case, args in cases:
            got = {}
            # Each compile runs under a fresh helper process, so that its rusage is its own.
            for label, binary in (("new", opts.graphc), ("base", opts.baseline_graphc)):
                plan_args = args + (["--plan-out=" + plan_json] if case != "max-batch" else [])
                helper = subprocess.run(
                    [sys.executable, os.path.abspath(__file__), "--one", binary,
                     str(opts.timeout)] + plan_args, capture_output=True, text=True)
                res = json.loads(helper.stdout)
                res["answer"] = answer(res, plan_json)
                got[label] = res
                print("%s %s %s: %.1f s wall, %.1f s user, %.1f s sys, %.0f MiB; %s" % (
                    name, case, label, res["wall"], res["user"], res["sys"], res["rss_mib"],
                    res["answer"][:160]), flush=True)
            rows.append((name, case, got))
    print()
    print("| model | case | wall s (new / baseline, ratio) | CPU s, user + sys (new / baseline) "
          "| peak RSS MiB (new / baseline, ratio) | same answer |")
    print("|---|---|---|---|---|---|")
    for name, case, got in rows:
        n, b = got["new"], got["base"]
        print("| %s | %s | %.1f / %.1f, %.2f | %.1f / %.1f | %.0f / %.0f, %.2f | %s |" % (
            name, case, n["wall"], b["wall"], n["wall"] / b["wall"], n["user"] + n["sys"],
            b["user"] + b["sys"], n["rss_mib"], b["rss_mib"], n["rss_mib"] / b["rss_mib"],
            "yes" if n["answer"] == b["answer"] else "NO: %s / %s" % (n["answer"], b["answer"])))


def one():
    """--one BINARY TIMEOUT ARGS...: runs one compile and prints its resources as JSON."""
    binary, timeout, args = sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    print(json.dumps(run_case(binary, args, timeout)))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        one()
    else:
        main()
