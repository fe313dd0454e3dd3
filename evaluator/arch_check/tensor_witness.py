"""Tensor-core use witnessed from outside the candidate process: the GPU's own counters while the timing process
serves the submission, read through NVML GPM by the trusted parent.

Nsight Compute counts the target instructions in one profiled call, in a process that can tell it is profiled (the
injection library is visible): a kernel can take a wgmma path there and a SIMT path when timed. So the parent
also asks the GPU how much of the time its SMs spent on tensor operations (`NVML_GPM_METRIC_ANY_TENSOR_UTIL`)
between two samples, the first just before the timing process loads the submission (its setup ran before, beside
the trusted baseline process), the second once it is gone, each taken once the GPU reads quiet (GpmWindow: the
counters trail the work). Every GPU call of that process
runs on inputs the parent drew and counts (trials, timed rounds, batches: evaluator/measure/lent_calls.py); the parent's
own work inside the window draws inputs and compares outputs, neither on tensor cores (though GPM reads the draws
as a little tensor activity, below); the references, the library baseline and the profile all run outside it.

The witnessed tensor work is that utilisation times the GPU's dense tensor peak for the task's dtype times the
window: the FLOPs the tensor cores could have done in the time they were busy. `verified` needs it to reach the
share threshold of the task's FLOPs for the calls made in the window (evaluator/checks/integrity_record.py), read
over the timed workload whose calls do the most FLOPs and never under MIN_FLOPS_PER_CALL (evaluator/pipeline.py).
Measured on an H200 against cuBLAS bf16 GEMMs in another process, 1 s windows read 1.00x-1.16x the achieved rate
and fp32 SIMT 0%; windows under 0.25 s read low, and the GPU wants samples more than 100 ms apart, so a shorter
window is not judged. GPM is device-wide: work of another process on the same GPU would count, which the worker's
one-GPU-per-worker rule (evaluator/host.py) excludes. What the witness cannot tell: tensor work that does not
compute the outputs (a dummy wgmma kernel beside a SIMT one) counts as tensor work; that kernel pays for it in its
ranked time. And GPM counts tensor work where none runs: a SIMT-only timing process of the corpus's
profiled-only wgmma kernel read 0.92-0.94 of the task's FLOPs, from register moves its loop issues on the MMA pipe
(`HFMA2.MMA`: without them it read 0.0095%, not 1.2%; docs/threat-model.md, property 4), which any code can issue.
So the witness is one-sided: a low reading demotes, a high one proves nothing, and the page says so beside it.

Parent side only. `witness` and `judge` are pure; `GpmWindow` is the edge (NVML).
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from typing import Any

from evaluator.both_sides.verdict import ArchCheck, ArchStatus
from evaluator.envinfo import nvml_handle

# Shorter windows read low (see above); NVML wants its two samples at least 100 ms apart.
MIN_WINDOW_S = 0.25
# The window also sees tensor activity that is not the candidate's, in proportion to the calls it serves: GPM reads
# the parent's own input draws (PyTorch's random generator) as a little tensor work. SIMT controls read 1.2 to 3.8
# GFLOP-equivalents a call on the headline GEMM's M=128 workload and 2.5 to 4.5 at M=8192 (H100 and H200,
# 2026-12-05, docs/runs/integrity/h100-2026-12-05c/ and h200-2026-12-05c/). It is bounded, not subtracted: a
# workload is judged only where its own FLOPs a call are over ten times the most seen, which keeps a kernel with no
# tensor work under a tenth of its FLOPs, far below the share threshold.
MIN_FLOPS_PER_CALL = 5.0e10
SETTLE_STEP_S = 0.11
SETTLE_MAX_S = 2.0
# One quiet step (GpmWindow): an idle H100 read 0.0000-0.0005% tensor and under 1% SM a 0.1 s step, a SIMT kernel
# 0.0028% tensor and 99% SM, a cuBLAS GEMM 20-25% tensor (docs/runs/integrity/h100-2026-12-05b/gpm-timeline.log).
QUIET_TENSOR_PCT = 0.001
QUIET_SM_PCT = 2.0


@dataclass(frozen=True)
class GpmReading:
    """What the GPU said about one window."""

    seconds: float
    any_tensor_pct: float  # percent of the window the SMs spent on tensor operations (0-100)
    sm_pct: float | None = None  # percent of SMs busy, for the record


@dataclass(frozen=True)
class Witness:
    """The witnessed tensor work against the task's FLOPs for the calls of the window."""

    seconds: float
    any_tensor_pct: float
    tensor_flops: float  # any_tensor_pct / 100 x dense peak x seconds
    task_flops: float  # the task's FLOPs per call x the calls in the window
    share: float


