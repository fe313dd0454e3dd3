"""On an H100/H200: every workload of the headline GEMM task on lent inputs, ranked by the parent's clock, for the
expert wgmma kernel and the SIMT control. Honest kernels are never held; the ranked latency is the parent's clock
over batches for both sides; the expert kernel's tensor work is witnessed by the GPU's own counters. The table printed is what docs/performance.md records (ranked vs in-process figures,
the batch length, and the verdict's cost).

    .venv/bin/python -m pytest -q -s -p no:cacheprovider tests/evaluator/test_lent_calls_gpu.py
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_requirements import hopper_problem

from evaluator.both_sides import verdict as vm
from evaluator.both_sides.taskdata import load_task
from evaluator.pipeline import Options, evaluate

REPO = Path(__file__).resolve().parents[2]
TASK = load_task(REPO / "tasks" / "gemm_n7168_k5120")

_PROBLEM = hopper_problem()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_PROBLEM is not None, reason=f"GPU test: {_PROBLEM}")]


@pytest.mark.parametrize(
    "kernel",
    [
        REPO / "tasks" / "gemm_n7168_k5120" / "solutions" / "hopper_tma_wgmma" / "kernel.cu",
        REPO / "tests" / "kernels" / "simt_gemm.cu",
    ],
    ids=["hopper_tma_wgmma", "simt_gemm"],
)
def test_honest_kernels_rank_on_the_parents_clock_without_a_hold(kernel, tmp_path):
    v = evaluate(kernel.read_text(), TASK, "sm_90a", workloads="all", options=Options(workdir=tmp_path))
    assert v.status == vm.OverallStatus.PASSED, [w.message for w in v.workloads]
    timing = next(s for s in v.stages if s.name == "timing")
    print(f"\n{kernel.parent.name}: verdict {v.wall_seconds:.1f} s, timing stage {timing.seconds:.1f} s")
    print("axes | ranked latency, library, speedup, TFLOP/s | in-process latency, library | in-process/ranked")
    for w in v.workloads:
        p = w.performance
        assert p is not None and p.latency_from == vm.LATENCY_FROM_TRUSTED_BATCHES
        assert p.latency_ms == pytest.approx(v.integrity.trusted_ms_per_call[w.uuid], abs=1e-6)
        print(
            f"{w.axes} | {p.latency_ms:.4g} ms {p.baseline_latency_ms:.4g} ms {p.speedup_factor:.3f}x "
            f"{p.tflops:.1f} | {p.in_process_latency_ms:.4g} ms {p.baseline_timing.median_ms:.4g} ms | "
            f"{p.in_process_latency_ms / p.latency_ms:.3f}"
        )
    assert v.integrity.holds == [], v.integrity.holds
    check = v.arch_check
    print(
        f"arch {check.status.value}: ncu share {check.tensor_core_share}, witnessed share {check.witness_tensor_share} "
        f"(ANY_TENSOR {check.witness_any_tensor_pct}% over {check.witness_seconds} s) {check.witness_note}"
    )
    # The witness is of the workload whose calls do the most FLOPs (evaluator/arch_check/tensor_witness.py)
    assert check.witness_workload == max(TASK.workloads, key=TASK.flops_for).uuid, check.witness_note
    assert check.witness_tensor_share is not None, check.witness_note
    if kernel.parent.name == "hopper_tma_wgmma":
        assert check.status == vm.ArchStatus.VERIFIED, check.reason
        assert check.witness_tensor_share >= check.share_threshold
    else:  # no tensor instruction: what the window sees is the evaluator's own background, far under the threshold
        assert check.witness_tensor_share < 0.2
