#!/usr/bin/python3
"""Calibrates the cost model's device profile against measured graphc step times (issue #5).

  /usr/bin/python3 bench/calibrate_cost_model.py [--graphc build/bin/graphc] [--work DIR]
      [--cpu-results FILE] [--results docs/gpu-results/2026-11-22-h100-checks-bench.json,docs/gpu-results/2026-11-22-h100-maxbatch.json]

The measured steps are the medians `bench/gpu_checks.py run` recorded on a GPU (the `bench` and
`maxbatch-graphc` parts). Each measured binary is compiled again here, exactly as gpu_checks.py
compiled it (--target=cuda, its batch, optimizer and flags; the transformer with
--no-fuse-attention, as the measured binary predates the fused attention), to
--compile-to=planned, and the fit report's `roofline` line gives its cost at the nominal
datasheet peak, split into C (seconds in compute-bound ops), M (memory-bound ops) and N (ops).
Then the model

    measured ~ C / computeEfficiency + M / bandwidthEfficiency + N * secondsPerOp

is fitted by least squares on the relative error (each row divided by its measurement, so a
0.5 ms CNN step counts as much as a 2 s ResNet-50 step), with every coefficient kept
non-negative (a term whose best coefficient is negative is dropped), on the binaries without
16-bit compute. The --precision=bf16 binaries then fit one more coefficient with those held:
the roofline line's H (seconds of C in 16-bit ops, at the 16-bit peak) is priced at
1 / halfComputeEfficiency instead, measured ~ (C - H) / computeEfficiency + H /
halfComputeEfficiency + M / bandwidthEfficiency + N * secondsPerOp. Prints the fit, and one
row per binary: measured, the nominal prediction (C + M), the calibrated one and their ratios
to the measurement. The efficiencies go into passes/CostModel.cpp's profile by hand, with the
date and the device; re-run this after a GPU session to refresh them.

With --cpu-results FILE the rows are instead the CPU binaries that `bench/cpu_step_time.py --json
FILE` timed (graphc --target=cpu --device=cpu), with their fit report's split recorded in the
file, so nothing is compiled again; the fit is then the cpu profile's.
"""
import itertools
import json
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from training_graphs import bench_parser, run  # noqa: E402

ROOF = re.compile(r"roofline +at the nominal peak: ([0-9.]+) ms in compute-bound ops, "
                  r"([0-9.]+) ms in memory-bound ops, (\d+) ops"
                  r"(?: \(([0-9.]+) ms of the compute-bound in 16-bit ops\))?")
LOSSES = {"cnn256": "binary_crossentropy"}
# gpu_checks.py's `maxbatch-graphc` labels (their first word): the model each one trained.
MAXBATCH_MODELS = {"r50": "resnet50", "tr": "transformer", "resnet50": "resnet50",
                   "transformer": "transformer"}


def measured_binaries(paths):
    """(label, model, batch, optimizer, extra flags, measured ms) of every recorded binary: the
    default rows of `bench-graphc` (fp32 or `-bf16`) and the `maxbatch-graphc` binaries. Runs
    from before 2026-11-23 (the fused attention's day) trained the unfused transformer. A path
    written FILE:REGEX takes only the labels REGEX matches (re.search) from FILE."""
    import gpu_checks  # noqa: E402  (BENCH: the step-time batches)
    out = []
    for entry in paths:
        path, _, pattern = entry.partition(":")
        data = json.load(open(path))
        keep = re.compile(pattern or "")
        first = len(out)
        unfused = data.get("device", {}).get("info", {}).get("date", "") < "2026-11-23"
        for name, r in data.get("bench-graphc", {}).items():
            if r.get("exit") == 0 and r.get("median_ms"):
                model = name.split("-")[0]
                batch = dict(gpu_checks.BENCH)[model]
                flags = ["--lr=0.01", "--loss=" + LOSSES.get(model, "sparse_categorical_crossentropy")]
                if name.endswith("-bf16"):
                    flags.append("--precision=bf16")
                if model == "transformer" and unfused:
                    flags.append("--no-fuse-attention")
                out.append((name, model, batch, "sgd", flags, r["median_ms"]))
        for label, r in data.get("maxbatch-graphc", {}).items():
            if r.get("exit") == 0 and r.get("median_ms"):
                model = MAXBATCH_MODELS[label.split("-")[0]]
                flags = [f for f in r.get("flags", "").split(",") if f]
                if model == "transformer" and unfused:
                    flags.append("--no-fuse-attention")
                out.append((label, model, r["batch"], "adam", flags, r["median_ms"]))
        out[first:] = [row for row in out[first:] if keep.search(row[0])]
    return out


def fit_half(rows, coefficients):
    """The 16-bit ops' coefficient (1 / halfComputeEfficiency) on rows with 16-bit compute, the
    other terms fixed at `coefficients` (the fp32 fit): least squares on the relative error of
    t ~ (C - H) a + M b + N p + H k, closed form k = sum(H r / t^2) / sum(H^2 / t^2) with r the
    time the fp32 terms leave. Returns (k, rms error) or None without such rows."""
    a, b, per_op = coefficients
    half = [(c, m, n, t, h) for c, m, n, t, h in rows if h > 0]
    if not half:
        return None
    num = sum(h * (t - ((c - h) * a + m * b + n * per_op)) / t ** 2 for c, m, n, t, h in half)
    den = sum(h * h / t ** 2 for c, m, n, t, h in half)
    k = max(num / den, 0.0)
    rms = float(np.sqrt(np.mean([(((c - h) * a + m * b + n * per_op + h * k) / t - 1) ** 2
                                 for c, m, n, t, h in half])))
    return k, rms


