"""Fixit's reasoning-teacher explanations (`POST /api/v1/fixit/repair-runs/<id>/explanations`) must not go
straight onto the `agent` queue, one job per repair, outside the per-user cap on model calls: a repair run with
a dozen repairs would put a dozen calls of up to AGENT_CALL_WALL_MAX_S each before every other user. Each
explanation takes one of the user's AGENT_MAX_CALLS_PER_USER places, counted with their model steps, through the
agent loop's own scheduler (portal/agent/scheduling.py); the rest wait in the database and are queued as places
free up; a job Redis lost is queued again by the reconcile tick, then failed. Real Redis and RQ, the replay
server as the teacher's endpoint over real HTTP."""

from __future__ import annotations

import io

import django_rq
import pytest
from django.core.management import call_command
from django.test import Client, override_settings

from portal.agent import crypto
from portal.agent.models import ModelRun, Trajectory, Turn
from portal.catalog.models import Task
from portal.fixit.models import RepairExplanation
from tests.support.agent_support import (  # noqa: F401 - fixture
    API_KEY,
    LOOP_SETTINGS,
    NO_CODE,
    ended,
    fenced,
    replay,
    start_replay_run,
)
from tests.support.factories import GEMM, make_token, make_user, sync_catalog
from tests.support.fixit_support import stored_trajectory
from tests.support.rq_workers import PromptSimpleWorker

pytestmark = pytest.mark.django_db(transaction=True)
EXPLANATION = {"content": "The first kernel never closed its brace; closing it fixes it."}
# The explanation request is the conversation's third assistant turn (task, failure, feedback, fix, question).
TEACHER = {"turns": [NO_CODE, NO_CODE, EXPLANATION]}


@pytest.fixture
def users(settings, tmp_path):
    settings.FIXIT_DIR = tmp_path / "fixit"
    sync_catalog()
    return make_user("alice"), make_user("bob")


def _repair_run(user, server, repairs: int) -> ModelRun:
    """A finished repair run whose `repairs` trajectories each repaired one stored failure (a PASSED attempt)."""
    failing = stored_trajectory(user, [{"status": "COMPILE_ERROR", "kernel": "// broken\n"}]).turns.get()
    run = ModelRun.objects.create(
        user=user,
        kind=ModelRun.Kind.REPAIR,
        model="teacher-model",
        display_name="teacher-model",
        base_url=server.base_url,
        api_key_encrypted=crypto.api_key_encrypt(API_KEY),
        arch="sm_90a",
        state="done",
        request_timeout=5.0,
        max_retries=0,
    )
    task = Task.objects.get(slug=GEMM)
    for index in range(repairs):
        trajectory = Trajectory.objects.create(
            run=run,
            task=task,
            index=index,
            state="done",
            repair_of=failing,
            messages=[{"role": "user", "content": "T"}],
        )
        kernel = f"// fixed {index}\n"
        Turn.objects.create(
            trajectory=trajectory, index=0, state="done", reply=fenced(kernel), kernel=kernel, **ended("PASSED")
        )
    return run


def _ask_for_explanations(user, run: ModelRun) -> list[int]:
    response = Client().post(
        f"/api/v1/fixit/repair-runs/{run.id}/explanations",
        data="{}",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {make_token(user)}",
    )
    assert response.status_code == 202, response.content
    return [e["trajectory"] for e in response.json()["queued"]]


def _agent_jobs() -> list[str]:
    return django_rq.get_queue("agent").get_job_ids()


def _explanation_jobs(run: ModelRun) -> set[str]:
    return {
        f"fixit-explanation-{pk}"
        for pk in RepairExplanation.objects.filter(trajectory__run=run).values_list("id", flat=True)
    }


def _one_agent_worker() -> None:
    django_rq.get_worker("agent", worker_class=PromptSimpleWorker).work(burst=True)


