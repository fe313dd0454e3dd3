from django.contrib import admin

from portal.submissions.models import Artifact, Evaluation, GpuWorker, Submission
from portal.submissions.services import evaluation_review, submission_hide


class EvaluationInline(admin.TabularInline):
    model = Evaluation
    extra = 0
    fields = ("id", "state", "stage", "status", "arch_status", "speedup_factor", "review_state", "created_at")
    readonly_fields = fields
    show_change_link = True


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "task", "arch", "kind", "name", "user", "is_hidden", "created_at")
    list_filter = ("arch", "kind", "is_hidden")
    search_fields = ("name", "source_sha256", "user__username")
    readonly_fields = ("user", "task", "arch", "kind", "source", "source_sha256", "source_bytes", "created_at")
    inlines = [EvaluationInline]
    actions = ["hide"]

    @admin.action(description="Hide from public tables (evidence kept)")
    def hide(self, request, queryset):
        for submission in queryset:
            submission_hide(submission=submission, reason=f"hidden by {request.user.username}")


@admin.register(Evaluation)
class EvaluationAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "submission",
        "state",
        "stage",
        "status",
        "arch_status",
        "speedup_factor",
        "review_state",
        "created_at",
    )
    list_filter = ("state", "status", "arch_status", "review_state", "queue")
    readonly_fields = [f.name for f in Evaluation._meta.fields if f.name != "review_state"]
    actions = ["confirm_review", "reject_review"]

    @admin.action(description="Confirm held result (it may rank)")
    def confirm_review(self, request, queryset):
        for evaluation in queryset:
            evaluation_review(evaluation=evaluation, confirm=True)

    @admin.action(description="Reject held result")
    def reject_review(self, request, queryset):
        for evaluation in queryset:
            evaluation_review(evaluation=evaluation, confirm=False)


@admin.register(Artifact)
class ArtifactAdmin(admin.ModelAdmin):
    list_display = ("name", "evaluation", "size", "sha256", "created_at")
    readonly_fields = [f.name for f in Artifact._meta.fields]


@admin.register(GpuWorker)
class GpuWorkerAdmin(admin.ModelAdmin):
    list_display = ("name", "host", "arch", "gpu_name", "mode", "heartbeat_at", "stopped_at")
    readonly_fields = [f.name for f in GpuWorker._meta.fields]
