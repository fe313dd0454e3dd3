"""The charts in the public read-only JSON API under /api/v2/leaderboard/charts/<name>: a chart's data and its
plotly figure, exactly what the board pages draw. Errors are {"error": "..."} with the right status."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse

from portal.accounts.api_auth import api_endpoint
from portal.core.api import json_error
from portal.core.api_versions import api_version
from portal.leaderboard.boards import selectors as boards
from portal.leaderboard.boards.selectors import BadQuery
from portal.leaderboard.boards.serializers import query_entry
from portal.leaderboard.cache import Generation
from portal.leaderboard.charts import selectors
from portal.leaderboard.charts.serializers import as_version


@api_endpoint(methods=("GET",), auth=False)
def chart(request: HttpRequest, name: str) -> HttpResponse:
    """A chart's data and its plotly figure, exactly what the page draws."""
    if name not in selectors.CHARTS:
        return json_error(f"unknown chart {name!r}; use one of: {', '.join(selectors.CHARTS)}", 404)
    if selectors.CHARTS[name][2] and not boards.models_available():
        return json_error("model runs are not enabled on this portal", 404)
    gen = Generation()
    try:
        query = boards.parse_query(request.GET, gen, task_required=False)
        v = api_version(request)
    except (BadQuery, ValueError) as exc:
        return json_error(str(exc), 400)
    result = as_version(selectors.chart(gen, name, query), v)
    return JsonResponse({"query": query_entry(query), **result})
