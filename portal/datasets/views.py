"""The public result snapshots on the site: a page listing the versions, each file (checked against its sha256
before it is served), and the list as JSON at /api/v2/results-datasets."""

from __future__ import annotations

import hashlib
import logging

from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse

from portal.accounts.api_auth import api_endpoint
from portal.datasets import selectors, services
from portal.datasets.models import ResultsSnapshot
from portal.datasets.schemas import CONFIGS

log = logging.getLogger(__name__)
CONTENT_TYPES = {
    ".parquet": "application/vnd.apache.parquet",
    ".jsonl": "application/x-ndjson",
    ".json": "application/json",
    ".md": "text/markdown; charset=utf-8",
}


def _document(request: HttpRequest, row: ResultsSnapshot) -> dict:
    def url(path: str) -> str:
        return request.build_absolute_uri(reverse("datasets:file", args=[row.label, path]))

    return {
        "version": row.version,
        "label": row.label,
        "created_at": row.created_at.isoformat(),
        "counts": row.counts,
        "configs": list(CONFIGS),
        "evaluator_versions": row.evaluator_versions,
        "manifest_sha256": row.manifest_sha256,
        "files": [{"path": p, **entry, "url": url(p)} for p, entry in sorted(row.files.items())],
    }


def snapshot_list(request: HttpRequest) -> HttpResponse:
    rows = list(selectors.snapshot_list()[:200])
    versions = [
        {
            "row": row,
            "counts": [(name, row.counts.get(name, 0)) for name in CONFIGS],
            "files": sorted(row.files.items()),
        }
        for row in rows
    ]
    return render(request, "datasets/snapshot_list.html", {"versions": versions, "configs": list(CONFIGS)})


def snapshot_file(request: HttpRequest, label: str, path: str) -> HttpResponse:
    row = selectors.snapshot_by_label(label)
    entry = row.files.get(path)  # only the files the version lists: no other path is ever opened
    if entry is None:
        raise Http404("no such file in this version")
    target = services.snapshot_folder(row) / path
    digest = hashlib.sha256()
    try:
        with target.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except FileNotFoundError:
        raise Http404("this file is missing on the server") from None
    if digest.hexdigest() != entry["sha256"]:
        log.error("results dataset %s: %s does not match its sha256", row.label, path)
        return HttpResponse("this file no longer matches its recorded sha256", status=500, content_type="text/plain")
    suffix = "." + path.rsplit(".", 1)[-1]
    response = FileResponse(
        target.open("rb"),
        as_attachment=True,
        filename=f"ptxbench-results-{row.label}-{path.replace('/', '-')}",
        content_type=CONTENT_TYPES.get(suffix, "application/octet-stream"),
    )
    response["X-Content-SHA256"] = entry["sha256"]
    response["Content-Length"] = str(entry["bytes"])
    return response


@api_endpoint(methods=("GET",), auth=False)
def api_snapshots(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"versions": [_document(request, row) for row in selectors.snapshot_list()[:200]]})
