#!/usr/bin/env python3
"""Kill-and-resume check for training binaries (test/runtime/kill-resume*.test).

  kill_resume.py --workdir DIR --kills K --seed S -- BINARY ARGS...

1. Runs BINARY ARGS --save-weights DIR/ref-weights uninterrupted: the reference step lines
   (stdout, `step t/T loss L` and validation lines) and weights.
2. Runs BINARY ARGS --checkpoint DIR/ckpt --resume --save-weights DIR/weights, and SIGKILLs it
   after a random step, K times (each kill at a step drawn after the previous run's resume
   point), resuming each time; the last run completes.
3. Checks that every line any run printed is the reference's line for that step, that each
   resumed run continued right after the checkpoint it reported, that the last run printed the
   whole reference sequence after its checkpoint, and that the final weights are bit-identical.

The child's stdout pipe is shrunk to one page so that it cannot run far ahead of the step at
which this script decides to kill it. Prints PASS, or FAIL with the reason (exit 1).
"""
import argparse
import fcntl
import os
import random
import re
import signal
import subprocess
import sys

F_SETPIPE_SZ = 1031
STEP = re.compile(r"^step (\d+)/(\d+) loss ")
VALIDATION = re.compile(r"^validation after step (\d+)/")
RESUMED = re.compile(r"resuming from (\S+) \(step (\d+),")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def step_of(line):
    m = STEP.match(line) or VALIDATION.match(line)
    return int(m.group(1)) if m else None


def index_reference(lines):
    """(step, is_validation) -> line."""
    ref = {}
    for line in lines:
        s = step_of(line)
        if s is None:
            fail("unexpected reference line %r" % line)
        ref[(s, line.startswith("validation"))] = line
    return ref


def weights(d):
    out = {}
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as f:
            out[name] = f.read()
    return out


def run_until(cmd, kill_in, env):
    """Runs cmd; SIGKILLs it once it printed the line of the kill_in-th step after its first
    (None: never)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        fcntl.fcntl(p.stdout.fileno(), F_SETPIPE_SZ, 4096)
    except OSError:
        pass
    lines, killed, kill_after = [], False, None
    for raw in p.stdout:
        if not raw.endswith(b"\n"):
            break  # a torn last line of a killed run
        line = raw.decode().rstrip("\n")
        lines.append(line)
        if kill_in is not None and kill_after is None and step_of(line) is not None:
            kill_after = step_of(line) + kill_in - 1
        if kill_after is not None and not killed and step_of(line) == kill_after \
                and not line.startswith("validation"):
            p.send_signal(signal.SIGKILL)
            killed = True
            break
    p.stdout.close()
    err = p.stderr.read().decode()
    p.wait()
    return lines, err, p.returncode, killed, kill_after


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--kills", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--checkpoint-every", type=int, default=7)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    env = dict(os.environ)
    rng = random.Random(a.seed)
    wd = a.workdir

    ref = subprocess.run(cmd + ["--save-weights", os.path.join(wd, "ref-weights")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if ref.returncode != 0:
        fail("reference run exited %d: %s" % (ref.returncode, ref.stderr))
    ref_lines = ref.stdout.splitlines()
    reference = index_reference(ref_lines)
    total = max(s for s, _ in reference)

    ckpt = ["--checkpoint", os.path.join(wd, "ckpt"), "--checkpoint-every",
            str(a.checkpoint_every), "--keep", "2", "--resume",
            "--save-weights", os.path.join(wd, "weights")]
    resumed_at, kill_steps = 0, []
    for attempt in range(a.kills + 1):
        last = attempt == a.kills
        # Kill somewhere in the next stretch, never past the end.
        kill_in = None if last else rng.randint(2, 5 * a.checkpoint_every)
        lines, err, rc, killed, kill_after = run_until(cmd + ckpt, kill_in, env)
        m = RESUMED.search(err)
        start = int(m.group(2)) if m else 0
        if attempt > 0 and not m:
            fail("run %d did not resume from a checkpoint: %s" % (attempt, err))
        if start < resumed_at:
            fail("run %d resumed from step %d, before the previous resume point %d"
                 % (attempt, start, resumed_at))
        if not last:
            if not killed or rc != -signal.SIGKILL:
                fail("run %d was not killed at step %s (exit %s)" % (attempt, kill_after, rc))
            kill_steps.append(kill_after)
        elif rc != 0:
            fail("the last run exited %d: %s" % (rc, err))
        expected_first = start + 1
        for line in lines:
            s = step_of(line)
            key = (s, line.startswith("validation"))
            if key not in reference:
                fail("run %d printed %r, which the reference does not have" % (attempt, line))
            if reference[key] != line:
                fail("run %d step %d differs: %r vs reference %r" % (attempt, s, line, reference[key]))
        first = [step_of(l) for l in lines if not l.startswith("validation")]
        if first and first[0] != expected_first:
            fail("run %d resumed at step %d but printed step %d first" % (attempt, start, first[0]))
        if last:
            after = [l for l in ref_lines if step_of(l) > start]
            if lines != after:
                fail("the last run's %d lines after step %d are not the reference's %d"
                     % (len(lines), start, len(after)))
        resumed_at = start

    if weights(os.path.join(wd, "weights")) != weights(os.path.join(wd, "ref-weights")):
        fail("final weights differ from the uninterrupted run")
    if len(set(kill_steps)) != len(kill_steps):
        fail("two kills at the same step: %s" % kill_steps)
    print("killed after steps %s; last resume from step %d of %d" % (kill_steps, resumed_at, total))
    print("PASS")


if __name__ == "__main__":
    main()
