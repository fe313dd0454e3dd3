#!/usr/bin/env bash
# How does Nsight Compute's source page list the kernels of one profiled call when they come from one module (every
# CUDA submission is one library)? The evaluator reads one block per profiled launch; on an H100 on 2026-12-05 a
# call of two kernels of one library (tests/adversarial/control_splitk_memset.cu) gave a source page with each kernel
# more than once, and the report was refused as not of its run. For that control and two more (one kernel; two
# kernels of two modules from the tensor-pipe probe), this keeps the evaluator's profile and imports it:
#   1. the source page as the evaluator imports it, its "Kernel Name" blocks, and whether repeated blocks are equal;
#   2. the raw page (one row per result) and the details page, for the results' IDs and names;
#   3. the source page of each result alone (`--kernel-id ::regex:NAME:` on import).
# Run on the GPU host from the repo root (the carried packages installed: scripts/gpu_host_env.sh); output under
# $OUT/ncu-source-blocks/.
set -uo pipefail
out=${OUT:-/tmp}/ncu-source-blocks
mkdir -p "$out"
for entry in control_splitk_memset profiler_env_maps; do
  work=/tmp/probe-blocks-$entry
  rm -rf "$work"
  python3 -m evaluator run --task gemm_n4096_k4096 --arch sm_90a --workload headline --workdir "$work" \
    --json "$out/$entry-verdict.json" "tests/adversarial/$entry.cu" > "$out/$entry-evaluator.log" 2>&1
  rc=$?
  report=$(ls "$work"/profile/*.ncu-rep 2>/dev/null | head -1)
  echo "== $entry: evaluator exit $rc, report: ${report:-none}"
  [ -n "$report" ] || continue
  cp "$report" "$out/$entry.ncu-rep"
  base=(--import "$report" --print-kernel-base mangled)
  ncu "${base[@]}" --page source --print-source sass --csv > "$out/$entry-source.csv" 2>&1
  ncu "${base[@]}" --page raw --csv --metrics gpu__time_duration.sum > "$out/$entry-raw.csv" 2>&1
  ncu "${base[@]}" --page details --csv > "$out/$entry-details.csv" 2>&1
  echo "   source page blocks:"; grep '^"Kernel Name"' "$out/$entry-source.csv" | cut -c1-100 | sed 's/^/     /'
  echo "   raw page rows: $(grep -c '^"[0-9]' "$out/$entry-raw.csv")"; grep '^"[0-9]' "$out/$entry-raw.csv" | cut -c1-160 | sed 's/^/     /'
  python3 - "$out/$entry-source.csv" <<'PY'
import csv, sys
blocks, cur = [], None
for row in csv.reader(open(sys.argv[1], newline="")):
    if row and row[0] == "Kernel Name":
        cur = [row[1], []]; blocks.append(cur)
    elif cur is not None and row and row[0].startswith("0x"):
        cur[1].append(tuple(row[:2]))
for i, (name, rows) in enumerate(blocks):
    same = [j for j, (n, r) in enumerate(blocks) if j < i and n == name and r == rows]
    first = rows[0] if rows else None
    print(f"   block {i}: {name[:40]} rows {len(rows)} first {first} equal to block {same}")
PY
  python3 - "$out/$entry-raw.csv" > "$out/$entry-names.txt" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1], newline="")) if r]
h = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
col = rows[h].index("Kernel Name")
print("\n".join(sorted({r[col] for r in rows[h + 1:] if r[0].strip()})))
PY
  while read -r name; do
    [ -n "$name" ] || continue
    ncu "${base[@]}" --kernel-name "$name" --page source --print-source sass --csv > "$out/$entry-only-$name.csv" 2>&1
    echo "   only $name: $(grep -c '^"Kernel Name"' "$out/$entry-only-$name.csv") blocks: $(grep '^"Kernel Name"' "$out/$entry-only-$name.csv" | cut -d, -f2 | tr '\n' ' ' | cut -c1-160)"
  done < "$out/$entry-names.txt"
done
ncu --version | tail -1
