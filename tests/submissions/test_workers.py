"""GPU worker registration and the workers page; GPU detection parses nvidia-smi without touching CUDA."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from portal.submissions.gpu import parse_nvidia_smi
from portal.submissions.models import GpuWorker

NVIDIA_SMI = """0, NVIDIA H200, GPU-2f1d8a3e-aaaa-bbbb-cccc-000000000000, 580.159.04, 9.0
1, NVIDIA B200, GPU-9c0ffee0-aaaa-bbbb-cccc-000000000001, 580.159.04, 10.0
2, NVIDIA L4, GPU-0000, 580.159.04, 8.9
"""


def test_parse_nvidia_smi_maps_capabilities_to_arches():
    gpus = parse_nvidia_smi(NVIDIA_SMI)
    assert [g.name for g in gpus] == ["NVIDIA H200", "NVIDIA B200", "NVIDIA L4"]
    assert [g.arch.name if g.arch else None for g in gpus] == ["sm_90a", "sm_100a", None]
    assert gpus[0].uuid.startswith("GPU-2f1d")
    assert parse_nvidia_smi("No devices were found\n") == []


@pytest.mark.django_db
def test_gpu_worker_refuses_to_start_without_a_gpu(monkeypatch):
    monkeypatch.setattr("portal.submissions.management.commands.gpu_worker.detect_gpus", lambda: [])
    with pytest.raises(CommandError, match="no NVIDIA GPU"):
        call_command("gpu_worker")
    with pytest.raises(CommandError, match="needs --arch"):
        call_command("gpu_worker", "--cpu-stages-only")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("allow_unsandboxed_without_bwrap")
def test_cpu_only_worker_registers_and_the_workers_page_lists_live_ones(client):
    call_command("gpu_worker", "--cpu-stages-only", "--arch", "sm_90a", "--burst", "--name", "box:cpu:1")
    worker = GpuWorker.objects.get(name="box:cpu:1")
    assert worker.queues == "gpu-sm90" and worker.stopped_at is not None
    assert worker.mode == "cpu-stages-only, sandbox: bubblewrap"  # make test installs bubblewrap
    GpuWorker.objects.create(
        name="h200-a:0:7",
        host="h200-a",
        arch="sm_90a",
        queues="gpu-sm90",
        gpu_name="NVIDIA H200",
        heartbeat_at=timezone.now(),
    )
    GpuWorker.objects.create(
        name="gone:0:9", host="gone", arch="sm_90a", queues="gpu-sm90", heartbeat_at=timezone.now() - timedelta(hours=1)
    )
    html = client.get("/workers/").content.decode()
    assert "h200-a:0:7" in html and "NVIDIA H200" in html
    assert "gone:0:9" not in html and "box:cpu:1" not in html
    for queue in ("gpu-sm90", "gpu-sm100", "agent", "default"):
        assert f"<code>{queue}</code>" in html


@pytest.mark.django_db(transaction=True)
def test_worker_refuses_without_a_sandbox_unless_an_operator_allows_it(monkeypatch):
    monkeypatch.setenv("EVALUATOR_BWRAP", "/nonexistent/bwrap")  # as on a host without bubblewrap
    monkeypatch.delenv("EVALUATOR_ALLOW_UNSANDBOXED", raising=False)
    with pytest.raises(CommandError, match="not serving: bubblewrap .bwrap. is not installed"):
        call_command("gpu_worker", "--cpu-stages-only", "--arch", "sm_90a", "--burst")
    assert not GpuWorker.objects.exists()
    if os.geteuid() == 0:
        # A root worker runs unsandboxed candidates as the sandbox user, who must be able to start Python: this
        # machine's may sit under /root, so the allowed run uses the system's (evaluator/isolation/jail.py check_reachable).
        import evaluator.isolation.jail

        monkeypatch.setattr(evaluator.isolation.jail.sys, "executable", "/usr/bin/python3")
    call_command(
        "gpu_worker", "--cpu-stages-only", "--arch", "sm_90a", "--burst", "--allow-unsandboxed", "--name", "risky"
    )
    assert GpuWorker.objects.get(name="risky").mode == "cpu-stages-only, UNSANDBOXED"


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("allow_unsandboxed_without_bwrap")
def test_worker_hands_its_compile_cache_to_the_evaluator(monkeypatch, settings, tmp_path):
    monkeypatch.setenv("EVALUATOR_COMPILE_CACHE", "")  # restored after the test: the command sets it
    settings.EVALUATOR_COMPILE_CACHE = str(tmp_path / "cc")
    call_command("gpu_worker", "--cpu-stages-only", "--arch", "sm_90a", "--burst", "--name", "box:cpu:cc")
    assert os.environ["EVALUATOR_COMPILE_CACHE"] == str(tmp_path / "cc")
