from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from evaluator.both_sides.arches import DEFAULT_ARCH
from evaluator.languages import DEFAULT_LANGUAGE
from portal.accounts.api_auth import api_endpoint
from portal.agent import budget, selectors, services
from portal.agent.forms import RunForm
from portal.agent.models import Turn
from portal.agent.services import RunRefused, RunRequest
from portal.agent.states import TURN
from portal.agent.trajectories import trajectory_export
from portal.core import schema
from portal.core.api import json_error, json_refusal, read_json
from portal.core.api_versions import api_version, same_version_path


def run_list(request: HttpRequest) -> HttpResponse:
    return render(request, "agent/run_list.html", {"runs": selectors.run_list()[:200], "mine": False})


@login_required
def run_mine(request: HttpRequest) -> HttpResponse:
    runs = selectors.run_list(user=request.user, mine=True)[:200]
    return render(request, "agent/run_list.html", {"runs": runs, "mine": True})


@login_required
@require_http_methods(["GET", "POST"])
def run_new(request: HttpRequest) -> HttpResponse:
    form = RunForm(request.POST or None, initial={"arch": DEFAULT_ARCH, "pack_variant": "arch"})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run = services.run_create(
                user=request.user,
                request=RunRequest(
                    base_url=data["base_url"],
                    model=data["model"],
                    display_name=data.get("display_name") or "",
                    api_key=data.get("api_key") or "",
                    arch=data["arch"],
                    task_slugs=[t.slug for t in data["tasks"]],
                    pack_variant=data["pack_variant"],
                    turns=data["turns"],
                    trajectories_per_task=data["trajectories_per_task"],
                    target_speedup=data["target_speedup"],
                    temperature=data["temperature"],
                    max_output_tokens=data["max_output_tokens"],
                    request_timeout=data["request_timeout"],
                    max_retries=data["max_retries"],
                    language=data.get("language") or DEFAULT_LANGUAGE.name,
                ),
            )
        except RunRefused as exc:
            form.add_error(None, exc.message[0].upper() + exc.message[1:] + ".")
            return render(request, "agent/run_form.html", {"form": form}, status=exc.status)
        messages.success(request, "Run queued.")
        return redirect("agent:run_detail", run_id=run.id)
    return render(request, "agent/run_form.html", {"form": form}, status=400 if form.errors else 200)


def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.run_detail(run_id, user=request.user)
    document = selectors.run_document(run)
    metrics_by_task: dict[str, list] = {}
    for m in run.metrics.all():
        metrics_by_task.setdefault(m.task.slug, []).append(m)
    return render(
        request,
        "agent/run_detail.html",
        {
            "run": run,
            "is_owner": request.user.is_authenticated and request.user.id == run.user_id,
            "trajectories": run.trajectories.all(),
            "metrics_by_task": metrics_by_task,
            "document": document,
            "budget": budget.run_budget(run, viewer=request.user),
            # Scored on the CPU stages only somewhere: kept off the public boards (leaderboard/boards/selectors.py).
            "static_only": Turn.objects.filter(trajectory__run=run, verdict_status="STATIC_ONLY").exists(),
        },
    )


@login_required
@require_POST
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.run_detail(run_id, user=request.user)
    if run.user_id != request.user.id and not request.user.is_staff:
        raise Http404("no such run")
    if services.run_cancel(run=run):
        messages.info(request, "Run cancelled; turns already being evaluated finish on their own.")
    return redirect("agent:run_detail", run_id=run.id)


def trajectory_detail(request: HttpRequest, run_id: int, trajectory_id: int) -> HttpResponse:
    trajectory = selectors.trajectory_detail(run_id, trajectory_id, user=request.user)
    turns = list(trajectory.turns.all())
    # Pair each conversation message with its turn so the page can show the kernel and verdict beside it.
    conversation = []
    assistant_seen = 0
    for message in trajectory.messages:
        role = message.get("role", "")
        turn = None
        if role == "assistant":
            turn = turns[assistant_seen] if assistant_seen < len(turns) else None
            assistant_seen += 1
        elif role == "user" and assistant_seen:
            turn = turns[assistant_seen - 1] if assistant_seen - 1 < len(turns) else None
        conversation.append({"role": role, "content": str(message.get("content", "")), "turn": turn})
    return render(
        request,
        "agent/trajectory_detail.html",
        {"trajectory": trajectory, "run": trajectory.run, "turns": turns, "conversation": conversation},
    )


