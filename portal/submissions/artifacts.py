"""Artifact files on disk under ARTIFACTS_DIR/<evaluation id>/, with their sha256 in the database."""

from __future__ import annotations

import hashlib
import mimetypes
from collections.abc import Sequence
from pathlib import Path

from django.conf import settings

from evaluator.suite.solutions import LANGUAGE_FILES
from portal.submissions import artifact_caps
from portal.submissions.evidence_files import EvidenceFile, NotKept
from portal.submissions.models import Artifact, Evaluation

SOURCE_NAMES = frozenset(LANGUAGE_FILES.values())

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


def store(evaluation: Evaluation, name: str, data: bytes, *, origin: str) -> Artifact:
    """Keep `data` as the evaluation's artifact `name`; `origin` (Artifact.Origin) says who wrote its bytes."""
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
            "origin": origin,
        },
    )
    return artifact


def store_all(evaluation: Evaluation, files: dict[str, bytes]) -> list[Artifact]:
    """Files the trusted side wrote (imported reference verdicts, whose files maintainers committed): kept as the
    evaluator's, the source as submitted. An evaluation's run goes through `store_evidence`."""
    return [store(evaluation, name, data, origin=_trusted_origin(name)) for name, data in files.items()]


def _trusted_origin(name: str) -> str:
    if name in SOURCE_NAMES:
        return Artifact.Origin.SOURCE
    return Artifact.Origin.TOOL if name == "compile.log" else Artifact.Origin.EVALUATOR


def store_evidence(evaluation: Evaluation, files: Sequence[EvidenceFile]) -> list[NotKept]:
    """Store an evaluation's evidence files within the byte caps (portal/submissions/artifact_caps.py), each with
    its origin; returns the files left out. A name the store refuses is left out too, never an error."""
    kept, left_out = artifact_caps.fit(evaluation, files)
    for item in kept:
        try:
            store(evaluation, item.name, item.data, origin=item.origin)
        except ValueError as exc:
            left_out.append(NotKept(item.name[:100], len(item.data), f"not kept: {exc}"))
    return left_out


def read(artifact: Artifact) -> bytes:
    return path_of(artifact).read_bytes()


def path_of(artifact: Artifact) -> Path:
    """Where the stored file lies (ARTIFACTS_DIR is the portal's own folder: no candidate writes there)."""
    return Path(settings.ARTIFACTS_DIR) / artifact.path
