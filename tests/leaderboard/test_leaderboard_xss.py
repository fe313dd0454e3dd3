"""Hostile text (model names, kernel names and sources, compiler output, model replies) is rendered inert:
it appears escaped in the HTML, never raw, and never inside an executable script."""

from __future__ import annotations

import re

import pytest

from tests.support import leaderboard_factories as lf
from tests.support.agent_support import ended
from tests.support.factories import sync_catalog
from tests.support.leaderboard_factories import GEMM, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db

PAYLOAD = '<script>alert("x")</script><img src=x onerror=alert(1)>'
ESCAPED = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"


def assert_inert(html: str) -> None:
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    # Every script element is either a static file or a JSON data block; none carries inline code.
    for tag in re.findall(r"<script\b[^>]*>", html):
        assert 'src="/static/' in tag or 'type="application/json"' in tag, tag


def test_model_name_is_escaped_on_the_leaderboard_and_in_chart_data(client):
    sync_catalog()
    # Charts name series by the model id, tables by the display name: both hostile.
    run = lf.model_run(lf.user("alice"), model=f"vendor/{PAYLOAD}", display_name=PAYLOAD)
    lf.metrics(run, GEMM, 8, 4, 2, 1, 1.2, 100)
    for params in ({"task": GEMM}, {}):
        html = client.get("/leaderboard/", params).content.decode()
        assert_inert(html)
        assert ESCAPED in html
        # In the figure's JSON data block the name is escaped for plotly's label markup and for HTML.
        assert "\\u0026lt;script\\u0026gt;" in html


def test_kernel_name_source_and_compiler_output_are_escaped(client):
    sync_catalog()
    evaluation = lf.evaluation(
        owner=lf.user("alice"),
        name=PAYLOAD,
        source=f"// {PAYLOAD}\n__global__ void k() {{}}\n",
        compile_output=f"kernel.cu(1): error: {PAYLOAD}\n",
        speedup=1.2,
    )
    board = client.get("/leaderboard/kernels/", {"task": GEMM, "arch": "sm_90a"}).content.decode()
    assert_inert(board)
    assert ESCAPED in board
    page = client.get(f"/evidence/evaluations/{evaluation.id}/").content.decode()
    assert_inert(page)
    assert page.count("&lt;script&gt;") >= 3  # title/heading name, highlighted source, compiler output
    assert "error: &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page


def test_model_reply_is_escaped_on_the_trajectory_page(client):
    from portal.agent.models import Trajectory, Turn

    sync_catalog()
    run = lf.model_run(lf.user("alice"), model="vendor/x", display_name="plain")
    trajectory = Trajectory.objects.create(
        run=run,
        task=lf.task(GEMM),
        index=0,
        state="done",
        messages=[{"role": "user", "content": "write a kernel"}, {"role": "assistant", "content": PAYLOAD}],
    )
    Turn.objects.create(trajectory=trajectory, index=0, state="done", reply=PAYLOAD, **ended("NO_KERNEL"))
    response = client.get(f"/runs/{run.id}/trajectories/{trajectory.id}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert_inert(html)
    assert "&lt;script&gt;alert(" in html
