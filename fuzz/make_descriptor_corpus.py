#!/usr/bin/env python3
"""Writes fuzz/corpus/fuzz-program-descriptor/: the program descriptors graphc embeds in CUDA
training binaries, one seed per kind of step (plain, micro-batched with batch norm, data
parallel, ZeRO-1, optimizer state offloaded to a host arena), each prefixed with its init blob's
size as fuzz/FuzzProgramDescriptor.cpp reads it (8 bytes, little-endian).

  /usr/bin/python3 fuzz/make_descriptor_corpus.py --graphc build/bin/graphc
"""
import argparse
import os
import re
import struct
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
STEPS = {
    "mlp-adam": ["examples/mlp.onnx", "--optimizer=adam"],
    "cnn-micro": ["examples/cnn.onnx", "--micro-batches=2"],
    "mlp-dp2": ["examples/mlp.onnx", "--data-parallel", "--world-size=2"],
    "cnn-zero": ["examples/cnn.onnx", "--data-parallel", "--world-size=2", "--optimizer=adam",
                 "--zero=1", "--bucket-size=2KiB"],
    "deep-offload": ["test/graphc/Inputs/deep-mlp.mlir", "--loss=mse", "--optimizer=adam",
                     "--offload=optimizer"],
}


def descriptor_of(source):
    """The bytes of the kDescriptor array of an emitted step."""
    m = re.search(r"kDescriptor\[\] = \{(.*?)\};", source, re.S)
    return bytes(int(v) for v in m.group(1).replace("\n", " ").split(",") if v.strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphc", required=True)
    args = ap.parse_args()
    out = os.path.join(HERE, "corpus", "fuzz-program-descriptor")
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (model, *flags) in STEPS.items():
            cu = os.path.join(tmp, name + ".cu")
            subprocess.run([args.graphc, os.path.join(SRC, model), "--target=cuda",
                            "--compile-to=source", "-o", cu, "--quiet"] + flags, check=True)
            with open(cu) as f:
                descriptor = descriptor_of(f.read())
            blob = os.path.getsize(cu + ".weights.bin") if os.path.exists(cu + ".weights.bin") else 0
            with open(os.path.join(out, name + ".bin"), "wb") as f:
                f.write(struct.pack("<Q", blob) + descriptor)
            print("%s: %d descriptor bytes, init blob %d bytes" % (name, len(descriptor), blob))


if __name__ == "__main__":
    main()
