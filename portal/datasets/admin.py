from django.contrib import admin

from portal.datasets.models import ResultsSnapshot


@admin.register(ResultsSnapshot)
class ResultsSnapshotAdmin(admin.ModelAdmin):
    """Read-only: a version is immutable (its files' sha256 are published in its manifest and the API)."""

    list_display = ("version", "created_at", "counts", "evaluator_versions")
    readonly_fields = (
        "version",
        "created_at",
        "counts",
        "files",
        "evaluator_versions",
        "fingerprint",
        "manifest_sha256",
    )

    def has_change_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False
