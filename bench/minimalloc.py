#!/usr/bin/python3
"""Runs graphc-plan on MiniMalloc's benchmark instances and prints a Markdown table.

For every `NAME.CAPACITY.csv` in the instance folder (default /work/shared/bench/minimalloc;
example.* files are skipped) it runs, one instance at a time:

  1. graphc-plan --heuristic-only --capacity=CAPACITY   (the multi-order best-fit baseline)
  2. graphc-plan --capacity=CAPACITY --time-limit=T --output=solution.csv
                                                        (heuristic + exact search)
  3. graphc-plan --verify=solution.csv --capacity=CAPACITY, when step 2 fit

and reports, from graphc-plan's summary line (`buffers=N lower_bound=L height=H capacity=C
fit=yes|no time_ms=T`), each run's height, height / lower bound and time, the fit and the
verifier's verdict. Usage:

  /usr/bin/python3 bench/minimalloc.py [--graphc-plan build/bin/graphc-plan]
      [--instances DIR] [--time-limit SECONDS]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

SUMMARY = re.compile(
    r"buffers=(\d+) lower_bound=(\d+) height=(\d+) capacity=(\S+) fit=(yes|no) "
    r"time_ms=([0-9.]+)")


def run_plan(args):
    """Runs graphc-plan; returns the parsed summary as a dict (exit status 1 = no fit is fine)."""
    proc = subprocess.run(args, capture_output=True, text=True)
    m = SUMMARY.search(proc.stdout)
    if not m:
        sys.exit("no summary from %s:\n%s%s" % (" ".join(args), proc.stdout, proc.stderr))
    return {
        "buffers": int(m.group(1)),
        "lower": int(m.group(2)),
        "height": int(m.group(3)),
        "fit": m.group(5),
        "ms": float(m.group(6)),
    }


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphc-plan", default=os.path.join(root, "build", "bin", "graphc-plan"))
    ap.add_argument("--instances", default="/work/shared/bench/minimalloc")
    ap.add_argument("--time-limit", type=float, default=10.0)
    opts = ap.parse_args()

    files = sorted(f for f in os.listdir(opts.instances)
                   if f.endswith(".csv") and not f.startswith("example"))
    print("| instance | buffers | capacity | lower bound | best fit height | best fit / LB "
          "| best fit ms | height | height / LB | fit | verified | time s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|")
    fits = 0
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            name, capacity = f.split(".")[0], int(f.split(".")[1])
            path = os.path.join(opts.instances, f)
            cap = "--capacity=%d" % capacity
            base = run_plan([opts.graphc_plan, "--input=" + path, cap, "--heuristic-only"])
            out = os.path.join(tmp, name + ".solution.csv")
            full = run_plan([opts.graphc_plan, "--input=" + path, cap,
                             "--time-limit=%g" % opts.time_limit, "--output=" + out])
            verified = "-"
            if full["fit"] == "yes":
                fits += 1
                check = subprocess.run([opts.graphc_plan, "--verify=" + out, cap],
                                       capture_output=True, text=True)
                verified = "yes" if check.returncode == 0 else "NO: " + check.stderr.strip()
            lower = full["lower"]
            print("| %s | %d | %d | %d | %d | %.3f | %.1f | %d | %.3f | %s | %s | %.3f |" % (
                name, full["buffers"], capacity, lower, base["height"], base["height"] / lower,
                base["ms"], full["height"], full["height"] / lower, full["fit"], verified,
                full["ms"] / 1000.0))
            sys.stdout.flush()
    print("\n%d of %d fit at capacity" % (fits, len(files)))


if __name__ == "__main__":
    main()
