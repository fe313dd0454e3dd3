"""One worker per GPU on a host of several: each worker is bound to its GPU by UUID, the evaluator child it starts
sees that GPU only, and a GPU another live worker of the host serves is refused (a stale or stopped registration
does not count). Through the command's real start path on the real database; the host's GPUs, which nvidia-smi
reports, are the only fake."""

from __future__ import annotations

import os
import socket
import stat
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from portal.submissions import runner
from portal.submissions.gpu import GpuInfo
from portal.submissions.management.commands import gpu_worker
from portal.submissions.models import GpuWorker
from portal.submissions.rq_worker import RequeueOnStopWorker

UUIDS = ("GPU-11111111-aaaa-bbbb-cccc-000000000000", "GPU-22222222-aaaa-bbbb-cccc-111111111111")
HOST = socket.gethostname()

pytestmark = pytest.mark.usefixtures("allow_unsandboxed_without_bwrap")


@pytest.fixture
def two_gpus(monkeypatch):
    """Two H200s, as nvidia-smi lists them on this fake host; the worker's pin of CUDA_VISIBLE_DEVICES is undone
    after the test. The unit's environment names both GPUs: the worker must narrow it to its own."""
    gpus = [GpuInfo(str(i), "NVIDIA H200", uuid, "580.65.06", (9, 0)) for i, uuid in enumerate(UUIDS)]
    monkeypatch.setattr(gpu_worker, "detect_gpus", lambda: gpus)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.delenv("NVIDIA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(gpu_worker, "RequeueOnStopWorker", _PromptWorker)
    return gpus


class _PromptWorker(RequeueOnStopWorker):
    """The worker's own class, ending its burst promptly (tests/support/rq_workers.py says why)."""

    def unsubscribe(self) -> None:
        if self.pubsub_thread:
            self.pubsub_thread.stop(timeout=0)
        super().unsubscribe()


def _registered(name: str, uuid: str, *, host: str = HOST, age_s: float = 0, stopped: bool = False) -> GpuWorker:
    now = timezone.now()
    return GpuWorker.objects.create(
        name=name,
        host=host,
        arch="sm_90a",
        queues="gpu-sm90",
        gpu_uuid=uuid,
        heartbeat_at=now - timedelta(seconds=age_s),
        stopped_at=now if stopped else None,
    )


@pytest.mark.django_db
def test_a_gpu_a_live_worker_of_this_host_serves_is_refused(two_gpus):
    _registered("first", UUIDS[1])
    with pytest.raises(CommandError, match=f"not serving: GPU {UUIDS[1]} of .* already served by worker first"):
        call_command("gpu_worker", "--gpu", "1", "--burst", "--name", "second")
    assert not GpuWorker.objects.filter(name="second").exists()  # refused before registering
    with pytest.raises(CommandError, match="already served by worker first"):  # named by UUID: the same GPU
        call_command("gpu_worker", "--gpu", UUIDS[1], "--burst", "--name", "second")


@pytest.mark.django_db(transaction=True)
def test_stale_stopped_and_other_gpus_registrations_do_not_block(two_gpus):
    _registered("crashed", UUIDS[1], age_s=3600)  # no heartbeat for an hour: gone
    _registered("ended", UUIDS[1], stopped=True)
    _registered("neighbour", UUIDS[0])  # the other GPU's live worker
    _registered("elsewhere", UUIDS[1], host="another-host")
    call_command("gpu_worker", "--gpu", "1", "--burst", "--name", "second")
    worker = GpuWorker.objects.get(name="second")
    assert (worker.gpu_uuid, worker.gpu_index, worker.queues) == (UUIDS[1], "1", "gpu-sm90")
    assert worker.stopped_at is not None  # served its (empty) queue and stopped


@pytest.mark.django_db
def test_of_two_workers_that_passed_the_first_check_together_the_later_gives_way():
    """Both registered before either looked again: exactly one serves, the later one is refused and stopped."""
    early, late = _registered("b-early", UUIDS[0]), _registered("a-late", UUIDS[0])
    GpuWorker.objects.filter(pk=late.pk).update(started_at=early.started_at + timedelta(milliseconds=5))
    gpu_worker._refuse_a_served_gpu(HOST, UUIDS[0], "b-early", registered=True)
    with pytest.raises(CommandError, match="already served by worker b-early"):
        gpu_worker._refuse_a_served_gpu(HOST, UUIDS[0], "a-late", registered=True)
    assert GpuWorker.objects.get(name="a-late").stopped_at is not None
    assert GpuWorker.objects.get(name="b-early").stopped_at is None
    # Registered in the same instant: the name decides, still exactly one.
    tie = _registered("c-tie", UUIDS[1])
    _registered("d-tie", UUIDS[1])
    GpuWorker.objects.filter(name="d-tie").update(started_at=tie.started_at)
    gpu_worker._refuse_a_served_gpu(HOST, UUIDS[1], "c-tie", registered=True)
    with pytest.raises(CommandError, match="already served by worker c-tie"):
        gpu_worker._refuse_a_served_gpu(HOST, UUIDS[1], "d-tie", registered=True)


@pytest.mark.django_db(transaction=True)
def test_the_evaluator_child_of_a_worker_sees_only_the_workers_gpu(two_gpus, tmp_path):
    """The env the runner hands the evaluator child, captured by a fake interpreter at the process edge."""
    call_command("gpu_worker", "--gpu", "1", "--burst", "--name", "gpu1")
    assert os.environ["CUDA_VISIBLE_DEVICES"] == UUIDS[1]
    captured = tmp_path / "child.env"
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\nenv > {captured}\n")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    result = runner.run_evaluator(
        source="// k\n",
        task="t",
        arch="sm_90a",
        stages="all",
        workdir=tmp_path / "job",
        tasks_root=tmp_path,
        timeout=30,
        on_events=lambda events: True,
        python=str(python),
        poll_seconds=0.05,
    )
    assert result.verdict is None  # the fake wrote no verdict
    env = dict(line.split("=", 1) for line in captured.read_text().splitlines() if "=" in line)
    devices = {k: v for k, v in env.items() if k in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")}
    assert devices == {"CUDA_VISIBLE_DEVICES": UUIDS[1]}
