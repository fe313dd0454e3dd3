#!/usr/bin/env bash
# Fixit on an offline H200/H100 host: tests/fixit/test_fixit_gpu.py (a replayed student's three failing kernels, a
# repair run whose recorded teacher replies are scored end to end by the real evaluator through the portal's
# agent loop and GPU queue, the dataset built from it). The dataset's files land in $OUT/fixit-example
# (commit them as docs/examples/fixit-h200/), the log in $OUT/fixit-gpu.log.
# Usage: bash scripts/gpu_fixit.sh [BUNDLE_DIR]  (default .gpu-bundle, made by scripts/fetch_gpu_bundle.sh;
# it must carry pyarrow). FIXIT_GPU_REHEARSAL=1 rehearses it without a GPU (CPU stages, no pair expected).
set -uo pipefail
cd "$(dirname "$0")/.."
BUNDLE=${1:-${BUNDLE:-.gpu-bundle}}
OUT=${OUT:-$PWD/gpu-out}
PY=${PYTHON:-python3}
mkdir -p "$OUT/fixit-example"
export PYTHONUNBUFFERED=1
source scripts/gpu_host_env.sh
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
start=$(date +%s)
FIXIT_EXAMPLE_OUT="$OUT/fixit-example" timeout "${TESTS_TIMEOUT:-420}" $PY -m pytest -m gpu -q -p no:cacheprovider -rA \
  tests/fixit/test_fixit_gpu.py 2>&1 | tee "$OUT/fixit-gpu.log"
rc=${PIPESTATUS[0]}
echo "fixit gpu test: exit $rc in $(( $(date +%s) - start )) s" | tee -a "$OUT/fixit-gpu.log"
ls -lR "$OUT/fixit-example" | tee -a "$OUT/fixit-gpu.log"
exit "$rc"
