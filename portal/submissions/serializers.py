"""The evaluation resource's `result`: the shared measurement fields (portal/core/serializers.py) and what only a
finished evaluation records, in `/api/v2/evaluations/<id>` and `/api/v2/submissions/<id>` (`evaluations[].result`)."""

from __future__ import annotations

from typing import Any

from portal.core.api_versions import CURRENT_API_VERSION
from portal.core.serializers import measurement, peak_denominator, to_version


def evaluation_result(evaluation, *, v: int = CURRENT_API_VERSION) -> dict[str, Any]:
    """A finished evaluation's result (`result` in the evaluation and submission resources), named as the API's
    version `v` names it."""
    result = to_version(
        {
            **measurement(evaluation, arch=evaluation.submission.arch),
            "ptxbench_verified": evaluation.ptxbench_verified,
            "tensor_core_share": evaluation.tensor_core_share,
            "latency_ms": evaluation.latency_ms,
            "baseline_latency_ms": evaluation.baseline_latency_ms,
            "review_state": evaluation.review_state or None,
            "review_reason": evaluation.review_reason or None,
            # the denominator of fraction_of_peak, as the verdict used it (the dense peak for the task's dtype)
            "peak_tflops": peak_denominator(evaluation.tflops, evaluation.fraction_of_peak),
            "is_synthetic": evaluation.submission.is_synthetic,
        },
        v,
        "evaluation",
    )
    if v >= 2:  # version 1's fields stay exactly as they were
        # Evidence files the portal did not store, and why (byte caps, a file it would not read).
        result["artifacts_not_kept"] = list(evaluation.artifacts_not_kept or [])
    return result
