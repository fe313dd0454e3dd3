"""The task page leads somewhere: Submit (pre-filled), its leaderboards, the current best per architecture and
the library's latency per GPU."""

from __future__ import annotations

import pytest

from tests.support import leaderboard_factories as lf
from tests.support.factories import sync_catalog
from tests.support.leaderboard_factories import GEMM, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db


def test_task_page_links_submit_boards_best_kernel_and_library_latency(client):
    sync_catalog()
    owner = lf.user("ada")
    lf.evaluation(owner=owner, name="slow.cu", speedup=0.9, gpu="NVIDIA H200")
    best = lf.evaluation(owner=owner, name="<b>fast</b>.cu", speedup=1.3, gpu="NVIDIA H200")
    page = client.get(f"/tasks/{GEMM}/").content.decode()
    assert f'href="/submit/?task={GEMM}&amp;arch=sm_90a"' in page
    assert f"/leaderboard/kernels/?task={GEMM}&amp;arch=sm_90a" in page
    assert f"/evidence/evaluations/{best.id}/" in page  # the current best (by the board's own order)
    assert "&lt;b&gt;fast&lt;/b&gt;.cu" in page and "<b>fast</b>" not in page
    assert 'id="library-latency"' in page and "H200" in page and "1.0000" in page  # factories: library 1.0 ms
    # Submit: a visitor is sent to log in and brought back; a user gets the form with the task and arch chosen.
    visitor = client.get(f"/submit/?task={GEMM}&arch=sm_90a")
    assert visitor.status_code == 302
    assert visitor["Location"] == f"/accounts/login/?next=/submit/%3Ftask%3D{GEMM}%26arch%3Dsm_90a"
    client.force_login(owner)
    form = client.get(f"/submit/?task={GEMM}&arch=sm_90a")
    assert form.status_code == 200
    assert form.context["form"].initial == {"task": GEMM, "arch": "sm_90a"}


def test_task_page_without_results_says_so(client):
    sync_catalog()
    page = client.get(f"/tasks/{GEMM}/").content.decode()
    assert "No ranked kernel yet" in page and "No GPU has timed the library" in page
