#!/usr/bin/env bash
# What can the parent read from Nsight Compute's stdout (the pipe the profiled process cannot reach) to cross-check
# the report file's source page, on which the sm_90a tensor share rests? On a bf16 torch.matmul and an FP8
# torch._scaled_mm (cuBLAS's HGMMA and QGMMA kernels), inside an NVTX range as the evaluator profiles:
#   1. which tensor-pipe counters the chip offers (`--query-metrics`), by name;
#   2. the evaluator's own profile command (SourceCounters, --export) with the raw page on stdout as well, the
#      per-opcode instance metric printed with its opcode names (`--print-metric-instances details`) and every
#      tensor counter of question 1: does stdout carry them beside the report, and what do they read;
#   3. the report's source page of the same run, for comparing its per-opcode totals with the pipe's;
#   4. the source page itself printed while profiling (`--page source --print-source sass` with no import): if it
#      comes on stdout with the same counts as the imported one, the tensor share can be read from the pipe too.
# Run on the GPU host from the repo root: `bash bench/probe_ncu_tensor_pipe.sh` (output under $OUT/ncu-tensor-pipe/).
set -uo pipefail
out=${OUT:-/tmp}/ncu-tensor-pipe
mkdir -p "$out"
work=$(mktemp -d)
cat > "$work/gemm.py" <<'PY'
import torch
a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
a8 = a.to(torch.float8_e4m3fn); b8 = b.to(torch.float8_e4m3fn).t()
one = torch.ones((), device="cuda", dtype=torch.float32)
a @ b; torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16); torch.cuda.synchronize()
torch.cuda.nvtx.range_push("probe")
a @ b
torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
PY
ncu --query-metrics --chip gh100 > "$out/1-query.txt" 2>&1
echo "1. query: exit $?; tensor-pipe names:"
grep -oE '^(sm|smsp)__(ops_path_tensor|inst_executed_pipe_tensor|pipe_tensor)[a-z0-9_]*' "$out/1-query.txt" | sort -u | tee "$out/1-tensor-names.txt" | sed 's/^/   /'
grep -oE '^sass__inst_executed[a-z0-9_]*' "$out/1-query.txt" | sort -u | sed 's/^/   sass: /'
tensor=$(grep -E '^sm__ops_path_tensor_src_' "$out/1-tensor-names.txt" | sed 's/$/.sum/' | paste -sd, -)
metrics=gpu__time_duration.sum,sass__inst_executed_per_opcode_with_modifier_all${tensor:+,$tensor}
common=(--clock-control none --cache-control all --section SourceCounters --nvtx --nvtx-include probe/
        --print-kernel-base mangled)
ncu "${common[@]}" --metrics "$metrics" --print-metric-instances details --page raw --csv \
  --export "$work/report" --force-overwrite python3 "$work/gemm.py" > "$out/2-stdout.csv" 2> "$out/2-stderr.txt"
echo "2. profile with the raw page on stdout: exit $?; csv lines: $(grep -c '^"' "$out/2-stdout.csv"); report: $(ls -l "$work"/report* 2>&1 | head -1)"
python3 - "$out/2-stdout.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
head = next((r for r in rows if r[0] == "ID"), [])
for r in rows:
    if r[0].isdigit() and head:
        print("   kernel:", dict(zip(head, r)).get("Kernel Name", "?")[:100])
        for name, value in zip(head, r):
            if name.startswith(("sass__inst_executed_per", "sm__ops_path_tensor", "gpu__time")) and value not in ("", "0"):
                print(f"     {name} = {value[:400]}")
PY
ncu --import "$work/report.ncu-rep" --page source --print-source sass --csv --print-kernel-base mangled \
  > "$out/3-source.csv" 2> "$out/3-stderr.txt"
echo "3. source page: exit $?; lines: $(wc -l < "$out/3-source.csv")"
python3 - "$out/3-source.csv" <<'PY'
import collections, csv, sys
totals, kernel = collections.defaultdict(collections.Counter), "?"
head = None
for r in csv.reader(open(sys.argv[1])):
    if len(r) == 1 and r[0].startswith('Kernel Name'):
        kernel = r[0]
    if r and r[0] == "Address":
        head = r
        continue
    if head and len(r) == len(head):
        d = dict(zip(head, r))
        op = d.get("Source", "").split()[0] if d.get("Source", "").split() else ""
        if op.startswith("@"):
            op = d["Source"].split()[1]
        totals[kernel][op] += int((d.get("Instructions Executed") or "0").replace(",", "") or 0)
for k, c in totals.items():
    print("   ", k[:90], sorted(((v, o) for o, v in c.items() if "MMA" in o), reverse=True)[:6], "total", sum(c.values()))
PY
ncu "${common[@]}" --page source --print-source sass --csv --export "$work/report4" --force-overwrite \
  python3 "$work/gemm.py" > "$out/4-stdout.csv" 2> "$out/4-stderr.txt"
echo "4. source page printed while profiling: exit $?; lines: $(wc -l < "$out/4-stdout.csv"); same as the import (minus ==PROF== lines): $(
  diff -q <(grep -v '^==' "$out/4-stdout.csv") <(ncu --import "$work/report4.ncu-rep" --page source --print-source sass --csv \
  --print-kernel-base mangled 2>/dev/null | grep -v '^==') > /dev/null && echo yes || echo no)"
ncu --version | tail -1
rm -rf "$work"
