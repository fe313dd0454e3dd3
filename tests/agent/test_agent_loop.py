"""Complete model runs against the replay server (real HTTP), through real Redis and real RQ workers, with the
real evaluator's CPU stages: per-turn rows, feedback, stop reasons, metrics, and keys kept out of logs."""

from __future__ import annotations

import logging

import django_rq
import pytest
from django.test import override_settings
from django.utils import timezone

from portal.agent import services
from portal.agent.models import ModelRun, RunTaskMetrics, Trajectory, Turn
from portal.agent.services import RunRequest
from portal.catalog.models import Task
from portal.submissions.models import Evaluation, Submission
from tests.support.agent_support import (
    API_KEY,
    HANG,
    LOOP_SETTINGS,
    NO_CODE,
    STORM,
    broken_reply,
    drain,
    fixed_reply,
    replay,  # noqa: F401 - fixture
)
from tests.support.factories import GEMM, make_user, sync_catalog
from tests.support.verdicts import complete

pytestmark = [pytest.mark.django_db(transaction=True)]
OTHER = "gemm_n2048_k4096"
THIRD = "gemm_n4096_k4096"


@pytest.fixture
def alice():
    sync_catalog()
    return make_user("alice")


def _start(user, server, tasks, **kwargs) -> ModelRun:
    fields = {"turns": 4, "trajectories_per_task": 1, "request_timeout": 1.0, "max_retries": 2, **kwargs}
    return services.run_create(
        user=user,
        request=RunRequest(
            base_url=server.base_url, model="replay-model", arch="sm_90a", task_slugs=tasks, api_key=API_KEY, **fields
        ),
    )


def _turns(run: ModelRun, task: str) -> list[Turn]:
    return list(Turn.objects.filter(trajectory__run=run, trajectory__task__slug=task).order_by("index"))


