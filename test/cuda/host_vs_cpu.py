#!/usr/bin/env python3
"""The CUDA target's generated step, built for the host, against the CPU target.

  host_vs_cpu.py --model M.onnx|M.mlir --graphc PATH --src SRC --lib LIBDIR --workdir DIR
                 [--loss L] [--optimizer O] [--lr F] [--steps N] [--tol 1e-5] [--cxx c++]
                 [--build=host|gpu] [--batch N] [--classes 10] [--ignore-label N] [--ids V]
                 [--ranks N --mpirun PATH [--mpi-libs 'a;b'] [--ref-ranks M] [--ref-target cpu|cuda]]
                 [--graphc-flag F]... [--tested-flag F]...

1. graphc --target=cuda --compile-to=source writes DIR/step.cu (and DIR/step.cu.weights.bin);
2. the host compiler builds it with -DGRAPHC_HOST_SHIM: the generated kernels (fused elementwise
   chains, reductions, loss, pooling backward, optimizer updates) run through the host shim, and
   the cuBLAS/cuDNN calls become the CPU runtime's kernels; linked with the CPU main() and
   runtime/cuda/host_main.cpp (graphc_program from the embedded FlatBuffers descriptor);
3. graphc --target=cpu builds DIR/cpu with the same flags;
4. both train N steps on the same fixed random data (.npy written here, no numpy needed) and save
   their weights; every per-step loss and every weight tensor must agree within --tol relative
   error (max|a-b| / max(max|b|, 1e-12)).

With --build=gpu (on a machine with a GPU) step 1-2 are replaced by graphc --target=cuda -o DIR/gpu:
the real CUDA binary, cuBLAS/cuDNN included, is compared with the CPU target instead.

--stage splits a --build=gpu check between two machines: `prepare` (where graphc is) builds
both binaries, writes the data and runs the CPU reference, saving its losses in DIR/ref.txt and
its weights in DIR/w-cpu; `compare` (on the GPU machine, no graphc needed) runs DIR/gpu and
compares it with them (bench/gpu_checks.py). The default, `all`, does both in one go.

With --ranks N the tested step is compiled with --data-parallel --world-size=N and runs under
`mpirun -np N`; its host build links the CPU target's MPI backend (libgraphc_runtime_mpi.a and
--mpi-libs), which graphc/runtime/cuda/comm_nccl.h maps the NCCL all-reduce calls to. The
reference is --ref-target (default the CPU target) on --ref-ranks ranks (default N; 0: one
process without --data-parallel), on the same global batches.

Prints one line per compared quantity that fails, a summary and PASS or FAIL (exit 1).
"""

import argparse
import os
import random
import re
import shutil
import struct
import subprocess
import sys

sys.dont_write_bytecode = True


def write_npy(path, shape, dtype, values):
    """Writes a C-order little-endian .npy (format 1.0) of '<f4' or '<i8' values."""
    descr = {"f4": "<f4", "i8": "<i8"}[dtype]
    shape_text = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_text)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%d%s" % (len(values), "f" if dtype == "f4" else "q"), *values))


