"""The agent's life cycles as written down in portal/agent/states.py: the tables name every state and
reach each one, `transition()` moves a row only along the table and only from the state it is in, a turn's outcome
and verdict status are kept apart from its state (and migration 0006 reads old rows into them), the loop's steps
answer with typed outcomes the jobs branch on, and a refused run is a refused submission."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from portal.agent import jobs, services, states
from portal.agent.models import ModelRun, Trajectory, Turn
from portal.agent.services import RunRefused
from portal.agent.states import RUN, TRAJECTORY, TURN, IllegalTransition, Step, StepOutcome
from portal.catalog.models import Task
from portal.submissions.services import SubmissionRefused
from tests.support.factories import GEMM, make_user, sync_catalog

MACHINES = {"run": RUN, "trajectory": TRAJECTORY, "turn": TURN}


# --------------------------------------------------------------------------- the tables


@pytest.mark.parametrize("name", MACHINES)
def test_every_state_is_in_the_table_and_reachable_from_the_initial_one(name):
    machine = MACHINES[name]
    assert set(machine.table) == set(machine.model.State.values)
    assert machine.reachable() == set(machine.model.State.values)
    assert machine.initial == machine.model._meta.get_field("state").default
    # Something leaves every active state, nothing leaves a terminal one, and a terminal state is reached.
    assert machine.terminal and all(machine.table[s] for s in machine.active)
    assert set(machine.active) | machine.terminal == set(machine.states)


def test_the_tables_agree_with_what_the_models_call_active():
    assert RUN.active == tuple(ModelRun.ACTIVE_STATES)
    assert TRAJECTORY.active == (Trajectory.State.RUNNING,)
    assert TURN.active == (Turn.State.CALLING_MODEL, Turn.State.EVALUATING)
    assert TURN.terminal == {Turn.State.DONE, Turn.State.FAILED}


def test_a_table_missing_a_state_is_refused_when_written():
    with pytest.raises(ValueError, match="every state"):
        states.Machine(Turn, Turn.State.CALLING_MODEL, {Turn.State.CALLING_MODEL: frozenset({Turn.State.DONE})})


@pytest.mark.parametrize(
    ("machine", "source", "target"),
    [
        (RUN, ModelRun.State.DONE, ModelRun.State.RUNNING),  # a finished run never runs again
        (RUN, ModelRun.State.CANCELLED, ModelRun.State.DONE),
        (RUN, ModelRun.State.RUNNING, ModelRun.State.QUEUED),
        (TRAJECTORY, Trajectory.State.DONE, Trajectory.State.FAILED),
        (TURN, Turn.State.EVALUATING, Turn.State.CALLING_MODEL),
        (TURN, Turn.State.EVALUATING, Turn.State.FAILED),
        (TURN, Turn.State.DONE, Turn.State.EVALUATING),
    ],
)
def test_the_table_refuses_an_illegal_transition(machine, source, target):
    assert not machine.allows(source, target)
    with pytest.raises(IllegalTransition):
        machine.check(source, target)
    # transition() refuses it before touching the database (no row, no query needed).
    with pytest.raises(IllegalTransition):
        states.transition(machine, 0, target, from_=[source])


def test_a_state_no_move_reaches_is_refused():
    with pytest.raises(IllegalTransition):
        states.transition(TURN, 0, Turn.State.CALLING_MODEL)  # only ever the initial state
    with pytest.raises(IllegalTransition):
        states.transition(RUN, 0, ModelRun.State.QUEUED)
    with pytest.raises(IllegalTransition):
        states.transition(RUN, 0, "paused")


# --------------------------------------------------------------------------- moves on rows


@pytest.fixture
def alice(db):
    sync_catalog()
    return make_user("alice")


def _imported(user, replies: list[str]) -> ModelRun:
    """A run whose replies are stored up front: its steps never call a model (and nothing is queued here: the
    test's transaction never commits, so no on_commit enqueue runs)."""
    return services.run_import(
        user=user, arch="sm_90a", task=Task.objects.get(slug=GEMM), model="m", opening=[], replies=replies
    )


def test_a_move_happens_once_and_only_from_the_state_the_row_is_in(alice):
    run = _imported(alice, ["no code"])
    assert states.transition(RUN, run, ModelRun.State.RUNNING, started_at=timezone.now()) == 1
    assert run.state == ModelRun.State.RUNNING and run.started_at is not None  # the instance follows
    # The same move again: the row is no longer queued, so nothing moves (a step run twice does its work once).
    assert states.transition(RUN, run.id, ModelRun.State.RUNNING, from_=[ModelRun.State.QUEUED]) == 0
    assert services.run_cancel(run=run)
    run.refresh_from_db()
    assert run.state == ModelRun.State.CANCELLED
    # Legal from running, but the run is cancelled: refused by the conditional update, the row unchanged.
    assert states.transition(RUN, run.id, ModelRun.State.DONE, error="late") == 0
    assert not services.run_cancel(run=run) and not services.run_finish_if_complete(run_id=run.id)
    run.refresh_from_db()
    assert (run.state, run.error) == (ModelRun.State.CANCELLED, "cancelled by its owner")
    assert set(Trajectory.objects.filter(run=run).values_list("state", flat=True)) == {Trajectory.State.CANCELLED}


def test_a_turn_ends_with_an_outcome_its_final_state_allows(alice):
    run = _imported(alice, ["no code"])
    turn = Turn.objects.get(trajectory__run=run)
    with pytest.raises(IllegalTransition):
        states.turn_end(turn, Turn.State.FAILED, outcome=Turn.Outcome.NO_KERNEL)  # no kernel is a normal end
    with pytest.raises(IllegalTransition):
        states.turn_end(turn, Turn.State.DONE, outcome=Turn.Outcome.MODEL_ERROR)
    with pytest.raises(IllegalTransition):
        states.turn_end(turn, Turn.State.DONE, outcome=Turn.Outcome.NONE)
    assert states.turn_end(turn, Turn.State.DONE, outcome=Turn.Outcome.VERDICT, verdict_status="PASSED") == 1
    turn.refresh_from_db()
    assert (turn.state, turn.outcome, turn.verdict_status, turn.published_status) == (
        "done",
        "verdict",
        "PASSED",
        "PASSED",
    )


@pytest.mark.parametrize(
    ("outcome", "verdict_status", "status"),
    [
        (Turn.Outcome.VERDICT, "COMPILE_ERROR", "COMPILE_ERROR"),
        (Turn.Outcome.VERDICT, "PASSED", "PASSED"),
        (Turn.Outcome.NO_KERNEL, "", "NO_KERNEL"),
        (Turn.Outcome.MODEL_ERROR, "", "MODEL_ERROR"),
        (Turn.Outcome.EVALUATION_FAILED, "", "EVALUATION_FAILED"),
        (Turn.Outcome.OVER_BUDGET, "", "OVER_BUDGET"),
        (Turn.Outcome.NONE, "", ""),
    ],
)
def test_the_published_status_is_the_verdict_or_the_outcomes_own_name(outcome, verdict_status, status):
    assert states.published_status(outcome, verdict_status) == status
    assert states.outcome_of_status(status) == (outcome, verdict_status)


def test_an_outcome_without_a_verdict_carries_no_verdict_status():
    with pytest.raises(ValueError):
        states.published_status(Turn.Outcome.NO_KERNEL, "PASSED")


# --------------------------------------------------------------------------- typed outcomes of the steps


# The log line (and RQ result) of each step outcome: what the services returned as prose before.
OLD_PROSE = {
    StepOutcome(Step.NOTHING_TO_DO): "nothing to do",
    StepOutcome(Step.STOPPED): "run or trajectory no longer running",
    StepOutcome(Step.WAITING, "not woken yet"): "waiting: not woken yet",
    StepOutcome(Step.RUN_BUDGET_USED_UP): "run budget used up",
    StepOutcome(Step.CALL_HELD_ELSEWHERE): "another worker holds this model call",
    StepOutcome(Step.STEP_CRASHED): "step crashed too often",
    StepOutcome(Step.API_KEY_UNREADABLE): "api key unreadable",
    StepOutcome(Step.MODEL_ERROR): "model error",
    StepOutcome(Step.REPLY_STORED_ELSEWHERE): "reply already stored by another worker",
    StepOutcome(Step.ALREADY_SUBMITTED): "already submitted",
    StepOutcome(Step.NO_KERNEL): "no kernel in the reply",
    StepOutcome(Step.SUBMISSION_REFUSED, "too large"): "submission refused",
    StepOutcome(Step.SUBMITTED, "ev-1"): "submitted as evaluation ev-1",
    StepOutcome(Step.EVALUATION_RUNNING): "evaluation still running",
    StepOutcome(Step.RECORDED, "COMPILE_ERROR"): "COMPILE_ERROR",
}


def test_each_step_outcome_logs_the_line_the_prose_was_and_only_waiting_is_parked():
    assert {o.step for o in OLD_PROSE} == set(Step)
    for outcome, line in OLD_PROSE.items():
        assert str(outcome) == line
        assert outcome.parked == (outcome.step is Step.WAITING)


@pytest.mark.parametrize("outcome", list(OLD_PROSE))
def test_the_model_job_frees_the_users_place_unless_the_step_is_parked(monkeypatch, outcome):
    """Was `not outcome.startswith("waiting")`: now the typed outcome's `parked`."""
    woken = []
    monkeypatch.setattr(jobs.Turn.objects, "filter", lambda **kw: _UserIdOf(7))
    monkeypatch.setattr(jobs.services, "turn_model_step", lambda **kw: outcome)
    monkeypatch.setattr(jobs.scheduling, "model_steps_wake", lambda *, user_id: woken.append(user_id))
    assert jobs.turn_call_model(1) == str(outcome)
    assert woken == ([] if outcome.parked else [7])


class _UserIdOf:
    def __init__(self, user_id: int) -> None:
        self.user_id = user_id

    def values_list(self, *args, **kwargs):
        return self

    def first(self) -> int:
        return self.user_id


def test_the_model_step_answers_with_typed_outcomes(alice):
    run = _imported(alice, ["I would tile it, no code yet", "still no code"])
    first = Turn.objects.get(trajectory__run=run, index=0)
    assert services.turn_model_step(turn_id=0, reveal_api_key=None) == StepOutcome(Step.NOTHING_TO_DO)
    Turn.objects.filter(id=first.id).update(waiting_reason="the user's budget")
    assert services.turn_model_step(turn_id=first.id, reveal_api_key=None) == StepOutcome(Step.WAITING, "not woken yet")
    Turn.objects.filter(id=first.id).update(waiting_reason="")
    # A stored reply without a kernel: the turn ends with its outcome, no model is called.
    outcome = services.turn_model_step(turn_id=first.id, reveal_api_key=None, call=_never_called)
    assert outcome == StepOutcome(Step.NO_KERNEL)
    first.refresh_from_db()
    assert (first.state, first.outcome, first.verdict_status, first.published_status) == (
        Turn.State.DONE,
        Turn.Outcome.NO_KERNEL,
        "",
        Turn.STATUS_NO_KERNEL,
    )
    run.refresh_from_db()
    assert run.state == ModelRun.State.RUNNING  # its first step moved it from queued
    assert services.turn_model_step(turn_id=first.id, reveal_api_key=None) == StepOutcome(Step.NOTHING_TO_DO)
    services.run_cancel(run=run)
    second = Turn.objects.get(trajectory__run=run, index=1)
    assert services.turn_model_step(turn_id=second.id, reveal_api_key=None) == StepOutcome(Step.STOPPED)


def _never_called(*args, **kwargs):
    raise AssertionError("a stored reply is never requested again")


def test_the_verdict_step_answers_with_typed_outcomes(alice):
    run = _imported(alice, ["a"])
    turn = Turn.objects.get(trajectory__run=run)
    assert services.turn_verdict_step(turn_id=turn.id) == StepOutcome(Step.NOTHING_TO_DO)  # not evaluating
    # Evaluating, but its evaluation is gone: an evaluation failure, which stops the trajectory with an error.
    Turn.objects.filter(id=turn.id).update(state=Turn.State.EVALUATING, replied_at=timezone.now())
    outcome = services.turn_verdict_step(turn_id=turn.id)
    assert outcome == StepOutcome(Step.RECORDED, Turn.STATUS_EVALUATION_FAILED)
    turn.refresh_from_db()
    assert (turn.state, turn.outcome, turn.verdict_status) == (Turn.State.DONE, Turn.Outcome.EVALUATION_FAILED, "")
    trajectory = Trajectory.objects.get(run=run)
    assert (trajectory.state, trajectory.stop_reason) == (Trajectory.State.FAILED, "evaluation_failed")
    run.refresh_from_db()
    assert run.state == ModelRun.State.FAILED and "was deleted" in run.error


def test_a_refused_run_is_a_refused_submission():
    assert issubclass(RunRefused, SubmissionRefused)
    resets = timezone.now() + timedelta(hours=1)
    refused = RunRefused("daily limit reached", 429, retry_after=60, resets_at=resets)
    same = SubmissionRefused("daily limit reached", 429, retry_after=60, resets_at=resets)
    assert (refused.message, refused.status, refused.retry_after, refused.body()) == (
        same.message,
        same.status,
        same.retry_after,
        same.body(),
    )
    assert RunRefused("bad").status == 400


# --------------------------------------------------------------------------- migrations 0006 and 0008

OLD_ROWS = [  # (state, status) as turns were stored before the split
    ("done", "PASSED"),
    ("done", "COMPILE_ERROR"),
    ("done", "NO_KERNEL"),
    ("failed", "MODEL_ERROR"),
    ("done", "EVALUATION_FAILED"),
    ("failed", "EVALUATION_FAILED"),
    ("done", "OVER_BUDGET"),
    ("calling_model", ""),
]
SPLIT = [
    ("verdict", "PASSED"),
    ("verdict", "COMPILE_ERROR"),
    ("no_kernel", ""),
    ("model_error", ""),
    ("evaluation_failed", ""),
    ("evaluation_failed", ""),
    ("over_budget", ""),
    ("", ""),
]


def _old_turns(TurnModel, trajectory_id: int) -> None:
    for index, (state, status) in enumerate(OLD_ROWS):
        TurnModel.objects.create(trajectory_id=trajectory_id, index=index, state=state, status=status)


def test_the_migrations_read_each_old_status_as_the_model_does():
    """0006 (split) and 0008 (split what was left, then drop `status`) map a published status to an outcome as
    `states.outcome_of_status` does, and `Turn.published_status` maps it back (the status is never stored again)."""
    assert "status" not in {f.name for f in Turn._meta.get_fields()}
    for name in ("0006_turn_outcome_verdict_status", "0008_remove_turn_status"):
        migration = importlib.import_module(f"portal.agent.migrations.{name}")
        assert {Turn.OUTCOME_STATUS[outcome]: outcome for outcome in Turn.OUTCOME_STATUS} == migration.OWN_STATUSES
    assert [states.outcome_of_status(status) for _, status in OLD_ROWS] == SPLIT
    for (_, status), (outcome, verdict_status) in zip(OLD_ROWS, SPLIT, strict=True):
        assert Turn(outcome=outcome, verdict_status=verdict_status).published_status == status


def _task_id(task_model) -> int:
    """The key only: migrating the agent app back leaves the catalog's tables as they are now, which need not
    match the catalog model of that older state."""
    return task_model.objects.values_list("id", flat=True).get(slug=GEMM)


def _migrate(target: list[tuple[str, str]]):
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    return MigrationExecutor(connection).loader.project_state(target).apps


@pytest.mark.django_db(transaction=True)
def test_migrating_forward_from_0005_keeps_existing_turns():
    """The real migrations on a database at 0005 holding turns written the old way: after 0006 to 0008 each turn
    has its outcome and verdict status, and publishes the status it had."""
    sync_catalog()
    user = make_user("old")
    before, after = [("agent", "0005_modelrun_language")], [("agent", "0008_remove_turn_status")]
    try:
        old = _migrate(before)
        OldRun, OldTrajectory = old.get_model("agent", "ModelRun"), old.get_model("agent", "Trajectory")
        OldTurn, OldTask = old.get_model("agent", "Turn"), old.get_model("catalog", "Task")
        assert "outcome" not in {f.name for f in OldTurn._meta.fields}
        run = OldRun.objects.create(user_id=user.id, model="m", display_name="m", base_url="", arch="sm_90a")
        trajectory = OldTrajectory.objects.create(run=run, task_id=_task_id(OldTask), index=0)
        _old_turns(OldTurn, trajectory.id)
    finally:
        _migrate(after)
    rows = Turn.objects.filter(trajectory_id=trajectory.id).order_by("index")
    assert [(t.outcome, t.verdict_status) for t in rows] == SPLIT
    assert [(t.state, t.published_status) for t in rows] == OLD_ROWS


@pytest.mark.django_db(transaction=True)
def test_0008_splits_turns_written_with_a_status_only_and_going_back_writes_it_again():
    """Demo turns seeded between 0006 and 0008 carried only `status`: 0008 splits them before dropping it (turns
    already split stay as they were); migrating back to 0007 writes `status` from `outcome` and `verdict_status`."""
    sync_catalog()
    user = make_user("seeded")
    before, after = [("agent", "0007_turn_speedup_factor")], [("agent", "0008_remove_turn_status")]
    try:
        old = _migrate(before)
        OldRun, OldTrajectory = old.get_model("agent", "ModelRun"), old.get_model("agent", "Trajectory")
        OldTurn, OldTask = old.get_model("agent", "Turn"), old.get_model("catalog", "Task")
        run = OldRun.objects.create(user_id=user.id, model="m", display_name="m", base_url="", arch="sm_90a")
        trajectory = OldTrajectory.objects.create(run=run, task_id=_task_id(OldTask), index=0)
        _old_turns(OldTurn, trajectory.id)  # status only, as the demo seed wrote them
        OldTurn.objects.create(  # split already (written by turn_end): kept
            trajectory_id=trajectory.id, index=len(OLD_ROWS), state="done", status="NO_KERNEL", outcome="no_kernel"
        )
        _migrate(after)
        rows = Turn.objects.filter(trajectory_id=trajectory.id).order_by("index")
        assert [(t.outcome, t.verdict_status) for t in rows] == [*SPLIT, ("no_kernel", "")]
        assert [(t.state, t.published_status) for t in rows] == [*OLD_ROWS, ("done", "NO_KERNEL")]
        back = _migrate(before)
        restored = back.get_model("agent", "Turn").objects.filter(trajectory_id=trajectory.id).order_by("index")
        assert [(t.state, t.status) for t in restored] == [*OLD_ROWS, ("done", "NO_KERNEL")]
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
