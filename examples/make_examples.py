#!/usr/bin/env python3
"""Writes examples/mlp.onnx and examples/cnn.onnx: the MLP and CNN of issue #2, batch 32.

Run with a Python that has torch and onnx (Debian's /usr/bin/python3):
    /usr/bin/python3 examples/make_examples.py
The models and their fixed initial weights come from test/e2e/models.py, so the files are the
same models the end-to-end tests train against PyTorch.
"""
import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "e2e"))
import models  # noqa: E402
import onnx  # noqa: E402

for name in ("mlp", "cnn"):
    path = os.path.join(HERE, name + ".onnx")
    models.export(name, path)
    onnx.checker.check_model(onnx.load(path))
    print("wrote %s (%d bytes; initializers: %s)"
          % (path, os.path.getsize(path), ", ".join(models.onnx_initializers(path))))
