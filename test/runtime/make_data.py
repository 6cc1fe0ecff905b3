#!/usr/bin/env python3
"""make_data.py DIR [--samples N] [--features F] [--classes C] [--seed S]

Writes DIR/x.npy (float32 [N, F], standard normal) and DIR/y.npy (int64 [N]: the index of the
largest of the first C features, so a linear model can learn it) for test/runtime."""
import argparse
import os

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("--samples", type=int, default=103)
ap.add_argument("--features", type=int, default=4)
ap.add_argument("--classes", type=int, default=3)
ap.add_argument("--seed", type=int, default=0)
a = ap.parse_args()
r = np.random.default_rng(a.seed)
x = r.standard_normal((a.samples, a.features), dtype=np.float32)
np.save(os.path.join(a.dir, "x.npy"), x)
np.save(os.path.join(a.dir, "y.npy"), np.argmax(x[:, :a.classes], axis=1).astype(np.int64))
