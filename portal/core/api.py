"""JSON API plumbing shared by every app: errors are always {"error": "..."} with the right status,
tokens come only from the Authorization header (session cookies are never accepted for writes)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt


def json_error(message: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def read_json(request: HttpRequest) -> dict[str, Any]:
    """The request body as a JSON object; raises ValueError with a message for people."""
    try:
        data = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise ValueError("the request body is not valid JSON") from None
    if not isinstance(data, dict):
        raise ValueError("the request body must be a JSON object")
    return data


def api_endpoint(*, methods: tuple[str, ...], auth: bool) -> Callable:
    """Decorator for API views. With auth=True, a valid `Authorization: Bearer ptx_...` token is required
    and the user lands on `request.api_user`; cookies play no part (so no CSRF exposure)."""

    def decorate(view: Callable) -> Callable:
        @csrf_exempt
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs):
            from portal.accounts.services import token_authenticate

            if request.method not in methods:
                response = json_error(f"method {request.method} not allowed", 405)
                response["Allow"] = ", ".join(methods)
                return response
            request.api_user = None
            header = request.headers.get("Authorization", "")
            if header:
                scheme, _, raw = header.partition(" ")
                if scheme.lower() != "bearer" or not raw.strip():
                    return json_error("the Authorization header must be 'Bearer <token>'", 401)
                user = token_authenticate(raw.strip())
                if user is None:
                    return json_error("invalid, revoked or banned API token", 401)
                request.api_user = user
            elif auth:
                return json_error("an API token is required (Authorization: Bearer <token>)", 401)
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


def json_refusal(body: dict, status: int, retry_after: int | None = None) -> JsonResponse:
    """An {"error": ...} answer that may say when to try again (429: the Retry-After header and the body's
    `retry_after`, see portal/submissions/quotas.py)."""
    response = JsonResponse(body, status=status)
    if retry_after is not None:
        response["Retry-After"] = str(int(retry_after))
    return response
