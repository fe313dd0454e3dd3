from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from evaluator.both_sides.arches import ARCHES, DEFAULT_ARCH
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
            "first_arch": arches[0] if arches else DEFAULT_ARCH,
            "languages": selectors.task_languages(task),
            **task_panels_context(task, arches),
        },
    )


def task_starter(request: HttpRequest, slug: str, filename: str) -> HttpResponse:
    """A starter file by its registry name (starter.cu, starter_triton.py ...), as text: the browser saves it."""
    task, _, starter = selectors.task_starter(slug, filename)
    return _attachment(starter, f"{task.slug}_{filename}", "text/plain; charset=utf-8")


def pack_detail(request: HttpRequest, slug: str) -> HttpResponse:
    return render(request, "catalog/pack_detail.html", {"pack": selectors.pack_detail(slug)})


def pack_download(request: HttpRequest, slug: str) -> HttpResponse:
    pack = selectors.pack_detail(slug)
    return _attachment(pack.text, f"ptxbench-pack-{pack.slug}.md", "text/markdown; charset=utf-8")


def _attachment(text: str, filename: str, content_type: str) -> HttpResponse:
    response = HttpResponse(text.encode("utf-8"), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
