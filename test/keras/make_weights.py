#!/usr/bin/env python3
"""make_weights.py CASE OUT [GROUP]: writes the random weights of keras_vs_torch.py's CASE to OUT in
the case's Keras layout (for the error tests), without GROUP when given."""
import os
import sys

import numpy as np

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras_vs_torch as K  # noqa: E402

case = K.CASES[sys.argv[1]]
K.write_weights(case, K.initial_weights(case, np.random.default_rng(0)), sys.argv[2])
if len(sys.argv) > 3:
    import h5py
    with h5py.File(sys.argv[2], "a") as f:
        del f[sys.argv[3]]
