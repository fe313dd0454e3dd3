"""JSON API plumbing shared by every app: errors are always {"error": "..."} with the right status; request bodies
are UTF-8 JSON objects of storable text. Endpoints are declared with `portal.accounts.api_auth.api_endpoint`: tokens
come only from the Authorization header (session cookies are never accepted for writes)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, JsonResponse


def json_error(message: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


# Deeper bodies are refused: no request of this API needs more than a few levels, and the reads that follow
# (json.dumps into a trajectory, the admin) must never meet a structure deep enough to exhaust the stack.
MAX_JSON_DEPTH = 32


def read_json(request: HttpRequest) -> dict[str, Any]:
    """The request body as a JSON object of valid text; raises ValueError with a message for people.
    Refused: bodies that are not UTF-8, not JSON, not an object, nested more than MAX_JSON_DEPTH levels, or
    holding a NUL byte or a lone surrogate in any string (see `check_text`)."""
    try:
        text = (request.body or b"{}").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"the request body is not UTF-8 (invalid byte at offset {exc.start})") from None
    try:
        data = json.loads(text)
    except RecursionError:
        raise ValueError(f"the request body is nested too deeply (at most {MAX_JSON_DEPTH} levels)") from None
    except ValueError:
        raise ValueError("the request body is not valid JSON") from None
    if not isinstance(data, dict):
        raise ValueError("the request body must be a JSON object")
    check_text(data)
    return data


def check_text(fields: Mapping[str, Any]) -> None:
    """Every string in these fields (and their keys, however nested) is storable text: no NUL byte (PostgreSQL
    refuses them, and they truncate text in C tools), no lone surrogate (it cannot be encoded as UTF-8).
    Iterative, so depth is bounded by MAX_JSON_DEPTH, not by the stack. Raises ValueError naming the field."""
    stack: list[tuple[Any, str, int]] = [(value, str(key), 1) for key, value in fields.items()]
    stack.extend((str(key), str(key), 1) for key in fields)
    while stack:
        value, field, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise ValueError(f"the request body is nested too deeply (at most {MAX_JSON_DEPTH} levels)")
        if isinstance(value, str):
            _check_string(value, field)
        elif isinstance(value, dict):
            for key, item in value.items():
                stack.append((str(key), field, depth + 1))
                stack.append((item, field, depth + 1))
        elif isinstance(value, list | tuple):
            stack.extend((item, field, depth + 1) for item in value)


def _check_string(value: str, field: str) -> None:
    name = ascii(field)[1:-1][:60]  # the field name as the caller sent it, but printable
    if "\x00" in value:
        raise ValueError(f"field '{name}' contains a NUL byte (\\x00); text fields must not contain NUL bytes")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            f"field '{name}' contains a lone surrogate (such as \\ud800); text must be valid Unicode"
        ) from None


def json_refusal(body: dict, status: int, retry_after: int | None = None) -> JsonResponse:
    """An {"error": ...} answer that may say when to try again (429: the Retry-After header and the body's
    `retry_after`, see portal/submissions/quotas.py)."""
    response = JsonResponse(body, status=status)
    if retry_after is not None:
        response["Retry-After"] = str(int(retry_after))
    return response
