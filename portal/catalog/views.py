from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from evaluator.arches import ARCHES
from evaluator.triton_policy import run_signature as triton_run_signature
from portal.catalog import selectors
from portal.catalog.task_panels import task_panels_context


def home(request: HttpRequest) -> HttpResponse:
    """The front page: the architectures, how many tasks, the knowledge packs."""
    return render(
        request,
        "home.html",
        {"arches": ARCHES.values(), "task_count": selectors.task_list().count(), "packs": selectors.pack_list()},
    )


def task_list(request: HttpRequest) -> HttpResponse:
    return render(request, "catalog/task_list.html", {"tasks": selectors.task_list(), "arches": ARCHES})


def task_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """The task, and where to go from it: submit (pre-filled), its leaderboard, and what other apps show of it
    (`task_panels`: the current best kernel per architecture and the library's latency per GPU)."""
    task = selectors.task_detail(slug)
    order = list(ARCHES)  # Hopper first, as everywhere
    targets = sorted((t for t in task.targets.all() if t.arch in ARCHES), key=lambda t: order.index(t.arch))
    arches = [t.arch for t in targets]
    return render(
        request,
        "catalog/task_detail.html",
        {
            "task": task,
            "arches": ARCHES,
            "targets": targets,
            "first_arch": arches[0] if arches else "sm_90a",
            "triton_signature": triton_run_signature(
                [*(task.definition.get("inputs") or {}), *(task.definition.get("outputs") or {})]
            ),
            **task_panels_context(task, arches),
        },
    )


def task_starter(request: HttpRequest, slug: str) -> HttpResponse:
    task = selectors.task_detail(slug)
    return _attachment(task.starter, f"{task.slug}_starter.cu", "text/x-cuda; charset=utf-8")


def task_starter_triton(request: HttpRequest, slug: str) -> HttpResponse:
    task = selectors.task_detail(slug)
    if not task.starter_triton:
        raise Http404("this task has no Triton starter")
    return _attachment(task.starter_triton, f"{task.slug}_starter_triton.py", "text/x-python; charset=utf-8")


def pack_detail(request: HttpRequest, slug: str) -> HttpResponse:
    return render(request, "catalog/pack_detail.html", {"pack": selectors.pack_detail(slug)})


def pack_download(request: HttpRequest, slug: str) -> HttpResponse:
    pack = selectors.pack_detail(slug)
    return _attachment(pack.text, f"ptxbench-pack-{pack.slug}.md", "text/markdown; charset=utf-8")


def _attachment(text: str, filename: str, content_type: str) -> HttpResponse:
    response = HttpResponse(text.encode("utf-8"), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
