"""The tensor work the GPU witnesses over a timing process (evaluator/arch_check/tensor_witness.py): pure arithmetic on GPM
readings and the verdict it changes. The readings are the shapes NVML gives; the H200 figures are in
docs/runs/integrity/h200-2026-12-04b/."""

from __future__ import annotations

import time
import types
from pathlib import Path

import pytest

from evaluator.arch_check.tensor_witness import (
    MIN_FLOPS_PER_CALL,
    MIN_WINDOW_S,
    SETTLE_STEP_S,
    GpmReading,
    GpmWindow,
    Witness,
    judge,
    quiet,
    witness,
)
from evaluator.both_sides.taskdata import load_task
from evaluator.both_sides.verdict import ArchCheck, ArchStatus, Status, WorkloadResult
from evaluator.checks.workload_checks import WorkloadRun
from evaluator.pipeline import _witness_of

REPO = Path(__file__).resolve().parents[2]

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


def test_a_workload_too_small_to_stand_above_the_background_is_not_judged():
    """SIMT-only kernels read up to 10 GFLOP-equivalents of tensor work a call at M=128 (9.4 GFLOP a call), shares
    of 0.14-1.14 (H100, 2026-12-05): such a reading says nothing. Mutation caught: `witness` without the floor
    (a share of 1.0 here, which would keep a profiled-only wgmma path `verified`)."""
    m128 = 2 * 128 * 7168 * 5120
    calls, busy_s = 255, 255 * m128 / (H200_BF16 * 1e12)
    found = witness(GpmReading(0.94, 100 * busy_s / 0.94), H200_BF16, m128, calls)
    assert isinstance(found, str) and "9.4 GFLOP a call, under the 50 GFLOP a call" in found
    assert isinstance(witness(GpmReading(2.0, 1.0), H200_BF16, MIN_FLOPS_PER_CALL, 100), Witness)


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


class FakeNvml:
    """NVML's GPM calls as the window makes them (the edge of the world): every metrics request between two samples
    answers the next (tensor %, SM %) of `steps`; the samples are numbered in the order taken."""

    NVML_SUCCESS = 0
    NVML_GPM_METRICS_GET_VERSION = 1
    NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5
    NVML_GPM_METRIC_SM_UTIL = 2

    def __init__(self, steps: list[tuple[float, float]]) -> None:
        self.steps = list(steps)
        self.taken = 0
        self.freed: list[int] = []
        self.asked: list[tuple[int, int]] = []  # (sample1, sample2) of every metrics request

    class c_nvmlGpmMetricsGet_t:  # noqa: N801 - NVML's name
        def __init__(self) -> None:
            self.metrics = [types.SimpleNamespace(metricId=0, value=0.0, nvmlReturn=0) for _ in range(2)]

    def nvmlInit(self) -> None: ...  # noqa: N802

    def nvmlShutdown(self) -> None: ...  # noqa: N802

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:  # noqa: N802
        return "gpu0"

    def nvmlGpmQueryDeviceSupport(self, handle: str) -> types.SimpleNamespace:  # noqa: N802
        return types.SimpleNamespace(isSupportedDevice=1)

    def nvmlGpmSampleAlloc(self) -> list[int]:  # noqa: N802
        self.taken += 1
        return [self.taken]

    def nvmlGpmSampleGet(self, handle: str, sample: list[int]) -> None: ...  # noqa: N802

    def nvmlGpmSampleFree(self, sample: list[int]) -> None:  # noqa: N802
        self.freed.append(sample[0])

    def nvmlGpmMetricsGet(self, request: c_nvmlGpmMetricsGet_t) -> None:  # noqa: N802
        self.asked.append((request.sample1[0], request.sample2[0]))
        request.metrics[0].value, request.metrics[1].value = self.steps.pop(0)


