"""Refuse oversized request bodies before Django reads them (file uploads have no built-in cap)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse


class RequestSizeLimitMiddleware:
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
            return HttpResponse(f"Request too large: {message}", status=413, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


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
