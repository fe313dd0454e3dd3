"""The portal's HTTP API through urllib: the token in the Authorization header (API routes only), the API's own
error words, and network failures retried with exponential backoff."""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from typing import Any

from ptxbench_cli import __version__
from ptxbench_cli.text import one_line

# Failures worth another try: the server away, restarting or overloaded. A 4xx is the API's answer, never retried.
RETRY_STATUSES = {502, 503, 504}
DEFAULT_ATTEMPTS = 4  # 0.5 + 1 + 2 s of backoff between them
TIMEOUT_S = 60.0
# The version of the API this client speaks (docs/api.md, "Versions"): 2, the verdict's names. The path names it.
API_VERSION = 2
API = f"/api/v{API_VERSION}"  # every endpoint's path starts here


class CliError(Exception):
    """Something to tell the user in one line, with the exit status to leave with."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class ApiError(CliError):
    """The portal answered with an error: its own words, its HTTP status."""

    def __init__(self, message: str, status: int, body: dict | None = None):
        super().__init__(message)
        self.status = status
        self.body = body or {}


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body.decode("utf-8"))
        except ValueError:
            raise CliError("the portal answered with something that is not JSON") from None


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only on the same scheme, host and port: the Authorization header must never travel to
    another server."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        old, new = urllib.parse.urlsplit(req.full_url), urllib.parse.urlsplit(newurl)
        if (old.scheme, old.netloc) != (new.scheme, new.netloc):
            raise CliError(f"the portal redirected to another server ({new.scheme}://{new.netloc}); not following")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class _AnswerAfterRefusal:
    """A server may answer (413: too large) and stop reading before the whole body is sent; the next write then
    fails with a broken pipe or a reset while its answer waits to be read. Writes after such a failure are
    dropped, so urllib goes on to read that answer; when there is none, reading it fails as before."""

    _stopped_reading = False

    def send(self, data):  # noqa: ANN001, ANN201 - http.client's signature
        if self._stopped_reading:
            return
        try:
            super().send(data)  # type: ignore[misc]
        except (BrokenPipeError, ConnectionResetError):
            self._stopped_reading = True


class _HTTPConnection(_AnswerAfterRefusal, http.client.HTTPConnection):
    pass


class _HTTPSConnection(_AnswerAfterRefusal, http.client.HTTPSConnection):
    pass


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):  # noqa: ANN001, ANN201
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):  # noqa: ANN001, ANN201
        return self.do_open(_HTTPSConnection, req, context=self._context)


def _attempts() -> int:
    try:
        return max(1, int(os.environ.get("PTXBENCH_RETRIES", DEFAULT_ATTEMPTS)))
    except ValueError:
        return DEFAULT_ATTEMPTS


def _error_message(status: int, body: bytes) -> tuple[str, dict]:
    try:
        data = json.loads(body.decode("utf-8"))
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        return one_line(data["error"]), data
    text = body.decode("utf-8", "replace").strip().splitlines()
    if not text or text[0].lstrip().startswith("<"):  # an HTML error page says nothing a line could
        return f"HTTP {status}", {}
    return f"HTTP {status}: {one_line(text[0])}", {}


class Client:
    def __init__(self, url: str, token: str = ""):
        self.url = url.rstrip("/")
        self.token = token
        self._opener = urllib.request.build_opener(_SameOriginRedirects, _HTTPHandler, _HTTPSHandler)

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: bytes | None = None,
        content_type: str = "",
        auth: bool = True,
    ) -> Response:
        """One call, retried with backoff on network failures and 502/503/504. A POST (not idempotent: a second
        run could be started) is retried only when the connection was refused, i.e. nothing was sent. Any other
        non-2xx raises ApiError with the API's message. The token goes only to /api/ routes (the evidence routes
        do not read it)."""
        params = dict(params or {})
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v not in (None, "")})
        url = f"{self.url}{path}" + (f"?{query}" if query else "")
        headers = {"User-Agent": f"ptxbench-cli/{__version__}", "Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        if auth and self.token and path.startswith("/api/"):
            headers["Authorization"] = f"Bearer {self.token}"
        attempts = _attempts()
        delay = 0.5
        for attempt in range(1, attempts + 1):
            request = urllib.request.Request(url, data=body, method=method, headers=headers)  # noqa: S310 - http(s) only: config.normalise_url
            try:
                with self._opener.open(request, timeout=TIMEOUT_S) as answer:
                    return Response(answer.status, {k.lower(): v for k, v in answer.headers.items()}, answer.read())
            except urllib.error.HTTPError as exc:
                data = exc.read()
                if exc.code in RETRY_STATUSES and method == "GET" and attempt < attempts:
                    time.sleep(delay)
                    delay *= 2
                    continue
                message, parsed = _error_message(exc.code, data)
                if exc.code == 429 and parsed.get("retry_after"):
                    message += f" (try again in {parsed['retry_after']} s)"
                raise ApiError(message, exc.code, parsed) from None
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                if attempt < attempts and (method == "GET" or isinstance(reason, ConnectionRefusedError)):
                    time.sleep(delay)
                    delay *= 2
                    continue
                raise CliError(
                    f"cannot reach {self.url} ({one_line(str(reason))}) after {attempt} attempt"
                    f"{'s' if attempt != 1 else ''}"
                ) from None
        raise AssertionError("unreachable")

    def get_json(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params).json()

    def post_json(self, path: str, document: dict) -> Response:
        return self.request("POST", path, body=json.dumps(document).encode(), content_type="application/json")

    def post_multipart(
        self, path: str, fields: dict[str, str], file_field: str, filename: str, data: bytes
    ) -> Response:
        boundary = f"ptxbench-{uuid.uuid4().hex}"
        parts = []
        for name, value in fields.items():
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
        safe_name = "".join(c for c in filename if c.isprintable() and c not in '"\\\r\n') or "kernel"
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; filename="{safe_name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n".encode()
            + data
            + b"\r\n"
        )
        parts.append(f"--{boundary}--\r\n".encode())
        return self.request(
            "POST", path, body=b"".join(parts), content_type=f"multipart/form-data; boundary={boundary}"
        )
