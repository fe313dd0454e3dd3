from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "portal.leaderboard"
    label = "leaderboard"
    verbose_name = "Leaderboards, charts and downloads"

    def ready(self) -> None:
        from portal.leaderboard import signals

        signals.connect()
