# lit runs every GoogleTest binary in build/test/Unit (one lit test per gtest case).
import os

import lit.formats

config.name = "graphc-unit"
config.suffixes = []
config.test_source_root = os.path.join(config.graphc_obj_root, "test", "Unit")
config.test_exec_root = config.test_source_root
config.test_format = lit.formats.GoogleTest(".", "Tests")
config.environment["OPENBLAS_NUM_THREADS"] = "1"
