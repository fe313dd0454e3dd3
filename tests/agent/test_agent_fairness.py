"""One hanging endpoint starved everyone's runs. A run asking for `request_timeout: 3600,
max_retries: 10` against an endpoint that never answers held the only `agent` worker; cancelling did not end
the call in flight. Now the operator's caps bound every call whatever the run asks, cancellation ends a call in
flight, and each user holds at most AGENT_MAX_CALLS_PER_USER places in the queue, so another user's run
finishes with a single agent worker. Real HTTP (the replay server), real Redis and RQ."""

from __future__ import annotations

import threading
import time

import django_rq
import pytest
from django.db import connections
from django.test import override_settings

from portal.agent import services
from portal.agent.models import ModelRun, Trajectory, Turn
from portal.agent.services import RunRefused, RunRequest, endpoint_config
from tests.support.agent_support import API_KEY, HANG, LOOP_SETTINGS, NO_CODE, replay  # noqa: F401 - fixture
from tests.support.factories import GEMM, make_user, sync_catalog
from tests.support.rq_workers import PromptSimpleWorker

pytestmark = pytest.mark.django_db(transaction=True)
# The run may ask for an hour and ten retries (the form's old maxima); the step's wall clock caps it.
GENEROUS = {"AGENT_REQUEST_TIMEOUT_MAX_S": 3600.0, "AGENT_MAX_RETRIES_MAX": 10}
# How long a test waits, beside the worker, for what it then checks: a precondition, not a measurement (the wait
# also ends when the worker does).
PRECONDITION_WAIT_S = 240.0


@pytest.fixture
def users():
    sync_catalog()
    return make_user("alice"), make_user("bob")


def _start(user, server, tasks, **kwargs) -> ModelRun:
    fields = {"turns": 2, "trajectories_per_task": 1, "request_timeout": 3600.0, "max_retries": 10, **kwargs}
    return services.run_create(
        user=user,
        request=RunRequest(
            base_url=server.base_url, model="replay-model", arch="sm_90a", task_slugs=tasks, api_key=API_KEY, **fields
        ),
    )


def _watch(observe) -> threading.Thread:
    """Run `observe()` beside the worker (RQ's worker wants the main thread), on its own connection."""

    def target() -> None:
        try:
            observe()
        finally:
            connections.close_all()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def _one_agent_worker() -> float:
    """A single agent worker until its queue is empty; returns the seconds it took."""
    started = time.monotonic()
    django_rq.get_worker("agent", worker_class=PromptSimpleWorker).work(burst=True)
    return time.monotonic() - started


def _wait_for(predicate, timeout: float) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():
            return time.monotonic() - started
        time.sleep(0.05)
    return None


@override_settings(**LOOP_SETTINGS, **GENEROUS, AGENT_CALL_WALL_MAX_S=0.75, AGENT_MAX_CALLS_PER_USER=1)
def test_a_hanging_endpoint_does_not_starve_another_users_run(users, replay):  # noqa: F811
    alice, bob = users
    hanging = replay({"turns": [HANG]})
    answering = replay({"turns": [NO_CODE]})
    alice_run = _start(alice, hanging, [GEMM], trajectories_per_task=8)  # 8 calls that never get an answer
    bob_run = _start(bob, answering, [GEMM])
    seen: dict = {}
    worker_done = threading.Event()

    def observe() -> None:
        _wait_for(
            lambda: worker_done.is_set() or ModelRun.objects.get(id=bob_run.id).state == ModelRun.State.DONE,
            timeout=PRECONDITION_WAIT_S,
        )
        seen["alice_still_running"] = Trajectory.objects.filter(run=alice_run, state=Trajectory.State.RUNNING).count()

    watcher = _watch(observe)
    _one_agent_worker()
    worker_done.set()
    watcher.join(timeout=PRECONDITION_WAIT_S)
    bob_run.refresh_from_db()
    assert bob_run.state == ModelRun.State.DONE, "bob's run did not finish while alice's endpoint hung"
    # Bob went ahead of most of alice's queued calls (one place each), not behind all eight of them: counted by the
    # endpoint's own record of when each of alice's calls arrived, so a slow machine moves no figure here.
    alice_calls_before_bob_finished = sum(1 for r in hanging.requests if r["at"] < bob_run.finished_at.timestamp())
    # One place each in the queue: alice's first call, then bob's two turns with one or two of alice's between them
    # (whether her next step or his next turn joins the queue first); all eight when bob waited behind her.
    assert alice_calls_before_bob_finished in (1, 2, 3), alice_calls_before_bob_finished
    assert seen["alice_still_running"] >= 5
    turns = Turn.objects.filter(trajectory__run=alice_run)
    assert all("wall-clock cap" in t.error for t in turns)
    assert all(t.state == Turn.State.FAILED for t in turns)


