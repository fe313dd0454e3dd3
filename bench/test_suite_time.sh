#!/usr/bin/env bash
# How long `make test` takes from a fresh clone, for two commits on the same machine, in alternating order
# (A B, then B A, ...) so that a machine getting busier or quieter during the run weighs on both alike.
#   bash bench/test_suite_time.sh BEFORE AFTER [PAIRS] [OUT]
# BEFORE, AFTER: commits of this repository. PAIRS: how many A/B pairs (default 2). OUT: a JSON-lines file that
# gets one row per run (default docs/runs/performance/test-suite-<date>.jsonl). Each run is a `git clone` of this
# repository into a new folder under /tmp, checked out at the commit, then `make test` there: what CI does, with
# the machine's package caches as they are. Nothing else should run on the machine meanwhile. PYTEST_ADDOPTS reaches
# both commits' pytest alike (e.g. -k to leave out the same tests on both sides) and is recorded in each row.
set -euo pipefail
cd "$(dirname "$0")/.."
before=$(git rev-parse --verify "${1:?BEFORE commit}^{commit}")
after=$(git rev-parse --verify "${2:?AFTER commit}^{commit}")
pairs=${3:-2}
out=${4:-docs/runs/performance/test-suite-$(date -u +%Y-%m-%d).jsonl}
mkdir -p "$(dirname "$out")"
touch "$out"
repo=$PWD
first_row=$(( $(wc -l < "$out") + 1 ))  # the summary reads only this invocation's rows

run_one() {  # run_one LABEL COMMIT: one fresh clone, one `make test`, one JSON row
  local label=$1 commit=$2 dir log t0 t1 rc summary
  dir=$(mktemp -d /tmp/suite-time.XXXXXX)
  chmod 755 "$dir"  # as a clone anywhere else: the sandbox user must reach the checkout (tests run it unsandboxed)
  git clone -q "$repo" "$dir/repo"
  git -C "$dir/repo" checkout -q "$commit"
  log=$dir/make-test.log
  t0=$(date +%s.%N)
  rc=0
  (cd "$dir/repo" && make test) >"$log" 2>&1 || rc=$?
  t1=$(date +%s.%N)
  # pytest's last line: "2493 passed, 4 skipped, 1 warning in 327.37s (0:05:27)" (or "2 failed, 2491 passed, ...")
  summary=$(grep -E '^([0-9]+ failed, )?[0-9]+ passed.* in [0-9.]+s' "$log" | tail -1 || true)
  if [ "$rc" != 0 ]; then  # a failed run keeps its log beside the rows, to say why
    cp "$log" "${out%.jsonl}-$label-$(date -u +%H%M%S).log"
  fi
  python3 - "$label" "$commit" "$t0" "$t1" "$rc" "$summary" "$(nproc)" "$(cat /proc/loadavg)" <<'EOF' | tee -a "$out"
import json, os, re, sys, datetime
label, commit, t0, t1, rc, summary, cores, loadavg = sys.argv[1:]
passed = re.search(r"(\d+) passed", summary)
pytest_s = re.search(r" in ([0-9.]+)s", summary)
print(json.dumps({
    "label": label, "commit": commit, "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "exit": int(rc), "wall_s": round(float(t1) - float(t0), 1),
    "pytest_s": float(pytest_s.group(1)) if pytest_s else None, "passed": int(passed.group(1)) if passed else None,
    "cores": int(cores), "loadavg_after": loadavg.split()[:3],
    **({"pytest_addopts": os.environ["PYTEST_ADDOPTS"]} if os.environ.get("PYTEST_ADDOPTS") else {}),
}))
EOF
  rm -rf "$dir"
}

for ((i = 1; i <= pairs; i++)); do
  if ((i % 2)); then
    run_one before "$before"; run_one after "$after"
  else
    run_one after "$after"; run_one before "$before"
  fi
done
python3 - "$out" "$first_row" "$before" "$after" <<'EOF'
import json, statistics, sys
lines = open(sys.argv[1]).read().splitlines()[int(sys.argv[2]) - 1 :]
rows = [json.loads(l) for l in lines if l.strip()]
rows = [r for r in rows if r["commit"] in sys.argv[3:]]
for label in ("before", "after"):
    rs = [r for r in rows if r["label"] == label]
    if rs:
        print(f"{label:<7} {rs[0]['commit'][:9]}  runs {len(rs)}  wall median {statistics.median(r['wall_s'] for r in rs):.1f} s"
              f"  pytest median {statistics.median(r['pytest_s'] or 0 for r in rs):.1f} s  tests {rs[0]['passed']}"
              f"  failed runs {sum(r['exit'] != 0 for r in rs)}")
EOF
