#!/usr/bin/env bash
# One session's GPU pass on an offline H200 (the device tool runs it from the repo root), in ten modes:
#   smoke   the headline GEMM's phases, four corpus entries (ENTRIES=a,b,...), the references, in that order (shortest
#           first): a changed evaluator's first look.
#   fixit   tests/fixit/test_fixit_gpu.py alone (~2 minutes); FIXIT_REPEAT=3 runs it three times in a row, after
#           the headline GEMM's phase table (bench/evaluator_phases.py) when PHASES=1.
#   entries chosen corpus entries only (ENTRIES=a,b,...): a changed evaluator's first look before a whole round.
#   checks  every sm_90a reference kernel (CUDA and Triton; verdicts kept), chosen corpus entries, Fixit end to end
#           through the portal's GPU worker (tests/fixit/test_fixit_gpu.py); about 8 minutes.
#   probe   bench/evaluator_phases.py (where one verdict's time goes), scripts/measure_baselines.py (every library
#           baseline by the evaluator's timer), the Triton GPU tests (references and the 17 starters); ~7 minutes.
#   cost    bench/evaluator_phases.py and bench/evaluator_bench.py on the headline GEMM, the Triton starter tests.
#   holds   the false-hold rate (tests/submissions/test_false_holds_gpu.py: every sm_90a reference 5 times through the
#           portal's GPU path with a CPU load), detached like corpus: `holds start`, then `holds wait` at once.
#           All ten references take about an hour on one GPU: FALSE_HOLDS_ONLY=task/solution,... runs a part per session,
#           FALSE_HOLDS_THEN=... a second part after it; on a host of several GPUs HOLDS_GPUS=all runs one part per
#           GPU at once (FALSE_HOLDS_PART), each pinned to its GPU and loading its share of the cores.
#   first   a changed evaluator's first look, detached like corpus (`first start`, then `first wait` at once): the
#           lent-calls and evaluator GPU tests, every sm_90a reference kernel (verdicts kept), the library baselines
#           of NEW_TASKS (default: the FP8 GEMM and d256 attention tasks; their outputs' error against the reference
#           is what their tolerance rests on), bench/probe_ncu_tensor_pipe.sh, and FIRST_ENTRIES of the corpus; ~13 minutes.
#   pass    one session's look at a changed evaluator on one GPU, detached (`pass start`, then `pass wait` calls at
#           once): every sm_90a reference kernel when PASS_REFERENCES=1, the false-hold test on PASS_HOLDS (default:
#           the FP8 reference), the tensor-pipe probe, the headline GEMM's phases, then the corpus once
#           (CORPUS_REPEAT; PASS_ENTRIES=FILE: only its entries, in its order); the longest part last, so a machine
#           lost early keeps the rest. PASS_HOLDS=none and PASS_PHASES=0 leave those steps out; PASS_SOURCE_BLOCKS=1
#           adds bench/probe_ncu_source_blocks.sh after the tensor-pipe probe, and bench/probe_ncu_import_sandbox.py
#           on its reports; PASS_WITNESS_PROBE=1 adds bench/probe_witness_background.py (~3 minutes) after them;
#           PASS_GPM_ARTEFACT=1 runs bench/probe_gpm_artefact.py (~4 minutes) before everything, PASS_MODULE_IMAGES=1
#           bench/probe_module_images.py (~2 minutes) before that; PASS_ALL_WORKLOADS=task/solution,... runs those
#           references on every workload of their tasks (as the portal does) before the references.
#   corpus  the whole adversarial corpus twice back to back in one process (tests/adversarial/corpus.py
#           --repeat 2, or CORPUS_REPEAT), started detached so that it outlives one device call: `corpus start`, then
#           `corpus wait` in the next call (it waits up to WAIT_S and prints the table when done).
#           Send that next call at once: the device tool gives an idle machine back after ~30 s, and a
#           fresh machine has no corpus running (`corpus wait` then finds no log). On a host of several GPUs,
#           CORPUS_GPUS=all spreads each round over all of them (one runner process pinned to each GPU, as a worker
#           pins itself): one round of 106 entries took 15 minutes on one H200 (2026-12-04), so two barely fit in one
#           session's 30 minutes of device time.
#   MODE stop  ends what `MODE start` left running (pass, first, corpus, holds): every process of the session it
#           started, then packs what it wrote. GPU_PASS_WORK moves the working folder (default /tmp/gpu-pass).
# Needs .carry/ (git-ignored; `bash scripts/make_gpu_carry.sh` builds it from .gpu-bundle/): site.tar.xz (the
# Python packages the host lacks, pruned and compressed to fit the device tool's 64 MiB) and Debian .debs
# (bubblewrap, redis-server). Everything lands in $OUT as one tarball plus the log.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-checks}; sub=${2:-}
FINAL=${OUT:-$PWD/gpu-out}
WORK=${GPU_PASS_WORK:-/tmp/gpu-pass}  # where a detached mode writes, between device calls
mkdir -p "$FINAL" "$WORK"
export PYTHONUNBUFFERED=1 EVALUATOR_COMPILE_CACHE=$WORK/compile-cache
BUNDLE=${BUNDLE:-.carry}
# shellcheck source=scripts/gpu_host_env.sh
source scripts/gpu_host_env.sh
env_log() {
  date -u; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm --format=csv,noheader
  nvcc --version | tail -1; ncu --version | tail -1; "${EVALUATOR_BWRAP:-bwrap}" --version
  python3 -c 'import torch, triton, tvm_ffi; print("torch", torch.__version__, "triton", triton.__version__, "tvm_ffi", tvm_ffi.__version__)'
  python3 -c 'import django, pyarrow; print("django", django.__version__, "pyarrow", pyarrow.__version__)'
  git log -1 --format='commit %H %s (the git metadata of this copy, which can be older than its files)' 2>/dev/null || true
  echo "tree digest $(bash scripts/tree_digest.sh) (bash scripts/tree_digest.sh COMMIT gives a commit's)"
}
pack() { tar -C "$WORK" -czf "$FINAL/gpu-pass.tgz" --exclude compile-cache --exclude 'fixit-site' . 2>/dev/null; }