def witness(reading: GpmReading, peak_tflops: float, flops_per_call: float, calls: int) -> Witness | str:
    """The witness of one window, or why there is none."""
    if reading.seconds < MIN_WINDOW_S:
        return f"the timing process lived {reading.seconds:.3f} s, under the {MIN_WINDOW_S} s a GPM reading needs"
    if not peak_tflops or not flops_per_call or calls <= 0:
        return "no dense tensor peak or no task FLOPs for this workload"
    if flops_per_call < MIN_FLOPS_PER_CALL:
        return (
            f"the witnessed workload does {flops_per_call / 1e9:.3g} GFLOP a call, under the "
            f"{MIN_FLOPS_PER_CALL / 1e9:g} GFLOP a call the GPU's counters need to tell it from the evaluator's own "
            "background"
        )
    tensor = reading.any_tensor_pct / 100.0 * peak_tflops * 1e12 * reading.seconds
    task = flops_per_call * calls
    return Witness(reading.seconds, reading.any_tensor_pct, tensor, task, tensor / task)


def judge(check: ArchCheck, found: Witness | str, workload: str | None = None) -> None:
    """Record the witness of `workload`'s timing process in `check`; a `verified` result whose witnessed share is
    below the threshold becomes `token` (the target instructions ran in the profiled call, but the timed process's
    tensor work falls short)."""
    check.witness_workload = workload
    if isinstance(found, str):
        check.witness_note = f"tensor work not witnessed: {found}"
        return
    check.witness_tensor_share = round(found.share, 4)
    check.witness_any_tensor_pct = round(found.any_tensor_pct, 4)
    check.witness_seconds = round(found.seconds, 3)
    threshold = check.share_threshold or 0.0
    if check.status == ArchStatus.VERIFIED and found.share < threshold:
        check.status = ArchStatus.TOKEN
        check.reason = (
            f"not verified: the profiled call executed the target instructions, but over the timing process the GPU "
            f"witnessed tensor work of {found.share:.0%} of the task's FLOPs (needed: {threshold:.0%})"
        )


