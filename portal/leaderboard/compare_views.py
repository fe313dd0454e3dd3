"""/compare/: two models or two kernels side by side; the same data as JSON with `format=json`."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from evaluator.arches import ARCHES
from portal.leaderboard import compare, ranking, selectors
from portal.leaderboard.cache import Generation
from portal.leaderboard.selectors import BadQuery
from portal.submissions.models import Submission


def _model_choices(gen: Generation, arch: str) -> list[str]:
    rows = selectors.model_rows(gen, arch=arch, k=ranking.TURN_LIMITS[-1])
    return sorted({r.model_id for task_rows in rows.values() for r in task_rows}, key=str.casefold)


def compare_page(request: HttpRequest) -> HttpResponse:
    gen = Generation()
    params = request.GET
    wants_json = params.get("format") == "json"
    context: dict = {
        "arches": list(ARCHES.values()),
        "turn_limits": ranking.TURN_LIMITS,
        "languages": Submission.Language.choices,
        "a": params.get("a", ""),
        "b": params.get("b", ""),
        "kind": params.get("kind", ""),
    }
    status = 200
    try:
        if params.get("format") not in (None, "", "json"):
            raise BadQuery("format must be json or absent")
        kind = compare.parse_kind(params)
        context["kind"] = kind
        query = selectors.parse_query(params, gen)
        context["query"] = query
        context["model_choices"] = _model_choices(gen, query.arch) if selectors.models_available() else []
        if not params.get("a") and not params.get("b") and not wants_json:
            return render(request, "leaderboard/compare.html", context)  # the empty form
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
        return JsonResponse({"error": context["error"]} if status != 200 else data, status=status)
    if status == 200:
        context["data"] = data
        context["figure"] = data.get("figure")
    return render(request, "leaderboard/compare.html", context, status=status)
