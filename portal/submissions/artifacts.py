"""Artifact files on disk under ARTIFACTS_DIR/<evaluation id>/, with their sha256 in the database."""

from __future__ import annotations

import hashlib
import mimetypes
from pathlib import Path

from django.conf import settings

from portal.submissions.models import Artifact, Evaluation

CONTENT_TYPES = {
    ".cu": "text/x-cuda; charset=utf-8",
    ".json": "application/json",
    ".csv": "text/csv; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".log": "text/plain; charset=utf-8",
    ".sass": "text/plain; charset=utf-8",
    ".jsonl": "application/x-ndjson",
}


def content_type_for(name: str) -> str:
    suffix = Path(name).suffix.lower()
    return CONTENT_TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"


def _safe_name(name: str) -> str:
    clean = "".join(c for c in name if c.isalnum() or c in "._-")[:100]
    if not clean or clean.startswith("."):
        raise ValueError(f"bad artifact name {name!r}")
    return clean


def store(evaluation: Evaluation, name: str, data: bytes) -> Artifact:
    name = _safe_name(name)
    relative = Path(str(evaluation.id)) / name
    path = Path(settings.ARTIFACTS_DIR) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)  # atomic: a reader never sees half a file
    artifact, _ = Artifact.objects.update_or_create(
        evaluation=evaluation,
        name=name,
        defaults={
            "content_type": content_type_for(name),
            "sha256": hashlib.sha256(data).hexdigest(),
            "size": len(data),
            "path": str(relative),
        },
    )
    return artifact


def store_all(evaluation: Evaluation, files: dict[str, bytes]) -> list[Artifact]:
    return [store(evaluation, name, data) for name, data in files.items()]


def read(artifact: Artifact) -> bytes:
    return (Path(settings.ARTIFACTS_DIR) / artifact.path).read_bytes()
