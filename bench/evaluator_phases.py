"""Where the time of one verdict goes: the evaluator run in this process with its parts timed (GPU host).

    python bench/evaluator_phases.py [--kernel K.cu] [--task gemm_n7168_k5120] [--repeats 2] [--out DIR]

Runs `evaluator.pipeline.evaluate` on the headline workload with every stage, `--repeats` times, and times the
parent's parts by wrapping them (nothing in the evaluator changes): reference outputs, comparisons, waiting for
each kind of candidate message (the first `ready` is the candidate process starting), the Nsight Compute run and
its report import, device preparation. Prints one table per run and writes phases.json to DIR.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evaluator import pipeline  # noqa: E402
from evaluator.arch_check import arch_stage, ncu  # noqa: E402
from evaluator.both_sides.taskdata import find_task  # noqa: E402
from evaluator.both_sides.verdict import STAGES  # noqa: E402
from evaluator.measure import candidate, correctness  # noqa: E402

DEFAULT_KERNEL = REPO / "tasks" / "gemm_n7168_k5120" / "solutions" / "hopper_tma_wgmma" / "kernel.cu"


class Phases:
    """Seconds and call counts per phase name."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.wrapped: list[tuple[Any, str, Any]] = []

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] += seconds
        self.calls[name] += 1

    def wrap(self, owner: Any, attr: str, name: str | Callable[..., str]) -> None:
        original = getattr(owner, attr)

        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.add(name(*args, **kwargs) if callable(name) else name, time.perf_counter() - t)

        self.wrapped.append((owner, attr, original))
        setattr(owner, attr, timed)

    def restore(self) -> None:
        """Put back every function `wrap` replaced, last first."""
        while self.wrapped:
            owner, attr, original = self.wrapped.pop()
            setattr(owner, attr, original)

    def table(self) -> list[dict[str, Any]]:
        order = sorted(self.seconds, key=lambda k: -self.seconds[k])
        return [{"phase": k, "seconds": round(self.seconds[k], 3), "calls": self.calls[k]} for k in order]


def instrument(phases: Phases) -> None:
    phases.wrap(pipeline, "prepare_device", "parent: prepare device (environment, bf16 peak)")
    phases.wrap(pipeline, "compile_stage", "compile stage")
    phases.wrap(pipeline, "sass_stage", "sass stage (cuobjdump, resource usage)")
    phases.wrap(correctness.Checker, "reference_outputs", "parent: reference outputs (inputs + reference)")
    phases.wrap(correctness.Checker, "compare_tensors", "parent: read and compare an output")
    phases.wrap(candidate, "start", "parent: spawn candidate process")
    phases.wrap(candidate, "expect", lambda child, deadline, event: f"wait for candidate '{event}'")
    phases.wrap(arch_stage, "run_group", "arch: ncu run (profiled process start + replay)")
    phases.wrap(
        ncu, "read_report", "arch: ncu --import (the source page; the raw page too when the profiler printed none)"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kernel", type=Path, default=DEFAULT_KERNEL)
    parser.add_argument("--task", default="gemm_n7168_k5120")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", REPO / "bench-out")))
    parser.add_argument("--tasks-root", type=Path, default=REPO / "tasks")
    parser.add_argument("--workload", default="headline")
    parser.add_argument("--device-type", default="cuda", help="cpu: a smoke run of this script on host code")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    task = find_task(args.tasks_root, args.task)
    cpu = args.device_type == "cpu"
    options = pipeline.Options(device_type=args.device_type, allow_unsandboxed=True if cpu else None)
    stages = ["correctness", "timing"] if cpu else list(STAGES)
    source = args.kernel.read_text()
    runs = []
    for i in range(args.repeats):
        phases = Phases()
        instrument(phases)
        try:
            t = time.perf_counter()
            verdict = pipeline.evaluate(source, task, "sm_90a", workloads=args.workload, stages=stages, options=options)
            wall = time.perf_counter() - t
        finally:
            phases.restore()
        stage_seconds = {s.name: s.seconds for s in verdict.stages}
        arch = verdict.arch_check.status.value if verdict.arch_check else None
        runs.append(
            {
                "run": i + 1,
                "wall_s": round(wall, 3),
                "status": verdict.status.value,
                "arch": arch,
                "stages": stage_seconds,
                "phases": phases.table(),
            }
        )
        print(f"\nrun {i + 1}: {verdict.status.value}, arch {arch}, wall {wall:.2f} s, stages {stage_seconds}")
        for row in phases.table():
            print(f"  {row['seconds']:8.3f} s  x{row['calls']:<3d} {row['phase']}")
    (args.out / "phases.json").write_text(
        json.dumps({"kernel": str(args.kernel), "task": args.task, "runs": runs}, indent=1)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
