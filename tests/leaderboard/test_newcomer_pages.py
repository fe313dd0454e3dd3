"""Pages as a newcomer first opens them: the kernel board opens on a task with something ranked, the compare
landing's data link answers, an upload of an expert kernel's file is the uploader's own submission (marked
identical), and a trajectory page numbers turns from 1 and shows no empty heading."""

from __future__ import annotations

import re

import pytest

from portal.catalog.models import Task
from tests.support import leaderboard_factories as lf
from tests.support.leaderboard_factories import GEMM, MHA, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db


def test_the_kernel_board_opens_on_a_task_with_something_ranked(client):
    from portal.leaderboard.boards.selectors import tasks_for_arch
    from portal.leaderboard.cache import Generation, leaderboard_changed
    from tests.support.factories import sync_catalog

    sync_catalog()
    first, *later = tasks_for_arch(Generation(), "sm_90a")
    ranked_task = later[-1]
    assert ranked_task != first
    lf.evaluation(task_slug=ranked_task, kind="reference", name="expert.cu", ranked_check=None)
    leaderboard_changed()
    html = client.get("/leaderboard/kernels/", {"arch": "sm_90a"}).content.decode()
    assert re.search(rf"<h2>{re.escape(ranked_task)} · sm_90a", html), "opened on a task with nothing ranked"
    assert "expert.cu" in html


def test_the_compare_landings_data_link_answers(client):
    lf.standard_runs()
    html = client.get("/compare/").content.decode()
    links = re.findall(r'<a href="(\?[^"]*format=json[^"]*)">comparison data \(JSON\)</a>', html)
    assert links
    for link in links:
        response = client.get("/compare/" + link.replace("&amp;", "&"))
        assert response.status_code == 200, response.content[:200]
        assert response.json()["kind"] == "models"


def test_an_expert_kernels_file_uploaded_is_the_uploaders_own_submission_marked_identical(client):
    from django.contrib.auth.models import User

    from portal.submissions.models import Submission
    from portal.submissions.services import submission_create
    from tests.support.factories import sync_catalog

    sync_catalog()
    source = "// the expert's kernel\n__global__ void k() {}\n"
    expert = lf.evaluation(kind="reference", name="expert_wgmma.cu", source=source, ranked_check=None).submission
    kim = User.objects.create_user("kim", password="x-unused-password-123")
    result = submission_create(user=kim, task=Task.objects.get(slug=GEMM), arch="sm_90a", source=source)
    assert not result.duplicate
    mine = result.submission
    assert mine.id != expert.id and mine.user == kim and mine.kind == Submission.Kind.KERNEL
    client.force_login(kim)
    page = client.get(f"/submissions/{mine.id}/").content.decode()
    assert 'id="identical-expert"' in page and "expert_wgmma.cu" in page
    assert f'href="/submissions/{mine.id}/"' in client.get("/submissions/mine/").content.decode()
    # Uploading it again is the uploader's own duplicate, not a third submission.
    again = submission_create(user=kim, task=Task.objects.get(slug=GEMM), arch="sm_90a", source=source)
    assert again.duplicate and again.submission.id == mine.id


def test_a_trajectory_page_numbers_turns_from_one_and_has_no_empty_heading(client):
    from portal.agent.models import Trajectory
    from tests.support.factories import sync_catalog

    sync_catalog()
    run = lf.model_run(lf.user("ann"), model="vendor/model-a")
    lf.turns(run, MHA, [[("COMPILE_ERROR", "", None, 10), ("PASSED", "verified", 1.2, 20)]])
    trajectory = Trajectory.objects.get(run=run)
    html = client.get(f"/runs/{run.id}/trajectories/{trajectory.id}/").content.decode()
    rows = re.findall(r'<tr data-turn="(\d+)"><td class="num"[^>]*>(\d+)</td>', html)
    assert [shown for _, shown in rows] == ["1", "2"]
    assert ">Conversation</h2>" not in html  # no messages stored: no heading over nothing
