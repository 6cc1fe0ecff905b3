#!/usr/bin/python3
"""The planner on real training graphs (issue #4): PyTorch models -> ONNX -> graphc plans.

For every model below it exports the model from PyTorch to ONNX in training mode
(torch.onnx.export(..., training=TrainingMode.TRAINING, do_constant_folding=False,
opset_version=13); fixed seeds), then, one model at a time:

  1. graphc M.onnx --compile-to=planned --optimizer=adam --loss=L --batch=B -o /dev/null
         --plan-out=M.json --plan-out=M.csv          graphc's plan (scheduled, in place, searched)
  2. the same with --no-schedule                       the lower bound before op scheduling
  3. the same with --no-reuse                          baseline (a): every buffer its own bytes
  4. graphc-plan --input=M.csv --alignment=256 --order=size
                                                       baseline (b): greedy best fit by size
                                                       (TFLite order) on graphc's own buffers
  5. graphc-plan --input=M.csv --alignment=256         graphc's planner alone at graphc-plan's
                                                       default settings (--time-limit=10), timed
  6. graphc-plan --verify=M.json                       the independent verifier on graphc's plan

and prints one Markdown table. The CSV is the problem graphc planned (after scheduling and
in-place merging), so (b), (c) and step 5 solve the same buffers with the same lower bound;
step 5 runs --repeat times and the median of graphc-plan's time_ms (planning only, not reading
the CSV) is reported. Then every CSV with at least --tile-min buffers is tiled in time (copies
one after the other, ids and steps shifted) to at least --tile-to buffers and solved the same
way, for the planning time at 10k buffers. Models that
graphc cannot import are reported with the error line graphc printed, and their ONNX op types
that docs/supported-ops.md does not list. Everything is written to --work/results.json too.
Usage:

  /usr/bin/python3 bench/training_graphs.py [--graphc build/bin/graphc]
      [--graphc-plan build/bin/graphc-plan] [--work DIR] [--models a,b,...] [--timeout S]
      [--repeat N] [--tile-to BUFFERS]
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time

import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

OPSET = 13
warnings.filterwarnings("ignore")  # the exporter warns once per BatchNorm (num_batches_tracked)
MIB = 1024.0 * 1024.0


# ---------------------------------------------------------------------------------------------
# Models. Classifiers end in Softmax (graphc folds it into the loss), the binary one in Sigmoid.
# ---------------------------------------------------------------------------------------------

class Head(nn.Module):
    def __init__(self, net, sigmoid=False):
        super().__init__()
        self.net = net
        self.sigmoid = sigmoid

    def forward(self, x):
        x = self.net(x)
        return torch.sigmoid(x) if self.sigmoid else torch.softmax(x, dim=1)


def cnn28():
    # 28x28x3 Conv32-Pool-Dense10 (Keras defaults: 3x3 valid convolution, ReLU, 2x2 max pool).
    return Head(nn.Sequential(nn.Conv2d(3, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(32 * 13 * 13, 10)))


def cnn64():
    # 64x64x3 Conv64-Pool-Conv128-Pool-Dense256-Dense10.
    return Head(nn.Sequential(nn.Conv2d(3, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(64, 128, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(128 * 14 * 14, 256), nn.ReLU(), nn.Linear(256, 10)))


def cnn256():
    # 256x256x3 Conv32-Pool-Conv64-Pool-Dense1 (sigmoid, binary crossentropy).
    return Head(nn.Sequential(nn.Conv2d(3, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(64 * 62 * 62, 1)), sigmoid=True)


def m5():
    # M5 (Dai et al. 2017), the 1-D CNN of raw-audio keyword spotting: 16000 samples (1 s at 16
    # kHz), Conv1d(1, 32, 80, stride 4) then three Conv1d 3, each BatchNorm, ReLU, MaxPool1d(4),
    # a global average, 35 classes (Speech Commands).
    def block(cin, cout, k, stride=1):
        return [nn.Conv1d(cin, cout, k, stride=stride), nn.BatchNorm1d(cout), nn.ReLU(),
                nn.MaxPool1d(4)]
    return Head(nn.Sequential(*block(1, 32, 80, 4), *block(32, 32, 3), *block(32, 64, 3),
                             *block(64, 64, 3), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
                             nn.Linear(64, 35)))


def c3d_small():
    # A small C3D-style video classifier on 16 frames of 56x56: Conv3d 3x3x3 (32, 64, 128
    # channels, padded) with ReLU, MaxPool3d (1, 2, 2) then 2, a global average, 10 classes.
    return Head(nn.Sequential(nn.Conv3d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool3d((1, 2, 2)),
                             nn.Conv3d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool3d(2),
                             nn.Conv3d(64, 128, 3, padding=1), nn.ReLU(),
                             nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(128, 10)))


def tv(name):
    def make():
        import torchvision
        return Head(getattr(torchvision.models, name)(weights=None))  # ImageNet: 1000 classes
    return make


class UNet(nn.Module):
    """The U-Net of Ronneberger et al. with padded convolutions and BatchNorm: `levels` down
    steps (4: channels 64..1024), ConvTranspose2d up-sampling, skip concatenations, a 1x1 head
    with a per-pixel softmax over `classes` channels, or one channel and a sigmoid. test/e2e
    trains a 2-level one against PyTorch. With `head = False` it returns the logits."""

    def __init__(self, classes=2, base=64, levels=4, sigmoid=False):
        super().__init__()

        def block(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(),
                                 nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())
        ch = [base * 2 ** i for i in range(levels + 1)]
        self.down = nn.ModuleList([block(3, ch[0])] +
                                  [block(ch[i], ch[i + 1]) for i in range(levels)])
        self.up = nn.ModuleList([nn.ConvTranspose2d(ch[i + 1], ch[i], 2, stride=2)
                                 for i in reversed(range(levels))])
        self.dec = nn.ModuleList([block(ch[i + 1], ch[i]) for i in reversed(range(levels))])
        self.out = nn.Conv2d(ch[0], 1 if sigmoid else classes, 1)
        self.sigmoid = sigmoid
        self.head = True

    def forward(self, x):
        skips = []
        for i, d in enumerate(self.down):
            x = d(x)
            if i < len(self.up):
                skips.append(x)
                x = F.max_pool2d(x, 2)
        for up, dec in zip(self.up, self.dec):
            x = dec(torch.cat([up(x), skips.pop()], dim=1))
        x = self.out(x)
        if not self.head:
            return x
        return torch.sigmoid(x) if self.sigmoid else torch.softmax(x, dim=1)


class Encoder(nn.Module):
    """6 post-norm Transformer encoder layers (d_model 512, 8 heads, FFN 2048, dropout 0.1) on
    pre-embedded inputs [B, 512, 512], mean over the sequence, Linear(512, 10)."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(512, 8, dim_feedforward=2048, dropout=0.1,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 6)
        self.fc = nn.Linear(512, 10)

    def forward(self, x):
        return torch.softmax(self.fc(self.encoder(x).mean(dim=1)), dim=1)


