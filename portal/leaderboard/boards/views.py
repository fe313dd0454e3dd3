"""The two board pages, each with its charts. Function views; every number comes from selectors.py."""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from evaluator.both_sides.arches import ARCHES, DEFAULT_ARCH
from portal.core.registry_fields import language_choices
from portal.leaderboard.boards import ranking, selectors
from portal.leaderboard.boards.selectors import BadQuery, BoardQuery
from portal.leaderboard.cache import STALE_RENDER_SECONDS, Generation
from portal.leaderboard.charts import figures as chart_figures
from portal.leaderboard.charts import selectors as charts

MODEL_CHARTS = ("correctness", "speedup-by-turn", "fast-p", "reasoning", "best-speedup", "arch-comparison")
# Charts the board leaves out, message and all, when they have nothing to show (the JSON still says why).
HIDDEN_WHEN_EMPTY = ("arch-comparison",)


def _filters(gen: Generation, query: BoardQuery) -> dict:
    return {
        # The rendered table and chart blocks are cached per results generation ({% cache %} in the templates):
        # they are the same for every visitor, and rendering them is most of a page's cost.
        "generation": gen.token,
        "cache_seconds": settings.LEADERBOARD_CACHE_SECONDS,
        "arches": list(ARCHES.values()),
        "gpus": ARCHES[query.arch].gpus,
        "tasks": selectors.tasks_for_arch(gen, query.arch),
        "turn_limits": ranking.TURN_LIMITS,
        "languages": language_choices(),
        "query": query,
    }


def _render(request: HttpRequest, template: str, context: dict, gen: Generation, status: int = 200) -> HttpResponse:
    if gen.stale:
        # Some rows came from the previous generation while another process computes this one: never keep the
        # rendered blocks under the new generation's key, but briefly under their own, so that rendering them
        # again is not what every request of that moment costs.
        context["generation"] = f"{gen.token}-stale"
        context["cache_seconds"] = STALE_RENDER_SECONDS
    return render(request, template, context, status=status)


def _fallback_query(request: HttpRequest) -> BoardQuery:
    """Defaults to redraw the filters with after a bad request, keeping what was valid."""
    arch = request.GET.get("arch") if request.GET.get("arch") in ARCHES else DEFAULT_ARCH
    return BoardQuery(arch=arch, task="", k=ranking.TURN_LIMITS[-1], gpu="", sort=ranking.DEFAULT_SORT)


def _query_string(query: BoardQuery, **changes) -> str:
    params = {
        "arch": query.arch,
        "task": query.task,
        "k": query.k,
        "gpu": query.gpu,
        "sort": query.sort,
        "language": query.language,
    }
    params.update(changes)
    return urlencode({k: v for k, v in params.items() if v not in ("", None)})


def _sort_links(query: BoardQuery) -> dict[str, str]:
    """Column header links: the first click sorts descending, a second click on the same column ascending."""
    links = {}
    for key in ranking.SORT_KEYS:
        target = key if query.sort == f"-{key}" else f"-{key}"
        links[key] = "?" + _query_string(query, sort=target)
    return links


def _chart_blocks(gen: Generation, query: BoardQuery, names: tuple[str, ...]) -> list[dict]:
    blocks = []
    for name in names:
        needs_models = charts.CHARTS[name][2]
        if needs_models and not selectors.models_available():
            continue
        result = charts.chart(gen, name, query)
        if result.get("empty") and name in HIDDEN_WHEN_EMPTY:
            continue
        blocks.append(
            {
                "name": name,
                "element_id": f"figure-{name}",
                "figure": result["figure"],
                "empty": result.get("empty") or "",
                "title": chart_figures.figure_title(result["figure"]),
                # The canonical field names (docs/api.md), as every download the site links to.
                "json_url": reverse("leaderboard_api:chart", args=[name]) + "?" + _query_string(query),
            }
        )
    return blocks


def leaderboard(request: HttpRequest) -> HttpResponse:
    """Model runs per architecture, task and turn limit (or the summary across tasks), with charts."""
    gen = Generation()
    try:
        query = selectors.parse_query(request.GET, gen)
    except BadQuery as exc:
        context = {**_filters(gen, _fallback_query(request)), "error": str(exc), "models_available": True}
        return _render(request, "leaderboard/models.html", context, gen, status=400)
    context = _filters(gen, query)
    context["models_available"] = selectors.models_available()
    context["entries"] = selectors.model_entries(gen, query)
    context["show_language"] = True
    context["task_count"] = len(context["tasks"])
    context["sort_links"] = _sort_links(query)
    context["charts"] = _chart_blocks(gen, query, MODEL_CHARTS)
    context["query_string"] = _query_string(query)
    context["kernel_query_string"] = _query_string(query, sort="", k="") if query.task else ""
    return _render(request, "leaderboard/models.html", context, gen)


def kernel_leaderboard(request: HttpRequest) -> HttpResponse:
    """The fastest correct kernels of one task on one architecture, with the expert reference rows."""
    gen = Generation()
    params = request.GET.copy()
    if not params.get("task"):
        arch = params.get("arch") if params.get("arch") in ARCHES else DEFAULT_ARCH
        tasks = selectors.tasks_for_arch(gen, arch)
        if tasks:
            # Open on a board with something ranked (a fresh portal has verdicts of the expert kernels for some
            # tasks only), in the tasks' own order; the first task when none has.
            params["task"] = next((t for t in tasks if selectors.has_ranked(gen, task=t, arch=arch)), tasks[0])
    try:
        query = selectors.parse_query(params, gen, task_required=True)
    except BadQuery as exc:
        context = {**_filters(gen, _fallback_query(request)), "error": str(exc)}
        return _render(request, "leaderboard/kernels.html", context, gen, status=400)
    try:
        show_all = selectors.parse_show(request.GET)
        hide_held = selectors.parse_held(request.GET)
    except BadQuery as exc:
        context = {**_filters(gen, query), "error": str(exc)}
        return _render(request, "leaderboard/kernels.html", context, gen, status=400)
    context = _filters(gen, query)
    rows = selectors.kernel_board(gen, task=query.task, arch=query.arch, gpu=query.gpu, language=query.language)
    context["show_language"] = True
    held = selectors.held_kernels(gen, task=query.task, arch=query.arch, gpu=query.gpu, language=query.language)
    context["verified"], context["sections"] = ranking.board_sections(
        rows, show_all=show_all, held=held, hide_held=hide_held
    )
    context["show_all"] = show_all
    context["hide_held"] = hide_held
    context["held_count"] = len(ranking.held_rows(rows, held))
    context["others_count"] = sum(1 for r in rows if r.section not in (ranking.RANKED_STATE, ranking.HELD_SECTION))
    context["charts"] = _chart_blocks(gen, query, ("distribution",))
    # The downloads take the filters only: their table never has the held rows (the JSON lists them apart).
    context["query_string"] = _query_string(query, sort="", k="")
    # The page's own links each change one choice and keep the other (show all / verified only, held shown / hidden).
    held_param = "hide" if hide_held else ""
    context["verified_query_string"] = _query_string(query, sort="", k="", held=held_param)
    context["show_query_string"] = _query_string(query, sort="", k="", show="all", held=held_param)
    context["held_toggle_query_string"] = _query_string(
        query, sort="", k="", show="all" if show_all else "", held="" if hide_held else "hide"
    )
    return _render(request, "leaderboard/kernels.html", context, gen)
