"""The visibility rule (docs/visibility.md) for submissions and evaluations, asked by every page, API route,
download and bundle that opens one; lists use `public_submissions`.

- Hidden by an admin, or a banned user's: not visible.
- Hidden by a rule an app above registers (`portal.core.visibility.hiding_rules`): a model turn's submission is
  hidden with its run (`portal/agent/visibility.py`).
- A hidden ranked check (the second evaluation with a secret seed) is never opened as an evaluation; its
  submission shows only its pass/fail (`portal.submissions.selectors.ranked_check`).

Staff see everything. The owner, while not banned, still sees their own hidden work, but not their ranked checks."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet
from django.http import Http404

from portal.core.visibility import hiding_rules, is_banned, is_owner, is_staff
from portal.submissions.models import Evaluation, Submission


def submission_is_public(submission: Submission) -> bool:
    return not (
        submission.is_hidden
        or is_banned(submission.user)
        or any(rule.hides(submission) for rule in hiding_rules(Submission))
    )


def can_see_submission(viewer, submission: Submission) -> bool:
    if is_staff(viewer) or is_owner(viewer, submission.user_id):
        return True
    return submission_is_public(submission)


def can_see_evaluation(viewer, evaluation: Evaluation) -> bool:
    if is_staff(viewer):
        return True
    if evaluation.purpose == Evaluation.Purpose.HIDDEN:
        return False  # known only by its pass/fail, to its owner too
    return can_see_submission(viewer, evaluation.submission)


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


def public_submissions(queryset: QuerySet[Submission]) -> QuerySet[Submission]:
    """Submissions the public may see: not hidden, not by a banned user, none a registered rule hides (a turn of a
    hidden run)."""
    queryset = queryset.filter(is_hidden=False).exclude(user__profile__is_banned=True)
    for rule in hiding_rules(Submission):
        queryset = queryset.exclude(rule.hidden())
    return queryset
