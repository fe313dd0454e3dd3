"""What does the tensor witness read for a kernel with no tensor instruction, and does a GPM sampler running beside
it change that? On an H100 (2026-12-05, docs/runs/integrity/h100-2026-12-05c/) SIMT-only corpus entries read
witnessed shares of 0.14 to 1.14 on the headline GEMM's M=128 workload, most of them close to 1, the share the
trusted baseline process's own tensor work would give; the same kernel read 0.006 at M=8192, and 0.12 at M=128 in
the one run with a GPM sampler beside it (bench/probe_gpm_timeline.py). Two explanations fit: tensor activity that
grows with the calls served (then the sampler makes no difference), or the baseline's work reaching the window late
when nothing samples GPM between the windows (then the sampler brings M=128 down).

This evaluates the SIMT GEMM (tests/kernels/simt_gemm.cu) on gemm_n7168_k5120 at M=128 and at M=8192, each
REPEAT times without and with a 0.1 s GPM sampler thread, correctness and timing only (the witness's window is the
timing process), and prints one row per evaluation: the workload, the sampler, the window, its tensor utilisation
and the share of the task's FLOPs it stands for, with the floor (MIN_FLOPS_PER_CALL) set aside.

    python3 bench/probe_witness_background.py --out DIR [--repeat 3]

On the GPU host, from the repo root, with the carried packages installed (scripts/gpu_host_env.sh); about 3 minutes.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from probe_gpm_timeline import sampler  # noqa: E402

from evaluator import pipeline  # noqa: E402
from evaluator.arch_check import tensor_witness  # noqa: E402
from evaluator.both_sides.taskdata import find_task  # noqa: E402
from evaluator.checks.physical_limits import limits_for  # noqa: E402

TASK = "gemm_n7168_k5120"
KERNEL = REPO / "tests/kernels/simt_gemm.cu"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    task = find_task(REPO / "tasks", TASK)
    sizes = {w.axes["M"]: w for w in task.workloads}
    runs: list[Any] = []
    real_run_workload = pipeline.run_workload

    def keep(*a: Any, **kw: Any) -> Any:
        run = real_run_workload(*a, **kw)
        runs.append(run)
        return run

    pipeline.run_workload = keep
    name = None
    rows = []
    print(f"{'M':>5} {'sampler':>7} {'window s':>8} {'calls':>5} {'tensor %':>9} {'sm %':>6} {'share':>7}  status")
    for m in (128, 8192):
        workload = sizes[m]
        flops = task.flops_for(workload) or 0.0
        for k in range(2 * args.repeat):
            sampled = k % 2 == 1  # alternate, so drift over the run falls on both
            stop, samples = threading.Event(), []
            thread = threading.Thread(target=sampler, args=(stop, samples, time.monotonic()), daemon=True)
            if sampled:
                thread.start()
            runs.clear()
            verdict = pipeline.evaluate(
                KERNEL.read_text(), task, "sm_90a", workloads=workload.uuid, stages=["correctness", "timing"]
            )
            stop.set()
            if sampled:
                thread.join()
            run = runs[-1]
            name = verdict.environment.gpu_name
            peak = limits_for(task.definition, workload, name).peak_tflops or 0.0
            row: dict[str, Any] = {"M": m, "sampler": sampled, "status": verdict.status.value, "why": run.gpm_reason}
            if run.gpm is not None:
                share = run.gpm.any_tensor_pct / 100 * peak * 1e12 * run.gpm.seconds / (flops * run.window_calls)
                row.update(
                    seconds=run.gpm.seconds,
                    calls=run.window_calls,
                    tensor_pct=run.gpm.any_tensor_pct,
                    sm_pct=run.gpm.sm_pct,
                    share=share,
                )
                print(
                    f"{m:5d} {'on' if sampled else 'off':>7} {run.gpm.seconds:8.3f} {run.window_calls:5d} "
                    f"{run.gpm.any_tensor_pct:9.4f} {run.gpm.sm_pct or 0:6.1f} {share:7.3f}  {row['status']}"
                )
            else:
                print(f"{m:5d} {'on' if sampled else 'off':>7} no reading: {run.gpm_reason}  {row['status']}")
            rows.append(row)
    (args.out / "witness-background.json").write_text(json.dumps({"gpu": name, "rows": rows}, indent=1))
    print(f"floor in force: {tensor_witness.MIN_FLOPS_PER_CALL / 1e9:g} GFLOP a call (set aside above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
