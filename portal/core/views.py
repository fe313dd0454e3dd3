from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render


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


def glossary(request: HttpRequest) -> HttpResponse:
    """/glossary/: docs/glossary.md rendered with an anchor per word, which every badge links to."""
    text = (settings.BASE_DIR / "docs" / "glossary.md").read_text(encoding="utf-8")
    return render(request, "glossary.html", {"glossary_markdown": text})
