"""The FP8 GEMM family through the evaluator on CPU tensors: a small task written by make_suite's gemm_fp8 builder,
a host-code candidate (tests/kernels/cpu_gemm_fp8.cu) given e4m3 matrices and one-element scales on lent memory,
compared by the family's rule and timed against the family's baseline (torch._scaled_mm runs on CPU too)."""

from __future__ import annotations

import pytest

from evaluator.both_sides.taskdata import load_task
from evaluator.both_sides.verdict import OverallStatus
from evaluator.pipeline import Options, evaluate
from tests.support.script_modules import load_script
from tests.tasks.test_task_suite import REPO

SOURCE = (REPO / "tests" / "kernels" / "cpu_gemm_fp8.cu").read_text()


@pytest.fixture
def small_fp8_task(tmp_path, monkeypatch):
    make_suite = load_script(REPO / "scripts" / "make_suite.py", "make_suite_fp8_cpu", monkeypatch)
    files = make_suite.gemm_fp8_task(64, 128)
    folder = tmp_path / files.name
    folder.mkdir()
    for name, text in files.files.items():
        (folder / name).write_text(text)
    return load_task(folder)


@pytest.mark.slow  # an nvcc compile of the host-code candidate, then a timed evaluation
def test_an_honest_fp8_kernel_passes_and_is_timed_against_cublas_fp8(small_fp8_task, tmp_path):
    task = small_fp8_task
    workload = next(w for w in task.workloads if w.axes["M"] == 128)
    opts = Options(
        device_type="cpu", timeout_s=120, warmup=2, iters=6, batches=2, batch_calls=4, allow_unsandboxed=True
    )
    opts.workdir = tmp_path / "work"
    verdict = evaluate(SOURCE, task, "sm_90a", workloads=workload.uuid, stages=["timing"], options=opts)
    result = verdict.workloads[0]
    assert verdict.status == OverallStatus.PASSED, result.message
    assert result.correctness.relative_norm_bound == task.rel_norm_bound == 0.02
    assert result.correctness.relative_norm_error < 0.01
    assert result.performance.baseline_latency_ms > 0 and result.performance.latency_ms > 0
