from __future__ import annotations

import logging

from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from portal.accounts.api_auth import api_endpoint
from portal.agent import selectors as agent_selectors
from portal.agent import visibility
from portal.agent.services import RunRefused, RunRequest
from portal.core.api import json_error, json_refusal, read_json
from portal.core.api_versions import api_version, same_version_path
from portal.fixit import reasoning, repairs, selectors, services
from portal.fixit.forms import DatasetBuildForm
from portal.fixit.services import DatasetRefused

log = logging.getLogger(__name__)


def dataset_list(request: HttpRequest, build_form: DatasetBuildForm | None = None, status: int = 200) -> HttpResponse:
    if build_form is None and request.user.is_staff:
        build_form = DatasetBuildForm()
    context = {"datasets": selectors.dataset_list()[:500], "build_form": build_form}
    return render(request, "fixit/dataset_list.html", context, status=status)


@require_POST
def dataset_build(request: HttpRequest) -> HttpResponse:
    """Staff build a dataset version from the web (others get 404, as for anything they may not see)."""
    if not request.user.is_staff:
        raise Http404("no such page")
    form = DatasetBuildForm(request.POST)
    if not form.is_valid():
        return dataset_list(request, form, status=400)
    data = form.cleaned_data
    try:
        dataset = services.dataset_create(
            user=request.user,
            name=data["name"],
            filters=form.filters(),
            licence=data["licence"],
            description=data["description"],
        )
    except DatasetRefused as exc:
        form.add_error(None, exc.message[0].upper() + exc.message[1:] + ".")
        return dataset_list(request, form, status=exc.status)
    if dataset.repair_rows or dataset.generation_rows:
        messages.success(
            request,
            f"Built {dataset.name} v{dataset.version}: {dataset.repair_rows} repair rows, "
            f"{dataset.generation_rows} generation rows.",
        )
    else:
        messages.warning(request, f"Built {dataset.name} v{dataset.version}, but no evaluation matched: it is empty.")
    return redirect("fixit:dataset_detail", name=dataset.name, version=dataset.version)


def dataset_detail(request: HttpRequest, name: str, version: int) -> HttpResponse:
    dataset = selectors.dataset_detail(name, version)
    context = {
        "dataset": dataset,
        "document": selectors.dataset_document(dataset),
        "sample": selectors.dataset_sample(dataset),
        "counts": [("repair", dataset.counts["repair"]), ("generation", dataset.counts["generation"])],
        "withdrawn": selectors.dataset_withdrawn(dataset),
        "versions": selectors.dataset_list().filter(name=name).values_list("version", flat=True),
    }
    return render(request, "fixit/dataset_detail.html", context)


def _download(dataset, path: str) -> HttpResponse:
    """The file streamed from disk as an attachment, after its sha256 was checked (also sent as a header)."""
    try:
        row, target = selectors.dataset_file_path(dataset, path)
    except ValueError:
        log.error("fixit dataset %s v%s: %s does not match its sha256", dataset.name, dataset.version, path)
        return HttpResponse("this file no longer matches its recorded sha256", status=500, content_type="text/plain")
    filename = f"{dataset.name}-v{dataset.version}-{path.replace('/', '-')}"
    response = FileResponse(target.open("rb"), as_attachment=True, filename=filename, content_type=row.content_type)
    response["X-Content-SHA256"] = row.sha256
    response["Content-Length"] = str(row.size)
    return response


def dataset_file(request: HttpRequest, name: str, version: int, path: str) -> HttpResponse:
    return _download(selectors.dataset_detail(name, version), path)


# --------------------------------------------------------------------------- API


@api_endpoint(methods=("GET", "POST"), auth=False)
def api_datasets(request: HttpRequest) -> JsonResponse:
    if request.method == "GET":
        return JsonResponse({"datasets": [selectors.dataset_document(d) for d in selectors.dataset_list()[:500]]})
    if request.api_user is None:
        return json_error("an API token is required (Authorization: Bearer <token>)", 401)
    try:
        body = read_json(request)
        unknown = sorted(set(body) - {"name", "filters", "licence", "attribution", "description"})
        if unknown:
            raise ValueError(f"unknown field {ascii(unknown[0])[1:-1][:60]!r}")
        for key in ("name", "licence", "attribution", "description"):
            if key in body and not isinstance(body[key], str):
                raise ValueError(f"'{key}' must be a string")
        dataset = services.dataset_create(
            user=request.api_user,
            name=body.get("name", ""),
            filters=body.get("filters", {}),
            licence=body.get("licence", ""),
            attribution=body.get("attribution", ""),
            description=body.get("description", ""),
        )
    except ValueError as exc:
        return json_error(str(exc), 400)
    except DatasetRefused as exc:
        return json_error(exc.message, exc.status)
    response = JsonResponse(
        selectors.dataset_document(selectors.dataset_detail(dataset.name, dataset.version)), status=201
    )
    response["Location"] = same_version_path(
        request, reverse("fixit:api_dataset", args=[dataset.name, dataset.version])
    )
    return response


