"""Repair runs with the replay server playing the student (a model run that fails) and the teacher (repairs):
real HTTP, real Redis and RQ, the real evaluator's CPU stages for kernels that do not compile, recorded H200
verdicts standing in for the GPU on the others. Only attempts that passed become pairs."""

from __future__ import annotations

import json

import pytest
from django.test import Client, override_settings

from portal.agent.models import ModelRun, Trajectory, Turn
from portal.agent.services import RunRefused, RunRequest, run_create
from portal.fixit.repairs import REPAIR_REQUEST, repair_run_create
from portal.fixit.services import dataset_create
from portal.fixit.storage import dataset_folder
from portal.leaderboard.boards.selectors import _model_rows
from portal.leaderboard.charts.turns import _trajectories
from tests.support.agent_support import API_KEY, LOOP_SETTINGS, broken_reply, fenced, replay  # noqa: F401
from tests.support.factories import GEMM, make_token, make_user, starter_source, sync_catalog
from tests.support.fixit_support import drain_with_gpu_stand_in, stored_trajectory
from tests.support.leaderboard_factories import verdict as verdict_document

pytestmark = [pytest.mark.django_db(transaction=True)]
OTHER = "gemm_n2048_k4096"
TEACHER_FIX = starter_source(GEMM).rstrip() + "\n// teacher: fixed\n"
TEACHER_WRONG = starter_source(OTHER).rstrip() + "\n// teacher: still wrong\n"


@pytest.fixture
def alice(settings, tmp_path):
    settings.FIXIT_DIR = tmp_path / "fixit"
    settings.ARTIFACTS_DIR = tmp_path / "artifacts"
    sync_catalog()
    return make_user("alice")


def _request(server, model: str) -> RunRequest:
    return RunRequest(
        base_url=server.base_url,
        model=model,
        arch="sm_90a",
        task_slugs=[GEMM, OTHER],
        api_key=API_KEY,
        turns=1,
        trajectories_per_task=1,
        request_timeout=2.0,
        max_retries=0,
    )


@override_settings(**LOOP_SETTINGS)
def test_a_repair_run_adds_pairs_only_for_attempts_that_passed(alice, replay):  # noqa: F811
    student = replay({"turns": [broken_reply()]})
    student_run = run_create(user=alice, request=_request(student, "student-model"))
    drain_with_gpu_stand_in({})
    failing = list(Turn.objects.filter(trajectory__run=student_run).order_by("trajectory__task__slug"))
    assert [t.published_status for t in failing] == ["COMPILE_ERROR", "COMPILE_ERROR"]
    source = next(t for t in failing if t.trajectory.task.slug == GEMM)

    teacher = replay(
        {
            "tasks": {
                GEMM: [broken_reply(), {"content": "Fixed:\n" + fenced(TEACHER_FIX)}],
                OTHER: [{"content": fenced(TEACHER_WRONG)}],
            }
        }
    )
    repair_run = repair_run_create(
        user=alice, request=_request(teacher, "teacher-model"), turn_ids=[t.id for t in failing], attempts=2
    )
    assert repair_run.kind == ModelRun.Kind.REPAIR and repair_run.evaluation_budget is not None
    passed = verdict_document(source=TEACHER_FIX, status="PASSED", speedup=1.1, arch_status="verified")
    wrong = verdict_document(source=TEACHER_WRONG, task_slug=OTHER, status="INCORRECT_NUMERICAL", speedup=None)
    drain_with_gpu_stand_in({TEACHER_FIX: passed, TEACHER_WRONG: wrong})

    trajectories = {t.task.slug: t for t in Trajectory.objects.filter(run=repair_run).select_related("task")}
    assert {slug: t.repair_of_id for slug, t in trajectories.items()} == {t.trajectory.task.slug: t.id for t in failing}
    attempts = {slug: [x.published_status for x in t.turns.order_by("index")] for slug, t in trajectories.items()}
    assert attempts == {GEMM: ["COMPILE_ERROR", "PASSED"], OTHER: ["INCORRECT_NUMERICAL", "INCORRECT_NUMERICAL"]}
    sent = trajectories[GEMM].messages  # exactly what the teacher was sent and said
    assert [m["role"] for m in sent[:3]] == ["system", "user", "assistant"]
    assert sent[0]["content"] == source.trajectory.messages[0]["content"]
    opening = sent[1]["content"]
    assert opening.startswith(source.trajectory.messages[1]["content"])
    assert fenced(source.kernel) in opening and source.feedback in opening and REPAIR_REQUEST in opening
    assert sorted((r["task"], r["turn"], r["model"]) for r in teacher.requests) == sorted(
        [
            (GEMM, 0, "teacher-model"),
            (GEMM, 1, "teacher-model"),
            (OTHER, 0, "teacher-model"),
            (OTHER, 1, "teacher-model"),
        ]
    )
    assert {r["token_last4"] for r in teacher.requests} == {API_KEY[-4:]}

    dataset = dataset_create(user=alice, name="repairs", filters={})
    rows = [json.loads(x) for x in (dataset_folder(dataset.id) / "repair/train.jsonl").read_text().splitlines()]
    assert len(rows) == 1
    row = rows[0]
    assert (row["source"], row["model"], row["teacher"], row["task"]) == (
        "repair_run",
        "student-model",
        "teacher-model",
        GEMM,
    )
    assert (row["run"], row["repair_run"], row["failed_turn"], row["fixed_turn"]) == (
        student_run.id,
        repair_run.id,
        0,
        1,
    )
    assert row["failed_evaluation"] == str(source.evaluation_id)
    assert row["messages"][2]["content"] == fenced(source.kernel)
    assert row["messages"][3]["content"] == source.feedback  # the student's error log, not the repair request
    assert row["messages"][4]["content"] == fenced(TEACHER_FIX.rstrip())
    assert dataset.generation_rows == 0  # a repair attempt is not a generation row
    assert all(r.run_id != repair_run.id for rows in _model_rows(arch="sm_90a", k=1).values() for r in rows)
    assert {t.run_id for t in _trajectories("sm_90a")} == {student_run.id}  # per-turn curves: the student only


