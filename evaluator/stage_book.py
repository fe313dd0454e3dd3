"""The verdict as an evaluation proceeds: its first state, and the stage records and progress messages after it."""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass

import evaluator
from evaluator.both_sides.taskdata import Task, Workload
from evaluator.both_sides.verdict import STAGES, OverallStatus, StageRecord, StageState, Status, Verdict, WorkloadResult

StageCallback = Callable[[str, str], None]


def new_verdict(source: str, task: Task, arch: str, requested: list[str]) -> Verdict:
    """The verdict before any stage ran: every stage not run, status STATIC_ONLY."""
    raw = source.encode("utf-8", errors="surrogateescape")
    return Verdict(
        evaluator_version=evaluator.__version__,
        task=task.name,
        arch=arch,
        status=OverallStatus.STATIC_ONLY,
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        source_sha256=hashlib.sha256(raw).hexdigest(),
        source_bytes=len(raw),
        stages_requested=requested,
        stages=[StageRecord(s, StageState.NOT_RUN) for s in STAGES],
    )


@dataclass
class StageBook:
    """The stage records of one verdict, and the progress callback told about them."""

    verdict: Verdict
    stages: list[str]  # the stages that run: requested plus what they need, in pipeline order
    on_stage: StageCallback | None = None

    def report(self, stage: str, message: str) -> None:
        if self.on_stage is not None:
            self.on_stage(stage, message)

    def record(self, name: str) -> StageRecord:
        record = self.verdict.stage(name)
        assert record is not None
        return record

    def finish(self, name: str, state: StageState, started: float, message: str = "") -> None:
        record = self.record(name)
        record.state, record.seconds, record.message = state, round(time.monotonic() - started, 3), message
        self.report(name, f"{state.value}{': ' + message if message else ''}")

    def stop(self, after: str, status: OverallStatus, why: str, workloads: list[Workload], message: str) -> None:
        """The candidate failed stage `after`: later stages skipped, every workload `COMPILE_ERROR: message`."""
        self.verdict.status = status
        for name in STAGES[STAGES.index(after) + 1 :]:
            if name in self.stages:
                self.record(name).state = StageState.SKIPPED
                self.record(name).message = why
        self.verdict.workloads = [
            WorkloadResult(uuid=w.uuid, axes=dict(w.axes), status=Status.COMPILE_ERROR, message=message)
            for w in workloads
        ]
