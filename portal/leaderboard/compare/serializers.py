"""The comparison's JSON as the API's version names it."""

from __future__ import annotations

from typing import Any

from portal.core import serializers


def kernels_as_version(data: dict[str, Any], v: int) -> dict[str, Any]:
    """A kernel comparison (built with the canonical names) as the API's version `v` names it: each side's
    measurement and each workload's `speedup_factor` (`speedup` in version 1)."""

    def named(side: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if side is None else serializers.to_version(side, v)

    return {
        **data,
        "a": named(data["a"]),
        "b": named(data["b"]),
        "workloads": [{**w, "a": named(w["a"]), "b": named(w["b"])} for w in data["workloads"]],
    }