@api_endpoint(methods=("GET",), auth=False)
def api_dataset(request: HttpRequest, name: str, version: int) -> JsonResponse:
    try:
        return JsonResponse(selectors.dataset_document(selectors.dataset_detail(name, version)))
    except Http404:
        return json_error("no such dataset", 404)


@api_endpoint(methods=("GET",), auth=False)
def api_dataset_file(request: HttpRequest, name: str, version: int, path: str) -> HttpResponse:
    try:
        return _download(selectors.dataset_detail(name, version), path)
    except Http404:
        return json_error("no such dataset or file", 404)


_REPAIR_FIELDS = {
    "base_url": str,
    "model": str,
    "arch": str,
    "api_key": str,
    "display_name": str,
    "turns": list,
    "attempts": int,
    "temperature": (int, float),
    "max_output_tokens": int,
    "request_timeout": (int, float),
    "max_retries": int,
}


def _repair_body(data: dict) -> tuple[RunRequest, list, int]:
    unknown = sorted(set(data) - set(_REPAIR_FIELDS))
    if unknown:
        raise ValueError(f"unknown field {ascii(unknown[0])[1:-1][:60]!r}; known: {', '.join(sorted(_REPAIR_FIELDS))}")
    for key in ("base_url", "model", "arch", "turns"):
        if key not in data:
            raise ValueError(f"field '{key}' is required")
    for key, kind in _REPAIR_FIELDS.items():
        if key in data and (isinstance(data[key], bool) or not isinstance(data[key], kind)):
            raise ValueError(f"field '{key}' has the wrong type")
    defaults = RunRequest(base_url="", model="", arch="", task_slugs=[])
    request = RunRequest(
        base_url=data["base_url"],
        model=data["model"],
        arch=data["arch"],
        task_slugs=[],
        display_name=data.get("display_name", ""),
        api_key=data.get("api_key", ""),
        temperature=float(data.get("temperature", defaults.temperature)),
        max_output_tokens=data.get("max_output_tokens", defaults.max_output_tokens),
        request_timeout=float(data.get("request_timeout", defaults.request_timeout)),
        max_retries=data.get("max_retries", defaults.max_retries),
    )
    return request, data["turns"], data.get("attempts", 3)


@api_endpoint(methods=("POST",), auth=True)
def api_repair_runs(request: HttpRequest) -> JsonResponse:
    """Start a repair run (docs/fixit.md); answers with the run's document like POST /api/v2/runs."""
    try:
        v = api_version(request)
        run_request, turn_ids, attempts = _repair_body(read_json(request))
        run = repairs.repair_run_create(
            user=request.api_user, request=run_request, turn_ids=turn_ids, attempts=attempts
        )
    except ValueError as exc:
        return json_error(str(exc), 400)
    except RunRefused as exc:
        return json_refusal(exc.body(), exc.status, exc.retry_after)
    document = agent_selectors.run_document(agent_selectors.run_detail(run.id, user=request.api_user), v=v)
    response = JsonResponse(document, status=201)
    response["Location"] = same_version_path(request, reverse("agent:api_run", args=[run.id]))
    return response


@api_endpoint(methods=("POST",), auth=True)
def api_repair_run_explanations(request: HttpRequest, run_id: int) -> JsonResponse:
    """Ask the reasoning teacher (`{"teacher"?: model id on the run's endpoint}`) to explain each repair found."""
    try:
        run = visibility.visible_run(request.api_user, run_id)  # a run the caller may not see: 404, as a read
    except Http404:
        return json_error("no such run", 404)
    try:
        body = read_json(request)
        if set(body) - {"teacher"} or not isinstance(body.get("teacher", ""), str):
            raise ValueError("the only field is 'teacher', a model id")
        created = reasoning.explanations_request(run=run, user=request.api_user, teacher=body.get("teacher", ""))
    except ValueError as exc:
        return json_error(str(exc), 400)
    except RunRefused as exc:
        return json_refusal(exc.body(), exc.status, exc.retry_after)
    return JsonResponse(
        {
            "queued": [
                {"trajectory": e.trajectory_id, "turn": e.fixed_turn.index, "teacher": e.teacher} for e in created
            ]
        },
        status=202,
    )


@api_endpoint(methods=("POST",), auth=True)
def api_run_tuned_on(request: HttpRequest, run_id: int) -> JsonResponse:
    """`{"dataset": name, "version": N}`: the run's model was fine-tuned on that dataset version (owner only)."""
    try:
        visibility.visible_run(request.api_user, run_id)  # a run the caller may not see: 404, as a read
    except Http404:
        return json_error("no such run", 404)
    try:
        body = read_json(request)
        name, version = body.get("dataset"), body.get("version")
        if set(body) - {"dataset", "version"} or not isinstance(name, str):
            raise ValueError('the body is {"dataset": name, "version": number}')
        if isinstance(version, bool) or not isinstance(version, int):
            raise ValueError("field 'version' must be a whole number")
        tuned = services.run_tuned_on_set(user=request.api_user, run_id=run_id, name=name, version=version)
    except ValueError as exc:
        return json_error(str(exc), 400)
    except DatasetRefused as exc:
        return json_error(exc.message, exc.status)
    return JsonResponse({"run": tuned.run_id, "dataset": tuned.dataset.name, "version": tuned.dataset.version})
