"""How many bytes of evidence files the portal stores: at most ARTIFACT_BYTES_PER_EVALUATION for one evaluation and
ARTIFACT_BYTES_PER_USER_PER_DAY for one user's evaluations in any 24 hours (uploads, model turns and ranked checks
together), so that a stream of uploads that fill their build folders cannot fill the portal's disk.

The source and the verdict are always kept (both are in the database anyway and bounded by MAX_SOURCE_BYTES and
the verdict's own caps); any other file that does not fit is not stored, and the evaluation records it with the
reason (`Evaluation.artifacts_not_kept`, shown on the evaluation page). The evaluator runner already reads no more
than the per-evaluation cap (portal/submissions/evidence_files.py); this is the check at the moment of storing,
where the user's recent total is known."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Sum
from django.utils import timezone

from evaluator.isolation.limits import describe_bytes
from portal.submissions.evidence_files import EvidenceFile, NotKept, evaluation_cap_reason
from portal.submissions.models import Artifact, Evaluation

DAY = timedelta(hours=24)


def user_bytes_last_day(user_id: int, *, now: datetime | None = None) -> int:
    """Bytes of evidence files stored for `user_id`'s evaluations in the last 24 hours."""
    since = (now or timezone.now()) - DAY
    stored = Artifact.objects.filter(evaluation__submission__user_id=user_id, created_at__gte=since)
    return int(stored.aggregate(total=Sum("size"))["total"] or 0)


def fit(evaluation: Evaluation, files: Sequence[EvidenceFile]) -> tuple[list[EvidenceFile], list[NotKept]]:
    """The files to store for `evaluation` within both caps, in the order given, and the ones left out."""
    per_evaluation = settings.ARTIFACT_BYTES_PER_EVALUATION
    per_user = settings.ARTIFACT_BYTES_PER_USER_PER_DAY
    user_id = evaluation.submission.user_id
    if user_id is not None:
        # Two workers storing for one user at once take turns here (the caller's transaction holds the lock), so
        # the day's total each one reads includes the other's files.
        get_user_model().objects.select_for_update().filter(pk=user_id).exists()
    user_left = per_user - user_bytes_last_day(user_id) if user_id is not None else None
    evaluation_left = per_evaluation
    kept: list[EvidenceFile] = []
    left_out: list[NotKept] = []
    for item in files:
        size = len(item.data)
        if not item.required:
            if size > evaluation_left:
                left_out.append(NotKept(item.name, size, evaluation_cap_reason(size, per_evaluation)))
                continue
            if user_left is not None and size > user_left:
                left_out.append(NotKept(item.name, size, _user_reason(size, per_user)))
                continue
        kept.append(item)
        evaluation_left -= size
        if user_left is not None:
            user_left -= size
    return kept, left_out


def _user_reason(size: int, cap: int) -> str:
    return (
        f"not kept: {describe_bytes(size)} would pass the submitter's cap of {describe_bytes(cap)} of stored files "
        "in 24 hours (ARTIFACT_BYTES_PER_USER_PER_DAY); files are kept again as older ones leave that window"
    )