class LSTMClassifier(nn.Module):
    """Embedding(20000, 256) -> LSTM(256, 64) -> last hidden state -> Linear(64, 2) (issue #4)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20000, 256)
        self.lstm = nn.LSTM(256, 64, batch_first=True)
        self.fc = nn.Linear(64, 2)

    def forward(self, tokens):
        _, (h, _) = self.lstm(self.emb(tokens))
        return torch.softmax(self.fc(h[-1]), dim=1)


SCE, BCE = "sparse_categorical_crossentropy", "binary_crossentropy"
# name, description, builder, input shape (without the batch), batch, loss, integer input, extra
# (extra: not in issue #4's list; resnet152 is the largest graph graphc imports, for the time
# per 10k buffers).
MODELS = [
    ("cnn28", "28x28x3 Conv32-Pool-Dense10", cnn28, (3, 28, 28), 256, SCE, False, False),
    ("cnn64", "64x64x3 Conv64-Pool-Conv128-Pool-Dense256-Dense10", cnn64, (3, 64, 64), 64, SCE,
     False, False),
    ("cnn256", "256x256x3 Conv32-Pool-Conv64-Pool-Dense1", cnn256, (3, 256, 256), 128, BCE,
     False, False),
    ("resnet18", "torchvision resnet18, 224x224", tv("resnet18"), (3, 224, 224), 32, SCE, False,
     False),
    ("resnet50", "torchvision resnet50, 224x224", tv("resnet50"), (3, 224, 224), 32, SCE, False,
     False),
    ("vgg16", "torchvision vgg16, 224x224", tv("vgg16"), (3, 224, 224), 16, SCE, False, False),
    ("mobilenet_v2", "torchvision mobilenet_v2, 224x224", tv("mobilenet_v2"), (3, 224, 224), 32,
     SCE, False, False),
    # Per-pixel binary segmentation (one output channel, sigmoid): graphc's sparse categorical
    # loss takes [batch, classes] predictions, not [batch, classes, H, W].
    ("unet", "U-Net, 256x256", lambda: UNet(sigmoid=True), (3, 256, 256), 8, BCE, False, False),
    ("transformer", "6-layer Transformer encoder, d_model 512, 8 heads, seq 512", Encoder,
     (512, 512), 8, SCE, False, False),
    ("lstm", "Embedding 20000x256 + LSTM 64 classifier, seq 128", LSTMClassifier, (128,), 32, SCE, True, False),
    ("resnet152", "torchvision resnet152, 224x224", tv("resnet152"), (3, 224, 224), 32, SCE,
     False, True),
    ("m5", "M5 1-D audio CNN, 16000 samples", m5, (1, 16000), 32, SCE, False, True),
    ("c3d", "C3D-style 3-D CNN, 16 frames of 56x56", c3d_small, (3, 16, 56, 56), 4, SCE, False,
     True),
]


def export(name, build, shape, batch, integer, path):
    """Exports the model in training mode; returns None or the exporter's error line."""
    torch.manual_seed(0)
    model = build()
    model.train()
    dummy = (torch.zeros((batch,) + shape, dtype=torch.int64) if integer
             else torch.zeros((batch,) + shape))
    try:
        with torch.no_grad():
            torch.onnx.export(model, dummy, path, export_params=True, do_constant_folding=False,
                              training=torch.onnx.TrainingMode.TRAINING, opset_version=OPSET,
                              input_names=["input"], output_names=["output"])
    except Exception as e:  # noqa: BLE001 - reported in the table
        return "%s: %s" % (type(e).__name__, str(e).splitlines()[0])
    return None


