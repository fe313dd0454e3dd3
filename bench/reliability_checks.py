"""Database-side checks for the reliability benchmark, run in the bench process through the Django ORM after the
environment of the system under test is in os.environ: users and tokens, a progress sampler, the drain test and
the final audit (nothing lost, nothing duplicated, nothing stuck)."""

from __future__ import annotations

import hashlib
from collections import Counter

USER_PREFIX = "rb-client-"


def setup_django(repo: str) -> None:
    import os
    import sys

    import django

    sys.path.insert(0, repo)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    django.setup()


def users_create(count: int) -> list[str]:
    """`count` users with one API token each; returns the raw tokens in user order. No password hashing:
    the API authenticates by token only, and PBKDF2 for 50 users would cost half a minute on this box."""
    from django.contrib.auth.models import User

    from portal.accounts.services import token_create

    tokens = []
    for index in range(count):
        user = User.objects.create(username=f"{USER_PREFIX}{index:02d}")
        user.set_unusable_password()
        user.save(update_fields=["password"])
        tokens.append(token_create(user=user, name="reliability bench")[1])
    return tokens


def _evaluations():
    from portal.submissions.models import Evaluation

    return Evaluation.objects.filter(submission__user__username__startswith=USER_PREFIX)


def sample() -> dict:
    """Evaluation counts by state for the bench users (one query)."""
    from django.db.models import Count

    rows = _evaluations().values("state").annotate(n=Count("id"))
    return {row["state"]: row["n"] for row in rows}


def active_count() -> int:
    from portal.submissions.models import Evaluation

    return _evaluations().filter(state__in=Evaluation.ACTIVE_STATES).count()


def running_on(worker_name: str) -> list[dict]:
    from portal.submissions.models import Evaluation

    return list(
        _evaluations()
        .filter(state=Evaluation.State.RUNNING, worker_name=worker_name)
        .values("id", "stage", "submission_id", "attempts")
    )


def evaluation_row(evaluation_id: str) -> dict:
    from portal.submissions.models import Evaluation

    evaluation = Evaluation.objects.get(id=evaluation_id)
    return {
        "id": str(evaluation.id),
        "submission": evaluation.submission_id,
        "state": evaluation.state,
        "status": evaluation.status,
        "attempts": evaluation.attempts,
        "worker": evaluation.worker_name,
        "progress_errors": [e for e in evaluation.progress if e.get("state") == "error"],
    }


def audit(accepted: dict, duplicate_ids: set[int], expected_status: dict[str, str], artifacts_dir: str) -> dict:
    """Compare what clients were told with what the database holds.

    accepted: submission id -> object with .kind and .evaluation_id, for every 201 a client received.
    duplicate_ids: submission ids returned by 200 (duplicate) answers; they must exist too."""
    from pathlib import Path

    from django.db.models import Count

    from portal.submissions.models import Artifact, Evaluation, Submission

    submissions = Submission.objects.filter(user__username__startswith=USER_PREFIX)
    db_ids = set(submissions.values_list("id", flat=True))
    all_ids = set(Submission.objects.values_list("id", flat=True))
    client_ids = set(accepted)
    evaluations = list(
        Evaluation.objects.filter(submission_id__in=db_ids).values(
            "id", "submission_id", "state", "status", "attempts", "infra_error", "progress"
        )
    )
    per_submission = Counter(e["submission_id"] for e in evaluations)
    by_submission = {e["submission_id"]: e for e in evaluations}
    mismatched = []
    for submission_id, item in accepted.items():
        evaluation = by_submission.get(submission_id)
        if evaluation is None or evaluation["state"] != Evaluation.State.DONE:
            continue
        if evaluation["status"] != expected_status[item.kind]:
            mismatched.append((submission_id, item.kind, evaluation["status"]))
    wrong_evaluation_id = [
        sid
        for sid, item in accepted.items()
        if item.evaluation_id and sid in by_submission and str(by_submission[sid]["id"]) != item.evaluation_id
    ]

    artifact_rows = list(
        Artifact.objects.filter(evaluation__submission_id__in=db_ids).values("evaluation_id", "name", "sha256", "path")
    )
    duplicate_artifacts = (
        Artifact.objects.filter(evaluation__submission_id__in=db_ids)
        .values("evaluation_id", "name")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count()
    )
    missing_files = bad_sha = 0
    root = Path(artifacts_dir)
    for row in artifact_rows:
        path = root / row["path"]
        if not path.is_file():
            missing_files += 1
        elif hashlib.sha256(path.read_bytes()).hexdigest() != row["sha256"]:
            bad_sha += 1
    with_verdict_file = {r["evaluation_id"] for r in artifact_rows if r["name"] == "verdict.json"}
    done_without_verdict_file = sum(
        1 for e in evaluations if e["state"] == Evaluation.State.DONE and e["id"] not in with_verdict_file
    )
    requeue_reasons = Counter()
    for e in evaluations:
        for event in e["progress"] or []:
            if event.get("state") == "error":
                requeue_reasons[_reason_kind(str(event.get("message", "")))] += 1

    return {
        "client_accepted": len(client_ids),
        "db_submissions": len(db_ids),
        "lost": sorted(client_ids - db_ids),  # a 201 the database does not hold
        "duplicate_answers_pointing_nowhere": sorted(duplicate_ids - all_ids),
        # Stored although the client never got a 201 (its request failed after the commit, or the retry was
        # answered as a duplicate): they must still reach a final state, and they do count below.
        "stored_without_201": len(db_ids - client_ids),
        "evaluations": len(evaluations),
        "submissions_without_evaluation": len(db_ids - set(per_submission)),
        "submissions_with_several_evaluations": sum(1 for n in per_submission.values() if n > 1),
        "states": dict(Counter(e["state"] for e in evaluations)),
        "not_final": sum(1 for e in evaluations if e["state"] in Evaluation.ACTIVE_STATES),
        "statuses": dict(Counter(e["status"] or "-" for e in evaluations if e["state"] == Evaluation.State.DONE)),
        "verdict_not_as_expected": mismatched[:20],
        "verdict_not_as_expected_count": len(mismatched),
        "evaluation_id_changed": len(wrong_evaluation_id),
        "attempts": dict(sorted(Counter(e["attempts"] for e in evaluations).items())),
        "requeued_or_retried": sum(1 for e in evaluations if e["attempts"] > 1),
        "requeue_reasons": dict(requeue_reasons),
        "failed_reasons": dict(
            Counter(_reason_kind(e["infra_error"]) for e in evaluations if e["state"] == Evaluation.State.FAILED)
        ),
        "artifacts": len(artifact_rows),
        "duplicate_artifact_rows": duplicate_artifacts,
        "artifact_files_missing": missing_files,
        "artifact_sha256_mismatch": bad_sha,
        "done_without_verdict_artifact": done_without_verdict_file,
    }


def _reason_kind(message: str) -> str:
    if "stopped (no heartbeat" in message:
        return "worker stopped (no heartbeat)"
    return message[:100]


def redis_leftovers(redis_url: str, queue: str = "gpu-sm90") -> dict:
    """What RQ still holds once everything is final: leftover queue entries (second copies of a job id,
    harmless) and the registries. Raw key sizes: RQ's registry counters would run its cleanup."""
    import redis

    client = redis.Redis.from_url(redis_url)
    return {
        "queue_length": client.llen(f"rq:queue:{queue}"),
        "started_registry": client.zcard(f"rq:wip:{queue}"),
        "failed_registry": client.zcard(f"rq:failed:{queue}"),
        "finished_registry": client.zcard(f"rq:finished:{queue}"),
    }
