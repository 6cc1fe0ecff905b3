#!/usr/bin/env python3
"""make_sparse_npy.py PATH DESCR SHAPE

Writes a .npy header for a C-order array of dtype DESCR ('<f4', '|u1', ...) and SHAPE
('268435456,4') and extends the file to its full size with truncate(), so that it is sparse:
gigabytes of zeros that occupy no disk space (test/runtime/large-data.test). Prints the size."""
import sys

import numpy as np

path, descr, shape_text = sys.argv[1:4]
shape = tuple(int(d) for d in shape_text.split(","))
with open(path, "wb") as f:
    np.lib.format.write_array_header_2_0(
        f, {"descr": descr, "fortran_order": False, "shape": shape})
    size = f.tell() + int(np.prod(shape, dtype=np.int64)) * np.dtype(descr).itemsize
    f.truncate(size)
print(size)
