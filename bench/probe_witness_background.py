"""What does the tensor witness read for a kernel with no tensor instruction, and does a GPM sampler running beside
it change that? On an H100 (2026-12-05, docs/runs/integrity/h100-2026-12-05c/) SIMT-only corpus entries read
witnessed shares of 0.14 to 1.14 on the headline GEMM's M=128 workload, most of them close to 1, the share the
trusted baseline process's own tensor work would give; the same kernel read 0.006 at M=8192, and 0.12 at M=128 in
the one run with a GPM sampler beside it (bench/probe_gpm_timeline.py). Two explanations fit: tensor activity that
grows with the calls served (then the sampler makes no difference), or the baseline's work reaching the window late
when nothing samples GPM between the windows (then the sampler brings M=128 down).

First it runs each piece of the trusted side's per-call work alone on the GPU for a second (drawing a call's
inputs, the task's reference, comparing outputs, the L2 flush, plain randn and the cast to bf16, and idle), with a
GPM reading around each: which of them, if any, the GPU counts as tensor work. Then it evaluates the SIMT GEMM (tests/kernels/simt_gemm.cu) on gemm_n7168_k5120 at M=128 and at M=8192, each
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


def record_runs() -> list[Any]:
    """From now on, every workload run of `pipeline.evaluate` (its GPM reading and window calls among them) is
    appended to the list returned."""
    runs: list[Any] = []
    real_run_workload = pipeline.run_workload

    def keep(*a: Any, **kw: Any) -> Any:
        run = real_run_workload(*a, **kw)
        runs.append(run)
        return run

    pipeline.run_workload = keep
    return runs


def parent_ops(task: Any, workload: Any) -> list[dict[str, Any]]:
    """GPM's tensor and SM utilisation over a second of each piece of the trusted side's per-call work, alone."""
    import pynvml
    import torch

    from evaluator.arch_check.tensor_witness import gpm_utilisation
    from evaluator.both_sides.inputs import make_inputs
    from evaluator.candidate_process.timing import l2_flusher
    from evaluator.measure.correctness import Checker

    device = torch.device("cuda")
    checker = Checker.for_task(task, device)

    ref = checker.reference_outputs(workload, 1)
    out = [r + 0.001 * torch.randn_like(r.float()).to(r.dtype) for r in ref]
    flush = l2_flusher(device)
    big = torch.randn(7168 * 5120, device=device)
    ops = {
        "idle": lambda: time.sleep(0.01),
        "draw a call's inputs": lambda: make_inputs(task.definition, workload, 7, device="cuda", derive=checker.derive),
        "the task's reference": lambda: checker.reference_outputs(workload, 3),
        "compare outputs": lambda: checker.compare_tensors(workload, out, ref),
        "L2 flush": flush,
        "randn fp32 (36.7M)": lambda: torch.randn(7168 * 5120, device=device),
        "cast fp32 to bf16 (36.7M)": lambda: big.to(torch.bfloat16),
    }
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    rows = []
    for name, op in ops.items():
        torch.cuda.synchronize()
        time.sleep(0.5)
        first = pynvml.nvmlGpmSampleAlloc()
        pynvml.nvmlGpmSampleGet(handle, first)
        t0, calls = time.monotonic(), 0
        while time.monotonic() - t0 < 1.0:
            op()
            torch.cuda.synchronize()
            calls += 1
        time.sleep(0.2)  # the counters trail the work
        second = pynvml.nvmlGpmSampleAlloc()
        pynvml.nvmlGpmSampleGet(handle, second)
        tensor, sm = gpm_utilisation(pynvml, first, second)
        for sample in (first, second):
            pynvml.nvmlGpmSampleFree(sample)
        rows.append({"op": name, "calls": calls, "tensor_pct": tensor, "sm_pct": sm})
        print(f"{name:28} {calls:6d} calls  tensor {tensor:.4f}%  SM {sm:.1f}%")
    pynvml.nvmlShutdown()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    task = find_task(REPO / "tasks", TASK)
    sizes = {w.axes["M"]: w for w in task.workloads}
    runs = record_runs()
    name = None
    ops = parent_ops(task, sizes[128])
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
    (args.out / "witness-background.json").write_text(
        json.dumps({"gpu": name, "parent_ops": ops, "rows": rows}, indent=1)
    )
    print(f"floor in force: {tensor_witness.MIN_FLOPS_PER_CALL / 1e9:g} GFLOP a call (set aside above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