class GpmWindow:
    """Two GPM samples of one GPU, taken by `start` and `stop`; `reason` says why there is no reading.

    Each edge is taken only once the GPU reads quiet: GPM's counters trail the work (on an H100, a window opened
    just after the baseline process had been timed still counted about half of that process's last 0.2 s of
    tensor work; bench/probe_gpm_timeline.py, docs/runs/integrity/h100-2026-12-05b/). Both edges fall where no
    counted call runs (before the submission is loaded; after its process is gone), so waiting for quiet moves
    the edge past work that is not the window's without losing any that is. A GPU that does not go quiet in
    SETTLE_MAX_S gives no reading."""

    def __init__(self, gpu_uuid: str | None, nvml: Any = None) -> None:
        self.reason = ""
        self._nvml: Any = None
        self._handle: Any = None
        self._first: Any = None
        self._t0 = 0.0
        try:
            nvml = nvml or importlib.import_module("pynvml")

            nvml.nvmlInit()
            self._nvml = nvml
            self._handle = nvml_handle(nvml, gpu_uuid)
            if self._handle is None:
                self.reason = "no GPU UUID to sample among several GPUs"
                return
            if not nvml.nvmlGpmQueryDeviceSupport(self._handle).isSupportedDevice:
                self.reason = "this GPU does not support GPM metrics"
        except Exception as exc:  # noqa: BLE001 - any NVML failure means no witness, with the reason recorded
            self.reason = f"NVML GPM unavailable ({type(exc).__name__}: {exc})"

    def start(self) -> None:
        if self.reason:
            return
        try:
            edge = self._quiet_edge("before the timing process")
            if edge is not None:
                self._first, self._t0 = edge
        except Exception as exc:  # noqa: BLE001
            self.reason = f"GPM sample failed ({type(exc).__name__}: {exc})"

    def stop(self) -> GpmReading | None:
        """The reading since `start`, or None (then `reason` says why)."""
        if self.reason:
            return None
        nvml = self._nvml
        second = None
        try:
            lived = time.monotonic() - self._t0
            if lived < SETTLE_STEP_S:  # NVML refuses samples closer than 100 ms
                return self._refuse(f"a window of {lived:.3f} s is too short for GPM")
            edge = self._quiet_edge("after the timing process")
            if edge is None:
                return None
            second, t1 = edge
            tensor, sm = self._metrics(self._first, second)
            if tensor is None:
                return self._refuse("GPM gave no tensor utilisation")
            return GpmReading(t1 - self._t0, tensor, sm)
        except Exception as exc:  # noqa: BLE001
            return self._refuse(f"GPM reading failed ({type(exc).__name__}: {exc})")
        finally:
            for sample in (self._first, second):
                self._free(sample)
            self._first = None
            try:
                nvml.nvmlShutdown()
            except Exception:  # noqa: BLE001, S110
                pass

    def _sample(self) -> tuple[Any, float]:
        sample = self._nvml.nvmlGpmSampleAlloc()
        self._nvml.nvmlGpmSampleGet(self._handle, sample)
        return sample, time.monotonic()

    def _quiet_edge(self, where: str) -> tuple[Any, float] | None:
        """A sample taken where the step before it read quiet, and its time; None (with `reason`) when the GPU
        stayed busy for SETTLE_MAX_S."""
        sample, t = self._sample()
        give_up = t + SETTLE_MAX_S
        while True:
            time.sleep(SETTLE_STEP_S)
            following, t = self._sample()
            tensor, sm = self._metrics(sample, following)
            self._free(sample)
            sample = following
            if quiet(tensor, sm):
                return sample, t
            if t >= give_up:
                self._free(sample)
                self._refuse(f"the GPU was not quiet {where} within {SETTLE_MAX_S:g} s (tensor {tensor}%, SM {sm}%)")
                return None

    def _metrics(self, first: Any, second: Any) -> tuple[float | None, float | None]:
        return gpm_utilisation(self._nvml, first, second)

    def _free(self, sample: Any) -> None:
        if sample is not None:
            try:
                self._nvml.nvmlGpmSampleFree(sample)
            except Exception:  # noqa: BLE001, S110 - freeing must not mask the reading
                pass

    def _refuse(self, reason: str) -> GpmReading | None:
        self.reason = reason
        return None


def gpm_utilisation(nvml: Any, first: Any, second: Any) -> tuple[float | None, float | None]:
    """Tensor and SM utilisation (percent) between two GPM samples; None for a metric GPM did not give."""
    request = nvml.c_nvmlGpmMetricsGet_t()
    request.version = nvml.NVML_GPM_METRICS_GET_VERSION
    request.numMetrics = 2
    request.sample1, request.sample2 = first, second
    request.metrics[0].metricId = nvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL
    request.metrics[1].metricId = nvml.NVML_GPM_METRIC_SM_UTIL
    nvml.nvmlGpmMetricsGet(request)
    values = [float(m.value) if m.nvmlReturn == nvml.NVML_SUCCESS else None for m in request.metrics[:2]]
    return values[0], values[1]


def quiet(tensor_pct: float | None, sm_pct: float | None) -> bool:
    """Whether one settle step read a GPU with nothing running: no tensor work and the SMs (near) idle."""
    return tensor_pct is not None and tensor_pct <= QUIET_TENSOR_PCT and (sm_pct is None or sm_pct <= QUIET_SM_PCT)