def fit(rows):
    """Non-negative least squares on relative errors, by trying every subset of the three terms
    (three unknowns: exhaustive is exact and instant). Returns (coefficients, rms error)."""
    A = np.array([[c, m, n] for c, m, n, *_ in rows]) / np.array([[r[3]] for r in rows])
    y = np.ones(len(rows))
    best = None
    for k in (3, 2, 1):
        for subset in itertools.combinations(range(3), k):
            coef, *_ = np.linalg.lstsq(A[:, subset], y, rcond=None)
            if (coef < 0).any():
                continue
            full = np.zeros(3)
            full[list(subset)] = coef
            rms = float(np.sqrt(np.mean((A @ full - y) ** 2)))
            if best is None or rms < best[1] - 1e-12:
                best = (full, rms)
    return best


def main():
    ap = bench_parser(__doc__, "/tmp/graphc-calibrate")
    ap.add_argument("--results", default=",".join(
        os.path.join(HERE, "..", "docs", "gpu-results", f) for f in
        ("2026-11-22-h100-checks-bench.json", "2026-11-22-h100-maxbatch.json")))
    ap.add_argument("--device", default="h100")
    ap.add_argument("--cpu-results", default="",
                    help="bench/cpu_step_time.py's --json file: fit the cpu profile to it")
    opts = ap.parse_args()
    os.makedirs(opts.work, exist_ok=True)
    import gpu_checks  # noqa: E402  (its exports: training mode, dynamic batch axis)

    rows, names = [], []
    if opts.cpu_results:
        opts.device = "cpu"
        for r in json.load(open(opts.cpu_results))["rows"]:
            g = r["graphc"]
            rows.append((g["compute_s"], g["memory_s"], g["ops"], g["median_ms"] / 1e3, 0.0))
            names.append((r["model"], r["model"], r["batch"], g["median_ms"]))
            print("%s batch %d: C %.3f ms, M %.3f ms, %d ops; measured %.3f ms"
                  % (r["model"], r["batch"], g["compute_s"] * 1e3, g["memory_s"] * 1e3, g["ops"],
                     g["median_ms"]), flush=True)
    for label, model, batch, optimizer, flags, ms in (
            [] if opts.cpu_results else measured_binaries(opts.results.split(","))):
        onnx = os.path.join(opts.work, model + ".onnx")
        if not os.path.exists(onnx):
            gpu_checks.export_bench_model(model, onnx, patterned=True)
        cmd = [opts.graphc, onnx, "--target=cuda", "--batch=%d" % batch,
               "--optimizer=" + optimizer, "--device=" + opts.device, "--compile-to=planned",
               "-o", os.devnull] + flags
        status, out, err, secs = run(cmd, 1800)
        m = ROOF.search(out + err)
        if status != 0 or not m:
            print("%s: graphc failed (%s): %s" % (label, status, (out + err)[-400:]))
            return 1
        c, mem, n = float(m.group(1)) / 1e3, float(m.group(2)) / 1e3, int(m.group(3))
        h = float(m.group(4) or 0) / 1e3
        rows.append((c, mem, n, ms / 1e3, h))
        names.append((label, model, batch, ms))
        print("%s: %s batch %d: C %.3f ms (16-bit %.3f ms), M %.3f ms, %d ops; measured %.3f ms "
              "(%.0f s)" % (label, model, batch, c * 1e3, h * 1e3, mem * 1e3, n, ms, secs),
              flush=True)

    # The fp32 terms on the rows without 16-bit compute; then the 16-bit ops' own efficiency on
    # the others, the fp32 terms held (their 16-bit ops run other kernels: tensor-core GEMMs,
    # cuDNN's NHWC convolutions with their layout copies).
    full_rows = [r for r in rows if r[4] == 0] or rows
    (a, b, per_op), rms = fit(full_rows)
    half = fit_half(rows, (a, b, per_op))
    k = half[0] if half else 0.0
    eff_c = 1.0 / a if a > 0 else float("inf")
    eff_b = 1.0 / b if b > 0 else float("inf")
    print("\nfit over %d binaries: computeEfficiency %.4f, bandwidthEfficiency %.4f, "
          "secondsPerOp %.3g (rms relative error %.1f%%)" % (len(full_rows), eff_c, eff_b,
                                                            per_op, 100 * rms))
    eff_h = 1.0 / k if k > 0 else 0.0
    if half:
        print("16-bit ops over %d binaries: halfComputeEfficiency %.4f (rms relative error %.1f%%)"
              % (sum(1 for r in rows if r[4] > 0), eff_h, 100 * half[1]))
    print("\n| binary | batch | measured ms | nominal ms (ratio) | calibrated ms (ratio) |")
    print("|---|---:|---:|---:|---:|")
    for (label, model, batch, ms), (c, mem, n, t, h) in zip(names, rows):
        nominal = (c + mem) * 1e3
        calibrated = (a * (c - h) + k * h + b * mem + per_op * n) * 1e3
        print("| %s (%s) | %d | %.3f | %.3f (%.2f) | %.3f (%.2f) |"
              % (label, model, batch, ms, nominal, nominal / ms, calibrated, calibrated / ms))
    json.dump({"device": opts.device, "computeEfficiency": eff_c, "bandwidthEfficiency": eff_b,
               "secondsPerOp": per_op, "rms_relative_error": rms,
               "halfComputeEfficiency": eff_h,
               "half_rms_relative_error": half[1] if half else None,
               "rows": [dict(zip(("label", "model", "batch", "measured_ms"), nm),
                             compute_s=r[0], memory_s=r[1], ops=r[2], half_compute_s=r[4])
                        for nm, r in zip(names, rows)]},
              open(os.path.join(opts.work, "calibration.json"), "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