# ---------------------------------------------------------------------------------------------
# Running the tools.
# ---------------------------------------------------------------------------------------------

PLAN_SUMMARY = re.compile(
    r"buffers=(\d+) lower_bound=(\d+) height=(\d+) capacity=\S+ fit=(?:yes|no) "
    r"time_ms=([0-9.]+)")
SCHEDULE = re.compile(r"schedule\s+lower bound (.*) before reordering, (.*) after")


def bench_parser(doc, work):
    """The argument parser every benchmark script starts from: its docstring's first line,
    --graphc (default: the build tree's) and --work (default `work`)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--graphc", default=os.path.join(root, "build", "bin", "graphc"))
    ap.add_argument("--work", default=work)
    return ap


def cpu_timing_parser(doc, work, seq):
    """bench_parser plus the shape and timing options of the CPU step-time benchmarks of token
    models (lm_step_time.py, masked_attention.py): 2 layers of width 256 with 4 heads, `seq`
    tokens from a 2000-word vocabulary, batch 8, --rounds alternated rounds of --steps steps
    after --warmup."""
    ap = bench_parser(doc, work)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=seq)
    ap.add_argument("--vocab", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    return ap


def language_model_parser(doc, work, vocab):
    """bench_parser plus the shape and plan options of the language-model benchmarks
    (causal_lm_memory.py, llama_memory.py): GPT-2 small's depth, width, heads and sequence,
    `vocab` words, Adam at --batch on --device, --max-batch within --budget."""
    ap = bench_parser(doc, work)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--width", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=vocab)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--device", default="h100")
    ap.add_argument("--budget", default="80GB")
    ap.add_argument("--max-batch", action="store_true")
    return ap


def export_language_model(model, path, seq):
    """Exports `model` (token ids [batch, seq] in) to ONNX at `path` as the language-model
    benchmarks need it: training mode, parameters as initializers, no constant folding, a
    dynamic batch axis (graphc's --batch sets it)."""
    start = time.monotonic()
    with torch.no_grad():
        torch.onnx.export(model, torch.zeros((2, seq), dtype=torch.int64), path,
                          export_params=True, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.TRAINING, opset_version=13,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    print("exported %s in %.0f s" % (path, time.monotonic() - start), file=sys.stderr)


PLAN_ARENA = re.compile(r"arena +\S+ \S+ \((\d+) bytes")
PLAN_ACTIVATION = re.compile(r"^ +activation +(\S+ \S+)$", re.M)
PLAN_PREDICTED = re.compile(r"predicted ([0-9.]+) ms/step")


def plan_summary(text, rc):
    """(arena in GiB, activation bytes, predicted step) as table cells, from the fit report of
    `graphc --compile-to=planned` (its output `text`, exit status `rc`)."""
    arena, activation = PLAN_ARENA.search(text), PLAN_ACTIVATION.search(text)
    predicted = PLAN_PREDICTED.search(text)
    return ("%.2f GiB" % (int(arena.group(1)) / 2**30) if arena else "exit %s" % rc,
            activation.group(1) if activation else "",
            predicted.group(1) + " ms" if predicted else "")


def run(args, timeout, env=None):
    """Runs a command (with `env` added to the environment); returns (exit status, stdout,
    stderr, wall seconds). Timeout: status None."""
    start = time.monotonic()
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, **env) if env else None)
        return p.returncode, p.stdout, p.stderr, time.monotonic() - start
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % timeout, time.monotonic() - start


