#!/usr/bin/env bash
# Can Nsight Compute give the parent what the arch check reads on its own stdout (a pipe the profiled process has
# given up, docs/threat-model.md "The profile report out of the candidate's reach") rather than in a report file
# that process could rewrite? On one bf16 torch.matmul (cuBLAS's HGMMA kernel), three questions:
#   1. the raw page on stdout with no report file: are the per-opcode instance metrics (executed warp instructions
#      with modifiers, so the GMMA tile; predicated-on thread instructions) and the tensor-op counter printed?
#   2. with `-o` as well: does stdout still carry the page, and is the report written beside it?
#   3. what does ncu write under its TMPDIR during the run (files a co-resident process could rewrite)?
# Run on the GPU host from the repo root: `bash bench/probe_ncu_pipe.sh` (full output under $OUT/ncu-pipe/).
set -uo pipefail
out=${OUT:-/tmp}/ncu-pipe
mkdir -p "$out"
work=$(mktemp -d)
cat > "$work/gemm.py" <<'PY'
import torch
a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
for _ in range(3):
    a @ b
torch.cuda.synchronize()
PY
metrics=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread
metrics+=,sass__inst_executed_per_opcode_with_modifier_all,sass__thread_inst_executed_true_per_opcode
metrics+=,sm__ops_path_tensor_src_bf16_dst_fp32.sum,smsp__inst_executed.sum
common=(--clock-control none --launch-skip 2 --launch-count 1 --metrics "$metrics" --page raw --csv
        --print-metric-instances values)

mkdir -p "$work/tmp1"
TMPDIR=$work/tmp1 ncu "${common[@]}" python3 "$work/gemm.py" > "$out/1-stdout.csv" 2> "$out/1-stderr.txt"
echo "1. raw page on stdout, no report: exit $?"
grep -c '^"' "$out/1-stdout.csv" | sed 's/^/   csv lines: /'
python3 - "$out/1-stdout.csv" <<'PY'
import csv, sys
head = next((r for r in csv.reader(open(sys.argv[1])) if r and r[0] == "ID"), [])
for r in csv.reader(open(sys.argv[1])):
    if r and r[0].isdigit() and head:
        for name, value in zip(head, r):
            if name.startswith(("sass__", "sm__ops", "gpu__time", "launch__", "smsp__inst")):
                print(f"   {name} = {value[:160]}")
PY
find "$work/tmp1" -type f -printf '   tmp file: %p %s bytes\n' | head -20

mkdir -p "$work/tmp2"
TMPDIR=$work/tmp2 ncu "${common[@]}" -o "$work/report" python3 "$work/gemm.py" > "$out/2-stdout.csv" 2> "$out/2-stderr.txt"
echo "2. with -o too: exit $?; csv lines on stdout: $(grep -c '^"' "$out/2-stdout.csv"); report: $(ls -l "$work"/report* 2>&1 | head -1)"
find "$work/tmp2" -type f -printf '   tmp file: %p %s bytes\n' | head -20
head -c 600 "$out/2-stdout.csv"; echo
ncu --version | tail -1
rm -rf "$work"