@override_settings(**LOOP_SETTINGS)
def test_repair_sources_and_endpoints_are_checked_like_model_runs(alice, settings):
    ok = stored_trajectory(
        alice, [{"status": "COMPILE_ERROR", "kernel": "// a\n"}, {"status": "PASSED", "kernel": "// A\n"}]
    )
    hidden = stored_trajectory(alice, [{"status": "COMPILE_ERROR", "kernel": "// h\n"}], model="hidden")
    ModelRun.objects.filter(id=hidden.run.id).update(is_hidden=True, hidden_reason="test")
    failing, passing = ok.turns.order_by("index")
    request = RunRequest(base_url="http://127.0.0.1:9/v1", model="t", arch="sm_90a", task_slugs=[], api_key=API_KEY)
    for turn_ids, message in (
        ([passing.id], "did not fail"),
        ([hidden.turns.get().id], "not a public"),
        ([], "non-empty list"),
        (["1"], "non-empty list"),
    ):
        with pytest.raises(RunRefused, match=message):
            repair_run_create(user=alice, request=request, turn_ids=turn_ids)
    with pytest.raises(RunRefused, match="sm_100a"):
        repair_run_create(
            user=alice, request=RunRequest(**{**request.__dict__, "arch": "sm_100a"}), turn_ids=[failing.id]
        )
    with pytest.raises(RunRefused, match="endpoint refused"):
        repair_run_create(
            user=alice,
            request=RunRequest(**{**request.__dict__, "base_url": "http://10.1.2.3/v1"}),
            turn_ids=[failing.id],
        )
    settings.AGENT_MAX_ACTIVE_RUNS = 1
    ModelRun.objects.create(user=alice, model="busy", display_name="busy", arch="sm_90a", state="running")
    with pytest.raises(RunRefused) as refused:
        repair_run_create(user=alice, request=request, turn_ids=[failing.id])
    assert refused.value.status == 429


@override_settings(**LOOP_SETTINGS)
def test_the_repair_run_api_answers_json(alice):
    ok = stored_trajectory(alice, [{"status": "COMPILE_ERROR", "kernel": "// a\n"}])
    client, token = Client(), make_token(alice)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}

    def post(body):
        return client.post(
            "/api/v1/fixit/repair-runs", data=json.dumps(body), content_type="application/json", **headers
        )

    base = {"base_url": "http://127.0.0.1:9/v1", "model": "t", "arch": "sm_90a"}
    assert "required" in post(base).json()["error"]
    assert "wrong type" in post({**base, "turns": [ok.turns.get().id], "attempts": "3"}).json()["error"]
    assert "unknown field" in post({**base, "turns": [1], "tasks": []}).json()["error"]
    created = post({**base, "turns": [ok.turns.get().id], "api_key": API_KEY, "attempts": 2})
    assert created.status_code == 201, created.content
    document = created.json()
    assert document["turns"] == 2 and API_KEY not in created.content.decode()
    assert ModelRun.objects.get(id=document["id"]).kind == "repair"
    assert client.post("/api/v1/fixit/repair-runs", data="{}", content_type="application/json").status_code == 401


