"""The one place a verdict document becomes the evaluator's typed records (the verdict is the contract).

`parse_verdict` is the only caller of the evaluator's reader (`evaluator.both_sides.verdict.from_dict`) in the portal, and it
is called only where the portal receives a verdict: the GPU worker's result (`submissions/runner.py`), an imported
or demo verdict file (`leaderboard/services.py`, `seed_leaderboard`), and a stored row (`Evaluation.verdict_record`,
read once per row object). Everything else takes the typed `evaluator.both_sides.verdict.Verdict` and reads its attributes
(`verdict.arch_check.status`, `workload.performance.latency_ms`), never keys of the stored dict; statuses are the
evaluator's enums (`OverallStatus`, `Status`, `ArchStatus`), which compare equal to the words in the summary columns.

The database keeps the verdict exactly as the evaluator wrote it (a JSON field on Evaluation, never rewritten), so
stored documents come from every evaluator version the portal has run. They are brought to the current schema here,
once, in one step (`_upgrade`):
- a figure whose meaning changed since is dropped, so the page says "not recorded" rather than show it under the
  new meaning: `performance.fraction_of_peak` of a schema_version 1 document (some divided by a matmul rate
  measured on the host, not by the datasheet peak of evaluator/checks/peaks.py);
- a field added since (`arch_check.trusted_ratio`, `performance.latency_from`, `integrity`, ...) is absent:
  `from_dict` gives it its default; a missing field that has no default (a record an old evaluator or a test
  wrote partly) gets the empty value of its type, and a missing architecture-check status reads as not_requested;
- a renamed field is read under its old name (`from_dict` does that, from the field's `renamed_from`).
A document that still cannot be read (not a dict, a status word the evaluator does not have, a record of the wrong
shape) is None, as is no verdict at all: the callers treat both as "no verdict". The portal never recomputes a
figure the verdict carries, for an old document either."""

from __future__ import annotations

import dataclasses
import logging
import types
import typing
from enum import StrEnum
from typing import Any

from evaluator.both_sides.verdict import ArchCheck, ArchStatus, Verdict, complete_fields, from_dict

log = logging.getLogger(__name__)

# Required enum fields that an older or partial document may lack, and what their absence means.
_MISSING_ENUMS: dict[tuple[type, str], StrEnum] = {(ArchCheck, "status"): ArchStatus.NOT_REQUESTED}


class _Unreadable(ValueError):
    pass


def parse_verdict(data: Any) -> Verdict | None:
    """`data` (a stored verdict document, or a Verdict already) as the evaluator's typed records; None for no
    verdict or one that cannot be read (logged)."""
    if isinstance(data, Verdict):
        return data
    if not isinstance(data, dict) or not data:
        return None
    try:
        return from_dict(_complete(Verdict, _upgrade(data)))
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        log.warning("a verdict document could not be read (%s): %s", type(exc).__name__, str(exc)[:300])
        return None


# The schema version whose fraction_of_peak is the datasheet one (evaluator/checks/peaks.py); older documents' may not be.
_DATASHEET_PEAK_SINCE = 2


def _upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with the figures whose meaning changed since its schema version taken out (a shallow copy where
    it changes; the stored document is never modified)."""
    version = data.get("schema_version", 1)
    if isinstance(version, int) and version >= _DATASHEET_PEAK_SINCE:
        return data
    workloads = data.get("workloads")
    if not isinstance(workloads, list):
        return data
    upgraded = []
    for w in workloads:
        perf = w.get("performance") if isinstance(w, dict) else None
        if isinstance(perf, dict) and "fraction_of_peak" in perf:
            w = {**w, "performance": {k: v for k, v in perf.items() if k != "fraction_of_peak"}}
        upgraded.append(w)
    return {**data, "workloads": upgraded}


def _complete(cls: type, data: Any) -> dict[str, Any]:
    """`data` with every field of dataclass `cls` that has no default present, nested records completed too."""
    completed: dict[str, Any] = complete_fields(cls, data, _empty, _must_be_record)
    return completed


def _must_be_record(cls: type, data: Any) -> None:
    if not isinstance(data, dict):
        raise _Unreadable(f"{cls.__name__} is a {type(data).__name__}, not a record")


def _empty(cls: type, name: str, hint: Any) -> Any:
    """The value a field without a default reads as when the document lacks it."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return None
    if origin is list:
        return []
    if origin is dict:
        return {}
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        if (cls, name) in _MISSING_ENUMS:
            return _MISSING_ENUMS[(cls, name)].value
        raise _Unreadable(f"{cls.__name__}.{name} is missing")
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _complete(hint, {})
    if hint in (str, int, float, bool):
        return hint()
    raise _Unreadable(f"{cls.__name__}.{name} is missing")
