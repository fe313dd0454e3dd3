"""Model runs inside the same evaluation budget as uploads. One run with many tasks ×
trajectories queued far more GPU evaluations than the upload cap allowed; now the user's active cap and hourly
budget count every source, the run has its own budget checked before each turn, the API answers 429 with when
it resets, and the run page shows the budget. Real Redis, real RQ, the replay server over real HTTP; the GPU
queue is not drained (no GPU here): evaluations are finished by hand, where a GPU worker would."""

from __future__ import annotations

import json

import django_rq
import pytest
from django.test import override_settings
from django.utils import timezone

from portal.agent import services
from portal.agent.models import ModelRun, Trajectory, Turn
from portal.agent.services import RunRefused, RunRequest
from portal.submissions.models import Evaluation
from tests.support.agent_support import API_KEY, LOOP_SETTINGS, broken_reply, replay  # noqa: F401 - fixture
from tests.support.factories import GEMM, make_token, make_user, starter_source, sync_catalog
from tests.support.rq_workers import PromptSimpleWorker

pytestmark = pytest.mark.django_db(transaction=True)
TASKS = [GEMM, "gemm_n2048_k4096", "gemm_n4096_k4096"]


@pytest.fixture
def alice():
    sync_catalog()
    return make_user("alice")


def _start(user, server, tasks, **kwargs) -> ModelRun:
    fields = {"turns": 2, "trajectories_per_task": 4, "request_timeout": 5.0, "max_retries": 0, **kwargs}
    return services.run_create(
        user=user,
        request=RunRequest(
            base_url=server.base_url, model="replay-model", arch="sm_90a", task_slugs=tasks, api_key=API_KEY, **fields
        ),
    )


def _drain_agent_queue() -> None:
    """Model steps only: the GPU queue keeps what they submitted, as a busy GPU fleet would."""
    django_rq.get_worker("agent", worker_class=PromptSimpleWorker).work(burst=True)


COMPILE_ERROR = {"status": "COMPILE_ERROR", "compile": {"ok": False, "output": "kernel.cu(4): error: not C++"}}


def _finish_active_evaluations() -> int:
    """What a GPU worker does at the end of an evaluation: a verdict (a compile error, so trajectories go on),
    then the evaluation_finished signal."""
    ids = [str(i) for i in Evaluation.objects.filter(state__in=Evaluation.ACTIVE_STATES).values_list("id", flat=True)]
    Evaluation.objects.filter(id__in=ids).update(
        state=Evaluation.State.DONE, verdict=COMPILE_ERROR, status="COMPILE_ERROR", finished_at=timezone.now()
    )
    for evaluation_id in ids:
        services.evaluation_finished_received(evaluation_id=evaluation_id)
    return len(ids)


def _upload(client, token, marker: str):
    body = {"task": GEMM, "arch": "sm_90a", "source": f"// {marker}\n" + starter_source()}
    return client.post(
        "/api/v1/submissions", json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )


