"""Bytes as a download, the one response every file the leaderboard serves goes out through: board tables (CSV,
JSON), evidence files, bundles and traces."""

from __future__ import annotations

import hashlib

from django.http import HttpResponse


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def attachment(data: bytes, *, filename: str, content_type: str) -> HttpResponse:
    """Bytes as a download: attachment disposition, the sha256 in a header so clients can check it."""
    response = HttpResponse(data, content_type=content_type)
    safe = "".join(c for c in filename if c.isalnum() or c in "._-") or "download"
    response["Content-Disposition"] = f'attachment; filename="{safe}"'
    response["X-Content-SHA256"] = sha256_hex(data)
    response["Content-Length"] = str(len(data))
    return response
