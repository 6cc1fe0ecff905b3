#!/usr/bin/python3
"""Data parallelism on paper (issue #8): per-GPU memory with and without optimizer-state
sharding, and predicted step times at 8 GPUs over NVLink and at 2 machines over 400 Gb/s,
from the collective volume graphc plans.

For each model (exported from PyTorch in training mode by bench/training_graphs.py's export)
and world size W it runs

  graphc M.onnx --compile-to=planned --optimizer=adam --batch=B*W --data-parallel
         --world-size=W --zero=0|1 --device=h100 -o /dev/null

(and once more with --gradient-as-bucket-view=on at --zero=0: the gradients planned inside
their buckets) and reads the fit report: the per-rank arena, the optimizer state per rank, the gradient bytes
every rank averages per step, and the cost model's compute time per step (roofline on the H100
profile, docs/cost-model.md). The communication time is the bandwidth term of a ring: an
all-reduce (or a reduce-scatter plus an all-gather, ZeRO-1) moves 2 (W-1)/W of the gradient
bytes through every GPU's link:

  - 8 GPUs in one machine: NVLink 4, 450 GB/s per direction per GPU (900 GB/s bidirectional,
    H100 SXM datasheet);
  - 2 machines x 8 GPUs: NCCL's hierarchical all-reduce: a reduce-scatter and an all-gather over
    NVLink inside each machine (2 x 7/8 of the bytes at 450 GB/s) and, between the machines, an
    all-reduce of each GPU's eighth over 400 Gb/s = 50 GB/s, either one NIC per GPU (rails, as
    in a DGX H100) or one NIC per machine shared by its 8 GPUs.

Predicted step = compute + communication (no overlap: an upper bound) and max(compute,
communication) (full overlap with backward: a lower bound). Latency terms are left out (buckets
of 25 MiB are bandwidth-bound). Prints one Markdown table; nothing here is a measurement on a GPU.

  /usr/bin/python3 bench/data_parallel.py [--graphc build/bin/graphc] [--work DIR]
      [--models resnet18,resnet50,vgg16]
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import training_graphs  # noqa: E402  (its MODELS and export)

NVLINK = 450e9        # bytes/s per direction per GPU
NIC = 400e9 / 8       # one 400 Gb/s NIC, bytes/s per direction

UNITS = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}


def size(text):
    value, unit = text.split()
    return float(value) * UNITS[unit]


def compile_report(graphc, path, batch, loss, ranks, zero, views="off"):
    cmd = [graphc, path, "--compile-to=planned", "--optimizer=adam", "--loss=" + loss,
           "--batch=%d" % (batch * ranks), "--data-parallel", "--world-size=%d" % ranks,
           "--zero=%d" % zero, "--gradient-as-bucket-view=" + views, "--device=h100", "-o",
           os.devnull]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        sys.exit("graphc failed: %s\n%s" % (" ".join(cmd), done.stderr))
    out = done.stdout
    get = lambda pattern: re.search(pattern, out, re.M).group(1)  # noqa: E731
    return {
        "arena": size(get(r"^  arena\s+(\S+ \S+)")),
        "state": size(get(r"^    optimizer_state\s+(\S+ \S+)")),
        "gradients": size(get(r"^  gradients\s+(\S+ \S+) averaged")),
        "compute_ms": float(get(r"predicted ([0-9.]+) ms/step")),
    }


def ring_ms(nbytes, ranks, bandwidth):
    return 2.0 * (ranks - 1) / ranks * nbytes / bandwidth * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphc", default="build/bin/graphc")
    ap.add_argument("--work", default="/tmp/graphc-data-parallel")
    ap.add_argument("--models", default="resnet18,resnet50,vgg16")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    wanted = a.models.split(",")
    print("| model (batch per GPU) | gradients per step | optimizer state per GPU: plain / "
          "ZeRO-1 at 8 | arena per GPU: plain / ZeRO-1 at 8 | arena per GPU, gradients "
          "inside their buckets (plain) | compute (H100 cost model) | "
          "8 GPUs NVLink: comm, step | 2x8 GPUs, NIC per GPU: comm, step | 2x8 GPUs, NIC per "
          "machine: comm, step |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, _desc, build, shape, batch, loss, integer, _extra in training_graphs.MODELS:
        if name not in wanted:
            continue
        path = os.path.join(a.work, name + ".onnx")
        if not os.path.exists(path):
            err = training_graphs.export(name, build, shape, batch, integer, path)
            if err:
                sys.exit("%s: export failed: %s" % (name, err))
        plain = compile_report(a.graphc, path, batch, loss, 8, 0)
        zero = compile_report(a.graphc, path, batch, loss, 8, 1)
        viewed = compile_report(a.graphc, path, batch, loss, 8, 0, views="on")
        g, c = plain["gradients"], plain["compute_ms"]
        nvlink = ring_ms(g, 8, NVLINK)
        # Hierarchical: reduce-scatter + all-gather inside (2 x 7/8 over NVLink), and an
        # all-reduce of each GPU's eighth between the 2 machines (2 x 1/2 of it).
        inside = 2 * 7 / 8 * g / NVLINK * 1e3
        rails = inside + 2 * 0.5 * (g / 8) / NIC * 1e3
        shared = inside + 2 * 0.5 * g / NIC * 1e3  # 8 GPUs' eighths through one NIC
        step = lambda comm: "%.2f ms, %.1f-%.1f ms" % (comm, max(c, comm), c + comm)  # noqa: E731
        print("| %s (%d) | %.1f MiB | %.1f / %.1f MiB | %.0f / %.0f MiB | %.0f MiB (%+.1f%%) "
              "| %.1f ms | %s | %s | %s |"
              % (name, batch, g / 2 ** 20, plain["state"] / 2 ** 20, zero["state"] / 2 ** 20,
                 plain["arena"] / 2 ** 20, zero["arena"] / 2 ** 20, viewed["arena"] / 2 ** 20,
                 100.0 * (viewed["arena"] / plain["arena"] - 1), c, step(nvlink),
                 step(rails), step(shared)))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
