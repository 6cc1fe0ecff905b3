#!/usr/bin/python3
"""CPU training step time: graphc's CPU binaries against PyTorch eager on the same cores.

  /usr/bin/python3 bench/cpu_step_time.py [--graphc build/bin/graphc] [--work DIR]
      [--models cnn28:256,...] [--steps 12] [--warmup 2] [--rounds 2]
      [--baseline-graphc OLD/graphc | --baseline-runtime DIR | --baseline-blas-core CORE]
      [--json OUT]

For each model:batch (bench/training_graphs.py's models, exported as bench/gpu_checks.py exports
them: training mode, dynamic batch) it compiles `graphc M.onnx --target=cpu --batch=B
--optimizer=sgd --lr=0.01 --loss=L -o train`, writes random {0,1} images and labels, runs
`train --steps N --log-json LOG` and takes the log's `step_ms` (the step call alone, the batch's
read excluded) after the warm-up steps. PyTorch runs the same model, loss and SGD step in eager
mode on the same data shape with torch.set_num_threads(os.cpu_count()), timed the same way
(time.perf_counter around one step). Every contender runs --rounds times, interleaved, and its
median and minimum are over all its rounds' timed steps. With --baseline-blas-core the baseline
is the same binaries with OPENBLAS_CORETYPE set (the runtime then keeps that core). A model
graphc cannot compile is
reported with graphc's error and left out. Both use every
core: graphc's CPU kernels (its GEMMs too) through its own thread pool, PyTorch through its
intra-op pool.

It prints one Markdown table: graphc ms, PyTorch ms and their ratio (below 1: graphc is faster),
and the cost model's prediction of graphc's step for --device=cpu (the fit report's `cost
model` line) against the measurement. With --baseline-graphc a second build's binaries are timed
in the same run, in the same order, and their ratio to the first build's is printed too. The
fit of the cpu profile's efficiencies to these measurements is bench/calibrate_cost_model.py
--cpu-results (the --json file written here).
"""
import json
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from calibrate_cost_model import ROOF  # noqa: E402  (the fit report's roofline line)
from training_graphs import bench_parser, run  # noqa: E402

DEFAULT_MODELS = "cnn28:256,cnn64:64,cnn256:16,resnet18:8,mobilenet_v2:8,transformer:1"
PREDICTED = re.compile(r"predicted ([0-9.]+) ms/step on cpu")


def loss_flag(loss):
    return "--loss=" + loss  # training_graphs' loss names are graphc's --loss values


def compile_binary(graphc, onnx, batch, loss, out, runtime_dir=""):
    """Compiles the CPU binary; returns (binary, cost-model figures) or raises with graphc's
    error line."""
    cmd = [graphc, onnx, "--target=cpu", "--device=cpu", "--batch=%d" % batch,
           "--optimizer=sgd", "--lr=0.01", loss_flag(loss), "-o", out]
    if runtime_dir:
        cmd = ["env", "GRAPHC_RUNTIME_DIR=" + runtime_dir] + cmd
    status, stdout, stderr, secs = run(cmd, 1800)
    if status != 0:
        raise RuntimeError("%s exited %s: %s" % (" ".join(cmd), status, (stdout + stderr)[-600:]))
    text = stdout + stderr
    roof, pred = ROOF.search(text), PREDICTED.search(text)
    cost = {"compile_s": round(secs, 1)}
    if roof:
        cost.update(compute_s=float(roof.group(1)) / 1e3, memory_s=float(roof.group(2)) / 1e3,
                    ops=int(roof.group(3)))
    if pred:
        cost["predicted_ms"] = float(pred.group(1))
    return out, cost


def time_binary(binary, work, steps, warmup, env=None):
    """`step_ms` of each step after `warmup` steps, and the first and last losses (the binary
    run with `env` added to the environment)."""
    import gpu_checks
    x, y = gpu_checks.write_data(binary, work, batch_count=4)
    return time_on_data(binary, x, y, work, steps, warmup, env)


