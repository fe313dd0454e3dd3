"""Start a new results generation whenever something a leaderboard shows may have changed."""

from __future__ import annotations

from django.apps import apps
from django.db import transaction
from django.db.models.signals import post_delete, post_save


def _bump(*scopes: str) -> None:
    from portal.leaderboard.cache import leaderboard_changed

    # After commit: a reader must never cache the old rows under the new token.
    transaction.on_commit(lambda: leaderboard_changed(scopes))


def _evaluation_finished(evaluation_id, **kwargs) -> None:
    from portal.leaderboard.cache import KERNELS
    from portal.submissions.models import Evaluation, Submission

    kind = Evaluation.objects.filter(id=evaluation_id).values_list("submission__kind", flat=True).first()
    # A model turn's evaluation reaches the model board through RunTaskMetrics (saved below), not directly.
    if kind in (Submission.Kind.KERNEL, Submission.Kind.REFERENCE):
        _bump(KERNELS)


def _kernels_changed(**kwargs) -> None:
    from portal.leaderboard.cache import KERNELS, leaderboard_changed

    leaderboard_changed((KERNELS,))  # results_changed is sent after commit already


def _ban_changed(**kwargs) -> None:
    from portal.leaderboard.cache import SCOPES

    _bump(*SCOPES)


def _run_changed(**kwargs) -> None:
    from portal.leaderboard.cache import MODELS

    _bump(MODELS)


def connect() -> None:
    from portal.accounts.models import Profile
    from portal.submissions.services import evaluation_finished, results_changed

    evaluation_finished.connect(_evaluation_finished, dispatch_uid="leaderboard-evaluation-finished")
    results_changed.connect(_kernels_changed, dispatch_uid="leaderboard-results-changed")
    # A ban goes through Profile.save().
    post_save.connect(_ban_changed, sender=Profile, dispatch_uid="leaderboard-save-profile")
    if apps.is_installed("portal.agent"):
        agent = next(c for c in apps.get_app_configs() if c.name == "portal.agent")
        for name in ("ModelRun", "RunTaskMetrics"):
            model = agent.get_model(name)
            post_save.connect(_run_changed, sender=model, dispatch_uid=f"leaderboard-save-{name}")
            post_delete.connect(_run_changed, sender=model, dispatch_uid=f"leaderboard-delete-{name}")
