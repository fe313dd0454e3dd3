from __future__ import annotations

from pathlib import PurePath

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from evaluator.both_sides.arches import DEFAULT_ARCH
from evaluator.languages import DEFAULT_LANGUAGE
from portal.accounts.api_auth import api_endpoint
from portal.catalog.models import Task
from portal.core import schema
from portal.core.api import check_text, json_error, json_refusal, read_json
from portal.core.api_versions import CURRENT_API_VERSION, api_version
from portal.submissions import selectors, visibility
from portal.submissions.compile_log import first_error_lines
from portal.submissions.forms import LANGUAGE_BY_SUFFIX, SubmissionForm
from portal.submissions.models import Submission
from portal.submissions.services import SubmissionRefused, decode_source, submission_create


@require_http_methods(["GET", "POST"])
def submit(request: HttpRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        # Say why the login page comes up; `next` brings the visitor back here (through sign-up too).
        messages.info(request, "Log in to submit a kernel (no account yet? Sign up below, it takes a minute).")
        return redirect_to_login(request.get_full_path())
    initial = {"task": request.GET.get("task"), "arch": request.GET.get("arch") or DEFAULT_ARCH}
    form = SubmissionForm(request.POST or None, request.FILES or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            result = submission_create(
                user=request.user,
                task=data["task"],
                arch=data["arch"],
                source=data["source"],
                name=data.get("name") or "",
                note=data.get("note") or "",
                force=data.get("force", False),
                language=data.get("language") or DEFAULT_LANGUAGE.name,
            )
        except SubmissionRefused as exc:
            form.add_error(None, exc.message[0].upper() + exc.message[1:] + ".")
            return render(request, "submissions/submit.html", _submit_context(form), status=exc.status)
        if result.duplicate:
            messages.info(
                request,
                "This exact source was already evaluated for this task and architecture; showing that result. Tick “evaluate again” to run it anew.",
            )
        return redirect("submissions:detail", submission_id=result.submission.id)
    return render(request, "submissions/submit.html", _submit_context(form), status=400 if form.errors else 200)


def _submit_context(form: SubmissionForm) -> dict:
    # The form says what the workers online now can do: without a GPU worker nothing is timed.
    return {"form": form, "capabilities": selectors.worker_capabilities()}


def detail(request: HttpRequest, submission_id: int) -> HttpResponse:
    submission = visibility.visible_submission(request.user, submission_id)
    evaluations = selectors.public_evaluations(submission)
    latest = evaluations[0] if evaluations else None
    verdict = latest.verdict_record if latest else None
    return render(
        request,
        "submissions/detail.html",
        {
            "submission": submission,
            "evaluations": evaluations,
            "latest": latest,
            "ranked_check": selectors.ranked_check(submission),
            "status": selectors.evaluation_status(latest) if latest else None,
            "verdict": verdict,
            "artifacts": latest.artifacts.all() if latest else [],
            "compile_errors": first_error_lines(verdict),
            "identical_expert": selectors.identical_expert(submission),
        },
    )


def verdict_fragment(request: HttpRequest, submission_id: int) -> HttpResponse:
    """The verdict section alone, for the status page to swap in when the evaluation finishes."""
    submission = visibility.visible_submission(request.user, submission_id)
    public = selectors.public_evaluations(submission)
    latest = public[0] if public else None
    verdict = latest.verdict_record if latest else None
    context = {
        "latest": latest,
        "verdict": verdict,
        "artifacts": latest.artifacts.all() if latest else [],
        "ranked_check": selectors.ranked_check(submission),
        "compile_errors": first_error_lines(verdict),
    }
    return render(request, "submissions/_verdict.html", context)


@login_required
def mine(request: HttpRequest) -> HttpResponse:
    return render(request, "submissions/mine.html", {"rows": selectors.my_submission_rows(request.user)})


def workers(request: HttpRequest) -> HttpResponse:
    return render(
        request, "submissions/workers.html", {"workers": selectors.live_workers(), "depths": selectors.queue_depths()}
    )


# --------------------------------------------------------------------------- JSON API


# The JSON body of POST /api/v2/submissions (docs/api.md); multipart forms carry the same fields.
SUBMISSION_INPUT = (
    schema.Field("task", (str,), required=True, max_length=200),
    schema.Field("arch", (str,), required=True, max_length=16),
    schema.Field("source", (str,), required=True),
    schema.Field("name", (str,), max_length=200),
    schema.Field("note", (str,), max_length=10_000),
    schema.Field("force", (bool,)),
    schema.Field("language", (str,), max_length=16),
)


@api_endpoint(methods=("POST",), auth=True)
def api_submit(request: HttpRequest) -> JsonResponse:
    """POST /api/v2/submissions — JSON {task, arch, source, language?, name?, note?, force?}, or multipart with a
    `file`. `language` is "cuda" (default) or "triton"."""
    try:
        v = api_version(request)
    except ValueError as exc:
        return json_error(str(exc))
    if request.content_type == "multipart/form-data":
        fields = request.POST
        try:
            check_text({key: fields.getlist(key) for key in fields})
        except ValueError as exc:
            return json_error(str(exc))
        upload = request.FILES.get("file")
        try:
            source = decode_source(upload.read()) if upload else fields.get("source", "")
        except SubmissionRefused as exc:
            return json_error(exc.message, exc.status)
        data = {k: fields.get(k) for k in ("task", "arch", "name", "note", "force", "language")}
        data["force"] = str(data.get("force") or "").lower() in {"1", "true", "yes", "on"}
        data["source"] = source
        if upload and not data.get("name"):
            data["name"] = upload.name
        if upload:  # the file's extension gives the language, as in the form; a contradiction is an error
            by_name = LANGUAGE_BY_SUFFIX.get(PurePath(upload.name or "").suffix.lower())
            if data.get("language") and by_name and data["language"] != by_name:
                return json_error(f"the file {upload.name!r} is {by_name}, but 'language' says {data['language']!r}")
            data["language"] = data.get("language") or by_name
    else:
        try:
            data = schema.validate(read_json(request), SUBMISSION_INPUT)
        except ValueError as exc:  # SchemaError is a ValueError
            return json_error(str(exc))
    for key in ("task", "arch", "source"):
        if not isinstance(data.get(key), str) or not data[key]:
            return json_error(f"'{key}' is required and must be a non-empty string")
    task = Task.objects.filter(slug=data["task"], is_active=True).first()
    if task is None:
        return json_error(f"unknown task {data['task']!r}", 404)
    try:
        decode_source(data["source"].encode("utf-8"))
        result = submission_create(
            user=request.api_user,
            task=task,
            arch=data["arch"],
            source=data["source"],
            name=str(data.get("name") or ""),
            note=str(data.get("note") or ""),
            force=bool(data.get("force")),
            language=str(data.get("language") or DEFAULT_LANGUAGE.name),
        )
    except SubmissionRefused as exc:
        return json_refusal(exc.body(), exc.status, exc.retry_after)
    body = _submission_json(result.submission, v=v)
    body["duplicate"] = result.duplicate
    return JsonResponse(body, status=200 if result.duplicate else 201)


@api_endpoint(methods=("GET",), auth=False)
def api_submission(request: HttpRequest, submission_id: int) -> JsonResponse:
    try:
        submission = visibility.visible_submission(request.api_user or request.user, submission_id)
    except Http404:
        return json_error("no such submission", 404)
    try:
        v = api_version(request)
    except ValueError as exc:
        return json_error(str(exc), 400)
    return JsonResponse(_submission_json(submission, v=v))


@api_endpoint(methods=("GET",), auth=False)
def api_evaluation(request: HttpRequest, evaluation_id) -> JsonResponse:
    try:
        evaluation = visibility.visible_evaluation(request.api_user or request.user, evaluation_id)
    except Http404:
        return json_error("no such evaluation", 404)
    try:
        v = api_version(request)
    except ValueError as exc:
        return json_error(str(exc), 400)
    return JsonResponse(selectors.evaluation_status(evaluation, v=v))


def _submission_json(submission: Submission, *, v: int = CURRENT_API_VERSION) -> dict:
    evaluations = selectors.public_evaluations(submission)
    return {
        "id": submission.id,
        "task": submission.task.slug,
        "arch": submission.arch,
        "name": submission.name,
        "kind": submission.kind,
        "language": submission.language,
        "source_sha256": submission.source_sha256,
        "created_at": submission.created_at.isoformat(),
        "url": f"/submissions/{submission.id}/",
        "evaluations": [selectors.evaluation_status(e, v=v) for e in evaluations],
        "ranked_check": selectors.ranked_check(submission),
    }