# step NAME LIMIT LINES CMD...: CMD under a time limit, its output in $WORK/NAME.log (LINES of it shown), its exit
# status and seconds printed, the results packed so far.
step() {
  local name=$1 limit=$2 lines=$3 t0 rc
  shift 3
  t0=$(date +%s)
  timeout "$limit" "$@" > "$WORK/$name.log" 2>&1
  rc=$?
  tail -n "$lines" "$WORK/$name.log"
  echo "$name: exit $rc in $(( $(date +%s) - t0 )) s"
  # A test stopped at its limit tears down its fixtures (Redis first) and may print FAILED for the round under way.
  [ "$rc" = 124 ] && echo "$name: cut off at its ${limit} s limit: any FAILED above is that cut, not a verdict"
  pack
}
fixit_step() {
  mkdir -p "$WORK/fixit-example" "$WORK/fixit-verdicts"
  export FIXIT_EXAMPLE_OUT="$WORK/fixit-example" FIXIT_VERDICTS_OUT="$WORK/fixit-verdicts"
  step fixit "${FIXIT_LIMIT:-240}" 25 python3 -m pytest -m gpu -q -p no:cacheprovider -rA tests/fixit/test_fixit_gpu.py
}
# spawn_session SIDFILE SCRIPT: SCRIPT run by bash as the leader of a new session, so that it outlives this device
# call; its first act is to write its pid (the session id, which `MODE stop` ends) to SIDFILE.
spawn_session() {
  rm -f "$1"
  setsid nohup bash -c 'echo $$ > "$1"; eval "$2"' _ "$1" "$2" >/dev/null 2>&1 < /dev/null &
}
# detach, await_done: `bash $0 MODE run` started so that it outlives this device call, and the next call's wait
# (up to WAIT_S) for its $WORK/MODE.done.
detach() {
  rm -f "$WORK/$mode.done"
  spawn_session "$WORK/$mode.sid" "exec bash '$0' '$mode' run"
  await_sessions "$WORK/$mode.sid" && echo "$mode started: $(date -u)"
}
# await_sessions SIDFILE...: until each detached shell has written its session id (it is then its own session, out
# of this device call's reach), at most SESSION_WAIT_S (10 s); says which did not, as `MODE stop` then cannot end it.
await_sessions() {
  local f missing
  for _ in $(seq $(( ${SESSION_WAIT_S:-10} * 10 ))); do
    missing=()
    for f in "$@"; do [ -s "$f" ] || missing+=("$f"); done
    [ "${#missing[@]}" = 0 ] && return 0
    sleep 0.1
  done
  echo "not started in ${SESSION_WAIT_S:-10} s (no session id in ${missing[*]}): \`$mode stop\` cannot end it if it starts late" >&2
  return 1
}
# MODE stop: ends what `MODE start` left running (the session it started, so every child of it: the runner, its
# evaluators and their profilers) and packs what it wrote, so that the device's remaining time can go to another
# mode without two users of the GPU. The command line never names the processes, so it cannot match itself.
stop_detached() {
  local f sid
  for f in "$WORK/$mode.sid" "$WORK/$mode"-*.sid; do
    [ -f "$f" ] || continue
    sid=$(cat "$f")
    pkill -TERM -s "$sid" 2>/dev/null
    # Up to 3 s for them to end; an ended process waiting for its parent to reap it (Z) holds nothing.
    for _ in $(seq 30); do ps -o stat= -s "$sid" | grep -qv '^Z' || break; sleep 0.1; done
    pkill -KILL -s "$sid" 2>/dev/null
    rm -f "$f"
  done
  echo "$mode stopped: $(date -u)"
}
await_done() {
  local end=$(( $(date +%s) + ${WAIT_S:-570} ))
  while [ ! -f "$WORK/$mode.done" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 1; done
}
# The steps more than one mode runs: LIMIT (the default of its *_LIMIT variable) and the LINES of its log shown.
references_step() {  # references_step LIMIT LINES
  step references "${REF_LIMIT:-$1}" "$2" python3 scripts/gpu_references.py --out "$WORK/verdicts" --prebuild 8
}
phases_step() {  # phases_step REPEATS LINES
  step phases "${PHASES_LIMIT:-150}" "$2" python3 bench/evaluator_phases.py --repeats "$1" --out "$WORK/phases"
}
probe_step() { step ncu-tensor-pipe "${PROBE_LIMIT:-150}" 40 env OUT="$WORK" bash bench/probe_ncu_tensor_pipe.sh; }
# The false-hold test (every sm_90a reference five times through the portal's GPU path with a CPU load).
HOLDS_TEST="python3 -m pytest -m gpu -q -s -p no:cacheprovider -rA tests/submissions/test_false_holds_gpu.py"
# What a corpus run has done so far: its count, the entries not as expected and, once it has ended, its table.
corpus_summary() {  # corpus_summary ENDED(0|1)
  echo "corpus: $(grep -c '^\s*\[' "$WORK/corpus.log") entries done, $(grep -c '(NOT OK' "$WORK/corpus.log") not as expected"
  grep -E '^\s+\[[0-9]\].*\(NOT OK' "$WORK/corpus.log" | head -8
  [ "$1" = 1 ] && sed -n '/^== corpus round/,$p' "$WORK/corpus.log" | grep -E "^==|NO |  no " | head -40
}
begin() { exec > >(tee "$WORK/$mode.log") 2>&1; env_log | tee "$WORK/env.log"; }
finish() { cp "$WORK/$mode.log" "$FINAL/"; exit 0; }

if [ "$sub" = stop ]; then
  stop_detached
  pack; cp "$WORK/$mode.log" "$WORK"/corpus.log "$WORK"/holds-*.log "$FINAL/" 2>/dev/null
  exit 0
fi

if [ "$mode" = checks ]; then
  begin
  references_step 330 20
  step corpus-entries "${ENTRY_LIMIT:-150}" 12 python3 tests/adversarial/corpus.py --prebuild 8 \
    --json "$WORK/corpus-checks.json" \
    --only "${ENTRIES:-module_loaded_same_name,triton_skip_after_trials,triton_dead_dot,infinite_loop}"
  fixit_step
  finish
fi

if [ "$mode" = smoke ]; then  # a changed evaluator's first look, shortest step first so a call cut short keeps it
  begin
  phases_step 2 40
  step corpus-entries "${ENTRY_LIMIT:-150}" 14 python3 tests/adversarial/corpus.py --prebuild 8 \
    --json "$WORK/corpus-checks.json" \
    --only "${ENTRIES:-python_patch_timer,cpu_gemm_host_threads,control_side_stream_joined,triton_escape_cache_link_environ}"
  references_step 330 20
  finish
fi

if [ "$mode" = fixit ]; then  # the Fixit end-to-end test alone (its dataset, or its attempts' verdicts, packed)
  begin
  if [ "${PHASES:-0}" = 1 ]; then  # first: the shorter of the two, so a call cut short still has it
    phases_step 2 40
  fi
  for n in $(seq 1 "${FIXIT_REPEAT:-1}"); do
    echo "== fixit run $n of ${FIXIT_REPEAT:-1}"
    fixit_step
    cp "$WORK/fixit.log" "$WORK/fixit-run$n.log"
  done
  finish
fi

if [ "$mode" = entries ]; then  # chosen corpus entries, nothing else
  begin
  step corpus-entries "${ENTRY_LIMIT:-300}" 30 python3 tests/adversarial/corpus.py --prebuild 8 \
    --json "$WORK/corpus-entries.json" --only "${ENTRIES:?name the entries: ENTRIES=a,b}"
  finish
fi

if [ "$mode" = probe ]; then  # where a verdict's time goes, the library baselines, the Triton GPU tests
  begin
  phases_step 2 40
  mkdir -p "$WORK/baselines"
  step baselines "${BASELINES_LIMIT:-240}" 45 python3 scripts/measure_baselines.py --out "$WORK/baselines"
  step triton-gpu "${STARTER_LIMIT:-150}" 25 python3 -m pytest -m gpu -q -p no:cacheprovider -rA \
    tests/evaluator/test_triton_gpu.py
  finish
fi

if [ "$mode" = cost ]; then  # the headline GEMM's time per verdict, every stage, and where it goes; Triton starters
  begin
  phases_step 3 60
  step evaluator-bench "${BENCH_LIMIT:-120}" 12 python3 bench/evaluator_bench.py --repeats 2 \
    --skip fidelity,calibration --out "$WORK/bench"
  step triton-starters "${STARTER_LIMIT:-200}" 12 python3 -m pytest -m gpu -q -p no:cacheprovider -rA -k starter \
    tests/evaluator/test_triton_gpu.py
  finish
fi

if [ "$mode" = holds ] && [ "$sub" = start ]; then  # the false-hold rate: tests/submissions/test_false_holds_gpu.py, detached
  env_log > "$WORK/holds-env.log" 2>&1
  # HOLDS_GPUS=all on a host of several GPUs: one part of the kernels per GPU (FALSE_HOLDS_PART), each process pinned
  # to its GPU as a worker is, each loading its share of the cores, so the host is as busy as with one process.
  gpus=("")
  [ "${HOLDS_GPUS:-}" = all ] && mapfile -t gpus < <(nvidia-smi --query-gpu=uuid --format=csv,noheader)
  parts=${#gpus[@]}
  load=$(( $(nproc) / parts - 2 )); [ "$load" -ge 1 ] || load=1
  # Each part's rows start afresh: an earlier run's (a pass's holds step writes holds-0.jsonl too) are in its tarball.
  echo "$parts" > "$WORK/holds.parts"; rm -f "$WORK"/holds-*.done "$WORK"/holds-*.jsonl "$WORK"/holds-*.sid
  sids=()
  for i in "${!gpus[@]}"; do
    pin=""
    sids+=("$WORK/holds-$i.sid")
    # Each part has its own data folder: the test database is a file there.
    [ "$parts" -gt 1 ] && pin="CUDA_VISIBLE_DEVICES=${gpus[$i]} FALSE_HOLDS_PART=$i/$parts FALSE_HOLDS_LOAD=$load \
      PORTAL_DATA_DIR='$WORK/holds-data-$i'"
    # FALSE_HOLDS_THEN=task/solution,...: a second part run after the first ends, so that a call cut short by the
    # device's time still has the first part whole (each round writes its rows to the part's .jsonl as it ends).
    holds="$pin FALSE_HOLDS_OUT='$WORK/holds-$i.jsonl' $HOLDS_TEST >> '$WORK/holds-$i.log' 2>&1"
    spawn_session "$WORK/holds-$i.sid" ": > '$WORK/holds-$i.log'; $holds; rc=\$?
      if [ -n '${FALSE_HOLDS_THEN:-}' ]; then FALSE_HOLDS_ONLY='${FALSE_HOLDS_THEN:-}' $holds; rc=\$(( rc | \$? )); fi
      echo \"exit \$rc\" > '$WORK/holds-$i.done'"
  done
  await_sessions "${sids[@]}" && echo "false-hold run started in $parts part(s): $(date -u)"
  exit
fi
if [ "$mode" = holds ] && [ "$sub" = wait ]; then
  end=$(( $(date +%s) + ${WAIT_S:-570} ))
  parts=$(cat "$WORK/holds.parts" 2>/dev/null || echo 1)
  finished() { [ "$(find "$WORK" -maxdepth 1 -name 'holds-*.done' | wc -l)" -ge "$parts" ]; }
  while ! finished && [ "$(date +%s)" -lt "$end" ]; do sleep 1; done
  cat "$WORK"/holds-*.jsonl > "$WORK/holds.jsonl" 2>/dev/null
  if finished; then
    cat "$WORK"/holds-*.done; grep -hE "STATIC_ONLY|PASSED|INCORRECT|ERROR|passed|failed" "$WORK"/holds-*.log | tail -45
  else
    # The test appends one row per evaluation as it ends; the worker's log is no count (it can print a job twice).
    echo "false-hold run still running: $(cat "$WORK"/holds-*.jsonl 2>/dev/null | grep -c .) evaluations recorded"
  fi
  cp "$WORK"/holds-*.log "$WORK/holds.jsonl" "$WORK/holds-env.log" "$FINAL/" 2>/dev/null  # the rounds finished so far
  exit 0
fi

if [ "$mode" = first ] && [ "$sub" = run ]; then  # the steps themselves (`first start` runs this detached)
  begin
  step gpu-tests "${GPU_TESTS_LIMIT:-540}" 30 python3 -m pytest -m gpu -q -p no:cacheprovider -rA \
    tests/evaluator/test_lent_calls_gpu.py tests/evaluator/test_gpu_evaluator.py
  references_step 480 24
  mkdir -p "$WORK/baselines"
  # shellcheck disable=SC2086  # the task names are words
  step baselines "${BASELINES_LIMIT:-240}" 20 python3 scripts/measure_baselines.py --out "$WORK/baselines" \
    --tasks ${NEW_TASKS:-gemm_fp8_n7168_k5120 mha_with_lse_d256 mha_with_lse_d256_causal}
  probe_step
  step corpus-entries "${ENTRY_LIMIT:-300}" 12 python3 tests/adversarial/corpus.py --prebuild 8 \
    --json "$WORK/corpus-first.json" \
    --only "${FIRST_ENTRIES:-untimed_seed_prediction,triton_untimed_timer_forgery,harness_profile_branch,control_reference_hopper}"
  echo "exit 0" > "$WORK/first.done"
  finish
fi
if [ "$mode" = first ] && [ "$sub" = start ]; then detach; sub=wait; fi
if [ "$mode" = first ] && [ "$sub" = wait ]; then
  await_done
  grep -E "^[a-z-]+: exit [0-9]+ in [0-9]+ s$" "$WORK/first.log"
  if [ -f "$WORK/first.done" ]; then
    grep -hE "passed|failed|^ *(ok|NO) |  \[1\] |differs|TFLOP" "$WORK"/{gpu-tests,references,baselines,corpus-entries}.log | tail -60
  else
    echo "first look still running: $(tail -1 "$WORK/first.log")"
  fi
  pack; cp "$WORK/first.log" "$WORK/env.log" "$FINAL/" 2>/dev/null
  exit 0
fi

if [ "$mode" = pass ] && [ "$sub" = run ]; then  # the steps themselves (`pass start` runs this detached)
  begin
  if [ "${PASS_MODULE_IMAGES:-0}" = 1 ]; then  # whether a loaded module's image is the build's device ELF
    step module-images 200 40 python3 bench/probe_module_images.py --out "$WORK/module-images"
  fi
  if [ "${PASS_GPM_ARTEFACT:-0}" = 1 ]; then  # what GPM counts as tensor work where none runs (first: ~4 minutes)
    step gpm-artefact 360 20 python3 bench/probe_gpm_artefact.py --out "$WORK/gpm-artefact"
  fi
  if [ -n "${PASS_ALL_WORKLOADS:-}" ]; then  # these references on every workload of their tasks, as the portal runs them
    step all-workloads "${ALL_WORKLOADS_LIMIT:-300}" 8 python3 scripts/gpu_references.py --out "$WORK/verdicts-all" \
      --workloads all --only "$PASS_ALL_WORKLOADS"
  fi
  if [ "${PASS_REFERENCES:-0}" = 1 ]; then
    references_step 480 24
  fi
  # The false-hold test through the portal's GPU path (each round's rows appended to holds-0.jsonl as it ends);
  # PASS_HOLDS=none leaves it out.
  if [ "${PASS_HOLDS:-}" != none ]; then
    # shellcheck disable=SC2086  # the test's command is words
    step holds "${HOLDS_LIMIT:-420}" 30 env FALSE_HOLDS_ONLY="${PASS_HOLDS:-gemm_fp8_n7168_k5120/hopper_tma_wgmma_fp8}" \
      FALSE_HOLDS_OUT="$WORK/holds-0.jsonl" $HOLDS_TEST
  fi
  probe_step
  if [ "${PASS_SOURCE_BLOCKS:-0}" = 1 ]; then  # how the source page lists the kernels of one library's call
    step ncu-source-blocks "${PROBE_LIMIT:-150}" 40 env OUT="$WORK" bash bench/probe_ncu_source_blocks.sh
    # The same reports imported here and in the profile's sandbox (EVALUATOR_NCU_IMPORT_SANDBOX's check)
    step ncu-import-sandbox 120 12 python3 bench/probe_ncu_import_sandbox.py "$WORK"/ncu-source-blocks/*.ncu-rep
  fi
  if [ "${PASS_WITNESS_PROBE:-0}" = 1 ]; then  # the tensor witness's background, with and without a GPM sampler
    step witness-background 420 20 python3 bench/probe_witness_background.py --out "$WORK/witness-background"
  fi
  [ "${PASS_PHASES:-1}" = 1 ] && phases_step 2 40
  env_log > "$WORK/corpus-env.log" 2>&1
  echo "corpus: started $(date -u)"
  # PASS_ENTRIES=FILE (one entry name a line): those entries only, e.g. the ones a cut-short run did not reach.
  only=(); [ -n "${PASS_ENTRIES:-}" ] && only=(--only "$(grep -v '^#' "$PASS_ENTRIES" | paste -sd, -)")
  python3 tests/adversarial/corpus.py --repeat "${CORPUS_REPEAT:-1}" --prebuild 12 "${only[@]}" \
    --json "$WORK/corpus.json" > "$WORK/corpus.log" 2>&1
  echo "corpus: exit $? $(date -u)"; echo "exit 0" > "$WORK/pass.done"
  gzip -kf "$WORK/corpus.json"; finish
fi
if [ "$mode" = pass ] && [ "$sub" = start ]; then detach; sub=wait; fi
if [ "$mode" = pass ] && [ "$sub" = wait ]; then
  await_done
  grep -E "^[a-z-]+: exit [0-9]+ in [0-9]+ s$|^corpus: " "$WORK/pass.log"
  sed -n '/^== reference kernels/,$p' "$WORK/references.log" "$WORK/all-workloads.log" 2>/dev/null | cut -c1-130
  grep -h "^run [0-9]" "$WORK/phases.log" 2>/dev/null | cut -c1-200
  grep -hE "held|PASSED|passed|failed|rows" "$WORK/holds.log" 2>/dev/null | tail -12 | cut -c1-200
  [ -f "$WORK/corpus.log" ] && corpus_summary "$([ -f "$WORK/pass.done" ] && echo 1 || echo 0)"
  pack; cp "$WORK/pass.log" "$WORK/env.log" "$WORK/corpus-env.log" "$WORK/corpus.log" "$WORK/holds-0.jsonl" "$FINAL/" 2>/dev/null
  exit 0
fi

if [ "$mode" = corpus ] && [ "$sub" = run ]; then  # in the foreground, within one call (CORPUS_ARGS=--gpu-only)
  env_log > "$WORK/corpus-env.log" 2>&1
  timeout "${CORPUS_LIMIT:-540}" python3 tests/adversarial/corpus.py --repeat ${CORPUS_REPEAT:-2} --prebuild 12 ${CORPUS_GPUS:+--gpus $CORPUS_GPUS} ${CORPUS_ARGS:-} \
    --json "$WORK/corpus.json" > "$WORK/corpus.log" 2>&1
  echo "exit $?" > "$WORK/corpus.done"
  sub=wait
fi
if [ "$mode" = corpus ] && [ "$sub" = start ]; then
  env_log > "$WORK/corpus-env.log" 2>&1
  rm -f "$WORK/corpus.done"
  spawn_session "$WORK/corpus.sid" "python3 tests/adversarial/corpus.py --repeat ${CORPUS_REPEAT:-2} --prebuild 12 ${CORPUS_GPUS:+--gpus $CORPUS_GPUS} ${CORPUS_ARGS:-} \
    --json '$WORK/corpus.json' > '$WORK/corpus.log' 2>&1; echo \"exit \$?\" > '$WORK/corpus.done'"
  await_sessions "$WORK/corpus.sid" && echo "corpus started: $(date -u)"
  sub=wait
fi
if [ "$mode" = corpus ] && [ "$sub" = wait ]; then
  end=$(( $(date +%s) + ${WAIT_S:-570} ))
  while [ ! -f "$WORK/corpus.done" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 1; done
  grep -E '^\s+\[[0-9]\]' "$WORK/corpus.log" | tail -3
  if [ -f "$WORK/corpus.done" ]; then
    cat "$WORK/corpus.done"; corpus_summary 1
    gzip -kf "$WORK/corpus.json"; pack
  else
    echo "corpus still running"; corpus_summary 0
  fi
  cp "$WORK/corpus.log" "$WORK/corpus-env.log" "$FINAL/"
fi
