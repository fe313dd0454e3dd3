"""The submit form says what the workers online can do: timing only with a GPU worker of that architecture."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from portal.submissions.models import GpuWorker
from tests.support.factories import make_user, sync_catalog

pytestmark = pytest.mark.django_db


def _worker(name: str, arch: str, mode: str, gpu: str = "", *, age_s: int = 0) -> None:
    GpuWorker.objects.create(
        name=name,
        host="box",
        pid=1,
        arch=arch,
        queues="q",
        mode=mode,
        gpu_name=gpu,
        heartbeat_at=timezone.now() - timedelta(seconds=age_s),
    )


def _capability(page: str, arch: str) -> str:
    start = page.index(f'data-arch="{arch}"')
    return page[start : page.index("</li>", start)]


def test_submit_form_tells_what_the_online_workers_can_do(client):
    sync_catalog()
    client.force_login(make_user("kai"))
    page = client.get("/submit/").content.decode()
    assert "No worker online" in _capability(page, "sm_90a")
    _worker("box:cpu:1", "sm_90a", "cpu-stages-only, sandbox: bubblewrap")
    _worker("old:0:1", "sm_100a", "gpu, sandbox: bubblewrap", "NVIDIA B200", age_s=3600)  # its heartbeat stopped
    page = client.get("/submit/").content.decode()
    assert "only CPU-stage workers" in _capability(page, "sm_90a") and "timing do not" in _capability(page, "sm_90a")
    assert "No worker online" in _capability(page, "sm_100a")
    _worker("box:0:2", "sm_90a", "gpu, sandbox: bubblewrap", "NVIDIA H200")
    page = client.get("/submit/").content.decode()
    assert "1 GPU worker online (NVIDIA H200)" in _capability(page, "sm_90a")
