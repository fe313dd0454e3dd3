"""Writes for the public result snapshots: build the next version (files on disk, then its row)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from portal.core.serializers import iso
from portal.datasets import selectors, snapshot
from portal.datasets.files import sha256_bytes
from portal.datasets.models import ResultsSnapshot
from portal.env import env_str

log = logging.getLogger(__name__)


def results_folder() -> Path:
    """RESULTS_DATASETS_DIR (default: the data folder's results-datasets/): one folder per version, v<N>/."""
    return Path(getattr(settings, "RESULTS_DATASETS_DIR", None) or Path(settings.DATA_DIR) / "results-datasets")


def snapshot_folder(snapshot_row: ResultsSnapshot) -> Path:
    return results_folder() / snapshot_row.label


def licence() -> str:
    """The card's licence: the operator's to choose for what users submitted (RESULTS_DATASET_LICENCE, a Hugging
    Face licence id); "other" until they do."""
    return env_str("RESULTS_DATASET_LICENCE", "") or "other"


class SnapshotConflict(Exception):
    """Another build took this version number first."""


def snapshot_build(*, force: bool = False) -> ResultsSnapshot | None:
    """The next version from the current public results; None when its rows equal the newest version's (unless
    `force`). The row commits only once the folder is complete and in place, so a listed version always has
    its files; a folder without a row (a build that crashed) is removed by the next build of that number."""
    rows = selectors.config_rows()
    with transaction.atomic():
        newest = ResultsSnapshot.objects.select_for_update().order_by("-version").first()
        version = newest.version + 1 if newest else 1
        created_at = iso(timezone.now())
        files = snapshot.snapshot_files(
            version=version, created_at=created_at, site_url=settings.SITE_URL, licence=licence(), rows=rows
        )
        fingerprint = snapshot.fingerprint(files)
        if newest is not None and newest.fingerprint == fingerprint and not force:
            log.info("results dataset: unchanged since v%s, nothing built", newest.version)
            return None
        try:
            with transaction.atomic():
                row = ResultsSnapshot.objects.create(
                    version=version,
                    counts={name: len(docs) for name, docs in rows.items()},
                    files={p: {"sha256": sha256_bytes(d), "bytes": len(d)} for p, d in sorted(files.items())},
                    evaluator_versions=json.loads(files["manifest.json"])["evaluator_versions"],
                    fingerprint=fingerprint,
                    manifest_sha256=sha256_bytes(files["manifest.json"]),
                )
        except IntegrityError:
            raise SnapshotConflict(f"another build made v{version} first") from None
        _write_folder(results_folder(), row.label, files)
    log.info("results dataset v%s: %s", version, row.counts)
    return row


def _write_folder(root: Path, label: str, files: dict[str, bytes]) -> None:
    """Written beside the final name, then renamed into place in one step."""
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".{label}.{uuid.uuid4().hex}.tmp"
    try:
        for path, data in files.items():
            target = tmp / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        final = root / label
        if final.exists():  # left by a build that crashed before its row committed: this number is ours now
            shutil.rmtree(final)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # a full disk leaves no half version behind
        raise
