from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "portal.leaderboard"
    label = "leaderboard"
    verbose_name = "Leaderboards, charts and downloads"

    def ready(self) -> None:
        from portal.catalog.task_panels import register_task_panel
        from portal.leaderboard import signals
        from portal.leaderboard.boards import task_highlights

        signals.connect()
        register_task_panel(self.label, task_highlights.task_panel)
