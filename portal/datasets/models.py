"""A public result snapshot: one immutable version of every public result as dataset files (docs/api.md,
"Public result datasets"). The files live under RESULTS_DATASETS_DIR/v<version>/, written once, never changed."""

from __future__ import annotations

from django.db import models


class ResultsSnapshot(models.Model):
    version = models.PositiveIntegerField(unique=True)  # 1, 2, ... in the order they were built
    created_at = models.DateTimeField(auto_now_add=True)
    counts = models.JSONField(default=dict)  # config -> rows
    files = models.JSONField(default=dict)  # relative path -> {"sha256", "bytes"}, the manifest's list
    evaluator_versions = models.JSONField(default=list)
    # sha256 over the data files' digests: a build whose rows are all the same as the newest version's is skipped
    fingerprint = models.CharField(max_length=64)
    manifest_sha256 = models.CharField(max_length=64)

    class Meta:
        ordering = ["-version"]

    def __str__(self) -> str:
        return f"results v{self.version}"

    @property
    def label(self) -> str:
        return f"v{self.version}"
