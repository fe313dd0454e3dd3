"""Fixit rows from stored trajectories, as pure functions over plain records (no Django, no database).

A **repair row** pairs a failing turn's kernel and the feedback it got with the first later turn of the same
trajectory that passed (and, when asked, is `verified`); a **generation row** is one passing turn. The
selector (`portal.fixit.selectors.trajectory_records`) decides what may be used at all (public evaluations
only); this module decides what becomes a row. See docs/fixit.md for the row formats."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from evaluator.both_sides.verdict import ArchStatus, OverallStatus

PASSED = OverallStatus.PASSED.value
VERIFIED = ArchStatus.VERIFIED.value
NO_KERNEL = "NO_KERNEL"  # the turn's reply had no kernel (PTXBench's not_executed, e.g. out of tokens)
# Turn statuses a repair may start from. Infrastructure outcomes (MODEL_ERROR, EVALUATION_FAILED) and
# STATIC_ONLY (nothing known about correctness) are not failures of the kernel and never start a pair.
FAILURE_STATUSES = (
    *(
        s.value
        for s in (
            OverallStatus.COMPILE_ERROR,
            OverallStatus.INCORRECT_SHAPE,
            OverallStatus.INCORRECT_DTYPE,
            OverallStatus.INCORRECT_NUMERICAL,
            OverallStatus.RUNTIME_ERROR,
            OverallStatus.TIMEOUT,
            OverallStatus.POLICY_REJECTED,
        )
    ),
    NO_KERNEL,
)


@dataclass(frozen=True)
class TurnRecord:
    index: int  # 0-based turn number in its trajectory
    status: str  # verdict status, or NO_KERNEL
    arch_status: str
    speedup_factor: float | None
    kernel: str  # extracted source; empty for NO_KERNEL
    reply: str  # the model's whole reply
    feedback: str  # the user message the turn's verdict produced (the error log of a failing turn)
    evaluation_id: str | None
    evaluator_version: str
    finish_reason: str = ""


@dataclass(frozen=True)
class TrajectoryRecord:
    run_id: int
    trajectory_id: int
    model: str
    arch: str
    task: str
    system: str  # the system message the model was sent
    prompt: str  # the first user message: the task
    turns: tuple[TurnRecord, ...]  # only the turns that may be used, in order
    # Repair runs: the stored failing turn the teacher was asked to repair (`turns` are its attempts), the
    # run and trajectory it came from, and the teacher model. `model` is then the model that wrote the failure.
    repair_of: TurnRecord | None = None
    repair_source_run: int = 0
    repair_source_trajectory: int = 0
    teacher: str = ""
    # The reasoning teacher's explanation of the repair at turn `reasoning_turn` (model-written, named).
    reasoning: str = ""
    reasoning_by: str = ""
    reasoning_turn: int | None = None


@dataclass(frozen=True)
class PairFilter:
    """Which rows to build. Empty sets mean "any"."""

    arches: frozenset[str] = frozenset()
    tasks: frozenset[str] = frozenset()
    models: frozenset[str] = frozenset()
    failure_statuses: frozenset[str] = frozenset()  # empty: every FAILURE_STATUSES
    verified_only: bool = False  # the fixed (or generation) kernel must be `verified`, not only PASSED
    min_speedup: float | None = None  # of the fixed (or generation) kernel

    def document(self) -> dict[str, Any]:
        return {
            "arches": sorted(self.arches),
            "tasks": sorted(self.tasks),
            "models": sorted(self.models),
            "failure_statuses": sorted(self.failure_statuses),
            "verified_only": self.verified_only,
            "min_speedup": self.min_speedup,
        }

    @classmethod
    def from_document(cls, data: dict[str, Any]) -> PairFilter:
        """Validate a filter document (API body, saved dataset); raises ValueError with a message for people."""
        if not isinstance(data, dict):
            raise ValueError("filters must be an object")
        known = {"arches", "tasks", "models", "failure_statuses", "verified_only", "min_speedup"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown filter {ascii(unknown[0])[1:-1][:60]!r}; known: {', '.join(sorted(known))}")

        def names(key: str) -> frozenset[str]:
            value = data.get(key) or []
            if not isinstance(value, list) or not all(isinstance(v, str) and 0 < len(v) <= 200 for v in value):
                raise ValueError(f"filter '{key}' must be a list of names")
            if len(value) > 200:
                raise ValueError(f"filter '{key}' lists more than 200 names")
            return frozenset(value)

        statuses = names("failure_statuses")
        bad = sorted(statuses - set(FAILURE_STATUSES))
        if bad:
            raise ValueError(f"unknown failure status {bad[0][:40]!r}; known: {', '.join(FAILURE_STATUSES)}")
        verified_only = data.get("verified_only", False)
        if not isinstance(verified_only, bool):
            raise ValueError("filter 'verified_only' must be true or false")
        min_speedup = data.get("min_speedup")
        if min_speedup is not None:
            if isinstance(min_speedup, bool) or not isinstance(min_speedup, int | float) or not min_speedup >= 0:
                raise ValueError("filter 'min_speedup' must be a number ≥ 0")
            if min_speedup > 1e6:
                raise ValueError("filter 'min_speedup' is too large")
            min_speedup = float(min_speedup)
        return cls(
            arches=names("arches"),
            tasks=names("tasks"),
            models=names("models"),
            failure_statuses=statuses,
            verified_only=verified_only,
            min_speedup=min_speedup,
        )

    def admits_trajectory(self, t: TrajectoryRecord) -> bool:
        return (
            (not self.arches or t.arch in self.arches)
            and (not self.tasks or t.task in self.tasks)
            and (not self.models or t.model in self.models)
        )

    def admits_failure(self, turn: TurnRecord) -> bool:
        allowed = self.failure_statuses or frozenset(FAILURE_STATUSES)
        if turn.status not in allowed:
            return False
        return bool(turn.kernel) or (turn.status == NO_KERNEL and bool(turn.reply.strip()))

    def admits_pass(self, turn: TurnRecord) -> bool:
        if turn.status != PASSED or not turn.kernel or not turn.evaluation_id:
            return False
        if self.verified_only and turn.arch_status != VERIFIED:
            return False
        if self.min_speedup is not None and (turn.speedup_factor is None or turn.speedup_factor < self.min_speedup):
            return False
        return True


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fenced(source: str) -> str:
    return f"```cuda\n{source.rstrip()}\n```"


def message(role: str, content: str, *, loss: bool = False) -> dict[str, Any]:
    return {"role": role, "content": content, "loss": loss}


@dataclass(frozen=True)
class RepairRow:
    run: int
    trajectory: int
    model: str
    arch: str
    task: str
    failed_turn: int
    fixed_turn: int
    failed_status: str
    failed_evaluation: str | None  # None for a NO_KERNEL turn (nothing was evaluated)
    fixed_evaluation: str
    arch_status: str  # of the fixed kernel
    speedup_factor: float | None  # of the fixed kernel
    failed_evaluator_version: str
    evaluator_version: str  # of the fixed kernel's evaluation
    system: str
    prompt: str
    wrong: str  # the failing turn's kernel, fenced (or the whole reply of a NO_KERNEL turn)
    error_log: str  # the feedback the failing turn got
    fixed_kernel: str
    wrong_sha256: str  # of the failing kernel source (or reply): the dedupe key
    fixed_sha256: str
    reasoning: str = ""  # from failure to repair; model-written when present
    reasoning_by: str = ""  # the model that wrote `reasoning` ("" when there is none)
    source: str = "trajectory"  # "trajectory" (the same trajectory repaired itself) or "repair_run"
    repair_run: int | None = None  # the repair run whose teacher wrote the fix (`run` is where the failure came from)
    teacher: str = ""  # the teacher model of that repair run

    @property
    def id(self) -> str:
        return sha256_text(f"repair\n{self.wrong_sha256}\n{self.fixed_sha256}")[:16]

    def messages(self) -> list[dict[str, Any]]:
        """Five messages: system, task, wrong kernel, error log, reasoning + fixed kernel (the only loss)."""
        final = fenced(self.fixed_kernel)
        if self.reasoning:
            final = f"{self.reasoning.strip()}\n\n{final}"
        return [
            message("system", self.system),
            message("user", self.prompt),
            message("assistant", self.wrong),
            message("user", self.error_log),
            message("assistant", final, loss=True),
        ]

    def document(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": "repair",
            "messages": self.messages(),
            "run": self.run,
            "trajectory": self.trajectory,
            "model": self.model,
            "arch": self.arch,
            "task": self.task,
            "failed_turn": self.failed_turn,
            "fixed_turn": self.fixed_turn,
            "failed_status": self.failed_status,
            "failed_evaluation": self.failed_evaluation,
            "fixed_evaluation": self.fixed_evaluation,
            "arch_status": self.arch_status,
            "speedup_factor": self.speedup_factor,
            "failed_evaluator_version": self.failed_evaluator_version,
            "evaluator_version": self.evaluator_version,
            "wrong_sha256": self.wrong_sha256,
            "fixed_sha256": self.fixed_sha256,
            "reasoning_by": self.reasoning_by,
            "source": self.source,
            "repair_run": self.repair_run,
            "teacher": self.teacher,
        }


@dataclass(frozen=True)
class GenerationRow:
    run: int
    trajectory: int
    model: str
    arch: str
    task: str
    turn: int
    evaluation: str
    arch_status: str
    speedup_factor: float | None
    evaluator_version: str
    system: str
    prompt: str
    kernel: str
    kernel_sha256: str

    @property
    def id(self) -> str:
        return sha256_text(f"generation\n{self.kernel_sha256}")[:16]

    def messages(self) -> list[dict[str, Any]]:
        """Three messages: system, task, the correct kernel (the only loss)."""
        return [
            message("system", self.system),
            message("user", self.prompt),
            message("assistant", fenced(self.kernel), loss=True),
        ]

    def document(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": "generation",
            "messages": self.messages(),
            "run": self.run,
            "trajectory": self.trajectory,
            "model": self.model,
            "arch": self.arch,
            "task": self.task,
            "turn": self.turn,
            "evaluation": self.evaluation,
            "arch_status": self.arch_status,
            "speedup_factor": self.speedup_factor,
            "evaluator_version": self.evaluator_version,
            "kernel_sha256": self.kernel_sha256,
        }


@dataclass
class Rows:
    repair: list[RepairRow] = field(default_factory=list)
    generation: list[GenerationRow] = field(default_factory=list)


def _wrong(turn: TurnRecord) -> tuple[str, str]:
    """The failing turn as the assistant message of the pair, and its dedupe hash."""
    if turn.kernel:
        return fenced(turn.kernel), sha256_text(turn.kernel)
    return turn.reply, sha256_text(turn.reply)


def _pair(trajectory: TrajectoryRecord, failed, fixed, *, run, trajectory_id, **extra) -> RepairRow:
    """The row for one failing turn and the turn that repaired it."""
    wrong, wrong_sha = _wrong(failed)
    return RepairRow(
        run=run,
        trajectory=trajectory_id,
        model=trajectory.model,
        arch=trajectory.arch,
        task=trajectory.task,
        failed_turn=failed.index,
        fixed_turn=fixed.index,
        failed_status=failed.status,
        failed_evaluation=failed.evaluation_id,
        fixed_evaluation=str(fixed.evaluation_id),
        arch_status=fixed.arch_status,
        speedup_factor=fixed.speedup_factor,
        failed_evaluator_version=failed.evaluator_version,
        evaluator_version=fixed.evaluator_version,
        system=trajectory.system,
        prompt=trajectory.prompt,
        wrong=wrong,
        error_log=failed.feedback,
        fixed_kernel=fixed.kernel,
        wrong_sha256=wrong_sha,
        fixed_sha256=sha256_text(fixed.kernel),
        **extra,
    )


def _repair_run_pair(trajectory: TrajectoryRecord, pair_filter: PairFilter) -> list[RepairRow]:
    """A repair-run trajectory: its stored failure paired with the teacher's first attempt that passes the filter;
    the teacher's own failed attempts start no pair."""
    failed = trajectory.repair_of
    if failed is None or not pair_filter.admits_failure(failed):
        return []
    fixed = next((t for t in sorted(trajectory.turns, key=lambda t: t.index) if pair_filter.admits_pass(t)), None)
    if fixed is None:
        return []
    own = trajectory.reasoning_turn == fixed.index
    return [
        _pair(
            trajectory,
            failed,
            fixed,
            run=trajectory.repair_source_run,
            trajectory_id=trajectory.repair_source_trajectory,
            source="repair_run",
            repair_run=trajectory.run_id,
            teacher=trajectory.teacher,
            reasoning=trajectory.reasoning if own else "",
            reasoning_by=trajectory.reasoning_by if own else "",
        )
    ]


