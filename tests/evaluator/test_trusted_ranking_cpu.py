"""Trusted ranking (EVALUATOR_TRUSTED_RANKING=1, evaluator/lent_batches.py) on CPU tensors: the parent draws every
batch call's inputs into memory it lends after its clock starts, sends the candidate process no seed, and its
clock ranks the candidate and the library alike."""

from __future__ import annotations

import json
import time
from collections import deque
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from evaluator import protocol
from evaluator import verdict as vm
from evaluator.candidate import (
    CandidateSetup,
    Seeds,
    TimingPlan,
    TimingRequest,
    WorkloadRun,
    _time,
    input_drawer,
    shared_outputs,
)
from evaluator.correctness import Checker
from evaluator.integrity import HOST_TIME
from evaluator.lent_batches import TRUSTED_RANKING_FLAG
from evaluator.pipeline import Options, evaluate
from evaluator.taskdata import load_task
from evaluator.verdict import Correctness, OverallStatus, Status, WorkloadResult
from tests.support.variants import SOURCE, variant_workdir

HERE = Path(__file__).resolve().parent
TASK = load_task(HERE / "tasks" / "tiny_gemm")
SCHEMA = json.loads((HERE.parents[1] / "evaluator" / "verdict.schema.json").read_text())
WORKLOAD = "00000000-0000-4000-8000-000000000016"


def ranked(variant: str | None, monkeypatch) -> vm.Verdict:
    monkeypatch.setenv(TRUSTED_RANKING_FLAG, "1")
    with variant_workdir(variant) as work:
        opts = Options(
            device_type="cpu", timeout_s=60, warmup=3, iters=20, batches=3, batch_calls=8, allow_unsandboxed=True
        )
        opts.workdir = work
        verdict = evaluate(SOURCE, TASK, "sm_90a", workloads=WORKLOAD, stages=["timing"], options=opts)
    jsonschema.validate(json.loads(vm.to_json(verdict)), SCHEMA)
    return verdict


def test_the_parents_clock_ranks_both_sides_of_an_honest_kernel(monkeypatch):
    v = ranked(None, monkeypatch)
    assert v.status == OverallStatus.PASSED, v.workloads[0].message
    perf = v.workloads[0].performance
    assert perf.latency_from == vm.LATENCY_FROM_TRUSTED_BATCHES
    # The integrity record keeps the trusted figure to 6 decimals of a millisecond; the ranked latency is unrounded.
    assert perf.latency_ms == pytest.approx(v.integrity.trusted_ms_per_call[WORKLOAD], abs=1e-6)
    assert perf.in_process_latency_ms is not None and perf.reference_measured_by == "trusted process"
    assert perf.speedup_factor == pytest.approx(perf.baseline_latency_ms / perf.latency_ms)
    assert [h.code for h in v.integrity.holds if h.code != HOST_TIME] == []


def test_a_tampered_in_process_clock_changes_nothing_that_ranks(monkeypatch):
    """TAMPERED_CLOCK makes the candidate process's timer read 1000x low and sleeps 5 ms a call: the ranked
    latency is the parent's, at least 5 ms a call, and the disagreement is held as on the default path."""
    v = ranked("TAMPERED_CLOCK", monkeypatch)
    w = v.workloads[0]
    assert v.status == OverallStatus.PASSED, w.message
    assert w.performance.latency_ms >= 5.0 and w.performance.latency_from == vm.LATENCY_FROM_TRUSTED_BATCHES
    assert HOST_TIME in [h.code for h in v.integrity.holds]


class LentChild:
    """A candidate process's side of the protocol that records every command; each lent batch call sleeps
    `call_s` (what the parent's clock must see) while its in-process timer claims 1 microsecond a call."""

    def __init__(self, shared: Any, checker: Checker, workload: Any, call_s: float) -> None:
        self.shared, self.checker, self.workload, self.call_s = shared, checker, workload, call_s
        self.commands: list[dict[str, Any]] = []
        self.pending: deque[dict[str, Any]] = deque()
        self.calls: Any = iter(())
        self.batch = 0

    def send(self, command: dict[str, Any]) -> None:
        self.commands.append(command)
        name = protocol.command_name(command)
        if name == protocol.TIMING:
            _, _, warmup, iters, _ = protocol.timing_args(command)
            self.calls = iter(range(warmup, warmup + iters + 1))
            self.pending.append(protocol.called_event(next(self.calls)))
        elif name == protocol.NEXT:
            index = next(self.calls, None)
            if index is not None:
                self.pending.append(protocol.called_event(index))
        elif name == protocol.BATCH:
            self.batch = protocol.lent_calls(command)
            self.pending.append(protocol.batch_ready_event(protocol.batch_args(command)[0]))
        elif name == protocol.GO:
            # the candidate's run: the reference's product of the lent inputs, written into the lent outputs
            for k in range(self.batch):
                a, b = self.shared.inputs_of(k)
                self.shared.outputs_of(k)[0].copy_(self.checker.reference(a, b))
                time.sleep(self.call_s)
            self.pending.append(protocol.batch_done_event(self.commands[-2]["round"]))
        elif name == protocol.FINISH:
            samples = {"samples_ms": [0.001] * 4, "activities": [1] * 4}
            launches = {"timed": [], "trials": [], "batch": []}
            self.pending.append(
                protocol.timing_event("host_clock", None, {"candidate": samples}, launches, [], {"changed_bytes": 0})
            )

    def receive(self, deadline: float) -> dict[str, Any]:
        return protocol.decode(protocol.encode(self.pending.popleft()))


def test_lent_batches_send_no_seed_and_rank_on_the_parents_clock(tmp_path):
    """The parent draws each batch call's inputs itself and compares the call it captured; the candidate process
    is told only how many calls to make. Mutations caught: a lent batch command carrying the seeds; the ranked
    latency taken from the candidate process's report (1 microsecond) instead of the parent's clock (20 ms)."""
    import torch

    workload = TASK.workload(WORKLOAD)
    checker = Checker.for_task(TASK, torch.device("cpu"), tmp_path)
    setup = CandidateSetup(TASK, [workload], tmp_path / "k.so", tmp_path, tmp_path, None, device_type="cpu")
    seeds = Seeds(trials=[], calls=list(range(4)), recheck=9, batches=[[7770001, 7770002], [7770003, 7770004]])
    plan = TimingPlan(checked=set(), batch_checked=[1, 0])
    refs = {
        ("batch", r): checker.reference_outputs(workload, b[plan.batch_checked[r]]) for r, b in enumerate(seeds.batches)
    }
    shared = shared_outputs(setup, workload, 2, lend_inputs=True)
    try:
        result = WorkloadResult(workload.uuid, dict(workload.axes), Status.PASSED, "", Correctness())
        run = WorkloadRun(result)
        child = LentChild(shared, checker, workload, call_s=0.02)
        request = TimingRequest(2, 2, trusted_ranking=True)
        _time(
            child,
            checker,
            workload,
            seeds,
            plan,
            refs,
            request,
            run,
            1e18,
            setup,
            None,
            shared,
            input_drawer(checker, workload),
        )
    finally:
        shared.close()
    assert result.status == Status.PASSED, result.message
    batches = [c for c in child.commands if protocol.command_name(c) == protocol.BATCH]
    assert [(c["seeds"], protocol.lent_calls(c)) for c in batches] == [([], 2), ([], 2)]
    assert "777000" not in json.dumps(child.commands)
    assert result.performance.latency_ms >= 20.0 and run.trusted_ms == result.performance.latency_ms
    assert result.performance.in_process_latency_ms == pytest.approx(0.001)
