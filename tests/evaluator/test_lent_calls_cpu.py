"""Every call of a candidate process runs on inputs the parent draws after its clock starts (evaluator/measure/lent_calls.py),
and the parent's clock over back-to-back batches ranks the candidate and the library alike. On CPU tensors: the
real pipeline with a host-code candidate, and the parent's side of the protocol against a scripted child."""

from __future__ import annotations

import json
import time
from collections import deque
from pathlib import Path
from typing import Any

import pytest

from evaluator.both_sides import protocol
from evaluator.both_sides import verdict as vm
from evaluator.both_sides.taskdata import load_task
from evaluator.both_sides.verdict import Correctness, OverallStatus, Status, WorkloadResult
from evaluator.checks.integrity import HOST_TIME
from evaluator.checks.workload_checks import WorkloadRun
from evaluator.measure.candidate import CandidateSetup, _time, _trials, expect, input_drawer, shared_outputs
from evaluator.measure.correctness import Checker
from evaluator.measure.lent_calls import Lent, LentRound, ranked_ms
from evaluator.measure.timing_plan import Seeds, TimingPlan, TimingRequest
from evaluator.pipeline import Options, evaluate
from tests.support.variants import SOURCE, variant_workdir
from tests.support.verdicts import validate

HERE = Path(__file__).resolve().parent
TASK = load_task(HERE / "tasks" / "tiny_gemm")
WORKLOAD = "00000000-0000-4000-8000-000000000016"


def ranked(variant: str | None) -> vm.Verdict:
    with variant_workdir(variant) as work:
        opts = Options(
            device_type="cpu", timeout_s=60, warmup=3, iters=12, batches=3, batch_calls=8, allow_unsandboxed=True
        )
        opts.workdir = work
        verdict = evaluate(SOURCE, TASK, "sm_90a", workloads=WORKLOAD, stages=["timing"], options=opts)
    validate(json.loads(vm.to_json(verdict)))
    return verdict


def test_the_parents_clock_ranks_both_sides_of_an_honest_kernel():
    v = ranked(None)
    assert v.status == OverallStatus.PASSED, v.workloads[0].message
    perf = v.workloads[0].performance
    assert perf.latency_from == vm.LATENCY_FROM_TRUSTED_BATCHES
    # The integrity record keeps the trusted figure to 6 decimals of a millisecond; the ranked latency is unrounded.
    assert perf.latency_ms == pytest.approx(v.integrity.trusted_ms_per_call[WORKLOAD], abs=1e-6)
    assert perf.in_process_latency_ms is not None and perf.baseline_measured_by == "trusted process"
    assert perf.speedup_factor == pytest.approx(perf.baseline_latency_ms / perf.latency_ms)
    assert [h.code for h in v.integrity.holds if h.code != HOST_TIME] == []


def test_a_tampered_in_process_clock_changes_nothing_that_ranks():
    """TAMPERED_CLOCK makes the candidate process's timer read 1000x low and sleeps 5 ms a call: the ranked
    latency is the parent's, at least 5 ms a call, and the disagreement is held."""
    v = ranked("TAMPERED_CLOCK")
    w = v.workloads[0]
    assert v.status == OverallStatus.PASSED, w.message
    assert w.performance.latency_ms >= 5.0 and w.performance.latency_from == vm.LATENCY_FROM_TRUSTED_BATCHES
    assert HOST_TIME in [h.code for h in v.integrity.holds]


class ScriptedChild:
    """The candidate process's side of the rounds, scripted: it records every command. On `go` each call of the
    round writes the reference product of its lent inputs into its lent outputs and sleeps `call_s` (what the
    parent's clock must see); with `early`, it computes when the round is announced instead, into a stash of its
    own (the untimed window of a design that drew the inputs before its clock started), and on `go` only copies
    the stash in. `finish` is answered with an in-process report of 1 microsecond a call."""

    def __init__(self, shared: Any, checker: Checker, call_s: float, *, early: bool = False) -> None:
        self.shared, self.checker, self.call_s, self.early = shared, checker, call_s, early
        self.commands: list[dict[str, Any]] = []
        self.pending: deque[dict[str, Any]] = deque()
        self.calls = 0
        self.stash: list[Any] = []

    def _products(self) -> list[Any]:
        return [self.checker.reference(*self.shared.inputs_of(k)) for k in range(self.calls)]

    def send(self, command: dict[str, Any]) -> None:
        self.commands.append(command)
        name = protocol.command_name(command)
        if name == protocol.ROUND:
            round_, _, self.calls, _ = protocol.round_args(command)
            if self.early:
                self.stash = self._products()
            self._answer(protocol.round_ready_event(round_))
        elif name == protocol.GO:
            for k, product in enumerate(self.stash if self.early else self._products()):
                self.shared.outputs_of(k)[0].copy_(product)
            time.sleep(self.call_s * self.calls)
            self._answer(protocol.round_done_event(self.commands[-2]["round"]))
        elif name == protocol.FINISH:
            samples = {"samples_ms": [0.001] * 4, "activities": [1] * 4}
            launches = {"timed": [], "trials": [], "batch": []}
            self._answer(
                protocol.timing_event("host_clock", None, {"candidate": samples}, launches, [], {"changed_bytes": 0})
            )

    def _answer(self, message: dict[str, Any]) -> None:
        self.pending.append(protocol.decode(protocol.encode(message)))

    def receive(self, deadline: float) -> dict[str, Any]:
        return self.pending.popleft()


