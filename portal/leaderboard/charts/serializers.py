"""A chart's JSON as the API's version names it."""

from __future__ import annotations

from typing import Any

from portal.core import serializers


def as_version(result: dict[str, Any], v: int) -> dict[str, Any]:
    """A chart (`chart`) as the API's version `v` names its data: the reference kernels of `distribution` carry their
    `speedup_factor` (`speedup` in version 1); every other chart's data names its own axes and is the same in both."""
    data = result.get("data") or {}
    if v >= 2 or result.get("chart") != "distribution":
        return result
    points = {
        key: [serializers.to_version(p, v) for p in data.get(key) or []] for key in ("references", "negative_controls")
    }
    return {**result, "data": {**data, **points}}