# The cancel test's call cap: a call the cancel did not end runs this long, so the test tells the two apart.
CANCEL_TEST_WALL_S = 60.0
# How long the test waits for the call to reach the endpoint: a precondition, not a measurement. A worker that
# starts cold on a loaded 2-core machine takes 8 to 33 s to get there (the OpenAI SDK's import, the claim, the
# request; two CPU hogs beside it, 2026-12-04); a shorter wait cancels before the call and fails the test.
IN_FLIGHT_WAIT_S = 240.0


@override_settings(**LOOP_SETTINGS, **GENEROUS, AGENT_CALL_WALL_MAX_S=CANCEL_TEST_WALL_S, AGENT_CANCEL_POLL_S=0.2)
def test_cancelling_ends_the_model_call_in_flight(users, replay):  # noqa: F811
    """The cancel ends the call in flight, and promptly: within 5 s, or within the time the same worker took to
    get its call to the endpoint when that was longer (a loaded machine slows both alike); never at the cap."""
    alice, _ = users
    hanging = replay({"turns": [HANG]})
    run = _start(alice, hanging, [GEMM], max_retries=0)
    seen: dict = {}
    worker_done = threading.Event()
    worker_started = time.monotonic()

    def cancel_once_the_call_is_in_flight() -> None:
        in_flight = _wait_for(lambda: len(hanging.requests) == 1 or worker_done.is_set(), timeout=IN_FLIGHT_WAIT_S)
        seen["requests_before_cancel"] = len(hanging.requests)
        seen["cancelled_at"] = time.monotonic()
        seen["startup"] = seen["cancelled_at"] - worker_started if in_flight is not None else None
        seen["cancelled"] = services.run_cancel(run=ModelRun.objects.get(id=run.id))

    watcher = _watch(cancel_once_the_call_is_in_flight)
    _one_agent_worker()
    ended_at = time.monotonic()
    worker_done.set()
    watcher.join(timeout=IN_FLIGHT_WAIT_S)
    assert not watcher.is_alive()
    assert seen["requests_before_cancel"] == 1 and seen["cancelled"], seen
    took = ended_at - seen["cancelled_at"]
    assert took < max(5.0, seen["startup"]), seen  # not the cap, nor the hour the run asked for
    assert took < CANCEL_TEST_WALL_S / 2, seen
    (turn,) = Turn.objects.filter(trajectory__run=run)
    assert turn.state == Turn.State.FAILED and "the run was cancelled" in turn.error
    assert len(hanging.requests) == 1  # no retry after the cancel


@override_settings(**LOOP_SETTINGS, AGENT_REQUEST_TIMEOUT_MAX_S=600.0, AGENT_MAX_RETRIES_MAX=3)
def test_call_caps_hold_whatever_the_run_asks(users, replay):  # noqa: F811
    alice, _ = users
    server = replay({"turns": [NO_CODE]})
    with pytest.raises(RunRefused, match="request timeout"):
        _start(alice, server, [GEMM], max_retries=0)
    with pytest.raises(RunRefused, match="retries must be between 0 and 3"):
        _start(alice, server, [GEMM], request_timeout=60.0)
    run = _start(alice, server, [GEMM], request_timeout=60.0, max_retries=1)
    # A run stored before the caps (or under larger ones) is capped when called.
    ModelRun.objects.filter(id=run.id).update(request_timeout=3600.0, max_retries=10)
    run.refresh_from_db()
    config = endpoint_config(run, "")
    assert (config.request_timeout, config.max_retries) == (600.0, 3)
