"""Time every library baseline of the task suite on its task's headline workload (run on the GPU host).

For each task: draw the headline workload's inputs (standard normal, as the evaluator does; the backward tasks'
O and LSE from their input generator), run the fp32 reference once, then per baseline check its outputs against
the reference with the evaluator's element rule and time it with the evaluator's own timer
(`evaluator/candidate_process/timing.py`: L2 flushed and the device synchronised before every call, each call's
GPU time from CUPTI activity records, CUDA events as the recorded fallback; `evaluator/both_sides/stats.py` for median and
quartiles), the method the evaluator's `timing` stage uses for candidates and baselines. Reports the median (and
quartiles) and achieved TFLOP/s by the task's FLOP convention.

    python scripts/measure_baselines.py [--out DIR] [--reps 100] [--tasks NAME ...]
    python scripts/measure_baselines.py --device cpu --axis M=64 --axis S=64 --tasks ...   # smoke run, no GPU
    scripts/gpu_tests.sh baselines                                                  # on the H200, into $OUT

Writes baselines.json (environment, method, every sample) and baselines.md (the table) to DIR (default $OUT,
else the current folder) and prints the table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from evaluator.both_sides.inputs import input_deriver  # noqa: E402
from evaluator.both_sides.inputs import make_inputs as draw_inputs  # noqa: E402
from evaluator.both_sides.stats import summarize  # noqa: E402
from evaluator.both_sides.task_families import FAMILIES  # noqa: E402
from evaluator.both_sides.taskdata import Task, Workload, evaluate_flops, load_tasks  # noqa: E402

# Groups in the task-families registry's order (a task of no registered family last).
GROUP_ORDER = {group: i for i, group in enumerate(dict.fromkeys(f.group for f in FAMILIES.values()))}


@dataclass
class OutputCheck:
    """One output of a baseline against the fp32 reference on the headline workload."""

    output: str
    tolerance_ratio: float  # max |out-ref| / max(atol, rtol*|ref|); above 1 the evaluator fails the element
    rel_norm: float  # ||out-ref|| / ||ref||
    median_ratio: float | None = None  # median(out/ref), for LSE: 1.4427 would mean log2 instead of natural log


@dataclass
class Measurement:
    task: str
    group: str
    workload: str  # uuid
    axes: dict[str, int]
    flops: float
    baseline: str  # baseline id
    baseline_name: str
    samples_ms: list[float] = field(default_factory=list)
    # "cupti" or "cuda_events" (evaluator/candidate_process/timing.py), "wall_clock" on CPU
    timing_method: str | None = None
    kernels_per_call: float | None = None  # GPU activities per call, as the verdict's timing records it
    median_ms: float | None = None
    q1_ms: float | None = None
    q3_ms: float | None = None
    tflops: float | None = None  # flops / median
    checks: list[OutputCheck] = field(default_factory=list)
    passed: bool | None = None  # every output within the evaluator's tolerance of the reference
    error: str | None = None  # set when the baseline raised


def environment(device: str) -> dict[str, Any]:
    import torch

    if device != "cuda":
        return {"date_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), "device": device}

    def smi(query: str) -> str:
        try:
            cmd = ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"]
            return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError) as exc:
            return f"unavailable ({exc})"

    props = torch.cuda.get_device_properties(0)
    return {
        "date_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "gpu": torch.cuda.get_device_name(0),
        "compute_capability": f"{props.major}.{props.minor}",
        "multiprocessors": props.multi_processor_count,
        "driver": smi("driver_version"),
        "sm_clock_max_mhz": smi("clocks.max.sm"),
        "power_limit": smi("power.limit"),
        "cuda_runtime": torch.version.cuda,
        "torch": torch.__version__,
        "cudnn": torch.backends.cudnn.version(),
        "python": platform.python_version(),
    }


def load_function(source: str, function: str, label: str) -> Any:
    namespace: dict[str, Any] = {"__name__": f"measure_{label}"}
    exec(compile(source, f"<{label}>", "exec"), namespace)  # noqa: S102 (trusted task data from the repo)
    return namespace[function]


def make_inputs(task: Task, axes: dict[str, int], seed: int, device: str) -> list[Any]:
    """The evaluator's inputs (evaluator/both_sides/inputs.py): drawn by the task family's rule, derived ones replaced."""
    workload = Workload(uuid="", axes=axes, inputs={})
    return draw_inputs(task.definition, workload, seed, device=device, derive=input_deriver(task))


def as_tuple(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def check_output(name: str, out: Any, ref: Any, atol: float, rtol: float) -> OutputCheck:
    import torch

    o, r = out.double(), ref.double()
    if tuple(o.shape) != tuple(r.shape):
        return OutputCheck(name, math.inf, math.inf)
    ratio = float(((o - r).abs() / torch.clamp(rtol * r.abs(), min=atol)).max())
    rel = float(torch.linalg.vector_norm(o - r) / torch.linalg.vector_norm(r))
    median_ratio = float((o / r).median()) if name == "LSE" else None
    return OutputCheck(name, ratio, rel, median_ratio)


class Timer:
    """The evaluator's timer for this process: one CUPTI subscription (or the CUDA-events fallback and why)."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.cupti = None
        self.fallback_reason = ""
        self.flush_l2 = None
        if device == "cuda":
            from evaluator.candidate_process.timing import l2_flusher, make_timer

            self.cupti, self.fallback_reason = make_timer()
            self.flush_l2 = l2_flusher(0)

    @property
    def method(self) -> str:
        if self.device != "cuda":
            return "wall_clock"
        return "cupti" if self.cupti is not None else "cuda_events"

    def time(self, fn: Any, reps: int, warmup: int) -> tuple[list[float], float]:
        """Milliseconds per call (one sample per call) and GPU activities per call, as the evaluator times."""
        if self.device != "cuda":  # smoke runs only: wall clock, no L2 to flush
            for _ in range(warmup):
                fn()
            samples = []
            for _ in range(reps):
                t0 = time.perf_counter()
                fn()
                samples.append((time.perf_counter() - t0) * 1e3)
            return samples, 0.0
        from evaluator.candidate_process.timing import time_interleaved

        series = time_interleaved(
            {"baseline": lambda _i: fn()}, warmup=warmup, iters=reps, flush_l2=self.flush_l2, timer=self.cupti
        )["baseline"]
        if self.cupti is not None:
            self.cupti.records.clear()  # matched to this baseline's windows already
        counted = [a for a in series.activities if a >= 0]
        return series.samples_ms, (sum(counted) / len(counted) if counted else 0.0)

    def close(self) -> None:
        if self.cupti is not None:
            self.cupti.close()


