"""The evaluation resource's `result`: the shared measurement fields (portal/core/serializers.py) and what only a
finished evaluation records, in `/api/v1/evaluations/<id>` and `/api/v1/submissions/<id>` (`evaluations[].result`)."""

from __future__ import annotations

from typing import Any

from evaluator import peaks
from portal.core.serializers import measurement, with_deprecated_aliases


def evaluation_result(evaluation) -> dict[str, Any]:
    """A finished evaluation's result (`result` in the evaluation and submission resources)."""
    return with_deprecated_aliases(
        {
            **measurement(evaluation, arch=evaluation.submission.arch),
            "ptxbench_verified": evaluation.ptxbench_verified,
            "tensor_core_share": evaluation.tensor_core_share,
            "latency_ms": evaluation.latency_ms,
            "baseline_latency_ms": evaluation.baseline_latency_ms,
            "review_state": evaluation.review_state or None,
            "review_reason": evaluation.review_reason or None,
            "peak_tflops": peaks.peak_tflops(evaluation.gpu_name),  # the denominator of peak_fraction
            "is_synthetic": evaluation.submission.is_synthetic,
        }
    )
