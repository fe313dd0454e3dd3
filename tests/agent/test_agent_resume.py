"""Crash and resume: a real `rqworker agent` killed with SIGKILL while the model is thinking loses no completed
turn, and after the reconcile job the loop goes on; a reply that was stored is never requested again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta

import django_rq
import pytest
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from portal.agent import services
from portal.agent.client import ModelReply
from portal.agent.models import ModelRun, Trajectory, Turn
from tests.support.agent_support import FERNET_KEY, LOOP_SETTINGS, NO_CODE, drain, replay, start_replay_run  # noqa: F401
from tests.support.factories import REPO, make_user, sync_catalog

pytestmark = pytest.mark.django_db(transaction=True)
SLOW_THEN_FAST = {"attempts": [{"delay": 60, "content": "slow thoughts, no code"}, {"content": "fast, no code"}]}


@pytest.fixture
def alice():
    sync_catalog()
    return make_user("alice")


def _start(user, server, **kwargs) -> ModelRun:
    return start_replay_run(user, server, **{"turns": 3, "request_timeout": 120.0, "max_retries": 0, **kwargs})


@override_settings(**LOOP_SETTINGS)
def test_worker_killed_during_a_slow_reply_resumes_without_losing_or_repeating_turns(alice, replay):  # noqa: F811
    server = replay({"turns": [NO_CODE, SLOW_THEN_FAST, NO_CODE]})
    run = _start(alice, server)
    db = settings.DATABASES["default"]["NAME"]
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{db}",
        "REDIS_URL": settings.REDIS_URL,
        "DEBUG": "1",
        "AGENT_FERNET_KEY": FERNET_KEY,
        "AGENT_ENDPOINT_ALLOWLIST": "127.0.0.1/32",
    }
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "rqworker", "agent", "--name", "doomed-agent"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(r["turn"] == 1 for r in server.requests):
            time.sleep(0.1)
        assert any(r["turn"] == 1 for r in server.requests), "the worker never reached the slow turn"
        os.killpg(worker.pid, signal.SIGKILL)  # the worker and its work horse die mid-request
        worker.wait(timeout=10)
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)

    first = Turn.objects.get(trajectory__run=run, index=0)
    assert (first.state, first.published_status, first.reply) == (
        Turn.State.DONE,
        Turn.STATUS_NO_KERNEL,
        NO_CODE["content"],
    )
    stuck = Turn.objects.get(trajectory__run=run, index=1)
    assert stuck.state == Turn.State.CALLING_MODEL and stuck.replied_at is None and stuck.lease_until is not None

    # While the lease of the dead worker's call runs, nothing is repeated; after it, the step is queued again.
    assert services.agent_reconcile()["model_steps"] == 0
    later = stuck.lease_until + timedelta(seconds=1)
    assert services.agent_reconcile(now=later)["model_steps"] == 1
    drain()  # a new worker

    run.refresh_from_db()
    turns = list(Turn.objects.filter(trajectory__run=run).order_by("index"))
    assert [(t.index, t.state, t.reply) for t in turns] == [
        (0, Turn.State.DONE, NO_CODE["content"]),
        (1, Turn.State.DONE, "fast, no code"),
        (2, Turn.State.DONE, NO_CODE["content"]),
    ]
    assert turns[0].finished_at == first.finished_at  # the completed turn was not touched
    assert turns[1].step_attempts == 2
    assert [(r["turn"], r["attempt"]) for r in server.requests] == [(0, 0), (1, 0), (1, 1), (2, 0)]
    trajectory = Trajectory.objects.get(run=run)
    assert trajectory.stop_reason == "turns_exhausted" and run.state == ModelRun.State.DONE
    assert [m["role"] for m in trajectory.messages].count("assistant") == 3


@override_settings(**LOOP_SETTINGS)
def test_a_stored_reply_is_not_requested_again_after_its_job_was_lost(alice, replay):  # noqa: F811
    server = replay({"turns": [NO_CODE]})
    run = _start(alice, server, turns=2)
    turn = Turn.objects.get(trajectory__run=run, index=0)
    # The crash: the reply was stored, then the worker died before submitting, and Redis lost the job.
    assert services._turn_store_reply(
        turn,
        ModelReply(
            content="stored before the crash",
            finish_reason="stop",
            prompt_tokens=7,
            completion_tokens=3,
            reasoning_tokens=None,
            latency_s=1.5,
            attempts=1,
        ),
    )
    django_rq.get_connection("agent").flushdb()
    counts = services.agent_reconcile(now=timezone.now())
    assert counts["model_steps"] == 1
    drain()
    turns = list(Turn.objects.filter(trajectory__run=run).order_by("index"))
    assert (turns[0].reply, turns[0].published_status, turns[0].prompt_tokens) == (
        "stored before the crash",
        "NO_KERNEL",
        7,
    )
    assert [r["turn"] for r in server.requests] == [1]  # only the next turn was requested
    assert Trajectory.objects.get(run=run).messages[2] == {"role": "assistant", "content": "stored before the crash"}


@override_settings(**LOOP_SETTINGS, AGENT_STEP_MAX_ATTEMPTS=1)
def test_a_model_step_that_keeps_dying_ends_the_trajectory_with_a_reason(alice, replay):  # noqa: F811
    server = replay({"turns": [NO_CODE]})
    run = _start(alice, server)
    turn = Turn.objects.get(trajectory__run=run, index=0)
    # Two earlier starts whose workers died (lease expired), as the reconcile job would find them.
    Turn.objects.filter(id=turn.id).update(step_attempts=1, lease_until=timezone.now() - timedelta(seconds=5))
    django_rq.get_connection("agent").flushdb()
    services.agent_reconcile()
    drain()
    turn.refresh_from_db()
    assert turn.state == Turn.State.FAILED and "started 1 times without finishing" in turn.error
    trajectory = Trajectory.objects.get(run=run)
    assert trajectory.stop_reason == "step_crashed"
    run.refresh_from_db()
    assert run.state == ModelRun.State.FAILED and "every trajectory ended in an error" in run.error
    assert server.requests == []