def measure_task(
    task: Task,
    reps: int,
    warmup: int,
    seed: int,
    device: str = "cuda",
    override: dict[str, int] | None = None,
    timer: Timer | None = None,
) -> list[Measurement]:
    import torch

    timer = timer or Timer(device)

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    workload = task.workload(task.headline_workload)
    axes = {k: (override or {}).get(k, v) for k, v in workload.axes.items()}
    flops = evaluate_flops(task.flops, task.definition.axis_values(axes))
    inputs = make_inputs(task, axes, seed, device)
    reference = load_function(task.definition.reference, "run", f"ref_{task.name}")
    expected = as_tuple(reference(*inputs))
    sync()
    results = []
    for baseline in task.baselines:
        m = Measurement(task.name, task.group, workload.uuid, axes, flops, baseline.id, baseline.name)
        try:
            fn = load_function(baseline.source, baseline.function, f"{baseline.id}_{task.name}")
            outputs = as_tuple(fn(*inputs))
            sync()
            m.checks = [
                check_output(spec.name, out, ref, task.atol, task.rtol)
                for spec, out, ref in zip(task.definition.outputs, outputs, expected, strict=True)
            ]
            m.passed = all(c.tolerance_ratio <= 1.0 for c in m.checks)
            del outputs
            m.samples_ms, m.kernels_per_call = timer.time(lambda fn=fn, args=tuple(inputs): fn(*args), reps, warmup)
            m.timing_method = timer.method
            stats = summarize(m.samples_ms, method=timer.method, warmup=warmup, kernels_per_call=m.kernels_per_call)
            m.q1_ms, m.median_ms, m.q3_ms = stats.q25_ms, stats.median_ms, stats.q75_ms
            m.tflops = flops / (m.median_ms * 1e-3) / 1e12
        except Exception as exc:  # a baseline that fails is a result to report, not a reason to stop
            m.error = f"{type(exc).__name__}: {exc}"[:500]
        results.append(m)
    del inputs, expected
    if device == "cuda":
        torch.cuda.empty_cache()
    return results