def read_npy_f32(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(path + ": not a .npy file")
    major = data[6]
    if major == 1:
        hlen = struct.unpack("<H", data[8:10])[0]
        start = 10 + hlen
    else:
        hlen = struct.unpack("<I", data[8:12])[0]
        start = 12 + hlen
    header = data[start - hlen:start].decode("latin1")
    if "'<f4'" not in header:
        raise ValueError(path + ": expected float32, header " + header)
    count = (len(data) - start) // 4
    return struct.unpack("<%df" % count, data[start:start + 4 * count])


def rel_err(a, b):
    if len(a) != len(b):
        return float("inf")
    ref = max([abs(x) for x in b] + [1e-12])
    return max([abs(x - y) for x, y in zip(a, b)] + [0.0]) / ref


def run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if res.returncode != 0:
        print("FAIL: %s exited %d\n%s%s" % (" ".join(cmd), res.returncode, res.stdout, res.stderr))
        sys.exit(1)
    return res.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--graphc", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--loss", default="sparse_categorical_crossentropy")
    ap.add_argument("--optimizer", default="sgd")
    ap.add_argument("--lr", default="0.01")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--cxx", default=os.environ.get("GRAPHC_CXX", "c++"))
    ap.add_argument("--build", choices=("host", "gpu"), default="host")
    ap.add_argument("--stage", choices=("all", "prepare", "compare"), default="all",
                    help="prepare: build and run the reference only; compare: run the prebuilt "
                    "tested binary against the saved reference (--build=gpu)")
    ap.add_argument("--batch", type=int, help="graphc --batch (models with a None batch, e.g. Keras)")
    ap.add_argument("--classes", type=int, default=10, help="classes of sparse labels")
    ap.add_argument("--ignore-label", type=int, metavar="N",
                    help="every third sparse label is N (pass --graphc-flag=--ignore-index=N)")
    ap.add_argument("--label-scale", type=float, default=1.0,
                    help="regression labels are uniform in [0, LABEL_SCALE)")
    ap.add_argument("--repeat-batch", action="store_true",
                    help="every step trains the first batch again (and the report counts the "
                         "leading steps whose loss repeats: updates skipped by loss scaling)")
    ap.add_argument("--ids", type=int, help="data are token ids in [0, IDS) (embedding models)")
    ap.add_argument("--binary-inputs", default="",
                    help="comma-separated data inputs drawn from {0, 1} (attention masks)")
    ap.add_argument("--ranks", type=int, default=0, help="--data-parallel --world-size of the tested step")
    ap.add_argument("--ref-ranks", type=int, help="the reference's world size (0: one process)")
    ap.add_argument("--ref-target", choices=("cpu", "cuda", "host"), default="cpu",
                    help="host: the reference is the tested host build itself in the default "
                    "launch order (with --launch-order=reverse and --tol 0: a race check)")
    ap.add_argument("--launch-order", choices=("forward", "reverse"), default="forward",
                    help="the host shim's order of blocks and threads for the tested run "
                    "(GRAPHC_HOST_SHIM_LAUNCH_ORDER)")
    ap.add_argument("--poison-arena", action="store_true",
                    help="the tested run sets the arena's scratch bytes to NaN before every step "
                    "(GRAPHC_POISON_ARENA=1): a read of a byte the step did not write shows")
    ap.add_argument("--tested-env", action="append", default=[], metavar="KEY=VALUE",
                    help="an environment variable of the tested run only (e.g. "
                    "GRAPHC_CUDA_CONV_CHUNK=2 on a GPU: the convolutions split over the batch)")
    ap.add_argument("--mpirun", default="mpiexec")
    ap.add_argument("--mpi-libs", default="", help="';'-separated MPI libraries for the host build")
    ap.add_argument("--graphc-flag", action="append", default=[],
                    help="another graphc flag for both builds, e.g. --graphc-flag=--bucket-size=4KiB")
    ap.add_argument("--tested-flag", action="append", default=[],
                    help="a graphc flag for the tested build only (a negative control, e.g. "
                    "--tested-flag=--seed=7: other dropout masks must make the comparison fail)")
    args = ap.parse_args()

    work = args.workdir
    if args.stage != "all" and args.build != "gpu":
        ap.error("--stage=%s needs --build=gpu" % args.stage)
    if args.stage != "compare":
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    flags = ["--loss=" + args.loss, "--optimizer=" + args.optimizer, "--lr=" + args.lr, "--quiet"]
    flags += args.graphc_flag
    if args.batch:
        flags.append("--batch=%d" % args.batch)
    ref_ranks = args.ranks if args.ref_ranks is None else args.ref_ranks

    def parallel(ranks):
        return ["--data-parallel", "--world-size=%d" % ranks] if ranks else []

    def launch(ranks):
        return [args.mpirun, "-np", str(ranks)] if ranks else []

    if args.build == "gpu":
        host = os.path.join(work, "gpu")
        if args.stage != "compare":
            run([args.graphc, args.model, "--target=cuda", "-o", host] + flags + args.tested_flag
                + parallel(args.ranks))
    else:
        source = os.path.join(work, "step.cu")
        run([args.graphc, args.model, "--target=cuda", "--compile-to=source", "-o", source] + flags
            + args.tested_flag + parallel(args.ranks))
        mpi = []
        if args.ranks:
            mpi = [os.path.join(args.lib, "libgraphc_runtime_mpi.a")] + [
                l for l in args.mpi_libs.split(";") if l]
        host = os.path.join(work, "host")
        rt = os.path.join(args.src, "runtime")
        lib = args.lib
        run([args.cxx, "-O2", "-std=c++17", "-x", "c++", "-DGRAPHC_HOST_SHIM",
             "-I" + os.path.join(rt, "include"), "-I" + os.path.join(rt, "cuda", "include"), source,
             "-x", "none", os.path.join(lib, "libgraphc_runtime_main.a"),
             os.path.join(lib, "libgraphc_cuda_host_main.a"),
             os.path.join(lib, "libgraphc_cuda_common.a"), os.path.join(lib, "libgraphc_runtime.a")]
            + mpi + ["-lopenblas", "-lpthread", "-lm", "-o", host])
    cpu = os.path.join(work, "cpu")
    if args.ref_target == "host":
        if args.build != "host":
            ap.error("--ref-target=host needs --build=host")
        cpu = host
    elif args.stage != "compare":
        run([args.graphc, args.model, "-o", cpu] + flags + parallel(ref_ranks)
            + (["--target=cuda"] if args.ref_target == "cuda" else []))
    if args.stage == "compare":
        compare(args, work, host)
        return

    # The tensor table (from the descriptor) gives the data and label shapes.
    # Several data inputs (input_ids, attention_mask) are listed in --data order.
    shapes, data_inputs = {}, []
    described = cpu if args.stage == "prepare" else host
    for line in run([described, "--describe"]).splitlines():
        m = re.match(r"(\S+)\s+\S+\s+(data|labels|sample_weights)\s+(\S+)\s+\[([0-9,]*)\]",
                     line)
        if m:
            shapes[m.group(2)] = (m.group(3), [int(d) for d in m.group(4).split(",") if d])
            if m.group(2) == "data":
                data_inputs.append((m.group(1), shapes["data"][1]))
    batch = shapes["data"][1][0] * max(args.ranks, 1)  # the global batch
    samples = batch * args.steps
    rng = random.Random(20260101)

    def numel(dims):
        n = 1
        for d in dims:
            n *= d
        return n

    # With --repeat-batch the values of one batch are drawn and repeated for every step.
    drawn = batch if args.repeat_batch else samples
    repeats = samples // drawn

    binary = set(filter(None, args.binary_inputs.split(",")))
    for i, (name, dims) in enumerate(data_inputs):
        xshape = [samples] + dims[1:]
        write_npy(os.path.join(work, "x%s.npy" % (i or "")), xshape, "f4",
                  [float(rng.randrange(2)) if name in binary else
                   float(rng.randrange(args.ids)) if args.ids else rng.gauss(0.0, 1.0)
                   for _ in range(numel([drawn] + xshape[1:]))] * repeats)

    ltype, ldims = shapes["labels"]
    yshape = [samples] + ldims[1:]
    ycount = numel([drawn] + yshape[1:])
    if ltype == "int64":
        classes = args.classes
        labels = [rng.randrange(classes) for _ in range(ycount)]
        if args.ignore_label is not None:  # every third: a batch of 2 or more keeps some
            labels = [args.ignore_label if i % 3 == 2 else v for i, v in enumerate(labels)]
        write_npy(os.path.join(work, "y.npy"), yshape, "i8", labels * repeats)
    elif args.loss == "binary_crossentropy":
        write_npy(os.path.join(work, "y.npy"), yshape, "f4",
                  [float(rng.randrange(2)) for _ in range(ycount)] * repeats)
    else:
        write_npy(os.path.join(work, "y.npy"), yshape, "f4",
                  [rng.random() * args.label_scale for _ in range(ycount)] * repeats)

    if "sample_weights" in shapes:
        # graphc --sample-weights: weights in [0, 2), every fifth 0 (a sample, or with
        # --temporal-sample-weights a position, that counts for nothing), fed to both binaries
        # by train().
        wdims = shapes["sample_weights"][1][1:]
        write_npy(os.path.join(work, "sample_weights.npy"), [samples] + wdims, "f4",
                  [0.0 if i % 5 == 4 else 2.0 * rng.random()
                   for i in range(numel([drawn] + wdims))] * repeats)

    outs = {}
    tested_env = dict(os.environ, GRAPHC_HOST_SHIM_LAUNCH_ORDER=args.launch_order,
                      GRAPHC_POISON_ARENA="1" if args.poison_arena else "0")
    for setting in args.tested_env:
        key, sep, value = setting.partition("=")
        if not sep or not key:
            sys.exit("--tested-env=%s: expected KEY=VALUE" % setting)
        tested_env[key] = value
    ref_env = dict(os.environ, GRAPHC_HOST_SHIM_LAUNCH_ORDER="forward", GRAPHC_POISON_ARENA="0")
    runs = (("host", host, args.ranks, tested_env), ("cpu", cpu, ref_ranks, ref_env))
    if args.stage == "prepare":
        if args.ref_target == "cuda":  # the reference needs the GPU too: compare runs it
            print("prepared %s: the CUDA reference runs with the tested binary" % work)
            return
        runs = runs[1:]
    for name, binary, ranks, env in runs:
        outs[name] = train(args, work, name, launch(ranks) + [binary], env)
    if args.stage == "prepare":
        with open(os.path.join(work, "ref.txt"), "w") as f:
            f.write("".join("%.9g\n" % loss for loss in outs["cpu"][0]))
        print("prepared %s: reference of %d losses and %d weight tensors"
              % (work, len(outs["cpu"][0]), len(outs["cpu"][1])))
        return
    report(args, outs)


