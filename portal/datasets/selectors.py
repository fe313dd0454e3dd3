"""Reads for the public result snapshots: the rows of each config, and the versions.

What may go in is decided by the rules every page asks, never restated here:
- `ranked`: the kernel boards themselves (`portal.leaderboard.boards.selectors.kernel_board`, every section: the
  ranking rules of `ranking.py`: finished, PASSED, public, not hidden, not a banned user's, not held or rejected,
  the ranked check passed), keeping only measured rows (a speedup), then checked once more against
  `visibility.public_submissions`. STATIC_ONLY never reaches a board.
- `held`: public evaluations held for review, of submissions `visibility.public_submissions` lets the public see.
- `turns`: the turns of `portal.agent.visibility.public_runs`, minus unmeasured runs (`unmeasured_run_ids`, a
  STATIC_ONLY turn) and turns whose submission an admin hid.
Synthetic rows (`seed_leaderboard` demo data) are kept only with `synthetic` true."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import Http404

from evaluator.both_sides.arches import ARCHES
from evaluator.both_sides.verdict import OverallStatus
from portal.core import serializers
from portal.datasets.models import ResultsSnapshot
from portal.leaderboard.boards import selectors as board
from portal.leaderboard.cache import Generation
from portal.submissions import visibility
from portal.submissions.models import Evaluation, Submission

BATCH = 2000


def _site(path: str) -> str:
    return settings.SITE_URL.rstrip("/") + path


def _public_submissions() -> QuerySet[Submission]:
    return visibility.public_submissions(Submission.objects.all())


def _evaluation_row(evaluation: Evaluation, *, rank: int | None, section: str) -> dict[str, Any]:
    submission = evaluation.submission
    artifacts = sorted(evaluation.artifacts.all(), key=lambda a: a.name)
    evidence = f"/evidence/evaluations/{evaluation.id}"
    return {
        "evaluation_id": str(evaluation.id),
        "submission_id": submission.id,
        "task": submission.task.slug,
        "arch": submission.arch,
        "kind": submission.kind,
        "language": submission.language,
        "name": submission.name,
        "submitter": submission.user.username if submission.user else "",
        "synthetic": submission.is_synthetic,
        "source": submission.source,
        "source_sha256": submission.source_sha256,
        **serializers.measurement(evaluation, arch=submission.arch),
        "ptxbench_verified": evaluation.ptxbench_verified,
        "tensor_core_share": evaluation.tensor_core_share,
        "latency_ms": evaluation.latency_ms,
        "baseline_latency_ms": evaluation.baseline_latency_ms,
        "driver_version": evaluation.driver_version,
        "evaluator_version": evaluation.evaluator_version,
        "review_state": evaluation.review_state,
        "finished_at": serializers.iso(evaluation.finished_at),
        "rank": rank,
        "board_section": section,
        "verdict_sha256": next((a.sha256 for a in artifacts if a.name == "verdict.json"), None),
        "evaluation_url": _site(f"{evidence}/"),
        "bundle_url": _site(f"/evidence/submissions/{submission.id}/bundle.zip"),
        "artifacts": [
            {"name": a.name, "sha256": a.sha256, "bytes": a.size, "url": _site(f"{evidence}/artifacts/{a.name}")}
            for a in artifacts
        ],
    }


def _evaluations(ids: list[str]) -> Iterator[Evaluation]:
    for start in range(0, len(ids), BATCH):
        yield from (
            Evaluation.objects.filter(id__in=ids[start : start + BATCH], submission__in=_public_submissions())
            .select_related("submission__task", "submission__user")
            .prefetch_related("artifacts")
        )


def ranked_rows() -> list[dict[str, Any]]:
    """Every kernel on a public board, measured, in board order (architecture, task, board position)."""
    gen = Generation()
    placed: list[tuple[str, int | None, str]] = []
    for arch in ARCHES:
        for task in board.tasks_for_arch(gen, arch):
            placed.extend(
                (r.evaluation_id, r.rank, r.section)
                for r in board.kernel_board(gen, task=task, arch=arch)
                if r.speedup_factor is not None
            )
    # Checked again on the rows themselves: a board generation may be a moment older than a ban, hide or review.
    withheld = (Evaluation.ReviewState.HELD, Evaluation.ReviewState.REJECTED)
    by_id = {
        str(e.id): e
        for e in _evaluations([p[0] for p in placed])
        if e.state == Evaluation.State.DONE
        and e.status == OverallStatus.PASSED
        and e.purpose == Evaluation.Purpose.PUBLIC
        and e.review_state not in withheld
    }
    return [_evaluation_row(by_id[i], rank=rank, section=section) for i, rank, section in placed if i in by_id]


def held_rows() -> list[dict[str, Any]]:
    """Public evaluations held for an admin's review (a result far above the library or the GPU's peak)."""
    held = (
        Evaluation.objects.filter(
            purpose=Evaluation.Purpose.PUBLIC,
            state=Evaluation.State.DONE,
            review_state=Evaluation.ReviewState.HELD,
            submission__in=_public_submissions(),
        )
        .select_related("submission__task", "submission__user")
        .prefetch_related("artifacts")
        .order_by("finished_at", "id")
    )
    return [_evaluation_row(e, rank=None, section="") for e in held.iterator(chunk_size=BATCH)]


def turn_rows() -> list[dict[str, Any]]:
    from portal.agent.models import ModelRun, Turn
    from portal.agent.visibility import public_runs

    runs = public_runs(ModelRun.objects.all()).exclude(id__in=board.unmeasured_run_ids())
    turns = (
        Turn.objects.filter(state=Turn.State.DONE, trajectory__run__in=runs.values("id"))
        .exclude(evaluation__submission__is_hidden=True)
        .select_related("trajectory__run__user", "trajectory__task", "evaluation")
        .order_by("trajectory__run_id", "trajectory_id", "index")
    )
    rows = []
    for turn in turns.iterator(chunk_size=BATCH):
        run, evaluation = turn.trajectory.run, turn.evaluation
        rows.append(
            {
                "run_id": run.id,
                "run_kind": run.kind,
                "model": run.model,
                "display_name": run.display_name,
                "submitted_by": run.user.username,
                "arch": run.arch,
                "language": run.language,
                "task": turn.trajectory.task.slug,
                "trajectory_id": turn.trajectory_id,
                "trajectory_index": turn.trajectory.index,
                "turn": turn.index,
                "status": turn.published_status,
                "arch_status": turn.arch_status,
                "speedup_factor": turn.speedup_factor,
                "prompt_tokens": turn.prompt_tokens,
                "completion_tokens": turn.completion_tokens,
                "reasoning_tokens": turn.reasoning_tokens,
                "finish_reason": turn.finish_reason,
                "kernel": turn.kernel,
                "kernel_sha256": hashlib.sha256(turn.kernel.encode()).hexdigest() if turn.kernel else None,
                "evaluation_id": str(evaluation.id) if evaluation else None,
                "evaluator_version": evaluation.evaluator_version if evaluation else None,
                "gpu_name": (evaluation.gpu_name if evaluation else "") or run.gpu_name,
                "review_state": evaluation.review_state if evaluation else "",
                "synthetic": run.is_synthetic,
                "finished_at": serializers.iso(turn.finished_at),
                "evaluation_url": _site(f"/evidence/evaluations/{evaluation.id}/") if evaluation else None,
            }
        )
    return rows


def config_rows() -> dict[str, list[dict[str, Any]]]:
    return {"ranked": ranked_rows(), "held": held_rows(), "turns": turn_rows()}


# --------------------------------------------------------------------------- versions


def snapshot_list() -> QuerySet[ResultsSnapshot]:
    return ResultsSnapshot.objects.order_by("-version")


def snapshot_by_label(label: str) -> ResultsSnapshot:
    """`v3` -> version 3, or 404."""
    if not (label.startswith("v") and label[1:].isdigit()):
        raise Http404("no such version")
    snapshot = ResultsSnapshot.objects.filter(version=int(label[1:])).first()
    if snapshot is None:
        raise Http404("no such version")
    return snapshot