def markdown_table(results: list[Measurement]) -> str:
    lines = [
        "| task | headline | baseline | median ms | IQR ms | TFLOP/s | max err/tol | rel-norm err | correct |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for m in results:
        headline = ", ".join(f"{k}={v}" for k, v in m.axes.items())
        if m.error:
            lines.append(f"| {m.task} | {headline} | {m.baseline} | — | — | — | — | — | error: {m.error[:80]} |")
            continue
        worst = max(c.tolerance_ratio for c in m.checks)
        rel = max(c.rel_norm for c in m.checks)
        lines.append(
            f"| {m.task} | {headline} | {m.baseline} | {m.median_ms:.3f} | {m.q1_ms:.3f}–{m.q3_ms:.3f} | "
            f"{m.tflops:.1f} | {worst:.3f} | {rel:.1e} | {'yes' if m.passed else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")))
    parser.add_argument("--reps", type=int, default=100, help="timed calls per baseline (median of these)")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--tasks", nargs="*", help="task names (default: the whole suite)")
    parser.add_argument("--device", default="cuda", help="cuda (default); cpu only for smoke runs")
    parser.add_argument("--axis", action="append", default=[], help="AXIS=VALUE: replace a headline axis (smoke runs)")
    args = parser.parse_args(argv)
    if args.reps < 50:
        parser.error("--reps must be at least 50")
    override = {k: int(v) for k, v in (a.split("=", 1) for a in args.axis)}

    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA GPU", file=sys.stderr)
        return 2
    tasks = [t for t in load_tasks(REPO / "tasks") if "suite:ptxbench" in t.definition.tags]
    if args.tasks:
        tasks = [t for t in tasks if t.name in set(args.tasks)]
    tasks.sort(key=lambda t: (GROUP_ORDER.get(t.group, len(GROUP_ORDER)), t.name))
    env = environment(args.device)
    timer = Timer(args.device)
    env["timing_method"] = timer.method + (f" ({timer.fallback_reason})" if timer.fallback_reason else "")
    results: list[Measurement] = []
    for task in tasks:
        started = time.monotonic()
        batch = measure_task(task, args.reps, args.warmup, args.seed, args.device, override, timer)
        results += batch
        summary = ", ".join(
            f"{m.baseline} {m.median_ms:.3f} ms" if m.median_ms else f"{m.baseline} ERROR" for m in batch
        )
        print(f"{task.name}: {summary} ({time.monotonic() - started:.1f} s)", flush=True)
    timer.close()
    method = {
        "workload": "each task's headline workload; inputs standard normal (fp32 draw cast to the input dtype)",
        "timing": f"the evaluator's timer (evaluator/candidate_process/timing.py, {timer.method}): {args.warmup} "
        f"warm-up calls, then {args.reps} timed calls, twice the L2 size overwritten and the device synchronised before each; each "
        "call's time is the union of its GPU activity records (CUPTI), or CUDA events around it as the fallback; "
        "median and quartiles by evaluator/both_sides/stats.py",
        "check": "outputs against the task's fp32 reference with the evaluator's element rule (atol=rtol=1e-2)",
        "seed": args.seed,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "baselines.json").write_text(
        json.dumps({"environment": env, "method": method, "results": [asdict(m) for m in results]}, indent=1)
    )
    table = markdown_table(results)
    header = "".join(f"- {k}: {v}\n" for k, v in env.items())
    (args.out / "baselines.md").write_text(header + "\n" + table)
    print(header)
    print(table)
    return 0 if all(m.error is None and m.passed for m in results) else 1


if __name__ == "__main__":
    sys.exit(main())
