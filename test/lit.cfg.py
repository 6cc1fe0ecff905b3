# lit configuration for graphc's FileCheck and end-to-end tests.
import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config

config.name = "graphc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".py"]
config.excludes = ["Unit", "Inputs", "lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.graphc_obj_root, "test")

llvm_config.with_system_environment(["HOME", "TMPDIR", "PATH", "CCACHE_DIR"])
llvm_config.use_default_substitutions()

# Tools: ours first, then FileCheck/not/count from LLVM 19.
llvm_config.with_environment("PATH", config.graphc_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
# Generated training binaries are single-threaded in tests: deterministic and cheap on 2 cores.
config.environment["OPENBLAS_NUM_THREADS"] = "1"

config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%graphc_src", config.graphc_src_root))
config.substitutions.append(("%graphc", os.path.join(config.graphc_tools_dir, "graphc")))

# `torch`: PyTorch from Debian, the numerics reference for the end-to-end tests.
try:
    subprocess.run([config.python_executable, "-c", "import torch, onnx, numpy"],
                   check=True, capture_output=True, timeout=120)
    config.available_features.add("torch")
except Exception:
    pass

# `nvcc`: the CUDA toolkit compiles emitted .cu files even without a GPU.
if config.nvcc_executable or shutil.which("nvcc") or os.path.exists("/usr/local/cuda/bin/nvcc"):
    config.available_features.add("nvcc")

# `avx2`: the CPU has AVX2 and FMA, so OpenBLAS has better kernels than its SSE3 fallback here.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = next((l.split(":", 1)[1].split() for l in cpuinfo if l.startswith("flags")), [])
    if "avx2" in flags and "fma" in flags:
        config.available_features.add("avx2")
except OSError:
    pass

# `valgrind`: counts heap allocations of training binaries.
if shutil.which("valgrind"):
    config.available_features.add("valgrind")

# `chromium`: headless browser for checking HTML plan pictures.
if shutil.which("chromium"):
    config.available_features.add("chromium")

# `mpi`: graphc was built with MPI, so --data-parallel CPU binaries link and run under mpiexec.
# Tests run as root in CI and start more ranks than there are cores.
if config.mpiexec_executable and os.path.exists(config.mpiexec_executable):
    config.available_features.add("mpi")
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    config.environment["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    config.substitutions.append(("%mpirun", config.mpiexec_executable))
