from django.contrib import admin

from portal.fixit.models import Dataset, DatasetFile


class DatasetFileInline(admin.TabularInline):
    model = DatasetFile
    extra = 0
    can_delete = False
    readonly_fields = ("path", "sha256", "size", "content_type")


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    """Read-only: a dataset version is immutable (its files' sha256 are published in its manifest)."""

    list_display = ("name", "version", "repair_rows", "generation_rows", "licence", "created_by", "created_at")
    search_fields = ("name",)
    inlines = [DatasetFileInline]

    def has_change_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False
