"""Where a dataset version's files live: FIXIT_DIR/<dataset id>/, written once by the build, never changed."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings


def dataset_folder(dataset_id: int) -> Path:
    return Path(settings.FIXIT_DIR) / str(dataset_id)
