from __future__ import annotations

import logging

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from portal.core.api import api_endpoint, json_error, read_json
from portal.fixit import selectors, services
from portal.fixit.services import DatasetRefused
from portal.leaderboard.downloads import attachment

log = logging.getLogger(__name__)


def dataset_list(request: HttpRequest) -> HttpResponse:
    return render(request, "fixit/dataset_list.html", {"datasets": selectors.dataset_list()[:500]})


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
    try:
        row, data = selectors.dataset_file_bytes(dataset, path)
    except ValueError:
        log.error("fixit dataset %s v%s: %s does not match its sha256", dataset.name, dataset.version, path)
        return HttpResponse("this file no longer matches its recorded sha256", status=500, content_type="text/plain")
    filename = f"{dataset.name}-v{dataset.version}-{path.replace('/', '-')}"
    return attachment(data, filename=filename, content_type=row.content_type)


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
    response["Location"] = f"/api/v1/datasets/{dataset.name}/{dataset.version}"
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
