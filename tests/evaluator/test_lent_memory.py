"""How much memory one process's lent slots take (evaluator/measure/lent_calls.py: LEND_MEMORY_BYTES), and what the
parent does when the driver cannot give it: the largest workloads' rounds are cut to what fits, the parent's cached
tensors go back to the driver before it asks, and a refusal is this host's problem, said in plain numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.both_sides import gpu_share
from evaluator.both_sides.shared_outputs import SharedOutputs
from evaluator.both_sides.taskdata import load_task
from evaluator.both_sides.verdict import OverallStatus
from evaluator.checks.physical_limits import limits_for
from evaluator.errors import EnvironmentProblem
from evaluator.measure import lent_calls
from evaluator.measure.candidate import CandidateSetup, shared_outputs
from evaluator.measure.lent_calls import LEND_MEMORY_BYTES, batch_length, round_length
from evaluator.pipeline import Options, evaluate
from tests.support.variants import SOURCE, variant_workdir

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
TINY = load_task(HERE / "tasks" / "tiny_gemm")
WORKLOAD = "00000000-0000-4000-8000-000000000016"
H100 = "NVIDIA H100 80GB HBM3"


def test_the_largest_attention_workload_times_two_calls_a_round_not_three():
    """d256 attention at S=16384 moves 6.5 GB a call: three calls a round (the default) took 19.4 GB per process,
    two processes' worth of which an H100 could not lend beside the parent's references (h100-2026-12-06d).
    Mutation caught: timed rounds left at the requested length."""
    task = load_task(REPO / "tasks" / "mha_with_lse_d256")
    workload = max(task.workloads, key=lambda w: w.axes["S"])
    limits = limits_for(task.definition, workload, H100)
    assert limits.io_bytes > LEND_MEMORY_BYTES / 3
    assert round_length(limits, 3) == 2
    assert batch_length(limits, task.flops_for(workload)) == 2
    assert 2 * limits.io_bytes <= LEND_MEMORY_BYTES


def test_no_round_of_any_task_lends_more_than_the_limit_unless_one_call_does():
    for directory in sorted((REPO / "tasks").glob("*/definition.json")):
        task = load_task(directory.parent)
        for w in task.workloads:
            limits = limits_for(task.definition, w, H100)
            slots = max(round_length(limits, 3), batch_length(limits, task.flops_for(w)))
            assert slots == 1 or slots * limits.io_bytes <= LEND_MEMORY_BYTES, (task.definition.name, w.axes)


def test_every_region_the_pipeline_lends_holds_no_more_calls_than_fit(monkeypatch):
    """Through the real pipeline (CPU tensors, a host-code candidate) with room for two calls: the candidate's and
    the trusted baseline's regions each have two slots though three timed calls a round and eight a batch were
    asked for, and the run still ranks. Mutation caught: the pipeline's timed rounds not cut (three slots)."""
    io = limits_for(TINY.definition, TINY.workload(WORKLOAD), None).io_bytes
    monkeypatch.setattr(lent_calls, "LEND_MEMORY_BYTES", 2 * io + 1)
    slots: list[int] = []
    create = SharedOutputs.create.__func__

    def counted(cls, torch, outputs, n, *args, **kwargs):
        slots.append(n)
        return create(cls, torch, outputs, n, *args, **kwargs)

    monkeypatch.setattr(SharedOutputs, "create", classmethod(counted))
    with variant_workdir(None) as work:
        opts = Options(device_type="cpu", timeout_s=60, warmup=3, iters=6, batches=2, batch_calls=8)
        opts.allow_unsandboxed, opts.workdir = True, work
        verdict = evaluate(SOURCE, TINY, "sm_90a", workloads=WORKLOAD, stages=["timing"], options=opts)
    assert verdict.status == OverallStatus.PASSED, verdict.workloads[0].message
    assert len(slots) == 2 and set(slots) == {2}
    assert verdict.workloads[0].performance.latency_ms is not None


def test_the_driver_refusing_the_region_is_the_hosts_problem_after_the_cache_went_back(monkeypatch, tmp_path):
    """On a GPU host whose driver has no memory left (the driver is faked here: there is no GPU), the parent first
    empties PyTorch's cache, then reports what it asked for and what was free. Mutations caught: no empty_cache
    before the request; the driver's error escaping as a bare traceback."""
    import torch

    calls: list[str] = []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: calls.append("empty_cache"))
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (3 * 2**30, 80 * 2**30))

    def refused(cls, nbytes, device=0):
        calls.append("cuMemCreate")
        raise gpu_share.DriverError("cuMemCreate failed with CUDA driver error 2")

    monkeypatch.setattr(gpu_share.SharedRegion, "create", classmethod(refused))
    setup = CandidateSetup(TINY, [], tmp_path / "k.so", tmp_path, tmp_path, None, device_type="cuda")
    with pytest.raises(EnvironmentProblem) as caught:
        shared_outputs(setup, TINY.workload(WORKLOAD), 3)
    assert calls == ["empty_cache", "cuMemCreate"]
    message = str(caught.value)
    assert "3 call(s)" in message and "3.0 of 80.0 GiB free" in message and "driver error 2" in message
