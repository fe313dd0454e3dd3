#!/usr/bin/env bash
# GPU tests and benchmark of the evaluator on an H100/H200 host.
#   scripts/gpu_tests.sh [tests|bench|corpus|all|baselines] [extra pytest args...]
# baselines (not part of all): scripts/measure_baselines.py, every library baseline of the suite timed by the
# evaluator's own timer (evaluator/candidate_process/timing.py), into $OUT/baselines/ (baselines.json, baselines.md,
# baselines.log).
# corpus: the adversarial corpus (tests/adversarial/corpus.json) twice back to back through the evaluator, with
# the expected-vs-actual table and wall time of each round (also in $OUT/corpus.log and $OUT/corpus.json).
# Sandbox: candidate code runs under bubblewrap. GPU hosts lack the package: a bubblewrap .deb carried in .whl/
# (`apt-get download bubblewrap`) is unpacked with dpkg -x and used through EVALUATOR_BWRAP. If bwrap still cannot
# start, nothing runs ("not run", exit 4) unless the operator asked for it with EVALUATOR_ALLOW_UNSANDBOXED=1: then
# the run says so and every verdict records it.
# "not run": a pass that proved nothing exits non-zero. When every GPU test skipped (no GPU of the kind, a missing
# package: pytest itself exits 0 then) the tests part prints "gpu tests: not run" with the reasons and exits 5; the
# corpus prints "not run" for each entry whose needs are unmet here and exits non-zero (tests/adversarial/corpus.py).
# GPU_TEST_PATHS overrides the test paths (default: tests/evaluator tests/tasks/test_reference_solutions.py).
# Installs wheels carried in .whl/ (tvm-ffi, cupti-python, nvidia-cuda-cupti, pyelftools, jsonschema and its
# deps) into /tmp/site when present, runs `pytest -m gpu tests/evaluator tests/tasks/test_reference_solutions.py`, then the benchmark, and leaves
# logs, verdicts and Nsight Compute CSVs in $OUT (default ./gpu-out) as one archive plus two logs.
set -uo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"; shift || true
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if ! compgen -G ".whl/*.whl" >/dev/null && [ -d "${BUNDLE:-.gpu-bundle}/whl" ]; then
  # No .whl/ folder: use the bundle made by scripts/fetch_gpu_bundle.sh (wheels, bubblewrap, redis).
  BUNDLE=${BUNDLE:-.gpu-bundle}; source scripts/gpu_host_env.sh
elif compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "wheel install failed"; exit 3; }
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
if ! command -v bwrap >/dev/null && compgen -G ".whl/bubblewrap_*.deb" >/dev/null; then
  dpkg -x .whl/bubblewrap_*.deb /tmp/bwrap-root && export EVALUATOR_BWRAP=/tmp/bwrap-root/usr/bin/bwrap
fi
if python3 -c 'from evaluator.isolation.jail import open_jail; open_jail(allow_unsandboxed=False, gpu=True)' 2>"$OUT/sandbox.log"; then
  echo "sandbox: bubblewrap ($("${EVALUATOR_BWRAP:-bwrap}" --version))" | tee -a "$OUT/sandbox.log"
elif [[ "${EVALUATOR_ALLOW_UNSANDBOXED:-}" == 1 ]]; then
  echo "sandbox: UNAVAILABLE, running unsandboxed as asked (EVALUATOR_ALLOW_UNSANDBOXED=1): $(tail -1 "$OUT/sandbox.log")" \
    | tee -a "$OUT/sandbox.log"
else
  echo "sandbox: UNAVAILABLE: $(tail -1 "$OUT/sandbox.log")" | tee -a "$OUT/sandbox.log"
  echo "gpu tests: not run (no sandbox here; set EVALUATOR_ALLOW_UNSANDBOXED=1 to run candidate code without one)" \
    | tee -a "$OUT/sandbox.log"
  exit 4
