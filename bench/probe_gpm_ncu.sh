#!/usr/bin/env bash
# ncu's per-kernel tensor-pipe figures for an fp16 cuBLAS GEMM, to set beside GPM's (bench/probe_gpm.py).
cat > /tmp/gemm16.py <<'PY'
import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16); b = torch.randn_like(a)
a @ b; torch.cuda.synchronize()
PY
for m in sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed \
         sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed \
         sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed \
         sm__inst_executed_pipe_tensor_op_gmma.sum sm__inst_executed_pipe_tensor_op_hmma.sum \
         sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed; do
  echo "== $m"
  ncu --clock-control none --launch-skip 2 --launch-count 1 --metrics "$m,gpu__time_duration.sum" --csv python3 /tmp/gemm16.py 2>&1 \
    | grep -E '^"[0-9]|ERROR' | python3 -c 'import csv,sys; [print(r[4][:50], "|", r[12], r[14]) if len(r) > 14 else print(r) for r in csv.reader(sys.stdin)]'
done