def error_line(stdout, stderr):
    """The first 'error' line graphc printed (else the last line)."""
    lines = [l.strip() for l in (stderr + "\n" + stdout).splitlines() if l.strip()]
    for l in lines:
        if "error" in l:
            return l
    return lines[-1] if lines else "(no output)"


def graphc(opts, onnx_path, batch, loss, extra, plan_json=None, plan_csv=None):
    args = [opts.graphc, onnx_path, "--compile-to=planned", "--optimizer=adam", "--loss=" + loss,
            "--batch=%d" % batch, "-o", "/dev/null"] + extra
    out = plan_json or onnx_path[:-5] + ".tmp.json"
    args.append("--plan-out=" + out)
    if plan_csv:
        args.append("--plan-out=" + plan_csv)
    rc, stdout, stderr, secs = run(args, opts.timeout)
    res = {"rc": rc, "report": stdout, "seconds": secs, "args": args}
    if rc != 0:
        res["error"] = error_line(stdout, stderr)
        return res
    with open(out) as f:
        plan = json.load(f)
    res["arena"] = plan["arena_bytes"]
    res["lower"] = plan["lower_bound_bytes"]
    res["buffers"] = len(plan["buffers"])
    res["steps"] = len(plan["steps"])
    m = SCHEDULE.search(stdout)
    res["schedule_line"] = m.group(0) if m else None
    if not plan_json:
        os.remove(out)
    return res


def missing_ops(onnx_path):
    """{op type: count} of the model's ONNX nodes whose type is not in docs/supported-ops.md
    (graphc also refuses some listed ops in some forms, e.g. a MatMul of two activations or a
    Gather that is not shape arithmetic, so this is a lower bound on what is missing)."""
    import onnx
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    supported = set()
    with open(os.path.join(root, "docs", "supported-ops.md")) as f:
        for line in f:
            m = re.match(r"\| ([A-Za-z, ]+) \| ", line)
            if m and m.group(1) != "ONNX op":
                supported.update(x.strip() for x in m.group(1).split(","))
    counts = {}
    for node in onnx.load(onnx_path, load_external_data=False).graph.node:
        if node.op_type not in supported:
            counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return dict(sorted(counts.items()))


def graphc_plan(opts, args):
    rc, stdout, stderr, secs = run([opts.graphc_plan] + args, opts.timeout)
    m = PLAN_SUMMARY.search(stdout)
    if rc != 0 or not m:
        return {"error": error_line(stdout, stderr), "rc": rc}
    return {"buffers": int(m.group(1)), "lower": int(m.group(2)), "height": int(m.group(3)),
            "ms": float(m.group(4)), "wall": secs, "stdout": stdout.strip()}


def verify_csv(opts, path):
    rc, stdout, stderr, _ = run([opts.graphc_plan, "--verify=" + path, "--alignment=256"],
                                opts.timeout)
    return "yes" if rc == 0 else "NO: " + error_line(stdout, stderr)


