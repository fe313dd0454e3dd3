"""The JSON shapes every API resource shares, so every endpoint calls a thing by the same name: an evaluation's
measurement (`measurement`), the same fields in `/api/v2/evaluations/<id>` (`result`), `/api/v2/submissions/<id>`
(`evaluations[].result`), the kernel board (`/api/v2/leaderboard/kernels` rows, CSV columns), bundle manifests and
the datasets; timestamps (`iso`); the field names' versions. Each app serializes its own resources with these,
always with the canonical names: an evaluation's result in `portal/submissions/serializers.py`, board entries in
`portal/leaderboard/boards/serializers.py`. The old names are answered only by version 1 of the API (`to_version`, the
one table V1_NAMES / V1_ALIASES, listed in docs/api.md). Which version a request gets: portal/core/api_versions.py."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from portal.core import verdicts

# What an evaluation measured, by canonical name: the verdict's own (evaluator/both_sides/verdict.py `Performance`), so a
# measurement is called the same from the evaluator to the API. The interval `speedup_ci95` is given as its two
# ends, `speedup_ci95_low` and `speedup_ci95_high` (a board row, a CSV line and a dataset column are scalars).
MEASUREMENT_FIELDS = (
    "status",
    "arch_status",  # one of verdicts.ARCH_STATES
    "arch_full",
    "arch_rests_on_profile",
    "verdict_phrase",
    "speedup_factor",
    "speedup_ci95_low",
    "speedup_ci95_high",
    "tflops",
    "fraction_of_peak",
    "gpu_name",
)

# Version 1, in this one place: the old name of each renamed field (every resource) ...
V1_NAMES = {
    "speedup_factor": "speedup",
    "speedup_ci95_low": "speedup_ci_low",
    "speedup_ci95_high": "speedup_ci_high",
    "fraction_of_peak": "peak_fraction",
    "section": "group",  # a kernel board row's board section
}
# ... and the deprecated aliases it adds beside them, per resource: alias -> the canonical field(s) it repeats.
V1_ALIASES: dict[str, dict[str, str | tuple[str, ...]]] = {
    "evaluation": {  # an evaluation's `result`
        "speedup_ci95": ("speedup_ci95_low", "speedup_ci95_high"),
        "fraction_of_peak": "fraction_of_peak",
        "gpu": "gpu_name",
        "review": "review_state",
    },
    "run_on_task": {"best_speedup": "speedup"},  # a run's row on one task (`per=run`, `runs`)
    "run_across_tasks": {"geomean_speedup": "speedup"},  # a run's row across tasks
    "run_metrics": {"best_speedup": "speedup"},  # `/api/v2/runs/<id>` `metrics`
}
# Fields added after version 2 began: version 1 answers exactly the names it always did, so it leaves these out.
V2_ONLY = frozenset({"arch_rests_on_profile", "evaluations_of_source"})
# Every name version 1 answers that version 2 does not (docs/api.md lists each).
DEPRECATED_ALIASES = sorted({*V1_NAMES.values(), *(a for aliases in V1_ALIASES.values() for a in aliases)})


def field_name(name: str, v: int) -> str:
    """A canonical field's name in version `v` (the old name in version 1)."""
    return V1_NAMES.get(name, name) if v < 2 else name


def canonical_names(record: dict[str, Any]) -> dict[str, Any]:
    """A record written with version 1's names (a file published in a version 1 format: a Fixit dataset row, a results
    snapshot line, a bundle manifest's evaluation), read back with the canonical names; other keys unchanged. A record
    already canonical comes back as it was."""
    old = {v1: canonical for canonical, v1 in V1_NAMES.items()}
    return {old.get(key, key): value for key, value in record.items()}


def to_version(record: dict[str, Any], v: int, resource: str = "") -> dict[str, Any]:
    """A record built with the canonical names, as version `v` names it: 2 as built, 1 with the old names
    (V1_NAMES) and the resource's deprecated aliases (V1_ALIASES) after them, same values."""
    if v >= 2:
        return record
    out = {field_name(key, v): value for key, value in record.items() if key not in V2_ONLY}
    for alias, source in V1_ALIASES.get(resource, {}).items():
        if isinstance(source, tuple):
            if all(s in record for s in source):
                out[alias] = [record[s] for s in source]
        elif source in record:
            out[alias] = record[source]
    return out


def iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z") if value else None


def measurement(obj: Any, *, arch: str) -> dict[str, Any]:
    """The measurement fields of an Evaluation or a board's KernelRow (both carry the same attributes)."""
    status = getattr(obj, "status", "") or ""
    return {
        "status": status,
        "arch_status": verdicts.arch_state(obj.arch_status),
        "arch_full": bool(obj.arch_full),
        "arch_rests_on_profile": bool(obj.arch_rests_on_profile),
        "verdict_phrase": verdicts.verdict_phrase(status, obj.arch_status, obj.arch_full, arch),
        "speedup_factor": obj.speedup_factor,
        "speedup_ci95_low": obj.speedup_ci95_low,
        "speedup_ci95_high": obj.speedup_ci95_high,
        "tflops": obj.tflops,
        # tflops over the GPU's datasheet dense peak for the task's dtype (the verdict's own figure)
        "fraction_of_peak": obj.fraction_of_peak,
        "gpu_name": obj.gpu_name,
    }


def peak_denominator(tflops: float | None, fraction: float | None) -> float | None:
    """The peak a verdict divided its rate by (the GPU's dense peak for the task's dtype), read back from its rate and
    fraction: the verdict's own figure, never looked up again. None when either is missing."""
    return round(tflops / fraction, 1) if tflops and fraction else None
