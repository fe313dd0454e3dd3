"""Faults found by the load and fault benchmark (bench/reliability_bench.py), each pinned by a test:
concurrent write transactions on SQLite, Redis away while submissions arrive, and the reconcile loop outliving
a Redis outage."""

from __future__ import annotations

import io
import json
import socket
import threading
import time
from datetime import timedelta
from types import SimpleNamespace

import django_rq
import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection, connections
from django.test import override_settings
from django.utils import timezone
from rq import Queue
from rq.job import Job, JobStatus

from portal.catalog.models import Task
from portal.ops.management.commands import reconcile as reconcile_command
from portal.submissions import queueing, services
from portal.submissions.models import Evaluation, Submission
from tests.support.factories import GEMM, make_token, make_user, starter_source, sync_catalog
from tests.support.rq_workers import PromptSimpleWorker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("allow_unsandboxed_without_bwrap")]


def _dead_redis_url() -> str:
    """A loopback port nothing listens on: connections are refused at once, like a Redis being restarted."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


def _point_rq_at(monkeypatch, url: str) -> None:
    monkeypatch.setattr(
        settings, "RQ_QUEUES", {name: {"URL": url, "DEFAULT_TIMEOUT": 600} for name in settings.RQ_QUEUE_NAMES}
    )


def test_two_submissions_at_once_on_sqlite_both_succeed(monkeypatch):
    """Under load (50 clients, 3 web processes, 2 workers) SQLite answered 'database is locked' at once, and the
    API a 500: a deferred transaction that has read cannot take the write lock after another process committed.
    Here one submission's transaction has read (dedup, limits) when another one commits; both must go through."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite write-lock behaviour only")
    sync_catalog()
    alice, bob = make_user("alice"), make_user("bob")
    task = Task.objects.get(slug=GEMM)
    original = services._check_limits
    alice_has_read = threading.Event()
    bob_finished = threading.Event()

    def check_limits_then_pause(user):
        original(user)  # the transaction has now read
        if user.username == "alice":
            alice_has_read.set()
            # Deferred transactions: bob commits meanwhile and alice's INSERT fails. Immediate ones: bob waits for
            # alice's lock, so this wait simply times out.
            bob_finished.wait(timeout=2)

    monkeypatch.setattr(services, "_check_limits", check_limits_then_pause)
    errors: list[Exception] = []

    def submit(user, source: str, start_after: threading.Event | None = None) -> None:
        try:
            if start_after is not None:
                start_after.wait(timeout=10)
            services.submission_create(user=user, task=task, arch="sm_90a", source=source)
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)
        finally:
            if user.username == "bob":
                bob_finished.set()
            connections.close_all()

    threads = [
        threading.Thread(target=submit, args=(alice, starter_source() + "// alice\n")),
        threading.Thread(target=submit, args=(bob, starter_source() + "// bob\n", alice_has_read)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert sorted(Submission.objects.values_list("user__username", flat=True)) == ["alice", "bob"]


def test_a_submission_is_accepted_and_shown_while_redis_is_down(client, monkeypatch):
    """A Redis restart during the load run turned stored submissions into 500s (the enqueue after commit raised)
    and made status answers fail (queue position). The database is the truth: accept, show, enqueue later."""
    sync_catalog()
    token = make_token(make_user("alice"))
    live = settings.RQ_QUEUES
    _point_rq_at(monkeypatch, _dead_redis_url())
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    body = {"task": GEMM, "arch": "sm_90a", "source": starter_source()}
    response = client.post("/api/v1/submissions", json.dumps(body), content_type="application/json", **headers)
    assert response.status_code == 201, response.content
    shown = response.json()["evaluations"][0]
    assert shown["state"] == "queued" and shown["queue_position"] is None
    again = client.post("/api/v1/submissions", json.dumps(body), content_type="application/json", **headers)
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert client.get(f"/api/v1/submissions/{response.json()['id']}", **headers).status_code == 200

    monkeypatch.setattr(settings, "RQ_QUEUES", live)  # Redis is back, empty of this job
    evaluation = Evaluation.objects.get(id=shown["id"])
    assert not queueing.job_is_pending(evaluation)
    counts = services.evaluation_reconcile(now=timezone.now() + timedelta(minutes=5))
    assert counts["reenqueued"] == 1
    assert queueing.job_is_pending(evaluation)


def test_the_reconcile_loop_outlives_a_redis_outage(monkeypatch):
    """`reconcile --loop` is the one repairer; a round that meets a dead Redis must not end the process."""
    sync_catalog()
    live = settings.RQ_QUEUES
    evaluation = services.submission_create(
        user=make_user("alice"), task=Task.objects.get(slug=GEMM), arch="sm_90a", source=starter_source()
    ).evaluation
    Evaluation.objects.filter(id=evaluation.id).update(created_at=timezone.now() - timedelta(minutes=5))
    connections["default"].close()  # nothing of this thread's state leaks into the command
    import redis

    redis.Redis.from_url(settings.REDIS_URL).flushdb()  # Redis lost the job while it was away
    _point_rq_at(monkeypatch, _dead_redis_url())
    rounds: list[str] = []

    class StopLoop(Exception):
        pass

    def fake_sleep(seconds: float) -> None:
        rounds.append("slept")
        if len(rounds) == 1:
            monkeypatch.setattr(settings, "RQ_QUEUES", live)  # Redis comes back before the next round
        else:
            raise StopLoop

    # Only the command's own sleep: redis-py's retry backoff must keep the real one.
    monkeypatch.setattr(reconcile_command, "time", SimpleNamespace(sleep=fake_sleep))
    with pytest.raises(StopLoop):
        call_command("reconcile", "--loop", stdout=io.StringIO())
    assert rounds == ["slept", "slept"]  # the first round failed on Redis and the loop went on
    assert queueing.job_is_pending(evaluation)  # the second round re-enqueued the lost job


def test_a_job_popped_by_a_worker_that_then_lost_redis_is_enqueued_again():
    """PostgreSQL run: a worker popped a job id from the queue just as Redis shut down and exited before marking
    the job started. After the restart the job's hash still said "queued" but the id was in no queue, so
    reconcile took it for pending and the evaluation stayed queued for ever."""
    sync_catalog()
    with override_settings(EVALUATOR_STAGES="policy"):  # the evaluation's stages are fixed when it is created
        evaluation = services.submission_create(
            user=make_user("alice"), task=Task.objects.get(slug=GEMM), arch="sm_90a", source=starter_source()
        ).evaluation
    queue = django_rq.get_queue(evaluation.queue)
    assert queue.connection.lpop(queue.key).decode() == str(evaluation.id)  # what the worker's dequeue did
    assert Job.fetch(str(evaluation.id), connection=queue.connection).get_status() == JobStatus.QUEUED
    assert not queueing.job_is_pending(evaluation)

    counts = services.evaluation_reconcile(now=timezone.now() + timedelta(minutes=5))
    assert counts["reenqueued"] == 1
    assert queueing.queue_position(evaluation) == 1
    django_rq.get_worker(evaluation.queue, worker_class=PromptSimpleWorker).work(burst=True)
    evaluation.refresh_from_db()
    assert evaluation.state == Evaluation.State.DONE, evaluation.infra_error
    assert evaluation.attempts == 1 and evaluation.verdict is not None


def _queued_evaluation_taken_by_a_worker() -> Evaluation:
    """A queued evaluation whose id a worker has just taken the way RQ 3.0 does (LMOVE into the intermediate list),
    not yet marked started."""
    sync_catalog()
    with override_settings(EVALUATOR_STAGES="policy"):
        evaluation = services.submission_create(
            user=make_user("alice"), task=Task.objects.get(slug=GEMM), arch="sm_90a", source=starter_source()
        ).evaluation
    queue = django_rq.get_queue(evaluation.queue)
    assert Queue.lmove(queue.connection, queue.key, None)[1].decode() == str(evaluation.id)
    assert Job.fetch(str(evaluation.id), connection=queue.connection).get_status() == JobStatus.QUEUED
    return evaluation


def test_a_job_a_worker_is_about_to_start_is_not_enqueued_twice(monkeypatch):
    """PostgreSQL run after fix 4: a worker had moved the id to the queue's intermediate list and not yet marked the
    job started; reconcile looked in that gap, saw a "queued" job in no queue and enqueued it a second time."""
    evaluation = _queued_evaluation_taken_by_a_worker()
    queue = django_rq.get_queue(evaluation.queue)
    worker = django_rq.get_worker(evaluation.queue, worker_class=PromptSimpleWorker)
    waits: list[float] = []

    def worker_starts_the_job_meanwhile(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 1:  # the worker's own next steps: its execution, then "started" in the horse
            job = Job.fetch(str(evaluation.id), connection=queue.connection)
            worker.prepare_execution(job)
            worker.prepare_job_execution(job, remove_from_intermediate_queue=True)
        time.sleep(seconds)

    monkeypatch.setattr(
        queueing, "time", SimpleNamespace(sleep=worker_starts_the_job_meanwhile, monotonic=time.monotonic)
    )
    counts = services.evaluation_reconcile(now=timezone.now() + timedelta(minutes=5))
    assert counts["reenqueued"] == 0
    assert waits  # reconcile did find the id in the intermediate list, and waited
    assert queue.count == 0 and queueing.queue_position(evaluation) is None
    assert Job.fetch(str(evaluation.id), connection=queue.connection).get_status() == JobStatus.STARTED


def test_a_job_left_in_the_intermediate_list_by_a_dead_worker_is_enqueued_again(monkeypatch):
    """A worker that dies (or loses Redis) between taking the id and marking the job started leaves it in the
    intermediate list for ever. After the re-check reconcile enqueues it again and takes it out of that list, so
    RQ's own cleanup cannot later fail the new job, which has the same id."""
    monkeypatch.setattr(queueing, "INTERMEDIATE_RECHECK_SECONDS", 0.5)
    evaluation = _queued_evaluation_taken_by_a_worker()
    queue = django_rq.get_queue(evaluation.queue)
    queue.intermediate_queue.set_first_seen(str(evaluation.id))  # a worker's maintenance pass saw it stuck

    started = time.monotonic()
    counts = services.evaluation_reconcile(now=timezone.now() + timedelta(minutes=5))
    assert counts["reenqueued"] == 1
    assert queueing.queue_position(evaluation) == 1
    assert queue.intermediate_queue.get_job_ids() == []
    assert time.monotonic() - started >= 0.5  # the re-check
    assert queue.intermediate_queue.get_first_seen(str(evaluation.id)) is None
    assert services.evaluation_reconcile(now=timezone.now() + timedelta(minutes=5))["reenqueued"] == 0

    django_rq.get_worker(evaluation.queue, worker_class=PromptSimpleWorker).work(burst=True)
    evaluation.refresh_from_db()
    assert evaluation.state == Evaluation.State.DONE, evaluation.infra_error
    assert evaluation.attempts == 1
