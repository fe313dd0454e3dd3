"""The evaluation page and the evidence downloads under /evidence/ (who may see what: docs/visibility.md). Function
views; the files come from selectors.py."""

from __future__ import annotations

import logging
from typing import BinaryIO

from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from evaluator.both_sides.arches import ARCHES
from portal.core.verdicts import arch_badge, verdict_phrase
from portal.leaderboard.attachments import attachment
from portal.leaderboard.boards.selectors import models_available
from portal.leaderboard.evidence import sass_view, selectors, throttle
from portal.leaderboard.evidence.downloads import BLOCK, ChecksumMismatch, served_csv
from portal.submissions import visibility
from portal.submissions.evidence_files import TRUSTED_SASS
from portal.submissions.models import Artifact

SASS_NAME = TRUSTED_SASS.name

log = logging.getLogger(__name__)


def evaluation_detail(request: HttpRequest, evaluation_id) -> HttpResponse:
    """The one evaluation page: the verdict summary, per-workload results, the target-instruction table, the
    SASS with the target opcodes marked, every artifact with its sha256 and who wrote it, the files not kept and
    why, the source (highlighted on the server) and the compiler output (escaped). The submission's status page
    links here once the evaluation is done."""
    evaluation = visibility.visible_evaluation(request.user, evaluation_id)
    artifacts = list(evaluation.artifacts.order_by("name"))
    verdict = evaluation.verdict_record
    sass_artifact = evaluator_sass(artifacts)
    listing = None
    if sass_artifact is not None:
        try:
            text = selectors.artifact_bytes(sass_artifact).decode("utf-8", errors="replace")
        except (FileNotFoundError, ChecksumMismatch) as exc:
            log.warning("SASS of evaluation %s not shown: %s", evaluation.id, exc)
        else:
            listing = sass_view.sass_listing(text, families=ARCHES[evaluation.submission.arch].families)
    context = {
        "evaluation": evaluation,
        "submission": evaluation.submission,
        "verdict": verdict,
        "artifacts": artifacts,
        "not_kept": [item for item in evaluation.artifacts_not_kept or [] if isinstance(item, dict)],
        "badge": arch_badge(evaluation.arch_status, evaluation.arch_full),
        "phrase": verdict_phrase(
            evaluation.status, evaluation.arch_status, evaluation.arch_full, evaluation.submission.arch
        ),
        "compile_output": (verdict.compile.output if verdict and verdict.compile else None) or "",
        "sass_artifact": sass_artifact,
        "sass": listing,
        "target_families": ARCHES[evaluation.submission.arch].families,
    }
    return render(request, "leaderboard/evaluation.html", context)


def evaluator_sass(artifacts: list[Artifact]) -> Artifact | None:
    """The SASS the page shows: the listing the evaluator's SASS stage wrote, by its exact name and origin. Never
    the first file that merely ends in `.sass` (a file the submission planted is named to sort first)."""
    return next(
        (a for a in artifacts if a.name == SASS_NAME and a.origin == Artifact.Origin.EVALUATOR),
        None,
    )


def evaluation_artifact(request: HttpRequest, evaluation_id, name: str) -> HttpResponse:
    evaluation = visibility.visible_evaluation(request.user, evaluation_id)
    artifact = get_object_or_404(evaluation.artifacts, name=name)
    try:
        data = selectors.artifact_bytes(artifact)  # one file: bounded by the artifact caps
    except FileNotFoundError:
        raise Http404("the artifact file is missing") from None
    except ChecksumMismatch as exc:
        log.error("refusing to serve a corrupted artifact: %s", exc)
        return HttpResponse("the stored file does not match its recorded sha256", status=500, content_type="text/plain")
    if artifact.name.lower().endswith(".csv"):
        data = served_csv(data)
    return attachment(data, filename=f"{evaluation.id}-{artifact.name}", content_type=artifact.content_type)


def evaluation_trace(request: HttpRequest, evaluation_id) -> HttpResponse:
    evaluation = visibility.visible_evaluation(request.user, evaluation_id)
    data = selectors.traces_jsonl([evaluation])
    return attachment(data, filename=f"{evaluation.id}-trace.jsonl", content_type="application/x-ndjson")


def submission_bundle(request: HttpRequest, submission_id: int) -> HttpResponse:
    submission = visibility.visible_submission(request.user, submission_id)
    if wait := throttle.seconds_blocked(request):
        return _throttled(wait)
    try:
        bundle = selectors.submission_bundle(submission)
    except ChecksumMismatch as exc:
        log.error("refusing to bundle a corrupted artifact: %s", exc)
        return HttpResponse("a stored file does not match its recorded sha256", status=500, content_type="text/plain")
    return _streamed(
        bundle.file,
        size=bundle.size,
        sha256=bundle.sha256,
        filename=f"submission-{submission.id}.zip",
        content_type="application/zip",
    )


def run_bundle(request: HttpRequest, run_id: int) -> HttpResponse:
    if not models_available():
        raise Http404("model runs are not enabled on this portal")
    from portal.agent.visibility import visible_run

    run = visible_run(request.user, run_id)
    if wait := throttle.seconds_blocked(request):
        return _throttled(wait)
    try:
        bundle = selectors.run_bundle(run)
    except ChecksumMismatch as exc:
        log.error("refusing to bundle a corrupted artifact: %s", exc)
        return HttpResponse("a stored file does not match its recorded sha256", status=500, content_type="text/plain")
    return _streamed(
        bundle.file,
        size=bundle.size,
        sha256=bundle.sha256,
        filename=f"run-{run.id}.zip",
        content_type="application/zip",
    )


def _streamed(file: BinaryIO, *, size: int, sha256: str, filename: str, content_type: str) -> FileResponse:
    """A file as a download sent a block at a time (closed when sent), with the headers `attachment` gives."""
    safe = "".join(c for c in filename if c.isalnum() or c in "._-") or "download"
    response = FileResponse(file, content_type=content_type, as_attachment=True, filename=safe)
    response.block_size = BLOCK
    response["Content-Length"] = str(size)
    response["X-Content-SHA256"] = sha256
    return response


def _throttled(wait: int) -> HttpResponse:
    minutes = max(1, -(-wait // 60))
    response = HttpResponse(
        "Too many evidence bundles downloaded from your network without signing in. "
        f"Try again in {minutes} minute{'s' if minutes > 1 else ''}, or sign in.\n",
        status=429,
        content_type="text/plain; charset=utf-8",
    )
    response["Retry-After"] = str(wait)
    return response


def run_trajectories(request: HttpRequest, run_id: int) -> HttpResponse:
    if not models_available():
        raise Http404("model runs are not enabled on this portal")
    from portal.agent.visibility import visible_run

    run = visible_run(request.user, run_id)
    data = selectors.trajectories_json(run)
    return attachment(data, filename=f"run-{run.id}-trajectories.json", content_type="application/json")
