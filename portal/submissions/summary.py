"""Pure: the summary columns an evaluation row keeps from its verdict document."""

from __future__ import annotations

import math
from typing import Any

from evaluator import peaks
from evaluator.integrity import consistency_hold


def _headline(verdict: dict[str, Any], headline: str | None) -> dict[str, Any] | None:
    """The workload that speaks for the verdict: the task's headline one when evaluated, else the largest."""
    workloads = verdict.get("workloads") or []
    if not workloads:
        return None
    for w in workloads:
        if headline and w.get("uuid") == headline:
            return w
    return max(workloads, key=lambda w: math.prod((w.get("axes") or {}).values() or [0]))


def summarise_verdict(
    verdict: dict[str, Any], *, headline_workload: str | None, plausible_speedup_max: float
) -> dict[str, Any]:
    arch = verdict.get("arch_check") or {}
    env = verdict.get("environment") or {}
    out: dict[str, Any] = {
        "status": str(verdict.get("status", ""))[:32],
        "arch_status": str(arch.get("status", ""))[:32],
        "arch_full": bool(arch.get("full")),
        "ptxbench_verified": bool(arch.get("ptxbench_verified")),
        "tensor_core_share": arch.get("tensor_core_share"),
        "gpu_name": str(env.get("gpu_name") or "")[:100],
        "gpu_uuid": str(env.get("gpu_uuid") or "")[:100],
        "driver_version": str(env.get("driver_version") or "")[:40],
        "evaluator_version": str(verdict.get("evaluator_version", ""))[:40],
        "speedup": None,
        "speedup_ci_low": None,
        "speedup_ci_high": None,
        "latency_ms": None,
        "baseline_latency_ms": None,
        "tflops": None,
        "peak_fraction": None,
        "review_state": "",
        "review_reason": "",
    }
    head = _headline(verdict, headline_workload)
    perf = (head or {}).get("performance") or {}
    if verdict.get("status") == "PASSED" and perf:
        ci = perf.get("speedup_ci95") or [None, None]
        out.update(
            speedup=perf.get("speedup_factor"),
            speedup_ci_low=ci[0] if len(ci) > 0 else None,
            speedup_ci_high=ci[1] if len(ci) > 1 else None,
            latency_ms=perf.get("latency_ms"),
            baseline_latency_ms=perf.get("reference_latency_ms"),
            tflops=perf.get("tflops"),
            # One denominator everywhere (evaluator/peaks.py): recomputed from the throughput, never taken from the
            # verdict, whose older versions divided by the matmul rate measured on the host.
            peak_fraction=peaks.fraction_of_peak(perf.get("tflops"), env.get("gpu_name")),
        )
        reasons = []
        if out["peak_fraction"] is not None and out["peak_fraction"] > 1.0:
            reasons.append(f"achieved {out['tflops']:.0f} TFLOP/s is above the GPU's datasheet peak")
        # Speedup and latencies must describe one measurement (the evaluator holds such a verdict itself since
        # issue 32; older or imported verdicts are checked here with the same rule).
        figures = consistency_hold(
            latency_ms=out["latency_ms"],
            reference_latency_ms=out["baseline_latency_ms"],
            speedup=out["speedup"],
            tflops=None,
            flops=None,
        )
        held_codes = {h.get("code") for h in (verdict.get("integrity") or {}).get("holds") or [] if isinstance(h, dict)}
        if figures is not None and figures.code not in held_codes:
            reasons.append(f"integrity ({figures.code}): {figures.message}")
        if out["speedup"] is not None and out["speedup"] > plausible_speedup_max:
            reasons.append(f"speedup {out['speedup']:.2f}x is above the plausibility bound {plausible_speedup_max:g}x")
    else:
        reasons = []
    # The evaluator's integrity holds (docs/threat-model.md): an outside measurement disagreed with the candidate
    # process's own, or the profiled call was not the timed one. Never ranked until an admin decides.
    if verdict.get("status") == "PASSED":
        for hold in (verdict.get("integrity") or {}).get("holds") or []:
            if isinstance(hold, dict) and hold.get("message"):
                reasons.append(f"integrity ({hold.get('code', 'hold')}): {hold['message']}")
    if reasons:
        out.update(review_state="held", review_reason="; ".join(reasons))
    message = f"{out['status'] or 'no status'}"
    if out["arch_status"]:
        message += f", instructions: {out['arch_status']}"
    if out["speedup"] is not None:
        message += f", {out['speedup']:.2f}x vs library"
    out["message"] = message
    return out