def serve(tmp_path: Path, *, early: bool = False, call_s: float = 0.0) -> tuple[ScriptedChild, WorkloadRun]:
    """Trials, timed rounds and batches of one workload through the parent's code, against a scripted child."""
    import torch

    workload = TASK.workload(WORKLOAD)
    checker = Checker.for_task(TASK, torch.device("cpu"))
    setup = CandidateSetup(TASK, [workload], tmp_path / "k.so", tmp_path, tmp_path, None, device_type="cpu")
    seeds = Seeds(
        trials=[7770001],
        timed=[[7770011, 7770012], [7770013, 7770014]],
        batches=[[7770021, 7770022], [7770023, 7770024]],
    )
    plan = TimingPlan(checked={(1, 0), (1, 1)}, batch_checked=[1, 0])
    refs = {("timed", 1, j): checker.reference_outputs(workload, seeds.timed[1][j]) for j in (0, 1)}
    for b, j in enumerate(plan.batch_checked):
        refs[("batch", b, j)] = checker.reference_outputs(workload, seeds.batches[b][j])
    trial_refs = [checker.reference_outputs(workload, s) for s in seeds.trials]
    shared = shared_outputs(setup, workload, 2)
    result = WorkloadResult(workload.uuid, dict(workload.axes), Status.PASSED, "", Correctness())
    run = WorkloadRun(result)
    child = ScriptedChild(shared, checker, call_s, early=early)
    try:
        lent = Lent(child, expect, 1e18, shared, input_drawer(checker, workload))
        if _trials(lent, checker, workload, seeds.trials, trial_refs, result):
            _time(lent, checker, workload, seeds, plan, refs, TimingRequest(2, 2, round_calls=2), run, setup)
    finally:
        shared.close()
    return child, run


def test_no_seed_reaches_the_candidate_process_and_the_parents_clock_ranks(tmp_path):
    """The candidate process is told only how many calls a round makes; the ranked latency is the parent's clock
    (at least the 20 ms each call sleeps), not the process's report (1 microsecond). Mutations caught: a round
    command carrying its seeds; the ranked latency taken from the candidate process's report."""
    child, run = serve(tmp_path, call_s=0.02)
    result = run.result
    assert result.status == Status.PASSED, result.message
    assert "777" not in json.dumps(child.commands)
    kinds = [c["kind"] for c in child.commands if protocol.command_name(c) == protocol.ROUND]
    assert kinds == ["trial", "timed", "timed", "batch", "batch"]
    assert result.performance.latency_ms >= 20.0 and run.trusted_ms == result.performance.latency_ms
    assert result.performance.in_process_latency_ms == pytest.approx(0.001)
    assert run.checked_calls == 4 and run.timed_calls == 2


def test_outputs_computed_before_the_parents_clock_starts_are_wrong(tmp_path):
    """A child that does its work when a round is announced, before the parent has drawn that round's inputs (the
    window in which the stash-and-copy cheat computed), finds only the previous round's values or nothing: its
    first trial fails. Mutation caught: drawing a round's inputs before the round command (and the clock)."""
    _, run = serve(tmp_path, early=True)
    assert run.result.status == Status.INCORRECT_NUMERICAL, run.result.message
    assert run.result.message.startswith("trial 1:")


def test_timing_without_a_batch_is_refused():
    """Only batches rank: an evaluation asked to time with none would have no trusted figure to rank."""
    opts = Options(device_type="cpu", batches=0, allow_unsandboxed=True)
    with pytest.raises(ValueError, match="at least one batch"):
        evaluate(SOURCE, TASK, "sm_90a", workloads=WORKLOAD, stages=["timing"], options=opts)


def test_the_drawing_left_out_is_the_shorter_of_the_baselines_and_the_batchs_own():
    """Ranked per call = fastest batch's (span - drawing) / calls, the drawing being the baseline's figure or the
    batch's own, whichever is shorter. Mutation caught: leaving out the baseline's figure alone (a baseline drawing
    that noise made longer than this batch's ate the calls' time, down to 0 on a loaded CPU host)."""
    honest = LentRound(protocol.BATCH_ROUND, calls=10, total_ms=12.0, drawing_ms=2.0)
    assert ranked_ms([honest], drawing_ms=11.5) == pytest.approx(1.0)  # a slow baseline drawing: the batch's own
    # A candidate working beside the drawing only lengthens its own figure: the baseline's caps it, so it pays.
    busy = LentRound(protocol.BATCH_ROUND, calls=10, total_ms=12.0, drawing_ms=9.0)
    assert ranked_ms([busy], drawing_ms=2.0) == pytest.approx(1.0)
    assert ranked_ms([honest, busy], drawing_ms=2.0) == pytest.approx(1.0)
    assert ranked_ms([], drawing_ms=2.0) is None