@override_settings(**LOOP_SETTINGS)
def test_the_reasoning_teacher_explains_each_repair_and_the_row_names_it(alice, replay):  # noqa: F811
    stored_trajectory(alice, [{"status": "COMPILE_ERROR", "kernel": "// broken\n"}], model="student-model")
    failing = Turn.objects.get(trajectory__run__model="student-model")
    explanation = (
        "<think>scratch work</think>The first kernel never closed its brace. ```cuda\nx\n``` Closing it fixes it."
    )
    teacher = replay({"turns": [{"content": fenced(TEACHER_FIX)}, {"content": "unused"}, {"content": explanation}]})
    request = _request(teacher, "teacher-model")
    repair_run = repair_run_create(user=alice, request=request, turn_ids=[failing.id], attempts=1)
    drain_with_gpu_stand_in({TEACHER_FIX: verdict_document(source=TEACHER_FIX, status="PASSED", speedup=1.0)})
    assert Turn.objects.get(trajectory__run=repair_run).published_status == "PASSED"

    client, token = Client(), make_token(alice)
    url = f"/api/v1/fixit/repair-runs/{repair_run.id}/explanations"
    other = client.post(
        url, data="{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {make_token(make_user('bob'))}"
    )
    assert other.status_code == 403 and "owner" in other.json()["error"]
    queued = client.post(url, data="{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert queued.status_code == 202 and queued.json()["queued"] == [
        {"trajectory": repair_run.trajectories.get().id, "turn": 0, "teacher": "teacher-model"}
    ]
    again = client.post(url, data="{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert again.json()["queued"] == []  # one explanation per repair
    drain_with_gpu_stand_in({})
    assert teacher.requests[-1]["turn"] == 2  # task, failing kernel, feedback, fix, then the question

    dataset = dataset_create(user=alice, name="explained", filters={})
    row = json.loads((dataset_folder(dataset.id) / "repair/train.jsonl").read_text().splitlines()[0])
    assert row["reasoning_by"] == "teacher-model" and row["teacher"] == "teacher-model"
    final = row["messages"][4]
    assert final["loss"] and final["content"].startswith("The first kernel never closed its brace.")
    assert "scratch work" not in final["content"] and final["content"].endswith(fenced(TEACHER_FIX))
    student_run = failing.trajectory.run
    refused = client.post(
        f"/api/v1/fixit/repair-runs/{student_run.id}/explanations",
        data="{}",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert refused.status_code == 400 and "repair runs only" in refused.json()["error"]


@override_settings(**LOOP_SETTINGS, MAX_ACTIVE_EVALUATIONS=10)
def test_repair_attempts_spend_the_submitters_evaluation_budget_like_model_turns(alice, replay, settings):  # noqa: F811
    student = replay({"turns": [broken_reply()]})
    student_run = run_create(user=alice, request=_request(student, "student-model"))
    drain_with_gpu_stand_in({})
    failing = list(Turn.objects.filter(trajectory__run=student_run).order_by("trajectory__task__slug"))
    assert len(failing) == 2  # two evaluations of this hour already
    teacher = replay({"turns": [broken_reply()]})
    # The per-run budget: two failing kernels need at least one attempt (one evaluation) each.
    settings.AGENT_RUN_EVALUATION_BUDGET = 1
    with pytest.raises(
        RunRefused, match="2 failing kernels .one attempt each. need at least 2 evaluations; a run may start at most 1"
    ):
        repair_run_create(
            user=alice, request=_request(teacher, "teacher-model"), turn_ids=[t.id for t in failing], attempts=2
        )
    # The hourly budget is shared with the user's other evaluations: the third of the hour is the last.
    settings.AGENT_RUN_EVALUATION_BUDGET = 100
    settings.EVALUATIONS_PER_HOUR = 3
    repair_run = repair_run_create(
        user=alice, request=_request(teacher, "teacher-model"), turn_ids=[t.id for t in failing], attempts=1
    )
    drain_with_gpu_stand_in({})
    attempts = list(Turn.objects.filter(trajectory__run=repair_run).order_by("trajectory__index"))
    assert len(attempts) == 2
    assert attempts[0].evaluation is not None
    assert attempts[1].evaluation is None and "hourly limit reached" in attempts[1].waiting_reason
