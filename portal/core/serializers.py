"""The JSON shapes every API resource shares, so every endpoint calls a thing by the same name: an evaluation's
measurement (`measurement`), the same fields in `/api/v1/evaluations/<id>` (`result`), `/api/v1/submissions/<id>`
(`evaluations[].result`), the kernel board (`/api/v1/leaderboard/kernels` rows, CSV columns), bundle manifests and
the datasets; timestamps (`iso`); the deprecated aliases. Each app serializes its own resources with these:
an evaluation's result in `portal/submissions/serializers.py`, board entries in `portal/leaderboard/serializers.py`.

Old names are kept as deprecated aliases for one release (DEPRECATED_ALIASES, listed in docs/api.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from portal.core import verdicts

# What an evaluation measured, by canonical name (the Evaluation model's column names).
MEASUREMENT_FIELDS = (
    "status",
    "arch_status",  # one of verdicts.ARCH_STATES
    "arch_full",
    "verdict_phrase",
    "speedup",
    "speedup_ci_low",
    "speedup_ci_high",
    "tflops",
    "peak_fraction",
    "gpu_name",
)

# deprecated name -> canonical name (or how to build it), kept for one release.
DEPRECATED_ALIASES = {
    "speedup_ci95": "[speedup_ci_low, speedup_ci_high]",
    "fraction_of_peak": "peak_fraction",
    "gpu": "gpu_name",
    "review": "review_state",
    "best_speedup": "speedup (a run's row on one task)",
    "geomean_speedup": "speedup (a run's row across tasks)",
}


def iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z") if value else None


def measurement(obj: Any, *, arch: str) -> dict[str, Any]:
    """The measurement fields of an Evaluation or a board's KernelRow (both carry the same attributes)."""
    status = getattr(obj, "status", "") or ""
    return {
        "status": status,
        "arch_status": verdicts.arch_state(obj.arch_status),
        "arch_full": bool(obj.arch_full),
        "verdict_phrase": verdicts.verdict_phrase(status, obj.arch_status, obj.arch_full, arch),
        "speedup": obj.speedup,
        "speedup_ci_low": obj.speedup_ci_low,
        "speedup_ci_high": obj.speedup_ci_high,
        "tflops": obj.tflops,
        "peak_fraction": obj.peak_fraction,  # tflops over the GPU's datasheet dense BF16 peak (evaluator/peaks.py)
        "gpu_name": obj.gpu_name,
    }


def with_deprecated_aliases(record: dict[str, Any]) -> dict[str, Any]:
    """Add the old names beside the canonical ones (same values), for one release."""
    out = dict(record)
    if "speedup_ci_low" in record:
        out["speedup_ci95"] = [record["speedup_ci_low"], record["speedup_ci_high"]]
    for old, new in (("fraction_of_peak", "peak_fraction"), ("gpu", "gpu_name"), ("review", "review_state")):
        if new in record:
            out[old] = record[new]
    return out
