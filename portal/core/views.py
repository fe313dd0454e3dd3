from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from evaluator.arches import ARCHES
from portal.catalog import selectors as catalog


def home(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "home.html",
        {"arches": ARCHES.values(), "task_count": catalog.task_list().count(), "packs": catalog.pack_list()},
    )


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness for load balancers: the process answers and the database is reachable."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})


def api_docs(request: HttpRequest) -> HttpResponse:
    """/api/: docs/api.md rendered (Markdown with raw HTML escaped), with a curl example to start from."""
    text = (settings.BASE_DIR / "docs" / "api.md").read_text(encoding="utf-8")
    base = request.build_absolute_uri("/").rstrip("/")
    return render(request, "api.html", {"api_markdown": text, "base_url": base})
