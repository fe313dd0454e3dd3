from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from evaluator.arches import ARCHES
from portal.catalog import selectors


def task_list(request: HttpRequest) -> HttpResponse:
    return render(request, "catalog/task_list.html", {"tasks": selectors.task_list(), "arches": ARCHES})


def task_detail(request: HttpRequest, slug: str) -> HttpResponse:
    task = selectors.task_detail(slug)
    return render(request, "catalog/task_detail.html", {"task": task, "arches": ARCHES})


def task_starter(request: HttpRequest, slug: str) -> HttpResponse:
    task = selectors.task_detail(slug)
    return _attachment(task.starter, f"{task.slug}_starter.cu", "text/x-cuda; charset=utf-8")


def pack_detail(request: HttpRequest, slug: str) -> HttpResponse:
    return render(request, "catalog/pack_detail.html", {"pack": selectors.pack_detail(slug)})


def pack_download(request: HttpRequest, slug: str) -> HttpResponse:
    pack = selectors.pack_detail(slug)
    return _attachment(pack.text, f"ptxbench-pack-{pack.slug}.md", "text/markdown; charset=utf-8")


def _attachment(text: str, filename: str, content_type: str) -> HttpResponse:
    response = HttpResponse(text.encode("utf-8"), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
