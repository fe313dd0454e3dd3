#!/usr/bin/env bash
# One GPU pass for a session on an offline H200 host (the device tool runs it from the repo root):
#  1. a verdict for every Hopper expert reference kernel, written to docs/verdicts/ naming (imported by make run);
#  2. scripts/gpu_e2e.sh: the whole portal path (Redis, GPU worker, API) for the reference GEMM and a broken kernel.
# $OUT gets two files only, the log and a tarball refreshed after every step (so a run cut short still
# returns what it finished). Rehearse without a GPU: STAGES=policy,compile,sass.
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL=${OUT:-$PWD/gpu-out}
OUT=$(mktemp -d /tmp/gpu-session.XXXX)
BUNDLE=${BUNDLE:-.gpu-bundle}
mkdir -p "$OUT/verdicts" "$OUT/e2e" "$FINAL"
pack() { tar -C "$OUT" -czf "$FINAL/gpu-session.tar.gz" verdicts e2e; cp "$OUT/session.log" "$FINAL/"; }
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
STAGES=${STAGES:-policy,compile,sass,correctness,arch,timing}
exec > >(tee "$OUT/session.log") 2>&1

date -u; nvidia-smi --query-gpu=name,driver_version,uuid --format=csv,noheader 2>/dev/null || true
source scripts/gpu_host_env.sh
echo "sandbox: $(command -v bwrap || echo "${EVALUATOR_BWRAP:-none}")"

refs=(
  "gemm_n7168_k5120 hopper_tma_wgmma all"
  "gemm_n7168_k5120 simt_dead_wgmma headline"
  "gemm_n7168_k5120 simt_token_wgmma headline"
  "mha_with_lse_d128 hopper_wgmma_fa headline"
  "mha_with_lse_d128_causal hopper_wgmma_fa headline"
)
[ "${SKIP_VERDICTS:-0}" = "1" ] && refs=()
for ref in "${refs[@]}"; do
  read -r task sol workload <<<"$ref"
  name="$task-$sol-h200.json"
  start=$(date +%s)
  timeout "${VERDICT_TIMEOUT:-150}" $PY -m evaluator run "tasks/$task/solutions/$sol/kernel.cu" --task "$task" --arch sm_90a \
    --workload "$workload" --stages "$STAGES" --json "$OUT/verdicts/$name" --workdir "/tmp/wd-$task-$sol" \
    >"$OUT/verdicts/$task-$sol.log" 2>&1
  echo "$task/$sol: exit $? in $(( $(date +%s) - start )) s"
  tail -6 "$OUT/verdicts/$task-$sol.log"
  pack
done
for d in /tmp/wd-*; do [ -f "$d/logs/ncu-source.csv" ] && cp "$d/logs/ncu-source.csv" "$OUT/verdicts/ncu-source-${d#/tmp/wd-}.csv"; done

if [ "${PORTAL_GPU_TESTS:-0}" = "1" ]; then
  # The portal's gpu-marked tests (agent loop on a real GPU): Django, Redis and pytest-django from the bundle.
  start=$(date +%s)
  timeout "${TESTS_TIMEOUT:-240}" $PY -m pytest -m gpu -q -p no:cacheprovider \
    tests/agent/test_agent_gpu.py >"$OUT/e2e/portal-gpu-tests.log" 2>&1
  echo "portal gpu tests: exit $? in $(( $(date +%s) - start )) s"; tail -15 "$OUT/e2e/portal-gpu-tests.log"
  pack
fi

if [ "${SKIP_E2E:-0}" != "1" ]; then
  start=$(date +%s)
  OUT="$OUT/e2e" timeout "${E2E_TIMEOUT:-420}" bash scripts/gpu_e2e.sh "$BUNDLE"
  echo "gpu_e2e.sh: exit $? in $(( $(date +%s) - start )) s"
fi
echo "done: $(date -u)"
pack
