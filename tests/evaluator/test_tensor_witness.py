"""The tensor work the GPU witnesses over a timing process (evaluator/arch_check/tensor_witness.py): pure arithmetic on GPM
readings and the verdict it changes. The readings are the shapes NVML gives; the H200 figures are in
docs/runs/integrity/h200-2026-12-04b/."""

from __future__ import annotations

import pytest

from evaluator.arch_check.tensor_witness import MIN_WINDOW_S, GpmReading, Witness, judge, witness
from evaluator.both_sides.verdict import ArchCheck, ArchStatus

H200_BF16 = 989.4
GEMM_8192 = 2 * 8192 * 7168 * 5120  # FLOPs of one call of the headline GEMM's largest workload


def verified() -> ArchCheck:
    return ArchCheck(status=ArchStatus.VERIFIED, share_threshold=0.5)


def test_tensor_busy_time_at_the_dense_peak_is_the_witnessed_work():
    """100 calls at 0.87 ms (690 TFLOP/s) in a 2 s window: the tensor cores busy 4.4% of it at the peak rate did
    the calls' FLOPs once over."""
    calls, busy_s = 100, 100 * GEMM_8192 / (H200_BF16 * 1e12)
    found = witness(GpmReading(2.0, 100 * busy_s / 2.0), H200_BF16, GEMM_8192, calls)
    assert isinstance(found, Witness) and found.share == pytest.approx(1.0)


def test_a_window_too_short_for_gpm_is_not_judged():
    found = witness(GpmReading(MIN_WINDOW_S / 2, 50.0), H200_BF16, GEMM_8192, 10)
    assert isinstance(found, str) and "GPM reading needs" in found


def test_a_profiled_only_tensor_path_is_not_verified():
    """The profiled call ran wgmma, the timed process's tensor work came to 3% of the task's FLOPs (a SIMT path
    when not profiled). Mutation caught: `judge` recording the figures without lowering the status."""
    check = verified()
    judge(check, Witness(3.0, 0.1, 0.03 * GEMM_8192 * 100, GEMM_8192 * 100, 0.03))
    assert check.status == ArchStatus.TOKEN
    assert "witnessed tensor work of 3% of the task's FLOPs (needed: 50%)" in check.reason
    assert check.witness_tensor_share == 0.03


def test_witnessed_work_above_the_threshold_keeps_verified_and_is_recorded():
    check = verified()
    judge(check, Witness(2.5, 4.2, 1.1 * GEMM_8192, GEMM_8192, 1.1))
    assert check.status == ArchStatus.VERIFIED and check.witness_tensor_share == 1.1
    assert check.witness_seconds == 2.5 and check.witness_any_tensor_pct == 4.2


def test_a_host_without_gpm_gets_a_note_and_keeps_the_profile_s_status():
    check = verified()
    judge(check, "this GPU does not support GPM metrics")
    assert check.status == ArchStatus.VERIFIED and check.witness_tensor_share is None
    assert check.witness_note == "tensor work not witnessed: this GPU does not support GPM metrics"