def time_on_data(binary, x, y, work, steps, warmup, env=None):
    """time_binary on the data file `x` (or a list of them, one per data input) and `y`."""
    log = os.path.join(work, "log.jsonl")
    if os.path.exists(log):
        os.remove(log)
    data = [a for path in ([x] if isinstance(x, str) else x) for a in ("--data", path)]
    status, stdout, stderr, wall = run([binary] + data + ["--labels", y, "--steps", str(steps),
                                                          "--log-json", log], 3600, env)
    if status != 0:
        raise RuntimeError("%s exited %s: %s" % (binary, status, stderr[-600:]))
    with open(log) as f:
        records = [json.loads(line) for line in f]
    times = [r["step_ms"] for r in records if r.get("event") == "step"][warmup:]
    losses = [r["loss"] for r in records if r.get("event") == "step"]
    return {"times": times, "first_loss": losses[0], "last_loss": losses[-1]}


def rounds_against_torch(binary, x, y, work, steps, warmup, rounds, torch_step):
    """The CPU binary on (x, y) and `torch_step(steps, warmup)` -> (step ms after warm-up, last
    loss) alternated `rounds` times, so that a slow spell of a shared machine falls on both;
    {"graphc" | "torch": summary of all their rounds' steps, with the last loss}."""
    times, losses = {"graphc": [], "torch": []}, {}
    for _ in range(rounds):
        timed = time_on_data(binary, x, y, work, steps, warmup)
        times["graphc"] += timed["times"]
        losses["graphc"] = timed["last_loss"]
        t, losses["torch"] = torch_step(steps, warmup)
        times["torch"] += t
    return {label: dict(summary(times[label]), last_loss=losses[label]) for label in times}


def print_against_torch(rows, name_header, name_of, extra_columns=()):
    """One Markdown table of rows that rounds_against_torch filled: name_of(row), graphc's and
    PyTorch's medians and their ratio (below 1: graphc is faster), each (header, cell_of(row))
    of `extra_columns`, and the cpu profile's prediction against graphc's measurement."""
    headers = ([name_header, "graphc ms", "PyTorch eager ms", "**graphc / PyTorch**"] +
               [header for header, _ in extra_columns] +
               ["predicted ms (cpu profile)", "predicted / measured"])
    print("| " + " | ".join(headers) + " |")
    print("|---|" + "---:|" * (len(headers) - 1))
    for row in rows:
        g, t = row["graphc"]["median_ms"], row["torch"]["median_ms"]
        pred = row.get("predicted_ms")
        cells = ([name_of(row), "%.1f" % g, "%.1f" % t, "**%.2f**" % (g / t)] +
                 [cell(row) for _, cell in extra_columns] +
                 ["%.1f" % pred if pred else "-", "%.2f" % (pred / g) if pred else "-"])
        print("| " + " | ".join(cells) + " |")


def summary(times):
    return {"median_ms": round(statistics.median(times), 3), "min_ms": round(min(times), 3),
            "steps_timed": len(times)}


def time_torch(name, batch, steps, warmup):
    """PyTorch eager's SGD step of the same model on the CPU: each step's ms after warm-up."""
    import torch
    import gpu_checks
    torch.set_num_threads(os.cpu_count())
    model, shape, loss = gpu_checks.torch_model(name)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    step = gpu_checks.torch_step_fn(model, loss, opt)
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, 2, (batch,) + tuple(shape), generator=gen).float()
    if loss == gpu_checks.BCE:
        y = torch.randint(0, 2, (batch, 1), generator=gen).float()
    else:
        y = torch.randint(0, 10, (batch,), generator=gen)
    times = []
    for i in range(steps):
        t0 = time.perf_counter()
        value = step(x, y)
        times.append(1e3 * (time.perf_counter() - t0))
    return {"times": times[warmup:], "threads": torch.get_num_threads(),
            "last_loss": float(value)}


