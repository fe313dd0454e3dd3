"""The visibility rule (docs/visibility.md) for model runs and everything under them: a run hidden by an admin, or
a banned user's, is not visible, nor are its trajectories, exports and bundles, nor its turns' submissions and their
evaluations and evidence (the hiding rule `register_hiding_rules` adds to the submissions' own rule in
`portal/submissions/visibility.py`). Staff see everything; the owner, while not banned, still sees their own
hidden runs. Lists use `public_runs`."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import Http404

from portal.agent.models import ModelRun, Trajectory, Turn
from portal.core.visibility import HidingRule, is_banned, is_owner, is_staff, register_hiding_rule
from portal.submissions.models import Submission


def can_see_run(viewer, run) -> bool:
    if is_staff(viewer) or is_owner(viewer, run.user_id):
        return True
    return not (run.is_hidden or is_banned(run.user))


def visible_run(viewer, run_id: int, queryset: QuerySet | None = None):
    """The model run, or 404 when this viewer may not see it."""
    queryset = queryset if queryset is not None else ModelRun.objects.all()
    run = queryset.select_related("user", "user__profile").filter(id=run_id).first()
    if run is None or not can_see_run(viewer, run):
        raise Http404("no such run")
    return run


def visible_trajectory(viewer, run_id: int, trajectory_id: int, queryset: QuerySet | None = None):
    """The trajectory of that run, or 404 when this viewer may not see the run."""
    queryset = queryset if queryset is not None else Trajectory.objects.all()
    trajectory = (
        queryset.select_related("run", "run__user", "run__user__profile", "task")
        .filter(id=trajectory_id, run_id=run_id)
        .first()
    )
    if trajectory is None or not can_see_run(viewer, trajectory.run):
        raise Http404("no such trajectory")
    return trajectory


def public_runs(queryset: QuerySet) -> QuerySet:
    """Runs the public may see: not hidden, not by a banned user."""
    return queryset.filter(is_hidden=False).exclude(user__profile__is_banned=True)


# --------------------------------------------------------------------------- a turn's submission


def _under_hidden_run(submission: Submission) -> bool:
    """A model turn's submission is hidden with its run (the run's name is in the submission's)."""
    if submission.kind != Submission.Kind.AGENT:
        return False
    return Turn.objects.filter(evaluation__submission_id=submission.id, trajectory__run__is_hidden=True).exists()


def _submissions_under_hidden_runs() -> Q:
    under_hidden_run = Exists(
        Turn.objects.filter(evaluation__submission=OuterRef("pk"), trajectory__run__is_hidden=True)
    )
    return Q(kind=Submission.Kind.AGENT) & Q(under_hidden_run)


def register_hiding_rules() -> None:
    """Hide a turn's submission with its run (AgentConfig.ready())."""
    register_hiding_rule(
        Submission, HidingRule("under a hidden model run", _under_hidden_run, _submissions_under_hidden_runs)
    )