fi
# Counters may need CAP_SYS_ADMIN, which the sandbox drops: allow the profiled run outside it (recorded).
export EVALUATOR_ALLOW_UNSANDBOXED_PROFILE="${EVALUATOR_ALLOW_UNSANDBOXED_PROFILE:-1}"
art="$(mktemp -d)"
export PTXBENCH_ARTIFACTS="$art"
{
  date -u; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm --format=csv
  nvcc --version | tail -1; (ncu --version | tail -1) 2>/dev/null
  python3 -c 'import torch, tvm_ffi; print("torch", torch.__version__, "cuda", torch.version.cuda, "tvm_ffi", tvm_ffi.__version__)'
  python3 -c 'from cupti import cupti; print("cupti-python ok")'
} 2>&1 | tee "$OUT/gpu-env.log"
rc=0
if [[ "$what" == tests || "$what" == all ]]; then
  rm -f "$OUT/gpu-tests.xml"
  # shellcheck disable=SC2086 # GPU_TEST_PATHS is a list of paths
  timeout "${TEST_LIMIT:-400}" python3 -m pytest -m gpu ${GPU_TEST_PATHS:-tests/evaluator tests/tasks/test_reference_solutions.py} \
    -p no:django -p no:cacheprovider -rA --junitxml="$OUT/gpu-tests.xml" "$@" 2>&1 | tee "$OUT/gpu-tests.log"
  rc=${PIPESTATUS[0]}
  # pytest exits 0 when every test skipped, and 5 when none was collected: either way nothing was shown here.
  if ! ran=$(python3 scripts/gpu_tests_ran.py "$OUT/gpu-tests.xml" 2>&1); then
    echo "gpu tests: not run ($ran)" | tee -a "$OUT/gpu-tests.log"
    [[ $rc -eq 0 || $rc -eq 5 ]] && rc=5
  else
    echo "gpu tests: $ran" | tee -a "$OUT/gpu-tests.log"
  fi
fi
if [[ "$what" == corpus || "$what" == all ]]; then
  start=$(date +%s)
  timeout "${CORPUS_LIMIT:-900}" python3 tests/adversarial/corpus.py --repeat 2 --json "$OUT/corpus.json" 2>&1 \
    | tee "$OUT/corpus.log"
  crc=${PIPESTATUS[0]}
  echo "corpus: exit $crc, wall time $(( $(date +%s) - start )) s for two rounds" | tee -a "$OUT/corpus.log"
  [[ $crc -ne 0 ]] && rc=$crc
fi
if [[ "$what" == bench || "$what" == all ]]; then
  timeout "${BENCH_LIMIT:-400}" python3 bench/evaluator_bench.py --out "$art" ${BENCH_ARGS:-} 2>&1 | tee "$art/bench.log"
fi
if [[ "$what" == baselines ]]; then
  mkdir -p "$OUT/baselines"
  timeout "${BASELINES_LIMIT:-540}" python3 scripts/measure_baselines.py --out "$OUT/baselines" ${BASELINES_ARGS:-} 2>&1 \
    | tee "$OUT/baselines/baselines.log"
  rc=${PIPESTATUS[0]}
fi
cp "$art"/bench-report.json "$art"/bench.log "$OUT/" 2>/dev/null
tar czf "$OUT/gpu-artifacts.tgz" -C "$art" .
echo
echo "== summary =="
grep -E "^(PASSED|FAILED|SKIPPED|ERROR) " "$OUT/gpu-tests.log" 2>/dev/null | sed 's/ - .*//' | sort | uniq -c | sort -rn | head -40
grep -E "^gpu tests: " "$OUT/gpu-tests.log" 2>/dev/null | tail -1
cat "$OUT/sandbox.log" 2>/dev/null | tail -1
[[ -f "$OUT/corpus.log" ]] && sed -n '/^== corpus round/,/^$/p' "$OUT/corpus.log"
[[ -f "$art/bench.log" ]] && sed -n '/^end to end/,$p' "$art/bench.log"
[[ -f "$OUT/baselines/baselines.md" ]] && cat "$OUT/baselines/baselines.md"
exit $rc
