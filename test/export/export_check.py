#!/usr/bin/env python3
"""Helper of the graphc-export-onnx tests (issue #7).

  export_check.py data --model mlp|cnn --out DIR [--samples N]
      writes DIR/x.npy (float32 N(0,1) inputs of the model's sample shape) and DIR/y.npy (int64
      class indices in [0, 10)).

  export_check.py check --model mlp|cnn --source SRC.onnx --exported OUT.onnx --weights DIR
      checks the exported model against the source model and the saved weights:
      1. onnx.checker accepts it, and everything but the initializers' values (graph, nodes,
         inputs, outputs, opsets, initializer names, order, dims and types) equals the source;
      2. every .npy in DIR names an initializer (sanitized name), and that initializer equals the
         file bit for bit (dtype, shape, bytes), stored as raw_data, and differs from the
         source's value (training changed it); initializers without a file equal the source's;
      3. the PyTorch model of test/e2e/models.py loaded (state_dict, keys = initializer names)
         from the exported initializers gives bit-identical forward outputs to the same model
         loaded from the .npy files, and different outputs from the model loaded from the
         source initializers.
      Prints one line per failure and a final PASS or FAIL (exit 1).
"""

import argparse
import copy
import os
import re
import sys

sys.dont_write_bytecode = True  # keep the source tree clean when lit runs this
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import models  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402
import torch  # noqa: E402


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9._:-]", "_", name)


def make_data(args):
    rng = np.random.RandomState(7)
    shape = models.input_shape(args.model)[1:]
    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "x.npy"),
            rng.standard_normal((args.samples,) + shape).astype(np.float32))
    np.save(os.path.join(args.out, "y.npy"), rng.randint(0, 10, size=args.samples).astype(np.int64))
    return 0


def forward(name, state):
    """Output (with the Softmax head) of model `name` loaded from {state_dict key: array}."""
    model = models.build(name)
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()},
                          strict=True)
    model.eval()
    model.head = True
    x = torch.from_numpy(np.random.RandomState(11).standard_normal(
        models.input_shape(name)).astype(np.float32))
    with torch.no_grad():
        return model(x)


def check(args):
    failures = []
    src = onnx.load(args.source)
    out = onnx.load(args.exported)
    try:
        onnx.checker.check_model(out)
    except Exception as e:  # noqa: BLE001
        failures.append("onnx.checker: %s" % e)

    # Everything but the initializers' values is the source's.
    def skeleton(m):
        m = copy.deepcopy(m)
        for t in m.graph.initializer:
            t.ClearField("raw_data")
            t.ClearField("float_data")
            t.ClearField("int64_data")
        return m.SerializeToString()
    if skeleton(src) != skeleton(out):
        failures.append("the exported model differs from the source beyond initializer values")

    src_inits = {t.name: numpy_helper.to_array(t) for t in src.graph.initializer}
    out_tensors = {t.name: t for t in out.graph.initializer}
    by_file = {sanitize(n): n for n in out_tensors}
    files = sorted(f for f in os.listdir(args.weights) if f.endswith(".npy"))
    saved = {}
    for f in files:
        name = by_file.get(f[:-4])
        if name is None:
            failures.append("%s names no initializer" % f)
            continue
        saved[name] = np.load(os.path.join(args.weights, f))
    for name, t in out_tensors.items():
        arr = numpy_helper.to_array(t)
        if name in saved:
            ref = saved[name]
            if arr.dtype != ref.dtype or arr.shape != ref.shape or arr.tobytes() != ref.tobytes():
                failures.append("initializer %s: not bit-identical to its .npy" % name)
            if t.data_type == onnx.TensorProto.FLOAT and (not t.raw_data or len(t.float_data)):
                failures.append("initializer %s: float32 values not stored as raw_data" % name)
            if np.array_equal(arr, src_inits[name]):
                failures.append("initializer %s: unchanged by training" % name)
        elif arr.tobytes() != src_inits[name].tobytes():
            failures.append("initializer %s: has no .npy but changed" % name)
    print("initializers: %d, from .npy: %d" % (len(out_tensors), len(saved)))

    exported = {n: numpy_helper.to_array(t) for n, t in out_tensors.items()}
    from_npy = dict(src_inits, **saved)
    y_exp = forward(args.model, exported)
    y_npy = forward(args.model, from_npy)
    y_src = forward(args.model, src_inits)
    if not torch.equal(y_exp, y_npy):
        failures.append("forward: exported model vs .npy weights differ by %g"
                        % float((y_exp - y_npy).abs().max()))
    if torch.equal(y_exp, y_src):
        failures.append("forward: exported model gives the untrained model's output")

    for f in failures:
        print("FAIL: " + f)
    print("FAIL" if failures else "PASS")
    return 1 if failures else 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("data")
    d.add_argument("--model", required=True)
    d.add_argument("--out", required=True)
    d.add_argument("--samples", type=int, default=96)
    c = sub.add_parser("check")
    for a in ("--model", "--source", "--exported", "--weights"):
        c.add_argument(a, required=True)
    args = p.parse_args()
    return make_data(args) if args.cmd == "data" else check(args)


if __name__ == "__main__":
    sys.exit(main())
