"""The boards in the public read-only JSON API under /api/v2/leaderboard/. Same selectors and sort whitelist as
the pages; errors are {"error": "..."} with the right status. `format=csv` returns the table as a CSV attachment,
`download=1` returns the JSON as an attachment."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from portal.accounts.api_auth import api_endpoint
from portal.core.api import json_error
from portal.core.api_versions import api_version
from portal.core.serializers import field_name
from portal.leaderboard.attachments import attachment
from portal.leaderboard.boards import ranking, selectors, serializers
from portal.leaderboard.boards.selectors import BadQuery, BoardQuery
from portal.leaderboard.cache import Generation

FORMATS = ("json", "csv")


def _table(
    request: HttpRequest, *, name: str, query: BoardQuery, records: list[dict], columns: list[str], extra: dict
) -> HttpResponse:
    fmt = request.GET.get("format") or "json"
    if fmt not in FORMATS:
        return json_error(f"unknown format {fmt!r}; use json or csv", 400)
    stem = "-".join(
        p
        for p in (name, query.task, query.arch, query.gpu, query.language, f"k{query.k}" if name != "kernels" else "")
        if p
    )
    if fmt == "csv":
        return attachment(
            serializers.to_csv(records, columns), filename=f"{stem}.csv", content_type="text/csv; charset=utf-8"
        )
    body = {"query": serializers.query_entry(query), **extra, "count": len(records), "rows": records}
    if request.GET.get("download") == "1":
        data = json.dumps(body, indent=2, default=str).encode()
        return attachment(data, filename=f"{stem}.json", content_type="application/json")
    return JsonResponse(body)


def _parse(request: HttpRequest, gen: Generation, *, task_required: bool) -> BoardQuery:
    return selectors.parse_query(request.GET, gen, task_required=task_required)


@api_endpoint(methods=("GET",), auth=False)
def kernels(request: HttpRequest) -> HttpResponse:
    gen = Generation()
    try:
        query = _parse(request, gen, task_required=True)
    except BadQuery as exc:
        return json_error(str(exc), 400)
    try:
        show_all = selectors.parse_show(request.GET)
        v = api_version(request)
    except (BadQuery, ValueError) as exc:
        return json_error(str(exc), 400)
    rows = selectors.kernel_board(gen, task=query.task, arch=query.arch, gpu=query.gpu, language=query.language)
    records = [serializers.kernel_entry(r, v=v) for r in ranking.visible_rows(rows, show_all=show_all)]
    order = "-" + field_name("speedup_factor", v)  # the board's order, echoed in `query`
    query = BoardQuery(arch=query.arch, task=query.task, k=query.k, gpu=query.gpu, sort=order, language=query.language)
    held = selectors.held_kernels(gen, task=query.task, arch=query.arch, gpu=query.gpu, language=query.language)
    # Held rows are never ranked and never in `rows`; the JSON lists them apart, each with its held_reason.
    extra = {"show": "all" if show_all else "verified", "held": [serializers.kernel_entry(r, v=v) for r in held]}
    return _table(
        request, name="kernels", query=query, records=records, columns=serializers.kernel_fields(v), extra=extra
    )


def _models_off() -> HttpResponse:
    return json_error("model runs are not enabled on this portal", 404)


def _per_run(request: HttpRequest) -> bool:
    per = request.GET.get("per") or "model"
    if per not in ("model", "run"):
        raise BadQuery(f"per must be 'model' or 'run', not {per!r}")
    return per == "run"


def _model_table(request: HttpRequest, *, name: str, task_required: bool) -> HttpResponse:
    """One row per model and GPU model (its runs under `runs`), or with per=run one row per run."""
    if not selectors.models_available():
        return _models_off()
    gen = Generation()
    try:
        query = _parse(request, gen, task_required=task_required)
        per_run = _per_run(request)
        v = api_version(request)
    except (BadQuery, ValueError) as exc:
        return json_error(str(exc), 400)
    if name == "summary":
        query = BoardQuery(arch=query.arch, task="", k=query.k, gpu=query.gpu, sort=query.sort, language=query.language)
    extra: dict[str, Any] = {"per": "run" if per_run else "model"}
    if not query.task:
        extra["tasks"] = selectors.tasks_for_arch(gen, query.arch)
    if per_run:
        runs = selectors.model_board(gen, query) if query.task else selectors.model_summary(gen, query)
        records = [serializers.run_entry(r, v=v) for r in runs]
        columns = list(records[0]) if records else list(serializers.RUN_FIELDS)
    else:
        csv_wanted = request.GET.get("format") == "csv"
        records = [
            serializers.model_entry(g, with_runs=not csv_wanted, v=v) for g in selectors.model_entries(gen, query)
        ]
        columns = list(serializers.MODEL_FIELDS)
    return _table(request, name=name, query=query, records=records, columns=columns, extra=extra)


@api_endpoint(methods=("GET",), auth=False)
def models(request: HttpRequest) -> HttpResponse:
    """The model board: one task (task given) or the summary across tasks (no task)."""
    return _model_table(request, name="models", task_required=False)


@api_endpoint(methods=("GET",), auth=False)
def summary(request: HttpRequest) -> HttpResponse:
    """The model board across tasks (the same as /models without a task)."""
    return _model_table(request, name="summary", task_required=False)
