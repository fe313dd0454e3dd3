from django.contrib import admin

from portal.catalog.models import ArchitectureTarget, KnowledgePack, Task, Workload


class TargetInline(admin.TabularInline):
    model = ArchitectureTarget
    extra = 0


class WorkloadInline(admin.TabularInline):
    model = Workload
    extra = 0
    fields = ("uuid", "axes", "is_headline", "is_active")


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ("slug", "group", "op_type", "source", "is_active", "synced_at")
    list_filter = ("group", "source", "is_active")
    search_fields = ("slug", "description")
    inlines = [TargetInline, WorkloadInline]
    # Tasks are data in tasks/; edits here would be overwritten by the next sync_tasks.
    readonly_fields = [f.name for f in Task._meta.fields]


@admin.register(KnowledgePack)
class KnowledgePackAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "arch", "token_count", "synced_at")
    readonly_fields = [f.name for f in KnowledgePack._meta.fields]
