#!/usr/bin/env python3
"""End-to-end check: a graphc-compiled training binary against PyTorch.

  train_vs_torch.py --model mlp|cnn|cnn_bce|resmlp|resnet18|mobilenet_v2|squeezenet1_1|vgg11|
                            transformer|transformer_ln17|unet|tconv|lstm|gru
                    --optimizer adam|sgd|momentum --steps 20 --workdir DIR --graphc PATH
                    [--check-no-reuse] [--eval-export] [--precision bf16] [--no-export-params]

1. exports the model (test/e2e/models.py) to DIR/model.onnx (batch 32, or 4 for the torchvision
   models, which are exported in training mode; Softmax/Sigmoid kept);
2. writes fixed random data DIR/x.npy (N(0,1), float32) and DIR/y.npy (int64 classes for the
   sparse CE models, float32 {0,1} of the output's shape for cnn_bce, unet (per pixel) and
   tconv), N = steps * 32 samples;
3. builds DIR/train with graphc (--batch=32, --lr=0.01 for sgd/momentum, --lr=0.001 for adam)
   and runs it with --steps, --save-weights DIR/w;
4. trains the same model in PyTorch (float32, same initial weights = the ONNX initializers, same
   batches: step t uses samples [(t-1)*32, t*32), in order) with the same optimizer, on the logits:
   F.cross_entropy (mean over the batch) or F.binary_cross_entropy_with_logits (mean);
5. compares each of the per-step losses and each final weight tensor (DIR/w/<name>.npy, <name> the
   ONNX initializer name, which is the state_dict key; verified by models.initializer_map),
   BatchNorm running means and variances included (graphc saves them with the weights).

With --no-export-params the model is exported with export_params=False: its parameters are
graph inputs without values, which graphc initialises as PyTorch's modules do. The initial values
(read from `graphc --compile-to=import`) are first checked against PyTorch's rule for each
state_dict entry, derived from the PyTorch module that owns it (not from the ONNX graph):
Linear/Conv weights and biases within 1/sqrt(fan_in) and spread over that range,
MultiheadAttention's in_proj_weight within its xavier bound, its biases zero, BatchNorm/LayerNorm
ones and zeros, LSTM/GRU within 1/sqrt(hidden_size), Embedding N(0, 1). PyTorch then trains from
those values, and the comparison goes on as usual.

With --accept-float64 a quantity also passes when it is within --tol of PyTorch's float64 run
(for models where PyTorch's own float32 run drifts further than --tol from float64, so that
matching it would mean matching its rounding noise).

With --float32-noise a quantity also passes when graphc is as close to PyTorch's float64 run as
PyTorch's own float32 run is, within 4x (BF16_SINGLE_FACTOR) plus --tol: for models with
parameters whose true gradient is zero (a batch norm's bias feeding a convolution and another
batch norm: MobileNetV3's and EfficientNet's projections), which both float32 runs fill with
rounding noise of their own, unrelated to each other.

With --first-loss-only (for models whose float32 training is chaotic, such as mobilenet_v2 from
a random initialisation in training mode, where PyTorch's own float32 run is 1e-2 away from its
float64 run within 5 steps, whatever the learning rate), only step 1's loss (the forward pass,
before any update) is compared, and every loss must be finite.

With --eval-export the model is exported in eval mode instead (torch 1.13 folds BatchNorm into
the convolutions, renaming the weights), so PyTorch trains a different parametrisation: only the
first step's loss (computed before any update) is compared, against the eval-mode PyTorch model,
and the other losses must be finite.

Error measure (one number per compared quantity):

    relative error of a tensor a against the reference b = max|a - b| / max(max|b|, 1e-12)

(for a scalar loss: |a - b| / max(|b|, 1e-12)).  Every quantity must be <= 1e-4 (--tol).

With --precision bf16 graphc builds with --precision=bf16 and PyTorch trains under
torch.autocast("cpu", bfloat16); the two round differently, so graphc must instead be as
accurate as PyTorch: over all quantities (the loss trajectory, each weight tensor) the
geometric mean of graphc's distance to the float64 trajectory over autocast's at most 1.25,
each one at most 4x autocast's (plus --tol), and the losses not within 1e-6 of float64 (which
would mean no 16-bit rounding happened).
With --precision fp16 (dynamic loss scaling) the reference is PyTorch's float32 run, compared
as usual within --tol, and again graphc must not be within 1e-6 of float64.

With --check-no-reuse the model is also built with --no-reuse; both builds write a memory plan
(--plan-out=DIR/plan.json and DIR/plan-no-reuse.json).  The two binaries must print identical loss
strings and write byte-identical weight files, and for the CNN models the reuse arena must be
strictly smaller than the no-reuse arena.

Prints one line per failed quantity, a few informational lines, and a final PASS or FAIL line;
exits 1 on failure.
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

sys.dont_write_bytecode = True  # keep the source tree clean when lit runs this
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# bf16 (step 4): how much farther from the float64 trajectory than PyTorch autocast graphc may
# land, for any one loss or weight tensor, and on the whole (geometric mean); distances below
# BF16_RATIO_FLOOR (relative) are float32 noise and take no part in the mean.
BF16_SINGLE_FACTOR = 4.0
BF16_MEAN_FACTOR = 1.25
BF16_RATIO_FLOOR = 1e-6
LR = {"sgd": 0.01, "momentum": 0.01, "adam": 0.001}
DATA_SEED = {"mlp": 101, "cnn": 202, "cnn_bce": 303, "resmlp": 404, "resnet18": 505,
             "mobilenet_v2": 606, "squeezenet1_1": 707, "vgg11": 808, "transformer": 909,
             "transformer_ln17": 909, "unet": 1010, "tconv": 1111, "lstm": 1212, "gru": 1313,
             "emb_lstm": 1414, "split_mlp": 1515, "act_mlp": 2020, "pad_cnn": 2222, "arith_mlp": 2323, "shufflenet_v2_x0_5": 1616, "mnasnet0_5": 1717,
             "mobilenet_v3_small": 1818, "efficientnet_b0": 1919,
             "densenet121": 2121, "googlenet": 2424, "vit": 2525,
             "bcast_mlp": 2626, "causal_cls": 2727, "causal_lm": 2828,
             "nano_gpt": 2929, "nano_gpt_tied": 2929,
             "nano_gpt_trilu": 2929, "llama": 3030, "llama_gqa": 3131, "llama_hf": 3030,
             "row_mlp": 3232, "math_mlp": 3233, "pad_cls": 3434, "mask_cls": 3535, "mask_cls_hf": 3535,
             "kpm_cls": 3434, "norm_unet": 3636, "shuffle_sr": 3737, "ops20": 3838, "ops24": 3939, "attn23": 4040, "attn23_pad": 4141, "rope23": 4242, "ops28": 4343, "local_fn": 4444, "sdpa18": 4545, "pad_modes": 4646, "einsum_attn": 4747, "space_depth": 4848, "prelu_cnn": 4949, "merge_ops": 5050, "shrink": 5151, "noise_mlp": 5252, "resample": 5353, "tile": 5454, "compare": 5555, "cumsum": 5656, "conv1d": 5757, "conv3d": 5858, "unet3d": 5959, "resize3d": 6060}
B = models.BATCH  # set per model in main()
# Eval-mode exports whose BatchNorms the exporter folds: PyTorch trains the folded model.
FOLDED_EVAL_EXPORTS = ("resnet18", "mobilenet_v2")
STEP_RE = re.compile(r"^step (\d+)/(\d+) loss (\S+)\s*$")


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9._:-]", "_", name)


def rel_err(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-12))


def make_data(name, n):
    """(x, y): x is the one input's array, or a tuple with one array per data input."""
    rng = np.random.RandomState(DATA_SEED[name])
    if name in models.MASK_INPUT_MODELS:
        # Hugging Face's padded batches: each sequence holds 3..seq real tokens (ids >= 1), then
        # padding (id 0) where attention_mask is 0.
        vocabulary = models.TOKEN_MODELS[name]["vocabulary"]
        seq = models.input_shape(name)[1]
        lengths = rng.randint(3, seq + 1, size=(n, 1))
        mask = (np.arange(seq)[None, :] < lengths).astype(np.int64)
        ids = rng.randint(1, vocabulary, size=(n, seq)).astype(np.int64) * mask
        return (ids, mask), rng.randint(0, 10, size=(n,)).astype(np.int64)
    if name in models.TOKEN_MODELS:  # int64 token ids, as PyTorch's Embedding reads them
        vocabulary = models.TOKEN_MODELS[name]["vocabulary"]
        x = rng.randint(0, vocabulary, size=(n,) + models.input_shape(name)[1:]).astype(np.int64)
    else:
        x = rng.standard_normal((n,) + models.input_shape(name)[1:]).astype(np.float32)
    if models.LOSSES[name] == "binary_crossentropy":  # per output element (per pixel: unet)
        y = rng.randint(0, 2, size=(n,) + models.label_shape(name)).astype(np.float32)
    elif name in models.LANGUAGE_MODELS:  # the next token: the input shifted by one
        vocabulary = models.TOKEN_MODELS[name]["vocabulary"]
        y = np.concatenate([x[:, 1:], rng.randint(0, vocabulary, size=(n, 1))], axis=1)
        y = y.astype(np.int64)
    else:
        y = rng.randint(0, 10, size=(n,)).astype(np.int64)
    return x, y