def train(args, work, name, command, env=None):
    """Runs a binary on DIR/x.npy (DIR/x1.npy ... for more data inputs), DIR/y.npy (and
    DIR/sample_weights.npy when there is one); returns
    (per-step losses, {file: weights})."""
    wdir = os.path.join(work, "w-" + name)
    data, i = ["--data", os.path.join(work, "x.npy")], 1
    while os.path.exists(os.path.join(work, "x%d.npy" % i)):
        data += ["--data", os.path.join(work, "x%d.npy" % i)]
        i += 1
    weighted = os.path.join(work, "sample_weights.npy")
    if os.path.exists(weighted):
        data += ["--sample-weights", weighted]
    text = run(command + data + ["--labels", os.path.join(work, "y.npy"), "--steps", str(args.steps),
                          "--save-weights", wdir], env=env)
    losses = [float(m.group(1)) for m in re.finditer(r"loss (\S+)", text)]
    weights = {f: read_npy_f32(os.path.join(wdir, f)) for f in sorted(os.listdir(wdir))}
    return losses, weights


def compare(args, work, host):
    """--stage=compare: the prebuilt tested binary against the saved reference."""
    def launch(ranks):
        return [args.mpirun, "-np", str(ranks)] if ranks else []

    if os.path.exists(os.path.join(work, "ref.txt")):
        with open(os.path.join(work, "ref.txt")) as f:
            losses = [float(line) for line in f if line.strip()]
        wdir = os.path.join(work, "w-cpu")
        weights = {f: read_npy_f32(os.path.join(wdir, f)) for f in sorted(os.listdir(wdir))}
        reference = (losses, weights)
    else:  # a CUDA reference (--ref-target=cuda), prepared but not run
        ref_ranks = args.ranks if args.ref_ranks is None else args.ref_ranks
        reference = train(args, work, "cpu", launch(ref_ranks) + [os.path.join(work, "cpu")])
    report(args, {"host": train(args, work, "host", launch(args.ranks) + [host]),
                  "cpu": reference})


