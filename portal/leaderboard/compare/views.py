"""/compare/: two models or two kernels side by side; the same data as JSON with `format=json`."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from evaluator.both_sides.arches import ARCHES
from portal.core.api_versions import CURRENT_API_VERSION, api_version
from portal.core.registry_fields import language_choices
from portal.leaderboard.boards import ranking, selectors
from portal.leaderboard.boards.selectors import BadQuery
from portal.leaderboard.cache import Generation
from portal.leaderboard.compare import selectors as compare
from portal.leaderboard.compare.serializers import kernels_as_version


def _model_choices(gen: Generation, arch: str) -> list[str]:
    rows = selectors.model_rows(gen, arch=arch, k=ranking.TURN_LIMITS[-1])
    return sorted({r.model_id for task_rows in rows.values() for r in task_rows}, key=str.casefold)


def _top_two_models(gen: Generation, query) -> list[str]:
    """The model ids of the first two rows of the model board for this query (one entry per model)."""
    if not selectors.models_available():
        return []
    ids: list[str] = []
    for entry in selectors.model_entries(gen, query):
        if entry.model_id not in ids:
            ids.append(entry.model_id)
    return ids[:2]


def _kernel_choices(gen: Generation, task: str, tasks: list[str], arch: str) -> tuple[str, list[tuple[str, str]]]:
    """The task whose kernels the pickers offer (`task`, else the first with any) and its board's kernels as
    (evaluation id, label), in the board's order."""
    for slug in [task] if task else tasks:
        rows = selectors.kernel_board(gen, task=slug, arch=arch)
        if rows or task:
            choices = []
            for row in rows[:100]:
                speed = f"{row.speedup_factor:.2f}x" if row.speedup_factor is not None else "not timed"
                who = row.reference_label or row.submitter
                choices.append((row.evaluation_id, f"{row.name} · {who} · {row.language} · {speed}"))
            return slug, choices
    return (tasks or [""])[0], []


def compare_page(request: HttpRequest) -> HttpResponse:
    gen = Generation()
    params = request.GET
    wants_json = params.get("format") == "json"
    context: dict = {
        "arches": list(ARCHES.values()),
        "turn_limits": ranking.TURN_LIMITS,
        "languages": language_choices(),
        "a": params.get("a", ""),
        "b": params.get("b", ""),
        "kind": params.get("kind", ""),
    }
    status = 200
    v = CURRENT_API_VERSION
    try:
        if params.get("format") not in (None, "", "json"):
            raise BadQuery("format must be json or absent")
        try:
            v = api_version(request)  # the JSON's field names (docs/api.md); the page always shows the canonical ones
        except ValueError as exc:
            raise BadQuery(str(exc)) from exc
        kind = compare.parse_kind(params)
        context["kind"] = kind
        query = selectors.parse_query(params, gen)
        context["query"] = query
        context["model_choices"] = _model_choices(gen, query.arch) if selectors.models_available() else []
        if kind == "kernels":
            context["task_choices"] = selectors.tasks_for_arch(gen, query.arch)
            context["kernel_task"], context["kernel_choices"] = _kernel_choices(
                gen, query.task, context["task_choices"], query.arch
            )
        if not params.get("a") and not params.get("b") and not wants_json:
            # Opened from the nav: the two leading models side by side (or the picker alone when there are not
            # two), so the page shows what it does; the pickers above choose others, no ids to type.
            top = _top_two_models(gen, query) if kind == "models" else []
            if len(top) < 2:
                return render(request, "leaderboard/compare.html", context)
            context["a"], context["b"], context["defaulted"] = top[0], top[1], True
            params = params.copy()
            params["a"], params["b"] = top
        a, b = compare.parse_pair(params)
        if kind == "kernels":
            data = compare.compare_kernels(request.user, a, b)
        elif not selectors.models_available():
            raise compare.NotFound("model runs are not enabled on this portal")
        else:
            data = compare.compare_models(gen, query, a, b)
    except BadQuery as exc:
        context["error"], status = str(exc), 400
    except compare.NotFound as exc:
        context["error"], status = str(exc), 404
    if wants_json:
        if status != 200:
            return JsonResponse({"error": context["error"]}, status=status)
        return JsonResponse(kernels_as_version(data, v) if data["kind"] == "kernels" else data)
    if status == 200:
        context["data"] = data
        context["figure"] = data.get("figure")
        # The data link names the pair shown, the defaulted one included (the page's own query may have none).
        context["json_query"] = urlencode({**params.dict(), "format": "json"})  # the current names, the default
    return render(request, "leaderboard/compare.html", context, status=status)
