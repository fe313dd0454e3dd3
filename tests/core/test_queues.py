"""django-rq against a real Redis: the four queues exist, jobs run, rqstats reports them."""

from __future__ import annotations

import django_rq
import pytest
from django.core.management import call_command

from portal.core import jobs


def test_queue_names():
    from django.conf import settings

    assert set(settings.RQ_QUEUES) == {"gpu-sm90", "gpu-sm100", "agent", "default"}


def test_gpu_queue_names_come_from_the_architectures():
    from django.conf import settings

    from evaluator.both_sides.arches import ARCHES
    from portal.agent.queueing import QUEUE

    assert settings.GPU_QUEUE_NAMES == tuple(arch.queue for arch in ARCHES.values())
    assert settings.RQ_QUEUE_NAMES == (*settings.GPU_QUEUE_NAMES, QUEUE, "default")
    assert set(settings.RQ_QUEUES) == set(settings.RQ_QUEUE_NAMES)


@pytest.mark.django_db(transaction=True)
def test_job_round_trip_through_real_redis():
    queue = django_rq.get_queue("default")
    job = queue.enqueue(jobs.ping, "hello")
    assert queue.count == 1
    worker = django_rq.get_worker("default")
    worker.work(burst=True)
    job.refresh()
    assert job.is_finished and job.return_value() == "pong: hello"


def test_rqstats_lists_every_queue(capsys):
    django_rq.get_queue("gpu-sm90").enqueue(jobs.ping, "x")
    call_command("rqstats")
    out = capsys.readouterr().out
    for name in ("gpu-sm90", "gpu-sm100", "agent", "default"):
        assert name in out


def test_rq_dashboard_is_reachable_from_the_admin(admin_client):
    index = admin_client.get("/admin/").content.decode()
    assert "/admin/django_rq/dashboard/" in index
    page = admin_client.get("/admin/django_rq/dashboard/")
    assert page.status_code == 200
    assert "gpu-sm90" in page.content.decode()
