"""On an H100/H200: honest kernels on EVERY workload of a task stay inside the physical limits and are not held,
and the profile is read from the profiler's own channel. The real command line, as the GPU workers run it.

    .venv/bin/python -m pytest -q -p no:cacheprovider tests/evaluator/test_physical_limits_gpu.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from gpu_requirements import hopper_problem

from evaluator.both_sides.taskdata import load_task
from evaluator.checks.physical_limits import limits_for

REPO = Path(__file__).resolve().parents[2]
TASK = load_task(REPO / "tasks" / "gemm_n7168_k5120")

_PROBLEM = hopper_problem()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_PROBLEM is not None, reason=f"GPU test: {_PROBLEM}")]


def evaluate_all_workloads(kernel: Path, name: str) -> tuple[dict[str, Any], Path]:
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    out, workdir = tmp / f"verdict-limits-{name}.json", tmp / f"work-limits-{name}"
    shutil.rmtree(workdir, ignore_errors=True)
    cmd = [sys.executable, "-m", "evaluator", "run", str(kernel), "--task", TASK.name, "--arch", "sm_90a"]
    cmd += ["--workload", "all", "--json", str(out), "--workdir", str(workdir)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)  # noqa: S603
    print(proc.stdout, proc.stderr[-3000:])
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(out.read_text()), workdir


@pytest.mark.parametrize(
    "kernel",
    [
        REPO / "tasks" / "gemm_n7168_k5120" / "solutions" / "hopper_tma_wgmma" / "kernel.cu",
        REPO / "tests" / "kernels" / "simt_gemm.cu",
    ],
    ids=["hopper_tma_wgmma", "simt_gemm"],
)
def test_honest_kernels_are_inside_the_limits_on_every_workload_and_not_held(kernel):
    v, workdir = evaluate_all_workloads(kernel, kernel.parent.name)
    assert v["status"] == "PASSED", [w["message"] for w in v["workloads"]]
    assert v["integrity"]["holds"] == [], v["integrity"]["holds"]
    assert len(v["workloads"]) == len(TASK.workloads)
    gpu = v["environment"]["gpu_name"]
    for row in v["workloads"]:
        perf, workload = row["performance"], TASK.workload(row["uuid"])
        limits = limits_for(TASK.definition, workload, gpu)
        assert limits.min_ms is not None and limits.peak_tflops is not None, gpu
        print(row["axes"], perf["latency_ms"], "ms, floor", limits.min_ms, "ms;", perf["tflops"], "TFLOP/s")
        assert perf["latency_ms"] > limits.min_ms and perf["tflops"] < limits.peak_tflops
    # The profiler's channel carries the profiler's lines only; the profiled process wrote to its own file.
    ncu_log = (workdir / "logs" / "ncu.log").read_text()
    assert "==PROF== Report:" in ncu_log, ncu_log[-2000:]
    assert (workdir / "profile" / "profiled-process-output.log").is_file()
