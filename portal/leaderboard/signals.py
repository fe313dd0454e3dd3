"""Start a new results generation whenever something a leaderboard shows may have changed."""

from __future__ import annotations

from django.apps import apps
from django.db import transaction
from django.db.models.signals import post_delete, post_save


def _changed(**kwargs) -> None:
    from portal.leaderboard.cache import leaderboard_changed

    # After commit: a reader must never cache the old rows under the new token.
    transaction.on_commit(leaderboard_changed)


def connect() -> None:
    from portal.accounts.models import Profile
    from portal.submissions.services import evaluation_finished

    evaluation_finished.connect(_changed, dispatch_uid="leaderboard-evaluation-finished")
    # A ban goes through Profile.save(); hiding a submission is a queryset update, caught by the time limit.
    post_save.connect(_changed, sender=Profile, dispatch_uid="leaderboard-save-profile")
    if apps.is_installed("portal.agent"):
        agent = next(c for c in apps.get_app_configs() if c.name == "portal.agent")
        for name in ("ModelRun", "RunTaskMetrics"):
            model = agent.get_model(name)
            post_save.connect(_changed, sender=model, dispatch_uid=f"leaderboard-save-{name}")
            post_delete.connect(_changed, sender=model, dispatch_uid=f"leaderboard-delete-{name}")