@override_settings(**LOOP_SETTINGS)
def test_full_run_broken_fixed_no_code_storm_hang_and_exhausted(alice, replay, caplog):  # noqa: F811
    caplog.set_level(logging.DEBUG)
    server = replay(
        {
            "tasks": {
                GEMM: [broken_reply(), fixed_reply(), NO_CODE, STORM],
                OTHER: [HANG],
                THIRD: [NO_CODE],
            }
        }
    )
    run = _start(alice, server, [GEMM, OTHER, THIRD])
    assert run.state == ModelRun.State.QUEUED and run.api_key_last4 == "WXYZ"
    assert API_KEY not in run.api_key_encrypted
    drain()
    run.refresh_from_db()

    # GEMM: compile error → fixed (compiles; CPU stages only) → no code → 429 storm ends the trajectory.
    t0, t1, t2, t3 = _turns(run, GEMM)
    assert (t0.state, t0.published_status) == (Turn.State.DONE, "COMPILE_ERROR")
    assert t0.evaluation.state == Evaluation.State.DONE and t0.evaluation.submission.kind == Submission.Kind.AGENT
    assert t0.evaluation.submission.name == "replay-model t0 turn 0"
    assert "this is not C++" in t0.kernel and "error" in t0.feedback and "kernel.cu(" in t0.feedback
    assert t0.reasoning_tokens == 120 and t0.prompt_tokens > 1000 and t0.model_latency_s is not None
    assert (t1.published_status, t1.arch_status) == ("STATIC_ONLY", "absent")
    assert "draft, not the answer" not in t1.kernel and "TVM_FFI_DLL_EXPORT_TYPED_FUNC" in t1.kernel
    assert (t1.prompt_tokens, t1.completion_tokens, t1.reasoning_tokens) == (5000, 900, 300)
    assert "no wgmma found" in t1.feedback and "no TMA found" in t1.feedback
    assert (t2.published_status, t2.evaluation, t2.kernel) == (Turn.STATUS_NO_KERNEL, None, "")
    assert "no kernel" in t2.feedback
    assert (t3.state, t3.published_status) == (Turn.State.FAILED, Turn.STATUS_MODEL_ERROR)
    # How each ended, apart from its state; the verdict status only where the evaluator gave a verdict.
    assert [(t.outcome, t.verdict_status) for t in (t0, t1, t2, t3)] == [
        (Turn.Outcome.VERDICT, "COMPILE_ERROR"),
        (Turn.Outcome.VERDICT, "STATIC_ONLY"),
        (Turn.Outcome.NO_KERNEL, ""),
        (Turn.Outcome.MODEL_ERROR, ""),
    ]
    assert "after 3 attempts" in t3.error and "HTTP 429" in t3.error and t3.model_attempts == 3
    gemm = Trajectory.objects.get(run=run, task__slug=GEMM)
    assert (gemm.state, gemm.stop_reason) == (Trajectory.State.FAILED, "model_error")
    assert "turn 3" in gemm.stop_message and "HTTP 429" in gemm.stop_message
    roles = [m["role"] for m in gemm.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant", "user"]
    assert gemm.messages[3]["content"] == t0.feedback and gemm.messages[4]["content"] == fixed_reply()["content"]
    # The model saw the feedback of every earlier turn: the replay server counted its assistant messages.
    gemm_calls = [r for r in server.requests if r["task"] == GEMM]
    assert [r["turn"] for r in gemm_calls] == [0, 1, 2, 3, 3, 3]
    assert all(r["token_last4"] == "WXYZ" and r["model"] == "replay-model" for r in gemm_calls)

    # OTHER: the endpoint never answers: three timeouts, then a recorded, explained stop.
    (hung,) = _turns(run, OTHER)
    assert hung.state == Turn.State.FAILED and "no answer within 1 s" in hung.error
    other = Trajectory.objects.get(run=run, task__slug=OTHER)
    assert other.stop_reason == "model_error" and "did not" not in other.stop_message
    assert "gave no reply after 3 attempts" in other.stop_message

    # THIRD: no code four times: turns exhausted, a normal end.
    third = _turns(run, THIRD)
    assert [t.published_status for t in third] == [Turn.STATUS_NO_KERNEL] * 4
    trajectory = Trajectory.objects.get(run=run, task__slug=THIRD)
    assert (trajectory.state, trajectory.stop_reason) == (Trajectory.State.DONE, "turns_exhausted")

    assert run.state == ModelRun.State.DONE and run.finished_at is not None and run.started_at is not None
    rows = {(m.task.slug, m.k): m for m in RunTaskMetrics.objects.filter(run=run)}
    # every k of its 4 turns (k=8 > 4 turns is not reported)
    assert set(rows) == {(t, k) for t in (GEMM, OTHER, THIRD) for k in (1, 2, 3, 4)}
    assert rows[(GEMM, 1)].correct == 0 and rows[(GEMM, 4)].correct == 0  # STATIC_ONLY is not known correct
    assert rows[(GEMM, 1)].tokens == t0.total_tokens
    assert rows[(GEMM, 4)].tokens == t0.total_tokens + t1.total_tokens + t2.total_tokens
    assert all(m.complete and m.trajectories == 1 for m in rows.values())
    assert API_KEY not in caplog.text  # the key never reaches a log line, whatever the level


@override_settings(**LOOP_SETTINGS)
def test_a_correct_fast_turn_reaches_the_target_and_stops_the_trajectory(alice, replay):  # noqa: F811
    """The verdict step with a hand-made PASSED + verified verdict (no GPU here): target reached, metrics
    counted, the run finished; a slower correct turn before it keeps the loop going."""
    server = replay({"turns": [NO_CODE]})
    run = _start(alice, server, [GEMM], turns=8)
    trajectory = Trajectory.objects.get(run=run)
    turn = Turn.objects.get(trajectory=trajectory, index=0)
    task = Task.objects.get(slug=GEMM)

    def evaluated(turn: Turn, speedup: float) -> None:
        submission = Submission.objects.create(
            user=alice, task=task, arch="sm_90a", kind="agent", source="x", source_sha256="0" * 64, source_bytes=1
        )
        verdict = complete({
            "status": "PASSED",
            "arch": "sm_90a",
            "workloads": [
                {"uuid": "w", "axes": {"M": 8192}, "status": "PASSED", "performance": {"speedup_factor": speedup}}
            ],
            "arch_check": {"status": "verified", "families": {}},
        })  # fmt: skip
        evaluation = Evaluation.objects.create(
            submission=submission,
            queue="gpu-sm90",
            state=Evaluation.State.DONE,
            verdict=verdict,
            status="PASSED",
            arch_status="verified",
            speedup_factor=speedup,
            gpu_name="NVIDIA H200",
            finished_at=timezone.now(),
        )
        Turn.objects.filter(id=turn.id).update(
            state=Turn.State.EVALUATING, evaluation=evaluation, reply="r", replied_at=timezone.now(), prompt_tokens=10
        )
        services.evaluation_finished_received(evaluation_id=str(evaluation.id))
        assert f"agent-turn-{turn.id}-verdict" in django_rq.get_queue("agent").get_job_ids()
        # The job's body, run here so the next turn's model step stays queued (the replies are hand-made).
        services.turn_verdict_step(turn_id=turn.id)

    evaluated(turn, 1.1)  # correct but below the 1.2 target: keep going
    turn.refresh_from_db()
    assert (turn.published_status, turn.speedup_factor, turn.state) == ("PASSED", 1.1, Turn.State.DONE)
    assert "keep optimizing" in turn.feedback
    trajectory.refresh_from_db()
    assert trajectory.state == Trajectory.State.RUNNING
    second = Turn.objects.get(trajectory=trajectory, index=1)
    evaluated(second, 1.4)
    trajectory.refresh_from_db()
    assert (trajectory.state, trajectory.stop_reason) == (Trajectory.State.DONE, "target_reached")
    assert "1.40x" in trajectory.stop_message
    assert not Turn.objects.filter(trajectory=trajectory, index=2).exists()
    run.refresh_from_db()
    assert run.state == ModelRun.State.DONE and run.gpu_name == "NVIDIA H200"
    rows = {m.k: m for m in RunTaskMetrics.objects.filter(run=run)}
    assert (rows[1].correct, rows[1].correct_arch, rows[1].best_speedup) == (1, 1, 1.1)
    assert rows[4].best_speedup == 1.4 and rows[8].best_speedup == 1.4 and rows[8].complete


@override_settings(**LOOP_SETTINGS)
def test_cancel_stops_the_loop_and_no_further_model_call_is_made(alice, replay):  # noqa: F811
    server = replay({"turns": [NO_CODE]})
    run = _start(alice, server, [GEMM], trajectories_per_task=2)
    assert services.run_cancel(run=run)
    drain()
    run.refresh_from_db()
    assert run.state == ModelRun.State.CANCELLED
    assert server.requests == []
    assert set(Trajectory.objects.filter(run=run).values_list("stop_reason", flat=True)) == {"cancelled"}


@override_settings(**LOOP_SETTINGS)
def test_an_imported_trajectory_is_rescored_without_calling_a_model(alice, tmp_path):
    from django.core.management import call_command

    from tests.support.agent_support import fenced
    from tests.support.factories import BROKEN_KERNEL

    document = {
        "trajectory_format": "mini-swe-agent-1.1",
        "info": {"config": {"model": {"model_name": "paper-model"}}, "ptxbench": {"task": GEMM}},
        "messages": [
            {"role": "system", "content": "their system prompt"},
            {"role": "user", "content": "their task message"},
            {"role": "assistant", "content": "first\n" + fenced(BROKEN_KERNEL)},
            {"role": "user", "content": "their feedback"},
            {"role": "assistant", "content": "no code this time"},
        ],
    }
    path = tmp_path / "t.json"
    import json

    path.write_text(json.dumps(document))
    call_command("import_trajectory", str(path), "--arch", "sm_90a", "--user", "alice")
    run = ModelRun.objects.get(model="paper-model")
    drain()
    run.refresh_from_db()
    turns = list(Turn.objects.filter(trajectory__run=run).order_by("index"))
    assert [t.published_status for t in turns] == ["COMPILE_ERROR", Turn.STATUS_NO_KERNEL]
    trajectory = Trajectory.objects.get(run=run)
    assert trajectory.stop_reason == "turns_exhausted" and run.state == ModelRun.State.DONE
    assert [m["content"] for m in trajectory.messages][:3] == [
        "their system prompt",
        "their task message",
        "first\n" + fenced(BROKEN_KERNEL),
    ]
    assert trajectory.messages[3]["content"].startswith("Evaluation result: COMPILE_ERROR.")  # our feedback, not theirs