def repair_pairs(trajectory: TrajectoryRecord, pair_filter: PairFilter) -> list[RepairRow]:
    """Each admitted failing turn paired with the first later turn of its trajectory that passes the filter
    (for a repair-run trajectory: its stored failure and the teacher's first passing attempt)."""
    if trajectory.repair_of is not None:
        return _repair_run_pair(trajectory, pair_filter)
    rows: list[RepairRow] = []
    turns = sorted(trajectory.turns, key=lambda t: t.index)
    for i, failed in enumerate(turns):
        if not pair_filter.admits_failure(failed):
            continue
        fixed = next((t for t in turns[i + 1 :] if pair_filter.admits_pass(t)), None)
        if fixed is not None:
            rows.append(_pair(trajectory, failed, fixed, run=trajectory.run_id, trajectory_id=trajectory.trajectory_id))
    return rows


def generation_rows(trajectory: TrajectoryRecord, pair_filter: PairFilter) -> list[GenerationRow]:
    """Passing turns of model runs (a repair attempt had the failing kernel in its context: not a generation)."""
    if trajectory.repair_of is not None:
        return []
    return [
        GenerationRow(
            run=trajectory.run_id,
            trajectory=trajectory.trajectory_id,
            model=trajectory.model,
            arch=trajectory.arch,
            task=trajectory.task,
            turn=turn.index,
            evaluation=str(turn.evaluation_id),
            arch_status=turn.arch_status,
            speedup_factor=turn.speedup_factor,
            evaluator_version=turn.evaluator_version,
            system=trajectory.system,
            prompt=trajectory.prompt,
            kernel=turn.kernel,
            kernel_sha256=sha256_text(turn.kernel),
        )
        for turn in sorted(trajectory.turns, key=lambda t: t.index)
        if pair_filter.admits_pass(turn)
    ]


def build_rows(trajectories: Iterable[TrajectoryRecord], pair_filter: PairFilter) -> Rows:
    """Rows of every admitted trajectory, in (run, trajectory, turn) order; duplicates by source hash dropped
    (a repair row by its failing kernel, a generation row by its kernel), the first one kept."""
    rows = Rows()
    seen_wrong: set[str] = set()
    seen_kernel: set[str] = set()
    for trajectory in sorted(trajectories, key=lambda t: (t.run_id, t.trajectory_id)):
        if not pair_filter.admits_trajectory(trajectory):
            continue
        for row in repair_pairs(trajectory, pair_filter):
            if row.wrong_sha256 not in seen_wrong:
                seen_wrong.add(row.wrong_sha256)
                rows.repair.append(row)
        for gen in generation_rows(trajectory, pair_filter):
            if gen.kernel_sha256 not in seen_kernel:
                seen_kernel.add(gen.kernel_sha256)
                rows.generation.append(gen)
    return rows