def test_each_edge_of_the_window_waits_for_a_quiet_gpu():
    """GPM's counters trail the work: a window opened as the baseline process ends counts part of its tensor work
    (H100, 2026-12-05). The first step after the start reads the baseline's tail (22% tensor), the second is quiet:
    the window opens at the third sample. After the timing process the first step is quiet and closes it. Mutation
    caught: a window taking its first sample at once (reading from sample 1)."""
    nvml = FakeNvml([(22.0, 50.0), (0.0, 0.3), (0.0, 0.2), (0.6, 35.0)])
    window = GpmWindow(None, nvml)
    window.start()
    time.sleep(SETTLE_STEP_S)
    reading = window.stop()
    assert window.reason == "" and reading is not None
    assert nvml.asked[-1] == (3, 5)  # the reading runs from the quiet start edge to the quiet stop edge
    assert reading.any_tensor_pct == 0.6 and reading.sm_pct == 35.0
    assert reading.seconds >= 2 * SETTLE_STEP_S  # from the start edge: one wait and the stop's settle step
    assert sorted(nvml.freed) == [1, 2, 3, 4, 5]  # every sample given back


def test_a_gpu_that_never_goes_quiet_gives_no_reading(monkeypatch):
    """Another process's tensor work on the GPU would count as the candidate's: no witness, with the reason (the
    profile alone decides, as on a host without GPM)."""
    monkeypatch.setattr("evaluator.arch_check.tensor_witness.SETTLE_MAX_S", 0.3)
    nvml = FakeNvml([(12.0, 80.0)] * 10)
    window = GpmWindow(None, nvml)
    window.start()
    assert window.stop() is None
    assert window.reason.startswith("the GPU was not quiet before the timing process within 0.3 s (tensor 12.0%")
    assert sorted(nvml.freed) == list(range(1, nvml.taken + 1))


@pytest.mark.parametrize(
    ("tensor", "sm", "expected"),
    [(0.0, 0.4, True), (0.0005, 1.1, True), (0.0028, 99.5, False), (0.0, 99.0, False), (None, 0.0, False)],
)
def test_quiet_means_no_tensor_work_and_idle_sms(tensor, sm, expected):
    """The H100's figures: idle 0-0.0005% tensor under 1% SM, a SIMT kernel 0.0028% at 99% SM."""
    assert quiet(tensor, sm) is expected


def _runs(task, readings):
    """WorkloadRuns of `task` by M, each with its GPM reading (None: no reading) and 255 calls in the window."""
    runs = {}
    for w in task.workloads:
        reading = readings.get(w.axes["M"], "absent")
        if reading == "absent":
            continue
        run = WorkloadRun(WorkloadResult(w.uuid, dict(w.axes), Status.PASSED), window_calls=255)
        run.gpm, run.gpm_reason = reading, "" if reading else "the GPU was not quiet"
        runs[w.uuid] = run
    return runs


def test_the_witness_is_of_the_timed_workload_whose_calls_do_the_most_flops():
    """A profiled-only wgmma path runs SIMT in every timed workload: read where the task's FLOPs dwarf the
    background. M=128's window reads a share of about 1 from background alone, M=8192's a share near 0: judged on
    M=8192, the `verified` profile becomes `token`. Mutation caught: judging the profiled (M=128) workload."""
    task = load_task(REPO / "tasks" / "gemm_n7168_k5120")
    runs = _runs(task, {128: GpmReading(0.94, 0.28, 95.0), 8192: GpmReading(2.3, 0.018, 99.0)})
    uuid, found = _witness_of(task, runs, "NVIDIA H100 80GB HBM3")
    assert task.workload(uuid).axes["M"] == 8192
    assert isinstance(found, Witness) and found.share < 0.05
    check = verified()
    judge(check, found, uuid)
    assert check.status == ArchStatus.TOKEN and check.witness_workload == uuid


def test_a_larger_workload_without_a_reading_gives_way_to_one_with_a_reading():
    task = load_task(REPO / "tasks" / "gemm_n7168_k5120")
    sizes = sorted(w.axes["M"] for w in task.workloads)
    runs = _runs(task, {sizes[-1]: None, sizes[-2]: GpmReading(1.5, 0.02, 99.0)})
    uuid, found = _witness_of(task, runs, "NVIDIA H100 80GB HBM3")
    assert task.workload(uuid).axes["M"] == sizes[-2] and isinstance(found, Witness)
    runs = _runs(task, {sizes[-1]: None})
    assert _witness_of(task, runs, "NVIDIA H100 80GB HBM3")[1] == "the GPU was not quiet"
