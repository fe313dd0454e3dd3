"""The life cycles of a model run, its trajectories and their turns, written down (docs/agent.md, "Run, trajectory
and turn states").

Each is a `Machine`: the states of the model's `state` field and the moves its table allows. Services move a row
only through `transition()`, one conditional UPDATE that succeeds only while the row is in a state the table lets
reach the target, so a step that runs twice, or races a cancel, moves the row once. Asking for a move the table
does not hold raises `IllegalTransition` (a bug in the caller, never a race).

A turn's state says where it is in the loop; how a finished turn ended is apart from it: `Turn.outcome` (the
agent's own result: no kernel, model error, ...) and `Turn.verdict_status` (the evaluator's status, only when
the evaluator gave a verdict). The one status word pages, the API and the other apps show (`status` in their
JSON) is derived from those two, never stored: `Turn.published_status` (`published_status()` here).

The services' steps answer with a `StepOutcome` (what the step did, typed), never with prose to branch on; its
`str()` is the line the job logs and returns to RQ."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from django.db import models
from django.db.models.expressions import Combinable

from portal.agent.models import ModelRun, Trajectory, Turn


class IllegalTransition(Exception):
    """A move the machine's table does not allow (from a state that cannot reach the target)."""


@dataclass(frozen=True)
class Machine:
    """A model's `state` field as a state machine: `table` maps each state to the states it may move to."""

    model: type[models.Model]
    initial: str
    table: Mapping[str, frozenset[str]] = field(repr=False)

    def __post_init__(self) -> None:
        states = set(self.model.State.values)
        named = set(self.table) | {s for targets in self.table.values() for s in targets}
        if named != states or set(self.table) != states or self.initial not in states:
            raise ValueError(f"{self.name}: the table must name every state of {self.model.__name__}.State")

    @property
    def name(self) -> str:
        return self.model.__name__

    @property
    def states(self) -> list[str]:
        return list(self.model.State.values)

    @property
    def terminal(self) -> frozenset[str]:
        """The states nothing leaves."""
        return frozenset(s for s, targets in self.table.items() if not targets)

    @property
    def active(self) -> tuple[str, ...]:
        """The states something still leaves, in the field's order."""
        return tuple(s for s in self.states if self.table[s])

    def allows(self, source: str, target: str) -> bool:
        return target in self.table.get(source, frozenset())

    def sources(self, target: str) -> tuple[str, ...]:
        """The states that may move to `target`, in the field's order."""
        if target not in self.table:
            raise IllegalTransition(f"{self.name}: no state {target!r}")
        return tuple(s for s in self.states if target in self.table[s])

    def check(self, source: str, target: str) -> None:
        if not self.allows(source, target):
            raise IllegalTransition(f"{self.name}: {source!r} may not move to {target!r}")

    def reachable(self) -> set[str]:
        """Every state some sequence of moves reaches from the initial one."""
        seen, todo = {self.initial}, [self.initial]
        while todo:
            for target in self.table[todo.pop()]:
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return seen


