#!/usr/bin/env bash
# Builds everything and runs every test through lit (FileCheck tests, end-to-end checks against
# PyTorch, and the GoogleTest unit binaries), then prints one summary line
# "N passed, N failed, N skipped" for CI.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/build.sh"
results="$root/build/test-results.json"
rm -f "$results"
set +e
/usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv -j"$(nproc)" \
  --resultdb-output "$results" "$root/build/test" "$root/build/test/Unit"
status=$?
set -e
/usr/bin/python3 - "$results" "$status" <<'PY'
import json, sys
path, status = sys.argv[1], int(sys.argv[2])
try:
    tests = json.load(open(path))["tests"]
except Exception as e:
    print(f"0 passed, 1 failed  (lit produced no results: {e})")
    sys.exit(1)
passed = sum(t["status"] == "PASS" for t in tests)
skipped = sum(t["status"] == "SKIP" for t in tests)
failed = len(tests) - passed - skipped
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed or status else 0)
PY
