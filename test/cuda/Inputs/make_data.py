#!/usr/bin/env python3
"""make_data.py X.npy Y.npy N D: N float32 samples of D features (N(0,1)) and N int64 class
indices in [0, 10), fixed seed; pure Python (no numpy)."""
import os
import random
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from host_vs_cpu import write_npy  # noqa: E402

x, y, n, d = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(7)
write_npy(x, [n, d], "f4", [rng.gauss(0.0, 1.0) for _ in range(n * d)])
write_npy(y, [n], "i8", [rng.randrange(10) for _ in range(n)])
