"""Benchmark of the evaluator itself ; run on an H200, results in docs/performance.md.

    python bench/evaluator_bench.py [--kernel K.cu] [--task gemm_n7168_k5120] [--repeats 5] [--out DIR]

1. End-to-end: `python -m evaluator run` on the headline workload, `--repeats` times, each a fresh process as
   the portal runs it; wall time and per-stage seconds from the verdicts; run-to-run spread of the medians.
   The first run has every stage; the repeats leave out `arch` (its cost is read from the first run).
2. Timing fidelity: the library baseline's median from this evaluator's CUPTI timer, from
   triton.testing.do_bench, and from Nsight Compute's gpu__time_duration, on the same shape.
3. Relative-norm calibration: every task's first baseline against its reference on the smallest workload,
   the numbers behind the bound in evaluator/measure/compare.py.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evaluator.arch_check import ncu as ncu_mod  # noqa: E402
from evaluator.both_sides.taskdata import find_task, load_tasks  # noqa: E402

DEFAULT_KERNELS = [
    REPO / "tasks" / "gemm_n7168_k5120" / "solutions" / "hopper_tma_wgmma" / "kernel.cu",
    REPO / "tests" / "kernels" / "simt_gemm.cu",
]


def end_to_end(kernel: Path, task: str, repeats: int, out: Path) -> dict[str, Any]:
    runs = []
    for i in range(repeats):
        verdict_path = out / f"bench-verdict-{i}.json"
        cmd = [sys.executable, "-m", "evaluator", "run", str(kernel), "--task", task, "--arch", "sm_90a"]
        cmd += ["--workload", "headline", "--json", str(verdict_path)]
        if i > 0:
            # The arch stage's cost is measured on the first run; the repeats measure timing spread.
            cmd += ["--stages", "policy,compile,sass,correctness,timing"]
        start = time.monotonic()
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)
        wall = time.monotonic() - start
        if proc.returncode != 0:
            raise SystemExit(f"evaluator failed: {proc.stderr[-2000:]}")
        v = json.loads(verdict_path.read_text())
        w = v["workloads"][0]
        perf = w.get("performance") or {}
        runs.append(
            {
                "wall_s": wall,
                "verdict_wall_s": v["wall_seconds"],
                "status": v["status"],
                "arch": v["arch_check"]["status"],
                "stages": {s["name"]: s["seconds"] for s in v["stages"]},
                "candidate_median_ms": perf.get("latency_ms"),
                "baseline_median_ms": perf.get("baseline_latency_ms", perf.get("reference_latency_ms")),
                "speedup": perf.get("speedup_factor"),
                "tflops": perf.get("tflops"),
                "ncu_ms": v["arch_check"].get("ncu_gpu_time_ms"),
                "environment": v["environment"],
            }
        )
        print(f"run {i + 1}/{repeats}: {wall:.1f} s, {runs[-1]['status']}, {runs[-1]['stages']}", flush=True)

    def spread(key: str) -> float | None:
        values = [r[key] for r in runs if r[key]]
        return (max(values) - min(values)) / statistics.median(values) if len(values) > 1 else None

    return {
        "kernel": str(kernel.relative_to(REPO)),
        "runs": runs,
        "spread_candidate": spread("candidate_median_ms"),
        "spread_baseline": spread("baseline_median_ms"),
    }


def _headline_inputs(task_name: str) -> tuple[Any, Any, list[Any]]:
    import torch

    from evaluator.both_sides.inputs import input_deriver, load_baseline, make_inputs

    task = find_task(REPO / "tasks", task_name)
    workload = task.workload(task.headline_workload or task.workloads[-1].uuid)
    b = task.baselines[0]
    baseline = load_baseline(b.source, b.function, b.id)
    derive = input_deriver(task)
    sets = [make_inputs(task.definition, workload, 1000 + k, device="cuda", derive=derive) for k in range(3)]
    torch.cuda.synchronize()
    return task, baseline, sets


def fidelity(task_name: str, out: Path) -> dict[str, Any]:
    import torch
    import triton.testing

    from evaluator.both_sides.stats import summarize
    from evaluator.candidate_process.timing import l2_flusher, make_timer, time_interleaved

    task, baseline, sets = _headline_inputs(task_name)
    timer, reason = make_timer()
    series = time_interleaved(
        {"baseline": lambda i: baseline(*sets[i % 3])},
        warmup=10,
        iters=50,
        flush_l2=l2_flusher(torch.device("cuda")),
        timer=timer,
    )
    ours = summarize(series["baseline"].samples_ms, method="cupti" if timer else "cuda_events", warmup=10)
    if timer:
        timer.close()
    triton_ms = triton.testing.do_bench(lambda: baseline(*sets[0]), warmup=100, rep=500, return_mode="median")
    ncu = ncu_mod.find_ncu()
    ncu_ms = None
    ncu_note = ""
    result_kernels: list[str] = []
    if ncu:
        report = out / "bench-baseline.ncu-rep"
        cmd = [
            ncu,
            "--clock-control",
            "none",
            "--cache-control",
            "all",
            "--metrics",
            "gpu__time_duration.sum",
            "--nvtx",
            "--nvtx-include",
            f"{ncu_mod.NVTX_RANGE}/",
            "--export",
            str(report),
            "--force-overwrite",
            sys.executable,
            str(Path(__file__).resolve()),
            "--ncu-target",
            "--task",
            task_name,
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        raw = subprocess.run(
            [ncu, "--import", str(report), "--page", "raw", "--csv", "--metrics", "gpu__time_duration.sum"],
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
        (out / "bench-baseline-ncu-raw.csv").write_text(raw)
        try:
            times = [t for _, t in ncu_mod.parse_raw_metrics(raw)]
            # The target makes 5 profiled calls, in order; each call's kernels are summed, then the median taken.
            k = len(times) // 5
            per_call = [sum(times[j * k : (j + 1) * k]) for j in range(5)] if k and len(times) % 5 == 0 else times
            result_kernels = [n for n, _ in ncu_mod.parse_raw_metrics(raw)][: max(k, 1)]
            ncu_ms = statistics.median(per_call)
        except ncu_mod.NcuParseError as exc:
            ncu_note = f"{exc}; ncu said: {proc.stdout[-500:]} {proc.stderr[-500:]}"
    result = {
        "shape": task.workload(task.headline_workload).axes if task.headline_workload else None,
        "cupti_median_ms": ours.median_ms,
        "cupti_iqr_ms": ours.iqr_ms,
        "timer_method": ours.method,
        "timer_fallback_reason": reason,
        "triton_do_bench_median_ms": triton_ms,
        "ncu_gpu_time_duration_ms": ncu_ms,
        "ncu_note": ncu_note,
        "ncu_kernels_per_call": result_kernels if ncu_ms else None,
    }
    result["triton_vs_cupti"] = triton_ms / ours.median_ms - 1
    if ncu_ms:
        result["ncu_vs_cupti"] = ncu_ms / ours.median_ms - 1
    return result


def ncu_target(task_name: str) -> None:
    """Five baseline calls inside the NVTX range Nsight Compute filters on (run under ncu)."""
    import torch

    _, baseline, sets = _headline_inputs(task_name)
    for i in range(3):
        baseline(*sets[i % 3])  # warm-up outside the range: cuBLAS heuristics, handle creation
    torch.cuda.synchronize()
    for i in range(5):
        torch.cuda.nvtx.range_push(ncu_mod.NVTX_RANGE)
        baseline(*sets[i % 3])
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()


def calibration() -> list[dict[str, Any]]:
    """Each task's first baseline vs its reference, smallest workload: the relative norm error it reaches."""
    import torch

    from evaluator.both_sides.inputs import (
        as_output_tuple,
        input_deriver,
        load_baseline,
        load_reference,
        make_inputs,
        torch_dtype,
    )
    from evaluator.measure.compare import compare_output

    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for task in load_tasks(REPO / "tasks"):
        workload = min(task.workloads, key=task.flops_for)
        try:
            inputs = make_inputs(task.definition, workload, 7, device="cuda", derive=input_deriver(task))
            ref = as_output_tuple(load_reference(task.definition)(*inputs))
            b = task.baselines[0]
            got = as_output_tuple(load_baseline(b.source, b.function, b.id)(*inputs))
            worst = 0.0
            status = "PASSED"
            for spec, o, r in zip(task.definition.outputs, got, ref, strict=True):
                shape = tuple(task.definition.shape_of(spec, workload.axes))
                c = compare_output(
                    o.to(torch_dtype(spec.dtype)),
                    r,
                    name=spec.name,
                    expected_shape=shape,
                    expected_dtype=torch_dtype(spec.dtype),
                    atol=task.atol,
                    rtol=task.rtol,
                    rel_norm_bound=1.0,
                )
                worst = max(worst, c.relative_norm_error or 0.0)
                if status == "PASSED":
                    status = c.status.value
            rows.append(
                {
                    "task": task.name,
                    "workload": dict(workload.axes),
                    "baseline": b.id,
                    "relative_norm_error": worst,
                    "element_rule": status,
                }
            )
        except Exception as exc:  # noqa: BLE001 - one broken task must not hide the others
            rows.append({"task": task.name, "error": f"{type(exc).__name__}: {exc}"[:300]})
        torch.cuda.empty_cache()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kernel", type=Path)
    parser.add_argument("--task", default="gemm_n7168_k5120")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", REPO / "bench-out")))
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: e2e,fidelity,calibration")
    parser.add_argument("--ncu-target", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ncu_target:
        ncu_target(args.task)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    skip = set(args.skip.split(","))
    kernel = args.kernel or next(k for k in DEFAULT_KERNELS if k.is_file())
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    save = lambda: (args.out / "bench-report.json").write_text(json.dumps(report, indent=2))  # noqa: E731
    # Each part is saved as soon as it is done, so a run cut short by a time limit keeps what it measured.
    if "fidelity" not in skip:
        report["fidelity"] = fidelity(args.task, args.out)
        save()
    if "calibration" not in skip:
        report["calibration"] = calibration()
        save()
    if "e2e" not in skip:
        report["end_to_end"] = end_to_end(kernel.resolve(), args.task, args.repeats, args.out)
        save()
    print_table(report)


def print_table(report: dict[str, Any]) -> None:
    e2e = report.get("end_to_end")
    if e2e:
        print(f"\nend to end ({e2e['kernel']}):")
        print(
            f"{'run':>3} {'wall s':>7} {'policy':>6} {'compile':>7} {'sass':>5} {'correct':>7} {'timing':>6} "
            f"{'arch':>6} {'cand ms':>8} {'cuBLAS ms':>9} {'speedup':>7} {'ncu ms':>7} status"
        )
        for i, r in enumerate(e2e["runs"]):
            s = r["stages"]
            print(
                f"{i + 1:>3} {r['wall_s']:7.1f} {s['policy']:6.2f} {s['compile']:7.2f} {s['sass']:5.2f} "
                f"{s['correctness']:7.2f} {s['timing']:6.2f} {s['arch']:6.2f} {r['candidate_median_ms'] or 0:8.4f} "
                f"{r['baseline_median_ms'] or 0:9.4f} {r['speedup'] or 0:7.3f} {r['ncu_ms'] or 0:7.4f} "
                f"{r['status']}/{r['arch']}"
            )
        print(f"spread of candidate medians {e2e['spread_candidate']}, of baseline medians {e2e['spread_baseline']}")
    f = report.get("fidelity")
    if f:
        print(
            f"\nfidelity {f['shape']}: cupti {f['cupti_median_ms']:.4f} ms (IQR {f['cupti_iqr_ms']:.4f}), "
            f"triton {f['triton_do_bench_median_ms']:.4f} ({f['triton_vs_cupti']:+.2%}), "
            f"ncu {f['ncu_gpu_time_duration_ms']} ({f.get('ncu_vs_cupti', float('nan')):+.2%}) {f['ncu_note']}"
        )
    for row in report.get("calibration", []):
        print("calibration", json.dumps(row))


if __name__ == "__main__":
    main()