def save_data(wd, x, y):
    """Writes x (one array per data input) and y as .npy files in `wd`; returns the training
    binary's data arguments (one --data per input, in order) and the labels' path."""
    data_args = []
    for i, a in enumerate(x if isinstance(x, tuple) else (x,)):
        path = os.path.join(wd, "x%s.npy" % (i or ""))
        np.save(path, a)
        data_args += ["--data", path]
    yp = os.path.join(wd, "y.npy")
    np.save(yp, y)
    return data_args, yp


def run(cmd, what, timeout=900):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    dt = time.time() - t0
    if p.returncode != 0:
        print("FAIL: %s exited with %d: %s" % (what, p.returncode, " ".join(cmd)))
        sys.stdout.write(p.stdout[-4000:])
        sys.stdout.write(p.stderr[-4000:])
        print("FAIL")
        sys.exit(1)
    return p.stdout, dt


def parse_losses(out, steps):
    lines, losses = [], []
    for line in out.splitlines():
        m = STEP_RE.match(line)
        if m:
            lines.append(line.strip())
            losses.append((int(m.group(1)), int(m.group(2)), m.group(3)))
    if [s for s, _, _ in losses] != list(range(1, steps + 1)) or any(t != steps for _, t, _ in losses):
        print("FAIL: expected lines 'step t/%d loss L' for t = 1..%d, got:" % (steps, steps))
        sys.stdout.write(out[-4000:])
        print("FAIL")
        sys.exit(1)
    return lines, [float(l) for _, _, l in losses]


