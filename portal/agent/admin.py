from django.contrib import admin

from portal.agent.models import ModelRun, RunTaskMetrics, Trajectory, Turn


@admin.register(ModelRun)
class ModelRunAdmin(admin.ModelAdmin):
    list_display = ("id", "display_name", "model", "arch", "state", "user", "is_hidden", "created_at")
    list_filter = ("arch", "state", "is_hidden", "pack_variant")
    search_fields = ("display_name", "model", "user__username")
    # The key stays write-only everywhere, the admin included.
    exclude = ("api_key_encrypted",)
    readonly_fields = (
        "user",
        "model",
        "base_url",
        "api_key_last4",
        "arch",
        "state",
        "error",
        "created_at",
        "started_at",
        "finished_at",
        "gpu_name",
    )
    actions = ["hide"]

    @admin.action(description="Hide from public tables (evidence kept)")
    def hide(self, request, queryset):
        for run in queryset:  # save(), not update(): the leaderboards listen for ModelRun saves
            run.is_hidden = True
            run.hidden_reason = f"hidden by {request.user.username}"
            run.save(update_fields=["is_hidden", "hidden_reason"])


@admin.register(Trajectory)
class TrajectoryAdmin(admin.ModelAdmin):
    list_display = ("id", "run", "task", "index", "state", "stop_reason")
    list_filter = ("state", "stop_reason")
    readonly_fields = [f.name for f in Trajectory._meta.fields]


@admin.register(Turn)
class TurnAdmin(admin.ModelAdmin):
    list_display = ("id", "trajectory", "index", "state", "outcome", "verdict_status", "arch_status", "speedup_factor")
    list_filter = ("state", "outcome", "verdict_status", "arch_status")
    readonly_fields = [f.name for f in Turn._meta.fields]


@admin.register(RunTaskMetrics)
class RunTaskMetricsAdmin(admin.ModelAdmin):
    list_display = ("run", "task", "arch", "k", "trajectories", "correct", "correct_arch", "best_speedup", "complete")
    list_filter = ("arch", "k")