def solve(opts, csv, base):
    """Baseline (b) and the planner alone on one problem CSV, each solution verified."""
    common = ["--input=" + csv, "--alignment=256"]
    size = graphc_plan(opts, common + ["--order=size", "--output=" + base + ".size.csv"])
    if "error" not in size:
        size["verify"] = verify_csv(opts, base + ".size.csv")
    # The planner at its default settings, timed REPEAT times (median), the last with output.
    runs = [graphc_plan(opts, common + ["--search-stats"]) for _ in range(opts.repeat - 1)]
    runs.append(graphc_plan(opts, common + ["--search-stats", "--output=" + base + ".plan.csv"]))
    plan = runs[-1]
    if "error" not in plan:
        plan["verify"] = verify_csv(opts, base + ".plan.csv")
        times = sorted(x["ms"] for x in runs if "ms" in x)
        plan["ms_all"] = times
        plan["ms"] = times[len(times) // 2]
    return size, plan


def bench(opts, entry):
    name, desc, build, shape, batch, loss, integer, extra = entry
    r = {"name": name, "desc": desc, "batch": batch, "extra": extra}
    base = os.path.join(opts.work, name)
    onnx_path = base + ".onnx"
    t = time.monotonic()
    err = export(name, build, shape, batch, integer, onnx_path)
    r["export_s"] = time.monotonic() - t
    if err:
        r["error"] = "not exportable: " + err
        return r
    j, c = base + ".json", base + ".csv"
    g = graphc(opts, onnx_path, batch, loss, [], j, c)
    r["graphc"] = g
    if g["rc"] != 0:
        r["error"] = ("not importable yet: " + g["error"]) if g["rc"] is not None else g["error"]
        r["missing_ops"] = missing_ops(onnx_path)
        return r
    r["no_schedule"] = graphc(opts, onnx_path, batch, loss, ["--no-schedule"])
    r["no_reuse"] = graphc(opts, onnx_path, batch, loss, ["--no-reuse"])
    rc, stdout, stderr, _ = run([opts.graphc_plan, "--verify=" + j], opts.timeout)
    r["verify"] = "yes" if rc == 0 else "NO: " + error_line(stdout, stderr)
    r["size_fit"], r["plan"] = solve(opts, c, base)
    return r


def tile(src, copies, dst):
    """Writes `copies` copies of the problem in `src` one after the other in time (ids and steps
    shifted): a problem with copies x the buffers whose lower bound is the original's."""
    with open(src) as f:
        header = f.readline().strip().split(",")
        rows = [dict(zip(header, line.strip().split(","))) for line in f if line.strip()]
    span = max(int(x["upper"]) for x in rows)
    with open(dst, "w") as f:
        f.write("id,lower,upper,size\n")
        for k in range(copies):
            for i, x in enumerate(rows):
                f.write("%d,%d,%d,%s\n" % (k * len(rows) + i, int(x["lower"]) + k * span,
                                           int(x["upper"]) + k * span, x["size"]))
    return copies * len(rows)


# ---------------------------------------------------------------------------------------------
# The table.
# ---------------------------------------------------------------------------------------------

def mib(b):
    return "%.2f" % (b / MIB)


def per10k(ms, buffers):
    return ms * 10000.0 / buffers


def row(r):
    name = r["name"] + (" (extra)" if r["extra"] else "")
    if "error" in r:
        return "| %s | %d | %s |" % (name, r["batch"], r["error"].replace("|", "\\|"))
    g, ns, nr, sf, pl = r["graphc"], r["no_schedule"], r["no_reuse"], r["size_fit"], r["plan"]
    lb = g["lower"]
    a, b, c = nr.get("arena"), sf.get("height"), g["arena"]
    verified = [r["verify"], sf.get("verify", "-"), pl.get("verify", "-")]
    cells = [
        name, "%d" % r["batch"], "%d" % g["buffers"], "%d" % g["steps"],
        mib(ns["lower"]) if "lower" in ns else "err", mib(lb),
        mib(a) if a else "err", mib(b) if b else "err", mib(c),
        "%.3f" % (a / lb) if a else "-", "%.4f" % (b / lb) if b else "-", "%.4f" % (c / lb),
        "%.3f" % (c / a) if a else "-", "%.4f" % (c / b) if b else "-",
        "%.1f" % pl["ms"] if "ms" in pl else "err",
        "%.1f" % g["seconds"],
        "yes" if all(v == "yes" for v in verified) else "; ".join(verified).replace("|", "\\|"),
    ]
    return "| " + " | ".join(cells) + " |"


HEADER = ("| model | batch | buffers | steps | LB before scheduling MiB | LB MiB "
          "| (a) no reuse MiB | (b) best fit by size MiB | (c) graphc MiB "
          "| (a) / LB | (b) / LB | (c) / LB | (c) / (a) | (c) / (b) "
          "| plan ms | graphc compile s | verified |\n"
          "|---|" + "---:|" * 15 + "---|")


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphc", default=os.path.join(root, "build", "bin", "graphc"))
    ap.add_argument("--graphc-plan", default=os.path.join(root, "build", "bin", "graphc-plan"))
    ap.add_argument("--work", default=os.path.join(root, "out", "training_graphs"),
                    help="where the ONNX files, plans and results.json go")
    ap.add_argument("--models", default="", help="comma-separated subset (default: all)")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per command")
    ap.add_argument("--repeat", type=int, default=3,
                    help="graphc-plan runs per problem for the planning time (median)")
    ap.add_argument("--tile-to", type=int, default=10000,
                    help="also solve each large CSV tiled in time to at least this many buffers "
                         "(0: skip)")
    ap.add_argument("--tile-min", type=int, default=200,
                    help="tile only the graphs with at least this many buffers")
    opts = ap.parse_args()
    os.makedirs(opts.work, exist_ok=True)
    wanted = set(opts.models.split(",")) if opts.models else None
    results = []
    print(HEADER)
    sys.stdout.flush()
    for entry in MODELS:
        if wanted and entry[0] not in wanted:
            continue
        r = bench(opts, entry)
        results.append(r)
        print(row(r))
        sys.stdout.flush()
        with open(os.path.join(opts.work, "results.json"), "w") as f:
            json.dump(results, f, indent=1, default=str)

    ok = [r for r in results if "error" not in r]
    print()
    for label, rs in (("issue #4 models", [r for r in ok if not r["extra"]]), ("all", ok)):
        if not rs:
            continue
        c = [r["graphc"]["arena"] / r["graphc"]["lower"] for r in rs]
        b = [r["size_fit"]["height"] / r["graphc"]["lower"] for r in rs
             if "height" in r["size_fit"]]
        print("%s (%d planned): (c)/LB geometric mean %.4f, worst %.4f; (b)/LB geometric mean "
              "%.4f, worst %.4f" % (label, len(rs), geomean(c), max(c), geomean(b), max(b)))
    for r in results:
        if r.get("missing_ops"):
            print("%s: ONNX op types outside graphc's list: %s" % (
                r["name"], ", ".join("%s x%d" % kv for kv in r["missing_ops"].items())))
    for r in ok:
        print("%s: %s; plan ms %s; %s" % (
            r["name"], r["graphc"]["schedule_line"], r["plan"].get("ms_all"),
            r["plan"].get("stdout", r["plan"].get("error", "")).replace("\n", "; ")))

    # Time at 10k buffers: each graph with at least --tile-min buffers, tiled in time.
    tiled = []
    big = [r for r in ok if r["graphc"]["buffers"] >= opts.tile_min] if opts.tile_to else []
    if big:
        print()
        print("| graph tiled in time | copies | buffers | (b) / LB | (c) / LB | best-fit order "
              "| search | plan ms (median of %d) | ms per 10k buffers | verified |" % opts.repeat)
        print("|---|" + "---:|" * 4 + "---|---|" + "---:|" * 2 + "---|")
    for r in big:
        n = r["graphc"]["buffers"]
        copies = -(-opts.tile_to // n)
        base = os.path.join(opts.work, "%s-x%d" % (r["name"], copies))
        buffers = tile(os.path.join(opts.work, r["name"] + ".csv"), copies, base + ".csv")
        size, plan = solve(opts, base + ".csv", base)
        t = {"name": r["name"], "copies": copies, "buffers": buffers, "size_fit": size,
             "plan": plan}
        tiled.append(t)
        if "error" in size or "error" in plan:
            print("| %s | %d | %d | %s |" % (r["name"], copies, buffers,
                                              size.get("error", plan.get("error"))))
            continue
        stats = dict(kv.split("=") for kv in plan["stdout"].splitlines()[-1].split()[1:])
        verified = [size["verify"], plan["verify"]]
        print("| %s | %d | %d | %.4f | %.4f | %s | %s | %.1f | %.1f | %s |" % (
            r["name"], copies, buffers, size["height"] / plan["lower"],
            plan["height"] / plan["lower"], stats["heuristic"], stats["searched"], plan["ms"],
            per10k(plan["ms"], buffers),
            "yes" if all(v == "yes" for v in verified) else "; ".join(verified)))
        sys.stdout.flush()
    if tiled:
        t = [per10k(x["plan"]["ms"], x["buffers"]) for x in tiled if "ms" in x["plan"]]
        print()
        print("planner ms per 10k buffers (tiled graphs): worst %.1f; times %s" % (
            max(t), ", ".join("%s %s" % (x["name"], x["plan"].get("ms_all")) for x in tiled)))
    with open(os.path.join(opts.work, "results.json"), "w") as f:
        json.dump({"models": results, "tiled": tiled}, f, indent=1, default=str)

if __name__ == "__main__":
    main()