def torch_reference(name, optimizer, steps, x, y, init, dtype, autocast=None, make_model=None,
                    freeze=None, ignore_index=-100, label_smoothing=0.0, class_weights=None,
                    pos_weight=None, sample_weights=None):
    """Per-step losses and final state_dict of the PyTorch reference training. With
    `autocast` (torch.bfloat16), the forward pass and the loss run under torch.autocast on the
    CPU: linear and convolution in bf16, parameters and optimizer in float32. `make_model`
    builds the model (default: models.build(name)). `sample_weights` (one per sample): each
    sample's loss terms are scaled by its weight and the mean's divisor is the unweighted one
    (Keras's sample_weight; (loss(reduction='none') * w).sum() / divisor)."""
    model = make_model() if make_model else models.build(name)
    state = model.state_dict()
    state.update({k: torch.from_numpy(v.copy()) for k, v in init.items()})
    model.load_state_dict(state)
    model = model.to(dtype)
    model.head = False  # train on the logits; the loss folds the Softmax/Sigmoid
    model.train()
    # --freeze: the matching parameters keep their initial values (requires_grad off, not in
    # the optimizer), as graphc's --freeze=REGEX makes them constants of the step.
    for key, p in model.named_parameters():
        if freeze and re.search(freeze, key):
            p.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    if optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=LR[optimizer])
    elif optimizer == "momentum":
        opt = torch.optim.SGD(params, lr=LR[optimizer], momentum=0.9)
    else:
        opt = torch.optim.Adam(params, lr=LR[optimizer], betas=(0.9, 0.999), eps=1e-8)
    xs = x if isinstance(x, tuple) else (x,)
    n = xs[0].shape[0]
    assert n % B == 0
    losses = []
    for t in range(1, steps + 1):
        idx = (np.arange(B) + (t - 1) * B) % n
        xb = [torch.from_numpy(a[idx]) for a in xs]
        xb = [t.to(dtype) if t.is_floating_point() else t for t in xb]
        yb = torch.from_numpy(y[idx])
        wb = None if sample_weights is None else torch.from_numpy(sample_weights[idx]).to(dtype)
        with torch.autocast("cpu", dtype=autocast or torch.bfloat16, enabled=autocast is not None):
            logits = model(*xb).float()
            if models.LOSSES[name] == "binary_crossentropy":
                # (Keras's label smoothing of binary targets: (1 - e) y + e / 2.)
                target = yb.to(dtype) * (1 - label_smoothing) + label_smoothing / 2
                loss = F.binary_cross_entropy_with_logits(
                    logits, target, pos_weight=None if pos_weight is None else
                    torch.tensor(pos_weight, dtype=logits.dtype),
                    reduction="mean" if wb is None else "none")
                if wb is not None:
                    loss = (loss * wb.reshape((-1,) + (1,) * (loss.dim() - 1))).mean()
            else:  # (per token for a language model: the mean over every position)
                flat_y = yb.reshape(-1)
                cw = (None if class_weights is None else
                      torch.tensor(class_weights, dtype=logits.dtype))
                loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), flat_y,
                                       ignore_index=ignore_index, label_smoothing=label_smoothing,
                                       weight=cw, reduction="mean" if wb is None else "none")
                if wb is not None:
                    # PyTorch's mean divides by the counted labels (their class weights).
                    kept = flat_y != ignore_index
                    divisor = (kept.sum().to(logits.dtype) if cw is None
                               else cw[flat_y[kept]].sum())
                    per_row = (wb.reshape(-1) if wb.numel() == flat_y.numel()
                               else wb.repeat_interleave(flat_y.numel() // wb.numel()))
                    loss = (loss * per_row).sum() / divisor
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    return losses, {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}


def load_weights(wdir, mapping):
    out = {}
    for onnx_name in mapping:
        p = os.path.join(wdir, sanitize(onnx_name) + ".npy")
        out[onnx_name] = np.load(p) if os.path.exists(p) else None
    return out


def ir_initial_values(ir_text):
    """{parameter name: float32 array (flat)} from the dense_resource blobs of graphc's IR."""
    out = {}
    for name, hexdata in re.findall(r'^\s*([\w./:-]+): "0x([0-9A-F]+)"', ir_text, re.M):
        out[name] = np.frombuffer(bytes.fromhex(hexdata)[4:], dtype="<f4")  # 4 bytes: alignment
    return out


def check_pytorch_initialisation(model, init):
    """Failures of the initial values `init` (state_dict key -> array) against the rule PyTorch's
    own modules apply to each state_dict entry."""
    failures = []
    modules = dict(model.named_modules())
    for key, ref in model.state_dict().items():
        if key.endswith("num_batches_tracked"):
            continue
        if key not in init:
            failures.append("initial value of %s: not a graphc parameter" % key)
            continue
        v = np.asarray(init[key], dtype=np.float64)
        owner_name, _, leaf = key.rpartition(".")
        owner = modules[owner_name]
        rule, bound = None, None
        if isinstance(owner, torch.nn.MultiheadAttention) and leaf.endswith("proj_weight"):
            fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(getattr(owner, leaf))
            rule, bound = "xavier", (6.0 / (fan_in + fan_out)) ** 0.5
        elif isinstance(owner, torch.nn.MultiheadAttention) and leaf == "in_proj_bias":
            rule = "zeros"
        elif (leaf == "bias" and owner_name.endswith("out_proj")
              and isinstance(modules.get(owner_name.rpartition(".")[0]), torch.nn.MultiheadAttention)):
            rule = "zeros"
        elif isinstance(owner, (torch.nn.Linear, torch.nn.modules.conv._ConvNd)):
            fan_in, _ = torch.nn.init._calculate_fan_in_and_fan_out(owner.weight)
            rule, bound = "uniform", 1.0 / fan_in ** 0.5
        elif isinstance(owner, (torch.nn.modules.batchnorm._BatchNorm, torch.nn.LayerNorm)):
            rule = "ones" if leaf in ("weight", "running_var") else "zeros"
        elif type(owner).__name__.endswith("RMSNorm") and leaf == "weight":
            rule = "ones"  # LLaMA's and Hugging Face's RMSNorm: torch.ones(width)
        elif isinstance(owner, torch.nn.modules.rnn.RNNBase):
            rule, bound = "uniform", 1.0 / owner.hidden_size ** 0.5
        elif isinstance(owner, torch.nn.Embedding):
            rule = "normal"
        else:
            failures.append("initial value of %s: no PyTorch rule known for %s"
                            % (key, type(owner).__name__))
            continue
        if v.size != ref.numel():
            failures.append("initial value of %s: %d values, PyTorch has %d" % (key, v.size, ref.numel()))
            continue
        m, mean = float(np.max(np.abs(v))), float(np.mean(v))
        if rule == "zeros":
            ok = m == 0
        elif rule == "ones":
            ok = bool(np.all(v == 1))
        elif rule == "normal":
            ok = abs(mean) < 0.2 and 0.8 < float(np.std(v)) < 1.2
        else:
            ok = m <= bound and abs(mean) < 0.25 * bound and (v.size < 16 or m > 0.75 * bound)
        print("init %-45s %-7s max|w| %.4g%s mean %.3g: %s"
              % (key, rule, m, "" if bound is None else " (bound %.4g)" % bound, mean,
                 "ok" if ok else "WRONG"))
        if not ok:
            failures.append("initial value of %s does not follow PyTorch's %s rule" % (key, rule))
    return failures


def folded_reference(model, onnx_path):
    """The PyTorch model that an eval-mode export of `model` describes, and its parameters.

    torch 1.13 folds each BatchNorm into the convolution before it (torch.fx's conv-bn fusion
    computes the same fold). The exporter then stores identical initializers once and re-creates
    the copies with Identity nodes (the folded biases are all zero, so convolutions with the same
    channel count share one); graphc imports each Identity copy as a parameter of its own, as
    the model has them. Each Conv/Gemm node's weight and bias input (an initializer or an
    Identity copy of one) is matched to the folded module named by the node's scope
    ("/net/features/features.1/conv/conv.0/conv.0.0/Conv" -> net.features.1.conv.0.0), and
    its value must equal the folded one (allclose, rtol 1e-5). Returns (make_model,
    {graphc parameter name: state_dict key}, {graphc parameter name: initial value})."""
    from torch.fx.experimental.optimization import fuse
    import copy
    import onnx
    from onnx import numpy_helper
    base = copy.deepcopy(model).eval()
    base.head = False
    fused = fuse(base)
    sd = {k: v.detach().numpy() for k, v in fused.state_dict().items()}
    graph = onnx.load(onnx_path).graph
    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Identity" and node.input[0] in values:
            values[node.output[0]] = values[node.input[0]]
    mapping, init = {}, {}
    for node in graph.node:
        if node.op_type not in ("Conv", "Gemm"):
            continue
        path = ".".join(part.rpartition(".")[2] for part in node.name.strip("/").split("/")[:-1])
        for index, leaf in ((1, "weight"), (2, "bias")):
            if index >= len(node.input) or node.input[index] not in values:
                continue
            pname, key = node.input[index], path + "." + leaf
            if key not in sd or sd[key].shape != values[pname].shape or not np.allclose(
                    sd[key], values[pname], rtol=1e-5, atol=1e-7):
                raise RuntimeError("%s of node %s does not match the folded %s" % (pname, node.name, key))
            if pname in mapping:
                raise RuntimeError("%s is read by two layers (truly tied); not expected here" % pname)
            mapping[pname], init[key] = key, values[pname]
    missing = set(sd) - set(mapping.values())
    if missing:
        raise RuntimeError("folded parameters no node reads: %s" % sorted(missing))

    def make_model():
        m = copy.deepcopy(fused)
        m.train()
        return m
    return make_model, mapping, init


def first_loss_check(args, name, model, onnx_path, wd, training):
    """--first-loss-only, or --eval-export of a model PyTorch cannot train in the exported
    parametrisation: step 1's loss must match PyTorch's (eval-mode or training-mode) loss on the
    same batch, and every loss must be finite."""
    steps = args.steps
    x, y = make_data(name, steps * B)
    data_args, yp = save_data(wd, x, y)
    exe = os.path.join(wd, "train")
    run([args.graphc, onnx_path, "-o", exe, "--loss=" + models.LOSSES[name],
         "--optimizer=" + args.optimizer, "--lr=%g" % LR[args.optimizer], "--batch=%d" % B],
        "graphc")
    out, _ = run([exe] + data_args + ["--labels", yp, "--steps", str(steps)], "training binary")
    _, losses = parse_losses(out, steps)
    model.train(training)
    model.head = False
    with torch.no_grad():
        xs = x if isinstance(x, tuple) else (x,)
        ref = float(F.cross_entropy(model(*[torch.from_numpy(a[:B]) for a in xs]),
                                    torch.from_numpy(y[:B])))
    err = abs(losses[0] - ref) / max(abs(ref), 1e-12)
    ok = err <= args.tol and all(np.isfinite(losses))
    print("%s export: step 1 loss graphc %.9g torch %.9g rel err %.3g; losses %s"
          % ("training" if training else "eval", losses[0], ref, err, " ".join("%.6g" % l for l in losses)))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True,
                    choices=["mlp", "cnn", "cnn_bce", "resmlp", "split_mlp", "act_mlp", "pad_cnn", "pad_modes", "einsum_attn", "prelu_cnn", "shrink", "resample", "tile", "compare", "cumsum", "conv1d", "conv3d", "unet3d", "resize3d", "arith_mlp", "row_mlp", "math_mlp",
                             "bcast_mlp"] + list(models.TORCHVISION)
                    + list(models.TRANSFORMERS) + ["unet", "tconv", "norm_unet", "shuffle_sr"] + list(models.RECURRENT)
                    + list(models.HANDWRITTEN)
                    + list(models.TOKEN_MODELS))
    ap.add_argument("--eval-export", action="store_true")
    ap.add_argument("--accept-float64", action="store_true",
                    help="a quantity also passes within --tol of PyTorch's float64 run")
    ap.add_argument("--float32-noise", action="store_true",
                    help="a quantity also passes when graphc is within 4x PyTorch float32's "
                    "distance to float64 (plus --tol) of the float64 run")
    ap.add_argument("--first-loss-only", action="store_true",
                    help="compare step 1's loss only (models whose float32 training is chaotic)")
    ap.add_argument("--no-export-params", action="store_true",
                    help="export with export_params=False: graphc initialises the parameters")
    ap.add_argument("--dynamic-batch", action="store_true",
                    help="export with a dynamic batch axis (graphc folds the shape arithmetic)")
    ap.add_argument("--export-batch", type=int,
                    help="export without a dynamic batch axis at this batch (its Reshapes bake "
                    "it); graphc trains at the model's own batch")
    ap.add_argument("--opset", type=int, metavar="N",
                    help="rewrite the export into opset N (18-28) as newer exporters write it "
                    "(test/e2e/onnx_upgrade.py; the rewrites are printed) before graphc reads it")
    ap.add_argument("--lr", type=float, help="learning rate (default: 0.01 for sgd/momentum, "
                    "0.001 for adam)")
    ap.add_argument("--optimizer", required=True, choices=["adam", "sgd", "momentum"])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--graphc", required=True)
    ap.add_argument("--check-no-reuse", action="store_true")
    ap.add_argument("--freeze", metavar="REGEX",
                    help="graphc --freeze=REGEX; PyTorch trains the other parameters only "
                         "(Python's re.search on the state_dict key)")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--ignore-index", type=int, metavar="N",
                    help="set about a third of the class labels to N (at least one real label "
                    "per batch), train graphc with --ignore-index=N and PyTorch with "
                    "CrossEntropyLoss(ignore_index=N)")
    ap.add_argument("--label-smoothing", type=float, metavar="F",
                    help="graphc --label-smoothing=F against PyTorch's "
                    "CrossEntropyLoss(label_smoothing=F) (binary: targets (1 - F) y + F / 2)")
    ap.add_argument("--class-weights", action="store_true",
                    help="graphc --class-weights=W0,... against PyTorch's "
                    "CrossEntropyLoss(weight=W), W_c = 0.5 + 0.25 (c mod 4)")
    ap.add_argument("--pos-weight", metavar="P[,P...]",
                    help="graphc --pos-weight against PyTorch's BCEWithLogitsLoss(pos_weight)")
    ap.add_argument("--sample-weights", action="store_true",
                    help="graphc --sample-weights, the binary's --sample-weights W.npy (W in "
                    "[0, 2), a fifth 0) against PyTorch's per-sample losses times W over the "
                    "unweighted divisor")
    ap.add_argument("--temporal-sample-weights", action="store_true",
                    help="as --sample-weights with one weight per label position (graphc "
                    "--temporal-sample-weights; sparse crossentropy over positions)")
    ap.add_argument("--micro-batches", type=int, metavar="K",
                    help="graphc --micro-batches=K (PyTorch trains the whole batch)")
    ap.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32",
                    help="bf16: graphc --precision=bf16 against PyTorch under torch.autocast(bf16); "
                    "fp16: graphc --precision=fp16 (dynamic loss scaling) against PyTorch fp32")
    args = ap.parse_args()

    if not (os.path.isfile(args.graphc) and os.access(args.graphc, os.X_OK)):
        print("FAIL: graphc not found or not executable: %s" % args.graphc)
        print("FAIL")
        return 1
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    name, steps, wd = args.model, args.steps, args.workdir
    global B
    B = models.batch_of(name)
    if args.lr:
        LR[args.optimizer] = args.lr
    if os.path.exists(wd):
        shutil.rmtree(wd)
    os.makedirs(wd)
    failures = []

    def fail(msg):
        failures.append(msg)
        print("FAIL: " + msg)

    # 1. model and data.
    onnx_path = os.path.join(wd, "model.onnx")
    # A dynamic-batch model is exported at another batch than the one it trains at, so that
    # only graphc's folding of the shape arithmetic can give the right shapes.
    model = models.export(name, onnx_path, training=False if args.eval_export else None,
                          batch=(max(B // 2, 1) if args.dynamic_batch else args.export_batch),
                          dynamic_batch=args.dynamic_batch,
                          export_params=not args.no_export_params)
    if args.opset:
        import onnx
        import onnx_upgrade
        upgraded = onnx.load(onnx_path)
        for line in onnx_upgrade.upgrade(upgraded, args.opset):
            print("opset %d: %s" % (args.opset, line))
        onnx.save(upgraded, onnx_path)
    make_model = None
    if args.eval_export and name not in FOLDED_EVAL_EXPORTS:
        return first_loss_check(args, name, model, onnx_path, wd, training=False)
    if args.first_loss_only:
        return first_loss_check(args, name, model, onnx_path, wd, training=True)
    if args.eval_export:
        # The reference trains the folded (and tied) model that the export describes.
        make_model, mapping, init = folded_reference(model, onnx_path)
        inits = {k: init[v] for k, v in mapping.items()}
        print("eval export: %d initializers, %d folded parameters"
              % (len(models.onnx_initializers(onnx_path)), len(mapping)))
    elif args.no_export_params:
        # graphc's initial values, as the training binary starts from them.
        ir_path = os.path.join(wd, "import.mlir")
        run([args.graphc, onnx_path, "--compile-to=import", "-o", ir_path, "--batch=%d" % B,
             "--loss=" + models.LOSSES[name]], "graphc --compile-to=import")
        blobs = ir_initial_values(open(ir_path).read())
        sd = model.state_dict()
        inits = {k: blobs[k].reshape(tuple(sd[k].shape)) for k in blobs if k in sd}
        for f in check_pytorch_initialisation(model, inits):
            fail(f)
        mapping = {k: k for k in inits}
    else:
        mapping = models.initializer_map(onnx_path, model)  # ONNX initializer name -> state_dict key
        inits = models.onnx_initializers(onnx_path)
    if not args.eval_export:
        init = {mapping[k]: v for k, v in inits.items()}
    x, y = make_data(name, steps * B)
    if args.ignore_index is not None:
        # PyTorch's padding targets: a third of the labels, but never all of a batch's.
        drop = np.random.RandomState(DATA_SEED[name] + 1).rand(*y.shape) < 1 / 3
        for first in range(0, y.shape[0], B):
            drop[first] = False
        y = np.where(drop, args.ignore_index, y).astype(np.int64)
        print("ignore index %d: %d of %d labels" % (args.ignore_index, drop.sum(), drop.size))
    data_args, yp = save_data(wd, x, y)
    run_args, sample_weights = [], None
    if args.sample_weights or args.temporal_sample_weights:
        # Weights in [0, 2), a fifth of them 0 (samples, or positions, that count for nothing).
        rs = np.random.RandomState(DATA_SEED[name] + 2)
        wshape = y.shape if args.temporal_sample_weights else y.shape[:1]
        sample_weights = (2 * rs.rand(*wshape) * (rs.rand(*wshape) >= 0.2)).astype(np.float32)
        wp = os.path.join(wd, "sample_weights.npy")
        np.save(wp, sample_weights)
        run_args = ["--sample-weights", wp]
        print("sample weights: %d of %d are 0, mean %.3f"
              % ((sample_weights == 0).sum(), sample_weights.size, sample_weights.mean()))
    print("model %s, optimizer %s, lr %g, %d steps of batch %d; initializers: %s"
          % (name, args.optimizer, LR[args.optimizer], steps, B,
             ", ".join("%s%s" % (k, list(v.shape)) for k, v in inits.items())))

    # 2. graphc build(s) and run(s).
    def build_and_run(tag, extra):
        exe = os.path.join(wd, "train" + tag)
        cmd = [args.graphc, onnx_path, "-o", exe, "--loss=" + models.LOSSES[name],
               "--optimizer=" + args.optimizer, "--lr=%g" % LR[args.optimizer], "--batch=%d" % B] + extra
        _, tb = run(cmd, "graphc" + tag)
        wdir = os.path.join(wd, "w" + tag)
        out, tr = run([exe] + data_args + ["--labels", yp, "--steps", str(steps),
                       "--save-weights", wdir] + run_args, "training binary" + tag)
        print("graphc%s build %.1fs, %d steps %.2fs" % (tag, tb, steps, tr))
        lines, losses = parse_losses(out, steps)
        return lines, losses, wdir

    plan = os.path.join(wd, "plan.json")
    plan_nr = os.path.join(wd, "plan-no-reuse.json")
    precision_flags = ["--precision=" + args.precision] if args.precision != "fp32" else []
    if args.freeze:
        precision_flags.append("--freeze=" + args.freeze)
    if args.ignore_index is not None:
        precision_flags.append("--ignore-index=%d" % args.ignore_index)
    if args.micro_batches:
        precision_flags.append("--micro-batches=%d" % args.micro_batches)
    if args.label_smoothing:
        precision_flags.append("--label-smoothing=%g" % args.label_smoothing)
    class_weights = None
    if args.class_weights:
        classes = (models.TOKEN_MODELS[name]["vocabulary"] if name in models.LANGUAGE_MODELS
                   else 10)
        class_weights = [0.5 + 0.25 * (c % 4) for c in range(classes)]
        precision_flags.append("--class-weights=" + ",".join("%g" % w for w in class_weights))
    if args.pos_weight:
        precision_flags.append("--pos-weight=" + args.pos_weight)
    if args.sample_weights:
        precision_flags.append("--sample-weights")
    if args.temporal_sample_weights:
        precision_flags.append("--temporal-sample-weights")
    lines, losses, wdir = build_and_run(
        "", precision_flags + (["--plan-out=" + plan] if args.check_no_reuse else []))
    weights = load_weights(wdir, mapping)

    # 3. PyTorch reference (float32).  A float64 run is only informational: how far graphc and torch
    # float32 each are from the (nearly exact) float64 trajectory, i.e. the inherent float32 noise.
    autocast = torch.bfloat16 if args.precision == "bf16" else None
    ignore = {} if args.ignore_index is None else {"ignore_index": args.ignore_index}
    if args.label_smoothing:
        ignore["label_smoothing"] = args.label_smoothing
    if class_weights:
        ignore["class_weights"] = class_weights
    if args.pos_weight:
        ignore["pos_weight"] = [float(v) for v in args.pos_weight.split(",")]
    if args.sample_weights or args.temporal_sample_weights:
        ignore["sample_weights"] = sample_weights
    ref_losses, ref_sd = torch_reference(name, args.optimizer, steps, x, y, init, torch.float32,
                                         autocast, make_model, freeze=args.freeze, **ignore)
    r64_losses, r64_sd = torch_reference(name, args.optimizer, steps, x, y, init, torch.float64,
                                         make_model=make_model, freeze=args.freeze, **ignore)

    # 4. Compare losses and weights.  In bf16 the two runs round differently (oneDNN's bf16
    # kernels against graphc's f32 kernels on bf16-rounded tensors), so graphc is judged by its
    # accuracy instead: its distance to the float64 trajectory against PyTorch autocast's, at
    # most BF16_SINGLE_FACTOR times for any one quantity (plus --tol) and BF16_MEAN_FACTOR on
    # the whole (see after the weights). Casts that did nothing would leave graphc within 1e-6
    # of float64, which fails too.
    bf16 = args.precision == "bf16"
    loss_errs = [abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses, ref_losses)]
    # bf16 accuracy ratios (graphc's distance to float64 over autocast's), one for the loss
    # trajectory and one per weight tensor; their geometric mean is checked after the weights.
    ratios = []
    if bf16:
        # The loss trajectory is one quantity: its largest distance to float64 over the steps
        # (one step's autocast loss can land on float64's by luck).
        g64 = [abs(a - c) / max(abs(c), 1e-12) for a, c in zip(losses, r64_losses)]
        e64 = max(abs(b - c) / max(abs(c), 1e-12) for b, c in zip(ref_losses, r64_losses))
        loss_errs = [max(0.0, g - BF16_SINGLE_FACTOR * e64) for g in g64]
        if e64 > BF16_RATIO_FLOOR:
            ratios.append(max(max(g64), BF16_RATIO_FLOOR) / e64)
    if args.accept_float64:
        loss_errs = [min(e, abs(a - c) / max(abs(c), 1e-12))
                     for e, a, c in zip(loss_errs, losses, r64_losses)]
    if args.float32_noise:
        loss_errs = [min(e, max(0.0, abs(a - c) / max(abs(c), 1e-12) -
                                BF16_SINGLE_FACTOR * abs(b - c) / max(abs(c), 1e-12)))
                     for e, a, b, c in zip(loss_errs, losses, ref_losses, r64_losses)]

    if args.precision != "fp32":
        if max(abs(a - c) / max(abs(c), 1e-12) for a, c in zip(losses, r64_losses)) < 1e-6:
            fail("%s losses equal the float64 ones within 1e-6: were any casts applied?"
                 % args.precision)
    first_bad = None
    for t, (a, b, e) in enumerate(zip(losses, ref_losses, loss_errs), 1):
        if not e <= args.tol:
            first_bad = first_bad or t
            fail("loss step %d: graphc %.9g torch %.9g rel err %.3g" % (t, a, b, e))
    if first_bad:
        print("      losses first diverge at step %d" % first_bad)
    def max_loss_err(xs, refs):
        return max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(xs, refs))
    if bf16:
        print("bf16: errors below are graphc's excess over 1.25x PyTorch autocast's distance to float64")
    if args.accept_float64:
        print("errors below are the smaller of those against PyTorch float32 and float64")
    if args.float32_noise:
        print("errors below are the smaller of that against PyTorch float32 and graphc's excess "
              "distance to float64 over 4x PyTorch float32's")
    print("losses: max rel err %.3g (vs torch f64: graphc %.3g, torch f32 %.3g); first %.9g last %.9g"
          % (max(loss_errs), max_loss_err(losses, r64_losses), max_loss_err(ref_losses, r64_losses),
             ref_losses[0], ref_losses[-1]))

    # Buffers other than batch norms' running statistics (which graphc saves and updates).
    reference_model = make_model() if make_model else models.build(name)
    constant_buffers = {k for k, _ in reference_model.named_buffers()
                        if not k.endswith(("running_mean", "running_var", "num_batches_tracked"))}
    for oname, key in mapping.items():
        a, b = weights[oname], ref_sd[key]
        path = os.path.join(wdir, sanitize(oname) + ".npy")
        if a is None and key in constant_buffers:
            # A fixed buffer the step reads as a constant (a causal attention mask): graphc
            # neither trains nor saves it, and PyTorch has left it as it was.
            if not np.array_equal(b, init[key]):
                fail("buffer %s changed in PyTorch's run" % key)
            print("buffer %s: a constant of the step, not saved" % key)
            continue
        if a is None:
            fail("weight %s: %s not written" % (oname, path))
            continue
        if a.shape != b.shape:
            fail("weight %s: shape %s, torch %s" % (oname, list(a.shape), list(b.shape)))
            continue
        if a.dtype != np.float32:
            fail("weight %s: dtype %s, expected float32" % (oname, a.dtype))
        e = rel_err(a, b)
        e64 = rel_err(b, r64_sd[key])
        g64 = rel_err(a, r64_sd[key])
        # (Relative to the larger of the two: a bias that starts at zero moved by its size.)
        moved = float(np.max(np.abs(np.float64(b) - init[key])) /
                      max(float(np.max(np.abs(b))), float(np.max(np.abs(init[key]))), 1e-12))
        if bf16:
            e = max(0.0, g64 - BF16_SINGLE_FACTOR * e64)  # accuracy beyond autocast's, see step 4
            if e64 > BF16_RATIO_FLOOR:
                ratios.append(max(g64, BF16_RATIO_FLOOR) / e64)
        if args.accept_float64:
            e = min(e, g64)
        if args.float32_noise:
            e = min(e, max(0.0, g64 - BF16_SINGLE_FACTOR * e64))

        if not e <= args.tol:
            i = np.unravel_index(np.argmax(np.abs(a.astype(np.float64) - b)), a.shape)
            fail("weight %s: rel err %.3g at %s: graphc %.9g torch %.9g (init %.9g)"
                 % (oname, e, list(i), a[i], b[i], init[key][i]))
        print("weight %-12s rel err %.3g (vs torch f64: graphc %.3g, torch f32 %.3g; moved %.3g from init)"
              % (oname, e, g64, e64, moved))

    if bf16 and ratios:
        # One quantity can land far from float64 by the luck of a rounding flip in a chaotic
        # trajectory (batch norm over a batch of 4), and how far autocast lands depends on the
        # CPU (oneDNN's AMX/AVX512-BF16 kernels accumulate in f32, its emulation rounds more
        # often). Each quantity may therefore be up to BF16_SINGLE_FACTOR times autocast's
        # distance (a missing cast or a wrong gradient is far beyond that), and over all of
        # them graphc must be as accurate as autocast within 25%: the geometric mean of the
        # ratios at most BF16_MEAN_FACTOR.
        mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print("bf16: geometric mean of graphc's over autocast's distance to float64: %.3g over %d "
              "quantities (at most %.2f)" % (mean, len(ratios), BF16_MEAN_FACTOR))
        if not mean <= BF16_MEAN_FACTOR:
            fail("bf16: graphc is on the whole less accurate than autocast: geometric mean of the "
                 "distance ratios %.3g > %.2f" % (mean, BF16_MEAN_FACTOR))

    # 5. --no-reuse: bit-identical results, and a larger arena.
    if args.check_no_reuse:
        lines_nr, _, wdir_nr = build_and_run("-no-reuse", ["--no-reuse", "--plan-out=" + plan_nr])
        if lines_nr != lines:
            for t, (a, b) in enumerate(zip(lines, lines_nr), 1):
                if a != b:
                    fail("no-reuse loss differs at step %d: %r vs %r" % (t, b, a))
                    break
        for oname in mapping:
            f = sanitize(oname) + ".npy"
            pa, pb = os.path.join(wdir, f), os.path.join(wdir_nr, f)
            if not os.path.exists(pb):
                fail("no-reuse weight %s: %s not written" % (oname, pb))
            elif os.path.exists(pa) and open(pa, "rb").read() != open(pb, "rb").read():
                fail("no-reuse weight %s: %s differs from %s" % (oname, pb, pa))
        arenas = {}
        for tag, p in (("reuse", plan), ("no-reuse", plan_nr)):
            try:
                with open(p) as fh:
                    j = json.load(fh)
                arenas[tag] = int(j["arena_bytes"])
                print("plan %-8s: arena_bytes %d lower_bound_bytes %s buffers %d steps %d"
                      % (tag, arenas[tag], j.get("lower_bound_bytes"), len(j.get("buffers", [])),
                         len(j.get("steps", []))))
                if "lower_bound_bytes" in j and arenas[tag] < int(j["lower_bound_bytes"]):
                    fail("plan %s: arena %d below its lower bound %d" % (tag, arenas[tag], j["lower_bound_bytes"]))
            except Exception as ex:  # missing file, bad JSON, missing key
                fail("plan %s: cannot read arena_bytes from %s: %s" % (tag, p, ex))
        if len(arenas) == 2 and name.startswith("cnn") and not arenas["reuse"] < arenas["no-reuse"]:
            fail("reuse arena %d is not smaller than no-reuse arena %d" % (arenas["reuse"], arenas["no-reuse"]))

    print("FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
