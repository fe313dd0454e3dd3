"""The verdict's JSON schema, derived from the dataclasses in evaluator.both_sides.verdict.

`python -m evaluator.schema > evaluator/verdict.schema.json` regenerates the committed file; a test checks
that the committed file is current and validates real verdicts against it.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from enum import StrEnum
from pathlib import Path
from typing import Any

from evaluator.both_sides.verdict import SCHEMA_VERSION, Verdict

SCHEMA_PATH = Path(__file__).with_name("verdict.schema.json")


def build_schema() -> dict[str, Any]:
    defs: dict[str, Any] = {}
    root = _dataclass_schema(Verdict, defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://ptxbench.example/schemas/verdict.schema.json",
        "title": "PTXBench evaluator verdict",
        "description": f"One evaluation of one kernel (schema_version {SCHEMA_VERSION}); see docs/verdict.md.",
        **root,
        "$defs": dict(sorted(defs.items())),
    }


def _dataclass_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    props = {f.name: _type_schema(hints[f.name], defs) for f in dataclasses.fields(cls)}
    # A renamed field's old name stays a valid, deprecated property: documents written before the rename validate.
    for f in dataclasses.fields(cls):
        if f.metadata.get("renamed_from"):
            props[f.metadata["renamed_from"]] = {**props[f.name], "deprecated": True}
    return {
        "type": "object",
        "properties": props,
        # A field added after schema_version 1 (or renamed since) says so in its metadata: verdicts written before
        # it stay valid.
        "required": [
            f.name for f in dataclasses.fields(cls) if not (f.metadata.get("added") or f.metadata.get("renamed_from"))
        ],
        "additionalProperties": False,
    }


def _type_schema(hint: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        parts = [_type_schema(a, defs) for a in args if a is not type(None)]
        if type(None) in args:
            parts.append({"type": "null"})
        return parts[0] if len(parts) == 1 else {"anyOf": parts}
    if origin is list:
        (item,) = typing.get_args(hint)
        return {"type": "array", "items": _type_schema(item, defs)}
    if origin is dict:
        _, item = typing.get_args(hint)
        return {"type": "object", "additionalProperties": _type_schema(item, defs)}
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        defs.setdefault(hint.__name__, {"type": "string", "enum": [m.value for m in hint]})
        return {"$ref": f"#/$defs/{hint.__name__}"}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if hint.__name__ not in defs:
            defs[hint.__name__] = {}  # placeholder against recursion
            defs[hint.__name__] = _dataclass_schema(hint, defs)
        return {"$ref": f"#/$defs/{hint.__name__}"}
    simple = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if hint in simple:
        return {"type": simple[hint]}
    raise TypeError(f"no JSON schema for {hint!r}")


def schema_text() -> str:
    return json.dumps(build_schema(), indent=2) + "\n"


if __name__ == "__main__":
    print(schema_text(), end="")
