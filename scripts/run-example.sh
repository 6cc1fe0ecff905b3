#!/usr/bin/env bash
# The main job on a built-in example: compile examples/cnn.onnx (Conv32-Pool-Dense10, batch 32,
# Adam) for a 64 MiB budget, print the fit report and the plan table, then train the binary
# for a few steps on generated data: on the GPU when one is visible (nvidia-smi lists it) and
# graphc was built with the CUDA toolkit, else on the CPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/build.sh" graphc graphc_runtime graphc_runtime_main
target=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then
  if ninja -C "$root/build" -t targets all 2>/dev/null | grep -q "^graphc_cuda_runtime:"; then
    ninja -C "$root/build" graphc_cuda_runtime >/dev/null
    target=cuda
  else
    echo "note: a GPU is visible but graphc was built without the CUDA toolkit; training on the CPU"
  fi
fi
out="$root/out/example"
mkdir -p "$out"
/usr/bin/python3 - "$out" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(0)
np.save(f"{sys.argv[1]}/x.npy", rng.standard_normal((320, 3, 28, 28), dtype=np.float32))
np.save(f"{sys.argv[1]}/y.npy", rng.integers(0, 10, size=320, dtype=np.int64))
PY
"$root/build/bin/graphc" "$root/examples/cnn.onnx" -o "$out/train" --target=$target \
  --optimizer=adam --lr=0.001 --budget=64MiB --print-plan --plan-out="$out/plan.json" \
  --plan-out="$out/plan.csv"
"$out/train" --data "$out/x.npy" --labels "$out/y.npy" --steps 10 --save-weights "$out/weights"
echo "trained on the $target: weights in $out/weights, plan in $out/plan.json"
