"""Declared input schemas for the JSON API's POST bodies: each endpoint lists its fields once (name, type,
required, limits) and `validate` checks a body against it, refusing unknown fields, wrong types (a bool is
never a number) and values out of bounds, with a message for people. Views turn SchemaError into
`{"error": ...}` with status 400."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class SchemaError(ValueError):
    """The body does not match the endpoint's schema; the message says which field and why."""


@dataclass(frozen=True)
class Field:
    name: str
    types: tuple[type, ...]
    required: bool = False
    max_length: int | None = None  # strings and lists
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    items: type | None = None  # lists: the type of every item

    def describe(self) -> str:
        names = {str: "string", int: "integer", float: "number", bool: "boolean", list: "list"}
        return " or ".join(names.get(t, t.__name__) for t in self.types)


def validate(data: dict[str, Any], fields: tuple[Field, ...]) -> dict[str, Any]:
    """`data` checked against `fields`; returns it unchanged, or raises SchemaError."""
    known = {f.name: f for f in fields}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise SchemaError(f"unknown field(s): {', '.join(unknown)}; allowed: {', '.join(known)}")
    for spec in fields:
        if spec.name not in data or data[spec.name] is None:
            if spec.required:
                raise SchemaError(f"field '{spec.name}' is required")
            continue
        value = data[spec.name]
        if not isinstance(value, spec.types) or (isinstance(value, bool) and bool not in spec.types):
            raise SchemaError(f"field '{spec.name}' has the wrong type (expected {spec.describe()})")
        if spec.max_length is not None and isinstance(value, str | list) and len(value) > spec.max_length:
            raise SchemaError(f"field '{spec.name}' is longer than {spec.max_length}")
        if spec.choices is not None and value not in spec.choices:
            raise SchemaError(f"field '{spec.name}' must be one of: {', '.join(map(str, spec.choices))}")
        if isinstance(value, int | float) and not isinstance(value, bool):
            if spec.minimum is not None and value < spec.minimum:
                raise SchemaError(f"field '{spec.name}' must be at least {spec.minimum:g}")
            if spec.maximum is not None and value > spec.maximum:
                raise SchemaError(f"field '{spec.name}' must be at most {spec.maximum:g}")
        if spec.items is not None and isinstance(value, list) and not all(isinstance(v, spec.items) for v in value):
            raise SchemaError(f"field '{spec.name}' must be a list of {spec.items.__name__}")
    return data


def describe(fields: tuple[Field, ...]) -> list[dict[str, Any]]:
    """The schema as JSON (for documentation and error bodies)."""
    return [{"name": f.name, "type": f.describe(), "required": f.required} for f in fields]
