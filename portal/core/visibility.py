"""The one visibility rule for submissions, evaluations and model runs, asked by every page, API route, download
and bundle (docs/visibility.md). Not visible means 404, never 403: the caller cannot tell it from a missing id.

- Hidden by an admin: a submission, or a model run and everything under it (its trajectories, its turns'
  submissions and their evaluations and evidence).
- A banned user's submissions, evaluations and runs.
- A hidden ranked check (the second evaluation with a secret seed) is never opened as an evaluation; its
  submission shows only its pass/fail (`portal.submissions.selectors.ranked_check`).

Staff see everything (audit). The owner, while not banned, still sees their own hidden work, but not their
ranked checks. Lists use the `public_*` querysets, which drop what the public may not see."""

from __future__ import annotations

import uuid

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import Http404

from portal.submissions.models import Evaluation, Submission


def _is_staff(viewer) -> bool:
    return bool(viewer is not None and getattr(viewer, "is_authenticated", False) and viewer.is_staff)


def _banned(user) -> bool:
    profile = getattr(user, "profile", None) if user is not None else None
    return bool(profile and profile.is_banned)


def _is_owner(viewer, owner_id: int | None) -> bool:
    return bool(
        owner_id is not None
        and viewer is not None
        and getattr(viewer, "is_authenticated", False)
        and viewer.id == owner_id
        and not _banned(viewer)
    )


def _under_hidden_run(submission: Submission) -> bool:
    """A model turn's submission is hidden with its run (the run's name is in the submission's)."""
    if submission.kind != Submission.Kind.AGENT:
        return False
    from portal.agent.models import Turn

    return Turn.objects.filter(evaluation__submission_id=submission.id, trajectory__run__is_hidden=True).exists()


def submission_is_public(submission: Submission) -> bool:
    return not (submission.is_hidden or _banned(submission.user) or _under_hidden_run(submission))


def can_see_submission(viewer, submission: Submission) -> bool:
    if _is_staff(viewer) or _is_owner(viewer, submission.user_id):
        return True
    return submission_is_public(submission)


def can_see_evaluation(viewer, evaluation: Evaluation) -> bool:
    if _is_staff(viewer):
        return True
    if evaluation.purpose == Evaluation.Purpose.HIDDEN:
        return False  # known only by its pass/fail, to its owner too
    return can_see_submission(viewer, evaluation.submission)


def can_see_run(viewer, run) -> bool:
    if _is_staff(viewer) or _is_owner(viewer, run.user_id):
        return True
    return not (run.is_hidden or _banned(run.user))


def visible_submission(viewer, submission_id: int, queryset: QuerySet[Submission] | None = None) -> Submission:
    """The submission, or 404 when this viewer may not see it."""
    queryset = queryset if queryset is not None else Submission.objects.all()
    submission = queryset.select_related("task", "user", "user__profile").filter(id=submission_id).first()
    if submission is None or not can_see_submission(viewer, submission):
        raise Http404("no such submission")
    return submission


def visible_evaluation(viewer, evaluation_id: uuid.UUID | str) -> Evaluation:
    """The evaluation, or 404 when this viewer may not see it (hidden ranked checks: staff only)."""
    evaluation = (
        Evaluation.objects.select_related("submission__task", "submission__user", "submission__user__profile")
        .filter(id=evaluation_id)
        .first()
    )
    if evaluation is None or not can_see_evaluation(viewer, evaluation):
        raise Http404("no such evaluation")
    return evaluation


def visible_run(viewer, run_id: int, queryset: QuerySet | None = None):
    """The model run, or 404 when this viewer may not see it."""
    from portal.agent.models import ModelRun

    queryset = queryset if queryset is not None else ModelRun.objects.all()
    run = queryset.select_related("user", "user__profile").filter(id=run_id).first()
    if run is None or not can_see_run(viewer, run):
        raise Http404("no such run")
    return run


def visible_trajectory(viewer, run_id: int, trajectory_id: int, queryset: QuerySet | None = None):
    """The trajectory of that run, or 404 when this viewer may not see the run."""
    from portal.agent.models import Trajectory

    queryset = queryset if queryset is not None else Trajectory.objects.all()
    trajectory = (
        queryset.select_related("run", "run__user", "run__user__profile", "task")
        .filter(id=trajectory_id, run_id=run_id)
        .first()
    )
    if trajectory is None or not can_see_run(viewer, trajectory.run):
        raise Http404("no such trajectory")
    return trajectory


# --------------------------------------------------------------------------- lists


def public_runs(queryset: QuerySet) -> QuerySet:
    """Runs the public may see: not hidden, not by a banned user."""
    return queryset.filter(is_hidden=False).exclude(user__profile__is_banned=True)


def public_submissions(queryset: QuerySet[Submission]) -> QuerySet[Submission]:
    """Submissions the public may see: not hidden, not by a banned user, not a turn of a hidden run."""
    from portal.agent.models import Turn

    under_hidden_run = Exists(
        Turn.objects.filter(evaluation__submission=OuterRef("pk"), trajectory__run__is_hidden=True)
    )
    return (
        queryset.filter(is_hidden=False)
        .exclude(user__profile__is_banned=True)
        .exclude(Q(kind=Submission.Kind.AGENT) & Q(under_hidden_run))
    )