@override_settings(**LOOP_SETTINGS, MAX_ACTIVE_EVALUATIONS=4, EVALUATIONS_PER_HOUR=100)
def test_one_run_with_many_trajectories_stays_inside_the_active_cap_shared_with_uploads(client, alice, replay):  # noqa: F811
    """Before: 12 trajectories queued 12 evaluations at once while uploads were refused at 4."""
    server = replay({"turns": [broken_reply()]})
    run = _start(alice, server, TASKS)  # 3 tasks × 4 trajectories
    _drain_agent_queue()
    active = Evaluation.objects.filter(submission__user=alice, state__in=Evaluation.ACTIVE_STATES)
    assert active.count() == 4
    waiting = Turn.objects.filter(trajectory__run=run, state=Turn.State.CALLING_MODEL).exclude(waiting_reason="")
    assert waiting.count() == 8
    assert any("uploads and model turns together" in t.waiting_reason for t in waiting)
    # No model was asked for a kernel that could not be evaluated.
    assert len(server.requests) == 4

    # The same user's upload is refused by the same cap, with when to retry.
    token = make_token(alice)
    refused = _upload(client, token, "upload")
    assert refused.status_code == 429
    body = refused.json()
    assert "uploads and model turns together" in body["error"]
    assert int(refused["Retry-After"]) == body["retry_after"] > 0 and body["resets_at"]

    page = client.get(f"/runs/{run.id}/")
    assert "4 / 128 evaluations of this run" in page.content.decode()
    client.force_login(alice)
    html = client.get(f"/runs/{run.id}/").content.decode()
    assert "4 / 4 evaluations queued or running" in html and "8 turns waiting" in html
    document = client.get(f"/api/v1/runs/{run.id}").json()
    assert document["evaluation_budget"]["used"] == 4 and document["evaluation_budget"]["limit"] == 128

    # Evaluations finishing wake the waiting turns, never more than the cap at a time, until the run ends.
    rounds = 0
    while ModelRun.objects.get(id=run.id).is_active and rounds < 30:
        rounds += 1
        _finish_active_evaluations()
        _drain_agent_queue()
        assert active.count() <= 4
    run.refresh_from_db()
    assert run.state in (ModelRun.State.DONE, ModelRun.State.FAILED)
    assert Turn.objects.filter(trajectory__run=run).exclude(evaluation=None).count() == 24  # 12 × 2 turns


@override_settings(**LOOP_SETTINGS, MAX_ACTIVE_EVALUATIONS=10, EVALUATIONS_PER_HOUR=3)
def test_the_hourly_budget_counts_uploads_and_model_turns_together(client, alice, replay):  # noqa: F811
    token = make_token(alice)
    assert _upload(client, token, "1").status_code == 201
    assert _upload(client, token, "2").status_code == 201
    server = replay({"turns": [broken_reply()]})
    run = _start(alice, server, [GEMM], trajectories_per_task=2)
    _drain_agent_queue()
    turns = list(Turn.objects.filter(trajectory__run=run).order_by("trajectory__index"))
    assert turns[0].evaluation is not None  # the third evaluation of the hour
    assert turns[1].evaluation is None and "hourly limit reached" in turns[1].waiting_reason
    refused = _upload(client, token, "3")
    assert refused.status_code == 429 and "hourly limit reached" in refused.json()["error"]
    assert 3500 < int(refused["Retry-After"]) <= 3601


@override_settings(**LOOP_SETTINGS, AGENT_RUN_EVALUATION_BUDGET=3, MAX_ACTIVE_EVALUATIONS=10)
def test_the_run_budget_is_checked_before_each_turn_and_stops_with_the_reason(alice, replay):  # noqa: F811
    server = replay({"turns": [broken_reply()]})
    with pytest.raises(RunRefused, match="need at least 4 evaluations; a run may start at most 3"):
        _start(alice, server, [GEMM], trajectories_per_task=4)
    run = _start(alice, server, [GEMM], trajectories_per_task=2, turns=4)
    for _ in range(6):
        _drain_agent_queue()
        _finish_active_evaluations()
    run.refresh_from_db()
    assert Turn.objects.filter(trajectory__run=run).exclude(evaluation=None).count() == 3
    assert not run.is_active
    stopped = Trajectory.objects.filter(run=run, stop_reason=Trajectory.StopReason.BUDGET_EXHAUSTED)
    assert stopped.count() >= 1
    assert all("evaluation budget (3 evaluations) is used up" in t.stop_message for t in stopped)


@override_settings(**LOOP_SETTINGS, AGENT_MAX_ACTIVE_RUNS=1)
def test_the_runs_api_answers_429_with_retry_after(client, alice, replay):  # noqa: F811
    server = replay({"turns": [broken_reply()]})
    token = make_token(alice)
    body = {"base_url": server.base_url, "model": "m", "arch": "sm_90a", "tasks": [GEMM], "trajectories_per_task": 1}
    post = lambda: client.post(  # noqa: E731
        "/api/v1/runs", json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert post().status_code == 201
    refused = post()
    assert refused.status_code == 429 and "still queued or running" in refused.json()["error"]
    assert int(refused["Retry-After"]) == refused.json()["retry_after"] > 0