def report(args, outs):
    """Compares the tested run with the reference; prints PASS or FAIL and exits."""
    failed = 0
    worst = 0.0
    hl, hw = outs["host"]
    cl, cw = outs["cpu"]
    if len(hl) != args.steps or len(cl) != args.steps:
        print("FAIL: expected %d losses, got %d (host) and %d (cpu)" % (args.steps, len(hl), len(cl)))
        sys.exit(1)
    for t, (a, b) in enumerate(zip(hl, cl), 1):
        e = rel_err([a], [b])
        worst = max(worst, e)
        if not e <= args.tol:
            failed += 1
            print("loss of step %d: host %.9g cpu %.9g (relative error %.3g)" % (t, a, b, e))
    if sorted(hw) != sorted(cw):
        print("FAIL: weight files differ: %s vs %s" % (sorted(hw), sorted(cw)))
        sys.exit(1)
    for name in sorted(cw):
        e = rel_err(hw[name], cw[name])
        worst = max(worst, e)
        if not e <= args.tol:
            failed += 1
            print("weight %s: relative error %.3g" % (name, e))
    print("compared %d losses and %d weight tensors; worst relative error %.3g (tolerance %g)"
          % (len(cl), len(cw), worst, args.tol))
    if args.repeat_batch:  # step t's loss is computed before its update
        same = next((i for i, l in enumerate(hl) if l != hl[0]), len(hl))
        print("host: the first %d losses repeat (%d updates skipped), then %s"
              % (same, max(same - 1, 0), "the loss moves" if same < len(hl) else "no update"))
    print("PASS" if failed == 0 else "FAIL")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
