"""Request-size limit, JSON errors under /api/, the deprecation headers of version 1, and the CSP header."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.shortcuts import render

from portal.core import api_versions

log = logging.getLogger(__name__)

API_PREFIX = "/api/"
MULTIPART_ERROR = (
    "the multipart/form-data body could not be read (a missing or invalid boundary, a bad Content-Length, or "
    "part headers over the limit); send JSON, or a well-formed multipart form"
)
# Headers an error response keeps when it is rewritten as JSON.
_KEPT_HEADERS = ("Allow", "Retry-After", "WWW-Authenticate")


class RequestSizeLimitMiddleware:
    """Refuse oversized request bodies before Django reads them (file uploads have no built-in cap)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        limit = settings.MAX_REQUEST_BYTES
        if length > limit:
            message = f"the request is {length} bytes; the limit is {limit} bytes (kernel sources: {settings.MAX_SOURCE_BYTES} bytes)"
            if request.path.startswith("/api/"):
                return JsonResponse({"error": message}, status=413)
            _drain(request, length)
            _attach_user(request)
            context = {"length": length, "limit": limit, "source_limit": settings.MAX_SOURCE_BYTES}
            return render(request, "413.html", context, status=413)
        return self.get_response(request)


def _attach_user(request: HttpRequest) -> None:
    """The session's user for the page's header: this middleware answers before the session and authentication
    middleware have run, and a logged-in user should not be offered "Log in". Reads the session cookie only."""
    from importlib import import_module

    from django.contrib.auth import get_user
    from django.utils.functional import SimpleLazyObject

    engine = import_module(settings.SESSION_ENGINE)
    request.session = engine.SessionStore(request.COOKIES.get(settings.SESSION_COOKIE_NAME))
    request.user = SimpleLazyObject(lambda: get_user(request))


# A browser that is still sending when the answer comes shows "connection reset", not the page: read (and drop)
# bodies up to this size before answering; larger ones are not worth a worker's time.
_DRAIN_LIMIT = 64 * 1024 * 1024


def _drain(request: HttpRequest, length: int) -> None:
    if length > _DRAIN_LIMIT:
        return
    try:
        while request.read(1024 * 1024):
            pass
    except OSError:  # the client went away: nothing to answer
        pass


class ContentSecurityPolicyMiddleware:
    """Every page gets a CSP that forbids inline scripts: scripts come only from our static files.
    Inline styles stay allowed because plotly.js sets element styles as it draws."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        response.setdefault("Cross-Origin-Opener-Policy", "same-origin")
        return response


class ApiErrorsMiddleware:
    """Under /api/ every error is {"error": "..."} JSON: an unhandled exception becomes a JSON 500 without a
    traceback (logged here, DEBUG or not), and Django's own HTML error pages (unknown path, 404 raised by a
    lookup) are answered as JSON with the same status."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not request.path.startswith(API_PREFIX) or response.status_code < 400:
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        rewritten = JsonResponse({"error": (response.reason_phrase or "error").lower()}, status=response.status_code)
        for header in _KEPT_HEADERS:
            if header in response:
                rewritten[header] = response[header]
        return rewritten

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not request.path.startswith(API_PREFIX):
            return None
        if isinstance(exception, Http404 | PermissionDenied | BadRequest | SuspiciousOperation):
            return None  # Django answers these with their status; __call__ makes that answer JSON
        if isinstance(exception, MultiPartParserError):
            # The client's body, not our fault (a body without a boundary is no server error). Django's
            # own reason may quote the client's boundary: a fixed message instead.
            return JsonResponse({"error": MULTIPART_ERROR}, status=400)
        log.error("unhandled exception in %s %s", request.method, request.path, exc_info=exception)
        return JsonResponse({"error": "internal server error (logged for the operators)"}, status=500)


class ApiDeprecationMiddleware:
    """Every answer in version 1 of the API (an `/api/v1/` path, or `?v=1` where that is read) says it is
    deprecated and where the change is explained (portal/core/api_versions.py), errors included."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if api_versions.answers_version_1(request):
            for name, value in api_versions.deprecation_headers(request).items():
                response[name] = value
        return response