def main():
    ap = bench_parser(__doc__, "/tmp/graphc-cpu-step-time")
    ap.add_argument("--models", default=DEFAULT_MODELS,
                    help="model:batch pairs of bench/training_graphs.py's models")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2,
                    help="interleaved runs of every contender per model")
    ap.add_argument("--baseline-graphc", default="",
                    help="a second graphc build, timed in the same run")
    ap.add_argument("--baseline-runtime", default="",
                    help="another build's runtime (include/, lib/), linked by this graphc")
    ap.add_argument("--baseline-blas-core", default="",
                    help="the baseline is this graphc's binaries run with OPENBLAS_CORETYPE set "
                         "to this core (Prescott: what OpenBLAS 0.3.21 picks by itself on "
                         "Sapphire and Emerald Rapids)")
    ap.add_argument("--no-torch", action="store_true", help="leave PyTorch's column out")
    ap.add_argument("--json", default="", help="also write the results to this file")
    opts = ap.parse_args()
    os.makedirs(opts.work, exist_ok=True)
    import gpu_checks

    builds = [("graphc", opts.graphc, "", None)]
    if opts.baseline_graphc or opts.baseline_runtime:
        builds.append(("baseline", opts.baseline_graphc or opts.graphc, opts.baseline_runtime,
                       None))
    elif opts.baseline_blas_core:
        builds.append(("baseline", opts.graphc, "", {"OPENBLAS_CORETYPE": opts.baseline_blas_core}))
    environments = {label: env for label, _, _, env in builds}
    results = {"cpus": os.cpu_count(), "steps": opts.steps, "warmup": opts.warmup, "rows": []}
    for pair in opts.models.split(","):
        name, batch = pair.split(":")
        batch = int(batch)
        onnx = os.path.join(opts.work, name + ".onnx")
        if not os.path.exists(onnx):
            gpu_checks.export_bench_model(name, onnx, patterned=True)
        loss = gpu_checks.torch_model(name)[2]
        row = {"model": name, "batch": batch, "loss": loss}
        try:
            binaries = {}
            for label, graphc, runtime_dir, _ in builds:
                binaries[label], row[label] = compile_binary(
                    graphc, onnx, batch, loss, os.path.join(opts.work, "%s-%s" % (name, label)),
                    runtime_dir)
            # Rounds interleave the contenders, so that a slow spell of a shared machine falls
            # on all of them; each one's figures are over all its rounds' steps.
            times = {label: [] for label in binaries}
            if not opts.no_torch:
                times["torch"] = []
                row["torch"] = {}
            for _ in range(opts.rounds):
                for label, binary in binaries.items():
                    timed = time_binary(binary, opts.work, opts.steps, opts.warmup,
                                        environments[label])
                    times[label] += timed.pop("times")
                    row[label].update(timed)
                if not opts.no_torch:
                    timed = time_torch(name, batch, opts.steps, opts.warmup)
                    times["torch"] += timed.pop("times")
                    row["torch"].update(timed)
            for label in times:
                row[label].update(summary(times[label]))
                print("%s batch %d, %s: %s" % (name, batch, label, row[label]), flush=True)
        except RuntimeError as e:
            print("%s batch %d: %s" % (name, batch, e), flush=True)
            continue
        results["rows"].append(row)

    print()
    header = "| model (batch) | graphc ms |"
    rule = "|---|---:|"
    if len(builds) > 1:
        header += " baseline ms | graphc / baseline |"
        rule += "---:|---:|"
    if not opts.no_torch:
        header += " PyTorch eager ms | graphc / PyTorch |"
        rule += "---:|---:|"
    header += " predicted ms (cpu profile) | predicted / measured |"
    rule += "---:|---:|"
    print(header)
    print(rule)
    for row in results["rows"]:
        g = row["graphc"]
        line = "| %s (%d) | %.1f |" % (row["model"], row["batch"], g["median_ms"])
        if len(builds) > 1:
            b = row["baseline"]
            line += " %.1f | %.2f |" % (b["median_ms"], g["median_ms"] / b["median_ms"])
        if not opts.no_torch:
            t = row["torch"]
            line += " %.1f | **%.2f** |" % (t["median_ms"], g["median_ms"] / t["median_ms"])
        pred = g.get("predicted_ms")
        line += (" %.1f | %.2f |" % (pred, pred / g["median_ms"])) if pred else " - | - |"
        print(line)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
