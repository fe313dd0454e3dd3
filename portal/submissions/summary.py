"""Pure: the summary columns an evaluation row keeps from its typed verdict, as the verdict says them.

Every measurement (latency, speedup, TFLOP/s, fraction of peak) and every integrity hold (a rate beyond the GPU's
physical limit, figures that do not describe one measurement, ...) is the evaluator's: copied, never recomputed, so
a column cannot disagree with the evidence page's verdict. A figure an older verdict lacks stays empty ("not
recorded"). The portal adds one hold of its own, from its own setting: a speedup above PLAUSIBLE_SPEEDUP_MAX."""

from __future__ import annotations

import math
from typing import Any

from evaluator.both_sides.verdict import OverallStatus, Verdict, WorkloadResult


def _headline(verdict: Verdict, headline: str | None) -> WorkloadResult | None:
    """The workload that speaks for the verdict: the task's headline one when evaluated, else the largest."""
    workloads = verdict.workloads or []
    if not workloads:
        return None
    for w in workloads:
        if headline and w.uuid == headline:
            return w
    return max(workloads, key=lambda w: math.prod((w.axes or {}).values() or [0]))


def summarise_verdict(
    verdict: Verdict | None, *, headline_workload: str | None, plausible_speedup_max: float
) -> dict[str, Any]:
    """The summary columns of a verdict (the typed record, portal/core/verdict_record.py). No verdict: empty
    columns."""
    arch = verdict.arch_check if verdict else None
    env = verdict.environment if verdict else None
    passed = verdict is not None and verdict.status == OverallStatus.PASSED
    out: dict[str, Any] = {
        "status": str(verdict.status.value if verdict else "")[:32],
        "arch_status": str(arch.status.value if arch else "")[:32],
        "arch_full": bool(arch and arch.full),
        "arch_rests_on_profile": bool(arch and arch.rests_on_profile),
        "ptxbench_verified": bool(arch and arch.ptxbench_verified),
        "tensor_core_share": arch.tensor_core_share if arch else None,
        "gpu_name": str((env and env.gpu_name) or "")[:100],
        "gpu_uuid": str((env and env.gpu_uuid) or "")[:100],
        "driver_version": str((env and env.driver_version) or "")[:40],
        "evaluator_version": str(verdict.evaluator_version if verdict else "")[:40],
        "speedup_factor": None,
        "speedup_ci95_low": None,
        "speedup_ci95_high": None,
        "latency_ms": None,
        "baseline_latency_ms": None,
        "tflops": None,
        "fraction_of_peak": None,
        "review_state": "",
        "review_reason": "",
    }
    head = _headline(verdict, headline_workload) if verdict else None
    perf = head.performance if head else None
    holds = verdict.integrity.holds if verdict and verdict.integrity else []
    reasons: list[str] = []
    if passed and perf is not None:
        ci = perf.speedup_ci95 or [None, None]
        out.update(
            speedup_factor=perf.speedup_factor,
            speedup_ci95_low=ci[0] if len(ci) > 0 else None,
            speedup_ci95_high=ci[1] if len(ci) > 1 else None,
            latency_ms=perf.latency_ms,
            baseline_latency_ms=perf.baseline_latency_ms,
            tflops=perf.tflops,
            fraction_of_peak=perf.fraction_of_peak,
        )
        if out["speedup_factor"] is not None and out["speedup_factor"] > plausible_speedup_max:
            reasons.append(
                f"speedup {out['speedup_factor']:.2f}x is above the plausibility bound {plausible_speedup_max:g}x"
            )
    # The evaluator's integrity holds (docs/threat-model.md): an outside measurement disagreed with the candidate
    # process's own, the profiled call was not the timed one, a figure beyond the GPU's physical limits or
    # figures that are not one measurement. Never ranked until an admin decides.
    if passed:
        reasons += [f"integrity ({hold.code or 'hold'}): {hold.message or 'held for review'}" for hold in holds]
    if reasons:
        out.update(review_state="held", review_reason="; ".join(reasons))
    message = f"{out['status'] or 'no status'}"
    if out["arch_status"]:
        message += f", instructions: {out['arch_status']}"
    if out["speedup_factor"] is not None:
        message += f", {out['speedup_factor']:.2f}x vs library"
    out["message"] = message
    return out
