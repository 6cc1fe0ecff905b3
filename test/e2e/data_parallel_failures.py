"""Failures of a data-parallel run (issue #8): no rank may hang when a peer is gone.

Compiles the MLP for 2 ranks, starts `mpirun -np 2` on a long run, waits until rank 0 has
printed step 20, then does one of:
  --kill  SIGKILL rank 1 (a crashed process): mpirun must end the job;
  --stop  SIGSTOP rank 1 (a hung process, still alive): rank 0's collective timeout must fire
          and abort the job with a message that names the stalled collective;
and checks that the job exits non-zero within --deadline seconds with the expected message.
Also checks the start-up refusal of a world size that does not match the binary (--wrong-size).
Prints PASS lines, or FAIL and exits 1.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np


def rank_pids(root):
    """Descendant pids of `root` and their OMPI_COMM_WORLD_RANK."""
    found, frontier = {}, [root]
    while frontier:
        pid = frontier.pop()
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                children = [int(c) for c in f.read().split()]
        except OSError:
            children = []
        for child in children:
            frontier.append(child)
            try:
                with open("/proc/%d/environ" % child, "rb") as f:
                    env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
            except OSError:
                continue
            if b"OMPI_COMM_WORLD_RANK" in env:
                found[int(env[b"OMPI_COMM_WORLD_RANK"])] = child
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphc", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--deadline", type=float, default=60.0)
    ap.add_argument("--mode", choices=["kill", "stop", "wrong-size"], required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    rng = np.random.default_rng(3)
    data, labels = os.path.join(a.workdir, "x.npy"), os.path.join(a.workdir, "y.npy")
    np.save(data, rng.standard_normal((64, 10)).astype(np.float32))
    np.save(labels, rng.integers(0, 10, 64).astype(np.int64))
    binary = os.path.join(a.workdir, "dp2")
    subprocess.run([a.graphc, os.path.join(a.src, "examples", "mlp.onnx"), "--batch=32",
                    "--data-parallel", "--world-size=2", "--quiet", "-o", binary], check=True)
    args = ["--data", data, "--labels", labels]

    if a.mode == "wrong-size":
        done = subprocess.run([a.mpirun, "-np", "3", binary] + args + ["--steps", "2"],
                              capture_output=True, text=True, timeout=a.deadline)
        text = done.stdout + done.stderr
        want = "this binary trains a global batch of 32 on 2 ranks (16 per rank) and was started on 3"
        if done.returncode == 0 or want not in text:
            sys.exit("FAIL: 3 ranks for a 2-rank binary: exit %d\n%s" % (done.returncode, text))
        print("PASS: 3 ranks for a 2-rank binary are refused at start-up: " + want)
        return

    log = open(os.path.join(a.workdir, a.mode + ".log"), "w+")
    job = subprocess.Popen([a.mpirun, "-np", "2", binary] + args +
                           ["--steps", "1000000", "--collective-timeout", "3"],
                           stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
    try:
        for line in job.stdout:  # rank 0's lines; wait until training is under way
            if line.startswith("step 20/"):
                break
        else:
            sys.exit("FAIL: the job ended before step 20")
        pids = rank_pids(job.pid)
        if 1 not in pids:
            sys.exit("FAIL: cannot find rank 1 among mpirun's processes: %s" % pids)
        start = time.monotonic()
        os.kill(pids[1], signal.SIGKILL if a.mode == "kill" else signal.SIGSTOP)
        for _ in job.stdout:  # drain until mpirun closes it
            pass
        try:
            code = job.wait(timeout=a.deadline)
        except subprocess.TimeoutExpired:
            sys.exit("FAIL: the job still runs %.0f s after rank 1 was %s" %
                     (a.deadline, "killed" if a.mode == "kill" else "stopped"))
        took = time.monotonic() - start
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
    log.seek(0)
    text = log.read()
    if a.mode == "kill":
        want = "exited on signal 9"  # mpirun's report of the crashed rank
    else:
        # Rank 1 stops wherever SIGSTOP finds it: rank 0 then waits in the next collective,
        # a gradient bucket's all-reduce or the one that averages the step's loss.
        want = "error: rank 0 of 2: the all-reduce of "
        found = re.search(r"error: rank 0 of 2: the all-reduce of (gradient bucket \d+|the "
                          r"step's loss) at step \d+", text)
        if found:
            want = found.group(0)
    if code == 0 or want not in text or (a.mode == "stop" and not found):
        sys.exit("FAIL: exit %d after %.1f s, expected a message with '%s':\n%s" %
                 (code, took, want, text))
    if a.mode == "stop" and "collective timeout 3 s): a rank has died or hangs" not in text:
        sys.exit("FAIL: the timeout message does not say why:\n" + text)
    print("PASS: rank 1 %s: the job exited %d within %.0f s (deadline %.0f s), reporting '%s'" %
          ("killed" if a.mode == "kill" else "hung", code, min(took, a.deadline), a.deadline,
           want))


if __name__ == "__main__":
    main()
