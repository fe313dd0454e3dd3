"""Verdict documents that portal tests build by hand, held to evaluator/verdict.schema.json.

`complete(partial)` takes the fields a test cares about and returns a whole verdict in the evaluator's own shape:
every field the test left out gets the evaluator's default (or an empty value of its type when the evaluator has
none), through the evaluator's dataclasses (evaluator/both_sides/verdict.py), and the result is validated against the schema.
A field the evaluator does not write, a wrong type or an unknown status fails the test that built it, so a portal
test can never pass on a verdict the evaluator could not produce. `validate(document)` only checks."""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from enum import StrEnum
from typing import Any

from evaluator.both_sides import verdict as vm
from evaluator.schema import SCHEMA_PATH


@functools.cache
def _validator() -> Any:
    """The schema compiled once. jsonschema-rs rather than the pure-Python jsonschema: the suite validates about
    ten thousand verdicts (the demo rows alone are over five thousand) and this is ~15x faster on them, with the
    same draft (2020-12) and the same errors (tests/evaluator/test_verdict_cli.py holds the two together)."""
    import jsonschema_rs

    return jsonschema_rs.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))


def validate(document: dict[str, Any]) -> dict[str, Any]:
    """`document` unchanged when it is a valid verdict; an AssertionError naming every problem otherwise."""
    problems = sorted(_validator().iter_errors(document), key=lambda e: list(map(str, e.instance_path)))
    if problems:
        lines = [f"{'/'.join(map(str, e.instance_path)) or '(top)'}: {e.message[:300]}" for e in problems[:20]]
        raise AssertionError("not a valid verdict (evaluator/verdict.schema.json):\n  " + "\n  ".join(lines))
    return document


_TOP = {
    "evaluator_version": "0.1.0",
    "task": "gemm_n7168_k5120",
    "arch": "sm_90a",
    "created_at": "2025-11-01T12:00:00Z",
    "source_sha256": "0" * 64,
    "source_bytes": 0,
    "stages_requested": [],
}


def complete(partial: dict[str, Any]) -> dict[str, Any]:
    """The whole verdict `partial` stands for (see the module docstring), validated."""
    try:
        whole = vm.to_dict(vm.from_dict(_fill(vm.Verdict, {**_TOP, **partial})))
    except (ValueError, TypeError) as exc:  # e.g. a status the evaluator does not have
        raise AssertionError(f"not a valid verdict: {exc}") from None
    return validate(json.loads(json.dumps(whole)))


def _fill(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """`data` with every required field of dataclass `cls` present, nested dataclasses filled the same way."""
    filled: dict[str, Any] = vm.complete_fields(cls, data, _empty, _known_fields_only)
    return filled


def _known_fields_only(cls: type, data: Any) -> None:
    unknown = set(data) - {f.name for f in dataclasses.fields(cls)} if isinstance(data, dict) else set()
    if unknown:  # the evaluator would drop them: a test relying on one would rely on nothing
        raise AssertionError(f"{cls.__name__} has no fields {sorted(unknown)}")


def _empty(cls: type, name: str, hint: Any) -> Any:
    where = f"{cls.__name__}.{name}"
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return None
    if origin is list:
        return []
    if origin is dict:
        return {}
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        raise AssertionError(f"{where} has no default: the test must say it")
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _fill(hint, {})
    return {str: "", int: 0, float: 0.0, bool: False}.get(hint) if hint in (str, int, float, bool) else None
