#!/usr/bin/env python3
"""The CPU kernels' threads change no bit: one model trained with 1, 2 and 3 kernel threads, and
with a poisoned arena.

  kernel_threads.py --model NAME --optimizer adam|sgd|momentum --steps N --workdir DIR
                    --graphc PATH

Exports test/e2e/models.py's model, compiles it once (--target=cpu) and runs the binary three
times on the same random batches:
  1. GRAPHC_NUM_THREADS=1: every kernel sequential;
  2. GRAPHC_NUM_THREADS=3 GRAPHC_KERNEL_GRAIN=1: every split kernel hands out three ranges,
     however small the tensor (and OPENBLAS_NUM_THREADS=3, which must change nothing: the
     GEMMs' blocks depend on their shapes alone, each one single-threaded OpenBLAS call);
  3. GRAPHC_NUM_THREADS=2 GRAPHC_KERNEL_GRAIN=5: uneven ranges of a few items;
  4. GRAPHC_NUM_THREADS=1 GRAPHC_POISON_ARENA=1: every arena byte that no persistent tensor
     holds is NaN before each step, so a kernel that reads a byte its step did not write (fresh
     pages' zeros or the previous step's value on the CPU; anything on a GPU) changes the run.
Each run's printed losses and every --save-weights file (running statistics included) must be
byte-identical to run 1's, the --log-json start record must report the thread count the run
asked for, and the loss must change over the steps (the runs trained). Prints PASS or FAIL.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import models  # noqa: E402

RUNS = [("1 thread", {"GRAPHC_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}, 1),
        ("3 threads, grain 1", {"GRAPHC_NUM_THREADS": "3", "GRAPHC_KERNEL_GRAIN": "1",
                                "OPENBLAS_NUM_THREADS": "3"}, 3),
        ("2 threads, grain 5", {"GRAPHC_NUM_THREADS": "2", "GRAPHC_KERNEL_GRAIN": "5"}, 2),
        ("1 thread, poisoned arena", {"GRAPHC_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                                      "GRAPHC_POISON_ARENA": "1"}, 1)]
LR = {"adam": "0.001", "sgd": "0.05", "momentum": "0.05"}


def fail(message):
    print("FAIL: " + message)
    print("FAIL")
    sys.exit(1)


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if p.returncode != 0:
        fail("%s exited with %d:\n%s%s" % (" ".join(cmd), p.returncode, p.stdout[-3000:],
                                         p.stderr[-3000:]))
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--optimizer", required=True, choices=sorted(LR))
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--graphc", required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    onnx = os.path.join(a.workdir, "model.onnx")
    models.export(a.model, onnx)
    batch = models.batch_of(a.model)
    rng = np.random.RandomState(0)
    n = batch * a.steps
    if a.model in models.TOKEN_MODELS:
        vocabulary = models.TOKEN_MODELS[a.model]["vocabulary"]
        x = rng.randint(0, vocabulary, size=(n,) + models.input_shape(a.model)[1:]).astype(np.int64)
    else:
        x = rng.standard_normal((n,) + models.input_shape(a.model)[1:]).astype(np.float32)
    if models.LOSSES[a.model] == "binary_crossentropy":
        y = rng.randint(0, 2, size=(n,) + models.label_shape(a.model)).astype(np.float32)
    else:
        y = rng.randint(0, 10, size=(n,)).astype(np.int64)
    xp, yp = os.path.join(a.workdir, "x.npy"), os.path.join(a.workdir, "y.npy")
    np.save(xp, x)
    np.save(yp, y)
    exe = os.path.join(a.workdir, "train")
    run([a.graphc, onnx, "-o", exe, "--quiet", "--loss=" + models.LOSSES[a.model],
         "--optimizer=" + a.optimizer, "--lr=" + LR[a.optimizer], "--batch=%d" % batch])

    reference = None
    for label, extra, threads in RUNS:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("GRAPHC_") and k != "OPENBLAS_NUM_THREADS"}
        env.update(extra)
        tag = label.replace(" ", "").replace(",", "-")
        weights, log = os.path.join(a.workdir, "w-" + tag), os.path.join(a.workdir, tag + ".jsonl")
        out = run([exe, "--data", xp, "--labels", yp, "--steps", str(a.steps),
                   "--save-weights", weights, "--log-json", log], env)
        losses = [line for line in out.splitlines() if line.startswith("step ")]
        start = json.loads(open(log).readline())
        if start.get("kernel_threads") != threads:
            fail("%s: the log's start record says kernel_threads %r" % (label, start.get("kernel_threads")))
        files = sorted(os.listdir(weights))
        blobs = {f: open(os.path.join(weights, f), "rb").read() for f in files}
        if reference is None:
            if len(losses) != a.steps or len(set(l.split(" loss ")[1] for l in losses)) < 2:
                fail("%s: expected %d different losses, got %s" % (label, a.steps, losses))
            reference = (losses, blobs)
            print("%s: %d losses, %d weight files" % (label, len(losses), len(files)))
            continue
        if losses != reference[0]:
            fail("%s: losses %s differ from 1 thread's %s" % (label, losses, reference[0]))
        if sorted(blobs) != sorted(reference[1]):
            fail("%s: weight files %s differ from 1 thread's" % (label, sorted(blobs)))
        for f in files:
            if blobs[f] != reference[1][f]:
                fail("%s: %s differs from 1 thread's" % (label, f))
        print("%s: bit-identical (%d losses, %d weight files)" % (label, len(losses), len(files)))
    print("PASS")


if __name__ == "__main__":
    main()
