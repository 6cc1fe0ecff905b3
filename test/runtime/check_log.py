#!/usr/bin/env python3
"""check_log.py LOG [LOG2] --steps-output FILE --epochs E --steps-per-epoch S

Checks a --log-json file (test/runtime/log-json.test): JSON Lines; a "start" record; one "step"
record per step 1..E*S whose loss is exactly the loss of line t of FILE (a --steps run on the
same data); one "epoch" record per epoch whose loss is the mean of its steps' losses, with
accuracy and validation metrics. With LOG2 (a second run with the same seed) the records must be
identical apart from their timings: the run is deterministic. Prints PASS or FAIL: reason."""
import argparse
import json
import struct
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def load(path):
    records = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                records.append(json.loads(line))
            except ValueError as e:
                fail("%s:%d is not JSON: %s" % (path, n, e))
    return records


def untimed(records):
    return [{k: v for k, v in r.items() if k not in ("time_s", "samples_per_s", "step_ms")} for r in records]


ap = argparse.ArgumentParser()
ap.add_argument("log")
ap.add_argument("log2", nargs="?")
ap.add_argument("--steps-output", required=True)
ap.add_argument("--epochs", type=int, required=True)
ap.add_argument("--steps-per-epoch", type=int, required=True)
a = ap.parse_args()

records = load(a.log)
expected_losses = [float(l.rsplit(" loss ", 1)[1]) for l in open(a.steps_output)]
total = a.epochs * a.steps_per_epoch
if records[0].get("event") != "start" or records[0].get("steps") != total:
    fail("the first record is not the start of a %d-step run: %s" % (total, records[0]))
steps = [r for r in records if r["event"] == "step"]
epochs = [r for r in records if r["event"] == "epoch"]
if [r["step"] for r in steps] != list(range(1, total + 1)):
    fail("step records are not steps 1..%d" % total)
for r in steps:
    if r["loss"] != f32(expected_losses[r["step"] - 1]):
        fail("step %d: loss %r, the --steps run printed %r" % (r["step"], r["loss"], expected_losses[r["step"] - 1]))
    if not 0.0 <= r["accuracy"] <= 1.0:
        fail("step %d: accuracy %r" % (r["step"], r["accuracy"]))
    # The step alone fits inside the time since the previous record (it excludes the batch's
    # read and the bookkeeping around it).
    if not isinstance(r.get("step_ms"), (int, float)) or r["step_ms"] <= 0:
        fail("step %d: step_ms %r" % (r["step"], r.get("step_ms")))
for before, r in zip(steps, steps[1:]):
    if r["step_ms"] > 1e3 * (r["time_s"] - before["time_s"]) + 1e-6:
        fail("step %d: step_ms %r exceeds the %r s since step %d" % (
            r["step"], r["step_ms"], r["time_s"] - before["time_s"], before["step"]))
if [r["epoch"] for r in epochs] != list(range(1, a.epochs + 1)):
    fail("epoch records are not epochs 1..%d" % a.epochs)
for r in epochs:
    mine = [s["loss"] for s in steps if s["epoch"] == r["epoch"]]
    if r["loss"] != sum(mine) / len(mine):
        fail("epoch %d: loss %r is not the mean %r of its steps" % (r["epoch"], r["loss"], sum(mine) / len(mine)))
    for key in ("accuracy", "val_loss", "val_accuracy", "samples_per_s", "time_s"):
        if not isinstance(r.get(key), (int, float)):
            fail("epoch %d has no %s" % (r["epoch"], key))
if a.log2 and untimed(load(a.log2)) != untimed(records):
    fail("the second run's records differ")
print("PASS")
