"""The API endpoint decorator: the methods a view answers, and its API token. Tokens come only from the
Authorization header (session cookies are never accepted for writes, so no CSRF exposure); a read-only token
writes nothing. Errors are the API's `{"error": ...}` (portal/core/api.py)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.http import HttpRequest
from django.views.decorators.csrf import csrf_exempt

from portal.accounts.services import TokenRefused, token_check
from portal.core.api import json_error

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
READ_ONLY_REFUSAL = (
    "this API token is read-only: it may read, not {method} (submit, start runs, build datasets or any other "
    "write); make a read-and-write token at /accounts/tokens/"
)


def api_endpoint(*, methods: tuple[str, ...], auth: bool) -> Callable:
    """Decorator for API views. With auth=True, a valid `Authorization: Bearer ptx_...` token is required
    and the user lands on `request.api_user` (the token on `request.api_token`); cookies play no part (so no CSRF
    exposure). A read-only token is refused (403) on every method that is not a read, before the view runs,
    whether or not the endpoint needs a token."""

    def decorate(view: Callable) -> Callable:
        @csrf_exempt
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs):
            if request.method not in methods:
                response = json_error(f"method {request.method} not allowed", 405)
                response["Allow"] = ", ".join(methods)
                return response
            request.api_user = None
            request.api_token = None
            header = request.headers.get("Authorization", "")
            if header:
                scheme, _, raw = header.partition(" ")
                if scheme.lower() != "bearer" or not raw.strip():
                    return json_error("the Authorization header must be 'Bearer <token>'", 401)
                try:
                    token = token_check(raw.strip())
                except TokenRefused as exc:
                    return json_error(exc.message, 401)
                if token.read_only and request.method not in READ_METHODS:
                    return json_error(READ_ONLY_REFUSAL.format(method=request.method), 403)
                request.api_user, request.api_token = token.user, token
            elif auth:
                return json_error("an API token is required (Authorization: Bearer <token>)", 401)
            return view(request, *args, **kwargs)

        wrapper.api_methods = methods  # read by the tests that walk every write endpoint
        return wrapper

    return decorate