def _table(pairs: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    return {str(source): frozenset(str(t) for t in targets) for source, targets in pairs.items()}


_R, _J, _T = ModelRun.State, Trajectory.State, Turn.State

# A run: queued until its first model step starts; done (a trajectory ended normally) or failed (all ended in
# errors) once every trajectory stopped; cancelled by its owner while queued or running.
RUN = Machine(
    ModelRun,
    _R.QUEUED,
    _table({
        _R.QUEUED: [_R.RUNNING, _R.DONE, _R.FAILED, _R.CANCELLED],
        _R.RUNNING: [_R.DONE, _R.FAILED, _R.CANCELLED],
        _R.DONE: [],
        _R.FAILED: [],
        _R.CANCELLED: [],
    }),
)  # fmt: skip

# A trajectory runs until it stops once, with a stop reason (Trajectory.StopReason).
TRAJECTORY = Machine(
    Trajectory,
    _J.RUNNING,
    _table({_J.RUNNING: [_J.DONE, _J.FAILED, _J.CANCELLED], _J.DONE: [], _J.FAILED: [], _J.CANCELLED: []}),
)

# A turn calls the model (possibly parked meanwhile: `waiting_reason`), then is evaluated or ends at once.
TURN = Machine(
    Turn,
    _T.CALLING_MODEL,
    _table({
        _T.CALLING_MODEL: [_T.EVALUATING, _T.DONE, _T.FAILED],
        _T.EVALUATING: [_T.DONE],
        _T.DONE: [],
        _T.FAILED: [],
    }),
)  # fmt: skip

MACHINES = (RUN, TRAJECTORY, TURN)

# How a finished turn may have ended, by its final state. FAILED stops the trajectory with an error.
TURN_OUTCOMES: dict[str, frozenset[str]] = {
    _T.DONE: frozenset({
        Turn.Outcome.VERDICT, Turn.Outcome.NO_KERNEL, Turn.Outcome.EVALUATION_FAILED, Turn.Outcome.OVER_BUDGET
    }),
    _T.FAILED: frozenset({Turn.Outcome.MODEL_ERROR, Turn.Outcome.EVALUATION_FAILED}),
}  # fmt: skip

# The published status of a turn that ended without a verdict (PTXBench's names; Fixit and the exports read them).
_OUTCOME_STATUS = Turn.OUTCOME_STATUS


def published_status(outcome: str, verdict_status: str = "") -> str:
    """`Turn.published_status` of an outcome: the verdict's status when the evaluator gave one, else the outcome's
    own name. Refuses a verdict status beside an outcome that had no verdict."""
    if outcome == Turn.Outcome.VERDICT:
        return verdict_status
    if verdict_status:
        raise ValueError(f"a turn that ended {outcome!r} has no verdict status ({verdict_status!r})")
    return _OUTCOME_STATUS.get(outcome, "")


def outcome_of_status(status: str) -> tuple[str, str]:
    """(outcome, verdict status) of a published status, the inverse of `published_status`: the rule by which the
    migrations that split the old status read each stored one (tests/agent/test_agent_states.py holds them to it)."""
    for outcome, name in _OUTCOME_STATUS.items():
        if status == name:
            return outcome, ""
    return (Turn.Outcome.VERDICT, status) if status else (Turn.Outcome.NONE, "")


def transition(machine: Machine, target, to: str, *, from_: Iterable[str] | None = None, **fields) -> int:
    """Move `target` (an instance, a primary key, or a queryset of the machine's model) to state `to` with one
    conditional UPDATE, writing `fields` with it. Only rows in `from_` move (default: every state the table
    lets reach `to`). A `from_` state the table does not let reach `to`, or no state at all, raises
    IllegalTransition. Returns how many rows moved (0: another step moved it first); an instance that moved gets
    the new state and fields."""
    sources = tuple(machine.sources(to) if from_ is None else from_)
    if not sources:
        raise IllegalTransition(f"{machine.name}: no state may move to {to!r}")
    for source in sources:
        machine.check(source, to)
    if isinstance(target, models.QuerySet):
        rows, instance = target, None
    elif isinstance(target, machine.model):
        rows, instance = machine.model.objects.filter(pk=target.pk), target
    else:
        rows, instance = machine.model.objects.filter(pk=target), None
    moved = rows.filter(state__in=sources).update(state=to, **fields)
    if moved and instance is not None:
        instance.state = to
        plain = {name: value for name, value in fields.items() if not isinstance(value, Combinable)}
        for name, value in plain.items():
            setattr(instance, name, value)
        if len(plain) < len(fields):
            instance.refresh_from_db(fields=[name for name in fields if name not in plain])
    return moved


def turn_end(turn: Turn, to: str, *, outcome: str, verdict_status: str = "", from_=None, **fields) -> int:
    """Finish a turn (DONE or FAILED) with how it ended; its published status follows from `outcome` and
    `verdict_status` (checked here: published_status refuses a verdict status without a verdict)."""
    if outcome not in TURN_OUTCOMES.get(to, ()):
        raise IllegalTransition(f"a turn does not end {to!r} with outcome {outcome!r}")
    published_status(outcome, verdict_status)  # a verdict status only with a verdict
    return transition(
        TURN,
        turn,
        to,
        from_=from_,
        outcome=outcome,
        verdict_status=verdict_status,
        **fields,
    )


# --------------------------------------------------------------------------- what a step did


class Step(enum.Enum):
    """What one step of the loop did (`services.turn_model_step`, `services.turn_verdict_step`). The value is
    the line logged for it."""

    NOTHING_TO_DO = "nothing to do"  # the turn is gone or past this step
    STOPPED = "run or trajectory no longer running"
    WAITING = "waiting"  # parked in the database (portal/agent/scheduling.py); its wake-up queues it again
    RUN_BUDGET_USED_UP = "run budget used up"
    CALL_HELD_ELSEWHERE = "another worker holds this model call"
    STEP_CRASHED = "step crashed too often"
    API_KEY_UNREADABLE = "api key unreadable"
    MODEL_ERROR = "model error"
    REPLY_STORED_ELSEWHERE = "reply already stored by another worker"
    ALREADY_SUBMITTED = "already submitted"
    NO_KERNEL = "no kernel in the reply"
    SUBMISSION_REFUSED = "submission refused"
    SUBMITTED = "submitted"  # the kernel went to the evaluator; detail: the evaluation id
    EVALUATION_RUNNING = "evaluation still running"
    RECORDED = "recorded"  # the verdict step finished the turn; detail: its published status


@dataclass(frozen=True)
class StepOutcome:
    step: Step
    detail: str = ""  # why it waits, the evaluation id, the turn's status

    @property
    def parked(self) -> bool:
        """The step waits in the database and holds no place in the user's share of the queue."""
        return self.step is Step.WAITING

    def __str__(self) -> str:
        if self.step is Step.WAITING:
            return f"waiting: {self.detail}"
        if self.step is Step.SUBMITTED:
            return f"submitted as evaluation {self.detail}"
        if self.step is Step.RECORDED:
            return self.detail
        return self.step.value