@override_settings(**LOOP_SETTINGS, AGENT_MAX_CALLS_PER_USER=2)
def test_explanations_take_at_most_the_users_places_in_the_agent_queue(users, replay):  # noqa: F811
    """Before: all five explanation jobs were on the `agent` queue at once."""
    alice, _ = users
    teacher = replay(TEACHER)
    run = _repair_run(alice, teacher, repairs=5)
    assert len(_ask_for_explanations(alice, run)) == 5
    assert len(_agent_jobs()) == 2
    waiting = RepairExplanation.objects.exclude(waiting_reason="")
    assert waiting.count() == 3 and "at most 2 queued or running" in waiting.first().waiting_reason
    _one_agent_worker()  # each call that ends queues the user's next waiting one
    assert list(RepairExplanation.objects.values_list("state", flat=True).distinct()) == ["done"]
    assert len(teacher.requests) == 5 and _agent_jobs() == []


@override_settings(**LOOP_SETTINGS, AGENT_MAX_CALLS_PER_USER=1)
def test_explanations_and_model_steps_share_one_cap(users, replay):  # noqa: F811
    """Before: explanations ignored the user's model steps (and the steps ignored them): 1 + 3 calls queued."""
    alice, _ = users
    student = replay({"turns": [NO_CODE]})
    model_run = start_replay_run(alice, student, model="student-model", max_retries=0)
    (step,) = _agent_jobs()
    assert step.startswith("agent-turn-")
    repair_run = _repair_run(alice, replay(TEACHER), repairs=3)
    _ask_for_explanations(alice, repair_run)
    assert _agent_jobs() == [step]  # the model step holds alice's one place: the explanations wait
    assert RepairExplanation.objects.exclude(waiting_reason="").count() == 3
    # The other way round: while an explanation holds the place, a new model step waits.
    _one_agent_worker()
    assert not RepairExplanation.objects.filter(state="queued").exists()
    assert Turn.objects.filter(trajectory__run=model_run).exclude(state="calling_model").exists()
    more = _repair_run(alice, replay(TEACHER), repairs=1)
    _ask_for_explanations(alice, more)
    second_run = start_replay_run(alice, student, model="student-model-2", max_retries=0)
    assert set(_agent_jobs()) == _explanation_jobs(more)
    assert "waiting for your other model calls" in Turn.objects.get(trajectory__run=second_run).waiting_reason


@override_settings(**LOOP_SETTINGS, AGENT_MAX_CALLS_PER_USER=2)
def test_another_users_explanation_is_queued_ahead_of_a_flood(users, replay):  # noqa: F811
    """Before: bob's one explanation waited behind all twelve of alice's (each up to 900 s)."""
    alice, bob = users
    teacher = replay(TEACHER)
    _ask_for_explanations(alice, _repair_run(alice, teacher, repairs=12))
    bobs_run = _repair_run(bob, teacher, repairs=1)
    _ask_for_explanations(bob, bobs_run)
    jobs = _agent_jobs()
    (bobs_job,) = _explanation_jobs(bobs_run)
    assert len(jobs) == 3 and jobs.index(bobs_job) == 2


@override_settings(**LOOP_SETTINGS, AGENT_MAX_CALLS_PER_USER=1, AGENT_STEP_MAX_ATTEMPTS=2)
def test_a_lost_explanation_job_is_queued_again_then_failed_and_frees_its_place(users, replay):  # noqa: F811
    """Without this, an explanation whose job Redis lost would hold one of its user's places for ever."""
    alice, _ = users
    run = _repair_run(alice, replay(TEACHER), repairs=2)
    _ask_for_explanations(alice, run)
    first, second = RepairExplanation.objects.order_by("id")
    assert _agent_jobs() == [f"fixit-explanation-{first.id}"]

    def lose_the_queue_and_reconcile() -> str:
        django_rq.get_connection("agent").flushdb()  # Redis restarted without its data
        out = io.StringIO()
        call_command("reconcile", stdout=out)
        return out.getvalue()

    assert "explanations_requeued: 1" in lose_the_queue_and_reconcile()
    assert _agent_jobs() == [f"fixit-explanation-{first.id}"]
    assert "explanations_failed: 1" in lose_the_queue_and_reconcile()  # queued twice already: AGENT_STEP_MAX_ATTEMPTS
    first.refresh_from_db()
    assert first.state == "failed" and "lost 2 times" in first.error
    assert _agent_jobs() == [f"fixit-explanation-{second.id}"]  # the place went to the next waiting call
