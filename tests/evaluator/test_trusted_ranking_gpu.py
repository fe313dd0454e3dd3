"""On an H100/H200: trusted ranking (EVALUATOR_TRUSTED_RANKING=1) against the default path, every workload of the
headline GEMM task, for an honest wgmma kernel and the SIMT control. Honest kernels are never held, and every
ranked figure comes from the parent's clock; the table printed is what docs/performance.md records (the method's
change of each speedup, and the verdict's cost).

    .venv/bin/python -m pytest -q -s -p no:cacheprovider tests/evaluator/test_trusted_ranking_gpu.py
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_requirements import hopper_problem

from evaluator import verdict as vm
from evaluator.lent_batches import TRUSTED_RANKING_FLAG
from evaluator.pipeline import Options, evaluate
from evaluator.taskdata import load_task

REPO = Path(__file__).resolve().parents[2]
TASK = load_task(REPO / "tasks" / "gemm_n7168_k5120")
BATCHES, BATCH_CALLS = 3, 32  # long batches: the per-batch messages and capture spread over 32 calls

_PROBLEM = hopper_problem()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_PROBLEM is not None, reason=f"GPU test: {_PROBLEM}")]


def run(kernel: Path, trusted: bool, monkeypatch, tmp_path: Path) -> vm.Verdict:
    if trusted:
        monkeypatch.setenv(TRUSTED_RANKING_FLAG, "1")
    else:
        monkeypatch.delenv(TRUSTED_RANKING_FLAG, raising=False)
    opts = Options(batches=BATCHES, batch_calls=BATCH_CALLS, workdir=tmp_path / ("trusted" if trusted else "default"))
    return evaluate(kernel.read_text(), TASK, "sm_90a", workloads="all", options=opts)


@pytest.mark.parametrize(
    "kernel",
    [
        REPO / "tasks" / "gemm_n7168_k5120" / "solutions" / "hopper_tma_wgmma" / "kernel.cu",
        REPO / "tests" / "kernels" / "simt_gemm.cu",
    ],
    ids=["hopper_tma_wgmma", "simt_gemm"],
)
def test_honest_kernels_rank_on_the_parents_clock_without_a_hold(kernel, monkeypatch, tmp_path):
    default = run(kernel, False, monkeypatch, tmp_path)
    trusted = run(kernel, True, monkeypatch, tmp_path)
    assert trusted.status == vm.OverallStatus.PASSED, [w.message for w in trusted.workloads]
    print(f"\n{kernel.parent.name}: verdict {default.wall_seconds:.1f} s default, {trusted.wall_seconds:.1f} s trusted")
    print("axes | default: latency, speedup | trusted: latency, library, speedup, in-process | speedup ratio")
    for d, t in zip(default.workloads, trusted.workloads, strict=True):
        dp, tp = d.performance, t.performance
        assert tp is not None and tp.latency_from == vm.LATENCY_FROM_TRUSTED_BATCHES
        assert tp.latency_ms == pytest.approx(trusted.integrity.trusted_ms_per_call[t.uuid])
        print(
            f"{t.axes} | {dp.latency_ms:.4g} ms {dp.speedup_factor:.3f}x | {tp.latency_ms:.4g} ms "
            f"{tp.baseline_latency_ms:.4g} ms {tp.speedup_factor:.3f}x {tp.in_process_latency_ms:.4g} ms | "
            f"{tp.speedup_factor / dp.speedup_factor:.3f}"
        )
    assert trusted.integrity.holds == [], trusted.integrity.holds