def trajectory_download(request: HttpRequest, run_id: int, trajectory_id: int) -> HttpResponse:
    trajectory = selectors.trajectory_detail(run_id, trajectory_id, user=request.user)
    body = json.dumps(trajectory_export(trajectory), indent=2)
    response = HttpResponse(body.encode("utf-8"), content_type="application/json; charset=utf-8")
    name = f"{trajectory.task.slug}_run{run_id}_t{trajectory.index}.traj.json"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


# --------------------------------------------------------------------------- JSON API

# The JSON body of POST /api/v2/runs (docs/agent.md), declared once and checked by portal/core/schema.py.
RUN_INPUT = (
    schema.Field("base_url", (str,), required=True, max_length=2000),
    schema.Field("model", (str,), required=True, max_length=200),
    schema.Field("arch", (str,), required=True, max_length=16),
    schema.Field("tasks", (list, str), required=True, max_length=10_000),
    schema.Field("display_name", (str,), max_length=200),
    schema.Field("api_key", (str,), max_length=10_000),
    schema.Field("pack", (str,), max_length=64),
    schema.Field("turns", (int,)),
    schema.Field("trajectories_per_task", (int,)),
    schema.Field("target_speedup", (int, float)),
    schema.Field("temperature", (int, float)),
    schema.Field("max_output_tokens", (int,)),
    schema.Field("request_timeout", (int, float)),
    schema.Field("max_retries", (int,)),
    schema.Field("language", (str,), max_length=16),
)


def _run_request(data: dict) -> RunRequest:
    try:
        schema.validate(data, RUN_INPUT)
    except schema.SchemaError as exc:
        raise RunRefused(str(exc)) from None
    tasks = data["tasks"]
    if isinstance(tasks, str):
        tasks = tasks.split(",")
    if not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks):
        raise RunRefused("field 'tasks' must be a list of task names")
    defaults = RunRequest(base_url="", model="", arch="", task_slugs=[])
    return RunRequest(
        base_url=data["base_url"],
        model=data["model"],
        arch=data["arch"],
        task_slugs=tasks,
        display_name=data.get("display_name", ""),
        api_key=data.get("api_key", ""),
        pack_variant=data.get("pack", defaults.pack_variant),
        turns=data.get("turns", defaults.turns),
        trajectories_per_task=data.get("trajectories_per_task", defaults.trajectories_per_task),
        target_speedup=float(data.get("target_speedup", defaults.target_speedup)),
        temperature=float(data.get("temperature", defaults.temperature)),
        max_output_tokens=data.get("max_output_tokens", defaults.max_output_tokens),
        request_timeout=float(data.get("request_timeout", defaults.request_timeout)),
        max_retries=data.get("max_retries", defaults.max_retries),
        language=data.get("language", defaults.language),
    )


@api_endpoint(methods=("POST",), auth=True)
def api_runs(request: HttpRequest) -> JsonResponse:
    try:
        v = api_version(request)
        run = services.run_create(user=request.api_user, request=_run_request(read_json(request)))
    except ValueError as exc:
        return json_error(str(exc), 400)
    except RunRefused as exc:
        return json_refusal(exc.body(), exc.status, exc.retry_after)
    document = selectors.run_document(selectors.run_detail(run.id, user=request.api_user), v=v)
    response = JsonResponse(document, status=201)
    response["Location"] = same_version_path(request, reverse("agent:api_run", args=[run.id]))
    return response


@api_endpoint(methods=("GET",), auth=False)
def api_run(request: HttpRequest, run_id: int) -> JsonResponse:
    viewer = request.api_user or request.user
    try:
        run = selectors.run_detail(run_id, user=viewer)
    except Http404:
        return json_error("no such run", 404)
    try:
        v = api_version(request)
    except ValueError as exc:
        return json_error(str(exc), 400)
    document = selectors.run_document(run, v=v)
    document["final"] = not run.is_active
    document["evaluation_budget"] = budget.run_budget(run, viewer=viewer)
    document["running_turns"] = sum(
        1 for t in document["trajectories"] for turn in t["turns"] if turn["state"] in TURN.active
    )
    return JsonResponse(document)
