#!/usr/bin/env python3
"""Mixed precision against fp32 on the training graphs: planned arena and predicted step time.

  bench/mixed_precision.py [--graphc build/bin/graphc] [--models cnn28,resnet18,...]
                           [--device h100] [--workdir /tmp/graphc-mixed] [--timeout 600]

For each model of bench/training_graphs.py (exported the same way: PyTorch, training mode, at
its benchmark batch), compiles the Adam training step to a plan twice, with --precision=fp32 and
--precision=bf16 (graphc-insert-casts: dense and conv in bf16, batch_norm on bf16 activations,
f32 master weights), and prints one Markdown row: the two arenas, their ratio, the casts
inserted, and the cost model's predicted step time on --device for each and their ratio. Both
compiles run in the same invocation, so the ratios compare like with like. Nothing is trained;
models graphc cannot import are listed with the importer's error line.
"""

import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from training_graphs import MODELS, export, run, error_line  # noqa: E402

PREDICTED = re.compile(r"predicted ([0-9.]+) ms/step")
CASTS = re.compile(r"f32 master weights; (\d+) casts")


def compile_plan(opts, onnx_path, batch, loss, precision):
    plan_json = onnx_path[:-5] + "." + precision + ".json"
    args = [opts.graphc, onnx_path, "--compile-to=planned", "--optimizer=adam", "--loss=" + loss,
            "--batch=%d" % batch, "--device=" + opts.device, "--precision=" + precision,
            "-o", "/dev/null", "--plan-out=" + plan_json]
    rc, stdout, stderr, secs = run(args, opts.timeout)
    if rc != 0:
        return {"error": error_line(stdout, stderr)}
    with open(plan_json) as f:
        plan = json.load(f)
    m = PREDICTED.search(stdout)
    c = CASTS.search(stdout)
    return {"arena": plan["arena_bytes"], "ms": float(m.group(1)) if m else float("nan"),
            "casts": int(c.group(1)) if c else 0, "seconds": secs}


def mib(b):
    return "%.1f MiB" % (b / 2**20)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphc", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                     "bin", "graphc"))
    ap.add_argument("--models", default="cnn28,cnn64,cnn256,resnet18,resnet50,vgg16,mobilenet_v2")
    ap.add_argument("--device", default="h100")
    ap.add_argument("--workdir", default="/tmp/graphc-mixed")
    ap.add_argument("--timeout", type=int, default=600)
    opts = ap.parse_args()
    os.makedirs(opts.workdir, exist_ok=True)
    wanted = opts.models.split(",")
    print("| model | batch | fp32 arena | bf16 arena | bf16/fp32 | casts | fp32 ms | bf16 ms "
          "| bf16/fp32 time |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, _, build, shape, batch, loss, integer, _ in MODELS:
        if name not in wanted:
            continue
        path = os.path.join(opts.workdir, name + ".onnx")
        err = export(name, build, shape, batch, integer, path)
        if err:
            print("| %s | %d | export failed: %s |" % (name, batch, err))
            continue
        a = compile_plan(opts, path, batch, loss, "fp32")
        b = compile_plan(opts, path, batch, loss, "bf16")
        if "error" in a or "error" in b:
            print("| %s | %d | %s |" % (name, batch, a.get("error") or b.get("error")))
            continue
        print("| %s | %d | %s | %s | %.3f | %d | %.2f | %.2f | %.3f |"
              % (name, batch, mib(a["arena"]), mib(b["arena"]), b["arena"] / a["arena"],
                 b["casts"], a["ms"], b["ms"], b["ms"] / a["ms"]), flush=True)


if __name__ == "__main__":
    main()
