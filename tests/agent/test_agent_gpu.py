"""On an H200/H100 only: a replayed trajectory whose turn 0 fails to compile and whose turn 1 is the Hopper
reference GEMM (TMA + wgmma) yields turn 1 PASSED + verified, correctness@1 = 0 and correctness@4 = 1."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
pytestmark = [pytest.mark.gpu, pytest.mark.django_db(transaction=True)]
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU: torch.cuda.is_available() is false", allow_module_level=True)
if torch.cuda.get_device_capability() != (9, 0):
    pytest.skip("needs a Hopper GPU (compute capability 9.0) for sm_90a", allow_module_level=True)

from django.test import override_settings  # noqa: E402

from portal.agent import services  # noqa: E402
from portal.agent.models import ModelRun, RunTaskMetrics, Trajectory, Turn  # noqa: E402
from portal.agent.services import RunRequest  # noqa: E402
from tests.support.agent_support import API_KEY, LOOP_SETTINGS, broken_reply, drain, fenced, replay  # noqa: E402, F401
from tests.support.factories import GEMM, REPO, make_user, sync_catalog  # noqa: E402

REFERENCE = next((REPO / "tasks" / GEMM / "solutions" / "hopper_tma_wgmma").glob("*.cu"))


@override_settings(**{**LOOP_SETTINGS, "EVALUATOR_STAGES": "all"})
def test_compile_error_then_the_hopper_reference_is_correct_and_verified(replay):  # noqa: F811
    sync_catalog()
    server = replay({"turns": [broken_reply(), {"content": "Fixed:\n" + fenced(REFERENCE.read_text())}]})
    run = services.run_create(
        user=make_user("gpu"),
        request=RunRequest(
            base_url=server.base_url,
            model="replay-model",
            arch="sm_90a",
            task_slugs=[GEMM],
            api_key=API_KEY,
            turns=8,
            trajectories_per_task=1,
            target_speedup=0.01,  # any correct speed stops the trajectory at turn 1: two GPU evaluations in all
        ),
    )
    drain()
    turns = list(Turn.objects.filter(trajectory__run=run).order_by("index"))
    assert turns[0].published_status == "COMPILE_ERROR"
    assert (turns[1].published_status, turns[1].arch_status) == ("PASSED", "verified")
    assert turns[1].speedup_factor is not None and turns[1].speedup_factor > 0
    rows = {m.k: m for m in RunTaskMetrics.objects.filter(run=run)}
    assert rows[1].correct == 0 and rows[4].correct == 1 and rows[4].correct_arch == 1
    run.refresh_from_db()
    assert run.gpu_name and run.state == ModelRun.State.DONE
    assert Trajectory.objects.get(run=run).stop_reason == "target_reached" and len(turns) == 2
