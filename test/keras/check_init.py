#!/usr/bin/env python3
"""check_init.py IR: the initial values graphc computed for k3_cnn.json without --weights (read
from the dense_resource blobs of `graphc --compile-to=import`) follow Keras's initializers:
glorot_uniform kernels within sqrt(6 / (fan_in + fan_out)) and spread over that range, zero
biases and BatchNormalization beta / moving mean, ones for gamma and the moving variance."""
import re
import struct
import sys

text = open(sys.argv[1]).read()
blobs = {}
for name, hexdata in re.findall(r'^\s*([\w/]+): "0x([0-9A-F]+)"', text, re.M):
    raw = bytes.fromhex(hexdata)[4:]  # the first 4 bytes are the alignment
    blobs[name] = struct.unpack("<%df" % (len(raw) // 4), raw)
limits = {"conv2d/kernel": (6.0 / (27 + 36)) ** 0.5, "conv2d_1/kernel": (6.0 / (36 + 54)) ** 0.5,
          "dense/kernel": (6.0 / (24 + 5)) ** 0.5}
ok = True
for name, limit in limits.items():
    v = blobs[name]
    m = max(abs(x) for x in v)
    mean = sum(v) / len(v)
    print("%s: %d values, max |w| %.4f, limit %.4f, mean %.4f" % (name, len(v), m, limit, mean))
    ok &= m <= limit and m > 0.75 * limit and abs(mean) < 0.25 * limit
for name in ("conv2d/bias", "conv2d_1/bias", "dense/bias", "batch_normalization/beta",
             "batch_normalization/moving_mean"):
    ok &= all(x == 0 for x in blobs[name])
for name in ("batch_normalization/gamma", "batch_normalization/moving_variance"):
    ok &= all(x == 1 for x in blobs[name])
print("PASS" if ok else "FAIL")
